//! Recovery time of a replica (issue 27): a log of N committed single-row transactions
//! (100-byte values, one key each, fast-path certificates of six votes) is written through
//! `DurableLog` in synced batches, then timed: `DurableLog::open` (read and check every
//! entry) and `Replica::recover` (replay). Run with
//!
//! ```text
//! cargo bench -p pistou-store --bench recovery [-- N [DIR]]     # N: default 1,000,000
//! ```
//!
//! The transactions are key-value ones: replaying a SQL row also updates the row store and
//! its indexes, so a SQL replica takes longer per row than this measures.

use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId, ShardId, Timestamp};
use pistou_store::{DurableLog, SyncMode};
use pistou_txn::{LogEntry, ReplicaLog};
use pistou_wire::{CommitCert, ReplicaSigned, ShardVotes, St1Vote, TxnMeta, Vote, WriteEntry};
use std::sync::Arc;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const BATCH: u64 = 10_000;

fn config() -> Arc<ClusterConfig> {
    ClusterBuilder::new(1).crypto(false).build().config
}

fn committed(i: u64) -> LogEntry {
    let ts = Timestamp { time: 1_000_000 + i, client: ClientId(1), seq: i };
    let meta = Arc::new(TxnMeta {
        ts,
        read_set: Vec::new(),
        write_set: vec![WriteEntry {
            key: format!("row{i:010}").into_bytes(),
            value: Some(vec![(i % 251) as u8; 100]),
        }],
        deps: Vec::new(),
        predicates: Vec::new(),
        late: false,
        shards: vec![ShardId(0)],
    });
    let txn = meta.id();
    let votes = (0..6)
        .map(|index| ReplicaSigned {
            signer: ReplicaId { shard: ShardId(0), index },
            body: St1Vote { txn, vote: Vote::Commit },
            sig: None,
        })
        .collect();
    LogEntry::Committed { meta, cert: Arc::new(CommitCert::Fast(vec![ShardVotes { shard: ShardId(0), votes }])) }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let n: u64 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(1_000_000);
    let dir = match args.get(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("pistou-recovery-bench-{}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    {
        let (mut log, _) = DurableLog::open(&dir, SyncMode::Always)?;
        for i in 0..n {
            log.append(committed(i));
            if (i + 1) % BATCH == 0 {
                log.sync()?;
            }
        }
        log.sync()?;
    }
    let written = started.elapsed();
    let size = std::fs::metadata(dir.join(pistou_store::FILE_NAME))?.len();

    let started = Instant::now();
    let (log, entries) = DurableLog::open(&dir, SyncMode::Always)?;
    let opened = started.elapsed();
    let count = entries.len();
    let config = config();
    let mut replica = pistou_txn::Replica::new(config, ReplicaId { shard: ShardId(0), index: 0 }, None)?;
    let started = Instant::now();
    replica.recover(2_000_000 + n, entries);
    let replayed = started.elapsed();
    replica.set_log(Box::new(log));
    let keys = replica.newest_committed().len();
    println!("| entries | file | write (batches of {BATCH}) | open and check | replay | keys after |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {count} | {:.0} MiB | {:.1} s | {:.1} s | {:.1} s | {keys} |",
        size as f64 / (1 << 20) as f64,
        written.as_secs_f64(),
        opened.as_secs_f64(),
        replayed.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
