use std::collections::BTreeMap;

/// Why an input was dropped. Every rejection is counted so operators (and tests) can see
/// what hostile or broken peers are sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    BadSignature,
    MissingSignature,
    UnknownClient,
    NotMember,
    WrongShard,
    FutureTimestamp,
    MalformedTxn,
    BadCertificate,
    BadTally,
    /// A read version above the reading transaction's timestamp (Alg. 1 line 6).
    Misbehavior,
    ClientMismatch,
    Unexpected,
    /// An SS-PROP that breaks the rules of a correct client (size, order, f+1 voters).
    BadSnapshot,
    /// A snapshot query that would exceed the parked-query bounds.
    TooManyParked,
    /// A parked snapshot query whose transactions were never supplied.
    SnapshotExpired,
    /// A timestamp below the garbage-collection watermark (Pesto App. B.3): a read, a new
    /// transaction, or a transaction this replica may already have forgotten.
    BelowWatermark,
    /// An ST1 whose client already owns `MAX_UNDECIDED_PER_CLIENT` undecided transactions
    /// here (`quota.rs`).
    TooManyUndecided,
    /// A read or ST1 while this replica catches up after a restart (`catchup.rs`).
    CatchingUp,
    /// A long range read beyond what one client, or all, may have waiting (`range_jobs.rs`).
    TooManyLongReads,
    /// A long range read nobody waits for any more, dropped or stopped (`range_jobs.rs`).
    LongReadAbandoned,
}

impl RejectReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            RejectReason::BadSignature => "bad-signature",
            RejectReason::MissingSignature => "missing-signature",
            RejectReason::UnknownClient => "unknown-client",
            RejectReason::NotMember => "not-a-member",
            RejectReason::WrongShard => "wrong-shard",
            RejectReason::FutureTimestamp => "future-timestamp",
            RejectReason::MalformedTxn => "malformed-transaction",
            RejectReason::BadCertificate => "bad-certificate",
            RejectReason::BadTally => "bad-vote-tally",
            RejectReason::Misbehavior => "misbehavior",
            RejectReason::ClientMismatch => "client-mismatch",
            RejectReason::Unexpected => "unexpected-message",
            RejectReason::BadSnapshot => "bad-snapshot-proposal",
            RejectReason::TooManyParked => "too-many-parked-queries",
            RejectReason::SnapshotExpired => "snapshot-sync-expired",
            RejectReason::BelowWatermark => "below-gc-watermark",
            RejectReason::TooManyUndecided => "too-many-undecided-transactions",
            RejectReason::CatchingUp => "catching-up",
            RejectReason::TooManyLongReads => "too-many-long-reads",
            RejectReason::LongReadAbandoned => "long-read-abandoned",
        }
    }
}

/// Counters of rejected inputs, by reason.
#[derive(Clone, Debug, Default)]
pub struct Rejections {
    counts: BTreeMap<RejectReason, u64>,
}

impl Rejections {
    pub fn record(&mut self, reason: RejectReason) {
        *self.counts.entry(reason).or_default() += 1;
        tracing::debug!(reason = reason.as_str(), "rejected input");
    }
    pub fn count(&self, reason: RejectReason) -> u64 {
        self.counts.get(&reason).copied().unwrap_or(0)
    }
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = (RejectReason, u64)> + '_ {
        self.counts.iter().map(|(r, c)| (*r, *c))
    }
}
