//! End to end in one process: real TCP replicas (pistou-node) on 127.0.0.1 port 0 and
//! the client library.

use pistou_client::{Client, ClientError, ClientOptions, Outcome};
use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId};
use pistou_crypto::SecretKey;
use pistou_node::{NodeOptions, ReplicaServer};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

struct Cluster {
    config: Arc<ClusterConfig>,
    client_keys: Vec<SecretKey>,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<pistou_node::ReplicaReport>>,
    /// Stops one replica (by position in `all_replicas` order).
    kills: Vec<Option<oneshot::Sender<()>>>,
    replica_keys: Vec<(ReplicaId, SecretKey)>,
}

/// Serves `id` on `listener` until the cluster-wide stop or its own kill signal.
fn serve(
    config: &Arc<ClusterConfig>,
    id: ReplicaId,
    key: SecretKey,
    listener: TcpListener,
    stop: &watch::Sender<bool>,
) -> (tokio::task::JoinHandle<pistou_node::ReplicaReport>, oneshot::Sender<()>) {
    let server = ReplicaServer::with_listener(listener, config.clone(), id, Some(key), NodeOptions::default()).unwrap();
    let mut rx = stop.subscribe();
    let (kill, killed) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        tokio::select! {
            _ = rx.wait_for(|s| *s) => {}
            _ = killed => {}
        }
    }));
    (task, kill)
}

async fn start(f: usize, shards: usize, crypto: bool) -> Cluster {
    let mut listeners = Vec::new();
    for _ in 0..shards * (5 * f + 1) {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let addrs = listeners.iter().map(|l| l.local_addr().unwrap());
    let built =
        ClusterBuilder::new(f).shards(shards).clients(4).crypto(crypto).replica_addrs(addrs).random_keys().build();
    let config = built.config.clone();
    let (stop, _) = watch::channel(false);
    let mut tasks = Vec::new();
    let mut kills = Vec::new();
    let mut replica_keys = Vec::new();
    for (id, l) in config.all_replicas().zip(listeners) {
        let key = built.replica_key(id);
        let (task, kill) = serve(&config, id, key.clone(), l, &stop);
        tasks.push(task);
        kills.push(Some(kill));
        replica_keys.push((id, key));
    }
    Cluster { config, client_keys: built.client_keys, stop, tasks, kills, replica_keys }
}

async fn transfer(client: &Client, from: usize, to: usize) -> Result<(), ClientError> {
    assert_ne!(from, to, "a transfer needs two accounts");
    client
        .run_txn(|t| {
            Box::pin(async move {
                let a = read_num(t, from).await?;
                let b = read_num(t, to).await?;
                t.put(format!("acct{from}"), (a - 1).to_string())?;
                t.put(format!("acct{to}"), (b + 1).to_string())?;
                Ok(())
            })
        })
        .await
}

async fn read_num(t: &mut pistou_client::Txn, i: usize) -> Result<i64, ClientError> {
    let v = t.get(format!("acct{i}")).await?;
    Ok(v.and_then(|v| String::from_utf8(v).ok()).and_then(|s| s.parse().ok()).unwrap_or(100))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transfers_conserve_total() {
    let run = async {
        let cluster = start(1, 2, true).await;
        let mut handles = Vec::new();
        for c in 0..3u64 {
            let client =
                Client::connect(cluster.config.clone(), ClientId(c + 1), Some(cluster.client_keys[c as usize].clone()))
                    .await
                    .unwrap();
            handles.push(tokio::spawn(async move {
                for k in 0..10usize {
                    let from = (k * 3 + c as usize) % 6;
                    let to = (from + 1 + k % 5) % 6;
                    transfer(&client, from, to).await.unwrap();
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        let client =
            Client::connect(cluster.config.clone(), ClientId(4), Some(cluster.client_keys[3].clone())).await.unwrap();
        let total = client
            .run_txn(|t| {
                Box::pin(async move {
                    let mut sum = 0;
                    for i in 0..6 {
                        sum += read_num(t, i).await?;
                    }
                    Ok(sum)
                })
            })
            .await
            .unwrap();
        assert_eq!(total, 600);
        let mut t = client.begin().await.unwrap();
        assert_eq!(t.get("nothing").await.unwrap(), None);
        t.put("x", "1").unwrap();
        assert_eq!(t.get("x").await.unwrap(), Some(b"1".to_vec()));
        assert!(matches!(t.commit().await.unwrap(), Outcome::Committed { .. }));
        let _ = cluster.stop.send(true);
        for t in cluster.tasks {
            let report = t.await.unwrap();
            assert!(report.stats.commits_applied > 0 || report.stats.reads > 0);
        }
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_runs_many_transactions_at_once() {
    let run = async {
        let cluster = start(1, 1, true).await;
        let client =
            Client::connect(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone())).await.unwrap();
        let mut handles = Vec::new();
        for w in 0..6usize {
            let client = client.clone();
            handles.push(tokio::spawn(async move {
                for k in 0..8usize {
                    let (from, to) = ((w + k) % 6, (w + 2 * k + 1) % 6);
                    if from != to {
                        transfer(&client, from, to).await.unwrap();
                    }
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        // Two open transactions of the same client see their own writes only. (b is
        // older: had it been younger, its read would rightly abort a's write.)
        let mut b = client.begin().await.unwrap();
        let mut a = client.begin().await.unwrap();
        a.put("shared", "from-a").unwrap();
        assert_eq!(b.get("shared").await.unwrap(), None);
        assert_eq!(a.get("shared").await.unwrap(), Some(b"from-a".to_vec()));
        assert!(a.commit().await.unwrap().is_committed());
        b.abort();
        let total = client
            .run_txn(|t| {
                Box::pin(async move {
                    let mut sum = 0;
                    for i in 0..6 {
                        sum += read_num(t, i).await?;
                    }
                    Ok(sum)
                })
            })
            .await
            .unwrap();
        assert_eq!(total, 600);
        let _ = cluster.stop.send(true);
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}

#[tokio::test]
async fn unreachable_cluster_gives_a_timeout_error() {
    let run = async {
        let cluster = start(1, 1, true).await;
        // Stop every replica, then talk to the now closed ports.
        let _ = cluster.stop.send(true);
        for t in cluster.tasks {
            t.await.unwrap();
        }
        let options = ClientOptions { op_timeout: Duration::from_millis(300), ..ClientOptions::default() };
        let client =
            Client::connect_with(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone()), options)
                .await
                .unwrap();
        let mut t = client.begin().await.unwrap();
        match t.get("k").await {
            Err(ClientError::Timeout { op: "get", .. }) => {}
            other => panic!("expected a get timeout, got {other:?}"),
        }
        assert!(client.counters().connect_failures() > 0);
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

#[tokio::test]
async fn wrong_key_or_unknown_client_is_a_config_error() {
    let cluster = start(1, 1, true).await;
    let wrong = SecretKey::generate();
    assert!(matches!(
        Client::connect(cluster.config.clone(), ClientId(1), Some(wrong)).await,
        Err(ClientError::Config(_))
    ));
    assert!(matches!(Client::connect(cluster.config.clone(), ClientId(77), None).await, Err(ClientError::Config(_))));
    assert!(matches!(Client::connect(cluster.config.clone(), ClientId(1), None).await, Err(ClientError::Config(_))));
    let client =
        Client::connect(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone())).await.unwrap();
    let mut t = client.begin().await.unwrap();
    let big = vec![0u8; pistou_wire::MAX_KEY_BYTES + 1];
    assert!(matches!(t.put(&big, "v"), Err(ClientError::Txn(_))));
    assert!(matches!(t.get(&big).await, Err(ClientError::Txn(_))));
    let _ = cluster.stop.send(true);
}

/// The replicas know client 1 by another key than the one it holds: every session
/// handshake is refused, which the client counts as a session failure, not a bad frame.
#[tokio::test]
async fn a_session_the_replicas_refuse_counts_as_a_session_failure() {
    let run = async {
        let cluster = start(1, 1, true).await;
        let impostor = SecretKey::generate();
        let mut config = (*cluster.config).clone();
        for c in config.clients.iter_mut().filter(|c| c.id == 1) {
            c.public_key = impostor.public();
        }
        let options = ClientOptions { op_timeout: Duration::from_millis(500), ..ClientOptions::default() };
        let client = Client::connect_with(config.into(), ClientId(1), Some(impostor), options).await.unwrap();
        let mut t = client.begin().await.unwrap();
        assert!(matches!(t.get("k").await, Err(ClientError::Timeout { op: "get", .. })));
        assert!(client.counters().session_failures() > 0);
        assert_eq!(client.counters().bad_frames(), 0);
        let _ = cluster.stop.send(true);
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// A replica goes away and comes back on the same address (with empty state, which
/// f = 1 tolerates): the client keeps committing throughout and reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reconnects_to_a_restarted_replica() {
    let run = async {
        let mut cluster = start(1, 1, true).await;
        let options = ClientOptions { max_backoff: Duration::from_millis(200), ..ClientOptions::default() };
        let client =
            Client::connect_with(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone()), options)
                .await
                .unwrap();
        for k in 0..5 {
            transfer(&client, k, k + 1).await.unwrap();
        }
        let connects = client.counters().connects();
        assert_eq!(connects, 6, "one connection per replica");
        let _ = cluster.kills[0].take().unwrap().send(());
        cluster.tasks.remove(0).await.unwrap();
        for k in 0..5 {
            transfer(&client, k + 1, k).await.unwrap();
        }
        let (id, key) = cluster.replica_keys[0].clone();
        let addr = cluster.config.replica(id).unwrap().addr.clone();
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(&addr).await {
                Ok(l) => break l,
                Err(e) if tries < 100 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot rebind {addr}: {e}"),
            }
        };
        let (task, _kill) = serve(&cluster.config, id, key, listener, &cluster.stop);
        let mut rounds = 0;
        while client.counters().connects() == connects {
            transfer(&client, rounds % 6, (rounds + 3) % 6).await.unwrap();
            rounds += 1;
            assert!(rounds < 200, "the client never reconnected");
        }
        transfer(&client, 0, 5).await.unwrap();
        let _ = cluster.stop.send(true);
        let report = task.await.unwrap();
        assert!(
            report.stats.reads + report.stats.votes_commit + report.stats.votes_abort > 0,
            "the restarted replica was used"
        );
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}

/// `shutdown` returns once every replica acknowledged the writebacks: a short-lived
/// process (`pistou kv put`) can exit right after it without leaving prepared state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_writebacks() {
    let run = async {
        let cluster = start(1, 1, true).await;
        let client =
            Client::connect(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone())).await.unwrap();
        let mut t = client.begin().await.unwrap();
        t.put("k", "v").unwrap();
        assert!(t.commit().await.unwrap().is_committed());
        let open = client.begin().await.unwrap(); // abandoned by the shutdown
        let started = std::time::Instant::now();
        client.shutdown().await;
        assert!(started.elapsed() < Duration::from_secs(1), "shutdown waited for an abandoned transaction");
        assert!(matches!(client.begin().await, Err(ClientError::Closed)));
        drop(open);
        let _ = cluster.stop.send(true);
        for t in cluster.tasks {
            assert_eq!(t.await.unwrap().stats.commits_applied, 1, "every replica applied the writeback");
        }
    };
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("test timed out");
}

/// One SQL transfer between accounts, retried on abort; statement errors are returned.
async fn sql_transfer(client: &Client, from: i64, to: i64) -> Result<(), ClientError> {
    use pistou_client::SqlValue;
    client
        .run_txn(|t| {
            Box::pin(async move {
                t.execute("UPDATE accounts SET balance = balance - 1 WHERE id = $1", &[SqlValue::Int(from)]).await?;
                t.execute("UPDATE accounts SET balance = balance + 1 WHERE id = $1", &[SqlValue::Int(to)]).await?;
                Ok(())
            })
        })
        .await
}

async fn sql_total(client: &Client) -> i64 {
    use pistou_client::{SqlOutput, SqlValue};
    client
        .run_txn(|t| {
            Box::pin(async move {
                match t
                    .query("SELECT sum(balance), count(*) FROM accounts WHERE balance >= $1", &[SqlValue::Int(-1_000)])
                    .await?
                {
                    SqlOutput::Rows { rows, .. } => match rows.as_slice() {
                        [row] => match (&row[0], &row[1]) {
                            (SqlValue::Int(sum), SqlValue::Int(6)) => Ok(*sum),
                            other => panic!("unexpected aggregate {other:?}"),
                        },
                        other => panic!("unexpected rows {other:?}"),
                    },
                    other => panic!("unexpected output {other:?}"),
                }
            })
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_transactions_over_tcp_conserve_total() {
    use pistou_client::{SqlOutput, SqlState, SqlValue};
    let run = async {
        let cluster = start(1, 1, true).await;
        let connect = |c: usize| {
            Client::connect(cluster.config.clone(), ClientId(c as u64 + 1), Some(cluster.client_keys[c].clone()))
        };
        let admin = connect(3).await.unwrap();
        let mut t = admin.begin().await.unwrap();
        t.execute("CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance INT NOT NULL)", &[])
            .await
            .unwrap();
        assert!(t.commit().await.unwrap().is_committed());
        let mut t = admin.begin().await.unwrap();
        let n = t
            .execute("INSERT INTO accounts VALUES (0, 'a', 100), (1, 'b', 100), (2, 'c', 100), (3, 'd', 100), (4, 'e', 100), (5, 'f', 100)", &[])
            .await
            .unwrap();
        assert_eq!(n, 6);
        assert!(t.commit().await.unwrap().is_committed());
        let mut handles = Vec::new();
        for c in 0..3usize {
            let client = connect(c).await.unwrap();
            handles.push(tokio::spawn(async move {
                for k in 0..8i64 {
                    let from = (k * 3 + c as i64) % 6;
                    let to = (from + 1 + k % 5) % 6;
                    sql_transfer(&client, from, to).await.unwrap();
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(sql_total(&admin).await, 600);
        // A failing statement reports its SQLSTATE; the transaction is then rolled back.
        let mut t = admin.begin().await.unwrap();
        match t.query("INSERT INTO accounts VALUES (1, 'dup', 0)", &[]).await {
            Err(ClientError::Sql(e)) => assert_eq!(e.state, SqlState::UniqueViolation),
            other => panic!("expected a unique violation, got {other:?}"),
        }
        t.rollback();
        // Read-your-writes through the library.
        let mut t = admin.begin().await.unwrap();
        t.execute("UPDATE accounts SET owner = 'zed' WHERE id = 5", &[]).await.unwrap();
        match t.query("SELECT owner FROM accounts WHERE id = $1", &[SqlValue::Int(5)]).await.unwrap() {
            SqlOutput::Rows { rows, columns, .. } => {
                assert_eq!(columns, vec!["owner".to_string()]);
                assert_eq!(rows, vec![vec![SqlValue::Text("zed".into())]]);
            }
            other => panic!("{other:?}"),
        }
        t.rollback();
        cluster.stop.send(true).unwrap();
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}

/// Savepoints: key-value writes since a savepoint are undone, a failed SQL statement can be
/// rolled back to a savepoint and the transaction commits, names repeat and RELEASE drops
/// later savepoints; SQL rows written since a savepoint are taken back by ROLLBACK TO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_undo_writes_and_recover_from_errors() {
    use pistou_client::{SqlOutput, SqlState, SqlValue};
    fn state(r: Result<(), ClientError>) -> SqlState {
        match r {
            Err(ClientError::Sql(e)) => e.state,
            other => panic!("expected a SQL error, got {other:?}"),
        }
    }
    let run = async {
        let cluster = start(1, 1, true).await;
        let client =
            Client::connect(cluster.config.clone(), ClientId(1), Some(cluster.client_keys[0].clone())).await.unwrap();
        let mut t = client.begin().await.unwrap();
        t.execute("CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)", &[]).await.unwrap();
        assert!(t.commit().await.unwrap().is_committed());

        let mut t = client.begin().await.unwrap();
        t.put("kept", "1").unwrap();
        t.savepoint("a").await.unwrap();
        t.put("kept", "2").unwrap();
        t.put("undone", "x").unwrap();
        t.savepoint("a").await.unwrap(); // the same name again: the latest wins
        t.put("kept", "3").unwrap();
        t.rollback_to_savepoint("a").await.unwrap();
        assert_eq!(t.get("kept").await.unwrap(), Some(b"2".to_vec()));
        t.release_savepoint("a").await.unwrap(); // releases the second "a" only
        t.rollback_to_savepoint("a").await.unwrap();
        assert_eq!(t.get("kept").await.unwrap(), Some(b"1".to_vec()));
        assert_eq!(t.get("undone").await.unwrap(), None);
        t.rollback_to_savepoint("a").await.unwrap(); // ROLLBACK TO keeps the savepoint
        t.savepoint("b").await.unwrap();
        t.release_savepoint("a").await.unwrap(); // and every later one
        assert_eq!(state(t.rollback_to_savepoint("b").await), SqlState::InvalidSavepointSpecification);
        assert_eq!(state(t.release_savepoint("nosuch").await), SqlState::InvalidSavepointSpecification);

        // A failed statement wrote nothing: rolling back to a savepoint recovers.
        t.execute("INSERT INTO notes VALUES (1, 'one')", &[]).await.unwrap();
        t.savepoint("s").await.unwrap();
        match t.query("INSERT INTO notes VALUES (1, 'dup')", &[]).await {
            Err(ClientError::Sql(e)) => assert_eq!(e.state, SqlState::UniqueViolation),
            other => panic!("expected a unique violation, got {other:?}"),
        }
        t.query("SELECT * FROM notes", &[]).await.unwrap(); // a read only: still recoverable
        t.execute("UPDATE notes SET body = 'x' WHERE id = 99", &[]).await.unwrap(); // no row
        t.rollback_to_savepoint("s").await.unwrap();
        // Rows written since the savepoint are taken back, and the transaction goes on.
        t.execute("INSERT INTO notes VALUES (2, 'two')", &[]).await.unwrap();
        t.execute("UPDATE notes SET body = 'changed' WHERE id = 1", &[]).await.unwrap();
        t.rollback_to_savepoint("s").await.unwrap();
        match t.query("SELECT id, body FROM notes ORDER BY id", &[]).await.unwrap() {
            SqlOutput::Rows { rows, .. } => {
                assert_eq!(rows, vec![vec![SqlValue::Int(1), SqlValue::Text("one".into())]])
            }
            other => panic!("{other:?}"),
        }
        t.execute("INSERT INTO notes VALUES (2, 'two')", &[]).await.unwrap();
        assert!(t.commit().await.unwrap().is_committed());

        let mut t = client.begin().await.unwrap();
        let kv = (t.get("kept").await.unwrap(), t.get("undone").await.unwrap());
        assert_eq!(kv, (Some(b"1".to_vec()), None));
        match t.query("SELECT id, body FROM notes ORDER BY id", &[]).await.unwrap() {
            SqlOutput::Rows { rows, .. } => assert_eq!(
                rows,
                vec![
                    vec![SqlValue::Int(1), SqlValue::Text("one".into())],
                    vec![SqlValue::Int(2), SqlValue::Text("two".into())]
                ]
            ),
            other => panic!("{other:?}"),
        }
        t.rollback();
        cluster.stop.send(true).unwrap();
    };
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out");
}
