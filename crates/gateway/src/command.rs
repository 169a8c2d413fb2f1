//! What the gateway answers itself before a statement reaches Pistou: transaction
//! control, SET / SHOW / RESET, and recognized session and catalog queries.

use crate::errors::{self, PgError};
use crate::split::strip_comments;
use sqlparser::ast::{Ident, ObjectType, Statement};

/// PostgreSQL's NAMEDATALEN - 1.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// How a statement is handled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `BEGIN` / `START TRANSACTION` with its access mode: `READ ONLY` (true), `READ WRITE`
    /// (false), or neither (None: `default_transaction_read_only`). Isolation levels are
    /// accepted: every transaction is serializable.
    Begin {
        read_only: Option<bool>,
    },
    Commit,
    Rollback,
    /// `SAVEPOINT name`, `RELEASE [SAVEPOINT] name`, `ROLLBACK [WORK | TRANSACTION] TO
    /// [SAVEPOINT] name`, with the name as PostgreSQL folds it.
    Savepoint(String),
    Release(String),
    RollbackTo(String),
    /// `DROP TABLE [IF EXISTS] a, b, …`: one single-table DROP statement per table (a
    /// schema change is alone in its transaction, so each is its own).
    DropTables(Vec<String>),
    /// `TRUNCATE [TABLE] [ONLY] a, b, …`: a `DELETE FROM` of each table, in one transaction.
    Truncate(Vec<String>),
    /// `SET [SESSION | LOCAL] name = value` (None: DEFAULT).
    Set {
        name: String,
        value: Option<String>,
        local: bool,
    },
    /// `SET TRANSACTION READ ONLY | READ WRITE` and `SET transaction_read_only = …`: the
    /// block's access mode.
    SetTransaction {
        read_only: bool,
    },
    /// Accepted and ignored because Pistou already provides it: isolation level settings
    /// (every transaction is serializable), `SET SESSION CHARACTERISTICS …` without an
    /// access mode.
    SetNoop(&'static str),
    Reset(Option<String>),
    Show(String),
    /// `DISCARD ALL` (`all`): forget settings and prepared statements and drop temporary
    /// tables; `DISCARD TEMP[ORARY]`: drop temporary tables.
    Discard {
        all: bool,
    },
    /// Answered by the gateway (session functions, pg_catalog / information_schema).
    Intercepted,
    /// `PREPARE name [(types)] AS statement`: the statement as written, and the OIDs of
    /// the declared parameter types (0: not declared or unknown to the gateway).
    Prepare {
        name: String,
        statement: String,
        declared: Vec<u32>,
    },
    /// `EXECUTE name [(arguments)]`: constant arguments as text parameters (None: NULL).
    Execute {
        name: String,
        args: Vec<Option<String>>,
    },
    /// `DEALLOCATE [PREPARE] name`, or `ALL` (None).
    Deallocate(Option<String>),
    /// Refused before running (e.g. a malformed PREPARE): this error is the answer.
    Refused(PgError),
    /// `COPY … FROM STDIN` / `COPY … TO STDOUT` (`crate::copy`).
    Copy(Box<CopyCommand>),
    /// `VACUUM` / `ANALYZE` of the named tables (all when none): PostgreSQL's space
    /// reclamation and planner statistics, which Pistou does not have (old versions go with
    /// garbage collection; plans do not depend on data), so there is nothing to do once
    /// the tables are found. `tag` is the command tag.
    Maintenance {
        tag: &'static str,
        tables: Vec<String>,
    },
    /// `ALTER TABLE t ADD [CONSTRAINT t_pkey] PRIMARY KEY (cols)`: existing rows are checked
    /// (NULLs, duplicates) before the schema change runs.
    AddPrimaryKey {
        table: String,
        columns: Vec<String>,
    },
    /// `CREATE TABLE … AS query` and `SELECT … INTO table …` (`Session`'s `create_table_as`).
    CreateTableAs(Box<CreateTableAs>),
    /// Sent to Pistou as is.
    Sql,
}

/// `CREATE TABLE [IF NOT EXISTS] table [(columns)] AS query [WITH [NO] DATA]`, or
/// `SELECT … INTO table …`: a new table with the query's columns and rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateTableAs {
    /// As written (quoted where it was).
    pub table: String,
    /// Names given to the first columns (the rest keep the query's names).
    pub columns: Vec<String>,
    /// The query, as sqlparser prints it back.
    pub query: String,
    pub if_not_exists: bool,
    /// False for `WITH NO DATA`: the table only.
    pub with_data: bool,
}

/// Where COPY reads or writes rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CopySource {
    /// A table (as written) and the listed columns (as written; empty: all).
    Table { name: String, columns: Vec<String> },
    /// `COPY (query) TO STDOUT`.
    Query(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyCommand {
    /// FROM STDIN (else TO STDOUT).
    pub from: bool,
    pub source: CopySource,
    pub options: crate::copy::CopyOptions,
}

/// Lowercase words and punctuation of a statement, for recognizing its shape.
pub fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = strip_comments(sql).chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            current.extend(c.to_lowercase());
            continue;
        }
        if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if c == '\'' {
            // A quoted string stays one word, quotes included and case kept.
            let mut s = String::from('\'');
            while let Some(q) = chars.next() {
                s.push(q);
                if q == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                        continue;
                    }
                    break;
                }
            }
            out.push(s);
        } else if !c.is_whitespace() {
            out.push(c.to_string());
        }
        if out.len() > 64 {
            break;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Unquotes a SET value word: 'text' → text, "x" kept as is otherwise.
fn unquote(word: &str) -> String {
    match word.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')) {
        Some(inner) => inner.replace("''", "'"),
        None => word.to_string(),
    }
}

pub fn classify(sql: &str) -> Command {
    let w = words(sql);
    let first = w.first().map(String::as_str).unwrap_or("");
    let second = w.get(1).map(String::as_str).unwrap_or("");
    match first {
        "begin" => Command::Begin { read_only: access_mode(&w) },
        "start" if second == "transaction" => Command::Begin { read_only: access_mode(&w) },
        "commit" | "end" => Command::Commit,
        "rollback" | "abort" if !w.iter().any(|x| x == "to" || x == "prepared") => Command::Rollback,
        "savepoint" | "release" => savepoint_command(sql),
        "truncate" => truncate_command(sql),
        "drop" if second == "table" && w.iter().any(|x| x == ",") => drop_tables_command(sql),
        "rollback" if !w.iter().any(|x| x == "prepared") => savepoint_command(sql),
        "set" => classify_set(&w[1..]),
        "reset" => match second {
            "all" => Command::Reset(None),
            "" => Command::Sql,
            name => Command::Reset(Some(canonical_name(name))),
        },
        "show" => match (second, w.get(2).map(String::as_str)) {
            ("transaction", Some("isolation")) => Command::Show("transaction_isolation".into()),
            ("time", Some("zone")) => Command::Show("timezone".into()),
            ("", _) => Command::Sql,
            (name, _) => Command::Show(canonical_name(name)),
        },
        "discard" if second == "all" => Command::Discard { all: true },
        "discard" if second == "temp" || second == "temporary" => Command::Discard { all: false },
        "copy" => copy_command(sql),
        "vacuum" => maintenance_command("VACUUM", &w[1..]),
        "analyze" | "analyse" => maintenance_command("ANALYZE", &w[1..]),
        "alter" if second == "table" && w.iter().any(|x| x == "primary") => add_primary_key_command(sql),
        "create" if second == "table" && w.iter().any(|x| x == "as") => create_table_as_command(sql),
        "prepare" if second != "transaction" => crate::prepared::classify(sql),
        "execute" | "deallocate" => crate::prepared::classify(sql),
        // Only a query can be answered by the gateway: other statements are not parsed here.
        "select" if w.iter().any(|x| x == "into") => match select_into(sql) {
            Some(c) => Command::CreateTableAs(Box::new(c)),
            None if crate::route::intercepts(sql) => Command::Intercepted,
            None => Command::Sql,
        },
        "select" | "with" | "(" | "values" if crate::route::intercepts(sql) => Command::Intercepted,
        _ => Command::Sql,
    }
}

/// A savepoint statement, parsed (the name may be a quoted identifier).
fn savepoint_command(sql: &str) -> Command {
    let parsed = crate::route::with_parsed(sql, |parsed| match parsed.as_deref() {
        Ok([Statement::Savepoint { name }]) => Ok(Command::Savepoint(identifier(name))),
        Ok([Statement::ReleaseSavepoint { name }]) => Ok(Command::Release(identifier(name))),
        Ok([Statement::Rollback { chain: false, savepoint: Some(name) }]) => Ok(Command::RollbackTo(identifier(name))),
        Ok(_) => Err(PgError::new(errors::FEATURE_NOT_SUPPORTED, "this form of ROLLBACK is not supported")),
        Err(e) => Err(PgError::new(errors::SYNTAX_ERROR, e.to_string())),
    });
    match parsed {
        Some(Ok(command)) => command,
        Some(Err(e)) => Command::Refused(e),
        None => Command::Refused(PgError::new(errors::PROGRAM_LIMIT, "statement too long to parse")),
    }
}

/// Parses `sql` as one statement and maps it with `f`; None when it is not one statement
/// (Pistou's engine then reports the error).
fn parsed_command(sql: &str, f: impl FnOnce(&Statement) -> Option<Command> + Send) -> Command {
    crate::route::with_parsed(sql, |parsed| match parsed.as_deref() {
        Ok([statement]) => f(statement),
        _ => None,
    })
    .flatten()
    .unwrap_or(Command::Sql)
}

fn drop_tables_command(sql: &str) -> Command {
    parsed_command(sql, |statement| match statement {
        Statement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            cascade: false,
            purge: false,
            temporary: false,
            table: None,
            ..
        } if names.len() > 1 => {
            let if_exists = if *if_exists { "IF EXISTS " } else { "" };
            Some(Command::DropTables(names.iter().map(|n| format!("DROP TABLE {if_exists}{n}")).collect()))
        }
        _ => None,
    })
}

/// COPY's boolean options as PostgreSQL spells them (`FREEZE on`, `HEADER 1`), rewritten
/// token by token to the `true` / `false` sqlparser reads (other text is kept as is).
fn copy_booleans(sql: &str) -> Option<String> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut after_option = false;
    for token in tokens {
        let text = match &token {
            Token::Word(w) if after_option && w.quote_style.is_none() => match w.value.to_ascii_lowercase().as_str() {
                "on" | "yes" => "true".to_string(),
                "off" | "no" => "false".to_string(),
                _ => token.to_string(),
            },
            Token::Number(n, _) if after_option && (n == "1" || n == "0") => {
                if n == "1" { "true" } else { "false" }.to_string()
            }
            _ => token.to_string(),
        };
        match &token {
            Token::Whitespace(_) => {}
            Token::Word(w) if w.quote_style.is_none() => {
                after_option = matches!(w.value.to_ascii_lowercase().as_str(), "freeze" | "header");
            }
            _ => after_option = false,
        }
        out.push_str(&text);
    }
    Some(out)
}

fn copy_command(sql: &str) -> Command {
    use sqlparser::ast::{CopySource as Source, CopyTarget};
    let Some(sql) = copy_booleans(sql) else {
        return Command::Refused(PgError::new(errors::SYNTAX_ERROR, "syntax error in COPY"));
    };
    let sql = sql.as_str();
    let parsed = crate::route::with_parsed(sql, |parsed| match parsed.as_deref() {
        Ok([Statement::Copy { source, to, target, options, legacy_options, values }]) => {
            if !values.is_empty() {
                return Err(PgError::new(errors::FEATURE_NOT_SUPPORTED, "COPY with inline data is not supported"));
            }
            match (to, target) {
                (false, CopyTarget::Stdin) | (true, CopyTarget::Stdout) => {}
                _ => {
                    return Err(PgError::new(
                        errors::FEATURE_NOT_SUPPORTED,
                        "COPY to or from a file or program is not supported: use STDIN / STDOUT (psql's \\copy)",
                    ))
                }
            }
            let source = match source {
                Source::Table { table_name, columns } => CopySource::Table {
                    name: table_name.to_string(),
                    columns: columns.iter().map(ToString::to_string).collect(),
                },
                Source::Query(_) if !to => {
                    return Err(PgError::new(errors::SYNTAX_ERROR, "COPY FROM cannot read into a query"))
                }
                Source::Query(q) => CopySource::Query(q.to_string()),
            };
            let options = crate::copy::CopyOptions::parse(options, legacy_options)?;
            Ok(Command::Copy(Box::new(CopyCommand { from: !to, source, options })))
        }
        Ok(_) => Err(PgError::new(errors::SYNTAX_ERROR, "COPY must be a single statement")),
        Err(e) => Err(PgError::new(errors::SYNTAX_ERROR, e.to_string())),
    });
    match parsed {
        Some(Ok(command)) => command,
        Some(Err(e)) => Command::Refused(e),
        None => Command::Refused(PgError::new(errors::PROGRAM_LIMIT, "statement too long to parse")),
    }
}

/// `VACUUM [FULL] [FREEZE] [VERBOSE] [ANALYZE] [(options)] [t [(cols)], …]`, `ANALYZE
/// [VERBOSE] [(options)] [t [(cols)], …]`: the table names.
fn maintenance_command(tag: &'static str, words: &[String]) -> Command {
    const OPTIONS: [&str; 6] = ["full", "freeze", "verbose", "analyze", "analyse", "skip_locked"];
    let mut tables = Vec::new();
    let mut depth = 0usize;
    let mut expect_name = true;
    for w in words {
        match w.as_str() {
            "(" => depth += 1,
            ")" => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            "," => expect_name = true,
            ";" => {}
            word if tables.is_empty() && expect_name && OPTIONS.contains(&word) => {}
            word if expect_name => {
                tables.push(word.strip_prefix("public.").unwrap_or(word).to_string());
                expect_name = false;
            }
            _ => return Command::Refused(PgError::new(errors::SYNTAX_ERROR, format!("syntax error in {tag}"))),
        }
    }
    Command::Maintenance { tag, tables }
}

fn add_primary_key_command(sql: &str) -> Command {
    use sqlparser::ast::{AlterTableOperation, TableConstraint};
    parsed_command(sql, |statement| {
        let Statement::AlterTable(a) = statement else { return None };
        let [AlterTableOperation::AddConstraint { constraint: TableConstraint::PrimaryKey(p), not_valid: false }] =
            a.operations.as_slice()
        else {
            return None;
        };
        let columns = p.columns.iter().map(|c| c.column.expr.to_string()).collect();
        Some(Command::AddPrimaryKey { table: a.name.to_string(), columns })
    })
}

fn create_table_as_command(sql: &str) -> Command {
    let (sql, columns) = match without_column_names(sql) {
        Some((rewritten, columns)) => (std::borrow::Cow::Owned(rewritten), columns),
        None => (std::borrow::Cow::Borrowed(sql), Vec::new()),
    };
    parsed_command(&sql, |statement| {
        let Statement::CreateTable(c) = statement else { return None };
        let query = c.query.as_ref()?;
        let with_data = c.with_data.is_none_or(|w| w.data && w.statistics.is_none());
        // Any other clause (TEMP, constraints, options): the engine names what it refuses.
        let plain = !c.temporary && !c.or_replace && !c.external && c.columns.is_empty() && c.constraints.is_empty();
        plain.then(|| {
            Command::CreateTableAs(Box::new(CreateTableAs {
                table: c.name.to_string(),
                columns,
                query: query.to_string(),
                if_not_exists: c.if_not_exists,
                with_data,
            }))
        })
    })
}

/// `CREATE TABLE t (a, b) AS …`: PostgreSQL's column names without types, which sqlparser
/// does not read. The statement without the list, and the names; None for any other shape.
fn without_column_names(sql: &str) -> Option<(String, Vec<String>)> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let significant: Vec<usize> =
        tokens.iter().enumerate().filter(|(_, t)| !matches!(t, Token::Whitespace(_))).map(|(i, _)| i).collect();
    let keyword = |n: usize| match significant.get(n).and_then(|&i| tokens.get(i)) {
        Some(Token::Word(w)) => Some(w.keyword),
        _ => None,
    };
    let token = |n: usize| significant.get(n).and_then(|&i| tokens.get(i));
    if keyword(0) != Some(Keyword::CREATE) || keyword(1) != Some(Keyword::TABLE) {
        return None;
    }
    let mut n = 2;
    if keyword(2) == Some(Keyword::IF) && keyword(3) == Some(Keyword::NOT) && keyword(4) == Some(Keyword::EXISTS) {
        n = 5;
    }
    // The table name: words separated by periods.
    while matches!(token(n), Some(Token::Word(_))) {
        n += 1;
        if !matches!(token(n), Some(Token::Period)) {
            break;
        }
        n += 1;
    }
    let open = n;
    if !matches!(token(open), Some(Token::LParen)) {
        return None;
    }
    let mut names = Vec::new();
    n += 1;
    loop {
        let Some(Token::Word(w)) = token(n) else { return None };
        names.push(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() });
        match token(n + 1) {
            Some(Token::Comma) => n += 2,
            Some(Token::RParen) => break,
            _ => return None,
        }
    }
    let close = n + 1;
    if keyword(close + 1) != Some(Keyword::AS) {
        return None;
    }
    let (from, to) = (*significant.get(open)?, *significant.get(close)?);
    let rest: String =
        tokens.iter().enumerate().filter(|(i, _)| *i < from || *i > to).map(|(_, t)| t.to_string()).collect();
    Some((rest, names))
}

/// `SELECT … INTO table …` as CREATE TABLE AS; None for any other statement.
fn select_into(sql: &str) -> Option<CreateTableAs> {
    crate::route::with_parsed(sql, |parsed| {
        let Ok([statement]) = parsed.as_deref() else { return None };
        let Statement::Query(query) = statement else { return None };
        let sqlparser::ast::SetExpr::Select(select) = &*query.body else { return None };
        let into = select.into.as_ref()?;
        let [target @ (sqlparser::ast::Expr::Identifier(_) | sqlparser::ast::Expr::CompoundIdentifier(_))] =
            into.targets.as_slice()
        else {
            return None;
        };
        if into.temporary || into.unlogged {
            return None;
        }
        let mut plain = query.clone();
        if let sqlparser::ast::SetExpr::Select(s) = &mut *plain.body {
            s.into = None;
        }
        Some(CreateTableAs {
            table: target.to_string(),
            columns: Vec::new(),
            query: plain.to_string(),
            if_not_exists: false,
            with_data: true,
        })
    })
    .flatten()
}

fn truncate_command(sql: &str) -> Command {
    parsed_command(sql, |statement| {
        let Statement::Truncate(t) = statement else { return None };
        if t.partitions.is_some() || t.if_exists || t.on_cluster.is_some() {
            return None;
        }
        // Pistou has no table inheritance (ONLY, `*`), sequences (RESTART IDENTITY) or
        // foreign keys (CASCADE): each leaves exactly the named tables to empty.
        Some(Command::Truncate(t.table_names.iter().map(|target| target.name.to_string()).collect()))
    })
}

/// An identifier as PostgreSQL stores it: unquoted ones folded to lower case, at most 63
/// bytes (longer ones are truncated, as PostgreSQL does).
fn identifier(ident: &Ident) -> String {
    let mut name = if ident.quote_style.is_some() { ident.value.clone() } else { ident.value.to_lowercase() };
    if name.len() > MAX_IDENTIFIER_BYTES {
        let mut end = MAX_IDENTIFIER_BYTES;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

/// The last `READ ONLY` (true) or `READ WRITE` (false) among transaction modes.
fn access_mode(w: &[String]) -> Option<bool> {
    w.windows(2).rev().find_map(|pair| match (pair[0].as_str(), pair[1].as_str()) {
        ("read", "only") => Some(true),
        ("read", "write") => Some(false),
        _ => None,
    })
}

fn classify_set(w: &[String]) -> Command {
    let mut w = w;
    let mut local = false;
    if let Some(scope @ ("session" | "local")) = w.first().map(String::as_str) {
        local = scope == "local";
        w = &w[1..];
    }
    let head = w.first().map(String::as_str).unwrap_or("");
    match head {
        "transaction" => {
            return match access_mode(w) {
                Some(read_only) => Command::SetTransaction { read_only },
                None => Command::SetNoop("SET"),
            };
        }
        // SET SESSION CHARACTERISTICS AS TRANSACTION …: the session's default.
        "characteristics" => {
            return match access_mode(w) {
                Some(read_only) => Command::Set {
                    name: "default_transaction_read_only".into(),
                    value: Some(if read_only { "on" } else { "off" }.into()),
                    local,
                },
                None => Command::SetNoop("SET"),
            };
        }
        "time" if w.get(1).map(String::as_str) == Some("zone") => {
            let value = w.get(2).map(|v| unquote(v));
            return Command::Set {
                name: "timezone".into(),
                value: value.filter(|v| !v.eq_ignore_ascii_case("default") && !v.eq_ignore_ascii_case("local")),
                local,
            };
        }
        "names" => return Command::Set { name: "client_encoding".into(), value: w.get(1).map(|v| unquote(v)), local },
        _ => {}
    }
    if head.is_empty() {
        return Command::Sql;
    }
    let rest = match w.get(1).map(String::as_str) {
        Some("=" | "to") => &w[2..],
        _ => return Command::Set { name: canonical_name(head), value: Some(String::new()), local },
    };
    let value: Vec<String> = rest.iter().filter(|x| *x != ",").map(|x| unquote(x)).collect();
    if value.len() == 1 && value[0].eq_ignore_ascii_case("default") {
        return Command::Set { name: canonical_name(head), value: None, local };
    }
    Command::Set { name: canonical_name(head), value: Some(value.join(", ")), local }
}

/// Parameter names are case-insensitive; a few have aliases.
pub fn canonical_name(name: &str) -> String {
    let name = name.trim_matches('"').to_ascii_lowercase();
    match name.as_str() {
        "names" => "client_encoding".into(),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_control() {
        assert_eq!(classify("BEGIN"), Command::Begin { read_only: None });
        assert_eq!(classify("begin read only"), Command::Begin { read_only: Some(true) });
        assert_eq!(
            classify("START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE"),
            Command::Begin { read_only: Some(true) }
        );
        assert_eq!(classify("BEGIN READ ONLY, READ WRITE"), Command::Begin { read_only: Some(false) });
        assert_eq!(classify("SET TRANSACTION READ ONLY"), Command::SetTransaction { read_only: true });
        assert_eq!(classify("set transaction isolation level serializable"), Command::SetNoop("SET"));
        assert_eq!(
            classify("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"),
            Command::Set { name: "default_transaction_read_only".into(), value: Some("on".into()), local: false }
        );
        assert_eq!(classify("discard temporary"), Command::Discard { all: false });
        assert_eq!(classify("DISCARD ALL"), Command::Discard { all: true });
        assert_eq!(classify("begin transaction isolation level serializable"), Command::Begin { read_only: None });
        assert_eq!(classify(" START TRANSACTION READ WRITE"), Command::Begin { read_only: Some(false) });
        assert_eq!(classify("END"), Command::Commit);
        assert_eq!(classify("commit work"), Command::Commit);
        assert_eq!(classify("ABORT"), Command::Rollback);
    }

    #[test]
    fn create_table_as_and_select_into() {
        let ctas = |sql: &str| match classify(sql) {
            Command::CreateTableAs(c) => Some(*c),
            _ => None,
        };
        let c = ctas("create table if not exists public.t (a, \"B\") as select 1, 2, 3 with no data").expect("ctas");
        assert_eq!(
            (c.table.as_str(), c.columns.clone(), c.if_not_exists, c.with_data),
            ("public.t", vec!["a".into(), "B".into()], true, false)
        );
        assert_eq!(c.query, "SELECT 1, 2, 3");
        let c = ctas("SELECT id, 'as' AS x INTO t2 FROM t WHERE v > 0").expect("select into");
        assert_eq!((c.table.as_str(), c.query.as_str()), ("t2", "SELECT id, 'as' AS x FROM t WHERE v > 0"));
        // Not CREATE TABLE AS: typed columns, TEMP (the engine names what it refuses), a
        // word `as` elsewhere; a quoted "into" keeps a session function the gateway's.
        assert_eq!(classify("CREATE TABLE t (a INT GENERATED ALWAYS AS IDENTITY)"), Command::Sql);
        assert_eq!(classify("CREATE TABLE t (a int, b) AS SELECT 1, 2"), Command::Sql);
        assert_eq!(classify("CREATE TEMP TABLE t AS SELECT 1"), Command::Sql);
        assert_eq!(classify("SELECT set_config('a.b', 'c', false) AS \"into\""), Command::Intercepted);
    }

    #[test]
    fn savepoints() {
        assert_eq!(classify("SAVEPOINT \"_pg3_1\""), Command::Savepoint("_pg3_1".into()));
        assert_eq!(classify("savepoint Sp"), Command::Savepoint("sp".into()));
        assert_eq!(classify("RELEASE SAVEPOINT sp"), Command::Release("sp".into()));
        assert_eq!(classify("release \"Sp\""), Command::Release("Sp".into()));
        assert_eq!(classify("ROLLBACK TO SAVEPOINT a"), Command::RollbackTo("a".into()));
        assert_eq!(classify("rollback transaction to b"), Command::RollbackTo("b".into()));
        assert_eq!(classify(&format!("SAVEPOINT {}", "x".repeat(70))), Command::Savepoint("x".repeat(63)));
        assert_eq!(classify(&format!("SAVEPOINT \"{}\"", "é".repeat(40))), Command::Savepoint("é".repeat(31)));
        assert!(matches!(classify("SAVEPOINT"), Command::Refused(e) if e.code == "42601"));
        assert!(matches!(classify("ROLLBACK TO"), Command::Refused(e) if e.code == "42601"));
        assert_eq!(classify("ROLLBACK PREPARED 'x'"), Command::Sql);
    }

    #[test]
    fn multi_table_drop_and_truncate() {
        let tables = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            classify("drop table if exists pgbench_accounts, pgbench_branches, \"Odd\"\"Name\""),
            Command::DropTables(tables(&[
                "DROP TABLE IF EXISTS pgbench_accounts",
                "DROP TABLE IF EXISTS pgbench_branches",
                "DROP TABLE IF EXISTS \"Odd\"\"Name\""
            ]))
        );
        assert_eq!(classify("DROP TABLE a, b"), Command::DropTables(tables(&["DROP TABLE a", "DROP TABLE b"])));
        assert_eq!(classify("DROP TABLE a"), Command::Sql);
        assert_eq!(classify("DROP TABLE a, b CASCADE"), Command::Sql);
        assert_eq!(classify("DROP INDEX a, b"), Command::Sql);
        assert_eq!(classify("TRUNCATE t"), Command::Truncate(tables(&["t"])));
        assert_eq!(
            classify("truncate table only a, public.b restart identity cascade"),
            Command::Truncate(tables(&["a", "public.b"]))
        );
        assert_eq!(classify("TRUNCATE"), Command::Sql);
        assert_eq!(
            classify("vacuum analyze pgbench_branches, public.t"),
            Command::Maintenance { tag: "VACUUM", tables: tables(&["pgbench_branches", "t"]) }
        );
        assert_eq!(classify("VACUUM (VERBOSE, ANALYZE)"), Command::Maintenance { tag: "VACUUM", tables: vec![] });
        assert_eq!(classify("analyze t (a, b)"), Command::Maintenance { tag: "ANALYZE", tables: tables(&["t"]) });
        assert_eq!(
            classify("alter table pgbench_accounts add primary key (aid)"),
            Command::AddPrimaryKey { table: "pgbench_accounts".into(), columns: tables(&["aid"]) }
        );
        assert_eq!(classify("TRUNCATE a; TRUNCATE b"), Command::Sql);
    }

    #[test]
    fn copy_statements() {
        let Command::Copy(c) = classify("copy pgbench_accounts from stdin with (freeze on)") else { panic!("copy") };
        assert!(c.from);
        assert_eq!(c.source, CopySource::Table { name: "pgbench_accounts".into(), columns: vec![] });
        let Command::Copy(c) = classify("COPY t (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER 1, NULL 'on')") else {
            panic!("copy")
        };
        assert_eq!(c.source, CopySource::Table { name: "t".into(), columns: vec!["a".into(), "\"B\"".into()] });
        assert!(c.options.header);
        assert_eq!(c.options.null, "on");
        let Command::Copy(c) = classify("COPY (SELECT 1) TO STDOUT CSV HEADER") else { panic!("copy") };
        assert!(!c.from && c.options.header);
        assert!(matches!(classify("COPY t FROM '/etc/passwd'"), Command::Refused(e) if e.code == "0A000"));
        assert!(matches!(classify("COPY t FROM STDIN WITH (FORMAT binary)"), Command::Refused(e) if e.code == "0A000"));
        assert!(matches!(classify("COPY t FROM"), Command::Refused(e) if e.code == "42601"));
    }

    #[test]
    fn settings() {
        assert_eq!(
            classify("SET extra_float_digits = 3"),
            Command::Set { name: "extra_float_digits".into(), value: Some("3".into()), local: false }
        );
        assert_eq!(
            classify("set DateStyle to 'ISO', 'MDY'"),
            Command::Set { name: "datestyle".into(), value: Some("ISO, MDY".into()), local: false }
        );
        assert_eq!(
            classify("SET TIME ZONE 'UTC'"),
            Command::Set { name: "timezone".into(), value: Some("UTC".into()), local: false }
        );
        assert_eq!(
            classify("SET application_name TO DEFAULT"),
            Command::Set { name: "application_name".into(), value: None, local: false }
        );
        assert_eq!(
            classify("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
            Command::SetNoop("SET")
        );
        assert_eq!(classify("SHOW TRANSACTION ISOLATION LEVEL"), Command::Show("transaction_isolation".into()));
        assert_eq!(classify("show search_path"), Command::Show("search_path".into()));
        assert_eq!(classify("RESET ALL"), Command::Reset(None));
        assert_eq!(
            classify("SET LOCAL statement_timeout TO '5s'"),
            Command::Set { name: "statement_timeout".into(), value: Some("5s".into()), local: true }
        );
        assert_eq!(
            classify("SET SESSION TIME ZONE 'UTC'"),
            Command::Set { name: "timezone".into(), value: Some("UTC".into()), local: false }
        );
    }

    #[test]
    fn ordinary_sql_passes_through() {
        assert_eq!(classify("SELECT * FROM accounts"), Command::Sql);
        assert_eq!(classify("INSERT INTO t VALUES ('begin')"), Command::Sql);
        assert_eq!(classify("SELECT version()"), Command::Intercepted);
        assert_eq!(classify("INSERT INTO notes VALUES (1, 'pg_type oid = 23')"), Command::Sql);
        assert_eq!(classify("UPDATE notes SET body = 'select * from pg_catalog.pg_class'"), Command::Sql);
        assert_eq!(classify("SELECT 'pg_type oid = 23'"), Command::Sql);
        // Catalog queries are the SQL engine's.
        assert_eq!(classify("/* c */ (SELECT typname FROM pg_type WHERE oid = 23)"), Command::Sql);
    }
}
