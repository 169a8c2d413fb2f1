//! A range read in flight at the client (Pesto §5.5) and its eager-path decision (§5.5.1,
//! App. B.4, B.8).
//!
//! The decision is a pure function of the replies (verified before it is taken), so it is
//! unit-tested directly.
//! Rules:
//! - Replies whose table versions are far below the (f+1)-st smallest reported for a table
//!   are outliers and ignored (B.8: a Byzantine replica may report a tiny table version to
//!   make our completeness check slow).
//! - We decide over at least 3f+1 considered replies: f+1 of them must match on Q-RES,
//!   write set, Q-READ (keys and versions) and Q-PRED (predicates without table versions).
//! - Every dependency of the matching Q-READ must be valid: named (in Q-DEP or SS-VOTE) by
//!   f+1 replies; it is dropped as unnecessary if 2f+1 matching replies exist and fewer than
//!   f+1 of them list it (B.4). Otherwise the group is unusable.
//! - A predicate's table version is the smallest over all considered replies (B.8), and for
//!   a reply whose Q-READ differs from the chosen one, no higher than the oldest version it
//!   read that the chosen Q-READ lacks: a write that some replica saw and the chosen result
//!   missed must fall inside the completeness window the replicas check at prepare (§6.1.3).
//!   This is why we wait for 3f+1 replies rather than the first f+1 that match.
//! - No usable group after every replica asked has answered (or, with 3f+1 replies, after
//!   the retransmission interval): the snapshot path (§5.5 steps 3–6). The client proposes
//!   SS-PROP, the transactions named by at least f+1 of the SS-VOTEs it holds (at least 3f+1
//!   of them, the paper's default), each with its voters, to the replicas that voted; replicas sync
//!   and re-execute, and the same decision rule applies to their replies. If they still
//!   disagree, the client starts over with fresh votes (eager round, then snapshot), after a
//!   short delay; after `MAX_SNAPSHOT_ATTEMPTS` snapshot rounds the statement fails with
//!   40001 (a sign of contention the client cannot wait out, App. A.5.2).

use pistou_core::sql_keys::{key_kind, KeyKind};
use pistou_core::{Key, Quorums, ReplicaId, ShardId, Timestamp, TxnId};
use pistou_crypto::{BatchSignature, Hash};
use pistou_sql::{Prepared, SqlError, SqlState};
use pistou_wire::{
    ClientSigned, Dep, Message, PredicateRead, QueryOutput, RangeRead, RangeReply, ReplicaSigned, Signable, SsEntry,
    SsProp, WirePredicate, WriteEntry, MAX_SS_PROP_TXNS,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Snapshot rounds before a disagreement fails the statement.
pub(crate) const MAX_SNAPSHOT_ATTEMPTS: u32 = 3;
/// Pause before starting over with fresh votes, so that writebacks in flight can land (µs).
pub(crate) const ROUND_DELAY_US: u64 = 5_000;

/// Which request the current round sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// RANGE-READ without a proposal: replies carry SS-VOTEs.
    Eager,
    /// RANGE-READ with SS-PROP.
    Snapshot,
}

pub(crate) struct RangeOp {
    pub(crate) shard: ShardId,
    pub(crate) prepared: Arc<Prepared>,
    /// The eager request (no SS-PROP).
    eager: Arc<ClientSigned<RangeRead>>,
    /// The request of the current round and its signing hash (replies name it). Shared by
    /// the messages to every replica asked.
    pub(crate) request: Arc<ClientSigned<RangeRead>>,
    pub(crate) hash: Hash,
    pub(crate) phase: Phase,
    /// Replicas asked this round.
    sent: BTreeSet<u32>,
    sent_at: u64,
    round_started: u64,
    /// Replies of this round, by replica index. Those also in `unverified` have not had
    /// their signature checked: nothing is adopted from a reply before it is (see
    /// `Coordinator::sql_range_decide`).
    pub(crate) replies: BTreeMap<u32, RangeReply>,
    /// Signatures of the replies not verified yet (their signing hash is computed only when
    /// they are checked: a forced snapshot's eager round never is).
    unverified: BTreeMap<u32, Option<BatchSignature>>,
    snapshot_attempts: u32,
    /// Set while pausing between rounds; replies are ignored meanwhile.
    retry_at: Option<u64>,
}

/// The eager-path result a client adopts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chosen {
    pub(crate) output: QueryOutput,
    pub(crate) writes: Vec<WriteEntry>,
    /// Q-READ: (row key, version).
    pub(crate) reads: Vec<(Key, Timestamp)>,
    /// Valid, necessary dependencies.
    pub(crate) deps: Vec<Dep>,
    pub(crate) predicates: Vec<PredicateRead>,
    /// Values drawn from each of the request's sequences, and the session's lastval after.
    pub(crate) sequences_used: Vec<u64>,
    pub(crate) lastval: Option<pistou_sql::SequenceLast>,
}

#[derive(Debug)]
pub(crate) enum Choice {
    Wait,
    Done(Box<Chosen>),
    /// f+1 replicas agree that the statement fails.
    Failed(SqlError),
    /// Enough replies, no usable agreement.
    Disagree,
}

impl RangeOp {
    pub(crate) fn new(
        shard: ShardId,
        prepared: Arc<Prepared>,
        request: Arc<ClientSigned<RangeRead>>,
        sent: BTreeSet<u32>,
        now: u64,
    ) -> Self {
        let hash = request.body.signing_hash();
        RangeOp {
            shard,
            prepared,
            eager: request.clone(),
            request,
            hash,
            phase: Phase::Eager,
            sent,
            sent_at: now,
            round_started: now,
            replies: BTreeMap::new(),
            unverified: BTreeMap::new(),
            snapshot_attempts: 0,
            retry_at: None,
        }
    }

    pub(crate) fn accepting(&self) -> bool {
        self.retry_at.is_none()
    }

    /// Records a reply whose signature is still to be checked (`checked` false when the
    /// cluster runs without signatures). A later reply from the same replica replaces the
    /// earlier one.
    pub(crate) fn add_reply(&mut self, reply: ReplicaSigned<RangeReply>, checked: bool) {
        let index = reply.signer.index;
        if checked {
            self.unverified.insert(index, reply.sig);
        } else {
            self.unverified.remove(&index);
        }
        self.replies.insert(index, reply.body);
    }

    /// The signatures to check before the replies are decided over: none while fewer than
    /// 3f+1 replies are in (no decision is possible yet), or while the round only collects
    /// SS-VOTEs for a forced snapshot (`eager` off), whose worst case is a proposal that
    /// stalls this query alone. Checking them all at once lets them share one batch.
    pub(crate) fn take_unverified(&mut self, f: usize, eager: bool) -> Vec<(u32, Hash, Option<BatchSignature>)> {
        if self.replies.len() < Quorums::new(f).range_fanout() || (!eager && self.phase == Phase::Eager) {
            return Vec::new();
        }
        let replies = &self.replies;
        std::mem::take(&mut self.unverified)
            .into_iter()
            .filter_map(|(i, sig)| replies.get(&i).map(|r| (i, r.signing_hash(), sig)))
            .collect()
    }

    /// Drops a reply whose signature failed.
    pub(crate) fn drop_reply(&mut self, index: u32) {
        self.replies.remove(&index);
        self.unverified.remove(&index);
    }

    /// The eager round failed: propose a snapshot built from its votes (§5.5 step 4) to the
    /// replicas that voted, if 3f+1 of them were usable (not outliers, B.8), else to every
    /// replica (the decision needs 3f+1 usable replies). Silent ones are retried by
    /// retransmission. `sign` signs the new request.
    pub(crate) fn start_snapshot(
        &mut self,
        now: u64,
        f: usize,
        outlier_us: u64,
        n: u32,
        sign: impl FnOnce(RangeRead) -> ClientSigned<RangeRead>,
    ) -> Vec<(ReplicaId, Message)> {
        let mut body = self.eager.body.clone();
        body.snapshot = Some(ss_prop(&self.replies, f));
        self.request = Arc::new(sign(body));
        self.hash = self.request.body.signing_hash();
        self.phase = Phase::Snapshot;
        self.snapshot_attempts += 1;
        let usable = self.replies.len() - outliers(&self.replies, f, outlier_us).len();
        self.unverified.clear();
        let voters = std::mem::take(&mut self.replies).into_keys();
        self.sent = if usable >= Quorums::new(f).range_fanout() { voters.collect() } else { (0..n).collect() };
        self.sent_at = now;
        self.round_started = now;
        let msg = Message::RangeRead(self.request.clone());
        self.sent.iter().map(|index| (ReplicaId { shard: self.shard, index: *index }, msg.clone())).collect()
    }

    /// The snapshot round failed too: start over with fresh votes after `ROUND_DELAY_US`,
    /// or give up after `MAX_SNAPSHOT_ATTEMPTS`.
    pub(crate) fn restart(&mut self, now: u64) -> Result<(), SqlError> {
        if self.snapshot_attempts >= MAX_SNAPSHOT_ATTEMPTS {
            return Err(SqlError::new(
                SqlState::SerializationFailure,
                format!("replicas disagreed on this read after {MAX_SNAPSHOT_ATTEMPTS} snapshot rounds (contention); retry the transaction"),
            ));
        }
        self.request = self.eager.clone();
        self.hash = self.request.body.signing_hash();
        self.phase = Phase::Eager;
        self.replies.clear();
        self.unverified.clear();
        self.sent.clear();
        self.retry_at = Some(now.saturating_add(ROUND_DELAY_US));
        Ok(())
    }

    /// No decision yet, though every replica asked has answered, or 3f+1 have and the
    /// others stayed silent for `patience` (crashed or slow replicas must not stall a read).
    pub(crate) fn stuck(&self, now: u64, f: usize, patience: u64) -> bool {
        let enough = self.replies.len() >= Quorums::new(f).range_fanout();
        let all = self.sent.iter().all(|i| self.replies.contains_key(i));
        self.accepting() && enough && (all || now >= self.round_started.saturating_add(patience))
    }

    pub(crate) fn retry_due(&self, now: u64) -> bool {
        self.retry_at.is_some_and(|at| now >= at)
    }

    /// A new round goes to every replica.
    pub(crate) fn resend_all(&mut self, now: u64, n: u32) -> Vec<(ReplicaId, Message)> {
        self.retry_at = None;
        self.sent_at = now;
        self.round_started = now;
        self.sent = (0..n).collect();
        (0..n).map(|index| (ReplicaId { shard: self.shard, index }, Message::RangeRead(self.request.clone()))).collect()
    }

    /// Outliers among the replies (B.8) leave fewer than 3f+1 replicas asked that could
    /// still be considered: ask that many more now, rather than waiting out the retransmission
    /// interval and then falling back to a snapshot. Returns the messages and the outliers.
    pub(crate) fn widen(&mut self, f: usize, outlier_us: u64, n: u32) -> (Vec<(ReplicaId, Message)>, BTreeSet<u32>) {
        let skip = outliers(&self.replies, f, outlier_us);
        if !self.accepting() || skip.is_empty() {
            return (Vec::new(), skip);
        }
        let possible = self.sent.iter().filter(|i| !skip.contains(i)).count();
        let need = Quorums::new(f).range_fanout().saturating_sub(possible);
        let more: Vec<u32> = (0..n).filter(|i| !self.sent.contains(i)).take(need).collect();
        self.sent.extend(more.iter().copied());
        let msgs = more
            .into_iter()
            .map(|index| (ReplicaId { shard: self.shard, index }, Message::RangeRead(self.request.clone())))
            .collect();
        (msgs, skip)
    }

    /// After `interval` without a decision, ask the replicas that have not answered.
    pub(crate) fn retransmit(&mut self, now: u64, interval: u64, n: u32) -> Vec<(ReplicaId, Message)> {
        if self.retry_at.is_some() || now < self.sent_at.saturating_add(interval) {
            return Vec::new();
        }
        self.sent_at = now;
        let missing: Vec<u32> = (0..n).filter(|i| !self.replies.contains_key(i)).collect();
        self.sent.extend(missing.iter().copied());
        missing
            .into_iter()
            .map(|index| (ReplicaId { shard: self.shard, index }, Message::RangeRead(self.request.clone())))
            .collect()
    }

    /// The decision over this round's replies; `eager` false forces the snapshot path (a
    /// stress mode of Pesto Fig. 8).
    pub(crate) fn choose(&self, now: u64, f: usize, outlier_us: u64, patience: u64, eager: bool) -> Choice {
        if !self.accepting() {
            return Choice::Wait;
        }
        if !eager && self.phase == Phase::Eager {
            return if self.replies.len() >= Quorums::new(f).range_fanout() { Choice::Disagree } else { Choice::Wait };
        }
        if !self.unverified.is_empty() {
            return Choice::Wait; // nothing is decided over a reply whose signature is unchecked
        }
        match choose(&self.replies, f, outlier_us) {
            Choice::Wait if self.stuck(now, f, patience) => Choice::Disagree,
            c => c,
        }
    }
}

/// The 3f+1 replicas (`fanout`) an eager range read asks first: in rotation from `start`,
/// skipping those `avoid`ed (recent outliers, whose replies cannot be used) while enough
/// others remain.
pub(crate) fn range_targets(start: usize, n: usize, fanout: usize, avoid: impl Fn(u32) -> bool) -> Vec<u32> {
    let rotation = (0..n).map(|i| ((start + i) % n) as u32);
    let (fine, avoided): (Vec<u32>, Vec<u32>) = rotation.partition(|i| !avoid(*i));
    fine.into_iter().chain(avoided).take(fanout).collect()
}

/// SS-PROP from the SS-VOTEs of `replies`: every transaction named by at least f+1 distinct
/// replies, with those replies' replica indexes (§5.5 step 4). A correct replica names only
/// transactions it has, so each entry is vouched for by a correct replica.
pub(crate) fn ss_prop(replies: &BTreeMap<u32, RangeReply>, f: usize) -> SsProp {
    let mut voters: BTreeMap<TxnId, Vec<u32>> = BTreeMap::new();
    for (i, r) in replies {
        let distinct: BTreeSet<&TxnId> = r.ss_vote.iter().collect();
        for txn in distinct {
            voters.entry(*txn).or_default().push(*i);
        }
    }
    let txns = voters
        .into_iter()
        .filter(|(_, v)| v.len() > f)
        .map(|(txn, voters)| SsEntry { txn, voters })
        .take(MAX_SS_PROP_TXNS)
        .collect();
    SsProp { txns }
}

/// The table a row key belongs to.
fn table_of(key: &[u8]) -> Option<&str> {
    match key_kind(key) {
        KeyKind::Row { table, .. } => Some(table),
        _ => None,
    }
}

/// Replies whose table version for some table is more than `outlier_us` below the (f+1)-st
/// smallest reported for it (B.8). A reply counts with the lowest version it reports for a
/// table. (Runs on every reply, so it works over one flat, borrowed list.)
fn outliers(replies: &BTreeMap<u32, RangeReply>, f: usize, outlier_us: u64) -> BTreeSet<u32> {
    // (table, reply, version reported), one entry per predicate.
    let mut reported: Vec<(&str, u32, Timestamp)> = Vec::new();
    for (i, r) in replies {
        if let Ok(result) = &r.result {
            reported.extend(result.predicates.iter().map(|p| (p.predicate.table.as_str(), *i, p.table_version)));
        }
    }
    // Sorted by table, then reply, then version: keeping the first of each (table, reply)
    // keeps the lowest version that reply reports for that table.
    reported.sort_unstable();
    reported.dedup_by(|later, kept| later.0 == kept.0 && later.1 == kept.1);
    let mut out = BTreeSet::new();
    for table in reported.chunk_by(|a, b| a.0 == b.0) {
        let mut versions: Vec<Timestamp> = table.iter().map(|e| e.2).collect();
        versions.sort_unstable();
        let Some(reference) = versions.get(f) else { continue };
        let floor = reference.time.saturating_sub(outlier_us);
        out.extend(table.iter().filter(|e| e.2.time < floor).map(|e| e.1));
    }
    out
}

/// What f+1 replies must agree on, canonically encoded.
fn matching_key(reply: &RangeReply) -> Vec<u8> {
    let content = match &reply.result {
        Ok(r) => {
            let reads: Vec<(&Key, Timestamp)> = r.reads.iter().map(|a| (&a.key, a.version)).collect();
            let preds: Vec<(&WirePredicate, &Vec<Key>)> =
                r.predicates.iter().map(|p| (&p.predicate, &p.active)).collect();
            postcard::to_allocvec(&(0u8, &r.output, &r.writes, reads, preds, &r.sequences_used, &r.lastval))
        }
        Err(e) => postcard::to_allocvec(&(1u8, e.sqlstate(), &e.message)),
    };
    content.unwrap_or_default()
}

/// Transactions a reply names as prepared writers it read (Q-DEP) or in its SS-VOTE.
fn named(reply: &RangeReply) -> BTreeSet<TxnId> {
    let mut out: BTreeSet<TxnId> = reply.ss_vote.iter().copied().collect();
    if let Ok(r) = &reply.result {
        out.extend(r.reads.iter().filter_map(|a| a.prepared_by));
    }
    out
}

/// The eager-path decision over verified replies.
pub(crate) fn choose(replies: &BTreeMap<u32, RangeReply>, f: usize, outlier_us: u64) -> Choice {
    let skip = outliers(replies, f, outlier_us);
    let considered: BTreeMap<u32, &RangeReply> =
        replies.iter().filter(|(i, _)| !skip.contains(i)).map(|(i, r)| (*i, r)).collect();
    if considered.len() < Quorums::new(f).range_fanout() {
        return Choice::Wait;
    }
    let mut groups: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
    for (i, r) in &considered {
        groups.entry(matching_key(r)).or_default().push(*i);
    }
    // Freshest group first (a group's read of a row another group read at a newer version
    // is stale), then the largest; ties in canonical order, so the choice is deterministic.
    let supported: Vec<(Vec<u8>, Vec<u32>)> = groups.into_iter().filter(|(_, m)| m.len() > f).collect();
    // (Only when groups compete: a large scan's Q-READ is not worth indexing otherwise.)
    let reads: Vec<BTreeMap<&Key, Timestamp>> = if supported.len() > 1 {
        supported.iter().map(|(_, m)| read_versions(considered[&m[0]])).collect()
    } else {
        Vec::new()
    };
    let staleness = |g: usize| reads.get(g).map_or(0, |mine| stale_rows(mine, &reads));
    let mut ordered: Vec<(usize, &Vec<u8>, &Vec<u32>)> =
        supported.iter().enumerate().map(|(g, (content, members))| (staleness(g), content, members)).collect();
    ordered.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| b.2.len().cmp(&a.2.len())).then_with(|| a.1.cmp(b.1)));
    for (_, _, members) in ordered {
        let first = considered[&members[0]];
        let result = match &first.result {
            Err(e) => return Choice::Failed(e.clone()),
            Ok(r) => r,
        };
        let Some(deps) = valid_deps(&considered, members, f) else { continue };
        let chosen_reads: BTreeSet<(&Key, Timestamp)> = result.reads.iter().map(|a| (&a.key, a.version)).collect();
        let versions = table_versions(&considered, &chosen_reads);
        let predicates = result
            .predicates
            .iter()
            .map(|p| {
                let table_version =
                    versions.get(p.predicate.table.as_str()).copied().unwrap_or(p.table_version).min(p.table_version);
                PredicateRead { predicate: p.predicate.clone(), table_version, active: p.active.clone() }
            })
            .collect();
        return Choice::Done(Box::new(Chosen {
            output: result.output.clone(),
            writes: result.writes.clone(),
            reads: result.reads.iter().map(|a| (a.key.clone(), a.version)).collect(),
            deps,
            predicates,
            sequences_used: result.sequences_used.clone(),
            lastval: result.lastval.clone(),
        }));
    }
    Choice::Wait
}

/// Q-READ of a reply: row key → version read.
fn read_versions(reply: &RangeReply) -> BTreeMap<&Key, Timestamp> {
    match &reply.result {
        Ok(r) => r.reads.iter().map(|a| (&a.key, a.version)).collect(),
        Err(_) => BTreeMap::new(),
    }
}

/// Rows `mine` read that some other supported group (f+1 matching replies, so at least one
/// correct replica) read at a newer version. Every supported group is a safe choice (the
/// table versions cover what it missed), but a stale one makes the transaction abort at
/// prepare: a replica that has not learnt a commit yet (Pesto §7.3's inconsistency) reads
/// the older committed version, and f+1 such replicas must not outvote the fresh ones.
fn stale_rows(mine: &BTreeMap<&Key, Timestamp>, all: &[BTreeMap<&Key, Timestamp>]) -> usize {
    mine.iter().filter(|(key, v)| all.iter().any(|other| other.get(*key).is_some_and(|o| o > *v))).count()
}

/// The dependencies of the group's Q-READ, if all are valid or unnecessary (B.4).
fn valid_deps(considered: &BTreeMap<u32, &RangeReply>, members: &[u32], f: usize) -> Option<Vec<Dep>> {
    let named: BTreeMap<u32, BTreeSet<TxnId>> = considered.iter().map(|(i, r)| (*i, named(r))).collect();
    // (key, version) → writer, as the matching replies report it.
    let mut candidates: BTreeMap<(Key, Timestamp), BTreeSet<TxnId>> = BTreeMap::new();
    let mut listed: BTreeMap<TxnId, usize> = BTreeMap::new();
    for i in members {
        if let Ok(r) = &considered[i].result {
            let mut mine = BTreeSet::new();
            for a in &r.reads {
                if let Some(txn) = a.prepared_by {
                    candidates.entry((a.key.clone(), a.version)).or_default().insert(txn);
                    mine.insert(txn);
                }
            }
            for txn in mine {
                *listed.entry(txn).or_default() += 1;
            }
        }
    }
    let mut deps = Vec::new();
    for ((key, version), writers) in candidates {
        for txn in writers {
            let vouched = named.values().filter(|set| set.contains(&txn)).count();
            let in_qdep = listed.get(&txn).copied().unwrap_or(0);
            if vouched > f {
                deps.push(Dep { txn, key: key.clone(), version });
            } else if members.len() > 2 * f && in_qdep <= f {
                // At least one correct matching replica deems it committed: unnecessary.
            } else {
                return None;
            }
        }
    }
    // Two writers of one (key, version) cannot both be right; the replica will reject it.
    deps.dedup_by(|a, b| a.key == b.key && a.version == b.version);
    Some(deps)
}

/// Per table: the smallest table version over the considered replies, lowered for each
/// reply to the oldest version it read that the chosen Q-READ lacks.
fn table_versions(
    considered: &BTreeMap<u32, &RangeReply>,
    chosen: &BTreeSet<(&Key, Timestamp)>,
) -> BTreeMap<String, Timestamp> {
    let mut out: BTreeMap<String, Timestamp> = BTreeMap::new();
    let mut lower = |table: &str, v: Timestamp| {
        let e = out.entry(table.to_string()).or_insert(v);
        *e = (*e).min(v);
    };
    for r in considered.values() {
        let Ok(result) = &r.result else { continue };
        for p in &result.predicates {
            lower(&p.predicate.table, p.table_version);
        }
        for a in &result.reads {
            if !chosen.contains(&(&a.key, a.version)) {
                if let Some(table) = table_of(&a.key) {
                    lower(table, a.version);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::sql_keys::row_key;
    use pistou_core::ClientId;
    use pistou_wire::{ActiveRead, RangeResult};

    const F: usize = 1;
    const OUTLIER: u64 = 1_000_000;

    fn ts(t: u64) -> Timestamp {
        Timestamp { time: t, client: ClientId(1), seq: 1 }
    }

    fn key(i: u8) -> Key {
        row_key("t", 1, &[i]).expect("key")
    }

    fn pred(tag: u8) -> WirePredicate {
        WirePredicate { table: "t".into(), nodes: vec![tag] }
    }

    fn txn(i: u8) -> TxnId {
        TxnId([i; 32])
    }

    /// A reply with one row per (key, version, writer if prepared) and predicate `pred(1)`
    /// at table version `tv`.
    fn reply(rows: &[(u8, u64, Option<u8>)], tv: u64) -> RangeReply {
        let reads = rows
            .iter()
            .map(|(k, v, p)| ActiveRead { key: key(*k), version: ts(*v), prepared_by: p.map(txn) })
            .collect();
        let output = QueryOutput::Rows(rows.iter().map(|(k, _, _)| vec![pistou_sql::Value::Int(*k as i64)]).collect());
        let active = rows.iter().map(|(k, _, _)| key(*k)).collect();
        let result = RangeResult {
            output,
            writes: vec![],
            reads,
            predicates: vec![PredicateRead { predicate: pred(1), table_version: ts(tv), active }],
            sequences_used: vec![],
            lastval: None,
        };
        RangeReply { request: [0u8; 32], result: Ok(result), ss_vote: vec![] }
    }

    fn replies(list: Vec<RangeReply>) -> BTreeMap<u32, RangeReply> {
        list.into_iter().enumerate().map(|(i, r)| (i as u32, r)).collect()
    }

    fn done(c: Choice) -> Chosen {
        match c {
            Choice::Done(c) => *c,
            other => panic!("expected a decision, got {other:?}"),
        }
    }

    #[test]
    fn waits_for_3f_plus_1_replies_even_when_f_plus_1_match() {
        let r = replies(vec![
            reply(&[(1, 10, None)], 10_000_000),
            reply(&[(1, 10, None)], 10_000_000),
            reply(&[(1, 10, None)], 10_000_000),
        ]);
        assert!(matches!(choose(&r, F, OUTLIER), Choice::Wait));
    }

    #[test]
    fn f_plus_1_matching_decide_and_a_lie_is_outvoted() {
        let honest = reply(&[(1, 10, None), (2, 20, None)], 10_000_000);
        let lie = reply(&[(9, 10, None)], 10_000_000);
        let r = replies(vec![lie.clone(), honest.clone(), lie, honest.clone()]);
        // Two groups of f+1 = 2: the tie is broken canonically, but both are "supported";
        // with a third honest reply the honest group is largest.
        let r2 = replies(vec![r[&0].clone(), honest.clone(), r[&2].clone(), honest.clone(), honest]);
        let c = done(choose(&r2, F, OUTLIER));
        assert_eq!(c.reads, vec![(key(1), ts(10)), (key(2), ts(20))]);
        assert!(matches!(choose(&r, F, OUTLIER), Choice::Done(_)));
    }

    #[test]
    fn range_targets_rotate_and_skip_avoided_replicas_while_others_remain() {
        assert_eq!(range_targets(4, 6, 4, |_| false), vec![4, 5, 0, 1]);
        assert_eq!(range_targets(4, 6, 4, |i| i >= 4), vec![0, 1, 2, 3]);
        // Too many avoided: the fanout is still met, from the avoided ones in rotation.
        assert_eq!(range_targets(1, 6, 4, |i| i != 0), vec![0, 1, 2, 3]);
    }

    #[test]
    fn outliers_widen_the_round_at_once() {
        let good = reply(&[(1, 10, None)], 50_000_000);
        let low = reply(&[(1, 10, None)], 1_000);
        let request = ClientSigned {
            client: ClientId(1),
            body: RangeRead {
                ts: ts(1),
                catalog_version: ts(0),
                sql: "SELECT 1".into(),
                params: vec![],
                pending: vec![],
                snapshot: None,
                sequences: vec![],
                random_seed: [0; 32],
                lastval: None,
            },
            sig: None,
        };
        let prepared = pistou_sql::Engine::new(pistou_sql::Limits::default())
            .prepare(&pistou_sql::Catalog::default(), "SELECT 1")
            .expect("plan");
        let mut op = RangeOp::new(ShardId(0), prepared, Arc::new(request), [0, 1, 2, 3].into_iter().collect(), 0);
        op.replies.insert(0, good.clone());
        op.replies.insert(1, good.clone());
        assert!(op.widen(F, OUTLIER, 6).0.is_empty(), "no outlier yet");
        op.replies.insert(2, low);
        let (msgs, skip) = op.widen(F, OUTLIER, 6);
        assert_eq!(skip, [2].into_iter().collect());
        assert_eq!(
            msgs.iter().map(|(r, _)| r.index).collect::<Vec<_>>(),
            vec![4],
            "one more replica for the one unusable"
        );
        assert!(op.widen(F, OUTLIER, 6).0.is_empty(), "asked already");
    }

    #[test]
    fn the_freshest_supported_group_wins_over_a_stale_one() {
        // Two replicas that have not learnt the commit of row 1's version 30 read version 10;
        // two that have read 30. Both groups have f+1 members; the fresh one must win even
        // though the stale one sorts first canonically and ties in size.
        let stale = reply(&[(1, 10, None), (2, 20, None)], 10_000_000);
        let fresh = reply(&[(1, 30, None), (2, 20, None)], 10_000_000);
        assert!(matching_key(&stale) < matching_key(&fresh), "the test needs the stale group to sort first");
        let chosen =
            done(choose(&replies(vec![stale.clone(), stale.clone(), fresh.clone(), fresh.clone()]), F, OUTLIER));
        assert_eq!(chosen.reads, vec![(key(1), ts(30)), (key(2), ts(20))]);
        // A larger stale group still loses to a supported fresh one...
        let r = replies(vec![stale.clone(), stale.clone(), stale.clone(), fresh.clone(), fresh.clone()]);
        assert_eq!(done(choose(&r, F, OUTLIER)).reads[0], (key(1), ts(30)));
        // ...but a single reply claiming a newer version (maybe a Byzantine one) does not count.
        let r = replies(vec![stale.clone(), stale.clone(), stale, fresh]);
        assert_eq!(done(choose(&r, F, OUTLIER)).reads[0], (key(1), ts(10)));
    }

    #[test]
    fn table_version_is_the_smallest_and_lowered_for_extra_reads() {
        let a = reply(&[(1, 10, None)], 9_000_000);
        let b = reply(&[(1, 10, None)], 9_500_000);
        // A non-matching reply saw a newer row (version 8_800_000) the chosen result lacks;
        // its own table version is higher, but the chosen predicate's window must reach back
        // to that row.
        let c = reply(&[(1, 10, None), (3, 8_800_000, None)], 9_900_000);
        let d = reply(&[(1, 10, None)], 9_700_000);
        let chosen = done(choose(&replies(vec![a, b, c, d]), F, OUTLIER));
        assert_eq!(chosen.predicates.len(), 1);
        assert_eq!(chosen.predicates[0].table_version, ts(8_800_000));
    }

    #[test]
    fn a_far_too_low_table_version_is_an_outlier() {
        let good = reply(&[(1, 10, None)], 50_000_000);
        let low = reply(&[(1, 10, None)], 1_000);
        // 3 good + 1 outlier: only 3 considered, so wait; a 4th good reply decides, and the
        // outlier's table version is ignored.
        let r = replies(vec![low.clone(), good.clone(), good.clone(), good.clone()]);
        assert!(matches!(choose(&r, F, OUTLIER), Choice::Wait));
        let r = replies(vec![low, good.clone(), good.clone(), good.clone(), good]);
        let chosen = done(choose(&r, F, OUTLIER));
        assert_eq!(chosen.predicates[0].table_version, ts(50_000_000));
    }

    #[test]
    fn a_reply_is_an_outlier_by_the_lowest_version_it_reports_for_any_table() {
        let with_tables = |versions: &[(&str, u64)]| {
            let mut r = reply(&[(1, 10, None)], 50_000_000);
            if let Ok(result) = &mut r.result {
                result.predicates = versions
                    .iter()
                    .map(|(table, tv)| PredicateRead {
                        predicate: WirePredicate { table: (*table).into(), nodes: vec![1] },
                        table_version: ts(*tv),
                        active: vec![],
                    })
                    .collect();
            }
            r
        };
        let good = with_tables(&[("t", 50_000_000), ("u", 40_000_000)]);
        // Fresh on "t" but, in its second predicate on "u", far below the others: an outlier.
        let low_second = with_tables(&[("t", 50_000_000), ("u", 40_000_000), ("u", 1_000)]);
        // Low on "u" only within the bound: not an outlier.
        let near = with_tables(&[("t", 50_000_000), ("u", 39_500_000)]);
        // Reports no "u" at all: judged on "t" alone.
        let only_t = with_tables(&[("t", 50_000_000)]);
        let r = replies(vec![good.clone(), low_second, near, only_t, good]);
        assert_eq!(outliers(&r, F, OUTLIER), BTreeSet::from([1]));
        // Fewer than f+1 replies report a table: no reference, so no outlier by it.
        let r = replies(vec![with_tables(&[("t", 1_000)])]);
        assert!(outliers(&r, F, OUTLIER).is_empty());
    }

    #[test]
    fn a_dependency_needs_f_plus_1_vouchers() {
        // Only one replica names T5 as the prepared writer of row 2: fabricated, so the
        // group that includes it cannot be used...
        let with_dep = reply(&[(1, 10, None), (2, 20, Some(5))], 10_000_000);
        let without = reply(&[(1, 10, None), (2, 20, None)], 10_000_000);
        let r = replies(vec![with_dep.clone(), without.clone(), with_dep.clone(), without.clone()]);
        // ...unless f+1 name it: here two do.
        let chosen = done(choose(&r, F, OUTLIER));
        assert_eq!(chosen.deps, vec![Dep { txn: txn(5), key: key(2), version: ts(20) }]);
        // One voucher among three matching replies (2f+1) that mostly list no dependency:
        // unnecessary, dropped.
        let r = replies(vec![with_dep.clone(), without.clone(), without.clone(), without.clone()]);
        let chosen = done(choose(&r, F, OUTLIER));
        assert!(chosen.deps.is_empty());
        // One voucher and only f+1 matching replies: neither valid nor provably unnecessary.
        let other = reply(&[(7, 70, None)], 10_000_000);
        let r = replies(vec![with_dep, without, other.clone(), other]);
        let c = done(choose(&r, F, OUTLIER));
        assert_eq!(c.reads, vec![(key(7), ts(70))], "the usable group is the one without a dubious dependency");
    }

    #[test]
    fn an_ss_vote_vouches_for_a_dependency() {
        let with_dep = reply(&[(2, 20, Some(5))], 10_000_000);
        let mut voter = reply(&[(2, 20, None)], 10_000_000);
        voter.ss_vote = vec![txn(5)];
        let plain = reply(&[(9, 90, None)], 10_000_000);
        let r = replies(vec![with_dep.clone(), with_dep_without_vote(&with_dep), voter, plain]);
        let chosen = done(choose(&r, F, OUTLIER));
        assert_eq!(chosen.deps.len(), 1);
    }

    fn with_dep_without_vote(r: &RangeReply) -> RangeReply {
        let mut r = r.clone();
        if let Ok(res) = &mut r.result {
            for a in &mut res.reads {
                a.prepared_by = None;
            }
        }
        r
    }

    #[test]
    fn matching_errors_fail_the_statement_and_disagreement_is_reported() {
        let err = RangeReply {
            request: [0u8; 32],
            result: Err(SqlError::new(SqlState::DivisionByZero, "division by zero")),
            ss_vote: vec![],
        };
        let r = replies(vec![err.clone(), err, reply(&[(1, 1, None)], 5), reply(&[(2, 1, None)], 5)]);
        assert!(matches!(choose(&r, F, OUTLIER), Choice::Failed(e) if e.state == SqlState::DivisionByZero));
        let all_different: Vec<RangeReply> = (0..6).map(|i| reply(&[(i, 1, None)], 5)).collect();
        let mut op_replies = replies(all_different);
        assert!(matches!(choose(&op_replies, F, OUTLIER), Choice::Wait));
        op_replies.remove(&5);
        assert!(matches!(choose(&op_replies, F, OUTLIER), Choice::Wait));
    }

    #[test]
    fn ss_prop_keeps_transactions_named_by_f_plus_1_replies_with_their_voters() {
        let vote = |ids: &[u8]| {
            let mut r = reply(&[(1, 10, None)], 5);
            r.ss_vote = ids.iter().map(|i| txn(*i)).collect();
            r
        };
        // T1 by three replies, T2 by two (f+1), T3 by one (maybe fabricated), T4 repeated
        // inside one reply counts once.
        let r = replies(vec![vote(&[1, 2]), vote(&[1, 3]), vote(&[1, 2, 4, 4]), vote(&[])]);
        let prop = ss_prop(&r, F);
        assert_eq!(
            prop,
            SsProp {
                txns: vec![SsEntry { txn: txn(1), voters: vec![0, 1, 2] }, SsEntry { txn: txn(2), voters: vec![0, 2] }]
            }
        );
        assert!(prop.validate(F, 6).is_ok(), "a correct client's proposal passes the replicas' check");
    }

    fn op_with(replies_in: Vec<RangeReply>) -> RangeOp {
        let body = RangeRead {
            ts: ts(100),
            catalog_version: Timestamp::GENESIS,
            sql: "SELECT 1".into(),
            params: vec![],
            pending: vec![],
            snapshot: None,
            sequences: vec![],
            random_seed: [0; 32],
            lastval: None,
        };
        let request = ClientSigned { client: ClientId(1), body, sig: None };
        let prepared = pistou_sql::Engine::new(pistou_sql::Limits::default())
            .prepare(&pistou_sql::Catalog::new(), "SELECT 1")
            .expect("plan");
        let mut op = RangeOp::new(ShardId(0), prepared, Arc::new(request), (0..4).collect(), 0);
        op.replies = replies(replies_in);
        op
    }

    fn signed(index: u32, body: RangeReply) -> ReplicaSigned<RangeReply> {
        ReplicaSigned { signer: ReplicaId { shard: ShardId(0), index }, body, sig: None }
    }

    #[test]
    fn nothing_is_decided_over_replies_whose_signatures_are_unchecked() {
        let same = reply(&[(1, 10, None)], 10_000_000);
        let mut op = op_with(vec![]);
        for i in 0..3 {
            op.add_reply(signed(i, same.clone()), true);
            assert!(
                op.take_unverified(F, true).is_empty(),
                "no decision is possible below 3f+1 replies: nothing to check yet"
            );
        }
        op.add_reply(signed(3, same.clone()), true);
        assert!(
            matches!(op.choose(0, F, OUTLIER, 1_000, true), Choice::Wait),
            "four matching but unchecked replies decide nothing"
        );
        let pending = op.take_unverified(F, true);
        assert_eq!(
            pending.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(),
            vec![0, 1, 2, 3],
            "all four are checked in one batch"
        );
        op.drop_reply(2); // say its signature failed
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, true), Choice::Wait), "three checked replies are not 3f+1");
        op.add_reply(signed(4, same.clone()), true);
        assert_eq!(op.take_unverified(F, true).len(), 1, "a later reply is checked on its own");
        assert_eq!(done(op.choose(0, F, OUTLIER, 1_000, true)).reads, vec![(key(1), ts(10))]);
    }

    #[test]
    fn a_forced_snapshot_proposes_from_unchecked_votes_and_checks_the_snapshot_round() {
        let mut op = op_with(vec![]);
        for i in 0..4 {
            op.add_reply(signed(i, reply(&[(1, 10, None)], 10_000_000)), true);
        }
        // Eager execution forced to fail: the round only supplies SS-VOTEs.
        assert!(op.take_unverified(F, false).is_empty());
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, false), Choice::Disagree));
        op.start_snapshot(0, F, OUTLIER, 6, |body| ClientSigned { client: ClientId(1), body, sig: None });
        assert!(op.take_unverified(F, false).is_empty(), "the eager round's unchecked replies are gone with it");
        for i in 0..4 {
            op.add_reply(signed(i, reply(&[(1, 10, None)], 10_000_000)), true);
        }
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, false), Choice::Wait));
        assert_eq!(
            op.take_unverified(F, false).len(),
            4,
            "the snapshot round's replies are checked before its decision"
        );
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, false), Choice::Done(_)));
    }

    #[test]
    fn disagreement_leads_to_a_snapshot_proposal_then_a_fresh_start_then_failure() {
        let all_different: Vec<RangeReply> = (0..4).map(|i| reply(&[(i, 1, None)], 5)).collect();
        let mut op = op_with(all_different.clone());
        // Every replica asked (4 = 3f+1) answered, no f+1 match: snapshot path.
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, true), Choice::Disagree));
        let out = op.start_snapshot(0, F, OUTLIER, 6, |body| ClientSigned { client: ClientId(1), body, sig: None });
        assert_eq!(out.len(), 4, "the proposal goes to the 3f+1 voters");
        assert_eq!(op.phase, Phase::Snapshot);
        assert!(op.request.body.snapshot.is_some());
        assert_ne!(op.hash, op_with(vec![]).hash, "the snapshot request is a new request");
        for attempt in 1..MAX_SNAPSHOT_ATTEMPTS {
            assert!(op.restart(10).is_ok(), "attempt {attempt}");
            assert_eq!(op.phase, Phase::Eager);
            assert!(op.request.body.snapshot.is_none());
            op.replies = replies(all_different.clone());
            op.retry_at = None;
            op.start_snapshot(20, F, OUTLIER, 6, |body| ClientSigned { client: ClientId(1), body, sig: None });
        }
        let err = op.restart(30).expect_err("out of attempts");
        assert_eq!(err.state, SqlState::SerializationFailure);
    }

    #[test]
    fn a_proposal_goes_to_every_replica_when_a_voter_was_an_outlier() {
        let mut r: Vec<RangeReply> = (0..3).map(|i| reply(&[(i, 1, None)], 50_000_000)).collect();
        r.push(reply(&[(9, 1, None)], 1_000)); // far too low a table version
        let mut op = op_with(r);
        let out = op.start_snapshot(0, F, OUTLIER, 6, |body| ClientSigned { client: ClientId(1), body, sig: None });
        assert_eq!(out.len(), 6);
    }

    #[test]
    fn three_f_plus_1_replies_wait_for_the_rest_only_as_long_as_the_patience() {
        let mut op = op_with((0..4).map(|i| reply(&[(i, 1, None)], 5)).collect());
        op.sent = (0..6).collect(); // asked everyone; two stay silent (crashed)
        assert!(matches!(op.choose(10, F, OUTLIER, 1_000, true), Choice::Wait));
        assert!(matches!(op.choose(1_000, F, OUTLIER, 1_000, true), Choice::Disagree));
    }

    #[test]
    fn a_forced_snapshot_ignores_a_matching_eager_round() {
        let same = reply(&[(1, 10, None)], 5);
        let op = op_with(vec![same.clone(), same.clone(), same.clone(), same]);
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, true), Choice::Done(_)));
        assert!(matches!(op.choose(0, F, OUTLIER, 1_000, false), Choice::Disagree));
    }
}
