//! YCSB-T: each transaction reads two keys and writes both back (read-modify-write of an
//! 8-byte counter), from closed-loop clients of the client library.

use crate::cluster::Cluster;
use anyhow::Result;
use clap::ValueEnum;
use hdrhistogram::Histogram;
use pistou_client::{Client, Outcome};
use pistou_core::ClientId;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub enum Dist {
    Uniform,
    Zipf,
}

#[derive(clap::Args, Clone, Debug)]
pub struct Workload {
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    pub dist: Dist,
    /// Zipfian exponent.
    #[arg(long, default_value_t = 0.9)]
    pub theta: f64,
    /// Concurrent closed-loop correct clients (each its own client identity).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Measured seconds (after warm-up).
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// Write every key once before measuring, in transactions of this many writes (0: none).
    #[arg(long, default_value_t = 100)]
    pub preload_batch: u64,
}

impl Workload {
    pub fn describe(&self) -> String {
        match self.dist {
            Dist::Uniform => "uniform".into(),
            Dist::Zipf => format!("zipf {}", self.theta),
        }
    }
}

pub fn key_name(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

/// Draws key indices from the workload's distribution.
#[derive(Clone)]
pub struct KeyGen {
    dist: Dist,
    keys: u64,
    zipf: Option<Zipf<f64>>,
}

impl KeyGen {
    pub fn new(w: &Workload) -> Result<KeyGen> {
        let zipf = match w.dist {
            Dist::Zipf => Some(Zipf::new(w.keys, w.theta).map_err(|e| anyhow::anyhow!("zipf: {e:?}"))?),
            Dist::Uniform => None,
        };
        Ok(KeyGen { dist: w.dist, keys: w.keys.max(1), zipf })
    }

    pub fn pick<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match (self.dist, &self.zipf) {
            (Dist::Zipf, Some(z)) => (z.sample(rng) as u64).saturating_sub(1).min(self.keys - 1),
            _ => rng.gen_range(0..self.keys),
        }
    }
}

/// What closed-loop clients achieved during the measured window.
pub struct Tally {
    pub committed: u64,
    pub fast: u64,
    pub aborted: u64,
    pub errors: u64,
    pub latency_us: Histogram<u64>,
}

impl Tally {
    pub fn new() -> Result<Tally> {
        Ok(Tally { committed: 0, fast: 0, aborted: 0, errors: 0, latency_us: Histogram::new(3)? })
    }

    pub fn merge(&mut self, o: &Tally) -> Result<()> {
        self.committed += o.committed;
        self.fast += o.fast;
        self.aborted += o.aborted;
        self.errors += o.errors;
        self.latency_us.add(&o.latency_us)?;
        Ok(())
    }
}

/// Writes every key once, as the loader client `loader`.
pub async fn preload(cluster: &Cluster, w: &Workload, loader: u64) -> Result<()> {
    if w.preload_batch == 0 {
        return Ok(());
    }
    let client = Client::connect(cluster.config.clone(), ClientId(loader), cluster.client_key(loader)?).await?;
    let started = Instant::now();
    let mut next = 0;
    while next < w.keys {
        let end = (next + w.preload_batch).min(w.keys);
        let mut txn = client.begin().await?;
        for i in next..end {
            txn.put(key_name(i), 0u64.to_le_bytes().to_vec())?;
        }
        if txn.commit().await?.is_committed() {
            next = end;
        }
    }
    eprintln!("preloaded {} keys in {:.1}s", w.keys, started.elapsed().as_secs_f64());
    Ok(())
}

/// Runs `w.clients` closed-loop YCSB-T clients with ids `first_id..`; measures between
/// `start + warmup` and `start + warmup + duration`.
pub async fn run_correct_clients(cluster: &Cluster, w: &Workload, first_id: u64, start: Instant) -> Result<Tally> {
    let keys = KeyGen::new(w)?;
    let mut tasks = Vec::new();
    for c in 0..w.clients as u64 {
        let id = first_id + c;
        let client = Client::connect(cluster.config.clone(), ClientId(id), cluster.client_key(id)?).await?;
        let (keys, w) = (keys.clone(), w.clone());
        tasks.push(tokio::spawn(async move { client_loop(client, w, keys, id, start).await }));
    }
    let mut total = Tally::new()?;
    for t in tasks {
        total.merge(&t.await??)?;
    }
    Ok(total)
}

async fn client_loop(client: Client, w: Workload, keys: KeyGen, seed: u64, start: Instant) -> Result<Tally> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut t = Tally::new()?;
    tokio::time::sleep_until(start.into()).await;
    let measure_from = start + Duration::from_secs(w.warmup);
    let end = measure_from + Duration::from_secs(w.duration);
    loop {
        let began = Instant::now();
        if began >= end {
            break;
        }
        let a = keys.pick(&mut rng);
        let mut b = keys.pick(&mut rng);
        if b == a {
            b = (a + 1) % w.keys;
        }
        let outcome = async {
            let mut txn = client.begin().await?;
            for k in [a, b] {
                let v = txn.get(key_name(k)).await?;
                let n = v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map_or(0, u64::from_le_bytes);
                txn.put(key_name(k), (n + 1).to_le_bytes().to_vec())?;
            }
            txn.commit().await
        }
        .await;
        if began < measure_from || Instant::now() > end {
            continue;
        }
        match outcome {
            Ok(Outcome::Committed { fast }) => {
                t.committed += 1;
                t.fast += fast as u64;
                t.latency_us.record(began.elapsed().as_micros() as u64)?;
            }
            Ok(Outcome::Aborted) => t.aborted += 1,
            Err(_) => t.errors += 1,
        }
    }
    Ok(t)
}
