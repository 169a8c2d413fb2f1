//! Physical plans. Plan choice is rule-based (no statistics), so every replica picks the same
//! plan for the same statement and catalog.

use crate::catalog::{CatalogChange, TableSchema};
use crate::expr::{CmpOp, Expr, Shown};
use std::fmt::Write as _;
use std::sync::Arc;

/// Where a scan's key range comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Path {
    PrimaryKey,
    /// Position in `TableSchema::indexes`.
    Index(usize),
}

/// A bound of a key range on the column after the equality prefix.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RangeBound {
    pub expr: Expr,
    pub inclusive: bool,
}

/// Key access of a scan: equalities on a prefix of the key columns, then an optional range on
/// the next key column. Expressions hold no column references of the scanned table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyAccess {
    pub path: Path,
    pub eq: Vec<Expr>,
    pub lower: Option<RangeBound>,
    pub upper: Option<RangeBound>,
}

impl KeyAccess {
    pub fn key_columns<'t>(&self, table: &'t TableSchema) -> &'t [usize] {
        match self.path {
            Path::PrimaryKey => &table.primary_key,
            Path::Index(i) => table.indexes.get(i).map_or(&[], |ix| ix.columns.as_slice()),
        }
    }

    pub fn is_point(&self, table: &TableSchema) -> bool {
        self.path == Path::PrimaryKey && self.eq.len() == table.primary_key.len()
    }

    fn uses_outer(&self) -> bool {
        let outer = |e: &Expr| e.any(&|n| matches!(n, Expr::Outer(_)));
        self.eq.iter().any(outer)
            || self.lower.iter().chain(&self.upper).any(|b| outer(&b.expr))
    }
}

/// A scan of one table with its filter. `filter` is over the table's own columns and may
/// reference the outer row (`Expr::Outer`) in an index nested-loop join.
#[derive(Clone, Debug)]
pub(crate) struct ScanPlan {
    pub table: Arc<TableSchema>,
    pub access: KeyAccess,
    pub filter: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum JoinKind {
    Inner,
    Left,
}

/// Joins `right` to the rows built so far (left-deep).
#[derive(Clone, Debug)]
pub(crate) struct JoinStep {
    pub kind: JoinKind,
    pub right: ScanPlan,
    /// True: `right` is scanned once per left row with `Outer` bound to it (index
    /// nested-loop join). False: scanned once, then paired with every left row.
    pub per_outer_row: bool,
    /// Condition over the combined row, checked for each pair.
    pub condition: Option<Expr>,
}

#[derive(Clone, Debug)]
pub(crate) struct FromPlan {
    /// None for SELECT without FROM (one empty row).
    pub first: Option<ScanPlan>,
    pub joins: Vec<JoinStep>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
}

/// Grouping: output rows are `[group values..., aggregate values...]`, ordered by group key.
#[derive(Clone, Debug)]
pub(crate) struct AggPlan {
    pub group_by: Vec<Expr>,
    pub calls: Vec<AggCall>,
}

#[derive(Clone, Debug)]
pub(crate) struct SelectCore {
    pub from: FromPlan,
    /// WHERE conjuncts that could not be pushed into a scan (over the combined row).
    pub filter: Option<Expr>,
    pub aggregate: Option<AggPlan>,
    pub having: Option<Expr>,
    /// Output expressions, including hidden sort columns after the visible ones.
    pub output: Vec<Expr>,
    pub distinct: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SetOp {
    Union,
    Except,
    Intersect,
}

#[derive(Clone, Debug)]
pub(crate) enum QueryBody {
    Select(Box<SelectCore>),
    Values(Vec<Vec<Expr>>),
    SetOp { op: SetOp, all: bool, left: Box<QueryBody>, right: Box<QueryBody> },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SortKey {
    pub column: usize,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct QueryPlan {
    pub body: QueryBody,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub names: Vec<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct Returning {
    /// Over the written (new, or deleted) table row.
    pub exprs: Vec<Expr>,
    pub names: Vec<String>,
}

#[derive(Clone, Debug)]
pub(crate) enum InsertSource {
    Values(Vec<Vec<Expr>>),
    Query(Box<QueryPlan>),
}

#[derive(Clone, Debug)]
pub(crate) struct InsertPlan {
    pub table: Arc<TableSchema>,
    /// Table column receiving each source column.
    pub targets: Vec<usize>,
    pub source: InsertSource,
    pub do_nothing_on_conflict: bool,
    pub returning: Option<Returning>,
}

#[derive(Clone, Debug)]
pub(crate) struct UpdatePlan {
    pub scan: ScanPlan,
    /// (column, new value over the old row).
    pub assignments: Vec<(usize, Expr)>,
    pub returning: Option<Returning>,
}

#[derive(Clone, Debug)]
pub(crate) struct DeletePlan {
    pub scan: ScanPlan,
    pub returning: Option<Returning>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnControl {
    Begin,
    Commit,
    Rollback,
}

#[derive(Clone, Debug)]
pub(crate) enum Statement {
    Query(QueryPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    /// None: a no-op DDL (`IF [NOT] EXISTS` that matched).
    Ddl(Option<CatalogChange>),
    Explain(Box<Plan>),
    Txn(TxnControl),
}

/// A planned statement plus the uncorrelated subqueries it uses (run first, in order; a
/// subquery may use the results of lower-numbered ones).
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub statement: Statement,
    pub subqueries: Vec<QueryPlan>,
    pub param_count: usize,
}

/// Splits a conjunction into its conjuncts.
pub(crate) fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            conjuncts(*a, out);
            conjuncts(*b, out);
        }
        other => out.push(other),
    }
}

fn is_key_value(e: &Expr) -> bool {
    !e.any(&|n| matches!(n, Expr::Column(_)))
}

/// Per-column usable conditions found among a scan's conjuncts.
#[derive(Default)]
struct ColumnConds {
    eq: Option<Expr>,
    lower: Option<RangeBound>,
    upper: Option<RangeBound>,
}

fn column_conditions(table: &TableSchema, conjuncts: &[Expr]) -> Vec<ColumnConds> {
    let mut conds: Vec<ColumnConds> = table.columns.iter().map(|_| ColumnConds::default()).collect();
    for c in conjuncts {
        let Expr::Cmp(op, a, b) = c else { continue };
        let (col, op, value) = match (&**a, &**b) {
            (Expr::Column(i), v) if is_key_value(v) => (*i, *op, v),
            (v, Expr::Column(i)) if is_key_value(v) => (*i, op.flip(), v),
            _ => continue,
        };
        let Some(slot) = conds.get_mut(col) else { continue };
        let bound = |inclusive| Some(RangeBound { expr: value.clone(), inclusive });
        match op {
            CmpOp::Eq if slot.eq.is_none() => slot.eq = Some(value.clone()),
            CmpOp::Gt if slot.lower.is_none() => slot.lower = bound(false),
            CmpOp::GtEq if slot.lower.is_none() => slot.lower = bound(true),
            CmpOp::Lt if slot.upper.is_none() => slot.upper = bound(false),
            CmpOp::LtEq if slot.upper.is_none() => slot.upper = bound(true),
            _ => {}
        }
    }
    conds
}

fn access_on(path: Path, columns: &[usize], conds: &[ColumnConds]) -> KeyAccess {
    let mut access = KeyAccess { path, eq: Vec::new(), lower: None, upper: None };
    for &c in columns {
        let Some(cond) = conds.get(c) else { break };
        if let Some(e) = &cond.eq {
            access.eq.push(e.clone());
            continue;
        }
        access.lower = cond.lower.clone();
        access.upper = cond.upper.clone();
        break;
    }
    access
}

/// Chooses the key access for a scan from its conjuncts, by fixed rules: a full primary key
/// wins; otherwise the longest equality prefix (primary key first on ties, then indexes in
/// declaration order); then a range; otherwise a full primary-key scan.
pub(crate) fn choose_access(table: &TableSchema, conjuncts: &[Expr]) -> KeyAccess {
    let conds = column_conditions(table, conjuncts);
    let mut best = access_on(Path::PrimaryKey, &table.primary_key, &conds);
    if best.is_point(table) {
        return best;
    }
    let score = |a: &KeyAccess| (a.eq.len(), a.lower.is_some() || a.upper.is_some());
    for (i, index) in table.indexes.iter().enumerate() {
        let candidate = access_on(Path::Index(i), &index.columns, &conds);
        if score(&candidate) > score(&best) {
            best = candidate;
        }
    }
    best
}

/// True if the access depends on the outer row (so the scan must run per outer row).
pub(crate) fn access_uses_outer(access: &KeyAccess) -> bool {
    access.uses_outer()
}

// ---------------------------------------------------------------------------------------
// EXPLAIN

fn table_names(table: &TableSchema) -> impl Fn(usize) -> String + '_ {
    move |i| table.columns.get(i).map_or_else(|| format!("#{i}"), |c| c.name.clone())
}

fn describe_scan(out: &mut String, indent: usize, scan: &ScanPlan) {
    let names = table_names(&scan.table);
    let access = &scan.access;
    let key_cols = access.key_columns(&scan.table);
    let how = if access.is_point(&scan.table) {
        "point lookup on primary key".to_string()
    } else {
        let via = match access.path {
            Path::PrimaryKey => "primary key".to_string(),
            Path::Index(i) => format!("index {}", scan.table.indexes.get(i).map_or("?", |x| x.name.as_str())),
        };
        let ranged = access.lower.is_some() || access.upper.is_some();
        if access.eq.is_empty() && !ranged && access.path == Path::PrimaryKey {
            "full scan".to_string()
        } else {
            format!("range scan on {via}")
        }
    };
    let mut keys: Vec<String> = access
        .eq
        .iter()
        .zip(key_cols)
        .map(|(e, c)| format!("{} = {}", names(*c), Shown(e, &names)))
        .collect();
    if let Some(col) = key_cols.get(access.eq.len()) {
        for (b, lt, le) in [(&access.lower, ">", ">="), (&access.upper, "<", "<=")] {
            if let Some(b) = b {
                keys.push(format!("{} {} {}", names(*col), if b.inclusive { le } else { lt }, Shown(&b.expr, &names)));
            }
        }
    }
    let _ = write!(out, "{:indent$}Scan {} ({how}", "", scan.table.name);
    if !keys.is_empty() {
        let _ = write!(out, "; key {}", keys.join(", "));
    }
    let _ = writeln!(out, ") filter {}", Shown(&scan.filter, &names));
}

fn describe_body(out: &mut String, indent: usize, body: &QueryBody) {
    match body {
        QueryBody::Values(rows) => {
            let _ = writeln!(out, "{:indent$}Values ({} rows)", "", rows.len());
        }
        QueryBody::SetOp { op, all, left, right } => {
            let _ = writeln!(out, "{:indent$}{op:?}{}", "", if *all { " ALL" } else { "" });
            describe_body(out, indent + 2, left);
            describe_body(out, indent + 2, right);
        }
        QueryBody::Select(core) => {
            let _ = writeln!(
                out,
                "{:indent$}Project ({} columns{})",
                "",
                core.output.len(),
                if core.distinct { ", distinct" } else { "" }
            );
            let inner = indent + 2;
            if let Some(h) = &core.having {
                let _ = writeln!(out, "{:inner$}Having {h}", "");
            }
            if let Some(agg) = &core.aggregate {
                let _ = writeln!(out, "{:inner$}Aggregate ({} group keys, {} aggregates)", "", agg.group_by.len(), agg.calls.len());
            }
            if let Some(f) = &core.filter {
                let _ = writeln!(out, "{:inner$}Filter {f}", "");
            }
            match &core.from.first {
                None => {
                    let _ = writeln!(out, "{:inner$}One row", "");
                }
                Some(first) => {
                    describe_scan(out, inner, first);
                    for step in &core.from.joins {
                        let _ = writeln!(
                            out,
                            "{:inner$}{} join ({}){}",
                            "",
                            if step.kind == JoinKind::Left { "Left" } else { "Inner" },
                            if step.per_outer_row { "index nested loop" } else { "nested loop" },
                            step.condition.as_ref().map_or(String::new(), |c| format!(" on {c}"))
                        );
                        describe_scan(out, inner + 2, &step.right);
                    }
                }
            }
        }
    }
}

fn describe_query(out: &mut String, indent: usize, q: &QueryPlan) {
    if !q.order_by.is_empty() {
        let keys: Vec<String> = q
            .order_by
            .iter()
            .map(|k| format!("#{}{}", k.column, if k.desc { " DESC" } else { "" }))
            .collect();
        let _ = writeln!(out, "{:indent$}Sort by {}", "", keys.join(", "));
    }
    if q.limit.is_some() || q.offset.is_some() {
        let _ = writeln!(out, "{:indent$}Limit", "");
    }
    describe_body(out, indent, &q.body);
}

/// Textual plan for EXPLAIN.
pub(crate) fn explain(plan: &Plan) -> String {
    let mut out = String::new();
    for (i, sub) in plan.subqueries.iter().enumerate() {
        let _ = writeln!(out, "Subquery {i}:");
        describe_query(&mut out, 2, sub);
    }
    match &plan.statement {
        Statement::Query(q) => describe_query(&mut out, 0, q),
        Statement::Insert(p) => {
            let _ = writeln!(out, "Insert into {}", p.table.name);
            if let InsertSource::Query(q) = &p.source {
                describe_query(&mut out, 2, q);
            }
        }
        Statement::Update(p) => {
            let _ = writeln!(out, "Update {}", p.scan.table.name);
            describe_scan(&mut out, 2, &p.scan);
        }
        Statement::Delete(p) => {
            let _ = writeln!(out, "Delete from {}", p.scan.table.name);
            describe_scan(&mut out, 2, &p.scan);
        }
        Statement::Ddl(change) => {
            let _ = writeln!(out, "Catalog change {change:?}");
        }
        Statement::Explain(_) => out.push_str("Explain\n"),
        Statement::Txn(t) => {
            let _ = writeln!(out, "{t:?}");
        }
    }
    out.trim_end().to_string()
}
