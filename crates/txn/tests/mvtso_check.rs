//! Unit tests for every line of MVTSO-Check (Basil Alg. 1) and for the replica's handling of
//! reads, ST2 and writebacks, driving one real `Replica` with crafted messages.

use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId, ShardId, Timestamp, TxnId};
use pistou_crypto::SecretKey;
use pistou_txn::{sign_client, RejectReason, Replica};
use pistou_wire::{
    AbortReads, CommitCert, Decision, DecisionCert, Dep, Message, Prepare, ReadEntry, ReadRequest, ReplicaSigned,
    ShardVotes, Signable, St1Vote, St2, TxnMeta, Vote, WriteEntry, Writeback,
};
use std::sync::Arc;

const NOW: u64 = 1_000_000_000;

struct Fixture {
    config: Arc<ClusterConfig>,
    replica_keys: Vec<SecretKey>,
    client_key: SecretKey,
    replica: Replica,
}

fn fixture(crypto: bool) -> Fixture {
    let cluster =
        ClusterBuilder::new(1).crypto(crypto).delta_us(100_000).max_txn_age_us(10_000_000).reply_batch(4).build();
    let id = ReplicaId { shard: ShardId(0), index: 0 };
    let replica = Replica::new(cluster.config.clone(), id, Some(cluster.replica_key(id))).unwrap();
    let client_key = cluster.client_key(ClientId(1));
    let replica_keys = cluster.replica_keys.into_iter().flatten().collect();
    Fixture { config: cluster.config, replica_keys, client_key, replica }
}

trait CloneKey {
    fn clone_for_tests(&self) -> SecretKey;
}
impl CloneKey for SecretKey {
    fn clone_for_tests(&self) -> SecretKey {
        SecretKey::from_hex(&self.to_hex()).unwrap()
    }
}

fn ts(t: u64) -> Timestamp {
    Timestamp { time: NOW - 1_000_000 + t, client: ClientId(1), seq: t }
}

fn meta(t: u64, reads: &[(&str, u64)], writes: &[&str], deps: Vec<Dep>) -> TxnMeta {
    let mut read_set: Vec<ReadEntry> = reads
        .iter()
        .map(|(k, v)| ReadEntry {
            key: k.as_bytes().to_vec(),
            version: if *v == 0 { Timestamp::GENESIS } else { ts(*v) },
        })
        .collect();
    read_set.sort_by(|a, b| a.key.cmp(&b.key));
    let mut write_set: Vec<WriteEntry> = writes
        .iter()
        .map(|k| WriteEntry { key: k.as_bytes().to_vec(), value: Some(format!("{k}@{t}").into_bytes()) })
        .collect();
    write_set.sort_by(|a, b| a.key.cmp(&b.key));
    TxnMeta { ts: ts(t), read_set, write_set, deps, predicates: Vec::new(), late: false, shards: vec![ShardId(0)] }
}

impl Fixture {
    fn send(&mut self, msg: Message) -> Vec<Message> {
        self.replica.handle(NOW, 7, msg);
        self.replica.flush();
        self.replica.take_outputs().into_iter().map(|(_, m)| m).collect()
    }

    /// The vote on `m` and the blocker it names.
    fn prepare_blamed(&mut self, m: &TxnMeta) -> Option<(Vote, Option<TxnId>)> {
        let req = sign_client(ClientId(1), Some(&self.client_key), Prepare { meta: m.clone() });
        self.send(Message::Prepare(req)).into_iter().find_map(|out| match out {
            Message::PrepareReply { vote, blocker, .. } => Some((vote.body.vote, blocker)),
            _ => None,
        })
    }

    fn prepare(&mut self, m: &TxnMeta) -> Option<Vote> {
        let req = sign_client(ClientId(1), Some(&self.client_key), Prepare { meta: m.clone() });
        self.send(Message::Prepare(req)).into_iter().find_map(|out| match out {
            Message::PrepareReply { vote, .. } => Some(vote.body.vote),
            _ => None,
        })
    }

    fn read(&mut self, key: &str, at: Timestamp) -> Vec<Message> {
        let req =
            sign_client(ClientId(1), Some(&self.client_key), ReadRequest { key: key.as_bytes().to_vec(), ts: at });
        self.send(Message::Read(req))
    }

    /// A fast-path C-CERT signed by all six replicas.
    fn commit_cert(&self, m: &TxnMeta) -> CommitCert {
        let id = m.id();
        let votes = self
            .replica_keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let body = St1Vote { txn: id, vote: Vote::Commit };
                let signer = pistou_crypto::BatchSigner::new(k.clone_for_tests(), 1);
                ReplicaSigned {
                    signer: ReplicaId { shard: ShardId(0), index: i as u32 },
                    sig: Some(signer.sign_one(&body.signing_hash())),
                    body,
                }
            })
            .collect();
        CommitCert::Fast(vec![ShardVotes { shard: ShardId(0), votes }])
    }

    fn commit(&mut self, m: &TxnMeta) {
        let cert = self.commit_cert(m);
        let out = self.send(Message::Writeback(Writeback { meta: m.clone(), cert: DecisionCert::Commit(cert) }));
        assert!(matches!(out.as_slice(), [Message::WritebackAck { .. }]), "writeback not accepted: {out:?}");
    }
}

#[test]
fn line1_timestamp_beyond_clock_plus_delta_votes_abort() {
    let mut fx = fixture(true);
    let mut m = meta(1, &[], &["x"], vec![]);
    m.ts.time = NOW + 200_000; // delta is 100 ms
    assert_eq!(fx.prepare(&m), Some(Vote::Abort));
    let mut ok = meta(2, &[], &["x"], vec![]);
    ok.ts.time = NOW + 50_000; // within delta
    assert_eq!(fx.prepare(&ok), Some(Vote::Commit));
}

#[test]
fn line3_unknown_or_mismatched_dependency_votes_abort() {
    let mut fx = fixture(false);
    let ghost = Dep { txn: TxnId([7; 32]), key: b"x".to_vec(), version: ts(1) };
    assert_eq!(fx.prepare(&meta(5, &[("x", 1)], &[], vec![ghost])), Some(Vote::Abort));
    // A real prepared writer, but the dependency names a version it did not write.
    let w = meta(2, &[], &["y"], vec![]);
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let wrong = Dep { txn: w.id(), key: b"y".to_vec(), version: ts(3) };
    assert_eq!(fx.prepare(&meta(6, &[("y", 3)], &[], vec![wrong])), Some(Vote::Abort));
}

#[test]
fn line6_read_version_above_ts_is_misbehavior() {
    let mut fx = fixture(false);
    let mut m = meta(5, &[("x", 0)], &[], vec![]);
    m.read_set[0].version = ts(9);
    assert_eq!(fx.prepare(&m), None);
    assert_eq!(fx.replica.rejections().count(RejectReason::Misbehavior), 1);
}

#[test]
fn line7_read_missed_a_committed_write_votes_abort_with_proof() {
    let mut fx = fixture(true);
    let w = meta(3, &[], &["x"], vec![]);
    fx.commit(&w);
    // T (ts 5) read x at genesis, missing w's write at ts 3.
    let t = meta(5, &[("x", 0)], &["z"], vec![]);
    let req = sign_client(ClientId(1), Some(&fx.client_key), Prepare { meta: t });
    let out = fx.send(Message::Prepare(req));
    match out.as_slice() {
        [Message::PrepareReply { vote, conflict: Some(proof), blocker: None }] => {
            assert_eq!(vote.body.vote, Vote::Abort);
            assert_eq!(proof.meta, w, "the proof names the committed conflicting writer");
        }
        other => panic!("expected an abort with a conflict proof, got {other:?}"),
    }
}

#[test]
fn line7_read_missed_a_prepared_write_votes_abort_naming_it() {
    let mut fx = fixture(false);
    let w = meta(3, &[], &["x"], vec![]);
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    // The abort names the undecided writer, so that the client can finish it (Basil §5).
    assert_eq!(fx.prepare_blamed(&meta(5, &[("x", 0)], &[], vec![])), Some((Vote::Abort, Some(w.id()))));
    // Once the writer is decided there is nothing to finish: a committed one comes with
    // its proof instead.
    fx.commit(&w);
    assert_eq!(fx.prepare_blamed(&meta(6, &[("x", 0)], &["q"], vec![])), Some((Vote::Abort, None)));
    // A read of exactly a prepared version, declared as a dependency, is fine.
    let y = meta(7, &[], &["y"], vec![]);
    assert_eq!(fx.prepare(&y), Some(Vote::Commit));
    let dep = Dep { txn: y.id(), key: b"y".to_vec(), version: ts(7) };
    assert_eq!(fx.prepare(&meta(8, &[("y", 7)], &[], vec![dep])), None, "waits for its dependency");
}

#[test]
fn line7_write_after_ts_is_no_conflict() {
    let mut fx = fixture(false);
    fx.commit(&meta(8, &[], &["x"], vec![]));
    assert_eq!(fx.prepare(&meta(5, &[("x", 0)], &[], vec![])), Some(Vote::Commit));
}

#[test]
fn line9_write_under_a_later_readers_version_votes_abort() {
    let mut fx = fixture(false);
    // R (ts 8) read x at genesis and is prepared; W (ts 5) now writes x: R would miss it.
    assert_eq!(fx.prepare(&meta(8, &[("x", 0)], &["r"], vec![])), Some(Vote::Commit));
    assert_eq!(fx.prepare(&meta(5, &[], &["x"], vec![])), Some(Vote::Abort));
    // A writer after the reader is fine.
    assert_eq!(fx.prepare(&meta(9, &[], &["x"], vec![])), Some(Vote::Commit));
}

#[test]
fn line10_rts_above_ts_votes_abort_and_client_abort_releases_it() {
    let mut fx = fixture(false);
    fx.read("x", ts(8));
    assert_eq!(fx.prepare(&meta(5, &[], &["x"], vec![])), Some(Vote::Abort));
    // The reader aborts explicitly: its RTS goes, and a new writer below it commits.
    let req = sign_client(ClientId(1), None, AbortReads { ts: ts(8), keys: vec![b"x".to_vec()] });
    fx.send(Message::AbortReads(req));
    assert_eq!(fx.replica.rts_len(), 0);
    assert_eq!(fx.prepare(&meta(6, &[], &["x"], vec![])), Some(Vote::Commit));
}

#[test]
fn line14_prepared_writes_are_visible_to_reads() {
    let mut fx = fixture(false);
    let w = meta(3, &[], &["x"], vec![]);
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let out = fx.read("x", ts(9));
    match out.as_slice() {
        [Message::ReadReply { reply, committed: None }] => {
            let p = reply.body.prepared.as_ref().expect("prepared version visible");
            assert_eq!((p.version, p.txn), (ts(3), w.id()));
        }
        other => panic!("unexpected {other:?}"),
    }
    // A reader below the prepared version does not see it.
    let out = fx.read("x", ts(2));
    assert!(matches!(out.as_slice(), [Message::ReadReply { reply, .. }] if reply.body.prepared.is_none()));
}

#[test]
fn lines15_to_19_dependency_commit_or_abort_decides_the_vote() {
    let mut fx = fixture(true);
    let w = meta(3, &[], &["x"], vec![]);
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let dep = Dep { txn: w.id(), key: b"x".to_vec(), version: ts(3) };
    let t = meta(6, &[("x", 3)], &["y"], vec![dep.clone()]);
    assert_eq!(fx.prepare(&t), None, "no vote while the dependency is undecided");
    // Dependency commits: the waiting transaction votes commit.
    let cert = fx.commit_cert(&w);
    let out = fx.send(Message::Writeback(Writeback { meta: w.clone(), cert: DecisionCert::Commit(cert) }));
    assert!(out.iter().any(
        |m| matches!(m, Message::PrepareReply { vote, .. } if vote.body.txn == t.id() && vote.body.vote == Vote::Commit)
    ));
}

#[test]
fn lines16_to_18_aborted_dependency_aborts_and_unprepares() {
    let mut fx = fixture(false);
    let w = meta(3, &[], &["x"], vec![]);
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let dep = Dep { txn: w.id(), key: b"x".to_vec(), version: ts(3) };
    let t = meta(6, &[("x", 3)], &["y"], vec![dep]);
    assert_eq!(fx.prepare(&t), None);
    // Abort w with an A-CERT made of 4 abort votes (no crypto in this fixture).
    let votes = (0..4)
        .map(|i| ReplicaSigned {
            signer: ReplicaId { shard: ShardId(0), index: i },
            body: St1Vote { txn: w.id(), vote: Vote::Abort },
            sig: None,
        })
        .collect();
    let cert = DecisionCert::Abort(pistou_wire::AbortCert::Fast(ShardVotes { shard: ShardId(0), votes }));
    let out = fx.send(Message::Writeback(Writeback { meta: w, cert }));
    assert!(out.iter().any(|m| matches!(m, Message::PrepareReply { vote, .. } if vote.body.vote == Vote::Abort)));
    // t's write of y was removed from the prepared set: a read of y sees nothing.
    let out = fx.read("y", ts(9));
    assert!(matches!(out.as_slice(), [Message::ReadReply { reply, .. }] if reply.body.prepared.is_none()));
}

#[test]
fn vote_is_computed_once_and_repeated() {
    let mut fx = fixture(false);
    let t = meta(5, &[("x", 0)], &["x"], vec![]);
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
    // A conflicting write arrives afterwards; a repeated ST1 must still get the stored vote.
    fx.commit(&meta(4, &[], &["x"], vec![]));
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
    assert_eq!(fx.replica.stats().votes_commit, 1);
}

#[test]
fn second_transaction_with_the_same_timestamp_votes_abort() {
    let mut fx = fixture(false);
    assert_eq!(fx.prepare(&meta(5, &[], &["x"], vec![])), Some(Vote::Commit));
    assert_eq!(fx.prepare(&meta(5, &[], &["y"], vec![])), Some(Vote::Abort));
}

#[test]
fn bad_signatures_and_forged_certificates_are_rejected_and_counted() {
    let mut fx = fixture(true);
    let m = meta(5, &[], &["x"], vec![]);
    // ST1 signed by a key that is not the client's.
    let bad = sign_client(ClientId(1), Some(&SecretKey::from_seed([5; 32])), Prepare { meta: m.clone() });
    assert!(fx.send(Message::Prepare(bad)).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::BadSignature), 1);
    // Unsigned ST1 while crypto is on.
    let unsigned = sign_client(ClientId(1), None, Prepare { meta: m.clone() });
    assert!(fx.send(Message::Prepare(unsigned)).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::MissingSignature), 1);
    // Unknown client.
    let stranger = sign_client(ClientId(77), Some(&fx.client_key), Prepare { meta: m.clone() });
    assert!(fx.send(Message::Prepare(stranger)).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::UnknownClient), 1);
    // A C-CERT with one vote signed by the wrong key.
    let mut cert = fx.commit_cert(&m);
    if let CommitCert::Fast(t) = &mut cert {
        let body = t[0].votes[5].body.clone();
        t[0].votes[5].sig =
            Some(pistou_crypto::BatchSigner::new(SecretKey::from_seed([42; 32]), 1).sign_one(&body.signing_hash()));
    }
    assert!(fx.send(Message::Writeback(Writeback { meta: m.clone(), cert: DecisionCert::Commit(cert) })).is_empty());
    // A C-CERT with only 5 votes (fast path needs 6).
    let mut short = fx.commit_cert(&m);
    if let CommitCert::Fast(t) = &mut short {
        t[0].votes.pop();
    }
    assert!(fx.send(Message::Writeback(Writeback { meta: m.clone(), cert: DecisionCert::Commit(short) })).is_empty());
    // A C-CERT for a different transaction.
    let other = fx.commit_cert(&meta(6, &[], &["x"], vec![]));
    assert!(fx.send(Message::Writeback(Writeback { meta: m, cert: DecisionCert::Commit(other) })).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::BadCertificate), 3);
    assert!(fx.replica.committed_value(b"x").is_none());
}

#[test]
fn future_reads_are_refused() {
    let mut fx = fixture(true);
    let mut far = ts(1);
    far.time = NOW + 10_000_000;
    assert!(fx.read("x", far).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::FutureTimestamp), 1);
}

#[test]
fn st2_is_logged_only_when_justified_and_first_decision_stands() {
    let mut fx = fixture(false);
    let m = meta(5, &[], &["x"], vec![]);
    let vote = |i: u32, v: Vote| ReplicaSigned {
        signer: ReplicaId { shard: ShardId(0), index: i },
        body: St1Vote { txn: m.id(), vote: v },
        sig: None,
    };
    // 3 commit votes are not a CommitQuorum (3f+1 = 4).
    let weak = St2 {
        meta: m.clone(),
        decision: Decision::Commit,
        tallies: vec![ShardVotes { shard: ShardId(0), votes: (0..3).map(|i| vote(i, Vote::Commit)).collect() }],
        view: 0,
    };
    assert!(fx.send(Message::Decide(sign_client(ClientId(1), None, weak))).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::BadTally), 1);
    let commit = St2 {
        meta: m.clone(),
        decision: Decision::Commit,
        tallies: vec![ShardVotes { shard: ShardId(0), votes: (0..4).map(|i| vote(i, Vote::Commit)).collect() }],
        view: 0,
    };
    let out = fx.send(Message::Decide(sign_client(ClientId(1), None, commit)));
    assert!(matches!(out.as_slice(), [Message::DecideReply(r)] if r.body.decision == Decision::Commit));
    // An equivocating abort ST2 (justified by f+1 aborts) gets the logged commit back.
    let abort = St2 {
        meta: m.clone(),
        decision: Decision::Abort,
        tallies: vec![ShardVotes { shard: ShardId(0), votes: (4..6).map(|i| vote(i, Vote::Abort)).collect() }],
        view: 0,
    };
    let out = fx.send(Message::Decide(sign_client(ClientId(1), None, abort)));
    assert!(matches!(out.as_slice(), [Message::DecideReply(r)] if r.body.decision == Decision::Commit));
}

#[test]
fn old_read_timestamps_are_garbage_collected() {
    let mut fx = fixture(false);
    fx.read("x", ts(8));
    assert_eq!(fx.replica.rts_len(), 1);
    fx.replica.tick(NOW + 20_000_000); // max_txn_age is 10 s
    assert_eq!(fx.replica.rts_len(), 0);
}

#[test]
fn replies_are_batch_signed() {
    let mut fx = fixture(true);
    for i in 0..3 {
        fx.replica.handle(
            NOW,
            1,
            Message::Read(sign_client(ClientId(1), Some(&fx.client_key), ReadRequest { key: vec![i], ts: ts(5) })),
        );
    }
    fx.replica.flush();
    let out = fx.replica.take_outputs();
    assert_eq!(out.len(), 3);
    assert_eq!(fx.replica.stats().batches_signed, 1, "three replies, one signature");
    let mut auth = pistou_txn::Authenticator::new(fx.config.clone());
    for (_, m) in out {
        let Message::ReadReply { reply, .. } = m else { panic!("not a read reply") };
        auth.check_replica(&reply).expect("each reply verifies with its Merkle proof");
    }
}

#[test]
fn batch_verified_requests_behave_like_single_ones() {
    let mut fx = fixture(true);
    let good = |k: &str, fx: &Fixture| {
        sign_client(ClientId(1), Some(&fx.client_key), ReadRequest { key: k.as_bytes().to_vec(), ts: ts(5) })
    };
    let forged =
        sign_client(ClientId(1), Some(&SecretKey::from_seed([77; 32])), ReadRequest { key: b"z".to_vec(), ts: ts(5) });
    let st1 = sign_client(ClientId(1), Some(&fx.client_key), Prepare { meta: meta(6, &[], &["w"], vec![]) });
    let inputs = vec![
        (1, Message::Read(good("a", &fx))),
        (1, Message::Read(forged)),
        (1, Message::Read(good("b", &fx))),
        (2, Message::Prepare(st1)),
    ];
    fx.replica.handle_many(NOW, inputs);
    fx.replica.flush();
    let out = fx.replica.take_outputs();
    assert_eq!(out.iter().filter(|(_, m)| matches!(m, Message::ReadReply { .. })).count(), 2);
    assert_eq!(out.iter().filter(|(_, m)| matches!(m, Message::PrepareReply { .. })).count(), 1);
    assert_eq!(fx.replica.rejections().count(RejectReason::BadSignature), 1);
    // A replayed request outside the batch is verified again (and is fine).
    let again = fx.send(Message::Read(good("a", &fx)));
    assert_eq!(again.len(), 1);
}

/// A client that prepares transactions and never decides them is bounded per replica: beyond
/// the bound its ST1s are refused (and counted), until some of its transactions are decided.
#[test]
fn a_client_s_undecided_transactions_are_bounded() {
    let mut fx = fixture(false);
    fx.replica.set_max_undecided_per_client(3);
    let txns: Vec<TxnMeta> = (1..=4).map(|t| meta(t, &[], &[&format!("k{t}")], vec![])).collect();
    for t in &txns[..3] {
        assert_eq!(fx.prepare(t), Some(Vote::Commit));
    }
    assert_eq!(fx.prepare(&txns[3]), None, "a fourth undecided transaction is refused");
    assert_eq!(fx.replica.rejections().count(pistou_txn::RejectReason::TooManyUndecided), 1);
    // A repeated ST1 of a known transaction is still answered from its record.
    assert_eq!(fx.prepare(&txns[0]), Some(Vote::Commit));
    // Once one is decided, the retransmitted ST1 is accepted.
    fx.commit(&txns[0]);
    assert_eq!(fx.prepare(&txns[3]), Some(Vote::Commit));
    assert_eq!(fx.prepare(&meta(5, &[], &["k5"], vec![])), None, "at the bound again");
    // Nor can a client dodge the bound by naming another, unconfigured owner in ts.
    let mut stranger = meta(6, &[], &["k6"], vec![]);
    stranger.ts.client = ClientId(77);
    assert_eq!(fx.prepare(&stranger), None);
    assert_eq!(fx.replica.rejections().count(pistou_txn::RejectReason::UnknownClient), 1);
}

/// Pesto §3 (authenticated clients): over a connection the runtime authenticated as the
/// client (`open_session`), reads need no signature; signed ST1s are still required there,
/// and an unsigned read is refused from any other connection, or when it names another
/// client than the session's.
#[test]
fn unsigned_reads_are_accepted_only_over_their_clients_session() {
    let mut fx = fixture(true);
    let unsigned = |client: u64| {
        let at = Timestamp { time: NOW - 10, client: ClientId(client), seq: 1 };
        Message::Read(sign_client(ClientId(client), None, ReadRequest { key: b"x".to_vec(), ts: at }))
    };
    let replies = |out: Vec<Message>| out.iter().filter(|m| matches!(m, Message::ReadReply { .. })).count();
    // Peer 7 (the fixture's) has no session.
    assert_eq!(replies(fx.send(unsigned(1))), 0);
    assert_eq!(fx.replica.rejections().count(RejectReason::MissingSignature), 1);
    fx.replica.open_session(7, ClientId(1));
    assert_eq!(replies(fx.send(unsigned(1))), 1, "an unsigned read over the client's session is served");
    let stranger = Message::Prepare(sign_client(ClientId(1), None, Prepare { meta: meta(5, &[], &["x"], vec![]) }));
    assert!(fx.send(stranger).is_empty(), "an ST1 must be signed even over a session");
    assert_eq!(fx.replica.rejections().count(RejectReason::MissingSignature), 2);
    // A read naming client 2 over client 1's session: client 2 is unknown here, and even a
    // known one would need its own signature.
    assert_eq!(replies(fx.send(unsigned(2))), 0);
    fx.replica.close_session(7);
    assert_eq!(replies(fx.send(unsigned(1))), 0, "the session ended with its connection");
    assert_eq!(fx.replica.rejections().count(RejectReason::MissingSignature), 3);
}

/// Issue 33: a message with a bad signature over a client's session ends the session (a
/// correct client never sends one), and the replica tells the connection layer to close it;
/// without a session there is nothing to end.
#[test]
fn a_bad_signature_ends_the_session_it_came_over() {
    let mut fx = fixture(true);
    let read = |key: Option<&SecretKey>, seq: u64| {
        let at = Timestamp { time: NOW - 10, client: ClientId(1), seq };
        Message::Read(sign_client(ClientId(1), key, ReadRequest { key: b"x".to_vec(), ts: at }))
    };
    // Client 1's read, signed with another key.
    let wrong = SecretKey::from_seed([5; 32]);
    assert!(fx.send(read(Some(&wrong), 1)).is_empty());
    assert!(fx.replica.take_ended_sessions().is_empty(), "peer 7 has no session to end");
    fx.replica.open_session(7, ClientId(1));
    assert_eq!(fx.send(read(None, 2)).len(), 1, "served over the session");
    assert!(fx.send(read(Some(&wrong), 3)).is_empty());
    assert_eq!(fx.replica.rejections().count(RejectReason::BadSignature), 2);
    assert_eq!(fx.replica.take_ended_sessions(), vec![7]);
    assert!(fx.send(read(None, 4)).is_empty(), "the session is over");
    assert!(fx.replica.take_ended_sessions().is_empty());
}
