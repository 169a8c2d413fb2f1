//! Pistou SQL engine over a versioned snapshot.
//!
//! The engine parses (sqlparser, PostgreSQL dialect), binds against a [`Catalog`], plans by
//! fixed rules, and executes over any [`Storage`] at a caller-chosen snapshot. It never
//! mutates anything: a statement yields its result, a [`ReadReport`] (per-scan predicates and
//! active rows, for Pesto's semantic concurrency control), a [`WriteSet`], and for DDL a
//! [`CatalogChange`]. [`Database`] wires it to an in-memory store for standalone use.
//! See `docs/sql.md` for the architecture and the key encoding.

#![deny(clippy::iter_over_hash_type)]

pub mod array;
mod bind;
mod cast;
pub mod catalog;
pub mod constraints;
pub mod database;
mod decimal_wire;
mod describe;
pub mod engine;
pub mod error;
mod exec;
pub mod expr;
pub mod interval;
mod json;
pub mod jsonb;
pub mod keycode;
mod plan;
pub mod predicate_wire;
pub mod report;
pub mod sequence;
mod short_key;
pub mod storage;
pub mod system;
pub mod temporal;
mod to_char;
pub mod types;
pub mod uuid;
pub mod view;
mod window;

pub use catalog::{Catalog, CatalogChange, Column, IndexSchema, TableSchema};
pub use database::Database;
pub use describe::StatementKind;
pub use engine::{Engine, ExecContext, Execution, Limits, Output, PointKey, Prepared};
pub use error::{SqlError, SqlState};
pub use expr::{Expr, Predicate};
pub use plan::TxnControl;
pub use predicate_wire::WirePredicate;
pub use report::{Access, ReadReport, ReadRow, ScanRead};
pub use sequence::{SequenceBlock, SequenceInput, SequenceSchema};
pub use short_key::ShortKey;
pub use storage::{
    KeyRange, MemStore, ReadAt, RowRef, Storage, StoredRow, Timestamp, TxnId, Version, Visitor, Write, WriteSet,
};
pub use types::{Row, SqlType, Value};
