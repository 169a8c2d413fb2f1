//! The two-table workload's conserved total. Correct clients' transactions move value between
//! `accounts` balances and `ledger` amounts without changing the sum ([`LEDGER_TOTAL`]), and
//! every committed audit reads both tables in one transaction, so it must see that sum plus
//! exactly what the committed Byzantine transactions ordered before it changed: each one's
//! change is the model's total after it minus the total before it, as the SQL oracle replays
//! the history in timestamp order ([`ByzantineDeltas`] observes the replay).

use crate::sql_byz::BYZANTINE_CLIENT;
use crate::sql_workload::{SqlTxnLog, AUDIT_ACCOUNTS, AUDIT_LEDGER, LEDGER_SETUP, LEDGER_TOTAL};
use pistou_core::Timestamp;
use pistou_sql::{Database, Output, Value};
use pistou_txn::SqlOutput;
use pistou_wire::Decision;

/// How much each committed Byzantine transaction changed the total, in timestamp order.
#[derive(Debug, Default)]
pub struct ByzantineDeltas {
    /// The model's total after the last transaction observed.
    last: i64,
    deltas: Vec<(Timestamp, i64)>,
}

impl ByzantineDeltas {
    /// An observer for `sql_oracle::check_observed`: called after each committed transaction.
    pub fn observe(&mut self, txn: &SqlTxnLog, model: &mut Database) -> Result<(), String> {
        let total = model_total(model)?;
        if txn.client == BYZANTINE_CLIENT {
            self.deltas.push((txn.ts, total - self.last));
        }
        self.last = total;
        Ok(())
    }

    /// The net change by the Byzantine transactions ordered before `ts`.
    fn before(&self, ts: Timestamp) -> i64 {
        self.deltas.iter().filter(|(t, _)| *t < ts).map(|(_, d)| d).sum()
    }
}

/// Sum of balances and ledger amounts in the model (a table not created yet adds nothing).
fn model_total(model: &mut Database) -> Result<i64, String> {
    let mut total = 0;
    for (table, sql) in [
        ("accounts", "SELECT CAST(coalesce(sum(balance), 0) AS INT) FROM accounts"),
        ("ledger", "SELECT CAST(coalesce(sum(amount), 0) AS INT) FROM ledger"),
    ] {
        if model.catalog().table(table).is_none() {
            continue;
        }
        match model.execute(sql).map_err(|e| format!("model total: {e}"))? {
            Output::Rows { rows, .. } => match rows.first().and_then(|r| r.first()) {
                Some(Value::Int(v)) => total += v,
                other => return Err(format!("model total of {table}: {other:?}")),
            },
            other => return Err(format!("model total of {table}: {other:?}")),
        }
    }
    Ok(total)
}

/// What [`check_ledger_audits`] checked.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditReport {
    /// Committed audits whose total was checked.
    pub checked: usize,
    /// Of those, the ones that had to see a total other than [`LEDGER_TOTAL`] (Byzantine
    /// writes ordered before them changed it).
    pub shifted: usize,
}

/// Checks the total in every committed audit of the two-table workload (the sum of balances
/// read on one shard plus the sum of ledger amounts read on the other, in one transaction):
/// [`LEDGER_TOTAL`] plus the changes of the Byzantine transactions ordered before it.
pub fn check_ledger_audits(logs: &[SqlTxnLog], byzantine: &ByzantineDeltas) -> Result<AuditReport, String> {
    let committed = || logs.iter().filter(|l| l.decision == Some(Decision::Commit));
    // Audits ordered before the last setup transaction see the tables half filled.
    let is_setup = |l: &SqlTxnLog| l.statements.iter().any(|s| LEDGER_SETUP.contains(&s.sql.as_str()));
    let Some(setup) = committed().filter(|l| is_setup(l)).map(|l| l.ts).max() else {
        return Ok(AuditReport::default());
    };
    let mut report = AuditReport::default();
    for log in committed().filter(|l| l.ts > setup) {
        let [accounts, ledger, ..] = log.statements.as_slice() else { continue };
        if accounts.sql != AUDIT_ACCOUNTS || ledger.sql != AUDIT_LEDGER {
            continue;
        }
        let balances = match &accounts.output {
            SqlOutput::Rows { rows, .. } => rows.first().and_then(|r| r.first()).cloned(),
            _ => None,
        };
        let entries = match &ledger.output {
            SqlOutput::Rows { rows, .. } => rows.first().and_then(|r| r.get(1)).cloned(),
            _ => None,
        };
        let expected = LEDGER_TOTAL + byzantine.before(log.ts);
        match (balances, entries) {
            (Some(Value::Int(b)), Some(Value::Int(e))) if b + e == expected => {
                report.checked += 1;
                report.shifted += (expected != LEDGER_TOTAL) as usize;
            }
            (b, e) => {
                return Err(format!(
                "client {} audit at {:?} read balances {b:?} and ledger amounts {e:?}; they must add up to {expected} \
                     ({LEDGER_TOTAL} changed by {} by the Byzantine writes ordered before it)",
                log.client,
                log.ts,
                expected - LEDGER_TOTAL
            ))
            }
        }
    }
    Ok(report)
}
