//! Per-shard tally of ST1R votes and the five cases of Basil §4.2 (stage 1, step 4).

use pistou_core::{Quorums, ShardId};
use pistou_wire::{AbortCert, ReplicaSigned, ShardVotes, St1Vote, Vote};
use std::collections::BTreeSet;

/// What one shard's votes amount to so far.
#[allow(clippy::large_enum_variant)] // short-lived, never stored in bulk
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardOutcome {
    /// Not enough votes yet.
    Pending,
    /// Case 3: 5f+1 commit votes, a V-CERT; durable without ST2.
    FastCommit,
    /// Case 1: a CommitQuorum (3f+1 ≤ commits < 5f+1); must be logged with ST2.
    SlowCommit,
    /// Cases 4 and 5: 3f+1 abort votes, or one abort vote with a conflicting C-CERT.
    FastAbort(AbortCert),
    /// Case 2: an AbortQuorum (f+1 ≤ aborts < 3f+1); must be logged with ST2.
    SlowAbort,
}

/// Authenticated votes of one shard for one transaction. Callers check signatures and
/// conflict proofs before adding a vote.
#[derive(Clone, Debug)]
pub struct ShardTally {
    shard: ShardId,
    q: Quorums,
    voted: BTreeSet<u32>,
    commits: Vec<ReplicaSigned<St1Vote>>,
    aborts: Vec<ReplicaSigned<St1Vote>>,
    conflict_abort: Option<AbortCert>,
}

impl ShardTally {
    pub fn new(shard: ShardId, q: Quorums) -> Self {
        ShardTally { shard, q, voted: BTreeSet::new(), commits: Vec::new(), aborts: Vec::new(), conflict_abort: None }
    }

    pub fn shard(&self) -> ShardId {
        self.shard
    }

    pub fn has_voted(&self, index: u32) -> bool {
        self.voted.contains(&index)
    }

    /// Adds a vote from a replica of this shard; a second vote from the same replica is
    /// ignored (a correct replica never changes its vote). Returns whether it counted.
    pub fn add(&mut self, vote: ReplicaSigned<St1Vote>, conflict: Option<AbortCert>) -> bool {
        if vote.signer.shard != self.shard || !self.voted.insert(vote.signer.index) {
            return false;
        }
        match vote.body.vote {
            Vote::Commit => self.commits.push(vote),
            Vote::Abort => {
                if self.conflict_abort.is_none() {
                    self.conflict_abort = conflict;
                }
                self.aborts.push(vote);
            }
        }
        true
    }

    /// Classifies the tally. `timed_out` is set once the fast-path timeout has expired:
    /// from then on a slow-path quorum is taken as soon as it exists.
    pub fn outcome(&self, timed_out: bool) -> ShardOutcome {
        let (commits, aborts) = (self.commits.len(), self.aborts.len());
        if let Some(cert) = &self.conflict_abort {
            return ShardOutcome::FastAbort(cert.clone());
        }
        if aborts >= self.q.abort_fast() {
            return ShardOutcome::FastAbort(AbortCert::Fast(self.abort_votes()));
        }
        if commits >= self.q.commit_fast() {
            return ShardOutcome::FastCommit;
        }
        let outstanding = self.q.n() - self.voted.len();
        let fast_commit_possible = aborts == 0;
        let fast_abort_possible = aborts + outstanding >= self.q.abort_fast();
        if timed_out || (!fast_commit_possible && !fast_abort_possible) {
            // With both quorums present a correct client may choose either; commit wins.
            if commits >= self.q.commit_quorum() {
                return ShardOutcome::SlowCommit;
            }
            if aborts >= self.q.abort_quorum() {
                return ShardOutcome::SlowAbort;
            }
        }
        ShardOutcome::Pending
    }

    /// Every vote counted so far.
    pub fn votes(&self) -> impl Iterator<Item = &ReplicaSigned<St1Vote>> {
        self.commits.iter().chain(self.aborts.iter())
    }

    /// Drops the vote of replica `index` (its signature turned out bad); a later, valid vote
    /// from it can still count.
    pub fn remove(&mut self, index: u32) {
        self.voted.remove(&index);
        self.commits.retain(|v| v.signer.index != index);
        self.aborts.retain(|v| v.signer.index != index);
    }

    pub fn commit_votes(&self) -> ShardVotes {
        ShardVotes { shard: self.shard, votes: self.commits.clone() }
    }

    pub fn abort_votes(&self) -> ShardVotes {
        ShardVotes { shard: self.shard, votes: self.aborts.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::{ReplicaId, TxnId};

    fn vote(i: u32, v: Vote) -> ReplicaSigned<St1Vote> {
        ReplicaSigned {
            signer: ReplicaId { shard: ShardId(0), index: i },
            body: St1Vote { txn: TxnId([1; 32]), vote: v },
            sig: None,
        }
    }

    fn tally(votes: &[Vote]) -> ShardTally {
        let mut t = ShardTally::new(ShardId(0), Quorums::new(1));
        for (i, v) in votes.iter().enumerate() {
            assert!(t.add(vote(i as u32, *v), None));
        }
        t
    }

    use Vote::{Abort as A, Commit as C};

    #[test]
    fn case3_commit_fast_path_needs_all_5f_plus_1() {
        assert_eq!(tally(&[C; 6]).outcome(false), ShardOutcome::FastCommit);
        // 5 commits, one replica silent: wait for the fast path until the timeout...
        assert_eq!(tally(&[C; 5]).outcome(false), ShardOutcome::Pending);
        // ...then the slow path.
        assert_eq!(tally(&[C; 5]).outcome(true), ShardOutcome::SlowCommit);
    }

    #[test]
    fn case1_commit_slow_path_with_commit_quorum() {
        // One abort makes the fast path impossible: 3f+1 commits suffice at once.
        assert_eq!(tally(&[C, C, C, C, A]).outcome(false), ShardOutcome::SlowCommit);
        // Only 3 commits (< 3f+1) and one abort: not enough for anything yet.
        assert_eq!(tally(&[C, C, C, A]).outcome(true), ShardOutcome::Pending);
    }

    #[test]
    fn case4_abort_fast_path_with_3f_plus_1_aborts() {
        assert!(matches!(tally(&[A, A, A, A]).outcome(false), ShardOutcome::FastAbort(AbortCert::Fast(_))));
    }

    #[test]
    fn case2_abort_slow_path_with_abort_quorum() {
        // 2 aborts, 3 commits, 1 outstanding: neither fast path is reachable, no CQ.
        assert_eq!(tally(&[A, A, C, C, C]).outcome(false), ShardOutcome::SlowAbort);
        // 2 aborts with 4 outstanding: a fast abort is still possible, so wait...
        assert_eq!(tally(&[A, A]).outcome(false), ShardOutcome::Pending);
        // ...unless the fast-path timeout expired.
        assert_eq!(tally(&[A, A]).outcome(true), ShardOutcome::SlowAbort);
        // A single abort is never enough (Byzantine independence).
        assert_eq!(tally(&[A, C, C]).outcome(true), ShardOutcome::Pending);
    }

    #[test]
    fn case5_one_abort_with_conflict_certificate() {
        let mut t = ShardTally::new(ShardId(0), Quorums::new(1));
        let cert = AbortCert::Fast(ShardVotes { shard: ShardId(0), votes: vec![] });
        t.add(vote(0, A), Some(cert.clone()));
        assert_eq!(t.outcome(false), ShardOutcome::FastAbort(cert));
    }

    #[test]
    fn duplicate_and_foreign_votes_do_not_count() {
        let mut t = ShardTally::new(ShardId(0), Quorums::new(1));
        assert!(t.add(vote(0, C), None));
        assert!(!t.add(vote(0, A), None));
        let mut other = vote(1, C);
        other.signer.shard = ShardId(1);
        assert!(!t.add(other, None));
        assert_eq!(t.commit_votes().votes.len(), 1);
        assert!(t.abort_votes().votes.is_empty());
    }

    #[test]
    fn commit_wins_when_both_slow_quorums_exist() {
        // f = 1: 4 commits and 2 aborts = a CQ and an AQ at once.
        assert_eq!(tally(&[C, C, C, C, A, A]).outcome(false), ShardOutcome::SlowCommit);
    }
}
