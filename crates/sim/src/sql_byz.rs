//! Byzantine clients in SQL scenarios: their transactions read the catalog key of every shard
//! they write, at that shard's current catalog version, and write well-formed rows, so that
//! replicas prepare them and correct clients' transactions meet them (stall, equivocation,
//! partial ST1, future timestamps). In the `accounts` workload each writes one `accounts` row;
//! in the two-table workload (`accounts` and `ledger`, on two shards) one row of either table
//! or, in half of them, one row of each, so that Basil's cross-shard 2PC meets Byzantine
//! clients. Those a correct replica committed are replayed by the SQL oracle as upserts; in
//! the two-table workload they change the audited total, by exactly what the replay shows
//! (`crate::ledger_audit`).
//!
//! Rows are encoded as the engine stores them (`postcard` of the whole row, columns in schema
//! order), for the schema the setup creates: the scenario refuses Byzantine row writers
//! together with the two-table workload's schema changes, which add a column to `ledger`.

use crate::sql_workload::{SqlSpec, SqlTxnLog, StatementLog};
use pistou_core::sql_keys::{catalog_key, key_kind, row_key, KeyKind};
use pistou_core::{ClusterConfig, ShardId, Timestamp};
use pistou_sql::{Catalog, Row, Value};
use pistou_txn::{CatalogWrite, SqlOutput};
use pistou_wire::{Decision, ReadEntry, TxnMeta, WriteEntry};
use rand::{Rng, RngCore};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The client index of a replayed Byzantine transaction in the oracle's history.
pub const BYZANTINE_CLIENT: usize = usize::MAX;

/// Rows of `accounts` the Byzantine transactions overwrite (both workloads create ids 0..8).
const ACCOUNT_IDS: i64 = 8;

const UPSERT_ACCOUNT: &str =
    "INSERT INTO accounts VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, balance = excluded.balance";
const UPSERT_LEDGER: &str =
    "INSERT INTO ledger VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET account = excluded.account, amount = excluded.amount";

/// A table the Byzantine transactions write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance INT NOT NULL)`.
    Accounts,
    /// `ledger (id INT PRIMARY KEY, account INT NOT NULL, amount INT NOT NULL)`; ids are
    /// drawn from [0, `ids`), as the correct clients draw theirs.
    Ledger { ids: i64 },
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Accounts => "accounts",
            Table::Ledger { .. } => "ledger",
        }
    }

    fn random_row(self, rng: &mut dyn RngCore) -> Row {
        match self {
            Table::Accounts => {
                vec![
                    Value::Int(rng.gen_range(0..ACCOUNT_IDS)),
                    Value::Text("byzantine".into()),
                    Value::Int(rng.gen_range(0..1_000)),
                ]
            }
            Table::Ledger { ids } => {
                vec![
                    Value::Int(rng.gen_range(0..ids)),
                    Value::Int(rng.gen_range(0..ACCOUNT_IDS)),
                    Value::Int(rng.gen_range(0..50)),
                ]
            }
        }
    }

    /// The write of `row` (its first column is the primary key) to the table with identity
    /// `table_id`.
    fn write(self, table_id: u64, row: &Row) -> Option<WriteEntry> {
        let key = row_key(self.name(), table_id, &pistou_sql::keycode::encode_key([row.first()?]))?;
        Some(WriteEntry { key, value: Some(postcard::to_allocvec(row).ok()?) })
    }
}

/// The tables Byzantine transactions write in a workload.
pub fn tables(spec: &SqlSpec) -> Vec<Table> {
    if spec.ledger {
        vec![Table::Accounts, Table::Ledger { ids: spec.id_space }]
    } else {
        vec![Table::Accounts]
    }
}

/// A table with its identity, its shard and that shard's current catalog version.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub table: Table,
    pub table_id: u64,
    pub shard: ShardId,
    pub catalog: Timestamp,
}

/// The targets, once the scenario has learned every shard's catalog version (after the setup
/// committed); shared with the shapers.
pub type CatalogCell = Arc<Mutex<Option<Vec<Target>>>>;

/// Transactions that read the catalog key of each shard they write, at the version in `cell`,
/// and write one row of one table, or (with two tables, half the time) one row of each.
pub fn shaper(cell: CatalogCell) -> pistou_adversary::TxnShaper {
    Box::new(move |rng| {
        let targets = cell.lock().ok()?.clone()?;
        let chosen: Vec<Target> = match targets.as_slice() {
            [one] => vec![*one],
            [a, b] => match rng.gen_range(0..4) {
                0 => vec![*a],
                1 => vec![*b],
                _ => vec![*a, *b],
            },
            _ => return None,
        };
        let catalogs: BTreeMap<Vec<u8>, Timestamp> = chosen.iter().map(|t| (catalog_key(t.shard), t.catalog)).collect();
        let reads = catalogs.into_iter().map(|(key, version)| ReadEntry { key, version }).collect();
        let mut writes =
            chosen.iter().map(|t| t.table.write(t.table_id, &t.table.random_row(rng))).collect::<Option<Vec<_>>>()?;
        writes.sort_by(|a, b| a.key.cmp(&b.key));
        Some((reads, writes))
    })
}

/// The newest committed catalog of `shard` among `committed`: its version and the catalog.
pub fn newest_catalog<'m>(
    committed: impl Iterator<Item = &'m TxnMeta>,
    shard: ShardId,
) -> Option<(Timestamp, Catalog)> {
    let key = catalog_key(shard);
    let (ts, value) =
        committed.filter_map(|m| Some((m.ts, m.write_of(&key)?.value.as_ref()?))).max_by_key(|(ts, _)| *ts)?;
    let write: CatalogWrite = postcard::from_bytes(value).ok()?;
    Some((ts, write.catalog))
}

/// The targets of `tables` once they are current: every schema change writes every shard's
/// catalog, so after the setup a shard's current version is that of the setup's last schema
/// change (`setup_ddl`, the scenario runs no other); it is learned once a correct replica of
/// the shard has committed it. `committed(shard)`: the newest catalog version committed at
/// each correct replica of `shard`, with the catalog it wrote.
pub fn targets(
    tables: &[Table],
    config: &ClusterConfig,
    setup_ddl: Timestamp,
    mut committed: impl FnMut(ShardId) -> Vec<Option<(Timestamp, Catalog)>>,
) -> Option<Vec<Target>> {
    tables
        .iter()
        .map(|&table| {
            let shard = config.table_shard(table.name());
            let (catalog, schema) =
                committed(shard).into_iter().flatten().max_by_key(|(v, _)| *v).filter(|(v, _)| *v >= setup_ddl)?;
            let table_id = schema.table(table.name())?.id;
            Some(Target { table, table_id, shard, catalog })
        })
        .collect()
}

/// A committed Byzantine transaction as the oracle replays it: one upsert per row written.
pub fn replay_log(meta: &TxnMeta) -> Result<Option<SqlTxnLog>, String> {
    let mut statements = Vec::new();
    for w in &meta.write_set {
        let KeyKind::Row { table, .. } = key_kind(&w.key) else { continue };
        let sql = match table {
            "accounts" => UPSERT_ACCOUNT,
            "ledger" => UPSERT_LEDGER,
            _ => return Err(format!("a Byzantine transaction wrote table {table}, which the oracle cannot replay")),
        };
        let Some(bytes) = &w.value else {
            return Err("a Byzantine transaction deleted a row, which the oracle cannot replay".into());
        };
        let row: Row = postcard::from_bytes(bytes).map_err(|e| format!("undecodable Byzantine row: {e}"))?;
        let output = SqlOutput::Affected { command: "INSERT", count: 1, returning: None, returning_types: vec![] };
        statements.push(StatementLog { sql: sql.to_string(), params: row, output });
    }
    if statements.is_empty() {
        return Ok(None);
    }
    Ok(Some(SqlTxnLog {
        client: BYZANTINE_CLIENT,
        ts: meta.ts,
        statements,
        decision: Some(Decision::Commit),
        id: Some(meta.id()),
    }))
}

/// Whether a committed transaction wrote rows on two or more shards.
pub fn writes_rows_on_two_shards(meta: &TxnMeta, config: &ClusterConfig) -> bool {
    let mut shards = meta
        .write_set
        .iter()
        .filter(|w| matches!(key_kind(&w.key), KeyKind::Row { .. }))
        .map(|w| config.shard_of(&w.key));
    shards.next().is_some_and(|first| shards.any(|s| s != first))
}
