//! `pistou replica`: run one replica in the foreground until SIGINT/SIGTERM.

use crate::files::{config_dir, load_config, parse_replica_id, read_key, replica_data_dir, replica_key_path};
use crate::signals::stop_requested;
use crate::usage::Usage;
use anyhow::{bail, Result};
use pistou_core::{ReplicaId, ShardId};
use pistou_node::{NodeOptions, ReplicaServer};
use std::path::{Path, PathBuf};

pub struct ReplicaSpec {
    pub config: PathBuf,
    pub id: Option<String>,
    pub shard: Option<u32>,
    pub index: Option<u32>,
    pub key: Option<PathBuf>,
    /// Testing only: a Byzantine behaviour (see `pistou_adversary::ReplicaFault`).
    pub fault: Option<String>,
    /// Default: `data/replica-s{S}-r{I}` next to the config.
    pub data_dir: Option<PathBuf>,
    /// No durable state (tests and measurements).
    pub in_memory: bool,
}

fn resolve_id(spec: &ReplicaSpec) -> Result<ReplicaId, Usage> {
    match (&spec.id, spec.shard, spec.index) {
        (Some(id), None, None) => parse_replica_id(id),
        (None, Some(shard), Some(index)) => Ok(ReplicaId { shard: ShardId(shard), index }),
        _ => Err(Usage("give the replica as --id s<shard>r<index>, or as --shard S --index I".into())),
    }
}

pub async fn run(spec: ReplicaSpec) -> Result<()> {
    let id = resolve_id(&spec)?;
    let config = load_config(&spec.config)?;
    if config.replica(id).is_none() {
        let n = config.quorums().n();
        return Err(Usage(format!(
            "replica {id} is not in {} ({} shard(s), indexes 0..{n})",
            spec.config.display(),
            config.num_shards()
        ))
        .into());
    }
    let key_path = spec.key.clone().unwrap_or_else(|| replica_key_path(&config_dir(&spec.config), id));
    let key = match read_key(&key_path) {
        Ok(k) => Some(k),
        // Without crypto the key is only an identity in the config; allow running without it.
        Err(_) if !config.crypto && !Path::new(&key_path).exists() => None,
        Err(e) => bail!(e),
    };
    #[cfg(not(feature = "fault-injection"))]
    if spec.fault.is_some() {
        return Err(crate::usage::without_fault_injection("--fault").into());
    }
    #[cfg(feature = "fault-injection")]
    let fault = match &spec.fault {
        None => None,
        Some(name) => {
            let kind: pistou_adversary::ReplicaFault = name.parse().map_err(Usage)?;
            // The Byzantine replica re-signs what it tampers with, with its own key.
            let Ok(key) = read_key(&key_path) else { bail!("--fault needs the replica's key file") };
            Some(pistou_node::Fault { kind, signer: pistou_crypto::BatchSigner::new(key, 1) })
        }
    };
    let mut options = NodeOptions::default();
    // Tuning knob (µs, 0 disables), inherited by the replicas of `cluster up`: see
    // NodeOptions::batch_window.
    if let Some(us) = std::env::var("PISTOU_BATCH_WINDOW_US").ok().and_then(|v| v.parse::<u64>().ok()) {
        options.batch_window = std::time::Duration::from_micros(us.min(100_000));
    }
    if !spec.in_memory {
        options.data_dir =
            Some(spec.data_dir.clone().unwrap_or_else(|| replica_data_dir(&config_dir(&spec.config), id)));
    }
    options.metrics_addr = config.metrics.replica_addr(&config, id);
    #[allow(unused_mut)] // mutated only with fault injection
    let mut server = ReplicaServer::bind(config, id, key, options).await?;
    #[cfg(feature = "fault-injection")]
    if let Some(fault) = fault {
        server = server.with_fault(fault);
    }
    tracing::info!(replica = %id, addr = %server.local_addr()?, "replica listening");
    if let Some(addr) = server.metrics_addr() {
        tracing::info!(replica = %id, "metrics on http://{addr}/metrics");
    }
    let report = server
        .run(async {
            let sig = stop_requested().await;
            tracing::info!("{sig} received, shutting down");
        })
        .await;
    if let Some(failure) = report.failure {
        bail!("replica {id} stopped: its log cannot be made durable: {failure}");
    }
    tracing::info!(
        replica = %id,
        reads = report.stats.reads,
        commits = report.stats.commits_applied,
        aborts = report.stats.aborts_applied,
        rejected = report.rejections.total(),
        "replica stopped"
    );
    Ok(())
}
