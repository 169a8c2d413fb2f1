//! Encoded keys as the in-memory store keeps them: short ones inline, so a B-tree search
//! compares bytes held in the node, a few machine words at a time, instead of following a
//! pointer and calling `memcmp` per comparison (an integer primary key encodes to 9 bytes).

use std::cmp::Ordering;
use std::fmt;

/// Longest key kept inline (the whole value then takes 24 bytes, like a `Vec<u8>`).
const INLINE: usize = 22;

/// An encoded key, ordered bytewise (as its `as_slice`).
#[derive(Clone)]
pub(crate) enum ShortKey {
    /// `bytes` past `len` are zero.
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl ShortKey {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            ShortKey::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or(bytes),
            ShortKey::Heap(b) => b,
        }
    }
}

/// The zero-padded inline bytes as big-endian words, then the length: ordered like the keys.
/// (Where the padded bytes first differ, either both bytes are the keys' own, or the shorter
/// key has run out and its padding zero is below the other's byte; padded bytes that are all
/// equal mean one key is a prefix of the other, and the shorter one sorts first.)
fn inline_order(len: u8, bytes: &[u8; INLINE]) -> (u64, u64, u64, u8) {
    let word = |at: usize| {
        let mut w = [0; 8];
        for (dst, src) in w.iter_mut().zip(bytes.iter().skip(at)) {
            *dst = *src;
        }
        u64::from_be_bytes(w)
    };
    (word(0), word(8), word(16), len)
}

impl From<&[u8]> for ShortKey {
    fn from(key: &[u8]) -> Self {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key);
                ShortKey::Inline { len, bytes }
            }
            _ => ShortKey::Heap(key.into()),
        }
    }
}

impl PartialEq for ShortKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ShortKey {}

impl PartialOrd for ShortKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ShortKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (ShortKey::Inline { len: a, bytes: x }, ShortKey::Inline { len: b, bytes: y }) => inline_order(*a, x).cmp(&inline_order(*b, y)),
            _ => self.as_slice().cmp(other.as_slice()),
        }
    }
}

impl fmt::Debug for ShortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_keys_keep_their_bytes_and_byte_order() {
        assert_eq!(std::mem::size_of::<ShortKey>(), 24);
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![1],
            vec![1, 0, 5],
            vec![1; 8],
            vec![1; 9],
            [vec![1; 8], vec![0]].concat(),
            [vec![1; 8], vec![2]].concat(),
            [vec![1; 16], vec![0, 3]].concat(),
            vec![1; 21],
            vec![1; 22],
            [vec![1; 21], vec![0]].concat(),
            vec![1; 23],
            vec![1; 40],
            vec![2],
            vec![0xFF; 22],
            vec![0xFF; 30],
        ];
        for a in &samples {
            let ka = ShortKey::from(a.as_slice());
            assert_eq!(ka.as_slice(), a.as_slice());
            assert_eq!(matches!(ka, ShortKey::Inline { .. }), a.len() <= INLINE);
            for b in &samples {
                let kb = ShortKey::from(b.as_slice());
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(ka == kb, a == b);
            }
        }
    }
}
