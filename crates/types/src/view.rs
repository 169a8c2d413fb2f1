//! Views as the catalog keeps them: named queries stored as SQL text. Defining one and
//! checking that a schema change leaves it binding the same needs the SQL engine
//! (`pistou_sql::view`, and docs/sql.md, "Views").

use crate::catalog::{Catalog, Column};
use crate::error::{err, Result, SqlState};
use serde::{Deserialize, Serialize};

/// Longest view query text, in bytes.
pub const MAX_VIEW_QUERY: usize = 64 * 1024;

/// Most columns a view has (PostgreSQL's limit for any relation).
pub const MAX_VIEW_COLUMNS: usize = 1600;

/// A view as the catalog keeps it. Everything but the name, the query text and the column
/// names is computed by [`Catalog::apply`] from the catalog it is applied to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewSchema {
    pub name: String,
    /// Its identity: the catalog version that created or replaced it (as a table's).
    pub id: u64,
    /// The defining query, as the parser prints it back.
    pub query: String,
    /// `CREATE VIEW v (a, b)`'s column list (may name fewer columns than the query has).
    pub column_names: Vec<String>,
    /// The names the query itself gives its output columns, before the column list.
    pub query_names: Vec<String>,
    /// The output columns: names (the column list's, then the query's) and static types
    /// (text where the query leaves a column's type open).
    pub columns: Vec<Column>,
    /// The tables and views the query reads, sorted and distinct.
    pub depends_on: Vec<String>,
}

/// A view to create or replace, as a DDL statement asks for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewDefinition {
    pub name: String,
    pub query: String,
    /// `CREATE VIEW v (a, b)`: names for the first columns (may be fewer than the query's).
    pub column_names: Vec<String>,
    /// CREATE OR REPLACE VIEW.
    pub replace: bool,
}
impl ViewSchema {
    /// Whether this view's columns begin with all of `old`'s, same names and types: what a
    /// schema change under a view must keep.
    pub fn starts_with(&self, old: &ViewSchema) -> bool {
        let k = old.columns.len();
        self.query_names.get(..k) == Some(&old.query_names[..]) && self.columns.get(..k) == Some(&old.columns[..])
    }
}

/// The views that read `relation` directly, in name order.
pub fn dependent_views<'c>(catalog: &'c Catalog, relation: &str) -> Vec<&'c ViewSchema> {
    catalog.views().filter(|v| v.depends_on.iter().any(|d| d == relation)).map(|v| &**v).collect()
}

/// Refuses a change to `relation` (`what`, e.g. "drop table t") while a view reads it: the
/// view's text would then mean something else or nothing (2BP01, as PostgreSQL).
pub fn check_no_dependent_views(catalog: &Catalog, relation: &str, what: &str) -> Result<()> {
    match dependent_views(catalog, relation).first() {
        None => Ok(()),
        Some(view) => err(
            SqlState::DependentObjectsStillExist,
            format!("cannot {what} because other objects depend on it (view {} depends on {relation})", view.name),
        ),
    }
}
