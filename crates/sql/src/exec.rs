//! Executes plans over a storage snapshot overlaid with pending writes, producing results, a
//! read report and a write set. Nothing here mutates storage.

use crate::catalog::TableSchema;
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{CmpOp, Env, Expr, Predicate, SubqueryValue};
use crate::keycode::{encode_key, encode_value, prefix_successor};
use crate::plan::*;
use crate::report::{Access, ReadReport, ReadRow, ScanRead};
use crate::storage::{KeyRange, ReadAt, Storage, StoredRow, Write, WriteSet};
use crate::types::{arith, as_decimal, assign_cast, check_limits, exact_cast, total_cmp, ArithOp, Row, Value};
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
        match &v {
            Value::Null => return Ok(None),
            Value::Int(_) | Value::Numeric(_) | Value::Float(_) => {
                let f = crate::types::as_f64(&v).unwrap_or(0.0);
                encode_value(&mut key, &Value::Float(f));
                encode_value(&mut key, &Value::Numeric(as_decimal(&v).unwrap_or_default()));
            }
            other => encode_value(&mut key, other),
        }
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

/// Per-statement execution state.
pub(crate) struct Exec<'a> {
    pub reader: Reader<'a>,
    pub params: &'a [Value],
    pub plans: &'a [Subquery],
    pub subqueries: Vec<SubqueryValue>,
    /// The enclosing row while a correlated subquery runs.
    pub outer: Vec<Value>,
    pub reads: ReadReport,
}

impl Exec<'_> {
    fn env(&self) -> Env<'_> {
        Env { params: self.params, subqueries: &self.subqueries, outer: &self.outer }
    }

    /// Runs the statement's uncorrelated subqueries in order (correlated ones get a
    /// placeholder and run per row in `eval_row`).
    pub fn run_subqueries(&mut self) -> Result<()> {
        for sub in self.plans {
            let value = if sub.correlated { SubqueryValue::Exists(false) } else { self.subquery_value(sub)? };
            self.subqueries.push(value);
        }
        Ok(())
    }

    fn subquery_value(&mut self, sub: &Subquery) -> Result<SubqueryValue> {
        let rows = self.query(&sub.plan)?;
        Ok(match sub.kind {
            SubqueryKind::Exists => SubqueryValue::Exists(!rows.is_empty()),
            SubqueryKind::Scalar => match rows.as_slice() {
                [] => SubqueryValue::Scalar(Value::Null),
                [row] => SubqueryValue::Scalar(row.first().cloned().unwrap_or(Value::Null)),
                _ => return err(SqlState::CardinalityViolation, "more than one row returned by a subquery used as an expression"),
            },
            SubqueryKind::List => {
                let mut seen = BTreeSet::new();
                let values = rows
                    .into_iter()
                    .filter_map(|r| r.into_iter().next())
                    .filter(|v| seen.insert(encode_key([v])))
                    .collect();
                SubqueryValue::List(values)
            }
        })
    }

    /// Evaluates `e` on `row`, first running the correlated subqueries it uses with `row` as
    /// their enclosing row (each run reports its own, instantiated scans).
    fn eval_row(&mut self, e: &Expr, row: &[Value]) -> Result<Value> {
        let mut ids = Vec::new();
        subquery_ids(e, &mut ids);
        ids.retain(|i| self.plans.get(*i).is_some_and(|s| s.correlated));
        if ids.is_empty() {
            return e.eval(row, &self.env());
        }
        let enclosing = std::mem::replace(&mut self.outer, row.to_vec());
        let mut values = self.subqueries.clone();
        let mut failure = None;
        for i in ids {
            let Some(sub) = self.plans.get(i) else { continue };
            match self.subquery_value(sub) {
                Ok(v) => {
                    if let Some(slot) = values.get_mut(i) {
                        *slot = v;
                    }
                }
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
        }
        self.outer = enclosing;
        if let Some(err) = failure {
            return Err(err);
        }
        e.eval(row, &Env { params: self.params, subqueries: &values, outer: &self.outer })
    }

    pub fn query(&mut self, q: &QueryPlan) -> Result<Vec<Row>> {
        let mut rows = self.body(&q.body)?;
        if !q.order_by.is_empty() {
            rows.sort_by(|a, b| compare_rows(a, b, &q.order_by));
        }
        let env = self.env();
        let count = |e: &Option<Expr>, what: &str| -> Result<Option<usize>> {
            let Some(e) = e else { return Ok(None) };
            match e.eval(&[], &env)? {
                Value::Null => Ok(None),
                Value::Int(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                other => err(SqlState::InvalidParameterValue, format!("{what} must be a non-negative integer, got {other}")),
            }
        };
        let offset = count(&q.offset, "OFFSET")?.unwrap_or(0);
        let limit = count(&q.limit, "LIMIT")?;
        let width = q.names.len();
        Ok(rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .map(|mut r| {
                r.truncate(width);
                r
            })
            .collect())
    }

    fn body(&mut self, body: &QueryBody) -> Result<Vec<Row>> {
        match body {
            QueryBody::Select(core) => self.select(core),
            QueryBody::Values(rows) => {
                let env = self.env();
                rows.iter().map(|r| r.iter().map(|e| e.eval(&[], &env)).collect()).collect()
            }
            QueryBody::SetOp { op, all, left, right } => {
                let l = self.body(left)?;
                let r = self.body(right)?;
                set_operation(*op, *all, l, r)
            }
        }
    }

    fn select(&mut self, core: &SelectCore) -> Result<Vec<Row>> {
        let mut rows = self.from(&core.from)?;
        if let Some(f) = &core.filter {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if self.eval_row(f, &r)?.truth()? == Some(true) {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        let env = self.env();
        if let Some(agg) = &core.aggregate {
            rows = aggregate(rows, agg, &env)?;
            if let Some(h) = &core.having {
                rows = filter_rows(rows, h, &env)?;
            }
        }
        let mut out: Vec<Row> = Vec::with_capacity(rows.len());
        for r in &rows {
            let projected = core.output.iter().map(|e| self.eval_row(e, r)).collect::<Result<Row>>()?;
            out.push(projected);
        }
        if core.distinct {
            let mut seen = BTreeSet::new();
            out.retain(|r| seen.insert(encode_key(r.iter())));
        }
        Ok(out)
    }

    /// Rows of every derived table in FROM (run before the scans, which borrow `self`).
    fn derived_rows(&mut self, from: &FromPlan) -> Result<Vec<Option<Vec<Row>>>> {
        let scans = from.first.iter().chain(from.joins.iter().map(|j| &j.right));
        let mut out = Vec::new();
        for scan in scans {
            out.push(match &scan.derived {
                Some(q) => Some(self.query(q)?),
                None => None,
            });
        }
        Ok(out)
    }

    /// Rows of one FROM source: a storage scan, or a derived table's rows through its filter.
    fn source(&mut self, scan: &ScanPlan, derived: Option<&Vec<Row>>, env: &Env) -> Result<Vec<(Vec<u8>, Row)>> {
        let empty = WriteSet::default();
        match derived {
            None => self.reader.scan(&empty, scan, env, &mut self.reads),
            Some(rows) => {
                let filter = scan.filter.instantiate(env)?;
                let closed = Env::default();
                let mut out = Vec::new();
                for r in rows {
                    if filter.passes(r, &closed)? {
                        out.push((Vec::new(), r.clone()));
                    }
                }
                Ok(out)
            }
        }
    }

    fn from(&mut self, from: &FromPlan) -> Result<Vec<Row>> {
        let Some(first) = &from.first else { return Ok(vec![Vec::new()]) };
        let derived = self.derived_rows(from)?;
        let derived_of = |i: usize| derived.get(i).and_then(Option::as_ref);
        // The environment borrows subquery values and the enclosing row while scans record
        // into `self.reads`: move them out for the duration of the join.
        let params = self.params;
        let subqueries = std::mem::take(&mut self.subqueries);
        let outer = std::mem::take(&mut self.outer);
        let result = (|| {
            let env = Env { params, subqueries: &subqueries, outer: &outer };
            let mut rows: Vec<Row> = self.source(first, derived_of(0), &env)?.into_iter().map(|(_, r)| r).collect();
            for (step_no, step) in from.joins.iter().enumerate() {
                rows = self.join_step(rows, step, derived_of(step_no + 1), &env)?;
            }
            Ok(rows)
        })();
        self.subqueries = subqueries;
        self.outer = outer;
        result
    }

    fn join_step(&mut self, rows: Vec<Row>, step: &JoinStep, derived: Option<&Vec<Row>>, env: &Env) -> Result<Vec<Row>> {
        let env = *env;
        let right_width = step.right.table.columns.len();
        let shared = if step.per_outer_row { None } else { Some(self.source(&step.right, derived, &env)?) };
        let hashed = match &shared {
            Some(right_rows) if !step.hash_keys.is_empty() => Some(hash_rows(right_rows, &step.hash_keys, &env)?),
            _ => None,
        };
        let mut next = Vec::new();
        let mut pairs = 0usize;
        for left in rows {
            let inner_env = Env { outer: &left, ..env };
            let per_row;
            let candidates: Vec<&(Vec<u8>, Row)> = match (&shared, &hashed) {
                (Some(right_rows), Some(table)) => {
                    let key = hash_key(step.hash_keys.iter().map(|(l, _)| l), &left, &env)?;
                    key.and_then(|k| table.get(&k)).map_or_else(Vec::new, |hits| hits.iter().filter_map(|i| right_rows.get(*i)).collect())
                }
                (Some(right_rows), None) => right_rows.iter().collect(),
                (None, _) => {
                    per_row = self.source(&step.right, derived, &inner_env)?;
                    per_row.iter().collect()
                }
            };
            pairs = pairs.saturating_add(candidates.len());
            if pairs / JOIN_WORK_PER_ROW > self.reader.max_rows {
                return Err(too_many_rows(self.reader.max_rows));
            }
            let mut matched = false;
            for (_, right) in candidates {
                let mut combined = left.clone();
                combined.extend(right.iter().cloned());
                if let Some(c) = &step.condition {
                    if !c.passes(&combined, &env)? {
                        continue;
                    }
                }
                matched = true;
                next.push(combined);
                self.reader.check_rows(next.len())?;
            }
            if !matched && step.kind == JoinKind::Left {
                let mut combined = left;
                combined.extend(std::iter::repeat_n(Value::Null, right_width));
                next.push(combined);
                self.reader.check_rows(next.len())?;
            }
        }
        Ok(next)
    }

    // ----------------------------------------------------------------------------------
    // DML

    /// Runs a point lookup of `key_values` on the primary key, or an index equality scan,
    /// recording it; returns the rows found.
    fn lookup(&mut self, local: &WriteSet, table: &std::sync::Arc<TableSchema>, path: Path, values: &[Value]) -> Result<Vec<(Vec<u8>, Row)>> {
        let cols = match &path {
            Path::PrimaryKey => table.primary_key.clone(),
            Path::Index(i) => table.indexes.get(*i).map(|x| x.columns.clone()).unwrap_or_default(),
        };
        let filter = Expr::conjunction(
            cols.iter()
                .zip(values)
                .map(|(c, v)| Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(*c)), Box::new(Expr::Const(v.clone())))),
        );
        let access = KeyAccess { path, eq: values.iter().cloned().map(Expr::Const).collect(), any_of: Vec::new(), lower: None, upper: None };
        let scan = ScanPlan { table: table.clone(), access, filter, derived: None };
        let env = Env::default();
        self.reader.scan(local, &scan, &env, &mut self.reads)
    }

    /// Unique-index checks for `row` (stored at `key`) against the view including `local`.
    /// Returns the violated index name, if any.
    fn unique_conflict(&mut self, local: &WriteSet, table: &std::sync::Arc<TableSchema>, key: &[u8], row: &Row, changed_only: Option<&Row>) -> Result<Option<String>> {
        for (i, index) in table.indexes.iter().enumerate().filter(|(_, x)| x.unique) {
            let values: Vec<Value> = index.columns.iter().filter_map(|c| row.get(*c).cloned()).collect();
            if values.iter().any(Value::is_null) {
                continue;
            }
            if let Some(old) = changed_only {
                if index.columns.iter().all(|c| old.get(*c) == row.get(*c)) {
                    continue;
                }
            }
            let hits = self.lookup(local, table, Path::Index(i), &values)?;
            if hits.iter().any(|(k, _)| k != key) {
                return Ok(Some(index.name.clone()));
            }
        }
        Ok(None)
    }

    pub fn insert(&mut self, plan: &InsertPlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let source: Vec<Row> = match &plan.source {
            InsertSource::Values(rows) => {
                let env = self.env();
                rows.iter().map(|r| r.iter().map(|e| e.eval(&[], &env)).collect()).collect::<Result<_>>()?
            }
            InsertSource::Query(q) => self.query(q)?,
        };
        self.reader.check_rows(source.len())?;
        let table = &plan.table;
        let mut local = WriteSet::default();
        let mut returned = Vec::new();
        let mut count = 0u64;
        for values in source {
            let mut row: Row = table.columns.iter().map(|c| c.default.clone().unwrap_or(Value::Null)).collect();
            for (target, v) in plan.targets.iter().zip(values) {
                let Some(col) = table.columns.get(*target) else { continue };
                let v = check_limits(assign_cast(&v, col.ty, &col.name)?, &col.limits, &col.name)?;
                if let Some(slot) = row.get_mut(*target) {
                    *slot = v;
                }
            }
            check_not_null(table, &row)?;
            let key = table.row_key(&row);
            let pk_values: Vec<Value> = table.primary_key.iter().filter_map(|c| row.get(*c).cloned()).collect();
            let existing = self.lookup(&local, table, Path::PrimaryKey, &pk_values)?;
            if let (OnConflict::DoUpdate { assignments, filter }, Some((_, old))) = (&plan.on_conflict, existing.first()) {
                if local.get(&table.name, &key).is_some() {
                    return err(SqlState::CardinalityViolation, "ON CONFLICT DO UPDATE command cannot affect row a second time");
                }
                let mut both = old.clone();
                both.extend(row.iter().cloned());
                let env = self.env();
                if let Some(f) = filter {
                    if !f.passes(&both, &env)? {
                        continue;
                    }
                }
                let mut updated = old.clone();
                for (col, e) in assignments {
                    let Some(column) = table.columns.get(*col) else { continue };
                    let v = check_limits(assign_cast(&e.eval(&both, &env)?, column.ty, &column.name)?, &column.limits, &column.name)?;
                    if let Some(slot) = updated.get_mut(*col) {
                        *slot = v;
                    }
                }
                check_not_null(table, &updated)?;
                let old = old.clone();
                if let Some(constraint) = self.unique_conflict(&local, table, &key, &updated, Some(&old))? {
                    return err(SqlState::UniqueViolation, format!("duplicate key value violates unique constraint \"{constraint}\""));
                }
                if let Some(r) = &plan.returning {
                    returned.push(project(&r.exprs, &updated, &self.env())?);
                }
                local.put(&table.name, key, Write::Upsert(updated));
                count += 1;
                continue;
            }
            let conflict = if existing.is_empty() {
                self.unique_conflict(&local, table, &key, &row, None)?
            } else {
                Some(format!("{}_pkey", table.name))
            };
            if let Some(constraint) = conflict {
                if matches!(plan.on_conflict, OnConflict::DoNothing) {
                    continue;
                }
                return err(SqlState::UniqueViolation, format!("duplicate key value violates unique constraint \"{constraint}\""));
            }
            if let Some(r) = &plan.returning {
                returned.push(project(&r.exprs, &row, &self.env())?);
            }
            local.put(&table.name, key, Write::Upsert(row));
            count += 1;
        }
        Ok((count, returned, local))
    }

    pub fn update(&mut self, plan: &UpdatePlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let table = &plan.scan.table;
        let empty = WriteSet::default();
        let env = Env { params: self.params, subqueries: &self.subqueries, outer: &[] };
        let matches = self.reader.scan(&empty, &plan.scan, &env, &mut self.reads)?;
        let mut changes: Vec<(Vec<u8>, Vec<u8>, Row, Row)> = Vec::with_capacity(matches.len());
        for (key, old) in matches {
            let mut new = old.clone();
            for (col, e) in &plan.assignments {
                let Some(column) = table.columns.get(*col) else { continue };
                let v = check_limits(assign_cast(&e.eval(&old, &env)?, column.ty, &column.name)?, &column.limits, &column.name)?;
                if let Some(slot) = new.get_mut(*col) {
                    *slot = v;
                }
            }
            check_not_null(table, &new)?;
            let new_key = table.row_key(&new);
            changes.push((key, new_key, old, new));
        }
        let removed: BTreeSet<Vec<u8>> = changes.iter().map(|(k, _, _, _)| k.clone()).collect();
        let mut local = WriteSet::default();
        for (key, new_key, _, new) in &changes {
            if local.get(&table.name, new_key).is_some() {
                return err(SqlState::UniqueViolation, format!("duplicate key value violates unique constraint \"{}_pkey\"", table.name));
            }
            if key != new_key && !removed.contains(new_key) {
                let pk_values: Vec<Value> = table.primary_key.iter().filter_map(|c| new.get(*c).cloned()).collect();
                if !self.lookup(&empty, table, Path::PrimaryKey, &pk_values)?.is_empty() {
                    return err(SqlState::UniqueViolation, format!("duplicate key value violates unique constraint \"{}_pkey\"", table.name));
                }
            }
            local.put(&table.name, new_key.clone(), Write::Upsert(new.clone()));
        }
        for (key, _, _, _) in &changes {
            if local.get(&table.name, key).is_none() {
                local.put(&table.name, key.clone(), Write::Delete);
            }
        }
        let mut returned = Vec::new();
        for (key, new_key, old, new) in &changes {
            let unchanged_key = (key == new_key).then_some(old);
            if let Some(constraint) = self.unique_conflict(&local, table, new_key, new, unchanged_key)? {
                return err(SqlState::UniqueViolation, format!("duplicate key value violates unique constraint \"{constraint}\""));
            }
            if let Some(r) = &plan.returning {
                returned.push(project(&r.exprs, new, &self.env())?);
            }
        }
        Ok((changes.len() as u64, returned, local))
    }

    pub fn delete(&mut self, plan: &DeletePlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let empty = WriteSet::default();
        let env = Env { params: self.params, subqueries: &self.subqueries, outer: &[] };
        let matches = self.reader.scan(&empty, &plan.scan, &env, &mut self.reads)?;
        let mut local = WriteSet::default();
        let mut returned = Vec::new();
        for (key, old) in &matches {
            if let Some(r) = &plan.returning {
                returned.push(project(&r.exprs, old, &env)?);
            }
            local.put(&plan.scan.table.name, key.clone(), Write::Delete);
        }
        Ok((matches.len() as u64, returned, local))
    }
}

fn project(exprs: &[Expr], row: &[Value], env: &Env) -> Result<Row> {
    exprs.iter().map(|e| e.eval(row, env)).collect()
}

fn check_not_null(table: &TableSchema, row: &[Value]) -> Result<()> {
    for (col, v) in table.columns.iter().zip(row) {
        if !col.nullable && v.is_null() {
            return err(
                SqlState::NotNullViolation,
                format!("null value in column \"{}\" of relation \"{}\" violates not-null constraint", col.name, table.name),
            );
        }
    }
    Ok(())
}

fn filter_rows(rows: Vec<Row>, f: &Expr, env: &Env) -> Result<Vec<Row>> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if f.passes(&r, env)? {
            out.push(r);
        }
    }
    Ok(out)
}

fn compare_rows(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for k in keys {
        let (x, y) = (a.get(k.column).unwrap_or(&Value::Null), b.get(k.column).unwrap_or(&Value::Null));
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if k.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if k.nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) => {
                let o = total_cmp(x, y);
                if k.desc { o.reverse() } else { o }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn set_operation(op: SetOp, all: bool, left: Vec<Row>, right: Vec<Row>) -> Result<Vec<Row>> {
    let key = |r: &Row| encode_key(r.iter());
    Ok(match op {
        SetOp::Union => {
            let mut rows = left;
            rows.extend(right);
            if !all {
                let mut seen = BTreeSet::new();
                rows.retain(|r| seen.insert(key(r)));
            }
            rows
        }
        SetOp::Except | SetOp::Intersect => {
            let mut counts: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
            for r in &right {
                *counts.entry(key(r)).or_default() += 1;
            }
            let mut seen = BTreeSet::new();
            let mut out = Vec::new();
            for r in left {
                let k = key(&r);
                let available = counts.get_mut(&k);
                let in_right = available.as_ref().is_some_and(|c| **c > 0);
                let keep = match op {
                    SetOp::Except if all => {
                        if let Some(c) = available.filter(|c| **c > 0) {
                            *c -= 1;
                            false
                        } else {
                            true
                        }
                    }
                    SetOp::Except => !in_right && seen.insert(k),
                    _ if all => {
                        if let Some(c) = available.filter(|c| **c > 0) {
                            *c -= 1;
                            true
                        } else {
                            false
                        }
                    }
                    _ => in_right && seen.insert(k),
                };
                if keep {
                    out.push(r);
                }
            }
            out
        }
    })
}

/// Groups rows and computes aggregates; output rows are `[group keys..., aggregates...]`,
/// ordered by encoded group key (deterministic).
fn aggregate(rows: Vec<Row>, agg: &AggPlan, env: &Env) -> Result<Vec<Row>> {
    struct Group {
        keys: Row,
        rows: usize,
        values: Vec<Vec<Value>>,
        seen: Vec<BTreeSet<Vec<u8>>>,
    }
    let new_group = |keys: Row| Group {
        keys,
        rows: 0,
        values: agg.calls.iter().map(|_| Vec::new()).collect(),
        seen: agg.calls.iter().map(|_| BTreeSet::new()).collect(),
    };
    // Groups in first-seen order plus an index by encoded key; output is by key order.
    let mut groups: Vec<Group> = Vec::new();
    let mut by_key: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    if agg.group_by.is_empty() {
        groups.push(new_group(Vec::new()));
        by_key.insert(Vec::new(), 0);
    }
    for row in &rows {
        let slot = if agg.group_by.is_empty() {
            0
        } else {
            let keys: Row = agg.group_by.iter().map(|e| e.eval(row, env)).collect::<Result<_>>()?;
            let next = groups.len();
            let slot = *by_key.entry(encode_key(keys.iter())).or_insert(next);
            if slot == next {
                groups.push(new_group(keys));
            }
            slot
        };
        let Some(group) = groups.get_mut(slot) else { continue };
        group.rows += 1;
        for (i, call) in agg.calls.iter().enumerate() {
            let Some(arg) = &call.arg else { continue };
            let v = arg.eval(row, env)?;
            if v.is_null() {
                continue;
            }
            if call.distinct && !group.seen.get_mut(i).is_some_and(|s| s.insert(encode_key([&v]))) {
                continue;
            }
            if let Some(values) = group.values.get_mut(i) {
                values.push(v);
            }
        }
    }
    let mut groups: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    let ordered: Vec<Group> = by_key.into_values().filter_map(|i| groups.get_mut(i).and_then(Option::take)).collect();
    ordered
        .into_iter()
        .map(|g| {
            let mut out = g.keys;
            for (call, values) in agg.calls.iter().zip(g.values) {
                out.push(finish_aggregate(call.func, g.rows, values)?);
            }
            Ok(out)
        })
        .collect()
}

fn finish_aggregate(func: AggFunc, rows: usize, values: Vec<Value>) -> Result<Value> {
    let sum = |values: &[Value]| -> Result<Value> {
        let mut acc = Value::Null;
        for v in values {
            acc = if acc.is_null() { v.clone() } else { arith(ArithOp::Add, &acc, v)? };
        }
        Ok(acc)
    };
    Ok(match func {
        AggFunc::CountStar => Value::Int(rows as i64),
        AggFunc::Count => Value::Int(values.len() as i64),
        AggFunc::Sum => sum(&values)?,
        AggFunc::Avg => match sum(&values)? {
            Value::Null => Value::Null,
            Value::Float(f) => Value::Float(f / values.len() as f64),
            total => {
                let total = as_decimal(&total).ok_or_else(|| SqlError::new(SqlState::UndefinedFunction, "avg requires numbers"))?;
                let avg = total
                    .checked_div(rust_decimal::Decimal::from(values.len() as u64))
                    .ok_or_else(|| SqlError::new(SqlState::NumericValueOutOfRange, "avg out of range"))?;
                Value::Numeric(avg.round_dp(16).normalize())
            }
        },
        AggFunc::Min => values.into_iter().min_by(total_cmp).unwrap_or(Value::Null),
        AggFunc::Max => values.into_iter().max_by(total_cmp).unwrap_or(Value::Null),
    })
}
