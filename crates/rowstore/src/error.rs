//! Errors of [`crate::RowStore::insert`]: writes come from untrusted clients, so every way a
//! write set can be wrong has its own variant, and none of them leaves a partial effect.

use pistou_core::{Timestamp, TxnId};
use pistou_types::SqlType;

/// Why a write set was refused. Fields name the offending table, column or key (keys in hex).
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The write set names a table the store or the catalog does not have.
    #[error("table \"{table}\" does not exist")]
    UnknownTable { table: String },
    /// The catalog passed in and the store disagree on the table's schema.
    #[error("table \"{table}\": the catalog's schema differs from the store's (a catalog change was not applied to the store)")]
    SchemaMismatch { table: String },
    /// An upsert's row does not have one value per column.
    #[error("table \"{table}\", key {key}: the row has {got} values but the table has {expected} columns")]
    WrongArity { table: String, key: String, expected: usize, got: usize },
    /// A value is not of its column's type (no implicit casts).
    #[error("table \"{table}\", column \"{column}\": expected a value of type {expected}, got {got}")]
    WrongType { table: String, column: String, expected: SqlType, got: String },
    /// NULL in a NOT NULL or primary-key column.
    #[error("table \"{table}\", column \"{column}\": null value violates not-null constraint")]
    NullViolation { table: String, column: String },
    /// A value exceeds VARCHAR(n) or NUMERIC(p, s) limits.
    #[error("table \"{table}\", column \"{column}\": {detail}")]
    OutOfLimits { table: String, column: String, detail: String },
    /// The row's primary-key values do not encode to the write's key.
    #[error("table \"{table}\": key {key} is not the encoded primary key of the written row")]
    KeyMismatch { table: String, key: String },
    /// A deleted key is not the encoding of any primary-key value tuple.
    #[error("table \"{table}\": key {key} is not a well-formed primary key of the table")]
    MalformedKey { table: String, key: String },
    /// The writer's timestamp is below the gc watermark (Pesto App. B.3).
    #[error("timestamp {ts} is below the garbage-collection watermark {watermark}")]
    BelowWatermark { ts: Timestamp, watermark: Timestamp },
    /// The writer is already prepared here under another timestamp.
    #[error("writer {writer} is prepared at timestamp {recorded}, not {given}")]
    WriterTimestampMismatch { writer: TxnId, recorded: Timestamp, given: Timestamp },
    /// An index expression fails for the written row (e.g. division by zero).
    #[error("table \"{table}\": index \"{index}\" cannot be computed for the row at key {key}: {detail}")]
    IndexExpression { table: String, index: String, key: String, detail: String },
}

/// Hex of a key for error messages, cut after 32 bytes (keys are client-chosen and unbounded).
pub(crate) fn show_key(key: &[u8]) -> String {
    const SHOWN: usize = 32;
    match key.get(..SHOWN) {
        Some(head) if key.len() > SHOWN => format!("{}… ({} bytes)", hex::encode(head), key.len()),
        _ => hex::encode(key),
    }
}
