//! One task per accepted connection: a reader that turns frames into messages for the
//! driver, and a writer that sends the driver's replies. Both halves run in the same task
//! so that whichever ends first (peer hung up, bad frame, driver dropped us) ends both.
//!
//! A client may open an authenticated session right after its hello (`SessionOpen`, see
//! `pistou_crypto::SessionKey`): the reader checks its signature, answers with this side's
//! key exchange value, tells the driver which client the connection is, and from then on
//! accepts only frames with a valid tag. A replica opens its link the same way
//! (`PeerOpen`, signed with its replica key). With crypto on, a client without a session and
//! a bare `HelloReplica` claim are refused. Until the handshake is done a connection holds a
//! handshake slot (never an authenticated one's), has `hello_timeout` to finish, and its
//! frames are capped at `PRE_AUTH_FRAME_BYTES`. Once authenticated, a client has at most
//! `NodeOptions::client_queue` messages waiting for the driver, over all its connections.

use crate::counters::{NetCounters, NetReason};
use futures::{SinkExt, StreamExt};
use pistou_core::{ClientId, ClusterConfig, ReplicaId};
use pistou_crypto::{Ephemeral, SessionKey, Signature};
use pistou_wire::HandshakeTicket;
use pistou_wire::{
    decode_message, frame_codec, ClientSigned, FrameCodec, Message, MessageWriter, PeerOpen, SessionOpen, Signable,
    WireError,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodecError};

/// Opaque per-connection token; the replica addresses replies to it.
pub(crate) type Token = u64;

/// Who a connection said it is in its first frame.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Origin {
    Client(Token),
    Replica(ReplicaId),
}

/// What connection tasks tell the driver. Nearly every item is a `Message`, so boxing
/// it to shrink the rare variants would only add an allocation per message.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Inbound {
    /// Sent by the accept loop before the connection's first message can arrive.
    Opened {
        token: Token,
        tx: mpsc::Sender<Message>,
    },
    Message {
        from: Origin,
        msg: Message,
        /// The sender's place in its client's queue budget (`ClientQueues`), given back
        /// when the driver takes the message.
        queued: Option<OwnedSemaphorePermit>,
    },
    /// The connection is an authenticated session of `client`; sent before its first
    /// authenticated message.
    Session {
        token: Token,
        client: ClientId,
    },
    Closed {
        token: Token,
    },
}

/// Replies written to the socket per flush; bounds the time one slow write holds replies.
const WRITE_BATCH: usize = 256;

/// Largest frame before a connection has proved who it is (hello, handshakes, and the
/// individually signed requests of a connection without a session).
pub const PRE_AUTH_FRAME_BYTES: usize = 64 * 1024;

/// How many messages each client may have waiting in the driver's queue, over all its
/// connections. A client that floods (reads with bad signatures over its own session, say)
/// then waits for the driver to take its messages, instead of filling the shared queue so
/// that every other client's message waits behind thousands of its own (issue 33).
pub(crate) struct ClientQueues {
    limit: usize,
    by_client: std::sync::Mutex<std::collections::HashMap<ClientId, Arc<Semaphore>>>,
}

impl ClientQueues {
    pub(crate) fn new(limit: usize) -> ClientQueues {
        ClientQueues { limit: limit.max(1), by_client: Default::default() }
    }

    /// `client`'s budget. Only clients of the configuration open sessions, so the map is
    /// bounded by the configuration.
    fn of(&self, client: ClientId) -> Arc<Semaphore> {
        let mut map = self.by_client.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(client).or_insert_with(|| Arc::new(Semaphore::new(self.limit))).clone()
    }
}

pub(crate) struct ConnParams {
    pub config: Arc<ClusterConfig>,
    /// This replica: another one may not claim its id.
    pub me: ReplicaId,
    pub max_frame_bytes: usize,
    /// The whole handshake (hello and session) must be done within this time.
    pub hello_timeout: Duration,
    /// Slots of authenticated connections; a connection takes one when its handshake
    /// succeeds (until then it holds a handshake slot, taken at accept).
    pub slots: Arc<Semaphore>,
    pub client_queues: Arc<ClientQueues>,
}

pub(crate) async fn serve_connection(
    stream: TcpStream,
    token: Token,
    inbound: mpsc::Sender<Inbound>,
    replies: (mpsc::Sender<Message>, mpsc::Receiver<Message>),
    counters: Arc<NetCounters>,
    params: ConnParams,
    ticket: HandshakeTicket,
) {
    let (to_peer, replies) = replies;
    // Replies are small and latency-bound; Nagle would add tens of milliseconds.
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let reader = FramedRead::new(r, frame_codec(params.max_frame_bytes.min(PRE_AUTH_FRAME_BYTES)));
    let writer = FramedWrite::new(w, MessageWriter::new(params.max_frame_bytes));
    tokio::select! {
        _ = read_loop(reader, token, &inbound, to_peer, &counters, &params, ticket) => {}
        _ = write_loop(writer, replies, &counters) => {}
    }
    let _ = inbound.send(Inbound::Closed { token }).await;
}

async fn read_loop(
    mut reader: FramedRead<OwnedReadHalf, FrameCodec>,
    token: Token,
    inbound: &mpsc::Sender<Inbound>,
    // For the handshakes only: dropped right after them, so that the connection still
    // ends when the driver drops its own sender (a slow peer).
    to_peer: mpsc::Sender<Message>,
    counters: &NetCounters,
    params: &ConnParams,
    mut ticket: HandshakeTicket,
) {
    // Until a connection has proved who it is, it holds one of a few handshake slots (never
    // an authenticated connection's; a newer connection may take it, `Handshakes`), has
    // `hello_timeout` to finish, and its frames are capped at `PRE_AUTH_FRAME_BYTES`.
    let handshake =
        tokio::time::timeout(params.hello_timeout, handshake(&mut reader, token, &to_peer, counters, params));
    let done = tokio::select! {
        done = handshake => done,
        _ = &mut ticket.evicted => return,
    };
    let Ok(Some((from, hello, proof))) = done else { return };
    drop(to_peer);
    let Ok(_slot) = params.slots.clone().try_acquire_owned() else {
        counters.record(NetReason::ConnectionCap);
        return;
    };
    drop(ticket);
    reader.decoder_mut().set_max_frame_length(params.max_frame_bytes);
    if inbound.send(Inbound::Message { from, msg: hello, queued: None }).await.is_err() {
        return;
    }
    match proof {
        Proof::ClientSession(client, key) => {
            if inbound.send(Inbound::Session { token, client }).await.is_err() {
                return;
            }
            let budget = params.client_queues.of(client);
            forward_sealed(reader, from, key, Some(budget), inbound, counters).await
        }
        Proof::PeerSession(key) => forward_sealed(reader, from, key, None, inbound, counters).await,
        Proof::NoCrypto => forward_plain(reader, from, inbound, counters).await,
    }
}

/// How a connection proved who it is.
enum Proof {
    ClientSession(ClientId, SessionKey),
    PeerSession(SessionKey),
    /// Nothing to prove: the cluster runs without crypto (a measurement mode).
    NoCrypto,
}

/// A connection's handshake: who it is, the hello to give the driver, and its proof.
/// `None`: refused (counted).
async fn handshake(
    reader: &mut FramedRead<OwnedReadHalf, FrameCodec>,
    token: Token,
    to_peer: &mpsc::Sender<Message>,
    counters: &NetCounters,
    params: &ConnParams,
) -> Option<(Origin, Message, Proof)> {
    let crypto = params.config.crypto;
    match next_message(reader, counters).await? {
        Message::HelloClient { client } if !crypto => {
            Some((Origin::Client(token), Message::HelloClient { client }, Proof::NoCrypto))
        }
        Message::HelloClient { client } => {
            // With crypto on, a client must open a session: requests then need no signature
            // of their own, and the connection has proved its key before it costs anything.
            let Message::SessionOpen(open) = next_message(reader, counters).await? else {
                counters.record(NetReason::NoSession);
                return None;
            };
            let Some((key, eph)) = accept_session(&open, params) else {
                counters.record(NetReason::BadSession);
                return None;
            };
            to_peer.send(Message::SessionAccept { eph }).await.ok()?;
            Some((Origin::Client(token), Message::HelloClient { client }, Proof::ClientSession(open.client, key)))
        }
        Message::HelloReplica { replica } => {
            if crypto {
                counters.record(NetReason::UnauthenticatedPeer);
                return None;
            }
            if !is_peer(replica, params) {
                counters.record(NetReason::UnknownReplica);
                return None;
            }
            Some((Origin::Replica(replica), Message::HelloReplica { replica }, Proof::NoCrypto))
        }
        Message::PeerOpen { open, sig } => {
            if !is_peer(open.from, params) {
                counters.record(NetReason::UnknownReplica);
                return None;
            }
            let Some((key, eph)) = accept_peer(&open, &sig, params) else {
                counters.record(NetReason::BadSession);
                return None;
            };
            to_peer.send(Message::SessionAccept { eph }).await.ok()?;
            // The driver learns of the peer as from a hello.
            let hello = Message::HelloReplica { replica: open.from };
            Some((Origin::Replica(open.from), hello, Proof::PeerSession(key)))
        }
        _ => {
            counters.record(NetReason::MissingHello);
            None
        }
    }
}

async fn forward_plain(
    mut reader: FramedRead<OwnedReadHalf, FrameCodec>,
    from: Origin,
    inbound: &mpsc::Sender<Inbound>,
    counters: &NetCounters,
) {
    while let Some(msg) = next_message(&mut reader, counters).await {
        // Awaiting here is the back-pressure: a busy replica stops reading sockets.
        if inbound.send(Inbound::Message { from, msg, queued: None }).await.is_err() {
            return;
        }
    }
}

/// Every frame of a session must carry the right tag; the first one that does not ends
/// the connection. With a `budget` (a client's), each message waits for a place in it.
async fn forward_sealed(
    mut reader: FramedRead<OwnedReadHalf, FrameCodec>,
    from: Origin,
    mut key: SessionKey,
    budget: Option<Arc<Semaphore>>,
    inbound: &mpsc::Sender<Inbound>,
    counters: &NetCounters,
) {
    while let Some(frame) = next_frame(&mut reader, counters).await {
        let Ok(body) = key.open(&frame) else {
            counters.record(NetReason::BadTag);
            return;
        };
        let Some(msg) = decode(body, counters) else { return };
        let queued = match &budget {
            // Never closed: an error cannot happen, and would end only this connection.
            Some(b) => match b.clone().acquire_owned().await {
                Ok(permit) => Some(permit),
                Err(_) => return,
            },
            None => None,
        };
        if inbound.send(Inbound::Message { from, msg, queued }).await.is_err() {
            return;
        }
    }
}

/// A replica of the configuration other than this one.
fn is_peer(replica: ReplicaId, params: &ConnParams) -> bool {
    params.config.replica(replica).is_some() && replica != params.me
}

/// The accepting half of a peer session: `None` unless crypto is on, the signature is the
/// named replica's own over a request naming this replica, and the key exchange works.
fn accept_peer(open: &PeerOpen, sig: &Signature, params: &ConnParams) -> Option<(SessionKey, [u8; 32])> {
    let pk = &params.config.replica(open.from)?.public_key;
    if !params.config.crypto || open.to != params.me {
        return None;
    }
    pistou_crypto::verify(pk, &open.signing_hash(), sig).ok()?;
    let mine = Ephemeral::generate().ok()?;
    let eph = mine.public();
    let key = mine.agree(&open.eph, &open.transcript(&eph)).ok()?;
    Some((key, eph))
}

/// The replica's half of a session handshake: `None` unless the client is known, the
/// signature is its own over a request naming this replica, and the key exchange works.
fn accept_session(open: &ClientSigned<SessionOpen>, params: &ConnParams) -> Option<(SessionKey, [u8; 32])> {
    let pk = params.config.client_key(open.client)?;
    let sig = open.sig.as_ref()?;
    if !params.config.crypto || open.body.replica != params.me {
        return None;
    }
    pistou_crypto::verify(pk, &open.body.signing_hash(), sig).ok()?;
    let mine = Ephemeral::generate().ok()?;
    let eph = mine.public();
    let key = mine.agree(&open.body.eph, &open.body.transcript(open.client, &eph)).ok()?;
    Some((key, eph))
}

/// The next frame; `None` at end of stream or after a counted error.
async fn next_frame(
    reader: &mut FramedRead<OwnedReadHalf, FrameCodec>,
    counters: &NetCounters,
) -> Option<bytes::BytesMut> {
    match reader.next().await? {
        Ok(frame) => Some(frame),
        Err(e) => {
            counters.record(classify_io(&e));
            None
        }
    }
}

/// The next decoded message; `None` at end of stream or after a counted error.
async fn next_message(reader: &mut FramedRead<OwnedReadHalf, FrameCodec>, counters: &NetCounters) -> Option<Message> {
    let frame = next_frame(reader, counters).await?;
    decode(&frame, counters)
}

fn decode(frame: &[u8], counters: &NetCounters) -> Option<Message> {
    match decode_message(frame) {
        Ok(msg) => Some(msg),
        Err(WireError::TrailingBytes(_)) => {
            counters.record(NetReason::TrailingBytes);
            None
        }
        Err(WireError::Malformed(_)) => {
            counters.record(NetReason::Malformed);
            None
        }
    }
}

pub(crate) fn classify_io(e: &std::io::Error) -> NetReason {
    let too_large = e.get_ref().is_some_and(|inner| inner.is::<LengthDelimitedCodecError>());
    if too_large {
        NetReason::FrameTooLarge
    } else {
        NetReason::Io
    }
}

async fn write_loop(
    mut writer: FramedWrite<OwnedWriteHalf, MessageWriter>,
    mut replies: mpsc::Receiver<Message>,
    counters: &NetCounters,
) {
    while let Some(msg) = replies.recv().await {
        if writer.feed(&msg).await.is_err() {
            counters.record(NetReason::Io);
            return;
        }
        // Everything already queued goes out with one flush (one syscall in the best case).
        for _ in 0..WRITE_BATCH {
            let Ok(msg) = replies.try_recv() else { break };
            if writer.feed(&msg).await.is_err() {
                counters.record(NetReason::Io);
                return;
            }
        }
        if SinkExt::<&Message>::flush(&mut writer).await.is_err() {
            counters.record(NetReason::Io);
            return;
        }
    }
    // The driver dropped our sender (shutdown or slow peer): the connection ends here.
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::{ClusterBuilder, ShardId, TestCluster, Timestamp};
    use pistou_crypto::SecretKey;
    use pistou_wire::{encode_message, ReadRequest};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const ME: ReplicaId = ReplicaId { shard: ShardId(0), index: 0 };

    /// Six replicas (only `ME` serves, in the test), clients 1 and 2, crypto on.
    fn cluster() -> TestCluster {
        ClusterBuilder::new(1).clients(2).build()
    }

    fn client_key(id: u64) -> SecretKey {
        cluster().client_key(ClientId(id))
    }

    fn config() -> Arc<ClusterConfig> {
        cluster().config
    }

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    }

    fn read(client: u64, seq: u64) -> Vec<u8> {
        let ts = Timestamp { time: 1, client: ClientId(client), seq };
        let body = ReadRequest { key: b"k".to_vec(), ts };
        encode_message(&Message::Read(ClientSigned { client: ClientId(client), body, sig: None }))
    }

    /// Accepts one connection on `listener` and serves it into `inbound` (no driver: the test
    /// takes the messages itself, or leaves them queued). The connection lives as long as the
    /// returned sender of its replies (as the driver's).
    async fn serve_one(
        listener: &TcpListener,
        token: Token,
        inbound: &mpsc::Sender<Inbound>,
        queues: &Arc<ClientQueues>,
    ) -> mpsc::Sender<Message> {
        let Ok((stream, _)) = listener.accept().await else { panic!("accept") };
        let params = ConnParams {
            config: config(),
            me: ME,
            max_frame_bytes: 1 << 20,
            hello_timeout: Duration::from_secs(5),
            slots: Arc::new(Semaphore::new(8)),
            client_queues: queues.clone(),
        };
        let (handshake, _) = pistou_wire::Handshakes::new(1).take();
        let (inbound, counters) = (inbound.clone(), Arc::new(NetCounters::default()));
        let (tx, rx) = mpsc::channel(64);
        let replies = tx.clone();
        tokio::spawn(
            async move { serve_connection(stream, token, inbound, (tx, rx), counters, params, handshake).await },
        );
        replies
    }

    /// Client `id`'s session with `ME` over a new connection; sends `reads` reads over it and
    /// returns the connection (kept open).
    async fn flood(addr: std::net::SocketAddr, id: u64, reads: u64) -> TcpStream {
        let Ok(mut s) = TcpStream::connect(addr).await else { panic!("connect") };
        let mine = Ephemeral::from_seed([id as u8; 32]);
        let open = SessionOpen::signed(ClientId(id), ME, &client_key(id), mine.public());
        let mut bytes = frame(&encode_message(&Message::HelloClient { client: ClientId(id) }));
        bytes.extend(frame(&encode_message(&Message::SessionOpen(open.clone()))));
        assert!(s.write_all(&bytes).await.is_ok());
        let mut len = [0u8; 4];
        assert!(s.read_exact(&mut len).await.is_ok());
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        assert!(s.read_exact(&mut body).await.is_ok());
        let Ok(Message::SessionAccept { eph }) = decode_message(&body) else { panic!("no session") };
        let Ok(mut key) = mine.agree(&eph, &open.body.transcript(ClientId(id), &eph)) else { panic!("agree") };
        let mut bytes = Vec::new();
        for seq in 0..reads {
            bytes.extend(frame(&key.seal(&read(id, seq))));
        }
        assert!(s.write_all(&bytes).await.is_ok());
        s
    }

    /// Reads from client `id` now in the queue, taking everything queued (bounded wait).
    async fn take_reads(rx: &mut mpsc::Receiver<Inbound>, id: u64) -> (usize, Vec<Inbound>) {
        let mut kept = Vec::new();
        let mut n = 0;
        while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {
            if let Inbound::Message { msg: Message::Read(r), .. } = &item {
                n += (r.client == ClientId(id)) as usize;
            }
            kept.push(item);
        }
        (n, kept)
    }

    /// A client flooding reads over its sessions has at most `limit` messages in the driver's
    /// queue, over all its connections; another client's messages still get in; and each
    /// message the driver takes lets one more of the flood in.
    #[tokio::test]
    async fn a_flooding_client_holds_at_most_its_budget_of_the_queue() {
        let run = async {
            let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else { panic!("bind") };
            let Ok(addr) = listener.local_addr() else { panic!("addr") };
            let (tx, mut rx) = mpsc::channel(4096);
            let queues = Arc::new(ClientQueues::new(4));
            let conns = [(1, 50), (1, 50), (2, 3)];
            let mut open = Vec::new();
            for (token, (client, reads)) in (1..).zip(conns) {
                open.push(tokio::join!(flood(addr, client, reads), serve_one(&listener, token, &tx, &queues)));
            }
            let (flooded, held) = take_reads(&mut rx, 1).await;
            assert_eq!(flooded, 4, "client 1's two connections hold its 4 places, not 100 messages");
            let honest_reads = held
                .iter()
                .filter(|i| matches!(i, Inbound::Message { msg: Message::Read(r), .. } if r.client == ClientId(2)))
                .count();
            assert_eq!(honest_reads, 3, "client 2's reads are queued beside the flood");
            // Taking (dropping) client 1's messages gives their places back.
            drop(held);
            let (more, _) = take_reads(&mut rx, 1).await;
            assert!(more >= 4, "the flood moves on as the driver takes its messages: {more}");
            drop(open);
        };
        tokio::time::timeout(Duration::from_secs(30), run).await.expect("test timed out");
    }
}
