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
