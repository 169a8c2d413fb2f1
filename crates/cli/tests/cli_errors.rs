//! Bad input gets a clear message and a non-zero exit code, never a panic.

mod common;

use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn assert_fails(args: &[&str], code: i32, needle: &str) {
    let run = pistou(args, LIMIT);
    assert_eq!(run.code, Some(code), "pistou {args:?}: stdout {} stderr {}", run.stdout, run.stderr);
    assert!(run.stderr.contains(needle), "pistou {args:?}: expected {needle:?} in stderr: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "pistou {args:?} panicked: {}", run.stderr);
}

#[test]
fn usage_errors_exit_2() {
    assert_fails(&[], 2, "Usage");
    assert_fails(&["frobnicate"], 2, "unrecognized subcommand");
    assert_fails(&["init"], 2, "--dir");
    assert_fails(&["kv", "--config", "x.toml", "launch", "k"], 2, "unrecognized subcommand");
    assert_fails(&["init", "--dir", "/nonexistent/x", "--f", "abc"], 2, "invalid value");
}

#[test]
fn a_bad_replica_thread_count_is_a_usage_error() {
    for bad in ["abc", "0", "1025", ""] {
        let run = pistou_with(
            &["replica", "--config", "/nonexistent/cluster.toml", "--id", "s0r0"],
            "",
            &[("PISTOU_REPLICA_THREADS", bad)],
            LIMIT,
        );
        assert_eq!(run.code, Some(2), "PISTOU_REPLICA_THREADS={bad:?}: {}", run.stderr);
        assert!(run.stderr.contains("PISTOU_REPLICA_THREADS must be"), "{}", run.stderr);
    }
}

#[test]
fn init_checks_arguments_and_refuses_to_overwrite() {
    let dir = temp_dir();
    let d = path_str(dir.path());
    assert_fails(&["init", "--dir", d, "--base-port", "5430"], 2, "5432");
    assert_fails(&["init", "--dir", d, "--base-port", "65533"], 2, "65535");
    assert_fails(&["init", "--dir", d, "--f", "0"], 2, "--f");
    assert_eq!(pistou(&["init", "--dir", d, "--base-port", "41000"], LIMIT).code, Some(0));
    assert_fails(&["init", "--dir", d, "--base-port", "41000"], 2, "already exists");
    assert_eq!(pistou(&["init", "--dir", d, "--base-port", "41000", "--force"], LIMIT).code, Some(0));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("keys/replica-s0-r0.key")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "key files must be private");
}

#[test]
fn bad_files_exit_1() {
    let dir = temp_dir();
    let d = path_str(dir.path());
    let missing = format!("{d}/missing.toml");
    assert_fails(&["replica", "--config", &missing, "--id", "s0r0"], 1, "cannot read configuration");
    let garbage = format!("{d}/garbage.toml");
    std::fs::write(&garbage, "f = [[[ this is not toml").unwrap();
    assert_fails(&["kv", "--config", &garbage, "get", "a"], 1, "bad configuration");
    let invalid = format!("{d}/invalid.toml");
    std::fs::write(&invalid, "f = 1\nshards = []\nclients = []\n").unwrap();
    assert_fails(&["replica", "--config", &invalid, "--id", "s0r0"], 1, "bad configuration");

    let cluster = dir.path().join("c");
    let c = path_str(&cluster);
    assert_eq!(pistou(&["init", "--dir", c, "--base-port", "42000"], LIMIT).code, Some(0));
    let config = format!("{c}/cluster.toml");
    std::fs::write(cluster.join("keys/replica-s0-r1.key"), "not hex").unwrap();
    assert_fails(&["replica", "--config", &config, "--id", "s0r1"], 1, "not a hex secret key");
    std::fs::remove_file(cluster.join("keys/client-2.key")).unwrap();
    assert_fails(&["kv", "--config", &config, "--client", "2", "get", "a"], 1, "cannot read key file");
}

#[test]
fn bad_ids_exit_2() {
    let dir = temp_dir();
    let d = path_str(dir.path());
    assert_eq!(pistou(&["init", "--dir", d, "--base-port", "43000"], LIMIT).code, Some(0));
    let config = format!("{d}/cluster.toml");
    assert_fails(&["replica", "--config", &config, "--id", "x9"], 2, "bad replica id");
    assert_fails(&["replica", "--config", &config, "--id", "s0r9"], 2, "not in");
    assert_fails(&["replica", "--config", &config, "--shard", "3", "--index", "0"], 2, "not in");
    assert_fails(&["replica", "--config", &config], 2, "--id");
    assert_fails(&["replica", "--config", &config, "--id", "s0r0", "--shard", "0"], 2, "cannot be used with");
    assert_fails(&["kv", "--config", &config, "--client", "99", "get", "a"], 2, "client 99 is not in");
    assert_fails(&["kv", "--config", &config, "txn", "get a; launch b"], 2, "unknown operation");
}

/// A replica whose data file is not a log (overwritten, or another program's file) refuses
/// to start and names the file; it never starts empty in its place.
#[test]
fn a_replica_with_a_corrupt_data_file_refuses_to_start_and_names_it() {
    let dir = temp_dir();
    init_cluster(dir.path(), 1, 1);
    let data = dir.path().join("data").join("replica-s0-r0");
    let file = data.join("log.redb");
    std::fs::write(&file, b"this is not a redb database, but it is where the log should be").expect("write");
    let config = dir.path().join("cluster.toml");
    let run = pistou(&["replica", "--config", path_str(&config), "--id", "s0r0"], LIMIT);
    assert_eq!(run.code, Some(1), "stdout {} stderr {}", run.stdout, run.stderr);
    assert!(run.stderr.contains(path_str(&file)), "the error names the file: {}", run.stderr);
    assert!(!run.stderr.contains("serving"), "{}", run.stderr);
    let text = std::fs::read(&file).expect("file kept");
    assert!(text.starts_with(b"this is not"), "the file is left for the operator, not replaced");
}

/// `pistou status` reads the replicas' metrics: with `[metrics]` off it says how to turn
/// them on instead of reporting every replica down.
#[test]
fn status_without_metrics_says_to_enable_them() {
    let dir = temp_dir();
    let d = path_str(dir.path());
    let run = pistou(&["init", "--dir", d, "--base-port", &free_base_port(13).to_string()], LIMIT);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let path = dir.path().join("cluster.toml");
    let text = std::fs::read_to_string(&path).expect("config");
    assert!(text.contains("enabled = true"), "{text}");
    std::fs::write(&path, text.replace("enabled = true", "enabled = false")).expect("write");
    assert_fails(&["status", "--config", path_str(&path)], 1, "[metrics] enabled = true");
    assert_fails(&["status"], 2, "--config");
}
