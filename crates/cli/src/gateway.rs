//! `pistou gateway`: serves PostgreSQL clients (psql, drivers) in front of a cluster.

use crate::usage::Usage;
use anyhow::{Context, Result};
use clap::Args;
use pistou_gateway::{Auth, GatewayConfig, PasswordMethod};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct GatewayArgs {
    /// Path to cluster.toml.
    #[arg(long)]
    config: PathBuf,
    /// Client id the gateway acts as (its key must exist).
    #[arg(long, default_value_t = 1)]
    client: u64,
    /// Secret key file (default: keys/client-{ID}.key next to the config).
    #[arg(long)]
    key: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: String,
    /// Require this user name (with --password); without both, anyone may connect.
    #[arg(long, requires = "password")]
    user: Option<String>,
    /// Require this password (with --user).
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
}

fn config_of(a: &GatewayArgs) -> Result<GatewayConfig, Usage> {
    let method = match a.password_method.as_str() {
        "scram" | "scram-sha-256" => PasswordMethod::ScramSha256,
        "cleartext" | "password" => PasswordMethod::Cleartext,
        other => return Err(Usage(format!("--password-method must be scram or cleartext, not {other:?}"))),
    };
    let auth = match (&a.user, &a.password) {
        (Some(user), Some(password)) => Auth::Password { user: user.clone(), password: password.clone(), method },
        _ => Auth::Trust,
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

pub async fn run(a: GatewayArgs) -> Result<()> {
    let config = config_of(&a)?;
    let client = crate::kv::connect(&a.config, a.client, a.key.clone(), Duration::from_secs(a.timeout)).await?;
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
    let result = pistou_gateway::serve(listener, client.clone(), config, async {
        let sig = crate::signals::stop_requested().await;
        eout!("{sig} received, stopping the gateway");
    })
    .await;
    client.shutdown().await;
    Ok(result?)
}
