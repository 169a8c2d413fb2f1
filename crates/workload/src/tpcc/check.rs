//! Consistency conditions 1–4 (spec 3.3.2.1–3.3.2.4), computed from per-district
//! aggregates read in one transaction and compared in the client.

use super::params;
use crate::conn::{error_text, int, Session};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;

type District = (i64, i64);

/// `sql` returns a key of `key_cols` integers then integer values; rows by key.
async fn by_key(s: &mut Session, sql: &str, key_cols: usize) -> Result<BTreeMap<Vec<i64>, Vec<i64>>> {
    let rows = s.client.query(sql, &[]).await.map_err(|e| anyhow!("{sql}: {}", error_text(&e)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let values = (0..row.len()).map(|i| int(&row, i)).collect::<Result<Vec<i64>>>()?;
        let (key, rest) = values.split_at(key_cols);
        out.insert(key.to_vec(), rest.to_vec());
    }
    Ok(out)
}

fn district_of(key: &[i64]) -> District {
    (key[0], key[1])
}

/// Every violation found, each naming its condition; empty when the data is consistent.
pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    params(s).await?;
    s.client.batch_execute("BEGIN").await.map_err(|e| anyhow!("BEGIN: {}", error_text(&e)))?;
    let result = violations(s).await;
    s.rollback_quietly().await;
    result
}

async fn violations(s: &mut Session) -> Result<Vec<String>> {
    let warehouses = by_key(s, "SELECT w_id, w_ytd FROM warehouse", 1).await?;
    let district_ytd = by_key(s, "SELECT d_w_id, CAST(SUM(d_ytd) AS BIGINT) FROM district GROUP BY d_w_id", 1).await?;
    let districts = by_key(s, "SELECT d_w_id, d_id, d_next_o_id FROM district", 2).await?;
    let orders = by_key(
        s,
        "SELECT o_w_id, o_d_id, MAX(o_id), CAST(SUM(o_ol_cnt) AS BIGINT) FROM orders GROUP BY o_w_id, o_d_id",
        2,
    )
    .await?;
    let new_orders = by_key(
        s,
        "SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), COUNT(*) FROM new_order GROUP BY no_w_id, no_d_id",
        2,
    )
    .await?;
    let lines = by_key(s, "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id", 2).await?;

    let mut found = Vec::new();
    // Condition 1: W_YTD = sum(D_YTD) for each warehouse.
    for (w, ytd) in &warehouses {
        let sum = district_ytd.get(w).map_or(0, |v| v[0]);
        if ytd[0] != sum {
            found.push(format!(
                "condition 1 (3.3.2.1) violated: warehouse {} has W_YTD {} but its districts' D_YTD sum to {sum}",
                w[0], ytd[0]
            ));
        }
    }
    for (key, next) in &districts {
        let (w, d) = district_of(key);
        let next_o_id = next[0];
        let max_o = orders.get(key).map(|v| v[0]);
        let new_order = new_orders.get(key);
        // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
        if max_o != Some(next_o_id - 1) || new_order.is_some_and(|n| n[0] != next_o_id - 1) {
            found.push(format!(
                "condition 2 (3.3.2.2) violated: district ({w}, {d}) has D_NEXT_O_ID {next_o_id}, max(O_ID) {}, max(NO_O_ID) {}",
                show(max_o),
                show(new_order.map(|n| n[0]))
            ));
        }
        // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = the number of NEW-ORDER rows.
        if let Some(n) = new_order {
            let (max, min, count) = (n[0], n[1], n[2]);
            if max - min + 1 != count {
                found.push(format!(
                    "condition 3 (3.3.2.3) violated: district ({w}, {d}) has NEW-ORDER ids {min}..={max} but {count} rows"
                ));
            }
        }
        // Condition 4: sum(O_OL_CNT) = the number of ORDER-LINE rows.
        let ol_cnt = orders.get(key).map_or(0, |v| v[1]);
        let line_rows = lines.get(key).map_or(0, |v| v[0]);
        if ol_cnt != line_rows {
            found.push(format!(
                "condition 4 (3.3.2.4) violated: district ({w}, {d}) has sum(O_OL_CNT) {ol_cnt} but {line_rows} ORDER-LINE rows"
            ));
        }
    }
    Ok(found)
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}
