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
use pistou_types::index_expr::{is_mutable, stable_temporal_call};

fn not_immutable<T>() -> Result<T> {
    err(SqlState::InvalidObjectDefinition, "functions in index expression must be marked IMMUTABLE")
}

/// PostgreSQL's refusal of a function or cast that is not IMMUTABLE (42P17), given the
/// operand types (`types`: the table's column types).
pub(crate) fn check_immutable(e: &Expr, types: &[Option<SqlType>]) -> Result<()> {
    let type_of = |e: &Expr| crate::plan::expr_type(e, types);
    match e {
        Expr::Call { func, .. } if is_mutable(*func) => return not_immutable(),
        Expr::Call { func, args } if stable_temporal_call(*func, &args.iter().map(type_of).collect::<Vec<_>>()) => {
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
/// definition (operators bound as calls do not).
fn looks_like_function(e: &Expr) -> bool {
    matches!(e, Expr::Call { func, .. }
        if jsonb_operator(*func).is_none()
            && !matches!(func, Func::Float4Text | Func::RegexMatch | Func::RegexIMatch))
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

/// PostgreSQL's text of an expression (ruleutils' non-pretty form, with its indented CASE)
/// for the forms an index expression has: constants with their type, operators in
/// parentheses, casts as `(x)::type`, and a varchar column passed where text is expected as
/// `(c)::text` (the implicit cast PostgreSQL records). The text binds back to the same
/// expression (`constraints::validation_queries` runs it).
pub(crate) fn deparse(table: &TableSchema, e: &Expr) -> String {
    deparse_at(table, e, 0)
}

/// `deparse` at a CASE nesting's indentation (`indent` spaces).
fn deparse_at(table: &TableSchema, e: &Expr, indent: usize) -> String {
    let show = |e: &Expr| deparse_at(table, e, indent);
    // A text argument: PostgreSQL casts varchar and char columns to text implicitly.
    let text_arg = |e: &Expr| match e {
        Expr::Column(c) if table.columns.get(*c).is_some_and(|c| matches!(c.ty, SqlType::Varchar | SqlType::Char)) => {
            format!("({})::text", show(e))
        }
        _ => show(e),
    };
    // PostgreSQL's parser makes one AND (OR) of a left-nested chain.
    let chain = |e: &Expr, word: &str| {
        let mut items = Vec::new();
        let mut at = e;
        while let (Expr::And(a, b), "AND") | (Expr::Or(a, b), "OR") = (at, word) {
            items.push(show(b));
            at = a;
        }
        items.push(show(at));
        items.reverse();
        format!("({})", items.join(&format!(" {word} ")))
    };
    match e {
        Expr::Column(c) => table.columns.get(*c).map_or_else(|| "?".into(), |c| quote_ident(&c.name)),
        Expr::Const(v) => constant(v),
        Expr::Neg(a) => format!("(- {})", show(a)),
        Expr::Arith(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
        Expr::Concat(a, b) => format!("({} || {})", text_arg(a), text_arg(b)),
        // varchar has no comparison operators of its own: PostgreSQL compares it as text.
        Expr::Cmp(op, a, b) => {
            let varchar = |e: &Expr| matches!(e, Expr::Column(c) if table.columns.get(*c).is_some_and(|c| c.ty == SqlType::Varchar));
            let operand = |e: &Expr| if varchar(e) { text_arg(e) } else { show(e) };
            format!("({} {} {})", operand(a), op.symbol(), operand(b))
        }
        Expr::And(..) => chain(e, "AND"),
        Expr::Or(..) => chain(e, "OR"),
        Expr::Not(a) => match &**a {
            Expr::Call { func: func @ (Func::RegexMatch | Func::RegexIMatch), args } if args.len() == 2 => {
                let op = if *func == Func::RegexMatch { "!~" } else { "!~*" };
                format!("({} {op} {})", text_arg(&args[0]), text_arg(&args[1]))
            }
            a => format!("(NOT {})", show(a)),
        },
        Expr::IsNull { expr, negated } => format!("({} IS {}NULL)", show(expr), if *negated { "NOT " } else { "" }),
        Expr::IsBool { expr, value, negated } => format!(
            "({} IS {}{})",
            show(expr),
            if *negated { "NOT " } else { "" },
            if *value { "TRUE" } else { "FALSE" }
        ),
        Expr::IsDistinct { left, right, negated: false } => {
            format!("({} IS DISTINCT FROM {})", show(left), show(right))
        }
        Expr::IsDistinct { left, right, negated: true } => {
            format!("(NOT ({} IS DISTINCT FROM {}))", show(left), show(right))
        }
        // PostgreSQL's parser makes `a IN (x)` a comparison.
        Expr::InList { expr, list, negated } if list.len() == 1 => {
            format!(
                "({} {} {})",
                show(expr),
                if *negated { "<>" } else { "=" },
                list.iter().map(show).collect::<String>()
            )
        }
        Expr::InList { expr, list, negated } => {
            let items: Vec<String> = list.iter().map(show).collect();
            let op = if *negated { "<> ALL" } else { "= ANY" };
            format!("({} {op} (ARRAY[{}]))", show(expr), items.join(", "))
        }
        Expr::Like { expr, pattern, escape, negated, case_insensitive } => {
            let op = match (negated, case_insensitive) {
                (false, false) => "~~",
                (false, true) => "~~*",
                (true, false) => "!~~",
                (true, true) => "!~~*",
            };
            let pattern = match escape {
                None => text_arg(pattern),
                Some(escape) => format!("like_escape({}, {})", text_arg(pattern), text_arg(escape)),
            };
            format!("({} {op} {pattern})", text_arg(expr))
        }
        Expr::Case { operand, whens, otherwise } => {
            let inner = indent + 4;
            let at = |e: &Expr| deparse_at(table, e, inner);
            let mut out = format!("\n{:indent$}CASE", "");
            if let Some(o) = operand {
                out.push(' ');
                out.push_str(&show(o));
            }
            let line = |out: &mut String, keyword: &str, text: String| {
                out.push_str(&format!("\n{:inner$}{keyword}", ""));
                // A CASE starts on its own line, without the space that would precede it.
                if !text.starts_with('\n') {
                    out.push(' ');
                }
                out.push_str(&text);
            };
            for (when, then) in whens {
                let then = at(then);
                line(&mut out, &format!("WHEN {} THEN", at(when)), then);
            }
            // PostgreSQL records a missing ELSE as a NULL of the CASE's type.
            let otherwise = match otherwise {
                Some(o) => at(o),
                None => crate::plan::expr_type(e, &column_types(table))
                    .map_or_else(|| "NULL".into(), |t| format!("NULL::{}", t.pg_name())),
            };
            line(&mut out, "ELSE", otherwise);
            out.push_str(&format!("\n{:indent$}END", ""));
            out
        }
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
        Expr::Call { func: func @ (Func::RegexMatch | Func::RegexIMatch), args } if args.len() == 2 => {
            let op = if *func == Func::RegexMatch { "~" } else { "~*" };
            format!("({} {op} {})", text_arg(&args[0]), text_arg(&args[1]))
        }
        Expr::Call { func: Func::Extract, args } if args.len() == 2 => match &args[0] {
            Expr::Const(Value::Text(unit)) => format!("EXTRACT({} FROM {})", unit.to_lowercase(), show(&args[1])),
            _ => format!("EXTRACT({} FROM {})", show(&args[0]), show(&args[1])),
        },
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
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) | Value::Interval(_) => {
            format!("{}::{}", quoted(&v.to_string()), v.sql_type().map_or("unknown", SqlType::pg_name))
        }
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

#[cfg(test)]
mod tests {
    use crate::catalog::IndexPart;
    use crate::expr::Env;
    use crate::types::Value;
    use crate::Database;

    /// The index evaluator and the engine's evaluation of the same bound expression agree,
    /// value for value and error for error, on rows that exercise every branch.
    #[test]
    fn the_index_evaluator_agrees_with_the_engine() {
        let mut db = Database::new();
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c BOOLEAN, s TEXT, ts TIMESTAMP, d DATE)")
            .expect("create");
        let parts = [
            "(a > 0)",
            "(a = b AND c OR b > 4)",
            "(NOT c)",
            "(a IS NULL)",
            "(c IS NOT TRUE)",
            "(a IS DISTINCT FROM b)",
            "(a IN (1, b, NULL))",
            "(s LIKE 'a%')",
            "(s NOT ILIKE 'A\\_%')",
            "(s LIKE 'a!%' ESCAPE '!')",
            "(s ~ '^b')",
            "(s !~* 'N')",
            "(CASE WHEN b = 0 THEN 0 ELSE a / b END)",
            "(CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' END)",
            "(COALESCE(a, 10 / b))",
            "(b = 0 OR a / b > 1)",
            "date_trunc('month', ts)",
            "extract(dow FROM d)",
            "date_part('minute', ts)",
            "age(ts, d)",
        ];
        for (i, part) in parts.iter().enumerate() {
            db.execute(&format!("CREATE INDEX i{i} ON t ({part})")).unwrap_or_else(|e| panic!("{part}: {e}"));
        }
        let table = db.catalog().table("t").expect("t").clone();
        let ts = |s: &str| crate::temporal::parse_timestamp(s).map(Value::Timestamp).expect("timestamp");
        let rows = [
            vec![
                Value::Int(1),
                Value::Int(1),
                Value::Int(2),
                Value::Bool(true),
                Value::Text("apple".into()),
                ts("2024-03-15 10:30:00"),
                Value::Date(19797),
            ],
            vec![
                Value::Int(2),
                Value::Int(-1),
                Value::Int(0),
                Value::Bool(false),
                Value::Text("Banana".into()),
                ts("1999-12-31 23:59:59"),
                Value::Date(-1),
            ],
            vec![
                Value::Int(3),
                Value::Null,
                Value::Int(0),
                Value::Null,
                Value::Text("a_%".into()),
                Value::Null,
                Value::Null,
            ],
            vec![
                Value::Int(4),
                Value::Int(5),
                Value::Int(5),
                Value::Bool(true),
                Value::Null,
                ts("2024-02-29 00:00:00"),
                Value::Date(0),
            ],
        ];
        for (i, index) in table.indexes.iter().enumerate().filter(|(_, ix)| !ix.expressions.is_empty()) {
            let IndexPart::Expression(stored) = index.parts().next().expect("a part") else {
                panic!("not an expression")
            };
            let bound = &super::part_exprs(&table, i)[0];
            for row in &rows {
                let by_index = stored.eval(row).map_err(|e| e.state);
                let by_engine = bound.eval(row, &Env::default()).map_err(|e| e.state);
                assert_eq!(by_index, by_engine, "{} on {row:?}", index.name);
            }
        }
    }
}
