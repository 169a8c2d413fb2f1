//! SQL-level `PREPARE`, `EXECUTE` and `DEALLOCATE`, parsed into commands. The statements
//! they name are the connection's prepared statements, shared with the protocol's Parse
//! (as in PostgreSQL); `conn.rs` runs them.

use crate::command::Command;
use crate::errors::{PgError, PROGRAM_LIMIT};
use crate::pgtypes;
use crate::route::{ident_name, with_parsed};
use sqlparser::ast::{DataType, Expr, Statement, UnaryOperator, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

const SYNTAX_ERROR: &str = "42601";
const FEATURE_NOT_SUPPORTED: &str = "0A000";
const STATEMENT_TOO_COMPLEX: &str = "54001";

/// The command for a statement starting with PREPARE, EXECUTE or DEALLOCATE.
pub fn classify(sql: &str) -> Command {
    let parsed = with_parsed(sql, |parsed| {
        let statements = parsed.map_err(|e| match e {
            ParserError::RecursionLimitExceeded => {
                PgError::new(STATEMENT_TOO_COMPLEX, "statement is nested too deeply")
            }
            e => PgError::new(SYNTAX_ERROR, format!("syntax error: {e}")),
        })?;
        match statements.as_slice() {
            [Statement::Prepare { name, data_types, statement }] => prepare(sql, ident_name(name), data_types, statement),
            [Statement::Execute { name: Some(name), parameters, immediate: false, into, using, output: false, default: false, .. }]
                if into.is_empty() && using.is_empty() && name.0.len() == 1 =>
            {
                let name = name.0.first().and_then(|part| part.as_ident()).map(ident_name).unwrap_or_default();
                let args = parameters.iter().map(argument).collect::<Option<Vec<_>>>().ok_or_else(|| {
                    PgError::new(FEATURE_NOT_SUPPORTED, "EXECUTE arguments must be constants (literals, NULL, casts of literals) in the Pistou gateway")
                })?;
                Ok(Command::Execute { name, args })
            }
            [Statement::Deallocate { name, .. }] if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") => {
                Ok(Command::Deallocate(None))
            }
            [Statement::Deallocate { name, .. }] => Ok(Command::Deallocate(Some(ident_name(name)))),
            _ => Err(PgError::new(
                SYNTAX_ERROR,
                "syntax error: expected PREPARE name [(types)] AS statement, EXECUTE name [(arguments)] or DEALLOCATE [PREPARE] name | ALL",
            )),
        }
    });
    match parsed {
        // PostgreSQL refuses `""` as a name (the empty name is the protocol's unnamed statement).
        Some(Ok(Command::Prepare { name, .. } | Command::Execute { name, .. } | Command::Deallocate(Some(name))))
            if name.is_empty() =>
        {
            Command::Refused(PgError::new(SYNTAX_ERROR, "zero-length delimited identifier"))
        }
        Some(Ok(command)) => command,
        Some(Err(e)) => Command::Refused(e),
        None => Command::Refused(PgError::new(PROGRAM_LIMIT, "statement too long or complex for the gateway to parse")),
    }
}

fn prepare(sql: &str, name: String, types: &[DataType], body: &Statement) -> Result<Command, PgError> {
    // PostgreSQL's PreparableStmt.
    if !matches!(body, Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)) {
        return Err(PgError::new(
            SYNTAX_ERROR,
            "syntax error: PREPARE takes a SELECT, VALUES, INSERT, UPDATE or DELETE statement",
        ));
    }
    let statement = body_text(sql).ok_or_else(|| PgError::new(SYNTAX_ERROR, "syntax error: PREPARE without AS"))?;
    Ok(Command::Prepare { name, statement: statement.to_string(), declared: types.iter().map(type_oid).collect() })
}

/// The text of the prepared statement, as the client wrote it: what follows the first `AS`
/// outside parentheses (the name and the type list cannot hold one).
fn body_text(sql: &str) -> Option<&str> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let mut depth = 0i32;
    let mut after_as = false;
    for t in tokens {
        match &t.token {
            Token::Whitespace(_) => {}
            _ if after_as => return sql.get(byte_offset(sql, t.span.start)?..),
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::AS && w.quote_style.is_none() => after_as = true,
            _ => {}
        }
    }
    None
}

/// The byte offset of a tokenizer location (1-based line, and column in characters).
fn byte_offset(sql: &str, at: Location) -> Option<usize> {
    let mut offset = 0;
    for (i, line) in sql.split('\n').enumerate() {
        if i as u64 + 1 == at.line {
            let column = usize::try_from(at.column).ok()?.checked_sub(1)?;
            return Some(offset + line.char_indices().nth(column).map_or(line.len(), |(b, _)| b));
        }
        offset += line.len() + 1;
    }
    None
}

/// The OID declared for a parameter; 0 (the statement's own type is used) for types the
/// gateway has no OID for.
fn type_oid(ty: &DataType) -> u32 {
    let name = ty.to_string().to_ascii_lowercase();
    let name = name.split('(').next().unwrap_or("").trim();
    match name {
        "smallint" | "int2" => pgtypes::OID_INT2,
        "int" | "integer" | "int4" => pgtypes::OID_INT4,
        "bigint" | "int8" => pgtypes::OID_INT8,
        "real" | "float4" => pgtypes::OID_FLOAT4,
        "double precision" | "float8" | "float" => pgtypes::OID_FLOAT8,
        "numeric" | "decimal" | "dec" => pgtypes::OID_NUMERIC,
        "text" => pgtypes::OID_TEXT,
        "varchar" | "character varying" => pgtypes::OID_VARCHAR,
        "char" | "character" | "bpchar" => pgtypes::OID_BPCHAR,
        "bool" | "boolean" => pgtypes::OID_BOOL,
        "bytea" => pgtypes::OID_BYTEA,
        "date" => pgtypes::OID_DATE,
        "timestamp" | "timestamp without time zone" => pgtypes::OID_TIMESTAMP,
        "timestamptz" | "timestamp with time zone" => pgtypes::OID_TIMESTAMPTZ,
        _ => 0,
    }
}

/// An EXECUTE argument as a text-format parameter (None: NULL); None if it is not a
/// constant. A cast is dropped: the statement's parameter type decides, as for Bind.
fn argument(expr: &Expr) -> Option<Option<String>> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Some(Some(n.clone())),
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) | Value::NationalStringLiteral(s) => {
                Some(Some(s.clone()))
            }
            Value::DollarQuotedString(d) => Some(Some(d.value.clone())),
            Value::Boolean(b) => Some(Some(b.to_string())),
            Value::Null => Some(None),
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => Some(Some(format!("-{n}"))),
                _ => None,
            },
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } => argument(expr),
        Expr::Nested(e) | Expr::Cast { expr: e, .. } => argument(e),
        Expr::TypedString(t) => match &t.value.value {
            Value::SingleQuotedString(s) => Some(Some(s.clone())),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_code(sql: &str) -> &'static str {
        match classify(sql) {
            Command::Refused(e) => e.code,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn prepare_keeps_the_statement_as_written() {
        assert_eq!(
            classify("PREPARE Ins (bigint, VARCHAR(10), double precision, uuid) AS\n  INSERT INTO kv VALUES ($1, $2, $3, 'AS ''x''')"),
            Command::Prepare {
                name: "ins".into(),
                statement: "INSERT INTO kv VALUES ($1, $2, $3, 'AS ''x''')".into(),
                declared: vec![20, 1043, 701, 0],
            }
        );
        assert_eq!(
            classify("/* é */ prepare \"Q\" as select v from kv where k = $1"),
            Command::Prepare { name: "Q".into(), statement: "select v from kv where k = $1".into(), declared: vec![] }
        );
        assert_eq!(
            classify("PREPARE ü AS\r\n\tSELECT 'ü'"),
            Command::Prepare { name: "ü".into(), statement: "SELECT 'ü'".into(), declared: vec![] }
        );
        assert_eq!(refused_code("PREPARE p AS CREATE TABLE t (a BIGINT PRIMARY KEY)"), "42601");
        assert_eq!(refused_code("PREPARE p SELECT 1"), "42601");
        assert_eq!(refused_code("PREPARE p AS SELECT 1; SELECT 2"), "42601");
        // Long and deep bodies are parsed on the large stack.
        let chain = format!("PREPARE p AS SELECT 1{}", "+1".repeat(400_000));
        assert!(matches!(classify(&chain), Command::Prepare { .. }));
        assert_eq!(refused_code(&format!("PREPARE p AS SELECT {}1{}", "(".repeat(1000), ")".repeat(1000))), "54001");
    }

    #[test]
    fn execute_takes_constant_arguments() {
        let args = |sql: &str| match classify(sql) {
            Command::Execute { name, args } => (name, args),
            other => panic!("{sql}: {other:?}"),
        };
        let text = |s: &str| Some(s.to_string());
        assert_eq!(
            args("EXECUTE Q(1, -2.5, 'it''s', NULL, true, '2024-01-02'::date, DATE '2024-01-03', (+7), E'a\\nb')"),
            (
                "q".to_string(),
                vec![
                    text("1"),
                    text("-2.5"),
                    text("it's"),
                    None,
                    text("true"),
                    text("2024-01-02"),
                    text("2024-01-03"),
                    text("7"),
                    text("a\nb")
                ]
            )
        );
        assert_eq!(args("execute \"Q\""), ("Q".to_string(), vec![]));
        assert_eq!(refused_code("EXECUTE q(1 + 1)"), "0A000");
        assert_eq!(refused_code("EXECUTE q(now())"), "0A000");
        assert_eq!(refused_code("EXECUTE q($1)"), "0A000");
    }

    #[test]
    fn deallocate_one_or_all() {
        assert_eq!(classify("DEALLOCATE ALL"), Command::Deallocate(None));
        assert_eq!(classify("deallocate prepare all"), Command::Deallocate(None));
        assert_eq!(classify("DEALLOCATE _pg3_0"), Command::Deallocate(Some("_pg3_0".into())));
        assert_eq!(classify("DEALLOCATE PREPARE \"ALL\""), Command::Deallocate(Some("ALL".into())));
        assert_eq!(refused_code("DEALLOCATE"), "42601");
        assert_eq!(refused_code("DEALLOCATE \"\""), "42601");
        assert_eq!(refused_code("EXECUTE \"\"(1)"), "42601");
    }
}
