//! The same statements on the gateway and on the machine's PostgreSQL (127.0.0.1:5432,
//! database `test`, user `postgres`, trust auth), compared result by result: rows as text,
//! errors by SQLSTATE and message. An unreachable PostgreSQL fails the test.

mod support;

use pistou_gateway::GatewayConfig;
use std::process::Stdio;
use std::time::Duration;
use support::{bounded, connect, postgres, start};
use tokio_postgres::{Client, SimpleQueryMessage};

/// What one statement gave.
#[derive(Debug, PartialEq)]
enum Result {
    Rows(Vec<Vec<Option<String>>>),
    /// A statement without rows: the count of its command tag (0 for SAVEPOINT, …).
    Done(u64),
    Error {
        code: String,
        message: String,
    },
}

async fn run(client: &Client, sql: &str) -> Result {
    match client.simple_query(sql).await {
        Ok(messages) => {
            let mut rows = Vec::new();
            let mut done = None;
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(r) => {
                        rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
                    }
                    SimpleQueryMessage::CommandComplete(n) => done = Some(n),
                    _ => {}
                }
            }
            match done {
                Some(n) if rows.is_empty() && n == 0 => Result::Done(0),
                Some(n) if rows.is_empty() => Result::Done(n),
                _ => Result::Rows(rows),
            }
        }
        Err(e) => match e.as_db_error() {
            Some(db) => Result::Error { code: db.code().code().to_string(), message: db.message().to_string() },
            None => Result::Error { code: "none".into(), message: e.to_string() },
        },
    }
}

/// Runs `script` on both servers, one statement after the other, and compares each result.
/// `setup` runs on PostgreSQL only first (the gateway's cluster is new for every test).
async fn compare(setup: &[&str], script: &[&str]) -> Vec<Result> {
    let pg = postgres().await;
    for sql in setup {
        pg.batch_execute(sql).await.unwrap_or_else(|e| panic!("PostgreSQL setup {sql}: {e}"));
    }
    let h = start(GatewayConfig::default()).await;
    let gw = connect(h.addr).await;
    let mut results = Vec::new();
    for sql in script {
        let (expected, got) = (run(&pg, sql).await, run(&gw, sql).await);
        assert_eq!(got, expected, "statement {sql}: Pistou (left) differs from PostgreSQL (right)");
        results.push(got);
    }
    h.stop().await;
    results
}

fn error(code: &str) -> impl Fn(&Result) -> bool + '_ {
    move |r| matches!(r, Result::Error { code: c, .. } if c == code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "SAVEPOINT a",
            "RELEASE SAVEPOINT a",
            "ROLLBACK TO SAVEPOINT a",
            "CREATE TABLE parity_sp (id INT PRIMARY KEY, body TEXT)",
            "BEGIN",
            "ROLLBACK TO nosuch",
            "SELECT 1",
            "ROLLBACK",
            "BEGIN",
            "INSERT INTO parity_sp VALUES (1, 'one')",
            "SAVEPOINT \"_pg3_1\"",
            "INSERT INTO parity_sp VALUES (1, 'dup')",
            "SELECT 1",
            "RELEASE SAVEPOINT \"_pg3_1\"",
            "ROLLBACK TO SAVEPOINT nosuch",
            "SELECT 1",
            "ROLLBACK TO SAVEPOINT \"_pg3_1\"",
            "SELECT id, body FROM parity_sp ORDER BY id",
            // A name may repeat: the latest wins; RELEASE and ROLLBACK TO find it.
            "SAVEPOINT s",
            "SAVEPOINT s",
            "SELECT count(*) FROM parity_sp",
            "RELEASE s",
            "ROLLBACK TO s",
            "RELEASE SAVEPOINT s",
            "ROLLBACK TO s",
            "ROLLBACK TO \"_pg3_1\"",
            // RELEASE drops the later savepoints too.
            "SAVEPOINT x",
            "SAVEPOINT y",
            "RELEASE x",
            "ROLLBACK TO y",
            "ROLLBACK TO \"_pg3_1\"",
            "SAVEPOINT _pg3_1", // unquoted: the same (lower-case) name
            "SELECT 1/0",
            "ROLLBACK TO \"_pg3_1\"",
            "INSERT INTO parity_sp VALUES (2, 'two')",
            "COMMIT",
            "SELECT id, body FROM parity_sp ORDER BY id",
            // COMMIT of a failed block rolls back, even with savepoints.
            "BEGIN",
            "SAVEPOINT a",
            "INSERT INTO parity_sp VALUES (3, 'three')",
            "SELECT 1/0",
            "COMMIT",
            "SELECT count(*) FROM parity_sp",
            // Rows written since a savepoint are undone by ROLLBACK TO; later writes commit.
            "BEGIN",
            "SAVEPOINT w",
            "INSERT INTO parity_sp VALUES (3, 'three')",
            "UPDATE parity_sp SET body = 'changed' WHERE id = 1",
            "DELETE FROM parity_sp WHERE id = 2",
            "ROLLBACK TO w",
            "SELECT id, body FROM parity_sp ORDER BY id",
            "INSERT INTO parity_sp VALUES (4, 'four')",
            "COMMIT",
            "SELECT id, body FROM parity_sp ORDER BY id",
        ];
        let results = compare(&["DROP TABLE IF EXISTS parity_sp"], &script).await;
        // The comparison is only as good as the script: it did hit the error paths.
        assert!(error("25P01")(&results[0]) && error("25P01")(&results[2]));
        assert_eq!(results.iter().filter(|r| error("3B001")(r)).count(), 4);
        assert_eq!(results.iter().filter(|r| error("25P02")(r)).count(), 4);
        let rows = |v: &[(&str, &str)]| {
            Result::Rows(v.iter().map(|(a, b)| vec![Some(a.to_string()), Some(b.to_string())]).collect())
        };
        assert_eq!(results[36], rows(&[("1", "one"), ("2", "two")]));
        assert_eq!(results[42], Result::Rows(vec![vec![Some("2".into())]]));
        assert_eq!(results[49], rows(&[("1", "one"), ("2", "two")]));
        assert_eq!(results[52], rows(&[("1", "one"), ("2", "two"), ("4", "four")]));
        postgres().await.batch_execute("DROP TABLE parity_sp").await.expect("clean up");
    })
    .await;
}

/// psql's ON_ERROR_ROLLBACK wraps every statement of a block in a savepoint and rolls back
/// to it when the statement fails: the rest of the block goes on. Same output as PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_on_error_rollback_keeps_the_block_going() {
    bounded(120, async {
        let script = "\\set ON_ERROR_ROLLBACK on\n\
             DROP TABLE IF EXISTS parity_psql;\n\
             CREATE TABLE parity_psql (id INT PRIMARY KEY, body TEXT);\n\
             BEGIN;\n\
             INSERT INTO parity_psql VALUES (1, 'one');\n\
             INSERT INTO parity_psql VALUES (1, 'dup');\n\
             SELECT 1/0;\n\
             INSERT INTO parity_psql VALUES (2, 'two');\n\
             COMMIT;\n\
             SELECT id, body FROM parity_psql ORDER BY id;\n\
             DROP TABLE parity_psql;\n";
        let h = start(GatewayConfig::default()).await;
        let pistou = psql(&h.addr.port().to_string(), "pistou", "tester", script).await;
        let postgres = psql("5432", "test", "postgres", script).await;
        assert_eq!(pistou, postgres, "psql output on Pistou (left) and PostgreSQL (right)");
        assert!(pistou.contains(" 2 | two") && pistou.contains("division by zero"), "{pistou}");
        h.stop().await;
    })
    .await;
}

async fn psql(port: &str, db: &str, user: &str, script: &str) -> String {
    psql_output(port, db, user, script, true).await
}

/// Output (stdout and stderr) of psql running `script` (`quiet`: without command tags),
/// notices and warnings included.
async fn psql_output(port: &str, db: &str, user: &str, script: &str, quiet: bool) -> String {
    let mut args = vec!["-X", "-h", "127.0.0.1", "-p", port, "-U", user, "-d", db, "-v", "VERBOSITY=terse"];
    if quiet {
        args.push("-q");
    }
    let child = tokio::process::Command::new("psql")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("psql is required by this test");
    let mut child = child;
    let mut stdin = child.stdin.take().expect("psql stdin");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, script.as_bytes()).await.expect("write the script");
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("psql did not finish")
        .expect("psql");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `IF [NOT] EXISTS` that skips sends PostgreSQL's NOTICE (psql prints it), and misplaced
/// transaction commands their WARNINGs, with the same SQLSTATEs (psql's verbose form shows
/// them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_and_warnings_are_postgres() {
    bounded(120, async {
        let script = "\\set VERBOSITY default\n\
             DROP TABLE IF EXISTS parity_nx_t;\n\
             DROP VIEW IF EXISTS parity_nx_v;\n\
             DROP SEQUENCE IF EXISTS parity_nx_s;\n\
             DROP INDEX IF EXISTS parity_nx_i;\n\
             CREATE TABLE parity_nx (id INT PRIMARY KEY);\n\
             CREATE TABLE IF NOT EXISTS parity_nx (id INT);\n\
             CREATE INDEX parity_nx_ix ON parity_nx (id);\n\
             CREATE INDEX IF NOT EXISTS parity_nx_ix ON parity_nx (id);\n\
             CREATE SEQUENCE parity_nx_sq;\n\
             CREATE SEQUENCE IF NOT EXISTS parity_nx_sq;\n\
             ALTER TABLE IF EXISTS parity_nx_none ADD COLUMN c INT;\n\
             ALTER TABLE parity_nx ADD COLUMN IF NOT EXISTS id INT;\n\
             ALTER TABLE parity_nx DROP COLUMN IF EXISTS zz;\n\
             ALTER TABLE parity_nx DROP CONSTRAINT IF EXISTS zz;\n\
             COMMIT;\n\
             ROLLBACK;\n\
             SET LOCAL work_mem = '1MB';\n\
             BEGIN;\n\
             BEGIN;\n\
             ROLLBACK;\n\
             DROP TABLE IF EXISTS parity_nx, parity_nx_b;\n\
             DROP SEQUENCE parity_nx_sq;\n";
        let setup = "DROP TABLE IF EXISTS parity_nx; DROP SEQUENCE IF EXISTS parity_nx_sq";
        postgres().await.batch_execute(setup).await.expect("PostgreSQL setup");
        let h = start(GatewayConfig::default()).await;
        let pistou = psql_output(&h.addr.port().to_string(), "pistou", "tester", script, false).await;
        let postgres = psql_output("5432", "test", "postgres", script, false).await;
        assert_eq!(pistou, postgres, "psql output on Pistou (left) and PostgreSQL (right)");
        assert_eq!(pistou.matches(", skipping").count(), 12, "{pistou}");
        h.stop().await;
    })
    .await;
}

/// now() and its relatives: the transaction's time, the same for every statement of a
/// transaction, written by INSERT as PostgreSQL writes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_time_behaves_as_in_postgres() {
    bounded(120, async {
        let script = [
            "SET TIME ZONE 'UTC'",
            "CREATE TABLE parity_hist (id INT PRIMARY KEY, mtime TIMESTAMP, day DATE)",
            "SELECT now() = current_timestamp, now() = transaction_timestamp(), current_date = now()::date, \
             localtimestamp = now()::timestamp, now() > '2024-01-01 00:00:00+00', now() > current_date",
            "BEGIN",
            "INSERT INTO parity_hist VALUES (1, CURRENT_TIMESTAMP, current_date)",
            "SELECT mtime = now(), day = current_date, mtime = localtimestamp FROM parity_hist",
            "INSERT INTO parity_hist VALUES (2, now(), now())",
            "SELECT min(mtime) = max(mtime), min(day) = max(day) FROM parity_hist",
            "COMMIT",
            "SELECT id, mtime < now(), day <= current_date FROM parity_hist ORDER BY id",
        ];
        let results = compare(&["DROP TABLE IF EXISTS parity_hist"], &script).await;
        let t = || Some("t".to_string());
        assert_eq!(results[2], Result::Rows(vec![vec![t(), t(), t(), t(), t(), t()]]));
        assert_eq!(results[5], Result::Rows(vec![vec![t(), t(), t()]]));
        assert_eq!(results[7], Result::Rows(vec![vec![t(), t()]]));
        postgres().await.batch_execute("DROP TABLE parity_hist").await.expect("clean up");

        // Pistou only: the text form, the value (the client's clock when the transaction
        // began), one value per transaction, and what is refused.
        let h = start(GatewayConfig::default()).await;
        let gw = connect(h.addr).await;
        let now_text = |r: Result| match r {
            Result::Rows(rows) => rows[0][0].clone().unwrap_or_default(),
            other => panic!("{other:?}"),
        };
        let before = std::time::SystemTime::now();
        run(&gw, "BEGIN").await;
        let first = now_text(run(&gw, "SELECT now()").await);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = now_text(run(&gw, "SELECT statement_timestamp()::text").await);
        run(&gw, "COMMIT").await;
        let later = now_text(run(&gw, "SELECT now()").await);
        assert_eq!(first, second);
        assert!(regex_like_timestamptz(&first), "{first}");
        let parse = |s: &str| pistou_sql::temporal::parse_timestamptz(s).expect("parses");
        let parsed = parse(&first);
        assert!(parse(&later) > parsed, "{later} after {first}");
        let began = before.duration_since(std::time::UNIX_EPOCH).expect("clock").as_micros() as i64;
        assert!((parsed - began).abs() < 5_000_000, "{first} is not the client's time");
        assert!(error("0A000")(&run(&gw, "SELECT clock_timestamp()").await), "no clock is read");
        h.stop().await;
    })
    .await;
}

/// `YYYY-MM-DD HH:MM:SS[.f]+00`, PostgreSQL's output with TimeZone UTC.
fn regex_like_timestamptz(s: &str) -> bool {
    let Some(body) = s.strip_suffix("+00") else { return false };
    let (main, fraction) = body.split_once('.').unwrap_or((body, "0"));
    let pattern = "dddd-dd-dd dd:dd:dd";
    main.len() == pattern.len()
        && main.chars().zip(pattern.chars()).all(|(c, p)| if p == 'd' { c.is_ascii_digit() } else { c == p })
        && (1..=6).contains(&fraction.len())
        && fraction.chars().all(|c| c.is_ascii_digit())
}

/// SET / SHOW of durations and set_config, compared with PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_and_set_config_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "SET statement_timeout = '5s'",
            "SHOW statement_timeout",
            "SET statement_timeout = 90000",
            "SHOW statement_timeout",
            "SET statement_timeout TO '1500ms'",
            "SHOW statement_timeout",
            "SET statement_timeout = '60000 ms'",
            "SHOW statement_timeout",
            "SET statement_timeout = '5S'",
            "SET statement_timeout = '-1'",
            "SET statement_timeout = '2147483648'",
            "RESET statement_timeout",
            "SHOW statement_timeout",
            "SELECT set_config('statement_timeout', '2min', false)",
            "SHOW statement_timeout",
            "SELECT current_setting('statement_timeout')",
            "SELECT set_config('TimeZone', 'UTC', false)",
            "SHOW TimeZone",
            "SELECT set_config('myapp.user', '42', false) AS a, current_setting('myapp.user') AS b",
            "SELECT set_config('statement_timeout', '7s', true)",
            "SHOW statement_timeout",
            "SELECT set_config('nope', 'x', false)",
            "SELECT set_config('statement_timeout', 'soon', false)",
            "SHOW statement_timeout",
            // SET LOCAL and set_config(…, true) last until the end of the block; a block
            // that does not commit undoes its SETs.
            "SET LOCAL statement_timeout = '5s'",
            "SHOW statement_timeout",
            "BEGIN",
            "SET LOCAL statement_timeout = '10s'",
            "SELECT set_config('myapp.user', '7', true)",
            "SHOW statement_timeout",
            "SELECT current_setting('myapp.user')",
            "COMMIT",
            "SHOW statement_timeout",
            "SELECT current_setting('myapp.user')",
            "BEGIN",
            "SET statement_timeout = '11s'",
            "ROLLBACK",
            "SHOW statement_timeout",
            "BEGIN",
            "SET statement_timeout = '12s'",
            "SELECT 1/0",
            "COMMIT",
            "SHOW statement_timeout",
            "BEGIN",
            "SET LOCAL statement_timeout = '7s'",
            "SET statement_timeout = '8s'",
            "COMMIT",
            "SHOW statement_timeout",
        ];
        let results = compare(&[], &script).await;
        let one = |s: &str| Result::Rows(vec![vec![Some(s.to_string())]]);
        assert_eq!(results[1], one("5s"));
        assert_eq!(results[3], one("90s"));
        assert_eq!(results[5], one("1500ms"));
        assert_eq!(results[7], one("1min"));
        assert_eq!(results.iter().filter(|r| error("22023")(r)).count(), 4);
        assert_eq!(results[20], one("2min")); // a local change outside a block does not last
        assert!(error("42704")(&results[21]));
        assert_eq!((&results[29], &results[30]), (&one("10s"), &one("7")));
        assert_eq!((&results[32], &results[33]), (&one("2min"), &one("42")));
        assert_eq!((&results[37], &results[42], &results[47]), (&one("2min"), &one("2min"), &one("8s")));
    })
    .await;
}

/// statement_timeout is enforced: a statement running longer is cancelled with 57014 (in a
/// block, the block fails), and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_long_statements() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let gw = connect(h.addr).await;
        assert_eq!(run(&gw, "CREATE TABLE big (id INT PRIMARY KEY, v INT)").await, Result::Done(0));
        let values: Vec<String> = (0..800).map(|i| format!("({i}, {i})")).collect();
        let insert = format!("INSERT INTO big VALUES {}", values.join(", "));
        assert_eq!(run(&gw, &insert).await, Result::Done(800));
        let slow = "SELECT count(*) FROM big a, big b WHERE a.v + b.v >= 0";
        assert_eq!(run(&gw, slow).await, Result::Rows(vec![vec![Some("640000".into())]]));
        run(&gw, "SET statement_timeout = '20ms'").await;
        let cancelled = run(&gw, slow).await;
        assert_eq!(
            cancelled,
            Result::Error { code: "57014".into(), message: "canceling statement due to statement timeout".into() }
        );
        run(&gw, "BEGIN").await;
        assert!(error("57014")(&run(&gw, slow).await));
        assert!(error("25P02")(&run(&gw, "SELECT 1").await));
        run(&gw, "ROLLBACK").await;
        // (Not before: the in-process replicas may still be busy with the cancelled joins.)
        run(&gw, "SET statement_timeout = 0").await;
        assert_eq!(run(&gw, "SELECT 1").await, Result::Rows(vec![vec![Some("1".into())]]));
        assert_eq!(run(&gw, "SELECT count(*) FROM big").await, Result::Rows(vec![vec![Some("800".into())]]));
        h.stop().await;
    })
    .await;
}

/// Interval columns through the gateway and the replicas: stored, compared by length,
/// indexed, updated and deleted as in PostgreSQL, and as a primary key (whose deletions the
/// replicas check by reading the key's length back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_columns_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_iv (id INT PRIMARY KEY, d INTERVAL, n INTERVAL NOT NULL DEFAULT '1 day')",
            "CREATE INDEX parity_iv_d ON parity_iv (d)",
            "INSERT INTO parity_iv VALUES (1, '1 day 2 hours', '3 mons'), (2, INTERVAL '90 minutes', '1 year'), (3, NULL, '2 days')",
            "INSERT INTO parity_iv (id, d) VALUES (4, '30 days')",
            "SELECT id, d, n FROM parity_iv ORDER BY d, id",
            "SELECT id FROM parity_iv WHERE d = INTERVAL '1 mon'",
            "SELECT sum(d), max(n), min(d) FROM parity_iv",
            "UPDATE parity_iv SET d = d * 2 + n WHERE id = 2 RETURNING d",
            "SELECT id, TIMESTAMP '2021-01-31 00:00:00' + n FROM parity_iv ORDER BY id",
            "DELETE FROM parity_iv WHERE d > '2 days'",
            "SELECT count(*) FROM parity_iv",
            "DROP TABLE parity_iv",
            "CREATE TABLE parity_ivk (d INTERVAL PRIMARY KEY, n INT)",
            "INSERT INTO parity_ivk VALUES ('1 mon', 1), ('-2 days 03:00:00', 2), ('1 year', 3)",
            "INSERT INTO parity_ivk VALUES ('30 days', 4)",
            "SELECT d, n FROM parity_ivk WHERE d = '720:00:00'",
            "UPDATE parity_ivk SET d = '2 mons' WHERE n = 3",
            "UPDATE parity_ivk SET d = '30 days' WHERE d = '1 mon'",
            "INSERT INTO parity_ivk VALUES ('1 mon', 5) ON CONFLICT (d) DO UPDATE SET n = excluded.n",
            "DELETE FROM parity_ivk WHERE d = '60 days' RETURNING n",
            "SELECT d, n FROM parity_ivk ORDER BY d",
            "DELETE FROM parity_ivk",
            "SELECT count(*) FROM parity_ivk",
            "DROP TABLE parity_ivk",
        ];
        compare(&["DROP TABLE IF EXISTS parity_iv", "DROP TABLE IF EXISTS parity_ivk"], &script).await;
    })
    .await;
}

/// ALTER TABLE ... RENAME TO through the gateway and the replicas: the rows, indexes,
/// constraints and sequence stay with the table, a table created under the old name is new,
/// and renames in a block commit or roll back with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renamed_tables_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_ra (id SERIAL PRIMARY KEY, code TEXT UNIQUE, v INT)",
            "CREATE INDEX parity_ra_v ON parity_ra (v)",
            "INSERT INTO parity_ra (code, v) VALUES ('x', 10), ('y', 20)",
            "CREATE VIEW parity_rv AS SELECT parity_ra.code FROM parity_ra WHERE v > 10",
            "ALTER TABLE parity_ra RENAME TO parity_rb",
            "SELECT * FROM parity_rv",
            "ALTER VIEW parity_rv RENAME TO parity_rw",
            "SELECT * FROM parity_rw",
            "ALTER INDEX parity_ra_v RENAME TO parity_rb_v",
            "SELECT indexname FROM pg_indexes WHERE tablename = 'parity_rb' AND indexname LIKE '%_v'",
            "SELECT id, code, v FROM parity_rb ORDER BY id",
            "SELECT * FROM parity_ra",
            "INSERT INTO parity_rb (code, v) VALUES ('z', 30) RETURNING id",
            "SELECT id FROM parity_rb WHERE v = 20",
            "INSERT INTO parity_rb (code, v) VALUES ('x', 1)",
            "UPDATE parity_rb SET v = v + 1 WHERE code = 'x'",
            "CREATE TABLE parity_ra (id INT PRIMARY KEY, w TEXT)",
            "SELECT count(*) FROM parity_ra",
            "INSERT INTO parity_ra VALUES (1, 'new')",
            "SELECT * FROM parity_ra",
            "SELECT id, code, v FROM parity_rb ORDER BY id",
            "ALTER TABLE parity_ra RENAME TO parity_rb",
            "ALTER TABLE parity_nosuch RENAME TO parity_rc",
            // Renames in a block: rolled back, then committed.
            "BEGIN",
            "ALTER TABLE parity_rb RENAME TO parity_rc",
            "ROLLBACK",
            "SELECT count(*) FROM parity_rb",
            "BEGIN",
            "ALTER TABLE parity_rb RENAME TO parity_rc",
            "ALTER TABLE parity_ra RENAME TO parity_rb",
            "ALTER TABLE parity_rc RENAME TO parity_ra",
            "COMMIT",
            "SELECT id, w FROM parity_rb",
            "SELECT id, code, v FROM parity_ra ORDER BY id",
            // Gaps differ (Pistou's values come in cached blocks, docs/sql.md).
            "INSERT INTO parity_ra (code, v) VALUES ('w', 40) RETURNING id > 4",
            "DELETE FROM parity_ra WHERE code = 'y'",
            "SELECT code FROM parity_ra ORDER BY code",
            "DROP VIEW parity_rw",
            "DROP TABLE parity_ra",
            "DROP TABLE parity_rb",
        ];
        compare(
            &["DROP VIEW IF EXISTS parity_rv, parity_rw", "DROP TABLE IF EXISTS parity_ra, parity_rb, parity_rc"],
            &script,
        )
        .await;
    })
    .await;
}

/// ALTER SEQUENCE … RENAME TO through the gateway and the replicas: the counter continues
/// under the new name (a restart would collide with the ids already used), the serial
/// column follows, and a new sequence under the old name starts afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renamed_sequences_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_sq (id SERIAL PRIMARY KEY, v TEXT)",
            "INSERT INTO parity_sq (v) VALUES ('a'), ('b')",
            "ALTER SEQUENCE parity_sq_id_seq RENAME TO parity_sq_ids",
            // The session's currval follows the sequence, not its name.
            "SELECT currval('parity_sq_ids'), lastval()",
            "SELECT currval('parity_sq_id_seq')",
            // Gaps differ (Pistou's values come in cached blocks, docs/sql.md).
            "INSERT INTO parity_sq (v) VALUES ('c') RETURNING id > 2",
            "SELECT nextval('parity_sq_ids') > 3",
            "SELECT currval('parity_sq_ids') > 3",
            "SELECT nextval('parity_sq_id_seq')",
            "SELECT pg_get_serial_sequence('parity_sq', 'id')",
            "CREATE SEQUENCE parity_sq_id_seq",
            "SELECT nextval('parity_sq_id_seq')",
            "ALTER SEQUENCE parity_sq RENAME TO parity_sq_x",
            "BEGIN",
            "ALTER SEQUENCE parity_sq_ids RENAME TO parity_sq_ids2",
            "ROLLBACK",
            "SELECT nextval('parity_sq_ids') > 4",
            "SELECT count(DISTINCT id), count(*) FROM parity_sq",
            // A table whose foreign key names a renamed table still takes writes.
            "CREATE TABLE parity_sq_child (id INT PRIMARY KEY, p INT REFERENCES parity_sq (id))",
            "ALTER TABLE parity_sq RENAME TO parity_sq2",
            "INSERT INTO parity_sq_child SELECT 1, min(id) FROM parity_sq2",
            "INSERT INTO parity_sq_child VALUES (2, -1)",
            "SELECT count(*) FROM parity_sq_child",
            "DROP TABLE parity_sq_child",
            "DROP TABLE parity_sq2",
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'parity_sq_ids%'",
            "DROP SEQUENCE parity_sq_id_seq",
        ];
        compare(
            &["DROP TABLE IF EXISTS parity_sq", "DROP SEQUENCE IF EXISTS parity_sq_id_seq, parity_sq_ids"],
            &script,
        )
        .await;
    })
    .await;
}

/// CREATE TABLE … AS and SELECT … INTO: columns named and typed by the query (or the
/// given names), its rows, WITH NO DATA, IF NOT EXISTS, in a block and rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_as_behaves_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_src (id INT PRIMARY KEY, v VARCHAR(10), n NUMERIC(5,2), c CHAR(3))",
            "INSERT INTO parity_src VALUES (1, 'a', 1.5, 'x'), (2, 'b', 2.25, 'yy'), (3, NULL, NULL, NULL)",
            "CREATE TABLE parity_c1 AS SELECT * FROM parity_src WHERE id < 3",
            "SELECT * FROM parity_c1 ORDER BY id",
            "INSERT INTO parity_c1 VALUES (1, 'again', 0, 'z')",
            "INSERT INTO parity_c1 VALUES (1, 'much too long', 0, 'z')",
            "SELECT count(*) FROM parity_c1 WHERE id = 1",
            "CREATE TABLE parity_c2 (x, \"Y\") AS SELECT id, v, n * 2 AS m, c FROM parity_src",
            "SELECT x, \"Y\", m, c FROM parity_c2 ORDER BY x",
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_name = 'parity_c2' ORDER BY ordinal_position",
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
             JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'parity_c1' AND a.attnum > 0 ORDER BY a.attnum",
            "SELECT c || '|', length(c) FROM parity_c1 ORDER BY id",
            "CREATE TABLE parity_c3 AS SELECT * FROM parity_src WITH NO DATA",
            "SELECT count(*) FROM parity_c3",
            "CREATE TABLE IF NOT EXISTS parity_c3 AS SELECT 1",
            "CREATE TABLE parity_c3 AS SELECT 1",
            "SELECT id, v INTO parity_c4 FROM parity_src WHERE v IS NOT NULL",
            "SELECT * FROM parity_c4 ORDER BY id",
            "CREATE TABLE parity_c5 (a, b, c) AS SELECT 1, 2",
            "CREATE TABLE parity_c5 (a, a) AS SELECT 1, 2",
            "CREATE TABLE parity_c5 AS SELECT 'x' AS u, NULL AS nn, count(*), 1 + 1 AS two FROM parity_src",
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_name = 'parity_c5' ORDER BY ordinal_position",
            "SELECT * FROM parity_c5",
            "CREATE TABLE parity_c6 AS SELECT id FROM parity_nosuch",
            "SELECT * FROM parity_c6",
            "BEGIN",
            "SELECT count(*) FROM parity_src",
            "CREATE TABLE parity_c6 AS SELECT id FROM parity_src WHERE id > 1",
            "SELECT id FROM parity_c6 ORDER BY id",
            "ROLLBACK",
            "SELECT * FROM parity_c6",
            "BEGIN",
            "CREATE TABLE parity_c6 AS SELECT id FROM parity_src WHERE id > 1",
            "COMMIT",
            "SELECT id FROM parity_c6 ORDER BY id",
            "DROP TABLE parity_c1, parity_c2, parity_c3, parity_c4, parity_c5, parity_c6, parity_src",
        ];
        let drop = "DROP TABLE IF EXISTS parity_c1, parity_c2, parity_c3, parity_c4, parity_c5, parity_c6, parity_src";
        compare(&[drop], &script).await;
    })
    .await;
}

/// TRUNCATE (one transaction of deletes) and DROP TABLE of several tables, as pgbench -i
/// sends them, compared with PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncate_and_multi_table_drop_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_a (id INT PRIMARY KEY)",
            "CREATE TABLE parity_b (id INT PRIMARY KEY, v TEXT)",
            "CREATE TABLE parity_c (id INT PRIMARY KEY)",
            "INSERT INTO parity_a VALUES (1), (2), (3)",
            "INSERT INTO parity_b VALUES (1, 'x')",
            "TRUNCATE parity_a",
            "SELECT count(*) FROM parity_a",
            "INSERT INTO parity_a VALUES (4)",
            "BEGIN",
            "TRUNCATE TABLE parity_a, parity_b",
            "SELECT count(*) FROM parity_b",
            "ROLLBACK",
            "SELECT count(*) FROM parity_b",
            "TRUNCATE nosuch",
            "TRUNCATE parity_a, nosuch",
            "SELECT count(*) FROM parity_a",
            "DROP TABLE parity_a, nosuch",
            "SELECT count(*) FROM parity_a",
            "drop table if exists parity_a, parity_nosuch, parity_b",
            "SELECT count(*) FROM parity_a",
            "SELECT count(*) FROM parity_c",
            // Several schema changes in one block commit or roll back together.
            "BEGIN",
            "CREATE TABLE parity_d (id INT PRIMARY KEY)",
            "CREATE INDEX parity_d_id ON parity_d (id)",
            "DROP TABLE parity_c, parity_d",
            "ROLLBACK",
            "SELECT count(*) FROM parity_c",
            "SELECT count(*) FROM parity_d",
            "BEGIN",
            "CREATE TABLE parity_d (id INT PRIMARY KEY)",
            "DROP TABLE parity_c",
            "COMMIT",
            "SELECT count(*) FROM parity_c",
            "SELECT count(*) FROM parity_d",
            "DROP TABLE parity_d",
        ];
        let results = compare(&["DROP TABLE IF EXISTS parity_a, parity_b, parity_c, parity_d"], &script).await;
        let count = |n: &str| Result::Rows(vec![vec![Some(n.to_string())]]);
        assert_eq!((&results[6], &results[10], &results[12]), (&count("0"), &count("0"), &count("1")));
        assert!(error("42P01")(&results[13]) && error("42P01")(&results[14]) && error("42P01")(&results[16]));
        assert_eq!((&results[15], &results[17]), (&count("1"), &count("1")));
        assert!(error("42P01")(&results[19]));
        assert_eq!((&results[26], &results[33]), (&count("0"), &count("0")));
        assert!(error("42P01")(&results[27]) && error("42P01")(&results[32]));
    })
    .await;
}

/// Queries and writes around schema changes in one block, as a Django migration runs them
/// (docs/sql.md, "Schema changes in transactions"): what Pistou runs answers as PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_and_schema_changes_in_one_block_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_applied (id INT PRIMARY KEY, name TEXT NOT NULL)",
            "INSERT INTO parity_applied VALUES (1, 'first')",
            "BEGIN",
            "SELECT count(*) FROM parity_applied",
            "CREATE TABLE parity_new (id INT PRIMARY KEY, note TEXT UNIQUE, at TIMESTAMPTZ)",
            "CREATE INDEX parity_new_at ON parity_new (at)",
            "INSERT INTO parity_new VALUES (1, 'a', '2024-05-06 07:08:09+02'), (2, 'b', NULL)",
            "UPDATE parity_new SET note = 'c' WHERE id = 2",
            "INSERT INTO parity_new VALUES (3, 'a', NULL)",
            "ROLLBACK",
            "SELECT count(*) FROM parity_new",
            "BEGIN",
            "CREATE TABLE parity_new (id INT PRIMARY KEY, note TEXT UNIQUE, at TIMESTAMPTZ)",
            "INSERT INTO parity_new VALUES (1, 'a', '2024-05-06 07:08:09+02'), (2, 'b', NULL)",
            "DELETE FROM parity_new WHERE id = 2",
            "SELECT id, note, at FROM parity_new ORDER BY id",
            "INSERT INTO parity_applied VALUES (2, 'second')",
            "SELECT name FROM parity_applied ORDER BY id",
            "COMMIT",
            "SELECT id, note, at FROM parity_new ORDER BY id",
            "SELECT name FROM parity_applied ORDER BY id",
            "DROP TABLE parity_new, parity_applied",
        ];
        let setup = ["SET TIME ZONE 'UTC'", "DROP TABLE IF EXISTS parity_applied, parity_new"];
        let results = compare(&setup, &script).await;
        assert!(error("23505")(&results[8]), "the new table's unique index holds: {:?}", results[8]);
        assert!(error("42P01")(&results[10]), "rolled back with its block");
        let kept = Result::Rows(vec![vec![Some("1".into()), Some("a".into()), Some("2024-05-06 05:08:09+00".into())]]);
        assert_eq!((&results[15], &results[19]), (&kept, &kept));
        let names = Result::Rows(vec![vec![Some("first".into())], vec![Some("second".into())]]);
        assert_eq!(results[20], names);
    })
    .await;
}

/// Command tags as psql prints them (tokio-postgres does not show them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_prints_the_same_command_tags() {
    bounded(120, async {
        let script = "DROP TABLE IF EXISTS parity_tags, parity_tags2;\n\
             CREATE TABLE parity_tags (id INT PRIMARY KEY);\n\
             CREATE TABLE parity_tags2 (id INT PRIMARY KEY);\n\
             INSERT INTO parity_tags VALUES (1);\n\
             BEGIN;\n\
             SAVEPOINT a;\n\
             RELEASE SAVEPOINT a;\n\
             SAVEPOINT b;\n\
             ROLLBACK TO SAVEPOINT b;\n\
             TRUNCATE parity_tags;\n\
             COMMIT;\n\
             SET statement_timeout = '1min';\n\
             SHOW statement_timeout;\n\
             DROP TABLE parity_tags, parity_tags2;\n";
        let h = start(GatewayConfig::default()).await;
        let pistou = psql_output(&h.addr.port().to_string(), "pistou", "tester", script, false).await;
        let postgres = psql_output("5432", "test", "postgres", script, false).await;
        assert_eq!(pistou, postgres, "psql output on Pistou (left) and PostgreSQL (right)");
        for tag in ["SAVEPOINT", "RELEASE", "ROLLBACK", "TRUNCATE TABLE", "DROP TABLE", " 1min"] {
            assert!(pistou.lines().any(|l| l == tag), "{tag} in {pistou}");
        }
        h.stop().await;
    })
    .await;
}

/// SERIAL, IDENTITY and sequences through the gateway, compared with PostgreSQL statement
/// by statement: values as a single session draws them, currval, limits and errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequences_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_seq (id SERIAL PRIMARY KEY, name TEXT)",
            "INSERT INTO parity_seq (name) VALUES ('a'), ('b')",
            "INSERT INTO parity_seq VALUES (DEFAULT, 'c')",
            "INSERT INTO parity_seq (name) VALUES ('d') RETURNING id",
            "SELECT currval('parity_seq_id_seq')",
            "INSERT INTO parity_seq (id, name) VALUES (100, 'explicit')",
            "INSERT INTO parity_seq (name) SELECT name || '2' FROM parity_seq WHERE id < 3 ORDER BY id",
            "SELECT id, name FROM parity_seq ORDER BY id",
            "BEGIN",
            "INSERT INTO parity_seq (name) VALUES ('rolled back') RETURNING id",
            "ROLLBACK",
            "INSERT INTO parity_seq (name) VALUES ('after rollback') RETURNING id",
            "CREATE TABLE parity_ident (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v INT)",
            "INSERT INTO parity_ident (v) VALUES (10) RETURNING id",
            "INSERT INTO parity_ident VALUES (50, 11)",
            "INSERT INTO parity_ident (v) VALUES (12) RETURNING id, v",
            "CREATE TABLE parity_always (id INT GENERATED ALWAYS AS IDENTITY (INCREMENT BY 5 START WITH 10), v TEXT)",
            "INSERT INTO parity_always (v) VALUES ('x'), ('y') RETURNING id",
            "INSERT INTO parity_always (id, v) VALUES (1, 'z')",
            "INSERT INTO parity_always VALUES (DEFAULT, 'w') RETURNING id",
            "CREATE SEQUENCE parity_s",
            "SELECT nextval('parity_s'), nextval('parity_s')",
            "SELECT currval('parity_s')",
            "CREATE SEQUENCE parity_down INCREMENT BY -2 MINVALUE -5",
            "SELECT nextval('parity_down')",
            "SELECT nextval('public.parity_down')",
            "SELECT nextval('parity_down'::regclass)",
            "SELECT nextval('parity_down')",
            "CREATE SEQUENCE parity_s",
            "DROP SEQUENCE parity_seq_id_seq",
            "SELECT nextval('parity_nosuch')",
            "SELECT pg_get_serial_sequence('parity_seq', 'id'), pg_get_serial_sequence('parity_seq', 'name')",
            "SELECT column_name, column_default, is_identity FROM information_schema.columns \
             WHERE table_name IN ('parity_seq', 'parity_ident') ORDER BY table_name, ordinal_position",
            "SELECT relname, relkind FROM pg_class WHERE relname LIKE 'parity%seq' OR relname = 'parity_s' ORDER BY 1",
            "SELECT setval('parity_s', 41)",
            "SELECT nextval('parity_s'), currval('parity_s')",
            "SELECT setval('parity_s', 100, false)",
            "SELECT currval('parity_s')",
            "SELECT nextval('parity_s')",
            "SELECT setval('parity_s', 0)",
            "SELECT setval(pg_get_serial_sequence('\"parity_seq\"', 'id'), coalesce(max(\"id\"), 1), \
             max(\"id\") IS NOT null) FROM \"parity_seq\"",
            "INSERT INTO parity_seq (name) VALUES ('after setval') RETURNING id",
            "SELECT lastval()",
            "SELECT setval('parity_s', 7), lastval()",
            "BEGIN",
            "SELECT nextval('parity_s')",
            "ROLLBACK",
            "SELECT lastval(), currval('parity_s')",
            "DROP TABLE parity_seq",
            "SELECT nextval('parity_seq_id_seq')",
            "DROP SEQUENCE parity_s",
            "DROP SEQUENCE parity_down",
            "DROP TABLE parity_ident, parity_always",
        ];
        let setup = "DROP TABLE IF EXISTS parity_seq, parity_ident, parity_always; \
                     DROP SEQUENCE IF EXISTS parity_s, parity_down";
        let results = compare(&[setup], &script).await;
        let one = |v: &str| Result::Rows(vec![vec![Some(v.to_string())]]);
        assert_eq!((&results[3], &results[4], &results[11]), (&one("4"), &one("4"), &one("8")));
        assert!(error("428C9")(&results[18]) && error("2200H")(&results[27]) && error("2BP01")(&results[29]));
        let two = |a: &str, b: &str| Result::Rows(vec![vec![Some(a.to_string()), Some(b.to_string())]]);
        assert_eq!((&results[35], &results[38]), (&two("42", "42"), &one("100")), "setval");
        assert!(error("22003")(&results[39]) && results[41] == one("101"), "{:?}", &results[39..42]);
        assert_eq!((&results[42], &results[47]), (&one("101"), &two("8", "8")), "lastval");
    })
    .await;
}

/// Temporary tables: they shadow a permanent table of their name, take constraints,
/// indexes and serials, show in pg_temp in the catalog, go with a rolled-back block or
/// at commit with ON COMMIT DROP, and refuse what PostgreSQL refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_tmp (id INT PRIMARY KEY, v TEXT)",
            "INSERT INTO parity_tmp VALUES (1, 'permanent')",
            "CREATE TEMP TABLE parity_tmp (id INT PRIMARY KEY, v TEXT)",
            "SELECT * FROM parity_tmp",
            "INSERT INTO parity_tmp VALUES (2, 'temporary')",
            "SELECT parity_tmp.v FROM parity_tmp WHERE parity_tmp.id = 2",
            "SELECT * FROM public.parity_tmp",
            "SELECT * FROM pg_temp.parity_tmp",
            "UPDATE parity_tmp SET v = 'changed' WHERE id = 2 RETURNING *",
            "INSERT INTO parity_tmp VALUES (2, 'again')",
            "WITH parity_tmp AS (SELECT 42 AS id) SELECT * FROM parity_tmp",
            "SELECT t.v, p.v FROM parity_tmp t JOIN public.parity_tmp p ON p.id < t.id",
            "CREATE TEMPORARY TABLE parity_tmp_s (id SERIAL PRIMARY KEY, x INT UNIQUE, CONSTRAINT parity_pos CHECK (x > 0))",
            "INSERT INTO parity_tmp_s (x) VALUES (5), (6)",
            "INSERT INTO parity_tmp_s (x) VALUES (5)",
            "INSERT INTO parity_tmp_s (x) VALUES (-1)",
            "CREATE INDEX parity_tmp_s_idx ON parity_tmp_s (x)",
            "SELECT c.relname, n.nspname LIKE 'pg_temp%', c.relpersistence, c.relkind FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname LIKE 'parity_tmp%' ORDER BY 1, 2",
            "SELECT table_name, table_type, table_schema LIKE 'pg_temp%' FROM information_schema.tables \
             WHERE table_name LIKE 'parity_tmp%' ORDER BY 1, 2",
            "SELECT indexname, indexdef LIKE 'CREATE INDEX parity_tmp_s_idx ON pg_temp%' FROM pg_indexes \
             WHERE tablename = 'parity_tmp_s' ORDER BY 1",
            "SELECT conname, contype FROM pg_constraint WHERE conname LIKE 'parity_tmp%' OR conname = 'parity_pos' ORDER BY 1",
            // A SERIAL column's sequence named as text is the temporary table's.
            "SELECT nextval('parity_tmp_s_id_seq') > 2",
            "SELECT currval('parity_tmp_s_id_seq') = currval('pg_temp.parity_tmp_s_id_seq')",
            "SELECT nextval('parity_tmp_s_nope_seq')",
            "ALTER TABLE parity_tmp_s DROP CONSTRAINT parity_pos",
            "INSERT INTO parity_tmp_s (x) VALUES (-3)",
            "ALTER TABLE parity_tmp_s RENAME TO parity_tmp_r",
            "SELECT x FROM parity_tmp_r ORDER BY x",
            "DROP INDEX parity_tmp_s_idx",
            "BEGIN",
            "CREATE TEMP TABLE parity_tmp_b AS SELECT x FROM parity_tmp_r",
            "SELECT count(*) FROM parity_tmp_b",
            "ROLLBACK",
            "SELECT count(*) FROM parity_tmp_b",
            "BEGIN",
            "CREATE TEMP TABLE parity_tmp_d (a INT) ON COMMIT DROP",
            "INSERT INTO parity_tmp_d VALUES (1)",
            "SAVEPOINT s1",
            "CREATE TEMP TABLE parity_tmp_e (a INT)",
            "ROLLBACK TO SAVEPOINT s1",
            "SELECT count(*) FROM parity_tmp_d",
            "COMMIT",
            "SELECT * FROM parity_tmp_d",
            "SELECT * FROM parity_tmp_e",
            "SELECT * INTO TEMP parity_tmp_i FROM parity_tmp_r WHERE x > 0",
            "SELECT count(*) FROM parity_tmp_i",
            // ON COMMIT DELETE ROWS: rows live until their transaction commits.
            "CREATE TEMP TABLE parity_tmp_del (id INT PRIMARY KEY, v INT UNIQUE) ON COMMIT DELETE ROWS",
            "INSERT INTO parity_tmp_del VALUES (1, 1), (2, 2) RETURNING id",
            "SELECT count(*) FROM parity_tmp_del",
            "BEGIN",
            "INSERT INTO parity_tmp_del VALUES (1, 1), (2, 2)",
            "UPDATE parity_tmp_del SET v = v + 10 WHERE id = 2",
            "SELECT * FROM parity_tmp_del ORDER BY id",
            "COMMIT",
            "SELECT count(*) FROM parity_tmp_del",
            "BEGIN",
            "INSERT INTO parity_tmp_del VALUES (3, 3)",
            "ROLLBACK",
            "SELECT count(*) FROM parity_tmp_del",
            "CREATE TEMP TABLE parity_tmp_del2 ON COMMIT DELETE ROWS AS SELECT 1 AS a",
            "SELECT count(*) FROM parity_tmp_del2",
            // Indexes named after a temporary table by the engine.
            "DROP INDEX parity_tmp_del_v_key",
            "ALTER TABLE parity_tmp_del DROP CONSTRAINT parity_tmp_del_v_key",
            "CREATE INDEX ON parity_tmp_del (v)",
            "DROP INDEX parity_tmp_del_v_idx",
            "DROP INDEX parity_tmp_del_v_idx",
            // Temporary views, and views over temporary relations, are the session's.
            "CREATE TEMP VIEW parity_tmp_v AS SELECT x FROM parity_tmp_r WHERE x > 0",
            "CREATE VIEW parity_tmp_v2 AS SELECT v.x FROM parity_tmp_v v JOIN parity_tmp_i i ON i.x = v.x",
            "SELECT * FROM parity_tmp_v2 ORDER BY 1",
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_name LIKE 'parity_tmp_v%' ORDER BY 1",
            "SELECT relname, relpersistence, relkind FROM pg_class WHERE relname LIKE 'parity_tmp_v%' ORDER BY 1",
            "SELECT viewname, schemaname LIKE 'pg_temp%' FROM pg_views WHERE viewname LIKE 'parity_tmp_v%' ORDER BY 1",
            "CREATE VIEW public.parity_tmp_v3 AS SELECT * FROM parity_tmp_i",
            "CREATE TEMP VIEW parity_tmp_v4 AS SELECT 1 AS one",
            "DROP VIEW parity_tmp_v4",
            "SELECT * FROM parity_tmp_v4",
            "CREATE TEMP TABLE parity_tmp_p (id INT PRIMARY KEY)",
            "CREATE TEMP TABLE parity_tmp_c (id INT, pid INT REFERENCES parity_tmp_p)",
            "INSERT INTO parity_tmp_c VALUES (1, 7)",
            "CREATE TABLE parity_perm_c (id INT, pid INT REFERENCES parity_tmp_p)",
            "CREATE TEMP TABLE parity_tmp_c2 (id INT, pid INT REFERENCES public.parity_tmp)",
            "DROP TABLE parity_tmp",
            "SELECT * FROM parity_tmp",
            "DROP TABLE parity_tmp",
            "BEGIN",
            "DISCARD ALL",
            "ROLLBACK",
            "DISCARD TEMP",
            "SELECT * FROM parity_tmp_r",
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'parity_tmp%'",
        ];
        compare(&["DROP TABLE IF EXISTS parity_tmp, parity_perm_c"], &script).await;
    })
    .await;
}

/// Each session has its own temporary tables, and they go when it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_belong_to_their_session() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let (a, b) = (connect(h.addr).await, connect(h.addr).await);
        a.batch_execute("CREATE TEMP TABLE mine (id INT PRIMARY KEY, v TEXT); INSERT INTO mine VALUES (1, 'a')")
            .await
            .unwrap();
        let err = b.simple_query("SELECT * FROM mine").await.unwrap_err();
        assert_eq!(support::sqlstate(&err), "42P01");
        b.batch_execute("CREATE TEMP TABLE mine (id INT PRIMARY KEY, v TEXT); INSERT INTO mine VALUES (1, 'b')")
            .await
            .unwrap();
        // The extended protocol (a prepared statement with a parameter) resolves them too.
        for (client, v) in [(&a, "a"), (&b, "b")] {
            let rows = client.query("SELECT v FROM mine WHERE id = $1", &[&1i32]).await.unwrap();
            assert_eq!(rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(), vec![v.to_string()]);
        }
        let temporary = "SELECT count(*)::int FROM pg_class WHERE relname = 'mine' AND relpersistence = 't'";
        assert_eq!(b.query_one(temporary, &[]).await.unwrap().get::<_, i32>(0), 2);
        // Each session sees its own temporary table only, as psql's \dt and \d ask.
        let visible = "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                       WHERE c.relname = 'mine' AND pg_catalog.pg_table_is_visible(c.oid)";
        let (seen_by_a, seen_by_b) = (a.query(visible, &[]).await.unwrap(), b.query(visible, &[]).await.unwrap());
        assert_eq!((seen_by_a.len(), seen_by_b.len()), (1, 1));
        assert_ne!(seen_by_a[0].get::<_, String>(0), seen_by_b[0].get::<_, String>(0));
        let c = connect(h.addr).await;
        assert!(c.query(visible, &[]).await.unwrap().is_empty(), "a session without temporary tables sees none");
        drop(a);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let count: i32 = b.query_one(temporary, &[]).await.unwrap().get(0);
            if count == 1 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the ended session's temporary table is still there");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let rows = b.query("SELECT v FROM mine", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        b.batch_execute("DISCARD TEMP").await.unwrap();
        let err = b.simple_query("SELECT * FROM mine").await.unwrap_err();
        assert_eq!(support::sqlstate(&err), "42P01");
        assert_eq!(b.query_one(temporary, &[]).await.unwrap().get::<_, i32>(0), 0);
        h.stop().await;
    })
    .await;
}

/// Expression indexes through the gateway and the replicas (which compute the entries
/// themselves): unique violations on INSERT, UPDATE and upsert, checks of existing rows at
/// CREATE, IMMUTABLE refusals, lookups, and the catalog's text of the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_indexes_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_ex (id INT PRIMARY KEY, email TEXT, name VARCHAR(20), a INT, b INT, data JSONB)",
            "INSERT INTO parity_ex VALUES (1, 'Ann@X.org', 'Ann', 1, 2, '{\"k\": \"one\"}'), (2, 'bob@y.org', 'Bob', 3, 4, '{}')",
            "CREATE UNIQUE INDEX parity_ex_lower ON parity_ex (lower(email))",
            "CREATE UNIQUE INDEX \"parity_ex_name\" ON \"parity_ex\" ((LOWER(\"name\")))",
            "CREATE INDEX parity_ex_k ON parity_ex ((data->>'k'))",
            "CREATE INDEX parity_ex_sum ON parity_ex ((a + b), b)",
            "INSERT INTO parity_ex VALUES (3, 'ANN@x.ORG', 'Cy', 0, 0, '{}')",
            "INSERT INTO parity_ex VALUES (3, 'cy@z.org', 'BOB', 0, 0, '{}')",
            "INSERT INTO parity_ex VALUES (3, NULL, NULL, 0, 0, '{}'), (4, NULL, NULL, 0, 0, '{}')",
            "UPDATE parity_ex SET email = 'BOB@Y.org' WHERE id = 1",
            "INSERT INTO parity_ex VALUES (1, 'x@y.org', 'x', 0, 0, '{}') ON CONFLICT (id) DO UPDATE SET email = 'bob@Y.ORG'",
            "INSERT INTO parity_ex VALUES (5, 'Bob@Y.org', 'x', 0, 0, '{}') ON CONFLICT DO NOTHING",
            // Upserts on an expression index, named by its expression: the row found through
            // it is updated (its primary key may change); another constraint's conflict is
            // 23505, a row affected twice 21000.
            "INSERT INTO parity_ex VALUES (7, 'ANN@x.org', 'z', 0, 0, '{}') ON CONFLICT (lower(email)) DO UPDATE SET a = parity_ex.a + 10 RETURNING id, a",
            "INSERT INTO parity_ex VALUES (8, 'Bob@Y.org', 'z', 0, 0, '{}') ON CONFLICT ((lower(email))) DO UPDATE SET id = excluded.id RETURNING id, email",
            "INSERT INTO parity_ex VALUES (9, 'q@q', 'ann', 0, 0, '{}') ON CONFLICT (lower(email)) DO UPDATE SET a = 0",
            "INSERT INTO parity_ex VALUES (9, 'q@q', 'q', 0, 0, '{}'), (10, 'Q@Q', 'r', 0, 0, '{}') ON CONFLICT (lower(email)) DO UPDATE SET a = 1",
            "INSERT INTO parity_ex VALUES (11, 'n@n', 'BOB', 0, 0, '{}') ON CONFLICT (lower(name)) WHERE a > 0 DO UPDATE SET b = 99 RETURNING id, b",
            "INSERT INTO parity_ex VALUES (8, 'o@o', 'o', 0, 0, '{}') ON CONFLICT ON CONSTRAINT parity_ex_pkey DO UPDATE SET name = excluded.name RETURNING id, name",
            "SELECT id, email, name, a, b FROM parity_ex ORDER BY id",
            "SELECT id FROM parity_ex WHERE lower(email) = 'ann@x.org'",
            "SELECT id FROM parity_ex WHERE data->>'k' = 'one'",
            "SELECT id FROM parity_ex WHERE a + b = 7 AND b = 4",
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'parity_ex' ORDER BY indexname",
            "SELECT pg_get_indexdef('parity_ex_name'::regclass)",
            "SELECT indkey::text, pg_get_expr(indexprs, indrelid) FROM pg_index WHERE indexrelid = 'parity_ex_sum'::regclass",
            "CREATE UNIQUE INDEX parity_ex_dup ON parity_ex ((b - b))",
            "CREATE INDEX parity_ex_div ON parity_ex ((b / (a - a)))",
            "CREATE INDEX parity_ex_now ON parity_ex ((now()))",
            "CREATE INDEX parity_ex_sub ON parity_ex (((SELECT 1)))",
            "CREATE INDEX parity_ex_ab ON parity_ex ((a / b))",
            "INSERT INTO parity_ex VALUES (6, 'f@f.org', 'f', 1, 0, '{}')",
            "ALTER TABLE parity_ex RENAME COLUMN email TO mail",
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'parity_ex_lower'",
            "SELECT id FROM parity_ex WHERE lower(mail) = 'bob@y.org'",
            "ALTER TABLE parity_ex DROP COLUMN b",
            "SELECT indexname FROM pg_indexes WHERE tablename = 'parity_ex' ORDER BY indexname",
            "SELECT id, mail, name FROM parity_ex ORDER BY id",
            "DROP TABLE parity_ex",
        ];
        let results = compare(&["DROP TABLE IF EXISTS parity_ex"], &script).await;
        assert!(error("23505")(&results[6]) && error("23505")(&results[9]) && error("42P17")(&results[27]));
        assert!(error("23505")(&results[14]) && error("21000")(&results[15]));
    })
    .await;
}

/// The boolean, LIKE, CASE, regular-expression and date/time forms of expression indexes:
/// entries the replicas compute (a CASE branch not taken is not evaluated), unique
/// violations, lookups, the catalog's text, and PostgreSQL's STABLE variants refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expression_index_forms_behave_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_exf (id INT PRIMARY KEY, a INT, b INT, c BOOLEAN, s TEXT, ts TIMESTAMP, tz TIMESTAMPTZ, d DATE)",
            "INSERT INTO parity_exf VALUES (1, 4, 2, true, 'apple', '2024-03-15 10:30:00', '2024-03-15 10:30:00+00', '2024-03-15'), (2, -1, 0, false, 'banana', '2024-03-15 23:59:59', NULL, '2023-12-31')",
            "CREATE INDEX parity_exf_bool ON parity_exf ((a > 0 AND c), (s LIKE 'a%'), (s ~* '^B'), (a IN (1, 2)))",
            "CREATE UNIQUE INDEX parity_exf_case ON parity_exf ((CASE WHEN b = 0 THEN 0 ELSE a / b END))",
            "CREATE INDEX parity_exf_time ON parity_exf (date_trunc('day', ts), extract(year FROM d), age(tz, tz))",
            "CREATE UNIQUE INDEX parity_exf_day ON parity_exf (date_trunc('day', ts))",
            "INSERT INTO parity_exf VALUES (3, 0, 0, NULL, NULL, NULL, NULL, NULL)",
            "INSERT INTO parity_exf VALUES (3, 5, 1, NULL, 'avocado', NULL, NULL, NULL)",
            "SELECT id FROM parity_exf WHERE (a > 0 AND c) = true ORDER BY id",
            "SELECT id FROM parity_exf WHERE (CASE WHEN b = 0 THEN 0 ELSE a / b END) = 0 ORDER BY id",
            "SELECT id FROM parity_exf WHERE date_trunc('day', ts) = '2024-03-15' ORDER BY id",
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'parity_exf' ORDER BY indexname",
            "CREATE INDEX parity_exf_bad ON parity_exf (date_trunc('day', tz))",
            "CREATE INDEX parity_exf_bad ON parity_exf (age(d, d))",
            "CREATE INDEX parity_exf_bad ON parity_exf ((to_char(ts, 'YYYY')))",
            "DROP TABLE parity_exf",
        ];
        let results = compare(&["DROP TABLE IF EXISTS parity_exf"], &script).await;
        assert!(error("23505")(&results[5]) && error("23505")(&results[6]) && error("42P17")(&results[12]));
    })
    .await;
}

/// Read-only transactions refuse what PostgreSQL refuses, with its messages, and run what
/// it runs; `SET TRANSACTION` and the session default behave as in PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_transactions_behave_as_in_postgres() {
    bounded(120, async {
        let mut script = vec![
            "CREATE TABLE parity_ro (id INT PRIMARY KEY, v TEXT)",
            "CREATE SEQUENCE parity_ro_s",
            "INSERT INTO parity_ro VALUES (1, 'a')",
            "SHOW transaction_read_only",
        ];
        // Each refused statement in a block of its own; the block is then failed.
        for refused in [
            "INSERT INTO parity_ro VALUES (2, 'b')",
            "UPDATE parity_ro SET v = 'x'",
            "DELETE FROM parity_ro",
            "WITH x AS (UPDATE parity_ro SET v = 'c' RETURNING *) SELECT * FROM x",
            "EXPLAIN ANALYZE INSERT INTO parity_ro VALUES (5, 'e')",
            "SELECT nextval('parity_ro_s')",
            "SELECT setval('parity_ro_s', 5)",
            "SELECT * FROM parity_ro FOR UPDATE",
            "CREATE TABLE parity_ro_x (a INT)",
            "CREATE TEMP TABLE parity_ro_t (a INT)",
            "CREATE UNIQUE INDEX ON parity_ro (v)",
            "ALTER TABLE parity_ro ADD COLUMN w INT",
            "ALTER TABLE parity_ro ADD PRIMARY KEY (id)",
            "DROP TABLE parity_ro",
            "TRUNCATE parity_ro",
            "CREATE TABLE parity_ro_y AS SELECT 1 AS a",
            "SELECT 1 AS a INTO parity_ro_z",
            "COPY parity_ro FROM STDIN",
        ] {
            script.extend(["BEGIN READ ONLY", refused, "SELECT 1", "ROLLBACK"]);
        }
        script.extend([
            // What a read-only transaction runs.
            "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY",
            "SHOW transaction_read_only",
            "SELECT * FROM parity_ro",
            "ANALYZE parity_ro",
            "COMMIT",
            // SET TRANSACTION: read-write again only before the first query.
            "BEGIN READ ONLY",
            "SET TRANSACTION READ WRITE",
            "INSERT INTO parity_ro VALUES (7, 'g')",
            "ROLLBACK",
            "BEGIN READ ONLY",
            "SELECT 1",
            "SET TRANSACTION READ WRITE",
            "ROLLBACK",
            "BEGIN",
            "INSERT INTO parity_ro VALUES (8, 'h')",
            "SET TRANSACTION READ ONLY",
            "INSERT INTO parity_ro VALUES (9, 'i')",
            "ROLLBACK",
            "BEGIN READ ONLY",
            "SET transaction_read_only = off",
            "SHOW transaction_read_only",
            "INSERT INTO parity_ro VALUES (10, 'j')",
            "COMMIT",
            // Outside a block SET TRANSACTION does nothing (a warning).
            "SET TRANSACTION READ ONLY",
            "SHOW transaction_read_only",
            // The session's default.
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
            "SHOW default_transaction_read_only",
            "SHOW transaction_read_only",
            "INSERT INTO parity_ro VALUES (11, 'k')",
            "SELECT id, v FROM parity_ro ORDER BY id",
            "BEGIN",
            "SHOW transaction_read_only",
            "ROLLBACK",
            "BEGIN READ WRITE",
            "INSERT INTO parity_ro VALUES (12, 'l')",
            "COMMIT",
            "SET default_transaction_read_only = off",
            "INSERT INTO parity_ro VALUES (13, 'm')",
            "SELECT id, v FROM parity_ro ORDER BY id",
        ]);
        let results =
            compare(&["DROP TABLE IF EXISTS parity_ro", "DROP SEQUENCE IF EXISTS parity_ro_s"], &script).await;
        assert!(results.iter().filter(|r| error("25006")(r)).count() >= 19, "{results:?}");
    })
    .await;
}

/// LIMIT on a scan of a table whose primary key has several columns, through the replicas
/// (their check of the read's predicate refused every such read with 40001 when the scan
/// stopped early and reported `first column <= last` over rows it had not read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_over_a_composite_primary_key_behaves_as_in_postgres() {
    bounded(120, async {
        let script = [
            "CREATE TABLE parity_cpk (a INT, b INT, v TEXT, PRIMARY KEY (a, b))",
            "INSERT INTO parity_cpk SELECT g % 7, g, 'x' FROM generate_series(1, 50) g",
            "SELECT count(*) FROM (SELECT * FROM parity_cpk LIMIT 1) s",
            "SELECT count(*) FROM (SELECT * FROM parity_cpk LIMIT 3) s",
            "SELECT 1 FROM parity_cpk LIMIT 1",
            "SELECT a, b FROM parity_cpk ORDER BY a, b LIMIT 2",
            "SELECT a, b FROM parity_cpk WHERE a = 3 ORDER BY b LIMIT 2",
            "BEGIN",
            "SELECT count(*) FROM (SELECT * FROM parity_cpk LIMIT 4) s",
            "UPDATE parity_cpk SET v = 'y' WHERE a = 0 AND b = 7",
            "COMMIT",
            "SELECT v FROM parity_cpk WHERE a = 0 AND b = 7",
        ];
        compare(&["DROP TABLE IF EXISTS parity_cpk"], &script).await;
    })
    .await;
}
