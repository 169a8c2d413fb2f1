//! Query execution: subqueries (correlated ones per row), SELECT, FROM and joins.

use super::*;
use std::rc::Rc;

/// Per-statement execution state.
pub(crate) struct Exec<'a> {
    pub reader: Reader<'a>,
    pub params: &'a [Value],
    pub plans: &'a [Subquery],
    /// Values of the uncorrelated subqueries (placeholders for correlated ones). Shared so
    /// that a join can hold an environment while it runs per-row subqueries.
    pub subqueries: Rc<Vec<SubqueryValue>>,
    /// Rows of the enclosing queries while correlated subqueries run, outermost first.
    pub enclosing: Vec<Row>,
    pub reads: ReadReport,
    /// Values of the sequences the statement may draw.
    pub sequences: Option<&'a crate::sequence::SequenceDraws<'a>>,
    /// The statement's random values (`gen_random_uuid()`).
    pub random: Option<&'a crate::uuid::StatementRandom>,
    /// Rows of the previous iteration of each recursive query running (by id).
    pub working: Vec<(usize, Rc<Vec<Row>>)>,
}

impl<'a> Exec<'a> {
    pub fn new(reader: Reader<'a>, params: &'a [Value], plans: &'a [Subquery]) -> Self {
        Exec {
            reader,
            params,
            plans,
            subqueries: Rc::default(),
            enclosing: Vec::new(),
            reads: ReadReport::default(),
            sequences: None,
            random: None,
            working: Vec::new(),
        }
    }

    pub(super) fn env(&self) -> Env<'_> {
        self.env_over(&self.subqueries, &self.enclosing)
    }

    /// [`env`](Self::env) over copies of the subquery values and enclosing rows, for code
    /// that needs `&mut self` while the environment is in use.
    pub(super) fn env_over<'e>(&self, subqueries: &'e [SubqueryValue], enclosing: &'e [Row]) -> Env<'e>
    where
        'a: 'e,
    {
        Env {
            params: self.params,
            subqueries,
            correlated: &[],
            outer: &[],
            enclosing,
            now: self.now(),
            sequences: self.sequences,
            random: self.random,
            budget: Some(self.reader.computed),
        }
    }

    /// The transaction's time (see `Env::now`): the time of the timestamp it reads at.
    pub(super) fn now(&self) -> Option<i64> {
        i64::try_from(self.reader.at.ts.time).ok()
    }

    /// Runs the statement's uncorrelated subqueries in order (correlated ones get a
    /// placeholder and run per row in `eval_row`).
    pub fn run_subqueries(&mut self) -> Result<()> {
        for sub in self.plans {
            let value = if sub.correlated { SubqueryValue::Exists(false) } else { self.subquery_value(sub)? };
            Rc::make_mut(&mut self.subqueries).push(value);
        }
        Ok(())
    }

    fn subquery_value(&mut self, sub: &Subquery) -> Result<SubqueryValue> {
        let rows = self.query(&sub.plan)?;
        Ok(match sub.kind {
            SubqueryKind::Exists => SubqueryValue::Exists(!rows.is_empty()),
            SubqueryKind::Array => {
                let values = rows.iter().map(|r| r.first().cloned().unwrap_or(Value::Null));
                SubqueryValue::Scalar(match sub.plan.types.first().copied().flatten() {
                    Some(element) => Value::Text(crate::array::format(&values.collect::<Vec<_>>(), element)),
                    None => crate::system::array_text(values),
                })
            }
            SubqueryKind::Scalar => match rows.as_slice() {
                [] => SubqueryValue::Scalar(Value::Null),
                [row] => SubqueryValue::Scalar(row.first().cloned().unwrap_or(Value::Null)),
                _ => {
                    return err(
                        SqlState::CardinalityViolation,
                        "more than one row returned by a subquery used as an expression",
                    )
                }
            },
            SubqueryKind::List => {
                let mut seen = BTreeSet::new();
                let values = rows
                    .into_iter()
                    .filter_map(|r| r.into_iter().next())
                    .filter(|v| seen.insert(equality_key([v])))
                    .collect();
                SubqueryValue::List(values)
            }
        })
    }

    /// True if evaluating `e` runs correlated subqueries.
    pub(super) fn per_row(&self, e: &Expr) -> bool {
        if !self.plans.iter().any(|s| s.correlated) {
            return false;
        }
        let mut ids = Vec::new();
        subquery_ids(e, &mut ids);
        ids.iter().any(|i| self.plans.get(*i).is_some_and(|s| s.correlated))
    }

    /// Evaluates `e` on `row`, first running the correlated subqueries it uses with `row` as
    /// their enclosing row (each run reports its own, instantiated scans).
    pub(super) fn eval_row(&mut self, e: &Expr, row: &[Value]) -> Result<Value> {
        if !self.per_row(e) {
            return e.eval(row, &self.env());
        }
        let mut ids = Vec::new();
        subquery_ids(e, &mut ids);
        ids.retain(|i| self.plans.get(*i).is_some_and(|s| s.correlated));
        ids.sort_unstable();
        ids.dedup();
        self.enclosing.push(row.to_vec());
        let mut values = Vec::with_capacity(ids.len());
        let mut failure = None;
        for i in ids {
            let Some(sub) = self.plans.get(i) else { continue };
            match self.subquery_value(sub) {
                Ok(v) => values.push((i, v)),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        self.enclosing.pop();
        if let Some(e) = failure {
            return Err(e);
        }
        e.eval(row, &Env { correlated: &values, ..self.env() })
    }

    /// `eval_row` as a filter: only TRUE passes.
    pub(super) fn passes_row(&mut self, e: &Expr, row: &[Value]) -> Result<bool> {
        Ok(self.eval_row(e, row)?.truth()? == Some(true))
    }

    pub(super) fn project_row(&mut self, exprs: &[Expr], row: &[Value]) -> Result<Row> {
        exprs.iter().map(|e| self.eval_row(e, row)).collect()
    }

    /// Runs a query with the enclosing-row stack cut or padded to the query's own depth: a
    /// query planned inside k enclosing queries refers to their rows as levels 0..k, wherever
    /// it runs (an uncorrelated subquery runs first, a WITH query where it is referenced).
    pub fn query(&mut self, q: &QueryPlan) -> Result<Vec<Row>> {
        let saved = self.enclosing.len();
        let mut cut = Vec::new();
        if saved > q.depth {
            cut = self.enclosing.split_off(q.depth);
        }
        self.enclosing.resize(q.depth, Vec::new());
        let result = self.query_at_depth(q);
        self.enclosing.truncate(q.depth.min(saved));
        self.enclosing.extend(cut);
        result
    }

    fn query_at_depth(&mut self, q: &QueryPlan) -> Result<Vec<Row>> {
        let mut rows = match self.stops_early(q) {
            Some((core, limit)) => self.select_streaming(core, Some(limit))?,
            None => self.body(&q.body)?,
        };
        if !q.order_by.is_empty() {
            rows.sort_by(|a, b| compare_rows(a, b, &q.order_by));
        }
        let env = self.env();
        let count = |e: &Option<Expr>, what: &str| -> Result<Option<usize>> {
            let Some(e) = e else { return Ok(None) };
            match e.eval(&[], &env)? {
                Value::Null => Ok(None),
                Value::Int(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                other => {
                    err(SqlState::InvalidParameterValue, format!("{what} must be a non-negative integer, got {other}"))
                }
            }
        };
        let offset = count(&q.offset, "OFFSET")?.unwrap_or(0);
        let limit = count(&q.limit, "LIMIT")?;
        let width = q.names.len();
        Ok(rows
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .map(|mut r| {
                r.truncate(width);
                r
            })
            .collect())
    }

    fn body(&mut self, body: &QueryBody) -> Result<Vec<Row>> {
        match body {
            QueryBody::Select(core) => self.select(core),
            QueryBody::Values(rows) => rows.iter().map(|r| self.project_row(r, &[])).collect(),
            QueryBody::SetOp { op, all, left, right } => {
                let l = self.body(left)?;
                let r = self.body(right)?;
                set_operation(*op, *all, l, r)
            }
            QueryBody::Recursive { id, name, all, base, step } => self.recursive(*id, name, *all, base, step),
            QueryBody::WorkingTable(id) => match self.working.iter().rev().find(|(w, _)| w == id) {
                Some((_, rows)) => Ok(rows.as_ref().clone()),
                None => err(SqlState::InternalError, "recursive query's working table read outside its loop"),
            },
        }
    }

    /// Runs a recursive query: the base rows, then `step` over the previous iteration's new
    /// rows until it yields none (UNION: rows already produced do not count as new). PostgreSQL
    /// loops forever on a recursion that never ends; here the result is bounded by
    /// `Limits::max_rows` (54000 beyond), and every iteration adds a row, so the loop ends.
    fn recursive(&mut self, id: usize, name: &str, all: bool, base: &QueryBody, step: &QueryBody) -> Result<Vec<Row>> {
        let max_rows = self.reader.max_rows;
        let mut seen = BTreeSet::new();
        let fresh = |rows: Vec<Row>, seen: &mut BTreeSet<Vec<u8>>| -> Vec<Row> {
            if all {
                rows
            } else {
                rows.into_iter().filter(|r| seen.insert(equality_key(r.iter()))).collect()
            }
        };
        let first = self.body(base)?;
        let mut working = fresh(first, &mut seen);
        let mut result = working.clone();
        while !working.is_empty() {
            self.working.push((id, Rc::new(std::mem::take(&mut working))));
            let produced = self.body(step);
            self.working.pop();
            working = fresh(produced?, &mut seen);
            result.extend(working.iter().cloned());
            if result.len() > max_rows {
                return err(
                    SqlState::ProgramLimitExceeded,
                    format!(
                        "recursive query \"{name}\" produced more than {max_rows} rows (it may never end; sql.statement_max_rows in the cluster configuration)"
                    ),
                );
            }
        }
        Ok(result)
    }

    /// A query whose scan may stop after its LIMIT: `SELECT … FROM t [WHERE …] LIMIT n` with
    /// a constant n, over one stored table, with no ORDER BY, OFFSET, DISTINCT, aggregate,
    /// window or set-returning call. Any n rows are a correct answer without ORDER BY; the
    /// first n in scan order are read (and reported), so a page of a table costs n reads.
    fn stops_early<'q>(&self, q: &'q QueryPlan) -> Option<(&'q SelectCore, usize)> {
        let QueryBody::Select(core) = &q.body else { return None };
        let Some(Expr::Const(Value::Int(n))) = &q.limit else { return None };
        let plain = q.order_by.is_empty()
            && q.offset.is_none()
            && !core.distinct
            && core.distinct_on.is_none()
            && core.aggregate.is_none()
            && core.windows.is_empty()
            && core.srfs.is_empty();
        let limit = usize::try_from(*n).ok()?;
        (plain && self.streams(core)).then_some((&**core, limit))
    }

    fn select(&mut self, core: &SelectCore) -> Result<Vec<Row>> {
        let mut out =
            if self.streams(core) { self.select_streaming(core, None)? } else { self.select_materialized(core)? };
        if core.distinct {
            let mut seen = BTreeSet::new();
            out.retain(|r| seen.insert(equality_key(r.iter())));
        }
        if let Some(on) = &core.distinct_on {
            // A stable sort: the query's own ORDER BY then keeps this order among equals.
            out.sort_by(|a, b| compare_rows(a, b, &on.order));
            let mut seen = BTreeSet::new();
            out.retain(|r| seen.insert(equality_key(on.columns.iter().map(|&c| r.get(c).unwrap_or(&Value::Null)))));
        }
        Ok(out)
    }

    /// True if `core` reads one stored table and runs no correlated subquery before HAVING:
    /// its rows can then be filtered and projected or aggregated where the scan lends them.
    fn streams(&self, core: &SelectCore) -> bool {
        let Some(first) = &core.from.first else { return false };
        if first.derived.is_some() || !core.windows.is_empty() || !core.srfs.is_empty() || !core.from.joins.is_empty() {
            return false;
        }
        let per_row = |e: &Expr| self.per_row(e);
        let before_having = match &core.aggregate {
            None => core.output.iter().any(per_row),
            Some(agg) => agg
                .group_by
                .iter()
                .chain(agg.calls.iter().filter_map(|c| c.arg.as_ref()))
                .chain(agg.calls.iter().flat_map(|c| c.order_by.iter().map(|o| &o.expr)))
                .any(per_row),
        };
        !before_having && !core.filter.as_ref().is_some_and(per_row)
    }

    /// `limit`: the scan stops once that many rows are out (`stops_early`).
    fn select_streaming(&mut self, core: &SelectCore, limit: Option<usize>) -> Result<Vec<Row>> {
        let Some(scan) = &core.from.first else { return Ok(Vec::new()) };
        let subqueries = self.subqueries.clone();
        let enclosing = self.enclosing.clone();
        let env = self.env_over(&subqueries, &enclosing);
        let empty = WriteSet::default();
        let filter = core.filter.as_ref();
        let Some(agg) = &core.aggregate else {
            let mut out = Vec::new();
            let produced = std::cell::Cell::new(0usize);
            let done = || limit.is_some_and(|n| produced.get() >= n);
            self.reader.scan_until(&empty, scan, &env, &mut self.reads, &done, &mut |_, row| {
                if done() {
                    return Ok(()); // a scan that cannot stop early: the rest is dropped
                }
                if let Some(f) = filter {
                    if !f.passes(row, &env)? {
                        return Ok(());
                    }
                }
                let mut projected = Vec::with_capacity(core.output.len());
                for e in &core.output {
                    projected.push(e.eval(row, &env)?);
                }
                out.push(projected);
                produced.set(produced.get() + 1);
                Ok(())
            })?;
            return Ok(out);
        };
        let mut acc = Aggregator::new(agg);
        let mut keys = Vec::with_capacity(agg.group_by.len());
        self.reader.scan(&empty, scan, &env, &mut self.reads, &mut |_, row| {
            if let Some(f) = filter {
                if !f.passes(row, &env)? {
                    return Ok(());
                }
            }
            keys.clear();
            for e in &agg.group_by {
                keys.push(e.eval(row, &env)?);
            }
            let slot = acc.row(&keys);
            for (i, call) in agg.calls.iter().enumerate() {
                if let Some(arg) = &call.arg {
                    let mut order = Vec::with_capacity(call.order_by.len());
                    for o in &call.order_by {
                        order.push(o.expr.eval(row, &env)?);
                    }
                    acc.add_ordered(slot, i, arg.eval(row, &env)?, order);
                }
            }
            Ok(())
        })?;
        let rows = acc.finish()?;
        self.having_and_project(core, rows)
    }

    fn select_materialized(&mut self, core: &SelectCore) -> Result<Vec<Row>> {
        let mut rows = self.from(&core.from)?;
        if let Some(f) = &core.filter {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if self.passes_row(f, &r)? {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        if let Some(agg) = &core.aggregate {
            rows = self.aggregate(rows, agg)?;
            return self.having_and_project(core, rows);
        }
        let rows = self.windows(rows, &core.windows)?;
        let rows = self.set_returning(rows, &core.srfs)?;
        rows.iter().map(|r| self.project_row(&core.output, r)).collect()
    }

    /// HAVING and the output expressions over aggregated rows.
    fn having_and_project(&mut self, core: &SelectCore, mut rows: Vec<Row>) -> Result<Vec<Row>> {
        if let Some(h) = &core.having {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if self.passes_row(h, &r)? {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        let rows = self.windows(rows, &core.windows)?;
        let rows = self.set_returning(rows, &core.srfs)?;
        rows.iter().map(|r| self.project_row(&core.output, r)).collect()
    }

    /// Rows of every derived table in FROM (run before the scans, which borrow `self`).
    fn derived_rows(&mut self, from: &FromPlan) -> Result<Vec<Option<Vec<Row>>>> {
        let scans = from.first.iter().chain(from.joins.iter().map(|j| &j.right));
        let mut out = Vec::new();
        for scan in scans {
            out.push(match &scan.derived {
                Some(q) => Some(self.query(q)?),
                None => None,
            });
        }
        Ok(out)
    }

    /// Rows of one FROM source, lent to `sink`: a storage scan, or a derived table's rows
    /// through its filter.
    fn source(&mut self, scan: &ScanPlan, derived: Option<&Vec<Row>>, env: &Env, sink: &mut Sink<'_>) -> Result<()> {
        let empty = WriteSet::default();
        match derived {
            None => self.reader.scan(&empty, scan, env, &mut self.reads, sink),
            Some(rows) => {
                let filter = scan.filter.instantiate(env)?;
                let closed = Env::default();
                for r in rows {
                    if filter.passes(r, &closed)? {
                        sink(&[], r)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn source_rows(&mut self, scan: &ScanPlan, derived: Option<&Vec<Row>>, env: &Env) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        let budget = self.reader.materialized;
        self.source(scan, derived, env, &mut |_, r| {
            budget.charge_row(r)?;
            rows.push(r.to_vec());
            Ok(())
        })?;
        Ok(rows)
    }

    pub(super) fn from(&mut self, from: &FromPlan) -> Result<Vec<Row>> {
        let Some(first) = &from.first else { return Ok(vec![Vec::new()]) };
        let derived = self.derived_rows(from)?;
        let derived_of = |i: usize| derived.get(i).and_then(Option::as_ref);
        // The scans record into `self.reads` and join conditions may run per-row subqueries
        // (`&mut self`) while the environment is in use: it borrows copies.
        let subqueries = self.subqueries.clone();
        let enclosing = self.enclosing.clone();
        let env = self.env_over(&subqueries, &enclosing);
        let mut rows = self.source_rows(first, derived_of(0), &env)?;
        for (step_no, step) in from.joins.iter().enumerate() {
            rows = self.join_step(rows, step, derived_of(step_no + 1), &env)?;
        }
        Ok(rows)
    }

    fn join_step(
        &mut self,
        rows: Vec<Row>,
        step: &JoinStep,
        derived: Option<&Vec<Row>>,
        env: &Env,
    ) -> Result<Vec<Row>> {
        let env = *env;
        let right_width = step.right.table.columns.len();
        let max_rows = self.reader.max_rows;
        let shared = if step.per_outer_row { None } else { Some(self.source_rows(&step.right, derived, &env)?) };
        let hashed = match &shared {
            Some(right_rows) if !step.hash_keys.is_empty() => Some(hash_rows(right_rows, &step.hash_keys, &env)?),
            _ => None,
        };
        let condition_per_row = step.condition.as_ref().is_some_and(|c| self.per_row(c));
        let budget = self.reader.materialized;
        let mut right_matched =
            vec![false; if step.kind.keeps_right() { shared.as_ref().map_or(0, Vec::len) } else { 0 }];
        let mut next = Vec::new();
        let work = self.reader.work;
        for left in rows {
            let inner_env = Env { outer: &left, ..env };
            let mut matched = false;
            if shared.is_none() && !condition_per_row {
                // Index nested loop: pairs each inner row with `left` where the scan lends it.
                let width = left.len();
                let mut combined = left.clone();
                self.source(&step.right, derived, &inner_env, &mut |_, right| {
                    work.charge(1)?;
                    combined.truncate(width);
                    if combined.len() < width {
                        combined.extend_from_slice(&left);
                    }
                    combined.extend_from_slice(right);
                    if let Some(c) = &step.condition {
                        if !c.passes(&combined, &env)? {
                            return Ok(());
                        }
                    }
                    matched = true;
                    budget.charge_row(&combined)?;
                    next.push(std::mem::take(&mut combined));
                    if next.len() > max_rows {
                        return Err(too_many_rows(max_rows));
                    }
                    Ok(())
                })?;
            } else {
                let per_row;
                // (position among the shared right rows, row)
                let candidates: Vec<(usize, &Row)> = match (&shared, &hashed) {
                    (Some(right_rows), Some(table)) => {
                        let key = hash_key(step.hash_keys.iter().map(|(l, _)| l), &left, &env)?;
                        key.and_then(|k| table.get(&k)).map_or_else(Vec::new, |hits| {
                            hits.iter().filter_map(|&i| Some((i, right_rows.get(i)?))).collect()
                        })
                    }
                    (Some(right_rows), None) => right_rows.iter().enumerate().collect(),
                    (None, _) => {
                        per_row = self.source_rows(&step.right, derived, &inner_env)?;
                        per_row.iter().enumerate().collect()
                    }
                };
                work.charge(candidates.len() as u64)?;
                for (position, right) in candidates {
                    let mut combined = left.clone();
                    combined.extend(right.iter().cloned());
                    if let Some(c) = &step.condition {
                        let pass =
                            if condition_per_row { self.passes_row(c, &combined)? } else { c.passes(&combined, &env)? };
                        if !pass {
                            continue;
                        }
                    }
                    matched = true;
                    if let Some(m) = right_matched.get_mut(position) {
                        *m = true;
                    }
                    self.reader.materialized.charge_row(&combined)?;
                    next.push(combined);
                    self.reader.check_rows(next.len())?;
                }
            }
            if !matched && step.kind.keeps_left() {
                let mut combined = left;
                combined.extend(std::iter::repeat_n(Value::Null, right_width));
                self.reader.materialized.charge_row(&combined)?;
                next.push(combined);
                self.reader.check_rows(next.len())?;
            }
        }
        // The planner scans the right side of a RIGHT or FULL join once (never per left row).
        let unmatched = shared.iter().flatten().zip(&right_matched).filter(|(_, m)| !**m);
        for (right, _) in unmatched {
            let mut combined = vec![Value::Null; step.left_width];
            combined.extend(right.iter().cloned());
            self.reader.materialized.charge_row(&combined)?;
            next.push(combined);
            self.reader.check_rows(next.len())?;
        }
        Ok(next)
    }
}
