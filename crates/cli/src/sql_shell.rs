//! `pistou sql`: an interactive SQL shell for any PostgreSQL-protocol server (a Pistou
//! gateway, or PostgreSQL itself). The demo opens the same shell on its own gateway.
//!
//! Statements end with `;` and may span lines; `\q` quits, `\?` lists the commands. Results
//! print as aligned tables, errors with their SQLSTATE. On a terminal the shell keeps a
//! history (`~/.pistou_sql_history`); on a pipe it reads statements from stdin, so scripts work.

use anyhow::{Context, Result};
use std::io::{BufRead, IsTerminal};
use std::sync::mpsc as sync_mpsc;
use tokio::sync::mpsc;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// Longest statement the shell accumulates before giving up on it (a missing `;`).
const MAX_STATEMENT_BYTES: usize = 1 << 20;

const HELP: &str = "\
Statements end with ';' and may span several lines.
  \\q          quit (so do Ctrl-D and Ctrl-C)
  \\dt         list tables
  \\?          this help";

/// Connects to `url` (a `postgres://` URL or a key=value connection string) and runs the shell.
pub async fn run(url: &str) -> Result<()> {
    let (client, connection) =
        tokio_postgres::connect(url, NoTls).await.with_context(|| format!("cannot connect to {url}"))?;
    let connection = tokio::spawn(connection);
    let result = shell(&client).await;
    drop(client);
    // The connection task ends once the client is gone; its error (if any) is not news.
    let _ = connection.await;
    result
}

/// What the input thread hands to the executor.
enum Input {
    Statement(String),
    Meta(String),
}

/// Runs the read-execute-print loop on an open connection until `\q` or end of input.
pub async fn shell(client: &Client) -> Result<()> {
    let (tx, mut inputs) = mpsc::channel::<Input>(1);
    let (done_tx, done_rx) = sync_mpsc::channel::<()>();
    // Line editing blocks; it runs on a plain thread (tokio's stdin would also keep the
    // runtime from shutting down while a read is pending) and waits for each input to be
    // executed before prompting again, so output and prompts never interleave.
    std::thread::spawn(move || read_inputs(tx, done_rx));
    while let Some(input) = inputs.recv().await {
        match input {
            Input::Statement(sql) => out!("{}", execute(client, &sql).await),
            Input::Meta(cmd) => match cmd.as_str() {
                "\\q" => break,
                "\\?" | "help" => out!("{HELP}"),
                "\\dt" => {
                    // psql's own `\dt` query, trimmed: Pistou's gateway recognizes it.
                    let sql = "SELECT n.nspname AS \"Schema\", c.relname AS \"Name\" FROM pg_catalog.pg_class c \
                               LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                               WHERE c.relkind IN ('r','p','') AND n.nspname <> 'pg_catalog' \
                               AND n.nspname <> 'information_schema' AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2";
                    out!("{}", execute(client, sql).await);
                }
                other => out!("unknown command {other}; \\? lists the commands"),
            },
        }
        if done_tx.send(()).is_err() {
            break;
        }
    }
    Ok(())
}

/// The input side: an editor with history on a terminal, plain lines otherwise.
fn read_inputs(tx: mpsc::Sender<Input>, done: sync_mpsc::Receiver<()>) {
    let mut splitter = Splitter::default();
    let handle = |line: &str, splitter: &mut Splitter| -> bool {
        let trimmed = line.trim();
        if splitter.is_empty() && (trimmed.starts_with('\\') || trimmed == "help") {
            let cmd = trimmed.split_whitespace().next().unwrap_or(trimmed).to_string();
            return tx.blocking_send(Input::Meta(cmd.clone())).is_ok() && cmd != "\\q" && done.recv().is_ok();
        }
        for input in splitter.push(line) {
            let input = match input {
                Ok(sql) => Input::Statement(sql),
                Err(too_long) => {
                    eout!("{too_long}");
                    continue;
                }
            };
            if tx.blocking_send(input).is_err() || done.recv().is_err() {
                return false;
            }
        }
        true
    };
    if std::io::stdin().is_terminal() {
        let Ok(mut editor) = rustyline::DefaultEditor::new() else {
            eout!("cannot open the terminal for line editing");
            return;
        };
        let history = std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pistou_sql_history"));
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        loop {
            let prompt = if splitter.is_empty() { "pistou=> " } else { "pistou-> " };
            let Ok(line) = editor.readline(prompt) else { break }; // Ctrl-C, Ctrl-D or a closed terminal
            if !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
            }
            if !handle(&line, &mut splitter) {
                break;
            }
        }
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
    } else {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if !handle(&line, &mut splitter) {
                break;
            }
        }
    }
    if !splitter.is_empty() {
        eout!("the last statement has no terminating ';' and was not run");
    }
}

/// Runs one statement and renders what came back: tables for rows, a command tag otherwise,
/// `ERROR: … (SQLSTATE …)` for failures.
pub async fn execute(client: &Client, sql: &str) -> String {
    match client.simple_query(sql).await {
        Ok(messages) => render(sql, &messages),
        Err(e) => match e.as_db_error() {
            Some(db) => format!("ERROR:  {} (SQLSTATE {})", db.message(), db.code().code()),
            None => format!("ERROR:  {e}"),
        },
    }
}

fn render(sql: &str, messages: &[SimpleQueryMessage]) -> String {
    let mut columns: Option<Vec<String>> = None;
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let mut out = Vec::new();
    for m in messages {
        match m {
            SimpleQueryMessage::RowDescription(cols) => {
                columns = Some(cols.iter().map(|c| c.name().to_string()).collect())
            }
            SimpleQueryMessage::Row(row) => {
                if columns.is_none() {
                    columns = Some(row.columns().iter().map(|c| c.name().to_string()).collect());
                }
                rows.push((0..row.len()).map(|i| row.try_get(i).ok().flatten().map(str::to_string)).collect());
            }
            SimpleQueryMessage::CommandComplete(count) => {
                out.push(match columns.take() {
                    Some(cols) => render_table(&cols, &std::mem::take(&mut rows)),
                    None => command_tag(sql, *count),
                });
            }
            _ => {}
        }
    }
    out.join("\n")
}

/// psql's aligned format: a header, a rule, the rows, and the row count.
pub fn render_table(columns: &[String], rows: &[Vec<Option<String>>]) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for row in rows {
        for (w, v) in widths.iter_mut().zip(row) {
            *w = (*w).max(v.as_deref().map_or(0, |s| s.chars().count()));
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!(" {c:<w$} ")).collect();
        padded.join("|").trim_end().to_string()
    };
    let mut out = vec![line(columns.iter().map(String::as_str).collect())];
    out.push(widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+"));
    for row in rows {
        out.push(line(row.iter().map(|v| v.as_deref().unwrap_or("")).collect()));
    }
    out.push(format!("({} row{})", rows.len(), if rows.len() == 1 { "" } else { "s" }));
    out.join("\n")
}

/// A statement without rows: its command words and, for writes, the row count.
fn command_tag(sql: &str, count: u64) -> String {
    const OBJECTS: [&str; 6] = ["TABLE", "INDEX", "VIEW", "SCHEMA", "SEQUENCE", "DATABASE"];
    let words: Vec<String> = sql.split_whitespace().take(8).map(str::to_ascii_uppercase).collect();
    match words.first().map(String::as_str) {
        Some("INSERT") => format!("INSERT 0 {count}"),
        Some(w @ ("UPDATE" | "DELETE")) => format!("{w} {count}"),
        // `CREATE UNIQUE INDEX`, `CREATE TEMP TABLE`: the verb and the kind of object.
        Some(w @ ("CREATE" | "DROP" | "ALTER")) => match words.iter().find(|o| OBJECTS.contains(&o.as_str())) {
            Some(object) => format!("{w} {object}"),
            None => w.to_string(),
        },
        Some(w) => w.to_string(),
        None => String::new(),
    }
}

/// Splits input into statements at `;` outside quotes and comments.
#[derive(Default)]
pub struct Splitter {
    buf: String,
    /// Lexical state carried across lines.
    state: Lex,
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Lex {
    #[default]
    Code,
    Single,
    Double,
    Block,
}

impl Splitter {
    /// True when no statement is in progress.
    pub fn is_empty(&self) -> bool {
        self.buf.trim().is_empty()
    }

    /// Adds one line; returns the statements it completed (an error for one that grew
    /// beyond the size cap, which is dropped).
    pub fn push(&mut self, line: &str) -> Vec<Result<String, String>> {
        let mut done = Vec::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (self.state, c) {
                (Lex::Code, '\'') => self.state = Lex::Single,
                (Lex::Code, '"') => self.state = Lex::Double,
                (Lex::Code, '-') if chars.peek() == Some(&'-') => break, // comment to end of line
                (Lex::Code, '/') if chars.peek() == Some(&'*') => {
                    self.state = Lex::Block;
                    self.buf.push(c);
                    if let Some(star) = chars.next() {
                        self.buf.push(star);
                    }
                    continue;
                }
                (Lex::Code, ';') => {
                    let sql = std::mem::take(&mut self.buf).trim().to_string();
                    if !sql.is_empty() {
                        done.push(Ok(sql));
                    }
                    continue;
                }
                (Lex::Single, '\'') | (Lex::Double, '"') => self.state = Lex::Code,
                (Lex::Block, '*') if chars.peek() == Some(&'/') => {
                    self.state = Lex::Code;
                    self.buf.push(c);
                    if let Some(slash) = chars.next() {
                        self.buf.push(slash);
                    }
                    continue;
                }
                _ => {}
            }
            self.buf.push(c);
        }
        self.buf.push('\n');
        if self.buf.len() > MAX_STATEMENT_BYTES {
            self.buf.clear();
            self.state = Lex::Code;
            done.push(Err(format!("statement longer than {MAX_STATEMENT_BYTES} bytes without a ';'; discarded")));
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(lines: &[&str]) -> (Vec<String>, bool) {
        let mut s = Splitter::default();
        let out = lines.iter().flat_map(|l| s.push(l)).map(|r| r.expect("fits")).collect();
        (out, s.is_empty())
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        assert_eq!(split(&["SELECT 1; SELECT 2;"]).0, vec!["SELECT 1", "SELECT 2"]);
        assert_eq!(split(&["SELECT 'a;b', \"c;\" -- x;y", "FROM t;"]).0, vec!["SELECT 'a;b', \"c;\" \nFROM t"]);
        assert_eq!(split(&["SELECT /* ; */ 1;"]).0, vec!["SELECT /* ; */ 1"]);
        assert_eq!(split(&["SELECT 'it''s';"]).0, vec!["SELECT 'it''s'"]);
        let (done, empty) = split(&["SELECT", "  1"]);
        assert!(done.is_empty() && !empty, "no ';' yet: still in progress");
        assert_eq!(split(&[";;  ;"]).0, Vec::<String>::new());
    }

    #[test]
    fn an_endless_statement_is_dropped_with_an_error() {
        let mut s = Splitter::default();
        let line = "x".repeat(1000);
        let mut pushed = 0;
        let results = loop {
            pushed += line.len() + 1;
            let results = s.push(&line);
            if !results.is_empty() || pushed > 2 * MAX_STATEMENT_BYTES {
                break results;
            }
        };
        assert!(pushed > MAX_STATEMENT_BYTES, "not dropped before the cap");
        assert!(matches!(results.as_slice(), [Err(_)]), "{results:?}");
        assert!(s.is_empty(), "the oversized statement is dropped");
        assert_eq!(s.push("SELECT 1;"), vec![Ok("SELECT 1".to_string())]);
    }

    #[test]
    fn tables_align_like_psql() {
        let cols = vec!["id".to_string(), "owner".to_string()];
        let rows = vec![vec![Some("1".into()), Some("ann".into())], vec![Some("22".into()), None]];
        assert_eq!(render_table(&cols, &rows), " id | owner\n----+-------\n 1  | ann\n 22 |\n(2 rows)");
    }

    #[test]
    fn command_tags_name_the_command_and_count() {
        assert_eq!(command_tag("insert into t values (1)", 1), "INSERT 0 1");
        assert_eq!(command_tag("UPDATE t SET a = 1", 3), "UPDATE 3");
        assert_eq!(command_tag("create table t (a int primary key)", 0), "CREATE TABLE");
        assert_eq!(command_tag("begin", 0), "BEGIN");
        assert_eq!(command_tag("CREATE UNIQUE INDEX i ON t (a)", 0), "CREATE INDEX");
        assert_eq!(command_tag("create temp table x (a int)", 0), "CREATE TABLE");
    }
}
