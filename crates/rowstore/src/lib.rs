//! # pistou-rowstore: the multi-version SQL row store of a replica
//!
//! A replica of a shard keeps SQL rows as versions written by transactions (Pesto, SOSP '25,
//! on Basil's MVTSO). A transaction T writes at its timestamp `ts_T`; its versions are first
//! *prepared* (T passed the concurrency-control check; tentatively visible), then *committed*
//! (decision certificate) or removed (T aborted). A writeback may also install T already
//! committed. [`RowStore`] is a plain deterministic data structure: no I/O, clocks,
//! randomness or threads; everything happens in explicit calls.
//!
//! ## Data layout
//!
//! Per table (`Table`), all ordered maps, so iteration order never depends on hashing:
//!
//! - **rows**: `BTreeMap<pk, Chain>`; a chain is the key's versions ascending by
//!   `(ts, writer)`, each `{ ts, writer, state, row: Option<Arc<Row>> }` (`None` = deletion).
//! - **secondary indexes**: `BTreeMap<(index key, pk), count>` per index: one entry per index
//!   key that some stored version of `pk` has, counted so removing a version removes its entry
//!   exactly when no other version shares it. Reads re-check the visible version's index key.
//! - **write log**: `BTreeMap<(ts, writer), BTreeMap<pk, (state, row)>>`, what
//!   [`RowStore::writes_between`] and table versions read. The row `Arc` is the version's own.
//! - **gc queue**: `BTreeSet<(threshold, pk)>`: each key that will have GC work once the
//!   watermark passes `threshold`, queued exactly once.
//!
//! Per store: the **per-writer index** `BTreeMap<TxnId, (ts, table → {pk})>` listing exactly
//! the prepared versions, so [`RowStore::commit`]/[`RowStore::abort`] cost is proportional to
//! the writer's writes; and the **watermark** of the last [`RowStore::gc`]. Primary keys are
//! `ShortKey`s (inline up to 22 bytes, else a shared `Arc<[u8]>`), copied or shared by all of
//! these; rows are stored once and shared by version and log.
//! [`RowStore::verify_invariants`] audits that all of these agree.
//!
//! ## Reads
//!
//! [`pistou_types::Storage`] is implemented as the engine documents it: per key, the newest
//! version with `ts < at.ts` that `at.visible` accepts; deletions read as no row; index
//! scans report a row only at the entry of its visible version; rows are padded to the
//! reader's schema. The table version (§6.1.3) is the newest logged write below `at.ts`
//! that `at.visible` accepts: a reader has not "read past" a prepared write it cannot see,
//! so that write must stay inside its completeness window (Alg. 1 line 12).
//!
//! ## Garbage collection (Pesto App. B.3)
//!
//! Prepared writes below the watermark are refused; a committed one (certified: nothing is
//! left to decide) is installed, so a replica that missed it still holds current rows.
//! [`RowStore::gc`]`(w)` raises the watermark to `w`
//! and, for every key whose queued threshold is below `w`:
//!
//! 1. deletes every committed version older than the key's newest committed version below
//!    `w` (that one stays, so a reader at `ts >= w` still finds it);
//! 2. keeps prepared versions, whatever their timestamp: only `abort` removes them, and a
//!    commit makes them ordinary committed versions for the next gc;
//! 3. drops the key when only a committed deletion below `w` remains;
//!
//! then trims committed writes below `w` from the write logs (remembering the newest trimmed
//! timestamp, so table versions stay exact for reads at or above `w`), except the writes
//! within [`StoreLimits::log_keep_us`] of the table's newest committed write: a table that
//! has gone quiet tells readers that write as its table version, and their completeness
//! windows, which reach below it, must find every write they cover. Prepared writes stay
//! logged until decided; a commit below the log's trim point trims the write at once.
//!
//! *Why readers at `ts >= w` are unaffected*, given a read policy that accepts every committed
//! version (all of Pesto's do: latest, committed-only, snapshot proposals): the version such a
//! reader selects is the newest acceptable one below `ts`. The kept committed version `k` has
//! `k.ts < w <= ts` and is acceptable, so the reader selects `k` or something newer, never a
//! deleted version (all older than `k`). A dropped key's only version was a deletion below
//! `w`: the reader saw no row, and still sees none.
//!
//! A key's threshold is the second-oldest committed version's timestamp (from then on the
//! oldest is shadowed below the watermark), or a lone committed deletion's timestamp; keys
//! are re-queued on every change, so a gc call examines only keys with work: cost
//! O(tables + examined keys × their versions + log entries between the old and new watermark).
//!
//! **Version cap** (B.3 (ii)): when a key holds more than [`StoreLimits::version_cap`]
//! versions, its oldest committed versions are deleted (never the newest committed one, never
//! a prepared one), and [`RowStore::oldest_readable`] rises just past the oldest committed
//! survivor: by the argument above, reads from there on are unaffected; the protocol refuses
//! older ones. The cap is applied whenever a version is installed or committed. Capped
//! writes stay in the write log until the watermark passes them, because the completeness
//! check still has to see them, and so that a repeated insert of such a write is recognized
//! and not re-installed.
//!
//! What gc and the cap change for callers: [`RowStore::versions`] lists only surviving
//! versions, and for a dropped key [`RowStore::version_below`] returns `None` where the full
//! history held a committed deletion (both mean "no row"); [`RowStore::writes_between`] with
//! a lower bound below the watermark no longer reports committed writes there.
//!
//! ## Example
//!
//! ```
//! use pistou_core::{Timestamp, TxnId};
//! use pistou_rowstore::{RowStore, StoreLimits, VersionState};
//! use pistou_types::{Catalog, CatalogChange, Column, KeyRange, ReadAt, SqlType, Storage, TableSchema, Value, Write, WriteSet};
//!
//! let id = Column { name: "id".into(), ty: SqlType::Int, limits: Default::default(), nullable: false, default: None, generated: None, volatile_default: None };
//! let schema = TableSchema { name: "t".into(), id: 0, columns: vec![id], primary_key: vec![0], indexes: vec![], constraints: Default::default(), stored_as: None };
//! let (mut catalog, mut store) = (Catalog::new(), RowStore::new(StoreLimits::default()));
//! let change = CatalogChange::CreateTable(schema);
//! let before = catalog.clone();
//! catalog.apply(&change, &pistou_sql::EngineRules).unwrap();
//! store.apply_catalog_change(&before, &catalog, &change);
//!
//! let row = vec![Value::Int(7)];
//! let mut writes = WriteSet::default();
//! writes.put("t", catalog.table("t").unwrap().row_key(&row), Write::Upsert(row));
//! let (writer, ts) = (TxnId([1; 32]), Timestamp::at(10));
//! store.insert(writer, ts, &writes, VersionState::Prepared, &catalog).unwrap();
//!
//! let committed_only = |v: &pistou_types::Version| v.prepared_by.is_none();
//! let at = ReadAt { ts: Timestamp::at(11), visible: &committed_only };
//! let t = catalog.table("t").unwrap();
//! assert!(store.scan(t, &KeyRange::all(), &at, 100).unwrap().is_empty());
//! store.commit(&writer);
//! assert_eq!(store.scan(t, &KeyRange::all(), &at, 100).unwrap().len(), 1);
//! assert_eq!(store.writes_between("t", Timestamp::GENESIS, Timestamp::MAX).count(), 1);
//! store.gc(Timestamp::at(20));
//! assert_eq!(store.writes_between("t", Timestamp::GENESIS, Timestamp::MAX).count(), 0);
//! assert_eq!(store.table_version(t, &at), Some(ts));
//! ```
//!
//! ## Untrusted writes
//!
//! [`RowStore::insert`] validates the whole write set (tables, arity, types, limits, NOT NULL,
//! primary key encoding) before touching anything; see [`StoreError`]. Nothing in this crate
//! panics on any input.

#![warn(missing_docs)]
#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

mod audit;
mod chain;
mod error;
mod index;
mod keycheck;
mod limits;
mod log;
mod read;
mod refs;
mod store;
mod table;
mod timestamp;
mod validate;

pub use error::StoreError;
pub use limits::{GcStats, StoreLimits, StoreStats, DEFAULT_TOMBSTONE_KEEP_US};
pub use refs::{VersionRef, VersionState, WriteRef};
pub use store::RowStore;
pub use validate::check_writes;
