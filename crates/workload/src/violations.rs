//! What the checks share: violations reported by invariant (a few shown per invariant so
//! that a broken data set gives a readable report), and statements whose failure names them.

use crate::conn::{error_text, Session};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Violations reported per invariant, so a broken data set gives a readable report.
const MAX_PER_INVARIANT: usize = 10;

/// A statement's rows, its failure naming it.
pub async fn rows(s: &mut Session, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
    s.query(sql, params).await.map_err(|e| anyhow!("{sql}: {}", error_text(&e)))
}

/// A statement without rows, its failure naming it.
pub async fn batch(s: &mut Session, sql: &str) -> Result<()> {
    s.client.batch_execute(sql).await.map_err(|e| anyhow!("{sql}: {}", error_text(&e)))
}

/// Violations by invariant, each list capped.
#[derive(Default)]
pub struct Found(BTreeMap<&'static str, (usize, Vec<String>)>);

impl Found {
    pub fn add(&mut self, invariant: &'static str, what: String) {
        let (count, shown) = self.0.entry(invariant).or_default();
        *count += 1;
        if shown.len() < MAX_PER_INVARIANT {
            shown.push(format!("invariant {invariant} violated: {what}"));
        }
    }

    pub fn into_lines(self) -> Vec<String> {
        let mut lines = Vec::new();
        for (invariant, (count, shown)) in self.0 {
            let more = count - shown.len();
            lines.extend(shown);
            if more > 0 {
                lines.push(format!("invariant {invariant} violated {more} more time(s)"));
            }
        }
        lines
    }
}
