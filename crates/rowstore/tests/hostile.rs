//! Writes from untrusted clients: every malformed write set is refused with a typed error and
//! leaves the store exactly as it was; random garbage never panics.

mod common;

use common::*;
use pistou_rowstore::{RowStore, StoreError, VersionState};
use pistou_sql::keycode::encode_key;
use pistou_sql::types::TypeLimits;
use pistou_sql::EngineRules;
use pistou_sql::{Catalog, CatalogChange, Column, SqlType, TableSchema, Value, Write, WriteSet};
use proptest::prelude::*;

/// `t` and `u` from common, plus `lim (k INT PRIMARY KEY, s VARCHAR(3), n NUMERIC(4,1))`.
fn hostile_setup() -> (Catalog, RowStore) {
    let (mut catalog, mut store) = setup();
    let col = |name: &str, ty, limits| Column {
        name: name.into(),
        ty,
        limits,
        nullable: true,
        default: None,
        generated: None,
        volatile_default: None,
    };
    let lim = TableSchema {
        name: "lim".into(),
        id: 0,
        columns: vec![
            Column { nullable: false, ..col("k", SqlType::Int, TypeLimits::default()) },
            col("s", SqlType::Text, TypeLimits { max_len: Some(3), numeric: None }),
            col("n", SqlType::Numeric, TypeLimits { max_len: None, numeric: Some((4, 1)) }),
        ],
        primary_key: vec![0],
        indexes: vec![],
        constraints: Default::default(),
        stored_as: None,
    };
    let change = CatalogChange::CreateTable(lim);
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("create lim");
    store.apply_catalog_change(&before, &catalog, &change);
    commit_at(&mut store, &catalog, 1, 10, &writes(&[w(1, Some(Some(1))), w(2, Some(None))]));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(3, 3));
    (catalog, store)
}

fn one(table: &str, key: Vec<u8>, write: Write) -> WriteSet {
    let mut ws = WriteSet::default();
    ws.put(table, key, write);
    ws
}

fn numeric(s: &str) -> Value {
    Value::Numeric(s.parse().expect("decimal"))
}

/// Inserts `ws` (prepared and committed), expects `expected`, and checks nothing changed.
fn refused(store: &mut RowStore, catalog: &Catalog, ws: &WriteSet, expected: impl Fn(&StoreError) -> bool) {
    let before = format!("{store:?}");
    for state in [VersionState::Prepared, VersionState::Committed] {
        match store.insert(txn(99), ts(50), ws, state, catalog) {
            Err(e) => {
                assert!(expected(&e), "unexpected error {e}");
                assert!(!e.to_string().is_empty());
            }
            Ok(()) => panic!("accepted {ws:?}"),
        }
        assert_eq!(format!("{store:?}"), before, "a refused write set changed the store");
    }
}

#[test]
fn unknown_tables_are_refused() {
    let (catalog, mut store) = hostile_setup();
    refused(
        &mut store,
        &catalog,
        &one("nope", key(1), Write::Delete),
        |e| matches!(e, StoreError::UnknownTable { table } if table == "nope"),
    );
    // Known to the catalog but not to the store (a catalog change that was never mirrored).
    let mut ahead = catalog.clone();
    let mut extra = schemas().remove(1);
    extra.name = "extra".into();
    ahead.apply(&CatalogChange::CreateTable(extra), &EngineRules).expect("create");
    let ws = one("extra", encode_key([&Value::Text("a".into())]), Write::Delete);
    refused(&mut store, &ahead, &ws, |e| matches!(e, StoreError::UnknownTable { .. }));
}

#[test]
fn a_catalog_out_of_sync_with_the_store_is_refused() {
    let (catalog, mut store) = hostile_setup();
    let mut ahead = catalog.clone();
    let column = Column {
        name: "c".into(),
        ty: SqlType::Int,
        limits: Default::default(),
        nullable: true,
        default: None,
        generated: None,
        volatile_default: None,
    };
    ahead.apply(&CatalogChange::AddColumn { table: "t".into(), column }, &EngineRules).expect("add column");
    let mut full = row(5, Some(5));
    full.push(Value::Int(1));
    refused(&mut store, &ahead, &one("t", key(5), Write::Upsert(full)), |e| {
        matches!(e, StoreError::SchemaMismatch { .. })
    });
}

#[test]
fn wrong_arity_is_refused() {
    let (catalog, mut store) = hostile_setup();
    let short = vec![Value::Int(5), Value::Int(1)];
    refused(&mut store, &catalog, &one("t", key(5), Write::Upsert(short)), |e| {
        matches!(e, StoreError::WrongArity { expected: 3, got: 2, .. })
    });
    let mut long = row(5, Some(1));
    long.push(Value::Null);
    refused(&mut store, &catalog, &one("t", key(5), Write::Upsert(long)), |e| {
        matches!(e, StoreError::WrongArity { got: 4, .. })
    });
    refused(&mut store, &catalog, &one("t", key(5), Write::Upsert(vec![])), |e| {
        matches!(e, StoreError::WrongArity { .. })
    });
}

#[test]
fn wrong_types_are_refused() {
    let (catalog, mut store) = hostile_setup();
    let text_in_int = vec![Value::Int(5), Value::Text("1".into()), Value::Text("x".into())];
    refused(
        &mut store,
        &catalog,
        &one("t", key(5), Write::Upsert(text_in_int)),
        |e| matches!(e, StoreError::WrongType { column, expected: SqlType::Int, .. } if column == "a"),
    );
    // No implicit casts: an INT is not a NUMERIC even if it would convert.
    let int_in_numeric = vec![Value::Int(5), Value::Null, Value::Int(1)];
    refused(&mut store, &catalog, &one("lim", key(5), Write::Upsert(int_in_numeric)), |e| {
        matches!(e, StoreError::WrongType { .. })
    });
    let float_key = vec![Value::Float(5.0), Value::Null, Value::Text("x".into())];
    let ws = one("t", encode_key([&Value::Float(5.0)]), Write::Upsert(float_key));
    refused(&mut store, &catalog, &ws, |e| matches!(e, StoreError::WrongType { column, .. } if column == "id"));
}

#[test]
fn nulls_in_not_null_and_key_columns_are_refused() {
    let (catalog, mut store) = hostile_setup();
    let null_b = vec![Value::Int(5), Value::Int(1), Value::Null];
    refused(
        &mut store,
        &catalog,
        &one("t", key(5), Write::Upsert(null_b)),
        |e| matches!(e, StoreError::NullViolation { column, .. } if column == "b"),
    );
    // The key column of `u` is declared nullable in the fixture; a key is never NULL anyway.
    let null_key = vec![Value::Null, Value::Int(1)];
    let ws = one("u", encode_key([&Value::Null]), Write::Upsert(null_key));
    refused(&mut store, &catalog, &ws, |e| matches!(e, StoreError::NullViolation { column, .. } if column == "k"));
}

#[test]
fn values_beyond_column_limits_are_refused() {
    let (catalog, mut store) = hostile_setup();
    let lim = |s: &str, n: &str| vec![Value::Int(5), Value::Text(s.into()), numeric(n)];
    store
        .insert(
            txn(7),
            ts(30),
            &one("lim", key(5), Write::Upsert(lim("abc", "999.9"))),
            VersionState::Committed,
            &catalog,
        )
        .expect("fits");
    refused(
        &mut store,
        &catalog,
        &one("lim", key(5), Write::Upsert(lim("abcd", "1.0"))),
        |e| matches!(e, StoreError::OutOfLimits { column, .. } if column == "s"),
    );
    refused(
        &mut store,
        &catalog,
        &one("lim", key(5), Write::Upsert(lim("a", "1000.0"))),
        |e| matches!(e, StoreError::OutOfLimits { column, .. } if column == "n"),
    );
    refused(&mut store, &catalog, &one("lim", key(5), Write::Upsert(lim("a", "1.25"))), |e| {
        matches!(e, StoreError::OutOfLimits { .. })
    });
}

#[test]
fn keys_that_do_not_match_the_row_are_refused() {
    let (catalog, mut store) = hostile_setup();
    refused(&mut store, &catalog, &one("t", key(6), Write::Upsert(row(5, Some(1)))), |e| {
        matches!(e, StoreError::KeyMismatch { .. })
    });
    let mut padded = key(5);
    padded.push(0);
    refused(&mut store, &catalog, &one("t", padded, Write::Upsert(row(5, Some(1)))), |e| {
        matches!(e, StoreError::KeyMismatch { .. })
    });
    // Overwriting an existing row under another row's key.
    refused(&mut store, &catalog, &one("t", key(1), Write::Upsert(row(2, Some(1)))), |e| {
        matches!(e, StoreError::KeyMismatch { .. })
    });
}

#[test]
fn deletions_of_malformed_keys_are_refused() {
    let (catalog, mut store) = hostile_setup();
    for bad in [
        vec![],
        vec![0xFF; 40],
        key(1)[..4].to_vec(),
        encode_key([&Value::Text("1".into())]),
        [key(1), key(2)].concat(),
    ] {
        refused(&mut store, &catalog, &one("t", bad, Write::Delete), |e| matches!(e, StoreError::MalformedKey { .. }));
    }
    let err = store
        .insert(txn(9), ts(50), &one("t", vec![7; 100], Write::Delete), VersionState::Committed, &catalog)
        .expect_err("bad");
    assert!(err.to_string().contains("(100 bytes)"), "long keys are shortened in messages: {err}");
}

#[test]
fn one_bad_write_spoils_the_whole_set() {
    let (catalog, mut store) = hostile_setup();
    let mut ws = writes(&[w(7, Some(Some(7))), w(8, None)]);
    ws.put("u", encode_key([&Value::Text("k".into())]), Write::Upsert(vec![Value::Text("k".into()), Value::Int(1)]));
    ws.put("lim", key(1), Write::Upsert(vec![Value::Int(1), Value::Text("toolong".into()), Value::Null]));
    refused(&mut store, &catalog, &ws, |e| matches!(e, StoreError::OutOfLimits { .. }));
}

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::Int),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        "[a-z\\x00]{0,5}".prop_map(Value::Text),
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(Value::Bytes),
        any::<i32>().prop_map(Value::Date),
        (-99_999i64..99_999, 0u32..4).prop_map(|(m, s)| Value::Numeric(
            format!("{}", m as f64 / 10f64.powi(s as i32)).parse().unwrap_or_default()
        )),
    ]
}

fn arb_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (-3i64..3).prop_map(key),
        arb_value().prop_map(|v| encode_key([&v])),
        proptest::collection::vec(any::<u8>(), 0..12),
    ]
}

fn arb_write() -> impl Strategy<Value = (String, Vec<u8>, Write)> {
    let table =
        prop_oneof![Just("t".to_string()), Just("u".to_string()), Just("lim".to_string()), Just("zz".to_string())];
    let write = prop_oneof![
        Just(Write::Delete),
        proptest::collection::vec(arb_value(), 0..5).prop_map(Write::Upsert),
        // Rows shaped like `t` with random values, so some pass and keys sometimes match.
        ((-3i64..3), arb_value(), arb_value()).prop_map(|(id, a, b)| Write::Upsert(vec![Value::Int(id), a, b])),
    ];
    (table, arb_key(), write)
}

proptest! {
    // 256 cases by default; PROPTEST_CASES=n runs more.
    #[test]
    fn garbage_never_panics_and_errors_change_nothing(
        sets in proptest::collection::vec((proptest::collection::vec(arb_write(), 1..4), any::<bool>(), 0u64..60), 1..8),
    ) {
        let (catalog, mut store) = hostile_setup();
        for (i, (writes, committed, time)) in sets.into_iter().enumerate() {
            let mut ws = WriteSet::default();
            for (table, key, write) in writes {
                ws.put(&table, key, write);
            }
            let state = if committed { VersionState::Committed } else { VersionState::Prepared };
            let before = format!("{store:?}");
            match store.insert(txn(1000 + i as u64), ts(time), &ws, state, &catalog) {
                Ok(()) => {}
                Err(_) => prop_assert_eq!(format!("{store:?}"), before),
            }
            store.verify_invariants().map_err(TestCaseError::fail)?;
            if time % 5 == 0 {
                store.gc(ts(time / 2));
            }
        }
    }
}

/// A row an index expression fails for (here `a / b` with b = 0) is one no correct
/// client's statement writes (the statement fails with 22012): replicas refuse it instead of
/// storing it under an entry the expression cannot give.
#[test]
fn a_row_an_index_expression_fails_for_is_refused() {
    let mut sql = SqlOverRowStore::new();
    for statement in ["CREATE TABLE d (id INT PRIMARY KEY, a INT, b INT)", "CREATE INDEX d_div ON d ((a / b))"] {
        sql.execute(statement).expect(statement);
    }
    assert_eq!(
        sql.execute("INSERT INTO d VALUES (1, 1, 0)").expect_err("the client's statement fails"),
        "division by zero (SQLSTATE 22012)"
    );
    let row = vec![Value::Int(1), Value::Int(1), Value::Int(0)];
    let ws = one("d", encode_key([&Value::Int(1)]), Write::Upsert(row));
    refused(
        &mut sql.store,
        &sql.catalog.clone(),
        &ws,
        |e| matches!(e, StoreError::IndexExpression { index, .. } if index == "d_div"),
    );
    let fine = vec![Value::Int(1), Value::Int(4), Value::Int(2)];
    let ws = one("d", encode_key([&Value::Int(1)]), Write::Upsert(fine));
    sql.store.insert(txn(7), ts(70), &ws, VersionState::Committed, &sql.catalog).expect("a computable row");
}
