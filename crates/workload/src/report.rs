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
    /// Server CPU time during the run (`--cpu-pid`).
    pub cpu: Option<Cpu>,
}

/// CPU seconds the server processes used during the run, per committed transaction.
#[derive(Debug, Serialize)]
pub struct Cpu {
    pub pids: Vec<u32>,
    /// Per process tree, in the order of `pids`.
    pub seconds: Vec<f64>,
    pub total_s: f64,
    pub ms_per_committed: f64,
    /// `ms_per_committed` divided by the number of process trees (per replica for Pistou).
    pub ms_per_committed_per_process: f64,
}

impl Cpu {
    pub fn new(pids: Vec<u32>, seconds: Vec<f64>, committed: u64) -> Cpu {
        let total_s: f64 = seconds.iter().sum();
        let ms_per_committed = if committed == 0 { 0.0 } else { total_s * 1000.0 / committed as f64 };
        let ms_per_committed_per_process = ms_per_committed / pids.len().max(1) as f64;
        Cpu { pids, seconds, total_s, ms_per_committed, ms_per_committed_per_process }
    }
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
            cpu: None,
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
        if let Some(c) = &self.cpu {
            let _ = writeln!(
                out,
                "server CPU: {:.2} s in {} process tree(s): {:.3} ms per committed transaction, {:.3} ms per process",
                c.total_s,
                c.pids.len(),
                c.ms_per_committed,
                c.ms_per_committed_per_process
            );
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
