//! Model-based test: random sequences of insert / re-insert / commit / abort / gc applied to a
//! RowStore and to a naive reference (a flat list of every non-aborted version, never
//! collected). Every read the engine and the concurrency check make must agree at or above
//! the watermark (and, with a small version cap, at or above `oldest_readable`).

mod common;

use common::*;
use pistou_core::{ClientId, Timestamp, TxnId};
use pistou_rowstore::{RowStore, StoreLimits, VersionState};
use pistou_sql::keycode::encode_key;
use pistou_sql::{Catalog, KeyRange, ReadAt, Row, Storage, StoredRow, TableSchema, Value, Version, Write, WriteSet};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Clone, Debug)]
struct ModelVersion {
    table: String,
    key: Vec<u8>,
    ts: Timestamp,
    writer: TxnId,
    committed: bool,
    row: Option<Row>,
}

impl ModelVersion {
    fn version(&self) -> Version {
        Version { ts: self.ts, prepared_by: (!self.committed).then_some(self.writer) }
    }
}

struct Model {
    versions: Vec<ModelVersion>,
    watermark: Timestamp,
    /// Writers with prepared versions, and their timestamp.
    prepared: BTreeMap<TxnId, Timestamp>,
}

impl Model {
    fn new() -> Self {
        Model { versions: Vec::new(), watermark: Timestamp::GENESIS, prepared: BTreeMap::new() }
    }

    fn insert(&mut self, writer: TxnId, ts: Timestamp, ws: &WriteSet, committed: bool) -> bool {
        if self.prepared.get(&writer).is_some_and(|&p| p != ts) {
            return false;
        }
        // Below the watermark a prepared write is refused (no reader may still depend on
        // it), a writer already prepared here may commit, and a committed write that never
        // prepared here (a late writeback, catch-up) is installed like any other.
        if ts < self.watermark {
            if self.prepared.contains_key(&writer) {
                if committed {
                    self.commit(writer);
                }
                return true;
            }
            // Older than any tombstone still kept: refused.
            if !committed || ts.time + TOMBSTONE_KEEP_US < self.watermark.time {
                return false;
            }
        }
        for (table, writes) in &ws.tables {
            for (key, write) in writes {
                let exists = self
                    .versions
                    .iter()
                    .any(|v| &v.table == table && &v.key == key && v.ts == ts && v.writer == writer);
                if !exists {
                    let row = match write {
                        Write::Upsert(r) => Some(r.clone()),
                        Write::Delete => None,
                    };
                    self.versions.push(ModelVersion {
                        table: table.clone(),
                        key: key.clone(),
                        ts,
                        writer,
                        committed,
                        row,
                    });
                    if !committed {
                        self.prepared.insert(writer, ts);
                    }
                }
            }
        }
        if committed {
            self.commit(writer);
        }
        true
    }

    fn commit(&mut self, writer: TxnId) {
        self.prepared.remove(&writer);
        self.versions.iter_mut().filter(|v| v.writer == writer).for_each(|v| v.committed = true);
    }

    fn abort(&mut self, writer: TxnId) {
        self.prepared.remove(&writer);
        self.versions.retain(|v| v.writer != writer || v.committed);
    }

    fn visible(&self, table: &str, key: &[u8], at: &ReadAt) -> Option<&ModelVersion> {
        self.versions
            .iter()
            .filter(|v| v.table == table && v.key == key && v.ts < at.ts && (at.visible)(&v.version()))
            .max_by_key(|v| (v.ts, v.writer))
    }

    fn keys(&self, table: &str) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = self.versions.iter().filter(|v| v.table == table).map(|v| v.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    fn scan(&self, schema: &TableSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Vec<StoredRow> {
        self.keys(&schema.name)
            .into_iter()
            .filter(|k| range.contains(k))
            .filter_map(|k| {
                let v = self.visible(&schema.name, &k, at)?;
                Some(StoredRow { key: k, version: v.version(), row: v.row.clone()? })
            })
            .take(limit)
            .collect()
    }

    fn index_scan(&self, schema: &TableSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Vec<StoredRow> {
        let index = &schema.indexes[0];
        let mut rows: Vec<(Vec<u8>, StoredRow)> = self
            .scan(schema, &KeyRange::all(), at, usize::MAX)
            .into_iter()
            .map(|r| (schema.index_key(index, &r.row), r))
            .filter(|(ik, _)| range.contains(ik))
            .collect();
        rows.sort_by(|a, b| (&a.0, &a.1.key).cmp(&(&b.0, &b.1.key)));
        rows.into_iter().map(|(_, r)| r).take(limit).collect()
    }

    fn table_version(&self, table: &str, at: &ReadAt) -> Option<Timestamp> {
        self.versions
            .iter()
            .filter(|v| v.table == table && v.ts < at.ts && (at.visible)(&v.version()))
            .map(|v| v.ts)
            .max()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert { time: u64, client: u64, writes: Vec<(bool, i64, Option<Option<i64>>)>, committed: bool },
    Reinsert { pick: usize, committed: bool },
    Commit { pick: usize },
    Abort { pick: usize },
    Gc { advance: u64 },
}

fn arb_op() -> impl Strategy<Value = Op> {
    let write = (
        any::<bool>(),
        0i64..6,
        prop_oneof![1 => Just(None), 4 => proptest::option::weighted(0.8, 0i64..4).prop_map(Some)],
    );
    prop_oneof![
        6 => (0u64..120, 0u64..2, proptest::collection::vec(write, 1..4), any::<bool>())
            .prop_map(|(time, client, writes, committed)| Op::Insert { time, client, writes, committed }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, committed)| Op::Reinsert { pick, committed }),
        3 => any::<usize>().prop_map(|pick| Op::Commit { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Abort { pick }),
        1 => (0u64..25).prop_map(|advance| Op::Gc { advance }),
    ]
}

fn u_key(id: i64) -> Vec<u8> {
    encode_key([&Value::Text(format!("k{id}"))])
}

fn build(writes: &[(bool, i64, Option<Option<i64>>)]) -> WriteSet {
    let mut ws = WriteSet::default();
    for &(in_u, id, a) in writes {
        if in_u {
            let write = match a {
                Some(v) => Write::Upsert(vec![Value::Text(format!("k{id}")), v.map_or(Value::Null, Value::Int)]),
                None => Write::Delete,
            };
            ws.put("u", u_key(id), write);
        } else {
            let write = match a {
                Some(v) => Write::Upsert(row(id, v)),
                None => Write::Delete,
            };
            ws.put("t", key(id), write);
        }
    }
    ws
}

fn all(_: &Version) -> bool {
    true
}

/// A snapshot-proposal-like policy: committed versions plus the prepared writers with an even id.
fn committed_or_even(v: &Version) -> bool {
    v.prepared_by.is_none_or(|w| w.0[7] % 2 == 0)
}

fn range(lo: i64, hi: i64, enc: fn(i64) -> Vec<u8>) -> KeyRange {
    KeyRange { start: Bound::Included(enc(lo)), end: Bound::Excluded(enc(hi)) }
}

fn int_key(a: i64) -> Vec<u8> {
    encode_key([&Value::Int(a)])
}

fn check(store: &RowStore, model: &Model, catalog: &Catalog, capped: bool) -> Result<(), TestCaseError> {
    store.verify_invariants().map_err(TestCaseError::fail)?;
    let wm = store.watermark();
    prop_assert_eq!(wm, model.watermark);
    let keys: Vec<(&str, Vec<u8>)> = (0..6).flat_map(|id| [("t", key(id)), ("u", u_key(id))]).collect();
    // With the version cap, reads are only defined from each key's oldest readable timestamp.
    let floor = keys.iter().map(|(t, k)| store.oldest_readable(t, k)).max().unwrap_or(wm).max(wm);
    if !capped {
        prop_assert_eq!(floor, wm);
    }
    let step = |n: u64| Timestamp { time: floor.time.saturating_add(n), client: ClientId(0), seq: 0 }.max(floor);
    let reads = [
        floor,
        step(1),
        step(9),
        step(40),
        Timestamp { time: floor.time + 3, client: ClientId(1), seq: 0 },
        Timestamp::MAX,
    ];
    let policies: [&dyn Fn(&Version) -> bool; 3] = [&all, &committed_only, &committed_or_even];
    for read in reads {
        for visible in policies {
            let at = ReadAt { ts: read, visible };
            for name in ["t", "u"] {
                let schema = table(catalog, name);
                for limit in [usize::MAX, 2] {
                    let got = store
                        .scan(schema, &KeyRange::all(), &at, limit)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(got, model.scan(schema, &KeyRange::all(), &at, limit), "scan {} at {}", name, read);
                }
                prop_assert_eq!(
                    store.table_version(schema, &at),
                    model.table_version(name, &at),
                    "table version {} at {}",
                    name,
                    read
                );
                for (t, k) in keys.iter().filter(|(t, _)| *t == name) {
                    let got = store
                        .version_below(t, k, read, |v| visible(&v.version()))
                        .map(|v| (v.ts, v.writer, v.row.cloned()));
                    let want = model.visible(t, k, &at);
                    // A key whose only version was a committed deletion below the watermark is
                    // dropped: the reader sees no version instead of a deletion, i.e. no row.
                    let dropped = got.is_none()
                        && want
                            .is_some_and(|v| v.committed && v.row.is_none() && v.ts.time + TOMBSTONE_KEEP_US < wm.time);
                    let want = want.map(|v| (v.ts, v.writer, v.row.clone()));
                    prop_assert!(dropped || got == want, "version_below {} at {}: {:?} vs {:?}", name, read, got, want);
                }
            }
            let t = table(catalog, "t");
            let got =
                store.scan(t, &range(1, 4, key), &at, usize::MAX).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(got, model.scan(t, &range(1, 4, key), &at, usize::MAX));
            // Single-key ranges take the store's point lookup; key 6 never has a row.
            for id in 0..7 {
                for limit in [0, 1] {
                    let got = store
                        .scan(t, &KeyRange::point(key(id)), &at, limit)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(
                        got,
                        model.scan(t, &KeyRange::point(key(id)), &at, limit),
                        "point scan of {} at {}",
                        id,
                        read
                    );
                }
            }
            let index = &t.indexes[0];
            let null = KeyRange::point(encode_key([&Value::Null]));
            for (r, limit) in [
                (KeyRange::all(), usize::MAX),
                (KeyRange::all(), 2),
                (range(1, 3, int_key), usize::MAX),
                (KeyRange::point(int_key(2)), 9),
                (null, 9),
            ] {
                let got = store.index_scan(t, index, &r, &at, limit).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(got, model.index_scan(t, &r, &at, limit), "index scan {:?} at {}", r, read);
            }
        }
    }
    // The write log: exact above the watermark; below it only prepared writes remain.
    let windows = [
        (Timestamp::GENESIS, Timestamp::MAX),
        (wm, Timestamp::MAX),
        (step(2), step(30)),
        (Timestamp::at(wm.time.saturating_sub(10)), step(5)),
    ];
    for name in ["t", "u"] {
        for (lo, hi) in windows {
            let got: Vec<_> = store
                .writes_between(name, lo, hi)
                .map(|w| (w.ts, w.writer, w.key.to_vec(), w.state == VersionState::Committed, w.row.cloned()))
                .collect();
            let mut want: Vec<_> = model
                .versions
                .iter()
                .filter(|v| v.table == name && lo < v.ts && v.ts < hi && (v.ts >= wm || !v.committed))
                .map(|v| (v.ts, v.writer, v.key.clone(), v.committed, v.row.clone()))
                .collect();
            want.sort_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)));
            prop_assert_eq!(&got, &want, "writes_between {} ({}, {})", name, lo, hi);
            // Restricted to key ranges: the by-key index agrees with the window, filtered.
            let enc: fn(i64) -> Vec<u8> = if name == "t" { key } else { u_key };
            let inverted = KeyRange { start: Bound::Included(enc(4)), end: Bound::Excluded(enc(2)) };
            let excluded = KeyRange { start: Bound::Excluded(enc(1)), end: Bound::Included(enc(3)) };
            for ranges in [
                vec![KeyRange::all()],
                vec![range(1, 4, enc)],
                vec![KeyRange::point(enc(2)), KeyRange::point(enc(5))],
                vec![inverted, excluded],
                vec![],
            ] {
                let got_in: Vec<_> = store
                    .writes_between_in(name, lo, hi, &ranges)
                    .iter()
                    .map(|w| (w.ts, w.writer, w.key.to_vec(), w.state == VersionState::Committed, w.row.cloned()))
                    .collect();
                let want_in: Vec<_> = got.iter().filter(|w| ranges.iter().any(|r| r.contains(&w.2))).cloned().collect();
                prop_assert_eq!(got_in, want_in, "writes_between_in {} ({}, {}) {:?}", name, lo, hi, ranges);
            }
            // Through a secondary index: a subset of the window, holding every write whose
            // row is inside the index ranges, and every prepared write whose abort would
            // expose an older stored version inside them (what the completeness check needs).
            let schema = table(catalog, name);
            let Some(index) = schema.indexes.first() else { continue };
            let null = KeyRange::point(encode_key([&Value::Null]));
            for ranges in
                [vec![KeyRange::all()], vec![range(1, 3, int_key)], vec![KeyRange::point(int_key(2)), null], vec![]]
            {
                let inside = |row: &Row| ranges.iter().any(|r| r.contains(&schema.index_key(index, row)));
                let via: Vec<_> = store
                    .writes_between_via_index(name, index, lo, hi, &ranges)
                    .ok_or_else(|| TestCaseError::fail("a small index range is looked up"))?
                    .iter()
                    .map(|w| (w.ts, w.writer, w.key.to_vec(), w.state == VersionState::Committed, w.row.cloned()))
                    .collect();
                let in_window: Vec<_> = got.iter().filter(|w| via.contains(w)).cloned().collect();
                prop_assert_eq!(&in_window, &via, "writes_between_via_index {} yields window writes, in order", name);
                for w in &got {
                    let matches = w.4.as_ref().is_some_and(&inside);
                    let exposes = !w.3 && store.versions(name, &w.2).any(|v| v.ts < w.0 && v.row.is_some_and(&inside));
                    prop_assert!(
                        !(matches || exposes) || via.contains(w),
                        "writes_between_via_index {} ({}, {}) {:?} misses {:?}",
                        name,
                        lo,
                        hi,
                        ranges,
                        w
                    );
                }
            }
        }
        prop_assert_eq!(
            store.newest_write(name),
            model.table_version(name, &ReadAt { ts: Timestamp::MAX, visible: &all })
        );
    }
    // Stored versions: all prepared ones are kept; without the cap, everything at or above
    // the watermark is kept too.
    for (t, k) in &keys {
        let stored: Vec<_> =
            store.versions(t, k).map(|v| (v.ts, v.writer, v.state == VersionState::Committed)).collect();
        let mut expected: Vec<_> = model
            .versions
            .iter()
            .filter(|v| v.table == *t && v.key == *k)
            .map(|v| (v.ts, v.writer, v.committed))
            .collect();
        expected.sort();
        expected.reverse();
        prop_assert!(stored.iter().all(|s| expected.contains(s)), "stored versions are real");
        for e in &expected {
            let must_keep = !e.2 || (!capped && e.0 >= wm);
            prop_assert!(!must_keep || stored.contains(e), "version {:?} of {} was lost", e, t);
        }
    }
    let s = store.stats();
    prop_assert_eq!(s.prepared_writers, model.prepared.len());
    prop_assert_eq!(s.prepared_versions, model.versions.iter().filter(|v| !v.committed).count());
    Ok(())
}

/// Short enough that the operations' GC advances both keep and expire tombstones.
const TOMBSTONE_KEEP_US: u64 = 6;

fn run(ops: Vec<Op>, cap: usize) -> Result<(), TestCaseError> {
    let (catalog, mut store) =
        setup_with(StoreLimits { version_cap: cap, log_keep_us: 0, tombstone_keep_us: TOMBSTONE_KEEP_US });
    let mut model = Model::new();
    let mut history: Vec<(TxnId, Timestamp, WriteSet)> = Vec::new();
    for op in ops {
        match op {
            Op::Insert { time, client, writes, committed } => {
                let writer = txn(history.len() as u64 + 1);
                let at = Timestamp { time, client: ClientId(client), seq: 0 };
                let ws = build(&writes);
                let state = if committed { VersionState::Committed } else { VersionState::Prepared };
                let ok = store.insert(writer, at, &ws, state, &catalog).is_ok();
                prop_assert_eq!(ok, model.insert(writer, at, &ws, committed));
                history.push((writer, at, ws));
            }
            Op::Reinsert { pick, committed } if !history.is_empty() => {
                let (writer, at, ws) = history[pick % history.len()].clone();
                let state = if committed { VersionState::Committed } else { VersionState::Prepared };
                let ok = store.insert(writer, at, &ws, state, &catalog).is_ok();
                prop_assert_eq!(ok, model.insert(writer, at, &ws, committed));
            }
            Op::Commit { pick } if !history.is_empty() => {
                let writer = history[pick % history.len()].0;
                store.commit(&writer);
                model.commit(writer);
            }
            Op::Abort { pick } if !history.is_empty() => {
                let writer = history[pick % history.len()].0;
                store.abort(&writer);
                model.abort(writer);
            }
            Op::Gc { advance } => {
                let target = Timestamp::at(store.watermark().time + advance);
                store.gc(target);
                model.watermark = model.watermark.max(target);
            }
            _ => {}
        }
        check(&store, &model, &catalog, cap < 1000)?;
    }
    Ok(())
}

proptest! {
    // 256 cases by default; PROPTEST_CASES=n runs more.
    #[test]
    fn rowstore_matches_the_reference_model(ops in proptest::collection::vec(arb_op(), 1..60)) {
        run(ops, 100_000)?;
    }

    #[test]
    fn rowstore_with_a_tiny_version_cap_matches_above_oldest_readable(ops in proptest::collection::vec(arb_op(), 1..60), cap in 1usize..4) {
        run(ops, cap)?;
    }
}
