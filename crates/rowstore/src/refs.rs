//! Borrowed views of stored versions and logged writes handed to callers.

use pistou_core::{Timestamp, TxnId};
use pistou_types::{Row, Version};

/// Where a version's writer stands: prepared (passed the concurrency-control check, its writes
/// are tentatively visible) or committed (decision certificate received).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VersionState {
    /// The writer passed the concurrency-control check; it may still abort.
    Prepared,
    /// The writer's commit decision is certified; the version is permanent (until gc).
    Committed,
}

/// One version of one row, as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VersionRef<'a> {
    /// The writer's timestamp.
    pub ts: Timestamp,
    /// The writing transaction.
    pub writer: TxnId,
    /// Whether the writer is prepared or committed.
    pub state: VersionState,
    /// The row, padded to the current schema; `None` for a deletion.
    pub row: Option<&'a Row>,
}

impl VersionRef<'_> {
    /// The engine's view of this version (`prepared_by` is set while only prepared).
    pub fn version(&self) -> Version {
        version_of(self.ts, self.writer, self.state)
    }

    /// True if this version deletes the row.
    pub fn is_deletion(&self) -> bool {
        self.row.is_none()
    }
}

/// One write of one transaction to one key, as recorded in a table's write log (what Pesto's
/// completeness check scans, Alg. 1 line 12).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteRef<'a> {
    /// The table written.
    pub table: &'a str,
    /// Encoded primary key.
    pub key: &'a [u8],
    /// The writer's timestamp.
    pub ts: Timestamp,
    /// The writing transaction.
    pub writer: TxnId,
    /// Whether the writer is prepared or committed.
    pub state: VersionState,
    /// The written row, padded to the current schema; `None` for a deletion.
    pub row: Option<&'a Row>,
}

impl WriteRef<'_> {
    /// The engine's view of the version this write created.
    pub fn version(&self) -> Version {
        version_of(self.ts, self.writer, self.state)
    }
}

pub(crate) fn version_of(ts: Timestamp, writer: TxnId, state: VersionState) -> Version {
    Version { ts, prepared_by: (state == VersionState::Prepared).then_some(writer) }
}
