//! BenchBase's default mix of AuctionMark's nine transactions, with the statements of
//! crates/sql/tests/slt/auctionmark.slt (`item` named `auction_item`), plus CloseAuctions,
//! which the first client runs periodically, as BenchBase does when it is enabled.
//! A business rule that stops a transaction (a closed auction, a bid below the highest
//! bidder's maximum, feedback already given, a key taken by a concurrent transaction that
//! computed the same id from what it read, a buyer without the money) rolls it back on
//! purpose: BenchBase's user aborts.
//!
//! As BenchBase's client does, the workload keeps the items it knows of (read when the run
//! starts, then those it lists, closes and sells) to choose the ones each transaction acts
//! on; a stale entry makes the transaction find the item changed and roll back.

use super::load::{gag_id, gav_id, word, ATTRIBUTE_GROUPS, CATEGORIES, FIRST_LEAF, VALUES_PER_GROUP};
use super::{
    attribute_id, attribute_number, cents, item_id, user_id, user_ranges, Params, BID_STEP, CLOSED, OPEN,
    WAITING_FOR_PURCHASE,
};
use crate::conn::{int, int_opt, sqlstate, Session};
use crate::driver::{Outcome, Workload};
use anyhow::{anyhow, Result};
use rand::rngs::StdRng;
use rand::Rng;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio_postgres::types::ToSql;

const KINDS: &[&str] = &[
    "get_item",
    "get_user_info",
    "new_bid",
    "new_comment",
    "new_comment_response",
    "new_feedback",
    "new_item",
    "new_purchase",
    "update_item",
    "close_auctions",
];
const GET_ITEM: usize = 0;
const GET_USER_INFO: usize = 1;
const NEW_BID: usize = 2;
const NEW_COMMENT: usize = 3;
const NEW_COMMENT_RESPONSE: usize = 4;
const NEW_FEEDBACK: usize = 5;
const NEW_ITEM: usize = 6;
const NEW_PURCHASE: usize = 7;
const UPDATE_ITEM: usize = 8;
const CLOSE_AUCTIONS: usize = 9;
/// BenchBase's default weights (config/postgres/sample_auctionmark_config.xml), in the
/// order of KINDS; CloseAuctions is not part of the mix.
const WEIGHTS: [u32; 9] = [45, 10, 20, 2, 1, 4, 10, 5, 3];
/// The first client runs CloseAuctions after this long, or once this many items were listed,
/// and a pass covers at most this many newly listed items: a pass over many items that others
/// are bidding on rarely commits (on PostgreSQL every bid on one of them makes it fail with
/// 40001), so small batches, often on a fast endpoint.
const CLOSE_INTERVAL: Duration = Duration::from_secs(1);
const CLOSE_AFTER_LISTED: usize = 20;
/// A CloseAuctions window starts this long before the previous one ended: an item listed
/// just before a pass, whose NewItem committed after the pass read, is closed by the next.
const CLOSE_OVERLAP: Duration = Duration::from_secs(1);
/// Users per statement when reading what the data set holds at the start.
const USER_RANGE: u64 = 500;
/// Percent chances of GetUserInfo's optional parts (feedback, comments, seller's items,
/// buyer's items, watched items): BenchBase's PROB_GETUSERINFO_INCLUDE_*.
const USER_INFO_PARTS: [u32; 5] = [25, 10, 10, 10, 10];
/// Chances that UpdateItem deletes an attribute (BenchBase's) and adds one (off in
/// BenchBase; on here so that its statements run).
const UPDATE_DELETES: f64 = 0.25;
const UPDATE_ADDS: f64 = 0.25;
const UNIQUE_VIOLATION: &str = "23505";

/// An item: its id and its seller's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemKey {
    pub id: String,
    pub seller: String,
}

#[derive(Debug)]
pub struct NewItem {
    seller: String,
    category: i64,
    /// (group, value) ids.
    attributes: Vec<(String, String)>,
    images: i64,
    name: String,
    description: String,
    user_attributes: String,
    initial: f64,
    days: u64,
}

#[derive(Debug)]
pub enum Txn {
    GetItem {
        item: ItemKey,
    },
    GetUserInfo {
        user: String,
        parts: [bool; 5],
    },
    /// The new bid is `raise` above the current price (read by the transaction).
    NewBid {
        item: ItemKey,
        buyer: String,
        raise: f64,
    },
    NewComment {
        item: ItemKey,
        buyer: String,
        question: String,
    },
    NewCommentResponse {
        ic_id: i64,
        item: ItemKey,
        response: String,
    },
    NewFeedback {
        item: ItemKey,
        about: String,
        from: String,
        rating: i16,
        remark: String,
    },
    NewItem(NewItem),
    NewPurchase {
        item: ItemKey,
    },
    UpdateItem {
        item: ItemKey,
        description: String,
        delete: bool,
        add: Option<(String, String)>,
    },
    /// Closes the open items listed between `from` and `to` (getDueItems's window).
    CloseAuctions {
        from: SystemTime,
        to: SystemTime,
    },
}

/// The items the client knows of, by what can be done with them.
#[derive(Default)]
struct Known {
    all: Vec<ItemKey>,
    open: Vec<ItemKey>,
    waiting: Vec<ItemKey>,
    /// Sold items and their buyers.
    sold: Vec<(ItemKey, String)>,
    /// Unanswered questions (comment id, item).
    questions: Vec<(i64, ItemKey)>,
}

pub struct AuctionMark {
    users: u64,
    loader_stop: SystemTime,
    known: Mutex<Known>,
    close: Mutex<Closing>,
}

/// When CloseAuctions last ran, the end of its window, and the start dates of the items
/// listed after it.
struct Closing {
    at: Instant,
    to: SystemTime,
    listed: std::collections::VecDeque<SystemTime>,
}

impl AuctionMark {
    /// Reads the items, the unanswered questions and the purchases (the client's knowledge).
    pub async fn new(s: &mut Session, params: &Params) -> Result<AuctionMark> {
        let profile = s
            .query_opt("SELECT * FROM config_profile", &[])
            .await?
            .ok_or_else(|| anyhow!("config_profile is empty: run `pistou workload init auctionmark --drop`"))?;
        let loader_stop: SystemTime = profile.try_get(2)?;
        let mut known = Known::default();
        for (from, to) in user_ranges(params.scale.users, USER_RANGE) {
            let rows = s
                .query("SELECT i_id, i_u_id, i_status FROM auction_item WHERE i_id >= $1 AND i_id < $2", &[&from, &to])
                .await?;
            for row in &rows {
                let item = ItemKey { id: row.try_get(0)?, seller: row.try_get(1)? };
                match int(row, 2)? {
                    OPEN => known.open.push(item.clone()),
                    WAITING_FOR_PURCHASE => known.waiting.push(item.clone()),
                    _ => {}
                }
                known.all.push(item);
            }
            let rows = s
                .query(
                    "SELECT ic_id, ic_i_id, ic_u_id FROM item_comment \
                     WHERE ic_i_id >= $1 AND ic_i_id < $2 AND ic_response IS NULL",
                    &[&from, &to],
                )
                .await?;
            for row in &rows {
                known.questions.push((int(row, 0)?, ItemKey { id: row.try_get(1)?, seller: row.try_get(2)? }));
            }
            let rows = s
                .query(
                    "SELECT ui_u_id, ui_i_id, ui_i_u_id FROM useracct_item \
                     WHERE ui_u_id >= $1 AND ui_u_id < $2 AND ui_ip_id IS NOT NULL",
                    &[&from, &to],
                )
                .await?;
            for row in &rows {
                known.sold.push((ItemKey { id: row.try_get(1)?, seller: row.try_get(2)? }, row.try_get(0)?));
            }
        }
        Ok(AuctionMark {
            users: params.scale.users,
            loader_stop,
            known: Mutex::new(known),
            // A run closes the items it lists.
            close: Mutex::new(Closing {
                at: Instant::now(),
                to: SystemTime::now().max(loader_stop),
                listed: Default::default(),
            }),
        })
    }

    fn closing(&self) -> MutexGuard<'_, Closing> {
        self.close.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn known(&self) -> MutexGuard<'_, Known> {
        // Hints stay usable whatever a panicking holder did.
        self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The transactions' clock: the wall clock, but never before the load.
    fn now(&self) -> SystemTime {
        SystemTime::now().max(self.loader_stop + Duration::from_secs(1))
    }

    fn user(&self, rng: &mut StdRng) -> String {
        user_id(rng.gen_range(1..=self.users))
    }

    fn other_user(&self, rng: &mut StdRng, not: &str) -> String {
        let u = self.user(rng);
        if u != not {
            return u;
        }
        // The next user (wrapping): a seller does not bid on or comment its own item.
        let n: u64 = u[1..].parse().unwrap_or(0);
        user_id(n % self.users + 1)
    }

    fn pick(list: &[ItemKey], rng: &mut StdRng) -> Option<ItemKey> {
        (!list.is_empty()).then(|| list[rng.gen_range(0..list.len())].clone())
    }

    fn take<T>(list: &mut Vec<T>, rng: &mut StdRng) -> Option<T> {
        (!list.is_empty()).then(|| list.swap_remove(rng.gen_range(0..list.len())))
    }

    fn new_item(&self, rng: &mut StdRng) -> Txn {
        let attributes = (0..rng.gen_range(0..=2))
            .map(|_| {
                let g = rng.gen_range(1..=ATTRIBUTE_GROUPS);
                (gag_id(g), gav_id((g - 1) * VALUES_PER_GROUP + rng.gen_range(1..=VALUES_PER_GROUP)))
            })
            .collect();
        Txn::NewItem(NewItem {
            seller: self.user(rng),
            category: rng.gen_range(FIRST_LEAF..=CATEGORIES),
            attributes,
            images: rng.gen_range(0..=2),
            name: word(rng, 4, 24),
            description: word(rng, 16, 64),
            user_attributes: word(rng, 8, 32),
            initial: cents(rng.gen_range(1.0..100.0)),
            days: rng.gen_range(1..=30),
        })
    }

    /// When the client knows no item a transaction needs: GetItem, or NewItem with no items.
    fn instead(&self, rng: &mut StdRng) -> (usize, Txn) {
        match Self::pick(&self.known().all, rng) {
            Some(item) => (GET_ITEM, Txn::GetItem { item }),
            None => (NEW_ITEM, self.new_item(rng)),
        }
    }

    fn mix(&self, kind: usize, rng: &mut StdRng) -> Option<Txn> {
        let mut known = self.known();
        Some(match kind {
            GET_ITEM => Txn::GetItem { item: Self::pick(&known.all, rng)? },
            GET_USER_INFO => {
                Txn::GetUserInfo { user: self.user(rng), parts: USER_INFO_PARTS.map(|p| rng.gen_range(0..100) < p) }
            }
            NEW_BID => {
                let item = Self::pick(&known.open, rng)?;
                let buyer = self.other_user(rng, &item.seller);
                Txn::NewBid { item, buyer, raise: rng.gen_range(0.001..BID_STEP) }
            }
            NEW_COMMENT => {
                let item = Self::pick(&known.all, rng)?;
                let buyer = self.other_user(rng, &item.seller);
                Txn::NewComment { item, buyer, question: word(rng, 8, 64) }
            }
            NEW_COMMENT_RESPONSE => {
                let (ic_id, item) = Self::take(&mut known.questions, rng)?;
                Txn::NewCommentResponse { ic_id, item, response: word(rng, 8, 64) }
            }
            NEW_FEEDBACK => {
                // The buyer of a sold item rates its seller.
                let (item, buyer) = if known.sold.is_empty() {
                    let item = Self::pick(&known.all, rng)?;
                    let buyer = self.other_user(rng, &item.seller);
                    (item, buyer)
                } else {
                    known.sold[rng.gen_range(0..known.sold.len())].clone()
                };
                let about = item.seller.clone();
                Txn::NewFeedback { item, about, from: buyer, rating: rng.gen_range(-1..=1), remark: word(rng, 8, 40) }
            }
            NEW_ITEM => {
                drop(known);
                self.new_item(rng)
            }
            NEW_PURCHASE => Txn::NewPurchase { item: Self::take(&mut known.waiting, rng)? },
            _ => {
                let item = Self::pick(&known.open, rng)?;
                let add = rng.gen_bool(UPDATE_ADDS).then(|| {
                    let g = rng.gen_range(1..=ATTRIBUTE_GROUPS);
                    (gag_id(g), gav_id((g - 1) * VALUES_PER_GROUP + rng.gen_range(1..=VALUES_PER_GROUP)))
                });
                Txn::UpdateItem { item, description: word(rng, 16, 64), delete: rng.gen_bool(UPDATE_DELETES), add }
            }
        })
    }
}

/// The kind a roll of 0..100 lands on under WEIGHTS.
fn kind_of(mut roll: u32) -> usize {
    for (kind, weight) in WEIGHTS.iter().enumerate() {
        if roll < *weight {
            return kind;
        }
        roll -= weight;
    }
    UPDATE_ITEM
}

impl Workload for AuctionMark {
    type Txn = Txn;

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn read_only(&self, kind: usize) -> bool {
        kind == GET_ITEM || kind == GET_USER_INFO
    }

    fn next(&self, client: usize, rng: &mut StdRng) -> (usize, Txn) {
        if client == 0 {
            let mut close = self.closing();
            if close.at.elapsed() >= CLOSE_INTERVAL || close.listed.len() >= CLOSE_AFTER_LISTED {
                let from = close.to - CLOSE_OVERLAP;
                // Up to the CLOSE_AFTER_LISTED-th item listed since, or now.
                let to = match close.listed.get(CLOSE_AFTER_LISTED) {
                    Some(after) => *after - Duration::from_micros(1),
                    None => self.now(),
                };
                close.listed.retain(|start| *start > to);
                (close.at, close.to) = (Instant::now(), to);
                return (CLOSE_AUCTIONS, Txn::CloseAuctions { from, to });
            }
        }
        let kind = kind_of(rng.gen_range(0..100));
        match self.mix(kind, rng) {
            Some(txn) => (kind, txn),
            None => self.instead(rng),
        }
    }

    async fn execute(&self, s: &mut Session, txn: &Txn) -> Result<Outcome> {
        let now = self.now();
        match txn {
            Txn::GetItem { item } => get_item(s, item).await,
            Txn::GetUserInfo { user, parts } => get_user_info(s, user, parts).await,
            Txn::NewBid { item, buyer, raise } => new_bid(s, item, buyer, *raise, now).await,
            Txn::NewComment { item, buyer, question } => {
                let Some(ic_id) = new_comment(s, item, buyer, question, now).await? else {
                    return Ok(Outcome::Rollback);
                };
                self.known().questions.push((ic_id, item.clone()));
                Ok(Outcome::Commit)
            }
            Txn::NewCommentResponse { ic_id, item, response } => {
                new_comment_response(s, *ic_id, item, response, now).await
            }
            Txn::NewFeedback { item, about, from, rating, remark } => {
                new_feedback(s, item, about, from, *rating, remark, now).await
            }
            Txn::NewItem(new) => {
                let Some(item) = new_item(s, new, now).await? else { return Ok(Outcome::Rollback) };
                let mut known = self.known();
                known.all.push(item.clone());
                known.open.push(item);
                drop(known);
                self.closing().listed.push_back(now);
                Ok(Outcome::Commit)
            }
            Txn::NewPurchase { item } => {
                let Some(buyer) = new_purchase(s, item, now).await? else { return Ok(Outcome::Rollback) };
                self.known().sold.push((item.clone(), buyer));
                Ok(Outcome::Commit)
            }
            Txn::UpdateItem { item, description, delete, add } => {
                update_item(s, item, description, *delete, add.as_ref(), now).await
            }
            Txn::CloseAuctions { from, to } => {
                let (closed, waiting) = close_auctions(s, *from, *to, now).await?;
                let mut known = self.known();
                known.open.retain(|i| !closed.contains(i));
                known.waiting.extend(waiting);
                Ok(Outcome::Commit)
            }
        }
    }
}

/// Runs an INSERT that the application gives up on when its key is taken (an id computed
/// from a count that a concurrent transaction also used): false then.
async fn insert_unless_taken(s: &mut Session, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<bool> {
    match s.execute(sql, params).await {
        Ok(_) => Ok(true),
        Err(e) if sqlstate(&e) == Some(UNIQUE_VIOLATION) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

const GET_ITEM_ROW: &str = "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status \
     FROM auction_item WHERE i_id = $1 AND i_u_id = $2";

async fn get_item(s: &mut Session, item: &ItemKey) -> Result<Outcome> {
    s.query(GET_ITEM_ROW, &[&item.id, &item.seller]).await?;
    s.query(
        "SELECT u_id, u_rating, u_created, u_sattr0, u_sattr1, u_sattr2, u_sattr3, u_sattr4, r_name \
         FROM useracct, region WHERE u_id = $1 AND u_r_id = r_id",
        &[&item.seller],
    )
    .await?;
    Ok(Outcome::Commit)
}

async fn get_user_info(s: &mut Session, user: &str, parts: &[bool; 5]) -> Result<Outcome> {
    s.query(
        "SELECT u_id, u_rating, u_created, u_balance, u_sattr0, u_sattr1, u_sattr2, u_sattr3, u_sattr4, r_name \
         FROM useracct, region WHERE u_id = $1 AND u_r_id = r_id",
        &[&user],
    )
    .await?;
    let statements = [
        "SELECT u_id, u_rating, u_sattr0, u_sattr1, uf_rating, uf_date, uf_sattr0 FROM useracct, useracct_feedback \
         WHERE u_id = $1 AND uf_u_id = u_id ORDER BY uf_date DESC LIMIT 25",
        "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status, ic_id, ic_i_id, ic_u_id, \
         ic_buyer_id, ic_question, ic_created FROM auction_item, item_comment WHERE i_u_id = $1 AND i_status = 0 \
         AND i_id = ic_i_id AND i_u_id = ic_u_id AND ic_response IS NULL ORDER BY ic_created DESC LIMIT 25",
        "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status FROM auction_item \
         WHERE i_u_id = $1 ORDER BY i_end_date DESC LIMIT 25",
        "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status FROM useracct_item, \
         auction_item WHERE ui_u_id = $1 AND ui_i_id = i_id AND ui_i_u_id = i_u_id ORDER BY i_end_date DESC LIMIT 25",
        "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status, uw_u_id, uw_created \
         FROM useracct_watch, auction_item WHERE uw_u_id = $1 AND uw_i_id = i_id AND uw_i_u_id = i_u_id \
         ORDER BY i_end_date DESC LIMIT 25",
    ];
    for (sql, wanted) in statements.iter().zip(parts) {
        if *wanted {
            s.query(sql, &[&user]).await?;
        }
    }
    Ok(Outcome::Commit)
}

const INSERT_BID: &str = "INSERT INTO item_bid (ib_id, ib_i_id, ib_u_id, ib_buyer_id, ib_bid, ib_max_bid, ib_created, \
     ib_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const UPDATE_BID: &str = "UPDATE item_bid SET ib_bid = $1, ib_max_bid = $2, ib_updated = $3 \
     WHERE ib_id = $4 AND ib_i_id = $5 AND ib_u_id = $6";
const UPDATE_ITEM_PRICE: &str = "UPDATE auction_item SET i_num_bids = i_num_bids + 1, i_current_price = $1, \
     i_updated = $2 WHERE i_id = $3 AND i_u_id = $4";
const INSERT_MAX_BID: &str = "INSERT INTO item_max_bid (imb_i_id, imb_u_id, imb_ib_id, imb_ib_i_id, imb_ib_u_id, \
     imb_created, imb_updated) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// BenchBase's NewBid, with the auction-ended check that BenchBase has commented out: a bid
/// on an item that is no longer open rolls back (else a bid could land after the sale).
async fn new_bid(s: &mut Session, item: &ItemKey, buyer: &str, raise: f64, now: SystemTime) -> Result<Outcome> {
    let (i, u) = (&item.id, &item.seller);
    let Some(row) = s
        .query_opt(
            "SELECT i_initial_price, i_current_price, i_num_bids, i_end_date, i_status FROM auction_item \
             WHERE i_id = $1 AND i_u_id = $2",
            &[i, u],
        )
        .await?
    else {
        return Ok(Outcome::Rollback);
    };
    let (initial, current): (f64, f64) = (row.try_get(0)?, row.try_get(1)?);
    let (num_bids, status) = (int_opt(&row, 2)?.unwrap_or(0), int(&row, 4)?);
    if status != OPEN {
        return Ok(Outcome::Rollback);
    }
    // The client bids a little above the price it reads (BenchBase bids above its cached price).
    let new_bid = cents(current * (1.0 + raise)).max(cents(current + 0.01));
    let step = initial * BID_STEP;
    if num_bids == 0 {
        // A concurrent first bid on the item takes bid 0 and the ITEM_MAX_BID record.
        if !insert_unless_taken(s, INSERT_BID, &[&0i64, i, u, &buyer, &initial, &new_bid, &now, &now]).await?
            || !insert_unless_taken(s, INSERT_MAX_BID, &[i, u, &0i64, i, u, &now, &now]).await?
        {
            return Ok(Outcome::Rollback);
        }
        s.execute(UPDATE_ITEM_PRICE, &[&current, &now, i, u]).await?;
        return Ok(Outcome::Commit);
    }
    let row = s.query_opt("SELECT MAX(ib_id) FROM item_bid WHERE ib_i_id = $1 AND ib_u_id = $2", &[i, u]).await?;
    let new_id = row.as_ref().map(|r| int_opt(r, 0)).transpose()?.flatten().unwrap_or(-1) + 1;
    let Some(top) = s
        .query_opt(
            "SELECT imb_ib_id, ib_bid, ib_max_bid, ib_buyer_id FROM item_max_bid, item_bid \
             WHERE imb_i_id = $1 AND imb_u_id = $2 AND imb_ib_id = ib_id AND imb_ib_i_id = ib_i_id \
             AND imb_ib_u_id = ib_u_id",
            &[i, u],
        )
        .await?
    else {
        return Err(anyhow!("item {i} of {u} has {num_bids} bids but no ITEM_MAX_BID record"));
    };
    let (top_id, top_max, top_buyer): (i64, f64, String) = (int(&top, 0)?, top.try_get(2)?, top.try_get(3)?);
    if top_buyer == buyer {
        // The highest bidder raises its maximum; the price stays.
        if new_bid < top_max {
            return Ok(Outcome::Rollback);
        }
        s.execute(UPDATE_BID, &[&current, &new_bid, &now, &top_id, i, u]).await?;
        return Ok(Outcome::Commit);
    }
    let outbid = new_bid > top_max;
    let price = if outbid {
        new_bid.min(top_max + step)
    } else {
        // The highest bidder stays, its bid raised to just above this one.
        let price = top_max.min(new_bid + step);
        s.execute(UPDATE_BID, &[&price, &price, &now, &top_id, i, u]).await?;
        price
    };
    // A concurrent bid read the same MAX(ib_id) and took the id.
    if !insert_unless_taken(s, INSERT_BID, &[&new_id, i, u, &buyer, &price, &new_bid, &now, &now]).await? {
        return Ok(Outcome::Rollback);
    }
    s.execute(UPDATE_ITEM_PRICE, &[&price, &now, i, u]).await?;
    if outbid {
        s.execute(
            "UPDATE item_max_bid SET imb_ib_id = $1, imb_ib_i_id = $2, imb_ib_u_id = $3, imb_updated = $4 \
             WHERE imb_i_id = $5 AND imb_u_id = $6",
            &[&new_id, i, u, &now, i, u],
        )
        .await?;
    }
    Ok(Outcome::Commit)
}

/// The new comment's id, or None when the item is gone or the id was taken.
async fn new_comment(
    s: &mut Session,
    item: &ItemKey,
    buyer: &str,
    question: &str,
    now: SystemTime,
) -> Result<Option<i64>> {
    let (i, u) = (&item.id, &item.seller);
    let Some(row) =
        s.query_opt("SELECT i_num_comments FROM auction_item WHERE i_id = $1 AND i_u_id = $2", &[i, u]).await?
    else {
        return Ok(None);
    };
    let ic_id = int_opt(&row, 0)?.unwrap_or(0) + 1;
    if !insert_unless_taken(
        s,
        "INSERT INTO item_comment (ic_id, ic_i_id, ic_u_id, ic_buyer_id, ic_question, ic_created, ic_updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&ic_id, i, u, &buyer, &question, &now, &now],
    )
    .await?
    {
        return Ok(None);
    }
    s.execute("UPDATE auction_item SET i_num_comments = i_num_comments + 1 WHERE i_id = $1 AND i_u_id = $2", &[i, u])
        .await?;
    s.execute("UPDATE useracct SET u_comments = u_comments + 1, u_updated = $1 WHERE u_id = $2", &[&now, u]).await?;
    Ok(Some(ic_id))
}

/// BenchBase's NewCommentResponse, after reading the item's comments (the corpus's query):
/// a question already answered rolls back, so that u_comments counts unanswered questions.
async fn new_comment_response(
    s: &mut Session,
    ic_id: i64,
    item: &ItemKey,
    response: &str,
    now: SystemTime,
) -> Result<Outcome> {
    let (i, u) = (&item.id, &item.seller);
    let comments = s
        .query("SELECT ic_id, ic_question, ic_response FROM item_comment WHERE ic_i_id = $1 AND ic_u_id = $2", &[i, u])
        .await?;
    let mut open = false;
    for row in &comments {
        if int(row, 0)? == ic_id {
            open = row.try_get::<_, Option<String>>(2)?.is_none();
        }
    }
    if !open {
        return Ok(Outcome::Rollback);
    }
    s.execute(
        "UPDATE item_comment SET ic_response = $1, ic_updated = $2 WHERE ic_id = $3 AND ic_i_id = $4 AND ic_u_id = $5",
        &[&response, &now, &ic_id, i, u],
    )
    .await?;
    s.execute("UPDATE useracct SET u_comments = u_comments - 1, u_updated = $1 WHERE u_id = $2", &[&now, u]).await?;
    Ok(Outcome::Commit)
}

async fn new_feedback(
    s: &mut Session,
    item: &ItemKey,
    about: &str,
    from: &str,
    rating: i16,
    remark: &str,
    now: SystemTime,
) -> Result<Outcome> {
    let (i, u) = (&item.id, &item.seller);
    let given = s
        .query_opt(
            "SELECT uf_i_id, uf_i_u_id, uf_from_id FROM useracct_feedback \
             WHERE uf_u_id = $1 AND uf_i_id = $2 AND uf_i_u_id = $3 AND uf_from_id = $4",
            &[&about, i, u, &from],
        )
        .await?;
    if given.is_some() {
        return Ok(Outcome::Rollback);
    }
    if !insert_unless_taken(
        s,
        "INSERT INTO useracct_feedback (uf_u_id, uf_i_id, uf_i_u_id, uf_from_id, uf_rating, uf_date, uf_sattr0) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&about, i, u, &from, &rating, &now, &remark],
    )
    .await?
    {
        return Ok(Outcome::Rollback);
    }
    let change = i64::from(rating);
    s.execute("UPDATE useracct SET u_rating = u_rating + $1, u_updated = $2 WHERE u_id = $3", &[&change, &now, &about])
        .await?;
    Ok(Outcome::Commit)
}

/// The new item, or None when its id was taken (a concurrent NewItem of the same seller).
async fn new_item(s: &mut Session, new: &NewItem, now: SystemTime) -> Result<Option<ItemKey>> {
    let mut description = format!("{} ATTRIBUTES:", new.description);
    for (group, value) in &new.attributes {
        let row = s
            .query_opt(
                "SELECT gag_name, gav_name, gag_c_id FROM global_attribute_group, global_attribute_value \
                 WHERE gav_id = $1 AND gav_gag_id = $2 AND gav_gag_id = gag_id",
                &[value, group],
            )
            .await?
            .ok_or_else(|| anyhow!("global attribute value {value} of group {group} not found"))?;
        let (name, value): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        description.push_str(&format!(" {name} -> {value}"));
    }
    // The category's path up to the root.
    let mut path = Vec::new();
    let mut category = Some(new.category);
    while let Some(c) = category {
        let row = s
            .query_opt("SELECT * FROM category WHERE c_id = $1", &[&c])
            .await?
            .ok_or_else(|| anyhow!("category {c} not found"))?;
        let (name, parent): (Option<String>, Option<i64>) = (row.try_get(1)?, int_opt(&row, 2)?);
        path.push(if parent.is_some() { format!("{}[{c}]", name.unwrap_or_default()) } else { "<ROOT>".into() });
        category = parent;
        if path.len() > 10 {
            return Err(anyhow!("the category tree has a cycle through {}", new.category));
        }
    }
    path.reverse();
    description.push_str(&format!(" CATEGORY: {}", path.join(" >> ")));
    let seller = &new.seller;
    let count = s.query_opt("SELECT COUNT(*) FROM auction_item WHERE i_u_id = $1", &[seller]).await?;
    let seq = count.as_ref().map(|r| int(r, 0)).transpose()?.unwrap_or(0);
    let item = ItemKey { id: item_id(seller, seq), seller: seller.clone() };
    let end = now + Duration::from_secs(new.days * 86_400);
    let (attrs, zero, open) = (new.attributes.len() as i64, 0i64, OPEN as i32);
    if !insert_unless_taken(
        s,
        "INSERT INTO auction_item(i_id,i_u_id,i_c_id,i_name,i_description,i_user_attributes,i_initial_price,\
         i_current_price,i_num_bids,i_num_images,i_num_global_attrs,i_start_date,i_end_date,i_status, i_created,\
         i_updated,i_iattr0) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 1)",
        &[
            &item.id,
            seller,
            &new.category,
            &new.name,
            &description,
            &new.user_attributes,
            &new.initial,
            &new.initial,
            &zero,
            &new.images,
            &attrs,
            &now,
            &end,
            &open,
            &now,
            &now,
        ],
    )
    .await?
    {
        return Ok(None);
    }
    for (k, (group, value)) in (0i64..).zip(&new.attributes) {
        s.execute(
            "INSERT INTO item_attribute(ia_id,ia_i_id,ia_u_id,ia_gav_id,ia_gag_id) VALUES($1, $2, $3, $4, $5)",
            &[&attribute_id(&item.id, k), &item.id, seller, value, group],
        )
        .await?;
    }
    for k in 0..new.images {
        let path = format!("img/{}-{k}.jpg", item.id);
        s.execute(
            "INSERT INTO item_image(ii_id,ii_i_id,ii_u_id,ii_sattr0) VALUES($1, $2, $3, $4)",
            &[&format!("{}m{k}", item.id), &item.id, seller, &path],
        )
        .await?;
    }
    s.execute("UPDATE useracct SET u_balance = u_balance - 1,     u_updated = $1  WHERE u_id = $2", &[&now, seller])
        .await?;
    Ok(Some(item))
}

/// BenchBase's NewPurchase, after GetItem's read of the item: only an item waiting for
/// purchase is sold (BenchBase relies on its client's list). Returns the buyer, or None
/// for a user abort (not waiting, no winning bid, or a buyer short of money: no credit).
async fn new_purchase(s: &mut Session, item: &ItemKey, now: SystemTime) -> Result<Option<String>> {
    let (i, u) = (&item.id, &item.seller);
    let Some(row) = s.query_opt(GET_ITEM_ROW, &[i, u]).await? else { return Ok(None) };
    if int(&row, 6)? != WAITING_FOR_PURCHASE {
        return Ok(None);
    }
    if s.query_opt("SELECT * FROM item_max_bid WHERE imb_i_id = $1 AND imb_u_id = $2", &[i, u]).await?.is_none() {
        // BenchBase's repair: make the highest bid the maximum.
        let Some(top) = s
            .query_opt(
                "SELECT * FROM item_bid WHERE ib_i_id = $1 AND ib_u_id = $2 ORDER BY ib_bid DESC LIMIT 1",
                &[i, u],
            )
            .await?
        else {
            return Ok(None);
        };
        let top_id = int(&top, 0)?;
        if !insert_unless_taken(s, INSERT_MAX_BID, &[i, u, &top_id, i, u, &now, &now]).await? {
            return Ok(None);
        }
    }
    let Some(info) = s
        .query_opt(
            "SELECT i_num_bids, i_current_price, i_end_date, ib_id, ib_buyer_id, u_balance \
             FROM auction_item, item_max_bid, item_bid, useracct WHERE i_id = $1 AND i_u_id = $2 \
             AND imb_i_id = i_id AND imb_u_id = i_u_id AND imb_ib_id = ib_id AND imb_ib_i_id = ib_i_id \
             AND imb_ib_u_id = ib_u_id AND ib_buyer_id = u_id",
            &[i, u],
        )
        .await?
    else {
        return Ok(None);
    };
    let (price, ib_id, buyer): (f64, i64, String) = (info.try_get(1)?, int(&info, 3)?, info.try_get(4)?);
    let Some(account) = s.query_opt("SELECT u_id, u_balance FROM useracct WHERE u_id = $1", &[&buyer]).await? else {
        return Ok(None);
    };
    let balance: f64 = account.try_get(1)?;
    if price > balance {
        return Ok(None);
    }
    // An item is sold once: its purchase is number 1.
    let ip_id = 1i64;
    // A concurrent purchase of the same item (the client's list may name it twice).
    if !insert_unless_taken(
        s,
        "INSERT INTO item_purchase (ip_id,ip_ib_id,ip_ib_i_id,ip_ib_u_id,ip_date) VALUES($1, $2, $3, $4, $5)",
        &[&ip_id, &ib_id, i, u, &now],
    )
    .await?
    {
        return Ok(None);
    }
    s.execute("UPDATE auction_item SET i_status = 2, i_updated = $1  WHERE i_id = $2 AND i_u_id = $3", &[&now, i, u])
        .await?;
    let updated = s
        .execute(
            "UPDATE useracct_item SET ui_ip_id = $1,     ui_ip_ib_id = $2,     ui_ip_ib_i_id = $3,     \
             ui_ip_ib_u_id = $4 WHERE ui_u_id = $5 AND ui_i_id = $6 AND ui_i_u_id = $7",
            &[&ip_id, &ib_id, i, u, &buyer, i, u],
        )
        .await?;
    if updated == 0
        && !insert_unless_taken(
            s,
            "INSERT INTO useracct_item(ui_u_id, ui_i_id, ui_i_u_id, ui_ip_id, ui_ip_ib_id, ui_ip_ib_i_id, \
             ui_ip_ib_u_id, ui_created) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[&buyer, i, u, &ip_id, &ib_id, i, u, &now],
        )
        .await?
    {
        return Ok(None);
    }
    let (debit, credit) = (-price, price);
    s.execute("UPDATE useracct SET u_balance = u_balance + $1  WHERE u_id = $2", &[&debit, &buyer]).await?;
    s.execute("UPDATE useracct SET u_balance = u_balance + $1  WHERE u_id = $2", &[&credit, u]).await?;
    Ok(Some(buyer))
}

async fn update_item(
    s: &mut Session,
    item: &ItemKey,
    description: &str,
    delete: bool,
    add: Option<&(String, String)>,
    now: SystemTime,
) -> Result<Outcome> {
    let (i, u) = (&item.id, &item.seller);
    let updated = s
        .execute(
            "UPDATE auction_item SET i_description = $1, i_updated = $2 WHERE i_id = $3 AND i_u_id = $4 AND i_status = 0",
            &[&description, &now, i, u],
        )
        .await?;
    if updated == 0 {
        // The auction is no longer open.
        return Ok(Outcome::Rollback);
    }
    if delete {
        s.execute(
            "DELETE FROM item_attribute WHERE ia_id = $1 AND ia_i_id = $2 AND ia_u_id = $3",
            &[&attribute_id(i, 0), i, u],
        )
        .await?;
    }
    if let Some((group, value)) = add {
        let row =
            s.query_opt("SELECT MAX(ia_id) FROM item_attribute WHERE ia_i_id = $1 AND ia_u_id = $2", &[i, u]).await?;
        let last: Option<String> = row.map(|r| r.try_get(0)).transpose()?.flatten();
        let next = last.as_deref().and_then(attribute_number).map_or(0, |n| n + 1);
        if !insert_unless_taken(
            s,
            "INSERT INTO item_attribute (ia_id,ia_i_id,ia_u_id,ia_gav_id,ia_gag_id) VALUES ($1, $2, $3, $4, $5)",
            &[&attribute_id(i, next), i, u, value, group],
        )
        .await?
        {
            return Ok(Outcome::Rollback);
        }
    }
    Ok(Outcome::Commit)
}

/// Closes up to 100 open auctions started between `from` and `to` (BenchBase's getDueItems):
/// an item with bids waits for its winner to pay, one without is closed. Returns the items
/// closed and those now waiting for purchase.
async fn close_auctions(
    s: &mut Session,
    from: SystemTime,
    to: SystemTime,
    now: SystemTime,
) -> Result<(Vec<ItemKey>, Vec<ItemKey>)> {
    let due = s
        .query(
            "SELECT i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status FROM auction_item \
             WHERE (i_start_date BETWEEN $1 AND $2) AND i_status = 0 ORDER BY i_id ASC LIMIT 100",
            &[&from, &to],
        )
        .await?;
    let (mut closed, mut waiting) = (Vec::new(), Vec::new());
    for row in &due {
        let item = ItemKey { id: row.try_get(0)?, seller: row.try_get(1)? };
        let (i, u) = (&item.id, &item.seller);
        let mut status = CLOSED;
        if int_opt(row, 4)?.unwrap_or(0) > 0 {
            let top = s
                .query_opt(
                    "SELECT imb_ib_id, ib_buyer_id FROM item_max_bid, item_bid WHERE imb_i_id = $1 AND imb_u_id = $2 \
                     AND ib_id = imb_ib_id AND ib_i_id = imb_i_id AND ib_u_id = imb_u_id",
                    &[i, u],
                )
                .await?;
            if let Some(top) = top {
                let buyer: String = top.try_get(1)?;
                s.execute(
                    "INSERT INTO useracct_item(ui_u_id, ui_i_id, ui_i_u_id, ui_created) VALUES($1, $2, $3, $4)",
                    &[&buyer, i, u, &now],
                )
                .await?;
                status = WAITING_FOR_PURCHASE;
            }
        }
        let code = status as i32;
        s.execute(
            "UPDATE auction_item SET i_status = $1,     i_updated = $2 WHERE i_id = $3 AND i_u_id = $4",
            &[&code, &now, i, u],
        )
        .await?;
        if status == WAITING_FOR_PURCHASE {
            waiting.push(item.clone());
        }
        closed.push(item);
    }
    Ok((closed, waiting))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_benchbase_s_default() {
        let mut percent = [0u32; 9];
        for roll in 0..100 {
            percent[kind_of(roll)] += 1;
        }
        let by_name: Vec<(&str, u32)> = KINDS.iter().copied().zip(percent).collect();
        assert_eq!(
            by_name,
            [
                ("get_item", 45),
                ("get_user_info", 10),
                ("new_bid", 20),
                ("new_comment", 2),
                ("new_comment_response", 1),
                ("new_feedback", 4),
                ("new_item", 10),
                ("new_purchase", 5),
                ("update_item", 3)
            ]
        );
    }
}
