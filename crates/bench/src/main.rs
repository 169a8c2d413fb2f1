//! Pistou's benchmarks, against local clusters of real `pistou replica` processes started
//! with `pistou cluster up`. They measure and print; they never gate anything.
//!
//! - `ycsb-t`: YCSB-T throughput, latency, commit rate and fast-path share (issue 2).
//! - `faulty`: throughput of correct clients while a share of transactions comes from
//!   Byzantine clients (Basil Fig. 6, issue 3).
//! - `scan`: one range read versus the same rows by point reads (Pesto Fig. 7, issue 5).
//! - `stress`: YCSB-style SQL transactions, normal, with the eager path forced to fail and
//!   with writebacks omitted at 1/3 of the replicas (Pesto Fig. 8, issue 5).
//! - `attacks`: correct clients' throughput beside each denial-of-service attack of
//!   issue 33 (pre-authentication flood, hello and big frames, spoofed peers, bad
//!   signatures, a long cross join), against the same workload alone, in one run.
//! - `core`: CPU cost of the protocol core alone (replicas, clients, codec, crypto) in one
//!   thread through the simulator, no sockets: what the runtime adds comes on top.

mod attackers;
mod attacks;
mod cluster;
mod cpu;
mod faulty;
mod procs;
mod scan;
mod stress;
mod ycsb;

use anyhow::Result;
use clap::{Parser, Subcommand};
use cluster::{Cluster, ClusterSpec};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use ycsb::Workload;

#[derive(Parser)]
#[command(name = "pistou-bench", about = "Benchmarks of Pistou against local clusters")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// YCSB-T: each transaction reads two keys and writes both back.
    YcsbT {
        #[command(flatten)]
        workload: Workload,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Latency of one range read versus the same rows by point reads (Pesto Fig. 7).
    Scan {
        #[command(flatten)]
        scan: scan::ScanArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Range reads under stress: eager path forced to fail, inconsistent replicas (Pesto Fig. 8).
    Stress {
        #[command(flatten)]
        stress: stress::StressArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// CPU time per transaction of the protocol core, single-threaded, without sockets.
    Core {
        /// Transactions per simulated client.
        #[arg(long, default_value_t = 200)]
        txns: usize,
        #[arg(long, default_value_t = 8)]
        clients: usize,
    },
    /// Correct clients' throughput while Byzantine clients issue a share of the transactions.
    Faulty {
        #[command(flatten)]
        workload: Workload,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[command(flatten)]
        faults: faulty::FaultArgs,
    },
    /// Correct clients' throughput beside each attack of issue 33, against the same workload
    /// alone, in one run (1 cluster with crypto, a gateway in front).
    Attacks {
        #[command(flatten)]
        attacks: attacks::AttackArgs,
        #[command(flatten)]
        cluster: ClusterArgs,
    },
}

#[derive(clap::Args, Clone, Debug)]
pub struct ClusterArgs {
    /// Measure with signatures off (only for measuring crypto cost).
    #[arg(long)]
    no_crypto: bool,
    #[arg(long, default_value_t = 1)]
    f: usize,
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// First replica port (the cluster uses the following 2*n*shards+1 ports: replicas,
    /// their metrics, the gateway's metrics; see `pistou init`).
    #[arg(long, default_value_t = 17100)]
    base_port: u16,
    /// The `pistou` binary (default: next to this one).
    #[arg(long)]
    pistou: Option<PathBuf>,
    /// Worker threads of each replica (`PISTOU_REPLICA_THREADS`; default: every core). 1
    /// puts a replica's driver and connections on one thread, which suits 6 replicas on 2
    /// cores.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    replica_threads: Option<u16>,
    /// Replica storage: `always` (durable, fsync per batch: the default), `none` (durable
    /// without fsync: UNSAFE) or `memory` (no disk at all).
    #[arg(long, default_value = "always", value_parser = ["always", "none", "memory"])]
    storage: String,
}

impl ClusterArgs {
    fn spec(&self, clients: usize) -> ClusterSpec {
        ClusterSpec {
            f: self.f,
            shards: self.shards,
            clients,
            crypto: !self.no_crypto,
            base_port: self.base_port,
            pistou: self.pistou.clone(),
            replica_threads: self.replica_threads,
            storage: self.storage.clone(),
        }
    }
}

/// mimalloc instead of glibc's allocator: the protocol allocates and frees many small
/// messages, rows and sets per transaction; glibc's malloc and free took ~14% of a loaded
/// SQL cluster's CPU, and mimalloc raised Fig. 8 throughput by 6–17% (docs/benchmarks.md).
/// Without transparent huge pages (`no_thp`), as in the `pistou` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match cli.cmd {
        Cmd::YcsbT { workload, cluster } => rt.block_on(ycsb_t(workload, cluster)),
        Cmd::Faulty { workload, cluster, faults } => rt.block_on(faulty::run(workload, cluster, faults)),
        Cmd::Core { txns, clients } => core_cost(txns, clients),
        Cmd::Attacks { attacks, cluster } => {
            // The attackers' own runtime (one thread): their tasks never queue ahead of the
            // correct clients' in this process. Shut down outside any async context.
            let attack_rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("attacker")
                .enable_all()
                .build()?;
            let result = rt.block_on(attacks::run(attacks, cluster, attack_rt.handle().clone()));
            attack_rt.shutdown_timeout(Duration::from_secs(5));
            result
        }
        Cmd::Stress { stress, cluster } => rt.block_on(stress::run(&cluster, &stress)),
        Cmd::Scan { scan, cluster } => rt.block_on(async {
            let c = Cluster::start(&cluster.spec(1), "scan")?;
            scan::run(&c, &scan).await
        }),
    }
}

async fn ycsb_t(w: Workload, c: ClusterArgs) -> Result<()> {
    let cluster = Cluster::start(&c.spec(w.clients + 1), "ycsb")?;
    ycsb::preload(&cluster, &w, w.clients as u64 + 1).await?;
    let start = Instant::now() + Duration::from_millis(200);
    let t = ycsb::run_correct_clients(&cluster, &w, 1, start).await?;
    let total = t.committed + t.aborted;
    println!(
        "| workload | crypto | clients | keys | committed tx/s | p50 ms | p99 ms | commit rate | fast path | errors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1}% | {:.1}% | {} |",
        w.describe(),
        if c.no_crypto { "off" } else { "on" },
        w.clients,
        w.keys,
        t.committed as f64 / w.duration as f64,
        t.latency_us.value_at_quantile(0.5) as f64 / 1000.0,
        t.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
        100.0 * t.committed as f64 / total.max(1) as f64,
        100.0 * t.fast as f64 / t.committed.max(1) as f64,
        t.errors,
    );
    Ok(())
}

/// Runs the simulator with no contention and negligible delays, and divides the wall time
/// (one thread) by the committed transactions, with signatures on and off.
fn core_cost(txns: usize, clients: usize) -> Result<()> {
    println!("| crypto | transactions | committed | fast path | CPU µs per committed transaction |");
    println!("|---|---|---|---|---|");
    for crypto in [true, false] {
        let mut s = pistou_sim::Scenario::base("core-cost", 1);
        s.shards = 1;
        s.clients = clients;
        s.crypto = crypto;
        s.min_delay_us = 1;
        s.max_delay_us = 2;
        s.clock_skew_us = 0;
        s.workload.txns_per_client = txns;
        s.workload.disjoint = true;
        s.workload.keys = 1_000_000;
        s.workload.audit_share = 0.0;
        s.workload.blind_share = 0.0;
        s.workload.explicit_abort_share = 0.0;
        let started = Instant::now();
        let o = pistou_sim::run(&s).map_err(|e| anyhow::anyhow!("{e}"))?;
        let us = started.elapsed().as_micros() as f64 / o.committed.max(1) as f64;
        println!(
            "| {} | {} | {} | {:.1}% | {:.0} |",
            if crypto { "on" } else { "off" },
            o.committed + o.aborted,
            o.committed,
            100.0 * o.fast_commits as f64 / o.committed.max(1) as f64,
            us
        );
    }
    Ok(())
}
