//! Binding of `WITH RECURSIVE` queries (executed by `Exec::recursive`).

use super::*;

fn recursion_error<T>(message: String) -> Result<T> {
    err(SqlState::InvalidRecursion, message)
}

impl Binder<'_> {
    /// A WITH RECURSIVE query of the form `base UNION [ALL] step` whose step reads the query
    /// itself; None if it does not (it is then an ordinary WITH query).
    pub(super) fn recursive_cte(
        &mut self,
        name: &str,
        q: &sql::Query,
        alias: &sql::TableAlias,
    ) -> Result<Option<QueryPlan>> {
        let sql::SetExpr::SetOperation { left, op: sql::SetOperator::Union, set_quantifier, right } = &*q.body else {
            return Ok(None);
        };
        let all = match set_quantifier {
            sql::SetQuantifier::All => true,
            sql::SetQuantifier::Distinct | sql::SetQuantifier::None => false,
            other => return unsupported(format!("set quantifier {other}")),
        };
        let (mut base, names, mut types, limits, untyped) = self.set_expr(left)?;
        // Quoted literals of the non-recursive term are text, as in PostgreSQL.
        for (i, (ty, literal)) in types.iter_mut().zip(&untyped).enumerate() {
            if *literal {
                coerce_column(&mut base, i, InputType::Literal, SqlType::Text)?;
                *ty = Some(SqlType::Text);
            }
        }
        let width = names.len();
        let id = self.next_working_id;
        self.next_working_id += 1;
        let mut working = QueryPlan {
            body: QueryBody::WorkingTable(id),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            names,
            types: types.clone(),
            limits: limits.clone(),
            untyped: vec![false; width],
            depth: self.outer_scopes.len(),
        };
        rename_columns(&mut working, alias)?;
        let names = working.names.clone();
        self.ctes.push((name.to_string(), working));
        self.working_refs.push((id, 0, self.outer_scopes.len()));
        let step = self.set_expr(right);
        self.ctes.pop();
        let references = self.working_refs.pop().map_or(0, |(_, n, _)| n);
        let (mut step, step_names, step_types, _, step_untyped) = step?;
        if references == 0 {
            return Ok(None);
        }
        if q.order_by.is_some() || q.limit_clause.is_some() {
            return unsupported("ORDER BY or LIMIT in a recursive query");
        }
        if step_names.len() != width {
            return err(SqlState::SyntaxError, "each UNION query must have the same number of columns");
        }
        for (i, ((ty, step_ty), literal)) in types.iter().zip(&step_types).zip(&step_untyped).enumerate() {
            let Some(ty) = *ty else { continue };
            match step_ty {
                _ if *literal => coerce_column(&mut step, i, InputType::Literal, ty)?,
                None => coerce_column(&mut step, i, InputType::Opaque, ty)?,
                Some(s) if *s != ty => {
                    return err(
                        SqlState::DatatypeMismatch,
                        format!(
                        "recursive query \"{name}\" column {} has type {ty} in non-recursive term but type {s} overall",
                        i + 1
                    ),
                    )
                }
                Some(_) => {}
            }
        }
        let body = QueryBody::Recursive { id, name: name.to_string(), all, base: Box::new(base), step: Box::new(step) };
        Ok(Some(QueryPlan {
            body,
            order_by: Vec::new(),
            limit: None,
            offset: None,
            names,
            types,
            limits,
            untyped: vec![false; width],
            depth: self.outer_scopes.len(),
        }))
    }

    /// A FROM reference to recursive query `id`'s working table: once, and not from a
    /// subquery (which runs before or apart from the recursion), as PostgreSQL requires.
    pub(super) fn working_reference(&mut self, id: usize, name: &sql::ObjectName) -> Result<()> {
        let depth = self.outer_scopes.len();
        let Some(entry) = self.working_refs.iter_mut().rev().find(|(w, _, _)| *w == id) else {
            return Ok(());
        };
        if entry.2 != depth {
            return recursion_error(format!(
                "recursive reference to query \"{name}\" must not appear within a subquery"
            ));
        }
        entry.1 += 1;
        if entry.1 > 1 {
            return recursion_error(format!("recursive reference to query \"{name}\" must not appear more than once"));
        }
        Ok(())
    }
}
