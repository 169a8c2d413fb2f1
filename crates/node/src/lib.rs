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
//!                                          one outgoing link per peer replica (PeerOpen)
//! ```
//!
//! A connection says who it is in its first frame: `HelloClient` (its messages go to
//! `Replica::handle`, replies come back on it; with crypto on it then opens a session or
//! signs each request) or, from a replica, `PeerOpen`, a signed handshake after which every
//! frame carries the session's tag (its messages go to `Replica::handle_replica`; this
//! replica answers over its own outgoing link). A bare `HelloReplica` claim is accepted
//! only without crypto. Until a connection has authenticated, its frames are capped at
//! `PRE_AUTH_FRAME_BYTES`.
//!
//! Hostile input stays local: a framing or decoding error is counted by reason and closes
//! only the connection that sent it. A peer that does not read its replies fast enough is
//! disconnected instead of stalling the replica (clients retransmit). The clock is read
//! here, never inside the state machine.

mod clock;
mod conn;
mod counters;
mod driver;
mod metrics;
mod peers;
mod server;

pub use clock::now_us;
pub use conn::PRE_AUTH_FRAME_BYTES;
pub use counters::{NetCounters, NetReason};
pub use driver::ReplicaReport;
#[cfg(feature = "fault-injection")]
pub use server::Fault;
pub use server::{run_replica, NodeError, NodeOptions, ReplicaServer};
