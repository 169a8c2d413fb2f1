//! Shared by the tests that compare Pistou with the machine's PostgreSQL
//! (`differential_pg.rs`, `random_differential.rs`): a minimal simple-query client and the
//! normalization that makes the two systems' answers comparable.
//!
//! PostgreSQL runs on every machine of the project, CI included: an unreachable server fails
//! the test instead of skipping it.

// Each test binary includes this module and uses a different part of it.
#![allow(dead_code)]

use pistou_sql::types::output_text;
use pistou_sql::{Database, Output, SqlType, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A minimal PostgreSQL client: startup with trust authentication and the simple query
/// protocol, which is all the comparison needs (no dependency on a driver crate).
pub mod pg {
    use super::*;

    pub struct Client {
        stream: TcpStream,
    }

    /// One statement's answer: columns (name, type OID), rows of text values, the command
    /// tag; or the error's SQLSTATE and message.
    pub type Answer = Result<(Vec<u32>, Vec<Vec<Option<String>>>, String), (String, String)>;

    fn cstring(body: &[u8], at: &mut usize) -> String {
        let rest = body.get(*at..).unwrap_or_default();
        let len = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        *at += len + 1;
        String::from_utf8_lossy(&rest[..len]).into_owned()
    }

    /// A big-endian signed integer of `width` (2 or 4) bytes.
    fn int(body: &[u8], at: &mut usize, width: usize) -> i64 {
        let bytes = body.get(*at..*at + width).unwrap_or_else(|| panic!("truncated PostgreSQL message"));
        *at += width;
        match *bytes {
            [a, b] => i64::from(i16::from_be_bytes([a, b])),
            [a, b, c, d] => i64::from(i32::from_be_bytes([a, b, c, d])),
            _ => panic!("integer width {width}"),
        }
    }

    impl Client {
        pub fn connect(user: &str, database: &str) -> Client {
            let address = "127.0.0.1:5432";
            let stream = TcpStream::connect_timeout(&address.parse().expect("address"), Duration::from_secs(5)).unwrap_or_else(|e| {
                panic!("PostgreSQL is not reachable at {address} ({e}); this test compares Pistou with the machine's PostgreSQL 15, which every machine runs")
            });
            stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
            // One message per statement each way: waiting for delayed ACKs would cost ~40 ms each.
            stream.set_nodelay(true).expect("nodelay");
            let mut client = Client { stream };
            let mut body = Vec::new();
            body.extend_from_slice(&196_608u32.to_be_bytes());
            for (k, v) in [("user", user), ("database", database), ("client_encoding", "UTF8")] {
                body.extend_from_slice(k.as_bytes());
                body.push(0);
                body.extend_from_slice(v.as_bytes());
                body.push(0);
            }
            body.push(0);
            let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
            msg.extend_from_slice(&body);
            client.stream.write_all(&msg).expect("startup");
            loop {
                let (tag, body) = client.message();
                match tag {
                    b'R' => {
                        let code = int(&body, &mut 0, 4);
                        assert_eq!(code, 0, "PostgreSQL asks user {user} for authentication (method {code}); the test expects trust authentication on 127.0.0.1");
                    }
                    b'E' => panic!(
                        "PostgreSQL refused the connection as user {user} to database {database}: {}",
                        error_fields(&body).1
                    ),
                    b'Z' => return client,
                    _ => {}
                }
            }
        }

        fn message(&mut self) -> (u8, Vec<u8>) {
            let mut head = [0u8; 5];
            self.stream.read_exact(&mut head).expect("PostgreSQL closed the connection");
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            self.stream.read_exact(&mut body).expect("PostgreSQL message body");
            (head[0], body)
        }

        pub fn query(&mut self, sql: &str) -> Answer {
            let mut msg = vec![b'Q'];
            msg.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
            msg.extend_from_slice(sql.as_bytes());
            msg.push(0);
            self.stream.write_all(&msg).expect("query");
            let (mut types, mut rows, mut tag, mut error) = (Vec::new(), Vec::new(), String::new(), None);
            loop {
                let (kind, body) = self.message();
                let at = &mut 0;
                match kind {
                    b'T' => {
                        let n = int(&body, at, 2);
                        for _ in 0..n {
                            cstring(&body, at);
                            *at += 6;
                            types.push(int(&body, at, 4) as u32);
                            *at += 8;
                        }
                    }
                    b'D' => {
                        let n = int(&body, at, 2);
                        let mut row = Vec::new();
                        for _ in 0..n {
                            let len = int(&body, at, 4);
                            if len < 0 {
                                row.push(None);
                            } else {
                                let bytes = body.get(*at..*at + len as usize).unwrap_or_default();
                                row.push(Some(String::from_utf8_lossy(bytes).into_owned()));
                                *at += len as usize;
                            }
                        }
                        rows.push(row);
                    }
                    b'C' => tag = cstring(&body, at),
                    b'E' => error = Some(error_fields(&body)),
                    b'Z' => break,
                    _ => {}
                }
            }
            match error {
                Some(e) => Err(e),
                None => Ok((types, rows, tag)),
            }
        }
    }

    /// SQLSTATE and message of an ErrorResponse.
    fn error_fields(body: &[u8]) -> (String, String) {
        let (mut code, mut message, mut at) = (String::new(), String::new(), 0);
        while let Some(&field) = body.get(at) {
            at += 1;
            if field == 0 {
                break;
            }
            let value = cstring(body, &mut at);
            match field {
                b'C' => code = value,
                b'M' => message = value,
                _ => {}
            }
        }
        (code, message)
    }

    /// PostgreSQL's name of a type OID (as `SqlType::pg_name` spells it).
    pub fn type_name(oid: u32) -> String {
        match oid {
            16 => "boolean",
            17 => "bytea",
            20 => "bigint",
            21 => "smallint",
            23 => "integer",
            25 => "text",
            700 => "real",
            701 => "double precision",
            1042 => "character",
            1043 => "character varying",
            1082 => "date",
            1114 => "timestamp without time zone",
            1184 => "timestamp with time zone",
            1186 => "interval",
            1700 => "numeric",
            2950 => "uuid",
            other => return format!("oid {other}"),
        }
        .to_string()
    }
}

/// Connects as `$USER` (or `postgres`) to `database` and sets what the comparison relies on:
/// ISO dates, floats printed exactly (shortest round-trip form), no notices; and no JIT: over
/// tables never analyzed PostgreSQL estimates thousands of rows each, so a three-way join of
/// a few rows gets JIT-compiled, which costs 0.1–1 s a statement.
pub fn connect(database: &str) -> pg::Client {
    let mut client = pg::Client::connect(&user(), database);
    let settings =
        ["SET DateStyle = ISO", "SET extra_float_digits = 1", "SET client_min_messages = warning", "SET jit = off"];
    for setting in settings {
        client.query(setting).unwrap_or_else(|e| panic!("{setting}: {e:?}"));
    }
    client
}

/// The PostgreSQL user the tests connect as.
pub fn user() -> String {
    std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "postgres".to_string())
}

/// What a statement gave, normalized for comparison.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Column types and rows (sorted unless the caller asked to keep the order: statements
    /// without ORDER BY may return rows in any order).
    Rows(Vec<String>, Vec<Vec<String>>),
    /// Rows written.
    Count(u64),
    /// SQLSTATE.
    Error(String),
}

/// Whether the rows of a result are compared as a sorted multiset or in the order returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Order {
    Sorted,
    Kept,
}

/// A value's text, normalized: NULL spelled out, numbers compared by value (numeric to 13
/// significant digits, whatever the scale; floats to 15, whatever the text form, -0 as 0),
/// CHAR without trailing blanks.
pub fn normalize(text: Option<&str>, ty: &str) -> String {
    let Some(text) = text else {
        return "NULL".to_string();
    };
    match ty {
        // PostgreSQL chooses the scale of a quotient differently: 13 significant digits.
        "numeric" => text.parse::<f64>().map_or_else(|_| text.to_string(), |f| format!("{f:.12e}")),
        // To 15 significant digits: a sum or avg of doubles depends on the order it adds them
        // in (-279.40000000000003 or -279.4), which is up to the plan; a REAL printed as
        // double (0.10000000149011612 for 0.1) still differs. -0 and 0 are one value: which
        // one a DISTINCT / UNION / GROUP BY shows is the first it meets (as with 1 and 1.0).
        "real" | "double precision" => text
            .parse::<f64>()
            .map_or_else(|_| text.to_string(), |f| format!("{:.14e}", if f == 0.0 { 0.0 } else { f })),
        "character" => text.trim_end_matches(' ').to_string(),
        _ => text.to_string(),
    }
}

pub fn rows_outcome(types: Vec<String>, rows: impl Iterator<Item = Vec<Option<String>>>, order: Order) -> Outcome {
    let mut rows: Vec<Vec<String>> =
        rows.map(|r| r.iter().zip(&types).map(|(v, t)| normalize(v.as_deref(), t)).collect()).collect();
    if order == Order::Sorted {
        rows.sort();
    }
    Outcome::Rows(types, rows)
}

pub fn on_postgres(client: &mut pg::Client, sql: &str) -> Outcome {
    on_postgres_in(client, sql, Order::Sorted)
}

pub fn on_postgres_in(client: &mut pg::Client, sql: &str, order: Order) -> Outcome {
    match client.query(sql) {
        Err((code, _)) => Outcome::Error(code),
        Ok((types, rows, tag)) if types.is_empty() && rows.is_empty() => {
            Outcome::Count(tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0))
        }
        Ok((types, rows, _)) => rows_outcome(types.into_iter().map(pg::type_name).collect(), rows.into_iter(), order),
    }
}

pub fn on_pistou(db: &mut Database, sql: &str) -> Outcome {
    on_pistou_in(db, sql, Order::Sorted)
}

pub fn on_pistou_in(db: &mut Database, sql: &str, order: Order) -> Outcome {
    let prepared = match db.prepare(sql) {
        Ok(p) => p,
        Err(e) => return Outcome::Error(e.sqlstate().to_string()),
    };
    // Unknown static types are described to clients as text (see the gateway).
    let types: Vec<Option<SqlType>> = prepared.column_types().map(<[_]>::to_vec).unwrap_or_default();
    let names: Vec<String> = types.iter().map(|t| t.map_or("text", SqlType::pg_name).to_string()).collect();
    let text = |v: &Value, ty: Option<SqlType>| match v {
        Value::Null => None,
        Value::Bool(b) => Some(if *b { "t" } else { "f" }.to_string()),
        other => Some(output_text(other, ty)),
    };
    match db.execute_prepared(&prepared, &[]).map(|e| e.output) {
        Err(e) => Outcome::Error(e.sqlstate().to_string()),
        Ok(Output::Rows { rows, .. }) => {
            let rows = rows.into_iter().map(|r| r.iter().zip(&types).map(|(v, t)| text(v, *t)).collect());
            rows_outcome(names, rows, order)
        }
        Ok(Output::Affected { count, .. }) => Outcome::Count(count),
        Ok(Output::Catalog(_) | Output::Transaction(_)) => Outcome::Count(0),
    }
}
