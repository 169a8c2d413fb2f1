//! Byzantine clients in SQL scenarios (the `accounts` workload): their transactions read the
//! table's catalog and write well-formed `accounts` rows, so that replicas prepare them and
//! correct clients' transactions meet them (stall, equivocation, partial ST1, future
//! timestamps). Those a correct replica committed are replayed by the SQL oracle as upserts.

use crate::sql_workload::{SqlTxnLog, StatementLog};
use pistou_adversary::TxnShaper;
use pistou_core::sql_keys::{catalog_key, key_kind, row_key, KeyKind};
use pistou_core::{ShardId, Timestamp};
use pistou_sql::{Row, Value};
use pistou_txn::SqlOutput;
use pistou_wire::{Decision, ReadEntry, TxnMeta, WriteEntry};
use rand::Rng;
use std::sync::{Arc, Mutex};

/// Rows of `accounts` the Byzantine transactions overwrite (the setup creates ids 0..8).
const IDS: i64 = 8;

const UPSERT: &str =
    "INSERT INTO accounts VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, balance = excluded.balance";

/// The catalog version of `accounts`' shard once the table exists, shared with the shaper.
pub type CatalogCell = Arc<Mutex<Option<(ShardId, Timestamp)>>>;

/// Transactions that read the catalog at the version in `cell` and overwrite one row.
pub fn shaper(cell: CatalogCell) -> TxnShaper {
    Box::new(move |rng| {
        let (shard, version) = (*cell.lock().ok()?)?;
        let id = rng.gen_range(0..IDS);
        let key = row_key("accounts", &pistou_sql::keycode::encode_key([&Value::Int(id)]))?;
        let row: Row = vec![Value::Int(id), Value::Text("byzantine".into()), Value::Int(rng.gen_range(0..1_000))];
        let value = postcard::to_allocvec(&row).ok()?;
        Some((vec![ReadEntry { key: catalog_key(shard), version }], vec![WriteEntry { key, value: Some(value) }]))
    })
}

/// The newest committed catalog version of `shard` among `committed`.
pub fn catalog_version<'m>(committed: impl Iterator<Item = &'m TxnMeta>, shard: ShardId) -> Option<Timestamp> {
    let key = catalog_key(shard);
    committed.filter(|m| m.write_of(&key).is_some()).map(|m| m.ts).max()
}

/// A committed Byzantine transaction as the oracle replays it: one upsert per row written.
pub fn replay_log(meta: &TxnMeta) -> Result<Option<SqlTxnLog>, String> {
    let mut statements = Vec::new();
    for w in &meta.write_set {
        let KeyKind::Row { table, .. } = key_kind(&w.key) else { continue };
        if table != "accounts" {
            return Err(format!("a Byzantine transaction wrote table {table}, which the oracle cannot replay"));
        }
        let Some(bytes) = &w.value else { return Err("a Byzantine transaction deleted a row, which the oracle cannot replay".into()) };
        let row: Row = postcard::from_bytes(bytes).map_err(|e| format!("undecodable Byzantine row: {e}"))?;
        let output = SqlOutput::Affected { command: "INSERT", count: 1, returning: None };
        statements.push(StatementLog { sql: UPSERT.to_string(), params: row, output });
    }
    if statements.is_empty() {
        return Ok(None);
    }
    Ok(Some(SqlTxnLog { client: usize::MAX, ts: meta.ts, statements, decision: Some(Decision::Commit), id: Some(meta.id()) }))
}
