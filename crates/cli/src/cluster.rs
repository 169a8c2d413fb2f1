//! `pistou cluster up`: every replica of a configuration as a child process, supervised.
//!
//! A replica that exits is started again from its data directory, after a delay that
//! doubles with each consecutive failure (1 s up to 30 s) and starts over once it has run
//! for a minute. The cluster stops only when asked (SIGINT/SIGTERM).
//!
//! No orphans: children get SIGKILL from the kernel if this process dies
//! (PR_SET_PDEATHSIG), sit in their own process group (a terminal's Ctrl-C reaches only
//! us, and we stop them in order), are SIGTERMed then SIGKILLed on stop, and are killed
//! on drop as a last resort.

use crate::files::{config_dir, load_config, log_path};
use anyhow::{anyhow, bail, Context, Result};
use pistou_core::{ClusterConfig, ReplicaId};
use std::collections::BTreeMap;
use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// Time given to replicas to exit after SIGTERM before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Time given to all replicas to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Restart delays: the first, the cap, and how long a replica must run for its next
/// failure to count as a first one again.
const RESTART_FIRST: Duration = Duration::from_secs(1);
const RESTART_MAX: Duration = Duration::from_secs(30);
const RESTART_RESET_AFTER: Duration = Duration::from_secs(60);

struct Member {
    id: ReplicaId,
    child: Child,
    pid: u32,
    exited: Option<ExitStatus>,
    started: Instant,
    /// Consecutive failures (reset after `RESTART_RESET_AFTER` of running).
    failures: u32,
    /// When to start it again, once exited.
    restart_at: Option<Instant>,
}

pub struct Cluster {
    pub config: Arc<ClusterConfig>,
    pub config_path: PathBuf,
    pub log_dir: PathBuf,
    members: Vec<Member>,
    byzantine: BTreeMap<ReplicaId, String>,
    exe: PathBuf,
    in_memory: bool,
}

impl Cluster {
    /// Spawns one `pistou replica` per configured replica. Logs go to `<dir>/logs/`.
    /// `byzantine` makes the named replicas run with `--fault` (testing only).
    pub async fn start(
        config_path: &Path,
        in_memory: bool,
        byzantine: &BTreeMap<ReplicaId, String>,
    ) -> Result<Cluster> {
        let config = load_config(config_path)?;
        let dir = config_dir(config_path);
        let log_dir = dir.join("logs");
        fs::create_dir_all(&log_dir).with_context(|| format!("cannot create {}", log_dir.display()))?;
        check_ports_free(&config)?;
        let exe = std::env::current_exe().context("cannot find the pistou executable")?;
        let mut cluster = Cluster {
            config: config.clone(),
            config_path: config_path.to_path_buf(),
            log_dir,
            members: Vec::new(),
            byzantine: byzantine.clone(),
            exe: exe.clone(),
            in_memory,
        };
        for id in config.all_replicas() {
            match spawn_replica(&exe, config_path, &dir, id, in_memory, byzantine.get(&id)) {
                Ok(m) => cluster.members.push(m),
                Err(e) => {
                    cluster.stop().await;
                    return Err(e);
                }
            }
        }
        Ok(cluster)
    }

    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.pid).collect()
    }

    /// Waits until every replica accepts TCP connections.
    pub async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut pending: Vec<(ReplicaId, String)> =
            self.config.all_replicas().filter_map(|id| Some((id, self.config.replica(id)?.addr.clone()))).collect();
        while !pending.is_empty() {
            if let Some((id, status)) = self.reap().into_iter().next() {
                bail!("replica {id} exited during startup ({status}){}", self.log_note(id));
            }
            if Instant::now() > deadline {
                let ids: Vec<String> = pending.iter().map(|(id, _)| id.to_string()).collect();
                bail!("replicas {} did not start listening within {READY_TIMEOUT:?}", ids.join(", "));
            }
            let mut still = Vec::new();
            for (id, addr) in pending {
                let up = tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(&addr)).await;
                if !matches!(up, Ok(Ok(_))) {
                    still.push((id, addr));
                }
            }
            pending = still;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Runs until `stop` completes, starting every replica that exits again (see the module
    /// documentation). Each exit and restart is announced on stderr, and each restart also
    /// as one line on stdout: `pistou replica restarted id=<id> pid=<pid> restarts=<n>`.
    pub async fn supervise(&mut self, stop: impl Future<Output = ()>) -> Result<()> {
        tokio::pin!(stop);
        let mut poll = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = &mut stop => return Ok(()),
                _ = poll.tick() => {
                    for (id, status) in self.reap() {
                        let delay = self.schedule_restart(id);
                        eout!("warning: replica {id} exited ({status}); restarting it in {delay:?}{}", self.log_note(id));
                    }
                    self.restart_due()?;
                }
            }
        }
    }

    /// Schedules the restart of the exited replica `id`; returns the delay.
    fn schedule_restart(&mut self, id: ReplicaId) -> Duration {
        let Some(m) = self.members.iter_mut().find(|m| m.id == id) else { return RESTART_FIRST };
        if m.started.elapsed() >= RESTART_RESET_AFTER {
            m.failures = 0;
        }
        let delay = RESTART_FIRST.saturating_mul(1 << m.failures.min(5)).min(RESTART_MAX);
        m.failures += 1;
        m.restart_at = Some(Instant::now() + delay);
        delay
    }

    fn restart_due(&mut self) -> Result<()> {
        let dir = self.dir();
        let now = Instant::now();
        for m in self.members.iter_mut() {
            if m.restart_at.is_none_or(|at| at > now) {
                continue;
            }
            // Its log file is truncated by the new process: keep the old one for the operator.
            let log = log_path(&dir, m.id);
            let _ = fs::rename(&log, log.with_extension("log.previous"));
            let next =
                spawn_replica(&self.exe, &self.config_path, &dir, m.id, self.in_memory, self.byzantine.get(&m.id))?;
            let failures = m.failures;
            *m = Member { failures, ..next };
            out!("pistou replica restarted id={} pid={} restarts={failures}", m.id, m.pid);
            eout!("replica {} restarted (pid {}, restart {failures})", m.id, m.pid);
        }
        Ok(())
    }

    /// SIGTERM to every live replica, then SIGKILL to those still running after a grace
    /// period. Waits for all of them, so none is left behind.
    pub async fn stop(&mut self) {
        for m in self.members.iter().filter(|m| m.exited.is_none()) {
            // Safe: plain kill(2) on a pid we spawned and have not reaped yet.
            unsafe {
                libc::kill(m.pid as libc::pid_t, libc::SIGTERM);
            }
        }
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        for m in self.members.iter_mut().filter(|m| m.exited.is_none()) {
            match tokio::time::timeout_at(deadline, m.child.wait()).await {
                Ok(Ok(status)) => m.exited = Some(status),
                _ => {
                    let _ = m.child.start_kill();
                    if let Ok(status) = m.child.wait().await {
                        m.exited = Some(status);
                    }
                }
            }
        }
    }

    fn dir(&self) -> PathBuf {
        config_dir(&self.config_path)
    }

    /// Newly exited replicas.
    fn reap(&mut self) -> Vec<(ReplicaId, ExitStatus)> {
        let mut out = Vec::new();
        for m in self.members.iter_mut().filter(|m| m.exited.is_none()) {
            if let Ok(Some(status)) = m.child.try_wait() {
                m.exited = Some(status);
                out.push((m.id, status));
            }
        }
        out
    }

    /// Where a replica's log is, and its last lines, to show why it died.
    fn log_note(&self, id: ReplicaId) -> String {
        let path = log_path(&self.dir(), id);
        let text = fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join("\n  ");
        format!("; log {}{}{tail}", path.display(), if tail.is_empty() { "" } else { ", ending:\n  " })
    }
}

/// A taken port makes a replica die at startup; say so before spawning anything.
fn check_ports_free(config: &ClusterConfig) -> Result<()> {
    for id in config.all_replicas() {
        let Some(r) = config.replica(id) else { continue };
        if let Err(e) = std::net::TcpListener::bind(&r.addr) {
            bail!("address {} of replica {id} is not available ({e}); is another cluster running?", r.addr);
        }
        if let Some(addr) = config.metrics.replica_addr(config, id) {
            if let Err(e) = std::net::TcpListener::bind(addr) {
                bail!("metrics address {addr} of replica {id} is not available ({e}); is another cluster running?");
            }
        }
    }
    Ok(())
}

/// Each replica's metrics URL, in replica order (none when metrics are off).
pub fn metrics_urls(config: &ClusterConfig) -> Vec<(ReplicaId, String)> {
    config
        .all_replicas()
        .filter_map(|id| Some((id, format!("http://{}/metrics", config.metrics.replica_addr(config, id)?))))
        .collect()
}

fn spawn_replica(
    exe: &Path,
    config_path: &Path,
    dir: &Path,
    id: ReplicaId,
    in_memory: bool,
    fault: Option<&String>,
) -> Result<Member> {
    let log = log_path(dir, id);
    let out = fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(exe);
    cmd.arg("replica")
        .arg("--config")
        .arg(config_path)
        .arg("--id")
        .arg(id.to_string())
        .args(fault.map(|f| ["--fault", f.as_str()]).into_iter().flatten())
        .args(in_memory.then_some("--in-memory"))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true);
    // The death signal follows the *thread* that forked: callers run the cluster on a
    // current-thread runtime, so that is the main thread, alive until we exit.
    let parent = std::process::id();
    // Safe: prctl, getppid and _exit are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // We may have died between fork and prctl: then nobody would kill the child.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().with_context(|| format!("cannot start replica {id}"))?;
    let pid = child.id().ok_or_else(|| anyhow!("replica {id} exited immediately"))?;
    Ok(Member { id, child, pid, exited: None, started: Instant::now(), failures: 0, restart_at: None })
}
