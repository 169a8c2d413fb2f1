//! The SQL oracle (Pesto): replays the committed SQL transactions of correct clients in
//! timestamp order on a model database (the same engine over a plain in-memory store, one
//! transaction at a time) and checks that every statement returned what it returns there.

use crate::sql_workload::SqlTxnLog;
use pistou_sql::{Database, Output, StatementKind};
use pistou_txn::SqlOutput;
use pistou_wire::Decision;

/// Checks the history; returns the number of transactions replayed.
pub fn check(logs: &[SqlTxnLog]) -> Result<usize, String> {
    check_observed(logs, |_, _| Ok(()))
}

/// [`check`], showing `observe` the model after each committed transaction is applied.
pub fn check_observed(
    logs: &[SqlTxnLog],
    mut observe: impl FnMut(&SqlTxnLog, &mut Database) -> Result<(), String>,
) -> Result<usize, String> {
    let mut committed: Vec<&SqlTxnLog> = logs.iter().filter(|l| l.decision == Some(Decision::Commit)).collect();
    committed.sort_by_key(|l| l.ts);
    let mut model = Database::new();
    for txn in &committed {
        let ddl = txn.statements.iter().any(|s| matches!(s.output, SqlOutput::Ddl { .. }));
        let where_ = |what: &str| format!("client {} transaction at {:?}: {what}", txn.client, txn.ts);
        // The model runs schema changes outside transaction blocks; a DDL transaction holds
        // nothing else.
        if !ddl {
            model.execute("BEGIN").map_err(|e| where_(&format!("model BEGIN: {e}")))?;
        }
        for st in &txn.statements {
            let exec = model.execute_with(&st.sql, &st.params).map_err(|e| {
                where_(&format!("`{}` {:?} succeeded in the cluster but fails on the model: {e}", st.sql, st.params))
            })?;
            let same = match (&exec.output, &st.output) {
                (Output::Rows { rows: m, .. }, SqlOutput::Rows { rows: c, .. }) => m == c,
                (
                    Output::Affected { count: m, returning: mr, .. },
                    SqlOutput::Affected { count: c, returning: cr, .. },
                ) => m == c && mr.as_ref().map(|r| &r.1) == cr.as_ref().map(|r| &r.1),
                // A schema change in both, or an `IF [NOT] EXISTS` no-op in both.
                (Output::Catalog(m), SqlOutput::Ddl { command, .. }) => {
                    StatementKind::Ddl(m.clone().map(Box::new)).command() == *command
                }
                _ => false,
            };
            if !same {
                return Err(where_(&format!(
                    "`{}` {:?} returned {:?} in the cluster but {:?} on the model\n{}",
                    st.sql,
                    st.params,
                    st.output,
                    exec.output,
                    history(&committed, logs)
                )));
            }
        }
        if !ddl {
            model.execute("COMMIT").map_err(|e| where_(&format!("model COMMIT: {e}")))?;
        }
        observe(txn, &mut model).map_err(|e| where_(&e))?;
    }
    Ok(committed.len())
}

/// The whole history, for a failure report: committed transactions in timestamp order with
/// what each statement returned, then the transactions that did not commit.
fn history(committed: &[&SqlTxnLog], logs: &[SqlTxnLog]) -> String {
    let mut out = String::from("history (committed, in timestamp order):\n");
    for t in committed {
        out += &format!("{:?} client {}\n", t.ts, t.client);
        for s in &t.statements {
            out += &format!("    {} {:?} -> {:?}\n", s.sql, s.params, s.output);
        }
    }
    for t in logs.iter().filter(|l| l.decision != Some(Decision::Commit)) {
        let statements: Vec<_> = t.statements.iter().map(|s| (&s.sql, &s.params)).collect();
        out += &format!("not committed: {:?} client {} {statements:?}\n", t.ts, t.client);
    }
    out
}
