//! Catch-up (issue 27): a replica that restarted from its log learns the commits it missed
//! while it was down from the other replicas of its shard, before it answers reads or votes
//! again. A replica that was cut off (it heard from no client for longer than clients
//! resend writebacks, `storage.catch_up_after_silence_us`) does the same for the commits
//! with timestamps since shortly before the silence, while it keeps serving.
//!
//! Garbage collection keeps, for every key, the record of the writer of its newest committed
//! version below the watermark and every record above it, each with its commit certificate
//! (gc.rs). A replica's committed state is therefore a set of self-certifying pairs (metadata,
//! certificate). The replica asks each peer for the ids of its pairs in (timestamp, id) order
//! (`Replica::committed_order`), a bounded page at a time (`CatchUp` → `CatchUpPage`), then
//! fetches only the commits it lacks (`CatchUpFetch` → `CatchUpCommits`): a replica that was
//! cut off for a few seconds, or restarted from its log, already has nearly all of them, and
//! shipping every full commit of the window from every peer once cost more than the
//! workload (docs/benchmarks.md, "Replica memory while loading"). It checks every
//! certificate as it checks a writeback, and applies what it lacks, below its watermark too:
//! the certificate proves the commit, and a version older than the key's newest only joins
//! its history.
//!
//! A Byzantine peer cannot forge a pair, only omit some or stop answering. The replica stays
//! out of reads and ST1 (`RejectReason::CatchingUp`) until n − 1 − f peers have sent their
//! last page: at least 3f of those are correct, so the union holds every commit that reached
//! a correct replica that answered. Writebacks and ST2 are handled meanwhile; they need no
//! history. docs/architecture.md ("Storage") has the argument.

use crate::rejects::RejectReason;
use crate::replica::{Replica, Status};
use pistou_core::{ReplicaId, Timestamp, TxnId};
use pistou_wire::{
    DecisionCert, Message, TxnMeta, Writeback, CATCH_UP_PAGE_BYTES, MAX_CATCH_UP_IDS, MAX_CATCH_UP_PAGE,
};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// How long to wait for a page before asking the peer again (µs).
const RETRY_US: u64 = 500_000;

/// The requesting side's state.
#[derive(Default)]
pub(crate) struct CatchUp {
    /// Catching up after a restart: reads and ST1 are refused.
    pub(crate) active: bool,
    /// Catching up after a silence (`heard_from_client`): the replica keeps serving, as any
    /// correct replica that a writeback has not reached yet does.
    background: bool,
    /// Peers still sending, with what was last asked of each.
    asking: BTreeMap<ReplicaId, Step>,
    /// Peers that sent their last page.
    done: BTreeSet<ReplicaId>,
    /// When the pending requests were last sent, and when catching up started (local µs).
    asked_at: u64,
    started_at: u64,
    /// When a client was last heard from (local µs).
    heard_at: Option<u64>,
    /// Commits learnt by catching up, since the replica started and before this catch-up.
    applied: u64,
    applied_before: u64,
    /// Catch-ups started after a silence.
    after_silence: u64,
}

/// Where catching up from one peer stands.
#[derive(Clone, Debug)]
enum Step {
    /// Asked for the page of ids after this cursor.
    Ids(Option<(Timestamp, TxnId)>),
    /// Fetching the commits of `wanted` (listed by the peer, lacking here), in timestamp
    /// order, then the page of ids after `next` (the last page if `None`).
    Fetch { wanted: BTreeSet<(Timestamp, TxnId)>, next: Option<(Timestamp, TxnId)> },
}

impl Step {
    fn request(&self) -> Message {
        match self {
            Step::Ids(after) => Message::CatchUp { after: *after },
            Step::Fetch { wanted, .. } => {
                Message::CatchUpFetch { ids: wanted.iter().take(MAX_CATCH_UP_PAGE).map(|&(_, id)| id).collect() }
            }
        }
    }
}

/// A cheap upper estimate of a transaction's encoded size, to bound pages.
fn estimated_bytes(meta: &TxnMeta) -> usize {
    let writes: usize = meta.write_set.iter().map(|w| 16 + w.key.len() + w.value.as_ref().map_or(0, Vec::len)).sum();
    let reads: usize = meta.read_set.iter().map(|r| 32 + r.key.len()).sum();
    let predicates: usize =
        meta.predicates.iter().map(|p| 256 + p.active.iter().map(|k| 8 + k.len()).sum::<usize>()).sum();
    // Metadata, dependencies and a certificate of n signed votes.
    512 + writes + reads + predicates + meta.deps.len() * 96
}

impl Replica {
    /// Starts catching up (called once, right after `recover`): asks every other replica of
    /// the shard for all its committed transactions, and refuses reads and ST1 until enough
    /// have answered.
    pub fn start_catch_up(&mut self, now: u64) {
        self.begin_catch_up(now, None, true);
    }

    /// Every message from a client: after a silence longer than
    /// `storage.catch_up_after_silence_us`, this replica may have been cut off while clients
    /// gave up resending writebacks to it, so it asks its peers for the commits it may have
    /// missed. Those have timestamps from `max_txn_age_us` + δ before the silence on (an
    /// older transaction is refused by every correct replica), so only those are asked for.
    pub(crate) fn heard_from_client(&mut self, now: u64) {
        let Some(last) = self.catch_up.heard_at.replace(now) else { return };
        let silence = self.config().storage.catch_up_after_silence_us;
        if now > last.saturating_add(silence) && !self.catch_up_running() {
            let config = self.config();
            let from = last.saturating_sub(config.max_txn_age_us.saturating_add(config.delta_us));
            self.catch_up.after_silence += 1;
            tracing::debug!(replica = %self.id, silence_ms = (now - last) / 1_000, "no client heard from: catching up");
            self.begin_catch_up(now, Some((Timestamp::at(from), TxnId([0; 32]))), false);
        }
    }

    fn begin_catch_up(&mut self, now: u64, after: Option<(Timestamp, TxnId)>, blocking: bool) {
        let me = self.id;
        let peers: Vec<ReplicaId> = (0..self.config().quorums().n() as u32)
            .map(|index| ReplicaId { shard: me.shard, index })
            .filter(|r| *r != me)
            .collect();
        let c = &mut self.catch_up;
        c.active = blocking;
        c.background = !blocking;
        c.asking = peers.iter().map(|p| (*p, Step::Ids(after))).collect();
        c.done.clear();
        c.started_at = now;
        c.applied_before = c.applied;
        self.ask_for_pages(now);
    }

    /// True while this replica refuses reads and ST1 because it is catching up.
    pub fn catching_up(&self) -> bool {
        self.catch_up.active
    }

    /// True while this replica is catching up, either way (restart or silence).
    pub fn catch_up_running(&self) -> bool {
        self.catch_up.active || self.catch_up.background
    }

    /// Commits learnt by catching up so far.
    pub fn caught_up_commits(&self) -> u64 {
        self.catch_up.applied
    }

    /// Catch-ups started after a silence from clients so far.
    pub fn catch_ups_after_silence(&self) -> u64 {
        self.catch_up.after_silence
    }

    fn ask_for_pages(&mut self, now: u64) {
        self.catch_up.asked_at = now;
        for (peer, step) in &self.catch_up.asking {
            self.replica_outputs.push((*peer, step.request()));
        }
    }

    /// Periodic: asks again the peers whose page has not come (lost, or the peer was down).
    pub(crate) fn catch_up_tick(&mut self, now: u64) {
        if self.catch_up_running() && now >= self.catch_up.asked_at.saturating_add(RETRY_US) {
            self.ask_for_pages(now);
        }
    }

    /// A peer asks for the ids of the committed transactions after `after`: one page, in
    /// order.
    pub(crate) fn on_catch_up(
        &mut self,
        from: ReplicaId,
        after: Option<(Timestamp, TxnId)>,
    ) -> Result<(), RejectReason> {
        if from.shard != self.id.shard || from == self.id {
            return Err(RejectReason::WrongShard);
        }
        let from_cursor = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        let mut ids = Vec::new();
        let mut next = None;
        for &key in self.committed_order.range((from_cursor, Bound::Unbounded)) {
            if self.txns.get(&key.1).is_none_or(|rec| rec.cert().is_none()) {
                continue;
            }
            if ids.len() == MAX_CATCH_UP_IDS {
                next = ids.last().copied(); // more remain: the next page starts after the last one sent
                break;
            }
            ids.push(key);
        }
        self.replica_outputs.push((from, Message::CatchUpPage { ids, next }));
        Ok(())
    }

    /// A page of ids from a peer: the ones not committed (or aborted) here are fetched, then
    /// the next page is asked for.
    pub(crate) fn on_catch_up_page(
        &mut self,
        now: u64,
        from: ReplicaId,
        ids: Vec<(Timestamp, TxnId)>,
        next: Option<(Timestamp, TxnId)>,
    ) -> Result<(), RejectReason> {
        let cursor = match self.catch_up.asking.get(&from) {
            Some(Step::Ids(cursor)) => *cursor,
            // Not asked, already done, or an answer to an earlier request crossing a retry.
            _ => return Err(RejectReason::Unexpected),
        };
        if ids.len() > MAX_CATCH_UP_IDS || (next.is_some() && ids.is_empty()) {
            return Err(RejectReason::Misbehavior);
        }
        // In order, after the cursor asked for; a page answering an older request (a
        // retransmission crossed a reply) starts at or before the cursor and is ignored.
        if ids.first().is_some_and(|first| cursor.is_some_and(|c| *first <= c)) {
            return Ok(());
        }
        if ids.windows(2).any(|w| w[0] >= w[1]) || next.is_some_and(|n| ids.last() != Some(&n)) {
            return Err(RejectReason::Misbehavior);
        }
        let wanted: BTreeSet<(Timestamp, TxnId)> = ids.into_iter().filter(|(_, id)| !self.decided_here(id)).collect();
        self.catch_up_step(now, from, Step::Fetch { wanted, next });
        Ok(())
    }

    /// A peer asks for the commits of `ids`: those it holds, in the order asked, bounded.
    pub(crate) fn on_catch_up_fetch(&mut self, from: ReplicaId, ids: Vec<TxnId>) -> Result<(), RejectReason> {
        if from.shard != self.id.shard || from == self.id {
            return Err(RejectReason::WrongShard);
        }
        if ids.len() > MAX_CATCH_UP_PAGE {
            return Err(RejectReason::Misbehavior);
        }
        let mut commits = Vec::new();
        let mut bytes = 0;
        for id in ids {
            if !commits.is_empty() && bytes >= CATCH_UP_PAGE_BYTES {
                break; // the asker fetches the rest again
            }
            let Some(rec) = self.txns.get(&id) else { continue };
            let Some(cert) = rec.cert() else { continue };
            bytes += estimated_bytes(&rec.meta);
            commits.push(Writeback { meta: (*rec.meta).clone(), cert });
        }
        self.replica_outputs.push((from, Message::CatchUpCommits { commits }));
        Ok(())
    }

    /// Commits fetched from a peer: every certificate checked, the missing ones applied. An
    /// empty answer ends the fetch (the peer lacks them, or withholds them: the other peers
    /// cover for it); one with none of the commits still wanted answered an earlier request
    /// (a retry crossed it) and changes nothing.
    pub(crate) fn on_catch_up_commits(
        &mut self,
        now: u64,
        from: ReplicaId,
        commits: Vec<Writeback>,
    ) -> Result<(), RejectReason> {
        let Some(Step::Fetch { mut wanted, next }) = self.catch_up.asking.get(&from).cloned() else {
            return Err(RejectReason::Unexpected);
        };
        if commits.len() > MAX_CATCH_UP_PAGE {
            return Err(RejectReason::Misbehavior);
        }
        let mut progress = false;
        let empty = commits.is_empty();
        for wb in commits {
            if !matches!(wb.cert, DecisionCert::Commit(_)) {
                return Err(RejectReason::Misbehavior);
            }
            let id = wb.meta.id();
            progress |= wanted.remove(&(wb.meta.ts, id));
            self.apply_caught_up(id, wb)?;
        }
        if empty {
            wanted.clear();
        } else if !progress {
            return Ok(());
        }
        self.catch_up_step(now, from, Step::Fetch { wanted, next });
        Ok(())
    }

    /// Moves catching up from `from` on: fetch what is still wanted, else ask for the next
    /// page of ids, else that peer is done.
    fn catch_up_step(&mut self, now: u64, from: ReplicaId, step: Step) {
        let step = match step {
            Step::Fetch { wanted, next } if wanted.is_empty() => match next {
                Some(n) => Step::Ids(Some(n)),
                None => {
                    self.catch_up.asking.remove(&from);
                    self.catch_up.done.insert(from);
                    self.finish_catch_up_if_enough(now);
                    return;
                }
            },
            step => step,
        };
        self.replica_outputs.push((from, step.request()));
        self.catch_up.asking.insert(from, step);
    }

    /// True if this replica has T's decision (commit or abort): catching up skips it.
    fn decided_here(&self, id: &TxnId) -> bool {
        self.txns.get(id).is_some_and(|r| matches!(r.status, Status::Committed(_) | Status::Aborted(_)))
    }

    /// Applies a certified commit this replica lacks, whatever the watermark.
    /// `id` is `wb.meta.id()`, hashed once by the caller.
    fn apply_caught_up(&mut self, id: TxnId, wb: Writeback) -> Result<(), RejectReason> {
        if self.decided_here(&id) {
            return Ok(());
        }
        wb.meta.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
        if !wb.meta.shards.contains(&self.id.shard) {
            return Err(RejectReason::WrongShard);
        }
        let DecisionCert::Commit(cert) = wb.cert else { return Err(RejectReason::Misbehavior) };
        self.auth.check_commit_cert(&wb.meta, &cert).map_err(|_| RejectReason::BadCertificate)?;
        self.apply_commit(id, wb.meta, cert);
        self.catch_up.applied += 1;
        self.snapshot_progress(&id);
        Ok(())
    }

    /// Peers that have not finished may still send pages, which are applied; they are no
    /// longer asked again.
    fn finish_catch_up_if_enough(&mut self, now: u64) {
        let needed = self.config().quorums().n() - 1 - self.config().f;
        if self.catch_up_running() && self.catch_up.done.len() >= needed {
            let ms = now.saturating_sub(self.catch_up.started_at) / 1_000;
            let commits = self.catch_up.applied - self.catch_up.applied_before;
            let peers = self.catch_up.done.len();
            if commits > 0 || !self.catch_up.background {
                tracing::info!(replica = %self.id, commits, peers, ms, "caught up");
            }
            self.catch_up.active = false;
            self.catch_up.background = false;
        }
    }
}
