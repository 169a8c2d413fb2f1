//! A bound on each client's undecided transactions at a replica.
//!
//! A transaction's client decides it; a client that sends ST1 and then walks away leaves a
//! prepared (or unprepared) record that garbage collection must keep until someone decides it
//! (`gc.rs`), and decision inquiry (`inquiry.rs`) cannot help when no replica has a decision.
//! Without a bound, a Byzantine client could grow every replica's memory without limit. So a
//! replica accepts a new ST1 only while the transaction's owner (the client in its timestamp)
//! has fewer than `MAX_UNDECIDED_PER_CLIENT` undecided records here; beyond that the ST1 is
//! refused, not voted on, and a correct client's retransmission succeeds once its earlier
//! transactions are decided. The bound is generous because a gateway runs every session of a
//! database user under one client id. An ST1 whose timestamp names a client that is not in
//! the configuration is refused before this count (no id can be invented to dodge it).

use crate::replica::{Replica, Status};
use pistou_core::{ClientId, TxnId};
use std::collections::{HashMap, HashSet};

/// Undecided transactions one client may own at a replica.
pub(crate) const MAX_UNDECIDED_PER_CLIENT: usize = 4_096;

/// Per client: transactions whose records were created undecided here. Entries that have
/// since been decided or collected are pruned lazily, when the set reaches the bound.
#[derive(Default)]
pub(crate) struct Undecided {
    by_client: HashMap<ClientId, HashSet<TxnId>>,
    limit: Option<usize>,
}

impl Undecided {
    fn limit(&self) -> usize {
        self.limit.unwrap_or(MAX_UNDECIDED_PER_CLIENT)
    }
}

impl Replica {
    /// Lowers the per-client bound (tests).
    pub fn set_max_undecided_per_client(&mut self, limit: usize) {
        self.undecided.limit = Some(limit);
    }

    /// Whether `client` may own one more undecided transaction here.
    pub(crate) fn room_for_undecided(&mut self, client: ClientId) -> bool {
        let limit = self.undecided.limit();
        let txns = &self.txns;
        let Some(mine) = self.undecided.by_client.get_mut(&client) else { return limit > 0 };
        if mine.len() >= limit {
            #[allow(clippy::disallowed_methods)] // a pure predicate: the order does not matter
            mine.retain(|id| txns.get(id).is_some_and(|r| matches!(r.status, Status::Prepared | Status::Unprepared)));
        }
        mine.len() < limit
    }

    /// A record for `txn`, owned by `client`, was created undecided.
    pub(crate) fn note_undecided(&mut self, client: ClientId, txn: TxnId) {
        self.undecided.by_client.entry(client).or_default().insert(txn);
    }
}
