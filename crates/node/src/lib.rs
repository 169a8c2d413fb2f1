//! The replica runtime: the real-process layer around the sans-IO [`pistou_txn::Replica`].
//!
//! Layout (one replica process):
//!
//! ```text
//!  TCP listener ──accept──▶ connection task (per peer, capped)
//!                             reader: frames → decode → Inbound::Message ─┐ bounded mpsc
//!                             writer: ◀── per-connection bounded mpsc ◀─┐ │
//!                                                                       │ ▼
//!                                                  driver task: owns the Replica;
//!                                                  drain input, flush(), route outputs, tick
//!                                                       │ replica outputs (Basil §5 fallback)
//!                                                       ▼
//!                                          one outgoing link per peer replica (HelloReplica)
//! ```
//!
//! A connection says who it is in its first frame: `HelloClient` (its messages go to
//! `Replica::handle`, replies come back on it) or `HelloReplica` (its messages go to
//! `Replica::handle_replica`; this replica answers over its own outgoing link). The claim
//! is not trusted for anything but routing: every replica message is signed.
//!
//! Hostile input stays local: a framing or decoding error is counted by reason and closes
//! only the connection that sent it. A peer that does not read its replies fast enough is
//! disconnected instead of stalling the replica (clients retransmit). The clock is read
//! here, never inside the state machine.

mod clock;
mod conn;
mod counters;
mod driver;
mod peers;
mod server;

pub use clock::now_us;
pub use counters::{NetCounters, NetReason};
pub use driver::ReplicaReport;
pub use server::{run_replica, Fault, NodeError, NodeOptions, ReplicaServer};
