//! The storage interface the engine reads through, the write set it produces, and an
//! in-memory multi-version store implementing the interface.

use crate::catalog::{Catalog, IndexSchema, TableSchema};
use crate::error::{err, Result, SqlState};
use crate::types::Row;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// Transaction id of a prepared (not yet committed) writer.
pub type TxnId = [u8; 32];

/// Metadata of one row version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version {
    pub ts: u128,
    /// `Some(writer)` while the writing transaction is only prepared.
    pub prepared_by: Option<TxnId>,
}

/// A visible row as returned by storage: encoded primary key, version and column values.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRow {
    pub key: Vec<u8>,
    pub version: Version,
    pub row: Row,
}

/// A range of encoded keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    pub fn all() -> Self {
        KeyRange { start: Bound::Unbounded, end: Bound::Unbounded }
    }

    pub fn point(key: Vec<u8>) -> Self {
        KeyRange { start: Bound::Included(key.clone()), end: Bound::Included(key) }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        let after_start = match &self.start {
            Bound::Included(s) => key >= s.as_slice(),
            Bound::Excluded(s) => key > s.as_slice(),
            Bound::Unbounded => true,
        };
        let before_end = match &self.end {
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
            Bound::Unbounded => true,
        };
        after_start && before_end
    }

    /// True if no key can lie in the range.
    pub fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
            _ => false,
        }
    }
}

/// Which versions a read may see: the newest version with `ts < self.ts` that `visible`
/// accepts (e.g. only committed ones, or only those in a snapshot proposal).
#[derive(Clone, Copy)]
pub struct ReadAt<'a> {
    pub ts: u128,
    pub visible: &'a dyn Fn(&Version) -> bool,
}

fn accept_all(_: &Version) -> bool {
    true
}

impl ReadAt<'static> {
    /// Reads the newest version (committed or prepared) below `ts`.
    pub fn latest_before(ts: u128) -> Self {
        ReadAt { ts, visible: &accept_all }
    }
}

impl ReadAt<'_> {
    /// Picks the version a read at `self` sees among `versions` (sorted by ascending ts).
    pub fn select<'v, T>(&self, versions: &'v [(Version, T)]) -> Option<&'v (Version, T)> {
        versions.iter().rev().find(|(v, _)| v.ts < self.ts && (self.visible)(v))
    }
}

/// What the engine needs from a multi-version store. Implementations return, for every key,
/// only the version selected by `at` (see [`ReadAt`]), and skip keys whose selected version is
/// a deletion.
pub trait Storage {
    /// Visible rows of `table` whose encoded primary key lies in `range`, in key order.
    fn scan(&self, table: &TableSchema, range: &KeyRange, at: &ReadAt) -> Result<Vec<StoredRow>>;

    /// Visible rows of `table` whose encoded index key (see [`TableSchema::index_key`]) lies
    /// in `range`, ordered by (index key, primary key). The index key is that of the visible
    /// version: rows whose older versions matched but whose visible version does not are skipped.
    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
    ) -> Result<Vec<StoredRow>>;

    /// Timestamp of the newest write to `table` visible at `at` (Pesto's "table version").
    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<u128>;
}

/// One buffered write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Write {
    /// Insert or replace the full row.
    Upsert(Row),
    Delete,
}

/// Writes keyed by table name then encoded primary key; ordered, hence canonical.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteSet {
    pub tables: BTreeMap<String, BTreeMap<Vec<u8>, Write>>,
}

impl WriteSet {
    pub fn is_empty(&self) -> bool {
        self.tables.values().all(BTreeMap::is_empty)
    }

    pub fn len(&self) -> usize {
        self.tables.values().map(BTreeMap::len).sum()
    }

    pub fn get(&self, table: &str, key: &[u8]) -> Option<&Write> {
        self.tables.get(table)?.get(key)
    }

    pub fn put(&mut self, table: &str, key: Vec<u8>, write: Write) {
        self.tables.entry(table.to_string()).or_default().insert(key, write);
    }

    /// Layers `newer` on top of `self` (later writes to a key win).
    pub fn merge(&mut self, newer: WriteSet) {
        for (table, writes) in newer.tables {
            self.tables.entry(table).or_default().extend(writes);
        }
    }

    /// Forgets writes to a dropped table.
    pub fn drop_table(&mut self, table: &str) {
        self.tables.remove(table);
    }
}

type Versions = Vec<(Version, Option<Row>)>;

#[derive(Clone, Debug, Default)]
struct MemTable {
    rows: BTreeMap<Vec<u8>, Versions>,
    /// (index key, primary key) for every version ever written; stale entries are filtered
    /// on read by re-checking the visible version.
    indexes: BTreeMap<String, BTreeSet<(Vec<u8>, Vec<u8>)>>,
    /// Timestamps of all writes, for `table_version`.
    write_ts: BTreeSet<u128>,
}

/// An in-memory multi-version store: the test store, the benchmark store and the model
/// database of the simulator's oracle.
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    tables: BTreeMap<String, MemTable>,
}

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Mirrors a catalog change (creates, drops, or backfills an index).
    pub fn apply_catalog_change(&mut self, catalog_after: &Catalog, change: &crate::catalog::CatalogChange) {
        use crate::catalog::CatalogChange::*;
        match change {
            CreateTable(schema) => {
                let mut table = MemTable::default();
                for index in &schema.indexes {
                    table.indexes.insert(index.name.clone(), BTreeSet::new());
                }
                self.tables.insert(schema.name.clone(), table);
            }
            DropTable { table } => {
                self.tables.remove(table);
            }
            CreateIndex { table, index } => {
                let (Some(schema), Some(mem)) = (catalog_after.table(table), self.tables.get_mut(table)) else {
                    return;
                };
                let mut entries = BTreeSet::new();
                for (key, versions) in &mem.rows {
                    for row in versions.iter().filter_map(|(_, r)| r.as_ref()) {
                        entries.insert((schema.index_key(index, row), key.clone()));
                    }
                }
                mem.indexes.insert(index.name.clone(), entries);
            }
            DropIndex { table, index } => {
                if let Some(mem) = self.tables.get_mut(table) {
                    mem.indexes.remove(index);
                }
            }
        }
    }

    /// Installs `writes` as versions with metadata `version`.
    pub fn apply_writes(&mut self, catalog: &Catalog, writes: &WriteSet, version: Version) -> Result<()> {
        for (table_name, table_writes) in &writes.tables {
            let (Some(schema), Some(mem)) = (catalog.table(table_name), self.tables.get_mut(table_name)) else {
                return err(SqlState::UndefinedTable, format!("relation \"{table_name}\" does not exist"));
            };
            mem.write_ts.insert(version.ts);
            for (key, write) in table_writes {
                let row = match write {
                    Write::Upsert(row) => {
                        for index in &schema.indexes {
                            if let Some(entries) = mem.indexes.get_mut(&index.name) {
                                entries.insert((schema.index_key(index, row), key.clone()));
                            }
                        }
                        Some(row.clone())
                    }
                    Write::Delete => None,
                };
                let versions = mem.rows.entry(key.clone()).or_default();
                let at = versions.partition_point(|(v, _)| v.ts <= version.ts);
                versions.insert(at, (version, row));
            }
        }
        Ok(())
    }

    /// Marks every version prepared by `txn` as committed.
    pub fn commit_prepared(&mut self, txn: &TxnId) {
        self.for_each_version(|v| {
            if v.prepared_by.as_ref() == Some(txn) {
                v.prepared_by = None;
            }
        });
    }

    /// Removes every version prepared by `txn` (the writer aborted).
    pub fn abort_prepared(&mut self, txn: &TxnId) {
        for mem in self.tables.values_mut() {
            for versions in mem.rows.values_mut() {
                versions.retain(|(v, _)| v.prepared_by.as_ref() != Some(txn));
            }
        }
    }

    fn for_each_version(&mut self, mut f: impl FnMut(&mut Version)) {
        for mem in self.tables.values_mut() {
            for versions in mem.rows.values_mut() {
                versions.iter_mut().for_each(|(v, _)| f(v));
            }
        }
    }

    fn table(&self, name: &str) -> Result<&MemTable> {
        self.tables
            .get(name)
            .ok_or_else(|| crate::error::SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
    }
}

fn visible_row(key: &[u8], versions: &Versions, at: &ReadAt) -> Option<StoredRow> {
    let (version, row) = at.select(versions)?;
    Some(StoredRow { key: key.to_vec(), version: *version, row: row.clone()? })
}

impl Storage for MemStore {
    fn scan(&self, table: &TableSchema, range: &KeyRange, at: &ReadAt) -> Result<Vec<StoredRow>> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let mem = self.table(&table.name)?;
        Ok(mem
            .rows
            .range::<Vec<u8>, _>((range.start.as_ref(), range.end.as_ref()))
            .filter_map(|(key, versions)| visible_row(key, versions, at))
            .collect())
    }

    fn index_scan(&self, table: &TableSchema, index: &IndexSchema, range: &KeyRange, at: &ReadAt) -> Result<Vec<StoredRow>> {
        let mem = self.table(&table.name)?;
        let Some(entries) = mem.indexes.get(&index.name) else {
            return err(SqlState::UndefinedObject, format!("index \"{}\" does not exist", index.name));
        };
        let start = match &range.start {
            Bound::Included(s) | Bound::Excluded(s) => Bound::Included((s.clone(), Vec::new())),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut out: Vec<StoredRow> = Vec::new();
        let mut seen = BTreeSet::new();
        for (index_key, pk) in entries.range((start, Bound::Unbounded)) {
            let past_end = match &range.end {
                Bound::Included(e) => index_key > e,
                Bound::Excluded(e) => index_key >= e,
                Bound::Unbounded => false,
            };
            if past_end {
                break;
            }
            if !range.contains(index_key) || !seen.insert(pk) {
                continue;
            }
            let Some(versions) = mem.rows.get(pk) else { continue };
            if let Some(row) = visible_row(pk, versions, at) {
                if range.contains(&table.index_key(index, &row.row)) {
                    out.push(row);
                }
            }
        }
        out.sort_by_cached_key(|r| (table.index_key(index, &r.row), r.key.clone()));
        Ok(out)
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<u128> {
        let mem = self.tables.get(&table.name)?;
        mem.write_ts.range(..at.ts).next_back().copied()
    }
}
