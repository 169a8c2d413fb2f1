//! `pistou workload`: standard workloads (TPC-C, SEATS, AuctionMark, YCSB A–F, bank transfers) loaded, run and
//! checked against any PostgreSQL-protocol endpoint — a Pistou gateway or PostgreSQL — with
//! serializable transactions, retries of serialization failures counted apart from errors,
//! a live progress line, a summary table, a JSON result file and a plot.

pub mod auctionmark;
pub mod conn;
mod copy;
pub mod cpu;
pub mod driver;
mod meta;
pub mod plot;
mod progress;
pub mod report;
pub mod seats;
pub mod stats;
pub mod tpcc;
pub mod transfer;
mod violations;
pub mod ycsb;

use anyhow::Result;
use driver::{Measured, RunConfig, Workload};
use rand::SeedableRng;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use report::Report;

/// The workloads, by their command-line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    Tpcc,
    Seats,
    AuctionMark,
    Ycsb,
    Transfer,
}

impl Name {
    pub fn as_str(self) -> &'static str {
        match self {
            Name::Tpcc => "tpcc",
            Name::Seats => "seats",
            Name::AuctionMark => "auctionmark",
            Name::Ycsb => "ycsb",
            Name::Transfer => "transfer",
        }
    }
}

/// Every workload's data set (`init --drop` of one must know which others share a table).
pub(crate) const DATA_SETS: [&meta::DataSet; 5] =
    [&tpcc::DATA_SET, &seats::DATA_SET, &auctionmark::DATA_SET, &ycsb::DATA_SET, &transfer::DATA_SET];

/// `init` options; each workload reads its own.
#[derive(Clone, Debug)]
pub struct InitOptions {
    pub tpcc: tpcc::Scale,
    pub seats: seats::Scale,
    pub auctionmark: auctionmark::Scale,
    pub ycsb_records: u64,
    pub accounts: u64,
    pub seed: u64,
    /// Replace an existing data set of the same workload.
    pub drop: bool,
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub url: String,
    pub clients: usize,
    pub duration: Duration,
    pub seed: u64,
    pub ycsb_mix: ycsb::Mix,
    /// Server processes whose CPU time (with their descendants) is reported per committed
    /// transaction: PostgreSQL's postmaster, or each Pistou replica.
    pub cpu_pids: Vec<u32>,
}

/// Creates the workload's tables and loads its data set; `report` gets progress lines.
pub async fn init(name: Name, url: &str, o: &InitOptions, report: &mut dyn FnMut(String)) -> Result<()> {
    let mut s = conn::connect(url).await?;
    match name {
        Name::Tpcc => tpcc::init(&mut s, &o.tpcc, o.seed, o.drop, report).await,
        Name::Seats => seats::init(&mut s, &o.seats, o.seed, o.drop, report).await,
        Name::AuctionMark => auctionmark::init(&mut s, &o.auctionmark, o.seed, o.drop, report).await,
        Name::Ycsb => ycsb::init(&mut s, o.ycsb_records, o.seed, o.drop, report).await,
        Name::Transfer => transfer::init(&mut s, o.accounts, o.drop, report).await,
    }
}

/// Runs the workload for the duration, or until `interrupt` completes (the measurements so
/// far are still returned, marked interrupted).
pub async fn run(name: Name, o: &RunOptions, interrupt: impl Future<Output = ()> + Send) -> Result<Report> {
    let mut s = conn::connect(&o.url).await?;
    let config = RunConfig { url: o.url.clone(), clients: o.clients, duration: o.duration, seed: o.seed };
    let mut rng = rand::rngs::StdRng::seed_from_u64(o.seed);
    let cpu_before = cpu::tree_seconds(&o.cpu_pids)?;
    let (label, measured) = match name {
        Name::Tpcc => {
            let params = tpcc::params(&mut s).await?;
            ("TPC-C".to_string(), drive(tpcc::Tpcc::new(&params, &mut rng), &config, interrupt).await?)
        }
        Name::Seats => {
            let params = seats::params(&mut s).await?;
            let workload = seats::Seats::new(&mut s, &params).await?;
            ("SEATS".to_string(), drive(workload, &config, interrupt).await?)
        }
        Name::AuctionMark => {
            let params = auctionmark::params(&mut s).await?;
            let workload = auctionmark::AuctionMark::new(&mut s, &params).await?;
            ("AuctionMark".to_string(), drive(workload, &config, interrupt).await?)
        }
        Name::Ycsb => {
            let params = ycsb::params(&mut s).await?;
            let workload = ycsb::Ycsb::new(&mut s, &params, o.ycsb_mix).await?;
            (format!("YCSB {:?}", o.ycsb_mix), drive(workload, &config, interrupt).await?)
        }
        Name::Transfer => {
            let params = transfer::params(&mut s).await?;
            ("transfer".to_string(), drive(transfer::Transfer::new(&params), &config, interrupt).await?)
        }
    };
    let endpoint = conn::describe_endpoint(&o.url);
    let mut report = Report::new(&label, endpoint, o.clients, o.duration.as_secs_f64(), &measured);
    if !o.cpu_pids.is_empty() {
        let after = cpu::tree_seconds(&o.cpu_pids)?;
        let seconds = after.iter().zip(&cpu_before).map(|(a, b)| a - b).collect();
        report.cpu = Some(report::Cpu::new(o.cpu_pids.clone(), seconds, report.total.committed));
    }
    Ok(report)
}

async fn drive<W: Workload>(w: W, config: &RunConfig, interrupt: impl Future<Output = ()> + Send) -> Result<Measured> {
    driver::run(Arc::new(w), config, interrupt).await
}

/// Verifies the data set; returns the violations found (empty when it is consistent).
pub async fn check(name: Name, url: &str) -> Result<Vec<String>> {
    let mut s = conn::connect(url).await?;
    match name {
        Name::Tpcc => tpcc::check(&mut s).await,
        Name::Seats => seats::check(&mut s).await,
        Name::AuctionMark => auctionmark::check(&mut s).await,
        Name::Ycsb => ycsb::check(&mut s).await,
        Name::Transfer => transfer::check(&mut s).await,
    }
}
