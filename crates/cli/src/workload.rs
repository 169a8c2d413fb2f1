//! `pistou workload init|run|check <name> --url …`: standard workloads against any
//! PostgreSQL-protocol endpoint (crates/workload).

use crate::usage::Usage;
use anyhow::{anyhow, Result};
use clap::{Args, Subcommand, ValueEnum};
use pistou_workload::{auctionmark, seats, tpcc, ycsb, InitOptions, Name, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_URL: &str = "postgres://pistou@127.0.0.1:5433/pistou";

#[derive(Subcommand)]
pub enum WorkloadCmd {
    /// Create the workload's tables and load its data set.
    Init(InitArgs),
    /// Run the workload's transaction mix and report throughput and latency.
    Run(RunArgs),
    /// Verify the data set's invariants (exit 1 on any violation).
    Check(CheckArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum WorkloadName {
    /// TPC-C: the five transactions in the standard mix; check = consistency conditions 1-4.
    Tpcc,
    /// SEATS (BenchBase): airline reservations, its six transactions in the default mix;
    /// check = seats left, seats reserved once, reservations' customers and flights exist.
    Seats,
    /// AuctionMark (BenchBase): an auction site, its nine transactions in the default mix plus
    /// CloseAuctions; check = bids, prices, maximum bids, purchases, comments and ratings agree.
    Auctionmark,
    /// YCSB core workloads A-F (choose with `run --mix`).
    Ycsb,
    /// Bank transfers between random accounts; check = the total is conserved.
    Transfer,
}

impl From<WorkloadName> for Name {
    fn from(n: WorkloadName) -> Name {
        match n {
            WorkloadName::Tpcc => Name::Tpcc,
            WorkloadName::Seats => Name::Seats,
            WorkloadName::Auctionmark => Name::AuctionMark,
            WorkloadName::Ycsb => Name::Ycsb,
            WorkloadName::Transfer => Name::Transfer,
        }
    }
}

#[derive(Args)]
pub struct InitArgs {
    name: WorkloadName,
    /// Connection URL of a Pistou gateway or PostgreSQL.
    #[arg(long, default_value = DEFAULT_URL)]
    url: String,
    /// TPC-C: number of warehouses.
    #[arg(long, default_value_t = 1)]
    warehouses: u64,
    /// TPC-C, NON-STANDARD scale-down: items (and stock rows per warehouse); the spec's is 100000.
    #[arg(long, default_value_t = tpcc::SPEC_ITEMS)]
    items: u64,
    /// TPC-C, NON-STANDARD scale-down: customers (and initial orders) per district; the spec's is 3000.
    #[arg(long, default_value_t = tpcc::SPEC_CUSTOMERS)]
    customers: u64,
    /// SEATS: flights (with 10 customers per flight).
    #[arg(long, default_value_t = seats::DEFAULT_FLIGHTS)]
    flights: u64,
    /// AuctionMark: users (each selling 0 to 6 items).
    #[arg(long, default_value_t = auctionmark::DEFAULT_USERS)]
    users: u64,
    /// YCSB: records in usertable.
    #[arg(long, default_value_t = 10_000)]
    records: u64,
    /// transfer: number of accounts.
    #[arg(long, default_value_t = 1000)]
    accounts: u64,
    /// Seed of the data generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Drop this workload's existing tables first.
    #[arg(long)]
    drop: bool,
}

#[derive(Args)]
pub struct RunArgs {
    name: WorkloadName,
    /// Connection URL of a Pistou gateway or PostgreSQL.
    #[arg(long, default_value = DEFAULT_URL)]
    url: String,
    /// Seconds to run.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Concurrent connections, each running transactions back to back.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// YCSB: core workload A, B, C, D, E or F.
    #[arg(long, default_value = "A")]
    mix: String,
    /// Seed of the transaction inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the results (summary, histograms, per-second series) as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw throughput and latency over time into a PNG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Report the CPU time of this server process and its descendants per committed
    /// transaction (repeatable: PostgreSQL's postmaster, or each Pistou replica). Linux only.
    #[arg(long = "cpu-pid", value_name = "PID")]
    cpu_pids: Vec<u32>,
}

#[derive(Args)]
pub struct CheckArgs {
    name: WorkloadName,
    /// Connection URL of a Pistou gateway or PostgreSQL.
    #[arg(long, default_value = DEFAULT_URL)]
    url: String,
}

pub async fn run(cmd: WorkloadCmd) -> Result<ExitCode> {
    match cmd {
        WorkloadCmd::Init(a) => init(a).await,
        WorkloadCmd::Run(a) => run_workload(a).await,
        WorkloadCmd::Check(a) => check(a).await,
    }
}

async fn init(a: InitArgs) -> Result<ExitCode> {
    let scale = tpcc::Scale { warehouses: a.warehouses, items: a.items, customers: a.customers };
    scale.validate().map_err(Usage)?;
    let seats = seats::Scale { flights: a.flights };
    seats.validate().map_err(Usage)?;
    let auction = auctionmark::Scale { users: a.users };
    auction.validate().map_err(Usage)?;
    if a.records == 0 {
        return Err(Usage("--records must be at least 1".into()).into());
    }
    if a.accounts < 2 {
        return Err(Usage("--accounts must be at least 2".into()).into());
    }
    let options = InitOptions {
        tpcc: scale,
        seats,
        auctionmark: auction,
        ycsb_records: a.records,
        accounts: a.accounts,
        seed: a.seed,
        drop: a.drop,
    };
    let name = Name::from(a.name);
    let started = std::time::Instant::now();
    pistou_workload::init(name, &a.url, &options, &mut |line| out!("{line}")).await?;
    out!("{} data set loaded in {:.1} s", name.as_str(), started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

async fn run_workload(a: RunArgs) -> Result<ExitCode> {
    if a.duration == 0 {
        return Err(Usage("--duration must be at least 1 second".into()).into());
    }
    if a.clients == 0 {
        return Err(Usage("--clients must be at least 1".into()).into());
    }
    let mix: ycsb::Mix = a.mix.parse().map_err(Usage)?;
    let options = RunOptions {
        url: a.url,
        clients: a.clients,
        duration: Duration::from_secs(a.duration),
        seed: a.seed,
        ycsb_mix: mix,
        cpu_pids: a.cpu_pids,
    };
    let interrupt = async {
        let sig = crate::signals::stop_requested().await;
        eout!("{sig} received: stopping the run");
    };
    let report = pistou_workload::run(a.name.into(), &options, interrupt).await?;
    out!("{}", report.table().trim_end());
    if let Some(path) = &a.json {
        report.write_json(path)?;
    }
    if let Some(path) = &a.plot {
        let title = format!("{} against {}, {} clients", report.workload, report.endpoint, report.clients);
        pistou_workload::plot::plot(&report.series, &title, path)?;
    }
    if report.interrupted {
        return Err(anyhow!("the run was interrupted after {:.1} s (results above are partial)", report.elapsed_s));
    }
    if report.total.errors > 0 {
        return Err(anyhow!("{} transactions failed with errors (see above)", report.total.errors));
    }
    Ok(ExitCode::SUCCESS)
}

async fn check(a: CheckArgs) -> Result<ExitCode> {
    let name = Name::from(a.name);
    let violations = pistou_workload::check(name, &a.url).await?;
    if violations.is_empty() {
        out!("{}: all checks passed", name.as_str());
        return Ok(ExitCode::SUCCESS);
    }
    for v in &violations {
        eout!("{v}");
    }
    Err(anyhow!("{}: {} violation(s) found", name.as_str(), violations.len()))
}
