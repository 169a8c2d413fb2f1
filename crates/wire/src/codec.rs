use crate::messages::Message;
use serde::Serialize;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("message has {0} trailing bytes")]
    TrailingBytes(usize),
}

/// The canonical encoding of a value: postcard. Canonical because every type we hash or
/// sign has one encoding per value (no maps with unspecified order: sets and maps travel
/// as sorted vectors, checked on receipt).
pub fn canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // postcard cannot fail on our types (no maps with non-string keys issues, no
    // unsized sequences); an empty vector would only make a signature check fail.
    postcard::to_allocvec(value).unwrap_or_default()
}

pub fn encode_message(msg: &Message) -> Vec<u8> {
    canonical_bytes(msg)
}

/// Decodes one message from a whole frame. Hostile input is fine: postcard is bounded
/// by the frame length and our message types are not recursive, so nesting depth is fixed.
/// Only the canonical encoding is accepted: postcard also decodes overlong varints
/// (`0x80 0x00` for 0), and every other encoding of a value is longer than the canonical
/// one, so a frame longer than its message's canonical size is refused.
pub fn decode_message(frame: &[u8]) -> Result<Message, WireError> {
    let (msg, rest) = postcard::take_from_bytes::<Message>(frame).map_err(|e| WireError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(WireError::TrailingBytes(rest.len()));
    }
    let canonical = postcard::serialize_with_flavor::<Message, postcard::ser_flavors::Size, usize>(&msg, Default::default());
    if canonical.ok() != Some(frame.len()) {
        return Err(WireError::Malformed("not the canonical encoding (overlong integer)".into()));
    }
    Ok(msg)
}
