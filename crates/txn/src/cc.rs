//! Conflict rules shared by replicas (Alg. 1) and clients (checking conflict proofs).

use pistou_wire::TxnMeta;

/// Does committed transaction `other` make `t` non-serializable? True when `t` read a key
/// at a version older than `other`'s write of it while `other` is ordered before `t`
/// (Alg. 1 line 7), or `other` read a key older than `t`'s write of it while `t` is ordered
/// before `other` (Alg. 1 line 9).
pub fn conflicts(t: &TxnMeta, other: &TxnMeta) -> bool {
    let missed_write =
        t.read_set.iter().any(|r| other.write_of(&r.key).is_some() && r.version < other.ts && other.ts < t.ts);
    let broke_read =
        t.write_set.iter().any(|w| other.read_of(&w.key).is_some_and(|r| r.version < t.ts && t.ts < other.ts));
    missed_write || broke_read
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::{ClientId, Timestamp};
    use pistou_wire::{ReadEntry, WriteEntry};

    fn ts(t: u64) -> Timestamp {
        Timestamp { time: t, client: ClientId(1), seq: 0 }
    }
    fn meta(t: u64, reads: &[(&str, u64)], writes: &[&str]) -> TxnMeta {
        TxnMeta {
            ts: ts(t),
            read_set: reads.iter().map(|(k, v)| ReadEntry { key: k.as_bytes().to_vec(), version: ts(*v) }).collect(),
            write_set: writes.iter().map(|k| WriteEntry { key: k.as_bytes().to_vec(), value: Some(vec![1]) }).collect(),
            deps: vec![],
            predicates: Vec::new(),
            late: false,
            shards: vec![],
        }
    }

    #[test]
    fn missed_write_is_a_conflict() {
        // t read x@1 at ts 10; other wrote x at 5: t should have seen it.
        assert!(conflicts(&meta(10, &[("x", 1)], &[]), &meta(5, &[], &["x"])));
        // other wrote x at 12, after t: no conflict.
        assert!(!conflicts(&meta(10, &[("x", 1)], &[]), &meta(12, &[], &["x"])));
        // t read x@5, which is other's own write: no conflict.
        assert!(!conflicts(&meta(10, &[("x", 5)], &[]), &meta(5, &[], &["x"])));
    }

    #[test]
    fn broken_read_is_a_conflict() {
        // other (ts 20) read x@1; t writes x at 10, in between.
        assert!(conflicts(&meta(10, &[], &["x"]), &meta(20, &[("x", 1)], &[])));
        // other read x@15, newer than t's write at 10: no conflict.
        assert!(!conflicts(&meta(10, &[], &["x"]), &meta(20, &[("x", 15)], &[])));
        // other is older than t: no conflict.
        assert!(!conflicts(&meta(10, &[], &["x"]), &meta(5, &[("x", 1)], &[])));
        // disjoint keys.
        assert!(!conflicts(&meta(10, &[], &["y"]), &meta(20, &[("x", 1)], &[])));
    }
}
