//! now() and its relatives are the transaction's time: the time part of the timestamp the
//! statement reads at, which the client chose and sends with every statement, so the client
//! and every replica compute the same value. No clock is read.

use pistou_core::{ClientId, Timestamp};
use pistou_sql::keycode::encode_key;
use pistou_sql::*;

/// 2024-05-06 07:08:09.123456 UTC.
const T: u64 = 1_714_979_289_123_456;

fn at(time: u64) -> Timestamp {
    Timestamp { time, client: ClientId(7), seq: 3 }
}

fn setup() -> Database {
    let mut db = Database::new();
    db.execute("CREATE TABLE history (id INT PRIMARY KEY, mtime TIMESTAMP, day DATE)").unwrap();
    db
}

fn run(db: &Database, sql: &str, time: u64) -> Result<Execution, SqlError> {
    let empty = WriteSet::default();
    let ctx = ExecContext {
        storage: db.store(),
        at: ReadAt::latest_before(at(time)),
        pending: &empty,
        sequences: &[],
        random_seed: [0; 32],
        lastval: None,
    };
    db.engine().run(db.catalog(), sql, &[], &ctx)
}

fn rows(e: &Execution) -> Vec<Row> {
    match &e.output {
        Output::Rows { rows, .. } => rows.clone(),
        other => panic!("not rows: {other:?}"),
    }
}

#[test]
fn every_spelling_is_the_transaction_time() {
    let db = setup();
    let sql = "SELECT now(), current_timestamp, transaction_timestamp(), statement_timestamp(), \
               current_date, localtimestamp, now()::text, CAST(now() AS date), now()::timestamp";
    let e = run(&db, sql, T).unwrap();
    let tz = Value::TimestampTz(T as i64);
    assert_eq!(
        rows(&e),
        vec![vec![
            tz.clone(),
            tz.clone(),
            tz.clone(),
            tz,
            Value::Date(19849),
            Value::Timestamp(T as i64),
            Value::Text("2024-05-06 07:08:09.123456+00".into()),
            Value::Date(19849),
            Value::Timestamp(T as i64),
        ]]
    );
    assert_eq!(temporal::format_date(19849), "2024-05-06");
    let types = db.prepare(sql).unwrap().column_types().map(<[_]>::to_vec);
    assert_eq!(types.as_deref().and_then(|t| t.first().copied()).flatten(), Some(SqlType::TimestampTz));
    // The plan is cached by text: the value is not folded into it.
    let later = run(&db, "SELECT now()", T + 1).unwrap();
    assert_eq!(rows(&later), vec![vec![Value::TimestampTz(T as i64 + 1)]]);
}

#[test]
fn written_values_are_computed_with_the_statement() {
    let db = setup();
    let e = run(&db, "INSERT INTO history VALUES (1, CURRENT_TIMESTAMP, current_date)", T).unwrap();
    let key = encode_key([&Value::Int(1)]);
    assert_eq!(
        e.writes.get("history", &key),
        Some(&Write::Upsert(vec![Value::Int(1), Value::Timestamp(T as i64), Value::Date(19849)]))
    );
}

#[test]
fn comparisons_mix_timestamptz_with_dates_timestamps_and_literals() {
    let db = setup();
    let sql = "SELECT now() > '2024-05-06', now() = localtimestamp, now() < current_date, \
               now() = '2024-05-06 09:08:09.123456+02', now() > TIMESTAMP '2024-05-06 07:08:09'";
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    assert_eq!(rows(&run(&db, sql, T).unwrap()), vec![vec![t.clone(), t.clone(), f, t.clone(), t]]);
}

#[test]
fn reported_predicates_carry_the_time_as_a_constant() {
    let mut db = setup();
    db.execute("INSERT INTO history VALUES (1, '2020-01-01', NULL)").unwrap();
    let e = run(&db, "SELECT id FROM history WHERE mtime < now()", T).unwrap();
    assert_eq!(rows(&e), vec![vec![Value::Int(1)]]);
    let predicate = &e.reads.scans[0].predicate;
    // Replicas evaluate it later, for other transactions' writes: no placeholder remains.
    assert!(!format!("{predicate:?}").contains("Now"), "{predicate:?}");
    assert!(format!("{predicate:?}").contains(&format!("TimestampTz({T})")), "{predicate:?}");
    predicate.to_wire().expect("encodable");
}

#[test]
fn what_cannot_be_deterministic_is_refused() {
    let mut db = setup();
    for sql in ["SELECT clock_timestamp()", "SELECT timeofday()", "SELECT current_time", "SELECT localtime"] {
        let e = run(&db, sql, T).err().map(|e| e.state);
        assert_eq!(e, Some(SqlState::FeatureNotSupported), "{sql}");
    }
    let e = db.execute("CREATE TABLE d (id INT PRIMARY KEY, n INT DEFAULT 1 + now()::date - 5)").err().map(|e| e.state);
    assert_eq!(e, Some(SqlState::FeatureNotSupported), "a non-constant DEFAULT other than the time or a uuid");
}

/// A DEFAULT now() is evaluated by the INSERT, with its transaction's time (the write set
/// carries the value: replicas never evaluate it again), and interval arithmetic over now()
/// is as exact as now().
#[test]
fn default_now_and_intervals_use_the_transaction_time() {
    let mut db = setup();
    db.execute("CREATE TABLE d (id INT PRIMARY KEY, at TIMESTAMPTZ DEFAULT now(), day DATE DEFAULT CURRENT_DATE)")
        .unwrap();
    let e = run(&db, "INSERT INTO d (id) VALUES (1)", T).unwrap();
    let written: Vec<Row> = e
        .writes
        .tables
        .values()
        .flat_map(|w| w.values())
        .filter_map(|w| match w {
            pistou_sql::storage::Write::Upsert(row) => Some(row.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(written, vec![vec![Value::Int(1), Value::TimestampTz(T as i64), Value::Date(19849)]]);
    let e = run(&db, "SELECT now() - TIMESTAMPTZ '2024-05-01 00:00:00+00', now() + INTERVAL '1 day'", T).unwrap();
    let day = 86_400_000_000_i64;
    assert_eq!(
        rows(&e),
        vec![vec![
            Value::Interval(pistou_sql::interval::Interval {
                months: 0,
                days: 5,
                micros: T as i64 - 1_714_521_600_000_000 - 5 * day,
            }),
            Value::TimestampTz(T as i64 + day),
        ]]
    );
    db.execute("DROP TABLE d").unwrap();
}
