//! FOREIGN KEY, CHECK and UNIQUE constraints and ALTER TABLE actions through the gateway,
//! compared statement by statement with the machine's PostgreSQL (127.0.0.1:5432, database
//! `test`, user `postgres`, trust): rows as text, errors by SQLSTATE and message. And the
//! serializability of the foreign-key check: a child inserted and its parent deleted
//! concurrently cannot both commit.

mod support;

use pistou_gateway::GatewayConfig;
use support::{bounded, connect, postgres, start};
use tokio_postgres::{Client, SimpleQueryMessage};

#[derive(Debug, PartialEq)]
enum Outcome {
    Rows(Vec<Vec<Option<String>>>),
    Done(u64),
    Error { code: String, message: String },
}

async fn run(client: &Client, sql: &str) -> Outcome {
    match client.simple_query(sql).await {
        Ok(messages) => {
            let mut rows = Vec::new();
            let mut done = 0;
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(r) => {
                        rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                    }
                    SimpleQueryMessage::CommandComplete(n) => done = n,
                    _ => {}
                }
            }
            if rows.is_empty() && !sql.trim_start().to_uppercase().starts_with("SELECT") {
                Outcome::Done(done)
            } else {
                Outcome::Rows(rows)
            }
        }
        Err(e) => match e.as_db_error() {
            Some(db) => Outcome::Error { code: db.code().code().to_string(), message: db.message().to_string() },
            None => Outcome::Error { code: "none".into(), message: e.to_string() },
        },
    }
}

const CLEANUP: &[&str] = &["DROP TABLE IF EXISTS fk_t, fk_c, fk_k, fk_tree, fk_b, fk_d, fk_n, fk_ck, fk_p CASCADE"];

const SCRIPT: &[&str] = &[
    "CREATE TABLE fk_p (id INT PRIMARY KEY, code TEXT UNIQUE)",
    "CREATE TABLE fk_c (id INT PRIMARY KEY, pid INT REFERENCES fk_p(id), pcode TEXT, FOREIGN KEY (pcode) REFERENCES fk_p (code))",
    "INSERT INTO fk_p VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO fk_c VALUES (1, 1, 'b')",
    "INSERT INTO fk_c VALUES (2, 3, NULL)",
    "INSERT INTO fk_c VALUES (2, 1, 'zz')",
    "INSERT INTO fk_c VALUES (2, NULL, NULL)",
    "UPDATE fk_c SET pid = 7 WHERE id = 2",
    "DELETE FROM fk_p WHERE id = 1",
    "UPDATE fk_p SET id = 5 WHERE id = 2",
    "DELETE FROM fk_p WHERE code = 'b'",
    "UPDATE fk_p SET code = 'c' WHERE id = 5",
    "DROP TABLE fk_p",
    "SELECT * FROM fk_p ORDER BY id",
    "SELECT conname, contype, condeferrable, condeferred, conkey, confkey, confupdtype, confdeltype, confmatchtype, \
     confrelid = 'fk_p'::regclass FROM pg_constraint WHERE conrelid = 'fk_c'::regclass ORDER BY conname",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' AND conrelid = 'fk_c'::regclass ORDER BY 1",
    "SELECT tc.constraint_name, tc.constraint_type, tc.is_deferrable, kcu.column_name, kcu.ordinal_position, \
     kcu.position_in_unique_constraint FROM information_schema.table_constraints tc \
     JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name \
     WHERE tc.table_name = 'fk_c' ORDER BY 1, 5",
    "SELECT constraint_name, unique_constraint_name, match_option, update_rule, delete_rule \
     FROM information_schema.referential_constraints WHERE constraint_name LIKE 'fk_c%' ORDER BY 1",
    "SELECT table_name, column_name, constraint_name FROM information_schema.constraint_column_usage \
     WHERE constraint_name LIKE 'fk_c_%fkey' ORDER BY 3",
    // ON DELETE CASCADE / SET NULL down a self-referencing tree.
    "CREATE TABLE fk_tree (id INT PRIMARY KEY, up INT REFERENCES fk_tree ON DELETE CASCADE, \
     p INT REFERENCES fk_p ON DELETE SET NULL)",
    "INSERT INTO fk_tree VALUES (1, NULL, 1), (2, 1, 5), (3, 2, 5), (4, NULL, 5)",
    "DELETE FROM fk_tree WHERE id = 2",
    "SELECT * FROM fk_tree ORDER BY id",
    "INSERT INTO fk_p VALUES (9, 'n')",
    "UPDATE fk_tree SET p = 9",
    "DELETE FROM fk_p WHERE id = 9",
    "SELECT * FROM fk_tree ORDER BY id",
    // CHECK.
    "CREATE TABLE fk_k (id INT PRIMARY KEY, price INT NOT NULL CHECK (price > 0), lo INT, CONSTRAINT lo_small CHECK (lo < 100))",
    "INSERT INTO fk_k VALUES (1, 0, 1)",
    "INSERT INTO fk_k VALUES (1, 5, 100)",
    "INSERT INTO fk_k VALUES (1, 5, NULL)",
    "UPDATE fk_k SET price = -1",
    "SELECT conname, contype, conkey FROM pg_constraint WHERE conrelid = 'fk_k'::regclass ORDER BY 1",
    "SELECT tc.constraint_name FROM information_schema.table_constraints tc \
     WHERE tc.table_name = 'fk_k' AND tc.constraint_type = 'CHECK' AND tc.constraint_name NOT LIKE '%not_null' ORDER BY 1",
    // UNIQUE.
    "ALTER TABLE fk_k ADD CONSTRAINT fk_k_price_u UNIQUE (price)",
    "INSERT INTO fk_k VALUES (2, 5, 1)",
    "ALTER TABLE fk_k DROP CONSTRAINT fk_k_price_u",
    "INSERT INTO fk_k VALUES (2, 5, 1)",
    "ALTER TABLE fk_k ADD CONSTRAINT fk_k_price_u UNIQUE (price)",
    // CREATE UNIQUE INDEX checks the existing rows too, outside a block and in one.
    "CREATE UNIQUE INDEX fk_k_price_ix ON fk_k (price)",
    "BEGIN",
    "CREATE UNIQUE INDEX fk_k_price_ix ON fk_k (price)",
    "ROLLBACK",
    "INSERT INTO fk_k VALUES (9, 5, 1)",
    "DELETE FROM fk_k WHERE id = 9",
    // ALTER TABLE actions.
    "ALTER TABLE fk_k ADD COLUMN note VARCHAR(3)",
    "INSERT INTO fk_k VALUES (3, 7, 1, 'long')",
    "ALTER TABLE fk_k ALTER COLUMN note TYPE VARCHAR(10)",
    "INSERT INTO fk_k VALUES (3, 7, 1, 'long')",
    "ALTER TABLE fk_k RENAME COLUMN note TO memo",
    "ALTER TABLE fk_k ALTER COLUMN memo SET DEFAULT 'dflt', ALTER COLUMN price DROP NOT NULL",
    "INSERT INTO fk_k (id, lo) VALUES (4, 2)",
    "SELECT * FROM fk_k ORDER BY id",
    "ALTER TABLE fk_k DROP COLUMN lo",
    "SELECT * FROM fk_k ORDER BY id",
    "SELECT attname FROM pg_attribute WHERE attrelid = 'fk_k'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
    "ALTER TABLE fk_k ALTER COLUMN memo DROP DEFAULT",
    "ALTER TABLE fk_k DROP CONSTRAINT nope",
    "ALTER TABLE fk_k DROP COLUMN nope",
    // SET NOT NULL checks the existing rows first, outside a block and in one; DROP NOT NULL.
    "CREATE TABLE fk_n (id INT PRIMARY KEY, a INT, b TEXT)",
    "INSERT INTO fk_n VALUES (1, NULL, 'x'), (2, 2, NULL)",
    "ALTER TABLE fk_n ALTER COLUMN a SET NOT NULL",
    "ALTER TABLE fk_n ALTER b SET NOT NULL",
    "BEGIN",
    "ALTER TABLE fk_n ALTER COLUMN a SET NOT NULL",
    "ROLLBACK",
    "UPDATE fk_n SET a = 1 WHERE id = 1",
    "BEGIN",
    "SELECT count(*) FROM fk_n WHERE a IS NULL",
    "ALTER TABLE fk_n ALTER COLUMN a SET NOT NULL",
    "COMMIT",
    "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 'fk_n' ORDER BY ordinal_position",
    "SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'fk_n'::regclass AND attnum > 0 ORDER BY attnum",
    "INSERT INTO fk_n VALUES (3, NULL, 'z')",
    "ALTER TABLE fk_n ALTER COLUMN a SET NOT NULL",
    "ALTER TABLE fk_n ALTER COLUMN a DROP NOT NULL",
    "INSERT INTO fk_n VALUES (3, NULL, 'z')",
    "ALTER TABLE fk_n ALTER COLUMN id DROP NOT NULL",
    "SELECT * FROM fk_n ORDER BY id",
    "DROP TABLE fk_n",
    // As Django's migrate adds a foreign key.
    "CREATE TABLE fk_t (id BIGINT PRIMARY KEY, p_id INT NOT NULL)",
    "ALTER TABLE \"fk_t\" ADD CONSTRAINT \"fk_t_p_id_fk_fk_p_id\" FOREIGN KEY (\"p_id\") REFERENCES \"fk_p\" (\"id\") DEFERRABLE INITIALLY DEFERRED",
    "INSERT INTO fk_t VALUES (1, 99)",
    "INSERT INTO fk_t VALUES (1, 1)",
    "SELECT conname, condeferrable, condeferred, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'fk_t'::regclass AND contype = 'f'",
    "DROP TABLE fk_t",
    // In a block the existing rows are checked too, with the block's own writes.
    "CREATE TABLE fk_b (id INT PRIMARY KEY, p_id INT, v INT)",
    "INSERT INTO fk_b VALUES (1, 70, -1), (2, 70, 2)",
    "BEGIN",
    "ALTER TABLE fk_b ADD CONSTRAINT fk_b_v_pos CHECK (v > 0)",
    "ROLLBACK",
    "BEGIN",
    "ALTER TABLE fk_b ADD CONSTRAINT fk_b_p FOREIGN KEY (p_id) REFERENCES fk_p (id)",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO fk_p VALUES (70, 'seventy')",
    "ALTER TABLE fk_b ADD CONSTRAINT fk_b_p FOREIGN KEY (p_id) REFERENCES fk_p (id)",
    "COMMIT",
    "SELECT conname FROM pg_constraint WHERE conrelid = 'fk_b'::regclass AND contype = 'f'",
    "CREATE TABLE fk_d (id INT, v INT)",
    "INSERT INTO fk_d VALUES (1, 1), (1, 2)",
    "BEGIN",
    "ALTER TABLE fk_d ADD PRIMARY KEY (id)",
    "ROLLBACK",
    "BEGIN",
    "SELECT count(*) FROM fk_d",
    "ALTER TABLE fk_d ADD CONSTRAINT fk_d_v_pos CHECK (v > 0)",
    "COMMIT",
    "DROP TABLE fk_d",
    // CHECK definitions as PostgreSQL deparses them.
    "CREATE TABLE fk_ck (id INT PRIMARY KEY, name VARCHAR(10), a INT, b NUMERIC, t TEXT, f BOOLEAN, \
     CONSTRAINT fk_ck1 CHECK (a > 0 AND b < 10.5), CONSTRAINT fk_ck2 CHECK (name <> ''), \
     CONSTRAINT fk_ck3 CHECK (a IN (1, 2, 3)), CONSTRAINT fk_ck4 CHECK (f), \
     CONSTRAINT fk_ck5 CHECK (length(t) < 5 OR t IS NULL), CONSTRAINT fk_ck6 CHECK (t LIKE 'x%'))",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'fk_ck'::regclass ORDER BY 1",
    "DROP TABLE fk_ck",
    // NOT VALID: enforced for new rows, the old ones unchecked until VALIDATE CONSTRAINT.
    "CREATE TABLE fk_n (id INT PRIMARY KEY, p_id INT, v INT)",
    "INSERT INTO fk_n VALUES (1, 71, -1), (2, 70, 2)",
    "ALTER TABLE fk_n ADD CONSTRAINT fk_n_v_pos CHECK (v > 0) NOT VALID",
    "ALTER TABLE fk_n ADD CONSTRAINT fk_n_p FOREIGN KEY (p_id) REFERENCES fk_p (id) NOT VALID",
    "ALTER TABLE fk_n ADD CONSTRAINT fk_n_u UNIQUE (v) NOT VALID",
    "SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'fk_n'::regclass ORDER BY 1",
    "INSERT INTO fk_n VALUES (3, 70, -3)",
    "INSERT INTO fk_n VALUES (3, 72, 3)",
    "UPDATE fk_n SET v = v WHERE id = 1",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_v_pos",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_p",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_pkey",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT nope",
    "UPDATE fk_n SET v = 1, p_id = 70 WHERE id = 1",
    "BEGIN",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_v_pos",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_p",
    "COMMIT",
    "ALTER TABLE fk_n VALIDATE CONSTRAINT fk_n_p",
    "SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'fk_n'::regclass ORDER BY 1",
    "INSERT INTO fk_n VALUES (4, 70, -4)",
    "DROP TABLE fk_n",
    "DROP TABLE fk_b",
    "DROP TABLE fk_tree",
    "DROP TABLE fk_c",
    "DROP TABLE fk_p",
    "DROP TABLE fk_k",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constraints_behave_as_in_postgres() {
    bounded(180, async {
        let pg = postgres().await;
        for sql in CLEANUP {
            pg.batch_execute(sql).await.unwrap_or_else(|e| panic!("PostgreSQL cleanup {sql}: {e}"));
        }
        let h = start(GatewayConfig::default()).await;
        let gw = connect(h.addr).await;
        for sql in SCRIPT {
            let (expected, got) = (run(&pg, sql).await, run(&gw, sql).await);
            assert_eq!(got, expected, "statement {sql}: Pistou (left) differs from PostgreSQL (right)");
        }
        h.stop().await;
    })
    .await;
}

/// T1 inserts a child of parent 1 while T2 deletes parent 1; neither sees the other's write.
/// PostgreSQL's foreign-key triggers make one wait and fail; here the child insert's read of
/// the parent row and the delete's predicate over the child table are validated at commit,
/// so one of the two must abort (40001) or fail its check (23503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_insert_and_its_parent_delete_cannot_both_commit() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let a = connect(h.addr).await;
        let b = connect(h.addr).await;
        a.batch_execute("CREATE TABLE fkx_p (id INT PRIMARY KEY)").await.expect("create");
        a.batch_execute("CREATE TABLE fkx_c (id INT PRIMARY KEY, pid INT REFERENCES fkx_p)").await.expect("create");
        for round in 0..6 {
            a.batch_execute(&format!("INSERT INTO fkx_p VALUES ({round})")).await.expect("parent");
            let outcome = |r: Result<(), tokio_postgres::Error>| match r {
                Ok(()) => "ok".to_string(),
                Err(e) => support::sqlstate(&e),
            };
            let a_steps = async {
                a.batch_execute("BEGIN").await?;
                a.batch_execute(&format!("INSERT INTO fkx_c VALUES ({round}, {round})")).await?;
                Ok(())
            };
            let b_steps = async {
                b.batch_execute("BEGIN").await?;
                b.batch_execute(&format!("DELETE FROM fkx_p WHERE id = {round}")).await?;
                Ok(())
            };
            let (ra, rb) = tokio::join!(a_steps, b_steps);
            let (mut ra, mut rb) = (outcome(ra), outcome(rb));
            // Commit in alternating order.
            let (first, second) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let c1 = outcome(first.batch_execute("COMMIT").await);
            let c2 = outcome(second.batch_execute("COMMIT").await);
            let (ca, cb) = if round % 2 == 0 { (c1, c2) } else { (c2, c1) };
            if ra == "ok" {
                ra = ca;
            }
            if rb == "ok" {
                rb = cb;
            }
            assert!(
                !(ra == "ok" && rb == "ok"),
                "round {round}: the child insert and the parent delete both committed"
            );
            for r in [&ra, &rb] {
                assert!(["ok", "40001", "23503", "25P02"].contains(&r.as_str()), "round {round}: unexpected {r}");
            }
            // Whatever committed, the data is consistent: no child without its parent.
            let orphans = a
                .simple_query(
                    "SELECT count(*) FROM fkx_c c WHERE NOT EXISTS (SELECT 1 FROM fkx_p p WHERE p.id = c.pid)",
                )
                .await
                .expect("orphans");
            let n = orphans.iter().find_map(|m| match m {
                SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            });
            assert_eq!(n.as_deref(), Some("0"), "round {round}");
        }
        h.stop().await;
    })
    .await;
}
