//! One table: row versions by primary key, secondary indexes, write log, gc queue.
//! Every mutation of a key goes through here so the four stay consistent.

use crate::chain::{Chain, Key, StoredVersion};
use crate::index::SecondaryIndex;
use crate::limits::GcStats;
use crate::log::{LoggedWrite, WriteLog};
use crate::refs::VersionState;
use pistou_core::{Timestamp, TxnId};
use pistou_types::{IndexSchema, KeyRange, Row, TableSchema, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub(crate) struct Table {
    /// The schema as of the last catalog change mirrored into the store.
    pub schema: Arc<TableSchema>,
    pub rows: BTreeMap<Key, Chain>,
    pub indexes: Vec<SecondaryIndex>,
    pub log: WriteLog,
    /// (threshold, key): the key has gc work once the watermark passes the threshold (see
    /// `Chain::gc_threshold`). Each key is queued at most once, under `Chain::gc_due`.
    pub gc_queue: BTreeSet<(Timestamp, Key)>,
    pub versions: usize,
    pub prepared: usize,
}

impl Table {
    pub fn new(schema: Arc<TableSchema>) -> Self {
        let indexes = schema.indexes.iter().cloned().map(SecondaryIndex::new).collect();
        Table {
            schema,
            rows: BTreeMap::new(),
            indexes,
            log: WriteLog::default(),
            gc_queue: BTreeSet::new(),
            versions: 0,
            prepared: 0,
        }
    }

    pub fn index(&self, name: &str) -> Option<&SecondaryIndex> {
        self.indexes.iter().find(|i| i.schema.name == name)
    }

    /// Installs `version` at `key` unless (ts, writer) already wrote `key`, logs it and
    /// applies the version cap. Returns the shared key if the version is new. Callers install
    /// only at or above the watermark, where the log holds every write that was not aborted,
    /// so a repeated write whose version the cap deleted is recognized and not resurrected.
    pub fn install(&mut self, key: &[u8], version: StoredVersion, cap: usize) -> Option<Key> {
        if self.log.get(version.ts, version.writer, key).is_some() {
            return None;
        }
        let key: Key = match self.rows.get_key_value(key) {
            Some((existing, _)) => existing.clone(),
            None => Key::from(key),
        };
        let chain = self.rows.entry(key.clone()).or_default();
        let (ts, writer, state, row) = (version.ts, version.writer, version.state, version.row.clone());
        if !chain.insert(version) {
            return None;
        }
        self.versions += 1;
        if state == VersionState::Prepared {
            self.prepared += 1;
        }
        // A committed write below the trim point is not logged (as in `commit_version`).
        let logged = if state == VersionState::Committed && ts < self.log.trimmed_to() {
            self.log.note_trimmed(ts);
            false
        } else {
            self.log.record(ts, writer, &key, LoggedWrite { state, row: row.clone() })
        };
        // One count for the version, one for its logged write, in a single index update.
        if let Some(row) = &row {
            self.index_add(&key, row, 1 + usize::from(logged));
        }
        self.enforce_cap(&key, cap);
        self.reschedule(&key);
        Some(key)
    }

    /// Marks the prepared version of (ts, writer) at `key` committed. A write below the log's
    /// trim point leaves the log right away (gc trims each log range only once).
    pub fn commit_version(&mut self, key: &Key, ts: Timestamp, writer: TxnId, cap: usize) {
        let Some(version) = self.rows.get_mut(key).and_then(|c| c.get_mut(ts, &writer)) else { return };
        if version.state == VersionState::Committed {
            return;
        }
        version.state = VersionState::Committed;
        self.prepared -= 1;
        if ts < self.log.trimmed_to() {
            if self.unlog(ts, writer, key) {
                self.log.note_trimmed(ts);
            }
        } else if let Some(logged) = self.log.get_mut(ts, writer, key) {
            logged.state = VersionState::Committed;
        }
        self.enforce_cap(key, cap);
        self.reschedule(key);
    }

    /// Removes the prepared version of (ts, writer) at `key`, its log write and index entries.
    pub fn abort_version(&mut self, key: &Key, ts: Timestamp, writer: TxnId) {
        let Some(chain) = self.rows.get_mut(key) else { return };
        let Some(removed) = chain.remove_if(ts, &writer, |v| v.state == VersionState::Prepared) else { return };
        self.prepared -= 1;
        self.unlog(ts, writer, key);
        self.forget(key, &[removed]);
        if self.rows.get(key).is_some_and(|c| c.versions.is_empty()) {
            self.drop_key(key);
        } else {
            self.reschedule(key);
        }
    }

    fn enforce_cap(&mut self, key: &Key, cap: usize) {
        let Some(chain) = self.rows.get_mut(key) else { return };
        let removed = chain.enforce_cap(cap);
        self.forget(key, &removed);
    }

    /// Accounts for versions that left `key`'s chain (index entries and counters; the log
    /// is handled by the caller because capped versions stay logged).
    fn forget(&mut self, key: &Key, removed: &[StoredVersion]) {
        for version in removed {
            self.versions -= 1;
            if let Some(row) = &version.row {
                self.index_remove(key, row);
            }
        }
    }

    /// Removes a logged write and its secondary-index counts; true if it was logged.
    fn unlog(&mut self, ts: Timestamp, writer: TxnId, key: &Key) -> bool {
        let Some(removed) = self.log.remove(ts, writer, key) else { return false };
        if let Some(row) = &removed.row {
            self.index_remove(key, row);
        }
        true
    }

    fn index_add(&mut self, key: &Key, row: &Row, count: usize) {
        for index in &mut self.indexes {
            index.add(&self.schema, key, row, count);
        }
    }

    fn index_remove(&mut self, key: &Key, row: &Row) {
        for index in &mut self.indexes {
            index.remove(&self.schema, key, row);
        }
    }

    fn drop_key(&mut self, key: &Key) {
        if let Some(chain) = self.rows.remove(key) {
            if let Some(due) = chain.gc_due {
                self.gc_queue.remove(&(due, key.clone()));
            }
            self.forget(key, &chain.versions);
        }
    }

    /// Re-queues `key` under its current gc threshold.
    fn reschedule(&mut self, key: &Key) {
        let Some(chain) = self.rows.get_mut(key) else { return };
        let due = chain.gc_threshold();
        if due == chain.gc_due {
            return;
        }
        if let Some(old) = chain.gc_due.take() {
            self.gc_queue.remove(&(old, key.clone()));
        }
        if let Some(new) = due {
            self.gc_queue.insert((new, key.clone()));
        }
        chain.gc_due = due;
    }

    /// GC at `watermark`: examines exactly the queued keys whose threshold lies below it,
    /// then trims committed log writes below it (except the last `log_keep_us`, see
    /// `WriteLog::trim`).
    pub fn collect(&mut self, watermark: Timestamp, log_keep_us: u64, tombstone_keep_us: u64) -> GcStats {
        let horizon = Timestamp::at(watermark.time.saturating_sub(tombstone_keep_us));
        let mut stats = GcStats::default();
        let not_due = self.gc_queue.split_off(&(watermark, Key::from(&[][..])));
        let due = std::mem::replace(&mut self.gc_queue, not_due);
        for (_, key) in due {
            stats.keys_examined += 1;
            let Some(chain) = self.rows.get_mut(&key) else { continue };
            chain.gc_due = None;
            let removed = chain.collect(watermark);
            let dead = chain.is_dead(horizon);
            // A tombstone not old enough to go: looked at again when it is.
            let tombstone = chain.is_dead(watermark).then(|| chain.versions.first().map(|v| v.ts)).flatten();
            stats.versions_removed += removed.len();
            self.forget(&key, &removed);
            if dead {
                stats.versions_removed += 1;
                stats.keys_removed += 1;
                self.drop_key(&key);
            } else if let Some(ts) = tombstone {
                let due = Timestamp { time: ts.time.saturating_add(tombstone_keep_us), ..ts };
                if let Some(chain) = self.rows.get_mut(&key) {
                    chain.gc_due = Some(due);
                }
                self.gc_queue.insert((due, key));
            } else {
                self.reschedule(&key);
            }
        }
        let trimmed = self.log.trim(watermark, log_keep_us);
        stats.log_writes_trimmed = trimmed.len();
        for (key, write) in &trimmed {
            if let Some(row) = &write.row {
                self.index_remove(key, row);
            }
        }
        stats
    }

    /// ADD COLUMN: pads every stored row with `default`. Versions and log writes share row
    /// allocations, so each padded row is built once and installed in both places.
    pub fn add_column(&mut self, schema: Arc<TableSchema>, default: Value) {
        let width = schema.columns.len();
        self.schema = schema;
        let pad = |row: &Arc<pistou_types::Row>| {
            let mut padded = Vec::with_capacity(width);
            padded.extend_from_slice(row);
            padded.resize(width.max(row.len()), default.clone());
            Arc::new(padded)
        };
        for (key, chain) in &mut self.rows {
            for version in &mut chain.versions {
                let Some(row) = &version.row else { continue };
                if row.len() >= width {
                    continue;
                }
                let padded = pad(row);
                if let Some(logged) = self.log.get_mut(version.ts, version.writer, key) {
                    logged.row = Some(padded.clone());
                }
                version.row = Some(padded);
            }
        }
        // Writes whose version the cap already deleted.
        for (_, _, _, logged) in self.log.writes_mut() {
            if let Some(row) = &logged.row {
                if row.len() < width {
                    logged.row = Some(pad(row));
                }
            }
        }
    }

    /// CREATE INDEX: builds `index` from every stored version and logged write.
    pub fn create_index(&mut self, schema: Arc<TableSchema>, index: IndexSchema) {
        self.schema = schema;
        self.indexes.retain(|i| i.schema.name != index.name);
        let mut built = SecondaryIndex::new(index);
        for (key, chain) in &self.rows {
            for row in chain.versions.iter().filter_map(|v| v.row.as_ref()) {
                built.add(&self.schema, key, row, 1);
            }
        }
        for (_, entry) in self.log.iter() {
            for (key, row) in entry.iter().filter_map(|(k, w)| Some((k, w.row.as_ref()?))) {
                built.add(&self.schema, key, row, 1);
            }
        }
        self.indexes.push(built);
    }

    /// The logged writes with `lo < ts < hi` to every key that has a stored version or a
    /// logged write whose key in `index` lies in `ranges`, or None if the store has no such
    /// index or the ranges hold more than `max_entries` index entries. A write whose row
    /// has an index key outside the ranges is still returned when another version of its
    /// key has one inside: its abort would expose that version.
    #[allow(clippy::type_complexity)]
    pub fn writes_via_index(
        &self,
        index: &IndexSchema,
        lo: Timestamp,
        hi: Timestamp,
        ranges: &[KeyRange],
        max_entries: usize,
    ) -> Option<Vec<(Timestamp, TxnId, &Key, &LoggedWrite)>> {
        let index = self.indexes.iter().find(|i| i.schema == *index)?;
        let mut keys = BTreeSet::new();
        let mut entries = 0;
        for range in ranges {
            for (_, key) in index.range(range) {
                entries += 1;
                if entries > max_entries {
                    return None;
                }
                keys.insert(&key[..]);
            }
        }
        Some(self.log.between_of(lo, hi, keys))
    }

    /// Names of the table's secondary indexes.
    pub fn index_names(&self) -> Vec<String> {
        self.indexes.iter().map(|i| i.schema.name.clone()).collect()
    }

    /// A schema change elsewhere that changed this table's schema but no row or index of
    /// it (a foreign key's parent renamed, a sequence its column draws from renamed).
    pub fn set_schema(&mut self, schema: Arc<TableSchema>) {
        self.schema = schema;
    }

    /// ALTER TABLE ... RENAME TO: the rows stay; the one index named after the table (the
    /// primary key ADD PRIMARY KEY made, `Catalog::rename_table`) takes its new name.
    pub fn rename(&mut self, schema: Arc<TableSchema>) {
        let new: Vec<&IndexSchema> =
            schema.indexes.iter().filter(|i| !self.indexes.iter().any(|have| have.schema.name == i.name)).collect();
        let mut gone: Vec<&mut SecondaryIndex> =
            self.indexes.iter_mut().filter(|i| schema.index(&i.schema.name).is_none()).collect();
        if let ([old], [new]) = (gone.as_mut_slice(), new.as_slice()) {
            old.schema.name = new.name.clone();
        }
        self.schema = schema;
    }

    /// DROP INDEX.
    pub fn drop_index(&mut self, schema: Option<Arc<TableSchema>>, name: &str) {
        if let Some(schema) = schema {
            self.schema = schema;
        }
        self.indexes.retain(|i| i.schema.name != name);
    }
}
