//! `pistou demo`: a one-shard cluster and an interactive key-value shell in one command.

use crate::cluster::Cluster;
use crate::files::config_path;
use crate::init::{init, InitSpec};
use crate::kv::{apply, connect, describe, parse_op, Op};
use crate::signals::stop_requested;
use anyhow::{Context, Result};
use pistou_client::{Client, Txn};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

const FIRST_DEMO_PORT: u16 = 7100;

const HELP: &str = "\
commands:
  get <key>            read a key
  put <key> <value>    write a key (the value is the rest of the line)
  delete <key>         delete a key
  begin                start a multi-operation transaction
  commit | abort       finish it (outside begin/commit, each operation commits alone)
  help                 this text
  \\q | quit | exit     stop the shell and the cluster (so do Ctrl-C and Ctrl-D)";

pub async fn run(dir: Option<PathBuf>, no_shell: bool) -> Result<()> {
    let (dir, temporary) = match dir {
        Some(d) => (d, false),
        None => (fresh_temp_dir()?, true),
    };
    let result = run_in(&dir, no_shell).await;
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

async fn run_in(dir: &Path, no_shell: bool) -> Result<()> {
    let config = config_path(dir);
    if !config.exists() {
        let base_port = free_port_range(6).context("no free range of 6 local ports found for the demo")?;
        let spec = InitSpec { shards: 1, f: 1, clients: 4, base_port, crypto: true, force: false };
        init(dir, &spec)?;
        out!("created a 1-shard cluster (f = 1, 6 replicas, ports {base_port}..{}) in {}", base_port + 5, dir.display());
    }
    let mut cluster = Cluster::start(&config, &Default::default()).await?;
    let outcome = async {
        cluster.wait_ready().await?;
        out!("cluster ready: {} replicas; logs in {}", cluster.pids().len(), cluster.log_dir.display());
        // The full path: under `cargo run`, `pistou` is usually not on PATH.
        let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "pistou".into());
        out!("from another terminal: {exe} kv --config {} get <key>", config.display());
        if no_shell {
            out!("press Ctrl-C to stop");
            return cluster.supervise(true, async { stop_requested().await; }).await;
        }
        let client = connect(&config, 1, None, Duration::from_secs(10)).await?;
        out!("type `help` for commands; \\q or Ctrl-D to quit");
        let result = tokio::select! {
            r = shell(client.clone()) => r,
            r = cluster.supervise(true, async { stop_requested().await; }) => r,
        };
        // Let the last writebacks reach the replicas before they stop.
        client.shutdown().await;
        result
    }
    .await;
    out!("stopping the cluster…");
    cluster.stop().await;
    outcome
}

/// The interactive loop. Stdin is read on a plain thread: tokio's stdin would keep the
/// runtime from shutting down while a read is pending.
async fn shell(client: Client) -> Result<()> {
    let (tx, mut lines) = mpsc::channel::<String>(16);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut txn: Option<Txn> = None;
    loop {
        let mut stdout = std::io::stdout();
        let _ = write!(stdout, "{}", if txn.is_some() { "pistou*> " } else { "pistou> " });
        let _ = stdout.flush();
        let Some(line) = lines.recv().await else {
            out!("");
            return Ok(());
        };
        let line = line.trim();
        match line {
            "" => {}
            "\\q" | "quit" | "exit" => return Ok(()),
            "help" | "\\h" | "?" => out!("{HELP}"),
            "begin" => match txn {
                Some(_) => out!("already in a transaction: commit or abort it first"),
                None => match client.begin().await {
                    Ok(t) => txn = Some(t),
                    Err(e) => out!("error: {e}"),
                },
            },
            "commit" => match txn.take() {
                None => out!("no transaction: use begin first"),
                Some(t) => match t.commit().await {
                    Ok(o) => out!("{}", describe(o)),
                    Err(e) => out!("error: {e}"),
                },
            },
            "abort" => match txn.take() {
                None => out!("no transaction: use begin first"),
                Some(t) => {
                    t.abort();
                    out!("aborted");
                }
            },
            _ => match parse_op(line) {
                Err(e) => out!("{e} (type `help`)"),
                Ok(op) => match &mut txn {
                    Some(t) => match apply(t, &op).await {
                        Ok(out) => out!("{out}"),
                        Err(e) => out!("error: {e}"),
                    },
                    None => autocommit(&client, op).await,
                },
            },
        }
    }
}

/// One operation in its own transaction, retried on abort.
async fn autocommit(client: &Client, op: Op) {
    let result = client
        .run_txn(|t| {
            let op = op.clone();
            Box::pin(async move { apply(t, &op).await })
        })
        .await;
    match result {
        Ok(out) => out!("{out}"),
        Err(e) => out!("error: {e}"),
    }
}

fn fresh_temp_dir() -> Result<PathBuf> {
    let nonce: u64 = rand::random();
    let dir = std::env::temp_dir().join(format!("pistou-demo-{}-{nonce:x}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// The first base port from 7100 up whose `count` ports can all be bound now.
fn free_port_range(count: u16) -> Option<u16> {
    (0..200u16).map(|i| FIRST_DEMO_PORT + i * 10).find(|&base| {
        (base..base + count).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
    })
}
