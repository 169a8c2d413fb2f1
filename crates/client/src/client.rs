//! The user-facing handles: [`Client`] (cheap to clone) and [`Txn`].

use crate::engine::{Command, Engine, SessionSequences};
use crate::error::{ClientError, Outcome};
use crate::link::LinkCounters;
use crate::options::ClientOptions;
use pistou_core::sql_keys::{catalog_key, sequence_key};
use pistou_core::{ClientId, ClusterConfig, Key, ShardId, Value};
use pistou_crypto::SecretKey;
use pistou_sql::{Catalog, SequenceSchema, SequenceSet, SqlError, SqlState, Value as SqlValue};
use pistou_txn::{CatalogWrite, Coordinator, SavepointOp, SqlOutput, TxnError, TxnHandle, MAX_SAVEPOINT_WRITES};
use pistou_wire::{MAX_KEY_BYTES, MAX_VALUE_BYTES};

/// Values of a sequence a client first takes at once (a statement needing more takes
/// four times as many, up to [`MAX_SEQUENCE_BLOCK`]); values a client holds when it stops
/// are skipped, as PostgreSQL skips cached values after a crash.
const SEQUENCE_BLOCK: u64 = 32;
const MAX_SEQUENCE_BLOCK: u64 = 1 << 20;
/// Blocks one statement may take before it fails.
const SEQUENCE_REFILLS: usize = 12;
use rand::Rng;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// What the body given to [`Client::run_txn`] returns.
pub type TxnFuture<'t, T> = Pin<Box<dyn Future<Output = Result<T, ClientError>> + Send + 't>>;

/// A connection to a Pistou cluster under one client identity. Clones share the same
/// background task; it stops (after finishing pending writebacks) when the last clone
/// and the last [`Txn`] are dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    id: ClientId,
    commands: mpsc::UnboundedSender<Command>,
    options: ClientOptions,
    counters: Arc<LinkCounters>,
    /// Held while this client writes a sequence's counter and updates its cache of values,
    /// so that a block taken before a setval never enters the cache after it.
    sequence_counters: tokio::sync::Mutex<()>,
}

impl Client {
    /// Starts the background task and the links to every replica (connected in the
    /// background, so this succeeds even if replicas are still starting).
    pub async fn connect(
        config: Arc<ClusterConfig>,
        id: ClientId,
        key: Option<SecretKey>,
    ) -> Result<Client, ClientError> {
        Self::connect_with(config, id, key, ClientOptions::default()).await
    }

    pub async fn connect_with(
        config: Arc<ClusterConfig>,
        id: ClientId,
        key: Option<SecretKey>,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        config.validate().map_err(|e| ClientError::Config(e.to_string()))?;
        // Every link is an authenticated session when the cluster uses cryptography, so
        // reads go unsigned (Pesto §3: clients are authenticated; replicas sign).
        let session_key = if config.crypto { key.clone() } else { None };
        let mut coord = Coordinator::new(config.clone(), id, key).map_err(ClientError::Config)?;
        coord.set_session_reads(session_key.is_some());
        coord.set_timeouts(options.timeouts);
        coord.set_eager_range_reads(options.eager_range_reads);
        #[cfg(feature = "fault-injection")]
        coord.set_writeback_omissions(options.writeback_omissions);
        // ThreadRng is a CSPRNG seeded by the operating system.
        coord.set_random_secret(rand::thread_rng().gen());
        let counters = Arc::new(LinkCounters::default());
        let commands = Engine::spawn(coord, config, session_key, options.clone(), counters.clone());
        let sequence_counters = tokio::sync::Mutex::new(());
        Ok(Client { inner: Arc::new(Inner { id, commands, options, counters, sequence_counters }) })
    }

    pub fn id(&self) -> ClientId {
        self.inner.id
    }

    /// How this client's range reads completed so far (eager or snapshot path).
    pub async fn range_stats(&self) -> Result<pistou_txn::RangeStats, ClientError> {
        let (reply, rx) = oneshot::channel();
        self.call("range-stats", Command::RangeStats { reply }, rx).await
    }

    /// Transport counters (connections, bad frames, dropped sends).
    pub fn counters(&self) -> &LinkCounters {
        &self.inner.counters
    }

    /// Starts a transaction; its timestamp is taken now.
    pub async fn begin(&self) -> Result<Txn, ClientError> {
        let (reply, rx) = oneshot::channel();
        let handle = self.call("begin", Command::Begin { reply }, rx).await?;
        Ok(Txn {
            client: self.clone(),
            handle,
            writes: BTreeMap::new(),
            done: false,
            savepoints: Vec::new(),
            undo: Vec::new(),
            uncertain: false,
            session_sequences: SessionSequences::default(),
        })
    }

    /// Runs `body` in a transaction and commits it, retrying with randomized back-off
    /// while the commit aborts. An error from `body` aborts the transaction and is
    /// returned as is (no retry).
    ///
    /// The body returns a boxed future so that the whole call stays `Send` (async
    /// closures cannot promise that yet): `client.run_txn(|t| Box::pin(async move { … }))`.
    pub async fn run_txn<T, F>(&self, mut body: F) -> Result<T, ClientError>
    where
        F: for<'t> FnMut(&'t mut Txn) -> TxnFuture<'t, T>,
    {
        let mut backoff_ms: u64 = 1;
        for _ in 0..self.inner.options.max_attempts {
            let mut txn = self.begin().await?;
            let value = match body(&mut txn).await {
                Ok(v) => v,
                Err(e) => {
                    txn.abort();
                    return Err(e);
                }
            };
            if txn.commit().await?.is_committed() {
                return Ok(value);
            }
            // Randomized so that conflicting clients do not retry in lockstep.
            let wait = rand::thread_rng().gen_range(0..=backoff_ms);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            backoff_ms = (backoff_ms * 2).min(200);
        }
        Err(ClientError::TooManyAborts(self.inner.options.max_attempts))
    }

    /// Takes up to `want` values of `sequence` from its counter, in a transaction of its own
    /// (retried on conflict with other clients taking values), for this client's statements.
    async fn refill_sequence(&self, sequence: &SequenceSchema, want: u64) -> Result<(), ClientError> {
        let key = Self::counter_key(sequence)?;
        let _counter = self.inner.sequence_counters.lock().await;
        let block = self
            .run_txn(|txn| {
                let (key, sequence) = (key.clone(), sequence.clone());
                Box::pin(async move {
                    let next = match txn.get(&key).await? {
                        None => None,
                        Some(bytes) => Some(bytes.try_into().map(i128::from_be_bytes).map_err(|_| {
                            ClientError::Sql(SqlError::new(
                                SqlState::ProtocolViolation,
                                format!("the counter of sequence \"{}\" cannot be decoded", sequence.name),
                            ))
                        })?),
                    };
                    let (block, after) = sequence.block(next, want).map_err(ClientError::Sql)?;
                    txn.put(&key, after.to_be_bytes().to_vec())?;
                    Ok(block)
                })
            })
            .await?;
        let (reply, rx) = oneshot::channel();
        let cmd = Command::AddSequenceValues { name: sequence.name.clone(), id: sequence.id, block, reply };
        self.call("sequence", cmd, rx).await
    }

    /// `setval`: writes the counter of `sequence` in a transaction of its own (not
    /// transactional, as in PostgreSQL) and drops the values this client cached before it.
    async fn apply_sequence_set(&self, sequence: &SequenceSchema, set: SequenceSet) -> Result<(), ClientError> {
        let key = Self::counter_key(sequence)?;
        let counter = sequence.counter_after(set).map_err(ClientError::Sql)?;
        let _counter = self.inner.sequence_counters.lock().await;
        self.run_txn(|txn| {
            let key = key.clone();
            Box::pin(async move { txn.put(&key, counter.to_be_bytes().to_vec()) })
        })
        .await?;
        let (reply, rx) = oneshot::channel();
        let cmd = Command::SequenceSetApplied { name: sequence.name.clone(), id: sequence.id, reply };
        self.call("sequence", cmd, rx).await
    }

    fn counter_key(sequence: &SequenceSchema) -> Result<Key, ClientError> {
        sequence_key(sequence.storage_name(), sequence.id)
            .ok_or_else(|| ClientError::Sql(SqlError::new(SqlState::ProgramLimitExceeded, "sequence name too long")))
    }

    /// Stops this client (all its clones): waits until pending writebacks are
    /// acknowledged (at most `ClientOptions::linger`), so that a short-lived process does
    /// not exit before replicas learn its outcomes. Later operations fail with `Closed`.
    pub async fn shutdown(&self) {
        let (done, rx) = oneshot::channel();
        if self.inner.commands.send(Command::Shutdown { done }).is_ok() {
            let _ = rx.await;
        }
    }

    /// Sends a command and waits for its answer, within the operation timeout.
    async fn call<T>(
        &self,
        op: &'static str,
        cmd: Command,
        rx: oneshot::Receiver<Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        self.inner.commands.send(cmd).map_err(|_| ClientError::Closed)?;
        let after = self.inner.options.op_timeout;
        match tokio::time::timeout(after, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ClientError::Closed),
            Err(_) => Err(ClientError::Timeout { op, after }),
        }
    }

    fn send(&self, cmd: Command) {
        // Nothing to do if the engine is gone: its state went with it.
        let _ = self.inner.commands.send(cmd);
    }
}

/// Most savepoints a transaction holds at once.
const MAX_SAVEPOINTS: usize = 1024;

/// One interactive transaction. Writes are buffered locally until `commit`; reads see
/// the transaction's own writes. Dropping an unfinished `Txn` aborts it.
pub struct Txn {
    client: Client,
    handle: TxnHandle,
    writes: BTreeMap<Key, Option<Value>>,
    done: bool,
    /// Savepoints, oldest first. A name may repeat; the latest one wins.
    savepoints: Vec<Savepoint>,
    /// While a savepoint exists: the earlier state of every key `put`/`delete` changed
    /// (None: it had no buffered write), oldest first. Undone backwards to a savepoint.
    undo: Vec<(Key, Option<Option<Value>>)>,
    /// A statement ended without an answer (timeout, shutdown): it may still buffer
    /// writes, so no savepoint can be rolled back to any more.
    uncertain: bool,
    /// currval of each sequence in the session this transaction belongs to.
    session_sequences: SessionSequences,
}

struct Savepoint {
    name: String,
    undo_len: usize,
}

fn no_savepoint(name: &str) -> ClientError {
    ClientError::Sql(SqlError::new(
        SqlState::InvalidSavepointSpecification,
        format!("savepoint \"{name}\" does not exist"),
    ))
}

impl Txn {
    /// The latest value of `key` visible at this transaction's timestamp (`None`: absent).
    pub async fn get(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>, ClientError> {
        let key = key.as_ref();
        self.check_active()?;
        if let Some(v) = self.writes.get(key) {
            return Ok(v.clone());
        }
        check_key(key)?;
        let (reply, rx) = oneshot::channel();
        self.client.call("get", Command::Get { txn: self.handle, key: key.to_vec(), reply }, rx).await
    }

    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl Into<Vec<u8>>) -> Result<(), ClientError> {
        let value = value.into();
        if value.len() > MAX_VALUE_BYTES {
            return Err(TxnError::ValueTooLarge.into());
        }
        self.write(key.as_ref(), Some(value))
    }

    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<(), ClientError> {
        self.write(key.as_ref(), None)
    }

    fn write(&mut self, key: &[u8], value: Option<Value>) -> Result<(), ClientError> {
        self.check_active()?;
        check_key(key)?;
        let before = self.writes.insert(key.to_vec(), value);
        if !self.savepoints.is_empty() {
            self.undo.push((key.to_vec(), before));
        }
        Ok(())
    }

    pub fn has_savepoints(&self) -> bool {
        !self.savepoints.is_empty()
    }

    /// SAVEPOINT `name`: a point `rollback_to_savepoint` can return to. Names may repeat.
    pub async fn savepoint(&mut self, name: &str) -> Result<(), ClientError> {
        self.check_active()?;
        if self.savepoints.len() >= MAX_SAVEPOINTS {
            return Err(ClientError::Sql(SqlError::new(
                SqlState::ProgramLimitExceeded,
                format!("a transaction holds at most {MAX_SAVEPOINTS} savepoints"),
            )));
        }
        self.coordinator_savepoint(SavepointOp::Push).await?;
        self.savepoints.push(Savepoint { name: name.to_string(), undo_len: self.undo.len() });
        Ok(())
    }

    /// RELEASE SAVEPOINT `name`: forgets the latest savepoint of that name and every later
    /// one; what was done since stays.
    pub async fn release_savepoint(&mut self, name: &str) -> Result<(), ClientError> {
        self.check_active()?;
        let at = self.find_savepoint(name)?;
        self.coordinator_savepoint(SavepointOp::Release { depth: at }).await?;
        self.savepoints.truncate(at);
        if self.savepoints.is_empty() {
            self.undo.clear();
        }
        Ok(())
    }

    /// ROLLBACK TO SAVEPOINT `name`: undoes the writes made since the latest savepoint of
    /// that name, key-value and SQL (rows and schema changes), and forgets the later
    /// savepoints; that one stays. Reads made since stay in the read set: validating more
    /// reads than needed is still serializable, and the application did see their results.
    pub async fn rollback_to_savepoint(&mut self, name: &str) -> Result<(), ClientError> {
        self.check_active()?;
        let at = self.find_savepoint(name)?;
        let Some(undo_len) = self.savepoints.get(at).map(|s| s.undo_len) else { return Err(no_savepoint(name)) };
        if self.uncertain {
            return Err(ClientError::Sql(SqlError::new(
                SqlState::FeatureNotSupported,
                "ROLLBACK TO SAVEPOINT after a statement that got no answer is not supported",
            )));
        }
        self.coordinator_savepoint(SavepointOp::RollbackTo { depth: at }).await?;
        for (key, before) in self.undo.drain(undo_len..).rev() {
            match before {
                Some(value) => self.writes.insert(key, value),
                None => self.writes.remove(&key),
            };
        }
        self.savepoints.truncate(at + 1);
        Ok(())
    }

    /// The coordinator keeps the copies of the SQL writes (it buffers them).
    async fn coordinator_savepoint(&mut self, op: SavepointOp) -> Result<(), ClientError> {
        let (reply, rx) = oneshot::channel();
        let result = self.client.call("savepoint", Command::Savepoint { txn: self.handle, op, reply }, rx).await;
        match result {
            Err(ClientError::Txn(TxnError::TooManyOps)) => Err(ClientError::Sql(SqlError::new(
                SqlState::ProgramLimitExceeded,
                format!("savepoints would hold more than {MAX_SAVEPOINT_WRITES} copied writes; release some or commit"),
            ))),
            other => other,
        }
    }

    /// Position of the latest savepoint named `name`.
    fn find_savepoint(&self, name: &str) -> Result<usize, ClientError> {
        self.savepoints.iter().rposition(|s| s.name == name).ok_or_else(|| no_savepoint(name))
    }

    /// Runs one SQL statement (SELECT / INSERT / UPDATE / DELETE / DDL) with `$n`
    /// parameters. Queries return rows; writes are buffered until `commit`, and later
    /// statements of this transaction see them. A failed statement (`ClientError::Sql`,
    /// with its SQLSTATE) leaves the transaction to be rolled back.
    pub async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<SqlOutput, ClientError> {
        // A statement naming a sequence whose values this client has run out of: take a
        // block from the sequence's counter (in a transaction of its own, so that writers
        // never conflict on it) and run the statement again, with larger blocks if one was
        // not enough (an INSERT ... SELECT of many rows).
        let mut want = SEQUENCE_BLOCK;
        // setval settings applied for this statement (PostgreSQL's setval is not
        // transactional either): it runs again with them, and replicas return them.
        let mut sets: Vec<(String, SequenceSet)> = Vec::new();
        for _ in 0..SEQUENCE_REFILLS {
            let e = match self.statement(sql, params, &sets).await {
                Err(ClientError::Sql(e)) => e,
                result => return result,
            };
            if e.state == SqlState::SequenceValuesNeeded {
                let schema = self.sequence_schema(&e.message).await?;
                self.client.refill_sequence(&schema, want).await?;
                want = (want * 4).min(MAX_SEQUENCE_BLOCK);
            } else if let Some((name, set)) = SequenceSet::requested(&e) {
                let schema = self.sequence_schema(&name).await?;
                self.client.apply_sequence_set(&schema, set).await?;
                sets.retain(|(n, _)| *n != name);
                sets.push((name, set));
            } else {
                return Err(ClientError::Sql(e));
            }
        }
        Err(ClientError::Sql(SqlError::new(
            SqlState::ProgramLimitExceeded,
            "a statement drew more sequence values (or set more sequences) than this client could take for it",
        )))
    }

    /// The schema of sequence `name` in the catalog this transaction reads.
    async fn sequence_schema(&mut self, name: &str) -> Result<Arc<SequenceSchema>, ClientError> {
        let catalog = self.catalog().await?;
        catalog.sequence(name).cloned().ok_or_else(|| {
            ClientError::Sql(SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
        })
    }

    async fn statement(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        sets: &[(String, SequenceSet)],
    ) -> Result<SqlOutput, ClientError> {
        self.check_active()?;
        let (reply, rx) = oneshot::channel();
        let cmd = Command::Sql {
            txn: self.handle,
            sql: sql.to_string(),
            params: params.to_vec(),
            currents: self.session_sequences.clone(),
            sets: sets.to_vec(),
            reply,
        };
        // Uncertain until the answer arrives: a caller may drop this future (a statement
        // timeout), and the statement then still runs.
        let was_uncertain = std::mem::replace(&mut self.uncertain, true);
        let result = self.client.call("sql", cmd, rx).await;
        match &result {
            Ok(_) | Err(ClientError::Sql(_)) => {}
            Err(_) => return result.map(|(out, _)| out),
        }
        self.uncertain = was_uncertain;
        let (out, currents) = result?;
        self.session_sequences = currents;
        Ok(out)
    }

    /// currval of each sequence in this transaction's session: the values given to
    /// [`Txn::set_session_sequences`] as its statements since have drawn on them.
    pub fn session_sequences(&self) -> &SessionSequences {
        &self.session_sequences
    }

    /// The session's currval of each sequence, for this transaction's statements (currval
    /// belongs to a session, which outlives its transactions).
    pub fn set_session_sequences(&mut self, currents: SessionSequences) {
        self.session_sequences = currents;
    }

    /// The SQL schema this transaction sees: the catalog key of shard 0 (which holds the
    /// whole schema), read exactly as the transaction's first SQL statement reads it, so
    /// it adds no conflict that statement would not add. Lets a front end (the PostgreSQL
    /// gateway) describe statements — parameter and result types — without running them.
    pub async fn catalog(&mut self) -> Result<Catalog, ClientError> {
        match self.get(catalog_key(ShardId(0))).await? {
            None => Ok(Catalog::new()),
            Some(bytes) => postcard::from_bytes::<CatalogWrite>(&bytes).map(|w| w.catalog).map_err(|_| {
                ClientError::Sql(SqlError::new(SqlState::ProtocolViolation, "the committed catalog cannot be decoded"))
            }),
        }
    }

    /// Buffers a schema change given as such, as a DDL statement would (the gateway's
    /// marks of rules whose check of older rows runs after their commit).
    pub async fn change_catalog(&mut self, change: pistou_sql::CatalogChange) -> Result<(), ClientError> {
        self.check_active()?;
        let (reply, rx) = oneshot::channel();
        let cmd = Command::CatalogChange { txn: self.handle, change, reply };
        let was_uncertain = std::mem::replace(&mut self.uncertain, true);
        let result = self.client.call("sql", cmd, rx).await;
        if matches!(result, Ok(_) | Err(ClientError::Sql(_))) {
            self.uncertain = was_uncertain;
        }
        result.map(|_| ())
    }

    /// Like [`Txn::query`] for statements that write: returns the affected row count.
    pub async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, ClientError> {
        Ok(match self.query(sql, params).await? {
            SqlOutput::Affected { count, .. } => count,
            SqlOutput::Rows { rows, .. } => rows.len() as u64,
            SqlOutput::Ddl { .. } => 0,
        })
    }

    /// Abandons the transaction (SQL's ROLLBACK); same as [`Txn::abort`].
    pub fn rollback(self) {
        self.abort();
    }

    /// Commits. `Err(Timeout)` means the outcome is unknown.
    pub async fn commit(mut self) -> Result<Outcome, ClientError> {
        self.check_active()?;
        self.done = true;
        let writes = std::mem::take(&mut self.writes).into_iter().collect();
        let (reply, rx) = oneshot::channel();
        self.client.call("commit", Command::Commit { txn: self.handle, writes, reply }, rx).await
    }

    /// Abandons the transaction; replicas forget its reads.
    pub fn abort(mut self) {
        self.finish_abort();
    }

    fn finish_abort(&mut self) {
        if !self.done {
            self.done = true;
            self.client.send(Command::Abort { txn: self.handle });
        }
    }

    fn check_active(&self) -> Result<(), ClientError> {
        if self.done {
            Err(ClientError::Finished)
        } else {
            Ok(())
        }
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        self.finish_abort();
    }
}

fn check_key(key: &[u8]) -> Result<(), ClientError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(TxnError::KeyTooLarge.into());
    }
    Ok(())
}
