//! The cluster configuration: who the replicas and clients are, their keys and addresses,
//! and how keys map to shards. Loaded from TOML written by `pistou init`.

use crate::ids::{ClientId, ReplicaId, ShardId};
use crate::quorum::Quorums;
use crate::sql_keys;
use pistou_crypto::PublicKey;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// Largest f a configuration may ask for (31 replicas per shard).
pub const MAX_F: usize = 6;
/// Largest number of shards a configuration may declare.
pub const MAX_SHARDS: usize = 1024;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ReplicaConfig {
    /// host:port the replica listens on.
    pub addr: String,
    #[serde(with = "hex_key")]
    pub public_key: PublicKey,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardConfig {
    pub replicas: Vec<ReplicaConfig>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClientConfig {
    pub id: u64,
    #[serde(with = "hex_key")]
    pub public_key: PublicKey,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Byzantine replicas tolerated per shard; each shard has n = 5f+1 replicas.
    pub f: usize,
    /// δ: replicas refuse operations whose timestamp is above their clock + δ (microseconds).
    #[serde(default = "default_delta_us")]
    pub delta_us: u64,
    /// Oldest transaction age a replica still prepares (microseconds). Read timestamps
    /// older than this are garbage-collected, which is safe because such transactions are
    /// refused (see docs/architecture.md, "Read timestamps").
    #[serde(default = "default_max_txn_age_us")]
    pub max_txn_age_us: u64,
    /// Signatures on and checked. `false` only for measuring crypto cost.
    #[serde(default = "default_true")]
    pub crypto: bool,
    /// Replies a replica signs with one Merkle-batched signature.
    #[serde(default = "default_batch")]
    pub reply_batch: usize,
    pub shards: Vec<ShardConfig>,
    pub clients: Vec<ClientConfig>,
    /// Table placement: table name → shard index. Unlisted tables go to the shard given by
    /// a hash of their name.
    #[serde(default)]
    pub tables: BTreeMap<String, u32>,
    /// Parameters of SQL transactions (Pesto).
    #[serde(default)]
    pub sql: SqlConfig,
    /// How replicas keep their state on disk.
    #[serde(default)]
    pub storage: StorageConfig,
    /// Prometheus metrics over HTTP (`[metrics]`; off when the section is missing).
    #[serde(default)]
    pub metrics: MetricsConfig,
}

/// Ports of well-known databases Pistou never takes for itself (someone may run them on
/// the same machine): MariaDB/MySQL and PostgreSQL (5433 is a second PostgreSQL's habit).
pub const RESERVED_PORTS: [u16; 3] = [3306, 5432, 5433];

/// Prometheus metrics (`[metrics]` in cluster.toml): every replica, and the gateway, serve
/// `GET /metrics` over HTTP. Replica number k, counting replicas shard by shard
/// (`ClusterConfig::all_replicas` order), listens on `host:(replica_base_port + k)`; the
/// gateway on `host:gateway_port`. The host is loopback unless configured otherwise: the
/// figures carry no keys, passwords or row data, but they do describe the load.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    pub enabled: bool,
    /// An IP address (not a name: nothing is resolved).
    pub host: String,
    pub replica_base_port: u16,
    pub gateway_port: u16,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { enabled: false, host: "127.0.0.1".into(), replica_base_port: 0, gateway_port: 0 }
    }
}

impl MetricsConfig {
    /// Where replica `id` serves its metrics; `None` when metrics are off or `id` is not a
    /// replica of `config`.
    pub fn replica_addr(&self, config: &ClusterConfig, id: ReplicaId) -> Option<std::net::SocketAddr> {
        if !self.enabled {
            return None;
        }
        let k = config.all_replicas().position(|r| r == id)?;
        let port = u16::try_from(usize::from(self.replica_base_port).checked_add(k)?).ok()?;
        Some(std::net::SocketAddr::new(self.host.parse().ok()?, port))
    }

    /// Where the gateway serves its metrics; `None` when metrics are off.
    pub fn gateway_addr(&self) -> Option<std::net::SocketAddr> {
        if !self.enabled {
            return None;
        }
        Some(std::net::SocketAddr::new(self.host.parse().ok()?, self.gateway_port))
    }

    fn validate(&self, replicas: usize) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if self.host.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("metrics.host must be an IP address, got {:?}", self.host));
        }
        let first = u32::from(self.replica_base_port);
        let last = first + replicas.saturating_sub(1) as u32;
        if first < 1024 || last > 65535 {
            return Err(format!(
                "metrics.replica_base_port: ports {first}..={last} (one per replica) must lie in 1024..=65535"
            ));
        }
        if self.gateway_port < 1024 {
            return Err(format!("metrics.gateway_port must lie in 1024..=65535, got {}", self.gateway_port));
        }
        if (first..=last).contains(&u32::from(self.gateway_port)) {
            return Err(format!(
                "metrics.gateway_port {} is one of the replicas' metrics ports {first}..={last}",
                self.gateway_port
            ));
        }
        for p in RESERVED_PORTS {
            if (first..=last).contains(&u32::from(p)) || self.gateway_port == p {
                return Err(format!("metrics ports may not include {p}, kept free for other databases"));
            }
        }
        Ok(())
    }
}

/// How replicas keep their state on disk (`[storage]` in cluster.toml).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub sync: SyncMode,
    /// A replica that heard from no client for longer than this (µs) may have been cut off
    /// and missed writebacks, and catches up from its peers (catchup.rs). Keep it below the
    /// clients' writeback resend span (5 × 500 ms by default), so that a shorter silence
    /// loses nothing a resend does not bring again.
    pub catch_up_after_silence_us: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig { sync: SyncMode::default(), catch_up_after_silence_us: 2_000_000 }
    }
}

/// When a replica's log reaches stable storage (`storage.sync`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Every batch's log entries are written and fsynced before any reply that depends on
    /// them is sent (group commit: one fsync per batch).
    #[default]
    Always,
    /// **Unsafe.** Entries are written without fsync and made durable about once a second: a
    /// crash loses the last second of what the replica signed, so the restarted replica has
    /// forgotten promises, which is a Byzantine fault. For measurements and throwaway
    /// clusters only.
    None,
}

impl SyncMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncMode::Always => "always",
            SyncMode::None => "none (UNSAFE: a crash forgets up to a second of signed promises)",
        }
    }
}

/// Parameters of Pesto's semantic concurrency control and garbage collection (microseconds).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SqlConfig {
    /// Write monotonicity grace (§6.1.3), the short tier of App. B.9: a write to a table is
    /// accepted if its timestamp is above the highest table version this replica reported
    /// minus `grace_us`; predicates are checked against every write from
    /// `table_version - grace_us` on.
    pub grace_us: u64,
    /// The long tier of App. B.9: a transaction that declares itself late (`TxnMeta::late`)
    /// may write down to `late_grace_us` below a reported table version, and predicates are
    /// checked against late writers' writes from `table_version - late_grace_us` on.
    pub late_grace_us: u64,
    /// Low-watermark lag (App. B.3): versions older than `now - gc_lag_us` collapse to the
    /// newest one, and reads or writes below the watermark are refused.
    pub gc_lag_us: u64,
    /// Most versions kept per row (App. B.3 (ii)).
    pub version_cap: usize,
    /// Clients ignore range-read replies whose table version is more than this below the
    /// (f+1)-th smallest one (App. B.8).
    pub table_version_outlier_us: u64,
    /// Limits on one SQL statement, the same at every replica and client so that all stop a
    /// statement at the same point with the same error (54000): rows of any intermediate
    /// result, units of work (rows read plus join pairs examined), bytes of rows kept, and
    /// bytes of text computed (`pistou_sql::Limits`).
    pub statement_max_rows: usize,
    pub statement_max_work: u64,
    pub statement_max_materialized_bytes: usize,
    pub statement_max_computed_bytes: usize,
    /// Units of work a replica gives a range read on its protocol thread. One that needs
    /// more runs again on a worker of its own, so that long statements never hold up the
    /// protocol (`pistou_txn::RangeJob`). Not part of what replicas agree on: it decides
    /// where a statement runs, not what it returns.
    pub statement_inline_work: u64,
}

impl Default for SqlConfig {
    fn default() -> Self {
        SqlConfig {
            grace_us: 100_000,
            late_grace_us: 1_000_000,
            gc_lag_us: 120_000_000,
            version_cap: 64,
            table_version_outlier_us: 1_000_000,
            statement_max_rows: 1_000_000,
            statement_max_work: 64_000_000,
            statement_max_materialized_bytes: 512 << 20,
            statement_max_computed_bytes: 256 << 20,
            statement_inline_work: 2_000,
        }
    }
}

/// Upper bounds of the statement limits a configuration may set: beyond them one statement
/// could hold a replica for hours or exhaust its memory.
const MAX_STATEMENT_ROWS: u64 = 100_000_000;
const MAX_STATEMENT_WORK: u64 = 100_000_000_000;
const MAX_STATEMENT_BYTES: u64 = 64 << 30;

fn default_delta_us() -> u64 {
    200_000
}
fn default_max_txn_age_us() -> u64 {
    60_000_000
}
fn default_true() -> bool {
    true
}
fn default_batch() -> usize {
    16
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("configuration is not valid TOML: {0}")]
    Parse(String),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl ClusterConfig {
    /// A configuration with the default protocol timings and batching.
    pub fn new(f: usize, shards: Vec<ShardConfig>, clients: Vec<ClientConfig>, crypto: bool) -> ClusterConfig {
        ClusterConfig {
            f,
            delta_us: default_delta_us(),
            max_txn_age_us: default_max_txn_age_us(),
            crypto,
            reply_batch: default_batch(),
            shards,
            clients,
            tables: BTreeMap::new(),
            sql: SqlConfig::default(),
            storage: StorageConfig::default(),
            metrics: MetricsConfig::default(),
        }
    }

    pub fn from_toml(text: &str) -> Result<ClusterConfig, ConfigError> {
        let cfg: ClusterConfig = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn to_toml(&self) -> String {
        // Serializing our own plain struct cannot fail; fall back to an empty string
        // rather than panicking if a future field breaks that.
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks every invariant the protocol relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.f == 0 || self.f > MAX_F {
            return bad(format!("f must be between 1 and {MAX_F}, got {}", self.f));
        }
        if self.shards.is_empty() || self.shards.len() > MAX_SHARDS {
            return bad(format!("need between 1 and {MAX_SHARDS} shards, got {}", self.shards.len()));
        }
        if self.reply_batch == 0 || self.reply_batch > 4096 {
            return bad(format!("reply_batch must be in 1..=4096, got {}", self.reply_batch));
        }
        if self.max_txn_age_us <= self.delta_us {
            return bad("max_txn_age_us must be larger than delta_us".into());
        }
        let n = self.quorums().n();
        let mut addrs = HashSet::new();
        let mut keys = HashSet::new();
        for (s, shard) in self.shards.iter().enumerate() {
            if shard.replicas.len() != n {
                return bad(format!("shard {s} has {} replicas; n = 5f+1 = {n}", shard.replicas.len()));
            }
            for r in &shard.replicas {
                if !addrs.insert(r.addr.clone()) {
                    return bad(format!("address {} is used twice", r.addr));
                }
                if !keys.insert(r.public_key) {
                    return bad(format!("replica key {} is used twice", r.public_key.to_hex()));
                }
            }
        }
        for (table, shard) in &self.tables {
            if *shard as usize >= self.shards.len() {
                return bad(format!("table {table} is placed on shard {shard}, which does not exist"));
            }
        }
        if self.sql.late_grace_us < self.sql.grace_us {
            return bad("sql.late_grace_us must be at least sql.grace_us".into());
        }
        if self.sql.version_cap < 2 {
            return bad("sql.version_cap must be at least 2".into());
        }
        let statement_limits = [
            ("sql.statement_max_rows", self.sql.statement_max_rows as u64, MAX_STATEMENT_ROWS),
            ("sql.statement_max_work", self.sql.statement_max_work, MAX_STATEMENT_WORK),
            (
                "sql.statement_max_materialized_bytes",
                self.sql.statement_max_materialized_bytes as u64,
                MAX_STATEMENT_BYTES,
            ),
            ("sql.statement_max_computed_bytes", self.sql.statement_max_computed_bytes as u64, MAX_STATEMENT_BYTES),
            ("sql.statement_inline_work", self.sql.statement_inline_work, MAX_STATEMENT_WORK),
        ];
        for (name, value, max) in statement_limits {
            if value == 0 || value > max {
                return bad(format!("{name} must be between 1 and {max}"));
            }
        }
        if self.storage.catch_up_after_silence_us == 0 {
            return bad("storage.catch_up_after_silence_us must be positive".into());
        }
        if self.sql.gc_lag_us <= self.max_txn_age_us {
            return bad("sql.gc_lag_us must be larger than max_txn_age_us".into());
        }
        self.metrics.validate(n * self.shards.len()).map_err(ConfigError::Invalid)?;
        if self.metrics.enabled {
            // Ports only: a replica and a metrics listener on the same port of different
            // addresses of one machine would still collide.
            let first = usize::from(self.metrics.replica_base_port);
            let metrics_ports = first..first + n * self.shards.len();
            for r in self.shards.iter().flat_map(|s| &s.replicas) {
                let Some(port) = r.addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()) else { continue };
                if metrics_ports.contains(&usize::from(port)) || port == self.metrics.gateway_port {
                    return bad(format!("the metrics ports overlap replica address {}", r.addr));
                }
            }
        }
        let mut ids = HashSet::new();
        for c in &self.clients {
            if c.id == 0 {
                return bad("client id 0 is reserved".into());
            }
            if !ids.insert(c.id) {
                return bad(format!("client id {} is used twice", c.id));
            }
        }
        Ok(())
    }

    pub fn quorums(&self) -> Quorums {
        Quorums::new(self.f)
    }

    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The shard of a key: a row's table shard, a catalog key's own shard, otherwise hash
    /// partitioning (BLAKE3(key) modulo the number of shards).
    pub fn shard_of(&self, key: &[u8]) -> ShardId {
        match sql_keys::key_kind(key) {
            sql_keys::KeyKind::Row { table, .. } => self.table_shard(table),
            sql_keys::KeyKind::Catalog(s) if (s.0 as usize) < self.shards.len() => s,
            _ => self.hash_shard(key),
        }
    }

    /// The shard holding the table stored under `table` (whole tables are placed on one
    /// shard). A storage name `name NUL id` (a table created while another stored under its
    /// name) is placed as `name` is.
    pub fn table_shard(&self, table: &str) -> ShardId {
        let name = table.split('\0').next().unwrap_or(table);
        match self.tables.get(name) {
            Some(s) => ShardId(*s),
            None => self.hash_shard(name.as_bytes()),
        }
    }

    fn hash_shard(&self, bytes: &[u8]) -> ShardId {
        let h = blake3::hash(bytes);
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[..8]);
        ShardId((u64::from_le_bytes(b) % self.shards.len().max(1) as u64) as u32)
    }

    pub fn replica(&self, id: ReplicaId) -> Option<&ReplicaConfig> {
        self.shards.get(id.shard.0 as usize)?.replicas.get(id.index as usize)
    }

    pub fn replica_key(&self, id: ReplicaId) -> Option<&PublicKey> {
        self.replica(id).map(|r| &r.public_key)
    }

    pub fn replicas_of(&self, shard: ShardId) -> impl Iterator<Item = ReplicaId> + '_ {
        let n = self.shards.get(shard.0 as usize).map_or(0, |s| s.replicas.len()) as u32;
        (0..n).map(move |index| ReplicaId { shard, index })
    }

    pub fn all_replicas(&self) -> impl Iterator<Item = ReplicaId> + '_ {
        (0..self.shards.len() as u32).flat_map(move |s| self.replicas_of(ShardId(s)))
    }

    pub fn is_shard(&self, shard: ShardId) -> bool {
        (shard.0 as usize) < self.shards.len()
    }

    /// The public key of one client.
    pub fn client_key(&self, id: ClientId) -> Option<&PublicKey> {
        self.clients.iter().find(|c| ClientId(c.id) == id).map(|c| &c.public_key)
    }

    /// Public keys of clients, by id, for authenticating requests.
    pub fn client_keys(&self) -> BTreeMap<ClientId, PublicKey> {
        self.clients.iter().map(|c| (ClientId(c.id), c.public_key)).collect()
    }
}

mod hex_key {
    use pistou_crypto::PublicKey;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(k: &PublicKey, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&k.to_hex())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PublicKey, D::Error> {
        let s = String::deserialize(d)?;
        PublicKey::from_hex(&s).map_err(|e| serde::de::Error::custom(format!("bad public key: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f` and `shards` as given, the rest as `ClusterBuilder` makes it.
    fn sample(f: usize, shards: usize) -> ClusterConfig {
        std::sync::Arc::unwrap_or_clone(crate::ClusterBuilder::new(f).shards(shards).build().config)
    }

    #[test]
    fn toml_round_trip() {
        let cfg = sample(1, 2);
        let text = cfg.to_toml();
        assert_eq!(ClusterConfig::from_toml(&text).unwrap(), cfg);
    }

    #[test]
    fn rejects_wrong_replica_count_and_duplicates() {
        let mut cfg = sample(1, 1);
        cfg.shards[0].replicas.pop();
        assert!(matches!(cfg.validate(), Err(ConfigError::Invalid(_))));
        let mut cfg = sample(1, 1);
        cfg.shards[0].replicas[1].addr = cfg.shards[0].replicas[0].addr.clone();
        assert!(cfg.validate().is_err());
        let mut cfg = sample(1, 1);
        cfg.clients.push(cfg.clients[0].clone());
        assert!(cfg.validate().is_err());
        let mut cfg = sample(1, 1);
        cfg.f = 0;
        assert!(cfg.validate().is_err());
    }

    #[test]
    fn statement_limits_must_be_positive_and_bounded() {
        let mut cfg = sample(1, 1);
        cfg.sql.statement_max_work = 0;
        assert!(cfg.validate().is_err());
        cfg.sql.statement_max_work = MAX_STATEMENT_WORK + 1;
        assert!(cfg.validate().is_err());
        cfg.sql.statement_max_work = 1;
        assert!(cfg.validate().is_ok());
        cfg.sql.statement_max_rows = 0;
        assert!(cfg.validate().is_err());
        let mut cfg = sample(1, 1);
        cfg.sql.statement_max_materialized_bytes = usize::MAX;
        assert!(cfg.validate().is_err());
        let text = "statement_max_work = 5000\n";
        let sql: SqlConfig = toml::from_str(text).expect("one setting, the rest default");
        assert_eq!((sql.statement_max_work, sql.statement_max_rows), (5000, 1_000_000));
    }

    #[test]
    fn late_grace_may_not_be_shorter_than_grace() {
        let mut cfg = sample(1, 1);
        cfg.sql.late_grace_us = cfg.sql.grace_us;
        assert!(cfg.validate().is_ok());
        cfg.sql.late_grace_us = cfg.sql.grace_us - 1;
        assert!(matches!(cfg.validate(), Err(ConfigError::Invalid(m)) if m.contains("late_grace_us")));
    }

    #[test]
    fn rejects_garbage_and_unknown_fields() {
        assert!(matches!(ClusterConfig::from_toml("f = ["), Err(ConfigError::Parse(_))));
        let text = format!("bogus = 1\n{}", sample(1, 1).to_toml());
        assert!(ClusterConfig::from_toml(&text).is_err());
    }

    fn with_metrics(f: usize, shards: usize) -> ClusterConfig {
        let mut cfg = sample(f, shards);
        cfg.metrics =
            MetricsConfig { enabled: true, host: "127.0.0.1".into(), replica_base_port: 20000, gateway_port: 20100 };
        cfg
    }

    #[test]
    fn metrics_are_off_without_the_section_and_give_each_process_its_port() {
        let cfg = sample(1, 2);
        assert!(!cfg.metrics.enabled);
        let id = ReplicaId { shard: ShardId(1), index: 2 };
        assert_eq!(cfg.metrics.replica_addr(&cfg, id), None);
        assert_eq!(cfg.metrics.gateway_addr(), None);
        let cfg = with_metrics(1, 2);
        assert!(cfg.validate().is_ok());
        // Shard 1's replica 2 is the 9th replica (6 per shard).
        assert_eq!(cfg.metrics.replica_addr(&cfg, id), Some("127.0.0.1:20008".parse().expect("addr")));
        let stranger = ReplicaId { shard: ShardId(2), index: 0 };
        assert_eq!(cfg.metrics.replica_addr(&cfg, stranger), None);
        assert_eq!(cfg.metrics.gateway_addr(), Some("127.0.0.1:20100".parse().expect("addr")));
        let text = cfg.to_toml();
        assert_eq!(ClusterConfig::from_toml(&text).expect("round trip"), cfg);
        let section = "[metrics]\nenabled = true\nreplica_base_port = 20000\ngateway_port = 20100\n";
        let parsed: MetricsConfig = toml::from_str(section.trim_start_matches("[metrics]\n")).expect("parse");
        assert_eq!(parsed.host, "127.0.0.1", "loopback unless configured otherwise");
    }

    #[test]
    fn hostile_metrics_settings_are_refused_with_a_reason() {
        let invalid = |cfg: &ClusterConfig, what: &str| match cfg.validate() {
            Err(ConfigError::Invalid(m)) => assert!(m.contains(what), "{m} should mention {what}"),
            other => panic!("expected an invalid configuration about {what}, got {other:?}"),
        };
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.host = "localhost; rm -rf /".into();
        invalid(&cfg, "metrics.host");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.replica_base_port = 65533; // 6 replicas would run past 65535
        invalid(&cfg, "replica_base_port");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.replica_base_port = 80;
        invalid(&cfg, "replica_base_port");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.gateway_port = 0;
        invalid(&cfg, "gateway_port");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.gateway_port = 20003;
        invalid(&cfg, "gateway_port");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.replica_base_port = 5430;
        invalid(&cfg, "5432");
        let mut cfg = with_metrics(1, 1);
        cfg.metrics.gateway_port = 3306;
        invalid(&cfg, "3306");
        let mut cfg = with_metrics(1, 1);
        cfg.shards[0].replicas[0].addr = "127.0.0.1:20002".into();
        invalid(&cfg, "overlap");
        // The same settings with metrics off are not checked: nothing listens.
        cfg.metrics.enabled = false;
        assert!(cfg.validate().is_ok());
        let text = format!("{}\n[metrics]\nenabled = \"yes\"\n", sample(1, 1).to_toml());
        assert!(matches!(ClusterConfig::from_toml(&text), Err(ConfigError::Parse(_))));
        let text = format!("{}\n[metrics]\nlisten_everywhere = true\n", sample(1, 1).to_toml());
        assert!(matches!(ClusterConfig::from_toml(&text), Err(ConfigError::Parse(_))));
        let text = format!("{}\n[metrics]\ngateway_port = 70000\n", sample(1, 1).to_toml());
        assert!(matches!(ClusterConfig::from_toml(&text), Err(ConfigError::Parse(_))));
    }

    #[test]
    fn shard_of_is_stable_and_in_range() {
        let cfg = sample(1, 3);
        let mut seen = [0usize; 3];
        for i in 0..300u32 {
            let s = cfg.shard_of(&i.to_le_bytes());
            assert_eq!(s, cfg.shard_of(&i.to_le_bytes()));
            seen[s.0 as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 50), "hash partitioning is badly skewed: {seen:?}");
    }

    #[test]
    fn a_table_stored_under_name_and_id_is_placed_as_its_name() {
        let mut cfg = sample(1, 3);
        cfg.tables.insert("orders".into(), 2);
        assert_eq!(cfg.table_shard("orders\u{0}42"), ShardId(2));
        let hashed = cfg.table_shard("lines");
        assert_eq!(cfg.table_shard("lines\u{0}7"), hashed);
        let key = sql_keys::row_key("orders\u{0}42", 42, &[1]).expect("key");
        assert_eq!(cfg.shard_of(&key), ShardId(2));
    }
}
