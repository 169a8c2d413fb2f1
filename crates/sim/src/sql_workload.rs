//! A SQL workload for the simulator (Pesto): interactive transactions of point updates,
//! range reads, range updates, inserts and deletes on one `accounts` table, with every
//! statement's result logged for the SQL oracle.

use pistou_core::Timestamp;
use pistou_sql::Value;
use pistou_txn::{Coordinator, CoordinatorEvent, SqlOutput, TxnHandle};
use pistou_wire::Decision;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The schema and initial rows, committed by client 0 before anything else.
pub const SETUP: [&str; 2] = [
    "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance INT NOT NULL)",
    "INSERT INTO accounts VALUES (0, 'a', 100), (1, 'b', 100), (2, 'c', 100), (3, 'd', 100), (4, 'e', 100), \
     (5, 'f', 100), (6, 'g', 100), (7, 'h', 100)",
];

#[derive(Clone, Debug)]
pub struct SqlSpec {
    pub txns_per_client: usize,
    /// Ids drawn for inserts and deletes: [0, id_space).
    pub id_space: i64,
    /// Clients other than 0 start this long after the run begins (µs), once setup is done.
    pub start_after_us: u64,
}

impl Default for SqlSpec {
    fn default() -> Self {
        SqlSpec { txns_per_client: 6, id_space: 14, start_after_us: 300_000 }
    }
}

/// One statement as the client saw it.
#[derive(Clone, Debug)]
pub struct StatementLog {
    pub sql: String,
    pub params: Vec<Value>,
    pub output: SqlOutput,
}

/// One SQL transaction of a correct client.
#[derive(Clone, Debug)]
pub struct SqlTxnLog {
    pub client: usize,
    pub ts: Timestamp,
    pub statements: Vec<StatementLog>,
    pub decision: Option<Decision>,
}

type Plan = Vec<(String, Vec<Value>)>;

enum State {
    Idle,
    /// Statement `next` of `plan` is running (or about to).
    Running { h: TxnHandle, plan: Plan, next: usize, waiting: bool, log: SqlTxnLog },
    Committing { h: TxnHandle, log: SqlTxnLog },
    Done,
}

pub struct SqlScript {
    index: usize,
    spec: SqlSpec,
    state: State,
    /// Setup transactions committed so far (client 0 only).
    setup_done: usize,
    started: usize,
    start_at: Option<u64>,
    pub finished: Vec<SqlTxnLog>,
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

impl SqlScript {
    pub fn new(index: usize, spec: SqlSpec) -> Self {
        let setup_done = if index == 0 { 0 } else { SETUP.len() };
        SqlScript { index, spec, state: State::Idle, setup_done, started: 0, start_at: None, finished: Vec::new() }
    }

    pub fn done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn new_plan(&self, rng: &mut ChaCha8Rng) -> Plan {
        if self.setup_done < SETUP.len() {
            return vec![(SETUP[self.setup_done].to_string(), vec![])];
        }
        let id = |rng: &mut ChaCha8Rng| rng.gen_range(0..self.spec.id_space);
        match rng.gen_range(0..6) {
            0 | 1 => {
                let (a, b, amount) = (id(rng), id(rng), rng.gen_range(1..10));
                vec![
                    ("UPDATE accounts SET balance = balance - $2 WHERE id = $1".into(), vec![int(a), int(amount)]),
                    ("UPDATE accounts SET balance = balance + $2 WHERE id = $1".into(), vec![int(b), int(amount)]),
                    ("SELECT balance FROM accounts WHERE id = $1".into(), vec![int(a)]),
                ]
            }
            2 => vec![
                ("SELECT count(*), sum(balance) FROM accounts WHERE balance > $1".into(), vec![int(rng.gen_range(80..120))]),
                ("SELECT id, owner FROM accounts WHERE balance < $1 ORDER BY id".into(), vec![int(rng.gen_range(90..110))]),
            ],
            3 => vec![
                ("UPDATE accounts SET balance = balance + 1 WHERE balance < $1".into(), vec![int(rng.gen_range(95..105))]),
                ("SELECT sum(balance) FROM accounts WHERE id >= $1".into(), vec![int(id(rng))]),
            ],
            4 => vec![("INSERT INTO accounts VALUES ($1, 'new', $2)".into(), vec![int(id(rng)), int(rng.gen_range(0..200))])],
            _ => vec![
                ("DELETE FROM accounts WHERE id = $1".into(), vec![int(id(rng))]),
                ("SELECT count(*) FROM accounts WHERE owner = 'new'".into(), vec![]),
            ],
        }
    }

    /// Advances the script as far as it goes without waiting.
    pub fn step(&mut self, coord: &mut Coordinator, now: u64, rng: &mut ChaCha8Rng) {
        loop {
            while let Some(ev) = coord.poll_event() {
                self.on_event(coord, ev);
            }
            let progressed = match std::mem::replace(&mut self.state, State::Idle) {
                State::Idle => {
                    let start_at = *self.start_at.get_or_insert(now + if self.index == 0 { 0 } else { self.spec.start_after_us });
                    if now < start_at {
                        return;
                    }
                    if self.setup_done >= SETUP.len() && self.started >= self.spec.txns_per_client {
                        self.state = State::Done;
                        return;
                    }
                    if self.setup_done >= SETUP.len() {
                        self.started += 1;
                    }
                    let plan = self.new_plan(rng);
                    let h = coord.begin(now);
                    let ts = coord.timestamp_of(h).unwrap_or(Timestamp::GENESIS);
                    let log = SqlTxnLog { client: self.index, ts, statements: Vec::new(), decision: None };
                    self.state = State::Running { h, plan, next: 0, waiting: false, log };
                    true
                }
                State::Running { h, plan, next, waiting: false, log } => {
                    if next < plan.len() {
                        let (sql, params) = &plan[next];
                        if coord.sql(now, h, sql, params.clone()).is_err() {
                            panic!("simulated client misused the coordinator");
                        }
                        self.state = State::Running { h, plan, next, waiting: true, log };
                        true
                    } else {
                        match coord.commit(now, h) {
                            Ok(()) => self.state = State::Committing { h, log },
                            Err(e) => panic!("simulated client could not commit: {e}"),
                        }
                        true
                    }
                }
                other => {
                    self.state = other;
                    false
                }
            };
            if !progressed {
                return;
            }
        }
    }

    fn on_event(&mut self, coord: &mut Coordinator, ev: CoordinatorEvent) {
        match (std::mem::replace(&mut self.state, State::Idle), ev) {
            (State::Running { h, plan, next, waiting: true, mut log }, CoordinatorEvent::SqlDone { txn, result }) if txn == h => {
                match result {
                    Ok(output) => {
                        let (sql, params) = plan[next].clone();
                        log.statements.push(StatementLog { sql, params, output });
                        self.state = State::Running { h, plan, next: next + 1, waiting: false, log };
                    }
                    Err(_) => {
                        // A failed statement (duplicate key, schema not there yet, a read
                        // the replicas disagreed on): roll back, as an application would.
                        let _ = coord.abort(h);
                        log.decision = Some(Decision::Abort);
                        self.finished.push(log);
                    }
                }
            }
            (State::Committing { h, mut log }, CoordinatorEvent::Decided { txn, decision, .. }) if txn == h => {
                log.decision = Some(decision);
                if decision == Decision::Commit && self.setup_done < SETUP.len() {
                    self.setup_done += 1;
                }
                self.finished.push(log);
            }
            (state, _) => self.state = state,
        }
    }
}
