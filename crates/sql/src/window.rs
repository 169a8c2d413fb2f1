//! Window functions (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`): plan types and the
//! frame arithmetic, shared by the binder (`bind/window.rs`) and the executor
//! (`exec/window.rs`).
//!
//! A SELECT's window calls run after FROM/WHERE (or after GROUP BY/HAVING, over the grouped
//! rows) and before the select list: each call appends one column to every input row, and
//! the select list and ORDER BY read it like any other column.

use crate::expr::Expr;
use crate::plan::AggCall;
use crate::types::SqlType;

/// Placeholder column numbers of window calls while a SELECT is being bound: call `k` is
/// `Expr::Column(WINDOW_COLUMN_BASE + k)` until the width of the input row is known, then it
/// becomes `Expr::Column(width + k)`.
pub(crate) const WINDOW_COLUMN_BASE: usize = 1 << 40;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(buckets)`.
    Ntile,
    /// `lag(value [, offset [, default]])`.
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// `nth_value(value, n)`.
    NthValue,
    /// An aggregate over the frame (its argument is in the call).
    Aggregate(AggCall),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// One end of a frame. Offsets are constant expressions (parameters allowed), evaluated once
/// per statement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Frame {
    /// PostgreSQL's default frame: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (the
    /// whole partition when there is no ORDER BY, since every row is then a peer).
    pub fn default_frame() -> Frame {
        Frame { units: FrameUnits::Range, start: FrameBound::UnboundedPreceding, end: FrameBound::CurrentRow }
    }
}

/// An ORDER BY key of a window.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WindowOrder {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WindowCall {
    pub func: WindowFunc,
    /// Arguments over the input row (for an aggregate, its argument is in the `AggCall`).
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    pub order: Vec<WindowOrder>,
    pub frame: Frame,
    /// Static result type.
    pub ty: Option<SqlType>,
}

/// Frame offsets evaluated for a statement: row or peer-group counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Bound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

/// Where the rows of one partition stand, in window order: `peer_start[i]..peer_end[i]` are
/// the peers of position `i` (equal ORDER BY keys), `group[i]` its peer group's number, and
/// `group_start[g]` where group `g` begins (with the partition's length appended).
pub(crate) struct Peers {
    pub peer_start: Vec<usize>,
    pub peer_end: Vec<usize>,
    pub group: Vec<usize>,
    pub group_start: Vec<usize>,
}

impl Peers {
    /// Peer groups of a partition of `len` rows, where `same(i)` tells whether position
    /// `i` (≥ 1) is a peer of position `i - 1`.
    pub fn new(len: usize, same: impl Fn(usize) -> bool) -> Peers {
        let mut group = Vec::with_capacity(len);
        let mut group_start = Vec::new();
        for i in 0..len {
            if i == 0 || !same(i) {
                group_start.push(i);
            }
            group.push(group_start.len() - 1);
        }
        group_start.push(len);
        let mut peer_start = Vec::with_capacity(len);
        let mut peer_end = Vec::with_capacity(len);
        for g in &group {
            peer_start.push(group_start.get(*g).copied().unwrap_or(0));
            peer_end.push(group_start.get(g + 1).copied().unwrap_or(len));
        }
        Peers { peer_start, peer_end, group, group_start }
    }

    fn groups(&self) -> usize {
        self.group_start.len().saturating_sub(1)
    }

    fn start_of_group(&self, g: usize) -> usize {
        let len = self.group_start.last().copied().unwrap_or(0);
        self.group_start.get(g).copied().unwrap_or(len).min(len)
    }

    /// The frame of position `i`: positions `start..end` of the partition (empty when
    /// `start >= end`). RANGE with an offset is resolved by the binder's refusal (0A000).
    pub fn frame(&self, i: usize, units: FrameUnits, start: Bound, end: Bound) -> (usize, usize) {
        let len = self.peer_start.len();
        let sat = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
        let peer_start = self.peer_start.get(i).copied().unwrap_or(i);
        let peer_end = self.peer_end.get(i).copied().unwrap_or(i + 1);
        let g = self.group.get(i).copied().unwrap_or(0);
        let s = match (start, units) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::CurrentRow, FrameUnits::Rows) => i,
            (Bound::CurrentRow, _) => peer_start,
            (Bound::Preceding(k), FrameUnits::Rows) => i.saturating_sub(sat(k)),
            (Bound::Following(k), FrameUnits::Rows) => i.saturating_add(sat(k)).min(len),
            (Bound::Preceding(k), _) => self.start_of_group(g.saturating_sub(sat(k))),
            (Bound::Following(k), _) => self.start_of_group(g.saturating_add(sat(k))),
            (Bound::UnboundedFollowing, _) => len,
        };
        let e = match (end, units) {
            (Bound::UnboundedFollowing, _) => len,
            (Bound::CurrentRow, FrameUnits::Rows) => i + 1,
            (Bound::CurrentRow, _) => peer_end,
            (Bound::Preceding(k), FrameUnits::Rows) => (i + 1).saturating_sub(sat(k)),
            (Bound::Following(k), FrameUnits::Rows) => i.saturating_add(sat(k)).saturating_add(1).min(len),
            (Bound::Preceding(k), _) => match g.checked_sub(sat(k)) {
                Some(target) => self.start_of_group(target.saturating_add(1)),
                None => 0,
            },
            (Bound::Following(k), _) => {
                let target = g.saturating_add(sat(k));
                if target >= self.groups() {
                    len
                } else {
                    self.start_of_group(target + 1)
                }
            }
            (Bound::UnboundedPreceding, _) => 0,
        };
        (s, e)
    }
}

/// The bucket (1-based) of position `i` among `len` rows split into `buckets` (> 0) as
/// PostgreSQL's ntile does: sizes differ by at most one, larger buckets first.
pub(crate) fn ntile_bucket(i: usize, len: usize, buckets: usize) -> usize {
    let buckets = buckets.max(1);
    let per = len / buckets;
    let extra = len % buckets;
    let big = extra * (per + 1);
    if i < big {
        i / (per + 1) + 1
    } else {
        // per > 0 here: i < len, and when per == 0 every row is in a big bucket.
        (i - big) / per.max(1) + extra + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(keys: &[i32]) -> Peers {
        Peers::new(keys.len(), |i| keys[i] == keys[i - 1])
    }

    #[test]
    fn peer_groups() {
        let p = peers(&[1, 1, 2, 3, 3, 3]);
        assert_eq!(p.group, vec![0, 0, 1, 2, 2, 2]);
        assert_eq!(p.peer_start, vec![0, 0, 2, 3, 3, 3]);
        assert_eq!(p.peer_end, vec![2, 2, 3, 6, 6, 6]);
        assert_eq!(p.group_start, vec![0, 2, 3, 6]);
        let empty = peers(&[]);
        assert!(empty.group.is_empty());
    }

    #[test]
    fn default_frame_includes_peers() {
        let p = peers(&[1, 1, 2, 3, 3, 3]);
        let f = |i| p.frame(i, FrameUnits::Range, Bound::UnboundedPreceding, Bound::CurrentRow);
        assert_eq!((0..6).map(f).collect::<Vec<_>>(), vec![(0, 2), (0, 2), (0, 3), (0, 6), (0, 6), (0, 6)]);
        // RANGE CURRENT ROW .. UNBOUNDED FOLLOWING starts at the first peer.
        assert_eq!(p.frame(4, FrameUnits::Range, Bound::CurrentRow, Bound::UnboundedFollowing), (3, 6));
    }

    #[test]
    fn rows_offsets_clamp_to_the_partition() {
        let p = peers(&[1, 1, 1, 1, 1]);
        let f = |i, s, e| p.frame(i, FrameUnits::Rows, s, e);
        assert_eq!(f(0, Bound::Preceding(1), Bound::Following(1)), (0, 2));
        assert_eq!(f(2, Bound::Preceding(1), Bound::Following(1)), (1, 4));
        assert_eq!(f(4, Bound::Preceding(1), Bound::Following(1)), (3, 5));
        // Peers do not matter for ROWS.
        assert_eq!(f(2, Bound::UnboundedPreceding, Bound::CurrentRow), (0, 3));
        // Frames entirely before or after the partition are empty.
        assert_eq!(f(0, Bound::Preceding(3), Bound::Preceding(2)), (0, 0));
        assert_eq!(f(4, Bound::Following(1), Bound::Following(3)), (5, 5));
        assert_eq!(f(3, Bound::Preceding(2), Bound::Preceding(1)), (1, 3));
        assert_eq!(f(1, Bound::Following(u64::MAX), Bound::UnboundedFollowing), (5, 5));
    }

    #[test]
    fn groups_offsets_count_peer_groups() {
        // Groups: {0,1} {2} {3,4,5}.
        let p = peers(&[1, 1, 2, 3, 3, 3]);
        let f = |i, s, e| p.frame(i, FrameUnits::Groups, s, e);
        assert_eq!(f(2, Bound::Preceding(1), Bound::Following(1)), (0, 6));
        assert_eq!(f(0, Bound::Preceding(1), Bound::CurrentRow), (0, 2));
        assert_eq!(f(3, Bound::Preceding(1), Bound::Preceding(1)), (2, 3));
        assert_eq!(f(0, Bound::Following(1), Bound::Following(1)), (2, 3));
        assert_eq!(f(3, Bound::Following(1), Bound::UnboundedFollowing), (6, 6));
        assert_eq!(f(0, Bound::Preceding(1), Bound::Preceding(1)), (0, 0));
    }

    #[test]
    fn ntile_matches_postgres() {
        // SELECT ntile(3) OVER (ORDER BY x) FROM generate_series(1, 7) x: 1 1 1 2 2 3 3.
        let b: Vec<usize> = (0..7).map(|i| ntile_bucket(i, 7, 3)).collect();
        assert_eq!(b, vec![1, 1, 1, 2, 2, 3, 3]);
        // More buckets than rows: one row each.
        let b: Vec<usize> = (0..3).map(|i| ntile_bucket(i, 3, 5)).collect();
        assert_eq!(b, vec![1, 2, 3]);
        let b: Vec<usize> = (0..4).map(|i| ntile_bucket(i, 4, 2)).collect();
        assert_eq!(b, vec![1, 1, 2, 2]);
    }
}
