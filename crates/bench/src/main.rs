//! Pistou's benchmarks, against local clusters of real `pistou replica` processes started
//! with `pistou cluster up`. They measure and print; they never gate anything.
//!
//! - `ycsb-t`: YCSB-T throughput, latency, commit rate and fast-path share (issue 2).
//! - `faulty`: throughput of correct clients while a share of transactions comes from
//!   Byzantine clients (Basil Fig. 6, issue 3).

mod byz;
mod cluster;
mod faulty;
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
    /// Correct clients' throughput while Byzantine clients issue a share of the transactions.
    Faulty {
        #[command(flatten)]
        workload: Workload,
        #[command(flatten)]
        cluster: ClusterArgs,
        #[command(flatten)]
        faults: faulty::FaultArgs,
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
    /// First replica port (the cluster uses the following n*shards ports).
    #[arg(long, default_value_t = 17100)]
    base_port: u16,
    /// The `pistou` binary (default: next to this one).
    #[arg(long)]
    pistou: Option<PathBuf>,
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
        }
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match cli.cmd {
        Cmd::YcsbT { workload, cluster } => rt.block_on(ycsb_t(workload, cluster)),
        Cmd::Faulty { workload, cluster, faults } => rt.block_on(faulty::run(workload, cluster, faults)),
    }
}

async fn ycsb_t(w: Workload, c: ClusterArgs) -> Result<()> {
    let cluster = Cluster::start(&c.spec(w.clients + 1), "ycsb")?;
    ycsb::preload(&cluster, &w, w.clients as u64 + 1).await?;
    let start = Instant::now() + Duration::from_millis(200);
    let t = ycsb::run_correct_clients(&cluster, &w, 1, start).await?;
    let total = t.committed + t.aborted;
    println!("| workload | crypto | clients | keys | committed tx/s | p50 ms | p99 ms | commit rate | fast path | errors |");
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
