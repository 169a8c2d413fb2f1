//! Sequence values at the client (`pistou_sql::sequence`): a statement naming sequences
//! takes one block of each from this client's cache; what it did not draw goes back once
//! it succeeds. Concurrent statements never share a block, so no two draw the same value.
//! A statement that fails keeps its blocks (their values may have been drawn: a gap, as a
//! rolled-back nextval leaves in PostgreSQL).

use super::{sql_err, Statement};
use crate::coordinator::{Coordinator, TxnHandle};
use pistou_sql::{Catalog, Prepared, SequenceBlock, SequenceInput, SqlError, SqlState};
use std::collections::BTreeMap;

impl Coordinator {
    /// Takes a block of each sequence `prepared` names for the statement of `h`. Fails with
    /// `SequenceValuesNeeded` (naming the sequence) when the cache has none: the caller takes
    /// a block from the sequence's counter ([`Coordinator::add_sequence_values`]) and runs
    /// the statement again.
    pub(super) fn take_sequence_values(
        &mut self,
        h: TxnHandle,
        catalog: &Catalog,
        prepared: &Prepared,
    ) -> Result<(), SqlError> {
        if prepared.sequences().is_empty() {
            return Ok(());
        }
        let Some(state) = self.sql_state(h) else { return Ok(()) };
        let Some(stmt) = state.statement.as_ref() else { return Ok(()) };
        if stmt.sequences.is_some() {
            return Ok(());
        }
        let currents: Vec<Option<i64>> =
            prepared.sequences().iter().map(|name| state.sequence_currents.get(name).copied()).collect();
        let mut taken: Vec<(u64, SequenceInput)> = Vec::with_capacity(prepared.sequences().len());
        for (name, current) in prepared.sequences().iter().zip(currents) {
            let Some(schema) = catalog.sequence(name) else {
                self.return_blocks(taken);
                return Err(sql_err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")));
            };
            let block = self.sequence_cache.get_mut(&(name.clone(), schema.id)).and_then(Vec::pop);
            let Some(values) = block else {
                self.return_blocks(taken);
                return Err(sql_err(SqlState::SequenceValuesNeeded, name.clone()));
            };
            taken.push((schema.id, SequenceInput { sequence: name.clone(), values, current }));
        }
        if let Some(stmt) = self.sql_state(h).and_then(|s| s.statement.as_mut()) {
            stmt.sequences = Some(taken);
        }
        Ok(())
    }

    fn return_blocks(&mut self, blocks: Vec<(u64, SequenceInput)>) {
        for (id, input) in blocks {
            self.add_sequence_values(&input.sequence, id, input.values);
        }
    }

    /// The session's currval of each sequence, for the statements of `h` (a session's
    /// currval outlives its transactions; the caller carries it between them).
    pub fn set_sequence_currents(&mut self, h: TxnHandle, currents: BTreeMap<String, i64>) {
        if let Some(t) = self.txns.get_mut(&h) {
            t.sql.get_or_insert_with(Box::default).sequence_currents = currents;
        }
    }

    /// currval of each sequence as the statements of `h` left it.
    pub fn sequence_currents(&self, h: TxnHandle) -> BTreeMap<String, i64> {
        self.txns.get(&h).and_then(|t| t.sql.as_ref()).map(|s| s.sequence_currents.clone()).unwrap_or_default()
    }

    /// Values of sequence `name` (identity `id`) taken from its counter, for later statements.
    pub fn add_sequence_values(&mut self, name: &str, id: u64, block: SequenceBlock) {
        if block.count > 0 {
            self.sequence_cache.entry((name.to_string(), id)).or_default().push(block);
        }
    }

    /// The statement of `h` succeeded: the values it did not draw go back to the cache, and
    /// the last one it drew of each sequence is the transaction's currval.
    pub(super) fn sequences_drawn(&mut self, h: TxnHandle, stmt: Statement) {
        let (Some(inputs), Some(used)) = (stmt.sequences, stmt.sequences_used) else { return };
        for ((id, input), n) in inputs.into_iter().zip(used) {
            if n > 0 {
                if let (Some(v), Some(state)) = (input.values.value(n - 1), self.sql_state(h)) {
                    state.sequence_currents.insert(input.sequence.clone(), v);
                }
            }
            self.add_sequence_values(&input.sequence, id, input.values.skip(n));
        }
    }
}
