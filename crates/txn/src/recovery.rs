//! A restarted replica rebuilds its state from its log (SYSTEM.md principle 5).
//!
//! The log holds what the replica promised (`log.rs`): votes, logged and adopted decisions,
//! views, and the certified decisions it applied. Replaying the entries in append order on a
//! fresh replica restores exactly what those promises depend on:
//!
//! - `Voted`: the record with its vote, which is never computed again (a repeated ST1 is
//!   answered from it). A commit vote means the transaction was prepared and every
//!   dependency was decided, so its versions, reads and SQL rows are prepared again; an abort
//!   vote leaves it unprepared. The abort cause (a conflict proof or a blocker's name) is not
//!   logged: after a restart the vote is answered as a plain abort.
//! - `Decision` and `View`: the logged ST2 decision with its view, and the current view.
//! - `Committed` and `Aborted`: applied as a writeback is (rows, catalogs, table versions),
//!   without checking the certificate again: it was checked before it was logged, and the
//!   log is the replica's own, checksummed storage.
//!
//! What is not logged is lost, safely: a transaction prepared here whose vote waited for a
//! dependency had sent no vote, and is checked afresh if its ST1 comes again; read
//! timestamps (RTS) only make writers wait, and a reader whose RTS is lost is checked at its
//! own prepare; decisions this replica never applied are learnt again from peers (inquiry,
//! writebacks).
//!
//! The table versions reported to range reads (Pesto's write-monotonicity bound, §6.1.3)
//! are not logged either: logging them would put an fsync behind every range read. A read
//! is answered only at a timestamp at most δ above the replica's clock, and a reported
//! version is never above the read's timestamp, so everything reported before the crash is
//! below the clock at restart plus δ. Recovery takes that as the reported version of every
//! table (`SqlReplica::reported_floor`): writes below it minus the grace are refused, which
//! only aborts writers that were late already. This needs a clock that does not go back
//! across the restart, as δ itself does.

use crate::log::{DiscardLog, LogEntry};
use crate::replica::{AbortCause, Replica, Status, TxnRecord, VoteRecord};
use pistou_core::{Timestamp, TxnId};
use pistou_wire::{TxnMeta, Vote};
use std::sync::Arc;

impl Replica {
    /// Replays `entries` (a log's contents, in append order) on this replica, which must be
    /// new: nothing handled yet. `now` is the local time, which schedules decision inquiries
    /// for the transactions still undecided. Nothing is appended to the log while replaying.
    pub fn recover(&mut self, now: u64, entries: impl IntoIterator<Item = LogEntry>) {
        let log = std::mem::replace(&mut self.log, Box::new(DiscardLog));
        for entry in entries {
            self.replay(now, entry);
        }
        self.log = log;
        self.sql.reported_floor = Timestamp::at(now.saturating_add(self.auth.config().delta_us));
    }

    fn replay(&mut self, now: u64, entry: LogEntry) {
        match entry {
            LogEntry::Voted { meta, vote } => {
                let id = meta.id();
                let undecided = self.known(now, id, meta.clone());
                let Some(rec) = self.txns.get_mut(&id) else { return };
                if rec.vote.is_some() {
                    return;
                }
                rec.vote = Some(VoteRecord { vote, cause: AbortCause::Plain });
                if vote == Vote::Commit && undecided {
                    self.prepare_again(id, &meta);
                }
            }
            LogEntry::Decision { txn, meta, decision, view } => {
                self.known(now, txn, meta);
                if let Some(rec) = self.txns.get_mut(&txn) {
                    rec.st2 = Some((decision, view));
                    rec.view_current = rec.view_current.max(view);
                }
            }
            LogEntry::View { txn, view } => {
                if let Some(rec) = self.txns.get_mut(&txn) {
                    rec.view_current = rec.view_current.max(view);
                }
            }
            LogEntry::Committed { meta, cert } => {
                let id = meta.id();
                if !self.txns.get(&id).is_some_and(|r| matches!(r.status, Status::Committed(_))) {
                    self.apply_commit(id, (*meta).clone(), (*cert).clone());
                }
            }
            LogEntry::Aborted { txn, meta, cert } => {
                if !self.txns.get(&txn).is_some_and(|r| matches!(r.status, Status::Aborted(_))) {
                    self.apply_abort(txn, (*meta).clone(), (*cert).clone());
                }
            }
        }
    }

    /// Makes sure `id` has a record; true if it is undecided.
    fn known(&mut self, now: u64, id: TxnId, meta: Arc<TxnMeta>) -> bool {
        if let Some(rec) = self.txns.get(&id) {
            return matches!(rec.status, Status::Prepared | Status::Unprepared);
        }
        self.note_undecided(meta.ts.client, id);
        self.gc.track(meta.ts, id);
        self.inquiries.track(now, id);
        self.txns.insert(id, TxnRecord::new(meta));
        true
    }

    /// A transaction this replica voted to commit: prepared again (Alg. 1 line 14), SQL rows
    /// and predicates included.
    fn prepare_again(&mut self, id: TxnId, meta: &Arc<TxnMeta>) {
        match self.sql.decode(self.auth.config(), meta) {
            Ok(Some(txn)) => {
                if let Err(e) = self.sql.prepare(id, meta.ts, &txn) {
                    tracing::error!(txn = ?id, "a transaction voted to commit before a restart does not prepare again: {e}");
                }
                if let Some(rec) = self.txns.get_mut(&id) {
                    rec.sql = Some(Arc::new(txn));
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(txn = ?id, "a transaction voted to commit before a restart does not decode again: {e}")
            }
        }
        self.add_prepared(&id, meta);
    }
}
