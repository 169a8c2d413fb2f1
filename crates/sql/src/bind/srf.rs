//! Binding of set-returning functions in a select list (`unnest(array)`,
//! `generate_subscripts(array, dim)`): each call becomes a placeholder column
//! (`SRF_COLUMN_BASE + k`) that the SELECT renumbers once its input row's width is known;
//! the executor appends the calls' values to each row (`exec::srf`).

use super::*;

/// Placeholder columns of set-returning calls, far beyond any real row (and apart from
/// window calls' placeholders).
pub(super) const SRF_COLUMN_BASE: usize = 1 << 41;

/// Whether a set-returning call may appear where the binder is.
pub(super) enum SrfState {
    /// Not here: the clause, for the error when the binding mode does not name it.
    Denied(&'static str),
    /// In a set-returning call's arguments.
    Nested,
    /// In a select list: calls are collected here.
    Allowed(Vec<SrfCall>),
}

fn not_allowed(message: String) -> Result<Expr> {
    err(SqlState::FeatureNotSupported, message)
}

impl Binder<'_> {
    /// Static type of a set-returning call's placeholder column.
    pub(super) fn srf_type(&self, e: &Expr) -> Option<SqlType> {
        let (Expr::Column(c), SrfState::Allowed(calls)) = (e, &self.srfs) else { return None };
        let call = calls.get(c.checked_sub(SRF_COLUMN_BASE)?)?;
        match call.kind {
            SrfKind::Unnest => call.arg_type.element(),
            SrfKind::GenerateSubscripts => Some(SqlType::Int4),
            SrfKind::GenerateSeries => Some(call.arg_type),
        }
    }

    /// `unnest(array)`, `generate_subscripts(array, dim)` or `generate_series(start, stop[,
    /// step])` (None for another name): a placeholder column for the call's values.
    pub(super) fn set_returning_function(
        &mut self,
        name: &str,
        args: &[Option<&sql::Expr>],
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Option<Expr>> {
        let (kind, ancestors) = match name {
            "unnest" => (SrfKind::Unnest, false),
            "generate_subscripts" => (SrfKind::GenerateSubscripts, false),
            "generate_series" => (SrfKind::GenerateSeries, false),
            // A partition's ancestors: Pistou has no partitioned tables, so none (psql's `\d`
            // asks for them), the elements of an empty array.
            "pg_partition_ancestors" => (SrfKind::Unnest, true),
            _ => return Ok(None),
        };
        let asts: Vec<&sql::Expr> = args.iter().copied().collect::<Option<_>>().unwrap_or_default();
        if ancestors {
            let [relation] = asts.as_slice() else {
                return err(SqlState::UndefinedFunction, "function pg_partition_ancestors takes one argument")
                    .map(Some);
            };
            self.expr(relation, scope, mode)?;
        }
        match (kind, asts.len()) {
            (SrfKind::Unnest, 1) | (SrfKind::GenerateSubscripts, 2) | (SrfKind::GenerateSeries, 2 | 3) => {}
            (SrfKind::GenerateSubscripts, 3) => {
                return unsupported("generate_subscripts(array, dim, reverse)").map(Some);
            }
            _ => {
                return err(
                    SqlState::UndefinedFunction,
                    format!("function {name} does not take {} arguments", args.len()),
                )
            }
        }
        // Looking for aggregates: they may be in the arguments.
        if let Mode::Detect(_) = mode {
            for a in &asts {
                let _ = self.expr(a, scope, mode);
            }
            return Ok(Some(Expr::Const(Value::Null)));
        }
        // A clause that is not the select list (WHERE, an aggregate's arguments, ORDER BY).
        if let Mode::Plain(clause) = mode {
            if !clause.is_empty() && *clause != "this context" {
                return not_allowed(format!("set-returning functions are not allowed in {clause}")).map(Some);
            }
        }
        let mut calls = match std::mem::replace(&mut self.srfs, SrfState::Nested) {
            SrfState::Allowed(calls) => calls,
            other => {
                let message = match (&other, &*mode) {
                    (SrfState::Nested, _) => "set-returning functions must appear at top level of FROM or a select list (nested calls are not supported)".to_string(),
                    (SrfState::Denied(clause), _) => format!("set-returning functions are not allowed in {clause}"),
                    _ => "set-returning functions are not allowed here".to_string(),
                };
                self.srfs = other;
                return not_allowed(message).map(Some);
            }
        };
        let bound = match (ancestors, kind) {
            (true, _) => Ok((vec![Expr::Const(Value::Text("{}".into()))], SqlType::Array(ArrayElem::Int4))),
            (false, SrfKind::GenerateSeries) => self.series_arguments(&asts, scope, mode),
            (false, _) => self.srf_arguments(name, &asts, scope, mode),
        };
        let call = bound.map(|(args, arg_type)| SrfCall { kind, args, arg_type });
        let result = call.map(|call| {
            calls.push(call);
            Expr::Column(SRF_COLUMN_BASE + calls.len() - 1)
        });
        self.srfs = SrfState::Allowed(calls);
        result.map(Some)
    }

    /// `generate_series`' arguments brought to their common integer type. Timestamps and
    /// numerics are refused: they need intervals and decimal steps, which are not built.
    fn series_arguments(
        &mut self,
        asts: &[&sql::Expr],
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<(Vec<Expr>, SqlType)> {
        let mut args = Vec::with_capacity(asts.len());
        for a in asts {
            args.push(self.expr(a, scope, mode)?);
        }
        let inputs: Vec<InputType> = asts.iter().zip(&args).map(|(a, e)| self.input_type(a, e, scope, mode)).collect();
        // generate_series(start, stop, interval) over timestamps (a date is read as a
        // timestamptz, as PostgreSQL resolves it).
        if let (Some(InputType::Known(SqlType::Interval) | InputType::Literal), Some(bounds)) =
            (inputs.get(2), inputs.get(..2))
        {
            let step_is_interval = inputs.get(2) == Some(&InputType::Known(SqlType::Interval));
            let ty = match common_type("generate_series", bounds)? {
                Some(SqlType::Timestamp) => Some(SqlType::Timestamp),
                Some(SqlType::TimestampTz | SqlType::Date) => Some(SqlType::TimestampTz),
                None if step_is_interval => Some(SqlType::TimestampTz),
                _ => None,
            };
            if let Some(ty) = ty {
                for (i, (arg, input)) in args.iter_mut().zip(&inputs).enumerate() {
                    coerce_in_place(arg, *input, if i == 2 { SqlType::Interval } else { ty })?;
                }
                return Ok((args, ty));
            }
        }
        let ty = match common_type("generate_series", &inputs)? {
            None => SqlType::Int4, // literals and parameters only: PostgreSQL picks integer
            Some(SqlType::Int2 | SqlType::Int4) => SqlType::Int4,
            Some(SqlType::Int) => SqlType::Int,
            Some(
                other @ (SqlType::Numeric
                | SqlType::Float
                | SqlType::Float4
                | SqlType::Date
                | SqlType::Timestamp
                | SqlType::TimestampTz),
            ) => {
                return unsupported(format!(
                    "generate_series over {} (integer series, and timestamp series with an interval step)",
                    other.pg_name()
                ));
            }
            Some(other) => {
                let name = other.pg_name();
                return err(
                    SqlState::UndefinedFunction,
                    format!("function generate_series({name}, {name}) does not exist"),
                );
            }
        };
        for (arg, input) in args.iter_mut().zip(&inputs) {
            coerce_in_place(arg, *input, ty)?;
        }
        Ok((args, ty))
    }

    /// The array argument and the dimension argument, and the array's static type.
    fn srf_arguments(
        &mut self,
        name: &str,
        asts: &[&sql::Expr],
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<(Vec<Expr>, SqlType)> {
        let Some(array_ast) = asts.first() else {
            return err(SqlState::UndefinedFunction, format!("function {name} needs an argument"));
        };
        let array = self.expr(array_ast, scope, mode)?;
        let array_type = match self.type_of(&array, scope, mode) {
            Some(t) if t.element().is_some() => t,
            other => {
                let shown = other.map_or("unknown", SqlType::pg_name);
                return err(SqlState::UndefinedFunction, format!("function {name}({shown}) does not exist"));
            }
        };
        let mut args = vec![array];
        if let Some(d) = asts.get(1) {
            let bound = self.expr(d, scope, mode)?;
            let input = self.input_type(d, &bound, scope, mode);
            args.push(coerce(bound, input, SqlType::Int4)?);
        }
        Ok((args, array_type))
    }
}

impl Binder<'_> {
    /// `FROM unnest(a1, …) [AS t [(c1, …)]]` and `FROM generate_series(…)`: the derived
    /// table `(SELECT f(args1) AS c1, …) AS t`, one call per column, run in lockstep as
    /// PostgreSQL zips unnest's arrays. The columns are named by the alias's column list,
    /// else by the alias itself (one column), else by the function. The arguments may not
    /// refer to other FROM items of the same query (no LATERAL); enclosing queries' are
    /// fine.
    pub(super) fn function_in_from(
        &mut self,
        function: &str,
        alias: Option<&sql::TableAlias>,
        calls: Vec<String>,
        numbered: bool,
    ) -> Result<(QueryPlan, String)> {
        if numbered {
            return unsupported(format!("WITH ORDINALITY / WITH OFFSET on {function}"));
        }
        let columns = alias.map_or(&[][..], |a| a.columns.as_slice());
        if columns.len() > calls.len() {
            return err(
                SqlState::InvalidColumnReference,
                format!("{function} has {} columns available but {} columns specified", calls.len(), columns.len()),
            );
        }
        if columns.iter().any(|c| c.data_type.is_some()) {
            return unsupported("typed column aliases");
        }
        let table = alias.map_or_else(|| function.to_string(), |a| ident(&a.name));
        let items: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(i, args)| {
                let name = match (columns.get(i), calls.len()) {
                    (Some(c), _) => ident(&c.name),
                    (None, 1) if alias.is_some() => table.clone(),
                    _ => function.to_string(),
                };
                format!("{function}({args}) AS {}", crate::system::quote_ident(&name))
            })
            .collect();
        let text = format!("SELECT {}", items.join(", "));
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let query = sqlparser::parser::Parser::new(&dialect)
            .with_recursion_limit(self.max_depth)
            .try_with_sql(&text)
            .and_then(|mut p| p.parse_query())
            .map_err(|e| SqlError::new(SqlState::SyntaxError, format!("{function} in FROM: {e}")))?;
        match self.query(&query) {
            Ok(plan) => Ok((plan, table)),
            // PostgreSQL's functions in FROM may read the FROM items before them (LATERAL).
            Err(e) if matches!(e.state, SqlState::UndefinedTable | SqlState::UndefinedColumn) => err(
                SqlState::FeatureNotSupported,
                format!("{function} in FROM reading other FROM items (LATERAL) is not supported, or: {}", e.message),
            ),
            Err(e) => Err(e),
        }
    }
}
