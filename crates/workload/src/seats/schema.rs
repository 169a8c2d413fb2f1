//! SEATS's eight tables as in crates/sql/tests/slt/seats.slt (BenchBase's DDL without the
//! FOREIGN KEY clauses, the attribute columns no transaction touches and the two
//! configuration tables), and the two secondary indexes the transactions look up by.

pub const TABLES: [&str; 8] =
    ["country", "airport", "airport_distance", "airline", "customer", "frequent_flyer", "flight", "reservation"];

pub const DDL: [&str; 10] = [
    "CREATE TABLE country (co_id BIGINT NOT NULL, co_name VARCHAR(64) NOT NULL, co_code_2 VARCHAR(2) NOT NULL, \
     co_code_3 VARCHAR(3) NOT NULL, PRIMARY KEY (co_id))",
    "CREATE TABLE airport (ap_id BIGINT NOT NULL, ap_code VARCHAR(3) NOT NULL, ap_name VARCHAR(128) NOT NULL, \
     ap_city VARCHAR(64) NOT NULL, ap_postal_code VARCHAR(12), ap_co_id BIGINT NOT NULL, ap_longitude FLOAT, \
     ap_latitude FLOAT, ap_gmt_offset FLOAT, ap_wac BIGINT, PRIMARY KEY (ap_id))",
    "CREATE TABLE airport_distance (d_ap_id0 BIGINT NOT NULL, d_ap_id1 BIGINT NOT NULL, d_distance FLOAT NOT NULL, \
     PRIMARY KEY (d_ap_id0, d_ap_id1))",
    "CREATE TABLE airline (al_id BIGINT NOT NULL, al_iata_code VARCHAR(3), al_icao_code VARCHAR(3), \
     al_call_sign VARCHAR(32), al_name VARCHAR(128) NOT NULL, al_co_id BIGINT NOT NULL, al_iattr00 BIGINT, \
     al_iattr01 BIGINT, PRIMARY KEY (al_id))",
    "CREATE TABLE customer (c_id BIGINT NOT NULL, c_id_str VARCHAR(64) UNIQUE NOT NULL, c_base_ap_id BIGINT, \
     c_balance FLOAT NOT NULL, c_sattr00 VARCHAR(32), c_sattr01 VARCHAR(8), c_sattr02 VARCHAR(8), \
     c_sattr03 VARCHAR(8), c_sattr04 VARCHAR(8), c_iattr00 BIGINT, c_iattr01 BIGINT, c_iattr02 BIGINT, \
     c_iattr03 BIGINT, c_iattr04 BIGINT, c_iattr05 BIGINT, c_iattr06 BIGINT, c_iattr07 BIGINT, c_iattr08 BIGINT, \
     c_iattr09 BIGINT, c_iattr10 BIGINT, c_iattr11 BIGINT, c_iattr12 BIGINT, c_iattr13 BIGINT, c_iattr14 BIGINT, \
     c_iattr15 BIGINT, PRIMARY KEY (c_id))",
    "CREATE TABLE frequent_flyer (ff_c_id BIGINT NOT NULL, ff_al_id BIGINT NOT NULL, ff_c_id_str VARCHAR(64) NOT NULL, \
     ff_sattr00 VARCHAR(32), ff_iattr00 BIGINT, ff_iattr01 BIGINT, ff_iattr10 BIGINT, ff_iattr11 BIGINT, \
     ff_iattr12 BIGINT, ff_iattr13 BIGINT, ff_iattr14 BIGINT, PRIMARY KEY (ff_c_id, ff_al_id))",
    "CREATE INDEX idx_ff_customer_id ON frequent_flyer (ff_c_id_str)",
    "CREATE TABLE flight (f_id BIGINT NOT NULL, f_al_id BIGINT NOT NULL, f_depart_ap_id BIGINT NOT NULL, \
     f_depart_time TIMESTAMP NOT NULL, f_arrive_ap_id BIGINT NOT NULL, f_arrive_time TIMESTAMP NOT NULL, \
     f_status BIGINT NOT NULL, f_base_price FLOAT NOT NULL, f_seats_total BIGINT NOT NULL, \
     f_seats_left BIGINT NOT NULL, PRIMARY KEY (f_id))",
    "CREATE INDEX f_depart_time_idx ON flight (f_depart_time)",
    "CREATE TABLE reservation (r_id BIGINT NOT NULL, r_c_id BIGINT NOT NULL, r_f_id BIGINT NOT NULL, \
     r_seat BIGINT NOT NULL, r_price FLOAT NOT NULL, r_iattr00 BIGINT, r_iattr01 BIGINT, r_iattr02 BIGINT, \
     r_iattr03 BIGINT, r_iattr04 BIGINT, r_iattr05 BIGINT, r_iattr06 BIGINT, r_iattr07 BIGINT, r_iattr08 BIGINT, \
     UNIQUE (r_f_id, r_seat), PRIMARY KEY (r_id, r_c_id, r_f_id))",
];
