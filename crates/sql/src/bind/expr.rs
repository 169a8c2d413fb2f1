//! Binding of scalar expressions: names, operators, functions, aggregates, subqueries.

use super::system::system_type_name;
use super::*;
use crate::jsonb::JsonbFn;

/// A call's arguments (None for `*`) and whether it says DISTINCT.
pub(super) fn function_args(f: &sql::Function) -> Result<(Vec<Option<&sql::Expr>>, bool)> {
    let (args, distinct, order_by) = function_args_ordered(f)?;
    if !order_by.is_empty() {
        return unsupported(format!("function argument clauses in {f}"));
    }
    Ok((args, distinct))
}

/// A call's arguments (None for `*`), whether it says DISTINCT, and its ORDER BY.
type OrderedArgs<'f> = (Vec<Option<&'f sql::Expr>>, bool, Vec<&'f sql::OrderByExpr>);

/// A call's arguments (None for `*`), whether it says DISTINCT, and its ORDER BY
/// (`array_agg(x ORDER BY y)`).
pub(super) fn function_args_ordered(f: &sql::Function) -> Result<OrderedArgs<'_>> {
    match &f.args {
        sql::FunctionArguments::None => Ok((Vec::new(), false, Vec::new())),
        sql::FunctionArguments::List(list) => {
            let mut order_by = Vec::new();
            for clause in &list.clauses {
                match clause {
                    sql::FunctionArgumentClause::OrderBy(keys) => order_by.extend(keys.iter()),
                    _ => return unsupported(format!("function argument clauses in {f}")),
                }
            }
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                    sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) => Ok(None),
                    _ => unsupported(format!("function argument {a}")),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((args, matches!(list.duplicate_treatment, Some(sql::DuplicateTreatment::Distinct)), order_by))
        }
        sql::FunctionArguments::Subquery(_) => unsupported("subquery as function argument"),
    }
}

/// (negated, case-insensitive) of PostgreSQL's LIKE operators `~~`, `~~*`, `!~~`, `!~~*`.
fn like_operator(op: &sql::BinaryOperator) -> Option<(bool, bool)> {
    use sql::BinaryOperator as B;
    Some(match op {
        B::PGLikeMatch => (false, false),
        B::PGILikeMatch => (false, true),
        B::PGNotLikeMatch => (true, false),
        B::PGNotILikeMatch => (true, true),
        _ => return None,
    })
}

/// The pattern and escape of `like_escape(pattern, escape)`, the right operand of `~~`
/// that PostgreSQL prints for `LIKE … ESCAPE …`.
fn like_escape_call(e: &sql::Expr) -> Result<Option<(&sql::Expr, Option<&sql::Expr>)>> {
    let sql::Expr::Function(f) = e else { return Ok(None) };
    if function_name(&f.name).ok().as_deref() != Some("like_escape") {
        return Ok(None);
    }
    match function_args(f)?.0.as_slice() {
        [Some(pattern), Some(escape)] => Ok(Some((pattern, Some(escape)))),
        _ => err(SqlState::UndefinedFunction, "function like_escape takes a pattern and an escape"),
    }
}

/// Schemas a column reference may name (`schema.table.column`): the user's tables are in
/// `public`, the system catalog's relations in the other two.
fn known_schema(s: &str) -> bool {
    matches!(s, "public" | "pg_catalog" | "information_schema")
}

impl Binder<'_> {
    pub(super) fn resolve(&self, scope: &Scope, table: Option<&str>, name: &str) -> Result<usize> {
        match scope.find(table, name).as_slice() {
            [i] => Ok(*i),
            [] => {
                if self.outer_scopes.iter().any(|s| !s.find(table, name).is_empty()) {
                    return unsupported("correlated reference from this position");
                }
                if let Some(t) = table {
                    let named = |s: &Scope| s.cols.iter().any(|c| c.table == t);
                    if !named(scope) && !self.outer_scopes.iter().any(named) {
                        return err(SqlState::UndefinedTable, format!("missing FROM-clause entry for table \"{t}\""));
                    }
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
                [s, t, c] if known_schema(&ident(s)) => (Some(ident(t)), ident(c)),
                _ => return Some(unsupported(format!("column reference {e}"))),
            },
            _ => return None,
        };
        Some(self.resolve(scope, table.as_deref(), &name))
    }

    /// A column of an enclosing query (a correlated reference), if `e` names one that the
    /// current scope does not have: (level, column), the innermost enclosing match winning.
    pub(super) fn outer_ref(&self, e: &sql::Expr, scope: &Scope) -> Option<Result<(usize, usize)>> {
        let (table, name) = match e {
            sql::Expr::Identifier(i) => (None, ident(i)),
            sql::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => (Some(ident(t)), ident(c)),
                [s, t, c] if known_schema(&ident(s)) => (Some(ident(t)), ident(c)),
                _ => return None,
            },
            _ => return None,
        };
        if !scope.find(table.as_deref(), &name).is_empty() {
            return None;
        }
        for (level, outer) in self.outer_scopes.iter().enumerate().rev() {
            match outer.find(table.as_deref(), &name).as_slice() {
                [column] => return Some(Ok((level, *column))),
                [] => {}
                _ => return Some(err(SqlState::AmbiguousColumn, format!("column reference \"{name}\" is ambiguous"))),
            }
            let ungrouped =
                outer.ungrouped.iter().any(|c| c.name == name && table.as_deref().is_none_or(|t| t == c.table));
            if ungrouped {
                let full = table.map_or(name.clone(), |t| format!("{t}.{name}"));
                return Some(err(
                    SqlState::GroupingError,
                    format!("subquery uses ungrouped column \"{full}\" from outer query"),
                ));
            }
        }
        None
    }

    /// Static type of a bound expression whose columns come from `scope` (or, in a grouped
    /// context, from the grouped row).
    pub(super) fn type_of(&self, e: &Expr, scope: &Scope, mode: &Mode) -> Option<SqlType> {
        let input = match mode {
            Mode::Agg(ctx) => self.grouped(scope, ctx).types(),
            _ => scope.types(),
        };
        expr_type_in(e, &input, &|x| self.placeholder_type(x))
    }

    /// Static type of an enclosing query's column or of a scalar subquery (its column's).
    pub(super) fn placeholder_type(&self, e: &Expr) -> Option<SqlType> {
        match e {
            Expr::Enclosing { level, column } => {
                self.outer_scopes.get(*level).and_then(|s| s.cols.get(*column)).and_then(|c| c.ty)
            }
            Expr::Subquery(i) => self.subqueries.get(*i).and_then(|s| match s.kind {
                // `elem[]`; text (the array's text form) if the column's type is not known.
                SubqueryKind::Array => Some(
                    s.plan
                        .types
                        .first()
                        .copied()
                        .flatten()
                        .and_then(ArrayElem::of)
                        .map_or(SqlType::Text, SqlType::Array),
                ),
                _ => s.plan.types.first().copied().flatten(),
            }),
            Expr::Column(_) => self.window_type(e).or_else(|| self.srf_type(e)),
            _ => None,
        }
    }

    /// The declared limits of an expression's values where they are known, for padding CHAR(n)
    /// output: those of a column, a CAST, a scalar subquery's column, `min`/`max` of such an
    /// expression (see `grouped`), and of CASE / COALESCE / NULLIF / GREATEST / LEAST when
    /// every result they can take has the same limits (NULL aside).
    pub(super) fn char_limits(&self, e: &Expr, scope: &Scope) -> TypeLimits {
        let same = |items: &mut dyn Iterator<Item = &Expr>| {
            let mut found: Option<TypeLimits> = None;
            for x in items.filter(|x| !matches!(x, Expr::Const(Value::Null))) {
                let l = self.char_limits(x, scope);
                match &found {
                    Some(f) if *f != l => return TypeLimits::default(),
                    _ => found = Some(l),
                }
            }
            found.unwrap_or_default()
        };
        match e {
            Expr::Column(c) => scope.cols.get(*c).map(|c| c.limits.clone()).unwrap_or_default(),
            Expr::Enclosing { level, column } => self
                .outer_scopes
                .get(*level)
                .and_then(|s| s.cols.get(*column))
                .map(|c| c.limits.clone())
                .unwrap_or_default(),
            Expr::Subquery(i) => {
                self.subqueries.get(*i).and_then(|s| s.plan.limits.first().cloned()).unwrap_or_default()
            }
            Expr::Cast { limits, .. } => limits.clone(),
            Expr::Case { whens, otherwise, .. } => {
                same(&mut whens.iter().map(|(_, then)| then).chain(otherwise.as_deref()))
            }
            Expr::Call { func: Func::NullIf, args } => same(&mut args.iter().take(1)),
            Expr::Call { func: Func::Coalesce | Func::Greatest | Func::Least, args } => same(&mut args.iter()),
            _ => TypeLimits::default(),
        }
    }

    /// `Scope::grouped`, where `min`/`max` columns keep the limits of their argument.
    pub(super) fn grouped(&self, scope: &Scope, ctx: &AggCtx) -> Scope {
        let mut grouped = scope.grouped(ctx);
        for (call, col) in ctx.calls.iter().zip(grouped.cols.iter_mut().skip(ctx.group_bound.len())) {
            if let (AggFunc::Min | AggFunc::Max, Some(arg)) = (call.func, &call.arg) {
                col.limits = self.char_limits(arg, scope);
            }
        }
        grouped
    }

    /// Arithmetic with PostgreSQL's result type: values are computed in 64 bits, then
    /// narrowed (range-checked, or rounded to real) when the result type is narrower.
    fn arith(&self, op: ArithOp, l: Expr, r: Expr, scope: &Scope, mode: &Mode) -> Expr {
        let result = match (self.type_of(&l, scope, mode), self.type_of(&r, scope, mode)) {
            (Some(a), Some(b)) => arith_type(op, a, b),
            _ => None,
        };
        let e = Expr::Arith(op, Box::new(l), Box::new(r));
        match result {
            Some(ty @ (SqlType::Int2 | SqlType::Int4 | SqlType::Float4)) => {
                Expr::Cast { expr: Box::new(e), ty, limits: TypeLimits::default() }
            }
            _ => e,
        }
    }

    /// What type resolution knows of operand `e`, bound from `ast`.
    pub(super) fn input_type(&self, ast: &sql::Expr, e: &Expr, scope: &Scope, mode: &Mode) -> InputType {
        if matches!(e, Expr::Const(Value::Null))
            || (is_untyped_literal(ast) && matches!(e, Expr::Const(Value::Text(_))))
        {
            return InputType::Literal;
        }
        self.type_of(e, scope, mode).map_or(InputType::Opaque, InputType::Known)
    }

    /// Static type of a comparison operand, None for a literal (which takes the other side's).
    fn operand_type(&self, ast: &sql::Expr, e: &Expr, scope: &Scope, mode: &Mode) -> Option<SqlType> {
        match self.input_type(ast, e, scope, mode) {
            InputType::Known(t) => Some(t),
            _ => None,
        }
    }

    /// An operand compared with a value of type `other`. A quoted literal takes that type, as
    /// in PostgreSQL ('3' = 3; 'abc' fails with 22P02 while binding; a literal compared with
    /// CHAR loses its trailing blanks); a parameter compared with CHAR is cast to CHAR.
    fn compared_operand(&self, other: Option<SqlType>, ast: &sql::Expr, e: Expr) -> Result<Expr> {
        Ok(match (other, e) {
            (Some(t), Expr::Const(v @ Value::Text(_))) if is_untyped_literal(ast) => {
                Expr::Const(crate::types::cast(&v, t)?)
            }
            (Some(SqlType::Char), p @ Expr::Param(_)) => cast_to(p, SqlType::Char),
            // A jsonb parameter is read (canonicalized) before it is compared.
            (Some(SqlType::Jsonb), p @ Expr::Param(_)) => cast_to(p, SqlType::Jsonb),
            (_, e) => e,
        })
    }

    /// Both operands of a comparison, each coerced to the other's type where it is a literal.
    /// Known types of different categories have no comparison operator: 42883 now, as in
    /// PostgreSQL, not only when a row reaches them.
    fn comparison(
        &self,
        (la, l): (&sql::Expr, Expr),
        (ra, r): (&sql::Expr, Expr),
        scope: &Scope,
        mode: &Mode,
    ) -> Result<(Expr, Expr)> {
        let (lt, rt) = (self.operand_type(la, &l, scope, mode), self.operand_type(ra, &r, scope, mode));
        if let (Some(a), Some(b)) = (lt, rt) {
            if a.category() != b.category() {
                return err(SqlState::UndefinedFunction, format!("operator does not exist: {a} = {b}"));
            }
        }
        Ok((self.compared_operand(rt, la, l)?, self.compared_operand(lt, ra, r)?))
    }

    /// A comparison with literal and CHAR operands coerced.
    fn compare(
        &self,
        op: CmpOp,
        l: (&sql::Expr, Expr),
        r: (&sql::Expr, Expr),
        scope: &Scope,
        mode: &Mode,
    ) -> Result<Expr> {
        if !matches!(op, CmpOp::Eq | CmpOp::NotEq) {
            let types = [self.type_of(&l.1, scope, mode), self.type_of(&r.1, scope, mode)];
            if types.contains(&Some(SqlType::Jsonb)) {
                return unsupported(format!(
                    "ordering comparison of jsonb values ({}): PostgreSQL's jsonb sort order is not implemented",
                    op.symbol()
                ));
            }
        }
        let (l, r) = self.comparison(l, r, scope, mode)?;
        Ok(Expr::Cmp(op, Box::new(l), Box::new(r)))
    }

    /// Arithmetic operands, typed as PostgreSQL's operator resolution does: a literal (quoted
    /// or NULL) takes the other operand's type where that type has the operator (`int4col +
    /// '2'` is int4 + int4, `d - '2020-01-01'` is date - date). Known types without the
    /// operator fail now (42883), as in PostgreSQL, not only when a row reaches them.
    fn arith_operands(
        &self,
        op: ArithOp,
        (la, l): (&sql::Expr, Expr),
        (ra, r): (&sql::Expr, Expr),
        scope: &Scope,
        mode: &Mode,
    ) -> Result<(Expr, Expr)> {
        let symbol = op.symbol();
        let missing = |a: &str, b: &str| {
            SqlError::new(SqlState::UndefinedFunction, format!("operator does not exist: {a} {symbol} {b}"))
        };
        let literal_as = |e: Expr, t: SqlType, literal_first: bool| -> Result<Expr> {
            if arith_type(op, t, t).is_some() {
                return if matches!(e, Expr::Const(Value::Null)) {
                    Ok(typed_null(t))
                } else {
                    coerce(e, InputType::Literal, t)
                };
            }
            match (t, op) {
                // timestamp ± unknown reads the literal as an interval.
                (SqlType::Timestamp | SqlType::TimestampTz, ArithOp::Add | ArithOp::Sub) => {
                    if matches!(e, Expr::Const(Value::Null)) {
                        Ok(typed_null(SqlType::Interval))
                    } else {
                        coerce(e, InputType::Literal, SqlType::Interval)
                    }
                }
                // date + unknown: integer, interval and time all fit.
                (SqlType::Date, ArithOp::Add) => {
                    err(SqlState::AmbiguousFunction, format!("operator is not unique: date {symbol} unknown"))
                }
                _ if literal_first => Err(missing("unknown", t.pg_name())),
                _ => Err(missing(t.pg_name(), "unknown")),
            }
        };
        match (self.input_type(la, &l, scope, mode), self.input_type(ra, &r, scope, mode)) {
            (InputType::Literal, InputType::Literal) => {
                err(SqlState::AmbiguousFunction, format!("operator is not unique: unknown {symbol} unknown"))
            }
            (InputType::Literal, InputType::Known(t)) => Ok((literal_as(l, t, true)?, r)),
            (InputType::Known(t), InputType::Literal) => Ok((l, literal_as(r, t, false)?)),
            (InputType::Known(a), InputType::Known(b)) if arith_type(op, a, b).is_none() => {
                Err(missing(a.pg_name(), b.pg_name()))
            }
            _ => Ok((l, r)),
        }
    }

    /// A REAL operand becoming text is printed as a float4 (`0.1`, not its double image).
    pub(super) fn as_text(&self, e: Expr, scope: &Scope, mode: &Mode) -> Expr {
        if self.type_of(&e, scope, mode) == Some(SqlType::Float4) {
            Expr::Call { func: Func::Float4Text, args: vec![e] }
        } else {
            e
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
                let mut types = std::mem::take(&mut self.param_types);
                infer_param_types(bound, &input, &|x| self.placeholder_type(x), &mut types);
                self.param_types = types;
            }
        }
        result
    }

    pub(super) fn expr_inner(&mut self, e: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        use sql::Expr as E;
        if let Some(found) = self.outer_ref(e, scope) {
            let (level, column) = found?;
            return Ok(self.enclosing(level, column));
        }
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
                        format!(
                            "column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"
                        ),
                    ),
                };
            }
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
                    // PostgreSQL negates a number literal before typing it: 9223372036854775808
                    // is numeric, -9223372036854775808 bigint.
                    Expr::Const(Value::Numeric(d))
                        if is_number_literal(expr) && d.scale() == 0 && i64::try_from(-d).is_ok() =>
                    {
                        Expr::Const(Value::Int(i64::try_from(-d).unwrap_or_default()))
                    }
                    Expr::Const(v) => Expr::Const(crate::types::negate(&v)?),
                    other => Expr::Neg(Box::new(other)),
                },
                other => return unsupported(format!("operator {other}")),
            },
            // `~~` and its relatives: LIKE as PostgreSQL prints it (pg_get_indexdef), with
            // `like_escape(pattern, escape)` for an ESCAPE clause.
            E::BinaryOp { left, op, right } if like_operator(op).is_some() => {
                let (negated, case_insensitive) = like_operator(op).unwrap_or_default();
                let (pattern, escape) = like_escape_call(right)?.unwrap_or((right, None));
                Expr::Like {
                    expr: bx(self, left, mode)?,
                    pattern: bx(self, pattern, mode)?,
                    escape: escape.map(|x| bx(self, x, mode)).transpose()?,
                    negated,
                    case_insensitive,
                }
            }
            E::BinaryOp { left, op, right } => {
                use sql::BinaryOperator as B;
                let l = self.expr(left, scope, mode)?;
                let r = self.expr(right, scope, mode)?;
                let (l, r) = match self.jsonb_operator(op, (left, l), (right, r), scope, mode)? {
                    Ok(e) => return Ok(e),
                    Err(operands) => operands,
                };
                let arith_op = match op {
                    B::Plus => Some(ArithOp::Add),
                    B::Minus => Some(ArithOp::Sub),
                    B::Multiply => Some(ArithOp::Mul),
                    B::Divide => Some(ArithOp::Div),
                    B::Modulo => Some(ArithOp::Mod),
                    _ => None,
                };
                let cmp_op = match op {
                    B::Eq => Some(CmpOp::Eq),
                    B::NotEq => Some(CmpOp::NotEq),
                    B::Lt => Some(CmpOp::Lt),
                    B::LtEq => Some(CmpOp::LtEq),
                    B::Gt => Some(CmpOp::Gt),
                    B::GtEq => Some(CmpOp::GtEq),
                    _ => None,
                };
                match (arith_op, cmp_op, op) {
                    (Some(a), _, _) => {
                        let (l, r) = self.arith_operands(a, (left, l), (right, r), scope, mode)?;
                        self.arith(a, l, r, scope, mode)
                    }
                    (_, Some(c), _) => self.compare(c, (left, l), (right, r), scope, mode)?,
                    (_, _, B::StringConcat) => self.concat((left, l), (right, r), scope, mode)?,
                    (_, _, B::And) => Expr::And(Box::new(l), Box::new(r)),
                    (_, _, B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch) => {
                        self.regex(op, (left, l), (right, r), scope, mode)?
                    }
                    (_, _, B::PGCustomBinaryOperator(parts)) => {
                        let op = match parts.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                            ["pg_catalog", "~"] | ["~"] => B::PGRegexMatch,
                            ["pg_catalog", "~*"] | ["~*"] => B::PGRegexIMatch,
                            ["pg_catalog", "!~"] | ["!~"] => B::PGRegexNotMatch,
                            ["pg_catalog", "!~*"] | ["!~*"] => B::PGRegexNotIMatch,
                            _ => return unsupported(format!("operator {op}")),
                        };
                        self.regex(&op, (left, l), (right, r), scope, mode)?
                    }
                    (_, _, B::Or) => Expr::Or(Box::new(l), Box::new(r)),
                    (_, _, other) => return unsupported(format!("operator {other}")),
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
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (l, r) = (self.expr(a, scope, mode)?, self.expr(b, scope, mode)?);
                let (l, r) = self.comparison((a, l), (b, r), scope, mode)?;
                Expr::IsDistinct {
                    left: Box::new(l),
                    right: Box::new(r),
                    negated: matches!(e, E::IsNotDistinctFrom(..)),
                }
            }
            E::InList { expr, list, negated } if matches!(&**expr, E::Tuple(_)) => {
                // A row compared with rows: `(a, b) = (1, 2)` is `a = 1 AND b = 2` (three-valued,
                // as PostgreSQL's row comparison), and IN is the OR of those.
                let E::Tuple(left) = &**expr else { return err(SqlState::InternalError, "row value") };
                let mut alternatives = Vec::with_capacity(list.len());
                for item in list {
                    let E::Tuple(right) = item else {
                        return unsupported("IN with a row value and a non-row list item");
                    };
                    if right.len() != left.len() {
                        return err(SqlState::SyntaxError, "row comparison needs rows of the same length");
                    }
                    let mut parts = Vec::with_capacity(left.len());
                    for (a, b) in left.iter().zip(right) {
                        let (l, r) = (self.expr(a, scope, mode)?, self.expr(b, scope, mode)?);
                        parts.push(self.compare(CmpOp::Eq, (a, l), (b, r), scope, mode)?);
                    }
                    alternatives.push(Expr::conjunction(parts));
                }
                let any = alternatives
                    .into_iter()
                    .reduce(|a, b| Expr::Or(Box::new(a), Box::new(b)))
                    .unwrap_or(Expr::Const(Value::Bool(false)));
                if *negated {
                    Expr::Not(Box::new(any))
                } else {
                    any
                }
            }
            E::InList { expr, list, negated } => {
                let x = self.expr(expr, scope, mode)?;
                let mut bound = Vec::with_capacity(list.len());
                for item in list {
                    bound.push(self.expr(item, scope, mode)?);
                }
                // Literals take the type of the other side: the tested value's, or for a
                // literal tested value, the common type of the list.
                let x_type = self.operand_type(expr, &x, scope, mode);
                let items = list
                    .iter()
                    .zip(bound)
                    .map(|(ast, b)| self.compared_operand(x_type, ast, b))
                    .collect::<Result<Vec<_>>>()?;
                let item_types: Vec<InputType> =
                    list.iter().zip(&items).map(|(ast, b)| self.input_type(ast, b, scope, mode)).collect();
                let known = item_types.iter().any(|t| matches!(t, InputType::Known(_)));
                let list_type = common_type("IN", &item_types).ok().flatten().filter(|_| known);
                let x = self.compared_operand(list_type, expr, x)?;
                Expr::InList { expr: Box::new(x), list: items, negated: *negated }
            }
            E::Between { expr, negated, low, high } => {
                let x = self.expr(expr, scope, mode)?;
                let (lo, hi) = (self.expr(low, scope, mode)?, self.expr(high, scope, mode)?);
                let range = Expr::and(
                    self.compare(CmpOp::GtEq, (expr, x.clone()), (low, lo), scope, mode)?,
                    self.compare(CmpOp::LtEq, (expr, x), (high, hi), scope, mode)?,
                );
                if *negated {
                    Expr::Not(Box::new(range))
                } else {
                    range
                }
            }
            E::Like { negated, any: false, expr, pattern, escape_char }
            | E::ILike { negated, any: false, expr, pattern, escape_char } => Expr::Like {
                expr: bx(self, expr, mode)?,
                pattern: bx(self, pattern, mode)?,
                escape: escape_char.as_deref().map(|x| bx(self, x, mode)).transpose()?,
                negated: *negated,
                case_insensitive: matches!(e, E::ILike { .. }),
            },
            E::Case { operand, conditions, else_result, .. } => {
                self.case(operand.as_deref(), conditions, else_result.as_deref(), scope, mode)?
            }
            E::Cast { expr, data_type: t, format: None, .. } if system_type_name(t).is_some() => {
                let name = system_type_name(t).unwrap_or_default();
                self.system_cast(&name, expr, scope, mode)?
            }
            // Pistou compares text by code point, as the C collation does; the default
            // collation here is C.
            E::Collate { expr, collation } => {
                let parts: Vec<String> =
                    collation.0.iter().filter_map(|p| p.as_ident()).map(|i| i.value.clone()).collect();
                match parts.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                    ["default"] | ["pg_catalog", "default"] | ["C"] | ["pg_catalog", "C"] | ["POSIX"] => {
                        self.expr(expr, scope, mode)?
                    }
                    _ => return unsupported(format!("COLLATE {collation}")),
                }
            }
            E::AnyOp { left, compare_op, right, is_some: _ } => match (compare_op, right.as_ref()) {
                (sql::BinaryOperator::Eq, sql::Expr::Array(array)) => {
                    let list = sql::Expr::InList { expr: left.clone(), list: array.elem.clone(), negated: false };
                    self.expr(&list, scope, mode)?
                }
                (sql::BinaryOperator::Eq, array) => {
                    // Arrays are text here (see `SubqueryKind::Array`): the value is
                    // compared with the elements as text.
                    let x = self.expr(left, scope, mode)?;
                    let x = self.as_text(x, scope, mode);
                    let x = cast_to(x, SqlType::Text);
                    let a = self.expr(array, scope, mode)?;
                    match self.type_of(&a, scope, mode) {
                        Some(t) if !t.is_text() && t.element().is_none() => {
                            return err(SqlState::DatatypeMismatch, "op ANY/ALL (array) requires array on right side")
                        }
                        _ => Expr::Call { func: Func::ArrayHas, args: vec![x, cast_to(a, SqlType::Text)] },
                    }
                }
                _ => return unsupported(format!("{compare_op} ANY (only = ANY is supported)")),
            },
            E::AllOp { compare_op, right, left } => match (compare_op, right.as_ref()) {
                (sql::BinaryOperator::NotEq, sql::Expr::Array(array)) => {
                    let list = sql::Expr::InList { expr: left.clone(), list: array.elem.clone(), negated: true };
                    self.expr(&list, scope, mode)?
                }
                _ => return unsupported(format!("{compare_op} ALL over a non-literal array")),
            },
            E::Cast { expr, data_type: t, format: None, .. } => {
                let (ty, limits) = cast_type(t)?;
                let mut inner = self.expr(expr, scope, mode)?;
                if ty.is_text() {
                    inner = self.as_text(inner, scope, mode);
                }
                match inner {
                    // Constants are cast while binding, as PostgreSQL folds them; the cast stays
                    // where the constant alone would not carry the type (CAST(1 AS SMALLINT)).
                    Expr::Const(v) => {
                        let folded = crate::types::cast_with(&v, ty, &limits)?;
                        if literal_type(&folded) == Some(ty) && limits == TypeLimits::default() {
                            Expr::Const(folded)
                        } else {
                            Expr::Cast { expr: Box::new(Expr::Const(folded)), ty, limits }
                        }
                    }
                    other => Expr::Cast { expr: Box::new(other), ty, limits },
                }
            }
            E::Function(f) => self.function(f, scope, mode)?,
            E::Array(array) => self.array_constructor(&array.elem, scope, mode)?,
            // TRIM([BOTH | LEADING | TRAILING] [characters] FROM text), and TRIM(text, characters).
            E::Trim { expr, trim_where, trim_what, trim_characters } => {
                let func = match trim_where {
                    None | Some(sql::TrimWhereField::Both) => Func::Trim,
                    Some(sql::TrimWhereField::Leading) => Func::Ltrim,
                    Some(sql::TrimWhereField::Trailing) => Func::Rtrim,
                };
                let characters = match (trim_what, trim_characters.as_deref()) {
                    (Some(what), None) => Some(&**what),
                    (None, Some([one])) => Some(one),
                    (None, None) => None,
                    _ => return unsupported("TRIM with several character lists"),
                };
                let mut args = vec![self.expr(expr, scope, mode)?];
                if let Some(characters) = characters {
                    args.push(self.expr(characters, scope, mode)?);
                }
                Expr::Call { func, args }
            }
            E::Extract { field, syntax: sql::ExtractSyntax::From, expr } => {
                let value = self.expr(expr, scope, mode)?;
                let value = self.datetime_argument(expr, value, scope, mode, "extract")?;
                let unit = Expr::Const(Value::Text(field.to_string().to_ascii_lowercase()));
                Expr::Call { func: Func::Extract, args: vec![unit, value] }
            }
            E::Position { expr, r#in } => Expr::Call {
                func: Func::Position,
                args: vec![self.expr(r#in, scope, mode)?, self.expr(expr, scope, mode)?],
            },
            E::Floor { expr, field: sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime) } => {
                let mut arg = self.expr(expr, scope, mode)?;
                let input = self.input_type(expr, &arg, scope, mode);
                rounding_argument("floor", &mut arg, input, false)?;
                Expr::Call { func: Func::Floor, args: vec![arg] }
            }
            E::Ceil { expr, field: sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime) } => {
                let mut arg = self.expr(expr, scope, mode)?;
                let input = self.input_type(expr, &arg, scope, mode);
                rounding_argument("ceil", &mut arg, input, false)?;
                Expr::Call { func: Func::Ceil, args: vec![arg] }
            }
            E::TypedString(t) => {
                let (ty, limits) = super::cast_type(&t.data_type)?;
                let v = crate::types::cast_with(&literal(&t.value.value)?, ty, &limits)?;
                if ty == SqlType::Jsonb {
                    typed_const(v, ty)
                } else {
                    Expr::Const(v)
                }
            }
            E::Interval(i) => {
                let (E::Value(v), None, None) = (&*i.value, i.leading_precision, i.fractional_seconds_precision) else {
                    return unsupported(format!("interval literal {i}"));
                };
                let Value::Text(text) = literal(&v.value)? else {
                    return unsupported(format!("interval literal {i}"));
                };
                // `INTERVAL '3' DAY`: a bare number counts the leading field's unit.
                let unit = match (&i.leading_field, &i.last_field) {
                    (Some(field), None) => Some(field.to_string().to_lowercase()),
                    _ => None,
                };
                Expr::Const(Value::Interval(crate::interval::Interval::parse(&text, unit.as_deref())?))
            }
            E::Substring { expr, substring_from: Some(from), substring_for, .. } => {
                let mut args = vec![self.expr(expr, scope, mode)?, self.expr(from, scope, mode)?];
                if let Some(len) = substring_for {
                    args.push(self.expr(len, scope, mode)?);
                }
                Expr::Call { func: Func::Substr, args }
            }
            E::Subquery(q) => match self.nested_subquery(q, scope, mode, SubqueryKind::Scalar)? {
                Some(i) => Expr::Subquery(i),
                None => Expr::Const(Value::Null),
            },
            E::InSubquery { expr, subquery, negated } => {
                match self.nested_subquery(subquery, scope, mode, SubqueryKind::List)? {
                    Some(i) => Expr::InSubquery { expr: bx(self, expr, mode)?, subquery: i, negated: *negated },
                    None => Expr::Const(Value::Null),
                }
            }
            E::Exists { subquery, negated } => {
                match self.nested_subquery(subquery, scope, mode, SubqueryKind::Exists)? {
                    Some(i) => Expr::Exists { subquery: i, negated: *negated },
                    None => Expr::Const(Value::Null),
                }
            }
            other => return unsupported(format!("expression {other}")),
        })
    }

    /// `a ~ b`, `a ~* b`, `a !~ b`, `a !~* b`: regular-expression matches of text.
    fn regex(
        &mut self,
        op: &sql::BinaryOperator,
        (left, l): (&sql::Expr, Expr),
        (right, r): (&sql::Expr, Expr),
        scope: &Scope,
        mode: &Mode,
    ) -> Result<Expr> {
        use sql::BinaryOperator as B;
        let mut operands = Vec::with_capacity(2);
        for (ast, e) in [(left, l), (right, r)] {
            match self.input_type(ast, &e, scope, mode) {
                InputType::Known(t) if !t.is_text() => {
                    return err(SqlState::UndefinedFunction, format!("operator does not exist: {t} {op} text"))
                }
                input => operands.push(coerce(e, input, SqlType::Text)?),
            }
        }
        let func =
            if matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch) { Func::RegexIMatch } else { Func::RegexMatch };
        let call = Expr::Call { func, args: operands };
        Ok(if matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch) { Expr::Not(Box::new(call)) } else { call })
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

    /// What a subquery sees of the enclosing query: its FROM row, or in a grouped context
    /// the grouped row (group keys and aggregates, which is what it is evaluated on).
    fn subquery_scope(&self, scope: &Scope, mode: &Mode) -> Scope {
        match mode {
            Mode::Agg(ctx) => self.grouped(scope, ctx),
            _ => scope.clone(),
        }
    }

    /// Binds a subquery appearing in an expression of the current query (bound in `mode`).
    /// In the aggregate-detection pass it is bound only to find outer-level aggregates of the
    /// current query, then discarded (None).
    fn nested_subquery(
        &mut self,
        q: &sql::Query,
        scope: &Scope,
        mode: &mut Mode,
        kind: SubqueryKind,
    ) -> Result<Option<usize>> {
        if let Mode::Detect(_) = mode {
            // Only an aggregate call can be an outer-level aggregate; a bounded number of
            // subqueries is bound twice.
            if !mentions_aggregate(q) || self.rebind() {
                return Ok(None);
            }
        }
        let outer = self.subquery_scope(scope, mode);
        let slot = match mode {
            Mode::Plain(clause) => OuterAgg::NotAllowed(clause),
            Mode::Detect(_) => OuterAgg::Detect(false),
            Mode::Agg(ctx) => OuterAgg::Agg {
                scope: scope.clone(),
                group_len: ctx.group_bound.len(),
                calls: std::mem::take(&mut ctx.calls),
            },
        };
        let saved = (self.subqueries.len(), self.anonymous_params, self.min_level);
        let (planned, slot) = self.subquery(q, outer, slot, kind);
        match (mode, slot) {
            (Mode::Detect(found), OuterAgg::Detect(seen)) => {
                **found |= seen;
                // Errors surface in the binding pass.
                self.subqueries.truncate(saved.0);
                (self.anonymous_params, self.min_level) = (saved.1, saved.2);
                Ok(None)
            }
            (Mode::Agg(ctx), OuterAgg::Agg { calls, .. }) => {
                ctx.calls = calls;
                planned.map(Some)
            }
            _ => planned.map(Some),
        }
    }

    /// Counts a second binding; true when over the bound (the statement then fails).
    fn rebind(&mut self) -> bool {
        self.rebinds += 1;
        self.rebinds > MAX_REBINDS
    }

    /// Binds a subquery whose enclosing query's row is described by `outer` and which takes
    /// outer-level aggregates as `slot` says (returned, with the calls it gained). It is
    /// correlated (run per enclosing row) if it, or a subquery nested in it, refers to a
    /// column of any enclosing query.
    fn subquery(
        &mut self,
        q: &sql::Query,
        outer: Scope,
        slot: OuterAgg,
        kind: SubqueryKind,
    ) -> (Result<usize>, OuterAgg) {
        self.outer_scopes.push(outer);
        self.outer_aggs.push(slot);
        let depth = self.outer_scopes.len();
        let nesting = std::mem::take(&mut self.expr_nesting);
        let enclosing_min = self.min_level.take();
        let planned = self.query(q);
        let inner_min = self.min_level;
        self.min_level = match (enclosing_min, inner_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.expr_nesting = nesting;
        self.outer_scopes.pop();
        let slot = self.outer_aggs.pop().unwrap_or(OuterAgg::NotAllowed("this context"));
        let planned = match planned {
            Ok(p) => p,
            Err(e) => return (Err(e), slot),
        };
        let correlated = inner_min.is_some_and(|level| level < depth);
        if kind != SubqueryKind::Exists && planned.names.len() != 1 {
            return (err(SqlState::SyntaxError, "subquery must return only one column"), slot);
        }
        self.subqueries.push(Subquery { plan: planned, kind, correlated });
        (Ok(self.subqueries.len() - 1), slot)
    }

    /// The enclosing query an aggregate argument belongs to when it references columns of
    /// enclosing queries only, directly or in subqueries of the argument: the innermost of
    /// them (None: the aggregate is the current query's). Found by binding the argument with
    /// every enclosing query's FROM row visible.
    fn aggregate_level(&mut self, arg: &sql::Expr, scope: &Scope) -> Result<Option<usize>> {
        if self.rebind() {
            return Ok(None);
        }
        let full = self
            .outer_scopes
            .iter()
            .zip(&self.outer_aggs)
            .map(|(s, a)| match a {
                OuterAgg::Agg { scope, .. } => scope.clone(),
                _ => s.clone(),
            })
            .collect();
        let saved_scopes = std::mem::replace(&mut self.outer_scopes, full);
        let saved = (self.subqueries.len(), self.anonymous_params, self.min_level);
        let enclosing_seen = self.levels_seen.replace(BTreeSet::new());
        let bound = self.expr(arg, scope, &mut Mode::Plain("aggregate function calls"));
        let seen = std::mem::replace(&mut self.levels_seen, enclosing_seen).unwrap_or_default();
        if let Some(enclosing_seen) = &mut self.levels_seen {
            enclosing_seen.extend(&seen);
        }
        self.outer_scopes = saved_scopes;
        self.subqueries.truncate(saved.0);
        (self.anonymous_params, self.min_level) = (saved.1, saved.2);
        // A failing argument fails again where the aggregate is bound.
        let Ok(bound) = bound else { return Ok(None) };
        // Levels are absolute: this query is `current`; a subquery of the argument sees it as
        // an enclosing query at that level, and itself deeper.
        let current = self.outer_scopes.len();
        if bound.any(&|n| matches!(n, Expr::Column(_))) || seen.contains(&current) {
            return Ok(None);
        }
        Ok(seen.range(..current).next_back().copied())
    }

    /// An aggregate inside a subquery whose argument references only enclosing queries'
    /// columns: computed by the innermost of them (PostgreSQL semantics) and read here as a
    /// column of its grouped row. None: the aggregate is the current query's.
    fn outer_aggregate(
        &mut self,
        func: AggFunc,
        arg: &sql::Expr,
        distinct: bool,
        scope: &Scope,
    ) -> Result<Option<Expr>> {
        if self.outer_scopes.is_empty() {
            return Ok(None);
        }
        let Some(level) = self.aggregate_level(arg, scope)? else { return Ok(None) };
        let level_scope = match self.outer_aggs.get_mut(level) {
            Some(OuterAgg::NotAllowed(clause)) => {
                return err(SqlState::GroupingError, format!("aggregate functions are not allowed in {clause}"));
            }
            Some(OuterAgg::Detect(found)) => {
                *found = true;
                return Ok(Some(Expr::Const(Value::Null)));
            }
            Some(OuterAgg::Agg { scope, .. }) => scope.clone(),
            None => return err(SqlState::InternalError, "aggregate level out of range"),
        };
        // The argument is bound where it belongs: over that query's FROM row, with the
        // queries enclosing it.
        let inner_scopes = self.outer_scopes.split_off(level);
        let inner_aggs = self.outer_aggs.split_off(level);
        let nesting = std::mem::take(&mut self.expr_nesting);
        let bound = self.expr(arg, &level_scope, &mut Mode::Plain("aggregate function calls")).map(|arg| {
            let arg_type = self.type_of(&arg, &level_scope, &Mode::Plain(""));
            AggCall::over(func, Some(arg), distinct, arg_type)
        });
        self.expr_nesting = nesting;
        self.outer_scopes.extend(inner_scopes);
        self.outer_aggs.extend(inner_aggs);
        let call = bound?;
        let ty = aggregate_type(&call);
        let limits = match (&call.func, &call.arg) {
            (AggFunc::Min | AggFunc::Max, Some(arg)) => self.char_limits(arg, &level_scope),
            _ => TypeLimits::default(),
        };
        let Some(OuterAgg::Agg { group_len, calls, .. }) = self.outer_aggs.get_mut(level) else {
            return err(SqlState::InternalError, "aggregate level changed");
        };
        let pos = match calls.iter().position(|c| *c == call) {
            Some(p) => p,
            None => {
                calls.push(call);
                calls.len() - 1
            }
        };
        let column = *group_len + pos;
        // The subquery's view of that query's grouped row gains the aggregate's column.
        if let Some(s) = self.outer_scopes.get_mut(level) {
            while s.cols.len() <= column {
                s.cols.push(ScopeCol { table: String::new(), name: String::new(), ty, limits: limits.clone() });
            }
        }
        Ok(Some(self.enclosing(level, column)))
    }

    /// A reference to a column of the enclosing query at `level`, noted for correlation and
    /// for finding aggregates' levels.
    fn enclosing(&mut self, level: usize, column: usize) -> Expr {
        self.min_level = Some(self.min_level.map_or(level, |m| m.min(level)));
        if let Some(seen) = &mut self.levels_seen {
            seen.insert(level);
        }
        Expr::Enclosing { level, column }
    }

    pub(super) fn function(&mut self, f: &sql::Function, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        let name = function_name(&f.name)?;
        if let ("array", sql::FunctionArguments::Subquery(q)) = (name.as_str(), &f.args) {
            return Ok(match self.nested_subquery(q, scope, mode, SubqueryKind::Array)? {
                Some(i) => Expr::Subquery(i),
                None => Expr::Const(Value::Null),
            });
        }
        if let Some(over) = &f.over {
            return self.window_function(f, over, &name, scope, mode);
        }
        if f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
            return unsupported(format!("function syntax in {f}"));
        }
        let (args, distinct, order_by) = function_args_ordered(f)?;
        if let Some(e) = self.set_returning_function(&name, &args, scope, mode)? {
            return Ok(e);
        }
        let aggregate = aggregate_function(&name);
        if !order_by.is_empty()
            && !matches!(
                aggregate,
                Some(AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg)
            )
        {
            return unsupported(format!("ORDER BY in the arguments of {name}()"));
        }
        if let Some(func) = aggregate {
            if let (false, [Some(arg)]) = (order_by.is_empty(), args.as_slice()) {
                if !self.outer_scopes.is_empty() && self.aggregate_level(arg, scope)?.is_some() {
                    return unsupported("an aggregate with ORDER BY over enclosing queries' columns");
                }
            }
            if let (true, [Some(arg)]) = (order_by.is_empty(), args.as_slice()) {
                if let Some(outer) = self.outer_aggregate(func, arg, distinct, scope)? {
                    return Ok(outer);
                }
            }
            return match mode {
                Mode::Plain(clause) => {
                    err(SqlState::GroupingError, format!("aggregate functions are not allowed in {clause}"))
                }
                Mode::Detect(found) => {
                    **found = true;
                    Ok(Expr::Const(Value::Null))
                }
                Mode::Agg(_) => {
                    let call = match (func, args.as_slice()) {
                        (AggFunc::Count, [None]) if !distinct => AggCall::over(AggFunc::CountStar, None, false, None),
                        (AggFunc::StringAgg, [Some(arg), Some(delimiter)]) => {
                            self.string_agg(arg, delimiter, distinct, &order_by, scope)?
                        }
                        // jsonb_object_agg(k, v) aggregates the one-pair objects {k: v}.
                        (AggFunc::JsonbObjectAgg, [Some(key), Some(value)]) => {
                            let mut plain = Mode::Plain("aggregate function calls");
                            let (key, value) =
                                (self.expr(key, scope, &mut plain)?, self.expr(value, scope, &mut plain)?);
                            let types: Vec<&str> = [&key, &value]
                                .iter()
                                .map(|a| self.type_of(a, scope, &Mode::Plain("")).map_or("unknown", SqlType::pg_name))
                                .collect();
                            let pair = Expr::Call {
                                func: Func::Jsonb(JsonbFn::ObjectPair),
                                args: vec![Expr::Const(Value::Text(types.join(","))), key, value],
                            };
                            let order_by = self.aggregate_order(&order_by, scope)?;
                            AggCall {
                                func,
                                arg: Some(pair),
                                distinct,
                                arg_type: Some(SqlType::Jsonb),
                                order_by,
                                delimiter: String::new(),
                            }
                        }
                        (_, [Some(arg)]) => {
                            let arg = self.expr(arg, scope, &mut Mode::Plain("aggregate function calls"))?;
                            let arg_type = self.type_of(&arg, scope, &Mode::Plain(""));
                            let order_by = self.aggregate_order(&order_by, scope)?;
                            self.check_aggregate_argument(func, arg_type)?;
                            AggCall { func, arg: Some(arg), distinct, arg_type, order_by, delimiter: String::new() }
                        }
                        _ => {
                            return err(
                                SqlState::UndefinedFunction,
                                format!("function {name} takes exactly one argument"),
                            )
                        }
                    };
                    let Mode::Agg(ctx) = mode else {
                        return err(SqlState::InternalError, "aggregate binding mode changed");
                    };
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
        if let Some(e) = self.sequence_function(&name, &args, scope, mode)? {
            return Ok(e);
        }
        if let Some(asts) = args.iter().copied().collect::<Option<Vec<_>>>() {
            if let Some(e) = self.system_function(&name, &asts, scope, mode)? {
                return Ok(e);
            }
        }
        let Some(func) = Func::by_name(&name) else {
            return match name.as_str() {
                // Every replica must compute the same value: time is the transaction's.
                "clock_timestamp" | "timeofday" => {
                    unsupported(format!("{name}() (no clock is read; now() is the transaction's time)"))
                }
                "current_time" | "localtime" => unsupported(format!("{name} (the time types)")),
                _ if is_missing_json_function(&name) => unsupported(format!(
                    "function {name}() (of the json functions Pistou has json_build_object, jsonb_build_object, \
                     jsonb_build_array, to_jsonb, jsonb_typeof, jsonb_array_length, jsonb_extract_path(_text), \
                     jsonb_strip_nulls, jsonb_set, jsonb_pretty and the aggregates jsonb_agg and jsonb_object_agg)"
                )),
                _ => err(SqlState::UndefinedFunction, format!("function {name} does not exist")),
            };
        };
        if distinct {
            return unsupported(format!("DISTINCT in {name}()"));
        }
        let (min, max) = func.arity();
        if args.len() < min || args.len() > max {
            return err(SqlState::UndefinedFunction, format!("function {name} does not take {} arguments", args.len()));
        }
        let asts = args
            .into_iter()
            .map(|a| a.map_or_else(|| unsupported(format!("* argument to {name}")), Ok))
            .collect::<Result<Vec<_>>>()?;
        let mut args = Vec::with_capacity(asts.len());
        for a in &asts {
            args.push(self.expr(a, scope, mode)?);
        }
        let inputs: Vec<InputType> = asts.iter().zip(&args).map(|(a, e)| self.input_type(a, e, scope, mode)).collect();
        match (func, inputs.as_slice(), args.as_mut_slice()) {
            (Func::Coalesce | Func::Greatest | Func::Least, _, _) => {
                if let Some(ty) = common_type(&name.to_uppercase(), &inputs)? {
                    for (arg, input) in args.iter_mut().zip(&inputs) {
                        coerce_in_place(arg, *input, ty)?;
                    }
                }
            }
            // NULLIF(a, b) is a, typed as the left operand of `a = b`. A literal or parameter
            // b takes that type too; a typed b is compared as it is (comparisons of numbers
            // of different types are exact).
            (Func::NullIf, [a_type, b_type], [a, b]) => {
                if let Some(ty) = nullif_type(*a_type, *b_type)? {
                    match a {
                        Expr::Const(Value::Null) => *a = typed_null(ty),
                        _ => coerce_in_place(a, *a_type, ty)?,
                    }
                    if matches!(b_type, InputType::Literal | InputType::Opaque) {
                        coerce_in_place(b, *b_type, ty)?;
                    }
                }
            }
            (Func::Age, _, values) => {
                for (ast, value) in asts.iter().zip(values.iter_mut()) {
                    let taken = std::mem::replace(value, Expr::Const(Value::Null));
                    *value = self.datetime_argument(ast, taken, scope, mode, &name)?;
                }
            }
            (Func::DateTrunc | Func::DatePart, [_, _], [_, value]) => {
                let [_, ast] = asts.as_slice() else { return err(SqlState::InternalError, "arity changed") };
                let taken = std::mem::replace(value, Expr::Const(Value::Null));
                *value = self.datetime_argument(ast, taken, scope, mode, &name)?;
            }
            (Func::Round | Func::Floor | Func::Ceil, [input, ..], [first, ..]) => {
                rounding_argument(&name, first, *input, asts.len() > 1)?;
            }
            // The value arguments are written by type (json, arrays, REAL): their static
            // types go first, as a constant list of type names (see `Func::JsonBuildObject`).
            (Func::Jsonb(f), _, _) => self.jsonb_arguments(f, &name, &inputs, &mut args, scope, mode)?,
            // Numbers are formatted by their static type (integer and bigint, real and double
            // precision differ): the type's name goes first (see `Func::ToChar`).
            (Func::ToChar, [InputType::Literal, template], _) => {
                let template = match template {
                    InputType::Known(t) => t.pg_name(),
                    _ => "unknown",
                };
                return err(
                    SqlState::AmbiguousFunction,
                    format!("function to_char(unknown, {template}) is not unique"),
                );
            }
            (Func::ToChar, _, _) => {
                let ty = args.first().and_then(|a| self.type_of(a, scope, mode)).map_or("unknown", SqlType::pg_name);
                args.insert(0, Expr::Const(Value::Text(ty.to_string())));
            }
            (Func::JsonBuildObject, _, _) => {
                let types: Vec<&str> =
                    args.iter().map(|a| self.type_of(a, scope, mode).map_or("unknown", SqlType::pg_name)).collect();
                args.insert(0, Expr::Const(Value::Text(types.join(","))));
            }
            _ => {}
        }
        Ok(Expr::Call { func, args })
    }

    /// The arguments of a jsonb function brought to its parameter types (a literal or a
    /// parameter is read as one); the builders get their arguments' type names first.
    fn jsonb_arguments(
        &self,
        f: JsonbFn,
        name: &str,
        inputs: &[InputType],
        args: &mut Vec<Expr>,
        scope: &Scope,
        mode: &Mode,
    ) -> Result<()> {
        if matches!(f, JsonbFn::BuildObject | JsonbFn::BuildArray | JsonbFn::ToJsonb) {
            let types: Vec<&str> =
                args.iter().map(|a| self.type_of(a, scope, mode).map_or("unknown", SqlType::pg_name)).collect();
            args.insert(0, Expr::Const(Value::Text(types.join(","))));
            return Ok(());
        }
        let wanted = |i: usize| match (f, i) {
            (_, 0) => SqlType::Jsonb,
            (JsonbFn::Set, 1) => SqlType::Array(ArrayElem::Text),
            (JsonbFn::Set, 2) => SqlType::Jsonb,
            (JsonbFn::Set, _) => SqlType::Bool,
            _ => SqlType::Text,
        };
        let fits = |have: SqlType, want: SqlType| {
            have == want
                || (want == SqlType::Text && have.is_text())
                || (want == SqlType::Array(ArrayElem::Text) && have == SqlType::Array(ArrayElem::Varchar))
        };
        if inputs.iter().enumerate().any(|(i, input)| matches!(input, InputType::Known(t) if !fits(*t, wanted(i)))) {
            let shown: Vec<&str> = inputs
                .iter()
                .map(|t| match t {
                    InputType::Known(t) => t.pg_name(),
                    _ => "unknown",
                })
                .collect();
            return err(SqlState::UndefinedFunction, format!("function {name}({}) does not exist", shown.join(", ")));
        }
        for (i, (arg, input)) in args.iter_mut().zip(inputs).enumerate() {
            if !matches!(input, InputType::Known(_)) {
                coerce_in_place(arg, *input, wanted(i))?;
            }
        }
        Ok(())
    }

    /// The jsonb operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`, and `||`
    /// and `-` with a jsonb operand), bound to `Func::Jsonb`; `Err` gives the operands back
    /// for any other operator. Operands are typed as PostgreSQL resolves them: a literal
    /// key is text, a literal document jsonb, a literal path text[].
    fn jsonb_operator(
        &mut self,
        op: &sql::BinaryOperator,
        (la, l): (&sql::Expr, Expr),
        (ra, r): (&sql::Expr, Expr),
        scope: &Scope,
        mode: &Mode,
    ) -> Result<std::result::Result<Expr, (Expr, Expr)>> {
        use sql::BinaryOperator as B;
        use InputType::{Known, Literal, Opaque};
        let jsonb_only = matches!(
            op,
            B::Arrow
                | B::LongArrow
                | B::HashArrow
                | B::HashLongArrow
                | B::AtArrow
                | B::ArrowAt
                | B::Question
                | B::QuestionAnd
                | B::QuestionPipe
                | B::HashMinus
                | B::AtQuestion
                | B::AtAt
        );
        let (lt, rt) = (self.input_type(la, &l, scope, mode), self.input_type(ra, &r, scope, mode));
        let is = |t: InputType, ty: SqlType| t == Known(ty);
        let jsonb_side = is(lt, SqlType::Jsonb) || is(rt, SqlType::Jsonb);
        let json_side = is(lt, SqlType::Json) || is(rt, SqlType::Json);
        match op {
            _ if jsonb_only => {}
            // jsonb || text is text concatenation (PostgreSQL's anynonarray || text).
            B::StringConcat
                if jsonb_side && !matches!((lt, rt), (Known(a), _) | (_, Known(a)) if a != SqlType::Jsonb) => {}
            B::Minus if is(lt, SqlType::Jsonb) => {}
            _ => return Ok(Err((l, r))),
        }
        let shown = |t: InputType| match t {
            Known(t) => t.pg_name(),
            _ => "unknown",
        };
        let missing = || {
            SqlError::new(
                SqlState::UndefinedFunction,
                format!("operator does not exist: {} {op} {}", shown(lt), shown(rt)),
            )
        };
        if json_side {
            return unsupported(format!("json operator {op} (json values are computed only; cast them to jsonb)"));
        }
        match op {
            B::AtQuestion | B::AtAt => return unsupported(format!("jsonpath operator {op}")),
            _ => {}
        }
        let left = match lt {
            Known(SqlType::Jsonb) => l,
            Literal if matches!(rt, Literal) => {
                return err(SqlState::AmbiguousFunction, format!("operator is not unique: unknown {op} unknown"))
            }
            Literal | Opaque => coerce(l, lt, SqlType::Jsonb)?,
            Known(_) => return Err(missing()),
        };
        let text_array = SqlType::Array(ArrayElem::Text);
        let key_types = |t: SqlType| t.is_text() || t.is_integer();
        let (func, right) = match (op, rt) {
            (B::Arrow | B::LongArrow, Known(t)) if key_types(t) => (JsonbFn::Get, r),
            (B::Minus, Known(t)) if key_types(t) => (JsonbFn::Delete, r),
            (B::Arrow | B::LongArrow | B::Minus | B::Question, Literal | Opaque) => {
                (JsonbFn::Delete, coerce(r, rt, SqlType::Text)?)
            }
            (B::Question, Known(t)) if t.is_text() => (JsonbFn::Exists, r),
            (B::Minus, Known(SqlType::Array(ArrayElem::Text | ArrayElem::Varchar))) => (JsonbFn::DeleteKeys, r),
            (B::HashArrow | B::HashLongArrow | B::QuestionAnd | B::QuestionPipe | B::HashMinus, Literal | Opaque) => {
                (JsonbFn::Path, coerce(r, rt, text_array)?)
            }
            (
                B::HashArrow | B::HashLongArrow | B::QuestionAnd | B::QuestionPipe | B::HashMinus,
                Known(SqlType::Array(ArrayElem::Text | ArrayElem::Varchar)),
            ) => (JsonbFn::Path, r),
            (B::AtArrow | B::ArrowAt | B::StringConcat, Known(SqlType::Jsonb)) => (JsonbFn::Contains, r),
            (B::AtArrow | B::ArrowAt | B::StringConcat, Literal | Opaque) => {
                (JsonbFn::Contains, coerce(r, rt, SqlType::Jsonb)?)
            }
            _ => return Err(missing()),
        };
        let func = match op {
            B::Arrow => JsonbFn::Get,
            B::LongArrow => JsonbFn::GetText,
            B::HashArrow => JsonbFn::Path,
            B::HashLongArrow => JsonbFn::PathText,
            B::Question => JsonbFn::Exists,
            B::QuestionPipe => JsonbFn::ExistsAny,
            B::QuestionAnd => JsonbFn::ExistsAll,
            B::StringConcat => JsonbFn::Concat,
            B::HashMinus => JsonbFn::DeletePath,
            B::Minus => func,
            _ => JsonbFn::Contains,
        };
        let args = if matches!(op, B::ArrowAt) { vec![right, left] } else { vec![left, right] };
        Ok(Ok(Expr::Call { func: Func::Jsonb(func), args }))
    }

    /// `a || b`: text concatenation, or array concatenation when either side is an array
    /// (PostgreSQL's `array || array`, `array || element`, `element || array`; a quoted
    /// literal next to an array is read as an array of its type, as PostgreSQL resolves it).
    fn concat(
        &mut self,
        (left_ast, left): (&sql::Expr, Expr),
        (right_ast, right): (&sql::Expr, Expr),
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Expr> {
        let array_of = |t: Option<SqlType>| t.filter(|t| matches!(t, SqlType::Array(_)));
        let (left_type, right_type) = (self.type_of(&left, scope, mode), self.type_of(&right, scope, mode));
        let array = match (array_of(left_type), array_of(right_type)) {
            (None, None) => {
                return Ok(Expr::Concat(
                    Box::new(self.as_text(left, scope, mode)),
                    Box::new(self.as_text(right, scope, mode)),
                ))
            }
            (Some(a), Some(b)) if a != b => {
                return err(
                    SqlState::UndefinedFunction,
                    format!("operator does not exist: {} || {}", a.pg_name(), b.pg_name()),
                )
            }
            (Some(a), _) | (_, Some(a)) => a,
        };
        let element = array.element().unwrap_or(SqlType::Text);
        let type_name = Expr::Const(Value::Text(element.pg_name().to_string()));
        let operand = |ast: &sql::Expr, e: Expr, t: Option<SqlType>, this: &mut Self| -> Result<Expr> {
            if t == Some(array) {
                return Ok(e);
            }
            let input = this.input_type(ast, &e, scope, mode);
            if input == InputType::Literal {
                return coerce(e, input, array);
            }
            let item = coerce(e, input, element).map_err(|_| {
                let shown = t.map_or("unknown", SqlType::pg_name);
                SqlError::new(
                    SqlState::UndefinedFunction,
                    format!("operator does not exist: {} || {shown}", array.pg_name()),
                )
            })?;
            Ok(Expr::Call { func: Func::ArrayConstruct, args: vec![type_name.clone(), item] })
        };
        let left = operand(left_ast, left, left_type, self)?;
        let right = operand(right_ast, right, right_type, self)?;
        Ok(Expr::Call { func: Func::ArrayCat, args: vec![type_name, left, right] })
    }

    /// `ARRAY[e1, …]`: the elements brought to their common type (as VALUES columns are),
    /// which must be a scalar type.
    fn array_constructor(&mut self, items: &[sql::Expr], scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        if items.is_empty() {
            return err(SqlState::IndeterminateDatatype, "cannot determine type of empty array");
        }
        let mut args = Vec::with_capacity(items.len() + 1);
        for item in items {
            args.push(self.expr(item, scope, mode)?);
        }
        let inputs: Vec<InputType> = items.iter().zip(&args).map(|(a, e)| self.input_type(a, e, scope, mode)).collect();
        let element = common_type("ARRAY", &inputs)?.unwrap_or(SqlType::Text);
        if ArrayElem::of(element).is_none() {
            return unsupported(format!("arrays of {element} (arrays have one dimension)"));
        }
        for (arg, input) in args.iter_mut().zip(&inputs) {
            coerce_in_place(arg, *input, element)?;
        }
        args.insert(0, Expr::Const(Value::Text(element.pg_name().to_string())));
        Ok(Expr::Call { func: Func::ArrayConstruct, args })
    }

    /// The ORDER BY of an aggregate's arguments, bound over the aggregated rows.
    fn aggregate_order(&mut self, order_by: &[&sql::OrderByExpr], scope: &Scope) -> Result<Vec<AggOrder>> {
        let mut out = Vec::with_capacity(order_by.len());
        for o in order_by {
            let (desc, nulls_first) = Self::sort_options(o)?;
            let expr = self.expr(&o.expr, scope, &mut Mode::Plain("aggregate function calls"))?;
            if self.type_of(&expr, scope, &Mode::Plain("")) == Some(SqlType::Jsonb) {
                return unsupported("ORDER BY a jsonb value (PostgreSQL's jsonb sort order is not implemented)");
            }
            out.push(AggOrder { expr, desc, nulls_first });
        }
        Ok(out)
    }

    /// The date or time argument of EXTRACT, date_part or date_trunc: a quoted literal reads
    /// as a timestamptz (PostgreSQL's preferred type of the category); other types fail as
    /// PostgreSQL's missing function does.
    fn datetime_argument(
        &mut self,
        ast: &sql::Expr,
        value: Expr,
        scope: &Scope,
        mode: &mut Mode,
        name: &str,
    ) -> Result<Expr> {
        let input = self.input_type(ast, &value, scope, mode);
        match self.type_of(&value, scope, mode) {
            Some(SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz) => Ok(value),
            Some(SqlType::Interval) if name != "date_trunc" => Ok(value),
            Some(SqlType::Interval) => unsupported("date_trunc of an interval"),
            None if input == InputType::Literal => coerce(value, input, SqlType::TimestampTz),
            None => Ok(value),
            Some(other) => err(
                SqlState::UndefinedFunction,
                format!("function {name}(unknown, {}) does not exist", other.pg_name()),
            ),
        }
    }

    /// `string_agg(value, delimiter [ORDER BY …])` over this query's rows, the delimiter a
    /// constant.
    fn string_agg(
        &mut self,
        arg: &sql::Expr,
        delimiter: &sql::Expr,
        distinct: bool,
        order_by: &[&sql::OrderByExpr],
        scope: &Scope,
    ) -> Result<AggCall> {
        if !self.outer_scopes.is_empty() && self.aggregate_level(arg, scope)?.is_some() {
            return unsupported("string_agg over enclosing queries' columns");
        }
        let value = self.expr(arg, scope, &mut Mode::Plain("aggregate function calls"))?;
        let input = self.input_type(arg, &value, scope, &Mode::Plain(""));
        let value = match self.type_of(&value, scope, &Mode::Plain("")) {
            Some(t) if t.is_text() => value,
            None if input == InputType::Literal => coerce(value, input, SqlType::Text)?,
            other => {
                let shown = other.map_or("unknown", SqlType::pg_name);
                return err(SqlState::UndefinedFunction, format!("function string_agg({shown}, text) does not exist"));
            }
        };
        let delimiter = match self.expr(delimiter, scope, &mut Mode::Plain("aggregate function calls"))? {
            Expr::Const(Value::Text(d)) => d,
            Expr::Const(Value::Null) => String::new(),
            _ => return unsupported("string_agg with a delimiter that is not a constant text"),
        };
        let order_by = self.aggregate_order(order_by, scope)?;
        Ok(AggCall {
            func: AggFunc::StringAgg,
            arg: Some(value),
            distinct,
            arg_type: Some(SqlType::Text),
            order_by,
            delimiter,
        })
    }

    /// The argument types the aggregates added for arrays and booleans accept.
    fn check_aggregate_argument(&self, func: AggFunc, arg_type: Option<SqlType>) -> Result<()> {
        let shown = arg_type.map_or("unknown", SqlType::pg_name);
        match (func, arg_type) {
            (AggFunc::BoolAnd | AggFunc::BoolOr, Some(t)) if t != SqlType::Bool => {
                let name = if func == AggFunc::BoolAnd { "bool_and" } else { "bool_or" };
                err(SqlState::UndefinedFunction, format!("function {name}({shown}) does not exist"))
            }
            // jsonb has no ordering here (nor min/max in PostgreSQL).
            (AggFunc::Min | AggFunc::Max, Some(SqlType::Jsonb)) => err(
                SqlState::UndefinedFunction,
                format!("function {}(jsonb) does not exist", if func == AggFunc::Min { "min" } else { "max" }),
            ),
            (AggFunc::ArrayAgg, Some(t)) if ArrayElem::of(t).is_none() => {
                unsupported(format!("array_agg of {shown} values (arrays of arrays, of json and of uuid)"))
            }
            // PostgreSQL 15 has no ordering aggregate or arithmetic over uuid.
            (AggFunc::Min | AggFunc::Max | AggFunc::Sum | AggFunc::Avg, Some(SqlType::Uuid)) => {
                let name = match func {
                    AggFunc::Min => "min",
                    AggFunc::Max => "max",
                    AggFunc::Sum => "sum",
                    _ => "avg",
                };
                err(SqlState::UndefinedFunction, format!("function {name}(uuid) does not exist"))
            }
            _ => Ok(()),
        }
    }

    /// CASE: WHEN values compared with the operand take its type where they are literals; the
    /// results are brought to their common type, resolved as PostgreSQL does (ELSE first).
    fn case(
        &mut self,
        operand: Option<&sql::Expr>,
        conditions: &[sql::CaseWhen],
        otherwise: Option<&sql::Expr>,
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Expr> {
        let operand = operand.map(|o| self.expr(o, scope, mode).map(|b| (o, b))).transpose()?;
        let operand_type = operand.as_ref().and_then(|(ast, b)| self.operand_type(ast, b, scope, mode));
        let mut whens = Vec::with_capacity(conditions.len());
        for w in conditions {
            let mut condition = self.expr(&w.condition, scope, mode)?;
            if operand.is_some() {
                condition = self.compared_operand(operand_type, &w.condition, condition)?;
            }
            whens.push((condition, self.expr(&w.result, scope, mode)?));
        }
        let mut otherwise = otherwise.map(|o| self.expr(o, scope, mode).map(|b| (o, b))).transpose()?;
        // A missing ELSE is a NULL literal.
        let else_type = otherwise.as_ref().map_or(InputType::Literal, |(ast, b)| self.input_type(ast, b, scope, mode));
        let mut inputs = vec![else_type];
        inputs
            .extend(conditions.iter().zip(&whens).map(|(w, (_, then))| self.input_type(&w.result, then, scope, mode)));
        if let Some(ty) = common_type("CASE", &inputs)? {
            for ((_, then), input) in whens.iter_mut().zip(inputs.iter().skip(1)) {
                coerce_in_place(then, *input, ty)?;
            }
            if let Some((_, e)) = &mut otherwise {
                coerce_in_place(e, else_type, ty)?;
            }
        }
        Ok(Expr::Case {
            operand: operand.map(|(_, b)| Box::new(b)),
            whens,
            otherwise: otherwise.map(|(_, b)| Box::new(b)),
        })
    }

    /// Binds an expression that may only use constants and parameters.
    pub(super) fn constant_expr(&mut self, e: &sql::Expr, clause: &'static str) -> Result<Expr> {
        self.expr(e, &Scope::default(), &mut Mode::Plain(clause))
    }
}

/// True if the text of `q` calls an aggregate function (a cheap test before binding it to
/// look for outer-level aggregates).
/// json and jsonb functions PostgreSQL has and Pistou does not: they fail with 0A000.
fn is_missing_json_function(name: &str) -> bool {
    ["json", "jsonb", "to_json", "row_to_json", "array_to_json"]
        .iter()
        .any(|p| name == *p || name.starts_with(&format!("{p}_")))
}

fn mentions_aggregate(q: &sql::Query) -> bool {
    let text = q.to_string().to_lowercase();
    ["count(", "sum(", "avg(", "min(", "max("].iter().any(|f| text.contains(f))
}

/// PostgreSQL has round, floor and ceil for numeric and double precision only, and
/// `round(x, n)` for numeric only: an integer or real argument is converted to double
/// precision (the preferred numeric type; `floor(1)` is double precision), an integer `x` of
/// `round(x, n)` to numeric, and a double or real `x` there has no function (42883).
fn rounding_argument(name: &str, arg: &mut Expr, input: InputType, with_digits: bool) -> Result<()> {
    let InputType::Known(ty) = input else {
        return Ok(());
    };
    let to = match ty {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int if with_digits => SqlType::Numeric,
        SqlType::Float | SqlType::Float4 if with_digits => {
            return err(
                SqlState::UndefinedFunction,
                format!("function {name}({}, integer) does not exist", ty.pg_name()),
            );
        }
        SqlType::Int2 | SqlType::Int4 | SqlType::Int | SqlType::Float4 => SqlType::Float,
        _ => return Ok(()),
    };
    coerce_in_place(arg, input, to)
}

/// A number literal, possibly parenthesized.
fn is_number_literal(e: &sql::Expr) -> bool {
    match e {
        sql::Expr::Nested(inner) => is_number_literal(inner),
        sql::Expr::Value(v) => matches!(v.value, sql::Value::Number(..)),
        _ => false,
    }
}
