//! Which statements the gateway answers itself, decided from the parse tree (sqlparser,
//! PostgreSQL dialect) and never from the text: only a FROM-less SELECT made of session
//! functions (`version()`, `current_user`, `set_config(…)`, …), which need the session's
//! state. Everything else, catalog queries included (`pg_catalog` and `information_schema`
//! are relations of the SQL engine, see crates/sql/src/system.rs), goes to Pistou unchanged.

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident, ObjectName, Query, SelectItem, SetExpr,
    Statement, Value,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};

/// The parser's nesting limit (the SQL engine's default); a deeper statement goes to
/// Pistou, which reports the error.
pub(crate) const MAX_DEPTH: usize = 64;

/// Statements longer than this are classified on a helper thread with a large stack: the
/// parser builds chains like `1+1+…+1` without a depth limit, and dropping such a tree
/// recurses once per operator (the SQL engine does the same).
const INLINE_MAX_LEN: usize = 1024;
const CLASSIFIER_STACK: usize = 256 << 20;
/// Longest statement parsed on that stack (a `1+1+…` chain of this length needs well under
/// it).
const MAX_PARSED_LEN: usize = 1 << 20;
/// Longer statements go to Pistou unclassified: no catalog query is that long, and it
/// bounds the stack the classifier needs (also when `max_statement_bytes` is raised).
const MAX_CLASSIFIED_LEN: usize = 64 * 1024;

/// Where a statement goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// To Pistou, unchanged.
    Engine,
    /// A FROM-less SELECT made only of session functions.
    Session(Vec<SessionItem>),
}

/// One item of a session-function SELECT.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionItem {
    /// The output column name: the alias, else the function's name.
    pub name: String,
    pub function: SessionFunction,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SessionFunction {
    Version,
    CurrentSchema,
    CurrentDatabase,
    CurrentUser,
    BackendPid,
    CurrentSchemas(bool),
    /// The parameter's name; None for a `$n` placeholder not bound yet.
    CurrentSetting(Option<String>),
    /// `set_config(name, value, is_local)`; None while an argument is a `$n` placeholder.
    SetConfig(Option<SetConfig>),
}

/// The arguments of `set_config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetConfig {
    pub name: String,
    /// None: NULL, back to the default.
    pub value: Option<String>,
    pub local: bool,
}

/// A constant argument: Some(None) for a `$n` placeholder, None for anything but a literal.
fn literal(e: &Expr) -> Option<Option<&Value>> {
    match e {
        Expr::Value(v) if matches!(v.value, Value::Placeholder(_)) => Some(None),
        Expr::Value(v) => Some(Some(&v.value)),
        _ => None,
    }
}

fn set_config(name: &Expr, value: &Expr, local: &Expr) -> Option<SessionFunction> {
    let (Some(name), Some(value), Some(local)) = (literal(name)?, literal(value)?, literal(local)?) else {
        return Some(SessionFunction::SetConfig(None));
    };
    let Value::SingleQuotedString(name) = name else { return None };
    let value = match value {
        Value::SingleQuotedString(s) => Some(s.clone()),
        Value::Null => None,
        _ => return None,
    };
    // A bound parameter arrives as a quoted string.
    let local = match local {
        Value::Boolean(b) => *b,
        Value::SingleQuotedString(s) => match s.to_ascii_lowercase().as_str() {
            "t" | "true" | "on" | "1" | "yes" => true,
            "f" | "false" | "off" | "0" | "no" => false,
            _ => return None,
        },
        _ => return None,
    };
    Some(SessionFunction::SetConfig(Some(SetConfig { name: name.clone(), value, local })))
}

/// True when the gateway answers (or refuses) `sql` itself.
pub fn intercepts(sql: &str) -> bool {
    route(sql) != Route::Engine
}

/// Where one statement goes.
pub fn route(sql: &str) -> Route {
    if sql.len() > MAX_CLASSIFIED_LEN {
        return Route::Engine;
    }
    // No parse (the helper thread could not run): Pistou parses the statement and reports
    // any error.
    with_parsed(sql, route_parsed).unwrap_or(Route::Engine)
}

/// Parses `sql` (PostgreSQL dialect, the nesting limit) and hands the result to `f`, on a
/// helper thread with a large stack when `sql` is long. None when `sql` is longer than
/// the large stack is sized for, or the thread could not run.
pub fn with_parsed<T: Send>(sql: &str, f: impl FnOnce(Result<Vec<Statement>, ParserError>) -> T + Send) -> Option<T> {
    let parse = || {
        let dialect = PostgreSqlDialect {};
        f(Parser::new(&dialect)
            .with_recursion_limit(MAX_DEPTH)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statements()))
    };
    if sql.len() <= INLINE_MAX_LEN {
        return Some(parse());
    }
    if sql.len() > MAX_PARSED_LEN {
        return None;
    }
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().stack_size(CLASSIFIER_STACK).spawn_scoped(scope, parse);
        thread.ok().and_then(|t| t.join().ok())
    })
}

fn route_parsed(parsed: Result<Vec<Statement>, ParserError>) -> Route {
    let Ok(statements) = parsed else { return Route::Engine };
    let [statement] = statements.as_slice() else { return Route::Engine };
    let Statement::Query(query) = statement else { return Route::Engine };
    match session_items(query) {
        Some(items) => Route::Session(items),
        None => Route::Engine,
    }
}

/// An identifier as PostgreSQL resolves it: unquoted ones are folded to lower case.
pub fn ident_name(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_ascii_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

fn name_parts(name: &ObjectName) -> Option<Vec<String>> {
    name.0.iter().map(|part| part.as_ident().map(ident_name)).collect()
}

/// The items of `SELECT f(), g AS x, …` without FROM (or any other clause), when every
/// item is a session function.
fn session_items(query: &Query) -> Option<Vec<SessionItem>> {
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && query.locks.is_empty();
    let SetExpr::Select(select) = query.body.as_ref() else { return None };
    let no_grouping = matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    let only_items = select.from.is_empty()
        && select.selection.is_none()
        && select.having.is_none()
        && select.distinct.is_none()
        && select.into.is_none();
    if !plain || !no_grouping || !only_items || select.projection.is_empty() {
        return None;
    }
    select.projection.iter().map(session_item).collect()
}

fn session_item(item: &SelectItem) -> Option<SessionItem> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
        _ => return None,
    };
    let (name, function) = session_function(expr)?;
    Some(SessionItem { name: alias.unwrap_or(name), function })
}

/// A session function call: its name and what it is. `args` is None without parentheses.
fn session_function(expr: &Expr) -> Option<(String, SessionFunction)> {
    let (name, args): (String, Option<Vec<&Expr>>) = match expr {
        Expr::Identifier(i) => (ident_name(i), None),
        Expr::Function(f) => {
            let simple =
                f.filter.is_none() && f.over.is_none() && f.within_group.is_empty() && f.null_treatment.is_none();
            let no_parameters = matches!(f.parameters, FunctionArguments::None);
            if !simple || !no_parameters {
                return None;
            }
            let name = match name_parts(&f.name)?.as_slice() {
                [name] => name.clone(),
                [schema, name] if schema == "pg_catalog" => name.clone(),
                _ => return None,
            };
            let args = match &f.args {
                FunctionArguments::None => None,
                FunctionArguments::List(list) if list.duplicate_treatment.is_none() && list.clauses.is_empty() => Some(
                    list.args
                        .iter()
                        .map(|a| match a {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()?,
                ),
                _ => return None,
            };
            (name, args)
        }
        _ => return None,
    };
    let function = match (name.as_str(), args.as_deref()) {
        ("version", Some([])) => SessionFunction::Version,
        ("current_schema", None | Some([])) => SessionFunction::CurrentSchema,
        ("current_database", Some([])) | ("current_catalog", None) => SessionFunction::CurrentDatabase,
        ("current_user" | "session_user" | "user", None) => SessionFunction::CurrentUser,
        ("pg_backend_pid", Some([])) => SessionFunction::BackendPid,
        ("current_schemas", Some([Expr::Value(v)])) => match v.value {
            Value::Boolean(b) => SessionFunction::CurrentSchemas(b),
            _ => return None,
        },
        ("set_config", Some([name, value, local])) => set_config(name, value, local)?,
        ("current_setting", Some([setting] | [setting, _])) => match setting {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => SessionFunction::CurrentSetting(Some(s.clone())),
                Value::Placeholder(_) => SessionFunction::CurrentSetting(None),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    Some((name, function))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_functions_are_intercepted() {
        for sql in [
            "INSERT INTO notes VALUES (1, 'pg_type oid = 23')",
            "UPDATE notes SET body = 'pg_type oid = 23' WHERE id = 1",
            "DELETE FROM notes WHERE body = 'SELECT * FROM pg_catalog.pg_class'",
            "INSERT INTO notes SELECT 1, typname FROM pg_catalog.pg_type",
            "CREATE TABLE pg_type_notes (id BIGINT PRIMARY KEY, body TEXT DEFAULT 'pg_catalog.pg_type')",
            "WITH w AS (INSERT INTO notes VALUES (1, 'x') RETURNING id) SELECT * FROM pg_catalog.pg_class",
            "SELECT oid INTO copy_of_types FROM pg_catalog.pg_type",
            "EXPLAIN SELECT * FROM pg_catalog.pg_class",
        ] {
            assert_eq!(route(sql), Route::Engine, "{sql}");
        }
    }

    #[test]
    fn text_outside_relations_never_routes() {
        for sql in [
            "SELECT 'pg_type oid = 23'",
            "SELECT 1 AS \"pg_catalog.x\"",
            "SELECT 'pg_catalog.pg_class' AS pg_class FROM notes",
            "SELECT body FROM notes WHERE body = 'FROM pg_catalog.pg_type WHERE oid = 23'",
            "SELECT pg_type FROM notes -- FROM pg_catalog.pg_type",
            "SELECT /* pg_catalog.pg_class */ version FROM releases",
            "SELECT * FROM public.pg_type",
            "SELECT * FROM pg_notes",
            "SELECT * FROM generate_series(1, 3)",
            "WITH pg_class AS (SELECT 1 AS oid) SELECT oid FROM pg_class",
            "SELEC 'pg_type oid = 23' FROM pg_catalog.pg_type",
            "SELECT 1; SELECT * FROM pg_catalog.pg_class",
        ] {
            assert_eq!(route(sql), Route::Engine, "{sql}");
        }
    }

    #[test]
    fn session_functions_come_from_the_parsed_projection() {
        let items = |sql: &str| match route(sql) {
            Route::Session(items) => items,
            other => panic!("{sql}: {other:?}"),
        };
        let got = items(
            "select version(), current_schema AS \"S\", current_database() Db, CURRENT_USER, pg_catalog.pg_backend_pid(), \
             current_schemas(true), current_setting('DateStyle')",
        );
        let expected = [
            ("version", SessionFunction::Version),
            ("S", SessionFunction::CurrentSchema),
            ("db", SessionFunction::CurrentDatabase),
            ("current_user", SessionFunction::CurrentUser),
            ("pg_backend_pid", SessionFunction::BackendPid),
            ("current_schemas", SessionFunction::CurrentSchemas(true)),
            ("current_setting", SessionFunction::CurrentSetting(Some("DateStyle".into()))),
        ];
        assert_eq!(got, expected.map(|(name, function)| SessionItem { name: name.into(), function }).to_vec());
        assert_eq!(items("SELECT current_setting($1)")[0].function, SessionFunction::CurrentSetting(None));
        for sql in [
            "SELECT version FROM releases",
            "SELECT version(), 1",
            "SELECT 'version()'",
            "SELECT version() FROM t",
            "SELECT now()",
        ] {
            assert_eq!(route(sql), Route::Engine, "{sql}");
        }
    }

    #[test]
    fn hostile_statements_do_not_crash_the_classifier() {
        let deep = format!("SELECT * FROM pg_class WHERE oid = {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(route(&deep), Route::Engine);
        let chain = format!("SELECT version(){}", ", version()".repeat(5_000));
        assert!(matches!(route(&chain), Route::Session(items) if items.len() == 5_001));
        // Longer than any catalog query: not classified.
        let chain = format!("SELECT 1{} FROM pg_catalog.pg_class", "+1".repeat(3_000_000));
        assert_eq!(route(&chain), Route::Engine);
        let unions = format!("SELECT 1{}", " UNION SELECT oid FROM pg_class".repeat(2_000));
        assert_eq!(route(&unions), Route::Engine);
        assert_eq!(route("SELECT 'unterminated FROM pg_catalog.pg_class"), Route::Engine);
    }
}
