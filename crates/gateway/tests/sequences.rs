//! SERIAL values under concurrency: sessions of one gateway (one client, whose cached blocks
//! statements never share) and a second client (its own blocks, taken from the same counter)
//! insert at once; every row gets a distinct value, and a statement drawing more values
//! than a block holds takes larger blocks.

mod support;

use pistou_client::SqlValue;
use pistou_gateway::GatewayConfig;
use support::{bounded, connect, start};

const SESSIONS: usize = 4;
const ROWS_PER_SESSION: usize = 40;
const OTHER_ROWS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_get_distinct_serial_values() {
    bounded(180, async {
        let h = start(GatewayConfig::default()).await;
        let admin = connect(h.addr).await;
        admin.batch_execute("CREATE TABLE seq_c (id SERIAL PRIMARY KEY, src TEXT)").await.expect("create");
        let mut tasks = Vec::new();
        for s in 0..SESSIONS {
            let addr = h.addr;
            tasks.push(tokio::spawn(async move {
                let c = connect(addr).await;
                for _ in 0..ROWS_PER_SESSION {
                    c.execute("INSERT INTO seq_c (src) VALUES ($1)", &[&format!("s{s}")]).await.expect("insert");
                }
            }));
        }
        let other = h.other.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..OTHER_ROWS {
                other
                    .run_txn(|t| {
                        Box::pin(async move {
                            t.execute("INSERT INTO seq_c (src) VALUES ($1)", &[SqlValue::Text("other".into())]).await
                        })
                    })
                    .await
                    .expect("insert by the other client");
            }
        }));
        for t in tasks {
            t.await.expect("inserter");
        }
        let total = SESSIONS * ROWS_PER_SESSION + OTHER_ROWS;
        // One statement drawing far more values than a first block holds.
        let copied = admin.execute("INSERT INTO seq_c (src) SELECT 'copy' FROM seq_c", &[]).await.expect("copy");
        assert_eq!(copied as usize, total);
        let row = admin.query_one("SELECT count(*), count(DISTINCT id), min(id) FROM seq_c", &[]).await.expect("count");
        let (count, distinct, min): (i64, i64, i32) = (row.get(0), row.get(1), row.get(2));
        assert_eq!((count, distinct), (2 * total as i64, 2 * total as i64), "every row has its own id");
        assert!(min >= 1);
        h.stop().await;
    })
    .await;
}

/// setval from one session: every session of the same gateway draws after the setting next,
/// though they had values cached from before it (as PostgreSQL sessions with the default
/// CACHE 1 do); values a concurrent statement held are not handed out again afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setval_reaches_every_session_of_the_gateway() {
    bounded(120, async {
        let h = start(GatewayConfig::default()).await;
        let (a, b) = (connect(h.addr).await, connect(h.addr).await);
        a.batch_execute("CREATE TABLE seq_r (id SERIAL PRIMARY KEY, v TEXT)").await.expect("create");
        for v in ["a1", "a2"] {
            a.execute("INSERT INTO seq_r (v) VALUES ($1)", &[&v]).await.expect("insert");
        }
        a.batch_execute("INSERT INTO seq_r VALUES (500, 'explicit')").await.expect("explicit id");
        let set: i64 =
            b.query_one("SELECT setval('seq_r_id_seq', max(id)) FROM seq_r", &[]).await.expect("setval").get(0);
        assert_eq!(set, 500);
        let next: i32 =
            a.query_one("INSERT INTO seq_r (v) VALUES ('after') RETURNING id", &[]).await.expect("insert").get(0);
        assert_eq!(next, 501, "the other session's cached values were dropped");
        let current: i64 = a.query_one("SELECT currval('seq_r_id_seq')", &[]).await.expect("currval").get(0);
        assert_eq!(current, 501);
        let b_current: i64 = b.query_one("SELECT currval('seq_r_id_seq')", &[]).await.expect("currval").get(0);
        assert_eq!(b_current, 500, "setval is the setting session's currval");
        h.stop().await;
    })
    .await;
}
