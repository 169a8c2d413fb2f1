//! Hostile input against a real replica server on 127.0.0.1: every framing or decoding
//! error is counted and closes only the offending connection; honest clients are served.

use pistou_core::TxnId;
use pistou_core::{ClientId, ClusterBuilder, ReplicaId, ShardId, TestCluster, Timestamp};
use pistou_crypto::{Ephemeral, SecretKey, SessionKey};
use pistou_node::{now_us, NetCounters, NetReason, NodeOptions, ReplicaServer, PRE_AUTH_FRAME_BYTES};
use pistou_txn::sign_client;
use pistou_txn::RejectReason;
use pistou_wire::{
    decode_message, encode_message, DecFb, Decision, Message, PeerOpen, ReadRequest, SessionOpen, Signable,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Setup {
    addr: SocketAddr,
    counters: Arc<NetCounters>,
    client_key: SecretKey,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<pistou_node::ReplicaReport>,
}

async fn start(options: NodeOptions) -> Setup {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cluster = cluster(Some(addr));
    let client_key = cluster.client_key(ClientId(1));
    let id = replica_id(0);
    let server =
        ReplicaServer::with_listener(listener, cluster.config.clone(), id, Some(cluster.replica_key(id)), options)
            .unwrap();
    let counters = server.counters();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async {
        let _ = rx.await;
    }));
    Setup { addr, counters, client_key, stop, task }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

fn hello() -> Vec<u8> {
    frame(&encode_message(&Message::HelloClient { client: ClientId(1) }))
}

fn read_request(key: &SecretKey) -> Message {
    let ts = Timestamp { time: now_us(), client: ClientId(1), seq: 1 };
    Message::Read(sign_client(ClientId(1), Some(key), ReadRequest { key: b"k".to_vec(), ts }))
}

/// The server closes the connection (EOF or reset) within a few seconds.
async fn expect_closed(mut s: TcpStream) {
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "connection was not closed");
}

async fn wait_count(c: &NetCounters, reason: NetReason, n: u64) {
    for _ in 0..200 {
        if c.count(reason) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{reason:?} count never reached {n}: {:?}", c.snapshot());
}

async fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    s
}

#[tokio::test]
async fn bad_frames_close_only_their_connection() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        // An honest client connected throughout; it must keep working.
        let (mut honest, mut session) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");

        expect_closed(send(t.addr, &u32::MAX.to_be_bytes()).await).await;
        wait_count(&t.counters, NetReason::FrameTooLarge, 1).await;

        expect_closed(send(t.addr, &frame(&encode_message(&read_request(&t.client_key)))).await).await;
        wait_count(&t.counters, NetReason::MissingHello, 1).await;

        let mut garbage = hello();
        garbage.extend(frame(&[0xff; 10]));
        expect_closed(send(t.addr, &garbage).await).await;
        wait_count(&t.counters, NetReason::Malformed, 1).await;

        let mut trailing = hello();
        let mut payload = encode_message(&read_request(&t.client_key));
        payload.push(0);
        trailing.extend(frame(&payload));
        expect_closed(send(t.addr, &trailing).await).await;
        wait_count(&t.counters, NetReason::TrailingBytes, 1).await;

        // The honest connection is still served: a READ gets a signed reply.
        honest.write_all(&frame(&session.seal(&encode_message(&read_request(&t.client_key))))).await.unwrap();
        let mut len = [0u8; 4];
        honest.read_exact(&mut len).await.unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        honest.read_exact(&mut body).await.unwrap();
        match decode_message(&body).unwrap() {
            Message::ReadReply { reply, .. } => {
                assert_eq!(reply.body.key, b"k".to_vec());
                assert!(reply.sig.is_some(), "replies are signed when crypto is on");
            }
            other => panic!("expected a read reply, got {}", other.kind()),
        }
        let _ = t.stop.send(());
        let report = t.task.await.unwrap();
        assert_eq!(report.stats.reads, 1);
    };
    tokio::time::timeout(Duration::from_secs(60), run).await.expect("test timed out");
}

#[tokio::test]
async fn connections_beyond_the_cap_are_refused() {
    let run = async {
        let t = start(NodeOptions { max_connections: 1, ..NodeOptions::default() }).await;
        let _first = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        // The second one completes its handshake, then finds no slot.
        let mine = Ephemeral::from_seed([5; 32]);
        let open = SessionOpen::signed(ClientId(1), replica_id(0), &t.client_key, mine.public());
        let mut bytes = hello();
        bytes.extend(frame(&encode_message(&Message::SessionOpen(open))));
        expect_closed(send(t.addr, &bytes).await).await;
        wait_count(&t.counters, NetReason::ConnectionCap, 1).await;
        let _ = t.stop.send(());
        t.task.await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// Sockets that never finish a handshake (silent, or a hello and nothing more) hold only
/// handshake slots, never an authenticated connection's, and lose them after
/// `hello_timeout`; beyond `max_handshakes` each new one takes the oldest one's slot.
/// Meanwhile a client with a session is served, and a new one connects during the flood.
#[tokio::test]
async fn sockets_that_never_authenticate_take_no_authenticated_slot() {
    let run = async {
        let options = NodeOptions {
            max_connections: 2,
            max_handshakes: 2,
            hello_timeout: Duration::from_millis(500),
            ..NodeOptions::default()
        };
        let t = start(options).await;
        let (mut honest, mut session) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        let silent = TcpStream::connect(t.addr).await.unwrap();
        let hello_only = send(t.addr, &hello()).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Newer sockets that never authenticate either: each takes the oldest one's handshake
        // slot, which is closed.
        let mut flood = Vec::new();
        for _ in 0..3 {
            flood.push(TcpStream::connect(t.addr).await.unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        expect_closed(silent).await;
        expect_closed(hello_only).await;
        wait_count(&t.counters, NetReason::HandshakeCap, 3).await;
        honest.write_all(&frame(&session.seal(&encode_message(&read_request(&t.client_key))))).await.unwrap();
        assert!(matches!(read_message(&mut honest).await, Some(Message::ReadReply { .. })), "the session is served");
        // The flood does not lock a new client out: its handshake takes the oldest slot, and
        // it gets the second authenticated slot, which no unauthenticated socket ever took.
        assert!(open_session(t.addr, &t.client_key, 0).await.is_some(), "a new client connects");
        for s in flood {
            expect_closed(s).await;
        }
        assert_eq!(t.counters.count(NetReason::ConnectionCap), 0);
        let _ = t.stop.send(());
        t.task.await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// A peer that sends requests but never reads replies is cut off instead of making the
/// replica queue replies without bound. (Single-threaded test runtime: the writer task
/// cannot drain its queue while the driver routes one batch, so this is deterministic.)
#[tokio::test]
async fn peers_that_do_not_read_are_disconnected() {
    let run = async {
        let t = start(NodeOptions { outbound_queue: 1, ..NodeOptions::default() }).await;
        let (mut s, mut session) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        let mut bytes = Vec::new();
        for _ in 0..64 {
            bytes.extend(frame(&session.seal(&encode_message(&read_request(&t.client_key)))));
        }
        s.write_all(&bytes).await.unwrap();
        wait_count(&t.counters, NetReason::SlowPeer, 1).await;
        expect_closed(s).await;
        let _ = t.stop.send(());
        t.task.await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

fn replica_id(index: u32) -> ReplicaId {
    ReplicaId { shard: ShardId(0), index }
}

/// Replica `index`'s key in `start`'s configuration.
fn replica_key(index: u32) -> SecretKey {
    cluster(None).replica_key(replica_id(index))
}

/// `start`'s configuration: replica 0 listens on `addr` (when known); the others never run
/// and keep placeholder addresses nothing listens on.
fn cluster(addr: Option<SocketAddr>) -> TestCluster {
    ClusterBuilder::new(1).replica_addrs(addr).build()
}

fn hello_replica(index: u32) -> Vec<u8> {
    frame(&encode_message(&Message::HelloReplica { replica: replica_id(index) }))
}

fn bogus_dec_fb() -> Message {
    let dec = DecFb { txn: TxnId([7; 32]), decision: Decision::Commit, view: 1, proofs: Vec::new() };
    Message::DecFb(dec)
}

/// A signed `PeerOpen` from replica `from` (signed with `key`) to replica `to`.
fn peer_open(from: u32, to: u32, key: &SecretKey, mine: &Ephemeral) -> (PeerOpen, Vec<u8>) {
    let open = PeerOpen { from: replica_id(from), to: replica_id(to), eph: mine.public() };
    let sig = key.sign(&open.signing_hash());
    let bytes = frame(&encode_message(&Message::PeerOpen { open: open.clone(), sig }));
    (open, bytes)
}

/// Reads one frame and decodes it (bounded in time).
async fn read_message(s: &mut TcpStream) -> Option<Message> {
    let mut len = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut len)).await.ok()?.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.ok()?;
    decode_message(&body).ok()
}

/// Opens a peer session as replica `from` with `key`; the connection and its session key,
/// or `None` if the replica refused.
async fn open_peer(addr: SocketAddr, from: u32, key: &SecretKey) -> Option<(TcpStream, SessionKey)> {
    let mine = Ephemeral::from_seed([6; 32]);
    let (open, bytes) = peer_open(from, 0, key, &mine);
    let mut s = send(addr, &bytes).await;
    let Some(Message::SessionAccept { eph }) = read_message(&mut s).await else { return None };
    Some((s, mine.agree(&eph, &open.transcript(&eph)).unwrap()))
}

/// A peer session (signed `PeerOpen`) is routed to `Replica::handle_replica` (which checks
/// a DECFB's proofs: bad-certificate); the same message from a client connection is
/// unexpected. With crypto on, a bare `HelloReplica` claim is refused; so are claims of
/// unknown replicas, of this one, `PeerOpen`s signed with another key or for another replica.
#[tokio::test]
async fn replica_connections_are_routed_to_handle_replica() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        let (mut peer, mut key) = open_peer(t.addr, 1, &replica_key(1)).await.expect("peer session refused");
        peer.write_all(&frame(&key.seal(&encode_message(&bogus_dec_fb())))).await.unwrap();
        let (mut client, mut client_key) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        client.write_all(&frame(&client_key.seal(&encode_message(&bogus_dec_fb())))).await.unwrap();

        let mut claim = hello_replica(1);
        claim.extend(frame(&encode_message(&bogus_dec_fb())));
        expect_closed(send(t.addr, &claim).await).await;
        wait_count(&t.counters, NetReason::UnauthenticatedPeer, 1).await;
        let mine = Ephemeral::from_seed([8; 32]);
        // Replica 9 does not exist (six replicas), so any key will do for it.
        expect_closed(send(t.addr, &peer_open(9, 0, &SecretKey::from_seed([10; 32]), &mine).1).await).await;
        expect_closed(send(t.addr, &peer_open(0, 0, &replica_key(0), &mine).1).await).await;
        wait_count(&t.counters, NetReason::UnknownReplica, 2).await;
        assert!(open_peer(t.addr, 1, &replica_key(2)).await.is_none(), "signed with another replica's key");
        expect_closed(send(t.addr, &peer_open(1, 3, &replica_key(1), &mine).1).await).await;
        wait_count(&t.counters, NetReason::BadSession, 2).await;

        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = t.stop.send(());
        let report = t.task.await.unwrap();
        assert_eq!(report.rejections.count(RejectReason::BadCertificate), 1, "{:?}", report.rejections);
        assert_eq!(report.rejections.count(RejectReason::Unexpected), 1, "{:?}", report.rejections);
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// A recorded `PeerOpen` replayed by someone without the replica's ephemeral secret opens
/// nothing: the replica answers with a fresh value, and every frame the attacker can make
/// (unsealed, or sealed under a guessed key) fails the tag check and ends the connection.
#[tokio::test]
async fn a_replayed_peer_handshake_cannot_speak_for_the_peer() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        let recorded = peer_open(1, 0, &replica_key(1), &Ephemeral::from_seed([6; 32])).1;
        let mut s = send(t.addr, &recorded).await;
        assert!(matches!(read_message(&mut s).await, Some(Message::SessionAccept { .. })));
        s.write_all(&frame(&encode_message(&bogus_dec_fb()))).await.unwrap();
        expect_closed(s).await;
        let mut s = send(t.addr, &recorded).await;
        let Some(Message::SessionAccept { eph }) = read_message(&mut s).await else { panic!("no answer") };
        let (open, _) = peer_open(1, 0, &replica_key(1), &Ephemeral::from_seed([6; 32]));
        let mut guessed = Ephemeral::from_seed([7; 32]).agree(&eph, &open.transcript(&eph)).unwrap();
        s.write_all(&frame(&guessed.seal(&encode_message(&bogus_dec_fb())))).await.unwrap();
        expect_closed(s).await;
        wait_count(&t.counters, NetReason::BadTag, 2).await;
        let _ = t.stop.send(());
        let report = t.task.await.unwrap();
        assert_eq!(report.rejections.count(RejectReason::BadCertificate), 0, "no replayed frame reached the replica");
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// Until a connection has authenticated, a frame may not exceed `PRE_AUTH_FRAME_BYTES`
/// (a hello-only socket cannot make the replica buffer 8 MiB); over a session the
/// configured limit applies.
#[tokio::test]
async fn unauthenticated_connections_cannot_send_large_frames() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        let big = PRE_AUTH_FRAME_BYTES as u32 + 1;
        let mut bytes = hello();
        bytes.extend(big.to_be_bytes());
        expect_closed(send(t.addr, &bytes).await).await;
        wait_count(&t.counters, NetReason::FrameTooLarge, 1).await;
        // A peer that opened a session may send a 1 MiB frame: it is read in full (and,
        // being garbage, fails its tag check instead of the size check).
        let (mut peer, _) = open_peer(t.addr, 1, &replica_key(1)).await.expect("peer session refused");
        peer.write_all(&frame(&vec![0u8; 1 << 20])).await.unwrap();
        expect_closed(peer).await;
        wait_count(&t.counters, NetReason::BadTag, 1).await;
        assert_eq!(t.counters.count(NetReason::FrameTooLarge), 1);
        let _ = t.stop.send(());
        t.task.await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

/// Opens a session as client 1 for replica `index` (signed with `key`); returns the
/// connection and the session key, or `None` if the replica closed the connection.
async fn open_session(addr: SocketAddr, key: &SecretKey, index: u32) -> Option<(TcpStream, SessionKey)> {
    let mine = Ephemeral::from_seed([5; 32]);
    let open = SessionOpen::signed(ClientId(1), replica_id(index), key, mine.public());
    let mut bytes = hello();
    bytes.extend(frame(&encode_message(&Message::SessionOpen(open.clone()))));
    let mut s = send(addr, &bytes).await;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.ok()?;
    let Ok(Message::SessionAccept { eph }) = decode_message(&body) else {
        panic!("expected the replica's session value")
    };
    Some((s, mine.agree(&eph, &open.body.transcript(ClientId(1), &eph)).unwrap()))
}

/// Issue 33: a read with a bad signature over a session ends it, so a client flooding bad
/// signatures pays a handshake for each one; the session served reads before.
#[tokio::test]
async fn a_bad_signature_over_a_session_closes_the_connection() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        let (mut s, mut key) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        s.write_all(&frame(&key.seal(&encode_message(&unsigned_read())))).await.unwrap();
        assert!(matches!(read_message(&mut s).await, Some(Message::ReadReply { .. })), "served over the session");
        let forged = read_request(&SecretKey::from_seed([42; 32]));
        s.write_all(&frame(&key.seal(&encode_message(&forged)))).await.unwrap();
        expect_closed(s).await;
        let _ = t.stop.send(());
        let report = t.task.await.unwrap();
        assert_eq!(report.rejections.count(RejectReason::BadSignature), 1);
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}

fn unsigned_read() -> Message {
    let ts = Timestamp { time: now_us(), client: ClientId(1), seq: 2 };
    Message::Read(sign_client(ClientId(1), None, ReadRequest { key: b"k".to_vec(), ts }))
}

/// Pesto §3: clients are authenticated, requests need not be signed. Over a session opened
/// with the client's key, an unsigned read is served; a connection without one is closed; a frame
/// whose tag is wrong (here: altered) ends the session; sessions signed by another key or
/// for another replica are refused.
#[tokio::test]
async fn a_session_authenticates_unsigned_reads_and_nothing_else_does() {
    let run = async {
        let t = start(NodeOptions::default()).await;
        let (mut s, mut key) = open_session(t.addr, &t.client_key, 0).await.expect("session refused");
        s.write_all(&frame(&key.seal(&encode_message(&unsigned_read())))).await.unwrap();
        assert!(
            matches!(read_message(&mut s).await, Some(Message::ReadReply { .. })),
            "the unsigned read over the session is served"
        );

        let mut altered = key.seal(&encode_message(&unsigned_read()));
        altered[0] ^= 1;
        s.write_all(&frame(&altered)).await.unwrap();
        expect_closed(s).await;
        wait_count(&t.counters, NetReason::BadTag, 1).await;

        // No session: with crypto on, the connection is closed before the read is looked at.
        let mut bytes = hello();
        bytes.extend(frame(&encode_message(&unsigned_read())));
        expect_closed(send(t.addr, &bytes).await).await;
        wait_count(&t.counters, NetReason::NoSession, 1).await;

        assert!(open_session(t.addr, &SecretKey::from_seed([42; 32]), 0).await.is_none(), "another key");
        assert!(open_session(t.addr, &t.client_key, 1).await.is_none(), "another replica's session");
        wait_count(&t.counters, NetReason::BadSession, 2).await;

        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = t.stop.send(());
        let report = t.task.await.unwrap();
        assert_eq!(report.stats.reads, 1, "only the read over the session was served");
    };
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
}
