//! Sequence values at the client (`pistou_sql::sequence`): a statement naming sequences
//! takes one block of each from this client's cache; what it did not draw goes back once
//! it succeeds, and the whole block if it failed only to run again with more values or a
//! setval setting applied. Concurrent statements never share a block, so no two draw the
//! same value. A statement that fails otherwise keeps its blocks (their values may have
//! been drawn: a gap, as a rolled-back nextval leaves in PostgreSQL). A setval the client
//! applies drops the cached blocks of its sequence, and blocks taken before it do not come
//! back: later values follow the setting.

use super::{sql_err, Statement, TakenBlock};
use crate::coordinator::{Coordinator, TxnHandle};
use pistou_sql::{Catalog, Prepared, SequenceBlock, SequenceInput, SequenceSet, SessionSequences, SqlError, SqlState};

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
        // The session's currvals are kept by storage name, which a sequence keeps when renamed.
        let currents: Vec<Option<i64>> = prepared
            .sequences()
            .iter()
            .map(|name| catalog.sequence(name).and_then(|s| state.session_sequences.currval.get(s.storage_name())))
            .map(|v| v.copied())
            .collect();
        let sets: Vec<Option<SequenceSet>> = prepared
            .sequences()
            .iter()
            .map(|name| stmt.sequence_sets.iter().find(|(n, _)| n == name).map(|(_, set)| *set))
            .collect();
        let mut taken: Vec<TakenBlock> = Vec::with_capacity(prepared.sequences().len());
        for ((name, current), set) in prepared.sequences().iter().zip(currents).zip(sets) {
            let Some(schema) = catalog.sequence(name) else {
                self.return_blocks(taken);
                return Err(sql_err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")));
            };
            let cached = (name.clone(), schema.id);
            let block = if prepared.sequences_set().contains(name) {
                Some(SequenceBlock { first: schema.start, increment: schema.increment, count: 0 })
            } else {
                self.sequence_cache.get_mut(&cached).and_then(Vec::pop)
            };
            let Some(values) = block else {
                self.return_blocks(taken);
                return Err(sql_err(SqlState::SequenceValuesNeeded, name.clone()));
            };
            let generation = self.sequence_generations.get(&cached).copied().unwrap_or(0);
            let input = SequenceInput { sequence: name.clone(), values, current, set };
            let storage_name = schema.storage_name().to_string();
            taken.push(TakenBlock { id: schema.id, generation, input, storage_name });
        }
        if let Some(stmt) = self.sql_state(h).and_then(|s| s.statement.as_mut()) {
            stmt.sequences = Some(taken);
        }
        Ok(())
    }

    /// Puts blocks back into the cache, unless a setval of their sequence came since they
    /// were taken.
    fn return_blocks(&mut self, blocks: Vec<TakenBlock>) {
        for taken in blocks {
            let cached = (taken.input.sequence, taken.id);
            if self.sequence_generations.get(&cached).copied().unwrap_or(0) == taken.generation {
                self.add_sequence_values(&cached.0, cached.1, taken.input.values);
            }
        }
    }

    /// The client wrote a setval of sequence `name` (identity `id`) to its counter: the
    /// values cached before it are not handed out any more.
    pub fn sequence_set_applied(&mut self, name: &str, id: u64) {
        let cached = (name.to_string(), id);
        self.sequence_cache.remove(&cached);
        *self.sequence_generations.entry(cached).or_default() += 1;
    }

    /// The setval settings applied for the next statement of `h`, which it returns and
    /// every replica then returns too (`pistou_sql::sequence`).
    pub fn set_sequence_sets(&mut self, h: TxnHandle, sets: Vec<(String, SequenceSet)>) {
        if let Some(t) = self.txns.get_mut(&h) {
            t.sql.get_or_insert_with(Box::default).sequence_sets = sets;
        }
    }

    /// The session's currval of each sequence, for the statements of `h` (a session's
    /// currval outlives its transactions; the caller carries it between them).
    pub fn set_session_sequences(&mut self, h: TxnHandle, currents: SessionSequences) {
        if let Some(t) = self.txns.get_mut(&h) {
            t.sql.get_or_insert_with(Box::default).session_sequences = currents;
        }
    }

    /// currval of each sequence as the statements of `h` left it.
    pub fn session_sequences(&self, h: TxnHandle) -> SessionSequences {
        self.txns.get(&h).and_then(|t| t.sql.as_ref()).map(|s| s.session_sequences.clone()).unwrap_or_default()
    }

    /// Values of sequence `name` (identity `id`) taken from its counter, for later statements.
    pub fn add_sequence_values(&mut self, name: &str, id: u64, block: SequenceBlock) {
        if block.count > 0 {
            self.sequence_cache.entry((name.to_string(), id)).or_default().push(block);
        }
    }

    /// The statement of `h` failed only to run again with more values or a setting applied:
    /// its blocks go back whole, as nothing it computed is kept.
    pub(super) fn sequences_retried(&mut self, stmt: Statement) {
        self.return_blocks(stmt.sequences.unwrap_or_default());
    }

    /// The statement of `h` succeeded: the values it did not draw go back to the cache, and
    /// the last one it drew of each sequence (or set, with is_called) is the transaction's
    /// currval; its lastval is the session's.
    pub(super) fn sequences_drawn(&mut self, h: TxnHandle, stmt: Statement) {
        if let (Some(lastval), Some(state)) = (stmt.lastval_after.clone(), self.sql_state(h)) {
            state.session_sequences.lastval = Some(lastval);
        }
        let (Some(taken), Some(used)) = (stmt.sequences, stmt.sequences_used) else { return };
        let mut unused = Vec::with_capacity(taken.len());
        for (mut t, n) in taken.into_iter().zip(used) {
            let current = match (n, t.input.set) {
                (0, Some(set)) if set.is_called => Some(set.value),
                (0, _) => None,
                (n, _) => t.input.values.value(n - 1),
            };
            if let (Some(v), Some(state)) = (current, self.sql_state(h)) {
                state.session_sequences.currval.insert(t.storage_name.clone(), v);
            }
            t.input.values = t.input.values.skip(n);
            unused.push(t);
        }
        self.return_blocks(unused);
    }
}
