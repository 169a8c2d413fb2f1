//! Timestamp arithmetic the store needs and `pistou-core` does not offer.

use pistou_core::{ClientId, Timestamp};

/// The smallest timestamp strictly greater than `ts` (saturating at [`Timestamp::MAX`]).
///
/// The version cap turns "refuse reads at or below version v" into "refuse reads below
/// `successor(v)`", which is the form [`crate::RowStore::oldest_readable`] reports.
pub(crate) fn successor(ts: Timestamp) -> Timestamp {
    if let Some(seq) = ts.seq.checked_add(1) {
        return Timestamp { seq, ..ts };
    }
    if let Some(client) = ts.client.0.checked_add(1) {
        return Timestamp { time: ts.time, client: ClientId(client), seq: 0 };
    }
    match ts.time.checked_add(1) {
        Some(time) => Timestamp { time, client: ClientId(0), seq: 0 },
        None => Timestamp::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_is_the_next_timestamp() {
        let ts = Timestamp { time: 5, client: ClientId(2), seq: 7 };
        assert_eq!(successor(ts), Timestamp { time: 5, client: ClientId(2), seq: 8 });
        let ts = Timestamp { time: 5, client: ClientId(2), seq: u64::MAX };
        assert_eq!(successor(ts), Timestamp { time: 5, client: ClientId(3), seq: 0 });
        let ts = Timestamp { time: 5, client: ClientId(u64::MAX), seq: u64::MAX };
        assert_eq!(successor(ts), Timestamp::at(6));
        assert_eq!(successor(Timestamp::MAX), Timestamp::MAX);
        for ts in [Timestamp::GENESIS, Timestamp::at(9), Timestamp { time: 1, client: ClientId(u64::MAX), seq: 3 }] {
            assert!(successor(ts) > ts);
        }
    }
}
