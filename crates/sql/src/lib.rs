//! Pistou SQL engine over a versioned snapshot.
//!
//! The engine parses (sqlparser, PostgreSQL dialect), binds against a [`Catalog`], plans by
//! fixed rules, and executes over any [`Storage`] at a caller-chosen snapshot. It never
//! mutates anything: a statement yields its result, a [`ReadReport`] (per-scan predicates and
//! active rows, for Pesto's semantic concurrency control), a [`WriteSet`], and for DDL a
//! [`CatalogChange`]. [`Database`] wires it to an in-memory store for standalone use.
//! See `docs/sql.md` for the architecture and the key encoding.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

// The shared data types, under the module paths the engine has always used.
pub use pistou_types::{
    array, catalog, error, func, interval, json, jsonb, keycode, sequence, short_key, storage, temporal, types, uuid,
};

mod bind;
mod budget;
pub mod constraints;
pub mod database;
mod describe;
pub mod engine;
mod exec;
pub mod expr;
pub mod index_expr;
mod plan;
pub mod predicate_wire;
pub mod report;
pub mod system;
mod to_char;
mod to_char_number;
pub mod view;
mod window;

pub use budget::Interrupt;
pub use catalog::{Catalog, CatalogChange, Column, IndexSchema, TableSchema};
pub use constraints::EngineRules;
pub use database::Database;
pub use describe::StatementKind;
pub use engine::{Engine, ExecContext, Execution, Limits, Output, PointKey, Prepared};
pub use error::{SqlError, SqlState};
pub use expr::{Expr, Predicate};
pub use plan::TxnControl;
pub use predicate_wire::WirePredicate;
pub use report::{Access, ReadReport, ReadRow, ScanRead};
pub use sequence::{SequenceBlock, SequenceInput, SequenceLast, SequenceSchema, SequenceSet, SessionSequences};
pub use short_key::ShortKey;
pub use storage::{
    KeyRange, MemStore, ReadAt, RowRef, Storage, StoredRow, Timestamp, TxnId, Version, Visitor, Write, WriteSet,
};
pub use types::{Row, SqlType, Value};
