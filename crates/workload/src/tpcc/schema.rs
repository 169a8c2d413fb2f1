//! TPC-C's nine tables (spec 1.3) with their primary keys, and the secondary indexes the
//! transactions look customers and orders up by. Money is integer cents and rates are
//! integer ten-thousandths (BIGINT), so that sums are exact on every endpoint without a
//! decimal type in the client (a documented deviation from the spec's NUMERIC columns).

pub const TABLES: [&str; 9] =
    ["warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"];

pub const DDL: [&str; 11] = [
    "CREATE TABLE warehouse (w_id BIGINT NOT NULL, w_name TEXT NOT NULL, w_street_1 TEXT NOT NULL, \
     w_street_2 TEXT NOT NULL, w_city TEXT NOT NULL, w_state TEXT NOT NULL, w_zip TEXT NOT NULL, \
     w_tax BIGINT NOT NULL, w_ytd BIGINT NOT NULL, PRIMARY KEY (w_id))",
    "CREATE TABLE district (d_w_id BIGINT NOT NULL, d_id BIGINT NOT NULL, d_name TEXT NOT NULL, \
     d_street_1 TEXT NOT NULL, d_street_2 TEXT NOT NULL, d_city TEXT NOT NULL, d_state TEXT NOT NULL, \
     d_zip TEXT NOT NULL, d_tax BIGINT NOT NULL, d_ytd BIGINT NOT NULL, d_next_o_id BIGINT NOT NULL, \
     PRIMARY KEY (d_w_id, d_id))",
    "CREATE TABLE customer (c_w_id BIGINT NOT NULL, c_d_id BIGINT NOT NULL, c_id BIGINT NOT NULL, \
     c_first TEXT NOT NULL, c_middle TEXT NOT NULL, c_last TEXT NOT NULL, c_street_1 TEXT NOT NULL, \
     c_street_2 TEXT NOT NULL, c_city TEXT NOT NULL, c_state TEXT NOT NULL, c_zip TEXT NOT NULL, \
     c_phone TEXT NOT NULL, c_since TIMESTAMP NOT NULL, c_credit TEXT NOT NULL, c_credit_lim BIGINT NOT NULL, \
     c_discount BIGINT NOT NULL, c_balance BIGINT NOT NULL, c_ytd_payment BIGINT NOT NULL, \
     c_payment_cnt BIGINT NOT NULL, c_delivery_cnt BIGINT NOT NULL, c_data TEXT NOT NULL, \
     PRIMARY KEY (c_w_id, c_d_id, c_id))",
    // The spec gives history no primary key.
    "CREATE TABLE history (h_c_id BIGINT NOT NULL, h_c_d_id BIGINT NOT NULL, h_c_w_id BIGINT NOT NULL, \
     h_d_id BIGINT NOT NULL, h_w_id BIGINT NOT NULL, h_date TIMESTAMP NOT NULL, h_amount BIGINT NOT NULL, \
     h_data TEXT NOT NULL)",
    "CREATE TABLE new_order (no_w_id BIGINT NOT NULL, no_d_id BIGINT NOT NULL, no_o_id BIGINT NOT NULL, \
     PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
    "CREATE TABLE orders (o_w_id BIGINT NOT NULL, o_d_id BIGINT NOT NULL, o_id BIGINT NOT NULL, \
     o_c_id BIGINT NOT NULL, o_entry_d TIMESTAMP NOT NULL, o_carrier_id BIGINT, o_ol_cnt BIGINT NOT NULL, \
     o_all_local BIGINT NOT NULL, PRIMARY KEY (o_w_id, o_d_id, o_id))",
    "CREATE TABLE order_line (ol_w_id BIGINT NOT NULL, ol_d_id BIGINT NOT NULL, ol_o_id BIGINT NOT NULL, \
     ol_number BIGINT NOT NULL, ol_i_id BIGINT NOT NULL, ol_supply_w_id BIGINT NOT NULL, \
     ol_delivery_d TIMESTAMP, ol_quantity BIGINT NOT NULL, ol_amount BIGINT NOT NULL, \
     ol_dist_info TEXT NOT NULL, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
    "CREATE TABLE item (i_id BIGINT NOT NULL, i_im_id BIGINT NOT NULL, i_name TEXT NOT NULL, \
     i_price BIGINT NOT NULL, i_data TEXT NOT NULL, PRIMARY KEY (i_id))",
    "CREATE TABLE stock (s_w_id BIGINT NOT NULL, s_i_id BIGINT NOT NULL, s_quantity BIGINT NOT NULL, \
     s_dist_01 TEXT NOT NULL, s_dist_02 TEXT NOT NULL, s_dist_03 TEXT NOT NULL, s_dist_04 TEXT NOT NULL, \
     s_dist_05 TEXT NOT NULL, s_dist_06 TEXT NOT NULL, s_dist_07 TEXT NOT NULL, s_dist_08 TEXT NOT NULL, \
     s_dist_09 TEXT NOT NULL, s_dist_10 TEXT NOT NULL, s_ytd BIGINT NOT NULL, s_order_cnt BIGINT NOT NULL, \
     s_remote_cnt BIGINT NOT NULL, s_data TEXT NOT NULL, PRIMARY KEY (s_w_id, s_i_id))",
    // Payment and Order-Status by last name; Order-Status's latest order of a customer.
    "CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];
