//! A SQL workload for the simulator (Pesto): interactive transactions of point updates,
//! range reads, range updates, inserts and deletes on one `accounts` table, with every
//! statement's result logged for the SQL oracle.
//!
//! With [`SqlSpec::ledger`], a second table `ledger` (placed by the scenario on another shard)
//! holds payments out of accounts, and transactions move value between the two tables, so
//! that most of them touch both shards (Basil 2PC); the total of balances and ledger amounts
//! is conserved ([`LEDGER_TOTAL`], checked by `crate::ledger_audit`).

use pistou_core::{Timestamp, TxnId};
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

/// Setup of the two-table workload: `accounts` as in [`SETUP`], then `ledger`.
pub const LEDGER_SETUP: [&str; 4] = [
    SETUP[0],
    SETUP[1],
    "CREATE TABLE ledger (id INT PRIMARY KEY, account INT NOT NULL, amount INT NOT NULL)",
    "INSERT INTO ledger VALUES (0, 0, 10), (1, 1, 10), (2, 2, 10), (3, 3, 10)",
];

/// Setup with [`SqlSpec::recreate_tables`]: `accounts` as in [`SETUP`], then `scratch`.
pub const RECREATE_SETUP: [&str; 4] =
    [SETUP[0], SETUP[1], SCRATCH_CREATE, "INSERT INTO scratch VALUES (0, 1), (1, 1), (2, 1), (3, 1)"];

const SCRATCH_CREATE: &str = "CREATE TABLE IF NOT EXISTS scratch (id INT PRIMARY KEY, v INT NOT NULL)";

/// Accounts 0..LEDGER_ACCOUNTS exist in the two-table workload (never inserted or deleted).
const LEDGER_ACCOUNTS: i64 = 8;

/// Sum of all balances and all ledger amounts: no correct client's transaction of the
/// two-table workload changes it (Byzantine clients' writes may).
pub const LEDGER_TOTAL: i64 = 8 * 100 + 4 * 10;

/// The first statements of the two-table workload's audit; see `crate::ledger_audit`.
pub(crate) const AUDIT_ACCOUNTS: &str = "SELECT CAST(sum(balance) AS INT) FROM accounts";
pub(crate) const AUDIT_LEDGER: &str = "SELECT count(*), CAST(coalesce(sum(amount), 0) AS INT) FROM ledger";

#[derive(Clone, Debug)]
pub struct SqlSpec {
    pub txns_per_client: usize,
    /// Ids drawn for inserts and deletes: [0, id_space).
    pub id_space: i64,
    /// Clients other than 0 start this long after the run begins (µs), once setup is done.
    pub start_after_us: u64,
    /// The two-table workload (`accounts` and `ledger`, see the module comment) instead of
    /// the `accounts`-only one. `id_space` then bounds ledger ids. Other clients then start
    /// only once client 0 has committed the setup (and `start_after_us` has passed).
    pub ledger: bool,
    /// In the two-table workload, a sweep reads the sum of an account's entries with a SELECT
    /// and then deletes them with the same WHERE clause (one predicate evaluated twice in a
    /// transaction); otherwise it sums what `DELETE … RETURNING amount` returned. Off by
    /// default: with it, Pesto builds non-canonical predicate sets (see the ignored test
    /// `sql_two_shards_noncanonical_predicates_seed_900000005` in `tests/sql.rs`).
    pub sweep_reads_first: bool,
    /// In the two-table workload, some transactions are schema changes while the others run
    /// (an index on `ledger.account` created or dropped, a column added to `ledger`): every
    /// shard's catalog changes.
    pub schema_changes: bool,
    /// In the `accounts` workload, a second table `scratch` is dropped and created again, or
    /// renamed to `scratch_old` and created again, while other transactions insert into
    /// both and read them by key and by scan: a table created again must start empty,
    /// whatever the old one held, and a renamed one keeps its rows.
    pub recreate_tables: bool,
}

impl Default for SqlSpec {
    fn default() -> Self {
        SqlSpec {
            txns_per_client: 6,
            id_space: 14,
            start_after_us: 300_000,
            ledger: false,
            sweep_reads_first: false,
            schema_changes: false,
            recreate_tables: false,
        }
    }
}

impl SqlSpec {
    /// The setup transactions (one statement each), committed by client 0 first.
    pub fn setup(&self) -> &'static [&'static str] {
        if self.ledger {
            &LEDGER_SETUP
        } else if self.recreate_tables {
            &RECREATE_SETUP
        } else {
            &SETUP
        }
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
    /// id_T, once the transaction went to commit.
    pub id: Option<TxnId>,
}

/// A statement parameter.
#[derive(Clone, Debug)]
enum Arg {
    Lit(Value),
    /// The first column of the first row that statement `i` of this transaction returned
    /// (no row: 0), as an application passes a value it read to a later statement.
    Scalar(usize),
    /// The sum of the first column of the rows that statement `i` returned (RETURNING).
    SumReturned(usize),
}

/// One statement of a plan; with `expect`, the application rolls back unless the statement
/// returned exactly that many rows (application logic: "nothing to settle").
#[derive(Clone, Debug)]
struct PlanStep {
    sql: &'static str,
    args: Vec<Arg>,
    expect: Option<u64>,
}

fn stmt(sql: &'static str, params: Vec<Value>) -> PlanStep {
    PlanStep { sql, args: params.into_iter().map(Arg::Lit).collect(), expect: None }
}

type Plan = Vec<PlanStep>;

enum State {
    Idle,
    /// Statement `next` of `plan` is running (or about to).
    Running {
        h: TxnHandle,
        plan: Plan,
        next: usize,
        waiting: bool,
        log: SqlTxnLog,
    },
    Committing {
        h: TxnHandle,
        log: SqlTxnLog,
    },
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
    /// Held back until client 0 has committed the setup (two-table workload, clients but 0).
    pub held: bool,
    pub finished: Vec<SqlTxnLog>,
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

impl SqlScript {
    pub fn new(index: usize, spec: SqlSpec) -> Self {
        let setup_done = if index == 0 { 0 } else { spec.setup().len() };
        let held = spec.ledger && index != 0;
        SqlScript {
            index,
            spec,
            state: State::Idle,
            setup_done,
            started: 0,
            start_at: None,
            held,
            finished: Vec::new(),
        }
    }

    pub fn done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// The transaction this client asked to commit and has no decision for yet.
    pub fn committing(&self) -> Option<&SqlTxnLog> {
        match &self.state {
            State::Committing { log, .. } => Some(log),
            _ => None,
        }
    }

    /// This client has committed the setup (client 0), or never had to.
    pub fn setup_finished(&self) -> bool {
        self.setup_done >= self.spec.setup().len()
    }

    fn new_plan(&self, rng: &mut ChaCha8Rng) -> Plan {
        if let Some(sql) = self.spec.setup().get(self.setup_done) {
            return vec![stmt(sql, vec![])];
        }
        if self.spec.ledger {
            return self.ledger_plan(rng);
        }
        let id = |rng: &mut ChaCha8Rng| rng.gen_range(0..self.spec.id_space);
        match rng.gen_range(0..if self.spec.recreate_tables { 13 } else { 6 }) {
            6 => vec![stmt(if rng.gen_bool(0.5) { "DROP TABLE IF EXISTS scratch" } else { SCRATCH_CREATE }, vec![])],
            7 => {
                let key = int(rng.gen_range(0..8));
                vec![
                    stmt("SELECT v FROM scratch WHERE id = $1", vec![key.clone()]),
                    stmt(
                        "INSERT INTO scratch VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = scratch.v + 1",
                        vec![key, int(1)],
                    ),
                ]
            }
            // Rows and schema changes in one transaction (docs/sql.md, "Schema changes in
            // transactions"): read, recreate scratch with a row, write an old table.
            10 => {
                let (key, account) = (int(rng.gen_range(0..8)), int(id(rng)));
                vec![
                    stmt("SELECT count(*), CAST(coalesce(sum(v), 0) AS INT) FROM scratch", vec![]),
                    stmt("DROP TABLE IF EXISTS scratch", vec![]),
                    stmt(SCRATCH_CREATE, vec![]),
                    stmt("INSERT INTO scratch VALUES ($1, 100)", vec![key.clone()]),
                    stmt("SELECT id, v FROM scratch WHERE id = $1", vec![key]),
                    stmt("UPDATE accounts SET balance = balance + 0 WHERE id = $1", vec![account]),
                ]
            }
            // scratch renamed away and created again: the renamed table keeps its rows under
            // its old storage name, and the new one (stored under another) starts empty.
            11 => vec![
                stmt("DROP TABLE IF EXISTS scratch_old", vec![]),
                stmt("ALTER TABLE IF EXISTS scratch RENAME TO scratch_old", vec![]),
                stmt(SCRATCH_CREATE, vec![]),
            ],
            12 => vec![
                stmt("SELECT count(*), CAST(coalesce(sum(v), 0) AS INT) FROM scratch_old", vec![]),
                stmt("UPDATE scratch_old SET v = v + 1 WHERE id = $1", vec![int(rng.gen_range(0..8))]),
                stmt("SELECT id, v FROM scratch WHERE id = $1", vec![int(rng.gen_range(0..8))]),
            ],
            // Read-only: a stale row read here commits, and the oracle sees it.
            8 => vec![stmt("SELECT id, v FROM scratch WHERE id = $1", vec![int(rng.gen_range(0..8))])],
            9 => vec![
                stmt("SELECT count(*), CAST(coalesce(sum(v), 0) AS INT) FROM scratch", vec![]),
                stmt("INSERT INTO scratch VALUES ($1, 1)", vec![int(rng.gen_range(0..8))]),
            ],
            0 | 1 => {
                let (a, b, amount) = (id(rng), id(rng), rng.gen_range(1..10));
                vec![
                    stmt("UPDATE accounts SET balance = balance - $2 WHERE id = $1", vec![int(a), int(amount)]),
                    stmt("UPDATE accounts SET balance = balance + $2 WHERE id = $1", vec![int(b), int(amount)]),
                    stmt("SELECT balance FROM accounts WHERE id = $1", vec![int(a)]),
                ]
            }
            2 => vec![
                stmt(
                    "SELECT count(*), sum(balance) FROM accounts WHERE balance > $1",
                    vec![int(rng.gen_range(80..120))],
                ),
                stmt(
                    "SELECT id, owner FROM accounts WHERE balance < $1 ORDER BY id",
                    vec![int(rng.gen_range(90..110))],
                ),
            ],
            3 => vec![
                stmt("UPDATE accounts SET balance = balance + 1 WHERE balance < $1", vec![int(rng.gen_range(95..105))]),
                stmt("SELECT sum(balance) FROM accounts WHERE id >= $1", vec![int(id(rng))]),
            ],
            4 => vec![stmt(
                "INSERT INTO accounts VALUES ($1, 'new', $2)",
                vec![int(id(rng)), int(rng.gen_range(0..200))],
            )],
            _ => vec![
                stmt("DELETE FROM accounts WHERE id = $1", vec![int(id(rng))]),
                stmt("SELECT count(*) FROM accounts WHERE owner = 'new'", vec![]),
            ],
        }
    }

    /// A transaction of the two-table workload. `accounts` is on one shard and `ledger` on
    /// another; every kind but the transfer and the ledger-only one writes both.
    fn ledger_plan(&self, rng: &mut ChaCha8Rng) -> Plan {
        let account = |rng: &mut ChaCha8Rng| int(rng.gen_range(0..LEDGER_ACCOUNTS));
        let entry = |rng: &mut ChaCha8Rng| int(rng.gen_range(0..self.spec.id_space));
        let debit = "UPDATE accounts SET balance = balance - $2 WHERE id = $1";
        let credit = "UPDATE accounts SET balance = balance + $2 WHERE id = $1";
        match rng.gen_range(0..if self.spec.schema_changes { 8 } else { 7 }) {
            // A transfer between two accounts (one shard).
            0 => {
                let (a, b, amount) = (account(rng), account(rng), int(rng.gen_range(1..10)));
                vec![
                    stmt(debit, vec![a.clone(), amount.clone()]),
                    stmt(credit, vec![b, amount]),
                    stmt("SELECT balance FROM accounts WHERE id = $1", vec![a]),
                ]
            }
            // A payment into a new ledger entry (a duplicate id fails and rolls back).
            1 => {
                let (a, amount, e) = (account(rng), int(rng.gen_range(1..20)), entry(rng));
                vec![
                    stmt(debit, vec![a.clone(), amount.clone()]),
                    stmt("INSERT INTO ledger VALUES ($1, $2, $3)", vec![e, a, amount]),
                ]
            }
            // Settling one entry: its amount goes to an account.
            2 => {
                let (e, b) = (entry(rng), account(rng));
                vec![
                    PlanStep { expect: Some(1), ..stmt("SELECT amount FROM ledger WHERE id = $1", vec![e.clone()]) },
                    stmt("DELETE FROM ledger WHERE id = $1", vec![e]),
                    PlanStep { sql: credit, args: vec![Arg::Lit(b), Arg::Scalar(0)], expect: None },
                ]
            }
            // Sweeping all entries of an account back into it (range read, range delete).
            3 if self.spec.sweep_reads_first => {
                let a = account(rng);
                vec![
                    stmt(
                        "SELECT CAST(coalesce(sum(amount), 0) AS INT) FROM ledger WHERE account = $1",
                        vec![a.clone()],
                    ),
                    stmt("DELETE FROM ledger WHERE account = $1", vec![a.clone()]),
                    PlanStep { sql: credit, args: vec![Arg::Lit(a), Arg::Scalar(0)], expect: None },
                ]
            }
            3 => {
                let a = account(rng);
                vec![
                    stmt("DELETE FROM ledger WHERE account = $1 RETURNING amount", vec![a.clone()]),
                    PlanStep { sql: credit, args: vec![Arg::Lit(a), Arg::SumReturned(0)], expect: None },
                ]
            }
            // Range updates on both shards: four accounts give one each to the other four,
            // and a range of entries changes hands.
            4 => {
                let (a, lo) = (account(rng), rng.gen_range(0..self.spec.id_space));
                let hi = lo + rng.gen_range(1..4);
                vec![
                    stmt("UPDATE accounts SET balance = balance + 1 WHERE id < 4", vec![]),
                    stmt("UPDATE accounts SET balance = balance - 1 WHERE id >= 4", vec![]),
                    stmt("UPDATE ledger SET account = $1 WHERE id >= $2 AND id < $3", vec![a, int(lo), int(hi)]),
                ]
            }
            // A read-only audit of both tables (the conserved total), then a range read.
            5 => vec![
                stmt(AUDIT_ACCOUNTS, vec![]),
                stmt(AUDIT_LEDGER, vec![]),
                stmt(
                    "SELECT id, account, amount FROM ledger WHERE amount > $1 ORDER BY id",
                    vec![int(rng.gen_range(0..15))],
                ),
            ],
            7 => vec![stmt(
                match rng.gen_range(0..5) {
                    0 | 1 => "CREATE INDEX IF NOT EXISTS ledger_account ON ledger (account)",
                    2 | 3 => "DROP INDEX IF EXISTS ledger_account",
                    _ => "ALTER TABLE ledger ADD COLUMN IF NOT EXISTS memo TEXT DEFAULT 'none'",
                },
                vec![],
            )],
            // Ledger only: an entry changes hands, then the new owner's entries.
            _ => {
                let (e, a) = (entry(rng), account(rng));
                vec![
                    stmt("UPDATE ledger SET account = $2 WHERE id = $1", vec![e, a.clone()]),
                    stmt("SELECT * FROM ledger WHERE account = $1 ORDER BY id", vec![a]),
                ]
            }
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
                    let start_at =
                        *self.start_at.get_or_insert(now + if self.index == 0 { 0 } else { self.spec.start_after_us });
                    if now < start_at || self.held {
                        return;
                    }
                    if self.setup_finished() && self.started >= self.spec.txns_per_client {
                        self.state = State::Done;
                        return;
                    }
                    if self.setup_finished() {
                        self.started += 1;
                    }
                    let plan = self.new_plan(rng);
                    let h = coord.begin(now);
                    let ts = coord.timestamp_of(h).unwrap_or(Timestamp::GENESIS);
                    let log = SqlTxnLog { client: self.index, ts, statements: Vec::new(), decision: None, id: None };
                    self.state = State::Running { h, plan, next: 0, waiting: false, log };
                    true
                }
                State::Running { h, plan, next, waiting: false, log } => {
                    if next < plan.len() {
                        let params = resolve(&plan[next].args, &log);
                        if coord.sql(now, h, plan[next].sql, params).is_err() {
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
            (State::Running { h, plan, next, waiting: true, mut log }, CoordinatorEvent::SqlDone { txn, result })
                if txn == h =>
            {
                match result {
                    Ok(output) => {
                        let step = &plan[next];
                        let rows = match &output {
                            SqlOutput::Rows { rows, .. } => rows.len() as u64,
                            SqlOutput::Affected { count, .. } => *count,
                            SqlOutput::Ddl { .. } => 0,
                        };
                        let unexpected = step.expect.is_some_and(|e| e != rows);
                        let params = resolve(&step.args, &log);
                        log.statements.push(StatementLog { sql: step.sql.to_string(), params, output });
                        if unexpected {
                            // Nothing to work on (an entry to settle is gone): roll back.
                            let _ = coord.abort(h);
                            log.decision = Some(Decision::Abort);
                            self.finished.push(log);
                        } else {
                            self.state = State::Running { h, plan, next: next + 1, waiting: false, log };
                        }
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
            (State::Committing { h, mut log }, CoordinatorEvent::Decided { txn, decision, id, .. }) if txn == h => {
                log.decision = Some(decision);
                log.id = Some(id);
                if decision == Decision::Commit && !self.setup_finished() {
                    self.setup_done += 1;
                }
                self.finished.push(log);
            }
            (state, _) => self.state = state,
        }
    }
}

/// The values of a statement's parameters, given what earlier statements returned.
fn resolve(args: &[Arg], log: &SqlTxnLog) -> Vec<Value> {
    args.iter()
        .map(|a| match a {
            Arg::Lit(v) => v.clone(),
            Arg::Scalar(i) => match log.statements.get(*i).map(|s| &s.output) {
                Some(SqlOutput::Rows { rows, .. }) => rows.first().and_then(|r| r.first()).cloned().unwrap_or(int(0)),
                _ => int(0),
            },
            Arg::SumReturned(i) => match log.statements.get(*i).map(|s| &s.output) {
                Some(SqlOutput::Affected { returning: Some((_, rows)), .. }) => int(rows
                    .iter()
                    .map(|r| match r.first() {
                        Some(Value::Int(v)) => *v,
                        _ => 0,
                    })
                    .sum()),
                _ => int(0),
            },
        })
        .collect()
}
