//! The real `pgbench` (PostgreSQL 15's) against the gateway, unmodified: `pgbench -i -s 1`
//! (DROP, CREATE TABLE without primary keys, COPY of 100,000 accounts inside BEGIN … COMMIT,
//! VACUUM ANALYZE, ALTER TABLE … ADD PRIMARY KEY), then a short run of the TPC-B-like script
//! (given with -f: see below) with retries of serialization failures, and select-only. Afterwards TPC-B's invariant must hold: the sums of the
//! accounts', tellers' and branches' balances and of the history's deltas are equal.
//! Skipped (with the reason printed) only when no `pgbench` binary is installed.

mod support;

use pistou_gateway::GatewayConfig;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{bounded, connect, start};

/// pgbench 15's built-in "tpcb-like" and "select-only" scripts, verbatim.
const TPCB_LIKE: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";
const SELECT_ONLY: &str = "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

fn pgbench_binary() -> Option<&'static str> {
    let found = std::process::Command::new("pgbench").arg("--version").stdout(Stdio::null()).status();
    found.ok().filter(|s| s.success()).map(|_| "pgbench")
}

async fn pgbench(port: u16, args: &[&str], limit: Duration) -> (bool, String) {
    let port = port.to_string();
    let mut command = tokio::process::Command::new("pgbench");
    command
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "tester"])
        .args(args)
        .arg("pistou")
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().expect("spawn pgbench");
    let out = tokio::time::timeout(limit, child.wait_with_output()).await.expect("pgbench timed out").expect("pgbench");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

async fn one_number(client: &tokio_postgres::Client, sql: &str) -> i64 {
    let row = client.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.try_get::<_, Option<i64>>(0).ok().flatten().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initializes_and_runs_tpcb() {
    if pgbench_binary().is_none() {
        eprintln!("skipped: no pgbench binary on PATH");
        return;
    }
    bounded(600, async {
        let h = start(GatewayConfig::default()).await;
        let port = h.addr.port();
        let started = Instant::now();
        let (ok, out) = pgbench(port, &["-i", "-s", "1"], Duration::from_secs(300)).await;
        assert!(ok, "pgbench -i failed:\n{out}");
        eprintln!("pgbench -i -s 1 took {:?}:\n{out}", started.elapsed());
        let client = connect(h.addr).await;
        assert_eq!(one_number(&client, "SELECT count(*) FROM pgbench_branches").await, 1);
        assert_eq!(one_number(&client, "SELECT count(*) FROM pgbench_tellers").await, 10);
        let mut accounts = 0;
        for lo in (1..=100_000).step_by(10_000) {
            let sql = format!("SELECT count(*) FROM pgbench_accounts WHERE aid BETWEEN {lo} AND {}", lo + 9_999);
            accounts += one_number(&client, &sql).await;
        }
        assert_eq!(accounts, 100_000);
        // The primary key pgbench added: a duplicate aid is refused.
        let dup = client.simple_query("INSERT INTO pgbench_accounts VALUES (7, 1, 0, '')").await;
        assert_eq!(dup.err().map(|e| support::sqlstate(&e)).as_deref(), Some("23505"));

        // pgbench's built-in scripts (-b tpcb-like, -S) first look up the tables' partitioning
        // in pg_catalog (pg_class, pg_partitioned_table, pg_inherits), which the gateway does
        // not answer yet; the same scripts given with -f skip that lookup.
        let dir = std::env::temp_dir().join(format!("pistou-pgbench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (tpcb, select_only) = (dir.join("tpcb-like.sql"), dir.join("select-only.sql"));
        std::fs::write(&tpcb, TPCB_LIKE).expect("write script");
        std::fs::write(&select_only, SELECT_ONLY).expect("write script");
        let (tpcb, select_only) = (tpcb.to_string_lossy().into_owned(), select_only.to_string_lossy().into_owned());
        // For docs/benchmarks.md: single-row INSERTs, one per transaction, against COPY's rate.
        client
            .simple_query("CREATE TABLE insert_rate (aid INT, bid INT, abalance INT, filler CHAR(84))")
            .await
            .expect("create");
        let started = Instant::now();
        for i in 0..200 {
            client.simple_query(&format!("INSERT INTO insert_rate VALUES ({i}, 1, 0, '')")).await.expect("insert");
        }
        eprintln!("200 single-row INSERTs took {:?}", started.elapsed());
        let started = Instant::now();
        let (ok, out) =
            pgbench(port, &["-f", &tpcb, "-c", "2", "-t", "25", "--max-tries", "50"], Duration::from_secs(240)).await;
        assert!(ok, "pgbench run failed:\n{out}");
        // All 50 transactions update the one branch row: a few may still fail after their
        // tries (40001), and are then rolled back. The rest ran exactly once.
        let processed: i64 = out
            .lines()
            .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
            .and_then(|l| l.split('/').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no processed count in:\n{out}"));
        assert!(processed >= 40, "too many failed transactions:\n{out}");
        eprintln!("pgbench -c 2 -t 25 took {:?}:\n{out}", started.elapsed());
        let (ok, out) =
            pgbench(port, &["-n", "-f", &select_only, "-c", "2", "-t", "25"], Duration::from_secs(240)).await;
        assert!(ok, "pgbench select-only failed:\n{out}");
        let _ = std::fs::remove_dir_all(&dir);

        let branches = one_number(&client, "SELECT sum(bbalance) FROM pgbench_branches").await;
        let tellers = one_number(&client, "SELECT sum(tbalance) FROM pgbench_tellers").await;
        let history = one_number(&client, "SELECT sum(delta) FROM pgbench_history").await;
        let mut accounts = 0;
        for lo in (1..=100_000).step_by(10_000) {
            let sql = format!("SELECT sum(abalance) FROM pgbench_accounts WHERE aid BETWEEN {lo} AND {}", lo + 9_999);
            accounts += one_number(&client, &sql).await;
        }
        assert_eq!(
            one_number(&client, "SELECT count(*) FROM pgbench_history").await,
            processed,
            "every processed transaction ran once"
        );
        assert_eq!((accounts, tellers, branches), (history, history, history), "TPC-B invariant");
        h.stop().await;
    })
    .await;
}
