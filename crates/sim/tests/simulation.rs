//! Seeded simulation runs with the serializability oracle. A failure prints the scenario and
//! seed; `SIM_SEED=<seed> cargo test -p pistou-sim --test simulation` re-runs just that seed
//! in every scenario; `SIM_SEEDS_SCALE=10` runs ten times as many seeds per scenario (long
//! runs, reported in docs/testing.md).

use pistou_adversary::ReplicaFault;
use pistou_sim::{assert_replays, run, Scenario};

fn seeds(count: u64, salt: u64) -> Vec<u64> {
    pistou_sim::seeds(count, salt * 1_000_003)
}

/// Runs `count` seeds; `min_commit_percent` guards against a vacuous oracle (a scenario in
/// which almost nothing commits checks almost nothing).
fn run_all(make: impl Fn(u64) -> Scenario, count: u64, salt: u64, min_commit_percent: usize) -> usize {
    run_all_counting(make, count, salt, min_commit_percent).restarts
}

/// [`run_all`], also returning the log entries garbage collection forgot.
fn run_all_counting(make: impl Fn(u64) -> Scenario, count: u64, salt: u64, min_commit_percent: usize) -> Counts {
    let mut restarts = 0;
    let mut forgotten = 0;
    let mut caught_up = 0;
    let mut behind = 0;
    let mut bad_certificates = 0;
    let (mut cut_off_behind, mut after_silence) = (0, 0);
    let mut committed = 0;
    let mut fast = 0;
    let mut total = 0;
    let mut first = None;
    for seed in seeds(count, salt) {
        let s = make(seed);
        match run(&s) {
            Ok(o) => {
                if first.is_none() {
                    assert_replays(&s, &o);
                    first = Some(seed);
                }
                committed += o.committed;
                fast += o.fast_commits;
                total += o.committed + o.aborted;
                restarts += o.restarts;
                forgotten += o.log_entries_forgotten;
                caught_up += o.caught_up_commits;
                bad_certificates += o.bad_certificates;
                behind += o.restarted_keys_behind;
                cut_off_behind += o.cut_off_keys_behind;
                after_silence += o.catch_ups_after_silence;
                assert!(o.oracle.committed == o.committed);
            }
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!("{} transactions, {committed} committed ({fast} on the fast path)", total);
    if restarts > 0 {
        eprintln!("{restarts} restarts; {caught_up} commits learnt by catching up; {behind} keys behind at the end");
    }
    if after_silence > 0 || cut_off_behind > 0 {
        eprintln!("{after_silence} catch-ups after a silence; {cut_off_behind} keys behind on cut-off replicas");
    }
    assert!(committed * 100 >= total * min_commit_percent, "only {committed} of {total} transactions committed");
    Counts { restarts, forgotten, caught_up, behind, bad_certificates, cut_off_behind, after_silence }
}

struct Counts {
    restarts: usize,
    /// Log entries garbage collection forgot.
    forgotten: usize,
    /// Commits restarted replicas learnt by catching up.
    caught_up: u64,
    /// Keys restarted replicas ended behind on (`Outcome::restarted_keys_behind`).
    behind: usize,
    /// Inputs correct replicas refused for a bad certificate.
    bad_certificates: u64,
    /// Keys replicas cut off by a partition ended behind on (`Outcome::cut_off_keys_behind`).
    cut_off_behind: usize,
    /// Catch-ups started after a silence from clients.
    after_silence: u64,
}

#[test]
fn clean_network_two_shards() {
    run_all(|seed| Scenario::base("clean", seed), 100, 1, 25);
}

#[test]
fn lossy_reordering_network() {
    run_all(
        |seed| {
            let mut s = Scenario::base("lossy", seed);
            s.drop_prob = 0.05;
            s.min_delay_us = 50;
            s.max_delay_us = 5_000;
            s
        },
        60,
        2,
        25,
    );
}

#[test]
fn f_replicas_crash_per_shard() {
    run_all(
        |seed| {
            let mut s = Scenario::base("crash", seed);
            s.crashes_per_shard = 1;
            s.crash_at_us = (seed % 5) * 20_000;
            s
        },
        60,
        3,
        25,
    );
}

#[test]
fn partitioned_replica_heals() {
    run_all(
        |seed| {
            let mut s = Scenario::base("partition", seed);
            s.partition = Some((5_000, 150_000));
            s.drop_prob = 0.01;
            s
        },
        40,
        4,
        25,
    );
}

#[test]
fn hot_keys_contention() {
    run_all(
        |seed| {
            let mut s = Scenario::base("contention", seed);
            s.clients = 6;
            s.workload.hot_keys = 2;
            s.workload.hot_share = 0.8;
            s
        },
        60,
        5,
        10,
    );
}

#[test]
fn three_shards_multi_shard_transactions() {
    run_all(
        |seed| {
            let mut s = Scenario::base("three-shards", seed);
            s.shards = 3;
            s.workload.audit_width = 5;
            s
        },
        30,
        6,
        25,
    );
}

#[test]
fn with_signatures_and_certificates() {
    run_all(
        |seed| {
            let mut s = Scenario::base("crypto", seed);
            s.crypto = true;
            s.workload.txns_per_client = 8;
            s.drop_prob = 0.02;
            s
        },
        12,
        7,
        25,
    );
}

/// Every scenario family is replayed on its first seed (`assert_replays` in `run_all`); this
/// one checks that the trace digest tells seeds apart.
#[test]
fn same_seed_same_run_and_another_seed_another() {
    let s = Scenario::base("determinism", 42);
    let a = run(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_replays(&s, &a);
    let other = run(&Scenario::base("determinism", 43)).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(a.trace, other.trace);
}

/// Crash-restart: f replicas per shard crash under load and restart from their logs
/// (`Replica::recover`); the oracle and the vote-stability monitor (a correct replica never
/// changes its vote, before or after a restart) check every run.
#[test]
fn f_replicas_crash_and_restart_from_their_logs() {
    let restarts = run_all(
        |seed| {
            let mut s = Scenario::base("crash-restart", seed);
            s.crashes_per_shard = 1;
            s.crash_at_us = (seed % 5) * 20_000;
            s.restart_after_us = Some(5_000 + (seed % 7) * 10_000);
            s.drop_prob = 0.01;
            s
        },
        100,
        11,
        25,
    );
    assert!(restarts >= 100, "only {restarts} replicas restarted");
}

/// Crash and restart while garbage collection trims the logs: a restarted replica replays
/// only the records its memory still held (gc.rs forgets the others on disk too), and still
/// serves every committed write.
#[test]
fn replicas_restart_from_logs_trimmed_by_garbage_collection() {
    let Counts { restarts, forgotten, .. } = run_all_counting(
        |seed| {
            let mut s = Scenario::base("crash-restart-gc", seed);
            s.max_txn_age_us = 400_000;
            s.workload.txns_per_client = 150;
            s.crashes_per_shard = 1;
            s.crash_at_us = 500_000 + (seed % 5) * 50_000;
            s.restart_after_us = Some(5_000 + (seed % 7) * 10_000);
            s
        },
        100,
        12,
        25,
    );
    assert!(restarts >= 100, "only {restarts} replicas restarted");
    assert!(forgotten > 10_000, "garbage collection trimmed only {forgotten} log entries");
    eprintln!("{forgotten} log entries forgotten");
}

/// One replica per shard crashes early and stays down for longer than clients retransmit
/// writebacks.
fn long_downtime(name: &'static str, seed: u64) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.workload.txns_per_client = 100;
    s.crashes_per_shard = 1;
    s.crash_at_us = 50_000 + (seed % 5) * 30_000;
    s.restart_after_us = Some(300_000 + (seed % 4) * 50_000);
    s
}

/// A replica down for longer than clients retransmit writebacks misses commits for good
/// unless it catches up from its peers (`catchup.rs`): after the run it must not be behind
/// the replicas that never crashed on any key.
#[test]
fn a_replica_down_for_long_catches_up_from_its_peers() {
    let counts = run_all_counting(|seed| long_downtime("crash-long-downtime", seed), 100, 13, 25);
    assert!(counts.restarts >= 100, "only {} replicas restarted", counts.restarts);
    assert!(counts.caught_up > 0, "no restarted replica learnt anything by catching up");
    assert_eq!(counts.behind, 0, "restarted replicas ended behind on {} keys", counts.behind);
}

/// The same with a Byzantine replica per shard that serves forged catch-up pages (values
/// changed under the original certificates) and claims to have nothing more after its first
/// page: the forged commits are refused, and the union of the correct peers' state still
/// brings the restarted replica up to date.
#[test]
fn catch_up_refuses_forged_state_from_a_byzantine_peer() {
    let counts = run_all_counting(
        |seed| {
            let mut s = long_downtime("crash-long-downtime-forged", seed);
            // A crash and a Byzantine replica per shard: f = 2.
            s.f = 2;
            s.shards = 1;
            s.byz_replicas_per_shard = 1;
            s.replica_fault = Some(ReplicaFault::ForgeCatchUp);
            s
        },
        50,
        14,
        20,
    );
    assert!(counts.bad_certificates > 0, "no forged catch-up page reached a restarted replica");
    assert!(counts.caught_up > 0, "no restarted replica learnt anything by catching up");
    assert_eq!(counts.behind, 0, "restarted replicas ended behind on {} keys", counts.behind);
}

/// A replica cut off by a partition for longer than clients resend writebacks (8 resends,
/// 400 ms here) misses commits; when it hears from clients again after a silence it catches
/// up from its peers (`catchup.rs`) and ends the run behind on no key.
#[test]
fn a_replica_cut_off_for_long_catches_up_after_the_partition() {
    let counts = run_all_counting(|seed| cut_off("partition-long", seed), 60, 15, 25);
    assert!(counts.after_silence >= 60, "only {} catch-ups after a silence", counts.after_silence);
    assert_eq!(counts.cut_off_behind, 0, "cut-off replicas ended behind on {} keys", counts.cut_off_behind);
}

/// Test of the test above: without catching up after a silence, some cut-off replica ends
/// behind.
#[test]
fn without_catching_up_a_cut_off_replica_stays_behind() {
    let counts = run_all_counting(
        |seed| {
            let mut s = cut_off("partition-long-no-catch-up", seed);
            s.catch_up_after_silence = false;
            s
        },
        10,
        15,
        25,
    );
    assert_eq!(counts.after_silence, 0);
    assert!(counts.cut_off_behind > 0, "no cut-off replica missed a commit: the partition is too short to test");
}

fn cut_off(name: &'static str, seed: u64) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.workload.txns_per_client = 100;
    let start = 30_000 + (seed % 5) * 20_000;
    s.partition = Some((start, start + 600_000 + (seed % 4) * 100_000));
    s
}

/// Test of the test above: a replica that loses the log entries it had not synced, as if the
/// runtime had sent replies before syncing, is caught changing a vote in some seed.
#[test]
fn the_vote_monitor_catches_a_replica_that_replied_before_syncing() {
    let mut caught = 0;
    for seed in 0..40 {
        let mut s = Scenario::base("crash-restart-unsynced", 11 * 1_000_003 + seed);
        s.crashes_per_shard = 1;
        s.crash_at_us = 100_000 + (seed % 5) * 20_000;
        s.restart_after_us = Some(1_000);
        s.lost_unsynced_entries = usize::MAX;
        if let Err(e) = run(&s) {
            let e = e.to_string();
            assert!(e.contains("changed its vote") || e.contains("SAFETY"), "unexpected failure: {e}");
            caught += 1;
        }
    }
    assert!(caught > 0, "no seed noticed a replica that forgot its votes");
}
