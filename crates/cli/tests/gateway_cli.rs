//! `pistou gateway` as an operator runs it: in front of `pistou cluster up`, reached by the
//! `pistou sql` shell, with password authentication; SIGINT stops it cleanly.

mod common;

use common::*;
use std::process::{Child, Command};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn interrupt(mut child: Child) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    for _ in 0..200 {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("the gateway did not stop on SIGINT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_subcommand_serves_sql_and_checks_passwords() {
    let run = tokio::task::spawn_blocking(|| {
        let dir = temp_dir();
        init_cluster(dir.path(), 1, 2);
        let cluster = ClusterProc::up(dir.path());
        let config = format!("{}/cluster.toml", path_str(dir.path()));
        let port = free_base_port(1);
        // The password from a file, not the command line (where `ps` shows it).
        let secret = dir.path().join("gateway.password");
        std::fs::write(&secret, "s3cret\n").expect("password file");
        let gw = gateway(&config, port, &["--user", "app", "--password-file", path_str(&secret)]);
        let url = format!("postgres://app:s3cret@127.0.0.1:{port}/pistou");
        let script = "CREATE TABLE kv (k TEXT PRIMARY KEY, v INT NOT NULL);\n\
                      INSERT INTO kv VALUES ('a', 1), ('b', 2);\n\
                      SELECT k, v FROM kv ORDER BY k;\n";
        let r = pistou_with_input(&["sql", "--url", &url], script, LIMIT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(
            r.stdout, "CREATE TABLE\nINSERT 0 2\n k | v\n---+---\n a | 1\n b | 2\n(2 rows)\n",
            "stderr: {}",
            r.stderr
        );
        let wrong = format!("postgres://app:nope@127.0.0.1:{port}/pistou");
        let r = pistou_with_input(&["sql", "--url", &wrong], "", LIMIT);
        assert_eq!(r.code, Some(1), "a wrong password must not connect: {}", r.stdout);
        assert!(r.stderr.contains("28P01") || r.stderr.contains("password"), "{}", r.stderr);
        assert!(interrupt(gw).success(), "the gateway exits 0 on SIGINT");
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(), "the gateway port is free again");
        // Bad arguments are usage errors (exit 2) with a clear message.
        let r = pistou(
            &["gateway", "--config", &config, "--password-method", "md5", "--user", "u", "--password", "p"],
            LIMIT,
        );
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains("--password-method must be scram or cleartext"), "{}", r.stderr);
        let r = pistou(&["gateway", "--config", &config, "--user", "u"], LIMIT);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains("--user needs a password"), "{}", r.stderr);
        let missing = dir.path().join("no-such-file");
        let r = pistou(&["gateway", "--config", &config, "--user", "u", "--password-file", path_str(&missing)], LIMIT);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains("--password-file"), "{}", r.stderr);
        assert!(cluster.stop().success());
    });
    tokio::time::timeout(Duration::from_secs(120), run).await.expect("test timed out").expect("test panicked");
}
