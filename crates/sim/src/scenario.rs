//! A simulation run: cluster, clients, network faults, and the checks at the end.

use crate::network::{to_frame, Event, EventQueue, Node};
use crate::oracle::{self, OracleReport};
use crate::sql_oracle;
use crate::sql_workload::{SqlSpec, SqlTxnLog};
use crate::workload::TxnLog;
use crate::workload::{SimClient, WorkloadSpec};
use pistou_adversary::{tamper, tamper_replica, ByzClient, ClientFault, ReplicaFault};
use pistou_core::TxnId;
use pistou_core::{ClientConfig, ClientId, ClusterConfig, ReplicaConfig, ReplicaId, ShardConfig, ShardId};
use pistou_crypto::{BatchSigner, SecretKey};
use pistou_txn::{Coordinator, CoordinatorTimeouts, MemoryLog, Replica, ReplicaLog, SqlOutput};
use pistou_wire::{decode_message, Decision, Message, Vote};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Simulated time starts here (µs), so that clocks skewed backwards stay positive.
const EPOCH_US: u64 = 1_000_000_000;
/// State entries (keys and records) a replica's invariant check may walk per step on
/// average: a replica with more is checked every `1 + size / this` steps.
const INVARIANT_STATE_PER_STEP: u64 = 16;
const TICK_US: u64 = 1_000;

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub seed: u64,
    pub shards: usize,
    pub f: usize,
    pub clients: usize,
    pub workload: WorkloadSpec,
    pub crypto: bool,
    pub min_delay_us: u64,
    pub max_delay_us: u64,
    pub drop_prob: f64,
    /// Replicas per shard that crash (at most f), at `crash_at_us` after start.
    pub crashes_per_shard: usize,
    pub crash_at_us: u64,
    /// Crashed replicas restart this long after crashing, replaying their log
    /// (`Replica::recover`) from a simulated disk that holds every entry appended before
    /// the crash: the runtime syncs the log before it sends the replies that depend on it,
    /// and a simulated replica's handling and sending are one step.
    pub restart_after_us: Option<u64>,
    /// `ClusterConfig::max_txn_age_us`: how far behind the clock the garbage-collection
    /// watermark trails. Small values make replicas collect (and trim their logs) mid-run.
    pub max_txn_age_us: u64,
    /// Test of the tests: the restarted replica's disk lost its last this-many entries, as if
    /// the runtime had sent replies before syncing (the vote-stability monitor must notice).
    pub lost_unsynced_entries: usize,
    /// One replica per shard is cut off from everyone during this window (µs after start).
    pub partition: Option<(u64, u64)>,
    /// Each node's clock is off by up to this much.
    pub clock_skew_us: u64,
    /// A run that has not finished by then is stuck (a liveness failure).
    pub time_limit_us: u64,
    /// Byzantine clients (in addition to `clients` correct ones) and what they do.
    pub byz_clients: usize,
    pub client_fault: Option<ClientFault>,
    pub byz_txns: usize,
    /// Byzantine replicas per shard (at most f) and what they do.
    pub byz_replicas_per_shard: usize,
    pub replica_fault: Option<ReplicaFault>,
    /// Run the SQL workload (Pesto) instead of the key-value one; checked by the SQL oracle.
    pub sql: Option<SqlSpec>,
    /// Replicas per shard that never receive writebacks (they stay inconsistent: prepared but
    /// never committed versions), besides crashed and Byzantine ones.
    pub omit_writebacks_per_shard: usize,
    /// Correct clients skip the eager decision of every range read and take the snapshot
    /// path (Pesto Fig. 8 "eager path forced to fail").
    pub force_snapshot_path: bool,
    /// Table placement (`ClusterConfig.tables`): table name → shard. Unlisted tables go by
    /// hash of their name.
    pub tables: BTreeMap<String, u32>,
    /// SQL scenarios: this many correct clients (the highest-numbered; never client 0, which
    /// creates the tables) stop for good right after sending the ST1 of their first writing
    /// transaction, as a client that crashes mid-commit. Its rows block other transactions
    /// until one of them finishes it (Basil §5); the oracle counts it if a correct replica
    /// committed it.
    pub sql_stalls: usize,
    /// Replicas catch up after a silence from clients (`storage.catch_up_after_silence_us`);
    /// false only to show that the cut-off tests fail without it.
    pub catch_up_after_silence: bool,
    /// Work a replica gives a range read before running it as a job
    /// (`SqlConfig::statement_inline_work`); 1 sends nearly every scan through the job path.
    pub statement_inline_work: u64,
}

impl Scenario {
    pub fn base(name: &'static str, seed: u64) -> Scenario {
        Scenario {
            name,
            seed,
            shards: 2,
            f: 1,
            clients: 4,
            workload: WorkloadSpec::default(),
            crypto: false,
            min_delay_us: 100,
            max_delay_us: 1_500,
            drop_prob: 0.0,
            crashes_per_shard: 0,
            crash_at_us: 0,
            restart_after_us: None,
            max_txn_age_us: 60_000_000,
            lost_unsynced_entries: 0,
            partition: None,
            clock_skew_us: 500,
            time_limit_us: 120_000_000,
            byz_clients: 0,
            client_fault: None,
            byz_txns: 10,
            byz_replicas_per_shard: 0,
            replica_fault: None,
            sql: None,
            omit_writebacks_per_shard: 0,
            force_snapshot_path: false,
            tables: BTreeMap::new(),
            sql_stalls: 0,
            catch_up_after_silence: true,
            statement_inline_work: pistou_core::SqlConfig::default().statement_inline_work,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// BLAKE3 chain over every delivered message (time, sender, receiver, bytes): two runs
    /// of one seed must agree on it exactly (determinism of the whole run, not only of its
    /// totals).
    pub trace: [u8; 32],
    /// Replicas that crashed and restarted from their logs.
    pub restarts: usize,
    /// Log entries garbage collection removed from the replicas' disks.
    pub log_entries_forgotten: usize,
    /// Commits restarted replicas learnt by catching up (`catchup.rs`).
    pub caught_up_commits: u64,
    /// Keys on which a restarted replica ends the run behind the version that f+1 replicas
    /// which never crashed hold.
    pub restarted_keys_behind: usize,
    /// The same for replicas a partition cut off, and the SQL rows on which either kind
    /// holds a different newest row than f+1 such replicas.
    pub cut_off_keys_behind: usize,
    pub rows_behind: usize,
    /// Catch-ups replicas started after hearing from no client for a while.
    pub catch_ups_after_silence: u64,
    /// Inputs correct replicas refused for a certificate that did not verify.
    pub bad_certificates: u64,
    pub committed: usize,
    pub aborted: usize,
    pub fast_commits: usize,
    pub oracle: OracleReport,
    pub sim_time_us: u64,
    pub messages: u64,
    pub rejected: u64,
    /// Transactions of other clients that correct clients started finishing (Basil §5).
    pub recoveries: u64,
    /// Correct clients' transactions that ended aborted without the client asking to.
    pub protocol_aborts: usize,
    /// Decisions correct replicas adopted from a fallback leader.
    pub fallback_adoptions: u64,
    /// How correct clients' range reads completed (Pesto §5.5).
    pub range: pistou_txn::RangeStats,
    /// Transactions correct replicas fetched with SYNC and applied from a SUPPLY.
    pub supplied: u64,
    /// Range reads correct replicas ran as jobs, past their inline slice of work.
    pub long_reads: u64,
    /// Committed statements of correct clients that did something (a schema change, not an
    /// `IF [NOT] EXISTS` no-op; a row returned or affected), by SQL text: shows a test that
    /// its workload reached the cases it is about.
    pub sql_effective: BTreeMap<String, usize>,
    /// Committed transactions of correct clients whose metadata names two or more shards
    /// (Basil 2PC), as correct replicas applied them.
    pub multi_shard_commits: usize,
    /// Of those, the ones that wrote data (not catalog) keys on two or more shards.
    pub cross_shard_write_commits: usize,
    /// Committed audits of the two-table SQL workload whose conserved total was checked.
    pub ledger_audits: usize,
    /// Of those, the ones whose total committed Byzantine writes had changed.
    pub ledger_audits_shifted: usize,
    /// Clients that stopped after an ST1 (`Scenario::sql_stalls`), and how many of those
    /// transactions correct replicas had decided by the end (finished by other clients).
    pub stalled: usize,
    pub stalled_decided: usize,
    /// SQL transactions of Byzantine clients that correct replicas committed (replayed by
    /// the SQL oracle).
    pub byzantine_sql_commits: usize,
    /// Of those, the ones that wrote rows on two or more shards (Basil 2PC).
    pub byzantine_cross_shard_commits: usize,
}

#[derive(Debug)]
pub enum SimError {
    Unsafe { scenario: &'static str, seed: u64, detail: String },
    Stuck { scenario: &'static str, seed: u64, detail: String },
    Setup(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Unsafe { scenario, seed, detail } => {
                write!(
                    f,
                    "SAFETY VIOLATION in scenario {scenario}, seed {seed}: {detail} (re-run with SIM_SEED={seed})"
                )
            }
            SimError::Stuck { scenario, seed, detail } => {
                write!(
                    f,
                    "LIVENESS FAILURE in scenario {scenario}, seed {seed}: {detail} (re-run with SIM_SEED={seed})"
                )
            }
            SimError::Setup(m) => write!(f, "simulation setup failed: {m}"),
        }
    }
}

fn seed_bytes(seed: u64, role: u64, a: u64, b: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&role.to_le_bytes());
    bytes[16..24].copy_from_slice(&a.to_le_bytes());
    bytes[24..].copy_from_slice(&b.to_le_bytes());
    pistou_crypto::hash(&bytes)
}

struct World {
    s: Scenario,
    rng: ChaCha8Rng,
    queue: EventQueue,
    replicas: BTreeMap<ReplicaId, Replica>,
    clients: Vec<SimClient>,
    skew: BTreeMap<Node, i64>,
    byz_clients: Vec<ByzClient>,
    byz_replicas: BTreeMap<ReplicaId, (ReplicaFault, BatchSigner)>,
    /// The vote each correct replica cast per transaction: it must never change.
    votes_seen: BTreeMap<(ReplicaId, TxnId), Vote>,
    violation: Option<String>,
    /// Steps taken by replicas, for the period of invariant checks.
    replica_steps: u64,
    round_trip: u64,
    crashed: BTreeSet<ReplicaId>,
    /// Replicas that crash once `crash_at_us` has passed.
    to_crash: BTreeSet<ReplicaId>,
    /// Crashed replicas that restart, and when.
    to_restart: BTreeMap<ReplicaId, u64>,
    /// Each correct replica's log, as its disk holds it.
    disks: BTreeMap<ReplicaId, MemoryLog>,
    /// Replicas restarted from their disks so far.
    restarts: usize,
    /// Entries forgotten by disks that restarts have since replaced.
    forgotten_by_old_disks: usize,
    /// Replicas restarted at least once.
    restarted: BTreeSet<ReplicaId>,
    isolated: BTreeSet<ReplicaId>,
    /// Replicas that never get writebacks (inconsistent, not Byzantine).
    lagging: BTreeSet<ReplicaId>,
    messages: u64,
    config: Arc<ClusterConfig>,
    /// Correct SQL clients that stopped after an ST1 (`Scenario::sql_stalls`), with it.
    stalled: BTreeMap<usize, TxnId>,
    /// SQL scenarios with Byzantine clients that write rows: the tables they write and the
    /// catalog version of each one's shard, set once the setup is committed.
    byz_catalog: Option<crate::sql_byz::CatalogCell>,
}

impl World {
    fn local_now(&self, node: Node, now: u64) -> u64 {
        now.saturating_add_signed(self.skew.get(&node).copied().unwrap_or(0))
    }

    fn send(&mut self, now: u64, from: Node, to: Node, msg: &Message) {
        self.messages += 1;
        if matches!(msg, Message::Writeback(_)) && matches!(to, Node::Replica(r) if self.lagging.contains(&r)) {
            return;
        }
        let start = now - EPOCH_US;
        let cut = |n: Node| matches!(n, Node::Replica(r) if self.isolated.contains(&r));
        let partitioned = self.s.partition.is_some_and(|(a, b)| start >= a && start < b) && (cut(from) || cut(to));
        if partitioned || (self.s.drop_prob > 0.0 && self.rng.gen_bool(self.s.drop_prob)) {
            return;
        }
        let delay = self.rng.gen_range(self.s.min_delay_us..=self.s.max_delay_us);
        self.queue.push(now + delay, Event::Deliver { from, to, frame: to_frame(msg) });
    }

    fn flush_replica(&mut self, now: u64, id: ReplicaId) {
        let Some(r) = self.replicas.get_mut(&id) else { return };
        // Long range reads run at once: the node runs them on a worker thread meanwhile,
        // which the simulator's delivery order already covers (any interleaving is one
        // where the job ended before the next message).
        r.run_range_jobs();
        // Every step a replica takes keeps its transaction table and indexes in agreement:
        // checked after each step while its state is small, every k-th step beyond.
        self.replica_steps += 1;
        if self.replica_steps.is_multiple_of(1 + r.invariant_state_size() as u64 / INVARIANT_STATE_PER_STEP) {
            if let Err(e) = r.check_invariants() {
                self.violation.get_or_insert(format!("replica {id}: {e}"));
            }
        }
        let mut to_clients = r.take_outputs();
        let mut to_replicas = r.take_replica_outputs();
        match self.byz_replicas.get(&id) {
            Some((fault, signer)) => {
                let rng = &mut self.rng;
                to_clients = to_clients
                    .into_iter()
                    .filter_map(|(p, m)| tamper(*fault, signer, id, p, m, rng).map(|m| (p, m)))
                    .collect();
                to_replicas =
                    to_replicas.into_iter().filter_map(|(r, m)| tamper_replica(*fault, m).map(|m| (r, m))).collect();
            }
            None => {
                for (_, m) in &to_clients {
                    self.watch_vote(id, m);
                }
            }
        }
        for (peer, msg) in to_clients {
            self.send(now, Node::Replica(id), Node::Client(peer as usize), &msg);
        }
        for (to, msg) in to_replicas {
            self.send(now, Node::Replica(id), Node::Replica(to), &msg);
        }
    }

    /// A correct replica never changes its ST1 vote for a transaction.
    fn watch_vote(&mut self, id: ReplicaId, msg: &Message) {
        if let Message::PrepareReply { vote, .. } = msg {
            let prev = self.votes_seen.entry((id, vote.body.txn)).or_insert(vote.body.vote);
            if *prev != vote.body.vote {
                self.violation = Some(format!("correct replica {id} changed its vote on {}", vote.body.txn));
            }
        }
    }

    fn flush_byz_client(&mut self, now: u64, out: Vec<(ReplicaId, Message)>, index: usize) {
        for (to, msg) in out {
            self.send(now, Node::Client(index), Node::Replica(to), &msg);
        }
    }

    fn flush_client(&mut self, now: u64, c: usize) {
        let out = self.clients[c].coord.take_outputs();
        if self.stalled.contains_key(&c) {
            return;
        }
        let staller = self.s.sql_stalls > 0 && c > 0 && c + self.s.sql_stalls >= self.clients.len();
        let setup_done = self.clients[c].sql.as_ref().is_some_and(|s| s.setup_finished());
        let me = ClientId(c as u64 + 1);
        let stop_after = (staller && setup_done)
            .then(|| {
                out.iter().find_map(|(_, m)| match m {
                    Message::Prepare(p) if p.body.meta.ts.client == me && !p.body.meta.write_set.is_empty() => {
                        Some(p.body.meta.id())
                    }
                    _ => None,
                })
            })
            .flatten();
        for (to, msg) in out {
            self.send(now, Node::Client(c), Node::Replica(to), &msg);
        }
        if let Some(id) = stop_after {
            self.stalled.insert(c, id);
        }
    }

    fn on_event(&mut self, now: u64, ev: Event) -> Result<(), String> {
        match ev {
            Event::Deliver { from, to, frame } => {
                let msg = decode_message(&frame).map_err(|e| format!("codec failed on a message we encoded: {e}"))?;
                match (from, to) {
                    (Node::Client(c), Node::Replica(r)) => {
                        if self.crashed.contains(&r) {
                            return Ok(());
                        }
                        let local = self.local_now(to, now);
                        if let Some(rep) = self.replicas.get_mut(&r) {
                            rep.handle(local, c as u64, msg);
                        }
                        self.flush_replica(now, r);
                    }
                    (Node::Replica(r), Node::Client(c)) => {
                        let local = self.local_now(to, now);
                        if c >= self.clients.len() {
                            let mut out = Vec::new();
                            if let Some(b) = self.byz_clients.get_mut(c - self.clients.len()) {
                                b.handle(msg, &mut out);
                            }
                            self.flush_byz_client(now, out, c);
                            return Ok(());
                        }
                        if self.stalled.contains_key(&c) {
                            return Ok(());
                        }
                        let client = &mut self.clients[c];
                        client.coord.handle(local, r, msg);
                        client.step(local, &mut self.rng);
                        self.flush_client(now, c);
                        self.release_sql_clients();
                    }
                    (Node::Replica(a), Node::Replica(b)) => {
                        if self.crashed.contains(&b) {
                            return Ok(());
                        }
                        let local = self.local_now(to, now);
                        if let Some(rep) = self.replicas.get_mut(&b) {
                            rep.handle_replica(local, a, msg);
                        }
                        self.flush_replica(now, b);
                    }
                    (Node::Client(_), Node::Client(_)) => return Err("message between two clients".into()),
                }
            }
            Event::Tick(node) => {
                let local = self.local_now(node, now);
                match node {
                    // A crashed replica's timer keeps running, so it ticks again once restarted.
                    Node::Replica(r) if self.crashed.contains(&r) => {}
                    Node::Replica(r) => {
                        if let Some(rep) = self.replicas.get_mut(&r) {
                            rep.tick(local);
                            rep.flush();
                        }
                        self.flush_replica(now, r);
                    }
                    Node::Client(c) if c >= self.clients.len() => {
                        let mut out = Vec::new();
                        let rt = self.round_trip;
                        if let Some(b) = self.byz_clients.get_mut(c - self.clients.len()) {
                            b.step(local, &mut self.rng, &mut out);
                            b.tick(local, rt, &mut out);
                        }
                        self.flush_byz_client(now, out, c);
                    }
                    Node::Client(c) if self.stalled.contains_key(&c) => {}
                    Node::Client(c) => {
                        let client = &mut self.clients[c];
                        client.coord.tick(local);
                        client.step(local, &mut self.rng);
                        self.flush_client(now, c);
                        self.release_sql_clients();
                    }
                }
                self.queue.push(now + TICK_US, Event::Tick(node));
            }
        }
        Ok(())
    }

    /// SQL clients held back until client 0 has committed the setup go once it has.
    fn release_sql_clients(&mut self) {
        if !self.clients.first().and_then(|c| c.sql.as_ref()).is_some_and(|s| s.setup_finished()) {
            return;
        }
        for script in self.clients.iter_mut().filter_map(|c| c.sql.as_mut()) {
            script.held = false;
        }
        self.learn_byz_catalogs();
    }

    /// Fills `byz_catalog` once every written table's shard has a correct replica that
    /// committed the setup's last schema change.
    fn learn_byz_catalogs(&self) {
        let (Some(cell), Some(spec)) = (&self.byz_catalog, &self.s.sql) else { return };
        let Ok(mut slot) = cell.lock() else { return };
        if slot.is_some() {
            return;
        }
        let setup = self.clients.first().and_then(|c| c.sql.as_ref()).map_or(&[][..], |s| &s.finished[..]);
        let is_ddl = |l: &&crate::sql_workload::SqlTxnLog| {
            l.statements.iter().any(|st| matches!(st.output, SqlOutput::Ddl { .. }))
        };
        let ddl = setup.iter().filter(|l| l.decision == Some(Decision::Commit)).filter(is_ddl);
        let Some(setup_ddl) = ddl.map(|l| l.ts).max() else { return };
        let correct = |id: &ReplicaId| !self.byz_replicas.contains_key(id) && !self.crashed.contains(id);
        let committed = |shard: ShardId| {
            let replicas = self.replicas.iter().filter(|(id, _)| id.shard == shard && correct(id));
            replicas.map(|(_, r)| crate::sql_byz::newest_catalog(r.committed_txns(), shard)).collect()
        };
        *slot = crate::sql_byz::targets(&crate::sql_byz::tables(spec), &self.config, setup_ddl, committed);
    }

    /// Every correct client is done and every restarted or cut-off replica has caught up.
    fn finished(&self) -> bool {
        let caught_up = self
            .restarted
            .iter()
            .chain(&self.isolated)
            .all(|id| self.crashed.contains(id) || self.replicas.get(id).is_none_or(|r| !r.catch_up_running()));
        caught_up && self.clients.iter().all(|c| self.stalled.contains_key(&c.index) || (c.done() && !c.coord.busy()))
    }
}

fn build(s: &Scenario) -> Result<World, SimError> {
    if s.crashes_per_shard > s.f {
        return Err(SimError::Setup("more crashes per shard than f".into()));
    }
    let n = 5 * s.f + 1;
    let shards: Vec<ShardConfig> = (0..s.shards)
        .map(|sh| ShardConfig {
            replicas: (0..n)
                .map(|i| ReplicaConfig {
                    addr: format!("sim:s{sh}r{i}"),
                    public_key: SecretKey::from_seed(seed_bytes(s.seed, 1, sh as u64, i as u64)).public(),
                })
                .collect(),
        })
        .collect();
    let clients: Vec<ClientConfig> = (0..s.clients + s.byz_clients)
        .map(|c| ClientConfig {
            id: c as u64 + 1,
            public_key: SecretKey::from_seed(seed_bytes(s.seed, 2, c as u64, 0)).public(),
        })
        .collect();
    let round_trip = 2 * s.max_delay_us + 2 * TICK_US;
    let config = ClusterConfig {
        f: s.f,
        delta_us: 200_000,
        max_txn_age_us: s.max_txn_age_us,
        crypto: s.crypto,
        reply_batch: 8,
        shards,
        clients,
        tables: s.tables.clone(),
        sql: pistou_core::SqlConfig { statement_inline_work: s.statement_inline_work, ..Default::default() },
        // Below the clients' writeback resend span (`timeouts` below: 8 × 10 round trips).
        storage: pistou_core::StorageConfig {
            catch_up_after_silence_us: if s.catch_up_after_silence { 40 * round_trip } else { u64::MAX },
            ..Default::default()
        },
        metrics: Default::default(),
    };
    config.validate().map_err(|e| SimError::Setup(e.to_string()))?;
    let config = Arc::new(config);
    let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
    let mut replicas = BTreeMap::new();
    let mut disks = BTreeMap::new();
    for id in config.all_replicas() {
        let disk = MemoryLog::default();
        replicas.insert(id, new_replica(s, &config, id, disk.clone())?);
        disks.insert(id, disk);
    }
    let timeouts = CoordinatorTimeouts {
        fast_path_us: round_trip,
        retransmit_us: 10 * round_trip,
        writeback_retries: 8,
        recovery_after_us: 20 * round_trip,
        fallback_us: 10 * round_trip,
    };
    let mut sim_clients = Vec::new();
    for c in 0..s.clients {
        let key = SecretKey::from_seed(seed_bytes(s.seed, 2, c as u64, 0));
        let mut coord = Coordinator::new(config.clone(), ClientId(c as u64 + 1), Some(key)).map_err(SimError::Setup)?;
        coord.set_timeouts(timeouts);
        coord.set_eager_range_reads(!s.force_snapshot_path);
        // Even clients rely on the session for their reads, as the client library does; odd
        // ones sign them, as over a connection without a session. Both paths run everywhere.
        coord.set_session_reads(c % 2 == 0);
        coord.set_random_secret(seed_bytes(s.seed, 5, c as u64, 0));
        sim_clients.push(match &s.sql {
            Some(spec) => SimClient::new_sql(c, coord, spec.clone()),
            None => SimClient::new(c, coord, s.workload.clone()),
        });
    }
    let mut skew = BTreeMap::new();
    let mut queue = EventQueue::default();
    let nodes: Vec<Node> =
        config.all_replicas().map(Node::Replica).chain((0..s.clients + s.byz_clients).map(Node::Client)).collect();
    for node in nodes {
        let k = s.clock_skew_us as i64;
        skew.insert(node, rng.gen_range(-k..=k));
        queue.push(EPOCH_US + rng.gen_range(0..TICK_US), Event::Tick(node));
    }
    let mut crashed = BTreeSet::new();
    let mut isolated = BTreeSet::new();
    for sh in 0..s.shards as u32 {
        let mut idx: Vec<u32> = (0..n as u32).collect();
        for i in 0..s.crashes_per_shard {
            let j = rng.gen_range(i..idx.len());
            idx.swap(i, j);
            crashed.insert(ReplicaId { shard: ShardId(sh), index: idx[i] });
        }
        if s.partition.is_some() {
            isolated.insert(ReplicaId { shard: ShardId(sh), index: rng.gen_range(0..n as u32) });
        }
    }
    if s.byz_replicas_per_shard > s.f || s.byz_replicas_per_shard + s.crashes_per_shard > s.f {
        return Err(SimError::Setup("more than f faulty replicas per shard".into()));
    }
    let mut byz_replicas = BTreeMap::new();
    if let Some(fault) = s.replica_fault {
        for sh in 0..s.shards as u32 {
            // Byzantine replicas are chosen among those that do not crash.
            let mut candidates: Vec<u32> =
                (0..n as u32).filter(|i| !crashed.contains(&ReplicaId { shard: ShardId(sh), index: *i })).collect();
            for _ in 0..s.byz_replicas_per_shard {
                let i = candidates.remove(rng.gen_range(0..candidates.len()));
                let id = ReplicaId { shard: ShardId(sh), index: i };
                byz_replicas.insert(
                    id,
                    (fault, BatchSigner::new(SecretKey::from_seed(seed_bytes(s.seed, 1, sh as u64, i as u64)), 1)),
                );
            }
        }
    }
    if s.byz_replicas_per_shard + s.crashes_per_shard + s.omit_writebacks_per_shard > 2 * s.f {
        return Err(SimError::Setup("more than 2f faulty or lagging replicas per shard".into()));
    }
    let mut lagging = BTreeSet::new();
    for sh in 0..s.shards as u32 {
        let mut candidates: Vec<u32> = (0..n as u32)
            .filter(|i| {
                let id = ReplicaId { shard: ShardId(sh), index: *i };
                !crashed.contains(&id) && !byz_replicas.contains_key(&id)
            })
            .collect();
        for _ in 0..s.omit_writebacks_per_shard {
            let i = candidates.remove(rng.gen_range(0..candidates.len()));
            lagging.insert(ReplicaId { shard: ShardId(sh), index: i });
        }
    }
    let mut byz_clients = Vec::new();
    // In SQL workloads, transactions that reach the prepare phase write rows (`sql_byz`).
    let rows = matches!(
        s.client_fault,
        Some(
            ClientFault::StallLate
                | ClientFault::PartialSt1
                | ClientFault::Equivocate
                | ClientFault::ForcedEquivocate
                | ClientFault::FutureTimestamps
                | ClientFault::StallEarly
        )
    );
    if rows && s.sql.as_ref().is_some_and(|spec| spec.ledger && spec.schema_changes) && s.byz_clients > 0 {
        // Their rows follow the setup's schema; a column added by a schema change would
        // make them malformed.
        return Err(SimError::Setup("Byzantine clients writing rows do not run with schema changes".into()));
    }
    let byz_catalog: Option<crate::sql_byz::CatalogCell> =
        (rows && s.sql.is_some()).then(|| Arc::new(std::sync::Mutex::new(None)));
    if let Some(fault) = s.client_fault {
        for b in 0..s.byz_clients {
            let c = s.clients + b;
            let key = SecretKey::from_seed(seed_bytes(s.seed, 2, c as u64, 0));
            let gap = 40 * round_trip;
            let hot = s.workload.hot_keys.max(1);
            let pick: pistou_adversary::KeyPicker =
                Box::new(move |rng| pistou_adversary::account_key(rng.gen_range(0..hot)));
            let byz = ByzClient::new(c, ClientId(c as u64 + 1), key, fault, config.clone(), pick, s.byz_txns, gap);
            byz_clients.push(match &byz_catalog {
                Some(cell) => byz.with_shape(crate::sql_byz::shaper(cell.clone())),
                None => byz,
            });
        }
    }
    Ok(World {
        s: s.clone(),
        rng,
        queue,
        replicas,
        clients: sim_clients,
        skew,
        byz_clients,
        byz_replicas,
        votes_seen: BTreeMap::new(),
        violation: None,
        replica_steps: 0,
        round_trip,
        crashed: BTreeSet::new(),
        to_crash: crashed,
        to_restart: BTreeMap::new(),
        disks,
        restarts: 0,
        forgotten_by_old_disks: 0,
        restarted: BTreeSet::new(),
        isolated,
        lagging,
        messages: 0,
        config,
        stalled: BTreeMap::new(),
        byz_catalog,
    })
}

/// A replica with its signing key (derived from the seed), sessions for every client and
/// `disk` as its log.
fn new_replica(s: &Scenario, config: &Arc<ClusterConfig>, id: ReplicaId, disk: MemoryLog) -> Result<Replica, SimError> {
    let key = SecretKey::from_seed(seed_bytes(s.seed, 1, id.shard.0 as u64, id.index as u64));
    let mut replica = Replica::new(config.clone(), id, Some(key)).map_err(SimError::Setup)?;
    replica.set_view_timeout_base(5 * (2 * s.max_delay_us + 2 * TICK_US));
    // The simulated network is an authenticated channel: a message from client node c is
    // client c's (Byzantine clients included, under their own ids).
    for c in 0..s.clients + s.byz_clients {
        replica.open_session(c as u64, ClientId(c as u64 + 1));
    }
    replica.set_log(Box::new(disk));
    Ok(replica)
}

impl World {
    /// Restarts the crashed replicas whose time has come: a new replica replays what its
    /// disk holds (less `lost_unsynced_entries`) and rejoins.
    fn restart_due(&mut self, now: u64) -> Result<(), String> {
        let due: Vec<ReplicaId> = self.to_restart.iter().filter(|(_, at)| **at <= now).map(|(id, _)| *id).collect();
        for id in due {
            self.to_restart.remove(&id);
            let Some(old) = self.disks.get(&id) else { continue };
            self.forgotten_by_old_disks += old.forgotten();
            let mut entries = old.entries();
            entries.truncate(entries.len().saturating_sub(self.s.lost_unsynced_entries));
            let disk = MemoryLog::default();
            let mut replica = new_replica(&self.s, &self.config, id, disk.clone()).map_err(|e| e.to_string())?;
            let mut writer = disk.clone();
            for e in &entries {
                writer.append(e.clone());
            }
            replica.recover(self.local_now(Node::Replica(id), now), entries);
            // Invariant: recovery restores every committed write the replica had applied.
            if let Some(before) = self.replicas.get(&id) {
                let (before, after) = (before.newest_committed(), replica.newest_committed());
                if before != after {
                    let differ = before.iter().filter(|(k, v)| after.get(*k) != Some(v)).count()
                        + after.keys().filter(|k| !before.contains_key(*k)).count();
                    return Err(format!(
                        "SAFETY: replica {id} recovered a different committed state: {differ} of {} keys differ",
                        before.len()
                    ));
                }
            }
            replica.start_catch_up(self.local_now(Node::Replica(id), now));
            self.replicas.insert(id, replica);
            self.flush_replica(now, id);
            self.disks.insert(id, disk);
            self.crashed.remove(&id);
            self.restarted.insert(id);
            self.restarts += 1;
        }
        Ok(())
    }
}

/// A node's identity for the trace digest.
fn node_bytes(n: Node) -> [u8; 9] {
    let mut b = [0u8; 9];
    match n {
        Node::Replica(r) => {
            b[1..5].copy_from_slice(&r.shard.0.to_le_bytes());
            b[5..9].copy_from_slice(&r.index.to_le_bytes());
        }
        Node::Client(c) => {
            b[0] = 1;
            b[1..9].copy_from_slice(&(c as u64).to_le_bytes());
        }
    }
    b
}

/// Runs a scenario to completion and checks it: every correct client finishes its
/// transactions (liveness), and the oracle accepts the history (safety).
pub fn run(s: &Scenario) -> Result<Outcome, SimError> {
    let mut w = build(s)?;
    let unsafe_err = |detail: String| SimError::Unsafe { scenario: s.name, seed: s.seed, detail };
    let mut now = EPOCH_US;
    let mut trace = [0u8; 32];
    while let Some((at, ev)) = w.queue.pop() {
        now = at;
        if let Event::Deliver { from, to, frame } = &ev {
            trace =
                pistou_crypto::hash_parts(&[&trace, &at.to_le_bytes(), &node_bytes(*from), &node_bytes(*to), frame]);
        }
        if now - EPOCH_US >= s.crash_at_us && !w.to_crash.is_empty() {
            if let Some(after) = s.restart_after_us {
                w.to_restart.extend(w.to_crash.iter().map(|id| (*id, now + after)));
            }
            w.crashed.append(&mut w.to_crash);
        }
        w.restart_due(now).map_err(unsafe_err)?;
        w.on_event(now, ev).map_err(unsafe_err)?;
        if let Some(v) = w.violation.take() {
            return Err(unsafe_err(v));
        }
        if w.finished() {
            break;
        }
        if now - EPOCH_US > s.time_limit_us {
            let pending: Vec<String> = w
                .clients
                .iter()
                .filter(|c| !c.done() || c.coord.busy())
                .map(|c| format!("client {}: {}", c.index, c.coord.describe_pending()))
                .collect();
            let stuck = w.clients.iter().flat_map(|c| c.coord.pending_ids()).collect::<Vec<_>>();
            let replicas: Vec<String> = stuck
                .iter()
                .flat_map(|id| w.replicas.values().map(move |r| r.describe_fallback(id)))
                .filter(|d| !d.ends_with("unknown"))
                .collect();
            return Err(SimError::Stuck {
                scenario: s.name,
                seed: s.seed,
                detail: format!(
                    "still busy after {} simulated seconds: {} || replicas: {}",
                    s.time_limit_us / 1_000_000,
                    pending.join(" | "),
                    replicas.join(" | ")
                ),
            });
        }
    }
    let logs: Vec<_> = w.clients.iter().flat_map(|c| c.finished.iter().cloned()).collect();
    let correct: Vec<&Replica> = w
        .replicas
        .iter()
        .filter(|(id, _)| !w.crashed.contains(id) && !w.byz_replicas.contains_key(id))
        .map(|(_, r)| r)
        .collect();
    let mut sql_logs: Vec<_> =
        w.clients.iter().filter_map(|c| c.sql.as_ref()).flat_map(|s| s.finished.iter().cloned()).collect();
    // A stalled client's last transaction counts as the correct replicas decided it, if any did.
    let mut stalled_decided = 0;
    for (c, id) in &w.stalled {
        let Some(mut log) = w.clients[*c].sql.as_ref().and_then(|s| s.committing()).cloned() else { continue };
        log.id = Some(*id);
        log.decision = correct.iter().find_map(|r| r.decision_of(id));
        stalled_decided += log.decision.is_some() as usize;
        sql_logs.push(log);
    }
    // Correct clients and correct replicas agree on every decision.
    let decided =
        logs.iter().map(|l| (l.client, l.id, l.decision)).chain(sql_logs.iter().map(|l| (l.client, l.id, l.decision)));
    for (client, id, decision) in decided {
        let (Some(id), Some(d)) = (id, decision) else { continue };
        if let Some(r) = correct.iter().find(|r| r.decision_of(&id).is_some_and(|rd| rd != d)) {
            return Err(unsafe_err(format!(
                "client {client} saw {d:?} for {id} but replica {} applied the opposite",
                r.id()
            )));
        }
    }
    // A correct replica applies every commit it accepts; one it could not apply would leave
    // it without committed rows.
    if let Some(r) = correct.iter().find(|r| r.stats().unapplied_sql_commits > 0) {
        return Err(unsafe_err(format!(
            "replica {} could not apply {} committed SQL transactions",
            r.id(),
            r.stats().unapplied_sql_commits
        )));
    }
    // Committed transactions of Byzantine clients, as correct replicas applied them.
    let correct_ids: BTreeSet<u64> = (1..=s.clients as u64).collect();
    let mut others: BTreeMap<pistou_core::Timestamp, TxnLog> = BTreeMap::new();
    for r in &correct {
        for m in r.committed_txns().filter(|m| !correct_ids.contains(&m.ts.client.0)) {
            others.entry(m.ts).or_insert_with(|| TxnLog {
                client: usize::MAX,
                ts: m.ts,
                reads: vec![],
                writes: m.write_set.iter().map(|w| (w.key.clone(), w.value.clone())).collect(),
                decision: Some(Decision::Commit),
                fast: false,
                id: Some(m.id()),
            });
        }
    }
    let others: Vec<TxnLog> = others.into_values().collect();
    let mut report = oracle::check(&logs, &others).map_err(unsafe_err)?;
    let mut sql_committed = 0;
    let mut audits = crate::ledger_audit::AuditReport::default();
    let mut byzantine_sql_commits = 0;
    let mut byzantine_cross_shard_commits = 0;
    if let Some(spec) = &s.sql {
        // Byzantine clients' committed row writes take their place in the replay.
        let mut replay = sql_logs.clone();
        let mut byz_seen = BTreeSet::new();
        for r in &correct {
            for m in r.committed_txns().filter(|m| !correct_ids.contains(&m.ts.client.0)) {
                if byz_seen.insert(m.id()) {
                    let log = crate::sql_byz::replay_log(m).map_err(unsafe_err)?;
                    byzantine_cross_shard_commits +=
                        (log.is_some() && crate::sql_byz::writes_rows_on_two_shards(m, &w.config)) as usize;
                    replay.extend(log);
                }
            }
        }
        byzantine_sql_commits = replay.len() - sql_logs.len();
        let mut deltas = crate::ledger_audit::ByzantineDeltas::default();
        let replayed = if spec.ledger {
            sql_oracle::check_observed(&replay, |txn, model| deltas.observe(txn, model))
        } else {
            sql_oracle::check(&replay)
        };
        sql_committed = replayed.map_err(unsafe_err)? - byzantine_sql_commits;
        report.committed += sql_committed;
        if spec.ledger {
            audits = crate::ledger_audit::check_ledger_audits(&sql_logs, &deltas).map_err(unsafe_err)?;
        }
    }
    // Shards of the correct clients' committed transactions, as correct replicas applied them.
    let mut spans: BTreeMap<TxnId, (usize, usize)> = BTreeMap::new();
    for r in &correct {
        for m in r.committed_txns().filter(|m| correct_ids.contains(&m.ts.client.0)) {
            spans.entry(m.id()).or_insert_with(|| {
                let written: BTreeSet<ShardId> = m
                    .write_set
                    .iter()
                    .filter(|e| {
                        !matches!(pistou_core::sql_keys::key_kind(&e.key), pistou_core::sql_keys::KeyKind::Catalog(_))
                    })
                    .map(|e| w.config.shard_of(&e.key))
                    .collect();
                (m.shards.len(), written.len())
            });
        }
    }
    let committed = logs.iter().filter(|l| l.decision == Some(Decision::Commit)).count() + sql_committed;
    let sql_aborted = sql_logs.len() - sql_committed;
    let (caught_up_commits, restarted_keys_behind, restarted_rows_behind) =
        check_caught_up(&w, &w.restarted).map_err(unsafe_err)?;
    let (_, cut_off_keys_behind, cut_off_rows_behind) = check_caught_up(&w, &w.isolated).map_err(unsafe_err)?;
    let correct_replicas = w.replicas.iter().filter(|(id, _)| !w.crashed.contains(id));
    Ok(Outcome {
        trace,
        committed,
        aborted: logs.len() + sql_committed + sql_aborted - committed,
        fast_commits: logs.iter().filter(|l| l.decision == Some(Decision::Commit) && l.fast).count(),
        oracle: report,
        sim_time_us: now - EPOCH_US,
        messages: w.messages,
        rejected: correct_replicas.clone().map(|(_, r)| r.rejections().total()).sum(),
        bad_certificates: correct_replicas
            .map(|(_, r)| r.rejections().count(pistou_txn::RejectReason::BadCertificate))
            .sum(),
        recoveries: w.clients.iter().map(|c| c.coord.recoveries()).sum(),
        protocol_aborts: logs.iter().filter(|l| l.decision == Some(Decision::Abort) && l.id.is_some()).count(),
        fallback_adoptions: correct.iter().map(|r| r.stats().fallback_adoptions).sum(),
        supplied: correct.iter().map(|r| r.stats().supplied).sum(),
        long_reads: correct.iter().map(|r| r.stats().long_reads).sum(),
        sql_effective: effective_statements(&sql_logs),
        range: w.clients.iter().map(|c| c.coord.range_stats()).fold(pistou_txn::RangeStats::default(), |a, b| {
            pistou_txn::RangeStats {
                eager: a.eager + b.eager,
                snapshot_proposals: a.snapshot_proposals + b.snapshot_proposals,
                snapshot: a.snapshot + b.snapshot,
                failed: a.failed + b.failed,
            }
        }),
        multi_shard_commits: spans.values().filter(|(shards, _)| *shards >= 2).count(),
        cross_shard_write_commits: spans.values().filter(|(_, written)| *written >= 2).count(),
        ledger_audits: audits.checked,
        ledger_audits_shifted: audits.shifted,
        stalled: w.stalled.len(),
        stalled_decided,
        byzantine_sql_commits,
        byzantine_cross_shard_commits,
        restarts: w.restarts,
        log_entries_forgotten: w.forgotten_by_old_disks + w.disks.values().map(MemoryLog::forgotten).sum::<usize>(),
        caught_up_commits,
        cut_off_keys_behind,
        rows_behind: restarted_rows_behind + cut_off_rows_behind,
        catch_ups_after_silence: w.replicas.values().map(|r| r.catch_ups_after_silence()).sum(),
        restarted_keys_behind,
    })
}

/// See [`Outcome::sql_effective`].
fn effective_statements(logs: &[SqlTxnLog]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for log in logs.iter().filter(|l| l.decision == Some(Decision::Commit)) {
        for st in &log.statements {
            let effective = match &st.output {
                SqlOutput::Rows { rows, .. } => !rows.is_empty(),
                SqlOutput::Affected { count, .. } => *count > 0,
                SqlOutput::Ddl { notice, .. } => notice.is_none(),
            };
            if effective {
                *out.entry(st.sql.clone()).or_default() += 1;
            }
        }
    }
    out
}

/// Every replica of `which` (restarted or cut off) has finished catching up; returns the
/// commits restarted replicas learnt that way, the keys on which they are behind f+1
/// replicas that were never down or cut off, and the SQL rows on which they differ from f+1
/// such replicas.
fn check_caught_up(w: &World, which: &BTreeSet<ReplicaId>) -> Result<(u64, usize, usize), String> {
    let (mut learnt, mut behind, mut rows_behind) = (0, 0, 0);
    for id in which {
        let Some(r) = w.replicas.get(id).filter(|_| !w.crashed.contains(id)) else { continue };
        if r.catch_up_running() {
            return Err(format!("LIVENESS: replica {id} never finished catching up"));
        }
        learnt += r.caught_up_commits();
        let sound = |o: &ReplicaId| {
            o.shard == id.shard
                && !w.restarted.contains(o)
                && !w.isolated.contains(o)
                && !w.crashed.contains(o)
                && !w.byz_replicas.contains_key(o)
                && !w.lagging.contains(o)
        };
        let others: Vec<&Replica> = w.replicas.iter().filter(|(o, _)| sound(o)).map(|(_, o)| o).collect();
        let mine = r.newest_committed();
        let newest: Vec<_> = others.iter().map(|o| o.newest_committed()).collect();
        let keys: BTreeSet<&Vec<u8>> = newest.iter().flat_map(|m| m.keys()).collect();
        for key in keys {
            let newer = newest.iter().filter(|o| o.get(key).map(|v| v.0) > mine.get(key).map(|v| v.0)).count();
            if newer > w.s.f {
                behind += 1;
            }
        }
        let my_rows = r.live_rows();
        let their_rows: Vec<_> = others.iter().map(|o| o.live_rows()).collect();
        let rows: BTreeSet<_> = their_rows.iter().flat_map(|m| m.keys()).chain(my_rows.keys()).collect();
        for row in rows {
            if their_rows.iter().filter(|o| o.get(row) != my_rows.get(row)).count() > w.s.f {
                rows_behind += 1;
            }
        }
    }
    Ok((learnt, behind, rows_behind))
}
