//! The live progress line: elapsed time, tx/s, p50/p99 and retries of the last second, on
//! stderr when it is a terminal; nothing on a pipe or file.

use crate::stats::Second;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(duration: Duration) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(duration.as_secs()), ProgressDrawTarget::stderr());
        // The template is a constant; should it ever be refused, the default style is fine.
        if let Ok(style) = ProgressStyle::with_template("{bar:20} {pos:>4}/{len}s  {msg}") {
            bar.set_style(style);
        }
        Progress { bar: Some(bar) }
    }

    pub fn show(&self, last: &Second, elapsed: Duration) {
        let Some(bar) = &self.bar else { return };
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!(
            "{:>8.1} tx/s  p50 {:>7.2} ms  p99 {:>7.2} ms  retried {}  errors {}",
            last.tx_per_s, last.p50_ms, last.p99_ms, last.retries, last.errors
        ));
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
