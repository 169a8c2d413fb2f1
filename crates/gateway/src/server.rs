//! The accept loop: connection cap, per-connection tasks, shutdown.

use crate::auth::Authenticator;
use crate::config::GatewayConfig;
use crate::conn::{startup, Conn, Protocol};
use crate::errors::GatewayError;
use pistou_client::Client;
use pistou_sql::{Engine, Limits};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// Refused connections being answered at once; beyond that they are just closed.
const MAX_REJECTING: usize = 16;
/// Time to read a refused client's startup packet before answering it.
const REJECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long shutdown waits for connections to say goodbye.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

struct Shared {
    client: Client,
    engine: Arc<Engine>,
    config: Arc<GatewayConfig>,
    auth: Authenticator,
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
        config: Arc::new(config),
    });
    let slots = Arc::new(Semaphore::new(shared.config.max_connections));
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
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
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                let (shared, stopped) = (shared.clone(), stopped.clone());
                tasks.spawn(async move {
                    serve_one(stream, addr, shared, stopped).await;
                    drop(permit);
                });
            }
            Err(_) => {
                if let Ok(permit) = rejecting.clone().try_acquire_owned() {
                    let max_message = shared.config.max_message_bytes;
                    tasks.spawn(async move {
                        reject(stream, addr, max_message).await;
                        drop(permit);
                    });
                }
            }
        }
    }
    let _ = stop.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    Ok(())
}

async fn serve_one(stream: TcpStream, addr: std::net::SocketAddr, shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let mut conn = Conn::new(stream, addr, shared.config.max_message_bytes);
    match tokio::time::timeout(shared.config.startup_timeout, startup(&mut conn, &shared.auth)).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(_) => {
            conn.fatal("08P01", "startup timed out").await;
            return;
        }
    }
    let protocol = Protocol::new(conn, (shared.client.clone(), shared.engine.clone()), shared.config.clone());
    protocol.run(stopped).await;
}

/// Answers a connection over the cap the way PostgreSQL does: after its startup packet,
/// "sorry, too many clients already" (53300), then closes.
async fn reject(stream: TcpStream, addr: std::net::SocketAddr, max_message: usize) {
    let mut conn = Conn::new(stream, addr, max_message);
    let _ = tokio::time::timeout(REJECT_TIMEOUT, async {
        use futures::SinkExt;
        use pgwire::api::{ClientInfo, PgWireConnectionState};
        use pgwire::messages::response::SslResponse;
        use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
        while let Some(Ok(message)) = conn.next().await {
            match message {
                PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(_)) => {
                    if conn.send(PgWireBackendMessage::SslResponse(SslResponse::Refuse)).await.is_err() {
                        return;
                    }
                }
                PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::None) => {
                    conn.set_state(PgWireConnectionState::AwaitingStartup);
                }
                _ => return,
            }
        }
    })
    .await;
    conn.fatal("53300", "sorry, too many clients already").await;
}
