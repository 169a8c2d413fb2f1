//! Binding of window calls (`f(...) OVER ...`) and the WINDOW clause (see `crate::window`).

use super::*;
use crate::window::{Frame, FrameBound, FrameUnits, WindowCall, WindowFunc, WindowOrder, WINDOW_COLUMN_BASE};

/// Whether a window call may appear where the binder is.
pub(super) enum WindowState {
    /// Not here: the clause, for the error when the binding mode does not name it.
    Denied(&'static str),
    /// In a window call's arguments or window: another call would nest.
    Nested,
    /// In a select list or ORDER BY: calls are collected here.
    Allowed(WindowCtx),
}

pub(super) struct WindowCtx {
    pub calls: Vec<WindowCall>,
    /// The WINDOW clause's definitions, resolved (no `window_name` left).
    named: Vec<(String, sql::WindowSpec)>,
}

/// PostgreSQL aggregates Pistou does not have, named in the 0A000 error with OVER.
const MISSING_AGGREGATES: &[&str] = &[
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
    "bit_and",
    "bit_or",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "mode",
    "percentile_cont",
    "percentile_disc",
    "corr",
    "covar_pop",
    "covar_samp",
    "regr_count",
];

fn windowing_error<T>(message: impl Into<String>) -> Result<T> {
    err(SqlState::WindowingError, message)
}

fn lookup<'n>(named: &'n [(String, sql::WindowSpec)], name: &str) -> Result<&'n sql::WindowSpec> {
    named
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s)
        .ok_or_else(|| SqlError::new(SqlState::UndefinedObject, format!("window \"{name}\" does not exist")))
}

/// `spec` with the window it names (`OVER (w ORDER BY ...)`) merged in, as PostgreSQL does:
/// the partitioning comes from `w`, the ordering from whichever has one, the frame from
/// `spec`.
fn merge(named: &[(String, sql::WindowSpec)], spec: &sql::WindowSpec) -> Result<sql::WindowSpec> {
    let Some(base_name) = &spec.window_name else { return Ok(spec.clone()) };
    let name = ident(base_name);
    let base = lookup(named, &name)?;
    if !spec.partition_by.is_empty() {
        return windowing_error(format!("cannot override PARTITION BY clause of window \"{name}\""));
    }
    if !base.order_by.is_empty() && !spec.order_by.is_empty() {
        return windowing_error(format!("cannot override ORDER BY clause of window \"{name}\""));
    }
    if base.window_frame.is_some() {
        return windowing_error(format!("cannot copy window \"{name}\" because it has a frame clause"));
    }
    Ok(sql::WindowSpec {
        window_name: None,
        partition_by: base.partition_by.clone(),
        order_by: if spec.order_by.is_empty() { base.order_by.clone() } else { spec.order_by.clone() },
        window_frame: spec.window_frame.clone(),
    })
}

fn resolve(named: &[(String, sql::WindowSpec)], over: &sql::WindowType) -> Result<sql::WindowSpec> {
    match over {
        sql::WindowType::NamedWindow(w) => lookup(named, &ident(w)).cloned(),
        sql::WindowType::WindowSpec(spec) => merge(named, spec),
    }
}

impl Binder<'_> {
    /// Allows window calls (in a SELECT's list and ORDER BY), with the WINDOW clause's
    /// definitions; what was there before is returned for `select` to put back.
    pub(super) fn allow_windows(&mut self, definitions: &[sql::NamedWindowDefinition]) -> Result<()> {
        let mut named: Vec<(String, sql::WindowSpec)> = Vec::new();
        for sql::NamedWindowDefinition(name, definition) in definitions {
            let name = ident(name);
            if named.iter().any(|(n, _)| *n == name) {
                return windowing_error(format!("window \"{name}\" is already defined"));
            }
            let spec = match definition {
                sql::NamedWindowExpr::NamedWindow(other) => lookup(&named, &ident(other))?.clone(),
                sql::NamedWindowExpr::WindowSpec(spec) => merge(&named, spec)?,
            };
            named.push((name, spec));
        }
        self.windows = WindowState::Allowed(WindowCtx { calls: Vec::new(), named });
        Ok(())
    }

    /// Static type of window call placeholder `e` (see `WINDOW_COLUMN_BASE`).
    pub(super) fn window_type(&self, e: &Expr) -> Option<SqlType> {
        let (Expr::Column(c), WindowState::Allowed(ctx)) = (e, &self.windows) else { return None };
        ctx.calls.get(c.checked_sub(WINDOW_COLUMN_BASE)?).and_then(|call| call.ty)
    }

    /// `f(args) OVER window`: a placeholder column for the call's value.
    pub(super) fn window_function(
        &mut self,
        f: &sql::Function,
        over: &sql::WindowType,
        name: &str,
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Expr> {
        let (args, distinct) = super::expr::function_args(f)?;
        if let Mode::Detect(found) = mode {
            // Only aggregates in the arguments or the window make the query an aggregate one.
            let mut detect = Mode::Detect(found);
            for a in args.iter().flatten() {
                let _ = self.expr(a, scope, &mut detect);
            }
            if let sql::WindowType::WindowSpec(spec) = over {
                for e in spec.partition_by.iter().chain(spec.order_by.iter().map(|o| &o.expr)) {
                    let _ = self.expr(e, scope, &mut detect);
                }
            }
            return Ok(Expr::Const(Value::Null));
        }
        if matches!(mode, Mode::Plain("aggregate function calls")) {
            return err(SqlState::GroupingError, "aggregate function calls cannot contain window function calls");
        }
        let ctx = match std::mem::replace(&mut self.windows, WindowState::Nested) {
            WindowState::Allowed(ctx) => ctx,
            other => {
                let message = match (&other, &*mode) {
                    (WindowState::Nested, _) => "window function calls cannot be nested".to_string(),
                    (_, Mode::Plain(clause)) => format!("window functions are not allowed in {clause}"),
                    (WindowState::Denied(clause), _) => format!("window functions are not allowed in {clause}"),
                    _ => "window functions are not allowed here".to_string(),
                };
                self.windows = other;
                return windowing_error(message);
            }
        };
        let call =
            resolve(&ctx.named, over).and_then(|spec| self.window_call(f, name, (&args, distinct), &spec, scope, mode));
        if let Ok(call) = &call {
            self.infer_window_params(call, scope, mode);
        }
        let mut ctx = ctx;
        let result = call.map(|call| match ctx.calls.iter().position(|c| *c == call) {
            Some(k) => k,
            None => {
                ctx.calls.push(call);
                ctx.calls.len() - 1
            }
        });
        self.windows = WindowState::Allowed(ctx);
        Ok(Expr::Column(WINDOW_COLUMN_BASE + result?))
    }

    fn window_call(
        &mut self,
        f: &sql::Function,
        name: &str,
        (args, distinct): (&[Option<&sql::Expr>], bool),
        spec: &sql::WindowSpec,
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<WindowCall> {
        if f.filter.is_some() {
            return unsupported("FILTER in a window call");
        }
        if f.null_treatment.is_some() || !f.within_group.is_empty() {
            return unsupported(format!("this window call syntax ({f})"));
        }
        if distinct {
            return unsupported("DISTINCT in a window function");
        }
        let mut partition = Vec::with_capacity(spec.partition_by.len());
        for e in &spec.partition_by {
            partition.push(self.expr(e, scope, mode)?);
        }
        let mut order = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let (desc, nulls_first) = Self::sort_options(o)?;
            let expr = self.expr(&o.expr, scope, mode)?;
            if self.type_of(&expr, scope, mode) == Some(SqlType::Jsonb) {
                return unsupported("ORDER BY a jsonb value (PostgreSQL's jsonb sort order is not implemented)");
            }
            order.push(WindowOrder { expr, desc, nulls_first });
        }
        let frame = match &spec.window_frame {
            None => Frame::default_frame(),
            Some(fr) => self.frame(fr, order.len())?,
        };
        let count = |range: std::ops::RangeInclusive<usize>| -> Result<()> {
            if range.contains(&args.len()) {
                Ok(())
            } else {
                err(SqlState::UndefinedFunction, format!("function {name} does not take {} arguments", args.len()))
            }
        };
        let asts = || -> Result<Vec<&sql::Expr>> {
            args.iter().map(|a| a.map_or_else(|| unsupported(format!("* argument to {name}")), Ok)).collect()
        };
        let mut bound = Vec::new();
        let mut inputs = Vec::new();
        if aggregate_function(name).is_none() {
            for a in asts()? {
                let e = self.expr(a, scope, mode)?;
                inputs.push(self.input_type(a, &e, scope, mode));
                bound.push(e);
            }
        }
        // Integer arguments (ntile's count, lag's offset, nth_value's n): a literal is read
        // as an integer, other types are refused.
        let integer_arg = |e: &mut Expr, input: Option<&InputType>| -> Result<()> {
            match input {
                Some(InputType::Known(t)) if !t.is_integer() => {
                    err(SqlState::UndefinedFunction, format!("function {name} needs an integer, not {t}"))
                }
                Some(i) => coerce_in_place(e, *i, SqlType::Int4),
                None => Ok(()),
            }
        };
        let (func, ty) = match name {
            // With arguments these are PostgreSQL's hypothetical-set aggregates.
            "rank" | "dense_rank" | "percent_rank" | "cume_dist" if !args.is_empty() => {
                return err(
                    SqlState::WrongObjectType,
                    format!("WITHIN GROUP is required for ordered-set aggregate {name}"),
                );
            }
            "row_number" | "rank" | "dense_rank" => {
                count(0..=0)?;
                let func = match name {
                    "row_number" => WindowFunc::RowNumber,
                    "rank" => WindowFunc::Rank,
                    _ => WindowFunc::DenseRank,
                };
                (func, Some(SqlType::Int))
            }
            "percent_rank" | "cume_dist" => {
                count(0..=0)?;
                let func = if name == "percent_rank" { WindowFunc::PercentRank } else { WindowFunc::CumeDist };
                (func, Some(SqlType::Float))
            }
            "ntile" => {
                count(1..=1)?;
                if let Some(e) = bound.get_mut(0) {
                    integer_arg(e, inputs.first())?;
                }
                (WindowFunc::Ntile, Some(SqlType::Int4))
            }
            "lag" | "lead" => {
                count(1..=3)?;
                if let Some(e) = bound.get_mut(1) {
                    integer_arg(e, inputs.get(1))?;
                }
                // lag(anycompatible, integer, anycompatible): value and default share a type.
                let mut ty = inputs.first().and_then(|i| match i {
                    InputType::Known(t) => Some(*t),
                    _ => None,
                });
                if let ([value, _, default], [vi, _, di]) = (bound.as_mut_slice(), inputs.as_slice()) {
                    ty = common_type(&name.to_uppercase(), &[*vi, *di])?;
                    if let Some(t) = ty {
                        coerce_in_place(value, *vi, t)?;
                        coerce_in_place(default, *di, t)?;
                    }
                }
                (if name == "lag" { WindowFunc::Lag } else { WindowFunc::Lead }, ty)
            }
            "first_value" | "last_value" | "nth_value" => {
                let func = match name {
                    "first_value" => WindowFunc::FirstValue,
                    "last_value" => WindowFunc::LastValue,
                    _ => WindowFunc::NthValue,
                };
                count(if func == WindowFunc::NthValue { 2..=2 } else { 1..=1 })?;
                if let Some(e) = bound.get_mut(1) {
                    integer_arg(e, inputs.get(1))?;
                }
                let ty = bound.first().and_then(|e| self.type_of(e, scope, mode));
                (func, ty)
            }
            _ => {
                let agg = aggregate_function(name).filter(|a| {
                    !matches!(
                        a,
                        AggFunc::ArrayAgg
                            | AggFunc::BoolAnd
                            | AggFunc::BoolOr
                            | AggFunc::StringAgg
                            | AggFunc::JsonbAgg
                            | AggFunc::JsonbObjectAgg
                    )
                });
                let Some(agg) = agg else {
                    if MISSING_AGGREGATES.contains(&name) {
                        return unsupported(format!("aggregate {name}"));
                    }
                    if crate::expr::Func::by_name(name).is_some() {
                        return err(
                            SqlState::WrongObjectType,
                            format!("OVER specified, but {name} is not a window function nor an aggregate function"),
                        );
                    }
                    return err(SqlState::UndefinedFunction, format!("function {name} does not exist"));
                };
                let call = match (agg, args) {
                    (AggFunc::Count, [None]) => AggCall::over(AggFunc::CountStar, None, distinct, None),
                    (_, [Some(arg)]) => {
                        let arg = self.expr(arg, scope, mode)?;
                        let arg_type = self.type_of(&arg, scope, mode);
                        AggCall::over(agg, Some(arg), distinct, arg_type)
                    }
                    _ => {
                        return err(SqlState::UndefinedFunction, format!("function {name} takes exactly one argument"))
                    }
                };
                let ty = aggregate_type(&call);
                (WindowFunc::Aggregate(call), ty)
            }
        };
        Ok(WindowCall { func, args: bound, partition, order, frame, ty })
    }

    /// Parameter types from the call's expressions (the select-list expression around the
    /// call only sees its placeholder column).
    fn infer_window_params(&mut self, call: &WindowCall, scope: &Scope, mode: &Mode) {
        let input = match mode {
            Mode::Agg(ctx) => self.grouped(scope, ctx).types(),
            _ => scope.types(),
        };
        let agg_arg = match &call.func {
            WindowFunc::Aggregate(c) => c.arg.as_ref(),
            _ => None,
        };
        let mut types = std::mem::take(&mut self.param_types);
        let exprs = call.args.iter().chain(agg_arg).chain(&call.partition).chain(call.order.iter().map(|o| &o.expr));
        for e in exprs {
            infer_param_types(e, &input, &|x| self.placeholder_type(x), &mut types);
        }
        self.param_types = types;
    }

    fn frame(&mut self, fr: &sql::WindowFrame, order_len: usize) -> Result<Frame> {
        let units = match fr.units {
            sql::WindowFrameUnits::Rows => FrameUnits::Rows,
            sql::WindowFrameUnits::Range => FrameUnits::Range,
            sql::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        if units == FrameUnits::Groups && order_len == 0 {
            return windowing_error("GROUPS mode requires an ORDER BY clause");
        }
        let end_ast = fr.end_bound.clone().unwrap_or(sql::WindowFrameBound::CurrentRow);
        let mut bound = |b: &sql::WindowFrameBound| -> Result<FrameBound> {
            let offset = |this: &mut Self, e: &sql::Expr| -> Result<Expr> {
                if units == FrameUnits::Range {
                    return unsupported("RANGE with an offset PRECEDING or FOLLOWING (ROWS and GROUPS offsets are)");
                }
                let mut x = this.constant_expr(e, "window frame offsets")?;
                hint_param_type(&x, SqlType::Int, &mut this.param_types);
                match this.input_type(e, &x, &Scope::default(), &Mode::Plain("")) {
                    InputType::Known(t) if !t.is_integer() => {
                        return err(SqlState::DatatypeMismatch, format!("frame offset must be an integer, not {t}"))
                    }
                    InputType::Literal => coerce_in_place(&mut x, InputType::Literal, SqlType::Int)?,
                    _ => {}
                }
                Ok(x)
            };
            Ok(match b {
                sql::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
                sql::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
                sql::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
                sql::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(self, e)?),
                sql::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(self, e)?),
            })
        };
        let start = bound(&fr.start_bound)?;
        let end = bound(&end_ast)?;
        match (&start, &end) {
            (FrameBound::UnboundedFollowing, _) => windowing_error("frame start cannot be UNBOUNDED FOLLOWING"),
            (_, FrameBound::UnboundedPreceding) => windowing_error("frame end cannot be UNBOUNDED PRECEDING"),
            (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
                windowing_error("frame starting from current row cannot have preceding rows")
            }
            (FrameBound::Following(_), FrameBound::Preceding(_) | FrameBound::CurrentRow) => {
                windowing_error("frame starting from following row cannot have preceding rows")
            }
            _ => Ok(Frame { units, start, end }),
        }
    }
}
