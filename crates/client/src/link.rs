//! One long-lived task per replica: connect, say hello, pump messages both ways, and
//! reconnect with back-off when the connection fails. Messages that cannot be delivered
//! are dropped; the coordinator's retransmissions make that safe.

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pistou_core::{ClientId, ReplicaId};
use pistou_wire::{decode_message, encode_message, frame_codec, Message};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
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
    mut outgoing: mpsc::Receiver<Message>,
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
    outgoing: &mut mpsc::Receiver<Message>,
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
            if writer.feed(Bytes::from(encode_message(&msg))).await.is_err() {
                return SessionEnd::Broken;
            }
            // Batch what is already queued into one flush, boundedly.
            for _ in 0..256 {
                let Ok(msg) = outgoing.try_recv() else { break };
                if writer.feed(Bytes::from(encode_message(&msg))).await.is_err() {
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
