//! The leaderless transaction protocol of Basil (SOSP '21, §3–4) as sans-IO state machines.
//!
//! - [`Replica`]: one replica of one shard. Runs MVTSO-Check (Alg. 1) once per transaction,
//!   logs ST2 decisions, applies writebacks, answers reads. Driven by `handle` / `tick` /
//!   `flush`; it never reads a clock, sleeps or touches a socket.
//! - [`Coordinator`]: the client side. Chooses timestamps, runs reads against 2f+1 replicas,
//!   buffers writes, tallies ST1 votes per shard (fast and slow paths), logs slow decisions on
//!   S_log, and sends the writeback.
//! - [`Authenticator`]: every signature and certificate check, shared by both.

// Quorum thresholds are written as in the papers (`>= 3f+1`), not as `> 3f`.
#![allow(clippy::int_plus_one)]
#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

mod auth;
mod catchup;
mod cc;
mod coordinator;
mod fallback;
mod gc;
mod inquiry;
mod invariants;
mod log;
mod pesto;
mod quota;
mod recovery;
mod rejects;
mod replica;
mod tally;

pub use auth::{sign_client, AuthError, Authenticator};
pub use cc::conflicts;
pub use coordinator::{
    Coordinator, CoordinatorEvent, CoordinatorTimeouts, GetStart, RangeStats, SavepointOp, SqlOutput, TxnError,
    TxnHandle, MAX_SAVEPOINT_WRITES,
};
pub use gc::Footprint;
pub use log::{DiscardLog, LogEntry, MemoryLog, ReplicaLog};
pub use pesto::range_jobs::{RangeJob, RangeJobDone};
pub use pesto::CatalogWrite;
pub use rejects::{RejectReason, Rejections};
pub use replica::{Replica, ReplicaStats, DEFAULT_VIEW_TIMEOUT_US};
pub use tally::{ShardOutcome, ShardTally};
