//! The accept loop: admission of unauthenticated connections (a budget apart from the
//! connection cap, per source), failed-password delays, the connection cap, shutdown.

use crate::auth::Authenticator;
use crate::config::GatewayConfig;
use crate::conn::{startup, Conn, Protocol, Startup};
use crate::errors::GatewayError;
use crate::frontend::PRE_AUTH_MESSAGE_BYTES;
use pistou_client::Client;
use pistou_sql::{Engine, Limits};
use pistou_wire::{HandshakeTicket, Handshakes};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// How long shutdown waits for connections to say goodbye.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// A wrong password is answered after 100 ms, doubling with each further failure from the
/// same source, up to 5 s; a success resets it.
const FIRST_FAILURE_DELAY: Duration = Duration::from_millis(100);
const MAX_FAILURE_DELAY: Duration = Duration::from_secs(5);
/// Sources whose failures are remembered; past that the record starts over.
const MAX_FAILING_SOURCES: usize = 4096;

struct Shared {
    client: Client,
    engine: Arc<Engine>,
    config: Arc<GatewayConfig>,
    auth: Authenticator,
    admission: Admission,
}

/// Who may start a startup exchange, and the failed passwords of each source.
struct Admission {
    /// When every slot is taken, a new connection takes the oldest one's: sockets that never
    /// authenticate cannot lock new clients out, whatever sources they come from.
    handshakes: Arc<Handshakes>,
    /// Startup exchanges in progress, by source address.
    per_source: Mutex<BTreeMap<IpAddr, usize>>,
    /// Consecutive failed passwords, by source address.
    failures: Mutex<BTreeMap<IpAddr, u32>>,
}

/// A startup exchange in progress: its slot is given back when it ends.
struct Handshake {
    shared: Arc<Shared>,
    source: IpAddr,
    ticket: HandshakeTicket,
}

impl Drop for Handshake {
    fn drop(&mut self) {
        let mut per_source = lock(&self.shared.admission.per_source);
        if let Some(n) = per_source.get_mut(&self.source) {
            *n -= 1;
            if *n == 0 {
                per_source.remove(&self.source);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Admission {
    /// A slot for a new unauthenticated connection from `source`, if its source's budget
    /// allows one (the oldest connection in its startup gives up its slot if all are taken).
    fn admit(shared: &Arc<Shared>, source: IpAddr) -> Option<Handshake> {
        let mut per_source = lock(&shared.admission.per_source);
        let n = per_source.entry(source).or_insert(0);
        if *n >= shared.config.max_handshakes_per_source {
            return None;
        }
        *n += 1;
        drop(per_source);
        let (ticket, _) = shared.admission.handshakes.take();
        Some(Handshake { shared: shared.clone(), source, ticket })
    }

    /// Records a failed password from `source`; how long to wait before saying so.
    fn failed(&self, source: IpAddr) -> Duration {
        let mut failures = lock(&self.failures);
        if failures.len() >= MAX_FAILING_SOURCES && !failures.contains_key(&source) {
            failures.clear();
        }
        let n = failures.entry(source).or_insert(0);
        *n = n.saturating_add(1);
        FIRST_FAILURE_DELAY.saturating_mul(1 << (*n - 1).min(10)).min(MAX_FAILURE_DELAY)
    }

    fn succeeded(&self, source: IpAddr) {
        lock(&self.failures).remove(&source);
    }
}

/// Serves PostgreSQL clients on `listener` until `shutdown` completes, then closes every
/// connection (open transactions are rolled back) and returns.
pub async fn serve(
    listener: TcpListener,
    client: Client,
    config: GatewayConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), GatewayError> {
    config.validate().map_err(GatewayError::Config)?;
    let limits = Limits { max_sql_len: config.max_statement_bytes, ..Limits::default() };
    let shared = Arc::new(Shared {
        client,
        engine: Arc::new(Engine::new(limits)),
        auth: Authenticator::new(&config.auth),
        admission: Admission {
            handshakes: Handshakes::new(config.max_handshakes),
            per_source: Mutex::new(BTreeMap::new()),
            failures: Mutex::new(BTreeMap::new()),
        },
        config: Arc::new(config),
    });
    tokio::spawn(drop_orphan_temp_tables(shared.client.clone()));
    let slots = Arc::new(Semaphore::new(shared.config.max_connections));
    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("gateway accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Reap finished connections so the set stays bounded.
        while tasks.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        // Over the unauthenticated budget: closed before reading anything.
        let Some(handshake) = Admission::admit(&shared, addr.ip()) else {
            if let Some(m) = &shared.config.metrics {
                m.connection_refused("startup-budget");
            }
            continue;
        };
        let (slots, stopped) = (slots.clone(), stopped.clone());
        tasks.spawn(serve_one(stream, addr, handshake, slots, stopped));
    }
    let _ = stop.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    Ok(())
}

/// Drops the temporary views and tables that earlier runs of this gateway left behind: a
/// gateway that crashed could not drop its sessions' relations (`temp.rs`). Once, at start;
/// a failure is logged and leaves them to the next start.
async fn drop_orphan_temp_tables(client: Client) {
    let id = client.id().0;
    let result: Result<(), pistou_client::ClientError> = async {
        let mut txn = client.begin().await?;
        let catalog = txn.catalog().await?;
        txn.rollback();
        for sql in crate::temp::drop_statements(&catalog, |name| crate::temp::orphan_namespace(name, id)) {
            let mut txn = client.begin().await?;
            txn.query(&sql, &[]).await?;
            txn.commit().await?;
            tracing::info!("{sql}: a temporary relation of an earlier run of this gateway");
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        tracing::warn!("could not drop the temporary tables of earlier runs of this gateway: {e}");
    }
}

/// Counts a served connection as open for as long as it lives.
struct OpenConnection(Arc<crate::metrics::GatewayMetrics>);

impl OpenConnection {
    fn new(metrics: Arc<crate::metrics::GatewayMetrics>) -> OpenConnection {
        metrics.connection_accepted();
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

async fn serve_one(
    stream: TcpStream,
    addr: std::net::SocketAddr,
    mut handshake: Handshake,
    slots: Arc<Semaphore>,
    stopped: watch::Receiver<bool>,
) {
    let shared = handshake.shared.clone();
    let mut conn = Conn::new(stream, addr, PRE_AUTH_MESSAGE_BYTES.min(shared.config.max_message_bytes));
    let started = tokio::time::timeout(shared.config.startup_timeout, startup(&mut conn, &shared.auth, &slots));
    let started = tokio::select! {
        started = started => started,
        // A newer connection took its slot: closed without a word, as at accept.
        _ = &mut handshake.ticket.evicted => return,
    };
    let slot = match started {
        Ok(Startup::Ready(slot)) => {
            shared.admission.succeeded(addr.ip());
            slot
        }
        Ok(Startup::Closed) => return,
        Ok(Startup::AuthFailed(info)) => {
            if let Some(m) = &shared.config.metrics {
                m.connection_refused("auth-failed");
            }
            // Each further failure from this source waits longer (guessing is slow).
            tokio::time::sleep(shared.admission.failed(addr.ip())).await;
            conn.send_error(*info).await;
            return;
        }
        Err(_) => {
            if let Some(m) = &shared.config.metrics {
                m.connection_refused("startup-timeout");
            }
            conn.fatal("08P01", "startup timed out").await;
            return;
        }
    };
    drop(handshake);
    let _open = shared.config.metrics.clone().map(OpenConnection::new);
    conn.set_max_message(shared.config.max_message_bytes);
    let protocol = Protocol::new(conn, (shared.client.clone(), shared.engine.clone()), shared.config.clone());
    protocol.run(stopped).await;
    drop(slot);
}
