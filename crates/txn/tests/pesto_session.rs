//! Interactive SQL transactions end to end (Pesto §5–6): a real `Coordinator` against six
//! real `Replica`s per shard (f = 1; one shard unless a test asks for more), messages
//! delivered in order in-process.

use pistou_core::{ClientId, ClusterBuilder, ClusterConfig, ReplicaId, ShardId, SqlConfig};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_sql::{SqlState, Value};
use pistou_txn::{Coordinator, CoordinatorEvent, MemoryLog, RejectReason, Replica, SqlOutput, TxnHandle};
use pistou_wire::{Decision, Message, QueryOutput, RangeReply, RangeResult, Signable};
use std::sync::Arc;

const START: u64 = 1_000_000_000;

/// What a test replica does to range-read replies.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lie {
    Honest,
    /// Replaces Q-RES by an empty result.
    EmptyResult,
    /// Replaces Q-RES by an empty result without signing again (a reply altered in transit).
    EmptyUnsigned,
    /// Signs an empty Q-RES with its own key in the name of the next replica.
    EmptyAsNext,
}

struct Cluster {
    config: Arc<ClusterConfig>,
    keys: Vec<SecretKey>,
    replicas: Vec<Replica>,
    lies: Vec<Lie>,
    clients: Vec<Coordinator>,
    now: u64,
    /// Client messages delivered to each shard's replicas.
    sent_to_shard: Vec<usize>,
    /// The buffered-write keys of every RANGE-READ delivered, in order.
    range_pending: Vec<Vec<Vec<u8>>>,
}

fn cluster(clients: u64) -> Cluster {
    cluster_with(clients, 1, &[])
}

/// `shards` shards of six replicas; `tables` places tables on shards.
fn cluster_with(clients: u64, shards: usize, tables: &[(&str, u32)]) -> Cluster {
    let built = ClusterBuilder::new(1)
        .shards(shards)
        .clients(clients)
        .delta_us(100_000)
        .max_txn_age_us(10_000_000)
        .reply_batch(8)
        .tables(tables.iter().copied())
        .build();
    let config = built.config.clone();
    // In `all_replicas` order, which is `slot` order.
    let replicas = config
        .all_replicas()
        .map(|id| Replica::new(config.clone(), id, Some(built.replica_key(id))).expect("replica"))
        .collect();
    let clients = (1..)
        .zip(built.client_keys)
        .map(|(id, k)| Coordinator::new(config.clone(), ClientId(id), Some(k)).expect("coordinator"))
        .collect();
    let keys = built.replica_keys.into_iter().flatten().collect();
    Cluster {
        config,
        keys,
        replicas,
        lies: vec![Lie::Honest; 6 * shards],
        clients,
        now: START,
        sent_to_shard: vec![0; shards],
        range_pending: Vec::new(),
    }
}

/// Position of a replica in `Cluster::replicas`.
fn slot(r: ReplicaId) -> usize {
    6 * r.shard.0 as usize + r.index as usize
}

fn clone_key(k: &SecretKey) -> SecretKey {
    SecretKey::from_hex(&k.to_hex()).expect("key")
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

impl Cluster {
    /// Delivers messages until none moves (writebacks land, replies arrive).
    fn settle(&mut self) {
        for _ in 0..10_000 {
            if !self.pump_step() {
                return;
            }
        }
        panic!("network did not quiesce");
    }

    fn advance(&mut self) {
        self.advance_by(1_000);
    }

    fn advance_by(&mut self, us: u64) {
        self.now += us;
        for c in &mut self.clients {
            c.tick(self.now);
        }
        for r in &mut self.replicas {
            r.tick(self.now);
        }
    }

    /// One delivery round; false if no message moved.
    fn pump_step(&mut self) -> bool {
        let mut moved = false;
        for c in 0..self.clients.len() {
            for (to, msg) in self.clients[c].take_outputs() {
                moved = true;
                self.sent_to_shard[to.shard.0 as usize] += 1;
                if let Message::RangeRead(r) = &msg {
                    self.range_pending.push(r.body.pending.iter().map(|w| w.key.clone()).collect());
                }
                self.replicas[slot(to)].handle(self.now, c as u64, msg);
            }
        }
        for r in 0..self.replicas.len() {
            self.replicas[r].run_range_jobs();
            self.replicas[r].flush();
            let from = self.replicas[r].id();
            for (to, msg) in self.replicas[r].take_replica_outputs() {
                moved = true;
                self.replicas[slot(to)].handle_replica(self.now, from, msg);
            }
            for (peer, msg) in self.replicas[r].take_outputs() {
                moved = true;
                let msg = self.tamper(r, msg);
                self.clients[peer as usize].handle(self.now, from, msg);
            }
        }
        moved
    }

    /// A lying replica re-signs a modified reply with its own key: a Byzantine replica can
    /// sign anything.
    fn tamper(&mut self, r: usize, msg: Message) -> Message {
        match (self.lies[r], msg) {
            (Lie::EmptyResult, Message::RangeReply(mut reply)) => {
                if let Ok(result) = &mut reply.body.result {
                    result.output = QueryOutput::Rows(Vec::new());
                    result.reads.clear();
                }
                reply.sig = Some(BatchSigner::new(clone_key(&self.keys[r]), 1).sign_one(&reply.body.signing_hash()));
                Message::RangeReply(reply)
            }
            (Lie::EmptyUnsigned, Message::RangeReply(mut reply)) => {
                reply.body.result = Ok(empty(&reply.body));
                Message::RangeReply(reply)
            }
            (Lie::EmptyAsNext, Message::RangeReply(mut reply)) => {
                reply.body.result = Ok(empty(&reply.body));
                reply.signer.index = (reply.signer.index + 1) % self.replicas.len() as u32;
                reply.sig = Some(BatchSigner::new(clone_key(&self.keys[r]), 1).sign_one(&reply.body.signing_hash()));
                Message::RangeReply(reply)
            }
            (_, msg) => msg,
        }
    }

    fn begin(&mut self, c: usize) -> TxnHandle {
        self.clients[c].begin(self.now)
    }

    /// Runs one statement to completion.
    fn sql(
        &mut self,
        c: usize,
        h: TxnHandle,
        sql: &str,
        params: Vec<Value>,
    ) -> Result<SqlOutput, pistou_sql::SqlError> {
        self.clients[c].sql(self.now, h, sql, params).expect("statement accepted");
        let deadline = self.now + 100_000_000;
        loop {
            if let Some(ev) = self.clients[c].poll_event() {
                match ev {
                    CoordinatorEvent::SqlDone { txn, result } if txn == h => return result,
                    other => panic!("unexpected event {other:?}"),
                }
            }
            assert!(self.now < deadline, "statement never finished");
            if !self.pump_step() {
                self.advance();
            }
        }
    }

    fn commit(&mut self, c: usize, h: TxnHandle) -> Decision {
        self.clients[c].commit(self.now, h).expect("commit accepted");
        let deadline = self.now + 100_000_000;
        loop {
            while let Some(ev) = self.clients[c].poll_event() {
                if let CoordinatorEvent::Decided { txn, decision, .. } = ev {
                    if txn == h {
                        self.settle();
                        return decision;
                    }
                }
            }
            assert!(self.now < deadline, "commit never decided");
            if !self.pump_step() {
                self.advance();
            }
        }
    }

    /// One statement in its own transaction, committed.
    fn autocommit(&mut self, c: usize, sql: &str, params: Vec<Value>) -> SqlOutput {
        let h = self.begin(c);
        let out = self.sql(c, h, sql, params).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        assert_eq!(self.commit(c, h), Decision::Commit, "{sql}");
        out
    }

    fn rows(&mut self, c: usize, h: TxnHandle, sql: &str, params: Vec<Value>) -> Vec<Vec<Value>> {
        match self.sql(c, h, sql, params) {
            Ok(SqlOutput::Rows { rows, .. }) => rows,
            other => panic!("{sql}: {other:?}"),
        }
    }
}

/// Gives every replica an in-memory log, returned for reading back.
fn memory_logs(cl: &mut Cluster) -> Vec<MemoryLog> {
    let logs: Vec<MemoryLog> = (0..cl.replicas.len()).map(|_| MemoryLog::default()).collect();
    for (r, log) in cl.replicas.iter_mut().zip(&logs) {
        r.set_log(Box::new(log.clone()));
    }
    logs
}

fn accounts(cl: &mut Cluster) {
    cl.autocommit(0, "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance INT NOT NULL)", vec![]);
    cl.autocommit(0, "INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50), (3, 'cy', 10)", vec![]);
}

#[test]
fn create_insert_select_update_commit() {
    let mut cl = cluster(1);
    accounts(&mut cl);
    let h = cl.begin(0);
    // Point read (full primary key): Basil GET plus local execution.
    assert_eq!(
        cl.rows(0, h, "SELECT owner, balance FROM accounts WHERE id = $1", vec![int(2)]),
        vec![vec![Value::Text("bob".into()), int(50)]]
    );
    // Range read with aggregation.
    assert_eq!(cl.rows(0, h, "SELECT sum(balance) FROM accounts WHERE balance > 20", vec![]), vec![vec![int(150)]]);
    let out = cl.sql(0, h, "UPDATE accounts SET balance = balance - 30 WHERE id = 1", vec![]).expect("update");
    assert!(matches!(out, SqlOutput::Affected { command: "UPDATE", count: 1, .. }), "{out:?}");
    cl.sql(0, h, "UPDATE accounts SET balance = balance + 30 WHERE id = 3", vec![]).expect("update");
    // Read-your-writes, in the point path and in a range read.
    assert_eq!(cl.rows(0, h, "SELECT balance FROM accounts WHERE id = 1", vec![]), vec![vec![int(70)]]);
    assert_eq!(
        cl.rows(0, h, "SELECT id FROM accounts WHERE balance >= 40 ORDER BY id", vec![]),
        vec![vec![int(1)], vec![int(2)], vec![int(3)]]
    );
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id, balance FROM accounts ORDER BY id", vec![]),
        vec![vec![int(1), int(70)], vec![int(2), int(50)], vec![int(3), int(40)]]
    );
    assert_eq!(cl.commit(0, h), Decision::Commit);
}

#[test]
fn statement_errors_carry_sqlstates() {
    let mut cl = cluster(1);
    accounts(&mut cl);
    let h = cl.begin(0);
    let e = cl.sql(0, h, "INSERT INTO accounts VALUES (1, 'dup', 0)", vec![]).expect_err("duplicate");
    assert_eq!(e.state, SqlState::UniqueViolation);
    let e = cl.sql(0, h, "SELECT * FROM nowhere", vec![]).expect_err("undefined table");
    assert_eq!(e.state, SqlState::UndefinedTable);
    let e = cl.sql(0, h, "SELEC 1", vec![]).expect_err("syntax");
    assert_eq!(e.state, SqlState::SyntaxError);
    cl.clients[0].abort(h).expect("abort");
}

/// Several schema changes in one transaction (SQLAlchemy's create_all, a Django migration):
/// each is planned against the catalog the earlier ones produce, all commit together, and a
/// savepoint undoes those after it.
#[test]
fn several_schema_changes_commit_as_one_transaction() {
    let mut cl = cluster(1);
    accounts(&mut cl);
    let h = cl.begin(0);
    cl.sql(0, h, "CREATE TABLE parent (id INT PRIMARY KEY, name TEXT)", vec![]).expect("create parent");
    cl.sql(0, h, "CREATE INDEX parent_name ON parent (name)", vec![]).expect("an index on the new table");
    cl.clients[0].savepoint(h, pistou_txn::SavepointOp::Push).expect("savepoint");
    cl.sql(0, h, "CREATE TABLE undone (id INT PRIMARY KEY)", vec![]).expect("create undone");
    cl.clients[0].savepoint(h, pistou_txn::SavepointOp::RollbackTo { depth: 0 }).expect("rollback to");
    cl.sql(0, h, "ALTER TABLE parent ADD COLUMN note TEXT", vec![]).expect("alter the new table");
    cl.sql(0, h, "DROP TABLE accounts", vec![]).expect("drop an old table");
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let h = cl.begin(0);
    cl.sql(0, h, "INSERT INTO parent VALUES (1, 'a', 'n')", vec![]).expect("the new table has three columns");
    assert_eq!(cl.rows(0, h, "SELECT id FROM parent WHERE name = 'a'", vec![]), vec![vec![int(1)]]);
    let e = cl.sql(0, h, "SELECT * FROM undone", vec![]).expect_err("rolled back to the savepoint");
    assert_eq!(e.state, SqlState::UndefinedTable);
    cl.clients[0].abort(h).expect("abort");
    let h = cl.begin(0);
    let e = cl.sql(0, h, "SELECT * FROM accounts", vec![]).expect_err("dropped with the others");
    assert_eq!(e.state, SqlState::UndefinedTable);
    cl.clients[0].abort(h).expect("abort");
}

/// Queries and writes with schema changes in one transaction (docs/sql.md, "Schema changes
/// in transactions"): as a Django migration runs, create tables, write them and an old table,
/// read both, commit all at once; what the replicas could not execute fails with 0A000.
#[test]
fn rows_and_schema_changes_commit_in_one_transaction() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT count(*) FROM accounts", vec![]), vec![vec![int(3)]]);
    cl.sql(0, h, "INSERT INTO accounts VALUES (8, 'ed', 1)", vec![]).expect("a write before the change");
    cl.sql(0, h, "CREATE TABLE log (id INT PRIMARY KEY, note TEXT)", vec![]).expect("create");
    cl.sql(0, h, "CREATE UNIQUE INDEX log_note ON log (note)", vec![]).expect("index");
    cl.sql(0, h, "INSERT INTO log VALUES (1, 'a'), (2, 'b')", vec![]).expect("rows of the new table");
    cl.sql(0, h, "UPDATE log SET note = 'c' WHERE id = 2", vec![]).expect("update them");
    let e = cl.sql(0, h, "INSERT INTO log VALUES (3, 'a')", vec![]).expect_err("its unique index holds");
    assert_eq!(e.state, SqlState::UniqueViolation);
    let text = |s: &str| Value::Text(s.into());
    let log = cl.rows(0, h, "SELECT id, note FROM log ORDER BY id", vec![]);
    assert_eq!(log, vec![vec![int(1), text("a")], vec![int(2), text("c")]]);
    cl.sql(0, h, "INSERT INTO accounts VALUES (9, 'zed', 7)", vec![]).expect("a write to an old table");
    assert_eq!(cl.rows(0, h, "SELECT owner FROM accounts WHERE id = 9", vec![]), vec![vec![text("zed")]]);
    assert_eq!(cl.rows(0, h, "SELECT count(*) FROM accounts", vec![]), vec![vec![int(5)]]);
    for (sql, why) in [
        ("ALTER TABLE accounts ADD COLUMN x INT", "a change of a table written"),
        ("ALTER TABLE log ADD COLUMN x INT", "a change of a new table written"),
        ("INSERT INTO log SELECT id, owner FROM accounts", "a new table and an old one"),
    ] {
        let e = cl.sql(0, h, sql, vec![]).expect_err(why);
        assert_eq!(e.state, SqlState::FeatureNotSupported, "{why}: {e:?}");
    }
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let h = cl.begin(1);
    assert_eq!(cl.rows(1, h, "SELECT id, note FROM log ORDER BY id", vec![]), log);
    assert_eq!(cl.rows(1, h, "SELECT count(*) FROM accounts", vec![]), vec![vec![int(5)]]);
    let e = cl.sql(1, h, "INSERT INTO log VALUES (5, 'c')", vec![]).expect_err("the index committed too");
    assert_eq!(e.state, SqlState::UniqueViolation);
    cl.clients[1].abort(h).expect("abort");

    // A table read may change afterwards; a statement on it after the change cannot run.
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT count(*) FROM log", vec![]), vec![vec![int(2)]]);
    cl.sql(0, h, "ALTER TABLE log ADD COLUMN extra INT DEFAULT 5", vec![]).expect("change a table read");
    let e = cl.sql(0, h, "SELECT * FROM log", vec![]).expect_err("a table changed in this transaction");
    assert_eq!(e.state, SqlState::FeatureNotSupported);
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let h = cl.begin(1);
    assert_eq!(cl.rows(1, h, "SELECT sum(extra) FROM log", vec![]), vec![vec![int(10)]]);
    cl.clients[1].abort(h).expect("abort");
}

/// A schema-changing transaction's reads are checked as any other's: a write ordered before
/// it that its predicate missed aborts it.
#[test]
fn a_schema_change_after_a_stale_read_aborts() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    let w = cl.begin(1);
    cl.now += 1_000;
    let r = cl.begin(0);
    assert_eq!(cl.rows(0, r, "SELECT count(*) FROM accounts WHERE balance > 20", vec![]), vec![vec![int(2)]]);
    cl.sql(1, w, "INSERT INTO accounts VALUES (5, 'eve', 900)", vec![]).expect("insert");
    assert_eq!(cl.commit(1, w), Decision::Commit);
    cl.sql(0, r, "CREATE TABLE summary (id INT PRIMARY KEY, rich INT)", vec![]).expect("create");
    cl.sql(0, r, "INSERT INTO summary VALUES (1, 2)", vec![]).expect("record what was read");
    assert_eq!(cl.commit(0, r), Decision::Abort, "the count missed a write ordered before it");
    let h = cl.begin(0);
    let e = cl.sql(0, h, "SELECT * FROM summary", vec![]).expect_err("aborted with it");
    assert_eq!(e.state, SqlState::UndefinedTable);
    cl.clients[0].abort(h).expect("abort");
}

/// Views through the replicas (docs/sql.md, "Views"): a view's query is expanded where it is
/// named, so its reads carry predicates over the tables it reads. A write those predicates
/// cover, ordered before the reader, aborts it; one outside them does not. A view created or
/// replaced by the transaction itself cannot be read before it commits.
#[test]
fn reads_through_a_view_are_checked_as_reads_of_its_tables() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    let h = cl.begin(0);
    cl.sql(0, h, "CREATE VIEW rich AS SELECT id, owner FROM accounts WHERE balance > 20", vec![]).expect("create view");
    let e = cl.sql(0, h, "SELECT count(*) FROM rich", vec![]).expect_err("created in this transaction");
    assert_eq!(e.state, SqlState::FeatureNotSupported, "{e:?}");
    cl.clients[0].abort(h).expect("abort");
    let h = cl.begin(0);
    cl.sql(0, h, "CREATE VIEW rich AS SELECT id, owner FROM accounts WHERE balance > 20", vec![]).expect("create view");
    assert_eq!(cl.commit(0, h), Decision::Commit);

    for (id, balance, covered) in [(5, 900, true), (6, 5, false)] {
        let w = cl.begin(1);
        cl.now += 1_000;
        let r = cl.begin(0);
        let before = cl.rows(0, r, "SELECT count(*) FROM rich", vec![]);
        let insert = format!("INSERT INTO accounts VALUES ({id}, 'new', {balance})");
        cl.sql(1, w, &insert, vec![]).expect("insert");
        assert_eq!(cl.commit(1, w), Decision::Commit);
        cl.sql(0, r, "INSERT INTO accounts VALUES (100, 'mark', 0)", vec![]).expect("a write of the reader");
        let expected = if covered { Decision::Abort } else { Decision::Commit };
        assert_eq!(cl.commit(0, r), expected, "read {before:?} through the view; balance {balance} written before");
        if !covered {
            let h = cl.begin(0);
            cl.sql(0, h, "DELETE FROM accounts WHERE id = 100", vec![]).expect("clean up");
            assert_eq!(cl.commit(0, h), Decision::Commit);
        }
    }
    let h = cl.begin(1);
    assert_eq!(cl.rows(1, h, "SELECT count(*) FROM rich", vec![]), vec![vec![int(3)]]);
    let e = cl.sql(1, h, "DROP TABLE accounts", vec![]).expect_err("the view reads it");
    assert_eq!(e.state, SqlState::DependentObjectsStillExist, "{e:?}");
    cl.clients[1].abort(h).expect("abort");
}

/// UPDATE ... FROM reads the joined table as a SELECT would: a write ordered before the
/// updater into what its join read aborts it; one outside the join's predicate does not.
#[test]
fn update_from_checks_its_reads_of_the_joined_table() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    cl.autocommit(0, "CREATE TABLE bonus (owner TEXT PRIMARY KEY, amount INT NOT NULL)", vec![]);
    cl.autocommit(0, "INSERT INTO bonus VALUES ('ann', 20)", vec![]);
    let update = "UPDATE accounts SET balance = balance + b.amount FROM bonus b \
                  WHERE b.owner = accounts.owner AND b.amount > 10 RETURNING accounts.id, balance";
    for (owner, amount, covered) in [("bob", 50, true), ("zed", 1, false)] {
        let w = cl.begin(1);
        cl.now += 1_000;
        let r = cl.begin(0);
        let before = cl.sql(0, r, update, vec![]).expect("update from");
        let insert = format!("INSERT INTO bonus VALUES ('{owner}', {amount})");
        cl.sql(1, w, &insert, vec![]).expect("insert");
        assert_eq!(cl.commit(1, w), Decision::Commit);
        let expected = if covered { Decision::Abort } else { Decision::Commit };
        assert_eq!(cl.commit(0, r), expected, "updated {before:?}; bonus ({owner}, {amount}) written before");
    }
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id, balance FROM accounts ORDER BY id", vec![]),
        vec![vec![int(1), int(120)], vec![int(2), int(100)], vec![int(3), int(10)]],
        "only the second run committed: ann's and bob's bonuses"
    );
    cl.clients[0].abort(h).expect("abort");
}

/// gen_random_uuid() and DEFAULT now() run wherever the statement runs (the client or the
/// replicas it asks): the values the client was shown are the values committed, distinct
/// across statements, and another client reads them back.
#[test]
fn random_uuids_and_default_times_are_the_same_everywhere() {
    let mut cl = cluster(2);
    cl.autocommit(
        0,
        "CREATE TABLE tokens (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), n INT, made TIMESTAMPTZ DEFAULT now())",
        vec![],
    );
    let h = cl.begin(0);
    let mut shown = Vec::new();
    for sql in [
        "INSERT INTO tokens (n) VALUES (1), (2) RETURNING id, made",
        "INSERT INTO tokens (id, n) VALUES (gen_random_uuid(), 3) RETURNING id, made",
        "INSERT INTO tokens (n) SELECT n + 10 FROM tokens RETURNING id, made",
    ] {
        match cl.sql(0, h, sql, vec![]).expect(sql) {
            SqlOutput::Affected { returning: Some((_, rows)), .. } => shown.extend(rows),
            other => panic!("{sql}: {other:?}"),
        }
    }
    assert_eq!(cl.commit(0, h), Decision::Commit);
    assert_eq!(shown.len(), 6);
    let r = cl.begin(1);
    let mut stored = cl.rows(1, r, "SELECT id, made FROM tokens", vec![]);
    cl.clients[1].abort(r).expect("abort");
    let sort = |rows: &mut Vec<Vec<Value>>| rows.sort_by_key(|row| format!("{row:?}"));
    sort(&mut shown);
    sort(&mut stored);
    assert_eq!(stored, shown, "the rows committed are the rows the client was shown");
    let ids: std::collections::BTreeSet<String> = stored.iter().map(|row| format!("{:?}", row[0])).collect();
    assert_eq!(ids.len(), 6, "every call gave a new uuid: {stored:?}");
}

#[test]
fn a_concurrent_insert_into_a_read_range_aborts_the_reader() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    // Reader R starts first (lower timestamp) and sums rich accounts.
    let r = cl.begin(0);
    cl.now += 1_000;
    let w = cl.begin(1);
    // Writer W (higher timestamp) inserts a rich account and commits.
    cl.sql(1, w, "INSERT INTO accounts VALUES (4, 'dee', 500)", vec![]).expect("insert");
    assert_eq!(cl.commit(1, w), Decision::Commit);
    // R's range read at its timestamp does not see W (W is after R): serializable as R < W.
    assert_eq!(cl.rows(0, r, "SELECT count(*) FROM accounts WHERE balance > 20", vec![]), vec![vec![int(2)]]);
    cl.sql(0, r, "UPDATE accounts SET balance = 0 WHERE id = 3", vec![]).expect("update");
    assert_eq!(cl.commit(0, r), Decision::Commit);

    // Now the other order: W (lower timestamp) commits its insert after R (higher) read
    // the range without it. R must abort: its predicate missed a write ordered before it.
    let w = cl.begin(1);
    cl.now += 1_000;
    let r = cl.begin(0);
    assert_eq!(cl.rows(0, r, "SELECT count(*) FROM accounts WHERE balance > 20", vec![]), vec![vec![int(3)]]);
    cl.sql(1, w, "INSERT INTO accounts VALUES (5, 'eve', 900)", vec![]).expect("insert");
    assert_eq!(cl.commit(1, w), Decision::Commit);
    cl.sql(0, r, "INSERT INTO accounts VALUES (6, 'fay', 1)", vec![]).expect("insert");
    assert_eq!(cl.commit(0, r), Decision::Abort);

    // Control: the same interleaving with a write outside the predicate commits both.
    let w = cl.begin(1);
    cl.now += 1_000;
    let r = cl.begin(0);
    assert_eq!(cl.rows(0, r, "SELECT count(*) FROM accounts WHERE balance > 20", vec![]), vec![vec![int(4)]]);
    cl.sql(1, w, "INSERT INTO accounts VALUES (8, 'gus', 5)", vec![]).expect("insert");
    assert_eq!(cl.commit(1, w), Decision::Commit);
    cl.sql(0, r, "INSERT INTO accounts VALUES (6, 'fay', 1)", vec![]).expect("insert");
    assert_eq!(cl.commit(0, r), Decision::Commit);
}

#[test]
fn concurrent_inserts_of_one_key_do_not_both_commit() {
    let mut cl = cluster(2);
    accounts(&mut cl);
    let a = cl.begin(0);
    let b = cl.begin(1);
    cl.sql(0, a, "INSERT INTO accounts VALUES (7, 'a', 1)", vec![]).expect("insert a");
    cl.sql(1, b, "INSERT INTO accounts VALUES (7, 'b', 2)", vec![]).expect("insert b");
    let da = cl.commit(0, a);
    let db = cl.commit(1, b);
    assert!(!(da == Decision::Commit && db == Decision::Commit), "both inserts of key 7 committed");
    let h = cl.begin(0);
    let owner = cl.rows(0, h, "SELECT owner FROM accounts WHERE id = 7", vec![]);
    let expected: Vec<Vec<Value>> = match (da, db) {
        (Decision::Commit, _) => vec![vec![Value::Text("a".into())]],
        (_, Decision::Commit) => vec![vec![Value::Text("b".into())]],
        _ => vec![],
    };
    assert_eq!(owner, expected);
}

#[test]
fn one_lying_replica_cannot_change_a_range_result() {
    let mut cl = cluster(1);
    accounts(&mut cl);
    cl.lies[0] = Lie::EmptyResult;
    cl.lies[3] = Lie::Honest;
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id FROM accounts WHERE balance < 200 ORDER BY id", vec![]),
        vec![vec![int(1)], vec![int(2)], vec![int(3)]]
    );
    assert_eq!(cl.commit(0, h), Decision::Commit);
}

/// `reply`'s result with no rows and no reads.
fn empty(reply: &RangeReply) -> RangeResult {
    let mut result = reply.result.clone().expect("the statement succeeds");
    result.output = QueryOutput::Rows(Vec::new());
    result.reads.clear();
    result
}

#[test]
fn range_replies_altered_in_transit_or_in_another_replicas_name_are_dropped() {
    for lie in [Lie::EmptyUnsigned, Lie::EmptyAsNext] {
        let mut cl = cluster(1);
        accounts(&mut cl);
        // f+1 = 2 forged replies would form a supported group if they were believed.
        cl.lies[0] = lie;
        cl.lies[1] = lie;
        let h = cl.begin(0);
        let rows = cl.rows(0, h, "SELECT id FROM accounts WHERE balance < 200 ORDER BY id", vec![]);
        assert_eq!(rows, vec![vec![int(1)], vec![int(2)], vec![int(3)]], "{lie:?}");
        assert_eq!(cl.commit(0, h), Decision::Commit);
        let rejects = cl.clients[0].rejections();
        let dropped = match lie {
            Lie::EmptyUnsigned => rejects.count(RejectReason::BadSignature),
            _ => rejects.count(RejectReason::NotMember),
        };
        assert!(dropped >= 2, "{lie:?}: {dropped} replies dropped");
    }
}

#[test]
fn a_transaction_on_one_shards_tables_touches_only_that_shard() {
    let mut cl = cluster_with(2, 2, &[("left_t", 0), ("right_t", 1)]);
    cl.autocommit(0, "CREATE TABLE left_t (id INT PRIMARY KEY, v INT NOT NULL)", vec![]);
    cl.autocommit(0, "CREATE TABLE right_t (id INT PRIMARY KEY, v INT NOT NULL)", vec![]);
    cl.autocommit(0, "INSERT INTO left_t VALUES (1, 10), (2, 20)", vec![]);
    cl.autocommit(0, "INSERT INTO right_t VALUES (1, 100), (2, 200)", vec![]);
    // A transaction on right_t only: its first statement reads shard 1's catalog (the
    // client knows the schema from earlier transactions), so shard 0 hears nothing.
    let before = cl.sent_to_shard.clone();
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT sum(v) FROM right_t WHERE v > 50", vec![]), vec![vec![int(300)]]);
    cl.sql(0, h, "UPDATE right_t SET v = v + 1 WHERE id = 2", vec![]).expect("update");
    assert_eq!(cl.commit(0, h), Decision::Commit);
    assert_eq!(cl.sent_to_shard[0], before[0], "shard 0 took no part");
    assert!(cl.sent_to_shard[1] > before[1]);
    // The same from a client that has never read a catalog: the statement's syntax names
    // the table, and the configuration places it.
    let before = cl.sent_to_shard.clone();
    let h = cl.begin(1);
    assert_eq!(cl.rows(1, h, "SELECT v FROM right_t WHERE id = 1", vec![]), vec![vec![int(100)]]);
    assert_eq!(cl.commit(1, h), Decision::Commit);
    assert_eq!(cl.sent_to_shard[0], before[0], "a first transaction does not touch shard 0 either");
    // A transaction over both shards: a read on shard 0, a write on shard 1 (2PC).
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT sum(v) FROM left_t WHERE v > 0", vec![]), vec![vec![int(30)]]);
    cl.sql(0, h, "INSERT INTO right_t VALUES (3, 30)", vec![]).expect("insert");
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id, v FROM right_t WHERE v > 0 ORDER BY id", vec![]),
        vec![vec![int(1), int(100)], vec![int(2), int(201)], vec![int(3), int(30)]]
    );
    // One statement over both shards is refused clearly.
    let e = cl.sql(0, h, "SELECT * FROM left_t JOIN right_t USING (id)", vec![]).expect_err("cross-shard");
    assert_eq!(e.state, SqlState::FeatureNotSupported);
}

/// A RANGE-READ carries the transaction's buffered writes to the tables its statement reads
/// or writes, and no others: the replicas' engine would not look at them.
#[test]
fn a_range_read_carries_only_its_tables_buffered_writes() {
    let mut cl = cluster(1);
    accounts(&mut cl);
    cl.autocommit(0, "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT NOT NULL)", vec![]);
    let h = cl.begin(0);
    cl.sql(0, h, "INSERT INTO notes VALUES (1, 'hello')", vec![]).expect("insert");
    cl.sql(0, h, "UPDATE accounts SET balance = balance + 1 WHERE id >= 2", vec![]).expect("update");
    cl.range_pending.clear();
    let rows = cl.rows(0, h, "SELECT id, balance FROM accounts WHERE balance < 200 ORDER BY id", vec![]);
    assert_eq!(
        rows,
        vec![vec![int(1), int(100)], vec![int(2), int(51)], vec![int(3), int(11)]],
        "its own updates are seen"
    );
    assert!(!cl.range_pending.is_empty());
    for pending in &cl.range_pending {
        assert_eq!(pending.len(), 2, "the two accounts rows it updated, not the note");
        assert!(pending.iter().all(|k| pistou_core::sql_keys::row_table(k) == Some("accounts")));
    }
    cl.range_pending.clear();
    assert_eq!(cl.rows(0, h, "SELECT body FROM notes WHERE id >= 1", vec![]), vec![vec![Value::Text("hello".into())]]);
    assert!(cl.range_pending.iter().all(|p| p.len() == 1 && pistou_core::sql_keys::row_table(&p[0]) == Some("notes")));
    assert_eq!(cl.commit(0, h), Decision::Commit);
}

/// Pesto §7.3's inconsistency: two replicas (f+1) never receive writebacks, so they read
/// every row at its older committed version. Their stale results match each other, but the
/// client must adopt the fresh group, or every update of a row written before aborts.
#[cfg(feature = "fault-injection")]
#[test]
fn replicas_that_miss_every_writeback_do_not_make_updates_abort() {
    let mut cl = cluster(1);
    cl.autocommit(0, "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)", vec![]);
    cl.autocommit(0, "INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)", vec![]);
    cl.clients[0].set_writeback_omissions(2);
    for i in 0..12 {
        for _ in 0..5 {
            cl.advance();
        }
        let h = cl.begin(0);
        let key = (i % 3) as i64 + 1;
        cl.sql(0, h, "UPDATE t SET v = v + 1 WHERE id >= $1 AND id <= $1", vec![int(key)]).expect("update");
        assert_eq!(cl.commit(0, h), Decision::Commit, "update {i} of row {key}");
    }
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT sum(v) FROM t", vec![]), vec![vec![int(12)]]);
}

/// Table `t` created, then one row inserted by a transaction whose writeback skipped the
/// `omitted` highest-indexed replicas.
#[cfg(feature = "fault-injection")]
fn one_insert_missing_writebacks(omitted: usize) -> Cluster {
    let mut cl = cluster(1);
    cl.autocommit(0, "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)", vec![]);
    cl.clients[0].set_writeback_omissions(omitted);
    cl.autocommit(0, "INSERT INTO t VALUES (1, 0)", vec![]);
    cl
}

/// A replica that missed a writeback asks its peers (SYNC) once the transaction has been
/// undecided for a while, and applies the SUPPLY: it catches up without any client's help.
#[cfg(feature = "fault-injection")]
#[test]
fn a_replica_that_missed_a_writeback_learns_the_decision_from_its_peers() {
    let mut cl = one_insert_missing_writebacks(2);
    let committed = |cl: &Cluster, r: usize| cl.replicas[r].committed_txns().count();
    assert_eq!((committed(&cl, 3), committed(&cl, 4), committed(&cl, 5)), (2, 1, 1), "r4 and r5 missed the writeback");
    // Not yet: the first inquiry waits 100 ms.
    cl.advance_by(80_000);
    cl.settle();
    assert_eq!(committed(&cl, 4), 1);
    cl.advance_by(40_000);
    cl.settle();
    assert_eq!((committed(&cl, 4), committed(&cl, 5)), (2, 2));
    assert_eq!(cl.replicas[4].stats().inquiries, 1, "one inquiry to f+1 peers sufficed");
    assert_eq!(cl.replicas[4].stats().supplied, 1);
    // Nothing more to ask about, however long we wait.
    for _ in 0..40 {
        cl.advance_by(1_000_000);
        cl.settle();
    }
    assert_eq!(cl.replicas[4].stats().inquiries, 1);
    assert_eq!(cl.replicas[0].stats().inquiries, 0, "r0 had every decision");
}

/// Nobody has the decision (no writeback at all): every replica asks a bounded number of
/// times, then leaves the transaction to its clients.
#[cfg(feature = "fault-injection")]
#[test]
fn inquiries_about_a_transaction_nobody_decided_stop() {
    let mut cl = one_insert_missing_writebacks(6);
    for _ in 0..400 {
        cl.advance_by(100_000);
        cl.settle();
    }
    for r in &cl.replicas {
        assert_eq!(r.stats().inquiries, 6, "MAX_INQUIRIES for the one undecided transaction");
        assert_eq!(r.stats().supplied, 0);
        assert_eq!(r.footprint().inquiries, 0, "nothing left scheduled");
    }
}

/// A client that stops after collecting its votes leaves its transaction prepared at every
/// replica, and nobody has a decision to supply. Every transaction on its rows then aborts
/// because of it. Replicas name it in their abort votes, and a client aborted by it twice,
/// `recovery_after_us` apart, finishes it (Basil §5); then the rows are usable again.
#[cfg(feature = "fault-injection")]
#[test]
fn a_transaction_abandoned_after_prepare_is_finished_by_the_clients_it_aborts() {
    let mut cl = cluster(2);
    cl.autocommit(0, "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)", vec![]);
    cl.clients[0].set_writeback_omissions(6); // client 0 decides, then is never heard of again
    cl.autocommit(0, "INSERT INTO t VALUES (1, 0)", vec![]);
    cl.advance_by(1_000_000);
    cl.settle();
    let attempt = |cl: &mut Cluster| {
        let h = cl.begin(1);
        cl.sql(1, h, "INSERT INTO t VALUES (2, 0)", vec![]).expect("insert");
        cl.rows(1, h, "SELECT id FROM t WHERE v >= 0 ORDER BY id", vec![]);
        cl.commit(1, h)
    };
    assert_eq!(attempt(&mut cl), Decision::Abort, "the prepared insert of row 1 conflicts");
    assert_eq!(cl.clients[1].recoveries(), 0, "blamed once: maybe just a concurrent transaction");
    cl.advance_by(100_000);
    assert_eq!(attempt(&mut cl), Decision::Abort, "still prepared");
    cl.settle();
    assert_eq!(cl.clients[1].recoveries(), 1, "blamed again: client 1 finishes it");
    assert_eq!(attempt(&mut cl), Decision::Commit);
    let h = cl.begin(1);
    assert_eq!(
        cl.rows(1, h, "SELECT id FROM t ORDER BY id", vec![]),
        vec![vec![int(1)], vec![int(2)]],
        "client 0's insert committed"
    );
}

/// A table dropped and created again under the same name starts empty: rows belong to the
/// table's identity, not to its name, so the old rows are neither read (point read or scan)
/// nor in the way of new inserts; once the watermark passes the DROP, replicas forget them.
#[test]
fn a_recreated_table_starts_empty_and_the_dropped_rows_are_collected() {
    let mut cl = cluster(1);
    cl.autocommit(0, "CREATE TABLE r (id INT PRIMARY KEY, v TEXT)", vec![]);
    cl.autocommit(0, "INSERT INTO r VALUES (1, 'old'), (2, 'old')", vec![]);
    cl.autocommit(0, "DROP TABLE r", vec![]);
    cl.autocommit(0, "CREATE TABLE r (id INT PRIMARY KEY, v TEXT)", vec![]);
    let none: Vec<Vec<Value>> = Vec::new();
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT * FROM r WHERE id = 1", vec![]), none, "point read");
    assert_eq!(cl.rows(0, h, "SELECT * FROM r", vec![]), none, "scan");
    assert_eq!(cl.commit(0, h), Decision::Commit);
    cl.autocommit(0, "INSERT INTO r VALUES (1, 'new')", vec![]);
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT v FROM r WHERE id = 1", vec![]), vec![vec![Value::Text("new".into())]]);
    assert_eq!(cl.rows(0, h, "SELECT id, v FROM r", vec![]), vec![vec![int(1), Value::Text("new".into())]]);
    assert_eq!(cl.commit(0, h), Decision::Commit);
    let before: Vec<usize> = cl.replicas.iter().map(|r| r.footprint().keys).collect();
    cl.advance_by(11_000_000); // past max_txn_age_us: the watermark passes the DROP
    cl.settle();
    for (r, before) in cl.replicas.iter().zip(before) {
        assert_eq!(r.footprint().keys, before - 2, "the dropped table's two rows are forgotten, the new row stays");
    }
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT v FROM r WHERE id = 1", vec![]), vec![vec![Value::Text("new".into())]]);
    assert_eq!(cl.rows(0, h, "SELECT * FROM r WHERE id = 2", vec![]), none);
    assert_eq!(cl.commit(0, h), Decision::Commit);
}

/// Whole-cluster restart at the protocol level: every replica is replaced by a new one that
/// replays its log (`Replica::recover`). Tables and committed rows come back, and new
/// statements and commits work against the recovered catalogs.
#[test]
fn replicas_recovered_from_their_logs_serve_every_committed_row() {
    let mut cl = cluster(1);
    let logs = memory_logs(&mut cl);
    accounts(&mut cl);
    cl.autocommit(0, "CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)", vec![]);
    cl.autocommit(0, "INSERT INTO notes VALUES (1, 'kept')", vec![]);
    cl.autocommit(0, "UPDATE accounts SET balance = balance + 5 WHERE id = 2", vec![]);
    for (i, log) in logs.iter().enumerate() {
        let id = ReplicaId { shard: ShardId(0), index: i as u32 };
        let mut fresh = Replica::new(cl.config.clone(), id, Some(clone_key(&cl.keys[i]))).expect("replica");
        fresh.set_log(Box::new(log.clone()));
        fresh.recover(cl.now, log.entries());
        cl.replicas[i] = fresh;
    }
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id, balance FROM accounts ORDER BY id", vec![]),
        vec![vec![int(1), int(100)], vec![int(2), int(55)], vec![int(3), int(10)]]
    );
    assert_eq!(cl.rows(0, h, "SELECT body FROM notes WHERE id = 1", vec![]), vec![vec![Value::Text("kept".into())]]);
    assert_eq!(cl.commit(0, h), Decision::Commit);
    cl.autocommit(0, "INSERT INTO notes VALUES (2, 'after')", vec![]);
    let h = cl.begin(0);
    assert_eq!(cl.rows(0, h, "SELECT count(*) FROM notes", vec![]), vec![vec![int(2)]]);
    assert_eq!(cl.commit(0, h), Decision::Commit);
}

/// The accounts, then two commits replica 5 will miss: it restarts from the copy of its log
/// returned here, `downtime_us` later.
/// The commits `to` lacks among those `from` holds, by the two catch-up steps (one page of
/// ids, one fetch), as `from` answers them.
fn catch_up_from(now: u64, from: &mut Replica, to: &mut Replica) -> Vec<pistou_wire::Writeback> {
    let (from_id, to_id) = (from.id(), to.id());
    from.handle_replica(now, to_id, Message::CatchUp { after: None });
    let page = from.take_replica_outputs().pop().expect("a page").1;
    to.handle_replica(now, from_id, page);
    let fetch = to.take_replica_outputs().pop().expect("a fetch").1;
    assert!(matches!(fetch, Message::CatchUpFetch { .. }), "{fetch:?}");
    from.handle_replica(now, to_id, fetch);
    match from.take_replica_outputs().pop().expect("commits").1 {
        Message::CatchUpCommits { commits } => commits,
        other => panic!("commits expected: {other:?}"),
    }
}

fn two_commits_missed_by_replica_5(downtime_us: u64) -> (Cluster, Vec<pistou_txn::LogEntry>) {
    let mut cl = cluster(1);
    let logs = memory_logs(&mut cl);
    accounts(&mut cl);
    let before_crash = logs[5].entries();
    cl.autocommit(0, "UPDATE accounts SET balance = balance + 5 WHERE id = 2", vec![]);
    cl.autocommit(0, "INSERT INTO accounts VALUES (4, 'dee', 40)", vec![]);
    if downtime_us > 0 {
        cl.advance_by(downtime_us);
    }
    (cl, before_crash)
}

/// Catch-up after a downtime longer than the row stores keep tombstones
/// (`DEFAULT_TOMBSTONE_KEEP_US` past `sql.gc_lag_us`): the missed commits are older than
/// anything the restarted replica's row store accepts as a late write, and the deletion
/// that overtakes one of them may arrive first and be collected at once. The replica still
/// installs every current row (Basil's per-key versions tell which writes are still the
/// newest of their key) and brings back no deleted row.
#[test]
fn catch_up_after_a_downtime_longer_than_tombstones_are_kept() {
    let mut cl = cluster(1);
    let logs = memory_logs(&mut cl);
    accounts(&mut cl);
    let before_crash = logs[5].entries();
    let row_3 = cl.replicas[0].live_rows().into_keys().nth(2).expect("rows 1 to 3, in key order");
    // Missed by replica 5: a write of rows 1 and 3, then the deletion of row 3, then row 4.
    cl.autocommit(0, "UPDATE accounts SET balance = balance + 1 WHERE id IN (1, 3)", vec![]);
    cl.autocommit(0, "DELETE FROM accounts WHERE id = 3", vec![]);
    cl.autocommit(0, "INSERT INTO accounts VALUES (4, 'dee', 40)", vec![]);
    cl.advance_by(pistou_rowstore::DEFAULT_TOMBSTONE_KEEP_US + SqlConfig::default().gc_lag_us + 1_000_000);
    cl.settle();
    let expected = cl.replicas[0].live_rows();
    assert_eq!(expected.len(), 3, "rows 1, 2 and 4");

    let id5 = ReplicaId { shard: ShardId(0), index: 5 };
    let id0 = ReplicaId { shard: ShardId(0), index: 0 };
    let mut restarted = Replica::new(cl.config.clone(), id5, Some(clone_key(&cl.keys[5]))).expect("replica");
    restarted.recover(cl.now, before_crash);
    restarted.tick(cl.now);
    restarted.start_catch_up(cl.now);
    restarted.take_replica_outputs();
    // Replica 0's commits without the two-row write, as if replica 0 had missed it: the
    // deletion of row 3 is installed first, and collected by the next tick.
    let commits = catch_up_from(cl.now, &mut cl.replicas[0], &mut restarted);
    let without_two_row_write: Vec<_> = commits.into_iter().filter(|wb| wb.meta.write_set.len() != 2).collect();
    restarted.handle_replica(cl.now, id0, Message::CatchUpCommits { commits: without_two_row_write });
    cl.now += 1_000_000;
    restarted.tick(cl.now);
    assert_eq!(restarted.live_rows().get(&row_3), None, "row 3 deleted");
    cl.replicas[5] = restarted;
    cl.replicas[5].start_catch_up(cl.now); // the other peers, row 1's write among their pages
    for _ in 0..5 {
        cl.advance_by(600_000);
        cl.settle();
    }
    assert!(!cl.replicas[5].catching_up());
    assert_eq!(cl.replicas[5].stats().unapplied_sql_commits, 0, "every caught-up SQL commit is installed");
    assert_eq!(cl.replicas[5].live_rows(), expected, "the same current rows as a replica that never stopped");
}

/// Catch-up (issue 27), rule by rule: a replica restarted from an old copy of its log has
/// missed commits; it refuses disordered pages of ids, answers it did not ask for and forged
/// commits, fetches only the commits it lacks, applies the certified ones, and once n − 1 − f
/// peers have answered in full it holds the same committed state as its peers.
#[test]
fn a_restarted_replica_catches_up_from_certified_pages_only() {
    let (mut cl, before_crash) = two_commits_missed_by_replica_5(0);
    let id5 = ReplicaId { shard: ShardId(0), index: 5 };
    let id0 = ReplicaId { shard: ShardId(0), index: 0 };
    let mut restarted = Replica::new(cl.config.clone(), id5, Some(clone_key(&cl.keys[5]))).expect("replica");
    restarted.recover(cl.now, before_crash);
    restarted.start_catch_up(cl.now);
    assert!(restarted.catching_up());
    let asked = restarted.take_replica_outputs();
    assert_eq!(asked.len(), 5, "every other replica of the shard is asked");
    assert!(asked.iter().all(|(_, m)| matches!(m, Message::CatchUp { after: None })));

    // Replica 0's first (and only) page of ids.
    cl.replicas[0].handle_replica(cl.now, id5, Message::CatchUp { after: None });
    let page = cl.replicas[0].take_replica_outputs().pop().expect("a page").1;
    let Message::CatchUpPage { ids, next: None } = page.clone() else { panic!("one page expected: {page:?}") };
    let refused = |r: &Replica, why| r.rejections().count(why);
    // Out of order, or claiming more pages but listing nothing: refused.
    let mut disordered = ids.clone();
    disordered.reverse();
    restarted.handle_replica(cl.now, id0, Message::CatchUpPage { ids: disordered, next: None });
    assert_eq!(refused(&restarted, RejectReason::Misbehavior), 1);
    restarted.handle_replica(cl.now, id0, Message::CatchUpPage { ids: vec![], next: ids.first().copied() });
    assert_eq!(refused(&restarted, RejectReason::Misbehavior), 2);
    // From a replica it did not ask (itself).
    restarted.handle_replica(cl.now, id5, page.clone());
    assert_eq!(refused(&restarted, RejectReason::Unexpected), 1);
    // Commits nobody asked for yet.
    restarted.handle_replica(cl.now, id0, Message::CatchUpCommits { commits: vec![] });
    assert_eq!(refused(&restarted, RejectReason::Unexpected), 2);

    // The real page: only the commits it lacks are fetched.
    restarted.handle_replica(cl.now, id0, page);
    let fetch = restarted.take_replica_outputs().pop().expect("a fetch").1;
    let Message::CatchUpFetch { ids: fetched } = fetch.clone() else { panic!("a fetch expected: {fetch:?}") };
    assert!(fetched.len() >= 2, "the commits replica 5 missed");
    assert!(fetched.len() < ids.len(), "not the commits it recovered from its log");
    let in_page_order: Vec<_> = ids.iter().map(|&(_, id)| id).filter(|id| fetched.contains(id)).collect();
    assert_eq!(fetched, in_page_order, "asked in the page's (timestamp, id) order, as the peers committed them");
    cl.replicas[0].handle_replica(cl.now, id5, fetch);
    let answer = cl.replicas[0].take_replica_outputs().pop().expect("commits").1;
    let Message::CatchUpCommits { commits } = answer else { panic!("commits expected: {answer:?}") };
    assert_eq!(commits.iter().map(|wb| wb.meta.id()).collect::<Vec<_>>(), fetched, "in the order asked");

    // A value changed under its certificate: refused, the commits before it applied.
    let mut forged = commits.clone();
    if let Some(w) = forged.last_mut().and_then(|wb| wb.meta.write_set.first_mut()) {
        w.value = Some(b"forged".to_vec());
    }
    restarted.handle_replica(cl.now, id0, Message::CatchUpCommits { commits: forged });
    assert!(refused(&restarted, RejectReason::BadCertificate) + refused(&restarted, RejectReason::MalformedTxn) == 1);
    assert!(restarted.catching_up());
    assert_eq!(restarted.caught_up_commits() as usize, commits.len() - 1, "the certified commits before the forgery");

    // The real commits, then the other peers' through the network.
    restarted.handle_replica(cl.now, id0, Message::CatchUpCommits { commits });
    assert!(restarted.catching_up(), "one peer is not n - 1 - f");
    cl.replicas[5] = restarted;
    for _ in 0..5 {
        cl.advance_by(600_000); // past the retry period: the pending peers are asked again
        cl.settle();
    }
    assert!(!cl.replicas[5].catching_up());
    assert!(cl.replicas[5].caught_up_commits() >= 2);
    assert_eq!(cl.replicas[5].newest_committed(), cl.replicas[0].newest_committed());
}

/// Catch-up of SQL commits older than the row store's garbage-collection watermark
/// (`sql.gc_lag_us`): a replica down for longer than that still installs the rows it
/// missed. They are committed (certified), so MVTSO's reason to refuse writes below the
/// watermark does not apply, and without them its row store would lack current rows.
#[test]
fn catch_up_installs_sql_commits_older_than_the_row_store_watermark() {
    // The missed commits end below every row store's watermark.
    let (mut cl, before_crash) = two_commits_missed_by_replica_5(SqlConfig::default().gc_lag_us + 1_000_000);
    let id5 = ReplicaId { shard: ShardId(0), index: 5 };
    let mut restarted = Replica::new(cl.config.clone(), id5, Some(clone_key(&cl.keys[5]))).expect("replica");
    restarted.recover(cl.now, before_crash);
    restarted.tick(cl.now); // raises its own row store watermark past them too
    restarted.start_catch_up(cl.now);
    cl.replicas[5] = restarted;
    for _ in 0..5 {
        cl.advance_by(600_000);
        cl.settle();
    }
    assert!(!cl.replicas[5].catching_up());
    assert!(cl.replicas[5].caught_up_commits() >= 2);
    // Without installing commits below the row store's watermark, both were left out here.
    assert_eq!(cl.replicas[5].stats().unapplied_sql_commits, 0, "every caught-up SQL commit is installed");
    let h = cl.begin(0);
    assert_eq!(
        cl.rows(0, h, "SELECT id, balance FROM accounts ORDER BY id", vec![]),
        vec![vec![int(1), int(100)], vec![int(2), int(55)], vec![int(3), int(10)], vec![int(4), int(40)]]
    );
}
