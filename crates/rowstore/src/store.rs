//! [`RowStore`]: tables, the per-writer index and the watermark.

use crate::chain::{Key, StoredVersion};
use crate::error::StoreError;
use crate::limits::{GcStats, StoreLimits, StoreStats};
use crate::log::LoggedWrite;
use crate::refs::{VersionRef, VersionState, WriteRef};
use crate::table::Table;
use crate::validate::check_write;
use pistou_core::{Timestamp, TxnId};
use pistou_types::{Catalog, CatalogChange, IndexSchema, KeyRange, TableSchema, Value, Write, WriteSet};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Most logged keys `writes_between_in` looks up one by one before it walks the window
/// instead (a wide range holds more keys than the window holds writes).
const MAX_KEYS_LOOKED_UP: usize = 64;

/// The prepared versions of one writer, so commit and abort touch only its own keys.
#[derive(Clone, Debug)]
pub(crate) struct PreparedWrites {
    pub ts: Timestamp,
    /// Keys with a prepared version of this writer, by table.
    pub keys: BTreeMap<String, BTreeSet<Key>>,
}

/// The multi-version SQL row store of one replica (see the crate documentation).
#[derive(Clone, Debug)]
pub struct RowStore {
    pub(crate) limits: StoreLimits,
    pub(crate) watermark: Timestamp,
    /// Shared so that a statement run off the replica's protocol thread reads a snapshot
    /// ([`RowStore::snapshot`]) while the replica goes on: a table is copied only when the
    /// replica changes it while a snapshot holds it.
    pub(crate) tables: BTreeMap<String, Arc<Table>>,
    pub(crate) writers: BTreeMap<TxnId, PreparedWrites>,
}

impl Default for RowStore {
    /// An empty store with [`StoreLimits::default`].
    fn default() -> Self {
        RowStore::new(StoreLimits::default())
    }
}

impl RowStore {
    /// An empty store with no tables and the watermark at GENESIS.
    pub fn new(limits: StoreLimits) -> Self {
        RowStore { limits, watermark: Timestamp::GENESIS, tables: BTreeMap::new(), writers: BTreeMap::new() }
    }

    /// The limits the store was created with.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    /// Mirrors a committed catalog change; `before` and `after` are the catalogs around it.
    /// Tables are kept under their storage names (`TableSchema::storage_name`). CREATE TABLE
    /// starts an empty table (replacing any data under that name), DROP TABLE discards the
    /// table's versions and log, RENAME keeps the rows where they are, CREATE INDEX backfills
    /// from every stored version, ADD COLUMN pads every stored row with the column's default
    /// (NULL if none). Changes naming a table the store does not have are ignored.
    pub fn apply_catalog_change(&mut self, before: &Catalog, after: &Catalog, change: &CatalogChange) {
        self.apply_change(before, after, change);
        self.refresh_schemas(after);
    }

    /// Every stored table takes the schema `after` has for it. A change of one relation can
    /// change other tables' schemas too (a renamed parent in their foreign keys, a renamed
    /// sequence their columns draw from), and writes are checked against the store's schema
    /// (`validate`): a stale one would refuse every write to such a table.
    fn refresh_schemas(&mut self, after: &Catalog) {
        let stale: Vec<String> = self
            .tables
            .iter()
            .filter(|(name, t)| after.stored(name).is_some_and(|s| !Arc::ptr_eq(s, &t.schema) && **s != *t.schema))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            if let (Some(schema), Some(t)) = (after.stored(&name).cloned(), self.table_mut(&name)) {
                t.set_schema(schema);
            }
        }
    }

    fn apply_change(&mut self, before: &Catalog, after: &Catalog, change: &CatalogChange) {
        match change {
            // One statement's changes (a table's sequences, then the table), in order.
            CatalogChange::Several(changes) => {
                for c in changes {
                    self.apply_change(before, after, c);
                }
            }
            // A sequence's counter is an ordinary key (`pistou_core::sql_keys::sequence_key`).
            // A view is catalog data only.
            CatalogChange::CreateSequence(_)
            | CatalogChange::DropSequence { .. }
            | CatalogChange::CreateView(_)
            | CatalogChange::DropView { .. }
            | CatalogChange::RenameView { .. }
            | CatalogChange::RenameSequence { .. }
            | CatalogChange::MarkUnvalidated { .. }
            | CatalogChange::Validated { .. } => {}
            CatalogChange::CreateTable(schema) => {
                // The schema as the catalog applied it: the change's own `stored_as` comes from
                // the client and must never name where rows go. Absent: a later change of the
                // same statement dropped it again, and there is nothing to store.
                let Some(schema) = after.table(&schema.name).cloned() else { return };
                let storage = schema.storage_name().to_string();
                self.drop_table(&storage);
                self.tables.insert(storage, Arc::new(Table::new(schema)));
            }
            CatalogChange::DropTable { table } => {
                let storage = before.table(table).map_or(table.as_str(), |t| t.storage_name());
                self.drop_table(storage);
            }
            CatalogChange::RenameTable { to, .. } => {
                let Some((schema, t)) = self.table_of(after, to) else { return };
                t.rename(schema);
            }
            CatalogChange::RenameIndex { to, .. } => {
                let Some(table) = after.table_of_index(to) else { return };
                let Some((schema, t)) = self.table_of(after, &table.name) else { return };
                t.rename(schema);
            }
            CatalogChange::CreateIndex { table, index } | CatalogChange::AddPrimaryKey { table, index } => {
                let Some((schema, t)) = self.table_of(after, table) else { return };
                let index = schema.index(&index.name).cloned().unwrap_or_else(|| index.clone());
                t.create_index(schema, index);
            }
            CatalogChange::DropIndex { table, index } => {
                if let Some((schema, t)) = self.table_of(after, table) {
                    t.drop_index(Some(schema), index);
                }
            }
            CatalogChange::AlterTable { table, .. } => {
                // No stored row changes (a dropped column stays in rows, hidden); indexes the
                // actions dropped go, those they added (UNIQUE constraints) are built.
                let Some((schema, t)) = self.table_of(after, table) else { return };
                let gone: Vec<String> = t.index_names().into_iter().filter(|n| schema.index(n).is_none()).collect();
                for name in gone {
                    t.drop_index(Some(schema.clone()), &name);
                }
                let have = t.index_names();
                for index in schema.indexes.iter().filter(|i| !have.contains(&i.name)) {
                    t.create_index(schema.clone(), index.clone());
                }
                t.drop_index(Some(schema.clone()), "");
            }
            CatalogChange::AddColumn { table, column } => {
                let Some((schema, t)) = self.table_of(after, table) else { return };
                t.add_column(schema, column.default.clone().unwrap_or(Value::Null));
            }
        }
    }

    /// The schema `catalog` has for the table named `name` and the store's table, to change
    /// (copied first if a snapshot shares it).
    fn table_of(&mut self, catalog: &Catalog, name: &str) -> Option<(Arc<TableSchema>, &mut Table)> {
        let schema = catalog.table(name)?.clone();
        let table = self.table_mut(schema.storage_name())?;
        Some((schema, table))
    }

    /// `name`'s table to change, copied first if a snapshot shares it.
    fn table_mut(&mut self, name: &str) -> Option<&mut Table> {
        self.tables.get_mut(name).map(Arc::make_mut)
    }

    /// The store as it is now, restricted to `tables` (others are left out; unknown names
    /// are ignored): for a statement that runs elsewhere while this store goes on changing.
    /// O(tables) now; a table shared with a snapshot is copied when it is next changed here.
    pub fn snapshot<'a>(&self, tables: impl IntoIterator<Item = &'a str>) -> RowStore {
        let tables =
            tables.into_iter().filter_map(|n| self.tables.get_key_value(n)).map(|(n, t)| (n.clone(), t.clone()));
        RowStore { limits: self.limits, watermark: self.watermark, tables: tables.collect(), writers: BTreeMap::new() }
    }

    /// Removes a table and every reference the per-writer index holds into it.
    fn drop_table(&mut self, name: &str) {
        if self.tables.remove(name).is_none() {
            return;
        }
        self.writers.retain(|_, w| {
            w.keys.remove(name);
            !w.keys.is_empty()
        });
    }

    /// Installs `writer`'s writes at `ts` as `state` versions.
    ///
    /// Everything is validated before anything changes (the writes come from untrusted
    /// clients): every table must exist with the catalog's schema equal to the store's, every
    /// upsert must be a full row of the current schema with values of the column types, within
    /// the column limits, no NULL in NOT NULL or primary-key columns, and primary-key values
    /// encoding to exactly the write's key; every deleted key must be a well-formed primary
    /// key. On error nothing is changed.
    ///
    /// Idempotent per (writer, ts): versions that already exist are left alone (a committed
    /// version is never turned back into a prepared one), missing ones are added. Inserting as
    /// committed also commits the writer's earlier prepared versions (writeback after prepare).
    /// Prepared writes below the watermark are refused (Pesto App. B.3); committed ones are
    /// installed (and collected by the next gc if shadowed), unless older than the tombstones
    /// kept (`refuses_late_commit`; see `insert_late_commit`).
    pub fn insert(
        &mut self,
        writer: TxnId,
        ts: Timestamp,
        writes: &WriteSet,
        state: VersionState,
        catalog: &Catalog,
    ) -> Result<(), StoreError> {
        self.install(writer, ts, writes, state, catalog, false)
    }

    /// True if [`RowStore::insert`] refuses a committed write at `ts` that never prepared
    /// here: it is older than the tombstones this store keeps, so a deletion of its key may
    /// have been collected already.
    pub fn refuses_late_commit(&self, ts: Timestamp) -> bool {
        ts < self.watermark && ts.time.saturating_add(self.limits.tombstone_keep_us) < self.watermark.time
    }

    /// Installs a certified commit that [`RowStore::insert`] refuses as too old (see
    /// [`RowStore::refuses_late_commit`]). The caller passes only writes that are the newest
    /// committed version of their key in a state that never forgets a key's newest version,
    /// deletions included (a replica's Basil versions, gc.rs): no newer deletion of these
    /// keys can have been collected, so none comes back. A replica catching up after a long
    /// downtime needs this, else it would lack current rows.
    pub fn insert_late_commit(
        &mut self,
        writer: TxnId,
        ts: Timestamp,
        writes: &WriteSet,
        catalog: &Catalog,
    ) -> Result<(), StoreError> {
        self.install(writer, ts, writes, VersionState::Committed, catalog, true)
    }

    fn install(
        &mut self,
        writer: TxnId,
        ts: Timestamp,
        writes: &WriteSet,
        state: VersionState,
        catalog: &Catalog,
        newest_checked_by_caller: bool,
    ) -> Result<(), StoreError> {
        let prepared_here = match self.writers.get(&writer) {
            Some(p) if p.ts != ts => {
                return Err(StoreError::WriterTimestampMismatch { writer, recorded: p.ts, given: ts });
            }
            Some(_) => true,
            None => false,
        };
        self.validate(writes, catalog)?;
        if ts < self.watermark {
            match (state, prepared_here) {
                (VersionState::Prepared, false) => {
                    return Err(StoreError::BelowWatermark { ts, watermark: self.watermark });
                }
                (VersionState::Prepared, true) => return Ok(()),
                (VersionState::Committed, true) => {
                    self.commit(&writer);
                    return Ok(());
                }
                // Certified by a commit quorum, so concurrency control has nothing left to
                // decide; without it this store would lack a current row (a replica that
                // catches up after being down for longer than the gc lag).
                (VersionState::Committed, false) => {
                    if !newest_checked_by_caller && self.refuses_late_commit(ts) {
                        return Err(StoreError::BelowWatermark { ts, watermark: self.watermark });
                    }
                }
            }
        }
        let cap = self.limits.version_cap;
        for (name, table_writes) in &writes.tables {
            let Some(table) = self.tables.get_mut(name).map(Arc::make_mut) else { continue };
            for (key, write) in table_writes {
                let row = match write {
                    Write::Upsert(row) => Some(Arc::new(row.clone())),
                    Write::Delete => None,
                };
                let installed = table.install(key, StoredVersion { ts, writer, state, row }, cap);
                if let (Some(key), VersionState::Prepared) = (installed, state) {
                    let record =
                        self.writers.entry(writer).or_insert_with(|| PreparedWrites { ts, keys: BTreeMap::new() });
                    record.keys.entry(name.clone()).or_default().insert(key);
                }
            }
        }
        if state == VersionState::Committed {
            self.commit(&writer);
        }
        Ok(())
    }

    fn validate(&self, writes: &WriteSet, catalog: &Catalog) -> Result<(), StoreError> {
        for (name, table_writes) in &writes.tables {
            let unknown = || StoreError::UnknownTable { table: name.clone() };
            let table = self.tables.get(name).ok_or_else(unknown)?;
            let schema = catalog.stored(name).ok_or_else(unknown)?;
            if !Arc::ptr_eq(schema, &table.schema) && **schema != *table.schema {
                return Err(StoreError::SchemaMismatch { table: name.clone() });
            }
            for (key, write) in table_writes {
                check_write(schema, key, write)?;
            }
        }
        Ok(())
    }

    /// Marks every prepared version of `writer` committed (no-op for an unknown writer).
    /// Cost: proportional to the writer's writes.
    pub fn commit(&mut self, writer: &TxnId) {
        let Some(record) = self.writers.remove(writer) else { return };
        let cap = self.limits.version_cap;
        for (name, keys) in &record.keys {
            let Some(table) = self.table_mut(name) else { continue };
            for key in keys {
                table.commit_version(key, record.ts, *writer, cap);
            }
        }
    }

    /// Removes every prepared version of `writer` (it aborted); committed versions are never
    /// removed by this. Cost: proportional to the writer's writes.
    pub fn abort(&mut self, writer: &TxnId) {
        let Some(record) = self.writers.remove(writer) else { return };
        for (name, keys) in &record.keys {
            let Some(table) = self.table_mut(name) else { continue };
            for key in keys {
                table.abort_version(key, record.ts, *writer);
            }
        }
    }

    /// True if `writer` has prepared versions here.
    pub fn is_prepared(&self, writer: &TxnId) -> bool {
        self.writers.contains_key(writer)
    }

    /// Versions of one key, newest first (for freshness checks and point reads).
    pub fn versions(&self, table: &str, key: &[u8]) -> impl Iterator<Item = VersionRef<'_>> {
        let chain = self.tables.get(table).and_then(|t| t.rows.get(key));
        chain.map_or(&[][..], |c| c.versions.as_slice()).iter().rev().map(StoredVersion::view)
    }

    /// The newest version of `key` with `ts < below` that `filter` accepts.
    pub fn version_below(
        &self,
        table: &str,
        key: &[u8],
        below: Timestamp,
        filter: impl Fn(&VersionRef) -> bool,
    ) -> Option<VersionRef<'_>> {
        let chain = self.tables.get(table)?.rows.get(key)?;
        chain.newest_below(below, |v| filter(&v.view())).map(StoredVersion::view)
    }

    /// Every write to `table` with `lo < ts < hi` (both exclusive), in (ts, writer, key) order:
    /// what Pesto's completeness check (Alg. 1 line 12) scans. Complete for `lo` at or above
    /// the watermark; below it, committed writes have been trimmed (prepared ones remain).
    /// Writes whose version the version cap deleted are still reported.
    pub fn writes_between(&self, table: &str, lo: Timestamp, hi: Timestamp) -> impl Iterator<Item = WriteRef<'_>> {
        self.tables.get_key_value(table).into_iter().flat_map(move |(name, t)| {
            t.log.between(lo, hi).flat_map(move |(&(ts, writer), entry)| {
                entry.iter().map(move |(key, w)| write_ref(name, ts, writer, key, w))
            })
        })
    }

    /// What `writes_between` yields, restricted to keys in `ranges` (for a predicate's key
    /// ranges: a write to another key cannot satisfy it), in the same order. Looks the keys
    /// up directly when the ranges hold at most `MAX_KEYS_LOOKED_UP` logged keys, else walks
    /// the window: either way the cost no longer grows with the table's write rate for a
    /// narrow range.
    pub fn writes_between_in(
        &self,
        table: &str,
        lo: Timestamp,
        hi: Timestamp,
        ranges: &[KeyRange],
    ) -> Vec<WriteRef<'_>> {
        let Some((name, t)) = self.tables.get_key_value(table) else { return Vec::new() };
        let mut out: Vec<WriteRef<'_>> = match t.log.between_in(lo, hi, ranges, MAX_KEYS_LOOKED_UP) {
            Some(found) => found.into_iter().map(|(ts, writer, key, w)| write_ref(name, ts, writer, key, w)).collect(),
            None => self.writes_between(table, lo, hi).filter(|w| ranges.iter().any(|r| r.contains(w.key))).collect(),
        };
        out.sort_by(|a, b| (a.ts, a.writer, a.key).cmp(&(b.ts, b.writer, b.key)));
        out.dedup_by(|a, b| (a.ts, a.writer, a.key) == (b.ts, b.writer, b.key));
        out
    }

    /// What `writes_between` yields that could satisfy a predicate whose rows all have their
    /// key in `index` inside `ranges` (`Predicate::index_key_ranges`), in the same order:
    /// the writes to every key with a version or logged write inside the ranges. None when
    /// the store has no such index or the ranges hold more than `MAX_KEYS_LOOKED_UP` entries
    /// (walk the window instead).
    pub fn writes_between_via_index(
        &self,
        table: &str,
        index: &IndexSchema,
        lo: Timestamp,
        hi: Timestamp,
        ranges: &[KeyRange],
    ) -> Option<Vec<WriteRef<'_>>> {
        let (name, t) = self.tables.get_key_value(table)?;
        let found = t.writes_via_index(index, lo, hi, ranges, MAX_KEYS_LOOKED_UP)?;
        let mut out: Vec<WriteRef<'_>> =
            found.into_iter().map(|(ts, writer, key, w)| write_ref(name, ts, writer, key, w)).collect();
        out.sort_by(|a, b| (a.ts, a.writer, a.key).cmp(&(b.ts, b.writer, b.key)));
        Some(out)
    }

    /// The newest committed write to `table` that garbage collection trimmed from its write
    /// log (None if none was): a completeness window starting at or above it sees every
    /// write in it.
    pub fn trimmed_through(&self, table: &str) -> Option<Timestamp> {
        self.tables.get(table)?.log.trimmed_through()
    }

    /// The highest timestamp of any write to `table` (prepared or committed), if any.
    pub fn newest_write(&self, table: &str) -> Option<Timestamp> {
        self.tables.get(table)?.log.newest()
    }

    /// Garbage collection (Pesto App. B.3) at `watermark` (never lowered: a smaller value acts
    /// as the current one). For every key with work: deletes the committed versions older than
    /// its newest committed version below the watermark, and drops the key if only a committed
    /// deletion below the watermark is left. Prepared versions are left to `abort`/`commit`.
    /// Trims committed writes below the watermark from the write logs, except those within
    /// [`StoreLimits::log_keep_us`] of their table's newest committed write.
    ///
    /// Cost: O(tables + examined keys × their versions + log entries in [old, new watermark)),
    /// independent of the store's size: keys wait in a queue ordered by the watermark at which
    /// they next have work.
    pub fn gc(&mut self, watermark: Timestamp) -> GcStats {
        self.watermark = self.watermark.max(watermark);
        let mut stats = GcStats::default();
        for table in self.tables.values_mut() {
            // A table a snapshot shares is collected at a later gc, when the snapshot is
            // gone, instead of being copied: collecting later is always allowed (reads at or
            // above the watermark see the same either way).
            let Some(table) = Arc::get_mut(table) else {
                stats.tables_deferred += 1;
                continue;
            };
            stats.add(table.collect(self.watermark, self.limits.log_keep_us, self.limits.tombstone_keep_us));
        }
        stats
    }

    /// The last gc watermark (GENESIS initially): reads and writes below it must be refused.
    pub fn watermark(&self) -> Timestamp {
        self.watermark
    }

    /// Reads of `key` at timestamps below this must be refused: the watermark, or higher if
    /// the per-key version cap (Pesto App. B.3 (ii)) deleted versions such a read could need.
    /// Reads at or above it see what they would have seen without any deletion, for every
    /// read policy that accepts all committed versions.
    pub fn oldest_readable(&self, table: &str, key: &[u8]) -> Timestamp {
        let floor = self.tables.get(table).and_then(|t| t.rows.get(key)).map_or(Timestamp::GENESIS, |c| c.cap_floor);
        self.watermark.max(floor)
    }

    /// The newest committed version of every key whose newest committed version is a row,
    /// not a deletion: (table, primary key) → (ts, writer). What replicas that agree on the
    /// committed state agree on whatever each has collected (tests compare replicas with
    /// it). O(keys).
    pub fn live_rows(&self) -> BTreeMap<(String, Vec<u8>), (Timestamp, TxnId)> {
        let mut out = BTreeMap::new();
        for (name, table) in &self.tables {
            for (key, chain) in &table.rows {
                if let Some(v) = chain.versions.iter().rev().find(|v| v.is_committed()) {
                    if v.row.is_some() {
                        out.insert((name.clone(), key.as_slice().to_vec()), (v.ts, v.writer));
                    }
                }
            }
        }
        out
    }

    /// Sizes of the store's structures: O(tables + indexes).
    pub fn stats(&self) -> StoreStats {
        let mut s =
            StoreStats { tables: self.tables.len(), prepared_writers: self.writers.len(), ..StoreStats::default() };
        for t in self.tables.values() {
            s.keys += t.rows.len();
            s.versions += t.versions;
            s.prepared_versions += t.prepared;
            s.index_entries += t.indexes.iter().map(|i| i.len()).sum::<usize>();
            s.log_entries += t.log.entries();
            s.log_writes += t.log.writes();
            s.gc_queue += t.gc_queue.len();
        }
        s
    }
}

fn write_ref<'a>(table: &'a str, ts: Timestamp, writer: TxnId, key: &'a Key, w: &'a LoggedWrite) -> WriteRef<'a> {
    WriteRef { table, key, ts, writer, state: w.state, row: w.row.as_deref() }
}
