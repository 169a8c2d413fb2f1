//! Binding views: their definition (`view_query`, for `crate::view`) and their expansion
//! where a statement's FROM names one (`Binder::expand_view`).

use super::*;
use crate::view::{ViewDefinition, ViewSchema};

/// How deeply views may read views (each level is one more expansion of the statement).
const MAX_VIEW_NESTING: usize = 32;

/// Parses a view's query text: exactly one query.
fn parse_query(text: &str, max_depth: usize) -> Result<sql::Query> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut statements = sqlparser::parser::Parser::new(&dialect)
        .with_recursion_limit(max_depth)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| SqlError::new(SqlState::SyntaxError, format!("view query: {e}")))?;
    match (statements.pop(), statements.is_empty()) {
        (Some(sql::Statement::Query(q)), true) => Ok(*q),
        _ => err(SqlState::SyntaxError, "a view's definition is one SELECT, VALUES or TABLE query"),
    }
}

/// A view's query text after a table or view it reads was renamed from `from` to `to`: every
/// reference to `from` names `to` instead, under the alias `from` where it had none, so that
/// columns qualified by the old name still resolve and the output is unchanged. A query
/// with a WITH item named `from` is not rewritten (0A000: which references meant the
/// relation would take the binder's scoping rules).
pub(crate) fn rename_relation(text: &str, from: &str, to: &str) -> Result<String> {
    use sqlparser::ast::{Ident, ObjectName, ObjectNamePart, SetExpr, TableAlias, TableFactor, VisitMut, VisitorMut};
    use std::ops::ControlFlow;

    /// The relation an unqualified or `public.` name gives, as the binder reads it.
    fn names(name: &ObjectName, relation: &str) -> bool {
        let parts: Vec<&Ident> = name.0.iter().filter_map(ObjectNamePart::as_ident).collect();
        let last = match parts.as_slice() {
            [only] => only,
            [schema, last] if ident(schema) == "public" => last,
            _ => return false,
        };
        ident(last) == relation
    }

    struct Rename<'a> {
        from: &'a str,
        to: &'a str,
        shadowed: bool,
    }

    impl Rename<'_> {
        fn set_expr(&mut self, body: &mut SetExpr) {
            match body {
                // `TABLE x` keeps its own text: the binder parses it again.
                SetExpr::Table(t)
                    if t.schema_name.as_deref().is_none_or(|s| s == "public")
                        && t.table_name.as_deref().is_some_and(|n| n == self.from) =>
                {
                    self.shadowed = true;
                }
                SetExpr::SetOperation { left, right, .. } => {
                    self.set_expr(left);
                    self.set_expr(right);
                }
                _ => {}
            }
        }
    }

    impl VisitorMut for Rename<'_> {
        type Break = ();

        fn pre_visit_query(&mut self, query: &mut sql::Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.shadowed |= with.cte_tables.iter().any(|cte| ident(&cte.alias.name) == self.from);
            }
            self.set_expr(&mut query.body);
            ControlFlow::Continue(())
        }

        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, alias, args: None, .. } = factor {
                if names(name, self.from) {
                    *name = ObjectName::from(vec![Ident::with_quote('"', self.to)]);
                    if alias.is_none() {
                        *alias = Some(TableAlias {
                            explicit: true,
                            name: Ident::with_quote('"', self.from),
                            columns: Vec::new(),
                            at: None,
                        });
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }

    let mut query = parse_query(text, crate::engine::Limits::default().max_depth)?;
    let mut rename = Rename { from, to, shadowed: false };
    let _ = query.visit(&mut rename);
    if rename.shadowed {
        return unsupported(format!(
            "renaming \"{from}\", which a view reads through TABLE or under a WITH item of the same name \
             (drop the view, rename, create it again)"
        ));
    }
    Ok(query.to_string())
}

/// A view's query text after column `from` of a table it reads was renamed `to`: every
/// column reference named `from` (bare or qualified) names `to`, and an output column that
/// was such a bare reference keeps its name through an alias. The caller makes sure no
/// other relation the view reads has a column of either name, so every such reference was
/// to the renamed column. A `*` would change the view's column names: refused (0A000).
pub(crate) fn rename_column(text: &str, from: &str, to: &str) -> Result<String> {
    use sqlparser::ast::{Expr as E, SelectItem, VisitMut, VisitorMut};
    use std::ops::ControlFlow;

    struct Rename<'a> {
        from: &'a str,
        to: &'a str,
        star: bool,
        /// An output column named `from` that is something else (ORDER BY may mean it).
        alias: bool,
    }

    impl Rename<'_> {
        /// Is `e` a reference to the renamed column?
        fn names(&self, e: &E) -> bool {
            match e {
                E::Identifier(i) => ident(i) == self.from,
                E::CompoundIdentifier(parts) => parts.last().is_some_and(|i| ident(i) == self.from),
                _ => false,
            }
        }
    }

    impl VisitorMut for Rename<'_> {
        type Break = ();

        fn pre_visit_select(&mut self, select: &mut sql::Select) -> ControlFlow<()> {
            for item in &mut select.projection {
                match item {
                    SelectItem::UnnamedExpr(e) if self.names(e) => {
                        *item = SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: sql::Ident::with_quote('"', self.from),
                        };
                    }
                    SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => self.star = true,
                    SelectItem::ExprWithAlias { expr, alias } if ident(alias) == self.from && !self.names(expr) => {
                        self.alias = true
                    }
                    _ => {}
                }
            }
            ControlFlow::Continue(())
        }

        fn pre_visit_expr(&mut self, e: &mut E) -> ControlFlow<()> {
            if self.names(e) {
                match e {
                    E::Identifier(i) => *i = sql::Ident::with_quote('"', self.to),
                    E::CompoundIdentifier(parts) => {
                        if let Some(last) = parts.last_mut() {
                            *last = sql::Ident::with_quote('"', self.to);
                        }
                    }
                    _ => {}
                }
            }
            ControlFlow::Continue(())
        }
    }

    let mut query = parse_query(text, crate::engine::Limits::default().max_depth)?;
    let mut rename = Rename { from, to, star: false, alias: false };
    let _ = query.visit(&mut rename);
    if rename.star || rename.alias {
        let how = if rename.star { "with *" } else { "beside an output column of that name" };
        return unsupported(format!(
            "renaming column \"{from}\" of a table that a view reads {how} (drop the view, rename, create it again)"
        ));
    }
    Ok(query.to_string())
}

/// Binds a view's query text against `catalog`: its output columns (nullable, typed, text
/// where the query leaves a type open) and what it reads directly (tables, views and
/// sequences, sorted).
pub(crate) fn view_query(catalog: &Catalog, text: &str) -> Result<(Vec<Column>, Vec<String>)> {
    let max_depth = crate::engine::Limits::default().max_depth;
    let query = parse_query(text, max_depth)?;
    let mut binder = Binder::new(catalog, max_depth * 4, text);
    let plan = binder.query(&query)?;
    if binder.param_count > 0 {
        return err(SqlState::UndefinedParameter, "there is no parameter $1 in a view's definition");
    }
    if binder.rebinds > MAX_REBINDS {
        return err(SqlState::StatementTooComplex, "statement nests too many subqueries with aggregates");
    }
    let columns = plan
        .names
        .iter()
        .zip(&plan.types)
        .zip(&plan.limits)
        .map(|((name, ty), limits)| Column {
            name: name.clone(),
            ty: ty.unwrap_or(SqlType::Text),
            limits: limits.clone(),
            nullable: true,
            default: None,
            generated: None,
            volatile_default: None,
        })
        .collect();
    let mut depends_on: Vec<String> = binder.relations_named.into_iter().collect();
    depends_on.extend(binder.sequences);
    depends_on.sort();
    depends_on.dedup();
    Ok((columns, depends_on))
}

impl Binder<'_> {
    /// The view a FROM name refers to, if any (views live in the public schema).
    pub(super) fn view_named(&self, name: &sql::ObjectName) -> Result<Option<Arc<ViewSchema>>> {
        let parts: Vec<&sql::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
        match parts.as_slice() {
            [name] | [_, name] if parts.len() == 1 || ident(parts[0]) == "public" => {
                Ok(self.catalog.view(&ident(name)).cloned())
            }
            _ => Ok(None),
        }
    }

    /// Records a relation named by the statement itself (not inside a view it expands): a
    /// view's definition depends on these.
    pub(super) fn named_relation(&mut self, name: &str) {
        if self.expanding_views.is_empty() {
            self.relations_named.insert(name.to_string());
        }
    }

    /// A view's query, bound where its name stands, with the view's column names. It sees
    /// none of the statement's WITH queries, and a view reading itself (which the catalog
    /// prevents) fails instead of recursing.
    pub(super) fn expand_view(&mut self, view: &ViewSchema) -> Result<QueryPlan> {
        if self.expanding_views.contains(&view.name) {
            return err(
                SqlState::InvalidObjectDefinition,
                format!("infinite recursion detected in rules for relation \"{}\"", view.name),
            );
        }
        if self.expanding_views.len() >= MAX_VIEW_NESTING {
            return err(SqlState::StatementTooComplex, format!("views nested more than {MAX_VIEW_NESTING} deep"));
        }
        self.named_relation(&view.name);
        if !self.views_read.contains(&view.name) {
            self.views_read.push(view.name.clone());
        }
        let query = parse_query(&view.query, self.max_depth)?;
        let ctes = std::mem::take(&mut self.ctes);
        self.expanding_views.push(view.name.clone());
        let plan = self.query(&query);
        self.expanding_views.pop();
        self.ctes = ctes;
        let mut plan = plan?;
        let k = view.columns.len();
        let matches = plan.names.get(..k) == Some(&view.query_names[..])
            && plan.types.iter().zip(&view.columns).all(|(t, c)| t.unwrap_or(SqlType::Text) == c.ty);
        if !matches {
            // The catalog refuses schema changes that would do this (`crate::view`).
            return err(
                SqlState::InternalError,
                format!("view \"{}\" no longer binds to the columns it was created with", view.name),
            );
        }
        // Columns a `*` in the view gained since it was created stay hidden, as if the view
        // had listed its columns (PostgreSQL expands `*` when it creates a view).
        for (i, name) in plan.names.iter_mut().enumerate() {
            *name = match view.columns.get(i) {
                Some(c) => c.name.clone(),
                None => format!("\0{name}"),
            };
        }
        plan.untyped = vec![false; plan.names.len()];
        Ok(plan)
    }

    /// CREATE [OR REPLACE] VIEW: checked here as the catalog will check it when applied.
    pub(super) fn create_view(&mut self, c: &sql::CreateView) -> Result<Option<CatalogChange>> {
        if c.materialized {
            return unsupported("CREATE MATERIALIZED VIEW");
        }
        if c.temporary {
            return unsupported("CREATE TEMPORARY VIEW");
        }
        if c.or_alter || c.secure || c.to.is_some() || c.params.is_some() || !c.cluster_by.is_empty() {
            return unsupported("this CREATE VIEW form");
        }
        if !matches!(c.options, sql::CreateTableOptions::None) {
            return unsupported("view options (WITH (...))");
        }
        if c.columns.iter().any(|col| col.data_type.is_some() || col.options.is_some()) {
            return unsupported("types or options in a view's column list");
        }
        let name = object_name(&c.name)?;
        if c.if_not_exists && self.catalog.view(&name).is_some() {
            return Ok(None);
        }
        let definition = ViewDefinition {
            name,
            query: c.query.to_string(),
            column_names: c.columns.iter().map(|col| ident(&col.name)).collect(),
            replace: c.or_replace,
        };
        crate::view::define(self.catalog, &definition)?;
        Ok(Some(CatalogChange::CreateView(definition)))
    }
}
