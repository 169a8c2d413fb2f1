//! An in-process Pistou cluster (replicas over real TCP on 127.0.0.1) with a gateway in
//! front of it, for the gateway's tests.
#![allow(dead_code)]

use pistou_client::{Client, ClientOptions};
use pistou_core::{ClientId, ClusterBuilder, SqlConfig};
use pistou_gateway::{serve, GatewayConfig};
use pistou_node::{NodeOptions, ReplicaServer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Harness {
    pub addr: SocketAddr,
    stop_cluster: watch::Sender<bool>,
    stop_gateway: Option<tokio::sync::oneshot::Sender<()>>,
    gateway: Option<tokio::task::JoinHandle<Result<(), pistou_gateway::GatewayError>>>,
    pub client: Client,
    /// A second client of the cluster (its own coordinator and caches), beside the gateway.
    pub other: Client,
}

impl Harness {
    /// Stops the gateway (closing its connections) and then the cluster.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop_gateway.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.gateway.take() {
            let result = tokio::time::timeout(Duration::from_secs(10), task).await;
            assert!(matches!(result, Ok(Ok(Ok(())))), "gateway did not stop cleanly: {result:?}");
        }
        self.client.shutdown().await;
        self.other.shutdown().await;
        let _ = self.stop_cluster.send(true);
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.stop_cluster.send(true);
    }
}

/// A one-shard cluster with f = 1 (six replicas) and a gateway on an ephemeral port.
pub async fn start(config: GatewayConfig) -> Harness {
    start_with_sql(config, SqlConfig::default()).await
}

/// [`start`], with the cluster's SQL settings.
pub async fn start_with_sql(config: GatewayConfig, sql: SqlConfig) -> Harness {
    let mut listeners = Vec::new();
    for _ in 0..6 {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.expect("bind replica"));
    }
    let addrs = listeners.iter().map(|l| l.local_addr().expect("replica addr"));
    let built = ClusterBuilder::new(1).clients(2).sql(sql).replica_addrs(addrs).random_keys().build();
    let cluster = built.config.clone();
    let (stop_cluster, _) = watch::channel(false);
    for (id, l) in cluster.all_replicas().zip(listeners) {
        let key = built.replica_key(id);
        let server =
            ReplicaServer::with_listener(l, cluster.clone(), id, Some(key), NodeOptions::default()).expect("replica");
        let mut rx = stop_cluster.subscribe();
        tokio::spawn(server.run(async move {
            let _ = rx.wait_for(|s| *s).await;
        }));
    }
    let [client_key, other_key] = [1, 2].map(|id| built.client_key(ClientId(id)));
    let options = ClientOptions { op_timeout: Duration::from_secs(20), ..ClientOptions::default() };
    let other = Client::connect_with(cluster.clone(), ClientId(2), Some(other_key), options.clone())
        .await
        .expect("second client");
    let client = Client::connect_with(cluster, ClientId(1), Some(client_key), options).await.expect("client");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind gateway");
    let addr = listener.local_addr().expect("gateway addr");
    let (stop_gateway, stopped) = tokio::sync::oneshot::channel::<()>();
    let gateway = tokio::spawn(serve(listener, client.clone(), config, async move {
        let _ = stopped.await;
    }));
    Harness { addr, stop_cluster, stop_gateway: Some(stop_gateway), gateway: Some(gateway), client, other }
}

/// A connection to the machine's PostgreSQL (127.0.0.1:5432, database `test`, trust auth),
/// the reference the parity tests compare with; an unreachable PostgreSQL fails the test.
pub async fn postgres() -> tokio_postgres::Client {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(5432).user("postgres").dbname("test").connect_timeout(Duration::from_secs(10));
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("this test compares with PostgreSQL at 127.0.0.1:5432 (database test): {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Where a parity test runs its statements: the machine's PostgreSQL or a gateway.
#[derive(Clone, Copy)]
pub enum Server {
    Postgres,
    Gateway(SocketAddr),
}

impl Server {
    pub async fn connect(self) -> tokio_postgres::Client {
        match self {
            Server::Postgres => postgres().await,
            Server::Gateway(addr) => connect(addr).await,
        }
    }
}

/// A tokio-postgres connection to the gateway (trust auth).
pub async fn connect(addr: SocketAddr) -> tokio_postgres::Client {
    connect_as(addr, "tester", None).await.expect("connect to the gateway")
}

pub async fn connect_as(
    addr: SocketAddr,
    user: &str,
    password: Option<&str>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(addr.port()).user(user).dbname("pistou").connect_timeout(Duration::from_secs(10));
    if let Some(p) = password {
        config.password(p);
    }
    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The SQLSTATE of a failed tokio-postgres call.
pub fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

/// Runs a test body with a time bound.
pub async fn bounded<F: std::future::Future<Output = ()>>(secs: u64, body: F) {
    tokio::time::timeout(Duration::from_secs(secs), body).await.expect("test timed out");
}

/// A startup packet (protocol 3.0) for `user`.
pub fn startup(user: &str) -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for (k, v) in [("user", user), ("database", "pistou")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

pub fn query(sql: &str) -> Vec<u8> {
    let mut out = vec![b'Q'];
    out.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    out.extend_from_slice(sql.as_bytes());
    out.push(0);
    out
}

/// Reads backend messages until ReadyForQuery; returns (type, body) pairs.
pub async fn until_ready(s: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let kind = s.read_u8().await.expect("message type");
        let len = s.read_i32().await.expect("message length");
        let mut body = vec![0; (len - 4) as usize];
        s.read_exact(&mut body).await.expect("message body");
        let done = kind == b'Z';
        out.push((kind, body));
        if done {
            return out;
        }
    }
}

/// The SQLSTATE field of an ErrorResponse body.
pub fn error_code(body: &[u8]) -> String {
    body.split(|b| *b == 0)
        .find_map(|f| f.strip_prefix(b"C"))
        .map(|c| String::from_utf8_lossy(c).to_string())
        .unwrap_or_default()
}

pub fn tag(body: &[u8]) -> String {
    String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body)).to_string()
}

pub async fn raw_session(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(&startup("raw")).await.expect("startup");
    let messages = until_ready(&mut s).await;
    assert_eq!(messages.last().map(|m| m.1.clone()), Some(b"I".to_vec()));
    s
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// Parse: a named statement, no declared parameter types.
pub fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, name);
    cstr(&mut body, sql);
    body.extend_from_slice(&0i16.to_be_bytes());
    message(b'P', &body)
}

/// Bind of the unnamed portal to `statement`, text parameters, text results.
pub fn bind(statement: &str, params: &[&str]) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, "");
    cstr(&mut body, statement);
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        body.extend_from_slice(&(p.len() as i32).to_be_bytes());
        body.extend_from_slice(p.as_bytes());
    }
    body.extend_from_slice(&0i16.to_be_bytes());
    message(b'B', &body)
}

/// Execute of the unnamed portal (all rows), then Sync.
pub fn execute_and_sync() -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, "");
    body.extend_from_slice(&0i32.to_be_bytes());
    let mut out = message(b'E', &body);
    out.extend(message(b'S', &[]));
    out
}

pub fn sync() -> Vec<u8> {
    message(b'S', &[])
}
