//! A Basil replica (§3–4) as a sans-IO state machine.
//!
//! Inputs: `handle(now, from, message)` and `tick(now)`; `now` is the replica's clock in
//! microseconds, supplied by the driver. Outputs: `take_outputs()` returns (peer, message)
//! pairs. Replies that must be signed are queued and signed together, one Merkle-batched
//! signature per batch (§4.4), when `flush()` is called or a batch fills up.

use crate::auth::Authenticator;
use crate::log::LogEntry;
use crate::pesto::cc::CcAbort;
use crate::pesto::{SqlReplica, SqlTxn, SqlTxnError};
use crate::rejects::{RejectReason, Rejections};
use pistou_core::sql_keys::{catalog_key, key_kind, KeyKind};
use pistou_core::{ClusterConfig, Key, ReplicaId, Timestamp, TinyMap, TinySet, TxnId};
use pistou_crypto::{BatchSigner, Hash, SecretKey};
use pistou_wire::{
    AbortCert, AbortReads, ClientSigned, CommitCert, CommittedRead, ConflictProof, Decision, DecisionCert, ElectFb,
    Message, Prepare, PreparedRead, RangeRead, RangeReply, ReadReply, ReadRequest, ReplicaSigned, Signable, St1Vote,
    St2, St2Reply, TxnMeta, Vote, Writeback,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Default base of the exponential fallback view timeout.
pub const DEFAULT_VIEW_TIMEOUT_US: u64 = 100_000;

/// Who to answer: an opaque token chosen by the driver (a connection, or a simulated node).
pub type Peer = u64;

/// Where a signed reply goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dest {
    Client(Peer),
    Replica(ReplicaId),
}

/// Multi-version state of one key.
#[derive(Default)]
pub(crate) struct KeyState {
    /// Versions written by committed transactions: (version = writer's ts, writer).
    pub(crate) committed: TinySet<(Timestamp, TxnId)>,
    /// Versions written by prepared, undecided transactions.
    pub(crate) prepared: TinySet<(Timestamp, TxnId)>,
    /// Prepared or committed transactions that read this key: (reader ts, reader) → version read.
    pub(crate) readers: TinyMap<(Timestamp, TxnId), Timestamp>,
    /// Read timestamps (RTS) of ongoing transactions.
    pub(crate) rts: TinySet<Timestamp>,
}

impl KeyState {
    pub(crate) fn is_empty(&self) -> bool {
        self.committed.is_empty() && self.prepared.is_empty() && self.readers.is_empty() && self.rts.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Known (ST1 or ST2 seen) but not in the Prepared set: voted abort, or not checked.
    Unprepared,
    Prepared,
    Committed(Arc<CommitCert>),
    Aborted(Arc<AbortCert>),
}

pub(crate) struct VoteRecord {
    pub(crate) vote: Vote,
    pub(crate) cause: AbortCause,
}

/// What an abort vote tells the client beyond "abort" (`Plain` for commit votes).
#[derive(Clone, Debug, Default)]
pub(crate) enum AbortCause {
    #[default]
    Plain,
    /// A committed conflicting transaction, with the proof (Basil's fast abort).
    Committed(Box<ConflictProof>),
    /// An undecided transaction prepared here that the vote is due to: the client may finish
    /// it (Basil §5), or a crashed client's commit would block its rows for good.
    Prepared(TxnId),
}

impl AbortCause {
    /// The PrepareReply fields `conflict` and `blocker`.
    fn into_parts(self) -> (Option<ConflictProof>, Option<TxnId>) {
        match self {
            AbortCause::Plain => (None, None),
            AbortCause::Committed(proof) => (Some(*proof), None),
            AbortCause::Prepared(txn) => (None, Some(txn)),
        }
    }
}

pub(crate) struct TxnRecord {
    pub(crate) meta: Arc<TxnMeta>,
    pub(crate) status: Status,
    /// The ST1R vote, computed at most once (Basil §4.2: a correct replica never changes it).
    pub(crate) vote: Option<VoteRecord>,
    /// Dependencies not yet decided (Alg. 1 line 15).
    pub(crate) pending_deps: usize,
    /// The dependencies the vote was deferred on, for `Message::Waiting` (not pruned as they
    /// are decided: a hint about a decided one costs the client a fetch that ends at once).
    pub(crate) waiting_on: Vec<TxnId>,
    /// Peers waiting for the vote or the decision.
    pub(crate) interested: BTreeSet<Peer>,
    /// The logged ST2 decision and the view it was adopted in (view_decision).
    pub(crate) st2: Option<(Decision, u64)>,
    /// Fallback (Basil §5): this replica's current view for T, and since when (µs).
    pub(crate) view_current: u64,
    pub(crate) view_since: u64,
    /// The last view for which this replica sent ELECTFB.
    pub(crate) elected_in: Option<u64>,
    /// T's SQL content at this shard (Pesto), decoded once and dropped when T's decision is
    /// applied; `None` for key-value transactions.
    pub(crate) sql: Option<Arc<SqlTxn>>,
}

impl TxnRecord {
    pub(crate) fn new(meta: Arc<TxnMeta>) -> TxnRecord {
        TxnRecord {
            meta,
            status: Status::Unprepared,
            vote: None,
            pending_deps: 0,
            waiting_on: Vec::new(),
            interested: BTreeSet::new(),
            st2: None,
            view_current: 0,
            view_since: 0,
            elected_in: None,
            sql: None,
        }
    }

    /// The decision certificate, once decided.
    pub(crate) fn cert(&self) -> Option<DecisionCert> {
        match &self.status {
            Status::Committed(c) => Some(DecisionCert::Commit((**c).clone())),
            Status::Aborted(a) => Some(DecisionCert::Abort((**a).clone())),
            _ => None,
        }
    }
}

/// Counters a replica exposes for monitoring and tests.
#[derive(Clone, Debug, Default)]
pub struct ReplicaStats {
    pub reads: u64,
    pub votes_commit: u64,
    pub votes_abort: u64,
    pub commits_applied: u64,
    pub aborts_applied: u64,
    pub batches_signed: u64,
    pub replies_signed: u64,
    /// Decisions adopted from a fallback leader's DECFB (Basil §5).
    pub fallback_adoptions: u64,
    /// Transactions this replica lacked and applied from a peer's SUPPLY (Pesto §5.5).
    pub supplied: u64,
    /// Range reads run as jobs, past their inline slice of work (`range_jobs.rs`).
    pub long_reads: u64,
    /// SYNCs sent to learn a decision this replica missed (`inquiry.rs`).
    pub inquiries: u64,
    /// Committed SQL transactions this replica could not apply (logged as errors). A correct
    /// replica should never have one: every commit had correct replicas decode it.
    pub unapplied_sql_commits: u64,
}

pub(crate) enum PendingReply {
    Read { reply: ReadReply, committed: Option<CommittedRead> },
    Range(RangeReply),
    Vote { vote: St1Vote, cause: AbortCause },
    St2(St2Reply),
    ElectFb(ElectFb),
}

pub struct Replica {
    pub(crate) id: ReplicaId,
    pub(crate) auth: Authenticator,
    signer: Option<BatchSigner>,
    pub(crate) keys: HashMap<Key, KeyState>,
    pub(crate) txns: HashMap<TxnId, TxnRecord>,
    /// Timestamp → the transaction that owns it; a second transaction with the same
    /// timestamp (only a Byzantine client does that) gets an abort vote.
    pub(crate) ts_owner: HashMap<Timestamp, TxnId>,
    /// Dependency → transactions waiting for its decision.
    pub(crate) dependents: HashMap<TxnId, Vec<TxnId>>,
    /// All RTS entries in timestamp order, for garbage collection.
    pub(crate) rts_index: BTreeSet<(Timestamp, Key)>,
    pub(crate) pending: Vec<(Dest, PendingReply)>,
    outputs: Vec<(Peer, Message)>,
    pub(crate) replica_outputs: Vec<(ReplicaId, Message)>,
    pub(crate) rejects: Rejections,
    pub(crate) stats: ReplicaStats,
    /// Fallback leader state (Basil §5), for transactions whose current view elects us.
    pub(crate) elections: crate::fallback::Elections,
    /// Exponential view timeouts: view v lasts at least base × 2^v before a new election.
    pub(crate) view_timeout_base_us: u64,
    /// Every state change a restart must restore goes here first.
    pub(crate) log: Box<dyn crate::log::ReplicaLog>,
    /// Catch-up after a restart (`catchup.rs`).
    pub(crate) catch_up: crate::catchup::CatchUp,
    /// The committed records of `txns` in (timestamp, id) order: what catch-up serves.
    pub(crate) committed_order: BTreeSet<(Timestamp, TxnId)>,
    /// Pesto: rows, catalogs and the semantic-check state.
    pub(crate) sql: SqlReplica,
    /// Pesto's snapshot path: queries waiting for SYNCed transactions.
    pub(crate) snapshots: crate::pesto::snapshot::Snapshots,
    /// Range reads too long for the protocol thread (`range_jobs.rs`).
    pub(crate) range_jobs: crate::pesto::range_jobs::RangeJobs,
    /// Undecided transactions to ask peers about (see `inquiry.rs`).
    pub(crate) inquiries: crate::inquiry::Inquiries,
    /// Each client's undecided transactions, bounded (see `quota.rs`).
    pub(crate) undecided: crate::quota::Undecided,
    /// Garbage collection of the state above (see `gc.rs`).
    pub(crate) gc: crate::gc::Gc,
    /// Client connections the connection layer authenticated (see `open_session`).
    sessions: HashMap<Peer, pistou_core::ClientId>,
    /// Sessions ended for a bad signature, for the connection layer to close
    /// (`take_ended_sessions`).
    ended_sessions: Vec<Peer>,
    /// Committed SQL transactions planned against a catalog version whose schema change
    /// has not reached this replica yet (its writeback was delayed or lost), by that
    /// version. They are applied as soon as it commits here (`apply_sql_commit`).
    pub(crate) awaiting_catalog: AwaitingCatalog,
}

/// Committed SQL transactions waiting for the schema change they were planned against, by
/// its catalog version, with an index of their ids: `applied` asks about one id for every
/// entry of every snapshot proposal, so that must not scan the waiting list.
#[derive(Default)]
pub(crate) struct AwaitingCatalog {
    by_version: BTreeMap<Timestamp, Vec<(TxnId, Arc<TxnMeta>)>>,
    ids: HashSet<TxnId>,
}

impl AwaitingCatalog {
    fn push(&mut self, version: Timestamp, id: TxnId, meta: Arc<TxnMeta>) {
        if self.ids.insert(id) {
            self.by_version.entry(version).or_default().push((id, meta));
        }
    }

    /// The transactions waiting for catalog `version`, which has just committed here.
    fn take(&mut self, version: Timestamp) -> Vec<(TxnId, Arc<TxnMeta>)> {
        let ready = self.by_version.remove(&version).unwrap_or_default();
        for (id, _) in &ready {
            self.ids.remove(id);
        }
        ready
    }

    pub(crate) fn contains(&self, id: &TxnId) -> bool {
        self.ids.contains(id)
    }
}

impl Replica {
    /// `key` is this replica's signing key; it may be `None` only if the cluster runs with
    /// `crypto = false`.
    pub fn new(config: Arc<ClusterConfig>, id: ReplicaId, key: Option<SecretKey>) -> Result<Replica, String> {
        if config.replica(id).is_none() {
            return Err(format!("replica {id} is not in the configuration"));
        }
        let signer = match (config.crypto, key) {
            (true, Some(k)) => {
                if Some(&k.public()) != config.replica_key(id) {
                    return Err(format!("the key given to replica {id} does not match the configuration"));
                }
                Some(BatchSigner::new(k, config.reply_batch))
            }
            (true, None) => return Err("crypto is on: a replica needs its signing key".into()),
            (false, _) => None,
        };
        let config_for_sql = config.clone();
        Ok(Replica {
            id,
            auth: Authenticator::new(config),
            signer,
            keys: HashMap::new(),
            txns: HashMap::new(),
            ts_owner: HashMap::new(),
            dependents: HashMap::new(),
            rts_index: BTreeSet::new(),
            pending: Vec::new(),
            outputs: Vec::new(),
            replica_outputs: Vec::new(),
            rejects: Rejections::default(),
            stats: ReplicaStats::default(),
            elections: Default::default(),
            view_timeout_base_us: DEFAULT_VIEW_TIMEOUT_US,
            log: Box::new(crate::log::DiscardLog),
            catch_up: Default::default(),
            committed_order: BTreeSet::new(),
            sql: SqlReplica::new(&config_for_sql, id.shard),
            snapshots: Default::default(),
            range_jobs: Default::default(),
            inquiries: Default::default(),
            undecided: Default::default(),
            gc: Default::default(),
            sessions: HashMap::new(),
            ended_sessions: Vec::new(),
            awaiting_catalog: AwaitingCatalog::default(),
        })
    }

    pub fn id(&self) -> ReplicaId {
        self.id
    }
    pub fn rejections(&self) -> &Rejections {
        &self.rejects
    }
    pub fn stats(&self) -> &ReplicaStats {
        &self.stats
    }
    /// Replica signatures (votes, certificates) checked through the verified-batch-root cache:
    /// `(hits, misses)`, a miss being an ed25519 verification (Basil §4.4).
    pub fn verify_cache_counts(&self) -> (u64, u64) {
        let cache = self.auth.cache();
        (cache.hits(), cache.misses())
    }
    pub(crate) fn config(&self) -> &ClusterConfig {
        self.auth.config()
    }

    /// The connection layer authenticated `peer` as `client` (a session handshake, see
    /// `pistou_crypto::SessionKey`; the simulator's channels are authenticated by
    /// construction). Its reads then need no signature of their own.
    pub fn open_session(&mut self, peer: Peer, client: pistou_core::ClientId) {
        self.sessions.insert(peer, client);
    }

    /// `peer`'s connection closed.
    pub fn close_session(&mut self, peer: Peer) {
        self.sessions.remove(&peer);
        self.abandon_range_reads(|from, _, _| from == peer);
    }

    /// The stored ST1 vote for a transaction, if this replica cast one.
    pub fn vote_of(&self, txn: &TxnId) -> Option<Vote> {
        self.txns.get(txn).and_then(|r| r.vote.as_ref()).map(|v| v.vote)
    }

    /// The latest committed value of `key` (test and inspection helper).
    pub fn committed_value(&self, key: &[u8]) -> Option<Vec<u8>> {
        let (_, writer) = self.keys.get(key)?.committed.iter().next_back()?;
        self.txns.get(writer)?.meta.write_of(key)?.value.clone()
    }

    /// Metadata of the committed transactions this replica still holds (see `gc.rs`), in
    /// timestamp order (never hash order: the simulator builds its checks from it).
    pub fn committed_txns(&self) -> impl Iterator<Item = &TxnMeta> {
        self.committed_order.iter().filter_map(|(_, id)| self.txns.get(id)).map(|r| &*r.meta)
    }

    /// The decision this replica applied for a transaction, if any.
    pub fn decision_of(&self, txn: &TxnId) -> Option<Decision> {
        match self.txns.get(txn)?.status {
            Status::Committed(_) => Some(Decision::Commit),
            Status::Aborted(_) => Some(Decision::Abort),
            _ => None,
        }
    }

    /// Number of RTS entries held (garbage collection is observable in tests).
    pub fn rts_len(&self) -> usize {
        self.rts_index.len()
    }

    pub fn handle(&mut self, now: u64, from: Peer, msg: Message) {
        self.heard_from_client(now);
        let result = match msg {
            Message::Read(req) => self.on_read(now, from, req),
            Message::Prepare(req) => self.on_prepare(now, from, req),
            Message::Decide(req) => self.on_st2(from, req),
            Message::Writeback(wb) => self.on_writeback(from, wb),
            Message::AbortReads(req) => self.on_abort_reads(from, req),
            Message::FetchTxn { txn } => {
                self.on_fetch(from, txn);
                Ok(())
            }
            Message::InvokeFb(req) => self.on_invoke_fb(now, from, req),
            Message::HelloClient { .. } => Ok(()),
            Message::RangeRead(req) => self.on_range_read(now, from, std::sync::Arc::unwrap_or_clone(req)),
            Message::RangeReply(_)
            | Message::Sync { .. }
            | Message::Supply(_)
            | Message::CatchUp { .. }
            | Message::CatchUpPage { .. }
            | Message::CatchUpFetch { .. }
            | Message::CatchUpCommits { .. }
            | Message::ReadReply { .. }
            | Message::PrepareReply { .. }
            | Message::DecideReply(_)
            | Message::WritebackAck { .. }
            | Message::TxnInfo { .. }
            | Message::Decided(_)
            | Message::ElectFb(_)
            | Message::DecFb(_)
            | Message::Waiting { .. }
            | Message::HelloReplica { .. }
            | Message::SessionOpen(_)
            | Message::PeerOpen { .. }
            | Message::SessionAccept { .. } => Err(RejectReason::Unexpected),
        };
        if let Err(reason) = result {
            self.rejects.record(reason);
            // A correct client never sends a signature that does not verify: its own are
            // good, and it verifies every replica signature it relays. Its session ends, so
            // that a client flooding bad signatures pays a new handshake for each instead of
            // the replica a check per message (issue 33).
            if reason == RejectReason::BadSignature && self.sessions.contains_key(&from) {
                self.close_session(from);
                self.ended_sessions.push(from);
            }
        }
        if self.pending.len() >= self.config().reply_batch {
            self.flush();
        }
    }

    /// Handles everything a driver drained from its input queue, verifying the client
    /// signatures of all of it in one ed25519 batch first (about twice as cheap per signature
    /// as one by one). Same effect as calling `handle` on each, in order.
    pub fn handle_many(&mut self, now: u64, inputs: Vec<(Peer, Message)>) {
        let signed: Vec<_> = inputs.iter().filter_map(|(_, m)| client_signature(m)).collect();
        self.auth.preverify_clients(signed);
        for (from, msg) in inputs {
            self.handle(now, from, msg);
        }
        self.auth.preverify_clients(Vec::new());
    }

    /// A message from another replica (the fallback election).
    pub fn handle_replica(&mut self, now: u64, from: ReplicaId, msg: Message) {
        let result = match msg {
            Message::ElectFb(e) => self.on_elect_fb(from, e),
            Message::DecFb(d) => self.on_dec_fb(now, d),
            Message::Sync { txn } => self.on_sync(from, txn),
            Message::Supply(wb) => self.on_supply(wb),
            Message::CatchUp { after } => self.on_catch_up(from, after),
            Message::CatchUpPage { ids, next } => self.on_catch_up_page(now, from, ids, next),
            Message::CatchUpFetch { ids } => self.on_catch_up_fetch(from, ids),
            Message::CatchUpCommits { commits } => self.on_catch_up_commits(now, from, commits),
            Message::HelloReplica { .. } => Ok(()),
            _ => Err(RejectReason::Unexpected),
        };
        if let Err(reason) = result {
            self.rejects.record(reason);
        }
        if self.pending.len() >= self.config().reply_batch {
            self.flush();
        }
    }

    /// Periodic work: garbage-collect read timestamps of transactions too old to prepare.
    pub fn tick(&mut self, now: u64) {
        let horizon = self.watermark(now);
        while let Some((ts, _)) = self.rts_index.first() {
            if ts.time >= horizon {
                break;
            }
            let Some((ts, key)) = self.rts_index.pop_first() else { break };
            self.remove_rts(&key, ts);
        }
        let max_age = self.config().max_txn_age_us;
        self.sql.gc(now, max_age);
        let watermark = self.sql.store.watermark();
        self.abandon_range_reads(|_, _, ts| ts < watermark);
        self.snapshot_tick(now);
        self.inquiry_tick(now);
        self.catch_up_tick(now);
        self.collect_garbage(horizon);
    }

    /// Transactions with ts.time below this are refused; their RTS can be forgotten.
    pub(crate) fn watermark(&self, now: u64) -> u64 {
        now.saturating_sub(self.config().max_txn_age_us).max(self.gc.horizon)
    }

    /// Signs all queued replies with one batched signature per `reply_batch` replies.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let hashes: Vec<Hash> = pending
            .iter()
            .map(|(_, p)| match p {
                PendingReply::Read { reply, .. } => reply.signing_hash(),
                PendingReply::Range(reply) => reply.signing_hash(),
                PendingReply::Vote { vote, .. } => vote.signing_hash(),
                PendingReply::St2(r) => r.signing_hash(),
                PendingReply::ElectFb(e) => e.signing_hash(),
            })
            .collect();
        let mut sigs = Vec::with_capacity(pending.len());
        match &self.signer {
            Some(signer) => {
                for chunk in hashes.chunks(self.auth.config().reply_batch) {
                    let batch = signer.sign_batch(chunk);
                    if let Some(first) = batch.first() {
                        // Our own votes come back inside certificates: no need to verify them.
                        self.auth.remember_own(signer.public(), first);
                    }
                    sigs.extend(batch.into_iter().map(Some));
                    self.stats.batches_signed += 1;
                }
            }
            None => sigs.resize(pending.len(), None),
        }
        self.stats.replies_signed += pending.len() as u64;
        let signer = self.id;
        for ((to, p), sig) in pending.into_iter().zip(sigs) {
            let msg = match p {
                PendingReply::Read { reply, committed } => {
                    Message::ReadReply { reply: ReplicaSigned { signer, body: reply, sig }, committed }
                }
                PendingReply::Vote { vote, cause } => {
                    let (conflict, blocker) = cause.into_parts();
                    Message::PrepareReply { vote: ReplicaSigned { signer, body: vote, sig }, conflict, blocker }
                }
                PendingReply::St2(r) => Message::DecideReply(ReplicaSigned { signer, body: r, sig }),
                PendingReply::Range(r) => Message::RangeReply(ReplicaSigned { signer, body: r, sig }),
                PendingReply::ElectFb(e) => Message::ElectFb(ReplicaSigned { signer, body: e, sig }),
            };
            match to {
                Dest::Client(peer) => self.outputs.push((peer, msg)),
                Dest::Replica(r) => self.replica_outputs.push((r, msg)),
            }
        }
    }

    /// Client connections whose session ended for a bad signature: the connection layer
    /// closes them (the client may open a new session).
    pub fn take_ended_sessions(&mut self) -> Vec<Peer> {
        std::mem::take(&mut self.ended_sessions)
    }

    /// Messages for clients, by the peer token they came from.
    pub fn take_outputs(&mut self) -> Vec<(Peer, Message)> {
        std::mem::take(&mut self.outputs)
    }

    /// Messages for other replicas (fallback election, Basil §5).
    pub fn take_replica_outputs(&mut self) -> Vec<(ReplicaId, Message)> {
        std::mem::take(&mut self.replica_outputs)
    }

    /// Where the replica records what it must never forget (see [`crate::ReplicaLog`]).
    pub fn set_log(&mut self, log: Box<dyn crate::log::ReplicaLog>) {
        self.log = log;
    }

    /// Makes the log durable up to now ([`crate::ReplicaLog::sync`]); the runtime calls it
    /// before sending what `take_outputs` and `take_replica_outputs` return.
    pub fn sync_log(&mut self) -> Result<(), String> {
        self.log.sync()
    }

    /// Sets the base of the exponential fallback view timeout (µs).
    pub fn set_view_timeout_base(&mut self, us: u64) {
        self.view_timeout_base_us = us.max(1);
    }

    // ---- READ (Basil §3, step 2) ----

    fn on_read(&mut self, now: u64, from: Peer, req: ClientSigned<ReadRequest>) -> Result<(), RejectReason> {
        if self.catch_up.active {
            return Err(RejectReason::CatchingUp);
        }
        self.auth.check_client_read(&req, self.sessions.get(&from).copied()).map_err(|e| e.0)?;
        let ReadRequest { key, ts } = req.body;
        if ts.client != req.client {
            return Err(RejectReason::ClientMismatch);
        }
        if ts.time > now.saturating_add(self.config().delta_us) {
            return Err(RejectReason::FutureTimestamp);
        }
        if self.config().shard_of(&key) != self.id.shard || key.len() > pistou_wire::MAX_KEY_BYTES {
            return Err(RejectReason::WrongShard);
        }
        self.refuse_below_watermark(now, ts)?;
        self.stats.reads += 1;
        if ts.time >= self.watermark(now) {
            let state = self.keys.entry(key.clone()).or_default();
            if state.rts.insert(ts) {
                self.rts_index.insert((ts, key.clone()));
            }
        }
        let state = self.keys.get(&key);
        let latest_committed = state.and_then(|s| s.committed.range(..(ts, TxnId([0; 32]))).next_back().copied());
        let latest_prepared = state.and_then(|s| s.prepared.range(..(ts, TxnId([0; 32]))).next_back().copied());
        let committed = latest_committed.and_then(|(_, writer)| {
            let rec = self.txns.get(&writer)?;
            let Status::Committed(cert) = &rec.status else { return None };
            Some(CommittedRead { writer: (*rec.meta).clone(), cert: (**cert).clone() })
        });
        // Only a prepared version fresher than the committed one is worth reporting.
        let prepared = latest_prepared.filter(|(pv, _)| latest_committed.is_none_or(|(cv, _)| pv > &cv)).and_then(
            |(version, txn)| {
                let value = self.txns.get(&txn)?.meta.write_of(&key)?.value.clone();
                Some(PreparedRead { version, txn, value })
            },
        );
        let reply = ReadReply { key, ts, prepared };
        self.pending.push((Dest::Client(from), PendingReply::Read { reply, committed }));
        Ok(())
    }

    /// RANGE-READ (Pesto §5.5 step 2): execute at ts on the local state and reply.
    fn on_range_read(&mut self, now: u64, from: Peer, req: ClientSigned<RangeRead>) -> Result<(), RejectReason> {
        if self.catch_up.active {
            return Err(RejectReason::CatchingUp);
        }
        self.auth.check_client_read(&req, self.sessions.get(&from).copied()).map_err(|e| e.0)?;
        if req.body.ts.client != req.client {
            return Err(RejectReason::ClientMismatch);
        }
        if req.body.ts.time > now.saturating_add(self.config().delta_us) {
            return Err(RejectReason::FutureTimestamp);
        }
        if req.body.snapshot.is_some() {
            return self.on_snapshot_read(now, from, req);
        }
        self.execute_range(from, &req);
        Ok(())
    }

    fn on_abort_reads(&mut self, from: Peer, req: ClientSigned<AbortReads>) -> Result<(), RejectReason> {
        self.auth.check_client_read(&req, self.sessions.get(&from).copied()).map_err(|e| e.0)?;
        if req.body.ts.client != req.client {
            return Err(RejectReason::ClientMismatch);
        }
        for key in &req.body.keys {
            self.remove_rts(key, req.body.ts);
        }
        let (client, ts) = (req.client, req.body.ts);
        self.abandon_range_reads(|_, c, t| c == client && t == ts);
        Ok(())
    }

    fn remove_rts(&mut self, key: &[u8], ts: Timestamp) {
        if let Some(state) = self.keys.get_mut(key) {
            if state.rts.remove(&ts) {
                self.rts_index.remove(&(ts, key.to_vec()));
            }
            if state.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    // ---- ST1: MVTSO-Check (Alg. 1) ----

    fn on_prepare(&mut self, now: u64, from: Peer, req: ClientSigned<Prepare>) -> Result<(), RejectReason> {
        if self.catch_up.active {
            return Err(RejectReason::CatchingUp);
        }
        self.auth.check_client(&req).map_err(|e| e.0)?;
        let meta = req.body.meta;
        let id = meta.id();
        if self.txns.contains_key(&id) {
            // A repeated ST1, or Recovery Prepare (RP) from a client finishing T: answer RPR
            // with what we have; never re-run the check.
            self.answer_rp(from, &id);
            return Ok(());
        }
        self.refuse_below_watermark(now, meta.ts)?;
        match meta.validate(self.config()) {
            Ok(()) => {}
            Err(pistou_wire::MetaError::ReadFromFuture) => return Err(RejectReason::Misbehavior),
            Err(_) => return Err(RejectReason::MalformedTxn),
        }
        if !meta.shards.contains(&self.id.shard) {
            return Err(RejectReason::WrongShard);
        }
        // The timestamp's client owns T (quota.rs counts by it); a correct client's is its own.
        if !self.auth.is_client(meta.ts.client) {
            return Err(RejectReason::UnknownClient);
        }
        if !self.room_for_undecided(meta.ts.client) {
            return Err(RejectReason::TooManyUndecided);
        }
        self.note_undecided(meta.ts.client, id);
        let meta = Arc::new(meta);
        let mut rec = TxnRecord::new(meta.clone());
        rec.interested.insert(from);
        let sql = self.sql.decode(self.config(), &meta).map(|t| t.map(Arc::new));
        if let Ok(Some(txn)) = &sql {
            rec.sql = Some(txn.clone());
        }
        self.txns.insert(id, rec);
        self.gc.track(meta.ts, id);
        self.inquiries.track(now, id);
        let checked = match &sql {
            Err(e) => {
                tracing::debug!(txn = ?id, "abort vote: {e}");
                Err(AbortCause::Plain)
            }
            Ok(_) => self.mvtso_check(now, &id, &meta).and_then(|()| self.pesto_check(&id, &meta)),
        };
        match checked {
            Err(cause) => self.cast_vote(id, Vote::Abort, cause),
            Ok(dynamic_deps) => {
                self.add_prepared(&id, &meta);
                let mut pending: Vec<TxnId> = meta
                    .deps
                    .iter()
                    .filter(|d| self.config().shard_of(&d.key) == self.id.shard)
                    .map(|d| d.txn)
                    .chain(dynamic_deps)
                    .filter(|d| {
                        matches!(self.txns.get(d).map(|r| &r.status), Some(Status::Prepared | Status::Unprepared))
                    })
                    .collect();
                pending.sort();
                pending.dedup();
                if pending.is_empty() {
                    self.cast_vote(id, Vote::Commit, AbortCause::Plain);
                } else {
                    // Alg. 1 line 15: wait for all pending dependencies, and say so: the
                    // client did not declare the dynamic ones, and if their writer stalled,
                    // it must finish them (Basil §5) or wait for this vote forever.
                    let on: Vec<TxnId> = pending.iter().take(pistou_wire::MAX_WAITING_HINT).copied().collect();
                    if let Some(rec) = self.txns.get_mut(&id) {
                        rec.pending_deps = pending.len();
                        rec.waiting_on = on.clone();
                        for peer in &rec.interested {
                            self.outputs.push((*peer, Message::Waiting { txn: id, on: on.clone() }));
                        }
                    }
                    for d in pending {
                        self.dependents.entry(d).or_default().push(id);
                    }
                }
            }
        }
        Ok(())
    }

    /// RPR (Basil §5): the decision certificate if T is decided; otherwise the logged ST2
    /// decision (with our current view) and the ST1 vote, whichever exist.
    fn answer_rp(&mut self, from: Peer, id: &TxnId) {
        if self.answer_if_decided(from, id) {
            return;
        }
        let Some(rec) = self.txns.get_mut(id) else { return };
        rec.interested.insert(from);
        if let Some((decision, view_decision)) = rec.st2 {
            let reply = St2Reply { txn: *id, decision, view_decision, view_current: rec.view_current };
            self.pending.push((Dest::Client(from), PendingReply::St2(reply)));
        }
        if let Some(v) = &rec.vote {
            let reply = PendingReply::Vote { vote: St1Vote { txn: *id, vote: v.vote }, cause: v.cause.clone() };
            self.pending.push((Dest::Client(from), reply));
        } else if !rec.waiting_on.is_empty() {
            self.outputs.push((from, Message::Waiting { txn: *id, on: rec.waiting_on.clone() }));
        }
    }

    /// If T is decided here, answers `from` with the certificate and returns true: whatever
    /// a client asks about a decided transaction (RP, ST2, InvokeFB), the certificate is the
    /// answer that lets it stop.
    pub(crate) fn answer_if_decided(&mut self, from: Peer, id: &TxnId) -> bool {
        let Some(rec) = self.txns.get(id) else { return false };
        let Some(cert) = rec.cert() else { return false };
        let wb = Writeback { meta: (*rec.meta).clone(), cert };
        self.outputs.push((from, Message::Decided(wb)));
        true
    }

    /// A client asks for a transaction's ST1 to finish it; the metadata proves itself.
    fn on_fetch(&mut self, from: Peer, txn: TxnId) {
        if let Some(rec) = self.txns.get(&txn) {
            self.outputs.push((from, Message::TxnInfo { meta: (*rec.meta).clone() }));
        }
    }

    /// Lines 1–13 of Alg. 1. `Err(cause)` means Vote-Abort, naming the conflicting
    /// transaction when there is one.
    fn mvtso_check(&self, now: u64, id: &TxnId, meta: &TxnMeta) -> Result<(), AbortCause> {
        let ts = meta.ts;
        // Line 1: ts within the replica's time bound; and not below the GC watermark.
        if ts.time > now.saturating_add(self.config().delta_us) || ts.time < self.watermark(now) {
            return Err(AbortCause::Plain);
        }
        // A second transaction claiming an already used timestamp.
        if self.ts_owner.get(&ts).is_some_and(|owner| owner != id) {
            return Err(AbortCause::Plain);
        }
        // Line 3: dependencies valid: prepared or committed here, and really the writer of
        // the version read; any aborted dependency means abort.
        for d in meta.deps.iter().filter(|d| self.config().shard_of(&d.key) == self.id.shard) {
            let Some(dep) = self.txns.get(&d.txn) else { return Err(AbortCause::Plain) };
            let produced = dep.meta.ts == d.version && dep.meta.write_of(&d.key).is_some();
            let alive = matches!(dep.status, Status::Prepared | Status::Committed(_));
            if !produced || !alive {
                tracing::debug!(txn = ?id, "abort vote: dependency not produced or not alive {produced} {alive}");
                return Err(AbortCause::Plain);
            }
        }
        // Line 5–7: reads did not miss a committed or prepared write in (version, ts).
        for r in &meta.read_set {
            if self.config().shard_of(&r.key) != self.id.shard {
                continue;
            }
            let Some(state) = self.keys.get(&r.key) else { continue };
            let lo = (r.version, TxnId([0xff; 32]));
            let hi = (ts, TxnId([0; 32]));
            if lo >= hi {
                continue;
            }
            if let Some((_, t2)) = state.committed.range(lo..hi).next() {
                tracing::debug!(txn = ?id, "abort vote: read missed a committed write");
                return Err(self.conflict_with(t2));
            }
            if let Some((_, t2)) = state.prepared.range(lo..hi).next() {
                tracing::debug!(txn = ?id, "abort vote: read missed a prepared write");
                return Err(self.conflict_with(t2));
            }
        }
        // Lines 8–13: writes do not invalidate reads of prepared/committed transactions
        // ordered after T, nor reads of ongoing ones (RTS).
        for w in &meta.write_set {
            if self.config().shard_of(&w.key) != self.id.shard {
                continue;
            }
            let Some(state) = self.keys.get(&w.key) else { continue };
            let after = (ts, TxnId([0xff; 32]));
            for ((_, reader), version) in state.readers.range(after..) {
                if *version < ts {
                    tracing::debug!(txn = ?id, "abort vote: write invalidates a later reader");
                    return Err(self.conflict_with(reader));
                }
            }
            if state.rts.range((std::ops::Bound::Excluded(ts), std::ops::Bound::Unbounded)).next().is_some() {
                tracing::debug!(txn = ?id, "abort vote: write below an RTS");
                return Err(AbortCause::Plain);
            }
        }
        Ok(())
    }

    /// Pesto's additions to Alg. 1 (monotonicity, predicate completeness, later readers'
    /// predicates); on success T's rows are installed as prepared versions and the
    /// prepared writers T must now wait for are returned (line 15).
    fn pesto_check(&mut self, id: &TxnId, meta: &TxnMeta) -> Result<Vec<TxnId>, AbortCause> {
        let Some(txn) = self.txns.get(id).and_then(|r| r.sql.clone()) else { return Ok(Vec::new()) };
        match self.sql.semantic_check(id, meta, &txn, &self.txns) {
            Ok(pass) => match self.sql.prepare(*id, meta.ts, &txn) {
                Ok(()) => Ok(pass.dynamic_deps),
                Err(e) => {
                    tracing::debug!(txn = ?id, "abort vote: rows rejected: {e}");
                    Err(AbortCause::Plain)
                }
            },
            Err(CcAbort::Conflict(t)) => {
                tracing::debug!(txn = ?id, "abort vote: predicate conflict");
                Err(self.conflict_with(&t))
            }
            Err(reason) => {
                tracing::debug!(txn = ?id, "abort vote: {reason:?}");
                Err(AbortCause::Plain)
            }
        }
    }

    /// The cause to report for an abort vote due to `txn`: its proof if it committed, its
    /// name if it is prepared here and undecided.
    fn conflict_with(&self, txn: &TxnId) -> AbortCause {
        let Some(rec) = self.txns.get(txn) else { return AbortCause::Plain };
        match &rec.status {
            Status::Committed(cert) => {
                AbortCause::Committed(Box::new(ConflictProof { meta: (*rec.meta).clone(), cert: (**cert).clone() }))
            }
            Status::Prepared => AbortCause::Prepared(*txn),
            Status::Unprepared | Status::Aborted(_) => AbortCause::Plain,
        }
    }

    /// Line 14: T joins the Prepared set; its writes become visible to readers.
    pub(crate) fn add_prepared(&mut self, id: &TxnId, meta: &TxnMeta) {
        let shard = self.id.shard;
        let cfg = self.auth.config();
        let mine = |k: &[u8]| cfg.shard_of(k) == shard;
        let writes: Vec<Key> = meta.write_set.iter().filter(|w| mine(&w.key)).map(|w| w.key.clone()).collect();
        let reads: Vec<(Key, Timestamp)> =
            meta.read_set.iter().filter(|r| mine(&r.key)).map(|r| (r.key.clone(), r.version)).collect();
        for k in writes {
            self.keys.entry(k).or_default().prepared.insert((meta.ts, *id));
        }
        for (k, v) in reads {
            self.keys.entry(k.clone()).or_default().readers.insert((meta.ts, *id), v);
            // Its read is now guarded by the readers index; the RTS is no longer needed.
            self.remove_rts(&k, meta.ts);
        }
        self.ts_owner.insert(meta.ts, *id);
        if let Some(rec) = self.txns.get_mut(id) {
            rec.status = Status::Prepared;
        }
    }

    /// Undo `add_prepared` (the transaction aborted, or lost a dependency).
    fn remove_prepared(&mut self, id: &TxnId, meta: &TxnMeta) {
        if let Some(txn) = self.txns.get(id).and_then(|r| r.sql.clone()) {
            self.sql.unprepare(*id, meta.ts, &txn);
        }
        for w in &meta.write_set {
            if let Some(s) = self.keys.get_mut(&w.key) {
                s.prepared.remove(&(meta.ts, *id));
                if s.is_empty() {
                    self.keys.remove(&w.key);
                }
            }
        }
        for r in &meta.read_set {
            if let Some(s) = self.keys.get_mut(&r.key) {
                s.readers.remove(&(meta.ts, *id));
                if s.is_empty() {
                    self.keys.remove(&r.key);
                }
            }
        }
        if self.ts_owner.get(&meta.ts) == Some(id) {
            self.ts_owner.remove(&meta.ts);
        }
    }

    fn cast_vote(&mut self, id: TxnId, vote: Vote, cause: AbortCause) {
        let Some(rec) = self.txns.get_mut(&id) else { return };
        if rec.vote.is_some() {
            return;
        }
        match vote {
            Vote::Commit => self.stats.votes_commit += 1,
            Vote::Abort => self.stats.votes_abort += 1,
        }
        rec.vote = Some(VoteRecord { vote, cause: cause.clone() });
        rec.waiting_on = Vec::new();
        self.log.append(LogEntry::Voted { meta: rec.meta.clone(), vote });
        for peer in rec.interested.iter().copied().collect::<Vec<_>>() {
            let reply = PendingReply::Vote { vote: St1Vote { txn: id, vote }, cause: cause.clone() };
            self.pending.push((Dest::Client(peer), reply));
        }
    }

    /// A dependency was decided: lines 15–19 of Alg. 1 for every transaction waiting on it.
    fn on_dependency_decided(&mut self, dep: TxnId, decision: Decision) {
        let Some(waiters) = self.dependents.remove(&dep) else { return };
        for w in waiters {
            let Some(rec) = self.txns.get_mut(&w) else { continue };
            if rec.vote.is_some() || rec.status != Status::Prepared {
                continue;
            }
            match decision {
                Decision::Abort => {
                    let meta = rec.meta.clone();
                    rec.status = Status::Unprepared;
                    self.remove_prepared(&w, &meta);
                    self.cast_vote(w, Vote::Abort, AbortCause::Plain);
                }
                Decision::Commit => {
                    rec.pending_deps = rec.pending_deps.saturating_sub(1);
                    if rec.pending_deps == 0 {
                        self.cast_vote(w, Vote::Commit, AbortCause::Plain);
                    }
                }
            }
        }
    }

    // ---- ST2 (Basil §4.2 stage 2): S_log logs the decision ----

    fn on_st2(&mut self, from: Peer, req: ClientSigned<St2>) -> Result<(), RejectReason> {
        self.auth.check_client(&req).map_err(|e| e.0)?;
        let st2 = req.body;
        let id = st2.meta.id();
        if self.answer_if_decided(from, &id) {
            return Ok(());
        }
        if let Some(rec) = self.txns.get_mut(&id) {
            if let Some((decision, view_decision)) = rec.st2 {
                // Already logged: the first justified decision stands.
                rec.interested.insert(from);
                let reply = St2Reply { txn: id, decision, view_decision, view_current: rec.view_current };
                self.pending.push((Dest::Client(from), PendingReply::St2(reply)));
                return Ok(());
            }
        }
        st2.meta.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
        if st2.meta.log_shard(&id) != Some(self.id.shard) {
            return Err(RejectReason::WrongShard);
        }
        if st2.view != 0 {
            // Views above 0 only come from the fallback protocol (issue 3).
            return Err(RejectReason::Unexpected);
        }
        self.log_st2(from, &id, &st2)
    }

    /// Checks that a client's ST2 is justified by its vote tallies and logs its decision in
    /// view 0 (Basil §4.2 stage 2). Also used for the proposal carried by InvokeFB.
    pub(crate) fn log_st2(&mut self, from: Peer, id: &TxnId, st2: &St2) -> Result<(), RejectReason> {
        self.refuse_if_collected(id, st2.meta.ts)?;
        self.auth.check_st2_justified(id, st2).map_err(|e| e.0)?;
        self.gc.track(st2.meta.ts, *id);
        let rec = self.txns.entry(*id).or_insert_with(|| TxnRecord::new(Arc::new(st2.meta.clone())));
        rec.interested.insert(from);
        if rec.st2.is_none() {
            rec.st2 = Some((st2.decision, 0));
            self.log.append(LogEntry::Decision { txn: *id, meta: rec.meta.clone(), decision: st2.decision, view: 0 });
        }
        if let Some((decision, view_decision)) = rec.st2 {
            let reply = St2Reply { txn: *id, decision, view_decision, view_current: rec.view_current };
            self.pending.push((Dest::Client(from), PendingReply::St2(reply)));
        }
        Ok(())
    }

    // ---- Writeback (Basil §4.3) ----

    fn on_writeback(&mut self, from: Peer, wb: Writeback) -> Result<(), RejectReason> {
        let id = wb.meta.id();
        self.apply_decision(wb)?;
        self.snapshot_progress(&id);
        self.outputs.push((from, Message::WritebackAck { txn: id }));
        Ok(())
    }

    /// Applies a certified decision (a writeback or a SUPPLY) unless already applied.
    pub(crate) fn apply_decision(&mut self, wb: Writeback) -> Result<(), RejectReason> {
        let id = wb.meta.id();
        let decided = self.txns.get(&id).map(|r| matches!(r.status, Status::Committed(_) | Status::Aborted(_)));
        if decided != Some(true) {
            self.refuse_if_collected(&id, wb.meta.ts)?;
            wb.meta.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
            if !wb.meta.shards.contains(&self.id.shard) {
                return Err(RejectReason::WrongShard);
            }
            match &wb.cert {
                DecisionCert::Commit(c) => self.auth.check_commit_cert(&wb.meta, c),
                DecisionCert::Abort(a) => self.auth.check_abort_cert(&wb.meta, a),
            }
            .map_err(|_| RejectReason::BadCertificate)?;
            match wb.cert {
                DecisionCert::Commit(cert) => self.apply_commit(id, wb.meta, cert),
                DecisionCert::Abort(cert) => self.apply_abort(id, wb.meta, cert),
            }
        }
        Ok(())
    }

    pub(crate) fn apply_commit(&mut self, id: TxnId, meta: TxnMeta, cert: CommitCert) {
        let rec = self.txns.entry(id).or_insert_with(|| TxnRecord::new(Arc::new(meta)));
        let meta = rec.meta.clone();
        let was_prepared = rec.status == Status::Prepared;
        let cert = Arc::new(cert);
        rec.status = Status::Committed(cert.clone());
        self.committed_order.insert((meta.ts, id));
        self.log.append(LogEntry::Committed { meta: rec.meta.clone(), cert });
        let shard = self.id.shard;
        for w in &meta.write_set {
            if self.auth.config().shard_of(&w.key) != shard {
                continue;
            }
            let s = self.keys.entry(w.key.clone()).or_default();
            if was_prepared {
                s.prepared.remove(&(meta.ts, id));
            }
            s.committed.insert((meta.ts, id));
        }
        for r in &meta.read_set {
            if self.auth.config().shard_of(&r.key) != shard {
                continue;
            }
            self.keys.entry(r.key.clone()).or_default().readers.insert((meta.ts, id), r.version);
            self.remove_rts(&r.key, meta.ts);
        }
        self.ts_owner.insert(meta.ts, id);
        self.apply_sql_commit(id, &meta);
        self.stats.commits_applied += 1;
        self.gc.track(meta.ts, id);
        self.on_dependency_decided(id, Decision::Commit);
    }

    /// Pesto: T's rows become committed versions (installed now if T never prepared here)
    /// and a schema change takes effect. T may have been planned against a catalog version
    /// whose schema change this replica has not applied yet (writebacks arrive in any
    /// order): T then waits for it, and so on down the chain of schema changes.
    fn apply_sql_commit(&mut self, first: TxnId, meta: &Arc<TxnMeta>) {
        let mut ready = vec![(first, meta.clone())];
        while let Some((id, meta)) = ready.pop() {
            let txn = match self.txns.get(&id).and_then(|r| r.sql.clone()) {
                Some(t) => t,
                None => match self.sql.decode(self.auth.config(), &meta) {
                    Ok(Some(t)) => {
                        let t = Arc::new(t);
                        if let Some(rec) = self.txns.get_mut(&id) {
                            rec.sql = Some(t.clone());
                        }
                        t
                    }
                    Ok(None) => continue,
                    Err(SqlTxnError::UnknownCatalog) => {
                        let version =
                            meta.read_of(&catalog_key(self.id.shard)).map_or(Timestamp::GENESIS, |r| r.version);
                        self.awaiting_catalog.push(version, id, meta);
                        continue;
                    }
                    Err(e) => {
                        // A commit certificate over content no correct replica could decode:
                        // nothing to apply, and nothing a retry would change.
                        tracing::error!(txn = ?id, "committed SQL transaction not applicable here: {e}");
                        self.stats.unapplied_sql_commits += 1;
                        continue;
                    }
                },
            };
            let shadowed = self.sql.store.refuses_late_commit(meta.ts).then(|| self.shadowed_rows(id, &meta));
            if let Err(e) = self.sql.commit(id, meta.ts, &txn, shadowed.as_ref()) {
                tracing::error!(txn = ?id, "committed SQL transaction not applicable here: {e}");
                self.stats.unapplied_sql_commits += 1;
                continue;
            }
            // Applied: the row store holds the rows and the reader index shares the
            // predicates, so the record drops its decoded copy (most of what a committed
            // transaction kept in memory, docs/benchmarks.md).
            if let Some(rec) = self.txns.get_mut(&id) {
                rec.sql = None;
            }
            if txn.catalog_change.is_some() {
                ready.extend(self.awaiting_catalog.take(meta.ts));
            }
            if id != first {
                // Applied late: snapshot queries parked for it may run now (the caller
                // does this for `first`).
                self.snapshot_progress(&id);
            }
        }
    }

    /// The (table, primary key) of T's row writes on this shard whose key has a committed
    /// version newer than T's here. Basil's per-key versions keep every key's newest one,
    /// deletions included (gc.rs), so this is exact even where the row store has collected
    /// the deletion that overtakes T.
    fn shadowed_rows(&self, id: TxnId, meta: &TxnMeta) -> BTreeSet<(String, Vec<u8>)> {
        let version = (meta.ts, id);
        let mut out = BTreeSet::new();
        for w in &meta.write_set {
            if let KeyKind::Row { table, pk, .. } = key_kind(&w.key) {
                if self.keys.get(&w.key).and_then(|s| s.committed.last()).is_some_and(|newest| *newest > version) {
                    out.insert((table.to_string(), pk.to_vec()));
                }
            }
        }
        out
    }

    /// Whether T's SQL content still waits for its catalog here (not applied yet).
    pub(crate) fn awaits_catalog(&self, id: &TxnId) -> bool {
        self.awaiting_catalog.contains(id)
    }

    pub(crate) fn apply_abort(&mut self, id: TxnId, meta: TxnMeta, cert: AbortCert) {
        let rec = self.txns.entry(id).or_insert_with(|| TxnRecord::new(Arc::new(meta)));
        let meta = rec.meta.clone();
        let was_prepared = rec.status == Status::Prepared;
        let cert = Arc::new(cert);
        rec.status = Status::Aborted(cert.clone());
        self.log.append(LogEntry::Aborted { txn: id, meta: meta.clone(), cert });
        if was_prepared {
            self.remove_prepared(&id, &meta);
        }
        // Its rows and predicates are withdrawn: the decoded copy has no further use.
        if let Some(rec) = self.txns.get_mut(&id) {
            rec.sql = None;
        }
        for r in &meta.read_set {
            self.remove_rts(&r.key, meta.ts);
        }
        self.stats.aborts_applied += 1;
        self.gc.track(meta.ts, id);
        self.on_dependency_decided(id, Decision::Abort);
    }
}

/// The (client, signed hash, signature) of a client request, for batch verification. The
/// match lists every message so that a new client-signed one cannot be missed.
fn client_signature(m: &Message) -> Option<(pistou_core::ClientId, Hash, pistou_crypto::Signature)> {
    fn of<T: Signable>(r: &ClientSigned<T>) -> Option<(pistou_core::ClientId, Hash, pistou_crypto::Signature)> {
        r.sig.map(|s| (r.client, r.body.signing_hash(), s))
    }
    match m {
        Message::Read(r) => of(r),
        Message::Prepare(r) => of(r),
        Message::Decide(r) => of(r),
        Message::AbortReads(r) => of(r),
        Message::InvokeFb(r) => of(r),
        Message::RangeRead(r) => of(&**r),
        Message::ReadReply { .. }
        | Message::PrepareReply { .. }
        | Message::DecideReply(_)
        | Message::Writeback(_)
        | Message::WritebackAck { .. }
        | Message::HelloClient { .. }
        | Message::FetchTxn { .. }
        | Message::TxnInfo { .. }
        | Message::Decided(_)
        | Message::ElectFb(_)
        | Message::DecFb(_)
        | Message::HelloReplica { .. }
        | Message::RangeReply(_)
        | Message::Sync { .. }
        | Message::Waiting { .. }
        | Message::Supply(_)
        | Message::CatchUp { .. }
        | Message::CatchUpPage { .. }
        | Message::CatchUpFetch { .. }
        | Message::CatchUpCommits { .. }
        // Verified by the connection layer, which handles the session handshake.
        | Message::SessionOpen(_)
        | Message::PeerOpen { .. }
        | Message::SessionAccept { .. } => None,
    }
}
