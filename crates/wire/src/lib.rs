//! Pistou's wire protocol: the messages of the leaderless engine (Basil §3–4), their
//! canonical encoding (postcard over types whose maps are sorted vectors), the
//! authenticated envelopes, and length-prefixed framing with a hard size limit.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

mod codec;
mod framing;
mod handshakes;
mod messages;
mod signed;

pub use codec::{canonical_bytes, decode_message, encode_message, with_canonical_bytes, WireError};
pub use framing::{frame_codec, FrameCodec, MessageWriter, DEFAULT_MAX_FRAME_BYTES};
pub use handshakes::{HandshakeTicket, Handshakes};
pub use messages::*;
pub use signed::{ClientSigned, ReplicaSigned, Signable};
