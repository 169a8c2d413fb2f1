//! Byzantine participants, for the simulator and for real runs (`pistou replica --fault`,
//! the benchmarks). Never used by a correct participant.
//!
//! A Byzantine *client* is a message-level actor holding its own signing key: it can send
//! anything a client can sign, but cannot forge replicas' signatures. A Byzantine *replica*
//! runs the real replica code and rewrites what it sends, re-signing with its own key.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

pub mod net;

use pistou_core::{ClientId, ClusterConfig, ReplicaId, ShardId, Timestamp, TxnId};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_txn::sign_client;
use pistou_wire::{
    Decision, Dep, Message, Prepare, PreparedRead, QueryOutput, RangeRead, ReadEntry, ReadRequest, ReplicaSigned,
    ShardVotes, Signable, SsEntry, SsProp, St1Vote, St2, TxnMeta, Vote, WriteEntry,
};
use rand::Rng;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a Byzantine client does (Basil §6.4 and issue 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientFault {
    /// Reads (leaving read timestamps), then never sends ST1.
    StallEarly,
    /// Sends ST1 to every replica, then never finishes.
    StallLate,
    /// Sends ST1 to only 2f+1 replicas of each shard, then stalls.
    PartialSt1,
    /// Waits for the votes; if they hold both a CommitQuorum and an AbortQuorum, sends ST2
    /// commit to half of S_log and ST2 abort to the other half; otherwise stalls.
    Equivocate,
    /// Engineers the conflict that makes equivocation possible: first a decoy transaction that
    /// reads the target key at genesis, prepared at f+1 replicas only, so they vote abort on
    /// the real one while the others vote commit; then equivocates.
    ForcedEquivocate,
    /// Uses timestamps far in the future.
    FutureTimestamps,
    /// Declares dependencies on transactions that do not exist.
    FabricatedDeps,
    /// Proposes SS-PROPs naming transactions that do not exist (Pesto §5.5 step 4), to every
    /// replica of shard 0: only its own queries may suffer.
    FabricatedSnapshots,
}

/// What a Byzantine replica does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaFault {
    /// Answers reads as if it had no version at all.
    StaleReads,
    /// Answers reads with an invented prepared version and a bogus committed one.
    FabricateReads,
    /// Votes abort on every transaction.
    AbortAll,
    /// Never votes (kills the fast path).
    RefuseVote,
    /// Sends ST2R with the opposite decision to every other client.
    EquivocateSt2r,
    /// Claims absurd current views in ST2R.
    LieViews,
    /// As fallback leader, never proposes.
    SilentLeader,
    /// As fallback leader, proposes the minority decision.
    LyingLeader,
    /// Lies in range-read replies (Pesto §5.5): in Q-RES, Q-READ, Q-DEP, Q-PRED, table
    /// versions or SS-VOTE, one lie per reply.
    LieRange,
    /// Serves a catching-up peer forged state: every committed transaction it sends with a
    /// changed written value (its certificate no longer matches), and its first page of ids
    /// claimed to be its last (omitting the rest).
    ForgeCatchUp,
}

/// The keys Byzantine clients write: the same `acct{i}` accounts as the simulated workload.
pub fn account_key(i: u64) -> Vec<u8> {
    format!("acct{i}").into_bytes()
}

fn encode_balance(x: i64) -> Vec<u8> {
    x.to_le_bytes().to_vec()
}

/// Parses a fault name as used on command lines (`stall-late`, `abort-all`, ...).
impl std::str::FromStr for ClientFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "stall-early" => ClientFault::StallEarly,
            "stall-late" => ClientFault::StallLate,
            "partial-st1" => ClientFault::PartialSt1,
            "equivocate" => ClientFault::Equivocate,
            "forced-equivocate" => ClientFault::ForcedEquivocate,
            "future-timestamps" => ClientFault::FutureTimestamps,
            "fabricated-deps" => ClientFault::FabricatedDeps,
            "fabricated-snapshots" => ClientFault::FabricatedSnapshots,
            other => return Err(format!("unknown client fault {other:?}")),
        })
    }
}

impl std::str::FromStr for ReplicaFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "stale-reads" => ReplicaFault::StaleReads,
            "fabricate-reads" => ReplicaFault::FabricateReads,
            "abort-all" => ReplicaFault::AbortAll,
            "refuse-vote" => ReplicaFault::RefuseVote,
            "equivocate-st2r" => ReplicaFault::EquivocateSt2r,
            "lie-views" => ReplicaFault::LieViews,
            "silent-leader" => ReplicaFault::SilentLeader,
            "lying-leader" => ReplicaFault::LyingLeader,
            "lie-range" => ReplicaFault::LieRange,
            "forge-catch-up" => ReplicaFault::ForgeCatchUp,
            other => return Err(format!("unknown replica fault {other:?}")),
        })
    }
}

/// A Byzantine replica signs whatever it likes with its own key.
pub fn signed_by<T: Signable>(key: &BatchSigner, signer: ReplicaId, body: T) -> ReplicaSigned<T> {
    let sig = key.sign_one(&body.signing_hash());
    ReplicaSigned { signer, body, sig: Some(sig) }
}

/// Rewrites what a Byzantine replica sends. `None` drops the message.
pub fn tamper(
    fault: ReplicaFault,
    key: &BatchSigner,
    me: ReplicaId,
    to_client: u64,
    msg: Message,
    rng: &mut impl Rng,
) -> Option<Message> {
    match (fault, msg) {
        (ReplicaFault::StaleReads, Message::ReadReply { reply, .. }) => {
            let mut body = reply.body;
            body.prepared = None;
            Some(Message::ReadReply { reply: signed_by(key, me, body), committed: None })
        }
        (ReplicaFault::FabricateReads, Message::ReadReply { reply, committed }) => {
            let mut body = reply.body;
            let version = Timestamp { time: body.ts.time.saturating_sub(1), client: ClientId(999), seq: rng.gen() };
            body.prepared = Some(PreparedRead { version, txn: TxnId(rng.gen()), value: Some(b"fabricated".to_vec()) });
            // A committed version whose certificate belongs to another transaction.
            let committed = committed.map(|mut c| {
                c.writer.ts = version;
                c
            });
            Some(Message::ReadReply { reply: signed_by(key, me, body), committed })
        }
        (ReplicaFault::AbortAll, Message::PrepareReply { vote, .. }) => {
            let body = St1Vote { txn: vote.body.txn, vote: Vote::Abort };
            // Names a made-up blocker too: clients must not chase what one replica says.
            Some(Message::PrepareReply {
                vote: signed_by(key, me, body),
                conflict: None,
                blocker: Some(TxnId(rng.gen())),
            })
        }
        (ReplicaFault::RefuseVote, Message::PrepareReply { .. }) => None,
        (ReplicaFault::EquivocateSt2r, Message::DecideReply(r)) if to_client % 2 == 1 => {
            let mut body = r.body;
            body.decision = match body.decision {
                Decision::Commit => Decision::Abort,
                Decision::Abort => Decision::Commit,
            };
            Some(Message::DecideReply(signed_by(key, me, body)))
        }
        (ReplicaFault::LieRange, Message::RangeReply(r)) => {
            let mut body = r.body;
            if let Ok(result) = &mut body.result {
                match rng.gen_range(0..7) {
                    // Q-RES: a row less (or a count changed).
                    0 => match &mut result.output {
                        QueryOutput::Rows(rows) => {
                            rows.pop();
                        }
                        QueryOutput::Affected { count, .. } => *count += 1,
                    },
                    // Q-READ: a row version it never read.
                    1 => {
                        if let Some(read) = result.reads.first_mut() {
                            read.version = Timestamp {
                                time: read.version.time.saturating_add(1),
                                client: ClientId(999),
                                seq: rng.gen(),
                            };
                        }
                    }
                    // Q-DEP: a fabricated prepared writer.
                    2 => {
                        if let Some(read) = result.reads.first_mut() {
                            read.prepared_by = Some(TxnId(rng.gen()));
                        }
                    }
                    // Table versions far too low (slow checks) or too high (missed writes).
                    3 => {
                        for p in &mut result.predicates {
                            p.table_version = Timestamp::GENESIS;
                        }
                    }
                    4 => {
                        for p in &mut result.predicates {
                            p.table_version =
                                Timestamp { time: p.table_version.time.saturating_add(50_000), ..p.table_version };
                        }
                    }
                    // Q-PRED: no predicate at all (nothing for the CC check to validate).
                    5 => result.predicates.clear(),
                    // SS-VOTE: fabricated writers.
                    _ => body.ss_vote.push(TxnId(rng.gen())),
                }
            }
            Some(Message::RangeReply(signed_by(key, me, body)))
        }
        (ReplicaFault::LieViews, Message::DecideReply(r)) => {
            let mut body = r.body;
            body.view_current = body.view_current.saturating_add(1_000);
            Some(Message::DecideReply(signed_by(key, me, body)))
        }
        (_, m) => Some(m),
    }
}

/// Rewrites what a Byzantine replica sends to other replicas (fallback leader faults).
pub fn tamper_replica(fault: ReplicaFault, msg: Message) -> Option<Message> {
    match (fault, msg) {
        (ReplicaFault::SilentLeader, Message::DecFb(_)) => None,
        (ReplicaFault::ForgeCatchUp, Message::CatchUpPage { ids, .. }) => {
            Some(Message::CatchUpPage { ids, next: None })
        }
        (ReplicaFault::ForgeCatchUp, Message::CatchUpCommits { mut commits }) => {
            for wb in &mut commits {
                if let Some(w) = wb.meta.write_set.first_mut() {
                    w.value = Some(b"forged".to_vec());
                }
            }
            Some(Message::CatchUpCommits { commits })
        }
        (ReplicaFault::LyingLeader, Message::DecFb(mut d)) => {
            d.decision = match d.decision {
                Decision::Commit => Decision::Abort,
                Decision::Abort => Decision::Commit,
            };
            Some(Message::DecFb(d))
        }
        (_, m) => Some(m),
    }
}

struct ByzTxn {
    meta: TxnMeta,
    id: TxnId,
    votes: BTreeMap<ShardId, BTreeMap<u32, ReplicaSigned<St1Vote>>>,
    sent_at: u64,
    settled: bool,
}

/// Chooses the key a Byzantine transaction writes (the workload's key distribution).
pub type KeyPicker = Box<dyn FnMut(&mut dyn rand::RngCore) -> Vec<u8> + Send>;

/// Builds the reads and writes of a Byzantine transaction instead of one balance write to a
/// picked key (SQL scenarios: a catalog read and a well-formed row, so that replicas prepare
/// it). `None`: not possible yet (no table yet); the transaction waits.
pub type TxnShaper = Box<dyn FnMut(&mut dyn rand::RngCore) -> Option<(Vec<ReadEntry>, Vec<WriteEntry>)> + Send>;

/// A Byzantine client running `txns` transactions, one every `gap_us`.
pub struct ByzClient {
    pub index: usize,
    id: ClientId,
    key: SecretKey,
    fault: ClientFault,
    config: Arc<ClusterConfig>,
    pick: KeyPicker,
    txns: usize,
    started: usize,
    next_start: u64,
    gap_us: u64,
    seq: u64,
    current: Option<ByzTxn>,
    shape: Option<TxnShaper>,
}

impl ByzClient {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        id: ClientId,
        key: SecretKey,
        fault: ClientFault,
        config: Arc<ClusterConfig>,
        pick: KeyPicker,
        txns: usize,
        gap_us: u64,
    ) -> Self {
        ByzClient {
            index,
            id,
            key,
            fault,
            config,
            pick,
            txns,
            started: 0,
            next_start: 0,
            gap_us,
            seq: 0,
            current: None,
            shape: None,
        }
    }

    /// Transactions shaped by `shape` rather than one write to a picked key.
    pub fn with_shape(mut self, shape: TxnShaper) -> Self {
        self.shape = Some(shape);
        self
    }

    /// Its signing key (for its connections' session handshakes).
    pub fn key(&self) -> &SecretKey {
        &self.key
    }

    /// Faulty transactions started so far.
    pub fn started(&self) -> usize {
        self.started
    }

    fn sign<T: Signable>(&self, body: T) -> pistou_wire::ClientSigned<T> {
        sign_client(self.id, Some(&self.key), body)
    }

    fn meta(&self, ts: Timestamp, reads: Vec<ReadEntry>, writes: Vec<WriteEntry>, deps: Vec<Dep>) -> TxnMeta {
        let mut shards: Vec<ShardId> = reads
            .iter()
            .map(|r| &r.key)
            .chain(writes.iter().map(|w| &w.key))
            .map(|k| self.config.shard_of(k))
            .collect();
        shards.sort();
        shards.dedup();
        TxnMeta { ts, read_set: reads, write_set: writes, deps, predicates: Vec::new(), late: false, shards }
    }

    fn send_st1(&self, meta: &TxnMeta, replicas_per_shard: usize, out: &mut Vec<(ReplicaId, Message)>) {
        let req = self.sign(Prepare { meta: meta.clone() });
        for s in &meta.shards {
            for r in self.config.replicas_of(*s).take(replicas_per_shard) {
                out.push((r, Message::Prepare(req.clone())));
            }
        }
    }

    /// Starts the next transaction when it is time.
    pub fn step<R: rand::RngCore>(&mut self, now: u64, rng: &mut R, out: &mut Vec<(ReplicaId, Message)>) {
        if self.started >= self.txns || now < self.next_start {
            return;
        }
        let (reads, writes) = match self.shape.as_mut() {
            Some(shape) => match shape(rng) {
                Some(rw) => rw,
                None => return,
            },
            None => {
                let key = (self.pick)(rng);
                (Vec::new(), vec![WriteEntry { key, value: Some(encode_balance(rng.gen_range(1000..2000))) }])
            }
        };
        let Some(key) = writes.first().map(|w| w.key.clone()) else { return };
        self.started += 1;
        self.seq += 1;
        self.next_start = now + self.gap_us;
        let n = self.config.quorums().n();
        let f = self.config.f;
        let mut ts = Timestamp { time: now, client: self.id, seq: self.seq };
        match self.fault {
            ClientFault::StallEarly => {
                let req = self.sign(ReadRequest { key: key.clone(), ts });
                let shard = self.config.shard_of(&key);
                for r in self.config.replicas_of(shard).take(2 * f + 1) {
                    out.push((r, Message::Read(req.clone())));
                }
            }
            ClientFault::StallLate | ClientFault::Equivocate => {
                let meta = self.meta(ts, reads, writes, vec![]);
                self.send_st1(&meta, n, out);
                self.current =
                    Some(ByzTxn { id: meta.id(), meta, votes: BTreeMap::new(), sent_at: now, settled: false });
            }
            ClientFault::PartialSt1 => {
                let meta = self.meta(ts, reads, writes, vec![]);
                self.send_st1(&meta, 2 * f + 1, out);
            }
            ClientFault::ForcedEquivocate => {
                // The decoy: a later transaction that read a fresh key at genesis, prepared at
                // f+1 replicas only. The real transaction also writes that key, so those
                // replicas see it breaking the decoy's read (Alg. 1 line 9) and vote abort,
                // while the others vote commit: a CommitQuorum and an AbortQuorum at once.
                let fresh = format!("decoy-{}-{}", self.id.0, self.seq).into_bytes();
                let decoy_ts = Timestamp { time: now + 1, client: self.id, seq: self.seq + 1_000_000 };
                let decoy = self.meta(
                    decoy_ts,
                    vec![ReadEntry { key: fresh.clone(), version: Timestamp::GENESIS }],
                    vec![],
                    vec![],
                );
                self.send_st1(&decoy, f + 1, out);
                let mut writes = writes;
                writes.push(WriteEntry { key: fresh, value: Some(vec![1]) });
                writes.sort_by(|a, b| a.key.cmp(&b.key));
                let meta = self.meta(ts, reads, writes, vec![]);
                self.current =
                    Some(ByzTxn { id: meta.id(), meta, votes: BTreeMap::new(), sent_at: now, settled: false });
                // The real ST1 follows on the next tick, after the decoy is prepared.
            }
            ClientFault::FutureTimestamps => {
                ts.time = now + 10_000_000;
                let meta = self.meta(ts, reads, writes, vec![]);
                self.send_st1(&meta, n, out);
            }
            ClientFault::FabricatedDeps => {
                let version = Timestamp { time: now.saturating_sub(10), client: ClientId(4242), seq: 1 };
                let reads = vec![ReadEntry { key: key.clone(), version }];
                let deps = vec![Dep { txn: TxnId(rng.gen()), key: key.clone(), version }];
                let other = format!("fabricated-{}", rng.gen::<u32>()).into_bytes();
                let meta = self.meta(ts, reads, vec![WriteEntry { key: other, value: Some(vec![0; 8]) }], deps);
                self.send_st1(&meta, n, out);
            }
            ClientFault::FabricatedSnapshots => {
                // Votes nobody cast: f+1 "voters" per invented transaction.
                let voters: Vec<u32> = (0..=f as u32).collect();
                let mut txns: Vec<SsEntry> =
                    (0..4).map(|_| SsEntry { txn: TxnId(rng.gen()), voters: voters.clone() }).collect();
                txns.sort_by_key(|e| e.txn);
                let body = RangeRead {
                    ts,
                    catalog_version: Timestamp::GENESIS,
                    sql: "SELECT 1".into(),
                    params: vec![],
                    pending: vec![],
                    snapshot: Some(SsProp { txns }),
                    sequences: vec![],
                    random_seed: [0; 32],
                    lastval: None,
                };
                let req = std::sync::Arc::new(self.sign(body));
                for r in self.config.replicas_of(ShardId(0)) {
                    out.push((r, Message::RangeRead(req.clone())));
                }
            }
        }
    }

    /// ForcedEquivocate's second step, and equivocation once the votes are in.
    pub fn tick(&mut self, now: u64, round_trip: u64, out: &mut Vec<(ReplicaId, Message)>) {
        let n = self.config.quorums().n();
        let Some(t) = &self.current else { return };
        if self.fault == ClientFault::ForcedEquivocate
            && t.votes.is_empty()
            && !t.settled
            && now >= t.sent_at + round_trip
        {
            let meta = t.meta.clone();
            self.send_st1(&meta, n, out);
            if let Some(t) = self.current.as_mut() {
                t.sent_at = now;
                t.settled = true; // ST1 sent; the votes decide what comes next
            }
        }
    }

    pub fn handle(&mut self, msg: Message, out: &mut Vec<(ReplicaId, Message)>) {
        let Message::PrepareReply { vote, .. } = msg else { return };
        let q = self.config.quorums();
        let Some(t) = self.current.as_mut() else { return };
        if vote.body.txn != t.id {
            return;
        }
        t.votes.entry(vote.signer.shard).or_default().insert(vote.signer.index, vote);
        let complete = t.meta.shards.iter().all(|s| t.votes.get(s).is_some_and(|v| v.len() == q.n()));
        if !complete {
            return;
        }
        let Some(t) = self.current.take() else { return };
        if !matches!(self.fault, ClientFault::Equivocate | ClientFault::ForcedEquivocate) {
            return; // stall-late: never finish
        }
        let split = |want: Vote| -> BTreeMap<ShardId, ShardVotes> {
            t.votes
                .iter()
                .map(|(s, v)| {
                    (*s, ShardVotes { shard: *s, votes: v.values().filter(|x| x.body.vote == want).cloned().collect() })
                })
                .collect()
        };
        let commits = split(Vote::Commit);
        let aborts = split(Vote::Abort);
        let cq = commits.values().all(|v| v.votes.len() >= q.commit_quorum());
        let aq = aborts.values().find(|v| v.votes.len() >= q.abort_quorum());
        let (Some(aq), true) = (aq, cq) else { return }; // cannot equivocate: stall
        let commit =
            St2 { meta: t.meta.clone(), decision: Decision::Commit, tallies: commits.into_values().collect(), view: 0 };
        let abort = St2 { meta: t.meta.clone(), decision: Decision::Abort, tallies: vec![aq.clone()], view: 0 };
        let Some(log) = t.meta.log_shard(&t.id) else { return };
        for r in self.config.replicas_of(log) {
            let st2 = if r.index % 2 == 0 { commit.clone() } else { abort.clone() };
            out.push((r, Message::Decide(self.sign(st2))));
        }
    }
}
