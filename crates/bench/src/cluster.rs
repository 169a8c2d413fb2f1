//! A local cluster of real `pistou replica` processes for benchmarks, started with
//! `pistou init` and `pistou cluster up`, stopped when the guard is dropped.

use anyhow::{bail, Context, Result};
use pistou_core::ClusterConfig;
use pistou_crypto::SecretKey;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ClusterSpec {
    pub f: usize,
    pub shards: usize,
    pub clients: usize,
    pub crypto: bool,
    pub base_port: u16,
    pub pistou: Option<PathBuf>,
    /// `PISTOU_REPLICA_THREADS` for the replicas (None: their default).
    pub replica_threads: Option<u16>,
    /// `always`, `none` (storage.sync) or `memory` (`cluster up --in-memory`).
    pub storage: String,
}

/// The running cluster; dropping it stops every replica.
pub struct Cluster {
    child: Child,
    pub dir: PathBuf,
    pub config: Arc<ClusterConfig>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGTERM lets `cluster up` stop its replicas; kill() is the fallback.
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").arg("-TERM").arg(&pid).status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn pistou_binary(spec: &ClusterSpec) -> Result<PathBuf> {
    if let Some(p) = &spec.pistou {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("locating this executable")?;
    let p = me.with_file_name("pistou");
    if !p.exists() {
        bail!("{} not found: build it with `cargo build --release -p pistou-cli` or pass --pistou", p.display());
    }
    Ok(p)
}

impl Cluster {
    pub fn start(spec: &ClusterSpec, name: &str) -> Result<Cluster> {
        let dir = std::env::temp_dir().join(format!("pistou-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = pistou_binary(spec)?;
        let mut init = Command::new(&bin);
        init.arg("init")
            .arg("--dir")
            .arg(&dir)
            .arg("--shards")
            .arg(spec.shards.to_string())
            .arg("--f")
            .arg(spec.f.to_string());
        init.arg("--clients").arg(spec.clients.to_string()).arg("--base-port").arg(spec.base_port.to_string());
        if !spec.crypto {
            init.arg("--no-crypto");
        }
        if !init.stdout(Stdio::null()).status().context("running pistou init")?.success() {
            bail!("pistou init failed");
        }
        let mut config = ClusterConfig::from_toml(&std::fs::read_to_string(dir.join("cluster.toml"))?)?;
        if spec.storage == "none" {
            config.storage.sync = pistou_core::SyncMode::None;
            std::fs::write(dir.join("cluster.toml"), config.to_toml())?;
        }
        let config = Arc::new(config);
        let mut up = Command::new(&bin);
        up.arg("cluster").arg("up").arg("--dir").arg(&dir);
        if spec.storage == "memory" {
            up.arg("--in-memory");
        }
        match spec.replica_threads {
            Some(n) => up.env("PISTOU_REPLICA_THREADS", n.to_string()),
            None => up.env_remove("PISTOU_REPLICA_THREADS"),
        };
        let child = up.stdout(Stdio::null()).stderr(Stdio::null()).spawn().context("starting pistou cluster up")?;
        let cluster = Cluster { child, dir, config };
        let deadline = Instant::now() + Duration::from_secs(30);
        for r in cluster.config.all_replicas() {
            let addr = cluster.config.replica(r).map(|c| c.addr.clone()).unwrap_or_default();
            while TcpStream::connect(&addr).is_err() {
                if Instant::now() > deadline {
                    bail!("replica {r} at {addr} did not come up");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(cluster)
    }

    /// The pid of `pistou cluster up` (the replicas are its children).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The signing key of client `id` (`None` when the cluster runs without crypto).
    pub fn client_key(&self, id: u64) -> Result<Option<SecretKey>> {
        if !self.config.crypto {
            return Ok(None);
        }
        let text = std::fs::read_to_string(self.dir.join("keys").join(format!("client-{id}.key")))?;
        SecretKey::from_hex(text.trim()).map(Some).map_err(|e| anyhow::anyhow!("client key {id}: {e}"))
    }
}
