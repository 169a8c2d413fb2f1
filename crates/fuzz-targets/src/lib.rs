//! Fuzz target bodies: each takes arbitrary bytes, must never panic, and checks the
//! properties its input format promises. `fuzz/` (cargo-fuzz, nightly) drives them with
//! libFuzzer; `tests/corpus.rs` replays the checked-in corpora and every past crash through
//! the same functions on stable, so a regression fails the ordinary test suite.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

use bytes::BytesMut;
use pistou_sql::{Database, Limits};
use pistou_wire::{decode_message, encode_message, frame_codec};
use tokio_util::codec::Decoder;

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets by name (the names of `fuzz/fuzz_targets/*.rs` and `fuzz/corpus/*`).
pub const TARGETS: [(&str, Target); 4] =
    [("wire_message", wire_message), ("frames", frames), ("predicate", predicate), ("sql", sql)];

/// One protocol message: decoding never panics, and what decodes is canonical (encoding it
/// again gives the same bytes, so signatures and ids cannot differ for one message).
pub fn wire_message(data: &[u8]) {
    if let Ok(msg) = decode_message(data) {
        assert_eq!(encode_message(&msg), data, "a second encoding of {}", msg.kind());
    }
}

/// A byte stream as a connection delivers it: length-prefixed frames under a small limit,
/// each decoded as a message, stopping at the first framing error as a replica does.
pub fn frames(data: &[u8]) {
    let mut codec = frame_codec(4096);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = codec.decode(&mut buf) {
        assert!(frame.len() <= 4096, "a frame above the limit was accepted");
        wire_message(&frame);
    }
}

/// A range read's predicate as replicas receive it: the first byte is the table's column
/// count, the rest the wire form. Decoding never panics, and a decoded predicate encodes.
pub fn predicate(data: &[u8]) {
    let Some((&columns, wire)) = data.split_first() else { return };
    let Ok(wire) = postcard::from_bytes::<pistou_sql::WirePredicate>(wire) else { return };
    if let Ok(p) = pistou_sql::Predicate::from_wire(&wire, usize::from(columns % 32)) {
        assert!(p.to_wire().is_ok(), "a decoded predicate does not encode again");
    }
}

/// SQL text from a hostile client, against a small schema: parsing, binding and execution
/// never panic, and every statement ends with a result or an error within the engine's
/// limits (small ones here, so that each input stays cheap).
pub fn sql(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    SQL_SCHEMA.with(|db| {
        let _ = db.clone().execute(text);
    });
}

thread_local! {
    /// The schema and rows every `sql` input starts from (built once, cloned per input).
    static SQL_SCHEMA: Database = {
        let limits = Limits { max_sql_len: 4096, max_rows: 10_000, ..Limits::default() };
        let mut db = Database::with_limits(limits);
        for setup in [
            "CREATE TABLE t (a INT PRIMARY KEY, b TEXT, c DECIMAL(10, 2))",
            "CREATE TABLE u (x INT PRIMARY KEY, y INT NOT NULL)",
            "CREATE INDEX u_y ON u (y)",
            "INSERT INTO t VALUES (1, 'one', 1.5), (2, NULL, -2), (3, 'three', 0)",
            "INSERT INTO u VALUES (1, 10), (2, 20), (3, 10)",
        ] {
            assert!(db.execute(setup).is_ok(), "setup failed: {setup}");
        }
        db
    };
}
