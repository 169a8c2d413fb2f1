//! Ordered maps and sets that hold one entry inline.
//!
//! A replica keeps a few ordered sets per row key (committed and prepared versions, readers,
//! read timestamps) and nearly all of them hold zero or one entry. A `BTreeMap` with one entry
//! still allocates a whole leaf node (about 630 bytes for a `(Timestamp, TxnId)` key) and keeps
//! it after its last entry is removed; at a million rows that was most of a replica's memory
//! (docs/benchmarks.md, "Replica memory"). These types store one entry inline, switch to a
//! `BTreeMap` from the second one on, and free it again when one entry is left, so the worst
//! case stays O(log n) per operation.

use std::collections::{btree_map, BTreeMap};
use std::ops::RangeBounds;

/// An ordered map holding its only entry inline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TinyMap<K, V> {
    #[default]
    Empty,
    One(K, V),
    Many(BTreeMap<K, V>),
}

impl<K: Ord, V> TinyMap<K, V> {
    pub const fn new() -> Self {
        TinyMap::Empty
    }

    pub fn len(&self) -> usize {
        match self {
            TinyMap::Empty => 0,
            TinyMap::One(..) => 1,
            TinyMap::Many(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        match self {
            TinyMap::Empty => None,
            TinyMap::One(k, v) => (k == key).then_some(v),
            TinyMap::Many(m) => m.get(key),
        }
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match std::mem::take(self) {
            TinyMap::Empty => {
                *self = TinyMap::One(key, value);
                None
            }
            TinyMap::One(k, v) if k == key => {
                *self = TinyMap::One(k, value);
                Some(v)
            }
            TinyMap::One(k, v) => {
                *self = TinyMap::Many(BTreeMap::from([(k, v), (key, value)]));
                None
            }
            TinyMap::Many(mut m) => {
                let old = m.insert(key, value);
                *self = TinyMap::Many(m);
                old
            }
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        match std::mem::take(self) {
            TinyMap::Empty => None,
            TinyMap::One(k, v) if &k == key => Some(v),
            one @ TinyMap::One(..) => {
                *self = one;
                None
            }
            TinyMap::Many(mut m) => {
                let old = m.remove(key);
                *self = Self::from_map(m);
                old
            }
        }
    }

    /// Splits off the entries at or above `at` and returns them (as `BTreeMap::split_off`).
    pub fn split_off(&mut self, at: &K) -> TinyMap<K, V> {
        match std::mem::take(self) {
            TinyMap::Empty => TinyMap::Empty,
            TinyMap::One(k, v) if &k >= at => TinyMap::One(k, v),
            one @ TinyMap::One(..) => {
                *self = one;
                TinyMap::Empty
            }
            TinyMap::Many(mut m) => {
                let upper = m.split_off(at);
                *self = Self::from_map(m);
                Self::from_map(upper)
            }
        }
    }

    pub fn iter(&self) -> Iter<'_, K, V> {
        match self {
            TinyMap::Empty => Iter::One(None),
            TinyMap::One(k, v) => Iter::One(Some((k, v))),
            TinyMap::Many(m) => Iter::Many(m.range(..)),
        }
    }

    pub fn range<R: RangeBounds<K>>(&self, range: R) -> Iter<'_, K, V> {
        match self {
            TinyMap::Empty => Iter::One(None),
            TinyMap::One(k, v) => Iter::One(range.contains(k).then_some((k, v))),
            TinyMap::Many(m) => Iter::Many(m.range(range)),
        }
    }

    /// The inline form of `m` when it has at most one entry.
    fn from_map(mut m: BTreeMap<K, V>) -> Self {
        match m.len() {
            0 => TinyMap::Empty,
            1 => match m.pop_first() {
                Some((k, v)) => TinyMap::One(k, v),
                None => TinyMap::Empty,
            },
            _ => TinyMap::Many(m),
        }
    }
}

impl<K: Ord, V> IntoIterator for TinyMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::iter::Chain<
        std::option::IntoIter<(K, V)>,
        std::iter::Flatten<std::option::IntoIter<btree_map::IntoIter<K, V>>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            TinyMap::Empty => (None, None),
            TinyMap::One(k, v) => (Some((k, v)), None),
            TinyMap::Many(m) => (None, Some(m.into_iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// Iterator over a range of a [`TinyMap`], in key order, from either end.
pub enum Iter<'a, K, V> {
    One(Option<(&'a K, &'a V)>),
    Many(btree_map::Range<'a, K, V>),
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::One(one) => one.take(),
            Iter::Many(r) => r.next(),
        }
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::One(one) => one.take(),
            Iter::Many(r) => r.next_back(),
        }
    }
}

/// An ordered set holding its only element inline (a [`TinyMap`] to `()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TinySet<T>(TinyMap<T, ()>);

impl<T> Default for TinySet<T> {
    fn default() -> Self {
        TinySet(TinyMap::Empty)
    }
}

impl<T: Ord> TinySet<T> {
    pub const fn new() -> Self {
        TinySet(TinyMap::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, value: &T) -> bool {
        self.0.contains_key(value)
    }

    /// True if `value` was not present.
    pub fn insert(&mut self, value: T) -> bool {
        self.0.insert(value, ()).is_none()
    }

    /// True if `value` was present.
    pub fn remove(&mut self, value: &T) -> bool {
        self.0.remove(value).is_some()
    }

    pub fn split_off(&mut self, at: &T) -> TinySet<T> {
        TinySet(self.0.split_off(at))
    }

    pub fn last(&self) -> Option<&T> {
        self.iter().next_back()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn range<R: RangeBounds<T>>(&self, range: R) -> impl DoubleEndedIterator<Item = &T> {
        self.0.range(range).map(|(k, _)| k)
    }
}

impl<T: Ord> IntoIterator for TinySet<T> {
    type Item = T;
    type IntoIter = std::iter::Map<<TinyMap<T, ()> as IntoIterator>::IntoIter, fn((T, ())) -> T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(|(k, ())| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every operation agrees with `BTreeSet` over a deterministic mixed sequence, and the
    /// inline form is used whenever at most one element is left.
    #[test]
    fn tiny_set_behaves_as_a_btree_set() {
        let mut tiny = TinySet::new();
        let mut reference = BTreeSet::new();
        let mut x: u64 = 7;
        for step in 0..5_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let value = (x >> 33) % 12;
            match step % 5 {
                0 | 1 => assert_eq!(tiny.insert(value), reference.insert(value)),
                2 | 3 => assert_eq!(tiny.remove(&value), reference.remove(&value)),
                _ => {
                    let upper = tiny.split_off(&value);
                    let reference_upper = reference.split_off(&value);
                    assert_eq!(
                        upper.iter().copied().collect::<Vec<_>>(),
                        reference_upper.iter().copied().collect::<Vec<_>>()
                    );
                    if step % 2 == 0 {
                        // Put the upper part back half of the time, so sets grow large too.
                        for v in reference_upper {
                            tiny.insert(v);
                            reference.insert(v);
                        }
                    }
                }
            }
            assert_eq!(tiny.len(), reference.len());
            assert_eq!(tiny.iter().copied().collect::<Vec<_>>(), reference.iter().copied().collect::<Vec<_>>());
            assert_eq!(
                tiny.iter().rev().copied().collect::<Vec<_>>(),
                reference.iter().rev().copied().collect::<Vec<_>>()
            );
            assert_eq!(
                tiny.range(3..9).copied().collect::<Vec<_>>(),
                reference.range(3..9).copied().collect::<Vec<_>>()
            );
            assert_eq!(tiny.range(..value).next_back(), reference.range(..value).next_back());
            assert_eq!(tiny.contains(&value), reference.contains(&value));
            assert_eq!(tiny.last(), reference.last());
            assert_eq!(matches!(tiny.0, TinyMap::Many(_)), reference.len() > 1, "inline iff at most one element");
        }
    }

    #[test]
    fn tiny_map_replaces_and_removes_values() {
        let mut m = TinyMap::new();
        assert_eq!(m.insert(5, "a"), None);
        assert_eq!(m.insert(5, "b"), Some("a"));
        assert_eq!(m.get(&5), Some(&"b"));
        assert_eq!(m.insert(2, "c"), None);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(&2, &"c"), (&5, &"b")]);
        assert_eq!(m.remove(&2), Some("c"));
        assert!(matches!(m, TinyMap::One(5, "b")), "back inline at one entry");
        assert_eq!(m.remove(&2), None);
        assert_eq!(m.remove(&5), Some("b"));
        assert!(m.is_empty());
        assert_eq!(m.into_iter().count(), 0);
    }
}
