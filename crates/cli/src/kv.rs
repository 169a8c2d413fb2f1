//! `pistou kv`: key-value operations against a running cluster, and the operation
//! syntax shared with the demo shell (`get k`, `put k v`, `delete k`).

use crate::files::{client_key_path, config_dir, load_config, read_key, ClientIdentity};
use crate::usage::Usage;
use anyhow::{bail, Result};
use pistou_client::{Client, ClientError, ClientOptions, Outcome, Txn};
use pistou_core::ClientId;

use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Get(String),
    /// The value is the rest of the line, so it may contain spaces.
    Put(String, String),
    Delete(String),
}

/// Parses one operation: `get K`, `put K V…`, `delete K` (or `del K`).
pub fn parse_op(text: &str) -> Result<Op, Usage> {
    let text = text.trim();
    let (verb, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    let one_key = |what: &str| -> Result<String, Usage> {
        if rest.is_empty() || rest.contains(char::is_whitespace) {
            return Err(Usage(format!("usage: {what} <key>")));
        }
        Ok(rest.to_string())
    };
    match verb.to_ascii_lowercase().as_str() {
        "get" => Ok(Op::Get(one_key("get")?)),
        "delete" | "del" => Ok(Op::Delete(one_key("delete")?)),
        "put" | "set" => {
            let (k, v) =
                rest.split_once(char::is_whitespace).ok_or_else(|| Usage("usage: put <key> <value>".into()))?;
            Ok(Op::Put(k.to_string(), v.trim().to_string()))
        }
        other => Err(Usage(format!("unknown operation {other:?}; expected get, put or delete"))),
    }
}

/// Operations separated by `;` or newlines.
pub fn parse_script(text: &str) -> Result<Vec<Op>, Usage> {
    let ops: Vec<Op> =
        text.split([';', '\n']).filter(|s| !s.trim().is_empty()).map(parse_op).collect::<Result<_, _>>()?;
    if ops.is_empty() {
        return Err(Usage("the transaction has no operations".into()));
    }
    Ok(ops)
}

/// Runs one operation inside `txn`; returns the line to show the user.
pub async fn apply(txn: &mut Txn, op: &Op) -> Result<String, ClientError> {
    Ok(match op {
        Op::Get(k) => match txn.get(k).await? {
            Some(v) => format!("{k} = {}", String::from_utf8_lossy(&v)),
            None => format!("{k} not found"),
        },
        Op::Put(k, v) => {
            txn.put(k, v.as_bytes())?;
            format!("{k} := {v}")
        }
        Op::Delete(k) => {
            txn.delete(k)?;
            format!("{k} deleted")
        }
    })
}

pub fn describe(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Committed { fast: true } => "committed (fast path)",
        Outcome::Committed { fast: false } => "committed (slow path)",
        Outcome::Aborted => "aborted",
    }
}

/// Connects as `client`, with the key from `key` or `<config dir>/keys/client-<id>.key`.
pub async fn connect(identity: &ClientIdentity, timeout: Duration) -> Result<Client> {
    let ClientIdentity { config: config_path, client, key } = identity;
    let (client, key) = (*client, key.clone());
    let config = load_config(config_path)?;
    if !config.clients.iter().any(|c| c.id == client) {
        let ids: Vec<String> = config.clients.iter().map(|c| c.id.to_string()).collect();
        return Err(Usage(format!(
            "client {client} is not in {} (clients: {})",
            config_path.display(),
            ids.join(", ")
        ))
        .into());
    }
    let key_path = key.unwrap_or_else(|| client_key_path(&config_dir(config_path), client));
    let key = match read_key(&key_path) {
        Ok(k) => Some(k),
        Err(_) if !config.crypto && !key_path.exists() => None,
        Err(e) => bail!(e),
    };
    let options = ClientOptions { op_timeout: timeout, ..ClientOptions::default() };
    Ok(Client::connect_with(config, ClientId(client), key, options).await?)
}

/// What a `pistou kv` invocation ended with.
pub enum KvResult {
    Done,
    Aborted,
}

/// Runs the operations, then shuts the client down so that replicas receive the
/// writeback before this process exits.
pub async fn run(client: &Client, ops: Vec<Op>, single: bool) -> Result<KvResult> {
    let result = run_ops(client, ops, single).await;
    client.shutdown().await;
    result
}

/// A single operation commits on its own, retrying aborts; a script is one attempt.
async fn run_ops(client: &Client, ops: Vec<Op>, single: bool) -> Result<KvResult> {
    if single {
        let op = ops.into_iter().next().ok_or_else(|| Usage("no operation".into()))?;
        let line = client
            .run_txn(|t| {
                let op = op.clone();
                Box::pin(async move { apply(t, &op).await })
            })
            .await?;
        match op {
            Op::Get(_) => out!("{line}"),
            _ => out!("{line}\nok"),
        }
        return Ok(KvResult::Done);
    }
    let mut txn = client.begin().await?;
    for op in &ops {
        out!("{}", apply(&mut txn, op).await?);
    }
    let outcome = txn.commit().await?;
    out!("{}", describe(outcome));
    Ok(if outcome.is_committed() { KvResult::Done } else { KvResult::Aborted })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_operations() {
        assert_eq!(parse_op("get a").ok(), Some(Op::Get("a".into())));
        assert_eq!(parse_op("  PUT b hello world ").ok(), Some(Op::Put("b".into(), "hello world".into())));
        assert_eq!(parse_op("del c").ok(), Some(Op::Delete("c".into())));
        for bad in ["", "get", "get a b", "put a", "frobnicate x", "delete"] {
            assert!(parse_op(bad).is_err(), "{bad:?} accepted");
        }
        let ops = parse_script("get a; put b 2;\n get b;").ok();
        assert_eq!(ops.map(|o| o.len()), Some(3));
        assert!(parse_script(" ; ").is_err());
    }
}
