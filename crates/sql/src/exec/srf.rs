//! Set-returning functions of a select list (`unnest`, `generate_subscripts`), run as
//! PostgreSQL 10+ runs them: all calls of the list in lockstep over each input row, which
//! gives as many rows as its longest call (shorter calls give NULL after their end; a row
//! whose calls are all empty or NULL gives none). The rows produced count against
//! `Limits::max_rows`, like any intermediate result.

use super::*;
use crate::plan::{SrfCall, SrfKind};

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
                columns.push(self.srf_values(call, &row)?);
            }
            let n = columns.iter().map(Vec::len).max().unwrap_or(0);
            if out.len().saturating_add(n) > self.reader.max_rows {
                return err(
                    SqlState::ProgramLimitExceeded,
                    format!(
                        "set-returning functions produced more than {} rows (raise Limits::max_rows)",
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

    /// The values one call returns for `row`.
    fn srf_values(&mut self, call: &SrfCall, row: &[Value]) -> Result<Vec<Value>> {
        let array = self.eval_row(&call.array, row)?;
        let elements = crate::array::elements(&array, call.array_type)?;
        match call.kind {
            SrfKind::Unnest => Ok(elements),
            SrfKind::GenerateSubscripts => {
                let dimension = match &call.dimension {
                    Some(d) => self.eval_row(d, row)?,
                    None => Value::Int(1),
                };
                // Arrays here have one dimension: any other has no subscripts.
                if dimension != Value::Int(1) || array.is_null() {
                    return Ok(Vec::new());
                }
                let first = crate::array::lower_bound(call.array_type);
                Ok((0..elements.len() as i64).map(|i| Value::Int(first + i)).collect())
            }
        }
    }
}
