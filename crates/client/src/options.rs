use pistou_txn::CoordinatorTimeouts;
use std::time::Duration;

/// Tunables of a [`crate::Client`]. The defaults suit a LAN cluster.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Upper bound on one `get` or `commit`, including retransmissions.
    pub op_timeout: Duration,
    /// Upper bound on one TCP connect attempt.
    pub connect_timeout: Duration,
    /// Longest wait between reconnection attempts (back-off doubles up to this).
    pub max_backoff: Duration,
    /// Period of `Coordinator::tick` (fast-path timeout, retransmissions).
    pub tick_interval: Duration,
    /// Timers of the protocol itself.
    pub timeouts: CoordinatorTimeouts,
    /// Attempts `Client::run_txn` makes before giving up on repeated aborts.
    pub max_attempts: u32,
    /// Largest frame accepted from a replica.
    pub max_frame_bytes: usize,
    /// Messages queued per replica link; beyond that new ones are dropped (and retransmitted).
    pub link_queue: usize,
    /// How long a dropped client keeps running to finish pending writebacks.
    pub linger: Duration,
    /// Stress mode for benchmarks: `false` makes every range read take the snapshot path
    /// (Pesto Fig. 8 "eager path forced to fail").
    pub eager_range_reads: bool,
    /// Stress mode for benchmarks: writebacks skip this many replicas of each shard (Pesto
    /// Fig. 8 "inconsistency at 1/3 of the replicas").
    #[cfg(feature = "fault-injection")]
    pub writeback_omissions: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            op_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(1),
            max_backoff: Duration::from_secs(1),
            tick_interval: Duration::from_millis(5),
            timeouts: CoordinatorTimeouts::default(),
            max_attempts: 100,
            max_frame_bytes: pistou_wire::DEFAULT_MAX_FRAME_BYTES,
            link_queue: 4096,
            linger: Duration::from_secs(2),
            eager_range_reads: true,
            #[cfg(feature = "fault-injection")]
            writeback_omissions: 0,
        }
    }
}
