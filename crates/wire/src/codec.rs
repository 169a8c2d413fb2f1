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
pub fn decode_message(frame: &[u8]) -> Result<Message, WireError> {
    let (msg, rest) = postcard::take_from_bytes::<Message>(frame).map_err(|e| WireError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(WireError::TrailingBytes(rest.len()));
    }
    Ok(msg)
}
