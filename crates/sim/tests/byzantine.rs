//! Byzantine clients and replicas (Basil §5, issue 3), checked over many seeds: the oracle
//! (Byz-serializability), agreement of clients and replicas on decisions, vote stability of
//! correct replicas, Byzantine independence, and recovery liveness (every run must finish).
//! `SIM_SEED=<seed>` re-runs one seed.

use pistou_sim::{assert_replays, run, ClientFault, Outcome, ReplicaFault, Scenario};

fn seeds(count: u64, salt: u64) -> Vec<u64> {
    pistou_sim::seeds(count, salt * 7_919)
}

fn run_all(make: impl Fn(u64) -> Scenario, count: u64, salt: u64) -> Vec<Outcome> {
    let seeds = seeds(count, salt);
    let outcomes: Vec<Outcome> = seeds.iter().map(|&seed| run(&make(seed)).unwrap_or_else(|e| panic!("{e}"))).collect();
    assert_replays(&make(seeds[0]), &outcomes[0]);
    outcomes
}

/// Correct clients on a small hot set, so that they read what Byzantine clients wrote.
fn with_byz_clients(name: &'static str, seed: u64, fault: ClientFault) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.clients = 3;
    s.byz_clients = 2;
    s.client_fault = Some(fault);
    s.byz_txns = 6;
    s.workload.txns_per_client = 12;
    s.workload.hot_keys = 3;
    s.workload.hot_share = 0.7;
    s
}

fn with_byz_replicas(name: &'static str, seed: u64, fault: ReplicaFault) -> Scenario {
    let mut s = Scenario::base(name, seed);
    s.byz_replicas_per_shard = 1;
    s.replica_fault = Some(fault);
    s.workload.txns_per_client = 12;
    s
}

fn committed(o: &[Outcome]) -> usize {
    o.iter().map(|x| x.committed).sum()
}

#[test]
fn stall_early_clients() {
    let o = run_all(|seed| with_byz_clients("stall-early", seed, ClientFault::StallEarly), 60, 1);
    assert!(committed(&o) > 0);
}

#[test]
fn stall_late_clients_are_finished_by_correct_ones() {
    let o = run_all(|seed| with_byz_clients("stall-late", seed, ClientFault::StallLate), 80, 2);
    assert!(o.iter().map(|x| x.recoveries).sum::<u64>() > 0, "recovery never ran");
}

#[test]
fn partial_st1_clients() {
    let o = run_all(|seed| with_byz_clients("partial-st1", seed, ClientFault::PartialSt1), 60, 3);
    assert!(committed(&o) > 0);
}

#[test]
fn equivocating_clients() {
    run_all(|seed| with_byz_clients("equivocate", seed, ClientFault::Equivocate), 60, 4);
}

#[test]
fn forced_equivocation_is_resolved_by_the_fallback() {
    let o = run_all(|seed| with_byz_clients("forced-equivocation", seed, ClientFault::ForcedEquivocate), 80, 5);
    assert!(o.iter().map(|x| x.fallback_adoptions).sum::<u64>() > 0, "the fallback leader never decided");
}

#[test]
fn future_timestamps_and_fabricated_dependencies() {
    run_all(|seed| with_byz_clients("future-ts", seed, ClientFault::FutureTimestamps), 40, 6);
    run_all(|seed| with_byz_clients("fabricated-deps", seed, ClientFault::FabricatedDeps), 40, 7);
}

#[test]
fn lying_replicas_on_reads() {
    run_all(|seed| with_byz_replicas("stale-reads", seed, ReplicaFault::StaleReads), 40, 8);
    run_all(|seed| with_byz_replicas("fabricated-reads", seed, ReplicaFault::FabricateReads), 40, 9);
}

#[test]
fn replicas_that_refuse_or_twist_votes_and_decisions() {
    run_all(|seed| with_byz_replicas("refuse-vote", seed, ReplicaFault::RefuseVote), 40, 10);
    run_all(|seed| with_byz_replicas("equivocate-st2r", seed, ReplicaFault::EquivocateSt2r), 40, 11);
    run_all(|seed| with_byz_replicas("lie-views", seed, ReplicaFault::LieViews), 40, 12);
}

#[test]
fn byzantine_fallback_leaders_are_replaced() {
    for (name, fault, salt) in
        [("silent-leader", ReplicaFault::SilentLeader, 13), ("lying-leader", ReplicaFault::LyingLeader, 14)]
    {
        let o = run_all(
            |seed| {
                let mut s = with_byz_clients(name, seed, ClientFault::ForcedEquivocate);
                s.byz_replicas_per_shard = 1;
                s.replica_fault = Some(fault);
                s
            },
            50,
            salt,
        );
        assert!(o.iter().map(|x| x.fallback_adoptions).sum::<u64>() > 0, "{name}: no fallback decision");
    }
}

#[test]
fn combined_faults() {
    run_all(
        |seed| {
            let mut s = with_byz_clients("stall-late+abort-all", seed, ClientFault::StallLate);
            s.byz_replicas_per_shard = 1;
            s.replica_fault = Some(ReplicaFault::AbortAll);
            s
        },
        40,
        15,
    );
    run_all(
        |seed| {
            let mut s = with_byz_clients("equivocate+lossy", seed, ClientFault::ForcedEquivocate);
            s.drop_prob = 0.03;
            s.max_delay_us = 4_000;
            s
        },
        40,
        16,
    );
    run_all(
        |seed| {
            let mut s = with_byz_clients("partial+stale-reads", seed, ClientFault::PartialSt1);
            s.byz_replicas_per_shard = 1;
            s.replica_fault = Some(ReplicaFault::StaleReads);
            s
        },
        40,
        17,
    );
}

#[test]
fn signed_run_with_byzantine_clients_and_replicas() {
    run_all(
        |seed| {
            let mut s = with_byz_clients("signed-byzantine", seed, ClientFault::ForcedEquivocate);
            s.crypto = true;
            s.byz_replicas_per_shard = 1;
            s.replica_fault = Some(ReplicaFault::FabricateReads);
            s.workload.txns_per_client = 6;
            s.byz_txns = 3;
            s
        },
        10,
        18,
    );
}

/// Byzantine independence (Basil §2): f replicas per shard voting abort on everything cannot
/// abort a correct client's transaction when there is no contention.
#[test]
fn byzantine_independence_under_abort_all() {
    let o = run_all(
        |seed| {
            let mut s = with_byz_replicas("independence", seed, ReplicaFault::AbortAll);
            s.workload.disjoint = true;
            s.workload.explicit_abort_share = 0.0;
            s.workload.blind_share = 0.0;
            s
        },
        60,
        19,
    );
    let aborts: usize = o.iter().map(|x| x.protocol_aborts).sum();
    assert_eq!(aborts, 0, "correct transactions aborted without contention");
    assert!(committed(&o) > 0);
}
