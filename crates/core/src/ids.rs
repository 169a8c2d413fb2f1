use serde::{Deserialize, Serialize};
use std::fmt;

/// A key of the key-value interface (arbitrary bytes).
pub type Key = Vec<u8>;
/// A value of the key-value interface (arbitrary bytes).
pub type Value = Vec<u8>;

/// A client identity; each client has its own ed25519 key in the cluster configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClientId(pub u64);

/// A shard of the key space, replicated on n = 5f+1 replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShardId(pub u32);

/// A replica: its shard and its index (0..n) within the shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReplicaId {
    pub shard: ShardId,
    pub index: u32,
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}r{}", self.shard.0, self.index)
    }
}

/// Basil's client-chosen timestamp ts = (time, client id, seq): a total order on all
/// transactions of all clients. `time` is the client's clock in microseconds; `seq` breaks
/// ties between transactions a client starts within the same microsecond.
/// Field order matters: the derived `Ord` is lexicographic over (time, client, seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Timestamp {
    pub time: u64,
    pub client: ClientId,
    pub seq: u64,
}

impl Timestamp {
    /// The version of every key before any transaction wrote it.
    pub const GENESIS: Timestamp = Timestamp { time: 0, client: ClientId(0), seq: 0 };
    /// Above every timestamp a client can choose: reads "everything".
    pub const MAX: Timestamp = Timestamp { time: u64::MAX, client: ClientId(u64::MAX), seq: u64::MAX };

    /// The first timestamp of microsecond `time` (client 0, seq 0).
    pub const fn at(time: u64) -> Timestamp {
        Timestamp { time, client: ClientId(0), seq: 0 }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.time, self.client.0, self.seq)
    }
}

/// id_T: BLAKE3 of the canonical encoding of a transaction's metadata.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TxnId(pub [u8; 32]);

impl fmt::Debug for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", hex::encode(&self.0[..6]))
    }
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl TxnId {
    /// A deterministic number derived from the id, used to pick S_log among a
    /// transaction's shards (and the fallback leader in later work).
    pub fn as_u64(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(b)
    }
}
