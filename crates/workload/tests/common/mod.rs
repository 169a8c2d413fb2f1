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

    pub async fn drop_db(self) {
        admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await;
    }
}
