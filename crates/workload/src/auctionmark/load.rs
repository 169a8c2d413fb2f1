//! The data set, generated from the seed and loaded with COPY: regions, a category tree,
//! global attributes, users, and 0–6 items per user; an item has 0–6 bids (rising prices,
//! the last one the highest, as NewBid leaves them), images, attributes, 0–2 comments (half
//! answered) and, once its auction ended, a winner waiting to pay, or a purchase (with
//! feedback half the time), or no sale. A user's u_rating is the sum of the feedback about
//! it and u_comments the unanswered questions on its items, as the transactions keep them.

use super::{
    attribute_id, cents, item_id, user_id, Params, BID_STEP, CLOSED, LOAD_TIME_SECS, OPEN, WAITING_FOR_PURCHASE,
};
use crate::conn::Session;
use crate::copy::{Copier, Null};
use anyhow::Result;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::fmt::Display;
use std::time::Instant;

pub const REGIONS: i64 = 10;
/// Category 1 is the root, 2..=6 its children, the rest leaves under them.
pub const CATEGORIES: i64 = 30;
pub const FIRST_LEAF: i64 = 7;
pub const ATTRIBUTE_GROUPS: i64 = 10;
pub const VALUES_PER_GROUP: i64 = 5;
const MAX_ITEMS_PER_USER: i64 = 6;
const MAX_BIDS: i64 = 6;
const DAY: u64 = 86_400;

/// Rows per COPY into tables with secondary indexes (slower to load on Pistou).
const INDEXED_CHUNK_ROWS: usize = 250;

/// `secs` after the epoch as a timestamp literal ("2024-01-01 00:00:00").
pub fn timestamp(secs: u64) -> String {
    let at = i64::try_from(secs).ok().and_then(|s| chrono::DateTime::from_timestamp(s, 0)).unwrap_or_default();
    at.format("%Y-%m-%d %H:%M:%S").to_string()
}

struct Bid {
    id: i64,
    buyer: String,
    bid: f64,
    max_bid: f64,
    at: u64,
}

struct Item {
    id: String,
    seller: String,
    category: i64,
    initial: f64,
    start: u64,
    end: u64,
    status: i64,
    bids: Vec<Bid>,
    images: i64,
    /// (group, value) per attribute.
    attributes: Vec<(i64, i64)>,
    /// (buyer, answered) per comment.
    comments: Vec<(String, bool)>,
}

impl Item {
    fn current_price(&self) -> f64 {
        self.bids.last().map_or(self.initial, |b| b.bid)
    }
}

struct User {
    rating: i64,
    comments: i64,
}

pub(super) fn letters(rng: &mut StdRng, n: usize) -> String {
    (0..n).map(|_| char::from(b'a' + rng.gen_range(0..26u8))).collect()
}

pub(super) fn word(rng: &mut StdRng, min: usize, max: usize) -> String {
    let n = rng.gen_range(min..=max);
    letters(rng, n)
}

fn other_user(rng: &mut StdRng, users: u64, not: &str) -> String {
    loop {
        let u = user_id(rng.gen_range(1..=users));
        if u != not {
            return u;
        }
    }
}

pub fn gag_id(g: i64) -> String {
    format!("g{g:02}")
}

pub fn gav_id(v: i64) -> String {
    format!("v{v}")
}

fn generate(params: &Params, rng: &mut StdRng) -> Vec<Item> {
    let users = params.scale.users;
    let now = LOAD_TIME_SECS;
    let mut items = Vec::new();
    for n in 1..=users {
        let seller = user_id(n);
        for seq in 0..rng.gen_range(0..=MAX_ITEMS_PER_USER) {
            let start = now - rng.gen_range(2 * DAY..30 * DAY);
            let ended = rng.gen_range(0..100) >= 60;
            let end = if ended { rng.gen_range(start + 3600..now) } else { now + rng.gen_range(DAY..30 * DAY) };
            let initial = cents(rng.gen_range(1.0..100.0));
            let step = cents((initial * BID_STEP).max(0.01));
            let mut bids = Vec::new();
            let mut price = initial;
            let last_bid_at = end.min(now);
            for id in 0..rng.gen_range(0..=MAX_BIDS) {
                if id > 0 {
                    price = cents(price + step);
                }
                let at = rng.gen_range(start..last_bid_at);
                bids.push(Bid { id, buyer: other_user(rng, users, &seller), bid: price, max_bid: price, at });
            }
            if let Some(last) = bids.last_mut() {
                // The winner's maximum is above what it pays; every other bid's is what it bid.
                last.max_bid = cents(last.bid + rng.gen_range(0.0..10.0));
            }
            let status = match (ended, bids.is_empty(), rng.gen_range(0..2)) {
                (false, _, _) => OPEN,
                (true, false, 0) => WAITING_FOR_PURCHASE,
                _ => CLOSED,
            };
            let attributes = (0..rng.gen_range(0..=2))
                .map(|_| {
                    let g = rng.gen_range(1..=ATTRIBUTE_GROUPS);
                    (g, (g - 1) * VALUES_PER_GROUP + rng.gen_range(1..=VALUES_PER_GROUP))
                })
                .collect();
            let comments =
                (0..rng.gen_range(0..=2)).map(|_| (other_user(rng, users, &seller), rng.gen_bool(0.5))).collect();
            items.push(Item {
                id: item_id(&seller, seq),
                seller: seller.clone(),
                category: rng.gen_range(FIRST_LEAF..=CATEGORIES),
                initial,
                start,
                end,
                status,
                bids,
                images: rng.gen_range(0..=2),
                attributes,
                comments,
            });
        }
    }
    items
}

pub async fn load(s: &Session, params: &Params, report: &mut dyn FnMut(String)) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(params.seed);
    let users = params.scale.users;
    let mut timed = |table: &str, started: Instant, rows: u64| {
        report(format!("{table}: {rows} rows in {:.1} s", started.elapsed().as_secs_f64()));
    };
    let now = LOAD_TIME_SECS;
    let t = Instant::now();
    let mut copy = Copier::new(
        s,
        "config_profile",
        "cfp_scale_factor, cfp_loader_start, cfp_loader_stop, cfp_user_item_histogram",
    );
    let (start, stop) = (timestamp(now - 3600), timestamp(now));
    copy.row(&[&(users as f64), &start, &stop, &"{}"]).await?;
    copy.finish().await?;
    let mut copy = Copier::new(s, "region", "r_id, r_name");
    for r in 1..=REGIONS {
        copy.row(&[&r, &word(&mut rng, 4, 12)]).await?;
    }
    let rows = copy.finish().await?;
    timed("region", t, rows);

    let t = Instant::now();
    let mut copy = Copier::new(s, "category", "c_id, c_name, c_parent_id");
    copy.row(&[&1, &"all", &Null]).await?;
    for c in 2..=CATEGORIES {
        let parent = if c < FIRST_LEAF { 1 } else { rng.gen_range(2..FIRST_LEAF) };
        copy.row(&[&c, &word(&mut rng, 4, 16), &parent]).await?;
    }
    let rows = copy.finish().await?;
    timed("category", t, rows);

    let t = Instant::now();
    let mut copy = Copier::new(s, "global_attribute_group", "gag_id, gag_c_id, gag_name");
    for g in 1..=ATTRIBUTE_GROUPS {
        copy.row(&[&gag_id(g), &rng.gen_range(FIRST_LEAF..=CATEGORIES), &word(&mut rng, 4, 16)]).await?;
    }
    copy.finish().await?;
    let mut copy = Copier::new(s, "global_attribute_value", "gav_id, gav_gag_id, gav_name");
    for v in 1..=ATTRIBUTE_GROUPS * VALUES_PER_GROUP {
        let g = (v - 1) / VALUES_PER_GROUP + 1;
        copy.row(&[&gav_id(v), &gag_id(g), &word(&mut rng, 4, 16)]).await?;
    }
    let rows = copy.finish().await?;
    timed("global attributes", t, rows + ATTRIBUTE_GROUPS as u64);

    let items = generate(params, &mut rng);
    let mut per_user: Vec<User> = (0..=users).map(|_| User { rating: 0, comments: 0 }).collect();
    let number = |u: &str| u[1..].parse::<usize>().unwrap_or(0);

    let t = Instant::now();
    let mut copy = Copier::new(
        s,
        "auction_item",
        "i_id, i_u_id, i_c_id, i_name, i_description, i_user_attributes, i_initial_price, i_current_price, \
         i_num_bids, i_num_images, i_num_global_attrs, i_num_comments, i_start_date, i_end_date, i_status, \
         i_created, i_updated, i_iattr0",
    )
    .chunk_rows(INDEXED_CHUNK_ROWS);
    for i in &items {
        let (name, description, attrs) = (word(&mut rng, 4, 24), word(&mut rng, 16, 64), word(&mut rng, 8, 32));
        let (start, end) = (timestamp(i.start), timestamp(i.end));
        let updated = timestamp(i.end.min(now));
        copy.row(&[
            &i.id,
            &i.seller,
            &i.category,
            &name,
            &description,
            &attrs,
            &i.initial,
            &i.current_price(),
            &i.bids.len(),
            &i.images,
            &i.attributes.len(),
            &i.comments.len(),
            &start,
            &end,
            &i.status,
            &start,
            &updated,
            &1,
        ])
        .await?;
    }
    let rows = copy.finish().await?;
    timed("auction_item", t, rows);

    let t = Instant::now();
    let mut copy =
        Copier::new(s, "item_bid", "ib_id, ib_i_id, ib_u_id, ib_buyer_id, ib_bid, ib_max_bid, ib_created, ib_updated")
            .chunk_rows(INDEXED_CHUNK_ROWS);
    for i in &items {
        for b in &i.bids {
            let at = timestamp(b.at);
            copy.row(&[&b.id, &i.id, &i.seller, &b.buyer, &b.bid, &b.max_bid, &at, &at]).await?;
        }
    }
    let rows = copy.finish().await?;
    timed("item_bid", t, rows);

    let t = Instant::now();
    let mut copy = Copier::new(
        s,
        "item_max_bid",
        "imb_i_id, imb_u_id, imb_ib_id, imb_ib_i_id, imb_ib_u_id, imb_created, imb_updated",
    );
    for i in &items {
        if let Some(b) = i.bids.last() {
            let at = timestamp(b.at);
            copy.row(&[&i.id, &i.seller, &b.id, &i.id, &i.seller, &at, &at]).await?;
        }
    }
    let rows = copy.finish().await?;
    timed("item_max_bid", t, rows);

    let t = Instant::now();
    let mut purchases = Copier::new(s, "item_purchase", "ip_id, ip_ib_id, ip_ib_i_id, ip_ib_u_id, ip_date")
        .chunk_rows(INDEXED_CHUNK_ROWS);
    let mut user_items = Copier::new(
        s,
        "useracct_item",
        "ui_u_id, ui_i_id, ui_i_u_id, ui_ip_id, ui_ip_ib_id, ui_ip_ib_i_id, ui_ip_ib_u_id, ui_created",
    );
    let mut feedback =
        Copier::new(s, "useracct_feedback", "uf_u_id, uf_i_id, uf_i_u_id, uf_from_id, uf_rating, uf_date, uf_sattr0");
    let (mut sold, mut rated) = (0, 0);
    for i in &items {
        let Some(winner) = i.bids.last() else { continue };
        let ended = timestamp(i.end);
        if i.status == WAITING_FOR_PURCHASE {
            user_items.row(&[&winner.buyer, &i.id, &i.seller, &Null, &Null, &Null, &Null, &ended]).await?;
        } else if i.status == CLOSED {
            // Every item's purchase is its purchase number 1 (there is at most one).
            purchases.row(&[&1, &winner.id, &i.id, &i.seller, &ended]).await?;
            user_items.row(&[&winner.buyer, &i.id, &i.seller, &1, &winner.id, &i.id, &i.seller, &ended]).await?;
            sold += 1;
            if rng.gen_bool(0.5) {
                let rating: i64 = rng.gen_range(-1..=1);
                per_user[number(&i.seller)].rating += rating;
                let remark = word(&mut rng, 8, 40);
                feedback.row(&[&i.seller, &i.id, &i.seller, &winner.buyer, &rating, &ended, &remark]).await?;
                rated += 1;
            }
        }
    }
    purchases.finish().await?;
    user_items.finish().await?;
    feedback.finish().await?;
    timed("item_purchase", t, sold);
    timed("useracct_feedback", t, rated);

    let t = Instant::now();
    let mut copy = Copier::new(
        s,
        "item_comment",
        "ic_id, ic_i_id, ic_u_id, ic_buyer_id, ic_question, ic_response, ic_created, ic_updated",
    )
    .chunk_rows(INDEXED_CHUNK_ROWS);
    for i in &items {
        for (ic_id, (buyer, answered)) in (1i64..).zip(&i.comments) {
            let question = word(&mut rng, 8, 64);
            let at = timestamp(rng.gen_range(i.start..i.end.min(now)));
            if *answered {
                copy.row(&[&ic_id, &i.id, &i.seller, buyer, &question, &word(&mut rng, 8, 64), &at, &at]).await?;
            } else {
                per_user[number(&i.seller)].comments += 1;
                copy.row(&[&ic_id, &i.id, &i.seller, buyer, &question, &Null, &at, &at]).await?;
            }
        }
    }
    let rows = copy.finish().await?;
    timed("item_comment", t, rows);

    let t = Instant::now();
    let mut attributes = Copier::new(s, "item_attribute", "ia_id, ia_i_id, ia_u_id, ia_gav_id, ia_gag_id")
        .chunk_rows(INDEXED_CHUNK_ROWS);
    let mut images = Copier::new(s, "item_image", "ii_id, ii_i_id, ii_u_id, ii_sattr0");
    for i in &items {
        for (k, (g, v)) in (0i64..).zip(&i.attributes) {
            attributes.row(&[&attribute_id(&i.id, k), &i.id, &i.seller, &gav_id(*v), &gag_id(*g)]).await?;
        }
        for k in 0..i.images {
            let path = format!("img/{}-{k}.jpg", i.id);
            images.row(&[&format!("{}m{k}", i.id), &i.id, &i.seller, &path]).await?;
        }
    }
    let rows = attributes.finish().await? + images.finish().await?;
    timed("item_attribute and item_image", t, rows);

    let t = Instant::now();
    let mut copy = Copier::new(
        s,
        "useracct",
        "u_id, u_rating, u_balance, u_comments, u_r_id, u_created, u_updated, u_sattr0, u_sattr1, u_sattr2, \
         u_sattr3, u_sattr4",
    );
    for (n, user) in per_user.iter().enumerate().skip(1) {
        let created = timestamp(now - rng.gen_range(30 * DAY..365 * DAY));
        let balance = cents(rng.gen_range(1_000.0..10_000.0));
        let region = rng.gen_range(1..=REGIONS);
        let attrs: Vec<String> = (0..5).map(|_| word(&mut rng, 4, 16)).collect();
        let mut fields: Vec<&dyn Display> = vec![];
        let id = user_id(n as u64);
        fields.extend([&id as &dyn Display, &user.rating, &balance, &user.comments, &region, &created, &created]);
        fields.extend(attrs.iter().map(|a| a as &dyn Display));
        copy.row(&fields).await?;
    }
    let rows = copy.finish().await?;
    timed("useracct", t, rows);

    let t = Instant::now();
    let mut copy = Copier::new(s, "useracct_watch", "uw_u_id, uw_i_id, uw_i_u_id, uw_created");
    if !items.is_empty() {
        for n in 1..=users {
            let watched: BTreeSet<usize> = (0..rng.gen_range(0..=2)).map(|_| rng.gen_range(0..items.len())).collect();
            for w in watched {
                let i = &items[w];
                copy.row(&[&user_id(n), &i.id, &i.seller, &timestamp(i.start)]).await?;
            }
        }
    }
    let rows = copy.finish().await?;
    timed("useracct_watch", t, rows);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_civil_dates() {
        assert_eq!(timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(timestamp(LOAD_TIME_SECS), "2024-01-01 00:00:00");
        assert_eq!(timestamp(LOAD_TIME_SECS + 59 * DAY + 3661), "2024-02-29 01:01:01");
    }
}
