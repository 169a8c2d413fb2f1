//! `pistou status`: one table of every replica of a configuration, from their metrics.
//!
//! Each replica's metrics URL (`[metrics]` in cluster.toml) is scraped once, all at the same
//! time, each bounded by [`SCRAPE_TIMEOUT`] and [`MAX_ANSWER_BYTES`]. A replica is `up` when
//! it answered with a committed count, `bad` when it answered without one (not a pistou
//! replica's metrics, or garbage), `down` when it did not answer (refused, timed out, not
//! 200). A shard is short when fewer than n − f (`Quorums::st2_quorum`, 4f+1) of its
//! replicas are up: below that no V-CERT can be formed on it, so it can no longer commit a
//! transaction it logs (docs/operations.md, "Status").
//!
//! Everything shown comes from the replicas' answers, which are untrusted: numbers that are
//! not finite, negative or too large show as `?`, and text (the version, error lines) is cut
//! short and stripped of control characters before it reaches the terminal.

use crate::files::load_config;
use anyhow::{bail, Result};
use pistou_core::{ClusterConfig, ReplicaId};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Exit code when a shard has fewer replicas up than it needs.
pub const EXIT_SHORT: u8 = 4;
/// Time one replica's scrape may take (they run at the same time).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest answer read from one replica.
pub const MAX_ANSWER_BYTES: usize = 4 << 20;
/// Longest text (version, note) shown from one replica.
const MAX_TEXT: usize = 48;

const COMMITTED: &str = "pistou_replica_transactions_committed_total";
const LAST_COMMIT: &str = "pistou_replica_last_commit_timestamp_seconds";
const BUILD_INFO: &str = "pistou_build_info";

/// What one replica's metrics say, as far as `status` uses them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub committed: Option<u64>,
    /// Unix time of the last commit the replica saw since it started.
    pub last_commit: Option<f64>,
    pub version: Option<String>,
}

/// One replica's scrape: its parsed metrics, or why there are none.
#[derive(Debug, Clone)]
pub struct Probe {
    pub id: ReplicaId,
    pub addr: String,
    pub answer: Result<Sample, String>,
}

/// The table and the verdict.
#[derive(Debug)]
pub struct Report {
    /// The table, header first, columns aligned.
    pub table: Vec<String>,
    /// One line per shard: replicas up, and whether that is enough.
    pub shards: Vec<String>,
    /// Whether every shard has enough replicas up.
    pub healthy: bool,
}

/// Text from a replica, safe for a terminal: printable ASCII only, at most `MAX_TEXT` chars.
fn clean(text: &str) -> String {
    let mut out: String =
        text.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(MAX_TEXT).collect();
    if text.chars().count() > MAX_TEXT {
        out.push_str("...");
    }
    out
}

/// A counter's value as a count, if it is one.
fn count(v: f64) -> Option<u64> {
    // 2^53: beyond it an f64 no longer holds every integer.
    (0.0..=9_007_199_254_740_992.0).contains(&v).then_some(v as u64)
}

/// Picks what `status` shows out of parsed metrics (`pistou_metrics::parse`).
pub fn sample(series: &[(String, f64)]) -> Sample {
    let mut s = Sample::default();
    for (name, value) in series {
        if name == COMMITTED {
            s.committed = count(*value);
        } else if name == LAST_COMMIT {
            s.last_commit = (value.is_finite() && *value > 0.0).then_some(*value);
        } else if let Some(labels) = name.strip_prefix(BUILD_INFO).and_then(|l| l.strip_prefix('{')) {
            if let Some(v) = labels.split_once("version=\"").and_then(|(_, rest)| rest.split_once('"')) {
                s.version = Some(clean(v.0));
            }
        }
    }
    s
}

/// Builds the table and the verdict from the probes (in any order), `now` being Unix time.
pub fn report(config: &ClusterConfig, probes: &[Probe], now: f64) -> Report {
    let need = config.quorums().st2_quorum();
    let n = config.quorums().n();
    // Lag: how far each replica's committed count is behind the highest of its shard's
    // replicas answering in this same run.
    let mut highest: BTreeMap<u32, u64> = BTreeMap::new();
    for p in probes {
        if let Ok(Sample { committed: Some(c), .. }) = &p.answer {
            let h = highest.entry(p.id.shard.0).or_default();
            *h = (*h).max(*c);
        }
    }
    let mut up: BTreeMap<u32, usize> = (0..config.num_shards()).map(|s| (s as u32, 0)).collect();
    let mut rows = vec![["REPLICA", "SHARD", "ADDRESS", "STATE", "COMMITTED", "LAST-COMMIT", "LAG", "VERSION", "NOTE"]
        .map(String::from)
        .to_vec()];
    let mut sorted: Vec<&Probe> = probes.iter().collect();
    sorted.sort_by_key(|p| p.id);
    for p in sorted {
        let dash = || "-".to_string();
        let (state, committed, age, lag, version, note) = match &p.answer {
            Ok(s @ Sample { committed: Some(c), .. }) => {
                *up.entry(p.id.shard.0).or_default() += 1;
                let age = s.last_commit.map_or_else(dash, |t| format!("{:.0}s", (now - t).max(0.0)));
                let lag = highest.get(&p.id.shard.0).map_or_else(dash, |h| h.saturating_sub(*c).to_string());
                ("up", c.to_string(), age, lag, s.version.clone().unwrap_or_else(|| "?".into()), String::new())
            }
            Ok(s) => (
                "bad",
                "?".into(),
                dash(),
                dash(),
                s.version.clone().unwrap_or_else(|| "?".into()),
                "answered without a valid committed count".into(),
            ),
            Err(e) => ("down", dash(), dash(), dash(), dash(), clean(e)),
        };
        let addr = clean(&p.addr);
        rows.push(vec![
            p.id.to_string(),
            p.id.shard.0.to_string(),
            addr,
            state.into(),
            committed,
            age,
            lag,
            version,
            note,
        ]);
    }
    let mut widths = vec![0; rows[0].len()];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let table = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().zip(widths.iter().copied()).map(|(c, w)| format!("{c:<w$}")).collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect();
    let mut healthy = true;
    let shards = up
        .iter()
        .map(|(shard, &k)| {
            if k >= need {
                format!("shard {shard}: {k} of {n} replicas up; it needs {need} (n - f) to commit")
            } else {
                healthy = false;
                format!("shard {shard} SHORT: {k} of {n} replicas up, fewer than the {need} (n - f) it needs to commit")
            }
        })
        .collect();
    Report { table, shards, healthy }
}

/// Scrapes every replica of `config` at once.
pub async fn probe_all(config: &ClusterConfig) -> Vec<Probe> {
    let mut tasks = Vec::new();
    for id in config.all_replicas() {
        let addr = config.replica(id).map(|r| r.addr.clone()).unwrap_or_default();
        let metrics = config.metrics.replica_addr(config, id);
        tasks.push(tokio::spawn(async move {
            let answer = match metrics {
                None => Err("no metrics address".to_string()),
                Some(m) => match pistou_metrics::scrape_bounded(m, SCRAPE_TIMEOUT, MAX_ANSWER_BYTES).await {
                    Ok(text) => Ok(sample(&pistou_metrics::parse(&text))),
                    Err(e) => Err(format!("{m}: {e}")),
                },
            };
            Probe { id, addr, answer }
        }));
    }
    let mut probes = Vec::new();
    for t in tasks {
        if let Ok(p) = t.await {
            probes.push(p);
        }
    }
    probes
}

/// `pistou status --config PATH`: prints the table and the shards' verdicts; exit code 0
/// when every shard has enough replicas up, [`EXIT_SHORT`] otherwise.
pub async fn run(config_path: &Path) -> Result<u8> {
    let config = load_config(config_path)?;
    if !config.metrics.enabled {
        bail!(
            "status reads the replicas' metrics, which are off in {}: set `[metrics] enabled = true` there \
             (pistou init does) and restart the replicas",
            config_path.display()
        );
    }
    let probes = probe_all(&config).await;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let r = report(&config, &probes, now);
    for line in r.table.iter().chain([String::new()].iter()).chain(r.shards.iter()) {
        out!("{line}");
    }
    Ok(if r.healthy { 0 } else { EXIT_SHORT })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_core::ShardId;

    fn config(shards: usize) -> ClusterConfig {
        let mut c = std::sync::Arc::unwrap_or_clone(pistou_core::ClusterBuilder::new(1).shards(shards).build().config);
        c.metrics.enabled = true;
        c
    }

    fn up(id: ReplicaId, committed: u64, last: Option<f64>) -> Probe {
        let answer = Ok(Sample { committed: Some(committed), last_commit: last, version: Some("0.1.0".into()) });
        Probe { id, addr: format!("127.0.0.1:{}", 7000 + id.index), answer }
    }

    fn down(id: ReplicaId) -> Probe {
        Probe { id, addr: "127.0.0.1:1".into(), answer: Err("connection refused".into()) }
    }

    fn rid(shard: u32, index: u32) -> ReplicaId {
        ReplicaId { shard: ShardId(shard), index }
    }

    fn cells(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    #[test]
    fn parses_what_replicas_publish_and_refuses_bad_numbers() {
        let text = "# TYPE x counter\npistou_replica_transactions_committed_total 42\n\
                    pistou_replica_last_commit_timestamp_seconds 1700000000.5\n\
                    pistou_build_info{version=\"0.1.0\"} 1\n";
        let s = sample(&pistou_metrics::parse(text));
        assert_eq!(
            s,
            Sample { committed: Some(42), last_commit: Some(1_700_000_000.5), version: Some("0.1.0".into()) }
        );
        assert_eq!(
            sample(&pistou_metrics::parse("pistou_replica_last_commit_timestamp_seconds 0\n")).last_commit,
            None
        );
        for bad in ["NaN", "-1", "inf", "1e300", "x"] {
            let s = sample(&pistou_metrics::parse(&format!("{COMMITTED} {bad}\n{LAST_COMMIT} {bad}\n")));
            assert_eq!((s.committed, s.last_commit.filter(|_| bad != "1e300")), (None, None), "{bad}");
        }
        let hostile = format!("pistou_build_info{{version=\"\u{1b}[2J{}\"}} 1\n", "v".repeat(500));
        let v = sample(&pistou_metrics::parse(&hostile)).version.expect("version");
        assert!(v.len() <= MAX_TEXT + 3 && !v.contains('\u{1b}'), "{v}");
        assert_eq!(sample(&pistou_metrics::parse("garbage\n{{{ }}}\n\n")), Sample::default());
    }

    #[test]
    fn every_replica_up_is_healthy_with_lag_and_age() {
        let c = config(1);
        let mut probes: Vec<Probe> = c.all_replicas().map(|id| up(id, 10, Some(990.0))).collect();
        probes[3] = up(rid(0, 3), 7, None);
        let r = report(&c, &probes, 1000.0);
        assert!(r.healthy);
        assert_eq!(
            cells(&r.table[0]),
            ["REPLICA", "SHARD", "ADDRESS", "STATE", "COMMITTED", "LAST-COMMIT", "LAG", "VERSION", "NOTE"]
        );
        assert_eq!(r.table.len(), 7);
        assert_eq!(cells(&r.table[1]), ["s0r0", "0", "127.0.0.1:7000", "up", "10", "10s", "0", "0.1.0"]);
        assert_eq!(cells(&r.table[4]), ["s0r3", "0", "127.0.0.1:7003", "up", "7", "-", "3", "0.1.0"]);
        // Aligned: every column starts at the same offset on every line.
        let col = r.table[0].find("STATE").expect("STATE");
        assert!(r.table[1..].iter().all(|l| l[col..].starts_with("up")), "{:#?}", r.table);
        assert_eq!(r.shards, ["shard 0: 6 of 6 replicas up; it needs 5 (n - f) to commit"]);
    }

    #[test]
    fn a_shard_below_n_minus_f_is_short_and_named() {
        let c = config(2);
        let probes: Vec<Probe> = c
            .all_replicas()
            .map(|id| match (id.shard.0, id.index) {
                (0, 1) | (1, 0) | (1, 4) => down(id),
                _ => up(id, 5, None),
            })
            .collect();
        let r = report(&c, &probes, 0.0);
        assert!(!r.healthy);
        let row = r.table.iter().find(|l| l.starts_with("s0r1 ")).expect("row");
        assert_eq!(cells(row)[..9], ["s0r1", "0", "127.0.0.1:1", "down", "-", "-", "-", "-", "connection"]);
        assert_eq!(
            r.shards,
            [
                "shard 0: 5 of 6 replicas up; it needs 5 (n - f) to commit",
                "shard 1 SHORT: 4 of 6 replicas up, fewer than the 5 (n - f) it needs to commit",
            ]
        );
    }

    #[test]
    fn an_answer_without_a_count_does_not_count_as_up() {
        let c = config(1);
        let mut probes: Vec<Probe> = c.all_replicas().map(|id| up(id, 1, None)).collect();
        probes[0].answer = Ok(Sample::default());
        probes[1].answer = Ok(Sample::default());
        let r = report(&c, &probes, 0.0);
        assert!(!r.healthy);
        assert_eq!(cells(&r.table[1])[3], "bad");
    }
}
