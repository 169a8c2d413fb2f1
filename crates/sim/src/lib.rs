//! A deterministic, single-threaded simulator for the leaderless protocol.
//!
//! It runs the real `Replica` and `Coordinator` state machines of several shards over a
//! simulated network (seeded delays and reordering, drops, partitions, crashes) with a
//! simulated clock. Every message goes through the real codec. The [`oracle`] replays the
//! committed transactions of correct clients in timestamp order on a model key-value store
//! and checks every read (Byz-serializability); with a SQL workload, [`sql_oracle`] replays the
//! committed SQL transactions on a model database and checks every statement's result. The
//! same seed always produces the same run.

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
pub use sql_workload::SqlSpec;
