//! A fresh PostgreSQL database per test on the machine's server (127.0.0.1:5432, trust
//! auth), dropped when the test ends.

#![allow(dead_code)]

use tokio_postgres::NoTls;

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

pub struct TestDb {
    pub name: String,
    pub url: String,
    /// Held for the test's life: one workload test at a time on the shared server. Each runs
    /// a benchmark of several clients; run together they would measure each other, and their
    /// serializable transactions would share PostgreSQL's predicate-lock table (which a CI
    /// run once exhausted: 53200 "out of shared memory").
    _alone: tokio::sync::MutexGuard<'static, ()>,
}

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn admin(sql: &str) {
    let (client, conn) = tokio_postgres::connect(ADMIN_URL, NoTls).await.expect("connect to PostgreSQL");
    let task = tokio::spawn(conn);
    client.batch_execute(sql).await.expect(sql);
    drop(client);
    let _ = task.await;
}

impl TestDb {
    pub async fn create(tag: &str) -> TestDb {
        let alone = ONE_AT_A_TIME.lock().await;
        let name = format!("workload_{tag}_{}", std::process::id());
        admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        admin(&format!("CREATE DATABASE {name}")).await;
        let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        TestDb { name, url, _alone: alone }
    }

    pub async fn sql(&self, sql: &str) {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls).await.expect("connect");
        let task = tokio::spawn(conn);
        client.batch_execute(sql).await.expect(sql);
        drop(client);
        let _ = task.await;
    }

    pub async fn drop_db(self) {
        admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await;
    }
}
