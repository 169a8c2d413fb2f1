//! Sorting, set operations and aggregation over materialized rows.

use super::*;
use crate::types::{cast, SqlType};

pub(super) fn compare_rows(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for k in keys {
        let (x, y) = (a.get(k.column).unwrap_or(&Value::Null), b.get(k.column).unwrap_or(&Value::Null));
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if k.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if k.nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) => {
                let o = total_cmp(x, y);
                if k.desc { o.reverse() } else { o }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

pub(super) fn set_operation(op: SetOp, all: bool, left: Vec<Row>, right: Vec<Row>) -> Result<Vec<Row>> {
    // 1 and 1.0 are the same row here, as under `=`.
    let key = |r: &Row| equality_key(r.iter());
    Ok(match op {
        SetOp::Union => {
            let mut rows = left;
            rows.extend(right);
            if !all {
                let mut seen = BTreeSet::new();
                rows.retain(|r| seen.insert(key(r)));
            }
            rows
        }
        SetOp::Except | SetOp::Intersect => {
            let mut counts: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
            for r in &right {
                *counts.entry(key(r)).or_default() += 1;
            }
            let mut seen = BTreeSet::new();
            let mut out = Vec::new();
            for r in left {
                let k = key(&r);
                let available = counts.get_mut(&k);
                let in_right = available.as_ref().is_some_and(|c| **c > 0);
                let keep = match op {
                    SetOp::Except if all => {
                        if let Some(c) = available.filter(|c| **c > 0) {
                            *c -= 1;
                            false
                        } else {
                            true
                        }
                    }
                    SetOp::Except => !in_right && seen.insert(k),
                    _ if all => {
                        if let Some(c) = available.filter(|c| **c > 0) {
                            *c -= 1;
                            true
                        } else {
                            false
                        }
                    }
                    _ => in_right && seen.insert(k),
                };
                if keep {
                    out.push(r);
                }
            }
            out
        }
    })
}

/// Accumulated state of one group.
struct Group {
    keys: Row,
    rows: usize,
    values: Vec<Vec<Value>>,
    seen: Vec<BTreeSet<Vec<u8>>>,
}

impl Exec<'_> {
    /// Groups rows and computes aggregates; output rows are `[group keys..., aggregates...]`,
    /// ordered by the groups' equality keys (deterministic; equal numbers of different types
    /// form one group). Group keys and arguments may run correlated subqueries.
    pub(super) fn aggregate(&mut self, rows: Vec<Row>, agg: &AggPlan) -> Result<Vec<Row>> {
        let new_group = |keys: Row| Group {
            keys,
            rows: 0,
            values: agg.calls.iter().map(|_| Vec::new()).collect(),
            seen: agg.calls.iter().map(|_| BTreeSet::new()).collect(),
        };
        // Groups in first-seen order plus an index by key; output is by key order.
        let mut groups: Vec<Group> = Vec::new();
        let mut by_key: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        if agg.group_by.is_empty() {
            groups.push(new_group(Vec::new()));
            by_key.insert(Vec::new(), 0);
        }
        for row in &rows {
            let slot = if agg.group_by.is_empty() {
                0
            } else {
                let keys: Row = self.project_row(&agg.group_by, row)?;
                let next = groups.len();
                let slot = *by_key.entry(equality_key(keys.iter())).or_insert(next);
                if slot == next {
                    groups.push(new_group(keys));
                }
                slot
            };
            let mut args = Vec::with_capacity(agg.calls.len());
            for call in &agg.calls {
                args.push(match &call.arg {
                    Some(arg) => Some(self.eval_row(arg, row)?),
                    None => None,
                });
            }
            let Some(group) = groups.get_mut(slot) else { continue };
            group.rows += 1;
            for (i, (call, v)) in agg.calls.iter().zip(args).enumerate() {
                let Some(v) = v.filter(|v| !v.is_null()) else { continue };
                if call.distinct && !group.seen.get_mut(i).is_some_and(|s| s.insert(equality_key([&v]))) {
                    continue;
                }
                if let Some(values) = group.values.get_mut(i) {
                    values.push(v);
                }
            }
        }
        let mut groups: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
        let ordered: Vec<Group> = by_key.into_values().filter_map(|i| groups.get_mut(i).and_then(Option::take)).collect();
        ordered
            .into_iter()
            .map(|g| {
                let mut out = g.keys;
                for (call, values) in agg.calls.iter().zip(g.values) {
                    out.push(finish_aggregate(call, g.rows, values)?);
                }
                Ok(out)
            })
            .collect()
    }
}

fn finish_aggregate(call: &AggCall, rows: usize, values: Vec<Value>) -> Result<Value> {
    // sum(bigint) is numeric (no overflow at 2^63); sum(real) adds in real, as PostgreSQL.
    let sum = |values: &[Value]| -> Result<Value> {
        let mut acc = Value::Null;
        for v in values {
            let v = match call.arg_type {
                Some(SqlType::Int) => cast(v, SqlType::Numeric)?,
                _ => v.clone(),
            };
            acc = if acc.is_null() { v } else { arith(ArithOp::Add, &acc, &v)? };
            if call.func == AggFunc::Sum && call.arg_type == Some(SqlType::Float4) {
                acc = cast(&acc, SqlType::Float4)?;
            }
        }
        Ok(acc)
    };
    Ok(match call.func {
        AggFunc::CountStar => Value::Int(rows as i64),
        AggFunc::Count => Value::Int(values.len() as i64),
        AggFunc::Sum => sum(&values)?,
        AggFunc::Avg => match sum(&values)? {
            Value::Null => Value::Null,
            Value::Float(f) => Value::Float(f / values.len() as f64),
            total => {
                let total = as_decimal(&total).ok_or_else(|| SqlError::new(SqlState::UndefinedFunction, "avg requires numbers"))?;
                let avg = total
                    .checked_div(rust_decimal::Decimal::from(values.len() as u64))
                    .ok_or_else(|| SqlError::new(SqlState::NumericValueOutOfRange, "avg out of range"))?;
                Value::Numeric(avg.round_dp(16).normalize())
            }
        },
        AggFunc::Min => values.into_iter().min_by(total_cmp).unwrap_or(Value::Null),
        AggFunc::Max => values.into_iter().max_by(total_cmp).unwrap_or(Value::Null),
    })
}
