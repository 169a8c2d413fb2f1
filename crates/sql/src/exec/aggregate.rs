//! Sorting, set operations and aggregation over materialized rows.

use super::*;
use crate::types::{cast, SqlType};

pub(super) fn compare_rows(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for k in keys {
        let (x, y) = (a.get(k.column).unwrap_or(&Value::Null), b.get(k.column).unwrap_or(&Value::Null));
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if k.nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if k.nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => {
                let o = total_cmp(x, y);
                if k.desc {
                    o.reverse()
                } else {
                    o
                }
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

/// Running sum of one aggregate call in one group.
enum Sum {
    Empty,
    /// sum(bigint) while every value is an integer: exact in i128, numeric at the end.
    Wide(i128),
    Value(Value),
    /// The first error adding a value; reported when the aggregate finishes, as if the sum
    /// were computed there.
    Failed(SqlError),
}

/// Running state of one aggregate call in one group.
struct Acc {
    /// Non-NULL (and, for DISTINCT, distinct) values accepted.
    count: usize,
    seen: Option<BTreeSet<Vec<u8>>>,
    sum: Sum,
    /// min/max (bool_and/bool_or) so far.
    best: Option<Value>,
    /// array_agg's values with their ORDER BY keys, in input order.
    values: Vec<(Row, Value)>,
}

/// Accumulated state of one group.
struct Group {
    keys: Row,
    rows: usize,
    accs: Vec<Acc>,
}

/// Groups rows and folds their aggregates one row at a time; output rows are
/// `[group keys..., aggregates...]`, ordered by the groups' equality keys (deterministic;
/// equal numbers of different types form one group).
pub(super) struct Aggregator<'p> {
    plan: &'p AggPlan,
    /// Groups in first-seen order, and their index by key.
    groups: Vec<Group>,
    by_key: BTreeMap<Vec<u8>, usize>,
    key_buf: Vec<u8>,
}

impl<'p> Aggregator<'p> {
    pub fn new(plan: &'p AggPlan) -> Self {
        let mut agg = Aggregator { plan, groups: Vec::new(), by_key: BTreeMap::new(), key_buf: Vec::new() };
        if plan.group_by.is_empty() {
            agg.slot(&[]);
        }
        agg
    }

    /// Starts a row of the group of `keys`; returns the group's slot for `add`.
    pub fn row(&mut self, keys: &[Value]) -> usize {
        let slot = self.slot(keys);
        if let Some(g) = self.groups.get_mut(slot) {
            g.rows += 1;
        }
        slot
    }

    /// The group of `keys`, created on first sight.
    fn slot(&mut self, keys: &[Value]) -> usize {
        self.key_buf.clear();
        for v in keys {
            push_equality_key(&mut self.key_buf, v);
        }
        let slot = match self.by_key.get(&self.key_buf) {
            Some(slot) => *slot,
            None => {
                let slot = self.groups.len();
                let accs = self
                    .plan
                    .calls
                    .iter()
                    .map(|c| Acc {
                        count: 0,
                        seen: c.distinct.then(BTreeSet::new),
                        sum: Sum::Empty,
                        best: None,
                        values: Vec::new(),
                    })
                    .collect();
                self.groups.push(Group { keys: keys.to_vec(), rows: 0, accs });
                self.by_key.insert(self.key_buf.clone(), slot);
                slot
            }
        };
        slot
    }

    /// Folds the value of call `call` for a row of group `slot`.
    pub fn add(&mut self, slot: usize, call: usize, v: Value) {
        self.add_ordered(slot, call, v, Vec::new());
    }

    /// Folds the value of call `call` for a row of group `slot`, with the values of the
    /// call's ORDER BY keys for that row.
    pub fn add_ordered(&mut self, slot: usize, call: usize, v: Value, keys: Row) {
        let (Some(c), Some(acc)) =
            (self.plan.calls.get(call), self.groups.get_mut(slot).and_then(|g| g.accs.get_mut(call)))
        else {
            return;
        };
        // array_agg keeps NULLs (unless DISTINCT has seen one already).
        if v.is_null() && !matches!(c.func, AggFunc::ArrayAgg | AggFunc::JsonbAgg) {
            return;
        }
        if let Some(seen) = &mut acc.seen {
            if !seen.insert(equality_key([&v])) {
                return;
            }
        }
        acc.count += 1;
        match c.func {
            AggFunc::CountStar | AggFunc::Count => {}
            AggFunc::Sum | AggFunc::Avg => add_to_sum(&mut acc.sum, c, v),
            // min_by keeps the first of equal values, max_by the last.
            AggFunc::Min => {
                if acc.best.as_ref().is_none_or(|b| total_cmp(&v, b) == Ordering::Less) {
                    acc.best = Some(v);
                }
            }
            AggFunc::Max => {
                if acc.best.as_ref().is_none_or(|b| total_cmp(&v, b) != Ordering::Less) {
                    acc.best = Some(v);
                }
            }
            AggFunc::BoolAnd | AggFunc::BoolOr => {
                let b = matches!(v, Value::Bool(true));
                let folded = match (&acc.best, c.func) {
                    (Some(Value::Bool(a)), AggFunc::BoolAnd) => *a && b,
                    (Some(Value::Bool(a)), _) => *a || b,
                    _ => b,
                };
                acc.best = Some(Value::Bool(folded));
            }
            AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => {
                acc.values.push((keys, v))
            }
        }
    }

    pub fn finish(self) -> Result<Vec<Row>> {
        let mut groups: Vec<Option<Group>> = self.groups.into_iter().map(Some).collect();
        let calls = &self.plan.calls;
        self.by_key
            .into_values()
            .filter_map(|i| groups.get_mut(i).and_then(Option::take))
            .map(|g| {
                let mut out = g.keys;
                for (call, acc) in calls.iter().zip(&g.accs) {
                    out.push(finish_aggregate(call, g.rows, acc)?);
                }
                Ok(out)
            })
            .collect()
    }

    /// The aggregate values of the first group so far, without ending it (a window frame
    /// that grows row by row reads its aggregate after each step).
    pub fn current(&self) -> Result<Row> {
        let Some(g) = self.groups.first() else { return Ok(Vec::new()) };
        self.plan.calls.iter().zip(&g.accs).map(|(call, acc)| finish_aggregate(call, g.rows, acc)).collect()
    }
}

impl Exec<'_> {
    /// Groups materialized rows; group keys and arguments may run correlated subqueries.
    pub(super) fn aggregate(&mut self, rows: Vec<Row>, agg: &AggPlan) -> Result<Vec<Row>> {
        let mut acc = Aggregator::new(agg);
        for row in &rows {
            let slot = acc.row(&self.project_row(&agg.group_by, row)?);
            for (i, call) in agg.calls.iter().enumerate() {
                if let Some(arg) = &call.arg {
                    let v = self.eval_row(arg, row)?;
                    let mut keys = Vec::with_capacity(call.order_by.len());
                    for o in &call.order_by {
                        keys.push(self.eval_row(&o.expr, row)?);
                    }
                    acc.add_ordered(slot, i, v, keys);
                }
            }
        }
        acc.finish()
    }
}

/// sum(bigint) is numeric (no overflow at 2^63); sum(real) adds in real, as PostgreSQL.
fn add_to_sum(sum: &mut Sum, call: &AggCall, v: Value) {
    let wide = call.arg_type == Some(SqlType::Int);
    // sum(smallint/integer) is a bigint: add in place unless it overflows (then as below).
    if let (Sum::Value(Value::Int(total)), Value::Int(x)) = (&mut *sum, &v) {
        if let Some(t) = total.checked_add(*x) {
            *total = t;
            return;
        }
    }
    let next = match (std::mem::replace(sum, Sum::Empty), &v) {
        (failed @ Sum::Failed(_), _) => failed,
        (Sum::Empty, Value::Int(i)) if wide => Sum::Wide(i128::from(*i)),
        (Sum::Wide(acc), Value::Int(i)) => match acc.checked_add(i128::from(*i)) {
            Some(total) => Sum::Wide(total),
            None => Sum::Failed(SqlError::new(SqlState::NumericValueOutOfRange, "numeric out of range")),
        },
        (acc, _) => {
            let step = || -> Result<Value> {
                let v = if wide { cast(&v, SqlType::Numeric)? } else { v.clone() };
                let acc = match acc {
                    Sum::Empty => v,
                    Sum::Wide(total) => arith(ArithOp::Add, &wide_numeric(total)?, &v)?,
                    Sum::Value(a) => arith(ArithOp::Add, &a, &v)?,
                    Sum::Failed(e) => return Err(e),
                };
                if call.func == AggFunc::Sum && call.arg_type == Some(SqlType::Float4) {
                    return cast(&acc, SqlType::Float4);
                }
                Ok(acc)
            };
            match step() {
                Ok(v) => Sum::Value(v),
                Err(e) => Sum::Failed(e),
            }
        }
    };
    *sum = next;
}

fn wide_numeric(total: i128) -> Result<Value> {
    rust_decimal::Decimal::try_from_i128_with_scale(total, 0)
        .map(Value::Numeric)
        .map_err(|_| SqlError::new(SqlState::NumericValueOutOfRange, "numeric out of range"))
}

fn finish_aggregate(call: &AggCall, rows: usize, acc: &Acc) -> Result<Value> {
    let sum = match &acc.sum {
        Sum::Empty => Value::Null,
        Sum::Wide(total) => wide_numeric(*total)?,
        Sum::Value(v) => v.clone(),
        Sum::Failed(e) => return Err(e.clone()),
    };
    Ok(match call.func {
        AggFunc::CountStar => Value::Int(rows as i64),
        AggFunc::Count => Value::Int(acc.count as i64),
        AggFunc::Sum => sum,
        AggFunc::Avg => match sum {
            Value::Null => Value::Null,
            Value::Float(f) => Value::Float(f / acc.count as f64),
            total => {
                let total = as_decimal(&total)
                    .ok_or_else(|| SqlError::new(SqlState::UndefinedFunction, "avg requires numbers"))?;
                let avg = total
                    .checked_div(rust_decimal::Decimal::from(acc.count as u64))
                    .ok_or_else(|| SqlError::new(SqlState::NumericValueOutOfRange, "avg out of range"))?;
                Value::Numeric(avg.round_dp(16).normalize())
            }
        },
        AggFunc::Min | AggFunc::Max | AggFunc::BoolAnd | AggFunc::BoolOr => acc.best.clone().unwrap_or(Value::Null),
        AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg
            if acc.values.is_empty() =>
        {
            Value::Null
        }
        AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => {
            let keys: Vec<SortKey> = call
                .order_by
                .iter()
                .enumerate()
                .map(|(column, o)| SortKey { column, desc: o.desc, nulls_first: o.nulls_first })
                .collect();
            let mut sorted: Vec<&(Row, Value)> = acc.values.iter().collect();
            // Stable: values with equal keys stay in input order.
            sorted.sort_by(|a, b| compare_rows(&a.0, &b.0, &keys));
            let values: Vec<Value> = sorted.into_iter().map(|(_, v)| v.clone()).collect();
            if call.func == AggFunc::JsonbObjectAgg {
                crate::jsonb::merge_objects(&values)?
            } else if call.func == AggFunc::JsonbAgg {
                let types = vec![call.arg_type; values.len()];
                Value::Text(crate::jsonb::canonical(&crate::json::build_array(&values, &types)?)?)
            } else if call.func == AggFunc::StringAgg {
                let texts: Vec<String> =
                    values.iter().map(|v| crate::types::output_text(v, Some(SqlType::Text))).collect();
                Value::Text(texts.join(&call.delimiter))
            } else {
                Value::Text(crate::array::format(&values, call.arg_type.unwrap_or(SqlType::Text)))
            }
        }
    })
}
