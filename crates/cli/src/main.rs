//! `pistou`: the one binary of a Pistou deployment.
//!
//! - `pistou init` writes a cluster directory (configuration and keys);
//! - `pistou replica` runs one replica;
//! - `pistou cluster up` runs all replicas of a configuration as supervised children;
//! - `pistou status` prints a table of every replica (up or down, committed count, lag, version)
//!   from their metrics;
//! - `pistou kv` runs key-value operations and transactions against a cluster;
//! - `pistou gateway` serves PostgreSQL clients in front of a cluster;
//! - `pistou sql` opens an interactive SQL shell on a gateway (any PostgreSQL-protocol server);
//! - `pistou demo` does all of the above on one machine with an interactive shell;
//! - `pistou workload` loads, runs and checks TPC-C, SEATS, YCSB and transfers against any endpoint.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad command line or arguments,
//! 3 a `kv txn` transaction aborted, 4 `status` found a shard with fewer replicas up than it
//! needs to commit.

/// mimalloc instead of glibc's allocator: the protocol allocates and frees many small
/// messages, rows and sets per transaction; glibc's malloc and free took ~14% of a loaded
/// SQL cluster's CPU, and mimalloc raised Fig. 8 throughput by 6–17% (docs/benchmarks.md).
/// Built without its transparent-huge-page requests (`no_thp`): a replica's freed memory
/// was purged and faulted back as 2 MiB pages, and zeroing them took ~20% of a replica's CPU
/// while loading rows (docs/benchmarks.md, "Replica memory while loading").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` that ignores a closed stdout (a pipe whose reader left) instead of
/// panicking: status output is never worth dying for.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// The same for stderr.
macro_rules! eout {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[cfg(feature = "fault-injection")]
mod byzantine;
mod cluster;
mod demo;
mod files;
mod gateway;
mod init;
mod kv;
mod replica;
mod signals;
mod sql_shell;
mod status;
mod usage;
mod workload;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use usage::Usage;

const EXIT_CODES: &str =
    "Exit codes: 0 success, 1 failure, 2 bad arguments, 3 transaction aborted (kv txn), 4 a shard short of replicas (status).";

#[derive(Parser)]
#[command(name = "pistou", version, about = "Pistou: a Byzantine-fault-tolerant transactional database", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create a cluster directory: cluster.toml and keys/ (one key per replica and client).
    Init(InitArgs),
    /// Run one replica in the foreground.
    Replica(ReplicaArgs),
    /// Table of every replica: up or down, shard, committed count, last commit age, lag,
    /// version (from their metrics). Exits with 4 when a shard has fewer than n - f replicas up.
    Status(StatusArgs),
    /// Read and write keys.
    Kv(KvArgs),
    /// Manage a whole local cluster.
    Cluster {
        #[command(subcommand)]
        cmd: ClusterCmd,
    },
    /// Start a local 1-shard cluster, a PostgreSQL gateway with sample data, and a SQL shell.
    Demo(DemoArgs),
    /// Interactive SQL shell for a gateway (or any PostgreSQL-protocol server).
    Sql(SqlArgs),
    /// Serve PostgreSQL clients (psql, JDBC, psycopg) in front of a cluster.
    Gateway(gateway::GatewayArgs),
    /// Load, run and check standard workloads (TPC-C, SEATS, YCSB, transfer) against a gateway or PostgreSQL.
    Workload {
        #[command(subcommand)]
        cmd: workload::WorkloadCmd,
    },
    /// TESTING ONLY: act as a Byzantine client (stall-early, stall-late, partial-st1,
    /// equivocate, forced-equivocate, future-timestamps, fabricated-deps).
    ByzantineClient(ByzantineArgs),
}

#[derive(Args)]
struct ByzantineArgs {
    #[command(flatten)]
    identity: files::ClientIdentity,
    /// What to do wrong.
    #[arg(long)]
    fault: String,
    /// Keys its transactions write (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    keys: Vec<String>,
    /// Faulty transactions to run.
    #[arg(long, default_value_t = 10)]
    txns: usize,
    /// Milliseconds between them.
    #[arg(long, default_value_t = 100)]
    gap_ms: u64,
}

#[derive(Args)]
struct InitArgs {
    /// Directory to create the cluster in.
    #[arg(long)]
    dir: PathBuf,
    /// Number of shards.
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// Byzantine replicas tolerated per shard (each shard gets 5f+1 replicas).
    #[arg(long, default_value_t = 1)]
    f: usize,
    /// Number of client identities (ids 1..=N).
    #[arg(long, default_value_t = 4)]
    clients: u64,
    /// First TCP port; replicas use consecutive ports on 127.0.0.1, then their metrics
    /// (one port each), then the gateway's metrics.
    #[arg(long, default_value_t = 7100)]
    base_port: u16,
    /// Turn signatures off (only to measure their cost).
    #[arg(long)]
    no_crypto: bool,
    /// Overwrite an existing configuration and its keys.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct ReplicaArgs {
    /// Path to cluster.toml.
    #[arg(long)]
    config: PathBuf,
    /// Replica id, e.g. s0r3 (shard 0, index 3).
    #[arg(long, conflicts_with_all = ["shard", "index"])]
    id: Option<String>,
    #[arg(long, requires = "index")]
    shard: Option<u32>,
    #[arg(long, requires = "shard")]
    index: Option<u32>,
    /// Secret key file (default: keys/replica-s{S}-r{I}.key next to the config).
    #[arg(long)]
    key: Option<PathBuf>,
    /// TESTING ONLY: run as a Byzantine replica (stale-reads, fabricate-reads, abort-all,
    /// refuse-vote, equivocate-st2r, lie-views, silent-leader, lying-leader, lie-range, forge-catch-up).
    #[arg(long)]
    fault: Option<String>,
    /// The replica's data directory (default: data/replica-s{S}-r{I} next to the config).
    #[arg(long, conflicts_with = "in_memory")]
    data_dir: Option<PathBuf>,
    /// Keep no state on disk: a restarted replica has forgotten everything it signed and
    /// counts against f. For tests and measurements.
    #[arg(long)]
    in_memory: bool,
}

#[derive(Args)]
struct StatusArgs {
    /// Path to cluster.toml (its `[metrics]` must be enabled).
    #[arg(long)]
    config: PathBuf,
}

#[derive(Args)]
struct KvArgs {
    #[command(flatten)]
    identity: files::ClientIdentity,
    /// Seconds to wait for any single operation.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
    #[command(subcommand)]
    op: KvOp,
}

#[derive(Subcommand)]
enum KvOp {
    /// Print the value of KEY.
    Get { key: String },
    /// Set KEY to VALUE.
    Put { key: String, value: String },
    /// Delete KEY.
    Delete { key: String },
    /// Run several operations in one transaction: 'get a; put b 2; get b'.
    Txn { script: String },
}

#[derive(Subcommand)]
enum ClusterCmd {
    /// Start every replica of DIR/cluster.toml; Ctrl-C or SIGTERM stops them all.
    Up {
        #[arg(long)]
        dir: PathBuf,
        /// Replicas keep no state on disk (`pistou replica --in-memory`): a restarted
        /// replica has forgotten everything. For tests and measurements.
        #[arg(long)]
        in_memory: bool,
        /// TESTING ONLY: run a replica as Byzantine, e.g. `--byzantine s0r2=abort-all`
        /// (repeatable; see `pistou replica --fault`).
        #[arg(long, value_name = "ID=FAULT")]
        byzantine: Vec<String>,
    },
}

#[derive(Args)]
struct SqlArgs {
    /// Connection URL, e.g. postgres://pistou@127.0.0.1:5433/pistou (or key=value pairs).
    #[arg(long, default_value = "postgres://pistou@127.0.0.1:5433/pistou")]
    url: String,
}

#[derive(Args)]
struct DemoArgs {
    /// Cluster directory (default: a fresh temporary one, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Only run the cluster and the gateway; no interactive shell.
    #[arg(long)]
    no_shell: bool,
    /// Port of the PostgreSQL gateway on 127.0.0.1.
    #[arg(long, default_value_t = 5433)]
    port: u16,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    init_logging(&cli.cmd);
    match run(cli.cmd) {
        Ok(code) => code,
        Err(e) => {
            eout!("error: {e:#}");
            if e.downcast_ref::<Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Servers log at info, interactive commands only warnings; RUST_LOG overrides.
fn init_logging(cmd: &Cmd) {
    let default = match cmd {
        Cmd::Replica(_) | Cmd::Cluster { .. } | Cmd::Gateway(_) => "info",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only on a terminal: `cluster up` sends replica logs to files.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

fn run(cmd: Cmd) -> Result<ExitCode> {
    match cmd {
        Cmd::Init(a) => {
            let spec = init::InitSpec {
                shards: a.shards,
                f: a.f,
                clients: a.clients,
                base_port: a.base_port,
                crypto: !a.no_crypto,
                force: a.force,
            };
            let config = init::init(&a.dir, &spec)?;
            let n = config.quorums().n();
            out!(
                "wrote {} ({} shard(s) x {n} replicas, f = {}, {} clients, crypto {})",
                files::config_path(&a.dir).display(),
                config.num_shards(),
                config.f,
                config.clients.len(),
                if config.crypto { "on" } else { "off" }
            );
            out!("start it with: pistou cluster up --dir {}", a.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Replica(a) => {
            let spec = replica::ReplicaSpec {
                config: a.config,
                id: a.id,
                shard: a.shard,
                index: a.index,
                key: a.key,
                fault: a.fault,
                data_dir: a.data_dir,
                in_memory: a.in_memory,
            };
            replica_runtime()?.block_on(replica::run(spec))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Status(a) => Ok(ExitCode::from(current_thread()?.block_on(status::run(&a.config))?)),
        Cmd::Kv(a) => current_thread()?.block_on(run_kv(a)),
        Cmd::Cluster { cmd: ClusterCmd::Up { dir, in_memory, byzantine } } => {
            let byzantine = parse_byzantine(&byzantine)?;
            current_thread()?.block_on(cluster_up(dir, in_memory, byzantine))?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(not(feature = "fault-injection"))]
        Cmd::ByzantineClient(_) => Err(usage::without_fault_injection("byzantine-client").into()),
        #[cfg(feature = "fault-injection")]
        Cmd::ByzantineClient(a) => {
            let spec = byzantine::ByzantineSpec {
                identity: a.identity,
                fault: a.fault,
                keys: a.keys,
                txns: a.txns,
                gap_ms: a.gap_ms,
            };
            let started = multi_thread()?.block_on(byzantine::run(spec))?;
            out!("started {started} faulty transactions");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sql(a) => {
            current_thread()?.block_on(sql_shell::run(&a.url))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Gateway(a) => {
            multi_thread()?.block_on(gateway::run(a))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Workload { cmd } => multi_thread()?.block_on(workload::run(cmd)),
        Cmd::Demo(a) => {
            current_thread()?.block_on(demo::run(demo::DemoSpec { dir: a.dir, no_shell: a.no_shell, port: a.port }))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn run_kv(a: KvArgs) -> Result<ExitCode> {
    let (ops, single) = match a.op {
        KvOp::Get { key } => (vec![kv::Op::Get(key)], true),
        KvOp::Put { key, value } => (vec![kv::Op::Put(key, value)], true),
        KvOp::Delete { key } => (vec![kv::Op::Delete(key)], true),
        KvOp::Txn { script } => (kv::parse_script(&script)?, false),
    };
    if a.timeout == 0 {
        return Err(Usage("--timeout must be at least 1 second".into()).into());
    }
    let client = kv::connect(&a.identity, Duration::from_secs(a.timeout)).await?;
    Ok(match kv::run(&client, ops, single).await? {
        kv::KvResult::Done => ExitCode::SUCCESS,
        kv::KvResult::Aborted => ExitCode::from(3),
    })
}

/// `s0r2=abort-all` pairs; the fault name is checked by the replica itself.
fn parse_byzantine(
    specs: &[String],
) -> Result<std::collections::BTreeMap<pistou_core::ReplicaId, String>, usage::Usage> {
    #[cfg(not(feature = "fault-injection"))]
    if !specs.is_empty() {
        return Err(usage::without_fault_injection("--byzantine"));
    }
    let mut out = std::collections::BTreeMap::new();
    for spec in specs {
        let Some((id, fault)) = spec.split_once('=') else {
            return Err(usage::Usage(format!("--byzantine takes ID=FAULT, got {spec:?}")));
        };
        #[cfg(feature = "fault-injection")]
        fault.parse::<pistou_adversary::ReplicaFault>().map_err(usage::Usage)?;
        out.insert(files::parse_replica_id(id)?, fault.to_string());
    }
    Ok(out)
}

async fn cluster_up(
    dir: PathBuf,
    in_memory: bool,
    byzantine: std::collections::BTreeMap<pistou_core::ReplicaId, String>,
) -> Result<()> {
    let config_path = files::config_path(&dir);
    let mut cluster = cluster::Cluster::start(&config_path, in_memory, &byzantine).await?;
    let result = async {
        cluster.wait_ready().await?;
        let pids: Vec<String> = cluster.pids().iter().map(|p| p.to_string()).collect();
        // One machine-readable line (tests and scripts wait for it), then a human one.
        out!(
            "pistou cluster ready replicas={} shards={} f={} pids={}",
            pids.len(),
            cluster.config.num_shards(),
            cluster.config.f,
            pids.join(",")
        );
        for (id, url) in cluster::metrics_urls(&cluster.config) {
            out!("replica {id} metrics: {url}");
        }
        out!("logs in {}; stop with Ctrl-C", cluster.log_dir.display());
        cluster
            .supervise(async {
                let sig = signals::stop_requested().await;
                eout!("{sig} received, stopping the cluster");
            })
            .await
    }
    .await;
    cluster.stop().await;
    out!("cluster stopped");
    result
}

/// Replicas are CPU-bound (signatures): use every core.
fn multi_thread() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// A replica's runtime: every core by default. `PISTOU_REPLICA_THREADS=N` (inherited by the
/// replicas of `cluster up`) sets the worker threads; 1 runs the protocol driver and every
/// connection on one thread, without a hand-off between threads per message, which suits
/// many replicas sharing few cores (the benchmarks run 6 on 2).
fn replica_runtime() -> Result<tokio::runtime::Runtime> {
    let Ok(v) = std::env::var("PISTOU_REPLICA_THREADS") else { return multi_thread() };
    match v.trim().parse::<usize>() {
        Ok(1) => current_thread(),
        Ok(n @ 2..=1024) => Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build()?),
        _ => Err(Usage(format!("PISTOU_REPLICA_THREADS must be a number of threads from 1 to 1024, got {v:?}")).into()),
    }
}

/// Supervisors and short-lived clients need one thread; `cluster up` and `demo` need
/// it to be the main thread (see `cluster`, on PR_SET_PDEATHSIG).
fn current_thread() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}
