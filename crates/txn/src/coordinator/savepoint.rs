//! SAVEPOINT, RELEASE and ROLLBACK TO for a transaction's buffered writes. A savepoint
//! copies the writes buffered so far, Basil's and Pesto's; rolling back to it puts the copy
//! back. Reads made since stay in the read set (and predicates in PredSet): validating more
//! reads than the application kept is still serializable, and it did see their results.

use super::sql::PendingDdl;
use super::{Coordinator, TxnError, TxnHandle};
use pistou_core::{Key, Value};
use pistou_sql::WriteSet;
use std::collections::BTreeMap;

/// Buffered writes a transaction's savepoints may copy in total: a savepoint copies every
/// write buffered before it, and a client must not make that cost unbounded.
pub const MAX_SAVEPOINT_WRITES: usize = 1 << 18;

/// A savepoint's copy of the buffered writes.
pub(super) struct WritesCopy {
    writes: BTreeMap<Key, Option<Value>>,
    /// The SQL row writes and the buffered schema changes (`None`: no SQL yet).
    sql: Option<(WriteSet, Option<PendingDdl>)>,
}

impl WritesCopy {
    fn size(&self) -> usize {
        self.writes.len() + self.sql.as_ref().map_or(0, |(pending, _)| pending.len())
    }
}

/// What to do with a transaction's savepoints, numbered from 0 (the oldest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavepointOp {
    /// A new savepoint after the existing ones.
    Push,
    /// Forget savepoint `depth` and every later one; the writes since stay.
    Release { depth: usize },
    /// Restore the writes as they were at savepoint `depth`, which stays; later ones go.
    RollbackTo { depth: usize },
}

impl Coordinator {
    /// Applies `op` to `h`'s savepoints. Fails with `Busy` while a SQL statement runs, and
    /// with `TooManyOps` once the copies would exceed [`MAX_SAVEPOINT_WRITES`] writes.
    pub fn savepoint(&mut self, h: TxnHandle, op: SavepointOp) -> Result<(), TxnError> {
        let t = self.executing(h)?;
        if t.sql.as_ref().is_some_and(|s| s.busy()) {
            return Err(TxnError::Busy);
        }
        match op {
            SavepointOp::Push => {
                let copy = WritesCopy {
                    writes: t.writes.clone(),
                    sql: t.sql.as_ref().map(|s| (s.pending.clone(), s.ddl.clone())),
                };
                let held: usize = t.savepoints.iter().map(WritesCopy::size).sum();
                if held + copy.size() > MAX_SAVEPOINT_WRITES {
                    return Err(TxnError::TooManyOps);
                }
                t.savepoints.push(copy);
            }
            SavepointOp::Release { depth } => t.savepoints.truncate(depth),
            SavepointOp::RollbackTo { depth } => {
                let Some(copy) = t.savepoints.get(depth) else { return Err(TxnError::UnknownTxn) };
                t.writes = copy.writes.clone();
                if let Some(sql) = t.sql.as_mut() {
                    let (pending, ddl) = copy.sql.clone().unwrap_or_default();
                    sql.pending = pending;
                    sql.ddl = ddl;
                }
                t.savepoints.truncate(depth + 1);
            }
        }
        Ok(())
    }
}
