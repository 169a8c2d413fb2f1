//! Drives a Byzantine client actor (`pistou_adversary::ByzClient`) over real TCP connections
//! to every replica: the benchmark's faulty transactions.

use crate::ByzClient;
use anyhow::{Context, Result};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use pistou_core::{ClientId, ClusterConfig, ReplicaId};
use pistou_crypto::Ephemeral;
use pistou_wire::{decode_message, encode_message, frame_codec, Message, SessionOpen, DEFAULT_MAX_FRAME_BYTES};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Runs `actor` as client `client` until `until`; returns how many faulty transactions it
/// started.
pub async fn drive(
    config: Arc<ClusterConfig>,
    client: ClientId,
    mut actor: ByzClient,
    until: Instant,
    seed: u64,
) -> Result<usize> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let mut sinks = BTreeMap::new();
    for r in config.all_replicas().collect::<Vec<ReplicaId>>() {
        let addr = config.replica(r).map(|c| c.addr.clone()).unwrap_or_default();
        let stream = TcpStream::connect(&addr).await.with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let (mut sink, mut frames) = Framed::new(stream, frame_codec(DEFAULT_MAX_FRAME_BYTES)).split();
        sink.send(Bytes::from(encode_message(&Message::HelloClient { client }))).await?;
        // A faulty client is still an authenticated one: with crypto on, replicas serve a
        // connection only after its session handshake.
        let session = if config.crypto {
            let mine = Ephemeral::generate().map_err(|e| anyhow::anyhow!("ephemeral key: {e:?}"))?;
            let open = SessionOpen::signed(client, r, actor.key(), mine.public());
            sink.send(Bytes::from(encode_message(&Message::SessionOpen(open.clone())))).await?;
            let frame = frames.next().await.context("replica closed the connection")??;
            let Ok(Message::SessionAccept { eph }) = decode_message(&frame) else {
                anyhow::bail!("replica {r} refused the session");
            };
            let key = mine.agree(&eph, &open.body.transcript(client, &eph));
            Some(key.map_err(|e| anyhow::anyhow!("session key: {e:?}"))?)
        } else {
            None
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(Ok(frame)) = frames.next().await {
                let Ok(m) = decode_message(&frame) else { break };
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        sinks.insert(r, (sink, session));
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while Instant::now() < until {
        let mut out = Vec::new();
        tokio::select! {
            Some(m) = rx.recv() => actor.handle(m, &mut out),
            _ = tick.tick() => {
                let now = now_us();
                actor.step(now, &mut rng, &mut out);
                actor.tick(now, 5_000, &mut out);
            }
        }
        for (r, m) in out {
            if let Some((sink, session)) = sinks.get_mut(&r) {
                let body = encode_message(&m);
                let frame = match session {
                    Some(k) => k.seal(&body),
                    None => body,
                };
                // A replica that closed the connection just misses this faulty message.
                let _ = sink.send(Bytes::from(frame)).await;
            }
        }
    }
    Ok(actor.started())
}
