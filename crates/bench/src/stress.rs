//! Pesto Fig. 8: stress testing range reads with a YCSB-style SQL microbenchmark. Ten tables
//! `usertable0..9 (id BIGINT PRIMARY KEY, v BIGINT)`; every transaction reads and updates ten
//! rows with `UPDATE … SET v = v + 1 WHERE id >= $1 AND id <= $2` (a RANGE-READ whose
//! reconnaissance returns the rows' new versions), keys uniform or Zipfian, in one of two
//! shapes (`Shape`): one statement over ten consecutive rows, as the paper's artifact runs
//! Fig. 8, or ten single-row statements. Three modes, each on a fresh cluster:
//! - `normal`;
//! - `fail-eager`: clients ignore the eager decision, every range read proposes a snapshot
//!   and re-executes (Pesto: "requiring a snapshot proposal, but no synchronization");
//! - `incon`: clients' writebacks skip 1/3 of the replicas, which then hold those writes
//!   prepared until they ask a peer for the decision (decision inquiry, after 100 ms) or a
//!   snapshot names the transaction (SYNC): Pesto's "omitting/delaying writes".

use crate::cluster::Cluster;
use crate::cpu::{percent, CpuTimes};
use crate::ycsb::{Dist, KeyGen, Tally, Workload};
use crate::ClusterArgs;
use anyhow::{bail, Result};
use pistou_client::{Client, ClientError, ClientOptions, Outcome, SqlValue};
use pistou_core::ClientId;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

const TABLES: u64 = 10;
const ROWS_PER_TXN: u64 = 10;

/// What one transaction does.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum Shape {
    /// One statement updating ten consecutive rows of a random table, from a key the
    /// distribution picks: one range read per transaction. This is the Pesto artifact's
    /// Fig. 8 configuration (`rw_num_ops_txn = 1`, `fixed_range`, `max_range = 10`, no
    /// wrap-around).
    Range,
    /// Ten statements, each updating one row of a random table: ten range reads per
    /// transaction, so ten snapshot rounds under fail-eager.
    Rows,
}

/// The statements of one transaction: (table, first id, last id).
fn statements<R: Rng>(shape: Shape, keys: &KeyGen, rng: &mut R) -> Vec<(u64, u64, u64)> {
    match shape {
        Shape::Range => {
            let first = keys.pick(rng);
            vec![(rng.gen_range(0..TABLES), first, first + ROWS_PER_TXN - 1)]
        }
        Shape::Rows => {
            let mut rows: Vec<(u64, u64, u64)> = (0..ROWS_PER_TXN)
                .map(|_| {
                    let key = keys.pick(rng);
                    (rng.gen_range(0..TABLES), key, key)
                })
                .collect();
            rows.sort();
            rows.dedup();
            rows
        }
    }
}

/// The keys the distribution picks from: every row, or for `Shape::Range` every first row
/// of a full range.
fn key_space(a: &StressArgs) -> u64 {
    match a.shape {
        Shape::Range => a.rows - (ROWS_PER_TXN - 1),
        Shape::Rows => a.rows,
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum Mode {
    Normal,
    FailEager,
    Incon,
}

#[derive(clap::Args, Clone, Debug)]
pub struct StressArgs {
    /// Rows per table.
    #[arg(long, default_value_t = 10_000)]
    pub rows: u64,
    #[arg(long, value_enum, value_delimiter = ',', default_value = "uniform,zipf")]
    pub dists: Vec<Dist>,
    /// Zipfian exponent.
    #[arg(long, default_value_t = 1.1)]
    pub theta: f64,
    #[arg(long, value_enum, value_delimiter = ',', default_value = "normal,fail-eager,incon")]
    pub modes: Vec<Mode>,
    /// What a transaction does: one ten-row range statement (the paper's Fig. 8) or ten
    /// single-row statements.
    #[arg(long, value_enum, default_value_t = Shape::Range)]
    pub shape: Shape,
    /// Concurrent closed-loop clients.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Client identities the closed-loop clients share, spread round-robin: one `Client`
    /// (one engine, one connection per replica) each, as a gateway runs many sessions under
    /// one identity. Default: one per closed-loop client.
    #[arg(long)]
    pub client_ids: Option<usize>,
    /// Measured seconds per run (after warm-up).
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Rows per loading transaction.
    #[arg(long, default_value_t = 1_000)]
    pub batch: u64,
    /// Runs of each mode, interleaved (normal, fail-eager, incon, normal, ...) so that a slow
    /// spell of the machine hits every mode alike; a summary of medians follows.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// One cluster per workload, loaded once, on which the modes' runs alternate, instead
    /// of a fresh cluster per run. Without the ~10 s of starting and loading between runs,
    /// short runs can alternate often, so that a slow spell of a shared machine hits both
    /// modes of a pair alike. A run starts on the state the previous ones left (more
    /// versions, and after `incon` some writes still prepared at 1/3 of the replicas).
    #[arg(long)]
    pub same_cluster: bool,
    /// Seconds of unmeasured Normal load on each fresh cluster before its first measured
    /// run. Replicas start collecting garbage once their watermarks move, `max_txn_age_us`
    /// (60 s) and the row store's `gc_lag_us` (120 s) after the first transactions, which
    /// costs 12–15% of their CPU from then on; until then they also fault in fresh heap.
    /// Settling past both measures the steady state (150 s does).
    #[arg(long, default_value_t = 0)]
    pub settle: u64,
}

fn options(mode: Mode, n: usize) -> ClientOptions {
    ClientOptions {
        op_timeout: Duration::from_secs(30),
        eager_range_reads: mode != Mode::FailEager,
        writeback_omissions: if mode == Mode::Incon { n / 3 } else { 0 },
        ..ClientOptions::default()
    }
}

async fn load(client: &Client, a: &StressArgs) -> Result<()> {
    for t in 0..TABLES {
        let ddl = format!("CREATE TABLE usertable{t} (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)");
        client
            .run_txn(|txn| {
                let ddl = ddl.clone();
                Box::pin(async move { txn.query(&ddl, &[]).await.map(|_| ()) })
            })
            .await?;
        let mut next = 0;
        while next < a.rows {
            let end = (next + a.batch).min(a.rows);
            let values: Vec<String> = (next..end).map(|i| format!("({i}, 0)")).collect();
            let sql = format!("INSERT INTO usertable{t} VALUES {}", values.join(", "));
            client
                .run_txn(|txn| {
                    let sql = sql.clone();
                    Box::pin(async move { txn.query(&sql, &[]).await.map(|_| ()) })
                })
                .await?;
            next = end;
        }
    }
    Ok(())
}

pub async fn run(cluster_args: &ClusterArgs, a: &StressArgs) -> Result<()> {
    if a.clients == 0 || a.repeat == 0 {
        bail!("--clients and --repeat must be positive");
    }
    if a.rows < ROWS_PER_TXN {
        bail!("--rows must be at least {ROWS_PER_TXN}: a transaction updates that many rows");
    }
    let ids = a.client_ids.unwrap_or(a.clients);
    if ids == 0 || ids > a.clients {
        bail!("--client-ids must be between 1 and --clients ({})", a.clients);
    }
    println!("Transactions of shape {:?}.", a.shape);
    println!();
    println!("| workload | mode | committed tx/s | p50 ms | p99 ms | commit rate | fast path | eager reads | snapshot reads | proposals | failed reads | errors | CPU idle | CPU ms/committed |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut runs: Vec<Run> = Vec::new();
    for &dist in &a.dists {
        let mut kept: Option<Cluster> = None;
        for &mode in std::iter::repeat_n(&a.modes, a.repeat).flatten() {
            let cluster = match kept.take() {
                Some(cluster) => cluster,
                None => {
                    let cluster = loaded_cluster(cluster_args, a).await?;
                    settle(&cluster, a, dist, ids).await?;
                    cluster
                }
            };
            let w = Workload {
                keys: key_space(a),
                dist,
                theta: a.theta,
                clients: a.clients,
                duration: a.duration,
                warmup: a.warmup,
                preload_batch: 0,
            };
            let (t, stats, cpu) = clients(&cluster, &w, a.shape, ids, mode).await?;
            // Machine-wide busy CPU per committed transaction: what a mode costs, steadier
            // than throughput on a shared machine (it includes the clients' own CPU).
            let cpu_ms = cpu.busy.filter(|_| t.committed > 0).map(|busy| 1e3 * busy / t.committed as f64);
            let per_txn = cpu_ms.map_or_else(|| "n/a".to_string(), |ms| format!("{ms:.2}"));
            let total = t.committed + t.aborted;
            runs.push(Run { dist, mode, tps: t.committed as f64 / a.duration as f64, cpu_ms });
            println!(
                "| {} | {:?} | {:.0} | {:.1} | {:.1} | {:.1}% | {:.1}% | {} | {} | {} | {} | {} | {} | {} |",
                w.describe(),
                mode,
                t.committed as f64 / a.duration as f64,
                t.latency_us.value_at_quantile(0.5) as f64 / 1000.0,
                t.latency_us.value_at_quantile(0.99) as f64 / 1000.0,
                100.0 * t.committed as f64 / total.max(1) as f64,
                100.0 * t.fast as f64 / t.committed.max(1) as f64,
                stats.eager,
                stats.snapshot,
                stats.snapshot_proposals,
                stats.failed,
                t.errors,
                percent(cpu.idle),
                per_txn,
            );
            if a.same_cluster {
                kept = Some(cluster);
            }
        }
    }
    if a.repeat > 1 {
        summary(&runs, a);
    }
    Ok(())
}

/// A fresh cluster with every table loaded (by one more client identity than the runs use).
async fn loaded_cluster(cluster_args: &ClusterArgs, a: &StressArgs) -> Result<Cluster> {
    let cluster = Cluster::start(&cluster_args.spec(a.clients + 1), "stress")?;
    let loader = a.clients as u64 + 1;
    let n = cluster.config.quorums().n();
    let client = Client::connect_with(
        cluster.config.clone(),
        ClientId(loader),
        cluster.client_key(loader)?,
        options(Mode::Normal, n),
    )
    .await?;
    let started = Instant::now();
    load(&client, a).await?;
    client.shutdown().await;
    eprintln!("loaded {} rows in {:.1}s", TABLES * a.rows, started.elapsed().as_secs_f64());
    // Every replica applies the load before measuring.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(cluster)
}

/// `--settle`: unmeasured Normal load on a fresh cluster until it is in its steady state.
async fn settle(cluster: &Cluster, a: &StressArgs, dist: Dist, ids: usize) -> Result<()> {
    if a.settle == 0 {
        return Ok(());
    }
    let w = Workload {
        keys: key_space(a),
        dist,
        theta: a.theta,
        clients: a.clients,
        duration: a.settle,
        warmup: 0,
        preload_batch: 0,
    };
    let (t, _, _) = clients(cluster, &w, a.shape, ids, Mode::Normal).await?;
    eprintln!("settled for {} s ({:.0} tx/s, not measured)", a.settle, t.committed as f64 / a.settle as f64);
    Ok(())
}

/// One measured run.
struct Run {
    dist: Dist,
    mode: Mode,
    tps: f64,
    /// Machine-wide busy CPU per committed transaction (ms).
    cpu_ms: Option<f64>,
}

/// Median throughput and CPU per transaction of each mode over the repeated runs, with the
/// throughput drop and CPU increase from normal's, and the drop of each round (a mode's
/// i-th run against normal's i-th, which ran next to it): its median and range.
fn summary(runs: &[Run], a: &StressArgs) {
    let values = |dist: Dist, mode: Mode, value: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> {
        runs.iter().filter(|r| r.dist == dist && r.mode == mode).filter_map(value).collect()
    };
    let change = |mode: Mode, normal: Option<f64>, m: Option<f64>, sign: f64| match (normal, m) {
        (Some(n), Some(m)) if mode != Mode::Normal && n > 0.0 => format!("{:.0}%", sign * 100.0 * (n - m) / n),
        (_, Some(_)) => "—".to_string(),
        _ => "n/a".to_string(),
    };
    let show = |v: Option<f64>, digits: usize| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.digits$}"));
    println!();
    println!(
        "| workload | mode | median committed tx/s ({} runs) | drop from normal | drop per round: median (min to max) | median CPU ms/committed | increase from normal |",
        a.repeat
    );
    println!("|---|---|---|---|---|---|---|");
    for &dist in &a.dists {
        let normal_tps = values(dist, Mode::Normal, &|r| Some(r.tps));
        let normal_cpu = median(values(dist, Mode::Normal, &|r| r.cpu_ms));
        for &mode in &a.modes {
            let tps = values(dist, mode, &|r| Some(r.tps));
            let Some(tps_median) = median(tps.clone()) else { continue };
            let cpu = median(values(dist, mode, &|r| r.cpu_ms));
            let drop = change(mode, median(normal_tps.clone()), Some(tps_median), 1.0);
            let increase = change(mode, normal_cpu, cpu, -1.0);
            let rounds = round_drops(&normal_tps, &tps);
            let per_round = match (mode, median(rounds.clone())) {
                (Mode::Normal, _) => "—".to_string(),
                (_, None) => "n/a".to_string(),
                (_, Some(m)) => {
                    let (lo, hi) =
                        rounds.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), d| (lo.min(*d), hi.max(*d)));
                    format!("{m:.1}% ({lo:.1}% to {hi:.1}%)")
                }
            };
            println!(
                "| {dist:?} | {mode:?} | {tps_median:.0} | {drop} | {per_round} | {} | {increase} |",
                show(cpu, 2)
            );
        }
    }
}

/// The median (the mean of the middle two for an even count), `None` for no values.
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[mid]),
        _ => Some((v[mid - 1] + v[mid]) / 2.0),
    }
}

/// Throughput drop (%) of each round: `other[i]` against `normal[i]`, which ran next to it.
/// Rounds where normal committed nothing have no drop.
fn round_drops(normal: &[f64], other: &[f64]) -> Vec<f64> {
    normal.iter().zip(other).filter(|(n, _)| **n > 0.0).map(|(n, o)| 100.0 * (n - o) / n).collect()
}

/// The machine's CPU over the measured window: idle share and busy CPU-seconds.
struct CpuUse {
    idle: Option<f64>,
    busy: Option<f64>,
}

/// Runs `w.clients` closed-loop clients over `ids` client identities; returns their tally,
/// their range-read counts over the measured window and the machine's CPU use meanwhile.
async fn clients(
    cluster: &Cluster,
    w: &Workload,
    shape: Shape,
    ids: usize,
    mode: Mode,
) -> Result<(Tally, pistou_client::RangeStats, CpuUse)> {
    let keys = KeyGen::new(w)?;
    let n = cluster.config.quorums().n();
    let start = Instant::now() + Duration::from_millis(200);
    let measure_from = start + Duration::from_secs(w.warmup);
    let measured = Duration::from_secs(w.duration);
    let meter = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let before = CpuTimes::now();
        tokio::time::sleep(measured).await;
        let window = before.zip(CpuTimes::now());
        let idle = window.and_then(|(b, a)| b.idle_share_until(&a));
        let busy = window.and_then(|(b, a)| b.busy_seconds_until(&a, measured.as_secs_f64()));
        CpuUse { idle, busy }
    });
    let mut handles = Vec::new();
    for id in 1..=ids as u64 {
        let client =
            Client::connect_with(cluster.config.clone(), ClientId(id), cluster.client_key(id)?, options(mode, n))
                .await?;
        // Range-read counts when measuring starts; the difference at the end is the window's.
        let at_start = client.clone();
        let before = tokio::spawn(async move {
            tokio::time::sleep_until(measure_from.into()).await;
            at_start.range_stats().await
        });
        handles.push((client, before));
    }
    let mut tasks = Vec::new();
    for worker in 0..w.clients {
        let client = handles[worker % ids].0.clone();
        let (keys, w) = (keys.clone(), w.clone());
        tasks.push(tokio::spawn(async move { client_loop(&client, w, shape, keys, worker as u64 + 1, start).await }));
    }
    let mut total = Tally::new()?;
    for t in tasks {
        total.merge(&t.await??)?;
    }
    let mut stats = pistou_client::RangeStats::default();
    for (client, before) in handles {
        let (before, after) = (before.await??, client.range_stats().await?);
        client.shutdown().await;
        stats.eager += after.eager - before.eager;
        stats.snapshot += after.snapshot - before.snapshot;
        stats.snapshot_proposals += after.snapshot_proposals - before.snapshot_proposals;
        stats.failed += after.failed - before.failed;
    }
    Ok((total, stats, meter.await?))
}

/// One transaction: its read-and-update range statements, then commit.
async fn transaction(client: &Client, statements: &[(u64, u64, u64)]) -> Result<Outcome, ClientError> {
    let mut txn = client.begin().await?;
    for (table, first, last) in statements {
        let sql = format!("UPDATE usertable{table} SET v = v + 1 WHERE id >= $1 AND id <= $2");
        if let Err(e) = txn.query(&sql, &[SqlValue::Int(*first as i64), SqlValue::Int(*last as i64)]).await {
            txn.rollback();
            return match e {
                ClientError::Sql(s) if s.state == pistou_client::SqlState::SerializationFailure => Ok(Outcome::Aborted),
                other => Err(other),
            };
        }
    }
    txn.commit().await
}

async fn client_loop(
    client: &Client,
    w: Workload,
    shape: Shape,
    keys: KeyGen,
    seed: u64,
    start: Instant,
) -> Result<Tally> {
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
        let outcome = transaction(client, &statements(shape, &keys, &mut rng)).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn range_transactions_update_ten_consecutive_rows_inside_the_table() {
        let w = Workload {
            keys: 100 - (ROWS_PER_TXN - 1),
            dist: Dist::Uniform,
            theta: 1.1,
            clients: 1,
            duration: 1,
            warmup: 0,
            preload_batch: 0,
        };
        let keys = KeyGen::new(&w).expect("uniform keys");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..1_000 {
            let s = statements(Shape::Range, &keys, &mut rng);
            assert_eq!(s.len(), 1);
            let (table, first, last) = s[0];
            assert!(table < TABLES);
            assert_eq!(last - first + 1, ROWS_PER_TXN);
            assert!(last < 100, "the range {first}..={last} runs past the last row");
        }
    }

    #[test]
    fn rows_transactions_are_distinct_single_row_statements() {
        let w =
            Workload { keys: 3, dist: Dist::Uniform, theta: 1.1, clients: 1, duration: 1, warmup: 0, preload_batch: 0 };
        let keys = KeyGen::new(&w).expect("uniform keys");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..100 {
            let s = statements(Shape::Rows, &keys, &mut rng);
            assert!(!s.is_empty() && s.len() <= ROWS_PER_TXN as usize);
            assert!(s.iter().all(|(t, first, last)| *t < TABLES && first == last && *last < 3));
            assert!(s.windows(2).all(|p| p[0] < p[1]), "sorted without repeats: {s:?}");
        }
    }

    #[test]
    fn round_drops_pair_runs_by_position() {
        assert_eq!(round_drops(&[200.0, 100.0, 0.0], &[150.0, 110.0, 5.0]), vec![25.0, -10.0]);
        assert_eq!(round_drops(&[200.0, 100.0], &[150.0]), vec![25.0], "an unfinished round is left out");
    }
}
