//! The storage interface the engine reads through, the write set it produces, and an
//! in-memory multi-version store implementing the interface.

use crate::catalog::{Catalog, IndexSchema, TableSchema};
use crate::error::{err, Result, SqlState};
use crate::short_key::ShortKey;
use crate::types::Row;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Bound;

pub use pistou_core::{Timestamp, TxnId};

/// Metadata of one row version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version {
    pub ts: Timestamp,
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

/// A visible row lent to a scan visitor: encoded primary key, version and column values.
#[derive(Clone, Copy, Debug)]
pub struct RowRef<'a> {
    pub key: &'a [u8],
    pub version: Version,
    pub row: &'a [crate::types::Value],
}

/// Called on each row of a visiting scan; `Ok(false)` stops the scan.
pub type Visitor<'v> = dyn FnMut(RowRef<'_>) -> Result<bool> + 'v;

/// A range of encoded keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

    /// The one key this range holds, if both bounds include the same key.
    pub fn single_key(&self) -> Option<&[u8]> {
        match (&self.start, &self.end) {
            (Bound::Included(s), Bound::Included(e)) if s == e => Some(s),
            _ => None,
        }
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
    pub ts: Timestamp,
    pub visible: &'a dyn Fn(&Version) -> bool,
}

fn accept_all(_: &Version) -> bool {
    true
}

impl ReadAt<'static> {
    /// Reads the newest version (committed or prepared) below `ts`.
    pub fn latest_before(ts: Timestamp) -> Self {
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
/// a deletion. Rows have one value per column of the current schema (after
/// `CatalogChange::AddColumn`, older versions read with the new column's default).
pub trait Storage {
    /// Visible rows of `table` whose encoded primary key lies in `range`, in key order; at
    /// most `limit` rows (the engine fails a statement that reaches its row limit, so stopping
    /// early bounds memory). `range` may be empty or inverted.
    fn scan(&self, table: &TableSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Result<Vec<StoredRow>>;

    /// Visible rows of `table` whose encoded index key (see [`TableSchema::index_key`]) lies
    /// in `range`, ordered by (index key, primary key); at most `limit` rows. The index key is
    /// that of the visible version: rows whose older versions matched but whose visible version
    /// does not are skipped.
    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> Result<Vec<StoredRow>>;

    /// Timestamp of the newest write to `table` with a timestamp below `at.ts` (Pesto's
    /// "table version", §6.1.3).
    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp>;

    /// The rows [`Storage::scan`] returns, lent one by one to `visit` in the same order
    /// instead of copied (the engine's read path). The default copies through `scan`.
    fn visit_scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        for r in self.scan(table, range, at, limit)? {
            if !visit(RowRef { key: &r.key, version: r.version, row: &r.row })? {
                break;
            }
        }
        Ok(())
    }

    /// The rows [`Storage::index_scan`] returns, lent to `visit` as in [`Storage::visit_scan`].
    fn visit_index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        for r in self.index_scan(table, index, range, at, limit)? {
            if !visit(RowRef { key: &r.key, version: r.version, row: &r.row })? {
                break;
            }
        }
        Ok(())
    }
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
        match self.tables.get_mut(table) {
            Some(writes) => {
                writes.insert(key, write);
            }
            None => {
                self.tables.insert(table.to_string(), BTreeMap::from([(key, write)]));
            }
        }
    }

    /// Layers `newer` on top of `self` (later writes to a key win).
    pub fn merge(&mut self, newer: WriteSet) {
        for (table, writes) in newer.tables {
            self.tables.entry(table).or_default().extend(writes);
        }
    }
}

type VersionedRow = (Version, Option<Row>);

/// One key's versions, ascending by ts (`None` rows are deletions). A lone version is kept
/// inline, so a scan reaches the row without first loading a separate version list.
#[derive(Clone, Debug)]
enum Versions {
    One(VersionedRow),
    Many(Vec<VersionedRow>),
}

impl Default for Versions {
    fn default() -> Self {
        Versions::Many(Vec::new())
    }
}

impl Versions {
    fn as_slice(&self) -> &[VersionedRow] {
        match self {
            Versions::One(v) => std::slice::from_ref(v),
            Versions::Many(vs) => vs,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [VersionedRow] {
        match self {
            Versions::One(v) => std::slice::from_mut(v),
            Versions::Many(vs) => vs,
        }
    }

    fn insert(&mut self, version: VersionedRow) {
        let at = match self.as_slice().last() {
            // The usual case, a version newer than all others: no search through older ones.
            Some((last, _)) if last.ts <= version.0.ts => self.as_slice().len(),
            _ => self.as_slice().partition_point(|(v, _)| v.ts <= version.0.ts),
        };
        match std::mem::take(self) {
            Versions::Many(vs) if vs.is_empty() => *self = Versions::One(version),
            Versions::One(only) => {
                *self = Versions::Many(if at == 0 { vec![version, only] } else { vec![only, version] })
            }
            Versions::Many(mut vs) => {
                vs.insert(at, version);
                *self = Versions::Many(vs);
            }
        }
    }

    /// Adds `version`; a committed version newer than all others, all committed, replaces them.
    fn supersede(&mut self, version: VersionedRow) {
        let committed = |v: &Version| v.prepared_by.is_none();
        if committed(&version.0) && self.as_slice().iter().all(|(v, _)| committed(v) && v.ts <= version.0.ts) {
            *self = Versions::One(version);
        } else {
            self.insert(version);
        }
    }

    fn retain(&mut self, keep: impl Fn(&VersionedRow) -> bool) {
        match self {
            Versions::One(v) if !keep(v) => *self = Versions::default(),
            Versions::One(_) => {}
            Versions::Many(vs) => vs.retain(keep),
        }
    }
}
/// (index key, primary key) pairs of one index.
/// (index key, primary key) pairs of one index, each with the primary key's slot.
type IndexEntries = BTreeMap<(ShortKey, ShortKey), usize>;

#[derive(Clone, Debug, Default)]
struct MemTable {
    /// Primary key → its slot in `slots`.
    rows: BTreeMap<ShortKey, usize>,
    /// Each key's versions, in the order keys were first written (a slot lives as long as its
    /// table), so an index entry reaches the row without a primary-key search.
    slots: Vec<Versions>,
    /// (index key, primary key) for every version ever written; stale entries are filtered
    /// on read by re-checking the visible version.
    indexes: BTreeMap<String, IndexEntries>,
    /// Every write's timestamp and, while prepared, its writer; for `table_version`.
    write_ts: BTreeMap<Timestamp, Option<TxnId>>,
}

impl MemTable {
    /// The slot of `key`, allocated on the key's first write.
    fn slot(&mut self, key: &[u8]) -> usize {
        let next = self.slots.len();
        let slot = *self.rows.entry(ShortKey::from(key)).or_insert(next);
        if slot == next {
            self.slots.push(Versions::default());
        }
        slot
    }
}

/// An in-memory multi-version store: the test store, the benchmark store and the model
/// database of the simulator's oracle.
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    tables: BTreeMap<String, MemTable>,
    /// See [`MemStore::newest_only`].
    newest_only: bool,
}

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store keeping only each key's newest committed version (and any prepared ones): a
    /// committed write newer than all of a key's versions, all committed, replaces them. For an
    /// owner that commits in timestamp order and only reads its newest state (as
    /// [`Database`](crate::Database) does): the versions dropped are ones no such read selects.
    pub fn newest_only() -> Self {
        MemStore { newest_only: true, ..Self::default() }
    }

    /// Mirrors a catalog change (creates, drops, or backfills an index); `before` and `after`
    /// are the catalogs around it. Tables are kept under their storage names.
    pub fn apply_catalog_change(&mut self, before: &Catalog, after: &Catalog, change: &crate::catalog::CatalogChange) {
        use crate::catalog::CatalogChange::*;
        let stored = |table: &str| after.table(table).map(|t| t.storage_name().to_string());
        match change {
            // Applied in order, each against the final catalog: a statement's changes
            // (sequences, then their table) do not undo one another.
            Several(changes) => {
                for c in changes {
                    self.apply_catalog_change(before, after, c);
                }
            }
            // Views and sequences hold no rows here.
            CreateSequence(_)
            | DropSequence { .. }
            | CreateView(_)
            | DropView { .. }
            | RenameView { .. }
            | RenameSequence { .. }
            | MarkUnvalidated { .. }
            | Validated { .. } => {}
            CreateTable(schema) => {
                // Stored where the catalog put it; absent, a later change of the statement
                // dropped it again (and its name may be another table's storage name).
                let Some(storage) = stored(&schema.name) else { return };
                let mut table = MemTable::default();
                for index in &schema.indexes {
                    table.indexes.insert(index.name.clone(), BTreeMap::new());
                }
                self.tables.insert(storage, table);
            }
            DropTable { table } => {
                let storage = before.table(table).map_or(table.as_str(), |t| t.storage_name());
                self.tables.remove(storage);
            }
            RenameTable { to, .. } | RenameIndex { to, .. } => {
                // Rows stay under the storage name; only the renamed index (or the one named
                // after the renamed table) moves.
                let schema = match change {
                    RenameTable { .. } => after.table(to),
                    _ => after.table_of_index(to),
                };
                let Some(schema) = schema else { return };
                let Some(mem) = self.tables.get_mut(schema.storage_name()) else { return };
                let gone: Vec<String> = mem.indexes.keys().filter(|n| schema.index(n).is_none()).cloned().collect();
                let new: Vec<&IndexSchema> =
                    schema.indexes.iter().filter(|i| !mem.indexes.contains_key(&i.name)).collect();
                if let ([old], [new]) = (gone.as_slice(), new.as_slice()) {
                    if let Some(entries) = mem.indexes.remove(old) {
                        mem.indexes.insert(new.name.clone(), entries);
                    }
                }
            }
            CreateIndex { table, index } | AddPrimaryKey { table, index } => {
                let Some(schema) = after.table(table) else { return };
                let Some(mem) = self.tables.get_mut(schema.storage_name()) else { return };
                let mut entries = BTreeMap::new();
                for (key, &slot) in &mem.rows {
                    for row in
                        mem.slots.get(slot).into_iter().flat_map(Versions::as_slice).filter_map(|(_, r)| r.as_ref())
                    {
                        entries.insert((ShortKey::from(schema.index_key(index, row).as_slice()), key.clone()), slot);
                    }
                }
                mem.indexes.insert(index.name.clone(), entries);
            }
            DropIndex { table, index } => {
                if let Some(mem) = stored(table).and_then(|s| self.tables.get_mut(&s)) {
                    mem.indexes.remove(index);
                }
            }
            AlterTable { table, .. } => {
                // Indexes the actions added (UNIQUE constraints) are built; dropped ones go.
                let Some(schema) = after.table(table) else { return };
                let Some(mem) = self.tables.get_mut(schema.storage_name()) else { return };
                mem.indexes.retain(|name, _| schema.index(name).is_some());
                for index in &schema.indexes {
                    if mem.indexes.contains_key(&index.name) {
                        continue;
                    }
                    let mut entries = BTreeMap::new();
                    for (key, &slot) in &mem.rows {
                        for row in
                            mem.slots.get(slot).into_iter().flat_map(Versions::as_slice).filter_map(|(_, r)| r.as_ref())
                        {
                            entries
                                .insert((ShortKey::from(schema.index_key(index, row).as_slice()), key.clone()), slot);
                        }
                    }
                    mem.indexes.insert(index.name.clone(), entries);
                }
            }
            AddColumn { table, column } => {
                if let Some(mem) = stored(table).and_then(|s| self.tables.get_mut(&s)) {
                    let default = column.default.clone().unwrap_or(crate::types::Value::Null);
                    for versions in &mut mem.slots {
                        for row in versions.as_mut_slice().iter_mut().filter_map(|(_, r)| r.as_mut()) {
                            row.push(default.clone());
                        }
                    }
                }
            }
        }
    }

    /// Installs `writes` as versions with metadata `version`.
    pub fn apply_writes(&mut self, catalog: &Catalog, writes: &WriteSet, version: Version) -> Result<()> {
        let newest_only = self.newest_only;
        for (table_name, table_writes) in &writes.tables {
            let (Some(schema), Some(mem)) = (catalog.stored(table_name), self.tables.get_mut(table_name)) else {
                return err(SqlState::UndefinedTable, format!("relation \"{table_name}\" does not exist"));
            };
            mem.write_ts.insert(version.ts, version.prepared_by);
            let (mut index_key, mut old_key) = (Vec::new(), Vec::new());
            for (key, write) in table_writes {
                let slot = mem.slot(key);
                let row = match write {
                    Write::Upsert(row) => {
                        // A version of the key with the same index key already has the entry.
                        let newest =
                            mem.slots.get(slot).and_then(|vs| vs.as_slice().last()).and_then(|(_, r)| r.as_ref());
                        for index in &schema.indexes {
                            index_key.clear();
                            schema.write_index_key(index, row, &mut index_key);
                            if let Some(old) = newest {
                                old_key.clear();
                                schema.write_index_key(index, old, &mut old_key);
                                if old_key == index_key {
                                    continue;
                                }
                            }
                            if let Some(entries) = mem.indexes.get_mut(&index.name) {
                                entries.insert(
                                    (ShortKey::from(index_key.as_slice()), ShortKey::from(key.as_slice())),
                                    slot,
                                );
                            }
                        }
                        Some(row.clone())
                    }
                    Write::Delete => None,
                };
                match mem.slots.get_mut(slot) {
                    Some(versions) if newest_only => versions.supersede((version, row)),
                    Some(versions) => versions.insert((version, row)),
                    None => {}
                }
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
        for mem in self.tables.values_mut() {
            mem.write_ts.values_mut().filter(|w| w.as_ref() == Some(txn)).for_each(|w| *w = None);
        }
    }

    /// Removes every version prepared by `txn` (the writer aborted).
    pub fn abort_prepared(&mut self, txn: &TxnId) {
        for mem in self.tables.values_mut() {
            for versions in &mut mem.slots {
                versions.retain(|(v, _)| v.prepared_by.as_ref() != Some(txn));
            }
            mem.write_ts.retain(|_, w| w.as_ref() != Some(txn));
        }
    }

    fn for_each_version(&mut self, mut f: impl FnMut(&mut Version)) {
        for mem in self.tables.values_mut() {
            for versions in &mut mem.slots {
                versions.as_mut_slice().iter_mut().for_each(|(v, _)| f(v));
            }
        }
    }

    fn table(&self, name: &str) -> Result<&MemTable> {
        self.tables.get(name).ok_or_else(|| {
            crate::error::SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist"))
        })
    }
}

/// Collects a visiting scan's rows (the copying interface).
fn collect_rows(scan: impl FnOnce(&mut Visitor<'_>) -> Result<()>) -> Result<Vec<StoredRow>> {
    let mut out = Vec::new();
    scan(&mut |r: RowRef<'_>| {
        out.push(StoredRow { key: r.key.to_vec(), version: r.version, row: r.row.to_vec() });
        Ok(true)
    })?;
    Ok(out)
}

impl Storage for MemStore {
    fn scan(&self, table: &TableSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Result<Vec<StoredRow>> {
        collect_rows(|visit| self.visit_scan(table, range, at, limit, visit))
    }

    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> Result<Vec<StoredRow>> {
        collect_rows(|visit| self.visit_index_scan(table, index, range, at, limit, visit))
    }

    fn visit_scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let mem = self.table(table.storage_name())?;
        let key = |k: &Vec<u8>| ShortKey::from(k.as_slice());
        // A point range takes one search; a range search looks up both of its ends.
        let (point, rows) = match (&range.start, &range.end) {
            (Bound::Included(s), Bound::Included(e)) if s == e => (mem.rows.get_key_value(&key(s)), None),
            (start, end) => (None, Some(mem.rows.range((start.as_ref().map(key), end.as_ref().map(key))))),
        };
        let mut left = limit;
        for (key, &slot) in point.into_iter().chain(rows.into_iter().flatten()) {
            if left == 0 {
                break;
            }
            let Some(versions) = mem.slots.get(slot) else { continue };
            if let Some((version, Some(row))) = at.select(versions.as_slice()) {
                left -= 1;
                if !visit(RowRef { key: key.as_slice(), version: *version, row })? {
                    break;
                }
            }
        }
        Ok(())
    }

    fn visit_index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        let mem = self.table(table.storage_name())?;
        let Some(entries) = mem.indexes.get(&index.name) else {
            return err(SqlState::UndefinedObject, format!("index \"{}\" does not exist", index.name));
        };
        let start = match &range.start {
            Bound::Included(s) | Bound::Excluded(s) => {
                Bound::Included((ShortKey::from(s.as_slice()), ShortKey::from(&[][..])))
            }
            Bound::Unbounded => Bound::Unbounded,
        };
        // Each key's visible version is reported at the one index entry matching it, so the
        // output is already in (index key, primary key) order.
        let mut left = limit;
        let mut visible_key = Vec::new();
        for ((index_key, pk), &slot) in entries.range((start, Bound::Unbounded)) {
            let index_key = index_key.as_slice();
            let past_end = match &range.end {
                Bound::Included(e) => index_key > e.as_slice(),
                Bound::Excluded(e) => index_key >= e.as_slice(),
                Bound::Unbounded => false,
            };
            if past_end || left == 0 {
                break;
            }
            if !range.contains(index_key) {
                continue;
            }
            let Some(versions) = mem.slots.get(slot) else { continue };
            if let Some((version, Some(row))) = at.select(versions.as_slice()) {
                visible_key.clear();
                table.write_index_key(index, row, &mut visible_key);
                if visible_key == index_key {
                    left -= 1;
                    if !visit(RowRef { key: pk.as_slice(), version: *version, row })? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp> {
        let mem = self.tables.get(table.storage_name())?;
        // Only writes the reader may see: a version it cannot see is not one it has read past.
        mem.write_ts
            .range(..at.ts)
            .rev()
            .find(|&(&ts, &prepared_by)| (at.visible)(&Version { ts, prepared_by }))
            .map(|(&ts, _)| ts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{CatalogChange, Column};
    use crate::keycode::encode_key;
    use crate::types::{SqlType, Value};

    fn setup() -> (Catalog, MemStore, TableSchema) {
        let col = |name: &str| Column {
            name: name.into(),
            ty: SqlType::Int,
            limits: Default::default(),
            nullable: true,
            default: None,
            generated: None,
            volatile_default: None,
        };
        let schema = TableSchema {
            name: "t".into(),
            id: 0,
            columns: vec![col("id"), col("a")],
            primary_key: vec![0],
            indexes: vec![IndexSchema {
                name: "t_a".into(),
                columns: vec![1],
                unique: false,
                orders: Vec::new(),
                expressions: Vec::new(),
            }],
            constraints: Default::default(),
            stored_as: None,
        };
        let mut catalog = Catalog::new();
        let change = CatalogChange::CreateTable(schema.clone());
        catalog.apply(&change, &crate::catalog::no_constraints::NoConstraints).expect("create");
        let mut store = MemStore::new();
        store.apply_catalog_change(&Catalog::new(), &catalog, &change);
        (catalog, store, schema)
    }

    fn write(catalog: &Catalog, store: &mut MemStore, id: i64, a: Option<i64>, ts: u64) {
        let key = encode_key([&Value::Int(id)]);
        let w = match a {
            Some(a) => Write::Upsert(vec![Value::Int(id), Value::Int(a)]),
            None => Write::Delete,
        };
        let mut ws = WriteSet::default();
        ws.put("t", key, w);
        store.apply_writes(catalog, &ws, Version { ts: Timestamp::at(ts), prepared_by: None }).expect("write");
    }

    fn ids(rows: Vec<StoredRow>) -> Vec<Value> {
        rows.into_iter().filter_map(|r| r.row.first().cloned()).collect()
    }

    #[test]
    fn index_scans_see_only_the_visible_version() {
        let (catalog, mut store, schema) = setup();
        write(&catalog, &mut store, 1, Some(10), 1);
        write(&catalog, &mut store, 2, Some(20), 2);
        write(&catalog, &mut store, 1, Some(30), 3);
        write(&catalog, &mut store, 2, None, 4);
        let index = &schema.indexes[0];
        let eq = |a: i64| KeyRange::point(encode_key([&Value::Int(a)]));
        let at = |ts| ReadAt::latest_before(Timestamp::at(ts));
        let scan =
            |range: &KeyRange, ts| ids(store.index_scan(&schema, index, range, &at(ts), usize::MAX).expect("scan"));
        assert_eq!(scan(&eq(10), 10), Vec::<Value>::new());
        assert_eq!(scan(&eq(30), 10), vec![Value::Int(1)]);
        assert_eq!(scan(&eq(10), 3), vec![Value::Int(1)]);
        assert_eq!(scan(&KeyRange::all(), 4), vec![Value::Int(2), Value::Int(1)], "index order: a=20 before a=30");
        assert_eq!(scan(&KeyRange::all(), 5), vec![Value::Int(1)]);
        assert_eq!(store.table_version(&schema, &at(4)), Some(Timestamp::at(3)));
        assert_eq!(
            ids(store.scan(&schema, &KeyRange::all(), &at(3), usize::MAX).expect("scan")),
            vec![Value::Int(1), Value::Int(2)]
        );
    }

    #[test]
    fn prepared_versions_commit_or_vanish() {
        let (catalog, mut store, schema) = setup();
        write(&catalog, &mut store, 1, Some(10), 1);
        let txn = TxnId([1u8; 32]);
        let mut ws = WriteSet::default();
        ws.put("t", encode_key([&Value::Int(1)]), Write::Upsert(vec![Value::Int(1), Value::Int(11)]));
        store.apply_writes(&catalog, &ws, Version { ts: Timestamp::at(5), prepared_by: Some(txn) }).expect("prepare");
        let committed_only = |v: &Version| v.prepared_by.is_none();
        let at = ReadAt { ts: Timestamp::at(9), visible: &committed_only };
        let value = |store: &MemStore, at: &ReadAt| {
            store.scan(&schema, &KeyRange::all(), at, usize::MAX).expect("scan")[0].row[1].clone()
        };
        assert_eq!(value(&store, &at), Value::Int(10));
        assert_eq!(value(&store, &ReadAt::latest_before(Timestamp::at(9))), Value::Int(11));
        let mut aborted = store.clone();
        aborted.abort_prepared(&txn);
        assert_eq!(value(&aborted, &ReadAt::latest_before(Timestamp::at(9))), Value::Int(10));
        store.commit_prepared(&txn);
        assert_eq!(value(&store, &at), Value::Int(11));
    }

    #[test]
    fn point_lookups_and_out_of_order_versions_match_the_general_range_path() {
        let (catalog, mut store, schema) = setup();
        for (id, a, ts) in
            [(1, Some(10), 1), (2, Some(20), 5), (2, Some(21), 3), (1, Some(30), 4), (3, Some(30), 4), (2, None, 6)]
        {
            write(&catalog, &mut store, id, a, ts);
        }
        let index = &schema.indexes[0];
        for ts in 1..=7 {
            let at = ReadAt::latest_before(Timestamp::at(ts));
            for id in 0..=4 {
                let key = encode_key([&Value::Int(id)]);
                let end = crate::keycode::prefix_successor(&key).map_or(Bound::Unbounded, Bound::Excluded);
                let general = KeyRange { start: Bound::Included(key.clone()), end };
                let point = store.scan(&schema, &KeyRange::point(key), &at, usize::MAX).expect("scan");
                assert_eq!(point, store.scan(&schema, &general, &at, usize::MAX).expect("scan"), "id {id} at {ts}");
            }
            let by_index = store.index_scan(&schema, index, &KeyRange::all(), &at, usize::MAX).expect("scan");
            let mut by_key = store.scan(&schema, &KeyRange::all(), &at, usize::MAX).expect("scan");
            by_key.sort_by_key(|r| (encode_key([&r.row[1]]), r.key.clone()));
            assert_eq!(by_index, by_key, "at {ts}");
        }
        let value = |ts| {
            ids(store
                .index_scan(
                    &schema,
                    index,
                    &KeyRange::point(encode_key([&Value::Int(21)])),
                    &ReadAt::latest_before(Timestamp::at(ts)),
                    usize::MAX,
                )
                .expect("scan"))
        };
        assert_eq!(
            (value(4), value(5), value(6)),
            (vec![Value::Int(2)], vec![Value::Int(2)], vec![]),
            "ts 3 sorts before ts 5"
        );
    }

    #[test]
    fn a_newest_only_store_reads_at_the_newest_state_like_a_full_one() {
        let (catalog, mut full, schema) = setup();
        let mut newest = MemStore::newest_only();
        newest.apply_catalog_change(&Catalog::new(), &catalog, &CatalogChange::CreateTable(schema.clone()));
        let index = &schema.indexes[0];
        let latest = ReadAt::latest_before(Timestamp::at(100));
        let txn = TxnId([2u8; 32]);
        let prepared = |store: &mut MemStore, id: i64, ts: u64| {
            let mut ws = WriteSet::default();
            ws.put("t", encode_key([&Value::Int(id)]), Write::Upsert(vec![Value::Int(id), Value::Int(77)]));
            store
                .apply_writes(&catalog, &ws, Version { ts: Timestamp::at(ts), prepared_by: Some(txn) })
                .expect("prepare");
        };
        prepared(&mut full, 3, 2);
        prepared(&mut newest, 3, 2);
        for (ts, (id, a)) in
            [(1, Some(10)), (2, Some(20)), (1, Some(30)), (3, Some(30)), (2, None), (1, Some(10)), (2, Some(40))]
                .into_iter()
                .enumerate()
        {
            for store in [&mut full, &mut newest] {
                write(&catalog, store, id, a, ts as u64 + 1);
            }
            for range in [KeyRange::all(), KeyRange::point(encode_key([&Value::Int(1)]))] {
                assert_eq!(
                    newest.scan(&schema, &range, &latest, usize::MAX).expect("scan"),
                    full.scan(&schema, &range, &latest, usize::MAX).expect("scan")
                );
            }
            for range in [KeyRange::all(), KeyRange::point(encode_key([&Value::Int(30)]))] {
                let ours = newest.index_scan(&schema, index, &range, &latest, usize::MAX).expect("scan");
                assert_eq!(ours, full.index_scan(&schema, index, &range, &latest, usize::MAX).expect("scan"));
            }
            assert_eq!(newest.table_version(&schema, &latest), full.table_version(&schema, &latest));
        }
        let old = ReadAt::latest_before(Timestamp::at(2));
        assert_eq!(ids(full.scan(&schema, &KeyRange::all(), &old, usize::MAX).expect("scan")), vec![Value::Int(1)]);
        assert!(
            newest.scan(&schema, &KeyRange::all(), &old, usize::MAX).expect("scan").is_empty(),
            "older committed versions are gone"
        );
        for store in [&mut full, &mut newest] {
            store.abort_prepared(&txn);
        }
        let key3 = KeyRange::point(encode_key([&Value::Int(3)]));
        let at3 = ReadAt::latest_before(Timestamp::at(5));
        assert_eq!(
            newest.scan(&schema, &key3, &at3, usize::MAX).expect("scan"),
            full.scan(&schema, &key3, &at3, usize::MAX).expect("scan"),
            "a key with a prepared version keeps its history"
        );
    }

    #[test]
    fn empty_and_inverted_ranges_are_safe() {
        let (_, store, schema) = setup();
        let r = KeyRange { start: Bound::Excluded(vec![5]), end: Bound::Excluded(vec![5]) };
        assert!(store
            .scan(&schema, &r, &ReadAt::latest_before(Timestamp::at(9)), usize::MAX)
            .expect("scan")
            .is_empty());
        let r = KeyRange { start: Bound::Included(vec![9]), end: Bound::Included(vec![1]) };
        assert!(store
            .scan(&schema, &r, &ReadAt::latest_before(Timestamp::at(9)), usize::MAX)
            .expect("scan")
            .is_empty());
    }
}
