//! What simulated clients do: bank transfers between accounts (read two, write two),
//! read-only audits, and blind writes, over a key space with a hot set for contention.
//! Every transaction's reads and writes are recorded for the oracle.

use pistou_core::{Key, Timestamp, Value};
use pistou_txn::{Coordinator, CoordinatorEvent, GetStart, TxnHandle};
use pistou_wire::Decision;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    pub keys: u64,
    /// Keys 0..hot_keys receive `hot_share` of the accesses.
    pub hot_keys: u64,
    pub hot_share: f64,
    pub txns_per_client: usize,
    /// Probability that a transaction is a read-only audit of `audit_width` keys.
    pub audit_share: f64,
    pub audit_width: usize,
    /// Probability that a transaction is a blind write (no reads).
    pub blind_share: f64,
    /// Probability that the client aborts explicitly after its reads.
    pub explicit_abort_share: f64,
    /// Each client uses its own keys (no contention between clients).
    pub disjoint: bool,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            keys: 40,
            hot_keys: 4,
            hot_share: 0.5,
            txns_per_client: 20,
            audit_share: 0.2,
            audit_width: 3,
            blind_share: 0.1,
            explicit_abort_share: 0.05,
            disjoint: false,
        }
    }
}

pub fn account_key(i: u64) -> Key {
    format!("acct{i}").into_bytes()
}

pub fn decode_balance(v: &Option<Value>) -> i64 {
    match v {
        Some(b) if b.len() == 8 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            i64::from_le_bytes(a)
        }
        _ => 0,
    }
}

pub fn encode_balance(x: i64) -> Value {
    x.to_le_bytes().to_vec()
}

#[derive(Clone, Debug)]
enum Plan {
    Transfer { from: Key, to: Key, amount: i64 },
    Audit { keys: Vec<Key> },
    Blind { key: Key, value: i64 },
}

impl Plan {
    fn reads(&self) -> Vec<Key> {
        match self {
            Plan::Transfer { from, to, .. } => vec![from.clone(), to.clone()],
            Plan::Audit { keys } => keys.clone(),
            Plan::Blind { .. } => vec![],
        }
    }
}

/// One transaction as a correct client saw it.
#[derive(Clone, Debug)]
pub struct TxnLog {
    pub client: usize,
    pub ts: Timestamp,
    pub reads: Vec<(Key, Option<Value>)>,
    pub writes: BTreeMap<Key, Option<Value>>,
    pub decision: Option<Decision>,
    pub fast: bool,
    /// id_T, once the transaction went to commit.
    pub id: Option<pistou_core::TxnId>,
}

enum State {
    Idle,
    Reading { h: TxnHandle, plan: Plan, next: usize, log: TxnLog },
    Committing { h: TxnHandle, log: TxnLog },
    Done,
}

pub struct SimClient {
    pub index: usize,
    pub coord: Coordinator,
    spec: WorkloadSpec,
    state: State,
    started: usize,
    pub finished: Vec<TxnLog>,
    /// A SQL script instead of the key-value workload (Pesto scenarios).
    pub sql: Option<crate::sql_workload::SqlScript>,
}

impl SimClient {
    pub fn new(index: usize, coord: Coordinator, spec: WorkloadSpec) -> Self {
        SimClient { index, coord, spec, state: State::Idle, started: 0, finished: Vec::new(), sql: None }
    }

    pub fn new_sql(index: usize, coord: Coordinator, spec: crate::sql_workload::SqlSpec) -> Self {
        let mut c = SimClient::new(index, coord, WorkloadSpec::default());
        c.sql = Some(crate::sql_workload::SqlScript::new(index, spec));
        c
    }

    pub fn done(&self) -> bool {
        match &self.sql {
            Some(script) => script.done(),
            None => matches!(self.state, State::Done),
        }
    }

    fn pick_key(&self, rng: &mut ChaCha8Rng) -> u64 {
        if self.spec.disjoint {
            return 1_000_000 * (self.index as u64 + 1) + rng.gen_range(0..self.spec.keys);
        }
        if self.spec.hot_keys > 0 && rng.gen_bool(self.spec.hot_share) {
            rng.gen_range(0..self.spec.hot_keys)
        } else {
            rng.gen_range(0..self.spec.keys)
        }
    }

    fn new_plan(&self, rng: &mut ChaCha8Rng) -> Plan {
        let roll: f64 = rng.gen();
        if roll < self.spec.audit_share {
            let mut keys: Vec<Key> = (0..self.spec.audit_width).map(|_| account_key(self.pick_key(rng))).collect();
            keys.sort();
            keys.dedup();
            Plan::Audit { keys }
        } else if roll < self.spec.audit_share + self.spec.blind_share {
            Plan::Blind { key: account_key(self.pick_key(rng)), value: rng.gen_range(-50..50) }
        } else {
            let a = self.pick_key(rng);
            let mut b = self.pick_key(rng);
            if a == b {
                b = a + 1;
            }
            Plan::Transfer { from: account_key(a), to: account_key(b), amount: rng.gen_range(1..10) }
        }
    }

    /// Advances the client's script as far as it can go without waiting.
    pub fn step(&mut self, now: u64, rng: &mut ChaCha8Rng) {
        if let Some(script) = &mut self.sql {
            script.step(&mut self.coord, now, rng);
            return;
        }
        loop {
            while let Some(ev) = self.coord.poll_event() {
                self.on_event(ev);
            }
            let progressed = match std::mem::replace(&mut self.state, State::Idle) {
                State::Idle => {
                    if self.started >= self.spec.txns_per_client {
                        self.state = State::Done;
                        return;
                    }
                    self.started += 1;
                    let plan = self.new_plan(rng);
                    let h = self.coord.begin(now);
                    let ts = self.coord.timestamp_of(h).unwrap_or(Timestamp::GENESIS);
                    let log = TxnLog {
                        client: self.index,
                        ts,
                        reads: vec![],
                        writes: BTreeMap::new(),
                        decision: None,
                        fast: false,
                        id: None,
                    };
                    self.state = State::Reading { h, plan, next: 0, log };
                    true
                }
                State::Reading { h, plan, next, mut log } => {
                    let reads = plan.reads();
                    if next < reads.len() {
                        match self.coord.get(now, h, &reads[next]) {
                            Ok(GetStart::Ready(v)) => {
                                log.reads.push((reads[next].clone(), v));
                                self.state = State::Reading { h, plan, next: next + 1, log };
                                true
                            }
                            Ok(GetStart::Pending) => {
                                self.state = State::Reading { h, plan, next, log };
                                false
                            }
                            Err(e) => panic!("simulated client misused the coordinator: {e}"),
                        }
                    } else if rng.gen_bool(self.spec.explicit_abort_share) {
                        let _ = self.coord.abort(h);
                        log.decision = Some(Decision::Abort);
                        self.finished.push(log);
                        true
                    } else {
                        let writes: Vec<(Key, i64)> = match &plan {
                            Plan::Transfer { from, to, amount } => {
                                let bal = |k: &Key| {
                                    log.reads
                                        .iter()
                                        .find(|(rk, _)| rk == k)
                                        .map(|(_, v)| decode_balance(v))
                                        .unwrap_or(0)
                                };
                                vec![(from.clone(), bal(from) - amount), (to.clone(), bal(to) + amount)]
                            }
                            Plan::Audit { .. } => vec![],
                            Plan::Blind { key, value } => vec![(key.clone(), *value)],
                        };
                        for (k, v) in writes {
                            let value = Some(encode_balance(v));
                            if let Err(e) = self.coord.put(h, &k, value.clone()) {
                                panic!("simulated client misused the coordinator: {e}");
                            }
                            log.writes.insert(k, value);
                        }
                        if let Err(e) = self.coord.commit(now, h) {
                            panic!("simulated client misused the coordinator: {e}");
                        }
                        self.state = State::Committing { h, log };
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

    fn on_event(&mut self, ev: CoordinatorEvent) {
        match (ev, &mut self.state) {
            (CoordinatorEvent::ReadDone { txn, key, value }, State::Reading { h, plan, next, log })
                if txn == *h && plan.reads().get(*next) == Some(&key) =>
            {
                log.reads.push((key, value));
                *next += 1;
            }
            (CoordinatorEvent::Decided { txn, decision, fast, id }, State::Committing { h, log }) if txn == *h => {
                let mut log = log.clone();
                log.decision = Some(decision);
                log.fast = fast;
                log.id = Some(id);
                self.finished.push(log);
                self.state = State::Idle;
            }
            _ => {}
        }
    }
}
