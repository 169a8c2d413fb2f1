//! `pistou gateway`: serves PostgreSQL clients (psql, drivers) in front of a cluster.

use crate::usage::Usage;
use anyhow::{Context, Result};
use clap::Args;
use pistou_gateway::{Auth, GatewayConfig, PasswordMethod};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct GatewayArgs {
    #[command(flatten)]
    identity: crate::files::ClientIdentity,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: String,
    /// Require this user name, with a password from --password-file, the environment variable
    /// PISTOU_GATEWAY_PASSWORD, or --password; without a user, anyone may connect.
    #[arg(long)]
    user: Option<String>,
    /// File holding the password (its first line).
    #[arg(long, requires = "user", conflicts_with = "password")]
    password_file: Option<PathBuf>,
    /// The password itself. Visible to every local user in `ps`: prefer --password-file or
    /// PISTOU_GATEWAY_PASSWORD.
    #[arg(long, requires = "user")]
    password: Option<String>,
    /// How the password is checked: scram (SCRAM-SHA-256) or cleartext.
    #[arg(long, default_value = "scram")]
    password_method: String,
    /// Connections served at once.
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Seconds a connection may stay silent before it is closed.
    #[arg(long, default_value_t = 600)]
    idle_timeout: u64,
    /// Seconds to wait for any single cluster operation.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
    /// Serve Prometheus metrics on this address (ip:port) instead of the one cluster.toml's
    /// [metrics] section gives the gateway.
    #[arg(long, conflicts_with = "no_metrics")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Serve no metrics, whatever cluster.toml says.
    #[arg(long)]
    no_metrics: bool,
}

fn config_of(a: &GatewayArgs) -> Result<GatewayConfig, Usage> {
    let method = match a.password_method.as_str() {
        "scram" | "scram-sha-256" => PasswordMethod::ScramSha256,
        "cleartext" | "password" => PasswordMethod::Cleartext,
        other => return Err(Usage(format!("--password-method must be scram or cleartext, not {other:?}"))),
    };
    let auth = match &a.user {
        Some(user) => Auth::Password { user: user.clone(), password: password_of(a)?, method },
        None => Auth::Trust,
    };
    if a.idle_timeout == 0 || a.timeout == 0 || a.max_connections == 0 {
        return Err(Usage("--idle-timeout, --timeout and --max-connections must be at least 1".into()));
    }
    let config = GatewayConfig {
        auth,
        max_connections: a.max_connections,
        idle_timeout: Duration::from_secs(a.idle_timeout),
        ..GatewayConfig::default()
    };
    config.validate().map_err(Usage)?;
    Ok(config)
}

/// Environment variable with the gateway's password (kept out of the process list).
const PASSWORD_ENV: &str = "PISTOU_GATEWAY_PASSWORD";
/// Longest accepted password file.
const MAX_PASSWORD_FILE_BYTES: u64 = 4096;

/// The password for `--user`: from `--password-file`, else `PISTOU_GATEWAY_PASSWORD`, else
/// `--password`; one of them is required.
fn password_of(a: &GatewayArgs) -> Result<String, Usage> {
    if let Some(path) = &a.password_file {
        let shown = path.display();
        let size = std::fs::metadata(path).map_err(|e| Usage(format!("--password-file {shown}: {e}")))?.len();
        if size > MAX_PASSWORD_FILE_BYTES {
            return Err(Usage(format!("--password-file {shown}: larger than {MAX_PASSWORD_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| Usage(format!("--password-file {shown}: {e}")))?;
        let password = text.lines().next().unwrap_or("").to_string();
        if password.is_empty() {
            return Err(Usage(format!("--password-file {shown}: the first line is empty")));
        }
        return Ok(password);
    }
    if let Ok(password) = std::env::var(PASSWORD_ENV) {
        if !password.is_empty() {
            return Ok(password);
        }
    }
    match &a.password {
        Some(p) => {
            tracing::warn!("--password is visible to every local user (ps); prefer --password-file or {PASSWORD_ENV}");
            Ok(p.clone())
        }
        None => Err(Usage(format!("--user needs a password: --password-file, {PASSWORD_ENV} or --password"))),
    }
}

/// Starts the gateway's metrics listener, if metrics are on; `None` if they are off or
/// their port is taken (said on stderr: the gateway still serves, metrics are secondary,
/// and a second gateway of the same cluster needs `--metrics-listen`).
pub async fn start_metrics(
    addr: Option<std::net::SocketAddr>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Option<(std::sync::Arc<pistou_gateway::GatewayMetrics>, std::net::SocketAddr)> {
    let addr = addr?;
    let metrics = std::sync::Arc::new(pistou_gateway::GatewayMetrics::new());
    match pistou_metrics::spawn(addr, metrics.registry(), None, shutdown).await {
        Ok(bound) => Some((metrics, bound)),
        Err(e) => {
            eout!(
                "warning: gateway metrics are off: cannot listen on {addr} ({e}); choose another with --metrics-listen"
            );
            None
        }
    }
}

pub async fn run(a: GatewayArgs) -> Result<()> {
    let mut config = config_of(&a)?;
    let metrics_addr = match (a.no_metrics, a.metrics_listen) {
        (true, _) => None,
        (false, Some(addr)) => Some(addr),
        (false, None) => crate::files::load_config(&a.identity.config)?.metrics.gateway_addr(),
    };
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let metrics = start_metrics(metrics_addr, async {
        let _ = metrics_stopped.await;
    })
    .await;
    if let Some((m, _)) = &metrics {
        config.metrics = Some(m.clone());
    }
    let client = crate::kv::connect(&a.identity, Duration::from_secs(a.timeout)).await?;
    let listener =
        tokio::net::TcpListener::bind(&a.listen).await.with_context(|| format!("cannot listen on {}", a.listen))?;
    let addr = listener.local_addr()?;
    let auth = if matches!(config.auth, Auth::Trust) { "trust (no password)" } else { "password" };
    // One machine-readable line (tests and scripts wait for it), then a human one.
    out!("pistou gateway listening on {addr}");
    out!(
        "connect with: psql -h {} -p {} -U {} (auth: {auth}); stop with Ctrl-C",
        addr.ip(),
        addr.port(),
        a.user.as_deref().unwrap_or("pistou")
    );
    if let Some((_, addr)) = &metrics {
        out!("pistou gateway metrics on http://{addr}/metrics");
    }
    let result = pistou_gateway::serve(listener, client.clone(), config, async {
        let sig = crate::signals::stop_requested().await;
        eout!("{sig} received, stopping the gateway");
    })
    .await;
    client.shutdown().await;
    let _ = stop_metrics.send(());
    Ok(result?)
}
