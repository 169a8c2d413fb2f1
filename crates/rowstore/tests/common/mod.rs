//! Shared fixtures: a small schema, write-set builders and an SQL driver over a RowStore.
#![allow(dead_code)]

use pistou_core::{ClientId, Timestamp, TxnId};
use pistou_rowstore::{RowStore, StoreLimits, VersionState};
use pistou_sql::keycode::encode_key;
use pistou_sql::EngineRules;
use pistou_sql::{
    Catalog, CatalogChange, Column, Engine, ExecContext, IndexSchema, KeyRange, Output, ReadAt, Row, SqlType, Storage,
    StoredRow, TableSchema, Value, Version, Write, WriteSet,
};

/// `t (id INT PRIMARY KEY, a INT NULL, b TEXT NOT NULL)` with index `t_a` on `a`, and
/// `u (k TEXT PRIMARY KEY, v INT)`.
pub fn schemas() -> Vec<TableSchema> {
    let col = |name: &str, ty, nullable| Column {
        name: name.into(),
        ty,
        limits: Default::default(),
        nullable,
        default: None,
        generated: None,
        volatile_default: None,
    };
    vec![
        TableSchema {
            name: "t".into(),
            id: 0,
            columns: vec![col("id", SqlType::Int, false), col("a", SqlType::Int, true), col("b", SqlType::Text, false)],
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
        },
        TableSchema {
            name: "u".into(),
            id: 0,
            columns: vec![col("k", SqlType::Text, false), col("v", SqlType::Int, true)],
            primary_key: vec![0],
            indexes: vec![],
            constraints: Default::default(),
            stored_as: None,
        },
    ]
}

pub fn setup_with(limits: StoreLimits) -> (Catalog, RowStore) {
    let mut catalog = Catalog::new();
    let mut store = RowStore::new(limits);
    for schema in schemas() {
        let change = CatalogChange::CreateTable(schema);
        let before = catalog.clone();
        catalog.apply(&change, &EngineRules).expect("create table");
        store.apply_catalog_change(&before, &catalog, &change);
    }
    (catalog, store)
}

pub fn setup() -> (Catalog, RowStore) {
    setup_with(StoreLimits::default())
}

pub fn ts(time: u64) -> Timestamp {
    Timestamp::at(time)
}

pub fn txn(n: u64) -> TxnId {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&n.to_be_bytes());
    TxnId(id)
}

pub fn key(id: i64) -> Vec<u8> {
    encode_key([&Value::Int(id)])
}

pub fn row(id: i64, a: Option<i64>) -> Row {
    vec![Value::Int(id), a.map_or(Value::Null, Value::Int), Value::Text(format!("r{id}"))]
}

/// One write to `t`: `Some(a)` upserts `(id, a, "r<id>")`, `None` deletes.
pub fn w(id: i64, a: Option<Option<i64>>) -> (i64, Option<Option<i64>>) {
    (id, a)
}

pub fn writes(rows: &[(i64, Option<Option<i64>>)]) -> WriteSet {
    let mut ws = WriteSet::default();
    for &(id, a) in rows {
        let write = match a {
            Some(a) => Write::Upsert(row(id, a)),
            None => Write::Delete,
        };
        ws.put("t", key(id), write);
    }
    ws
}

pub fn upsert(id: i64, a: i64) -> WriteSet {
    writes(&[(id, Some(Some(a)))])
}

pub fn delete(id: i64) -> WriteSet {
    writes(&[(id, None)])
}

pub fn commit_at(store: &mut RowStore, catalog: &Catalog, writer: u64, time: u64, ws: &WriteSet) {
    store.insert(txn(writer), ts(time), ws, VersionState::Committed, catalog).expect("insert committed");
}

pub fn prepare_at(store: &mut RowStore, catalog: &Catalog, writer: u64, time: u64, ws: &WriteSet) {
    store.insert(txn(writer), ts(time), ws, VersionState::Prepared, catalog).expect("insert prepared");
}

pub fn committed_only(v: &Version) -> bool {
    v.prepared_by.is_none()
}

pub fn table<'c>(catalog: &'c Catalog, name: &str) -> &'c TableSchema {
    catalog.table(name).expect("table")
}

/// (id, a) of every row of `t` visible at `at`.
pub fn scan_t(store: &RowStore, catalog: &Catalog, at: &ReadAt) -> Vec<(i64, Value)> {
    let rows = store.scan(table(catalog, "t"), &KeyRange::all(), at, usize::MAX).expect("scan");
    rows.iter().map(id_a).collect()
}

pub fn id_a(r: &StoredRow) -> (i64, Value) {
    let id = match r.row.first() {
        Some(Value::Int(i)) => *i,
        other => panic!("bad id {other:?}"),
    };
    (id, r.row.get(1).cloned().unwrap_or(Value::Null))
}

pub fn latest(time: u64) -> ReadAt<'static> {
    ReadAt::latest_before(ts(time))
}

/// Runs SQL through the engine over a RowStore, installing each statement's writes as one
/// committed transaction, like `pistou_sql::Database` does over its MemStore.
pub struct SqlOverRowStore {
    pub engine: Engine,
    pub catalog: Catalog,
    pub store: RowStore,
    pub clock: u64,
}

impl SqlOverRowStore {
    pub fn new() -> Self {
        SqlOverRowStore { engine: Engine::default(), catalog: Catalog::new(), store: RowStore::default(), clock: 0 }
    }

    pub fn execute(&mut self, sql: &str) -> Result<Output, String> {
        let empty = WriteSet::default();
        let ctx = ExecContext {
            storage: &self.store,
            at: ReadAt::latest_before(ts(self.clock + 1)),
            pending: &empty,
            sequences: &[],
            random_seed: [0; 32],
            lastval: None,
        };
        let execution = self.engine.run(&self.catalog, sql, &[], &ctx).map_err(|e| e.to_string())?;
        if let Output::Catalog(Some(change)) = &execution.output {
            let before = self.catalog.clone();
            self.catalog.apply(change, &EngineRules).map_err(|e| e.to_string())?;
            self.store.apply_catalog_change(&before, &self.catalog, change);
        }
        if !execution.writes.is_empty() {
            self.clock += 1;
            let writer = txn(self.clock);
            let at = Timestamp { time: self.clock, client: ClientId(1), seq: 0 };
            self.store
                .insert(writer, at, &execution.writes, VersionState::Committed, &self.catalog)
                .map_err(|e| format!("store refused engine writes: {e}"))?;
        }
        Ok(execution.output)
    }
}
