//! `pistou init`: a fresh cluster directory with configuration and keys.

use crate::files::{client_key_path, config_path, replica_data_dir, replica_key_path, write_key};
use crate::usage::Usage;
use anyhow::{Context, Result};
use pistou_core::{
    ClientConfig, ClusterConfig, MetricsConfig, ReplicaConfig, ReplicaId, ShardConfig, ShardId, MAX_F, RESERVED_PORTS,
};
use pistou_crypto::SecretKey;
use std::fs;
use std::path::Path;

pub struct InitSpec {
    pub shards: usize,
    pub f: usize,
    pub clients: u64,
    pub base_port: u16,
    pub crypto: bool,
    pub force: bool,
}

/// Ports a cluster of `replicas` replicas takes from its base port: one per replica, one
/// per replica's metrics, and the gateway's metrics.
pub fn ports_needed(replicas: usize) -> usize {
    2 * replicas + 1
}

/// Checks the arguments before anything touches the disk.
pub fn check(spec: &InitSpec) -> Result<(), Usage> {
    if spec.f == 0 || spec.f > MAX_F {
        return Err(Usage(format!("--f must be between 1 and {MAX_F}")));
    }
    if spec.shards == 0 || spec.shards > 64 {
        return Err(Usage("--shards must be between 1 and 64".into()));
    }
    if spec.clients == 0 || spec.clients > 10_000 {
        return Err(Usage("--clients must be between 1 and 10000".into()));
    }
    let total = ports_needed(spec.shards * (5 * spec.f + 1)) as u32;
    let first = u32::from(spec.base_port);
    let last = first + total - 1;
    if first < 1024 || last > 65535 {
        return Err(Usage(format!("ports {first}..={last} are outside 1024..=65535; pick another --base-port")));
    }
    if let Some(p) = RESERVED_PORTS.iter().find(|p| (first..=last).contains(&u32::from(**p))) {
        return Err(Usage(format!(
            "ports {first}..={last} include {p}, kept free for other databases; pick another --base-port"
        )));
    }
    Ok(())
}

/// Writes `dir/cluster.toml` and `dir/keys/*`. Returns the configuration.
pub fn init(dir: &Path, spec: &InitSpec) -> Result<ClusterConfig> {
    check(spec)?;
    let path = config_path(dir);
    if path.exists() && !spec.force {
        return Err(Usage(format!(
            "{} already exists; use --force to overwrite it (and its keys and data)",
            path.display()
        ))
        .into());
    }
    // The old replicas' state was signed by the old keys: it belongs to another cluster.
    let data = dir.join("data");
    if data.exists() {
        fs::remove_dir_all(&data).with_context(|| format!("cannot remove {}", data.display()))?;
    }
    fs::create_dir_all(dir.join("keys")).with_context(|| format!("cannot create {}", dir.join("keys").display()))?;
    let n = 5 * spec.f + 1;
    let mut port = spec.base_port;
    let mut shards = Vec::new();
    for s in 0..spec.shards {
        let mut replicas = Vec::new();
        for i in 0..n {
            let key = SecretKey::generate();
            let id = ReplicaId { shard: ShardId(s as u32), index: i as u32 };
            write_key(&replica_key_path(dir, id), &key)?;
            let data = replica_data_dir(dir, id);
            fs::create_dir_all(&data).with_context(|| format!("cannot create {}", data.display()))?;
            replicas.push(ReplicaConfig { addr: format!("127.0.0.1:{port}"), public_key: key.public() });
            port = port.saturating_add(1);
        }
        shards.push(ShardConfig { replicas });
    }
    let mut clients = Vec::new();
    for id in 1..=spec.clients {
        let key = SecretKey::generate();
        write_key(&client_key_path(dir, id), &key)?;
        clients.push(ClientConfig { id, public_key: key.public() });
    }
    let mut config = ClusterConfig::new(spec.f, shards, clients, spec.crypto);
    // Metrics on, on loopback, on the ports after the replicas' (see `ports_needed`).
    let replicas = config.all_replicas().count();
    config.metrics = MetricsConfig {
        enabled: true,
        host: "127.0.0.1".into(),
        replica_base_port: spec.base_port.saturating_add(replicas as u16),
        gateway_port: spec.base_port.saturating_add(2 * replicas as u16),
    };
    config.validate().context("generated configuration is invalid")?;
    let text = config.to_toml().replacen(
        "[storage]\n",
        "[storage]\n# sync: \"always\" (fsync before replying) or \"none\", which is UNSAFE: a crash forgets\n\
         # up to a second of what the replica signed, a Byzantine fault.\n",
        1,
    );
    let text = text.replacen(
        "[metrics]\n",
        "[metrics]\n# Prometheus metrics over HTTP (GET /metrics): replica k (shard by shard) on\n\
         # host:replica_base_port+k, `pistou gateway` on host:gateway_port. Keep host on loopback\n\
         # unless a firewall guards it; enabled = false turns them off.\n",
        1,
    );
    fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The written file reads back as the configuration returned, and says next to
    /// `storage.sync` that `none` is unsafe.
    #[test]
    fn the_written_configuration_reads_back_and_labels_sync_none_unsafe() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spec = InitSpec { shards: 1, f: 1, clients: 1, base_port: 17100, crypto: true, force: false };
        let config = init(dir.path(), &spec).expect("init");
        let text = fs::read_to_string(config_path(dir.path())).expect("read");
        assert_eq!(ClusterConfig::from_toml(&text).expect("parse"), config);
        let storage = text.split("[storage]").nth(1).expect("a [storage] section");
        assert!(storage.contains("\"none\", which is UNSAFE"), "{storage}");
    }

    /// Metrics are on for a local cluster, on loopback, on ports after the replicas'.
    #[test]
    fn init_turns_metrics_on_after_the_replica_ports() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spec = InitSpec { shards: 2, f: 1, clients: 1, base_port: 17200, crypto: true, force: false };
        let config = init(dir.path(), &spec).expect("init");
        let text = fs::read_to_string(config_path(dir.path())).expect("read");
        assert!(text.contains("[metrics]\n# Prometheus metrics"), "{text}");
        let m = &config.metrics;
        assert!(m.enabled);
        assert_eq!((m.host.as_str(), m.replica_base_port, m.gateway_port), ("127.0.0.1", 17212, 17224));
        let last = ReplicaId { shard: ShardId(1), index: 5 };
        assert_eq!(config.replica(last).map(|r| r.addr.as_str()), Some("127.0.0.1:17211"));
        assert_eq!(m.replica_addr(&config, last), Some("127.0.0.1:17223".parse().expect("addr")));
        // The whole range must stay clear of other databases' ports: 25 ports from 5410
        // reach 5432.
        let spec = InitSpec { shards: 2, f: 1, clients: 1, base_port: 5410, crypto: true, force: false };
        assert!(check(&spec).is_err());
        let spec = InitSpec { shards: 2, f: 1, clients: 1, base_port: 65520, crypto: true, force: false };
        assert!(check(&spec).is_err());
    }
}
