//! The background task that owns the `Coordinator`. Users talk to it through
//! [`Command`]s; replies from replicas arrive from the links. All protocol state lives
//! in this one task, so nothing is locked.

use crate::error::{ClientError, Outcome};
use crate::link::{run_link, LinkCounters, LinkParams};
use crate::options::ClientOptions;
use bytes::Bytes;
use pistou_core::{ClusterConfig, Key, ReplicaId, Value};
use pistou_crypto::SecretKey;
use pistou_txn::{Coordinator, CoordinatorEvent, GetStart, SqlOutput, TxnHandle};
use pistou_wire::{encode_message, ClientSigned, Decision, Message, RangeRead};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

pub(crate) type Reply<T> = oneshot::Sender<Result<T, ClientError>>;
type Writes = Vec<(Key, Option<Value>)>;
/// Callers waiting for one key of one transaction.
type ReadWaiters = HashMap<Key, Vec<Reply<Option<Value>>>>;

pub use pistou_sql::SessionSequences;

pub(crate) enum Command {
    Begin {
        reply: Reply<TxnHandle>,
    },
    Get {
        txn: TxnHandle,
        key: Key,
        reply: Reply<Option<Value>>,
    },
    /// Buffered writes travel with the commit, so `Txn::put` needs no round trip.
    Commit {
        txn: TxnHandle,
        writes: Writes,
        reply: Reply<Outcome>,
    },
    Abort {
        txn: TxnHandle,
    },
    /// One SQL statement (Pesto): answered when it completes.
    Sql {
        txn: TxnHandle,
        sql: String,
        params: Vec<pistou_sql::Value>,
        /// The session's currval of each sequence before the statement; the reply carries
        /// them after it.
        currents: SessionSequences,
        /// setval settings the client applied for it (it runs again with them).
        sets: Vec<(String, pistou_sql::SequenceSet)>,
        reply: Reply<(SqlOutput, SessionSequences)>,
    },
    /// A schema change without SQL text (`Coordinator::sql_change`): answered as `Sql`.
    CatalogChange {
        txn: TxnHandle,
        change: pistou_sql::CatalogChange,
        reply: Reply<(SqlOutput, SessionSequences)>,
    },
    /// SAVEPOINT / RELEASE / ROLLBACK TO on the writes the coordinator buffers.
    Savepoint {
        txn: TxnHandle,
        op: pistou_txn::SavepointOp,
        reply: Reply<()>,
    },
    RangeStats {
        reply: Reply<pistou_txn::RangeStats>,
    },
    /// Sequence values taken from a counter, for the coordinator's statements.
    AddSequenceValues {
        name: String,
        id: u64,
        block: pistou_sql::SequenceBlock,
        reply: Reply<()>,
    },
    /// A setval of the sequence was written to its counter: drop the values cached before.
    SequenceSetApplied {
        name: String,
        id: u64,
        reply: Reply<()>,
    },
    /// Stop taking commands; finish writebacks (bounded by `linger`), then answer.
    Shutdown {
        done: oneshot::Sender<()>,
    },
}

/// Microseconds since the UNIX epoch: the only clock the coordinator sees.
fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Replies queued from all links to the engine.
const REPLY_QUEUE: usize = 4096;

pub(crate) struct Engine {
    coord: Coordinator,
    config: Arc<ClusterConfig>,
    options: ClientOptions,
    counters: Arc<LinkCounters>,
    /// Each link takes encoded messages (see `route`).
    links: HashMap<ReplicaId, mpsc::Sender<Bytes>>,
    /// The client's key, with which every link opens an authenticated session (`None`
    /// when the cluster runs without cryptography).
    session_key: Option<SecretKey>,
    replies_tx: mpsc::Sender<(ReplicaId, Message)>,
    /// Callers waiting for a read, by transaction and key.
    reads: HashMap<TxnHandle, ReadWaiters>,
    /// Commits waiting for their transaction's outstanding reads (a caller may have
    /// dropped a `get` future; the coordinator only commits once reads are done).
    deferred: HashMap<TxnHandle, (Writes, Reply<Outcome>)>,
    commits: HashMap<TxnHandle, Reply<Outcome>>,
    /// Transactions begun and not yet aborted or decided.
    open: HashSet<TxnHandle>,
    /// Callers waiting for a SQL statement, by transaction (one statement at a time).
    statements: HashMap<TxnHandle, Reply<(SqlOutput, SessionSequences)>>,
}

impl Engine {
    /// Spawns the engine and one link per replica; returns the command sender.
    pub(crate) fn spawn(
        coord: Coordinator,
        config: Arc<ClusterConfig>,
        session_key: Option<SecretKey>,
        options: ClientOptions,
        counters: Arc<LinkCounters>,
    ) -> mpsc::UnboundedSender<Command> {
        // Unbounded on purpose: every command but `Abort` has a caller awaiting its answer,
        // and `Abort` comes from a `Txn` being dropped (which cannot await), so the queue
        // is bounded by the number of live callers and transactions.
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (replies_tx, replies_rx) = mpsc::channel(REPLY_QUEUE);
        let mut engine = Engine {
            coord,
            config,
            options,
            counters,
            links: HashMap::new(),
            session_key,
            replies_tx,
            reads: HashMap::new(),
            deferred: HashMap::new(),
            commits: HashMap::new(),
            open: HashSet::new(),
            statements: HashMap::new(),
        };
        // Eager links: the first transaction should not pay for connection setup.
        let all: Vec<ReplicaId> = engine.config.all_replicas().collect();
        for r in all {
            engine.link(r);
        }
        tokio::spawn(engine.run(cmd_rx, replies_rx));
        cmd_tx
    }

    async fn run(
        mut self,
        mut cmds: mpsc::UnboundedReceiver<Command>,
        mut replies: mpsc::Receiver<(ReplicaId, Message)>,
    ) {
        // `interval` panics on a zero period; a misconfigured option must not.
        let mut tick = tokio::time::interval(self.options.tick_interval.max(Duration::from_millis(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut shutdown = None;
        loop {
            tokio::select! {
                biased;
                _ = tick.tick() => self.coord.tick(now_us()),
                cmd = cmds.recv() => match cmd {
                    Some(Command::Shutdown { done }) => {
                        shutdown = Some(done);
                        break;
                    }
                    Some(cmd) => self.command(cmd),
                    None => break,
                },
                Some((from, msg)) = replies.recv() => {
                    let now = now_us();
                    self.coord.handle(now, from, msg);
                    for _ in 0..1024 {
                        let Ok((from, msg)) = replies.try_recv() else { break };
                        self.coord.handle(now, from, msg);
                    }
                }
            }
            self.after_input();
        }
        // Every handle is gone, or shutdown was asked: finish writebacks (bounded) so
        // replicas learn outcomes. Transactions still executing are abandoned.
        self.abandon_executing();
        let deadline = Instant::now() + self.options.linger;
        while self.coord.busy() && Instant::now() < deadline {
            tokio::select! {
                _ = tick.tick() => self.coord.tick(now_us()),
                Some((from, msg)) = replies.recv() => self.coord.handle(now_us(), from, msg),
            }
            self.after_input();
        }
        // Commands that raced with the shutdown: dropping them answers `Closed`.
        cmds.close();
        if let Some(done) = shutdown {
            let _ = done.send(());
        }
    }

    /// Aborts the transactions still executing: nobody will finish them. (Committing
    /// ones refuse the abort and run to their decision.)
    fn abandon_executing(&mut self) {
        for txn in std::mem::take(&mut self.open) {
            let _ = self.coord.abort(txn);
        }
        self.reads.clear();
        self.deferred.clear();
        self.statements.clear();
        self.route();
    }

    fn command(&mut self, cmd: Command) {
        let now = now_us();
        match cmd {
            Command::Begin { reply } => {
                let txn = self.coord.begin(now);
                self.open.insert(txn);
                let _ = reply.send(Ok(txn));
            }
            Command::Get { txn, key, reply } => match self.coord.get(now, txn, &key) {
                Ok(GetStart::Ready(v)) => {
                    let _ = reply.send(Ok(v));
                }
                Ok(GetStart::Pending) => self.reads.entry(txn).or_default().entry(key).or_default().push(reply),
                Err(e) => {
                    let _ = reply.send(Err(e.into()));
                }
            },
            Command::Sql { txn, sql, params, currents, sets, reply } => {
                if self.statements.contains_key(&txn) {
                    let _ = reply.send(Err(pistou_txn::TxnError::Busy.into()));
                    return;
                }
                self.coord.set_session_sequences(txn, currents);
                self.coord.set_sequence_sets(txn, sets);
                match self.coord.sql(now, txn, &sql, params) {
                    Ok(()) => {
                        self.statements.insert(txn, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e.into()));
                    }
                }
            }
            Command::CatalogChange { txn, change, reply } => {
                if self.statements.contains_key(&txn) {
                    let _ = reply.send(Err(pistou_txn::TxnError::Busy.into()));
                    return;
                }
                match self.coord.sql_change(now, txn, change) {
                    Ok(()) => {
                        self.statements.insert(txn, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e.into()));
                    }
                }
            }
            Command::Commit { txn, writes, reply } => {
                if self.reads.contains_key(&txn) {
                    self.deferred.insert(txn, (writes, reply));
                } else {
                    self.commit(now, txn, writes, reply);
                }
            }
            Command::Savepoint { txn, op, reply } => {
                let _ = reply.send(self.coord.savepoint(txn, op).map_err(Into::into));
            }
            Command::RangeStats { reply } => {
                let _ = reply.send(Ok(self.coord.range_stats()));
            }
            Command::AddSequenceValues { name, id, block, reply } => {
                self.coord.add_sequence_values(&name, id, block);
                let _ = reply.send(Ok(()));
            }
            Command::SequenceSetApplied { name, id, reply } => {
                self.coord.sequence_set_applied(&name, id);
                let _ = reply.send(Ok(()));
            }
            // Handled by the run loop.
            Command::Shutdown { done } => {
                let _ = done.send(());
            }
            Command::Abort { txn } => {
                // Fails harmlessly if the transaction is already committing.
                let _ = self.coord.abort(txn);
                self.reads.remove(&txn);
                self.deferred.remove(&txn);
                self.statements.remove(&txn);
                self.open.remove(&txn);
            }
        }
    }

    fn commit(&mut self, now: u64, txn: TxnHandle, writes: Writes, reply: Reply<Outcome>) {
        for (key, value) in writes {
            if let Err(e) = self.coord.put(txn, &key, value) {
                let _ = self.coord.abort(txn);
                self.open.remove(&txn);
                let _ = reply.send(Err(e.into()));
                return;
            }
        }
        match self.coord.commit(now, txn) {
            Ok(()) => {
                self.commits.insert(txn, reply);
            }
            Err(e) => {
                let _ = self.coord.abort(txn);
                self.open.remove(&txn);
                let _ = reply.send(Err(e.into()));
            }
        }
    }

    fn after_input(&mut self) {
        while let Some(event) = self.coord.poll_event() {
            match event {
                CoordinatorEvent::ReadDone { txn, key, value } => self.read_done(txn, key, value),
                CoordinatorEvent::SqlDone { txn, result } => {
                    if let Some(reply) = self.statements.remove(&txn) {
                        let currents = self.coord.session_sequences(txn);
                        let _ = reply.send(result.map(|out| (out, currents)).map_err(Into::into));
                    }
                }
                CoordinatorEvent::Decided { txn, decision, fast, .. } => {
                    self.open.remove(&txn);
                    let outcome = match decision {
                        Decision::Commit => Outcome::Committed { fast },
                        Decision::Abort => Outcome::Aborted,
                    };
                    if let Some(reply) = self.commits.remove(&txn) {
                        let _ = reply.send(Ok(outcome));
                    }
                }
            }
        }
        self.route();
    }

    fn read_done(&mut self, txn: TxnHandle, key: Key, value: Option<Value>) {
        let Some(waiting) = self.reads.get_mut(&txn) else { return };
        for reply in waiting.remove(&key).unwrap_or_default() {
            let _ = reply.send(Ok(value.clone()));
        }
        if waiting.is_empty() {
            self.reads.remove(&txn);
            if let Some((writes, reply)) = self.deferred.remove(&txn) {
                self.commit(now_us(), txn, writes, reply);
            }
        }
    }

    /// Encodes the coordinator's messages and hands them to the links. A range read goes
    /// to several replicas as one shared request, one after the other: it is encoded once.
    fn route(&mut self) {
        let mut last_range: Option<(Arc<ClientSigned<RangeRead>>, Bytes)> = None;
        for (to, msg) in self.coord.take_outputs() {
            let bytes = match (&msg, &last_range) {
                (Message::RangeRead(req), Some((prev, bytes))) if Arc::ptr_eq(req, prev) => bytes.clone(),
                (Message::RangeRead(req), _) => {
                    let bytes = Bytes::from(encode_message(&msg));
                    last_range = Some((req.clone(), bytes.clone()));
                    bytes
                }
                _ => Bytes::from(encode_message(&msg)),
            };
            let link = self.link(to);
            match link.try_send(bytes) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.counters.dropped_send();
                }
                Err(TrySendError::Closed(msg)) => {
                    // The link task ended unexpectedly: start a fresh one.
                    self.links.remove(&to);
                    let _ = self.link(to).try_send(msg);
                }
            }
        }
    }

    fn link(&mut self, to: ReplicaId) -> mpsc::Sender<Bytes> {
        if let Some(tx) = self.links.get(&to) {
            return tx.clone();
        }
        let (tx, rx) = mpsc::channel(self.options.link_queue);
        // The coordinator only addresses replicas of the configuration; an unknown one
        // gets a link that fails to connect and drops its messages.
        let addr = self.config.replica(to).map(|r| r.addr.clone()).unwrap_or_default();
        let params = LinkParams {
            replica: to,
            addr,
            client: self.coord.client_id(),
            session_key: self.session_key.clone(),
            connect_timeout: self.options.connect_timeout,
            max_backoff: self.options.max_backoff,
            max_frame_bytes: self.options.max_frame_bytes,
        };
        tokio::spawn(run_link(params, rx, self.replies_tx.clone(), self.counters.clone()));
        self.links.insert(to, tx.clone());
        tx
    }
}
