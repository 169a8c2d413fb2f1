//! Binding of FOREIGN KEY, CHECK and UNIQUE constraints (CREATE TABLE, ALTER TABLE ADD
//! CONSTRAINT) and of the ALTER TABLE actions of `CatalogChange::AlterTable`.

use super::*;
use crate::constraints::{choose_name, AlterAction, CheckConstraint, FkAction, ForeignKey, Unvalidated};

fn fk_action(a: &Option<sql::ReferentialAction>) -> Result<FkAction> {
    Ok(match a {
        None | Some(sql::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(sql::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(sql::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(sql::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(sql::ReferentialAction::SetDefault) => return unsupported("ON DELETE / ON UPDATE SET DEFAULT"),
    })
}

impl Binder<'_> {
    /// A FOREIGN KEY of `table` (`columns` empty: the column-level form on `column`).
    pub(super) fn foreign_key(
        &mut self,
        table: &TableSchema,
        fk: &sql::ForeignKeyConstraint,
        column: Option<usize>,
        name: Option<&sql::Ident>,
    ) -> Result<ForeignKey> {
        if fk.index_name.is_some() || matches!(fk.match_kind, Some(k) if k != sql::ConstraintReferenceMatchKind::Simple)
        {
            return unsupported("MATCH FULL / MATCH PARTIAL foreign keys");
        }
        if fk.characteristics.as_ref().is_some_and(|c| c.enforced == Some(false)) {
            return unsupported("NOT ENFORCED constraints");
        }
        let columns = match column {
            Some(c) if fk.columns.is_empty() => vec![c],
            _ => self.named_columns(table, &fk.columns)?,
        };
        let parent_name = object_name(&fk.foreign_table)?;
        let parent: &TableSchema = if parent_name == table.name {
            table
        } else {
            self.catalog.table(&parent_name).map(|t| &**t).ok_or_else(|| {
                SqlError::new(SqlState::UndefinedTable, format!("relation \"{parent_name}\" does not exist"))
            })?
        };
        let parent_columns = if fk.referred_columns.is_empty() {
            parent.declared_primary_key().ok_or_else(|| {
                SqlError::new(
                    SqlState::InvalidForeignKey,
                    format!("there is no primary key for referenced table \"{parent_name}\""),
                )
            })?
        } else {
            let mut out = Vec::new();
            for c in &fk.referred_columns {
                let n = ident(c);
                out.push(parent.column_index(&n).ok_or_else(|| {
                    SqlError::new(
                        SqlState::UndefinedColumn,
                        format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                    )
                })?);
            }
            out
        };
        let name = match name.or(fk.name.as_ref()) {
            Some(n) => ident(n),
            None => {
                let cols: Vec<&str> =
                    columns.iter().filter_map(|c| table.columns.get(*c)).map(|c| c.name.as_str()).collect();
                choose_name(table, self.catalog, &cols, "fkey")
            }
        };
        let (deferrable, initially_deferred) = match &fk.characteristics {
            Some(c) => {
                let deferred = c.initially == Some(sql::DeferrableInitial::Deferred);
                (c.deferrable.unwrap_or(deferred), deferred)
            }
            None => (false, false),
        };
        if initially_deferred && !deferrable {
            return err(SqlState::SyntaxError, "constraint declared INITIALLY DEFERRED must be DEFERRABLE");
        }
        Ok(ForeignKey {
            name,
            columns,
            parent: parent_name,
            parent_columns,
            on_delete: fk_action(&fk.on_delete)?,
            on_update: match fk_action(&fk.on_update)? {
                FkAction::Cascade | FkAction::SetNull => {
                    return unsupported("ON UPDATE CASCADE / SET NULL (a referenced key that changes fails with 23503)")
                }
                a => a,
            },
            deferrable,
            initially_deferred,
        })
    }

    fn named_columns(&self, table: &TableSchema, cols: &[sql::Ident]) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for c in cols {
            let n = ident(c);
            let pos = table.column_index(&n).ok_or_else(|| {
                SqlError::new(
                    SqlState::UndefinedColumn,
                    format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                )
            })?;
            out.push(pos);
        }
        Ok(out)
    }

    /// A CHECK constraint of `table`; `column` names the column of a column-level one (for
    /// the default name).
    pub(super) fn check(
        &mut self,
        table: &TableSchema,
        c: &sql::CheckConstraint,
        column: Option<&str>,
        name: Option<&sql::Ident>,
        taken: &[String],
    ) -> Result<CheckConstraint> {
        if c.no_inherit || c.enforced == Some(false) {
            return unsupported("NO INHERIT / NOT ENFORCED CHECK constraints");
        }
        let expr = c.expr.to_string();
        // Binding now reports errors (unknown column, non-boolean) as PostgreSQL does at
        // CREATE time; the catalog binds it again wherever the change is applied.
        crate::constraints::bind_check(self.catalog, table, &expr)?;
        let name = match name.or(c.name.as_ref()) {
            Some(n) => ident(n),
            None => {
                let cols: Vec<&str> = column.into_iter().collect();
                let mut n = choose_name(table, self.catalog, &cols, "check");
                let mut i = 0;
                let base = n.clone();
                while taken.contains(&n) {
                    i += 1;
                    n = format!("{base}{i}");
                }
                n
            }
        };
        Ok(CheckConstraint { name, expr })
    }

    /// Column-level CHECK / REFERENCES options of CREATE TABLE, added to `table` (whose
    /// columns are all known).
    pub(super) fn column_constraints(&mut self, table: &mut TableSchema, defs: &[sql::ColumnDef]) -> Result<()> {
        for def in defs {
            let col_name = ident(&def.name);
            let Some(pos) = table.column_index(&col_name) else { continue };
            for opt in &def.options {
                match &opt.option {
                    sql::ColumnOption::Check(c) => {
                        let taken: Vec<String> = table.constraints.checks.iter().map(|c| c.name.clone()).collect();
                        let check = self.check(table, c, Some(&col_name), opt.name.as_ref(), &taken)?;
                        table.constraints.checks.push(check);
                    }
                    sql::ColumnOption::ForeignKey(fk) => {
                        let fk = self.foreign_key(table, fk, Some(pos), opt.name.as_ref())?;
                        self.push_fk(table, fk)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn push_fk(&self, table: &mut TableSchema, mut fk: ForeignKey) -> Result<()> {
        if table.constraints.foreign_keys.iter().any(|f| f.name == fk.name) {
            // Two generated names alike (the catalog does not know the table yet).
            let base = fk.name.clone();
            let mut i = 1;
            while table.constraints.foreign_keys.iter().any(|f| f.name == fk.name) {
                fk.name = format!("{base}{i}");
                i += 1;
            }
        }
        table.constraints.foreign_keys.push(fk);
        Ok(())
    }

    /// Table-level CHECK / FOREIGN KEY of CREATE TABLE (false: not one of those).
    pub(super) fn table_constraint(&mut self, table: &mut TableSchema, c: &sql::TableConstraint) -> Result<bool> {
        match c {
            sql::TableConstraint::Check(check) => {
                let taken: Vec<String> = table.constraints.checks.iter().map(|c| c.name.clone()).collect();
                let check = self.check(table, check, None, None, &taken)?;
                table.constraints.checks.push(check);
                Ok(true)
            }
            sql::TableConstraint::ForeignKey(fk) => {
                let fk = self.foreign_key(table, fk, None, None)?;
                self.push_fk(table, fk)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// ALTER TABLE with actions other than a lone ADD COLUMN / ADD PRIMARY KEY.
    pub(super) fn alter_actions(
        &mut self,
        table: &TableSchema,
        ops: &[sql::AlterTableOperation],
    ) -> Result<Option<CatalogChange>> {
        if let [sql::AlterTableOperation::ValidateConstraint { name }] = ops {
            return validate_constraint(table, &temporary_constraint(table, ident(name)));
        }
        // Bound against the table as the earlier actions leave it.
        let mut catalog = self.catalog.clone();
        let mut actions = Vec::new();
        // Constraints added NOT VALID: enforced for new rows, the older ones unchecked.
        let mut not_valid = Vec::new();
        // DROP COLUMN ... CASCADE first drops the other tables' foreign keys on the column.
        let mut cascaded = Vec::new();
        for op in ops {
            let Some(current) = catalog.table(&table.name).cloned() else { break };
            if let sql::AlterTableOperation::DropColumn {
                column_names,
                drop_behavior: Some(sql::DropBehavior::Cascade),
                ..
            } = op
            {
                let positions: Vec<usize> =
                    column_names.iter().filter_map(|c| current.column_index(&ident(c))).collect();
                let dependents: Vec<(String, String)> = crate::constraints::referencing(&catalog, &table.name)
                    .into_iter()
                    .filter(|(_, fk)| fk.parent_columns.iter().any(|p| positions.contains(p)))
                    .map(|(child, fk)| (child.name.clone(), fk.name.clone()))
                    .collect();
                for (child, name) in dependents {
                    let drop = vec![AlterAction::DropConstraint { name }];
                    crate::constraints::apply_alter(&mut catalog, &child, &drop)?;
                    cascaded.push(CatalogChange::AlterTable { table: child, actions: drop });
                }
            }
            let action = {
                let mut binder = Binder::new(&catalog, self.max_depth, self.sql);
                let action = binder.alter_action(&current, op)?;
                if binder.notice.is_some() {
                    self.notice = binder.notice;
                }
                action
            };
            let Some(action) = action else { continue };
            if let sql::AlterTableOperation::AddConstraint { not_valid: true, .. } = op {
                match &action {
                    AlterAction::AddCheck(CheckConstraint { name, .. })
                    | AlterAction::AddForeignKey(ForeignKey { name, .. }) => {
                        not_valid.push(Unvalidated::Constraint(name.clone()))
                    }
                    _ => return unsupported("NOT VALID for constraints other than CHECK and FOREIGN KEY"),
                }
            }
            crate::constraints::apply_alter(&mut catalog, &table.name, std::slice::from_ref(&action))?;
            actions.push(action);
        }
        if actions.is_empty() {
            return Ok(None);
        }
        let change = CatalogChange::AlterTable { table: table.name.clone(), actions };
        if cascaded.is_empty() && not_valid.is_empty() {
            return Ok(Some(change));
        }
        cascaded.push(change);
        if !not_valid.is_empty() {
            cascaded.push(CatalogChange::MarkUnvalidated { table: table.name.clone(), rules: not_valid });
        }
        Ok(Some(CatalogChange::Several(cascaded)))
    }

    fn alter_action(&mut self, table: &TableSchema, op: &sql::AlterTableOperation) -> Result<Option<AlterAction>> {
        use sql::AlterTableOperation as Op;
        let column_of = |name: &sql::Ident| -> Result<String> {
            let n = ident(name);
            table.column_index(&n).map(|_| n.clone()).ok_or_else(|| {
                SqlError::new(
                    SqlState::UndefinedColumn,
                    format!("column \"{n}\" of relation \"{}\" does not exist", table.name),
                )
            })
        };
        Ok(Some(match op {
            Op::AddConstraint { constraint, not_valid } => match constraint {
                sql::TableConstraint::ForeignKey(fk) => {
                    AlterAction::AddForeignKey(self.foreign_key(table, fk, None, None)?)
                }
                sql::TableConstraint::Check(c) => AlterAction::AddCheck(self.check(table, c, None, None, &[])?),
                sql::TableConstraint::Unique(_) if *not_valid => {
                    return err(SqlState::FeatureNotSupported, "UNIQUE constraints cannot be marked NOT VALID")
                }
                sql::TableConstraint::Unique(u) => {
                    if u.index_name.is_some()
                        || u.index_type.is_some()
                        || !u.include.is_empty()
                        || !u.index_options.is_empty()
                        || u.characteristics.is_some()
                        || u.nulls_distinct != sql::NullsDistinctOption::None
                    {
                        return unsupported("this UNIQUE constraint form");
                    }
                    let columns = self.index_columns(table, &u.columns, &table.columns)?;
                    let name = match &u.name {
                        Some(n) => ident(n),
                        None => {
                            let cols: Vec<&str> =
                                columns.iter().filter_map(|c| table.columns.get(*c)).map(|c| c.name.as_str()).collect();
                            choose_name(table, self.catalog, &cols, "key")
                        }
                    };
                    AlterAction::AddUnique { name, columns }
                }
                other => return unsupported(format!("ALTER TABLE ADD {other}")),
            },
            Op::ValidateConstraint { .. } => {
                return unsupported("VALIDATE CONSTRAINT together with other ALTER TABLE actions")
            }
            Op::DropConstraint { if_exists, name, drop_behavior } => {
                if matches!(drop_behavior, Some(sql::DropBehavior::Cascade)) {
                    return unsupported("DROP CONSTRAINT ... CASCADE");
                }
                let name = temporary_constraint(table, ident(name));
                if *if_exists && !crate::constraints::constraint_exists(table, &name) {
                    self.notice =
                        Some(format!("constraint \"{name}\" of relation \"{}\" does not exist, skipping", table.name));
                    return Ok(None);
                }
                AlterAction::DropConstraint { name }
            }
            // CASCADE: `alter_actions` dropped the foreign keys on the column already.
            Op::DropColumn { column_names, if_exists, .. } => {
                let [name] = column_names.as_slice() else {
                    return unsupported("dropping several columns in one action (use one DROP COLUMN each)");
                };
                if *if_exists && table.column_index(&ident(name)).is_none() {
                    let column = ident(name);
                    self.notice =
                        Some(format!("column \"{column}\" of relation \"{}\" does not exist, skipping", table.name));
                    return Ok(None);
                }
                AlterAction::DropColumn { column: column_of(name)? }
            }
            Op::RenameColumn { old_column_name, new_column_name } => {
                AlterAction::RenameColumn { from: column_of(old_column_name)?, to: ident(new_column_name) }
            }
            Op::RenameTable { .. } => return unsupported("RENAME together with other ALTER TABLE actions"),
            Op::AlterColumn { column_name, op } => {
                let column = column_of(column_name)?;
                match op {
                    sql::AlterColumnOperation::DropNotNull => AlterAction::DropNotNull { column },
                    sql::AlterColumnOperation::SetNotNull => AlterAction::SetNotNull { column },
                    sql::AlterColumnOperation::DropDefault => AlterAction::SetDefault { column, default: None },
                    sql::AlterColumnOperation::SetDefault { value } => {
                        let Some(col) = table.column_index(&column).and_then(|p| table.columns.get(p)) else {
                            return Ok(None);
                        };
                        let col = col.clone();
                        AlterAction::SetDefault { column, default: Some(self.constant_default(value, &col)?) }
                    }
                    sql::AlterColumnOperation::SetDataType { data_type: dt, using: None, .. } => {
                        let (ty, limits) = data_type(dt)?;
                        AlterAction::SetType { column, ty, limits }
                    }
                    other => return unsupported(format!("ALTER COLUMN {other}")),
                }
            }
            other => return unsupported(format!("ALTER TABLE {other}")),
        }))
    }
}

/// ALTER TABLE … VALIDATE CONSTRAINT: marks a constraint added NOT VALID as valid (the rows
/// are checked first: `validation_queries`, the gateway's checks of existing rows); a valid
/// CHECK or FOREIGN KEY constraint needs nothing, as in PostgreSQL.
fn validate_constraint(table: &TableSchema, name: &str) -> Result<Option<CatalogChange>> {
    let rule = Unvalidated::Constraint(name.to_string());
    if table.constraints.unvalidated.contains(&rule) {
        return Ok(Some(CatalogChange::Validated { table: table.name.clone(), rules: vec![rule] }));
    }
    if table.has_rule(&rule) {
        return Ok(None);
    }
    if crate::constraints::constraint_exists(table, name) {
        return err(
            SqlState::WrongObjectType,
            format!("constraint \"{name}\" of relation \"{}\" is not a foreign key or check constraint", table.name),
        );
    }
    err(SqlState::UndefinedObject, format!("constraint \"{name}\" of relation \"{}\" does not exist", table.name))
}

/// The catalog name of constraint `name` of `table`: a temporary table's constraint names
/// may carry its session's namespace (`crate::system::temp_namespace`), which SQL omits.
fn temporary_constraint(table: &TableSchema, name: String) -> String {
    if crate::system::temp_namespace(&table.name).is_none() || crate::constraints::constraint_exists(table, &name) {
        return name;
    }
    let c = &table.constraints;
    let names = c.checks.iter().map(|x| &x.name).chain(c.foreign_keys.iter().map(|x| &x.name)).chain(&c.unique);
    names.into_iter().find(|n| crate::system::unqualified(n) == name).cloned().unwrap_or(name)
}
