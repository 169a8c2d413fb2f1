//! The replica's Prometheus metrics (see docs/operations.md, "Metrics").
//!
//! The protocol core keeps plain counters (`ReplicaStats`, `Rejections`, the verify cache)
//! and never touches this registry: the driver, which owns the replica, copies them in on
//! each tick (every `NodeOptions::tick_interval`), and the storage figures, which cost a
//! pass over the replica's state, every `NodeOptions::stats_interval`. The driver's own
//! figures (batch sizes and durations, queue depths) are recorded here as they happen.

use crate::counters::{NetCounters, NetReason};
use pistou_metrics::prometheus_client::metrics::counter::Counter;
use pistou_metrics::prometheus_client::metrics::family::Family;
use pistou_metrics::prometheus_client::metrics::gauge::Gauge;
use pistou_metrics::prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use pistou_metrics::prometheus_client::metrics::info::Info;
use pistou_metrics::prometheus_client::registry::{Registry, Unit};
use pistou_txn::Replica;
use std::sync::atomic::{AtomicU64, Ordering};

type Labels = [(&'static str, &'static str); 1];

/// Every metric a replica publishes. Counters copied from the replica are set (`store`) to
/// the replica's own running totals, which only grow, so they stay Prometheus counters.
pub(crate) struct ReplicaMetrics {
    reads: Counter,
    votes: Family<Labels, Counter>,
    committed: Counter,
    aborted: Counter,
    fallback_adoptions: Counter,
    supplied: Counter,
    inquiries: Counter,
    long_reads: Counter,
    unapplied_sql_commits: Counter,
    reply_batches_signed: Counter,
    replies_signed: Counter,
    signature_cache_hits: Counter,
    signature_cache_misses: Counter,
    rejected: Family<Labels, Counter>,
    transport_rejected: Family<Labels, Counter>,
    input_batch_messages: Histogram,
    batch_duration: Histogram,
    inbound_queue: Gauge,
    client_connections: Gauge,
    peer_links: Gauge,
    txn_records: Gauge,
    undecided_below_watermark: Gauge,
    gc_queue: Gauge,
    row_keys: Gauge,
    row_versions: Gauge,
    kv_keys: Gauge,
    kv_versions: Gauge,
    gc_watermark: Gauge<f64, std::sync::atomic::AtomicU64>,
    last_commit: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// The committed count at the last publication (`u64::MAX` before the first, which only
    /// takes the count as it is: commits recovered from the log are not new commits).
    committed_seen: AtomicU64,
}

fn set(c: &Counter, v: u64) {
    c.inner().store(v, Ordering::Relaxed);
}

fn gauge(g: &Gauge, v: usize) {
    g.set(i64::try_from(v).unwrap_or(i64::MAX));
}

impl ReplicaMetrics {
    /// The metrics, registered in a new registry.
    pub(crate) fn new() -> (ReplicaMetrics, Registry) {
        let mut r = Registry::default();
        let m = ReplicaMetrics {
            reads: Counter::default(),
            votes: Family::default(),
            committed: Counter::default(),
            aborted: Counter::default(),
            fallback_adoptions: Counter::default(),
            supplied: Counter::default(),
            inquiries: Counter::default(),
            long_reads: Counter::default(),
            unapplied_sql_commits: Counter::default(),
            reply_batches_signed: Counter::default(),
            replies_signed: Counter::default(),
            signature_cache_hits: Counter::default(),
            signature_cache_misses: Counter::default(),
            rejected: Family::default(),
            transport_rejected: Family::default(),
            input_batch_messages: Histogram::new(exponential_buckets(1.0, 2.0, 9)),
            batch_duration: Histogram::new(exponential_buckets(0.000_1, 2.0, 16)),
            inbound_queue: Gauge::default(),
            client_connections: Gauge::default(),
            peer_links: Gauge::default(),
            txn_records: Gauge::default(),
            undecided_below_watermark: Gauge::default(),
            gc_queue: Gauge::default(),
            row_keys: Gauge::default(),
            row_versions: Gauge::default(),
            kv_keys: Gauge::default(),
            kv_versions: Gauge::default(),
            gc_watermark: Gauge::default(),
            last_commit: Gauge::default(),
            committed_seen: AtomicU64::new(u64::MAX),
        };
        r.register(
            "pistou_build",
            "The pistou version this process runs",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        r.register("pistou_replica_reads", "Reads (point and range) this replica answered", m.reads.clone());
        r.register("pistou_replica_votes", "Prepare (ST1) votes this replica cast, by vote", m.votes.clone());
        r.register(
            "pistou_replica_transactions_committed",
            "Transactions whose commit decision this replica applied",
            m.committed.clone(),
        );
        r.register(
            "pistou_replica_transactions_aborted",
            "Transactions whose abort decision this replica applied",
            m.aborted.clone(),
        );
        r.register(
            "pistou_replica_fallback_adoptions",
            "Decisions adopted from a fallback leader (Basil section 5)",
            m.fallback_adoptions.clone(),
        );
        r.register(
            "pistou_replica_supplied_transactions",
            "Transactions this replica lacked and applied from a peer's SUPPLY",
            m.supplied.clone(),
        );
        r.register(
            "pistou_replica_inquiries",
            "SYNCs sent to learn a decision this replica missed",
            m.inquiries.clone(),
        );
        r.register(
            "pistou_replica_long_reads",
            "Range reads that ran on the worker thread past their inline slice of work",
            m.long_reads.clone(),
        );
        r.register(
            "pistou_replica_unapplied_sql_commits",
            "Committed SQL transactions this replica could not apply (should stay 0)",
            m.unapplied_sql_commits.clone(),
        );
        r.register(
            "pistou_replica_reply_batches_signed",
            "Merkle batches of replies signed with one signature",
            m.reply_batches_signed.clone(),
        );
        r.register(
            "pistou_replica_replies_signed",
            "Replies signed (inside batches; replies / batches is the mean batch size)",
            m.replies_signed.clone(),
        );
        r.register(
            "pistou_replica_signature_cache_hits",
            "Replica signatures accepted from the verified-batch-root cache without an ed25519 check",
            m.signature_cache_hits.clone(),
        );
        r.register(
            "pistou_replica_signature_cache_misses",
            "Replica signatures that needed an ed25519 verification (whatever its outcome)",
            m.signature_cache_misses.clone(),
        );
        r.register(
            "pistou_replica_rejected_messages",
            "Protocol messages dropped by the replica, by reason",
            m.rejected.clone(),
        );
        r.register(
            "pistou_replica_transport_rejections",
            "Connections or frames dropped by the transport, by reason",
            m.transport_rejected.clone(),
        );
        r.register(
            "pistou_replica_input_batch_messages",
            "Client messages handled together in one driver batch (one signature batch)",
            m.input_batch_messages.clone(),
        );
        r.register_with_unit(
            "pistou_replica_batch_duration",
            "Time to handle one batch of client messages: checks, execution, signing, log sync",
            Unit::Seconds,
            m.batch_duration.clone(),
        );
        r.register(
            "pistou_replica_inbound_queue_depth",
            "Messages waiting between the connections and the replica",
            m.inbound_queue.clone(),
        );
        r.register(
            "pistou_replica_connections",
            "Open inbound connections (clients and peer replicas)",
            m.client_connections.clone(),
        );
        r.register("pistou_replica_peer_links", "Outgoing links to other replicas", m.peer_links.clone());
        r.register(
            "pistou_replica_transaction_records",
            "Transaction records held (all states)",
            m.txn_records.clone(),
        );
        r.register(
            "pistou_replica_undecided_below_watermark",
            "Undecided transaction records kept below the garbage-collection watermark",
            m.undecided_below_watermark.clone(),
        );
        r.register(
            "pistou_replica_gc_queue_records",
            "Transaction records waiting for the garbage-collection watermark to pass them",
            m.gc_queue.clone(),
        );
        r.register("pistou_replica_row_keys", "SQL row store: primary keys", m.row_keys.clone());
        r.register(
            "pistou_replica_row_versions",
            "SQL row store: row versions, deletions included",
            m.row_versions.clone(),
        );
        r.register("pistou_replica_kv_keys", "Key-value keys with any state", m.kv_keys.clone());
        r.register(
            "pistou_replica_kv_versions",
            "Key-value versions held, committed and prepared",
            m.kv_versions.clone(),
        );
        r.register_with_unit(
            "pistou_replica_gc_watermark_timestamp",
            "Garbage-collection watermark (Unix time): older reads and new transactions are refused",
            Unit::Seconds,
            m.gc_watermark.clone(),
        );
        r.register_with_unit(
            "pistou_replica_last_commit_timestamp",
            "When this process last saw its committed count grow (Unix time, runtime clock; 0: not since it started)",
            Unit::Seconds,
            m.last_commit.clone(),
        );
        (m, r)
    }

    /// Copies the replica's running totals in (cheap: a few dozen numbers). `now_us` is the
    /// runtime's clock (microseconds since the Unix epoch), recorded as the last commit's time
    /// when the committed count grew since the last publication.
    pub(crate) fn publish_counters(
        &self,
        now_us: u64,
        replica: &Replica,
        net: &NetCounters,
        inbound_queue: usize,
        connections: usize,
        peers: usize,
    ) {
        let s = replica.stats();
        set(&self.reads, s.reads);
        set(&self.votes.get_or_create(&[("vote", "commit")]), s.votes_commit);
        set(&self.votes.get_or_create(&[("vote", "abort")]), s.votes_abort);
        set(&self.committed, s.commits_applied);
        let seen = self.committed_seen.swap(s.commits_applied, Ordering::Relaxed);
        if seen != u64::MAX && s.commits_applied > seen {
            self.last_commit.set(now_us as f64 / 1e6);
        }
        set(&self.aborted, s.aborts_applied);
        set(&self.fallback_adoptions, s.fallback_adoptions);
        set(&self.supplied, s.supplied);
        set(&self.inquiries, s.inquiries);
        set(&self.long_reads, s.long_reads);
        set(&self.unapplied_sql_commits, s.unapplied_sql_commits);
        set(&self.reply_batches_signed, s.batches_signed);
        set(&self.replies_signed, s.replies_signed);
        let (hits, misses) = replica.verify_cache_counts();
        set(&self.signature_cache_hits, hits);
        set(&self.signature_cache_misses, misses);
        for (reason, count) in replica.rejections().iter() {
            set(&self.rejected.get_or_create(&[("reason", reason.as_str())]), count);
        }
        for reason in NetReason::ALL {
            let count = net.count(reason);
            // Reasons appear once they happened: a scrape lists what was seen.
            if count > 0 {
                set(&self.transport_rejected.get_or_create(&[("reason", reason.as_str())]), count);
            }
        }
        gauge(&self.inbound_queue, inbound_queue);
        gauge(&self.client_connections, connections);
        gauge(&self.peer_links, peers);
    }

    /// Storage and garbage-collection figures (a pass over the replica's state).
    pub(crate) fn publish_storage(&self, replica: &Replica) {
        let f = replica.footprint();
        gauge(&self.txn_records, f.txn_records);
        gauge(&self.undecided_below_watermark, f.undecided_below_watermark);
        gauge(&self.gc_queue, f.gc_queue);
        gauge(&self.row_keys, f.row_keys);
        gauge(&self.row_versions, f.row_versions);
        gauge(&self.kv_keys, f.keys);
        gauge(&self.kv_versions, f.committed_versions.saturating_add(f.prepared_versions));
        self.gc_watermark.set(replica.gc_watermark() as f64 / 1e6);
    }

    /// One batch of `messages` client messages took `seconds`.
    pub(crate) fn observe_batch(&self, messages: usize, seconds: f64) {
        self.input_batch_messages.observe(messages as f64);
        self.batch_duration.observe(seconds);
    }
}
