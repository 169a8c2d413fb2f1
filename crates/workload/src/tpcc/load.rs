//! The initial population (spec 4.3.3.1), generated from a seeded RNG and loaded with COPY.

use super::random::{astring, data_with_original, last_name, nstring, nurand, zip, NuRandC};
use super::{Scale, DISTRICTS};
use crate::conn::{error_text, Session};
use crate::copy::{Copier, Null};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::time::Instant;

/// Opening balances (cents): W_YTD = 300,000.00 and D_YTD = 30,000.00, so that consistency
/// condition 1 holds (4.3.3.1).
const W_YTD: i64 = 30_000_000;
const D_YTD: i64 = 3_000_000;

/// Loads every table; `report` receives one line per table.
pub async fn load(
    s: &Session,
    scale: &Scale,
    c: &NuRandC,
    rng: &mut StdRng,
    report: &mut dyn FnMut(String),
) -> Result<()> {
    // The load time as the server writes timestamps, so COPY reads it back on any endpoint.
    let now: String = s
        .client
        .query_one("SELECT CAST(CAST(now() AS TIMESTAMP) AS TEXT)", &[])
        .await
        .map_err(|e| anyhow!("cannot read the server's time: {}", error_text(&e)))?
        .try_get(0)?;
    let mut timed = |table: &str, started: Instant, rows: u64| {
        report(format!("{table}: {rows} rows in {:.1} s", started.elapsed().as_secs_f64()));
    };
    let t = Instant::now();
    let rows = items(s, scale, rng).await?;
    timed("item", t, rows);
    for w in 1..=scale.warehouses {
        let t = Instant::now();
        let mut rows = warehouse(s, w, rng).await?;
        rows += stock(s, scale, w, rng).await?;
        rows += districts(s, scale, w, rng).await?;
        rows += customers_and_history(s, scale, c, w, &now, rng).await?;
        rows += orders(s, scale, w, &now, rng).await?;
        timed(&format!("warehouse {w}"), t, rows);
    }
    Ok(())
}

async fn items(s: &Session, scale: &Scale, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(s, "item", "i_id, i_im_id, i_name, i_price, i_data");
    for i in 1..=scale.items {
        let (im, name, price, data) =
            (rng.gen_range(1..=10_000), astring(rng, 14, 24), rng.gen_range(100..=10_000), data_with_original(rng));
        copy.row(&[&i, &im, &name, &price, &data]).await?;
    }
    copy.finish().await
}

/// Name, two street lines, city, state and zip (4.3.3.1's address fields).
fn address(rng: &mut StdRng) -> [String; 6] {
    [astring(rng, 6, 10), astring(rng, 10, 20), astring(rng, 10, 20), astring(rng, 10, 20), letters(rng, 2), zip(rng)]
}

fn letters(rng: &mut StdRng, n: usize) -> String {
    (0..n).map(|_| char::from(b'A' + rng.gen_range(0..26u8))).collect()
}

async fn warehouse(s: &Session, w: u64, rng: &mut StdRng) -> Result<u64> {
    let mut copy =
        Copier::new(s, "warehouse", "w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd");
    let [name, s1, s2, city, state, zip] = address(rng);
    let tax: i64 = rng.gen_range(0..=2000);
    copy.row(&[&w, &name, &s1, &s2, &city, &state, &zip, &tax, &W_YTD]).await?;
    copy.finish().await
}

async fn stock(s: &Session, scale: &Scale, w: u64, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "stock",
        "s_w_id, s_i_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, \
         s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data",
    );
    for i in 1..=scale.items {
        let quantity: i64 = rng.gen_range(10..=100);
        let dists: Vec<String> = (0..DISTRICTS).map(|_| astring(rng, 24, 24)).collect();
        let data = data_with_original(rng);
        let zero = 0i64;
        let mut fields: Vec<&dyn std::fmt::Display> = vec![&w, &i, &quantity];
        fields.extend(dists.iter().map(|d| d as &dyn std::fmt::Display));
        fields.extend([&zero as &dyn std::fmt::Display, &zero, &zero, &data]);
        copy.row(&fields).await?;
    }
    copy.finish().await
}

async fn districts(s: &Session, scale: &Scale, w: u64, rng: &mut StdRng) -> Result<u64> {
    let mut copy = Copier::new(
        s,
        "district",
        "d_w_id, d_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id",
    );
    for d in 1..=DISTRICTS {
        let [name, s1, s2, city, state, zip] = address(rng);
        let tax: i64 = rng.gen_range(0..=2000);
        let next = scale.customers + 1;
        copy.row(&[&w, &d, &name, &s1, &s2, &city, &state, &zip, &tax, &D_YTD, &next]).await?;
    }
    copy.finish().await
}

async fn customers_and_history(
    s: &Session,
    scale: &Scale,
    c: &NuRandC,
    w: u64,
    now: &str,
    rng: &mut StdRng,
) -> Result<u64> {
    let mut customers = Copier::new(
        s,
        "customer",
        "c_w_id, c_d_id, c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_delivery_cnt, c_data",
    );
    let mut history = Copier::new(s, "history", "h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data");
    for d in 1..=DISTRICTS {
        for id in 1..=scale.customers {
            // The first 1,000 customers of a district take the 1,000 names in order (4.3.3.1).
            let last = if id <= 1000 { last_name(id - 1) } else { last_name(nurand(rng, 255, c.last, 0, 999)) };
            let first = astring(rng, 8, 16);
            let [_, s1, s2, city, state, zip] = address(rng);
            let phone = nstring(rng, 16);
            let credit = if rng.gen_range(0..10) == 0 { "BC" } else { "GC" };
            let discount: i64 = rng.gen_range(0..=5000);
            let data = astring(rng, 300, 500);
            let (limit, balance, ytd, payments, deliveries) = (5_000_000i64, -1000i64, 1000i64, 1i64, 0i64);
            customers
                .row(&[
                    &w,
                    &d,
                    &id,
                    &first,
                    &"OE",
                    &last,
                    &s1,
                    &s2,
                    &city,
                    &state,
                    &zip,
                    &phone,
                    &now,
                    &credit,
                    &limit,
                    &discount,
                    &balance,
                    &ytd,
                    &payments,
                    &deliveries,
                    &data,
                ])
                .await?;
            let h_data = astring(rng, 12, 24);
            history.row(&[&id, &d, &w, &d, &w, &now, &1000i64, &h_data]).await?;
        }
    }
    Ok(customers.finish().await? + history.finish().await?)
}

/// Orders, their lines and the undelivered last 30% of them in new_order (4.3.3.1).
async fn orders(s: &Session, scale: &Scale, w: u64, now: &str, rng: &mut StdRng) -> Result<u64> {
    let mut orders =
        Copier::new(s, "orders", "o_w_id, o_d_id, o_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local");
    let mut lines = Copier::new(
        s,
        "order_line",
        "ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info",
    );
    let mut new_orders = Copier::new(s, "new_order", "no_w_id, no_d_id, no_o_id");
    let first_undelivered = scale.first_undelivered();
    for d in 1..=DISTRICTS {
        let mut customer_ids: Vec<u64> = (1..=scale.customers).collect();
        customer_ids.shuffle(rng);
        for (o, c_id) in (1..=scale.customers).zip(customer_ids) {
            let delivered = o < first_undelivered;
            let line_count: i64 = rng.gen_range(5..=15);
            let carrier_id: i64 = rng.gen_range(1..=10);
            let carrier: &dyn std::fmt::Display = if delivered { &carrier_id } else { &Null };
            orders.row(&[&w, &d, &o, &c_id, &now, carrier, &line_count, &1i64]).await?;
            for number in 1..=line_count {
                let item = rng.gen_range(1..=scale.items);
                let amount: i64 = if delivered { 0 } else { rng.gen_range(1..=999_999) };
                let delivery: &dyn std::fmt::Display = if delivered { &now } else { &Null };
                let info = astring(rng, 24, 24);
                lines.row(&[&w, &d, &o, &number, &item, &w, delivery, &5i64, &amount, &info]).await?;
            }
            if !delivered {
                new_orders.row(&[&w, &d, &o]).await?;
            }
        }
    }
    Ok(orders.finish().await? + lines.finish().await? + new_orders.finish().await?)
}
