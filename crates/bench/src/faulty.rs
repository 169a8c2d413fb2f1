//! Basil Fig. 6: throughput of correct clients while a growing share of the transactions
//! comes from Byzantine clients. The baseline (no faulty transactions) is measured in the
//! same run, on a fresh cluster like every other point.

use crate::cluster::Cluster;
use crate::ycsb::{self, key_name, KeyGen, Workload};
use crate::ClusterArgs;
use anyhow::Result;
use pistou_adversary::{ByzClient, ClientFault, KeyPicker};
use pistou_core::ClientId;
use std::time::{Duration, Instant};

#[derive(clap::Args, Clone, Debug)]
pub struct FaultArgs {
    /// Client faults to measure (stall-early, stall-late, equivocate, forced-equivocate, ...).
    #[arg(long, value_delimiter = ',', default_value = "stall-early,stall-late,equivocate,forced-equivocate")]
    faults: Vec<String>,
    /// Shares of faulty transactions, besides the 0% baseline.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.2,0.3,0.4")]
    shares: Vec<f64>,
    /// Byzantine client identities issuing the faulty transactions.
    #[arg(long, default_value_t = 4)]
    byz_clients: usize,
}

pub async fn run(w: Workload, c: ClusterArgs, a: FaultArgs) -> Result<()> {
    let faults: Vec<ClientFault> =
        a.faults.iter().map(|f| f.parse().map_err(anyhow::Error::msg)).collect::<Result<_>>()?;
    let per_client = |tx: u64| tx as f64 / w.duration as f64 / w.clients as f64;
    println!("| workload | fault | faulty share (target) | faulty share (measured) | correct tx/s | per correct client | vs 0% |");
    println!("|---|---|---|---|---|---|---|");
    let (base, _) = point(&w, &c, &a, None, 0.0).await?;
    let base_tps = base as f64 / w.duration as f64;
    println!("| {} | none | 0% | 0% | {:.0} | {:.1} | 100% |", w.describe(), base_tps, per_client(base));
    for fault in &faults {
        for &share in &a.shares {
            let (committed, measured) = point(&w, &c, &a, Some((*fault, base_tps)), share).await?;
            let tps = committed as f64 / w.duration as f64;
            println!(
                "| {} | {:?} | {:.0}% | {:.1}% | {:.0} | {:.1} | {:.0}% |",
                w.describe(),
                fault,
                share * 100.0,
                measured * 100.0,
                tps,
                per_client(committed),
                100.0 * tps / base_tps.max(1e-9)
            );
        }
    }
    Ok(())
}

/// One measurement on a fresh cluster: committed correct transactions in the window, and the
/// measured share of faulty transactions among all transactions started.
async fn point(
    w: &Workload,
    c: &ClusterArgs,
    a: &FaultArgs,
    fault: Option<(ClientFault, f64)>,
    share: f64,
) -> Result<(u64, f64)> {
    let loader = w.clients as u64 + 1;
    let cluster = Cluster::start(&c.spec(w.clients + 1 + a.byz_clients), "faulty")?;
    ycsb::preload(&cluster, w, loader).await?;
    let start = Instant::now() + Duration::from_millis(200);
    let until = start + Duration::from_secs(w.warmup + w.duration);
    let mut byz_tasks = Vec::new();
    if let Some((fault, base_tps)) = fault {
        // Faulty rate so that faulty / (faulty + correct) ≈ share at the baseline rate.
        let rate = (share / (1.0 - share)).max(0.0) * base_tps;
        let gap_us = (a.byz_clients as f64 / rate.max(1e-3) * 1e6) as u64;
        let txns = (rate * (w.warmup + w.duration) as f64 / a.byz_clients as f64).ceil() as usize + 1;
        let keys = KeyGen::new(w)?;
        for b in 0..a.byz_clients as u64 {
            let id = loader + 1 + b;
            let Some(key) = cluster.client_key(id)? else { anyhow::bail!("the faulty benchmark needs crypto on") };
            let keys = keys.clone();
            let pick: KeyPicker = Box::new(move |rng| key_name(keys.pick(rng)));
            let actor =
                ByzClient::new(b as usize, ClientId(id), key, fault, cluster.config.clone(), pick, txns, gap_us);
            byz_tasks.push(tokio::spawn(pistou_adversary::net::drive(
                cluster.config.clone(),
                ClientId(id),
                actor,
                until,
                id,
            )));
        }
    }
    let t = ycsb::run_correct_clients(&cluster, w, 1, start).await?;
    let mut faulty = 0usize;
    for task in byz_tasks {
        faulty += task.await??;
    }
    // Faulty transactions are spread over warm-up and measurement; correct ones are counted in
    // the measured window only.
    let faulty_in_window = faulty as f64 * w.duration as f64 / (w.warmup + w.duration) as f64;
    let correct_attempts = (t.committed + t.aborted + t.errors) as f64;
    let measured = faulty_in_window / (faulty_in_window + correct_attempts).max(1.0);
    Ok((t.committed, measured))
}
