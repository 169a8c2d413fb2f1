use crate::codec::append_canonical;
use crate::messages::Message;
use bytes::BytesMut;
use tokio_util::codec::{Encoder, LengthDelimitedCodec};

/// Largest frame a peer may send (length prefix included checks): 8 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 8 << 20;

pub type FrameCodec = LengthDelimitedCodec;

/// The frame's length prefix.
const LENGTH_BYTES: usize = 4;

/// Frames are a 4-byte big-endian length followed by the payload. A length above
/// `max_frame_bytes` is a framing error that closes only that connection.
pub fn frame_codec(max_frame_bytes: usize) -> FrameCodec {
    LengthDelimitedCodec::builder().length_field_length(LENGTH_BYTES).max_frame_length(max_frame_bytes).new_codec()
}

/// Writes messages in the frames of [`frame_codec`] straight into the connection's write
/// buffer, without first encoding each into a vector of its own (a replica sends a
/// reply for every request, so that copy and allocation were per message).
#[derive(Debug, Clone, Copy)]
pub struct MessageWriter {
    max_frame_bytes: usize,
}

impl MessageWriter {
    pub fn new(max_frame_bytes: usize) -> Self {
        MessageWriter { max_frame_bytes }
    }
}

impl Encoder<&Message> for MessageWriter {
    type Error = std::io::Error;

    fn encode(&mut self, msg: &Message, dst: &mut BytesMut) -> std::io::Result<()> {
        let start = dst.len();
        dst.extend_from_slice(&[0; LENGTH_BYTES]);
        let encoded = append_canonical(msg, dst);
        let len = dst.len() - start - LENGTH_BYTES;
        match (encoded, u32::try_from(len)) {
            (Ok(()), Ok(prefix)) if len <= self.max_frame_bytes => {
                dst[start..start + LENGTH_BYTES].copy_from_slice(&prefix.to_be_bytes());
                Ok(())
            }
            _ => {
                dst.truncate(start);
                Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "message larger than the frame limit"))
            }
        }
    }
}
