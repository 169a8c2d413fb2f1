//! Client-side rules of Basil §3–4, driving a real `Coordinator` with crafted replica replies.

use pistou_core::{ClientId, ClusterBuilder, ReplicaId, ShardId, Timestamp, TxnId};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_txn::{Coordinator, CoordinatorEvent, GetStart, RejectReason, TxnHandle};
use pistou_wire::{
    CommitCert, CommittedRead, Decision, DecisionCert, Message, PreparedRead, ReadReply, ReplicaSigned, ShardVotes,
    Signable, St1Vote, St2Reply, TxnMeta, Vote, WriteEntry,
};

const NOW: u64 = 5_000_000;

struct Fx {
    keys: Vec<SecretKey>,
    coord: Coordinator,
}

fn fx() -> Fx {
    let cluster = ClusterBuilder::new(1).delta_us(100_000).max_txn_age_us(10_000_000).reply_batch(4).build();
    let client = cluster.client_key(ClientId(1));
    let coord = Coordinator::new(cluster.config, ClientId(1), Some(client)).unwrap();
    let keys = cluster.replica_keys.into_iter().flatten().collect();
    Fx { keys, coord }
}

fn rid(i: u32) -> ReplicaId {
    ReplicaId { shard: ShardId(0), index: i }
}

fn signed<T: Signable>(key: &SecretKey, i: u32, body: T) -> ReplicaSigned<T> {
    let sig = BatchSigner::new(SecretKey::from_hex(&key.to_hex()).unwrap(), 1).sign_one(&body.signing_hash());
    ReplicaSigned { signer: rid(i), body, sig: Some(sig) }
}

fn writer(t: u64, key: &str, value: &[u8]) -> TxnMeta {
    TxnMeta {
        ts: Timestamp { time: t, client: ClientId(9), seq: 1 },
        read_set: vec![],
        write_set: vec![WriteEntry { key: key.as_bytes().to_vec(), value: Some(value.to_vec()) }],
        deps: vec![],
        predicates: Vec::new(),
        late: false,
        shards: vec![ShardId(0)],
    }
}

impl Fx {
    fn cert(&self, m: &TxnMeta) -> CommitCert {
        let votes =
            (0..6).map(|i| signed(&self.keys[i], i as u32, St1Vote { txn: m.id(), vote: Vote::Commit })).collect();
        CommitCert::Fast(vec![ShardVotes { shard: ShardId(0), votes }])
    }

    fn begin_read(&mut self, key: &str) -> (TxnHandle, Timestamp) {
        let h = self.coord.begin(NOW);
        assert_eq!(self.coord.get(NOW, h, key.as_bytes()).unwrap(), GetStart::Pending);
        let out = self.coord.take_outputs();
        assert_eq!(out.len(), 3, "READ goes to 2f+1 replicas");
        (h, self.coord.timestamp_of(h).unwrap())
    }

    fn reply(
        &mut self,
        i: u32,
        key: &str,
        ts: Timestamp,
        prepared: Option<PreparedRead>,
        committed: Option<CommittedRead>,
    ) {
        let body = ReadReply { key: key.as_bytes().to_vec(), ts, prepared };
        let reply = signed(&self.keys[i as usize], i, body);
        self.coord.handle(NOW, rid(i), Message::ReadReply { reply, committed });
    }

    fn read_result(&mut self) -> Option<Option<Vec<u8>>> {
        match self.coord.poll_event() {
            Some(CoordinatorEvent::ReadDone { value, .. }) => Some(value),
            None => None,
            other => panic!("unexpected event {other:?}"),
        }
    }
}

fn prepared(t: u64, txn: u8, value: &[u8]) -> Option<PreparedRead> {
    Some(PreparedRead {
        version: Timestamp { time: t, client: ClientId(9), seq: 1 },
        txn: TxnId([txn; 32]),
        value: Some(value.to_vec()),
    })
}

#[test]
fn read_waits_for_f_plus_1_replies() {
    let mut fx = fx();
    let (_, ts) = fx.begin_read("k");
    fx.reply(0, "k", ts, None, None);
    assert_eq!(fx.read_result(), None);
    fx.reply(1, "k", ts, None, None);
    assert_eq!(fx.read_result(), Some(None), "no version anywhere: the key is absent");
}

#[test]
fn prepared_version_needs_f_plus_1_matching_replies() {
    let mut fx = fx();
    let (_, ts) = fx.begin_read("k");
    // One (Byzantine) replica invents a prepared version: not valid alone.
    fx.reply(0, "k", ts, prepared(100, 7, b"fake"), None);
    fx.reply(1, "k", ts, None, None);
    assert_eq!(fx.read_result(), Some(None));

    let (h, ts) = fx.begin_read("k");
    fx.reply(0, "k", ts, prepared(100, 7, b"v"), None);
    fx.reply(2, "k", ts, prepared(100, 7, b"v"), None);
    assert_eq!(fx.read_result(), Some(Some(b"v".to_vec())));
    // The read created a dependency, visible in the ST1 metadata.
    fx.coord.commit(NOW, h).unwrap();
    let out = fx.coord.take_outputs();
    let Some((_, Message::Prepare(p))) = out.first() else { panic!("no ST1") };
    assert_eq!(p.body.meta.deps.len(), 1);
    assert_eq!(p.body.meta.deps[0].txn, TxnId([7; 32]));
    assert_eq!(out.len(), 6, "ST1 goes to all 5f+1 replicas");
}

#[test]
fn committed_version_needs_a_valid_certificate_and_highest_valid_wins() {
    let mut fx = fx();
    let w = writer(50, "k", b"old");
    let good = CommittedRead { writer: w.clone(), cert: fx.cert(&w) };
    // A committed version whose C-CERT is for another transaction is ignored.
    let w2 = writer(60, "k", b"forged");
    let forged = CommittedRead { writer: w2, cert: fx.cert(&w) };
    let (_, ts) = fx.begin_read("k");
    fx.reply(0, "k", ts, None, Some(forged));
    fx.reply(1, "k", ts, None, Some(good.clone()));
    assert_eq!(fx.read_result(), Some(Some(b"old".to_vec())));
    assert!(fx.coord.rejections().count(RejectReason::BadCertificate) >= 1);

    // A valid prepared version newer than the committed one wins.
    let (_, ts) = fx.begin_read("k");
    fx.reply(0, "k", ts, prepared(70, 3, b"new"), Some(good.clone()));
    fx.reply(1, "k", ts, prepared(70, 3, b"new"), None);
    assert_eq!(fx.read_result(), Some(Some(b"new".to_vec())));
}

#[test]
fn reply_with_a_bad_signature_does_not_count() {
    let mut fx = fx();
    let (_, ts) = fx.begin_read("k");
    // Replica 1's reply signed with replica 2's key.
    let body = ReadReply { key: b"k".to_vec(), ts, prepared: None };
    let mut reply = signed(&fx.keys[2], 2, body);
    reply.signer = rid(1);
    fx.coord.handle(NOW, rid(1), Message::ReadReply { reply, committed: None });
    fx.reply(0, "k", ts, None, None);
    assert_eq!(fx.read_result(), None, "only one valid reply so far");
    assert_eq!(fx.coord.rejections().count(RejectReason::BadSignature), 1);
}

fn start_commit(fx: &mut Fx) -> TxnMeta {
    let h = fx.coord.begin(NOW);
    fx.coord.put(h, b"x", Some(b"1".to_vec())).unwrap();
    fx.coord.commit(NOW, h).unwrap();
    let out = fx.coord.take_outputs();
    let Some((_, Message::Prepare(p))) = out.first() else { panic!("no ST1") };
    p.body.meta.clone()
}

#[test]
fn a_transaction_committing_past_half_the_short_grace_declares_itself_late() {
    // Pesto App. B.9: the flag is in the signed metadata, so every replica judges alike.
    let grace = pistou_core::SqlConfig::default().grace_us;
    for (elapsed, late) in [(0, false), (grace / 2, false), (grace / 2 + 1, true), (10 * grace, true)] {
        let mut fx = fx();
        let h = fx.coord.begin(NOW);
        fx.coord.put(h, b"x", Some(b"1".to_vec())).unwrap();
        fx.coord.commit(NOW + elapsed, h).unwrap();
        let out = fx.coord.take_outputs();
        let Some((_, Message::Prepare(p))) = out.first() else { panic!("no ST1") };
        assert_eq!(p.body.meta.late, late, "committed {elapsed} µs after begin");
    }
}

fn vote(fx: &mut Fx, meta: &TxnMeta, i: u32, v: Vote) {
    let vote = signed(&fx.keys[i as usize], i, St1Vote { txn: meta.id(), vote: v });
    fx.coord.handle(NOW, rid(i), Message::PrepareReply { vote, conflict: None, blocker: None });
}

#[test]
fn unanimous_votes_commit_on_the_fast_path_and_write_back() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    for i in 0..6 {
        vote(&mut fx, &meta, i, Vote::Commit);
    }
    assert!(matches!(
        fx.coord.poll_event(),
        Some(CoordinatorEvent::Decided { decision: Decision::Commit, fast: true, .. })
    ));
    let out = fx.coord.take_outputs();
    assert_eq!(out.iter().filter(|(_, m)| matches!(m, Message::Writeback(w) if matches!(w.cert, DecisionCert::Commit(CommitCert::Fast(_))))).count(), 6);
}

#[test]
fn commit_quorum_with_an_abort_goes_through_st2() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    for i in 0..4 {
        vote(&mut fx, &meta, i, Vote::Commit);
    }
    assert!(fx.coord.take_outputs().is_empty(), "waiting for the fast path");
    vote(&mut fx, &meta, 4, Vote::Abort);
    let st2: Vec<_> = fx.coord.take_outputs();
    assert_eq!(st2.len(), 6, "ST2 to every replica of S_log");
    assert!(st2.iter().all(|(_, m)| matches!(m, Message::Decide(d) if d.body.decision == Decision::Commit && d.body.tallies[0].votes.len() == 4)));
    for i in 0..4 {
        let r = signed(
            &fx.keys[i as usize],
            i,
            St2Reply { txn: meta.id(), decision: Decision::Commit, view_decision: 0, view_current: 0 },
        );
        fx.coord.handle(NOW, rid(i), Message::DecideReply(r));
    }
    assert!(fx.coord.poll_event().is_none(), "n-f = 5 matching ST2R are needed");
    let r = signed(
        &fx.keys[5],
        5,
        St2Reply { txn: meta.id(), decision: Decision::Commit, view_decision: 0, view_current: 0 },
    );
    fx.coord.handle(NOW, rid(5), Message::DecideReply(r));
    assert!(matches!(
        fx.coord.poll_event(),
        Some(CoordinatorEvent::Decided { decision: Decision::Commit, fast: false, .. })
    ));
}

#[test]
fn fast_path_timeout_falls_back_to_the_slow_path() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    for i in 0..5 {
        vote(&mut fx, &meta, i, Vote::Commit);
    }
    fx.coord.tick(NOW + 1_000);
    assert!(fx.coord.take_outputs().is_empty());
    fx.coord.tick(NOW + 1_000_000);
    assert!(fx.coord.take_outputs().iter().any(|(_, m)| matches!(m, Message::Decide(_))));
}

#[test]
fn abort_fast_path_with_3f_plus_1_aborts() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    for i in 0..4 {
        vote(&mut fx, &meta, i, Vote::Abort);
    }
    assert!(matches!(
        fx.coord.poll_event(),
        Some(CoordinatorEvent::Decided { decision: Decision::Abort, fast: true, .. })
    ));
}

/// Our transaction (begun at `now`) aborted by four abort votes; replicas in `named` name
/// `blocker`, each delivered on the connection of replica `via(i)`. Returns the transactions
/// the client then asks replicas for (FetchTxn).
fn aborted_blaming(fx: &mut Fx, now: u64, blocker: TxnId, named: &[u32], via: impl Fn(u32) -> u32) -> Vec<TxnId> {
    let h = fx.coord.begin(now);
    fx.coord.put(h, b"x", Some(b"1".to_vec())).unwrap();
    fx.coord.commit(now, h).unwrap();
    let out = fx.coord.take_outputs();
    let Some((_, Message::Prepare(p))) = out.first() else { panic!("no ST1") };
    let id = p.body.meta.id();
    for i in 0..4 {
        let vote = signed(&fx.keys[i as usize], i, St1Vote { txn: id, vote: Vote::Abort });
        let blocker = named.contains(&i).then_some(blocker);
        fx.coord.handle(now, rid(via(i)), Message::PrepareReply { vote, conflict: None, blocker });
    }
    assert!(matches!(fx.coord.poll_event(), Some(CoordinatorEvent::Decided { decision: Decision::Abort, .. })));
    let mut asked: Vec<TxnId> = fx
        .coord
        .take_outputs()
        .into_iter()
        .filter_map(|(_, m)| if let Message::FetchTxn { txn } = m { Some(txn) } else { None })
        .collect();
    asked.dedup();
    asked
}

#[test]
fn a_blocker_named_by_f_plus_1_replicas_in_two_aborts_is_finished() {
    let mut fx = fx();
    let x = TxnId([42; 32]);
    let after = pistou_txn::CoordinatorTimeouts::default().recovery_after_us;
    let direct = |i: u32| i;
    // One replica's word is not enough, however often it is repeated.
    assert!(aborted_blaming(&mut fx, NOW, x, &[0], direct).is_empty());
    assert!(aborted_blaming(&mut fx, NOW + 10 * after, x, &[0], direct).is_empty());
    // Nor is a second name that came over another replica's connection.
    assert!(aborted_blaming(&mut fx, NOW + 20 * after, x, &[0, 1], |i| if i == 1 { 2 } else { i }).is_empty());
    assert!(aborted_blaming(&mut fx, NOW + 30 * after, x, &[0, 1], |i| if i == 1 { 2 } else { i }).is_empty());
    // f+1 = 2 replicas: noted the first time; named again too soon, still nothing (a healthy
    // transaction is decided by then); named again later, the client fetches it to finish it.
    assert!(aborted_blaming(&mut fx, NOW + 40 * after, x, &[0, 1], direct).is_empty());
    assert!(aborted_blaming(&mut fx, NOW + 40 * after + after / 2, x, &[0, 1], direct).is_empty());
    assert_eq!(aborted_blaming(&mut fx, NOW + 41 * after, x, &[0, 1], direct), vec![x]);
}

#[test]
fn a_transaction_f_plus_1_replicas_wait_for_is_finished_once_ours_stalls() {
    let mut fx = fx();
    let after = pistou_txn::CoordinatorTimeouts::default().recovery_after_us;
    let meta = start_commit(&mut fx);
    let (w, v) = (TxnId([7; 32]), TxnId([8; 32]));
    // Two replicas say their vote waits for W; only one says it of V.
    for i in 0..2 {
        fx.coord.handle(NOW, rid(i), Message::Waiting { txn: meta.id(), on: vec![w] });
    }
    fx.coord.handle(NOW, rid(2), Message::Waiting { txn: meta.id(), on: vec![v] });
    let fetched = |fx: &mut Fx| -> Vec<TxnId> {
        let mut t: Vec<TxnId> = fx
            .coord
            .take_outputs()
            .into_iter()
            .filter_map(|(_, m)| if let Message::FetchTxn { txn } = m { Some(txn) } else { None })
            .collect();
        t.dedup();
        t
    };
    fx.coord.tick(NOW + after / 2);
    assert!(fetched(&mut fx).is_empty(), "not stalled yet");
    fx.coord.tick(NOW + after);
    assert_eq!(fetched(&mut fx), vec![w], "W, which f+1 replicas wait for; not V");
    fx.coord.tick(NOW + 2 * after);
    assert!(fetched(&mut fx).is_empty(), "fetched once (the fetch retries on its own)");
    // A replica that keeps naming new transactions is heard for its first 64 only: of two
    // that a second replica also names, the one past those 64 has a single voucher.
    let flood: Vec<TxnId> = (0..200u32)
        .map(|i| {
            let mut b = [9u8; 32];
            b[..4].copy_from_slice(&i.to_be_bytes());
            TxnId(b)
        })
        .collect();
    for chunk in flood.chunks(50) {
        fx.coord.handle(NOW, rid(3), Message::Waiting { txn: meta.id(), on: chunk.to_vec() });
    }
    fx.coord.handle(NOW, rid(4), Message::Waiting { txn: meta.id(), on: vec![flood[10], flood[150]] });
    fx.coord.tick(NOW + 3 * after);
    assert_eq!(fetched(&mut fx), vec![flood[10]]);
}

#[test]
fn bogus_conflict_proof_counts_as_a_plain_abort_vote() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    // A committed transaction that does not conflict with ours (different key).
    let other = writer(1, "unrelated", b"z");
    let proof = pistou_wire::ConflictProof { meta: other.clone(), cert: fx.cert(&other) };
    let v = signed(&fx.keys[0], 0, St1Vote { txn: meta.id(), vote: Vote::Abort });
    fx.coord.handle(NOW, rid(0), Message::PrepareReply { vote: v, conflict: Some(proof), blocker: None });
    assert!(fx.coord.poll_event().is_none(), "one Byzantine replica cannot abort a transaction");
    assert_eq!(fx.coord.rejections().count(RejectReason::BadCertificate), 1);
}

#[test]
fn votes_are_verified_before_any_decision_and_bad_ones_dropped() {
    let mut fx = fx();
    let meta = start_commit(&mut fx);
    for i in 0..5 {
        vote(&mut fx, &meta, i, Vote::Commit);
    }
    // Replica 5's vote arrives signed with replica 4's key: dropped at verification time,
    // so the fast path (6 votes) is not reached.
    let mut forged = signed(&fx.keys[4], 4, St1Vote { txn: meta.id(), vote: Vote::Commit });
    forged.signer = rid(5);
    fx.coord.handle(NOW, rid(5), Message::PrepareReply { vote: forged, conflict: None, blocker: None });
    assert!(fx.coord.poll_event().is_none(), "no fast commit on a forged vote");
    assert_eq!(fx.coord.rejections().count(RejectReason::BadSignature), 1);
    // Replica 5's real vote then completes the fast path.
    vote(&mut fx, &meta, 5, Vote::Commit);
    assert!(matches!(
        fx.coord.poll_event(),
        Some(CoordinatorEvent::Decided { decision: Decision::Commit, fast: true, .. })
    ));
}
