//! Signature and certificate checks. Everything a replica or client accepts from the
//! network passes through here before it touches protocol state.

use crate::cc::conflicts;
use crate::rejects::RejectReason;
use pistou_core::{ClientId, ClusterConfig, ReplicaId, ShardId, TxnId};
use pistou_crypto::{
    verify, verify_batch, verify_batched_many, BatchSignature, Hash, PublicKey, SecretKey, Signature, VerifyCache,
};
use pistou_wire::{
    AbortCert, ClientSigned, CommitCert, Decision, ReplicaSigned, ShardVotes, Signable, St1Vote, St2, St2Reply,
    TxnMeta, Vote,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Capacity of the verified-batch-root cache (Basil §4.4).
const VERIFY_CACHE_CAPACITY: usize = 1 << 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.as_str())]
pub struct AuthError(pub RejectReason);

fn fail<T>(r: RejectReason) -> Result<T, AuthError> {
    Err(AuthError(r))
}

/// Signs a client request (no signature when the cluster runs with `crypto = false`).
pub fn sign_client<T: Signable>(client: ClientId, key: Option<&SecretKey>, body: T) -> ClientSigned<T> {
    let sig = key.map(|k| k.sign(&body.signing_hash()));
    ClientSigned { client, body, sig }
}

pub struct Authenticator {
    config: Arc<ClusterConfig>,
    client_keys: BTreeMap<ClientId, PublicKey>,
    cache: VerifyCache,
    /// Client signatures already verified in one batch, consumed by `check_client`.
    preverified: std::collections::HashSet<(ClientId, Hash, Signature)>,
}

impl Authenticator {
    pub fn new(config: Arc<ClusterConfig>) -> Self {
        let client_keys = config.client_keys();
        Authenticator {
            config,
            client_keys,
            cache: VerifyCache::new(VERIFY_CACHE_CAPACITY),
            preverified: std::collections::HashSet::new(),
        }
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    pub fn shared_config(&self) -> Arc<ClusterConfig> {
        self.config.clone()
    }

    pub fn crypto(&self) -> bool {
        self.config.crypto
    }

    pub fn cache(&self) -> &VerifyCache {
        &self.cache
    }

    /// See [`VerifyCache::remember_own`]: our own signatures need no verification.
    pub fn remember_own(&mut self, signer: PublicKey, bs: &BatchSignature) {
        self.cache.remember_own(signer, bs);
    }

    /// A request signed by a known client.
    pub fn check_client<T: Signable>(&mut self, req: &ClientSigned<T>) -> Result<(), AuthError> {
        let Some(pk) = self.client_keys.get(&req.client) else {
            return fail(RejectReason::UnknownClient);
        };
        if !self.crypto() {
            return Ok(());
        }
        let Some(sig) = &req.sig else { return fail(RejectReason::MissingSignature) };
        let hash = req.body.signing_hash();
        if self.preverified.remove(&(req.client, hash, *sig)) {
            return Ok(());
        }
        verify(pk, &hash, sig).or(fail(RejectReason::BadSignature))
    }

    /// A request the replica never shows to anyone else (a point or range read, or the
    /// release of its read timestamps). Over a connection authenticated as its client
    /// (`session`, see `Replica::open_session`) it needs no signature of its own.
    pub fn check_client_read<T: Signable>(
        &mut self,
        req: &ClientSigned<T>,
        session: Option<ClientId>,
    ) -> Result<(), AuthError> {
        if req.sig.is_none() && session == Some(req.client) && self.client_keys.contains_key(&req.client) {
            return Ok(());
        }
        self.check_client(req)
    }

    /// Verifies many client signatures with one ed25519 batch verification; `check_client`
    /// then accepts exactly these (client, message, signature) triples without verifying
    /// again. If the batch fails, nothing is recorded and each request is checked alone.
    pub fn preverify_clients(&mut self, items: Vec<(ClientId, Hash, Signature)>) {
        self.preverified.clear();
        if !self.crypto() || items.len() < 2 {
            return;
        }
        let keyed: Vec<(PublicKey, &(ClientId, Hash, Signature))> =
            items.iter().filter_map(|it| self.client_keys.get(&it.0).map(|pk| (*pk, it))).collect();
        let batch: Vec<(&PublicKey, &[u8], &Signature)> = keyed.iter().map(|(pk, (_, h, s))| (pk, &h[..], s)).collect();
        if verify_batch(&batch).is_ok() {
            self.preverified.extend(keyed.iter().map(|(_, it)| **it));
        }
    }

    /// A reply from a member replica, with a valid batched signature.
    pub fn check_replica<T: Signable>(&mut self, reply: &ReplicaSigned<T>) -> Result<(), AuthError> {
        self.check_replicas(std::slice::from_ref(reply))
    }

    /// Checks many replica signatures at once (batch verification for cache misses).
    pub fn check_replicas<T: Signable>(&mut self, replies: &[ReplicaSigned<T>]) -> Result<(), AuthError> {
        self.check_replicas_each(replies).into_iter().collect()
    }

    /// Like [`Self::check_replicas`] but with one result per reply, so that callers can
    /// verify lazily in one batch and drop only the bad ones.
    pub fn check_replicas_each<T: Signable>(&mut self, replies: &[ReplicaSigned<T>]) -> Vec<Result<(), AuthError>> {
        let crypto = self.crypto();
        let items: Vec<(ReplicaId, Hash, Option<&BatchSignature>)> = replies
            .iter()
            .map(|r| (r.signer, if crypto { r.body.signing_hash() } else { Hash::default() }, r.sig.as_ref()))
            .collect();
        self.check_replica_hashes(&items)
    }

    /// Like [`Self::check_replicas_each`], for replies whose signing hash the caller kept
    /// (signer, signing hash, signature) instead of the replies themselves.
    pub fn check_replica_hashes(
        &mut self,
        replies: &[(ReplicaId, Hash, Option<&BatchSignature>)],
    ) -> Vec<Result<(), AuthError>> {
        let mut results: Vec<Result<(), AuthError>> = vec![Ok(()); replies.len()];
        let mut items: Vec<(PublicKey, Hash, &BatchSignature, usize)> = Vec::with_capacity(replies.len());
        for (i, (signer, hash, sig)) in replies.iter().enumerate() {
            let Some(pk) = self.config.replica_key(*signer) else {
                results[i] = fail(RejectReason::NotMember);
                continue;
            };
            if !self.crypto() {
                continue;
            }
            match sig {
                Some(sig) => items.push((*pk, *hash, *sig, i)),
                None => results[i] = fail(RejectReason::MissingSignature),
            }
        }
        let refs: Vec<(&PublicKey, &Hash, &BatchSignature)> = items.iter().map(|(pk, h, s, _)| (pk, h, *s)).collect();
        for (res, (_, _, _, i)) in verify_batched_many(&refs, &mut self.cache).into_iter().zip(&items) {
            if res.is_err() {
                results[*i] = fail(RejectReason::BadSignature);
            }
        }
        results
    }

    /// At least `min` signed votes `want` on `txn` from distinct replicas of `sv.shard`.
    pub fn check_shard_votes(&mut self, txn: &TxnId, sv: &ShardVotes, want: Vote, min: usize) -> Result<(), AuthError> {
        let n = self.config.quorums().n();
        if sv.votes.len() < min || sv.votes.len() > n {
            return fail(RejectReason::BadTally);
        }
        let mut signers = BTreeSet::new();
        for v in &sv.votes {
            if v.signer.shard != sv.shard || !signers.insert(v.signer.index) {
                return fail(RejectReason::BadTally);
            }
            if v.body.txn != *txn || v.body.vote != want {
                return fail(RejectReason::BadTally);
            }
        }
        self.check_replicas(&sv.votes)
    }

    /// n−f ST2R from distinct replicas of S_log agreeing on `decision` and on the view.
    fn check_st2_quorum(
        &mut self,
        meta: &TxnMeta,
        txn: &TxnId,
        decision: Decision,
        replies: &[ReplicaSigned<St2Reply>],
    ) -> Result<(), AuthError> {
        let q = self.config.quorums();
        let Some(log) = meta.log_shard(txn) else { return fail(RejectReason::MalformedTxn) };
        if replies.len() < q.st2_quorum() || replies.len() > q.n() {
            return fail(RejectReason::BadCertificate);
        }
        let view = replies[0].body.view_decision;
        let mut signers = BTreeSet::new();
        for r in replies {
            let ok = r.signer.shard == log
                && signers.insert(r.signer.index)
                && r.body.txn == *txn
                && r.body.decision == decision
                && r.body.view_decision == view;
            if !ok {
                return fail(RejectReason::BadCertificate);
            }
        }
        self.check_replicas(replies)
    }

    /// C-CERT for the transaction described by `meta`.
    pub fn check_commit_cert(&mut self, meta: &TxnMeta, cert: &CommitCert) -> Result<(), AuthError> {
        let txn = meta.id();
        match cert {
            CommitCert::Fast(tallies) => {
                let shards: Vec<ShardId> = tallies.iter().map(|t| t.shard).collect();
                if shards != meta.shards {
                    return fail(RejectReason::BadCertificate);
                }
                let n = self.config.quorums().commit_fast();
                for t in tallies {
                    self.check_shard_votes(&txn, t, Vote::Commit, n).or(fail(RejectReason::BadCertificate))?;
                }
                Ok(())
            }
            CommitCert::Slow(replies) => self.check_st2_quorum(meta, &txn, Decision::Commit, replies),
        }
    }

    /// A-CERT for the transaction described by `meta`.
    pub fn check_abort_cert(&mut self, meta: &TxnMeta, cert: &AbortCert) -> Result<(), AuthError> {
        let txn = meta.id();
        match cert {
            AbortCert::Fast(sv) => {
                if !meta.shards.contains(&sv.shard) {
                    return fail(RejectReason::BadCertificate);
                }
                let min = self.config.quorums().abort_fast();
                self.check_shard_votes(&txn, sv, Vote::Abort, min).or(fail(RejectReason::BadCertificate))
            }
            AbortCert::Conflict { vote, conflict } => {
                self.check_conflict_vote(meta, &txn, vote, &conflict.meta, &conflict.cert)
            }
            AbortCert::Slow(replies) => self.check_st2_quorum(meta, &txn, Decision::Abort, replies),
        }
    }

    /// An abort vote whose conflict proof makes it a fast abort (Basil §4.2, case 5): the
    /// vote is genuine, the other transaction committed, and the two really conflict.
    pub fn check_conflict_vote(
        &mut self,
        meta: &TxnMeta,
        txn: &TxnId,
        vote: &ReplicaSigned<St1Vote>,
        other: &TxnMeta,
        other_cert: &CommitCert,
    ) -> Result<(), AuthError> {
        if !meta.shards.contains(&vote.signer.shard) || vote.body.txn != *txn || vote.body.vote != Vote::Abort {
            return fail(RejectReason::BadCertificate);
        }
        other.validate(&self.config).or(fail(RejectReason::BadCertificate))?;
        if !conflicts(meta, other) {
            return fail(RejectReason::BadCertificate);
        }
        self.check_replica(vote)?;
        self.check_commit_cert(other, other_cert)
    }

    /// Does ST2's vote tally justify its decision (Basil §4.2 step 6)? Commit needs a
    /// CommitQuorum of commit votes from every shard of T; abort needs an AbortQuorum of
    /// abort votes from one of them.
    pub fn check_st2_justified(&mut self, txn: &TxnId, st2: &St2) -> Result<(), AuthError> {
        let q = self.config.quorums();
        match st2.decision {
            Decision::Commit => {
                let shards: Vec<ShardId> = st2.tallies.iter().map(|t| t.shard).collect();
                if shards != st2.meta.shards {
                    return fail(RejectReason::BadTally);
                }
                for t in &st2.tallies {
                    self.check_shard_votes(txn, t, Vote::Commit, q.commit_quorum())?;
                }
                Ok(())
            }
            Decision::Abort => {
                let [t] = st2.tallies.as_slice() else { return fail(RejectReason::BadTally) };
                if !st2.meta.shards.contains(&t.shard) {
                    return fail(RejectReason::BadTally);
                }
                self.check_shard_votes(txn, t, Vote::Abort, q.abort_quorum())
            }
        }
    }

    /// Is `id` a replica of a configured shard?
    /// Whether `id` is a configured client.
    pub fn is_client(&self, id: ClientId) -> bool {
        self.client_keys.contains_key(&id)
    }

    pub fn is_member(&self, id: ReplicaId) -> bool {
        self.config.replica(id).is_some()
    }
}
