//! Outgoing links to other replicas (Basil §5 fallback: ELECTFB to the leader, DECFB
//! from it; SYNC/SUPPLY; catch-up). One task per destination, started on first use:
//! connect, prove who we are, then write what the driver queues; reconnect with back-off.
//! Replicas answer each other over their own outgoing links, so these connections only
//! write (what arrives on them after the handshake is drained and ignored). Undeliverable
//! messages are dropped: the protocol retries on its own timers.
//!
//! With crypto on, a link opens with `PeerOpen` (signed with this replica's key) and seals
//! every later frame with the session key (`pistou_crypto::SessionKey`): the peer acts on a
//! message only from a connection authenticated as its sender. Without crypto, the first
//! frame is a bare `HelloReplica` claim.

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pistou_core::ReplicaId;
use pistou_crypto::{Ephemeral, SecretKey, SessionKey};
use pistou_wire::{decode_message, encode_message, frame_codec, FrameCodec, Message, PeerOpen, Signable};
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Time the peer has to answer `PeerOpen`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

pub(crate) struct PeerLink {
    pub me: ReplicaId,
    pub to: ReplicaId,
    pub addr: String,
    pub max_frame_bytes: usize,
    /// This replica's key: `Some` exactly when crypto is on.
    pub key: Option<SecretKey>,
}

/// Runs until the driver drops the sending side of `outgoing`.
pub(crate) async fn run_peer_link(link: PeerLink, mut outgoing: mpsc::Receiver<Message>) {
    let mut backoff = MIN_BACKOFF;
    loop {
        if let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&link.addr)).await {
            backoff = MIN_BACKOFF;
            if !session(&link, stream, &mut outgoing).await {
                return;
            }
            tracing::debug!(peer = %link.to, "replica link lost");
        }
        // Wait before reconnecting; what arrives meanwhile is stale and dropped.
        let sleep = tokio::time::sleep(backoff);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = &mut sleep => break,
                msg = outgoing.recv() => if msg.is_none() { return },
            }
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life. `false`: the driver is gone, stop for good.
async fn session(link: &PeerLink, stream: TcpStream, outgoing: &mut mpsc::Receiver<Message>) -> bool {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut reader = FramedRead::new(r, frame_codec(link.max_frame_bytes));
    let mut writer = FramedWrite::new(w, frame_codec(link.max_frame_bytes));
    let mut sealer = match &link.key {
        Some(key) => {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, open_peer(link, key, &mut reader, &mut writer)).await {
                Ok(Some(sealer)) => Some(sealer),
                Ok(None) | Err(_) => {
                    tracing::debug!(peer = %link.to, "peer session refused");
                    return true;
                }
            }
        }
        None => {
            let hello = encode_message(&Message::HelloReplica { replica: link.me });
            if writer.send(Bytes::from(hello)).await.is_err() {
                return true;
            }
            None
        }
    };
    let drain = async { while let Some(Ok(_)) = reader.next().await {} };
    let write = async {
        while let Some(msg) = outgoing.recv().await {
            let body = encode_message(&msg);
            let frame = match &mut sealer {
                Some(k) => k.seal(&body),
                None => body,
            };
            if writer.send(Bytes::from(frame)).await.is_err() {
                return true;
            }
        }
        false
    };
    tokio::select! {
        _ = drain => true,
        keep_going = write => keep_going,
    }
}

/// The opening half of a peer session: a signed ephemeral value for `link.to`, then the
/// peer's value, which must be the first frame back. `None` if the peer refuses.
async fn open_peer(
    link: &PeerLink,
    key: &SecretKey,
    reader: &mut FramedRead<OwnedReadHalf, FrameCodec>,
    writer: &mut FramedWrite<OwnedWriteHalf, FrameCodec>,
) -> Option<SessionKey> {
    let mine = Ephemeral::generate().ok()?;
    let open = PeerOpen { from: link.me, to: link.to, eph: mine.public() };
    let sig = key.sign(&open.signing_hash());
    let hello = Message::PeerOpen { open: open.clone(), sig };
    writer.send(Bytes::from(encode_message(&hello))).await.ok()?;
    let frame = reader.next().await?.ok()?;
    let Ok(Message::SessionAccept { eph }) = decode_message(&frame) else { return None };
    mine.agree(&eph, &open.transcript(&eph)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::{ShardId, TxnId};
    use pistou_wire::decode_message;
    use tokio::net::TcpListener;

    async fn next(reader: &mut FramedRead<TcpStream, pistou_wire::FrameCodec>) -> Message {
        let frame = tokio::time::timeout(Duration::from_secs(5), reader.next()).await;
        let frame = frame.ok().flatten().and_then(|f| f.ok());
        let Some(frame) = frame else { panic!("no frame") };
        let Ok(msg) = decode_message(&frame) else { panic!("bad frame") };
        msg
    }

    async fn accept(listener: &TcpListener) -> FramedRead<TcpStream, pistou_wire::FrameCodec> {
        let accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept()).await;
        let Ok(Ok((stream, _))) = accepted else { panic!("no connection") };
        FramedRead::new(stream, frame_codec(1 << 20))
    }

    /// Hello first, then the queued messages; a new connection after the old one breaks;
    /// the task ends once the driver drops its sender.
    #[tokio::test]
    async fn link_says_hello_sends_and_reconnects() {
        let Ok(listener) = TcpListener::bind("127.0.0.1:0").await else { panic!("bind") };
        let Ok(addr) = listener.local_addr() else { panic!("addr") };
        let me = ReplicaId { shard: ShardId(0), index: 1 };
        let to = ReplicaId { shard: ShardId(0), index: 2 };
        let (tx, rx) = mpsc::channel(16);
        let link = PeerLink { me, to, addr: addr.to_string(), max_frame_bytes: 1 << 20, key: None };
        let task = tokio::spawn(run_peer_link(link, rx));
        let ack = |n: u8| Message::WritebackAck { txn: TxnId([n; 32]) };

        let _ = tx.send(ack(1)).await;
        let mut conn = accept(&listener).await;
        assert_eq!(next(&mut conn).await, Message::HelloReplica { replica: me });
        assert_eq!(next(&mut conn).await, ack(1));
        drop(conn);

        // Keep offering messages until the link has noticed and reconnected.
        let mut conn = loop {
            let _ = tx.try_send(ack(2));
            if let Ok(Ok((stream, _))) = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await {
                break FramedRead::new(stream, frame_codec(1 << 20));
            }
        };
        assert_eq!(next(&mut conn).await, Message::HelloReplica { replica: me });
        let _ = tx.send(ack(3)).await;
        loop {
            let m = next(&mut conn).await;
            if m == ack(3) {
                break;
            }
            assert_eq!(m, ack(2), "only retries of message 2 may come first");
        }
        drop(tx);
        assert!(tokio::time::timeout(Duration::from_secs(5), task).await.is_ok(), "the link outlived its driver");
    }
}
