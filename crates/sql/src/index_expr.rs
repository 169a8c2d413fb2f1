//! The engine's side of expression indexes (docs/sql.md, "Expression indexes"): which
//! bound expressions PostgreSQL would accept as IMMUTABLE, their text in the catalog
//! (`pg_get_indexdef`), and their bound form for the planner. Index keys themselves are
//! computed by `pistou_types::index_expr`, the one evaluator every store uses.

use crate::catalog::{IndexExpression, IndexSchema, TableSchema};
use crate::error::{err, Result, SqlState};
use crate::expr::{Expr, Func};
use crate::jsonb::JsonbFn;
use crate::system::quote_ident;
use crate::types::{SqlType, TypeLimits, Value};
use pistou_types::index_expr::is_mutable;

fn not_immutable<T>() -> Result<T> {
    err(SqlState::InvalidObjectDefinition, "functions in index expression must be marked IMMUTABLE")
}

/// PostgreSQL's refusal of a function or cast that is not IMMUTABLE (42P17), given the
/// operand types (`types`: the table's column types).
pub(crate) fn check_immutable(e: &Expr, types: &[Option<SqlType>]) -> Result<()> {
    let type_of = |e: &Expr| crate::plan::expr_type(e, types);
    match e {
        Expr::Call { func, .. } if is_mutable(*func) => return not_immutable(),
        // Over timestamptz these are STABLE (they depend on the session's time zone).
        Expr::Call { func: Func::DateTrunc | Func::Extract | Func::DatePart | Func::Age, args }
            if args.len() == 1 || args.iter().any(|a| type_of(a) == Some(SqlType::TimestampTz)) =>
        {
            return not_immutable()
        }
        Expr::Cast { expr, ty, .. } if stable_cast(type_of(expr), *ty) => return not_immutable(),
        _ => {}
    }
    e.children().into_iter().try_for_each(|c| check_immutable(c, types))
}

/// Casts PostgreSQL marks STABLE: those that read the session's time zone (to or from
/// timestamptz) or date style (between text and dates, timestamps, intervals).
fn stable_cast(from: Option<SqlType>, to: SqlType) -> bool {
    let temporal = |t: SqlType| matches!(t, SqlType::Date | SqlType::Timestamp | SqlType::Interval);
    let Some(from) = from else { return false };
    if from == to {
        return false;
    }
    (from == SqlType::TimestampTz || to == SqlType::TimestampTz)
        || (from.is_text() && temporal(to))
        || (to.is_text() && temporal(from))
}

/// Each index expression of `table`, bound (in the order of `TableSchema::indexes`, then of
/// their parts), with the index and part it belongs to.
pub(crate) fn bound_expressions(table: &TableSchema) -> Vec<(usize, usize, Expr)> {
    let mut out = Vec::new();
    for (i, index) in table.indexes.iter().enumerate() {
        let mut k = 0;
        for (part, &c) in index.columns.iter().enumerate() {
            if c != IndexSchema::EXPRESSION {
                continue;
            }
            if let Some(Ok(e)) = index.expressions.get(k).map(|x| bound(table, x)) {
                out.push((i, part, e));
            }
            k += 1;
        }
    }
    out
}

/// The parts of index `i` of `table` as expressions over its row (a column, or the
/// bound expression; NULL for a part that cannot be bound, which then matches no row).
pub(crate) fn part_exprs(table: &TableSchema, i: usize) -> Vec<Expr> {
    let Some(index) = table.indexes.get(i) else { return Vec::new() };
    index
        .parts()
        .map(|part| match part {
            crate::catalog::IndexPart::Column(c) => Expr::Column(c),
            crate::catalog::IndexPart::Expression(e) => bound(table, e).unwrap_or(Expr::Const(Value::Null)),
            crate::catalog::IndexPart::Missing => Expr::Const(Value::Null),
        })
        .collect()
}

fn bound(table: &TableSchema, e: &IndexExpression) -> Result<Expr> {
    crate::predicate_wire::nodes_expr(&e.nodes, table.columns.len())
}

/// The text of each part of `index` as `pg_get_indexdef` prints it (PostgreSQL's
/// non-pretty form): a column's name, a function call as is, any other expression in
/// parentheses.
pub fn part_texts(table: &TableSchema, index: &IndexSchema) -> Vec<String> {
    index
        .parts()
        .map(|part| match part {
            crate::catalog::IndexPart::Column(c) => {
                table.columns.get(c).map_or_else(|| "?".into(), |c| quote_ident(&c.name))
            }
            crate::catalog::IndexPart::Expression(e) => match bound(table, e) {
                Ok(e) if looks_like_function(&e) => deparse(table, &e),
                Ok(e) => format!("({})", deparse(table, &e)),
                Err(_) => "?".into(),
            },
            crate::catalog::IndexPart::Missing => "?".into(),
        })
        .collect()
}

/// The text of an index expression alone (`pg_index.indexprs`, `pg_get_expr`).
pub(crate) fn expression_texts(table: &TableSchema, index: &IndexSchema) -> Vec<String> {
    index.expressions.iter().map(|e| bound(table, e).map_or_else(|_| "?".into(), |e| deparse(table, &e))).collect()
}

/// PostgreSQL's `looks_like_function`: calls print without extra parentheses in an index
/// definition.
fn looks_like_function(e: &Expr) -> bool {
    matches!(e, Expr::Call { func, .. } if jsonb_operator(*func).is_none() && *func != Func::Float4Text)
}

fn jsonb_operator(func: Func) -> Option<&'static str> {
    let Func::Jsonb(f) = func else { return None };
    Some(match f {
        JsonbFn::Get => "->",
        JsonbFn::GetText => "->>",
        JsonbFn::Path => "#>",
        JsonbFn::PathText => "#>>",
        JsonbFn::Contains => "@>",
        JsonbFn::Exists => "?",
        JsonbFn::ExistsAny => "?|",
        JsonbFn::ExistsAll => "?&",
        JsonbFn::Concat => "||",
        JsonbFn::Delete | JsonbFn::DeleteKeys => "-",
        JsonbFn::DeletePath => "#-",
        _ => return None,
    })
}

/// PostgreSQL's text of an expression (ruleutils' non-pretty form) for the forms an index
/// expression has: constants with their type, operators in parentheses, casts as
/// `(x)::type`, and a varchar column passed where text is expected as `(c)::text` (the
/// implicit cast PostgreSQL records).
pub(crate) fn deparse(table: &TableSchema, e: &Expr) -> String {
    let show = |e: &Expr| deparse(table, e);
    // A text argument: PostgreSQL casts varchar and char columns to text implicitly.
    let text_arg = |e: &Expr| match e {
        Expr::Column(c) if table.columns.get(*c).is_some_and(|c| matches!(c.ty, SqlType::Varchar | SqlType::Char)) => {
            format!("({})::text", show(e))
        }
        _ => show(e),
    };
    match e {
        Expr::Column(c) => table.columns.get(*c).map_or_else(|| "?".into(), |c| quote_ident(&c.name)),
        Expr::Const(v) => constant(v),
        Expr::Neg(a) => format!("(- {})", show(a)),
        Expr::Arith(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
        Expr::Concat(a, b) => format!("({} || {})", text_arg(a), text_arg(b)),
        // The binder's range check of integer arithmetic: PostgreSQL's operator has it.
        Expr::Cast { expr, ty: SqlType::Int4 | SqlType::Int2, .. }
            if matches!(**expr, Expr::Arith(..) | Expr::Neg(_))
                && matches!(
                    crate::plan::expr_type(expr, &column_types(table)),
                    Some(SqlType::Int4 | SqlType::Int2 | SqlType::Int)
                ) =>
        {
            show(expr)
        }
        Expr::Cast { expr, ty, limits } => format!("({})::{}{}", show(expr), ty.pg_name(), modifier(limits)),
        Expr::Call { func: Func::Float4Text, args } => {
            format!("({})::text", args.first().map(show).unwrap_or_default())
        }
        Expr::Call { func, args } => match (jsonb_operator(*func), args.as_slice()) {
            (Some(op), [a, b]) => format!("({} {op} {})", show(a), show(b)),
            _ => {
                let name = match func {
                    Func::Coalesce | Func::NullIf | Func::Greatest | Func::Least => func.name().to_uppercase(),
                    Func::Trim => "btrim".into(),
                    _ => func.name().into(),
                };
                let items: Vec<String> =
                    args.iter().map(|a| if is_text_function(*func) { text_arg(a) } else { show(a) }).collect();
                format!("{name}({})", items.join(", "))
            }
        },
        other => other.to_string(),
    }
}

fn column_types(table: &TableSchema) -> Vec<Option<SqlType>> {
    table.columns.iter().map(|c| Some(c.ty)).collect()
}

fn is_text_function(func: Func) -> bool {
    matches!(
        func,
        Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Substr
            | Func::Trim
            | Func::Ltrim
            | Func::Rtrim
            | Func::Replace
            | Func::Position
            | Func::SplitPart
    )
}

fn constant(v: &Value) -> String {
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    match v {
        Value::Null => "NULL".into(),
        Value::Text(s) => format!("{}::text", quoted(s)),
        Value::Int(i) if *i < 0 => format!("{}::integer", quoted(&i.to_string())),
        Value::Int(i) => i.to_string(),
        Value::Numeric(d) if d.is_sign_negative() => format!("{}::numeric", quoted(&d.to_string())),
        Value::Numeric(d) => d.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Float(f) => format!("{}::double precision", quoted(&f.to_string())),
        other => quoted(&other.to_string()),
    }
}

fn modifier(limits: &TypeLimits) -> String {
    match limits {
        TypeLimits { max_len: Some(n), .. } => format!("({n})"),
        TypeLimits { numeric: Some((p, s)), .. } => format!("({p},{s})"),
        _ => String::new(),
    }
}
