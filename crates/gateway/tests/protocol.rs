//! The gateway against an in-process cluster, through tokio-postgres (simple and
//! extended protocol) and raw protocol bytes.

mod support;

use pistou_gateway::GatewayConfig;
use support::{
    bind, bounded, connect, error_code, execute_and_sync, parse, query, raw_session, sqlstate, start, sync, tag,
    until_ready,
};
use tokio::io::AsyncWriteExt;
use tokio_postgres::types::Type;
use tokio_postgres::SimpleQueryMessage;

/// Text of every value of the rows of a simple query.
fn simple_rows(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

fn completions(messages: &[SimpleQueryMessage]) -> Vec<u64> {
    messages
        .iter()
        .filter_map(|m| if let SimpleQueryMessage::CommandComplete(n) = m { Some(*n) } else { None })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_and_extended_queries_with_types() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        // Several statements in one Query message, as psql sends them.
        let out = db
            .simple_query(
                "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, weight DOUBLE PRECISION, \
                 ok BOOLEAN, data BYTEA, day DATE, at TIMESTAMP); \
                 INSERT INTO items VALUES (1, 'apple', 0.5, true, NULL, '2024-02-29', '2024-02-29 12:34:56.5'), \
                 (2, 'pear', 1.5e3, false, NULL, NULL, NULL);",
            )
            .await
            .expect("create and insert");
        assert_eq!(completions(&out), vec![0, 2]);

        // Simple protocol: text format.
        let out =
            db.simple_query("SELECT id, name, weight, ok, data, day, at FROM items ORDER BY id").await.expect("select");
        let rows = simple_rows(&out);
        assert_eq!(rows.len(), 2);
        let text = |s: &str| Some(s.to_string());
        assert_eq!(
            rows[0],
            vec![
                text("1"),
                text("apple"),
                text("0.5"),
                text("t"),
                None,
                text("2024-02-29"),
                text("2024-02-29 12:34:56.5")
            ]
        );
        assert_eq!(rows[1][2], text("1500"));
        assert_eq!(rows[1][4], None);

        // Extended protocol with parameters; tokio-postgres uses binary formats.
        db.execute("UPDATE items SET data = $1 WHERE id = 1", &[&vec![1u8, 255]]).await.expect("bytea parameter");
        let out = db.simple_query("SELECT data FROM items WHERE id = 1").await.expect("bytea as text");
        assert_eq!(simple_rows(&out), vec![vec![text("\\x01ff")]]);
        let stmt = db.prepare("SELECT id, name, weight, ok, data FROM items WHERE id = $1").await.expect("prepare");
        assert_eq!(stmt.params(), &[Type::INT8]);
        let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(types, vec![Type::INT8, Type::TEXT, Type::FLOAT8, Type::BOOL, Type::BYTEA]);
        let row = db.query_one(&stmt, &[&1i64]).await.expect("query one");
        assert_eq!(row.get::<_, i64>(0), 1);
        assert_eq!(row.get::<_, String>(1), "apple");
        assert_eq!(row.get::<_, f64>(2), 0.5);
        assert!(row.get::<_, bool>(3));
        assert_eq!(row.get::<_, Vec<u8>>(4), vec![1, 255]);

        // Parameters of every kind, bound in binary, written and read back.
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_700_000_000_123_456);
        let n = db
            .execute(
                "INSERT INTO items (id, name, weight, ok, data, at) VALUES ($1, $2, $3, $4, $5, $6)",
                &[&3i64, &"plum 'quoted'", &-2.25f64, &false, &vec![0u8, 7], &at],
            )
            .await
            .expect("insert with parameters");
        assert_eq!(n, 1);
        let row = db
            .query_one("SELECT name, weight, ok, data, at FROM items WHERE id = $1", &[&3i64])
            .await
            .expect("read back");
        assert_eq!(row.get::<_, String>(0), "plum 'quoted'");
        assert_eq!(row.get::<_, f64>(1), -2.25);
        assert!(!row.get::<_, bool>(2));
        assert_eq!(row.get::<_, Vec<u8>>(3), vec![0, 7]);
        assert_eq!(row.get::<_, std::time::SystemTime>(4), at);
        // NUMERIC and DATE through text (tokio-postgres has no std type for them). NUMERIC
        // is not stored: replicas cannot decode NUMERIC rows yet (reported to the lead).
        let out = db.simple_query("SELECT CAST('1.25' AS NUMERIC), 2.50").await.expect("numeric");
        assert_eq!(simple_rows(&out), vec![vec![text("1.25"), text("2.50")]]);
        let stmt = db.prepare("SELECT CAST('1.25' AS NUMERIC)").await.expect("prepare numeric");
        assert_eq!(stmt.columns()[0].type_(), &Type::NUMERIC);
        let row = db.query_one("SELECT CAST(day AS TEXT) FROM items WHERE id = $1", &[&1i64]).await.expect("casts");
        assert_eq!(row.get::<_, String>(0), "2024-02-29");

        // UPDATE / DELETE counts, and a join.
        assert_eq!(
            db.execute("UPDATE items SET weight = weight + 1 WHERE id >= $1", &[&2i64]).await.expect("update"),
            2
        );
        db.batch_execute("CREATE TABLE tags (item BIGINT PRIMARY KEY, tag TEXT)").await.expect("create tags");
        db.batch_execute("INSERT INTO tags VALUES (1, 'fruit'), (3, 'stone fruit')").await.expect("insert tags");
        let rows = db
            .query("SELECT i.name, t.tag FROM items i JOIN tags t ON t.item = i.id ORDER BY i.id", &[])
            .await
            .expect("join");
        let pairs: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(pairs, vec![("apple".into(), "fruit".into()), ("plum 'quoted'".into(), "stone fruit".into())]);
        assert_eq!(db.execute("DELETE FROM tags WHERE item = $1", &[&3i64]).await.expect("delete"), 1);
        h.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_sqlstates_and_transactions_follow_postgres() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        db.batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT)").await.expect("create");
        db.batch_execute("INSERT INTO kv VALUES (1, 'one')").await.expect("insert");
        let e = db.batch_execute("INSERT INTO kv VALUES (1, 'again')").await.expect_err("duplicate key");
        assert_eq!(sqlstate(&e), "23505");
        let e = db.query("SELECT * FROM missing", &[]).await.expect_err("unknown table");
        assert_eq!(sqlstate(&e), "42P01");
        let e = db.batch_execute("SELEC 1").await.expect_err("syntax error");
        assert_eq!(sqlstate(&e), "42601");

        // ROLLBACK discards, COMMIT keeps.
        db.batch_execute("BEGIN; INSERT INTO kv VALUES (2, 'two')").await.expect("begin + insert");
        let seen = db.query_one("SELECT v FROM kv WHERE k = 2", &[]).await.expect("read own write");
        assert_eq!(seen.get::<_, String>(0), "two");
        db.batch_execute("ROLLBACK").await.expect("rollback");
        assert!(db.query_opt("SELECT v FROM kv WHERE k = 2", &[]).await.expect("after rollback").is_none());
        db.batch_execute("START TRANSACTION; INSERT INTO kv VALUES (3, 'three'); COMMIT").await.expect("commit");
        assert_eq!(
            db.query_one("SELECT v FROM kv WHERE k = 3", &[]).await.expect("after commit").get::<_, String>(0),
            "three"
        );

        // A failed statement poisons the block until ROLLBACK; COMMIT then rolls back.
        db.batch_execute("BEGIN; INSERT INTO kv VALUES (4, 'four')").await.expect("begin");
        let e = db.batch_execute("INSERT INTO kv VALUES (1, 'dup')").await.expect_err("duplicate in block");
        assert_eq!(sqlstate(&e), "23505");
        let e = db.query("SELECT 1", &[]).await.expect_err("ignored in failed block");
        assert_eq!(sqlstate(&e), "25P02");
        let e = db.batch_execute("SELECT v FROM kv").await.expect_err("ignored in failed block (simple)");
        assert_eq!(sqlstate(&e), "25P02");
        db.batch_execute("COMMIT").await.expect("commit of a failed block answers ROLLBACK");
        assert!(db.query_opt("SELECT v FROM kv WHERE k = 4", &[]).await.expect("row 4").is_none());

        // Schema changes may follow writes, but not change a table the block wrote
        // (docs/sql.md, "Schema changes in transactions").
        db.batch_execute("BEGIN; INSERT INTO kv VALUES (5, 'five'); CREATE TABLE other (a BIGINT PRIMARY KEY)")
            .await
            .expect("a schema change after a write");
        let e = db.batch_execute("ALTER TABLE kv ADD COLUMN extra INT").await.expect_err("a change of a written table");
        assert_eq!(sqlstate(&e), "0A000");
        db.batch_execute("ROLLBACK").await.expect("rollback");
        assert!(db.query_opt("SELECT v FROM kv WHERE k = 5", &[]).await.expect("row 5").is_none());
        let e = db.batch_execute("SELECT * FROM other").await.expect_err("rolled back with the block");
        assert_eq!(sqlstate(&e), "42P01");
        h.stop().await;
    })
    .await;
}

/// EXPLAIN ANALYZE runs its statement at the replicas (its writes commit, as in PostgreSQL)
/// and answers the plan with counts every replica computes alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_runs_the_statement_through_the_cluster() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        db.batch_execute("CREATE TABLE ea (id INT PRIMARY KEY, v INT)").await.expect("create");
        db.batch_execute("INSERT INTO ea VALUES (1, 10), (2, 20)").await.expect("insert");
        let lines = |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>();
        let plan =
            lines(db.query("EXPLAIN ANALYZE UPDATE ea SET v = v + 1 WHERE id = $1", &[&2i32]).await.expect("run"));
        assert!(plan.contains(&"Rows affected (UPDATE): 1".to_string()), "{plan:?}");
        assert!(plan.contains(&"Rows written: 1".to_string()), "{plan:?}");
        let v: i32 = db.query_one("SELECT v FROM ea WHERE id = 2", &[]).await.expect("read").get(0);
        assert_eq!(v, 21, "the update committed");
        let plan = lines(db.query("EXPLAIN ANALYZE SELECT * FROM ea", &[]).await.expect("run"));
        assert!(plan.contains(&"Rows returned: 2".to_string()), "{plan:?}");
        h.stop().await;
    })
    .await;
}

/// A block aborted by a conflict is run again at a new timestamp and committed when every
/// statement shows what it showed before (`replay.rs`); otherwise the client gets 40001.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_blocks_are_replayed_when_they_show_the_same() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let a = connect(h.addr).await;
        let b = connect(h.addr).await;
        a.batch_execute("CREATE TABLE hot (id BIGINT PRIMARY KEY, n BIGINT)").await.expect("create");
        a.batch_execute("INSERT INTO hot VALUES (1, 0)").await.expect("insert");

        // Two blind increments in blocks: they conflict, and the loser's replay shows the
        // same `UPDATE 1`, so both commit.
        for db in [&a, &b] {
            db.batch_execute("BEGIN").await.expect("begin");
            assert_eq!(db.execute("UPDATE hot SET n = n + 1 WHERE id = 1", &[]).await.expect("update"), 1);
        }
        a.batch_execute("COMMIT").await.expect("a commits");
        b.batch_execute("COMMIT").await.expect("b commits after a replay");
        let value: i64 = a.query_one("SELECT n FROM hot WHERE id = 1", &[]).await.expect("read").get(0);
        assert_eq!(value, 2, "both increments, each once");

        // A block that showed the value it read cannot be replayed once the value changed.
        b.batch_execute("BEGIN").await.expect("begin");
        let seen: i64 = b.query_one("SELECT n FROM hot WHERE id = 1", &[]).await.expect("b read").get(0);
        b.execute("UPDATE hot SET n = $1 WHERE id = 1", &[&(seen + 10)]).await.expect("b update");
        a.execute("UPDATE hot SET n = n + 1 WHERE id = 1", &[]).await.expect("autocommit increment");
        let e = b.batch_execute("COMMIT").await.expect_err("b's read changed");
        assert_eq!(sqlstate(&e), "40001", "{e}");
        // Nor can a block with a savepoint (its meaning is not in its statements alone).
        a.batch_execute("BEGIN; SAVEPOINT s; UPDATE hot SET n = n + 1 WHERE id = 1").await.expect("a block");
        b.execute("UPDATE hot SET n = n + 1 WHERE id = 1", &[]).await.expect("autocommit increment");
        let e = a.batch_execute("COMMIT").await.expect_err("not replayed");
        assert_eq!(sqlstate(&e), "40001", "{e}");
        let value: i64 = a.query_one("SELECT n FROM hot WHERE id = 1", &[]).await.expect("read").get(0);
        assert_eq!(value, 4, "the two autocommit increments only");
        h.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicting_transactions_get_40001_and_autocommit_retries() {
    bounded(120, async {
        let config = GatewayConfig { autocommit_retries: 100, ..GatewayConfig::default() };
        let h = start(config).await;
        let a = connect(h.addr).await;
        let b = connect(h.addr).await;
        a.batch_execute("CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT)").await.expect("create");
        a.batch_execute("INSERT INTO counter VALUES (1, 0)").await.expect("insert");

        // Both read the counter, then both write it: they cannot both commit.
        a.batch_execute("BEGIN").await.expect("a begin");
        b.batch_execute("BEGIN").await.expect("b begin");
        let na: i64 = a.query_one("SELECT n FROM counter WHERE id = 1", &[]).await.expect("a read").get(0);
        let nb: i64 = b.query_one("SELECT n FROM counter WHERE id = 1", &[]).await.expect("b read").get(0);
        assert_eq!((na, nb), (0, 0));
        let mut committed = 0;
        for (db, n) in [(&a, na), (&b, nb)] {
            let result = async {
                db.execute("UPDATE counter SET n = $1 WHERE id = 1", &[&(n + 1)]).await?;
                db.batch_execute("COMMIT").await
            }
            .await;
            match result {
                Ok(()) => committed += 1,
                Err(e) => {
                    assert_eq!(sqlstate(&e), "40001", "{e}");
                    let _ = db.batch_execute("ROLLBACK").await;
                }
            }
        }
        assert!(committed <= 1, "both conflicting transactions committed");
        let n: i64 = a.query_one("SELECT n FROM counter WHERE id = 1", &[]).await.expect("final").get(0);
        assert_eq!(n, committed);

        // Concurrent autocommit increments: conflicts are retried inside the gateway.
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let db = connect(h.addr).await;
            tasks.push(tokio::spawn(async move {
                for _ in 0..5 {
                    db.execute("UPDATE counter SET n = n + 1 WHERE id = 1", &[]).await.expect("autocommit increment");
                }
            }));
        }
        for t in tasks {
            t.await.expect("increment task");
        }
        let n2: i64 = a.query_one("SELECT n FROM counter WHERE id = 1", &[]).await.expect("final").get(0);
        assert_eq!(n2, n + 15);
        h.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_commands_and_catalog_queries() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        db.batch_execute("SET extra_float_digits = 3; SET application_name = 'tests'; SET TIME ZONE 'UTC'").await.expect("sets");
        let show = |m: Vec<SimpleQueryMessage>| simple_rows(&m)[0][0].clone().unwrap_or_default();
        assert_eq!(show(db.simple_query("SHOW application_name").await.expect("show")), "tests");
        assert_eq!(show(db.simple_query("SHOW TRANSACTION ISOLATION LEVEL").await.expect("show")), "serializable");
        let e = db.batch_execute("SET work_mem = '64MB'").await.expect_err("unknown parameter");
        assert_eq!(sqlstate(&e), "42704");
        let e = db.batch_execute("SET client_encoding = 'LATIN1'").await.expect_err("unsupported encoding");
        assert_eq!(sqlstate(&e), "22023");
        let row = db.query_one("SELECT version(), current_schema(), current_database()", &[]).await.expect("session functions");
        assert!(row.get::<_, String>(0).starts_with("PostgreSQL 16.0"));
        assert_eq!(row.get::<_, String>(1), "public");
        assert_eq!(row.get::<_, String>(2), "pistou");
        assert_eq!(db.query_one("SELECT 1", &[]).await.expect("select 1").get::<_, i32>(0), 1);
        db.batch_execute("CREATE TABLE t1 (a BIGINT PRIMARY KEY, b TEXT)").await.expect("create");
        let rows = db.simple_query("SELECT n.nspname as \"Schema\", c.relname as \"Name\" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r','p','') AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2").await.expect("\\dt");
        assert_eq!(simple_rows(&rows), vec![vec![Some("public".to_string()), Some("t1".to_string())]]);
        // Catalog relations are answered by the engine, as any query over them.
        let rows = db.simple_query("SELECT amname FROM pg_catalog.pg_am ORDER BY 1").await.expect("pg_am");
        assert_eq!(simple_rows(&rows), vec![vec![Some("btree".to_string())], vec![Some("heap".to_string())]]);
        // One Pistou does not compute fails loudly (PostgreSQL's own relations are not all
        // there, so an unknown name is "not supported" rather than "does not exist").
        let e = db.simple_query("SELECT * FROM pg_catalog.pg_no_such_relation").await.expect_err("unknown relation");
        assert_eq!(sqlstate(&e), "0A000");
        // Stopping the gateway closes its connections.
        h.stop().await;
        assert!(db.simple_query("SELECT 1").await.is_err(), "connection must be closed after shutdown");
    })
    .await;
}

/// Issue #33: statements were routed by substring, so a write whose literal mentioned
/// `pg_type … oid = N` was answered as a catalog query and silently not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_mentioning_the_catalog_never_diverts_a_statement() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        db.batch_execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)").await.expect("create");
        let body_of = |id: i64| {
            let db = &db;
            async move { db.query_one("SELECT body FROM notes WHERE id = $1", &[&id]).await.expect("read back").get::<_, String>(0) }
        };

        // Simple protocol: no result rows, one row written.
        let out = db.simple_query("INSERT INTO notes VALUES (1, 'pg_type oid = 23')").await.expect("insert");
        assert!(simple_rows(&out).is_empty(), "an INSERT returns no rows: {out:?}");
        assert_eq!(completions(&out), vec![1]);
        assert_eq!(body_of(1).await, "pg_type oid = 23");
        // Extended protocol, same text.
        let n = db.execute("INSERT INTO notes VALUES (2, 'SELECT typname FROM pg_catalog.pg_type WHERE oid = 23')", &[]).await.expect("insert");
        assert_eq!(n, 1);
        assert_eq!(body_of(2).await, "SELECT typname FROM pg_catalog.pg_type WHERE oid = 23");
        // UPDATE, both protocols.
        let out = db.simple_query("UPDATE notes SET body = 'pg_type oid = 23 (updated)' WHERE id = 2").await.expect("update");
        assert!(simple_rows(&out).is_empty(), "an UPDATE returns no rows: {out:?}");
        assert_eq!(completions(&out), vec![1]);
        assert_eq!(body_of(2).await, "pg_type oid = 23 (updated)");
        assert_eq!(db.execute("UPDATE notes SET body = 'from pg_catalog.pg_class' WHERE id = 1", &[]).await.expect("update"), 1);
        assert_eq!(body_of(1).await, "from pg_catalog.pg_class");

        // Client-side binding (psycopg's ClientCursor, psycopg2): user input inlined as a
        // quoted literal and sent with the simple protocol.
        let user_input = "x' FROM pg_catalog.pg_type WHERE oid = 23 --";
        let sql = format!("INSERT INTO notes VALUES (3, '{}')", user_input.replace('\'', "''"));
        let out = db.simple_query(&sql).await.expect("client-side bound insert");
        assert!(simple_rows(&out).is_empty(), "{out:?}");
        assert_eq!(body_of(3).await, user_input);
        let sql = format!("UPDATE notes SET body = '{}' WHERE id = 3", "pg_type oid = 20".replace('\'', "''"));
        assert_eq!(completions(&db.simple_query(&sql).await.expect("client-side bound update")), vec![1]);
        assert_eq!(body_of(3).await, "pg_type oid = 20");

        // Queries that only mention the catalog in literals, aliases or comments run as
        // ordinary SQL.
        let out = db.simple_query("SELECT 'pg_type oid = 23'").await.expect("select literal");
        assert_eq!(simple_rows(&out), vec![vec![Some("pg_type oid = 23".to_string())]]);
        let row = db.query_one("SELECT 'pg_catalog.pg_class' AS \"pg_catalog.x\"", &[]).await.expect("literal and alias");
        assert_eq!(row.columns()[0].name(), "pg_catalog.x");
        assert_eq!(row.get::<_, String>(0), "pg_catalog.pg_class");
        let rows = db
            .query("SELECT id AS \"pg_catalog.id\" FROM notes /* FROM pg_catalog.pg_type */ WHERE body LIKE '%pg_catalog.%' ORDER BY id", &[])
            .await
            .expect("alias, comment and literal on a user table");
        assert_eq!(rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(), vec![1]);

        // Text that does not parse goes to Pistou, which reports the syntax error.
        let e = db.simple_query("SELEC typname FROM pg_catalog.pg_type WHERE oid = 23").await.expect_err("syntax error");
        assert_eq!(sqlstate(&e), "42601");
        // Catalog queries are still answered, from the parse tree.
        let out = db.simple_query("SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid = 23").await.expect("type lookup");
        assert_eq!(simple_rows(&out), vec![vec![Some("int4".to_string())]]);
        let out = db.simple_query("SELECT typname FROM pg_catalog.pg_type WHERE typname = 'oid = 23'").await;
        assert!(simple_rows(&out.expect("a literal that looks like a lookup")).is_empty());
        // A catalog relation joins with a user table like any other relation.
        let out = db.simple_query("SELECT c.relname FROM notes n JOIN pg_catalog.pg_class c ON c.relname = 'notes' WHERE n.id = 1").await;
        assert_eq!(simple_rows(&out.expect("mixed")), vec![vec![Some("notes".to_string())]]);
        let rows = db.query("SELECT count(*) FROM notes", &[]).await.expect("count");
        assert_eq!(rows[0].get::<_, i64>(0), 3, "every write reached the table");
        h.stop().await;
    })
    .await;
}

/// Issue #26: SQL-level PREPARE / EXECUTE / DEALLOCATE, and DEALLOCATE ALL (which psycopg 3
/// sends on rollback once it has prepared a statement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_level_prepared_statements() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let db = connect(h.addr).await;
        db.batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT)").await.expect("create");
        let out = db
            .simple_query("PREPARE ins (bigint, text) AS INSERT INTO kv VALUES ($1, $2); EXECUTE ins(1, 'one'); execute INS (2, NULL)")
            .await
            .expect("prepare and execute");
        assert_eq!(completions(&out), vec![0, 1, 1]);
        db.batch_execute("PREPARE get AS SELECT k, v FROM kv WHERE k >= $1 ORDER BY k").await.expect("prepare a query");
        let out = db.simple_query("EXECUTE get(1)").await.expect("execute a query");
        assert_eq!(simple_rows(&out), vec![vec![Some("1".to_string()), Some("one".to_string())], vec![Some("2".to_string()), None]]);
        // Through the extended protocol, EXECUTE is described as the named statement.
        let rows = db.query("EXECUTE get('2')", &[]).await.expect("execute through the extended protocol");
        assert_eq!(rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(), vec![2]);

        // Errors as PostgreSQL's.
        let code = |r: Result<(), tokio_postgres::Error>| sqlstate(&r.expect_err("must fail"));
        assert_eq!(code(db.batch_execute("PREPARE get AS SELECT 1").await), "42P05");
        assert_eq!(code(db.batch_execute("EXECUTE nope(1)").await), "26000");
        assert_eq!(code(db.batch_execute("DEALLOCATE nope").await), "26000");
        assert_eq!(code(db.batch_execute("EXECUTE get(1, 2)").await), "42601");
        assert_eq!(code(db.batch_execute("EXECUTE get(1 + 1)").await), "0A000");
        assert_eq!(code(db.batch_execute("PREPARE bad AS SELECT * FROM missing").await), "42P01");
        assert_eq!(code(db.batch_execute("PREPARE bad AS CREATE TABLE t2 (a BIGINT PRIMARY KEY)").await), "42601");
        db.batch_execute("DEALLOCATE PREPARE get").await.expect("deallocate");
        assert_eq!(code(db.batch_execute("EXECUTE get(1)").await), "26000");

        // DEALLOCATE ALL drops the protocol's named statements too, as in PostgreSQL.
        let stmt = db.prepare("SELECT v FROM kv WHERE k = $1").await.expect("protocol-level prepare");
        assert_eq!(db.query_one(&stmt, &[&1i64]).await.expect("bound").get::<_, String>(0), "one");
        db.batch_execute("DEALLOCATE ALL").await.expect("deallocate all");
        assert_eq!(sqlstate(&db.query_one(&stmt, &[&1i64]).await.expect_err("dropped by DEALLOCATE ALL")), "26000");
        assert_eq!(code(db.batch_execute("EXECUTE ins(3, 'x')").await), "26000");

        // In a block; refused in a failed block; DISCARD ALL deallocates.
        db.batch_execute("PREPARE ins (bigint, text) AS INSERT INTO kv VALUES ($1, $2)").await.expect("prepare again");
        db.batch_execute("BEGIN; EXECUTE ins(3, 'three')").await.expect("execute in a block");
        assert_eq!(code(db.batch_execute("EXECUTE ins(3, 'again')").await), "23505");
        assert_eq!(code(db.batch_execute("DEALLOCATE ins").await), "25P02");
        db.batch_execute("ROLLBACK").await.expect("rollback");
        assert!(db.query_opt("SELECT v FROM kv WHERE k = 3", &[]).await.expect("row 3").is_none());
        db.batch_execute("DISCARD ALL").await.expect("discard all");
        assert_eq!(code(db.batch_execute("EXECUTE ins(3, 'x')").await), "26000");
        h.stop().await;
    })
    .await;
}

/// Sends protocol messages and reads the answers up to ReadyForQuery.
async fn roundtrip(s: &mut tokio::net::TcpStream, bytes: Vec<u8>) -> Vec<(u8, Vec<u8>)> {
    s.write_all(&bytes).await.expect("send");
    until_ready(s).await
}

/// Statements named by Parse and by PREPARE share one namespace (raw protocol:
/// tokio-postgres does not expose its statement names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_and_sql_prepared_statements_share_names() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let mut s = raw_session(h.addr).await;
        let tags = |m: &[(u8, Vec<u8>)]| m.iter().filter(|(k, _)| *k == b'C').map(|(_, b)| tag(b)).collect::<Vec<_>>();
        let errors =
            |m: &[(u8, Vec<u8>)]| m.iter().filter(|(k, _)| *k == b'E').map(|(_, b)| error_code(b)).collect::<Vec<_>>();
        let m = roundtrip(&mut s, query("CREATE TABLE pn (k BIGINT PRIMARY KEY, v TEXT)")).await;
        assert_eq!(tags(&m), ["CREATE TABLE"]);
        // A statement made by Parse runs with EXECUTE, blocks PREPARE of its name, and is
        // dropped by DEALLOCATE.
        let m = roundtrip(&mut s, [parse("ins", "INSERT INTO pn VALUES ($1, $2)"), sync()].concat()).await;
        assert!(errors(&m).is_empty(), "{m:?}");
        assert_eq!(tags(&roundtrip(&mut s, query("EXECUTE ins(1, 'one')")).await), ["INSERT 0 1"]);
        assert_eq!(errors(&roundtrip(&mut s, query("PREPARE ins AS SELECT 1")).await), ["42P05"]);
        assert_eq!(tags(&roundtrip(&mut s, query("DEALLOCATE ins")).await), ["DEALLOCATE"]);
        assert_eq!(
            errors(&roundtrip(&mut s, [bind("ins", &["2", "two"]), execute_and_sync()].concat()).await),
            ["26000"]
        );
        // A statement made by PREPARE can be bound and executed by the protocol.
        assert_eq!(
            tags(&roundtrip(&mut s, query("PREPARE get (bigint) AS SELECT v FROM pn WHERE k = $1")).await),
            ["PREPARE"]
        );
        let m = roundtrip(&mut s, [bind("get", &["1"]), execute_and_sync()].concat()).await;
        assert!(m.iter().any(|(k, b)| *k == b'D' && b.ends_with(b"one")), "{m:?}");
        assert_eq!(tags(&m), ["SELECT 1"]);
        assert_eq!(tags(&roundtrip(&mut s, query("DEALLOCATE ALL")).await), ["DEALLOCATE ALL"]);
        assert_eq!(errors(&roundtrip(&mut s, [bind("get", &["1"]), execute_and_sync()].concat()).await), ["26000"]);
        h.stop().await;
    })
    .await;
}
