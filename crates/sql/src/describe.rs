//! What a prepared statement is and which stored tables it touches, without executing it:
//! the protocol layer routes a statement (to a shard, to the point-read or range-read path,
//! or as a schema change) from this.

use crate::catalog::CatalogChange;
use crate::engine::Prepared;
use crate::plan::{FromPlan, Plan, QueryBody, QueryPlan, ScanPlan, Statement, TargetRows, TxnControl};
use std::collections::BTreeSet;

/// The kind of a prepared statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StatementKind {
    Query,
    Insert,
    Update,
    Delete,
    /// A schema change (None: an `IF [NOT] EXISTS` that is a no-op on this catalog).
    Ddl(Option<Box<CatalogChange>>),
    Explain,
    Transaction(TxnControl),
}

impl StatementKind {
    /// The PostgreSQL command tag's verb.
    pub fn command(&self) -> &'static str {
        match self {
            StatementKind::Query | StatementKind::Explain => "SELECT",
            StatementKind::Insert => "INSERT",
            StatementKind::Update => "UPDATE",
            StatementKind::Delete => "DELETE",
            StatementKind::Ddl(Some(c)) => ddl_command(c),
            // An IF [NOT] EXISTS no-op; PostgreSQL tags it by its verb, which the plan no
            // longer knows.
            StatementKind::Ddl(None) => "DDL",
            StatementKind::Transaction(TxnControl::Begin) => "BEGIN",
            StatementKind::Transaction(TxnControl::Commit) => "COMMIT",
            StatementKind::Transaction(TxnControl::Rollback) => "ROLLBACK",
        }
    }
}

fn ddl_command(change: &CatalogChange) -> &'static str {
    match change {
        CatalogChange::CreateTable(_) => "CREATE TABLE",
        CatalogChange::DropTable { .. } => "DROP TABLE",
        CatalogChange::RenameTable { .. } => "ALTER TABLE",
        CatalogChange::CreateIndex { .. } => "CREATE INDEX",
        CatalogChange::DropIndex { .. } => "DROP INDEX",
        CatalogChange::CreateSequence(_) => "CREATE SEQUENCE",
        CatalogChange::DropSequence { .. } => "DROP SEQUENCE",
        CatalogChange::CreateView(_) => "CREATE VIEW",
        CatalogChange::DropView { .. } => "DROP VIEW",
        CatalogChange::RenameIndex { .. } => "ALTER INDEX",
        CatalogChange::RenameView { .. } => "ALTER VIEW",
        CatalogChange::RenameSequence { .. } => "ALTER SEQUENCE",
        CatalogChange::MarkUnvalidated { .. } | CatalogChange::Validated { .. } => "ALTER TABLE",
        // CREATE TABLE with SERIAL columns: its sequences, then the table.
        CatalogChange::Several(changes) => changes.last().map_or("DDL", ddl_command),
        CatalogChange::AddColumn { .. } | CatalogChange::AddPrimaryKey { .. } | CatalogChange::AlterTable { .. } => {
            "ALTER TABLE"
        }
    }
}

impl Prepared {
    pub fn kind(&self) -> StatementKind {
        match &self.plan().statement {
            Statement::Query(_) => StatementKind::Query,
            Statement::Insert(_) => StatementKind::Insert,
            Statement::Update(_) => StatementKind::Update,
            Statement::Delete(_) => StatementKind::Delete,
            Statement::Ddl(change) => StatementKind::Ddl(change.clone().map(Box::new)),
            Statement::Explain { .. } => StatementKind::Explain,
            Statement::Txn(t) => StatementKind::Transaction(*t),
        }
    }

    /// Column names of RETURNING, for INSERT / UPDATE / DELETE that ask for it.
    pub fn returning_columns(&self) -> Option<Vec<String>> {
        self.returning().map(|r| r.names.clone())
    }

    /// Static types of RETURNING's columns (None where only known at run time).
    pub fn returning_types(&self) -> Option<Vec<Option<crate::types::SqlType>>> {
        self.returning().map(|r| r.types.clone())
    }

    fn returning(&self) -> Option<&crate::plan::Returning> {
        match &self.plan().statement {
            Statement::Insert(i) => i.returning.as_ref(),
            Statement::Update(u) => u.returning.as_ref(),
            Statement::Delete(d) => d.returning.as_ref(),
            _ => None,
        }
    }
}

/// Names of the stored tables `plan` reads or writes (subqueries and derived tables
/// included), sorted; [`Prepared::tables`] keeps them. EXPLAIN touches none: it reads nothing;
/// EXPLAIN ANALYZE those of the statement it runs.
pub(crate) fn plan_tables(plan: &Plan) -> Vec<String> {
    let mut out = BTreeSet::new();
    match &plan.statement {
        Statement::Query(q) => query_tables(q, &mut out),
        Statement::Insert(i) => {
            out.insert(i.table.storage_name().to_string());
            i.enforce.tables(&mut out);
            if let crate::plan::InsertSource::Query(q) = &i.source {
                query_tables(q, &mut out);
            }
        }
        // Constraint checks read the referenced and referencing tables (`constraints`).
        Statement::Update(u) => {
            target_tables(&u.rows, &mut out);
            u.enforce.tables(&mut out);
        }
        Statement::Delete(d) => {
            target_tables(&d.rows, &mut out);
            d.enforce.tables(&mut out);
        }
        Statement::Explain { inner, analyze: true } => return plan_tables(inner),
        Statement::Ddl(_) | Statement::Explain { .. } | Statement::Txn(_) => return Vec::new(),
    }
    for sub in &plan.subqueries {
        query_tables(&sub.plan, &mut out);
    }
    out.into_iter().collect()
}

fn target_tables(rows: &TargetRows, out: &mut BTreeSet<String>) {
    match rows {
        TargetRows::Scan { scan, .. } => scan_tables(scan, out),
        TargetRows::Join { from, .. } => from_tables(from, out),
    }
}

fn query_tables(q: &QueryPlan, out: &mut BTreeSet<String>) {
    body_tables(&q.body, out);
}

fn body_tables(body: &QueryBody, out: &mut BTreeSet<String>) {
    match body {
        QueryBody::Select(core) => from_tables(&core.from, out),
        QueryBody::Values(_) | QueryBody::WorkingTable(_) => {}
        QueryBody::SetOp { left, right, .. } | QueryBody::Recursive { base: left, step: right, .. } => {
            body_tables(left, out);
            body_tables(right, out);
        }
    }
}

fn from_tables(from: &FromPlan, out: &mut BTreeSet<String>) {
    if let Some(first) = &from.first {
        scan_tables(first, out);
    }
    for join in &from.joins {
        scan_tables(&join.right, out);
    }
}

fn scan_tables(scan: &ScanPlan, out: &mut BTreeSet<String>) {
    match &scan.derived {
        Some(q) => query_tables(q, out),
        None => {
            out.insert(scan.table.storage_name().to_string());
        }
    }
}
