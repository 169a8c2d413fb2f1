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
    let cluster = ClusterProc::up_with_env(dir.path(), false, &[], env);
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

/// f = 1: with one replica killed, unanimity is impossible, so every commit afterwards
/// takes the slow path, and still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_commit_with_one_replica_killed() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 5);
        let mut cluster = ClusterProc::up(dir.path(), true);
        let before = Arc::new(Tally::default());
        run_transfers(&config, dir.path(), 2, 5, ACCOUNTS, &before).await;
        let victim = cluster.pids[2];
        signal(victim, libc::SIGKILL);
        let after = Arc::new(Tally::default());
        run_transfers(&config, dir.path(), 4, 10, ACCOUNTS, &after).await;
        assert_eq!(after.slow.load(Ordering::Relaxed), 40, "every commit after the crash is a slow-path commit");
        assert_eq!(after.fast.load(Ordering::Relaxed), 0);
        assert_eq!(total(&config, dir.path(), 5, ACCOUNTS).await, START_BALANCE * ACCOUNTS as i64);
        assert!(cluster.is_running(), "with --tolerate-failures one dead replica must not stop the cluster");
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// Without --tolerate-failures a dead replica stops the whole cluster, leaving nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_up_stops_everything_when_a_replica_dies() {
    let run = async {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 1);
        let mut cluster = ClusterProc::up(dir.path(), false);
        signal(cluster.pids[0], libc::SIGKILL);
        let status = tokio::task::spawn_blocking(move || {
            let status = cluster.wait(Duration::from_secs(20));
            (status, cluster)
        })
        .await
        .expect("wait");
        let (status, cluster) = status;
        let status = status.expect("cluster up kept running after a replica died");
        assert!(!status.success());
        for pid in &cluster.pids {
            assert!(!alive(*pid), "replica {pid} left behind");
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("test timed out");
}

/// Byzantine independence with real processes: a replica that votes abort on everything
/// costs the fast path, never a correct client's commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_commit_with_a_byzantine_replica_voting_abort() {
    let run = async {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 5);
        let cluster = ClusterProc::up_with(dir.path(), false, &["--byzantine", "s0r2=abort-all"]);
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
