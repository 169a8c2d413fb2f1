//! The data set, generated from the seed and loaded with COPY: countries, airports with the
//! distances between every pair, airlines, flights with reservations filling 20–66% of
//! their seats, customers (whose C_IATTR10 and C_IATTR11 count their reservations, as the
//! transactions keep them) and their frequent-flyer records.

use super::{frequent_flyer_airlines, id_str, Params, AIRLINES, AIRPORTS, COUNTRIES, SEATS_PER_FLIGHT};
use crate::conn::Session;
use crate::copy::{Copier, Null};
use anyhow::Result;
use rand::rngs::StdRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use std::fmt::Display;
use std::time::Instant;

/// Seats reserved per flight at load.
const LOADED_SEATS: std::ops::RangeInclusive<usize> = 30..=100;
/// Flights leave on the days of this month (hours 6 to 17, arriving the same day).
const MONTH: &str = "2026-12";
const DAYS: u32 = 28;

/// Rows per COPY into the tables with a UNIQUE constraint besides their primary key
/// (reservation, customer): Pistou took over 10 s (its statement time limit) for 1,000.
const UNIQUE_CHUNK_ROWS: usize = 100;

/// A reservation made at load.
struct Reservation {
    c_id: i64,
    f_id: i64,
    seat: i64,
}

pub async fn load(s: &Session, params: &Params, report: &mut dyn FnMut(String)) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(params.seed);
    let customers = params.scale.customers() as i64;
    let mut timed = |table: &str, started: Instant, rows: u64| {
        report(format!("{table}: {rows} rows in {:.1} s", started.elapsed().as_secs_f64()));
    };
    let t = Instant::now();
    let rows = countries(s, &mut rng).await?;
    timed("country", t, rows);
    let t = Instant::now();
    let coordinates: Vec<(f64, f64)> =
        (0..AIRPORTS).map(|_| (rng.gen_range(-120.0..-70.0), rng.gen_range(25.0..50.0))).collect();
    let rows = airports(s, &coordinates, &mut rng).await?;
    timed("airport", t, rows);
    let t = Instant::now();
    let rows = distances(s, &coordinates).await?;
    timed("airport_distance", t, rows);
    let t = Instant::now();
    let rows = airlines(s, &mut rng).await?;
    timed("airline", t, rows);
    let t = Instant::now();
    let reservations = flights(s, params.scale.flights as i64, customers, &coordinates, &mut rng).await?;
    timed("flight", t, params.scale.flights);
    let t = Instant::now();
    let rows = load_reservations(s, &reservations, &mut rng).await?;
    timed("reservation", t, rows);
    let t = Instant::now();
    let mut per_customer = vec![0i64; customers as usize + 1];
    for r in &reservations {
        per_customer[r.c_id as usize] += 1;
    }
    let rows = load_customers(s, &per_customer, &mut rng).await?;
    timed("customer", t, rows);
    let t = Instant::now();
    let rows = frequent_flyers(s, params.seed, customers, &mut rng).await?;
    timed("frequent_flyer", t, rows);
    Ok(())
}

fn letters(rng: &mut StdRng, n: usize) -> String {
    (0..n).map(|_| char::from(b'A' + rng.gen_range(0..26u8))).collect()
}

fn word(rng: &mut StdRng, min: usize, max: usize) -> String {
    let n = rng.gen_range(min..=max);
    letters(rng, n)
}

async fn countries(s: &Session, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(s, "country", "co_id, co_name, co_code_2, co_code_3");
    for co in 1..=COUNTRIES {
        let (name, code2, code3) = (word(rng, 6, 16), letters(rng, 2), letters(rng, 3));
        copy.row(&[&co, &name, &code2, &code3]).await?;
    }
    copy.finish().await
}

async fn airports(s: &Session, coordinates: &[(f64, f64)], rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "airport",
        "ap_id, ap_code, ap_name, ap_city, ap_postal_code, ap_co_id, ap_longitude, ap_latitude, ap_gmt_offset, ap_wac",
    );
    for (ap, (longitude, latitude)) in (1..).zip(coordinates) {
        let (code, name, city, postal) = (letters(rng, 3), word(rng, 8, 32), word(rng, 4, 16), letters(rng, 5));
        let (country, offset, wac) = (rng.gen_range(1..=COUNTRIES), (longitude / 15.0).round(), rng.gen_range(1..=999));
        copy.row(&[&ap, &code, &name, &city, &postal, &country, longitude, latitude, &offset, &wac]).await?;
    }
    copy.finish().await
}

/// Great-circle distance in miles.
fn miles((lon0, lat0): (f64, f64), (lon1, lat1): (f64, f64)) -> f64 {
    let (p0, p1) = (lat0.to_radians(), lat1.to_radians());
    let (dp, dl) = (p1 - p0, (lon1 - lon0).to_radians());
    let a = (dp / 2.0).sin().powi(2) + p0.cos() * p1.cos() * (dl / 2.0).sin().powi(2);
    let miles = 2.0 * 3958.8 * a.sqrt().asin();
    (miles * 10.0).round() / 10.0
}

/// Both directions of every pair of airports.
async fn distances(s: &Session, coordinates: &[(f64, f64)]) -> Result<u64> {
    let mut copy = Copier::new(s, "airport_distance", "d_ap_id0, d_ap_id1, d_distance");
    for (a, from) in (1i64..).zip(coordinates) {
        for (b, to) in (1i64..).zip(coordinates) {
            if a != b {
                copy.row(&[&a, &b, &miles(*from, *to)]).await?;
            }
        }
    }
    copy.finish().await
}

async fn airlines(s: &Session, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "airline",
        "al_id, al_iata_code, al_icao_code, al_call_sign, al_name, al_co_id, al_iattr00, al_iattr01",
    );
    for al in 1..=AIRLINES {
        let (iata, icao, call, name) = (letters(rng, 2), letters(rng, 3), word(rng, 4, 12), word(rng, 6, 24));
        let (country, a0, a1) = (rng.gen_range(1..=COUNTRIES), rng.gen_range(0..100i64), rng.gen_range(0..100i64));
        copy.row(&[&al, &iata, &icao, &call, &name, &country, &a0, &a1]).await?;
    }
    copy.finish().await
}

/// Loads the flights; returns the reservations made on them.
async fn flights(
    s: &Session,
    flights: i64,
    customers: i64,
    coordinates: &[(f64, f64)],
    rng: &mut StdRng,
) -> Result<Vec<Reservation>> {
    let mut copy = Copier::new(
        s,
        "flight",
        "f_id, f_al_id, f_depart_ap_id, f_depart_time, f_arrive_ap_id, f_arrive_time, f_status, f_base_price, \
         f_seats_total, f_seats_left",
    );
    let mut reservations = Vec::new();
    for f_id in 1..=flights {
        let depart = rng.gen_range(1..=AIRPORTS);
        let arrive = (depart + rng.gen_range(1..AIRPORTS) - 1) % AIRPORTS + 1;
        let distance = miles(coordinates[depart as usize - 1], coordinates[arrive as usize - 1]);
        // 500 mph plus half an hour on the ground, at most six hours.
        let minutes = ((distance / 500.0 * 60.0) as u32 + 30).min(360);
        let (day, start) = (rng.gen_range(1..=DAYS), rng.gen_range(6 * 60..18 * 60));
        let end = start + minutes;
        let at = |m: u32| format!("{MONTH}-{day:02} {:02}:{:02}:00", m / 60, m % 60);
        let (airline, price) = (rng.gen_range(1..=AIRLINES), f64::from(rng.gen_range(100..=1000u32)));
        let reserved = rng.gen_range(LOADED_SEATS);
        let seats = sample(rng, SEATS_PER_FLIGHT as usize, reserved);
        let passengers = sample(rng, customers as usize, reserved);
        for (seat, c) in seats.iter().zip(passengers.iter()) {
            reservations.push(Reservation { c_id: c as i64 + 1, f_id, seat: seat as i64 + 1 });
        }
        let left = SEATS_PER_FLIGHT - reserved as i64;
        let (depart_at, arrive_at) = (at(start), at(end));
        copy.row(&[&f_id, &airline, &depart, &depart_at, &arrive, &arrive_at, &0i64, &price, &SEATS_PER_FLIGHT, &left])
            .await?;
    }
    copy.finish().await?;
    Ok(reservations)
}

async fn load_reservations(s: &Session, reservations: &[Reservation], rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "reservation",
        "r_id, r_c_id, r_f_id, r_seat, r_price, r_iattr00, r_iattr01, r_iattr02, r_iattr03, r_iattr04, r_iattr05, \
         r_iattr06, r_iattr07, r_iattr08",
    )
    .chunk_rows(UNIQUE_CHUNK_ROWS);
    for (r_id, r) in (1i64..).zip(reservations) {
        let price = f64::from(rng.gen_range(100..=2000u32));
        let attrs: Vec<i64> = (0..9).map(|_| rng.gen_range(0..1000)).collect();
        let mut row: Vec<&dyn Display> = vec![&r_id, &r.c_id, &r.f_id, &r.seat, &price];
        row.extend(attrs.iter().map(|a| a as &dyn Display));
        copy.row(&row).await?;
    }
    copy.finish().await
}

/// `per_customer[c]` is customer c's number of reservations (index 0 unused).
async fn load_customers(s: &Session, per_customer: &[i64], rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "customer",
        "c_id, c_id_str, c_base_ap_id, c_balance, c_sattr00, c_sattr01, c_sattr02, c_sattr03, c_sattr04, \
         c_iattr00, c_iattr01, c_iattr02, c_iattr03, c_iattr04, c_iattr05, c_iattr06, c_iattr07, c_iattr08, \
         c_iattr09, c_iattr10, c_iattr11, c_iattr12, c_iattr13, c_iattr14, c_iattr15",
    )
    .chunk_rows(UNIQUE_CHUNK_ROWS);
    for (c_id, reservations) in (0i64..).zip(per_customer).skip(1) {
        let id = id_str(c_id);
        // One customer in ten has no base airport (C_BASE_AP_ID is nullable).
        let base: Box<dyn Display> =
            if rng.gen_range(0..10) == 0 { Box::new(Null) } else { Box::new(rng.gen_range(1..=AIRPORTS)) };
        let balance = f64::from(rng.gen_range(0..=100_000u32)) / 100.0;
        let sattrs = [word(rng, 4, 32), word(rng, 2, 8), word(rng, 2, 8), word(rng, 2, 8), word(rng, 2, 8)];
        let iattrs: Vec<i64> = (0..10).map(|_| rng.gen_range(0..1000)).collect();
        let tail: Vec<i64> = (0..4).map(|_| rng.gen_range(0..1000)).collect();
        let mut row: Vec<&dyn Display> = vec![&c_id, &id, &*base, &balance];
        row.extend(sattrs.iter().map(|a| a as &dyn Display));
        row.extend(iattrs.iter().map(|a| a as &dyn Display));
        row.extend([reservations as &dyn Display, reservations]);
        row.extend(tail.iter().map(|a| a as &dyn Display));
        copy.row(&row).await?;
    }
    copy.finish().await
}

async fn frequent_flyers(s: &Session, seed: u64, customers: i64, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "frequent_flyer",
        "ff_c_id, ff_al_id, ff_c_id_str, ff_sattr00, ff_iattr00, ff_iattr01, ff_iattr10, ff_iattr11, ff_iattr12, \
         ff_iattr13, ff_iattr14",
    );
    for c_id in 1..=customers {
        let id = id_str(c_id);
        for airline in frequent_flyer_airlines(seed, c_id) {
            let name = word(rng, 4, 32);
            let attrs: Vec<i64> = (0..7).map(|_| rng.gen_range(0..1000)).collect();
            let mut row: Vec<&dyn Display> = vec![&c_id, &airline, &id, &name];
            row.extend(attrs.iter().map(|a| a as &dyn Display));
            copy.row(&row).await?;
        }
    }
    copy.finish().await
}
