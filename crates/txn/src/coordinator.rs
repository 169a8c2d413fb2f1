//! The client side of Basil (§3–4) as a sans-IO state machine: one `Coordinator` per client
//! identity, running any number of transactions.
//!
//! Drive it with `begin/get/put/commit/abort`, feed replies with `handle(now, msg)` and
//! time with `tick(now)`; read what to send with `take_outputs()` and what happened with
//! `poll_event()`.

use crate::auth::{sign_client, Authenticator};
use crate::rejects::{RejectReason, Rejections};
use crate::tally::{ShardOutcome, ShardTally};
use pistou_core::{ClientId, ClusterConfig, Key, ReplicaId, ShardId, Timestamp, TxnId, Value};
use pistou_crypto::SecretKey;
use pistou_wire::{
    AbortCert, AbortReads, ClientSigned, CommitCert, CommittedRead, ConflictProof, Decision, DecisionCert, Dep, Message,
    Prepare, PreparedRead, ReadEntry, ReadReply, ReadRequest, ReplicaSigned, St1Vote, St2, St2Reply, TxnMeta, Vote,
    WriteEntry, Writeback, MAX_KEY_BYTES, MAX_TXN_OPS, MAX_VALUE_BYTES,
};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// How many verified C-CERT transaction ids a client remembers, so that a hot version is
/// not re-verified on every read.
const KNOWN_COMMITTED_CAPACITY: usize = 1 << 14;

#[derive(Clone, Copy, Debug)]
pub struct CoordinatorTimeouts {
    /// How long to wait for unanimous votes before taking a slow-path quorum.
    pub fast_path_us: u64,
    /// Resend requests that got no (sufficient) answer after this long.
    pub retransmit_us: u64,
    /// Writebacks are resent to replicas that did not acknowledge them, this many times.
    pub writeback_retries: u32,
}

impl Default for CoordinatorTimeouts {
    fn default() -> Self {
        CoordinatorTimeouts { fast_path_us: 20_000, retransmit_us: 500_000, writeback_retries: 5 }
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoordinatorEvent {
    ReadDone { txn: TxnHandle, key: Key, value: Option<Value> },
    /// `fast` is true when the decision needed no ST2 round.
    Decided { txn: TxnHandle, id: TxnId, decision: Decision, fast: bool },
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
}

/// A read in flight: replies by replica index.
struct ReadOp {
    shard: ShardId,
    sent_to: BTreeSet<u32>,
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

struct Voting {
    meta: Arc<TxnMeta>,
    id: TxnId,
    tallies: BTreeMap<ShardId, ShardTally>,
    /// Votes counted but whose signatures are not checked yet: they are verified together,
    /// with batch verification, once the tally would decide something.
    unverified: BTreeSet<ReplicaId>,
    started: u64,
    last_send: u64,
    prepare: ClientSigned<Prepare>,
}

struct Logging {
    meta: Arc<TxnMeta>,
    id: TxnId,
    log_shard: ShardId,
    st2: ClientSigned<St2>,
    replies: BTreeMap<u32, ReplicaSigned<St2Reply>>,
    last_send: u64,
}

enum Phase {
    Executing,
    Voting(Voting),
    Logging(Logging),
}

struct TxnState {
    ts: Timestamp,
    reads: BTreeMap<Key, (Timestamp, Option<Value>)>,
    deps: BTreeSet<Dep>,
    writes: BTreeMap<Key, Option<Value>>,
    in_flight: BTreeMap<Key, ReadOp>,
    phase: Phase,
}

struct WritebackState {
    msg: Writeback,
    unacked: BTreeSet<ReplicaId>,
    tries: u32,
    last_send: u64,
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
    by_id: HashMap<TxnId, TxnHandle>,
    writebacks: BTreeMap<TxnId, WritebackState>,
    known_committed: HashSet<TxnId>,
    known_order: VecDeque<TxnId>,
    outputs: Vec<(ReplicaId, Message)>,
    events: VecDeque<CoordinatorEvent>,
    rejects: Rejections,
}

impl Coordinator {
    /// `key` is the client's signing key; `None` is allowed only with `crypto = false`.
    pub fn new(config: Arc<ClusterConfig>, id: ClientId, key: Option<SecretKey>) -> Result<Coordinator, String> {
        let registered = config.client_keys().get(&id).copied();
        let Some(pk) = registered else { return Err(format!("client {} is not in the configuration", id.0)) };
        match (&key, config.crypto) {
            (Some(k), _) if k.public() != pk => return Err(format!("key of client {} does not match the configuration", id.0)),
            (None, true) => return Err("crypto is on: a client needs its signing key".into()),
            _ => {}
        }
        let key = if config.crypto { key } else { None };
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
            by_id: HashMap::new(),
            writebacks: BTreeMap::new(),
            known_committed: HashSet::new(),
            known_order: VecDeque::new(),
            outputs: Vec::new(),
            events: VecDeque::new(),
            rejects: Rejections::default(),
        })
    }

    pub fn set_timeouts(&mut self, t: CoordinatorTimeouts) {
        self.timeouts = t;
    }
    pub fn client_id(&self) -> ClientId {
        self.id
    }
    pub fn rejections(&self) -> &Rejections {
        &self.rejects
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
    /// Transactions still executing or committing, plus writebacks not yet acknowledged.
    pub fn busy(&self) -> bool {
        !self.txns.is_empty() || !self.writebacks.is_empty()
    }
    pub fn timestamp_of(&self, txn: TxnHandle) -> Option<Timestamp> {
        self.txns.get(&txn).map(|t| t.ts)
    }

    /// Begin(): ts = (time, client id, seq), strictly increasing for this client.
    pub fn begin(&mut self, now: u64) -> TxnHandle {
        self.last_time = self.last_time.max(now);
        self.seq += 1;
        let ts = Timestamp { time: self.last_time, client: self.id, seq: self.seq };
        let h = TxnHandle(self.next_handle);
        self.next_handle += 1;
        self.txns.insert(
            h,
            TxnState {
                ts,
                reads: BTreeMap::new(),
                deps: BTreeSet::new(),
                writes: BTreeMap::new(),
                in_flight: BTreeMap::new(),
                phase: Phase::Executing,
            },
        );
        self.by_ts.insert(ts, h);
        h
    }

    fn executing(&mut self, h: TxnHandle) -> Result<&mut TxnState, TxnError> {
        let t = self.txns.get_mut(&h).ok_or(TxnError::UnknownTxn)?;
        match t.phase {
            Phase::Executing => Ok(t),
            _ => Err(TxnError::NotActive),
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
        let shard = self.config().shard_of(key);
        let q = self.config().quorums();
        // Spread load: start at a replica chosen from the client id and sequence number.
        let start = (self.id.0.wrapping_add(self.seq)) as usize % q.n();
        let targets: BTreeSet<u32> = (0..q.read_fanout()).map(|i| ((start + i) % q.n()) as u32).collect();
        let req = sign_client(self.id, self.key.as_ref(), ReadRequest { key: key.to_vec(), ts });
        for &i in &targets {
            self.outputs.push((ReplicaId { shard, index: i }, Message::Read(req.clone())));
        }
        let t = self.executing(h)?;
        t.in_flight.insert(key.to_vec(), ReadOp { shard, sent_to: targets, sent_at: now, replies: BTreeMap::new() });
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
        let mut by_shard: BTreeMap<ShardId, Vec<Key>> = BTreeMap::new();
        for k in t.reads.keys().chain(t.in_flight.keys()) {
            by_shard.entry(self.config().shard_of(k)).or_default().push(k.clone());
        }
        for (shard, keys) in by_shard {
            let req = sign_client(self.id, self.key.as_ref(), AbortReads { ts: t.ts, keys });
            let replicas: Vec<ReplicaId> = self.config().replicas_of(shard).collect();
            for r in replicas {
                self.outputs.push((r, Message::AbortReads(req.clone())));
            }
        }
        Ok(())
    }

    /// Commit(): the Prepare phase. Waits for in-flight reads to finish first.
    pub fn commit(&mut self, now: u64, h: TxnHandle) -> Result<(), TxnError> {
        let t = self.executing(h)?;
        if !t.in_flight.is_empty() {
            return Err(TxnError::NotActive);
        }
        let meta = TxnMeta {
            ts: t.ts,
            read_set: t.reads.iter().map(|(k, (v, _))| ReadEntry { key: k.clone(), version: *v }).collect(),
            write_set: t.writes.iter().map(|(k, v)| WriteEntry { key: k.clone(), value: v.clone() }).collect(),
            deps: t.deps.iter().cloned().collect(),
            shards: Vec::new(),
        };
        if meta.read_set.is_empty() && meta.write_set.is_empty() {
            // Nothing read or written: trivially serializable, nothing to tell anyone.
            self.txns.remove(&h);
            self.by_ts.remove(&meta.ts);
            let id = meta.id();
            self.events.push_back(CoordinatorEvent::Decided { txn: h, id, decision: Decision::Commit, fast: true });
            return Ok(());
        }
        let mut meta = meta;
        let mut shards: Vec<ShardId> = meta
            .read_set
            .iter()
            .map(|r| &r.key)
            .chain(meta.write_set.iter().map(|w| &w.key))
            .map(|k| self.config().shard_of(k))
            .collect();
        shards.sort();
        shards.dedup();
        meta.shards = shards;
        let id = meta.id();
        let q = self.config().quorums();
        let tallies = meta.shards.iter().map(|s| (*s, ShardTally::new(*s, q))).collect();
        let prepare = sign_client(self.id, self.key.as_ref(), Prepare { meta: meta.clone() });
        let voting = Voting { meta: Arc::new(meta), id, tallies, unverified: BTreeSet::new(), started: now, last_send: now, prepare };
        self.outputs.extend(prepare_messages(self.auth.config(), &voting));
        self.by_id.insert(id, h);
        if let Some(t) = self.txns.get_mut(&h) {
            t.phase = Phase::Voting(voting);
        }
        Ok(())
    }


    /// A message from replica `from` (the driver knows which connection delivered it;
    /// signed content is attributed by its signature, not by `from`).
    pub fn handle(&mut self, now: u64, from: ReplicaId, msg: Message) {
        let result = match msg {
            Message::ReadReply { reply, committed } => self.on_read_reply(reply, committed),
            Message::PrepareReply { vote, conflict } => self.on_vote(now, vote, conflict),
            Message::DecideReply(reply) => self.on_st2_reply(reply),
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

    // ---- reads (Basil §3, step 3) ----

    fn on_read_reply(&mut self, reply: ReplicaSigned<ReadReply>, committed: Option<CommittedRead>) -> Result<(), RejectReason> {
        let Some(&h) = self.by_ts.get(&reply.body.ts) else { return Ok(()) }; // late reply
        let key = reply.body.key.clone();
        let expected_shard = match self.txns.get(&h).and_then(|t| t.in_flight.get(&key)) {
            Some(op) => op.shard,
            None => return Ok(()), // read already complete
        };
        if reply.signer.shard != expected_shard || !self.auth.is_member(reply.signer) {
            return Err(RejectReason::NotMember);
        }
        let ts = reply.body.ts;
        let committed = match committed {
            Some(c) => match self.check_committed_read(&key, ts, c) {
                Ok(v) => Some(v),
                Err(r) => {
                    // A bad committed part is the replica's fault; its reply still counts
                    // towards f+1, without that version.
                    self.rejects.record(r);
                    None
                }
            },
            None => None,
        };
        let prepared = reply.body.prepared.clone().filter(|p| p.version < ts);
        let f1 = self.config().quorums().read_replies();
        let vouchers = self.config().quorums().prepared_vouchers();
        let Some(t) = self.txns.get_mut(&h) else { return Ok(()) };
        let Some(op) = t.in_flight.get_mut(&key) else { return Ok(()) };
        let index = reply.signer.index;
        op.replies.entry(index).or_insert(ReadCandidate { unverified: Some(reply), committed, prepared });
        if op.replies.len() < f1 {
            return Ok(());
        }
        let pending: Vec<(u32, ReplicaSigned<ReadReply>)> =
            op.replies.iter_mut().filter_map(|(i, c)| c.unverified.take().map(|r| (*i, r))).collect();
        let signed: Vec<ReplicaSigned<ReadReply>> = pending.iter().map(|(_, r)| r.clone()).collect();
        for ((i, _), result) in pending.iter().zip(self.auth.check_replicas_each(&signed)) {
            if let Err(e) = result {
                op.replies.remove(i);
                self.rejects.record(e.0);
            }
        }
        if op.replies.len() < f1 {
            return Ok(());
        }
        // The highest valid version: committed with a C-CERT, or prepared by f+1.
        let best_committed = op.replies.values().filter_map(|c| c.committed.clone()).max_by_key(|(v, _)| *v);
        // Identical (version, writer, value) triples from distinct replicas vouch together.
        let mut prepared_counts: BTreeMap<(Timestamp, TxnId, Option<Value>), usize> = BTreeMap::new();
        for p in op.replies.values().filter_map(|c| c.prepared.as_ref()) {
            *prepared_counts.entry((p.version, p.txn, p.value.clone())).or_default() += 1;
        }
        let best_prepared = prepared_counts.into_iter().filter(|(_, n)| *n >= vouchers).map(|(k, _)| k).next_back();
        let (version, value, dep) = match (best_committed, best_prepared) {
            (Some((cv, _)), Some((pv, ptx, pval))) if pv > cv => (pv, pval, Some(ptx)),
            (Some((cv, cval)), _) => (cv, cval, None),
            (None, Some((pv, ptx, pval))) => (pv, pval, Some(ptx)),
            (None, None) => (Timestamp::GENESIS, None, None),
        };
        t.in_flight.remove(&key);
        if let Some(txn) = dep {
            t.deps.insert(Dep { txn, key: key.clone(), version });
        }
        t.reads.insert(key.clone(), (version, value.clone()));
        self.events.push_back(CoordinatorEvent::ReadDone { txn: h, key, value });
        Ok(())
    }

    /// A committed version is valid with a valid C-CERT for a writer that wrote this key
    /// below our timestamp; the value comes from the certified writer's write set.
    fn check_committed_read(&mut self, key: &[u8], ts: Timestamp, c: CommittedRead) -> Result<(Timestamp, Option<Value>), RejectReason> {
        if c.writer.ts >= ts {
            return Err(RejectReason::Misbehavior);
        }
        let Some(w) = c.writer.write_of(key) else { return Err(RejectReason::BadCertificate) };
        let value = w.value.clone();
        let id = c.writer.id();
        if !self.known_committed.contains(&id) {
            c.writer.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
            self.auth.check_commit_cert(&c.writer, &c.cert).map_err(|_| RejectReason::BadCertificate)?;
            self.remember_committed(id);
        }
        Ok((c.writer.ts, value))
    }

    fn remember_committed(&mut self, id: TxnId) {
        if self.known_committed.insert(id) {
            self.known_order.push_back(id);
            if self.known_order.len() > KNOWN_COMMITTED_CAPACITY {
                if let Some(old) = self.known_order.pop_front() {
                    self.known_committed.remove(&old);
                }
            }
        }
    }

    // ---- Prepare, stage 1 (Basil §4.2) ----

    fn on_vote(&mut self, now: u64, vote: ReplicaSigned<St1Vote>, conflict: Option<ConflictProof>) -> Result<(), RejectReason> {
        let Some(&h) = self.by_id.get(&vote.body.txn) else { return Ok(()) };
        let Some(Phase::Voting(v)) = self.txns.get(&h).map(|t| &t.phase) else { return Ok(()) };
        if !v.tallies.contains_key(&vote.signer.shard) || !self.auth.is_member(vote.signer) {
            return Err(RejectReason::NotMember);
        }
        let (meta, id) = (v.meta.clone(), v.id);
        // A conflict proof is rare and decides alone: check it (and the vote) right away.
        let conflict_cert = match conflict {
            Some(c) if vote.body.vote == Vote::Abort => {
                match self.auth.check_conflict_vote(&meta, &id, &vote, &c.meta, &c.cert) {
                    Ok(()) => Some(AbortCert::Conflict { vote: vote.clone(), conflict: c }),
                    Err(e) => {
                        // Still a plain abort vote; only the proof is rejected.
                        self.rejects.record(e.0);
                        None
                    }
                }
            }
            _ => None,
        };
        if let Some(Phase::Voting(v)) = self.txns.get_mut(&h).map(|t| &mut t.phase) {
            let signer = vote.signer;
            let verified = conflict_cert.is_some();
            if let Some(tally) = v.tallies.get_mut(&signer.shard) {
                if tally.add(vote, conflict_cert) && !verified {
                    v.unverified.insert(signer);
                }
            }
        }
        self.evaluate_votes(now, h);
        Ok(())
    }

    /// Verifies every not-yet-verified vote of a transaction in one batch and drops the
    /// ones with bad signatures. Returns whether any vote was dropped.
    fn verify_votes(&mut self, h: TxnHandle) -> bool {
        let Some(Phase::Voting(v)) = self.txns.get_mut(&h).map(|t| &mut t.phase) else { return false };
        if v.unverified.is_empty() {
            return false;
        }
        let pending: Vec<ReplicaSigned<St1Vote>> = v
            .tallies
            .values()
            .flat_map(|t| t.votes())
            .filter(|vote| v.unverified.contains(&vote.signer))
            .cloned()
            .collect();
        v.unverified.clear();
        let results = self.auth.check_replicas_each(&pending);
        let bad: Vec<(ReplicaId, RejectReason)> =
            pending.iter().zip(results).filter_map(|(vote, r)| r.err().map(|e| (vote.signer, e.0))).collect();
        if let Some(Phase::Voting(v)) = self.txns.get_mut(&h).map(|t| &mut t.phase) {
            for (signer, _) in &bad {
                if let Some(t) = v.tallies.get_mut(&signer.shard) {
                    t.remove(signer.index);
                }
            }
        }
        for (_, reason) in &bad {
            self.rejects.record(*reason);
        }
        !bad.is_empty()
    }

    /// Combines the shards' outcomes into the 2PC decision (Basil §4.2, after step 4).
    fn evaluate_votes(&mut self, now: u64, h: TxnHandle) {
        let Some(Phase::Voting(v)) = self.txns.get(&h).map(|t| &t.phase) else { return };
        let timed_out = now >= v.started.saturating_add(self.timeouts.fast_path_us);
        let decisive = v.tallies.values().any(|t| t.outcome(timed_out) != ShardOutcome::Pending);
        // Nothing is acted upon before every counted vote's signature is verified.
        if decisive && self.verify_votes(h) {
            return self.evaluate_votes(now, h);
        }
        let Some(Phase::Voting(v)) = self.txns.get(&h).map(|t| &t.phase) else { return };
        let outcomes: Vec<(ShardId, ShardOutcome)> = v.tallies.iter().map(|(s, t)| (*s, t.outcome(timed_out))).collect();
        if let Some((_, ShardOutcome::FastAbort(cert))) = outcomes.iter().find(|(_, o)| matches!(o, ShardOutcome::FastAbort(_))) {
            let cert = DecisionCert::Abort(cert.clone());
            self.decide(h, cert, true);
            return;
        }
        if outcomes.iter().all(|(_, o)| *o == ShardOutcome::FastCommit) {
            let cert = CommitCert::Fast(v.tallies.values().map(|t| t.commit_votes()).collect());
            self.decide(h, DecisionCert::Commit(cert), true);
            return;
        }
        let slow_abort = outcomes.iter().find(|(_, o)| *o == ShardOutcome::SlowAbort).map(|(s, _)| *s);
        let all_commit = outcomes.iter().all(|(_, o)| matches!(o, ShardOutcome::FastCommit | ShardOutcome::SlowCommit));
        let (decision, tallies) = match (slow_abort, all_commit) {
            (Some(s), _) => (Decision::Abort, vec![v.tallies[&s].abort_votes()]),
            (None, true) => (Decision::Commit, v.tallies.values().map(|t| t.commit_votes()).collect()),
            (None, false) => return,
        };
        // Stage 2: log the decision on S_log.
        let Some(log_shard) = v.meta.log_shard(&v.id) else { return };
        let st2 = St2 { meta: (*v.meta).clone(), decision, tallies, view: 0 };
        let st2 = sign_client(self.id, self.key.as_ref(), st2);
        let logging = Logging { meta: v.meta.clone(), id: v.id, log_shard, st2, replies: BTreeMap::new(), last_send: now };
        self.outputs.extend(st2_messages(self.auth.config(), &logging));
        if let Some(t) = self.txns.get_mut(&h) {
            t.phase = Phase::Logging(logging);
        }
    }


    // ---- Prepare, stage 2 ----

    fn on_st2_reply(&mut self, reply: ReplicaSigned<St2Reply>) -> Result<(), RejectReason> {
        let Some(&h) = self.by_id.get(&reply.body.txn) else { return Ok(()) };
        let Some(Phase::Logging(l)) = self.txns.get(&h).map(|t| &t.phase) else { return Ok(()) };
        if reply.signer.shard != l.log_shard {
            return Err(RejectReason::WrongShard);
        }
        self.auth.check_replica(&reply).map_err(|e| e.0)?;
        let quorum = self.config().quorums().st2_quorum();
        let Some(Phase::Logging(l)) = self.txns.get_mut(&h).map(|t| &mut t.phase) else { return Ok(()) };
        l.replies.entry(reply.signer.index).or_insert(reply);
        // n−f ST2R matching in decision and decision view form V-CERT_{S_log}.
        let mut groups: BTreeMap<(bool, u64), Vec<ReplicaSigned<St2Reply>>> = BTreeMap::new();
        for r in l.replies.values() {
            let key = (r.body.decision == Decision::Commit, r.body.view_decision);
            groups.entry(key).or_default().push(r.clone());
        }
        let Some(((commit, _), replies)) = groups.into_iter().find(|(_, g)| g.len() >= quorum) else { return Ok(()) };
        let cert = if commit {
            DecisionCert::Commit(CommitCert::Slow(replies))
        } else {
            DecisionCert::Abort(AbortCert::Slow(replies))
        };
        self.decide(h, cert, false);
        Ok(())
    }

    // ---- Writeback (Basil §4.3) ----

    fn decide(&mut self, h: TxnHandle, cert: DecisionCert, fast: bool) {
        let Some(t) = self.txns.remove(&h) else { return };
        self.by_ts.remove(&t.ts);
        let (meta, id) = match &t.phase {
            Phase::Voting(v) => (v.meta.clone(), v.id),
            Phase::Logging(l) => (l.meta.clone(), l.id),
            Phase::Executing => return,
        };
        self.by_id.remove(&id);
        let decision = cert.decision();
        if decision == Decision::Commit {
            self.remember_committed(id);
        }
        self.events.push_back(CoordinatorEvent::Decided { txn: h, id, decision, fast });
        let wb = Writeback { meta: (*meta).clone(), cert };
        let targets: BTreeSet<ReplicaId> = meta.shards.iter().flat_map(|s| self.config().replicas_of(*s)).collect();
        for r in &targets {
            self.outputs.push((*r, Message::Writeback(wb.clone())));
        }
        self.writebacks.insert(id, WritebackState { msg: wb, unacked: targets, tries: 0, last_send: 0 });
    }

    /// Timers: fast-path timeout, retransmissions.
    pub fn tick(&mut self, now: u64) {
        let rt = self.timeouts.retransmit_us;
        let handles: Vec<TxnHandle> = self.txns.keys().copied().collect();
        for h in handles {
            self.retransmit_reads(now, h);
            let config = self.auth.config();
            let Some(t) = self.txns.get_mut(&h) else { continue };
            match &mut t.phase {
                Phase::Executing => {}
                Phase::Voting(v) => {
                    if now >= v.last_send.saturating_add(rt) {
                        v.last_send = now;
                        self.outputs.extend(prepare_messages(config, v));
                    }
                    self.evaluate_votes(now, h);
                }
                Phase::Logging(l) => {
                    if now >= l.last_send.saturating_add(rt) {
                        l.last_send = now;
                        self.outputs.extend(st2_messages(config, l));
                    }
                }
            }
        }
        let retries = self.timeouts.writeback_retries;
        let mut finished = Vec::new();
        for (id, wb) in self.writebacks.iter_mut() {
            if now < wb.last_send.saturating_add(rt) {
                continue;
            }
            if wb.last_send == 0 {
                wb.last_send = now; // first tick after the initial send
                continue;
            }
            if wb.tries >= retries {
                finished.push(*id);
                continue;
            }
            wb.tries += 1;
            wb.last_send = now;
            for r in &wb.unacked {
                self.outputs.push((*r, Message::Writeback(wb.msg.clone())));
            }
        }
        for id in finished {
            self.writebacks.remove(&id);
        }
    }

    /// A read without f+1 replies after the retransmission timeout goes to every replica.
    fn retransmit_reads(&mut self, now: u64, h: TxnHandle) {
        let rt = self.timeouts.retransmit_us;
        let n = self.config().quorums().n() as u32;
        let key_sig = self.key.clone();
        let id = self.id;
        let Some(t) = self.txns.get_mut(&h) else { return };
        let ts = t.ts;
        let mut out = Vec::new();
        for (key, op) in t.in_flight.iter_mut() {
            if now < op.sent_at.saturating_add(rt) {
                continue;
            }
            op.sent_at = now;
            let req = sign_client(id, key_sig.as_ref(), ReadRequest { key: key.clone(), ts });
            for i in 0..n {
                if !op.replies.contains_key(&i) {
                    op.sent_to.insert(i);
                    out.push((ReplicaId { shard: op.shard, index: i }, Message::Read(req.clone())));
                }
            }
        }
        self.outputs.extend(out);
    }
}

/// ST1 to every replica of T's shards that has not voted yet.
fn prepare_messages(config: &ClusterConfig, v: &Voting) -> Vec<(ReplicaId, Message)> {
    v.tallies
        .iter()
        .flat_map(|(shard, tally)| config.replicas_of(*shard).filter(|r| !tally.has_voted(r.index)))
        .map(|r| (r, Message::Prepare(v.prepare.clone())))
        .collect()
}

/// ST2 to every replica of S_log that has not answered yet.
fn st2_messages(config: &ClusterConfig, l: &Logging) -> Vec<(ReplicaId, Message)> {
    config
        .replicas_of(l.log_shard)
        .filter(|r| !l.replies.contains_key(&r.index))
        .map(|r| (r, Message::Decide(l.st2.clone())))
        .collect()
}
