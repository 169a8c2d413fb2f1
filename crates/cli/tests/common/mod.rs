//! Helpers for process tests: run the built `pistou` binary, find free ports, run a
//! cluster with `pistou cluster up`, and a bank-transfer workload over the client library.

#![allow(dead_code)]

use pistou_client::{Client, ClientError, ClientOptions, Outcome, Txn};
use pistou_core::{ClientId, ClusterConfig};
use pistou_crypto::SecretKey;
use rand::Rng;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const PISTOU: &str = env!("CARGO_BIN_EXE_pistou");

/// Result of a finished command.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `pistou args…` to completion, killing it after `limit`.
pub fn pistou(args: &[&str], limit: Duration) -> Run {
    pistou_with_input(args, "", limit)
}

/// Like [`pistou`], with `input` on its stdin (then closed).
pub fn pistou_with_input(args: &[&str], input: &str, limit: Duration) -> Run {
    pistou_with(args, input, &[], limit)
}

/// Like [`pistou_with_input`], with extra environment variables.
pub fn pistou_with(args: &[&str], input: &str, env: &[(&str, &str)], limit: Duration) -> Run {
    let mut child = Command::new(PISTOU)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pistou");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        // A command that exits early closes its stdin; that is its business, not an error here.
        let _ = stdin.write_all(input.as_bytes());
    }
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pistou {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A base port with `count` free consecutive ports in 20000..32600, derived from the
/// process id (so parallel test binaries differ) and a counter (so tests in one binary do).
/// Staying below Linux's ephemeral range (32768+) keeps outgoing connections of other
/// tests from grabbing a port between this check and the replica's bind.
pub fn free_base_port(count: u16) -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let pid = std::process::id();
    for _ in 0..200 {
        let k = NEXT.fetch_add(1, Ordering::Relaxed) as u32;
        let base = 20000 + ((pid * 97 + k * 300) % 12500 / 50 * 50) as u16;
        if (base..base + count).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            return base;
        }
    }
    panic!("no free port range found");
}

pub fn init_cluster(dir: &Path, shards: usize, clients: u64) -> Arc<ClusterConfig> {
    // Replicas, their metrics, and the gateway's metrics (`pistou init --base-port`).
    let n = 6 * shards as u16;
    let base = free_base_port(2 * n + 1).to_string();
    let (s, c) = (shards.to_string(), clients.to_string());
    let d = dir.to_str().expect("utf-8 temp dir");
    let run = pistou(
        &["init", "--dir", d, "--shards", &s, "--f", "1", "--clients", &c, "--base-port", &base],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(0), "init failed: {}", run.stderr);
    let text = std::fs::read_to_string(dir.join("cluster.toml")).expect("config written");
    Arc::new(ClusterConfig::from_toml(&text).expect("valid config"))
}

/// `pistou cluster up` as a child of the test.
pub struct ClusterProc {
    child: Child,
    pub pids: Vec<u32>,
    /// `cluster up`'s stdout lines after the ready line.
    lines: std::sync::mpsc::Receiver<String>,
}

impl ClusterProc {
    pub fn up(dir: &Path) -> ClusterProc {
        Self::up_with(dir, &[])
    }

    /// `cluster up` with extra arguments (e.g. `--byzantine s0r2=abort-all`).
    pub fn up_with(dir: &Path, extra: &[&str]) -> ClusterProc {
        Self::up_with_env(dir, extra, &[])
    }

    /// `cluster up` with extra arguments and environment variables (its replicas inherit them).
    pub fn up_with_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> ClusterProc {
        let mut cmd = Command::new(PISTOU);
        cmd.args(["cluster", "up", "--dir"]).arg(dir).envs(env.iter().copied());
        cmd.args(extra);
        // Its stderr goes to a file, shown if startup fails, to keep test output readable.
        let stderr_path = dir.join("cluster-up.stderr");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr).spawn().expect("spawn cluster up");
        let stdout = child.stdout.take().expect("piped stdout");
        // Read lines on a thread so a silent child cannot hang the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining after the ready line so the child never sees a closed pipe.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("pistou cluster ready") => {
                    let pids = line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("pids="))
                        .expect("pids in ready line")
                        .split(',')
                        .map(|p| p.parse().expect("pid"))
                        .collect();
                    return ClusterProc { child, pids, lines: rx };
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                    panic!("cluster did not become ready; its stderr:\n{log}");
                }
            }
        }
    }

    /// Waits for a stdout line starting with `prefix` (bounded); returns it.
    pub fn wait_line(&self, prefix: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Records the new pid of replica `index` (configuration order) from its restart line,
    /// so that `stop` checks the live process.
    pub fn note_restart(&mut self, line: &str, index: usize) {
        let pid = line.split_whitespace().find_map(|w| w.strip_prefix("pid=")).expect("pid in restart line");
        self.pids[index] = pid.parse().expect("pid");
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }

    /// SIGTERM, wait (bounded), and check that no replica process is left.
    pub fn stop(mut self) -> ExitStatus {
        signal(self.child.id(), libc::SIGTERM);
        let status = self.wait(Duration::from_secs(20)).expect("cluster up did not stop within 20 s");
        for pid in &self.pids {
            assert!(!alive(*pid), "replica process {pid} survived the cluster");
        }
        status
    }

    pub fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for ClusterProc {
    fn drop(&mut self) {
        // On test failure: SIGKILL the supervisor; its children die with it (PDEATHSIG).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: u32, sig: i32) {
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn client_key(dir: &Path, id: u64) -> SecretKey {
    let text = std::fs::read_to_string(dir.join(format!("keys/client-{id}.key"))).expect("client key");
    SecretKey::from_hex(text.trim()).expect("hex key")
}

pub async fn connect(config: &Arc<ClusterConfig>, dir: &Path, id: u64) -> Client {
    let options = ClientOptions { op_timeout: Duration::from_secs(20), ..ClientOptions::default() };
    Client::connect_with(config.clone(), ClientId(id), Some(client_key(dir, id)), options).await.expect("connect")
}

pub const START_BALANCE: i64 = 100;

fn account(i: usize) -> String {
    format!("acct-{i}")
}

async fn balance(t: &mut Txn, i: usize) -> Result<i64, ClientError> {
    let v = t.get(account(i)).await?;
    Ok(match v {
        None => START_BALANCE,
        Some(v) => String::from_utf8(v).ok().and_then(|s| s.parse().ok()).expect("balances are decimal numbers"),
    })
}

/// Commit statistics of a workload.
#[derive(Default)]
pub struct Tally {
    pub fast: AtomicUsize,
    pub slow: AtomicUsize,
    pub aborts: AtomicUsize,
    /// Each acknowledged transfer's receipt key (written by the transfer itself).
    pub receipts: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    pub fn committed(&self) -> usize {
        self.fast.load(Ordering::Relaxed) + self.slow.load(Ordering::Relaxed)
    }
}

/// One transfer of a random amount between two distinct accounts, retried until it
/// commits.
pub async fn transfer(client: &Client, accounts: usize, tally: &Tally) {
    let (from, to, amount) = {
        let mut rng = rand::thread_rng();
        let from = rng.gen_range(0..accounts);
        let to = (from + rng.gen_range(1..accounts)) % accounts;
        (from, to, rng.gen_range(1..=10))
    };
    let receipt = format!("receipt-{:016x}", rand::random::<u64>());
    for _ in 0..200 {
        let mut t = client.begin().await.expect("begin");
        let a = balance(&mut t, from).await.expect("read");
        let b = balance(&mut t, to).await.expect("read");
        t.put(account(from), (a - amount).to_string()).expect("put");
        t.put(account(to), (b + amount).to_string()).expect("put");
        t.put(receipt.clone(), format!("{from}->{to}:{amount}")).expect("put");
        let outcome = t.commit().await.expect("commit");
        if let Outcome::Committed { .. } = outcome {
            tally.receipts.lock().expect("receipts").push(receipt.clone());
        }
        match outcome {
            Outcome::Committed { fast: true } => {
                tally.fast.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Outcome::Committed { fast: false } => {
                tally.slow.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Outcome::Aborted => {
                tally.aborts.fetch_add(1, Ordering::Relaxed);
                let wait = rand::thread_rng().gen_range(0..20);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
        }
    }
    panic!("transfer aborted 200 times");
}

/// `clients` concurrent clients (ids 1..=clients), `each` transfers apiece.
pub async fn run_transfers(
    config: &Arc<ClusterConfig>,
    dir: &Path,
    clients: u64,
    each: usize,
    accounts: usize,
    tally: &Arc<Tally>,
) {
    let mut tasks = Vec::new();
    for id in 1..=clients {
        let client = connect(config, dir, id).await;
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..each {
                transfer(&client, accounts, &tally).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("transfer task");
    }
}

/// The sum of all balances, read in one transaction.
pub async fn total(config: &Arc<ClusterConfig>, dir: &Path, client: u64, accounts: usize) -> i64 {
    let client = connect(config, dir, client).await;
    client
        .run_txn(|t| {
            Box::pin(async move {
                let mut sum = 0;
                for i in 0..accounts {
                    sum += balance(t, i).await?;
                }
                Ok(sum)
            })
        })
        .await
        .expect("read total")
}

/// Receipts of `tally` that a fresh transaction does not find (should be none).
pub async fn missing_receipts(config: &Arc<ClusterConfig>, dir: &Path, client: u64, tally: &Tally) -> Vec<String> {
    let receipts = tally.receipts.lock().expect("receipts").clone();
    let client = connect(config, dir, client).await;
    let mut missing = Vec::new();
    for chunk in receipts.chunks(50) {
        let chunk = chunk.to_vec();
        let absent = client
            .run_txn(|t| {
                let chunk = chunk.clone();
                Box::pin(async move {
                    let mut absent = Vec::new();
                    for key in chunk {
                        if t.get(key.clone()).await?.is_none() {
                            absent.push(key);
                        }
                    }
                    Ok(absent)
                })
            })
            .await
            .expect("read receipts");
        missing.extend(absent);
    }
    missing
}

pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("pistou-test-").tempdir().expect("temp dir")
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

pub fn buf(p: &Path) -> PathBuf {
    p.to_path_buf()
}

/// Starts `pistou gateway` and waits for its "listening" line.
pub fn gateway(config: &str, port: u16, extra: &[&str]) -> Child {
    let listen = format!("127.0.0.1:{port}");
    let mut args = vec!["gateway", "--config", config, "--listen", &listen];
    args.extend_from_slice(extra);
    let mut child =
        Command::new(PISTOU).args(&args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn gateway");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).expect("read the first line");
    assert_eq!(first.trim(), format!("pistou gateway listening on {listen}"));
    child
}

/// The line of a replica's log (in `dir/logs`) containing `needle`, waited for (bounded).
pub async fn wait_for_log(dir: &std::path::Path, file: &str, needle: &str) -> String {
    let path = dir.join("logs").join(file);
    for _ in 0..200 {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(needle)) {
            return line.to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never contained {needle:?}", path.display());
}
