//! Garbage collection of a replica's Basil state (Pesto App. B.3): what is collected, and
//! that what is gone cannot come back or be misused. One real `Replica` driven with crafted
//! messages; the long runs drive real coordinators and replicas.

use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId, ShardId, SqlConfig, Timestamp};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_txn::{
    sign_client, Authenticator, Coordinator, CoordinatorEvent, Footprint, GetStart, RejectReason, Replica,
};
use pistou_wire::{
    CommitCert, Decision, DecisionCert, Dep, InvokeFb, Message, Prepare, ReadEntry, ReadRequest, ReplicaSigned,
    ShardVotes, Signable, St1Vote, St2, TxnMeta, Vote, WriteEntry, Writeback,
};
use std::sync::Arc;

const NOW: u64 = 1_000_000_000;
/// max_txn_age_us of the fixture.
const AGE: u64 = 10_000_000;

/// One shard of six replicas with the age limit under test.
fn builder(max_txn_age_us: u64) -> ClusterBuilder {
    // A configuration keeps SQL versions at least as long as transactions may be prepared.
    let gc_lag_us = SqlConfig::default().gc_lag_us.max(max_txn_age_us.saturating_add(1));
    ClusterBuilder::new(1)
        // Clock skew tolerance, well below the age limit as in any sane configuration.
        .delta_us((max_txn_age_us / 5).min(100_000))
        .max_txn_age_us(max_txn_age_us)
        .reply_batch(4)
        .sql(SqlConfig { gc_lag_us, ..SqlConfig::default() })
}

fn clone_key(k: &SecretKey) -> SecretKey {
    SecretKey::from_hex(&k.to_hex()).expect("key")
}

fn rid(i: u32) -> ReplicaId {
    ReplicaId { shard: ShardId(0), index: i }
}

struct Fixture {
    config: Arc<ClusterConfig>,
    replica_keys: Vec<SecretKey>,
    client_key: SecretKey,
    replica: Replica,
    now: u64,
}

fn fixture() -> Fixture {
    let cluster = builder(AGE).build();
    let replica = Replica::new(cluster.config.clone(), rid(0), Some(cluster.replica_key(rid(0)))).expect("replica");
    let client_key = cluster.client_key(ClientId(1));
    let config = cluster.config;
    let replica_keys = cluster.replica_keys.into_iter().flatten().collect();
    Fixture { config, replica_keys, client_key, replica, now: NOW }
}

/// A timestamp `t` µs after NOW (client 1).
fn ts(t: u64) -> Timestamp {
    Timestamp { time: NOW + t, client: ClientId(1), seq: t }
}

fn meta(t: u64, reads: &[(&str, Timestamp)], writes: &[&str], deps: Vec<Dep>) -> TxnMeta {
    let read_set = reads.iter().map(|(k, v)| ReadEntry { key: k.as_bytes().to_vec(), version: *v }).collect();
    let write_set = writes
        .iter()
        .map(|k| WriteEntry { key: k.as_bytes().to_vec(), value: Some(format!("{k}@{t}").into_bytes()) })
        .collect();
    TxnMeta { ts: ts(t), read_set, write_set, deps, predicates: Vec::new(), late: false, shards: vec![ShardId(0)] }
}

impl Fixture {
    fn send(&mut self, msg: Message) -> Vec<Message> {
        self.replica.handle(self.now, 7, msg);
        self.replica.flush();
        self.replica.take_outputs().into_iter().map(|(_, m)| m).collect()
    }

    fn signed<T: Signable>(&self, i: usize, body: T) -> ReplicaSigned<T> {
        let sig = BatchSigner::new(clone_key(&self.replica_keys[i]), 1).sign_one(&body.signing_hash());
        ReplicaSigned { signer: rid(i as u32), body, sig: Some(sig) }
    }

    fn votes(&self, m: &TxnMeta, vote: Vote, n: usize) -> ShardVotes {
        ShardVotes { shard: ShardId(0), votes: (0..n).map(|i| self.signed(i, St1Vote { txn: m.id(), vote })).collect() }
    }

    fn prepare(&mut self, m: &TxnMeta) -> Vec<Message> {
        let req = sign_client(ClientId(1), Some(&self.client_key), Prepare { meta: m.clone() });
        self.send(Message::Prepare(req))
    }

    fn vote(&mut self, m: &TxnMeta) -> Option<Vote> {
        self.prepare(m).into_iter().find_map(|out| match out {
            Message::PrepareReply { vote, .. } => Some(vote.body.vote),
            _ => None,
        })
    }

    fn writeback(&mut self, m: &TxnMeta, decision: Decision) -> Vec<Message> {
        let cert = match decision {
            Decision::Commit => DecisionCert::Commit(CommitCert::Fast(vec![self.votes(m, Vote::Commit, 6)])),
            Decision::Abort => DecisionCert::Abort(pistou_wire::AbortCert::Fast(self.votes(m, Vote::Abort, 4))),
        };
        self.send(Message::Writeback(Writeback { meta: m.clone(), cert }))
    }

    fn commit(&mut self, m: &TxnMeta) {
        assert_eq!(self.vote(m), Some(Vote::Commit));
        let out = self.writeback(m, Decision::Commit);
        assert!(matches!(out.as_slice(), [Message::WritebackAck { .. }]), "writeback not accepted: {out:?}");
    }

    fn read(&mut self, key: &str, at: Timestamp) -> Vec<Message> {
        let req =
            sign_client(ClientId(1), Some(&self.client_key), ReadRequest { key: key.as_bytes().to_vec(), ts: at });
        self.send(Message::Read(req))
    }

    /// Moves the clock so that the watermark passes everything before `t`.
    fn pass(&mut self, t: u64) {
        self.now = NOW + t + AGE + 1;
        self.replica.tick(self.now);
    }

    fn below_watermark(&self) -> u64 {
        self.replica.rejections().count(RejectReason::BelowWatermark)
    }
}

#[test]
fn committed_versions_collapse_to_the_newest_and_its_writer_keeps_its_certificate() {
    let mut fx = fixture();
    let w1 = meta(1, &[("x", Timestamp::GENESIS)], &["x", "y"], vec![]);
    let w2 = meta(2, &[("x", ts(1))], &["x"], vec![]);
    let w3 = meta(3, &[], &["y"], vec![]);
    for m in [&w1, &w2, &w3] {
        fx.commit(m);
    }
    let before = fx.replica.footprint();
    assert_eq!((before.committed_versions, before.readers, before.txn_records), (4, 2, 3));
    fx.pass(3);
    let after = fx.replica.footprint();
    assert_eq!(after.committed_versions, 2, "x and y keep one version each: {after:?}");
    assert_eq!(after.readers, 0);
    assert_eq!(after.txn_records, 2, "w1 wrote no newest version any more");
    assert_eq!(after.ts_owner, 2);
    assert_eq!(after.gc_queue, 0);
    assert_eq!(fx.replica.decision_of(&w1.id()), None);
    assert_eq!(fx.replica.decision_of(&w2.id()), Some(Decision::Commit));

    // A read at the current time returns w2's version of x, with a certificate that checks.
    let at = Timestamp { time: fx.now, client: ClientId(1), seq: 0 };
    let out = fx.read("x", at);
    let Some(Message::ReadReply { committed: Some(read), .. }) = out.first() else {
        panic!("no committed read: {out:?}")
    };
    assert_eq!(read.writer, w2);
    Authenticator::new(fx.config.clone()).check_commit_cert(&read.writer, &read.cert).expect("valid C-CERT");
    assert_eq!(fx.replica.committed_value(b"y"), Some(b"y@3".to_vec()));
}

#[test]
fn reads_and_new_transactions_below_the_watermark_are_refused() {
    let mut fx = fixture();
    fx.commit(&meta(1, &[], &["x"], vec![]));
    fx.pass(5);
    assert!(fx.read("x", ts(5)).is_empty(), "a read below the watermark gets no reply");
    assert_eq!(fx.below_watermark(), 1);
    // A new transaction below the watermark gets no vote and leaves no record.
    let old = meta(5, &[], &["x"], vec![]);
    assert!(fx.prepare(&old).is_empty());
    assert_eq!(fx.below_watermark(), 2);
    assert_eq!(fx.replica.footprint().txn_records, 1);
    // At the watermark, reads are answered.
    let at = Timestamp { time: fx.replica.gc_watermark(), client: ClientId(1), seq: 0 };
    assert_eq!(fx.read("x", at).len(), 1);
}

#[test]
fn late_duplicates_of_a_collected_transaction_are_refused_and_resurrect_nothing() {
    let mut fx = fixture();
    let w1 = meta(1, &[], &["x"], vec![]);
    let w2 = meta(2, &[], &["x"], vec![]);
    fx.commit(&w1);
    fx.commit(&w2);
    fx.pass(2);
    assert_eq!(fx.replica.decision_of(&w1.id()), None, "w1 collected");
    let before = fx.replica.footprint();

    // ST1 (or a client's recovery prepare): no vote, in particular no abort vote that would
    // contradict the commit vote this replica once cast.
    assert!(fx.prepare(&w1).is_empty());
    // ST2 and InvokeFB: nothing logged.
    let st2 =
        St2 { meta: w1.clone(), decision: Decision::Abort, tallies: vec![fx.votes(&w1, Vote::Abort, 2)], view: 0 };
    assert!(fx.send(Message::Decide(sign_client(ClientId(1), Some(&fx.client_key), st2.clone()))).is_empty());
    let invoke = InvokeFb { meta: w1.clone(), views: vec![], proposal: Some(st2) };
    assert!(fx.send(Message::InvokeFb(sign_client(ClientId(1), Some(&fx.client_key), invoke))).is_empty());
    // Writeback with a valid certificate: not re-applied, not acknowledged.
    assert!(fx.writeback(&w1, Decision::Commit).is_empty());
    // FetchTxn: nothing to tell.
    assert!(fx.send(Message::FetchTxn { txn: w1.id() }).is_empty());
    assert_eq!(fx.below_watermark(), 4);
    assert_eq!(fx.replica.footprint(), before, "nothing came back");
    assert_eq!(fx.replica.decision_of(&w1.id()), None);

    // w2 is still known (it wrote the newest version): its duplicates get the certificate.
    let out = fx.prepare(&w2);
    assert!(matches!(out.as_slice(), [Message::Decided(wb)] if wb.meta == w2), "{out:?}");
    assert!(matches!(fx.send(Message::FetchTxn { txn: w2.id() }).as_slice(), [Message::TxnInfo { .. }]));
    assert!(matches!(fx.writeback(&w2, Decision::Commit).as_slice(), [Message::WritebackAck { .. }]));
}

#[test]
fn aborted_and_abort_voted_transactions_are_forgotten() {
    let mut fx = fixture();
    let w = meta(1, &[], &["x"], vec![]);
    fx.commit(&w);
    // Voted abort here (it read x before w's write), then aborted by its client.
    let stale = meta(2, &[("x", Timestamp::GENESIS)], &["y"], vec![]);
    assert_eq!(fx.vote(&stale), Some(Vote::Abort));
    assert!(matches!(fx.writeback(&stale, Decision::Abort).as_slice(), [Message::WritebackAck { .. }]));
    // Voted abort here and never heard of again (its client vanished).
    let orphan = meta(3, &[("x", Timestamp::GENESIS)], &["z"], vec![]);
    assert_eq!(fx.vote(&orphan), Some(Vote::Abort));
    assert_eq!(fx.replica.footprint().txn_records, 3);
    fx.pass(3);
    let f = fx.replica.footprint();
    assert_eq!((f.txn_records, f.keys, f.undecided_below_watermark), (1, 1, 0), "{f:?}");
    // A commit certificate for the orphan now (it could have committed elsewhere without our
    // vote) is refused: this replica cannot tell it from a transaction it forgot.
    assert!(fx.writeback(&orphan, Decision::Commit).is_empty());
    assert_eq!(fx.replica.decision_of(&orphan.id()), None);
}

#[test]
fn prepared_transactions_stay_until_decided_and_their_dependents_still_finish() {
    let mut fx = fixture();
    let d = meta(1, &[], &["x"], vec![]);
    assert_eq!(fx.vote(&d), Some(Vote::Commit));
    // T read d's prepared version of x: it waits for d (Alg. 1 line 15).
    let t_ts = AGE / 2;
    let t = meta(t_ts, &[("x", ts(1))], &["y"], vec![Dep { txn: d.id(), key: b"x".to_vec(), version: ts(1) }]);
    fx.now = NOW + t_ts;
    assert_eq!(fx.vote(&t), None, "waiting for d");
    // The watermark passes d but not t: d is undecided, so it stays (with its prepared version).
    fx.now = NOW + AGE + 2;
    fx.replica.tick(fx.now);
    let f = fx.replica.footprint();
    assert_eq!((f.txn_records, f.prepared_versions, f.undecided_below_watermark), (2, 2, 1), "{f:?}");
    // d's commit certificate arrives late: applied, and t gets its vote.
    let out = fx.writeback(&d, Decision::Commit);
    assert!(out.iter().any(|m| matches!(m, Message::WritebackAck { .. })), "{out:?}");
    assert!(out.iter().any(
        |m| matches!(m, Message::PrepareReply { vote, .. } if vote.body.txn == t.id() && vote.body.vote == Vote::Commit)
    ));
    assert_eq!(fx.replica.decision_of(&d.id()), Some(Decision::Commit));
    fx.replica.tick(fx.now + 1);
    assert_eq!(fx.replica.footprint().undecided_below_watermark, 0);
    assert_eq!(fx.replica.decision_of(&d.id()), Some(Decision::Commit), "d wrote the newest version of x");
}

#[test]
fn a_dependency_on_a_collected_transaction_votes_abort() {
    let mut fx = fixture();
    let w1 = meta(1, &[], &["x"], vec![]);
    let w2 = meta(2, &[], &["x"], vec![]);
    fx.commit(&w1);
    fx.commit(&w2);
    fx.pass(2);
    let t = fx.now - NOW;
    let reader = meta(t, &[("x", ts(1))], &["y"], vec![Dep { txn: w1.id(), key: b"x".to_vec(), version: ts(1) }]);
    assert_eq!(fx.vote(&reader), Some(Vote::Abort), "it read a version overwritten below the watermark");
    let fresh = meta(t + 1, &[("x", ts(2))], &["y"], vec![]);
    assert_eq!(fx.vote(&fresh), Some(Vote::Commit));
}

// ---- Long runs: real coordinators and replicas ----

struct Cluster {
    replicas: Vec<Replica>,
    clients: Vec<Coordinator>,
    now: u64,
}

fn cluster(max_txn_age_us: u64) -> Cluster {
    let config = builder(max_txn_age_us).crypto(false).clients(2).build().config;
    let replicas = (0..6).map(|i| Replica::new(config.clone(), rid(i), None).expect("replica")).collect();
    let clients = (1..=2).map(|i| Coordinator::new(config.clone(), ClientId(i), None).expect("coordinator")).collect();
    Cluster { replicas, clients, now: NOW }
}

impl Cluster {
    fn settle(&mut self) {
        for _ in 0..1_000 {
            let mut moved = false;
            for c in 0..self.clients.len() {
                for (to, msg) in self.clients[c].take_outputs() {
                    moved = true;
                    self.replicas[to.index as usize].handle(self.now, c as u64, msg);
                }
            }
            for r in 0..self.replicas.len() {
                self.replicas[r].flush();
                let from = self.replicas[r].id();
                for (to, msg) in self.replicas[r].take_replica_outputs() {
                    moved = true;
                    self.replicas[to.index as usize].handle_replica(self.now, from, msg);
                }
                for (peer, msg) in self.replicas[r].take_outputs() {
                    moved = true;
                    self.clients[peer as usize].handle(self.now, from, msg);
                }
            }
            if !moved {
                return;
            }
        }
        panic!("network did not quiesce");
    }

    /// Client `c` reads `a` and writes `b` (its value plus one); returns the decision.
    fn transfer(&mut self, c: usize, a: &[u8], b: &[u8]) -> Decision {
        let h = self.clients[c].begin(self.now);
        let value = match self.clients[c].get(self.now, h, a).expect("get") {
            GetStart::Ready(v) => v,
            GetStart::Pending => {
                self.settle();
                match self.clients[c].poll_event() {
                    Some(CoordinatorEvent::ReadDone { value, .. }) => value,
                    other => panic!("read did not finish: {other:?}"),
                }
            }
        };
        let n = value.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap_or([0; 8])));
        self.clients[c].put(h, b, Some((n + 1).to_le_bytes().to_vec())).expect("put");
        self.clients[c].commit(self.now, h).expect("commit");
        self.settle();
        loop {
            match self.clients[c].poll_event() {
                Some(CoordinatorEvent::Decided { decision, .. }) => return decision,
                Some(_) => continue,
                None => panic!("transaction undecided"),
            }
        }
    }

    /// `txns` transactions over 8 keys, 1 ms apart, ticking every replica; returns the
    /// largest footprint (per field, over replicas) seen after `warm_up` transactions.
    fn run(&mut self, txns: usize, warm_up: usize) -> (Footprint, usize) {
        let keys: Vec<Vec<u8>> = (0..8u8).map(|k| vec![b'k', k]).collect();
        let mut peak = Footprint::default();
        let mut commits = 0;
        for i in 0..txns {
            self.now += 1_000;
            for r in &mut self.replicas {
                r.tick(self.now);
            }
            for c in &mut self.clients {
                c.tick(self.now);
            }
            let (a, b) = (&keys[i % 8].clone(), &keys[(i * 3 + 1) % 8].clone());
            if self.transfer(i % 2, a, b) == Decision::Commit {
                commits += 1;
            }
            if i >= warm_up {
                for r in &self.replicas {
                    peak = max_footprint(peak, r.footprint());
                }
            }
        }
        (peak, commits)
    }
}

fn max_footprint(a: Footprint, b: Footprint) -> Footprint {
    Footprint {
        keys: a.keys.max(b.keys),
        committed_versions: a.committed_versions.max(b.committed_versions),
        prepared_versions: a.prepared_versions.max(b.prepared_versions),
        readers: a.readers.max(b.readers),
        rts: a.rts.max(b.rts),
        txn_records: a.txn_records.max(b.txn_records),
        sql_records: a.sql_records.max(b.sql_records),
        undecided_below_watermark: a.undecided_below_watermark.max(b.undecided_below_watermark),
        ts_owner: a.ts_owner.max(b.ts_owner),
        dependents: a.dependents.max(b.dependents),
        gc_queue: a.gc_queue.max(b.gc_queue),
        inquiries: a.inquiries.max(b.inquiries),
        row_keys: a.row_keys.max(b.row_keys),
        row_versions: a.row_versions.max(b.row_versions),
    }
}

/// With max_txn_age 50 ms and a transaction every 1 ms, about 50 transactions are younger
/// than the watermark at any time, plus one kept writer per key.
const BOUND: usize = 120;

#[test]
fn a_long_run_keeps_the_footprint_flat() {
    let mut c = cluster(50_000);
    let (peak, commits) = c.run(5_000, 200);
    eprintln!("peak after warm-up: {peak:?}");
    assert!(commits >= 4_900, "the workload is sequential: nearly everything commits ({commits})");
    for (name, v) in [
        ("keys", peak.keys),
        ("committed_versions", peak.committed_versions),
        ("readers", peak.readers),
        ("rts", peak.rts),
        ("txn_records", peak.txn_records),
        ("ts_owner", peak.ts_owner),
        ("gc_queue", peak.gc_queue),
    ] {
        assert!(v <= BOUND, "{name} = {v} > {BOUND} after warm-up: {peak:?}");
    }
    assert_eq!((peak.prepared_versions, peak.undecided_below_watermark, peak.dependents), (0, 0, 0), "{peak:?}");
    // Decided transactions leave the inquiry schedule when their (first) time comes: at
    // most the last 0.1 s of transactions, one per ms.
    assert!(peak.inquiries <= 120, "{peak:?}");
    // Every key still reads its latest value.
    for r in &c.replicas {
        assert!(r.committed_value(&[b'k', 1]).is_some());
    }
}

#[test]
fn without_time_passing_the_same_run_outgrows_the_bound() {
    // The watermark never passes anything (max_txn_age far beyond the run): the bound above
    // is not met by accident.
    let mut c = cluster(1_000_000_000);
    let (peak, _) = c.run(3 * BOUND, 0);
    assert!(peak.txn_records > 2 * BOUND && peak.committed_versions > 2 * BOUND, "{peak:?}");
}

#[test]
fn a_client_gives_up_on_a_transaction_replicas_would_refuse() {
    let mut c = cluster(50_000);
    assert_eq!(c.transfer(0, b"a", b"b"), Decision::Commit);
    // Held open past max_txn_age: a new read fails at once instead of waiting for replies
    // that never come.
    let h = c.clients[0].begin(c.now);
    c.now += 60_000;
    assert_eq!(c.clients[0].get(c.now, h, b"a"), Err(pistou_txn::TxnError::TooOld));
    // Commit refuses with the reason, sends no ST1, and the transaction can be aborted.
    c.clients[0].put(h, b"b", Some(vec![1])).expect("put");
    assert_eq!(c.clients[0].commit(c.now, h), Err(pistou_txn::TxnError::TooOld));
    assert!(!c.clients[0].take_outputs().iter().any(|(_, m)| matches!(m, Message::Prepare(_))));
    c.clients[0].abort(h).expect("abort");
}

#[test]
fn a_sql_statement_of_a_transaction_past_the_watermark_is_snapshot_too_old() {
    let mut c = cluster(50_000);
    let h = c.clients[0].begin(c.now);
    c.now += 60_000;
    c.clients[0].sql(c.now, h, "SELECT a FROM t", vec![]).expect("statement accepted");
    match c.clients[0].poll_event() {
        Some(CoordinatorEvent::SqlDone { result: Err(e), .. }) => {
            assert_eq!(e.state, pistou_sql::SqlState::SnapshotTooOld, "{e:?}")
        }
        other => panic!("expected an error at once, got {other:?}"),
    }
}

#[test]
fn a_logged_decision_stays_and_a_late_commit_lands_below_the_newer_version() {
    let mut fx = fixture();
    // T was decided elsewhere; this replica only logged its ST2 (no ST1 seen).
    let t = meta(1, &[], &["x"], vec![]);
    let st2 =
        St2 { meta: t.clone(), decision: Decision::Commit, tallies: vec![fx.votes(&t, Vote::Commit, 4)], view: 0 };
    let out = fx.send(Message::Decide(sign_client(ClientId(1), Some(&fx.client_key), st2)));
    assert!(matches!(out.as_slice(), [Message::DecideReply(_)]), "{out:?}");
    // A newer deletion of x commits.
    let mut delete = meta(2, &[], &["x"], vec![]);
    delete.write_set[0].value = None;
    fx.commit(&delete);
    fx.pass(2);
    assert_eq!(fx.replica.footprint().undecided_below_watermark, 1, "T's logged decision is kept");
    // T's certificate arrives late: applied, but x still reads as deleted.
    assert!(matches!(fx.writeback(&t, Decision::Commit).as_slice(), [Message::WritebackAck { .. }]));
    let out = fx.read("x", Timestamp { time: fx.now, client: ClientId(1), seq: 0 });
    assert!(matches!(out.as_slice(), [Message::ReadReply { committed: Some(c), .. }] if c.writer == delete), "{out:?}");
    fx.replica.tick(fx.now + 1);
    let f = fx.replica.footprint();
    assert_eq!((f.txn_records, f.committed_versions, f.undecided_below_watermark), (1, 1, 0), "{f:?}");
}
