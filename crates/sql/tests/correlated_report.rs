//! Read reports of correlated subqueries: each run of a subquery reports its own scans with
//! the enclosing rows' values instantiated, so a write that could change a subquery's result
//! for an existing enclosing row satisfies one of the predicates, and the enclosing scans'
//! predicates never contain the subquery (they are broader, never narrower).

use pistou_sql::*;

fn setup() -> Database {
    let mut db = Database::new();
    for sql in [
        "CREATE TABLE people (id INT PRIMARY KEY, name TEXT, last TEXT, age INT)",
        "CREATE TABLE accounts (id INT PRIMARY KEY, owner INT, balance INT)",
        "CREATE INDEX accounts_owner ON accounts (owner)",
        "INSERT INTO people VALUES (1, 'Peter', 'Parker', 20), (2, 'Alice', 'Allen', 30), (3, 'Bob', 'Brown', 40)",
        "INSERT INTO accounts VALUES (10, 1, 100), (11, 1, 5), (12, 2, 7)",
    ] {
        db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    db
}

fn run(db: &Database, sql: &str) -> Execution {
    let empty = WriteSet::default();
    let ctx = ExecContext {
        storage: db.store(),
        at: ReadAt::latest_before(Timestamp::MAX),
        pending: &empty,
        sequences: &[],
        random_seed: [0; 32],
        lastval: None,
    };
    let e = db.engine().run(db.catalog(), sql, &[], &ctx).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let again = db.engine().run(db.catalog(), sql, &[], &ctx).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(e, again, "same rows, same result and report");
    for scan in &e.reads.scans {
        let open = scan.predicate.expr.any(&|n| {
            matches!(
                n,
                Expr::Enclosing { .. }
                    | Expr::Outer(_)
                    | Expr::Param(_)
                    | Expr::Subquery(_)
                    | Expr::InSubquery { .. }
                    | Expr::Exists { .. }
            )
        });
        assert!(!open, "{sql}: predicate not closed: {}", scan.predicate.expr);
        assert!(scan.predicate.to_wire().is_ok());
    }
    e
}

fn rows(e: &Execution) -> Vec<Row> {
    match &e.output {
        Output::Rows { rows, .. } => rows.clone(),
        other => panic!("not rows: {other:?}"),
    }
}

fn person(id: i64, last: &str, age: i64) -> Row {
    vec![Value::Int(id), Value::Text("Zed".into()), Value::Text(last.into()), Value::Int(age)]
}

fn account(id: i64, owner: i64, balance: i64) -> Row {
    vec![Value::Int(id), Value::Int(owner), Value::Int(balance)]
}

fn scans_of<'e>(e: &'e Execution, table: &str) -> Vec<&'e ScanRead> {
    e.reads.scans.iter().filter(|s| s.table() == table).collect()
}

#[test]
fn two_levels_instantiate_both_enclosing_rows() {
    let db = setup();
    let e = run(
        &db,
        "SELECT name FROM people p WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.owner = p.id AND \
         EXISTS (SELECT 1 FROM people q WHERE q.age > a.balance AND q.last = p.last)) ORDER BY name",
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Alice".into())], vec![Value::Text("Peter".into())]]);
    // people p; accounts of Peter; q for accounts 10 and 11; accounts of Alice; q for 12;
    // accounts of Bob.
    assert_eq!(e.reads.scans.len(), 7);
    let q_for_11 = &e.reads.scans[3];
    assert_eq!(q_for_11.table(), "people");
    // Instantiated with account 11's balance (level 1) and Peter's last name (level 0).
    assert!(q_for_11.predicate.may_match(&person(9, "Parker", 6)));
    assert!(!q_for_11.predicate.may_match(&person(9, "Parker", 5)));
    assert!(!q_for_11.predicate.may_match(&person(9, "Allen", 50)));
    let bobs_accounts = &e.reads.scans[6];
    assert!(bobs_accounts.predicate.may_match(&account(20, 3, 0)), "a new account of Bob could make him appear");
    assert!(!bobs_accounts.predicate.may_match(&account(20, 4, 0)));
}

#[test]
fn update_where_correlated_reports_a_broad_target_scan_and_each_subquery_run() {
    let db = setup();
    let e = run(&db, "UPDATE accounts SET balance = balance + 1 WHERE balance < (SELECT age FROM people p WHERE p.id = accounts.owner)");
    assert!(matches!(e.output, Output::Affected { count: 2, .. }));
    let key = |id: i64| encode_pk(&db, "accounts", id);
    assert_eq!(e.writes.get("accounts", &key(11)), Some(&Write::Upsert(account(11, 1, 6))));
    assert_eq!(e.writes.get("accounts", &key(12)), Some(&Write::Upsert(account(12, 2, 8))));
    let target = &e.reads.scans[0];
    assert_eq!(target.table(), "accounts");
    // The subquery conjunct runs per row after the scan: the scan's predicate is TRUE.
    assert!(target.predicate.may_match(&account(30, 9, 1_000)));
    let people = scans_of(&e, "people");
    assert_eq!(people.len(), 3, "one point read per account");
    assert!(people.iter().all(|s| s.access == Access::Point));
    assert!(people[1].predicate.may_match(&person(1, "X", 99)), "Peter's age decides account 11");
    assert!(!people[1].predicate.may_match(&person(2, "X", 99)));
}

#[test]
fn delete_with_not_exists_reports_each_probe() {
    let db = setup();
    let e = run(&db, "DELETE FROM people WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.owner = people.id)");
    assert!(matches!(e.output, Output::Affected { count: 1, .. }), "only Bob has no account");
    let probes = scans_of(&e, "accounts");
    assert_eq!(probes.len(), 3);
    assert!(probes[2].predicate.may_match(&account(20, 3, 0)), "a new account of Bob would save him");
    assert!(!probes[2].predicate.may_match(&account(20, 1, 0)));
}

#[test]
fn grouped_queries_instantiate_the_group_key() {
    let db = setup();
    let e = run(&db, "SELECT owner, count(*), (SELECT name FROM people p WHERE p.id = a.owner) FROM accounts a GROUP BY owner ORDER BY owner");
    assert_eq!(
        rows(&e),
        vec![
            vec![Value::Int(1), Value::Int(2), Value::Text("Peter".into())],
            vec![Value::Int(2), Value::Int(1), Value::Text("Alice".into())],
        ]
    );
    let people = scans_of(&e, "people");
    assert_eq!(people.len(), 2, "one run per group");
    assert!(people[0].predicate.may_match(&person(1, "X", 1)) && !people[0].predicate.may_match(&person(2, "X", 1)));
    assert!(people[1].predicate.may_match(&person(2, "X", 1)) && !people[1].predicate.may_match(&person(1, "X", 1)));
}

#[test]
fn left_join_conditions_run_subqueries_per_pair_outside_the_scan() {
    let db = setup();
    let e = run(
        &db,
        "SELECT p.name, a.id FROM people p LEFT JOIN accounts a ON a.owner = p.id AND \
         a.balance > (SELECT min(age) FROM people q WHERE q.last = p.last) ORDER BY p.id",
    );
    assert_eq!(
        rows(&e),
        vec![
            vec![Value::Text("Peter".into()), Value::Int(10)],
            vec![Value::Text("Alice".into()), Value::Null],
            vec![Value::Text("Bob".into()), Value::Null],
        ]
    );
    let accounts = scans_of(&e, "accounts");
    assert_eq!(accounts.len(), 3, "index nested loop: one scan per person");
    // The subquery conjunct is not in the accounts predicate: any new account of Alice, rich
    // or poor, is a conflict.
    assert!(accounts[1].predicate.may_match(&account(20, 2, 0)));
    assert!(!accounts[1].predicate.may_match(&account(20, 3, 0)));
    // One q run per joined pair (Peter has two accounts, Alice one).
    let people = scans_of(&e, "people");
    assert_eq!(people.len(), 1 + 3);
    assert!(people[3].predicate.may_match(&person(9, "Allen", 1)));
    assert!(!people[3].predicate.may_match(&person(9, "Parker", 1)));
}

#[test]
fn subqueries_over_joins_instantiate_every_scan() {
    let db = setup();
    let e = run(
        &db,
        "SELECT name FROM people p WHERE EXISTS (SELECT 1 FROM accounts a JOIN people o ON o.id = a.owner WHERE a.owner = p.id AND o.age > 25)",
    );
    assert_eq!(rows(&e), vec![vec![Value::Text("Alice".into())]]);
    let accounts = scans_of(&e, "accounts");
    assert_eq!(accounts.len(), 3);
    assert!(accounts[2].predicate.may_match(&account(20, 3, 0)), "a new account of Bob, who is 40");
    assert!(!accounts[2].predicate.may_match(&account(20, 1, 0)));
    // The joined owner is read by key, with the subquery's own filter.
    let owners: Vec<&ScanRead> = scans_of(&e, "people").into_iter().skip(1).collect();
    assert!(owners.iter().any(|s| s.predicate.may_match(&person(1, "Parker", 26))));
    assert!(
        owners.iter().all(|s| !s.predicate.may_match(&person(1, "Parker", 20))),
        "Peter staying young changes nothing"
    );
}

fn encode_pk(db: &Database, table: &str, id: i64) -> Vec<u8> {
    let schema = db.catalog().table(table).unwrap_or_else(|| panic!("no table {table}"));
    let mut row = vec![Value::Null; schema.columns.len()];
    row[0] = Value::Int(id);
    schema.row_key(&row)
}

#[test]
fn outer_level_aggregates_run_per_group_with_the_group_value_instantiated() {
    let db = setup();
    // max(p.age) belongs to the people query (grouped by last name); the accounts subquery
    // runs once per group with that group's maximum as a constant.
    let e = run(&db, "SELECT p.last, (SELECT count(*) FROM accounts a WHERE a.balance > max(p.age)) FROM people p GROUP BY p.last ORDER BY p.last");
    let expected: Vec<Row> =
        ["Allen", "Brown", "Parker"].iter().map(|last| vec![Value::Text((*last).into()), Value::Int(1)]).collect();
    assert_eq!(rows(&e), expected);
    let people = scans_of(&e, "people");
    let accounts = scans_of(&e, "accounts");
    assert_eq!((people.len(), accounts.len()), (1, 3), "people once, accounts once per group");
    // Any change to people may change a group's maximum: the people scan reads them all.
    assert!(people[0].predicate.may_match(&person(9, "Allen", 99)));
    // Groups in key order: Allen (30), Brown (40), Parker (20).
    for (scan, max) in accounts.iter().zip([30, 40, 20]) {
        assert!(
            scan.predicate.may_match(&account(20, 9, max + 1)),
            "an account above {max} changes that group's count"
        );
        assert!(!scan.predicate.may_match(&account(20, 9, max)));
    }
}
