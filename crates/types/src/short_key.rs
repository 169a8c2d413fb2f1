//! Encoded keys as the stores keep them (this crate's in-memory store and a replica's row
//! store): short ones inline, so a B-tree search compares bytes held in the node, a few
//! machine words at a time, instead of following a pointer per comparison (an integer
//! primary key encodes to 9 bytes). Long ones are shared, so a clone never copies bytes.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Longest key kept inline (the whole value then takes 24 bytes, like a `Vec<u8>`).
const INLINE: usize = 22;

/// An encoded key, ordered, compared and hashed bytewise (as its `as_slice`), so a map
/// keyed by it can be searched with a `&[u8]`.
#[derive(Clone)]
pub enum ShortKey {
    /// `bytes` past `len` are zero.
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(Arc<[u8]>),
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

impl Deref for ShortKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for ShortKey {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for ShortKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Hash for ShortKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
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
            (ShortKey::Inline { len: a, bytes: x }, ShortKey::Inline { len: b, bytes: y }) => {
                inline_order(*a, x).cmp(&inline_order(*b, y))
            }
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

    #[test]
    fn a_map_of_short_keys_is_searched_by_byte_slices() {
        use std::collections::hash_map::DefaultHasher;
        let keys: Vec<Vec<u8>> = vec![vec![3], vec![1, 2], vec![9; 40], vec![1; 22], vec![]];
        let map: std::collections::BTreeMap<ShortKey, usize> =
            keys.iter().enumerate().map(|(i, k)| (ShortKey::from(k.as_slice()), i)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get(k.as_slice()), Some(&i));
            let hash = |h: &dyn Fn(&mut DefaultHasher)| {
                let mut s = DefaultHasher::new();
                h(&mut s);
                s.finish()
            };
            // `Borrow<[u8]>` requires the key to hash like its bytes.
            assert_eq!(hash(&|s| ShortKey::from(k.as_slice()).hash(s)), hash(&|s| k.as_slice().hash(s)));
        }
        assert_eq!(map.get(&[7u8][..]), None);
        let long = ShortKey::from(&[5u8; 30][..]);
        let copy = long.clone();
        assert!(
            matches!((&long, &copy), (ShortKey::Heap(a), ShortKey::Heap(b)) if Arc::ptr_eq(a, b)),
            "a clone shares long bytes"
        );
    }
}
