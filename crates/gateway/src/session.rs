//! One client session: its transaction state (PostgreSQL's idle / in transaction /
//! failed), settings, and the statements it runs. Protocol-independent: `conn.rs` turns
//! the replies into wire messages.

use crate::command::{Command, CreateTableAs};
use crate::config::GatewayConfig;
use crate::errors::{self, failed_transaction, from_client, serialization_failure, PgError};
use crate::intercept::{self, LocalRows, SessionInfo};
use crate::params::RawParams;
use crate::pgtypes::{pg_type, OID_TEXT};
use crate::replay::Journal;
use crate::route::{Route, SessionFunction, SessionItem};
use crate::settings::Settings;
use crate::temp::{TempEffect, TempSchema};
use pistou_client::{Client, ClientError, Outcome, SessionSequences, SqlOutput, Txn, TxnError};
use pistou_sql::{Catalog, Engine, Row, SqlType, StatementKind, Value};
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;

mod existing_rows;

/// The savepoint a check before a schema change in a block runs under (`check_query`).
const CHECK_SAVEPOINT: &str = "pistou_schema_check";

/// A result column.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    /// None: not known statically; sent as text.
    pub ty: Option<SqlType>,
}

/// What a statement produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Rows { fields: Vec<Field>, rows: Vec<Row>, tag: String },
    Command { tag: String, notices: Vec<Notice> },
}

/// A NoticeResponse sent before a command's completion, as PostgreSQL sends one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
}

impl Notice {
    pub fn warning(code: &'static str, message: impl Into<String>) -> Notice {
        Notice { severity: "WARNING", code, message: message.into() }
    }

    /// An informational NOTICE (successful completion), e.g. an `IF EXISTS` that skips.
    pub fn info(message: impl Into<String>) -> Notice {
        Notice { severity: "NOTICE", code: "00000", message: message.into() }
    }
}

/// Parameter OIDs and result columns of a statement, without running it.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    pub params: Vec<u32>,
    pub fields: Option<Vec<Field>>,
}

/// PostgreSQL's transaction states, as ReadyForQuery reports them.
enum TxnState {
    Idle,
    /// In a transaction block; the Pistou transaction starts with its first statement.
    Open(Option<Txn>),
    /// A statement failed inside the block: everything but ROLLBACK / COMMIT / ROLLBACK TO
    /// is refused. The transaction is kept only if it has savepoints to roll back to.
    Failed(Option<Txn>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    InTransaction,
    Failed,
}

pub struct Session {
    client: Client,
    engine: Arc<Engine>,
    config: Arc<GatewayConfig>,
    txn: TxnState,
    pub settings: Settings,
    /// The settings when the transaction block began: a rolled-back block's SETs are undone.
    block_settings: Option<Settings>,
    pub user: String,
    pub database: String,
    pub pid: i32,
    /// currval of each sequence this session drew from (not transactional: a rolled-back
    /// transaction's draws count, as in PostgreSQL).
    session_sequences: SessionSequences,
    /// The block's statements, to run them again if the block aborts (`replay.rs`).
    journal: Journal,
    /// The session's temporary tables (`temp.rs`).
    pub temp: TempSchema,
}

fn outside_block(what: &str) -> PgError {
    PgError::new(errors::NO_ACTIVE_TRANSACTION, format!("{what} can only be used in transaction blocks"))
}

fn no_savepoint(name: &str) -> PgError {
    PgError::new(errors::INVALID_SAVEPOINT, format!("savepoint \"{name}\" does not exist"))
}

fn command_reply(tag: impl Into<String>) -> Reply {
    Reply::Command { tag: tag.into(), notices: Vec::new() }
}

impl Session {
    pub fn new(
        client: Client,
        engine: Arc<Engine>,
        config: Arc<GatewayConfig>,
        settings: Settings,
        user: String,
        database: String,
        pid: i32,
    ) -> Session {
        Session {
            engine,
            config,
            txn: TxnState::Idle,
            settings,
            block_settings: None,
            user,
            database,
            pid,
            session_sequences: SessionSequences::default(),
            journal: Journal::default(),
            temp: TempSchema::new(client.id().0),
            client,
        }
    }

    pub fn status(&self) -> Status {
        match self.txn {
            TxnState::Idle => Status::Idle,
            TxnState::Open(_) => Status::InTransaction,
            TxnState::Failed(_) => Status::Failed,
        }
    }

    /// Refuses anything but COMMIT / ROLLBACK / ROLLBACK TO in a failed transaction block.
    pub fn check_not_failed(&self, command: &Command) -> Result<(), PgError> {
        match (&self.txn, command) {
            (TxnState::Failed(_), c) if !matches!(c, Command::Commit | Command::Rollback | Command::RollbackTo(_)) => {
                Err(failed_transaction())
            }
            _ => Ok(()),
        }
    }

    /// Records an error (of a statement, or outside statement execution, e.g. a bad Bind):
    /// inside a block it fails the transaction, as in PostgreSQL. A transaction without
    /// savepoints can never recover, so it is aborted now (by dropping it).
    pub fn fail(&mut self) {
        if let TxnState::Open(txn) = &mut self.txn {
            self.txn = TxnState::Failed(txn.take().filter(Txn::has_savepoints));
        }
    }

    /// Runs one statement.
    pub async fn run(&mut self, sql: &str, command: &Command, params: &RawParams) -> Result<Reply, PgError> {
        self.check_not_failed(command)?;
        let result = self.dispatch(sql, command, params).await;
        if result.is_err() {
            self.fail();
        }
        result
    }

    async fn dispatch(&mut self, sql: &str, command: &Command, params: &RawParams) -> Result<Reply, PgError> {
        if self.read_only() {
            if let Some(what) = writes(sql, command) {
                return Err(crate::read_only::refused(&what));
            }
        }
        match command {
            Command::Begin { read_only } => Ok(match self.txn {
                TxnState::Idle => {
                    self.txn = TxnState::Open(None);
                    self.block_settings = Some(self.settings.clone());
                    self.journal = Journal::default();
                    self.temp.begin();
                    let read_only = read_only.unwrap_or_else(|| self.read_only());
                    self.settings.set_local("transaction_read_only", Some(on_off(read_only))).map_err(PgError::from)?;
                    command_reply("BEGIN")
                }
                _ => Reply::Command {
                    tag: "BEGIN".into(),
                    notices: vec![Notice::warning("25001", "there is already a transaction in progress")],
                },
            }),
            Command::Commit => self.commit().await,
            Command::Rollback => Ok(match std::mem::replace(&mut self.txn, TxnState::Idle) {
                TxnState::Idle => Reply::Command {
                    tag: "ROLLBACK".into(),
                    notices: vec![Notice::warning("25P01", "there is no transaction in progress")],
                },
                _ => {
                    self.end_block(false);
                    command_reply("ROLLBACK")
                }
            }),
            Command::Savepoint(name) => {
                if matches!(self.txn, TxnState::Idle) {
                    return Err(outside_block("SAVEPOINT"));
                }
                self.journal.forgo();
                self.open_txn().await?.savepoint(name).await.map_err(from_client)?;
                self.temp.savepoint(name);
                Ok(command_reply("SAVEPOINT"))
            }
            Command::Release(name) => match &mut self.txn {
                TxnState::Idle => Err(outside_block("RELEASE SAVEPOINT")),
                TxnState::Open(Some(txn)) => {
                    txn.release_savepoint(name).await.map_err(from_client)?;
                    self.temp.release(name);
                    Ok(command_reply("RELEASE"))
                }
                // SAVEPOINT begins the Pistou transaction: without one there is no savepoint.
                _ => Err(no_savepoint(name)),
            },
            Command::RollbackTo(name) => match &mut self.txn {
                TxnState::Idle => Err(outside_block("ROLLBACK TO SAVEPOINT")),
                TxnState::Open(Some(txn)) | TxnState::Failed(Some(txn)) => {
                    txn.rollback_to_savepoint(name).await.map_err(from_client)?;
                    self.temp.rollback_to(name);
                    // The savepoint stays: the block is usable again.
                    if let TxnState::Failed(txn) = &mut self.txn {
                        self.txn = TxnState::Open(txn.take());
                    }
                    Ok(command_reply("ROLLBACK"))
                }
                _ => Err(no_savepoint(name)),
            },
            Command::SetTransaction { read_only } => self.set_transaction_mode(*read_only),
            Command::Set { name, value: Some(value), .. } if name == "transaction_read_only" => {
                let read_only = crate::settings::boolean(name, value).map_err(PgError::from)?;
                self.set_transaction_mode(read_only)
            }
            Command::Set { name, value, local: true } => {
                if matches!(self.txn, TxnState::Idle) {
                    let notices = vec![Notice::warning("25P01", "SET LOCAL can only be used in transaction blocks")];
                    return Ok(Reply::Command { tag: "SET".into(), notices });
                }
                self.journal.forgo();
                self.settings.set_local(name, value.as_deref()).map_err(PgError::from)?;
                Ok(command_reply("SET"))
            }
            Command::Set { name, value, local: false } => {
                self.journal.forgo();
                self.settings.set(name, value.as_deref()).map_err(PgError::from)?;
                Ok(command_reply("SET"))
            }
            Command::SetNoop(tag) => Ok(command_reply(*tag)),
            Command::Reset(name) => {
                self.journal.forgo();
                match name {
                    Some(n) => self.settings.set(n, None).map_err(PgError::from)?,
                    None => self.settings.reset_all(),
                }
                Ok(command_reply("RESET"))
            }
            Command::Show(name) => Ok(rows_reply(self.show(name)?, "SHOW")),
            Command::Discard { all } => {
                if !matches!(self.txn, TxnState::Idle) {
                    return Err(match all {
                        true => PgError::new(
                            errors::ACTIVE_TRANSACTION,
                            "DISCARD ALL cannot run inside a transaction block",
                        ),
                        false => PgError::new(
                            errors::FEATURE_NOT_SUPPORTED,
                            "DISCARD TEMP inside a transaction block is not supported",
                        ),
                    });
                }
                self.drop_temp_tables().await?;
                if !all {
                    return Ok(command_reply("DISCARD TEMP"));
                }
                self.settings.reset_all();
                Ok(command_reply("DISCARD ALL"))
            }
            Command::Refused(e) => Err(e.clone()),
            // Run by the connection, which holds the prepared statements.
            Command::Prepare { .. } | Command::Execute { .. } | Command::Deallocate(_) => {
                Err(PgError::new(errors::INTERNAL, "prepared-statement command outside the connection"))
            }
            Command::Intercepted => {
                let sql = params.substitute(sql)?;
                let local = self.intercepted(&sql)?;
                Ok(rows_reply(local, "SELECT"))
            }
            Command::Sql => {
                let adds_rule =
                    ["alter table", "create index", "create unique index"].iter().any(|w| starts_with_words(sql, w));
                if adds_rule {
                    return self.add_rule(sql, params).await;
                }
                self.work(Work::Statement(sql, params)).await
            }
            Command::Truncate(tables) => self.work(Work::Truncate(tables)).await,
            Command::Maintenance { tag, tables } => self.maintenance(tag, tables).await,
            Command::AddPrimaryKey { .. } => self.add_rule(sql, params).await,
            // Run by the connection, which owns the COPY sub-protocol.
            Command::Copy(_) => Err(PgError::new(errors::INTERNAL, "COPY outside the connection")),
            Command::DropTables(drops) => self.work(Work::DropTables(drops)).await,
            Command::CreateTableAs(ctas) => self.work(Work::CreateTableAs(ctas, params)).await,
        }
    }

    /// Whether the statement about to run belongs to a read-only transaction: the block's
    /// mode, or outside a block `default_transaction_read_only`.
    pub fn read_only(&self) -> bool {
        self.settings.get("transaction_read_only").is_ok_and(|v| v == "on")
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE`, as PostgreSQL: only in a block, and a
    /// read-only block becomes read-write only before its first query.
    fn set_transaction_mode(&mut self, read_only: bool) -> Result<Reply, PgError> {
        if matches!(self.txn, TxnState::Idle) {
            let notices = vec![Notice::warning("25P01", "SET TRANSACTION can only be used in transaction blocks")];
            return Ok(Reply::Command { tag: "SET".into(), notices });
        }
        if !read_only && self.read_only() && matches!(self.txn, TxnState::Open(Some(_)) | TxnState::Failed(_)) {
            return Err(PgError::new(
                errors::ACTIVE_TRANSACTION,
                "transaction read-write mode must be set before any query",
            ));
        }
        self.journal.forgo();
        self.settings.set_local("transaction_read_only", Some(on_off(read_only))).map_err(PgError::from)?;
        Ok(command_reply("SET"))
    }

    /// A schema change that may add a rule the existing rows must satisfy, checked first
    /// (`existing_rows.rs`). In a block, the check runs in the block's transaction. Outside
    /// one, the check and the change run in one transaction of their own, so a row written
    /// concurrently either is seen by the check or conflicts with it (retried on a
    /// serialization failure, the check included); a table too large for one transaction's
    /// reads gets the change first and the check after it ([`Session::add_rule_checked_after`]).
    async fn add_rule(&mut self, sql: &str, params: &RawParams) -> Result<Reply, PgError> {
        match self.txn {
            TxnState::Failed(_) => return self.work(Work::Statement(sql, params)).await,
            TxnState::Open(_) => {
                self.check_existing_rows(sql).await?;
                return self.work(Work::Statement(sql, params)).await;
            }
            TxnState::Idle => {}
        }
        let mut attempt = 0;
        loop {
            self.txn = TxnState::Open(None);
            // A replay would run the change without its check.
            self.journal.forgo();
            let limit = self.config.existing_rows_check_limit;
            let Ok(checked) = tokio::time::timeout(limit, self.check_existing_rows(sql)).await else {
                self.txn = TxnState::Idle;
                self.end_block(false);
                return Err(PgError::new(
                    errors::PROGRAM_LIMIT,
                    format!(
                        "checking the existing rows took longer than {} s; the schema change was not made",
                        limit.as_secs()
                    ),
                ));
            };
            let result = match checked {
                Ok(()) => self.work(Work::Statement(sql, params)).await,
                Err(e) if e.code == errors::PROGRAM_LIMIT => {
                    self.txn = TxnState::Idle;
                    self.end_block(false);
                    return self.add_rule_checked_after(sql, params).await;
                }
                Err(e) => Err(e),
            };
            let reply = match result {
                Ok(reply) => reply,
                Err(e) => {
                    self.txn = TxnState::Idle;
                    self.end_block(false);
                    return Err(e);
                }
            };
            match self.commit().await {
                Ok(_) => return Ok(reply),
                Err(e) if e.is_serialization_failure() && attempt < self.config.autocommit_retries => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs `work` in the block's transaction, or in its own (autocommit). In a block, a
    /// serialization failure replays the block's earlier statements in a new transaction and
    /// runs `work` there (`replay.rs`).
    async fn work(&mut self, work: Work<'_>) -> Result<Reply, PgError> {
        match self.txn {
            TxnState::Open(_) => {
                let (engine, limit) = (self.engine.clone(), self.settings.statement_timeout());
                let txn = self.open_txn().await?;
                let reply = within(limit, work.run(&engine, txn)).await;
                let currents = txn.session_sequences().clone();
                self.session_sequences = currents;
                let reply = match reply {
                    Err(e) if e.is_serialization_failure() && self.journal.replayable() => {
                        self.txn = TxnState::Open(None); // dropping the transaction aborts it
                        match self.replay(After::Statement(work)).await? {
                            Some((txn, reply)) => {
                                self.txn = TxnState::Open(txn);
                                reply.ok_or_else(|| PgError::new(errors::INTERNAL, "replay without a reply"))
                            }
                            None => Err(e),
                        }
                    }
                    other => other,
                };
                if let Ok(r) = &reply {
                    self.journal.record(&work, r);
                }
                reply
            }
            _ => self.autocommit(work).await,
        }
    }

    /// The block's COPY commits its rows on their own: the block is not replayed.
    pub fn forgo_replay(&mut self) {
        self.journal.forgo();
    }

    /// Runs the block's recorded statements again in a new transaction, then `after`,
    /// retrying with backoff while they meet serialization failures. `Ok(None)`: the block
    /// cannot be replayed (a statement shows something else now, fails otherwise, or the
    /// retries ran out), so the caller reports its original error. For a statement, returns
    /// the new transaction and the statement's reply.
    async fn replay(&mut self, after: After<'_>) -> Result<Option<(Option<Txn>, Option<Reply>)>, PgError> {
        let (engine, limit) = (self.engine.clone(), self.settings.statement_timeout());
        let mut backoff = Backoff::new(self.config.max_retry_backoff);
        'attempt: for _ in 0..self.config.autocommit_retries {
            backoff.wait().await;
            let mut txn = self.client.begin().await.map_err(from_client)?;
            txn.set_session_sequences(self.session_sequences.clone());
            for entry in self.journal.entries() {
                match within(limit, entry.work.work().run(&engine, &mut txn)).await {
                    Ok(reply) if crate::replay::digest(&reply) == entry.shown => {}
                    Err(e) if e.is_serialization_failure() => continue 'attempt,
                    _ => return Ok(None),
                }
            }
            self.session_sequences = txn.session_sequences().clone();
            match after {
                After::Statement(work) => match within(limit, work.run(&engine, &mut txn)).await {
                    Ok(reply) => {
                        self.session_sequences = txn.session_sequences().clone();
                        return Ok(Some((Some(txn), Some(reply))));
                    }
                    Err(e) if e.is_serialization_failure() => continue,
                    Err(_) => return Ok(None),
                },
                After::Commit => match counted(&self.config, txn.commit().await) {
                    Ok(Outcome::Committed { .. }) => return Ok(Some((None, None))),
                    Ok(Outcome::Aborted) | Err(ClientError::Txn(TxnError::TooOld)) => continue,
                    // An unknown outcome (a commit timeout) must be reported as such.
                    Err(e) => return Err(from_client(e)),
                },
            }
        }
        Ok(None)
    }

    /// VACUUM / ANALYZE: nothing to do once the tables are known (`Command::Maintenance`).
    async fn maintenance(&mut self, tag: &'static str, tables: &[String]) -> Result<Reply, PgError> {
        if tag == "VACUUM" && !matches!(self.txn, TxnState::Idle) {
            return Err(PgError::new(errors::ACTIVE_TRANSACTION, "VACUUM cannot run inside a transaction block"));
        }
        if !tables.is_empty() {
            let catalog = self.catalog().await?;
            if let Some(missing) = tables.iter().find(|t| catalog.table(t).is_none()) {
                return Err(PgError::new("42P01", format!("relation \"{missing}\" does not exist")));
            }
        }
        Ok(command_reply(tag))
    }

    /// Runs a read-only check before a schema change, giving its rows (`existing_rows.rs`).
    /// Inside a block it runs in the block's transaction, under a savepoint that its failure
    /// rolls back to: it sees the block's own writes, and its reads commit with the schema
    /// change. Outside a block it is a transaction of its own.
    async fn check_query(&mut self, query: &str) -> Result<Vec<Row>, PgError> {
        let none = RawParams::default();
        let result = if matches!(self.txn, TxnState::Open(_)) {
            let engine = self.engine.clone();
            let txn = self.open_txn().await?;
            txn.savepoint(CHECK_SAVEPOINT).await.map_err(from_client)?;
            let result = execute_in(&engine, txn, query, &none).await;
            if result.is_err() {
                txn.rollback_to_savepoint(CHECK_SAVEPOINT).await.map_err(from_client)?;
            }
            txn.release_savepoint(CHECK_SAVEPOINT).await.map_err(from_client)?;
            result
        } else {
            self.autocommit(Work::Statement(query, &none)).await
        };
        match result? {
            Reply::Rows { rows, .. } => Ok(rows),
            Reply::Command { .. } => Err(PgError::new(errors::INTERNAL, "a check returned no rows")),
        }
    }

    /// Starts one batch of COPY FROM rows: an INSERT of `values` in its own transaction
    /// (retried on serialization failure), whether or not a block is open, as a task of its
    /// own so that the next batches can start meanwhile. [`Session::copy_batch_done`] takes
    /// its outcome.
    pub fn copy_batch(&self, sql: String, values: Vec<Value>) -> CopyBatchJob {
        let autocommit = self.autocommit_context();
        CopyBatchJob(tokio::spawn(async move { autocommit.run(Work::Values(&sql, &values)).await }))
    }

    /// Waits for a batch started by [`Session::copy_batch`]; returns the rows it inserted.
    pub async fn copy_batch_done(&mut self, job: CopyBatchJob) -> Result<u64, PgError> {
        let (reply, currents) =
            job.0.await.map_err(|e| PgError::new(errors::INTERNAL, format!("COPY batch task failed: {e}")))?;
        // The caller awaits batches in the order they started, so the last one's draws
        // end up as the session's currval, as after a sequential COPY.
        self.session_sequences.absorb(currents);
        match reply? {
            Reply::Command { tag, .. } => Ok(tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)),
            Reply::Rows { .. } => Err(PgError::new(errors::INTERNAL, "COPY batch returned rows")),
        }
    }

    async fn commit(&mut self) -> Result<Reply, PgError> {
        let result = match std::mem::replace(&mut self.txn, TxnState::Idle) {
            TxnState::Idle => {
                return Ok(Reply::Command {
                    tag: "COMMIT".into(),
                    notices: vec![Notice::warning("25P01", "there is no transaction in progress")],
                })
            }
            // PostgreSQL answers COMMIT of a failed block with ROLLBACK.
            TxnState::Failed(_) => Ok(command_reply("ROLLBACK")),
            TxnState::Open(None) => Ok(command_reply("COMMIT")),
            TxnState::Open(Some(txn)) => {
                let aborted = match counted(&self.config, txn.commit().await) {
                    Ok(Outcome::Committed { .. }) => None,
                    Ok(Outcome::Aborted) => Some(serialization_failure()),
                    Err(e @ ClientError::Txn(TxnError::TooOld)) => Some(from_client(e)),
                    Err(e) => return self.ended(Err(from_client(e))),
                };
                match aborted {
                    None => Ok(command_reply("COMMIT")),
                    Some(error) if self.journal.replayable() => match self.replay(After::Commit).await {
                        Ok(Some(_)) => Ok(command_reply("COMMIT")),
                        Ok(None) => Err(error),
                        Err(e) => Err(e),
                    },
                    Some(error) => Err(error),
                }
            }
        };
        self.ended(result)
    }

    /// Ends the block with COMMIT's result.
    fn ended(&mut self, result: Result<Reply, PgError>) -> Result<Reply, PgError> {
        let committed = matches!(&result, Ok(Reply::Command { tag, .. }) if tag == "COMMIT");
        self.end_block(committed);
        result
    }

    /// The block ended: SET LOCAL values go, and so do all its SETs if it did not commit
    /// (as in PostgreSQL; an unknown commit outcome counts as not committed).
    fn end_block(&mut self, committed: bool) {
        self.journal = Journal::default();
        self.temp.ended(committed);
        match self.block_settings.take() {
            Some(before) if !committed => self.settings = before,
            _ => self.settings.end_transaction(),
        }
    }

    /// The block's Pistou transaction, begun by its first statement.
    async fn open_txn(&mut self) -> Result<&mut Txn, PgError> {
        if let TxnState::Open(slot @ None) = &mut self.txn {
            let mut txn = self.client.begin().await.map_err(from_client)?;
            txn.set_session_sequences(self.session_sequences.clone());
            *slot = Some(txn);
        }
        match &mut self.txn {
            TxnState::Open(Some(txn)) => Ok(txn),
            _ => Err(PgError::new(errors::INTERNAL, "no open transaction")),
        }
    }

    /// A statement outside a block: its own transaction, retried on serialization failure.
    async fn autocommit(&mut self, work: Work<'_>) -> Result<Reply, PgError> {
        let autocommit = self.autocommit_context();
        let (reply, currents) = autocommit.run(work).await;
        self.session_sequences = currents;
        reply
    }

    fn autocommit_context(&self) -> Autocommit {
        Autocommit {
            client: self.client.clone(),
            engine: self.engine.clone(),
            config: self.config.clone(),
            statement_timeout: self.settings.statement_timeout(),
            session_sequences: self.session_sequences.clone(),
        }
    }

    /// Plans `sql` against `catalog` (for COPY's column list).
    pub fn prepare(&self, catalog: &Catalog, sql: &str) -> Result<Arc<pistou_sql::Prepared>, PgError> {
        self.engine.prepare(catalog, sql).map_err(PgError::from)
    }

    /// The schema, read in the open transaction or in a short read-only one.
    pub async fn catalog(&mut self) -> Result<Catalog, PgError> {
        if matches!(self.txn, TxnState::Open(_)) {
            let txn = self.open_txn().await?;
            return txn.catalog().await.map_err(from_client);
        }
        let mut txn = self.client.begin().await.map_err(from_client)?;
        let catalog = txn.catalog().await.map_err(from_client);
        txn.rollback();
        catalog
    }

    /// After a statement succeeded: records what it did to temporary tables, and outside
    /// a block drops those created `ON COMMIT DROP` by a transaction that has committed and
    /// empties the `ON COMMIT DELETE ROWS` ones it wrote. Both run before the statement's
    /// reply, in transactions of their own: no other session uses the tables meanwhile.
    pub async fn temp_applied(&mut self, effect: TempEffect) -> Result<(), PgError> {
        let indexes_changed = effect.indexes_changed();
        self.temp.applied(effect);
        if indexes_changed {
            let catalog = self.catalog().await?;
            let primary_keys: Vec<String> =
                catalog.tables().filter(|t| t.row_id_column().is_none()).map(|t| format!("{}_pkey", t.name)).collect();
            let indexes = catalog.tables().flat_map(|t| t.indexes.iter().map(|i| i.name.as_str()));
            self.temp.learn_indexes(indexes.chain(primary_keys.iter().map(String::as_str)));
        }
        if !matches!(self.txn, TxnState::Idle) {
            return Ok(());
        }
        for table in self.temp.take_commit_drops() {
            self.drop_table(&table).await?;
        }
        for table in self.temp.take_rows_to_delete() {
            let sql = format!("DELETE FROM {}", pistou_sql::system::quote_ident(&table));
            self.autocommit(Work::Statement(&sql, &RawParams::default())).await?;
        }
        Ok(())
    }

    async fn drop_table(&mut self, table: &str) -> Result<(), PgError> {
        let sql = format!("DROP TABLE IF EXISTS {}", pistou_sql::system::quote_ident(table));
        self.autocommit(Work::Statement(&sql, &RawParams::default())).await.map(|_| ())
    }

    /// The session ends: its block is abandoned and its temporary tables are dropped.
    pub async fn close(&mut self) {
        self.txn = TxnState::Idle;
        if let Err(e) = self.drop_temp_tables().await {
            tracing::warn!("dropping temporary tables at session end: {}", e.message);
        }
    }

    /// Drops every view and table of the session's namespace in the catalog (including any
    /// whose creation's outcome was unknown), outside a block.
    async fn drop_temp_tables(&mut self) -> Result<(), PgError> {
        if !self.temp.ever_used() {
            return Ok(());
        }
        let catalog = self.catalog().await?;
        for sql in crate::temp::drop_statements(&catalog, |name| self.temp.is_own_relation(name)) {
            self.autocommit(Work::Statement(&sql, &RawParams::default())).await?;
        }
        self.temp.forget_all();
        Ok(())
    }

    fn info(&self) -> SessionInfo<'_> {
        SessionInfo { user: &self.user, database: &self.database, pid: self.pid, settings: &self.settings }
    }

    fn intercepted(&mut self, sql: &str) -> Result<LocalRows, PgError> {
        // Routed again: parameters are bound by now.
        let route = crate::route::route(sql);
        match &route {
            Route::Session(items) => self.session_functions(&route, items),
            Route::Engine => Err(PgError::new(errors::INTERNAL, "statement is not for the gateway")),
        }
    }

    /// Session functions, applying `set_config` calls: all or none (a bad value fails the
    /// statement). A local change is a `SET LOCAL`; outside a block it ends with the
    /// statement's implicit transaction.
    fn session_functions(&mut self, route: &Route, items: &[SessionItem]) -> Result<LocalRows, PgError> {
        let in_block = !matches!(self.txn, TxnState::Idle);
        let (mut shown, mut kept) = (self.settings.clone(), self.settings.clone());
        for item in items {
            if let SessionFunction::SetConfig(Some(change)) = &item.function {
                let (name, value) = (crate::command::canonical_name(&change.name), change.value.as_deref());
                match (change.local, in_block) {
                    (false, _) => {
                        shown.set(&name, value)?;
                        kept.set(&name, value)?;
                    }
                    (true, true) => {
                        shown.set_local(&name, value)?;
                        kept.set_local(&name, value)?;
                    }
                    // Its implicit transaction ends with the statement.
                    (true, false) => shown.set(&name, value)?,
                }
            }
        }
        let info = SessionInfo { settings: &shown, ..self.info() };
        let rows = intercept::answer(route, &info)?;
        self.settings = kept;
        Ok(rows)
    }

    fn show(&self, name: &str) -> Result<LocalRows, PgError> {
        if name == "all" {
            let rows = self
                .settings
                .all()
                .into_iter()
                .map(|(n, v, d)| vec![Value::Text(n), Value::Text(v), Value::Text(d)])
                .collect();
            let columns =
                ["name", "setting", "description"].iter().map(|c| (c.to_string(), Some(SqlType::Text))).collect();
            return Ok(LocalRows { columns, rows });
        }
        let value = self.settings.get(name).map_err(PgError::from)?;
        Ok(LocalRows { columns: vec![(name.to_string(), Some(SqlType::Text))], rows: vec![vec![Value::Text(value)]] })
    }

    /// Parameter types and result columns of `sql`, without running it.
    pub async fn describe(&mut self, sql: &str, command: &Command, declared: &[u32]) -> Result<Description, PgError> {
        self.check_not_failed(command)?;
        let result = self.describe_inner(sql, command, declared).await;
        if result.is_err() {
            self.fail();
        }
        result
    }

    async fn describe_inner(&mut self, sql: &str, command: &Command, declared: &[u32]) -> Result<Description, PgError> {
        let fields_of = |local: LocalRows| local.columns.into_iter().map(|(name, ty)| Field { name, ty }).collect();
        let fields = match command {
            Command::Show(name) => Some(fields_of(self.show(name)?)),
            // Session functions are not run to be described: set_config would take effect.
            Command::Intercepted => match crate::route::route(sql) {
                Route::Session(items) => {
                    Some(intercept::session_columns(&items).into_iter().map(|(name, ty)| Field { name, ty }).collect())
                }
                Route::Engine => return Err(PgError::new(errors::INTERNAL, "statement is not for the gateway")),
            },
            Command::Sql => {
                let catalog = self.catalog().await?;
                let prepared = self.engine.prepare(&catalog, sql).map_err(PgError::from)?;
                let params = prepared
                    .param_types()
                    .iter()
                    .enumerate()
                    .map(|(i, ty)| match declared.get(i) {
                        Some(&oid) if oid != 0 => oid,
                        _ => ty.map_or(OID_TEXT, |t| pg_type(Some(t)).oid),
                    })
                    .collect();
                return Ok(Description { params, fields: result_fields(&prepared) });
            }
            _ => None,
        };
        Ok(Description { params: declared.to_vec(), fields })
    }
}

/// Result columns of a prepared statement: a query's, or RETURNING's.
fn result_fields(prepared: &pistou_sql::Prepared) -> Option<Vec<Field>> {
    if let (Some(names), Some(types)) = (prepared.columns(), prepared.column_types()) {
        return Some(names.iter().zip(types).map(|(n, t)| Field { name: n.clone(), ty: *t }).collect());
    }
    let names = prepared.returning_columns()?;
    let types = prepared.returning_types().unwrap_or_default();
    Some(names.into_iter().enumerate().map(|(i, name)| Field { name, ty: types.get(i).copied().flatten() }).collect())
}

/// A COPY FROM batch running in its own task ([`Session::copy_batch`]).
pub struct CopyBatchJob(tokio::task::JoinHandle<(Result<Reply, PgError>, SessionSequences)>);

/// What a statement outside a block needs to run in a transaction of its own, detached
/// from the session (COPY's batches run several at a time).
struct Autocommit {
    client: Client,
    engine: Arc<Engine>,
    config: Arc<GatewayConfig>,
    statement_timeout: Option<Duration>,
    session_sequences: SessionSequences,
}

impl Autocommit {
    /// Runs `work` in its own transaction, retried with jittered backoff on serialization
    /// failure. Returns the reply and the sequences' currval after it.
    async fn run(mut self, work: Work<'_>) -> (Result<Reply, PgError>, SessionSequences) {
        let mut backoff = Backoff::new(self.config.max_retry_backoff);
        let mut attempt = 0u32;
        loop {
            let mut txn = match self.client.begin().await {
                Ok(txn) => txn,
                Err(e) => return (Err(from_client(e)), self.session_sequences),
            };
            txn.set_session_sequences(self.session_sequences.clone());
            let outcome = within(self.statement_timeout, work.run(&self.engine, &mut txn)).await;
            self.session_sequences = txn.session_sequences().clone();
            let error = match outcome {
                Ok(reply) => match counted(&self.config, txn.commit().await) {
                    Ok(Outcome::Committed { .. }) => return (Ok(reply), self.session_sequences),
                    Ok(Outcome::Aborted) => serialization_failure(),
                    Err(e) => return (Err(from_client(e)), self.session_sequences),
                },
                Err(e) => e, // dropping `txn` aborts it
            };
            if !error.is_serialization_failure() || attempt >= self.config.autocommit_retries {
                return (Err(error), self.session_sequences);
            }
            attempt += 1;
            backoff.wait().await;
        }
    }
}

/// Waits before a retry: up to 2 ms the first time, doubling up to a limit, with full jitter
/// so that conflicting clients do not retry in lockstep.
struct Backoff {
    next: Duration,
    limit: Duration,
}

impl Backoff {
    fn new(limit: Duration) -> Self {
        Backoff { next: Duration::from_millis(2), limit }
    }

    async fn wait(&mut self) {
        let wait = rand::thread_rng().gen_range(0..=self.next.as_micros() as u64);
        tokio::time::sleep(Duration::from_micros(wait)).await;
        self.next = (self.next * 2).min(self.limit);
    }
}

/// What a replayed block runs after its recorded statements.
#[derive(Clone, Copy)]
enum After<'a> {
    /// The statement whose serialization failure started the replay.
    Statement(Work<'a>),
    Commit,
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// What `command` would write, named as PostgreSQL names it when a read-only transaction
/// refuses it (None: it only reads). COPY is judged by the connection, which runs it.
fn writes(sql: &str, command: &Command) -> Option<String> {
    match command {
        Command::Sql => crate::read_only::written_by(sql),
        Command::Truncate(_) => Some("TRUNCATE TABLE".into()),
        Command::DropTables(_) => Some("DROP TABLE".into()),
        Command::AddPrimaryKey { .. } => Some("ALTER TABLE".into()),
        Command::CreateTableAs(_) if starts_with_words(sql, "select") => Some("SELECT INTO".into()),
        Command::CreateTableAs(_) => Some("CREATE TABLE AS".into()),
        _ => None,
    }
}

/// What a statement runs in its transaction.
#[derive(Clone, Copy)]
pub(crate) enum Work<'a> {
    Statement(&'a str, &'a RawParams),
    /// TRUNCATE: every row of these tables is deleted, as `DELETE FROM` would (so the
    /// work is bounded by the transaction's row limit, 54000 beyond it).
    Truncate(&'a [String]),
    /// A statement with its parameters already decoded (COPY's batches).
    Values(&'a str, &'a [Value]),
    /// `DROP TABLE a, b, …` as one DROP statement per table.
    DropTables(&'a [String]),
    /// CREATE TABLE … AS / SELECT … INTO ([`create_table_as`]).
    CreateTableAs(&'a CreateTableAs, &'a RawParams),
    /// A schema change adding rules, then the mark of those rules as awaiting the check of
    /// the older rows (`session/existing_rows.rs`).
    AddUnvalidated(&'a str, &'a RawParams, &'a pistou_sql::CatalogChange),
    /// Schema changes given as such: a mark of rules as valid, or the undoing of a change
    /// whose check failed (`session/existing_rows.rs`).
    ChangeCatalog(&'a [pistou_sql::CatalogChange]),
}

impl Work<'_> {
    async fn run(self, engine: &Engine, txn: &mut Txn) -> Result<Reply, PgError> {
        match self {
            Work::Statement(sql, params) => execute_in(engine, txn, sql, params).await,
            Work::Values(sql, values) => Ok(reply_of(txn.query(sql, values).await.map_err(from_client)?, sql)),
            Work::Truncate(tables) => {
                for table in tables {
                    execute_in(engine, txn, &format!("DELETE FROM {table}"), &RawParams::default()).await?;
                }
                Ok(command_reply("TRUNCATE TABLE"))
            }
            Work::DropTables(drops) => {
                let mut notices = Vec::new();
                for drop in drops {
                    if let Reply::Command { notices: more, .. } =
                        execute_in(engine, txn, drop, &RawParams::default()).await?
                    {
                        notices.extend(more);
                    }
                }
                Ok(Reply::Command { tag: "DROP TABLE".into(), notices })
            }
            Work::CreateTableAs(ctas, params) => create_table_as(engine, txn, ctas, params).await,
            Work::AddUnvalidated(sql, params, mark) => {
                let reply = execute_in(engine, txn, sql, params).await?;
                txn.change_catalog(mark.clone()).await.map_err(from_client)?;
                Ok(reply)
            }
            Work::ChangeCatalog(changes) => {
                for change in changes {
                    txn.change_catalog(change.clone()).await.map_err(from_client)?;
                }
                Ok(command_reply("ALTER TABLE"))
            }
        }
    }
}

/// Parameters in one INSERT of CREATE TABLE AS's rows.
const CTAS_BATCH_VALUES: usize = 4096;

/// CREATE TABLE … AS / SELECT … INTO, in one transaction: the query runs first; its result
/// columns give the new table's names (or the given ones) and types (an unknown-typed column
/// is text, as in PostgreSQL), then its rows go into the new table, which the transaction
/// created, so they are written at commit ("Schema changes in transactions", docs/sql.md).
/// The table has no primary key, as in PostgreSQL. A result type that is not a column type
/// here (arrays, `character` without a length) fails with 0A000.
async fn create_table_as(
    engine: &Engine,
    txn: &mut Txn,
    ctas: &CreateTableAs,
    params: &RawParams,
) -> Result<Reply, PgError> {
    let Reply::Rows { fields, rows, .. } = execute_in(engine, txn, &ctas.query, params).await? else {
        return Err(PgError::new(errors::INTERNAL, "the query of CREATE TABLE AS returned no rows"));
    };
    if ctas.columns.len() > fields.len() {
        return Err(PgError::new(errors::SYNTAX_ERROR, "too many column names were specified"));
    }
    // The result's type modifiers (varchar(n), char(n), numeric(p,s)), from its plan.
    let catalog = txn.catalog().await.map_err(from_client)?;
    let prepared = engine.prepare(&catalog, &ctas.query).map_err(PgError::from)?;
    let limits = prepared.column_limits().unwrap_or_default();
    let mut definitions = Vec::with_capacity(fields.len());
    let mut names = std::collections::BTreeSet::new();
    for (i, field) in fields.iter().enumerate() {
        let name = ctas.columns.get(i).unwrap_or(&field.name);
        if !names.insert(name.as_str()) {
            return Err(PgError::new("42701", format!("column \"{name}\" specified more than once")));
        }
        let limits = limits.get(i).cloned().unwrap_or_default();
        let ty = match (field.ty.unwrap_or(SqlType::Text), limits.max_len, limits.numeric) {
            (SqlType::Varchar, Some(n), _) => format!("character varying({n})"),
            (SqlType::Char, Some(n), _) => format!("character({n})"),
            (SqlType::Numeric, _, Some((p, s))) => format!("numeric({p},{s})"),
            (SqlType::Char | SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector, ..) => {
                let ty = field.ty.map_or("unknown", |t| t.pg_name());
                return Err(PgError::new(
                    errors::FEATURE_NOT_SUPPORTED,
                    format!("CREATE TABLE AS of a {ty} column (\"{name}\") is not supported; cast it to text"),
                ));
            }
            (ty, ..) => ty.pg_name().to_string(),
        };
        definitions.push(format!("{} {ty}", pistou_sql::system::quote_ident(name)));
    }
    let create = format!(
        "CREATE TABLE {}{} ({})",
        if ctas.if_not_exists { "IF NOT EXISTS " } else { "" },
        ctas.table,
        definitions.join(", ")
    );
    if let Reply::Command { notices, .. } = execute_in(engine, txn, &create, &RawParams::default()).await? {
        if !notices.is_empty() {
            // IF NOT EXISTS found the table: nothing is inserted.
            return Ok(Reply::Command { tag: "CREATE TABLE AS".into(), notices });
        }
    }
    if !ctas.with_data {
        return Ok(command_reply("CREATE TABLE AS"));
    }
    let per_row = fields.len().max(1);
    for batch in rows.chunks((CTAS_BATCH_VALUES / per_row).max(1)) {
        let tuples: Vec<String> = (0..batch.len())
            .map(|r| {
                let slots: Vec<String> = (1..=per_row).map(|c| format!("${}", r * per_row + c)).collect();
                format!("({})", slots.join(", "))
            })
            .collect();
        let insert = format!("INSERT INTO {} VALUES {}", ctas.table, tuples.join(", "));
        let values: Vec<Value> = batch.iter().flatten().cloned().collect();
        txn.query(&insert, &values).await.map_err(from_client)?;
    }
    Ok(command_reply(format!("SELECT {}", rows.len())))
}

/// Runs a statement's execution within `statement_timeout`. A commit is never cut short:
/// its outcome would be unknown.
async fn within(
    limit: Option<Duration>,
    run: impl std::future::Future<Output = Result<Reply, PgError>>,
) -> Result<Reply, PgError> {
    let Some(limit) = limit else { return run.await };
    tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| Err(PgError::new(errors::QUERY_CANCELED, "canceling statement due to statement timeout")))
}

fn rows_reply(local: LocalRows, verb: &str) -> Reply {
    let tag = if verb == "SHOW" { "SHOW".to_string() } else { format!("{verb} {}", local.rows.len()) };
    Reply::Rows {
        fields: local.columns.into_iter().map(|(name, ty)| Field { name, ty }).collect(),
        rows: local.rows,
        tag,
    }
}

/// Runs one statement in `txn`: parameters are decoded with the types the statement gives
/// them (which needs the catalog, read as the statement itself would read it).
async fn execute_in(engine: &Engine, txn: &mut Txn, sql: &str, params: &RawParams) -> Result<Reply, PgError> {
    let values = if params.is_empty() {
        Vec::new()
    } else {
        let catalog = txn.catalog().await.map_err(from_client)?;
        let prepared = engine.prepare(&catalog, sql).map_err(PgError::from)?;
        if let StatementKind::Transaction(_) = prepared.kind() {
            return Err(PgError::new(errors::PROTOCOL_VIOLATION, "transaction control statements take no parameters"));
        }
        params.decode(prepared.param_types())?
    };
    let output = txn.query(sql, &values).await.map_err(from_client)?;
    Ok(reply_of(output, sql))
}

fn reply_of(output: SqlOutput, sql: &str) -> Reply {
    match output {
        SqlOutput::Rows { columns, types, rows } => {
            let fields = columns
                .into_iter()
                .enumerate()
                .map(|(i, name)| Field { name, ty: types.get(i).copied().flatten().or_else(|| uniform_type(&rows, i)) })
                .collect();
            let tag = format!("SELECT {}", rows.len());
            Reply::Rows { fields, rows, tag }
        }
        SqlOutput::Affected { command, count, returning, returning_types } => {
            let tag = if command == "INSERT" { format!("INSERT 0 {count}") } else { format!("{command} {count}") };
            match returning {
                Some((names, rows)) => {
                    let fields = names
                        .into_iter()
                        .enumerate()
                        .map(|(i, name)| Field {
                            name,
                            ty: returning_types.get(i).copied().flatten().or_else(|| uniform_type(&rows, i)),
                        })
                        .collect();
                    Reply::Rows { fields, rows, tag }
                }
                None => command_reply(tag),
            }
        }
        SqlOutput::Ddl { command, notice } => {
            let tag = if command == "DDL" { ddl_tag(sql) } else { command.to_string() };
            Reply::Command { tag, notices: notice.into_iter().map(Notice::info).collect() }
        }
    }
}

/// The type shared by every non-NULL value of column `i` (None if mixed or all NULL).
fn uniform_type(rows: &[Row], i: usize) -> Option<SqlType> {
    let mut types = rows.iter().filter_map(|r| r.get(i).and_then(Value::sql_type));
    let first = types.next()?;
    types.all(|t| t == first).then_some(first)
}

/// `CREATE TABLE` / `DROP INDEX` …: the tag of a DDL statement from its first two words.
fn ddl_tag(sql: &str) -> String {
    let words = crate::command::words(sql);
    words.iter().take(2).map(|w| w.to_ascii_uppercase()).collect::<Vec<_>>().join(" ")
}

/// Whether `sql` starts with the words `words` (case-insensitive, any whitespace between).
fn starts_with_words(sql: &str, words: &str) -> bool {
    let mut tokens = sql.split_whitespace();
    words.split(' ').all(|w| tokens.next().is_some_and(|t| t.eq_ignore_ascii_case(w)))
}

/// Counts a commit's outcome in the gateway's metrics (if it has them) and returns it.
fn counted(config: &GatewayConfig, outcome: Result<Outcome, ClientError>) -> Result<Outcome, ClientError> {
    if let Some(m) = &config.metrics {
        match &outcome {
            Ok(Outcome::Committed { fast }) => m.transaction(Some(*fast)),
            Ok(Outcome::Aborted) => m.transaction(None),
            // An unknown outcome (a timeout) is neither.
            Err(_) => {}
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_postgres() {
        assert_eq!(
            reply_of(SqlOutput::Affected { command: "INSERT", count: 3, returning: None, returning_types: vec![] }, ""),
            command_reply("INSERT 0 3")
        );
        assert_eq!(
            reply_of(SqlOutput::Affected { command: "UPDATE", count: 2, returning: None, returning_types: vec![] }, ""),
            command_reply("UPDATE 2")
        );
        assert_eq!(
            reply_of(SqlOutput::Ddl { command: "DDL", notice: None }, "drop table if exists t"),
            command_reply("DROP TABLE")
        );
        match reply_of(
            SqlOutput::Rows {
                columns: vec!["a".into()],
                types: vec![None],
                rows: vec![vec![Value::Int(1)], vec![Value::Null]],
            },
            "",
        ) {
            Reply::Rows { fields, tag, .. } => {
                assert_eq!(tag, "SELECT 2");
                assert_eq!(fields[0].ty, Some(SqlType::Int));
            }
            other => panic!("{other:?}"),
        }
    }
}
