//! Memory of replicas in a long run (issue 5, Pesto App. B.3): six replicas (f = 1, one shard)
//! and two clients in one process, messages delivered in order, simulated time advancing by
//! `--step-us` per transaction. Each transaction reads one key and writes another (a 64-byte
//! value). Prints replica 0's footprint and the process RSS at intervals.
//!
//! ```text
//! cargo run --release -p pistou-txn --example gc_long_run -- [--txns N] [--keys K]
//!     [--age-ms A] [--step-us S] [--crypto] [--no-gc]
//! ```
//!
//! `--no-gc` sets max_txn_age so large that the watermark never passes anything: the same
//! run without garbage collection, for comparison.

use pistou_core::{ClientId, ClusterBuilder, SqlConfig};
use pistou_txn::{Coordinator, CoordinatorEvent, GetStart, Replica};
use pistou_wire::Decision;
use std::time::Instant;

struct Options {
    txns: u64,
    keys: u64,
    age_us: u64,
    step_us: u64,
    crypto: bool,
    gc: bool,
}

fn parse() -> Result<Options, String> {
    let mut o = Options { txns: 300_000, keys: 1_000, age_us: 100_000, step_us: 100, crypto: false, gc: true };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            args.next().and_then(|v| v.parse().ok()).ok_or(format!("{name} needs a number"))
        };
        match a.as_str() {
            "--txns" => o.txns = num("--txns")?,
            "--keys" => o.keys = num("--keys")?.max(2),
            "--age-ms" => o.age_us = num("--age-ms")?.max(1).saturating_mul(1_000),
            "--step-us" => o.step_us = num("--step-us")?.max(1),
            "--crypto" => o.crypto = true,
            "--no-gc" => o.gc = false,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

struct Cluster {
    replicas: Vec<Replica>,
    clients: Vec<Coordinator>,
    now: u64,
}

impl Cluster {
    fn new(o: &Options) -> Result<Cluster, String> {
        let max_txn_age_us = if o.gc { o.age_us } else { u64::MAX / 4 };
        // A configuration keeps SQL versions at least as long as transactions may be prepared.
        let gc_lag_us = SqlConfig::default().gc_lag_us.max(max_txn_age_us.saturating_add(1));
        let cluster = ClusterBuilder::new(1)
            .clients(2)
            .crypto(o.crypto)
            // Clock skew tolerance, below the age limit as a valid configuration requires.
            .delta_us((max_txn_age_us / 5).min(100_000))
            .max_txn_age_us(max_txn_age_us)
            .reply_batch(8)
            .sql(SqlConfig { gc_lag_us, ..SqlConfig::default() })
            .build();
        let config = cluster.config.clone();
        let replicas = config
            .all_replicas()
            .map(|id| Replica::new(config.clone(), id, Some(cluster.replica_key(id))))
            .collect::<Result<_, _>>()?;
        let clients = (1..)
            .zip(cluster.client_keys)
            .map(|(id, k)| Coordinator::new(config.clone(), ClientId(id), Some(k)))
            .collect::<Result<_, _>>()?;
        Ok(Cluster { replicas, clients, now: 1_000_000_000 })
    }

    /// Delivers messages until none moves.
    fn settle(&mut self) -> Result<(), String> {
        for _ in 0..1_000 {
            let mut moved = false;
            for c in 0..self.clients.len() {
                for (to, msg) in self.clients[c].take_outputs() {
                    moved = true;
                    self.replicas[to.index as usize].handle(self.now, c as u64, msg);
                }
            }
            for r in 0..self.replicas.len() {
                self.replicas[r].flush();
                let from = self.replicas[r].id();
                for (to, msg) in self.replicas[r].take_replica_outputs() {
                    moved = true;
                    self.replicas[to.index as usize].handle_replica(self.now, from, msg);
                }
                for (peer, msg) in self.replicas[r].take_outputs() {
                    moved = true;
                    self.clients[peer as usize].handle(self.now, from, msg);
                }
            }
            if !moved {
                return Ok(());
            }
        }
        Err("network did not quiesce".into())
    }

    /// Client `c` reads key `a` and writes key `b`; returns whether it committed.
    fn transaction(&mut self, c: usize, a: &[u8], b: &[u8]) -> Result<bool, String> {
        let h = self.clients[c].begin(self.now);
        if self.clients[c].get(self.now, h, a).map_err(|e| e.to_string())? == GetStart::Pending {
            self.settle()?;
            match self.clients[c].poll_event() {
                Some(CoordinatorEvent::ReadDone { .. }) => {}
                other => return Err(format!("read did not finish: {other:?}")),
            }
        }
        let value = [self.now.to_le_bytes().as_slice(), &[0u8; 56]].concat();
        self.clients[c].put(h, b, Some(value)).map_err(|e| e.to_string())?;
        self.clients[c].commit(self.now, h).map_err(|e| e.to_string())?;
        self.settle()?;
        while let Some(event) = self.clients[c].poll_event() {
            if let CoordinatorEvent::Decided { decision, .. } = event {
                return Ok(decision == Decision::Commit);
            }
        }
        Err("transaction undecided".into())
    }
}

/// Resident set size of this process in MiB (from /proc/self/status).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gc_long_run: {e}");
            std::process::exit(2);
        }
    };
    let mut cluster = match Cluster::new(&o) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gc_long_run: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "txns={} keys={} max_txn_age={}ms step={}us crypto={} gc={}",
        o.txns,
        o.keys,
        o.age_us / 1_000,
        o.step_us,
        o.crypto,
        o.gc
    );
    println!(
        "{:>9} {:>9} {:>8} {:>10} {:>8} {:>8} {:>8} {:>9} {:>8}",
        "txns", "commits", "records", "committed", "readers", "keys", "queue", "RSS MiB", "wall s"
    );
    let start = Instant::now();
    let every = (o.txns / 10).max(1);
    let mut commits = 0u64;
    for i in 0..o.txns {
        cluster.now += o.step_us;
        let now = cluster.now;
        for r in &mut cluster.replicas {
            r.tick(now);
        }
        for c in &mut cluster.clients {
            c.tick(now);
        }
        let a = (i % o.keys).to_le_bytes();
        let b = ((i * 7 + 1) % o.keys).to_le_bytes();
        match cluster.transaction((i % 2) as usize, &a, &b) {
            Ok(true) => commits += 1,
            Ok(false) => {}
            Err(e) => {
                eprintln!("gc_long_run: transaction {i}: {e}");
                std::process::exit(1);
            }
        }
        if (i + 1) % every == 0 {
            let f = cluster.replicas[0].footprint();
            println!(
                "{:>9} {:>9} {:>8} {:>10} {:>8} {:>8} {:>8} {:>9.1} {:>8.1}",
                i + 1,
                commits,
                f.txn_records,
                f.committed_versions,
                f.readers,
                f.keys,
                f.gc_queue,
                rss_mib(),
                start.elapsed().as_secs_f64()
            );
        }
    }
}
