//! `pistou kv` and `pistou demo` (SQL through the gateway) end to end, as a user would run them.

mod common;

use common::*;

use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_commands_against_a_running_cluster() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 2, 2);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let kv = |args: &[&str]| {
            let mut all = vec!["kv", "--config", &config];
            all.extend_from_slice(args);
            pistou(&all, LIMIT)
        };
        let r = kv(&["put", "greeting", "hello world"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = kv(&["--client", "2", "get", "greeting"]);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "greeting = hello world"), "{}", r.stderr);
        let r = kv(&["txn", "get greeting; put n 1; get n; delete greeting; get greeting"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(
            &lines[..5],
            ["greeting = hello world", "n := 1", "n = 1", "greeting deleted", "greeting not found"]
        );
        assert!(lines[5].starts_with("committed"), "{}", r.stdout);
        let r = kv(&["get", "greeting"]);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "greeting not found"));
        let status = cluster.stop();
        assert!(status.success());
    });
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("test timed out").expect("test panicked");
}

/// The README's first command: a cluster, the gateway with the sample bank, and the SQL
/// shell reading a script from stdin; afterwards no replica and no gateway port is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_sql_session_then_nothing_left() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 1);
        let port = free_base_port(1);
        let script = "\
SELECT id, owner, balance FROM accounts ORDER BY id;
BEGIN;
UPDATE accounts SET balance = balance - 10 WHERE id = 1;
UPDATE accounts SET balance = balance + 10
  WHERE id = 4;
COMMIT;
SELECT a.owner, t.amount FROM transfers t JOIN accounts a ON a.id = t.to_id ORDER BY t.id;
SELECT sum(balance) AS total, max(balance) FROM accounts WHERE balance > 0;
SELECT nope FROM accounts;
\\dt
\\q
";
        let r = pistou_with_input(&["demo", "--dir", path_str(dir.path()), "--port", &port.to_string()], script, LIMIT);
        assert_eq!(r.code, Some(0), "demo failed: {}\n{}", r.stdout, r.stderr);
        let expected = "\
 id | owner | balance
----+-------+---------
 1  | alice | 1000
 2  | bob   | 500
 3  | carol | 750
 4  | dave  | 0
(4 rows)
BEGIN
UPDATE 1
UPDATE 1
COMMIT
 owner | amount
-------+--------
 bob   | 100
 carol | 50
 dave  | 25
(3 rows)
 total | max
-------+-----
 2250  | 990
(1 row)
ERROR:  column \"nope\" does not exist (SQLSTATE 42703)
 Schema | Name
--------+-----------
 public | accounts
 public | transfers
(2 rows)
";
        assert!(r.stdout.contains(expected), "unexpected demo session:\n{}\nstderr: {}", r.stdout, r.stderr);
        for line in ["cluster ready", &format!("psql -h 127.0.0.1 -p {port} -U pistou pistou"), "stopping the cluster"]
        {
            assert!(r.stdout.contains(line), "missing {line:?} in demo output:\n{}", r.stdout);
        }
        // Every replica port and the gateway port are free again: nothing outlived the demo.
        for id in config.all_replicas() {
            let addr = &config.replica(id).expect("replica").addr;
            assert!(std::net::TcpListener::bind(addr).is_ok(), "{addr} still in use after the demo");
        }
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "gateway port {port} still in use after the demo"
        );
        // The same directory again: the data is kept, committed changes included.
        let script = "SELECT id, balance FROM accounts ORDER BY id;\n\\q\n";
        let r = pistou_with_input(&["demo", "--dir", path_str(dir.path()), "--port", &port.to_string()], script, LIMIT);
        assert_eq!(r.code, Some(0), "second demo failed: {}\n{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("its data is kept"), "{}", r.stdout);
        let expected = "\
 id | balance
----+---------
 1  | 990
 2  | 500
 3  | 750
 4  | 10
(4 rows)
";
        assert!(r.stdout.contains(expected), "the restarted demo lost data:\n{}\nstderr: {}", r.stdout, r.stderr);
    });
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out").expect("test panicked");
}

/// A real Byzantine client stalls after ST1 on `alice`; a user's transaction that reads `alice`
/// depends on the stalled write and still commits, because the client library finishes the
/// stalled transaction (Basil §5) before or while retrying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_byzantine_write_does_not_block_readers() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 3);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let r = pistou(&["kv", "--config", &config, "put", "alice", "1"], LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = byzantine_client(&config, "stall-late", 1);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "started 1 faulty transactions"), "{}", r.stderr);
        let r = pistou(&["kv", "--config", &config, "txn", "get alice; put bob 2"], LIMIT);
        assert_eq!(r.code, Some(0), "stdout: {} stderr: {}", r.stdout, r.stderr);
        // The stalled transaction was finished: alice holds what the Byzantine client wrote
        // (an 8-byte balance), not the user's "1".
        let r = pistou(&["kv", "--config", &config, "get", "alice"], LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_ne!(r.stdout.trim(), "alice = 1", "the stalled write was neither finished nor visible");
        let r = pistou(
            &["byzantine-client", "--config", &config, "--client", "3", "--fault", "nonsense", "--keys", "a"],
            LIMIT,
        );
        assert_eq!(r.code, Some(2), "an unknown fault is a usage error: {}", r.stderr);
        let status = cluster.stop();
        assert!(status.success());
    });
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("test timed out").expect("test panicked");
}

/// A forced equivocation makes the replicas elect a fallback leader, which receives its own
/// ELECTFB like everyone else's: delivered inside the replica, never by connecting to its
/// own port (which used to loop forever, refused as `unknown-replica`, ~19 times a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_leader_hears_its_own_vote_without_dialling_itself() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 3);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let r = pistou(&["kv", "--config", &config, "put", "alice", "1"], LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = byzantine_client(&config, "forced-equivocate", 2);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "started 2 faulty transactions"), "{}", r.stderr);
        // A reader of alice depends on the equivocated writes and finishes them; it may
        // abort (exit 3) and retry.
        let done =
            (0..5).any(|_| pistou(&["kv", "--config", &config, "txn", "get alice; put bob 2"], LIMIT).code == Some(0));
        assert!(done, "the reader never committed");
        assert!(cluster.stop().success());
        let mut adoptions = 0;
        for entry in std::fs::read_dir(dir.path().join("logs")).expect("logs") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).unwrap_or_default();
            assert!(!text.contains("unknown-replica="), "a replica dialled itself:\n{text}");
            adoptions += text
                .lines()
                .filter(|l| l.contains("stopped"))
                .filter_map(|l| l.split("fallback_adoptions=").nth(1))
                .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                .sum::<u64>();
        }
        assert!(adoptions > 0, "no fallback decision was adopted: the test did not exercise the election");
    });
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out").expect("test panicked");
}

/// `pistou byzantine-client` as client 3, writing `alice`.
fn byzantine_client(config: &str, fault: &str, txns: u32) -> Run {
    let txns = txns.to_string();
    let args =
        ["byzantine-client", "--config", config, "--client", "3", "--fault", fault, "--keys", "alice", "--txns", &txns];
    pistou(&args, LIMIT)
}
