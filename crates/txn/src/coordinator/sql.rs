//! Pesto's client side (§5): interactive SQL statements inside a Basil transaction.
//!
//! A statement is planned locally against the catalog the transaction read (one Basil read
//! of the shard's catalog key, whose value is the whole schema). Then:
//! - a statement that fixes one table's full primary key (§5.3) reads that row with Basil's
//!   point read and runs locally on it, so its result follows from the chosen version (§5.4);
//! - any other statement is a RANGE-READ (§5.5) to 3f+1 replicas, completed on the eager
//!   path (`range::choose`);
//! - a schema change is buffered as writes of every shard's catalog key (alone in its
//!   transaction).
//!
//! Writes of INSERT/UPDATE/DELETE come back as a reconnaissance write set (§5.2) and are
//! buffered; later statements see them (read-your-writes) in both paths.

use super::{Coordinator, CoordinatorEvent, GetStart, TxnError, TxnHandle};
use crate::auth::sign_client;
use crate::pesto::CatalogWrite;
use crate::rejects::RejectReason;
use pistou_core::sql_keys::{catalog_key, key_kind, row_key, KeyKind};
use pistou_core::{Key, ReplicaId, ShardId, Timestamp};
use pistou_crypto::{BatchSignature, Hash};
use pistou_sql::{
    Catalog, ExecContext, IndexSchema, KeyRange, Output, Prepared, ReadAt, Row, SequenceInput, SequenceSet,
    SessionSequences, SqlError, SqlState, SqlType, StatementKind, Storage, StoredRow, TableSchema, Version, Write,
    WriteSet,
};
use pistou_wire::{Message, PredicateRead, QueryOutput, RangeRead, RangeReply, ReplicaSigned, WirePredicate};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(crate) mod range;
mod sequences;

use range::{range_targets, Choice, Chosen, Phase, RangeOp};

/// A replica whose range-read reply was an outlier (B.8: its table version far behind, as a
/// replica that misses commits reports) is asked first again only after this long (µs).
const AVOID_OUTLIER_US: u64 = 1_000_000;

/// How range reads completed at this client (Pesto Fig. 8 reports these rates).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeStats {
    /// Decided on the eager path (§5.5 step 3).
    pub eager: u64,
    /// Snapshot proposals sent (§5.5 step 4).
    pub snapshot_proposals: u64,
    /// Decided on the snapshot path (§5.5 step 6).
    pub snapshot: u64,
    /// Failed: f+1 matching errors, or disagreement after every snapshot attempt.
    pub failed: u64,
}

/// What a statement produced, as the application sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum SqlOutput {
    Rows {
        columns: Vec<String>,
        types: Vec<Option<SqlType>>,
        rows: Vec<Row>,
    },
    /// INSERT / UPDATE / DELETE (buffered until commit), with RETURNING rows if asked and
    /// their columns' static types.
    Affected {
        command: &'static str,
        count: u64,
        returning: Option<(Vec<String>, Vec<Row>)>,
        returning_types: Vec<Option<SqlType>>,
    },
    /// A schema change (buffered until commit) or a no-op `IF [NOT] EXISTS`, with the
    /// NOTICE PostgreSQL sends for the latter.
    Ddl {
        command: &'static str,
        notice: Option<String>,
    },
}

/// The SQL side of one transaction.
#[derive(Default)]
pub(super) struct SqlTxnState {
    /// The catalog read at each shard: (version, schema).
    catalogs: BTreeMap<ShardId, (Timestamp, Arc<Catalog>)>,
    /// Buffered row writes (also in the transaction's Basil write set, encoded).
    pub(super) pending: WriteSet,
    /// Rows read by range reads (Q-READ): key → version. Point reads are Basil reads.
    range_reads: BTreeMap<Key, Timestamp>,
    /// PredSet_T: (predicate, keys its evaluation read) → smallest table version seen. The
    /// same predicate evaluated by two statements stays two entries unless both read the
    /// same keys (replicas check each evaluation on its own).
    predicates: BTreeMap<(WirePredicate, Vec<Key>), Timestamp>,
    /// currval of each sequence and lastval: the session's, then as this transaction's
    /// statements draw.
    session_sequences: SessionSequences,
    /// setval settings the client applied for the next statement (it runs again with them).
    sequence_sets: Vec<(String, SequenceSet)>,
    /// The schema changes buffered so far (only schema changes may follow them).
    pub(super) ddl: Option<PendingDdl>,
    statement: Option<Statement>,
    /// Statements started so far: each one's number makes its random seed unique.
    statements: u64,
}

/// A transaction's buffered schema changes and the catalog they produce from the one it
/// read (what its catalog-key writes will carry).
#[derive(Clone)]
pub(super) struct PendingDdl {
    changes: Vec<pistou_sql::CatalogChange>,
    catalog: Arc<Catalog>,
}

impl SqlTxnState {
    /// A statement is still running.
    pub(super) fn busy(&self) -> bool {
        self.statement.is_some()
    }

    /// The shards this transaction's statements read (each read its catalog first).
    pub(super) fn shards_read(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.catalogs.keys().copied()
    }
}

struct Statement {
    sql: String,
    params: Vec<pistou_sql::Value>,
    /// A schema change given as such rather than as SQL text (`Coordinator::sql_change`).
    change: Option<pistou_sql::CatalogChange>,
    step: Step,
    /// Blocks of the sequences the statement names, taken from the client's cache for it
    /// (None until planned), and the values it drew from each once known.
    sequences: Option<Vec<TakenBlock>>,
    sequences_used: Option<Vec<u64>>,
    /// The session's lastval after it, once known.
    lastval_after: Option<pistou_sql::SequenceLast>,
    /// The setval settings applied for it.
    sequence_sets: Vec<(String, SequenceSet)>,
    /// Sent with the statement so that every replica computes the same `gen_random_uuid()`
    /// values (`pistou_sql::uuid`).
    random_seed: [u8; 32],
}

/// A block of a sequence's values a statement took from the cache: the sequence's identity
/// and its setval generation then, and the statement's input.
struct TakenBlock {
    id: u64,
    generation: u64,
    input: SequenceInput,
    /// The session's currval of the sequence is kept under this name.
    storage_name: String,
}

impl Statement {
    /// The sequence values as the engine and the replicas take them.
    fn sequence_inputs(&self) -> Vec<SequenceInput> {
        self.sequences.iter().flatten().map(|taken| taken.input.clone()).collect()
    }
}

enum Step {
    /// Planning: waiting for nothing, or for the catalog key of a shard.
    Plan,
    /// Waiting for the point read of one row.
    Point {
        prepared: Arc<Prepared>,
        key: Key,
    },
    Range(Box<RangeOp>),
}

fn sql_err(state: SqlState, msg: impl Into<String>) -> SqlError {
    SqlError::new(state, msg.into())
}

fn serialization(msg: impl Into<String>) -> SqlError {
    sql_err(SqlState::SerializationFailure, msg)
}

/// Where a statement after a schema change of its own transaction runs.
enum AfterSchemaChange {
    /// Every table it reads or writes was created by this transaction.
    OnCreatedTables,
    /// Every table it reads or writes is as the transaction read it: the replicas' committed
    /// schema plans it the same.
    OnUnchangedTables,
}

/// Classifies `prepared` (planned against `pending`, the schema this transaction will write,
/// from `committed`, the one it read). The rest fails with 0A000 (docs/sql.md, "Schema
/// changes in transactions").
fn after_schema_change(
    committed: &Catalog,
    pending: &Catalog,
    prepared: &Prepared,
) -> Result<AfterSchemaChange, SqlError> {
    let (mut created, mut unchanged) = (Vec::new(), Vec::new());
    for table in prepared.tables() {
        let before = committed.stored(table);
        let after = pending.stored(table);
        match (before, after) {
            // A mark of rules awaiting their check changes no row and no result.
            (Some(b), Some(a)) if b.same_but_for_validity(a) => unchanged.push(table.as_str()),
            (Some(b), Some(a)) if b.id == a.id => {
                return Err(sql_err(
                    SqlState::FeatureNotSupported,
                    format!(
                        "reading or writing table \"{}\" after changing its schema in the same transaction",
                        a.name
                    ),
                ))
            }
            _ => created.push(table.as_str()),
        }
    }
    // Replicas expand a view by their committed schema: one this transaction changed would
    // read differently there.
    if let Some(view) = prepared.views().iter().find(|v| committed.view(v) != pending.view(v)) {
        return Err(sql_err(
            SqlState::FeatureNotSupported,
            format!("reading view \"{view}\" after creating or changing it in the same transaction (commit the schema change first)"),
        ));
    }
    let new_sequences = prepared.sequences().iter().any(|name| committed.sequence(name) != pending.sequence(name));
    if new_sequences {
        return Err(sql_err(
            SqlState::FeatureNotSupported,
            "values of a sequence created or changed in the same transaction (commit the schema change first)",
        ));
    }
    match (created.is_empty(), unchanged.is_empty()) {
        (false, false) => Err(sql_err(
            SqlState::FeatureNotSupported,
            format!(
                "a statement over both tables created in this transaction ({}) and tables that existed before it ({})",
                created.join(", "),
                unchanged.join(", ")
            ),
        )),
        (false, true) => Ok(AfterSchemaChange::OnCreatedTables),
        (true, _) => Ok(AfterSchemaChange::OnUnchangedTables),
    }
}

/// The empty store: what statements that read no table run against.
struct NoRows;

impl Storage for NoRows {
    fn scan(&self, _: &TableSchema, _: &KeyRange, _: &ReadAt, _: usize) -> pistou_sql::error::Result<Vec<StoredRow>> {
        Ok(Vec::new())
    }
    fn index_scan(
        &self,
        _: &TableSchema,
        _: &IndexSchema,
        _: &KeyRange,
        _: &ReadAt,
        _: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        Ok(Vec::new())
    }
    fn table_version(&self, _: &TableSchema, _: &ReadAt) -> Option<Timestamp> {
        None
    }
}

/// The one row a point statement reads, as the point read chose it (§5.4). Any other access
/// fails, and the statement then goes to the replicas as a range read.
struct OneRow {
    table: String,
    row: Option<StoredRow>,
    /// Set when the statement asked for more than the row.
    needs_more: std::cell::Cell<bool>,
}

impl Storage for OneRow {
    fn scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        if table.name != self.table {
            self.needs_more.set(true);
            return Err(sql_err(SqlState::InternalError, "point statement read another table"));
        }
        let visible =
            self.row.as_ref().filter(|r| range.contains(&r.key) && r.version.ts < at.ts && (at.visible)(&r.version));
        Ok(visible.into_iter().take(limit).cloned().collect())
    }
    fn index_scan(
        &self,
        _: &TableSchema,
        _: &IndexSchema,
        _: &KeyRange,
        _: &ReadAt,
        _: usize,
    ) -> pistou_sql::error::Result<Vec<StoredRow>> {
        self.needs_more.set(true);
        Err(sql_err(SqlState::InternalError, "point statement needs an index scan"))
    }
    fn table_version(&self, _: &TableSchema, _: &ReadAt) -> Option<Timestamp> {
        None
    }
}

/// Decodes a certified catalog-key value (None: the key was never written).
fn decode_catalog(value: &Option<Vec<u8>>) -> Result<Catalog, SqlError> {
    match value {
        None => Ok(Catalog::new()),
        Some(bytes) => postcard::from_bytes::<CatalogWrite>(bytes)
            .map(|w| w.catalog)
            .map_err(|_| sql_err(SqlState::ProtocolViolation, "the committed catalog cannot be decoded")),
    }
}

/// A stored row value in the current schema (rows written before an ADD COLUMN are shorter).
fn decode_row(schema: &TableSchema, bytes: &[u8]) -> Result<Row, SqlError> {
    let mut row: Row = postcard::from_bytes(bytes)
        .map_err(|_| sql_err(SqlState::ProtocolViolation, "a stored row cannot be decoded"))?;
    if row.len() > schema.columns.len() {
        return Err(sql_err(SqlState::ProtocolViolation, "a stored row has more columns than its table"));
    }
    for column in &schema.columns[row.len()..] {
        row.push(column.default.clone().unwrap_or(pistou_sql::Value::Null));
    }
    Ok(row)
}

impl Coordinator {
    /// Starts one SQL statement of transaction `h`; a `CoordinatorEvent::SqlDone` follows
    /// (possibly already queued when this returns). One statement at a time per transaction.
    /// A statement that fails leaves the transaction open: callers abort it, as PostgreSQL does.
    pub fn sql(&mut self, now: u64, h: TxnHandle, sql: &str, params: Vec<pistou_sql::Value>) -> Result<(), TxnError> {
        self.sql_start(now, h, sql, params, None)
    }

    /// Buffers a schema change that has no SQL text, as a DDL statement's: the marks of the
    /// rules whose check of older rows comes after their commit
    /// (`CatalogChange::MarkUnvalidated` / `Validated`, see the gateway's
    /// `existing_rows.rs`). Replicas apply it with the same checks as any other change.
    pub fn sql_change(&mut self, now: u64, h: TxnHandle, change: pistou_sql::CatalogChange) -> Result<(), TxnError> {
        self.sql_start(now, h, "/* a schema change */", Vec::new(), Some(change))
    }

    fn sql_start(
        &mut self,
        now: u64,
        h: TxnHandle,
        sql: &str,
        params: Vec<pistou_sql::Value>,
        change: Option<pistou_sql::CatalogChange>,
    ) -> Result<(), TxnError> {
        let secret = self.random_secret;
        let t = self.executing(h)?;
        let ts = t.ts;
        let state = t.sql.get_or_insert_with(Box::default);
        // The settings are this statement's alone, even if it is refused.
        let sequence_sets = std::mem::take(&mut state.sequence_sets);
        if state.statement.is_some() {
            return Err(TxnError::Busy);
        }
        let mut unique = Vec::with_capacity(32);
        for part in [ts.time, ts.client.0, ts.seq, state.statements] {
            unique.extend_from_slice(&part.to_le_bytes());
        }
        state.statements += 1;
        state.statement = Some(Statement {
            sql: sql.to_string(),
            params,
            change,
            step: Step::Plan,
            sequences: None,
            sequences_used: None,
            lastval_after: None,
            sequence_sets,
            random_seed: pistou_sql::uuid::statement_seed(&secret, &unique),
        });
        self.sql_advance(now, h);
        Ok(())
    }

    fn sql_state(&mut self, h: TxnHandle) -> Option<&mut SqlTxnState> {
        self.txns.get_mut(&h).and_then(|t| t.sql.as_deref_mut())
    }

    fn sql_done(&mut self, h: TxnHandle, result: Result<SqlOutput, SqlError>) {
        let finished = self.sql_state(h).and_then(|state| state.statement.take());
        match (finished, &result) {
            (Some(stmt), Ok(_)) => self.sequences_drawn(h, stmt),
            (Some(stmt), Err(e)) if matches!(e.state, SqlState::SequenceValuesNeeded | SqlState::SequenceSetNeeded) => {
                self.sequences_retried(stmt)
            }
            _ => {}
        }
        self.events.push_back(CoordinatorEvent::SqlDone { txn: h, result });
    }

    /// A Basil read of transaction `h` completed: it may be what a statement waits for.
    /// Returns true if a SQL statement consumed it.
    pub(super) fn sql_read_done(&mut self, now: u64, h: TxnHandle) -> bool {
        let waiting = matches!(
            self.sql_state(h).and_then(|s| s.statement.as_ref()),
            Some(Statement { step: Step::Plan | Step::Point { .. }, .. })
        );
        if waiting {
            self.sql_advance(now, h);
        }
        waiting
    }

    /// Drives the statement of `h` as far as it goes without waiting for the network.
    fn sql_advance(&mut self, now: u64, h: TxnHandle) {
        match self.sql_step(now, h) {
            Ok(Some(output)) => self.sql_done(h, Ok(output)),
            Ok(None) => {}
            Err(e) => self.sql_done(h, Err(e)),
        }
    }

    /// The shard whose catalog a transaction's first statement reads: the shard of the tables
    /// it names according to the newest catalog this client knows, so that a transaction on
    /// shard 1's tables does not also touch shard 0. Without such a catalog (a client's first
    /// transaction), the shard of the first table the statement's syntax names. Shard 0 if
    /// neither tells (no table, or an unknown one): the statement is then planned against
    /// shard 0's catalog and reads its own shard's as well.
    fn first_catalog_shard(&self, sql: &str) -> ShardId {
        let planned = self.catalog_hint.as_ref().and_then(|(_, catalog)| self.sql_engine.prepare(catalog, sql).ok());
        let table = match planned {
            Some(prepared) => prepared.tables().first().cloned(),
            None => self.sql_engine.first_named_table(sql),
        };
        table.map_or(ShardId(0), |t| self.config().table_shard(&t))
    }

    /// Reads the catalog key of `shard` (if not yet read). Returns false while it is in flight.
    fn sql_catalog(&mut self, now: u64, h: TxnHandle, shard: ShardId) -> Result<bool, SqlError> {
        if self.sql_state(h).is_some_and(|s| s.catalogs.contains_key(&shard)) {
            return Ok(true);
        }
        let key = catalog_key(shard);
        match self.get(now, h, &key).map_err(|e| read_err(e, SqlState::InternalError))? {
            GetStart::Pending => Ok(false),
            GetStart::Ready(value) => {
                let version =
                    self.txns.get(&h).and_then(|t| t.reads.get(&key)).map(|(v, _)| *v).unwrap_or(Timestamp::GENESIS);
                let catalog = Arc::new(decode_catalog(&value)?);
                if self.catalog_hint.as_ref().is_none_or(|(v, _)| *v < version) {
                    self.catalog_hint = Some((version, catalog.clone()));
                }
                if let Some(state) = self.sql_state(h) {
                    state.catalogs.insert(shard, (version, catalog));
                }
                Ok(true)
            }
        }
    }

    fn sql_step(&mut self, now: u64, h: TxnHandle) -> Result<Option<SqlOutput>, SqlError> {
        let Some(state) = self.sql_state(h) else { return Ok(None) };
        let Some(stmt) = state.statement.as_mut() else { return Ok(None) };
        match &stmt.step {
            Step::Plan => {}
            Step::Point { prepared, key } => {
                let (prepared, key) = (prepared.clone(), key.clone());
                return self.sql_point_done(now, h, prepared, key);
            }
            Step::Range(_) => return Ok(None),
        }
        let (sql, params, change) = (stmt.sql.clone(), stmt.params.clone(), stmt.change.clone());
        // Plan against a catalog this transaction read (every shard's catalog key holds the
        // whole schema); the first statement reads the catalog of the shard it reads.
        let planning = match state.catalogs.values().next() {
            Some((version, catalog)) => (*version, catalog.clone()),
            None => {
                let shard = match change {
                    Some(_) => ShardId(0),
                    None => self.first_catalog_shard(&sql),
                };
                if !self.sql_catalog(now, h, shard)? {
                    return Ok(None);
                }
                return self.sql_step(now, h);
            }
        };
        if let Some(change) = change {
            return self.sql_ddl(now, h, planning, Some(change), "ALTER TABLE", None);
        }
        // After a schema change of its own, the transaction plans against the catalog it will
        // write (uncommitted, so never cached).
        let pending = self.sql_state(h).and_then(|s| s.ddl.as_ref()).map(|d| d.catalog.clone());
        let prepared = match &pending {
            Some(catalog) => self.sql_engine.prepare_uncommitted(catalog, &sql)?,
            None => self.sql_engine.prepare(&planning.1, &sql)?,
        };
        let kind = prepared.kind();
        match &kind {
            StatementKind::Transaction(_) => {
                return Err(sql_err(
                    SqlState::FeatureNotSupported,
                    "BEGIN, COMMIT and ROLLBACK are the session's commands, not statements",
                ))
            }
            StatementKind::Ddl(change) => {
                let notice = prepared.notice().map(str::to_string);
                return self.sql_ddl(now, h, planning, change.as_deref().cloned(), kind.command(), notice);
            }
            _ => {}
        }
        if let Some(catalog) = &pending {
            match after_schema_change(&planning.1, catalog, &prepared)? {
                // Tables this transaction created hold only its own rows: it runs here.
                AfterSchemaChange::OnCreatedTables => {
                    self.take_sequence_values(h, catalog, &prepared)?;
                    let (out, exec) = self.sql_local(h, catalog, &prepared, &params, &NoRows)?;
                    self.sql_buffer_writes(h, &exec.writes, catalog)?;
                    return Ok(out);
                }
                AfterSchemaChange::OnUnchangedTables => {}
            }
        }
        self.take_sequence_values(h, &planning.1, &prepared)?;
        let tables = prepared.tables();
        if tables.is_empty() {
            // EXPLAIN, or a statement over no table (SELECT 1, the system catalog): nothing
            // to read; the system catalog shows this transaction's schema changes.
            let catalog = pending.unwrap_or_else(|| planning.1.clone());
            return self.sql_local(h, &catalog, &prepared, &params, &NoRows).map(|(out, _)| out);
        }
        let shards: BTreeSet<ShardId> = tables.iter().map(|t| self.config().table_shard(t)).collect();
        let shard = match shards.iter().next() {
            Some(s) if shards.len() == 1 => *s,
            _ => {
                return Err(sql_err(
                    SqlState::FeatureNotSupported,
                    format!("tables {} are on different shards; a statement reads one shard (cross-shard queries are not supported yet)", tables.join(", ")),
                ))
            }
        };
        if !self.sql_catalog(now, h, shard)? {
            return Ok(None);
        }
        let shard_catalog = self.sql_state(h).and_then(|s| s.catalogs.get(&shard)).map(|(v, _)| *v);
        if shard_catalog != Some(planning.0) {
            return Err(serialization("the schema changed between the shards this transaction reads"));
        }
        if let Some(point) = prepared.point_key(&params)? {
            let Some(pk) = point.key else {
                // A NULL or mistyped key value: the statement reads no row.
                return self.sql_local(h, &planning.1, &prepared, &params, &NoRows).map(|(out, _)| out);
            };
            let key = row_key(&point.table, point.table_id, &pk)
                .ok_or_else(|| sql_err(SqlState::ProgramLimitExceeded, "table name too long"))?;
            self.set_step(h, Step::Point { prepared: prepared.clone(), key: key.clone() });
            return match self.get(now, h, &key).map_err(|e| read_err(e, SqlState::ProgramLimitExceeded))? {
                GetStart::Pending => Ok(None),
                GetStart::Ready(_) => self.sql_point_done(now, h, prepared, key),
            };
        }
        self.sql_range_start(now, h, shard, planning.0, prepared)
    }

    fn set_step(&mut self, h: TxnHandle, step: Step) {
        if let Some(stmt) = self.sql_state(h).and_then(|s| s.statement.as_mut()) {
            stmt.step = step;
        }
    }

    /// Runs `prepared` here against `storage` with the buffered writes overlaid.
    fn sql_local(
        &mut self,
        h: TxnHandle,
        catalog: &Catalog,
        prepared: &Prepared,
        params: &[pistou_sql::Value],
        storage: &dyn Storage,
    ) -> Result<(Option<SqlOutput>, pistou_sql::Execution), SqlError> {
        let Some(t) = self.txns.get(&h) else { return Err(sql_err(SqlState::InternalError, "transaction vanished")) };
        let empty = WriteSet::default();
        let pending = t.sql.as_ref().map(|s| &s.pending).unwrap_or(&empty);
        let statement = t.sql.as_ref().and_then(|s| s.statement.as_ref());
        let sequences = statement.map(Statement::sequence_inputs).unwrap_or_default();
        let random_seed = statement.map_or([0; 32], |s| s.random_seed);
        let lastval = t.sql.as_ref().and_then(|s| s.session_sequences.lastval.as_ref());
        let ctx = ExecContext {
            storage,
            at: ReadAt::latest_before(t.ts),
            pending,
            sequences: &sequences,
            random_seed,
            lastval,
        };
        let exec = self.sql_engine.execute(catalog, prepared, params, &ctx)?;
        if let Some(stmt) = self.sql_state(h).and_then(|s| s.statement.as_mut()) {
            stmt.sequences_used = Some(exec.sequences_used.clone());
            stmt.lastval_after = exec.lastval.clone();
        }
        let output = match &exec.output {
            Output::Rows { columns, rows } => SqlOutput::Rows {
                columns: columns.clone(),
                types: prepared.column_types().map(<[_]>::to_vec).unwrap_or_else(|| vec![None; columns.len()]),
                rows: rows.clone(),
            },
            Output::Affected { command, count, returning } => SqlOutput::Affected {
                command,
                count: *count,
                returning: returning.clone(),
                returning_types: prepared.returning_types().unwrap_or_default(),
            },
            Output::Catalog(_) | Output::Transaction(_) => {
                return Err(sql_err(SqlState::InternalError, "unexpected statement kind in local execution"))
            }
        };
        Ok((Some(output), exec))
    }

    /// The point read of `key` is done: run the statement on that one row.
    fn sql_point_done(
        &mut self,
        now: u64,
        h: TxnHandle,
        prepared: Arc<Prepared>,
        key: Key,
    ) -> Result<Option<SqlOutput>, SqlError> {
        let Some(t) = self.txns.get(&h) else { return Ok(None) };
        let Some(state) = t.sql.as_deref() else { return Ok(None) };
        let Some(stmt) = state.statement.as_ref() else { return Ok(None) };
        let params = stmt.params.clone();
        let KeyKind::Row { table, table_id, pk } = key_kind(&key) else {
            return Err(sql_err(SqlState::InternalError, "not a row key"));
        };
        let shard = self.config().table_shard(table);
        let Some((catalog_version, catalog)) = state.catalogs.get(&shard).cloned() else {
            return Err(sql_err(SqlState::InternalError, "catalog not read"));
        };
        let schema = catalog
            .stored(table)
            .filter(|s| s.id == table_id)
            .cloned()
            .ok_or_else(|| sql_err(SqlState::UndefinedTable, format!("table \"{table}\" does not exist")))?;
        let row = match (t.writes.contains_key(&key), t.reads.get(&key)) {
            // Our own buffered write: the overlay supplies it.
            (true, _) => None,
            (false, Some((version, Some(bytes)))) => {
                if state.range_reads.get(&key).is_some_and(|v| v != version) {
                    return Err(serialization("a row read twice in this transaction changed in between"));
                }
                let prepared_by = t.deps.iter().find(|d| d.key == key).map(|d| d.txn);
                let version = Version { ts: *version, prepared_by };
                Some(StoredRow { key: pk.to_vec(), version, row: decode_row(&schema, bytes)? })
            }
            (false, _) => None,
        };
        let store = OneRow { table: table.to_string(), row, needs_more: std::cell::Cell::new(false) };
        let (output, exec) = match self.sql_local(h, &catalog, &prepared, &params, &store) {
            Ok(done) => done,
            // The statement needs more than the row (an index check of a changed unique
            // column, say): the replicas run it.
            Err(_) if store.needs_more.get() => return self.sql_range_start(now, h, shard, catalog_version, prepared),
            Err(e) => return Err(e),
        };
        // A point statement reads its one key (and, for a changed primary key or unique
        // column, more): anything beyond the key goes to the replicas.
        let only_key = exec.reads.scans.iter().all(|s| {
            s.access == pistou_sql::Access::Point
                && s.table() == table
                && s.rows.iter().all(|r| r.key == pk)
                && s.absent_key.as_ref().is_none_or(|k| k == pk)
        });
        if !only_key {
            return self.sql_range_start(now, h, shard, catalog_version, prepared);
        }
        self.sql_buffer_writes(h, &exec.writes, &catalog)?;
        Ok(output)
    }

    /// Buffers a statement's writes (read-your-writes for later statements).
    fn sql_buffer_writes(&mut self, h: TxnHandle, writes: &WriteSet, catalog: &Catalog) -> Result<(), SqlError> {
        let entries = crate::pesto::range_read::write_entries(writes, catalog)?;
        let Some(t) = self.txns.get_mut(&h) else { return Ok(()) };
        if t.reads.len() + t.writes.len() + entries.len() > pistou_wire::MAX_TXN_OPS {
            return Err(sql_err(
                SqlState::ProgramLimitExceeded,
                format!("a transaction reads and writes at most {} rows", pistou_wire::MAX_TXN_OPS),
            ));
        }
        for e in entries {
            t.writes.insert(e.key, e.value);
        }
        if let Some(state) = t.sql.as_deref_mut() {
            state.pending.merge(writes.clone());
        }
        Ok(())
    }

    /// A schema change: buffered as writes of every shard's catalog key, alone in its
    /// transaction (replicas refuse anything else with it).
    fn sql_ddl(
        &mut self,
        now: u64,
        h: TxnHandle,
        planning: (Timestamp, Arc<Catalog>),
        change: Option<pistou_sql::CatalogChange>,
        command: &'static str,
        notice: Option<String>,
    ) -> Result<Option<SqlOutput>, SqlError> {
        let Some(change) = change else { return Ok(Some(SqlOutput::Ddl { command, notice })) };
        let pending = self.sql_state(h).and_then(|s| s.ddl.clone());
        let shards: Vec<ShardId> = (0..self.config().shards.len() as u32).map(ShardId).collect();
        for shard in &shards {
            if !self.sql_catalog(now, h, *shard)? {
                return Ok(None);
            }
        }
        let Some(state) = self.sql_state(h) else { return Ok(None) };
        if state.catalogs.values().any(|(v, _)| *v != planning.0) {
            return Err(serialization("a schema change is in progress"));
        }
        let before = pending.as_ref().map_or(planning.1.clone(), |d| d.catalog.clone());
        let mut changes = pending.map(|d| d.changes).unwrap_or_default();
        let mut next = (*before).clone();
        if changes.len() >= CatalogWrite::MAX_CHANGES {
            return Err(sql_err(
                SqlState::ProgramLimitExceeded,
                format!("more than {} schema changes in one transaction", CatalogWrite::MAX_CHANGES),
            ));
        }
        next.apply(&change, &pistou_sql::EngineRules)?;
        // Rows it wrote are in the schema it leaves (replicas check them against it), so a
        // table it wrote keeps its schema.
        let written =
            self.sql_state(h).map(|s| s.pending.tables.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        if let Some(table) = written.iter().find_map(|t| before.stored(t).filter(|b| next.stored(t) != Some(*b))) {
            return Err(sql_err(
                SqlState::FeatureNotSupported,
                format!(
                    "changing the schema of table \"{}\" after writing its rows in the same transaction",
                    table.name
                ),
            ));
        }
        // A foreign key is checked by the statements writing either table, and a statement
        // reads one shard: both tables must be on one.
        for t in next.tables() {
            for fk in &t.constraints.foreign_keys {
                let parent = next.table(&fk.parent).map_or(fk.parent.as_str(), |p| p.storage_name());
                if self.config().table_shard(t.storage_name()) != self.config().table_shard(parent) {
                    return Err(sql_err(
                        SqlState::FeatureNotSupported,
                        format!(
                            "foreign key \"{}\" of table \"{}\" references table \"{}\" on another shard (a statement reads one shard; place both tables on one)",
                            fk.name, t.name, fk.parent
                        ),
                    ));
                }
            }
        }
        changes.push(change);
        let write = CatalogWrite { changes, catalog: next };
        let value = postcard::to_allocvec(&write)
            .map_err(|e| sql_err(SqlState::InternalError, format!("catalog encoding: {e}")))?;
        if value.len() > pistou_wire::MAX_VALUE_BYTES {
            return Err(sql_err(SqlState::ProgramLimitExceeded, "the catalog is too large"));
        }
        let Some(state) = self.sql_state(h) else { return Ok(None) };
        state.ddl = Some(PendingDdl { changes: write.changes, catalog: Arc::new(write.catalog) });
        let Some(t) = self.txns.get_mut(&h) else { return Ok(None) };
        for shard in shards {
            t.writes.insert(catalog_key(shard), Some(value.clone()));
        }
        Ok(Some(SqlOutput::Ddl { command, notice }))
    }

    /// Sends RANGE-READ to 3f+1 replicas of `shard` (§5.5 step 1).
    fn sql_range_start(
        &mut self,
        now: u64,
        h: TxnHandle,
        shard: ShardId,
        catalog_version: Timestamp,
        prepared: Arc<Prepared>,
    ) -> Result<Option<SqlOutput>, SqlError> {
        let Some(t) = self.txns.get(&h) else { return Ok(None) };
        let Some(stmt) = t.sql.as_ref().and_then(|s| s.statement.as_ref()) else { return Ok(None) };
        let state_lastval = t.sql.as_ref().and_then(|s| s.session_sequences.lastval.clone());
        // Only the buffered writes of the tables the statement reads or writes (all on
        // `shard`): the replicas' engine looks at no others, and the transaction's buffer
        // spans every table it wrote, which every replica asked would decode and hash.
        let tables = prepared.tables();
        let pending = t
            .writes
            .iter()
            .filter(|(k, _)| matches!(key_kind(k), KeyKind::Row { table, .. } if tables.iter().any(|t| t == table)))
            .map(|(k, v)| pistou_wire::WriteEntry { key: k.clone(), value: v.clone() })
            .collect();
        let body = RangeRead {
            ts: t.ts,
            catalog_version,
            sql: stmt.sql.clone(),
            params: stmt.params.clone(),
            pending,
            snapshot: None,
            sequences: stmt.sequence_inputs(),
            random_seed: stmt.random_seed,
            lastval: state_lastval,
        };
        let request = Arc::new(self.sign_read(body));
        let q = self.config().quorums();
        let start = (self.id.0.wrapping_add(self.seq)) as usize % q.n();
        let avoid = |index: u32| self.range_outliers.get(&ReplicaId { shard, index }).is_some_and(|until| *until > now);
        let targets = range_targets(start, q.n(), q.range_fanout(), avoid);
        for i in &targets {
            self.outputs.push((ReplicaId { shard, index: *i }, Message::RangeRead(request.clone())));
        }
        let op = RangeOp::new(shard, prepared, request, targets.into_iter().collect(), now);
        self.set_step(h, Step::Range(Box::new(op)));
        Ok(None)
    }

    /// A range reply arriving from replica `from`. Its signature is checked later, in one
    /// batch with the round's other replies, before anything is decided over it; until then
    /// only its SS-VOTE may be used, and only a reply that the named replica's own connection
    /// delivered, so that no replica can vote in another's name.
    pub(super) fn on_range_reply(
        &mut self,
        now: u64,
        from: ReplicaId,
        reply: ReplicaSigned<RangeReply>,
    ) -> Result<(), RejectReason> {
        let request = reply.body.request;
        let found = self.txns.iter().find_map(|(h, t)| match t.sql.as_ref().and_then(|s| s.statement.as_ref()) {
            Some(Statement { step: Step::Range(op), .. }) if op.hash == request => Some((*h, op.shard)),
            _ => None,
        });
        let Some((h, shard)) = found else { return Ok(()) }; // late or unknown
        if reply.signer.shard != shard || !self.auth.is_member(reply.signer) || reply.signer != from {
            return Err(RejectReason::NotMember);
        }
        let checked = self.auth.crypto();
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut()) else {
            return Ok(());
        };
        if !op.accepting() {
            return Ok(()); // a late reply of the previous round
        }
        op.add_reply(reply, checked);
        self.sql_range_decide(now, h);
        Ok(())
    }

    /// Checks the signatures `take_unverified` hands out, dropping the replies that fail.
    fn sql_range_verify(&mut self, h: TxnHandle) {
        let eager = self.eager_range_reads;
        let f = self.config().f;
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut()) else {
            return;
        };
        let (shard, pending) = (op.shard, op.take_unverified(f, eager));
        if pending.is_empty() {
            return;
        }
        let items: Vec<(ReplicaId, Hash, Option<&BatchSignature>)> = pending
            .iter()
            .map(|(index, hash, sig)| (ReplicaId { shard, index: *index }, *hash, sig.as_ref()))
            .collect();
        let results = self.auth.check_replica_hashes(&items);
        let bad: Vec<(u32, RejectReason)> =
            pending.iter().zip(results).filter_map(|((index, _, _), r)| r.err().map(|e| (*index, e.0))).collect();
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut()) else {
            return;
        };
        for (index, _) in &bad {
            op.drop_reply(*index);
        }
        for (_, reason) in bad {
            self.rejects.record(reason);
        }
    }

    /// Applies the decision rule to the range read of `h` and acts on it.
    fn sql_range_decide(&mut self, now: u64, h: TxnHandle) {
        self.sql_range_verify(h);
        let f = self.config().f;
        let outlier_us = self.config().sql.table_version_outlier_us;
        let n = self.config().quorums().n() as u32;
        let (patience, eager) = (self.timeouts.retransmit_us, self.eager_range_reads);
        let (id, key) = (self.id, self.read_key().cloned());
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut()) else {
            return;
        };
        let phase = op.phase;
        let (widened, skipped) = op.widen(f, outlier_us, n);
        let shard = op.shard;
        self.outputs.extend(widened);
        for index in skipped {
            self.range_outliers.insert(ReplicaId { shard, index }, now.saturating_add(AVOID_OUTLIER_US));
        }
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut()) else {
            return;
        };
        match op.choose(now, f, outlier_us, patience, eager) {
            Choice::Wait => {}
            Choice::Failed(e) => {
                self.range_stats.failed += 1;
                self.sql_done(h, Err(e));
            }
            Choice::Disagree if phase == Phase::Eager => {
                let out = op.start_snapshot(now, f, outlier_us, n, |body| sign_client(id, key.as_ref(), body));
                self.range_stats.snapshot_proposals += 1;
                self.outputs.extend(out);
            }
            Choice::Disagree => {
                if let Err(e) = op.restart(now) {
                    self.range_stats.failed += 1;
                    self.sql_done(h, Err(e));
                }
            }
            Choice::Done(chosen) => {
                match phase {
                    Phase::Eager => self.range_stats.eager += 1,
                    Phase::Snapshot => self.range_stats.snapshot += 1,
                }
                let result = self.sql_range_apply(h, *chosen);
                self.sql_done(h, result);
            }
        }
    }

    /// Adds an eager-path result to the transaction: Q-READ and valid Q-DEP to the read and
    /// dependency sets, Q-PRED to the predicate set, the write set to the buffered writes.
    fn sql_range_apply(&mut self, h: TxnHandle, chosen: Chosen) -> Result<SqlOutput, SqlError> {
        let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_ref()) else {
            return Err(sql_err(SqlState::InternalError, "no range read in flight"));
        };
        let (prepared, shard) = (op.prepared.clone(), op.shard);
        let Some((_, catalog)) = self.sql_state(h).and_then(|s| s.catalogs.get(&shard)).cloned() else {
            return Err(sql_err(SqlState::InternalError, "catalog not read"));
        };
        let mut writes = WriteSet::default();
        for w in &chosen.writes {
            let KeyKind::Row { table, table_id, pk } = key_kind(&w.key) else {
                return Err(sql_err(SqlState::ProtocolViolation, "reconnaissance wrote a non-row key"));
            };
            if catalog.stored(table).map(|s| s.id) != Some(table_id) {
                return Err(sql_err(
                    SqlState::ProtocolViolation,
                    "reconnaissance wrote a table this schema does not have",
                ));
            }
            let write = match &w.value {
                Some(bytes) => Write::Upsert(
                    postcard::from_bytes(bytes)
                        .map_err(|_| sql_err(SqlState::ProtocolViolation, "undecodable row in a write set"))?,
                ),
                None => Write::Delete,
            };
            writes.put(table, pk.to_vec(), write);
        }
        let Some(t) = self.txns.get_mut(&h) else {
            return Err(sql_err(SqlState::InternalError, "transaction vanished"));
        };
        let Some(state) = t.sql.as_deref_mut() else { return Err(sql_err(SqlState::InternalError, "no SQL state")) };
        for (key, version) in &chosen.reads {
            let earlier = state.range_reads.get(key).or_else(|| t.reads.get(key).map(|(v, _)| v));
            if earlier.is_some_and(|v| v != version) {
                return Err(serialization("a row read twice in this transaction changed in between"));
            }
        }
        if t.reads.len() + state.range_reads.len() + chosen.reads.len() > pistou_wire::MAX_TXN_OPS {
            return Err(sql_err(
                SqlState::ProgramLimitExceeded,
                format!("a transaction reads at most {} rows", pistou_wire::MAX_TXN_OPS),
            ));
        }
        for (key, version) in chosen.reads {
            state.range_reads.insert(key, version);
        }
        for p in chosen.predicates {
            let tv = state.predicates.entry((p.predicate, p.active)).or_insert(p.table_version);
            *tv = (*tv).min(p.table_version);
        }
        t.deps.extend(chosen.deps);
        if let Some(stmt) = state.statement.as_mut() {
            stmt.sequences_used = Some(chosen.sequences_used);
            stmt.lastval_after = chosen.lastval;
        }
        self.sql_buffer_writes(h, &writes, &catalog)?;
        Ok(match chosen.output {
            QueryOutput::Rows(rows) => SqlOutput::Rows {
                columns: prepared.columns().map(<[_]>::to_vec).unwrap_or_default(),
                types: prepared.column_types().map(<[_]>::to_vec).unwrap_or_default(),
                rows,
            },
            QueryOutput::Affected { count, returning } => {
                let names = prepared.returning_columns();
                SqlOutput::Affected {
                    command: prepared.kind().command(),
                    count,
                    returning: names.map(|n| (n, returning)),
                    returning_types: prepared.returning_types().unwrap_or_default(),
                }
            }
        })
    }

    /// Range reads without a decision after the retransmission timeout go to every replica;
    /// a round that has waited long enough with 3f+1 replies is decided (or moves on).
    pub(super) fn sql_tick(&mut self, now: u64) {
        let ranges: Vec<TxnHandle> = self
            .txns
            .iter()
            .filter(|(_, t)| {
                matches!(
                    t.sql.as_ref().and_then(|s| s.statement.as_ref()),
                    Some(Statement { step: Step::Range(_), .. })
                )
            })
            .map(|(h, _)| *h)
            .collect();
        for h in ranges {
            self.sql_range_decide(now, h);
        }
        let rt = self.timeouts.retransmit_us;
        let n = self.config().quorums().n() as u32;
        let mut out = Vec::new();
        for t in self.txns.values_mut() {
            let Some(Statement { step: Step::Range(op), .. }) = t.sql.as_mut().and_then(|s| s.statement.as_mut())
            else {
                continue;
            };
            out.extend(op.retransmit(now, rt, n));
        }
        self.outputs.extend(out);
        let retry: Vec<TxnHandle> = self
            .txns
            .iter()
            .filter(|(_, t)| matches!(t.sql.as_ref().and_then(|s| s.statement.as_ref()), Some(Statement { step: Step::Range(op), .. }) if op.retry_due(now)))
            .map(|(h, _)| *h)
            .collect();
        for h in retry {
            let Some(Statement { step: Step::Range(op), .. }) = self.sql_state(h).and_then(|s| s.statement.as_mut())
            else {
                continue;
            };
            let out = op.resend_all(now, n);
            self.outputs.extend(out);
        }
    }

    /// The SQL part of T's metadata at commit: range reads join the read set, predicates
    /// the predicate set (sorted, as `TxnMeta` requires: one predicate evaluated twice with
    /// different active rows gives two entries). Fails if a key was read at two versions.
    pub(super) fn sql_commit_parts(t: &mut super::TxnState) -> Result<Vec<PredicateRead>, ()> {
        let Some(state) = t.sql.take() else { return Ok(Vec::new()) };
        for (key, version) in state.range_reads {
            match t.reads.get(&key) {
                Some((v, _)) if *v != version => return Err(()),
                Some(_) => {}
                None => {
                    t.reads.insert(key, (version, None));
                }
            }
        }
        let mut predicates: Vec<PredicateRead> = state
            .predicates
            .into_iter()
            .map(|((predicate, active), table_version)| PredicateRead { predicate, table_version, active })
            .collect();
        predicates.sort();
        Ok(predicates)
    }
}

/// A point read that could not start; a transaction past the replicas' GC watermark gets
/// snapshot-too-old, as a range read would.
fn read_err(e: TxnError, otherwise: SqlState) -> SqlError {
    let state = if e == TxnError::TooOld { SqlState::SnapshotTooOld } else { otherwise };
    sql_err(state, e.to_string())
}
