//! Binding: resolves names in sqlparser's AST against the catalog and builds plans.

use crate::catalog::{Catalog, CatalogChange, Column, IndexSchema, TableSchema};
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{CmpOp, Env, Expr, Func};
use crate::plan::*;
use crate::types::{parse_decimal, ArithOp, SqlType, TypeLimits, Value};
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

fn unsupported<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(SqlError::unsupported(what))
}

/// Maps a declared SQL type to an engine type plus limits.
pub(crate) fn data_type(t: &sql::DataType) -> Result<(SqlType, TypeLimits)> {
    use sql::DataType as D;
    let none = TypeLimits::default();
    let text_len = |len: &Option<sql::CharacterLength>| -> Result<TypeLimits> {
        match len {
            Some(sql::CharacterLength::IntegerLength { length, .. }) => {
                let n = u32::try_from(*length).ok().filter(|n| *n > 0).ok_or_else(|| {
                    SqlError::new(SqlState::InvalidParameterValue, "length for type varchar must be between 1 and 4294967295")
                })?;
                Ok(TypeLimits { max_len: Some(n), numeric: None })
            }
            _ => Ok(TypeLimits::default()),
        }
    };
    Ok(match t {
        D::Int(_) | D::Integer(_) | D::BigInt(_) | D::SmallInt(_) | D::Int2(_) | D::Int4(_) | D::Int8(_) => (SqlType::Int, none),
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
                    return err(SqlState::InvalidParameterValue, "NUMERIC precision must be 1..28 and scale 0..precision")
                }
            };
            (SqlType::Numeric, TypeLimits { max_len: None, numeric })
        }
        D::Float(_) | D::Real | D::Float4 | D::Float8 | D::Double(_) | D::DoublePrecision => (SqlType::Float, none),
        D::Text | D::String(_) => (SqlType::Text, none),
        D::Varchar(len) | D::CharacterVarying(len) | D::Char(len) | D::Character(len) => (SqlType::Text, text_len(len)?),
        D::Bool | D::Boolean => (SqlType::Bool, none),
        D::Bytea => (SqlType::Bytes, none),
        other => return unsupported(format!("type {other}")),
    })
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
            if digits.len() % 2 != 0 {
                return err(SqlState::InvalidTextRepresentation, "invalid hexadecimal data: odd number of digits");
            }
            let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            let bytes = digits
                .chunks(2)
                .map(|pair| Some(nibble(pair[0])? * 16 + nibble(pair[1])?))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| SqlError::new(SqlState::InvalidTextRepresentation, "invalid hexadecimal digit"))?;
            Value::Bytes(bytes)
        }
        V::Boolean(b) => Value::Bool(*b),
        V::Null => Value::Null,
        other => return unsupported(format!("literal {other}")),
    })
}

#[derive(Clone)]
struct ScopeCol {
    table: String,
    name: String,
}

/// The columns visible to an expression: the concatenated rows of the FROM tables.
#[derive(Clone, Default)]
struct Scope {
    cols: Vec<ScopeCol>,
}

impl Scope {
    fn of_table(table: &TableSchema, alias: &str) -> Scope {
        let mut s = Scope::default();
        s.add_table(table, alias);
        s
    }

    fn add_table(&mut self, table: &TableSchema, alias: &str) {
        self.cols.extend(table.columns.iter().map(|c| ScopeCol { table: alias.to_string(), name: c.name.clone() }));
    }

    fn find(&self, table: Option<&str>, name: &str) -> Vec<usize> {
        self.cols
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name == name && table.is_none_or(|t| t == c.table))
            .map(|(i, _)| i)
            .collect()
    }
}

/// State for binding a grouped query: group keys and the aggregate calls found so far.
struct AggCtx {
    group_ast: Vec<sql::Expr>,
    group_bound: Vec<Expr>,
    calls: Vec<AggCall>,
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
    subqueries: Vec<QueryPlan>,
    param_count: usize,
    anonymous_params: usize,
    outer_scopes: Vec<Scope>,
    depth: usize,
    max_depth: usize,
}

impl<'c> Binder<'c> {
    pub fn new(catalog: &'c Catalog, max_depth: usize) -> Self {
        Binder { catalog, subqueries: Vec::new(), param_count: 0, anonymous_params: 0, outer_scopes: Vec::new(), depth: 0, max_depth }
    }

    fn table(&self, name: &sql::ObjectName) -> Result<Arc<TableSchema>> {
        let name = object_name(name)?;
        self.catalog
            .table(&name)
            .cloned()
            .ok_or_else(|| SqlError::new(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist")))
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return err(SqlState::StatementTooComplex, "statement is nested too deeply");
        }
        Ok(())
    }

    pub fn plan(mut self, stmt: &sql::Statement) -> Result<Plan> {
        let statement = self.statement(stmt)?;
        Ok(Plan { statement, subqueries: self.subqueries, param_count: self.param_count })
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
            S::Drop { object_type, if_exists, names, cascade, .. } => {
                if *cascade {
                    return unsupported("DROP ... CASCADE");
                }
                let [name] = names.as_slice() else { return unsupported("dropping several objects at once") };
                Statement::Ddl(self.drop(object_type, *if_exists, name)?)
            }
            S::Explain { analyze, statement, .. } => {
                if *analyze {
                    return unsupported("EXPLAIN ANALYZE");
                }
                let inner = Binder::new(self.catalog, self.max_depth).plan(statement)?;
                self.param_count = inner.param_count;
                Statement::Explain(Box::new(inner))
            }
            S::StartTransaction { statements, .. } if statements.is_empty() => Statement::Txn(TxnControl::Begin),
            S::Commit { chain: false, .. } => Statement::Txn(TxnControl::Commit),
            S::Rollback { chain: false, savepoint: None } => Statement::Txn(TxnControl::Rollback),
            other => return unsupported(format!("statement {}", other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" "))),
        })
    }

    // ----------------------------------------------------------------------------------
    // Expressions

    fn resolve(&self, scope: &Scope, table: Option<&str>, name: &str) -> Result<usize> {
        match scope.find(table, name).as_slice() {
            [i] => Ok(*i),
            [] => {
                if self.outer_scopes.iter().any(|s| !s.find(table, name).is_empty()) {
                    return unsupported("correlated subquery");
                }
                let full = table.map_or(name.to_string(), |t| format!("{t}.{name}"));
                err(SqlState::UndefinedColumn, format!("column \"{full}\" does not exist"))
            }
            _ => err(SqlState::AmbiguousColumn, format!("column reference \"{name}\" is ambiguous")),
        }
    }

    fn column_ref(&self, e: &sql::Expr, scope: &Scope) -> Option<Result<usize>> {
        match e {
            sql::Expr::Identifier(i) => Some(self.resolve(scope, None, &ident(i))),
            sql::Expr::CompoundIdentifier(parts) => Some(match parts.as_slice() {
                [t, c] => self.resolve(scope, Some(&ident(t)), &ident(c)),
                [s, t, c] if ident(s) == "public" => self.resolve(scope, Some(&ident(t)), &ident(c)),
                _ => unsupported(format!("column reference {e}")),
            }),
            _ => None,
        }
    }

    fn expr(&mut self, e: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        self.enter()?;
        let result = self.expr_inner(e, scope, mode);
        self.depth -= 1;
        result
    }

    fn expr_inner(&mut self, e: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        use sql::Expr as E;
        if let Mode::Agg(ctx) = mode {
            if let Some(pos) = ctx.group_ast.iter().position(|g| g == e) {
                return Ok(Expr::Column(pos));
            }
            if let Some(col) = self.column_ref(e, scope) {
                let col = col?;
                return match ctx.group_bound.iter().position(|g| *g == Expr::Column(col)) {
                    Some(pos) => Ok(Expr::Column(pos)),
                    None => err(
                        SqlState::GroupingError,
                        format!("column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"),
                    ),
                };
            }
        }
        if let Some(col) = self.column_ref(e, scope) {
            return Ok(Expr::Column(col?));
        }
        let mut bx = |this: &mut Self, e: &sql::Expr, mode: &mut Mode| this.expr(e, scope, mode).map(Box::new);
        Ok(match e {
            E::Value(v) => match &v.value {
                sql::Value::Placeholder(p) => self.placeholder(p)?,
                other => Expr::Const(literal(other)?),
            },
            E::Nested(inner) => self.expr(inner, scope, mode)?,
            E::UnaryOp { op, expr } => match op {
                sql::UnaryOperator::Not => Expr::Not(bx(self, expr, mode)?),
                sql::UnaryOperator::Plus => self.expr(expr, scope, mode)?,
                sql::UnaryOperator::Minus => match self.expr(expr, scope, mode)? {
                    Expr::Const(v) => Expr::Const(crate::types::negate(&v)?),
                    other => Expr::Neg(Box::new(other)),
                },
                other => return unsupported(format!("operator {other}")),
            },
            E::BinaryOp { left, op, right } => {
                use sql::BinaryOperator as B;
                let l = bx(self, left, mode)?;
                let r = bx(self, right, mode)?;
                match op {
                    B::Plus => Expr::Arith(ArithOp::Add, l, r),
                    B::Minus => Expr::Arith(ArithOp::Sub, l, r),
                    B::Multiply => Expr::Arith(ArithOp::Mul, l, r),
                    B::Divide => Expr::Arith(ArithOp::Div, l, r),
                    B::Modulo => Expr::Arith(ArithOp::Mod, l, r),
                    B::StringConcat => Expr::Concat(l, r),
                    B::Eq => Expr::Cmp(CmpOp::Eq, l, r),
                    B::NotEq => Expr::Cmp(CmpOp::NotEq, l, r),
                    B::Lt => Expr::Cmp(CmpOp::Lt, l, r),
                    B::LtEq => Expr::Cmp(CmpOp::LtEq, l, r),
                    B::Gt => Expr::Cmp(CmpOp::Gt, l, r),
                    B::GtEq => Expr::Cmp(CmpOp::GtEq, l, r),
                    B::And => Expr::And(l, r),
                    B::Or => Expr::Or(l, r),
                    other => return unsupported(format!("operator {other}")),
                }
            }
            E::IsNull(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: false },
            E::IsNotNull(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: true },
            E::IsTrue(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: true, negated: false },
            E::IsNotTrue(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: true, negated: true },
            E::IsFalse(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: false, negated: false },
            E::IsNotFalse(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: false, negated: true },
            E::IsUnknown(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: false },
            E::IsNotUnknown(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: true },
            E::IsDistinctFrom(a, b) => Expr::IsDistinct { left: bx(self, a, mode)?, right: bx(self, b, mode)?, negated: false },
            E::IsNotDistinctFrom(a, b) => Expr::IsDistinct { left: bx(self, a, mode)?, right: bx(self, b, mode)?, negated: true },
            E::InList { expr, list, negated } => Expr::InList {
                expr: bx(self, expr, mode)?,
                list: list.iter().map(|x| self.expr(x, scope, mode)).collect::<Result<_>>()?,
                negated: *negated,
            },
            E::Between { expr, negated, low, high } => {
                let x = self.expr(expr, scope, mode)?;
                let range = Expr::and(
                    Expr::Cmp(CmpOp::GtEq, Box::new(x.clone()), bx(self, low, mode)?),
                    Expr::Cmp(CmpOp::LtEq, Box::new(x), bx(self, high, mode)?),
                );
                if *negated { Expr::Not(Box::new(range)) } else { range }
            }
            E::Like { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
                expr: bx(self, expr, mode)?,
                pattern: bx(self, pattern, mode)?,
                negated: *negated,
                case_insensitive: false,
            },
            E::ILike { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
                expr: bx(self, expr, mode)?,
                pattern: bx(self, pattern, mode)?,
                negated: *negated,
                case_insensitive: true,
            },
            E::Case { operand, conditions, else_result, .. } => Expr::Case {
                operand: operand.as_deref().map(|o| bx(self, o, mode)).transpose()?,
                whens: conditions
                    .iter()
                    .map(|w| Ok((self.expr(&w.condition, scope, mode)?, self.expr(&w.result, scope, mode)?)))
                    .collect::<Result<_>>()?,
                otherwise: else_result.as_deref().map(|o| bx(self, o, mode)).transpose()?,
            },
            E::Cast { expr, data_type: t, format: None, .. } => Expr::Cast { expr: bx(self, expr, mode)?, ty: data_type(t)?.0 },
            E::Function(f) => self.function(f, scope, mode)?,
            E::Subquery(q) => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => Expr::Subquery(self.subquery(q, scope, true)?),
            },
            E::InSubquery { expr, subquery, negated } => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => Expr::InSubquery { expr: bx(self, expr, mode)?, subquery: self.subquery(subquery, scope, true)?, negated: *negated },
            },
            E::Exists { subquery, negated } => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => Expr::Exists { subquery: self.subquery(subquery, scope, false)?, negated: *negated },
            },
            other => return unsupported(format!("expression {other}")),
        })
    }

    fn placeholder(&mut self, p: &str) -> Result<Expr> {
        let index = if p == "?" {
            self.anonymous_params += 1;
            self.anonymous_params - 1
        } else {
            match p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if (1..=65535).contains(&n) => n - 1,
                _ => return err(SqlState::UndefinedParameter, format!("invalid parameter {p}")),
            }
        };
        self.param_count = self.param_count.max(index + 1);
        Ok(Expr::Param(index))
    }

    fn subquery(&mut self, q: &sql::Query, scope: &Scope, single_column: bool) -> Result<usize> {
        self.outer_scopes.push(scope.clone());
        let planned = self.query(q);
        self.outer_scopes.pop();
        let planned = planned?;
        if single_column && planned.names.len() != 1 {
            return err(SqlState::SyntaxError, "subquery must return only one column");
        }
        self.subqueries.push(planned);
        Ok(self.subqueries.len() - 1)
    }

    fn function(&mut self, f: &sql::Function, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        let name = object_name(&f.name)?;
        if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
            return unsupported(format!("function syntax in {f}"));
        }
        let (args, distinct) = match &f.args {
            sql::FunctionArguments::None => (Vec::new(), false),
            sql::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return unsupported(format!("function argument clauses in {f}"));
                }
                let distinct = matches!(list.duplicate_treatment, Some(sql::DuplicateTreatment::Distinct));
                let args = list
                    .args
                    .iter()
                    .map(|a| match a {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) => Ok(None),
                        _ => unsupported(format!("function argument {a}")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                (args, distinct)
            }
            sql::FunctionArguments::Subquery(_) => return unsupported("subquery as function argument"),
        };
        if let Some(func) = aggregate_function(&name) {
            return match mode {
                Mode::Plain(clause) => err(SqlState::GroupingError, format!("aggregate functions are not allowed in {clause}")),
                Mode::Detect(found) => {
                    **found = true;
                    Ok(Expr::Const(Value::Null))
                }
                Mode::Agg(_) => {
                    let call = match (func, args.as_slice()) {
                        (AggFunc::Count, [None]) if !distinct => AggCall { func: AggFunc::CountStar, arg: None, distinct },
                        (_, [Some(arg)]) => {
                            let arg = self.expr(arg, scope, &mut Mode::Plain("aggregate function calls"))?;
                            AggCall { func, arg: Some(arg), distinct }
                        }
                        _ => return err(SqlState::UndefinedFunction, format!("function {name} takes exactly one argument")),
                    };
                    let Mode::Agg(ctx) = mode else { return err(SqlState::InternalError, "aggregate binding mode changed") };
                    let pos = match ctx.calls.iter().position(|c| *c == call) {
                        Some(p) => p,
                        None => {
                            ctx.calls.push(call);
                            ctx.calls.len() - 1
                        }
                    };
                    Ok(Expr::Column(ctx.group_bound.len() + pos))
                }
            };
        }
        let Some(func) = Func::by_name(&name) else {
            return err(SqlState::UndefinedFunction, format!("function {name} does not exist"));
        };
        if distinct {
            return unsupported(format!("DISTINCT in {name}()"));
        }
        let (min, max) = func.arity();
        if args.len() < min || args.len() > max {
            return err(SqlState::UndefinedFunction, format!("function {name} does not take {} arguments", args.len()));
        }
        let args = args
            .into_iter()
            .map(|a| match a {
                Some(e) => self.expr(e, scope, mode),
                None => unsupported(format!("* argument to {name}")),
            })
            .collect::<Result<_>>()?;
        Ok(Expr::Call { func, args })
    }

    /// Binds an expression that may only use constants and parameters.
    fn constant_expr(&mut self, e: &sql::Expr, clause: &'static str) -> Result<Expr> {
        self.expr(e, &Scope::default(), &mut Mode::Plain(clause))
    }

    // ----------------------------------------------------------------------------------
    // Queries

    pub(crate) fn query(&mut self, q: &sql::Query) -> Result<QueryPlan> {
        self.enter()?;
        let result = self.query_inner(q);
        self.depth -= 1;
        result
    }

    fn query_inner(&mut self, q: &sql::Query) -> Result<QueryPlan> {
        if q.with.is_some() {
            return unsupported("WITH");
        }
        if q.fetch.is_some() || q.for_clause.is_some() || q.settings.is_some() || q.format_clause.is_some() || !q.pipe_operators.is_empty() {
            return unsupported("this query clause");
        }
        // Row locks are meaningless here: every transaction is serializable (Pesto's CC check).
        let order_by: &[sql::OrderByExpr] = match &q.order_by {
            None => &[],
            Some(sql::OrderBy { kind: sql::OrderByKind::Expressions(e), interpolate: None }) => e,
            Some(_) => return unsupported("this ORDER BY form"),
        };
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(sql::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return unsupported("LIMIT BY");
                }
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(sql::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        };
        let limit = limit.map(|e| self.constant_expr(e, "LIMIT")).transpose()?;
        let offset = offset.map(|e| self.constant_expr(e, "OFFSET")).transpose()?;
        let (body, names, order_by) = match &*q.body {
            sql::SetExpr::Select(select) => {
                let (core, names, keys) = self.select(select, order_by)?;
                (QueryBody::Select(Box::new(core)), names, keys)
            }
            other => {
                let (body, names) = self.set_expr(other)?;
                let keys = order_by.iter().map(|o| self.output_sort_key(o, &names)).collect::<Result<_>>()?;
                (body, names, keys)
            }
        };
        Ok(QueryPlan { body, order_by, limit, offset, names })
    }

    fn set_expr(&mut self, e: &sql::SetExpr) -> Result<(QueryBody, Vec<String>)> {
        self.enter()?;
        let result = self.set_expr_inner(e);
        self.depth -= 1;
        result
    }

    fn set_expr_inner(&mut self, e: &sql::SetExpr) -> Result<(QueryBody, Vec<String>)> {
        Ok(match e {
            sql::SetExpr::Select(s) => {
                let (core, names, _) = self.select(s, &[])?;
                (QueryBody::Select(Box::new(core)), names)
            }
            sql::SetExpr::Query(q) => {
                if q.order_by.is_some() || q.limit_clause.is_some() {
                    return unsupported("ORDER BY or LIMIT inside a set operation operand");
                }
                self.set_expr(&q.body)?
            }
            sql::SetExpr::Values(values) => {
                let rows = values
                    .rows
                    .iter()
                    .map(|r| r.content.iter().map(|x| self.constant_expr(x, "VALUES")).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()?;
                let width = rows.first().map_or(0, Vec::len);
                if rows.iter().any(|r| r.len() != width) {
                    return err(SqlState::SyntaxError, "VALUES lists must all be the same length");
                }
                (QueryBody::Values(rows), (1..=width).map(|i| format!("column{i}")).collect())
            }
            sql::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let op = match op {
                    sql::SetOperator::Union => SetOp::Union,
                    sql::SetOperator::Except | sql::SetOperator::Minus => SetOp::Except,
                    sql::SetOperator::Intersect => SetOp::Intersect,
                };
                let all = match set_quantifier {
                    sql::SetQuantifier::All => true,
                    sql::SetQuantifier::Distinct | sql::SetQuantifier::None => false,
                    other => return unsupported(format!("set quantifier {other}")),
                };
                let (l, names) = self.set_expr(left)?;
                let (r, right_names) = self.set_expr(right)?;
                if names.len() != right_names.len() {
                    return err(SqlState::SyntaxError, "each set operation query must have the same number of columns");
                }
                (QueryBody::SetOp { op, all, left: Box::new(l), right: Box::new(r) }, names)
            }
            other => return unsupported(format!("query body {other}")),
        })
    }

    fn sort_options(o: &sql::OrderByExpr) -> Result<(bool, bool)> {
        if o.with_fill.is_some() {
            return unsupported("WITH FILL");
        }
        let desc = match o.options.sort {
            None | Some(sql::OrderBySort::Asc) => false,
            Some(sql::OrderBySort::Desc) => true,
            Some(_) => return unsupported("ORDER BY USING"),
        };
        // PostgreSQL: NULLs sort as larger than any value.
        Ok((desc, o.options.nulls_first.unwrap_or(desc)))
    }

    /// ORDER BY position or output column name (the only forms allowed over set operations).
    fn output_position(o: &sql::OrderByExpr, names: &[String]) -> Option<Result<usize>> {
        match &o.expr {
            sql::Expr::Value(v) => match &v.value {
                sql::Value::Number(n, _) => Some(match n.parse::<usize>() {
                    Ok(p) if (1..=names.len()).contains(&p) => Ok(p - 1),
                    _ => err(SqlState::InvalidColumnReference, format!("ORDER BY position {n} is not in select list")),
                }),
                _ => None,
            },
            sql::Expr::Identifier(i) => {
                let name = ident(i);
                let hits: Vec<usize> = names.iter().enumerate().filter(|(_, n)| **n == name).map(|(p, _)| p).collect();
                match hits.as_slice() {
                    [p] => Some(Ok(*p)),
                    [] => None,
                    _ => Some(err(SqlState::AmbiguousColumn, format!("ORDER BY \"{name}\" is ambiguous"))),
                }
            }
            _ => None,
        }
    }

    fn output_sort_key(&mut self, o: &sql::OrderByExpr, names: &[String]) -> Result<SortKey> {
        let (desc, nulls_first) = Self::sort_options(o)?;
        match Self::output_position(o, names) {
            Some(column) => Ok(SortKey { column: column?, desc, nulls_first }),
            None => unsupported("ORDER BY expressions over a set operation (use output column names or positions)"),
        }
    }

    fn select(&mut self, s: &sql::Select, order_by: &[sql::OrderByExpr]) -> Result<(SelectCore, Vec<String>, Vec<SortKey>)> {
        if s.top.is_some()
            || s.into.is_some()
            || !s.lateral_views.is_empty()
            || s.prewhere.is_some()
            || !s.connect_by.is_empty()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
            || !s.named_window.is_empty()
            || s.qualify.is_some()
            || s.exclude.is_some()
            || s.value_table_mode.is_some()
        {
            return unsupported("this SELECT clause");
        }
        let distinct = match &s.distinct {
            None | Some(sql::Distinct::All) => false,
            Some(sql::Distinct::Distinct) => true,
            Some(sql::Distinct::On(_)) => return unsupported("DISTINCT ON"),
        };
        let (scope, from_items) = self.from_items(&s.from)?;
        let where_conjuncts = match &s.selection {
            Some(w) => {
                let mut v = Vec::new();
                conjuncts(self.expr(w, &scope, &mut Mode::Plain("WHERE"))?, &mut v);
                v
            }
            None => Vec::new(),
        };

        // Projection items as (expression, name) pairs; wildcards expand to columns.
        let mut items: Vec<(Option<&sql::Expr>, Option<usize>, String)> = Vec::new();
        for item in &s.projection {
            match item {
                sql::SelectItem::UnnamedExpr(e) => items.push((Some(e), None, output_name(e))),
                sql::SelectItem::ExprWithAlias { expr, alias } => items.push((Some(expr), None, ident(alias))),
                sql::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() {
                        return err(SqlState::SyntaxError, "SELECT * with no tables specified is not valid");
                    }
                    items.extend(scope.cols.iter().enumerate().map(|(i, c)| (None, Some(i), c.name.clone())));
                }
                sql::SelectItem::QualifiedWildcard(sql::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                    let t = object_name(n)?;
                    let before = items.len();
                    items.extend(scope.cols.iter().enumerate().filter(|(_, c)| c.table == t).map(|(i, c)| (None, Some(i), c.name.clone())));
                    if items.len() == before {
                        return err(SqlState::UndefinedTable, format!("missing FROM-clause entry for table \"{t}\""));
                    }
                }
                other => return unsupported(format!("select item {other}")),
            }
        }
        let names: Vec<String> = items.iter().map(|(_, _, n)| n.clone()).collect();

        let group_ast: Vec<sql::Expr> = match &s.group_by {
            sql::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => exprs
                .iter()
                .map(|g| self.group_item(g, &items, &scope))
                .collect::<Result<_>>()?,
            _ => return unsupported("this GROUP BY form"),
        };
        let mut aggregating = !group_ast.is_empty() || s.having.is_some();
        if !aggregating {
            let mut found = false;
            let exprs = items.iter().filter_map(|(e, _, _)| *e).chain(order_by.iter().map(|o| &o.expr));
            for e in exprs {
                // Errors surface in the real binding pass below.
                let _ = self.expr(e, &scope, &mut Mode::Detect(&mut found));
            }
            aggregating = found;
        }

        let mut ctx = AggCtx { group_ast: Vec::new(), group_bound: Vec::new(), calls: Vec::new() };
        if aggregating {
            for g in &group_ast {
                let bound = self.expr(g, &scope, &mut Mode::Plain("GROUP BY"))?;
                ctx.group_bound.push(bound);
            }
            ctx.group_ast = group_ast;
        }
        let mut output = Vec::with_capacity(items.len());
        for (e, col, _) in &items {
            let bound = if aggregating {
                let mut mode = Mode::Agg(&mut ctx);
                match (e, col) {
                    (Some(e), _) => self.expr(e, &scope, &mut mode)?,
                    (None, Some(c)) => match ctx.group_bound.iter().position(|g| *g == Expr::Column(*c)) {
                        Some(p) => Expr::Column(p),
                        None => return err(SqlState::GroupingError, format!("column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function", names.get(output.len()).cloned().unwrap_or_default())),
                    },
                    (None, None) => return err(SqlState::InternalError, "empty select item"),
                }
            } else {
                match (e, col) {
                    (Some(e), _) => self.expr(e, &scope, &mut Mode::Plain("this context"))?,
                    (None, Some(c)) => Expr::Column(*c),
                    (None, None) => return err(SqlState::InternalError, "empty select item"),
                }
            };
            output.push(bound);
        }
        let having = match &s.having {
            Some(h) if aggregating => Some(self.expr(h, &scope, &mut Mode::Agg(&mut ctx))?),
            _ => None,
        };
        let visible = output.len();
        let mut keys = Vec::new();
        for o in order_by {
            let (desc, nulls_first) = Self::sort_options(o)?;
            let column = match Self::output_position(o, &names) {
                Some(p) => p?,
                None => {
                    let bound = if aggregating {
                        self.expr(&o.expr, &scope, &mut Mode::Agg(&mut ctx))?
                    } else {
                        self.expr(&o.expr, &scope, &mut Mode::Plain("ORDER BY"))?
                    };
                    match output.iter().position(|x| *x == bound) {
                        Some(p) => p,
                        None => {
                            if distinct {
                                return err(SqlState::InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list");
                            }
                            output.push(bound);
                            output.len() - 1
                        }
                    }
                }
            };
            keys.push(SortKey { column, desc, nulls_first });
        }
        debug_assert!(output.len() >= visible);
        let (from, filter) = self.plan_from(from_items, where_conjuncts)?;
        let aggregate = aggregating.then(|| AggPlan { group_by: ctx.group_bound, calls: ctx.calls });
        Ok((SelectCore { from, filter, aggregate, having, output, distinct }, names, keys))
    }

    /// GROUP BY item: a position or output alias refers to the select list.
    fn group_item(&self, g: &sql::Expr, items: &[(Option<&sql::Expr>, Option<usize>, String)], scope: &Scope) -> Result<sql::Expr> {
        let by_position = |p: usize| -> Result<sql::Expr> {
            match items.get(p.wrapping_sub(1)) {
                Some((Some(e), _, _)) => Ok((*e).clone()),
                Some((None, Some(c), _)) => Ok(sql::Expr::Identifier(sql::Ident::with_quote('"', scope.cols.get(*c).map(|c| c.name.clone()).unwrap_or_default()))),
                _ => err(SqlState::InvalidColumnReference, format!("GROUP BY position {p} is not in select list")),
            }
        };
        match g {
            sql::Expr::Value(v) => match &v.value {
                sql::Value::Number(n, _) => by_position(n.parse().unwrap_or(0)),
                _ => Ok(g.clone()),
            },
            sql::Expr::Identifier(i) if scope.find(None, &ident(i)).is_empty() => {
                match items.iter().position(|(e, _, name)| e.is_some() && *name == ident(i)) {
                    Some(p) => by_position(p + 1),
                    None => Ok(g.clone()),
                }
            }
            _ => Ok(g.clone()),
        }
    }

    // ----------------------------------------------------------------------------------
    // FROM and joins

    fn from_items(&mut self, from: &[sql::TableWithJoins]) -> Result<(Scope, Vec<FromItem>)> {
        let mut scope = Scope::default();
        let mut items: Vec<FromItem> = Vec::new();
        let mut pending_on: Vec<(usize, &sql::JoinConstraint)> = Vec::new();
        for twj in from {
            let mut add = |this: &mut Self, factor: &sql::TableFactor, kind: JoinKind, scope: &mut Scope| -> Result<()> {
                let sql::TableFactor::Table { name, alias, args: None, with_hints, version: None, with_ordinality: false, partitions, json_path: None, sample: None, index_hints } = factor else {
                    return unsupported(format!("FROM item {factor}"));
                };
                if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
                    return unsupported("table hints");
                }
                let table = this.table(name)?;
                let alias = match alias {
                    Some(a) if a.columns.is_empty() => ident(&a.name),
                    Some(_) => return unsupported("column aliases in FROM"),
                    None => table.name.clone(),
                };
                if items.iter().any(|i| i.alias == alias) {
                    return err(SqlState::DuplicateObject, format!("table name \"{alias}\" specified more than once"));
                }
                items.push(FromItem { offset: scope.cols.len(), table: table.clone(), alias: alias.clone(), kind, on: Vec::new() });
                scope.add_table(&table, &alias);
                Ok(())
            };
            add(self, &twj.relation, JoinKind::Inner, &mut scope)?;
            for join in &twj.joins {
                use sql::JoinOperator as J;
                let (kind, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
                    J::CrossJoin(c) => (JoinKind::Inner, c),
                    other => return unsupported(format!("join {other:?}").split('(').next().unwrap_or("join").to_string()),
                };
                add(self, &join.relation, kind, &mut scope)?;
                pending_on.push((items.len() - 1, constraint));
            }
        }
        for (step, constraint) in pending_on {
            let conds = match constraint {
                sql::JoinConstraint::On(e) => self.expr(e, &scope, &mut Mode::Plain("JOIN conditions"))?,
                sql::JoinConstraint::None => continue,
                sql::JoinConstraint::Using(cols) => self.using_condition(cols, &items, step, &scope)?,
                sql::JoinConstraint::Natural => return unsupported("NATURAL JOIN"),
            };
            let mut parts = Vec::new();
            conjuncts(conds, &mut parts);
            if let Some(item) = items.get_mut(step) {
                item.on = parts;
            }
        }
        Ok((scope, items))
    }

    fn using_condition(&self, cols: &[sql::ObjectName], items: &[FromItem], step: usize, scope: &Scope) -> Result<Expr> {
        let right = items.get(step).ok_or_else(|| SqlError::new(SqlState::InternalError, "join step out of range"))?;
        let mut parts = Vec::new();
        for c in cols {
            let name = object_name(c)?;
            let r = self.resolve(scope, Some(&right.alias), &name)?;
            let left: Vec<usize> = scope.find(None, &name).into_iter().filter(|i| *i < right.offset).collect();
            let [l] = left.as_slice() else {
                return err(SqlState::UndefinedColumn, format!("column \"{name}\" specified in USING clause must exist once on the left side"));
            };
            parts.push(Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(*l)), Box::new(Expr::Column(r))));
        }
        Ok(Expr::conjunction(parts))
    }

    /// Places each conjunct at the earliest scan or join step that has all its tables, never
    /// filtering a null-supplied (LEFT JOIN right side) table with a WHERE conjunct.
    fn plan_from(&mut self, items: Vec<FromItem>, where_conjuncts: Vec<Expr>) -> Result<(FromPlan, Option<Expr>)> {
        if items.is_empty() {
            let filter = (!where_conjuncts.is_empty()).then(|| Expr::conjunction(where_conjuncts));
            return Ok((FromPlan { first: None, joins: Vec::new() }, filter));
        }
        let table_of = |col: usize| items.iter().rposition(|i| i.offset <= col).unwrap_or(0);
        let tables_of = |e: &Expr| {
            let mut set = BTreeSet::new();
            collect_columns(e, &mut |c| {
                set.insert(table_of(c));
            });
            set
        };
        let mut at_step: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
        let mut residual = Vec::new();
        for c in where_conjuncts {
            let tables = tables_of(&c);
            if tables.iter().any(|t| items.get(*t).is_some_and(|i| i.kind == JoinKind::Left)) {
                residual.push(c);
            } else if let Some(slot) = at_step.get_mut(tables.last().copied().unwrap_or(0)) {
                slot.push(c);
            }
        }
        for (step, item) in items.iter().enumerate() {
            for c in &item.on {
                if tables_of(c).last().is_some_and(|t| *t > step) {
                    return err(SqlState::UndefinedTable, "invalid reference to FROM-clause entry in JOIN condition");
                }
                if let Some(slot) = at_step.get_mut(step) {
                    slot.push(c.clone());
                }
            }
        }
        let mut steps = items.into_iter().zip(at_step);
        let Some((first_item, first_conjuncts)) = steps.next() else {
            return err(SqlState::InternalError, "empty FROM");
        };
        let first = scan_plan(first_item.table, first_conjuncts);
        let mut joins = Vec::new();
        for (item, conjs) in steps {
            let offset = item.offset;
            let width = item.table.columns.len();
            let local = |e: &Expr| {
                e.map_columns(&|c| if c >= offset && c < offset + width { Expr::Column(c - offset) } else { Expr::Outer(c) })
            };
            let mapped: Vec<Expr> = conjs.iter().map(local).collect();
            let by_outer = choose_access(&item.table, &mapped);
            if access_uses_outer(&by_outer) {
                joins.push(JoinStep {
                    kind: item.kind,
                    right: ScanPlan { table: item.table, access: by_outer, filter: Expr::conjunction(mapped) },
                    per_outer_row: true,
                    condition: None,
                });
            } else {
                let (pure, cross): (Vec<(Expr, Expr)>, Vec<(Expr, Expr)>) = conjs
                    .into_iter()
                    .zip(mapped)
                    .partition(|(_, m)| !m.any(&|n| matches!(n, Expr::Outer(_))));
                let condition = (!cross.is_empty()).then(|| Expr::conjunction(cross.into_iter().map(|(c, _)| c)));
                joins.push(JoinStep {
                    kind: item.kind,
                    right: scan_plan(item.table, pure.into_iter().map(|(_, m)| m).collect()),
                    per_outer_row: false,
                    condition,
                });
            }
        }
        let filter = (!residual.is_empty()).then(|| Expr::conjunction(residual));
        Ok((FromPlan { first: Some(first), joins }, filter))
    }

    // ----------------------------------------------------------------------------------
    // DML

    fn returning(&mut self, items: &Option<Vec<sql::SelectItem>>, table: &TableSchema) -> Result<Option<Returning>> {
        let Some(items) = items else { return Ok(None) };
        let scope = Scope::of_table(table, &table.name);
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        for item in items {
            match item {
                sql::SelectItem::UnnamedExpr(e) => {
                    exprs.push(self.expr(e, &scope, &mut Mode::Plain("RETURNING"))?);
                    names.push(output_name(e));
                }
                sql::SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(self.expr(expr, &scope, &mut Mode::Plain("RETURNING"))?);
                    names.push(ident(alias));
                }
                sql::SelectItem::Wildcard(_) => {
                    exprs.extend((0..table.columns.len()).map(Expr::Column));
                    names.extend(table.columns.iter().map(|c| c.name.clone()));
                }
                other => return unsupported(format!("RETURNING item {other}")),
            }
        }
        Ok(Some(Returning { exprs, names }))
    }

    fn insert(&mut self, i: &sql::Insert) -> Result<InsertPlan> {
        if i.or.is_some() || i.ignore || i.overwrite || i.partitioned.is_some() || !i.after_columns.is_empty() || i.replace_into || i.priority.is_some() || i.insert_alias.is_some() || i.settings.is_some() || i.format_clause.is_some() || i.table_alias.is_some() || !i.assignments.is_empty() || i.output.is_some() {
            return unsupported("this INSERT form");
        }
        let sql::TableObject::TableName(name) = &i.table else { return unsupported("INSERT into a table function") };
        let table = self.table(name)?;
        let targets: Vec<usize> = if i.columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            let mut t = Vec::new();
            for c in &i.columns {
                let name = object_name(c)?;
                let pos = table.column_index(&name).ok_or_else(|| {
                    SqlError::new(SqlState::UndefinedColumn, format!("column \"{name}\" of relation \"{}\" does not exist", table.name))
                })?;
                if t.contains(&pos) {
                    return err(SqlState::DuplicateColumn, format!("column \"{name}\" specified more than once"));
                }
                t.push(pos);
            }
            t
        };
        let Some(source) = &i.source else { return unsupported("INSERT without VALUES or SELECT") };
        let source = match &*source.body {
            sql::SetExpr::Values(values) if source.order_by.is_none() && source.limit_clause.is_none() && source.with.is_none() => {
                let rows = values
                    .rows
                    .iter()
                    .map(|r| r.content.iter().map(|x| self.constant_expr(x, "VALUES")).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()?;
                if let Some(bad) = rows.iter().find(|r| r.len() != targets.len()) {
                    let more = if bad.len() > targets.len() { "expressions than target columns" } else { "target columns than expressions" };
                    return err(SqlState::SyntaxError, format!("INSERT has more {more}"));
                }
                InsertSource::Values(rows)
            }
            _ => {
                let q = self.query(source)?;
                if q.names.len() != targets.len() {
                    return err(SqlState::SyntaxError, "INSERT source has a different number of columns than the target list");
                }
                InsertSource::Query(Box::new(q))
            }
        };
        let do_nothing_on_conflict = match &i.on {
            None => false,
            Some(sql::OnInsert::OnConflict(sql::OnConflict { action: sql::OnConflictAction::DoNothing, .. })) => true,
            Some(_) => return unsupported("ON CONFLICT DO UPDATE / ON DUPLICATE KEY"),
        };
        let returning = self.returning(&i.returning, &table)?;
        Ok(InsertPlan { table, targets, source, do_nothing_on_conflict, returning })
    }

    fn single_table(&self, twj: &sql::TableWithJoins) -> Result<Arc<TableSchema>> {
        if !twj.joins.is_empty() {
            return unsupported("joins in UPDATE/DELETE");
        }
        match &twj.relation {
            sql::TableFactor::Table { name, alias: None, args: None, .. } => self.table(name),
            other => unsupported(format!("target {other}")),
        }
    }

    fn where_scan(&mut self, table: Arc<TableSchema>, selection: &Option<sql::Expr>) -> Result<ScanPlan> {
        let mut parts = Vec::new();
        if let Some(w) = selection {
            let scope = Scope::of_table(&table, &table.name);
            conjuncts(self.expr(w, &scope, &mut Mode::Plain("WHERE"))?, &mut parts);
        }
        Ok(scan_plan(table, parts))
    }

    fn update(&mut self, u: &sql::Update) -> Result<UpdatePlan> {
        if u.from.is_some() || u.or.is_some() || !u.order_by.is_empty() || u.limit.is_some() || u.output.is_some() {
            return unsupported("this UPDATE form");
        }
        let table = self.single_table(&u.table)?;
        let scope = Scope::of_table(&table, &table.name);
        let mut assignments: Vec<(usize, Expr)> = Vec::new();
        for a in &u.assignments {
            let sql::AssignmentTarget::ColumnName(name) = &a.target else { return unsupported("tuple assignment") };
            let name = object_name(name)?;
            let col = table.column_index(&name).ok_or_else(|| {
                SqlError::new(SqlState::UndefinedColumn, format!("column \"{name}\" of relation \"{}\" does not exist", table.name))
            })?;
            if assignments.iter().any(|(c, _)| *c == col) {
                return err(SqlState::SyntaxError, format!("multiple assignments to same column \"{name}\""));
            }
            assignments.push((col, self.expr(&a.value, &scope, &mut Mode::Plain("UPDATE"))?));
        }
        let scan = self.where_scan(table.clone(), &u.selection)?;
        let returning = self.returning(&u.returning, &table)?;
        Ok(UpdatePlan { scan, assignments, returning })
    }

    fn delete(&mut self, d: &sql::Delete) -> Result<DeletePlan> {
        if !d.tables.is_empty() || d.using.is_some() || !d.order_by.is_empty() || d.limit.is_some() || d.output.is_some() {
            return unsupported("this DELETE form");
        }
        let from = match &d.from {
            sql::FromTable::WithFromKeyword(v) | sql::FromTable::WithoutKeyword(v) => v,
        };
        let [twj] = from.as_slice() else { return unsupported("DELETE from several tables") };
        let table = self.single_table(twj)?;
        let scan = self.where_scan(table.clone(), &d.selection)?;
        let returning = self.returning(&d.returning, &table)?;
        Ok(DeletePlan { scan, returning })
    }

    // ----------------------------------------------------------------------------------
    // DDL

    fn index_columns(&self, table: &TableSchema, cols: &[sql::IndexColumn], columns: &[Column]) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for c in cols {
            if c.operator_class.is_some() || c.column.options.sort.is_some() || c.column.options.nulls_first.is_some() {
                return unsupported("index column options");
            }
            let sql::Expr::Identifier(i) = &c.column.expr else { return unsupported("index on an expression") };
            let name = ident(i);
            let pos = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                SqlError::new(SqlState::UndefinedColumn, format!("column \"{name}\" named in key does not exist in \"{}\"", table.name))
            })?;
            if out.contains(&pos) {
                return err(SqlState::DuplicateColumn, format!("column \"{name}\" appears twice in key"));
            }
            out.push(pos);
        }
        Ok(out)
    }

    fn create_table(&mut self, c: &sql::CreateTable) -> Result<Option<CatalogChange>> {
        if c.query.is_some() {
            return unsupported("CREATE TABLE AS");
        }
        if c.or_replace || c.temporary || c.external {
            return unsupported("this CREATE TABLE form");
        }
        let name = object_name(&c.name)?;
        if self.catalog.table(&name).is_some() {
            return if c.if_not_exists {
                Ok(None)
            } else {
                err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"))
            };
        }
        let mut table = TableSchema { name: name.clone(), columns: Vec::new(), primary_key: Vec::new(), indexes: Vec::new() };
        let mut unique_sets: Vec<Vec<usize>> = Vec::new();
        let mut pk: Option<Vec<usize>> = None;
        let set_pk = |pk: &mut Option<Vec<usize>>, cols: Vec<usize>| {
            if pk.is_some() {
                return err(SqlState::InvalidTableDefinition, format!("multiple primary keys for table \"{name}\" are not allowed"));
            }
            *pk = Some(cols);
            Ok(())
        };
        for def in &c.columns {
            let col_name = ident(&def.name);
            if table.columns.iter().any(|c| c.name == col_name) {
                return err(SqlState::DuplicateColumn, format!("column \"{col_name}\" specified more than once"));
            }
            let (ty, limits) = data_type(&def.data_type)?;
            let pos = table.columns.len();
            let mut column = Column { name: col_name, ty, limits, nullable: true, default: None };
            for opt in &def.options {
                match &opt.option {
                    sql::ColumnOption::Null => column.nullable = true,
                    sql::ColumnOption::NotNull => column.nullable = false,
                    sql::ColumnOption::Default(e) => {
                        let bound = self.constant_expr(e, "DEFAULT")?;
                        if bound.any(&|n| matches!(n, Expr::Param(_) | Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. })) {
                            return unsupported("non-constant DEFAULT");
                        }
                        let v = bound.eval(&[], &Env::default())?;
                        column.default = Some(crate::types::check_limits(
                            crate::types::assign_cast(&v, ty, &column.name)?,
                            &column.limits,
                            &column.name,
                        )?);
                    }
                    sql::ColumnOption::PrimaryKey(_) => set_pk(&mut pk, vec![pos])?,
                    sql::ColumnOption::Unique(_) => unique_sets.push(vec![pos]),
                    other => return unsupported(format!("column option {other}")),
                }
            }
            table.columns.push(column);
        }
        for constraint in &c.constraints {
            match constraint {
                sql::TableConstraint::PrimaryKey(p) => {
                    let cols = self.index_columns(&table, &p.columns, &table.columns)?;
                    set_pk(&mut pk, cols)?;
                }
                sql::TableConstraint::Unique(u) => unique_sets.push(self.index_columns(&table, &u.columns, &table.columns)?),
                other => return unsupported(format!("table constraint {other}")),
            }
        }
        let Some(pk) = pk else {
            return unsupported("a table without PRIMARY KEY (rows are keyed by their primary key)");
        };
        for &p in &pk {
            if let Some(col) = table.columns.get_mut(p) {
                col.nullable = false;
            }
        }
        table.primary_key = pk;
        for cols in unique_sets {
            if cols == table.primary_key || table.indexes.iter().any(|i| i.columns == cols) {
                continue;
            }
            let col_names: Vec<&str> = cols.iter().filter_map(|c| table.columns.get(*c)).map(|c| c.name.as_str()).collect();
            let index_name = format!("{name}_{}_key", col_names.join("_"));
            table.indexes.push(IndexSchema { name: index_name, columns: cols, unique: true });
        }
        Ok(Some(CatalogChange::CreateTable(table)))
    }

    fn create_index(&mut self, c: &sql::CreateIndex) -> Result<Option<CatalogChange>> {
        if c.using.is_some() || !c.include.is_empty() || !c.with.is_empty() || c.predicate.is_some() || c.concurrently || c.nulls_distinct.is_some() || !c.index_options.is_empty() || !c.alter_options.is_empty() {
            return unsupported("this CREATE INDEX form");
        }
        let table = self.table(&c.table_name)?;
        let columns = self.index_columns(&table, &c.columns, &table.columns)?;
        let name = match &c.name {
            Some(n) => object_name(n)?,
            None => {
                let cols: Vec<&str> = columns.iter().filter_map(|i| table.columns.get(*i)).map(|c| c.name.as_str()).collect();
                format!("{}_{}_idx", table.name, cols.join("_"))
            }
        };
        if self.catalog.table_of_index(&name).is_some() || self.catalog.table(&name).is_some() {
            return if c.if_not_exists {
                Ok(None)
            } else {
                err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"))
            };
        }
        Ok(Some(CatalogChange::CreateIndex { table: table.name.clone(), index: IndexSchema { name, columns, unique: c.unique } }))
    }

    fn drop(&mut self, object_type: &sql::ObjectType, if_exists: bool, name: &sql::ObjectName) -> Result<Option<CatalogChange>> {
        let name = object_name(name)?;
        match object_type {
            sql::ObjectType::Table => match self.catalog.table(&name) {
                Some(_) => Ok(Some(CatalogChange::DropTable { table: name })),
                None if if_exists => Ok(None),
                None => err(SqlState::UndefinedTable, format!("table \"{name}\" does not exist")),
            },
            sql::ObjectType::Index => match self.catalog.table_of_index(&name) {
                Some(t) => Ok(Some(CatalogChange::DropIndex { table: t.name.clone(), index: name })),
                None if if_exists => Ok(None),
                None => err(SqlState::UndefinedObject, format!("index \"{name}\" does not exist")),
            },
            other => unsupported(format!("DROP {other}")),
        }
    }
}

/// One FROM table with its join kind and ON conjuncts (over the full FROM row).
pub(crate) struct FromItem {
    table: Arc<TableSchema>,
    alias: String,
    offset: usize,
    kind: JoinKind,
    on: Vec<Expr>,
}

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
    ScanPlan { table, access, filter: Expr::conjunction(conjuncts) }
}
