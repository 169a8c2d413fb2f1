//! Per-statement budgets (`Limits::max_computed_bytes`, `max_materialized_bytes`,
//! `max_work`): what a statement may still compute, keep and examine. Each amount is charged
//! when spent and never refunded, counted the same way at the client and every replica, so
//! all stop a statement at the same point with the same error (54000) naming the setting.

use crate::error::{err, Result, SqlState};
use std::cell::Cell;

#[derive(Debug)]
pub struct Budget {
    left: Cell<u64>,
    limit: u64,
    /// "computes … bytes of text": what the error says the statement did too much of.
    verb: &'static str,
    unit: &'static str,
    /// The cluster configuration's name for the limit.
    setting: &'static str,
}

impl Budget {
    /// Text a statement's operators and functions make (each result when made).
    pub fn computed_text(limit: usize) -> Budget {
        Budget::new(limit as u64, "computes", "bytes of text", "sql.statement_max_computed_bytes")
    }

    /// Rows a statement keeps: scanned rows and join results.
    pub fn materialized_rows(limit: usize) -> Budget {
        Budget::new(limit as u64, "materializes", "bytes of rows", "sql.statement_max_materialized_bytes")
    }

    /// Rows read from storage, pairs of rows joins examine, rows moving window frames visit.
    pub fn work(limit: u64) -> Budget {
        Budget::new(limit, "does", "units of work, rows read and pairs of rows examined", "sql.statement_max_work")
    }

    fn new(limit: u64, verb: &'static str, unit: &'static str, setting: &'static str) -> Budget {
        Budget { left: Cell::new(limit), limit, verb, unit, setting }
    }

    /// Spends `amount` (54000 beyond the limit).
    pub fn charge(&self, amount: u64) -> Result<()> {
        match self.left.get().checked_sub(amount) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => err(
                SqlState::ProgramLimitExceeded,
                format!(
                    "statement {} more than {} {} ({} in the cluster configuration)",
                    self.verb, self.limit, self.unit, self.setting
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_stops_at_its_limit_and_names_the_setting() {
        let b = Budget::work(10);
        assert!(b.charge(4).is_ok() && b.charge(6).is_ok());
        let e = b.charge(1).expect_err("over");
        assert_eq!(e.state, SqlState::ProgramLimitExceeded);
        assert!(e.message.contains("more than 10 units of work") && e.message.contains("sql.statement_max_work"));
        assert!(Budget::computed_text(3).charge(u64::MAX).is_err());
    }
}
