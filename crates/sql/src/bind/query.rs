//! Binding of queries: SELECT, set operations, ORDER BY/LIMIT, FROM and join planning.

use super::*;
use std::collections::BTreeMap;

impl Binder<'_> {
    pub(crate) fn query(&mut self, q: &sql::Query) -> Result<QueryPlan> {
        self.enter()?;
        let result = self.query_inner(q);
        self.depth -= 1;
        result
    }

    pub(super) fn query_inner(&mut self, q: &sql::Query) -> Result<QueryPlan> {
        let Some(with) = &q.with else { return self.query_body(q) };
        let outer_ctes = self.ctes.len();
        let result = (|| {
            for cte in &with.cte_tables {
                if cte.from.is_some() {
                    return unsupported("CTE FROM");
                }
                let name = ident(&cte.alias.name);
                let recursive = if with.recursive { self.recursive_cte(&name, &cte.query, &cte.alias)? } else { None };
                let mut plan = match recursive {
                    Some(plan) => plan,
                    None => self.query(&cte.query)?,
                };
                rename_columns(&mut plan, &cte.alias)?;
                self.ctes.push((name, plan));
            }
            self.query_body(q)
        })();
        self.ctes.truncate(outer_ctes);
        result
    }

    pub(super) fn query_body(&mut self, q: &sql::Query) -> Result<QueryPlan> {
        if q.fetch.is_some()
            || q.for_clause.is_some()
            || q.settings.is_some()
            || q.format_clause.is_some()
            || !q.pipe_operators.is_empty()
        {
            return unsupported("this query clause");
        }
        // Row locks are meaningless here: every transaction is serializable (Pesto's CC check).
        let order_by: &[sql::OrderByExpr] = match &q.order_by {
            None => &[],
            Some(sql::OrderBy { kind: sql::OrderByKind::Expressions(e), interpolate: None }) => e,
            Some(_) => return unsupported("this ORDER BY form"),
        };
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(sql::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return unsupported("LIMIT BY");
                }
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(sql::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        };
        let limit = limit.map(|e| self.constant_expr(e, "LIMIT")).transpose()?;
        let offset = offset.map(|e| self.constant_expr(e, "OFFSET")).transpose()?;
        for e in limit.iter().chain(&offset) {
            hint_param_type(e, SqlType::Int, &mut self.param_types);
        }
        let ((body, names, types, limits, untyped), order_by) = match &*q.body {
            sql::SetExpr::Select(select) => {
                let (core, (names, types, limits, untyped), keys) = self.select(select, order_by)?;
                ((QueryBody::Select(Box::new(core)), names, types, limits, untyped), keys)
            }
            other => {
                let body = self.set_expr(other)?;
                let keys: Vec<SortKey> =
                    order_by.iter().map(|o| self.output_sort_key(o, &body.1)).collect::<Result<_>>()?;
                if keys.iter().any(|k| body.2.get(k.column).copied().flatten() == Some(SqlType::Jsonb)) {
                    return unsupported("ORDER BY a jsonb value (PostgreSQL's jsonb sort order is not implemented)");
                }
                (body, keys)
            }
        };
        Ok(QueryPlan { body, order_by, limit, offset, names, types, limits, untyped, depth: self.outer_scopes.len() })
    }

    pub(super) fn set_expr(&mut self, e: &sql::SetExpr) -> Result<BodyWithColumns> {
        self.enter()?;
        let result = self.set_expr_inner(e);
        self.depth -= 1;
        result
    }

    pub(super) fn set_expr_inner(&mut self, e: &sql::SetExpr) -> Result<BodyWithColumns> {
        Ok(match e {
            sql::SetExpr::Select(s) => {
                let (core, (names, types, limits, untyped), _) = self.select(s, &[])?;
                (QueryBody::Select(Box::new(core)), names, types, limits, untyped)
            }
            sql::SetExpr::Query(q) => {
                if q.order_by.is_some() || q.limit_clause.is_some() {
                    return unsupported("ORDER BY or LIMIT inside a set operation operand");
                }
                self.set_expr(&q.body)?
            }
            sql::SetExpr::Values(values) => {
                let mut rows = values
                    .rows
                    .iter()
                    .map(|r| r.content.iter().map(|x| self.constant_expr(x, "VALUES")).collect::<Result<Vec<_>>>())
                    .collect::<Result<Vec<_>>>()?;
                let width = rows.first().map_or(0, Vec::len);
                if rows.iter().any(|r| r.len() != width) {
                    return err(SqlState::SyntaxError, "VALUES lists must all be the same length");
                }
                // Each column gets the common type of its values, as in PostgreSQL.
                let mut types = Vec::with_capacity(width);
                for i in 0..width {
                    let inputs: Vec<InputType> = values
                        .rows
                        .iter()
                        .zip(&rows)
                        .map(|(ast, row)| match (ast.content.get(i), row.get(i)) {
                            (Some(a), Some(e)) => self.input_type(a, e, &Scope::default(), &Mode::Plain("VALUES")),
                            _ => InputType::Opaque,
                        })
                        .collect();
                    let ty = common_type("VALUES", &inputs)?;
                    if let Some(t) = ty {
                        for (row, input) in rows.iter_mut().zip(&inputs) {
                            row.get_mut(i).map_or(Ok(()), |e| coerce_in_place(e, *input, t))?;
                        }
                    }
                    types.push(ty);
                }
                let limits = vec![TypeLimits::default(); width];
                (
                    QueryBody::Values(rows),
                    (1..=width).map(|i| format!("column{i}")).collect(),
                    types,
                    limits,
                    vec![false; width],
                )
            }
            sql::SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let op = match op {
                    sql::SetOperator::Union => SetOp::Union,
                    sql::SetOperator::Except | sql::SetOperator::Minus => SetOp::Except,
                    sql::SetOperator::Intersect => SetOp::Intersect,
                };
                let all = match set_quantifier {
                    sql::SetQuantifier::All => true,
                    sql::SetQuantifier::Distinct | sql::SetQuantifier::None => false,
                    other => return unsupported(format!("set quantifier {other}")),
                };
                let (mut l, names, left_types, left_limits, left_untyped) = self.set_expr(left)?;
                let (mut r, right_names, right_types, right_limits, right_untyped) = self.set_expr(right)?;
                if names.len() != right_names.len() {
                    return err(SqlState::SyntaxError, "each set operation query must have the same number of columns");
                }
                // Column by column, both operands are brought to their common type.
                let context = match op {
                    SetOp::Union => "UNION",
                    SetOp::Except => "EXCEPT",
                    SetOp::Intersect => "INTERSECT",
                };
                let input = |ty: &Option<SqlType>, untyped: &bool| match ty {
                    _ if *untyped => InputType::Literal,
                    Some(t) => InputType::Known(*t),
                    None => InputType::Opaque,
                };
                let mut types = Vec::with_capacity(names.len());
                let columns = left_types.iter().zip(&left_untyped).zip(right_types.iter().zip(&right_untyped));
                for (i, ((lt, lu), (rt, ru))) in columns.enumerate() {
                    let (li, ri) = (input(lt, lu), input(rt, ru));
                    let ty = common_type(context, &[li, ri])?;
                    if let Some(t) = ty {
                        coerce_column(&mut l, i, li, t)?;
                        coerce_column(&mut r, i, ri, t)?;
                    }
                    types.push(ty);
                }
                let limits = left_limits
                    .into_iter()
                    .zip(right_limits)
                    .zip(left_types.iter().zip(&right_types))
                    .map(|((a, b), (lt, rt))| if a == b && lt == rt { a } else { TypeLimits::default() })
                    .collect();
                let untyped = vec![false; names.len()];
                (QueryBody::SetOp { op, all, left: Box::new(l), right: Box::new(r) }, names, types, limits, untyped)
            }
            // `TABLE x` is `SELECT * FROM x`.
            sql::SetExpr::Table(t) => {
                let Some(name) = &t.table_name else { return err(SqlState::SyntaxError, "TABLE needs a table name") };
                let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
                let relation = match &t.schema_name {
                    Some(schema) => format!("{}.{}", quote(schema), quote(name)),
                    None => quote(name),
                };
                let text = format!("SELECT * FROM {relation}");
                let parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &text)
                    .map_err(|e| SqlError::new(SqlState::SyntaxError, e.to_string()))?;
                let Some(sql::Statement::Query(q)) = parsed.first() else {
                    return err(SqlState::InternalError, "TABLE did not parse as a query");
                };
                let sql::SetExpr::Select(s) = &*q.body else {
                    return err(SqlState::InternalError, "TABLE did not parse as a SELECT");
                };
                let (core, (names, types, limits, untyped), _) = self.select(s, &[])?;
                (QueryBody::Select(Box::new(core)), names, types, limits, untyped)
            }
            other => return unsupported(format!("query body {other}")),
        })
    }

    pub(super) fn sort_options(o: &sql::OrderByExpr) -> Result<(bool, bool)> {
        if o.with_fill.is_some() {
            return unsupported("WITH FILL");
        }
        let desc = match &o.options.sort {
            None | Some(sql::OrderBySort::Asc) => false,
            Some(sql::OrderBySort::Desc) => true,
            Some(sql::OrderBySort::Using(op)) => using_is_descending(op)?,
        };
        // PostgreSQL: NULLs sort as larger than any value.
        Ok((desc, o.options.nulls_first.unwrap_or(desc)))
    }

    /// ORDER BY (or DISTINCT ON) position or output column name (the only forms allowed over
    /// set operations).
    pub(super) fn output_position(e: &sql::Expr, names: &[String]) -> Option<Result<usize>> {
        match e {
            sql::Expr::Value(v) => match &v.value {
                sql::Value::Number(n, _) => Some(match n.parse::<usize>() {
                    Ok(p) if (1..=names.len()).contains(&p) => Ok(p - 1),
                    _ => err(SqlState::InvalidColumnReference, format!("ORDER BY position {n} is not in select list")),
                }),
                _ => None,
            },
            sql::Expr::Identifier(i) => {
                let name = ident(i);
                let hits: Vec<usize> = names.iter().enumerate().filter(|(_, n)| **n == name).map(|(p, _)| p).collect();
                match hits.as_slice() {
                    [p] => Some(Ok(*p)),
                    [] => None,
                    _ => Some(err(SqlState::AmbiguousColumn, format!("ORDER BY \"{name}\" is ambiguous"))),
                }
            }
            _ => None,
        }
    }

    pub(super) fn output_sort_key(&mut self, o: &sql::OrderByExpr, names: &[String]) -> Result<SortKey> {
        let (desc, nulls_first) = Self::sort_options(o)?;
        match Self::output_position(&o.expr, names) {
            Some(column) => Ok(SortKey { column: column?, desc, nulls_first }),
            None => unsupported("ORDER BY expressions over a set operation (use output column names or positions)"),
        }
    }

    pub(super) fn select(&mut self, s: &sql::Select, order_by: &[sql::OrderByExpr]) -> Result<SelectWithColumns> {
        // Window calls belong to the SELECT they appear in: an enclosing one's are put back.
        let enclosing = std::mem::replace(&mut self.windows, window::WindowState::Denied("this context"));
        let enclosing_srfs = std::mem::replace(&mut self.srfs, srf::SrfState::Denied("this context"));
        let result = self.select_inner(s, order_by);
        self.windows = enclosing;
        self.srfs = enclosing_srfs;
        result
    }

    fn select_inner(&mut self, s: &sql::Select, order_by: &[sql::OrderByExpr]) -> Result<SelectWithColumns> {
        if s.top.is_some()
            || s.into.is_some()
            || !s.lateral_views.is_empty()
            || s.prewhere.is_some()
            || !s.connect_by.is_empty()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
            || s.qualify.is_some()
            || s.exclude.is_some()
            || s.value_table_mode.is_some()
        {
            return unsupported("this SELECT clause");
        }
        let (distinct, distinct_on) = match &s.distinct {
            None | Some(sql::Distinct::All) => (false, None),
            Some(sql::Distinct::Distinct) => (true, None),
            Some(sql::Distinct::On(on)) => (false, Some(on.as_slice())),
        };
        let (scope, from_items) = self.bind_from(&s.from)?;
        // Inner-joined with an empty system relation (Pistou has no policies, publications,
        // extended statistics…): the query has no row, so an expression it never evaluates
        // that uses a feature Pistou lacks is a NULL instead of an error (psql's `\d` asks
        // about such objects with array functions).
        let empty_input = !from_items.iter().any(|i| i.kind.keeps_right())
            && from_items.iter().any(|i| {
                i.kind == JoinKind::Inner
                    && i.derived
                        .as_deref()
                        .is_some_and(|d| matches!(&d.body, QueryBody::Values(rows) if rows.is_empty()))
            });
        let where_conjuncts = match &s.selection {
            Some(w) => {
                let mut v = Vec::new();
                let bound =
                    self.never_evaluated(empty_input, |this| this.expr(w, &scope, &mut Mode::Plain("WHERE")))?;
                conjuncts(bound, &mut v);
                v
            }
            None => Vec::new(),
        };

        // Projection items as (expression, name) pairs; wildcards expand to columns.
        let mut items: Vec<(Option<&sql::Expr>, Option<usize>, String)> = Vec::new();
        for item in &s.projection {
            match item {
                sql::SelectItem::UnnamedExpr(e) => items.push((Some(e), None, output_name(e))),
                sql::SelectItem::ExprWithAlias { expr, alias } => items.push((Some(expr), None, ident(alias))),
                sql::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() {
                        return err(SqlState::SyntaxError, "SELECT * with no tables specified is not valid");
                    }
                    for i in scope.star_columns() {
                        let name = scope.cols.get(i).map(|c| c.name.clone()).unwrap_or_default();
                        items.push((None, Some(i), name));
                    }
                }
                sql::SelectItem::QualifiedWildcard(sql::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                    let t = object_name(n)?;
                    let before = items.len();
                    items.extend(
                        scope
                            .cols
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| c.table == t && !c.name.starts_with('\0'))
                            .map(|(i, c)| (None, Some(i), c.name.clone())),
                    );
                    if items.len() == before {
                        return err(SqlState::UndefinedTable, format!("missing FROM-clause entry for table \"{t}\""));
                    }
                }
                other => return unsupported(format!("select item {other}")),
            }
        }
        let names: Vec<String> = items.iter().map(|(_, _, n)| n.clone()).collect();

        let group_ast: Vec<sql::Expr> = match &s.group_by {
            sql::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                exprs.iter().map(|g| self.group_item(g, &items, &scope)).collect::<Result<_>>()?
            }
            _ => return unsupported("this GROUP BY form"),
        };
        let mut aggregating = !group_ast.is_empty() || s.having.is_some();
        if !aggregating {
            let mut found = false;
            let exprs = items.iter().filter_map(|(e, _, _)| *e).chain(order_by.iter().map(|o| &o.expr));
            for e in exprs {
                // Errors surface in the real binding pass below.
                let _ = self.expr(e, &scope, &mut Mode::Detect(&mut found));
            }
            aggregating = found;
        }

        let mut ctx = AggCtx { group_ast: Vec::new(), group_bound: Vec::new(), calls: Vec::new() };
        if aggregating {
            for g in &group_ast {
                let bound = self.expr(g, &scope, &mut Mode::Plain("GROUP BY"))?;
                ctx.group_bound.push(bound);
            }
            ctx.group_ast = group_ast;
            functionally_dependent_keys(&from_items, &mut ctx.group_bound);
        }
        self.allow_windows(&s.named_window)?;
        self.srfs = srf::SrfState::Allowed(Vec::new());
        let mut output = Vec::with_capacity(items.len());
        for (e, col, _) in &items {
            let bound = if aggregating {
                let mut mode = Mode::Agg(&mut ctx);
                match (e, col) {
                    (Some(e), _) => self.expr(e, &scope, &mut mode)?,
                    (None, Some(c)) => match ctx.group_bound.iter().position(|g| *g == Expr::Column(*c)) {
                        Some(p) => Expr::Column(p),
                        None => {
                            return err(
                                SqlState::GroupingError,
                                format!(
                                "column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                                names.get(output.len()).cloned().unwrap_or_default()
                            ),
                            )
                        }
                    },
                    (None, None) => return err(SqlState::InternalError, "empty select item"),
                }
            } else {
                match (e, col) {
                    (Some(e), _) => self
                        .never_evaluated(empty_input, |this| this.expr(e, &scope, &mut Mode::Plain("this context")))?,
                    (None, Some(c)) => Expr::Column(*c),
                    (None, None) => return err(SqlState::InternalError, "empty select item"),
                }
            };
            output.push(bound);
        }
        let windows = std::mem::replace(&mut self.windows, window::WindowState::Denied("HAVING"));
        let srfs = std::mem::replace(&mut self.srfs, srf::SrfState::Denied("HAVING"));
        let having = match &s.having {
            Some(h) if aggregating => Some(self.expr(h, &scope, &mut Mode::Agg(&mut ctx))?),
            _ => None,
        };
        self.windows = windows;
        self.srfs = srfs;
        let mut keys = Vec::new();
        for o in order_by {
            let (desc, nulls_first) = Self::sort_options(o)?;
            let column = match Self::output_position(&o.expr, &names) {
                Some(p) => p?,
                None => {
                    let bound = if aggregating {
                        self.expr(&o.expr, &scope, &mut Mode::Agg(&mut ctx))?
                    } else {
                        self.expr(&o.expr, &scope, &mut Mode::Plain("ORDER BY"))?
                    };
                    match output.iter().position(|x| *x == bound) {
                        Some(p) => p,
                        None => {
                            if distinct {
                                return err(
                                    SqlState::InvalidColumnReference,
                                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                                );
                            }
                            output.push(bound);
                            output.len() - 1
                        }
                    }
                }
            };
            keys.push(SortKey { column, desc, nulls_first });
        }
        let distinct_on = match distinct_on {
            None => None,
            Some(on) => {
                let mut columns = Vec::with_capacity(on.len());
                for e in on {
                    let column = match Self::output_position(e, &names) {
                        Some(p) => p?,
                        None => {
                            let bound = if aggregating {
                                self.expr(e, &scope, &mut Mode::Agg(&mut ctx))?
                            } else {
                                self.expr(e, &scope, &mut Mode::Plain("DISTINCT ON"))?
                            };
                            match output.iter().position(|x| *x == bound) {
                                Some(p) => p,
                                None => {
                                    output.push(bound);
                                    output.len() - 1
                                }
                            }
                        }
                    };
                    if !columns.contains(&column) {
                        columns.push(column);
                    }
                }
                check_distinct_on_order(&columns, &keys)?;
                Some(DistinctOn { columns, order: keys.clone() })
            }
        };
        let output_scope = if aggregating { self.grouped(&scope, &ctx) } else { scope.clone() };
        // Sorting jsonb needs PostgreSQL's jsonb btree order, which Pistou does not have.
        for k in &keys {
            if let Some(e) = output.get(k.column) {
                if self.type_of(e, &output_scope, &Mode::Plain("")) == Some(SqlType::Jsonb) {
                    return unsupported("ORDER BY a jsonb value (PostgreSQL's jsonb sort order is not implemented)");
                }
            }
        }
        let types = output.iter().take(names.len()).map(|e| self.type_of(e, &output_scope, &Mode::Plain(""))).collect();
        let limits = output.iter().take(names.len()).map(|e| self.char_limits(e, &output_scope)).collect();
        // Window calls read the row after WHERE (or the grouped row); their values follow it.
        let windows = match std::mem::replace(&mut self.windows, window::WindowState::Denied("this context")) {
            window::WindowState::Allowed(w) => w.calls,
            _ => Vec::new(),
        };
        let srfs = match std::mem::replace(&mut self.srfs, srf::SrfState::Denied("this context")) {
            srf::SrfState::Allowed(calls) => calls,
            _ => Vec::new(),
        };
        if !srfs.is_empty() {
            if !windows.is_empty() {
                return unsupported("set-returning functions together with window functions");
            }
            // The calls' values follow the row after WHERE (or the grouped row).
            let width = if aggregating { ctx.group_bound.len() + ctx.calls.len() } else { scope.cols.len() };
            let base = srf::SRF_COLUMN_BASE;
            for e in &mut output {
                *e = e.map_columns(&|c| Expr::Column(if c >= base { width + (c - base) } else { c }));
            }
        }
        if !windows.is_empty() {
            let width = if aggregating { ctx.group_bound.len() + ctx.calls.len() } else { scope.cols.len() };
            let base = crate::window::WINDOW_COLUMN_BASE;
            for e in &mut output {
                *e = e.map_columns(&|c| Expr::Column(if c >= base { width + (c - base) } else { c }));
            }
        }
        // Bare quoted or NULL literals: a set operation or INSERT gives them their type.
        let untyped = items
            .iter()
            .zip(&output)
            .map(|((e, _, _), bound)| {
                e.is_some_and(is_untyped_literal) && matches!(bound, Expr::Const(Value::Text(_) | Value::Null))
            })
            .collect();
        let (from, filter) = self.plan_from(from_items, where_conjuncts)?;
        let aggregate = aggregating.then_some(AggPlan { group_by: ctx.group_bound, calls: ctx.calls });
        Ok((
            SelectCore { from, filter, aggregate, having, windows, srfs, output, distinct, distinct_on },
            (names, types, limits, untyped),
            keys,
        ))
    }

    /// Binds an expression of a query whose input is known to be empty (see `select`): a
    /// missing feature (0A000) or function (42883) gives a NULL, and whatever the failed
    /// binding had recorded is undone.
    fn never_evaluated(&mut self, empty_input: bool, bind: impl FnOnce(&mut Self) -> Result<Expr>) -> Result<Expr> {
        let saved = (self.subqueries.len(), self.anonymous_params, self.min_level, self.param_count);
        match bind(self) {
            Err(e) if empty_input && matches!(e.state, SqlState::FeatureNotSupported | SqlState::UndefinedFunction) => {
                self.subqueries.truncate(saved.0);
                (self.anonymous_params, self.min_level, self.param_count) = (saved.1, saved.2, saved.3);
                Ok(typed_null(SqlType::Text))
            }
            other => other,
        }
    }

    /// GROUP BY item: a position or output alias refers to the select list.
    pub(super) fn group_item(
        &self,
        g: &sql::Expr,
        items: &[(Option<&sql::Expr>, Option<usize>, String)],
        scope: &Scope,
    ) -> Result<sql::Expr> {
        let by_position = |p: usize| -> Result<sql::Expr> {
            match items.get(p.wrapping_sub(1)) {
                Some((Some(e), _, _)) => Ok((*e).clone()),
                Some((None, Some(c), _)) => Ok(sql::Expr::Identifier(sql::Ident::with_quote(
                    '"',
                    scope.cols.get(*c).map(|c| c.name.clone()).unwrap_or_default(),
                ))),
                _ => err(SqlState::InvalidColumnReference, format!("GROUP BY position {p} is not in select list")),
            }
        };
        match g {
            sql::Expr::Value(v) => match &v.value {
                sql::Value::Number(n, _) => by_position(n.parse().unwrap_or(0)),
                _ => Ok(g.clone()),
            },
            sql::Expr::Identifier(i) if scope.find(None, &ident(i)).is_empty() => {
                match items.iter().position(|(e, _, name)| e.is_some() && *name == ident(i)) {
                    Some(p) => by_position(p + 1),
                    None => Ok(g.clone()),
                }
            }
            _ => Ok(g.clone()),
        }
    }

    pub(super) fn bind_from(&mut self, from: &[sql::TableWithJoins]) -> Result<(Scope, Vec<FromItem>)> {
        let mut scope = Scope::default();
        let mut items: Vec<FromItem> = Vec::new();
        let mut pending_on: Vec<(usize, &sql::JoinConstraint)> = Vec::new();
        for (list_position, twj) in from.iter().enumerate() {
            let add = |this: &mut Self,
                       factor: &sql::TableFactor,
                       kind: JoinKind,
                       scope: &mut Scope,
                       items: &mut Vec<FromItem>|
             -> Result<()> {
                if let sql::TableFactor::Derived { lateral: false, subquery, alias, sample: None } = factor {
                    let mut plan = this.query(subquery)?;
                    let alias_name = match alias {
                        Some(a) => {
                            rename_columns(&mut plan, a)?;
                            ident(&a.name)
                        }
                        None => "subquery".to_string(),
                    };
                    return this.add_derived(plan, alias_name, kind, scope, items);
                }
                if let sql::TableFactor::UNNEST { alias, array_exprs, with_offset, with_ordinality, .. } = factor {
                    let calls = array_exprs.iter().map(ToString::to_string).collect();
                    let numbered = *with_offset || *with_ordinality;
                    let (plan, alias_name) = this.function_in_from("unnest", alias.as_ref(), calls, numbered)?;
                    return this.add_derived(plan, alias_name, kind, scope, items);
                }
                if let sql::TableFactor::Table { name, alias, args: Some(args), with_ordinality, .. } = factor {
                    let function = function_name(name).unwrap_or_default();
                    if matches!(function.as_str(), "unnest" | "generate_series") && args.settings.is_none() {
                        let mut texts = Vec::with_capacity(args.args.len());
                        for a in &args.args {
                            match a {
                                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => texts.push(e.to_string()),
                                other => return unsupported(format!("argument {other} of {function} in FROM")),
                            }
                        }
                        // unnest(a, b) zips its arrays; generate_series is one call.
                        let calls = if function == "unnest" { texts } else { vec![texts.join(", ")] };
                        let (plan, alias_name) =
                            this.function_in_from(&function, alias.as_ref(), calls, *with_ordinality)?;
                        return this.add_derived(plan, alias_name, kind, scope, items);
                    }
                }
                let sql::TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    with_hints,
                    version: None,
                    with_ordinality: false,
                    partitions,
                    json_path: None,
                    sample: None,
                    index_hints,
                } = factor
                else {
                    return unsupported(format!("FROM item {factor}"));
                };
                if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
                    return unsupported("table hints");
                }
                let cte = match name.0.as_slice() {
                    [part] => part
                        .as_ident()
                        .and_then(|i| this.ctes.iter().rev().find(|(n, _)| *n == ident(i)))
                        .map(|(_, p)| p.clone()),
                    _ => None,
                };
                if let Some(QueryBody::WorkingTable(id)) = cte.as_ref().map(|p| &p.body) {
                    this.working_reference(*id, name)?;
                }
                if let Some(mut plan) = cte {
                    let alias_name = match alias {
                        Some(a) => {
                            rename_columns(&mut plan, a)?;
                            ident(&a.name)
                        }
                        None => object_name(name)?,
                    };
                    return this.add_derived(plan, alias_name, kind, scope, items);
                }
                if let Some((relname, mut plan)) = this.system_relation(name)? {
                    let alias_name = match alias {
                        Some(a) => {
                            rename_columns(&mut plan, a)?;
                            ident(&a.name)
                        }
                        None => relname,
                    };
                    return this.add_derived(plan, alias_name, kind, scope, items);
                }
                if let Some(view) = this.view_named(name)? {
                    let mut plan = this.expand_view(&view)?;
                    let alias_name = match alias {
                        Some(a) => {
                            rename_columns(&mut plan, a)?;
                            ident(&a.name)
                        }
                        None => view.name.clone(),
                    };
                    return this.add_derived(plan, alias_name, kind, scope, items);
                }
                let table = this.table(name)?;
                let (alias, renamed) = match alias {
                    Some(a) => (ident(&a.name), a.columns.as_slice()),
                    None => (table.name.clone(), &[][..]),
                };
                let visible = table.visible_columns().count();
                if renamed.len() > visible {
                    return err(
                        SqlState::InvalidColumnReference,
                        format!(
                            "table \"{alias}\" has {visible} columns available but {} columns specified",
                            renamed.len()
                        ),
                    );
                }
                if renamed.iter().any(|c| c.data_type.is_some()) {
                    return unsupported("typed column aliases");
                }
                if items.iter().any(|i| i.alias == alias) {
                    return err(SqlState::DuplicateAlias, format!("table name \"{alias}\" specified more than once"));
                }
                items.push(FromItem {
                    offset: scope.cols.len(),
                    table: table.clone(),
                    alias: alias.clone(),
                    kind,
                    on: Vec::new(),
                    derived: None,
                });
                let first = scope.cols.len();
                scope.add_table(&table, &alias);
                // `FROM t AS x (a, b)` renames the first visible columns.
                let visible_cols = scope.cols.iter_mut().skip(first).filter(|c| !c.name.starts_with('\0'));
                for (col, name) in visible_cols.zip(renamed) {
                    col.name = ident(&name.name);
                }
                Ok(())
            };
            // Parenthesized joins without an alias are flattened where that keeps their
            // meaning: at the start of a FROM item (joins are left-deep anyway), and on the
            // right of an inner join when every join inside is inner too.
            let (first, joins) = flatten_joins(twj);
            add(self, first, JoinKind::Inner, &mut scope, &mut items)?;
            for join in joins {
                use sql::JoinOperator as J;
                let (kind, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
                    J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
                    J::FullOuter(c) => (JoinKind::Full, c),
                    J::CrossJoin(c) => (JoinKind::Inner, c),
                    other => {
                        return unsupported(format!("join {other:?}").split('(').next().unwrap_or("join").to_string())
                    }
                };
                if kind.keeps_right() {
                    // Joins run left-deep over the whole FROM list, so a RIGHT or FULL join in a
                    // later list item would null-extend the items before it too.
                    if list_position > 0 {
                        return unsupported(
                            "RIGHT or FULL JOIN after a comma in FROM (or in UPDATE … FROM / DELETE … USING)",
                        );
                    }
                    if matches!(constraint, sql::JoinConstraint::Using(_) | sql::JoinConstraint::Natural) {
                        return unsupported("RIGHT or FULL JOIN with USING or NATURAL");
                    }
                }
                if let sql::TableFactor::NestedJoin { table_with_joins: nested, alias: None } = &join.relation {
                    let (inner_first, inner_joins) = flatten_joins(nested);
                    let all_inner = inner_joins
                        .iter()
                        .all(|j| matches!(j.join_operator, J::Join(_) | J::Inner(_) | J::CrossJoin(_)));
                    if kind != JoinKind::Inner || !all_inner || matches!(constraint, sql::JoinConstraint::Using(_)) {
                        return unsupported("a parenthesized join on the right of an outer join or with USING");
                    }
                    add(self, inner_first, JoinKind::Inner, &mut scope, &mut items)?;
                    for j in inner_joins {
                        let (J::Join(c) | J::Inner(c) | J::CrossJoin(c)) = &j.join_operator else { continue };
                        add(self, &j.relation, JoinKind::Inner, &mut scope, &mut items)?;
                        pending_on.push((items.len() - 1, c));
                    }
                    pending_on.push((items.len() - 1, constraint));
                    continue;
                }
                add(self, &join.relation, kind, &mut scope, &mut items)?;
                pending_on.push((items.len() - 1, constraint));
            }
        }
        let mut usings: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
        for (step, constraint) in pending_on {
            let conds = match constraint {
                sql::JoinConstraint::On(e) => self.expr(e, &scope, &mut Mode::Plain("JOIN conditions"))?,
                sql::JoinConstraint::None => continue,
                sql::JoinConstraint::Using(cols) => {
                    let names = cols.iter().map(object_name).collect::<Result<Vec<_>>>()?;
                    self.using_condition(&names, &items, step, &mut scope, &mut usings)?
                }
                sql::JoinConstraint::Natural => {
                    let names = natural_columns(&items, step, &scope);
                    self.using_condition(&names, &items, step, &mut scope, &mut usings)?
                }
            };
            let mut parts = Vec::new();
            conjuncts(conds, &mut parts);
            if let Some(item) = items.get_mut(step) {
                item.on.extend(parts);
            }
        }
        if !usings.is_empty() {
            scope.star = Some(star_after_usings(&items, &scope, &usings));
        }
        Ok((scope, items))
    }

    /// Adds a derived table (subquery or CTE) to FROM, described by a key-less schema.
    pub(super) fn add_derived(
        &mut self,
        plan: QueryPlan,
        alias: String,
        kind: JoinKind,
        scope: &mut Scope,
        items: &mut Vec<FromItem>,
    ) -> Result<()> {
        if items.iter().any(|i| i.alias == alias) {
            return err(SqlState::DuplicateAlias, format!("table name \"{alias}\" specified more than once"));
        }
        let columns = plan
            .names
            .iter()
            .zip(&plan.types)
            .zip(&plan.limits)
            .map(|((n, t), l)| Column {
                name: n.clone(),
                ty: t.unwrap_or(SqlType::Text),
                limits: l.clone(),
                nullable: true,
                default: None,
                generated: None,
                volatile_default: None,
            })
            .collect();
        let table = Arc::new(TableSchema {
            name: alias.clone(),
            id: 0,
            columns,
            primary_key: Vec::new(),
            indexes: Vec::new(),
            constraints: Default::default(),
            stored_as: None,
        });
        let offset = scope.cols.len();
        scope.add_derived(&alias, &plan);
        items.push(FromItem { offset, table, alias, kind, on: Vec::new(), derived: Some(Box::new(plan)) });
        Ok(())
    }

    /// `USING (c1, …)` (or NATURAL's common columns) of join step `step`: the equalities of
    /// each left column with the right one; the right ones become reachable only qualified
    /// (`Scope::merged`), and `usings` records the pairs for `*`'s order.
    fn using_condition(
        &self,
        names: &[String],
        items: &[FromItem],
        step: usize,
        scope: &mut Scope,
        usings: &mut BTreeMap<usize, Vec<(usize, usize)>>,
    ) -> Result<Expr> {
        let right = items.get(step).ok_or_else(|| SqlError::new(SqlState::InternalError, "join step out of range"))?;
        let mut parts = Vec::new();
        let mut pairs = Vec::new();
        for name in names {
            if pairs.iter().any(|(_, _, n)| n == name) {
                return err(
                    SqlState::DuplicateColumn,
                    format!("column name \"{name}\" appears more than once in USING clause"),
                );
            }
            let r = self.resolve(scope, Some(&right.alias), name)?;
            let left: Vec<usize> = scope.find(None, name).into_iter().filter(|i| *i < right.offset).collect();
            let [l] = left.as_slice() else {
                return err(
                    SqlState::UndefinedColumn,
                    format!("column \"{name}\" specified in USING clause must exist once on the left side"),
                );
            };
            parts.push(Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(*l)), Box::new(Expr::Column(r))));
            pairs.push((*l, r, name.clone()));
        }
        for (l, r, _) in &pairs {
            scope.merged.insert(*r);
            usings.entry(step).or_default().push((*l, *r));
        }
        Ok(Expr::conjunction(parts))
    }

    /// Places each conjunct at the earliest scan or join step that has all its tables, never
    /// filtering a null-supplied (LEFT JOIN right side) table with a WHERE conjunct.
    pub(super) fn plan_from(
        &mut self,
        items: Vec<FromItem>,
        where_conjuncts: Vec<Expr>,
    ) -> Result<(FromPlan, Option<Expr>)> {
        if items.is_empty() {
            let filter = (!where_conjuncts.is_empty()).then(|| Expr::conjunction(where_conjuncts));
            return Ok((FromPlan { first: None, joins: Vec::new() }, filter));
        }
        // Below a RIGHT or FULL join every earlier table may be null-extended: no WHERE
        // conjunct (nor one implied by an inner ON) may filter a scan, so all are checked on
        // the joined rows.
        let outer_right = items.iter().any(|i| i.kind.keeps_right());
        let where_conjuncts =
            if outer_right { where_conjuncts } else { with_implied_equalities(&items, where_conjuncts) };
        let table_of = |col: usize| items.iter().rposition(|i| i.offset <= col).unwrap_or(0);
        let tables_of = |e: &Expr| {
            let mut set = BTreeSet::new();
            collect_columns(e, &mut |c| {
                set.insert(table_of(c));
            });
            set
        };
        let per_row_subquery = |e: &Expr| {
            let mut ids = Vec::new();
            subquery_ids(e, &mut ids);
            ids.iter().any(|i| self.subqueries.get(*i).is_some_and(|s| s.correlated))
        };
        let mut at_step: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
        // ON conjuncts of LEFT joins that run correlated subqueries: checked per joined pair,
        // never inside the scan (whose predicate is closed).
        let mut late: Vec<Vec<Expr>> = items.iter().map(|_| Vec::new()).collect();
        let mut residual = Vec::new();
        for c in where_conjuncts {
            let tables = tables_of(&c);
            // Conjuncts with correlated subqueries run per joined row, after the scans.
            let nullable = |t: &usize| items.get(*t).is_some_and(|i| i.kind != JoinKind::Inner);
            if outer_right || per_row_subquery(&c) || tables.iter().any(nullable) {
                residual.push(c);
            } else if let Some(slot) = at_step.get_mut(tables.last().copied().unwrap_or(0)) {
                slot.push(c);
            }
        }
        for (step, item) in items.iter().enumerate() {
            for c in &item.on {
                if tables_of(c).last().is_some_and(|t| *t > step) {
                    return err(SqlState::UndefinedTable, "invalid reference to FROM-clause entry in JOIN condition");
                }
                let slot = match (per_row_subquery(c), item.kind) {
                    // A RIGHT or FULL join's right rows are kept whatever its ON says: checked
                    // per joined pair, never inside the scan.
                    (_, JoinKind::Right | JoinKind::Full) => late.get_mut(step),
                    (false, _) => at_step.get_mut(step),
                    (true, JoinKind::Left) => late.get_mut(step),
                    // An inner join's ON conjunct is a WHERE conjunct.
                    (true, JoinKind::Inner) => Some(&mut residual),
                };
                if let Some(slot) = slot {
                    slot.push(c.clone());
                }
            }
        }
        let mut steps = items.into_iter().zip(at_step).zip(late).map(|((i, c), l)| (i, c, l));
        let Some((first_item, first_conjuncts, _)) = steps.next() else {
            return err(SqlState::InternalError, "empty FROM");
        };
        let mut first = scan_plan(first_item.table, first_conjuncts);
        first.derived = first_item.derived;
        let mut joins = Vec::new();
        for (item, conjs, late) in steps {
            let offset = item.offset;
            let width = item.table.columns.len();
            let local = |e: &Expr| {
                e.map_columns(&|c| {
                    if c >= offset && c < offset + width {
                        Expr::Column(c - offset)
                    } else {
                        Expr::Outer(c)
                    }
                })
            };
            let mapped: Vec<Expr> = conjs.iter().map(local).collect();
            let by_outer = choose_access(&item.table, &mapped);
            if access_uses_outer(&by_outer) {
                joins.push(JoinStep {
                    kind: item.kind,
                    right: ScanPlan {
                        table: item.table,
                        access: by_outer,
                        filter: Expr::conjunction(mapped),
                        derived: item.derived,
                    },
                    per_outer_row: true,
                    condition: (!late.is_empty()).then(|| Expr::conjunction(late)),
                    hash_keys: Vec::new(),
                    left_width: offset,
                });
            } else {
                let (pure, cross): (Vec<ConjunctPair>, Vec<ConjunctPair>) =
                    conjs.into_iter().zip(mapped).partition(|(_, m)| !m.any(&|n| matches!(n, Expr::Outer(_))));
                let is_left = |e: &Expr| {
                    let mut ok = true;
                    collect_columns(e, &mut |c| ok &= c < offset);
                    ok
                };
                let is_right = |e: &Expr| {
                    let mut ok = true;
                    collect_columns(e, &mut |c| ok &= c >= offset && c < offset + width);
                    ok
                };
                let no_subquery = |e: &Expr| {
                    !e.any(&|n| matches!(n, Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. }))
                };
                // A RIGHT or FULL join's ON conjuncts are all in `late`.
                let outer_on = late.iter().filter(|c| item.kind.keeps_right() && no_subquery(c));
                let hash_keys = cross
                    .iter()
                    .map(|(c, _)| c)
                    .chain(outer_on)
                    .filter_map(|c| match c {
                        Expr::Cmp(CmpOp::Eq, a, b) => [(a, b), (b, a)].into_iter().find_map(|(l, r)| {
                            (is_left(l) && is_right(r) && r.any(&|n| matches!(n, Expr::Column(_))))
                                .then(|| ((**l).clone(), r.map_columns(&|col| Expr::Column(col - offset))))
                        }),
                        _ => None,
                    })
                    .collect();
                let checked: Vec<Expr> = cross.into_iter().map(|(c, _)| c).chain(late).collect();
                let condition = (!checked.is_empty()).then(|| Expr::conjunction(checked));
                joins.push(JoinStep {
                    kind: item.kind,
                    right: ScanPlan {
                        derived: item.derived,
                        ..scan_plan(item.table, pure.into_iter().map(|(_, m)| m).collect())
                    },
                    per_outer_row: false,
                    condition,
                    hash_keys,
                    left_width: offset,
                });
            }
        }
        let filter = (!residual.is_empty()).then(|| Expr::conjunction(residual));
        Ok((FromPlan { first: Some(first), joins }, filter))
    }
}

/// Adds `a = v` for WHERE (or inner join ON) conjuncts `a = b` and `b = v` (v without columns or subqueries)
/// when columns a and b of stored, inner-joined tables have the same declared type, so that
/// the scan of a's table can use v as a key value (`c_w_id = w_id AND w_id = $1` lets the
/// scan of c look up `c_w_id = $1`). Same-typed SQL equality is transitive, and the added
/// conjunct is implied by the others, so results do not change.
/// PostgreSQL's rule: an ORDER BY must start with the DISTINCT ON expressions (in any order),
/// so that the row kept for each value is the first in the order asked for.
fn check_distinct_on_order(columns: &[usize], keys: &[SortKey]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let mut left: Vec<usize> = columns.to_vec();
    for key in keys {
        if left.is_empty() {
            break;
        }
        match left.iter().position(|c| *c == key.column) {
            Some(i) => {
                left.remove(i);
            }
            None if columns.contains(&key.column) => {}
            None => {
                return err(
                    SqlState::InvalidColumnReference,
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                )
            }
        }
    }
    Ok(())
}

fn with_implied_equalities(items: &[FromItem], mut conjuncts: Vec<Expr>) -> Vec<Expr> {
    let column_type = |c: usize| {
        let item = items.iter().rev().find(|i| i.offset <= c)?;
        if item.kind != JoinKind::Inner || item.derived.is_some() {
            return None;
        }
        item.table.columns.get(c - item.offset).map(|col| col.ty)
    };
    let is_value = |e: &Expr| {
        let mut ids = Vec::new();
        subquery_ids(e, &mut ids);
        ids.is_empty()
            && !e.any(&|n| {
                matches!(n, Expr::Column(_) | Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. })
            })
    };
    let mut known: Vec<(usize, Expr)> = Vec::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let inner_on = items.iter().filter(|i| i.kind == JoinKind::Inner).flat_map(|i| &i.on);
    for c in conjuncts.iter().chain(inner_on) {
        let Expr::Cmp(CmpOp::Eq, a, b) = c else { continue };
        match (&**a, &**b) {
            (Expr::Column(x), Expr::Column(y))
                if x != y && column_type(*x).is_some() && column_type(*x) == column_type(*y) =>
            {
                pairs.push((*x, *y))
            }
            (Expr::Column(x), v) | (v, Expr::Column(x)) if is_value(v) && !known.iter().any(|(k, _)| k == x) => {
                known.push((*x, v.clone()))
            }
            _ => {}
        }
    }
    // Each round fixes at least one more column, so this ends after at most `pairs` rounds.
    loop {
        let mut added = false;
        for &(x, y) in &pairs {
            for (from, to) in [(x, y), (y, x)] {
                if known.iter().any(|(k, _)| *k == to) {
                    continue;
                }
                if let Some(v) = known.iter().find(|(k, _)| *k == from).map(|(_, v)| v.clone()) {
                    conjuncts.push(Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(to)), Box::new(v.clone())));
                    known.push((to, v));
                    added = true;
                }
            }
        }
        if !added {
            return conjuncts;
        }
    }
}

/// The first relation of a FROM item and its joins, with a parenthesized join without an
/// alias at the start expanded: `(a JOIN b ON c) JOIN d` is `a JOIN b ON c JOIN d`.
fn flatten_joins(twj: &sql::TableWithJoins) -> (&sql::TableFactor, Vec<&sql::Join>) {
    let mut joins = Vec::new();
    let first = match &twj.relation {
        sql::TableFactor::NestedJoin { table_with_joins, alias: None } => {
            let (first, inner) = flatten_joins(table_with_joins);
            joins.extend(inner);
            first
        }
        other => other,
    };
    joins.extend(&twj.joins);
    (first, joins)
}

/// Grouping by a table's whole primary key determines its other columns, which the query
/// may then use ungrouped (PostgreSQL's functional dependency): they become grouping keys
/// too, which splits no group.
fn functionally_dependent_keys(from_items: &[FromItem], group_by: &mut Vec<Expr>) {
    for item in from_items.iter().filter(|i| i.derived.is_none()) {
        let key = &item.table.primary_key;
        let grouped = |p: &usize| group_by.contains(&Expr::Column(item.offset + p));
        if key.is_empty() || !key.iter().all(grouped) {
            continue;
        }
        for position in item.offset..item.offset + item.table.columns.len() {
            if !group_by.contains(&Expr::Column(position)) {
                group_by.push(Expr::Column(position));
            }
        }
    }
}

/// The columns of join step `step` through the one before the next item, and the visible
/// ones of `scope` in that range.
fn item_columns(items: &[FromItem], step: usize, scope: &Scope) -> Vec<usize> {
    let start = items.get(step).map_or(scope.cols.len(), |i| i.offset);
    let end = items.get(step + 1).map_or(scope.cols.len(), |i| i.offset);
    (start..end).filter(|i| scope.cols.get(*i).is_some_and(|c| !c.name.starts_with('\0'))).collect()
}

/// NATURAL JOIN's columns: the right item's column names that a bare name reaches on the
/// left side, in the left side's order (none: a cross join).
fn natural_columns(items: &[FromItem], step: usize, scope: &Scope) -> Vec<String> {
    let offset = items.get(step).map_or(scope.cols.len(), |i| i.offset);
    let right: BTreeSet<&str> =
        item_columns(items, step, scope).iter().filter_map(|i| scope.cols.get(*i)).map(|c| c.name.as_str()).collect();
    let mut names: Vec<String> = Vec::new();
    for (i, c) in scope.cols.iter().enumerate().take(offset) {
        let reachable = !c.name.starts_with('\0') && !scope.merged.contains(&i);
        if reachable && right.contains(c.name.as_str()) && !names.contains(&c.name) {
            names.push(c.name.clone());
        }
    }
    names
}

/// `*` after USING joins, as PostgreSQL orders it: each such join puts its merged columns
/// first (in USING order), then the other columns of its left side, then its right side's.
fn star_after_usings(items: &[FromItem], scope: &Scope, usings: &BTreeMap<usize, Vec<(usize, usize)>>) -> Vec<usize> {
    let mut star: Vec<usize> = Vec::new();
    for step in 0..items.len() {
        let right = item_columns(items, step, scope);
        match usings.get(&step) {
            None => star.extend(right),
            Some(pairs) => {
                let merged_left: Vec<usize> = pairs.iter().map(|(l, _)| *l).collect();
                let merged_right: BTreeSet<usize> = pairs.iter().map(|(_, r)| *r).collect();
                let mut next = merged_left.clone();
                next.extend(star.iter().filter(|c| !merged_left.contains(c)));
                next.extend(right.into_iter().filter(|c| !merged_right.contains(c)));
                star = next;
            }
        }
    }
    star
}

/// `ORDER BY x USING op`: as in PostgreSQL, `<` (or `OPERATOR(pg_catalog.<)`) sorts
/// ascending and `>` descending, the less-than and greater-than members of the type's btree
/// ordering, the only ordering every Pistou type has; any other operator is 42809.
fn using_is_descending(op: &sql::ObjectName) -> Result<bool> {
    let parts: Vec<String> = op.0.iter().map(|p| p.to_string()).collect();
    let name = match parts.as_slice() {
        [name] => name.as_str(),
        [schema, name] if schema.eq_ignore_ascii_case("pg_catalog") => name.as_str(),
        _ => "",
    };
    match name {
        "<" => Ok(false),
        ">" => Ok(true),
        _ => err(SqlState::WrongObjectType, format!("operator {} is not a valid ordering operator", parts.join("."))),
    }
}
