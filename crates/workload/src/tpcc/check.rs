//! Consistency conditions 1–4 (spec 3.3.2.1–3.3.2.4). Pistou caps the rows one transaction
//! reads (32,768), less than one warehouse's order lines, so the aggregates are read per
//! district and per range of order ids, each statement its own transaction: `check` is
//! meant for a database no workload is writing to.

use super::{params, DISTRICTS};
use crate::conn::{error_text, int, int_opt, Session};
use anyhow::{anyhow, Result};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// Order ids per statement: at most 15 lines per order keeps a range of order lines under
/// Pistou's per-transaction read limit.
const ORDER_RANGE: i64 = 2000;

async fn rows(s: &mut Session, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
    s.query(sql, params).await.map_err(|e| anyhow!("{sql}: {}", error_text(&e)))
}

/// The first column of the first row, NULL or no row as None.
async fn scalar(s: &mut Session, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<i64>> {
    match rows(s, sql, params).await?.first() {
        Some(row) => int_opt(row, 0),
        None => Ok(None),
    }
}

/// What condition 2–4 need of one district.
struct DistrictFacts {
    max_o_id: Option<i64>,
    max_no_o_id: Option<i64>,
    min_no_o_id: Option<i64>,
    new_orders: i64,
    ol_cnt_sum: i64,
    order_lines: i64,
}

async fn district_facts(s: &mut Session, w: i64, d: i64, next_o_id: i64) -> Result<DistrictFacts> {
    let key: [&(dyn ToSql + Sync); 2] = [&w, &d];
    let max_o_id =
        scalar(s, "SELECT o_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 ORDER BY o_id DESC LIMIT 1", &key).await?;
    let max_no_o_id = scalar(
        s,
        "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id DESC LIMIT 1",
        &key,
    )
    .await?;
    let min_no_o_id =
        scalar(s, "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1", &key)
            .await?;
    let last = [max_o_id, max_no_o_id, Some(next_o_id - 1)].into_iter().flatten().max().unwrap_or(0);
    let (mut new_orders, mut ol_cnt_sum, mut order_lines) = (0, 0, 0);
    let mut from = 1;
    while from <= last {
        let to = from + ORDER_RANGE;
        let range: [&(dyn ToSql + Sync); 4] = [&w, &d, &from, &to];
        new_orders += scalar(
            s,
            "SELECT COUNT(*) FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id >= $3 AND no_o_id < $4",
            &range,
        )
        .await?
        .unwrap_or(0);
        ol_cnt_sum += scalar(
            s,
            "SELECT CAST(SUM(o_ol_cnt) AS BIGINT) FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_id >= $3 AND o_id < $4",
            &range,
        )
        .await?
        .unwrap_or(0);
        order_lines += scalar(
            s,
            "SELECT COUNT(*) FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id >= $3 AND ol_o_id < $4",
            &range,
        )
        .await?
        .unwrap_or(0);
        from = to;
    }
    Ok(DistrictFacts { max_o_id, max_no_o_id, min_no_o_id, new_orders, ol_cnt_sum, order_lines })
}

/// Every violation found, each naming its condition; empty when the data is consistent.
pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    params(s).await?;
    let mut found = Vec::new();
    let warehouses = rows(s, "SELECT w_id, w_ytd FROM warehouse ORDER BY w_id", &[]).await?;
    for warehouse in &warehouses {
        let (w, w_ytd) = (int(warehouse, 0)?, int(warehouse, 1)?);
        let districts =
            rows(s, "SELECT d_id, d_ytd, d_next_o_id FROM district WHERE d_w_id = $1 ORDER BY d_id", &[&w]).await?;
        if districts.len() as u64 != DISTRICTS {
            found.push(format!("warehouse {w} has {} districts, not {DISTRICTS}", districts.len()));
        }
        // Condition 1: W_YTD = sum(D_YTD).
        let mut d_ytd_sum = 0;
        for district in &districts {
            d_ytd_sum += int(district, 1)?;
        }
        if w_ytd != d_ytd_sum {
            found.push(format!(
                "condition 1 (3.3.2.1) violated: warehouse {w} has W_YTD {w_ytd} but its districts' D_YTD sum to {d_ytd_sum}"
            ));
        }
        for district in &districts {
            let (d, next_o_id) = (int(district, 0)?, int(district, 2)?);
            let f = district_facts(s, w, d, next_o_id).await?;
            // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
            if f.max_o_id != Some(next_o_id - 1) || f.max_no_o_id.is_some_and(|m| m != next_o_id - 1) {
                found.push(format!(
                    "condition 2 (3.3.2.2) violated: district ({w}, {d}) has D_NEXT_O_ID {next_o_id}, max(O_ID) {}, max(NO_O_ID) {}",
                    show(f.max_o_id),
                    show(f.max_no_o_id)
                ));
            }
            // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = the number of NEW-ORDER rows.
            if let (Some(max), Some(min)) = (f.max_no_o_id, f.min_no_o_id) {
                if max - min + 1 != f.new_orders {
                    found.push(format!(
                        "condition 3 (3.3.2.3) violated: district ({w}, {d}) has NEW-ORDER ids {min}..={max} but {} rows",
                        f.new_orders
                    ));
                }
            }
            // Condition 4: sum(O_OL_CNT) = the number of ORDER-LINE rows.
            if f.ol_cnt_sum != f.order_lines {
                found.push(format!(
                    "condition 4 (3.3.2.4) violated: district ({w}, {d}) has sum(O_OL_CNT) {} but {} ORDER-LINE rows",
                    f.ol_cnt_sum, f.order_lines
                ));
            }
        }
    }
    Ok(found)
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}
