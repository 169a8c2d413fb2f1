//! Bringing a transaction to a decision (Basil §4.2–4.3 and §5): the ST1 vote tally, ST2 on
//! S_log, the fallback when S_log's ST2R diverge, and the writeback. The same machine serves
//! the client's own commits and the recovery of stalled transactions its own ones depend
//! on (then the ST1 it sends is Recovery Prepare, RP).

use super::{Coordinator, CoordinatorEvent, Retry, RetryStep, TxnHandle, WritebackState};
use crate::auth::sign_client;
use crate::rejects::RejectReason;
use crate::tally::{ShardOutcome, ShardTally};
use pistou_core::{ReplicaId, ShardId, TxnId};
use pistou_wire::{
    AbortCert, ClientSigned, CommitCert, ConflictProof, Decision, DecisionCert, InvokeFb, Message, Prepare,
    ReplicaSigned, St1Vote, St2, St2Reply, TxnMeta, Vote, Writeback,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Attempts to fetch a dependency's ST1 before giving up (it may be fabricated).
const FETCH_ATTEMPTS: u32 = 5;
/// Dependencies one client recovers at once; more wait for the next stall check.
const MAX_CONCURRENT_RECOVERIES: usize = 64;
/// Blockers (see `Coordinator::blockers`) one client remembers; the oldest is forgotten first.
const MAX_BLOCKERS: usize = 256;

pub(super) struct Finishing {
    pub(super) meta: Arc<TxnMeta>,
    id: TxnId,
    /// The application's handle when this is our own transaction.
    pub(super) owner: Option<TxnHandle>,
    prepare: ClientSigned<Prepare>,
    tallies: BTreeMap<ShardId, ShardTally>,
    /// Votes counted but not verified yet: verified in one batch before anything is decided.
    unverified: BTreeSet<ReplicaId>,
    /// Abort votes' blockers (undecided transactions they were due to), with who named them.
    blockers: BTreeMap<TxnId, BTreeSet<ReplicaId>>,
    /// What replicas said their vote waits for (`Message::Waiting`), with who said it, and
    /// the ones already being finished because of it.
    waiting_on: BTreeMap<TxnId, BTreeSet<ReplicaId>>,
    chased: BTreeSet<TxnId>,
    started: u64,
    last_send: u64,
    log_shard: ShardId,
    /// Our ST2 once sent.
    st2: Option<ClientSigned<St2>>,
    st2_sent: u64,
    /// Latest verified ST2R of each replica of S_log.
    st2_replies: BTreeMap<u32, ReplicaSigned<St2Reply>>,
    /// When we last invoked the fallback, and how many times.
    fallback: Option<(u64, u32)>,
    deps_recovered: bool,
}

pub(super) struct Fetching {
    shard: ShardId,
    retry: Retry,
}

impl Coordinator {
    /// Starts ST1 (or RP, for someone else's transaction) for `meta`.
    pub(super) fn start_finishing(&mut self, now: u64, meta: TxnMeta, owner: Option<TxnHandle>) {
        let id = meta.id();
        if self.finishing.contains_key(&id) {
            return;
        }
        let Some(log_shard) = meta.log_shard(&id) else { return };
        let q = self.config().quorums();
        let tallies = meta.shards.iter().map(|s| (*s, ShardTally::new(*s, q))).collect();
        let prepare = sign_client(self.id, self.key.as_ref(), Prepare { meta: meta.clone() });
        let fin = Finishing {
            meta: Arc::new(meta),
            id,
            owner,
            prepare,
            tallies,
            unverified: BTreeSet::new(),
            blockers: BTreeMap::new(),
            waiting_on: BTreeMap::new(),
            chased: BTreeSet::new(),
            started: now,
            last_send: now,
            log_shard,
            st2: None,
            st2_sent: now,
            st2_replies: BTreeMap::new(),
            fallback: None,
            deps_recovered: false,
        };
        self.outputs.extend(prepare_messages(self.auth.config(), &fin));
        self.finishing.insert(id, fin);
    }

    // ---- Prepare, stage 1 (Basil §4.2) ----

    /// ST1R from replica `from`. Its `blocker` counts only from the named replica's own
    /// connection, so that no replica can vouch for a blocker in another's name.
    pub(super) fn on_vote(
        &mut self,
        now: u64,
        from: ReplicaId,
        vote: ReplicaSigned<St1Vote>,
        conflict: Option<ConflictProof>,
        blocker: Option<TxnId>,
    ) -> Result<(), RejectReason> {
        let Some(fin) = self.finishing.get(&vote.body.txn) else { return Ok(()) };
        if !fin.tallies.contains_key(&vote.signer.shard) || !self.auth.is_member(vote.signer) {
            return Err(RejectReason::NotMember);
        }
        let (meta, id) = (fin.meta.clone(), fin.id);
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
        if let Some(fin) = self.finishing.get_mut(&id) {
            let signer = vote.signer;
            let verified = conflict_cert.is_some();
            let abort = vote.body.vote == Vote::Abort;
            if let Some(tally) = fin.tallies.get_mut(&signer.shard) {
                if tally.add(vote, conflict_cert) {
                    if !verified {
                        fin.unverified.insert(signer);
                    }
                    if let Some(b) = blocker.filter(|b| abort && signer == from && *b != id) {
                        fin.blockers.entry(b).or_default().insert(signer);
                    }
                }
            }
        }
        self.progress(now, id);
        Ok(())
    }

    /// Replica `from` defers its vote on `txn` until `on` are decided. Counted per replica,
    /// from that replica's own connection; acted on in `tick_finishing`. At most
    /// `MAX_WAITING_HINT` names are kept per replica, so that one that keeps sending new ones
    /// can neither grow the state nor crowd out the others'.
    pub(super) fn on_waiting(&mut self, from: ReplicaId, txn: TxnId, on: Vec<TxnId>) {
        let Some(fin) = self.finishing.get_mut(&txn) else { return };
        if !fin.tallies.contains_key(&from.shard) {
            return;
        }
        let held = fin.waiting_on.values().filter(|by| by.contains(&from)).count();
        let mut room = pistou_wire::MAX_WAITING_HINT.saturating_sub(held);
        for dep in on.into_iter().take(pistou_wire::MAX_WAITING_HINT).filter(|d| *d != txn) {
            if fin.waiting_on.get(&dep).is_some_and(|by| by.contains(&from)) {
                continue;
            }
            if room == 0 {
                break;
            }
            room -= 1;
            fin.waiting_on.entry(dep).or_default().insert(from);
        }
    }

    /// Verifies every not-yet-verified vote in one batch and drops the bad ones. Returns
    /// whether any vote was dropped.
    fn verify_votes(&mut self, id: TxnId) -> bool {
        let Some(fin) = self.finishing.get_mut(&id) else { return false };
        if fin.unverified.is_empty() {
            return false;
        }
        let pending: Vec<ReplicaSigned<St1Vote>> = fin
            .tallies
            .values()
            .flat_map(|t| t.votes())
            .filter(|v| fin.unverified.contains(&v.signer))
            .cloned()
            .collect();
        fin.unverified.clear();
        let results = self.auth.check_replicas_each(&pending);
        let mut dropped = false;
        for (vote, result) in pending.iter().zip(results) {
            if let Err(e) = result {
                if let Some(t) = fin.tallies.get_mut(&vote.signer.shard) {
                    t.remove(vote.signer.index);
                }
                self.rejects.record(e.0);
                dropped = true;
            }
        }
        dropped
    }

    /// Moves a transaction forward as far as its replies allow.
    fn progress(&mut self, now: u64, id: TxnId) {
        // A logged decision (n−f matching ST2R) settles everything.
        if let Some(cert) = self.st2_certificate(id) {
            return self.decide(now, id, cert, false);
        }
        let Some(fin) = self.finishing.get(&id) else { return };
        let timed_out = now >= fin.started.saturating_add(self.timeouts.fast_path_us);
        let decisive = fin.tallies.values().any(|t| t.outcome(timed_out) != ShardOutcome::Pending);
        // Nothing is acted upon before every counted vote's signature is verified.
        if decisive && self.verify_votes(id) {
            return self.progress(now, id);
        }
        let Some(fin) = self.finishing.get(&id) else { return };
        let outcomes: Vec<(ShardId, ShardOutcome)> =
            fin.tallies.iter().map(|(s, t)| (*s, t.outcome(timed_out))).collect();
        if let Some((_, ShardOutcome::FastAbort(cert))) =
            outcomes.iter().find(|(_, o)| matches!(o, ShardOutcome::FastAbort(_)))
        {
            let cert = DecisionCert::Abort(cert.clone());
            return self.decide(now, id, cert, true);
        }
        if outcomes.iter().all(|(_, o)| *o == ShardOutcome::FastCommit) {
            let cert = CommitCert::Fast(fin.tallies.values().map(|t| t.commit_votes()).collect());
            return self.decide(now, id, DecisionCert::Commit(cert), true);
        }
        if fin.st2.is_some() {
            return;
        }
        let slow_abort = outcomes.iter().find(|(_, o)| *o == ShardOutcome::SlowAbort).map(|(s, _)| *s);
        let all_commit = outcomes.iter().all(|(_, o)| matches!(o, ShardOutcome::FastCommit | ShardOutcome::SlowCommit));
        let (decision, tallies) = match (slow_abort, all_commit) {
            (Some(s), _) => (Decision::Abort, vec![fin.tallies[&s].abort_votes()]),
            (None, true) => (Decision::Commit, fin.tallies.values().map(|t| t.commit_votes()).collect()),
            (None, false) => return,
        };
        // Stage 2: log the decision on S_log.
        let st2 = St2 { meta: (*fin.meta).clone(), decision, tallies, view: 0 };
        let st2 = sign_client(self.id, self.key.as_ref(), st2);
        if let Some(fin) = self.finishing.get_mut(&id) {
            fin.st2 = Some(st2);
            fin.st2_sent = now;
            let out = st2_messages(self.auth.config(), fin);
            self.outputs.extend(out);
        }
    }

    // ---- Prepare, stage 2 ----

    pub(super) fn on_st2_reply(&mut self, now: u64, reply: ReplicaSigned<St2Reply>) -> Result<(), RejectReason> {
        let id = reply.body.txn;
        let Some(fin) = self.finishing.get(&id) else { return Ok(()) };
        if reply.signer.shard != fin.log_shard {
            return Err(RejectReason::WrongShard);
        }
        self.auth.check_replica(&reply).map_err(|e| e.0)?;
        if let Some(fin) = self.finishing.get_mut(&id) {
            fin.st2_replies.insert(reply.signer.index, reply);
        }
        self.progress(now, id);
        self.maybe_invoke_fallback(now, id);
        Ok(())
    }

    /// n−f ST2R matching in decision and decision view form V-CERT_{S_log}.
    fn st2_certificate(&self, id: TxnId) -> Option<DecisionCert> {
        let fin = self.finishing.get(&id)?;
        let quorum = self.config().quorums().st2_quorum();
        let mut groups: BTreeMap<(bool, u64), Vec<ReplicaSigned<St2Reply>>> = BTreeMap::new();
        for r in fin.st2_replies.values() {
            groups.entry((r.body.decision == Decision::Commit, r.body.view_decision)).or_default().push(r.clone());
        }
        let ((commit, _), replies) = groups.into_iter().find(|(_, g)| g.len() >= quorum)?;
        Some(if commit {
            DecisionCert::Commit(CommitCert::Slow(replies))
        } else {
            DecisionCert::Abort(AbortCert::Slow(replies))
        })
    }

    // ---- Fallback (Basil §5, divergent case) ----

    /// Divergent ST2R: n−f replicas of S_log answered but no n−f of them match. Invoke the
    /// fallback, then again after an exponentially growing timeout while it lasts.
    fn maybe_invoke_fallback(&mut self, now: u64, id: TxnId) {
        let q = self.config().quorums();
        let base = self.timeouts.fallback_us;
        let Some(fin) = self.finishing.get_mut(&id) else { return };
        if fin.st2_replies.len() < q.st2_quorum() {
            return;
        }
        if let Some((at, round)) = fin.fallback {
            if now < at.saturating_add(base.saturating_mul(1 << round.min(16))) {
                return;
            }
        }
        let round = fin.fallback.map_or(0, |(_, r)| r + 1);
        fin.fallback = Some((now, round));
        let body = InvokeFb {
            meta: (*fin.meta).clone(),
            views: fin.st2_replies.values().cloned().collect(),
            proposal: fin.st2.as_ref().map(|s| s.body.clone()),
        };
        let req = sign_client(self.id, self.key.as_ref(), body);
        let log_shard = fin.log_shard;
        let targets: Vec<ReplicaId> = self.auth.config().replicas_of(log_shard).collect();
        for r in targets {
            self.outputs.push((r, Message::InvokeFb(req.clone())));
        }
    }

    // ---- Recovery of stalled dependencies (Basil §5, common case) ----

    /// RPR with a certificate: the transaction is decided already.
    pub(super) fn on_decided(&mut self, wb: Writeback) -> Result<(), RejectReason> {
        let id = wb.meta.id();
        let Some(fin) = self.finishing.get(&id) else { return Ok(()) };
        if *fin.meta != wb.meta {
            return Err(RejectReason::MalformedTxn);
        }
        match &wb.cert {
            DecisionCert::Commit(c) => self.auth.check_commit_cert(&wb.meta, c),
            DecisionCert::Abort(a) => self.auth.check_abort_cert(&wb.meta, a),
        }
        .map_err(|_| RejectReason::BadCertificate)?;
        let now = fin.started;
        self.decide(now, id, wb.cert, false);
        Ok(())
    }

    /// A fetched ST1 of a dependency: finish it.
    pub(super) fn on_txn_info(&mut self, now: u64, meta: TxnMeta) -> Result<(), RejectReason> {
        let id = meta.id();
        if self.fetching.remove(&id).is_none() {
            return Ok(());
        }
        meta.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
        if self.known_decision(&id).is_none() {
            self.recoveries += 1;
            self.start_finishing(now, meta, None);
        }
        Ok(())
    }

    /// Starts finishing the undecided dependencies of a stalled transaction.
    fn recover_dependencies(&mut self, now: u64, id: TxnId) {
        let Some(fin) = self.finishing.get_mut(&id) else { return };
        fin.deps_recovered = true;
        let meta = fin.meta.clone();
        self.recover(now, &meta);
    }

    /// Fetches (then finishes) every dependency of `meta` this client does not know decided.
    fn recover(&mut self, now: u64, meta: &TxnMeta) {
        let deps: Vec<(TxnId, ShardId)> =
            meta.deps.iter().map(|d| (d.txn, self.auth.config().shard_of(&d.key))).collect();
        for (dep, shard) in deps {
            self.fetch_to_finish(now, dep, shard);
        }
    }

    /// Fetches the ST1 of `txn` from `shard` (then finishes it), unless it is known decided,
    /// already in hand, or too many recoveries are running. False only in the last case.
    fn fetch_to_finish(&mut self, now: u64, txn: TxnId, shard: ShardId) -> bool {
        let busy = self.finishing.contains_key(&txn) || self.fetching.contains_key(&txn);
        if busy || self.known_decision(&txn).is_some() {
            return true;
        }
        if self.fetching.len() >= MAX_CONCURRENT_RECOVERIES {
            return false;
        }
        self.fetching.insert(txn, Fetching { shard, retry: Retry::sent_at(now) });
        let targets: Vec<ReplicaId> = self.config().replicas_of(shard).collect();
        for r in targets {
            self.outputs.push((r, Message::FetchTxn { txn }));
        }
        true
    }

    /// Our transaction aborted: the undecided transactions f+1 replicas of one shard blamed
    /// (so at least one correct replica has them prepared) are finished if they were blamed
    /// for an earlier abort too, at least `recovery_after_us` before. A healthy transaction
    /// is decided by then; one whose client crashed after ST1 would otherwise stay prepared
    /// and abort every later transaction that touches its rows (Basil §5).
    fn note_blockers(&mut self, now: u64, named: &BTreeMap<TxnId, BTreeSet<ReplicaId>>) {
        let f = self.config().f;
        let stall = self.timeouts.recovery_after_us;
        for (txn, by) in named {
            let Some(shard) = vouched_shard(by, f) else { continue };
            match self.blockers.get(txn) {
                Some((_, first)) if now >= first.saturating_add(stall) => {
                    self.blockers.remove(txn);
                    self.fetch_to_finish(now, *txn, shard);
                }
                Some(_) => {}
                None => {
                    if self.blockers.len() >= MAX_BLOCKERS {
                        let oldest = self.blockers.iter().min_by_key(|(_, (_, first))| *first).map(|(t, _)| *t);
                        if let Some(t) = oldest {
                            self.blockers.remove(&t);
                        }
                    }
                    self.blockers.insert(*txn, (shard, now));
                }
            }
        }
    }

    pub(super) fn tick_fetching(&mut self, now: u64) {
        let rt = self.timeouts.retransmit_us;
        let mut give_up = Vec::new();
        let mut out = Vec::new();
        for (id, f) in self.fetching.iter_mut() {
            match f.retry.step(now, rt, FETCH_ATTEMPTS - 1) {
                RetryStep::Wait => {}
                // Nobody has it: a fabricated dependency, which replicas reject anyway.
                RetryStep::GiveUp => give_up.push(*id),
                RetryStep::Resend => {
                    out.extend(self.auth.config().replicas_of(f.shard).map(|r| (r, Message::FetchTxn { txn: *id })))
                }
            }
        }
        self.outputs.extend(out);
        for id in give_up {
            self.fetching.remove(&id);
        }
    }

    pub(super) fn tick_finishing(&mut self, now: u64, id: TxnId) {
        let rt = self.timeouts.retransmit_us;
        let stall = self.timeouts.recovery_after_us;
        let Some(fin) = self.finishing.get_mut(&id) else { return };
        if now >= fin.last_send.saturating_add(rt) {
            // Resend ST1/RP to replicas that have not voted, and ST2 to S_log replicas that
            // have not answered it.
            fin.last_send = now;
            let mut out = prepare_messages(self.auth.config(), fin);
            if fin.st2.is_some() {
                out.extend(st2_messages(self.auth.config(), fin));
            }
            self.outputs.extend(out);
        }
        let late = now >= fin.started.saturating_add(stall);
        let stalled = late && !fin.deps_recovered && !fin.meta.deps.is_empty();
        // Transactions f+1 replicas of one shard wait for (so a correct replica has them).
        let f = self.auth.config().f;
        let waited: Vec<(TxnId, ShardId)> = if late {
            fin.waiting_on
                .iter()
                .filter(|(dep, _)| !fin.chased.contains(dep))
                .filter_map(|(dep, by)| vouched_shard(by, f).map(|s| (*dep, s)))
                .collect()
        } else {
            Vec::new()
        };
        self.progress(now, id);
        if stalled {
            self.recover_dependencies(now, id);
        }
        for (dep, shard) in waited {
            if self.fetch_to_finish(now, dep, shard) {
                if let Some(fin) = self.finishing.get_mut(&id) {
                    fin.chased.insert(dep);
                }
            }
        }
        self.maybe_invoke_fallback(now, id);
    }

    /// A one-line summary of a transaction being finished (for liveness diagnostics).
    pub(super) fn describe_finishing(&self, fin: &Finishing) -> String {
        let votes: Vec<String> = fin
            .tallies
            .iter()
            .map(|(s, t)| format!("s{}:{}c/{}a", s.0, t.commit_votes().votes.len(), t.abort_votes().votes.len()))
            .collect();
        let st2r: Vec<String> = fin
            .st2_replies
            .values()
            .map(|r| {
                format!("r{}:{:?}@{}/{}", r.signer.index, r.body.decision, r.body.view_decision, r.body.view_current)
            })
            .collect();
        format!(
            "{} own={} deps={} votes=[{}] st2_sent={} st2r=[{}] fallback={:?}",
            fin.id,
            fin.owner.is_some(),
            fin.meta.deps.len(),
            votes.join(" "),
            fin.st2.is_some(),
            st2r.join(" "),
            fin.fallback
        )
    }

    // ---- Writeback (Basil §4.3) ----

    pub(super) fn decide(&mut self, now: u64, id: TxnId, cert: DecisionCert, fast: bool) {
        let Some(fin) = self.finishing.remove(&id) else { return };
        let decision = cert.decision();
        self.remember_decided(id, decision);
        if let Some(h) = fin.owner {
            self.events.push_back(CoordinatorEvent::Decided { txn: h, id, decision, fast });
        }
        if decision == Decision::Abort {
            // Aborted, perhaps because replicas that never prepared a dependency voted abort
            // while the others waited for it: finish the dependencies, or a retry would read
            // the same stalled versions again (Basil §5: clients blocked *or aborted* by a
            // stalled transaction finish it).
            self.recover(now, &fin.meta);
            if fin.owner.is_some() {
                self.note_blockers(now, &fin.blockers);
            }
        }
        let wb = Writeback { meta: (*fin.meta).clone(), cert };
        #[cfg(feature = "fault-injection")]
        let reached = (self.config().quorums().n() as u32).saturating_sub(self.writeback_omissions as u32);
        #[cfg(not(feature = "fault-injection"))]
        let reached = self.config().quorums().n() as u32;
        let targets: BTreeSet<ReplicaId> =
            fin.meta.shards.iter().flat_map(|s| self.config().replicas_of(*s)).filter(|r| r.index < reached).collect();
        for r in &targets {
            self.outputs.push((*r, Message::Writeback(wb.clone())));
        }
        self.writebacks.insert(id, WritebackState { msg: wb, unacked: targets, retry: Retry::sent_at(now) });
    }
}

/// The shard of which at least f+1 replicas are in `by` (so a correct one among them), if any.
fn vouched_shard(by: &BTreeSet<ReplicaId>, f: usize) -> Option<ShardId> {
    let mut per_shard: BTreeMap<ShardId, usize> = BTreeMap::new();
    for r in by {
        *per_shard.entry(r.shard).or_default() += 1;
    }
    per_shard.into_iter().find(|(_, n)| *n > f).map(|(s, _)| s)
}

/// ST1 (or RP) to every replica of T's shards that has not voted yet.
fn prepare_messages(config: &pistou_core::ClusterConfig, fin: &Finishing) -> Vec<(ReplicaId, Message)> {
    fin.tallies
        .iter()
        .flat_map(|(shard, tally)| config.replicas_of(*shard).filter(|r| !tally.has_voted(r.index)))
        .map(|r| (r, Message::Prepare(fin.prepare.clone())))
        .collect()
}

/// ST2 to every replica of S_log that has not answered yet.
fn st2_messages(config: &pistou_core::ClusterConfig, fin: &Finishing) -> Vec<(ReplicaId, Message)> {
    let Some(st2) = &fin.st2 else { return Vec::new() };
    config
        .replicas_of(fin.log_shard)
        .filter(|r| !fin.st2_replies.contains_key(&r.index))
        .map(|r| (r, Message::Decide(st2.clone())))
        .collect()
}
