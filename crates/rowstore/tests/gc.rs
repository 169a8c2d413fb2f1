//! Garbage collection (Pesto App. B.3): one test per rule, the version cap, and bounded memory.

mod common;

use common::*;
use pistou_rowstore::{GcStats, StoreError, StoreLimits, VersionState};
use pistou_sql::EngineRules;
use pistou_sql::{ReadAt, Storage};

fn times(store: &pistou_rowstore::RowStore, id: i64) -> Vec<u64> {
    store.versions("t", &key(id)).map(|v| v.ts.time).collect()
}

#[test]
fn keeps_the_newest_committed_version_below_the_watermark() {
    let (catalog, mut store) = setup();
    for (writer, time) in [(1, 10), (2, 20), (3, 30), (4, 40)] {
        commit_at(&mut store, &catalog, writer, time, &upsert(1, time as i64));
    }
    let stats = store.gc(ts(35));
    assert_eq!(times(&store, 1), vec![40, 30], "10 and 20 are shadowed by 30 for every reader at >= 35");
    assert_eq!(stats.versions_removed, 2);
    assert_eq!(stats.keys_examined, 1);
    for read in [35, 40, 41, 99] {
        assert_eq!(scan_t(&store, &catalog, &latest(read)).len(), 1, "a reader at {read} still finds a row");
    }
    assert_eq!(store.watermark(), ts(35));
    assert_eq!(store.stats().index_entries, 2, "index entries of deleted versions are gone");
    store.verify_invariants().expect("invariants");
}

#[test]
fn a_version_at_the_watermark_is_not_below_it() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &upsert(1, 2));
    assert_eq!(store.gc(ts(20)).versions_removed, 0);
    assert_eq!(times(&store, 1), vec![20, 10], "a reader at 20 needs version 10");
    assert_eq!(store.gc(ts(21)).versions_removed, 1);
    assert_eq!(times(&store, 1), vec![20]);
}

#[test]
fn prepared_versions_below_the_watermark_leave_only_by_abort() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    prepare_at(&mut store, &catalog, 2, 15, &upsert(1, 2));
    commit_at(&mut store, &catalog, 3, 20, &upsert(1, 3));
    prepare_at(&mut store, &catalog, 4, 16, &upsert(2, 4));
    store.gc(ts(50));
    assert_eq!(times(&store, 1), vec![20, 15], "10 is shadowed; prepared 15 stays");
    assert_eq!(times(&store, 2), vec![16], "a lone prepared version stays");
    store.abort(&txn(4));
    assert_eq!(times(&store, 2), Vec::<u64>::new());
    store.commit(&txn(2));
    assert_eq!(times(&store, 1), vec![20, 15], "committing below the watermark removes nothing by itself");
    let stats = store.gc(ts(50));
    assert_eq!(times(&store, 1), vec![20], "the next gc collects the now-committed shadowed version");
    assert_eq!(stats.keys_examined, 1);
    store.verify_invariants().expect("invariants");
}

#[test]
fn a_key_whose_only_version_is_an_old_committed_deletion_is_dropped() {
    let (catalog, mut store) = setup_with(StoreLimits { tombstone_keep_us: 0, ..StoreLimits::default() });
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &delete(1));
    commit_at(&mut store, &catalog, 3, 10, &upsert(2, 2));
    commit_at(&mut store, &catalog, 4, 20, &delete(2));
    prepare_at(&mut store, &catalog, 5, 30, &upsert(2, 5));
    commit_at(&mut store, &catalog, 6, 40, &delete(3));
    let stats = store.gc(ts(35));
    assert_eq!(times(&store, 1), Vec::<u64>::new(), "version 10 shadowed, then the lone deletion dropped");
    assert_eq!(stats.keys_removed, 1);
    assert_eq!(times(&store, 2), vec![30, 20], "a prepared version above the deletion keeps the key");
    assert_eq!(times(&store, 3), vec![40], "a deletion at or above the watermark stays");
    store.abort(&txn(5));
    assert_eq!(store.gc(ts(35)).keys_removed, 1, "after the abort the deletion is alone");
    assert_eq!(store.gc(ts(41)).keys_removed, 1);
    assert_eq!(store.stats().keys, 0);
    assert_eq!(scan_t(&store, &catalog, &latest(99)), vec![]);
    store.verify_invariants().expect("invariants");
}

#[test]
fn the_write_log_is_trimmed_below_the_watermark_but_table_versions_stay_exact() {
    let (catalog, mut store) = setup();
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    prepare_at(&mut store, &catalog, 2, 20, &upsert(2, 2));
    commit_at(&mut store, &catalog, 3, 30, &upsert(3, 3));
    commit_at(&mut store, &catalog, 4, 40, &upsert(4, 4));
    let stats = store.gc(ts(35));
    assert_eq!(stats.log_writes_trimmed, 2, "committed writes at 10 and 30");
    let logged: Vec<u64> = store.writes_between("t", ts(0), ts(99)).map(|w| w.ts.time).collect();
    assert_eq!(logged, vec![20, 40], "prepared writes stay logged below the watermark");
    let t = table(&catalog, "t");
    assert_eq!(store.table_version(t, &latest(35)), Some(ts(30)), "exact at the watermark");
    assert_eq!(store.table_version(t, &latest(40)), Some(ts(30)));
    assert_eq!(store.table_version(t, &latest(41)), Some(ts(40)));
    store.commit(&txn(2));
    assert_eq!(store.writes_between("t", ts(0), ts(35)).count(), 0, "a commit below the watermark trims at once");
    assert_eq!(store.table_version(t, &latest(35)), Some(ts(30)));
    assert_eq!(store.newest_write("t"), Some(ts(40)));
    store.gc(ts(50));
    assert_eq!(store.stats().log_writes, 0);
    assert_eq!(store.newest_write("t"), Some(ts(40)));
    assert_eq!(store.table_version(t, &latest(50)), Some(ts(40)));
    store.verify_invariants().expect("invariants");
}

#[test]
fn prepared_writes_below_the_watermark_are_refused_committed_ones_installed() {
    let (catalog, mut store) = setup();
    prepare_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    store.gc(ts(20));
    let before = format!("{store:?}");
    let err = store.insert(txn(2), ts(15), &upsert(2, 2), VersionState::Prepared, &catalog);
    assert_eq!(err, Err(StoreError::BelowWatermark { ts: ts(15), watermark: ts(20) }));
    assert_eq!(format!("{store:?}"), before);
    // A certified commit this store missed (catch-up after a long downtime) is the key's
    // current row: installed.
    store.insert(txn(2), ts(15), &upsert(2, 2), VersionState::Committed, &catalog).expect("committed below");
    assert_eq!(store.versions("t", &key(2)).map(|v| v.ts).collect::<Vec<_>>(), vec![ts(15)]);
    // An older committed one under it is shadowed, and the next gc collects it.
    store.insert(txn(3), ts(12), &upsert(2, 3), VersionState::Committed, &catalog).expect("committed below");
    assert_eq!(store.versions("t", &key(2)).count(), 2);
    store.gc(ts(21));
    assert_eq!(store.versions("t", &key(2)).map(|v| v.ts).collect::<Vec<_>>(), vec![ts(15)]);
    store.verify_invariants().expect("invariants");
    // A writer prepared here before the watermark passed it can still be decided by writeback.
    store.insert(txn(1), ts(10), &upsert(1, 1), VersionState::Committed, &catalog).expect("writeback");
    assert_eq!(store.versions("t", &key(1)).map(|v| v.state).collect::<Vec<_>>(), vec![VersionState::Committed]);
    store.insert(txn(1), ts(10), &upsert(1, 1), VersionState::Prepared, &catalog).expect_err("no longer prepared here");
    store.verify_invariants().expect("invariants");
}

#[test]
fn the_watermark_never_goes_down() {
    let (_, mut store) = setup();
    store.gc(ts(20));
    store.gc(ts(10));
    assert_eq!(store.watermark(), ts(20));
}

#[test]
fn gc_examines_only_keys_with_work() {
    let (catalog, mut store) = setup();
    for id in 0..1000 {
        commit_at(&mut store, &catalog, id as u64, 10, &upsert(id, id));
    }
    commit_at(&mut store, &catalog, 5000, 20, &upsert(7, 70));
    assert_eq!(store.stats().gc_queue, 1);
    assert_eq!(
        store.gc(ts(15)),
        GcStats { log_writes_trimmed: 1000, ..GcStats::default() },
        "key 7's work starts above 20"
    );
    let stats = store.gc(ts(100));
    assert_eq!((stats.keys_examined, stats.versions_removed, stats.log_writes_trimmed), (1, 1, 1));
    assert_eq!(store.gc(ts(200)), GcStats::default());
    store.verify_invariants().expect("invariants");
}

#[test]
fn the_version_cap_deletes_oldest_committed_and_raises_oldest_readable() {
    let (catalog, mut store) = setup_with(StoreLimits { version_cap: 3, log_keep_us: 0, tombstone_keep_us: 0 });
    prepare_at(&mut store, &catalog, 100, 5, &upsert(1, 5));
    for time in [10, 20, 30, 40, 50] {
        commit_at(&mut store, &catalog, time, time, &upsert(1, time as i64));
    }
    assert_eq!(times(&store, 1), vec![50, 40, 5], "the prepared version counts toward the cap but is kept");
    assert_eq!(store.oldest_readable("t", &key(1)), pistou_core::Timestamp { seq: 1, ..ts(40) });
    assert_eq!(store.oldest_readable("t", &key(2)), ts(0));
    let committed = ReadAt { ts: ts(41), visible: &committed_only };
    assert_eq!(scan_t(&store, &catalog, &committed), vec![(1, pistou_sql::Value::Int(40))]);
    let logged: Vec<u64> = store.writes_between("t", ts(0), ts(99)).map(|w| w.ts.time).collect();
    assert_eq!(logged, vec![5, 10, 20, 30, 40, 50], "capped writes stay visible to the completeness check");
    assert!(store.writes_between("t", ts(9), ts(11)).all(|w| w.row.is_some()));
    store.gc(ts(60));
    assert_eq!(store.oldest_readable("t", &key(1)), ts(60), "the watermark dominates once above");
    store.abort(&txn(100));
    assert_eq!(times(&store, 1), vec![50]);
    store.verify_invariants().expect("invariants");
}

#[test]
fn the_version_cap_never_deletes_prepared_or_the_newest_committed_version() {
    let (catalog, mut store) = setup_with(StoreLimits { version_cap: 2, log_keep_us: 0, tombstone_keep_us: 0 });
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    for writer in 2..6 {
        prepare_at(&mut store, &catalog, writer, 10 + writer, &upsert(1, writer as i64));
    }
    assert_eq!(times(&store, 1), vec![15, 14, 13, 12, 10]);
    for writer in 2..6 {
        store.abort(&txn(writer));
    }
    assert_eq!(times(&store, 1), vec![10], "readers still have a committed base after all aborts");
    store.verify_invariants().expect("invariants");
}

/// A long run of updates to a few keys with a moving watermark keeps memory flat.
#[test]
fn memory_stays_flat_under_a_moving_watermark() {
    let (catalog, mut store) = setup();
    const KEYS: i64 = 5;
    const LAG: u64 = 50;
    let mut peak = pistou_rowstore::StoreStats::default();
    for time in 1..=20_000u64 {
        let id = (time * 7 % KEYS as u64) as i64;
        let ws = if time % 13 == 0 { delete(id) } else { upsert(id, time as i64 % 17) };
        if time % 3 == 0 {
            prepare_at(&mut store, &catalog, time, time, &ws);
            if time % 2 == 0 {
                store.commit(&txn(time));
            } else {
                store.abort(&txn(time));
            }
        } else {
            commit_at(&mut store, &catalog, time, time, &ws);
        }
        if time % 10 == 0 {
            store.gc(ts(time.saturating_sub(LAG)));
            let s = store.stats();
            peak.versions = peak.versions.max(s.versions);
            peak.log_writes = peak.log_writes.max(s.log_writes);
            peak.index_entries = peak.index_entries.max(s.index_entries);
            peak.gc_queue = peak.gc_queue.max(s.gc_queue);
        }
    }
    // Versions live at most LAG + 10 ticks past the watermark, one write per tick.
    let window = (LAG + 10) as usize;
    assert!(peak.versions <= window + KEYS as usize, "{peak:?}");
    assert!(peak.log_writes <= window, "{peak:?}");
    assert!(peak.index_entries <= window + KEYS as usize, "{peak:?}");
    assert!(peak.gc_queue <= KEYS as usize, "{peak:?}");
    let end = store.stats();
    assert_eq!((end.prepared_versions, end.prepared_writers), (0, 0));
    store.verify_invariants().expect("invariants");
}

#[test]
fn a_repeated_write_whose_version_was_capped_is_not_resurrected() {
    let (catalog, mut store) = setup_with(StoreLimits { version_cap: 1, log_keep_us: 0, tombstone_keep_us: 0 });
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &upsert(1, 2));
    assert_eq!(times(&store, 1), vec![20]);
    // A duplicate writeback or a replayed prepare of writer 1 must not bring version 10 back
    // (as prepared, it would even contradict the commit).
    prepare_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    assert_eq!(times(&store, 1), vec![20]);
    assert!(!store.is_prepared(&txn(1)));
    store.verify_invariants().expect("invariants");
}

#[test]
fn add_column_pads_capped_writes_in_the_log() {
    let (mut catalog, mut store) = setup_with(StoreLimits { version_cap: 1, log_keep_us: 0, tombstone_keep_us: 0 });
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &upsert(1, 2));
    let column = pistou_sql::Column {
        name: "c".into(),
        ty: pistou_sql::SqlType::Bool,
        limits: Default::default(),
        nullable: true,
        default: None,
        generated: None,
        volatile_default: None,
    };
    let change = pistou_sql::CatalogChange::AddColumn { table: "t".into(), column };
    let before = catalog.clone();
    catalog.apply(&change, &EngineRules).expect("add column");
    store.apply_catalog_change(&before, &catalog, &change);
    let rows: Vec<usize> = store.writes_between("t", ts(0), ts(99)).filter_map(|w| w.row.map(Vec::len)).collect();
    assert_eq!(rows, vec![4, 4], "the capped write at 10 is padded too");
    store.verify_invariants().expect("invariants");
}

#[test]
fn the_log_keeps_a_quiet_tables_last_writes_within_log_keep() {
    let (catalog, mut store) = setup_with(StoreLimits { version_cap: 64, log_keep_us: 10, tombstone_keep_us: 0 });
    for (writer, time) in [(1, 10), (2, 20), (3, 95), (4, 100)] {
        commit_at(&mut store, &catalog, writer, time, &upsert(writer as i64, time as i64));
    }
    // The watermark passes every write; those within 10 of the newest (100) stay logged, so
    // a reader told table version 100 finds every write in a window reaching 10 below it.
    let stats = store.gc(ts(150));
    assert_eq!(stats.log_writes_trimmed, 2);
    let logged: Vec<u64> = store.writes_between("t", ts(0), ts(200)).map(|w| w.ts.time).collect();
    assert_eq!(logged, vec![95, 100]);
    assert_eq!(store.trimmed_through("t"), Some(ts(20)));
    assert_eq!(store.table_version(table(&catalog, "t"), &latest(150)), Some(ts(100)));
    store.verify_invariants().expect("invariants");
    // A newer write moves the kept range up with it.
    commit_at(&mut store, &catalog, 5, 160, &upsert(5, 160));
    store.gc(ts(170));
    let logged: Vec<u64> = store.writes_between("t", ts(0), ts(200)).map(|w| w.ts.time).collect();
    assert_eq!(logged, vec![160]);
    store.verify_invariants().expect("invariants");
}

/// A deletion below the watermark stays as a tombstone for `tombstone_keep_us`, so a late
/// committed write of the key older than it (a catch-up) stays hidden; then the key goes,
/// and committed writes older than any tombstone still kept are refused.
#[test]
fn a_tombstone_hides_late_older_writes_until_it_expires() {
    let (catalog, mut store) = setup_with(StoreLimits { tombstone_keep_us: 10, ..StoreLimits::default() });
    commit_at(&mut store, &catalog, 1, 10, &upsert(1, 1));
    commit_at(&mut store, &catalog, 2, 20, &delete(1));
    assert_eq!(store.gc(ts(25)).keys_removed, 0, "the deletion is kept as a tombstone");
    assert_eq!(times(&store, 1), vec![20]);
    // A late committed write below the watermark, older than the deletion: installed, hidden.
    store.insert(txn(3), ts(15), &upsert(1, 3), VersionState::Committed, &catalog).expect("late commit");
    assert_eq!(scan_t(&store, &catalog, &latest(99)), vec![], "the newer deletion hides it");
    assert_eq!(store.gc(ts(31)).keys_removed, 1, "expired: the key goes");
    assert!(
        store.insert(txn(4), ts(18), &upsert(1, 4), VersionState::Committed, &catalog).is_err(),
        "older than any tombstone still kept: refused"
    );
    assert_eq!(scan_t(&store, &catalog, &latest(99)), vec![]);
    store.verify_invariants().expect("invariants");
}
