//! Secondary indexes: one entry per (index key, primary key) that some stored version has.

use crate::chain::Key;
use pistou_types::{IndexSchema, KeyRange, Row, TableSchema};
use std::collections::BTreeMap;
use std::ops::Bound;

/// Entries count the stored versions and the logged writes holding each (index key, primary
/// key), so an entry goes exactly when nothing of the key has that index key any more. Readers
/// re-check the visible version's index key, so an entry of an older or newer version never
/// surfaces a wrong row; counting logged writes lets Pesto's completeness check find, by index
/// key, every logged write that could satisfy a predicate (`Table::writes_via_index`).
#[derive(Clone, Debug)]
pub(crate) struct SecondaryIndex {
    pub schema: IndexSchema,
    entries: BTreeMap<(Vec<u8>, Key), usize>,
}

impl SecondaryIndex {
    pub fn new(schema: IndexSchema) -> Self {
        SecondaryIndex { schema, entries: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Counts `count` more holders (versions, logged writes) of `key` holding `row`.
    pub fn add(&mut self, table: &TableSchema, key: &Key, row: &Row, count: usize) {
        *self.entries.entry((table.index_key(&self.schema, row), key.clone())).or_insert(0) += count;
    }

    /// Forgets one version of `key` holding `row`.
    pub fn remove(&mut self, table: &TableSchema, key: &Key, row: &Row) {
        let entry = (table.index_key(&self.schema, row), key.clone());
        if let Some(count) = self.entries.get_mut(&entry) {
            *count -= 1;
            if *count == 0 {
                self.entries.remove(&entry);
            }
        }
    }

    /// Entries whose index key lies in `range`, ordered by (index key, primary key).
    pub fn range<'a>(&'a self, range: &'a KeyRange) -> impl Iterator<Item = (&'a [u8], &'a Key)> + 'a {
        let start = match &range.start {
            Bound::Included(s) | Bound::Excluded(s) => Bound::Included((s.clone(), Key::from(&[][..]))),
            Bound::Unbounded => Bound::Unbounded,
        };
        self.entries
            .range((start, Bound::Unbounded))
            .map(|((index_key, pk), _)| (index_key.as_slice(), pk))
            .take_while(move |(index_key, _)| match &range.end {
                Bound::Included(e) => *index_key <= e.as_slice(),
                Bound::Excluded(e) => *index_key < e.as_slice(),
                Bound::Unbounded => true,
            })
            .filter(move |(index_key, _)| range.contains(index_key))
    }

    /// Every entry with its count, for the invariant audit.
    pub fn counts(&self) -> impl Iterator<Item = (&(Vec<u8>, Key), &usize)> {
        self.entries.iter()
    }
}
