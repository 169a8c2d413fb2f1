//! Invariants that hold after any run, each reported with its name:
//! - `seats_left`: F_SEATS_LEFT = F_SEATS_TOTAL − the flight's reservations;
//! - `seat_reserved_once`: no seat of a flight is reserved twice;
//! - `seat_exists`: a reserved seat is one of the flight's (1..=F_SEATS_TOTAL);
//! - `one_reservation_per_customer_and_flight` (NewReservation's CheckCustomer);
//! - `reservation_flight_exists` and `reservation_customer_exists`;
//! - `customer_reservation_count`: C_IATTR10 = C_IATTR11 = the customer's reservations
//!   (NewReservation adds one to both, DeleteReservation takes one off).
//!
//! Pistou caps the rows one transaction reads (32,768), so flights and their reservations
//! are read a range of flights per transaction (each range consistent on its own) and
//! customers a range of ids per statement: run `check` when no workload is writing.

use super::params;
use crate::conn::{int, int_opt, Session};
use crate::violations::{batch, rows, Found};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use tokio_postgres::Row;

/// Flights per transaction: at most 150 reservations each.
const FLIGHT_RANGE: i64 = 100;
/// Customers per statement.
const CUSTOMER_RANGE: i64 = 20_000;
/// A reservation as the check reads it.
struct Reservation {
    id: i64,
    flight: i64,
    customer: i64,
    seat: i64,
}

pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    let params = params(s).await?;
    let mut found = Found::default();
    let customers = customers(s).await?;
    let mut per_customer: BTreeMap<i64, i64> = BTreeMap::new();
    let flights = params.scale.flights as i64;
    let mut from = 1;
    while from <= flights {
        let to = from + FLIGHT_RANGE;
        batch(s, "BEGIN READ ONLY").await?;
        let flight_rows = rows(
            s,
            "SELECT f_id, f_seats_total, f_seats_left FROM flight WHERE f_id >= $1 AND f_id < $2 ORDER BY f_id",
            &[&from, &to],
        )
        .await?;
        let reservation_rows = rows(
            s,
            "SELECT r_id, r_f_id, r_c_id, r_seat FROM reservation WHERE r_f_id >= $1 AND r_f_id < $2",
            &[&from, &to],
        )
        .await?;
        batch(s, "COMMIT").await?;
        let reservations = read_reservations(&reservation_rows)?;
        check_flights(&flight_rows, &reservations, &mut found)?;
        for r in &reservations {
            *per_customer.entry(r.customer).or_default() += 1;
            if !customers.contains_key(&r.customer) {
                found.add("reservation_customer_exists", format!("reservation {} names customer {}", r.id, r.customer));
            }
        }
        from = to;
    }
    let outside =
        rows(s, "SELECT r_id, r_f_id, r_c_id, r_seat FROM reservation WHERE r_f_id < 1 OR r_f_id > $1", &[&flights])
            .await?;
    for r in read_reservations(&outside)? {
        found.add("reservation_flight_exists", format!("reservation {} names flight {}", r.id, r.flight));
    }
    for (c_id, (iattr10, iattr11)) in &customers {
        let reservations = per_customer.get(c_id).copied().unwrap_or(0);
        if *iattr10 != Some(reservations) || *iattr11 != Some(reservations) {
            found.add(
                "customer_reservation_count",
                format!(
                    "customer {c_id} has C_IATTR10 {}, C_IATTR11 {} but {reservations} reservations",
                    show(*iattr10),
                    show(*iattr11)
                ),
            );
        }
    }
    Ok(found.into_lines())
}

/// Every customer's (C_IATTR10, C_IATTR11), by id.
async fn customers(s: &mut Session) -> Result<BTreeMap<i64, (Option<i64>, Option<i64>)>> {
    let mut customers = BTreeMap::new();
    let last = rows(s, "SELECT c_id FROM customer ORDER BY c_id DESC LIMIT 1", &[]).await?;
    let last = match last.first() {
        Some(row) => int(row, 0)?,
        None => return Ok(customers),
    };
    let first = rows(s, "SELECT c_id FROM customer ORDER BY c_id LIMIT 1", &[]).await?;
    let mut from = first.first().map(|row| int(row, 0)).transpose()?.unwrap_or(last);
    while from <= last {
        let to = from + CUSTOMER_RANGE;
        let sql = "SELECT c_id, c_iattr10, c_iattr11 FROM customer WHERE c_id >= $1 AND c_id < $2";
        for row in rows(s, sql, &[&from, &to]).await? {
            customers.insert(int(&row, 0)?, (int_opt(&row, 1)?, int_opt(&row, 2)?));
        }
        from = to;
    }
    Ok(customers)
}

fn read_reservations(rows: &[Row]) -> Result<Vec<Reservation>> {
    rows.iter()
        .map(|row| {
            Ok(Reservation { id: int(row, 0)?, flight: int(row, 1)?, customer: int(row, 2)?, seat: int(row, 3)? })
        })
        .collect()
}

/// The flights of one range against the reservations on them.
fn check_flights(flight_rows: &[Row], reservations: &[Reservation], found: &mut Found) -> Result<()> {
    let mut on_flight: BTreeMap<i64, Vec<&Reservation>> = BTreeMap::new();
    for r in reservations {
        on_flight.entry(r.flight).or_default().push(r);
    }
    let mut seen = BTreeSet::new();
    for row in flight_rows {
        let (f_id, total, left) = (int(row, 0)?, int(row, 1)?, int(row, 2)?);
        seen.insert(f_id);
        let booked = on_flight.get(&f_id).map_or(&[][..], |v| v.as_slice());
        let count = booked.len() as i64;
        if left != total - count {
            found.add(
                "seats_left",
                format!("flight {f_id} has F_SEATS_LEFT {left} but {total} seats and {count} reservations"),
            );
        }
        let (mut seats, mut passengers) = (BTreeMap::new(), BTreeMap::new());
        for r in booked {
            *seats.entry(r.seat).or_insert(0) += 1;
            *passengers.entry(r.customer).or_insert(0) += 1;
            if !(1..=total).contains(&r.seat) {
                found.add(
                    "seat_exists",
                    format!("reservation {} holds seat {} of flight {f_id} ({total} seats)", r.id, r.seat),
                );
            }
        }
        for (seat, n) in seats.into_iter().filter(|(_, n)| *n > 1) {
            found.add("seat_reserved_once", format!("seat {seat} of flight {f_id} is reserved {n} times"));
        }
        for (c_id, n) in passengers.into_iter().filter(|(_, n)| *n > 1) {
            found.add(
                "one_reservation_per_customer_and_flight",
                format!("customer {c_id} has {n} reservations on flight {f_id}"),
            );
        }
    }
    for r in reservations.iter().filter(|r| !seen.contains(&r.flight)) {
        found.add("reservation_flight_exists", format!("reservation {} names flight {}", r.id, r.flight));
    }
    Ok(())
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "NULL".to_string(), |v| v.to_string())
}
