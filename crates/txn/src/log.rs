//! What a replica must never forget (SYSTEM.md principle 5: amnesia is a Byzantine fault).
//! Every state change that a restart must restore goes through [`ReplicaLog::append`] before
//! the replica acts on it, and the runtime makes the entries durable before it sends the
//! replies that depend on them. A restarted replica replays its entries in append order
//! (`Replica::recover`, `recovery.rs`). Each entry names the transaction it belongs to and
//! carries its metadata where replay may have to create the transaction's record.

use pistou_core::TxnId;
use pistou_wire::{AbortCert, CommitCert, Decision, TxnMeta, Vote};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogEntry {
    /// The ST1 vote, cast once (with the metadata it was cast on).
    Voted {
        meta: Arc<TxnMeta>,
        vote: Vote,
    },
    /// A decision logged from ST2 (view 0) or adopted from a fallback leader (view > 0).
    Decision {
        txn: TxnId,
        meta: Arc<TxnMeta>,
        decision: Decision,
        view: u64,
    },
    /// A new current view in the fallback (of a transaction an earlier entry made known).
    View {
        txn: TxnId,
        view: u64,
    },
    Committed {
        meta: Arc<TxnMeta>,
        cert: Arc<CommitCert>,
    },
    Aborted {
        txn: TxnId,
        meta: Arc<TxnMeta>,
        cert: Arc<AbortCert>,
    },
}

impl LogEntry {
    /// The transaction the entry belongs to (hashes the metadata for `Voted` and `Committed`).
    pub fn txn(&self) -> TxnId {
        match self {
            LogEntry::Voted { meta, .. } | LogEntry::Committed { meta, .. } => meta.id(),
            LogEntry::Decision { txn, .. } | LogEntry::View { txn, .. } | LogEntry::Aborted { txn, .. } => *txn,
        }
    }
}

/// Where a replica's [`LogEntry`]s go. `append` may only buffer; the runtime calls `sync`
/// before it sends any reply produced since the previous `sync`.
pub trait ReplicaLog: Send {
    fn append(&mut self, entry: LogEntry);
    /// Makes every appended entry (and every `forget`) durable. An error is fatal: the
    /// replica's memory now holds promises that may not survive a crash, so the runtime
    /// stops it without sending the replies.
    fn sync(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Garbage collection dropped `txn`'s record: its entries are no longer needed (gc.rs).
    fn forget(&mut self, _txn: &TxnId) {}
}

/// The in-memory log: keeps every entry; clones share them (the simulator's disk, and tests
/// that read the entries back).
#[derive(Clone, Default)]
pub struct MemoryLog {
    /// Each entry with its transaction (`LogEntry::txn` hashes metadata: computed once).
    entries: Arc<std::sync::Mutex<Vec<(TxnId, LogEntry)>>>,
    /// Entries removed by `forget` so far.
    forgotten: Arc<std::sync::atomic::AtomicUsize>,
}

impl MemoryLog {
    pub fn entries(&self) -> Vec<LogEntry> {
        self.entries.lock().map(|e| e.iter().map(|(_, entry)| entry.clone()).collect()).unwrap_or_default()
    }

    /// Entries garbage collection removed so far.
    pub fn forgotten(&self) -> usize {
        self.forgotten.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl ReplicaLog for MemoryLog {
    fn append(&mut self, entry: LogEntry) {
        if let Ok(mut e) = self.entries.lock() {
            e.push((entry.txn(), entry));
        }
    }

    fn forget(&mut self, txn: &TxnId) {
        if let Ok(mut e) = self.entries.lock() {
            let before = e.len();
            e.retain(|(t, _)| t != txn);
            self.forgotten.fetch_add(before - e.len(), std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// No log: the replica's memory is its only copy, and a restarted replica has forgotten
/// everything (it then counts against f). For in-memory clusters and benchmarks.
pub struct DiscardLog;

impl ReplicaLog for DiscardLog {
    fn append(&mut self, _entry: LogEntry) {}
}
