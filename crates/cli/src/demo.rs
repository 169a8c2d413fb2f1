//! `pistou demo`: a local one-shard cluster (f = 1, six replicas), a PostgreSQL-protocol
//! gateway on 127.0.0.1:5433 with a small bank, and the SQL shell, in one command.

use crate::cluster::Cluster;
use crate::files::{config_path, has_data};
use crate::init::{init, InitSpec};
use crate::kv::connect;
use crate::signals::stop_requested;
use crate::sql_shell;
use anyhow::{bail, Context, Result};
use pistou_client::{Client, ClientError};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::oneshot;

const FIRST_DEMO_PORT: u16 = 7100;

/// The sample data: a bank with accounts and the transfers between them. Each statement
/// runs as its own transaction (schema changes must be alone in theirs).
const SAMPLE: &[&str] = &[
    "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance BIGINT NOT NULL)",
    "CREATE TABLE transfers (id INT PRIMARY KEY, from_id INT NOT NULL, to_id INT NOT NULL, amount BIGINT NOT NULL, memo TEXT)",
    "CREATE INDEX transfers_from ON transfers (from_id)",
    "INSERT INTO accounts VALUES (1, 'alice', 1000), (2, 'bob', 500), (3, 'carol', 750), (4, 'dave', 0)",
    "INSERT INTO transfers VALUES (1, 1, 2, 100, 'rent'), (2, 2, 3, 50, 'lunch'), (3, 3, 4, 25, NULL)",
];

const TRY_THIS: &str = "\
try, for example:
  SELECT * FROM accounts ORDER BY id;
  SELECT a.owner, t.amount, t.memo FROM transfers t JOIN accounts a ON a.id = t.to_id;
  BEGIN; UPDATE accounts SET balance = balance - 10 WHERE id = 1;
         UPDATE accounts SET balance = balance + 10 WHERE id = 4; COMMIT;";

pub struct DemoSpec {
    pub dir: Option<PathBuf>,
    pub no_shell: bool,
    /// Gateway port on 127.0.0.1.
    pub port: u16,
}

pub async fn run(spec: DemoSpec) -> Result<()> {
    let (dir, temporary) = match &spec.dir {
        Some(d) => (d.clone(), false),
        None => (fresh_temp_dir()?, true),
    };
    let result = run_in(&dir, &spec).await;
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

async fn run_in(dir: &Path, spec: &DemoSpec) -> Result<()> {
    // Bind first: a taken port is the likeliest failure and costs nothing to report early.
    let gateway_addr = SocketAddr::from(([127, 0, 0, 1], spec.port));
    let listener = tokio::net::TcpListener::bind(gateway_addr)
        .await
        .with_context(|| format!("cannot listen on {gateway_addr} for the gateway (choose another with --port)"))?;
    let config = config_path(dir);
    // A directory given again holds the cluster and its data from last time: keep them.
    let fresh = !has_data(dir);
    if !config.exists() {
        // Six replicas, their metrics and the gateway's metrics (`init::ports_needed`).
        let ports = crate::init::ports_needed(6) as u16;
        let base_port = free_port_range(ports)
            .with_context(|| format!("no free range of {ports} local ports found for the demo"))?;
        let spec = InitSpec { shards: 1, f: 1, clients: 4, base_port, crypto: true, force: false };
        init(dir, &spec)?;
        out!(
            "created a 1-shard cluster (f = 1, 6 replicas, ports {base_port}..{}) in {}",
            base_port + 5,
            dir.display()
        );
    }
    let mut cluster = Cluster::start(&config, false, &Default::default()).await?;
    let outcome = async {
        cluster.wait_ready().await?;
        out!("cluster ready: {} replicas; logs in {}", cluster.pids().len(), cluster.log_dir.display());
        for (id, url) in crate::cluster::metrics_urls(&cluster.config) {
            out!("replica {id} metrics: {url}");
        }
        let identity = crate::files::ClientIdentity { config: config.clone(), client: 1, key: None };
        let client = connect(&identity, Duration::from_secs(10)).await?;
        if fresh {
            load_sample(&client).await?;
            out!("sample data loaded: tables accounts and transfers");
        } else {
            out!("existing cluster in {}: its data is kept", dir.display());
        }
        let (stop_gateway, gateway_stopped) = oneshot::channel::<()>();
        let (stop_metrics, metrics_stopped) = oneshot::channel::<()>();
        let mut gateway_config = pistou_gateway::GatewayConfig::default();
        let metrics = crate::gateway::start_metrics(cluster.config.metrics.gateway_addr(), async {
            let _ = metrics_stopped.await;
        })
        .await;
        if let Some((m, addr)) = metrics {
            gateway_config.metrics = Some(m);
            out!("gateway metrics: http://{addr}/metrics");
        }
        let gateway = tokio::spawn(pistou_gateway::serve(listener, client.clone(), gateway_config, async {
            let _ = gateway_stopped.await;
        }));
        let url = format!("postgres://pistou@{gateway_addr}/pistou");
        out!("PostgreSQL gateway on {gateway_addr}; connect with:");
        out!("  psql -h 127.0.0.1 -p {} -U pistou pistou", spec.port);
        out!("  {} sql --url {url}", exe_name());
        let result = if spec.no_shell {
            out!("press Ctrl-C to stop");
            cluster
                .supervise(async {
                    stop_requested().await;
                })
                .await
        } else {
            out!("{TRY_THIS}");
            out!("\\? for help; \\q, Ctrl-D or Ctrl-C to quit");
            tokio::select! {
                r = sql_shell::run(&url) => r,
                r = cluster.supervise(async { stop_requested().await; }) => r,
            }
        };
        let _ = stop_gateway.send(());
        match tokio::time::timeout(Duration::from_secs(5), gateway).await {
            Ok(Ok(Err(e))) => eout!("gateway: {e}"),
            Ok(Err(e)) => eout!("gateway task failed: {e}"),
            Err(_) => eout!("gateway did not stop within 5 s"),
            Ok(Ok(Ok(()))) => {}
        }
        let _ = stop_metrics.send(());
        // Let the last writebacks reach the replicas before they stop.
        client.shutdown().await;
        result
    }
    .await;
    out!("stopping the cluster…");
    cluster.stop().await;
    outcome
}

/// Creates and fills the sample tables through the client library.
async fn load_sample(client: &Client) -> Result<()> {
    for &sql in SAMPLE {
        let done = client.run_txn(|t| Box::pin(async move { t.query(sql, &[]).await.map(|_| ()) })).await;
        match done {
            Ok(()) => {}
            Err(ClientError::Sql(e)) => bail!("loading the sample data failed at `{sql}`: {e}"),
            Err(e) => return Err(e).with_context(|| format!("loading the sample data failed at `{sql}`")),
        }
    }
    Ok(())
}

/// The full path: under `cargo run`, `pistou` is usually not on PATH.
fn exe_name() -> String {
    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "pistou".into())
}

fn fresh_temp_dir() -> Result<PathBuf> {
    let nonce: u64 = rand::random();
    let dir = std::env::temp_dir().join(format!("pistou-demo-{}-{nonce:x}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// The first base port from 7100 up whose `count` ports can all be bound now.
fn free_port_range(count: u16) -> Option<u16> {
    (0..200u16)
        .map(|i| FIRST_DEMO_PORT + i * 10)
        .find(|&base| (base..base + count).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()))
}
