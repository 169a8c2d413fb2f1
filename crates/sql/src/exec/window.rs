//! Window calls over materialized rows (see `crate::window`).
//!
//! Each call sorts the rows by (partition key, window ORDER BY, input position), so equal
//! inputs always give the same result, and computes one value per row. Work is bounded like
//! a join's: the rows are already within `Limits::max_rows`, and the frame rows an aggregate
//! or value function visits count against the statement's `Limits::max_work` (54000 beyond);
//! frames that only grow (every frame starting at the partition's first row, the default)
//! are folded incrementally, one visit per row.

use super::*;
use crate::window::{ntile_bucket, Bound, FrameBound, Peers, WindowCall, WindowFunc};

impl Exec<'_> {
    /// Appends the value of each window call to every row; the rows come out in the order of
    /// the last call's window (PostgreSQL's output order without ORDER BY, for one window).
    pub(super) fn windows(&mut self, rows: Vec<Row>, calls: &[WindowCall]) -> Result<Vec<Row>> {
        if calls.is_empty() {
            return Ok(rows);
        }
        let mut values: Vec<Vec<Value>> = Vec::with_capacity(calls.len());
        let mut order: Vec<usize> = (0..rows.len()).collect();
        for call in calls {
            let (v, o) = self.window_call(&rows, call)?;
            values.push(v);
            order = o;
        }
        let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(slots.len());
        for i in order {
            let Some(mut row) = slots.get_mut(i).and_then(Option::take) else { continue };
            for v in &values {
                row.push(v.get(i).cloned().unwrap_or(Value::Null));
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Values of one call, by input row, and the rows' window order.
    fn window_call(&mut self, rows: &[Row], call: &WindowCall) -> Result<(Vec<Value>, Vec<usize>)> {
        let n = rows.len();
        let mut partition_keys = Vec::with_capacity(n);
        let mut order_keys: Vec<Row> = Vec::with_capacity(n);
        let mut args: Vec<Row> = Vec::with_capacity(n);
        let agg_arg = match &call.func {
            WindowFunc::Aggregate(c) => c.arg.as_ref(),
            _ => None,
        };
        for row in rows {
            let parts = self.project_row(&call.partition, row)?;
            partition_keys.push(equality_key(parts.iter()));
            let mut keys = Vec::with_capacity(call.order.len());
            for o in &call.order {
                keys.push(self.eval_row(&o.expr, row)?);
            }
            order_keys.push(keys);
            let mut a = self.project_row(&call.args, row)?;
            if let Some(arg) = agg_arg {
                a.push(self.eval_row(arg, row)?);
            }
            args.push(a);
        }
        let sort: Vec<SortKey> = call
            .order
            .iter()
            .enumerate()
            .map(|(column, o)| SortKey { column, desc: o.desc, nulls_first: o.nulls_first })
            .collect();
        let empty = Vec::new();
        let okey = |i: usize| order_keys.get(i).unwrap_or(&empty);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            partition_keys
                .get(a)
                .cmp(&partition_keys.get(b))
                .then_with(|| compare_rows(okey(a), okey(b), &sort))
                .then(a.cmp(&b))
        });
        let (start, end) =
            (self.frame_bound(&call.frame.start, "starting")?, self.frame_bound(&call.frame.end, "ending")?);
        let mut values = vec![Value::Null; n];
        let mut lo = 0;
        while lo < n {
            let key = order.get(lo).and_then(|i| partition_keys.get(*i));
            let mut hi = lo + 1;
            while hi < n && order.get(hi).and_then(|i| partition_keys.get(*i)) == key {
                hi += 1;
            }
            let part = order.get(lo..hi).unwrap_or(&[]);
            let peers = Peers::new(part.len(), |p| {
                let (a, b) = (part.get(p - 1).copied().unwrap_or(0), part.get(p).copied().unwrap_or(0));
                compare_rows(okey(a), okey(b), &sort) == Ordering::Equal
            });
            let arg = |p: usize, k: usize| -> Value {
                part.get(p).and_then(|i| args.get(*i)).and_then(|a| a.get(k)).cloned().unwrap_or(Value::Null)
            };
            let out = self.partition_values(call, part.len(), &peers, &arg, (start, end))?;
            for (p, v) in out.into_iter().enumerate() {
                if let Some(slot) = part.get(p).and_then(|i| values.get_mut(*i)) {
                    *slot = v;
                }
            }
            lo = hi;
        }
        Ok((values, order))
    }

    /// A frame offset, evaluated once: a non-negative row or group count.
    fn frame_bound(&self, b: &FrameBound, which: &str) -> Result<Bound> {
        let offset = |e: &Expr| -> Result<u64> {
            match e.eval(&[], &self.env())? {
                Value::Null => err(SqlState::NullValueNotAllowed, format!("frame {which} offset must not be null")),
                Value::Int(i) => u64::try_from(i).or_else(|_| {
                    err(SqlState::InvalidPrecedingOrFollowingSize, format!("frame {which} offset must not be negative"))
                }),
                other => {
                    err(SqlState::DatatypeMismatch, format!("frame {which} offset must be an integer, got {other}"))
                }
            }
        };
        Ok(match b {
            FrameBound::UnboundedPreceding => Bound::UnboundedPreceding,
            FrameBound::Preceding(e) => Bound::Preceding(offset(e)?),
            FrameBound::CurrentRow => Bound::CurrentRow,
            FrameBound::Following(e) => Bound::Following(offset(e)?),
            FrameBound::UnboundedFollowing => Bound::UnboundedFollowing,
        })
    }

    /// Values of a call for one partition of `len` rows in window order; `arg(p, k)` is
    /// argument `k` at position `p`.
    fn partition_values(
        &mut self,
        call: &WindowCall,
        len: usize,
        peers: &Peers,
        arg: &dyn Fn(usize, usize) -> Value,
        (start, end): (Bound, Bound),
    ) -> Result<Vec<Value>> {
        let int = |x: usize| Value::Int(i64::try_from(x).unwrap_or(i64::MAX));
        // Rows a frame visits are work, as rows a join examines.
        let work = self.reader.work;
        let spend = |k: usize| work.charge(k as u64);
        let peer_start = |p: usize| peers.peer_start.get(p).copied().unwrap_or(p);
        let peer_end = |p: usize| peers.peer_end.get(p).copied().unwrap_or(p + 1);
        let mut out = Vec::with_capacity(len);
        match &call.func {
            WindowFunc::RowNumber => out.extend((0..len).map(|p| int(p + 1))),
            WindowFunc::Rank => out.extend((0..len).map(|p| int(peer_start(p) + 1))),
            WindowFunc::DenseRank => {
                out.extend((0..len).map(|p| int(peers.group.get(p).copied().unwrap_or(0) + 1)));
            }
            WindowFunc::PercentRank => out.extend(
                (0..len).map(|p| Value::Float(if len > 1 { peer_start(p) as f64 / (len - 1) as f64 } else { 0.0 })),
            ),
            WindowFunc::CumeDist => out.extend((0..len).map(|p| Value::Float(peer_end(p) as f64 / len as f64))),
            WindowFunc::Ntile => {
                // The bucket count is read at the partition's first row, as in PostgreSQL.
                let buckets = match arg(0, 0) {
                    Value::Null => None,
                    Value::Int(b) if b > 0 => Some(usize::try_from(b).unwrap_or(usize::MAX)),
                    Value::Int(_) => {
                        return err(SqlState::InvalidArgumentForNtile, "argument of ntile must be greater than zero")
                    }
                    other => return err(SqlState::DatatypeMismatch, format!("ntile needs an integer, got {other}")),
                };
                out.extend((0..len).map(|p| buckets.map_or(Value::Null, |b| int(ntile_bucket(p, len, b)))));
            }
            WindowFunc::Lag | WindowFunc::Lead => {
                let lag = call.func == WindowFunc::Lag;
                for p in 0..len {
                    let offset = if call.args.len() > 1 { arg(p, 1) } else { Value::Int(1) };
                    let Value::Int(offset) = offset else {
                        out.push(Value::Null);
                        continue;
                    };
                    let step = if lag { -i128::from(offset) } else { i128::from(offset) };
                    let target = i128::try_from(p).unwrap_or(i128::MAX) + step;
                    out.push(match usize::try_from(target).ok().filter(|t| *t < len) {
                        Some(t) => arg(t, 0),
                        None if call.args.len() > 2 => arg(p, 2),
                        None => Value::Null,
                    });
                }
            }
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                for p in 0..len {
                    let (s, e) = peers.frame(p, call.frame.units, start, end);
                    let at = match call.func {
                        WindowFunc::FirstValue => Some(s),
                        WindowFunc::LastValue => e.checked_sub(1),
                        _ => match arg(p, 1) {
                            Value::Null => None,
                            Value::Int(k) if k > 0 => {
                                s.checked_add(usize::try_from(k - 1).unwrap_or(usize::MAX)).filter(|x| *x < e)
                            }
                            Value::Int(_) => {
                                return err(
                                    SqlState::InvalidArgumentForNthValue,
                                    "argument of nth_value must be greater than zero",
                                )
                            }
                            other => {
                                return err(
                                    SqlState::DatatypeMismatch,
                                    format!("nth_value needs an integer, got {other}"),
                                )
                            }
                        },
                    };
                    out.push(at.filter(|x| *x >= s && *x < e).map_or(Value::Null, |x| arg(x, 0)));
                }
            }
            WindowFunc::Aggregate(agg) => {
                let plan = AggPlan { group_by: Vec::new(), calls: vec![agg.clone()] };
                let value_at = call.args.len();
                let mut acc = Aggregator::new(&plan);
                let (mut cur_s, mut cur_e) = (0usize, 0usize);
                for p in 0..len {
                    let (s, e) = peers.frame(p, call.frame.units, start, end);
                    let e = e.max(s);
                    if s != cur_s || e < cur_e {
                        acc = Aggregator::new(&plan);
                        (cur_s, cur_e) = (s, s);
                    }
                    spend(e - cur_e)?;
                    for x in cur_e..e {
                        let slot = acc.row(&[]);
                        if agg.arg.is_some() {
                            acc.add(slot, 0, arg(x, value_at));
                        }
                    }
                    cur_e = e;
                    out.push(acc.current()?.into_iter().next().unwrap_or(Value::Null));
                }
            }
        }
        Ok(out)
    }
}
