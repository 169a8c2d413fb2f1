//! The replica side of Basil's fallback (§5, divergent case; Appendix B.3–B.4).
//!
//! A client that sees non-matching ST2R on S_log sends InvokeFB with the signed current views
//! it received. Each replica of S_log adopts a view by the 3f+1 / f+1 rules (with vote
//! subsumption), then sends ELECTFB ⟨id_T, decision, view⟩ to the fallback leader of that view,
//! replica (view + id_T) mod n. A leader with 4f+1 ELECTFB of one view proposes their majority
//! decision in DECFB, with the ELECTFB as proof. Replicas adopt it unless they are already in a
//! newer view and tell interested clients with ST2R.

use crate::log::LogEntry;
use crate::rejects::RejectReason;
use crate::replica::{Dest, Peer, PendingReply, Replica};
use pistou_core::{ReplicaId, TxnId};
use pistou_wire::{ClientSigned, DecFb, Decision, ElectFb, InvokeFb, Message, ReplicaSigned, St2Reply};
use std::collections::{BTreeMap, HashMap};

/// Views a leader keeps ELECTFB for, per transaction; older ones are dropped, so a Byzantine
/// replica cannot grow a leader's memory by electing it in many views.
const MAX_ELECTION_VIEWS: usize = 4;

/// ELECTFB received as fallback leader: transaction → view → sender index → message.
#[derive(Default)]
pub(crate) struct Elections {
    by_txn: HashMap<TxnId, BTreeMap<u64, BTreeMap<u32, ReplicaSigned<ElectFb>>>>,
    /// (transaction, view) for which we already proposed: a correct leader proposes once.
    proposed: HashMap<TxnId, u64>,
}

impl Elections {
    /// Drops what a leader holds for `txn` (its record was garbage-collected).
    pub(crate) fn forget(&mut self, txn: &TxnId) {
        self.by_txn.remove(txn);
        self.proposed.remove(txn);
    }
}

/// The view a replica in `current` adopts from the current views of other replicas (one per
/// replica), Basil §5 step 2 and B.4: (i) a view held by 3f+1 moves to the next view; (ii) a
/// newer view held by f+1 is caught up to. A view v also counts for every v' ≤ v (vote
/// subsumption). The paper applies (ii) only when (i) does not; we take the larger of the
/// two, so a replica never starts an election in a view that f+1 replicas (one correct) have
/// already left (B.4's catch-up argument). Views only matter for liveness (B.3). Rule (i)
/// starts an election, which the exponential view timeout may not allow yet
/// (`may_start_election`); rule (ii) is always allowed.
pub fn adopt_view(current: u64, views: &[u64], f: usize, may_start_election: bool) -> u64 {
    let q = pistou_core::Quorums::new(f);
    let held_by = |v: u64| views.iter().filter(|&&x| x >= v).count();
    let mut candidates: Vec<u64> = views.to_vec();
    candidates.sort_unstable();
    candidates.dedup();
    let election = candidates
        .iter()
        .rev()
        .find(|&&v| held_by(v) >= q.view_election())
        .map(|v| v + 1)
        .filter(|_| may_start_election)
        .unwrap_or(current);
    let catch_up = candidates.iter().rev().find(|&&v| held_by(v) >= q.view_catch_up()).copied().unwrap_or(current);
    current.max(election).max(catch_up)
}

/// The fallback leader of `view` for transaction `txn` among n replicas.
pub fn fallback_leader(txn: &TxnId, view: u64, n: usize) -> u32 {
    ((view.wrapping_add(txn.as_u64())) % n as u64) as u32
}

fn majority(proofs: &[ReplicaSigned<ElectFb>]) -> Decision {
    let commits = proofs.iter().filter(|p| p.body.decision == Decision::Commit).count();
    if 2 * commits > proofs.len() {
        Decision::Commit
    } else {
        Decision::Abort
    }
}

impl Replica {
    fn view_timeout(&self, view: u64) -> u64 {
        self.view_timeout_base_us.saturating_mul(1u64 << view.min(20))
    }

    pub(crate) fn on_invoke_fb(
        &mut self,
        now: u64,
        from: Peer,
        req: ClientSigned<InvokeFb>,
    ) -> Result<(), RejectReason> {
        self.auth.check_client(&req).map_err(|e| e.0)?;
        let InvokeFb { meta, views, proposal } = req.body;
        meta.validate(self.auth.config()).map_err(|_| RejectReason::MalformedTxn)?;
        let id = meta.id();
        if meta.log_shard(&id) != Some(self.id.shard) {
            return Err(RejectReason::WrongShard);
        }
        if self.answer_if_decided(from, &id) {
            return Ok(());
        }
        // A replica sends ELECTFB only once it has logged a decision (B.3): log the client's
        // justified proposal if we have none.
        let logged = self.txns.get(&id).is_some_and(|r| r.st2.is_some());
        if !logged {
            match proposal {
                Some(st2) if st2.meta == meta && st2.view == 0 => self.log_st2(from, &id, &st2)?,
                _ => return Err(RejectReason::BadTally),
            }
        }
        // Current views of distinct S_log replicas, each signed.
        let n = self.auth.config().quorums().n();
        if views.len() > n {
            return Err(RejectReason::BadTally);
        }
        let mut by_signer: BTreeMap<u32, u64> = BTreeMap::new();
        for v in &views {
            if v.signer.shard != self.id.shard || v.body.txn != id {
                return Err(RejectReason::BadTally);
            }
            let e = by_signer.entry(v.signer.index).or_insert(v.body.view_current);
            *e = (*e).max(v.body.view_current);
        }
        self.auth.check_replicas(&views).map_err(|e| e.0)?;
        let seen: Vec<u64> = by_signer.into_values().collect();
        let f = self.auth.config().f;
        let (current, since) = match self.txns.get(&id) {
            Some(r) => (r.view_current, r.view_since),
            None => return Ok(()),
        };
        // Exponential timeouts: a new election waits until the current view has lasted
        // base × 2^view (view 0 is the clients' own, with no leader to wait for).
        let may_start_election = current == 0 || now >= since.saturating_add(self.view_timeout(current));
        let target = adopt_view(current, &seen, f, may_start_election);
        let Some(rec) = self.txns.get_mut(&id) else { return Ok(()) };
        rec.interested.insert(from);
        if target > rec.view_current {
            rec.view_current = target;
            rec.view_since = now;
            self.log.append(LogEntry::View { txn: id, view: target });
        }
        let view = rec.view_current;
        let decision = rec.st2.map(|(d, _)| d);
        let view_decision = rec.st2.map_or(0, |(_, v)| v);
        // Tell the client where we are now.
        if let Some(d) = decision {
            let reply = St2Reply { txn: id, decision: d, view_decision, view_current: view };
            self.pending.push((Dest::Client(from), PendingReply::St2(reply)));
        }
        if view > 0 && rec.elected_in.is_none_or(|v| v < view) {
            if let Some(d) = decision {
                rec.elected_in = Some(view);
                let leader = ReplicaId { shard: self.id.shard, index: fallback_leader(&id, view, n) };
                self.pending
                    .push((Dest::Replica(leader), PendingReply::ElectFb(ElectFb { txn: id, decision: d, view })));
            }
        }
        Ok(())
    }

    /// A transaction's fallback state at this replica, for liveness diagnostics.
    pub fn describe_fallback(&self, txn: &TxnId) -> String {
        let Some(rec) = self.txns.get(txn) else { return format!("{}: unknown", self.id) };
        let elections: Vec<String> = self
            .elections
            .by_txn
            .get(txn)
            .map(|v| v.iter().map(|(view, votes)| format!("v{view}:{}", votes.len())).collect())
            .unwrap_or_default();
        format!(
            "{}: st2={:?} view={} since={} elected_in={:?} leader_of={:?} proposed={:?}",
            self.id,
            rec.st2,
            rec.view_current,
            rec.view_since,
            rec.elected_in,
            elections,
            self.elections.proposed.get(txn)
        )
    }

    /// ELECTFB at the would-be fallback leader.
    pub(crate) fn on_elect_fb(&mut self, from: ReplicaId, e: ReplicaSigned<ElectFb>) -> Result<(), RejectReason> {
        let n = self.auth.config().quorums().n();
        if e.signer != from || e.signer.shard != self.id.shard || e.body.view == 0 {
            return Err(RejectReason::NotMember);
        }
        if fallback_leader(&e.body.txn, e.body.view, n) != self.id.index {
            return Err(RejectReason::Unexpected);
        }
        // Only for transactions we know (InvokeFB brings the metadata to every replica of
        // S_log), so invented ids cannot grow a leader's memory.
        if !self.txns.contains_key(&e.body.txn) {
            return Err(RejectReason::Unexpected);
        }
        self.auth.check_replica(&e).map_err(|err| err.0)?;
        let (txn, view) = (e.body.txn, e.body.view);
        if self.elections.proposed.get(&txn).is_some_and(|&v| v >= view) {
            return Ok(());
        }
        let views = self.elections.by_txn.entry(txn).or_default();
        views.entry(view).or_default().insert(e.signer.index, e);
        while views.len() > MAX_ELECTION_VIEWS {
            views.pop_first();
        }
        let quorum = self.auth.config().quorums().election();
        let Some(votes) = views.get(&view) else { return Ok(()) };
        if votes.len() < quorum {
            return Ok(());
        }
        // Elected: propose the majority decision of exactly 4f+1 ELECTFB.
        let proofs: Vec<ReplicaSigned<ElectFb>> = votes.values().take(quorum).cloned().collect();
        let decision = majority(&proofs);
        self.elections.proposed.insert(txn, view);
        self.elections.by_txn.remove(&txn);
        let dec = DecFb { txn, decision, view, proofs };
        for r in self.auth.config().replicas_of(self.id.shard).collect::<Vec<_>>() {
            if r != self.id {
                self.replica_outputs.push((r, Message::DecFb(dec.clone())));
            }
        }
        self.on_dec_fb_checked(&dec);
        Ok(())
    }

    /// DECFB: adopt the leader's decision unless we are in a newer view.
    pub(crate) fn on_dec_fb(&mut self, _now: u64, d: DecFb) -> Result<(), RejectReason> {
        let q = self.auth.config().quorums();
        let n = q.n();
        if d.proofs.len() != q.election() || d.view == 0 {
            return Err(RejectReason::BadCertificate);
        }
        let mut signers = std::collections::BTreeSet::new();
        for p in &d.proofs {
            let ok = p.signer.shard == self.id.shard
                && (p.signer.index as usize) < n
                && signers.insert(p.signer.index)
                && p.body.txn == d.txn
                && p.body.view == d.view;
            if !ok {
                return Err(RejectReason::BadCertificate);
            }
        }
        if majority(&d.proofs) != d.decision {
            return Err(RejectReason::BadCertificate);
        }
        self.auth.check_replicas(&d.proofs).map_err(|_| RejectReason::BadCertificate)?;
        self.on_dec_fb_checked(&d);
        Ok(())
    }

    fn on_dec_fb_checked(&mut self, d: &DecFb) {
        let Some(rec) = self.txns.get_mut(&d.txn) else { return };
        if rec.view_current > d.view || rec.cert().is_some() {
            return;
        }
        rec.view_current = d.view;
        rec.st2 = Some((d.decision, d.view));
        self.log.append(LogEntry::Decision { txn: d.txn, meta: rec.meta.clone(), decision: d.decision, view: d.view });
        self.stats.fallback_adoptions += 1;
        let reply = St2Reply { txn: d.txn, decision: d.decision, view_decision: d.view, view_current: d.view };
        let peers: Vec<Peer> = rec.interested.iter().copied().collect();
        for p in peers {
            self.pending.push((Dest::Client(p), PendingReply::St2(reply.clone())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_rules_with_vote_subsumption() {
        // f = 1: 3f+1 = 4, f+1 = 2.
        // Four replicas in view 0: move to view 1.
        assert_eq!(adopt_view(0, &[0, 0, 0, 0, 0], 1, true), 1);
        // Views 2,2,1,1: view 1 is held by 4 (subsumption) -> 2; view 2 by only 2.
        assert_eq!(adopt_view(0, &[2, 2, 1, 1], 1, true), 2);
        // Three in view 3: only view 0 is held by 3f+1 (-> 1), but f+1 hold 3 -> 3.
        assert_eq!(adopt_view(0, &[3, 3, 3, 0], 1, true), 3);
        // A single (possibly lying) replica in view 9 moves nobody.
        assert_eq!(adopt_view(0, &[9, 0, 0], 1, true), 0);
        // Never go backwards.
        assert_eq!(adopt_view(5, &[0, 0, 0, 0], 1, true), 5);
        // 3f+1 in view 5 with current 5 -> 6, but only once view 5's timeout expired...
        assert_eq!(adopt_view(5, &[5, 5, 5, 5], 1, true), 6);
        assert_eq!(adopt_view(5, &[5, 5, 5, 5], 1, false), 5);
        // ...while catching up to a view f+1 already hold is always allowed.
        assert_eq!(adopt_view(1, &[4, 4, 1, 1], 1, false), 4);
    }

    #[test]
    fn leaders_rotate_round_robin_per_transaction() {
        let t = TxnId([3; 32]);
        let leaders: std::collections::BTreeSet<u32> = (1..=6).map(|v| fallback_leader(&t, v, 6)).collect();
        assert_eq!(leaders.len(), 6, "f+1 consecutive views reach f+1 distinct leaders");
    }

    #[test]
    fn majority_of_4f_plus_1() {
        let e = |d| ReplicaSigned {
            signer: ReplicaId { shard: pistou_core::ShardId(0), index: 0 },
            body: ElectFb { txn: TxnId([0; 32]), decision: d, view: 1 },
            sig: None,
        };
        let v =
            vec![e(Decision::Commit), e(Decision::Commit), e(Decision::Commit), e(Decision::Abort), e(Decision::Abort)];
        assert_eq!(majority(&v), Decision::Commit);
        let v =
            vec![e(Decision::Commit), e(Decision::Commit), e(Decision::Abort), e(Decision::Abort), e(Decision::Abort)];
        assert_eq!(majority(&v), Decision::Abort);
    }
}
