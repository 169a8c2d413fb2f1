//! Pesto's semantic concurrency check (Alg. 1), the rules Basil's MVTSO check does not
//! already cover: write monotonicity (line 3), completeness of each read predicate
//! (lines 11–16) and writes against later readers' predicates (lines 17–19). Freshness of
//! active reads (lines 7–10) is Basil's read-set check, since active rows are ordinary reads.
//!
//! Windows use `Timestamp::at(t)` (client 0, which no real client has) as exclusive bounds,
//! so `at(table_v.time - grace)` is strictly below every transaction of that microsecond.
//!
//! Two grace tiers (App. B.9). The paper's long tier validates readers only against writes
//! that arrived *non-monotonically*. Judged per replica, that is unsafe: arrival order differs
//! between replicas, and the reader's commit quorum need not contain a correct replica where
//! the write arrived late (n = 6: a write arrives early at replicas 5–6, late at 3–4 after a
//! read served by 1–4; the reader commits with {1, 2, 5, 6}, the writer with {3, 4, 5, 6}).
//! So lateness is a property of the writer that every replica sees alike: the client's
//! `TxnMeta::late` flag, part of id_T. A late writer gets the long window for write
//! monotonicity (line 3) and is checked by readers over the long window (line 12); any other
//! writer gets the short window on both sides. The single-grace safety argument (App. A.3)
//! then holds pair by pair with the writer's own window. A Byzantine client can only hurt
//! itself: flagging everything late makes readers check more, flagging nothing gets its
//! late writes refused.

use super::{ReadPredicate, SqlReplica, SqlTxn};
use crate::replica::TxnRecord;
use pistou_core::{Timestamp, TxnId};
use pistou_rowstore::{VersionState, WriteRef};
use pistou_sql::Predicate;
use pistou_wire::TxnMeta;
use std::collections::HashMap;

/// The replica's transaction records.
pub(crate) type Txns = HashMap<TxnId, TxnRecord>;

/// Outcome of the semantic check when it does not abort.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CcPass {
    /// Prepared writers T must wait for (Alg. 1 line 15): if one aborts, a version that
    /// satisfies one of T's predicates reappears, so T must abort too.
    pub(crate) dynamic_deps: Vec<TxnId>,
}

/// Why the semantic check votes abort; `Conflict(T')` names the prepared or committed
/// transaction whose write or read conflicts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CcAbort {
    NonMonotonic,
    BelowWatermark,
    Conflict(TxnId),
}

fn lower_bound(version: Timestamp, grace_us: u64) -> Timestamp {
    Timestamp::at(version.time.saturating_sub(grace_us))
}

impl SqlReplica {
    /// Lines 3, 11–19 of Alg. 1 for T (`id`, `meta`) with decoded SQL content `txn`.
    pub(crate) fn semantic_check(
        &self,
        id: &TxnId,
        meta: &TxnMeta,
        txn: &SqlTxn,
        txns: &Txns,
    ) -> Result<CcPass, CcAbort> {
        self.check_monotonic(meta, txn)?;
        let mut pass = CcPass::default();
        for p in &txn.predicates {
            self.check_complete(id, meta, p, txns, &mut pass)?;
        }
        self.check_later_readers(meta, txn)?;
        pass.dynamic_deps.sort();
        pass.dynamic_deps.dedup();
        Ok(pass)
    }

    /// The grace window of a writer: the long tier if it declared itself late (B.9).
    fn grace_of(&self, late: bool) -> u64 {
        if late {
            self.params.late_grace_us
        } else {
            self.params.grace_us
        }
    }

    /// Line 3: a write to a table must not be older than a table version already reported
    /// to a reader, minus the writer's grace window; otherwise that reader's completeness
    /// check (which starts at its table version) could miss it.
    fn check_monotonic(&self, meta: &TxnMeta, txn: &SqlTxn) -> Result<(), CcAbort> {
        let ts = meta.ts;
        if ts <= self.store.watermark() && !txn.writes.is_empty() {
            return Err(CcAbort::BelowWatermark);
        }
        for table in txn.writes.tables.keys() {
            let high = self.reported.get(table).map_or(self.reported_floor, |r| (*r).max(self.reported_floor));
            if high != Timestamp::GENESIS && ts <= lower_bound(high, self.grace_of(meta.late)) {
                return Err(CcAbort::NonMonotonic);
            }
        }
        Ok(())
    }

    /// Lines 11–16: no write that T should have seen as active escaped T's read. For every
    /// write w of another prepared or committed T' with table_v − grace(T') < ts_T' < ts_T,
    /// to a key the statement that evaluated P did not read, and that is still the newest
    /// version below ts_T: abort if w satisfies P; if it does not but T' is only prepared and
    /// its abort would expose an older version that does (or might), T depends on T'.
    ///
    /// "Did not read" is per predicate, not per transaction: a later statement of T may read
    /// w's key after w arrived, while P's evaluation missed w (found by the SQL oracle).
    fn check_complete(
        &self,
        id: &TxnId,
        meta: &TxnMeta,
        p: &ReadPredicate,
        txns: &Txns,
        pass: &mut CcPass,
    ) -> Result<(), CcAbort> {
        let predicate = &p.predicate;
        let lo = lower_bound(p.table_version, self.params.late_grace_us);
        let short_lo = lower_bound(p.table_version, self.params.grace_us);
        // The window may start below the watermark as long as no write inside it has been
        // trimmed from the log: a table never written (table version GENESIS) or not
        // written for a while is still checked exactly.
        if self.store.trimmed_through(&predicate.table).is_some_and(|trimmed| trimmed > lo) {
            return Err(CcAbort::BelowWatermark);
        }
        let table = predicate.table.as_str();
        // Outside P's key ranges no version of the key satisfies P: a write there can neither
        // conflict nor expose a match, so only writes inside them are examined. Likewise for
        // keys none of whose versions or logged writes has an index key inside P's index ranges.
        let via_index = || {
            let (index, ranges) = p.index_ranges.as_ref()?;
            self.store.writes_between_via_index(table, index, lo, meta.ts, ranges)
        };
        let writes: Box<dyn Iterator<Item = WriteRef<'_>> + '_> = match &p.key_ranges {
            Some(ranges) => Box::new(self.store.writes_between_in(table, lo, meta.ts, ranges).into_iter()),
            None => match via_index() {
                Some(found) => Box::new(found.into_iter()),
                None => Box::new(self.store.writes_between(table, lo, meta.ts)),
            },
        };
        for w in writes {
            if w.writer == *id {
                continue;
            }
            // Below the short window only late writers are checked; a writer whose record
            // is gone is treated as late (checking more is always safe).
            if w.ts <= short_lo && txns.get(&w.writer).is_some_and(|r| !r.meta.late) {
                continue;
            }
            let matches = w.row.is_some_and(|row| predicate.may_match(row));
            if !matches && w.state == VersionState::Committed {
                continue; // cannot conflict and cannot vanish: skip the lookups below
            }
            let seen_by_p = p.active.contains(w.key);
            if seen_by_p {
                continue; // an active read of P: Basil's freshness check covers it
            }
            let newest = self.store.version_below(table, w.key, meta.ts, |_| true);
            if newest.is_some_and(|v| v.ts != w.ts || v.writer != w.writer) {
                continue; // overwritten before ts_T: the newer write is checked itself
            }
            if matches {
                return Err(CcAbort::Conflict(w.writer));
            }
            if w.state == VersionState::Prepared && self.exposes_match(table, w.key, w.ts, predicate) {
                pass.dynamic_deps.push(w.writer);
            }
        }
        Ok(())
    }

    /// riskyPrepared (line 14): would removing the version at `above` expose a version that
    /// satisfies P? Walks older versions: a match is risky; a committed non-matching version
    /// or deletion ends the walk safely; a prepared non-matching one may itself vanish, so
    /// the walk continues below it.
    fn exposes_match(&self, table: &str, key: &[u8], above: Timestamp, predicate: &Predicate) -> bool {
        for v in self.store.versions(table, key).filter(|v| v.ts < above) {
            if v.row.is_some_and(|row| predicate.may_match(row)) {
                return true;
            }
            if v.state == VersionState::Committed {
                return false;
            }
        }
        false
    }

    /// Lines 17–19 (predicate part): T's writes must not change what a prepared or committed
    /// reader ordered after T read through a predicate, for keys it did not read (keys it
    /// read are covered by Basil's reader-version check).
    fn check_later_readers(&self, meta: &TxnMeta, txn: &SqlTxn) -> Result<(), CcAbort> {
        let after = (meta.ts, TxnId([0xff; 32]));
        for (table, writes) in &txn.writes.tables {
            let Some(readers) = self.readers.get(table) else { continue };
            for ((_, reader), predicates) in readers.range(after..) {
                for (pk, write) in writes {
                    let pistou_sql::Write::Upsert(row) = write else { continue };
                    // A predicate whose evaluation read the key is covered by Basil's reader check.
                    let affected = predicates
                        .iter()
                        .any(|p| p.may_cover(pk) && !p.active.contains(pk) && p.predicate.may_match(row));
                    if affected {
                        return Err(CcAbort::Conflict(*reader));
                    }
                }
            }
        }
        Ok(())
    }
}
