//! The five transactions (spec 2.4–2.8), their inputs (chosen once, reused by retries) and
//! the standard mix: 45% New-Order, 43% Payment, 4% each Order-Status, Delivery, Stock-Level.

use super::random::{last_name, nurand, NuRandC};
use super::{Params, Scale, DISTRICTS, SPEC_CUSTOMERS, SPEC_ITEMS};
use crate::conn::{int, int_opt, Session};
use crate::driver::{Outcome, Workload};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::Rng;
use std::time::SystemTime;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

const KINDS: &[&str] = &["new_order", "payment", "order_status", "delivery", "stock_level"];
const NEW_ORDER: usize = 0;
/// Order-Status and Stock-Level only read (2.6, 2.8).
const READ_ONLY: [usize; 2] = [2, 4];

pub struct Tpcc {
    scale: Scale,
    c: NuRandC,
}

/// How Payment and Order-Status find their customer (60% by last name, 2.5.1.2).
#[derive(Debug)]
pub enum CustomerKey {
    Id(i64),
    LastName(String),
}

#[derive(Debug)]
pub struct OrderLineInput {
    item: i64,
    supply_w: i64,
    quantity: i64,
}

#[derive(Debug)]
pub enum Txn {
    NewOrder { w: i64, d: i64, c: i64, lines: Vec<OrderLineInput>, all_local: bool },
    Payment { w: i64, d: i64, c_w: i64, c_d: i64, customer: CustomerKey, amount: i64 },
    OrderStatus { w: i64, d: i64, customer: CustomerKey },
    Delivery { w: i64, carrier: i64 },
    StockLevel { w: i64, d: i64, threshold: i64 },
}

/// An item id that does not exist: New-Order's 1% rollback (2.4.1.4).
const UNUSED_ITEM: i64 = -1;

impl Tpcc {
    pub fn new(params: &Params, rng: &mut impl Rng) -> Tpcc {
        let load = NuRandC { last: params.c_last, customer: params.c_customer, item: params.c_item };
        Tpcc { scale: params.scale.clone(), c: NuRandC::run(&load, rng) }
    }

    /// NURand(1023, 1, 3000), folded onto a scaled-down customer count.
    fn customer_id(&self, rng: &mut StdRng) -> i64 {
        let id = nurand(rng, 1023, self.c.customer, 1, SPEC_CUSTOMERS);
        ((id - 1) % self.scale.customers + 1) as i64
    }

    fn item_id(&self, rng: &mut StdRng) -> i64 {
        let id = nurand(rng, 8191, self.c.item, 1, SPEC_ITEMS);
        ((id - 1) % self.scale.items + 1) as i64
    }

    /// NURand(255, 0, 999) over the names that exist (all 1,000 at the spec's scale).
    fn last_name(&self, rng: &mut StdRng) -> String {
        let n = nurand(rng, 255, self.c.last, 0, 999);
        last_name(n % self.scale.customers.min(1000))
    }

    fn customer_key(&self, rng: &mut StdRng) -> CustomerKey {
        if rng.gen_range(1..=100) <= 60 {
            CustomerKey::LastName(self.last_name(rng))
        } else {
            CustomerKey::Id(self.customer_id(rng))
        }
    }

    fn other_warehouse(&self, w: i64, rng: &mut StdRng) -> i64 {
        let others = self.scale.warehouses as i64 - 1;
        let pick = rng.gen_range(1..=others);
        if pick >= w {
            pick + 1
        } else {
            pick
        }
    }

    fn new_order(&self, w: i64, rng: &mut StdRng) -> Txn {
        let d = rng.gen_range(1..=DISTRICTS as i64);
        let c = self.customer_id(rng);
        let count = rng.gen_range(5..=15);
        let rollback = rng.gen_range(1..=100) == 1;
        let mut lines: Vec<OrderLineInput> = (0..count)
            .map(|_| {
                let remote = self.scale.warehouses > 1 && rng.gen_range(1..=100) == 1;
                let supply_w = if remote { self.other_warehouse(w, rng) } else { w };
                OrderLineInput { item: self.item_id(rng), supply_w, quantity: rng.gen_range(1..=10) }
            })
            .collect();
        if rollback {
            if let Some(last) = lines.last_mut() {
                last.item = UNUSED_ITEM;
            }
        }
        let all_local = lines.iter().all(|l| l.supply_w == w);
        Txn::NewOrder { w, d, c, lines, all_local }
    }

    fn payment(&self, w: i64, rng: &mut StdRng) -> Txn {
        let d = rng.gen_range(1..=DISTRICTS as i64);
        let remote = self.scale.warehouses > 1 && rng.gen_range(1..=100) > 85;
        let (c_w, c_d) =
            if remote { (self.other_warehouse(w, rng), rng.gen_range(1..=DISTRICTS as i64)) } else { (w, d) };
        Txn::Payment { w, d, c_w, c_d, customer: self.customer_key(rng), amount: rng.gen_range(100..=500_000) }
    }
}

impl Workload for Tpcc {
    type Txn = Txn;

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn read_only(&self, kind: usize) -> bool {
        READ_ONLY.contains(&kind)
    }

    /// Client `client` is a terminal of warehouse `client % W + 1` (2.2.1.1); its
    /// Stock-Level district is fixed too (2.8.1.1).
    fn next(&self, client: usize, rng: &mut StdRng) -> (usize, Txn) {
        let w = (client as u64 % self.scale.warehouses + 1) as i64;
        let roll = rng.gen_range(1..=100);
        match roll {
            1..=45 => (NEW_ORDER, self.new_order(w, rng)),
            46..=88 => (1, self.payment(w, rng)),
            89..=92 => {
                let d = rng.gen_range(1..=DISTRICTS as i64);
                (2, Txn::OrderStatus { w, d, customer: self.customer_key(rng) })
            }
            93..=96 => (3, Txn::Delivery { w, carrier: rng.gen_range(1..=10) }),
            _ => {
                let d = (client as u64 / self.scale.warehouses % DISTRICTS + 1) as i64;
                (4, Txn::StockLevel { w, d, threshold: rng.gen_range(10..=20) })
            }
        }
    }

    async fn execute(&self, s: &mut Session, txn: &Txn) -> Result<Outcome> {
        match txn {
            Txn::NewOrder { w, d, c, lines, all_local } => new_order(s, *w, *d, *c, lines, *all_local).await,
            Txn::Payment { w, d, c_w, c_d, customer, amount } => {
                payment(s, *w, *d, *c_w, *c_d, customer, *amount).await
            }
            Txn::OrderStatus { w, d, customer } => order_status(s, *w, *d, customer).await,
            Txn::Delivery { w, carrier } => delivery(s, *w, *carrier).await,
            Txn::StockLevel { w, d, threshold } => stock_level(s, *w, *d, *threshold).await,
        }
    }

    /// tpmC: New-Order transactions committed per minute (5.4.1).
    fn headline(&self, committed: &[u64], elapsed_s: f64) -> Option<String> {
        let new_orders = *committed.get(NEW_ORDER)?;
        Some(format!("tpmC: {:.1} (New-Order commits per minute)", new_orders as f64 * 60.0 / elapsed_s.max(1e-9)))
    }
}

/// The one row `sql` must return.
async fn one(s: &mut Session, sql: &str, params: &[&(dyn ToSql + Sync)], what: &str) -> Result<Row> {
    s.query_opt(sql, params).await?.ok_or_else(|| anyhow!("{what} not found"))
}

async fn new_order(
    s: &mut Session,
    w: i64,
    d: i64,
    c: i64,
    lines: &[OrderLineInput],
    all_local: bool,
) -> Result<Outcome> {
    let row = one(s, "SELECT w_tax FROM warehouse WHERE w_id = $1", &[&w], "warehouse").await?;
    let _w_tax = int(&row, 0)?;
    let row = one(s, "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2", &[&w, &d], "district")
        .await?;
    let o_id = int(&row, 1)?;
    s.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2", &[&w, &d]).await?;
    one(
        s,
        "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[&w, &d, &c],
        "customer",
    )
    .await?;
    let now = SystemTime::now();
    let (count, local) = (lines.len() as i64, i64::from(all_local));
    s.execute(
        "INSERT INTO orders (o_w_id, o_d_id, o_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) \
         VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)",
        &[&w, &d, &o_id, &c, &now, &count, &local],
    )
    .await?;
    s.execute("INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES ($1, $2, $3)", &[&w, &d, &o_id]).await?;
    for (number, line) in (1i64..).zip(lines) {
        let Some(item) = s.query_opt("SELECT i_price, i_name, i_data FROM item WHERE i_id = $1", &[&line.item]).await?
        else {
            // The 1% of New-Orders with an unused item id roll back (2.4.2.3).
            return Ok(Outcome::Rollback);
        };
        let price = int(&item, 0)?;
        let stock = one(
            s,
            "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, \
             s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = $1 AND s_i_id = $2",
            &[&line.supply_w, &line.item],
            "stock",
        )
        .await?;
        let quantity = int(&stock, 0)?;
        let dist_info: String = stock.try_get(1 + d as usize)?;
        let new_quantity =
            if quantity >= line.quantity + 10 { quantity - line.quantity } else { quantity - line.quantity + 91 };
        let remote = i64::from(line.supply_w != w);
        s.execute(
            "UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, \
             s_remote_cnt = s_remote_cnt + $3 WHERE s_w_id = $4 AND s_i_id = $5",
            &[&new_quantity, &line.quantity, &remote, &line.supply_w, &line.item],
        )
        .await?;
        let amount = line.quantity * price;
        s.execute(
            "INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, \
             ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)",
            &[&w, &d, &o_id, &number, &line.item, &line.supply_w, &line.quantity, &amount, &dist_info],
        )
        .await?;
    }
    Ok(Outcome::Commit)
}

/// The customer's id: directly, or the middle one (n/2 rounded up) of those with the last
/// name, ordered by first name (2.5.2.2).
async fn find_customer(s: &mut Session, w: i64, d: i64, key: &CustomerKey) -> Result<i64> {
    match key {
        CustomerKey::Id(id) => Ok(*id),
        CustomerKey::LastName(name) => {
            let rows = s
                .query(
                    "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
                    &[&w, &d, name],
                )
                .await?;
            let middle = rows.get((rows.len().max(1) - 1) / 2).ok_or_else(|| anyhow!("no customer named {name}"))?;
            int(middle, 0)
        }
    }
}

async fn payment(
    s: &mut Session,
    w: i64,
    d: i64,
    c_w: i64,
    c_d: i64,
    customer: &CustomerKey,
    amount: i64,
) -> Result<Outcome> {
    s.execute("UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2", &[&amount, &w]).await?;
    let row = one(
        s,
        "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = $1",
        &[&w],
        "warehouse",
    )
    .await?;
    let w_name: String = row.try_get(0)?;
    s.execute("UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3", &[&amount, &w, &d]).await?;
    let row = one(
        s,
        "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = $1 AND d_id = $2",
        &[&w, &d],
        "district",
    )
    .await?;
    let d_name: String = row.try_get(0)?;
    let c = find_customer(s, c_w, c_d, customer).await?;
    let row = one(
        s,
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, \
         c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[&c_w, &c_d, &c],
        "customer",
    )
    .await?;
    let credit: String = row.try_get(10)?;
    s.execute(
        "UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, \
         c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
        &[&amount, &c_w, &c_d, &c],
    )
    .await?;
    if credit == "BC" {
        // Bad credit: the payment is prepended to C_DATA, kept to 500 characters (2.5.2.2).
        let row = one(
            s,
            "SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            &[&c_w, &c_d, &c],
            "customer",
        )
        .await?;
        let old: String = row.try_get(0)?;
        let mut data = format!("{c} {c_d} {c_w} {d} {w} {amount} | {old}");
        data.truncate(500);
        s.execute(
            "UPDATE customer SET c_data = $1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            &[&data, &c_w, &c_d, &c],
        )
        .await?;
    }
    let h_data = format!("{w_name}    {d_name}");
    let now = SystemTime::now();
    s.execute(
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[&c, &c_d, &c_w, &d, &w, &now, &amount, &h_data],
    )
    .await?;
    Ok(Outcome::Commit)
}

async fn order_status(s: &mut Session, w: i64, d: i64, customer: &CustomerKey) -> Result<Outcome> {
    let c = find_customer(s, w, d, customer).await?;
    one(
        s,
        "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
        &[&w, &d, &c],
        "customer",
    )
    .await?;
    let order = s
        .query_opt(
            "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 \
             ORDER BY o_id DESC LIMIT 1",
            &[&w, &d, &c],
        )
        .await?;
    if let Some(order) = order {
        let o_id = int(&order, 0)?;
        s.query(
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
             WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            &[&w, &d, &o_id],
        )
        .await?;
    }
    Ok(Outcome::Commit)
}

/// All ten districts' oldest undelivered orders in one transaction (2.7.4); a district
/// with none is skipped.
async fn delivery(s: &mut Session, w: i64, carrier: i64) -> Result<Outcome> {
    let now = SystemTime::now();
    for d in 1..=DISTRICTS as i64 {
        let Some(row) = s
            .query_opt(
                "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1",
                &[&w, &d],
            )
            .await?
        else {
            continue;
        };
        let o_id = int(&row, 0)?;
        s.execute("DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3", &[&w, &d, &o_id])
            .await?;
        let row = one(
            s,
            "SELECT o_c_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3",
            &[&w, &d, &o_id],
            "order",
        )
        .await?;
        let c = int(&row, 0)?;
        s.execute(
            "UPDATE orders SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4",
            &[&carrier, &w, &d, &o_id],
        )
        .await?;
        s.execute(
            "UPDATE order_line SET ol_delivery_d = $1 WHERE ol_w_id = $2 AND ol_d_id = $3 AND ol_o_id = $4",
            &[&now, &w, &d, &o_id],
        )
        .await?;
        let row = one(
            s,
            "SELECT CAST(SUM(ol_amount) AS BIGINT) FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            &[&w, &d, &o_id],
            "order lines",
        )
        .await?;
        let total = int_opt(&row, 0)?.unwrap_or(0);
        s.execute(
            "UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 \
             WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            &[&total, &w, &d, &c],
        )
        .await?;
    }
    Ok(Outcome::Commit)
}

/// Recently sold items (the last 20 orders' lines) with stock below the threshold (2.8.2.2).
async fn stock_level(s: &mut Session, w: i64, d: i64, threshold: i64) -> Result<Outcome> {
    let row = one(s, "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2", &[&w, &d], "district").await?;
    let next = int(&row, 0)?;
    let oldest = next - 20;
    one(
        s,
        "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 \
         AND ol_o_id < $3 AND ol_o_id >= $4 AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $5",
        &[&w, &d, &next, &oldest, &threshold],
        "stock count",
    )
    .await?;
    Ok(Outcome::Commit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn tpcc(warehouses: u64) -> Tpcc {
        let params =
            Params { scale: Scale { warehouses, items: 1000, customers: 30 }, c_last: 1, c_customer: 2, c_item: 3 };
        Tpcc::new(&params, &mut StdRng::seed_from_u64(1))
    }

    #[test]
    fn the_mix_and_the_rollbacks_follow_the_spec() {
        let t = tpcc(2);
        let mut rng = StdRng::seed_from_u64(9);
        let mut kinds = [0u32; 5];
        let (mut new_orders, mut rollbacks, mut remote_lines, mut lines_total) = (0, 0, 0, 0);
        for client in 0..100_000 {
            let (kind, txn) = t.next(client % 8, &mut rng);
            kinds[kind] += 1;
            if let Txn::NewOrder { w, lines, .. } = txn {
                new_orders += 1;
                rollbacks += u32::from(lines.last().is_some_and(|l| l.item == UNUSED_ITEM));
                remote_lines += lines.iter().filter(|l| l.supply_w != w).count();
                lines_total += lines.len();
                assert!(lines.iter().all(|l| l.item == UNUSED_ITEM || (1..=1000).contains(&l.item)));
            }
        }
        let share = |n: u32| f64::from(n) / 1000.0;
        assert!((43.0..47.0).contains(&share(kinds[0])), "{kinds:?}");
        assert!((41.0..45.0).contains(&share(kinds[1])), "{kinds:?}");
        for k in &kinds[2..] {
            assert!((3.0..5.0).contains(&share(*k)), "{kinds:?}");
        }
        let rollback_pct = f64::from(rollbacks) * 100.0 / f64::from(new_orders);
        assert!((0.7..1.3).contains(&rollback_pct), "{rollback_pct}");
        let remote_pct = remote_lines as f64 * 100.0 / lines_total as f64;
        assert!((0.7..1.3).contains(&remote_pct), "{remote_pct}");
    }
}
