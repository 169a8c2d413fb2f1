//! Configuration and accounting types.

/// Bounds the store enforces on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreLimits {
    /// Most versions kept per key before the oldest committed ones are deleted (Pesto App. B.3
    /// (ii)); values below 1 count as 1. The newest committed version of a key and all prepared
    /// versions are always kept, so a key can exceed the cap while many writers are prepared.
    pub version_cap: usize,
    /// Committed writes within this many microseconds of a table's newest committed write
    /// stay in its write log when the watermark passes them (see [`crate::RowStore::gc`]).
    pub log_keep_us: u64,
    /// A key whose newest version is a committed deletion below the watermark keeps that
    /// deletion (a tombstone) this many microseconds past it before the key goes: a late
    /// committed write of the key below the watermark (a catch-up, a delayed writeback) is
    /// then still hidden by the newer deletion. Committed writes older than the watermark by
    /// more than this are refused, as no tombstone may be left to hide them.
    pub tombstone_keep_us: u64,
}

/// One hour.
pub const DEFAULT_TOMBSTONE_KEEP_US: u64 = 3_600_000_000;

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { version_cap: 64, log_keep_us: 0, tombstone_keep_us: DEFAULT_TOMBSTONE_KEEP_US }
    }
}

/// Sizes of the store's structures, for tests and metrics (O(tables + indexes) to compute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Tables mirrored from the catalog.
    pub tables: usize,
    /// Primary keys with at least one version.
    pub keys: usize,
    /// Row versions, deletions included.
    pub versions: usize,
    /// Versions whose writer is only prepared.
    pub prepared_versions: usize,
    /// Secondary-index entries ((index key, primary key) pairs) over all indexes.
    pub index_entries: usize,
    /// Distinct (table, timestamp, writer) entries of the write logs.
    pub log_entries: usize,
    /// Individual writes in the write logs.
    pub log_writes: usize,
    /// Writers with prepared versions (the per-writer index).
    pub prepared_writers: usize,
    /// Keys waiting in the garbage-collection queues.
    pub gc_queue: usize,
}

/// What one [`crate::RowStore::gc`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Keys taken from the garbage-collection queue and examined.
    pub keys_examined: usize,
    /// Versions deleted (older than a committed version below the watermark, or the last
    /// version of a dropped key).
    pub versions_removed: usize,
    /// Keys dropped because only a committed deletion below the watermark remained.
    pub keys_removed: usize,
    /// Committed writes trimmed from the write logs.
    pub log_writes_trimmed: usize,
    /// Tables left for a later gc because a snapshot shares them.
    pub tables_deferred: usize,
}

impl GcStats {
    pub(crate) fn add(&mut self, other: GcStats) {
        self.keys_examined += other.keys_examined;
        self.versions_removed += other.versions_removed;
        self.keys_removed += other.keys_removed;
        self.log_writes_trimmed += other.log_writes_trimmed;
        self.tables_deferred += other.tables_deferred;
    }
}
