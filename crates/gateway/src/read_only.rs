//! Read-only transactions (`BEGIN READ ONLY`, `SET TRANSACTION READ ONLY`,
//! `default_transaction_read_only`): the statements they refuse, decided on the parse tree as
//! PostgreSQL decides them, with its error (25006 "cannot execute INSERT in a read-only
//! transaction"). Queries, EXPLAIN without ANALYZE, COPY TO, ANALYZE and VACUUM run; writes,
//! schema changes, data-modifying WITH, row locks, nextval and setval do not.

use crate::errors::PgError;
use crate::route::{with_parsed, MAX_DEPTH};
use sqlparser::ast::{
    visit_expressions, visit_statements, Expr, LockType, ObjectName, Query, SetExpr, Statement, UtilityOption,
};
use std::ops::ControlFlow;

pub const READ_ONLY_TRANSACTION: &str = "25006";

/// PostgreSQL's error for running `command` in a read-only transaction.
pub fn refused(command: &str) -> PgError {
    PgError::new(READ_ONLY_TRANSACTION, format!("cannot execute {command} in a read-only transaction"))
}

/// The command PostgreSQL names when it refuses `sql` in a read-only transaction; None if
/// the statement only reads. Text sqlparser does not read is judged as the engine reads it
/// (`pistou_sql::engine::parse_statements`: its rewrites, such as an ON CONFLICT target with
/// index expressions); text neither reads is left to the engine, which reports the syntax
/// error. One too long to parse here is judged by its first word.
pub fn written_by(sql: &str) -> Option<String> {
    let judged = with_parsed(sql, |parsed| match parsed {
        Ok(statements) => Some(statements.iter().find_map(writes)),
        Err(_) => {
            let statements = pistou_sql::engine::parse_statements(sql, MAX_DEPTH).ok()?;
            // A rewritten statement prints as what it was rewritten to (ALTER VIEW as ALTER
            // TABLE): a command is named from the text.
            Some(statements.iter().find_map(writes).map(|tag| match statements.as_slice() {
                [Statement::Query(_) | Statement::Explain { .. }] => tag,
                _ => command_tag(sql),
            }))
        }
    });
    match judged {
        Some(Some(found)) => found,
        Some(None) => None,
        None => match first_word(sql).as_str() {
            "select" | "values" | "table" | "show" | "explain" => None,
            _ => Some(command_tag(sql)),
        },
    }
}

/// What `statement` does that a read-only transaction may not.
pub(crate) fn writes(statement: &Statement) -> Option<String> {
    match statement {
        Statement::Query(query) => query_writes(query),
        Statement::Explain { analyze, statement, options, .. } => {
            let analyze = *analyze || options.as_ref().is_some_and(|o| o.iter().any(is_analyze_option));
            if analyze {
                writes(statement)
            } else {
                None
            }
        }
        Statement::Copy { to: true, .. }
        | Statement::Analyze { .. }
        | Statement::Vacuum(_)
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::Lock(_)
        | Statement::LockTables { .. } => None,
        Statement::Copy { to: false, .. } => Some("COPY FROM".into()),
        other => Some(command_tag(&other.to_string())),
    }
}

/// A query writes through a data-modifying WITH item (PostgreSQL names the outer SELECT),
/// locks rows (`FOR UPDATE`, `FOR SHARE`, …) or draws from a sequence.
fn query_writes(query: &Query) -> Option<String> {
    let nested_write = visit_statements(query, |s| match s {
        Statement::Insert(_) | Statement::Update { .. } | Statement::Delete(_) | Statement::Merge { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    if nested_write.is_break() || has_modifying_body(query) {
        return Some("SELECT".into());
    }
    if matches!(&*query.body, SetExpr::Select(select) if select.into.is_some()) {
        return Some("SELECT INTO".into());
    }
    if let Some(lock) = query.locks.first() {
        let strength = match lock.lock_type {
            LockType::Update => "FOR UPDATE",
            LockType::Share => "FOR SHARE",
        };
        return Some(format!("SELECT {strength}"));
    }
    let sequence = visit_expressions(query, |e| match e {
        Expr::Function(f) if is_function(&f.name, "nextval") => ControlFlow::Break("nextval()"),
        Expr::Function(f) if is_function(&f.name, "setval") => ControlFlow::Break("setval()"),
        _ => ControlFlow::Continue(()),
    });
    match sequence {
        ControlFlow::Break(name) => Some(name.into()),
        ControlFlow::Continue(()) => None,
    }
}

/// A data-modifying statement as a set expression (a WITH item's body is one).
fn has_modifying_body(query: &Query) -> bool {
    fn modifying(body: &SetExpr) -> bool {
        match body {
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => true,
            SetExpr::Query(q) => has_modifying_body(q),
            SetExpr::SetOperation { left, right, .. } => modifying(left) || modifying(right),
            _ => false,
        }
    }
    modifying(&query.body)
        || query.with.as_ref().is_some_and(|w| w.cte_tables.iter().any(|c| has_modifying_body(&c.query)))
}

/// `name` or `pg_catalog.name`, in any case.
fn is_function(name: &ObjectName, wanted: &str) -> bool {
    let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(|i| i.value.to_ascii_lowercase()).collect();
    match parts.as_slice() {
        [f] => f == wanted,
        [schema, f] => schema == "pg_catalog" && f == wanted,
        _ => false,
    }
}

fn is_analyze_option(option: &UtilityOption) -> bool {
    if !option.name.value.eq_ignore_ascii_case("analyze") {
        return false;
    }
    // `(ANALYZE)`, `(ANALYZE true)`, `(ANALYZE on)`; `(ANALYZE false)` does not run it.
    option.arg.as_ref().is_none_or(|arg| {
        let text = arg.to_string().to_ascii_lowercase();
        !matches!(text.trim_matches('\''), "false" | "off" | "0" | "no")
    })
}

fn first_word(sql: &str) -> String {
    sql.split(|c: char| c.is_whitespace() || c == '(' || c == ';')
        .find(|w| !w.is_empty())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// PostgreSQL's command tag of a schema change or write: `CREATE TABLE`, `CREATE INDEX` for
/// `CREATE UNIQUE INDEX`, `DROP VIEW`, `INSERT`, … (the statement's leading words, without
/// the modifiers that do not change the tag).
fn command_tag(sql: &str) -> String {
    const MODIFIERS: &[&str] =
        &["or", "replace", "unique", "temp", "temporary", "unlogged", "global", "local", "materialized", "recursive"];
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == '(' || c == ';')
        .filter(|w| !w.is_empty())
        .take(8)
        .map(str::to_ascii_uppercase)
        .collect();
    let Some(first) = words.first() else { return "this statement".into() };
    match first.as_str() {
        "CREATE" | "ALTER" | "DROP" | "COMMENT" => {
            let object = words[1..].iter().find(|w| !MODIFIERS.contains(&w.to_ascii_lowercase().as_str()));
            match object {
                Some(o) if first == "COMMENT" => format!("{first} {o}").replace("COMMENT ON", "COMMENT"),
                Some(o) => format!("{first} {o}"),
                None => first.clone(),
            }
        }
        "TRUNCATE" => "TRUNCATE TABLE".into(),
        _ => first.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_as(sql: &str) -> Option<String> {
        written_by(sql)
    }

    #[test]
    fn reads_run_and_writes_are_named_as_postgresql_names_them() {
        for read in [
            "SELECT * FROM t WHERE id = $1",
            "select currval('s')",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "VALUES (1)",
            "EXPLAIN INSERT INTO t VALUES (1)",
            "EXPLAIN (ANALYZE false) DELETE FROM t",
            "COPY t TO STDOUT",
            "ANALYZE t",
            "VACUUM t",
            "LOCK TABLE t",
            "SELECT 'insert into t values (1)'",
        ] {
            assert_eq!(refused_as(read), None, "{read}");
        }
        for (write, tag) in [
            ("INSERT INTO t VALUES (1)", "INSERT"),
            ("update t set v = 1", "UPDATE"),
            ("DELETE FROM t", "DELETE"),
            ("WITH x AS (UPDATE t SET v = 'a' RETURNING *) SELECT * FROM x", "SELECT"),
            ("WITH x AS (DELETE FROM t RETURNING *) SELECT 1", "SELECT"),
            ("EXPLAIN ANALYZE INSERT INTO t VALUES (5)", "INSERT"),
            ("EXPLAIN (ANALYZE) UPDATE t SET v = 1", "UPDATE"),
            ("SELECT nextval('s')", "nextval()"),
            ("SELECT pg_catalog.setval('s', 5)", "setval()"),
            ("SELECT * FROM t FOR UPDATE", "SELECT FOR UPDATE"),
            ("SELECT * FROM t FOR SHARE", "SELECT FOR SHARE"),
            ("SELECT 1 INTO x", "SELECT INTO"),
            ("CREATE TABLE x (a int)", "CREATE TABLE"),
            ("CREATE TEMP TABLE x (a int)", "CREATE TABLE"),
            ("CREATE UNIQUE INDEX ON t (v)", "CREATE INDEX"),
            ("create or replace view v as select 1", "CREATE VIEW"),
            ("DROP TABLE t", "DROP TABLE"),
            ("ALTER TABLE t ADD COLUMN w int", "ALTER TABLE"),
            ("TRUNCATE t", "TRUNCATE TABLE"),
            ("COPY t FROM STDIN", "COPY FROM"),
            ("CREATE SEQUENCE s", "CREATE SEQUENCE"),
        ] {
            assert_eq!(refused_as(write).as_deref(), Some(tag), "{write}");
        }
    }

    #[test]
    fn text_that_does_not_parse_is_left_to_the_engine_unless_too_long_to_parse() {
        assert_eq!(refused_as("INSERT INTO"), None);
        // Text only the engine's rewrites read is judged as the engine reads it.
        let upsert = "INSERT INTO t VALUES (1) ON CONFLICT (lower(v)) DO UPDATE SET v = 'x'";
        assert_eq!(refused_as(upsert).as_deref(), Some("INSERT"));
        assert_eq!(refused_as("INSERT INTO t SELECT trim(FROM v) FROM t").as_deref(), Some("INSERT"));
        assert_eq!(refused_as("ALTER VIEW v RENAME TO w").as_deref(), Some("ALTER VIEW"));
        assert_eq!(refused_as("SELECT trim(FROM v) FROM t"), None);
        let long_select = format!("SELECT {}1", "1+".repeat(600_000));
        assert_eq!(refused_as(&long_select), None);
        let long_insert = format!("INSERT INTO t VALUES ({}1)", "1+".repeat(600_000));
        assert_eq!(refused_as(&long_insert).as_deref(), Some("INSERT"));
    }
}
