//! The engine's read interface ([`pistou_types::Storage`]) over the store.

use crate::chain::{Chain, StoredVersion};
use crate::refs::version_of;
use crate::store::RowStore;
use crate::table::Table;
use pistou_core::Timestamp;
use pistou_types::error::Result;
use pistou_types::{
    IndexSchema, KeyRange, ReadAt, Row, RowRef, SqlError, SqlState, Storage, StoredRow, TableSchema, Value, Visitor,
};
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
        self.tables
            .get(name)
            .map(|t| &**t)
            .ok_or_else(|| SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
    }
}

fn too_old() -> SqlError {
    SqlError::new(
        SqlState::SnapshotTooOld,
        "snapshot too old: versions this read needs were garbage-collected; retry the transaction",
    )
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

/// Lends the stored row to `visit`, padded to the reader's schema if needed (stored rows are
/// padded at ADD COLUMN already; this covers a reader whose schema is newer than the store's).
fn lend(schema: &TableSchema, key: &[u8], version: &StoredVersion, row: &Row, visit: &mut Visitor<'_>) -> Result<bool> {
    let version = version.sql_version();
    match schema.columns.get(row.len()..).filter(|missing| !missing.is_empty()) {
        None => visit(RowRef { key, version, row }),
        Some(missing) => {
            let mut padded = row.clone();
            padded.extend(missing.iter().map(|c| c.default.clone().unwrap_or(Value::Null)));
            visit(RowRef { key, version, row: &padded })
        }
    }
}

/// Collects a visiting scan's rows (the copying interface).
fn collect_rows(scan: impl FnOnce(&mut Visitor<'_>) -> Result<()>) -> Result<Vec<StoredRow>> {
    let mut out = Vec::new();
    scan(&mut |r: RowRef<'_>| {
        out.push(StoredRow { key: r.key.to_vec(), version: r.version, row: r.row.to_vec() });
        Ok(true)
    })?;
    Ok(out)
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
        collect_rows(|visit| self.visit_scan(table, range, at, limit, visit))
    }

    fn index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
    ) -> Result<Vec<StoredRow>> {
        collect_rows(|visit| self.visit_index_scan(table, index, range, at, limit, visit))
    }

    fn visit_scan(
        &self,
        table: &TableSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        self.check_watermark(at)?;
        let t = self.sql_table(table.storage_name())?;
        // `BTreeMap::range` panics on inverted ranges; `is_empty` covers every such case.
        if range.is_empty() {
            return Ok(());
        }
        // A primary-key equality (`id = $1`, or `id >= $1 AND id <= $1`) is one lookup:
        // a bounded `range` descends the tree comparing against both bounds.
        if let Some(key) = range.single_key() {
            let Some((key, chain)) = t.rows.get_key_value(key).filter(|_| limit > 0) else { return Ok(()) };
            readable(chain, at)?;
            if let Some((v, row)) = visible(chain, at) {
                lend(table, key, v, row, visit)?;
            }
            return Ok(());
        }
        let bounds = (as_slice(&range.start), as_slice(&range.end));
        let mut left = limit;
        for (key, chain) in t.rows.range::<[u8], _>(bounds) {
            if left == 0 {
                break;
            }
            readable(chain, at)?;
            if let Some((v, row)) = visible(chain, at) {
                left -= 1;
                if !lend(table, key, v, row, visit)? {
                    break;
                }
            }
        }
        Ok(())
    }

    fn visit_index_scan(
        &self,
        table: &TableSchema,
        index: &IndexSchema,
        range: &KeyRange,
        at: &ReadAt,
        limit: usize,
        visit: &mut Visitor<'_>,
    ) -> Result<()> {
        self.check_watermark(at)?;
        let t = self.sql_table(table.storage_name())?;
        let Some(entries) = t.index(&index.name) else {
            return Err(SqlError::new(SqlState::UndefinedObject, format!("index \"{}\" does not exist", index.name)));
        };
        if range.is_empty() {
            return Ok(());
        }
        // An entry may belong to any version of its key; the row is reported only at the
        // entry matching its visible version, so each key appears at most once and the output
        // is in (index key, primary key) order.
        let mut left = limit;
        let mut visible_key = Vec::new();
        for (index_key, pk) in entries.range(range) {
            if left == 0 {
                break;
            }
            let Some(chain) = t.rows.get(pk) else { continue };
            readable(chain, at)?;
            if let Some((version, row)) = visible(chain, at) {
                visible_key.clear();
                table.write_index_key(index, row, &mut visible_key);
                if visible_key == index_key {
                    left -= 1;
                    if !lend(table, pk, version, row, visit)? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn table_version(&self, table: &TableSchema, at: &ReadAt) -> Option<Timestamp> {
        // Only writes the reader may see: a version it cannot see is not one it has read past.
        self.tables
            .get(table.storage_name())?
            .log
            .newest_below(at.ts, |ts, writer, w| (at.visible)(&version_of(ts, writer, w.state)))
    }
}
