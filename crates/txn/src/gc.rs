//! Garbage collection of a replica's Basil state (Pesto App. B.3), so that memory stays flat
//! in a long run.
//!
//! The watermark `gc` trails the replica's clock by `max_txn_age_us` (never lowered). No
//! transaction below it may prepare (Alg. 1 line 1) and no read below it is answered, so
//! every check a new transaction can trigger looks only at state at or above it, plus the
//! newest committed version below it. When the watermark passes a transaction's timestamp:
//!
//! - Committed: its reader entries go; each key it wrote collapses to its newest committed
//!   version below the watermark (still what reads at or above it return). A writer whose
//!   versions were all collapsed away loses its record; the writer of a kept version keeps
//!   its record, because a read returns that writer's metadata and commit certificate.
//! - Aborted: the record goes (abort already removed its versions and readers).
//! - Unprepared (this replica voted abort, or logged an ST2 without preparing): the record
//!   goes, unless it carries a logged ST2 decision (the fallback may still need it) or
//!   prepared transactions wait on it; it holds no key state. Forgetting an abort vote is
//!   safe: if the transaction committed anyway, the replicas that voted commit keep it
//!   prepared until its writeback, and any commit quorum of a conflicting transaction
//!   overlaps them in a correct replica, which votes abort (Basil's safety argument).
//! - Prepared: kept until decided. Its prepared versions stay visible (a reader above the
//!   watermark may depend on them and finish it through the fallback), and its fate may
//!   still arrive from its client or a fallback leader. Such records are bounded only by how
//!   many transactions clients abandon; `Footprint::undecided_below_watermark` counts them.
//!
//! What must still work once a record is gone. A replica cannot tell a transaction it
//! forgot from one it never saw, and a correct replica never votes or logs twice for the
//! same transaction, so a message about an unknown transaction below the watermark (ST1,
//! ST2, InvokeFB, writeback) is refused with [`RejectReason::BelowWatermark`] instead of
//! being applied as new; FetchTxn simply has no answer. Known transactions are answered as
//! before (a kept decided record answers with its certificate). A dependency on a forgotten
//! transaction makes a new ST1 vote abort (Alg. 1 line 3): the dependency was aborted, or
//! committed and overwritten below the watermark, so the reader missed a newer write anyway.
//! A decided transaction's own client learns the outcome long before the watermark passes
//! it; a client whose transaction is older than the watermark gives up on it
//! (`TxnError::TooOld`, or a local abort at commit) rather than wait for refused replies.
//!
//! Limits. A replica that missed a writeback for longer than `max_txn_age_us` (partitioned,
//! or it voted abort and forgot) refuses it and stays behind on those keys until they are
//! written again: catching up needs state transfer, not late writebacks. A key deleted below
//! the watermark keeps its deletion (and its writer's record): dropping it would let a late
//! commit of an older, still-known transaction become the key's newest version again.
//! Range reads are not refused below this watermark (the row store has its own, older one);
//! their SS-VOTE may then omit collected writers, which only matters for a transaction too
//! old to prepare.

use crate::rejects::RejectReason;
use crate::replica::{Replica, Status};
use pistou_core::sql_keys::{key_kind, KeyKind};
use pistou_core::{Timestamp, TxnId};
use std::collections::BTreeSet;

/// Garbage-collection state of a replica.
#[derive(Default)]
pub(crate) struct Gc {
    /// The watermark collected at (µs); never lowered, so `Replica::watermark` never is.
    pub(crate) horizon: u64,
    /// Transaction records to examine once the watermark passes their timestamp.
    queue: BTreeSet<(Timestamp, TxnId)>,
    /// Undecided records kept below the watermark, looked at again when one is decided or
    /// once per `max_txn_age_us` (an Unprepared one may lose its waiters).
    stalled: BTreeSet<(Timestamp, TxnId)>,
    /// The horizon at which `stalled` was last looked at.
    stalled_checked_at: u64,
}

impl Gc {
    /// A record was created or decided: look at it once the watermark passes `ts`.
    pub(crate) fn track(&mut self, ts: Timestamp, id: TxnId) {
        self.stalled.remove(&(ts, id));
        self.queue.insert((ts, id));
    }
}

/// Sizes of a replica's state (counts, not bytes), for tests and monitoring. O(keys +
/// transactions) to compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Keys with any Basil state.
    pub keys: usize,
    pub committed_versions: usize,
    pub prepared_versions: usize,
    /// Reader entries (prepared or committed transactions that read a key).
    pub readers: usize,
    /// Read timestamps of ongoing transactions.
    pub rts: usize,
    pub txn_records: usize,
    /// Records holding their decoded SQL content: undecided transactions (a decision, once
    /// applied, drops it).
    pub sql_records: usize,
    /// Prepared or Unprepared records kept below the watermark (see the module doc).
    pub undecided_below_watermark: usize,
    pub ts_owner: usize,
    /// Transactions some prepared transaction waits on.
    pub dependents: usize,
    /// Records waiting for the watermark to pass them.
    pub gc_queue: usize,
    /// Transactions scheduled for a decision inquiry (`inquiry.rs`).
    pub inquiries: usize,
    /// SQL row store: primary keys and row versions.
    pub row_keys: usize,
    pub row_versions: usize,
}

impl Replica {
    /// Counts of what this replica holds (see [`Footprint`]).
    // Counts and sums only: the hash order cannot reach the result.
    #[allow(clippy::iter_over_hash_type, clippy::disallowed_methods)]
    pub fn footprint(&self) -> Footprint {
        let mut f = Footprint {
            keys: self.keys.len(),
            rts: self.rts_index.len(),
            txn_records: self.txns.len(),
            sql_records: self.txns.values().filter(|r| r.sql.is_some()).count(),
            undecided_below_watermark: self.gc.stalled.len(),
            ts_owner: self.ts_owner.len(),
            dependents: self.dependents.len(),
            gc_queue: self.gc.queue.len(),
            inquiries: self.inquiries.len(),
            ..Footprint::default()
        };
        for s in self.keys.values() {
            f.committed_versions += s.committed.len();
            f.prepared_versions += s.prepared.len();
            f.readers += s.readers.len();
        }
        let rows = self.sql.store.stats();
        f.row_keys = rows.keys;
        f.row_versions = rows.versions;
        f
    }

    /// The newest committed version of every key (its timestamp and writer), in key order:
    /// what reads at the top of the history return. The simulator checks that recovery
    /// restores it exactly.
    #[allow(clippy::disallowed_methods)] // collected into a BTreeMap: the hash order is gone
    pub fn newest_committed(&self) -> std::collections::BTreeMap<Vec<u8>, (Timestamp, TxnId)> {
        self.keys.iter().filter_map(|(k, s)| Some((k.clone(), *s.committed.last()?))).collect()
    }

    /// The SQL rows whose newest committed version is a row (not a deletion), by (table,
    /// primary key): replicas with the same committed state have the same, whatever each has
    /// collected. O(rows).
    pub fn live_rows(&self) -> std::collections::BTreeMap<(String, Vec<u8>), (Timestamp, TxnId)> {
        self.sql.store.live_rows()
    }

    /// The current garbage-collection watermark (µs): reads and new transactions below it
    /// are refused.
    pub fn gc_watermark(&self) -> u64 {
        self.gc.horizon
    }

    /// Reads and ST1 of new transactions below the watermark are refused (App. B.3).
    pub(crate) fn refuse_below_watermark(&self, now: u64, ts: Timestamp) -> Result<(), RejectReason> {
        if ts.time < self.watermark(now) {
            return Err(RejectReason::BelowWatermark);
        }
        Ok(())
    }

    /// A message about a transaction this replica does not know and may have collected.
    pub(crate) fn refuse_if_collected(&self, id: &TxnId, ts: Timestamp) -> Result<(), RejectReason> {
        if ts.time < self.gc.horizon && !self.txns.contains_key(id) {
            return Err(RejectReason::BelowWatermark);
        }
        Ok(())
    }

    /// Collects everything the watermark `horizon` (µs) has passed. Cost: proportional to
    /// the records passed and the keys they wrote, plus, once per `max_txn_age_us`, the
    /// undecided records kept below the watermark.
    pub(crate) fn collect_garbage(&mut self, horizon: u64) {
        self.gc.horizon = self.gc.horizon.max(horizon);
        let horizon = self.gc.horizon;
        while let Some(&(ts, id)) = self.gc.queue.first() {
            if ts.time >= horizon {
                break;
            }
            self.gc.queue.pop_first();
            self.collect_txn(id, ts, horizon);
        }
        self.collect_dropped_tables(horizon);
        let period = self.auth.config().max_txn_age_us.max(1);
        if horizon >= self.gc.stalled_checked_at.saturating_add(period) {
            self.gc.stalled_checked_at = horizon;
            for (ts, id) in std::mem::take(&mut self.gc.stalled) {
                self.collect_txn(id, ts, horizon);
            }
        }
    }

    fn collect_txn(&mut self, id: TxnId, ts: Timestamp, horizon: u64) {
        let Some(rec) = self.txns.get(&id) else { return };
        match &rec.status {
            Status::Prepared => {
                self.gc.stalled.insert((ts, id));
            }
            Status::Unprepared if rec.st2.is_some() || self.dependents.contains_key(&id) => {
                self.gc.stalled.insert((ts, id));
            }
            Status::Unprepared | Status::Aborted(_) => self.drop_record(&id),
            Status::Committed(_) => {
                let meta = rec.meta.clone();
                self.drop_readers(&id, &meta);
                let mut collapsed = Vec::new();
                for w in &meta.write_set {
                    if self.auth.config().shard_of(&w.key) == self.id.shard {
                        collapsed.extend(self.collapse(&w.key, horizon));
                    }
                }
                collapsed.push(id);
                collapsed.sort();
                collapsed.dedup();
                for writer in collapsed {
                    if !self.keeps_a_version(&writer) {
                        self.drop_record(&writer);
                    }
                }
            }
        }
    }

    /// Forgets the rows of tables dropped below the watermark. No transaction that may still
    /// prepare touches them: one planned against a catalog that has the table read the
    /// catalog key below the DROP, so MVTSO orders it before the DROP, below the watermark.
    /// A key with a prepared version is kept, with its undecided writer (as any prepared
    /// version is, see the module doc). Cost: one pass over the keys per batch of DROPs.
    fn collect_dropped_tables(&mut self, horizon: u64) {
        let dropped = self.sql.take_dropped_below(Timestamp::at(horizon));
        if dropped.is_empty() {
            return;
        }
        let is_dropped = |key: &[u8]| match key_kind(key) {
            KeyKind::Row { table, table_id, .. } => dropped.iter().any(|(t, id)| t == table && *id == table_id),
            _ => false,
        };
        let mut writers = Vec::new();
        // `writers` is sorted below, so the order of the visit cannot reach it.
        #[allow(clippy::disallowed_methods)]
        self.keys.retain(|key, state| {
            if !state.prepared.is_empty() || !is_dropped(key) {
                return true;
            }
            writers.extend(state.committed.iter().map(|(_, w)| *w));
            false
        });
        writers.sort();
        writers.dedup();
        for writer in writers {
            if !self.keeps_a_version(&writer) {
                self.drop_record(&writer);
            }
        }
    }

    /// Deletes the committed versions of `key` older than its newest one below the watermark,
    /// and its reader entries below the watermark (no transaction that may still prepare is
    /// ordered before them). Returns the writers of the deleted versions.
    fn collapse(&mut self, key: &[u8], horizon: u64) -> Vec<TxnId> {
        let Some(state) = self.keys.get_mut(key) else { return Vec::new() };
        let bound = (Timestamp::at(horizon), TxnId([0; 32]));
        let mut removed = Vec::new();
        let newest = state.committed.range(..bound).next_back().copied();
        if let Some(newest) = newest {
            let kept = state.committed.split_off(&newest);
            removed = std::mem::replace(&mut state.committed, kept).into_iter().map(|(_, w)| w).collect();
        }
        state.readers = state.readers.split_off(&bound);
        if state.is_empty() {
            self.keys.remove(key);
        }
        removed
    }

    /// Is `writer` still the writer of a committed version of some key here?
    fn keeps_a_version(&self, writer: &TxnId) -> bool {
        let Some(rec) = self.txns.get(writer) else { return false };
        let version = (rec.meta.ts, *writer);
        rec.meta.write_set.iter().any(|w| self.keys.get(&w.key).is_some_and(|s| s.committed.contains(&version)))
    }

    fn drop_readers(&mut self, id: &TxnId, meta: &pistou_wire::TxnMeta) {
        for r in &meta.read_set {
            if let Some(state) = self.keys.get_mut(&r.key) {
                state.readers.remove(&(meta.ts, *id));
                if state.is_empty() {
                    self.keys.remove(&r.key);
                }
            }
        }
    }

    /// Forgets a transaction: its record and every index entry naming it.
    fn drop_record(&mut self, id: &TxnId) {
        let Some(rec) = self.txns.remove(id) else { return };
        // The disk is trimmed with memory: replaying the log rebuilds only kept records.
        self.log.forget(id);
        let meta = rec.meta;
        self.committed_order.remove(&(meta.ts, *id));
        self.drop_readers(id, &meta);
        if self.ts_owner.get(&meta.ts) == Some(id) {
            self.ts_owner.remove(&meta.ts);
        }
        self.dependents.remove(id);
        self.elections.forget(id);
        self.gc.stalled.remove(&(meta.ts, *id));
        self.gc.queue.remove(&(meta.ts, *id));
    }
}
