//! `pistou workload` through a gateway in front of `pistou cluster up`: TPC-C (scaled down
//! with the non-standard --items/--customers, Pistou being slow to load 500k rows per
//! warehouse), transfer, YCSB, SEATS and AuctionMark: init, a short run, check; a corrupted
//! district fails check naming condition 1, a corrupted flight the SEATS invariant seats_left,
//! a corrupted user AuctionMark's feedback_rating; missing data sets, another workload's
//! tables and bad arguments are reported with their exit codes.

mod common;

use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

fn ok(args: &[&str]) -> Run {
    let r = pistou(args, LIMIT);
    assert_eq!(r.code, Some(0), "pistou {args:?}\nstdout: {}\nstderr: {}", r.stdout, r.stderr);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_tpcc_transfer_ycsb_seats_and_auctionmark_through_a_gateway() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 2);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let port = free_base_port(1);
        let mut gw = gateway(&config, port, &[]);
        let url = format!("postgres://pistou@127.0.0.1:{port}/pistou");

        let r = pistou(&["workload", "check", "tpcc", "--url", &url], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("no TPC-C data set found: run `pistou workload init tpcc` first"), "{}", r.stderr);

        ok(&["workload", "init", "seats", "--url", &url, "--flights", "20"]);
        let r = ok(&["workload", "run", "seats", "--url", &url, "--duration", "3", "--clients", "2"]);
        assert!(r.stdout.contains("new_reservation") && r.stdout.contains("find_open_seats"), "{}", r.stdout);
        ok(&["workload", "check", "seats", "--url", &url]);
        let corrupt = "UPDATE flight SET f_seats_left = f_seats_left - 1 WHERE f_id = 3;\n";
        let r = pistou_with_input(&["sql", "--url", &url], corrupt, LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = pistou(&["workload", "check", "seats", "--url", &url], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("invariant seats_left violated: flight 3 has F_SEATS_LEFT"), "{}", r.stderr);

        // TPC-C shares the table name customer with SEATS: refused without --drop, naming it.
        let r = pistou(&["workload", "init", "tpcc", "--url", &url, "--items", "1000", "--customers", "30"], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("already has table(s) customer"), "{}", r.stderr);

        ok(&["workload", "init", "tpcc", "--url", &url, "--items", "1000", "--customers", "30", "--drop"]);
        // Dropping customer left SEATS incomplete: said so, not an SQL error on TPC-C's table.
        let r = pistou(&["workload", "check", "seats", "--url", &url], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("the SEATS data set is incomplete"), "{}", r.stderr);
        let json = dir.path().join("tpcc.json");
        let r = ok(&[
            "workload",
            "run",
            "tpcc",
            "--url",
            &url,
            "--duration",
            "3",
            "--clients",
            "2",
            "--json",
            path_str(&json),
        ]);
        assert!(r.stdout.contains("new_order") && r.stdout.contains("tpmC"), "{}", r.stdout);
        let text = std::fs::read_to_string(&json).expect("json written");
        assert!(text.contains("\"series\"") && text.contains("\"stock_level\""), "{text}");
        let r = ok(&["workload", "check", "tpcc", "--url", &url]);
        assert!(r.stdout.contains("all checks passed"), "{}", r.stdout);

        let corrupt = "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 2;\n";
        let r = pistou_with_input(&["sql", "--url", &url], corrupt, LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = pistou(&["workload", "check", "tpcc", "--url", &url], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("condition 1 (3.3.2.1) violated: warehouse 1"), "{}", r.stderr);

        // AuctionMark shares no table with TPC-C (its item table is auction_item): no --drop.
        let r = pistou(&["workload", "run", "auctionmark", "--url", &url, "--duration", "1"], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("another workload's schema (tpcc), not AuctionMark"), "{}", r.stderr);
        ok(&["workload", "init", "auctionmark", "--url", &url, "--users", "50"]);
        ok(&["workload", "check", "auctionmark", "--url", &url]);
        let r = ok(&["workload", "run", "auctionmark", "--url", &url, "--duration", "3", "--clients", "2"]);
        assert!(r.stdout.contains("new_bid") && r.stdout.contains("get_item"), "{}", r.stdout);
        ok(&["workload", "check", "auctionmark", "--url", &url]);
        let corrupt = "UPDATE useracct SET u_rating = u_rating + 1 WHERE u_id = 'u0000003';\n";
        let r = pistou_with_input(&["sql", "--url", &url], corrupt, LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = pistou(&["workload", "check", "auctionmark", "--url", &url], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("invariant feedback_rating violated: user u0000003 has U_RATING"), "{}", r.stderr);

        ok(&["workload", "init", "transfer", "--url", &url, "--accounts", "50"]);
        ok(&["workload", "run", "transfer", "--url", &url, "--duration", "3", "--clients", "2"]);
        ok(&["workload", "check", "transfer", "--url", &url]);

        let r = pistou(&["workload", "run", "ycsb", "--url", &url, "--duration", "1"], LIMIT);
        assert_eq!(r.code, Some(1), "{}", r.stdout);
        assert!(r.stderr.contains("another workload's schema"), "{}", r.stderr);
        ok(&["workload", "init", "ycsb", "--url", &url, "--records", "200"]);
        ok(&["workload", "run", "ycsb", "--url", &url, "--duration", "2", "--clients", "2", "--mix", "F"]);
        ok(&["workload", "check", "ycsb", "--url", &url]);

        let r = pistou(&["workload", "run", "tpcc", "--url", &url, "--clients", "0"], LIMIT);
        assert_eq!(r.code, Some(2), "{}", r.stderr);

        let _ = gw.kill();
        let _ = gw.wait();
        assert!(cluster.stop().success());
    });
    tokio::time::timeout(Duration::from_secs(360), run).await.expect("test timed out").expect("test panicked");
}

#[test]
fn workload_reports_a_wrong_url() {
    let port = free_base_port(1).to_string();
    let url = format!("postgres://pistou@127.0.0.1:{port}/pistou");
    let r = pistou(&["workload", "init", "transfer", "--url", &url], LIMIT);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(r.stderr.contains(&format!("cannot connect to 127.0.0.1:{port}")), "{}", r.stderr);
}
