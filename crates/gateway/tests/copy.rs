//! COPY through the gateway with a real client (tokio-postgres's `copy_in` / `copy_out`,
//! extended protocol; `simple_query` for the simple protocol), compared with the machine's
//! PostgreSQL (127.0.0.1:5432, database `test`, trust auth): the same input gives the same
//! rows, the same COPY TO output bytes and the same SQLSTATEs. Also tables without a
//! primary key. An unreachable PostgreSQL fails the test.

mod support;

use bytes::Bytes;
use futures::{SinkExt, TryStreamExt};
use pistou_gateway::GatewayConfig;
use support::{bounded, connect, postgres, start, Server};
use tokio_postgres::{Client, SimpleQueryMessage};

/// Rows of a query as text (simple protocol), or the SQLSTATE.
async fn rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    match client.simple_query(sql).await {
        Ok(messages) => Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
                _ => None,
            })
            .collect()),
        Err(e) => Err(support::sqlstate(&e)),
    }
}

/// COPY FROM STDIN of `chunks` (one CopyData each); the row count or the SQLSTATE.
async fn copy_in(client: &Client, sql: &str, chunks: &[&[u8]]) -> Result<u64, String> {
    let sink = client.copy_in::<_, Bytes>(sql).await.map_err(|e| support::sqlstate(&e))?;
    futures::pin_mut!(sink);
    for chunk in chunks {
        if let Err(e) = sink.send(Bytes::copy_from_slice(chunk)).await {
            return Err(support::sqlstate(&e));
        }
    }
    sink.finish().await.map_err(|e| support::sqlstate(&e))
}

async fn copy_out(client: &Client, sql: &str) -> Result<Vec<u8>, String> {
    let stream = client.copy_out(sql).await.map_err(|e| support::sqlstate(&e))?;
    let parts: Vec<Bytes> = stream.try_collect().await.map_err(|e| support::sqlstate(&e))?;
    Ok(parts.concat())
}

const TABLE: &str =
    "CREATE TABLE copy_t (id INT, name TEXT, amount NUMERIC(10,2), at TIMESTAMP, code CHAR(4), ok BOOLEAN)";

/// The statements of the comparison, run on one server. Each malformed COPY runs on a
/// connection of its own: how a client library reports the state a failed COPY leaves its
/// connection in depends on timing, and is not what this compares.
async fn script(server: Server) -> Vec<String> {
    let client = &server.connect().await;
    let mut out = Vec::new();
    let mut note = |what: &str, r: String| out.push(format!("{what}: {r}"));
    let _ = client.simple_query("DROP TABLE IF EXISTS copy_t").await;
    client.simple_query(TABLE).await.expect("create");
    let text: &[u8] = b"1\tplain\t1.50\t2024-01-02 03:04:05\tab\tt\n\
2\ttab\\there\\nnew line\t\\N\t\\N\t\\N\tf\n\
3\tback\\\\slash \\101\\x42 \\q\t-0.01\t2024-02-29 00:00:00\tabcd\t\\N\n";
    note("text", format!("{:?}", copy_in(client, "COPY copy_t FROM STDIN", &[&text[..30], &text[30..]]).await));
    let csv: &[u8] = b"id,name,amount,at,code,ok\n4,\"quoted, with comma\",2,,x,true\n5,\"multi\nline \"\"q\"\"\",,2024-01-01 00:00:00,\"\",false\n6,,3.25,,,\n";
    note(
        "csv",
        format!("{:?}", copy_in(client, "COPY copy_t FROM STDIN WITH (FORMAT csv, HEADER true)", &[csv]).await),
    );
    note(
        "columns",
        format!(
            "{:?}",
            copy_in(
                client,
                "COPY copy_t (name, id) FROM STDIN WITH (DELIMITER '|', NULL 'nil')",
                &[b"seven|7\nnil|8\n\\.\n"]
            )
            .await
        ),
    );
    note("select", format!("{:?}", rows(client, "SELECT * FROM copy_t ORDER BY id").await));
    note("out text", format!("{:?}", copy_out(client, "COPY copy_t TO STDOUT").await.map(|b| sorted_lines(&b))));
    note(
        "out csv",
        format!(
            "{:?}",
            copy_out(
                client,
                "COPY (SELECT id, name, code FROM copy_t WHERE id < 6 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)"
            )
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
        ),
    );
    // Malformed input: the SQLSTATE, and nothing of that COPY is left behind in these cases.
    for (what, sql, data) in [
        ("extra column", "COPY copy_t (id) FROM STDIN", &b"1\t2\n"[..]),
        ("missing column", "COPY copy_t (id, name) FROM STDIN", b"1\n"),
        ("bad integer", "COPY copy_t (id) FROM STDIN", b"x1\n"),
        ("bad timestamp", "COPY copy_t (at) FROM STDIN", b"2024-13-01\n"),
        ("too long", "COPY copy_t (code) FROM STDIN", b"abcdef\n"),
        ("unterminated csv", "COPY copy_t (name) FROM STDIN CSV", b"\"open\n"),
        ("bad utf8", "COPY copy_t (name) FROM STDIN", b"\xff\n"),
        ("corrupt end marker", "COPY copy_t (name) FROM STDIN", b"a\\.b\n"),
        ("end marker after data", "COPY copy_t (name) FROM STDIN", b"last\\.\nignored\n"),
        ("no such column", "COPY copy_t (nope) FROM STDIN", b""),
        ("no such table", "COPY nope FROM STDIN", b""),
    ] {
        note(what, format!("{:?}", copy_in(&server.connect().await, sql, &[data]).await));
    }
    note("count", format!("{:?}", rows(client, "SELECT count(*) FROM copy_t").await));
    // The simple query protocol: COPY TO inside a multi-statement query string.
    let messages =
        client.simple_query("COPY (SELECT 1 AS one) TO STDOUT; SELECT 2").await.map_err(|e| support::sqlstate(&e));
    note("simple", format!("{:?}", messages.map(|m| m.len())));
    out
}

fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(b).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_behaves_as_in_postgres() {
    bounded(120, async {
        let expected = script(Server::Postgres).await;
        let _ = postgres().await.simple_query("DROP TABLE IF EXISTS copy_t").await;
        let h = start(GatewayConfig::default()).await;
        let got = script(Server::Gateway(h.addr)).await;
        // Options refused before any data (PostgreSQL reads the binary format, Pistou does
        // not). A new connection: tokio-postgres's simple_query gives up on the one above
        // after COPY TO's CopyOutResponse.
        let gw = connect(h.addr).await;
        for (sql, code) in [
            ("COPY copy_t FROM STDIN WITH (FORMAT binary)", "0A000"),
            ("COPY copy_t FROM STDIN WITH (DELIMITER 'a')", "22023"),
        ] {
            let e = gw.simple_query(sql).await.expect_err(sql);
            assert_eq!(support::sqlstate(&e), code, "{sql}");
        }
        let n = gw.simple_query("SELECT count(*) FROM copy_t").await.expect("the session still works");
        assert!(!n.is_empty());
        for (e, g) in expected.iter().zip(&got) {
            assert_eq!(g, e, "gateway vs PostgreSQL");
        }
        assert_eq!(got.len(), expected.len());
        h.stop().await;
    })
    .await;
}

/// Tables without a primary key, compared with PostgreSQL statement by statement:
/// duplicates, SELECT *, UPDATE / DELETE of some of the duplicates, RETURNING *, and ADD
/// PRIMARY KEY with its checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_without_primary_key_behave_as_in_postgres() {
    let statements = [
        "DROP TABLE IF EXISTS nopk",
        "CREATE TABLE nopk (k INT, v TEXT, n INT) WITH (fillfactor=100)",
        "INSERT INTO nopk VALUES (1, 'a', 1), (1, 'a', 1), (2, 'b', NULL)",
        "SELECT * FROM nopk ORDER BY k, v",
        "UPDATE nopk SET n = 5 WHERE k = 1",
        "SELECT k, n FROM nopk ORDER BY k",
        "DELETE FROM nopk WHERE n IS NULL",
        "INSERT INTO nopk (k, v) VALUES (3, 'c') RETURNING *",
        "SELECT count(*), sum(n) FROM nopk",
        "ALTER TABLE nopk ADD PRIMARY KEY (k)",
        "ALTER TABLE nopk ADD PRIMARY KEY (n)",
        "DELETE FROM nopk WHERE k = 1",
        "ALTER TABLE nopk ADD PRIMARY KEY (k)",
        "INSERT INTO nopk VALUES (3, 'dup', 0)",
        "INSERT INTO nopk VALUES (NULL, 'null key', 0)",
        "INSERT INTO nopk VALUES (4, 'd', 4)",
        "UPDATE nopk SET v = 'dd' WHERE k = 4",
        "SELECT * FROM nopk ORDER BY k",
        "VACUUM ANALYZE nopk",
        "VACUUM nope",
        "ANALYZE nopk",
        "TRUNCATE nopk",
        "SELECT count(*) FROM nopk",
        "DROP TABLE nopk",
    ];
    bounded(120, async {
        let pg = postgres().await;
        let mut expected = Vec::new();
        for s in statements {
            expected.push(rows(&pg, s).await);
        }
        let h = start(GatewayConfig::default()).await;
        let gw = connect(h.addr).await;
        for (s, e) in statements.iter().zip(&expected) {
            let got = rows(&gw, s).await;
            assert_eq!(&got, e, "{s}");
        }
        h.stop().await;
    })
    .await;
}

/// A COPY larger than the batches in flight, failing in a later batch: the batches before
/// it stay committed, and the error, sent once every batch in flight has finished, counts
/// exactly the rows that are there (what PostgreSQL would roll back, see docs/gateway.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_batch_reports_exactly_the_rows_committed_before_it() {
    bounded(180, async {
        let h = start(GatewayConfig::default()).await;
        let client = connect(h.addr).await;
        client.simple_query("CREATE TABLE copy_pk (id INT PRIMARY KEY, v TEXT)").await.expect("create");
        // 9,000 rows (five batches of at most 2,000); line 8,500 repeats id 1.
        let mut data = String::new();
        for line in 1..=9_000u32 {
            let id = if line == 8_500 { 1 } else { line };
            data.push_str(&format!("{id}\tv{line}\n"));
        }
        let sink = client.copy_in::<_, Bytes>("COPY copy_pk FROM STDIN").await.expect("copy starts");
        futures::pin_mut!(sink);
        let sent = sink.send(Bytes::from(data)).await;
        let error = match sent {
            Ok(()) => sink.finish().await.expect_err("a duplicate key"),
            Err(e) => e,
        };
        assert_eq!(support::sqlstate(&error), "23505", "{error:?}");
        let message = error.as_db_error().map(|e| e.message().to_string()).unwrap_or_default();
        let committed: u64 = message
            .split("; ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no committed count in {message:?}"));
        assert!(message.contains("(COPY copy_pk, line "), "{message}");
        let count = rows(&client, "SELECT count(*) FROM copy_pk").await.expect("count");
        assert_eq!(count, vec![vec![Some(committed.to_string())]], "{message}");
        // Whole batches: the one holding line 8,500 inserted nothing.
        assert_eq!(committed % 1_000, 0, "{message}");
        assert!((6_000..9_000).contains(&committed), "{message}");
        h.stop().await;
    })
    .await;
}
