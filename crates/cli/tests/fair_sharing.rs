//! Fair sharing of replica work (issue 33), on real processes: one client looping a legal
//! but long statement (a cross join of 1,000 rows, a million pairs) must not take the
//! replicas from other clients. A correct client's throughput is measured alone, beside the
//! attack, and beside two busy loops in Linux's SCHED_IDLE class, in the same run. The busy
//! loops are the floor of this machine: they take the CPU time nothing else wants, as the
//! replicas' long-statement threads do, and on a machine whose two CPUs share a core's
//! resources (or a host) they still slow everything else down. Beside the attack the correct
//! client must do about as well as beside them; before long statements left the replicas'
//! protocol thread, the attack cut its throughput by 90–97%.

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, NoTls};

const MEASURE: Duration = Duration::from_secs(8);
/// The attack's statement: legal (a million pairs, within the default work limit) and
/// long (seconds per replica).
const CROSS_JOIN: &str = "SELECT count(*) FROM big a, big b WHERE a.v + b.v = -1";

/// A gateway process, killed when dropped (also when the test fails).
struct Gateway(std::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A shell busy loop in the SCHED_IDLE class (`chrt --idle 0`), killed when dropped.
struct Spinner(std::process::Child);

impl Spinner {
    fn start() -> Spinner {
        let child = std::process::Command::new("chrt")
            .args(["--idle", "0", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("chrt (util-linux) runs a busy loop in the idle class");
        Spinner(child)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn connect(port: u16, user: &str) -> Client {
    let conninfo = format!("host=127.0.0.1 port={port} user={user} dbname=pistou connect_timeout=10");
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls).await.expect("connect to the gateway");
    tokio::spawn(connection);
    client
}

/// Point updates committed by one correct session during `MEASURE`.
async fn correct_throughput(db: &Client) -> u64 {
    let update = db.prepare("UPDATE small SET v = v + 1 WHERE id = $1").await.expect("prepare");
    let started = Instant::now();
    let mut done = 0u64;
    let mut id = 0i32;
    while started.elapsed() < MEASURE {
        id = (id + 1) % 10;
        if db.execute(&update, &[&id]).await.is_ok() {
            done += 1;
        }
    }
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_looping_a_long_join_leaves_others_most_of_their_throughput() {
    let run = async {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 2);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        // Each side has its own client identity, as two organizations would.
        let port = free_base_port(2);
        let gateways = [gateway(&config, port, &["--client", "1"]), gateway(&config, port + 1, &["--client", "2"])];
        let gateways = gateways.map(Gateway);
        let db = connect(port, "app").await;
        db.batch_execute("CREATE TABLE small (id INT PRIMARY KEY, v INT NOT NULL)").await.expect("create");
        db.batch_execute("CREATE TABLE big (id INT PRIMARY KEY, v INT NOT NULL)").await.expect("create");
        let small: Vec<String> = (0..10).map(|i| format!("({i}, 0)")).collect();
        db.batch_execute(&format!("INSERT INTO small VALUES {}", small.join(","))).await.expect("insert");
        let big: Vec<String> = (0..1_000).map(|i| format!("({i}, {i})")).collect();
        db.batch_execute(&format!("INSERT INTO big VALUES {}", big.join(","))).await.expect("insert");

        let alone = correct_throughput(&db).await;

        let stop = Arc::new(AtomicBool::new(false));
        let joins = Arc::new(AtomicU64::new(0));
        let attacker = {
            let (stop, joins) = (stop.clone(), joins.clone());
            let mallory = connect(port + 1, "mallory").await;
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match mallory.query_one(CROSS_JOIN, &[]).await {
                        Ok(row) => {
                            assert_eq!(row.get::<_, i64>(0), 0);
                            joins.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("the long join failed: {e:?}"),
                    }
                }
            })
        };
        // Let the attack reach the replicas before measuring beside it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let beside = correct_throughput(&db).await;
        stop.store(true, Ordering::Relaxed);
        let joins_done = joins.load(Ordering::Relaxed);
        attacker.abort();
        // The attacker's last join ends (or is cancelled) before the floor is measured.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let spinners: Vec<Spinner> = (0..2).map(|_| Spinner::start()).collect();
        let floor = correct_throughput(&db).await;
        drop(spinners);
        let percent = |n: u64| 100.0 * n as f64 / alone.max(1) as f64;
        eprintln!(
            "correct client: {alone} updates alone, {beside} beside the attack ({:.0}%), {floor} beside two idle-class busy loops ({:.0}%); the attacker finished {joins_done} joins",
            percent(beside),
            percent(floor)
        );
        drop((db, gateways));
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
        assert!(alone >= 20, "the correct client alone managed only {alone} updates in {MEASURE:?}");
        // Room for a noisy machine; the attack used to leave a tenth of what the busy loops leave.
        assert!(
            beside * 10 >= floor * 6,
            "beside the attack the correct client did {beside} updates, beside idle-class busy loops {floor}"
        );
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("the test took over 240 s");
}
