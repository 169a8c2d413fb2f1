//! Pesto's SQL layer inside a replica (Pesto §5–6): the multi-version row store, the
//! committed catalogs, and the state the semantic concurrency check needs.
//!
//! SQL data lives in Basil's key space (`pistou_core::sql_keys`): a row write is a write of
//! key `row_key(table, table_id, pk)` whose value is the postcard encoding of the row (`None` deletes
//! it), and a schema change is a write of every shard's catalog key whose value is the
//! postcard encoding of a [`CatalogWrite`] (the change and the whole catalog after it, so
//! that a client learns the schema with one Basil read of the catalog key). So the Basil checks (freshness of every read,
//! dependencies, RTS) apply to SQL unchanged; this module adds what Pesto adds: the row
//! store the SQL engine reads, and Alg. 1's predicate and monotonicity rules (`cc`).

pub(crate) mod cc;
pub(crate) mod range_jobs;
pub(crate) mod range_read;
pub(crate) mod snapshot;

use pistou_core::sql_keys::{catalog_key, key_kind, KeyKind};
use pistou_core::{ClusterConfig, ShardId, SqlConfig, Timestamp, TxnId};
use pistou_rowstore::{RowStore, StoreLimits, VersionState};
use pistou_sql::{Catalog, CatalogChange, Engine, IndexSchema, KeyRange, Limits, Predicate, Row, Write, WriteSet};
use pistou_wire::TxnMeta;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The value of a catalog key: the schema changes of one transaction, in statement order,
/// and the catalog they produce. Replicas accept it only if applying `changes` in order to
/// the catalog the transaction read gives exactly `catalog`, so a certified catalog-key
/// value is a trustworthy schema.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CatalogWrite {
    pub changes: Vec<CatalogChange>,
    pub catalog: Catalog,
}

impl CatalogWrite {
    /// Most schema changes one transaction may make (each is re-applied by every replica).
    pub const MAX_CHANGES: usize = 256;

    /// `base` with `changes` applied in order, with the catalog after each change (the row
    /// store applies each change against the schema it produced).
    pub fn apply_to(&self, base: &Catalog) -> Result<Vec<(Catalog, &CatalogChange)>, String> {
        if self.changes.is_empty() || self.changes.len() > Self::MAX_CHANGES {
            return Err(format!("a catalog write carries 1 to {} changes", Self::MAX_CHANGES));
        }
        let mut steps: Vec<(Catalog, &CatalogChange)> = Vec::with_capacity(self.changes.len());
        let mut next = base.clone();
        for change in &self.changes {
            next.apply(change, &pistou_sql::EngineRules).map_err(|e| e.message)?;
            steps.push((next.clone(), change));
        }
        Ok(steps)
    }
}

/// The tables a change drops (also inside `Several`, which a client may send).
fn dropped_tables(change: &CatalogChange) -> Vec<&str> {
    match change {
        CatalogChange::DropTable { table } => vec![table.as_str()],
        CatalogChange::Several(changes) => changes.iter().flat_map(dropped_tables).collect(),
        _ => Vec::new(),
    }
}

/// Why a transaction's SQL content cannot be accepted (it gets an abort vote).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlTxnError {
    #[error("SQL writes or predicates without a read of this shard's catalog")]
    NoCatalogRead,
    #[error("the catalog version read is not committed at this replica")]
    UnknownCatalog,
    #[error("undecodable row or catalog change")]
    Undecodable,
    #[error("predicate or write on a table the catalog does not have")]
    UnknownTable,
    #[error("malformed predicate: {0}")]
    BadPredicate(String),
    #[error("a schema change with key-value writes in one transaction")]
    MixedDdl,
    #[error("schema change does not apply: {0}")]
    BadCatalogChange(String),
}

/// The SQL content of one transaction at this shard, decoded once at ST1.
#[derive(Debug, Default)]
pub(crate) struct SqlTxn {
    /// The catalog version (writer timestamp of the catalog key) the transaction read.
    pub(crate) catalog_version: Option<Timestamp>,
    pub(crate) writes: WriteSet,
    /// Predicates decoded against the catalog read.
    /// Shared with the table's reader index once T is registered there (the decoded
    /// expression is the bulk of a predicate's memory).
    pub(crate) predicates: Vec<Arc<ReadPredicate>>,
    /// A schema change this transaction writes to our catalog key.
    pub(crate) catalog_change: Option<CatalogWrite>,
}

/// One read predicate of a transaction: P, P.table_v, and the row keys of P's table that the
/// statement evaluating P read (a write to one of those keys is Basil's business).
#[derive(Debug, Clone)]
pub(crate) struct ReadPredicate {
    pub(crate) predicate: Predicate,
    pub(crate) table_version: Timestamp,
    /// Primary keys (as the store holds them) of the rows of P's table that P's statement
    /// read or the transaction had written before it.
    pub(crate) active: Arc<BTreeSet<Vec<u8>>>,
    /// Primary-key ranges outside which no row satisfies P (None: P does not restrict the
    /// key): the semantic check skips writes to other keys before evaluating P.
    pub(crate) key_ranges: Option<Vec<KeyRange>>,
    /// Without key ranges: a secondary index and ranges of its key outside which no row
    /// satisfies P, so the semantic check looks up writes through the index.
    pub(crate) index_ranges: Option<(IndexSchema, Vec<KeyRange>)>,
}

impl ReadPredicate {
    /// False only for a key (a primary key, as the store holds it) no version of which can
    /// satisfy P.
    pub(crate) fn may_cover(&self, key: &[u8]) -> bool {
        self.key_ranges.as_ref().is_none_or(|ranges| ranges.iter().any(|r| r.contains(key)))
    }
}

/// Registered readers of one table: (ts, id) → their predicates on it.
type TableReaders = BTreeMap<(Timestamp, TxnId), Arc<[Arc<ReadPredicate>]>>;

/// A replica's SQL state.
pub(crate) struct SqlReplica {
    pub(crate) store: RowStore,
    /// Committed catalogs by the timestamp of the transaction that wrote them; GENESIS is the
    /// empty catalog every shard starts with.
    catalogs: BTreeMap<Timestamp, Arc<Catalog>>,
    /// Prepared or committed transactions with read predicates, per table: the write side of
    /// the semantic check (Alg. 1 lines 17–19) looks for readers ordered after a writer.
    readers: HashMap<String, TableReaders>,
    /// Highest table version this replica reported to a range read, per table: the write
    /// monotonicity bound (§6.1.3).
    reported: HashMap<String, Timestamp>,
    /// A lower bound of `reported` for every table, set on recovery: what this replica
    /// reported before a restart is not logged, so it assumes the most it could have
    /// reported (`Replica::recover`).
    pub(crate) reported_floor: Timestamp,
    /// Prepared (undecided) writers per table: range reads skip their versions, so a
    /// reported table version must not pass the oldest of them (§6.1.3, "Accounting for
    /// snapshots").
    prepared_writes: HashMap<String, BTreeSet<(Timestamp, TxnId)>>,
    /// Tables dropped here: (timestamp of the DROP, storage name, identity). Their Basil key states
    /// are collected once the watermark passes the DROP (`Replica::collect_dropped_tables`).
    /// `readers`, `reported` and `prepared_writes` are keyed by storage name and outlive a DROP:
    /// entries about the dropped table all lie below the DROP's timestamp and entries about
    /// a table created later above it, and a late writer of the dropped table (ordered before
    /// the DROP) must still meet that table's readers.
    dropped: BTreeSet<(Timestamp, String, u64)>,
    pub(crate) params: SqlConfig,
    shard: ShardId,
    /// The SQL engine with its plan cache (pure computation: no I/O, no clock), shared with
    /// range reads running off the protocol thread (`range_jobs`).
    engine: Arc<Engine>,
}

impl SqlReplica {
    pub(crate) fn new(config: &ClusterConfig, shard: ShardId) -> SqlReplica {
        let mut catalogs = BTreeMap::new();
        catalogs.insert(Timestamp::GENESIS, Arc::new(Catalog::new()));
        SqlReplica {
            // The log keeps the long grace below a quiet table's last write: readers'
            // completeness windows reach that far below their table version.
            store: RowStore::new(StoreLimits {
                version_cap: config.sql.version_cap,
                log_keep_us: config.sql.late_grace_us,
                tombstone_keep_us: pistou_rowstore::DEFAULT_TOMBSTONE_KEEP_US,
            }),
            catalogs,
            readers: HashMap::new(),
            reported: HashMap::new(),
            reported_floor: Timestamp::GENESIS,
            prepared_writes: HashMap::new(),
            dropped: BTreeSet::new(),
            params: config.sql.clone(),
            shard,
            engine: Arc::new(Engine::new(Limits::of_cluster(&config.sql, pistou_wire::MAX_TXN_OPS))),
        }
    }

    /// The committed catalog written at `version`.
    pub(crate) fn catalog_at(&self, version: Timestamp) -> Option<&Arc<Catalog>> {
        self.catalogs.get(&version)
    }

    /// The newest committed catalog below `ts`, with its version.
    pub(crate) fn catalog_below(&self, ts: Timestamp) -> (Timestamp, Arc<Catalog>) {
        match self.catalogs.range(..ts).next_back() {
            Some((v, c)) => (*v, c.clone()),
            None => (Timestamp::GENESIS, Arc::new(Catalog::new())),
        }
    }

    /// Garbage collection (App. B.3): versions below the watermark collapse to the newest
    /// one, and registered readers below it are forgotten. The watermark trails `now` by the
    /// configured lag, and never passes the oldest timestamp a transaction may still prepare
    /// at (`max_txn_age_us`), so no reader or writer that can still commit is affected.
    pub(crate) fn gc(&mut self, now: u64, max_txn_age_us: u64) {
        let lag = self.params.gc_lag_us.max(max_txn_age_us);
        let watermark = Timestamp::at(now.saturating_sub(lag));
        if watermark <= self.store.watermark() {
            return;
        }
        self.store.gc(watermark);
        // Each table's readers on their own: the order does not matter.
        #[allow(clippy::iter_over_hash_type, clippy::disallowed_methods)]
        for readers in self.readers.values_mut() {
            *readers = readers.split_off(&(watermark, TxnId([0; 32])));
        }
        #[allow(clippy::disallowed_methods)] // a pure predicate: the order does not matter
        self.readers.retain(|_, r| !r.is_empty());
    }

    /// Takes the tables dropped below `watermark`: (name, identity).
    pub(crate) fn take_dropped_below(&mut self, watermark: Timestamp) -> Vec<(String, u64)> {
        let above = self.dropped.split_off(&(watermark, String::new(), 0));
        std::mem::replace(&mut self.dropped, above).into_iter().map(|(_, table, id)| (table, id)).collect()
    }

    /// The oldest prepared write to `table` below `ts`, if any: a version every range read
    /// at `ts` skips (it reads committed versions only).
    pub(crate) fn oldest_skipped(&self, table: &str, ts: Timestamp) -> Option<Timestamp> {
        self.prepared_writes.get(table)?.first().map(|(t, _)| *t).filter(|t| *t < ts)
    }

    fn forget_prepared(&mut self, id: TxnId, ts: Timestamp, txn: &SqlTxn) {
        for table in txn.writes.tables.keys() {
            if let Some(set) = self.prepared_writes.get_mut(table) {
                set.remove(&(ts, id));
                if set.is_empty() {
                    self.prepared_writes.remove(table);
                }
            }
        }
    }

    /// Records that a range read was told `version` for `table` (monotonicity bound).
    pub(crate) fn note_reported(&mut self, table: &str, version: Timestamp) {
        // Looked up before inserting: every range read reports, and the table is nearly
        // always known already (no key to allocate).
        match self.reported.get_mut(table) {
            Some(high) => *high = (*high).max(version),
            None => {
                self.reported.insert(table.to_string(), version);
            }
        }
    }

    /// Decodes the SQL content of `meta` that concerns this shard. `Ok(None)` for a plain
    /// key-value transaction.
    pub(crate) fn decode(&self, config: &ClusterConfig, meta: &TxnMeta) -> Result<Option<SqlTxn>, SqlTxnError> {
        let mut txn =
            SqlTxn { catalog_version: meta.read_of(&catalog_key(self.shard)).map(|r| r.version), ..SqlTxn::default() };
        let mut plain_writes = false;
        // Row keys name their table's identity, checked against the catalog read below.
        let mut row_tables: BTreeMap<&str, u64> = BTreeMap::new();
        for w in meta.write_set.iter().filter(|w| config.shard_of(&w.key) == self.shard) {
            match key_kind(&w.key) {
                KeyKind::Row { table, table_id, pk } => {
                    let write = match &w.value {
                        Some(bytes) => {
                            Write::Upsert(postcard::from_bytes::<Row>(bytes).map_err(|_| SqlTxnError::Undecodable)?)
                        }
                        None => Write::Delete,
                    };
                    if *row_tables.entry(table).or_insert(table_id) != table_id {
                        return Err(SqlTxnError::UnknownTable);
                    }
                    txn.writes.put(table, pk.to_vec(), write);
                }
                KeyKind::Catalog(_) => {
                    let bytes = w.value.as_ref().ok_or(SqlTxnError::Undecodable)?;
                    let write: CatalogWrite = postcard::from_bytes(bytes).map_err(|_| SqlTxnError::Undecodable)?;
                    txn.catalog_change = Some(write);
                }
                KeyKind::Plain => plain_writes = true,
            }
        }
        let mine: Vec<_> =
            meta.predicates.iter().filter(|p| config.table_shard(&p.predicate.table) == self.shard).collect();
        if txn.writes.is_empty() && mine.is_empty() && txn.catalog_change.is_none() {
            return Ok(None);
        }
        if txn.catalog_change.is_some() && plain_writes {
            return Err(SqlTxnError::MixedDdl);
        }
        let version = txn.catalog_version.ok_or(SqlTxnError::NoCatalogRead)?;
        let catalog = self.catalog_at(version).ok_or(SqlTxnError::UnknownCatalog)?;
        // Rows are in the schema the transaction leaves (docs/sql.md, "Schema changes in
        // transactions"): the one it wrote if it changes the schema, else the one it read.
        let mut rows_catalog: &Catalog = catalog;
        if let Some(write) = &txn.catalog_change {
            let steps = write.apply_to(catalog).map_err(SqlTxnError::BadCatalogChange)?;
            if steps.last().map(|(after, _)| after) != Some(&write.catalog) {
                return Err(SqlTxnError::BadCatalogChange(
                    "the catalog written is not the result of the change".into(),
                ));
            }
            rows_catalog = &write.catalog;
            // Rows of tables it created or changed reach the store only at commit, after
            // the change: check them now, so that a bad row gets an abort vote.
            pistou_rowstore::check_writes(&txn.writes, rows_catalog).map_err(|_| SqlTxnError::Undecodable)?;
        }
        for (table, id) in row_tables {
            if rows_catalog.stored(table).map(|t| t.id) != Some(id) {
                return Err(SqlTxnError::UnknownTable);
            }
        }
        for p in mine {
            let schema = catalog.stored(&p.predicate.table).ok_or(SqlTxnError::UnknownTable)?;
            let predicate = pistou_sql::Predicate::from_wire(&p.predicate, schema.columns.len())
                .map_err(|e| SqlTxnError::BadPredicate(e.message))?;
            // Active keys are rows of P's table (`TxnMeta::validate`); kept as primary keys.
            let mut active = BTreeSet::new();
            for key in &p.active {
                match key_kind(key) {
                    KeyKind::Row { table_id, pk, .. } if table_id == schema.id => active.insert(pk.to_vec()),
                    _ => return Err(SqlTxnError::UnknownTable),
                };
            }
            let active = Arc::new(active);
            let key_ranges = predicate.primary_key_ranges(schema);
            let index_ranges = match key_ranges {
                Some(_) => None,
                None => predicate
                    .index_key_ranges(schema)
                    .and_then(|(position, ranges)| Some((schema.indexes.get(position)?.clone(), ranges))),
            };
            txn.predicates.push(Arc::new(ReadPredicate {
                predicate,
                table_version: p.table_version,
                active,
                key_ranges,
                index_ranges,
            }));
        }
        Ok(Some(txn))
    }

    /// T's row writes in the store's current schema. A schema change ordered after T may have
    /// committed here before T's writes arrive (T commits, D = ALTER commits, T's writeback
    /// reaches this replica last): T's rows are then older versions under the new schema —
    /// padded with the defaults of columns added since, or dropped with their table if it
    /// was dropped since, even if a table of the same name was created after it (a dropped
    /// table's history goes with it).
    ///
    /// A transaction that changes the schema writes rows in the schema it leaves: before its
    /// change takes effect here, only the rows of tables whose schema it left as they are
    /// (prepared versions; no one can read a table it creates before it commits), and all
    /// of them once the change has taken effect (commit).
    fn writes_for_store<'t>(&self, txn: &'t SqlTxn) -> (Cow<'t, WriteSet>, Arc<Catalog>) {
        let (current_version, current) = self.catalog_below(Timestamp::MAX);
        if let Some(write) = &txn.catalog_change {
            let mut out = WriteSet::default();
            for (table, rows) in &txn.writes.tables {
                if current.stored(table).is_some_and(|now| write.catalog.stored(table).is_some_and(|w| **w == **now)) {
                    for (pk, write) in rows {
                        out.put(table, pk.clone(), write.clone());
                    }
                }
            }
            return (Cow::Owned(out), current);
        }
        let read = txn.catalog_version.unwrap_or(Timestamp::GENESIS);
        if read == current_version {
            return (Cow::Borrowed(&txn.writes), current);
        }
        let read_catalog = self.catalog_at(read);
        let mut out = WriteSet::default();
        for (table, rows) in &txn.writes.tables {
            // The table T wrote is still there if its identity is (`decode` checked T's
            // row keys against the catalog T read).
            let written = read_catalog.and_then(|c| c.stored(table)).map(|t| t.id);
            let Some(schema) = current.stored(table).filter(|s| Some(s.id) == written) else { continue };
            for (pk, write) in rows {
                let write = match write {
                    Write::Upsert(row) if row.len() < schema.columns.len() => {
                        // Each added column reads the default it had when it was added (a
                        // later SET DEFAULT must not change rows older than it, or replicas
                        // receiving this writeback before and after it would differ).
                        let mut row = row.clone();
                        for pos in row.len()..schema.columns.len() {
                            let added = self
                                .catalogs
                                .range((std::ops::Bound::Excluded(read), std::ops::Bound::Unbounded))
                                .filter_map(|(_, c)| c.stored(table).filter(|t| t.id == schema.id))
                                .find_map(|t| t.columns.get(pos))
                                .or_else(|| schema.columns.get(pos));
                            row.push(added.and_then(|c| c.default.clone()).unwrap_or(pistou_sql::Value::Null));
                        }
                        Write::Upsert(row)
                    }
                    other => other.clone(),
                };
                out.put(table, pk.clone(), write);
            }
        }
        (Cow::Owned(out), current)
    }

    /// Installs T's row writes as prepared versions and registers its predicates.
    pub(crate) fn prepare(&mut self, id: TxnId, ts: Timestamp, txn: &SqlTxn) -> Result<(), String> {
        if !txn.writes.is_empty() {
            let (writes, catalog) = self.writes_for_store(txn);
            self.store.insert(id, ts, &writes, VersionState::Prepared, &catalog).map_err(|e| e.to_string())?;
            for table in writes.tables.keys() {
                self.prepared_writes.entry(table.clone()).or_default().insert((ts, id));
            }
        }
        self.register_readers(id, ts, txn);
        Ok(())
    }

    fn register_readers(&mut self, id: TxnId, ts: Timestamp, txn: &SqlTxn) {
        let mut by_table: BTreeMap<&str, Vec<Arc<ReadPredicate>>> = BTreeMap::new();
        for p in &txn.predicates {
            by_table.entry(p.predicate.table.as_str()).or_default().push(p.clone());
        }
        for (table, preds) in by_table {
            self.readers.entry(table.to_string()).or_default().insert((ts, id), preds.into());
        }
    }

    /// Undoes `prepare` (T aborted or lost a dependency).
    pub(crate) fn unprepare(&mut self, id: TxnId, ts: Timestamp, txn: &SqlTxn) {
        self.store.abort(&id);
        self.forget_prepared(id, ts, txn);
        for p in &txn.predicates {
            if let Some(r) = self.readers.get_mut(&p.predicate.table) {
                r.remove(&(ts, id));
            }
        }
    }

    /// T committed: its versions become committed (installed now if it never prepared here),
    /// its predicates stay registered, and a schema change takes effect. `shadowed`: for a
    /// commit the row store refuses as too old (`RowStore::refuses_late_commit`), the
    /// (table, primary key) of T's row writes that a newer committed version of the same key
    /// overtakes here; the rest is installed anyway.
    pub(crate) fn commit(
        &mut self,
        id: TxnId,
        ts: Timestamp,
        txn: &SqlTxn,
        shadowed: Option<&BTreeSet<(String, Vec<u8>)>>,
    ) -> Result<(), String> {
        self.forget_prepared(id, ts, txn);
        if let Some(write) = &txn.catalog_change {
            // MVTSO made the catalog T read the newest below ts, so the change applies to it.
            let (_, base) = self.catalog_below(ts);
            let steps = write.apply_to(&base)?;
            let mut before = &*base;
            for (after, change) in &steps {
                for table in dropped_tables(change) {
                    if let Some(schema) = before.table(table) {
                        self.dropped.insert((ts, schema.storage_name().to_string(), schema.id));
                    }
                }
                self.store.apply_catalog_change(before, after, change);
                before = after;
            }
            let next =
                steps.into_iter().next_back().map(|(after, _)| after).ok_or("a catalog write without changes")?;
            self.catalogs.insert(ts, Arc::new(next));
        }
        if !txn.writes.is_empty() {
            let (writes, catalog) = self.writes_for_store(txn);
            let installed = match shadowed {
                None => self.store.insert(id, ts, &writes, VersionState::Committed, &catalog),
                Some(shadowed) => {
                    let mut newest = WriteSet::default();
                    for (table, rows) in &writes.tables {
                        for (pk, write) in rows {
                            if !shadowed.contains(&(table.clone(), pk.clone())) {
                                newest.put(table, pk.clone(), write.clone());
                            }
                        }
                    }
                    self.store.insert_late_commit(id, ts, &newest, &catalog)
                }
            };
            installed.map_err(|e| e.to_string())?;
        }
        self.register_readers(id, ts, txn);
        Ok(())
    }
}
