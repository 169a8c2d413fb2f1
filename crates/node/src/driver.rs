//! The single task that owns the `Replica`: all protocol state lives here, so no locks.

use crate::clock::now_us;
use crate::conn::{Inbound, Origin, Token};
use crate::counters::{NetCounters, NetReason};
use crate::peers::{run_peer_link, PeerLink};
use crate::server::NodeOptions;
use pistou_core::{ClusterConfig, ReplicaId};
use pistou_crypto::SecretKey;
use pistou_txn::{RangeJob, RangeJobDone, RejectReason, Rejections, Replica, ReplicaStats};
use pistou_wire::Message;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

/// Inputs handled before one `flush()`; bounded so ticks are never starved for long and
/// one batch's replies fit in a connection's queue (`NodeOptions::outbound_queue`).
const MAX_DRAIN: usize = 256;

pub(crate) struct Driver {
    replica: Replica,
    config: Arc<ClusterConfig>,
    conns: HashMap<Token, mpsc::Sender<Message>>,
    /// Outgoing links to other replicas, started on first use.
    peers: HashMap<ReplicaId, mpsc::Sender<Message>>,
    peer_queue: usize,
    max_frame_bytes: usize,
    /// Proves this replica's identity to its peers (`PeerOpen`); `None` without crypto.
    peer_key: Option<SecretKey>,
    /// Messages the replica addressed to itself (a fallback leader's own ELECTFB): handed
    /// back with the next input or tick, never sent over a socket to its own port.
    loopback: Vec<Message>,
    counters: Arc<NetCounters>,
    /// Counters as last logged, to log only changes.
    logged: Counts,
    #[cfg(feature = "fault-injection")]
    fault: Option<crate::server::Fault>,
    batch_window: Duration,
    /// Client messages in the last batch: the window is waited only under load.
    last_batch: usize,
    /// Runs range reads too long for this task (`Replica::take_range_job`).
    worker: RangeWorker,
    /// Prometheus metrics, when this replica serves them.
    metrics: Option<Arc<crate::metrics::ReplicaMetrics>>,
}

/// A thread that runs the replica's long range reads, one at a time, at the lowest scheduling
/// priority: a long statement then takes only the CPU the protocol (and everything else on the
/// machine) leaves over, and never delays it.
pub(crate) struct RangeWorker {
    jobs: std::sync::mpsc::Sender<RangeJob>,
    done: mpsc::UnboundedReceiver<RangeJobDone>,
}

impl RangeWorker {
    pub(crate) fn start(name: String) -> std::io::Result<RangeWorker> {
        let (jobs, job_rx) = std::sync::mpsc::channel::<RangeJob>();
        let (done_tx, done) = mpsc::unbounded_channel();
        std::thread::Builder::new().name(name).spawn(move || {
            lower_thread_priority();
            while let Ok(job) = job_rx.recv() {
                if done_tx.send(job.run()).is_err() {
                    break;
                }
            }
        })?;
        Ok(RangeWorker { jobs, done })
    }
}

/// Puts the calling thread in Linux's SCHED_IDLE class (per thread on Linux): any other
/// runnable thread preempts it at once, so it runs on CPU time nothing else wants.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param for the call's duration; pid 0 names the
        // calling thread.
        let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if result != 0 {
            let e = std::io::Error::last_os_error();
            tracing::warn!("long statements run at normal priority: sched_setscheduler failed: {e}");
        }
    }
}

type Counts = (Vec<(RejectReason, u64)>, Vec<(NetReason, u64)>);

/// What the replica did, returned when it stops.
#[derive(Clone, Debug)]
pub struct ReplicaReport {
    pub stats: ReplicaStats,
    pub rejections: Rejections,
    pub net: Vec<(NetReason, u64)>,
    /// Why the replica stopped on its own: its log could not be made durable.
    pub failure: Option<String>,
}

impl Driver {
    pub(crate) fn new(
        replica: Replica,
        config: Arc<ClusterConfig>,
        counters: Arc<NetCounters>,
        options: &NodeOptions,
        peer_key: Option<SecretKey>,
        worker: RangeWorker,
        metrics: Option<Arc<crate::metrics::ReplicaMetrics>>,
    ) -> Driver {
        Driver {
            replica,
            config,
            conns: HashMap::new(),
            peers: HashMap::new(),
            peer_queue: options.peer_queue.max(1),
            max_frame_bytes: options.max_frame_bytes,
            peer_key,
            loopback: Vec::new(),
            counters,
            logged: (Vec::new(), Vec::new()),
            #[cfg(feature = "fault-injection")]
            fault: None,
            batch_window: options.batch_window,
            last_batch: 0,
            worker,
            metrics,
        }
    }

    #[cfg(feature = "fault-injection")]
    pub(crate) fn set_fault(&mut self, fault: crate::server::Fault) {
        self.fault = Some(fault);
    }

    /// A reply as a Byzantine replica rewrites it (or drops it: `None`).
    #[cfg(feature = "fault-injection")]
    fn tampered_reply(&self, token: u64, msg: Message) -> Option<Message> {
        match &self.fault {
            Some(f) => {
                pistou_adversary::tamper(f.kind, &f.signer, self.replica.id(), token, msg, &mut rand::thread_rng())
            }
            None => Some(msg),
        }
    }

    /// A message to a peer as a Byzantine replica rewrites it (or drops it: `None`).
    #[cfg(feature = "fault-injection")]
    fn tampered_peer_message(&self, msg: Message) -> Option<Message> {
        match &self.fault {
            Some(f) => pistou_adversary::tamper_replica(f.kind, msg),
            None => Some(msg),
        }
    }

    pub(crate) async fn run(
        mut self,
        mut inbound: mpsc::Receiver<Inbound>,
        shutdown: impl Future<Output = ()>,
        tick_every: Duration,
        stats_every: Duration,
    ) -> ReplicaReport {
        // `interval` panics on a zero period; a misconfigured option must not.
        let floor = Duration::from_millis(1);
        let (tick_every, stats_every) = (tick_every.max(floor), stats_every.max(floor));
        let mut tick = tokio::time::interval(tick_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut stats = tokio::time::interval(stats_every);
        stats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        tokio::pin!(shutdown);
        let mut failure = None;
        self.publish_storage();
        // The first publication takes the committed count recovered from the log as the
        // baseline for `pistou_replica_last_commit_timestamp_seconds`.
        self.publish_counters(inbound.len());
        loop {
            tokio::select! {
                // Timers first: they fire rarely, and input must not starve them.
                biased;
                _ = &mut shutdown => break,
                _ = tick.tick() => {
                    self.deliver_loopback();
                    self.replica.tick(now_us());
                    if let Err(e) = self.flush_and_route() {
                        failure = Some(e);
                        break;
                    }
                    self.publish_counters(inbound.len());
                }
                _ = stats.tick() => {
                    self.log_if_changed();
                    self.publish_storage();
                }
                Some(done) = self.worker.done.recv() => {
                    self.replica.range_job_done(done);
                    if let Err(e) = self.flush_and_route() {
                        failure = Some(e);
                        break;
                    }
                }
                item = inbound.recv() => {
                    let Some(item) = item else { break };
                    // Natural batching: everything already queued is verified in one
                    // ed25519 batch (`handle_many`) and answered in one signed flush.
                    self.deliver_loopback();
                    let mut batch = Vec::new();
                    self.apply(item, &mut batch);
                    // Wait for more only when the last batch had company: a lone client
                    // would pay the window (a tokio timer: a millisecond or more) on every
                    // step of every transaction and gain nothing from batching.
                    if !self.batch_window.is_zero() && self.last_batch > 1 {
                        tokio::time::sleep(self.batch_window).await;
                    }
                    for _ in 0..MAX_DRAIN {
                        let Ok(item) = inbound.try_recv() else { break };
                        self.apply(item, &mut batch);
                    }
                    self.last_batch = batch.len();
                    let started = std::time::Instant::now();
                    self.replica.handle_many(now_us(), batch);
                    if let Err(e) = self.flush_and_route() {
                        failure = Some(e);
                        break;
                    }
                    if let Some(m) = &self.metrics {
                        // Batches of replica messages only (handled as they come) are not
                        // client batches: leave them out of the histograms.
                        if self.last_batch > 0 {
                            m.observe_batch(self.last_batch, started.elapsed().as_secs_f64());
                        }
                    }
                }
            }
        }
        self.log_if_changed();
        self.publish_counters(inbound.len());
        self.publish_storage();
        // Dropping the writers' senders closes every connection and peer link.
        self.conns.clear();
        self.peers.clear();
        ReplicaReport {
            stats: self.replica.stats().clone(),
            rejections: self.replica.rejections().clone(),
            net: self.counters.snapshot(),
            failure,
        }
    }

    /// Client messages are collected into `batch` for `handle_many`; the rest is applied
    /// at once (connection bookkeeping, and replica messages, which are few).
    fn apply(&mut self, item: Inbound, batch: &mut Vec<(Token, Message)>) {
        match item {
            Inbound::Opened { token, tx } => {
                self.conns.insert(token, tx);
            }
            Inbound::Session { token, client } => self.replica.open_session(token, client),
            Inbound::Closed { token } => {
                self.conns.remove(&token);
                self.replica.close_session(token);
            }
            // Taking a message gives its client's queue place back (`queued` dropped here).
            // A connection the driver dropped (a slow reader, a session ended for a bad
            // signature) is closing: what it sent meanwhile goes unread, as if lost.
            Inbound::Message { from: Origin::Client(token), msg, queued } => {
                drop(queued);
                if self.conns.contains_key(&token) {
                    batch.push((token, msg))
                }
            }
            Inbound::Message { from: Origin::Replica(r), msg, .. } => self.replica.handle_replica(now_us(), r, msg),
        }
    }

    /// Signs the batch's replies, makes the log durable (group commit: one sync per batch),
    /// then sends. A failed sync sends nothing: the replies would promise what a crash may
    /// make the replica forget.
    fn flush_and_route(&mut self) -> Result<(), String> {
        if let Some(job) = self.replica.take_range_job() {
            // The worker lives as long as the driver; a send fails only if it panicked.
            if self.worker.jobs.send(job).is_err() {
                return Err("the thread running long statements stopped".into());
            }
        }
        self.replica.flush();
        let mut sync = || self.replica.sync_log();
        // The sync blocks on the disk; on a multi-threaded runtime, let other tasks (the
        // connections) move to another worker meanwhile.
        let synced = match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(sync),
            _ => sync(),
        };
        if let Err(e) = synced {
            tracing::error!(replica = %self.replica.id(), "stopping: the log cannot be made durable: {e}");
            return Err(e);
        }
        let me = self.replica.id();
        for token in self.replica.take_ended_sessions() {
            // Dropping its sender ends the connection (its replies so far go with it).
            self.conns.remove(&token);
        }
        for (token, msg) in self.replica.take_outputs() {
            #[cfg(feature = "fault-injection")]
            let Some(msg) = self.tampered_reply(token, msg) else {
                continue;
            };
            let Some(tx) = self.conns.get(&token) else { continue }; // peer already gone
            match tx.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    // Never block the replica on one peer: drop it, it can reconnect and
                    // retransmit (clients do).
                    self.counters.record(NetReason::SlowPeer);
                    self.conns.remove(&token);
                }
                Err(TrySendError::Closed(_)) => {
                    self.conns.remove(&token);
                }
            }
        }
        for (to, msg) in self.replica.take_replica_outputs() {
            #[cfg(feature = "fault-injection")]
            let Some(msg) = self.tampered_peer_message(msg) else {
                continue;
            };
            if to == me {
                self.loopback.push(msg);
                continue;
            }
            match self.peer(to).try_send(msg) {
                Ok(()) => {}
                // The peer is down or slow; the fallback protocol retries on its timers.
                Err(TrySendError::Full(_)) => self.counters.record(NetReason::PeerQueueFull),
                Err(TrySendError::Closed(_)) => {
                    self.peers.remove(&to);
                }
            }
        }
        Ok(())
    }

    fn deliver_loopback(&mut self) {
        let me = self.replica.id();
        for msg in std::mem::take(&mut self.loopback) {
            self.replica.handle_replica(now_us(), me, msg);
        }
    }

    /// The link to replica `to`, started if needed.
    fn peer(&mut self, to: ReplicaId) -> mpsc::Sender<Message> {
        if let Some(tx) = self.peers.get(&to) {
            return tx.clone();
        }
        let (tx, rx) = mpsc::channel(self.peer_queue);
        // The replica only addresses members; an unknown one gets a link that never connects.
        let addr = self.config.replica(to).map(|r| r.addr.clone()).unwrap_or_default();
        let link = PeerLink {
            me: self.replica.id(),
            to,
            addr,
            max_frame_bytes: self.max_frame_bytes,
            key: self.peer_key.clone(),
        };
        tokio::spawn(run_peer_link(link, rx));
        self.peers.insert(to, tx.clone());
        tx
    }

    fn publish_counters(&self, inbound_queue: usize) {
        if let Some(m) = &self.metrics {
            m.publish_counters(
                now_us(),
                &self.replica,
                &self.counters,
                inbound_queue,
                self.conns.len(),
                self.peers.len(),
            );
        }
    }

    fn publish_storage(&self) {
        if let Some(m) = &self.metrics {
            m.publish_storage(&self.replica);
        }
    }

    fn log_if_changed(&mut self) {
        let rejects: Vec<(RejectReason, u64)> = self.replica.rejections().iter().collect();
        let net = self.counters.snapshot();
        if (&rejects, &net) == (&self.logged.0, &self.logged.1) {
            return;
        }
        let line: Vec<String> = rejects
            .iter()
            .map(|(r, c)| format!("{}={c}", r.as_str()))
            .chain(net.iter().map(|(r, c)| format!("{}={c}", r.as_str())))
            .collect();
        let s = self.replica.stats();
        tracing::warn!(
            replica = %self.replica.id(),
            reads = s.reads,
            commits = s.commits_applied,
            aborts = s.aborts_applied,
            "rejected input so far: {}",
            line.join(" ")
        );
        self.logged = (rejects, net);
    }
}
