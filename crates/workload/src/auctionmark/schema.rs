//! AuctionMark's tables as in crates/sql/tests/slt/auctionmark.slt (BenchBase's DDL without
//! FOREIGN KEY or CHECK clauses, without the attribute columns no transaction touches), with
//! `item` named `auction_item` (TPC-C has an `item`), and secondary indexes so that no
//! transaction scans a whole table: BenchBase's three (useracct by region, category by parent,
//! items by seller) plus items by start date (CloseAuctions), and bids, comments, attributes
//! and purchases by their item (NewBid's MAX(ib_id), UpdateItem's MAX(ia_id), and the
//! check's reads of a range of items).

pub const TABLES: [&str; 16] = [
    "config_profile",
    "region",
    "useracct",
    "category",
    "global_attribute_group",
    "global_attribute_value",
    "auction_item",
    "item_attribute",
    "item_image",
    "item_comment",
    "item_bid",
    "item_max_bid",
    "item_purchase",
    "useracct_feedback",
    "useracct_item",
    "useracct_watch",
];

pub const DDL: [&str; 24] = [
    "CREATE TABLE config_profile (cfp_scale_factor FLOAT NOT NULL, cfp_loader_start TIMESTAMP, \
     cfp_loader_stop TIMESTAMP, cfp_user_item_histogram TEXT NOT NULL, PRIMARY KEY (cfp_scale_factor))",
    "CREATE TABLE region (r_id BIGINT NOT NULL, r_name VARCHAR(32), PRIMARY KEY (r_id))",
    "CREATE TABLE useracct (u_id VARCHAR(128) NOT NULL, u_rating BIGINT NOT NULL, u_balance FLOAT NOT NULL, \
     u_comments INTEGER DEFAULT 0, u_r_id BIGINT NOT NULL, u_created TIMESTAMP, u_updated TIMESTAMP, \
     u_sattr0 VARCHAR(64), u_sattr1 VARCHAR(64), u_sattr2 VARCHAR(64), u_sattr3 VARCHAR(64), \
     u_sattr4 VARCHAR(64), PRIMARY KEY (u_id))",
    "CREATE INDEX idx_useracct_region ON useracct (u_id, u_r_id)",
    "CREATE TABLE category (c_id BIGINT NOT NULL, c_name VARCHAR(50), c_parent_id BIGINT, PRIMARY KEY (c_id))",
    "CREATE INDEX idx_category_parent ON category (c_parent_id)",
    "CREATE TABLE global_attribute_group (gag_id VARCHAR(128) NOT NULL, gag_c_id BIGINT NOT NULL, \
     gag_name VARCHAR(100) NOT NULL, PRIMARY KEY (gag_id))",
    "CREATE TABLE global_attribute_value (gav_id VARCHAR(128) NOT NULL, gav_gag_id VARCHAR(128) NOT NULL, \
     gav_name VARCHAR(100) NOT NULL, PRIMARY KEY (gav_id, gav_gag_id))",
    "CREATE TABLE auction_item (i_id VARCHAR(128) NOT NULL, i_u_id VARCHAR(128) NOT NULL, i_c_id BIGINT NOT NULL, \
     i_name VARCHAR(100), i_description VARCHAR(1024), i_user_attributes VARCHAR(255) DEFAULT NULL, \
     i_initial_price FLOAT NOT NULL, i_current_price FLOAT NOT NULL, i_num_bids BIGINT, i_num_images BIGINT, \
     i_num_global_attrs BIGINT, i_num_comments BIGINT, i_start_date TIMESTAMP DEFAULT '1970-01-01 00:00:01', \
     i_end_date TIMESTAMP DEFAULT '1970-01-01 00:00:01', i_status INT DEFAULT 0, i_created TIMESTAMP, \
     i_updated TIMESTAMP, i_iattr0 BIGINT DEFAULT NULL, PRIMARY KEY (i_id, i_u_id))",
    "CREATE INDEX idx_item_seller ON auction_item (i_u_id)",
    "CREATE INDEX idx_item_start ON auction_item (i_start_date)",
    "CREATE TABLE item_attribute (ia_id VARCHAR(128) NOT NULL, ia_i_id VARCHAR(128) NOT NULL, \
     ia_u_id VARCHAR(128) NOT NULL, ia_gav_id VARCHAR(128) NOT NULL, ia_gag_id VARCHAR(128) NOT NULL, \
     ia_sattr0 VARCHAR(64) DEFAULT NULL, PRIMARY KEY (ia_id, ia_i_id, ia_u_id))",
    "CREATE INDEX idx_item_attribute_item ON item_attribute (ia_i_id, ia_u_id)",
    "CREATE TABLE item_image (ii_id VARCHAR(128) NOT NULL, ii_i_id VARCHAR(128) NOT NULL, \
     ii_u_id VARCHAR(128) NOT NULL, ii_sattr0 VARCHAR(128) NOT NULL, PRIMARY KEY (ii_id, ii_i_id, ii_u_id))",
    "CREATE TABLE item_comment (ic_id BIGINT NOT NULL, ic_i_id VARCHAR(128) NOT NULL, ic_u_id VARCHAR(128) NOT NULL, \
     ic_buyer_id VARCHAR(128) NOT NULL, ic_question VARCHAR(128) NOT NULL, ic_response VARCHAR(128) DEFAULT NULL, \
     ic_created TIMESTAMP, ic_updated TIMESTAMP, PRIMARY KEY (ic_id, ic_i_id, ic_u_id))",
    "CREATE INDEX idx_item_comment_item ON item_comment (ic_i_id, ic_u_id)",
    "CREATE TABLE item_bid (ib_id BIGINT NOT NULL, ib_i_id VARCHAR(128) NOT NULL, ib_u_id VARCHAR(128) NOT NULL, \
     ib_buyer_id VARCHAR(128) NOT NULL, ib_bid FLOAT NOT NULL, ib_max_bid FLOAT NOT NULL, ib_created TIMESTAMP, \
     ib_updated TIMESTAMP, PRIMARY KEY (ib_id, ib_i_id, ib_u_id))",
    "CREATE INDEX idx_item_bid_item ON item_bid (ib_i_id, ib_u_id)",
    "CREATE TABLE item_max_bid (imb_i_id VARCHAR(128) NOT NULL, imb_u_id VARCHAR(128) NOT NULL, \
     imb_ib_id BIGINT NOT NULL, imb_ib_i_id VARCHAR(128) NOT NULL, imb_ib_u_id VARCHAR(128) NOT NULL, \
     imb_created TIMESTAMP, imb_updated TIMESTAMP, PRIMARY KEY (imb_i_id, imb_u_id))",
    "CREATE TABLE item_purchase (ip_id BIGINT NOT NULL, ip_ib_id BIGINT NOT NULL, ip_ib_i_id VARCHAR(128) NOT NULL, \
     ip_ib_u_id VARCHAR(128) NOT NULL, ip_date TIMESTAMP, PRIMARY KEY (ip_id, ip_ib_id, ip_ib_i_id, ip_ib_u_id))",
    "CREATE INDEX idx_item_purchase_item ON item_purchase (ip_ib_i_id, ip_ib_u_id)",
    "CREATE TABLE useracct_feedback (uf_u_id VARCHAR(128) NOT NULL, uf_i_id VARCHAR(128) NOT NULL, \
     uf_i_u_id VARCHAR(128) NOT NULL, uf_from_id VARCHAR(128) NOT NULL, uf_rating SMALLINT NOT NULL, \
     uf_date TIMESTAMP, uf_sattr0 VARCHAR(80) NOT NULL, PRIMARY KEY (uf_u_id, uf_i_id, uf_i_u_id, uf_from_id))",
    "CREATE TABLE useracct_item (ui_u_id VARCHAR(128) NOT NULL, ui_i_id VARCHAR(128) NOT NULL, \
     ui_i_u_id VARCHAR(128) NOT NULL, ui_ip_id BIGINT, ui_ip_ib_id BIGINT, ui_ip_ib_i_id VARCHAR(128), \
     ui_ip_ib_u_id VARCHAR(128), ui_created TIMESTAMP, PRIMARY KEY (ui_u_id, ui_i_id, ui_i_u_id))",
    "CREATE TABLE useracct_watch (uw_u_id VARCHAR(128) NOT NULL, uw_i_id VARCHAR(128) NOT NULL, \
     uw_i_u_id VARCHAR(128) NOT NULL, uw_created TIMESTAMP, PRIMARY KEY (uw_u_id, uw_i_id, uw_i_u_id))",
];
