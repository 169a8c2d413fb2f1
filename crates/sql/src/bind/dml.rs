//! Binding of INSERT, UPDATE and DELETE.

use super::*;
use crate::catalog::{Generated, Identity};

impl Binder<'_> {
    /// RETURNING over the row `scope` describes (the written or deleted row, followed by the
    /// joined columns of an `UPDATE ... FROM` / `DELETE ... USING`).
    pub(super) fn returning(
        &mut self,
        items: &Option<Vec<sql::SelectItem>>,
        scope: &Scope,
    ) -> Result<Option<Returning>> {
        let Some(items) = items else { return Ok(None) };
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut limits = Vec::new();
        for item in items {
            match item {
                sql::SelectItem::UnnamedExpr(e) => {
                    exprs.push(self.expr(e, scope, &mut Mode::Plain("RETURNING"))?);
                    names.push(output_name(e));
                }
                sql::SelectItem::ExprWithAlias { expr, alias } => {
                    exprs.push(self.expr(expr, scope, &mut Mode::Plain("RETURNING"))?);
                    names.push(ident(alias));
                }
                sql::SelectItem::Wildcard(_) => {
                    for i in scope.star_columns() {
                        exprs.push(Expr::Column(i));
                        names.push(scope.cols.get(i).map(|c| c.name.clone()).unwrap_or_default());
                    }
                }
                other => return unsupported(format!("RETURNING item {other}")),
            }
            for e in exprs.iter().skip(types.len()) {
                types.push(self.type_of(e, scope, &Mode::Plain("")));
                limits.push(self.char_limits(e, scope));
            }
        }
        Ok(Some(Returning { exprs, names, types, limits }))
    }

    pub(super) fn insert(&mut self, i: &sql::Insert) -> Result<InsertPlan> {
        if i.or.is_some()
            || i.ignore
            || i.overwrite
            || i.partitioned.is_some()
            || !i.after_columns.is_empty()
            || i.replace_into
            || i.priority.is_some()
            || i.insert_alias.is_some()
            || i.settings.is_some()
            || i.format_clause.is_some()
            || i.table_alias.is_some()
            || !i.assignments.is_empty()
            || i.output.is_some()
        {
            return unsupported("this INSERT form");
        }
        let sql::TableObject::TableName(name) = &i.table else { return unsupported("INSERT into a table function") };
        let table = self.table(name)?;
        let values_rows = match i.source.as_deref().map(|q| &*q.body) {
            Some(sql::SetExpr::Values(values)) => Some(&values.rows),
            _ => None,
        };
        if let Some(rows) = values_rows {
            if rows.iter().any(|r| Some(r.content.len()) != rows.first().map(|f| f.content.len())) {
                return err(SqlState::SyntaxError, "VALUES lists must all be the same length");
            }
        }
        let implicit_targets = i.columns.is_empty();
        let mut targets: Vec<usize> = if implicit_targets {
            // Without a column list the values go to the first columns, as many as they are
            // (the others take their defaults), as in PostgreSQL.
            let width = values_rows.and_then(|rows| rows.first()).map_or(usize::MAX, |r| r.content.len());
            table.visible_columns().map(|(i, _)| i).take(width).collect()
        } else {
            let mut t = Vec::new();
            for c in &i.columns {
                let name = object_name(c)?;
                let pos = table.column_index(&name).ok_or_else(|| {
                    SqlError::new(
                        SqlState::UndefinedColumn,
                        format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
                    )
                })?;
                if t.contains(&pos) {
                    return err(SqlState::DuplicateColumn, format!("column \"{name}\" specified more than once"));
                }
                t.push(pos);
            }
            t
        };
        // Omitted SERIAL / IDENTITY columns draw from their sequences (`Exec::insert`).
        for (pos, c) in table.columns.iter().enumerate() {
            if let (Some(g), false) = (&c.generated, targets.contains(&pos)) {
                self.sequence_call(Func::NextVal, g.sequence.clone(), Vec::new())?;
            }
        }
        let Some(source) = &i.source else { return unsupported("INSERT without VALUES or SELECT") };
        let source = match &*source.body {
            sql::SetExpr::Values(values)
                if source.order_by.is_none() && source.limit_clause.is_none() && source.with.is_none() =>
            {
                let mut rows = Vec::with_capacity(values.rows.len());
                for r in &values.rows {
                    let mut row = Vec::with_capacity(r.content.len());
                    for (i, x) in r.content.iter().enumerate() {
                        let default_keyword = matches!(x, sql::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"));
                        let column = targets.get(i).and_then(|t| table.columns.get(*t));
                        let generated = column.and_then(|c| c.generated.as_ref());
                        row.push(match (default_keyword, generated) {
                            (true, Some(g)) => self.sequence_call(Func::NextVal, g.sequence.clone(), Vec::new())?,
                            (true, None) => match column.and_then(|c| c.volatile_default) {
                                Some(func) => Expr::Call { func, args: Vec::new() },
                                None => Expr::Const(column.and_then(|c| c.default.clone()).unwrap_or(Value::Null)),
                            },
                            (false, _) => {
                                if let (Some(c), Some(Generated { identity: Some(Identity::Always), .. })) =
                                    (column, generated)
                                {
                                    return generated_always(&c.name);
                                }
                                let bound = assigned(x, self.constant_expr(x, "VALUES")?, column)?;
                                if !is_untyped_literal(x) {
                                    check_jsonb_assignment(column, expr_type_in(&bound, &[], &|_| None))?;
                                }
                                bound
                            }
                        });
                    }
                    rows.push(row);
                }
                if let Some(bad) = rows.iter().find(|r| r.len() != targets.len()) {
                    let more = if bad.len() > targets.len() {
                        "expressions than target columns"
                    } else {
                        "target columns than expressions"
                    };
                    return err(SqlState::SyntaxError, format!("INSERT has more {more}"));
                }
                for row in &rows {
                    for (target, e) in targets.iter().zip(row) {
                        if let Some(col) = table.columns.get(*target) {
                            hint_param_type(e, col.ty, &mut self.param_types);
                        }
                    }
                }
                InsertSource::Values(rows)
            }
            _ => {
                let always = targets
                    .iter()
                    .filter_map(|t| table.columns.get(*t))
                    .find(|c| matches!(c.generated, Some(Generated { identity: Some(Identity::Always), .. })));
                if let Some(c) = always {
                    return generated_always(&c.name);
                }
                let mut q = self.query(source)?;
                if implicit_targets && q.names.len() < targets.len() {
                    // The query's columns go to the first columns; omitted SERIAL / IDENTITY
                    // columns among the others draw from their sequences.
                    for &pos in &targets[q.names.len()..] {
                        if let Some(g) = table.columns.get(pos).and_then(|c| c.generated.as_ref()) {
                            self.sequence_call(Func::NextVal, g.sequence.clone(), Vec::new())?;
                        }
                    }
                    targets.truncate(q.names.len());
                }
                if q.names.len() != targets.len() {
                    return err(
                        SqlState::SyntaxError,
                        "INSERT source has a different number of columns than the target list",
                    );
                }
                for ((untyped, target), ty) in q.untyped.iter().zip(&targets).zip(&q.types) {
                    if !untyped {
                        check_jsonb_assignment(table.columns.get(*target), *ty)?;
                    }
                }
                // A SELECT's bare literals are read as the target columns' types, as in PostgreSQL.
                if let QueryBody::Select(core) = &mut q.body {
                    for ((untyped, target), e) in q.untyped.iter().zip(&targets).zip(core.output.iter_mut()) {
                        if let (true, Some(column)) = (*untyped, table.columns.get(*target)) {
                            coerce_in_place(e, InputType::Literal, column.ty)?;
                        }
                    }
                }
                InsertSource::Query(Box::new(q))
            }
        };
        let on_conflict = match &i.on {
            None => OnConflict::Error,
            Some(sql::OnInsert::OnConflict(sql::OnConflict { conflict_target, action })) => {
                let inference = self.conflict_inference.take();
                let arbiter = match (conflict_target, &inference) {
                    (Some(sql::ConflictTarget::OnConstraint(name)), _) => Some(constraint_arbiter(&table, name)?),
                    (Some(sql::ConflictTarget::Columns(cols)), _) => {
                        let elements: Vec<sql::Expr> = cols.iter().cloned().map(sql::Expr::Identifier).collect();
                        Some(self.inferred_arbiter(&table, &elements, None)?)
                    }
                    (None, Some(ConflictInference { elements, predicate })) => {
                        Some(self.inferred_arbiter(&table, elements, predicate.as_ref())?)
                    }
                    (None, None) => None,
                };
                match (action, arbiter) {
                    (sql::OnConflictAction::DoNothing, arbiter) => OnConflict::DoNothing { arbiter },
                    (sql::OnConflictAction::DoUpdate(update), Some(arbiter)) => {
                        self.conflict_update(&table, update, arbiter)?
                    }
                    (sql::OnConflictAction::DoUpdate(_), None) => {
                        return err(
                            SqlState::SyntaxError,
                            "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                        )
                    }
                }
            }
            Some(_) => return unsupported("ON DUPLICATE KEY UPDATE"),
        };
        let returning = self.returning(&i.returning, &Scope::of_table(&table, &table.name))?;
        let enforce = crate::constraints::enforcement(self.catalog, &table)?;
        Ok(InsertPlan { table, targets, source, on_conflict, returning, enforce })
    }

    fn conflict_update(&mut self, table: &TableSchema, update: &sql::DoUpdate, arbiter: Arbiter) -> Result<OnConflict> {
        let mut scope = Scope::of_table(table, &table.name);
        scope.add_table(table, "excluded");
        let mut assignments: Vec<(usize, Expr)> = Vec::new();
        for a in &update.assignments {
            let sql::AssignmentTarget::ColumnName(name) = &a.target else { return unsupported("tuple assignment") };
            let name = object_name(name)?;
            let col = table.column_index(&name).ok_or_else(|| {
                SqlError::new(
                    SqlState::UndefinedColumn,
                    format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
                )
            })?;
            if assignments.iter().any(|(c, _)| *c == col) {
                return err(SqlState::SyntaxError, format!("multiple assignments to same column \"{name}\""));
            }
            let value = self.expr(&a.value, &scope, &mut Mode::Plain("ON CONFLICT DO UPDATE"))?;
            let value = assigned(&a.value, value, table.columns.get(col))?;
            if !is_untyped_literal(&a.value) {
                check_jsonb_assignment(table.columns.get(col), self.type_of(&value, &scope, &Mode::Plain("")))?;
            }
            if let Some(column) = table.columns.get(col) {
                hint_param_type(&value, column.ty, &mut self.param_types);
            }
            assignments.push((col, value));
        }
        let filter = update.selection.as_ref().map(|w| self.expr(w, &scope, &mut Mode::Plain("WHERE"))).transpose()?;
        Ok(OnConflict::DoUpdate { arbiter, assignments, filter })
    }

    /// The table an UPDATE or DELETE changes, and the name its columns are qualified by.
    fn target_table(&mut self, twj: &sql::TableWithJoins) -> Result<(Arc<TableSchema>, String)> {
        if !twj.joins.is_empty() {
            return unsupported("joins in the target of UPDATE/DELETE (use FROM / USING)");
        }
        match &twj.relation {
            sql::TableFactor::Table { name, alias, args: None, with_hints, version: None, partitions, .. }
                if with_hints.is_empty() && partitions.is_empty() =>
            {
                let table = self.table(name)?;
                let qualifier = match alias {
                    None => table.name.clone(),
                    Some(a) if a.columns.is_empty() => ident(&a.name),
                    Some(_) => return unsupported("a column list in the alias of an UPDATE/DELETE target"),
                };
                Ok((table, qualifier))
            }
            other => unsupported(format!("target {other}")),
        }
    }

    /// The rows an UPDATE/DELETE changes and the scope of each (see `TargetRows`): without a
    /// FROM/USING list, a scan of the target with the WHERE conjuncts that run correlated
    /// subqueries checked per scanned row; with one, the target joined with its items.
    fn target_rows(
        &mut self,
        target: &sql::TableWithJoins,
        table: &Arc<TableSchema>,
        qualifier: &str,
        from: &[sql::TableWithJoins],
        selection: &Option<sql::Expr>,
    ) -> Result<(TargetRows, Scope)> {
        if !from.is_empty() {
            let list: Vec<sql::TableWithJoins> = std::iter::once(target).chain(from).cloned().collect();
            let (scope, items) = self.bind_from(&list)?;
            let mut parts = Vec::new();
            if let Some(w) = selection {
                conjuncts(self.expr(w, &scope, &mut Mode::Plain("WHERE"))?, &mut parts);
            }
            let (from, filter) = self.plan_from(items, parts)?;
            return Ok((TargetRows::Join { from, filter }, scope));
        }
        let scope = Scope::of_table(table, qualifier);
        let mut parts = Vec::new();
        if let Some(w) = selection {
            conjuncts(self.expr(w, &scope, &mut Mode::Plain("WHERE"))?, &mut parts);
        }
        let (late, scanned): (Vec<Expr>, Vec<Expr>) = parts.into_iter().partition(|c| {
            let mut ids = Vec::new();
            subquery_ids(c, &mut ids);
            ids.iter().any(|i| self.subqueries.get(*i).is_some_and(|s| s.correlated))
        });
        let residual = (!late.is_empty()).then(|| Expr::conjunction(late));
        Ok((TargetRows::Scan { scan: scan_plan(table.clone(), scanned), residual }, scope))
    }

    pub(super) fn update(&mut self, u: &sql::Update) -> Result<UpdatePlan> {
        if u.or.is_some() || !u.order_by.is_empty() || u.limit.is_some() || u.output.is_some() {
            return unsupported("this UPDATE form");
        }
        let from = match &u.from {
            None => &[][..],
            Some(sql::UpdateTableFromKind::AfterSet(from)) => from.as_slice(),
            Some(sql::UpdateTableFromKind::BeforeSet(_)) => return unsupported("UPDATE FROM before SET"),
        };
        let (table, qualifier) = self.target_table(&u.table)?;
        let (rows, scope) = self.target_rows(&u.table, &table, &qualifier, from, &u.selection)?;
        let mut assignments: Vec<(usize, Expr)> = Vec::new();
        for a in &u.assignments {
            let sql::AssignmentTarget::ColumnName(name) = &a.target else { return unsupported("tuple assignment") };
            let name = object_name(name)?;
            let col = table.column_index(&name).ok_or_else(|| {
                SqlError::new(
                    SqlState::UndefinedColumn,
                    format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
                )
            })?;
            if assignments.iter().any(|(c, _)| *c == col) {
                return err(SqlState::SyntaxError, format!("multiple assignments to same column \"{name}\""));
            }
            let value = self.expr(&a.value, &scope, &mut Mode::Plain("UPDATE"))?;
            let value = assigned(&a.value, value, table.columns.get(col))?;
            if !is_untyped_literal(&a.value) {
                check_jsonb_assignment(table.columns.get(col), self.type_of(&value, &scope, &Mode::Plain("")))?;
            }
            if let Some(column) = table.columns.get(col) {
                hint_param_type(&value, column.ty, &mut self.param_types);
            }
            assignments.push((col, value));
        }
        let returning = self.returning(&u.returning, &scope)?;
        let enforce = crate::constraints::enforcement(self.catalog, &table)?;
        Ok(UpdatePlan { table, rows, assignments, returning, enforce })
    }

    pub(super) fn delete(&mut self, d: &sql::Delete) -> Result<DeletePlan> {
        if !d.tables.is_empty() || !d.order_by.is_empty() || d.limit.is_some() || d.output.is_some() {
            return unsupported("this DELETE form");
        }
        let from = match &d.from {
            sql::FromTable::WithFromKeyword(v) | sql::FromTable::WithoutKeyword(v) => v,
        };
        let [target] = from.as_slice() else { return unsupported("DELETE from several tables (use USING)") };
        let using = d.using.as_deref().unwrap_or_default();
        let (table, qualifier) = self.target_table(target)?;
        let (rows, scope) = self.target_rows(target, &table, &qualifier, using, &d.selection)?;
        let returning = self.returning(&d.returning, &scope)?;
        let enforce = crate::constraints::enforcement(self.catalog, &table)?;
        Ok(DeletePlan { table, rows, returning, enforce })
    }
}

/// A value assigned to `column` (INSERT VALUES, UPDATE SET): a quoted literal is read as a
/// value of the column's type, as in PostgreSQL (`'3'` for an integer column is 3, `'abc'`
/// fails with 22P02); the column's limits are applied when the row is written.
pub(super) fn assigned(ast: &sql::Expr, bound: Expr, column: Option<&Column>) -> Result<Expr> {
    match (column, bound) {
        (Some(c), Expr::Const(v @ Value::Text(_))) if is_untyped_literal(ast) => {
            Ok(Expr::Const(crate::types::cast(&v, c.ty)?))
        }
        (_, bound) => Ok(bound),
    }
}

/// PostgreSQL has no assignment cast to jsonb from the other types (text included): 42804,
/// where Pistou's runtime values (a text is a document's text) would not tell.
fn check_jsonb_assignment(column: Option<&Column>, ty: Option<SqlType>) -> Result<()> {
    match (column, ty) {
        (Some(c), Some(t)) if c.ty == SqlType::Jsonb && !matches!(t, SqlType::Jsonb | SqlType::Json) => err(
            SqlState::DatatypeMismatch,
            format!("column \"{}\" is of type jsonb but expression is of type {}", c.name, t.pg_name()),
        ),
        _ => Ok(()),
    }
}

/// An explicit value for a GENERATED ALWAYS identity column (OVERRIDING SYSTEM VALUE is not
/// supported).
fn generated_always<T>(column: &str) -> Result<T> {
    err(SqlState::GeneratedAlways, format!("cannot insert a non-DEFAULT value into column \"{column}\""))
}

/// The constraint `ON CONFLICT ON CONSTRAINT name` names: the primary key or a UNIQUE
/// constraint (42704 for another name, a plain unique index's included, as in PostgreSQL).
fn constraint_arbiter(table: &TableSchema, name: &sql::ObjectName) -> Result<Arbiter> {
    let name = object_name(name)?;
    let table_name = crate::system::unqualified(&table.name);
    let pkey = format!("{table_name}_pkey");
    if table.row_id_column().is_none() && name == pkey {
        return Ok(Arbiter::PrimaryKey);
    }
    // A table created without a primary key has the unique index ADD PRIMARY KEY made.
    let backs_constraint = |ix: &IndexSchema| {
        ix.unique
            && (crate::system::is_constraint_index(table, ix) || (table.row_id_column().is_some() && ix.name == pkey))
    };
    if let Some(i) =
        table.indexes.iter().position(|ix| crate::system::unqualified(&ix.name) == name && backs_constraint(ix))
    {
        // An index awaiting the check of the older rows is no arbiter, as PostgreSQL's invalid
        // index is none.
        return match table.indexes.get(i).is_some_and(|ix| table.index_is_valid(&ix.name)) {
            true => Ok(Arbiter::Index(i)),
            false => no_matching_arbiter(),
        };
    }
    let c = &table.constraints;
    if c.checks.iter().any(|x| x.name == name) || c.foreign_keys.iter().any(|x| x.name == name) {
        return err(SqlState::WrongObjectType, "constraint in ON CONFLICT clause has no associated index");
    }
    err(SqlState::UndefinedObject, format!("constraint \"{name}\" for table \"{table_name}\" does not exist"))
}

/// One element of an ON CONFLICT target or one part of a unique index, compared as
/// PostgreSQL's arbiter inference does: a column, or an expression by its bound form.
#[derive(PartialEq)]
enum KeyPart {
    Column(usize),
    Expression(Vec<crate::predicate_wire::Node>),
}

impl Binder<'_> {
    /// The unique index `ON CONFLICT (element, …) [WHERE predicate]` infers: the primary
    /// key or a unique index whose parts are exactly the elements, in any order (42P10 if
    /// none, as in PostgreSQL). The predicate selects among partial indexes; Pistou has
    /// none, and a full index satisfies any predicate, so it is only checked as one.
    fn inferred_arbiter(
        &self,
        table: &TableSchema,
        elements: &[sql::Expr],
        predicate: Option<&sql::Expr>,
    ) -> Result<Arbiter> {
        let mut wanted: Vec<KeyPart> = Vec::new();
        // An expression no index can have (it does not encode), or more distinct elements
        // than an index has parts, match nothing (and keep `wanted` short).
        let mut unmatchable = false;
        for element in elements {
            let part = match super::ddl::strip_nested(element) {
                sql::Expr::Identifier(c) => match table.column_index(&ident(c)) {
                    Some(i) => KeyPart::Column(i),
                    None => return err(SqlState::UndefinedColumn, format!("column \"{}\" does not exist", ident(c))),
                },
                e => match self.bind_over_table(table, e, false)? {
                    Expr::Column(i) => KeyPart::Column(i),
                    bound => match crate::predicate_wire::expr_nodes(&bound) {
                        Ok(nodes) => KeyPart::Expression(nodes),
                        Err(_) => {
                            unmatchable = true;
                            continue;
                        }
                    },
                },
            };
            if !wanted.contains(&part) {
                if wanted.len() == crate::catalog::MAX_INDEX_COLUMNS {
                    unmatchable = true;
                    continue;
                }
                wanted.push(part);
            }
        }
        if let Some(p) = predicate {
            self.bind_over_table(table, p, true)?;
        }
        let same = |parts: Vec<KeyPart>| {
            !unmatchable && wanted.iter().all(|w| parts.contains(w)) && parts.iter().all(|p| wanted.contains(p))
        };
        if table.row_id_column().is_none() && same(table.primary_key.iter().map(|&c| KeyPart::Column(c)).collect()) {
            return Ok(Arbiter::PrimaryKey);
        }
        let index_parts = |ix: &IndexSchema| -> Option<Vec<KeyPart>> {
            ix.parts()
                .map(|part| match part {
                    crate::catalog::IndexPart::Column(c) => Some(KeyPart::Column(c)),
                    crate::catalog::IndexPart::Expression(e) => Some(KeyPart::Expression(e.nodes.clone())),
                    crate::catalog::IndexPart::Missing => None,
                })
                .collect()
        };
        let usable = |ix: &IndexSchema| ix.unique && table.index_is_valid(&ix.name);
        match table.indexes.iter().position(|ix| usable(ix) && index_parts(ix).is_some_and(same)) {
            Some(i) => Ok(Arbiter::Index(i)),
            None => no_matching_arbiter(),
        }
    }
}

fn no_matching_arbiter<T>() -> Result<T> {
    err(
        SqlState::InvalidColumnReference,
        "there is no unique or exclusion constraint matching the ON CONFLICT specification",
    )
}

#[cfg(test)]
mod tests {
    use crate::catalog::CatalogChange;
    use crate::constraints::Unvalidated;
    use crate::Database;

    /// A unique index awaiting the check of the table's older rows (the gateway's paged
    /// CREATE INDEX) is no arbiter until it is valid, as an invalid index in PostgreSQL.
    #[test]
    fn an_index_not_yet_valid_is_no_arbiter() {
        let mut db = Database::new();
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, code TEXT UNIQUE)").expect("create");
        db.execute("INSERT INTO t VALUES (1, 'a')").expect("insert");
        let rules = vec![Unvalidated::Index("t_code_key".into())];
        let mark = CatalogChange::MarkUnvalidated { table: "t".into(), rules: rules.clone() };
        db.apply_catalog_change(&mark).expect("mark");
        let upserts = [
            "INSERT INTO t VALUES (2, 'a') ON CONFLICT (code) DO UPDATE SET id = 3",
            "INSERT INTO t VALUES (2, 'a') ON CONFLICT ON CONSTRAINT t_code_key DO NOTHING",
        ];
        for sql in upserts {
            assert_eq!(db.execute(sql).map(|_| ()).map_err(|e| e.sqlstate()), Err("42P10"), "{sql}");
        }
        db.apply_catalog_change(&CatalogChange::Validated { table: "t".into(), rules }).expect("valid");
        for sql in upserts {
            db.execute(sql).expect(sql);
        }
        assert_eq!(db.execute("SELECT id FROM t").expect("select"), db.execute("SELECT 3 AS id").expect("3"));
    }
}
