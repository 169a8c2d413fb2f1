//! The end of a run: a table per transaction type, the JSON result file and the plot.

use crate::driver::Measured;
use crate::stats::{Second, TypeSummary};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// The JSON result file's content.
#[derive(Debug, Serialize)]
pub struct Report {
    pub workload: String,
    pub endpoint: String,
    pub clients: usize,
    pub duration_s: f64,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub headline: Option<String>,
    pub transactions: Vec<TypeSummary>,
    pub total: TypeSummary,
    pub first_errors: Vec<String>,
    pub series: Vec<Second>,
}

impl Report {
    pub fn new(workload: &str, endpoint: String, clients: usize, duration_s: f64, m: &Measured) -> Report {
        let (transactions, total) = m.recorder.summaries(m.elapsed_s);
        Report {
            workload: workload.to_string(),
            endpoint,
            clients,
            duration_s,
            elapsed_s: m.elapsed_s,
            interrupted: m.interrupted,
            headline: m.headline.clone(),
            transactions,
            total,
            first_errors: m.recorder.first_errors.clone(),
            series: m.recorder.series().to_vec(),
        }
    }

    /// The human summary: one row per transaction type, then the total.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} against {}: {} clients, {:.1} s{}",
            self.workload,
            self.endpoint,
            self.clients,
            self.elapsed_s,
            if self.interrupted { " (interrupted)" } else { "" }
        );
        let _ = writeln!(
            out,
            "{:<18} {:>9} {:>9} {:>8} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "transaction", "committed", "rollback", "retried", "errors", "tx/s", "p50 ms", "p95 ms", "p99 ms", "max ms"
        );
        // Types the mix never ran (YCSB's other operations) are left out; the JSON has them all.
        let ran = |t: &&TypeSummary| t.committed + t.rolled_back + t.retries + t.errors > 0;
        for t in self.transactions.iter().filter(ran).chain(std::iter::once(&self.total)) {
            let _ = writeln!(
                out,
                "{:<18} {:>9} {:>9} {:>8} {:>7} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                t.name,
                t.committed,
                t.rolled_back,
                t.retries,
                t.errors,
                t.tx_per_s,
                t.p50_ms,
                t.p95_ms,
                t.p99_ms,
                t.max_ms
            );
        }
        if let Some(h) = &self.headline {
            let _ = writeln!(out, "{h}");
        }
        for e in &self.first_errors {
            let _ = writeln!(out, "error: {e}");
        }
        out
    }

    pub fn write_json(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
    }
}
