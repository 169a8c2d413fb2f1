//! A table's write log: every write ordered by (ts, writer, key), for Pesto's completeness
//! check (Alg. 1 line 12) and table versions (§6.1.3).

use crate::chain::Key;
use crate::refs::VersionState;
use pistou_core::{Timestamp, TinySet, TxnId};
use pistou_types::KeyRange;
use pistou_types::Row;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

const LOWEST_TXN: TxnId = TxnId([0; 32]);
const HIGHEST_TXN: TxnId = TxnId([0xFF; 32]);

/// One logged write: its state mirrors the version's, its row is the version's allocation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LoggedWrite {
    pub state: VersionState,
    pub row: Option<Arc<Row>>,
}

/// The writes of one transaction to one table, by key.
pub(crate) type LogEntry = BTreeMap<Key, LoggedWrite>;

/// Holds every prepared write and every committed write at or above the trim point.
/// Committed writes below it are trimmed; the newest trimmed timestamp is remembered so
/// table versions stay exact for reads at or above the watermark. Writes whose version the
/// version cap deleted stay until the trim point passes them: the check still needs them.
#[derive(Clone, Debug)]
pub(crate) struct WriteLog {
    entries: BTreeMap<(Timestamp, TxnId), LogEntry>,
    /// The same writes by key: a predicate's key ranges are looked up without walking the
    /// whole window (`between_in`).
    by_key: BTreeMap<Key, TinySet<(Timestamp, TxnId)>>,
    writes: usize,
    trimmed_through: Option<Timestamp>,
    /// Committed writes below this have been trimmed (it only moves up).
    trimmed_to: Timestamp,
}

impl Default for WriteLog {
    fn default() -> Self {
        WriteLog {
            entries: BTreeMap::new(),
            by_key: BTreeMap::new(),
            writes: 0,
            trimmed_through: None,
            trimmed_to: Timestamp::GENESIS,
        }
    }
}

impl WriteLog {
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    pub fn writes(&self) -> usize {
        self.writes
    }

    pub fn iter(&self) -> impl Iterator<Item = (&(Timestamp, TxnId), &LogEntry)> {
        self.entries.iter()
    }

    pub fn trimmed_through(&self) -> Option<Timestamp> {
        self.trimmed_through
    }

    /// Records a write unless (ts, writer, key) is already logged; true if it was new.
    pub fn record(&mut self, ts: Timestamp, writer: TxnId, key: &Key, write: LoggedWrite) -> bool {
        let entry = self.entries.entry((ts, writer)).or_default();
        if entry.contains_key(key) {
            return false;
        }
        entry.insert(key.clone(), write);
        self.by_key.entry(key.clone()).or_default().insert((ts, writer));
        self.writes += 1;
        true
    }

    fn unindex(&mut self, ts: Timestamp, writer: TxnId, key: &[u8]) {
        if let Some(set) = self.by_key.get_mut(key) {
            set.remove(&(ts, writer));
            if set.is_empty() {
                self.by_key.remove(key);
            }
        }
    }

    pub fn get(&self, ts: Timestamp, writer: TxnId, key: &[u8]) -> Option<&LoggedWrite> {
        self.entries.get(&(ts, writer))?.get(key)
    }

    pub fn get_mut(&mut self, ts: Timestamp, writer: TxnId, key: &[u8]) -> Option<&mut LoggedWrite> {
        self.entries.get_mut(&(ts, writer))?.get_mut(key)
    }

    /// Removes one write (abort, or a commit below the watermark).
    pub fn remove(&mut self, ts: Timestamp, writer: TxnId, key: &[u8]) -> Option<LoggedWrite> {
        let entry = self.entries.get_mut(&(ts, writer))?;
        let removed = entry.remove(key)?;
        if entry.is_empty() {
            self.entries.remove(&(ts, writer));
        }
        self.unindex(ts, writer, key);
        self.writes -= 1;
        Some(removed)
    }

    /// Notes that a committed write at `ts` left the log.
    pub fn note_trimmed(&mut self, ts: Timestamp) {
        self.trimmed_through = self.trimmed_through.max(Some(ts));
    }

    /// Committed writes below this point are trimmed: one that commits below it leaves the
    /// log right away.
    pub fn trimmed_to(&self) -> Timestamp {
        self.trimmed_to
    }

    /// Timestamp of the newest committed write, if any is logged.
    fn newest_committed(&self) -> Option<Timestamp> {
        let committed = |entry: &LogEntry| entry.values().any(|w| w.state == VersionState::Committed);
        self.entries.iter().rev().find(|(_, entry)| committed(entry)).map(|(&(ts, _), _)| ts)
    }

    /// Trims the committed writes below `watermark`, except, if `keep_us > 0`, those at most
    /// `keep_us` older than the newest committed write: a reader of a table that has gone
    /// quiet is told that write as its table version, and its completeness window (which
    /// starts up to the long grace below the table version) must still find every write in
    /// it. Prepared writes stay until their writer is decided. Returns the writes removed,
    /// by key.
    pub fn trim(&mut self, watermark: Timestamp, keep_us: u64) -> Vec<(Key, LoggedWrite)> {
        let newest = if keep_us > 0 { self.newest_committed() } else { None };
        let keep_from = newest.map_or(Timestamp::MAX, |n| Timestamp::at(n.time.saturating_sub(keep_us)));
        let to = watermark.min(keep_from);
        let from = self.trimmed_to;
        if from >= to {
            return Vec::new();
        }
        self.trimmed_to = to;
        let mut emptied = Vec::new();
        let mut gone = Vec::new();
        for (&(ts, writer), entry) in self.entries.range_mut((from, LOWEST_TXN)..(to, LOWEST_TXN)) {
            let committed: Vec<Key> =
                entry.iter().filter(|(_, w)| w.state == VersionState::Committed).map(|(k, _)| k.clone()).collect();
            if !committed.is_empty() {
                self.trimmed_through = self.trimmed_through.max(Some(ts));
            }
            for key in committed {
                if let Some(w) = entry.remove(&key) {
                    gone.push((ts, writer, key, w));
                }
            }
            if entry.is_empty() {
                emptied.push((ts, writer));
            }
        }
        for id in emptied {
            self.entries.remove(&id);
        }
        self.writes -= gone.len();
        gone.into_iter()
            .map(|(ts, writer, key, w)| {
                self.unindex(ts, writer, &key);
                (key, w)
            })
            .collect()
    }

    /// Entries with `lo < ts < hi`, ascending.
    pub fn between(&self, lo: Timestamp, hi: Timestamp) -> impl Iterator<Item = (&(Timestamp, TxnId), &LogEntry)> {
        // `range` panics on an empty range with two excluded bounds; lo < hi rules that out.
        let bounds = (Bound::Excluded((lo, HIGHEST_TXN)), Bound::Excluded((hi, LOWEST_TXN)));
        (lo < hi).then(|| self.entries.range(bounds)).into_iter().flatten()
    }

    /// The writes with `lo < ts < hi` to keys in `ranges`, in no particular order, if the
    /// ranges hold at most `max_keys` logged keys; `None` (look at the window instead) if
    /// they hold more. Overlapping ranges may yield a write twice.
    #[allow(clippy::type_complexity)]
    pub fn between_in(
        &self,
        lo: Timestamp,
        hi: Timestamp,
        ranges: &[KeyRange],
        max_keys: usize,
    ) -> Option<Vec<(Timestamp, TxnId, &Key, &LoggedWrite)>> {
        let mut keys = Vec::new();
        for r in ranges.iter().filter(|r| !r.is_empty()) {
            // Not empty, so `range` cannot panic (start ≤ end, and not both excluded if equal).
            let bounds = (r.start.as_ref().map(Vec::as_slice), r.end.as_ref().map(Vec::as_slice));
            for entry in self.by_key.range::<[u8], _>(bounds) {
                if keys.len() == max_keys {
                    return None;
                }
                keys.push(entry);
            }
        }
        Some(self.window_writes(lo, hi, keys))
    }

    /// The writes with `lo < ts < hi` to `keys`, in no particular order (a key given twice
    /// yields its writes twice).
    #[allow(clippy::type_complexity)]
    pub fn between_of<'a, 'k>(
        &'a self,
        lo: Timestamp,
        hi: Timestamp,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Vec<(Timestamp, TxnId, &'a Key, &'a LoggedWrite)> {
        self.window_writes(lo, hi, keys.into_iter().filter_map(|k| self.by_key.get_key_value(k)))
    }

    #[allow(clippy::type_complexity)]
    fn window_writes<'a>(
        &'a self,
        lo: Timestamp,
        hi: Timestamp,
        keys: impl IntoIterator<Item = (&'a Key, &'a TinySet<(Timestamp, TxnId)>)>,
    ) -> Vec<(Timestamp, TxnId, &'a Key, &'a LoggedWrite)> {
        let mut out = Vec::new();
        if lo >= hi {
            return out;
        }
        let window = (Bound::Excluded((lo, HIGHEST_TXN)), Bound::Excluded((hi, LOWEST_TXN)));
        for (key, stamps) in keys {
            for &(ts, writer) in stamps.range(window) {
                if let Some(w) = self.get(ts, writer, key) {
                    out.push((ts, writer, key, w));
                }
            }
        }
        out
    }

    /// True if `by_key` indexes exactly the logged writes (for `verify_invariants`).
    pub fn key_index_agrees(&self) -> bool {
        let mut expected: BTreeMap<&Key, BTreeSet<(Timestamp, TxnId)>> = BTreeMap::new();
        for (&stamp, entry) in &self.entries {
            for key in entry.keys() {
                expected.entry(key).or_default().insert(stamp);
            }
        }
        expected.len() == self.by_key.len()
            && self.by_key.iter().all(|(k, set)| expected.get(k).is_some_and(|e| e.iter().eq(set.iter())))
    }

    /// Timestamp of the newest write below `below` that `accept` admits (exact when `below` is
    /// at or above the watermark; possibly lower, never higher, below it). Trimmed writes are
    /// committed, so every reader admits them.
    pub fn newest_below(
        &self,
        below: Timestamp,
        accept: impl Fn(Timestamp, TxnId, &LoggedWrite) -> bool,
    ) -> Option<Timestamp> {
        let logged = self
            .entries
            .range(..(below, LOWEST_TXN))
            .rev()
            .find(|(&(ts, writer), entry)| entry.values().any(|w| accept(ts, writer, w)))
            .map(|(&(ts, _), _)| ts);
        let trimmed = self.trimmed_through.filter(|&ts| ts < below);
        logged.max(trimmed)
    }

    /// Timestamp of the newest write.
    pub fn newest(&self) -> Option<Timestamp> {
        self.entries.keys().next_back().map(|&(ts, _)| ts).max(self.trimmed_through)
    }

    /// Every logged write, for re-padding rows after ADD COLUMN.
    pub fn writes_mut(&mut self) -> impl Iterator<Item = (Timestamp, TxnId, &Key, &mut LoggedWrite)> {
        self.entries
            .iter_mut()
            .flat_map(|(&(ts, writer), entry)| entry.iter_mut().map(move |(key, w)| (ts, writer, key, w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::from([b].as_slice())
    }

    fn write(state: VersionState) -> LoggedWrite {
        LoggedWrite { state, row: None }
    }

    #[test]
    fn between_in_looks_keys_up_and_gives_up_past_max_keys() {
        let mut log = WriteLog::default();
        for t in 1..=6u64 {
            log.record(Timestamp::at(t), TxnId([t as u8; 32]), &key(t as u8), write(VersionState::Committed));
        }
        log.record(Timestamp::at(7), TxnId([7; 32]), &key(2), write(VersionState::Prepared));
        let span = |a: u8, b: u8| KeyRange { start: Bound::Included(vec![a]), end: Bound::Included(vec![b]) };
        let times = |found: Option<Vec<(Timestamp, TxnId, &Key, &LoggedWrite)>>| {
            found.map(|f| {
                let mut t: Vec<u64> = f.iter().map(|(ts, ..)| ts.time).collect();
                t.sort();
                t
            })
        };
        let (lo, hi) = (Timestamp::at(1), Timestamp::at(8));
        assert_eq!(
            times(log.between_in(lo, hi, &[span(2, 3)], 2)),
            Some(vec![2, 3, 7]),
            "key 2 twice, key 3 once; ts 1 excluded"
        );
        assert_eq!(times(log.between_in(lo, hi, &[span(2, 4)], 2)), None, "three keys in range, two allowed");
        assert_eq!(times(log.between_in(lo, hi, &[span(4, 2)], 0)), Some(vec![]), "an empty range holds no key");
        assert_eq!(times(log.between_in(hi, lo, &[span(2, 3)], 9)), Some(vec![]), "inverted window");
        log.remove(Timestamp::at(7), TxnId([7; 32]), &[2]);
        log.trim(Timestamp::at(3), 0);
        assert_eq!(
            times(log.between_in(Timestamp::GENESIS, hi, &[span(1, 6)], 9)),
            Some(vec![3, 4, 5, 6]),
            "removed and trimmed writes leave the index"
        );
        assert_eq!(log.by_key.len(), 4);
    }

    #[test]
    fn between_is_exclusive_and_ordered() {
        let mut log = WriteLog::default();
        for t in [1, 2, 3, 4] {
            log.record(Timestamp::at(t), TxnId([t as u8; 32]), &key(t as u8), write(VersionState::Committed));
        }
        let got: Vec<u64> = log.between(Timestamp::at(1), Timestamp::at(4)).map(|((ts, _), _)| ts.time).collect();
        assert_eq!(got, vec![2, 3]);
        assert_eq!(log.between(Timestamp::at(3), Timestamp::at(3)).count(), 0);
        assert_eq!(log.between(Timestamp::at(4), Timestamp::at(1)).count(), 0);
        assert_eq!(log.between(Timestamp::GENESIS, Timestamp::MAX).count(), 4);
    }

    #[test]
    fn trim_keeps_prepared_and_remembers_the_newest_trimmed() {
        let mut log = WriteLog::default();
        log.record(Timestamp::at(1), TxnId([1; 32]), &key(1), write(VersionState::Committed));
        log.record(Timestamp::at(2), TxnId([2; 32]), &key(2), write(VersionState::Prepared));
        log.record(Timestamp::at(3), TxnId([3; 32]), &key(3), write(VersionState::Committed));
        log.record(Timestamp::at(5), TxnId([5; 32]), &key(5), write(VersionState::Committed));
        assert_eq!(log.trim(Timestamp::at(4), 0).len(), 2);
        assert_eq!((log.entries(), log.writes()), (2, 2));
        assert_eq!(
            log.newest_below(Timestamp::at(5), |_, _, _| true),
            Some(Timestamp::at(3)),
            "trimmed writes still count"
        );
        assert_eq!(log.newest_below(Timestamp::at(3), |_, _, _| true), Some(Timestamp::at(2)));
        assert_eq!(log.newest(), Some(Timestamp::at(5)));
        assert!(log.remove(Timestamp::at(2), TxnId([2; 32]), &[2]).is_some());
        assert_eq!((log.entries(), log.writes()), (1, 1));
    }

    #[test]
    fn trim_keeps_the_writes_near_the_newest_committed_one() {
        let mut log = WriteLog::default();
        for t in [10, 20, 95, 100] {
            log.record(Timestamp::at(t), TxnId([t as u8; 32]), &key(t as u8), write(VersionState::Committed));
        }
        log.record(Timestamp::at(200), TxnId([200; 32]), &key(200), write(VersionState::Prepared));
        // The watermark passed everything committed, but writes within 10 of the newest
        // committed one (100; the prepared 200 does not count) stay.
        assert_eq!(log.trim(Timestamp::at(150), 10).len(), 2);
        assert_eq!(log.trimmed_through(), Some(Timestamp::at(20)));
        assert_eq!(log.trimmed_to(), Timestamp::at(90));
        assert_eq!(log.between(Timestamp::at(80), Timestamp::MAX).count(), 3);
        // A later trim with the same bounds has nothing to do.
        assert_eq!(log.trim(Timestamp::at(160), 10).len(), 0);
    }
}
