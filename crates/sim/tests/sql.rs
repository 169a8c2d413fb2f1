//! Pesto in the simulator: interactive SQL transactions of correct clients, checked by the SQL
//! oracle (every statement's result equals its result on a model database that replays the
//! committed transactions in timestamp order). A failure prints scenario and seed;
//! `SIM_SEED=<seed> cargo test -p pistou-sim --test sql` re-runs that seed.
//!
//! The `sql_two_shards_*` scenarios run the two-table workload (`SqlSpec::ledger`) on two
//! shards, `accounts` placed on shard 0 and `ledger` on shard 1: payments from accounts into
//! ledger entries, settling an entry (point reads and writes on both shards), sweeping an
//! account's entries (range read and range delete on shard 1, update on shard 0), range
//! updates on both shards, transfers on shard 0 alone, ledger-only updates and audits that
//! read both tables. Besides the SQL oracle over both tables, every committed audit must see
//! the conserved total, and enough transactions that wrote both shards must commit (counted
//! from the metadata correct replicas applied). Networks: clean; drops and a crash per shard;
//! one replica per shard lying in range reads; one fabricating reads, one voting abort on
//! everything; writebacks withheld from two replicas per shard.

use pistou_sim::{run, ClientFault, Outcome, ReplicaFault, Scenario, SqlSpec};
use std::time::Instant;

fn seeds(count: u64, salt: u64) -> Vec<u64> {
    match std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => (0..count).map(|i| salt * 1_000_003 + i).collect(),
    }
}

fn sql_scenario(name: &'static str, seed: u64) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.shards = 1;
    s.clients = 3;
    s.sql = Some(SqlSpec::default());
    s
}

/// Runs the seeds; at least `min_committed_per_seed` transactions (beyond the two setup
/// transactions) must commit on average, so that the oracle checks something.
fn run_all(make: impl Fn(u64) -> Scenario, count: u64, salt: u64, min_committed_per_seed: usize) -> Vec<Outcome> {
    let mut committed = 0;
    let mut runs = 0;
    let mut outcomes = Vec::new();
    for seed in seeds(count, salt) {
        match run(&make(seed)) {
            Ok(o) => {
                assert_eq!(o.oracle.committed, o.committed, "every committed transaction was replayed");
                committed += o.committed;
                runs += 1;
                outcomes.push(o);
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(committed >= runs * (2 + min_committed_per_seed), "only {committed} commits in {runs} runs");
    outcomes
}

#[test]
fn sql_with_the_eager_path_forced_to_fail() {
    let outcomes = run_all(
        |seed| {
            let mut s = sql_scenario("sql-forced-snapshot", seed);
            s.force_snapshot_path = true;
            s
        },
        20,
        506,
        4,
    );
    let eager: u64 = outcomes.iter().map(|o| o.range.eager).sum();
    let snapshot: u64 = outcomes.iter().map(|o| o.range.snapshot).sum();
    assert_eq!(eager, 0, "no range read decided on the eager path");
    assert!(snapshot > 0, "range reads completed on the snapshot path");
}

#[test]
fn sql_forced_snapshots_with_a_third_of_replicas_missing_writes() {
    // Lagging replicas must fetch the proposed transactions with SYNC (writebacks never
    // reach them; SUPPLY from peers does).
    let outcomes = run_all(
        |seed| {
            let mut s = sql_scenario("sql-snapshot-sync", seed);
            s.force_snapshot_path = true;
            s.omit_writebacks_per_shard = 2;
            s
        },
        20,
        507,
        3,
    );
    assert!(outcomes.iter().map(|o| o.range.snapshot).sum::<u64>() > 0);
    assert!(outcomes.iter().map(|o| o.supplied).sum::<u64>() > 0, "lagging replicas synced missing commits");
}

#[test]
fn sql_with_a_client_proposing_fabricated_snapshots() {
    run_all(
        |seed| {
            let mut s = sql_scenario("sql-fabricated-snapshots", seed);
            s.byz_clients = 1;
            s.client_fault = Some(ClientFault::FabricatedSnapshots);
            s.byz_txns = 40;
            s
        },
        15,
        508,
        4,
    );
}

#[test]
fn sql_base() {
    run_all(|seed| sql_scenario("sql-base", seed), 40, 501, 5);
}

#[test]
fn sql_with_drops_and_a_crash() {
    run_all(
        |seed| {
            let mut s = sql_scenario("sql-drops-crash", seed);
            s.drop_prob = 0.02;
            s.crashes_per_shard = 1;
            s.crash_at_us = 200_000;
            s
        },
        25,
        502,
        3,
    );
}

#[test]
fn sql_with_a_replica_lying_in_range_reads() {
    run_all(
        |seed| {
            let mut s = sql_scenario("sql-lie-range", seed);
            s.byz_replicas_per_shard = 1;
            s.replica_fault = Some(ReplicaFault::LieRange);
            s
        },
        30,
        503,
        3,
    );
}

#[test]
fn sql_with_a_third_of_replicas_missing_writes() {
    run_all(
        |seed| {
            let mut s = sql_scenario("sql-inconsistent", seed);
            s.omit_writebacks_per_shard = 2;
            s
        },
        25,
        504,
        3,
    );
}

#[test]
fn sql_with_fabricated_reads_and_abort_votes() {
    for fault in [ReplicaFault::FabricateReads, ReplicaFault::AbortAll] {
        run_all(
            |seed| {
                let mut s = sql_scenario("sql-byz-replica", seed);
                s.byz_replicas_per_shard = 1;
                s.replica_fault = Some(fault);
                s
            },
            10,
            505,
            2,
        );
    }
}

/// Two shards, `accounts` on shard 0 and `ledger` on shard 1 (placed explicitly).
fn two_shard_scenario(name: &'static str, seed: u64) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.shards = 2;
    s.clients = 4;
    s.sql = Some(SqlSpec { ledger: true, id_space: 10, txns_per_client: 8, ..SqlSpec::default() });
    s.tables = [("accounts".to_string(), 0), ("ledger".to_string(), 1)].into_iter().collect();
    s
}

/// Runs the seeds of a two-shard scenario as `run_all` does (the two-table workload has four
/// setup transactions); besides, at least `min_cross` committed transactions in all wrote
/// both shards, and committed audits checked the conserved total.
fn run_two_shards(make: impl Fn(u64) -> Scenario, count: u64, salt: u64, min_committed_per_seed: usize, min_cross: usize) -> Vec<Outcome> {
    let started = Instant::now();
    let outcomes = run_all(make, count, salt, 2 + min_committed_per_seed);
    let runs = outcomes.len();
    let sum = |f: fn(&Outcome) -> usize| outcomes.iter().map(f).sum::<usize>();
    let (committed, multi, cross, audits) =
        (sum(|o| o.committed), sum(|o| o.multi_shard_commits), sum(|o| o.cross_shard_write_commits), sum(|o| o.ledger_audits));
    eprintln!(
        "{runs} seeds in {:.1?}: {committed} committed, {multi} naming two shards, {cross} writing both, {audits} audits checked",
        started.elapsed()
    );
    // A single re-run seed (SIM_SEED) need not reach the totals.
    if runs > 1 {
        assert!(cross >= min_cross, "only {cross} committed transactions wrote both shards in {runs} runs");
        assert!(audits > 0, "no committed audit checked the conserved total");
    }
    outcomes
}

#[test]
fn sql_two_shards_base() {
    run_two_shards(|seed| two_shard_scenario("sql-2shards-base", seed), 80, 511, 12, 400);
}

#[test]
fn sql_two_shards_with_drops_and_a_crash() {
    run_two_shards(
        |seed| {
            let mut s = two_shard_scenario("sql-2shards-drops-crash", seed);
            s.drop_prob = 0.02;
            s.crashes_per_shard = 1;
            s.crash_at_us = 200_000;
            s
        },
        60,
        512,
        10,
        250,
    );
}

#[test]
fn sql_two_shards_with_byzantine_replicas() {
    let faults = [
        ("sql-2shards-lie-range", ReplicaFault::LieRange),
        ("sql-2shards-fabricate-reads", ReplicaFault::FabricateReads),
        ("sql-2shards-abort-all", ReplicaFault::AbortAll),
    ];
    for (name, fault) in faults {
        run_two_shards(
            |seed| {
                let mut s = two_shard_scenario(name, seed);
                s.byz_replicas_per_shard = 1;
                s.replica_fault = Some(fault);
                s
            },
            25,
            513,
            10,
            100,
        );
    }
}

#[test]
fn sql_two_shards_forced_snapshots_with_a_third_of_replicas_missing_writes() {
    let outcomes = run_two_shards(
        |seed| {
            let mut s = two_shard_scenario("sql-2shards-snapshot-sync", seed);
            s.force_snapshot_path = true;
            s.omit_writebacks_per_shard = 2;
            s
        },
        30,
        514,
        2,
        10,
    );
    assert!(outcomes.iter().map(|o| o.range.snapshot).sum::<u64>() > 0, "range reads completed on the snapshot path");
}

#[test]
fn sql_two_shards_with_a_client_proposing_fabricated_snapshots() {
    run_two_shards(
        |seed| {
            let mut s = two_shard_scenario("sql-2shards-fabricated-snapshots", seed);
            s.byz_clients = 1;
            s.client_fault = Some(ClientFault::FabricatedSnapshots);
            s.byz_txns = 40;
            s
        },
        25,
        515,
        10,
        100,
    );
}

/// Known bug, seed 900000010 (two shards, drops and a crash, sweeps that read before they
/// delete): a transaction evaluates the predicate `ledger.account = 2` twice (SELECT sum, then
/// DELETE with the same WHERE), with different active keys and table versions. The
/// coordinator emits PredSet_T ordered by (predicate, active) (`sql_commit_parts`), but
/// `TxnMeta::validate` wants it sorted by `PredicateRead`'s derived order (predicate,
/// table_version, active): every replica refuses the ST1 as malformed, and the client
/// retransmits it until the run's time limit (liveness failure).
#[test]
#[ignore = "known bug: non-canonical predicate set from the coordinator (seed 900000010); remove once fixed"]
fn sql_two_shards_noncanonical_predicates_seed_900000010() {
    let mut s = Scenario::base("sql-2shards-noncanonical-predicates", 900_000_010);
    s.shards = 2;
    s.clients = 3;
    s.sql = Some(SqlSpec { ledger: true, id_space: 10, sweep_reads_first: true, ..SqlSpec::default() });
    s.tables = [("accounts".to_string(), 0), ("ledger".to_string(), 1)].into_iter().collect();
    s.drop_prob = 0.02;
    s.crashes_per_shard = 1;
    s.crash_at_us = 200_000;
    if let Err(e) = run(&s) {
        panic!("{e}");
    }
}
