//! One test (or more) per public method of RowStore and per Storage method.

mod common;

use common::*;
use pistou_rowstore::{RowStore, StoreError, StoreLimits, VersionState};
use pistou_sql::EngineRules;
use pistou_sql::{
    CatalogChange, Column, IndexSchema, KeyRange, Output, ReadAt, SqlType, Storage, Value, Version, Write, WriteSet,
};
use std::ops::Bound;

#[test]
fn prepared_versions_are_visible_per_policy_until_committed() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 100));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(1, 200));
    let committed = ReadAt { ts: ts(30), visible: &committed_only };
    assert_eq!(scan_t(&store, &catalog, &committed), vec![(1, Value::Int(100))]);
    assert_eq!(scan_t(&store, &catalog, &latest(30)), vec![(1, Value::Int(200))]);
    let rows = store.scan(table(&catalog, "t"), &KeyRange::all(), &latest(30), 10).expect("scan");
    assert_eq!(rows[0].version, Version { ts: ts(20), prepared_by: Some(txn(2)) });
    assert!(store.is_prepared(&txn(2)));
    store.commit(&txn(2));
    assert!(!store.is_prepared(&txn(2)));
    assert_eq!(scan_t(&store, &catalog, &committed), vec![(1, Value::Int(200))]);
    let rows = store.scan(table(&catalog, "t"), &KeyRange::all(), &committed, 10).expect("scan");
    assert_eq!(rows[0].version, Version { ts: ts(20), prepared_by: None });
    store.verify_invariants().expect("invariants");
}

#[test]
fn abort_removes_only_prepared_versions() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &writes(&[w(1, Some(Some(1))), w(2, Some(Some(2)))]));
    prepare_at(&mut store, &catalog, 2, 20, &writes(&[w(1, Some(Some(11))), w(3, Some(Some(3)))]));
    assert_eq!(store.stats().versions, 4);
    store.abort(&txn(2));
    assert_eq!(scan_t(&store, &catalog, &latest(99)), vec![(1, Value::Int(1)), (2, Value::Int(2))]);
    let s = store.stats();
    assert_eq!((s.keys, s.versions, s.prepared_versions, s.prepared_writers, s.log_writes), (2, 2, 0, 0, 2));
    assert_eq!(s.index_entries, 2, "index entries of the aborted versions are gone");
    store.abort(&txn(1));
    store.abort(&txn(77));
    store.commit(&txn(77));
    assert_eq!(store.stats().versions, 2, "abort never removes committed versions; unknown writers are no-ops");
    store.verify_invariants().expect("invariants");
}

#[test]
fn insert_is_idempotent_per_writer_and_timestamp() {
    let (catalog, mut store) = setup();
    let ws = writes(&[w(1, Some(Some(1))), w(2, None)]);
    prepare_at(&mut store, &catalog, 5, 10, &ws);
    let before = format!("{store:?}");
    prepare_at(&mut store, &catalog, 5, 10, &ws);
    assert_eq!(format!("{store:?}"), before, "a repeated prepare changes nothing");
    // Writeback after prepare: committing insert commits the prepared versions.
    commit_at(&mut store, &catalog, 5, 10, &ws);
    assert_eq!(store.stats().versions, 2);
    assert_eq!(store.stats().prepared_versions, 0);
    // A late repeated prepare never turns committed versions back into prepared ones.
    prepare_at(&mut store, &catalog, 5, 10, &ws);
    assert!(store.versions("t", &key(1)).all(|v| v.state == VersionState::Committed));
    assert!(!store.is_prepared(&txn(5)));
    commit_at(&mut store, &catalog, 5, 10, &ws);
    assert_eq!(store.stats().versions, 2);
    store.verify_invariants().expect("invariants");
}

#[test]
fn a_prepared_writer_keeps_its_timestamp() {
    let (catalog, mut store) = setup();
    prepare_at(&mut store, &catalog, 5, 10, &upsert(1, 1));
    let err = store.insert(txn(5), ts(11), &upsert(1, 1), VersionState::Prepared, &catalog);
    assert_eq!(err, Err(StoreError::WriterTimestampMismatch { writer: txn(5), recorded: ts(10), given: ts(11) }));
}

#[test]
fn versions_come_newest_first_and_version_below_filters() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &delete(1));
    prepare_at(&mut store, &catalog, 3, 30, &upsert(1, 3));
    let all: Vec<(u64, VersionState, bool)> =
        store.versions("t", &key(1)).map(|v| (v.ts.time, v.state, v.is_deletion())).collect();
    assert_eq!(
        all,
        vec![
            (30, VersionState::Prepared, false),
            (20, VersionState::Committed, true),
            (10, VersionState::Committed, false)
        ]
    );
    assert_eq!(store.versions("t", &key(9)).count(), 0);
    assert_eq!(store.versions("nope", &key(1)).count(), 0);
    let below = |t, f: &dyn Fn(&pistou_rowstore::VersionRef) -> bool| {
        store.version_below("t", &key(1), ts(t), f).map(|v| v.ts.time)
    };
    assert_eq!(below(31, &|_| true), Some(30));
    assert_eq!(below(30, &|_| true), Some(20), "the bound is exclusive");
    assert_eq!(below(31, &|v| v.state == VersionState::Committed), Some(20));
    assert_eq!(below(31, &|v| !v.is_deletion() && v.state == VersionState::Committed), Some(10));
    assert_eq!(below(10, &|_| true), None);
    let v = store.version_below("t", &key(1), ts(31), |_| true).expect("version");
    assert_eq!(v.version(), Version { ts: ts(30), prepared_by: Some(txn(3)) });
    assert_eq!(v.row, Some(&row(1, Some(3))));
}

#[test]
fn writes_between_is_exclusive_and_ordered_by_ts_writer_key() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 9, 10, &writes(&[w(2, Some(Some(2))), w(1, Some(Some(1)))]));
    prepare_at(&mut store, &catalog, 3, 20, &delete(1));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(5, 5));
    let mut other = WriteSet::default();
    other.put(
        "u",
        pistou_sql::keycode::encode_key([&Value::Text("x".into())]),
        Write::Upsert(vec![Value::Text("x".into()), Value::Int(1)]),
    );
    store.insert(txn(4), ts(15), &other, VersionState::Committed, &catalog).expect("insert u");
    commit_at(&mut store, &catalog, 1, 30, &upsert(1, 7));
    let got: Vec<(u64, pistou_core::TxnId, Vec<u8>, VersionState, bool)> = store
        .writes_between("t", ts(0), ts(30))
        .map(|w| (w.ts.time, w.writer, w.key.to_vec(), w.state, w.row.is_some()))
        .collect();
    assert_eq!(
        got,
        vec![
            (10, txn(9), key(1), VersionState::Committed, true),
            (10, txn(9), key(2), VersionState::Committed, true),
            (20, txn(2), key(5), VersionState::Prepared, true),
            (20, txn(3), key(1), VersionState::Prepared, false),
        ]
    );
    assert_eq!(store.writes_between("t", ts(10), ts(20)).count(), 0, "both bounds exclusive");
    assert_eq!(store.writes_between("t", ts(20), ts(10)).count(), 0, "inverted window");
    assert_eq!(store.writes_between("u", ts(0), ts(99)).map(|w| w.table).collect::<Vec<_>>(), vec!["u"]);
    assert_eq!(store.writes_between("nope", ts(0), ts(99)).count(), 0);
    store.commit(&txn(3));
    assert!(store
        .writes_between("t", ts(19), ts(21))
        .all(|w| w.writer != txn(3) || w.state == VersionState::Committed));
    store.abort(&txn(2));
    assert_eq!(store.writes_between("t", ts(19), ts(21)).count(), 1, "aborted writes leave the log");
    assert_eq!(store.newest_write("t"), Some(ts(30)));
    assert_eq!(store.newest_write("u"), Some(ts(15)));
    assert_eq!(store.newest_write("nope"), None);
}

#[test]
fn scans_follow_key_order_ranges_and_limits() {
    let (catalog, mut store) = setup();
    for id in [5, 1, 3, 2, 4] {
        commit_at(&mut store, &catalog, id as u64, 10 + id as u64, &upsert(id, id * 10));
    }
    commit_at(&mut store, &catalog, 50, 50, &delete(3));
    let t = table(&catalog, "t");
    let ids = |range: KeyRange, limit| -> Vec<i64> {
        store.scan(t, &range, &latest(99), limit).expect("scan").iter().map(|r| id_a(r).0).collect()
    };
    assert_eq!(ids(KeyRange::all(), usize::MAX), vec![1, 2, 4, 5], "deleted keys are skipped");
    assert_eq!(ids(KeyRange::all(), 2), vec![1, 2]);
    assert_eq!(ids(KeyRange::all(), 0), Vec::<i64>::new());
    assert_eq!(ids(KeyRange { start: Bound::Excluded(key(2)), end: Bound::Included(key(5)) }, 9), vec![4, 5]);
    assert_eq!(ids(KeyRange::point(key(4)), 9), vec![4]);
    assert_eq!(ids(KeyRange { start: Bound::Included(key(5)), end: Bound::Included(key(1)) }, 9), Vec::<i64>::new());
    assert_eq!(ids(KeyRange { start: Bound::Excluded(key(2)), end: Bound::Excluded(key(2)) }, 9), Vec::<i64>::new());
    let at_40: Vec<i64> =
        store.scan(t, &KeyRange::all(), &latest(40), 9).expect("scan").iter().map(|r| id_a(r).0).collect();
    assert_eq!(at_40, vec![1, 2, 3, 4, 5], "the deletion is not visible below its timestamp");
    let missing = pistou_sql::TableSchema { name: "missing".into(), ..t.clone() };
    assert!(store.scan(&missing, &KeyRange::all(), &latest(99), 9).is_err());
}

#[test]
fn index_scans_recheck_the_visible_version() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 1, &upsert(1, 10));
    commit_at(&mut store, &catalog, 2, 2, &upsert(2, 20));
    commit_at(&mut store, &catalog, 3, 3, &upsert(1, 30));
    commit_at(&mut store, &catalog, 4, 4, &delete(2));
    commit_at(&mut store, &catalog, 5, 5, &upsert(3, 20));
    let t = table(&catalog, "t");
    let index = &t.indexes[0];
    let eq = |a: i64| KeyRange::point(pistou_sql::keycode::encode_key([&Value::Int(a)]));
    let scan = |range: &KeyRange, time, limit| -> Vec<i64> {
        store.index_scan(t, index, range, &latest(time), limit).expect("index scan").iter().map(|r| id_a(r).0).collect()
    };
    assert_eq!(scan(&eq(10), 9, 9), Vec::<i64>::new(), "key 1 moved away from a=10");
    assert_eq!(scan(&eq(10), 3, 9), vec![1]);
    assert_eq!(scan(&eq(30), 9, 9), vec![1]);
    assert_eq!(scan(&eq(20), 9, 9), vec![3], "key 2 is deleted");
    assert_eq!(scan(&eq(20), 4, 9), vec![2]);
    assert_eq!(scan(&KeyRange::all(), 9, 9), vec![3, 1], "ordered by (a, id): a=20 before a=30");
    assert_eq!(scan(&KeyRange::all(), 9, 1), vec![3]);
    assert_eq!(scan(&KeyRange::all(), 4, 9), vec![2, 1]);
    let inverted = KeyRange { start: Bound::Included(vec![9]), end: Bound::Excluded(vec![1]) };
    assert_eq!(scan(&inverted, 9, 9), Vec::<i64>::new());
    let bogus = IndexSchema {
        name: "bogus".into(),
        columns: vec![1],
        unique: false,
        orders: Vec::new(),
        expressions: Vec::new(),
    };
    assert!(store.index_scan(t, &bogus, &KeyRange::all(), &latest(9), 9).is_err());
}

#[test]
fn table_version_counts_only_visible_writes_and_forgets_aborted_ones() {
    let (catalog, mut store) = setup();
    let t = table(&catalog, "t");
    assert_eq!(store.table_version(t, &latest(99)), None);
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(2, 2));
    let committed = ReadAt { ts: ts(99), visible: &committed_only };
    assert_eq!(
        store.table_version(t, &committed),
        Some(ts(10)),
        "a prepared write the reader cannot see is not read past"
    );
    assert_eq!(store.table_version(t, &latest(99)), Some(ts(20)), "a policy that sees prepared writes counts them");
    assert_eq!(store.table_version(t, &latest(20)), Some(ts(10)), "strictly below the read timestamp");
    assert_eq!(store.table_version(t, &latest(10)), None);
    store.abort(&txn(2));
    assert_eq!(store.table_version(t, &committed), Some(ts(10)));
    assert_eq!(store.table_version(table(&catalog, "u"), &committed), None);
}

/// A client's CREATE TABLE may carry any `stored_as`; the store takes where rows go from the
/// catalog, never from the change, even when the same statement drops the table again (so the
/// catalog after it has no such table): another table's rows stay.
#[test]
fn a_storage_name_claimed_by_a_change_never_drops_another_tables_rows() {
    let (mut catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    let claim =
        pistou_sql::TableSchema { name: "x".into(), stored_as: Some("t".into()), ..table(&catalog, "u").clone() };
    let change =
        CatalogChange::Several(vec![CatalogChange::CreateTable(claim), CatalogChange::DropTable { table: "x".into() }]);
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("create and drop x");
    store.apply_catalog_change(&before, &catalog, &change);
    let t = table(&catalog, "t").clone();
    assert_eq!(store.scan(&t, &KeyRange::all(), &latest(99), 9).expect("scan").len(), 1, "t's row is still there");
    store.verify_invariants().expect("invariants");
}

#[test]
fn catalog_changes_are_mirrored() {
    let (mut catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(2, 2));
    // ADD COLUMN pads stored rows (versions and log) with the default.
    let column = Column {
        name: "c".into(),
        ty: SqlType::Int,
        limits: Default::default(),
        nullable: true,
        default: Some(Value::Int(7)),
        generated: None,
        volatile_default: None,
    };
    let change = CatalogChange::AddColumn { table: "t".into(), column };
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("add column");
    store.apply_catalog_change(&before, &catalog, &change);
    let t = table(&catalog, "t").clone();
    let rows = store.scan(&t, &KeyRange::all(), &latest(99), 9).expect("scan");
    assert!(rows.iter().all(|r| r.row.len() == 4 && r.row[3] == Value::Int(7)));
    assert!(store.writes_between("t", ts(0), ts(99)).all(|w| w.row.is_some_and(|r| r.len() == 4)));
    assert!(store.versions("t", &key(1)).all(|v| v.row.is_some_and(|r| r.len() == 4)));
    // Old-arity rows are now refused; full rows accepted.
    let err = store.insert(txn(3), ts(30), &upsert(3, 3), VersionState::Committed, &catalog);
    assert!(matches!(err, Err(StoreError::WrongArity { expected: 4, got: 3, .. })), "{err:?}");
    let mut ws = WriteSet::default();
    ws.put("t", key(3), Write::Upsert(vec![Value::Int(3), Value::Int(3), Value::Text("x".into()), Value::Int(8)]));
    store.insert(txn(3), ts(30), &ws, VersionState::Committed, &catalog).expect("full row");
    // CREATE INDEX backfills from every version, including older ones.
    let index = IndexSchema {
        name: "t_c".into(),
        columns: vec![3],
        unique: false,
        orders: Vec::new(),
        expressions: Vec::new(),
    };
    let change = CatalogChange::CreateIndex { table: "t".into(), index: index.clone() };
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("create index");
    store.apply_catalog_change(&before, &catalog, &change);
    let t = table(&catalog, "t").clone();
    let seven = KeyRange::point(pistou_sql::keycode::encode_key([&Value::Int(7)]));
    let ids: Vec<i64> =
        store.index_scan(&t, &index, &seven, &latest(99), 9).expect("scan").iter().map(|r| id_a(r).0).collect();
    assert_eq!(ids, vec![1, 2]);
    store.verify_invariants().expect("invariants");
    // DROP INDEX.
    let change = CatalogChange::DropIndex { table: "t".into(), index: "t_c".into() };
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("drop index");
    store.apply_catalog_change(&before, &catalog, &change);
    assert!(store.index_scan(&t, &index, &seven, &latest(99), 9).is_err());
    store.verify_invariants().expect("invariants");
    // DROP TABLE forgets the table, including the prepared writer's keys in it.
    let change = CatalogChange::DropTable { table: "t".into() };
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("drop table");
    store.apply_catalog_change(&before, &catalog, &change);
    assert!(!store.is_prepared(&txn(2)));
    assert_eq!(store.stats().tables, 1);
    assert_eq!(store.stats().versions, 0);
    assert_eq!(
        store.insert(txn(9), ts(40), &upsert(1, 1), VersionState::Committed, &catalog),
        Err(StoreError::UnknownTable { table: "t".into() })
    );
    store.commit(&txn(2));
    store.verify_invariants().expect("invariants");
    // CREATE TABLE again starts empty.
    let change = CatalogChange::CreateTable(schemas().remove(0));
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("create");
    store.apply_catalog_change(&before, &catalog, &change);
    assert_eq!(scan_t(&store, &catalog, &latest(99)), vec![]);
    commit_at(&mut store, &catalog, 10, 50, &upsert(1, 1));
    store.verify_invariants().expect("invariants");
}

#[test]
fn stats_count_every_structure() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &writes(&[w(1, Some(Some(1))), w(2, Some(None))]));
    prepare_at(&mut store, &catalog, 2, 20, &writes(&[w(1, Some(Some(2))), w(3, None)]));
    let s = store.stats();
    assert_eq!(s.tables, 2);
    assert_eq!(s.keys, 3);
    assert_eq!(s.versions, 4);
    assert_eq!(s.prepared_versions, 2);
    assert_eq!(s.index_entries, 3, "a=1, a=NULL, a=2; deletions have none");
    assert_eq!((s.log_entries, s.log_writes), (2, 4));
    assert_eq!(s.prepared_writers, 1);
    assert_eq!(s.gc_queue, 0, "no key has two committed versions yet");
    store.commit(&txn(2));
    assert_eq!(store.stats().gc_queue, 2, "key 1 (two committed versions) and key 3 (lone deletion)");
    assert_eq!(
        RowStore::default().limits(),
        StoreLimits { version_cap: 64, log_keep_us: 0, tombstone_keep_us: pistou_rowstore::DEFAULT_TOMBSTONE_KEEP_US }
    );
}

/// The engine's own writes (numerics with limits, varchar, defaults, updates of the primary
/// key, deletes) are accepted, and queries over the RowStore answer exactly as over MemStore.
#[test]
fn sql_over_rowstore_matches_memstore() {
    let statements = [
        "CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(10) NOT NULL, bal NUMERIC(8,2) DEFAULT 0, seen DATE)",
        "CREATE INDEX acct_owner ON acct (owner)",
        "INSERT INTO acct VALUES (1, 'ann', 10.5, '2024-01-02'), (2, 'bob', 3, NULL), (3, 'ann', -7.25, '2023-12-31')",
        "INSERT INTO acct (id, owner) VALUES (4, 'cy')",
        "UPDATE acct SET bal = bal * 2 WHERE owner = 'ann'",
        "UPDATE acct SET id = 10 WHERE id = 2",
        "DELETE FROM acct WHERE id = 4",
        "ALTER TABLE acct ADD COLUMN note TEXT DEFAULT 'none'",
        "INSERT INTO acct VALUES (5, 'dee', 1.01, NULL, 'hi')",
        "CREATE TABLE pair (a TEXT, b NUMERIC, c FLOAT, PRIMARY KEY (a, b))",
        "INSERT INTO pair VALUES ('x', 1.50, -0.0), ('x', 2, 1e10), ('y\u{0}z', -3.25, 2.5)",
        "CREATE UNIQUE INDEX pair_c ON pair (c)",
        "DELETE FROM pair WHERE b > 1.9",
    ];
    let queries = [
        "SELECT * FROM acct ORDER BY id",
        "SELECT id, bal FROM acct WHERE owner = 'ann' ORDER BY id",
        "SELECT owner, sum(bal) FROM acct GROUP BY owner ORDER BY owner",
        "SELECT note, count(*) FROM acct GROUP BY note ORDER BY note",
        "SELECT * FROM pair ORDER BY a, b",
        "SELECT a FROM pair WHERE c = 0",
    ];
    let mut db = pistou_sql::Database::new();
    let mut ours = SqlOverRowStore::new();
    for sql in statements {
        let expected = db.execute(sql).map_err(|e| e.to_string());
        let got = ours.execute(sql);
        assert_eq!(got, expected, "{sql}");
    }
    for sql in queries {
        let expected = db.execute(sql).map_err(|e| e.to_string());
        assert!(matches!(expected, Ok(Output::Rows { .. })), "{sql}: {expected:?}");
        assert_eq!(ours.execute(sql), expected, "{sql}");
    }
    ours.store.verify_invariants().expect("invariants");
}

/// Expression indexes: the replicas' row store and MemStore hold the same entries (one
/// evaluator computes both), built for existing rows and maintained by writes, and
/// statements over either answer alike, using the indexes.
#[test]
fn expression_index_entries_over_rowstore_match_memstore() {
    let statements = [
        "CREATE TABLE users (id INT PRIMARY KEY, email VARCHAR(40), a INT, b INT, data JSONB)",
        "INSERT INTO users VALUES (1, 'Ann@X.org', 1, 2, '{\"k\": \"one\"}'), (2, 'bob@y.org', 3, 4, '{}')",
        "CREATE UNIQUE INDEX users_lower ON users (lower(email))",
        "CREATE INDEX users_mixed ON users ((a + b), upper(email), (data->>'k'))",
        "INSERT INTO users VALUES (3, 'CY@z.org', 10, -3, '{\"k\": \"three\"}'), (4, NULL, NULL, 1, '{}')",
        "UPDATE users SET email = 'ann@x.ORG', b = 20 WHERE id = 1",
        "INSERT INTO users VALUES (5, 'BOB@Y.ORG', 0, 0, '{}')",
        "DELETE FROM users WHERE id = 2",
        "INSERT INTO users VALUES (5, 'BOB@Y.ORG', 0, 0, '{}')",
    ];
    let mut db = pistou_sql::Database::new();
    let mut ours = SqlOverRowStore::new();
    for sql in statements {
        let expected = db.execute(sql).map_err(|e| e.to_string());
        assert_eq!(ours.execute(sql), expected, "{sql}");
    }
    for sql in [
        "SELECT id FROM users WHERE lower(email) = 'ann@x.org'",
        "SELECT id FROM users WHERE a + b = 7 AND upper(email) = 'CY@Z.ORG'",
        "SELECT id, email FROM users ORDER BY id",
    ] {
        let expected = db.execute(sql).map_err(|e| e.to_string());
        assert!(matches!(expected, Ok(Output::Rows { ref rows, .. }) if !rows.is_empty()), "{sql}: {expected:?}");
        assert_eq!(ours.execute(sql), expected, "{sql}");
    }
    let table = ours.catalog.table("users").expect("users").clone();
    let at = ReadAt::latest_before(pistou_core::Timestamp::at(1000));
    for index in &table.indexes {
        let entries = |storage: &dyn Storage| {
            let mut out = Vec::new();
            storage
                .visit_index_scan(&table, index, &KeyRange::all(), &at, 100, &mut |r| {
                    out.push((table.index_key(index, r.row), r.key.to_vec()));
                    Ok(true)
                })
                .expect("index scan");
            out
        };
        let (theirs, mine) = (entries(db.store()), entries(&ours.store));
        assert_eq!(mine.len(), 4, "{}", index.name);
        assert_eq!(mine, theirs, "{}", index.name);
        assert!(mine.windows(2).all(|w| w[0] <= w[1]), "entries in key order");
    }
    ours.store.verify_invariants().expect("invariants");
}

/// A change of one relation can change another table's schema: renaming a table changes the
/// foreign keys of tables that reference it. The store must follow, or it would refuse
/// every later write to the referencing table as written against a stale schema.
#[test]
fn tables_whose_schema_another_change_touched_still_take_writes() {
    let (mut catalog, mut store) = setup();
    let engine = pistou_sql::Engine::new(pistou_sql::Limits::default());
    for sql in ["ALTER TABLE t ADD CONSTRAINT t_u FOREIGN KEY (b) REFERENCES u (k)", "ALTER TABLE u RENAME TO u2"] {
        let prepared = engine.prepare(&catalog, sql).expect("prepare");
        let pistou_sql::StatementKind::Ddl(Some(change)) = prepared.kind() else { panic!("{sql} is DDL") };
        let before = catalog.clone();
        catalog.apply(&change, &EngineRules).expect(sql);
        store.apply_catalog_change(&before, &catalog, &change);
    }
    assert_eq!(table(&catalog, "t").constraints.foreign_keys[0].parent, "u2");
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    store.verify_invariants().expect("invariants");
}
