//! Binding of scalar expressions: names, operators, functions, aggregates, subqueries.

use super::*;

impl Binder<'_> {
    pub(super) fn resolve(&self, scope: &Scope, table: Option<&str>, name: &str) -> Result<usize> {
        match scope.find(table, name).as_slice() {
            [i] => Ok(*i),
            [] => {
                if self.outer_scopes.iter().any(|s| !s.find(table, name).is_empty()) {
                    return unsupported("correlated reference from this position");
                }
                let full = table.map_or(name.to_string(), |t| format!("{t}.{name}"));
                err(SqlState::UndefinedColumn, format!("column \"{full}\" does not exist"))
            }
            _ => err(SqlState::AmbiguousColumn, format!("column reference \"{name}\" is ambiguous")),
        }
    }

    pub(super) fn column_ref(&self, e: &sql::Expr, scope: &Scope) -> Option<Result<usize>> {
        let (table, name) = match e {
            sql::Expr::Identifier(i) => (None, ident(i)),
            sql::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => (Some(ident(t)), ident(c)),
                [s, t, c] if ident(s) == "public" => (Some(ident(t)), ident(c)),
                _ => return Some(unsupported(format!("column reference {e}"))),
            },
            _ => return None,
        };
        Some(self.resolve(scope, table.as_deref(), &name))
    }

    /// A column of the immediately enclosing query (a correlated reference), if `e` names one
    /// that the current scope does not have.
    pub(super) fn outer_ref(&self, e: &sql::Expr, scope: &Scope) -> Option<usize> {
        let (table, name) = match e {
            sql::Expr::Identifier(i) => (None, ident(i)),
            sql::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => (Some(ident(t)), ident(c)),
                _ => return None,
            },
            _ => return None,
        };
        if !scope.find(table.as_deref(), &name).is_empty() {
            return None;
        }
        match self.outer_scopes.last()?.find(table.as_deref(), &name).as_slice() {
            [i] => Some(*i),
            _ => None,
        }
    }

    pub(super) fn expr(&mut self, e: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        self.enter()?;
        self.expr_nesting += 1;
        let result = self.expr_inner(e, scope, mode);
        self.expr_nesting -= 1;
        self.depth -= 1;
        if self.expr_nesting == 0 {
            if let (Ok(bound), Mode::Plain(_)) = (&result, &mode) {
                let input: Vec<Option<SqlType>> = scope.cols.iter().map(|c| c.ty).collect();
                infer_param_types(bound, &input, &mut self.param_types);
            }
        }
        result
    }

    pub(super) fn expr_inner(&mut self, e: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        use sql::Expr as E;
        if let Mode::Agg(ctx) = mode {
            if let Some(pos) = ctx.group_ast.iter().position(|g| g == e) {
                return Ok(Expr::Column(pos));
            }
            if let Some(col) = self.column_ref(e, scope) {
                let col = col?;
                return match ctx.group_bound.iter().position(|g| *g == Expr::Column(col)) {
                    Some(pos) => Ok(Expr::Column(pos)),
                    None => err(
                        SqlState::GroupingError,
                        format!("column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"),
                    ),
                };
            }
        }
        if let Some(outer) = self.outer_ref(e, scope) {
            self.correlated = true;
            return Ok(Expr::Outer(outer));
        }
        if let Some(col) = self.column_ref(e, scope) {
            return Ok(Expr::Column(col?));
        }
        let bx = |this: &mut Self, e: &sql::Expr, mode: &mut Mode| this.expr(e, scope, mode).map(Box::new);
        Ok(match e {
            E::Value(v) => match &v.value {
                sql::Value::Placeholder(p) => self.placeholder(p)?,
                other => Expr::Const(literal(other)?),
            },
            E::Nested(inner) => self.expr(inner, scope, mode)?,
            E::UnaryOp { op, expr } => match op {
                sql::UnaryOperator::Not => Expr::Not(bx(self, expr, mode)?),
                sql::UnaryOperator::Plus => self.expr(expr, scope, mode)?,
                sql::UnaryOperator::Minus => match self.expr(expr, scope, mode)? {
                    Expr::Const(v) => Expr::Const(crate::types::negate(&v)?),
                    other => Expr::Neg(Box::new(other)),
                },
                other => return unsupported(format!("operator {other}")),
            },
            E::BinaryOp { left, op, right } => {
                use sql::BinaryOperator as B;
                let l = bx(self, left, mode)?;
                let r = bx(self, right, mode)?;
                match op {
                    B::Plus => Expr::Arith(ArithOp::Add, l, r),
                    B::Minus => Expr::Arith(ArithOp::Sub, l, r),
                    B::Multiply => Expr::Arith(ArithOp::Mul, l, r),
                    B::Divide => Expr::Arith(ArithOp::Div, l, r),
                    B::Modulo => Expr::Arith(ArithOp::Mod, l, r),
                    B::StringConcat => Expr::Concat(l, r),
                    B::Eq => Expr::Cmp(CmpOp::Eq, l, r),
                    B::NotEq => Expr::Cmp(CmpOp::NotEq, l, r),
                    B::Lt => Expr::Cmp(CmpOp::Lt, l, r),
                    B::LtEq => Expr::Cmp(CmpOp::LtEq, l, r),
                    B::Gt => Expr::Cmp(CmpOp::Gt, l, r),
                    B::GtEq => Expr::Cmp(CmpOp::GtEq, l, r),
                    B::And => Expr::And(l, r),
                    B::Or => Expr::Or(l, r),
                    other => return unsupported(format!("operator {other}")),
                }
            }
            E::IsNull(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: false },
            E::IsNotNull(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: true },
            E::IsTrue(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: true, negated: false },
            E::IsNotTrue(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: true, negated: true },
            E::IsFalse(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: false, negated: false },
            E::IsNotFalse(x) => Expr::IsBool { expr: bx(self, x, mode)?, value: false, negated: true },
            E::IsUnknown(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: false },
            E::IsNotUnknown(x) => Expr::IsNull { expr: bx(self, x, mode)?, negated: true },
            E::IsDistinctFrom(a, b) => Expr::IsDistinct { left: bx(self, a, mode)?, right: bx(self, b, mode)?, negated: false },
            E::IsNotDistinctFrom(a, b) => Expr::IsDistinct { left: bx(self, a, mode)?, right: bx(self, b, mode)?, negated: true },
            E::InList { expr, list, negated } => Expr::InList {
                expr: bx(self, expr, mode)?,
                list: list.iter().map(|x| self.expr(x, scope, mode)).collect::<Result<_>>()?,
                negated: *negated,
            },
            E::Between { expr, negated, low, high } => {
                let x = self.expr(expr, scope, mode)?;
                let range = Expr::and(
                    Expr::Cmp(CmpOp::GtEq, Box::new(x.clone()), bx(self, low, mode)?),
                    Expr::Cmp(CmpOp::LtEq, Box::new(x), bx(self, high, mode)?),
                );
                if *negated { Expr::Not(Box::new(range)) } else { range }
            }
            E::Like { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
                expr: bx(self, expr, mode)?,
                pattern: bx(self, pattern, mode)?,
                negated: *negated,
                case_insensitive: false,
            },
            E::ILike { negated, any: false, expr, pattern, escape_char: None } => Expr::Like {
                expr: bx(self, expr, mode)?,
                pattern: bx(self, pattern, mode)?,
                negated: *negated,
                case_insensitive: true,
            },
            E::Case { operand, conditions, else_result, .. } => Expr::Case {
                operand: operand.as_deref().map(|o| bx(self, o, mode)).transpose()?,
                whens: conditions
                    .iter()
                    .map(|w| Ok((self.expr(&w.condition, scope, mode)?, self.expr(&w.result, scope, mode)?)))
                    .collect::<Result<_>>()?,
                otherwise: else_result.as_deref().map(|o| bx(self, o, mode)).transpose()?,
            },
            E::Cast { expr, data_type: t, format: None, .. } => Expr::Cast { expr: bx(self, expr, mode)?, ty: data_type(t)?.0 },
            E::Function(f) => self.function(f, scope, mode)?,
            E::Trim { expr, trim_where: None, trim_what: None, trim_characters: None } => {
                Expr::Call { func: Func::Trim, args: vec![self.expr(expr, scope, mode)?] }
            }
            E::Position { expr, r#in } => {
                Expr::Call { func: Func::Position, args: vec![self.expr(r#in, scope, mode)?, self.expr(expr, scope, mode)?] }
            }
            E::Floor { expr, field: sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime) } => {
                Expr::Call { func: Func::Floor, args: vec![self.expr(expr, scope, mode)?] }
            }
            E::Ceil { expr, field: sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime) } => {
                Expr::Call { func: Func::Ceil, args: vec![self.expr(expr, scope, mode)?] }
            }
            E::TypedString(t) => {
                let ty = data_type(&t.data_type)?.0;
                Expr::Const(crate::types::cast(&literal(&t.value.value)?, ty)?)
            }
            E::Substring { expr, substring_from: Some(from), substring_for, .. } => {
                let mut args = vec![self.expr(expr, scope, mode)?, self.expr(from, scope, mode)?];
                if let Some(len) = substring_for {
                    args.push(self.expr(len, scope, mode)?);
                }
                Expr::Call { func: Func::Substr, args }
            }
            E::Subquery(q) => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => {
                    let grouped = matches!(mode, Mode::Agg(_));
                    Expr::Subquery(self.subquery(q, scope, SubqueryKind::Scalar, grouped)?)
                }
            },
            E::InSubquery { expr, subquery, negated } => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => {
                    let grouped = matches!(mode, Mode::Agg(_));
                    let subquery = self.subquery(subquery, scope, SubqueryKind::List, grouped)?;
                    Expr::InSubquery { expr: bx(self, expr, mode)?, subquery, negated: *negated }
                }
            },
            E::Exists { subquery, negated } => match mode {
                Mode::Detect(_) => Expr::Const(Value::Null),
                _ => {
                    let grouped = matches!(mode, Mode::Agg(_));
                    Expr::Exists { subquery: self.subquery(subquery, scope, SubqueryKind::Exists, grouped)?, negated: *negated }
                }
            },
            other => return unsupported(format!("expression {other}")),
        })
    }

    pub(super) fn placeholder(&mut self, p: &str) -> Result<Expr> {
        let index = if p == "?" {
            self.anonymous_params += 1;
            self.anonymous_params - 1
        } else {
            match p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if (1..=65535).contains(&n) => n - 1,
                _ => return err(SqlState::UndefinedParameter, format!("invalid parameter {p}")),
            }
        };
        self.param_count = self.param_count.max(index + 1);
        Ok(Expr::Param(index))
    }

    pub(super) fn subquery(&mut self, q: &sql::Query, scope: &Scope, kind: SubqueryKind, grouped: bool) -> Result<usize> {
        self.outer_scopes.push(scope.clone());
        let nesting = std::mem::take(&mut self.expr_nesting);
        let enclosing_correlated = std::mem::take(&mut self.correlated);
        let planned = self.query(q);
        let correlated = std::mem::replace(&mut self.correlated, enclosing_correlated);
        self.expr_nesting = nesting;
        self.outer_scopes.pop();
        let planned = planned?;
        if correlated {
            // Outer references are resolved against the enclosing FROM row, and a subquery's
            // own join steps use `Expr::Outer` for their left rows: keep the two apart.
            let single_table = matches!(&planned.body, QueryBody::Select(core) if core.from.joins.is_empty());
            if grouped || !single_table {
                return unsupported("correlated subquery in a grouped query or over a join");
            }
        }
        if kind != SubqueryKind::Exists && planned.names.len() != 1 {
            return err(SqlState::SyntaxError, "subquery must return only one column");
        }
        self.subqueries.push(Subquery { plan: planned, kind, correlated });
        Ok(self.subqueries.len() - 1)
    }

    pub(super) fn function(&mut self, f: &sql::Function, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        let name = object_name(&f.name)?;
        if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
            return unsupported(format!("function syntax in {f}"));
        }
        let (args, distinct) = match &f.args {
            sql::FunctionArguments::None => (Vec::new(), false),
            sql::FunctionArguments::List(list) => {
                if !list.clauses.is_empty() {
                    return unsupported(format!("function argument clauses in {f}"));
                }
                let distinct = matches!(list.duplicate_treatment, Some(sql::DuplicateTreatment::Distinct));
                let args = list
                    .args
                    .iter()
                    .map(|a| match a {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) => Ok(None),
                        _ => unsupported(format!("function argument {a}")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                (args, distinct)
            }
            sql::FunctionArguments::Subquery(_) => return unsupported("subquery as function argument"),
        };
        if let Some(func) = aggregate_function(&name) {
            return match mode {
                Mode::Plain(clause) => err(SqlState::GroupingError, format!("aggregate functions are not allowed in {clause}")),
                Mode::Detect(found) => {
                    **found = true;
                    Ok(Expr::Const(Value::Null))
                }
                Mode::Agg(_) => {
                    let call = match (func, args.as_slice()) {
                        (AggFunc::Count, [None]) if !distinct => AggCall { func: AggFunc::CountStar, arg: None, distinct },
                        (_, [Some(arg)]) => {
                            let arg = self.expr(arg, scope, &mut Mode::Plain("aggregate function calls"))?;
                            AggCall { func, arg: Some(arg), distinct }
                        }
                        _ => return err(SqlState::UndefinedFunction, format!("function {name} takes exactly one argument")),
                    };
                    let Mode::Agg(ctx) = mode else { return err(SqlState::InternalError, "aggregate binding mode changed") };
                    let pos = match ctx.calls.iter().position(|c| *c == call) {
                        Some(p) => p,
                        None => {
                            ctx.calls.push(call);
                            ctx.calls.len() - 1
                        }
                    };
                    Ok(Expr::Column(ctx.group_bound.len() + pos))
                }
            };
        }
        let Some(func) = Func::by_name(&name) else {
            return err(SqlState::UndefinedFunction, format!("function {name} does not exist"));
        };
        if distinct {
            return unsupported(format!("DISTINCT in {name}()"));
        }
        let (min, max) = func.arity();
        if args.len() < min || args.len() > max {
            return err(SqlState::UndefinedFunction, format!("function {name} does not take {} arguments", args.len()));
        }
        let args = args
            .into_iter()
            .map(|a| match a {
                Some(e) => self.expr(e, scope, mode),
                None => unsupported(format!("* argument to {name}")),
            })
            .collect::<Result<_>>()?;
        Ok(Expr::Call { func, args })
    }

    /// Binds an expression that may only use constants and parameters.
    pub(super) fn constant_expr(&mut self, e: &sql::Expr, clause: &'static str) -> Result<Expr> {
        self.expr(e, &Scope::default(), &mut Mode::Plain(clause))
    }
}
