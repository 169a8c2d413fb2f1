//! `pistou kv` and `pistou demo` end to end, as a user would run them.

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_commands_against_a_running_cluster() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 2, 2);
        let cluster = ClusterProc::up(dir.path(), false);
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let kv = |args: &[&str]| {
            let mut all = vec!["kv", "--config", &config];
            all.extend_from_slice(args);
            pistou(&all, LIMIT)
        };
        let r = kv(&["put", "greeting", "hello world"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = kv(&["--client", "2", "get", "greeting"]);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "greeting = hello world"), "{}", r.stderr);
        let r = kv(&["txn", "get greeting; put n 1; get n; delete greeting; get greeting"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(&lines[..5], ["greeting = hello world", "n := 1", "n = 1", "greeting deleted", "greeting not found"]);
        assert!(lines[5].starts_with("committed"), "{}", r.stdout);
        let r = kv(&["get", "greeting"]);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "greeting not found"));
        let status = cluster.stop();
        assert!(status.success());
    });
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("test timed out").expect("test panicked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_shell_session_then_nothing_left() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        let config = init_cluster(dir.path(), 1, 1);
        let mut child = Command::new(PISTOU)
            .args(["demo", "--dir", path_str(dir.path())])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn demo");
        let script = "put a 1\nget a\nbegin\nput b two words\nget b\ncommit\nget b\nbogus\n\\q\n";
        child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("write script");
        let deadline = Instant::now() + LIMIT;
        while child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("demo did not exit");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "demo failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        for expected in ["cluster ready", "a = 1", "b = two words", "committed", "unknown operation", "stopping the cluster"] {
            assert!(stdout.contains(expected), "missing {expected:?} in demo output:\n{stdout}");
        }
        // Every replica port is free again: no replica outlived the demo.
        for id in config.all_replicas() {
            let addr = &config.replica(id).expect("replica").addr;
            assert!(std::net::TcpListener::bind(addr).is_ok(), "{addr} still in use after the demo");
        }
    });
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out").expect("test panicked");
}

/// A real Byzantine client stalls after ST1 on `alice`; a user's transaction that reads `alice`
/// depends on the stalled write and still commits, because the client library finishes the
/// stalled transaction (Basil §5) before or while retrying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_byzantine_write_does_not_block_readers() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 3);
        let cluster = ClusterProc::up(dir.path(), false);
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let r = pistou(&["kv", "--config", &config, "put", "alice", "1"], LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let byz = ["byzantine-client", "--config", &config, "--client", "3", "--fault", "stall-late", "--keys", "alice", "--txns", "1"];
        let r = pistou(&byz, LIMIT);
        assert_eq!((r.code, r.stdout.trim()), (Some(0), "started 1 faulty transactions"), "{}", r.stderr);
        let r = pistou(&["kv", "--config", &config, "txn", "get alice; put bob 2"], LIMIT);
        assert_eq!(r.code, Some(0), "stdout: {} stderr: {}", r.stdout, r.stderr);
        // The stalled transaction was finished: alice holds what the Byzantine client wrote
        // (an 8-byte balance), not the user's "1".
        let r = pistou(&["kv", "--config", &config, "get", "alice"], LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_ne!(r.stdout.trim(), "alice = 1", "the stalled write was neither finished nor visible");
        let r = pistou(&["byzantine-client", "--config", &config, "--client", "3", "--fault", "nonsense", "--keys", "a"], LIMIT);
        assert_eq!(r.code, Some(2), "an unknown fault is a usage error: {}", r.stderr);
        let status = cluster.stop();
        assert!(status.success());
    });
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("test timed out").expect("test panicked");
}
