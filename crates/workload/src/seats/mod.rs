//! SEATS (the airline reservation benchmark of OLTPBench / BenchBase): the schema and the
//! six transactions' statements of crates/sql/tests/slt/seats.slt, BenchBase's default mix,
//! a loader scaled by the number of flights, and invariants between flights, reservations
//! and customers.

mod check;
mod load;
mod schema;
mod txns;

use crate::conn::Session;
use crate::meta::{self, DataSet};
use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

pub use check::check;
pub use txns::Seats;

pub const DATA_SET: DataSet = DataSet { name: "seats", label: "SEATS", tables: &schema::TABLES };

/// Seats on every flight (BenchBase's FLIGHTS_NUM_SEATS).
pub const SEATS_PER_FLIGHT: i64 = 150;
/// Customers loaded per flight.
pub const CUSTOMERS_PER_FLIGHT: u64 = 10;
pub const DEFAULT_FLIGHTS: u64 = 300;
pub const MIN_FLIGHTS: u64 = 20;
/// Pistou caps the rows one transaction reads (32,768): `run` reads every flight at once.
pub const MAX_FLIGHTS: u64 = 10_000;

/// The size of a data set: `flights` flights and ten customers per flight.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scale {
    pub flights: u64,
}

impl Scale {
    pub fn customers(&self) -> u64 {
        self.flights * CUSTOMERS_PER_FLIGHT
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_FLIGHTS..=MAX_FLIGHTS).contains(&self.flights) {
            return Err(format!("--flights must be from {MIN_FLIGHTS} to {MAX_FLIGHTS}"));
        }
        Ok(())
    }
}

/// What `init` records, read back by `run` and `check`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub scale: Scale,
    /// The load's seed: which airlines a customer flies frequently follows from it.
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

/// Countries, airports and airlines: fixed counts, whatever the scale.
pub const COUNTRIES: i64 = 10;
pub const AIRPORTS: i64 = 20;
pub const AIRLINES: i64 = 10;

/// The airlines whose frequent-flyer programme customer `c_id` belongs to (0 to 3 of them):
/// a function of the seed, so that `run` knows them without reading the table.
pub fn frequent_flyer_airlines(seed: u64, c_id: i64) -> Vec<i64> {
    let mut h = mix(seed ^ (c_id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let count = h % 4;
    let mut airlines = Vec::new();
    while (airlines.len() as u64) < count {
        h = mix(h);
        let al = (h % AIRLINES as u64) as i64 + 1;
        if !airlines.contains(&al) {
            airlines.push(al);
        }
    }
    airlines.sort_unstable();
    airlines
}

/// SplitMix64's finalizer: a well-spread hash of one number.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A customer's id string (C_ID_STR and FF_C_ID_STR), as in the SQL test corpus.
pub fn id_str(c_id: i64) -> String {
    format!("{c_id:09}")
}
