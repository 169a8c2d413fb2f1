//! YCSB core workloads A–F on one table `usertable` of 10 text fields of 100 characters,
//! keyed by "user" and a hash of the record number (YCSB's hashed insert order). Keys are
//! chosen by a scrambled Zipfian distribution (constant 0.99), workload D reads the latest
//! inserted records. Every operation is one transaction.

use crate::conn::{error_text, int, Session};
use crate::copy::Copier;
use crate::driver::{Outcome, Workload};
use crate::meta::{self, DataSet};
use anyhow::{anyhow, bail, Result};
use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub const DATA_SET: DataSet = DataSet { name: "ycsb", label: "YCSB", tables: &["usertable"] };

const FIELDS: usize = 10;
const FIELD_LEN: usize = 100;
const ZIPF_CONSTANT: f64 = 0.99;
const MAX_SCAN: i64 = 100;
const COLUMNS: &str = "ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9";
const KINDS: &[&str] = &["read", "update", "insert", "scan", "read_modify_write"];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub records: u64,
}

/// The core workloads' operation mixes (YCSB's workloads/workloada … workloadf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    A,
    B,
    C,
    D,
    E,
    F,
}

impl Mix {
    /// Percentages of read, update, insert, scan, read-modify-write.
    fn weights(self) -> [u32; 5] {
        match self {
            Mix::A => [50, 50, 0, 0, 0],
            Mix::B => [95, 5, 0, 0, 0],
            Mix::C => [100, 0, 0, 0, 0],
            Mix::D => [95, 0, 5, 0, 0],
            Mix::E => [0, 0, 5, 95, 0],
            Mix::F => [50, 0, 0, 0, 50],
        }
    }
}

impl std::str::FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "A" => Mix::A,
            "B" => Mix::B,
            "C" => Mix::C,
            "D" => Mix::D,
            "E" => Mix::E,
            "F" => Mix::F,
            _ => return Err(format!("YCSB workloads are A to F, got {s:?}")),
        })
    }
}

/// FNV-1a of the record number: YCSB's key scrambling.
fn fnv(n: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in n.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn key(n: u64) -> String {
    format!("user{}", fnv(n))
}

fn field_value(rng: &mut impl Rng) -> String {
    Alphanumeric.sample_string(rng, FIELD_LEN)
}

pub async fn init(s: &mut Session, records: u64, seed: u64, drop: bool, report: &mut dyn FnMut(String)) -> Result<()> {
    meta::prepare_init(s, &DATA_SET, drop).await?;
    let fields: Vec<String> = (0..FIELDS).map(|i| format!("field{i} TEXT NOT NULL")).collect();
    let ddl = format!("CREATE TABLE usertable (ycsb_key TEXT NOT NULL, {}, PRIMARY KEY (ycsb_key))", fields.join(", "));
    s.client.batch_execute(&ddl).await.map_err(|e| anyhow!("CREATE TABLE usertable: {}", error_text(&e)))?;
    let started = std::time::Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut copy = Copier::new(s, "usertable", COLUMNS);
    for n in 0..records {
        let k = key(n);
        let values: Vec<String> = (0..FIELDS).map(|_| field_value(&mut rng)).collect();
        let mut row: Vec<&dyn std::fmt::Display> = vec![&k];
        row.extend(values.iter().map(|v| v as &dyn std::fmt::Display));
        copy.row(&row).await?;
    }
    let rows = copy.finish().await?;
    report(format!("usertable: {rows} rows in {:.1} s", started.elapsed().as_secs_f64()));
    meta::record(s, &DATA_SET, &Params { records }).await
}

pub async fn params(s: &mut Session) -> Result<Params> {
    meta::load(s, &DATA_SET).await
}

pub struct Ycsb {
    mix: Mix,
    records: u64,
    zipf: Zipf<f64>,
    /// The next record number to insert (shared by all clients).
    next_insert: AtomicU64,
    /// Record numbers handed to inserts that are not over yet: reads of the latest records
    /// stay below them (YCSB's acknowledged counter).
    pending_inserts: Mutex<BTreeSet<u64>>,
}

#[derive(Debug)]
pub enum Txn {
    Read(String),
    Update { key: String, field: usize, value: String },
    Insert { number: u64, key: String, values: Vec<String> },
    Scan { start: String, count: i64 },
    ReadModifyWrite { key: String, field: usize, value: String },
}

impl Ycsb {
    /// `s` finds where inserts continue: after the records already in the table.
    pub async fn new(s: &mut Session, params: &Params, mix: Mix) -> Result<Ycsb> {
        let row = s.client.query_one("SELECT COUNT(*) FROM usertable", &[]).await?;
        let mut next = int(&row, 0)? as u64;
        // Skip numbers a failed insert of an earlier run may have left in use.
        while s.client.query_opt("SELECT 1 FROM usertable WHERE ycsb_key = $1", &[&key(next)]).await?.is_some() {
            next += 1;
        }
        let zipf = Zipf::new(params.records.max(1), ZIPF_CONSTANT).map_err(|e| anyhow!("zipfian distribution: {e}"))?;
        Ok(Ycsb {
            mix,
            records: params.records,
            zipf,
            next_insert: AtomicU64::new(next),
            pending_inserts: Mutex::new(BTreeSet::new()),
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        // The set stays valid whatever a panicking holder did.
        self.pending_inserts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A record chosen by the workload's request distribution.
    fn existing_key(&self, rng: &mut StdRng) -> String {
        let rank = self.zipf.sample(rng) as u64 - 1;
        if self.mix == Mix::D {
            // "latest": the most recently inserted records are the most popular.
            let pending = self.pending().first().copied();
            let visible = pending.unwrap_or_else(|| self.next_insert.load(Ordering::Relaxed));
            let latest = visible.saturating_sub(1);
            key(latest.saturating_sub(rank))
        } else {
            key(fnv(rank) % self.records.max(1))
        }
    }
}

impl Workload for Ycsb {
    type Txn = Txn;

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    /// Reads and scans.
    fn read_only(&self, kind: usize) -> bool {
        matches!(KINDS.get(kind), Some(&"read" | &"scan"))
    }

    fn next(&self, _client: usize, rng: &mut StdRng) -> (usize, Txn) {
        let weights = self.mix.weights();
        let mut roll = rng.gen_range(0..100);
        let kind = weights
            .iter()
            .position(|w| {
                let hit = roll < *w;
                roll = roll.saturating_sub(*w);
                hit
            })
            .unwrap_or(0);
        let txn = match kind {
            0 => Txn::Read(self.existing_key(rng)),
            1 => Txn::Update { key: self.existing_key(rng), field: rng.gen_range(0..FIELDS), value: field_value(rng) },
            2 => {
                let mut pending = self.pending();
                let n = self.next_insert.fetch_add(1, Ordering::Relaxed);
                pending.insert(n);
                Txn::Insert { number: n, key: key(n), values: (0..FIELDS).map(|_| field_value(rng)).collect() }
            }
            3 => Txn::Scan { start: self.existing_key(rng), count: rng.gen_range(1..=MAX_SCAN) },
            _ => Txn::ReadModifyWrite {
                key: self.existing_key(rng),
                field: rng.gen_range(0..FIELDS),
                value: field_value(rng),
            },
        };
        (kind, txn)
    }

    fn finished(&self, txn: &Txn) {
        if let Txn::Insert { number, .. } = txn {
            self.pending().remove(number);
        }
    }

    async fn execute(&self, s: &mut Session, txn: &Txn) -> Result<Outcome> {
        match txn {
            Txn::Read(key) => {
                read(s, key).await?;
            }
            Txn::Update { key, field, value } => update(s, key, *field, value).await?,
            Txn::Insert { key, values, .. } => {
                let sql =
                    format!("INSERT INTO usertable ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)");
                let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![key];
                params.extend(values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)));
                s.execute(&sql, &params).await?;
            }
            Txn::Scan { start, count } => {
                let sql = format!("SELECT {COLUMNS} FROM usertable WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2");
                s.query(&sql, &[start, count]).await?;
            }
            Txn::ReadModifyWrite { key, field, value } => {
                read(s, key).await?;
                update(s, key, *field, value).await?;
            }
        }
        Ok(Outcome::Commit)
    }
}

async fn read(s: &mut Session, key: &String) -> Result<()> {
    let sql = format!("SELECT {COLUMNS} FROM usertable WHERE ycsb_key = $1");
    if s.query_opt(&sql, &[key]).await?.is_none() {
        bail!("record {key} not found");
    }
    Ok(())
}

async fn update(s: &mut Session, key: &String, field: usize, value: &String) -> Result<()> {
    let sql = format!("UPDATE usertable SET field{field} = $1 WHERE ycsb_key = $2");
    if s.execute(&sql, &[value, key]).await? != 1 {
        bail!("record {key} not found");
    }
    Ok(())
}

/// The loaded records are all there and every field has its length.
pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    let params = params(s).await?;
    let mut found = Vec::new();
    let row = s.client.query_one("SELECT COUNT(*) FROM usertable", &[]).await?;
    let rows = int(&row, 0)? as u64;
    if rows < params.records {
        found.push(format!("usertable has {rows} rows, fewer than the {} loaded", params.records));
    }
    let bad_length: Vec<String> = (0..FIELDS).map(|i| format!("LENGTH(field{i}) <> {FIELD_LEN}")).collect();
    let sql = format!("SELECT COUNT(*) FROM usertable WHERE {}", bad_length.join(" OR "));
    let row = s.client.query_one(&sql, &[]).await?;
    let bad = int(&row, 0)?;
    if bad > 0 {
        found.push(format!("{bad} rows of usertable have a field that is not {FIELD_LEN} characters long"));
    }
    Ok(found)
}
