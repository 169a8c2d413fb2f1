//! The client side of Basil (§3–5) as a sans-IO state machine: one `Coordinator` per client
//! identity, running any number of transactions.
//!
//! Drive it with `begin/get/put/commit/abort`, feed replies with `handle(now, from, msg)` and
//! time with `tick(now)`; read what to send with `take_outputs()` and what happened with
//! `poll_event()`. Besides its own transactions, a coordinator finishes the stalled
//! transactions its own ones depend on (Basil §5): see `finish.rs`.

mod finish;
mod reads;
mod savepoint;
mod sql;

pub use savepoint::{SavepointOp, MAX_SAVEPOINT_WRITES};

pub use sql::{RangeStats, SqlOutput};

use crate::auth::{sign_client, Authenticator};
use crate::rejects::{RejectReason, Rejections};
use finish::{Fetching, Finishing};
use pistou_core::{ClientId, ClusterConfig, Key, ReplicaId, ShardId, Timestamp, TxnId, Value};
use pistou_crypto::SecretKey;
use pistou_wire::{
    AbortReads, Decision, Dep, Message, MetaError, PreparedRead, ReadEntry, ReadReply, ReadRequest, ReplicaSigned,
    TxnMeta, WriteEntry, Writeback, MAX_KEY_BYTES, MAX_TXN_OPS, MAX_VALUE_BYTES,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

/// How many decided transaction ids a client remembers (verified C-CERTs of hot versions,
/// and dependencies it no longer needs to recover).
const KNOWN_DECIDED_CAPACITY: usize = 1 << 14;

#[derive(Clone, Copy, Debug)]
pub struct CoordinatorTimeouts {
    /// How long to wait for unanimous votes before taking a slow-path quorum.
    pub fast_path_us: u64,
    /// Resend requests that got no (sufficient) answer after this long.
    pub retransmit_us: u64,
    /// Writebacks are resent to replicas that did not acknowledge them, this many times.
    pub writeback_retries: u32,
    /// A transaction undecided for this long has its undecided dependencies finished by this
    /// client (Basil §5, common case). Finishing a dependency that was merely slow is
    /// harmless (a repeated ST1), while waiting long on a stalled one is expensive on hot
    /// keys: 30 ms instead of 200 ms took correct clients from 30% to 81% of their throughput
    /// with 30% stall-late transactions on Zipf 0.9 (docs/benchmarks.md).
    pub recovery_after_us: u64,
    /// Base of the exponential timeout between fallback invocations (doubles each round).
    pub fallback_us: u64,
}

impl Default for CoordinatorTimeouts {
    fn default() -> Self {
        CoordinatorTimeouts {
            fast_path_us: 20_000,
            retransmit_us: 500_000,
            writeback_retries: 5,
            recovery_after_us: 30_000,
            fallback_us: 200_000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnHandle(pub u64);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetStart {
    /// Answered locally (the transaction's own write, or a key it already read).
    Ready(Option<Value>),
    /// A READ is in flight; a `ReadDone` event will follow.
    Pending,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CoordinatorEvent {
    ReadDone {
        txn: TxnHandle,
        key: Key,
        value: Option<Value>,
    },
    /// A SQL statement started with `sql()` finished.
    SqlDone {
        txn: TxnHandle,
        result: Result<SqlOutput, pistou_sql::SqlError>,
    },
    /// `fast` is true when the decision needed no ST2 round.
    Decided {
        txn: TxnHandle,
        id: TxnId,
        decision: Decision,
        fast: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    #[error("no such transaction")]
    UnknownTxn,
    #[error("the transaction is already committing or finished")]
    NotActive,
    #[error("key larger than {MAX_KEY_BYTES} bytes")]
    KeyTooLarge,
    #[error("value larger than {MAX_VALUE_BYTES} bytes")]
    ValueTooLarge,
    #[error("transaction has more than {MAX_TXN_OPS} operations")]
    TooManyOps,
    #[error("a SQL statement of this transaction is still running")]
    Busy,
    /// Replicas refuse reads and prepares below their GC watermark (now − max_txn_age).
    #[error(
        "the transaction is older than the cluster's max_txn_age_us (60 s by default): replicas no longer accept \
         it; a transaction must finish within that time"
    )]
    TooOld,
}

/// A read in flight: replies by replica index.
struct ReadOp {
    shard: ShardId,
    sent_at: u64,
    replies: BTreeMap<u32, ReadCandidate>,
}

/// What one replica's reply offers, after validation.
struct ReadCandidate {
    /// The signed reply until its signature is checked (in one batch with the others, once
    /// f+1 replies are in).
    unverified: Option<ReplicaSigned<ReadReply>>,
    /// A committed version with a valid C-CERT: (version, value).
    committed: Option<(Timestamp, Option<Value>)>,
    prepared: Option<PreparedRead>,
}

/// A transaction still executing (reads and buffered writes).
struct TxnState {
    ts: Timestamp,
    reads: BTreeMap<Key, (Timestamp, Option<Value>)>,
    deps: BTreeSet<Dep>,
    writes: BTreeMap<Key, Option<Value>>,
    in_flight: BTreeMap<Key, ReadOp>,
    /// Pesto state of a SQL transaction.
    sql: Option<Box<sql::SqlTxnState>>,
    /// Copies of the buffered writes at each savepoint, oldest first (`savepoint.rs`).
    savepoints: Vec<savepoint::WritesCopy>,
}

struct WritebackState {
    msg: Writeback,
    unacked: BTreeSet<ReplicaId>,
    retry: Retry,
}

/// Bounded retransmission: resend every `interval`, at most `max` more times.
#[derive(Clone, Copy, Debug)]
struct Retry {
    tries: u32,
    last_send: u64,
}

enum RetryStep {
    Wait,
    Resend,
    GiveUp,
}

impl Retry {
    fn sent_at(now: u64) -> Retry {
        Retry { tries: 0, last_send: now }
    }

    fn step(&mut self, now: u64, interval: u64, max: u32) -> RetryStep {
        if now < self.last_send.saturating_add(interval) {
            return RetryStep::Wait;
        }
        if self.tries >= max {
            return RetryStep::GiveUp;
        }
        self.tries += 1;
        self.last_send = now;
        RetryStep::Resend
    }
}

pub struct Coordinator {
    id: ClientId,
    key: Option<SecretKey>,
    auth: Authenticator,
    timeouts: CoordinatorTimeouts,
    seq: u64,
    last_time: u64,
    next_handle: u64,
    // BTreeMaps where we iterate, so that output order is deterministic (simulator).
    txns: BTreeMap<TxnHandle, TxnState>,
    by_ts: HashMap<Timestamp, TxnHandle>,
    /// Transactions being brought to a decision: our own commits and recoveries.
    finishing: BTreeMap<TxnId, Finishing>,
    /// Stalled dependencies whose ST1 we are fetching before finishing them.
    fetching: BTreeMap<TxnId, Fetching>,
    /// Undecided transactions that f+1 replicas named as the cause of one of our aborts, by
    /// id: their shard and when we first heard. Named again `recovery_after_us` later, they
    /// are finished (`finish.rs`).
    blockers: BTreeMap<TxnId, (ShardId, u64)>,
    writebacks: BTreeMap<TxnId, WritebackState>,
    known_decided: HashMap<TxnId, Decision>,
    known_order: VecDeque<TxnId>,
    outputs: Vec<(ReplicaId, Message)>,
    events: VecDeque<CoordinatorEvent>,
    rejects: Rejections,
    recoveries: u64,
    /// Plans SQL statements and runs point statements locally (pure computation).
    sql_engine: pistou_sql::Engine,
    /// The newest catalog this client has read (version, schema). Only a hint: it tells which
    /// shard's catalog a transaction's first statement should read (tables are placed by
    /// name); statements are always planned against a catalog the transaction read itself.
    catalog_hint: Option<(Timestamp, Arc<pistou_sql::Catalog>)>,
    /// Sequence values this client holds, by sequence (name, identity): blocks taken from
    /// the sequences' counters and not yet handed to a statement (`sql/sequences.rs`).
    sequence_cache: BTreeMap<(String, u64), Vec<pistou_sql::SequenceBlock>>,
    /// setvals applied per sequence: a block a statement took before the latest one is
    /// not returned to the cache (`sql/sequences.rs`).
    sequence_generations: BTreeMap<(String, u64), u64>,
    /// False forces every range read onto the snapshot path (stress mode of Pesto Fig. 8).
    eager_range_reads: bool,
    /// Writebacks skip this many replicas of each shard (the highest indexes): a stress mode
    /// that leaves them inconsistent (Pesto Fig. 8 "inconsistency at 1/3 of replicas").
    #[cfg(feature = "fault-injection")]
    writeback_omissions: usize,
    range_stats: RangeStats,
    /// Replicas whose recent range-read replies were outliers, until when eager range reads
    /// avoid asking them first.
    range_outliers: HashMap<ReplicaId, u64>,
    /// Every link to a replica is an authenticated session (`Replica::open_session`): reads
    /// go unsigned.
    session_reads: bool,
    /// The client's secret behind its statements' random seeds (`set_random_secret`).
    random_secret: [u8; 32],
}

impl Coordinator {
    /// `key` is the client's signing key; `None` is allowed only with `crypto = false`.
    pub fn new(config: Arc<ClusterConfig>, id: ClientId, key: Option<SecretKey>) -> Result<Coordinator, String> {
        let registered = config.client_keys().get(&id).copied();
        let Some(pk) = registered else { return Err(format!("client {} is not in the configuration", id.0)) };
        match (&key, config.crypto) {
            (Some(k), _) if k.public() != pk => {
                return Err(format!("key of client {} does not match the configuration", id.0))
            }
            (None, true) => return Err("crypto is on: a client needs its signing key".into()),
            _ => {}
        }
        let key = if config.crypto { key } else { None };
        let limits = pistou_sql::Limits::of_cluster(&config.sql, pistou_wire::MAX_TXN_OPS);
        Ok(Coordinator {
            id,
            key,
            auth: Authenticator::new(config),
            timeouts: CoordinatorTimeouts::default(),
            seq: 0,
            last_time: 0,
            next_handle: 1,
            txns: BTreeMap::new(),
            by_ts: HashMap::new(),
            finishing: BTreeMap::new(),
            fetching: BTreeMap::new(),
            blockers: BTreeMap::new(),
            writebacks: BTreeMap::new(),
            known_decided: HashMap::new(),
            known_order: VecDeque::new(),
            outputs: Vec::new(),
            events: VecDeque::new(),
            rejects: Rejections::default(),
            recoveries: 0,
            sql_engine: pistou_sql::Engine::new(limits),
            catalog_hint: None,
            sequence_cache: BTreeMap::new(),
            sequence_generations: BTreeMap::new(),
            eager_range_reads: true,
            #[cfg(feature = "fault-injection")]
            writeback_omissions: 0,
            range_stats: RangeStats::default(),
            range_outliers: HashMap::new(),
            session_reads: false,
            random_secret: [0; 32],
        })
    }

    /// The secret this client's statements derive their random seeds from
    /// (`gen_random_uuid()`). The runtime sets it from the operating system's randomness;
    /// without it values are still unique, but foreseeable.
    pub fn set_random_secret(&mut self, secret: [u8; 32]) {
        self.random_secret = secret;
    }

    pub fn set_timeouts(&mut self, t: CoordinatorTimeouts) {
        self.timeouts = t;
    }
    /// `false` makes every range read skip its eager decision and take the snapshot path
    /// (a stress mode: Pesto Fig. 8 "eager path forced to fail").
    pub fn set_eager_range_reads(&mut self, on: bool) {
        self.eager_range_reads = on;
    }
    /// Stress mode: this client's writebacks skip the `k` highest-indexed replicas of each
    /// shard, which then learn its decisions only through SYNC/SUPPLY or the fallback. For
    /// benchmarks of the snapshot path; never for production.
    #[cfg(feature = "fault-injection")]
    pub fn set_writeback_omissions(&mut self, k: usize) {
        self.writeback_omissions = k;
    }
    /// `true` when every connection to a replica is an authenticated session (the client
    /// library's links, the simulator's channels): point and range reads and their release
    /// then go unsigned, which saves a signature per request here and a verification at
    /// each replica asked. Other requests stay signed: replicas show them to others.
    pub fn set_session_reads(&mut self, on: bool) {
        self.session_reads = on;
    }
    /// The key read-side requests are signed with: none over authenticated sessions.
    pub(crate) fn read_key(&self) -> Option<&SecretKey> {
        if self.session_reads {
            None
        } else {
            self.key.as_ref()
        }
    }
    /// Signs a read-side request unless links are authenticated sessions.
    pub(crate) fn sign_read<T: pistou_wire::Signable>(&self, body: T) -> pistou_wire::ClientSigned<T> {
        sign_client(self.id, self.read_key(), body)
    }
    /// How this client's range reads completed so far.
    pub fn range_stats(&self) -> RangeStats {
        self.range_stats
    }
    pub fn client_id(&self) -> ClientId {
        self.id
    }
    pub fn rejections(&self) -> &Rejections {
        &self.rejects
    }
    /// Transactions of other clients this client started finishing (Basil §5).
    pub fn recoveries(&self) -> u64 {
        self.recoveries
    }
    fn config(&self) -> &ClusterConfig {
        self.auth.config()
    }
    pub fn take_outputs(&mut self) -> Vec<(ReplicaId, Message)> {
        std::mem::take(&mut self.outputs)
    }
    pub fn poll_event(&mut self) -> Option<CoordinatorEvent> {
        self.events.pop_front()
    }
    /// Transactions executing, committing or being recovered, or writebacks not yet
    /// acknowledged.
    pub fn busy(&self) -> bool {
        !self.txns.is_empty() || !self.finishing.is_empty() || !self.fetching.is_empty() || !self.writebacks.is_empty()
    }
    /// Transactions this coordinator is still finishing.
    pub fn pending_ids(&self) -> Vec<TxnId> {
        self.finishing.keys().copied().collect()
    }

    /// What this coordinator is still working on, for liveness diagnostics.
    pub fn describe_pending(&self) -> String {
        let mut parts = Vec::new();
        if !self.txns.is_empty() {
            parts.push(format!("{} executing", self.txns.len()));
        }
        for fin in self.finishing.values() {
            parts.push(format!("finishing {}", self.describe_finishing(fin)));
        }
        for id in self.fetching.keys() {
            parts.push(format!("fetching {id}"));
        }
        for (id, wb) in &self.writebacks {
            parts.push(format!("writeback {id} unacked={}", wb.unacked.len()));
        }
        parts.join("; ")
    }

    pub fn timestamp_of(&self, txn: TxnHandle) -> Option<Timestamp> {
        self.txns.get(&txn).map(|t| t.ts)
    }

    fn known_decision(&self, id: &TxnId) -> Option<Decision> {
        self.known_decided.get(id).copied()
    }

    fn remember_decided(&mut self, id: TxnId, decision: Decision) {
        if self.known_decided.insert(id, decision).is_none() {
            self.known_order.push_back(id);
            if self.known_order.len() > KNOWN_DECIDED_CAPACITY {
                if let Some(old) = self.known_order.pop_front() {
                    self.known_decided.remove(&old);
                }
            }
        }
    }

    /// Begin(): ts = (time, client id, seq), strictly increasing for this client.
    pub fn begin(&mut self, now: u64) -> TxnHandle {
        self.last_time = self.last_time.max(now);
        self.seq += 1;
        let ts = Timestamp { time: self.last_time, client: self.id, seq: self.seq };
        let h = TxnHandle(self.next_handle);
        self.next_handle += 1;
        let state = TxnState {
            ts,
            reads: BTreeMap::new(),
            deps: BTreeSet::new(),
            writes: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            sql: None,
            savepoints: Vec::new(),
        };
        self.txns.insert(h, state);
        self.by_ts.insert(ts, h);
        h
    }

    fn executing(&mut self, h: TxnHandle) -> Result<&mut TxnState, TxnError> {
        match self.txns.get_mut(&h) {
            Some(t) => Ok(t),
            None if self.finishing.values().any(|f| f.owner == Some(h)) => Err(TxnError::NotActive),
            None => Err(TxnError::UnknownTxn),
        }
    }

    /// Read(key): own writes first, then an earlier read of the same key, else READ to 2f+1.
    pub fn get(&mut self, now: u64, h: TxnHandle, key: &[u8]) -> Result<GetStart, TxnError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(TxnError::KeyTooLarge);
        }
        let t = self.executing(h)?;
        if let Some(v) = t.writes.get(key) {
            return Ok(GetStart::Ready(v.clone()));
        }
        if let Some((_, v)) = t.reads.get(key) {
            return Ok(GetStart::Ready(v.clone()));
        }
        if t.in_flight.contains_key(key) {
            return Ok(GetStart::Pending);
        }
        if t.reads.len() + t.writes.len() >= MAX_TXN_OPS {
            return Err(TxnError::TooManyOps);
        }
        let ts = t.ts;
        if self.too_old(now, ts) {
            return Err(TxnError::TooOld);
        }
        let shard = self.config().shard_of(key);
        let q = self.config().quorums();
        // Spread load: start at a replica chosen from the client id and sequence number.
        let start = (self.id.0.wrapping_add(self.seq)) as usize % q.n();
        let req = self.sign_read(ReadRequest { key: key.to_vec(), ts });
        for i in 0..q.read_fanout() {
            let index = ((start + i) % q.n()) as u32;
            self.outputs.push((ReplicaId { shard, index }, Message::Read(req.clone())));
        }
        let t = self.executing(h)?;
        t.in_flight.insert(key.to_vec(), ReadOp { shard, sent_at: now, replies: BTreeMap::new() });
        Ok(GetStart::Pending)
    }

    /// Write(key, value): buffered until commit. `None` deletes.
    pub fn put(&mut self, h: TxnHandle, key: &[u8], value: Option<Value>) -> Result<(), TxnError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(TxnError::KeyTooLarge);
        }
        if value.as_ref().is_some_and(|v| v.len() > MAX_VALUE_BYTES) {
            return Err(TxnError::ValueTooLarge);
        }
        let t = self.executing(h)?;
        if t.reads.len() + t.writes.len() >= MAX_TXN_OPS && !t.writes.contains_key(key) {
            return Err(TxnError::TooManyOps);
        }
        t.writes.insert(key.to_vec(), value);
        Ok(())
    }

    /// Abort(): release the RTS this transaction left on replicas. Buffered writes vanish.
    pub fn abort(&mut self, h: TxnHandle) -> Result<(), TxnError> {
        self.executing(h)?;
        let Some(t) = self.txns.remove(&h) else { return Err(TxnError::UnknownTxn) };
        self.by_ts.remove(&t.ts);
        self.abort_reads(&t);
        Ok(())
    }

    /// Would replicas refuse `ts` as below their GC watermark? Their clocks may be up to
    /// delta ahead of ours.
    fn too_old(&self, now: u64, ts: Timestamp) -> bool {
        let config = self.config();
        ts.time < now.saturating_add(config.delta_us).saturating_sub(config.max_txn_age_us)
    }

    /// Releases the RTS a transaction's point reads left on replicas, and tells the shards
    /// it sent range reads to that it waits for none of them any more (a long one may still
    /// run there: `pistou_txn::RangeJob`).
    fn abort_reads(&mut self, t: &TxnState) {
        let mut by_shard: BTreeMap<ShardId, Vec<Key>> = BTreeMap::new();
        for k in t.reads.keys().chain(t.in_flight.keys()) {
            by_shard.entry(self.config().shard_of(k)).or_default().push(k.clone());
        }
        for shard in t.sql.iter().flat_map(|s| s.shards_read()) {
            by_shard.entry(shard).or_default();
        }
        for (shard, keys) in by_shard {
            let req = self.sign_read(AbortReads { ts: t.ts, keys });
            let replicas: Vec<ReplicaId> = self.config().replicas_of(shard).collect();
            for r in replicas {
                self.outputs.push((r, Message::AbortReads(req.clone())));
            }
        }
    }

    /// Commit(): the Prepare phase. All reads must have completed.
    pub fn commit(&mut self, now: u64, h: TxnHandle) -> Result<(), TxnError> {
        let t = self.executing(h)?;
        if !t.in_flight.is_empty() || t.sql.as_ref().is_some_and(|s| s.busy()) {
            return Err(TxnError::NotActive);
        }
        let ts = t.ts;
        if self.too_old(now, ts) {
            // Replicas would refuse T's ST1 (below their GC watermark) and never answer. The
            // caller aborts T; the error says why, where a plain abort would read as a conflict.
            return Err(TxnError::TooOld);
        }
        let Some(mut t) = self.txns.remove(&h) else { return Err(TxnError::UnknownTxn) };
        self.by_ts.remove(&t.ts);
        let Ok(predicates) = Self::sql_commit_parts(&mut t) else {
            // A key read at two versions: T cannot be serializable.
            self.abort_locally(h, &t);
            return Ok(());
        };
        let mut meta = TxnMeta {
            ts: t.ts,
            read_set: t.reads.iter().map(|(k, (v, _))| ReadEntry { key: k.clone(), version: *v }).collect(),
            write_set: t.writes.iter().map(|(k, v)| WriteEntry { key: k.clone(), value: v.clone() }).collect(),
            deps: t.deps.iter().cloned().collect(),
            predicates,
            late: self.is_late(now, t.ts),
            shards: Vec::new(),
        };
        if meta.read_set.is_empty() && meta.write_set.is_empty() && meta.predicates.is_empty() {
            // Nothing read or written: trivially serializable, nothing to tell anyone.
            let id = meta.id();
            self.events.push_back(CoordinatorEvent::Decided { txn: h, id, decision: Decision::Commit, fast: true });
            return Ok(());
        }
        let mut shards: Vec<ShardId> = meta
            .read_set
            .iter()
            .map(|r| &r.key)
            .chain(meta.write_set.iter().map(|w| &w.key))
            .map(|k| self.config().shard_of(k))
            .chain(meta.predicates.iter().map(|p| self.config().table_shard(&p.predicate.table)))
            .collect();
        shards.sort();
        shards.dedup();
        meta.shards = shards;
        if let Err(e) = meta.validate(self.config()) {
            // Replicas would refuse the ST1 without an answer: end T here rather than
            // retransmit until it is too old. Too large stays too large on a retry.
            tracing::debug!(ts = ?t.ts, "transaction aborted locally: {e}");
            if matches!(e, MetaError::TooLarge | MetaError::OversizedItem) {
                self.abort_reads(&t);
                return Err(TxnError::TooManyOps);
            }
            self.abort_locally(h, &t);
            return Ok(());
        }
        self.start_finishing(now, meta, Some(h));
        Ok(())
    }

    /// Ends T with an abort decided by this client alone: its reads are released and the
    /// application learns the abort; no replica prepared anything.
    fn abort_locally(&mut self, h: TxnHandle, t: &TxnState) {
        self.abort_reads(t);
        let id = TxnMeta {
            ts: t.ts,
            read_set: vec![],
            write_set: vec![],
            deps: vec![],
            predicates: vec![],
            late: false,
            shards: vec![],
        }
        .id();
        self.events.push_back(CoordinatorEvent::Decided { txn: h, id, decision: Decision::Abort, fast: true });
    }

    /// Two-tier grace (Pesto App. B.9): T is late if more than half the short grace window
    /// passed between its timestamp and its commit, so that writes committed meanwhile may
    /// already have raised table versions past ts_T − grace. Half, because replicas' clocks
    /// differ from ours.
    fn is_late(&self, now: u64, ts: Timestamp) -> bool {
        now.saturating_sub(ts.time) > self.config().sql.grace_us / 2
    }

    /// A message from replica `from` (the driver knows which connection delivered it;
    /// signed content is attributed by its signature, and a range reply must also come
    /// from its signer's own connection).
    pub fn handle(&mut self, now: u64, from: ReplicaId, msg: Message) {
        let result = match msg {
            Message::ReadReply { reply, committed } => self.on_read_reply(now, reply, committed),
            Message::RangeReply(reply) => self.on_range_reply(now, from, reply),
            Message::PrepareReply { vote, conflict, blocker } => self.on_vote(now, from, vote, conflict, blocker),
            Message::DecideReply(reply) => self.on_st2_reply(now, reply),
            Message::Decided(wb) => self.on_decided(wb),
            Message::TxnInfo { meta } => self.on_txn_info(now, meta),
            Message::Waiting { txn, on } => {
                self.on_waiting(from, txn, on);
                Ok(())
            }
            Message::WritebackAck { txn } => {
                // Unsigned by design: a lie merely stops our retransmissions to the liar.
                self.on_writeback_ack(from, txn);
                Ok(())
            }
            _ => Err(RejectReason::Unexpected),
        };
        if let Err(r) = result {
            self.rejects.record(r);
        }
    }

    fn on_writeback_ack(&mut self, from: ReplicaId, txn: TxnId) {
        if let Some(wb) = self.writebacks.get_mut(&txn) {
            wb.unacked.remove(&from);
            if wb.unacked.is_empty() {
                self.writebacks.remove(&txn);
            }
        }
    }

    /// Timers: fast-path timeout, retransmissions, recovery of stalled dependencies,
    /// fallback invocations.
    pub fn tick(&mut self, now: u64) {
        let handles: Vec<TxnHandle> = self.txns.keys().copied().collect();
        for h in handles {
            self.retransmit_reads(now, h);
        }
        let ids: Vec<TxnId> = self.finishing.keys().copied().collect();
        for id in ids {
            self.tick_finishing(now, id);
        }
        self.tick_fetching(now);
        self.tick_writebacks(now);
        self.sql_tick(now);
    }

    /// A read without f+1 replies after the retransmission timeout goes to every replica.
    fn retransmit_reads(&mut self, now: u64, h: TxnHandle) {
        let rt = self.timeouts.retransmit_us;
        let n = self.config().quorums().n() as u32;
        let (id, signer) = (self.id, self.read_key().cloned());
        let Some(t) = self.txns.get_mut(&h) else { return };
        let ts = t.ts;
        let mut out = Vec::new();
        for (key, op) in t.in_flight.iter_mut() {
            if now < op.sent_at.saturating_add(rt) {
                continue;
            }
            op.sent_at = now;
            let req = sign_client(id, signer.as_ref(), ReadRequest { key: key.clone(), ts });
            for i in (0..n).filter(|i| !op.replies.contains_key(i)) {
                out.push((ReplicaId { shard: op.shard, index: i }, Message::Read(req.clone())));
            }
        }
        self.outputs.extend(out);
    }

    fn tick_writebacks(&mut self, now: u64) {
        let (rt, retries) = (self.timeouts.retransmit_us, self.timeouts.writeback_retries);
        let mut finished = Vec::new();
        for (id, wb) in self.writebacks.iter_mut() {
            match wb.retry.step(now, rt, retries) {
                RetryStep::Wait => {}
                RetryStep::GiveUp => finished.push(*id),
                RetryStep::Resend => {
                    for r in &wb.unacked {
                        self.outputs.push((*r, Message::Writeback(wb.msg.clone())));
                    }
                }
            }
        }
        for id in finished {
            self.writebacks.remove(&id);
        }
    }
}
