//! Fuzz target bodies: each takes arbitrary bytes, must never panic, and checks the
//! properties its input format promises. `fuzz/` (cargo-fuzz, nightly) drives them with
//! libFuzzer; `tests/corpus.rs` replays the checked-in corpora and every past crash through
//! the same functions on stable, so a regression fails the ordinary test suite.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

use bytes::BytesMut;
use pgwire::api::auth::sasl::scram::{ScramSecret, ScramServerAuth, ScramServerAuthWaitingForClientFinal};
use pgwire::messages::extendedquery::Bind;
use pgwire::messages::startup::PasswordMessageFamily;
use pgwire::messages::{PgWireFrontendMessage, ProtocolVersion};
use pistou_gateway::frontend::{decode_frontend, sasl_initial_response, Phase, PRE_AUTH_MESSAGE_BYTES};
use pistou_gateway::pgtypes::decode_param;
use pistou_sql::types::ArrayElem;
use pistou_sql::{Database, Limits, SqlType};
use pistou_wire::{decode_message, encode_message, frame_codec};
use tokio_util::codec::Decoder;

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets by name (the names of `fuzz/fuzz_targets/*.rs` and `fuzz/corpus/*`).
pub const TARGETS: [(&str, Target); 6] = [
    ("wire_message", wire_message),
    ("frames", frames),
    ("predicate", predicate),
    ("sql", sql),
    ("gateway_startup", gateway_startup),
    ("gateway_message", gateway_message),
];

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

/// A connection's first bytes as the gateway reads them: SSL or GSS requests, a startup packet
/// or cancel request, then typed messages under the pre-authentication cap, each password
/// message read as the startup handlers read it (see [`next_frontend`] for the checks).
pub fn gateway_startup(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    let mut phase = Phase::First;
    let (mut passwords, mut scram) = (0, None);
    while let Some(message) = next_frontend(&mut buf, phase, PRE_AUTH_MESSAGE_BYTES) {
        match message {
            PgWireFrontendMessage::SslNegotiation(pgwire::messages::SslNegotiationMetaMessage::None) => {
                phase = Phase::Startup
            }
            // The gateway closes the connection.
            PgWireFrontendMessage::CancelRequest(_) => return,
            PgWireFrontendMessage::Startup(_) => phase = Phase::Typed,
            PgWireFrontendMessage::PasswordMessageFamily(p) => {
                passwords += 1;
                password(p, passwords == 1, &mut scram);
            }
            _ => {}
        }
    }
}

/// Typed messages after authentication as the gateway reads them (under a 4 KiB cap here;
/// see [`next_frontend`] for the checks), and each Bind's parameters decoded as a session
/// decodes them: with the types the last Parse declared, every type a statement may infer,
/// in text and in binary.
pub fn gateway_message(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    let mut declared = Vec::new();
    while let Some(message) = next_frontend(&mut buf, Phase::Typed, 4096) {
        match message {
            PgWireFrontendMessage::Parse(p) => declared = p.type_oids,
            PgWireFrontendMessage::Bind(b) => bind_parameters(&b, &declared),
            _ => {}
        }
    }
}

/// The next message as the gateway decodes it in `phase` under `cap`, or None where the
/// gateway would wait or close. Checks that it took no more bytes than the cap allows, and
/// that it encodes again: to the bytes it came from when these are ASCII (pgwire reads
/// strings lossily, and a startup packet's parameters into a map, so other bytes may
/// change), and in any case to bytes that decode and encode to themselves.
fn next_frontend(buf: &mut BytesMut, phase: Phase, cap: usize) -> Option<PgWireFrontendMessage> {
    let before = buf.clone();
    let message = decode_frontend(buf, phase, ProtocolVersion::PROTOCOL3_0, cap).ok()??;
    let used = &before[..before.len() - buf.len()];
    assert!(used.len() <= cap + usize::from(phase == Phase::Typed), "a message above the cap was accepted");
    let encoded = encode(&message);
    if used.is_ascii() && !matches!(message, PgWireFrontendMessage::Startup(_)) {
        assert_eq!(&encoded[..], used, "{message:?} encodes to other bytes");
    }
    if !encoded.is_empty() {
        let mut again = encoded.clone();
        let decoded = decode_frontend(&mut again, phase, ProtocolVersion::PROTOCOL3_0, usize::MAX);
        let Ok(Some(decoded)) = decoded else { panic!("{message:?} encodes to {encoded:?}, which does not decode") };
        assert!(again.is_empty() && encode(&decoded) == encoded, "{message:?} is not stable under encoding");
    }
    Some(message)
}

fn encode(message: &PgWireFrontendMessage) -> BytesMut {
    let mut out = BytesMut::new();
    if let Err(e) = message.encode(&mut out) {
        panic!("{message:?} does not encode: {e}");
    }
    out
}

/// A password message as the startup handlers read it: a cleartext password, and SCRAM's
/// first message (checked by the gateway, then the server's client-first step) or a later
/// one (the client-final step).
fn password(message: PasswordMessageFamily, first: bool, scram: &mut Option<ScramServerAuthWaitingForClientFinal>) {
    let PasswordMessageFamily::Raw(body) = message else { return };
    let _ = PasswordMessageFamily::Raw(body.clone()).into_password();
    if first {
        let checked = sasl_initial_response(PasswordMessageFamily::Raw(body));
        let Some(data) = checked.and_then(|m| m.into_sasl_initial_response()).ok().and_then(|m| m.data) else {
            return;
        };
        let secret = ScramSecret::SaltedPassword { salt: vec![7; 16], salted_password: vec![9; 32] };
        *scram = ScramServerAuth::new().on_client_first_message_with_secret(&data, secret).ok().map(|(_, next)| next);
    } else if let (Some(server), Ok(response)) = (scram, PasswordMessageFamily::Raw(body).into_sasl_response()) {
        let _ = server.on_client_final_message(&response.data);
    }
}

/// The types a statement may give a parameter (`None`: unknown, text).
const INFERRED: [Option<SqlType>; 18] = [
    None,
    Some(SqlType::Bool),
    Some(SqlType::Int),
    Some(SqlType::Int2),
    Some(SqlType::Int4),
    Some(SqlType::Numeric),
    Some(SqlType::Float),
    Some(SqlType::Float4),
    Some(SqlType::Text),
    Some(SqlType::Bytes),
    Some(SqlType::Date),
    Some(SqlType::Timestamp),
    Some(SqlType::TimestampTz),
    Some(SqlType::Uuid),
    Some(SqlType::Interval),
    Some(SqlType::Jsonb),
    Some(SqlType::Array(ArrayElem::Int)),
    Some(SqlType::Array(ArrayElem::Text)),
];

fn bind_parameters(bind: &Bind, declared: &[u32]) {
    for (i, value) in bind.parameters.iter().enumerate() {
        let Some(bytes) = value else { continue };
        let oid = declared.get(i).copied().unwrap_or(0);
        for inferred in INFERRED {
            for binary in [false, true] {
                let _ = decode_param(bytes, oid, inferred, binary);
            }
        }
    }
}
