//! AuctionMark (the auction site benchmark of OLTPBench / BenchBase): the schema and the
//! statements of crates/sql/tests/slt/auctionmark.slt, BenchBase's default mix of nine
//! transactions plus its periodic CloseAuctions, a loader scaled by the number of users, and
//! invariants between items, bids, purchases, comments, feedback and users.
//!
//! One deliberate change to the corpus: the table `item` is named `auction_item` here,
//! because TPC-C has a table `item` and the two data sets may share a database.

mod check;
mod load;
mod schema;
mod txns;

use crate::conn::Session;
use crate::meta::{self, DataSet};
use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use check::check;
pub use txns::AuctionMark;

pub const DATA_SET: DataSet = DataSet { name: "auctionmark", label: "AuctionMark", tables: &schema::TABLES };

pub const DEFAULT_USERS: u64 = 1000;
pub const MIN_USERS: u64 = 10;
/// `run` reads every item's id and status when it starts (a range of users per statement).
pub const MAX_USERS: u64 = 100_000;

/// The size of a data set: `users` users, each selling 0 to 6 items.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scale {
    pub users: u64,
}

impl Scale {
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_USERS..=MAX_USERS).contains(&self.users) {
            return Err(format!("--users must be from {MIN_USERS} to {MAX_USERS}"));
        }
        Ok(())
    }
}

/// What `init` records, read back by `run` and `check`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub scale: Scale,
    pub seed: u64,
}

/// Creates the tables and loads the data set.
pub async fn init(s: &mut Session, scale: &Scale, seed: u64, drop: bool, report: &mut dyn FnMut(String)) -> Result<()> {
    scale.validate().map_err(|e| anyhow!(e))?;
    meta::prepare_init(s, &DATA_SET, drop).await?;
    meta::create_tables(s, &schema::DDL).await?;
    let params = Params { scale: scale.clone(), seed };
    load::load(s, &params, report).await?;
    meta::record(s, &DATA_SET, &params).await
}

pub async fn params(s: &mut Session) -> Result<Params> {
    meta::load(s, &DATA_SET).await
}

/// Item statuses, as the corpus's statements write them.
pub const OPEN: i64 = 0;
pub const WAITING_FOR_PURCHASE: i64 = 1;
pub const CLOSED: i64 = 2;

/// BenchBase's ITEM_BID_PERCENT_STEP: a bid raises the price by up to this share of the
/// item's initial price.
pub const BID_STEP: f64 = 0.025;

/// The loader's clock: items started in the 30 days before it; `cfp_loader_stop`.
pub const LOAD_TIME_SECS: u64 = 1_704_067_200; // 2024-01-01 00:00:00

pub fn load_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(LOAD_TIME_SECS)
}

/// User number `n` (1-based): zero-padded, so ids sort as numbers.
pub fn user_id(n: u64) -> String {
    format!("u{n:07}")
}

/// Item `seq` of a seller: the seller's id first, so a range of users is also a range of
/// item ids (the check and the run read a range of users at a time).
pub fn item_id(seller: &str, seq: i64) -> String {
    format!("{seller}i{seq:05}")
}

/// Attribute `k` of an item.
pub fn attribute_id(item: &str, k: i64) -> String {
    format!("{item}a{k:03}")
}

/// The number after the last `a` of an attribute id.
pub fn attribute_number(ia_id: &str) -> Option<i64> {
    ia_id.rsplit_once('a').and_then(|(_, n)| n.parse().ok())
}

/// Ranges of user ids, `per` users each, covering every text (the first starts at "", the
/// last ends at "z"): rows keyed by a user id or an item id fall in exactly one.
pub fn user_ranges(users: u64, per: u64) -> Vec<(String, String)> {
    let mut bounds = vec![String::new()];
    let mut n = 1 + per;
    while n <= users {
        bounds.push(user_id(n));
        n += per;
    }
    bounds.push("z".to_string());
    bounds.windows(2).map(|w| (w[0].clone(), w[1].clone())).collect()
}

/// Rounds to cents, as BenchBase's prices.
pub fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_user_once() {
        let r = user_ranges(450, 200);
        assert_eq!(r.first().map(|r| r.0.as_str()), Some(""));
        assert_eq!(r.last().map(|r| r.1.as_str()), Some("z"));
        assert_eq!(r.len(), 3);
        for n in 1..=450 {
            let (u, i) = (user_id(n), item_id(&user_id(n), 3));
            assert_eq!(r.iter().filter(|(a, b)| *a <= u && u < *b).count(), 1, "{u}");
            assert_eq!(r.iter().filter(|(a, b)| *a <= i && i < *b).count(), 1, "{i}");
            let owner = r.iter().position(|(a, b)| *a <= u && u < *b);
            assert_eq!(owner, r.iter().position(|(a, b)| *a <= i && i < *b), "{i}");
        }
        assert_eq!(attribute_number(&attribute_id(&item_id("u0000001", 2), 7)), Some(7));
    }
}
