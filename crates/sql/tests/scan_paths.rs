//! The engine's read path: rows lent by the store's visitors, merged with the caller's own
//! writes in scan order, filtered in place; aggregates folded per row; key equalities implied
//! across joins.

use pistou_sql::*;

fn db(statements: &[&str]) -> Database {
    let mut db = Database::new();
    for sql in statements {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    db
}

fn run_on(storage: &dyn Storage, db: &Database, sql: &str, params: &[Value], pending: &WriteSet) -> Execution {
    let ctx = ExecContext {
        storage,
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

fn ints(values: &[i64]) -> Row {
    values.iter().map(|v| Value::Int(*v)).collect()
}

/// A store implementing only the copying interface: the engine reads it through the
/// `Storage` trait's default visitors.
struct CopyingOnly<'a>(&'a MemStore);

impl Storage for CopyingOnly<'_> {
    fn scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        self.0.scan(table, range, at, limit)
    }

    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        self.0.index_scan(table, index, range, at, limit)
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp> {
        self.0.table_version(table, at)
    }
}

const SCHEMA: [&str; 4] = [
    "CREATE TABLE t (id INT PRIMARY KEY, g INT NOT NULL, v BIGINT)",
    "CREATE INDEX t_g ON t (g)",
    "INSERT INTO t VALUES (1, 1, 10), (3, 2, 30), (5, 1, 50), (7, 2, 70)",
    "UPDATE t SET v = v + 1 WHERE id = 5",
];

#[test]
fn own_writes_merge_into_key_and_index_order_and_are_not_reported() {
    let db = db(&SCHEMA);
    let insert = db.engine().run(
        db.catalog(),
        "INSERT INTO t VALUES (2, 2, 20), (6, 1, 60)",
        &[],
        &ExecContext {
            storage: db.store(),
            at: ReadAt::latest_before(Timestamp::MAX),
            pending: &WriteSet::default(),
            sequences: &[],
            random_seed: [0; 32],
            lastval: None,
        },
    );
    let mut pending = insert.expect("insert").writes;
    let delete = run_on(db.store(), &db, "DELETE FROM t WHERE id = 3", &[], &pending);
    pending.merge(delete.writes);
    let copying = CopyingOnly(db.store());
    for store in [db.store() as &dyn Storage, &copying] {
        let by_key = run_on(store, &db, "SELECT id FROM t WHERE id >= 2 AND id <= 6", &[], &pending);
        assert_eq!(rows(&by_key), vec![ints(&[2]), ints(&[5]), ints(&[6])]);
        let active: Vec<Vec<u8>> = by_key.reads.scans[0].rows.iter().map(|r| r.key.clone()).collect();
        assert_eq!(
            active,
            vec![db.catalog().table("t").expect("t").row_key(&ints(&[5]))],
            "only stored rows are active"
        );
        // Index order is (g, id): own rows interleave with stored ones.
        let by_index = run_on(store, &db, "SELECT id, g FROM t WHERE g >= 1", &[], &pending);
        assert_eq!(rows(&by_index), vec![ints(&[1, 1]), ints(&[5, 1]), ints(&[6, 1]), ints(&[2, 2]), ints(&[7, 2])]);
        assert!(matches!(by_index.reads.scans[0].access, Access::Index(_)));
        assert_eq!(by_index.reads.scans[0].rows.len(), 3);
    }
}

#[test]
fn aggregates_fold_exactly() {
    let db = db(&[
        "CREATE TABLE n (id INT PRIMARY KEY, big BIGINT, small INT)",
        "INSERT INTO n VALUES (1, 9223372036854775807, 2147483647), (2, 9223372036854775807, 2147483647), (3, NULL, 1)",
    ]);
    let e = run_on(
        db.store(),
        &db,
        "SELECT sum(big), sum(small), count(big), avg(big), min(small), max(big) FROM n",
        &[],
        &WriteSet::default(),
    );
    let decimal = |s: &str| Value::Numeric(s.parse().expect("decimal"));
    assert_eq!(
        rows(&e),
        vec![vec![
            decimal("18446744073709551614"),
            Value::Int(4294967295),
            Value::Int(2),
            decimal("9223372036854775807"),
            Value::Int(1),
            Value::Int(i64::MAX),
        ]]
    );
    let grouped = run_on(
        db.store(),
        &db,
        "SELECT small, count(*), sum(DISTINCT big) FROM n GROUP BY small",
        &[],
        &WriteSet::default(),
    );
    assert_eq!(
        rows(&grouped),
        vec![
            vec![Value::Int(1), Value::Int(1), Value::Null],
            vec![Value::Int(2147483647), Value::Int(2), decimal("9223372036854775807")]
        ]
    );
}

#[test]
fn implied_key_equalities_turn_joined_lookups_into_points() {
    let db = db(&[
        "CREATE TABLE w (w_id INT PRIMARY KEY, tax INT)",
        "CREATE TABLE c (c_w INT, c_d INT, c_id INT, name TEXT, PRIMARY KEY (c_w, c_d, c_id))",
        "CREATE TABLE b (b_w BIGINT, b_id INT, PRIMARY KEY (b_w, b_id))",
        "INSERT INTO w VALUES (1, 10), (2, 20)",
        "INSERT INTO c VALUES (1, 1, 1, 'a'), (1, 1, 2, 'b'), (2, 1, 1, 'c')",
        "INSERT INTO b VALUES (1, 1), (2, 1)",
    ]);
    let sql = "SELECT name, tax FROM c, w WHERE w_id = $1 AND c_w = w_id AND c_d = $2 AND c_id = $3";
    let e = run_on(db.store(), &db, sql, &[Value::Int(2), Value::Int(1), Value::Int(1)], &WriteSet::default());
    assert_eq!(rows(&e), vec![vec![Value::Text("c".into()), Value::Int(20)]]);
    assert!(e.reads.scans.iter().all(|s| s.access == Access::Point), "both tables read by key: {:?}", e.reads.scans);
    // Columns of different declared types imply nothing: b is scanned, not looked up.
    let mixed =
        run_on(db.store(), &db, "SELECT b_id FROM b, w WHERE w_id = 2 AND b_w = w_id", &[], &WriteSet::default());
    assert_eq!(rows(&mixed), vec![ints(&[1])]);
    assert_eq!(mixed.reads.scans[0].access, Access::Full);
}

/// The table a client routes a statement by before it has any catalog.
#[test]
fn first_named_table_reads_the_syntax_only() {
    let engine = Engine::new(Limits::default());
    let named = |sql: &str| engine.first_named_table(sql);
    assert_eq!(named("SELECT a FROM Orders o JOIN lines l ON o.id = l.o WHERE o.id = $1").as_deref(), Some("orders"));
    assert_eq!(named("INSERT INTO public.\"Big\" VALUES (1)").as_deref(), Some("Big"));
    assert_eq!(named("UPDATE t SET a = 1 WHERE id = 2").as_deref(), Some("t"));
    assert_eq!(named("DELETE FROM u WHERE id = 2").as_deref(), Some("u"));
    for none in [
        "SELECT 1",
        "SELECT * FROM (SELECT 1) x",
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "SELECT 1; SELECT 2",
        "SELEC",
        "SELECT * FROM a.b.c",
    ] {
        assert_eq!(named(none), None, "{none}");
    }
    let long = format!("SELECT * FROM t WHERE {}a = 1", "a = 1 AND ".repeat(200));
    assert_eq!(named(&long), None, "long statements are not parsed twice");
}

/// Counts the rows the engine reads from a store.
struct Counting<'a>(&'a MemStore, std::cell::Cell<usize>);

impl Storage for Counting<'_> {
    fn scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        let rows = self.0.scan(table, range, at, limit)?;
        self.1.set(self.1.get() + rows.len());
        Ok(rows)
    }

    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        let rows = self.0.index_scan(table, index, range, at, limit)?;
        self.1.set(self.1.get() + rows.len());
        Ok(rows)
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp> {
        self.0.table_version(table, at)
    }
}

/// A predicate on an indexed expression reads only the matching rows through the index
/// (one for an equality, the range's for a range), and the answer is the one a full scan
/// gives without the index.
#[test]
fn an_expression_index_serves_lookups_on_its_expression() {
    let schema = [
        "CREATE TABLE u (id INT PRIMARY KEY, email TEXT, a INT, b INT)",
        "INSERT INTO u SELECT i, 'User' || i || '@X.org', i, i * 10 FROM generate_series(1, 50) AS s(i)",
    ];
    let plain = db(&schema);
    let mut indexed = db(&schema);
    for sql in ["CREATE UNIQUE INDEX u_lower ON u (lower(email))", "CREATE INDEX u_sum ON u ((a + b))"] {
        indexed.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let cases = [
        ("SELECT id FROM u WHERE lower(email) = 'user7@x.org'", 1),
        ("SELECT id FROM u WHERE lower(email) IN ('user7@x.org', 'user9@x.org', 'nobody') ORDER BY id", 2),
        ("SELECT id FROM u WHERE a + b >= 33 AND a + b <= 66 ORDER BY id", 4),
    ];
    for (sql, read) in cases {
        let none = WriteSet::default();
        let full = Counting(plain.store(), Default::default());
        let expected = rows(&run_on(&full, &plain, sql, &[], &none));
        assert_eq!(full.1.get(), 50, "{sql}: without the index every row is read");
        let counting = Counting(indexed.store(), Default::default());
        let e = run_on(&counting, &indexed, sql, &[], &none);
        assert_eq!(rows(&e), expected, "{sql}");
        assert_eq!(counting.1.get(), read, "{sql}: rows read");
        assert!(matches!(e.reads.scans[0].access, Access::Index(_)), "{sql}: {:?}", e.reads.scans[0].access);
    }
}
