//! `pistou-bench ycsb-t`: YCSB-T transactions (2 reads + 2 read-modify-writes) against a local
//! cluster of real `pistou replica` processes started with `pistou cluster up`, driven by
//! closed-loop clients through the client library. Reports committed tx/s, latency
//! percentiles, commit rate and fast-path share. It measures; it never gates anything.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use hdrhistogram::Histogram;
use pistou_client::{Client, Outcome};
use pistou_core::{ClientId, ClusterConfig};
use pistou_crypto::SecretKey;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "pistou-bench", about = "Benchmarks of Pistou against local clusters")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// YCSB-T: each transaction reads two keys and writes both back.
    YcsbT(YcsbArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Dist {
    Uniform,
    Zipf,
}

#[derive(clap::Args, Clone)]
struct YcsbArgs {
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    dist: Dist,
    /// Zipfian exponent.
    #[arg(long, default_value_t = 0.9)]
    theta: f64,
    /// Concurrent closed-loop clients (each its own client identity).
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Measured seconds (after warm-up).
    #[arg(long, default_value_t = 20)]
    duration: u64,
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    /// Measure with signatures off (only for measuring crypto cost).
    #[arg(long)]
    no_crypto: bool,
    /// Write every key once before measuring, in transactions of this many writes (0: no preload).
    #[arg(long, default_value_t = 100)]
    preload_batch: u64,
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

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::YcsbT(args) => ycsb_t(args),
    }
}

/// Kills the cluster when dropped, whatever happens to the benchmark.
struct Cluster(Child);

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGTERM lets `cluster up` stop its replicas; kill() is the fallback.
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").arg("-TERM").arg(&pid).status();
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn pistou_binary(args: &YcsbArgs) -> Result<PathBuf> {
    if let Some(p) = &args.pistou {
        return Ok(p.clone());
    }
    let me = std::env::current_exe().context("locating this executable")?;
    let p = me.with_file_name("pistou");
    if !p.exists() {
        bail!("{} not found: build it with `cargo build --release -p pistou-cli` or pass --pistou", p.display());
    }
    Ok(p)
}

fn start_cluster(args: &YcsbArgs, dir: &Path) -> Result<(Cluster, Arc<ClusterConfig>)> {
    let bin = pistou_binary(args)?;
    let mut init = Command::new(&bin);
    init.arg("init").arg("--dir").arg(dir).arg("--shards").arg(args.shards.to_string()).arg("--f").arg(args.f.to_string());
    init.arg("--clients").arg((args.clients + 1).to_string()).arg("--base-port").arg(args.base_port.to_string());
    if args.no_crypto {
        init.arg("--no-crypto");
    }
    let status = init.stdout(Stdio::null()).status().context("running pistou init")?;
    if !status.success() {
        bail!("pistou init failed");
    }
    let text = std::fs::read_to_string(dir.join("cluster.toml"))?;
    let config = Arc::new(ClusterConfig::from_toml(&text)?);
    let child = Command::new(&bin)
        .arg("cluster")
        .arg("up")
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting pistou cluster up")?;
    let cluster = Cluster(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    for r in config.all_replicas() {
        let addr = config.replica(r).map(|c| c.addr.clone()).unwrap_or_default();
        while TcpStream::connect(&addr).is_err() {
            if Instant::now() > deadline {
                bail!("replica {r} at {addr} did not come up");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok((cluster, config))
}

fn client_key(dir: &Path, id: u64) -> Result<SecretKey> {
    let text = std::fs::read_to_string(dir.join("keys").join(format!("client-{id}.key")))?;
    SecretKey::from_hex(text.trim()).map_err(|e| anyhow::anyhow!("client key {id}: {e}"))
}

fn key_name(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

struct Tally {
    committed: u64,
    fast: u64,
    aborted: u64,
    errors: u64,
    latency_us: Histogram<u64>,
}

fn ycsb_t(args: YcsbArgs) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("pistou-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (cluster, config) = start_cluster(&args, &dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = rt.block_on(run(&args, &dir, config));
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
    let (t, secs) = result?;
    let total = t.committed + t.aborted;
    println!(
        "| {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1}% | {:.1}% | {} |",
        match args.dist {
            Dist::Uniform => "uniform".to_string(),
            Dist::Zipf => format!("zipf {}", args.theta),
        },
        if args.no_crypto { "off" } else { "on" },
        args.clients,
        args.keys,
        t.committed as f64 / secs,
        t.latency_us.value_at_quantile(0.5) as f64 / 1000.0,
        t.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
        100.0 * t.committed as f64 / total.max(1) as f64,
        100.0 * t.fast as f64 / t.committed.max(1) as f64,
        t.errors,
    );
    Ok(())
}

async fn run(args: &YcsbArgs, dir: &Path, config: Arc<ClusterConfig>) -> Result<(Tally, f64)> {
    if args.preload_batch > 0 {
        let loader = Client::connect(config.clone(), ClientId(args.clients as u64 + 1), load_key(args, dir)?).await?;
        let started = Instant::now();
        let mut next = 0;
        while next < args.keys {
            let end = (next + args.preload_batch).min(args.keys);
            let mut txn = loader.begin().await?;
            for i in next..end {
                txn.put(key_name(i), 0u64.to_le_bytes().to_vec())?;
            }
            match txn.commit().await? {
                Outcome::Committed { .. } => next = end,
                Outcome::Aborted => {}
            }
        }
        eprintln!("preloaded {} keys in {:.1}s", args.keys, started.elapsed().as_secs_f64());
    }
    let warmup = Duration::from_secs(args.warmup);
    let measure = Duration::from_secs(args.duration);
    let start = Instant::now() + Duration::from_millis(200);
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let id = c as u64 + 1;
        let key = if config.crypto { Some(client_key(dir, id)?) } else { None };
        let client = Client::connect(config.clone(), ClientId(id), key).await?;
        let args = args.clone();
        tasks.push(tokio::spawn(async move { client_loop(client, args, c as u64, start, warmup, measure).await }));
    }
    let mut total = Tally { committed: 0, fast: 0, aborted: 0, errors: 0, latency_us: Histogram::new(3)? };
    for t in tasks {
        let r = t.await??;
        total.committed += r.committed;
        total.fast += r.fast;
        total.aborted += r.aborted;
        total.errors += r.errors;
        total.latency_us.add(&r.latency_us)?;
    }
    Ok((total, measure.as_secs_f64()))
}

fn load_key(args: &YcsbArgs, dir: &Path) -> Result<Option<SecretKey>> {
    if args.no_crypto {
        Ok(None)
    } else {
        Ok(Some(client_key(dir, args.clients as u64 + 1)?))
    }
}

async fn client_loop(client: Client, args: YcsbArgs, seed: u64, start: Instant, warmup: Duration, measure: Duration) -> Result<Tally> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(args.keys, args.theta).map_err(|e| anyhow::anyhow!("zipf: {e:?}"))?;
    let pick = |rng: &mut rand::rngs::StdRng| match args.dist {
        Dist::Uniform => rng.gen_range(0..args.keys),
        Dist::Zipf => (zipf.sample(rng) as u64).saturating_sub(1).min(args.keys - 1),
    };
    let mut t = Tally { committed: 0, fast: 0, aborted: 0, errors: 0, latency_us: Histogram::new(3)? };
    tokio::time::sleep_until(start.into()).await;
    let measure_from = start + warmup;
    let end = measure_from + measure;
    loop {
        let began = Instant::now();
        if began >= end {
            break;
        }
        let a = pick(&mut rng);
        let mut b = pick(&mut rng);
        if b == a {
            b = (a + 1) % args.keys;
        }
        let outcome = async {
            let mut txn = client.begin().await?;
            for k in [a, b] {
                // Read-modify-write of an 8-byte counter.
                let v = txn.get(key_name(k)).await?;
                let n = v.and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok()).map_or(0, u64::from_le_bytes);
                txn.put(key_name(k), (n + 1).to_le_bytes().to_vec())?;
            }
            txn.commit().await
        }
        .await;
        let measured = began >= measure_from && Instant::now() <= end;
        if !measured {
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
