//! A deterministic, single-threaded simulator for the leaderless protocol.
//!
//! It runs the real `Replica` and `Coordinator` state machines of several shards over a
//! simulated network (seeded delays and reordering, drops, partitions, crashes) with a
//! simulated clock. Every message goes through the real codec. The [`oracle`] replays the
//! committed transactions of correct clients in timestamp order on a model key-value store
//! and checks every read (Byz-serializability); with a SQL workload, [`sql_oracle`] replays the
//! committed SQL transactions on a model database and checks every statement's result. The
//! same seed always produces the same run.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

pub mod ledger_audit;
pub mod network;
pub mod oracle;
pub mod scenario;
pub mod sql_byz;
pub mod sql_oracle;
pub mod sql_workload;
pub mod workload;

pub use pistou_adversary::{ClientFault, ReplicaFault};
pub use scenario::{run, Outcome, Scenario, SimError};

/// The seeds a test runs a scenario with: `count` consecutive ones from `first`, times
/// `SIM_SEEDS_SCALE` (1 to 1,000; long runs, reported in docs/testing.md), or only the seed
/// `SIM_SEED` names (re-running a failure).
pub fn seeds(count: u64, first: u64) -> Vec<u64> {
    if let Some(seed) = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![seed];
    }
    let scale = std::env::var("SIM_SEEDS_SCALE").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(1).clamp(1, 1000);
    (first..first + count * scale).collect()
}
/// Determinism: runs `s` again and panics unless the run is the very same as `first`
/// (same trace digest over every delivered message). The test suites call it once per
/// scenario family, on its first seed.
pub fn assert_replays(s: &Scenario, first: &Outcome) {
    let again = run(s).unwrap_or_else(|e| panic!("replay of {} seed {}: {e}", s.name, s.seed));
    assert!(again.trace == first.trace, "{} seed {}: the same seed gave another run", s.name, s.seed);
}
pub use sql_workload::SqlSpec;
