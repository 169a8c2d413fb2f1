//! What the benchmark reads about other processes from Linux's `/proc`: the replicas
//! `cluster up` started, their CPU time and memory, and the rejection counters replicas
//! write to their logs. Elsewhere than Linux these read as unknown, never as zero.

use std::collections::BTreeMap;
use std::path::Path;

/// Pids whose parent is `parent` (the replicas of a `cluster up`).
pub fn children(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat_fields(*pid).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(parent))
        .collect();
    pids.sort_unstable();
    pids
}

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces): index 0
/// is the state, 1 the parent pid, 11 and 12 user and system time in clock ticks.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// User plus system CPU seconds `pid` has used (all its threads).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let f = stat_fields(pid)?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks as f64 / hz as f64)
}

/// Resident memory of `pid`, in MiB (`VmRSS`).
pub fn rss_mib(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The machine's 1-minute load average.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// Rejection counters summed over the replica logs in `logs` (`replica-*.log`): each replica
/// logs its cumulative counters ("rejected input so far: reason=count …") every few seconds
/// when they changed, so the last such line of each log is its latest state.
pub fn replica_rejections(logs: &Path) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(logs) else { return total };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !(name.starts_with("replica-") && name.ends_with(".log")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let Some(line) = text.lines().rev().find_map(|l| l.split_once("rejected input so far: ").map(|(_, r)| r))
        else {
            continue;
        };
        for (reason, count) in parse_counts(line) {
            *total.entry(reason).or_insert(0) += count;
        }
    }
    total
}

/// `reason=count` pairs of a counters line; the span fields tracing appends (`replica=…`,
/// `reads=…`, …) are not counters.
fn parse_counts(line: &str) -> Vec<(String, u64)> {
    const FIELDS: [&str; 4] = ["replica", "reads", "commits", "aborts"];
    line.split_whitespace()
        .filter_map(|tok| {
            let (k, v) = tok.split_once('=')?;
            let v = v.trim_end_matches(',').parse::<u64>().ok()?;
            (!FIELDS.contains(&k)).then(|| (k.to_string(), v))
        })
        .collect()
}

/// `after - before` for every counter that grew.
pub fn growth(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_lines_are_parsed_without_span_fields() {
        let line = "bad-signature=12 no-session=3 replica=s0r1 reads=40 commits=7 aborts=0";
        assert_eq!(parse_counts(line), vec![("bad-signature".to_string(), 12), ("no-session".to_string(), 3)]);
        let before = BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 5)]);
        let after = BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 9), ("c".to_string(), 1)]);
        assert_eq!(growth(&before, &after), BTreeMap::from([("b".to_string(), 4), ("c".to_string(), 1)]));
    }

    #[test]
    fn this_process_is_visible() {
        let me = std::process::id();
        assert!(cpu_seconds(me).is_some());
        assert!(rss_mib(me).is_some_and(|m| m > 0.0));
    }
}
