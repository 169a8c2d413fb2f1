//! The decoder faces hostile bytes: it must never panic, must reject garbage and trailing
//! bytes, and must round-trip every message we produce. The framing layer must refuse
//! oversized frames without allocating them.

use bytes::BytesMut;
use pistou_core::{ClientId, ReplicaId, ShardId, Timestamp, TxnId};
use pistou_wire::*;
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

fn ts(t: u64) -> Timestamp {
    Timestamp { time: t, client: ClientId(3), seq: 1 }
}

fn sample_messages() -> Vec<Message> {
    let meta = TxnMeta {
        ts: ts(10),
        read_set: vec![ReadEntry { key: b"a".to_vec(), version: ts(2) }],
        write_set: vec![
            WriteEntry { key: b"b".to_vec(), value: Some(vec![1, 2, 3]) },
            WriteEntry { key: b"c".to_vec(), value: None },
        ],
        deps: vec![Dep { txn: TxnId([4; 32]), key: b"a".to_vec(), version: ts(2) }],
        predicates: Vec::new(),
        late: false,
        shards: vec![ShardId(0)],
    };
    let vote = ReplicaSigned {
        signer: ReplicaId { shard: ShardId(0), index: 2 },
        body: St1Vote { txn: meta.id(), vote: Vote::Commit },
        sig: None,
    };
    let cert = CommitCert::Fast(vec![ShardVotes { shard: ShardId(0), votes: vec![vote.clone()] }]);
    vec![
        Message::HelloClient { client: ClientId(3) },
        Message::Read(ClientSigned {
            client: ClientId(3),
            body: ReadRequest { key: b"a".to_vec(), ts: ts(10) },
            sig: None,
        }),
        Message::ReadReply {
            reply: ReplicaSigned {
                signer: vote.signer,
                body: ReadReply {
                    key: b"a".to_vec(),
                    ts: ts(10),
                    prepared: Some(PreparedRead { version: ts(3), txn: TxnId([9; 32]), value: None }),
                },
                sig: None,
            },
            committed: Some(CommittedRead { writer: meta.clone(), cert: cert.clone() }),
        },
        Message::Prepare(ClientSigned { client: ClientId(3), body: Prepare { meta: meta.clone() }, sig: None }),
        Message::PrepareReply {
            vote: vote.clone(),
            conflict: Some(ConflictProof { meta: meta.clone(), cert: cert.clone() }),
            blocker: None,
        },
        Message::PrepareReply { vote: vote.clone(), conflict: None, blocker: Some(TxnId([4; 32])) },
        Message::Decide(ClientSigned {
            client: ClientId(3),
            body: St2 {
                meta: meta.clone(),
                decision: Decision::Abort,
                tallies: vec![ShardVotes { shard: ShardId(0), votes: vec![vote.clone()] }],
                view: 0,
            },
            sig: None,
        }),
        Message::Writeback(Writeback { meta: meta.clone(), cert: DecisionCert::Commit(cert) }),
        Message::WritebackAck { txn: meta.id() },
        Message::AbortReads(ClientSigned {
            client: ClientId(3),
            body: AbortReads { ts: ts(10), keys: vec![b"a".to_vec()] },
            sig: None,
        }),
    ]
}

#[test]
fn every_message_kind_round_trips() {
    for m in sample_messages() {
        let bytes = encode_message(&m);
        assert_eq!(decode_message(&bytes).as_ref(), Ok(&m), "{}", m.kind());
    }
}

#[test]
fn trailing_bytes_and_unknown_tags_are_rejected() {
    let mut bytes = encode_message(&Message::WritebackAck { txn: TxnId([1; 32]) });
    bytes.push(0);
    assert_eq!(decode_message(&bytes), Err(WireError::TrailingBytes(1)));
    assert!(matches!(decode_message(&[200]), Err(WireError::Malformed(_))));
    assert!(matches!(decode_message(&[]), Err(WireError::Malformed(_))));
}

#[test]
fn transaction_id_is_canonical() {
    let m = &sample_messages()[3];
    let Message::Prepare(p) = m else { unreachable!() };
    let mut other = p.body.meta.clone();
    assert_eq!(other.id(), p.body.meta.id());
    other.write_set.swap(0, 1);
    assert_ne!(other.id(), p.body.meta.id(), "a different encoding is a different transaction");
}

#[test]
fn oversized_frame_is_a_framing_error() {
    let mut codec = frame_codec(1024);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&(1_000_000u32).to_be_bytes());
    buf.extend_from_slice(&[0u8; 16]);
    assert!(codec.decode(&mut buf).is_err());
    // A frame within the limit decodes.
    let mut codec = frame_codec(1024);
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&3u32.to_be_bytes());
    buf.extend_from_slice(b"abc");
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap().as_ref(), b"abc");
}

#[test]
fn message_writer_frames_like_the_frame_codec() {
    let mut writer = MessageWriter::new(1024);
    let mut frames = BytesMut::new();
    for m in sample_messages() {
        writer.encode(&m, &mut frames).expect("within the limit");
    }
    // The reading side (the length-delimited codec) gets back every message, in order.
    let mut reader = frame_codec(1024);
    for m in sample_messages() {
        let frame = reader.decode(&mut frames).expect("a frame").expect("complete");
        assert_eq!(frame.as_ref(), encode_message(&m).as_slice(), "{}", m.kind());
    }
    assert!(frames.is_empty());
}

#[test]
fn message_writer_refuses_an_oversized_message_and_writes_nothing() {
    let big = Message::AbortReads(ClientSigned {
        client: ClientId(3),
        body: AbortReads { ts: ts(10), keys: vec![vec![7; 600]; 2] },
        sig: None,
    });
    let mut frames = BytesMut::new();
    MessageWriter::new(1024).encode(&Message::HelloClient { client: ClientId(3) }, &mut frames).expect("small");
    let before = frames.clone();
    assert!(MessageWriter::new(1024).encode(&big, &mut frames).is_err());
    assert_eq!(frames, before, "no partial frame left in the buffer");
    MessageWriter::new(4096).encode(&big, &mut frames).expect("within a larger limit");
}

#[test]
fn hashing_in_the_scratch_buffer_matches_a_fresh_encoding() {
    for m in sample_messages() {
        let fresh = postcard::to_allocvec(&m).expect("encode");
        assert_eq!(canonical_bytes(&m), fresh);
        // Nested use (an encoding inside another's callback) gets its own buffer.
        let nested =
            with_canonical_bytes(&m, |outer| (outer.to_vec(), with_canonical_bytes(&ClientId(9), <[u8]>::to_vec)));
        assert_eq!(nested, (fresh, postcard::to_allocvec(&ClientId(9)).expect("encode")));
    }
}

#[test]
fn an_overlong_integer_is_not_a_second_encoding() {
    // HelloClient { client: 3 } with the client id as 0x83 0x00 instead of 0x03.
    let canonical = encode_message(&Message::HelloClient { client: ClientId(3) });
    let (last, head) = canonical.split_last().unwrap();
    assert_eq!(*last, 3);
    let mut overlong = head.to_vec();
    overlong.extend_from_slice(&[0x83, 0x00]);
    assert_eq!(decode_message(&canonical).unwrap(), Message::HelloClient { client: ClientId(3) });
    assert!(matches!(decode_message(&overlong), Err(WireError::Malformed(_))));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random bytes never panic the decoder.
    #[test]
    fn decoder_survives_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_message(&bytes);
    }

    /// Valid messages with random corruption never panic, and never decode to a message that
    /// re-encodes differently (no two encodings of one value).
    #[test]
    fn decoder_survives_corrupted_messages(which in 0usize..9, pos in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let msgs = sample_messages();
        let mut bytes = encode_message(&msgs[which % msgs.len()]);
        let i = pos % bytes.len();
        bytes[i] = byte;
        if let Ok(m) = decode_message(&bytes) {
            prop_assert_eq!(encode_message(&m), bytes.clone());
        }
        bytes.truncate(cut % (bytes.len() + 1));
        let _ = decode_message(&bytes);
    }

    /// The frame decoder never panics on a random byte stream, and never yields a frame
    /// above the limit.
    #[test]
    fn frame_decoder_survives_random_streams(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16)) {
        let mut codec = frame_codec(256);
        let mut buf = BytesMut::new();
        for c in chunks {
            buf.extend_from_slice(&c);
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => prop_assert!(frame.len() <= 256),
                Ok(None) => {}
                Err(_) => break, // a framing error closes the connection
            }
        }
    }
}
