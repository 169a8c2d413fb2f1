//! The same statements on the gateway and on the machine's PostgreSQL (127.0.0.1:5432,
//! database `test`, user `postgres`, trust auth), compared result by result: rows as text,
//! errors by SQLSTATE and message. An unreachable PostgreSQL fails the test.

mod support;

use pistou_gateway::GatewayConfig;
use std::process::Stdio;
use std::time::Duration;
use support::{bounded, connect, start};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

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

async fn postgres() -> Client {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(5432).user("postgres").dbname("test").connect_timeout(Duration::from_secs(10));
    let (client, connection) = config
        .connect(NoTls)
        .await
        .unwrap_or_else(|e| panic!("this test compares with PostgreSQL at 127.0.0.1:5432 (database test): {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
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

/// Output (stdout and stderr) of psql running `script`, without the parts that name the
/// server (the notice of DROP TABLE IF EXISTS on a missing table is PostgreSQL's only).
async fn psql(port: &str, db: &str, user: &str, script: &str) -> String {
    let child = tokio::process::Command::new("psql")
        .args(["-X", "-q", "-h", "127.0.0.1", "-p", port, "-U", user, "-d", db, "-v", "VERBOSITY=terse"])
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
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    text.lines().filter(|l| !l.starts_with("NOTICE:")).collect::<Vec<_>>().join("\n")
}
