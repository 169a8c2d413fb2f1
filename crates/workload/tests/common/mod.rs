//! A fresh PostgreSQL database per test on the machine's server (127.0.0.1:5432, trust
//! auth), dropped when the test ends.

#![allow(dead_code)]

use tokio_postgres::NoTls;

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

pub struct TestDb {
    pub name: String,
    pub url: String,
}

async fn admin(sql: &str) {
    let (client, conn) = tokio_postgres::connect(ADMIN_URL, NoTls).await.expect("connect to PostgreSQL");
    let task = tokio::spawn(conn);
    client.batch_execute(sql).await.expect(sql);
    drop(client);
    let _ = task.await;
}

impl TestDb {
    pub async fn create(tag: &str) -> TestDb {
        let name = format!("workload_{tag}_{}", std::process::id());
        admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        admin(&format!("CREATE DATABASE {name}")).await;
        let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        TestDb { name, url }
    }

    pub async fn sql(&self, sql: &str) {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls).await.expect("connect");
        let task = tokio::spawn(conn);
        client.batch_execute(sql).await.expect(sql);
        drop(client);
        let _ = task.await;
    }

    /// The PostgreSQL server's main process: the parent of this connection's backend.
    pub async fn postmaster_pid(&self) -> u32 {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls).await.expect("connect");
        let task = tokio::spawn(conn);
        let backend: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.expect("pid").get(0);
        drop(client);
        let _ = task.await;
        let stat = std::fs::read_to_string(format!("/proc/{backend}/stat")).expect("backend stat");
        let after_name = &stat[stat.rfind(')').expect("stat format") + 1..];
        after_name.split_whitespace().nth(1).expect("ppid").parse().expect("ppid number")
    }

    pub async fn drop_db(self) {
        admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await;
    }
}
