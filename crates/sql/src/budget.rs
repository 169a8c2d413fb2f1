//! Per-statement budgets (`Limits::max_computed_bytes`, `max_materialized_bytes`,
//! `max_work`): what a statement may still compute, keep and examine. Each amount is charged
//! when spent and never refunded, counted the same way at the client and every replica, so
//! all stop a statement at the same point with the same error (54000) naming the setting.

use crate::error::{err, Result, SqlState};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a statement's run may stop before its end other than by its limits. Neither changes
/// what a run that ends computes: a stopped run's result is thrown away.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interrupt<'a> {
    /// Stop with `WorkSliceUsed` after this much work: a replica's first attempt on its
    /// protocol thread, which runs a longer statement again off that thread.
    pub work_slice: Option<u64>,
    /// Stop with 57014 once set: nobody waits for the result any more.
    pub cancel: Option<&'a AtomicBool>,
}

#[derive(Debug)]
pub struct Budget<'a> {
    left: Cell<u64>,
    limit: u64,
    /// "computes … bytes of text": what the error says the statement did too much of.
    verb: &'static str,
    unit: &'static str,
    /// The cluster configuration's name for the limit.
    setting: &'static str,
    interrupt: Interrupt<'a>,
}

impl<'a> Budget<'a> {
    /// Text a statement's operators and functions make (each result when made).
    pub fn computed_text(limit: usize) -> Budget<'a> {
        Budget::new(limit as u64, "computes", "bytes of text", "sql.statement_max_computed_bytes")
    }

    /// Rows a statement keeps: scanned rows and join results.
    pub fn materialized_rows(limit: usize) -> Budget<'a> {
        Budget::new(limit as u64, "materializes", "bytes of rows", "sql.statement_max_materialized_bytes")
    }

    /// Rows read from storage, pairs of rows joins examine, rows moving window frames visit.
    pub fn work(limit: u64, interrupt: Interrupt<'a>) -> Budget<'a> {
        let unit = "units of work, rows read and pairs of rows examined";
        Budget { interrupt, ..Budget::new(limit, "does", unit, "sql.statement_max_work") }
    }

    fn new(limit: u64, verb: &'static str, unit: &'static str, setting: &'static str) -> Budget<'a> {
        Budget { left: Cell::new(limit), limit, verb, unit, setting, interrupt: Interrupt::default() }
    }

    /// Spends `amount` (54000 beyond the limit).
    pub fn charge(&self, amount: u64) -> Result<()> {
        match self.left.get().checked_sub(amount) {
            Some(left) => {
                self.left.set(left);
                if self.interrupt.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return err(SqlState::QueryCanceled, "canceling statement: its result is no longer wanted");
                }
                match self.interrupt.work_slice {
                    Some(slice) if self.limit - left > slice => {
                        err(SqlState::WorkSliceUsed, "statement continues off the protocol thread")
                    }
                    _ => Ok(()),
                }
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
        let b = Budget::work(10, Interrupt::default());
        assert!(b.charge(4).is_ok() && b.charge(6).is_ok());
        let e = b.charge(1).expect_err("over");
        assert_eq!(e.state, SqlState::ProgramLimitExceeded);
        assert!(e.message.contains("more than 10 units of work") && e.message.contains("sql.statement_max_work"));
        assert!(Budget::computed_text(3).charge(u64::MAX).is_err());
    }

    #[test]
    fn a_work_slice_stops_before_the_limit_and_a_cancel_stops_at_once() {
        let sliced = Budget::work(100, Interrupt { work_slice: Some(10), cancel: None });
        assert!(sliced.charge(10).is_ok());
        assert_eq!(sliced.charge(1).expect_err("past the slice").state, SqlState::WorkSliceUsed);
        let flag = AtomicBool::new(false);
        let cancellable = Budget::work(100, Interrupt { work_slice: None, cancel: Some(&flag) });
        assert!(cancellable.charge(1).is_ok());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(cancellable.charge(1).expect_err("cancelled").state, SqlState::QueryCanceled);
    }
}
