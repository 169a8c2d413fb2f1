//! The on-disk layout of a cluster directory and how to read it safely:
//!
//! ```text
//! D/cluster.toml                  the ClusterConfig
//! D/keys/replica-s{S}-r{I}.key    hex secret keys, mode 0600
//! D/keys/client-{ID}.key
//! D/logs/replica-s{S}-r{I}.log    written by `cluster up` / `demo`
//! D/data/replica-s{S}-r{I}/       a replica's durable state (pistou-store)
//! ```

use crate::usage::Usage;
use anyhow::{anyhow, Context, Result};
use pistou_core::{ClusterConfig, ReplicaId, ShardId};
use pistou_crypto::SecretKey;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Who a client process is: `--config`, `--client` and `--key`, shared by the subcommands
/// that act as a client (kv, gateway, byzantine-client).
#[derive(clap::Args, Clone, Debug)]
pub struct ClientIdentity {
    /// Path to cluster.toml.
    #[arg(long)]
    pub config: PathBuf,
    /// Client id to act as (its key must exist).
    #[arg(long, default_value_t = 1)]
    pub client: u64,
    /// Secret key file (default: keys/client-{ID}.key next to the config).
    #[arg(long)]
    pub key: Option<PathBuf>,
}

pub const CONFIG_FILE: &str = "cluster.toml";

pub fn config_path(dir: &Path) -> PathBuf {
    dir.join(CONFIG_FILE)
}

/// The directory holding `cluster.toml` (and so `keys/`).
pub fn config_dir(config: &Path) -> PathBuf {
    match config.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

pub fn replica_key_path(dir: &Path, id: ReplicaId) -> PathBuf {
    dir.join("keys").join(format!("replica-s{}-r{}.key", id.shard.0, id.index))
}

pub fn client_key_path(dir: &Path, id: u64) -> PathBuf {
    dir.join("keys").join(format!("client-{id}.key"))
}

pub fn log_path(dir: &Path, id: ReplicaId) -> PathBuf {
    dir.join("logs").join(format!("replica-s{}-r{}.log", id.shard.0, id.index))
}

pub fn replica_data_dir(dir: &Path, id: ReplicaId) -> PathBuf {
    dir.join("data").join(format!("replica-s{}-r{}", id.shard.0, id.index))
}

/// True if some replica of the cluster in `dir` has written its log: the cluster holds data.
pub fn has_data(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir.join("data")) else { return false };
    entries.flatten().any(|e| e.path().join(pistou_store::FILE_NAME).exists())
}

pub fn load_config(path: &Path) -> Result<Arc<ClusterConfig>> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read configuration {}", path.display()))?;
    let config = ClusterConfig::from_toml(&text).with_context(|| format!("bad configuration {}", path.display()))?;
    Ok(Arc::new(config))
}

pub fn read_key(path: &Path) -> Result<SecretKey> {
    let text = fs::read_to_string(path).with_context(|| format!("cannot read key file {}", path.display()))?;
    SecretKey::from_hex(text.trim()).map_err(|e| anyhow!("key file {} is not a hex secret key: {e}", path.display()))
}

/// Writes a secret key readable by its owner only.
pub fn write_key(path: &Path, key: &SecretKey) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write key file {}", path.display()))?;
    // `mode` applies only to new files; an overwritten one gets tightened here.
    file.set_permissions(fs::Permissions::from_mode(0o600))?;
    file.write_all(format!("{}\n", key.to_hex()).as_bytes())?;
    Ok(())
}

/// Parses `s0r3` (shard 0, replica index 3).
pub fn parse_replica_id(s: &str) -> Result<ReplicaId, Usage> {
    let bad = || Usage(format!("bad replica id {s:?}: expected s<shard>r<index>, e.g. s0r3"));
    let rest = s.strip_prefix('s').ok_or_else(bad)?;
    let (shard, index) = rest.split_once('r').ok_or_else(bad)?;
    let shard: u32 = shard.parse().map_err(|_| bad())?;
    let index: u32 = index.parse().map_err(|_| bad())?;
    Ok(ReplicaId { shard: ShardId(shard), index })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_ids() {
        assert_eq!(parse_replica_id("s0r3").ok(), Some(ReplicaId { shard: ShardId(0), index: 3 }));
        assert_eq!(parse_replica_id("s12r0").ok(), Some(ReplicaId { shard: ShardId(12), index: 0 }));
        for bad in ["", "s", "r3", "s0", "s0r", "x0r1", "s-1r2", "s0r3x", "s0r99999999999"] {
            assert!(parse_replica_id(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn config_dir_of_bare_file_is_cwd() {
        assert_eq!(config_dir(Path::new("cluster.toml")), PathBuf::from("."));
        assert_eq!(config_dir(Path::new("/a/b/cluster.toml")), PathBuf::from("/a/b"));
    }
}
