//! Byz-serializability oracle: replay the committed transactions of correct clients in
//! timestamp order (MVTSO's serialization order) on a model key-value store and check that
//! every read returned exactly what the model holds at that point.

use crate::workload::TxnLog;
use pistou_core::{Key, Value};
use pistou_wire::Decision;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OracleReport {
    pub committed: usize,
    pub reads_checked: usize,
}

/// `logs` are the correct clients' transactions (their reads are checked); `others` are the
/// writes of committed transactions of Byzantine clients (applied, not checked), as the
/// replicas applied them.
pub fn check(logs: &[TxnLog], others: &[TxnLog]) -> Result<OracleReport, String> {
    // (transaction, are its reads checked?)
    let mut committed: Vec<(&TxnLog, bool)> = logs
        .iter()
        .map(|l| (l, true))
        .chain(others.iter().map(|l| (l, false)))
        .filter(|(l, _)| l.decision == Some(Decision::Commit))
        .collect();
    committed.sort_by_key(|(l, _)| l.ts);
    if let Some(w) = committed.windows(2).find(|w| w[0].0.ts == w[1].0.ts) {
        return Err(format!("two committed transactions share timestamp {}", w[0].0.ts));
    }
    let mut model: BTreeMap<Key, Option<Value>> = BTreeMap::new();
    let mut report = OracleReport {
        committed: logs.iter().filter(|l| l.decision == Some(Decision::Commit)).count(),
        ..Default::default()
    };
    for (t, checked) in committed {
        for (key, seen) in t.reads.iter().filter(|_| checked) {
            // The simulated workload reads every key before writing it, so each read must
            // see the state left by the transactions serialized before this one.
            let expected = model.get(key).cloned().flatten();
            if *seen != expected {
                return Err(format!(
                    "transaction {} (client {}) read {}={:?} but serial replay gives {:?}",
                    t.ts,
                    t.client,
                    String::from_utf8_lossy(key),
                    seen,
                    expected
                ));
            }
            report.reads_checked += 1;
        }
        for (k, v) in &t.writes {
            model.insert(k.clone(), v.clone());
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::{ClientId, Timestamp};

    fn log(t: u64, reads: &[(&str, Option<u8>)], writes: &[(&str, u8)]) -> TxnLog {
        TxnLog {
            client: 0,
            ts: Timestamp { time: t, client: ClientId(1), seq: t },
            reads: reads.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.map(|b| vec![b]))).collect(),
            writes: writes.iter().map(|(k, v)| (k.as_bytes().to_vec(), Some(vec![*v]))).collect(),
            decision: Some(Decision::Commit),
            fast: true,
            id: None,
        }
    }

    #[test]
    fn accepts_a_serial_history_in_timestamp_order() {
        let logs = vec![log(2, &[("x", Some(1))], &[("x", 2)]), log(1, &[("x", None)], &[("x", 1)])];
        assert_eq!(check(&logs, &[]).unwrap().committed, 2);
    }

    #[test]
    fn rejects_a_stale_read() {
        // T2 (ts 2) read x as absent although T1 (ts 1) wrote it: not serializable.
        let logs = vec![log(1, &[], &[("x", 1)]), log(2, &[("x", None)], &[])];
        assert!(check(&logs, &[]).unwrap_err().contains("read x"));
    }

    #[test]
    fn byzantine_writes_are_applied_but_not_checked() {
        // A Byzantine client's committed write at ts 1 is what a correct client must read.
        let byz = log(1, &[("x", Some(77))], &[("x", 5)]);
        assert!(check(&[log(2, &[("x", Some(5))], &[])], std::slice::from_ref(&byz)).is_ok());
        assert!(check(&[log(2, &[("x", None)], &[])], &[byz]).is_err());
    }

    #[test]
    fn ignores_aborted_transactions() {
        let mut aborted = log(1, &[], &[("x", 9)]);
        aborted.decision = Some(Decision::Abort);
        let logs = vec![aborted, log(2, &[("x", None)], &[])];
        assert!(check(&logs, &[]).is_ok());
    }
}
