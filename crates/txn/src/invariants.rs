//! The invariants that tie a replica's indexes to its transaction table, in one place.
//!
//! A replica keeps a transaction in several structures: its record (`txns`), the versions
//! and reads it left on keys (`keys`), the timestamp index (`ts_owner`), the commit order
//! (`committed_order`) and the read-timestamp index (`rts_index`). Every change of a
//! transaction's state (prepare, commit, abort, garbage collection) must update them
//! together. [`Replica::check_invariants`] states what "together" means; the simulator runs it
//! on a replica after every step it takes while its state is small, and every k-th step
//! (k growing with the state's size) beyond that, so that a long scenario's checks stay
//! linear in its length.
//!
//! Violations are reported by the smallest offending entry, so the report does not depend on
//! hash order.

use crate::replica::{Replica, Status};
use pistou_core::{Timestamp, TxnId};

impl Replica {
    /// Keys plus transaction records: what one [`Replica::check_invariants`] walks.
    pub fn invariant_state_size(&self) -> usize {
        self.keys.len() + self.txns.len()
    }

    /// Checks the invariants between the transaction table and the indexes over it.
    /// Costs time linear in the replica's state: for the simulator and tests.
    // Each pass over a hash map ends in `min` or a sum, so the error reported does not
    // depend on the hash order.
    #[allow(clippy::disallowed_methods)]
    pub fn check_invariants(&self) -> Result<(), String> {
        // I1: the commit order lists exactly the committed records, at their timestamps.
        for (ts, id) in &self.committed_order {
            match self.txns.get(id) {
                Some(rec) if matches!(rec.status, Status::Committed(_)) && rec.meta.ts == *ts => {}
                _ => return Err(format!("committed_order holds ({ts:?}, {id}) without a committed record at that ts")),
            }
        }
        let unordered = self
            .txns
            .iter()
            .filter(|(id, rec)| {
                matches!(rec.status, Status::Committed(_)) && !self.committed_order.contains(&(rec.meta.ts, **id))
            })
            .map(|(id, _)| *id)
            .min();
        if let Some(id) = unordered {
            return Err(format!("committed transaction {id} is missing from committed_order"));
        }
        // I2: the timestamp index names a known transaction with that timestamp.
        let stray_owner = self
            .ts_owner
            .iter()
            .filter(|(ts, id)| self.txns.get(*id).is_none_or(|rec| rec.meta.ts != **ts))
            .map(|(ts, id)| (*ts, *id))
            .min();
        if let Some((ts, id)) = stray_owner {
            return Err(format!("ts_owner maps {ts:?} to {id}, which has no record at that ts"));
        }
        // I3: a prepared version's writer is a prepared transaction with that timestamp; a
        // committed version's writer, while its record is kept, is committed at that ts.
        // I4: a key's entry is dropped when it holds nothing.
        let bad_key = self
            .keys
            .iter()
            .filter_map(|(key, state)| {
                let problem = if state.is_empty() {
                    "holds nothing".to_string()
                } else if let Some(v) = state.prepared.iter().find(|v| !self.writer_is(v, |s| *s == Status::Prepared)) {
                    format!("has a prepared version by {} in state {}", v.1, self.state_of(v))
                } else if let Some(v) = state
                    .committed
                    .iter()
                    .find(|v| self.txns.contains_key(&v.1) && !self.writer_is(v, |s| matches!(s, Status::Committed(_))))
                {
                    format!("has a committed version by {} in state {}", v.1, self.state_of(v))
                } else {
                    return None;
                };
                Some((key, problem))
            })
            .min();
        if let Some((key, problem)) = bad_key {
            return Err(format!("key {} {problem}", hex_prefix(key)));
        }
        // I5: the read-timestamp index and the keys' RTS sets hold the same pairs.
        for (ts, key) in &self.rts_index {
            if !self.keys.get(key).is_some_and(|s| s.rts.contains(ts)) {
                return Err(format!("rts_index holds ({ts:?}, {}) that the key does not", hex_prefix(key)));
            }
        }
        let rts_count: usize = self.keys.values().map(|s| s.rts.len()).sum();
        if rts_count != self.rts_index.len() {
            return Err(format!("keys hold {rts_count} read timestamps, rts_index {}", self.rts_index.len()));
        }
        // I6: a transaction waiting on dependencies is known.
        let unknown_waiter =
            self.dependents.values().flat_map(|waiters| waiters.iter()).filter(|w| !self.txns.contains_key(w)).min();
        if let Some(w) = unknown_waiter {
            return Err(format!("dependents names {w}, which has no record"));
        }
        Ok(())
    }

    fn state_of(&self, (ts, writer): &(Timestamp, TxnId)) -> String {
        match self.txns.get(writer) {
            None => "unknown".into(),
            Some(rec) if rec.meta.ts != *ts => format!("with another ts {:?}", rec.meta.ts),
            Some(rec) => match rec.status {
                Status::Unprepared => "unprepared".into(),
                Status::Prepared => "prepared".into(),
                Status::Committed(_) => "committed".into(),
                Status::Aborted(_) => "aborted".into(),
            },
        }
    }

    fn writer_is(&self, (ts, writer): &(Timestamp, TxnId), state: impl Fn(&Status) -> bool) -> bool {
        self.txns.get(writer).is_some_and(|rec| rec.meta.ts == *ts && state(&rec.status))
    }
}

fn hex_prefix(key: &[u8]) -> String {
    key.iter().take(16).map(|b| format!("{b:02x}")).collect()
}
