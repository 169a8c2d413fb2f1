//! Binding: resolves names in sqlparser's AST against the catalog and builds plans.

mod constraints;
mod ddl;
mod dml;
mod expr;
mod query;
mod recursive;
mod sequence;
mod srf;
mod system;
mod view;
mod window;

pub(crate) use view::{rename_column, rename_relation, view_query};

use crate::catalog::{Catalog, CatalogChange, Column, IndexSchema, TableSchema};
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{CmpOp, Env, Expr, Func};
use crate::plan::*;
use crate::types::{parse_decimal, ArithOp, ArrayElem, SqlType, TypeLimits, Value};
use sqlparser::ast as sql;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Lower-cases unquoted identifiers, as PostgreSQL does.
fn ident(i: &sql::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

fn object_name(n: &sql::ObjectName) -> Result<String> {
    let parts: Vec<&sql::Ident> = n.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.as_slice() {
        [name] => Ok(ident(name)),
        [schema, name] if ident(schema) == "public" => Ok(ident(name)),
        _ => Err(SqlError::unsupported(format!("qualified name {n}"))),
    }
}

/// A function name, possibly qualified with pg_catalog (where every built-in function is).
fn function_name(n: &sql::ObjectName) -> Result<String> {
    let parts: Vec<&sql::Ident> = n.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.as_slice() {
        [name] => Ok(ident(name)),
        [schema, name] if ident(schema) == "pg_catalog" => Ok(ident(name)),
        _ => Err(SqlError::unsupported(format!("function {n}"))),
    }
}

/// The first stored table a statement names, read from its syntax alone (no catalog): the
/// target of INSERT / UPDATE / DELETE, or the first FROM relation of a SELECT. None for
/// anything else, or a name the binder would refuse.
pub(crate) fn first_named_table(statement: &sql::Statement) -> Option<String> {
    let relation = |twj: &sql::TableWithJoins| match &twj.relation {
        sql::TableFactor::Table { name, .. } => object_name(name).ok(),
        _ => None,
    };
    match statement {
        sql::Statement::Insert(i) => match &i.table {
            sql::TableObject::TableName(name) => object_name(name).ok(),
            _ => None,
        },
        sql::Statement::Update(u) => relation(&u.table),
        sql::Statement::Delete(d) => match &d.from {
            sql::FromTable::WithFromKeyword(v) | sql::FromTable::WithoutKeyword(v) => v.first().and_then(relation),
        },
        sql::Statement::Query(q) => match q.body.as_ref() {
            sql::SetExpr::Select(select) => select.from.first().and_then(relation),
            _ => None,
        },
        _ => None,
    }
}

fn unsupported<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(SqlError::unsupported(what))
}

/// Bound on the extra bindings done to find outer-level aggregates (see `Binder::rebinds`);
/// beyond it the statement fails with 54001.
const MAX_REBINDS: usize = 4096;

/// Longest declared VARCHAR(n)/CHAR(n), as in PostgreSQL (it also bounds CHAR padding).
const MAX_CHAR_LENGTH: u32 = 10_485_760;

/// Maps a declared SQL type to an engine type plus limits.
pub(crate) fn data_type(t: &sql::DataType) -> Result<(SqlType, TypeLimits)> {
    use sql::DataType as D;
    let none = TypeLimits::default();
    let text_len = |len: &Option<sql::CharacterLength>| -> Result<TypeLimits> {
        match len {
            Some(sql::CharacterLength::IntegerLength { length, .. }) => {
                let n = u32::try_from(*length).ok().filter(|n| (1..=MAX_CHAR_LENGTH).contains(n)).ok_or_else(|| {
                    SqlError::new(
                        SqlState::InvalidParameterValue,
                        format!("length for type varchar must be between 1 and {MAX_CHAR_LENGTH}"),
                    )
                })?;
                Ok(TypeLimits { max_len: Some(n), numeric: None })
            }
            _ => Ok(TypeLimits::default()),
        }
    };
    Ok(match t {
        D::SmallInt(_) | D::Int2(_) => (SqlType::Int2, none),
        D::Int(_) | D::Integer(_) | D::Int4(_) => (SqlType::Int4, none),
        D::BigInt(_) | D::Int8(_) => (SqlType::Int, none),
        D::Numeric(info) | D::Decimal(info) => {
            let numeric = match info {
                sql::ExactNumberInfo::None => None,
                sql::ExactNumberInfo::Precision(p) => Some((*p, 0)),
                sql::ExactNumberInfo::PrecisionAndScale(p, s) => Some((*p, u64::try_from(*s).unwrap_or(u64::MAX))),
            };
            let numeric = match numeric {
                None => None,
                Some((p, s)) if (1..=28).contains(&p) && s <= p => Some((p as u32, s as u32)),
                Some(_) => {
                    return err(
                        SqlState::InvalidParameterValue,
                        "NUMERIC precision must be 1..28 and scale 0..precision",
                    )
                }
            };
            (SqlType::Numeric, TypeLimits { max_len: None, numeric })
        }
        // FLOAT(p) is real up to 24 bits of precision, double precision above.
        D::Float(sql::ExactNumberInfo::Precision(p)) if (1..=24).contains(p) => (SqlType::Float4, none),
        D::Real | D::Float4 => (SqlType::Float4, none),
        D::Float(_) | D::Float8 | D::Double(_) | D::DoublePrecision => (SqlType::Float, none),
        D::Text | D::String(_) => (SqlType::Text, none),
        D::Varchar(len) | D::CharacterVarying(len) => (SqlType::Varchar, text_len(len)?),
        // CHAR without a length is CHAR(1).
        D::Char(None) | D::Character(None) => (SqlType::Char, TypeLimits { max_len: Some(1), numeric: None }),
        D::Char(len) | D::Character(len) => (SqlType::Char, text_len(len)?),
        D::Bool | D::Boolean => (SqlType::Bool, none),
        D::Bytea => (SqlType::Bytes, none),
        D::JSONB => (SqlType::Jsonb, none),
        D::Date => (SqlType::Date, none),
        D::Timestamp(_, sql::TimezoneInfo::None | sql::TimezoneInfo::WithoutTimeZone) => (SqlType::Timestamp, none),
        D::Timestamp(_, sql::TimezoneInfo::WithTimeZone | sql::TimezoneInfo::Tz) => (SqlType::TimestampTz, none),
        D::Uuid => (SqlType::Uuid, none),
        D::Interval { fields: None, precision: None } => (SqlType::Interval, none),
        D::Interval { .. } => return unsupported("interval fields and precision (INTERVAL YEAR, INTERVAL(3))"),
        other => return unsupported(format!("type {other}")),
    })
}

/// The type a CAST names: a column type, or a one-dimensional array of one (arrays are
/// values, never columns).
pub(crate) fn cast_type(t: &sql::DataType) -> Result<(SqlType, TypeLimits)> {
    use sql::ArrayElemTypeDef as A;
    match t {
        sql::DataType::Array(A::SquareBracket(inner, None) | A::AngleBracket(inner)) => {
            let (element, _) = data_type(inner)?;
            let element = ArrayElem::of(element)
                .ok_or_else(|| SqlError::new(SqlState::FeatureNotSupported, format!("type {t} is not supported")))?;
            Ok((SqlType::Array(element), TypeLimits::default()))
        }
        sql::DataType::Interval { fields: None, precision: None } => Ok((SqlType::Interval, TypeLimits::default())),
        // json is a type of values, not of columns.
        sql::DataType::JSON => Ok((SqlType::Json, TypeLimits::default())),
        other => data_type(other),
    }
}

fn literal(v: &sql::Value) -> Result<Value> {
    use sql::Value as V;
    Ok(match v {
        V::Number(s, _) => match s.parse::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Numeric(parse_decimal(s).ok_or_else(|| {
                SqlError::new(SqlState::NumericValueOutOfRange, format!("numeric literal {s} out of range"))
            })?),
        },
        V::SingleQuotedString(s) | V::EscapedStringLiteral(s) | V::NationalStringLiteral(s) => Value::Text(s.clone()),
        V::DollarQuotedString(d) => Value::Text(d.value.clone()),
        V::HexStringLiteral(h) => {
            let digits: Vec<u8> = h.bytes().collect();
            if !digits.len().is_multiple_of(2) {
                return err(SqlState::InvalidTextRepresentation, "invalid hexadecimal data: odd number of digits");
            }
            let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let bytes = digits
                .chunks(2)
                .map(|pair| match pair {
                    [hi, lo] => Some(nibble(*hi)? * 16 + nibble(*lo)?),
                    _ => None,
                })
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| SqlError::new(SqlState::InvalidTextRepresentation, "invalid hexadecimal digit"))?;
            Value::Bytes(bytes)
        }
        V::Boolean(b) => Value::Bool(*b),
        V::Null => Value::Null,
        other => return unsupported(format!("literal {other}")),
    })
}

/// True for a quoted string or NULL literal, possibly parenthesized: PostgreSQL types it
/// `unknown` until its context gives it a type ('3' is an integer where an integer is
/// expected).
fn is_untyped_literal(e: &sql::Expr) -> bool {
    use sql::Value as V;
    match e {
        sql::Expr::Nested(inner) => is_untyped_literal(inner),
        sql::Expr::Value(v) => matches!(
            v.value,
            V::SingleQuotedString(_) | V::EscapedStringLiteral(_) | V::DollarQuotedString(_) | V::Null
        ),
        _ => false,
    }
}

/// A cast to `ty` without modifiers.
fn cast_to(e: Expr, ty: SqlType) -> Expr {
    Expr::Cast { expr: Box::new(e), ty, limits: TypeLimits::default() }
}

/// A constant of static type `ty`: the value alone where its own type says so, otherwise
/// wrapped in a cast that carries the type (a smallint 1, a CHAR 'a').
fn typed_const(v: Value, ty: SqlType) -> Expr {
    if v.is_null() || literal_type(&v) == Some(ty) {
        Expr::Const(v)
    } else {
        cast_to(Expr::Const(v), ty)
    }
}

/// A NULL of static type `ty`.
fn typed_null(ty: SqlType) -> Expr {
    cast_to(Expr::Const(Value::Null), ty)
}

/// Converts an operand to the type `to` its context resolved: a literal is read as a value of
/// that type now (bad input fails with 22P02 while binding, as in PostgreSQL), an operand of
/// another type is cast at run time, and so is one whose type is known only at run time (a
/// parameter: the cast gives it its type), so that values always have the static type.
fn coerce(e: Expr, from: InputType, to: SqlType) -> Result<Expr> {
    Ok(match (from, e) {
        (_, e @ Expr::Const(Value::Null)) => e,
        (InputType::Literal, Expr::Const(v)) => typed_const(crate::types::cast(&v, to)?, to),
        (InputType::Known(t), e) if t != to => cast_to(e, to),
        (InputType::Opaque, e) => cast_to(e, to),
        (_, e) => e,
    })
}

/// `coerce` in place.
fn coerce_in_place(e: &mut Expr, from: InputType, to: SqlType) -> Result<()> {
    *e = coerce(std::mem::replace(e, Expr::Const(Value::Null)), from, to)?;
    Ok(())
}

/// Brings output column `i` of a set-operation operand, of input type `from`, to type `to`.
fn coerce_column(body: &mut QueryBody, i: usize, from: InputType, to: SqlType) -> Result<()> {
    match body {
        QueryBody::Select(core) => core.output.get_mut(i).map_or(Ok(()), |e| coerce_in_place(e, from, to)),
        QueryBody::Values(rows) => {
            rows.iter_mut().filter_map(|r| r.get_mut(i)).try_for_each(|e| coerce_in_place(e, from, to))
        }
        QueryBody::SetOp { left, right, .. } | QueryBody::Recursive { base: left, step: right, .. } => {
            coerce_column(left, i, from, to)?;
            coerce_column(right, i, from, to)
        }
        QueryBody::WorkingTable(_) => Ok(()),
    }
}

#[derive(Clone)]
struct ScopeCol {
    table: String,
    name: String,
    ty: Option<SqlType>,
    limits: TypeLimits,
}

/// The columns visible to an expression: the concatenated rows of the FROM tables.
#[derive(Clone, Default)]
struct Scope {
    cols: Vec<ScopeCol>,
    /// Columns that exist but may not be referenced: those of a grouped query that are not
    /// grouped, as seen from a subquery (named in the error).
    ungrouped: Vec<ScopeCol>,
    /// Right-hand columns of USING / NATURAL joins: reachable only qualified (the bare name
    /// is the join's merged column, the left one, as for inner and left joins in PostgreSQL)
    /// and left out of `*`.
    merged: BTreeSet<usize>,
    /// The columns of `*` in order, once a USING join has moved its merged columns first.
    star: Option<Vec<usize>>,
}

impl Scope {
    fn of_table(table: &TableSchema, alias: &str) -> Scope {
        let mut s = Scope::default();
        s.add_table(table, alias);
        s
    }

    fn add_derived(&mut self, alias: &str, plan: &QueryPlan) {
        self.cols.extend(plan.names.iter().zip(&plan.types).zip(&plan.limits).map(|((n, t), l)| ScopeCol {
            table: alias.to_string(),
            name: n.clone(),
            ty: *t,
            limits: l.clone(),
        }));
    }

    fn add_table(&mut self, table: &TableSchema, alias: &str) {
        self.cols.extend(table.columns.iter().map(|c| ScopeCol {
            table: alias.to_string(),
            name: c.name.clone(),
            ty: Some(c.ty),
            limits: c.limits.clone(),
        }));
    }

    fn types(&self) -> Vec<Option<SqlType>> {
        self.cols.iter().map(|c| c.ty).collect()
    }

    /// The scope of a grouped query's output row `[group keys..., aggregates...]`, as a
    /// subquery sees it: group keys that are plain columns keep their names.
    fn grouped(&self, ctx: &AggCtx) -> Scope {
        let hidden = |ty| ScopeCol { table: String::new(), name: String::new(), ty, limits: TypeLimits::default() };
        let input = self.types();
        let mut grouped = Scope::default();
        for g in &ctx.group_bound {
            grouped.cols.push(match g {
                Expr::Column(c) => self.cols.get(*c).cloned().unwrap_or_else(|| hidden(None)),
                other => hidden(expr_type(other, &input)),
            });
        }
        grouped.cols.extend(ctx.calls.iter().map(|c| hidden(aggregate_type(c))));
        grouped.ungrouped = self
            .cols
            .iter()
            .enumerate()
            .filter(|(i, _)| !ctx.group_bound.contains(&Expr::Column(*i)))
            .map(|(_, c)| c.clone())
            .collect();
        grouped
    }

    fn find(&self, table: Option<&str>, name: &str) -> Vec<usize> {
        self.cols
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                // The hidden row id may be read by name (no client can write NUL in an
                // identifier over the wire; the gateway pages through tables by it).
                let nameable = !c.name.starts_with('\0') || c.name == crate::catalog::ROW_ID_COLUMN;
                c.name == name && nameable && table.map_or(!self.merged.contains(i), |t| t == c.table)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The columns `*` expands to, in order: hidden ones (row id, dropped columns) left out.
    fn star_columns(&self) -> Vec<usize> {
        match &self.star {
            Some(order) => order.clone(),
            None => {
                (0..self.cols.len()).filter(|i| self.cols.get(*i).is_some_and(|c| !c.name.starts_with('\0'))).collect()
            }
        }
    }
}

/// State for binding a grouped query: group keys and the aggregate calls found so far.
struct AggCtx {
    group_ast: Vec<sql::Expr>,
    group_bound: Vec<Expr>,
    calls: Vec<AggCall>,
}

/// How an enclosing query takes an outer-level aggregate of a subquery being bound (an
/// aggregate whose argument references only that query's columns belongs to it, as in
/// PostgreSQL: it is computed over that query's rows and is a constant for the subquery).
enum OuterAgg {
    /// Aggregates are not allowed where the subquery appears (the clause, for the error).
    NotAllowed(&'static str),
    /// The query's aggregate-detection pass: set when one occurs.
    Detect(bool),
    /// The query is grouped: a call joins its aggregates (after its `group_len` group keys in
    /// the grouped row); its argument is bound over `scope`, the query's FROM row.
    Agg { scope: Scope, group_len: usize, calls: Vec<AggCall> },
}

enum Mode<'m> {
    /// Aggregates are an error; the string names the clause.
    Plain(&'static str),
    /// Only detects whether an aggregate call occurs.
    Detect(&'m mut bool),
    /// Binds over the grouped row `[group keys..., aggregates...]`.
    Agg(&'m mut AggCtx),
}

fn aggregate_function(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "array_agg" => AggFunc::ArrayAgg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "string_agg" => AggFunc::StringAgg,
        "jsonb_agg" => AggFunc::JsonbAgg,
        "jsonb_object_agg" => AggFunc::JsonbObjectAgg,
        _ => return None,
    })
}

fn output_name(e: &sql::Expr) -> String {
    match e {
        sql::Expr::Identifier(i) => ident(i),
        sql::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        sql::Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default(),
        sql::Expr::Nested(inner) => output_name(inner),
        sql::Expr::Cast { expr, .. } => output_name(expr),
        _ => "?column?".to_string(),
    }
}

pub(crate) struct Binder<'c> {
    catalog: &'c Catalog,
    /// What an ALTER TABLE … RENAME TO may rename: `ALTER VIEW` and `ALTER SEQUENCE … RENAME
    /// TO`, which sqlparser does not read, come as ALTER TABLE naming their kind.
    pub(crate) rename_only: Option<RelationKind>,
    /// The target of `INSERT … ON CONFLICT` when sqlparser does not read it (index
    /// expressions, an index predicate): parsed apart, the statement parsed without it.
    pub(crate) conflict_inference: Option<ConflictInference>,
    subqueries: Vec<Subquery>,
    /// Lowest enclosing level referenced (`Expr::Enclosing`) since the innermost subquery
    /// being bound started: a subquery at depth d is correlated if this is below d.
    min_level: Option<usize>,
    /// Enclosing levels referenced while an aggregate's argument is bound to find the query
    /// it belongs to, nested subqueries included (see `aggregate_level`).
    levels_seen: Option<BTreeSet<usize>>,
    /// WITH queries in scope, innermost last.
    ctes: Vec<(String, QueryPlan)>,
    param_count: usize,
    param_types: Vec<Option<SqlType>>,
    /// Sequences the statement draws from or reads, in order of first use.
    sequences: Vec<String>,
    /// Of those, the ones it draws from (nextval) and the ones it sets (setval): never both.
    sequences_drawn: Vec<String>,
    sequences_set: Vec<String>,
    /// `Plan::notice`.
    notice: Option<String>,
    /// Nesting of expression binding within the current (sub)query; parameter types are
    /// inferred once per outermost expression.
    expr_nesting: usize,
    anonymous_params: usize,
    outer_scopes: Vec<Scope>,
    /// For each enclosing query (parallel to `outer_scopes`): how it takes outer-level
    /// aggregates.
    outer_aggs: Vec<OuterAgg>,
    /// Subqueries and aggregate arguments bound a second time to find outer-level aggregates
    /// (each nesting level doubles the work: bounded, see `MAX_REBINDS`).
    rebinds: usize,
    depth: usize,
    max_depth: usize,
    /// Statement text, for error messages that must not render a (possibly huge) AST.
    sql: &'c str,
    /// Whether window calls are allowed where binding is, and those of the current SELECT.
    windows: window::WindowState,
    /// Whether set-returning calls are allowed where binding is, and those of the current
    /// SELECT's select list.
    srfs: srf::SrfState,
    /// Ids given to recursive queries' working tables so far.
    next_working_id: usize,
    /// Recursive queries whose recursive term is being bound: (working table id, references
    /// seen, subquery depth of the term).
    working_refs: Vec<(usize, usize, usize)>,
    /// Views whose query is being bound where a FROM names them, innermost last.
    expanding_views: Vec<String>,
    /// Tables and views the statement names itself (outside the views it expands).
    relations_named: BTreeSet<String>,
    /// Every view the statement reads, in order of first use.
    views_read: Vec<String>,
}

/// An `ON CONFLICT (element, …) [WHERE predicate]` target: each element a column or an
/// index expression, the predicate PostgreSQL's partial-index inference.
#[derive(Clone, Debug)]
pub(crate) struct ConflictInference {
    pub elements: Vec<sql::Expr>,
    pub predicate: Option<sql::Expr>,
}

/// A kind of relation an ALTER statement names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelationKind {
    View,
    Sequence,
}

impl<'c> Binder<'c> {
    pub fn new(catalog: &'c Catalog, max_depth: usize, sql: &'c str) -> Self {
        Binder {
            catalog,
            rename_only: None,
            conflict_inference: None,
            subqueries: Vec::new(),
            min_level: None,
            levels_seen: None,
            ctes: Vec::new(),
            param_count: 0,
            param_types: Vec::new(),
            sequences: Vec::new(),
            sequences_drawn: Vec::new(),
            sequences_set: Vec::new(),
            notice: None,
            expr_nesting: 0,
            anonymous_params: 0,
            outer_scopes: Vec::new(),
            outer_aggs: Vec::new(),
            rebinds: 0,
            depth: 0,
            max_depth,
            sql,
            windows: window::WindowState::Denied("this context"),
            srfs: srf::SrfState::Denied("this context"),
            next_working_id: 0,
            working_refs: Vec::new(),
            expanding_views: Vec::new(),
            relations_named: BTreeSet::new(),
            views_read: Vec::new(),
        }
    }

    fn table(&mut self, name: &sql::ObjectName) -> Result<Arc<TableSchema>> {
        let name = object_name(name)?;
        if self.catalog.view(&name).is_some() {
            return unsupported(format!("writing, altering or indexing view \"{name}\" (views are read-only)"));
        }
        self.named_relation(&name);
        self.catalog
            .table(&name)
            .cloned()
            .ok_or_else(|| SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
    }

    /// The system relation (see `crate::system`) a FROM name refers to, as a constant derived
    /// table with its default alias: `pg_catalog.x`, `information_schema.x`, or an
    /// unqualified `x` of pg_catalog (searched before public, as in PostgreSQL). A name in
    /// those schemas that Pistou does not compute, or an unqualified `pg_…` name that is no
    /// table, fails with 0A000.
    fn system_relation(&self, n: &sql::ObjectName) -> Result<Option<(String, QueryPlan)>> {
        let parts: Vec<String> = n.0.iter().filter_map(|p| p.as_ident()).map(ident).collect();
        let (schema, name) = match parts.as_slice() {
            [name] => ("pg_catalog", name.as_str()),
            [schema, name] if schema == "pg_catalog" || schema == "information_schema" => {
                (schema.as_str(), name.as_str())
            }
            _ => return Ok(None),
        };
        let Some(relation) = crate::system::relation(self.catalog, schema, name) else {
            let user_relation = self.catalog.table(name).is_some() || self.catalog.view(name).is_some();
            if parts.len() == 2 || (name.starts_with("pg_") && !user_relation) {
                return unsupported(format!(
                    "system relation {schema}.{name} (docs/sql.md lists the pg_catalog and information_schema relations Pistou has)"
                ));
            }
            return Ok(None);
        };
        let width = relation.columns.len();
        let rows =
            relation.rows.into_iter().map(|r| r.into_iter().map(Expr::Const).collect::<Vec<_>>()).collect::<Vec<_>>();
        if rows.iter().any(|r| r.len() != width) {
            return err(SqlState::InternalError, format!("system relation {schema}.{name} has a malformed row"));
        }
        let plan = QueryPlan {
            body: QueryBody::Values(rows),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            names: relation.columns.iter().map(|(n, _)| n.to_string()).collect(),
            types: relation.columns.iter().map(|(_, t)| Some(*t)).collect(),
            limits: vec![TypeLimits::default(); width],
            untyped: vec![false; width],
            depth: self.outer_scopes.len(),
        };
        Ok(Some((name.to_string(), plan)))
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return err(SqlState::StatementTooComplex, "statement is nested too deeply");
        }
        Ok(())
    }

    pub fn plan(mut self, stmt: &sql::Statement) -> Result<Plan> {
        let statement = self.statement(stmt);
        if self.rebinds > MAX_REBINDS {
            return err(SqlState::StatementTooComplex, "statement nests too many subqueries with aggregates");
        }
        let statement = statement?;
        let mut param_types = self.param_types;
        param_types.resize(self.param_count, None);
        Ok(Plan {
            statement,
            subqueries: self.subqueries,
            param_count: self.param_count,
            param_types,
            sequences: self.sequences,
            sequences_set: self.sequences_set,
            views: self.views_read,
            notice: self.notice,
        })
    }

    fn statement(&mut self, stmt: &sql::Statement) -> Result<Statement> {
        use sql::Statement as S;
        Ok(match stmt {
            S::Query(q) => Statement::Query(self.query(q)?),
            S::Insert(i) => Statement::Insert(self.insert(i)?),
            S::Update(u) => Statement::Update(self.update(u)?),
            S::Delete(d) => Statement::Delete(self.delete(d)?),
            S::CreateTable(c) => Statement::Ddl(self.create_table(c)?),
            S::CreateIndex(c) => Statement::Ddl(self.create_index(c)?),
            S::AlterTable(a) => Statement::Ddl(self.alter_table(a)?),
            S::AlterIndex { name, operation } => Statement::Ddl(self.alter_index(name, operation)?),
            S::CreateView(c) => Statement::Ddl(self.create_view(c)?),
            S::CreateSequence { temporary, if_not_exists, name, data_type, sequence_options, owned_by } => {
                Statement::Ddl(self.create_sequence(
                    *if_not_exists,
                    *temporary,
                    name,
                    data_type.as_ref(),
                    sequence_options,
                    owned_by.as_ref(),
                )?)
            }
            S::Drop { object_type, if_exists, names, cascade, .. } => {
                if *cascade {
                    return unsupported("DROP ... CASCADE");
                }
                let [name] = names.as_slice() else { return unsupported("dropping several objects at once") };
                Statement::Ddl(self.drop(object_type, *if_exists, name)?)
            }
            S::Explain { analyze, statement, .. } => {
                let inner = Binder::new(self.catalog, self.max_depth, self.sql).plan(statement)?;
                let runs = matches!(
                    inner.statement,
                    Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
                );
                if *analyze && !runs {
                    return unsupported("EXPLAIN ANALYZE of a statement other than SELECT, INSERT, UPDATE or DELETE");
                }
                self.param_count = inner.param_count;
                self.param_types = inner.param_types.clone();
                Statement::Explain { inner: Box::new(inner), analyze: *analyze }
            }
            S::StartTransaction { statements, .. } if statements.is_empty() => Statement::Txn(TxnControl::Begin),
            S::Commit { chain: false, .. } => Statement::Txn(TxnControl::Commit),
            S::Rollback { chain: false, savepoint: None } => Statement::Txn(TxnControl::Rollback),
            _ => {
                return unsupported(format!(
                    "statement {}",
                    self.sql.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
                ))
            }
        })
    }
}

/// Key role declared on a column definition.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ColumnKey {
    None,
    Primary,
    Unique,
}

/// One FROM table with its join kind and ON conjuncts (over the full FROM row).
pub(crate) struct FromItem {
    table: Arc<TableSchema>,
    alias: String,
    offset: usize,
    kind: JoinKind,
    on: Vec<Expr>,
    derived: Option<Box<QueryPlan>>,
}

/// A planned query body with its output column names, static types, limits and untyped
/// literal columns (see `QueryPlan::untyped`).
type BodyWithColumns = (QueryBody, Vec<String>, Vec<Option<SqlType>>, Vec<TypeLimits>, Vec<bool>);
/// Output column names, static types, limits and untyped literal columns.
type OutputColumns = (Vec<String>, Vec<Option<SqlType>>, Vec<TypeLimits>, Vec<bool>);
/// A planned SELECT with its output columns and ORDER BY keys.
type SelectWithColumns = (SelectCore, OutputColumns, Vec<SortKey>);

/// A conjunct over the FROM row paired with its form over the inner table's row.
type ConjunctPair = (Expr, Expr);

fn collect_columns(e: &Expr, f: &mut dyn FnMut(usize)) {
    if let Expr::Column(c) = e {
        f(*c);
    }
    for child in e.children() {
        collect_columns(child, f);
    }
}

fn scan_plan(table: Arc<TableSchema>, conjuncts: Vec<Expr>) -> ScanPlan {
    let access = choose_access(&table, &conjuncts);
    ScanPlan { table, access, filter: Expr::conjunction(conjuncts), derived: None }
}

/// Applies `AS alias (c1, c2, ...)` column names to a derived table's output.
fn rename_columns(plan: &mut QueryPlan, alias: &sql::TableAlias) -> Result<()> {
    if alias.columns.is_empty() {
        return Ok(());
    }
    if alias.columns.len() > plan.names.len() {
        return err(
            SqlState::InvalidColumnReference,
            format!(
                "table \"{}\" has {} columns available but {} columns specified",
                ident(&alias.name),
                plan.names.len(),
                alias.columns.len()
            ),
        );
    }
    for (name, col) in plan.names.iter_mut().zip(&alias.columns) {
        if col.data_type.is_some() {
            return unsupported("typed column aliases");
        }
        *name = ident(&col.name);
    }
    Ok(())
}

/// Binds the SQL expression `text` over the columns of `table` (a CHECK constraint).
pub(crate) fn bind_table_expr(
    catalog: &Catalog,
    table: &TableSchema,
    text: &str,
    clause: &'static str,
) -> Result<Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let depth = crate::engine::Limits::default().max_depth;
    let ast = sqlparser::parser::Parser::new(&dialect)
        .with_recursion_limit(depth)
        .try_with_sql(text)
        .and_then(|mut p| {
            let e = p.parse_expr()?;
            p.expect_token(&sqlparser::tokenizer::Token::EOF)?;
            Ok(e)
        })
        .map_err(|e| SqlError::new(SqlState::SyntaxError, format!("{clause} expression: {e}")))?;
    let mut binder = Binder::new(catalog, depth * 4, text);
    let scope = Scope::of_table(table, &table.name);
    let e = binder.expr(&ast, &scope, &mut Mode::Plain(clause))?;
    if !binder.subqueries.is_empty() || binder.param_count > 0 {
        return unsupported(format!("a subquery or parameter in a {clause} constraint"));
    }
    Ok(e)
}

/// Every column position an expression references (with repeats).
pub(crate) fn collect_all_columns(e: &Expr, out: &mut Vec<usize>) {
    if let Expr::Column(c) = e {
        out.push(*c);
    }
    for child in e.children() {
        collect_all_columns(child, out);
    }
}
