//! The divergent case of Basil §5 across six real replicas: S_log holds 3 commit and 3 abort
//! decisions; InvokeFB moves them to view 1; they elect the leader of view 1 with ELECTFB; the
//! leader's DECFB makes them all log its decision in view 1, enough for a V-CERT.

use pistou_core::{ClientId, ClusterBuilder, ReplicaId, ShardId, Timestamp};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_txn::{sign_client, LogEntry, MemoryLog, Replica};
use pistou_wire::{
    DecFb, Decision, InvokeFb, Message, ReplicaSigned, ShardVotes, Signable, St1Vote, St2, St2Reply, TxnMeta, Vote,
    WriteEntry,
};

const NOW: u64 = 1_000_000_000;

struct Net {
    keys: Vec<SecretKey>,
    client: SecretKey,
    replicas: Vec<Replica>,
}

fn net() -> Net {
    let cluster = ClusterBuilder::new(1).delta_us(100_000).max_txn_age_us(10_000_000).reply_batch(8).build();
    let client = cluster.client_key(ClientId(1));
    let config = cluster.config;
    let keys: Vec<SecretKey> = cluster.replica_keys.into_iter().flatten().collect();
    let replicas = (0..6)
        .map(|i| {
            let k = SecretKey::from_hex(&keys[i].to_hex()).unwrap();
            Replica::new(config.clone(), ReplicaId { shard: ShardId(0), index: i as u32 }, Some(k)).unwrap()
        })
        .collect();
    Net { keys, client, replicas }
}

fn rid(i: usize) -> ReplicaId {
    ReplicaId { shard: ShardId(0), index: i as u32 }
}

fn vote(net: &Net, i: usize, meta: &TxnMeta, v: Vote) -> ReplicaSigned<St1Vote> {
    let body = St1Vote { txn: meta.id(), vote: v };
    let k = SecretKey::from_hex(&net.keys[i].to_hex()).unwrap();
    ReplicaSigned { signer: rid(i), sig: Some(BatchSigner::new(k, 1).sign_one(&body.signing_hash())), body }
}

/// Delivers replica-to-replica messages until none is left; returns what went to clients.
fn settle(net: &mut Net) -> Vec<(usize, Message)> {
    let mut to_clients = Vec::new();
    loop {
        let mut moved = false;
        for i in 0..6 {
            net.replicas[i].flush();
            to_clients.extend(net.replicas[i].take_outputs().into_iter().map(|(_, m)| (i, m)));
            for (to, m) in net.replicas[i].take_replica_outputs() {
                net.replicas[to.index as usize].handle_replica(NOW, rid(i), m);
                moved = true;
            }
        }
        if !moved {
            return to_clients;
        }
    }
}

fn st2rs(out: &[(usize, Message)]) -> Vec<ReplicaSigned<St2Reply>> {
    out.iter().filter_map(|(_, m)| if let Message::DecideReply(r) = m { Some(r.clone()) } else { None }).collect()
}

#[test]
fn divergent_decisions_are_reconciled_by_the_fallback_leader() {
    let mut net = net();
    let log = MemoryLog::default();
    net.replicas[0].set_log(Box::new(log.clone()));
    let meta = TxnMeta {
        ts: Timestamp { time: NOW - 1_000, client: ClientId(1), seq: 1 },
        read_set: vec![],
        write_set: vec![WriteEntry { key: b"k".to_vec(), value: Some(b"v".to_vec()) }],
        deps: vec![],
        predicates: Vec::new(),
        late: false,
        shards: vec![ShardId(0)],
    };
    // Votes that justify both decisions: 4 commits (a CommitQuorum) and 2 aborts (an AbortQuorum).
    let commits = ShardVotes { shard: ShardId(0), votes: (0..4).map(|i| vote(&net, i, &meta, Vote::Commit)).collect() };
    let aborts = ShardVotes { shard: ShardId(0), votes: (4..6).map(|i| vote(&net, i, &meta, Vote::Abort)).collect() };
    let commit = St2 { meta: meta.clone(), decision: Decision::Commit, tallies: vec![commits], view: 0 };
    let abort = St2 { meta: meta.clone(), decision: Decision::Abort, tallies: vec![aborts], view: 0 };
    // An equivocating client logs commit at replicas 0..3 and abort at 3..6.
    for i in 0..6 {
        let st2 = if i < 3 { commit.clone() } else { abort.clone() };
        net.replicas[i].handle(NOW, 1, Message::Decide(sign_client(ClientId(1), Some(&net.client), st2)));
    }
    let views = st2rs(&settle(&mut net));
    assert_eq!(views.len(), 6);
    assert_eq!(views.iter().filter(|r| r.body.decision == Decision::Commit).count(), 3, "divergent: no n-f match");

    // A correct client invokes the fallback with the six signed current views (all view 0).
    let invoke = sign_client(
        ClientId(1),
        Some(&net.client),
        InvokeFb { meta: meta.clone(), views, proposal: Some(commit.clone()) },
    );
    for r in net.replicas.iter_mut() {
        r.handle(NOW, 2, Message::InvokeFb(invoke.clone()));
    }
    let out = settle(&mut net);
    let adopted: Vec<_> = st2rs(&out).into_iter().filter(|r| r.body.view_decision == 1).collect();
    // Each replica tells every interested client (here the equivocator and the invoker).
    let signers: std::collections::BTreeSet<u32> = adopted.iter().map(|r| r.signer.index).collect();
    assert_eq!(signers.len(), 6, "every replica adopted the leader's decision in view 1");
    let decision = adopted[0].body.decision;
    assert!(adopted.iter().all(|r| r.body.decision == decision && r.body.view_current == 1));
    assert!(net.replicas.iter().map(|r| r.stats().fallback_adoptions).sum::<u64>() == 6);
    // The view and the adopted decision went to the replica's log before it answered.
    let entries = log.entries();
    assert!(entries.contains(&LogEntry::View { txn: meta.id(), view: 1 }));
    assert!(entries.iter().any(
        |e| matches!(e, LogEntry::Decision { txn, decision: d, view: 1, .. } if *txn == meta.id() && *d == decision)
    ));
}

#[test]
fn forged_decfb_is_rejected() {
    let mut net = net();
    let txn = pistou_core::TxnId([5; 32]);
    let elect = |i: usize, d: Decision, view: u64| {
        let body = pistou_wire::ElectFb { txn, decision: d, view };
        let k = SecretKey::from_hex(&net.keys[i].to_hex()).unwrap();
        ReplicaSigned { signer: rid(i), sig: Some(BatchSigner::new(k, 1).sign_one(&body.signing_hash())), body }
    };
    // Decision contradicting the majority of its proofs.
    let proofs: Vec<_> = (0..5).map(|i| elect(i, if i < 3 { Decision::Commit } else { Decision::Abort }, 1)).collect();
    let lie = DecFb { txn, decision: Decision::Abort, view: 1, proofs: proofs.clone() };
    net.replicas[0].handle_replica(NOW, rid(1), Message::DecFb(lie));
    // Too few proofs.
    let short = DecFb { txn, decision: Decision::Commit, view: 1, proofs: proofs[..4].to_vec() };
    net.replicas[0].handle_replica(NOW, rid(1), Message::DecFb(short));
    // Proofs of another view.
    let mixed: Vec<_> = (0..5).map(|i| elect(i, Decision::Commit, if i == 0 { 2 } else { 1 })).collect();
    net.replicas[0].handle_replica(
        NOW,
        rid(1),
        Message::DecFb(DecFb { txn, decision: Decision::Commit, view: 1, proofs: mixed }),
    );
    assert_eq!(net.replicas[0].rejections().count(pistou_txn::RejectReason::BadCertificate), 3);
}
