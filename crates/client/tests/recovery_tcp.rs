//! Basil §5 over real TCP: a Byzantine client (the simulator's `ByzClient`) equivocates
//! its ST2 and stalls; an honest client that depends on its transaction must finish it
//! through the fallback protocol, whose ELECTFB/DECFB travel between replicas over the
//! node's replica-to-replica links.

use pistou_adversary::{ByzClient, ClientFault};
use pistou_client::{Client, ClientOptions};
use pistou_core::{ClientId, ClusterBuilder, ClusterConfig};
use pistou_crypto::SecretKey;
use pistou_node::{NodeOptions, ReplicaReport, ReplicaServer};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

async fn cluster(
) -> (Arc<ClusterConfig>, Vec<SecretKey>, watch::Sender<bool>, Vec<tokio::task::JoinHandle<ReplicaReport>>) {
    let mut listeners = Vec::new();
    for _ in 0..6 {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let addrs = listeners.iter().map(|l| l.local_addr().unwrap());
    let cluster = ClusterBuilder::new(1).clients(2).replica_addrs(addrs).random_keys().build();
    let config = cluster.config.clone();
    let (stop, _) = watch::channel(false);
    let mut tasks = Vec::new();
    for (id, l) in config.all_replicas().zip(listeners) {
        let key = cluster.replica_key(id);
        let server = ReplicaServer::with_listener(l, config.clone(), id, Some(key), NodeOptions::default()).unwrap();
        let mut rx = stop.subscribe();
        tasks.push(tokio::spawn(server.run(async move {
            let _ = rx.wait_for(|s| *s).await;
        })));
    }
    (config, cluster.client_keys, stop, tasks)
}

/// Drives the Byzantine client (its own sessions, one connection per replica) until `until`
/// passes.
async fn run_byzantine(config: Arc<ClusterConfig>, key: SecretKey, until: Duration) {
    let id = ClientId(2);
    let pick: pistou_adversary::KeyPicker = Box::new(|_| b"acct0".to_vec());
    let byz = ByzClient::new(0, id, key, ClientFault::ForcedEquivocate, config.clone(), pick, 1, 1_000_000);
    let until = std::time::Instant::now() + until;
    pistou_adversary::net::drive(config, id, byz, until, 7).await.expect("the Byzantine client connects");
}

/// The honest client reads what the equivocating client wrote, so its transaction depends on
/// a transaction whose S_log holds divergent decisions. Its first attempts abort (the f+1
/// replicas that never prepared the dependency vote abort while the others wait for it);
/// each abort makes it finish the dependency, through the fallback, over real sockets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_finishes_an_equivocated_transaction() {
    let run = async {
        let (config, client_keys, stop, tasks) = cluster().await;
        let byz_key = SecretKey::from_hex(&client_keys[1].to_hex()).unwrap();
        run_byzantine(config.clone(), byz_key, Duration::from_millis(500)).await;
        let options = ClientOptions { op_timeout: Duration::from_secs(20), ..ClientOptions::default() };
        let honest_key = SecretKey::from_hex(&client_keys[0].to_hex()).unwrap();
        let honest = Client::connect_with(config.clone(), ClientId(1), Some(honest_key), options).await.unwrap();
        // The Byzantine transaction wrote acct0; reading it makes it a dependency.
        let result = honest
            .run_txn(|t| {
                Box::pin(async move {
                    let v = t.get("acct0").await?;
                    t.put("acct0", v.unwrap_or_default())?;
                    Ok(())
                })
            })
            .await;
        let _ = stop.send(true);
        let mut adoptions = 0;
        for t in tasks {
            let r = t.await.unwrap();
            eprintln!("{:?} {:?}", r.stats, r.rejections);
            adoptions += r.stats.fallback_adoptions;
        }
        result.unwrap();
        assert!(adoptions > 0, "no replica adopted a fallback decision (DECFB never arrived)");
    };
    tokio::time::timeout(Duration::from_secs(90), run).await.expect("test timed out");
}
