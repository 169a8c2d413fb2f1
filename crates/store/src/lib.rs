//! A replica's durable write-ahead log (issue #27): the [`LogEntry`]s that
//! [`pistou_txn::ReplicaLog`] receives, kept in an embedded [redb] database in the replica's
//! own data directory, read back in append order on start for replay.
//!
//! - [`ReplicaLog::append`] only buffers the entry and gives it the next sequence number;
//!   [`DurableLog::sync`] writes every buffered entry (and every pending [`DurableLog::forget`])
//!   in one redb transaction with one durable commit. The runtime calls it once per driver
//!   batch, before sending the replies that depend on the batch: group commit, one fsync per
//!   batch.
//! - Each stored value is `[format][BLAKE3(seq ‖ payload)][payload]`, the payload being the
//!   entry's postcard encoding. [`DurableLog::open`] verifies every entry and fails naming
//!   the file and the sequence number of the first bad one: nothing is skipped or dropped.
//! - [`DurableLog::forget`] deletes every entry of a transaction, so the disk stays bounded
//!   like the replica's memory. The index transaction → sequence numbers lives in memory and
//!   is rebuilt at open from the entries themselves.
//!
//! The choice of redb over fjall, with the measurements, is in docs/benchmarks.md ("Storage
//! engine") and docs/architecture.md.

use pistou_core::TxnId;
use pistou_txn::{LogEntry, ReplicaLog};
use pistou_wire::{AbortCert, CommitCert, Decision, TxnMeta, Vote};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database file inside a replica's data directory.
pub const FILE_NAME: &str = "log.redb";

/// The largest encoded entry accepted: a frame's limit on the wire
/// ([`pistou_wire::DEFAULT_MAX_FRAME_BYTES`]), since every entry comes from messages.
pub const MAX_ENTRY_BYTES: usize = pistou_wire::DEFAULT_MAX_FRAME_BYTES;

/// Sequence number → `[FORMAT][checksum][payload]`.
const ENTRIES: TableDefinition<u64, &[u8]> = TableDefinition::new("entries");
/// Bumped when what the entries hold changes shape, so a replica refuses an older log
/// instead of misreading it. 2: table schemas name their storage (ALTER TABLE RENAME).
/// 3: indexes record their columns' declared orders (DESC, NULLS FIRST), sequences their
/// storage names (ALTER SEQUENCE RENAME). 4: indexes record their expressions
/// (`CREATE INDEX i ON t (lower(e))`). 5: tables record the rules awaiting the check of
/// their older rows (`Constraints::unvalidated`).
const FORMAT: u8 = 5;
/// redb's page cache. The log is read once, at open, and otherwise only appended to, so a
/// large cache buys nothing; redb's default (1 GiB per database) would let each of a host's
/// replicas keep up to that much of its log resident.
const CACHE_BYTES: usize = 32 << 20;
const HEADER: usize = 1 + 32;

/// When [`DurableLog::sync`] makes entries durable: `storage.sync` in cluster.toml.
pub use pistou_core::SyncMode;

/// Under the unsafe [`SyncMode::None`], the longest stretch of commits without an fsync.
/// redb keeps a non-durable commit only until the process exits, so without a durable
/// commit now and then even a clean restart would lose everything.
pub const UNSAFE_SYNC_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    // The cause is part of the message and deliberately not an error `source`, so that
    // printing the chain does not repeat it.
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    /// The engine failed or refused the file (redb checks its own headers and page checksums).
    #[error("{path}: storage engine could not {op}: {cause}")]
    Engine { path: PathBuf, op: &'static str, cause: Box<redb::Error> },
    /// An entry failed its checksum or did not decode. Nothing is skipped: the operator must
    /// restore the file (or wipe the replica, which then counts against f).
    #[error("{path}: log entry {seq} is corrupt: {reason}")]
    Corrupt { path: PathBuf, seq: u64, reason: String },
    #[error("cannot encode a log entry: {0}")]
    Encode(postcard::Error),
    #[error("log entry of {size} bytes exceeds the {max}-byte limit")]
    TooLarge { size: usize, max: usize },
    /// A previous `sync` or `append` failed; the log accepts nothing more, since the replica's
    /// memory holds an entry that is not durable.
    #[error("{path}: log is unusable after an earlier failure: {first}")]
    Failed { path: PathBuf, first: String },
}

fn checksum(seq: u64, payload: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(b"pistou-store-v1");
    h.update(&seq.to_be_bytes());
    h.update(payload);
    h.finalize()
}

fn encode(seq: u64, entry: LogEntry) -> Result<Vec<u8>, StoreError> {
    let payload = postcard::to_stdvec(&entry).map_err(StoreError::Encode)?;
    let size = HEADER + payload.len();
    if size > MAX_ENTRY_BYTES {
        return Err(StoreError::TooLarge { size, max: MAX_ENTRY_BYTES });
    }
    let mut v = Vec::with_capacity(size);
    v.push(FORMAT);
    v.extend_from_slice(checksum(seq, &payload).as_bytes());
    v.extend_from_slice(&payload);
    Ok(v)
}

fn decode(seq: u64, value: &[u8]) -> Result<LogEntry, String> {
    if value.len() < HEADER {
        return Err(format!("{} bytes, shorter than the {HEADER}-byte header", value.len()));
    }
    let (header, payload) = value.split_at(HEADER);
    if header[0] != FORMAT {
        return Err(format!(
            "log format {}, this build reads format {FORMAT} (written by another version of Pistou)",
            header[0]
        ));
    }
    if checksum(seq, payload).as_bytes() != &header[1..] {
        return Err("checksum mismatch".into());
    }
    postcard::from_bytes::<LogEntry>(payload).map_err(|e| format!("undecodable: {e}"))
}

/// A replica's durable log. See the crate documentation.
pub struct DurableLog {
    db: Database,
    path: PathBuf,
    sync: SyncMode,
    next_seq: u64,
    /// Appended, not yet written: (seq, txn, encoded value).
    pending: Vec<(u64, TxnId, Vec<u8>)>,
    /// Written entries to delete at the next `sync`.
    pending_deletes: Vec<u64>,
    /// Sequence numbers of each transaction's written entries.
    by_txn: HashMap<TxnId, Vec<u64>>,
    /// The first failure; once set, `sync` fails.
    failed: Option<String>,
    /// The last commit with an fsync (for [`SyncMode::None`]).
    last_durable: std::time::Instant,
    /// Commits since then that are not durable yet ([`SyncMode::None`]).
    undurable: bool,
}

impl DurableLog {
    /// Opens (or creates) the log in `dir` and returns it with every entry, in append order,
    /// for replay. Any entry failing its checksum or decoding is an error naming the file and
    /// the entry.
    pub fn open(dir: &Path, sync: SyncMode) -> Result<(DurableLog, Vec<LogEntry>), StoreError> {
        std::fs::create_dir_all(dir).map_err(|cause| StoreError::Io { path: dir.to_path_buf(), cause })?;
        let path = dir.join(FILE_NAME);
        let engine = |op: &'static str| {
            let path = path.clone();
            move |e: redb::Error| StoreError::Engine { path, op, cause: Box::new(e) }
        };
        let db = Database::builder().set_cache_size(CACHE_BYTES).create(&path).map_err(|e| engine("open")(e.into()))?;
        // Create the table on first open so that reads find it.
        let tx = db.begin_write().map_err(|e| engine("begin a write")(e.into()))?;
        tx.open_table(ENTRIES).map_err(|e| engine("open the table")(e.into()))?;
        tx.commit().map_err(|e| engine("commit")(e.into()))?;

        let mut entries = Vec::new();
        let mut by_txn: HashMap<TxnId, Vec<u64>> = HashMap::new();
        let mut next_seq = 0;
        {
            let tx = db.begin_read().map_err(|e| engine("begin a read")(e.into()))?;
            let table = tx.open_table(ENTRIES).map_err(|e| engine("open the table")(e.into()))?;
            for item in table.iter().map_err(|e| engine("read")(e.into()))? {
                let (k, v) = item.map_err(|e| engine("read")(e.into()))?;
                let seq = k.value();
                let entry =
                    decode(seq, v.value()).map_err(|reason| StoreError::Corrupt { path: path.clone(), seq, reason })?;
                by_txn.entry(entry.txn()).or_default().push(seq);
                entries.push(entry);
                next_seq = seq + 1;
            }
        }
        let log = DurableLog {
            db,
            path,
            sync,
            next_seq,
            pending: Vec::new(),
            pending_deletes: Vec::new(),
            by_txn,
            failed: None,
            last_durable: std::time::Instant::now(),
            undurable: false,
        };
        Ok((log, entries))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    /// Entries appended since the last successful `sync`.
    pub fn unsynced(&self) -> usize {
        self.pending.len()
    }

    /// Transactions with entries in the log (written or pending).
    pub fn txn_count(&self) -> usize {
        self.by_txn.len()
    }

    /// Writes every appended entry and every pending deletion in one transaction, committed
    /// with an fsync under [`SyncMode::Always`] (without one under the unsafe
    /// [`SyncMode::None`]). Replies that depend on appended entries go out only after this
    /// returns `Ok`. After an error the log stays failed.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if let Some(first) = &self.failed {
            return Err(StoreError::Failed { path: self.path.clone(), first: first.clone() });
        }
        if self.pending.is_empty() && self.pending_deletes.is_empty() {
            return Ok(());
        }
        let result = self.write_pending();
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
        }
        result
    }

    fn write_pending(&mut self) -> Result<(), StoreError> {
        let path = &self.path;
        let engine =
            |op: &'static str| move |e: redb::Error| StoreError::Engine { path: path.clone(), op, cause: Box::new(e) };
        let mut tx = self.db.begin_write().map_err(|e| engine("begin a write")(e.into()))?;
        let durable = match self.sync {
            SyncMode::Always => true,
            SyncMode::None => self.last_durable.elapsed() >= UNSAFE_SYNC_PERIOD,
        };
        let durability = if durable { redb::Durability::Immediate } else { redb::Durability::None };
        tx.set_durability(durability).map_err(|e| engine("set durability")(e.into()))?;
        {
            let mut table = tx.open_table(ENTRIES).map_err(|e| engine("open the table")(e.into()))?;
            for (seq, _, value) in &self.pending {
                table.insert(seq, value.as_slice()).map_err(|e| engine("insert")(e.into()))?;
            }
            for seq in &self.pending_deletes {
                table.remove(seq).map_err(|e| engine("delete")(e.into()))?;
            }
        }
        tx.commit().map_err(|e| engine("commit")(e.into()))?;
        self.undurable = !durable;
        if durable {
            self.last_durable = std::time::Instant::now();
        }
        for (seq, txn, _) in self.pending.drain(..) {
            self.by_txn.entry(txn).or_default().push(seq);
        }
        self.pending_deletes.clear();
        Ok(())
    }

    /// Deletes every entry of `txn` (garbage collection): unsynced ones at once, written ones
    /// at the next [`sync`](Self::sync). Until then a crash brings them back, which replay
    /// treats like a transaction not yet collected.
    pub fn forget(&mut self, txn: &TxnId) {
        self.pending.retain(|(_, t, _)| t != txn);
        if let Some(seqs) = self.by_txn.remove(txn) {
            self.pending_deletes.extend(seqs);
        }
    }
}

/// A clean stop keeps what the unsafe [`SyncMode::None`] has not made durable yet.
impl Drop for DurableLog {
    fn drop(&mut self) {
        if !self.undurable || self.failed.is_some() {
            return;
        }
        let result = self.db.begin_write().map_err(redb::Error::from).and_then(|mut tx| {
            // An empty durable commit makes the earlier non-durable ones durable.
            tx.set_durability(redb::Durability::Immediate).map_err(redb::Error::from)?;
            tx.commit().map_err(redb::Error::from)
        });
        if let Err(e) = result {
            eprintln!("{}: could not make the last entries durable on close: {e}", self.path.display());
        }
    }
}

impl ReplicaLog for DurableLog {
    fn sync(&mut self) -> Result<(), String> {
        DurableLog::sync(self).map_err(|e| e.to_string())
    }

    fn forget(&mut self, txn: &TxnId) {
        DurableLog::forget(self, txn)
    }

    /// Buffers the entry under the next sequence number; [`DurableLog::sync`] writes it. An
    /// entry that cannot be stored (too large) fails the log: the next `sync` returns the
    /// error.
    fn append(&mut self, entry: LogEntry) {
        if self.failed.is_some() {
            return;
        }
        let seq = self.next_seq;
        let txn = entry.txn();
        match encode(seq, entry) {
            Ok(value) => {
                self.next_seq += 1;
                self.pending.push((seq, txn, value));
            }
            Err(e) => self.failed = Some(e.to_string()),
        }
    }
}

/// One entry of each variant, of realistic sizes (for tests and the benchmark).
#[doc(hidden)]
pub fn sample_entries() -> Vec<LogEntry> {
    use pistou_core::{ClientId, ReplicaId, ShardId, Timestamp};
    use pistou_wire::{ReadEntry, ReplicaSigned, ShardVotes, St1Vote, St2Reply, WriteEntry};
    let mut out = Vec::new();
    for i in 0..8u64 {
        let ts = Timestamp { time: 1_000 + i, client: ClientId(i % 3), seq: i };
        let keys = 1 + (i as usize % 4) * 3;
        let meta = Arc::new(TxnMeta {
            ts,
            read_set: (0..keys)
                .map(|k| ReadEntry { key: format!("user{i:04}{k:03}").into_bytes(), version: Timestamp::GENESIS })
                .collect(),
            write_set: (0..keys)
                .map(|k| WriteEntry { key: format!("user{i:04}{k:03}").into_bytes(), value: Some(vec![i as u8; 100]) })
                .collect(),
            deps: Vec::new(),
            predicates: Vec::new(),
            late: i % 2 == 0,
            shards: vec![ShardId(0)],
        });
        let txn = meta.id();
        let signer = |index| ReplicaId { shard: ShardId(0), index };
        let votes = ShardVotes {
            shard: ShardId(0),
            votes: (0..6)
                .map(|r| ReplicaSigned { signer: signer(r), body: St1Vote { txn, vote: Vote::Commit }, sig: None })
                .collect(),
        };
        let st2 = (0..5)
            .map(|r| ReplicaSigned {
                signer: signer(r),
                body: St2Reply { txn, decision: Decision::Abort, view_decision: 1, view_current: 1 },
                sig: None,
            })
            .collect();
        out.push(LogEntry::Voted { meta: meta.clone(), vote: if i % 3 == 0 { Vote::Abort } else { Vote::Commit } });
        out.push(LogEntry::Decision { txn, meta: meta.clone(), decision: Decision::Commit, view: i });
        out.push(LogEntry::View { txn, view: i + 1 });
        if i % 2 == 0 {
            out.push(LogEntry::Committed { meta, cert: Arc::new(CommitCert::Fast(vec![votes])) });
        } else {
            out.push(LogEntry::Aborted { txn, meta, cert: Arc::new(AbortCert::Slow(st2)) });
        }
    }
    out
}
