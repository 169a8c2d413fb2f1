//! Decision inquiry: a replica learns the decisions it missed.
//!
//! A client's writeback may never reach this replica: the client crashed after deciding,
//! messages were lost, or the client is Byzantine (Pesto Fig. 8's inconsistency mode does it
//! on purpose). Basil finishes such a transaction only when another client trips over it;
//! until then this replica keeps reading the older committed versions, keeps the record,
//! and reports a table version lowered below the prepared write (which makes its range-read
//! replies outliers, B.8). So the replica asks its peers itself, the lazy gossip App. A.5.3
//! suggests: a transaction seen here (ST1) and still undecided `INQUIRY_AFTER_US` later
//! gets a SYNC (§5.5 step 5.A) to f+1 peers, then to every peer, at doubling intervals, at
//! most `MAX_INQUIRIES` times. A peer that has the decision answers with SUPPLY, verified
//! and applied exactly like a writeback. A transaction nobody decided stays prepared: that
//! is for the clients that depend on it to finish (Basil's fallback).

use crate::replica::{Replica, Status};
use pistou_core::{ReplicaId, TxnId};
use pistou_wire::Message;
use std::collections::{BTreeSet, HashMap};

/// A transaction undecided here this long after its ST1 gets its first inquiry (µs). A
/// healthy commit is decided within a few round trips, tens of ms under load; every 100 ms
/// more that a replica lacks a decision, its reads of those rows are stale and its range
/// replies B.8 outliers: Fig. 8's inconsistency mode dropped 21% with 500 ms, 5–7% with
/// 100 ms (docs/benchmarks.md).
pub(crate) const INQUIRY_AFTER_US: u64 = 100_000;
/// Inquiries per transaction; the intervals double, so the last is ~3.2 s after the ST1.
pub(crate) const MAX_INQUIRIES: u32 = 6;
/// Inquiries sent per tick at most, so that a burst of abandoned transactions (a Byzantine
/// client's) cannot flood the peers; the rest wait for the next tick.
pub(crate) const MAX_INQUIRIES_PER_TICK: usize = 256;

/// Transactions to ask about, by when.
#[derive(Default)]
pub(crate) struct Inquiries {
    due: BTreeSet<(u64, TxnId)>,
    /// Inquiries sent so far, per transaction still scheduled.
    sent: HashMap<TxnId, u32>,
}

impl Inquiries {
    /// `txn` was first seen at `now`.
    pub(crate) fn track(&mut self, now: u64, txn: TxnId) {
        if self.sent.insert(txn, 0).is_none() {
            self.due.insert((now.saturating_add(INQUIRY_AFTER_US), txn));
        }
    }

    /// Transactions scheduled (tests, footprint).
    pub(crate) fn len(&self) -> usize {
        self.sent.len()
    }
}

impl Replica {
    /// Periodic work: ask peers about transactions still undecided when their time comes.
    pub(crate) fn inquiry_tick(&mut self, now: u64) {
        let q = self.auth.config().quorums();
        let n = q.n() as u32;
        let me = self.id;
        let mut asked = 0;
        while asked < MAX_INQUIRIES_PER_TICK {
            let Some(&(at, txn)) = self.inquiries.due.first() else { break };
            if at > now {
                break;
            }
            self.inquiries.due.pop_first();
            let undecided =
                self.txns.get(&txn).is_some_and(|r| matches!(r.status, Status::Prepared | Status::Unprepared));
            let attempt = self.inquiries.sent.get(&txn).copied().unwrap_or(MAX_INQUIRIES);
            if !undecided || attempt >= MAX_INQUIRIES {
                self.inquiries.sent.remove(&txn);
                continue;
            }
            // First f+1 peers (one of them correct, but maybe without the decision), then all.
            let peers = if attempt == 0 { q.one_correct() } else { n as usize - 1 };
            let targets = (1..n).map(|k| (me.index + k) % n).take(peers);
            self.replica_outputs
                .extend(targets.map(|index| (ReplicaId { shard: me.shard, index }, Message::Sync { txn })));
            self.inquiries.sent.insert(txn, attempt + 1);
            self.inquiries.due.insert((now.saturating_add(INQUIRY_AFTER_US << attempt.min(5)), txn));
            self.stats.inquiries += 1;
            asked += 1;
        }
    }
}
