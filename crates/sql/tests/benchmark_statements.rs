//! The SEATS and AuctionMark statements as the benchmarks' clients send them: written with
//! JDBC `?` placeholders, which the PostgreSQL driver numbers `$1, $2, ...` and whose types it
//! leaves to the server. Every parameter's type must be
//! inferred from its context, and executing with bound values must give the results that
//! `tests/slt/seats.slt` and `tests/slt/auctionmark.slt` check with the values as literals.

use pistou_sql::types::cast;
use pistou_sql::*;

/// A database with the schema and data set of `tests/slt/<name>.slt`: its `statement ok`
/// records before the first query.
fn load(name: &str) -> Database {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/slt/{name}.slt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut db = Database::new();
    for record in text.split("\n\n") {
        let mut lines = record.lines().filter(|l| !l.starts_with('#'));
        match lines.next() {
            Some("statement ok") => {
                let sql: Vec<&str> = lines.collect();
                db.execute(&sql.join("\n")).unwrap_or_else(|e| panic!("{}: {e}", sql.join("\n")));
            }
            Some(head) if head.starts_with("query") => break,
            _ => {}
        }
    }
    db
}

fn ts(s: &str) -> Value {
    cast(&Value::Text(s.into()), SqlType::Timestamp).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

/// `sql` with its `?` placeholders numbered, as the PostgreSQL JDBC driver sends it.
fn numbered(sql: &str) -> String {
    let mut n = 0;
    sql.split('?')
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part.to_string()
            } else {
                n += 1;
                format!("${n}{part}")
            }
        })
        .collect()
}

/// Prepares `sql`, checks that every parameter's type is inferred, and runs it with `params`.
fn run(db: &mut Database, sql: &str, params: &[Value]) -> Output {
    let sql = &numbered(sql);
    let prepared = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(prepared.param_count(), params.len(), "{sql}");
    assert!(prepared.param_types().iter().all(Option::is_some), "{sql}: parameter types {:?}", prepared.param_types());
    db.execute_prepared(&prepared, params).unwrap_or_else(|e| panic!("{sql}: {e}")).output
}

fn rows(output: Output) -> Vec<Row> {
    match output {
        Output::Rows { rows, .. } => rows,
        other => panic!("not rows: {other:?}"),
    }
}

fn affected(output: Output) -> u64 {
    match output {
        Output::Affected { count, .. } => count,
        other => panic!("not a write: {other:?}"),
    }
}

#[test]
fn seats_statements_with_parameters() {
    let mut db = load("seats");
    let int = Value::Int;
    // FindFlights
    let nearby = rows(run(
        &mut db,
        "SELECT * FROM AIRPORT_DISTANCE WHERE D_AP_ID0 = ? AND D_DISTANCE <= ? ORDER BY D_DISTANCE ASC",
        &[int(10), int(200)],
    ));
    assert_eq!(nearby.len(), 2);
    let flights = rows(run(
        &mut db,
        "SELECT F_ID, F_AL_ID, F_SEATS_LEFT, F_DEPART_AP_ID, F_DEPART_TIME, F_ARRIVE_AP_ID, F_ARRIVE_TIME, AL_NAME, AL_IATTR00, AL_IATTR01 \
         FROM FLIGHT, AIRLINE WHERE F_DEPART_AP_ID = ? AND F_DEPART_TIME >= ? AND F_DEPART_TIME <= ? AND F_AL_ID = AL_ID AND F_ARRIVE_AP_ID IN (?, ?, ?)",
        &[int(10), ts("2026-11-24 00:00:00"), ts("2026-11-24 23:59:59"), int(11), int(12), int(13)],
    ));
    let mut ids: Vec<Value> = flights.iter().map(|r| r[0].clone()).collect();
    ids.sort_by_key(|v| v.to_string());
    assert_eq!(ids, vec![int(5000), int(5001), int(5002)]);
    let airport = rows(run(&mut db, "SELECT AP_CODE, AP_NAME, AP_CITY, AP_LONGITUDE, AP_LATITUDE, CO_ID, CO_NAME, CO_CODE_2, CO_CODE_3 FROM AIRPORT, COUNTRY WHERE AP_ID = ? AND AP_CO_ID = CO_ID", &[int(13)]));
    assert_eq!(airport[0][0], text("YUL"));
    // FindOpenSeats
    let flight = rows(run(
        &mut db,
        "SELECT F_STATUS, F_BASE_PRICE, F_SEATS_TOTAL, F_SEATS_LEFT, (F_BASE_PRICE + (F_BASE_PRICE * (1 - (F_SEATS_LEFT / F_SEATS_TOTAL)))) AS F_PRICE FROM FLIGHT WHERE F_ID = ?",
        &[int(5000)],
    ));
    assert_eq!(flight[0][4], Value::Float(400.0));
    assert_eq!(
        rows(run(&mut db, "SELECT R_ID, R_F_ID, R_SEAT FROM RESERVATION WHERE R_F_ID = ?", &[int(5000)])).len(),
        2
    );
    // NewReservation
    let got = rows(run(
        &mut db,
        "SELECT F_AL_ID, F_SEATS_LEFT, airline.* FROM FLIGHT, AIRLINE WHERE F_ID = ? AND F_AL_ID = AL_ID",
        &[int(5001)],
    ));
    assert_eq!(got[0][..2], [int(100), int(150)]);
    assert!(rows(run(&mut db, "SELECT R_ID FROM RESERVATION WHERE R_F_ID = ? and R_SEAT = ?", &[int(5001), int(3)]))
        .is_empty());
    assert!(rows(run(
        &mut db,
        "SELECT R_ID FROM RESERVATION WHERE R_F_ID = ? AND R_C_ID = ?",
        &[int(5001), int(1001)]
    ))
    .is_empty());
    assert_eq!(
        rows(run(&mut db, "SELECT C_BASE_AP_ID, C_BALANCE, C_SATTR00 FROM CUSTOMER WHERE C_ID = ?", &[int(1001)]))[0]
            [2],
        text("bob")
    );
    let attrs: Vec<Value> = (1..=9).map(int).collect();
    let mut insert = vec![int(3), int(1001), int(5001), int(3), Value::Float(180.5)];
    insert.extend(attrs.iter().cloned());
    let sql = "INSERT INTO RESERVATION (R_ID, R_C_ID, R_F_ID, R_SEAT, R_PRICE, R_IATTR00, R_IATTR01, R_IATTR02, R_IATTR03, R_IATTR04, R_IATTR05, R_IATTR06, R_IATTR07, R_IATTR08) \
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    assert_eq!(affected(run(&mut db, sql, &insert)), 1);
    assert_eq!(
        affected(run(&mut db, "UPDATE FLIGHT SET F_SEATS_LEFT = F_SEATS_LEFT - 1 WHERE F_ID = ?", &[int(5001)])),
        1
    );
    let sql = "UPDATE CUSTOMER SET C_IATTR10 = C_IATTR10 + 1, C_IATTR11 = C_IATTR11 + 1, C_IATTR12 = ?, C_IATTR13 = ?, C_IATTR14 = ?, C_IATTR15 = ? WHERE C_ID = ?";
    assert_eq!(affected(run(&mut db, sql, &[int(1), int(2), int(3), int(4), int(1001)])), 1);
    let sql = "UPDATE FREQUENT_FLYER SET FF_IATTR10 = FF_IATTR10 + 1, FF_IATTR11 = ?, FF_IATTR12 = ?, FF_IATTR13 = ?, FF_IATTR14 = ? WHERE FF_C_ID = ? AND FF_AL_ID = ?";
    assert_eq!(affected(run(&mut db, sql, &[int(5), int(6), int(7), int(8), int(1001), int(100)])), 1);
    // UpdateReservation
    let sql = "UPDATE RESERVATION SET R_SEAT = ?, R_IATTR02 = ? WHERE R_ID = ? AND R_C_ID = ? AND R_F_ID = ?";
    assert_eq!(affected(run(&mut db, sql, &[int(9), int(77), int(1), int(1000), int(5000)])), 1);
    // DeleteReservation
    assert_eq!(
        rows(run(&mut db, "SELECT C_ID FROM CUSTOMER WHERE C_ID_STR = ?", &[text("000001001")])),
        vec![vec![int(1001)]]
    );
    let ff = rows(run(
        &mut db,
        "SELECT C_ID, FF_AL_ID FROM CUSTOMER, FREQUENT_FLYER WHERE FF_C_ID_STR = ? AND FF_C_ID = C_ID",
        &[text("000001001")],
    ));
    assert_eq!(ff, vec![vec![int(1001), int(100)]]);
    let sql = "SELECT C_SATTR00, C_SATTR02, C_SATTR04, C_IATTR00, C_IATTR02, C_IATTR04, C_IATTR06, F_SEATS_LEFT, R_ID, R_SEAT, R_PRICE, R_IATTR00 \
               FROM CUSTOMER, FLIGHT, RESERVATION WHERE C_ID = ? AND C_ID = R_C_ID AND F_ID = ? AND F_ID = R_F_ID";
    assert_eq!(rows(run(&mut db, sql, &[int(1001), int(5000)]))[0][8], int(2));
    assert_eq!(
        affected(run(
            &mut db,
            "DELETE FROM RESERVATION WHERE R_ID = ? AND R_C_ID = ? AND R_F_ID = ?",
            &[int(2), int(1001), int(5000)]
        )),
        1
    );
    assert_eq!(
        affected(run(&mut db, "UPDATE FLIGHT SET F_SEATS_LEFT = F_SEATS_LEFT + 1 WHERE F_ID = ?", &[int(5000)])),
        1
    );
    let sql = "UPDATE CUSTOMER SET C_BALANCE = C_BALANCE + ?, C_IATTR00 = ?, C_IATTR10 = C_IATTR10 - 1, C_IATTR11 = C_IATTR10 - 1 WHERE C_ID = ?";
    assert_eq!(affected(run(&mut db, sql, &[Value::Float(-200.0), int(11), int(1001)])), 1);
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE FREQUENT_FLYER SET FF_IATTR10 = FF_IATTR10 - 1 WHERE FF_C_ID = ? AND FF_AL_ID = ?",
            &[int(1001), int(100)]
        )),
        1
    );
    // UpdateCustomer
    assert_eq!(rows(run(&mut db, "SELECT * FROM CUSTOMER WHERE C_ID = ?", &[int(1000)]))[0].len(), 25);
    assert_eq!(
        rows(run(&mut db, "SELECT * FROM AIRPORT, COUNTRY WHERE AP_ID = ? AND AP_CO_ID = CO_ID", &[int(10)]))[0].len(),
        14
    );
    assert_eq!(rows(run(&mut db, "SELECT * FROM FREQUENT_FLYER WHERE FF_C_ID = ?", &[int(1000)])).len(), 2);
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE FREQUENT_FLYER SET FF_IATTR00 = ?, FF_IATTR01 = ? WHERE FF_C_ID = ? AND FF_AL_ID = ?",
            &[int(40), int(41), int(1000), int(100)]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE CUSTOMER SET C_IATTR00 = ?, C_IATTR01 = ? WHERE C_ID = ?",
            &[int(40), int(41), int(1000)]
        )),
        1
    );
    let balances =
        rows(run(&mut db, "SELECT c_balance, c_iattr10, c_iattr11 FROM customer WHERE c_id = ?", &[int(1001)]));
    assert_eq!(balances, vec![vec![Value::Float(50.5), int(1), int(1)]]);
}

#[test]
fn auctionmark_statements_with_parameters() {
    let mut db = load("auctionmark");
    let int = Value::Int;
    let items = "i_id, i_u_id, i_name, i_current_price, i_num_bids, i_end_date, i_status";
    // GetItem, GetUserInfo
    assert_eq!(
        rows(run(
            &mut db,
            &format!("SELECT {items} FROM item WHERE i_id = ? AND i_u_id = ?"),
            &[text("i1"), text("u1")]
        ))
        .len(),
        1
    );
    let user = rows(run(&mut db, "SELECT u_id, u_rating, u_created, u_balance, u_sattr0, u_sattr1, u_sattr2, u_sattr3, u_sattr4, r_name FROM useracct, region WHERE u_id = ? AND u_r_id = r_id", &[text("u2")]));
    assert_eq!(user[0][9], text("south"));
    let feedback = rows(run(&mut db, "SELECT u_id, u_rating, u_sattr0, u_sattr1, uf_rating, uf_date, uf_sattr0 FROM useracct, useracct_feedback WHERE u_id = ? AND uf_u_id = u_id ORDER BY uf_date DESC LIMIT 25", &[text("u2")]));
    assert_eq!(feedback.iter().map(|r| r[4].clone()).collect::<Vec<_>>(), vec![int(-1), int(1)]);
    let sql = format!("SELECT {items}, ic_id, ic_i_id, ic_u_id, ic_buyer_id, ic_question, ic_created FROM item, item_comment WHERE i_u_id = ? AND i_status = ? AND i_id = ic_i_id AND i_u_id = ic_u_id AND ic_response IS NULL ORDER BY ic_created DESC LIMIT 25");
    assert_eq!(rows(run(&mut db, &sql, &[text("u1"), int(0)])).len(), 1);
    assert_eq!(
        rows(run(
            &mut db,
            &format!("SELECT {items} FROM item WHERE i_u_id = ? ORDER BY i_end_date DESC LIMIT 25"),
            &[text("u1")]
        ))
        .len(),
        2
    );
    let sql = format!("SELECT {items} FROM useracct_item, item WHERE ui_u_id = ? AND ui_i_id = i_id AND ui_i_u_id = i_u_id ORDER BY i_end_date DESC LIMIT 25");
    assert_eq!(rows(run(&mut db, &sql, &[text("u3")])).len(), 1);
    let sql = format!("SELECT {items}, uw_u_id, uw_created FROM useracct_watch, item WHERE uw_u_id = ? AND uw_i_id = i_id AND uw_i_u_id = i_u_id ORDER BY i_end_date DESC LIMIT 25");
    assert_eq!(rows(run(&mut db, &sql, &[text("u3")])).len(), 2);
    // NewBid
    let now = ts("2026-11-10 00:00:00");
    assert_eq!(
        rows(run(
            &mut db,
            "SELECT MAX(ib_id) FROM item_bid WHERE ib_i_id = ? AND ib_u_id = ?",
            &[text("i1"), text("u1")]
        )),
        vec![vec![int(1)]]
    );
    let sql = "SELECT imb_ib_id, ib_bid, ib_max_bid, ib_buyer_id FROM item_max_bid, item_bid WHERE imb_i_id = ? AND imb_u_id = ? AND imb_ib_id = ib_id AND imb_ib_i_id = ib_i_id AND imb_ib_u_id = ib_u_id";
    assert_eq!(rows(run(&mut db, sql, &[text("i1"), text("u1")]))[0][3], text("u3"));
    let sql = "INSERT INTO item_bid (ib_id, ib_i_id, ib_u_id, ib_buyer_id, ib_bid, ib_max_bid, ib_created, ib_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    let bid =
        [int(2), text("i1"), text("u1"), text("u2"), Value::Float(15.25), Value::Float(20.0), now.clone(), now.clone()];
    assert_eq!(affected(run(&mut db, sql, &bid)), 1);
    let sql =
        "UPDATE item SET i_num_bids = i_num_bids + 1, i_current_price = ?, i_updated = ? WHERE i_id = ? AND i_u_id = ?";
    assert_eq!(affected(run(&mut db, sql, &[Value::Float(15.25), now.clone(), text("i1"), text("u1")])), 1);
    let sql = "UPDATE item_max_bid SET imb_ib_id = ?, imb_ib_i_id = ?, imb_ib_u_id = ?, imb_updated = ? WHERE imb_i_id = ? AND imb_u_id = ?";
    assert_eq!(affected(run(&mut db, sql, &[int(2), text("i1"), text("u1"), now.clone(), text("i1"), text("u1")])), 1);
    let sql = "UPDATE item_bid SET ib_bid = ?, ib_max_bid = ?, ib_updated = ? WHERE ib_id = ? AND ib_i_id = ? AND ib_u_id = ?";
    assert_eq!(
        affected(run(
            &mut db,
            sql,
            &[Value::Float(15.25), Value::Float(25.0), now.clone(), int(2), text("i1"), text("u1")]
        )),
        1
    );
    let sql = "INSERT INTO item_max_bid (imb_i_id, imb_u_id, imb_ib_id, imb_ib_i_id, imb_ib_u_id, imb_created, imb_updated) VALUES (?, ?, ?, ?, ?, ?, ?)";
    assert!(db
        .execute_with(
            &numbered(sql),
            &[text("i1"), text("u1"), int(0), text("i1"), text("u1"), now.clone(), now.clone()]
        )
        .is_err_and(|e| e.sqlstate() == "23505"));
    // NewComment, NewCommentResponse
    assert_eq!(
        rows(run(&mut db, "SELECT i_num_comments FROM item WHERE i_id = ? AND i_u_id = ?", &[text("i2"), text("u1")])),
        vec![vec![int(0)]]
    );
    let sql = "INSERT INTO item_comment (ic_id, ic_i_id, ic_u_id, ic_buyer_id, ic_question, ic_created, ic_updated) VALUES (?,?,?,?,?,?,?)";
    assert_eq!(
        affected(run(
            &mut db,
            sql,
            &[int(1), text("i2"), text("u1"), text("u3"), text("first edition?"), now.clone(), now.clone()]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE item SET i_num_comments = i_num_comments + 1 WHERE i_id = ? AND i_u_id = ?",
            &[text("i2"), text("u1")]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE useracct SET u_comments = u_comments + 1, u_updated = ? WHERE u_id = ?",
            &[now.clone(), text("u1")]
        )),
        1
    );
    let sql = "UPDATE item_comment SET ic_response = ?, ic_updated = ? WHERE ic_id = ? AND ic_i_id = ? AND ic_u_id = ?";
    assert_eq!(affected(run(&mut db, sql, &[text("yes"), now.clone(), int(1), text("i1"), text("u1")])), 1);
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE useracct SET u_comments = u_comments - 1, u_updated = ? WHERE u_id = ?",
            &[now.clone(), text("u1")]
        )),
        1
    );
    // NewFeedback
    let sql = "SELECT uf_i_id, uf_i_u_id, uf_from_id FROM useracct_feedback WHERE uf_u_id = ? AND uf_i_id = ? AND uf_i_u_id = ? AND uf_from_id = ?";
    assert!(rows(run(&mut db, sql, &[text("u2"), text("i3"), text("u2"), text("u3")])).is_empty());
    let sql = "INSERT INTO useracct_feedback (uf_u_id, uf_i_id, uf_i_u_id, uf_from_id, uf_rating, uf_date, uf_sattr0) VALUES (?,?,?,?,?,?,?)";
    assert_eq!(
        affected(run(&mut db, sql, &[text("u2"), text("i3"), text("u2"), text("u3"), int(1), now.clone(), text("ok")])),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE useracct SET u_rating = u_rating + ?, u_updated = ? WHERE u_id = ?",
            &[int(1), now.clone(), text("u2")]
        )),
        1
    );
    // NewItem
    let sql = "SELECT gag_name, gav_name, gag_c_id FROM global_attribute_group, global_attribute_value WHERE gav_id = ? AND gav_gag_id = ? AND gav_gag_id = gag_id";
    assert_eq!(rows(run(&mut db, sql, &[text("v2"), text("g1")]))[0][1], text("Casio"));
    assert_eq!(rows(run(&mut db, "SELECT * FROM category WHERE c_id = ?", &[int(2)])).len(), 1);
    assert_eq!(rows(run(&mut db, "SELECT * FROM category WHERE c_parent_id = ?", &[int(1)])).len(), 2);
    assert_eq!(rows(run(&mut db, "SELECT COUNT(*) FROM item WHERE i_u_id = ?", &[text("u3")])), vec![vec![int(0)]]);
    let sql = "INSERT INTO item(i_id,i_u_id,i_c_id,i_name,i_description,i_user_attributes,i_initial_price,i_current_price,i_num_bids,i_num_images,i_num_global_attrs,i_start_date,i_end_date,i_status, i_created,i_updated,i_iattr0) \
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)";
    let item = [
        text("i5"),
        text("u3"),
        int(2),
        text("casio"),
        text("digital watch"),
        text("water resistant"),
        Value::Float(25.0),
        Value::Float(25.0),
        int(0),
        int(1),
        int(1),
        now.clone(),
        ts("2026-11-25 00:00:00"),
        int(0),
        now.clone(),
        now.clone(),
    ];
    assert_eq!(affected(run(&mut db, sql, &item)), 1);
    assert_eq!(
        affected(run(
            &mut db,
            "INSERT INTO item_attribute(ia_id,ia_i_id,ia_u_id,ia_gav_id,ia_gag_id) VALUES(?, ?, ?, ?, ?)",
            &[text("i5-0"), text("i5"), text("u3"), text("v2"), text("g1")]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "INSERT INTO item_image(ii_id,ii_i_id,ii_u_id,ii_sattr0) VALUES(?, ?, ?, ?)",
            &[text("i5-0"), text("i5"), text("u3"), text("img")]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE useracct SET u_balance = u_balance - 1, u_updated = ? WHERE u_id = ?",
            &[now.clone(), text("u3")]
        )),
        1
    );
    // UpdateItem
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE item SET i_description = ?, i_updated = ? WHERE i_id = ? AND i_u_id = ?",
            &[text("boxed"), now.clone(), text("i5"), text("u3")]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "DELETE FROM item_attribute WHERE ia_id = ? AND ia_i_id = ? AND ia_u_id = ?",
            &[text("i5-0"), text("i5"), text("u3")]
        )),
        1
    );
    assert_eq!(
        rows(run(
            &mut db,
            "SELECT MAX(ia_id) FROM item_attribute WHERE ia_i_id = ? AND ia_u_id = ?",
            &[text("i5"), text("u3")]
        )),
        vec![vec![Value::Null]]
    );
    // NewPurchase
    assert_eq!(
        rows(run(&mut db, "SELECT * FROM item_max_bid WHERE imb_i_id = ? AND imb_u_id = ?", &[text("i3"), text("u2")]))
            .len(),
        1
    );
    assert_eq!(
        rows(run(
            &mut db,
            "SELECT * FROM item_bid WHERE ib_i_id = ? AND ib_u_id = ? ORDER BY ib_bid DESC LIMIT 1",
            &[text("i3"), text("u2")]
        ))[0][3],
        text("u1")
    );
    let sql = "SELECT i_num_bids, i_current_price, i_end_date, ib_id, ib_buyer_id, u_balance FROM item, item_max_bid, item_bid, useracct \
               WHERE i_id = ? AND i_u_id = ? AND imb_i_id = i_id AND imb_u_id = i_u_id AND imb_ib_id = ib_id AND imb_ib_i_id = ib_i_id AND imb_ib_u_id = ib_u_id AND ib_buyer_id = u_id";
    assert_eq!(
        rows(run(&mut db, sql, &[text("i3"), text("u2")])),
        vec![vec![int(1), Value::Float(30.0), ts("2026-10-15 00:00:00"), int(0), text("u1"), Value::Float(100.0)]]
    );
    assert_eq!(rows(run(&mut db, "SELECT u_id, u_balance FROM useracct WHERE u_id = ?", &[text("u1")])).len(), 1);
    let sql = "INSERT INTO item_purchase (ip_id,ip_ib_id,ip_ib_i_id,ip_ib_u_id,ip_date) VALUES(?,?,?,?,?)";
    assert_eq!(affected(run(&mut db, sql, &[int(1), int(0), text("i3"), text("u2"), now.clone()])), 1);
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE item SET i_status = 2, i_updated = ? WHERE i_id = ? AND i_u_id = ?",
            &[now.clone(), text("i3"), text("u2")]
        )),
        1
    );
    let sql = "UPDATE useracct_item SET ui_ip_id = ?, ui_ip_ib_id = ?, ui_ip_ib_i_id = ?, ui_ip_ib_u_id = ? WHERE ui_u_id = ? AND ui_i_id = ? AND ui_i_u_id = ?";
    assert_eq!(
        affected(run(&mut db, sql, &[int(1), int(0), text("i3"), text("u2"), text("u1"), text("i3"), text("u2")])),
        0
    );
    let sql = "INSERT INTO useracct_item(ui_u_id, ui_i_id, ui_i_u_id, ui_ip_id, ui_ip_ib_id, ui_ip_ib_i_id, ui_ip_ib_u_id, ui_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    assert_eq!(
        affected(run(
            &mut db,
            sql,
            &[text("u1"), text("i3"), text("u2"), int(1), int(0), text("i3"), text("u2"), now.clone()]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE useracct SET u_balance = u_balance + ? WHERE u_id = ?",
            &[Value::Float(-30.0), text("u1")]
        )),
        1
    );
    // CloseAuctions
    let sql = format!(
        "SELECT {items} FROM item WHERE (i_start_date BETWEEN ? AND ?) AND i_status = ? ORDER BY i_id ASC LIMIT 100"
    );
    let due = rows(run(&mut db, &sql, &[ts("2026-11-01 00:00:00"), ts("2026-11-05 00:00:00"), int(0)]));
    assert_eq!(due.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), vec![text("i1"), text("i2")]);
    let sql = "SELECT imb_ib_id, ib_buyer_id FROM item_max_bid, item_bid WHERE imb_i_id = ? AND imb_u_id = ? AND ib_id = imb_ib_id AND ib_i_id = imb_i_id AND ib_u_id = imb_u_id";
    assert_eq!(rows(run(&mut db, sql, &[text("i1"), text("u1")])), vec![vec![int(2), text("u2")]]);
    assert_eq!(
        affected(run(
            &mut db,
            "INSERT INTO useracct_item(ui_u_id, ui_i_id, ui_i_u_id, ui_created) VALUES(?, ?, ?, ?)",
            &[text("u2"), text("i1"), text("u1"), now.clone()]
        )),
        1
    );
    assert_eq!(
        affected(run(
            &mut db,
            "UPDATE item SET i_status = ?, i_updated = ? WHERE i_id = ? AND i_u_id = ?",
            &[int(1), now.clone(), text("i1"), text("u1")]
        )),
        1
    );
    // LoadConfig, ResetDatabase
    let sql = "SELECT i_id, i_current_price, i_end_date, i_num_bids, i_status FROM item, config_profile WHERE i_status = ? AND i_end_date <= cfp_loader_start ORDER BY i_end_date ASC LIMIT 100";
    assert_eq!(rows(run(&mut db, sql, &[int(2)])).len(), 2);
    let stop = ts("2026-11-01 01:00:00");
    let sql = "UPDATE item SET i_status = ?, i_updated = ? WHERE i_status != ? AND i_updated > ?";
    assert_eq!(affected(run(&mut db, sql, &[int(0), stop.clone(), int(0), stop.clone()])), 2);
    assert_eq!(affected(run(&mut db, "DELETE FROM item_purchase WHERE ip_date > ?", &[stop])), 1);
}
