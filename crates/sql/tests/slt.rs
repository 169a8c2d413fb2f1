//! Runs every `tests/slt/*.slt` file against a fresh standalone `Database`.

use pistou_sql::types::output_text;
use pistou_sql::{Database, Output, SqlError, SqlType, Value};
use sqllogictest::{DBOutput, DefaultColumnType};

struct Slt(Database);

fn render(v: &Value, ty: Option<SqlType>) -> String {
    match v {
        Value::Text(s) if s.is_empty() => "(empty)".to_string(),
        other => output_text(other, ty),
    }
}

fn column_type(v: Option<&Value>) -> DefaultColumnType {
    match v {
        Some(Value::Int(_)) => DefaultColumnType::Integer,
        Some(Value::Float(_) | Value::Numeric(_)) => DefaultColumnType::FloatingPoint,
        Some(Value::Text(_)) => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

fn rows_output(columns: &[String], rows: &[Vec<Value>], types: &[Option<SqlType>]) -> DBOutput<DefaultColumnType> {
    DBOutput::Rows {
        types: (0..columns.len()).map(|i| column_type(rows.first().and_then(|r| r.get(i)))).collect(),
        rows: rows
            .iter()
            .map(|r| r.iter().enumerate().map(|(i, v)| render(v, types.get(i).copied().flatten())).collect())
            .collect(),
    }
}

impl sqllogictest::DB for Slt {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        // Static column types, for printing REAL values as PostgreSQL does.
        let types = self.0.prepare(sql).ok().and_then(|p| p.column_types().map(<[_]>::to_vec)).unwrap_or_default();
        Ok(match self.0.execute(sql)? {
            Output::Rows { columns, rows } => rows_output(&columns, &rows, &types),
            Output::Affected { returning: Some((columns, rows)), .. } => rows_output(&columns, &rows, &[]),
            Output::Affected { count, .. } => DBOutput::StatementComplete(count),
            Output::Catalog(_) | Output::Transaction(_) => DBOutput::StatementComplete(0),
        })
    }

    fn engine_name(&self) -> &str {
        "pistou"
    }

    fn error_sql_state(err: &SqlError) -> Option<String> {
        Some(err.sqlstate().to_string())
    }
}

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "slt")).collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", dir.display());
    let mut failures = 0;
    for file in &files {
        let mut runner = sqllogictest::Runner::new(|| async { Ok(Slt(Database::new())) });
        runner.with_column_validator(|_, _| true);
        match runner.run_file(file) {
            Ok(()) => println!("ok   {}", file.display()),
            Err(e) => {
                failures += 1;
                println!("FAIL {}\n{e}", file.display());
            }
        }
    }
    assert_eq!(failures, 0, "{failures} sqllogictest file(s) failed");
    println!("{} sqllogictest files passed", files.len());
}
