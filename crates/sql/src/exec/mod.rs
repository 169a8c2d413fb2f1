//! Executes plans over a storage snapshot overlaid with pending writes, producing results, a
//! read report and a write set. Nothing here mutates storage.

mod aggregate;
mod dml;
mod query;

pub(crate) use query::Exec;
use aggregate::{compare_rows, set_operation};

use crate::catalog::TableSchema;
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{CmpOp, Env, Expr, Predicate, SubqueryValue};
use crate::keycode::{encode_key, encode_value, prefix_successor};
use crate::plan::*;
use crate::report::{Access, ReadReport, ReadRow, ScanRead};
use crate::storage::{KeyRange, ReadAt, Storage, StoredRow, Write, WriteSet};
use crate::types::{arith, as_decimal, equality_key, exact_cast, push_equality_key, to_column, total_cmp, ArithOp, Row, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// The state a statement reads: storage at a snapshot plus the caller's pending writes.
pub(crate) struct Reader<'a> {
    pub storage: &'a dyn Storage,
    pub at: ReadAt<'a>,
    pub pending: &'a WriteSet,
    pub max_rows: usize,
    /// Rows read from storage so far by this statement (bounded: per-row scans of joins and
    /// correlated subqueries multiply).
    pub rows_read: std::cell::Cell<usize>,
}

fn too_many_rows(max: usize) -> SqlError {
    SqlError::new(
        SqlState::ProgramLimitExceeded,
        format!("statement produced more than {max} intermediate rows (raise Limits::max_rows)"),
    )
}

/// A row seen through the overlay; `own` marks rows coming from pending or statement writes.
struct SeenRow {
    row: StoredRow,
    own: bool,
}

impl Reader<'_> {
    fn check_rows(&self, n: usize) -> Result<()> {
        if n > self.max_rows {
            return Err(too_many_rows(self.max_rows));
        }
        Ok(())
    }

    /// Rows in `range` of `path`, storage overlaid with `pending` then `local` writes.
    /// Also returns whether storage itself had any row in range (before masking).
    fn overlay(&self, local: &WriteSet, table: &TableSchema, path: &Path, range: &KeyRange) -> Result<(Vec<SeenRow>, bool)> {
        let stored = match path {
            Path::PrimaryKey => self.storage.scan(table, range, &self.at, self.max_rows.saturating_add(1))?,
            Path::Index(i) => {
                let index = table.indexes.get(*i).ok_or_else(|| SqlError::new(SqlState::InternalError, "index position out of range"))?;
                self.storage.index_scan(table, index, range, &self.at, self.max_rows.saturating_add(1))?
            }
        };
        self.check_rows(stored.len())?;
        let total = self.rows_read.get().saturating_add(stored.len()).saturating_add(1);
        self.rows_read.set(total);
        if total / JOIN_WORK_PER_ROW > self.max_rows {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("statement reads more than {} rows in total (raise Limits::max_rows)", self.max_rows.saturating_mul(JOIN_WORK_PER_ROW)),
            );
        }
        let storage_hit = !stored.is_empty();
        let layers: Vec<&BTreeMap<Vec<u8>, Write>> =
            [self.pending, local].iter().filter_map(|ws| ws.tables.get(&table.name)).filter(|l| !l.is_empty()).collect();
        if layers.is_empty() || range.is_empty() {
            return Ok((stored.into_iter().map(|row| SeenRow { row, own: false }).collect(), storage_hit));
        }
        let written = |key: &[u8]| layers.iter().any(|l| l.contains_key(key));
        let mut rows: Vec<SeenRow> = stored.into_iter().filter(|r| !written(&r.key)).map(|row| SeenRow { row, own: false }).collect();
        // Later layers win; primary-key paths only look at writes inside the key range.
        let mut own: BTreeMap<&Vec<u8>, &Row> = BTreeMap::new();
        for layer in &layers {
            let writes: Box<dyn Iterator<Item = (&Vec<u8>, &Write)>> = match path {
                Path::PrimaryKey => Box::new(layer.range::<Vec<u8>, _>((range.start.as_ref(), range.end.as_ref()))),
                Path::Index(_) => Box::new(layer.iter()),
            };
            for (key, write) in writes {
                match write {
                    Write::Upsert(row) => own.insert(key, row),
                    Write::Delete => own.remove(key),
                };
            }
        }
        let in_range = |key: &[u8], row: &Row| match path {
            Path::PrimaryKey => range.contains(key),
            Path::Index(i) => table.indexes.get(*i).is_some_and(|ix| range.contains(&table.index_key(ix, row))),
        };
        let version = crate::storage::Version { ts: self.at.ts, prepared_by: None };
        rows.extend(own.into_iter().filter(|(k, r)| in_range(k, r)).map(|(key, row)| SeenRow {
            row: StoredRow { key: key.clone(), version, row: row.clone() },
            own: true,
        }));
        match path {
            Path::PrimaryKey => rows.sort_by(|a, b| a.row.key.cmp(&b.row.key)),
            Path::Index(i) => {
                if let Some(ix) = table.indexes.get(*i) {
                    rows.sort_by_cached_key(|r| (table.index_key(ix, &r.row.row), r.row.key.clone()));
                }
            }
        }
        self.check_rows(rows.len())?;
        Ok((rows, storage_hit))
    }

    /// Runs one scan: computes its key range, reads through the overlay, applies the filter
    /// and records the scan in `reads`. Returns the (key, row) pairs that passed the filter.
    pub fn scan(&self, local: &WriteSet, scan: &ScanPlan, env: &Env, reads: &mut ReadReport) -> Result<Vec<(Vec<u8>, Row)>> {
        let table = &scan.table;
        let access = &scan.access;
        let key_cols = access.key_columns(table);
        let predicate = scan.filter.instantiate(env)?;
        let point = access.is_point(table);
        let ranges = key_ranges(table, access, key_cols, env)?;
        let mut seen = Vec::new();
        let mut storage_hit = false;
        for r in &ranges {
            let (rows, hit) = self.overlay(local, table, &access.path, r)?;
            seen.extend(rows);
            storage_hit |= hit;
            self.check_rows(seen.len())?;
        }
        let closed = Env::default();
        let mut out = Vec::new();
        let mut active = Vec::new();
        for SeenRow { row, own } in seen {
            let pass = predicate.passes(&row.row, &closed)?;
            if !own && (pass || point) {
                active.push(ReadRow { key: row.key.clone(), version: row.version });
            }
            if pass {
                out.push((row.key, row.row));
            }
        }
        let absent_key = match ranges.as_slice() {
            [KeyRange { start: Bound::Included(key), .. }] if point && !storage_hit => {
                let own_write = [self.pending, local].iter().any(|ws| ws.get(&table.name, key).is_some());
                (!own_write).then(|| key.clone())
            }
            _ => None,
        };
        let access_kind = match (&access.path, point) {
            (_, true) => Access::Point,
            (Path::PrimaryKey, false) if access.eq.is_empty() && access.any_of.is_empty() && access.lower.is_none() && access.upper.is_none() => {
                Access::Full
            }
            (Path::PrimaryKey, false) => Access::PkRange,
            (Path::Index(i), false) => Access::Index(table.indexes.get(*i).map(|x| x.name.clone()).unwrap_or_default()),
        };
        reads.scans.push(ScanRead {
            access: access_kind,
            predicate: Predicate { table: table.name.clone(), expr: predicate },
            rows: active,
            absent_key,
            table_version: self.storage.table_version(table, &self.at),
        });
        Ok(out)
    }
}

/// An encoded range bound and whether it is inclusive.
type EncodedBound = (Vec<u8>, bool);

/// Encoded value of `e` as a key of column type `ty`; None when no key can equal it (NULL, or
/// not exactly representable in the column type).
fn key_value(e: &Expr, ty: Option<crate::types::SqlType>, env: &Env) -> Result<Option<Vec<u8>>> {
    let v = e.eval(&[], env)?;
    Ok(ty.and_then(|t| exact_cast(&v, t)).filter(|v| !v.is_null()).map(|v| encode_key([&v])))
}

/// Encoded equality prefix of an access; None when no row can match.
fn eq_prefix(table: &TableSchema, access: &KeyAccess, key_cols: &[usize], env: &Env) -> Result<Option<Vec<u8>>> {
    let mut prefix = Vec::new();
    for (e, col) in access.eq.iter().zip(key_cols) {
        match key_value(e, table.columns.get(*col).map(|c| c.ty), env)? {
            Some(k) => prefix.extend(k),
            None => return Ok(None),
        }
    }
    Ok(Some(prefix))
}

/// Key ranges of an access, sorted and disjoint: one per distinct IN value, else at most one.
fn key_ranges(table: &TableSchema, access: &KeyAccess, key_cols: &[usize], env: &Env) -> Result<Vec<KeyRange>> {
    if access.any_of.is_empty() {
        return Ok(key_range(table, access, key_cols, env)?.into_iter().collect());
    }
    let Some(prefix) = eq_prefix(table, access, key_cols, env)? else { return Ok(Vec::new()) };
    let ty = key_cols.get(access.eq.len()).and_then(|c| table.columns.get(*c)).map(|c| c.ty);
    let completes_key = access.path == Path::PrimaryKey && access.eq.len() + 1 == key_cols.len();
    let mut keys = BTreeSet::new();
    for e in &access.any_of {
        if let Some(v) = key_value(e, ty, env)? {
            let mut key = prefix.clone();
            key.extend(v);
            keys.insert(key);
        }
    }
    Ok(keys
        .into_iter()
        .map(|key| {
            if completes_key {
                KeyRange::point(key)
            } else {
                let end = prefix_successor(&key).map_or(Bound::Unbounded, Bound::Excluded);
                KeyRange { start: Bound::Included(key), end }
            }
        })
        .collect())
}

/// Key range of an access without an IN list; None when no row can match (a key value is
/// NULL or of a type no key value can equal).
pub(crate) fn key_range(table: &TableSchema, access: &KeyAccess, key_cols: &[usize], env: &Env) -> Result<Option<KeyRange>> {
    let col_type = |c: usize| table.columns.get(c).map(|c| c.ty);
    let Some(prefix) = eq_prefix(table, access, key_cols, env)? else { return Ok(None) };
    let next_type = key_cols.get(access.eq.len()).and_then(|c| col_type(*c));
    // A bound that cannot be encoded exactly is dropped: the filter re-checks every row.
    let bound = |b: &Option<RangeBound>| -> Result<Option<Option<EncodedBound>>> {
        let Some(b) = b else { return Ok(Some(None)) };
        let v = b.expr.eval(&[], env)?;
        if v.is_null() {
            return Ok(None);
        }
        Ok(Some(next_type.and_then(|t| exact_cast(&v, t)).map(|v| {
            let mut key = prefix.clone();
            encode_value(&mut key, &v);
            (key, b.inclusive)
        })))
    };
    let (Some(lower), Some(upper)) = (bound(&access.lower)?, bound(&access.upper)?) else { return Ok(None) };
    let prefix_end = || if prefix.is_empty() { Bound::Unbounded } else { prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded) };
    if access.is_point(table) {
        return Ok(Some(KeyRange::point(prefix)));
    }
    let start = match lower {
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(prefix.clone()),
        Some((key, true)) => Bound::Included(key),
        Some((key, false)) => match prefix_successor(&key) {
            Some(s) => Bound::Included(s),
            None => return Ok(None),
        },
    };
    let end = match upper {
        None => prefix_end(),
        Some((key, true)) => prefix_successor(&key).map_or(Bound::Unbounded, Bound::Excluded),
        Some((key, false)) => Bound::Excluded(key),
    };
    Ok(Some(KeyRange { start, end }))
}

/// Candidate pairs a join may examine, and rows (plus scans) a statement may read, per allowed
/// intermediate row: bounds CPU on statements that examine much but keep little.
const JOIN_WORK_PER_ROW: usize = 64;

/// Equality key of values under SQL `=` (as decided by `total_cmp`): numbers by their f64 and
/// exact decimal images, so 1, 1.0 and 1.00 hash alike; None if any value is NULL.
fn hash_key<'e>(exprs: impl Iterator<Item = &'e Expr>, row: &[Value], env: &Env) -> Result<Option<Vec<u8>>> {
    let mut key = Vec::new();
    for e in exprs {
        let v = e.eval(row, env)?;
        if v.is_null() {
            return Ok(None);
        }
        push_equality_key(&mut key, &v);
    }
    Ok(Some(key))
}

/// Index of right rows by their hash-join key.
fn hash_rows(rows: &[(Vec<u8>, Row)], keys: &[(Expr, Expr)], env: &Env) -> Result<BTreeMap<Vec<u8>, Vec<usize>>> {
    let mut table: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
    for (i, (_, row)) in rows.iter().enumerate() {
        if let Some(k) = hash_key(keys.iter().map(|(_, r)| r), row, env)? {
            table.entry(k).or_default().push(i);
        }
    }
    Ok(table)
}

