//! Physical plans. Plan choice is rule-based (no statistics), so every replica picks the same
//! plan for the same statement and catalog.

use crate::catalog::{CatalogChange, TableSchema};
use crate::error::{err, Result, SqlState};
use crate::expr::{CmpOp, Expr, Func, Shown};
use crate::types::{ArrayElem, SqlType, TypeCategory, TypeLimits, Value};
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

/// Key access of a scan: equalities on a prefix of the key columns, then either a list of
/// values (`IN`) or an optional range on the next key column. Expressions hold no column
/// references of the scanned table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyAccess {
    pub path: Path,
    pub eq: Vec<Expr>,
    /// Values of the key column after the equality prefix (empty: no IN list).
    pub any_of: Vec<Expr>,
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

    /// The type of each part of the key, which lookup values are cast to.
    pub fn key_types(&self, table: &TableSchema) -> Vec<Option<SqlType>> {
        match self.path {
            Path::PrimaryKey => table.primary_key.iter().map(|c| table.columns.get(*c).map(|c| c.ty)).collect(),
            Path::Index(i) => table.indexes.get(i).map_or_else(Vec::new, |ix| table.index_part_types(ix)),
        }
    }

    pub fn is_point(&self, table: &TableSchema) -> bool {
        self.path == Path::PrimaryKey && !table.primary_key.is_empty() && self.eq.len() == table.primary_key.len()
    }

    fn uses_outer(&self) -> bool {
        let outer = |e: &Expr| e.any(&|n| matches!(n, Expr::Outer(_)));
        self.eq.iter().chain(&self.any_of).any(outer) || self.lower.iter().chain(&self.upper).any(|b| outer(&b.expr))
    }
}

/// A scan of one table with its filter. `filter` is over the table's own columns and may
/// reference the outer row (`Expr::Outer`) in an index nested-loop join.
#[derive(Clone, Debug)]
pub(crate) struct ScanPlan {
    pub table: Arc<TableSchema>,
    pub access: KeyAccess,
    pub filter: Expr,
    /// For a derived table (subquery or CTE in FROM): the query producing its rows; `table`
    /// is then a key-less schema describing its columns. Its scans report themselves.
    pub derived: Option<Box<QueryPlan>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum JoinKind {
    Inner,
    Left,
    /// The rows built so far are null-extended for right rows nothing matched.
    Right,
    /// Left and right rows nothing matched are both kept, null-extended.
    Full,
}

impl JoinKind {
    /// True if left rows with no match are kept, padded with NULLs.
    pub fn keeps_left(self) -> bool {
        matches!(self, JoinKind::Left | JoinKind::Full)
    }

    /// True if right rows with no match are kept, after NULLs for the left columns.
    pub fn keeps_right(self) -> bool {
        matches!(self, JoinKind::Right | JoinKind::Full)
    }
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
    /// Equalities `left = right` among the condition's conjuncts (left over the left row,
    /// right over the inner table's row): a scanned-once inner table is hashed on them.
    pub hash_keys: Vec<(Expr, Expr)>,
    /// Width of the rows built so far (the NULLs before an unmatched right row).
    pub left_width: usize,
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
    /// `array_agg(x [ORDER BY …])`: every value, NULLs included, as an array.
    ArrayAgg,
    BoolAnd,
    BoolOr,
    /// `string_agg(x, delimiter [ORDER BY …])`: the non-NULL values joined by the delimiter.
    StringAgg,
    /// `jsonb_agg(x [ORDER BY …])`: every value, NULLs included, as a jsonb array (each
    /// value written as `to_jsonb` writes it).
    JsonbAgg,
    /// `jsonb_object_agg(k, v [ORDER BY …])`: the binder makes the argument the one-pair
    /// object `{k: v}`; the objects are merged in order (the last of equal keys wins).
    JsonbObjectAgg,
}

/// A key of an aggregate's own ORDER BY (`array_agg(x ORDER BY y DESC)`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AggOrder {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// Static type of the argument: decides the result type (sum(bigint) is numeric,
    /// sum(real) accumulates in real).
    pub arg_type: Option<SqlType>,
    /// The aggregate's ORDER BY: the order in which `array_agg` takes its values.
    pub order_by: Vec<AggOrder>,
    /// `string_agg`'s delimiter, a constant (empty for NULL and for other aggregates).
    pub delimiter: String,
}

impl AggCall {
    /// A call over one argument, without ORDER BY.
    pub fn over(func: AggFunc, arg: Option<Expr>, distinct: bool, arg_type: Option<SqlType>) -> Self {
        AggCall { func, arg, distinct, arg_type, order_by: Vec::new(), delimiter: String::new() }
    }
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
    /// Window calls, computed over the rows after WHERE (or GROUP BY / HAVING): call `k`
    /// appends column `width + k` to each row, which `output` reads.
    pub windows: Vec<crate::window::WindowCall>,
    /// Set-returning calls of the select list (`unnest`, `generate_subscripts`), run in
    /// lockstep over each row after WHERE: call `k` appends column `width + k`, which
    /// `output` reads; a row gives as many rows as its longest call.
    pub srfs: Vec<SrfCall>,
    /// Output expressions, including hidden sort columns after the visible ones.
    pub output: Vec<Expr>,
    pub distinct: bool,
    pub distinct_on: Option<DistinctOn>,
}

/// `SELECT DISTINCT ON (...)`: of the output rows equal in `columns`, the first in `order`
/// (the query's ORDER BY, which starts with those columns) is kept.
#[derive(Clone, Debug)]
pub(crate) struct DistinctOn {
    pub columns: Vec<usize>,
    pub order: Vec<SortKey>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SrfKind {
    /// `unnest(array)`: the elements.
    Unnest,
    /// `generate_subscripts(array, dim)`: the subscripts of dimension `dim`.
    GenerateSubscripts,
    /// `generate_series(start, stop[, step])` over integers.
    GenerateSeries,
}

/// One set-returning call: its arguments (`unnest`: the array; `generate_subscripts`: the
/// array and the dimension; `generate_series`: start, stop and step) and their static type
/// (the array's, or the series' integer type).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SrfCall {
    pub kind: SrfKind,
    pub args: Vec<Expr>,
    pub arg_type: SqlType,
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
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<QueryBody>,
        right: Box<QueryBody>,
    },
    /// `WITH RECURSIVE name AS (base UNION [ALL] step)`: `step` runs again over the rows the
    /// previous run produced (read through `WorkingTable(id)`) until it produces no new row.
    Recursive {
        id: usize,
        name: String,
        all: bool,
        base: Box<QueryBody>,
        step: Box<QueryBody>,
    },
    /// The rows of the previous iteration of recursive query `id`.
    WorkingTable(usize),
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
    /// Static type of each output column (None: only known at run time, e.g. `$1` or NULL).
    pub types: Vec<Option<SqlType>>,
    /// Declared limits of each output column where known (`CHAR(n)` output is padded to n).
    pub limits: Vec<TypeLimits>,
    /// Output columns that are a bare quoted or NULL literal of a SELECT (PostgreSQL's type
    /// unknown): INSERT ... SELECT reads them as the target columns' types.
    pub untyped: Vec<bool>,
    /// Number of enclosing queries (correlated subqueries) around this one: the length of
    /// the enclosing-row stack while it runs.
    pub depth: usize,
}

#[derive(Clone, Debug)]
pub(crate) struct Returning {
    /// Over the written (new, or deleted) table row, followed by the joined columns of an
    /// `UPDATE ... FROM` / `DELETE ... USING`.
    pub exprs: Vec<Expr>,
    pub names: Vec<String>,
    pub types: Vec<Option<SqlType>>,
    pub limits: Vec<TypeLimits>,
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
    pub on_conflict: OnConflict,
    pub returning: Option<Returning>,
    /// CHECK and FOREIGN KEY checks of the written rows.
    pub enforce: Arc<crate::constraints::Enforcement>,
}

/// What INSERT does when a row's key is taken.
#[derive(Clone, Debug)]
pub(crate) enum OnConflict {
    /// Unique violation (23505).
    Error,
    /// Skip a row that conflicts with the arbiter (any primary-key or unique conflict when
    /// None); a conflict on another constraint is still a unique violation, as in PostgreSQL.
    DoNothing { arbiter: Option<Arbiter> },
    /// Update the row that conflicts with the arbiter (a conflict on another constraint is
    /// a unique violation). Expressions are over `[existing row..., excluded (proposed)
    /// row...]`; the update may change key columns, as an UPDATE may.
    DoUpdate { arbiter: Arbiter, assignments: Vec<(usize, Expr)>, filter: Option<Expr> },
}

/// The constraint an `ON CONFLICT` target names: by its columns and expressions, or by
/// `ON CONSTRAINT name`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Arbiter {
    PrimaryKey,
    /// A unique index, by position in `TableSchema::indexes`.
    Index(usize),
}

/// The rows an UPDATE or DELETE changes.
#[derive(Clone, Debug)]
pub(crate) enum TargetRows {
    /// A scan of the target table, then the WHERE conjuncts with correlated subqueries,
    /// checked per scanned row (not part of the scan's predicate).
    Scan { scan: ScanPlan, residual: Option<Expr> },
    /// `UPDATE ... FROM` / `DELETE ... USING`: the target table, the first FROM item, joined
    /// with the others under WHERE (`filter`: the conjuncts left over the combined row). A
    /// row is the target's row followed by the other items' columns; a target row that joins
    /// several rows is changed once, with the first (PostgreSQL leaves which one unspecified).
    Join { from: FromPlan, filter: Option<Expr> },
}

impl TargetRows {
    /// The scan of the target table when it is the statement's only read.
    pub fn single_scan(&self) -> Option<&ScanPlan> {
        match self {
            TargetRows::Scan { scan, .. } => Some(scan),
            TargetRows::Join { .. } => None,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct UpdatePlan {
    pub table: Arc<TableSchema>,
    pub rows: TargetRows,
    /// (column, new value over the target row, followed by the joined columns).
    pub assignments: Vec<(usize, Expr)>,
    /// Over the new target row, followed by the joined columns.
    pub returning: Option<Returning>,
    pub enforce: Arc<crate::constraints::Enforcement>,
}

#[derive(Clone, Debug)]
pub(crate) struct DeletePlan {
    pub table: Arc<TableSchema>,
    pub rows: TargetRows,
    /// Over the deleted row, followed by the joined columns.
    pub returning: Option<Returning>,
    pub enforce: Arc<crate::constraints::Enforcement>,
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
    /// EXPLAIN; with ANALYZE the inner statement runs too (its reads and writes count) and
    /// the plan is followed by what it did, in counts every replica computes alike (no
    /// timings: they would differ between replicas).
    Explain {
        inner: Box<Plan>,
        analyze: bool,
    },
    Txn(TxnControl),
}

/// A planned statement plus the uncorrelated subqueries it uses (run first, in order; a
/// subquery may use the results of lower-numbered ones).
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub statement: Statement,
    pub subqueries: Vec<Subquery>,
    pub param_count: usize,
    /// Inferred type of each parameter (None where the context gives no type).
    pub param_types: Vec<Option<SqlType>>,
    /// Sequences the statement draws from (nextval, SERIAL), reads (currval) or sets (setval).
    pub sequences: Vec<String>,
    /// Of those, the ones it sets (never drawn from in the same statement).
    pub sequences_set: Vec<String>,
    /// Views the statement reads (expanded into it where named).
    pub views: Vec<String>,
    /// A NOTICE for the client, as PostgreSQL sends for `IF [NOT] EXISTS` that skips.
    pub notice: Option<String>,
}

/// A subquery of a statement. Uncorrelated ones run once before the statement; correlated
/// ones (referencing the enclosing row as `Expr::Outer`) run once per enclosing row.
#[derive(Clone, Debug)]
pub(crate) struct Subquery {
    pub plan: QueryPlan,
    pub kind: SubqueryKind,
    pub correlated: bool,
}

/// Ids of the subqueries an expression uses directly.
pub(crate) fn subquery_ids(e: &Expr, out: &mut Vec<usize>) {
    match e {
        Expr::Subquery(i) | Expr::InSubquery { subquery: i, .. } | Expr::Exists { subquery: i, .. } => out.push(*i),
        _ => {}
    }
    for child in e.children() {
        subquery_ids(child, out);
    }
}

/// How a subquery's result is used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SubqueryKind {
    Scalar,
    List,
    Exists,
    /// `ARRAY(subquery)`: the column's values in order, as an array's text form (Pistou has
    /// no array type; `{a,b}` is what PostgreSQL's text output shows).
    Array,
}

/// Static type of an integer literal: PostgreSQL types it integer if it fits, else bigint.
pub(crate) fn literal_type(v: &Value) -> Option<SqlType> {
    match v {
        Value::Int(i) if i32::try_from(*i).is_ok() => Some(SqlType::Int4),
        other => other.sql_type(),
    }
}

fn int_width(t: SqlType) -> u8 {
    match t {
        SqlType::Int2 => 2,
        SqlType::Int4 => 4,
        _ => 8,
    }
}

/// Result type of `a op b` (PostgreSQL's operator resolution for the supported types):
/// integers give the wider integer type, real with real stays real, any other float gives
/// double precision, integers with numeric give numeric.
pub(crate) fn arith_type(op: crate::types::ArithOp, a: SqlType, b: SqlType) -> Option<SqlType> {
    use crate::types::ArithOp;
    use SqlType::*;
    Some(match (a, b) {
        (Date, Date) if op == ArithOp::Sub => Int4,
        // date ± integer: there is no operator for bigint.
        (Date, Int2 | Int4) if matches!(op, ArithOp::Add | ArithOp::Sub) => Date,
        (Int2 | Int4, Date) if op == ArithOp::Add => Date,
        (Date | Timestamp, Interval) if matches!(op, ArithOp::Add | ArithOp::Sub) => Timestamp,
        (Interval, Date | Timestamp) if op == ArithOp::Add => Timestamp,
        (TimestampTz, Interval) if matches!(op, ArithOp::Add | ArithOp::Sub) => TimestampTz,
        (Interval, TimestampTz) if op == ArithOp::Add => TimestampTz,
        // A date is read as its midnight, timestamp and timestamptz alike (the session is UTC).
        (Date | Timestamp | TimestampTz, Timestamp | TimestampTz) | (Timestamp | TimestampTz, Date)
            if op == ArithOp::Sub =>
        {
            Interval
        }
        (Interval, Interval) if matches!(op, ArithOp::Add | ArithOp::Sub) => Interval,
        (Interval, n) | (n, Interval) if op == ArithOp::Mul && n.is_number() => Interval,
        (Interval, n) if op == ArithOp::Div && n.is_number() => Interval,
        _ if a.is_integer() && b.is_integer() => {
            if int_width(a) >= int_width(b) {
                a
            } else {
                b
            }
        }
        // There is no % for floating-point types.
        (Float | Float4, _) | (_, Float | Float4) if op == ArithOp::Mod => return None,
        (Float4, Float4) => Float4,
        _ if a.is_number() && b.is_number() && matches!((a, b), (Float | Float4, _) | (_, Float | Float4)) => Float,
        _ if a.is_number() && b.is_number() => Numeric,
        _ => return None,
    })
}

/// Candidate step of PostgreSQL's common-type resolution (`select_common_type`): `b`
/// displaces the candidate `a` only if `a` converts to it implicitly but not the other way
/// round, and never a preferred type (so numbers rise along smallint < integer < bigint <
/// numeric < real < double precision, date gives way to timestamp, and of the string types
/// the first one stays). Types of different categories keep `a`; `common_type` reports them.
pub(crate) fn unify_types(a: SqlType, b: SqlType) -> SqlType {
    if a != b
        && a.category() == b.category()
        && !a.is_preferred()
        && a.implicitly_casts_to(b)
        && !b.implicitly_casts_to(a)
    {
        b
    } else {
        a
    }
}

/// What type resolution knows of one input before run time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum InputType {
    Known(SqlType),
    /// A quoted string or NULL literal: PostgreSQL's type `unknown`, which takes the type
    /// its context resolves to.
    Literal,
    /// Known only at run time (a parameter, or an expression over one): left out.
    Opaque,
}

/// PostgreSQL's common type of CASE results (ELSE first), COALESCE / GREATEST / LEAST
/// arguments, and VALUES and set-operation columns: the candidate of `unify_types` over the
/// known inputs, in order; text if all are literals; None if nothing is known before run
/// time. Known types of different categories fail with 42804, as in PostgreSQL ("CASE types
/// integer and text cannot be matched").
pub(crate) fn common_type(context: &str, inputs: &[InputType]) -> Result<Option<SqlType>> {
    let mut candidate: Option<SqlType> = None;
    for input in inputs {
        let InputType::Known(t) = *input else { continue };
        candidate = Some(match candidate {
            None => t,
            Some(c) if c.category() != t.category() => {
                return err(SqlState::DatatypeMismatch, format!("{context} types {c} and {t} cannot be matched"))
            }
            Some(c) => unify_types(c, t),
        });
    }
    Ok(candidate.or_else(|| (!inputs.contains(&InputType::Opaque)).then_some(SqlType::Text)))
}

/// Result type of `NULLIF(a, b)`: the left input type of the `=` operator PostgreSQL picks
/// for `a = b` (a literal takes the other side's type; integers and dates compare across
/// their widths, integers with numeric as numeric, with floats as double precision; CHAR
/// with CHAR or VARCHAR as CHAR, other strings as text). None if neither side's type is
/// known before run time. Different categories fail with 42883: there is no such operator.
pub(crate) fn nullif_type(a: InputType, b: InputType) -> Result<Option<SqlType>> {
    use InputType::*;
    let (a, b) = match (a, b) {
        (Literal, Literal) => return Ok(Some(SqlType::Text)),
        (Known(a), Known(b)) => (a, b),
        // A literal or parameter takes the other side's type.
        (Known(t), Literal | Opaque) | (Literal | Opaque, Known(t)) => (t, t),
        _ => return Ok(None),
    };
    if a.category() != b.category() {
        return err(SqlState::UndefinedFunction, format!("operator does not exist: {a} = {b}"));
    }
    let float = |t: SqlType| matches!(t, SqlType::Float4 | SqlType::Float);
    let char_or_varchar = |t: SqlType| matches!(t, SqlType::Char | SqlType::Varchar);
    Ok(Some(match a.category() {
        TypeCategory::Numeric if (a.is_integer() && b.is_integer()) || float(a) => a,
        TypeCategory::Numeric if float(b) => SqlType::Float,
        TypeCategory::Numeric => SqlType::Numeric,
        // bpchar's own operator takes CHAR with CHAR or VARCHAR; text's takes the rest.
        TypeCategory::String
            if (a == SqlType::Char || b == SqlType::Char) && char_or_varchar(a) && char_or_varchar(b) =>
        {
            SqlType::Char
        }
        TypeCategory::String => SqlType::Text,
        _ => a,
    }))
}

fn unify_all<'e>(items: impl Iterator<Item = &'e Expr>, ty: &dyn Fn(&Expr) -> Option<SqlType>) -> Option<SqlType> {
    items.filter_map(ty).reduce(unify_types)
}

/// Static result type of `e` over a row whose columns have types `input`.
pub(crate) fn expr_type(e: &Expr, input: &[Option<SqlType>]) -> Option<SqlType> {
    expr_type_in(e, input, &|_| None)
}

/// `expr_type` where `placeholder` types the columns of enclosing queries
/// (`Expr::Enclosing`) and scalar subqueries (`Expr::Subquery`: their column's type).
pub(crate) fn expr_type_in(
    e: &Expr,
    input: &[Option<SqlType>],
    placeholder: &dyn Fn(&Expr) -> Option<SqlType>,
) -> Option<SqlType> {
    let ty = |x: &Expr| expr_type_in(x, input, placeholder);
    match e {
        Expr::Const(v) => literal_type(v),
        // A window call's placeholder column (see `window::WINDOW_COLUMN_BASE`) is typed by
        // the binder.
        Expr::Column(i) => input.get(*i).copied().flatten().or_else(|| placeholder(e)),
        Expr::Enclosing { .. } | Expr::Subquery(_) => placeholder(e),
        Expr::Outer(_) | Expr::Param(_) => None,
        Expr::Neg(x) => ty(x),
        Expr::Arith(op, a, b) => arith_type(*op, ty(a)?, ty(b)?),
        Expr::Concat(..) => Some(SqlType::Text),
        Expr::Case { whens, otherwise, .. } => {
            unify_all(whens.iter().map(|(_, then)| then).chain(otherwise.as_deref()), &ty)
        }
        Expr::Cast { ty: t, .. } => Some(*t),
        Expr::Call { func, args } => match func {
            Func::Lower
            | Func::Upper
            | Func::Substr
            | Func::Trim
            | Func::Ltrim
            | Func::Rtrim
            | Func::Replace
            | Func::Concat
            | Func::Float4Text => Some(SqlType::Text),
            Func::Length | Func::Position => Some(SqlType::Int4),
            Func::Abs | Func::Round | Func::NullIf | Func::Floor | Func::Ceil => args.first().and_then(ty),
            Func::Coalesce | Func::Greatest | Func::Least => unify_all(args.iter(), &ty),
            Func::Now => Some(SqlType::TimestampTz),
            Func::CurrentDate => Some(SqlType::Date),
            Func::LocalTimestamp => Some(SqlType::Timestamp),
            Func::RegexMatch | Func::RegexIMatch | Func::ArrayHas => Some(SqlType::Bool),
            Func::ArrayToString | Func::SplitPart => Some(SqlType::Text),
            Func::Extract => Some(SqlType::Numeric),
            Func::DatePart => Some(SqlType::Float),
            Func::DateTrunc => match args.get(1).and_then(ty) {
                Some(SqlType::Timestamp) => Some(SqlType::Timestamp),
                _ => Some(SqlType::TimestampTz),
            },
            Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal => Some(SqlType::Int),
            Func::JsonBuildObject => Some(SqlType::Json),
            Func::GenRandomUuid => Some(SqlType::Uuid),
            Func::Age => Some(SqlType::Interval),
            Func::ToChar => Some(SqlType::Text),
            Func::Jsonb(f) => Some(f.result_type()),
            Func::ArrayConstruct | Func::ArrayCat => match args.first() {
                Some(Expr::Const(Value::Text(element))) => {
                    SqlType::by_pg_name(element).and_then(ArrayElem::of).map(SqlType::Array)
                }
                _ => None,
            },
        },
        Expr::InSubquery { .. }
        | Expr::Exists { .. }
        | Expr::Not(_)
        | Expr::And(..)
        | Expr::Or(..)
        | Expr::Cmp(..)
        | Expr::IsNull { .. }
        | Expr::IsBool { .. }
        | Expr::IsDistinct { .. }
        | Expr::InList { .. }
        | Expr::Like { .. } => Some(SqlType::Bool),
    }
}

fn hint_param(out: &mut Vec<Option<SqlType>>, e: &Expr, ty: Option<SqlType>) {
    if let (Expr::Param(i), Some(t)) = (e, ty) {
        if out.len() <= *i {
            out.resize(*i + 1, None);
        }
        if let Some(slot @ None) = out.get_mut(*i) {
            *slot = Some(t);
        }
    }
}

/// Infers parameter types from the context they appear in (`col = $1` gives `$1` the type
/// of `col`), for drivers that prepare statements without declaring parameter types.
/// `placeholder` types enclosing columns and scalar subqueries, as in `expr_type_in`.
pub(crate) fn infer_param_types(
    e: &Expr,
    input: &[Option<SqlType>],
    placeholder: &dyn Fn(&Expr) -> Option<SqlType>,
    out: &mut Vec<Option<SqlType>>,
) {
    let ty = |x: &Expr| expr_type_in(x, input, placeholder);
    match e {
        Expr::Cmp(_, a, b) | Expr::Arith(_, a, b) | Expr::IsDistinct { left: a, right: b, .. } => {
            hint_param(out, a, ty(b));
            hint_param(out, b, ty(a));
        }
        Expr::InList { expr, list, .. } => {
            for item in list {
                hint_param(out, item, ty(expr));
            }
            hint_param(out, expr, list.iter().find_map(ty));
        }
        Expr::Like { expr, pattern, .. } | Expr::Concat(expr, pattern) => {
            hint_param(out, expr, Some(SqlType::Text));
            hint_param(out, pattern, Some(SqlType::Text));
        }
        Expr::Not(x) | Expr::IsBool { expr: x, .. } => hint_param(out, x, Some(SqlType::Bool)),
        Expr::Cast { expr, ty: t, .. } => hint_param(out, expr, Some(*t)),
        Expr::And(a, b) | Expr::Or(a, b) => {
            hint_param(out, a, Some(SqlType::Bool));
            hint_param(out, b, Some(SqlType::Bool));
        }
        Expr::Call { func, args } => {
            for (i, arg) in args.iter().enumerate() {
                let t = match (func, i) {
                    (Func::Lower | Func::Upper | Func::Length | Func::Substr, 0) => Some(SqlType::Text),
                    (Func::Trim | Func::Ltrim | Func::Rtrim, _) => Some(SqlType::Text),
                    (
                        Func::Replace
                        | Func::Position
                        | Func::RegexMatch
                        | Func::RegexIMatch
                        | Func::ArrayToString
                        | Func::ArrayHas,
                        _,
                    ) => Some(SqlType::Text),
                    (Func::Substr | Func::Round, _) => Some(SqlType::Int4),
                    _ => None,
                };
                hint_param(out, arg, t);
            }
        }
        _ => {}
    }
    for child in e.children() {
        infer_param_types(child, input, placeholder, out);
    }
}

/// Hints a bare parameter used where a value of type `ty` is expected (INSERT values, SET).
pub(crate) fn hint_param_type(e: &Expr, ty: SqlType, out: &mut Vec<Option<SqlType>>) {
    hint_param(out, e, Some(ty));
}

/// Static result type of an aggregate call.
pub(crate) fn aggregate_type(call: &AggCall) -> Option<SqlType> {
    let arg = call.arg_type;
    match call.func {
        AggFunc::CountStar | AggFunc::Count => Some(SqlType::Int),
        AggFunc::Sum => match arg? {
            SqlType::Int2 | SqlType::Int4 => Some(SqlType::Int),
            SqlType::Int => Some(SqlType::Numeric),
            other => Some(other),
        },
        // PostgreSQL has no min/max for varchar: they take the text version.
        AggFunc::Min | AggFunc::Max if arg == Some(SqlType::Varchar) => Some(SqlType::Text),
        AggFunc::Min | AggFunc::Max => arg,
        AggFunc::Avg if matches!(arg, Some(SqlType::Float | SqlType::Float4)) => Some(SqlType::Float),
        AggFunc::Avg => Some(SqlType::Numeric),
        AggFunc::ArrayAgg => arg.and_then(ArrayElem::of).map(SqlType::Array),
        AggFunc::BoolAnd | AggFunc::BoolOr => Some(SqlType::Bool),
        AggFunc::StringAgg => Some(SqlType::Text),
        AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => Some(SqlType::Jsonb),
    }
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
    any_of: Option<Vec<Expr>>,
    lower: Option<RangeBound>,
    upper: Option<RangeBound>,
}

/// Key slots: a column's position, or for the `k`-th index expression of the table
/// (`crate::index_expr::bound_expressions`) `columns + k`; conditions are found per slot.
struct KeySlots {
    columns: usize,
    expressions: Vec<(usize, usize, Expr)>,
}

impl KeySlots {
    fn of(table: &TableSchema) -> KeySlots {
        KeySlots { columns: table.columns.len(), expressions: crate::index_expr::bound_expressions(table) }
    }

    /// The slot an operand stands for: a column, or an expression an index has.
    fn slot(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Column(i) => Some(*i),
            _ => self.expressions.iter().position(|(_, _, x)| x == e).map(|k| self.columns + k),
        }
    }

    /// The slots of an index's parts, in key order.
    fn of_index(&self, index: usize, columns: &[usize]) -> Vec<usize> {
        let expression_slot = |part: usize| {
            self.expressions
                .iter()
                .position(|(i, p, _)| *i == index && *p == part)
                .map_or(usize::MAX, |k| self.columns + k)
        };
        columns
            .iter()
            .enumerate()
            .map(|(part, &c)| if c == crate::catalog::IndexSchema::EXPRESSION { expression_slot(part) } else { c })
            .collect()
    }
}

fn column_conditions(table: &TableSchema, conjuncts: &[Expr]) -> Vec<ColumnConds> {
    column_conditions_in(&KeySlots { columns: table.columns.len(), expressions: Vec::new() }, conjuncts)
}

fn column_conditions_in(slots: &KeySlots, conjuncts: &[Expr]) -> Vec<ColumnConds> {
    let mut conds: Vec<ColumnConds> =
        (0..slots.columns + slots.expressions.len()).map(|_| ColumnConds::default()).collect();
    for c in conjuncts {
        if let Expr::InList { expr, list, negated: false } = c {
            if let Some(col) = slots.slot(expr) {
                if !list.is_empty() && list.iter().all(is_key_value) {
                    if let Some(cond) = conds.get_mut(col) {
                        cond.any_of.get_or_insert_with(|| list.clone());
                    }
                }
            }
            continue;
        }
        // A boolean index expression as a whole conjunct (`WHERE a > 0`, `WHERE NOT (a > 0)`)
        // restricts its part to true (false).
        let (whole, truth) = match c {
            Expr::Not(x) => (&**x, false),
            _ => (c, true),
        };
        if !matches!(whole, Expr::Column(_)) {
            if let Some(slot) = slots.slot(whole).and_then(|col| conds.get_mut(col)) {
                slot.eq.get_or_insert(Expr::Const(Value::Bool(truth)));
            }
        }
        let Expr::Cmp(op, a, b) = c else { continue };
        let (col, op, value) = match (slots.slot(a), slots.slot(b)) {
            (Some(i), _) if is_key_value(b) => (i, *op, &**b),
            (_, Some(i)) if is_key_value(a) => (i, op.flip(), &**a),
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
    let mut access = KeyAccess { path, eq: Vec::new(), any_of: Vec::new(), lower: None, upper: None };
    for &c in columns {
        let Some(cond) = conds.get(c) else { break };
        if let Some(e) = &cond.eq {
            access.eq.push(e.clone());
            continue;
        }
        if let Some(list) = &cond.any_of {
            access.any_of = list.clone();
            break;
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
    let score =
        |a: &KeyAccess| (a.eq.len() + usize::from(!a.any_of.is_empty()), a.lower.is_some() || a.upper.is_some());
    let slots = KeySlots::of(table);
    let conds = if slots.expressions.is_empty() { conds } else { column_conditions_in(&slots, conjuncts) };
    for (i, index) in table.indexes.iter().enumerate() {
        let candidate = access_on(Path::Index(i), &slots.of_index(i, &index.columns), &conds);
        if score(&candidate) > score(&best) {
            best = candidate;
        }
    }
    best
}

/// The primary-key access of conjuncts, whatever path a scan would choose.
pub(crate) fn primary_key_access(table: &TableSchema, conjuncts: &[Expr]) -> KeyAccess {
    access_on(Path::PrimaryKey, &table.primary_key, &column_conditions(table, conjuncts))
}

/// The secondary-index access of conjuncts that restricts the index key most (same score
/// as `choose_access`), with the index's position; None when no index key is restricted.
pub(crate) fn best_index_access(table: &TableSchema, conjuncts: &[Expr]) -> Option<(usize, KeyAccess)> {
    let slots = KeySlots::of(table);
    let conds = column_conditions_in(&slots, conjuncts);
    let score =
        |a: &KeyAccess| (a.eq.len() + usize::from(!a.any_of.is_empty()), a.lower.is_some() || a.upper.is_some());
    let mut best: Option<(usize, KeyAccess)> = None;
    for (i, index) in table.indexes.iter().enumerate() {
        let candidate = access_on(Path::Index(i), &slots.of_index(i, &index.columns), &conds);
        if score(&candidate) > best.as_ref().map_or((0, false), |(_, b)| score(b)) {
            best = Some((i, candidate));
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
    if let Some(q) = &scan.derived {
        let _ = writeln!(out, "{:indent$}Derived {} filter {}", "", scan.table.name, Shown(&scan.filter, &names));
        describe_query(out, indent + 2, q);
        return;
    }
    let access = &scan.access;
    let parts: Vec<String> = match access.path {
        Path::PrimaryKey => access.key_columns(&scan.table).iter().map(|c| names(*c)).collect(),
        Path::Index(i) => crate::index_expr::part_exprs(&scan.table, i)
            .iter()
            .map(|e| match e {
                Expr::Column(c) => names(*c),
                e => Shown(e, &names).to_string(),
            })
            .collect(),
    };
    let key_cols: Vec<&String> = parts.iter().collect();
    let how = if access.is_point(&scan.table) {
        "point lookup on primary key".to_string()
    } else {
        let via = match access.path {
            Path::PrimaryKey => "primary key".to_string(),
            Path::Index(i) => format!("index {}", scan.table.indexes.get(i).map_or("?", |x| x.name.as_str())),
        };
        let ranged = access.lower.is_some() || access.upper.is_some() || !access.any_of.is_empty();
        if access.eq.is_empty() && !ranged && access.path == Path::PrimaryKey {
            "full scan".to_string()
        } else {
            format!("range scan on {via}")
        }
    };
    let mut keys: Vec<String> =
        access.eq.iter().zip(&key_cols).map(|(e, c)| format!("{c} = {}", Shown(e, &names))).collect();
    if let Some(col) = key_cols.get(access.eq.len()).filter(|_| !access.any_of.is_empty()) {
        let values: Vec<String> = access.any_of.iter().map(|e| Shown(e, &names).to_string()).collect();
        keys.push(format!("{col} IN ({})", values.join(", ")));
    }
    if let Some(col) = key_cols.get(access.eq.len()) {
        for (b, lt, le) in [(&access.lower, ">", ">="), (&access.upper, "<", "<=")] {
            if let Some(b) = b {
                keys.push(format!("{col} {} {}", if b.inclusive { le } else { lt }, Shown(&b.expr, &names)));
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
        QueryBody::Recursive { name, all, base, step, .. } => {
            let _ = writeln!(out, "{:indent$}Recursive {name}{}", "", if *all { " (UNION ALL)" } else { " (UNION)" });
            describe_body(out, indent + 2, base);
            describe_body(out, indent + 2, step);
        }
        QueryBody::WorkingTable(_) => {
            let _ = writeln!(out, "{:indent$}WorkingTable", "");
        }
        QueryBody::Select(core) => {
            let _ = writeln!(
                out,
                "{:indent$}Project ({} columns{})",
                "",
                core.output.len(),
                if core.distinct || core.distinct_on.is_some() { ", distinct" } else { "" }
            );
            let inner = indent + 2;
            if let Some(h) = &core.having {
                let _ = writeln!(out, "{:inner$}Having {h}", "");
            }
            if let Some(agg) = &core.aggregate {
                let _ = writeln!(
                    out,
                    "{:inner$}Aggregate ({} group keys, {} aggregates)",
                    "",
                    agg.group_by.len(),
                    agg.calls.len()
                );
            }
            describe_from(out, inner, &core.from, core.filter.as_ref());
        }
    }
}

/// A FROM list with the WHERE conjuncts left over the combined row.
fn describe_from(out: &mut String, indent: usize, from: &FromPlan, filter: Option<&Expr>) {
    if let Some(f) = filter {
        let _ = writeln!(out, "{:indent$}Filter {f}", "");
    }
    let Some(first) = &from.first else {
        let _ = writeln!(out, "{:indent$}One row", "");
        return;
    };
    let combined: Vec<String> = std::iter::once(&first.table)
        .chain(from.joins.iter().map(|j| &j.right.table))
        .flat_map(|t| t.columns.iter().map(move |c| format!("{}.{}", t.name, c.name)))
        .collect();
    let names = |i: usize| combined.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    describe_scan(out, indent, first);
    for step in &from.joins {
        let _ = writeln!(
            out,
            "{:indent$}{} join ({}){}",
            "",
            match step.kind {
                JoinKind::Inner => "Inner",
                JoinKind::Left => "Left",
                JoinKind::Right => "Right",
                JoinKind::Full => "Full",
            },
            if step.per_outer_row {
                "index nested loop"
            } else if step.hash_keys.is_empty() {
                "nested loop"
            } else {
                "hash"
            },
            step.condition.as_ref().map_or(String::new(), |c| format!(" on {}", Shown(c, &names)))
        );
        describe_scan(out, indent + 2, &step.right);
    }
}

/// The rows an UPDATE or DELETE changes.
fn describe_target_rows(out: &mut String, indent: usize, rows: &TargetRows) {
    match rows {
        TargetRows::Scan { scan, residual } => {
            if let Some(r) = residual {
                let _ = writeln!(out, "{:indent$}Filter {r}", "");
            }
            describe_scan(out, indent, scan);
        }
        TargetRows::Join { from, filter } => describe_from(out, indent, from, filter.as_ref()),
    }
}

fn describe_query(out: &mut String, indent: usize, q: &QueryPlan) {
    if !q.order_by.is_empty() {
        let keys: Vec<String> =
            q.order_by.iter().map(|k| format!("#{}{}", k.column, if k.desc { " DESC" } else { "" })).collect();
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
        let _ = writeln!(out, "Subquery {i}{}:", if sub.correlated { " (correlated, per row)" } else { "" });
        describe_query(&mut out, 2, &sub.plan);
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
            let _ = writeln!(out, "Update {}", p.table.name);
            describe_target_rows(&mut out, 2, &p.rows);
        }
        Statement::Delete(p) => {
            let _ = writeln!(out, "Delete from {}", p.table.name);
            describe_target_rows(&mut out, 2, &p.rows);
        }
        Statement::Ddl(change) => {
            let _ = writeln!(out, "Catalog change {change:?}");
        }
        Statement::Explain { .. } => out.push_str("Explain\n"),
        Statement::Txn(t) => {
            let _ = writeln!(out, "{t:?}");
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Column, IndexSchema};
    use crate::types::Value;

    fn table() -> TableSchema {
        let col = |name: &str| Column {
            name: name.into(),
            ty: SqlType::Int,
            limits: Default::default(),
            nullable: true,
            default: None,
            generated: None,
            volatile_default: None,
        };
        TableSchema {
            name: "t".into(),
            id: 0,
            columns: vec![col("a"), col("b"), col("c"), col("d")],
            primary_key: vec![0, 1],
            indexes: vec![
                IndexSchema {
                    name: "t_c".into(),
                    columns: vec![2],
                    unique: false,
                    orders: Vec::new(),
                    expressions: Vec::new(),
                },
                IndexSchema {
                    name: "t_cd".into(),
                    columns: vec![2, 3],
                    unique: true,
                    orders: Vec::new(),
                    expressions: Vec::new(),
                },
            ],
            constraints: Default::default(),
            stored_as: None,
        }
    }

    fn eq(col: usize, v: i64) -> Expr {
        Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(col)), Box::new(Expr::Const(Value::Int(v))))
    }

    fn gt(col: usize, v: i64) -> Expr {
        Expr::Cmp(CmpOp::Lt, Box::new(Expr::Const(Value::Int(v))), Box::new(Expr::Column(col)))
    }

    #[test]
    fn access_rules_are_fixed_and_data_independent() {
        let t = table();
        let full_pk = choose_access(&t, &[eq(1, 2), eq(0, 1), eq(2, 3), eq(3, 4)]);
        assert!(full_pk.is_point(&t), "a full primary key wins over a unique index");
        let prefix = choose_access(&t, &[eq(0, 1), eq(2, 3)]);
        assert_eq!((prefix.path.clone(), prefix.eq.len()), (Path::PrimaryKey, 1), "ties go to the primary key");
        let index = choose_access(&t, &[eq(2, 3), eq(3, 4), eq(0, 1)]);
        assert_eq!((index.path.clone(), index.eq.len()), (Path::Index(1), 2), "longest equality prefix");
        let range = choose_access(&t, &[gt(0, 5)]);
        assert_eq!(range.path, Path::PrimaryKey);
        assert_eq!(
            range.lower,
            Some(RangeBound { expr: Expr::Const(Value::Int(5)), inclusive: false }),
            "5 < a is a > 5"
        );
        let none = choose_access(&t, &[Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(2)), Box::new(Expr::Column(3)))]);
        assert!(
            none.eq.is_empty() && none.lower.is_none() && none.path == Path::PrimaryKey,
            "column = column is no key"
        );
    }

    #[test]
    fn outer_references_make_a_per_row_access() {
        let t = table();
        let by_outer = Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(2)), Box::new(Expr::Outer(7)));
        let access = choose_access(&t, &[by_outer]);
        assert_eq!(access.path, Path::Index(0));
        assert!(access_uses_outer(&access));
    }

    #[test]
    fn expression_types_follow_numeric_promotion() {
        let input = [Some(SqlType::Int), Some(SqlType::Numeric), Some(SqlType::Text)];
        let add = |a, b| Expr::Arith(crate::types::ArithOp::Add, Box::new(Expr::Column(a)), Box::new(Expr::Column(b)));
        assert_eq!(expr_type(&add(0, 0), &input), Some(SqlType::Int));
        assert_eq!(expr_type(&add(0, 1), &input), Some(SqlType::Numeric));
        assert_eq!(expr_type(&eq(2, 1), &input), Some(SqlType::Bool));
        assert_eq!(expr_type(&Expr::Param(0), &input), None);
    }

    use InputType::{Known, Literal, Opaque};

    fn common(inputs: &[InputType]) -> Result<Option<SqlType>> {
        common_type("CASE", inputs)
    }

    #[test]
    fn common_type_climbs_the_numeric_chain() {
        use SqlType::*;
        assert_eq!(common(&[Known(Int4), Known(Numeric)]).ok(), Some(Some(Numeric)));
        assert_eq!(common(&[Known(Int2), Known(Int)]).ok(), Some(Some(Int)));
        // numeric converts to real implicitly, not the other way round: real, not double.
        assert_eq!(common(&[Known(Numeric), Known(Float4)]).ok(), Some(Some(Float4)));
        assert_eq!(
            common(&[Known(Float4), Known(Float), Known(Int4)]).ok(),
            Some(Some(Float)),
            "double precision is preferred"
        );
        assert_eq!(common(&[Known(Date), Known(Timestamp)]).ok(), Some(Some(Timestamp)));
    }

    #[test]
    fn common_type_of_strings_keeps_the_first_unless_text() {
        use SqlType::*;
        assert_eq!(common(&[Known(Varchar), Known(Char)]).ok(), Some(Some(Varchar)));
        assert_eq!(common(&[Known(Char), Known(Varchar)]).ok(), Some(Some(Char)));
        assert_eq!(common(&[Known(Char), Known(Text)]).ok(), Some(Some(Char)), "text converts back implicitly");
        assert_eq!(common(&[Known(Text), Known(Char)]).ok(), Some(Some(Text)));
    }

    #[test]
    fn literals_take_the_type_of_the_others() {
        use SqlType::*;
        assert_eq!(common(&[Literal, Known(Int4), Literal]).ok(), Some(Some(Int4)));
        assert_eq!(common(&[Literal, Literal]).ok(), Some(Some(Text)), "all unknown: text");
        assert_eq!(common(&[Literal, Opaque]).ok(), Some(None), "a parameter may still decide");
        assert_eq!(common(&[Opaque, Known(Numeric)]).ok(), Some(Some(Numeric)));
    }

    #[test]
    fn categories_do_not_mix() {
        use SqlType::*;
        let e = common(&[Known(Text), Known(Int4)]).err();
        assert_eq!(e.as_ref().map(|e| e.state), Some(SqlState::DatatypeMismatch));
        assert_eq!(e.map(|e| e.message).as_deref(), Some("CASE types text and integer cannot be matched"));
        assert!(common(&[Known(Bool), Known(Int4)]).is_err());
        assert!(common(&[Known(Date), Known(Text)]).is_err());
    }

    #[test]
    fn nullif_takes_the_left_operand_type_of_equality() {
        use SqlType::*;
        let n = |a, b| nullif_type(a, b).ok().flatten();
        assert_eq!(n(Known(Int4), Known(Numeric)), Some(Numeric));
        assert_eq!(n(Known(Int2), Known(Int)), Some(Int2));
        assert_eq!(n(Known(Int4), Known(Float4)), Some(Float));
        assert_eq!(n(Known(Float4), Known(Numeric)), Some(Float4));
        assert_eq!(n(Known(Numeric), Known(Int4)), Some(Numeric));
        assert_eq!(n(Known(Varchar), Known(Varchar)), Some(Text));
        assert_eq!(n(Known(Varchar), Known(Char)), Some(Char));
        assert_eq!(n(Known(Char), Known(Text)), Some(Text));
        assert_eq!(n(Known(Date), Known(Timestamp)), Some(Date));
        assert_eq!(n(Literal, Known(Int4)), Some(Int4));
        assert_eq!(n(Known(Varchar), Literal), Some(Text));
        assert_eq!(n(Literal, Literal), Some(Text));
        assert_eq!(n(Opaque, Known(Int4)), Some(Int4));
        assert_eq!(n(Opaque, Literal), None);
        assert_eq!(nullif_type(Known(Int4), Known(Text)).err().map(|e| e.state), Some(SqlState::UndefinedFunction));
    }

    #[test]
    fn operators_postgresql_does_not_have() {
        use crate::types::ArithOp;
        use SqlType::*;
        assert_eq!(arith_type(ArithOp::Add, Date, Int4), Some(Date));
        assert_eq!(arith_type(ArithOp::Add, Date, Int), None, "no date + bigint");
        assert_eq!(arith_type(ArithOp::Mod, Float, Int4), None, "no % for floats");
        assert_eq!(arith_type(ArithOp::Mod, Numeric, Int4), Some(Numeric));
    }
}
