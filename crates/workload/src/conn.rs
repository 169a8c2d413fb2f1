//! Connections to the endpoint: connecting with a clear error, serializable isolation,
//! prepared statements cached per connection, and reading integer columns of any width.

use anyhow::{anyhow, Result};
use std::collections::HashMap;
use std::str::FromStr;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row, Statement};

/// One connection with the statements it has prepared (each text is parsed once per
/// connection, not once per execution).
pub struct Session {
    pub client: Client,
    statements: HashMap<String, Statement>,
}

/// Where `url` points, for error messages (without the password).
pub fn describe_endpoint(url: &str) -> String {
    let Ok(config) = tokio_postgres::Config::from_str(url) else { return "the endpoint".to_string() };
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// Connects and makes every transaction of the connection SERIALIZABLE (Pistou accepts the
/// setting; its transactions are always serializable).
pub async fn connect(url: &str) -> Result<Session> {
    let config = tokio_postgres::Config::from_str(url).map_err(|e| anyhow!("invalid --url: {e}"))?;
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| anyhow!("cannot connect to {}: {}", describe_endpoint(url), error_text(&e)))?;
    tokio::spawn(async move {
        // The connection's error also surfaces at the client's next request; nothing to do here.
        let _ = connection.await;
    });
    client
        .batch_execute("SET default_transaction_isolation = 'serializable'")
        .await
        .map_err(|e| anyhow!("cannot set serializable isolation: {}", error_text(&e)))?;
    Ok(Session { client, statements: HashMap::new() })
}

impl Session {
    /// The prepared statement for `sql`, prepared on first use.
    pub async fn statement(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let s = self.statement(sql).await?;
        self.client.query(&s, params).await
    }

    pub async fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let s = self.statement(sql).await?;
        self.client.query_opt(&s, params).await
    }

    pub async fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, tokio_postgres::Error> {
        let s = self.statement(sql).await?;
        self.client.execute(&s, params).await
    }

    /// Ends a failed transaction; its own failure (e.g. a closed connection) shows at the
    /// next statement.
    pub async fn rollback_quietly(&mut self) {
        let _ = self.client.batch_execute("ROLLBACK").await;
    }
}

/// Serialization failures and deadlocks: the transaction is retried, counted apart from errors.
pub fn is_retryable(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

/// The SQLSTATE of `e`, if the server sent one.
pub fn sqlstate(e: &tokio_postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

/// "message (SQLSTATE xxxxx)" for server errors, the client's text otherwise (with its cause,
/// which holds e.g. "Connection refused").
pub fn error_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        // The hint names the setting to raise for a resource error (class 53).
        let hint = db.hint().map(|h| format!("; hint: {h}")).unwrap_or_default();
        return format!("{} (SQLSTATE {}){hint}", db.message(), db.code().code());
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// An integer column as i64, whatever its width (PostgreSQL and Pistou may differ on the
/// type of an expression such as `count(*)` or `sum(...)::bigint`).
pub fn int(row: &Row, idx: usize) -> Result<i64> {
    int_opt(row, idx)?.ok_or_else(|| anyhow!("column {idx} is NULL, expected an integer"))
}

/// Like [`int`], NULL allowed.
pub fn int_opt(row: &Row, idx: usize) -> Result<Option<i64>> {
    let ty = row.columns().get(idx).map(|c| c.type_().clone()).ok_or_else(|| anyhow!("no column {idx}"))?;
    Ok(match ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(idx)?,
        Type::INT4 => row.try_get::<_, Option<i32>>(idx)?.map(i64::from),
        Type::INT2 => row.try_get::<_, Option<i16>>(idx)?.map(i64::from),
        other => return Err(anyhow!("column {idx} has type {other}, expected an integer")),
    })
}

/// Whether a failure (from a transaction, wrapped in anyhow) is worth retrying.
pub fn is_retryable_any(e: &anyhow::Error) -> bool {
    e.downcast_ref::<tokio_postgres::Error>().is_some_and(is_retryable)
}

/// A transaction's failure as one line.
pub fn failure_text(e: &anyhow::Error) -> String {
    match e.downcast_ref::<tokio_postgres::Error>() {
        Some(pg) => error_text(pg),
        None => format!("{e:#}"),
    }
}
