use pistou_core::{ClientId, ShardId, Timestamp, TxnId};
use pistou_store::{sample_entries, DurableLog, StoreError, SyncMode, FILE_NAME, MAX_ENTRY_BYTES};
use pistou_txn::{LogEntry, ReplicaLog};
use pistou_wire::{TxnMeta, Vote, WriteEntry};
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> (DurableLog, Vec<LogEntry>) {
    DurableLog::open(dir, SyncMode::Always).expect("open")
}

fn reopen(dir: &Path) -> Vec<LogEntry> {
    open(dir).1
}

/// A vote whose metadata carries `marker` as a written value (to find it in the file).
fn marked_vote(marker: &[u8]) -> LogEntry {
    let meta = TxnMeta {
        ts: Timestamp { time: 7, client: ClientId(1), seq: 1 },
        read_set: Vec::new(),
        write_set: vec![WriteEntry { key: b"k".to_vec(), value: Some(marker.to_vec()) }],
        deps: Vec::new(),
        predicates: Vec::new(),
        late: false,
        shards: vec![ShardId(0)],
    };
    LogEntry::Voted { meta: Arc::new(meta), vote: Vote::Commit }
}

#[test]
fn empty_directory_opens_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("replica-0");
    let (log, entries) = open(&data);
    assert!(entries.is_empty());
    assert_eq!(log.path(), data.join(FILE_NAME));
    assert!(data.join(FILE_NAME).exists());
    drop(log);
    assert!(reopen(&data).is_empty());
}

#[test]
fn every_variant_round_trips_in_append_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = sample_entries();
    let kinds: std::collections::HashSet<_> = sample.iter().map(std::mem::discriminant).collect();
    assert_eq!(kinds.len(), 5, "the sample covers every LogEntry variant");
    {
        let (mut log, _) = open(dir.path());
        // Two batches, to check order across commits.
        let (a, b) = sample.split_at(sample.len() / 2);
        for e in a {
            log.append(e.clone());
        }
        log.sync().expect("sync");
        for e in b {
            log.append(e.clone());
        }
        log.sync().expect("sync");
    }
    let (mut log, entries) = open(dir.path());
    assert_eq!(entries, sample);
    // New entries go after the replayed ones.
    log.append(sample[0].clone());
    log.sync().expect("sync");
    drop(log);
    let again = reopen(dir.path());
    assert_eq!(again.len(), sample.len() + 1);
    assert_eq!(again.last(), Some(&sample[0]));
}

#[test]
fn only_synced_entries_are_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = sample_entries();
    {
        let (mut log, _) = open(dir.path());
        log.append(sample[0].clone());
        log.append(sample[1].clone());
        assert_eq!(log.unsynced(), 2);
        log.sync().expect("sync");
        assert_eq!(log.unsynced(), 0);
        log.append(sample[2].clone()); // never synced
    }
    assert_eq!(reopen(dir.path()), sample[..2].to_vec());
}

#[test]
fn unsafe_no_sync_mode_still_keeps_entries_across_a_clean_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = sample_entries();
    {
        let (mut log, _) = DurableLog::open(dir.path(), SyncMode::None).expect("open");
        assert_eq!(log.sync_mode(), SyncMode::None);
        for e in &sample {
            log.append(e.clone());
        }
        log.sync().expect("sync");
    }
    assert_eq!(reopen(dir.path()), sample);
}

#[test]
fn forget_removes_a_transactions_entries_for_good() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = sample_entries();
    let victim: TxnId = sample[0].txn();
    let victim_count = sample.iter().filter(|e| e.txn() == victim).count();
    assert!(victim_count >= 2);
    let kept: Vec<LogEntry> = sample.iter().filter(|e| e.txn() != victim).cloned().collect();
    {
        let (mut log, _) = open(dir.path());
        for e in &sample {
            log.append(e.clone());
        }
        log.sync().expect("sync");
        let before = log.txn_count();
        log.forget(&victim);
        assert_eq!(log.txn_count(), before - 1);
        log.sync().expect("sync");
    }
    let (mut log, entries) = open(dir.path());
    assert_eq!(entries, kept);

    // Forgetting a transaction whose entries are not yet synced drops them before they are
    // written; forgetting an unknown one is a no-op.
    log.append(sample[0].clone());
    log.forget(&victim);
    log.forget(&TxnId([9; 32]));
    assert_eq!(log.unsynced(), 0);
    log.sync().expect("sync");
    drop(log);
    assert_eq!(reopen(dir.path()), kept);
}

#[test]
fn forget_then_sync_shrinks_nothing_it_should_keep_across_many_batches() {
    // GC keeps the table bounded: append and forget many transactions, the file stays small.
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = sample_entries();
    let (mut log, _) = open(dir.path());
    for _round in 0..50 {
        for e in &sample {
            log.append(e.clone());
        }
        log.sync().expect("sync");
        for e in &sample {
            log.forget(&e.txn());
        }
        log.sync().expect("sync");
    }
    assert_eq!(log.txn_count(), 0);
    let size = std::fs::metadata(log.path()).expect("metadata").len();
    assert!(size < 4 << 20, "file grew to {size} bytes");
    drop(log);
    assert!(reopen(dir.path()).is_empty());
}

#[test]
fn an_oversized_entry_fails_the_log_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut log, _) = open(dir.path());
    log.append(marked_vote(&vec![0u8; MAX_ENTRY_BYTES]));
    let err = log.sync().expect_err("too large");
    assert!(err.to_string().contains("exceeds"), "{err}");
    // The log stays failed: the replica's memory holds an entry that is not durable.
    log.append(sample_entries()[0].clone());
    assert!(matches!(log.sync(), Err(StoreError::Failed { .. })));
}

#[test]
fn a_corrupted_byte_is_reported_with_the_file_and_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = b"PISTOU-STORE-TEST-MARKER-0123456789abcdef";
    {
        let (mut log, _) = open(dir.path());
        log.append(sample_entries()[2].clone());
        log.append(marked_vote(marker));
        log.sync().expect("sync");
    }
    let file = dir.path().join(FILE_NAME);
    let mut bytes = std::fs::read(&file).expect("read");
    let hits: Vec<usize> =
        bytes.windows(marker.len()).enumerate().filter(|(_, w)| *w == marker).map(|(i, _)| i).collect();
    assert!(!hits.is_empty(), "marker not found in the file");
    for i in hits {
        bytes[i + 10] ^= 0x01;
    }
    std::fs::write(&file, &bytes).expect("write");

    let err = DurableLog::open(dir.path(), SyncMode::Always).err().expect("corruption must fail the open");
    let msg = err.to_string();
    assert!(msg.contains(&file.display().to_string()), "{msg}");
    match err {
        StoreError::Corrupt { seq, reason, .. } => {
            assert_eq!(seq, 1, "the marked entry");
            assert!(reason.contains("checksum"), "{reason}");
        }
        // redb's own page checksums may catch it first: surfaced with the path, also fine.
        StoreError::Engine { .. } => {}
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn a_truncated_file_is_reported_with_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let (mut log, _) = open(dir.path());
        for _ in 0..20 {
            for e in sample_entries() {
                log.append(e);
            }
            log.sync().expect("sync");
        }
    }
    let file = dir.path().join(FILE_NAME);
    let len = std::fs::metadata(&file).expect("metadata").len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).expect("open file");
    f.set_len(len / 2).expect("truncate");
    drop(f);

    let err = DurableLog::open(dir.path(), SyncMode::Always).err().expect("truncation must fail the open");
    let msg = err.to_string();
    assert!(msg.contains(&file.display().to_string()), "{msg}");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_with_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(FILE_NAME);
    std::fs::write(&file, b"not a database at all, just some text that is long enough").expect("write");
    let err = DurableLog::open(dir.path(), SyncMode::Always).err().expect("must fail");
    assert!(matches!(err, StoreError::Engine { .. }), "{err}");
    assert!(err.to_string().contains(&file.display().to_string()), "{err}");
}
