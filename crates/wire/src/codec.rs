use crate::messages::Message;
use bytes::BufMut;
use serde::Serialize;
use std::cell::RefCell;

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
    with_canonical_bytes(value, <[u8]>::to_vec)
}

/// Calls `f` with the canonical encoding of `value`, written into a per-thread buffer
/// that keeps its capacity: signing hashes and ids are computed for every message sent and
/// received, and encoding each into a fresh vector grown by doubling was a measurable
/// share of a replica's allocations (docs/benchmarks.md, Fig. 8).
pub fn with_canonical_bytes<T: Serialize + ?Sized, R>(value: &T, f: impl FnOnce(&[u8]) -> R) -> R {
    // Taken out of the cell for the call, so that a nested use would get a buffer of its
    // own instead of a borrow error.
    let mut buf = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    buf.clear();
    // postcard cannot fail on our types (no maps with non-string keys issues, no
    // unsized sequences); an empty encoding would only make a signature check fail.
    if append_canonical(value, &mut buf).is_err() {
        buf.clear();
    }
    let out = f(&buf);
    if buf.capacity() <= SCRATCH_KEEP_BYTES {
        SCRATCH.with(|s| *s.borrow_mut() = buf);
    }
    out
}

/// Appends the canonical encoding of `value` to `out`.
pub(crate) fn append_canonical<T: Serialize + ?Sized, B: BufMut>(value: &T, out: &mut B) -> postcard::Result<()> {
    postcard::serialize_with_flavor(value, Append(out))
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Larger scratch buffers (a huge message) are dropped after use rather than kept.
const SCRATCH_KEEP_BYTES: usize = 1 << 20;

/// The postcard flavor that appends to a borrowed buffer.
struct Append<'a, B: BufMut>(&'a mut B);

impl<B: BufMut> postcard::ser_flavors::Flavor for Append<'_, B> {
    type Output = ();

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.put_slice(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.put_u8(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
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
    let canonical =
        postcard::serialize_with_flavor::<Message, postcard::ser_flavors::Size, usize>(&msg, Default::default());
    if canonical.ok() != Some(frame.len()) {
        return Err(WireError::Malformed("not the canonical encoding (overlong integer)".into()));
    }
    Ok(msg)
}
