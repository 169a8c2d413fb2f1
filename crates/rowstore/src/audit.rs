//! A full consistency audit of the store's redundant structures, for tests and debugging.

use crate::chain::Key;
use crate::refs::VersionState;
use crate::store::RowStore;
use crate::table::Table;
use pistou_core::{Timestamp, TxnId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

impl RowStore {
    /// Checks every invariant linking versions, indexes, write logs, the per-writer index,
    /// the gc queues, the version cap and the counters; describes the first violation found.
    /// O(size of the store): meant for tests, simulations and debugging, not the hot path.
    pub fn verify_invariants(&self) -> Result<(), String> {
        let mut prepared: BTreeMap<TxnId, (Timestamp, BTreeMap<String, BTreeSet<Key>>)> = BTreeMap::new();
        for (name, table) in &self.tables {
            if table.schema.storage_name() != name {
                return Err(format!(
                    "table {name} holds the schema of a table stored as {}",
                    table.schema.storage_name()
                ));
            }
            audit_table(name, table, self.watermark, self.limits.version_cap, &mut prepared)
                .map_err(|e| format!("table {name}: {e}"))?;
        }
        let recorded: BTreeMap<TxnId, (Timestamp, BTreeMap<String, BTreeSet<Key>>)> =
            self.writers.iter().map(|(w, p)| (*w, (p.ts, p.keys.clone()))).collect();
        if recorded != prepared {
            return Err("the per-writer index does not list exactly the prepared versions".into());
        }
        Ok(())
    }
}

type PreparedByWriter = BTreeMap<TxnId, (Timestamp, BTreeMap<String, BTreeSet<Key>>)>;

fn audit_table(
    name: &str,
    t: &Table,
    watermark: Timestamp,
    cap: usize,
    prepared: &mut PreparedByWriter,
) -> Result<(), String> {
    let width = t.schema.columns.len();
    let mut versions = 0;
    let mut prepared_versions = 0;
    let mut index_counts: Vec<BTreeMap<(Vec<u8>, Key), usize>> = vec![BTreeMap::new(); t.indexes.len()];
    let mut queue = BTreeSet::new();
    for (key, chain) in &t.rows {
        let at = || format!("key {}", hex::encode(key));
        if chain.versions.is_empty() {
            return Err(format!("{}: empty chain", at()));
        }
        if !chain.versions.windows(2).all(|w| (w[0].ts, w[0].writer) < (w[1].ts, w[1].writer)) {
            return Err(format!("{}: versions not strictly ascending", at()));
        }
        // A kept tombstone is queued later than its threshold, for when it expires.
        let tombstone_later = chain.is_dead(Timestamp::MAX) && chain.gc_due >= chain.gc_threshold();
        if chain.gc_due != chain.gc_threshold() && !tombstone_later {
            return Err(format!("{}: queued under {:?}, threshold {:?}", at(), chain.gc_due, chain.gc_threshold()));
        }
        if let Some(due) = chain.gc_due {
            queue.insert((due, key.clone()));
        }
        let committed = chain.versions.iter().filter(|v| v.is_committed()).count();
        if chain.versions.len() > cap.max(1) && committed > 1 {
            return Err(format!(
                "{}: {} versions exceed the cap with {committed} committed",
                at(),
                chain.versions.len()
            ));
        }
        for v in &chain.versions {
            versions += 1;
            if let Some(row) = &v.row {
                if row.len() != width {
                    return Err(format!("{}: row of {} values, schema has {width}", at(), row.len()));
                }
                for (i, index) in t.indexes.iter().enumerate() {
                    *index_counts[i].entry((t.schema.index_key(&index.schema, row), key.clone())).or_insert(0) += 1;
                }
            }
            let logged = t.log.get(v.ts, v.writer, key);
            let must_be_logged = v.state == VersionState::Prepared || v.ts >= watermark;
            match logged {
                Some(l) if l.state != v.state => return Err(format!("{}: log state differs from version state", at())),
                Some(l) if !same_row(&l.row, &v.row) => {
                    return Err(format!("{}: log row is not the version's row", at()))
                }
                None if must_be_logged => return Err(format!("{}: version at {} missing from the log", at(), v.ts)),
                _ => {}
            }
            if v.state == VersionState::Prepared {
                prepared_versions += 1;
                let entry = prepared.entry(v.writer).or_insert_with(|| (v.ts, BTreeMap::new()));
                if entry.0 != v.ts {
                    return Err(format!("writer {} prepared at two timestamps", v.writer));
                }
                entry.1.entry(name.to_string()).or_default().insert(key.clone());
            }
        }
    }
    if queue != t.gc_queue {
        return Err("gc queue differs from the chains' thresholds".into());
    }
    if (versions, prepared_versions) != (t.versions, t.prepared) {
        return Err(format!("counters ({}, {}) but counted ({versions}, {prepared_versions})", t.versions, t.prepared));
    }
    let mut writes = 0;
    for ((ts, writer), entry) in t.log.iter() {
        if entry.is_empty() {
            return Err("empty log entry".into());
        }
        for (key, w) in entry {
            writes += 1;
            if let Some(row) = &w.row {
                for (i, index) in t.indexes.iter().enumerate() {
                    *index_counts[i].entry((t.schema.index_key(&index.schema, row), key.clone())).or_insert(0) += 1;
                }
            }
            if w.state == VersionState::Committed && *ts < t.log.trimmed_to() {
                return Err(format!("committed write at {ts} below the log's trim point still logged"));
            }
            if w.row.as_ref().is_some_and(|r| r.len() != width) {
                return Err(format!("logged row at {ts} not padded to the schema"));
            }
            let version = t.rows.get(key).and_then(|c| c.versions.iter().find(|v| v.ts == *ts && v.writer == *writer));
            if version.is_none() && w.state == VersionState::Prepared {
                return Err(format!("prepared write at {ts} has no version"));
            }
        }
    }
    for (index, expected) in t.indexes.iter().zip(&index_counts) {
        let actual: BTreeMap<(Vec<u8>, Key), usize> = index.counts().map(|(k, c)| (k.clone(), *c)).collect();
        if &actual != expected {
            return Err(format!(
                "index {} entries differ from the stored versions and logged writes",
                index.schema.name
            ));
        }
    }
    if writes != t.log.writes() {
        return Err("log write counter is off".into());
    }
    if !t.log.key_index_agrees() {
        return Err("the log's by-key index differs from its entries".into());
    }
    if t.log.trimmed_through().is_some_and(|ts| ts >= watermark) {
        return Err("trimmed a write at or above the watermark".into());
    }
    if t.log.trimmed_to() > watermark {
        return Err("the log's trim point passed the watermark".into());
    }
    Ok(())
}

fn same_row<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}
