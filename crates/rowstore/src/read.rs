//! The engine's read interface ([`pistou_sql::Storage`]) over the store.

use crate::chain::{Chain, StoredVersion};
use crate::refs::version_of;
use crate::store::RowStore;
use crate::table::Table;
use pistou_core::Timestamp;
use pistou_sql::error::Result;
use pistou_sql::{IndexSchema, KeyRange, ReadAt, Row, SqlError, SqlState, Storage, StoredRow, TableSchema, Value};
use std::ops::Bound;

impl RowStore {
    /// Refuses reads below the garbage-collection watermark (App. B.3).
    fn check_watermark(&self, at: &ReadAt) -> Result<()> {
        if at.ts < self.watermark {
            return Err(too_old());
        }
        Ok(())
    }

    fn sql_table(&self, name: &str) -> Result<&Table> {
        self.tables.get(name).ok_or_else(|| SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
    }
}

fn too_old() -> SqlError {
    SqlError::new(SqlState::SnapshotTooOld, "snapshot too old: versions this read needs were garbage-collected; retry the transaction")
}

/// Refuses a read of `chain` that could need a version the per-key cap deleted (App. B.3).
fn readable(chain: &Chain, at: &ReadAt) -> Result<()> {
    if at.ts < chain.cap_floor {
        return Err(too_old());
    }
    Ok(())
}

/// The version a read at `at` sees, if it is a row (deletions and absences read as nothing).
fn visible<'c>(chain: &'c Chain, at: &ReadAt) -> Option<(&'c StoredVersion, &'c Row)> {
    let version = chain.newest_below(at.ts, |v| (at.visible)(&v.sql_version()))?;
    Some((version, version.row.as_deref()?))
}

/// The one copy a read makes: the stored row, padded to the reader's schema (stored rows are
/// padded at ADD COLUMN already; this covers a reader whose schema is newer than the store's).
fn owned_row(schema: &TableSchema, key: &[u8], version: &StoredVersion, row: &Row) -> StoredRow {
    let mut values = Vec::with_capacity(schema.columns.len().max(row.len()));
    values.extend_from_slice(row);
    if let Some(missing) = schema.columns.get(row.len()..) {
        values.extend(missing.iter().map(|c| c.default.clone().unwrap_or(Value::Null)));
    }
    StoredRow { key: key.to_vec(), version: version.sql_version(), row: values }
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(b) => Bound::Included(b.as_slice()),
        Bound::Excluded(b) => Bound::Excluded(b.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Storage for RowStore {
    fn scan(&self, table: &TableSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Result<Vec<StoredRow>> {
        self.check_watermark(at)?;
        let t = self.sql_table(&table.name)?;
        // `BTreeMap::range` panics on inverted ranges; `is_empty` covers every such case.
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let bounds = (as_slice(&range.start), as_slice(&range.end));
        let mut out = Vec::new();
        for (key, chain) in t.rows.range::<[u8], _>(bounds) {
            if out.len() >= limit {
                break;
            }
            readable(chain, at)?;
            if let Some((v, row)) = visible(chain, at) {
                out.push(owned_row(table, key, v, row));
            }
        }
        Ok(out)
    }

    fn index_scan(&self, table: &TableSchema, index: &IndexSchema, range: &KeyRange, at: &ReadAt, limit: usize) -> Result<Vec<StoredRow>> {
        self.check_watermark(at)?;
        let t = self.sql_table(&table.name)?;
        let Some(entries) = t.index(&index.name) else {
            return Err(SqlError::new(SqlState::UndefinedObject, format!("index \"{}\" does not exist", index.name)));
        };
        if range.is_empty() {
            return Ok(Vec::new());
        }
        // An entry may belong to any version of its key; the row is reported only at the
        // entry matching its visible version, so each key appears at most once and the output
        // is in (index key, primary key) order.
        let mut out = Vec::new();
        for (index_key, pk) in entries.range(range) {
            if out.len() >= limit {
                break;
            }
            let Some(chain) = t.rows.get(pk) else { continue };
            readable(chain, at)?;
            if let Some((version, row)) = visible(chain, at) {
                if table.index_key(index, row) == index_key {
                    out.push(owned_row(table, pk, version, row));
                }
            }
        }
        Ok(out)
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp> {
        // Only writes the reader may see: a version it cannot see is not one it has read past.
        self.tables.get(&table.name)?.log.newest_below(at.ts, |ts, writer, w| (at.visible)(&version_of(ts, writer, w.state)))
    }
}
