//! Durable replicas seen through the PostgreSQL gateway: a bank-transfer workload in SQL
//! (`pistou gateway` in front of `pistou cluster up`, driven by tokio-postgres) while a
//! replica is stopped, killed with SIGKILL and restarted by `cluster up`.

mod common;

use common::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::{error::SqlState, Client, NoTls};

const ACCOUNTS: i64 = 10;
const START_BALANCE: i64 = 1_000;
const WORKERS: usize = 3;

/// What the workers learnt: receipts of acknowledged transfers (COMMIT answered OK), and
/// how many transfers ended without an answer (they may or may not have committed).
#[derive(Default)]
struct Bank {
    acknowledged: Mutex<Vec<String>>,
    ambiguous: AtomicUsize,
    retries: AtomicUsize,
}

impl Bank {
    fn acknowledged(&self) -> usize {
        self.acknowledged.lock().expect("receipts").len()
    }
}

async fn connect(port: u16) -> Client {
    let conninfo = format!("host=127.0.0.1 port={port} user=bank dbname=pistou connect_timeout=10");
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls).await.expect("connect to the gateway");
    tokio::spawn(connection);
    client
}

/// A one-shard cluster (`cluster up`, durable) with `pistou gateway` in front, the bank's
/// tables, and `WORKERS` clients transferring until `finish`.
struct Setup {
    dir: tempfile::TempDir,
    cluster: ClusterProc,
    gateway: std::process::Child,
    port: u16,
    bank: Arc<Bank>,
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Setup {
    async fn start() -> Setup {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 2);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let port = free_base_port(1);
        let gateway = gateway(&config, port, &[]);
        let db = connect(port).await;
        db.batch_execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)").await.expect("create");
        db.batch_execute("CREATE TABLE receipts (id TEXT PRIMARY KEY, amount BIGINT NOT NULL)").await.expect("create");
        let rows: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {START_BALANCE})")).collect();
        db.batch_execute(&format!("INSERT INTO accounts VALUES {}", rows.join(", "))).await.expect("insert");
        let (bank, stop) = (Arc::new(Bank::default()), Arc::new(AtomicBool::new(false)));
        let workers = (0..WORKERS).map(|i| tokio::spawn(worker(port, i, bank.clone(), stop.clone()))).collect();
        Setup { dir, cluster, gateway, port, bank, stop, workers }
    }

    /// Stops the workload, then checks: total conserved, every acknowledged receipt stored,
    /// no receipt without an acknowledged or ambiguous transfer; then a clean stop.
    async fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in std::mem::take(&mut self.workers) {
            w.await.expect("worker");
        }
        let bank = &self.bank;
        let db = connect(self.port).await;
        let total: i64 =
            db.query_one("SELECT CAST(sum(balance) AS BIGINT) FROM accounts", &[]).await.expect("sum").get(0);
        assert_eq!(total, START_BALANCE * ACCOUNTS, "money was created or lost");
        let stored: BTreeSet<String> =
            db.query("SELECT id FROM receipts", &[]).await.expect("receipts").iter().map(|r| r.get(0)).collect();
        let acknowledged = bank.acknowledged.lock().expect("receipts").clone();
        let lost: Vec<&String> = acknowledged.iter().filter(|r| !stored.contains(*r)).collect();
        assert!(lost.is_empty(), "acknowledged transfers lost: {lost:?}");
        let ambiguous = bank.ambiguous.load(Ordering::Relaxed);
        assert!(
            stored.len() <= acknowledged.len() + ambiguous,
            "{} receipts stored, {} acknowledged, {ambiguous} ambiguous",
            stored.len(),
            acknowledged.len()
        );
        eprintln!(
            "{} acknowledged, {ambiguous} ambiguous, {} retries",
            acknowledged.len(),
            bank.retries.load(Ordering::Relaxed)
        );
        drop(db);
        let _ = self.gateway.kill();
        let _ = self.gateway.wait();
        assert!(self.cluster.is_running(), "dead replicas must not stop the cluster");
        let status = tokio::task::spawn_blocking(move || self.cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    }
}

/// One transfer as a single simple-query transaction with a receipt row. `Ok(true)`:
/// acknowledged; `Ok(false)`: serialization failure, rolled back.
async fn transfer(db: &Client, from: i64, to: i64, amount: i64, receipt: &str) -> Result<bool, tokio_postgres::Error> {
    let sql = format!(
        "BEGIN; \
         UPDATE accounts SET balance = balance - {amount} WHERE id = {from}; \
         UPDATE accounts SET balance = balance + {amount} WHERE id = {to}; \
         INSERT INTO receipts VALUES ('{receipt}', {amount}); \
         COMMIT"
    );
    match db.batch_execute(&sql).await {
        Ok(()) => Ok(true),
        Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
            // The failed statement left the block aborted; end it.
            db.batch_execute("ROLLBACK").await?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Transfers until `stop`, retrying serialization failures. A transfer that ends with any
/// other error is counted as ambiguous and the worker reconnects.
async fn worker(port: u16, index: usize, bank: Arc<Bank>, stop: Arc<AtomicBool>) {
    let mut db = connect(port).await;
    let mut state = 0x9e37_79b9_u64.wrapping_mul(index as u64 + 1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let from = (next() % ACCOUNTS as u64) as i64;
        let to = (from + 1 + (next() % (ACCOUNTS as u64 - 1)) as i64) % ACCOUNTS;
        let amount = 1 + (next() % 20) as i64;
        let receipt = format!("w{index}-{n}");
        n += 1;
        loop {
            match transfer(&db, from, to, amount, &receipt).await {
                Ok(true) => {
                    bank.acknowledged.lock().expect("receipts").push(receipt);
                    break;
                }
                Ok(false) => {
                    bank.retries.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    eprintln!("transfer {receipt}: {e}");
                    bank.ambiguous.fetch_add(1, Ordering::Relaxed);
                    db = connect(port).await;
                    break;
                }
            }
        }
    }
}

async fn wait_for_acknowledged(bank: &Bank, count: usize) {
    for _ in 0..2_400 {
        if bank.acknowledged() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("only {} of {count} transfers acknowledged within 120 s", bank.acknowledged());
}

/// Kill -9 of one replica during a transfer workload through the gateway: `cluster up`
/// restarts it from its data directory, it catches up on what it missed, no acknowledged
/// commit is lost, the total is conserved, and it serves again as a full member: with a
/// second replica stopped afterwards, every commit needs it (n − f = 5 of the 5 running
/// replicas log each slow-path decision).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_sql_transfers_rejoins_and_nothing_is_lost() {
    let run = async {
        let mut setup = Setup::start().await;
        wait_for_acknowledged(&setup.bank, 30).await;
        // Stopped for hundreds of transfers, then killed while the workload runs.
        let victim = setup.cluster.pids[2];
        signal(victim, libc::SIGSTOP);
        let before = setup.bank.acknowledged();
        wait_for_acknowledged(&setup.bank, before + 300).await;
        signal(victim, libc::SIGKILL);
        let line = tokio::task::block_in_place(|| {
            setup.cluster.wait_line("pistou replica restarted id=s0r2", Duration::from_secs(30))
        });
        setup.cluster.note_restart(&line.expect("cluster up restarts the killed replica"), 2);
        let caught_up = wait_for_log(setup.dir.path(), "replica-s0-r2.log", "caught up").await;
        assert!(!caught_up.contains("commits=0 "), "the restarted replica learnt nothing: {caught_up}");
        eprintln!("{caught_up}");
        let rejoined = setup.bank.acknowledged();
        wait_for_acknowledged(&setup.bank, rejoined + 50).await;
        // One more replica stopped: the five left, the restarted one among them, must all
        // log every decision.
        signal(setup.cluster.pids[4], libc::SIGSTOP);
        let needed = setup.bank.acknowledged();
        wait_for_acknowledged(&setup.bank, needed + 30).await;
        signal(setup.cluster.pids[4], libc::SIGCONT);

        setup.finish().await;
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}

/// Every replica killed at once under SQL transfers, `cluster up` restarts them: every
/// acknowledged transfer is there, the total is conserved, the gateway keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_killed_under_sql_transfers_loses_no_acknowledged_commit() {
    let run = async {
        let mut setup = Setup::start().await;
        wait_for_acknowledged(&setup.bank, 60).await;
        for pid in setup.cluster.pids.clone() {
            signal(pid, libc::SIGKILL);
        }
        for _ in 0..setup.cluster.pids.len() {
            let line = tokio::task::block_in_place(|| {
                setup.cluster.wait_line("pistou replica restarted", Duration::from_secs(30))
            });
            let line = line.expect("restart");
            let id = line.split_whitespace().find_map(|w| w.strip_prefix("id=s0r")).expect("id");
            setup.cluster.note_restart(&line, id.parse().expect("index"));
        }
        let restarted = setup.bank.acknowledged();
        wait_for_acknowledged(&setup.bank, restarted + 30).await;
        setup.finish().await;
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("test timed out");
}
