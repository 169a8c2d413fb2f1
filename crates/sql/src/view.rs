//! Views: named queries kept as SQL text in the catalog and expanded, as a derived table,
//! wherever a statement names them (docs/sql.md, "Views").
//!
//! A view stores its query's text, not a bound plan: replicas plan every statement from its
//! text against the catalog of the transaction's snapshot, and expanding a view the same way
//! keeps that deterministic. What the text gives must then not change under it: the catalog
//! refuses to drop a relation a view reads (`check_no_dependent_views`), and allows a schema
//! change of one (ALTER TABLE, CREATE OR REPLACE VIEW) only if every view reading it,
//! directly or not, still binds to the same first columns afterwards, by name and type
//! (`check_views_unchanged`). Columns a `*` gains after them are hidden when the view is
//! expanded, so the view keeps the columns it was created with, as in PostgreSQL. Unlike
//! PostgreSQL, which binds a view once, a name inside a view could in principle resolve
//! differently after a column is added elsewhere (docs/sql.md, "Views").

use crate::catalog::{Catalog, Column, MAX_NAME};
use crate::error::{err, Result, SqlError, SqlState};
pub use pistou_types::view::*;

fn name_ok(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME || name.contains('\0') {
        return err(SqlState::InvalidName, format!("invalid {what} name"));
    }
    Ok(())
}

/// Builds the view `definition` makes in `catalog` (not yet applied): binds its query to find
/// the columns and what it reads, and checks it as PostgreSQL's CREATE [OR REPLACE] VIEW does.
pub(crate) fn define(catalog: &Catalog, definition: &ViewDefinition) -> Result<ViewSchema> {
    let view = bind(catalog, definition)?;
    if let Some(old) = catalog.view(&view.name) {
        if !definition.replace {
            return err(SqlState::DuplicateTable, format!("relation \"{}\" already exists", view.name));
        }
        check_replacement(old, &view.columns)?;
    }
    Ok(view)
}

/// `view` after a table or view it reads was renamed from `from` to `to`
/// ([`crate::bind::rename_relation`]), bound again over `catalog` (where `to` exists): the
/// same view, identity and columns, with its text naming `to`.
pub(crate) fn rename_relation(catalog: &Catalog, view: &ViewSchema, from: &str, to: &str) -> Result<ViewSchema> {
    let query = crate::bind::rename_relation(&view.query, from, to)?;
    rebind(catalog, view, query).and_then(|renamed| {
        renamed.ok_or_else(|| {
            SqlError::new(
                SqlState::InternalError,
                format!("view \"{}\" would change its columns after renaming \"{from}\"", view.name),
            )
        })
    })
}

/// `view` after column `from` of `table`, which it reads, was renamed `to`
/// ([`crate::bind::rename_column`]), bound again over `catalog` (where the column is renamed):
/// the same columns. Refused (0A000) when another relation the view reads has a column of
/// either name, since then a reference's target could not be told from its text.
pub(crate) fn rename_column(
    catalog: &Catalog,
    view: &ViewSchema,
    table: &str,
    from: &str,
    to: &str,
) -> Result<ViewSchema> {
    // A view that does not read the column binds as before (a `*` expanded before the
    // column was added): it stays as it is.
    if bind(catalog, &definition_of(view, view.query.clone())).is_ok_and(|now| now.starts_with(view)) {
        return Ok(view.clone());
    }
    let has = |relation: &String, column: &str| {
        catalog.table(relation).is_some_and(|t| t.column_index(column).is_some())
            || catalog.view(relation).is_some_and(|v| v.columns.iter().any(|c| c.name == column))
    };
    if let Some(other) = view.depends_on.iter().find(|r| *r != table && (has(r, from) || has(r, to))) {
        return err(
            SqlState::FeatureNotSupported,
            format!(
                "renaming column \"{from}\" of \"{table}\" under view \"{}\", which also reads \"{other}\" with a column \"{from}\" or \"{to}\" (drop the view, rename, create it again)",
                view.name
            ),
        );
    }
    let query = crate::bind::rename_column(&view.query, from, to)?;
    rebind(catalog, view, query).and_then(|renamed| {
        renamed.ok_or_else(|| {
            SqlError::new(
                SqlState::FeatureNotSupported,
                format!("renaming column \"{from}\" would change the columns of view \"{}\"", view.name),
            )
        })
    })
}

/// `view` with its query text replaced, as a definition to bind.
fn definition_of(view: &ViewSchema, query: String) -> ViewDefinition {
    ViewDefinition { name: view.name.clone(), query, column_names: view.column_names.clone(), replace: true }
}

/// `view` with the text `query`, bound over `catalog`, keeping its identity; None when its
/// columns would change.
fn rebind(catalog: &Catalog, view: &ViewSchema, query: String) -> Result<Option<ViewSchema>> {
    let mut bound = bind(catalog, &definition_of(view, query))?;
    if bound.columns != view.columns {
        return Ok(None);
    }
    bound.id = view.id;
    Ok(Some(bound))
}

/// The view `definition` gives over `catalog`, whether or not one of its name exists.
fn bind(catalog: &Catalog, definition: &ViewDefinition) -> Result<ViewSchema> {
    let name = &definition.name;
    name_ok(name, "view")?;
    if definition.query.len() > MAX_VIEW_QUERY {
        return err(SqlState::ProgramLimitExceeded, format!("view query longer than {MAX_VIEW_QUERY} bytes"));
    }
    let (mut columns, depends_on) = crate::bind::view_query(catalog, &definition.query)?;
    if columns.len() > MAX_VIEW_COLUMNS {
        return err(SqlState::ProgramLimitExceeded, format!("views can have at most {MAX_VIEW_COLUMNS} columns"));
    }
    if definition.column_names.len() > columns.len() {
        return err(SqlState::SyntaxError, "CREATE VIEW specifies more column names than columns");
    }
    let query_names = columns.iter().map(|c| c.name.clone()).collect();
    for (column, new_name) in columns.iter_mut().zip(&definition.column_names) {
        column.name = new_name.clone();
    }
    for (i, column) in columns.iter().enumerate() {
        name_ok(&column.name, "column")?;
        if columns[..i].iter().any(|c| c.name == column.name) {
            return err(SqlState::DuplicateColumn, format!("column \"{}\" specified more than once", column.name));
        }
    }
    if reads_view(catalog, &depends_on, name) {
        return err(
            SqlState::InvalidObjectDefinition,
            format!("infinite recursion detected in rules for relation \"{name}\""),
        );
    }
    Ok(ViewSchema {
        name: name.clone(),
        id: 0,
        query: definition.query.clone(),
        column_names: definition.column_names.clone(),
        query_names,
        columns,
        depends_on,
    })
}

/// Whether reading `relations` reads the view `name`, directly or through other views.
fn reads_view(catalog: &Catalog, relations: &[String], name: &str) -> bool {
    // Views only read relations that existed when they were defined, and this check runs at
    // every definition: the graph has no cycle, so the walk ends. It is bounded anyway.
    let mut pending: Vec<&str> = relations.iter().map(String::as_str).collect();
    let mut visited = 0usize;
    while let Some(r) = pending.pop() {
        visited += 1;
        if r == name || visited > 100_000 {
            return true;
        }
        if let Some(v) = catalog.view(r) {
            pending.extend(v.depends_on.iter().map(String::as_str));
        }
    }
    false
}

/// CREATE OR REPLACE VIEW keeps the old columns (names and types, in order) and may add
/// columns after them, as in PostgreSQL.
fn check_replacement(old: &ViewSchema, new: &[Column]) -> Result<()> {
    if new.len() < old.columns.len() {
        return err(SqlState::InvalidTableDefinition, "cannot drop columns from view");
    }
    for (o, n) in old.columns.iter().zip(new) {
        if o.name != n.name {
            return err(
                SqlState::InvalidTableDefinition,
                format!("cannot change name of view column \"{}\" to \"{}\"", o.name, n.name),
            );
        }
        if o.ty != n.ty || o.limits != n.limits {
            return err(
                SqlState::InvalidTableDefinition,
                format!("cannot change data type of view column \"{}\" from {} to {}", o.name, o.ty, n.ty),
            );
        }
    }
    Ok(())
}

/// After a schema change of `relation` (`before` to `after`), every view that reads it,
/// directly or through other views, must still bind to the columns it has.
pub(crate) fn check_views_unchanged(before: &Catalog, after: &Catalog, relation: &str) -> Result<()> {
    let mut pending = vec![relation.to_string()];
    let mut checked: Vec<String> = Vec::new();
    while let Some(r) = pending.pop() {
        for view in dependent_views(before, &r) {
            if checked.contains(&view.name) {
                continue;
            }
            // A view the change rewrote (a renamed column) is checked in its new text.
            let text = after.view(&view.name).map_or(&view.query, |v| &v.query);
            let again = definition_of(view, text.clone());
            // A column the view names, or one its `*` gave it, that is gone: 2BP01, as
            // PostgreSQL's DROP COLUMN. Any other difference: not supported.
            let lost = match bind(after, &again) {
                Ok(now) if now.starts_with(view) => None,
                Ok(now) => Some(view.query_names.iter().any(|n| !now.query_names.contains(n))),
                Err(e) => Some(e.state == SqlState::UndefinedColumn),
            };
            match lost {
                None => {}
                Some(true) => {
                    return err(
                        SqlState::DependentObjectsStillExist,
                        format!("cannot change {relation} because view {} depends on its columns", view.name),
                    )
                }
                Some(false) => {
                    return err(
                        SqlState::FeatureNotSupported,
                        format!(
                            "a schema change of {relation} that changes what view {} reads is not supported (drop and re-create the view)",
                            view.name
                        ),
                    )
                }
            }
            checked.push(view.name.clone());
            pending.push(view.name.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CatalogChange;
    use crate::Database;

    fn db(statements: &[&str]) -> Database {
        let mut db = Database::new();
        for s in statements {
            db.execute(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        db
    }

    fn state(db: &mut Database, sql: &str) -> SqlState {
        db.execute(sql).map(|_| ()).expect_err(sql).state
    }

    fn view(name: &str, query: &str) -> CatalogChange {
        CatalogChange::CreateView(ViewDefinition {
            name: name.into(),
            query: query.into(),
            column_names: Vec::new(),
            replace: false,
        })
    }

    /// What a change carries is only text and names: the catalog binds the query itself, so
    /// a client cannot make a view whose columns or dependencies lie.
    #[test]
    fn a_definition_is_checked_where_it_is_applied() {
        let mut db = db(&["CREATE TABLE t (id INT PRIMARY KEY, v TEXT)"]);
        db.apply_catalog_change(&view("v", "SELECT id, v FROM t")).expect("a good definition");
        let v = db.catalog().view("v").expect("created");
        assert_eq!(v.depends_on, ["t"]);
        assert_eq!(v.columns.iter().map(|c| c.ty).collect::<Vec<_>>(), [crate::SqlType::Int4, crate::SqlType::Text]);
        for (change, expected) in [
            (view("w", "DELETE FROM t"), SqlState::SyntaxError),
            (view("w", "SELECT 1; SELECT 2"), SqlState::SyntaxError),
            (view("w", "SELECT nope FROM t"), SqlState::UndefinedColumn),
            (view("w", &format!("SELECT '{}'", "x".repeat(MAX_VIEW_QUERY))), SqlState::ProgramLimitExceeded),
            (view("", "SELECT 1"), SqlState::InvalidName),
            (view("w\0", "SELECT 1"), SqlState::InvalidName),
            (view("t", "SELECT 1"), SqlState::DuplicateTable),
            (view("v", "SELECT 1"), SqlState::DuplicateTable),
        ] {
            let e = db.apply_catalog_change(&change).expect_err("refused");
            assert_eq!(e.state, expected, "{change:?}: {e}");
        }
        let named = CatalogChange::CreateView(ViewDefinition {
            name: "w".into(),
            query: "SELECT 1, 2".into(),
            column_names: vec!["a".into(), "a".into()],
            replace: false,
        });
        assert_eq!(db.apply_catalog_change(&named).expect_err("duplicate").state, SqlState::DuplicateColumn);
    }

    /// The graph of views stays acyclic, so expanding one always ends.
    #[test]
    fn a_view_never_comes_to_read_itself() {
        let mut db = db(&[
            "CREATE VIEW a AS SELECT 1 AS x",
            "CREATE VIEW b AS SELECT x FROM a",
            "CREATE VIEW c AS SELECT x FROM b",
        ]);
        for sql in ["CREATE OR REPLACE VIEW a AS SELECT x FROM c", "CREATE OR REPLACE VIEW a AS SELECT 1 AS x FROM a"] {
            assert_eq!(state(&mut db, sql), SqlState::InvalidObjectDefinition, "{sql}");
        }
        db.execute("CREATE OR REPLACE VIEW a AS SELECT 2 AS x").expect("a replacement reading nothing");
        assert_eq!(db.execute("SELECT x FROM c").map(|_| ()), Ok(()));
    }

    /// A column added to the first table of a `*` over a join would shift the view's columns:
    /// refused. One added to the last table only adds a column, which the view hides.
    #[test]
    fn a_schema_change_must_keep_every_view_reading_it() {
        let mut db = db(&[
            "CREATE TABLE a (id INT PRIMARY KEY, x INT)",
            "CREATE TABLE b (k INT PRIMARY KEY, y INT)",
            "INSERT INTO a VALUES (1, 10)",
            "INSERT INTO b VALUES (1, 20)",
            "CREATE VIEW ab AS SELECT * FROM a JOIN b ON a.id = b.k",
            "CREATE VIEW over_ab AS SELECT y FROM ab",
        ]);
        assert_eq!(state(&mut db, "ALTER TABLE a ADD COLUMN z INT"), SqlState::FeatureNotSupported);
        assert_eq!(state(&mut db, "ALTER TABLE b ADD COLUMN x INT"), SqlState::FeatureNotSupported, "x twice");
        db.execute("ALTER TABLE b ADD COLUMN z INT DEFAULT 5").expect("appended after the view's columns");
        let out = db.execute("SELECT * FROM ab").expect("read");
        let crate::Output::Rows { rows, .. } = out else { panic!("rows") };
        assert_eq!(rows.first().map(Vec::len), Some(4), "the view keeps its four columns");
        assert_eq!(state(&mut db, "SELECT z FROM ab"), SqlState::UndefinedColumn);
        db.execute("ALTER TABLE b RENAME COLUMN z TO zz").expect("a column no view reads");
        assert_eq!(state(&mut db, "ALTER TABLE b DROP COLUMN y"), SqlState::DependentObjectsStillExist);
        assert_eq!(state(&mut db, "ALTER TABLE b RENAME COLUMN y TO w"), SqlState::FeatureNotSupported, "ab has *");
        assert_eq!(state(&mut db, "DROP VIEW ab"), SqlState::DependentObjectsStillExist, "over_ab reads it");
        db.execute("DROP VIEW over_ab").expect("drop");
        db.execute("DROP VIEW ab").expect("drop");
        db.execute("ALTER TABLE a ADD COLUMN z INT").expect("no view reads a any more");
    }

    #[test]
    fn a_sequence_a_view_reads_cannot_be_dropped() {
        let mut db = db(&["CREATE SEQUENCE s", "CREATE VIEW next_s AS SELECT nextval('s') AS n"]);
        assert_eq!(state(&mut db, "DROP SEQUENCE s"), SqlState::DependentObjectsStillExist);
        assert_eq!(db.catalog().view("next_s").map(|v| v.depends_on.clone()), Some(vec!["s".to_string()]));
    }
}
