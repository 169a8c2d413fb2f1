use tokio_util::codec::LengthDelimitedCodec;

/// Largest frame a peer may send (length prefix included checks): 8 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 8 << 20;

pub type FrameCodec = LengthDelimitedCodec;

/// Frames are a 4-byte big-endian length followed by the payload. A length above
/// `max_frame_bytes` is a framing error that closes only that connection.
pub fn frame_codec(max_frame_bytes: usize) -> FrameCodec {
    LengthDelimitedCodec::builder().length_field_length(4).max_frame_length(max_frame_bytes).new_codec()
}
