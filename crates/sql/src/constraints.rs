//! Table constraints beyond the primary key: FOREIGN KEY, CHECK and named UNIQUE
//! constraints, and the ALTER TABLE actions (`CatalogChange::AlterTable`). See docs/sql.md,
//! "Constraints".
//!
//! Constraints are part of a table's schema (`TableSchema::constraints`), so they travel
//! with the catalog every replica verifies: `Catalog::apply` re-validates (through [`EngineRules`]) each one against
//! the catalog it is applied to (columns exist, a foreign key references a primary key or
//! unique index of a table that exists, a CHECK expression binds over the table's columns as
//! a boolean using no subquery, parameter or clock), deterministically and with bounded
//! work (a CHECK is kept as SQL text of at most `MAX_CHECK_TEXT` bytes, parsed with the
//! parser's recursion limit), so a hostile catalog write is refused with a SQLSTATE, never
//! applied and never a panic.

use crate::catalog::{Catalog, IndexSchema, SchemaRules, TableSchema, ViewDefinition, ViewSchema, MAX_NAME};
use crate::error::{err, Result, SqlError, SqlState};
use crate::expr::{Expr, Func};
use crate::plan::Path;
use crate::types::{SqlType, TypeCategory};
pub use pistou_types::constraints::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The SQL engine's checks of schema changes ([`SchemaRules`]): what [`Catalog::apply`]
/// needs the engine for, since CHECK constraints and views are SQL text.
pub struct EngineRules;

impl SchemaRules for EngineRules {
    fn check_new_table(&self, catalog: &Catalog, table: &TableSchema) -> Result<()> {
        check_new_table(catalog, table)
    }

    fn apply_alter(&self, catalog: &mut Catalog, table: &str, actions: &[AlterAction]) -> Result<()> {
        apply_alter(catalog, table, actions)
    }

    fn define_view(&self, catalog: &Catalog, definition: &ViewDefinition) -> Result<ViewSchema> {
        crate::view::define(catalog, definition)
    }

    fn check_views_unchanged(&self, before: &Catalog, after: &Catalog, relation: &str) -> Result<()> {
        crate::view::check_views_unchanged(before, after, relation)
    }

    fn rename_in_view(&self, catalog: &Catalog, view: &ViewSchema, from: &str, to: &str) -> Result<ViewSchema> {
        crate::view::rename_relation(catalog, view, from, to)
    }

    fn rename_column_in_view(
        &self,
        catalog: &Catalog,
        view: &ViewSchema,
        table: &str,
        from: &str,
        to: &str,
    ) -> Result<ViewSchema> {
        crate::view::rename_column(catalog, view, table, from, to)
    }
}

/// A constraint name as SQL may give it (a temporary table's carries its namespace besides).
fn name_ok(name: &str) -> Result<()> {
    if name.is_empty() || crate::system::unqualified(name).len() > MAX_NAME || name.contains('\0') {
        return err(SqlState::InvalidName, "invalid constraint name");
    }
    Ok(())
}

fn undefined_column(table: &str, column: &str) -> SqlError {
    SqlError::new(SqlState::UndefinedColumn, format!("column \"{column}\" of relation \"{table}\" does not exist"))
}

fn visible(table: &TableSchema, pos: usize) -> bool {
    table.columns.get(pos).is_some_and(|c| !c.is_hidden())
}

/// Whether `name` is taken by a constraint of `table` (indexes are relations: checked by the
/// catalog against every relation name).
pub fn constraint_exists(table: &TableSchema, name: &str) -> bool {
    table.constraints.checks.iter().any(|c| c.name == name)
        || table.constraints.foreign_keys.iter().any(|f| f.name == name)
        || table.index(name).is_some()
        || (table.declared_primary_key().is_some() && name == format!("{}_pkey", table.name))
}

/// PostgreSQL's choice of a constraint name: `table_cols_suffix`, then with 1, 2, … appended
/// until it is free.
pub fn choose_name(table: &TableSchema, catalog: &Catalog, cols: &[&str], suffix: &str) -> String {
    let mut base = table.name.clone();
    for c in cols {
        base.push('_');
        base.push_str(c);
    }
    base.push('_');
    base.push_str(suffix);
    let taken =
        |n: &str| constraint_exists(table, n) || catalog.table(n).is_some() || catalog.table_of_index(n).is_some();
    if !taken(&base) {
        return base;
    }
    (1..).map(|i| format!("{base}{i}")).find(|n| !taken(n)).unwrap_or(base)
}

/// The access path of `parent` whose key columns are exactly the set `columns`: its primary
/// key or a unique index, with the key columns in path order.
pub(crate) fn parent_key(parent: &TableSchema, columns: &[usize]) -> Option<(Path, Vec<usize>)> {
    let same_set = |key: &[usize]| key.len() == columns.len() && key.iter().all(|k| columns.contains(k));
    if parent.row_id_column().is_none() && same_set(&parent.primary_key) {
        return Some((Path::PrimaryKey, parent.primary_key.clone()));
    }
    parent
        .indexes
        .iter()
        .position(|ix| ix.unique && same_set(&ix.columns))
        .and_then(|i| parent.indexes.get(i).map(|ix| (Path::Index(i), ix.columns.clone())))
}

/// Validates a foreign key of `child` (whose schema may be the one being created) against
/// `parent` (`None`: the child itself).
pub fn check_foreign_key(catalog: &Catalog, child: &TableSchema, fk: &ForeignKey) -> Result<()> {
    name_ok(&fk.name)?;
    let parent = if fk.parent == child.name { Some(child) } else { catalog.table(&fk.parent).map(|t| &**t) };
    let Some(parent) = parent else {
        return err(SqlState::UndefinedTable, format!("relation \"{}\" does not exist", fk.parent));
    };
    if fk.columns.is_empty() || fk.columns.len() > MAX_KEY_COLUMNS || fk.columns.len() != fk.parent_columns.len() {
        return err(
            SqlState::InvalidForeignKey,
            "number of referencing and referenced columns for foreign key disagree",
        );
    }
    for (i, c) in fk.columns.iter().enumerate() {
        if !visible(child, *c) || fk.columns[..i].contains(c) {
            return err(SqlState::InvalidForeignKey, "foreign key columns must be distinct columns of the table");
        }
    }
    if fk.parent_columns.iter().any(|c| !visible(parent, *c)) {
        return err(SqlState::UndefinedColumn, "referenced column of foreign key does not exist");
    }
    if parent_key(parent, &fk.parent_columns).is_none() {
        return err(
            SqlState::InvalidForeignKey,
            format!("there is no unique constraint matching given keys for referenced table \"{}\"", parent.name),
        );
    }
    for (c, p) in fk.columns.iter().zip(&fk.parent_columns) {
        let (Some(cc), Some(pc)) = (child.columns.get(*c), parent.columns.get(*p)) else {
            return err(SqlState::UndefinedColumn, "foreign key column does not exist");
        };
        if !comparable(cc.ty, pc.ty) {
            return err(
                SqlState::DatatypeMismatch,
                format!(
                    "foreign key constraint \"{}\" cannot be implemented: key columns \"{}\" and \"{}\" are of incompatible types: {} and {}",
                    fk.name, cc.name, pc.name, cc.ty, pc.ty
                ),
            );
        }
    }
    Ok(())
}

/// Whether a key column of type `a` can reference one of type `b` (the lookup converts the
/// value exactly, `keycode`): same category, and dates only with dates.
fn comparable(a: SqlType, b: SqlType) -> bool {
    a.category() == b.category()
        && (a.category() != TypeCategory::Numeric || (a.is_integer() == b.is_integer()) || b == SqlType::Numeric)
}

/// Binds a CHECK expression over `table`'s row: a boolean over its columns and constants.
pub(crate) fn bind_check(catalog: &Catalog, table: &TableSchema, text: &str) -> Result<Expr> {
    if text.len() > MAX_CHECK_TEXT {
        return err(SqlState::ProgramLimitExceeded, format!("CHECK expression longer than {MAX_CHECK_TEXT} bytes"));
    }
    let e = crate::bind::bind_table_expr(catalog, table, text, "CHECK")?;
    let volatile = e.any(&|n| {
        matches!(
            n,
            Expr::Param(_)
                | Expr::Subquery(_)
                | Expr::InSubquery { .. }
                | Expr::Exists { .. }
                | Expr::Outer(_)
                | Expr::Enclosing { .. }
                | Expr::Call { func: Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::GenRandomUuid, .. }
        ) || matches!(n, Expr::Call { func: Func::Age, args } if args.len() == 1
        )
    });
    if volatile {
        return err(SqlState::FeatureNotSupported, "a CHECK constraint may use only the row's columns and constants");
    }
    let mut types = Vec::new();
    types.extend(table.columns.iter().map(|c| Some(c.ty)));
    match crate::plan::expr_type(&e, &types) {
        Some(SqlType::Bool) | None => Ok(e),
        Some(other) => {
            err(SqlState::DatatypeMismatch, format!("argument of CHECK must be type boolean, not type {other}"))
        }
    }
}

/// Validates a CHECK constraint of `table`.
pub fn check_check(catalog: &Catalog, table: &TableSchema, check: &CheckConstraint) -> Result<()> {
    name_ok(&check.name)?;
    bind_check(catalog, table, &check.expr).map(|_| ())
}

/// Positions of the columns a CHECK expression uses.
fn check_columns(catalog: &Catalog, table: &TableSchema, check: &CheckConstraint) -> Vec<usize> {
    let mut out = Vec::new();
    if let Ok(e) = bind_check(catalog, table, &check.expr) {
        crate::bind::collect_all_columns(&e, &mut out);
    }
    out
}

/// Validates every constraint of a table being created (its foreign keys may reference it).
pub fn check_new_table(catalog: &Catalog, table: &TableSchema) -> Result<()> {
    let c = &table.constraints;
    if c.checks.len() + c.foreign_keys.len() + c.unique.len() > MAX_CONSTRAINTS {
        return err(SqlState::ProgramLimitExceeded, format!("more than {MAX_CONSTRAINTS} constraints on a table"));
    }
    let mut names: Vec<&str> = Vec::new();
    for n in c.checks.iter().map(|x| x.name.as_str()).chain(c.foreign_keys.iter().map(|x| x.name.as_str())) {
        if names.contains(&n) || table.index(n).is_some() {
            return err(
                SqlState::DuplicateObject,
                format!("constraint \"{n}\" for relation \"{}\" already exists", table.name),
            );
        }
        names.push(n);
    }
    for check in &c.checks {
        check_check(catalog, table, check)?;
    }
    for fk in &c.foreign_keys {
        check_foreign_key(catalog, table, fk)?;
    }
    for u in &c.unique {
        if !table.index(u).is_some_and(|i| i.unique) {
            return err(SqlState::InvalidTableDefinition, format!("UNIQUE constraint \"{u}\" has no unique index"));
        }
    }
    Ok(())
}

/// Applies ALTER TABLE actions to `table` in `catalog` (the caller bumps the version).
pub(crate) fn apply_alter(catalog: &mut Catalog, table: &str, actions: &[AlterAction]) -> Result<()> {
    if actions.is_empty() || actions.len() > MAX_ALTER_ACTIONS {
        return err(SqlState::ProgramLimitExceeded, format!("ALTER TABLE takes 1 to {MAX_ALTER_ACTIONS} actions"));
    }
    for action in actions {
        apply_action(catalog, table, action)?;
    }
    Ok(())
}

fn column_pos(t: &TableSchema, name: &str) -> Result<usize> {
    t.column_index(name).ok_or_else(|| undefined_column(&t.name, name))
}

fn apply_action(catalog: &mut Catalog, table: &str, action: &AlterAction) -> Result<()> {
    let Some(current) = catalog.table(table).cloned() else {
        return err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist"));
    };
    let mut t = (*current).clone();
    match action {
        AlterAction::DropColumn { column } => {
            let pos = column_pos(&t, column)?;
            if t.row_id_column().is_none() && t.primary_key.contains(&pos) || declared_pk_has(&t, pos) {
                return err(
                    SqlState::FeatureNotSupported,
                    format!("dropping primary-key column \"{column}\" (rows are keyed by it)"),
                );
            }
            if let Some((child, fk)) =
                referencing(catalog, table).into_iter().find(|(_, f)| f.parent_columns.contains(&pos))
            {
                return err(
                    SqlState::DependentObjectsStillExist,
                    format!(
                        "cannot drop column {column} of table {table} because other objects depend on it (constraint {} on table {})",
                        fk.name, child.name
                    ),
                );
            }
            let uses: Vec<String> = t
                .constraints
                .checks
                .iter()
                .filter(|c| check_columns(catalog, &t, c).contains(&pos))
                .map(|c| c.name.clone())
                .collect();
            t.constraints.checks.retain(|c| !uses.contains(&c.name));
            t.constraints.foreign_keys.retain(|f| !f.columns.contains(&pos));
            let dropped: Vec<String> =
                t.indexes.iter().filter(|i| i.uses_column(pos)).map(|i| i.name.clone()).collect();
            t.indexes.retain(|i| !i.uses_column(pos));
            t.constraints.unique.retain(|u| !dropped.contains(u));
            if let Some(c) = t.columns.get_mut(pos) {
                c.name = format!("{DROPPED_PREFIX}{pos}");
                c.nullable = true;
                c.default = None;
                // Its sequence goes with it (`Catalog::follow_owned_sequences`).
                c.generated = None;
            }
        }
        AlterAction::RenameColumn { from, to } => {
            let pos = column_pos(&t, from)?;
            if to.is_empty() || to.contains('\0') || to.len() > MAX_NAME {
                return err(SqlState::InvalidName, "invalid column name");
            }
            if t.column_index(to).is_some() {
                return err(
                    SqlState::DuplicateColumn,
                    format!("column \"{to}\" of relation \"{table}\" already exists"),
                );
            }
            if t.constraints.checks.iter().any(|c| check_columns(catalog, &t, c).contains(&pos)) {
                return err(
                    SqlState::FeatureNotSupported,
                    format!(
                        "renaming column \"{from}\", which a CHECK constraint uses (drop and re-add the constraint)"
                    ),
                );
            }
            if let Some(c) = t.columns.get_mut(pos) {
                c.name = to.clone();
            }
        }
        AlterAction::SetDefault { column, default } => {
            let pos = column_pos(&t, column)?;
            let Some(c) = t.columns.get_mut(pos) else { return Err(undefined_column(table, column)) };
            if let Some(v) = default {
                if crate::types::to_column(v, c)? != *v {
                    return err(SqlState::DatatypeMismatch, "a default must be a value of the column's type");
                }
            }
            c.default = default.clone();
        }
        AlterAction::DropNotNull { column } => {
            let pos = column_pos(&t, column)?;
            if t.primary_key.contains(&pos) && t.row_id_column().is_none() || declared_pk_has(&t, pos) {
                return err(SqlState::InvalidTableDefinition, format!("column \"{column}\" is in a primary key"));
            }
            let Some(c) = t.columns.get_mut(pos) else { return Err(undefined_column(table, column)) };
            // 42601: PostgreSQL's code for this refusal.
            if c.generated.as_ref().is_some_and(|g| g.identity.is_some()) {
                return err(
                    SqlState::SyntaxError,
                    format!("column \"{column}\" of relation \"{table}\" is an identity column"),
                );
            }
            c.nullable = true;
        }
        // The rows already stored were checked before the change (`validation_queries`).
        AlterAction::SetNotNull { column } => {
            let pos = column_pos(&t, column)?;
            if let Some(c) = t.columns.get_mut(pos) {
                c.nullable = false;
            }
        }
        AlterAction::SetType { column, ty, limits } => {
            let pos = column_pos(&t, column)?;
            let Some(c) = t.columns.get_mut(pos) else { return Err(undefined_column(table, column)) };
            let widens = match (c.ty, *ty) {
                (SqlType::Varchar | SqlType::Text, SqlType::Text) => limits.max_len.is_none(),
                (SqlType::Varchar, SqlType::Varchar) | (SqlType::Text, SqlType::Varchar) => {
                    match (c.limits.max_len, limits.max_len) {
                        (_, None) => true,
                        (Some(old), Some(new)) => new >= old,
                        (None, Some(_)) => false,
                    }
                }
                (a, b) => a == b && *limits == c.limits,
            };
            if !widens || limits.numeric.is_some() {
                return err(
                    SqlState::FeatureNotSupported,
                    format!(
                        "ALTER COLUMN TYPE from {} to {ty} (only changes that rewrite no row: varchar(n) to varchar(m >= n), varchar or text)",
                        c.ty
                    ),
                );
            }
            c.ty = *ty;
            c.limits = limits.clone();
        }
        AlterAction::AddCheck(check) => {
            if constraint_exists(&t, &check.name) {
                return err(
                    SqlState::DuplicateObject,
                    format!("constraint \"{}\" for relation \"{table}\" already exists", check.name),
                );
            }
            check_check(catalog, &t, check)?;
            t.constraints.checks.push(check.clone());
        }
        AlterAction::AddForeignKey(fk) => {
            if constraint_exists(&t, &fk.name) {
                return err(
                    SqlState::DuplicateObject,
                    format!("constraint \"{}\" for relation \"{table}\" already exists", fk.name),
                );
            }
            check_foreign_key(catalog, &t, fk)?;
            t.constraints.foreign_keys.push(fk.clone());
        }
        AlterAction::AddUnique { name, columns } => {
            name_ok(name)?;
            if catalog.table(name).is_some() || catalog.table_of_index(name).is_some() || constraint_exists(&t, name) {
                return err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"));
            }
            if columns.is_empty()
                || columns.len() > MAX_KEY_COLUMNS
                || columns.iter().enumerate().any(|(i, c)| !visible(&t, *c) || columns[..i].contains(c))
            {
                return err(
                    SqlState::InvalidTableDefinition,
                    "a UNIQUE constraint is over distinct columns of the table",
                );
            }
            t.indexes.push(IndexSchema {
                name: name.clone(),
                columns: columns.clone(),
                unique: true,
                orders: Vec::new(),
                expressions: Vec::new(),
            });
            t.constraints.unique.push(name.clone());
        }
        AlterAction::DropConstraint { name } => {
            let c = &mut t.constraints;
            let before = c.checks.len() + c.foreign_keys.len() + c.unique.len();
            c.checks.retain(|x| &x.name != name);
            c.foreign_keys.retain(|x| &x.name != name);
            let was_unique = c.unique.contains(name);
            c.unique.retain(|x| x != name);
            if was_unique {
                if let Some((child, fk)) = referencing(catalog, table).into_iter().find(|(_, f)| {
                    current.index(name).is_some_and(|ix| {
                        parent_key(&current, &f.parent_columns).map(|k| k.1) == Some(ix.columns.clone())
                    })
                }) {
                    return err(
                        SqlState::DependentObjectsStillExist,
                        format!(
                            "cannot drop constraint {name} on table {table} because other objects depend on it (constraint {} on table {})",
                            fk.name, child.name
                        ),
                    );
                }
                t.indexes.retain(|i| &i.name != name);
            }
            let after = c_len(&t.constraints);
            if after == before {
                if name == &format!("{table}_pkey") && t.declared_primary_key().is_some() {
                    return err(SqlState::FeatureNotSupported, "dropping a primary key (rows are keyed by it)");
                }
                return err(
                    SqlState::UndefinedObject,
                    format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
                );
            }
        }
    }
    catalog.replace_table(Arc::new(t));
    Ok(())
}

fn c_len(c: &Constraints) -> usize {
    c.checks.len() + c.foreign_keys.len() + c.unique.len()
}

fn declared_pk_has(t: &TableSchema, pos: usize) -> bool {
    t.row_id_column().is_some() && t.declared_primary_key().is_some_and(|k| k.contains(&pos))
}

/// A foreign key of the statement's table, resolved for checking rows it writes.
#[derive(Clone, Debug)]
pub(crate) struct ParentRef {
    pub name: String,
    pub parent: Arc<TableSchema>,
    /// Path on the parent, and for each of its key columns the child column giving its value.
    pub path: Path,
    pub value_columns: Vec<usize>,
}

/// A foreign key of another table (or this one) referencing the statement's table.
#[derive(Clone, Debug)]
pub(crate) struct ChildRef {
    pub name: String,
    pub child: Arc<TableSchema>,
    pub columns: Vec<usize>,
    pub parent_columns: Vec<usize>,
    pub on_delete: FkAction,
}

/// The constraint checks a write to one table runs, bound against the catalog the statement
/// is planned with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Enforcement {
    pub checks: Vec<(String, Expr)>,
    pub parents: Vec<ParentRef>,
    pub children: Vec<ChildRef>,
    /// Enforcement of the tables ON DELETE CASCADE / SET NULL writes to (bound once per
    /// table, so a self-referencing or cyclic cascade terminates).
    pub cascades: BTreeMap<String, Arc<Enforcement>>,
}

impl Enforcement {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.parents.is_empty() && self.children.is_empty()
    }

    /// Names of the tables the checks read.
    pub fn tables(&self, out: &mut std::collections::BTreeSet<String>) {
        for p in &self.parents {
            out.insert(p.parent.storage_name().to_string());
        }
        for c in &self.children {
            out.insert(c.child.storage_name().to_string());
        }
        for e in self.cascades.values() {
            for p in &e.parents {
                out.insert(p.parent.storage_name().to_string());
            }
            for c in &e.children {
                out.insert(c.child.storage_name().to_string());
            }
        }
    }
}

fn enforcement_of(catalog: &Catalog, table: &TableSchema) -> Result<Enforcement> {
    let mut e = Enforcement::default();
    for c in &table.constraints.checks {
        e.checks.push((c.name.clone(), bind_check(catalog, table, &c.expr)?));
    }
    for fk in &table.constraints.foreign_keys {
        let parent = catalog.table(&fk.parent).cloned().ok_or_else(|| {
            SqlError::new(SqlState::UndefinedTable, format!("relation \"{}\" does not exist", fk.parent))
        })?;
        let (path, key) = parent_key(&parent, &fk.parent_columns)
            .ok_or_else(|| SqlError::new(SqlState::InvalidForeignKey, "foreign key without a referenced key"))?;
        let value_columns = key
            .iter()
            .filter_map(|k| fk.parent_columns.iter().position(|p| p == k).and_then(|i| fk.columns.get(i).copied()))
            .collect();
        e.parents.push(ParentRef { name: fk.name.clone(), parent, path, value_columns });
    }
    for (child, fk) in referencing(catalog, &table.name) {
        e.children.push(ChildRef {
            name: fk.name.clone(),
            child: child.clone(),
            columns: fk.columns.clone(),
            parent_columns: fk.parent_columns.clone(),
            on_delete: fk.on_delete,
        });
    }
    Ok(e)
}

/// The checks of writes to `table`, with those of the tables its cascades reach.
pub(crate) fn enforcement(catalog: &Catalog, table: &TableSchema) -> Result<Arc<Enforcement>> {
    let mut root = enforcement_of(catalog, table)?;
    let mut pending: Vec<String> = cascade_targets(&root);
    let mut cascades = BTreeMap::new();
    while let Some(name) = pending.pop() {
        if cascades.contains_key(&name) {
            continue;
        }
        let Some(t) = catalog.table(&name) else { continue };
        let e = enforcement_of(catalog, t)?;
        pending.extend(cascade_targets(&e));
        cascades.insert(name, Arc::new(e));
    }
    root.cascades = cascades;
    Ok(Arc::new(root))
}

fn cascade_targets(e: &Enforcement) -> Vec<String> {
    e.children
        .iter()
        .filter(|c| matches!(c.on_delete, FkAction::Cascade | FkAction::SetNull))
        .map(|c| c.child.name.clone())
        .collect()
}

/// Text of a column list for messages and definitions.
pub fn column_list(t: &TableSchema, cols: &[usize]) -> String {
    cols.iter()
        .filter_map(|c| t.columns.get(*c))
        .map(|c| crate::system::quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `pg_get_constraintdef` of a foreign key.
pub fn foreign_key_definition(child: &TableSchema, parent: Option<&TableSchema>, fk: &ForeignKey) -> String {
    let parent_cols = parent.map(|p| column_list(p, &fk.parent_columns)).unwrap_or_default();
    let mut s = format!(
        "FOREIGN KEY ({}) REFERENCES {}({parent_cols})",
        column_list(child, &fk.columns),
        crate::system::quote_ident(&fk.parent)
    );
    if fk.on_update != FkAction::NoAction {
        s.push_str(&format!(" ON UPDATE {}", fk.on_update.rule()));
    }
    if fk.on_delete != FkAction::NoAction {
        s.push_str(&format!(" ON DELETE {}", fk.on_delete.rule()));
    }
    if fk.deferrable {
        s.push_str(" DEFERRABLE");
        if fk.initially_deferred {
            s.push_str(" INITIALLY DEFERRED");
        }
    }
    s
}

/// The actions that would add the CHECK and FOREIGN KEY constraints among `rules` of `t`.
pub fn validated_as_added(t: &TableSchema, rules: &[Unvalidated]) -> Vec<AlterAction> {
    let c = &t.constraints;
    rules
        .iter()
        .filter_map(|rule| match rule {
            Unvalidated::Constraint(name) => {
                c.checks.iter().find(|x| x.name == *name).map(|x| AlterAction::AddCheck(x.clone())).or_else(|| {
                    c.foreign_keys.iter().find(|x| x.name == *name).map(|x| AlterAction::AddForeignKey(x.clone()))
                })
            }
            Unvalidated::Index(_) | Unvalidated::NotNull(_) => None,
        })
        .collect()
}

/// Queries that find an existing row violating a constraint an ALTER TABLE adds (none for
/// other changes), each with the error to report when it returns a row: a CHECK that is
/// FALSE (23514), a foreign key without its referenced row (23503), duplicate values of a
/// UNIQUE constraint (23505), a NULL in a column SET NOT NULL (23502); for VALIDATE
/// CONSTRAINT, those of the constraint as if added. Run against the catalog before the change.
pub fn validation_queries(catalog: &Catalog, change: &crate::catalog::CatalogChange) -> Vec<(String, SqlError)> {
    use crate::system::quote_ident as q;
    if let crate::catalog::CatalogChange::CreateIndex { table, index } = change {
        return catalog.table(table).map_or_else(Vec::new, |t| new_index_queries(t, index));
    }
    // VALIDATE CONSTRAINT: the queries of the constraint as if it were being added.
    if let crate::catalog::CatalogChange::Validated { table, rules } = change {
        let Some(t) = catalog.table(table) else { return Vec::new() };
        let actions = validated_as_added(t, rules);
        return validation_queries(
            catalog,
            &crate::catalog::CatalogChange::AlterTable { table: table.clone(), actions },
        );
    }
    let crate::catalog::CatalogChange::AlterTable { table, actions } = change else { return Vec::new() };
    let Some(t) = catalog.table(table) else { return Vec::new() };
    let mut out = Vec::new();
    for action in actions {
        match action {
            AlterAction::AddCheck(c) => out.push((
                format!("SELECT 1 FROM {} WHERE NOT ({}) LIMIT 1", q(table), c.expr),
                SqlError::new(
                    SqlState::CheckViolation,
                    format!("check constraint \"{}\" of relation \"{table}\" is violated by some row", c.name),
                ),
            )),
            AlterAction::AddForeignKey(fk) => {
                let parent = if fk.parent == *table { Some(&**t) } else { catalog.table(&fk.parent).map(|p| &**p) };
                let Some(parent) = parent else { continue };
                let col = |s: &TableSchema, c: &usize| s.columns.get(*c).map(|c| q(&c.name)).unwrap_or_default();
                let not_null: Vec<String> = fk.columns.iter().map(|c| format!("c.{} IS NOT NULL", col(t, c))).collect();
                let join: Vec<String> = fk
                    .columns
                    .iter()
                    .zip(&fk.parent_columns)
                    .map(|(c, p)| format!("p.{} = c.{}", col(parent, p), col(t, c)))
                    .collect();
                out.push((
                    format!(
                        "SELECT 1 FROM {} c WHERE {} AND NOT EXISTS (SELECT 1 FROM {} p WHERE {}) LIMIT 1",
                        q(table),
                        not_null.join(" AND "),
                        q(&fk.parent),
                        join.join(" AND ")
                    ),
                    SqlError::new(
                        SqlState::ForeignKeyViolation,
                        format!(
                            "insert or update on table \"{table}\" violates foreign key constraint \"{}\"",
                            fk.name
                        ),
                    ),
                ));
            }
            AlterAction::AddUnique { name, columns } => {
                let cols = column_list(t, columns);
                let not_null: Vec<String> = columns
                    .iter()
                    .filter_map(|c| t.columns.get(*c))
                    .map(|c| format!("{} IS NOT NULL", q(&c.name)))
                    .collect();
                out.push((
                    format!(
                        "SELECT 1 FROM {} WHERE {} GROUP BY {cols} HAVING count(*) > 1 LIMIT 1",
                        q(table),
                        not_null.join(" AND ")
                    ),
                    SqlError::new(SqlState::UniqueViolation, format!("could not create unique index \"{name}\"")),
                ));
            }
            // A column already NOT NULL holds no NULL (a primary key's neither).
            AlterAction::SetNotNull { column } => {
                let Some(pos) = t.column_index(column) else { continue };
                if t.columns.get(pos).is_none_or(|c| !c.nullable) || t.primary_key.contains(&pos) {
                    continue;
                }
                out.push((
                    format!("SELECT 1 FROM {} WHERE {} IS NULL LIMIT 1", q(table), q(column)),
                    SqlError::new(
                        SqlState::NotNullViolation,
                        format!("column \"{column}\" of relation \"{table}\" contains null values"),
                    ),
                ));
            }
            _ => {}
        }
    }
    out
}

/// The check of CREATE INDEX over existing rows: each row's expressions are computed (an
/// expression failing for a row fails the statement, as PostgreSQL's index build does), and
/// for a unique index no two rows may share a key without NULLs (23505).
fn new_index_queries(t: &TableSchema, index: &crate::catalog::IndexSchema) -> Vec<(String, SqlError)> {
    let parts = crate::index_expr::part_texts(t, index);
    let table = crate::system::quote_ident(&t.name);
    if index.unique {
        let not_null: Vec<String> = parts.iter().map(|p| format!("{p} IS NOT NULL")).collect();
        let query = format!(
            "SELECT 1 FROM {table} WHERE {} GROUP BY {} HAVING count(*) > 1 LIMIT 1",
            not_null.join(" AND "),
            parts.join(", ")
        );
        let violation =
            SqlError::new(SqlState::UniqueViolation, format!("could not create unique index \"{}\"", index.name));
        return vec![(query, violation)];
    }
    if index.expressions.is_empty() {
        return Vec::new();
    }
    // Never returns a row: it only computes every expression of every row.
    let counts: Vec<String> = parts.iter().map(|p| format!("count({p})")).collect();
    let query = format!("SELECT 1 FROM {table} HAVING least({}) < 0", counts.join(", "));
    vec![(query, SqlError::new(SqlState::InternalError, "a row count below zero"))]
}
