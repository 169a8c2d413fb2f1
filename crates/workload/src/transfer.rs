//! The bank transfer workload: accounts with balances; each transaction moves a random
//! amount between two random accounts, rolling back (on purpose) when the payer's balance
//! is short. `check` verifies that the total is conserved.

use crate::conn::{int, Session};
use crate::copy::Copier;
use crate::driver::{Outcome, Workload};
use crate::meta::{self, DataSet};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const DATA_SET: DataSet = DataSet { name: "transfer", label: "transfer", tables: &["transfer_account"] };
const KINDS: &[&str] = &["transfer"];
pub const INITIAL_BALANCE: i64 = 1000;
const MAX_AMOUNT: i64 = 100;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub accounts: u64,
    pub initial_balance: i64,
}

pub async fn init(s: &mut Session, accounts: u64, drop: bool, report: &mut dyn FnMut(String)) -> Result<()> {
    meta::prepare_init(s, &DATA_SET, drop).await?;
    s.client
        .batch_execute("CREATE TABLE transfer_account (id BIGINT NOT NULL, balance BIGINT NOT NULL, PRIMARY KEY (id))")
        .await
        .map_err(|e| anyhow!("CREATE TABLE transfer_account: {}", crate::conn::error_text(&e)))?;
    let started = std::time::Instant::now();
    let mut copy = Copier::new(s, "transfer_account", "id, balance");
    for id in 0..accounts {
        copy.row(&[&id, &INITIAL_BALANCE]).await?;
    }
    let rows = copy.finish().await?;
    report(format!("transfer_account: {rows} rows in {:.1} s", started.elapsed().as_secs_f64()));
    meta::record(s, &DATA_SET, &Params { accounts, initial_balance: INITIAL_BALANCE }).await
}

pub async fn params(s: &mut Session) -> Result<Params> {
    meta::load(s, &DATA_SET).await
}

pub struct Transfer {
    accounts: u64,
}

impl Transfer {
    pub fn new(params: &Params) -> Transfer {
        Transfer { accounts: params.accounts }
    }
}

#[derive(Debug)]
pub struct Txn {
    from: i64,
    to: i64,
    amount: i64,
}

impl Workload for Transfer {
    type Txn = Txn;

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn next(&self, _client: usize, rng: &mut StdRng) -> (usize, Txn) {
        let n = self.accounts.max(2);
        let from = rng.gen_range(0..n);
        let to = (from + rng.gen_range(1..n)) % n;
        (0, Txn { from: from as i64, to: to as i64, amount: rng.gen_range(1..=MAX_AMOUNT) })
    }

    async fn execute(&self, s: &mut Session, t: &Txn) -> Result<Outcome> {
        let balance = |row: Option<tokio_postgres::Row>, id: i64| match row {
            Some(row) => int(&row, 0),
            None => Err(anyhow!("account {id} not found")),
        };
        let sql = "SELECT balance FROM transfer_account WHERE id = $1";
        let from = balance(s.query_opt(sql, &[&t.from]).await?, t.from)?;
        balance(s.query_opt(sql, &[&t.to]).await?, t.to)?;
        if from < t.amount {
            return Ok(Outcome::Rollback);
        }
        let sql = "UPDATE transfer_account SET balance = balance + $1 WHERE id = $2";
        s.execute(sql, &[&-t.amount, &t.from]).await?;
        s.execute(sql, &[&t.amount, &t.to]).await?;
        Ok(Outcome::Commit)
    }
}

/// The number of accounts and the total balance are what `init` loaded.
pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    let params = params(s).await?;
    let row = s
        .client
        .query_one("SELECT COUNT(*), CAST(SUM(balance) AS BIGINT) FROM transfer_account", &[])
        .await
        .map_err(|e| anyhow!("cannot sum the balances: {}", crate::conn::error_text(&e)))?;
    let (count, total) = (int(&row, 0)?, crate::conn::int_opt(&row, 1)?.unwrap_or(0));
    let mut found = Vec::new();
    if count as u64 != params.accounts {
        found.push(format!("transfer_account has {count} accounts, {} were loaded", params.accounts));
    }
    let expected = params.accounts as i64 * params.initial_balance;
    if total != expected {
        found.push(format!("the balances sum to {total}, expected {expected}: money was created or destroyed"));
    }
    Ok(found)
}
