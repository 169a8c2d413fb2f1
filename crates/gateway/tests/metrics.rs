//! Prometheus metrics scraped over HTTP from a running cluster (six replicas over TCP on
//! 127.0.0.1 and a gateway): the commit counters move as transactions commit through the
//! gateway, and a replica's rejection counters move as a Byzantine client's messages are
//! rejected. Nothing the clients wrote appears in the metrics.

mod support;

use pistou_client::{Client, ClientOptions};
use pistou_core::{ClientId, ClusterBuilder, ReplicaId, ShardId, Timestamp};
use pistou_crypto::{Ephemeral, SecretKey, SessionKey};
use pistou_gateway::{serve, GatewayConfig, GatewayMetrics};
use pistou_node::{now_us, NodeOptions, ReplicaServer};
use pistou_wire::{decode_message, encode_message, ClientSigned, Message, ReadRequest, SessionOpen, Signable};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{bounded, connect};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The value of one series (`name{labels}` exactly as exposed), 0 when absent.
fn value(text: &str, series: &str) -> f64 {
    pistou_metrics::parse(text).into_iter().find(|(s, _)| s == series).map_or(0.0, |(_, v)| v)
}

/// The sum of every series of metric `name` (all label sets).
fn sum(text: &str, name: &str) -> f64 {
    pistou_metrics::parse(text)
        .into_iter()
        .filter(|(s, _)| s == name || s.starts_with(&format!("{name}{{")))
        .map(|(_, v)| v)
        .sum()
}

async fn scrape(addr: SocketAddr) -> String {
    pistou_metrics::scrape(addr).await.expect("scrape /metrics")
}

/// Scrapes `addr` until `ok` holds for the text (the replica publishes each tick), or
/// panics after 20 s with the last text.
async fn scrape_until(addr: SocketAddr, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape(addr).await;
        if ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what} never held; last scrape of {addr}:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

async fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut len)).await.ok()?.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// A session with replica `to` opened honestly by `client` (whose key is `key`).
async fn open_session(addr: SocketAddr, client: ClientId, to: ReplicaId, key: &SecretKey) -> (TcpStream, SessionKey) {
    let mine = Ephemeral::from_seed([9; 32]);
    let open = SessionOpen::signed(client, to, key, mine.public());
    let mut bytes = frame(&encode_message(&Message::HelloClient { client }));
    bytes.extend(frame(&encode_message(&Message::SessionOpen(open.clone()))));
    let mut s = TcpStream::connect(addr).await.expect("connect to the replica");
    s.write_all(&bytes).await.expect("send the session opening");
    let body = read_frame(&mut s).await.expect("the replica's session answer");
    let Ok(Message::SessionAccept { eph }) = decode_message(&body) else { panic!("session refused") };
    let key = mine.agree(&eph, &open.body.transcript(client, &eph)).expect("session key");
    (s, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_move_with_commits_and_with_a_byzantine_clients_rejected_messages() {
    bounded(120, async {
        // Six replicas with metrics on ephemeral loopback ports.
        let mut listeners = Vec::new();
        for _ in 0..6 {
            listeners.push(TcpListener::bind("127.0.0.1:0").await.expect("bind replica"));
        }
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().expect("addr")).collect();
        let built = ClusterBuilder::new(1).clients(2).replica_addrs(addrs.clone()).random_keys().build();
        let cluster = built.config.clone();
        let (stop_cluster, _) = tokio::sync::watch::channel(false);
        let mut metrics_addrs = Vec::new();
        for (id, l) in cluster.all_replicas().zip(listeners) {
            let options = NodeOptions {
                metrics_addr: Some("127.0.0.1:0".parse().expect("addr")),
                stats_interval: Duration::from_millis(100),
                ..NodeOptions::default()
            };
            let server = ReplicaServer::with_listener(l, cluster.clone(), id, Some(built.replica_key(id)), options)
                .expect("replica");
            let at = server.metrics_addr().expect("metrics are served");
            assert!(at.ip().is_loopback());
            metrics_addrs.push(at);
            let mut rx = stop_cluster.subscribe();
            tokio::spawn(server.run(async move {
                let _ = rx.wait_for(|s| *s).await;
            }));
        }
        let options = ClientOptions { op_timeout: Duration::from_secs(20), ..ClientOptions::default() };
        let client = Client::connect_with(cluster.clone(), ClientId(1), Some(built.client_key(ClientId(1))), options)
            .await
            .expect("client");
        // The gateway, with its metrics.
        let gateway_metrics = Arc::new(GatewayMetrics::new());
        let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
        let gateway_metrics_addr =
            pistou_metrics::spawn("127.0.0.1:0".parse().expect("addr"), gateway_metrics.registry(), None, async {
                let _ = metrics_stopped.await;
            })
            .await
            .expect("gateway metrics");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind gateway");
        let gateway_addr = listener.local_addr().expect("gateway addr");
        let config = GatewayConfig { metrics: Some(gateway_metrics), ..GatewayConfig::default() };
        let (stop_gateway, gateway_stopped) = tokio::sync::oneshot::channel::<()>();
        let gateway = tokio::spawn(serve(listener, client.clone(), config, async {
            let _ = gateway_stopped.await;
        }));

        let db = connect(gateway_addr).await;
        db.batch_execute("CREATE TABLE metered (id INT PRIMARY KEY, secret TEXT)").await.expect("create");
        let before: Vec<f64> = {
            let mut v = Vec::new();
            for &m in &metrics_addrs {
                v.push(value(&scrape(m).await, "pistou_replica_transactions_committed_total"));
            }
            v
        };
        let gateway_before = scrape(gateway_metrics_addr).await;
        const N: usize = 8;
        for i in 0..N {
            db.execute("INSERT INTO metered VALUES ($1, 'hunter2-row-data')", &[&(i as i32)]).await.expect("insert");
        }
        let missing = db.batch_execute("SELECT * FROM no_such_table").await.expect_err("undefined table");
        assert_eq!(support::sqlstate(&missing), "42P01");

        // Every replica applies every commit (writebacks go to the whole shard).
        for (k, &m) in metrics_addrs.iter().enumerate() {
            let want = before[k] + N as f64;
            let text = scrape_until(m, "the committed counter moving by N", |t| {
                value(t, "pistou_replica_transactions_committed_total") >= want
            })
            .await;
            assert!(value(&text, r#"pistou_replica_votes_total{vote="commit"}"#) >= N as f64, "{text}");
            assert!(value(&text, "pistou_replica_replies_signed_total") > 0.0, "{text}");
            assert!(value(&text, "pistou_replica_input_batch_messages_count") > 0.0, "{text}");
            assert!(value(&text, "pistou_replica_batch_duration_seconds_count") > 0.0, "{text}");
            assert!(!text.contains("hunter2") && !text.contains("metered"), "row data or names leaked:\n{text}");
        }
        // The storage figures are published every stats interval (100 ms here).
        scrape_until(metrics_addrs[0], "row keys counted", |t| value(t, "pistou_replica_row_keys") >= N as f64).await;

        let g = scrape(gateway_metrics_addr).await;
        let ok = r#"pistou_gateway_statements_total{sqlstate="00000"}"#;
        assert!(value(&g, ok) - value(&gateway_before, ok) >= N as f64, "{g}");
        assert_eq!(value(&g, r#"pistou_gateway_statements_total{sqlstate="42P01"}"#), 1.0, "{g}");
        assert_eq!(value(&g, r#"pistou_gateway_errors_total{sqlstate="42P01"}"#), 1.0, "{g}");
        let committed =
            sum(&g, "pistou_gateway_transactions_total") - sum(&gateway_before, "pistou_gateway_transactions_total");
        assert!(committed >= N as f64, "{g}");
        assert!(value(&g, "pistou_gateway_statement_duration_seconds_count") >= N as f64 + 1.0, "{g}");
        assert_eq!(value(&g, "pistou_gateway_connections_open"), 1.0, "{g}");
        assert!(value(&g, "pistou_gateway_connections_accepted_total") >= 1.0, "{g}");
        assert!(!g.contains("hunter2") && !g.contains("metered") && !g.contains("tester"), "leak:\n{g}");

        // A Byzantine client (a real client's identity) against replica 0: a read whose
        // signature is forged, over an honest session; then a frame that is no message.
        let target = ReplicaId { shard: ShardId(0), index: 0 };
        let byzantine = ClientId(2);
        let rejected = r#"pistou_replica_rejected_messages_total{reason="bad-signature"}"#;
        let malformed = r#"pistou_replica_transport_rejections_total{reason="malformed-frame"}"#;
        let text = scrape(metrics_addrs[0]).await;
        let (rejected_before, malformed_before) = (value(&text, rejected), value(&text, malformed));
        let (mut s, mut key) = open_session(addrs[0], byzantine, target, &built.client_key(byzantine)).await;
        let read = ReadRequest { key: b"k".to_vec(), ts: Timestamp { time: now_us(), client: byzantine, seq: 1 } };
        let forged = SecretKey::from_seed([42; 32]).sign(&read.signing_hash());
        let msg = Message::Read(ClientSigned { client: byzantine, body: read, sig: Some(forged) });
        s.write_all(&frame(&key.seal(&encode_message(&msg)))).await.expect("send the forged read");
        let mut garbage = frame(&encode_message(&Message::HelloClient { client: byzantine }));
        garbage.extend(frame(&[0xff; 40]));
        let mut g2 = TcpStream::connect(addrs[0]).await.expect("connect");
        g2.write_all(&garbage).await.expect("send garbage");
        scrape_until(metrics_addrs[0], "the rejection counters moving", |t| {
            value(t, rejected) >= rejected_before + 1.0 && value(t, malformed) >= malformed_before + 1.0
        })
        .await;

        let _ = stop_gateway.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), gateway).await;
        let _ = stop_metrics.send(());
        client.shutdown().await;
        let _ = stop_cluster.send(true);
    })
    .await;
}
