//! Machine-wide CPU idle share over a measured window, from Linux's `/proc/stat`. A
//! throughput comparison between modes means "CPU cost" only when every mode keeps the
//! CPUs busy; a mode that leaves them idle is limited by latency instead (Pesto's uniform
//! runs are CPU-bound). Elsewhere than Linux the share is unknown and reported as such.

/// Jiffies since boot: idle (idle + iowait) and all, summed over `cpus` CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    idle: u64,
    total: u64,
    cpus: u64,
}

impl CpuTimes {
    /// The machine's counters now, or `None` where `/proc/stat` is missing or unreadable.
    pub fn now() -> Option<CpuTimes> {
        parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Idle share (0–1) between `self` and a later reading, `None` if no time passed.
    pub fn idle_share_until(&self, later: &CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let idle = later.idle.checked_sub(self.idle)?;
        (total > 0).then(|| idle as f64 / total as f64)
    }

    /// CPU-seconds the machine spent busy between `self` and a later reading `wall`
    /// seconds apart (busy share × CPUs × wall time, so the jiffy length need not be known).
    pub fn busy_seconds_until(&self, later: &CpuTimes, wall: f64) -> Option<f64> {
        self.idle_share_until(later).map(|idle| (1.0 - idle) * self.cpus as f64 * wall)
    }
}

/// The aggregate `cpu` line: user nice system idle iowait irq softirq steal (guest time is
/// already inside user and nice, so it is not added again); the `cpuN` lines count CPUs.
fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let cpus =
        stat.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)).count()
            as u64;
    let fields: Vec<u64> = line.split_whitespace().skip(1).take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    if fields.len() < 5 {
        return None;
    }
    let idle = fields[3].checked_add(fields[4])?;
    let total = fields.iter().try_fold(0u64, |acc, f| acc.checked_add(*f))?;
    Some(CpuTimes { idle, total, cpus: cpus.max(1) })
}

/// "12.3%", or "n/a" when unknown.
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "n/a".to_string(), |s| format!("{:.1}%", 100.0 * s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_share_counts_idle_and_iowait_over_all_fields() {
        let before = parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n").expect("parse");
        let after = parse("cpu  400 0 150 1000 50 0 0 0 0 0\n").expect("parse");
        // 600 jiffies passed, 200 of them idle; one `cpuN` line.
        assert_eq!(before.idle_share_until(&after), Some(200.0 / 600.0));
        assert_eq!(before.busy_seconds_until(&after, 3.0), Some(2.0));
        assert_eq!(after.idle_share_until(&before), None, "counters never go back");
        assert_eq!(before.idle_share_until(&before), None, "no time passed");
    }

    #[test]
    fn busy_time_scales_with_the_cpus_counted() {
        let before = parse("cpu  0 0 0 0 0 0 0 0\ncpu0 x\ncpu1 x\n").expect("parse");
        let after = parse("cpu  150 0 0 50 0 0 0 0\ncpu0 x\ncpu1 x\n").expect("parse");
        // Busy 3/4 of the time on 2 CPUs for 10 s.
        assert_eq!(before.busy_seconds_until(&after, 10.0), Some(15.0));
    }

    #[test]
    fn malformed_lines_are_unknown_not_errors() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("cpu  1 2 x 4 5"), None);
        assert_eq!(parse("cpu  1 2 3"), None);
        assert_eq!(parse("cpu0 1 2 3 4 5 6 7 8"), None, "only the aggregate line counts");
        assert_eq!(percent(None), "n/a");
        assert_eq!(percent(Some(0.125)), "12.5%");
    }
}
