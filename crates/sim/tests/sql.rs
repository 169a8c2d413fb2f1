//! Pesto in the simulator: interactive SQL transactions of correct clients, checked by the SQL
//! oracle (every statement's result equals its result on a model database that replays the
//! committed transactions in timestamp order). A failure prints scenario and seed;
//! `SIM_SEED=<seed> cargo test -p pistou-sim --test sql` re-runs that seed.

use pistou_sim::{run, ClientFault, Outcome, ReplicaFault, Scenario, SqlSpec};

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
