//! The uuid type: values are `Value::Text` in PostgreSQL's canonical output form (lowercase,
//! hyphenated 8-4-4-4-12), so text order is PostgreSQL's byte order; and `gen_random_uuid()`,
//! whose values every replica computes alike from the statement's random seed.

use crate::error::{err, Result, SqlState};

/// Bytes of a uuid.
const UUID_LEN: usize = 16;

/// Parses uuid input as PostgreSQL's `uuid_in` does: 32 hex digits, optionally in braces, with
/// a hyphen allowed after any group of four digits (but not at the end); nothing else, not
/// even blanks.
pub fn parse(s: &str) -> Option<[u8; UUID_LEN]> {
    let mut rest = s.as_bytes();
    let braces = rest.first() == Some(&b'{');
    if braces {
        rest = rest.get(1..)?;
    }
    let mut out = [0u8; UUID_LEN];
    for (i, byte) in out.iter_mut().enumerate() {
        let (pair, tail) = rest.split_at_checked(2)?;
        let text = std::str::from_utf8(pair).ok()?;
        if !pair.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        *byte = u8::from_str_radix(text, 16).ok()?;
        rest = tail;
        if i % 2 == 1 && i < UUID_LEN - 1 {
            if let Some(tail) = rest.strip_prefix(b"-") {
                rest = tail;
            }
        }
    }
    if braces {
        rest = rest.strip_prefix(b"}")?;
    }
    rest.is_empty().then_some(out)
}

/// PostgreSQL's output form of a uuid.
pub fn format(bytes: &[u8; UUID_LEN]) -> String {
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The canonical text of uuid input `s` (22P02 when it is not one).
pub fn canonical(s: &str) -> Result<String> {
    match parse(s) {
        Some(bytes) => Ok(format(&bytes)),
        None => err(SqlState::InvalidTextRepresentation, format!("invalid input syntax for type uuid: \"{s}\"")),
    }
}

/// Whether `s` is a uuid in canonical form (what a store may hold).
pub fn is_canonical(s: &str) -> bool {
    parse(s).is_some_and(|b| format(&b) == s)
}

/// The random seed of one statement: `secret` (the client's) hashed with what makes the
/// statement unique (its transaction's timestamp and its number in the transaction), so
/// that statements never share values and only the client can foresee them.
pub fn statement_seed(secret: &[u8; 32], statement: &[u8]) -> [u8; 32] {
    *blake3::keyed_hash(secret, statement).as_bytes()
}

/// The random values one statement execution draws (`gen_random_uuid()`): the `n`-th call
/// gives a version-4 uuid made of the first 16 bytes of BLAKE3 keyed by the statement's seed
/// over `n`. The client picks the seed (`ExecContext::random_seed`) and sends it with the
/// statement, so every replica computes the same values; the seed is derived from a secret
/// of the client, so the values cannot be guessed by anyone else.
#[derive(Debug)]
pub struct StatementRandom {
    seed: [u8; 32],
    drawn: std::cell::Cell<u64>,
}

impl StatementRandom {
    pub fn new(seed: [u8; 32]) -> Self {
        StatementRandom { seed, drawn: std::cell::Cell::new(0) }
    }

    /// The next value of `gen_random_uuid()` in this statement.
    pub fn next_uuid(&self) -> String {
        let n = self.drawn.get();
        self.drawn.set(n.wrapping_add(1));
        let hash = blake3::keyed_hash(&self.seed, &n.to_le_bytes());
        let mut bytes = [0u8; UUID_LEN];
        bytes.copy_from_slice(&hash.as_bytes()[..UUID_LEN]);
        // RFC 4122 version 4, variant 10.
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        format(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_forms_are_postgresql_s() {
        let want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for ok in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(canonical(ok).ok().as_deref(), Some(want), "{ok}");
        }
        for bad in [
            "",
            " a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11 ",
            "a0eebc999c0b4ef8bb6d6bb9bd380a1",
            "a0eebc999c0b4ef8bb6d6bb9bd380a111",
            "a0eebc999c0b4ef8bb6d6bb9bd380a1-",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "+0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "é0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
        assert!(is_canonical(want));
        assert!(!is_canonical("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"));
    }

    #[test]
    fn random_uuids_are_version_4_distinct_and_determined_by_the_seed() {
        let a = StatementRandom::new([7; 32]);
        let b = StatementRandom::new([7; 32]);
        let c = StatementRandom::new([8; 32]);
        let drawn: Vec<String> = (0..100).map(|_| a.next_uuid()).collect();
        let again: Vec<String> = (0..100).map(|_| b.next_uuid()).collect();
        assert_eq!(drawn, again, "the same seed gives the same values on every replica");
        assert_ne!(drawn[0], c.next_uuid(), "another seed gives other values");
        let distinct: std::collections::BTreeSet<&String> = drawn.iter().collect();
        assert_eq!(distinct.len(), drawn.len());
        for u in &drawn {
            assert!(is_canonical(u), "{u}");
            assert_eq!(&u[14..15], "4", "version 4: {u}");
            assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "variant 10: {u}");
        }
    }
}
