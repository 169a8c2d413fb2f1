//! Issue 33's attack benchmark: correct clients' throughput beside each attack, against the
//! same workload alone, in one run on one cluster (`pistou cluster up`, crypto on) with a
//! `pistou gateway` in front.
//!
//! The correct workload runs from start to end without a pause: sessions of the gateway
//! committing point updates, each on rows of its own (so they never conflict). Phases follow
//! each other: alone, then each attack in turn (it runs for `ramp` seconds before its
//! window, and is stopped after it), then alone again to show drift. Between phases the
//! replicas get at least `settle` seconds, and longer while their logged rejection counters
//! still grow (what an attack left queued),
//! which the table reports by reason (from the replica logs: counted, not estimated).
//!
//! Attackers run on a runtime of their own, so that their hundreds of tasks never delay the
//! correct clients inside this process (they still share the machine's CPUs, reported).

use crate::attackers::{self, Ctx, PeerClaim, Tally};
use crate::cluster::{pistou_binary, Cluster};
use crate::procs;
use crate::ClusterArgs;
use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use pistou_core::{ClientId, ReplicaId};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Client identities of the cluster: the correct clients' gateway, the cross-join
/// attacker's gateway, the Byzantine client of the in-session signature flood, the probes.
const CORRECT_CLIENT: u64 = 1;
const JOIN_CLIENT: u64 = 2;
const BYZANTINE_CLIENT: u64 = 3;
const PROBE_CLIENT: u64 = 4;
/// Legal but long (a million pairs of `big`'s 1,000 rows, seconds per replica): the statement
/// of `crates/cli/tests/fair_sharing.rs`.
const CROSS_JOIN: &str = "SELECT count(*) FROM big a, big b WHERE a.v + b.v = -1";
/// Rows each correct session updates (its own, so sessions never conflict).
const ROWS_PER_SESSION: i32 = 10;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// Raw sockets to the gateway and to every replica that never send a byte.
    PreAuth,
    /// `HelloClient`, then an 8 MiB frame trickled, to every replica.
    BigFrame,
    /// A bare `HelloReplica` claiming to be another replica, then a flood of `Sync`.
    SpoofedPeer,
    /// A `PeerOpen` in another replica's name with a random signature, then `Sync`s.
    ForgedPeerOpen,
    /// Reads with random signatures on a connection without a session.
    BadSig,
    /// Reads with random signatures over a session of a client that holds a key.
    BadSigSession,
    /// A second gateway's session looping a legal cross join of 1,000 × 1,000 rows.
    CrossJoin,
}

#[derive(clap::Args, Clone, Debug)]
pub struct AttackArgs {
    /// Seconds measured in each phase.
    #[arg(long, default_value_t = 10)]
    window: u64,
    /// Seconds an attack runs before its window opens.
    #[arg(long, default_value_t = 2)]
    ramp: u64,
    /// Seconds between phases, at least 6 (replicas log their counters every 5 s); longer
    /// while the replicas still reject what the last attack left queued.
    #[arg(long, default_value_t = 6)]
    settle: u64,
    /// Correct gateway sessions, each committing point updates on rows of its own.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Attacks to run, in order, each in its own phase.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "pre-auth,big-frame,spoofed-peer,forged-peer-open,bad-sig,bad-sig-session,cross-join"
    )]
    attacks: Vec<Attack>,
    /// Pre-auth flood: silent sockets per target (the gateway and each replica).
    #[arg(long, default_value_t = 200)]
    sockets: usize,
    /// Hello-and-big-frame: sockets per replica.
    #[arg(long, default_value_t = 50)]
    big_frame_sockets: usize,
    /// Milliseconds between the 16 KiB pieces of a trickled big frame.
    #[arg(long, default_value_t = 20)]
    trickle_ms: u64,
    /// Flooding attacks (spoofed peers, bad signatures): connections per replica.
    #[arg(long, default_value_t = 4)]
    flood_connections: usize,
    /// Source addresses (127.0.0.2, 127.0.0.3, …) the attackers' sockets are spread over, as
    /// if from that many hosts: the gateway limits unauthenticated connections per source.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u8).range(1..=250))]
    sources: u8,
    /// Milliseconds an attacker waits before reconnecting when a connection ends.
    #[arg(long, default_value_t = 100)]
    reconnect_ms: u64,
    /// Port of the correct clients' gateway; the cross-join attacker's gateway takes the next.
    #[arg(long, default_value_t = 17090)]
    gateway_port: u16,
}

/// A `pistou gateway` process, killed when dropped (also when the benchmark fails).
struct Gateway {
    child: Child,
    addr: SocketAddr,
}

impl Gateway {
    fn start(bin: &Path, config: &Path, port: u16, client: u64) -> Result<Gateway> {
        let addr: SocketAddr = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new(bin)
            .arg("gateway")
            .arg("--config")
            .arg(config)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--client")
            .arg(client.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pistou gateway")?;
        // Owned by the guard at once, so that an error below still kills it.
        let mut gateway = Gateway { child, addr };
        let stdout = gateway.child.stdout.take().context("gateway stdout")?;
        let mut reader = std::io::BufReader::new(stdout);
        let mut first = String::new();
        reader.read_line(&mut first)?;
        if !first.contains("listening on") {
            bail!("pistou gateway on port {port} did not start (is the port free?): {first:?}");
        }
        // Keep reading its stdout so that it can never block writing to a full pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        Ok(gateway)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The correct clients' counters, shared by their sessions.
struct Correct {
    ok: AtomicU64,
    errors: AtomicU64,
    latency_us: Mutex<Histogram<u64>>,
}

impl Correct {
    fn snapshot(&self) -> (u64, u64) {
        (self.ok.load(Ordering::Relaxed), self.errors.load(Ordering::Relaxed))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn pg_connect(addr: SocketAddr, user: &str) -> Result<tokio_postgres::Client> {
    let conninfo = format!("host={} port={} user={user} dbname=pistou connect_timeout=5", addr.ip(), addr.port());
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// One correct session: point updates on its own rows until `stop`, reconnecting if the
/// gateway drops it (counted as an error).
async fn correct_session(addr: SocketAddr, session: i32, counts: Arc<Correct>, stop: CancellationToken) {
    let mut k = 0;
    while !stop.is_cancelled() {
        let db = match pg_connect(addr, "app").await {
            Ok(db) => db,
            Err(_) => {
                counts.errors.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let Ok(update) = db.prepare("UPDATE small SET v = v + 1 WHERE id = $1").await else {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        while !stop.is_cancelled() && !db.is_closed() {
            k = (k + 1) % ROWS_PER_SESSION;
            let id = session * ROWS_PER_SESSION + k;
            let began = Instant::now();
            match db.execute(&update, &[&id]).await {
                Ok(_) => {
                    counts.ok.fetch_add(1, Ordering::Relaxed);
                    let _ = lock(&counts.latency_us).record(began.elapsed().as_micros() as u64);
                }
                Err(_) => {
                    counts.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// New connections tried during a window, one per second to the gateway and one per second
/// to a replica (a session handshake with a client key), each given 2 s.
#[derive(Default)]
struct Probes {
    gateway: (u64, u64),
    replicas: (u64, u64),
}

async fn probe(
    gateway: SocketAddr,
    replicas: Vec<(ReplicaId, SocketAddr)>,
    key: pistou_crypto::SecretKey,
    until: Instant,
) -> Probes {
    let mut p = Probes::default();
    let limit = Duration::from_secs(2);
    let mut i = 0;
    while Instant::now() + limit < until {
        let next = tokio::time::Instant::now() + Duration::from_secs(1);
        let gw = tokio::time::timeout(limit, async {
            let db = pg_connect(gateway, "probe").await.ok()?;
            db.simple_query("SELECT 1").await.ok()
        });
        let (id, addr) = replicas[i % replicas.len()];
        i += 1;
        let replica = tokio::time::timeout(limit, async {
            let s = tokio::net::TcpStream::connect(addr).await.ok()?;
            attackers::open_session(s, ClientId(PROBE_CLIENT), &key, id).await
        });
        let (gw, replica) = tokio::join!(gw, replica);
        p.gateway.0 += matches!(gw, Ok(Some(_))) as u64;
        p.gateway.1 += 1;
        p.replicas.0 += matches!(replica, Ok(Some(_))) as u64;
        p.replicas.1 += 1;
        tokio::time::sleep_until(next).await;
    }
    p
}

/// CPU seconds used so far by the replicas, the gateways and this process.
fn cpu_now(cluster_pid: u32, gateways: &[u32]) -> [Option<f64>; 3] {
    let sum = |pids: &[u32]| pids.iter().map(|p| procs::cpu_seconds(*p)).sum::<Option<f64>>();
    [sum(&procs::children(cluster_pid)), sum(gateways), procs::cpu_seconds(std::process::id())]
}

/// What one phase measured.
struct Row {
    name: String,
    updates: u64,
    errors: u64,
    window: f64,
    p50_ms: f64,
    p99_ms: f64,
    probes: Probes,
    connects: u64,
    connect_failures: u64,
    closed: u64,
    frames: u64,
    statements: (u64, u64),
    mib: f64,
    held: f64,
    rejections: BTreeMap<String, u64>,
    cpu: [Option<f64>; 3],
    max_rss: Option<f64>,
    restarts: usize,
    load: Option<f64>,
}

struct Setup {
    gateway: SocketAddr,
    join_gateway: Option<SocketAddr>,
    replicas: Vec<(ReplicaId, SocketAddr)>,
    byzantine_key: pistou_crypto::SecretKey,
}

/// Starts `attack`'s tasks on the attackers' runtime.
fn launch(
    attack: Attack,
    a: &AttackArgs,
    s: &Setup,
    ctx: &Ctx,
    rt: &tokio::runtime::Handle,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    let mut n = 0usize;
    // Each socket gets the next source address of 127.0.0.2 ….
    let mut next_ctx = || {
        n += 1;
        Ctx { source: Ipv4Addr::new(127, 0, 0, 2 + (n % a.sources as usize) as u8), ..ctx.clone() }
    };
    let others = |id: ReplicaId, i: usize| {
        let n = s.replicas.len();
        s.replicas[(id.index as usize + 1 + i % (n - 1)) % n].0
    };
    match attack {
        Attack::PreAuth => {
            let targets = std::iter::once(s.gateway).chain(s.replicas.iter().map(|r| r.1));
            for target in targets {
                for _ in 0..a.sockets {
                    tasks.push(rt.spawn(attackers::silent(next_ctx(), target)));
                }
            }
        }
        Attack::BigFrame => {
            for &(_, addr) in &s.replicas {
                for _ in 0..a.big_frame_sockets {
                    let gap = Duration::from_millis(a.trickle_ms);
                    tasks.push(rt.spawn(attackers::hello_big_frame(next_ctx(), addr, gap)));
                }
            }
        }
        Attack::SpoofedPeer | Attack::ForgedPeerOpen => {
            let how = if attack == Attack::SpoofedPeer { PeerClaim::Hello } else { PeerClaim::ForgedOpen };
            for &(id, addr) in &s.replicas {
                for i in 0..a.flood_connections {
                    tasks.push(rt.spawn(attackers::spoofed_peer(next_ctx(), addr, id, others(id, i), how)));
                }
            }
        }
        Attack::BadSig => {
            for &(_, addr) in &s.replicas {
                for _ in 0..a.flood_connections {
                    let client = ClientId(BYZANTINE_CLIENT);
                    tasks.push(rt.spawn(attackers::bad_signatures_unauthenticated(next_ctx(), addr, client)));
                }
            }
        }
        Attack::BadSigSession => {
            for &(id, addr) in &s.replicas {
                for _ in 0..a.flood_connections {
                    let (client, key) = (ClientId(BYZANTINE_CLIENT), s.byzantine_key.clone());
                    tasks.push(rt.spawn(attackers::bad_signatures_in_session(next_ctx(), addr, id, client, key)));
                }
            }
        }
        Attack::CrossJoin => {
            if let Some(addr) = s.join_gateway {
                tasks.push(rt.spawn(cross_join(addr, ctx.clone())));
            }
        }
    }
    tasks
}

/// The cross-join attacker: one session of its own gateway looping the long statement.
async fn cross_join(addr: SocketAddr, ctx: Ctx) {
    while !ctx.stop.is_cancelled() {
        let Ok(db) = pg_connect(addr, "mallory").await else {
            Tally::add(&ctx.tally.connect_failures, 1);
            tokio::time::sleep(ctx.reconnect).await;
            continue;
        };
        Tally::add(&ctx.tally.connects, 1);
        while !ctx.stop.is_cancelled() && !db.is_closed() {
            let done = tokio::select! {
                _ = ctx.stop.cancelled() => return,
                r = db.query_one(CROSS_JOIN, &[]) => r,
            };
            match done {
                Ok(_) => Tally::add(&ctx.tally.statements, 1),
                Err(_) => Tally::add(&ctx.tally.statement_errors, 1),
            }
        }
    }
}

pub async fn run(a: AttackArgs, c: ClusterArgs, attack_rt: tokio::runtime::Handle) -> Result<()> {
    if c.no_crypto {
        bail!("the attack benchmark needs crypto on: without it there are no sessions to attack");
    }
    if a.clients == 0 || a.window == 0 {
        bail!("--clients and --window must be at least 1");
    }
    let spec = c.spec(PROBE_CLIENT as usize);
    let bin = pistou_binary(&spec)?;
    let cluster = Cluster::start(&spec, "attacks")?;
    let config_path = cluster.dir.join("cluster.toml");
    // Starting one blocks until it prints its first line.
    let start = |port, client| tokio::task::block_in_place(|| Gateway::start(&bin, &config_path, port, client));
    let gateway = start(a.gateway_port, CORRECT_CLIENT)?;
    let join_gateway =
        if a.attacks.contains(&Attack::CrossJoin) { Some(start(a.gateway_port + 1, JOIN_CLIENT)?) } else { None };
    let mut replicas = Vec::new();
    for id in cluster.config.all_replicas() {
        let addr: SocketAddr = cluster.config.replica(id).context("replica config")?.addr.parse()?;
        // Attack traffic stays on this machine's loopback network.
        if !addr.ip().is_loopback() {
            bail!("replica {id} listens on {addr}, not on 127.0.0.0/8");
        }
        replicas.push((id, addr));
    }
    let byzantine_key = cluster.client_key(BYZANTINE_CLIENT)?.context("client key")?;
    let probe_key = cluster.client_key(PROBE_CLIENT)?.context("client key")?;

    // Tables: `small` for the correct sessions, `big` for the cross join.
    let db = pg_connect(gateway.addr, "app").await.context("connecting to the gateway")?;
    db.batch_execute("CREATE TABLE small (id INT PRIMARY KEY, v INT NOT NULL)").await?;
    let rows: Vec<String> = (0..a.clients as i32 * ROWS_PER_SESSION).map(|i| format!("({i}, 0)")).collect();
    db.batch_execute(&format!("INSERT INTO small VALUES {}", rows.join(","))).await?;
    if join_gateway.is_some() {
        db.batch_execute("CREATE TABLE big (id INT PRIMARY KEY, v INT NOT NULL)").await?;
        let rows: Vec<String> = (0..1_000).map(|i| format!("({i}, {i})")).collect();
        db.batch_execute(&format!("INSERT INTO big VALUES {}", rows.join(","))).await?;
    }
    drop(db);

    let counts = Arc::new(Correct {
        ok: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        latency_us: Mutex::new(Histogram::new(3)?),
    });
    let stop_correct = CancellationToken::new();
    // Dropped (so cancelled) on every return, also by `?`.
    let _stop_guard = stop_correct.clone().drop_guard();
    for session in 0..a.clients as i32 {
        tokio::spawn(correct_session(gateway.addr, session, counts.clone(), stop_correct.clone()));
    }
    let setup =
        Setup { gateway: gateway.addr, join_gateway: join_gateway.as_ref().map(|g| g.addr), replicas, byzantine_key };
    let gateway_pids: Vec<u32> = std::iter::once(&gateway).chain(join_gateway.as_ref()).map(Gateway::pid).collect();
    let logs = cluster.dir.join("logs");
    eprintln!("cluster and gateway up ({}); {} correct sessions; warming up", cluster.dir.display(), a.clients);
    tokio::time::sleep(Duration::from_secs(a.settle)).await;

    let mut phases: Vec<Option<Attack>> = vec![None];
    phases.extend(a.attacks.iter().copied().map(Some));
    phases.push(None);
    let mut rows = Vec::new();
    let mut silent = Vec::new();
    let mut rejections = procs::replica_rejections(&logs);
    let mut restarts = 0;
    for phase in phases {
        let name = match phase.and_then(|p| clap::ValueEnum::to_possible_value(&p)) {
            Some(v) => v.get_name().to_string(),
            None => "alone".to_string(),
        };
        eprintln!("phase {name}");
        let tally = Arc::new(Tally::default());
        let stop = CancellationToken::new();
        let ctx = Ctx {
            tally: tally.clone(),
            stop: stop.clone(),
            reconnect: Duration::from_millis(a.reconnect_ms),
            source: Ipv4Addr::LOCALHOST,
        };
        let _stop_attack = stop.clone().drop_guard();
        let tasks = phase.map(|p| launch(p, &a, &setup, &ctx, &attack_rt)).unwrap_or_default();
        tokio::time::sleep(Duration::from_secs(a.ramp)).await;

        let started = Instant::now();
        let until = started + Duration::from_secs(a.window);
        let before = counts.snapshot();
        lock(&counts.latency_us).reset();
        let cpu_before = cpu_now(cluster.pid(), &gateway_pids);
        let probes = tokio::spawn(probe(setup.gateway, setup.replicas.clone(), probe_key.clone(), until));
        let mut max_rss: Option<f64> = None;
        while Instant::now() < until {
            let rss = procs::children(cluster.pid())
                .iter()
                .filter_map(|p| procs::rss_mib(*p))
                .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
            max_rss = match (max_rss, rss) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            tokio::time::sleep(Duration::from_millis(250).min(until.saturating_duration_since(Instant::now()))).await;
        }
        let after = counts.snapshot();
        let window = started.elapsed().as_secs_f64();
        let cpu_after = cpu_now(cluster.pid(), &gateway_pids);
        let latency = lock(&counts.latency_us).clone();
        let load = procs::load_average();
        stop.cancel();
        for t in tasks {
            // Attackers stop at once when cancelled; a stuck one is not waited for.
            let abort = t.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), t).await.is_err() {
                abort.abort();
            }
        }
        let probes = probes.await?;
        let now = settle(&logs, Duration::from_secs(a.settle)).await;
        let grown = procs::growth(&rejections, &now);
        rejections = now;
        // `cluster up` keeps a restarted replica's old log as `*.log.previous`.
        let previous = std::fs::read_dir(&logs)?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".previous"))
            .count();
        let g = |c: &AtomicU64| Tally::get(c);
        let row = Row {
            name,
            updates: after.0 - before.0,
            errors: after.1 - before.1,
            window,
            p50_ms: latency.value_at_quantile(0.5) as f64 / 1000.0,
            p99_ms: latency.value_at_quantile(0.99) as f64 / 1000.0,
            probes,
            connects: g(&tally.connects),
            connect_failures: g(&tally.connect_failures),
            closed: g(&tally.closed_by_server),
            frames: g(&tally.frames),
            statements: (g(&tally.statements), g(&tally.statement_errors)),
            mib: g(&tally.bytes) as f64 / (1 << 20) as f64,
            held: g(&tally.open_ms) as f64 / 1000.0 / (a.ramp as f64 + window),
            rejections: grown,
            cpu: [0, 1, 2].map(|i| Some(cpu_after[i]? - cpu_before[i]?)),
            max_rss,
            restarts: previous.saturating_sub(std::mem::replace(&mut restarts, previous)),
            load,
        };
        if phase.is_some() && row.connects == 0 && row.frames == 0 && row.statements == (0, 0) {
            silent.push(row.name.clone());
        }
        eprintln!(
            "  {} updates in {:.1} s; attack: {} connections, {} frames, {:.1} MiB",
            row.updates, row.window, row.connects, row.frames, row.mib
        );
        rows.push(row);
    }
    print_table(&a, &rows);
    if !silent.is_empty() {
        bail!("these attacks sent nothing, so their rows measure nothing: {}", silent.join(", "));
    }
    let _ = (gateway, join_gateway, cluster);
    Ok(())
}

/// Waits until the replicas have worked through what an attack left queued: their logged
/// rejection counters (logged every 5 s when they change) stay the same over `pause`
/// (at least 6 s), or a minute has passed. Returns the counters.
async fn settle(logs: &Path, pause: Duration) -> BTreeMap<String, u64> {
    let pause = pause.max(Duration::from_secs(6));
    let give_up = Instant::now() + Duration::from_secs(60);
    let mut last = procs::replica_rejections(logs);
    loop {
        tokio::time::sleep(pause).await;
        let now = procs::replica_rejections(logs);
        if now == last || Instant::now() > give_up {
            return now;
        }
        eprintln!("  replicas still rejecting what the attack left queued; waiting");
        last = now;
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.digits$}"))
}

fn print_table(a: &AttackArgs, rows: &[Row]) {
    let alone = rows.first().map_or(0.0, |r| r.updates as f64 / r.window);
    println!(
        "{} correct gateway sessions, {} s windows, attacks from {} source addresses; load average at the end of each window in the last column",
        a.clients, a.window, a.sources
    );
    println!();
    println!("| phase | correct updates/s | % of alone | p50 / p99 ms | errors | new connections ok: gateway, replicas | attack connections (closed by server, failed) | attack frames or statements | attack MiB sent | mean sockets open | replica rejections (from their logs) | CPU s: replicas / gateways / bench | max replica RSS MiB | load |");
    println!("|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|---|---:|---:|");
    for r in rows {
        let tps = r.updates as f64 / r.window;
        let rejections: Vec<String> = r.rejections.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let ops = if r.statements != (0, 0) {
            format!("{} statements ({} failed)", r.statements.0, r.statements.1)
        } else {
            r.frames.to_string()
        };
        let restarts = if r.restarts > 0 { format!(" **{} replica restarts**", r.restarts) } else { String::new() };
        println!(
            "| {} | {:.1} | {:.0}% | {:.1} / {:.1} | {} | {}/{}, {}/{} | {} ({}, {}) | {} | {:.1} | {:.0} | {}{} | {} / {} / {} | {} | {} |",
            r.name,
            tps,
            100.0 * tps / alone.max(1e-9),
            r.p50_ms,
            r.p99_ms,
            r.errors,
            r.probes.gateway.0,
            r.probes.gateway.1,
            r.probes.replicas.0,
            r.probes.replicas.1,
            r.connects,
            r.closed,
            r.connect_failures,
            ops,
            r.mib,
            r.held,
            if rejections.is_empty() { "—".to_string() } else { rejections.join(", ") },
            restarts,
            fmt_opt(r.cpu[0], 1),
            fmt_opt(r.cpu[1], 1),
            fmt_opt(r.cpu[2], 1),
            fmt_opt(r.max_rss, 0),
            fmt_opt(r.load, 1),
        );
    }
}
