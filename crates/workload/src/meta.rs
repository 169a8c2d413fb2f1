//! Which data set a database holds. `init` records its workload and parameters in the table
//! `pistou_workload` as its last step, so `run` and `check` can tell a complete data set
//! from a missing one, an interrupted `init`, or another workload's schema.

use crate::conn::{error_text, sqlstate, Session};
use anyhow::{anyhow, bail, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

const META_DDL: &str = "CREATE TABLE pistou_workload (name TEXT PRIMARY KEY, params TEXT NOT NULL)";
const UNDEFINED_TABLE: &str = "42P01";

/// A workload's identity as `init` records it.
pub struct DataSet {
    /// The command-line name (`tpcc`).
    pub name: &'static str,
    /// The name people use (`TPC-C`).
    pub label: &'static str,
    /// Its tables, created by `init` (and dropped by `init --drop`).
    pub tables: &'static [&'static str],
}

/// The workloads recorded in the database (none if it has no `pistou_workload` table).
async fn recorded(s: &mut Session) -> Result<Vec<(String, String)>> {
    match s.client.query("SELECT name, params FROM pistou_workload", &[]).await {
        Ok(rows) => rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect(),
        Err(e) if sqlstate(&e) == Some(UNDEFINED_TABLE) => Ok(Vec::new()),
        Err(e) => Err(anyhow!("cannot read the workload catalog: {}", error_text(&e))),
    }
}

async fn table_exists(s: &mut Session, table: &str) -> Result<bool> {
    match s.client.query(&format!("SELECT 1 FROM {table} LIMIT 1"), &[]).await {
        Ok(_) => Ok(true),
        Err(e) if sqlstate(&e) == Some(UNDEFINED_TABLE) => Ok(false),
        Err(e) => Err(anyhow!("cannot look at table {table}: {}", error_text(&e))),
    }
}

/// Runs a data set's CREATE statements, naming the one that fails ("CREATE TABLE flight: …").
pub async fn create_tables(s: &mut Session, ddl: &[&str]) -> Result<()> {
    for statement in ddl {
        let first_words = statement.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        s.client.batch_execute(statement).await.map_err(|e| anyhow!("{first_words}: {}", error_text(&e)))?;
    }
    Ok(())
}

/// Before `init`: the database must not already hold this data set (complete or not),
/// unless `drop` asks to replace it, in which case its tables are dropped (and the record of
/// any other data set that shared one of them).
pub async fn prepare_init(s: &mut Session, set: &DataSet, drop: bool) -> Result<()> {
    let recorded_names: Vec<String> = recorded(s).await?.into_iter().map(|(name, _)| name).collect();
    let complete = recorded_names.iter().any(|name| name == set.name);
    let mut present = Vec::new();
    for table in set.tables {
        if table_exists(s, table).await? {
            present.push(*table);
        }
    }
    if !drop {
        if complete {
            bail!("the database already holds a {} data set: pass --drop to replace it", set.label);
        }
        if !present.is_empty() {
            bail!(
                "the database already has table(s) {} (an interrupted init, or another schema): pass --drop to replace them",
                present.join(", ")
            );
        }
    }
    for table in &present {
        s.client
            .batch_execute(&format!("DROP TABLE {table}"))
            .await
            .map_err(|e| anyhow!("cannot drop table {table}: {}", error_text(&e)))?;
    }
    // Another recorded data set that had one of these tables (TPC-C's and SEATS's customer)
    // is incomplete now: forget it, so that its run and check say so instead of failing on
    // this workload's table.
    let broken = crate::DATA_SETS.iter().filter(|other| {
        other.name != set.name
            && recorded_names.iter().any(|n| n == other.name)
            && other.tables.iter().any(|t| present.contains(t))
    });
    for name in broken.map(|other| other.name).chain(complete.then_some(set.name)) {
        s.client
            .execute("DELETE FROM pistou_workload WHERE name = $1", &[&name])
            .await
            .map_err(|e| anyhow!("cannot clear the workload catalog: {}", error_text(&e)))?;
    }
    Ok(())
}

/// After a complete `init`: records the data set and its parameters.
pub async fn record<P: Serialize>(s: &mut Session, set: &DataSet, params: &P) -> Result<()> {
    if !table_exists(s, "pistou_workload").await? {
        s.client
            .batch_execute(META_DDL)
            .await
            .map_err(|e| anyhow!("cannot create the workload catalog: {}", error_text(&e)))?;
    }
    let text = serde_json::to_string(params)?;
    s.client
        .execute("INSERT INTO pistou_workload (name, params) VALUES ($1, $2)", &[&set.name, &text])
        .await
        .map_err(|e| anyhow!("cannot record the data set: {}", error_text(&e)))?;
    Ok(())
}

/// Before `run` and `check`: the parameters `init` recorded, or a message saying what the
/// database holds instead.
pub async fn load<P: DeserializeOwned>(s: &mut Session, set: &DataSet) -> Result<P> {
    let recorded = recorded(s).await?;
    if let Some((_, params)) = recorded.iter().find(|(name, _)| name == set.name) {
        return serde_json::from_str(params).map_err(|e| {
            anyhow!("the recorded {} parameters are unreadable ({e}): run init again with --drop", set.label)
        });
    }
    let others: Vec<&str> = recorded.iter().map(|(name, _)| name.as_str()).collect();
    // This workload's tables left by an interrupted init (or by another init --drop that
    // replaced a shared one), not counting those a recorded data set owns too.
    let owned_by_others = |table: &&str| {
        crate::DATA_SETS.iter().any(|other| others.contains(&other.name) && other.tables.contains(table))
    };
    for table in set.tables.iter().filter(|t| !owned_by_others(t)) {
        if table_exists(s, table).await? {
            bail!(
                "the {} data set is incomplete (table {table} exists but init did not finish): run `pistou workload init {} --drop`",
                set.label,
                set.name
            );
        }
    }
    if !others.is_empty() {
        bail!(
            "the database holds another workload's schema ({}), not {}: run `pistou workload init {}` first",
            others.join(", "),
            set.label,
            set.name
        );
    }
    bail!("no {} data set found: run `pistou workload init {}` first", set.label, set.name)
}
