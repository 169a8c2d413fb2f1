//! PostgreSQL's type resolution (docs/sql.md, "Types"): CASE / COALESCE / NULLIF / GREATEST /
//! LEAST / VALUES / set operations take a common type and cast their inputs to it, quoted
//! literals take the type of their context, COALESCE is lazy. Static types (what clients are
//! told), runtime values (what they receive) and parameter types are checked together.

use pistou_sql::{Database, Output, SqlState, SqlType, Value};
use rust_decimal::Decimal;

fn db() -> Database {
    let mut db = Database::new();
    let setup = [
        "CREATE TABLE t (id INT PRIMARY KEY, s SMALLINT, n NUMERIC(6,2), r REAL, v VARCHAR(3), c CHAR(3), d DATE, x INT DEFAULT '7')",
        "INSERT INTO t (id, s, n, r, v, c, d) VALUES ('1', '2', '1.255', '0.5', 'ab ', 'a  ', '2020-02-03')",
        "INSERT INTO t (id) SELECT '2'",
    ];
    for sql in setup {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    db
}

fn rows(db: &mut Database, sql: &str) -> Vec<Vec<Value>> {
    match db.execute(sql) {
        Ok(Output::Rows { rows, .. }) => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

fn types(db: &Database, sql: &str) -> Vec<Option<SqlType>> {
    db.prepare(sql)
        .map(|p| p.column_types().map(<[_]>::to_vec).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn state(db: &mut Database, sql: &str) -> Option<SqlState> {
    db.execute(sql).err().map(|e| e.state)
}

fn num(s: &str) -> Value {
    Value::Numeric(s.parse::<Decimal>().unwrap_or_default())
}

#[test]
fn branches_are_cast_to_the_common_type() {
    use SqlType::*;
    let mut db = db();
    // The issue's cases: an integer branch of a numeric CASE divides as numeric.
    let q = "SELECT CASE WHEN 1 = 0 THEN 1.5 ELSE 15 END / 77, NULLIF(53, 1.5) / 2";
    assert_eq!(types(&db, q), vec![Some(Numeric), Some(Numeric)]);
    let r = rows(&mut db, q);
    assert!(matches!(r[0][0], Value::Numeric(d) if d.to_string().starts_with("0.19480519")), "{r:?}");
    assert_eq!(r[0][1], num("26.5"));
    // The values clients receive have the static type (the wire encoding follows it).
    let r =
        rows(&mut db, "SELECT COALESCE(NULL, 2, 1.5), GREATEST(1, CAST(2 AS REAL)), LEAST(s, 1.5) FROM t WHERE id = 1");
    assert!(
        matches!(r[0][0], Value::Numeric(_))
            && matches!(r[0][1], Value::Float(_))
            && matches!(r[0][2], Value::Numeric(_)),
        "{r:?}"
    );
    assert_eq!(types(&db, "SELECT COALESCE(s, id), COALESCE(n, r), NULLIF(NULL, 1), NULLIF(v, 'x'), CASE WHEN true THEN 'a' END FROM t"), vec![
        Some(Int4),
        Some(Float4),
        Some(Int4),
        Some(Text),
        Some(Text)
    ]);
    assert_eq!(types(&db, "SELECT 1 UNION SELECT 2.5"), vec![Some(Numeric)]);
    assert_eq!(types(&db, "VALUES (1, 'a'), (NULL, 'b'), (CAST(2 AS BIGINT), NULL)"), vec![Some(Int), Some(Text)]);
    let union = rows(&mut db, "SELECT 1 UNION ALL SELECT 2.5 UNION ALL SELECT '3'");
    assert!(union.iter().all(|r| matches!(r[0], Value::Numeric(_))), "{union:?}");
}

#[test]
fn mismatched_categories_fail_as_in_postgresql() {
    let mut db = db();
    let e = db.execute("SELECT CASE WHEN true THEN 1 ELSE CAST('a' AS TEXT) END").err();
    assert_eq!(e.as_ref().map(|e| e.state), Some(SqlState::DatatypeMismatch));
    assert_eq!(
        e.map(|e| e.message).as_deref(),
        Some("CASE types text and integer cannot be matched"),
        "ELSE is considered first"
    );
    for sql in [
        "SELECT COALESCE(1, v) FROM t",
        "SELECT 1 UNION SELECT v FROM t",
        "VALUES (1), (TRUE)",
        "SELECT GREATEST(d, 1) FROM t",
    ] {
        assert_eq!(state(&mut db, sql), Some(SqlState::DatatypeMismatch), "{sql}");
    }
    assert_eq!(state(&mut db, "SELECT NULLIF(1, v) FROM t"), Some(SqlState::UndefinedFunction));
    // Known without rows to evaluate: PostgreSQL fails while planning, so does Pistou.
    assert_eq!(state(&mut db, "SELECT v + 1 FROM t WHERE false"), Some(SqlState::UndefinedFunction));
    assert_eq!(state(&mut db, "SELECT id FROM t WHERE v = 1"), Some(SqlState::UndefinedFunction));
}

#[test]
fn quoted_literals_take_the_type_of_their_context() {
    let mut db = db();
    let r = rows(&mut db, "SELECT id, s, n, r, v, c, d, x FROM t ORDER BY id");
    assert_eq!(
        r[0],
        vec![
            Value::Int(1),
            Value::Int(2),
            num("1.26"),
            Value::Float(0.5),
            Value::Text("ab ".into()),
            Value::Text("a  ".into()),
            r[0][6].clone(),
            Value::Int(7)
        ]
    );
    assert!(matches!(r[0][6], Value::Date(_)));
    assert_eq!(r[1][0], Value::Int(2), "INSERT ... SELECT '2'");
    assert_eq!(
        rows(&mut db, "SELECT id FROM t WHERE id = '1' AND d = '2020-02-03' AND c = 'a' AND s IN ('2', '5')"),
        vec![vec![Value::Int(1)]]
    );
    assert_eq!(
        rows(&mut db, "SELECT s + '1', CASE id WHEN '1' THEN 'one' END FROM t WHERE id = 1"),
        vec![vec![Value::Int(3), Value::Text("one".into())]]
    );
    db.execute("UPDATE t SET n = '9.999', r = '1e3' WHERE id = '2'").expect("update");
    assert_eq!(rows(&mut db, "SELECT n, r FROM t WHERE id = 2"), vec![vec![num("10.00"), Value::Float(1000.0)]]);
    // Bad input fails while binding, whatever the rows.
    assert_eq!(
        state(&mut db, "SELECT id FROM t WHERE id = 'abc' AND false"),
        Some(SqlState::InvalidTextRepresentation)
    );
    assert_eq!(state(&mut db, "INSERT INTO t (id, d) VALUES (3, 'not a date')").map(|s| s.code()), Some("22007"));
    assert_eq!(state(&mut db, "INSERT INTO t (id, d) VALUES (3, '2023-02-29')").map(|s| s.code()), Some("22008"));
    assert_eq!(
        state(&mut db, "INSERT INTO t (id) SELECT '3' UNION SELECT '4'"),
        Some(SqlState::DatatypeMismatch),
        "a set operation's literals are text"
    );
    // A literal key is a key value: the point-read path applies.
    assert!(db
        .prepare("SELECT * FROM t WHERE id = '1'")
        .map(|p| matches!(p.point_key(&[]), Ok(Some(_))))
        .unwrap_or(false));
}

#[test]
fn coalesce_stops_at_the_first_non_null_argument() {
    let mut db = db();
    assert_eq!(rows(&mut db, "SELECT COALESCE(1, 1/0)"), vec![vec![Value::Int(1)]]);
    assert_eq!(
        rows(&mut db, "SELECT COALESCE(s, 10 / (id - 1)) FROM t ORDER BY id"),
        vec![vec![Value::Int(2)], vec![Value::Int(10)]]
    );
    assert_eq!(state(&mut db, "SELECT COALESCE(NULL, 1/0, 1)"), Some(SqlState::DivisionByZero));
}

#[test]
fn parameters_take_the_resolved_type() {
    use SqlType::*;
    let db = db();
    let p = db
        .prepare("SELECT COALESCE($1, 0), CASE WHEN true THEN $2 ELSE 1.5 END, NULLIF(s, $3) FROM t")
        .expect("prepare");
    assert_eq!(p.param_types(), &[Some(Int4), Some(Numeric), Some(Int2)][..]);
    assert_eq!(p.column_types(), Some(&[Some(Int4), Some(Numeric), Some(Int2)][..]));
    let mut db = db;
    let out = db.execute_with("SELECT CASE WHEN true THEN $1 ELSE 1.5 END", &[Value::Int(2)]).map(|e| e.output);
    assert!(
        matches!(out, Ok(Output::Rows { ref rows, .. }) if rows == &vec![vec![num("2")]] && matches!(rows[0][0], Value::Numeric(_))),
        "{out:?}"
    );
}

/// jsonb parameters (drivers send them as text, declared jsonb or unknown): typed jsonb by
/// their column or operator and read (canonicalized) before they are stored or compared.
#[test]
fn jsonb_parameters_are_read_as_jsonb() {
    let mut db = Database::new();
    db.execute("CREATE TABLE j (id INT PRIMARY KEY, d JSONB)").expect("create");
    let text = |s: &str| Value::Text(s.to_string());
    let run = |db: &mut Database, sql: &str, params: &[Value]| match db.execute_with(sql, params) {
        Ok(e) => e.output,
        Err(e) => panic!("{sql}: {e}"),
    };
    let insert = "INSERT INTO j VALUES ($1, $2)";
    assert_eq!(db.prepare(insert).expect("prepare").param_types(), &[Some(SqlType::Int4), Some(SqlType::Jsonb)]);
    run(&mut db, insert, &[Value::Int(1), text(r#"{"b": [1.50], "a": 1, "a": 2}"#)]);
    let Output::Rows { rows, .. } = run(&mut db, "SELECT d FROM j", &[]) else { panic!("rows") };
    assert_eq!(rows, vec![vec![text(r#"{"a": 2, "b": [1.50]}"#)]]);
    for (sql, param) in [
        ("SELECT id FROM j WHERE d = $1", r#"{"b":[1.50],"a":2}"#),
        ("SELECT id FROM j WHERE d @> $1", r#"{"b":[1.50]}"#),
        ("SELECT id FROM j WHERE d -> 'b' = $1", "[1.50]"),
        ("SELECT id FROM j WHERE d ->> $1 = '2'", "a"),
    ] {
        let Output::Rows { rows, .. } = run(&mut db, sql, &[text(param)]) else { panic!("{sql}") };
        assert_eq!(rows, vec![vec![Value::Int(1)]], "{sql}");
    }
    let bad = db.execute_with(insert, &[Value::Int(2), text("{bad")]).expect_err("bad jsonb");
    assert_eq!(bad.state, SqlState::InvalidTextRepresentation);
}
