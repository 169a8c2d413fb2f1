//! Listener, accept loop with a connection cap, and the public entry points.

use crate::conn::{serve_connection, ClientQueues, ConnParams, Inbound, Token};
use crate::counters::{NetCounters, NetReason};
use crate::driver::{Driver, RangeWorker, ReplicaReport};
use pistou_core::{ClusterConfig, ReplicaId};
use pistou_crypto::SecretKey;
use pistou_txn::Replica;
use pistou_wire::Handshakes;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

/// Limits and periods of the runtime. The defaults suit a replica serving a few hundred
/// clients.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Simultaneous authenticated connections; one more is closed when its handshake ends
    /// (and counted).
    pub max_connections: usize,
    /// Largest frame a peer may send.
    pub max_frame_bytes: usize,
    /// Messages queued between the connection readers and the replica.
    pub inbound_queue: usize,
    /// Of those, at most this many from one client (over all its sessions); its readers
    /// wait for the rest. One driver batch (`MAX_DRAIN`): a flooding client then delays
    /// another's message by at most one batch of its own, not by a full queue.
    pub client_queue: usize,
    /// Replies queued per connection before the peer counts as too slow.
    pub outbound_queue: usize,
    /// Period of `Replica::tick`.
    pub tick_interval: Duration,
    /// How often rejection counters are checked and logged when they changed.
    pub stats_interval: Duration,
    /// Time a new connection has to finish its handshake (hello and session).
    pub hello_timeout: Duration,
    /// Connections still in their handshake; further ones are closed at accept (and
    /// counted). Apart from `max_connections`, so that sockets that never authenticate
    /// cannot take the slots of those that did.
    pub max_handshakes: usize,
    /// Messages queued per outgoing link to another replica.
    pub peer_queue: usize,
    /// After the first input of a batch, wait this long for more before handling and
    /// signing them together (Basil §4.4 batches with a timeout), when the previous batch
    /// held more than one client message (under load). Zero: batch only what is already
    /// queued. 500 µs measured best on YCSB-T (docs/benchmarks.md): +13% committed tx/s and
    /// a lower p99 than no window; 2 ms was no better than none. Tokio's timer rounds it up
    /// to a millisecond or more.
    pub batch_window: Duration,
    /// The replica's data directory, holding its durable log; `None` keeps everything in
    /// memory only (tests and benchmarks: a restarted replica then forgets what it signed).
    pub data_dir: Option<PathBuf>,
    /// Where to serve Prometheus metrics over HTTP (`GET /metrics`); `None`: not at all.
    /// Port 0 picks a free port ([`ReplicaServer::metrics_addr`] tells which).
    pub metrics_addr: Option<SocketAddr>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            max_connections: 1024,
            max_frame_bytes: pistou_wire::DEFAULT_MAX_FRAME_BYTES,
            inbound_queue: 4096,
            client_queue: 256,
            // Fills only when a peer stops reading (its socket buffer fills first). It
            // must exceed the replies one driver batch can produce (`MAX_DRAIN` inputs),
            // so that a burst never cuts off a healthy peer.
            outbound_queue: 1024,
            tick_interval: Duration::from_millis(10),
            stats_interval: Duration::from_secs(5),
            hello_timeout: Duration::from_secs(5),
            max_handshakes: 64,
            batch_window: Duration::from_micros(500),
            peer_queue: 1024,
            data_dir: None,
            metrics_addr: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("cannot start replica: {0}")]
    Config(String),
    // The io::Error is the `source`, not part of the message, so that error chains
    // (`{:#}` in anyhow) print it once.
    #[error("cannot listen on {addr}")]
    Bind { addr: String, source: std::io::Error },
    #[error("cannot recover the replica's state")]
    Storage(#[source] pistou_store::StoreError),
}

/// A replica bound to its listening socket, not yet serving.
pub struct ReplicaServer {
    listener: TcpListener,
    config: Arc<ClusterConfig>,
    replica: Replica,
    options: NodeOptions,
    counters: Arc<NetCounters>,
    #[cfg(feature = "fault-injection")]
    fault: Option<Fault>,
    /// A copy of the replica's key for peer session handshakes (crypto on only).
    peer_key: Option<SecretKey>,
    /// Bound at once (a taken port is a startup error); served from `run`.
    metrics_listener: Option<std::net::TcpListener>,
}

/// A deliberately Byzantine replica (testing and benchmarks only): what it sends is
/// rewritten by `pistou_adversary`, re-signed with its own key.
#[cfg(feature = "fault-injection")]
pub struct Fault {
    pub kind: pistou_adversary::ReplicaFault,
    pub signer: pistou_crypto::BatchSigner,
}

impl ReplicaServer {
    /// Binds the address the configuration gives replica `id`.
    pub async fn bind(
        config: Arc<ClusterConfig>,
        id: ReplicaId,
        key: Option<SecretKey>,
        options: NodeOptions,
    ) -> Result<ReplicaServer, NodeError> {
        let addr = config
            .replica(id)
            .ok_or_else(|| NodeError::Config(format!("replica {id} is not in the configuration")))?
            .addr
            .clone();
        let listener = TcpListener::bind(&addr).await.map_err(|source| NodeError::Bind { addr, source })?;
        Self::with_listener(listener, config, id, key, options)
    }

    /// Serves on an already bound listener (tests bind port 0 themselves).
    pub fn with_listener(
        listener: TcpListener,
        config: Arc<ClusterConfig>,
        id: ReplicaId,
        key: Option<SecretKey>,
        options: NodeOptions,
    ) -> Result<ReplicaServer, NodeError> {
        let peer_key = if config.crypto { key.clone() } else { None };
        let mut replica = Replica::new(config.clone(), id, key).map_err(NodeError::Config)?;
        let metrics_listener = match options.metrics_addr {
            Some(addr) => {
                let bind = |addr| {
                    let l = std::net::TcpListener::bind(addr)?;
                    l.set_nonblocking(true)?;
                    Ok(l)
                };
                Some(bind(addr).map_err(|source| NodeError::Bind { addr: format!("{addr} (metrics)"), source })?)
            }
            None => None,
        };
        if let Some(dir) = &options.data_dir {
            recover(&mut replica, dir, config.storage.sync)?;
        }
        Ok(ReplicaServer {
            metrics_listener,
            listener,
            config,
            replica,
            options,
            counters: Arc::new(NetCounters::default()),
            #[cfg(feature = "fault-injection")]
            fault: None,
            peer_key,
        })
    }

    /// Makes this replica Byzantine (testing and benchmarks only).
    #[cfg(feature = "fault-injection")]
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Where the Prometheus metrics are served, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Transport counters, live while the server runs.
    pub fn counters(&self) -> Arc<NetCounters> {
        self.counters.clone()
    }

    /// Serves until `shutdown` completes, then closes every connection.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> ReplicaReport {
        #[cfg(feature = "fault-injection")]
        let fault = self.fault;
        let ReplicaServer { listener, config, replica, options, counters, peer_key, metrics_listener, .. } = self;
        let id = replica.id();
        let worker = match RangeWorker::start(format!("pistou-sql-{id}")) {
            Ok(worker) => worker,
            Err(e) => {
                return ReplicaReport {
                    stats: replica.stats().clone(),
                    rejections: replica.rejections().clone(),
                    net: counters.snapshot(),
                    failure: Some(format!("cannot start the thread for long statements: {e}")),
                }
            }
        };
        let (metrics, metrics_server) = match metrics_listener.map(TcpListener::from_std) {
            Some(Ok(listener)) => {
                let (metrics, registry) = crate::metrics::ReplicaMetrics::new();
                let server = pistou_metrics::serve(listener, Arc::new(registry), None, std::future::pending());
                (Some(Arc::new(metrics)), Some(tokio::spawn(server)))
            }
            Some(Err(e)) => {
                tracing::error!(replica = %id, "metrics are off: cannot serve them: {e}");
                (None, None)
            }
            None => (None, None),
        };
        let (tx, rx) = mpsc::channel(options.inbound_queue);
        let acceptor = tokio::spawn(accept_loop(listener, config.clone(), id, tx, counters.clone(), options.clone()));
        tracing::info!(replica = %id, "serving");
        #[allow(unused_mut)] // mutated only with fault injection
        let mut driver = Driver::new(replica, config, counters, &options, peer_key, worker, metrics);
        #[cfg(feature = "fault-injection")]
        if let Some(fault) = fault {
            tracing::warn!(replica = %id, fault = ?fault.kind, "running as a BYZANTINE replica (testing only)");
            driver.set_fault(fault);
        }
        let report = driver.run(rx, shutdown, options.tick_interval, options.stats_interval).await;
        acceptor.abort();
        if let Some(server) = metrics_server {
            server.abort();
        }
        tracing::info!(
            replica = %id,
            commits = report.stats.commits_applied,
            fallback_adoptions = report.stats.fallback_adoptions,
            "stopped"
        );
        report
    }
}

/// Opens the durable log in `dir`, replays it on `replica` (new) and makes it the replica's
/// log. A corrupt or truncated log is an error naming the file: nothing is skipped.
fn recover(replica: &mut Replica, dir: &std::path::Path, sync: pistou_store::SyncMode) -> Result<(), NodeError> {
    let started = std::time::Instant::now();
    let (log, entries) = pistou_store::DurableLog::open(dir, sync).map_err(NodeError::Storage)?;
    let count = entries.len();
    let now = crate::clock::now_us();
    replica.recover(now, entries);
    // A replica with a history may have missed commits while it was down. (A new one has
    // nothing to catch up with unless it replaces a wiped replica: see architecture.md.)
    if count > 0 {
        replica.start_catch_up(now);
    }
    tracing::info!(
        replica = %replica.id(),
        file = %log.path().display(),
        entries = count,
        transactions = log.txn_count(),
        ms = started.elapsed().as_millis() as u64,
        sync = sync.as_str(),
        "recovered from the durable log"
    );
    if sync == pistou_store::SyncMode::None {
        tracing::warn!(replica = %replica.id(), "storage.sync = none is UNSAFE: a crash forgets what this replica signed in the last second");
    }
    replica.set_log(Box::new(log));
    Ok(())
}

/// Binds the configured address and serves until `shutdown` completes.
pub async fn run_replica(
    config: Arc<ClusterConfig>,
    id: ReplicaId,
    key: SecretKey,
    shutdown: impl Future<Output = ()>,
) -> Result<ReplicaReport, NodeError> {
    let server = ReplicaServer::bind(config, id, Some(key), NodeOptions::default()).await?;
    Ok(server.run(shutdown).await)
}

async fn accept_loop(
    listener: TcpListener,
    config: Arc<ClusterConfig>,
    me: ReplicaId,
    inbound: mpsc::Sender<Inbound>,
    counters: Arc<NetCounters>,
    options: NodeOptions,
) {
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let handshakes = Handshakes::new(options.max_handshakes);
    let client_queues = Arc::new(ClientQueues::new(options.client_queue));
    let mut next: Token = 0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Typically EMFILE: back off instead of spinning on the error.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (handshake, evicted) = handshakes.take();
        if evicted {
            counters.record(NetReason::HandshakeCap);
        }
        next += 1;
        let token = next;
        let (tx, rx) = mpsc::channel(options.outbound_queue);
        // Registered before the connection task exists, so before its first message.
        if inbound.send(Inbound::Opened { token, tx: tx.clone() }).await.is_err() {
            return;
        }
        let params = ConnParams {
            config: config.clone(),
            me,
            max_frame_bytes: options.max_frame_bytes,
            hello_timeout: options.hello_timeout,
            slots: slots.clone(),
            client_queues: client_queues.clone(),
        };
        let (inbound, counters) = (inbound.clone(), counters.clone());
        tokio::spawn(async move {
            serve_connection(stream, token, inbound, (tx, rx), counters, params, handshake).await;
        });
    }
}
