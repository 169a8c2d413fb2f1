//! Process tests: real `pistou` processes on 127.0.0.1, driven through the client library.

mod common;

use common::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

const ACCOUNTS: usize = 10;

/// init → cluster up → 4 clients × 25 concurrent transfers → total conserved → stop,
/// no replica left. `env` goes to `cluster up` and its replicas.
async fn transfers_conserve_total(shards: usize, env: &[(&str, &str)]) {
    let dir = temp_dir();
    let config = init_cluster(dir.path(), shards, 5);
    let cluster = ClusterProc::up_with_env(dir.path(), &[], env);
    assert_eq!(cluster.pids.len(), 6 * shards);
    let tally = Arc::new(Tally::default());
    run_transfers(&config, dir.path(), 4, 25, ACCOUNTS, &tally).await;
    let committed = tally.fast.load(Ordering::Relaxed) + tally.slow.load(Ordering::Relaxed);
    assert_eq!(committed, 100);
    assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
    eprintln!(
        "{shards} shard(s): fast {} slow {} aborts {}",
        tally.fast.load(Ordering::Relaxed),
        tally.slow.load(Ordering::Relaxed),
        tally.aborts.load(Ordering::Relaxed)
    );
    let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
    assert!(status.success(), "cluster up exited with {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shard_transfers_conserve_total() {
    tokio::time::timeout(Duration::from_secs(240), transfers_conserve_total(1, &[])).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shard_transfers_conserve_total() {
    tokio::time::timeout(Duration::from_secs(240), transfers_conserve_total(2, &[])).await.expect("test timed out");
}

/// `PISTOU_REPLICA_THREADS=1`: each replica runs its driver and connections on one thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_threaded_replicas_conserve_total() {
    let run = transfers_conserve_total(1, &[("PISTOU_REPLICA_THREADS", "1")]);
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// A replica stopped under load, then killed with SIGKILL: transfers keep committing without
/// it (slow path: unanimity is impossible), `cluster up` starts it again from its data
/// directory, it catches up on the thousands of transfers it missed, and no acknowledged
/// transfer is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_is_restarted_from_its_log_and_nothing_is_lost() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 5);
        let mut cluster = ClusterProc::up(dir.path());
        let tally = Arc::new(Tally::default());
        run_transfers(&config, dir.path(), 2, 5, ACCOUNTS, &tally).await;
        // Stopped (SIGSTOP) for thousands of transfers, more than any writeback
        // retransmission covers, then killed: it can only learn them by catching up.
        let victim = cluster.pids[2];
        signal(victim, libc::SIGSTOP);
        let after = Arc::new(Tally::default());
        let down = std::time::Instant::now();
        run_transfers(&config, dir.path(), 4, 750, ACCOUNTS, &after).await;
        eprintln!("3000 transfers with a replica stopped in {:?}", down.elapsed());
        assert_eq!(after.slow.load(Ordering::Relaxed), 3000, "while a replica is down every commit is a slow-path one");
        signal(victim, libc::SIGKILL);
        let line = cluster.wait_line("pistou replica restarted id=s0r2", Duration::from_secs(30));
        let line = line.expect("cluster up restarts the killed replica");
        cluster.note_restart(&line, 2);
        let recovered = wait_for_log(dir.path(), "replica-s0-r2.log", "recovered from the durable log").await;
        assert!(!recovered.contains("entries=0 "), "the restarted replica replays its log: {recovered}");
        // It missed the transfers made while it was down, and learns them from its peers.
        let caught_up = wait_for_log(dir.path(), "replica-s0-r2.log", "caught up").await;
        assert!(!caught_up.contains("commits=0 "), "the restarted replica learnt nothing: {caught_up}");
        eprintln!("{caught_up}");
        run_transfers(&config, dir.path(), 4, 10, ACCOUNTS, &after).await;
        assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
        for t in [&tally, &after] {
            assert_eq!(missing_receipts(&config, dir.path(), 5, t).await, Vec::<String>::new());
        }
        assert!(cluster.is_running(), "one dead replica must not stop the cluster");
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// Every replica killed with SIGKILL at once (a power cut): `cluster up` restarts them all
/// and every acknowledged transfer is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_killed_at_once_loses_no_acknowledged_commit() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 5);
        let mut cluster = ClusterProc::up(dir.path());
        let tally = Arc::new(Tally::default());
        run_transfers(&config, dir.path(), 4, 10, ACCOUNTS, &tally).await;
        for pid in cluster.pids.clone() {
            signal(pid, libc::SIGKILL);
        }
        for _ in 0..cluster.pids.len() {
            let line = cluster.wait_line("pistou replica restarted", Duration::from_secs(30)).expect("restart");
            let id = line.split_whitespace().find_map(|w| w.strip_prefix("id=s0r")).expect("id");
            cluster.note_restart(&line, id.parse().expect("index"));
        }
        assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
        assert_eq!(missing_receipts(&config, dir.path(), 5, &tally).await, Vec::<String>::new());
        assert_eq!(tally.receipts.lock().expect("receipts").len(), 40);
        // The restarted cluster keeps working.
        run_transfers(&config, dir.path(), 2, 5, ACCOUNTS, &tally).await;
        assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// Byzantine independence with real processes: a replica that votes abort on everything
/// costs the fast path, never a correct client's commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_commit_with_a_byzantine_replica_voting_abort() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 5);
        let cluster = ClusterProc::up_with(dir.path(), &["--byzantine", "s0r2=abort-all"]);
        let tally = Arc::new(Tally::default());
        run_transfers(&config, dir.path(), 4, 10, ACCOUNTS, &tally).await;
        assert_eq!(tally.slow.load(Ordering::Relaxed), 40, "every commit takes the slow path");
        assert_eq!(tally.fast.load(Ordering::Relaxed), 0, "one abort vote rules out the fast path");
        assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
        let log = std::fs::read_to_string(dir.path().join("logs").join("replica-s0-r2.log")).unwrap_or_default();
        assert!(log.contains("BYZANTINE"), "the faulty replica announces itself in its log");
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// Issue 30: `pistou init` turns metrics on; `cluster up` prints each replica's metrics URL
/// (the address `[metrics]` gives it), and each URL serves the replica's Prometheus metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_up_prints_each_replicas_metrics_url_and_serves_it() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 1);
        assert!(config.metrics.enabled, "init turns metrics on");
        let path = dir.path().to_path_buf();
        let cluster = tokio::task::spawn_blocking(move || ClusterProc::up(&path)).await.expect("up");
        for id in config.all_replicas() {
            let addr = config.metrics.replica_addr(&config, id).expect("a metrics address");
            assert!(addr.ip().is_loopback());
            let line = cluster
                .wait_line(&format!("replica {id} metrics: "), Duration::from_secs(10))
                .unwrap_or_else(|| panic!("no metrics URL printed for {id}"));
            assert_eq!(line, format!("replica {id} metrics: http://{addr}/metrics"));
            let text = pistou_metrics::scrape(addr).await.expect("scrape");
            let series = pistou_metrics::parse(&text);
            assert!(series.iter().any(|(s, _)| s == "pistou_replica_transactions_committed_total"), "{text}");
        }
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}

/// `pistou status` on a cluster, as `(exit code, stdout)`.
async fn status(dir: &std::path::Path) -> (Option<i32>, String) {
    let config = dir.join("cluster.toml");
    let run = tokio::task::spawn_blocking(move || {
        pistou(&["status", "--config", path_str(&config)], Duration::from_secs(30))
    })
    .await
    .expect("status");
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    (run.code, run.stdout)
}

/// The table row of replica `id`, split in cells.
fn row<'a>(table: &'a str, id: &str) -> Vec<&'a str> {
    let line = table.lines().find(|l| l.split_whitespace().next() == Some(id));
    line.unwrap_or_else(|| panic!("no row for {id} in:\n{table}")).split_whitespace().collect()
}

/// Issue 30: `pistou status` shows every replica up with its committed count and version
/// (exit 0); with one replica stopped (SIGSTOP: its metrics never answer, and `cluster up`
/// does not restart it) its row says `down` and the shard still has n - f = 5 of 6 (exit 0);
/// with two stopped the shard is short and named, exit 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_stopped_replicas_and_fails_when_a_shard_is_short() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 1);
        let path = dir.path().to_path_buf();
        let cluster = tokio::task::spawn_blocking(move || ClusterProc::up(&path)).await.expect("up");
        let put = ["kv", "--config", path_str(&dir.path().join("cluster.toml")), "put", "k", "1"].map(String::from);
        let put =
            tokio::task::spawn_blocking(move || pistou(&put.each_ref().map(String::as_str), Duration::from_secs(60)));
        assert_eq!(put.await.expect("put").code, Some(0));
        // Replicas publish every 10 ms: a few tries see the commit everywhere.
        let mut tries = 0;
        let (code, table) = loop {
            let (code, table) = status(dir.path()).await;
            tries += 1;
            let seen = |l: &str| l.split_whitespace().nth(5).is_some_and(|age| age.ends_with('s'));
            if tries == 10 || table.lines().filter(|l| seen(l)).count() == 6 {
                break (code, table);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(code, Some(0), "{table}");
        let header: Vec<&str> = table.lines().next().expect("header").split_whitespace().collect();
        assert_eq!(
            header,
            ["REPLICA", "SHARD", "ADDRESS", "STATE", "COMMITTED", "LAST-COMMIT", "LAG", "VERSION", "NOTE"]
        );
        for id in config.all_replicas() {
            let cells = row(&table, &id.to_string());
            assert_eq!(cells[1..4], ["0", config.replica(id).expect("replica").addr.as_str(), "up"], "{table}");
            let committed: u64 = cells[4].parse().unwrap_or_else(|_| panic!("committed count of {id}: {table}"));
            assert!(committed >= 1, "the put committed at {id}: {table}");
            assert!(cells[5].ends_with('s'), "{id} saw a commit: {table}");
            assert_eq!(cells[6], "0", "no lag once every replica applied it: {table}");
            assert_eq!(cells[7], env!("CARGO_PKG_VERSION"), "{table}");
        }
        assert!(table.contains("shard 0: 6 of 6 replicas up; it needs 5 (n - f) to commit"), "{table}");

        signal(cluster.pids[1], libc::SIGSTOP);
        let (code, table) = status(dir.path()).await;
        assert_eq!(row(&table, "s0r1")[3], "down", "{table}");
        assert_eq!(row(&table, "s0r0")[3], "up", "{table}");
        assert!(table.contains("shard 0: 5 of 6 replicas up"), "{table}");
        assert_eq!(code, Some(0), "5 of 6 is enough to commit: {table}");

        signal(cluster.pids[4], libc::SIGSTOP);
        let (code, table) = status(dir.path()).await;
        assert_eq!((row(&table, "s0r1")[3], row(&table, "s0r4")[3]), ("down", "down"), "{table}");
        assert!(table.contains("shard 0 SHORT: 4 of 6 replicas up, fewer than the 5 (n - f) it needs"), "{table}");
        assert_eq!(code, Some(4), "{table}");

        for pid in [cluster.pids[1], cluster.pids[4]] {
            signal(pid, libc::SIGCONT);
        }
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}
