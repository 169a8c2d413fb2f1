//! The measurement behind the choice of pistou-store's engine (docs/benchmarks.md, "Storage
//! engine"): redb and fjall, each in a fresh directory, doing what a replica's write-ahead log
//! does. Run with
//!
//! ```text
//! cargo bench -p pistou-store --bench engines [-- DIR]
//! ```
//!
//! DIR (default: a temporary directory under /tmp) must be on the disk to measure.
//!
//! - group commit: batches of N entries (N = 1, 16, 256; values of 300 B to 2 KiB) each
//!   followed by one durable sync: entries/s and latency per batch;
//! - point reads by key (random keys of 20,000 entries);
//! - range reads of 1,000 consecutive keys;
//! - deleting by transaction: 64 transactions of 4 entries each, then one durable sync.
//!
//! It also times `DurableLog` itself (redb underneath) on real `LogEntry`s for N = 1, 16, 256.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Value sizes cycled through: 300 B to 2 KiB, mean 1,100 B.
const SIZES: [usize; 4] = [300, 800, 1300, 2000];
const READ_KEYS: u64 = 20_000;
const ENTRIES_PER_TXN: u64 = 4;
const TXNS_PER_DELETE_BATCH: u64 = 64;

trait Engine {
    fn name(&self) -> &'static str;
    /// Writes the batch and makes it durable.
    fn append_sync(&mut self, batch: &[(u64, Vec<u8>)]) -> Res<()>;
    fn get(&self, key: u64) -> Res<usize>;
    fn range(&self, from: u64, count: u64) -> Res<usize>;
    /// Deletes the keys and makes the deletion durable.
    fn delete_sync(&mut self, keys: &[u64]) -> Res<()>;
}

struct Redb {
    db: redb::Database,
}

const TABLE: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("log");

impl Redb {
    fn open(dir: &Path) -> Res<Self> {
        Ok(Redb { db: redb::Database::create(dir.join("bench.redb"))? })
    }
}

impl Engine for Redb {
    fn name(&self) -> &'static str {
        "redb 4.6"
    }
    fn append_sync(&mut self, batch: &[(u64, Vec<u8>)]) -> Res<()> {
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(TABLE)?;
            for (k, v) in batch {
                t.insert(k, v.as_slice())?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn get(&self, key: u64) -> Res<usize> {
        use redb::ReadableDatabase;
        let tx = self.db.begin_read()?;
        let t = tx.open_table(TABLE)?;
        Ok(t.get(key)?.map(|v| v.value().len()).unwrap_or(0))
    }
    fn range(&self, from: u64, count: u64) -> Res<usize> {
        use redb::ReadableDatabase;
        let tx = self.db.begin_read()?;
        let t = tx.open_table(TABLE)?;
        let mut n = 0;
        for kv in t.range(from..from + count)? {
            n += kv?.1.value().len();
        }
        Ok(n)
    }
    fn delete_sync(&mut self, keys: &[u64]) -> Res<()> {
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(TABLE)?;
            for k in keys {
                t.remove(k)?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
}

impl Fjall {
    fn open(dir: &Path) -> Res<Self> {
        let db = fjall::Database::builder(dir.join("bench.fjall")).open()?;
        let ks = db.keyspace("log", fjall::KeyspaceCreateOptions::default)?;
        Ok(Fjall { db, ks })
    }
}

impl Engine for Fjall {
    fn name(&self) -> &'static str {
        "fjall 3.1"
    }
    fn append_sync(&mut self, batch: &[(u64, Vec<u8>)]) -> Res<()> {
        let mut b = self.db.batch().durability(Some(fjall::PersistMode::SyncData));
        for (k, v) in batch {
            b.insert(&self.ks, k.to_be_bytes(), v.as_slice());
        }
        b.commit()?;
        Ok(())
    }
    fn get(&self, key: u64) -> Res<usize> {
        Ok(self.ks.get(key.to_be_bytes())?.map(|v| v.len()).unwrap_or(0))
    }
    fn range(&self, from: u64, count: u64) -> Res<usize> {
        let mut n = 0;
        for kv in self.ks.range(from.to_be_bytes()..(from + count).to_be_bytes()) {
            n += kv.value()?.len();
        }
        Ok(n)
    }
    fn delete_sync(&mut self, keys: &[u64]) -> Res<()> {
        let mut b = self.db.batch().durability(Some(fjall::PersistMode::SyncData));
        for k in keys {
            b.remove(&self.ks, k.to_be_bytes());
        }
        b.commit()?;
        Ok(())
    }
}

fn value(i: u64) -> Vec<u8> {
    let len = SIZES[(i % SIZES.len() as u64) as usize];
    let mut v = vec![0u8; len];
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for b in v.iter_mut() {
        // xorshift: incompressible, like signatures and hashes
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    v
}

/// A tiny deterministic generator for read keys.
fn next_rand(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Appends `batches` batches of `n` entries, each synced; returns the per-batch latencies.
fn group_commit(e: &mut dyn Engine, next_key: &mut u64, n: u64, batches: u64) -> Res<()> {
    let mut lat = Vec::with_capacity(batches as usize);
    let start = Instant::now();
    for _ in 0..batches {
        let batch: Vec<(u64, Vec<u8>)> = (*next_key..*next_key + n).map(|k| (k, value(k))).collect();
        *next_key += n;
        let t = Instant::now();
        e.append_sync(&batch)?;
        lat.push(t.elapsed());
    }
    let total = start.elapsed();
    lat.sort();
    println!(
        "| {} | append+sync N={n} | {batches} batches | {:.0} entries/s | p50 {:.0} µs, p99 {:.0} µs per batch |",
        e.name(),
        (n * batches) as f64 / total.as_secs_f64(),
        us(percentile(&lat, 0.5)),
        us(percentile(&lat, 0.99)),
    );
    Ok(())
}

fn bench_engine(e: &mut dyn Engine) -> Res<()> {
    let mut next_key = 0u64;
    group_commit(e, &mut next_key, 1, 400)?;
    group_commit(e, &mut next_key, 16, 300)?;
    group_commit(e, &mut next_key, 256, 60)?;
    // Fill up to READ_KEYS with large unsynced-style batches (still synced per batch).
    while next_key < READ_KEYS {
        let batch: Vec<(u64, Vec<u8>)> = (next_key..next_key + 1000).map(|k| (k, value(k))).collect();
        next_key += 1000;
        e.append_sync(&batch)?;
    }

    let mut x = 0x1234_5678_9abc_def1u64;
    let reads = 20_000;
    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..reads {
        bytes += e.get(next_rand(&mut x) % next_key)?;
    }
    let per = t.elapsed() / reads;
    println!(
        "| {} | point read | {reads} reads of {next_key} keys | {:.0} reads/s | {:.1} µs per read ({bytes} B) |",
        e.name(),
        1.0 / per.as_secs_f64(),
        us(per)
    );

    let ranges = 200;
    let t = Instant::now();
    for i in 0..ranges {
        let from = (i * 97) % (next_key - 1000);
        let n = e.range(from, 1000)?;
        if n == 0 {
            return Err("empty range".into());
        }
    }
    let per = t.elapsed() / ranges as u32;
    println!(
        "| {} | range read of 1,000 keys | {ranges} ranges | {:.0} entries/s | {:.0} µs per range |",
        e.name(),
        1000.0 / per.as_secs_f64(),
        us(per)
    );

    // Delete by transaction: a transaction owns ENTRIES_PER_TXN consecutive keys.
    let batches = 40;
    let per_batch = TXNS_PER_DELETE_BATCH * ENTRIES_PER_TXN;
    let mut lat = Vec::new();
    let t = Instant::now();
    for b in 0..batches {
        let keys: Vec<u64> = (b * per_batch..(b + 1) * per_batch).collect();
        let s = Instant::now();
        e.delete_sync(&keys)?;
        lat.push(s.elapsed());
    }
    let total = t.elapsed();
    lat.sort();
    println!(
        "| {} | forget {TXNS_PER_DELETE_BATCH} txns × {ENTRIES_PER_TXN} entries + sync | {batches} batches | {:.0} txns/s | p50 {:.0} µs per batch |",
        e.name(),
        (batches * TXNS_PER_DELETE_BATCH) as f64 / total.as_secs_f64(),
        us(percentile(&lat, 0.5)),
    );
    Ok(())
}

fn bench_durable_log(dir: &Path) -> Res<()> {
    use pistou_store::{DurableLog, SyncMode};
    use pistou_txn::ReplicaLog;
    let (mut log, _) = DurableLog::open(&dir.join("durable"), SyncMode::Always)?;
    let sample = pistou_store::sample_entries();
    for (n, batches) in [(1u64, 300u64), (16, 200), (256, 40)] {
        let mut lat = Vec::new();
        let start = Instant::now();
        for b in 0..batches {
            for i in 0..n {
                let k = (b * n + i) as usize;
                log.append(sample[k % sample.len()].clone());
            }
            let t = Instant::now();
            log.sync()?;
            lat.push(t.elapsed());
        }
        let total = start.elapsed();
        lat.sort();
        println!(
            "| DurableLog (redb) | append+sync N={n} | {batches} batches | {:.0} entries/s | p50 {:.0} µs, p99 {:.0} µs per batch |",
            (n * batches) as f64 / total.as_secs_f64(),
            us(percentile(&lat, 0.5)),
            us(percentile(&lat, 0.99)),
        );
    }
    Ok(())
}

fn main() -> Res<()> {
    // `cargo bench` passes `--bench`; the first other argument is the directory.
    let arg = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let tmp;
    let base: PathBuf = match arg {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    println!("| engine | operation | count | rate | latency |");
    println!("| --- | --- | --- | --- | --- |");
    let d = base.join("redb");
    std::fs::create_dir_all(&d)?;
    bench_engine(&mut Redb::open(&d)?)?;
    let d = base.join("fjall");
    std::fs::create_dir_all(&d)?;
    bench_engine(&mut Fjall::open(&d)?)?;
    bench_durable_log(&base)?;
    Ok(())
}
