//! Pistou's SQL engine (standalone `Database`, in-memory multi-version store, autocommit)
//! against SQLite (rusqlite, bundled, in-memory) on the same schema, data and statements.
//! Run: `cargo bench -p pistou-sql --bench vs_sqlite` (prints a markdown table);
//! `BENCH_FILTER=<substring>` runs only the matching workloads; `BENCH_ONLY_PISTOU=1` skips
//! SQLite (for profiling). The last workload is the TPC-C New-Order + Stock-Level mix
//! (`tpcc.rs`), on its own databases.

mod tpcc;

use pistou_sql::{Database, Value};
use rusqlite::{params, Connection};
use std::time::{Duration, Instant};

const ACCOUNTS: i64 = 10_000;
const ORDERS: i64 = 20_000;
const OWNERS: i64 = 1_000;
const ITEMS: i64 = 20_000;
const RUN_FOR: Duration = Duration::from_millis(1500);

const SCHEMA: [&str; 5] = [
    "CREATE TABLE accounts (id INT PRIMARY KEY, owner INT NOT NULL, name TEXT NOT NULL, balance INT NOT NULL)",
    "CREATE INDEX accounts_owner ON accounts (owner)",
    "CREATE TABLE orders (id INT PRIMARY KEY, account INT NOT NULL, amount INT NOT NULL)",
    "CREATE INDEX orders_account ON orders (account)",
    "CREATE TABLE items (id INT PRIMARY KEY, sel INT NOT NULL, payload TEXT NOT NULL)",
];

/// (name, SQL with `$1` (and `$2`) parameters, parameter generator).
struct Workload {
    name: &'static str,
    sql: &'static str,
    params: fn(i64) -> Vec<i64>,
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload { name: "point select by primary key", sql: "SELECT name, balance FROM accounts WHERE id = $1", params: |i| vec![i % ACCOUNTS] },
        Workload { name: "range scan, 100 rows, SUM", sql: "SELECT sum(balance) FROM accounts WHERE id >= $1 AND id < $2", params: |i| { let s = (i * 97) % (ACCOUNTS - 100); vec![s, s + 100] } },
        Workload { name: "secondary index lookup (10 rows)", sql: "SELECT id, balance FROM accounts WHERE owner = $1", params: |i| vec![i % OWNERS] },
        Workload { name: "join orders→accounts by primary key", sql: "SELECT o.amount, a.name FROM orders o JOIN accounts a ON a.id = o.account WHERE o.id = $1", params: |i| vec![i % ORDERS] },
        Workload { name: "index join: accounts of an owner with their orders", sql: "SELECT a.id, sum(o.amount) FROM accounts a JOIN orders o ON o.account = a.id WHERE a.owner = $1 GROUP BY a.id", params: |i| vec![i % OWNERS] },
        Workload { name: "range scan, 10,000 rows, 1% selective filter (no index)", sql: "SELECT id FROM items WHERE id BETWEEN $1 AND $2 AND sel = 7", params: |i| { let s = (i * 97) % (ITEMS - 10_000); vec![s, s + 9_999] } },
        Workload { name: "GROUP BY over full table (10k rows)", sql: "SELECT owner % 10, count(*), sum(balance) FROM accounts GROUP BY owner % 10", params: |_| vec![] },
        Workload { name: "update by primary key (autocommit)", sql: "UPDATE accounts SET balance = balance + 1 WHERE id = $1", params: |i| vec![(i * 7) % ACCOUNTS] },
        Workload { name: "insert one row (autocommit)", sql: "INSERT INTO orders VALUES ($1, $2, 5)", params: |i| vec![ORDERS + i, i % ACCOUNTS] },
    ]
}

fn account_row(i: i64) -> (i64, i64, String, i64) {
    (i, (i * 31) % OWNERS, format!("name{i}"), 1_000 + (i * 17) % 500)
}

fn order_row(i: i64) -> (i64, i64, i64) {
    (i, (i * 13) % ACCOUNTS, 1 + i % 100)
}

/// 1 row in 100 has `sel = 7`, spread over the key space.
fn item_row(i: i64) -> (i64, i64, String) {
    (i, (i * 37) % 100, format!("payload of item {i:08}, padded to a realistic width"))
}

fn load_pistou() -> Database {
    let mut db = Database::new();
    for s in SCHEMA {
        db.execute(s).expect("schema");
    }
    db.execute("BEGIN").expect("begin");
    let ins = db.prepare("INSERT INTO accounts VALUES ($1, $2, $3, $4)").expect("prepare");
    for i in 0..ACCOUNTS {
        let (id, owner, name, bal) = account_row(i);
        db.execute_prepared(&ins, &[Value::Int(id), Value::Int(owner), Value::Text(name), Value::Int(bal)])
            .expect("load");
    }
    let ins = db.prepare("INSERT INTO orders VALUES ($1, $2, $3)").expect("prepare");
    for i in 0..ORDERS {
        let (id, account, amount) = order_row(i);
        db.execute_prepared(&ins, &[Value::Int(id), Value::Int(account), Value::Int(amount)]).expect("load");
    }
    let ins = db.prepare("INSERT INTO items VALUES ($1, $2, $3)").expect("prepare");
    for i in 0..ITEMS {
        let (id, sel, payload) = item_row(i);
        db.execute_prepared(&ins, &[Value::Int(id), Value::Int(sel), Value::Text(payload)]).expect("load");
    }
    db.execute("COMMIT").expect("commit");
    db
}

fn load_sqlite() -> Connection {
    let conn = Connection::open_in_memory().expect("sqlite");
    for s in SCHEMA {
        conn.execute(s, []).expect("schema");
    }
    conn.execute_batch("BEGIN").expect("begin");
    for i in 0..ACCOUNTS {
        let (id, owner, name, bal) = account_row(i);
        conn.execute("INSERT INTO accounts VALUES (?1, ?2, ?3, ?4)", params![id, owner, name, bal]).expect("load");
    }
    for i in 0..ORDERS {
        let (id, account, amount) = order_row(i);
        conn.execute("INSERT INTO orders VALUES (?1, ?2, ?3)", params![id, account, amount]).expect("load");
    }
    for i in 0..ITEMS {
        let (id, sel, payload) = item_row(i);
        conn.execute("INSERT INTO items VALUES (?1, ?2, ?3)", params![id, sel, payload]).expect("load");
    }
    conn.execute_batch("COMMIT").expect("commit");
    conn
}

/// Runs `op` repeatedly for `RUN_FOR`; returns operations per second and rows seen.
fn measure(mut op: impl FnMut(i64) -> usize) -> (f64, usize) {
    let start = Instant::now();
    let mut n = 0i64;
    let mut rows = 0;
    while start.elapsed() < RUN_FOR {
        for _ in 0..16 {
            rows += op(n);
            n += 1;
        }
    }
    (n as f64 / start.elapsed().as_secs_f64(), rows)
}

fn main() {
    let t = Instant::now();
    let mut pistou = load_pistou();
    let pistou_load = t.elapsed();
    let t = Instant::now();
    let sqlite = load_sqlite();
    let sqlite_load = t.elapsed();
    println!("load {ACCOUNTS} accounts + {ORDERS} orders + {ITEMS} items: pistou {pistou_load:.2?}, sqlite {sqlite_load:.2?}\n");
    println!("| workload | pistou-sql ops/s | SQLite ops/s | pistou / SQLite |");
    println!("|---|---:|---:|---:|");
    let only = std::env::var("BENCH_FILTER").unwrap_or_default();
    let only_pistou = std::env::var("BENCH_ONLY_PISTOU").is_ok();
    for w in workloads().into_iter().filter(|w| w.name.contains(&only)) {
        let prepared = pistou.prepare(w.sql).expect("prepare");
        let sqlite_sql = w.sql.replace('$', "?");
        if prepared.columns().is_some() {
            // Same work on both sides: identical row counts on a sample of parameters.
            for i in 0..50 {
                let params: Vec<Value> = (w.params)(i).into_iter().map(Value::Int).collect();
                let ours = match pistou.execute_prepared(&prepared, &params).expect("pistou").output {
                    pistou_sql::Output::Rows { rows, .. } => rows.len(),
                    _ => 0,
                };
                let mut stmt = sqlite.prepare_cached(&sqlite_sql).expect("sqlite prepare");
                let mut rows = stmt.query(rusqlite::params_from_iter((w.params)(i))).expect("sqlite query");
                let mut theirs = 0;
                while rows.next().expect("sqlite row").is_some() {
                    theirs += 1;
                }
                assert_eq!(ours, theirs, "{}: row counts differ for parameters {:?}", w.name, (w.params)(i));
            }
        }
        let (p_ops, _) = measure(|i| {
            let params: Vec<Value> = (w.params)(i).into_iter().map(Value::Int).collect();
            match pistou.execute_prepared(&prepared, &params).expect("pistou execute").output {
                pistou_sql::Output::Rows { rows, .. } => rows.len(),
                _ => 1,
            }
        });
        let (s_ops, _) = if only_pistou {
            (f64::NAN, 0)
        } else {
            measure(|i| {
                let mut stmt = sqlite.prepare_cached(&sqlite_sql).expect("sqlite prepare");
                let params = (w.params)(i);
                if stmt.column_count() == 0 {
                    stmt.execute(rusqlite::params_from_iter(params)).expect("sqlite execute")
                } else {
                    let mut rows = stmt.query(rusqlite::params_from_iter(params)).expect("sqlite query");
                    let mut n = 0;
                    while rows.next().expect("sqlite row").is_some() {
                        n += 1;
                    }
                    n
                }
            })
        };
        println!("| {} | {:.0} | {:.0} | {:.2} |", w.name, p_ops, s_ops, p_ops / s_ops);
    }
    drop((pistou, sqlite));
    if TPCC.contains(&only) {
        tpcc_mix(only_pistou);
    }
}

const TPCC: &str = "TPC-C New-Order + Stock-Level mix (10:1), 1 warehouse, transactions";

/// Loads both TPC-C databases, checks the engines agree on the first transactions, then
/// times the mix on each.
fn tpcc_mix(only_pistou: bool) {
    const CHECKED: u64 = 220;
    let t = Instant::now();
    let mut pistou = tpcc::Pistou::new();
    let rows = tpcc::load(&mut pistou);
    let pistou_load = t.elapsed();
    let mut sqlite = tpcc::Sqlite::new();
    let t = Instant::now();
    if !only_pistou {
        tpcc::load(&mut sqlite);
    }
    let sqlite_load = t.elapsed();
    for n in 0..CHECKED {
        let ours = tpcc::transaction(&mut pistou, n);
        if !only_pistou {
            assert_eq!(ours, tpcc::transaction(&mut sqlite, n), "TPC-C transaction {n} differs");
        }
    }
    let (p_ops, _) = measure(|i| {
        tpcc::transaction(&mut pistou, CHECKED + i as u64);
        1
    });
    let (s_ops, _) = if only_pistou {
        (f64::NAN, 0)
    } else {
        measure(|i| {
            tpcc::transaction(&mut sqlite, CHECKED + i as u64);
            1
        })
    };
    println!("| {TPCC} | {p_ops:.0} | {s_ops:.0} | {:.2} |", p_ops / s_ops);
    println!("\nTPC-C load ({rows} rows, {} items): pistou {pistou_load:.2?}, sqlite {sqlite_load:.2?}; first {CHECKED} transactions identical on both", tpcc::ITEMS);
}
