//! The six transactions in BenchBase's default mix, with the statements of
//! crates/sql/tests/slt/seats.slt. A business rule that stops a transaction in BenchBase
//! (a user abort: seat taken, no such reservation, flight full) rolls it back on purpose.
//!
//! As BenchBase does, the client keeps the reservations it knows of (those present when the
//! run starts, and those it made) to pick the ones DeleteReservation and UpdateReservation
//! act on; a stale entry makes the transaction find nothing and roll back.

use super::{frequent_flyer_airlines, id_str, Params, SEATS_PER_FLIGHT};
use crate::conn::{int, Session};
use crate::driver::{Outcome, Workload};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::types::ToSql;

const KINDS: &[&str] = &[
    "delete_reservation",
    "find_flights",
    "find_open_seats",
    "new_reservation",
    "update_customer",
    "update_reservation",
];
const DELETE_RESERVATION: usize = 0;
const FIND_FLIGHTS: usize = 1;
const FIND_OPEN_SEATS: usize = 2;
const NEW_RESERVATION: usize = 3;
const UPDATE_CUSTOMER: usize = 4;
const UPDATE_RESERVATION: usize = 5;
/// BenchBase's default weights, in the order of KINDS.
const WEIGHTS: [u32; 6] = [10, 10, 35, 20, 10, 15];
/// FindFlights' search radius for nearby arrival airports (miles; 0: none).
const DISTANCES: [f64; 4] = [0.0, 250.0, 500.0, 1000.0];
/// Flights per statement when reading the known reservations (Pistou's read cap).
const FLIGHT_RANGE: i64 = 100;

/// A flight's route and departure day, read when the run starts.
struct Flight {
    id: i64,
    depart: i64,
    arrive: i64,
    day: SystemTime,
}

/// A reservation the client knows of.
#[derive(Clone, Copy, Debug)]
struct Booking {
    f_id: i64,
    c_id: i64,
}

/// How DeleteReservation and UpdateCustomer name the customer.
#[derive(Debug)]
pub enum CustomerBy {
    Id(i64),
    IdStr(String),
    /// A frequent-flyer number (the customer's id string in FREQUENT_FLYER).
    FrequentFlyer(String),
}

#[derive(Debug)]
pub enum Txn {
    DeleteReservation { f_id: i64, customer: CustomerBy },
    FindFlights { depart: i64, arrive: i64, start: SystemTime, end: SystemTime, distance: f64 },
    FindOpenSeats { f_id: i64 },
    NewReservation { r_id: i64, c_id: i64, f_id: i64, seat: i64, price: f64, attrs: [i64; 9] },
    UpdateCustomer { customer: CustomerBy, update_frequent_flyers: bool, attrs: [i64; 2] },
    UpdateReservation { f_id: i64, c_id: i64, seat: i64, attr: usize, value: i64 },
}

pub struct Seats {
    flights: Vec<Flight>,
    customers: i64,
    seed: u64,
    bookings: Mutex<Vec<Booking>>,
    next_r_id: AtomicI64,
}

impl Seats {
    /// Reads the flights and the reservations present (the client's starting knowledge).
    pub async fn new(s: &mut Session, params: &Params) -> Result<Seats> {
        let rows = s
            .query("SELECT f_id, f_depart_ap_id, f_arrive_ap_id, f_depart_time FROM flight ORDER BY f_id", &[])
            .await?;
        let mut flights = Vec::with_capacity(rows.len());
        for row in &rows {
            let departs: SystemTime = row.try_get(3)?;
            flights.push(Flight { id: int(row, 0)?, depart: int(row, 1)?, arrive: int(row, 2)?, day: day_of(departs) });
        }
        if flights.is_empty() {
            return Err(anyhow!("the SEATS data set has no flights: run `pistou workload init seats --drop`"));
        }
        let (mut bookings, mut max_r_id) = (Vec::new(), 0);
        let last = flights.last().map_or(0, |f| f.id);
        let mut from = 1;
        while from <= last {
            let to = from + FLIGHT_RANGE;
            let rows = s
                .query("SELECT r_id, r_f_id, r_c_id FROM reservation WHERE r_f_id >= $1 AND r_f_id < $2", &[&from, &to])
                .await?;
            for row in &rows {
                max_r_id = max_r_id.max(int(row, 0)?);
                bookings.push(Booking { f_id: int(row, 1)?, c_id: int(row, 2)? });
            }
            from = to;
        }
        Ok(Seats {
            flights,
            customers: params.scale.customers() as i64,
            seed: params.seed,
            bookings: Mutex::new(bookings),
            next_r_id: AtomicI64::new(max_r_id + 1),
        })
    }

    fn bookings(&self) -> MutexGuard<'_, Vec<Booking>> {
        // A list of hints stays usable whatever a panicking holder did.
        self.bookings.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn flight<'a>(&'a self, rng: &mut StdRng) -> &'a Flight {
        &self.flights[rng.gen_range(0..self.flights.len())]
    }

    fn customer(&self, rng: &mut StdRng) -> i64 {
        rng.gen_range(1..=self.customers)
    }

    /// A known reservation, removed from the list when `take` (it is about to be deleted);
    /// a random flight and customer when none is known.
    fn booking(&self, rng: &mut StdRng, take: bool) -> Booking {
        let mut bookings = self.bookings();
        if bookings.is_empty() {
            drop(bookings);
            return Booking { f_id: self.flight(rng).id, c_id: self.customer(rng) };
        }
        let i = rng.gen_range(0..bookings.len());
        if take {
            bookings.swap_remove(i)
        } else {
            bookings[i]
        }
    }

    fn delete_reservation(&self, rng: &mut StdRng) -> Txn {
        let Booking { f_id, c_id } = self.booking(rng, true);
        let customer = match rng.gen_range(0..5) {
            0 => CustomerBy::IdStr(id_str(c_id)),
            1 if !frequent_flyer_airlines(self.seed, c_id).is_empty() => CustomerBy::FrequentFlyer(id_str(c_id)),
            _ => CustomerBy::Id(c_id),
        };
        Txn::DeleteReservation { f_id, customer }
    }

    fn find_flights(&self, rng: &mut StdRng) -> Txn {
        let f = self.flight(rng);
        let start = f.day;
        let end = start + Duration::from_secs(86_399);
        let distance = *DISTANCES.choose(rng).unwrap_or(&0.0);
        Txn::FindFlights { depart: f.depart, arrive: f.arrive, start, end, distance }
    }

    fn new_reservation(&self, rng: &mut StdRng) -> Txn {
        let r_id = self.next_r_id.fetch_add(1, Ordering::Relaxed);
        let (f_id, c_id) = (self.flight(rng).id, self.customer(rng));
        let seat = rng.gen_range(1..=SEATS_PER_FLIGHT);
        let price = f64::from(rng.gen_range(100..=2000u32));
        let attrs = std::array::from_fn(|_| rng.gen_range(0..1000));
        Txn::NewReservation { r_id, c_id, f_id, seat, price, attrs }
    }

    fn update_customer(&self, rng: &mut StdRng) -> Txn {
        let c_id = self.customer(rng);
        let customer = if rng.gen_range(0..5) == 0 { CustomerBy::IdStr(id_str(c_id)) } else { CustomerBy::Id(c_id) };
        let update_frequent_flyers = rng.gen_range(0..4) == 0;
        Txn::UpdateCustomer {
            customer,
            update_frequent_flyers,
            attrs: [rng.gen_range(0..1000), rng.gen_range(0..1000)],
        }
    }

    fn update_reservation(&self, rng: &mut StdRng) -> Txn {
        let Booking { f_id, c_id } = self.booking(rng, false);
        let seat = rng.gen_range(1..=SEATS_PER_FLIGHT);
        Txn::UpdateReservation { f_id, c_id, seat, attr: rng.gen_range(0..4), value: rng.gen_range(0..1000) }
    }
}

/// Midnight of the day of `t`.
fn day_of(t: SystemTime) -> SystemTime {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UNIX_EPOCH + Duration::from_secs(secs - secs % 86_400)
}

/// The kind a roll of 0..100 lands on under WEIGHTS.
fn kind_of(mut roll: u32) -> usize {
    for (kind, weight) in WEIGHTS.iter().enumerate() {
        if roll < *weight {
            return kind;
        }
        roll -= weight;
    }
    UPDATE_RESERVATION
}

impl Workload for Seats {
    type Txn = Txn;

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    /// FindFlights and FindOpenSeats.
    fn read_only(&self, kind: usize) -> bool {
        kind == FIND_FLIGHTS || kind == FIND_OPEN_SEATS
    }

    fn next(&self, _client: usize, rng: &mut StdRng) -> (usize, Txn) {
        let kind = kind_of(rng.gen_range(0..100));
        let txn = match kind {
            DELETE_RESERVATION => self.delete_reservation(rng),
            FIND_FLIGHTS => self.find_flights(rng),
            FIND_OPEN_SEATS => Txn::FindOpenSeats { f_id: self.flight(rng).id },
            NEW_RESERVATION => self.new_reservation(rng),
            UPDATE_CUSTOMER => self.update_customer(rng),
            _ => self.update_reservation(rng),
        };
        (kind, txn)
    }

    async fn execute(&self, s: &mut Session, txn: &Txn) -> Result<Outcome> {
        match txn {
            Txn::DeleteReservation { f_id, customer } => delete_reservation(s, *f_id, customer).await,
            Txn::FindFlights { depart, arrive, start, end, distance } => {
                find_flights(s, *depart, *arrive, start, end, *distance).await
            }
            Txn::FindOpenSeats { f_id } => find_open_seats(s, *f_id).await,
            Txn::NewReservation { r_id, c_id, f_id, seat, price, attrs } => {
                let outcome = new_reservation(s, *r_id, *c_id, *f_id, *seat, *price, attrs).await?;
                if outcome == Outcome::Commit {
                    // Known from now on (a retry may add it twice: a stale hint is harmless).
                    self.bookings().push(Booking { f_id: *f_id, c_id: *c_id });
                }
                Ok(outcome)
            }
            Txn::UpdateCustomer { customer, update_frequent_flyers, attrs } => {
                update_customer(s, customer, *update_frequent_flyers, attrs).await
            }
            Txn::UpdateReservation { f_id, c_id, seat, attr, value } => {
                update_reservation(s, *f_id, *c_id, *seat, *attr, *value).await
            }
        }
    }
}

/// The customer's id, or None when no customer matches. Through a frequent-flyer number
/// also the airline of the first record found (whose counter DeleteReservation lowers).
async fn find_customer(s: &mut Session, customer: &CustomerBy) -> Result<Option<(i64, Option<i64>)>> {
    Ok(match customer {
        CustomerBy::Id(id) => Some((*id, None)),
        CustomerBy::IdStr(text) => match s.query_opt("SELECT C_ID FROM CUSTOMER WHERE C_ID_STR = $1", &[text]).await? {
            Some(row) => Some((int(&row, 0)?, None)),
            None => None,
        },
        CustomerBy::FrequentFlyer(text) => {
            let rows = s
                .query(
                    "SELECT C_ID, FF_AL_ID FROM CUSTOMER, FREQUENT_FLYER WHERE FF_C_ID_STR = $1 AND FF_C_ID = C_ID",
                    &[text],
                )
                .await?;
            match rows.first() {
                Some(row) => Some((int(row, 0)?, Some(int(row, 1)?))),
                None => None,
            }
        }
    })
}

async fn delete_reservation(s: &mut Session, f_id: i64, customer: &CustomerBy) -> Result<Outcome> {
    let Some((c_id, ff_al_id)) = find_customer(s, customer).await? else {
        return Ok(Outcome::Rollback);
    };
    let Some(row) = s
        .query_opt(
            "SELECT C_SATTR00, C_SATTR02, C_SATTR04, C_IATTR00, C_IATTR02, C_IATTR04, C_IATTR06, F_SEATS_LEFT, \
             R_ID, R_SEAT, R_PRICE, R_IATTR00 FROM CUSTOMER, FLIGHT, RESERVATION \
             WHERE C_ID = $1 AND C_ID = R_C_ID AND F_ID = $2 AND F_ID = R_F_ID",
            &[&c_id, &f_id],
        )
        .await?
    else {
        // No such reservation (already cancelled): BenchBase's user abort.
        return Ok(Outcome::Rollback);
    };
    let c_iattr00 = crate::conn::int_opt(&row, 3)?.unwrap_or(0) + 1;
    let (r_id, price): (i64, f64) = (int(&row, 8)?, row.try_get(10)?);
    s.execute("DELETE FROM RESERVATION WHERE R_ID = $1 AND R_C_ID = $2 AND R_F_ID = $3", &[&r_id, &c_id, &f_id])
        .await?;
    s.execute("UPDATE FLIGHT SET F_SEATS_LEFT = F_SEATS_LEFT + 1 WHERE F_ID = $1", &[&f_id]).await?;
    s.execute(
        "UPDATE CUSTOMER SET C_BALANCE = C_BALANCE + $1, C_IATTR00 = $2, C_IATTR10 = C_IATTR10 - 1, \
         C_IATTR11 = C_IATTR10 - 1 WHERE C_ID = $3",
        &[&-price, &c_iattr00, &c_id],
    )
    .await?;
    if let Some(al_id) = ff_al_id {
        s.execute(
            "UPDATE FREQUENT_FLYER SET FF_IATTR10 = FF_IATTR10 - 1 WHERE FF_C_ID = $1 AND FF_AL_ID = $2",
            &[&c_id, &al_id],
        )
        .await?;
    }
    Ok(Outcome::Commit)
}

const GET_FLIGHTS: &str = "SELECT F_ID, F_AL_ID, F_SEATS_LEFT, F_DEPART_AP_ID, F_DEPART_TIME, F_ARRIVE_AP_ID, \
     F_ARRIVE_TIME, AL_NAME, AL_IATTR00, AL_IATTR01 FROM FLIGHT, AIRLINE WHERE F_DEPART_AP_ID = $1 \
     AND F_DEPART_TIME >= $2 AND F_DEPART_TIME <= $3 AND F_AL_ID = AL_ID AND F_ARRIVE_AP_ID IN ";

/// Flights from `depart` on the day to `arrive` or, within `distance` miles of the
/// departure airport, up to two other airports; then both airports of each flight.
async fn find_flights(
    s: &mut Session,
    depart: i64,
    arrive: i64,
    start: &SystemTime,
    end: &SystemTime,
    distance: f64,
) -> Result<Outcome> {
    let mut arrivals = vec![arrive];
    if distance > 0.0 {
        let nearby = s
            .query(
                "SELECT * FROM airport_distance WHERE d_ap_id0 = $1 AND d_distance <= $2 ORDER BY d_distance ASC",
                &[&depart, &distance],
            )
            .await?;
        for row in &nearby {
            let airport = int(row, 1)?;
            if arrivals.len() < 3 && !arrivals.contains(&airport) {
                arrivals.push(airport);
            }
        }
    }
    // GetFlights1, GetFlights2 or GetFlights3: IN ($4), IN ($4, $5) or IN ($4, $5, $6).
    let list: Vec<String> = (4..4 + arrivals.len()).map(|i| format!("${i}")).collect();
    let sql = format!("{GET_FLIGHTS}({})", list.join(", "));
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&depart, start, end];
    params.extend(arrivals.iter().map(|a| a as &(dyn ToSql + Sync)));
    let flights = s.query(&sql, &params).await?;
    for flight in &flights {
        for airport in [int(flight, 3)?, int(flight, 5)?] {
            s.query(
                "SELECT AP_CODE, AP_NAME, AP_CITY, AP_LONGITUDE, AP_LATITUDE, CO_ID, CO_NAME, CO_CODE_2, CO_CODE_3 \
                 FROM AIRPORT, COUNTRY WHERE AP_ID = $1 AND AP_CO_ID = CO_ID",
                &[&airport],
            )
            .await?;
        }
    }
    Ok(Outcome::Commit)
}

/// The flight's price and its free seats (computed here from the reserved ones).
async fn find_open_seats(s: &mut Session, f_id: i64) -> Result<Outcome> {
    let flight = s
        .query_opt(
            "SELECT F_STATUS, F_BASE_PRICE, F_SEATS_TOTAL, F_SEATS_LEFT, \
             (F_BASE_PRICE + (F_BASE_PRICE * (1 - (F_SEATS_LEFT / F_SEATS_TOTAL)))) AS F_PRICE \
             FROM FLIGHT WHERE F_ID = $1",
            &[&f_id],
        )
        .await?;
    let Some(flight) = flight else { return Ok(Outcome::Commit) };
    let total = int(&flight, 2)?;
    let reserved = s.query("SELECT R_ID, R_F_ID, R_SEAT FROM RESERVATION WHERE R_F_ID = $1", &[&f_id]).await?;
    let mut taken = vec![false; total.clamp(0, SEATS_PER_FLIGHT) as usize + 1];
    for row in &reserved {
        if let Some(seat) = taken.get_mut(int(row, 2)?.max(0) as usize) {
            *seat = true;
        }
    }
    let _open = taken.iter().skip(1).filter(|t| !**t).count();
    Ok(Outcome::Commit)
}

async fn new_reservation(
    s: &mut Session,
    r_id: i64,
    c_id: i64,
    f_id: i64,
    seat: i64,
    price: f64,
    attrs: &[i64; 9],
) -> Result<Outcome> {
    let flight = s
        .query_opt(
            "SELECT F_AL_ID, F_SEATS_LEFT, airline.* FROM FLIGHT, AIRLINE WHERE F_ID = $1 AND F_AL_ID = AL_ID",
            &[&f_id],
        )
        .await?;
    let Some(flight) = flight else { return Ok(Outcome::Rollback) };
    let (airline, seats_left) = (int(&flight, 0)?, int(&flight, 1)?);
    if seats_left <= 0 {
        return Ok(Outcome::Rollback);
    }
    if s.query_opt("SELECT R_ID FROM RESERVATION WHERE R_F_ID = $1 and R_SEAT = $2", &[&f_id, &seat]).await?.is_some() {
        // The seat is taken.
        return Ok(Outcome::Rollback);
    }
    if s.query_opt("SELECT R_ID FROM RESERVATION WHERE R_F_ID = $1 AND R_C_ID = $2", &[&f_id, &c_id]).await?.is_some() {
        // The customer already has a seat on this flight.
        return Ok(Outcome::Rollback);
    }
    if s.query_opt("SELECT C_BASE_AP_ID, C_BALANCE, C_SATTR00 FROM CUSTOMER WHERE C_ID = $1", &[&c_id]).await?.is_none()
    {
        return Ok(Outcome::Rollback);
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7, a8] = attrs;
    s.execute(
        "INSERT INTO RESERVATION (R_ID, R_C_ID, R_F_ID, R_SEAT, R_PRICE, R_IATTR00, R_IATTR01, R_IATTR02, \
         R_IATTR03, R_IATTR04, R_IATTR05, R_IATTR06, R_IATTR07, R_IATTR08) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        &[&r_id, &c_id, &f_id, &seat, &price, a0, a1, a2, a3, a4, a5, a6, a7, a8],
    )
    .await?;
    s.execute("UPDATE FLIGHT SET F_SEATS_LEFT = F_SEATS_LEFT - 1 WHERE F_ID = $1", &[&f_id]).await?;
    s.execute(
        "UPDATE CUSTOMER SET C_IATTR10 = C_IATTR10 + 1, C_IATTR11 = C_IATTR11 + 1, C_IATTR12 = $1, \
         C_IATTR13 = $2, C_IATTR14 = $3, C_IATTR15 = $4 WHERE C_ID = $5",
        &[a0, a1, a2, a3, &c_id],
    )
    .await?;
    s.execute(
        "UPDATE FREQUENT_FLYER SET FF_IATTR10 = FF_IATTR10 + 1, FF_IATTR11 = $1, FF_IATTR12 = $2, \
         FF_IATTR13 = $3, FF_IATTR14 = $4 WHERE FF_C_ID = $5 AND FF_AL_ID = $6",
        &[a4, a5, a6, a7, &c_id, &airline],
    )
    .await?;
    Ok(Outcome::Commit)
}

async fn update_customer(
    s: &mut Session,
    customer: &CustomerBy,
    update_frequent_flyers: bool,
    [attr0, attr1]: &[i64; 2],
) -> Result<Outcome> {
    let Some((c_id, _)) = find_customer(s, customer).await? else {
        return Ok(Outcome::Rollback);
    };
    let Some(row) = s.query_opt("SELECT * FROM CUSTOMER WHERE C_ID = $1", &[&c_id]).await? else {
        return Ok(Outcome::Rollback);
    };
    if let Some(base) = crate::conn::int_opt(&row, 2)? {
        s.query("SELECT * FROM AIRPORT, COUNTRY WHERE AP_ID = $1 AND AP_CO_ID = CO_ID", &[&base]).await?;
    }
    if update_frequent_flyers {
        let flyers = s.query("SELECT * FROM FREQUENT_FLYER WHERE FF_C_ID = $1", &[&c_id]).await?;
        for flyer in &flyers {
            let airline = int(flyer, 1)?;
            s.execute(
                "UPDATE FREQUENT_FLYER SET FF_IATTR00 = $1, FF_IATTR01 = $2 WHERE FF_C_ID = $3 AND FF_AL_ID = $4",
                &[attr0, attr1, &c_id, &airline],
            )
            .await?;
        }
    }
    s.execute("UPDATE CUSTOMER SET C_IATTR00 = $1, C_IATTR01 = $2 WHERE C_ID = $3", &[attr0, attr1, &c_id]).await?;
    Ok(Outcome::Commit)
}

/// ReserveSeat0 … ReserveSeat3: the new seat and one of the first four attributes.
const RESERVE_SEAT: [&str; 4] = [
    "UPDATE RESERVATION SET R_SEAT = $1, R_IATTR00 = $2 WHERE R_ID = $3 AND R_C_ID = $4 AND R_F_ID = $5",
    "UPDATE RESERVATION SET R_SEAT = $1, R_IATTR01 = $2 WHERE R_ID = $3 AND R_C_ID = $4 AND R_F_ID = $5",
    "UPDATE RESERVATION SET R_SEAT = $1, R_IATTR02 = $2 WHERE R_ID = $3 AND R_C_ID = $4 AND R_F_ID = $5",
    "UPDATE RESERVATION SET R_SEAT = $1, R_IATTR03 = $2 WHERE R_ID = $3 AND R_C_ID = $4 AND R_F_ID = $5",
];

async fn update_reservation(
    s: &mut Session,
    f_id: i64,
    c_id: i64,
    seat: i64,
    attr: usize,
    value: i64,
) -> Result<Outcome> {
    if s.query_opt("SELECT R_ID FROM RESERVATION WHERE R_F_ID = $1 and R_SEAT = $2", &[&f_id, &seat]).await?.is_some() {
        // The new seat is taken (possibly by this customer already).
        return Ok(Outcome::Rollback);
    }
    let Some(row) =
        s.query_opt("SELECT R_ID FROM RESERVATION WHERE R_F_ID = $1 AND R_C_ID = $2", &[&f_id, &c_id]).await?
    else {
        // The customer has no reservation on the flight (any more).
        return Ok(Outcome::Rollback);
    };
    let r_id = int(&row, 0)?;
    let sql = RESERVE_SEAT.get(attr).ok_or_else(|| anyhow!("no attribute {attr} to update"))?;
    if s.execute(sql, &[&seat, &value, &r_id, &c_id, &f_id]).await? != 1 {
        return Ok(Outcome::Rollback);
    }
    Ok(Outcome::Commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_benchbase_s_default() {
        let mut percent = [0u32; 6];
        for roll in 0..100 {
            percent[kind_of(roll)] += 1;
        }
        let by_name: Vec<(&str, u32)> = KINDS.iter().copied().zip(percent).collect();
        assert_eq!(
            by_name,
            [
                ("delete_reservation", 10),
                ("find_flights", 10),
                ("find_open_seats", 35),
                ("new_reservation", 20),
                ("update_customer", 10),
                ("update_reservation", 15)
            ]
        );
    }
}
