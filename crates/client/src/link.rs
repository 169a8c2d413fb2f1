//! One long-lived task per replica: connect, say hello, open an authenticated session,
//! pump messages both ways, and reconnect with back-off when the connection fails.
//! Messages that cannot be delivered are dropped; the coordinator's retransmissions make
//! that safe.

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pistou_core::{ClientId, ReplicaId};
use pistou_crypto::{Ephemeral, SecretKey, SessionKey};
use pistou_wire::{decode_message, encode_message, frame_codec, FrameCodec, Message, SessionOpen};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio_util::codec::{FramedRead, FramedWrite};

/// Transport counters of a client, shared by its links.
#[derive(Debug, Default)]
pub struct LinkCounters {
    connects: AtomicU64,
    connect_failures: AtomicU64,
    bad_frames: AtomicU64,
    session_failures: AtomicU64,
    dropped_sends: AtomicU64,
}

impl LinkCounters {
    /// Successful TCP connections (the first one and every reconnection).
    pub fn connects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed)
    }
    pub fn connect_failures(&self) -> u64 {
        self.connect_failures.load(Ordering::Relaxed)
    }
    /// Frames from a replica that failed framing or decoding (the link is then reset).
    pub fn bad_frames(&self) -> u64 {
        self.bad_frames.load(Ordering::Relaxed)
    }
    /// Session handshakes that failed: the replica refused the client's signed value,
    /// answered something else or did not answer in time (the link then reconnects).
    pub fn session_failures(&self) -> u64 {
        self.session_failures.load(Ordering::Relaxed)
    }
    /// Outgoing messages dropped because a link's queue was full.
    pub fn dropped_sends(&self) -> u64 {
        self.dropped_sends.load(Ordering::Relaxed)
    }
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn dropped_send(&self) {
        Self::bump(&self.dropped_sends);
    }
}

pub(crate) struct LinkParams {
    pub replica: ReplicaId,
    pub addr: String,
    pub client: ClientId,
    /// Opens an authenticated session with this key (see `pistou_crypto::SessionKey`).
    pub session_key: Option<SecretKey>,
    pub connect_timeout: Duration,
    pub max_backoff: Duration,
    pub max_frame_bytes: usize,
}

/// Why a connected session ended.
enum SessionEnd {
    /// The client is shutting down: stop for good.
    EngineGone,
    /// Network or peer trouble: reconnect.
    Broken,
}

const MIN_BACKOFF: Duration = Duration::from_millis(50);

pub(crate) async fn run_link(
    p: LinkParams,
    mut outgoing: mpsc::Receiver<Bytes>,
    replies: mpsc::Sender<(ReplicaId, Message)>,
    counters: Arc<LinkCounters>,
) {
    let mut backoff = MIN_BACKOFF;
    loop {
        match tokio::time::timeout(p.connect_timeout, TcpStream::connect(&p.addr)).await {
            Ok(Ok(stream)) => {
                LinkCounters::bump(&counters.connects);
                backoff = MIN_BACKOFF;
                match session(&p, stream, &mut outgoing, &replies, &counters).await {
                    SessionEnd::EngineGone => return,
                    SessionEnd::Broken => tracing::debug!(replica = %p.replica, "connection lost"),
                }
            }
            Ok(Err(e)) => {
                LinkCounters::bump(&counters.connect_failures);
                tracing::debug!(replica = %p.replica, addr = %p.addr, "connect failed: {e}");
            }
            Err(_) => {
                LinkCounters::bump(&counters.connect_failures);
                tracing::debug!(replica = %p.replica, addr = %p.addr, "connect timed out");
            }
        }
        // What queued up while the replica was unreachable is stale; retransmissions
        // will carry whatever still matters.
        loop {
            match outgoing.try_recv() {
                Ok(_) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = replies.closed() => return,
        }
        backoff = (backoff * 2).min(p.max_backoff);
    }
}

async fn session(
    p: &LinkParams,
    stream: TcpStream,
    outgoing: &mut mpsc::Receiver<Bytes>,
    replies: &mpsc::Sender<(ReplicaId, Message)>,
    counters: &LinkCounters,
) -> SessionEnd {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut reader = FramedRead::new(r, frame_codec(p.max_frame_bytes));
    let mut writer = FramedWrite::new(w, frame_codec(p.max_frame_bytes));
    let hello = encode_message(&Message::HelloClient { client: p.client });
    if writer.send(Bytes::from(hello)).await.is_err() {
        return SessionEnd::Broken;
    }
    let mut sealer = None;
    if let Some(key) = &p.session_key {
        match tokio::time::timeout(p.connect_timeout, open_session(p, key, &mut reader, &mut writer)).await {
            Ok(Some(k)) => sealer = Some(k),
            Ok(None) | Err(_) => {
                LinkCounters::bump(&counters.session_failures);
                return SessionEnd::Broken;
            }
        }
    }
    // Messages arrive encoded (one encoding may go to several replicas); the session tag
    // is this connection's own.
    let mut seal = move |body: Bytes| match &mut sealer {
        Some(k) => Bytes::from(k.seal(&body)),
        None => body,
    };
    let read = async {
        while let Some(frame) = reader.next().await {
            let msg = match frame.map(|f| decode_message(&f)) {
                Ok(Ok(msg)) => msg,
                _ => {
                    // A replica speaking garbage is treated like a broken connection.
                    LinkCounters::bump(&counters.bad_frames);
                    return SessionEnd::Broken;
                }
            };
            if replies.send((p.replica, msg)).await.is_err() {
                return SessionEnd::EngineGone;
            }
        }
        SessionEnd::Broken
    };
    let write = async {
        while let Some(msg) = outgoing.recv().await {
            if writer.feed(seal(msg)).await.is_err() {
                return SessionEnd::Broken;
            }
            // Batch what is already queued into one flush, boundedly.
            for _ in 0..256 {
                let Ok(msg) = outgoing.try_recv() else { break };
                if writer.feed(seal(msg)).await.is_err() {
                    return SessionEnd::Broken;
                }
            }
            if SinkExt::<Bytes>::flush(&mut writer).await.is_err() {
                return SessionEnd::Broken;
            }
        }
        SessionEnd::EngineGone
    };
    tokio::select! {
        end = read => end,
        end = write => end,
    }
}

/// The client's half of the session handshake: a signed ephemeral value for this replica,
/// then the replica's value, which must be the first frame back. `None` if the replica
/// refuses (it closes the connection) or answers anything else.
async fn open_session(
    p: &LinkParams,
    key: &SecretKey,
    reader: &mut FramedRead<OwnedReadHalf, FrameCodec>,
    writer: &mut FramedWrite<OwnedWriteHalf, FrameCodec>,
) -> Option<SessionKey> {
    let mine = Ephemeral::generate().ok()?;
    let open = SessionOpen::signed(p.client, p.replica, key, mine.public());
    writer.send(Bytes::from(encode_message(&Message::SessionOpen(open.clone())))).await.ok()?;
    let frame = reader.next().await?.ok()?;
    let Ok(Message::SessionAccept { eph }) = decode_message(&frame) else { return None };
    mine.agree(&eph, &open.body.transcript(p.client, &eph)).ok()
}
