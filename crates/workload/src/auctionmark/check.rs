//! Invariants that hold after any run, each reported with its name:
//! - `item_seller_exists`, `bid_item_exists`, `bidder_exists`, `comment_item_exists`;
//! - `num_bids`: I_NUM_BIDS = the item's bids (NewBid adds one with each bid row);
//! - `max_bid_record`: an item with bids has an ITEM_MAX_BID naming one of its bids, an item
//!   without has none;
//! - `current_price`: I_CURRENT_PRICE = the highest IB_BID = the IB_BID of the maximum bid,
//!   or I_INITIAL_PRICE without bids;
//! - `max_bid_highest`: the maximum bid's IB_MAX_BID is the highest of the item's;
//! - `purchase_of_closed_item`, `purchase_of_winning_bid`, `one_purchase_per_item`: only
//!   closed items are sold, to their maximum bid, once;
//! - `winner_recorded`: an item waiting for purchase has a USERACCT_ITEM of its winner, and a
//!   sold one the winner's USERACCT_ITEM naming the purchase;
//! - `status_valid`: I_STATUS is 0 (open), 1 (waiting for purchase) or 2 (closed), and an
//!   item waiting for purchase has bids;
//! - `comment_count`: I_NUM_COMMENTS = the item's comments (NULL, as BenchBase's insertItem
//!   leaves it, with at most one: NewComment then always takes id 1);
//! - `unanswered_comments`: U_COMMENTS = the unanswered questions on the user's items;
//! - `feedback_rating`: U_RATING = the sum of the ratings the user received.
//!
//! Pistou caps the rows one transaction reads (32,768): a range of users with their items,
//! bids, purchases, comments and feedback is read per transaction (each range consistent on
//! its own); the set of users and the USERACCT_ITEM rows a range per statement: run `check`
//! when no workload is writing.

use super::{params, user_ranges, CLOSED, OPEN, WAITING_FOR_PURCHASE};
use crate::conn::{int, int_opt, Session};
use crate::violations::{batch, rows, Found};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};

/// Users per transaction.
const USER_RANGE: u64 = 200;

type Key = (String, String);

struct Item {
    initial: f64,
    current: f64,
    num_bids: Option<i64>,
    num_comments: Option<i64>,
    status: i64,
}

struct Bid {
    id: i64,
    buyer: String,
    bid: f64,
    max_bid: f64,
}

/// A USERACCT_ITEM row's purchase (ui_ip_id, ui_ip_ib_id), if any.
type UserItems = BTreeMap<(String, String, String), (Option<i64>, Option<i64>)>;

pub async fn check(s: &mut Session) -> Result<Vec<String>> {
    let params = params(s).await?;
    let ranges = user_ranges(params.scale.users, USER_RANGE);
    let mut found = Found::default();
    let (mut users, mut user_items) = (BTreeSet::new(), UserItems::new());
    for (from, to) in &ranges {
        for row in rows(s, "SELECT u_id FROM useracct WHERE u_id >= $1 AND u_id < $2", &[from, to]).await? {
            users.insert(row.try_get::<_, String>(0)?);
        }
        let sql = "SELECT ui_u_id, ui_i_id, ui_i_u_id, ui_ip_id, ui_ip_ib_id FROM useracct_item \
                   WHERE ui_u_id >= $1 AND ui_u_id < $2";
        for row in rows(s, sql, &[from, to]).await? {
            let key = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            user_items.insert(key, (int_opt(&row, 3)?, int_opt(&row, 4)?));
        }
    }
    for (from, to) in &ranges {
        check_range(s, from, to, &users, &user_items, &mut found).await?;
    }
    Ok(found.into_lines())
}

/// The users of one range, and their items with everything about them, read in one transaction.
async fn check_range(
    s: &mut Session,
    from: &String,
    to: &String,
    users: &BTreeSet<String>,
    user_items: &UserItems,
    found: &mut Found,
) -> Result<()> {
    let range: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [from, to];
    batch(s, "BEGIN READ ONLY").await?;
    let user_rows =
        rows(s, "SELECT u_id, u_rating, u_comments FROM useracct WHERE u_id >= $1 AND u_id < $2", &range).await?;
    let item_rows = rows(
        s,
        "SELECT i_id, i_u_id, i_initial_price, i_current_price, i_num_bids, i_num_comments, i_status \
         FROM auction_item WHERE i_id >= $1 AND i_id < $2",
        &range,
    )
    .await?;
    let bid_rows = rows(
        s,
        "SELECT ib_id, ib_i_id, ib_u_id, ib_buyer_id, ib_bid, ib_max_bid FROM item_bid WHERE ib_i_id >= $1 AND ib_i_id < $2",
        &range,
    )
    .await?;
    let max_rows = rows(
        s,
        "SELECT imb_i_id, imb_u_id, imb_ib_id, imb_ib_i_id, imb_ib_u_id FROM item_max_bid \
         WHERE imb_i_id >= $1 AND imb_i_id < $2",
        &range,
    )
    .await?;
    let purchase_rows = rows(
        s,
        "SELECT ip_id, ip_ib_id, ip_ib_i_id, ip_ib_u_id FROM item_purchase WHERE ip_ib_i_id >= $1 AND ip_ib_i_id < $2",
        &range,
    )
    .await?;
    let comment_rows = rows(
        s,
        "SELECT ic_id, ic_i_id, ic_u_id, ic_response FROM item_comment WHERE ic_i_id >= $1 AND ic_i_id < $2",
        &range,
    )
    .await?;
    let feedback_rows =
        rows(s, "SELECT uf_u_id, uf_rating FROM useracct_feedback WHERE uf_u_id >= $1 AND uf_u_id < $2", &range)
            .await?;
    batch(s, "COMMIT").await?;

    let mut items: BTreeMap<Key, Item> = BTreeMap::new();
    for row in &item_rows {
        let key: Key = (row.try_get(0)?, row.try_get(1)?);
        if !users.contains(&key.1) {
            found.add("item_seller_exists", format!("item {} names seller {}", key.0, key.1));
        }
        let item = Item {
            initial: row.try_get(2)?,
            current: row.try_get(3)?,
            num_bids: int_opt(row, 4)?,
            num_comments: int_opt(row, 5)?,
            status: int(row, 6)?,
        };
        items.insert(key, item);
    }
    let mut bids: BTreeMap<Key, Vec<Bid>> = BTreeMap::new();
    for row in &bid_rows {
        let key: Key = (row.try_get(1)?, row.try_get(2)?);
        let bid = Bid { id: int(row, 0)?, buyer: row.try_get(3)?, bid: row.try_get(4)?, max_bid: row.try_get(5)? };
        if !items.contains_key(&key) {
            found.add("bid_item_exists", format!("bid {} names item {} of {}", bid.id, key.0, key.1));
        }
        if !users.contains(&bid.buyer) {
            found.add("bidder_exists", format!("bid {} on item {} names buyer {}", bid.id, key.0, bid.buyer));
        }
        bids.entry(key).or_default().push(bid);
    }
    // Each item's maximum bid: (bid id, the bid's item) as ITEM_MAX_BID names it.
    let mut max_bids: BTreeMap<Key, (i64, Key)> = BTreeMap::new();
    for row in &max_rows {
        let key: Key = (row.try_get(0)?, row.try_get(1)?);
        max_bids.insert(key, (int(row, 2)?, (row.try_get(3)?, row.try_get(4)?)));
    }
    for key in max_bids.keys().filter(|k| !items.contains_key(*k)) {
        found.add("max_bid_record", format!("ITEM_MAX_BID names item {} of {}, which does not exist", key.0, key.1));
    }
    let mut winners: BTreeMap<Key, (i64, String)> = BTreeMap::new();
    for (key, item) in &items {
        let (i, u) = key;
        let empty = Vec::new();
        let of_item = bids.get(key).unwrap_or(&empty);
        let count = of_item.len() as i64;
        if item.num_bids != Some(count) {
            found.add("num_bids", format!("item {i} of {u} has I_NUM_BIDS {} but {count} bids", show(item.num_bids)));
        }
        if !matches!(item.status, OPEN | WAITING_FOR_PURCHASE | CLOSED) {
            found.add("status_valid", format!("item {i} of {u} has I_STATUS {}", item.status));
        }
        if item.status == WAITING_FOR_PURCHASE && of_item.is_empty() {
            found.add("status_valid", format!("item {i} of {u} waits for purchase without bids"));
        }
        let Some(highest) = of_item.iter().map(|b| b.bid).reduce(f64::max) else {
            if max_bids.contains_key(key) {
                found.add("max_bid_record", format!("item {i} of {u} has no bids but an ITEM_MAX_BID"));
            }
            if item.current != item.initial {
                found.add(
                    "current_price",
                    format!("item {i} of {u} has no bids but price {} (initial {})", item.current, item.initial),
                );
            }
            continue;
        };
        let top = match max_bids.get(key) {
            Some((id, of)) if of == key => of_item.iter().find(|b| b.id == *id),
            _ => None,
        };
        let Some(top) = top else {
            found.add("max_bid_record", format!("item {i} of {u} has {count} bids but no ITEM_MAX_BID naming one"));
            continue;
        };
        winners.insert(key.clone(), (top.id, top.buyer.clone()));
        if item.current != highest || item.current != top.bid {
            found.add(
                "current_price",
                format!(
                    "item {i} of {u} has price {} but its highest bid is {highest} and its maximum bid {} bids {}",
                    item.current, top.id, top.bid
                ),
            );
        }
        if let Some(above) = of_item.iter().find(|b| b.max_bid > top.max_bid) {
            found.add(
                "max_bid_highest",
                format!(
                    "item {i} of {u}: bid {} has maximum {} above the maximum bid {}'s {}",
                    above.id, above.max_bid, top.id, top.max_bid
                ),
            );
        }
        if item.status == WAITING_FOR_PURCHASE {
            let row = user_items.get(&(top.buyer.clone(), i.clone(), u.clone()));
            if row.is_none_or(|(ip, _)| ip.is_some()) {
                found.add(
                    "winner_recorded",
                    format!(
                        "item {i} of {u} waits for purchase but its winner {} has no USERACCT_ITEM for it",
                        top.buyer
                    ),
                );
            }
        }
    }
    let mut sold: BTreeMap<Key, i64> = BTreeMap::new();
    for row in &purchase_rows {
        let (ip_id, ib_id) = (int(row, 0)?, int(row, 1)?);
        let key: Key = (row.try_get(2)?, row.try_get(3)?);
        let (i, u) = &key;
        *sold.entry(key.clone()).or_default() += 1;
        match items.get(&key) {
            Some(item) if item.status == CLOSED => {}
            Some(item) => found.add(
                "purchase_of_closed_item",
                format!("purchase {ip_id} of item {i} of {u}, whose status is {}", item.status),
            ),
            None => found.add(
                "purchase_of_closed_item",
                format!("purchase {ip_id} names item {i} of {u}, which does not exist"),
            ),
        }
        match winners.get(&key) {
            Some((winner, buyer)) if *winner == ib_id => {
                let row = user_items.get(&(buyer.clone(), i.clone(), u.clone()));
                if row != Some(&(Some(ip_id), Some(ib_id))) {
                    found.add(
                        "winner_recorded",
                        format!(
                            "item {i} of {u} was sold to {buyer} but no USERACCT_ITEM of theirs names purchase {ip_id}"
                        ),
                    );
                }
            }
            _ => found.add(
                "purchase_of_winning_bid",
                format!("purchase {ip_id} of item {i} of {u} names bid {ib_id}, not the maximum bid"),
            ),
        }
    }
    for ((i, u), n) in sold.iter().filter(|(_, n)| **n > 1) {
        found.add("one_purchase_per_item", format!("item {i} of {u} was sold {n} times"));
    }
    let mut comments: BTreeMap<Key, i64> = BTreeMap::new();
    let mut unanswered: BTreeMap<String, i64> = BTreeMap::new();
    for row in &comment_rows {
        let key: Key = (row.try_get(1)?, row.try_get(2)?);
        if !items.contains_key(&key) {
            found.add("comment_item_exists", format!("comment {} names item {} of {}", int(row, 0)?, key.0, key.1));
        }
        if row.try_get::<_, Option<String>>(3)?.is_none() {
            *unanswered.entry(key.1.clone()).or_default() += 1;
        }
        *comments.entry(key).or_default() += 1;
    }
    for ((i, u), item) in &items {
        let n = comments.get(&(i.clone(), u.clone())).copied().unwrap_or(0);
        let right = match item.num_comments {
            Some(count) => count == n,
            None => n <= 1,
        };
        if !right {
            found.add(
                "comment_count",
                format!("item {i} of {u} has I_NUM_COMMENTS {} but {n} comments", show(item.num_comments)),
            );
        }
    }
    let mut ratings: BTreeMap<String, i64> = BTreeMap::new();
    for row in &feedback_rows {
        *ratings.entry(row.try_get(0)?).or_default() += int(row, 1)?;
    }
    for row in &user_rows {
        let u: String = row.try_get(0)?;
        let (rating, open) = (int(row, 1)?, int_opt(row, 2)?);
        let questions = unanswered.get(&u).copied().unwrap_or(0);
        if open != Some(questions) {
            found.add(
                "unanswered_comments",
                format!("user {u} has U_COMMENTS {} but {questions} unanswered questions", show(open)),
            );
        }
        let received = ratings.get(&u).copied().unwrap_or(0);
        if rating != received {
            found.add(
                "feedback_rating",
                format!("user {u} has U_RATING {rating} but received ratings summing to {received}"),
            );
        }
    }
    Ok(())
}

fn show(v: Option<i64>) -> String {
    v.map_or_else(|| "NULL".to_string(), |v| v.to_string())
}
