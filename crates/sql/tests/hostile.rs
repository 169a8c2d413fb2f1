//! Hostile input: no statement text may panic the engine or exhaust memory; every failure is
//! a typed error with a SQLSTATE.

use pistou_sql::*;

fn db() -> Database {
    let mut db = Database::with_limits(Limits { max_rows: 100_000, max_work: 6_400_000, ..Limits::default() });
    for sql in [
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, s TEXT)",
        "CREATE INDEX t_a ON t (a)",
        "INSERT INTO t VALUES (1, 1, 'x'), (2, NULL, 'y'), (3, 3, NULL)",
    ] {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    db
}

fn state(db: &mut Database, sql: &str) -> &'static str {
    match db.execute(sql) {
        Ok(_) => "ok",
        Err(e) => e.sqlstate(),
    }
}

#[test]
fn long_operator_chains_and_deep_nesting_are_rejected() {
    let mut db = db();
    let chain = format!("SELECT {}1", "1+".repeat(20_000));
    assert_eq!(state(&mut db, &chain), "54001");
    let ands = format!("SELECT * FROM t WHERE {}a = 1", "a = 1 AND ".repeat(5_000));
    assert_eq!(state(&mut db, &ands), "54001");
    let parens = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
    assert_eq!(state(&mut db, &parens), "54001");
    let subqueries = format!("SELECT {}1{}", "(SELECT ".repeat(500), ")".repeat(500));
    assert_eq!(state(&mut db, &subqueries), "54001");
    // Subqueries that may hold outer-level aggregates are bound twice per nesting level: the
    // work is bounded (54001), not exponential; shallower nesting works.
    let start = std::time::Instant::now();
    let nested_aggregates =
        |depth: usize| format!("SELECT {}count(*){}", "(SELECT ".repeat(depth), " FROM t LIMIT 1)".repeat(depth));
    assert_eq!(state(&mut db, &nested_aggregates(28)), "54001");
    assert_eq!(state(&mut db, &nested_aggregates(6)), "ok");
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "took {:?}", start.elapsed());
    let huge = format!("SELECT '{}'", "x".repeat(100_000));
    assert_eq!(state(&mut db, &huge), "54000");
    // Moderately long statements still work.
    let many = format!(
        "SELECT count(*) FROM t WHERE a IN ({})",
        (0..2000).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
    );
    assert_eq!(state(&mut db, &many), "ok");
}

#[test]
fn exploding_joins_hit_the_row_limit() {
    let mut db = db();
    let values: Vec<String> = (10..200).map(|i| format!("({i}, {i}, 'v')")).collect();
    db.execute(&format!("INSERT INTO t VALUES {}", values.join(","))).expect("insert");
    assert_eq!(state(&mut db, "SELECT count(*) FROM t a, t b, t c"), "54000");
    assert_eq!(state(&mut db, "SELECT count(*) FROM t a, t b"), "ok");
    // Few output rows but too many pairs to examine: bounded too.
    assert_eq!(state(&mut db, "SELECT count(*) FROM t a, t b, t c WHERE a.a + b.a < c.a - 1000"), "54000");
    // The same shape with an equality is a hash join and runs.
    assert_eq!(state(&mut db, "SELECT count(*) FROM t a, t b, t c WHERE a.a + b.a = c.a"), "ok");
}

/// Rows read and join pairs examined are one budget for the whole statement (54000 naming
/// the cluster setting), not one per join: two cross joins that each fit do not fit together.
#[test]
fn work_is_bounded_per_statement() {
    let mut db = Database::with_limits(Limits { max_work: 3_000, ..Limits::default() });
    db.execute("CREATE TABLE w (id INT PRIMARY KEY)").expect("create");
    let values: Vec<String> = (0..50).map(|i| format!("({i})")).collect();
    db.execute(&format!("INSERT INTO w VALUES {}", values.join(","))).expect("insert");
    // 2 scans of 50 rows and 2,500 pairs.
    let one = "SELECT count(*) FROM w a, w b WHERE a.id < b.id";
    assert_eq!(state(&mut db, one), "ok");
    let err = db.execute(&format!("SELECT ({one}) + ({one})")).expect_err("5,200 units");
    assert_eq!(err.sqlstate(), "54000");
    assert!(err.message.contains("3000 units of work") && err.message.contains("sql.statement_max_work"), "{err}");
    // Window frames are work too: 50 rows each visiting a frame of up to 50 (1,275 visits).
    let frames = "SELECT min(id) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM w";
    assert_eq!(state(&mut db, frames), "ok");
    assert_eq!(state(&mut db, &format!("SELECT count(*) FROM ({frames}) x, w")), "54000");
}

/// A statement reporting more active rows than a transaction may carry stops at the limit
/// (54000, the coordinator's own message); rows its filter rejects do not count.
#[test]
fn active_reads_stop_at_the_transaction_read_limit() {
    let mut db = Database::with_limits(Limits { max_read_rows: 50, ..Limits::default() });
    db.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)").expect("create");
    let values: Vec<String> = (0..200).map(|i| format!("({i}, {i})")).collect();
    db.execute(&format!("INSERT INTO t VALUES {}", values.join(","))).expect("insert");
    let err = db.execute("SELECT count(*) FROM t").expect_err("200 active rows");
    assert_eq!((err.sqlstate(), err.message.as_str()), ("54000", "a transaction reads at most 50 rows"));
    // Two scans of 30 rows each: the limit is per statement, over all its scans.
    assert_eq!(
        state(&mut db, "SELECT (SELECT count(*) FROM t WHERE id < 30) + (SELECT count(*) FROM t WHERE id >= 170)"),
        "54000"
    );
    // A full scan whose filter passes few rows reads few.
    assert_eq!(state(&mut db, "SELECT count(*) FROM t WHERE a % 10 = 0"), "ok");
    assert_eq!(state(&mut db, "SELECT count(*) FROM t WHERE id < 30"), "ok");
}

#[test]
fn arithmetic_and_conversion_errors_are_typed() {
    let mut db = db();
    for (sql, code) in [
        ("SELECT (-9223372036854775807 - 1) * -1", "22003"),
        ("SELECT abs(-9223372036854775807 - 1)", "22003"),
        ("SELECT 99999999999999999999999999999 * 99999999999999999999999999999", "22003"),
        ("SELECT CAST(1e300 AS INT)", "22003"),
        ("SELECT 1 % 0", "22012"),
        ("SELECT CAST('1.5.5' AS NUMERIC)", "22P02"),
        ("SELECT substr('abc', 1, -1)", "22023"),
        ("SELECT * FROM t LIMIT -1", "22023"),
        ("SELECT * FROM t WHERE a", "42804"),
        ("SELECT $1", "42P02"),
        ("SELECT $0", "42P02"),
        ("", "42601"),
        (";;;", "42601"),
        ("SELECT * FROM t WHERE s LIKE 'a!' ESCAPE '!'", "22025"),
        ("SELECT * FROM t WHERE s LIKE 'a' ESCAPE '!!'", "22025"),
        ("SELECT CAST(40000 AS SMALLINT)", "22003"),
        ("SELECT 2147483647 + 1", "22003"),
        ("SELECT CAST(1e300 AS REAL)", "22003"),
        // now() is the transaction's time; a clock would differ at every replica.
        ("SELECT clock_timestamp()", "0A000"),
        ("SELECT current_time", "0A000"),
        ("SELECT TIMESTAMP '2024-01-01' + INTERVAL '10000 years'", "22008"),
        ("SELECT INTERVAL '2147483647 days' + INTERVAL '1 day'", "22008"),
        ("SELECT INTERVAL '1 day' / 0", "22012"),
        ("SELECT '99999999999999 hours'::interval", "22015"),
    ] {
        assert_eq!(state(&mut db, sql), code, "{sql}");
    }
}

/// Deterministic mutations of valid statements: truncations and byte replacements.
#[test]
fn mutated_statements_never_panic() {
    let mut db = db();
    let seeds = [
        "SELECT a, count(*) FROM t WHERE s LIKE 'x%' AND a BETWEEN 1 AND 3 GROUP BY a HAVING count(*) > 0 ORDER BY 1 DESC LIMIT 5",
        "SELECT x.id, y.s FROM t x LEFT JOIN t y ON y.a = x.id WHERE x.id IN (SELECT a FROM t) ORDER BY x.id",
        "INSERT INTO t VALUES (7, 7, 'seven') ON CONFLICT DO NOTHING RETURNING id, a + 1",
        "UPDATE t SET a = CASE WHEN a IS NULL THEN 0 ELSE a * 2 END WHERE id >= 2 RETURNING *",
        "DELETE FROM t WHERE NOT EXISTS (SELECT 1 FROM t WHERE id = 99) AND id = 3",
        "CREATE TABLE u (k VARCHAR(5) PRIMARY KEY, n NUMERIC(4,2) DEFAULT 1.5, UNIQUE (n))",
        "SELECT CAST(a AS TEXT) || s, coalesce(a, -1) / 2, nullif(s, 'x') FROM t UNION SELECT '1', 2, 'z'",
    ];
    let replacements = [b'(', b')', b',', b'\'', b'*', b'0', b' ', b'-', b'$', b';', 0xC3];
    let mut rng: u64 = 0x2545F4914F6CDD1D;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for seed in seeds {
        for cut in 0..seed.len() {
            let _ = db.execute(&seed[..cut]);
        }
        for _ in 0..300 {
            let mut bytes = seed.as_bytes().to_vec();
            for _ in 0..(next() % 4 + 1) {
                let pos = (next() as usize) % bytes.len();
                bytes[pos] = replacements[(next() as usize) % replacements.len()];
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Err(e) = db.execute(&text) {
                assert_eq!(e.sqlstate().len(), 5, "{text}: {e}");
            }
        }
        // Leave no transaction or table behind that would change later seeds' meaning.
        let _ = db.execute("ROLLBACK");
        let _ = db.execute("DROP TABLE IF EXISTS u");
    }
}

#[test]
fn per_row_subqueries_are_bounded_by_total_rows_read() {
    let mut db = Database::with_limits(Limits { max_rows: 1_000, max_work: 64_000, ..Limits::default() });
    db.execute("CREATE TABLE n (id INT PRIMARY KEY, v INT)").expect("create");
    let values: Vec<String> = (0..900).map(|i| format!("({i}, {i})")).collect();
    db.execute(&format!("INSERT INTO n VALUES {}", values.join(","))).expect("insert");
    assert_eq!(
        state(&mut db, "SELECT count(*) FROM n WHERE v < 10 AND EXISTS (SELECT 1 FROM n m WHERE m.v > n.v)"),
        "ok"
    );
    assert_eq!(state(&mut db, "SELECT id, (SELECT count(*) FROM n m WHERE m.v > n.v) FROM n"), "54000");
}

/// A window frame that moves (its start changes from row to row) is refolded for each row:
/// the frame rows visited are work, like a join's pairs (`Limits::max_work`, 54000 beyond),
/// while frames that only grow (the default, running totals) are folded once.
#[test]
fn window_frames_are_bounded_by_the_work_limit() {
    let mut db = Database::with_limits(Limits { max_rows: 1_000, max_work: 64_000, ..Limits::default() });
    db.execute("CREATE TABLE w (id INT PRIMARY KEY, v INT)").expect("create");
    let values: Vec<String> = (0..900).map(|i| format!("({i}, {})", i % 7)).collect();
    db.execute(&format!("INSERT INTO w VALUES {}", values.join(","))).expect("insert");
    // Growing frames: 900 visits each.
    for sql in [
        "SELECT sum(v) OVER (ORDER BY id) FROM w",
        "SELECT count(*) OVER (), max(v) OVER (PARTITION BY v) FROM w",
        "SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 5 FOLLOWING) FROM w",
        // A small moving frame: 900 × 11 visits, under 64,000.
        "SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) FROM w",
    ] {
        assert_eq!(state(&mut db, sql), "ok", "{sql}");
    }
    // 900 × ~200 frame rows: over the bound.
    let moving = "SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN 100 PRECEDING AND 100 FOLLOWING) FROM w";
    assert_eq!(state(&mut db, moving), "54000");
    let moving = "SELECT min(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM w";
    assert_eq!(state(&mut db, moving), "54000");
}

/// Text a statement computes is charged to `Limits::max_computed_bytes`: a string doubled
/// by a recursive query, or made long by a cross join, fails with 54000 once the statement
/// has made that much, long before memory runs out; the same statements kept small run.
#[test]
fn computed_text_is_bounded_per_statement() {
    let mut db = Database::with_limits(Limits { max_computed_bytes: 1 << 20, ..Limits::default() });
    let doubling = |bound: usize| {
        format!(
            "WITH RECURSIVE r(s) AS (SELECT 'ab' UNION ALL SELECT s || s FROM r WHERE length(s) < {bound}) \
             SELECT max(length(s)) FROM r"
        )
    };
    assert_eq!(state(&mut db, &doubling(1_000)), "ok");
    assert_eq!(state(&mut db, &doubling(1 << 40)), "54000");
    db.execute("CREATE TABLE big (id INT PRIMARY KEY, s TEXT)").expect("create");
    let text = "x".repeat(1_000);
    for i in 0..100 {
        db.execute(&format!("INSERT INTO big VALUES ({i}, '{text}')")).expect("insert");
    }
    assert_eq!(state(&mut db, "SELECT count(*) FROM big a, big b WHERE length(a.s || b.s) > 0"), "54000");
    assert_eq!(state(&mut db, "SELECT count(*) FROM big a, big b WHERE a.id < 3 AND length(a.s || b.s) > 0"), "ok");
    assert_eq!(state(&mut db, "SELECT count(*) FROM big WHERE length(upper(s)) = 1000"), "ok", "100 KB of text");
}

/// Rows a statement keeps (scans, join results) are charged by their bytes, so a join of
/// wide rows stops at `max_materialized_bytes` (54000) long before `max_rows`.
#[test]
fn materialized_rows_are_bounded_by_bytes_per_statement() {
    let mut db = Database::with_limits(Limits { max_materialized_bytes: 4 << 20, ..Limits::default() });
    db.execute("CREATE TABLE wide (id INT PRIMARY KEY, s TEXT)").expect("create");
    let text = "x".repeat(10_000);
    for i in 0..40 {
        db.execute(&format!("INSERT INTO wide VALUES ({i}, '{text}')")).expect("insert");
    }
    // 1,600 joined rows of 20 KB each: 32 MB, over the 4 MiB bound.
    assert_eq!(state(&mut db, "SELECT count(*) FROM wide a, wide b"), "54000");
    assert_eq!(state(&mut db, "SELECT count(*) FROM wide a RIGHT JOIN wide b ON a.id < b.id"), "54000");
    // The table alone (400 KB) and a narrow join are fine.
    assert_eq!(state(&mut db, "SELECT count(*) FROM wide"), "ok");
    assert_eq!(state(&mut db, "SELECT count(*) FROM wide a JOIN wide b ON a.id = b.id"), "ok");
    assert_eq!(state(&mut db, "SELECT count(*) FROM (SELECT id FROM wide) a, (SELECT id FROM wide) b"), "ok");
}

#[test]
fn to_char_templates_are_bounded() {
    let mut db = db();
    for value in ["DATE '2021-01-01'", "INTERVAL '1 day'", "12", "1.5", "CAST(1.5 AS REAL)"] {
        let long = format!("SELECT to_char({value}, '{}')", "9999".repeat(2_000));
        assert_eq!(state(&mut db, &long), "54000", "{value}");
        for template in ["FM", "€\\\"\"", "\"", "\\", "FMFM", "THth", "EEEE", "V", "RNRN"] {
            let sql = format!("SELECT to_char({value}, '{template}')");
            assert!(matches!(state(&mut db, &sql), "ok" | "42601" | "22003" | "22P02"), "{sql}");
        }
    }
    // The longest template, each part at its widest: a shift by 4,000 digits, Roman numerals.
    let shift = format!("SELECT to_char(1.5, '9V{}')", "9".repeat(4_000));
    assert_eq!(state(&mut db, &shift), "ok");
    let shift = format!("SELECT to_char(CAST(1.5 AS DOUBLE PRECISION), '9.{}EEEE')", "9".repeat(4_000));
    assert_eq!(state(&mut db, &shift), "ok");
    let roman = format!("SELECT to_char(1, '{}')", "RN".repeat(2_048));
    assert_eq!(state(&mut db, &roman), "ok");
    // ISO weeks of the widest intervals: PostgreSQL's C int arithmetic, without overflow.
    for value in ["178000000 years 11 mons 2147483647 days", "-178000000 years -11 mons -2147483647 days"] {
        let sql = format!("SELECT to_char(INTERVAL '{value}', 'IW IYYY IYY IY I IDDD')");
        assert_eq!(state(&mut db, &sql), "ok", "{sql}");
    }
}

#[test]
fn deeply_nested_or_huge_jsonb_fails_cleanly() {
    let mut db = db();
    db.execute("CREATE TABLE j (id INT PRIMARY KEY, d JSONB)").expect("create");
    let state_with = |db: &mut Database, sql: &str, p: &str| match db.execute_with(sql, &[Value::Text(p.to_string())]) {
        Ok(_) => "ok",
        Err(e) => e.sqlstate(),
    };
    // 100,000 open brackets (a parameter: the statement text itself is bounded).
    let deep = "[".repeat(100_000);
    assert_eq!(state_with(&mut db, "INSERT INTO j VALUES (1, $1)", &deep), "54001");
    assert_eq!(state_with(&mut db, "SELECT $1::jsonb", &deep), "54001");
    let objects = "{\"a\":".repeat(100_000);
    assert_eq!(state_with(&mut db, "SELECT $1::jsonb -> 'a'", &objects), "54001");
    // Nesting within the bound works, and so do operators over it.
    let ok = format!("{}{}", "[".repeat(500), "]".repeat(500));
    assert_eq!(state_with(&mut db, "INSERT INTO j VALUES (2, $1)", &ok), "ok");
    assert_eq!(state(&mut db, "SELECT d @> d, d -> 0, jsonb_pretty(d), d || d FROM j"), "ok");
    // Unbalanced, truncated and over-long documents.
    assert_eq!(state_with(&mut db, "SELECT $1::jsonb", &"]".repeat(10)), "22P02");
    assert_eq!(state_with(&mut db, "SELECT $1::jsonb", "{\"a\":[1,2,{\"b\":"), "22P02");
    let huge = format!("\"{}\"", "x".repeat(pistou_sql::jsonb::MAX_DOCUMENT));
    assert_eq!(state_with(&mut db, "SELECT $1::jsonb", &huge), "54000");
}
