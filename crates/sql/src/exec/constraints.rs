//! CHECK and FOREIGN KEY enforcement for INSERT, UPDATE and DELETE (docs/sql.md,
//! "Constraints"). Every read a check makes is an ordinary scan through the statement's
//! `Reader`, so it is reported (a point access on the referenced key, or a predicate over the
//! referencing table) and validated by the concurrency control like any other read.

use super::*;
use crate::constraints::{ChildRef, Enforcement, FkAction};
use std::collections::VecDeque;
use std::sync::Arc;

impl Exec<'_> {
    /// CHECK constraints of a row about to be written (after NOT NULL, as PostgreSQL): a
    /// FALSE result fails with 23514; TRUE and NULL pass.
    pub(super) fn check_constraints(&self, enforce: &Enforcement, table: &TableSchema, row: &[Value]) -> Result<()> {
        for (name, e) in &enforce.checks {
            if e.truth_of(row, &Env::default())? == Some(false) {
                return err(
                    SqlState::CheckViolation,
                    format!("new row for relation \"{}\" violates check constraint \"{name}\"", table.name),
                );
            }
        }
        Ok(())
    }

    /// Foreign keys of the rows the statement writes to `table` (checked once all its rows are
    /// written, so rows of the same statement may reference each other): each non-NULL key
    /// must name a row of the referenced table as the statement sees it.
    pub(super) fn check_parents(&mut self, local: &WriteSet, table: &TableSchema, enforce: &Enforcement) -> Result<()> {
        if enforce.parents.is_empty() {
            return Ok(());
        }
        let rows: Vec<Row> = local
            .tables
            .get(table.storage_name())
            .into_iter()
            .flatten()
            .filter_map(|(_, w)| match w {
                Write::Upsert(r) => Some(r.clone()),
                Write::Delete => None,
            })
            .collect();
        for row in &rows {
            for p in &enforce.parents {
                let values: Vec<Value> = p.value_columns.iter().filter_map(|c| row.get(*c).cloned()).collect();
                // MATCH SIMPLE: a key with a NULL references nothing.
                if values.len() != p.value_columns.len() || values.iter().any(Value::is_null) {
                    continue;
                }
                if self.lookup(local, &p.parent, p.path.clone(), &values)?.is_empty() {
                    return err(
                        SqlState::ForeignKeyViolation,
                        format!(
                            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
                            table.name, p.name
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// Rows of `child` whose foreign key `fk` references `parent_row` (a scan with the key
    /// equalities as its predicate, over storage and the statement's own writes).
    fn referencing_rows(
        &mut self,
        local: &WriteSet,
        fk: &ChildRef,
        parent_row: &[Value],
    ) -> Result<Vec<(Vec<u8>, Row)>> {
        let values: Vec<Value> = fk.parent_columns.iter().filter_map(|c| parent_row.get(*c).cloned()).collect();
        if values.len() != fk.parent_columns.len() || values.iter().any(Value::is_null) {
            return Ok(Vec::new());
        }
        let conjuncts: Vec<Expr> = fk
            .columns
            .iter()
            .zip(&values)
            .map(|(c, v)| Expr::Cmp(CmpOp::Eq, Box::new(Expr::Column(*c)), Box::new(Expr::Const(v.clone()))))
            .collect();
        let access = choose_access(&fk.child, &conjuncts);
        let scan = ScanPlan { table: fk.child.clone(), access, filter: Expr::conjunction(conjuncts), derived: None };
        self.reader.scan_rows(local, &scan, &Env::default(), &mut self.reads)
    }

    fn still_referenced(parent: &TableSchema, fk: &ChildRef) -> SqlError {
        SqlError::new(
            SqlState::ForeignKeyViolation,
            format!(
                "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
                parent.name, fk.name, fk.child.name
            ),
        )
    }

    /// After an UPDATE of `table`: a referenced key that changed must no longer be referenced
    /// (NO ACTION / RESTRICT; ON UPDATE CASCADE and SET NULL are refused at CREATE).
    pub(super) fn check_updated_parents(
        &mut self,
        local: &WriteSet,
        table: &TableSchema,
        enforce: &Enforcement,
        changes: &[(Row, Row)],
    ) -> Result<()> {
        for fk in &enforce.children {
            for (old, new) in changes {
                if fk.parent_columns.iter().all(|c| old.get(*c) == new.get(*c)) {
                    continue;
                }
                if !self.referencing_rows(local, fk, old)?.is_empty() {
                    return Err(Self::still_referenced(table, fk));
                }
            }
        }
        Ok(())
    }

    /// After a DELETE from `table` (its deletions in `local`): rows still referencing a
    /// deleted row fail the statement (NO ACTION / RESTRICT), are deleted (CASCADE, down the
    /// chain of cascades) or get NULL keys (SET NULL). Cascaded writes go to `local`.
    pub(super) fn on_delete(
        &mut self,
        local: &mut WriteSet,
        table: &Arc<TableSchema>,
        root: &Enforcement,
        deleted: Vec<Row>,
    ) -> Result<()> {
        if root.children.is_empty() {
            return Ok(());
        }
        let root_children: Arc<Vec<ChildRef>> = Arc::new(root.children.clone());
        let mut queue: VecDeque<(Arc<TableSchema>, Arc<Vec<ChildRef>>, Row)> =
            deleted.into_iter().map(|r| (table.clone(), root_children.clone(), r)).collect();
        let mut cascaded = 0usize;
        while let Some((parent, children, row)) = queue.pop_front() {
            for fk in children.iter() {
                let rows = self.referencing_rows(local, fk, &row)?;
                if rows.is_empty() {
                    continue;
                }
                let child_enforce = root.cascades.get(&fk.child.name);
                match fk.on_delete {
                    FkAction::NoAction | FkAction::Restrict => return Err(Self::still_referenced(&parent, fk)),
                    FkAction::Cascade => {
                        let grandchildren = Arc::new(child_enforce.map(|e| e.children.clone()).unwrap_or_default());
                        for (key, r) in rows {
                            local.put(fk.child.storage_name(), key, Write::Delete);
                            queue.push_back((fk.child.clone(), grandchildren.clone(), r));
                        }
                    }
                    FkAction::SetNull => {
                        for (key, mut r) in rows {
                            for c in &fk.columns {
                                if let Some(slot) = r.get_mut(*c) {
                                    *slot = Value::Null;
                                }
                            }
                            super::dml::check_not_null(&fk.child, &r)?;
                            if let Some(e) = child_enforce {
                                self.check_constraints(e, &fk.child, &r)?;
                            }
                            local.put(fk.child.storage_name(), key, Write::Upsert(r));
                        }
                    }
                }
                cascaded = cascaded.saturating_add(1);
                self.reader.check_rows(local.len().max(cascaded))?;
            }
        }
        Ok(())
    }
}
