//! Authenticated client connections. Pesto (§3) assumes clients are authenticated and signs
//! only replica messages; its prototype authenticates client messages with MACs. Requests a
//! replica never shows to anyone else (point and range reads) need no signature of their
//! own when they arrive over such a connection.
//!
//! Handshake: the client sends an ephemeral X25519 public value signed with its ed25519 key
//! (the signature, and the replica it names, are checked by the caller); the replica answers
//! with its own ephemeral value. Both derive the session key from the Diffie–Hellman secret
//! and the handshake transcript. Every later client frame carries a tag: keyed BLAKE3 over
//! the frame's sequence number on the connection and its bytes, so a frame cannot be
//! forged, altered, replayed, reordered or moved to another connection (each connection has
//! fresh ephemeral values, hence its own key). Replies need no tag: they are signed.

use crate::{CryptoError, Hash};
use curve25519_dalek::montgomery::MontgomeryPoint;

/// Bytes of the tag appended to every client frame of a session.
pub const TAG_LEN: usize = 16;

const KEY_CONTEXT: &str = "pistou 2026 client session key v1";

/// One side's ephemeral X25519 secret for one connection.
pub struct Ephemeral {
    secret: [u8; 32],
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        self.secret.fill(0);
    }
}

impl Ephemeral {
    /// A fresh secret from OS randomness.
    pub fn generate() -> Result<Ephemeral, CryptoError> {
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).map_err(|_| CryptoError::NoRandomness)?;
        Ok(Ephemeral { secret })
    }

    /// A deterministic secret (tests and the simulator).
    pub fn from_seed(seed: [u8; 32]) -> Ephemeral {
        Ephemeral { secret: seed }
    }

    /// The public value sent to the peer.
    pub fn public(&self) -> [u8; 32] {
        MontgomeryPoint::mul_base_clamped(self.secret).to_bytes()
    }

    /// The session key shared with the peer whose public value is `peer`, bound to the
    /// handshake `transcript`. A peer value of small order (shared secret zero) is refused:
    /// it would let the peer fix the key.
    pub fn agree(&self, peer: &[u8; 32], transcript: &Hash) -> Result<SessionKey, CryptoError> {
        let shared = MontgomeryPoint(*peer).mul_clamped(self.secret).to_bytes();
        if shared == [0u8; 32] {
            return Err(CryptoError::BadPublicKey);
        }
        let mut material = [0u8; 64];
        material[..32].copy_from_slice(&shared);
        material[32..].copy_from_slice(transcript);
        let key = blake3::derive_key(KEY_CONTEXT, &material);
        material.fill(0);
        Ok(SessionKey { key, next: 0 })
    }
}

/// The key of one connection and the sequence number of its next client frame. The client
/// seals with its copy, the replica opens with its own; both count frames the same way.
pub struct SessionKey {
    key: [u8; 32],
    next: u64,
}

impl Drop for SessionKey {
    fn drop(&mut self) {
        self.key.fill(0);
    }
}

impl SessionKey {
    fn tag(&self, seq: u64, body: &[u8]) -> [u8; TAG_LEN] {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(&seq.to_le_bytes());
        h.update(body);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&h.finalize().as_bytes()[..TAG_LEN]);
        tag
    }

    /// The next frame: `body` followed by its tag. (It borrows the body, so one encoding
    /// of a request can be sealed for every replica's session.)
    pub fn seal(&mut self, body: &[u8]) -> Vec<u8> {
        let tag = self.tag(self.next, body);
        self.next += 1;
        let mut frame = Vec::with_capacity(body.len() + TAG_LEN);
        frame.extend_from_slice(body);
        frame.extend_from_slice(&tag);
        frame
    }

    /// The body of the next frame if its tag is right. Any failure ends the session: the
    /// caller closes the connection.
    pub fn open<'f>(&mut self, frame: &'f [u8]) -> Result<&'f [u8], CryptoError> {
        let split = frame.len().checked_sub(TAG_LEN).ok_or(CryptoError::BadTag)?;
        let (body, tag) = frame.split_at(split);
        let expected = self.tag(self.next, body);
        // Constant time: a timing difference must not reveal how much of a guess was right.
        let diff = expected.iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(CryptoError::BadTag);
        }
        self.next += 1;
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (SessionKey, SessionKey) {
        let (c, r) = (Ephemeral::from_seed([1; 32]), Ephemeral::from_seed([2; 32]));
        let transcript = [9u8; 32];
        (c.agree(&r.public(), &transcript).unwrap(), r.agree(&c.public(), &transcript).unwrap())
    }

    #[test]
    fn both_sides_derive_the_same_key_and_frames_open_in_order() {
        let (mut client, mut replica) = pair();
        let a = client.seal(b"first");
        let b = client.seal(b"second");
        assert_eq!(replica.open(&a).unwrap(), b"first");
        assert_eq!(replica.open(&b).unwrap(), b"second");
    }

    #[test]
    fn altered_replayed_reordered_or_foreign_frames_fail() {
        let (mut client, mut replica) = pair();
        let a = client.seal(b"read");
        let b = client.seal(b"read");
        let mut altered = a.clone();
        altered[0] ^= 1;
        assert_eq!(replica.open(&altered), Err(CryptoError::BadTag));
        assert_eq!(replica.open(&b), Err(CryptoError::BadTag), "frame 1 presented as frame 0");
        assert_eq!(replica.open(&a).unwrap(), b"read");
        assert_eq!(replica.open(&a), Err(CryptoError::BadTag), "replay");
        assert_eq!(replica.open(&[0u8; 3]), Err(CryptoError::BadTag), "shorter than a tag");
        // Another handshake transcript gives another key.
        let (c, r) = (Ephemeral::from_seed([1; 32]), Ephemeral::from_seed([2; 32]));
        let mut other = r.agree(&c.public(), &[8u8; 32]).unwrap();
        assert_eq!(other.open(&a), Err(CryptoError::BadTag));
    }

    #[test]
    fn a_small_order_peer_value_is_refused() {
        let me = Ephemeral::from_seed([3; 32]);
        assert!(me.agree(&[0u8; 32], &[0u8; 32]).is_err());
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(me.agree(&one, &[0u8; 32]).is_err());
    }
}
