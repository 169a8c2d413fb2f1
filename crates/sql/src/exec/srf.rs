//! Set-returning functions of a select list (`unnest`, `generate_subscripts`,
//! `generate_series`), run as PostgreSQL 10+ runs them: all calls of the list in lockstep
//! over each input row, which gives as many rows as its longest call (shorter calls give
//! NULL after their end; a row whose calls are all empty or NULL gives none). The rows produced count against
//! `Limits::max_rows`, like any intermediate result.

use super::*;
use crate::plan::{SrfCall, SrfKind};
use crate::SqlType;

impl Exec<'_> {
    /// Each row of `rows` followed by the values of `calls`, once per value (see above).
    pub(super) fn set_returning(&mut self, rows: Vec<Row>, calls: &[SrfCall]) -> Result<Vec<Row>> {
        if calls.is_empty() {
            return Ok(rows);
        }
        let mut out = Vec::new();
        for row in rows {
            let mut columns = Vec::with_capacity(calls.len());
            for call in calls {
                let room = self.reader.max_rows.saturating_sub(out.len());
                columns.push(self.srf_values(call, &row, room)?);
            }
            let n = columns.iter().map(Vec::len).max().unwrap_or(0);
            if out.len().saturating_add(n) > self.reader.max_rows {
                return err(
                    SqlState::ProgramLimitExceeded,
                    format!(
                        "set-returning functions produced more than {} rows (sql.statement_max_rows in the cluster configuration)",
                        self.reader.max_rows
                    ),
                );
            }
            for i in 0..n {
                let mut r = Vec::with_capacity(row.len() + calls.len());
                r.extend_from_slice(&row);
                r.extend(columns.iter().map(|c| c.get(i).cloned().unwrap_or(Value::Null)));
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The values one call returns for `row`; `room`: how many more rows the statement may
    /// produce.
    fn srf_values(&mut self, call: &SrfCall, row: &[Value], room: usize) -> Result<Vec<Value>> {
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.eval_row(a, row)?);
        }
        let first = args.first().cloned().unwrap_or(Value::Null);
        match call.kind {
            SrfKind::Unnest => crate::array::elements(&first, call.arg_type),
            SrfKind::GenerateSubscripts => {
                let elements = crate::array::elements(&first, call.arg_type)?;
                let dimension = args.get(1).cloned().unwrap_or(Value::Int(1));
                // Arrays here have one dimension: any other has no subscripts.
                if dimension != Value::Int(1) || first.is_null() {
                    return Ok(Vec::new());
                }
                let lower = crate::array::lower_bound(call.arg_type);
                Ok((0..elements.len() as i64).map(|i| Value::Int(lower + i)).collect())
            }
            SrfKind::GenerateSeries => series(&args, call.arg_type, room),
        }
    }
}

/// `generate_series(start, stop, step)` over timestamps, the step an interval: no rows if an
/// argument is NULL, 22023 for a zero step, 54000 beyond `room` rows.
fn timestamp_series(args: &[Value], room: usize) -> Result<Vec<Value>> {
    let (Some(start), Some(stop), Some(Value::Interval(step))) = (args.first(), args.get(1), args.get(2)) else {
        return Ok(Vec::new());
    };
    if start.is_null() || stop.is_null() {
        return Ok(Vec::new());
    }
    let ascending = match step.span().cmp(&0) {
        std::cmp::Ordering::Equal => return err(SqlState::InvalidParameterValue, "step size cannot equal zero"),
        order => order == std::cmp::Ordering::Greater,
    };
    let step = Value::Interval(*step);
    let mut out = Vec::new();
    let mut value = start.clone();
    loop {
        let past = crate::types::total_cmp(&value, stop);
        if (ascending && past.is_gt()) || (!ascending && past.is_lt()) {
            return Ok(out);
        }
        if out.len() >= room {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("generate_series would produce more than {room} rows (sql.statement_max_rows in the cluster configuration)"),
            );
        }
        let next = crate::types::arith(crate::types::ArithOp::Add, &value, &step)?;
        out.push(std::mem::replace(&mut value, next));
    }
}

/// `generate_series(start, stop[, step])` over integers: no rows if an argument is NULL,
/// 22023 for a zero step, 54000 beyond `room` rows (checked before any is made).
fn series(args: &[Value], ty: SqlType, room: usize) -> Result<Vec<Value>> {
    if matches!(ty, SqlType::Timestamp | SqlType::TimestampTz) {
        return timestamp_series(args, room);
    }
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(v)) => Ok(Some(*v)),
        Some(Value::Null) => Ok(None),
        None => Ok(Some(1)), // the step's default
        Some(other) => err(SqlState::DatatypeMismatch, format!("generate_series over {other:?}")),
    };
    let (Some(start), Some(stop), Some(step)) = (int(0)?, int(1)?, int(2)?) else { return Ok(Vec::new()) };
    if step == 0 {
        return err(SqlState::InvalidParameterValue, "step size cannot equal zero");
    }
    let span = if step > 0 { i128::from(stop) - i128::from(start) } else { i128::from(start) - i128::from(stop) };
    let count = if span < 0 { 0 } else { span / i128::from(step).abs() + 1 };
    if count > room as i128 {
        return err(
            SqlState::ProgramLimitExceeded,
            format!("generate_series would produce {count} rows, more than {room} (sql.statement_max_rows in the cluster configuration)"),
        );
    }
    let (lo, hi) = match ty {
        SqlType::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        SqlType::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    };
    if !(lo..=hi).contains(&start) || !(lo..=hi).contains(&stop) {
        return err(SqlState::NumericValueOutOfRange, format!("{} out of range", ty.pg_name()));
    }
    // Every value lies between start and stop, so it fits; the products may not, in i64.
    let value = |i: i128| i64::try_from(i128::from(start) + i * i128::from(step)).map(Value::Int);
    (0..count)
        .map(|i| value(i).map_err(|_| SqlError::new(SqlState::NumericValueOutOfRange, "bigint out of range")))
        .collect()
}
