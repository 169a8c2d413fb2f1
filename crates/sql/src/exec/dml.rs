//! INSERT, UPDATE and DELETE: the writes a statement wants, plus the reads it relied on.

use super::*;
use crate::keycode::encode_key;

impl Exec<'_> {
    /// Runs a point lookup of `key_values` on the primary key, or an index equality scan,
    /// recording it; returns the rows found.
    pub(super) fn lookup(
        &mut self,
        local: &WriteSet,
        table: &std::sync::Arc<TableSchema>,
        path: Path,
        values: &[Value],
    ) -> Result<Vec<(Vec<u8>, Row)>> {
        let parts: Vec<Expr> = match &path {
            Path::PrimaryKey => table.primary_key.iter().map(|c| Expr::Column(*c)).collect(),
            Path::Index(i) => crate::index_expr::part_exprs(table, *i),
        };
        let filter = Expr::conjunction(
            parts
                .into_iter()
                .zip(values)
                .map(|(p, v)| Expr::Cmp(CmpOp::Eq, Box::new(p), Box::new(Expr::Const(v.clone())))),
        );
        let access = KeyAccess {
            path,
            eq: values.iter().cloned().map(Expr::Const).collect(),
            any_of: Vec::new(),
            lower: None,
            upper: None,
        };
        let scan = ScanPlan { table: table.clone(), access, filter, derived: None };
        let env = Env::default();
        self.reader.scan_rows(local, &scan, &env, &mut self.reads)
    }

    /// Unique-index checks for `row` (stored at `key`) against the view including `local`.
    /// Returns the violated index name, if any.
    fn unique_conflict(
        &mut self,
        local: &WriteSet,
        table: &std::sync::Arc<TableSchema>,
        key: &[u8],
        row: &Row,
        changed_only: Option<&Row>,
    ) -> Result<Option<String>> {
        // An index expression that fails for the row fails the statement, as in PostgreSQL.
        for index in table.indexes.iter().filter(|x| !x.expressions.is_empty()) {
            table.checked_index_key(index, row)?;
        }
        for (i, index) in table.indexes.iter().enumerate().filter(|(_, x)| x.unique) {
            if let Some(old) = changed_only {
                if table.index_values(index, old)? == table.index_values(index, row)? {
                    continue;
                }
            }
            if self.index_conflict(local, table, i, Some(key), row)? {
                return Ok(Some(index.name.clone()));
            }
        }
        Ok(None)
    }

    /// Whether unique index `i` holds a row with `row`'s values (other than the row at key
    /// `except`, the row an update changes).
    fn index_conflict(
        &mut self,
        local: &WriteSet,
        table: &std::sync::Arc<TableSchema>,
        i: usize,
        except: Option<&[u8]>,
        row: &Row,
    ) -> Result<bool> {
        let hits = self.index_rows(local, table, i, row)?;
        Ok(hits.iter().any(|(k, _)| Some(k.as_slice()) != except))
    }

    /// The rows unique index `i` holds with `row`'s values (none when one is NULL: NULLs
    /// are distinct).
    fn index_rows(
        &mut self,
        local: &WriteSet,
        table: &std::sync::Arc<TableSchema>,
        i: usize,
        row: &Row,
    ) -> Result<Vec<(Vec<u8>, Row)>> {
        let Some(index) = table.indexes.get(i) else { return Ok(Vec::new()) };
        let values = table.index_values(index, row)?;
        if values.iter().any(Value::is_null) {
            return Ok(Vec::new());
        }
        self.lookup(local, table, Path::Index(i), &values)
    }

    /// ON CONFLICT DO NOTHING: whether the row conflicts with the arbiter, and is skipped
    /// before any other check (`pk_taken`: its primary key is taken).
    fn conflicts_with_arbiter(
        &mut self,
        local: &WriteSet,
        table: &std::sync::Arc<TableSchema>,
        arbiter: Option<Arbiter>,
        (key, row): (&[u8], &Row),
        pk_taken: bool,
    ) -> Result<bool> {
        Ok(match arbiter {
            None => pk_taken || self.unique_conflict(local, table, key, row, None)?.is_some(),
            Some(Arbiter::PrimaryKey) => pk_taken,
            // The row stored under the same key conflicts too: an insert replaces no row.
            Some(Arbiter::Index(i)) => self.index_conflict(local, table, i, None, row)?,
        })
    }

    pub fn insert(&mut self, plan: &InsertPlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let source: Vec<Row> = match &plan.source {
            InsertSource::Values(rows) => rows.iter().map(|r| self.project_row(r, &[])).collect::<Result<_>>()?,
            InsertSource::Query(q) => self.query(q)?,
        };
        self.reader.check_rows(source.len())?;
        let table = &plan.table;
        let mut local = WriteSet::default();
        let mut returned = Vec::new();
        let mut count = 0u64;
        // Tables without a primary key: each row gets the next row id of this transaction
        // not yet used in its pending writes (the same at the client and every replica).
        let row_id = table.row_id_column();
        let ts = self.reader.at.ts;
        let mut next_id = self.reader.pending.tables.get(table.storage_name()).map_or(0, |w| w.len() as u64);
        // (old, new) rows ON CONFLICT DO UPDATE changed.
        let mut upserted: Vec<(Row, Row)> = Vec::new();
        for values in source {
            let mut row: Row = Vec::with_capacity(table.columns.len());
            for (pos, c) in table.columns.iter().enumerate() {
                let omitted = !plan.targets.contains(&pos);
                row.push(match (&c.generated, c.volatile_default) {
                    // An omitted SERIAL / IDENTITY column: the next value of its sequence.
                    (Some(g), _) if omitted => {
                        let draws = self.sequences.ok_or_else(|| {
                            SqlError::new(SqlState::InternalError, "no sequence values for this statement")
                        })?;
                        to_column(&Value::Int(draws.next(&g.sequence)?), c)?
                    }
                    // An omitted column whose DEFAULT is now() or gen_random_uuid().
                    (None, Some(func)) if omitted => {
                        to_column(&Expr::Call { func, args: Vec::new() }.eval(&[], &self.env())?, c)?
                    }
                    _ => c.default.clone().unwrap_or(Value::Null),
                });
            }
            for (target, v) in plan.targets.iter().zip(values) {
                let Some(col) = table.columns.get(*target) else { continue };
                let v = to_column(&v, col)?;
                if let Some(slot) = row.get_mut(*target) {
                    *slot = v;
                }
            }
            let key = match row_id.and_then(|c| row.get_mut(c)) {
                Some(slot) => {
                    let key = loop {
                        let key = encode_key([&Value::Bytes(crate::catalog::row_id(&ts, next_id))]);
                        next_id += 1;
                        if self.reader.pending.get(table.storage_name(), &key).is_none()
                            && local.get(table.storage_name(), &key).is_none()
                        {
                            break key;
                        }
                    };
                    *slot = Value::Bytes(crate::catalog::row_id(&ts, next_id - 1));
                    key
                }
                None => table.row_key(&row),
            };
            check_not_null(table, &row)?;
            self.check_constraints(&plan.enforce, table, &row)?;
            // A fresh row id names no stored row: no primary-key read is needed.
            let existing = if row_id.is_some() {
                Vec::new()
            } else {
                let pk_values: Vec<Value> = table.primary_key.iter().filter_map(|c| row.get(*c).cloned()).collect();
                self.lookup(&local, table, Path::PrimaryKey, &pk_values)?
            };
            match &plan.on_conflict {
                OnConflict::Error => {}
                OnConflict::DoNothing { arbiter } => {
                    if self.conflicts_with_arbiter(&local, table, *arbiter, (&key, &row), !existing.is_empty())? {
                        continue;
                    }
                }
                OnConflict::DoUpdate { arbiter, assignments, filter } => {
                    let conflicting = match arbiter {
                        Arbiter::PrimaryKey => existing.first().cloned(),
                        Arbiter::Index(i) => self.index_rows(&local, table, *i, &row)?.into_iter().next(),
                    };
                    // Without a conflict on the arbiter the row is inserted (below).
                    if let Some((old_key, old)) = conflicting {
                        let mut both = old.clone();
                        both.extend(row.iter().cloned());
                        let update = (assignments.as_slice(), filter.as_ref());
                        if let Some(updated) = self.upsert(plan, update, &mut local, (&old_key, &old), &both)? {
                            if let Some(r) = &plan.returning {
                                returned.push(self.project_row(&r.exprs, &updated)?);
                            }
                            upserted.push((old, updated));
                            count += 1;
                        }
                        continue;
                    }
                }
            }
            let conflict = if existing.is_empty() {
                self.unique_conflict(&local, table, &key, &row, None)?
            } else {
                Some(format!("{}_pkey", table.name))
            };
            if let Some(constraint) = conflict {
                return err(
                    SqlState::UniqueViolation,
                    format!("duplicate key value violates unique constraint \"{constraint}\""),
                );
            }
            if let Some(r) = &plan.returning {
                returned.push(self.project_row(&r.exprs, &row)?);
            }
            local.put(table.storage_name(), key, Write::Upsert(row));
            count += 1;
        }
        self.check_parents(&local, table, &plan.enforce)?;
        self.check_updated_parents(&local, table, &plan.enforce, &upserted)?;
        Ok((count, returned, local))
    }

    /// ON CONFLICT DO UPDATE of `old` (at `old_key`), the row conflicting with the arbiter,
    /// given the proposed row (`both`: `old` followed by it). Writes the new row to `local`
    /// and returns it, or None when the update's WHERE skips the row.
    fn upsert(
        &mut self,
        plan: &InsertPlan,
        (assignments, filter): (&[(usize, Expr)], Option<&Expr>),
        local: &mut WriteSet,
        (old_key, old): (&[u8], &Row),
        both: &Row,
    ) -> Result<Option<Row>> {
        let table = &plan.table;
        // The row was inserted or updated by this statement (a row it moved to another key
        // is no longer found at its old one).
        if local.get(table.storage_name(), old_key).is_some() {
            return err(
                SqlState::CardinalityViolation,
                "ON CONFLICT DO UPDATE command cannot affect row a second time",
            );
        }
        if let Some(f) = filter {
            if !self.passes_row(f, both)? {
                return Ok(None);
            }
        }
        let mut updated = old.clone();
        for (col, e) in assignments {
            let Some(column) = table.columns.get(*col) else { continue };
            let v = to_column(&self.eval_row(e, both)?, column)?;
            if let Some(slot) = updated.get_mut(*col) {
                *slot = v;
            }
        }
        check_not_null(table, &updated)?;
        self.check_constraints(&plan.enforce, table, &updated)?;
        let new_key = table.row_key(&updated);
        if new_key != old_key {
            // The update moves the row to another primary key, as UPDATE ... SET may: that
            // key must be free of rows stored or written by this statement.
            local.put(table.storage_name(), old_key.to_vec(), Write::Delete);
            let pk_values: Vec<Value> = table.primary_key.iter().filter_map(|c| updated.get(*c).cloned()).collect();
            if !self.lookup(local, table, Path::PrimaryKey, &pk_values)?.is_empty() {
                return err(
                    SqlState::UniqueViolation,
                    format!("duplicate key value violates unique constraint \"{}_pkey\"", table.name),
                );
            }
        }
        let unchanged_key = (new_key == old_key).then_some(old);
        if let Some(constraint) = self.unique_conflict(local, table, &new_key, &updated, unchanged_key)? {
            return err(
                SqlState::UniqueViolation,
                format!("duplicate key value violates unique constraint \"{constraint}\""),
            );
        }
        local.put(table.storage_name(), new_key, Write::Upsert(updated.clone()));
        Ok(Some(updated))
    }

    /// Rows an UPDATE/DELETE changes, with their keys: each is the target's row followed by
    /// the joined columns of an `UPDATE ... FROM` / `DELETE ... USING` (see `TargetRows`).
    fn target_rows(&mut self, table: &TableSchema, rows: &TargetRows) -> Result<Vec<(Vec<u8>, Row)>> {
        match rows {
            TargetRows::Scan { scan, residual } => {
                let empty = WriteSet::default();
                let subqueries = self.subqueries.clone();
                let enclosing = self.enclosing.clone();
                let env = self.env_over(&subqueries, &enclosing);
                let matches = self.reader.scan_rows(&empty, scan, &env, &mut self.reads)?;
                let Some(residual) = residual else { return Ok(matches) };
                let mut kept = Vec::with_capacity(matches.len());
                for (key, row) in matches {
                    if self.passes_row(residual, &row)? {
                        kept.push((key, row));
                    }
                }
                Ok(kept)
            }
            TargetRows::Join { from, filter } => {
                let width = table.columns.len();
                let mut seen = BTreeSet::new();
                let mut kept = Vec::new();
                for row in self.from(from)? {
                    if let Some(f) = filter {
                        if !self.passes_row(f, &row)? {
                            continue;
                        }
                    }
                    let key = table.row_key(row.get(..width).unwrap_or_default());
                    if seen.insert(key.clone()) {
                        kept.push((key, row));
                    }
                }
                Ok(kept)
            }
        }
    }

    pub fn update(&mut self, plan: &UpdatePlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let table = &plan.table;
        let width = table.columns.len();
        let empty = WriteSet::default();
        let matches = self.target_rows(table, &plan.rows)?;
        let mut changes: Vec<Change> = Vec::with_capacity(matches.len());
        for (key, mut joined) in matches {
            let mut new = joined.get(..width).unwrap_or_default().to_vec();
            for (col, e) in &plan.assignments {
                let Some(column) = table.columns.get(*col) else { continue };
                let v = to_column(&self.eval_row(e, &joined)?, column)?;
                if let Some(slot) = new.get_mut(*col) {
                    *slot = v;
                }
            }
            check_not_null(table, &new)?;
            self.check_constraints(&plan.enforce, table, &new)?;
            let new_key = table.row_key(&new);
            let joined_tail = joined.split_off(width.min(joined.len()));
            changes.push(Change { key, new_key, old: joined, new, joined: joined_tail });
        }
        // Keys the statement moves away from (only looked up when a key changes).
        let removed: BTreeSet<&[u8]> = if changes.iter().any(|c| c.key != c.new_key) {
            changes.iter().map(|c| c.key.as_slice()).collect()
        } else {
            BTreeSet::new()
        };
        let mut local = WriteSet::default();
        for Change { key, new_key, new, .. } in &changes {
            if local.get(table.storage_name(), new_key).is_some() {
                return err(
                    SqlState::UniqueViolation,
                    format!("duplicate key value violates unique constraint \"{}_pkey\"", table.name),
                );
            }
            if key != new_key && !removed.contains(new_key.as_slice()) {
                let pk_values: Vec<Value> = table.primary_key.iter().filter_map(|c| new.get(*c).cloned()).collect();
                if !self.lookup(&empty, table, Path::PrimaryKey, &pk_values)?.is_empty() {
                    return err(
                        SqlState::UniqueViolation,
                        format!("duplicate key value violates unique constraint \"{}_pkey\"", table.name),
                    );
                }
            }
            local.put(table.storage_name(), new_key.clone(), Write::Upsert(new.clone()));
        }
        for c in &changes {
            if local.get(table.storage_name(), &c.key).is_none() {
                local.put(table.storage_name(), c.key.clone(), Write::Delete);
            }
        }
        let mut returned = Vec::new();
        for Change { key, new_key, old, new, joined } in &changes {
            let unchanged_key = (key == new_key).then_some(old);
            if let Some(constraint) = self.unique_conflict(&local, table, new_key, new, unchanged_key)? {
                return err(
                    SqlState::UniqueViolation,
                    format!("duplicate key value violates unique constraint \"{constraint}\""),
                );
            }
            if let Some(r) = &plan.returning {
                let row: Row = new.iter().chain(joined).cloned().collect();
                returned.push(self.project_row(&r.exprs, &row)?);
            }
        }
        if !plan.enforce.is_empty() {
            self.check_parents(&local, table, &plan.enforce)?;
            let pairs: Vec<(Row, Row)> = changes.iter().map(|c| (c.old.clone(), c.new.clone())).collect();
            self.check_updated_parents(&local, table, &plan.enforce, &pairs)?;
        }
        Ok((changes.len() as u64, returned, local))
    }

    pub fn delete(&mut self, plan: &DeletePlan) -> Result<(u64, Vec<Row>, WriteSet)> {
        let width = plan.table.columns.len();
        let matches = self.target_rows(&plan.table, &plan.rows)?;
        let mut local = WriteSet::default();
        let mut returned = Vec::new();
        for (key, joined) in &matches {
            if let Some(r) = &plan.returning {
                returned.push(self.project_row(&r.exprs, joined)?);
            }
            local.put(plan.table.storage_name(), key.clone(), Write::Delete);
        }
        let count = matches.len() as u64;
        let deleted = matches
            .into_iter()
            .map(|(_, mut row)| {
                row.truncate(width);
                row
            })
            .collect();
        self.on_delete(&mut local, &plan.table, &plan.enforce, deleted)?;
        Ok((count, returned, local))
    }
}

/// A row an UPDATE changes: its key and row before and after, and the columns it joined.
struct Change {
    key: Vec<u8>,
    new_key: Vec<u8>,
    old: Row,
    new: Row,
    joined: Row,
}

pub(super) fn check_not_null(table: &TableSchema, row: &[Value]) -> Result<()> {
    for (col, v) in table.columns.iter().zip(row) {
        if !col.nullable && v.is_null() {
            return err(
                SqlState::NotNullViolation,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    col.name, table.name
                ),
            );
        }
    }
    Ok(())
}
