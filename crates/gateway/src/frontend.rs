//! Frontend messages off the wire: the length prefix against the connection's cap, then the
//! layout of the whole message, before pgwire decodes it. pgwire's decoders trust their input:
//! a short body panics them, a string without its terminator makes them read on into the next
//! message, and bytes after the last field are taken for the next message. So only one whole
//! message, split off the stream, whose layout has been checked here reaches them. Pure: the
//! fuzz targets `gateway_startup` and `gateway_message` drive it (docs/testing.md).

use bytes::BytesMut;
use pgwire::error::PgWireError;
use pgwire::messages::startup::PasswordMessageFamily;
use pgwire::messages::{DecodeContext, PgWireFrontendMessage, ProtocolVersion, SslNegotiationMetaMessage};
use std::io;

/// Largest message before a connection has authenticated: a startup packet (PostgreSQL
/// takes at most 10,000 bytes) or a password exchange.
pub const PRE_AUTH_MESSAGE_BYTES: usize = 16 * 1024;

const SSL_REQUEST_CODE: u32 = 80_877_103;
const GSS_ENC_REQUEST_CODE: u32 = 80_877_104;
const CANCEL_REQUEST_CODE: u32 = 80_877_102;

/// What a connection reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its first packet: an SSL or GSS encryption request; anything else is left in the
    /// buffer (answered `SslNegotiation(None)`) to be read again in [`Phase::Startup`].
    First,
    /// A startup packet or a cancel request.
    Startup,
    /// Typed messages: the password exchange, then queries.
    Typed,
}

/// Decodes the message at the front of `src`: `Ok(None)` until all of it has arrived. A
/// message whose length field (which counts itself, not the type byte) exceeds
/// `max_message` is refused before it is buffered, and a malformed one is refused whole; a
/// message returned consumed exactly its own bytes (none for `SslNegotiation(None)`).
pub fn decode_frontend(
    src: &mut BytesMut,
    phase: Phase,
    version: ProtocolVersion,
    max_message: usize,
) -> Result<Option<PgWireFrontendMessage>, PgWireError> {
    let typed = phase == Phase::Typed;
    let offset = usize::from(typed);
    let Some(&[a, b, c, d]) = src.get(offset..offset + 4) else { return Ok(None) };
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if len > max_message {
        return Err(PgWireError::MessageTooLarge(max_message, len));
    }
    // A typed message holds at least its length; a startup packet also a code or version.
    if len < if typed { 4 } else { 8 } {
        return Err(invalid(format!("invalid message length {len}")));
    }
    if src.len() < offset + len {
        return Ok(None);
    }
    let whole = if typed {
        typed_layout(src[0], &src[5..offset + len])
    } else {
        let code = u32::from_be_bytes([src[4], src[5], src[6], src[7]]);
        match phase {
            Phase::First if code != SSL_REQUEST_CODE && code != GSS_ENC_REQUEST_CODE => {
                return Ok(Some(PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::None)));
            }
            Phase::First => len == 8,
            _ if code == CANCEL_REQUEST_CODE => cancel_layout(&src[8..len], version),
            _ => startup_layout(&src[8..len]),
        }
    };
    let mut frame = src.split_to(offset + len);
    if !whole {
        return Err(invalid(match phase {
            Phase::Typed => format!("invalid message format (type '{}')", frame[0].escape_ascii()),
            _ => "invalid startup packet layout".to_string(),
        }));
    }
    let mut ctx = DecodeContext::new(version);
    ctx.awaiting_frontend_ssl = phase == Phase::First;
    ctx.awaiting_frontend_startup = phase != Phase::Typed;
    match PgWireFrontendMessage::decode(&mut frame, &ctx)? {
        // The layout checks leave pgwire nothing to stop short of or to read past.
        Some(message) if frame.is_empty() => Ok(Some(message)),
        _ => Err(invalid("message decoded differently from its layout".to_string())),
    }
}

/// The first password message of a SCRAM exchange, checked and read as a
/// SASLInitialResponse: the mechanism's name, then the client-first message's length (-1:
/// none) and bytes. pgwire's SCRAM handler reads it without checking its layout.
pub fn sasl_initial_response(message: PasswordMessageFamily) -> Result<PasswordMessageFamily, PgWireError> {
    let body = match message {
        PasswordMessageFamily::Raw(body) => body,
        other => return Ok(other),
    };
    let mut fields = Fields(&body);
    if !(fields.cstring() && fields.value() && fields.0.is_empty()) {
        return Err(invalid("invalid SASLInitialResponse layout".to_string()));
    }
    PasswordMessageFamily::Raw(body).into_sasl_initial_response().map(PasswordMessageFamily::SASLInitialResponse)
}

fn invalid(what: String) -> PgWireError {
    PgWireError::IoError(io::Error::new(io::ErrorKind::InvalidData, what))
}

/// Whether `body` is laid out as a typed message of type `tag`: every field complete and
/// nothing after the last. Types pgwire does not know are left for it to refuse.
fn typed_layout(tag: u8, body: &[u8]) -> bool {
    let mut f = Fields(body);
    let fields = match tag {
        // Query, CopyFail: a string.
        b'Q' | b'f' => f.cstring(),
        // Parse: statement name, query, parameter type OIDs.
        b'P' => f.cstring() && f.cstring() && f.array(4),
        // Bind: portal, statement, parameter formats, parameter values, result formats.
        b'B' => f.cstring() && f.cstring() && f.array(2) && f.values() && f.array(2),
        // Close, Describe: what ('S' or 'P'), its name.
        b'C' | b'D' => f.take(1) && f.cstring(),
        // Execute: portal, row limit.
        b'E' => f.cstring() && f.take(4),
        // CopyData, the password family (read in context by the startup handlers): any bytes.
        b'd' | b'p' => f.take(body.len()),
        // Flush, Sync, Terminate, CopyDone: nothing.
        b'H' | b'S' | b'X' | b'c' => true,
        _ => return true,
    };
    fields && f.0.is_empty()
}

/// A startup packet after its version: name and value strings, then one terminating zero
/// byte, which is the last (as PostgreSQL requires).
fn startup_layout(body: &[u8]) -> bool {
    let mut f = Fields(body);
    loop {
        match f.0 {
            [0] => return true,
            [] | [0, ..] => return false,
            _ => {}
        }
        if !(f.cstring() && f.cstring()) {
            return false;
        }
    }
}

/// A cancel request after its code: the process id, then the secret key (4 bytes in
/// protocol 3.0, 4 to 256 since 3.2).
fn cancel_layout(body: &[u8], version: ProtocolVersion) -> bool {
    let key = body.len().saturating_sub(4);
    body.len() >= 4
        && match version {
            ProtocolVersion::PROTOCOL3_0 => key == 4,
            _ => (4..=256).contains(&key),
        }
}

/// A cursor over a message body's fields.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take(&mut self, n: usize) -> bool {
        match self.0.get(n..) {
            Some(rest) => {
                self.0 = rest;
                true
            }
            None => false,
        }
    }

    /// A zero-terminated string.
    fn cstring(&mut self) -> bool {
        self.0.iter().position(|&b| b == 0).is_some_and(|end| self.take(end + 1))
    }

    fn u16(&mut self) -> Option<u16> {
        let &[a, b, ..] = self.0 else { return None };
        self.0 = &self.0[2..];
        Some(u16::from_be_bytes([a, b]))
    }

    /// A 16-bit count, then that many items of `size` bytes.
    fn array(&mut self, size: usize) -> bool {
        self.u16().is_some_and(|n| self.take(usize::from(n) * size))
    }

    /// A length (-1: NULL) and that many bytes.
    fn value(&mut self) -> bool {
        let &[a, b, c, d, ..] = self.0 else { return false };
        self.0 = &self.0[4..];
        match i32::from_be_bytes([a, b, c, d]) {
            -1 => true,
            len => usize::try_from(len).is_ok_and(|len| self.take(len)),
        }
    }

    /// Bind's parameter values: a 16-bit count, then each [`Fields::value`].
    fn values(&mut self) -> bool {
        self.u16().is_some_and(|n| (0..n).all(|_| self.value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(tag: u8, body: &[u8]) -> BytesMut {
        let mut m = BytesMut::from(&[tag][..]);
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn decode(buf: &mut BytesMut, phase: Phase) -> Result<Option<PgWireFrontendMessage>, PgWireError> {
        decode_frontend(buf, phase, ProtocolVersion::PROTOCOL3_0, 1024)
    }

    #[test]
    fn short_or_overlong_bodies_are_refused_where_pgwire_would_panic_or_read_on() {
        // pgwire reads Parse's parameter count from a body that has none (a panic), and a
        // Sync with a body leaves it behind as the next message.
        for (tag, body) in [
            (b'P', &b"\0SELECT 1\0"[..]),
            (b'B', b"\0\0\0\x01\0\0"),
            (b'B', b"\0\0\0\0\0\x01\xff\xff\xff\xfe\0\0"),
            (b'E', b"\0\0\0"),
            (b'D', b""),
            (b'S', b"Q\0\0\0\x05\0"),
            (b'Q', b"SELECT 1"),
            (b'Q', b"SELECT 1\0X"),
        ] {
            let mut buf = typed(tag, body);
            buf.extend_from_slice(b"Q\0\0\0\x05\0");
            assert!(decode(&mut buf, Phase::Typed).is_err(), "{} {body:?} accepted", tag as char);
        }
    }

    #[test]
    fn one_message_consumes_its_own_bytes_only() {
        let mut buf = typed(b'Q', b"SELECT 1\0");
        buf.extend_from_slice(&typed(b'S', b""));
        assert!(
            matches!(decode(&mut buf, Phase::Typed), Ok(Some(PgWireFrontendMessage::Query(q))) if q.query == "SELECT 1")
        );
        assert!(matches!(decode(&mut buf, Phase::Typed), Ok(Some(PgWireFrontendMessage::Sync(_)))));
        assert!(buf.is_empty());
        let mut partial = typed(b'Q', b"SELECT 1\0");
        partial.truncate(7);
        assert!(matches!(decode(&mut partial, Phase::Typed), Ok(None)));
    }

    #[test]
    fn startup_packets_need_their_terminator_and_nothing_after_it() {
        let packet = |params: &[u8]| {
            let mut m = BytesMut::new();
            m.extend_from_slice(&(params.len() as u32 + 8).to_be_bytes());
            m.extend_from_slice(&196_608u32.to_be_bytes());
            m.extend_from_slice(params);
            m
        };
        let mut good = packet(b"user\0alice\0database\0db\0\0");
        assert!(matches!(decode(&mut good, Phase::First), Ok(Some(PgWireFrontendMessage::SslNegotiation(_)))));
        assert!(matches!(decode(&mut good, Phase::Startup), Ok(Some(PgWireFrontendMessage::Startup(_)))));
        assert!(good.is_empty());
        for bad in [&b"user\0alice\0"[..], b"user\0alice", b"user\0alice\0\0x", b"", b"\0\0"] {
            assert!(decode(&mut packet(bad), Phase::Startup).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_cap_applies_before_the_message_is_buffered() {
        let mut buf = BytesMut::from(&b"Q\0\0\x04\x01"[..]);
        assert!(matches!(decode(&mut buf, Phase::Typed), Err(PgWireError::MessageTooLarge(1024, 1025))));
        let mut ssl = BytesMut::from(&b"\0\0\0\x10\x04\xd2\x16\x2f\0\0\0\0\0\0\0\0"[..]);
        assert!(decode(&mut ssl, Phase::First).is_err(), "an SSL request of 16 bytes");
    }

    #[test]
    fn a_sasl_initial_response_is_checked_before_pgwire_reads_it() {
        let raw = |b: &[u8]| PasswordMessageFamily::Raw(BytesMut::from(b));
        assert!(sasl_initial_response(raw(b"SCRAM-SHA-256\0\0\0\0\x03abc")).is_ok());
        assert!(sasl_initial_response(raw(b"SCRAM-SHA-256\0\xff\xff\xff\xff")).is_ok());
        for bad in [&b"SCRAM-SHA-256\0"[..], b"SCRAM-SHA-256\0\0\0\0\x09abc", b"SCRAM-SHA-256\0\xff\xff\xff\xfe", b"x"]
        {
            assert!(sasl_initial_response(raw(bad)).is_err(), "{bad:?} accepted");
        }
    }
}
