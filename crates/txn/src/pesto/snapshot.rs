//! The snapshot path at a replica (Pesto §5.5 steps 5, 5.A, 5.B).
//!
//! A RANGE-READ carrying an SS-PROP runs only once every transaction the proposal names is
//! *applied* here: committed or aborted. Missing ones are fetched with SYNC from replicas
//! that voted for them; a peer answers with SUPPLY, the transaction with its decision
//! certificate, which this replica verifies and applies exactly like a writeback. The query
//! meanwhile waits here ("parked").
//!
//! Execution then reads the freshest committed version, which includes every committed
//! transaction of the proposal and may be fresher still (the paper's preference for fresher
//! committed versions). Because range reads see committed versions only (see
//! `range_read.rs`), correct replicas vote only for committed transactions, and a SUPPLY
//! always carries a certificate; a peer that has the transaction only prepared does not
//! answer (the paper's "visible only to this query" case cannot arise).
//!
//! Hostile proposals only hurt their own query: a fabricated transaction is never supplied,
//! so the query stays parked until it expires. Parked queries are bounded per client and in
//! total, and expire after `PARK_TIMEOUT_US`.

use crate::rejects::RejectReason;
use crate::replica::{Peer, Replica, Status};
use pistou_core::{ClientId, ReplicaId, TxnId};
use pistou_crypto::Hash;
use pistou_wire::{ClientSigned, Message, RangeRead, Signable, SsEntry, Writeback};
use std::collections::{BTreeMap, BTreeSet};

/// Queries one client may have parked at a replica.
pub(crate) const MAX_PARKED_PER_CLIENT: usize = 16;
/// Queries parked at a replica in all.
pub(crate) const MAX_PARKED: usize = 1_024;
/// A parked query not runnable after this long is dropped (its client retries or gives up).
pub(crate) const PARK_TIMEOUT_US: u64 = 2_000_000;
/// A SYNC unanswered for this long goes to every voter, not just the first f+1.
pub(crate) const SYNC_RETRY_US: u64 = 50_000;

struct Parked {
    from: Peer,
    req: ClientSigned<RangeRead>,
    missing: BTreeSet<TxnId>,
    since: u64,
}

/// Where the replica is in fetching one transaction.
struct Fetch {
    voters: Vec<u32>,
    asked_at: u64,
    asked_all: bool,
}

/// Parked snapshot queries and the SYNCs in flight for them.
#[derive(Default)]
pub(crate) struct Snapshots {
    /// By the request's signing hash: a retransmitted request replaces its copy.
    parked: BTreeMap<Hash, Parked>,
    /// Ordered: `snapshot_tick` sends SYNCs in this order, and outputs must not depend on
    /// hash order (determinism of the simulator).
    fetching: BTreeMap<TxnId, Fetch>,
}

impl Snapshots {
    fn parked_by(&self, client: ClientId) -> usize {
        self.parked.values().filter(|p| p.req.client == client).count()
    }
}

impl Replica {
    /// Snapshot queries parked here, waiting for SYNCed transactions (tests, monitoring).
    pub fn parked_queries(&self) -> usize {
        self.snapshots.parked.len()
    }

    fn applied(&self, txn: &TxnId) -> bool {
        self.txns.get(txn).is_some_and(|r| matches!(r.status, Status::Committed(_) | Status::Aborted(_)))
            && !self.awaits_catalog(txn)
    }

    /// §5.5 step 5 for a verified RANGE-READ with an SS-PROP: run it if every proposed
    /// transaction is applied here, else fetch the missing ones and park it.
    pub(crate) fn on_snapshot_read(
        &mut self,
        now: u64,
        from: Peer,
        req: ClientSigned<RangeRead>,
    ) -> Result<(), RejectReason> {
        let Some(prop) = &req.body.snapshot else { return Err(RejectReason::Unexpected) };
        let q = self.auth.config().quorums();
        prop.validate(self.auth.config().f, q.n()).map_err(|_| RejectReason::BadSnapshot)?;
        let missing: Vec<&SsEntry> = prop.txns.iter().filter(|e| !self.applied(&e.txn)).collect();
        if missing.is_empty() {
            self.execute_range(from, &req);
            return Ok(());
        }
        let key = req.body.signing_hash();
        let known = self.snapshots.parked.contains_key(&key);
        if !known
            && (self.snapshots.parked.len() >= MAX_PARKED
                || self.snapshots.parked_by(req.client) >= MAX_PARKED_PER_CLIENT)
        {
            return Err(RejectReason::TooManyParked);
        }
        let me = self.id;
        let ask = self.auth.config().quorums().one_correct();
        let mut syncs = Vec::new();
        for e in &missing {
            if self.snapshots.fetching.contains_key(&e.txn) {
                continue;
            }
            // f+1 voters include a correct one, which has the transaction (§5.5 step 5).
            let voters: Vec<u32> = e.voters.iter().copied().filter(|v| *v != me.index).collect();
            let first = voters
                .iter()
                .take(ask)
                .map(|v| (ReplicaId { shard: me.shard, index: *v }, Message::Sync { txn: e.txn }));
            syncs.extend(first);
            self.snapshots.fetching.insert(e.txn, Fetch { voters, asked_at: now, asked_all: false });
        }
        self.replica_outputs.extend(syncs);
        let missing = missing.iter().map(|e| e.txn).collect();
        let since = self.snapshots.parked.get(&key).map_or(now, |p| p.since);
        self.snapshots.parked.insert(key, Parked { from, req, missing, since });
        Ok(())
    }

    /// SYNC from a peer (§5.5 step 5.A): answer with the transaction and its certificate if
    /// it is decided here; ignore it otherwise.
    pub(crate) fn on_sync(&mut self, from: ReplicaId, txn: TxnId) -> Result<(), RejectReason> {
        if from.shard != self.id.shard {
            return Err(RejectReason::WrongShard);
        }
        let Some(rec) = self.txns.get(&txn) else { return Ok(()) };
        let Some(cert) = rec.cert() else { return Ok(()) };
        let wb = Writeback { meta: (*rec.meta).clone(), cert };
        self.replica_outputs.push((from, Message::Supply(wb)));
        Ok(())
    }

    /// SUPPLY from a peer (§5.5 step 5.B): verified and applied as a writeback, then parked
    /// queries that were waiting for it may run.
    pub(crate) fn on_supply(&mut self, wb: Writeback) -> Result<(), RejectReason> {
        let id = wb.meta.id();
        let new = !self.applied(&id);
        self.apply_decision(wb)?;
        if new {
            self.stats.supplied += 1;
        }
        self.snapshot_progress(&id);
        Ok(())
    }

    /// `txn` is now applied here: run the parked queries it completes.
    pub(crate) fn snapshot_progress(&mut self, txn: &TxnId) {
        if self.snapshots.fetching.remove(txn).is_none() && self.snapshots.parked.is_empty() {
            return;
        }
        let mut ready = Vec::new();
        for (id, p) in self.snapshots.parked.iter_mut() {
            if p.missing.remove(txn) && p.missing.is_empty() {
                ready.push(*id);
            }
        }
        for id in ready {
            if let Some(p) = self.snapshots.parked.remove(&id) {
                self.execute_range(p.from, &p.req);
            }
        }
    }

    /// Periodic work: SYNCs unanswered for `SYNC_RETRY_US` go to every voter; parked
    /// queries older than `PARK_TIMEOUT_US` are dropped.
    pub(crate) fn snapshot_tick(&mut self, now: u64) {
        let shard = self.id.shard;
        let mut syncs = Vec::new();
        for (txn, fetch) in self.snapshots.fetching.iter_mut() {
            if !fetch.asked_all && now >= fetch.asked_at.saturating_add(SYNC_RETRY_US) {
                fetch.asked_all = true;
                syncs
                    .extend(fetch.voters.iter().map(|v| (ReplicaId { shard, index: *v }, Message::Sync { txn: *txn })));
            }
        }
        self.replica_outputs.extend(syncs);
        let expired: Vec<Hash> = self
            .snapshots
            .parked
            .iter()
            .filter(|(_, p)| now >= p.since.saturating_add(PARK_TIMEOUT_US))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.snapshots.parked.remove(&id);
            self.rejects.record(RejectReason::SnapshotExpired);
        }
        let wanted: BTreeSet<TxnId> = self.snapshots.parked.values().flat_map(|p| p.missing.iter().copied()).collect();
        self.snapshots.fetching.retain(|txn, _| wanted.contains(txn));
    }
}
