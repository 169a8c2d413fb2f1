//! TPC-C (revision 5.11): the nine tables, the initial population, the five transactions in
//! the standard mix with keying and think times off, and consistency conditions 1–4.

mod check;
mod load;
mod random;
mod schema;
mod txns;

use crate::conn::Session;
use crate::meta::{self, DataSet};
use anyhow::Result;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

pub use check::check;
pub use txns::Tpcc;

pub const DATA_SET: DataSet = DataSet { name: "tpcc", label: "TPC-C", tables: &schema::TABLES };

pub const DISTRICTS: u64 = 10;
/// The spec's cardinalities (1.2.1).
pub const SPEC_ITEMS: u64 = 100_000;
pub const SPEC_CUSTOMERS: u64 = 3_000;

/// The size of a data set. Items and customers per district default to the spec's; smaller
/// values are a non-standard scale-down for slow endpoints and quick tests.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scale {
    pub warehouses: u64,
    pub items: u64,
    /// Customers per district, which is also the initial orders per district.
    pub customers: u64,
}

impl Scale {
    /// Orders from this id on are undelivered at load (the last 900 of 3,000 in the spec).
    pub fn first_undelivered(&self) -> u64 {
        self.customers - self.customers * 3 / 10 + 1
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.warehouses == 0 {
            return Err("--warehouses must be at least 1".into());
        }
        if !(100..=SPEC_ITEMS).contains(&self.items) {
            return Err(format!("--items must be from 100 to {SPEC_ITEMS}"));
        }
        if !(10..=SPEC_CUSTOMERS).contains(&self.customers) {
            return Err(format!("--customers must be from 10 to {SPEC_CUSTOMERS}"));
        }
        Ok(())
    }
}

/// What `init` records, read back by `run` and `check`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub scale: Scale,
    /// The load's NURand constants, from which the run's are derived (2.1.6.1).
    pub c_last: u64,
    pub c_customer: u64,
    pub c_item: u64,
}

/// Creates the tables and loads the population.
pub async fn init(s: &mut Session, scale: &Scale, seed: u64, drop: bool, report: &mut dyn FnMut(String)) -> Result<()> {
    meta::prepare_init(s, &DATA_SET, drop).await?;
    meta::create_tables(s, &schema::DDL).await?;
    let mut rng = StdRng::seed_from_u64(seed);
    let c = random::NuRandC::load(&mut rng);
    load::load(s, scale, &c, &mut rng, report).await?;
    let params = Params { scale: scale.clone(), c_last: c.last, c_customer: c.customer, c_item: c.item };
    meta::record(s, &DATA_SET, &params).await
}

pub async fn params(s: &mut Session) -> Result<Params> {
    meta::load(s, &DATA_SET).await
}
