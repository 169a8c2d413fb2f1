//! TPC-C New-Order and Stock-Level on one warehouse (TPC-C 5.11, clauses 2.4 and 2.8), the
//! same statements on both engines, each transaction between BEGIN and COMMIT (or ROLLBACK).
//!
//! Schema: the columns of the spec's nine tables that these two transactions and the
//! population use (no history table; no payment/delivery columns beyond the spec's
//! population of them). Money is stored as integer cents and rates (tax, discount) as
//! integer basis points, so both engines compute bit-identical results. Population follows
//! clause 4.3.3.1 at full scale: 100,000 items and stock rows, 10 districts, 30,000
//! customers, 30,000 orders with 5..15 lines each (about 300,000 order lines), 9,000
//! new-order rows. Random choices come from a seeded generator, so both engines receive the
//! same rows and the same transaction inputs.

use pistou_sql::{Database, Prepared, Value};
use rusqlite::Connection;
use std::collections::HashMap;
use std::sync::Arc;

pub const ITEMS: i64 = 100_000;
const DISTRICTS: i64 = 10;
const CUSTOMERS: i64 = 3_000;
const ORDERS: i64 = 3_000;
/// Orders above this id are undelivered (in new_order), clause 4.3.3.1.
const DELIVERED: i64 = 2_100;
/// Transactions per mix round: this many New-Order, then one Stock-Level.
pub const NEW_ORDERS_PER_STOCK_LEVEL: u64 = 10;

pub const SCHEMA: [&str; 8] = [
    "CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name TEXT NOT NULL, w_street_1 TEXT NOT NULL, w_city TEXT NOT NULL, w_state TEXT NOT NULL, w_zip TEXT NOT NULL, w_tax INT NOT NULL, w_ytd INT NOT NULL)",
    "CREATE TABLE district (d_w_id INT, d_id INT, d_name TEXT NOT NULL, d_street_1 TEXT NOT NULL, d_city TEXT NOT NULL, d_state TEXT NOT NULL, d_zip TEXT NOT NULL, d_tax INT NOT NULL, d_ytd INT NOT NULL, d_next_o_id INT NOT NULL, PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (c_w_id INT, c_d_id INT, c_id INT, c_first TEXT NOT NULL, c_middle TEXT NOT NULL, c_last TEXT NOT NULL, c_street_1 TEXT NOT NULL, c_city TEXT NOT NULL, c_state TEXT NOT NULL, c_zip TEXT NOT NULL, c_phone TEXT NOT NULL, c_since INT NOT NULL, c_credit TEXT NOT NULL, c_credit_lim INT NOT NULL, c_discount INT NOT NULL, c_balance INT NOT NULL, c_ytd_payment INT NOT NULL, c_payment_cnt INT NOT NULL, c_delivery_cnt INT NOT NULL, c_data TEXT NOT NULL, PRIMARY KEY (c_w_id, c_d_id, c_id))",
    "CREATE TABLE item (i_id INT PRIMARY KEY, i_im_id INT NOT NULL, i_name TEXT NOT NULL, i_price INT NOT NULL, i_data TEXT NOT NULL)",
    "CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT NOT NULL, s_dist_01 TEXT NOT NULL, s_dist_02 TEXT NOT NULL, s_dist_03 TEXT NOT NULL, s_dist_04 TEXT NOT NULL, s_dist_05 TEXT NOT NULL, s_dist_06 TEXT NOT NULL, s_dist_07 TEXT NOT NULL, s_dist_08 TEXT NOT NULL, s_dist_09 TEXT NOT NULL, s_dist_10 TEXT NOT NULL, s_ytd INT NOT NULL, s_order_cnt INT NOT NULL, s_remote_cnt INT NOT NULL, s_data TEXT NOT NULL, PRIMARY KEY (s_w_id, s_i_id))",
    "CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_c_id INT NOT NULL, o_entry_d INT NOT NULL, o_carrier_id INT, o_ol_cnt INT NOT NULL, o_all_local INT NOT NULL, PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE new_order (no_w_id INT, no_d_id INT, no_o_id INT, PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_i_id INT NOT NULL, ol_supply_w_id INT NOT NULL, ol_delivery_d INT, ol_quantity INT NOT NULL, ol_amount INT NOT NULL, ol_dist_info TEXT NOT NULL, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
];

const INSERT_WAREHOUSE: &str = "INSERT INTO warehouse VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const INSERT_DISTRICT: &str = "INSERT INTO district VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
const INSERT_CUSTOMER: &str = "INSERT INTO customer VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)";
const INSERT_ITEM: &str = "INSERT INTO item VALUES ($1, $2, $3, $4, $5)";
const INSERT_STOCK: &str =
    "INSERT INTO stock VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";
const INSERT_ORDER: &str = "INSERT INTO orders (o_w_id, o_d_id, o_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const INSERT_NEW_ORDER: &str = "INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES ($1, $2, $3)";
const INSERT_ORDER_LINE: &str = "INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

// New-Order (clause 2.4.2.2).
const NO_CUSTOMER: &str = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3";
const NO_DISTRICT: &str = "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2";
const NO_BUMP_DISTRICT: &str = "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2";
const NO_ITEM: &str = "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1";
const NO_STOCK: &str = "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = $1 AND s_i_id = $2";
const NO_UPDATE_STOCK: &str = "UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $3 WHERE s_w_id = $4 AND s_i_id = $5";
// Stock-Level (clause 2.8.2.2).
const SL_DISTRICT: &str = "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2";
const SL_COUNT: &str = "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 AND s_w_id = $1 AND s_i_id = ol_i_id AND s_quantity < $5";

/// One engine: runs a statement with parameters, returns its rows.
pub trait Engine {
    fn run(&mut self, sql: &'static str, params: &[Value]) -> Vec<Vec<Value>>;
}

pub struct Pistou {
    pub db: Database,
    prepared: HashMap<&'static str, Arc<Prepared>>,
}

impl Pistou {
    pub fn new() -> Self {
        Pistou { db: Database::new(), prepared: HashMap::new() }
    }
}

impl Engine for Pistou {
    fn run(&mut self, sql: &'static str, params: &[Value]) -> Vec<Vec<Value>> {
        let db = &self.db;
        let prepared = self.prepared.entry(sql).or_insert_with(|| db.prepare(sql).expect("pistou prepare")).clone();
        match self.db.execute_prepared(&prepared, params).expect(sql).output {
            pistou_sql::Output::Rows { rows, .. } => rows,
            _ => Vec::new(),
        }
    }
}

pub struct Sqlite {
    pub conn: Connection,
    /// Statement text with `?n` parameters, by the `$n` text (SQLite caches the statements).
    text: HashMap<&'static str, String>,
}

impl Sqlite {
    pub fn new() -> Self {
        Sqlite { conn: Connection::open_in_memory().expect("sqlite"), text: HashMap::new() }
    }
}

impl Engine for Sqlite {
    fn run(&mut self, sql: &'static str, params: &[Value]) -> Vec<Vec<Value>> {
        use rusqlite::types::Value as V;
        let text = self.text.entry(sql).or_insert_with(|| sql.replace('$', "?"));
        let mut stmt = self.conn.prepare_cached(text).expect("sqlite prepare");
        let params = params.iter().map(|p| match p {
            Value::Int(i) => V::Integer(*i),
            Value::Text(s) => V::Text(s.clone()),
            _ => V::Null,
        });
        let width = stmt.column_count();
        if width == 0 {
            stmt.execute(rusqlite::params_from_iter(params)).expect(sql);
            return Vec::new();
        }
        let mut rows = stmt.query(rusqlite::params_from_iter(params)).expect(sql);
        let mut out = Vec::new();
        while let Some(row) = rows.next().expect("sqlite row") {
            out.push(
                (0..width)
                    .map(|i| match row.get::<_, V>(i).expect("sqlite column") {
                        V::Integer(n) => Value::Int(n),
                        V::Text(s) => Value::Text(s),
                        V::Real(f) => Value::Float(f),
                        _ => Value::Null,
                    })
                    .collect(),
            );
        }
        out
    }
}

/// splitmix64: a small deterministic generator (the same stream on both engines).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi].
    fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    /// NURand(A, x, y) of clause 2.1.6 (C fixed at 42 and 7 for the run).
    fn nurand(&mut self, a: i64, x: i64, y: i64, c: i64) -> i64 {
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// Random alphanumeric text of length in [lo, hi] (clause 4.3.2.2).
    fn astring(&mut self, lo: i64, hi: i64) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let len = self.uniform(lo, hi);
        (0..len).map(|_| ALPHABET[(self.next() % ALPHABET.len() as u64) as usize] as char).collect()
    }

    fn nstring(&mut self, len: i64) -> String {
        (0..len).map(|_| char::from(b'0' + (self.next() % 10) as u8)).collect()
    }
}

const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// C_LAST of clause 4.3.2.3.
fn last_name(n: i64) -> String {
    [n / 100, (n / 10) % 10, n % 10].iter().map(|d| SYLLABLES[*d as usize]).collect()
}

/// I_DATA / S_DATA: 26..50 characters, 10% containing "ORIGINAL" (clause 4.3.3.1).
fn data_with_original(rng: &mut Rng) -> String {
    let mut s = rng.astring(26, 50);
    if rng.uniform(1, 10) == 1 {
        let at = rng.uniform(0, s.len() as i64 - 8) as usize;
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

fn int(i: i64) -> Value {
    Value::Int(i)
}

fn text(s: String) -> Value {
    Value::Text(s)
}

/// Creates the schema and loads the initial population (clause 4.3.3.1), one transaction
/// per table; returns the number of rows loaded.
pub fn load(e: &mut impl Engine) -> usize {
    for s in SCHEMA {
        e.run(s, &[]);
    }
    let mut rng = Rng::new(1);
    let mut rows = 0;
    let mut put = |sql: &'static str, values: Vec<Value>| {
        rows += 1;
        e.run(sql, &values);
    };
    put("BEGIN", vec![]);
    for i in 1..=ITEMS {
        let row = vec![
            int(i),
            int(rng.uniform(1, 10_000)),
            text(rng.astring(14, 24)),
            int(rng.uniform(100, 10_000)),
            text(data_with_original(&mut rng)),
        ];
        put(INSERT_ITEM, row);
    }
    let w = 1;
    let address = |rng: &mut Rng| {
        vec![
            text(rng.astring(10, 20)),
            text(rng.astring(10, 20)),
            text(rng.astring(2, 2)),
            text(format!("{}11111", rng.nstring(4))),
        ]
    };
    let mut row = vec![int(w), text(rng.astring(6, 10))];
    row.extend(address(&mut rng));
    row.extend([int(rng.uniform(0, 2000)), int(30_000_000)]);
    put(INSERT_WAREHOUSE, row);
    for i in 1..=ITEMS {
        let mut row = vec![int(w), int(i), int(rng.uniform(10, 100))];
        row.extend((0..10).map(|_| text(rng.astring(24, 24))));
        row.extend([int(0), int(0), int(0), text(data_with_original(&mut rng))]);
        put(INSERT_STOCK, row);
    }
    for d in 1..=DISTRICTS {
        let mut row = vec![int(w), int(d), text(rng.astring(6, 10))];
        row.extend(address(&mut rng));
        row.extend([int(rng.uniform(0, 2000)), int(3_000_000), int(ORDERS + 1)]);
        put(INSERT_DISTRICT, row);
        for c in 1..=CUSTOMERS {
            let last = if c <= 1000 { last_name(c - 1) } else { last_name(rng.nurand(255, 0, 999, 42)) };
            let credit = if rng.uniform(1, 10) == 1 { "BC" } else { "GC" };
            let mut row = vec![
                int(w),
                int(d),
                int(c),
                text(rng.astring(8, 16)),
                text("OE".into()),
                text(last),
                text(rng.astring(10, 20)),
            ];
            row.extend(address(&mut rng).into_iter().skip(1));
            row.extend([
                text(rng.nstring(16)),
                int(0),
                text(credit.into()),
                int(5_000_000),
                int(rng.uniform(0, 5000)),
                int(-1000),
                int(1000),
                int(1),
                int(0),
                text(rng.astring(300, 500)),
            ]);
            put(INSERT_CUSTOMER, row);
        }
        // Orders: customer ids are a random permutation (clause 4.3.3.1).
        let mut customers: Vec<i64> = (1..=CUSTOMERS).collect();
        for i in (1..customers.len()).rev() {
            customers.swap(i, rng.uniform(0, i as i64) as usize);
        }
        for (o, c) in (1..=ORDERS).zip(customers) {
            let delivered = o <= DELIVERED;
            let lines = rng.uniform(5, 15);
            let carrier = if delivered { int(rng.uniform(1, 10)) } else { Value::Null };
            put(INSERT_ORDER, vec![int(w), int(d), int(o), int(c), int(0), carrier, int(lines), int(1)]);
            if !delivered {
                put(INSERT_NEW_ORDER, vec![int(w), int(d), int(o)]);
            }
            for n in 1..=lines {
                let (delivery, amount) = if delivered { (int(0), 0) } else { (Value::Null, rng.uniform(1, 999_999)) };
                let row = vec![
                    int(w),
                    int(d),
                    int(o),
                    int(n),
                    int(rng.uniform(1, ITEMS)),
                    int(w),
                    delivery,
                    int(5),
                    int(amount),
                    text(rng.astring(24, 24)),
                ];
                put(INSERT_ORDER_LINE, row);
            }
        }
    }
    put("COMMIT", vec![]);
    rows - 2
}

fn as_int(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Int(i)) => *i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// Runs mix transaction number `n` (its inputs derive from `n` only); returns a digest of
/// what it read and wrote, to compare the engines.
pub fn transaction(e: &mut impl Engine, n: u64) -> Vec<i64> {
    let mut rng = Rng::new(n.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 7);
    if n % (NEW_ORDERS_PER_STOCK_LEVEL + 1) == NEW_ORDERS_PER_STOCK_LEVEL {
        stock_level(e, &mut rng)
    } else {
        new_order(e, &mut rng, n as i64)
    }
}

fn new_order(e: &mut impl Engine, rng: &mut Rng, n: i64) -> Vec<i64> {
    let w = 1;
    let d = rng.uniform(1, DISTRICTS);
    let c = rng.nurand(1023, 1, CUSTOMERS, 7);
    let lines = rng.uniform(5, 15);
    let rollback = rng.uniform(1, 100) == 1;
    let items: Vec<(i64, i64)> = (1..=lines)
        .map(|l| {
            let item = if rollback && l == lines { ITEMS + 1 } else { rng.nurand(8191, 1, ITEMS, 42) };
            (item, rng.uniform(1, 10))
        })
        .collect();
    e.run("BEGIN", &[]);
    let customer = e.run(NO_CUSTOMER, &[int(w), int(d), int(c)]);
    let (discount, w_tax) = (as_int(customer[0].first()), as_int(customer[0].get(3)));
    let district = e.run(NO_DISTRICT, &[int(w), int(d)]);
    let (o_id, d_tax) = (as_int(district[0].first()), as_int(district[0].get(1)));
    e.run(NO_BUMP_DISTRICT, &[int(w), int(d)]);
    e.run(INSERT_ORDER, &[int(w), int(d), int(o_id), int(c), int(n), Value::Null, int(lines), int(1)]);
    e.run(INSERT_NEW_ORDER, &[int(w), int(d), int(o_id)]);
    let mut digest = vec![o_id];
    let mut total = 0;
    for (number, (item, quantity)) in (1..).zip(items) {
        let found = e.run(NO_ITEM, &[int(item)]);
        let Some(item_row) = found.first() else {
            // Clause 2.4.2.3: an unused item number rolls the transaction back.
            e.run("ROLLBACK", &[]);
            digest.push(-1);
            return digest;
        };
        let price = as_int(item_row.first());
        let stock = e.run(NO_STOCK, &[int(w), int(item)]);
        let s_quantity = as_int(stock[0].first());
        let dist_info = stock[0].get(1 + d as usize).cloned().unwrap_or(Value::Null);
        let new_quantity = if s_quantity >= quantity + 10 { s_quantity - quantity } else { s_quantity - quantity + 91 };
        e.run(NO_UPDATE_STOCK, &[int(new_quantity), int(quantity), int(0), int(w), int(item)]);
        let amount = quantity * price;
        e.run(
            INSERT_ORDER_LINE,
            &[
                int(w),
                int(d),
                int(o_id),
                int(number),
                int(item),
                int(w),
                Value::Null,
                int(quantity),
                int(amount),
                dist_info,
            ],
        );
        total += amount;
        digest.push(new_quantity);
    }
    e.run("COMMIT", &[]);
    // Clause 2.4.2.2: total * (1 - discount) * (1 + w_tax + d_tax), rates in basis points.
    digest.push(total * (10_000 - discount) * (10_000 + w_tax + d_tax));
    digest
}

fn stock_level(e: &mut impl Engine, rng: &mut Rng) -> Vec<i64> {
    let w = 1;
    let d = rng.uniform(1, DISTRICTS);
    let threshold = rng.uniform(10, 20);
    e.run("BEGIN", &[]);
    let next = as_int(e.run(SL_DISTRICT, &[int(w), int(d)])[0].first());
    let low = as_int(e.run(SL_COUNT, &[int(w), int(d), int(next), int(next - 20), int(threshold)])[0].first());
    e.run("COMMIT", &[]);
    vec![next, low]
}
