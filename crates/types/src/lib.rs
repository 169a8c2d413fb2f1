//! Pistou's shared SQL data types: what the protocol crates (`wire`, `rowstore`, `txn`) and
//! the SQL engine (`pistou-sql`) exchange, without the engine itself.
//!
//! Values, rows and SQL types ([`types`], with their casts and operators), SQL errors
//! ([`error`]), the order-preserving key encoding ([`keycode`]), schemas and schema changes
//! ([`catalog`]), key ranges, writes and the storage interface the engine reads through
//! ([`storage`]), sequences' blocks ([`sequence`]), and the network form of a read predicate
//! ([`predicate_wire`]). A change here is a change of the wire or storage format.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

pub mod array;
mod cast;
pub mod catalog;
pub mod constraints;
mod decimal_wire;
pub mod error;
pub mod func;
pub mod index_expr;
pub mod interval;
pub mod json;
pub mod jsonb;
pub mod keycode;
pub mod pattern;
pub mod predicate_wire;
pub mod scalar;
pub mod sequence;
pub mod short_key;
pub mod storage;
pub mod temporal;
pub mod types;
pub mod uuid;
pub mod view;

pub use catalog::{Catalog, CatalogChange, Column, IndexSchema, SchemaRules, TableSchema};
pub use error::{SqlError, SqlState};
pub use predicate_wire::WirePredicate;
pub use sequence::{SequenceBlock, SequenceInput, SequenceLast, SequenceSchema, SequenceSet, SessionSequences};
pub use short_key::ShortKey;
pub use storage::{
    KeyRange, MemStore, ReadAt, RowRef, Storage, StoredRow, Timestamp, TxnId, Version, Visitor, Write, WriteSet,
};
pub use types::{Row, SqlType, Value};
