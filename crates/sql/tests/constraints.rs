//! FOREIGN KEY, CHECK and UNIQUE constraints and the ALTER TABLE actions, one rule per test
//! (docs/sql.md, "Constraints").

use pistou_sql::{Access, CatalogChange, Database, EngineRules, Output, SqlState, Value};

fn db(setup: &[&str]) -> Database {
    let mut db = Database::new();
    for s in setup {
        db.execute(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    }
    db
}

fn state(db: &mut Database, sql: &str) -> Option<&'static str> {
    db.execute(sql).err().map(|e| e.sqlstate())
}

fn ok(db: &mut Database, sql: &str) {
    if let Err(e) = db.execute(sql) {
        panic!("{sql}: {e:?}");
    }
}

fn rows(db: &mut Database, sql: &str) -> Vec<Vec<Value>> {
    match db.execute(sql) {
        Ok(Output::Rows { rows, .. }) => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

fn count(db: &mut Database, sql: &str) -> i64 {
    match rows(db, sql).first().and_then(|r| r.first()) {
        Some(Value::Int(n)) => *n,
        other => panic!("{sql}: {other:?}"),
    }
}

const PARENT_CHILD: &[&str] = &[
    "CREATE TABLE p (id INT PRIMARY KEY, code TEXT UNIQUE)",
    "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p(id), pcode TEXT, FOREIGN KEY (pcode) REFERENCES p (code))",
    "INSERT INTO p VALUES (1, 'a'), (2, 'b')",
];

#[test]
fn a_child_row_needs_its_parent() {
    let mut db = db(PARENT_CHILD);
    ok(&mut db, "INSERT INTO c VALUES (1, 1, 'b')");
    assert_eq!(state(&mut db, "INSERT INTO c VALUES (2, 3, NULL)"), Some("23503"));
    assert_eq!(state(&mut db, "INSERT INTO c VALUES (2, 1, 'z')"), Some("23503"), "by a unique key too");
    ok(&mut db, "INSERT INTO c VALUES (2, NULL, NULL)");
    assert_eq!(state(&mut db, "UPDATE c SET pid = 9 WHERE id = 2"), Some("23503"));
    ok(&mut db, "UPDATE c SET pid = 2 WHERE id = 2");
    let e = db.execute("INSERT INTO c VALUES (3, 7, NULL)").err().map(|e| e.message).unwrap_or_default();
    assert!(e.starts_with("insert or update on table \"c\" violates foreign key constraint \"c_pid_fkey\""), "{e}");
}

#[test]
fn a_referenced_parent_cannot_go_or_change_its_key() {
    let mut db = db(PARENT_CHILD);
    ok(&mut db, "INSERT INTO c VALUES (1, 1, NULL)");
    assert_eq!(state(&mut db, "DELETE FROM p WHERE id = 1"), Some("23503"));
    assert_eq!(state(&mut db, "UPDATE p SET id = 5 WHERE id = 1"), Some("23503"));
    ok(&mut db, "UPDATE p SET code = 'x' WHERE id = 1");
    ok(&mut db, "DELETE FROM p WHERE id = 2");
    assert_eq!(state(&mut db, "DROP TABLE p"), Some("2BP01"));
    ok(&mut db, "DELETE FROM c");
    ok(&mut db, "DELETE FROM p");
}

#[test]
fn a_parent_inserted_earlier_in_the_transaction_counts() {
    let mut db = db(PARENT_CHILD);
    ok(&mut db, "BEGIN");
    ok(&mut db, "INSERT INTO p VALUES (10, 'j')");
    ok(&mut db, "INSERT INTO c VALUES (10, 10, 'j')");
    ok(&mut db, "COMMIT");
    assert_eq!(count(&mut db, "SELECT count(*) FROM c"), 1);
}

#[test]
fn the_parent_check_is_a_reported_read() {
    let mut db = db(PARENT_CHILD);
    let exec = db.execute_with("INSERT INTO c VALUES (1, 1, NULL)", &[]).expect("insert");
    assert!(
        exec.reads.scans.iter().any(|s| s.table() == "p" && s.access == Access::Point && !s.rows.is_empty()),
        "the parent row read is in the read set: {:?}",
        exec.reads.scans
    );
    let exec = db.execute_with("DELETE FROM p WHERE id = 2", &[]).expect("delete");
    let child_scan = exec.reads.scans.iter().find(|s| s.table() == "c").expect("the child table is scanned");
    let child = vec![Value::Int(9), Value::Int(2), Value::Null];
    assert_eq!(
        child_scan.predicate.eval(&child).ok().flatten(),
        Some(true),
        "an insert of a referencing row conflicts"
    );
    let other = vec![Value::Int(9), Value::Int(1), Value::Null];
    assert_eq!(child_scan.predicate.eval(&other).ok().flatten(), Some(false));
    let prepared = db.prepare("INSERT INTO c VALUES (5, 1, NULL)").expect("prepare");
    assert_eq!(prepared.tables(), ["c", "p"], "the statement's tables include the referenced one");
}

#[test]
fn self_references_and_cascades() {
    let mut db = db(&[
        "CREATE TABLE tree (id INT PRIMARY KEY, parent INT REFERENCES tree ON DELETE CASCADE)",
        "CREATE TABLE tag (id INT PRIMARY KEY, node INT REFERENCES tree(id) ON DELETE SET NULL)",
    ]);
    ok(&mut db, "INSERT INTO tree VALUES (2, 1), (1, NULL), (3, 2), (4, 1)");
    ok(&mut db, "INSERT INTO tag VALUES (1, 3), (2, 4)");
    ok(&mut db, "DELETE FROM tree WHERE id = 2");
    assert_eq!(count(&mut db, "SELECT count(*) FROM tree"), 2, "3 went with 2");
    assert_eq!(rows(&mut db, "SELECT node FROM tag ORDER BY id"), [[Value::Null], [Value::Int(4)]]);
    ok(&mut db, "DELETE FROM tree");
    assert_eq!(count(&mut db, "SELECT count(*) FROM tag WHERE node IS NULL"), 2);
    assert_eq!(
        state(&mut db, "CREATE TABLE u (id INT PRIMARY KEY, t INT REFERENCES tree ON UPDATE CASCADE)"),
        Some("0A000")
    );
}

#[test]
fn foreign_key_definitions_are_validated() {
    let mut db = db(&["CREATE TABLE p (id INT PRIMARY KEY, v TEXT, n NUMERIC)"]);
    assert_eq!(state(&mut db, "CREATE TABLE c (x INT REFERENCES nope)"), Some("42P01"));
    assert_eq!(state(&mut db, "CREATE TABLE c (x INT REFERENCES p(nope))"), Some("42703"));
    assert_eq!(state(&mut db, "CREATE TABLE c (x INT REFERENCES p(v))"), Some("42830"), "v is not unique");
    assert_eq!(state(&mut db, "CREATE TABLE c (x TEXT REFERENCES p(id))"), Some("42804"));
    assert_eq!(state(&mut db, "CREATE TABLE c (x INT, FOREIGN KEY (y) REFERENCES p)"), Some("42703"));
    ok(&mut db, "CREATE TABLE c (x BIGINT REFERENCES p)");
    // A hostile catalog change naming columns that do not exist is refused where applied.
    let mut catalog = db.catalog().clone();
    let mut bad = (**catalog.table("c").expect("c")).clone();
    bad.name = "d".into();
    bad.constraints.foreign_keys[0].parent_columns = vec![7];
    assert!(catalog.apply(&CatalogChange::CreateTable(bad.clone()), &EngineRules).is_err());
    bad.constraints.foreign_keys[0].parent_columns = vec![];
    assert!(catalog.apply(&CatalogChange::CreateTable(bad.clone()), &EngineRules).is_err());
    bad.constraints.foreign_keys.clear();
    bad.constraints
        .checks
        .push(pistou_sql::catalog::CheckConstraint { name: "k".into(), expr: "(SELECT 1) = 1".into() });
    assert!(catalog.apply(&CatalogChange::CreateTable(bad.clone()), &EngineRules).is_err(), "no subquery in a CHECK");
    bad.constraints.checks[0].expr = "x +".into();
    assert_eq!(
        catalog.apply(&CatalogChange::CreateTable(bad.clone()), &EngineRules).err().map(|e| e.state),
        Some(SqlState::SyntaxError)
    );
    bad.constraints.checks[0].expr = "(".repeat(100_000);
    assert!(
        catalog.apply(&CatalogChange::CreateTable(bad), &EngineRules).is_err(),
        "deep nesting is refused, not a stack overflow"
    );
}

#[test]
fn check_constraints_pass_true_and_null() {
    let mut db = db(&[
        "CREATE TABLE k (id INT PRIMARY KEY, price NUMERIC CHECK (price > 0), lo INT, hi INT, CONSTRAINT range_ok CHECK (lo <= hi))",
    ]);
    ok(&mut db, "INSERT INTO k VALUES (1, 5, 1, 2)");
    ok(&mut db, "INSERT INTO k VALUES (2, NULL, NULL, 2)");
    let e = db.execute("INSERT INTO k VALUES (3, 0, 1, 2)").expect_err("fails");
    assert_eq!(
        (e.sqlstate(), e.message.as_str()),
        ("23514", "new row for relation \"k\" violates check constraint \"k_price_check\"")
    );
    let e = db.execute("UPDATE k SET lo = 9 WHERE id = 1").expect_err("fails");
    assert_eq!(e.message, "new row for relation \"k\" violates check constraint \"range_ok\"");
    assert_eq!(state(&mut db, "CREATE TABLE k2 (a INT CHECK (a))"), Some("42804"), "not boolean");
    assert_eq!(state(&mut db, "CREATE TABLE k2 (a INT CHECK (b > 0))"), Some("42703"));
    assert_eq!(state(&mut db, "ALTER TABLE k ADD CONSTRAINT pos CHECK (hi > 100)"), Some("23514"), "existing rows");
    ok(&mut db, "ALTER TABLE k ADD CONSTRAINT pos CHECK (hi > 0)");
    assert_eq!(state(&mut db, "INSERT INTO k VALUES (4, 1, 0, 0)"), Some("23514"));
    ok(&mut db, "ALTER TABLE k DROP CONSTRAINT pos");
    ok(&mut db, "INSERT INTO k VALUES (4, 1, 0, 0)");
    assert_eq!(state(&mut db, "ALTER TABLE k DROP CONSTRAINT pos"), Some("42704"));
    ok(&mut db, "ALTER TABLE k DROP CONSTRAINT IF EXISTS pos");
}

#[test]
fn unique_constraints_named_and_added() {
    let mut db = db(&["CREATE TABLE u (id INT PRIMARY KEY, a INT, b INT, CONSTRAINT ab UNIQUE (a, b))"]);
    ok(&mut db, "INSERT INTO u VALUES (1, 1, 1), (2, 1, NULL), (3, 1, NULL)");
    let e = db.execute("INSERT INTO u VALUES (4, 1, 1)").expect_err("fails");
    assert_eq!(e.message, "duplicate key value violates unique constraint \"ab\"");
    assert_eq!(state(&mut db, "ALTER TABLE u ADD CONSTRAINT a_only UNIQUE (a)"), Some("23505"), "existing rows");
    ok(&mut db, "ALTER TABLE u ADD CONSTRAINT b_only UNIQUE (b)");
    assert_eq!(state(&mut db, "INSERT INTO u VALUES (5, 2, 1)"), Some("23505"));
    assert_eq!(state(&mut db, "DROP INDEX b_only"), Some("2BP01"));
    ok(&mut db, "ALTER TABLE u DROP CONSTRAINT b_only");
    ok(&mut db, "INSERT INTO u VALUES (5, 2, 1)");
    assert_eq!(
        rows(&mut db, "SELECT conname, contype FROM pg_constraint ORDER BY conname"),
        [[Value::Text("ab".into()), Value::Text("u".into())], [Value::Text("u_pkey".into()), Value::Text("p".into())]]
    );
}

#[test]
fn alter_table_drop_and_rename_column() {
    let mut db = db(&["CREATE TABLE a (id INT PRIMARY KEY, x INT, y TEXT, z INT)", "CREATE INDEX a_x ON a (x)"]);
    ok(&mut db, "INSERT INTO a VALUES (1, 10, 'one', 100)");
    ok(&mut db, "ALTER TABLE a DROP COLUMN x");
    assert_eq!(rows(&mut db, "SELECT * FROM a"), [[Value::Int(1), Value::Text("one".into()), Value::Int(100)]]);
    assert_eq!(state(&mut db, "SELECT x FROM a"), Some("42703"));
    assert_eq!(state(&mut db, "DROP INDEX a_x"), Some("42704"), "the index went with the column");
    ok(&mut db, "INSERT INTO a VALUES (2, 'two', 200)");
    ok(&mut db, "ALTER TABLE a ADD COLUMN x TEXT DEFAULT 'new'");
    assert_eq!(
        rows(&mut db, "SELECT id, x FROM a ORDER BY id"),
        [[Value::Int(1), Value::Text("new".into())], [Value::Int(2), Value::Text("new".into())]]
    );
    ok(&mut db, "ALTER TABLE a RENAME COLUMN y TO why");
    assert_eq!(rows(&mut db, "SELECT why FROM a WHERE id = 2"), [[Value::Text("two".into())]]);
    assert_eq!(state(&mut db, "ALTER TABLE a RENAME COLUMN why TO z"), Some("42701"));
    assert_eq!(state(&mut db, "ALTER TABLE a DROP COLUMN id"), Some("0A000"), "primary key");
    assert_eq!(state(&mut db, "ALTER TABLE a RENAME TO b, ADD COLUMN w INT"), Some("0A000"));
    ok(&mut db, "ALTER TABLE a RENAME TO b");
    assert_eq!(
        rows(&mut db, "SELECT attname FROM pg_attribute WHERE attrelid = 'b'::regclass AND attnum > 0 ORDER BY attnum"),
        [[Value::Text("id".into())], [Value::Text("why".into())], [Value::Text("z".into())], [Value::Text("x".into())]]
    );
}

#[test]
fn alter_column_defaults_null_and_types() {
    let mut db = db(&["CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(3) NOT NULL, n INT)"]);
    ok(&mut db, "ALTER TABLE d ALTER COLUMN n SET DEFAULT 7, ALTER COLUMN v DROP NOT NULL");
    ok(&mut db, "INSERT INTO d (id) VALUES (1)");
    assert_eq!(rows(&mut db, "SELECT v, n FROM d"), [[Value::Null, Value::Int(7)]]);
    ok(&mut db, "ALTER TABLE d ALTER COLUMN n DROP DEFAULT");
    ok(&mut db, "INSERT INTO d (id) VALUES (2)");
    assert_eq!(count(&mut db, "SELECT count(*) FROM d WHERE n IS NULL"), 1);
    assert_eq!(state(&mut db, "INSERT INTO d VALUES (3, 'long', 1)"), Some("22001"));
    ok(&mut db, "ALTER TABLE d ALTER COLUMN v TYPE VARCHAR(10)");
    ok(&mut db, "INSERT INTO d VALUES (3, 'long', 1)");
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN v TYPE VARCHAR(2)"), Some("0A000"), "would need a rewrite");
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN n TYPE BIGINT"), Some("0A000"));
    ok(&mut db, "ALTER TABLE d ALTER COLUMN v TYPE TEXT");
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN n SET NOT NULL"), Some("23502"), "rows 2 and 3 hold NULL");
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN id DROP NOT NULL"), Some("42P16"));
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN n SET DEFAULT 'x'"), Some("22P02"));
    // A failing action undoes the whole statement.
    assert_eq!(state(&mut db, "ALTER TABLE d ALTER COLUMN n SET DEFAULT 1, DROP COLUMN nope"), Some("42703"));
    ok(&mut db, "INSERT INTO d (id) VALUES (4)");
    assert_eq!(count(&mut db, "SELECT count(*) FROM d WHERE id = 4 AND n IS NULL"), 1);
}

#[test]
fn alter_table_add_foreign_key_as_django_sends_it() {
    let mut db = db(&[
        "CREATE TABLE author (id BIGINT PRIMARY KEY)",
        "CREATE TABLE book (id BIGINT PRIMARY KEY, author_id BIGINT NOT NULL)",
        "INSERT INTO author VALUES (1)",
        "INSERT INTO book VALUES (1, 1), (2, 2)",
    ]);
    let add = "ALTER TABLE \"book\" ADD CONSTRAINT \"book_author_id_fk\" FOREIGN KEY (\"author_id\") REFERENCES \"author\" (\"id\") DEFERRABLE INITIALLY DEFERRED";
    assert_eq!(state(&mut db, add), Some("23503"), "an existing row has no parent");
    ok(&mut db, "DELETE FROM book WHERE id = 2");
    ok(&mut db, add);
    assert_eq!(state(&mut db, "INSERT INTO book VALUES (3, 3)"), Some("23503"), "checked immediately");
    assert_eq!(
        rows(&mut db, "SELECT contype, condeferrable, condeferred, confrelid = 'author'::regclass, conkey, confkey, pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'book_author_id_fk'"),
        [[
            Value::Text("f".into()),
            Value::Bool(true),
            Value::Bool(true),
            Value::Bool(true),
            Value::Text("{2}".into()),
            Value::Text("{1}".into()),
            Value::Text("FOREIGN KEY (author_id) REFERENCES author(id) DEFERRABLE INITIALLY DEFERRED".into())
        ]]
    );
    assert_eq!(
        rows(&mut db, "SELECT rc.unique_constraint_name, rc.delete_rule, kcu.column_name, kcu.position_in_unique_constraint, ccu.table_name, ccu.column_name FROM information_schema.referential_constraints rc JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = rc.constraint_name JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = rc.constraint_name"),
        [[
            Value::Text("author_pkey".into()),
            Value::Text("NO ACTION".into()),
            Value::Text("author_id".into()),
            Value::Int(1),
            Value::Text("author".into()),
            Value::Text("id".into())
        ]]
    );
    ok(&mut db, "ALTER TABLE book DROP CONSTRAINT book_author_id_fk");
    ok(&mut db, "INSERT INTO book VALUES (3, 3)");
}
