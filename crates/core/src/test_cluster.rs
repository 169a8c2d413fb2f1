//! A valid cluster configuration with the secret keys that go with it, in one expression:
//! for tests, examples and local tools, which otherwise each write out every field of
//! `ClusterConfig` and make up keys and addresses their own way. Production configurations
//! come from `pistou init` (random keys written to disk) and `ClusterConfig::from_toml`.

use crate::config::{ClientConfig, ClusterConfig, ReplicaConfig, ShardConfig, SqlConfig, StorageConfig};
use crate::ids::{ClientId, ReplicaId};
use pistou_crypto::SecretKey;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Builds a [`TestCluster`]. `ClusterBuilder::new(f)` is one shard of 5f+1 replicas, one
/// client (id 1), crypto on, and the timings and batching of [`ClusterConfig::new`] (the
/// production defaults); each method changes one of these.
///
/// Keys are derived from the replica's or client's position, so every run of a test sees
/// the same keys, and they never equal a key a test makes itself with
/// `SecretKey::from_seed([b; 32])` (to play an outsider); [`ClusterBuilder::random_keys`]
/// draws fresh ones instead. Replicas listen on placeholder
/// addresses `127.0.0.1:1`, `:2`, … unless given real ones ([`ClusterBuilder::replica_addrs`]).
#[derive(Clone, Debug)]
pub struct ClusterBuilder {
    config: ClusterConfig,
    shards: usize,
    clients: u64,
    replica_addrs: Vec<String>,
    random_keys: bool,
}

/// What [`ClusterBuilder::build`] makes: the configuration and every secret key in it.
pub struct TestCluster {
    pub config: Arc<ClusterConfig>,
    /// `replica_keys[shard][index]`.
    pub replica_keys: Vec<Vec<SecretKey>>,
    /// `client_keys[i]` belongs to client id `i + 1`.
    pub client_keys: Vec<SecretKey>,
}

impl ClusterBuilder {
    pub fn new(f: usize) -> ClusterBuilder {
        ClusterBuilder {
            config: ClusterConfig::new(f, Vec::new(), Vec::new(), true),
            shards: 1,
            clients: 1,
            replica_addrs: Vec::new(),
            random_keys: false,
        }
    }

    /// Number of shards, each of 5f+1 replicas.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards;
        self
    }

    /// Number of clients; their ids are `1..=clients`.
    pub fn clients(mut self, clients: u64) -> Self {
        self.clients = clients;
        self
    }

    pub fn crypto(mut self, crypto: bool) -> Self {
        self.config.crypto = crypto;
        self
    }

    pub fn delta_us(mut self, delta_us: u64) -> Self {
        self.config.delta_us = delta_us;
        self
    }

    pub fn max_txn_age_us(mut self, max_txn_age_us: u64) -> Self {
        self.config.max_txn_age_us = max_txn_age_us;
        self
    }

    pub fn reply_batch(mut self, reply_batch: usize) -> Self {
        self.config.reply_batch = reply_batch;
        self
    }

    /// Places tables on shards (table name → shard index).
    pub fn tables<S: Into<String>>(mut self, tables: impl IntoIterator<Item = (S, u32)>) -> Self {
        self.config.tables = tables.into_iter().map(|(t, s)| (t.into(), s)).collect::<BTreeMap<_, _>>();
        self
    }

    pub fn sql(mut self, sql: SqlConfig) -> Self {
        self.config.sql = sql;
        self
    }

    pub fn storage(mut self, storage: StorageConfig) -> Self {
        self.config.storage = storage;
        self
    }

    /// Real addresses for the first replicas in `ClusterConfig::all_replicas` order (shard by
    /// shard), for tests that bind listeners first; any replica after them keeps its
    /// placeholder address. Giving more addresses than replicas panics in `build`.
    pub fn replica_addrs<A: ToString>(mut self, addrs: impl IntoIterator<Item = A>) -> Self {
        self.replica_addrs = addrs.into_iter().map(|a| a.to_string()).collect();
        self
    }

    /// Fresh keys from OS randomness instead of fixed ones. For clusters on real sockets:
    /// when a stopped cluster's port is reused by another test's cluster, a connection left
    /// over from the first then fails authentication instead of being served by the second.
    pub fn random_keys(mut self) -> Self {
        self.random_keys = true;
        self
    }

    /// The configuration and its keys.
    ///
    /// Panics if the configuration is invalid (`ClusterConfig::validate`) or more addresses
    /// were given than there are replicas: a test asked for a cluster that cannot exist,
    /// and saying so at once beats a confusing failure later.
    pub fn build(self) -> TestCluster {
        let ClusterBuilder { mut config, shards, clients, replica_addrs, random_keys } = self;
        let key = |role: u8, a: u64, b: u64| if random_keys { SecretKey::generate() } else { derived_key(role, a, b) };
        let n = config.quorums().n();
        assert!(
            replica_addrs.len() <= shards * n,
            "ClusterBuilder: {} replica addresses for {shards} shard(s) of {n} replicas",
            replica_addrs.len()
        );
        let mut addrs = replica_addrs.into_iter();
        let mut placeholder_port = 0u32;
        let mut replica_keys = Vec::with_capacity(shards);
        for shard in 0..shards {
            let keys: Vec<SecretKey> = (0..n).map(|index| key(b'r', shard as u64, index as u64)).collect();
            let replicas = keys
                .iter()
                .map(|key| {
                    placeholder_port += 1;
                    let addr = addrs.next().unwrap_or_else(|| format!("127.0.0.1:{placeholder_port}"));
                    ReplicaConfig { addr, public_key: key.public() }
                })
                .collect();
            config.shards.push(ShardConfig { replicas });
            replica_keys.push(keys);
        }
        let client_keys: Vec<SecretKey> = (1..=clients).map(|id| key(b'c', id, 0)).collect();
        config.clients =
            client_keys.iter().zip(1..).map(|(key, id)| ClientConfig { id, public_key: key.public() }).collect();
        if let Err(e) = config.validate() {
            panic!("ClusterBuilder made an invalid configuration: {e}");
        }
        TestCluster { config: Arc::new(config), replica_keys, client_keys }
    }
}

/// A key fixed by its role (`b'r'` replica, `b'c'` client) and position.
fn derived_key(role: u8, a: u64, b: u64) -> SecretKey {
    let mut material = [0u8; 17];
    material[0] = role;
    material[1..9].copy_from_slice(&a.to_le_bytes());
    material[9..].copy_from_slice(&b.to_le_bytes());
    SecretKey::from_seed(blake3::derive_key("pistou test cluster key", &material))
}

impl TestCluster {
    /// The secret key of replica `id`. Panics if `id` is not in the cluster.
    pub fn replica_key(&self, id: ReplicaId) -> SecretKey {
        match self.replica_keys.get(id.shard.0 as usize).and_then(|keys| keys.get(id.index as usize)) {
            Some(key) => key.clone(),
            None => panic!("{id:?} is not a replica of this test cluster"),
        }
    }

    /// The secret key of client `id`. Panics if `id` is not a client of the cluster.
    pub fn client_key(&self, id: ClientId) -> SecretKey {
        match id.0.checked_sub(1).and_then(|i| self.client_keys.get(i as usize)) {
            Some(key) => key.clone(),
            None => panic!("{id:?} is not a client of this test cluster"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ShardId;

    #[test]
    fn defaults_are_one_shard_one_client_and_production_timings() {
        let cluster = ClusterBuilder::new(1).build();
        let defaults = ClusterConfig::new(1, Vec::new(), Vec::new(), true);
        let c = &cluster.config;
        assert_eq!((c.num_shards(), c.shards[0].replicas.len(), c.clients.len()), (1, 6, 1));
        assert_eq!((c.delta_us, c.max_txn_age_us, c.reply_batch, c.crypto), (200_000, 60_000_000, 16, true));
        assert_eq!(c.sql, defaults.sql);
        let id = ReplicaId { shard: ShardId(0), index: 3 };
        assert_eq!(cluster.replica_key(id).public(), *c.replica_key(id).expect("replica 3"));
        assert_eq!(cluster.client_key(ClientId(1)).public(), *c.client_key(ClientId(1)).expect("client 1"));
    }

    #[test]
    fn keys_are_the_same_every_time_and_distinct() {
        let a = ClusterBuilder::new(1).shards(2).clients(3).build();
        let b = ClusterBuilder::new(1).shards(2).clients(3).build();
        assert_eq!(a.config, b.config);
        let mut keys: Vec<_> = a.config.all_replicas().map(|id| a.replica_key(id).public().to_hex()).collect();
        keys.extend(a.client_keys.iter().map(|k| k.public().to_hex()));
        let count = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), count, "a key is used twice");
    }

    #[test]
    fn given_addresses_come_first_in_replica_order() {
        let cluster = ClusterBuilder::new(1).shards(2).replica_addrs(["10.0.0.1:5000", "10.0.0.2:5000"]).build();
        let addrs: Vec<&str> = cluster.config.shards.iter().flat_map(|s| &s.replicas).map(|r| &r.addr[..]).collect();
        assert_eq!(&addrs[..3], ["10.0.0.1:5000", "10.0.0.2:5000", "127.0.0.1:3"]);
        assert_eq!(addrs[11], "127.0.0.1:12");
    }

    #[test]
    fn random_keys_differ_between_builds() {
        let [a, b] = [(); 2].map(|_| ClusterBuilder::new(1).random_keys().build());
        assert_ne!(a.config.shards, b.config.shards);
        assert_ne!(a.config.clients, b.config.clients);
    }

    #[test]
    #[should_panic(expected = "invalid configuration")]
    fn an_invalid_request_panics() {
        let _ = ClusterBuilder::new(1).delta_us(10).max_txn_age_us(10).build();
    }
}
