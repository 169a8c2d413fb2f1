//! Replica side of Pesto's range read (§5.5 step 2) and reconnaissance writes (§5.2):
//! execute the statement on the local state at ts and report Q-RES, Q-READ, Q-DEP, Q-PRED
//! and SS-VOTE.

use super::SqlReplica;
use pistou_core::sql_keys::{key_kind, row_key, row_table, KeyKind};
use pistou_core::{ClusterConfig, ShardId, Timestamp, TxnId};
use pistou_rowstore::{RowStore, VersionState};
use pistou_sql::{Access, ExecContext, Output, ReadAt, ScanRead, SqlError, SqlState, Write, WriteSet};
use pistou_sql::{Catalog, Engine, Interrupt, Prepared, Storage};
use pistou_wire::{ActiveRead, PredicateRead, QueryOutput, RangeRead, RangeResult, WriteEntry};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Most buffered writes a range read may carry.
pub(crate) const MAX_PENDING_WRITES: usize = pistou_wire::MAX_TXN_OPS;
/// Most recent writes per scanned table examined for active-negative versions (App. B.5.1).
/// The SS-VOTE is a freshness hint, not a safety mechanism, so a bound is harmless.
pub(crate) const MAX_ACTIVE_NEGATIVE_SCAN: usize = 1_024;

fn sql_err(state: SqlState, msg: impl Into<String>) -> SqlError {
    SqlError::new(state, msg.into())
}

/// A range read's statement, checked and planned against the catalog it names.
pub(crate) struct Planned {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) prepared: Arc<Prepared>,
}

/// What one execution of a range read produced: the reply's result, the versions read
/// (their writers vote), the active-negative writers, and the table versions reported
/// (the monotonicity bound, §6.1.3).
pub(crate) struct Ran {
    pub(crate) result: RangeResult,
    versions: Vec<Timestamp>,
    negative: Vec<TxnId>,
    pub(crate) reported: Vec<(String, Timestamp)>,
}

impl Ran {
    /// The SS-VOTE: writers of the versions read (`owner` maps a version's timestamp to
    /// its writer) and active-negative writers. SS-VOTEs feed the next snapshot proposal,
    /// which only an eager round's votes build (a failed snapshot round starts over with an
    /// eager one); and a snapshot round reads committed versions, so there is no dependency
    /// for a vote to vouch for.
    pub(crate) fn ss_vote(&self, snapshot_round: bool, owner: impl Fn(Timestamp) -> Option<TxnId>) -> Vec<TxnId> {
        if snapshot_round {
            return Vec::new();
        }
        let votes = self.versions.iter().filter_map(|v| owner(*v)).chain(self.negative.iter().copied());
        votes.collect::<BTreeSet<_>>().into_iter().collect()
    }
}

/// Everything executing a range read reads: the rows (the replica's store or a snapshot
/// of it), and, per table, the oldest prepared write range reads skip.
pub(crate) struct RangeRun<'a> {
    pub(crate) store: &'a RowStore,
    pub(crate) config: &'a ClusterConfig,
    pub(crate) shard: ShardId,
    pub(crate) engine: &'a Engine,
    pub(crate) table_version_outlier_us: u64,
    pub(crate) oldest_skipped: &'a dyn Fn(&str) -> Option<Timestamp>,
}

impl SqlReplica {
    /// The checks of a range read against this replica's catalogs, and its plan.
    pub(crate) fn plan_range(&self, req: &RangeRead) -> Result<Planned, SqlError> {
        if req.ts < self.store.watermark() {
            return Err(sql_err(SqlState::SnapshotTooOld, "read timestamp is below the garbage-collection watermark"));
        }
        let catalog = self.catalog_at(req.catalog_version).cloned().ok_or_else(|| {
            sql_err(
                SqlState::SerializationFailure,
                "the schema version this statement was planned against is not known here",
            )
        })?;
        if self.catalog_below(req.ts).0 != req.catalog_version {
            return Err(sql_err(SqlState::SerializationFailure, "the schema changed since this statement was planned"));
        }
        let prepared = self.engine.prepare(&catalog, &req.sql)?;
        if req.sequences.len() > pistou_sql::sequence::MAX_STATEMENT_SEQUENCES {
            return Err(sql_err(SqlState::ProgramLimitExceeded, "too many sequences in one statement"));
        }
        Ok(Planned { catalog, prepared })
    }

    /// Executes `req` at `req.ts` over committed versions here and now, within `interrupt`,
    /// and records the table versions it reports.
    ///
    /// Why not prepared versions, as Pesto allows: a prepared version that makes a row *fail*
    /// the predicate leaves no trace in Q-READ (only active rows are reported), so no
    /// dependency is recorded; if its writer then aborts, the row's committed version — old,
    /// below the completeness window — satisfied the predicate and the result missed it. The
    /// simulator's SQL oracle found exactly this. Reading committed versions only is safe by
    /// the semantic check: a prepared write the read did not see is in the completeness window
    /// at prepare time (abort, or a dependency if risky), or checked against this reader's
    /// predicate when it prepares later (Alg. 1 lines 17–19). Point reads still read prepared
    /// versions (Basil), where the version read is always recorded with its dependency.
    pub(crate) fn range_read(
        &mut self,
        config: &ClusterConfig,
        req: &RangeRead,
        interrupt: Interrupt,
    ) -> Result<Ran, SqlError> {
        let planned = self.plan_range(req)?;
        let ts = req.ts;
        let oldest_skipped = |table: &str| self.oldest_skipped(table, ts);
        let run = RangeRun {
            store: &self.store,
            config,
            shard: self.shard,
            engine: &self.engine,
            table_version_outlier_us: self.params.table_version_outlier_us,
            oldest_skipped: &oldest_skipped,
        };
        let ran = run.execute(req, &planned, interrupt)?;
        for (table, version) in &ran.reported {
            self.note_reported(table, *version);
        }
        Ok(ran)
    }

    /// The table version a range read of `table` at `ts` would report here now (see
    /// `RangeRun::execute`): what a replica reserves before the read runs elsewhere.
    pub(crate) fn reportable_version(&self, catalog: &Catalog, table: &str, ts: Timestamp) -> Option<Timestamp> {
        let schema = catalog.stored(table)?;
        let committed = |v: &pistou_sql::Version| v.prepared_by.is_none();
        let newest =
            self.store.table_version(schema, &ReadAt { ts, visible: &committed }).unwrap_or(Timestamp::GENESIS);
        Some(lowered_below_skipped(newest, self.oldest_skipped(table, ts)))
    }

    /// The engine, shared with statements running elsewhere.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

/// A reported table version lowered below the oldest prepared write the read skipped
/// (§6.1.3, "Accounting for snapshots"): such a write may commit later, and the completeness
/// window, which starts at the table version, must contain it.
fn lowered_below_skipped(newest: Timestamp, skipped: Option<Timestamp>) -> Timestamp {
    match skipped {
        Some(skipped) => newest.min(Timestamp::at(skipped.time)),
        None => newest,
    }
}

impl RangeRun<'_> {
    /// The statement's result over `self.store` at `req.ts`.
    pub(crate) fn execute(&self, req: &RangeRead, planned: &Planned, interrupt: Interrupt) -> Result<Ran, SqlError> {
        let catalog = &planned.catalog;
        let prepared = &planned.prepared;
        let pending = self.pending_writes(req, catalog, prepared.tables())?;
        let committed = |v: &pistou_sql::Version| v.prepared_by.is_none();
        let ctx = ExecContext {
            storage: self.store,
            at: ReadAt { ts: req.ts, visible: &committed },
            pending: &pending,
            sequences: &req.sequences,
            random_seed: req.random_seed,
            lastval: req.lastval.as_ref(),
        };
        let exec = self.engine.execute_interruptible(catalog, prepared, &req.params, &ctx, interrupt)?;
        let touched = exec.reads.scans.iter().map(|s| s.table()).chain(exec.writes.tables.keys().map(String::as_str));
        for table in touched {
            if self.config.table_shard(table) != self.shard {
                return Err(sql_err(
                    SqlState::FeatureNotSupported,
                    format!("table \"{table}\" is on another shard; a statement reads one shard (cross-shard queries are not supported yet)"),
                ));
            }
        }
        let output = match exec.output {
            Output::Rows { rows, .. } => QueryOutput::Rows(rows),
            Output::Affected { count, returning, .. } => {
                QueryOutput::Affected { count, returning: returning.map(|(_, rows)| rows).unwrap_or_default() }
            }
            Output::Catalog(_) | Output::Transaction(_) => {
                return Err(sql_err(
                    SqlState::FeatureNotSupported,
                    "schema and transaction statements are not range reads",
                ));
            }
        };
        // Q-READ by key: (version, its writer if only prepared).
        let mut reads: BTreeMap<Vec<u8>, (Timestamp, Option<TxnId>)> = BTreeMap::new();
        let mut predicates = BTreeSet::new();
        let mut versions = Vec::new();
        let mut negative = Vec::new();
        let mut reported = Vec::new();
        for scan in &exec.reads.scans {
            let table = scan.table();
            let table_id = table_id(catalog, table)?;
            for row in &scan.rows {
                let key = row_key(table, table_id, &row.key)
                    .ok_or_else(|| sql_err(SqlState::InternalError, "bad table name"))?;
                versions.push(row.version.ts);
                reads.insert(key, (row.version.ts, row.version.prepared_by));
            }
            if let Some(pk) = &scan.absent_key {
                // The statement relied on the key having no row: it read the newest version
                // (a deletion) or, if there is none, the key's genesis.
                let key =
                    row_key(table, table_id, pk).ok_or_else(|| sql_err(SqlState::InternalError, "bad table name"))?;
                let seen = self.store.version_below(table, pk, req.ts, |v| v.state == VersionState::Committed);
                let (version, prepared_by) = match seen {
                    Some(v) => (v.ts, (v.state == VersionState::Prepared).then_some(v.writer)),
                    None => (Timestamp::GENESIS, None),
                };
                if version != Timestamp::GENESIS {
                    versions.push(version);
                }
                reads.entry(key).or_insert((version, prepared_by));
            }
            // A point access is fully covered by its read (or absence); other scans carry a
            // predicate (§6.1.1).
            if scan.access != Access::Point {
                // Votes only: a snapshot round's replies carry none (see `Ran::ss_vote`).
                if req.snapshot.is_none() {
                    negative.extend(self.active_negative(scan, table_id, &reads, req.ts));
                }
                let newest = scan.table_version.unwrap_or(Timestamp::GENESIS);
                let table_version = lowered_below_skipped(newest, (self.oldest_skipped)(table));
                reported.push((table.to_string(), table_version));
                predicates.insert((scan.predicate.to_wire()?, table_version));
            }
        }
        let writes = write_entries(&exec.writes, catalog)?;
        // Each predicate carries the keys of its table this statement accounted for: its
        // active rows and the transaction's own earlier writes, which shadow any other
        // version of their key (and which the transaction's own reads already justify).
        let own_writes: BTreeSet<&Vec<u8>> = req.pending.iter().map(|w| &w.key).collect();
        let predicates = predicates
            .into_iter()
            .map(|(predicate, table_version)| {
                let table = Some(predicate.table.as_str());
                let covered: BTreeSet<&Vec<u8>> =
                    reads.keys().chain(own_writes.iter().copied()).filter(|k| row_table(k) == table).collect();
                let active = covered.into_iter().cloned().collect();
                PredicateRead { predicate, table_version, active }
            })
            .collect();
        let reads =
            reads.into_iter().map(|(key, (version, prepared_by))| ActiveRead { key, version, prepared_by }).collect();
        let result = RangeResult {
            output,
            writes,
            reads,
            predicates,
            sequences_used: exec.sequences_used,
            lastval: exec.lastval,
        };
        Ok(Ran { result, versions, negative, reported })
    }

    /// Active-negative versions (App. B.5.1): recent committed writes that made a row stop
    /// satisfying `predicate` (the version before satisfied it, the write does not). A
    /// replica that has such a write reports no active row for the key, while one that lacks
    /// it reports the older, active version; voting for the writer lets the snapshot include
    /// it, so the lagging replica fetches it instead of the proposal freezing the stale state.
    /// Examines the newest `MAX_ACTIVE_NEGATIVE_SCAN` writes within the table-version outlier
    /// bound below `ts` (older writes have had time to reach every correct replica) whose
    /// key lies in the scan's primary-key ranges: no version of a key outside them satisfies
    /// the predicate, and the write log finds the writes to a narrow range by key
    /// (`RowStore::writes_between_in`) without walking the window.
    fn active_negative<V>(
        &self,
        scan: &ScanRead,
        table_id: u64,
        active: &BTreeMap<Vec<u8>, V>,
        ts: Timestamp,
    ) -> Vec<TxnId> {
        let (table, predicate) = (scan.table(), &scan.predicate);
        let lo = Timestamp::at(ts.time.saturating_sub(self.table_version_outlier_us)).max(self.store.watermark());
        let committed = |v: &pistou_rowstore::VersionRef| v.state == VersionState::Committed;
        let is_committed = |w: &pistou_rowstore::WriteRef| w.state == VersionState::Committed;
        let recent: Vec<_> = match &scan.pk_ranges {
            Some(ranges) => {
                self.store.writes_between_in(table, lo, ts, ranges).into_iter().filter(is_committed).collect()
            }
            None => self.store.writes_between(table, lo, ts).filter(is_committed).collect(),
        };
        let mut out = Vec::new();
        for w in recent.iter().rev().take(MAX_ACTIVE_NEGATIVE_SCAN) {
            if w.row.is_some_and(|row| predicate.may_match(row)) {
                continue; // satisfies P: if read, it is active and votes already
            }
            // Cheapest test that usually fails first: did the version before satisfy P?
            let before = self.store.version_below(table, w.key, w.ts, committed);
            if !before.is_some_and(|v| v.row.is_some_and(|row| predicate.may_match(row))) {
                continue;
            }
            if row_key(table, table_id, w.key).is_some_and(|k| active.contains_key(&k)) {
                continue;
            }
            let newest = self.store.version_below(table, w.key, ts, committed);
            if newest.is_some_and(|v| v.ts == w.ts && v.writer == w.writer) {
                out.push(w.writer); // not overwritten since (else the newer write decides)
            }
        }
        out
    }

    /// The transaction's buffered writes to `tables` (those the statement reads or writes;
    /// the engine looks at no other), as the engine's write set (rows decoded). A
    /// transaction's buffered writes span every table it wrote, so decoding only these
    /// saves most of the work on a statement late in a transaction.
    fn pending_writes(&self, req: &RangeRead, catalog: &Catalog, tables: &[String]) -> Result<WriteSet, SqlError> {
        if req.pending.len() > MAX_PENDING_WRITES {
            return Err(sql_err(SqlState::ProgramLimitExceeded, "too many buffered writes"));
        }
        let mut pending = WriteSet::default();
        for w in &req.pending {
            let KeyKind::Row { table, table_id, pk } = key_kind(&w.key) else {
                return Err(sql_err(SqlState::ProtocolViolation, "buffered write to a non-row key"));
            };
            if self.config.table_shard(table) != self.shard || !tables.iter().any(|t| t == table) {
                continue;
            }
            if catalog.stored(table).map(|t| t.id) != Some(table_id) {
                return Err(sql_err(
                    SqlState::ProtocolViolation,
                    "buffered write to a table this schema does not have",
                ));
            }
            let write = match &w.value {
                Some(bytes) => Write::Upsert(
                    postcard::from_bytes(bytes)
                        .map_err(|_| sql_err(SqlState::ProtocolViolation, "undecodable buffered row"))?,
                ),
                None => Write::Delete,
            };
            pending.put(table, pk.to_vec(), write);
        }
        Ok(pending)
    }
}

/// The identity of `table` in `catalog`.
fn table_id(catalog: &Catalog, table: &str) -> Result<u64, SqlError> {
    catalog
        .stored(table)
        .map(|t| t.id)
        .ok_or_else(|| sql_err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist")))
}

/// A write set as row-key writes (tables named as in `catalog`), sorted by key.
pub fn write_entries(writes: &WriteSet, catalog: &Catalog) -> Result<Vec<WriteEntry>, SqlError> {
    let mut out = Vec::with_capacity(writes.len());
    for (table, rows) in &writes.tables {
        let table_id = table_id(catalog, table)?;
        for (pk, write) in rows {
            let key = row_key(table, table_id, pk).ok_or_else(|| sql_err(SqlState::InternalError, "bad table name"))?;
            let value = match write {
                Write::Upsert(row) => Some(
                    postcard::to_allocvec(row)
                        .map_err(|e| sql_err(SqlState::InternalError, format!("row encoding: {e}")))?,
                ),
                Write::Delete => None,
            };
            out.push(WriteEntry { key, value });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}
