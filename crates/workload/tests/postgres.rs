//! The workloads against the machine's PostgreSQL (SERIALIZABLE): init, a short run with no
//! errors other than counted retries, and check (TPC-C, SEATS, AuctionMark, YCSB, transfer);
//! a corrupted row makes check fail naming what it broke; missing data sets and another
//! workload's schema are refused clearly.

mod common;

use common::TestDb;
use pistou_workload::{auctionmark, seats, tpcc, ycsb, InitOptions, Name, Report, RunOptions};
use std::time::Duration;

fn options() -> InitOptions {
    InitOptions {
        tpcc: tpcc::Scale { warehouses: 1, items: tpcc::SPEC_ITEMS, customers: tpcc::SPEC_CUSTOMERS },
        seats: seats::Scale { flights: seats::DEFAULT_FLIGHTS },
        auctionmark: auctionmark::Scale { users: auctionmark::DEFAULT_USERS },
        ycsb_records: 1000,
        accounts: 100,
        seed: 7,
        drop: false,
    }
}

async fn run(name: Name, url: &str, mix: ycsb::Mix, secs: u64) -> Report {
    let o = RunOptions {
        url: url.to_string(),
        clients: 4,
        duration: Duration::from_secs(secs),
        seed: 3,
        ycsb_mix: mix,
        cpu_pids: vec![],
    };
    let report = pistou_workload::run(name, &o, std::future::pending()).await.expect("run");
    assert!(report.total.committed > 0, "{}", report.table());
    assert_eq!(report.total.errors, 0, "{}", report.table());
    assert!(!report.interrupted);
    assert!(!report.series.is_empty());
    report
}

async fn init(name: Name, url: &str, o: &InitOptions) {
    pistou_workload::init(name, url, o, &mut |_| {}).await.expect("init");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpcc_loads_runs_and_checks_then_detects_a_broken_district() {
    let db = TestDb::create("tpcc").await;
    // Before init: a clear message, not an SQL error.
    let err = pistou_workload::check(Name::Tpcc, &db.url).await.expect_err("no data set yet");
    assert!(err.to_string().contains("no TPC-C data set found"), "{err:#}");
    init(Name::Tpcc, &db.url, &options()).await;
    assert_eq!(pistou_workload::check(Name::Tpcc, &db.url).await.expect("check"), Vec::<String>::new());
    let report = run(Name::Tpcc, &db.url, ycsb::Mix::A, 4).await;
    let names: Vec<&str> = report.transactions.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["new_order", "payment", "order_status", "delivery", "stock_level"]);
    assert!(report.headline.as_deref().is_some_and(|h| h.starts_with("tpmC")));
    assert_eq!(pistou_workload::check(Name::Tpcc, &db.url).await.expect("check"), Vec::<String>::new());
    // A second init refuses to overwrite the data set.
    let err = pistou_workload::init(Name::Tpcc, &db.url, &options(), &mut |_| {}).await.expect_err("exists");
    assert!(err.to_string().contains("--drop"), "{err:#}");
    // One district's D_YTD off by a cent breaks condition 1 (W_YTD = sum of D_YTD).
    db.sql("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3").await;
    let violations = pistou_workload::check(Name::Tpcc, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("condition 1"), "{violations:?}");
    // An extra NEW-ORDER row breaks conditions 2 and 3.
    db.sql("INSERT INTO new_order VALUES (1, 5, 100000)").await;
    let violations = pistou_workload::check(Name::Tpcc, &db.url).await.expect("check");
    assert!(violations.iter().any(|v| v.starts_with("condition 2")), "{violations:?}");
    assert!(violations.iter().any(|v| v.starts_with("condition 3")), "{violations:?}");
    // A lost order line breaks condition 4.
    db.sql("DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 7 AND ol_o_id = 1 AND ol_number = 1").await;
    let violations = pistou_workload::check(Name::Tpcc, &db.url).await.expect("check");
    assert!(violations.iter().any(|v| v.starts_with("condition 4")), "{violations:?}");
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_loads_runs_and_checks_then_detects_broken_flights_and_customers() {
    let db = TestDb::create("seats").await;
    let err = pistou_workload::check(Name::Seats, &db.url).await.expect_err("no data set yet");
    assert!(err.to_string().contains("no SEATS data set found"), "{err:#}");
    init(Name::Seats, &db.url, &options()).await;
    assert_eq!(pistou_workload::check(Name::Seats, &db.url).await.expect("check"), Vec::<String>::new());
    let report = run(Name::Seats, &db.url, ycsb::Mix::A, 3).await;
    let names: Vec<&str> = report.transactions.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "delete_reservation",
            "find_flights",
            "find_open_seats",
            "new_reservation",
            "update_customer",
            "update_reservation"
        ]
    );
    // Every type commits some; NewReservation and UpdateReservation also meet taken seats.
    assert!(report.transactions.iter().all(|t| t.committed > 0), "{}", report.table());
    assert!(report.total.rolled_back > 0, "{}", report.table());
    assert_eq!(pistou_workload::check(Name::Seats, &db.url).await.expect("check"), Vec::<String>::new());
    // A flight's F_SEATS_LEFT off by one.
    db.sql("UPDATE flight SET f_seats_left = f_seats_left - 1 WHERE f_id = 7").await;
    let violations = pistou_workload::check(Name::Seats, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("invariant seats_left violated: flight 7 has F_SEATS_LEFT"), "{violations:?}");
    // A reservation of a customer who does not exist (its flight's seat count kept right).
    db.sql(
        "UPDATE flight SET f_seats_left = f_seats_left + 1 WHERE f_id = 7; \
         INSERT INTO reservation (r_id, r_c_id, r_f_id, r_seat, r_price) \
         SELECT 999999999, 99999999, 9, s, 1.0 FROM generate_series(1, 150) s \
         WHERE s NOT IN (SELECT r_seat FROM reservation WHERE r_f_id = 9) LIMIT 1; \
         UPDATE flight SET f_seats_left = f_seats_left - 1 WHERE f_id = 9",
    )
    .await;
    let violations = pistou_workload::check(Name::Seats, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("invariant reservation_customer_exists violated"), "{violations:?}");
    // A customer's reservation counter off (a NewReservation half applied).
    db.sql("DELETE FROM reservation WHERE r_id = 999999999; UPDATE flight SET f_seats_left = f_seats_left + 1 WHERE f_id = 9").await;
    db.sql("UPDATE customer SET c_iattr10 = c_iattr10 + 1 WHERE c_id = 5").await;
    let violations = pistou_workload::check(Name::Seats, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("invariant customer_reservation_count violated: customer 5"), "{violations:?}");
    // Two reservations of one seat (once the unique constraint is gone): also a customer
    // with two seats on the flight, F_SEATS_LEFT wrong and counters off.
    db.sql("UPDATE customer SET c_iattr10 = c_iattr10 - 1 WHERE c_id = 5").await;
    assert_eq!(pistou_workload::check(Name::Seats, &db.url).await.expect("check"), Vec::<String>::new());
    db.sql(
        "ALTER TABLE reservation DROP CONSTRAINT reservation_r_f_id_r_seat_key; \
         INSERT INTO reservation (r_id, r_c_id, r_f_id, r_seat, r_price) \
         SELECT 999999998, r_c_id, r_f_id, r_seat, r_price FROM reservation WHERE r_f_id = 11 LIMIT 1",
    )
    .await;
    let violations = pistou_workload::check(Name::Seats, &db.url).await.expect("check");
    for invariant in
        ["seats_left", "seat_reserved_once", "one_reservation_per_customer_and_flight", "customer_reservation_count"]
    {
        let prefix = format!("invariant {invariant} violated");
        assert!(violations.iter().any(|v| v.starts_with(&prefix)), "{invariant}: {violations:?}");
    }
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auctionmark_loads_runs_and_checks_then_detects_broken_items_and_users() {
    let db = TestDb::create("auctionmark").await;
    let err = pistou_workload::check(Name::AuctionMark, &db.url).await.expect_err("no data set yet");
    assert!(err.to_string().contains("no AuctionMark data set found"), "{err:#}");
    let o = InitOptions { auctionmark: auctionmark::Scale { users: 300 }, ..options() };
    init(Name::AuctionMark, &db.url, &o).await;
    assert_eq!(pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check"), Vec::<String>::new());
    let report = run(Name::AuctionMark, &db.url, ycsb::Mix::A, 4).await;
    let names: Vec<&str> = report.transactions.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "get_item",
            "get_user_info",
            "new_bid",
            "new_comment",
            "new_comment_response",
            "new_feedback",
            "new_item",
            "new_purchase",
            "update_item",
            "close_auctions"
        ]
    );
    for kind in ["get_item", "get_user_info", "new_bid", "new_item", "new_purchase", "close_auctions"] {
        let t = report.transactions.iter().find(|t| t.name == kind).expect("type reported");
        assert!(t.committed > 0, "{kind}: {}", report.table());
    }
    assert_eq!(pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check"), Vec::<String>::new());
    // The run sold items that CloseAuctions closed during it, and recorded their winners.
    let (client, conn) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls).await.expect("connect");
    let task = tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT count(*) FROM auction_item WHERE i_start_date > '2024-01-01 00:00:00' AND i_status <> 0",
            &[],
        )
        .await
        .expect("closed items");
    assert!(row.get::<_, i64>(0) > 0, "CloseAuctions closed no item listed during the run");
    // An item with bids whose price is off by one.
    let row = client
        .query_one("SELECT ib_i_id FROM item_bid ORDER BY ib_i_id LIMIT 1", &[])
        .await
        .expect("an item with bids");
    let item: String = row.get(0);
    drop(client);
    let _ = task.await;
    db.sql(&format!("UPDATE auction_item SET i_current_price = i_current_price + 1 WHERE i_id = '{item}'")).await;
    let violations = pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    let prefix = format!("invariant current_price violated: item {item} of");
    assert!(violations[0].starts_with(&prefix), "{violations:?}");
    db.sql(&format!("UPDATE auction_item SET i_current_price = i_current_price - 1 WHERE i_id = '{item}'")).await;
    assert_eq!(pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check"), Vec::<String>::new());
    // A bid by a user who does not exist, counted in I_NUM_BIDS: only bidder_exists (the
    // bid is below the price and its maximum below the winner's).
    db.sql(&format!(
        "INSERT INTO item_bid SELECT max(ib_id) + 1, ib_i_id, ib_u_id, 'nobody', 0.01, 0.01, NULL, NULL \
         FROM item_bid WHERE ib_i_id = '{item}' GROUP BY ib_i_id, ib_u_id; \
         UPDATE auction_item SET i_num_bids = i_num_bids + 1 WHERE i_id = '{item}'"
    ))
    .await;
    let violations = pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].starts_with("invariant bidder_exists violated"), "{violations:?}");
    // I_NUM_BIDS off, a purchase of an open item, a rating and a comment count off.
    db.sql(&format!(
        "UPDATE auction_item SET i_num_bids = i_num_bids + 1 WHERE i_id = '{item}'; \
         INSERT INTO item_purchase SELECT 1, 0, i_id, i_u_id, NULL FROM auction_item \
         WHERE i_status = 0 AND i_num_bids > 0 ORDER BY i_id LIMIT 1; \
         UPDATE useracct SET u_rating = u_rating + 1 WHERE u_id = 'u0000003'; \
         UPDATE useracct SET u_comments = u_comments + 1 WHERE u_id = 'u0000004'"
    ))
    .await;
    let violations = pistou_workload::check(Name::AuctionMark, &db.url).await.expect("check");
    for invariant in ["num_bids", "purchase_of_closed_item", "feedback_rating", "unanswered_comments"] {
        let prefix = format!("invariant {invariant} violated");
        assert!(violations.iter().any(|v| v.starts_with(&prefix)), "{invariant}: {violations:?}");
    }
    assert!(
        violations.iter().any(|v| v.starts_with("invariant feedback_rating violated: user u0000003 has U_RATING")),
        "{violations:?}"
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ycsb_workloads_run_and_check() {
    let db = TestDb::create("ycsb").await;
    init(Name::Ycsb, &db.url, &options()).await;
    for mix in [ycsb::Mix::A, ycsb::Mix::D, ycsb::Mix::E, ycsb::Mix::F] {
        run(Name::Ycsb, &db.url, mix, 2).await;
    }
    assert_eq!(pistou_workload::check(Name::Ycsb, &db.url).await.expect("check"), Vec::<String>::new());
    db.sql("UPDATE usertable SET field3 = 'short' WHERE ycsb_key IN (SELECT ycsb_key FROM usertable LIMIT 1)").await;
    let violations = pistou_workload::check(Name::Ycsb, &db.url).await.expect("check");
    assert_eq!(violations.len(), 1, "{violations:?}");
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_conserve_money_and_other_schemas_are_refused() {
    let db = TestDb::create("transfer").await;
    init(Name::Transfer, &db.url, &options()).await;
    let report = run(Name::Transfer, &db.url, ycsb::Mix::A, 3).await;
    assert!(report.total.retries > 0 || report.total.committed > 0);
    assert_eq!(pistou_workload::check(Name::Transfer, &db.url).await.expect("check"), Vec::<String>::new());
    // TPC-C on a database holding only the transfer data set: named, not an SQL error.
    let o = RunOptions {
        url: db.url.clone(),
        clients: 1,
        duration: Duration::from_secs(1),
        seed: 1,
        ycsb_mix: ycsb::Mix::A,
        cpu_pids: vec![],
    };
    let err = pistou_workload::run(Name::Tpcc, &o, std::future::pending()).await.expect_err("wrong schema");
    assert!(err.to_string().contains("another workload's schema (transfer)"), "{err:#}");
    db.sql("UPDATE transfer_account SET balance = balance + 5 WHERE id = 3").await;
    let violations = pistou_workload::check(Name::Transfer, &db.url).await.expect("check");
    assert!(violations.iter().any(|v| v.contains("money was created or destroyed")), "{violations:?}");
    // --drop replaces the data set.
    init(Name::Transfer, &db.url, &InitOptions { drop: true, ..options() }).await;
    assert_eq!(pistou_workload::check(Name::Transfer, &db.url).await.expect("check"), Vec::<String>::new());
    db.drop_db().await;
}

#[tokio::test]
async fn an_interrupted_run_still_reports_and_a_wrong_url_is_named() {
    let db = TestDb::create("interrupt").await;
    init(Name::Transfer, &db.url, &options()).await;
    let o = RunOptions {
        url: db.url.clone(),
        clients: 2,
        duration: Duration::from_secs(60),
        seed: 1,
        ycsb_mix: ycsb::Mix::A,
        // This process, whose clients do the run's work: PostgreSQL's own processes may be
        // in another PID namespace (a CI service container), where /proc cannot see them.
        cpu_pids: vec![std::process::id()],
    };
    let interrupt = tokio::time::sleep(Duration::from_millis(1500));
    let report = pistou_workload::run(Name::Transfer, &o, interrupt).await.expect("run");
    // The CPU of the named process during the run is reported.
    let cpu = report.cpu.as_ref().expect("cpu report");
    assert_eq!(cpu.pids, o.cpu_pids);
    assert!(cpu.total_s > 0.0, "{cpu:?}");
    assert!(report.table().contains("ms per committed transaction"), "{}", report.table());
    assert!(report.interrupted);
    assert!(report.elapsed_s < 30.0);
    assert!(report.total.committed > 0);
    let o = RunOptions { cpu_pids: vec![u32::MAX], ..o };
    let err = pistou_workload::run(Name::Transfer, &o, std::future::pending()).await.expect_err("no such pid");
    assert!(err.to_string().contains("no such process"), "{err:#}");
    db.drop_db().await;
    let err = pistou_workload::check(Name::Transfer, "postgres://postgres@127.0.0.1:1/test").await.expect_err("port 1");
    assert!(err.to_string().starts_with("cannot connect to 127.0.0.1:1"), "{err:#}");
}
