//! What a statement read, in the form Pesto's concurrency control needs (§5.4, §5.5, §6.1,
//! Appendix B.7): per executed scan, the table, the filter predicate applied, and the active
//! rows — the (key, version) pairs that satisfied it.

use crate::expr::Predicate;
use crate::storage::{KeyRange, Version};
use serde::{Deserialize, Serialize};

/// How a scan reached its rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Access {
    /// Every primary-key column fixed by equality: at most one row (a Basil GET).
    Point,
    /// A primary-key prefix and/or range.
    PkRange,
    /// A secondary index range.
    Index(String),
    /// Whole table.
    Full,
}

/// One row version a scan relied on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRow {
    pub key: Vec<u8>,
    pub version: Version,
}

/// One executed scan. Scans of an index nested-loop join's inner table appear once per outer
/// row, each with the predicate instantiated with that outer row's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanRead {
    pub access: Access,
    /// Filter over the table's columns; a write whose new row satisfies it (or whose old row
    /// did) could change the statement's result.
    pub predicate: Predicate,
    /// Active rows: committed or prepared versions from storage that satisfied the predicate,
    /// in scan order. For `Access::Point` this is the version read even if the rest of the
    /// predicate rejected it (a point read always records what it saw). Rows coming from the
    /// caller's own pending writes are not listed.
    pub rows: Vec<ReadRow>,
    /// For `Access::Point`: the key looked up, when no visible row had it (the statement
    /// relied on its absence, e.g. an INSERT's primary-key check).
    pub absent_key: Option<Vec<u8>>,
    /// Timestamp of the newest write to the table below the read timestamp (Pesto's table
    /// version, §6.1.3).
    pub table_version: Option<pistou_core::Timestamp>,
    /// On a primary-key path: the key ranges the scan visited. Every row that satisfies
    /// `predicate` has its key in one of them (the ranges come from the predicate's own
    /// conjuncts, and a row's key never changes), so a write outside them cannot matter.
    /// None on an index path.
    pub pk_ranges: Option<Vec<KeyRange>>,
}

impl ScanRead {
    pub fn table(&self) -> &str {
        &self.predicate.table
    }
}

/// All scans a statement executed, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadReport {
    pub scans: Vec<ScanRead>,
}

impl ReadReport {
    /// True for a statement that read exactly one row by its full primary key (Pesto's
    /// point-read classification, §5.3).
    pub fn is_point_read(&self) -> bool {
        matches!(self.scans.as_slice(), [scan] if scan.access == Access::Point)
    }
}
