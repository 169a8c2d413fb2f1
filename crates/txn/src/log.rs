//! What a replica must never forget (SYSTEM.md principle 5: amnesia is a Byzantine fault).
//! Every state change that a restart must restore goes through [`ReplicaLog::append`] before
//! the replica acts on it. Today the log lives in memory ([`MemoryLog`]); the durability work
//! implements the same trait with a write-ahead log and replays it on start.

use pistou_core::TxnId;
use pistou_wire::{AbortCert, CommitCert, Decision, TxnMeta, Vote};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    /// The ST1 vote, cast once (with the metadata it was cast on).
    Voted { meta: Arc<TxnMeta>, vote: Vote },
    /// A decision logged from ST2 (view 0) or adopted from a fallback leader (view > 0).
    Decision { txn: TxnId, decision: Decision, view: u64 },
    /// A new current view in the fallback.
    View { txn: TxnId, view: u64 },
    Committed { meta: Arc<TxnMeta>, cert: Arc<CommitCert> },
    Aborted { txn: TxnId, cert: Arc<AbortCert> },
}

pub trait ReplicaLog: Send {
    fn append(&mut self, entry: LogEntry);
}

/// The in-memory log: keeps every entry; clones share them (tests read them back).
#[derive(Clone, Default)]
pub struct MemoryLog {
    entries: Arc<std::sync::Mutex<Vec<LogEntry>>>,
}

impl MemoryLog {
    pub fn entries(&self) -> Vec<LogEntry> {
        self.entries.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl ReplicaLog for MemoryLog {
    fn append(&mut self, entry: LogEntry) {
        if let Ok(mut e) = self.entries.lock() {
            e.push(entry);
        }
    }
}

/// The default until the write-ahead log exists: the replica's in-memory state is the only
/// copy, and a restarted replica has forgotten everything (it then counts against f).
pub struct DiscardLog;

impl ReplicaLog for DiscardLog {
    fn append(&mut self, _entry: LogEntry) {}
}
