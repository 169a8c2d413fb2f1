//! The attackers of issue 33, speaking the replica wire protocol (or raw TCP) directly.
//! Each counts what it did in a `Tally`, so a reader can see the attack ran: connections
//! made, frames and bytes the kernel accepted (written, not necessarily read by the
//! server), and how long its sockets stayed open before the server closed them.
//!
//! Every socket is bound to an address of 127.0.0.0/8 (`source`), so a flood can come
//! from several "hosts" of the loopback network while traffic never leaves the machine.

use pistou_core::{ClientId, ReplicaId, Timestamp, TxnId};
use pistou_crypto::{Ephemeral, SecretKey, SessionKey, Signature};
use pistou_wire::{decode_message, encode_message, ClientSigned, Message, PeerOpen, ReadRequest, SessionOpen};
use rand::Rng;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

/// What an attack did, counted by its tasks as they go.
#[derive(Debug, Default)]
pub struct Tally {
    /// TCP connections established.
    pub connects: AtomicU64,
    /// Connection attempts that failed (refused, timed out).
    pub connect_failures: AtomicU64,
    /// Connections the server ended (EOF or reset) while the attacker still used them.
    pub closed_by_server: AtomicU64,
    /// Attack frames (protocol messages or frame headers) the kernel accepted.
    pub frames: AtomicU64,
    /// Bytes the kernel accepted.
    pub bytes: AtomicU64,
    /// Sum over connections of the time each stayed open, in milliseconds.
    pub open_ms: AtomicU64,
    /// Operations of attacks that are statements (the cross join), finished or failed.
    pub statements: AtomicU64,
    pub statement_errors: AtomicU64,
}

impl Tally {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// One attacker's settings.
#[derive(Clone)]
pub struct Ctx {
    pub tally: Arc<Tally>,
    pub stop: CancellationToken,
    /// Pause before reconnecting after the server closed a connection (or refused one).
    pub reconnect: Duration,
    pub source: Ipv4Addr,
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

fn message_frame(m: &Message) -> Vec<u8> {
    frame(&encode_message(m))
}

fn random_signature() -> Signature {
    let mut b = [0u8; 64];
    rand::thread_rng().fill(&mut b[..]);
    Signature::from_bytes(b)
}

fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// A read of `key` by `client` carrying a random (so invalid) signature.
fn badly_signed_read(client: ClientId, seq: u64) -> Message {
    let ts = Timestamp { time: now_us(), client, seq };
    Message::Read(ClientSigned { client, body: ReadRequest { key: b"k".to_vec(), ts }, sig: Some(random_signature()) })
}

async fn connect_from(source: Ipv4Addr, target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source.into(), 0))?;
    let stream = tokio::time::timeout(Duration::from_secs(2), socket.connect(target))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    let _ = stream.set_nodelay(true);
    // Closing resets the connection: when an attack stops, the server drops what it has not
    // read yet instead of working through it during the next phase.
    let _ = stream.set_zero_linger();
    Ok(stream)
}

/// Reads and discards until the server ends the connection.
async fn until_closed(mut r: OwnedReadHalf) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

/// Writes `chunk` (holding `frames` attack frames) again and again, pausing `gap` between
/// writes, until a write fails.
async fn write_repeatedly(w: &mut OwnedWriteHalf, chunk: &[u8], frames: u64, gap: Duration, tally: &Tally) {
    loop {
        if w.write_all(chunk).await.is_err() {
            return;
        }
        Tally::add(&tally.frames, frames);
        Tally::add(&tally.bytes, chunk.len() as u64);
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
    }
}

/// The loop every socket attacker runs: connect, let `attack` use the connection until the
/// server closes it (or `attack` gives up), count, pause, reconnect; until stopped.
async fn reconnecting<F, Fut>(ctx: Ctx, target: SocketAddr, attack: F)
where
    F: Fn(TcpStream, Arc<Tally>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    while !ctx.stop.is_cancelled() {
        let stream = tokio::select! {
            _ = ctx.stop.cancelled() => return,
            s = connect_from(ctx.source, target) => s,
        };
        match stream {
            Ok(s) => {
                Tally::add(&ctx.tally.connects, 1);
                let opened = Instant::now();
                let stopped = tokio::select! {
                    _ = ctx.stop.cancelled() => true,
                    _ = attack(s, ctx.tally.clone()) => false,
                };
                Tally::add(&ctx.tally.open_ms, opened.elapsed().as_millis() as u64);
                if stopped {
                    return;
                }
                Tally::add(&ctx.tally.closed_by_server, 1);
            }
            Err(_) => Tally::add(&ctx.tally.connect_failures, 1),
        }
        tokio::select! {
            _ = ctx.stop.cancelled() => return,
            _ = tokio::time::sleep(ctx.reconnect) => {}
        }
    }
}

/// Pre-authentication flood: a socket that connects and never sends a byte (no startup
/// packet, no hello), held until the server closes it.
pub async fn silent(ctx: Ctx, target: SocketAddr) {
    reconnecting(ctx, target, |s, _| async move {
        let (r, _w) = s.into_split();
        until_closed(r).await;
    })
    .await
}

/// Size the big-frame attacker announces: the replicas' limit for authenticated peers.
pub const BIG_FRAME: u32 = 8 << 20;

/// Hello then a big frame: a `HelloClient` (which needs no key), then the header of an
/// 8 MiB frame and its body trickled in 16 KiB pieces every `gap`, so that a server that
/// buffers it holds the memory as long as possible.
pub async fn hello_big_frame(ctx: Ctx, target: SocketAddr, gap: Duration) {
    reconnecting(ctx, target, move |s, tally| async move {
        let (r, mut w) = s.into_split();
        let client = ClientId(rand::thread_rng().gen_range(1..=1_000));
        let mut opening = message_frame(&Message::HelloClient { client });
        opening.extend_from_slice(&BIG_FRAME.to_be_bytes());
        let trickle = async {
            if w.write_all(&opening).await.is_err() {
                return;
            }
            Tally::add(&tally.frames, 1);
            Tally::add(&tally.bytes, opening.len() as u64);
            let piece = vec![0x5a; 16 * 1024];
            let mut left = BIG_FRAME as usize;
            while left > 0 {
                let n = left.min(piece.len());
                if w.write_all(&piece[..n]).await.is_err() {
                    return;
                }
                Tally::add(&tally.bytes, n as u64);
                left -= n;
                tokio::time::sleep(gap).await;
            }
            // The whole frame went through: wait for the server to close the connection.
            std::future::pending::<()>().await
        };
        tokio::select! {
            _ = until_closed(r) => {}
            _ = trickle => {}
        }
    })
    .await
}

/// How a spoofed peer introduces itself.
#[derive(Clone, Copy, Debug)]
pub enum PeerClaim {
    /// A bare `HelloReplica` naming another replica (no proof).
    Hello,
    /// A `PeerOpen` in another replica's name with a random signature.
    ForgedOpen,
}

/// Frames of `Sync` for random transactions, built once per connection.
fn sync_flood(n: usize) -> Vec<u8> {
    let mut rng = rand::thread_rng();
    let mut out = Vec::new();
    for _ in 0..n {
        let mut txn = [0u8; 32];
        rng.fill(&mut txn[..]);
        out.extend(message_frame(&Message::Sync { txn: TxnId(txn) }));
    }
    out
}

/// Spoofed peer: claims to be replica `claim` to replica `target_id`, then sends `Sync`
/// frames as fast as the connection takes them.
pub async fn spoofed_peer(ctx: Ctx, target: SocketAddr, target_id: ReplicaId, claim: ReplicaId, how: PeerClaim) {
    reconnecting(ctx, target, move |s, tally| async move {
        let (r, mut w) = s.into_split();
        let opening = match how {
            PeerClaim::Hello => message_frame(&Message::HelloReplica { replica: claim }),
            PeerClaim::ForgedOpen => {
                let open = PeerOpen { from: claim, to: target_id, eph: Ephemeral::from_seed(rand::random()).public() };
                message_frame(&Message::PeerOpen { open, sig: random_signature() })
            }
        };
        const BURST: usize = 256;
        let flood = sync_flood(BURST);
        let send = async {
            if w.write_all(&opening).await.is_err() {
                return;
            }
            Tally::add(&tally.frames, 1);
            Tally::add(&tally.bytes, opening.len() as u64);
            write_repeatedly(&mut w, &flood, BURST as u64, Duration::ZERO, &tally).await;
        };
        tokio::select! {
            _ = until_closed(r) => {}
            _ = send => {}
        }
    })
    .await
}

/// Bad-signature flood without a session: `HelloClient` naming `client`, then reads with
/// random signatures as fast as the connection takes them.
pub async fn bad_signatures_unauthenticated(ctx: Ctx, target: SocketAddr, client: ClientId) {
    reconnecting(ctx, target, move |s, tally| async move {
        let (r, mut w) = s.into_split();
        const BURST: u64 = 64;
        let mut chunk = message_frame(&Message::HelloClient { client });
        for seq in 0..BURST {
            chunk.extend(message_frame(&badly_signed_read(client, seq)));
        }
        tokio::select! {
            _ = until_closed(r) => {}
            _ = write_repeatedly(&mut w, &chunk, BURST + 1, Duration::ZERO, &tally) => {}
        }
    })
    .await
}

/// Opens an authenticated session as `client` with replica `replica` (the handshake of
/// `pistou_crypto::SessionKey`): the connection and its key, or `None` if refused.
pub async fn open_session(
    stream: TcpStream,
    client: ClientId,
    key: &SecretKey,
    replica: ReplicaId,
) -> Option<(TcpStream, SessionKey)> {
    let mut s = stream;
    let mine = Ephemeral::generate().ok()?;
    let open = SessionOpen::signed(client, replica, key, mine.public());
    let mut bytes = message_frame(&Message::HelloClient { client });
    bytes.extend(message_frame(&Message::SessionOpen(open.clone())));
    s.write_all(&bytes).await.ok()?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let len = u32::from_be_bytes(len) as usize;
    // The answer is a 32-byte value; anything long is not a SessionAccept.
    if len > 1024 {
        return None;
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    let Ok(Message::SessionAccept { eph }) = decode_message(&body) else { return None };
    let session = mine.agree(&eph, &open.body.transcript(client, &eph)).ok()?;
    Some((s, session))
}

/// Bad-signature flood from a Byzantine client that holds a key of the cluster: it opens a
/// session (so its frames pass the transport's checks and reach the replica), then sends
/// reads with random signatures, which the replica must verify to refuse.
pub async fn bad_signatures_in_session(
    ctx: Ctx,
    target: SocketAddr,
    replica: ReplicaId,
    client: ClientId,
    key: SecretKey,
) {
    reconnecting(ctx, target, move |s, tally| {
        let key = key.clone();
        async move {
            let Some((s, mut session)) = open_session(s, client, &key, replica).await else { return };
            let (r, mut w) = s.into_split();
            const BURST: u64 = 64;
            let send = async {
                let mut seq = 0u64;
                loop {
                    let mut chunk = Vec::new();
                    for _ in 0..BURST {
                        seq += 1;
                        chunk.extend(frame(&session.seal(&encode_message(&badly_signed_read(client, seq)))));
                    }
                    if w.write_all(&chunk).await.is_err() {
                        return;
                    }
                    Tally::add(&tally.frames, BURST);
                    Tally::add(&tally.bytes, chunk.len() as u64);
                }
            };
            // Replies (if any) are read, so the replica never drops us as a slow reader.
            tokio::select! {
                _ = until_closed(r) => {}
                _ = send => {}
            }
        }
    })
    .await
}
