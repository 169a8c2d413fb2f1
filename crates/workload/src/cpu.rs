//! CPU time of process trees (Linux `/proc`), to report CPU seconds per committed
//! transaction: `--cpu-pid` names the server processes (PostgreSQL's postmaster, or each
//! Pistou replica). A tree's CPU is, over its live processes, user + system time plus the
//! time of their reaped children, so connections' backends that exit during the run count.

use anyhow::{anyhow, Context, Result};
use std::collections::HashMap;

struct Stat {
    ppid: u32,
    /// utime + stime + cutime + cstime, in clock ticks.
    ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state) of proc(5): ppid is field 4, utime..cstime fields 14..17.
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let ticks = num(11)? + num(12)? + num(13)? + num(14)?;
    Some(Stat { ppid: u32::try_from(num(1)?).ok()?, ticks })
}

fn all_processes() -> Result<HashMap<u32, Stat>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc").context("cannot list /proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process may exit between the listing and the read: skip it.
        if let Some(stat) = read_stat(pid) {
            out.insert(pid, stat);
        }
    }
    Ok(out)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU seconds used so far by each tree rooted at `roots`.
pub fn tree_seconds(roots: &[u32]) -> Result<Vec<f64>> {
    let procs = all_processes()?;
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, stat) in &procs {
        children.entry(stat.ppid).or_default().push(*pid);
    }
    let hz = ticks_per_second();
    roots
        .iter()
        .map(|root| {
            if !procs.contains_key(root) {
                return Err(anyhow!("--cpu-pid {root}: no such process"));
            }
            let (mut ticks, mut stack) = (0u64, vec![*root]);
            while let Some(pid) = stack.pop() {
                ticks += procs.get(&pid).map_or(0, |s| s.ticks);
                stack.extend(children.get(&pid).into_iter().flatten());
            }
            Ok(ticks as f64 / hz)
        })
        .collect()
}
