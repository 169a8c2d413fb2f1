//! Executes plans over a storage snapshot overlaid with pending writes, producing results, a
//! read report and a write set. Nothing here mutates storage.

mod aggregate;
mod constraints;
mod dml;
mod query;
mod srf;
mod window;

use aggregate::{compare_rows, set_operation, Aggregator};
pub(crate) use query::Exec;

use crate::budget::Budget;
use crate::catalog::{IndexSchema, TableSchema};
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{CmpOp, Env, Expr, Predicate, SubqueryValue};
use crate::keycode::{encode_value, prefix_successor};
use crate::plan::*;
use crate::report::{Access, ReadReport, ReadRow, ScanRead};
use crate::storage::{KeyRange, ReadAt, RowRef, Storage, Write, WriteSet};
use crate::types::{
    arith, as_decimal, equality_key, exact_cast, push_equality_key, sql_cmp, to_column, total_cmp, ArithOp, Row, Value,
};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// The state a statement reads: storage at a snapshot plus the caller's pending writes.
pub(crate) struct Reader<'a> {
    pub storage: &'a dyn Storage,
    pub at: ReadAt<'a>,
    pub pending: &'a WriteSet,
    pub max_rows: usize,
    /// Work this statement may still do: rows read from storage and join pairs examined
    /// (per-row scans of joins and correlated subqueries multiply).
    pub work: &'a Budget<'a>,
    /// `Limits::max_read_rows`, and the active rows this statement's scans reported so far.
    pub max_read_rows: usize,
    pub active_rows: std::cell::Cell<usize>,
    /// Bytes of text this statement's expressions may still compute.
    pub computed: &'a Budget<'a>,
    /// Bytes of rows this statement may still materialize.
    pub materialized: &'a Budget<'a>,
}

impl Budget<'_> {
    /// Charges a row the statement keeps (`Budget::materialized_rows`).
    pub(crate) fn charge_row(&self, row: &[Value]) -> Result<()> {
        self.charge(row_bytes(row) as u64)
    }
}

/// What a materialized row costs: its values and the bytes they own.
fn row_bytes(row: &[Value]) -> usize {
    let owned: usize = row
        .iter()
        .map(|v| match v {
            Value::Text(s) => s.len(),
            Value::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    std::mem::size_of::<Row>() + std::mem::size_of_val(row) + owned
}

fn too_many_rows(max: usize) -> SqlError {
    SqlError::new(
        SqlState::ProgramLimitExceeded,
        format!("statement produced more than {max} intermediate rows (sql.statement_max_rows in the cluster configuration)"),
    )
}

/// One conjunct of a scan filter, in evaluation order.
enum Conjunct<'e> {
    /// `column op value` (`column_first`) or `value op column`, compared in place.
    Compare {
        column: usize,
        op: CmpOp,
        value: &'e Value,
        column_first: bool,
    },
    Other(&'e Expr),
}

/// A scan's filter prepared for its row loop: the conjuncts of its AND tree in evaluation
/// order, comparisons of a column with a constant done without the expression walk. Same
/// outcome and errors as [`Expr::passes`]: conjuncts run left to right and a FALSE one ends
/// the evaluation; the row passes when all are TRUE.
struct Filter<'e> {
    conjuncts: Vec<Conjunct<'e>>,
}

impl<'e> Filter<'e> {
    fn new(e: &'e Expr) -> Self {
        fn flatten<'e>(e: &'e Expr, out: &mut Vec<Conjunct<'e>>) {
            match e {
                Expr::And(a, b) => {
                    flatten(a, out);
                    flatten(b, out);
                }
                Expr::Cmp(op, a, b) => out.push(match (&**a, &**b) {
                    (Expr::Column(column), Expr::Const(value)) => {
                        Conjunct::Compare { column: *column, op: *op, value, column_first: true }
                    }
                    (Expr::Const(value), Expr::Column(column)) => {
                        Conjunct::Compare { column: *column, op: *op, value, column_first: false }
                    }
                    _ => Conjunct::Other(e),
                }),
                other => out.push(Conjunct::Other(other)),
            }
        }
        let mut conjuncts = Vec::new();
        flatten(e, &mut conjuncts);
        Filter { conjuncts }
    }

    fn passes(&self, row: &[Value]) -> Result<bool> {
        let mut all_true = true;
        for c in &self.conjuncts {
            let truth = match c {
                Conjunct::Compare { column, op, value, column_first } => {
                    let v = row
                        .get(*column)
                        .ok_or_else(|| SqlError::new(SqlState::InternalError, "unbound column in expression"))?;
                    let order = if *column_first { sql_cmp(v, value)? } else { sql_cmp(value, v)? };
                    order.map(|o| op.holds(o))
                }
                Conjunct::Other(e) => e.truth_of(row, &Env::default())?,
            };
            match truth {
                Some(false) => return Ok(false),
                Some(true) => {}
                None => all_true = false,
            }
        }
        Ok(all_true)
    }
}

/// A caller's own (pending or statement-local) row in a scan's range: its order key (index
/// key on an index path, empty on the primary key), primary key and row.
type OwnRow<'w> = (Vec<u8>, &'w [u8], &'w Row);

/// Receives the rows that pass a scan's filter, as (primary key, row).
pub(crate) type Sink<'s> = dyn FnMut(&[u8], &[Value]) -> Result<()> + 's;

impl Reader<'_> {
    fn check_rows(&self, n: usize) -> Result<()> {
        if n > self.max_rows {
            return Err(too_many_rows(self.max_rows));
        }
        Ok(())
    }

    /// The caller's own rows in `range`, in scan order: `layers` in order (later layers win),
    /// deletions removing rows; primary-key paths only look at writes inside the key range.
    fn own_rows<'w>(
        layers: &[&'w BTreeMap<Vec<u8>, Write>],
        table: &TableSchema,
        index: Option<&IndexSchema>,
        range: &KeyRange,
    ) -> Vec<OwnRow<'w>> {
        let mut own: BTreeMap<&'w [u8], &'w Row> = BTreeMap::new();
        for layer in layers {
            let writes: Box<dyn Iterator<Item = (&Vec<u8>, &Write)>> = match index {
                None if range.is_empty() => Box::new(std::iter::empty()),
                None => Box::new(layer.range::<Vec<u8>, _>((range.start.as_ref(), range.end.as_ref()))),
                Some(_) => Box::new(layer.iter()),
            };
            for (key, write) in writes {
                match write {
                    Write::Upsert(row) => own.insert(key, row),
                    Write::Delete => own.remove(key.as_slice()),
                };
            }
        }
        let mut rows: Vec<OwnRow<'w>> = own
            .into_iter()
            .filter_map(|(key, row)| match index {
                None => range.contains(key).then(|| (Vec::new(), key, row)),
                Some(ix) => {
                    let index_key = table.index_key(ix, row);
                    range.contains(&index_key).then_some((index_key, key, row))
                }
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        rows
    }

    /// Runs one scan: computes its key ranges, reads storage overlaid with `pending` then
    /// `local` writes, evaluates the filter on each row in place, and records the scan in
    /// `reads`. Rows that pass go to `sink` in key order (index order on an index path).
    pub fn scan(
        &self,
        local: &WriteSet,
        scan: &ScanPlan,
        env: &Env,
        reads: &mut ReadReport,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        self.scan_until(local, scan, env, reads, &|| false, sink)
    }

    /// `scan` that stops reading storage once `done()` holds after a row went to `sink` (a
    /// LIMIT met: the rows after it are neither read nor reported). Only a scan of one key
    /// range without own writes of the table stops early; the others read their whole range.
    pub fn scan_until(
        &self,
        local: &WriteSet,
        scan: &ScanPlan,
        env: &Env,
        reads: &mut ReadReport,
        done: &dyn Fn() -> bool,
        sink: &mut Sink<'_>,
    ) -> Result<()> {
        let table = &scan.table;
        let access = &scan.access;
        let key_cols = access.key_columns(table);
        let predicate = scan.filter.instantiate(env)?;
        let point = access.is_point(table);
        let ranges = key_ranges(table, access, key_cols, env)?;
        let index = match access.path {
            Path::PrimaryKey => None,
            Path::Index(i) => Some(
                table
                    .indexes
                    .get(i)
                    .ok_or_else(|| SqlError::new(SqlState::InternalError, "index position out of range"))?,
            ),
        };
        let layers: Vec<&BTreeMap<Vec<u8>, Write>> = [self.pending, local]
            .iter()
            .filter_map(|ws| ws.tables.get(table.storage_name()))
            .filter(|l| !l.is_empty())
            .collect();
        let filter = Filter::new(&predicate);
        // Only a scan of a one-column primary key stops early: its predicate is then narrowed
        // to the keys it read (`key <= last`), so that rows after it, unread, are not part of
        // the transaction's read (replicas check the read's rows against the predicate). With
        // several key columns, `first <= last's first` would also cover unread rows after the
        // last one with the same first column, and replicas would refuse every such read.
        let may_stop = ranges.len() == 1 && layers.is_empty() && access.path == Path::PrimaryKey;
        let stop_column = match table.primary_key.as_slice() {
            [only] if may_stop => Some(*only),
            _ => None,
        };
        let mut stopped_at: Option<Value> = None;
        let mut active = Vec::new();
        let mut seen = 0usize;
        let mut storage_hit = false;
        // An own row takes part only if it passes the filter, and is never an active row.
        let emit_own = |(_, key, row): OwnRow<'_>, sink: &mut Sink<'_>| -> Result<()> {
            if filter.passes(row)? {
                sink(key, row)?;
            }
            Ok(())
        };
        for range in &ranges {
            let mut own = Self::own_rows(&layers, table, index, range).into_iter().peekable();
            seen = seen.saturating_add(own.len());
            let mut visited = 0usize;
            {
                let mut order_key = Vec::new();
                let mut visit = |r: RowRef<'_>| -> Result<bool> {
                    visited += 1;
                    if visited > self.max_rows {
                        return Err(too_many_rows(self.max_rows));
                    }
                    // Charged as it goes, so that a long scan stops at its budget (or a
                    // replica's inline slice) instead of after the whole scan.
                    self.work.charge(1)?;
                    if layers.iter().any(|l| l.contains_key(r.key)) {
                        return Ok(true);
                    }
                    seen += 1;
                    if own.peek().is_some() {
                        order_key.clear();
                        if let Some(ix) = index {
                            table.write_index_key(ix, r.row, &mut order_key);
                        }
                        while let Some(o) = own.next_if(|o| (o.0.as_slice(), o.1) < (order_key.as_slice(), r.key)) {
                            emit_own(o, sink)?;
                        }
                    }
                    let pass = filter.passes(r.row)?;
                    if pass || point {
                        let n = self.active_rows.get() + 1;
                        if n > self.max_read_rows {
                            return err(
                                SqlState::ProgramLimitExceeded,
                                format!("a transaction reads at most {} rows", self.max_read_rows),
                            );
                        }
                        self.active_rows.set(n);
                        active.push(ReadRow { key: r.key.to_vec(), version: r.version });
                    }
                    if pass {
                        sink(r.key, r.row)?;
                        if let Some(column) = stop_column.filter(|_| done()) {
                            stopped_at = Some(r.row.get(column).cloned().unwrap_or(Value::Null));
                            return Ok(false);
                        }
                    }
                    Ok(true)
                };
                let limit = self.max_rows.saturating_add(1);
                match index {
                    None => self.storage.visit_scan(table, range, &self.at, limit, &mut visit)?,
                    Some(ix) => self.storage.visit_index_scan(table, ix, range, &self.at, limit, &mut visit)?,
                }
            }
            for o in own {
                emit_own(o, sink)?;
            }
            storage_hit |= visited > 0;
            self.work.charge(1)?; // the range's lookup, even if it found nothing
            self.check_rows(seen)?;
        }
        let absent_key = match ranges.as_slice() {
            [KeyRange { start: Bound::Included(key), .. }] if point && !storage_hit => {
                let own_write = [self.pending, local].iter().any(|ws| ws.get(table.storage_name(), key).is_some());
                (!own_write).then(|| key.clone())
            }
            _ => None,
        };
        let access_kind = match (&access.path, point) {
            (_, true) => Access::Point,
            (Path::PrimaryKey, false)
                if access.eq.is_empty()
                    && access.any_of.is_empty()
                    && access.lower.is_none()
                    && access.upper.is_none() =>
            {
                Access::Full
            }
            (Path::PrimaryKey, false) => Access::PkRange,
            (Path::Index(i), false) => Access::Index(table.indexes.get(*i).map(|x| x.name.clone()).unwrap_or_default()),
        };
        drop(filter);
        let predicate = match (stop_column, stopped_at) {
            (Some(column), Some(last)) => Expr::And(
                Box::new(predicate),
                Box::new(Expr::Cmp(CmpOp::LtEq, Box::new(Expr::Column(column)), Box::new(Expr::Const(last)))),
            ),
            _ => predicate,
        };
        reads.scans.push(ScanRead {
            access: access_kind,
            predicate: Predicate { table: table.storage_name().to_string(), expr: predicate },
            rows: active,
            absent_key,
            table_version: self.storage.table_version(table, &self.at),
            pk_ranges: (access.path == Path::PrimaryKey).then_some(ranges),
        });
        Ok(())
    }

    /// `scan`, collecting the passing rows.
    pub fn scan_rows(
        &self,
        local: &WriteSet,
        scan: &ScanPlan,
        env: &Env,
        reads: &mut ReadReport,
    ) -> Result<Vec<(Vec<u8>, Row)>> {
        let mut out = Vec::new();
        self.scan(local, scan, env, reads, &mut |key, row| {
            out.push((key.to_vec(), row.to_vec()));
            Ok(())
        })?;
        Ok(out)
    }
}

/// An encoded range bound and whether it is inclusive.
type EncodedBound = (Vec<u8>, bool);

/// Appends the encoded value of `e` as a key of column type `ty`; false when no key can
/// equal it (NULL, or not exactly representable in the column type).
fn push_key_value(out: &mut Vec<u8>, e: &Expr, ty: Option<crate::types::SqlType>, env: &Env) -> Result<bool> {
    let v = e.eval(&[], env)?;
    match ty.and_then(|t| exact_cast(&v, t)).filter(|v| !v.is_null()) {
        Some(v) => {
            encode_value(out, &v);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Encoded equality prefix of an access; None when no row can match.
fn eq_prefix(table: &TableSchema, access: &KeyAccess, key_cols: &[usize], env: &Env) -> Result<Option<Vec<u8>>> {
    let mut prefix = Vec::new();
    let types = access.key_types(table);
    for (e, ty) in access.eq.iter().zip(types.iter().chain(std::iter::repeat(&None)).take(key_cols.len())) {
        if !push_key_value(&mut prefix, e, *ty, env)? {
            return Ok(None);
        }
    }
    Ok(Some(prefix))
}

impl Predicate {
    /// The primary-key ranges outside which no row satisfies this closed predicate: the
    /// ranges a primary-key scan filtered by it would visit, derived from its conjuncts on the
    /// key columns. A row's key never changes, so a write to a key outside them can neither
    /// satisfy the predicate nor expose an older version that does. `None` when the conjuncts
    /// do not restrict the key (or the ranges cannot be computed); empty when no row can
    /// satisfy it.
    pub fn primary_key_ranges(&self, table: &TableSchema) -> Option<Vec<KeyRange>> {
        let mut parts = Vec::new();
        conjuncts(self.expr.clone(), &mut parts);
        let access = primary_key_access(table, &parts);
        if access.eq.is_empty() && access.any_of.is_empty() && access.lower.is_none() && access.upper.is_none() {
            return None;
        }
        key_ranges(table, &access, &table.primary_key, &Env::default()).ok()
    }

    /// A secondary index and the ranges of its key outside which no row satisfies this
    /// closed predicate, from its conjuncts on the index columns (as `primary_key_ranges`,
    /// for the index `best_index_access` picks). A write whose row has an index key outside
    /// them does not satisfy the predicate. `None` when no index key is restricted.
    pub fn index_key_ranges(&self, table: &TableSchema) -> Option<(usize, Vec<KeyRange>)> {
        let mut parts = Vec::new();
        conjuncts(self.expr.clone(), &mut parts);
        let (position, access) = best_index_access(table, &parts)?;
        let columns = &table.indexes.get(position)?.columns;
        let ranges = key_ranges(table, &access, columns, &Env::default()).ok()?;
        Some((position, ranges))
    }
}

/// Whether the column after the access's equality prefix is the primary key's last: a value
/// for it then makes a whole key, which no other stored key extends (self-delimiting encoding).
fn completes_primary_key(access: &KeyAccess, key_cols: &[usize]) -> bool {
    access.path == Path::PrimaryKey && access.eq.len() + 1 == key_cols.len()
}

/// Key ranges of an access, sorted and disjoint: one per distinct IN value, else at most one.
fn key_ranges(table: &TableSchema, access: &KeyAccess, key_cols: &[usize], env: &Env) -> Result<Vec<KeyRange>> {
    if access.any_of.is_empty() {
        return Ok(key_range(table, access, key_cols, env)?.into_iter().collect());
    }
    let Some(prefix) = eq_prefix(table, access, key_cols, env)? else { return Ok(Vec::new()) };
    let ty = access.key_types(table).get(access.eq.len()).copied().flatten();
    let completes_key = completes_primary_key(access, key_cols);
    let mut keys = BTreeSet::new();
    for e in &access.any_of {
        let mut key = prefix.clone();
        if push_key_value(&mut key, e, ty, env)? {
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
pub(crate) fn key_range(
    table: &TableSchema,
    access: &KeyAccess,
    key_cols: &[usize],
    env: &Env,
) -> Result<Option<KeyRange>> {
    let Some(prefix) = eq_prefix(table, access, key_cols, env)? else { return Ok(None) };
    let next_type = access.key_types(table).get(access.eq.len()).copied().flatten();
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
    let prefix_end = || {
        if prefix.is_empty() {
            Bound::Unbounded
        } else {
            prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded)
        }
    };
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
    // An inclusive bound on a key prefix must take in every key extending it; a bound that
    // completes the primary key is exact. So `id >= $1 AND id <= $1` is one key, which
    // storage looks up.
    let completes_key = completes_primary_key(access, key_cols);
    let end = match upper {
        None => prefix_end(),
        Some((key, true)) if completes_key => Bound::Included(key),
        Some((key, true)) => prefix_successor(&key).map_or(Bound::Unbounded, Bound::Excluded),
        Some((key, false)) => Bound::Excluded(key),
    };
    Ok(Some(KeyRange { start, end }))
}

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
fn hash_rows(rows: &[Row], keys: &[(Expr, Expr)], env: &Env) -> Result<BTreeMap<Vec<u8>, Vec<usize>>> {
    let mut table: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        if let Some(k) = hash_key(keys.iter().map(|(_, r)| r), row, env)? {
            table.entry(k).or_default().push(i);
        }
    }
    Ok(table)
}

#[cfg(test)]
mod primary_key_range_tests {
    use crate::catalog::{Column, IndexSchema, TableSchema};
    use crate::expr::{CmpOp, Expr, Predicate};
    use crate::types::{SqlType, Value};
    use proptest::prelude::*;

    /// t(a INT, b INT, c TEXT) with PRIMARY KEY (a, b); the cases below also use a
    /// single-column key.
    fn table(primary_key: Vec<usize>) -> TableSchema {
        let col = |name: &str, ty| Column {
            name: name.into(),
            ty,
            limits: Default::default(),
            nullable: true,
            default: None,
            generated: None,
            volatile_default: None,
        };
        TableSchema {
            name: "t".into(),
            id: 0,
            columns: vec![col("a", SqlType::Int), col("b", SqlType::Int), col("c", SqlType::Text)],
            primary_key,
            indexes: vec![],
            constraints: Default::default(),
            stored_as: None,
        }
    }

    fn cmp(op: CmpOp, col: usize, v: Value) -> Expr {
        Expr::Cmp(op, Box::new(Expr::Column(col)), Box::new(Expr::Const(v)))
    }

    fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }

    fn covered(t: &TableSchema, p: &Predicate, row: &[Value]) -> bool {
        let key = t.row_key(row);
        p.primary_key_ranges(t).is_none_or(|ranges| ranges.iter().any(|r| r.contains(&key)))
    }

    #[test]
    fn key_conjuncts_give_ranges_and_others_none() {
        let t = table(vec![0]);
        let p = |expr| Predicate { table: "t".into(), expr };
        let row = |a: i64| vec![Value::Int(a), Value::Int(0), Value::Text("x".into())];
        let between = p(and(cmp(CmpOp::GtEq, 0, Value::Int(5)), cmp(CmpOp::LtEq, 0, Value::Int(5))));
        let ranges = between.primary_key_ranges(&t).expect("restricted");
        assert_eq!(ranges.len(), 1);
        assert_eq!(
            ranges[0].single_key(),
            Some(t.row_key(&row(5)).as_slice()),
            "a closed range on the whole key is one key"
        );
        assert!(ranges[0].contains(&t.row_key(&row(5))));
        assert!(!ranges[0].contains(&t.row_key(&row(4))) && !ranges[0].contains(&t.row_key(&row(6))));
        let point = p(and(cmp(CmpOp::Eq, 0, Value::Int(3)), cmp(CmpOp::Gt, 1, Value::Int(7))));
        assert_eq!(point.primary_key_ranges(&t).map(|r| r.len()), Some(1));
        let in_list = p(Expr::InList {
            expr: Box::new(Expr::Column(0)),
            list: vec![Expr::Const(Value::Int(9)), Expr::Const(Value::Int(1))],
            negated: false,
        });
        assert_eq!(in_list.primary_key_ranges(&t).map(|r| r.len()), Some(2));
        assert_eq!(p(cmp(CmpOp::Gt, 1, Value::Int(7))).primary_key_ranges(&t), None, "no key conjunct");
        let or = Expr::Or(Box::new(cmp(CmpOp::Eq, 0, Value::Int(1))), Box::new(cmp(CmpOp::Eq, 0, Value::Int(2))));
        assert_eq!(p(or).primary_key_ranges(&t), None, "a disjunction is not a conjunct");
        assert_eq!(p(cmp(CmpOp::Eq, 0, Value::Null)).primary_key_ranges(&t), Some(vec![]), "a = NULL holds for no row");
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            (-3i64..4).prop_map(Value::Int),
            Just(Value::Null),
            (-30i64..40).prop_map(|v| Value::Float(v as f64 / 10.0)),
            (-30i64..40).prop_map(|v| Value::Numeric(rust_decimal::Decimal::new(v, 1))),
            "[a-c]{0,2}".prop_map(Value::Text),
        ]
    }

    fn op() -> impl Strategy<Value = CmpOp> {
        prop_oneof![
            Just(CmpOp::Eq),
            Just(CmpOp::NotEq),
            Just(CmpOp::Lt),
            Just(CmpOp::LtEq),
            Just(CmpOp::Gt),
            Just(CmpOp::GtEq)
        ]
    }

    fn conjunct() -> impl Strategy<Value = Expr> {
        prop_oneof![
            (op(), 0usize..3, value(), any::<bool>()).prop_map(|(op, col, v, flip)| if flip {
                Expr::Cmp(op, Box::new(Expr::Const(v)), Box::new(Expr::Column(col)))
            } else {
                cmp(op, col, v)
            }),
            (0usize..2, proptest::collection::vec(value(), 1..4)).prop_map(|(col, list)| Expr::InList {
                expr: Box::new(Expr::Column(col)),
                list: list.into_iter().map(Expr::Const).collect(),
                negated: false
            }),
        ]
    }

    proptest! {
        /// Soundness: every row the predicate holds for has its key in the ranges.
        #[test]
        fn a_row_that_satisfies_the_predicate_is_inside_its_ranges(
            parts in proptest::collection::vec(conjunct(), 1..5),
            a in -4i64..5, b in -4i64..5, c in "[a-c]{0,2}",
            compound in any::<bool>(),
        ) {
            let t = table(if compound { vec![0, 1] } else { vec![0] });
            let expr = parts.into_iter().reduce(and).expect("non-empty");
            let p = Predicate { table: "t".into(), expr };
            let row = vec![Value::Int(a), Value::Int(b), Value::Text(c)];
            if p.eval(&row).ok().flatten() == Some(true) {
                prop_assert!(covered(&t, &p, &row), "row {:?} satisfies {:?} outside {:?}", row, p.expr, p.primary_key_ranges(&t));
            }
        }

        /// Soundness of index ranges: every row the predicate holds for has its index key in
        /// the ranges of the index they name.
        #[test]
        fn a_row_that_satisfies_the_predicate_is_inside_its_index_ranges(
            parts in proptest::collection::vec(conjunct(), 1..5),
            a in -4i64..5, b in -4i64..5, c in "[a-c]{0,2}",
            compound in any::<bool>(),
        ) {
            let mut t = table(vec![0]);
            let index = |name: &str, columns| IndexSchema { name: name.into(), columns, unique: false, orders: Vec::new(), expressions: Vec::new() };
            t.indexes = vec![index("on_c", vec![2]), index("on_b", if compound { vec![1, 2] } else { vec![1] })];
            let expr = parts.into_iter().reduce(and).expect("non-empty");
            let p = Predicate { table: "t".into(), expr };
            let row = vec![Value::Int(a), Value::Int(b), Value::Text(c)];
            if p.eval(&row).ok().flatten() == Some(true) {
                if let Some((position, ranges)) = p.index_key_ranges(&t) {
                    let key = t.index_key(&t.indexes[position], &row);
                    prop_assert!(ranges.iter().any(|r| r.contains(&key)), "row {:?} satisfies {:?} outside {:?}", row, p.expr, ranges);
                }
            }
        }
    }
}
