//! The versions of one primary key.

use crate::refs::{version_of, VersionRef, VersionState};
use crate::timestamp::successor;
use pistou_core::{Timestamp, TxnId};
use pistou_types::{Row, Version};
use std::sync::Arc;

/// Primary keys, shared between the row map, the write log, the per-writer index and the
/// garbage-collection queue: inline when short (every B-tree search over them then stays
/// inside the tree's nodes), else one shared allocation.
pub(crate) type Key = pistou_types::ShortKey;

/// One stored version of a row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredVersion {
    pub ts: Timestamp,
    pub writer: TxnId,
    pub state: VersionState,
    /// `None` is a deletion. The same allocation is shared with the write log.
    pub row: Option<Arc<Row>>,
}

impl StoredVersion {
    pub fn view(&self) -> VersionRef<'_> {
        VersionRef { ts: self.ts, writer: self.writer, state: self.state, row: self.row.as_deref() }
    }

    pub fn sql_version(&self) -> Version {
        version_of(self.ts, self.writer, self.state)
    }

    pub fn is_committed(&self) -> bool {
        self.state == VersionState::Committed
    }
}

/// All versions of one key, ascending by (ts, writer). Ties on ts (only a Byzantine client
/// reuses a timestamp) are ordered by writer id, so every replica picks the same one.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    pub versions: Vec<StoredVersion>,
    /// The threshold this key is queued under in its table's gc queue (always
    /// `gc_threshold()` once the table has rescheduled the key, or later for a tombstone
    /// kept past it: `StoreLimits::tombstone_keep_us`).
    pub gc_due: Option<Timestamp>,
    /// Reads below this timestamp are refused because the version cap deleted versions they
    /// could have needed (GENESIS while the cap never fired).
    pub cap_floor: Timestamp,
}

impl Default for Chain {
    fn default() -> Self {
        Chain { versions: Vec::new(), gc_due: None, cap_floor: Timestamp::GENESIS }
    }
}

impl Chain {
    fn position(&self, ts: Timestamp, writer: &TxnId) -> Result<usize, usize> {
        self.versions.binary_search_by(|v| (v.ts, &v.writer).cmp(&(ts, writer)))
    }

    pub fn get_mut(&mut self, ts: Timestamp, writer: &TxnId) -> Option<&mut StoredVersion> {
        let i = self.position(ts, writer).ok()?;
        self.versions.get_mut(i)
    }

    /// Adds `version` unless one with the same (ts, writer) exists; true if added.
    pub fn insert(&mut self, version: StoredVersion) -> bool {
        match self.position(version.ts, &version.writer) {
            Ok(_) => false,
            Err(i) => {
                if self.versions.len() == self.versions.capacity() {
                    // Most keys hold one version: grow from one slot (doubling), not from
                    // Vec's minimum of four.
                    self.versions.reserve_exact(self.versions.len().max(1));
                }
                self.versions.insert(i, version);
                true
            }
        }
    }

    /// Removes the version of (ts, writer) if `pred` accepts it.
    pub fn remove_if(
        &mut self,
        ts: Timestamp,
        writer: &TxnId,
        pred: impl Fn(&StoredVersion) -> bool,
    ) -> Option<StoredVersion> {
        let i = self.position(ts, writer).ok()?;
        pred(self.versions.get(i)?).then(|| self.versions.remove(i))
    }

    /// The newest version with `ts < below` that `accept` takes.
    pub fn newest_below(&self, below: Timestamp, accept: impl Fn(&StoredVersion) -> bool) -> Option<&StoredVersion> {
        let end = self.versions.partition_point(|v| v.ts < below);
        self.versions.get(..end)?.iter().rev().find(|v| accept(v))
    }

    /// The smallest watermark that would give `collect` something to do: the second-oldest
    /// committed version's ts (from then on the oldest one is shadowed below the watermark),
    /// or the ts of a lone committed deletion (from then on the key can be dropped).
    pub fn gc_threshold(&self) -> Option<Timestamp> {
        let mut committed = self.versions.iter().filter(|v| v.is_committed());
        match (committed.next(), committed.next()) {
            (_, Some(second)) => Some(second.ts),
            (Some(only), None) if self.versions.len() == 1 && only.row.is_none() => Some(only.ts),
            _ => None,
        }
    }

    /// GC at `watermark`: removes every committed version older than the newest committed one
    /// below the watermark. Prepared versions stay (only abort removes them).
    pub fn collect(&mut self, watermark: Timestamp) -> Vec<StoredVersion> {
        match self.versions.iter().rposition(|v| v.is_committed() && v.ts < watermark) {
            Some(keep) => self.remove_committed_before(keep, usize::MAX),
            None => Vec::new(),
        }
    }

    /// True if all that is left is a committed deletion below the watermark: readers at or
    /// above the watermark see no row either way, so the key can go.
    pub fn is_dead(&self, watermark: Timestamp) -> bool {
        matches!(self.versions.as_slice(), [only] if only.is_committed() && only.row.is_none() && only.ts < watermark)
    }

    /// Version cap (Pesto App. B.3 (ii)): while more than `cap` versions exist, removes the
    /// oldest committed ones, never the newest committed one (readers need a committed base if
    /// every prepared writer aborts). Raises `cap_floor` past the oldest committed survivor.
    pub fn enforce_cap(&mut self, cap: usize) -> Vec<StoredVersion> {
        let excess = self.versions.len().saturating_sub(cap.max(1));
        if excess == 0 {
            return Vec::new();
        }
        let Some(newest_committed) = self.versions.iter().rposition(StoredVersion::is_committed) else {
            return Vec::new();
        };
        let removed = self.remove_committed_before(newest_committed, excess);
        // Everything removed is older than every committed survivor, so a reader above the
        // oldest survivor (which every read policy accepts) never needed a removed version.
        if let Some(oldest) = self.versions.iter().find(|v| v.is_committed()) {
            if !removed.is_empty() {
                self.cap_floor = self.cap_floor.max(successor(oldest.ts));
            }
        }
        removed
    }

    /// Removes up to `max` committed versions at positions before `end`, oldest first.
    fn remove_committed_before(&mut self, end: usize, max: usize) -> Vec<StoredVersion> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.versions.len());
        for (i, v) in std::mem::take(&mut self.versions).into_iter().enumerate() {
            if i < end && removed.len() < max && v.is_committed() {
                removed.push(v);
            } else {
                kept.push(v);
            }
        }
        // Collected chains are mostly down to one version: do not keep the old capacity.
        kept.shrink_to_fit();
        self.versions = kept;
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(time: u64, committed: bool, row: bool) -> StoredVersion {
        StoredVersion {
            ts: Timestamp::at(time),
            writer: TxnId([time as u8; 32]),
            state: if committed { VersionState::Committed } else { VersionState::Prepared },
            row: row.then(|| Arc::new(vec![])),
        }
    }

    fn chain(versions: Vec<StoredVersion>) -> Chain {
        let mut c = Chain::default();
        for x in versions {
            assert!(c.insert(x));
        }
        c
    }

    fn times(c: &Chain) -> Vec<u64> {
        c.versions.iter().map(|v| v.ts.time).collect()
    }

    #[test]
    fn versions_stay_sorted_and_unique() {
        let mut c = chain(vec![v(5, true, true), v(1, true, true), v(3, false, true)]);
        assert_eq!(times(&c), vec![1, 3, 5]);
        assert!(!c.insert(v(3, true, false)), "same (ts, writer) is not added twice");
        let tie = StoredVersion { writer: TxnId([0; 32]), ..v(3, true, true) };
        assert!(c.insert(tie));
        assert_eq!(c.versions[1].writer, TxnId([0; 32]), "ties ordered by writer");
    }

    #[test]
    fn newest_below_respects_bound_and_filter() {
        let c = chain(vec![v(1, true, true), v(3, false, true), v(5, true, false)]);
        assert_eq!(c.newest_below(Timestamp::at(5), |_| true).map(|v| v.ts.time), Some(3));
        assert_eq!(c.newest_below(Timestamp::at(5), StoredVersion::is_committed).map(|v| v.ts.time), Some(1));
        assert_eq!(c.newest_below(Timestamp::at(1), |_| true), None);
        assert_eq!(c.newest_below(Timestamp::MAX, |_| true).map(|v| v.ts.time), Some(5));
    }

    #[test]
    fn gc_threshold_and_collect() {
        let mut c = chain(vec![v(1, true, true), v(2, false, true), v(4, true, true), v(6, true, true)]);
        assert_eq!(c.gc_threshold(), Some(Timestamp::at(4)));
        assert!(c.collect(Timestamp::at(4)).is_empty(), "4 is not below the watermark");
        let removed = c.collect(Timestamp::at(5));
        assert_eq!(removed.iter().map(|v| v.ts.time).collect::<Vec<_>>(), vec![1]);
        assert_eq!(times(&c), vec![2, 4, 6], "the prepared version stays");
        assert_eq!(c.gc_threshold(), Some(Timestamp::at(6)));
        let lone_deletion = chain(vec![v(3, true, false)]);
        assert_eq!(lone_deletion.gc_threshold(), Some(Timestamp::at(3)));
        assert!(!lone_deletion.is_dead(Timestamp::at(3)) && lone_deletion.is_dead(Timestamp::at(4)));
        assert_eq!(chain(vec![v(3, true, true)]).gc_threshold(), None);
        assert_eq!(chain(vec![v(3, true, false), v(4, false, true)]).gc_threshold(), None);
    }

    #[test]
    fn cap_keeps_prepared_and_newest_committed() {
        let mut c =
            chain(vec![v(1, true, true), v(2, false, true), v(3, true, true), v(4, true, true), v(5, false, true)]);
        let removed = c.enforce_cap(3);
        assert_eq!(removed.iter().map(|v| v.ts.time).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(times(&c), vec![2, 4, 5]);
        assert_eq!(c.cap_floor, successor(Timestamp::at(4)));
        let mut all_prepared = chain(vec![v(1, true, true), v(2, false, true), v(3, false, true)]);
        assert!(all_prepared.enforce_cap(1).is_empty(), "the only committed version is kept");
        assert_eq!(all_prepared.cap_floor, Timestamp::GENESIS);
    }
}
