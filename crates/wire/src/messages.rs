//! Messages of the leaderless key-value protocol (Basil §3–4). Names follow the paper:
//! READ, ST1 (prepare), ST1R (vote), ST2 (log the decision on S_log), ST2R, writeback with
//! C-CERT / A-CERT.

use crate::codec::with_canonical_bytes;
use crate::signed::{ClientSigned, ReplicaSigned, Signable};
use pistou_core::{ClusterConfig, Key, ShardId, Timestamp, TxnId, Value};
use pistou_crypto::hash_parts;
pub use pistou_types::WirePredicate;
use serde::{Deserialize, Serialize};

/// Largest key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Most reads plus writes in one transaction. Room for a 10,000-row range read (Pesto Fig. 7)
/// plus writes; the frame cap (8 MiB) bounds the bytes of the whole set in any case.
pub const MAX_TXN_OPS: usize = 32_768;
/// Most read predicates in one transaction, and the largest encoded predicate.
pub const MAX_TXN_PREDICATES: usize = 10_000;
pub const MAX_PREDICATE_BYTES: usize = 64 * 1024;

/// A read of `key` that observed the version written at `version`
/// (`Timestamp::GENESIS` when the key had never been written).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadEntry {
    pub key: Key,
    pub version: Timestamp,
}

/// A buffered write; `value: None` deletes the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteEntry {
    pub key: Key,
    pub value: Option<Value>,
}

/// A write-read dependency: the transaction read `key` at `version`, a prepared but not
/// yet committed write of transaction `txn`. T cannot commit unless `txn` commits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Dep {
    pub txn: TxnId,
    pub key: Key,
    pub version: Timestamp,
}

/// A read predicate of a range read (Pesto §6.1.1) with its table version P.table_v
/// (§6.1.3): writes to the table below `table_version` (minus the grace window) are already
/// reflected in what the transaction read.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PredicateRead {
    pub predicate: WirePredicate,
    pub table_version: Timestamp,
    /// The row keys of the predicate's table whose value the statement which evaluated it
    /// already accounted for: its active rows (in the read set) and the keys the transaction
    /// had itself written before it (in the write set; the statement saw its own write).
    /// Sorted and unique. The completeness check skips a write only if *this* evaluation
    /// covered its key: a later statement of the same transaction seeing it proves nothing
    /// about this predicate's result.
    pub active: Vec<Key>,
}

/// A transaction's metadata, whose canonical encoding's BLAKE3 is id_T. Sets travel as
/// strictly sorted vectors so that the encoding, and so the id, is unique.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnMeta {
    pub ts: Timestamp,
    /// Sorted by key, keys unique.
    pub read_set: Vec<ReadEntry>,
    /// Sorted by key, keys unique.
    pub write_set: Vec<WriteEntry>,
    /// Sorted, unique.
    pub deps: Vec<Dep>,
    /// PredSet_T (Pesto §6.1): sorted, unique.
    pub predicates: Vec<PredicateRead>,
    /// The client declares T *late* (Pesto App. B.9, two-tier grace): its writes may arrive
    /// behind table versions already reported to readers by more than the short grace
    /// window. A late T's writes are accepted within the long window, and every reader's
    /// completeness check looks at them over that whole window; other writes get the short
    /// window on both sides. Being part of id_T, every replica judges T alike.
    pub late: bool,
    /// The shards of all keys read or written and of all predicate tables: sorted, unique,
    /// exact.
    pub shards: Vec<ShardId>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetaError {
    #[error("transaction has no reads and no writes")]
    Empty,
    #[error("transaction has too many operations")]
    TooLarge,
    #[error("key or value too large")]
    OversizedItem,
    #[error("read set, write set or dependencies not strictly sorted")]
    NotCanonical,
    #[error("read version is not below the transaction timestamp")]
    ReadFromFuture,
    #[error("dependency does not match a read")]
    BadDependency,
    #[error("shard list does not match the keys")]
    WrongShards,
    #[error("malformed read predicate")]
    BadPredicate,
}

impl TxnMeta {
    pub fn id(&self) -> TxnId {
        TxnId(with_canonical_bytes(self, |bytes| hash_parts(&[b"pistou-txn-v1", bytes])))
    }

    /// S_log: the shard that logs a slow-path decision, chosen deterministically from id_T.
    pub fn log_shard(&self, id: &TxnId) -> Option<ShardId> {
        if self.shards.is_empty() {
            return None;
        }
        Some(self.shards[(id.as_u64() % self.shards.len() as u64) as usize])
    }

    pub fn write_of(&self, key: &[u8]) -> Option<&WriteEntry> {
        self.write_set.binary_search_by(|w| w.key.as_slice().cmp(key)).ok().map(|i| &self.write_set[i])
    }

    pub fn read_of(&self, key: &[u8]) -> Option<&ReadEntry> {
        self.read_set.binary_search_by(|r| r.key.as_slice().cmp(key)).ok().map(|i| &self.read_set[i])
    }

    /// Structural validity: what every correct replica and client checks before
    /// trusting a transaction's metadata.
    pub fn validate(&self, config: &ClusterConfig) -> Result<(), MetaError> {
        if self.read_set.is_empty() && self.write_set.is_empty() && self.predicates.is_empty() {
            return Err(MetaError::Empty);
        }
        if self.predicates.len() > MAX_TXN_PREDICATES {
            return Err(MetaError::TooLarge);
        }
        let predicates_ok = self.predicates.iter().all(|p| {
            let table = &p.predicate.table;
            p.predicate.nodes.len() <= MAX_PREDICATE_BYTES
                && !table.is_empty()
                && table.len() <= pistou_core::sql_keys::MAX_TABLE_NAME
                && p.table_version < self.ts
        });
        if !predicates_ok {
            return Err(MetaError::BadPredicate);
        }
        let active: usize = self.predicates.iter().map(|p| p.active.len()).sum();
        if active > MAX_TXN_OPS {
            return Err(MetaError::TooLarge);
        }
        if self.read_set.len() + self.write_set.len() > MAX_TXN_OPS || self.deps.len() > self.read_set.len() {
            return Err(MetaError::TooLarge);
        }
        let keys_ok = self.read_set.iter().all(|r| r.key.len() <= MAX_KEY_BYTES)
            && self
                .write_set
                .iter()
                .all(|w| w.key.len() <= MAX_KEY_BYTES && w.value.as_ref().is_none_or(|v| v.len() <= MAX_VALUE_BYTES));
        if !keys_ok {
            return Err(MetaError::OversizedItem);
        }
        let sorted = self.read_set.windows(2).all(|p| p[0].key < p[1].key)
            && self.write_set.windows(2).all(|p| p[0].key < p[1].key)
            && self.deps.windows(2).all(|p| p[0] < p[1])
            && self.shards.windows(2).all(|p| p[0] < p[1])
            && self.predicates.windows(2).all(|p| p[0] < p[1]);
        if !sorted {
            return Err(MetaError::NotCanonical);
        }
        if self.read_set.iter().any(|r| r.version >= self.ts) {
            return Err(MetaError::ReadFromFuture);
        }
        for d in &self.deps {
            if self.read_of(&d.key).map(|r| r.version) != Some(d.version) {
                return Err(MetaError::BadDependency);
            }
        }
        let active_ok = self.predicates.iter().all(|p| {
            p.active.windows(2).all(|k| k[0] < k[1])
                && p.active.iter().all(|k| {
                    (self.read_of(k).is_some() || self.write_of(k).is_some())
                        && pistou_core::sql_keys::row_table(k) == Some(p.predicate.table.as_str())
                })
        });
        if !active_ok {
            return Err(MetaError::BadPredicate);
        }
        let mut shards: Vec<ShardId> = self
            .read_set
            .iter()
            .map(|r| &r.key)
            .chain(self.write_set.iter().map(|w| &w.key))
            .map(|k| config.shard_of(k))
            .chain(self.predicates.iter().map(|p| config.table_shard(&p.predicate.table)))
            .collect();
        shards.sort();
        shards.dedup();
        if shards != self.shards {
            return Err(MetaError::WrongShards);
        }
        Ok(())
    }
}

/// READ ⟨key, ts⟩ (Basil §3, step 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRequest {
    pub key: Key,
    pub ts: Timestamp,
}

/// The latest committed version below ts, with the writer's metadata and C-CERT so the
/// client can check both the commit and the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedRead {
    pub writer: TxnMeta,
    pub cert: CommitCert,
}

/// The latest prepared version below ts: valid only if f+1 replicas return the same one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedRead {
    pub version: Timestamp,
    pub txn: TxnId,
    pub value: Option<Value>,
}

/// ⟨Committed, Prepared⟩_σR (Basil §3, step 2). Only the prepared part is signed; the
/// committed part proves itself with its certificate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadReply {
    pub key: Key,
    pub ts: Timestamp,
    pub prepared: Option<PreparedRead>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Vote {
    Commit,
    Abort,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Decision {
    Commit,
    Abort,
}

/// ST1 ⟨PREPARE, T⟩: id_T is recomputed by the receiver from the metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prepare {
    pub meta: TxnMeta,
}

/// ST1R ⟨T, vote⟩_σR: the signed part of a replica's vote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct St1Vote {
    pub txn: TxnId,
    pub vote: Vote,
}

/// The optional (T', C-CERT) of an abort vote (Alg. 1 lines 7 and 9): the committed
/// conflicting transaction. It proves itself, so it travels beside the signed vote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictProof {
    pub meta: TxnMeta,
    pub cert: CommitCert,
}

/// The votes of one shard for one transaction: a vote tally, or a V-CERT when it meets a
/// fast-path threshold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardVotes {
    pub shard: ShardId,
    pub votes: Vec<ReplicaSigned<St1Vote>>,
}

/// ST2 ⟨id_T, decision, {SHARDVOTES}, view⟩ sent to S_log. Carries T's metadata so that a
/// replica that missed ST1 can still check the tallies against T's shards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct St2 {
    pub meta: TxnMeta,
    pub decision: Decision,
    pub tallies: Vec<ShardVotes>,
    pub view: u64,
}

/// ST2R ⟨id_T, decision, view_decision, view_current⟩_σR.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct St2Reply {
    pub txn: TxnId,
    pub decision: Decision,
    pub view_decision: u64,
    pub view_current: u64,
}

/// C-CERT: proof that a transaction committed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommitCert {
    /// Fast path: a unanimous (5f+1) commit V-CERT from every shard of T.
    Fast(Vec<ShardVotes>),
    /// Slow path: V-CERT of S_log, n−f matching ST2R for commit.
    Slow(Vec<ReplicaSigned<St2Reply>>),
}

/// A-CERT: proof that a transaction aborted.
#[allow(clippy::large_enum_variant)] // certificates are built once and moved, not stored in bulk
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AbortCert {
    /// Fast path: 3f+1 abort votes from one shard of T.
    Fast(ShardVotes),
    /// Fast path: one abort vote with the C-CERT of a conflicting committed transaction.
    Conflict { vote: ReplicaSigned<St1Vote>, conflict: ConflictProof },
    /// Slow path: V-CERT of S_log, n−f matching ST2R for abort.
    Slow(Vec<ReplicaSigned<St2Reply>>),
}

#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DecisionCert {
    Commit(CommitCert),
    Abort(AbortCert),
}

impl DecisionCert {
    pub fn decision(&self) -> Decision {
        match self {
            DecisionCert::Commit(_) => Decision::Commit,
            DecisionCert::Abort(_) => Decision::Abort,
        }
    }
}

/// Writeback (Basil §4.3): the decision and its certificate, for all of T's shards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writeback {
    pub meta: TxnMeta,
    pub cert: DecisionCert,
}

/// Explicit client abort: release the read timestamps this transaction left on `keys`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortReads {
    pub ts: Timestamp,
    pub keys: Vec<Key>,
}

/// InvokeFB (Basil §5, divergent case): the signed current views the client saw on S_log,
/// and the decision the client itself can justify, for replicas that logged none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvokeFb {
    pub meta: TxnMeta,
    pub views: Vec<ReplicaSigned<St2Reply>>,
    pub proposal: Option<St2>,
}

/// ELECTFB ⟨id_T, decision, view⟩_σR: a replica of S_log elects the fallback leader of `view`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElectFb {
    pub txn: TxnId,
    pub decision: Decision,
    pub view: u64,
}

/// DECFB: the fallback leader's decision with its election proof (4f+1 ELECTFB of `view`).
/// It validates itself: the decision must be the majority of the proofs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecFb {
    pub txn: TxnId,
    pub decision: Decision,
    pub view: u64,
    pub proofs: Vec<ReplicaSigned<ElectFb>>,
}

/// RANGE-READ ⟨Q, ts⟩ (Pesto §5.5 step 1): a SQL statement a replica executes on its own
/// state at `ts`, against the committed catalog written at `catalog_version`. UPDATE, DELETE
/// and INSERT run as reconnaissance (§5.2): the replica returns the write set, never applies
/// it. `pending` is the transaction's own buffered writes to this shard (read-your-writes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeRead {
    pub ts: Timestamp,
    pub catalog_version: Timestamp,
    pub sql: String,
    pub params: Vec<pistou_types::Value>,
    /// Row-key writes, sorted by key, unique.
    pub pending: Vec<WriteEntry>,
    /// SS-PROP (§5.5 step 4): present on the snapshot path. The replica first applies every
    /// transaction named (fetching missing ones with SYNC), then executes.
    pub snapshot: Option<SsProp>,
    /// Values of the sequences the statement names, which it draws in order
    /// (`pistou_types::sequence`); at most `pistou_types::sequence::MAX_STATEMENT_SEQUENCES`.
    pub sequences: Vec<pistou_types::SequenceInput>,
    /// The statement's random seed: its `gen_random_uuid()` values (`pistou_types::uuid`).
    pub random_seed: [u8; 32],
    /// The session's lastval before the statement (`lastval()`).
    pub lastval: Option<pistou_types::SequenceLast>,
}

/// Most transactions one SS-PROP may name.
pub const MAX_SS_PROP_TXNS: usize = 4_096;

/// Most transactions one `Message::Waiting` names.
pub const MAX_WAITING_HINT: usize = 64;

/// Most transaction ids in one `CatchUpPage`.
pub const MAX_CATCH_UP_IDS: usize = 4_096;
/// Most transactions one `CatchUpFetch` asks for and one `CatchUpCommits` holds; an answer
/// also stops after about `CATCH_UP_PAGE_BYTES` of transaction content (always holding at
/// least one).
pub const MAX_CATCH_UP_PAGE: usize = 256;
pub const CATCH_UP_PAGE_BYTES: usize = 1 << 20;

/// SS-PROP: the transactions at least f+1 SS-VOTEs named, each with the replicas that named
/// it (where a replica lacking it sends SYNC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsProp {
    /// Sorted by transaction id, unique.
    pub txns: Vec<SsEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsEntry {
    pub txn: TxnId,
    /// Indexes (in the shard) of the replicas whose SS-VOTE named `txn`; sorted, unique.
    pub voters: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SsPropError {
    #[error("SS-PROP names more than {MAX_SS_PROP_TXNS} transactions")]
    TooLarge,
    #[error("SS-PROP transactions are not sorted and unique")]
    Unsorted,
    #[error("an SS-PROP transaction has fewer than f+1 distinct voters or an unknown voter")]
    BadVoters,
}

impl SsProp {
    /// The rules a correct client follows: bounded, canonical, every transaction vouched for
    /// by f+1 distinct replicas of the shard (`n` replicas).
    pub fn validate(&self, f: usize, n: usize) -> Result<(), SsPropError> {
        if self.txns.len() > MAX_SS_PROP_TXNS {
            return Err(SsPropError::TooLarge);
        }
        if self.txns.windows(2).any(|w| w[0].txn >= w[1].txn) {
            return Err(SsPropError::Unsorted);
        }
        for e in &self.txns {
            let distinct = e.voters.windows(2).all(|w| w[0] < w[1]);
            if !distinct || e.voters.len() <= f || e.voters.len() > n || e.voters.iter().any(|v| *v as usize >= n) {
                return Err(SsPropError::BadVoters);
            }
        }
        Ok(())
    }
}

/// One active row a range read relied on (Q-READ), with the writer when that version is only
/// prepared (Q-DEP).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ActiveRead {
    pub key: Key,
    pub version: Timestamp,
    pub prepared_by: Option<TxnId>,
}

/// Q-RES: what the statement produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QueryOutput {
    Rows(Vec<pistou_types::Row>),
    /// A reconnaissance write: the row count and RETURNING rows.
    Affected {
        count: u64,
        returning: Vec<pistou_types::Row>,
    },
}

/// ⟨Q-RES, Q-READ, Q-DEP, Q-PRED⟩ of one execution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeResult {
    pub output: QueryOutput,
    /// The reconnaissance write set as row-key writes, sorted by key.
    pub writes: Vec<WriteEntry>,
    /// Q-READ and Q-DEP, sorted and unique by key; includes the keys whose absence the
    /// statement relied on (an INSERT's primary-key check), at the deletion version seen or
    /// at GENESIS.
    pub reads: Vec<ActiveRead>,
    /// Q-PRED, each with this replica's table version (which may legitimately differ
    /// between replicas; clients take the smallest, App. B.8).
    pub predicates: Vec<PredicateRead>,
    /// Values drawn from each of the request's sequences.
    pub sequences_used: Vec<u64>,
    /// The session's lastval after the statement.
    pub lastval: Option<pistou_types::SequenceLast>,
}

/// RANGE-RESP ⟨Q-RES, Q-READ, Q-DEP, Q-PRED, SS-VOTE⟩_σR, bound to its request by `request`
/// (the signing hash of the RANGE-READ).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeReply {
    pub request: pistou_crypto::Hash,
    pub result: Result<RangeResult, pistou_types::SqlError>,
    /// SS-VOTE: ids of the writers of the active versions and of active-negative versions
    /// (App. B.5.1), sorted and unique (snapshot path, §5.5 step 4). Empty in reply to a
    /// RANGE-READ that carries an SS-PROP: proposals are built from eager votes only.
    pub ss_vote: Vec<TxnId>,
}

/// Everything that travels between clients and replicas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Message {
    Read(ClientSigned<ReadRequest>),
    ReadReply {
        reply: ReplicaSigned<ReadReply>,
        committed: Option<CommittedRead>,
    },
    Prepare(ClientSigned<Prepare>),
    /// ST1R. An abort vote may carry the committed conflicting transaction's proof, or name
    /// the undecided transaction prepared at the replica that caused it (`blocker`), which
    /// the client may finish (Basil §5: clients aborted by a stalled transaction finish it).
    /// The name is a hint: the client acts on it only when f+1 replicas give it, and the
    /// transaction it fetches proves itself by its id.
    PrepareReply {
        vote: ReplicaSigned<St1Vote>,
        conflict: Option<ConflictProof>,
        blocker: Option<TxnId>,
    },
    Decide(ClientSigned<St2>),
    DecideReply(ReplicaSigned<St2Reply>),
    Writeback(Writeback),
    /// Unsigned acknowledgement that lets a client stop retransmitting a writeback. A lie
    /// only means that replica misses the writeback: it cannot affect anyone else.
    WritebackAck {
        txn: TxnId,
    },
    AbortReads(ClientSigned<AbortReads>),
    /// First frame on a client connection: who is speaking. Authenticity comes from the
    /// signatures on every request, not from this frame.
    HelloClient {
        client: pistou_core::ClientId,
    },
    /// A client asks for a transaction's ST1 (to finish a stalled dependency).
    FetchTxn {
        txn: TxnId,
    },
    /// The answer: the metadata proves itself (its hash is the id asked for).
    TxnInfo {
        meta: TxnMeta,
    },
    /// RPR carrying a decision certificate: the transaction is already decided.
    Decided(Writeback),
    InvokeFb(ClientSigned<InvokeFb>),
    ElectFb(ReplicaSigned<ElectFb>),
    DecFb(DecFb),
    /// First frame on a replica-to-replica connection.
    HelloReplica {
        replica: pistou_core::ReplicaId,
    },
    /// Shared: a client sends the same request to several replicas (encoded once).
    RangeRead(std::sync::Arc<ClientSigned<RangeRead>>),
    RangeReply(ReplicaSigned<RangeReply>),
    /// A replica's vote on `txn` waits for these undecided transactions (Alg. 1 line 15; for
    /// SQL they include prepared writers the check found risky, which the client did not
    /// declare). An unsigned hint, like a blocker: the client finishes those that f+1
    /// replicas name once its own transaction has stalled. At most `MAX_WAITING_HINT` ids.
    Waiting {
        txn: TxnId,
        on: Vec<TxnId>,
    },
    /// SYNC (§5.5 step 5): a replica asks a peer whose SS-VOTE named `txn` for it.
    Sync {
        txn: TxnId,
    },
    /// SUPPLY (§5.5 step 5.A): the transaction and its decision certificate. Unsigned: the
    /// certificate proves the decision, whoever forwards it.
    Supply(Writeback),
    /// Catch-up (issue 27): a replica that restarted, or was cut off, asks a peer of its shard
    /// for the ids of the committed transactions it holds, in (timestamp, id) order after
    /// `after`.
    CatchUp {
        after: Option<(Timestamp, TxnId)>,
    },
    /// One page of the answer: at most `MAX_CATCH_UP_IDS` (timestamp, id) pairs, in order;
    /// `next` is the cursor of the following page, `None` on the last. The asking replica
    /// fetches only the commits it lacks (`CatchUpFetch`).
    CatchUpPage {
        ids: Vec<(Timestamp, TxnId)>,
        next: Option<(Timestamp, TxnId)>,
    },
    /// Catch-up, second step: the commits of these ids (at most `MAX_CATCH_UP_PAGE`).
    CatchUpFetch {
        ids: Vec<TxnId>,
    },
    /// The answer: those of the ids asked that the peer holds committed, with their
    /// certificates, in the order asked, stopping after about `CATCH_UP_PAGE_BYTES`.
    /// Unsigned: each certificate proves its commit, whoever forwards it.
    CatchUpCommits {
        commits: Vec<Writeback>,
    },
    /// Right after `HelloClient`: the client asks for an authenticated connection. The
    /// connection layer answers and handles it; the protocol never sees it.
    SessionOpen(ClientSigned<SessionOpen>),
    /// The accepting side's half of a handshake (`SessionOpen` or `PeerOpen`).
    SessionAccept {
        eph: [u8; 32],
    },
    /// First frame of a replica-to-replica connection when crypto is on, instead of
    /// `HelloReplica`: the opening replica proves who it is, and the connection becomes an
    /// authenticated session. The connection layer handles it; the protocol never sees it.
    PeerOpen {
        open: PeerOpen,
        sig: pistou_crypto::Signature,
    },
}

/// A replica's half of a peer session handshake: its ephemeral X25519 value for replica
/// `to`, signed with `from`'s key. A replayed one is useless: the session key also depends
/// on the acceptor's fresh value and on the opener's ephemeral secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerOpen {
    pub from: pistou_core::ReplicaId,
    pub to: pistou_core::ReplicaId,
    pub eph: [u8; 32],
}

impl PeerOpen {
    /// The handshake transcript both sides bind the session key to.
    pub fn transcript(&self, acceptor_eph: &[u8; 32]) -> pistou_crypto::Hash {
        pistou_crypto::hash_parts(&[b"pistou-peer-session-v1", &self.signing_hash(), acceptor_eph])
    }
}

/// A client's half of the session handshake (see `pistou_crypto::SessionKey`): its
/// ephemeral X25519 value, for one replica, signed with the client's key. Over the session
/// that follows, requests that replica never shows to others (point and range reads and
/// their release) need no signature of their own: Pesto §3 assumes authenticated clients
/// and signs only replica messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionOpen {
    pub replica: pistou_core::ReplicaId,
    pub eph: [u8; 32],
}

impl SessionOpen {
    /// Client `client`'s signed request for a session with `replica`, offering `eph`.
    pub fn signed(
        client: pistou_core::ClientId,
        replica: pistou_core::ReplicaId,
        key: &pistou_crypto::SecretKey,
        eph: [u8; 32],
    ) -> ClientSigned<SessionOpen> {
        let body = SessionOpen { replica, eph };
        let sig = key.sign(&body.signing_hash());
        ClientSigned { client, body, sig: Some(sig) }
    }

    /// The handshake transcript both sides bind the session key to.
    pub fn transcript(&self, client: pistou_core::ClientId, replica_eph: &[u8; 32]) -> pistou_crypto::Hash {
        pistou_crypto::hash_parts(&[b"pistou-session-v1", &client.0.to_le_bytes(), &self.signing_hash(), replica_eph])
    }
}

impl Message {
    /// A short name for logs and rejection counters.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Read(_) => "read",
            Message::ReadReply { .. } => "read-reply",
            Message::Prepare(_) => "st1",
            Message::PrepareReply { .. } => "st1r",
            Message::Decide(_) => "st2",
            Message::DecideReply(_) => "st2r",
            Message::Writeback(_) => "writeback",
            Message::WritebackAck { .. } => "writeback-ack",
            Message::AbortReads(_) => "abort",
            Message::HelloClient { .. } => "hello",
            Message::FetchTxn { .. } => "fetch-txn",
            Message::TxnInfo { .. } => "txn-info",
            Message::Decided(_) => "decided",
            Message::InvokeFb(_) => "invoke-fb",
            Message::ElectFb(_) => "elect-fb",
            Message::DecFb(_) => "dec-fb",
            Message::Waiting { .. } => "waiting",
            Message::HelloReplica { .. } => "hello-replica",
            Message::RangeRead(_) => "range-read",
            Message::RangeReply(_) => "range-reply",
            Message::Sync { .. } => "sync",
            Message::Supply(_) => "supply",
            Message::CatchUp { .. } => "catch-up",
            Message::CatchUpPage { .. } => "catch-up-page",
            Message::CatchUpFetch { .. } => "catch-up-fetch",
            Message::CatchUpCommits { .. } => "catch-up-commits",
            Message::SessionOpen(_) => "session-open",
            Message::SessionAccept { .. } => "session-accept",
            Message::PeerOpen { .. } => "peer-open",
        }
    }
}

impl Signable for ReadRequest {
    const DOMAIN: &'static [u8] = b"pistou-read-v1";
}
impl Signable for ReadReply {
    const DOMAIN: &'static [u8] = b"pistou-read-reply-v1";
}
impl Signable for Prepare {
    const DOMAIN: &'static [u8] = b"pistou-st1-v1";
}
impl Signable for St1Vote {
    const DOMAIN: &'static [u8] = b"pistou-st1r-v1";
}
impl Signable for St2 {
    const DOMAIN: &'static [u8] = b"pistou-st2-v1";
}
impl Signable for St2Reply {
    const DOMAIN: &'static [u8] = b"pistou-st2r-v1";
}
impl Signable for AbortReads {
    const DOMAIN: &'static [u8] = b"pistou-abort-v1";
}
impl Signable for InvokeFb {
    const DOMAIN: &'static [u8] = b"pistou-invokefb-v1";
}
impl Signable for SessionOpen {
    const DOMAIN: &'static [u8] = b"pistou-session-open-v1";
}
impl Signable for PeerOpen {
    const DOMAIN: &'static [u8] = b"pistou-peer-open-v1";
}
impl Signable for RangeRead {
    const DOMAIN: &'static [u8] = b"pistou-range-read-v1";
}
impl Signable for RangeReply {
    const DOMAIN: &'static [u8] = b"pistou-range-reply-v1";
}
impl Signable for ElectFb {
    const DOMAIN: &'static [u8] = b"pistou-electfb-v1";
}
