//! Runs a workload: `clients` connections, each running transactions back to back (no
//! keying or think time) until the duration ends or the run is interrupted, retrying
//! serialization failures and recording every outcome.

use crate::conn::{connect, failure_text, is_retryable_any, Session};
use crate::progress::Progress;
use crate::stats::{Event, Recorder};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a transaction's body ended (the driver then commits or rolls back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Commit,
    /// The workload rolls back on purpose (not an error).
    Rollback,
}

/// A transaction mix. The driver sends BEGIN before `execute` and COMMIT or ROLLBACK after.
pub trait Workload: Send + Sync + 'static {
    /// The inputs of one transaction, chosen once and reused by its retries.
    type Txn: Send + Sync;

    /// Transaction type names; `next` returns an index into them.
    fn kinds(&self) -> &'static [&'static str];

    /// The next transaction of client number `client`.
    fn next(&self, client: usize, rng: &mut StdRng) -> (usize, Self::Txn);

    /// The transaction's statements, between BEGIN and COMMIT.
    fn execute<'a>(
        &'a self,
        s: &'a mut Session,
        txn: &'a Self::Txn,
    ) -> impl Future<Output = Result<Outcome>> + Send + 'a;

    /// Whether transactions of type `kind` only read: they begin `READ ONLY`, as the
    /// benchmarks' specifications allow (PostgreSQL then keeps no serializable read locks
    /// of theirs after commit).
    fn read_only(&self, _kind: usize) -> bool {
        false
    }

    /// Called once a transaction is over (committed, rolled back, failed or abandoned).
    fn finished(&self, _txn: &Self::Txn) {}

    /// A workload-specific headline (TPC-C's tpmC) from the committed counts per type.
    fn headline(&self, _committed: &[u64], _elapsed_s: f64) -> Option<String> {
        None
    }
}

pub struct RunConfig {
    pub url: String,
    pub clients: usize,
    pub duration: Duration,
    pub seed: u64,
}

/// What the driver measured.
pub struct Measured {
    pub recorder: Recorder,
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub headline: Option<String>,
}

/// How long a client may take to finish its current transaction once the run is over.
const GRACE: Duration = Duration::from_secs(15);

pub async fn run<W: Workload>(
    workload: Arc<W>,
    config: &RunConfig,
    interrupt: impl Future<Output = ()> + Send,
) -> Result<Measured> {
    // Connect every client first: a wrong URL fails here, before anything is measured.
    let mut sessions = Vec::with_capacity(config.clients);
    for _ in 0..config.clients {
        sessions.push(connect(&config.url).await?);
    }
    let recorder = Arc::new(Mutex::new(Recorder::new(workload.kinds())));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (client, session) in sessions.into_iter().enumerate() {
        let (workload, recorder, stop) = (workload.clone(), recorder.clone(), stop.clone());
        let rng = StdRng::seed_from_u64(config.seed.wrapping_add(client as u64 * 7919));
        tasks.push(tokio::spawn(client_loop(workload, session, client, rng, recorder, stop)));
    }
    let progress = Progress::new(config.duration);
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + Duration::from_secs(1), Duration::from_secs(1));
    let deadline = tokio::time::sleep(config.duration);
    tokio::pin!(deadline, interrupt);
    let mut interrupted = false;
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            _ = &mut interrupt => { interrupted = true; break }
            _ = ticker.tick() => {
                let second = lock(&recorder).tick(start.elapsed().as_secs_f64());
                progress.show(&second, start.elapsed());
                if tasks.iter().all(|t| t.is_finished()) {
                    break;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed_s = start.elapsed().as_secs_f64();
    progress.finish();
    let mut fatal = None;
    for task in tasks {
        let abort = task.abort_handle();
        match tokio::time::timeout(GRACE, task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => fatal = fatal.or(Some(e)),
            Ok(Err(join)) if join.is_panic() => fatal = fatal.or(Some(anyhow!("a client task panicked: {join}"))),
            Ok(Err(_)) => {}
            Err(_) => abort.abort(),
        }
    }
    let mut recorder = Arc::try_unwrap(recorder)
        .map_err(|_| anyhow!("a client outlived the run"))
        .and_then(|m| m.into_inner().map_err(|_| anyhow!("a client panicked while recording")))?;
    // The partial last second, so the series covers the whole run.
    if recorder.series().last().is_none_or(|s| elapsed_s - s.elapsed_s > 0.05) {
        recorder.tick(elapsed_s);
    }
    if let Some(e) = fatal {
        // A lost connection ends the run: report it rather than a partial measurement.
        return Err(e);
    }
    let committed: Vec<u64> = (0..workload.kinds().len()).map(|k| recorder.committed(k)).collect();
    let headline = workload.headline(&committed, elapsed_s);
    Ok(Measured { recorder, elapsed_s, interrupted, headline })
}

fn lock(recorder: &Mutex<Recorder>) -> std::sync::MutexGuard<'_, Recorder> {
    // A panic while holding the lock cannot leave the counters half-updated in a way that
    // matters to a measurement; keep going with them.
    recorder.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs one client's transactions until `stop`; returns an error only when its connection
/// is gone.
async fn client_loop<W: Workload>(
    workload: Arc<W>,
    mut session: Session,
    client: usize,
    mut rng: StdRng,
    recorder: Arc<Mutex<Recorder>>,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    while !stop.load(Ordering::Relaxed) {
        let (kind, txn) = workload.next(client, &mut rng);
        let started = Instant::now();
        let mut retries = 0;
        let event = loop {
            match attempt(&*workload, &mut session, kind, &txn).await {
                Ok(Outcome::Commit) => break Event::Committed { retries },
                Ok(Outcome::Rollback) => break Event::RolledBack { retries },
                Err(e) if is_retryable_any(&e) => {
                    retries += 1;
                    if stop.load(Ordering::Relaxed) {
                        // The run is over: the unfinished transaction counts only its retries.
                        lock(&recorder).add(kind, Event::Abandoned { retries }, started.elapsed());
                        workload.finished(&txn);
                        return Ok(());
                    }
                    // A short random pause so that conflicting clients do not collide again.
                    let pause = rng.gen_range(0..(1u64 << retries.min(6)));
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(e) => {
                    let text = failure_text(&e);
                    if session.client.is_closed() {
                        return Err(anyhow!("the connection of client {client} was lost: {text}"));
                    }
                    lock(&recorder).note_error(format!("{}: {text}", workload.kinds()[kind]));
                    break Event::Failed { retries };
                }
            }
        };
        lock(&recorder).add(kind, event, started.elapsed());
        workload.finished(&txn);
    }
    Ok(())
}

/// One try: BEGIN, the body, COMMIT or ROLLBACK; a failed try is rolled back.
async fn attempt<W: Workload>(workload: &W, s: &mut Session, kind: usize, txn: &W::Txn) -> Result<Outcome> {
    let begin = if workload.read_only(kind) { "BEGIN READ ONLY" } else { "BEGIN" };
    let result = async {
        s.client.batch_execute(begin).await?;
        let outcome = workload.execute(s, txn).await?;
        match outcome {
            Outcome::Commit => s.client.batch_execute("COMMIT").await?,
            Outcome::Rollback => s.client.batch_execute("ROLLBACK").await?,
        }
        Ok(outcome)
    }
    .await;
    if result.is_err() {
        s.rollback_quietly().await;
    }
    result
}
