//! Bulk loading with COPY FROM STDIN (text format), in chunks: each chunk is one COPY
//! statement and so one transaction, small enough for Pistou's per-transaction limits.

use crate::conn::{error_text, Session};
use anyhow::{anyhow, Result};
use bytes::Bytes;
use futures::SinkExt;
use std::fmt::{Display, Write as _};

/// Rows per COPY statement.
const CHUNK_ROWS: usize = 1000;

/// COPY's text-format NULL.
pub struct Null;

impl Display for Null {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\\N")
    }
}

/// Collects rows of one table and sends them a chunk at a time.
pub struct Copier<'a> {
    session: &'a Session,
    statement: String,
    buf: String,
    rows_in_buf: usize,
    chunk_rows: usize,
    total: u64,
}

impl<'a> Copier<'a> {
    pub fn new(session: &'a Session, table: &str, columns: &str) -> Copier<'a> {
        Copier {
            session,
            statement: format!("COPY {table} ({columns}) FROM STDIN"),
            buf: String::new(),
            rows_in_buf: 0,
            chunk_rows: CHUNK_ROWS,
            total: 0,
        }
    }

    /// Sends `rows` rows per COPY statement instead of 1,000.
    pub fn chunk_rows(mut self, rows: usize) -> Copier<'a> {
        self.chunk_rows = rows.max(1);
        self
    }

    /// Adds one row. Values are numbers or generated text without tabs, newlines or
    /// backslashes, so they need no escaping.
    pub async fn row(&mut self, fields: &[&dyn Display]) -> Result<()> {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.buf.push('\t');
            }
            let _ = write!(self.buf, "{f}");
        }
        self.buf.push('\n');
        self.rows_in_buf += 1;
        if self.rows_in_buf >= self.chunk_rows {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<()> {
        if self.rows_in_buf == 0 {
            return Ok(());
        }
        let data = Bytes::from(std::mem::take(&mut self.buf));
        let fail = |e: tokio_postgres::Error| anyhow!("{} failed: {}", self.statement, error_text(&e));
        let sink = self.session.client.copy_in::<_, Bytes>(self.statement.as_str()).await.map_err(fail)?;
        futures::pin_mut!(sink);
        sink.send(data).await.map_err(fail)?;
        sink.finish().await.map_err(fail)?;
        self.total += self.rows_in_buf as u64;
        self.rows_in_buf = 0;
        Ok(())
    }

    /// Sends the last chunk; returns the number of rows loaded.
    pub async fn finish(mut self) -> Result<u64> {
        self.flush().await?;
        Ok(self.total)
    }
}
