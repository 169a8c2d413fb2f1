//! A standalone, single-process database: catalog + in-memory store + engine, autocommit or
//! explicit BEGIN/COMMIT/ROLLBACK. Used by the sqllogictest runner, the benchmark, and as
//! the simulator's model database.

use crate::catalog::{Catalog, CatalogChange};
use crate::engine::{Engine, ExecContext, Execution, Limits, Output, Prepared};
use crate::error::{err, Result, SqlState};
use crate::plan::TxnControl;
use crate::sequence::{SequenceBlock, SequenceInput, SequenceLast, SequenceSet, MAX_STATEMENT_SEQUENCES};
use crate::storage::{KeyRange, MemStore, ReadAt, Storage, Version, WriteSet};
use crate::types::Value;
use std::collections::{BTreeMap, BTreeSet};

pub struct Database {
    engine: Engine,
    catalog: Catalog,
    store: MemStore,
    /// Timestamp of the last committed write.
    clock: u64,
    /// Statements executed, which makes each one's random seed (`gen_random_uuid()`).
    statements: u64,
    /// Buffered writes of the open transaction, if any.
    transaction: Option<WriteSet>,
    /// Each sequence's counter and currval (not transactional, as in PostgreSQL).
    sequences: BTreeMap<String, SequenceState>,
    /// The sequence nextval last drew from in this database's session and its currval.
    lastval: Option<SequenceLast>,
}

/// A sequence's state in a [`Database`]: the identity it belongs to, the next value not yet
/// handed out (None: never drawn), and the last value drawn (currval).
#[derive(Clone, Debug, Default)]
struct SequenceState {
    id: u64,
    next: Option<i128>,
    current: Option<i64>,
}

/// Values a [`Database`] hands each statement per sequence it names.
const SEQUENCE_BLOCK: u64 = 1 << 16;

/// A copy of the data and any open transaction, with an empty plan cache of its own.
impl Clone for Database {
    fn clone(&self) -> Self {
        Database {
            engine: Engine::new(self.engine.limits().clone()),
            catalog: self.catalog.clone(),
            store: self.store.clone(),
            clock: self.clock,
            statements: self.statements,
            transaction: self.transaction.clone(),
            sequences: self.sequences.clone(),
            lastval: self.lastval.clone(),
        }
    }
}

impl Default for Database {
    fn default() -> Self {
        Database::with_limits(Limits::default())
    }
}

impl Database {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads always see the newest state, so the store keeps only each key's newest version.
    pub fn with_limits(limits: Limits) -> Self {
        Database {
            engine: Engine::new(limits),
            catalog: Catalog::default(),
            store: MemStore::newest_only(),
            clock: 0,
            statements: 0,
            transaction: None,
            sequences: BTreeMap::new(),
            lastval: None,
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The store, which keeps only each key's newest committed version ([`MemStore::newest_only`]).
    pub fn store(&self) -> &MemStore {
        &self.store
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    pub fn prepare(&self, sql: &str) -> Result<std::sync::Arc<Prepared>> {
        self.engine.prepare(&self.catalog, sql)
    }

    /// Runs one statement without parameters.
    pub fn execute(&mut self, sql: &str) -> Result<Output> {
        self.execute_with(sql, &[]).map(|e| e.output)
    }

    /// Runs one statement with `$n` parameters, returning the full execution record.
    pub fn execute_with(&mut self, sql: &str, params: &[Value]) -> Result<Execution> {
        let prepared = self.prepare(sql)?;
        self.execute_prepared(&prepared, params)
    }

    /// Runs a prepared statement and applies its effects.
    pub fn execute_prepared(&mut self, prepared: &Prepared, params: &[Value]) -> Result<Execution> {
        let empty = WriteSet::default();
        // setval settings applied for this statement; each run may ask for one more.
        let mut sets: Vec<(String, SequenceSet)> = Vec::new();
        let (execution, inputs) = loop {
            let inputs = self.sequence_inputs(prepared, &sets)?;
            let ctx = ExecContext {
                storage: &self.store,
                at: ReadAt::latest_before(pistou_core::Timestamp::at(self.clock + 1)),
                pending: self.transaction.as_ref().unwrap_or(&empty),
                sequences: &inputs,
                random_seed: crate::uuid::statement_seed(&[0; 32], &self.statements.to_le_bytes()),
                lastval: self.lastval.as_ref(),
            };
            self.statements += 1;
            match self.engine.execute(&self.catalog, prepared, params, &ctx) {
                Ok(e) => break (e, inputs),
                Err(e) if e.state == SqlState::SequenceValuesNeeded => return Err(self.sequence_limit(&e.message)),
                Err(e) => match SequenceSet::requested(&e) {
                    Some((name, set)) if sets.len() <= MAX_STATEMENT_SEQUENCES => {
                        self.apply_sequence_set(&name, set)?;
                        sets.retain(|(n, _)| *n != name);
                        sets.push((name, set));
                    }
                    Some(_) => {
                        return err(SqlState::ProgramLimitExceeded, "a statement asked for too many setval settings")
                    }
                    None => return Err(e),
                },
            }
        };
        self.sequences_drawn(&inputs, &execution.sequences_used);
        self.lastval = execution.lastval.clone();
        match &execution.output {
            Output::Catalog(Some(change)) => self.apply_catalog_change(change)?,
            Output::Transaction(t) => self.transaction_control(*t)?,
            _ => {}
        }
        if !execution.writes.is_empty() {
            match &mut self.transaction {
                Some(buffer) => buffer.merge(execution.writes.clone()),
                None => self.commit_writes(&execution.writes)?,
            }
        }
        Ok(execution)
    }

    /// `setval`: the sequence's counter and, for `is_called`, its currval, at once (not
    /// transactional, as in PostgreSQL).
    fn apply_sequence_set(&mut self, name: &str, set: SequenceSet) -> Result<()> {
        let Some(schema) = self.catalog.sequence(name) else {
            return err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist"));
        };
        let next = schema.counter_after(set)?;
        let state = self.sequences.entry(name.to_string()).or_default();
        if state.id != schema.id {
            *state = SequenceState { id: schema.id, ..SequenceState::default() };
        }
        state.next = Some(next);
        if set.is_called {
            state.current = Some(set.value);
            if let Some(last) = self.lastval.as_mut().filter(|l| l.sequence == name) {
                last.value = set.value;
            }
        }
        Ok(())
    }

    /// A block of each sequence the statement names (empty once a sequence is used up), with
    /// the settings applied for its setval calls.
    fn sequence_inputs(&self, prepared: &Prepared, sets: &[(String, SequenceSet)]) -> Result<Vec<SequenceInput>> {
        let mut inputs = Vec::new();
        for name in prepared.sequences() {
            let Some(schema) = self.catalog.sequence(name) else {
                return err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist"));
            };
            let state = self.sequences.get(name).filter(|s| s.id == schema.id).cloned().unwrap_or_default();
            let values = match schema.block(state.next, SEQUENCE_BLOCK) {
                Ok((block, _)) => block,
                Err(_) => SequenceBlock { first: 0, increment: schema.increment, count: 0 },
            };
            let set = sets.iter().find(|(n, _)| n == name).map(|(_, set)| *set);
            inputs.push(SequenceInput { sequence: name.clone(), values, current: state.current, set });
        }
        Ok(inputs)
    }

    /// The error of a statement that drew past the end of `sequence`.
    fn sequence_limit(&self, sequence: &str) -> crate::SqlError {
        let state = self.sequences.get(sequence).and_then(|s| s.next);
        match self.catalog.sequence(sequence).map(|s| s.block(state, SEQUENCE_BLOCK + 1)) {
            Some(Err(e)) => e,
            _ => crate::SqlError::new(SqlState::ProgramLimitExceeded, "a statement drew too many sequence values"),
        }
    }

    fn sequences_drawn(&mut self, inputs: &[SequenceInput], used: &[u64]) {
        for (input, &n) in inputs.iter().zip(used).filter(|(_, n)| **n > 0) {
            let Some(schema) = self.catalog.sequence(&input.sequence) else { continue };
            let state = self.sequences.entry(input.sequence.clone()).or_default();
            if state.id != schema.id {
                *state = SequenceState { id: schema.id, ..SequenceState::default() };
            }
            state.current = input.values.value(n - 1);
            state.next = Some(input.values.first as i128 + n as i128 * input.values.increment as i128);
        }
    }

    fn commit_writes(&mut self, writes: &WriteSet) -> Result<()> {
        self.clock += 1;
        self.store.apply_writes(
            &self.catalog,
            writes,
            Version { ts: pistou_core::Timestamp::at(self.clock), prepared_by: None },
        )
    }

    fn transaction_control(&mut self, t: TxnControl) -> Result<()> {
        match t {
            TxnControl::Begin if self.transaction.is_some() => {
                err(SqlState::ActiveSqlTransaction, "there is already a transaction in progress")
            }
            TxnControl::Begin => {
                self.transaction = Some(WriteSet::default());
                Ok(())
            }
            TxnControl::Commit => match self.transaction.take() {
                Some(writes) if !writes.is_empty() => self.commit_writes(&writes),
                Some(_) => Ok(()),
                None => err(SqlState::NoActiveSqlTransaction, "there is no transaction in progress"),
            },
            TxnControl::Rollback => match self.transaction.take() {
                Some(_) => Ok(()),
                None => err(SqlState::NoActiveSqlTransaction, "there is no transaction in progress"),
            },
        }
    }

    /// Applies DDL to the catalog and the store; a new unique index must hold on existing rows.
    pub fn apply_catalog_change(&mut self, change: &CatalogChange) -> Result<()> {
        if self.transaction.is_some() {
            return err(SqlState::FeatureNotSupported, "DDL inside a transaction block is not supported");
        }
        let mut next = self.catalog.clone();
        next.apply(change, &crate::EngineRules)?;
        // Constraints ALTER TABLE adds must hold on the existing rows.
        for (query, violation) in crate::constraints::validation_queries(&self.catalog, change) {
            let at = ReadAt::latest_before(pistou_core::Timestamp::at(self.clock + 1));
            let empty = WriteSet::default();
            let ctx = crate::engine::ExecContext {
                storage: &self.store,
                at,
                pending: &empty,
                sequences: &[],
                random_seed: [0; 32],
                lastval: None,
            };
            match self.engine.run(&self.catalog, &query, &[], &ctx)?.output {
                crate::engine::Output::Rows { rows, .. } if !rows.is_empty() => return Err(violation),
                _ => {}
            }
        }
        if let CatalogChange::CreateIndex { table, index } | CatalogChange::AddPrimaryKey { table, index } = change {
            let primary = matches!(change, CatalogChange::AddPrimaryKey { .. });
            // Existing rows must have a value for each expression (as PostgreSQL's index
            // build computes them) and, for a unique index, distinct keys.
            if index.unique || !index.expressions.is_empty() {
                if let Some(schema) = next.table(table) {
                    let rows = self.store.scan(
                        schema,
                        &KeyRange::all(),
                        &ReadAt::latest_before(pistou_core::Timestamp::at(self.clock + 1)),
                        usize::MAX,
                    )?;
                    let mut seen = BTreeSet::new();
                    let mut null_column: Option<usize> = None;
                    for r in rows {
                        let values = schema.index_values(index, &r.row)?;
                        if !index.unique {
                            continue;
                        }
                        // As in PostgreSQL, duplicates are reported before NULLs.
                        if primary && null_column.is_none() {
                            null_column =
                                index.columns.iter().copied().find(|c| r.row.get(*c).is_none_or(Value::is_null));
                        }
                        if values.iter().any(|v| v.is_null()) {
                            continue;
                        }
                        if !seen.insert(schema.index_key(index, &r.row)) {
                            return err(
                                SqlState::UniqueViolation,
                                format!("could not create unique index \"{}\"", index.name),
                            );
                        }
                    }
                    if let Some(c) = null_column {
                        let column = schema.columns.get(c).map(|c| c.name.as_str()).unwrap_or("?");
                        return err(
                            SqlState::NotNullViolation,
                            format!("column \"{column}\" of relation \"{table}\" contains null values"),
                        );
                    }
                }
            }
        }
        self.store.apply_catalog_change(&self.catalog, &next, change);
        if let CatalogChange::RenameSequence { sequence, to } = change {
            // Its counter, currval and lastval go with it, as in PostgreSQL.
            if let Some(state) = self.sequences.remove(sequence) {
                self.sequences.insert(to.clone(), state);
            }
            if let Some(last) = self.lastval.as_mut().filter(|l| l.sequence == *sequence) {
                last.sequence = to.clone();
            }
        }
        self.catalog = next;
        Ok(())
    }
}
