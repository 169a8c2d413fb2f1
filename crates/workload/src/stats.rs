//! What a run measures: per transaction type counts and HDR latency histograms, and a
//! per-second time series for the progress line, the JSON file and the plot.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::Duration;

/// Latencies are recorded in microseconds, up to 10 minutes, 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("constant histogram bounds are valid")
}

/// How one transaction ended, from the client's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Committed, after `retries` serialization failures (40001/40P01).
    Committed { retries: u64 },
    /// Rolled back on purpose by the workload (TPC-C's 1% invalid New-Order item).
    RolledBack { retries: u64 },
    /// Failed with an error that is not a serialization failure, after `retries` retries.
    Failed { retries: u64 },
    /// Still being retried when the run ended: only its retries count.
    Abandoned { retries: u64 },
}

struct Counts {
    committed: u64,
    rolled_back: u64,
    retries: u64,
    errors: u64,
    latency: Histogram<u64>,
}

impl Counts {
    fn new() -> Counts {
        Counts { committed: 0, rolled_back: 0, retries: 0, errors: 0, latency: histogram() }
    }

    fn add(&mut self, event: Event, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX).max(1);
        match event {
            Event::Committed { retries } => {
                self.committed += 1;
                self.retries += retries;
                self.latency.saturating_record(micros);
            }
            Event::RolledBack { retries } => {
                self.rolled_back += 1;
                self.retries += retries;
                self.latency.saturating_record(micros);
            }
            Event::Failed { retries } => {
                self.errors += 1;
                self.retries += retries;
            }
            Event::Abandoned { retries } => self.retries += retries,
        }
    }

    fn finished(&self) -> u64 {
        self.committed + self.rolled_back
    }

    fn ms(&self, quantile: f64) -> f64 {
        if self.latency.is_empty() {
            return 0.0;
        }
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// One second of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Second {
    /// Seconds since the start, at the end of this interval.
    pub elapsed_s: f64,
    /// Transactions finished (committed or rolled back on purpose) per second.
    pub tx_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub retries: u64,
    pub errors: u64,
}

/// The figures of one transaction type (or of all of them).
#[derive(Clone, Debug, Serialize)]
pub struct TypeSummary {
    pub name: String,
    pub committed: u64,
    pub rolled_back: u64,
    pub retries: u64,
    pub errors: u64,
    pub tx_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The HDR histogram as (percentile, latency ms) points, for plotting the distribution.
    pub percentiles: Vec<(f64, f64)>,
}

/// Everything measured, collected while the run goes.
pub struct Recorder {
    names: &'static [&'static str],
    kinds: Vec<Counts>,
    interval: Counts,
    interval_start: f64,
    series: Vec<Second>,
    /// The first distinct error messages (a few, to report what went wrong).
    pub first_errors: Vec<String>,
}

const KEPT_ERRORS: usize = 5;

impl Recorder {
    pub fn new(names: &'static [&'static str]) -> Recorder {
        Recorder {
            names,
            kinds: names.iter().map(|_| Counts::new()).collect(),
            interval: Counts::new(),
            interval_start: 0.0,
            series: Vec::new(),
            first_errors: Vec::new(),
        }
    }

    pub fn add(&mut self, kind: usize, event: Event, latency: Duration) {
        if let Some(counts) = self.kinds.get_mut(kind) {
            counts.add(event, latency);
        }
        self.interval.add(event, latency);
    }

    pub fn note_error(&mut self, message: String) {
        if self.first_errors.len() < KEPT_ERRORS && !self.first_errors.contains(&message) {
            self.first_errors.push(message);
        }
    }

    /// Closes the current interval at `elapsed` seconds and returns it.
    pub fn tick(&mut self, elapsed: f64) -> Second {
        let span = (elapsed - self.interval_start).max(1e-9);
        let second = Second {
            elapsed_s: elapsed,
            tx_per_s: self.interval.finished() as f64 / span,
            p50_ms: self.interval.ms(0.50),
            p99_ms: self.interval.ms(0.99),
            retries: self.interval.retries,
            errors: self.interval.errors,
        };
        self.interval = Counts::new();
        self.interval_start = elapsed;
        self.series.push(second.clone());
        second
    }

    pub fn series(&self) -> &[Second] {
        &self.series
    }

    pub fn committed(&self, kind: usize) -> u64 {
        self.kinds.get(kind).map_or(0, |c| c.committed)
    }

    pub fn errors(&self) -> u64 {
        self.kinds.iter().map(|c| c.errors).sum()
    }

    /// Per type, then the total, over `elapsed` seconds.
    pub fn summaries(&self, elapsed: f64) -> (Vec<TypeSummary>, TypeSummary) {
        let per_type = self.names.iter().zip(&self.kinds).map(|(name, c)| summary(name, c, elapsed)).collect();
        let mut total = Counts::new();
        for c in &self.kinds {
            total.committed += c.committed;
            total.rolled_back += c.rolled_back;
            total.retries += c.retries;
            total.errors += c.errors;
            // Same bounds on both sides, so adding cannot fail.
            let _ = total.latency.add(&c.latency);
        }
        (per_type, summary("total", &total, elapsed))
    }
}

fn summary(name: &str, c: &Counts, elapsed: f64) -> TypeSummary {
    let percentiles = if c.latency.is_empty() {
        Vec::new()
    } else {
        c.latency
            .iter_quantiles(1)
            .map(|v| (v.quantile_iterated_to() * 100.0, v.value_iterated_to() as f64 / 1000.0))
            .collect()
    };
    TypeSummary {
        name: name.to_string(),
        committed: c.committed,
        rolled_back: c.rolled_back,
        retries: c.retries,
        errors: c.errors,
        tx_per_s: c.finished() as f64 / elapsed.max(1e-9),
        p50_ms: c.ms(0.50),
        p95_ms: c.ms(0.95),
        p99_ms: c.ms(0.99),
        max_ms: if c.latency.is_empty() { 0.0 } else { c.latency.max() as f64 / 1000.0 },
        percentiles,
    }
}
