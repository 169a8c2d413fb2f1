//! The read/predicate report the protocol's concurrency control relies on: every write that
//! could change a statement's result satisfies one of its reported predicates, and writes
//! that cannot, don't.

use pistou_sql::*;

fn setup() -> Database {
    let mut db = Database::new();
    for sql in [
        "CREATE TABLE people (id INT PRIMARY KEY, name TEXT, last TEXT, age INT)",
        "CREATE INDEX people_name ON people (name)",
        "CREATE TABLE accounts (id INT PRIMARY KEY, owner INT, balance INT)",
        "CREATE INDEX accounts_owner ON accounts (owner)",
        "INSERT INTO people VALUES (1, 'Peter', 'Parker', 20), (2, 'Alice', 'Allen', 30), (3, 'Bob', 'Brown', 40)",
        "INSERT INTO accounts VALUES (10, 1, 100), (11, 1, 5), (12, 2, 7)",
    ] {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    db
}

fn run(db: &Database, sql: &str, params: &[Value], pending: &WriteSet) -> Execution {
    let ctx = ExecContext {
        storage: db.store(),
        at: ReadAt::latest_before(Timestamp::MAX),
        pending,
        sequences: &[],
        random_seed: [0; 32],
        lastval: None,
    };
    db.engine().run(db.catalog(), sql, params, &ctx).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn rows(e: &Execution) -> Vec<Row> {
    match &e.output {
        Output::Rows { rows, .. } => rows.clone(),
        other => panic!("not rows: {other:?}"),
    }
}

fn person(id: i64, name: &str, last: &str, age: i64) -> Row {
    vec![Value::Int(id), Value::Text(name.into()), Value::Text(last.into()), Value::Int(age)]
}

#[test]
fn point_read_is_classified_and_reports_the_version_read() {
    let db = setup();
    let e = run(&db, "SELECT last FROM people WHERE id = 1 AND age > 50", &[], &WriteSet::default());
    assert!(e.reads.is_point_read());
    assert!(rows(&e).is_empty());
    let scan = &e.reads.scans[0];
    // The version is recorded even though `age > 50` rejected it (Pesto §5.4).
    assert_eq!(scan.rows.len(), 1);
    assert_eq!(scan.rows[0].version, Version { ts: Timestamp::at(1), prepared_by: None });
    assert_eq!(scan.absent_key, None);

    let missing = run(&db, "SELECT * FROM people WHERE id = 99", &[], &WriteSet::default());
    assert!(missing.reads.is_point_read());
    assert!(missing.reads.scans[0].absent_key.is_some());
    assert!(missing.reads.scans[0].rows.is_empty());
}

#[test]
fn range_read_predicate_detects_exactly_the_relevant_writes() {
    let db = setup();
    let e = run(&db, "SELECT last FROM people WHERE name = 'Peter'", &[], &WriteSet::default());
    assert!(!e.reads.is_point_read());
    assert_eq!(rows(&e), vec![vec![Value::Text("Parker".into())]]);
    let [scan] = e.reads.scans.as_slice() else { panic!("one scan expected") };
    assert_eq!(scan.access, Access::Index("people_name".into()));
    assert_eq!(scan.table(), "people");
    assert_eq!(scan.rows.len(), 1, "only the active row is in the read set");
    let p = &scan.predicate;
    // A concurrent write renaming Alice to Peter could change the result: detected.
    assert!(p.may_match(&person(2, "Peter", "Allen", 30)));
    assert_eq!(p.eval(&person(2, "Peter", "Allen", 30)), Ok(Some(true)));
    // Renaming Alice to Allie cannot: not detected.
    assert!(!p.may_match(&person(2, "Allie", "Allen", 30)));
    // NULL name: unknown, which does not satisfy the predicate.
    let mut null_name = person(4, "", "X", 1);
    null_name[1] = Value::Null;
    assert_eq!(p.eval(&null_name), Ok(None));
    assert!(!p.may_match(&null_name));
}

#[test]
fn index_nested_loop_join_instantiates_one_predicate_per_outer_row() {
    let db = setup();
    let e = run(
        &db,
        "SELECT p.name, a.balance FROM people p JOIN accounts a ON a.owner = p.id WHERE p.name = 'Peter' AND a.balance > 10",
        &[],
        &WriteSet::default(),
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Peter".into()), Value::Int(100)]]);
    // Outer scan of people plus one scan of accounts per outer row (Pesto B.7).
    assert_eq!(e.reads.scans.len(), 2);
    let inner = &e.reads.scans[1];
    assert_eq!(inner.table(), "accounts");
    assert_eq!(inner.access, Access::Index("accounts_owner".into()));
    let account = |id, owner, balance| vec![Value::Int(id), Value::Int(owner), Value::Int(balance)];
    // New account of Peter with a large balance: conflicts. Of someone else: does not.
    assert!(inner.predicate.may_match(&account(13, 1, 50)));
    assert!(!inner.predicate.may_match(&account(13, 2, 50)));
    assert!(!inner.predicate.may_match(&account(13, 1, 1)));
    assert_eq!(inner.rows.len(), 1, "account 11 (balance 5) is passive");
}

/// A RIGHT JOIN keeps every right row whatever its ON or the WHERE says of the left side, so
/// neither may narrow a scan's predicate: any new account can change the result, and any new
/// person matching the inner conditions could (it may match an account now unmatched).
#[test]
fn right_join_predicates_are_not_narrowed_by_on_or_where() {
    let db = setup();
    let e = run(
        &db,
        "SELECT p.name, a.id FROM people p RIGHT JOIN accounts a ON a.owner = p.id AND a.balance > 10 WHERE p.age IS NULL OR p.age < 25",
        &[],
        &WriteSet::default(),
    );
    let mut got = rows(&e);
    got.sort_by_key(|r| format!("{r:?}"));
    let name = |n: &str| Value::Text(n.into());
    assert_eq!(
        got,
        vec![vec![Value::Null, Value::Int(11)], vec![Value::Null, Value::Int(12)], vec![name("Peter"), Value::Int(10)]]
    );
    let scan = |table: &str| e.reads.scans.iter().find(|s| s.table() == table).expect("scanned");
    let account = |id, owner, balance| vec![Value::Int(id), Value::Int(owner), Value::Int(balance)];
    assert!(scan("accounts").predicate.may_match(&account(13, 9, 1)), "an unmatched account is still a row");
    assert!(scan("people").predicate.may_match(&person(9, "Old", "O", 90)), "WHERE runs after the join");
}

#[test]
fn subquery_results_and_parameters_are_instantiated_as_constants() {
    let db = setup();
    let e = run(
        &db,
        "SELECT name FROM people WHERE age = (SELECT max(age) FROM people WHERE age < $1)",
        &[Value::Int(35)],
        &WriteSet::default(),
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Alice".into())]]);
    assert_eq!(e.reads.scans.len(), 2);
    let outer = &e.reads.scans[1].predicate;
    assert!(!outer.expr.any(&|n| matches!(n, Expr::Param(_) | Expr::Subquery(_) | Expr::Outer(_))));
    assert!(outer.may_match(&person(9, "Zed", "Z", 30)));
    assert!(!outer.may_match(&person(9, "Zed", "Z", 31)));
    let inner = &e.reads.scans[0].predicate;
    assert!(inner.may_match(&person(9, "Zed", "Z", 34)));
    assert!(!inner.may_match(&person(9, "Zed", "Z", 35)));
}

#[test]
fn insert_reports_absence_and_returns_writes_without_mutating() {
    let db = setup();
    let e = run(&db, "INSERT INTO people VALUES (7, 'Eve', 'E', 22)", &[], &WriteSet::default());
    assert!(matches!(e.output, Output::Affected { command: "INSERT", count: 1, .. }));
    let [check] = e.reads.scans.as_slice() else { panic!("one primary-key check expected") };
    assert_eq!(check.access, Access::Point);
    assert!(check.absent_key.is_some());
    assert_eq!(e.writes.len(), 1);
    let (key, write) = e.writes.tables["people"].iter().next().expect("one write");
    assert_eq!(Some(key), check.absent_key.as_ref());
    assert_eq!(write, &Write::Upsert(person(7, "Eve", "E", 22)));
    // Nothing was applied.
    let after = run(&db, "SELECT count(*) FROM people", &[], &WriteSet::default());
    assert_eq!(rows(&after), vec![vec![Value::Int(3)]]);
}

#[test]
fn update_and_delete_produce_write_sets() {
    let db = setup();
    let e = run(&db, "UPDATE accounts SET balance = balance + 1 WHERE owner = 1", &[], &WriteSet::default());
    assert!(matches!(e.output, Output::Affected { count: 2, .. }));
    let writes: Vec<&Write> = e.writes.tables["accounts"].values().collect();
    assert_eq!(
        writes,
        vec![
            &Write::Upsert(vec![Value::Int(10), Value::Int(1), Value::Int(101)]),
            &Write::Upsert(vec![Value::Int(11), Value::Int(1), Value::Int(6)]),
        ]
    );
    let scan = &e.reads.scans[0];
    assert!(scan.predicate.may_match(&[Value::Int(99), Value::Int(1), Value::Int(0)]));
    let d = run(&db, "DELETE FROM accounts WHERE id = 12", &[], &WriteSet::default());
    assert!(d.reads.is_point_read());
    assert_eq!(d.writes.tables["accounts"].values().collect::<Vec<_>>(), vec![&Write::Delete]);
}

#[test]
fn pending_writes_are_visible_but_not_reported_as_reads() {
    let db = setup();
    let insert = run(&db, "INSERT INTO people VALUES (5, 'Peter', 'Pan', 12)", &[], &WriteSet::default());
    let delete = run(&db, "DELETE FROM people WHERE id = 1", &[], &WriteSet::default());
    let mut pending = insert.writes;
    pending.merge(delete.writes);
    let e = run(&db, "SELECT id, last FROM people WHERE name = 'Peter'", &[], &pending);
    assert_eq!(rows(&e), vec![vec![Value::Int(5), Value::Text("Pan".into())]]);
    assert!(e.reads.scans[0].rows.is_empty(), "own writes are not read dependencies");
}

#[test]
fn version_policy_selects_what_a_read_may_see() {
    let mut db = setup();
    let writer = TxnId([7u8; 32]);
    let upd = run(&db, "UPDATE people SET age = 99 WHERE id = 2", &[], &WriteSet::default());
    let catalog = db.catalog().clone();
    let mut store = db.store().clone();
    store
        .apply_writes(&catalog, &upd.writes, Version { ts: Timestamp::at(50), prepared_by: Some(writer) })
        .expect("apply");
    let sql = "SELECT age FROM people WHERE id = 2";
    let prepared = db.prepare(sql).expect("prepare");
    let empty = WriteSet::default();
    let committed_only = |v: &Version| v.prepared_by.is_none();
    let read = |visible: &dyn Fn(&Version) -> bool, ts| {
        let ctx = ExecContext {
            storage: &store,
            at: ReadAt { ts, visible },
            pending: &empty,
            sequences: &[],
            random_seed: [0; 32],
            lastval: None,
        };
        db.engine().execute(&catalog, &prepared, &[], &ctx).expect("execute")
    };
    let all = |_: &Version| true;
    let prepared_read = read(&all, Timestamp::at(100));
    assert_eq!(rows(&prepared_read), vec![vec![Value::Int(99)]]);
    assert_eq!(
        prepared_read.reads.scans[0].rows[0].version,
        Version { ts: Timestamp::at(50), prepared_by: Some(writer) }
    );
    assert_eq!(rows(&read(&committed_only, Timestamp::at(100))), vec![vec![Value::Int(30)]]);
    assert_eq!(
        rows(&read(&all, Timestamp::at(50))),
        vec![vec![Value::Int(30)]],
        "reads see versions strictly below ts"
    );
    store.abort_prepared(&writer);
    let ctx = ExecContext {
        storage: &store,
        at: ReadAt::latest_before(Timestamp::at(100)),
        pending: &empty,
        sequences: &[],
        random_seed: [0; 32],
        lastval: None,
    };
    assert_eq!(
        rows(&db.engine().execute(&catalog, &prepared, &[], &ctx).expect("execute")),
        vec![vec![Value::Int(30)]]
    );
    db.execute("DROP TABLE accounts").expect("drop");
}

#[test]
fn same_visible_rows_give_identical_results_and_reports() {
    let a = setup();
    let b = setup();
    for sql in [
        "SELECT p.name, a.balance FROM people p LEFT JOIN accounts a ON a.owner = p.id ORDER BY 1",
        "SELECT owner, sum(balance) FROM accounts GROUP BY owner",
        "SELECT * FROM people WHERE age BETWEEN 10 AND 35",
    ] {
        let x = run(&a, sql, &[], &WriteSet::default());
        let y = run(&b, sql, &[], &WriteSet::default());
        assert_eq!(x, y, "{sql}");
    }
}

#[test]
fn prepared_statements_are_cached_and_replanned_after_ddl() {
    let mut db = setup();
    let p1 = db.prepare("SELECT name FROM people WHERE id = $1").expect("prepare");
    let p2 = db.prepare("SELECT name FROM people WHERE id = $1").expect("prepare");
    assert!(std::sync::Arc::ptr_eq(&p1, &p2));
    assert_eq!(p1.param_count(), 1);
    assert_eq!(p1.columns(), Some(&["name".to_string()][..]));
    assert!(p1.explain().contains("point lookup"));
    db.execute("CREATE INDEX people_age ON people (age)").expect("ddl");
    let e = db.execute_prepared(&p1, &[Value::Int(3)]).expect("run after DDL");
    assert_eq!(rows(&e), vec![vec![Value::Text("Bob".into())]]);
    let err = db.execute_prepared(&p1, &[]).expect_err("missing parameter");
    assert_eq!(err.sqlstate(), "42P02");
}

#[test]
fn ddl_returns_a_catalog_change_instead_of_mutating() {
    let db = setup();
    let e = run(&db, "CREATE TABLE z (k TEXT PRIMARY KEY, v INT UNIQUE)", &[], &WriteSet::default());
    let Output::Catalog(Some(CatalogChange::CreateTable(schema))) = e.output else { panic!("expected a table") };
    assert_eq!(schema.primary_key, vec![0]);
    assert_eq!(schema.indexes.len(), 1);
    assert!(db.catalog().table("z").is_none());
    let mut catalog = db.catalog().clone();
    let before = catalog.version();
    catalog.apply(&CatalogChange::CreateTable(schema), &EngineRules).expect("apply");
    assert_eq!(catalog.version(), before + 1);
}

#[test]
fn query_column_types_are_known_statically() {
    let db = setup();
    let p = db
        .prepare("SELECT p.id, p.name, avg(a.balance), count(*), sum(a.balance) * 1.5, $1 FROM people p JOIN accounts a ON a.owner = p.id GROUP BY p.id, p.name")
        .expect("prepare");
    use SqlType::*;
    // INT is integer; avg(integer) is numeric, count bigint, sum(integer) bigint.
    assert_eq!(p.column_types(), Some(&[Some(Int4), Some(Text), Some(Numeric), Some(Int), Some(Numeric), None][..]));
    let sums = db.prepare("SELECT sum(id), sum(CAST(id AS BIGINT)), sum(CAST(id AS REAL)), avg(CAST(id AS REAL)), id + 1, CAST(id AS SMALLINT) + CAST(1 AS SMALLINT) FROM people GROUP BY id").expect("prepare");
    assert_eq!(
        sums.column_types(),
        Some(&[Some(Int), Some(Numeric), Some(Float4), Some(Float), Some(Int4), Some(Int2)][..])
    );
    let names: Vec<&str> =
        [Int2, Int4, Int, Float4, Float, Varchar, Char, Timestamp].iter().map(|t| t.pg_name()).collect();
    assert_eq!(
        names,
        [
            "smallint",
            "integer",
            "bigint",
            "real",
            "double precision",
            "character varying",
            "character",
            "timestamp without time zone"
        ]
    );
    let u = db.prepare("SELECT name FROM people UNION SELECT 'x'").expect("prepare");
    assert_eq!(u.column_types(), Some(&[Some(Text)][..]));
}

#[test]
fn parameter_types_are_inferred_from_context() {
    let db = setup();
    use SqlType::*;
    let p = db
        .prepare("SELECT name FROM people WHERE id = $1 AND name LIKE $2 AND age IN ($3, 5) LIMIT $4")
        .expect("prepare");
    assert_eq!(p.param_types(), &[Some(Int4), Some(Text), Some(Int4), Some(Int)][..]);
    let i = db.prepare("INSERT INTO people VALUES ($1, $2, $3, $4)").expect("prepare");
    assert_eq!(i.param_types(), &[Some(Int4), Some(Text), Some(Text), Some(Int4)][..]);
    let u = db
        .prepare("UPDATE accounts SET balance = $1 WHERE owner = (SELECT id FROM people WHERE name = $2)")
        .expect("prepare");
    assert_eq!(u.param_types(), &[Some(Int4), Some(Text)][..]);
    let c = db.prepare("SELECT name FROM people WHERE id = CAST($1 AS BIGINT)").expect("prepare");
    assert_eq!(c.param_types(), &[Some(Int)][..], "an explicit cast types its parameter");
    let s = db.prepare("SELECT $1").expect("prepare");
    assert_eq!(s.param_types(), &[None][..]);
}

#[test]
fn correlated_subqueries_report_one_instantiated_scan_per_row() {
    let db = setup();
    let e = run(
        &db,
        "SELECT name FROM people p WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.owner = p.id AND a.balance > 50)",
        &[],
        &WriteSet::default(),
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Peter".into())]]);
    // people scan, then one accounts scan per person.
    assert_eq!(e.reads.scans.len(), 4);
    let for_alice = &e.reads.scans[2];
    assert_eq!(for_alice.table(), "accounts");
    let account = |owner, balance| vec![Value::Int(20), Value::Int(owner), Value::Int(balance)];
    assert!(for_alice.predicate.may_match(&account(2, 60)), "a rich account for Alice would change the result");
    assert!(!for_alice.predicate.may_match(&account(1, 60)));
    assert!(!for_alice.predicate.may_match(&account(2, 10)));
    // The outer scan's predicate is TRUE: the EXISTS filter is applied after the scan.
    assert!(e.reads.scans[0].predicate.may_match(&person(9, "Zed", "Z", 1)));
}

#[test]
fn derived_tables_report_the_scans_of_their_query() {
    let db = setup();
    let e = run(
        &db,
        "SELECT s.name FROM (SELECT name, age FROM people WHERE age > 25) AS s WHERE s.age < 35",
        &[],
        &WriteSet::default(),
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Alice".into())]]);
    let [scan] = e.reads.scans.as_slice() else { panic!("only the inner query scans storage") };
    // The outer filter runs on the derived rows, so the base-table predicate is the inner one.
    assert!(scan.predicate.may_match(&person(9, "Old", "O", 50)));
    assert!(!scan.predicate.may_match(&person(9, "Young", "Y", 20)));
    assert_eq!(scan.rows.len(), 2);
}

#[test]
fn point_reads_are_classified_before_execution() {
    let db = setup();
    let p = db.prepare("SELECT name FROM people WHERE id = $1 AND age > 3").expect("prepare");
    let point = p.point_key(&[Value::Int(2)]).expect("classify").expect("a point read");
    assert_eq!(point.table, "people");
    let e = run(&db, "SELECT name FROM people WHERE id = $1 AND age > 3", &[Value::Int(2)], &WriteSet::default());
    assert!(e.reads.is_point_read());
    assert_eq!(point.key.as_ref(), e.reads.scans[0].rows.first().map(|r| &r.key), "same key as the execution reads");
    assert_eq!(p.point_key(&[Value::Null]).expect("classify").map(|k| k.key), Some(None));
    for range in [
        "SELECT name FROM people WHERE id > $1",
        "SELECT name FROM people WHERE name = $1",
        "SELECT p.name FROM people p JOIN accounts a ON a.id = p.id WHERE p.id = $1",
        "SELECT name FROM people WHERE id = (SELECT max(id) FROM people WHERE id < $1)",
    ] {
        assert_eq!(db.prepare(range).expect("prepare").point_key(&[Value::Int(2)]).expect("classify"), None, "{range}");
    }
    let upd = db.prepare("UPDATE accounts SET balance = 0 WHERE id = 10").expect("prepare");
    assert_eq!(upd.point_key(&[]).expect("classify").map(|k| k.table), Some("accounts".to_string()));
}

#[test]
fn in_lists_read_only_the_listed_keys() {
    let db = setup();
    let e = run(&db, "SELECT id FROM people WHERE id IN (3, 1, 99)", &[], &WriteSet::default());
    assert_eq!(rows(&e), vec![vec![Value::Int(1)], vec![Value::Int(3)]]);
    let [scan] = e.reads.scans.as_slice() else { panic!("one scan") };
    assert_eq!(scan.access, Access::PkRange);
    assert_eq!(scan.rows.len(), 2);
    assert!(scan.predicate.may_match(&person(99, "New", "N", 1)), "inserting key 99 conflicts");
    assert!(!scan.predicate.may_match(&person(2, "Alice", "A", 1)));
}

#[test]
fn char_results_of_expressions_are_padded_and_scalar_subqueries_are_typed() {
    let mut db = Database::new();
    for sql in [
        "CREATE TABLE codes (id INT PRIMARY KEY, c CHAR(5), d CHAR(5), e CHAR(3), s SMALLINT)",
        "INSERT INTO codes VALUES (1, 'ab', 'xy', 'q', 7), (2, NULL, 'zz', 'r', 8)",
    ] {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let text = |s: &str| Value::Text(s.into());
    let query = |db: &mut Database, sql: &str| match db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        Output::Rows { rows, .. } => rows,
        other => panic!("not rows: {other:?}"),
    };
    // As in PostgreSQL (checked with octet_length): min/max, CASE, COALESCE, NULLIF,
    // GREATEST and scalar subqueries over CHAR(n) values show them padded to n.
    assert_eq!(query(&mut db, "SELECT max(c), min(e) FROM codes"), vec![vec![text("ab   "), text("q  ")]]);
    assert_eq!(
        query(&mut db, "SELECT coalesce(c, d), CASE WHEN id = 1 THEN d ELSE c END, nullif(c, 'zz'), (SELECT d FROM codes WHERE id = 2), greatest(c, d) FROM codes ORDER BY id"),
        vec![
            vec![text("ab   "), text("xy   "), text("ab   "), text("zz   "), text("xy   ")],
            vec![text("zz   "), Value::Null, Value::Null, text("zz   "), text("zz   ")],
        ]
    );
    // Grouped: a min/max column of the grouped row keeps its argument's length, also when a
    // subquery reads it.
    assert_eq!(
        query(&mut db, "SELECT id, (SELECT max(d)), (SELECT min(x.e) FROM codes x WHERE x.id = codes.id) FROM codes GROUP BY id ORDER BY id"),
        vec![vec![Value::Int(1), text("xy   "), text("q  ")], vec![Value::Int(2), text("zz   "), text("r  ")]]
    );
    // A scalar subquery has its column's type (and limits).
    use SqlType::*;
    let p = db.prepare("SELECT (SELECT max(id) FROM codes), (SELECT c FROM codes LIMIT 1), (SELECT s FROM codes LIMIT 1), (SELECT s FROM codes LIMIT 1) + 1").expect("prepare");
    assert_eq!(p.column_types(), Some(&[Some(Int4), Some(Char), Some(Int2), Some(Int4)][..]));
    assert_eq!(p.column_limits().map(|l| l[1].max_len), Some(Some(5)));
    let q = db.prepare("SELECT id FROM codes WHERE s = (SELECT s FROM codes WHERE id = $1) + $2").expect("prepare");
    assert_eq!(q.param_types(), &[Some(Int4), Some(Int2)][..], "a parameter next to a subquery takes its type");
}

/// Parameters inside window calls get their types (the select-list expression around a call
/// only sees its value), and window results have PostgreSQL's types.
#[test]
fn window_call_parameters_and_result_types() {
    let db = setup();
    use SqlType::*;
    let p = db
        .prepare(
            "SELECT lag(name, $1) OVER (PARTITION BY age + $2 ORDER BY id), \
             sum(age) OVER (ORDER BY id ROWS BETWEEN $3 PRECEDING AND CURRENT ROW), \
             row_number() OVER (), ntile(2) OVER (), cume_dist() OVER (), avg(age) OVER () FROM people",
        )
        .expect("prepare");
    assert_eq!(p.param_types(), &[Some(Int4), Some(Int4), Some(Int)][..]);
    assert_eq!(p.column_types(), Some(&[Some(Text), Some(Int), Some(Int), Some(Int4), Some(Float), Some(Numeric)][..]));
}

/// `SELECT … LIMIT n` over one table's primary key, without ORDER BY, stops its scan after n
/// rows: only they are read, and the predicate covers only the keys up to the last one read,
/// so a write after it (which the result did not depend on) is not a conflict while a write
/// before it is (a page of the gateway's check of existing rows costs n reads).
#[test]
fn a_limit_stops_a_primary_key_scan_and_narrows_its_predicate() {
    let db = setup();
    let e = run(&db, "SELECT id FROM people WHERE id > 1 LIMIT 1", &[], &WriteSet::default());
    assert_eq!(rows(&e), vec![vec![Value::Int(2)]]);
    let [scan] = e.reads.scans.as_slice() else { panic!("one scan expected") };
    assert_eq!(scan.rows.len(), 1, "the rows after the limit are not read");
    let p = &scan.predicate;
    assert!(p.may_match(&person(2, "Zed", "Z", 1)), "a write to the row read is covered");
    assert!(!p.may_match(&person(3, "Bob", "Brown", 41)), "a write after the last key read is not");
    assert!(!p.may_match(&person(9, "New", "N", 1)), "nor an insert after it");

    let all = run(&db, "SELECT id FROM people LIMIT 5", &[], &WriteSet::default());
    assert_eq!(rows(&all).len(), 3);
    assert_eq!(all.reads.scans[0].rows.len(), 3);
    // ORDER BY (or an aggregate) needs every row: nothing stops early.
    let ordered = run(&db, "SELECT id FROM people ORDER BY age DESC LIMIT 1", &[], &WriteSet::default());
    assert_eq!(rows(&ordered), vec![vec![Value::Int(3)]]);
    assert_eq!(ordered.reads.scans[0].rows.len(), 3);
    let none = run(&db, "SELECT id FROM people LIMIT 0", &[], &WriteSet::default());
    assert!(rows(&none).is_empty());
}

/// The hidden row id of a table created without a primary key can be read by name (SQL
/// text over the wire cannot contain NUL, so only internal callers name it) but not written.
#[test]
fn the_hidden_row_id_is_readable_by_name_only() {
    let mut db = Database::new();
    db.execute("CREATE TABLE nokey (a INT)").unwrap();
    db.execute("INSERT INTO nokey VALUES (1), (2), (3)").unwrap();
    let page = run(&db, "SELECT \"\0row_id\", a FROM nokey LIMIT 2", &[], &WriteSet::default());
    let got = rows(&page);
    assert_eq!(got.len(), 2);
    assert_eq!(page.reads.scans[0].rows.len(), 2);
    let Some(Value::Bytes(last)) = got[1].first().cloned() else { panic!("a row id: {got:?}") };
    let rest =
        run(&db, "SELECT a FROM nokey WHERE \"\0row_id\" > $1 LIMIT 2", &[Value::Bytes(last)], &WriteSet::default());
    assert_eq!(rows(&rest).len(), 1);
    let star = run(&db, "SELECT * FROM nokey LIMIT 1", &[], &WriteSet::default());
    assert_eq!(rows(&star)[0].len(), 1, "* leaves the row id out");
    assert!(db.execute("UPDATE nokey SET \"\0row_id\" = '\\x00'").is_err());
    assert!(db.execute("INSERT INTO nokey (\"\0row_id\", a) VALUES ('\\x00', 4)").is_err());
}
