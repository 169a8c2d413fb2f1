//! Fair sharing of a replica's work: range reads too long to run between protocol steps.
//!
//! A range read first runs on the protocol thread within a slice of work
//! (`SqlConfig::statement_inline_work`), where nearly every statement ends. One that needs
//! more is queued here, and the runtime takes it as a [`RangeJob`] when no other job is out:
//! the statement with a snapshot of the tables it names (`RowStore::snapshot`). The runtime
//! runs it elsewhere (the node on a low-priority thread, the simulator at once) and hands back
//! a [`RangeJobDone`]. The reply is the one the statement would have had on the protocol
//! thread at the moment its job was taken:
//! - it reads the rows of that moment (the snapshot);
//! - the table versions it may report are recorded at that moment (`note_reported`), before
//!   any later ST1 is checked against them: recording them when the job ends would let a
//!   write admitted meanwhile below them escape the write-monotonicity check (§6.1.3).
//!
//! Bounds: one job out at a time (one snapshot; the statement's memory is bounded by its own
//! limits); `MAX_QUEUED_PER_CLIENT` queued reads per client, `MAX_QUEUED` and
//! `MAX_QUEUED_BYTES` in all. Beyond
//! them a read is dropped without a reply, as an overloaded replica's would be: its client
//! hears from other replicas or retries. Clients take turns, so one client's long statements
//! delay only its own.
//!
//! Cancellation: a queued read is dropped, and the job out is told to stop (its result is
//! thrown away), when its client's connection closes, when the client sends ABORT-READS or
//! another range read for the same transaction (it no longer waits for this one), or when the
//! garbage-collection watermark passes its timestamp (it could not commit).

use super::range_read::{Planned, Ran, RangeRun};
use crate::rejects::RejectReason;
use crate::replica::{Dest, Peer, PendingReply, Replica};
use pistou_core::{ClientId, ClusterConfig, ShardId, Timestamp};
use pistou_crypto::Hash;
use pistou_rowstore::RowStore;
use pistou_sql::{Engine, Interrupt, SqlError, SqlState, Value};
use pistou_wire::{ClientSigned, RangeRead, RangeReply, Signable};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Long range reads one client may have waiting at a replica.
pub(crate) const MAX_QUEUED_PER_CLIENT: usize = 16;
/// Long range reads waiting at a replica in all.
pub(crate) const MAX_QUEUED: usize = 256;
/// Bytes of the requests of the long range reads waiting at a replica (`request_bytes`): a
/// request may carry thousands of buffered writes.
pub(crate) const MAX_QUEUED_BYTES: usize = 64 << 20;

struct Queued {
    from: Peer,
    client: ClientId,
    request: Hash,
    req: RangeRead,
    bytes: usize,
}

/// About what a request holds in memory: its text, buffered writes, parameters and proposal.
fn request_bytes(req: &RangeRead) -> usize {
    let pending: usize = req.pending.iter().map(|w| w.key.len() + w.value.as_ref().map_or(0, Vec::len) + 48).sum();
    let owned = |v: &Value| match v {
        Value::Text(s) => s.len(),
        Value::Bytes(b) => b.len(),
        _ => 0,
    };
    let params: usize = req.params.iter().map(|v| 32 + owned(v)).sum();
    let snapshot = req.snapshot.as_ref().map_or(0, |s| s.txns.iter().map(|e| 64 + 4 * e.voters.len()).sum());
    req.sql.len() + pending + params + snapshot
}

/// The job out, as the replica remembers it.
struct Out {
    id: u64,
    from: Peer,
    client: ClientId,
    ts: Timestamp,
    request: Hash,
    snapshot_round: bool,
    /// What was recorded as reported for each table when the job was taken.
    reserved: BTreeMap<String, Timestamp>,
    cancel: Arc<AtomicBool>,
}

/// The long range reads of one replica: queued, and the one out.
#[derive(Default)]
pub(crate) struct RangeJobs {
    queued: BTreeMap<ClientId, VecDeque<Queued>>,
    queued_total: usize,
    queued_bytes: usize,
    /// The client whose read was taken last: the next is taken from the client after it.
    last_served: Option<ClientId>,
    out: Option<Out>,
    next_id: u64,
}

impl RangeJobs {
    fn has(&self, request: &Hash) -> bool {
        self.out.as_ref().is_some_and(|o| o.request == *request && !o.cancel.load(Ordering::Relaxed))
            || self.queued.values().flatten().any(|q| q.request == *request)
    }

    fn queue(&mut self, q: Queued) -> Result<(), RejectReason> {
        let mine = self.queued.get(&q.client).map_or(0, VecDeque::len);
        if mine >= MAX_QUEUED_PER_CLIENT
            || self.queued_total >= MAX_QUEUED
            || self.queued_bytes.saturating_add(q.bytes) > MAX_QUEUED_BYTES
        {
            return Err(RejectReason::TooManyLongReads);
        }
        self.queued_total += 1;
        self.queued_bytes += q.bytes;
        self.queued.entry(q.client).or_default().push_back(q);
        Ok(())
    }

    /// The next read to run: the oldest of the first client after the one served last.
    fn next(&mut self) -> Option<Queued> {
        let client = match self.last_served {
            Some(last) => self.queued.range(last..).find(|(c, _)| **c != last).or_else(|| self.queued.iter().next()),
            None => self.queued.iter().next(),
        }
        .map(|(c, _)| *c)?;
        let reads = self.queued.get_mut(&client)?;
        let q = reads.pop_front()?;
        if reads.is_empty() {
            self.queued.remove(&client);
        }
        self.queued_total -= 1;
        self.queued_bytes -= q.bytes;
        self.last_served = Some(client);
        Some(q)
    }

    /// Drops the queued reads `abandoned` names and stops the job out if it names it;
    /// returns how many it abandoned.
    fn abandon(&mut self, abandoned: impl Fn(Peer, ClientId, Timestamp) -> bool) -> usize {
        let (mut count, mut bytes) = (0, 0);
        for reads in self.queued.values_mut() {
            reads.retain(|q| {
                let keep = !abandoned(q.from, q.client, q.req.ts);
                if !keep {
                    count += 1;
                    bytes += q.bytes;
                }
                keep
            });
        }
        self.queued.retain(|_, reads| !reads.is_empty());
        self.queued_total -= count;
        self.queued_bytes -= bytes;
        if let Some(out) = &self.out {
            if abandoned(out.from, out.client, out.ts) && !out.cancel.swap(true, Ordering::Relaxed) {
                count += 1;
            }
        }
        count
    }
}

/// A range read for the runtime to run off the replica's protocol thread
/// ([`Replica::take_range_job`]); [`RangeJob::run`] is pure computation over its snapshot.
pub struct RangeJob {
    id: u64,
    store: RowStore,
    engine: Arc<Engine>,
    config: Arc<ClusterConfig>,
    shard: ShardId,
    table_version_outlier_us: u64,
    req: RangeRead,
    planned: Planned,
    /// Per table, the oldest prepared write the read skips, as of when the job was taken.
    skipped: BTreeMap<String, Timestamp>,
    cancel: Arc<AtomicBool>,
}

/// What a [`RangeJob`] computed, for [`Replica::range_job_done`].
pub struct RangeJobDone {
    id: u64,
    ran: Result<Ran, SqlError>,
}

impl RangeJob {
    /// Runs the statement (stopping early if the replica cancels it meanwhile). A panic in
    /// the engine fails this statement with XX000 instead of ending the runtime's thread,
    /// which would leave every later long read waiting.
    pub fn run(self) -> RangeJobDone {
        let id = self.id;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.execute())).unwrap_or_else(|_| RangeJobDone {
            id,
            ran: Err(SqlError::new(SqlState::InternalError, "the statement failed inside the replica")),
        })
    }

    fn execute(self) -> RangeJobDone {
        let skipped = |table: &str| self.skipped.get(table).copied();
        let run = RangeRun {
            store: &self.store,
            config: &self.config,
            shard: self.shard,
            engine: &self.engine,
            table_version_outlier_us: self.table_version_outlier_us,
            oldest_skipped: &skipped,
        };
        let interrupt = Interrupt { work_slice: None, cancel: Some(&self.cancel) };
        RangeJobDone { id: self.id, ran: run.execute(&self.req, &self.planned, interrupt) }
    }
}

impl Replica {
    /// Runs a range read: here and now if it ends within the inline slice of work, else
    /// queued for a [`RangeJob`]. Queues its reply when it has one.
    pub(crate) fn execute_range(&mut self, from: Peer, req: &ClientSigned<RangeRead>) {
        let request = req.body.signing_hash();
        if self.range_jobs.has(&request) {
            return; // a retransmission of a read already waiting here
        }
        // A later statement of the same transaction: the client waits no longer for earlier ones.
        let (client, ts) = (req.client, req.body.ts);
        self.abandon_range_reads(|_, c, t| c == client && t == ts);
        let slice = Interrupt { work_slice: Some(self.sql.params.statement_inline_work), cancel: None };
        match self.sql.range_read(self.auth.config(), &req.body, slice) {
            Err(e) if e.state == SqlState::WorkSliceUsed => {
                let bytes = request_bytes(&req.body);
                let queued = Queued { from, client, request, req: req.body.clone(), bytes };
                if let Err(reason) = self.range_jobs.queue(queued) {
                    self.rejects.record(reason);
                }
            }
            ran => self.reply_range(from, request, req.body.snapshot.is_some(), ran),
        }
    }

    fn reply_range(&mut self, from: Peer, request: Hash, snapshot_round: bool, ran: Result<Ran, SqlError>) {
        self.stats.reads += 1;
        let owners = &self.ts_owner;
        let (result, ss_vote) = match ran {
            Ok(ran) => {
                let ss_vote = ran.ss_vote(snapshot_round, |ts| owners.get(&ts).copied());
                (Ok(ran.result), ss_vote)
            }
            Err(e) => (Err(e), Vec::new()),
        };
        self.pending.push((Dest::Client(from), PendingReply::Range(RangeReply { request, result, ss_vote })));
    }

    /// The next long range read to run elsewhere, if one is waiting and no job is out. The
    /// runtime runs it and hands the result to [`Replica::range_job_done`].
    pub fn take_range_job(&mut self) -> Option<RangeJob> {
        while self.range_jobs.out.is_none() {
            let q = self.range_jobs.next()?;
            let planned = match self.sql.plan_range(&q.req) {
                Ok(planned) => planned,
                Err(e) => {
                    // The schema changed or the watermark passed while it waited.
                    self.reply_range(q.from, q.request, q.req.snapshot.is_some(), Err(e));
                    continue;
                }
            };
            let tables = planned.prepared.tables();
            let mut reserved = BTreeMap::new();
            let mut skipped = BTreeMap::new();
            for table in tables {
                if let Some(version) = self.sql.reportable_version(&planned.catalog, table, q.req.ts) {
                    self.sql.note_reported(table, version);
                    reserved.insert(table.clone(), version);
                }
                if let Some(ts) = self.sql.oldest_skipped(table, q.req.ts) {
                    skipped.insert(table.clone(), ts);
                }
            }
            let cancel = Arc::new(AtomicBool::new(false));
            self.stats.long_reads += 1;
            let id = self.range_jobs.next_id;
            self.range_jobs.next_id += 1;
            self.range_jobs.out = Some(Out {
                id,
                from: q.from,
                client: q.client,
                ts: q.req.ts,
                request: q.request,
                snapshot_round: q.req.snapshot.is_some(),
                reserved,
                cancel: cancel.clone(),
            });
            return Some(RangeJob {
                id,
                store: self.sql.store.snapshot(tables.iter().map(String::as_str)),
                engine: self.sql.engine().clone(),
                config: self.auth.shared_config(),
                shard: self.id.shard,
                table_version_outlier_us: self.sql.params.table_version_outlier_us,
                req: q.req,
                planned,
                skipped,
                cancel,
            });
        }
        None
    }

    /// The result of the job [`Replica::take_range_job`] gave out: its reply is queued
    /// unless the read was abandoned meanwhile.
    pub fn range_job_done(&mut self, done: RangeJobDone) {
        let Some(out) = self.range_jobs.out.take_if(|o| o.id == done.id) else { return };
        if out.cancel.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(ran) = &done.ran {
            for (table, version) in &ran.reported {
                // Reserved when the job was taken, from the same rows.
                debug_assert!(
                    out.reserved.get(table).is_some_and(|r| r >= version),
                    "a job reported {table} at {version:?} above what was reserved"
                );
                self.sql.note_reported(table, *version);
            }
        }
        self.reply_range(out.from, out.request, out.snapshot_round, done.ran);
    }

    /// Runs every waiting range job here and now (the simulator and tests; a runtime with a
    /// worker hands them out instead).
    pub fn run_range_jobs(&mut self) {
        while let Some(job) = self.take_range_job() {
            let done = job.run();
            self.range_job_done(done);
        }
    }

    /// Long range reads waiting here or running (tests, monitoring).
    pub fn long_range_reads(&self) -> usize {
        self.range_jobs.queued_total + usize::from(self.range_jobs.out.is_some())
    }

    /// Drops the waiting long reads `abandoned` names, and stops the one out if it names it.
    pub(crate) fn abandon_range_reads(&mut self, abandoned: impl Fn(Peer, ClientId, Timestamp) -> bool) {
        for _ in 0..self.range_jobs.abandon(abandoned) {
            self.rejects.record(RejectReason::LongReadAbandoned);
        }
    }
}
