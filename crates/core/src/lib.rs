//! Core types shared by every Pistou crate: identifiers, timestamps, keys and values,
//! quorum arithmetic and the cluster configuration.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

mod config;
mod ids;
mod quorum;
pub mod sql_keys;
mod test_cluster;
mod tiny;

pub use config::{
    ClientConfig, ClusterConfig, ConfigError, MetricsConfig, ReplicaConfig, ShardConfig, SqlConfig, StorageConfig,
    SyncMode, MAX_F, MAX_SHARDS, RESERVED_PORTS,
};
pub use ids::{ClientId, Key, ReplicaId, ShardId, Timestamp, TxnId, Value};
pub use quorum::Quorums;
pub use test_cluster::{ClusterBuilder, TestCluster};
pub use tiny::{TinyMap, TinySet};
