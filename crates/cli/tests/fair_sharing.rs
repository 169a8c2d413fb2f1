//! Fair sharing of replica work (issue 33), on real processes: one client looping a legal
//! but long statement (a cross join of 1,000 rows, a million pairs) must not take the
//! replicas from other clients. A correct client's throughput is measured alone and beside
//! the attack, in the same run; before long statements left the replicas' protocol thread,
//! the attack cut it by 90–97%.

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
        let mut correct_gateway = gateway(&config, port, &["--client", "1"]);
        let mut attacker_gateway = gateway(&config, port + 1, &["--client", "2"]);
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
        eprintln!(
            "correct client: {alone} updates alone, {beside} beside the attack ({:.0}%); the attacker finished {joins_done} joins",
            100.0 * beside as f64 / alone.max(1) as f64
        );
        assert!(alone >= 20, "the correct client alone managed only {alone} updates in {MEASURE:?}");
        // The benchmark's target is 80% (docs/benchmarks.md); the test leaves room for a
        // loaded machine and still fails for the 3–10% this attack left before.
        assert!(beside * 2 >= alone, "beside the attack the correct client kept {beside} of {alone} updates");
        drop(db);
        for g in [&mut correct_gateway, &mut attacker_gateway] {
            let _ = g.kill();
            let _ = g.wait();
        }
        let status = tokio::task::spawn_blocking(move || cluster.stop()).await.expect("stop");
        assert!(status.success(), "cluster up exited with {status}");
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("the test took over 240 s");
}
