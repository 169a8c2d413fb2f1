//! Pesto at one real `Replica`: the semantic concurrency check (Alg. 1 lines 3, 11–19) and
//! range reads (§5.5 step 2). SQL rows travel as Basil writes of row keys, predicates in
//! `TxnMeta`.

use pistou_core::sql_keys::{catalog_key, key_kind, row_key, KeyKind};
use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId, ShardId, SqlConfig, Timestamp};
use pistou_crypto::SecretKey;
use pistou_sql::keycode::encode_key;
use pistou_sql::EngineRules;
use pistou_sql::{
    Catalog, CatalogChange, Column, Expr, IndexSchema, Predicate, SqlType, TableSchema, Value, WirePredicate,
};
use pistou_txn::{sign_client, CatalogWrite, Replica};
use pistou_wire::{
    AbortCert, CommitCert, DecisionCert, Message, PredicateRead, Prepare, QueryOutput, RangeRead, RangeReply,
    RangeResult, ReadEntry, ReplicaSigned, ShardVotes, Signable, SsEntry, SsProp, St1Vote, TxnMeta, Vote, WriteEntry,
    Writeback,
};
use std::sync::Arc;

const NOW: u64 = 1_000_000_000;

fn ts(t: u64) -> Timestamp {
    Timestamp { time: NOW - 1_000_000 + t, client: ClientId(1), seq: t }
}

struct Fixture {
    keys: Vec<SecretKey>,
    client: SecretKey,
    /// The key of client 2.
    second_client: SecretKey,
    replica: Replica,
    /// Version of the catalog key (the CREATE TABLE transaction's timestamp).
    catalog: Timestamp,
    config: Arc<ClusterConfig>,
    /// The CREATE TABLE transaction.
    ddl: TxnMeta,
    /// The replica's clock for the messages `send` delivers.
    now: u64,
    /// `send` runs the range jobs its message made (false: they wait for the test).
    run_jobs: bool,
}

fn clone_key(k: &SecretKey) -> SecretKey {
    SecretKey::from_hex(&k.to_hex()).expect("key")
}

/// One replica of a one-shard cluster whose table `t (id INT PRIMARY KEY, a INT)` was created
/// at ts(1). Grace 0 so that windows are exact.
fn fixture() -> Fixture {
    fixture_with(SqlConfig { grace_us: 0, ..SqlConfig::default() })
}

fn fixture_with(sql: SqlConfig) -> Fixture {
    fixture_of(sql, vec![])
}

/// `fixture()` with `indexes` on table t.
fn fixture_of(sql: SqlConfig, indexes: Vec<IndexSchema>) -> Fixture {
    let cluster =
        ClusterBuilder::new(1).clients(2).delta_us(100_000).max_txn_age_us(10_000_000).reply_batch(4).sql(sql).build();
    let replica = Replica::new(cluster.config.clone(), rid(0), Some(cluster.replica_key(rid(0)))).expect("replica");
    let [client, second_client] = [1, 2].map(|id| cluster.client_key(ClientId(id)));
    let config = cluster.config;
    let keys = cluster.replica_keys.into_iter().flatten().collect();
    let placeholder = TxnMeta {
        ts: ts(1),
        read_set: vec![],
        write_set: vec![],
        deps: vec![],
        predicates: vec![],
        late: false,
        shards: vec![],
    };
    let mut fx = Fixture {
        keys,
        client,
        second_client,
        replica,
        catalog: ts(1),
        config,
        ddl: placeholder,
        now: NOW,
        run_jobs: true,
    };
    let col = |name: &str| int_column(name, None);
    let schema = TableSchema {
        name: "t".into(),
        id: 0,
        columns: vec![col("id"), col("a")],
        primary_key: vec![0],
        indexes,
        constraints: Default::default(),
        stored_as: None,
    };
    let change = CatalogChange::CreateTable(schema);
    let mut catalog = Catalog::new();
    catalog.apply(&change, &EngineRules).expect("create table");
    let value = CatalogWrite { changes: vec![change], catalog };
    let ddl = TxnMeta {
        ts: ts(1),
        read_set: vec![ReadEntry { key: catalog_key(ShardId(0)), version: Timestamp::GENESIS }],
        write_set: vec![WriteEntry {
            key: catalog_key(ShardId(0)),
            value: Some(postcard::to_allocvec(&value).expect("encode")),
        }],
        deps: vec![],
        predicates: vec![],
        late: false,
        shards: vec![ShardId(0)],
    };
    assert_eq!(fx.prepare(&ddl), Some(Vote::Commit));
    fx.commit(&ddl);
    fx.ddl = ddl;
    fx
}

/// Table t's identity: the fixture's CREATE TABLE is the catalog's first change.
const T_ID: u64 = 1;

/// A nullable integer column.
fn int_column(name: &str, default: Option<Value>) -> Column {
    Column {
        name: name.into(),
        ty: SqlType::Int,
        limits: Default::default(),
        nullable: true,
        default,
        generated: None,
        volatile_default: None,
    }
}

fn key(id: i64) -> Vec<u8> {
    row_key("t", T_ID, &encode_key([&Value::Int(id)])).expect("key")
}

/// `a > 10` over table t.
fn a_above_10() -> WirePredicate {
    let expr = Expr::Cmp(pistou_sql::expr::CmpOp::Gt, Box::new(Expr::Column(1)), Box::new(Expr::Const(Value::Int(10))));
    (Predicate { table: "t".into(), expr }).to_wire().expect("encode")
}

struct Txn {
    t: u64,
    reads: Vec<(Vec<u8>, Timestamp)>,
    writes: Vec<(i64, Option<i64>)>,
    predicate: Option<Timestamp>,
}

impl Fixture {
    /// A transaction at `t` that makes `changes` to the fixture's schema (the catalog after
    /// its CREATE TABLE).
    fn schema_change(&self, t: u64, changes: Vec<CatalogChange>) -> TxnMeta {
        let written = self.ddl.write_set[0].value.as_deref().expect("the fixture's catalog");
        let mut catalog = postcard::from_bytes::<CatalogWrite>(written).expect("decode").catalog;
        for c in &changes {
            catalog.apply(c, &EngineRules).expect("the change applies");
        }
        TxnMeta {
            ts: ts(t),
            read_set: vec![ReadEntry { key: catalog_key(ShardId(0)), version: self.catalog }],
            write_set: vec![WriteEntry {
                key: catalog_key(ShardId(0)),
                value: Some(postcard::to_allocvec(&CatalogWrite { changes, catalog }).expect("encode")),
            }],
            deps: vec![],
            predicates: vec![],
            late: false,
            shards: vec![ShardId(0)],
        }
    }

    fn meta(&self, txn: Txn) -> TxnMeta {
        // The predicate's evaluation read the transaction's row reads (one statement).
        let mut active: Vec<Vec<u8>> = txn.reads.iter().map(|(k, _)| k.clone()).collect();
        active.sort();
        let mut read_set: Vec<ReadEntry> =
            txn.reads.into_iter().map(|(key, version)| ReadEntry { key, version }).collect();
        read_set.push(ReadEntry { key: catalog_key(ShardId(0)), version: self.catalog });
        read_set.sort_by(|a, b| a.key.cmp(&b.key));
        let mut write_set: Vec<WriteEntry> = txn
            .writes
            .into_iter()
            .map(|(id, a)| WriteEntry {
                key: key(id),
                value: a.map(|a| postcard::to_allocvec(&vec![Value::Int(id), Value::Int(a)]).expect("row")),
            })
            .collect();
        write_set.sort_by(|a, b| a.key.cmp(&b.key));
        let predicates = txn
            .predicate
            .map(|table_version| PredicateRead { predicate: a_above_10(), table_version, active })
            .into_iter()
            .collect();
        TxnMeta { ts: ts(txn.t), read_set, write_set, deps: vec![], predicates, late: false, shards: vec![ShardId(0)] }
    }

    fn send(&mut self, msg: Message) -> Vec<Message> {
        self.replica.handle(self.now, 7, msg);
        if self.run_jobs {
            self.replica.run_range_jobs();
        }
        self.replica.flush();
        self.replica.take_outputs().into_iter().map(|(_, m)| m).collect()
    }

    fn prepare(&mut self, m: &TxnMeta) -> Option<Vote> {
        let req = sign_client(ClientId(1), Some(&self.client), Prepare { meta: m.clone() });
        self.send(Message::Prepare(req)).into_iter().find_map(|out| match out {
            Message::PrepareReply { vote, .. } => Some(vote.body.vote),
            _ => None,
        })
    }

    fn votes(&self, m: &TxnMeta, vote: Vote) -> ShardVotes {
        let id = m.id();
        let votes = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let body = St1Vote { txn: id, vote };
                let signer = pistou_crypto::BatchSigner::new(clone_key(k), 1);
                ReplicaSigned {
                    signer: ReplicaId { shard: ShardId(0), index: i as u32 },
                    sig: Some(signer.sign_one(&body.signing_hash())),
                    body,
                }
            })
            .collect();
        ShardVotes { shard: ShardId(0), votes }
    }

    /// Writeback with a fast-path certificate; returns the messages it caused (late votes).
    fn commit(&mut self, m: &TxnMeta) -> Vec<Message> {
        let cert = DecisionCert::Commit(CommitCert::Fast(vec![self.votes(m, Vote::Commit)]));
        self.send(Message::Writeback(Writeback { meta: m.clone(), cert }))
    }

    fn abort(&mut self, m: &TxnMeta) -> Vec<Message> {
        let cert = DecisionCert::Abort(AbortCert::Fast(self.votes(m, Vote::Abort)));
        self.send(Message::Writeback(Writeback { meta: m.clone(), cert }))
    }
}

fn vote_in(out: &[Message]) -> Option<Vote> {
    out.iter().find_map(|m| match m {
        Message::PrepareReply { vote, .. } => Some(vote.body.vote),
        _ => None,
    })
}

#[test]
fn line12_a_missed_matching_write_aborts_the_reader() {
    let mut fx = fixture();
    // W (ts 20) inserts a = 50; reader T (ts 30) read `a > 10` at table version ts(10) and
    // did not see it: T's result is incomplete.
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let t = fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t), Some(Vote::Abort));
}

#[test]
fn line12_writes_outside_the_predicate_or_window_do_not_conflict() {
    let mut fx = fixture();
    let low =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(5))], predicate: None });
    assert_eq!(fx.prepare(&low), Some(Vote::Commit));
    let old =
        fx.meta(Txn { t: 8, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&old), Some(Vote::Commit));
    fx.commit(&old);
    // a = 5 does not satisfy a > 10; the a = 50 write at ts 8 is below the table version 10,
    // hence already reflected in what T read.
    let t = fx.meta(Txn { t: 30, reads: vec![(key(2), ts(8))], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
}

#[test]
fn line12_an_active_read_is_left_to_the_freshness_check() {
    let mut fx = fixture();
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    // T read key 1 at W's version: the write is in T's active read set, no conflict.
    let t = fx.meta(Txn { t: 30, reads: vec![(key(1), ts(20))], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
}

#[test]
fn line12_an_overwritten_write_is_not_the_one_checked() {
    let mut fx = fixture();
    let w1 =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w1), Some(Vote::Commit));
    fx.commit(&w1);
    let w2 = fx.meta(Txn { t: 25, reads: vec![(key(1), ts(20))], writes: vec![(1, None)], predicate: None });
    assert_eq!(fx.prepare(&w2), Some(Vote::Commit));
    fx.commit(&w2);
    // Key 1 was deleted at 25 < 30: T rightly saw nothing.
    let t = fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
}

#[test]
fn line15_a_risky_prepared_writer_becomes_a_dependency() {
    let mut fx = fixture();
    let base =
        fx.meta(Txn { t: 5, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&base), Some(Vote::Commit));
    fx.commit(&base);
    // W (prepared) moves row 1 out of the predicate; T saw W's version, so row 1 was passive.
    let w = fx.meta(Txn { t: 20, reads: vec![(key(1), ts(5))], writes: vec![(1, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let t = fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    let req = sign_client(ClientId(1), Some(&fx.client), Prepare { meta: t.clone() });
    let out = fx.send(Message::Prepare(req.clone()));
    // No vote yet, but T's client learns what it waits for: it did not declare W, and must
    // finish W itself if W's client has stalled (Basil §5).
    assert_eq!(out, vec![Message::Waiting { txn: t.id(), on: vec![w.id()] }], "T must wait for W, and say so");
    assert_eq!(
        fx.send(Message::Prepare(req)),
        vec![Message::Waiting { txn: t.id(), on: vec![w.id()] }],
        "a repeated ST1 (RP) learns it too"
    );
    // W aborts: a = 50 reappears and T's read was incomplete.
    assert_eq!(vote_in(&fx.abort(&w)), Some(Vote::Abort));

    let w2 = fx.meta(Txn { t: 21, reads: vec![(key(1), ts(5))], writes: vec![(1, Some(2))], predicate: None });
    assert_eq!(fx.prepare(&w2), Some(Vote::Commit));
    let t2 = fx.meta(Txn { t: 31, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t2), None);
    assert_eq!(vote_in(&fx.commit(&w2)), Some(Vote::Commit));
}

#[test]
fn line18_a_write_into_a_later_readers_predicate_aborts_the_writer() {
    let mut fx = fixture();
    let reader = fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit));
    let bad =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&bad), Some(Vote::Abort));
    let fine =
        fx.meta(Txn { t: 21, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(3))], predicate: None });
    assert_eq!(fx.prepare(&fine), Some(Vote::Commit));
    let later =
        fx.meta(Txn { t: 40, reads: vec![(key(3), Timestamp::GENESIS)], writes: vec![(3, Some(99))], predicate: None });
    assert_eq!(fx.prepare(&later), Some(Vote::Commit), "ordered after the reader");
}

/// A transaction's record drops its decoded SQL once its decision is applied (memory); what
/// the semantic check still needs of a committed one lives elsewhere: its predicate in the
/// reader index (line 18), its rows in the store (line 12).
#[test]
fn an_applied_decision_drops_the_decoded_sql_and_a_commit_still_guards_its_predicate_and_rows() {
    let mut fx = fixture();
    assert_eq!(fx.replica.footprint().sql_records, 0, "the schema change was applied");
    let reader = fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit));
    assert_eq!(fx.replica.footprint().sql_records, 1, "a prepared transaction keeps its decoded content");
    fx.commit(&reader);
    assert_eq!(fx.replica.footprint().sql_records, 0);
    // Line 18: a write below the committed reader into its predicate still aborts.
    let bad =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&bad), Some(Vote::Abort));
    assert_eq!(fx.replica.footprint().sql_records, 1, "undecided: kept");
    fx.abort(&bad);
    assert_eq!(fx.replica.footprint().sql_records, 0);
    // Line 12: a committed writer's row, applied and dropped from its record, is still in
    // the window of a later reader that missed it.
    let writer =
        fx.meta(Txn { t: 40, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(60))], predicate: None });
    assert_eq!(fx.prepare(&writer), Some(Vote::Commit));
    fx.commit(&writer);
    assert_eq!(fx.replica.footprint().sql_records, 0);
    let missed = fx.meta(Txn { t: 50, reads: vec![], writes: vec![], predicate: Some(ts(35)) });
    assert_eq!(fx.prepare(&missed), Some(Vote::Abort));
}

/// `id >= 3 AND id <= 5 AND a > 10` over table t: a predicate with a primary-key range.
fn ids_3_to_5_with_a_above_10() -> WirePredicate {
    use pistou_sql::expr::CmpOp;
    let cmp = |op, col, v| Expr::Cmp(op, Box::new(Expr::Column(col)), Box::new(Expr::Const(Value::Int(v))));
    let and = |a, b| Expr::And(Box::new(a), Box::new(b));
    let expr = and(and(cmp(CmpOp::GtEq, 0, 3), cmp(CmpOp::LtEq, 0, 5)), cmp(CmpOp::Gt, 1, 10));
    (Predicate { table: "t".into(), expr }).to_wire().expect("encode")
}

fn with_key_range(mut m: TxnMeta) -> TxnMeta {
    for p in &mut m.predicates {
        p.predicate = ids_3_to_5_with_a_above_10();
    }
    m
}

/// The semantic check skips writes outside a predicate's primary-key ranges before
/// evaluating it (no version of such a key can satisfy it; `primary_key_ranges`' property
/// test in pistou-sql checks that). Skipping changes no verdict, so this checks the other
/// half: writes inside the range still conflict or become dependencies, and writes outside
/// it do neither, for lines 12, 15 and 18.
#[test]
fn a_predicates_key_range_hides_no_conflict_inside_it() {
    // Line 12: a = 50 at id 1 satisfies `a > 10` but lies outside ids 3..5.
    let mut fx = fixture();
    let outside =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&outside), Some(Vote::Commit));
    let reader = with_key_range(fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) }));
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit), "a write outside the key range cannot be missed");
    // Line 18 against that prepared reader: outside its range no conflict, inside one.
    let outside_later =
        fx.meta(Txn { t: 21, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(70))], predicate: None });
    assert_eq!(fx.prepare(&outside_later), Some(Vote::Commit));
    let inside =
        fx.meta(Txn { t: 22, reads: vec![(key(4), Timestamp::GENESIS)], writes: vec![(4, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&inside), Some(Vote::Abort), "id 4 enters the prepared reader's predicate");

    // Line 12 inside the range: a missed a = 60 at id 5 aborts the reader.
    let mut fx = fixture();
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(5), Timestamp::GENESIS)], writes: vec![(5, Some(60))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let t = with_key_range(fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) }));
    assert_eq!(fx.prepare(&t), Some(Vote::Abort));

    // Line 15: prepared writers move ids 1 and 4 out of `a > 10`; only id 4's could expose a
    // matching version inside the reader's range, so the reader depends on that one alone.
    only_the_writer_hiding_a_match_is_a_dependency(fixture(), 50, with_key_range);
}

/// Line 15 with a restricted predicate: committed rows 1 (a = `a1`) and 4 (a = 50), then
/// prepared writers setting a = 1 in both; a reader at ts 30 restricted by `restrict`, under
/// which row 1 cannot match, waits for the writer of row 4 alone.
fn only_the_writer_hiding_a_match_is_a_dependency(mut fx: Fixture, a1: i64, restrict: fn(TxnMeta) -> TxnMeta) {
    let genesis = Timestamp::GENESIS;
    let base = fx.meta(Txn {
        t: 5,
        reads: vec![(key(1), genesis), (key(4), genesis)],
        writes: vec![(1, Some(a1)), (4, Some(50))],
        predicate: None,
    });
    assert_eq!(fx.prepare(&base), Some(Vote::Commit));
    fx.commit(&base);
    let w1 = fx.meta(Txn { t: 20, reads: vec![(key(1), ts(5))], writes: vec![(1, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&w1), Some(Vote::Commit));
    let w4 = fx.meta(Txn { t: 21, reads: vec![(key(4), ts(5))], writes: vec![(4, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&w4), Some(Vote::Commit));
    let t = restrict(fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) }));
    let req = sign_client(ClientId(1), Some(&fx.client), Prepare { meta: t.clone() });
    assert_eq!(fx.send(Message::Prepare(req)), vec![Message::Waiting { txn: t.id(), on: vec![w4.id()] }]);
}

/// `a BETWEEN 40 AND 60` over table t, whose index on `a` it restricts.
fn a_from_40_to_60(mut m: TxnMeta) -> TxnMeta {
    use pistou_sql::expr::CmpOp;
    let cmp = |op, v| Expr::Cmp(op, Box::new(Expr::Column(1)), Box::new(Expr::Const(Value::Int(v))));
    let expr = Expr::And(Box::new(cmp(CmpOp::GtEq, 40)), Box::new(cmp(CmpOp::LtEq, 60)));
    for p in &mut m.predicates {
        p.predicate = (Predicate { table: "t".into(), expr: expr.clone() }).to_wire().expect("encode");
    }
    m
}

/// With an index on the predicate's column, the semantic check looks writes up by index key
/// (keys with a version or logged write inside the index range) instead of walking the
/// window. The lookup must hide no verdict: lines 12, 15 and 18 as without the index.
#[test]
fn an_index_range_hides_no_conflict_inside_it() {
    let indexed = || {
        let index = IndexSchema {
            name: "t_a".into(),
            columns: vec![1],
            unique: false,
            orders: Vec::new(),
            expressions: Vec::new(),
        };
        fixture_of(SqlConfig { grace_us: 0, ..SqlConfig::default() }, vec![index])
    };
    let genesis = Timestamp::GENESIS;
    // Line 12: a missed a = 50 aborts the reader; a missed a = 70 does not.
    let mut fx = indexed();
    let outside = fx.meta(Txn { t: 20, reads: vec![(key(1), genesis)], writes: vec![(1, Some(70))], predicate: None });
    assert_eq!(fx.prepare(&outside), Some(Vote::Commit));
    let reader = a_from_40_to_60(fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) }));
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit), "a = 70 is outside the index range");
    let missed = fx.meta(Txn { t: 22, reads: vec![(key(2), genesis)], writes: vec![(2, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&missed), Some(Vote::Abort), "line 18: a = 50 enters the prepared reader's predicate");
    let mut fx = indexed();
    let w = fx.meta(Txn { t: 20, reads: vec![(key(2), genesis)], writes: vec![(2, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let t = a_from_40_to_60(fx.meta(Txn { t: 30, reads: vec![], writes: vec![], predicate: Some(ts(10)) }));
    assert_eq!(fx.prepare(&t), Some(Vote::Abort));

    // Line 15: prepared writers move ids 1 (a = 90) and 4 (a = 50) out of the range; only
    // id 4 had a version inside it, so its writer alone is a dependency, although its own
    // row's index key (a = 1) lies outside the range.
    only_the_writer_hiding_a_match_is_a_dependency(indexed(), 90, a_from_40_to_60);
}

#[test]
fn hostile_sql_content_gets_an_abort_vote() {
    let mut fx = fixture();
    // A row value that is not a row.
    let mut garbage = fx.meta(Txn { t: 20, reads: vec![], writes: vec![(1, Some(1))], predicate: None });
    garbage.write_set[0].value = Some(vec![0xff, 0xff, 0xff]);
    assert_eq!(fx.prepare(&garbage), Some(Vote::Abort));
    // A row whose primary key does not match its key.
    let mut mismatch = fx.meta(Txn { t: 21, reads: vec![], writes: vec![(1, Some(1))], predicate: None });
    mismatch.write_set[0].value = Some(postcard::to_allocvec(&vec![Value::Int(2), Value::Int(1)]).expect("row"));
    assert_eq!(fx.prepare(&mismatch), Some(Vote::Abort));
    // SQL writes planned without reading the catalog.
    let mut no_catalog = fx.meta(Txn { t: 22, reads: vec![], writes: vec![(1, Some(1))], predicate: None });
    no_catalog.read_set.retain(|r| r.key != catalog_key(ShardId(0)));
    assert_eq!(fx.prepare(&no_catalog), Some(Vote::Abort));
    // A predicate that does not decode.
    let mut bad_pred = fx.meta(Txn { t: 23, reads: vec![], writes: vec![], predicate: Some(ts(10)) });
    bad_pred.predicates[0].predicate.nodes = vec![1, 2, 3];
    assert_eq!(fx.prepare(&bad_pred), Some(Vote::Abort));
    // The replica still works.
    let ok =
        fx.meta(Txn { t: 24, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&ok), Some(Vote::Commit));
}

/// A catalog write is accepted only if its changes, applied in order to the catalog read,
/// give exactly the catalog it carries; one without changes is refused.
#[test]
fn a_catalog_write_must_be_the_result_of_its_changes() {
    let mut fx = fixture();
    let col = |name: &str| int_column(name, None);
    fx.load(20, &[(1, 5)]);
    let written = fx.ddl.write_set[0].value.as_deref().expect("the fixture's catalog");
    let before = postcard::from_bytes::<CatalogWrite>(written).expect("decode").catalog;
    let add = |name: &str| CatalogChange::AddColumn { table: "t".into(), column: col(name) };
    let mut two = before.clone();
    two.apply(&add("b"), &EngineRules).expect("b");
    two.apply(&add("c"), &EngineRules).expect("c");
    let ddl = |t: u64, write: &CatalogWrite| TxnMeta {
        ts: ts(t),
        read_set: vec![ReadEntry { key: catalog_key(ShardId(0)), version: ts(1) }],
        write_set: vec![WriteEntry {
            key: catalog_key(ShardId(0)),
            value: Some(postcard::to_allocvec(write).expect("encode")),
        }],
        deps: vec![],
        predicates: vec![],
        late: false,
        shards: vec![ShardId(0)],
    };
    let none = CatalogWrite { changes: vec![], catalog: before.clone() };
    assert_eq!(fx.prepare(&ddl(30, &none)), Some(Vote::Abort), "no change");
    let one_missing = CatalogWrite { changes: vec![add("b")], catalog: two.clone() };
    assert_eq!(fx.prepare(&ddl(31, &one_missing)), Some(Vote::Abort), "a change left out");
    let reordered = CatalogWrite { changes: vec![add("c"), add("b")], catalog: two.clone() };
    assert_eq!(fx.prepare(&ddl(32, &reordered)), Some(Vote::Abort), "changes in another order");
    let both = CatalogWrite { changes: vec![add("b"), add("c")], catalog: two };
    assert_eq!(fx.prepare(&ddl(33, &both)), Some(Vote::Commit));
    fx.commit(&ddl(33, &both));
    fx.catalog = ts(33);
    let reply = fx.range_read(50, "SELECT id, a, b, c FROM t", vec![]);
    assert_eq!(rows_of(&reply), vec![vec![Value::Int(1), Value::Int(5), Value::Null, Value::Null]]);
}

/// A transaction may write rows with its schema changes: rows in the schema it writes
/// (those of a table it creates are installed at commit), checked before its vote.
#[test]
fn rows_written_with_a_schema_change_are_in_the_schema_written() {
    let mut fx = fixture();
    fx.load(20, &[(1, 5)]);
    let written = fx.ddl.write_set[0].value.as_deref().expect("the fixture's catalog");
    let before = postcard::from_bytes::<CatalogWrite>(written).expect("decode").catalog;
    let create = CatalogChange::CreateTable(TableSchema {
        name: "n".into(),
        id: 0,
        columns: vec![int_column("id", None), int_column("v", None)],
        primary_key: vec![0],
        indexes: vec![],
        constraints: Default::default(),
        stored_as: None,
    });
    let mut after = before.clone();
    after.apply(&create, &EngineRules).expect("create n");
    let n_id = after.table("n").expect("n").id;
    let write = CatalogWrite { changes: vec![create], catalog: after };
    let row = |table: &str, id: u64, values: Vec<Value>| WriteEntry {
        key: row_key(table, id, &encode_key([&values[0]])).expect("key"),
        value: Some(postcard::to_allocvec(&values).expect("row")),
    };
    let txn = |t: u64, rows: Vec<WriteEntry>| {
        let mut write_set = rows;
        write_set.push(WriteEntry {
            key: catalog_key(ShardId(0)),
            value: Some(postcard::to_allocvec(&write).expect("encode")),
        });
        write_set.sort_by(|a, b| a.key.cmp(&b.key));
        TxnMeta {
            ts: ts(t),
            read_set: vec![ReadEntry { key: catalog_key(ShardId(0)), version: ts(1) }],
            write_set,
            deps: vec![],
            predicates: vec![],
            late: false,
            shards: vec![ShardId(0)],
        }
    };
    let short = txn(30, vec![row("n", n_id, vec![Value::Int(1)])]);
    assert_eq!(fx.prepare(&short), Some(Vote::Abort), "a row without the new table's columns");
    let unknown = txn(31, vec![row("n", n_id + 1, vec![Value::Int(1), Value::Int(2)])]);
    assert_eq!(fx.prepare(&unknown), Some(Vote::Abort), "a row of another table identity");
    let ok = txn(
        32,
        vec![row("n", n_id, vec![Value::Int(1), Value::Int(2)]), row("t", T_ID, vec![Value::Int(2), Value::Int(7)])],
    );
    assert_eq!(fx.prepare(&ok), Some(Vote::Commit));
    fx.commit(&ok);
    fx.catalog = ts(32);
    assert_eq!(rows_of(&fx.range_read(50, "SELECT id, v FROM n", vec![])), vec![vec![Value::Int(1), Value::Int(2)]]);
    let t_rows = rows_of(&fx.range_read(50, "SELECT id, a FROM t ORDER BY id", vec![]));
    assert_eq!(t_rows, vec![vec![Value::Int(1), Value::Int(5)], vec![Value::Int(2), Value::Int(7)]]);
}

impl Fixture {
    fn range_read(&mut self, t: u64, sql: &str, pending: Vec<WriteEntry>) -> RangeReply {
        let out = self.send(self.range_message(1, ts(t), sql, pending));
        match out.as_slice() {
            [Message::RangeReply(r)] => r.body.clone(),
            other => panic!("expected one range reply, got {other:?}"),
        }
    }

    /// Commits rows (id, a) in one transaction at `t`.
    fn load(&mut self, t: u64, rows: &[(i64, i64)]) -> TxnMeta {
        let m = self.meta(Txn {
            t,
            reads: rows.iter().map(|(id, _)| (key(*id), Timestamp::GENESIS)).collect(),
            writes: rows.iter().map(|(id, a)| (*id, Some(*a))).collect(),
            predicate: None,
        });
        assert_eq!(self.prepare(&m), Some(Vote::Commit));
        self.commit(&m);
        m
    }
}

fn rows_of(reply: &RangeReply) -> Vec<Vec<Value>> {
    match &reply.result {
        Ok(RangeResult { output: QueryOutput::Rows(rows), .. }) => rows.clone(),
        other => panic!("expected rows, got {other:?}"),
    }
}

#[test]
fn range_read_reports_result_active_rows_predicate_and_snapshot_vote() {
    let mut fx = fixture();
    let loaded = fx.load(10, &[(1, 5), (2, 50), (3, 70)]);
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(4), Timestamp::GENESIS)], writes: vec![(4, Some(90))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit)); // prepared, not committed
    let reply = fx.range_read(30, "SELECT id FROM t WHERE a > 10", vec![]);
    assert_eq!(
        rows_of(&reply),
        vec![vec![Value::Int(2)], vec![Value::Int(3)]],
        "range reads see committed versions only"
    );
    let result = reply.result.as_ref().expect("ok");
    let reads: Vec<_> = result.reads.iter().map(|r| (r.key.clone(), r.version, r.prepared_by)).collect();
    assert_eq!(
        reads,
        vec![(key(2), ts(10), None), (key(3), ts(10), None)],
        "active rows only (row 1 fails the predicate)"
    );
    assert_eq!(result.predicates.len(), 1);
    assert_eq!(result.predicates[0].table_version, ts(10), "newest committed write below ts 30");
    assert_eq!(result.predicates[0].active, vec![key(2), key(3)]);
    assert_eq!(reply.ss_vote, vec![loaded.id()]);
    // Once committed, the write is visible to later range reads.
    fx.commit(&w);
    let after = fx.range_read(31, "SELECT id FROM t WHERE a > 10", vec![]);
    assert_eq!(rows_of(&after), vec![vec![Value::Int(2)], vec![Value::Int(3)], vec![Value::Int(4)]]);
    assert_eq!(after.result.as_ref().expect("ok").predicates[0].table_version, ts(20));
    // Below ts 15 only the first load is visible.
    assert_eq!(rows_of(&fx.range_read(15, "SELECT id FROM t WHERE a > 10", vec![])).len(), 2);
}

#[test]
fn range_read_reconnaissance_returns_writes_and_applies_nothing() {
    let mut fx = fixture();
    fx.load(10, &[(1, 5), (2, 50)]);
    let reply = fx.range_read(30, "UPDATE t SET a = a + 1 WHERE a > 10", vec![]);
    let result = reply.result.expect("ok");
    assert!(matches!(result.output, QueryOutput::Affected { count: 1, .. }));
    assert_eq!(result.writes.len(), 1);
    assert_eq!(result.writes[0].key, key(2));
    let row: Vec<Value> = postcard::from_bytes(result.writes[0].value.as_deref().expect("upsert")).expect("row");
    assert_eq!(row, vec![Value::Int(2), Value::Int(51)]);
    assert_eq!(rows_of(&fx.range_read(31, "SELECT a FROM t WHERE id = 2", vec![])), vec![vec![Value::Int(50)]]);
    // An INSERT relies on its key being absent: reported as a read at GENESIS.
    let ins = fx.range_read(32, "INSERT INTO t VALUES (7, 1)", vec![]).result.expect("ok");
    assert_eq!(
        ins.reads.iter().map(|r| (r.key.clone(), r.version)).collect::<Vec<_>>(),
        vec![(key(7), Timestamp::GENESIS)]
    );
}

#[test]
fn range_read_sees_the_transactions_own_buffered_writes() {
    let mut fx = fixture();
    fx.load(10, &[(1, 5)]);
    let pending = vec![WriteEntry {
        key: key(9),
        value: Some(postcard::to_allocvec(&vec![Value::Int(9), Value::Int(99)]).expect("row")),
    }];
    let reply = fx.range_read(30, "SELECT id FROM t WHERE a > 10", pending);
    assert_eq!(rows_of(&reply), vec![vec![Value::Int(9)]]);
    assert!(reply.result.expect("ok").reads.is_empty(), "own writes are not read dependencies");
}

#[test]
fn range_read_errors_carry_sqlstates() {
    let mut fx = fixture();
    let state = |r: RangeReply| r.result.expect_err("error").sqlstate().to_string();
    assert_eq!(state(fx.range_read(30, "SELECT * FROM nope", vec![])), "42P01");
    assert_eq!(state(fx.range_read(30, "SELEC 1", vec![])), "42601");
    fx.catalog = ts(0); // a schema version this replica never committed
    assert_eq!(state(fx.range_read(30, "SELECT * FROM t", vec![])), "40001");
    fx.catalog = ts(1);
    let garbage = vec![WriteEntry { key: key(1), value: Some(vec![0xff; 4]) }];
    assert_eq!(state(fx.range_read(30, "SELECT * FROM t", garbage)), "08P01");
}

/// A statement decodes only the buffered writes of the tables it reads or writes: the engine
/// looks at no others, and a transaction's buffer spans every table it wrote.
#[test]
fn range_read_decodes_only_the_buffered_writes_of_its_tables() {
    let mut fx = fixture();
    fx.load(10, &[(1, 5)]);
    let elsewhere = row_key("u", 1, &encode_key([&Value::Int(1)])).expect("key");
    let row = |id: i64| Some(postcard::to_allocvec(&vec![Value::Int(id), Value::Int(99)]).expect("row"));
    let pending =
        vec![WriteEntry { key: elsewhere, value: Some(vec![0xff; 4]) }, WriteEntry { key: key(9), value: row(9) }];
    let reply = fx.range_read(30, "SELECT id FROM t WHERE a > 10", pending.clone());
    assert_eq!(rows_of(&reply), vec![vec![Value::Int(9)]], "t's buffered row is seen; u's is never decoded");
    let mut bad = pending;
    bad[1].value = Some(vec![0xff; 4]);
    let state =
        fx.range_read(31, "SELECT id FROM t WHERE a > 10", bad).result.expect_err("error").sqlstate().to_string();
    assert_eq!(state, "08P01", "an undecodable buffered row of the statement's own table is still refused");
}

#[test]
fn line3_a_write_below_a_reported_table_version_is_not_monotonic() {
    let mut fx = fixture();
    fx.load(20, &[(1, 50)]);
    // A reader at ts 40 is told table version 20 (grace is 0 here).
    assert!(fx.range_read(40, "SELECT id FROM t WHERE a > 10", vec![]).result.is_ok());
    let late =
        fx.meta(Txn { t: 15, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&late), Some(Vote::Abort), "a reader's completeness window starts at 20");
    let fine =
        fx.meta(Txn { t: 25, reads: vec![(key(3), Timestamp::GENESIS)], writes: vec![(3, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&fine), Some(Vote::Commit));
}

#[test]
fn a_writeback_arriving_after_a_later_schema_change_still_lands() {
    let mut fx = fixture();
    // T (ts 20) inserts row 1 under the old schema and prepares here.
    let t =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(5))], predicate: None });
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
    // D (ts 30) adds a column with a default; it is ordered after T and commits first here.
    let change = CatalogChange::AddColumn { table: "t".into(), column: int_column("b", Some(Value::Int(7))) };
    let d = fx.schema_change(30, vec![change]);
    assert_eq!(fx.prepare(&d), Some(Vote::Commit));
    fx.commit(&d);
    // T's writeback arrives last: its row is kept, padded with the new column's default.
    fx.commit(&t);
    fx.catalog = ts(30);
    let reply = fx.range_read(40, "SELECT id, a, b FROM t", vec![]);
    assert_eq!(rows_of(&reply), vec![vec![Value::Int(1), Value::Int(5), Value::Int(7)]]);
}

#[test]
fn rows_written_before_a_rename_land_in_the_renamed_table_and_not_in_a_new_one() {
    let mut fx = fixture();
    fx.load(10, &[(2, 9)]);
    // T (ts 20) inserts row 1 into t and prepares here.
    let t =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(5))], predicate: None });
    assert_eq!(fx.prepare(&t), Some(Vote::Commit));
    // D (ts 30) renames t to r and creates a new t; ordered after T, it commits first here.
    let mut new_t = fx_create_t();
    if let CatalogChange::CreateTable(schema) = &mut new_t {
        schema.columns.push(int_column("c", None));
    }
    let rename = CatalogChange::RenameTable { table: "t".into(), to: "r".into() };
    let d = fx.schema_change(30, vec![rename, new_t]);
    assert_eq!(fx.prepare(&d), Some(Vote::Commit));
    fx.commit(&d);
    // T's writeback arrives last: its row (keyed by t's storage name and identity) is r's.
    fx.commit(&t);
    fx.catalog = ts(30);
    let reply = fx.range_read(40, "SELECT id, a FROM r ORDER BY id", vec![]);
    assert_eq!(rows_of(&reply), vec![vec![Value::Int(1), Value::Int(5)], vec![Value::Int(2), Value::Int(9)]]);
    assert_eq!(rows_of(&fx.range_read(41, "SELECT * FROM t", vec![])), Vec::<Vec<Value>>::new());
    // A later writer of the new t writes under its own storage name.
    let reply = fx.range_read(42, "INSERT INTO t VALUES (1, 1, 1)", vec![]);
    let written = &reply.result.as_ref().expect("insert").writes;
    let row_table = |k: &[u8]| match key_kind(k) {
        KeyKind::Row { table, table_id, .. } => (table.to_string(), table_id),
        other => panic!("{other:?}"),
    };
    assert_eq!(written.len(), 1);
    let (storage, id) = row_table(&written[0].key);
    assert_ne!(id, T_ID);
    assert_eq!(storage, format!("t\0{id}"), "t is still r's storage name");
    fx.replica.check_invariants().expect("invariants");
}

#[test]
fn gc_refuses_reads_below_the_watermark_and_keeps_the_latest_version() {
    let mut fx = fixture();
    fx.load(10, &[(1, 5)]);
    let update = fx.meta(Txn { t: 20, reads: vec![(key(1), ts(10))], writes: vec![(1, Some(6))], predicate: None });
    assert_eq!(fx.prepare(&update), Some(Vote::Commit));
    fx.commit(&update);
    // Far later, the watermark passes both versions.
    let later = NOW + 1_000_000_000;
    fx.replica.tick(later);
    let read_at = |fx: &mut Fixture, now: u64, at: Timestamp| {
        let request = fx.range_message(1, at, "SELECT a FROM t WHERE a > 0", vec![]);
        fx.replica.handle(now, 7, request);
        fx.replica.flush();
        match fx.replica.take_outputs().pop() {
            Some((_, Message::RangeReply(r))) => r.body.result,
            other => panic!("expected a range reply, got {other:?}"),
        }
    };
    let old = read_at(&mut fx, later, ts(15));
    assert_eq!(old.expect_err("below the watermark").state, pistou_sql::SqlState::SnapshotTooOld);
    let now_ts = Timestamp { time: later, client: ClientId(1), seq: 99 };
    match read_at(&mut fx, later, now_ts).expect("current read") {
        RangeResult { output: QueryOutput::Rows(rows), .. } => assert_eq!(rows, vec![vec![Value::Int(6)]]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn line12_a_key_read_by_a_later_statement_does_not_cover_the_predicate() {
    let mut fx = fixture();
    // W (ts 20) inserts a = 50 and commits.
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    fx.commit(&w);
    // T (ts 30): its first statement evaluated `a > 10` before W arrived (row 1 not among
    // the keys it read); a later statement read row 1 at W's version. The predicate's result
    // is still incomplete: abort.
    let mut t = fx.meta(Txn { t: 30, reads: vec![(key(1), ts(20))], writes: vec![], predicate: Some(ts(10)) });
    t.predicates[0].active.clear();
    assert_eq!(fx.prepare(&t), Some(Vote::Abort));
    // The same transaction where the predicate's own evaluation read row 1 commits.
    let t2 = fx.meta(Txn { t: 31, reads: vec![(key(1), ts(20))], writes: vec![], predicate: Some(ts(10)) });
    assert_eq!(fx.prepare(&t2), Some(Vote::Commit));
}

#[test]
fn a_scan_of_a_never_written_table_commits_after_the_watermark_moved() {
    let mut fx = fixture();
    // The watermark passes GENESIS (not ts(1): the table's creation stays readable).
    fx.replica.tick(NOW);
    let reply = fx.range_read(40, "SELECT id FROM t WHERE a > 10", vec![]);
    let result = reply.result.expect("ok");
    assert_eq!(result.predicates[0].table_version, Timestamp::GENESIS, "nothing was ever written to t");
    // Its completeness window starts below the watermark, yet no write in it was collected:
    // the check is exact and the reader commits (it used to abort, always).
    let reader = fx.meta(Txn { t: 50, reads: vec![], writes: vec![], predicate: Some(Timestamp::GENESIS) });
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit));
}

#[test]
fn a_scan_of_a_table_idle_past_the_watermark_commits() {
    let mut fx = fixture();
    fx.load(10, &[(1, 50)]);
    fx.load(20, &[(2, 60)]);
    // Far later, the watermark passes both writes; the table version a reader is told is
    // the newest one's timestamp.
    let later: u64 = 1_000_000_000;
    fx.now = NOW + later;
    fx.replica.tick(fx.now);
    let reply = fx.range_read(later + 1_000_040, "SELECT id FROM t WHERE a > 10", vec![]);
    let table_version = reply.result.expect("ok").predicates[0].table_version;
    assert_eq!(table_version, ts(20));
    // The reader's completeness window reaches the long grace below its table version. The
    // write log kept the writes in it, so the check is exact and the reader commits (it
    // used to abort, always, once the watermark had passed a quiet table's last writes).
    let reads = vec![(key(1), ts(10)), (key(2), ts(20))];
    let reader = fx.meta(Txn { t: later + 1_000_050, reads, writes: vec![], predicate: Some(table_version) });
    assert_eq!(fx.prepare(&reader), Some(Vote::Commit));
}

// ---- Two-tier grace (App. B.9) ----

/// Short grace 10 µs, long grace 100 µs.
fn two_tier_fixture() -> Fixture {
    fixture_with(SqlConfig { grace_us: 10, late_grace_us: 100, ..SqlConfig::default() })
}

fn late(mut m: TxnMeta) -> TxnMeta {
    m.late = true;
    m
}

#[test]
fn b9_line3_a_late_writer_gets_the_long_window_and_others_the_short_one() {
    let mut fx = two_tier_fixture();
    fx.load(200, &[(1, 50)]);
    // A reader at ts 400 is told table version 200.
    assert!(fx.range_read(400, "SELECT id FROM t WHERE a > 10", vec![]).result.is_ok());
    let write = |fx: &Fixture, t: u64, id: i64| {
        fx.meta(Txn { t, reads: vec![(key(id), Timestamp::GENESIS)], writes: vec![(id, Some(1))], predicate: None })
    };
    // 185 is 15 below the table version: past the short grace, inside the long one.
    assert_eq!(fx.prepare(&write(&fx, 185, 2)), Some(Vote::Abort), "an on-time writer gets the short window");
    assert_eq!(fx.prepare(&late(write(&fx, 186, 3))), Some(Vote::Commit), "a late writer gets the long window");
    // 90 is 110 below: past the long grace too.
    assert_eq!(fx.prepare(&late(write(&fx, 90, 4))), Some(Vote::Abort));
    assert_eq!(fx.prepare(&write(&fx, 195, 5)), Some(Vote::Commit), "inside the short window");
}

#[test]
fn b9_line12_readers_check_late_writes_over_the_long_window_and_others_over_the_short_one() {
    let mut fx = two_tier_fixture();
    // Two prepared writes matching `a > 10`: an on-time one at 150 and a late one at 170.
    let on_time = fx.meta(Txn {
        t: 150,
        reads: vec![(key(2), Timestamp::GENESIS)],
        writes: vec![(2, Some(50))],
        predicate: None,
    });
    assert_eq!(fx.prepare(&on_time), Some(Vote::Commit));
    let late_w = late(fx.meta(Txn {
        t: 170,
        reads: vec![(key(3), Timestamp::GENESIS)],
        writes: vec![(3, Some(60))],
        predicate: None,
    }));
    assert_eq!(fx.prepare(&late_w), Some(Vote::Commit));
    // Readers with table version 200 that did not read row 2: the on-time write at 150 lies
    // 50 below, past the short grace, so it is not checked ...
    let r1 = fx.meta(Txn { t: 300, reads: vec![(key(3), ts(170))], writes: vec![], predicate: Some(ts(200)) });
    assert_eq!(fx.prepare(&r1), Some(Vote::Commit));
    // ... while the late write at 170 (30 below) is, and aborts a reader that missed it.
    let r2 = fx.meta(Txn { t: 301, reads: vec![], writes: vec![], predicate: Some(ts(200)) });
    assert_eq!(fx.prepare(&r2), Some(Vote::Abort));
    // With table version 155, the on-time write at 150 is inside the short window.
    let r3 = fx.meta(Txn { t: 302, reads: vec![(key(3), ts(170))], writes: vec![], predicate: Some(ts(155)) });
    assert_eq!(fx.prepare(&r3), Some(Vote::Abort));
}

// ---- Snapshot path (§5.5 steps 5, 5.A, 5.B) ----

fn rid(index: u32) -> ReplicaId {
    ReplicaId { shard: ShardId(0), index }
}

impl Fixture {
    /// Another replica of the shard that has applied `committed` (writebacks).
    fn peer(&self, index: u32, committed: &[&TxnMeta]) -> Replica {
        let mut peer =
            Replica::new(self.config.clone(), rid(index), Some(clone_key(&self.keys[index as usize]))).expect("peer");
        for m in std::iter::once(&self.ddl).chain(committed.iter().copied()) {
            let cert = DecisionCert::Commit(CommitCert::Fast(vec![self.votes(m, Vote::Commit)]));
            peer.handle(NOW, 7, Message::Writeback(Writeback { meta: m.clone(), cert }));
        }
        peer.take_outputs();
        peer
    }

    fn snapshot_read(&mut self, t: u64, sql: &str, txns: Vec<SsEntry>) -> Vec<Message> {
        let req = RangeRead {
            ts: ts(t),
            catalog_version: self.catalog,
            sql: sql.into(),
            params: vec![],
            pending: vec![],
            snapshot: Some(SsProp { txns }),
            sequences: vec![],
            random_seed: [0; 32],
            lastval: None,
        };
        self.send(Message::RangeRead(std::sync::Arc::new(sign_client(ClientId(1), Some(&self.client), req))))
    }
}

#[test]
fn snapshot_read_fetches_a_missing_commit_with_sync_then_executes() {
    let mut fx = fixture();
    // W (ts 20) inserts a = 50: prepared here, but its writeback never reached us.
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    let mut peer = fx.peer(1, &[&w]);
    // The eager read here misses W (committed versions only); the peer's read has it and
    // votes for it.
    assert!(rows_of(&fx.range_read(30, "SELECT id FROM t WHERE a > 10", vec![])).is_empty());
    // The client proposes W, voted by replicas 1 and 2: the query parks, SYNC goes to both.
    let out = fx.snapshot_read(30, "SELECT id FROM t WHERE a > 10", vec![SsEntry { txn: w.id(), voters: vec![1, 2] }]);
    assert!(out.is_empty(), "no reply before W is applied: {out:?}");
    assert_eq!(fx.replica.parked_queries(), 1);
    let syncs = fx.replica.take_replica_outputs();
    assert_eq!(syncs, vec![(rid(1), Message::Sync { txn: w.id() }), (rid(2), Message::Sync { txn: w.id() })]);
    // The peer supplies W with its certificate; the query runs and now sees W.
    peer.handle_replica(NOW, rid(0), Message::Sync { txn: w.id() });
    let supplies = peer.take_replica_outputs();
    let [(to, supply @ Message::Supply(_))] = supplies.as_slice() else {
        panic!("expected one SUPPLY, got {supplies:?}")
    };
    assert_eq!(*to, rid(0));
    fx.replica.handle_replica(NOW, rid(1), supply.clone());
    fx.replica.flush();
    let replies: Vec<RangeReply> = fx
        .replica
        .take_outputs()
        .into_iter()
        .filter_map(|(_, m)| match m {
            Message::RangeReply(r) => Some(r.body),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(rows_of(&replies[0]), vec![vec![Value::Int(1)]]);
    assert!(
        replies[0].ss_vote.is_empty(),
        "a snapshot round's reply votes for nothing: only eager votes build proposals"
    );
    assert_eq!(fx.replica.parked_queries(), 0);
    assert_eq!(
        fx.replica.decision_of(&w.id()),
        Some(pistou_wire::Decision::Commit),
        "the supplied commit is applied for good"
    );
}

#[test]
fn a_snapshot_of_applied_transactions_runs_at_once_and_a_sync_for_an_unknown_one_is_ignored() {
    let mut fx = fixture();
    let w = fx.load(20, &[(1, 50)]);
    assert_eq!(
        fx.range_read(30, "SELECT id FROM t WHERE a > 10", vec![]).ss_vote,
        vec![w.id()],
        "the eager round votes for W"
    );
    let out = fx.snapshot_read(30, "SELECT id FROM t WHERE a > 10", vec![SsEntry { txn: w.id(), voters: vec![3, 4] }]);
    assert!(
        matches!(out.as_slice(), [Message::RangeReply(r)] if rows_of(&r.body) == vec![vec![Value::Int(1)]] && r.body.ss_vote.is_empty())
    );
    assert!(fx.replica.take_replica_outputs().is_empty());
    fx.replica.handle_replica(NOW, rid(2), Message::Sync { txn: pistou_core::TxnId([9; 32]) });
    assert!(fx.replica.take_replica_outputs().is_empty(), "nothing to supply");
}

#[test]
fn a_fabricated_snapshot_only_stalls_its_own_query_and_expires() {
    let mut fx = fixture();
    fx.load(20, &[(1, 50)]);
    let ghost = pistou_core::TxnId([7; 32]);
    let out = fx.snapshot_read(30, "SELECT id FROM t", vec![SsEntry { txn: ghost, voters: vec![1, 2] }]);
    assert!(out.is_empty());
    assert_eq!(fx.replica.take_replica_outputs().len(), 2);
    // Other queries are unaffected.
    assert_eq!(rows_of(&fx.range_read(31, "SELECT id FROM t", vec![])), vec![vec![Value::Int(1)]]);
    // Unanswered SYNCs go to every voter once; then the query expires without a reply.
    fx.replica.tick(NOW + 60_000);
    assert_eq!(fx.replica.take_replica_outputs().len(), 2);
    fx.replica.tick(NOW + 3_000_000);
    fx.replica.flush();
    assert_eq!(fx.replica.parked_queries(), 0);
    assert!(fx.replica.take_outputs().is_empty());
    assert_eq!(fx.replica.rejections().count(pistou_txn::RejectReason::SnapshotExpired), 1);
}

#[test]
fn malformed_or_excessive_snapshot_proposals_are_refused() {
    let mut fx = fixture();
    let t = |i: u8| pistou_core::TxnId([i; 32]);
    // One voter is not f+1 = 2.
    assert!(fx.snapshot_read(30, "SELECT id FROM t", vec![SsEntry { txn: t(1), voters: vec![1] }]).is_empty());
    // A voter index outside the shard; unsorted transactions.
    assert!(fx.snapshot_read(30, "SELECT id FROM t", vec![SsEntry { txn: t(1), voters: vec![1, 6] }]).is_empty());
    let unsorted = vec![SsEntry { txn: t(2), voters: vec![1, 2] }, SsEntry { txn: t(1), voters: vec![1, 2] }];
    assert!(fx.snapshot_read(30, "SELECT id FROM t", unsorted).is_empty());
    assert_eq!(fx.replica.rejections().count(pistou_txn::RejectReason::BadSnapshot), 3);
    assert_eq!(fx.replica.parked_queries(), 0);
    // One client parks at most MAX_PARKED_PER_CLIENT queries.
    for i in 0..20u8 {
        fx.snapshot_read(40 + i as u64, "SELECT id FROM t", vec![SsEntry { txn: t(100 + i), voters: vec![1, 2] }]);
    }
    assert_eq!(fx.replica.parked_queries(), 16);
    assert_eq!(fx.replica.rejections().count(pistou_txn::RejectReason::TooManyParked), 4);
}

#[test]
fn ss_vote_names_the_writer_of_an_active_negative_version() {
    let mut fx = fixture();
    fx.load(10, &[(1, 50)]);
    // U (ts 20) makes row 1 stop satisfying `a > 10`.
    let u = fx.meta(Txn { t: 20, reads: vec![(key(1), ts(10))], writes: vec![(1, Some(5))], predicate: None });
    assert_eq!(fx.prepare(&u), Some(Vote::Commit));
    fx.commit(&u);
    let reply = fx.range_read(30, "SELECT id FROM t WHERE a > 10", vec![]);
    assert!(rows_of(&reply).is_empty());
    // A replica lacking U would report row 1 as active; voting for U lets the snapshot
    // bring that replica forward (App. B.5.1).
    assert_eq!(reply.ss_vote, vec![u.id()]);
    // A row that never satisfied the predicate is not active-negative.
    let v =
        fx.meta(Txn { t: 40, reads: vec![(key(2), Timestamp::GENESIS)], writes: vec![(2, Some(3))], predicate: None });
    assert_eq!(fx.prepare(&v), Some(Vote::Commit));
    fx.commit(&v);
    assert_eq!(fx.range_read(50, "SELECT id FROM t WHERE a > 10", vec![]).ss_vote, vec![u.id()]);
}

#[test]
fn active_negatives_of_a_key_range_scan_come_from_inside_its_range() {
    let mut fx = fixture();
    fx.load(10, &[(1, 50), (7, 50)]);
    // U (ts 20) makes row 1 stop satisfying `a > 10`; D (ts 25) deletes row 7.
    let u = fx.meta(Txn { t: 20, reads: vec![(key(1), ts(10))], writes: vec![(1, Some(5))], predicate: None });
    let d = fx.meta(Txn { t: 25, reads: vec![(key(7), ts(10))], writes: vec![(7, None)], predicate: None });
    for txn in [&u, &d] {
        assert_eq!(fx.prepare(txn), Some(Vote::Commit));
        fx.commit(txn);
    }
    let votes = |fx: &mut Fixture, sql: &str| fx.range_read(30, sql, vec![]).ss_vote;
    assert_eq!(votes(&mut fx, "SELECT id FROM t WHERE id >= 1 AND id <= 3 AND a > 10"), vec![u.id()]);
    assert_eq!(votes(&mut fx, "SELECT id FROM t WHERE id >= 5 AND id <= 9 AND a > 10"), vec![d.id()]);
    assert!(votes(&mut fx, "SELECT id FROM t WHERE id >= 2 AND id <= 6 AND a > 10").is_empty());
    let mut both = vec![u.id(), d.id()];
    both.sort();
    assert_eq!(votes(&mut fx, "SELECT id FROM t WHERE id IN (1, 7) AND a > 10"), both);
    assert_eq!(votes(&mut fx, "SELECT id FROM t WHERE a > 10"), both);
}

#[test]
fn a_skipped_prepared_write_lowers_the_table_version_so_the_reader_checks_it() {
    let mut fx = fixture();
    // W (ts 20) inserts a = 50 and stays prepared; C (ts 40) writes another row and commits.
    let w =
        fx.meta(Txn { t: 20, reads: vec![(key(1), Timestamp::GENESIS)], writes: vec![(1, Some(50))], predicate: None });
    assert_eq!(fx.prepare(&w), Some(Vote::Commit));
    fx.load(40, &[(2, 1)]);
    // A range read at 50 skips W (committed versions only): its table version must not pass
    // W, or W, once committed, would fall outside the reader's completeness window.
    let reply = fx.range_read(50, "SELECT id FROM t WHERE a > 10", vec![]);
    let result = reply.result.expect("ok");
    assert!(
        result.predicates[0].table_version < ts(20),
        "table version {:?} passes the skipped write",
        result.predicates[0].table_version
    );
    // The reader, with that table version, is checked against W: W satisfies the predicate.
    let reader =
        fx.meta(Txn { t: 50, reads: vec![], writes: vec![], predicate: Some(result.predicates[0].table_version) });
    assert_eq!(fx.prepare(&reader), Some(Vote::Abort));
    // Once W is decided, the table version is the newest committed write again.
    fx.commit(&w);
    let after = fx.range_read(60, "SELECT id FROM t WHERE a > 10", vec![]).result.expect("ok");
    assert_eq!(after.predicates[0].table_version, ts(40));
}

/// Writebacks arrive in any order. T (ts 40) inserts into table u, planned against the
/// schema change D (ts 30) that created u; T's writeback reaches this replica before D's.
/// T must wait for D, not be dropped: a snapshot naming T stays parked meanwhile, and once
/// D lands, T's row is there and the parked query runs (found by the simulator: two
/// replicas that missed a CREATE TABLE voted abort on everything after it, for good).
#[test]
fn a_commit_planned_against_a_schema_change_not_yet_here_waits_for_it() {
    let mut fx = fixture();
    let col = |name: &str| int_column(name, None);
    let change = CatalogChange::CreateTable(TableSchema {
        name: "u".into(),
        id: 0,
        columns: vec![col("id"), col("a")],
        primary_key: vec![0],
        indexes: vec![],
        constraints: Default::default(),
        stored_as: None,
    });
    let mut catalog = Catalog::new();
    for c in [&fx_create_t(), &change] {
        catalog.apply(c, &EngineRules).expect("schema");
    }
    let u_id = catalog.table("u").expect("u").id;
    let d = TxnMeta {
        ts: ts(30),
        read_set: vec![ReadEntry { key: catalog_key(ShardId(0)), version: fx.catalog }],
        write_set: vec![WriteEntry {
            key: catalog_key(ShardId(0)),
            value: Some(postcard::to_allocvec(&CatalogWrite { changes: vec![change], catalog }).expect("encode")),
        }],
        deps: vec![],
        predicates: vec![],
        late: false,
        shards: vec![ShardId(0)],
    };
    let u_key = row_key("u", u_id, &encode_key([&Value::Int(1)])).expect("key");
    let mut read_set = vec![
        ReadEntry { key: catalog_key(ShardId(0)), version: ts(30) },
        ReadEntry { key: u_key.clone(), version: Timestamp::GENESIS },
    ];
    read_set.sort_by(|a, b| a.key.cmp(&b.key));
    let row = postcard::to_allocvec(&vec![Value::Int(1), Value::Int(9)]).expect("row");
    let t = TxnMeta {
        ts: ts(40),
        read_set,
        write_set: vec![WriteEntry { key: u_key, value: Some(row) }],
        deps: vec![],
        predicates: vec![],
        late: false,
        shards: vec![ShardId(0)],
    };
    fx.commit(&t);
    fx.catalog = ts(30);
    let out = fx.snapshot_read(50, "SELECT id, a FROM u", vec![SsEntry { txn: t.id(), voters: vec![1, 2] }]);
    assert!(out.is_empty(), "T is committed here but not applied: the snapshot waits for it: {out:?}");
    assert_eq!(fx.replica.parked_queries(), 1);
    let out = fx.commit(&d);
    let replies: Vec<&RangeReply> = out
        .iter()
        .filter_map(|m| match m {
            Message::RangeReply(r) => Some(&r.body),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 1, "the parked query ran once D and then T were applied: {out:?}");
    assert_eq!(rows_of(replies[0]), vec![vec![Value::Int(1), Value::Int(9)]]);
    assert_eq!(rows_of(&fx.range_read(60, "SELECT id, a FROM u", vec![])), vec![vec![Value::Int(1), Value::Int(9)]]);
}

/// The fixture's `CREATE TABLE t (id INT, a INT)`.
fn fx_create_t() -> CatalogChange {
    let col = |name: &str| int_column(name, None);
    CatalogChange::CreateTable(TableSchema {
        name: "t".into(),
        id: 0,
        columns: vec![col("id"), col("a")],
        primary_key: vec![0],
        indexes: vec![],
        constraints: Default::default(),
        stored_as: None,
    })
}

// ---- Range reads past their inline slice of work run as jobs (range_jobs.rs) ----

/// A fixture whose replica runs on its protocol thread only range reads of at most two units
/// of work (a point read: its row and its lookup): any scan of two rows or more becomes a job.
fn long_read_fixture() -> Fixture {
    let mut fx = fixture_with(SqlConfig { grace_us: 0, statement_inline_work: 2, ..SqlConfig::default() });
    fx.run_jobs = false;
    fx
}

impl Fixture {
    /// A range read of client `client` (1 or 2) at `t`.
    fn range_request(&self, client: u64, t: u64, sql: &str) -> Message {
        self.range_message(client, Timestamp { client: ClientId(client), ..ts(t) }, sql, vec![])
    }

    /// A signed RANGE-READ of client `client` (1 or 2) at `ts`.
    fn range_message(&self, client: u64, ts: Timestamp, sql: &str, pending: Vec<WriteEntry>) -> Message {
        let req = RangeRead {
            ts,
            catalog_version: self.catalog,
            sql: sql.into(),
            params: vec![],
            pending,
            snapshot: None,
            sequences: vec![],
            random_seed: [0; 32],
            lastval: None,
        };
        let key = if client == 1 { &self.client } else { &self.second_client };
        Message::RangeRead(Arc::new(sign_client(ClientId(client), Some(key), req)))
    }

    /// Delivers `msg` from connection `peer` without running range jobs (they stay queued,
    /// or out, until the test runs them).
    fn deliver(&mut self, peer: u64, msg: Message) -> Vec<Message> {
        self.replica.handle(self.now, peer, msg);
        self.flushed()
    }

    fn flushed(&mut self) -> Vec<Message> {
        self.replica.flush();
        self.replica.take_outputs().into_iter().map(|(_, m)| m).collect()
    }
}

fn range_replies(out: &[Message]) -> Vec<RangeReply> {
    out.iter()
        .filter_map(|m| match m {
            Message::RangeReply(r) => Some(r.body.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_long_range_read_runs_as_a_job_with_the_reply_it_would_have_had_inline() {
    const SQL: &str = "SELECT id FROM t WHERE a > 10";
    let rows = [(1, 5), (2, 50), (3, 70)];
    let mut inline = fixture();
    inline.load(10, &rows);
    let expected = inline.range_read(30, SQL, vec![]);
    let mut fx = long_read_fixture();
    fx.load(10, &rows);
    let request = fx.range_request(1, 30, SQL);
    assert!(range_replies(&fx.deliver(7, request)).is_empty(), "no reply before the job ran");
    assert_eq!(fx.replica.long_range_reads(), 1);
    let job = fx.replica.take_range_job().expect("a job");
    assert!(fx.replica.take_range_job().is_none(), "one job out at a time");
    fx.replica.range_job_done(job.run());
    let replies = range_replies(&fx.flushed());
    assert_eq!(replies.len(), 1);
    assert_eq!((&replies[0].result, &replies[0].ss_vote), (&expected.result, &expected.ss_vote));
    assert_eq!(fx.replica.long_range_reads(), 0);
    assert_eq!(fx.replica.stats().long_reads, 1);
    // A point read ends within the slice: answered at once.
    assert_eq!(range_replies(&fx.deliver(7, fx.range_request(1, 31, "SELECT a FROM t WHERE id = 2"))).len(), 1);
}

/// §6.1.3 on the job path: the table version a job will report is recorded when the job is
/// taken, so a write below it that arrives while the job runs is refused, as it would be
/// after an inline read.
#[test]
fn a_jobs_table_version_is_reserved_when_it_is_taken() {
    let mut fx = long_read_fixture();
    fx.load(20, &[(1, 50), (2, 60)]);
    fx.deliver(7, fx.range_request(1, 40, "SELECT id FROM t WHERE a > 10"));
    let job = fx.replica.take_range_job().expect("a job");
    let late =
        fx.meta(Txn { t: 15, reads: vec![(key(3), Timestamp::GENESIS)], writes: vec![(3, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&late), Some(Vote::Abort), "table version 20 is reserved while the job runs");
    fx.replica.range_job_done(job.run());
    let replies = range_replies(&fx.flushed());
    let result = replies[0].result.as_ref().expect("rows");
    assert_eq!(result.predicates[0].table_version, ts(20));
}

#[test]
fn a_queued_long_read_reserves_nothing_until_its_job_is_taken() {
    let mut fx = long_read_fixture();
    fx.load(20, &[(1, 50), (2, 60)]);
    fx.deliver(7, fx.range_request(1, 40, "SELECT id FROM t WHERE a > 10"));
    let late =
        fx.meta(Txn { t: 15, reads: vec![(key(3), Timestamp::GENESIS)], writes: vec![(3, Some(1))], predicate: None });
    assert_eq!(fx.prepare(&late), Some(Vote::Commit), "nothing reported yet");
    // Taken now, the job skips the prepared write: its table version is lowered below it.
    let job = fx.replica.take_range_job().expect("a job");
    fx.replica.range_job_done(job.run());
    let replies = range_replies(&fx.flushed());
    assert_eq!(replies[0].result.as_ref().expect("rows").predicates[0].table_version, Timestamp::at(ts(15).time));
}

#[test]
fn long_reads_nobody_waits_for_are_dropped_or_stopped() {
    use pistou_txn::RejectReason::LongReadAbandoned;
    let mut fx = long_read_fixture();
    fx.load(10, &[(1, 50), (2, 60)]);
    let scan = "SELECT id FROM t WHERE a > 10";
    // The connection closes: its queued read goes.
    fx.deliver(7, fx.range_request(1, 30, scan));
    fx.replica.close_session(7);
    assert_eq!(fx.replica.long_range_reads(), 0);
    assert_eq!(fx.replica.rejections().count(LongReadAbandoned), 1);
    // ABORT-READS of the transaction stops its job out: no reply.
    fx.deliver(8, fx.range_request(1, 31, scan));
    let job = fx.replica.take_range_job().expect("a job");
    let abort = pistou_wire::AbortReads { ts: ts(31), keys: vec![] };
    fx.deliver(8, Message::AbortReads(sign_client(ClientId(1), Some(&fx.client), abort)));
    fx.replica.range_job_done(job.run());
    assert!(range_replies(&fx.flushed()).is_empty(), "a stopped job has no reply");
    assert_eq!(fx.replica.rejections().count(LongReadAbandoned), 2);
    // Another statement of the same transaction replaces a queued one; a retransmission
    // of the same request is not queued twice.
    fx.deliver(8, fx.range_request(1, 32, scan));
    fx.deliver(8, fx.range_request(1, 32, scan));
    assert_eq!(fx.replica.long_range_reads(), 1);
    fx.deliver(8, fx.range_request(1, 32, "SELECT id FROM t WHERE a > 55"));
    assert_eq!(fx.replica.long_range_reads(), 1);
    assert_eq!(fx.replica.rejections().count(LongReadAbandoned), 3);
    fx.replica.run_range_jobs();
    let replies = range_replies(&fx.flushed());
    assert_eq!(rows_of(&replies[0]), vec![vec![Value::Int(2)]], "the later statement's rows");
    // A read whose timestamp falls below the watermark while it waits.
    fx.deliver(8, fx.range_request(1, 33, scan));
    fx.replica.tick(NOW + SqlConfig::default().gc_lag_us + 10_000_000);
    assert_eq!(fx.replica.long_range_reads(), 0);
    assert_eq!(fx.replica.rejections().count(LongReadAbandoned), 4);
}

#[test]
fn long_reads_are_bounded_per_client_and_clients_take_turns() {
    use pistou_txn::RejectReason::TooManyLongReads;
    let mut fx = long_read_fixture();
    fx.load(10, &[(1, 50), (2, 60)]);
    let scan = |n: u64| format!("SELECT id + {n} FROM t WHERE a > 10 ORDER BY 1");
    for n in 0..17 {
        fx.deliver(7, fx.range_request(1, 100 + n, &scan(n)));
    }
    assert_eq!(fx.replica.long_range_reads(), 16);
    assert_eq!(fx.replica.rejections().count(TooManyLongReads), 1, "client 1's 17th waiting read");
    fx.deliver(9, fx.range_request(2, 300, &scan(100)));
    assert_eq!(fx.replica.long_range_reads(), 17, "another client is not held back");
    // Client 1 was first, then client 2's single read, then client 1 again.
    let mut order = Vec::new();
    for _ in 0..3 {
        let job = fx.replica.take_range_job().expect("a job");
        fx.replica.range_job_done(job.run());
        let replies = range_replies(&fx.flushed());
        order.push(rows_of(&replies[0])[0][0].clone());
    }
    assert_eq!(order, vec![Value::Int(1), Value::Int(101), Value::Int(2)]);
}
