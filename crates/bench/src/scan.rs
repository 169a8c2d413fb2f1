//! Pesto Fig. 7: the latency of reading N consecutive rows as one range read (one
//! RANGE-READ to 3f+1 replicas) versus N point reads (N Basil reads, one after the other),
//! plain and with a 1-in-100 selective predicate (the range read returns N/100 rows; the
//! point reads still fetch all N). Measured: the statements' latency inside one transaction,
//! which is then rolled back (commit costs the same whichever way the rows were read).

use crate::cluster::Cluster;
use anyhow::{bail, Context, Result};
use pistou_client::{Client, ClientOptions, SqlOutput, SqlValue};
use pistou_core::ClientId;
use std::time::{Duration, Instant};

#[derive(clap::Args, Clone, Debug)]
pub struct ScanArgs {
    /// Rows in the table (the largest scan reads all of them).
    #[arg(long, default_value_t = 10_000)]
    pub rows: i64,
    /// Scan sizes.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000,10000")]
    pub sizes: Vec<i64>,
    /// Repetitions per size and method (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Rows per loading transaction.
    #[arg(long, default_value_t = 500)]
    pub batch: i64,
}

/// Median latency in milliseconds of `reps` runs of `body`.
async fn median_ms<F, Fut>(reps: usize, mut body: F) -> Result<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        body().await?;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn row_count(out: &SqlOutput) -> usize {
    match out {
        SqlOutput::Rows { rows, .. } => rows.len(),
        _ => 0,
    }
}

pub async fn run(cluster: &Cluster, a: &ScanArgs) -> Result<()> {
    if a.sizes.iter().any(|&n| n < 1 || n > a.rows) {
        bail!("every size must be between 1 and --rows ({})", a.rows);
    }
    let options = ClientOptions { op_timeout: Duration::from_secs(120), ..ClientOptions::default() };
    let client = Client::connect_with(cluster.config.clone(), ClientId(1), cluster.client_key(1)?, options).await?;
    load(&client, a).await?;
    // Let the last writebacks reach every replica, so range reads agree on the first round.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "| rows | range read ms | point reads ms | speed-up | selective range ms | selective point ms | speed-up |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in &a.sizes {
        let start = (a.rows - n) / 2; // the middle of the table
        let reps = if n >= 1000 { a.reps.min(3) } else { a.reps };
        let mut results = Vec::new();
        for selective in [false, true] {
            let filter = if selective { " AND sel = 0" } else { "" };
            let range_sql = format!("SELECT id, payload FROM items WHERE id >= $1 AND id < $2{filter}");
            let point_sql = format!("SELECT id, payload FROM items WHERE id = $1{filter}");
            let (client, range_sql, point_sql) = (&client, &range_sql, &point_sql);
            let expect = if selective { (start..start + n).filter(|i| i % 100 == 0).count() } else { n as usize };
            let range = median_ms(reps, || async move {
                let mut t = client.begin().await?;
                let out = t.query(range_sql, &[SqlValue::Int(start), SqlValue::Int(start + n)]).await?;
                t.rollback();
                check(row_count(&out), expect)
            })
            .await
            .context("range read")?;
            let point = median_ms(reps, || async move {
                let mut t = client.begin().await?;
                let mut got = 0;
                for id in start..start + n {
                    got += row_count(&t.query(point_sql, &[SqlValue::Int(id)]).await?);
                }
                t.rollback();
                check(got, expect)
            })
            .await
            .context("point reads")?;
            results.push((range, point));
        }
        let [(r, p), (sr, sp)] = [results[0], results[1]];
        println!("| {n} | {r:.2} | {p:.2} | {:.1}× | {sr:.2} | {sp:.2} | {:.1}× |", p / r, sp / sr);
    }
    client.shutdown().await;
    Ok(())
}

fn check(got: usize, expect: usize) -> Result<()> {
    if got != expect {
        bail!("read {got} rows, expected {expect}");
    }
    Ok(())
}

/// `items(id, sel, payload)`: `sel = id % 100`, a 100-byte payload.
async fn load(client: &Client, a: &ScanArgs) -> Result<()> {
    let ddl = "CREATE TABLE items (id BIGINT PRIMARY KEY, sel BIGINT NOT NULL, payload TEXT NOT NULL)";
    client.run_txn(|t| Box::pin(async move { t.query(ddl, &[]).await.map(|_| ()) })).await.context("create table")?;
    let mut next = 0;
    while next < a.rows {
        let end = (next + a.batch).min(a.rows);
        let values: Vec<String> = (next..end).map(|i| format!("({i}, {}, '{}')", i % 100, "x".repeat(100))).collect();
        let sql = format!("INSERT INTO items VALUES {}", values.join(", "));
        client
            .run_txn(|t| {
                let sql = sql.clone();
                Box::pin(async move { t.query(&sql, &[]).await.map(|_| ()) })
            })
            .await
            .context("loading rows")?;
        next = end;
    }
    Ok(())
}
