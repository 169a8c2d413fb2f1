// Thresholds are written as in the papers (`>= f+1`), not as `> f`.
#![allow(clippy::int_plus_one)]

/// Quorum sizes of the leaderless engine for n = 5f+1 replicas per shard (Basil §4,
/// and the quorum table in SYSTEM.md). Every threshold in the protocol comes from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quorums {
    pub f: usize,
}

impl Quorums {
    pub fn new(f: usize) -> Self {
        Quorums { f }
    }
    /// Replicas per shard.
    pub fn n(&self) -> usize {
        5 * self.f + 1
    }
    /// READ is sent to at least 2f+1 replicas.
    pub fn read_fanout(&self) -> usize {
        2 * self.f + 1
    }
    /// Replicas a RANGE-READ goes to, and replies a client decides over (Pesto §5.5).
    pub fn range_fanout(&self) -> usize {
        3 * self.f + 1
    }
    /// A read completes with f+1 replies (one of them correct).
    pub fn read_replies(&self) -> usize {
        self.f + 1
    }
    /// A prepared version is valid when f+1 replicas return the same one.
    pub fn prepared_vouchers(&self) -> usize {
        self.f + 1
    }
    /// Commit fast path: unanimous 5f+1 commit votes.
    pub fn commit_fast(&self) -> usize {
        self.n()
    }
    /// CommitQuorum (n+f+1)/2 = 3f+1: commit slow path.
    pub fn commit_quorum(&self) -> usize {
        3 * self.f + 1
    }
    /// Abort fast path: 3f+1 abort votes make commit impossible.
    pub fn abort_fast(&self) -> usize {
        3 * self.f + 1
    }
    /// AbortQuorum f+1: abort slow path.
    pub fn abort_quorum(&self) -> usize {
        self.f + 1
    }
    /// n-f matching ST2R form the V-CERT of S_log.
    pub fn st2_quorum(&self) -> usize {
        self.n() - self.f
    }
    /// Any f+1 replicas include a correct one: whom to ask for something a correct replica
    /// can prove (a missing transaction, a decision).
    pub fn one_correct(&self) -> usize {
        self.f + 1
    }
    /// Fallback view change (Basil §5 step 2 (i)): a view held by 3f+1 replicas moves a
    /// replica to the next view, starting an election there.
    pub fn view_election(&self) -> usize {
        3 * self.f + 1
    }
    /// Fallback view change (Basil §5 step 2 (ii)): a newer view held by f+1 replicas (one
    /// correct) is caught up to.
    pub fn view_catch_up(&self) -> usize {
        self.f + 1
    }
    /// ELECTFB messages that elect a fallback leader, and exactly as many prove its DECFB
    /// (Basil §5 step 3).
    pub fn election(&self) -> usize {
        4 * self.f + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_for_f1_match_the_paper() {
        let q = Quorums::new(1);
        assert_eq!(q.n(), 6);
        assert_eq!(q.read_fanout(), 3);
        assert_eq!(q.read_replies(), 2);
        assert_eq!(q.commit_fast(), 6);
        assert_eq!(q.commit_quorum(), 4);
        assert_eq!(q.abort_fast(), 4);
        assert_eq!(q.abort_quorum(), 2);
        assert_eq!(q.st2_quorum(), 5);
        assert_eq!((q.one_correct(), q.view_election(), q.view_catch_up(), q.election()), (2, 4, 2, 5));
    }

    #[test]
    fn commit_and_abort_quorums_cannot_both_be_correct_only() {
        // A CommitQuorum and an abort fast quorum always overlap in >= f+1 replicas,
        // so at least one correct replica would have to change its vote.
        for f in 0..5 {
            let q = Quorums::new(f);
            assert!(q.commit_quorum() + q.abort_fast() >= q.n() + q.f + 1);
            // Two CommitQuorums overlap in a correct replica.
            assert!(2 * q.commit_quorum() >= q.n() + q.f + 1);
        }
    }
}
