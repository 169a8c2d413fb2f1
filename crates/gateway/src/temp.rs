//! Temporary tables: PostgreSQL's `pg_temp` schema of one session.
//!
//! A temporary table is an ordinary table of the cluster whose catalog name carries the
//! session's namespace, `pg_temp_<gateway client>_<gateway run>_<session>.` (docs/gateway.md,
//! "Temporary tables"). Its rows are replicated and checked like any other table's; what is
//! private to the session is the name. The gateway rewrites each statement of a session that
//! has temporary tables: a relation name the session created as temporary (or written
//! `pg_temp.x`) becomes the namespaced name, shadowing a permanent table of the same name, as
//! `pg_temp` comes first on PostgreSQL's search path. Every name that belongs to a temporary
//! table — its indexes, sequences and constraints — carries the namespace, so the names of two
//! sessions never clash, and error messages show them without it.

use crate::errors::{self, PgError};
use sqlparser::ast::Value as SqlValue;
use sqlparser::ast::{
    AlterIndexOperation, AlterTableOperation, ColumnDef, ColumnOption, CopySource, Expr, ForeignKeyConstraint,
    FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart, ObjectType, OnCommit, Query,
    RenameTableNameKind, SetExpr, Statement, TableAlias, TableConstraint, TableFactor, VisitMut, VisitorMut,
};
use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The prefix of every temporary namespace; SQL cannot create a relation whose name starts
/// with it and holds a dot (`TempSchema::rewrite` refuses it), so no permanent relation is
/// ever mistaken for another session's temporary one.
pub const TEMP_NAMESPACE_PREFIX: &str = "pg_temp_";

/// Sessions started by this gateway process.
static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// This gateway process's run, drawn once: namespaces of a run that ended without dropping
/// its tables (a crash) differ from the current run's, so they can be found and dropped
/// (`orphan_namespace`).
fn run_id() -> u32 {
    static RUN: OnceLock<u32> = OnceLock::new();
    *RUN.get_or_init(rand::random)
}

/// Is `relation` (a catalog name) in a temporary namespace of an earlier run of the gateway
/// whose client id is `client`?
pub fn orphan_namespace(relation: &str, client: u64) -> bool {
    let Some(rest) = relation.strip_prefix(&format!("{TEMP_NAMESPACE_PREFIX}{client}_")) else { return false };
    let Some((namespace, _)) = rest.split_once('.') else { return false };
    let run = namespace.split('_').next().and_then(|r| u32::from_str_radix(r, 16).ok());
    run != Some(run_id())
}

/// The statements that drop the relations of `catalog` whose catalog names `drop` picks:
/// views first, each before the views it reads, then tables.
pub fn drop_statements(catalog: &pistou_sql::Catalog, drop: impl Fn(&str) -> bool) -> Vec<String> {
    use pistou_sql::view::ViewSchema;
    let quote = pistou_sql::system::quote_ident;
    let mut views: Vec<&ViewSchema> = catalog.views().map(|v| &**v).filter(|v| drop(&v.name)).collect();
    let mut statements = Vec::new();
    let drop_view = |v: &ViewSchema| format!("DROP VIEW IF EXISTS {}", quote(&v.name));
    while !views.is_empty() {
        let read_by_another = |name: &str| views.iter().any(|v| v.depends_on.iter().any(|d| d == name));
        let (free, rest): (Vec<&ViewSchema>, Vec<&ViewSchema>) = views.iter().partition(|v| !read_by_another(&v.name));
        if free.is_empty() {
            break; // a cycle, which the catalog does not allow; the drops below report it
        }
        statements.extend(free.into_iter().map(drop_view));
        views = rest;
    }
    statements.extend(views.into_iter().map(drop_view));
    let tables = catalog.tables().filter(|t| drop(&t.name));
    statements.extend(tables.map(|t| format!("DROP TABLE IF EXISTS {}", quote(&t.name))));
    statements
}

/// What a statement does to the session's temporary relations, known once it succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TempEffect {
    created: Vec<String>,
    dropped: Vec<String>,
    /// Created with `ON COMMIT DROP`.
    drop_at_commit: Vec<String>,
    /// Created with `ON COMMIT DELETE ROWS`.
    delete_rows: Vec<String>,
    /// Temporary relations a statement that may write names.
    written: Vec<String>,
    /// The statement may have changed which indexes the session's tables have.
    indexes_changed: bool,
}

impl TempEffect {
    /// Does the statement call for [`TempSchema::learn_indexes`] once it succeeded?
    pub fn indexes_changed(&self) -> bool {
        self.indexes_changed
    }
}

/// The session's temporary relations, as a block or a savepoint restores them.
#[derive(Clone, Debug, Default)]
struct Names {
    /// Names (as SQL sees them) of the session's temporary tables and named indexes.
    relations: BTreeSet<String>,
    /// Tables to drop when the transaction that created them commits.
    drop_at_commit: BTreeSet<String>,
    /// Tables created `ON COMMIT DELETE ROWS`.
    delete_rows: BTreeSet<String>,
    /// Indexes of the session's tables named by the engine, not by a statement (`t_pkey`,
    /// `t_x_key`, `t_x_idx`), as the catalog last showed them.
    derived_indexes: BTreeSet<String>,
}

/// One session's temporary relations.
pub struct TempSchema {
    /// `pg_temp_<client>_<run>_<session>` (no dot).
    namespace: String,
    names: Names,
    /// `names` when the block began, and at each savepoint (restored on rollback).
    at_begin: Option<Names>,
    savepoints: Vec<(String, Names)>,
    /// `ON COMMIT DELETE ROWS` tables written since the last commit: their rows go once the
    /// transaction commits.
    rows_to_delete: BTreeSet<String>,
    /// A statement creating a temporary relation was rewritten (it may have run).
    creating: std::cell::Cell<bool>,
}

impl TempSchema {
    pub fn new(client: u64) -> TempSchema {
        let session = SESSIONS.fetch_add(1, Ordering::Relaxed) + 1;
        TempSchema {
            namespace: format!("{TEMP_NAMESPACE_PREFIX}{client}_{:x}_{session}", run_id()),
            names: Names::default(),
            at_begin: None,
            savepoints: Vec::new(),
            rows_to_delete: BTreeSet::new(),
            creating: std::cell::Cell::new(false),
        }
    }

    /// The catalog name of the session's temporary relation `name`.
    fn qualified(&self, name: &str) -> String {
        format!("{}.{name}", self.namespace)
    }

    /// The session's namespace followed by a dot: what catalog names of its relations start with.
    pub fn prefix(&self) -> String {
        format!("{}.", self.namespace)
    }

    /// May the session's namespace hold tables (even ones whose creation's outcome was
    /// unknown)?
    pub fn ever_used(&self) -> bool {
        self.creating.get()
    }

    /// `text` (an error or notice) with the session's namespace taken out of names.
    pub fn unqualify(&self, text: &str) -> String {
        if self.names.relations.is_empty() && self.names.drop_at_commit.is_empty() {
            return text.to_string();
        }
        text.replace(&self.prefix(), "")
    }

    /// `sql` with the session's temporary relations named by their catalog names, and what
    /// it will do to them. Statements that cannot name a temporary relation are returned
    /// unchanged without being parsed.
    pub fn rewrite(&self, sql: &str) -> Result<(Option<String>, TempEffect), PgError> {
        if self.names.relations.is_empty() && !mentions_temp(sql) {
            return Ok((None, TempEffect::default()));
        }
        let parsed = crate::route::with_parsed(sql, |parsed| parsed.map_err(|e| e.to_string()));
        let statement = match parsed {
            Some(Ok(mut statements)) if statements.len() == 1 => statements.pop(),
            _ => None,
        };
        let Some(mut statement) = statement else {
            return match self.named_in_text(sql) {
                Some(name) => Err(PgError::new(
                    errors::FEATURE_NOT_SUPPORTED,
                    format!(
                        "a statement naming temporary relation \"{name}\" that the gateway cannot parse \
                         (it must resolve the name to the session's table first)"
                    ),
                )),
                None => Ok((None, TempEffect::default())),
            };
        };
        let original = statement.clone();
        let effect = self.rewrite_statement(&mut statement)?;
        if !effect.created.is_empty() {
            self.creating.set(true);
        }
        // Text naming no temporary relation runs as the client wrote it.
        if statement == original {
            return Ok((None, effect));
        }
        Ok((Some(statement.to_string()), effect))
    }

    /// A temporary relation the text names as a word, if any (for text that does not parse).
    fn named_in_text(&self, sql: &str) -> Option<String> {
        let lower = sql.to_ascii_lowercase();
        if lower.contains("temp") {
            return Some("pg_temp".into());
        }
        lower
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .find(|word| self.names.relations.contains(*word))
            .map(str::to_string)
    }

    fn rewrite_statement(&self, statement: &mut Statement) -> Result<TempEffect, PgError> {
        let mut effect = TempEffect::default();
        // The name a CREATE gives is resolved by the statement's kind, not by the visitor
        // (CREATE TABLE without TEMP makes a permanent table even where a temporary one
        // shadows its name): it is set aside while the rest is resolved.
        let created = match statement {
            Statement::CreateTable(c) => Some(std::mem::replace(&mut c.name, ObjectName(Vec::new()))),
            Statement::CreateView(v) => Some(std::mem::replace(&mut v.name, ObjectName(Vec::new()))),
            _ => None,
        };
        let mut visitor = Resolve { schema: self, ctes: Vec::new(), error: None, named: BTreeSet::new() };
        let _ = statement.visit(&mut visitor);
        if let Some(e) = visitor.error {
            return Err(e);
        }
        if crate::read_only::writes(statement).is_some() {
            effect.written.extend(visitor.named.iter().cloned());
        }
        match (statement, created) {
            (Statement::CreateTable(c), Some(name)) => {
                let temporary = c.temporary || self.names_temporary(&name);
                if !temporary {
                    c.name = name;
                    self.resolve_foreign_keys(table_foreign_keys(&mut c.constraints), false)?;
                    self.resolve_foreign_keys(column_foreign_keys(&mut c.columns), false)?;
                    return Ok(effect);
                }
                let plain = plain_name(&name)?;
                c.temporary = false;
                // PostgreSQL accepts GLOBAL and ignores it (with a warning).
                c.global = None;
                c.name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                match c.on_commit.take() {
                    None | Some(OnCommit::PreserveRows) => {}
                    Some(OnCommit::Drop) => effect.drop_at_commit.push(plain.clone()),
                    Some(OnCommit::DeleteRows) => {
                        effect.delete_rows.push(plain.clone());
                        // CREATE TABLE AS writes the query's rows, which go at its commit too.
                        if c.query.is_some() {
                            effect.written.push(plain.clone());
                        }
                    }
                }
                self.resolve_foreign_keys(table_foreign_keys(&mut c.constraints), true)?;
                self.resolve_foreign_keys(column_foreign_keys(&mut c.columns), true)?;
                self.qualify_constraint_names(c);
                effect.created.push(plain);
                effect.indexes_changed = true;
            }
            // A view reading a temporary relation is temporary, as in PostgreSQL.
            (Statement::CreateView(v), Some(name)) => {
                if !(v.temporary || !visitor.named.is_empty() || self.names_temporary(&name)) {
                    v.name = name;
                    return Ok(effect);
                }
                let plain = plain_name(&name)?;
                v.temporary = false;
                v.name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                effect.created.push(plain);
            }
            (Statement::CreateIndex(c), _) if self.is_own(&c.table_name) => {
                effect.indexes_changed = true;
                if let Some(name) = &mut c.name {
                    let plain = plain_name(name)?;
                    *name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                    effect.created.push(plain);
                }
            }
            (Statement::AlterTable(a), _) if self.is_own(&a.name) => {
                effect.indexes_changed = true;
                let table = plain_name(&ObjectName::from(vec![Ident::new(self.unqualified_name(&a.name))]))?;
                for op in &mut a.operations {
                    match op {
                        AlterTableOperation::RenameTable {
                            table_name: RenameTableNameKind::To(to) | RenameTableNameKind::As(to),
                        } => {
                            let plain = plain_name(to)?;
                            *to = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                            effect.dropped.push(table.clone());
                            effect.created.push(plain);
                        }
                        AlterTableOperation::AddConstraint { constraint, .. } => {
                            self.resolve_foreign_keys(table_foreign_keys(std::slice::from_mut(constraint)), true)?;
                            self.qualify_constraint(constraint);
                        }
                        _ => {}
                    }
                }
            }
            (Statement::AlterIndex { name, operation: AlterIndexOperation::RenameIndex { index_name } }, _)
                if self.is_own(name) =>
            {
                let old = self.unqualified_name(name);
                let plain = plain_name(index_name)?;
                *index_name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                effect.dropped.push(old);
                effect.created.push(plain);
            }
            (
                Statement::Drop {
                    object_type: ObjectType::Table | ObjectType::Index | ObjectType::View, names, ..
                },
                _,
            ) => {
                for name in names.iter_mut() {
                    if let Some(plain) = self.resolve(name)? {
                        *name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                        effect.dropped.push(plain);
                        effect.indexes_changed = true;
                    }
                }
            }
            (Statement::Copy { source: CopySource::Table { table_name, .. }, to, .. }, _) => {
                if let Some(plain) = self.resolve(table_name)? {
                    *table_name = ObjectName::from(vec![quoted(&self.qualified(&plain))]);
                    if !*to {
                        effect.written.push(plain);
                    }
                }
            }
            (Statement::Query(query), _) => self.select_into(query, &mut effect)?,
            _ => {}
        }
        Ok(effect)
    }

    /// `SELECT … INTO [TEMP] t`: a temporary target is the session's; a plain one is permanent.
    fn select_into(&self, query: &mut Query, effect: &mut TempEffect) -> Result<(), PgError> {
        let SetExpr::Select(select) = &mut *query.body else { return Ok(()) };
        let Some(into) = &mut select.into else { return Ok(()) };
        if !into.temporary {
            return Ok(());
        }
        let [target] = into.targets.as_mut_slice() else { return Ok(()) };
        let name = match target {
            Expr::Identifier(i) => ObjectName::from(vec![i.clone()]),
            Expr::CompoundIdentifier(parts) => ObjectName::from(parts.clone()),
            _ => return Ok(()),
        };
        let plain = plain_name(&name)?;
        *target = Expr::Identifier(quoted(&self.qualified(&plain)));
        into.temporary = false;
        effect.created.push(plain);
        Ok(())
    }

    /// Index-backed constraint names of a temporary table carry the namespace, as its
    /// derived names do.
    fn qualify_constraint_names(&self, c: &mut sqlparser::ast::CreateTable) {
        for constraint in &mut c.constraints {
            self.qualify_constraint(constraint);
        }
        for column in &mut c.columns {
            for option in &mut column.options {
                if let (Some(name), ColumnOption::Unique(_) | ColumnOption::PrimaryKey(_)) =
                    (&mut option.name, &option.option)
                {
                    *name = quoted(&self.qualified(&ident_value(name)));
                }
            }
        }
    }

    /// A UNIQUE or PRIMARY KEY constraint names an index, and index names are shared by
    /// every session; CHECK and FOREIGN KEY names are the table's own.
    fn qualify_constraint(&self, constraint: &mut TableConstraint) {
        let name = match constraint {
            TableConstraint::Unique(c) => &mut c.name,
            TableConstraint::PrimaryKey(c) => &mut c.name,
            _ => return,
        };
        if let Some(n) = name {
            *n = quoted(&self.qualified(&ident_value(n)));
        }
    }

    /// Foreign keys of a table being defined: a temporary table's may reference only
    /// temporary tables (resolved to the session's), a permanent table's only permanent
    /// ones, as in PostgreSQL.
    fn resolve_foreign_keys<'c>(
        &self,
        foreign_keys: impl Iterator<Item = &'c mut ForeignKeyConstraint>,
        temporary: bool,
    ) -> Result<(), PgError> {
        for fk in foreign_keys {
            match (self.resolve(&fk.foreign_table)?, temporary) {
                (Some(plain), true) => fk.foreign_table = ObjectName::from(vec![quoted(&self.qualified(&plain))]),
                (None, false) => {}
                (None, true) => {
                    return Err(PgError::new(
                        "42P16",
                        "constraints on temporary tables may reference only temporary tables",
                    ))
                }
                (Some(_), false) => {
                    return Err(PgError::new(
                        "42P16",
                        "constraints on permanent tables may reference only permanent tables",
                    ))
                }
            }
        }
        Ok(())
    }

    /// Is `name` (possibly already rewritten) one of the session's temporary relations?
    fn is_own(&self, name: &ObjectName) -> bool {
        let parts = parts(name);
        match parts.as_slice() {
            [only] => only.strip_prefix(&self.prefix()).is_some(),
            _ => false,
        }
    }

    fn unqualified_name(&self, name: &ObjectName) -> String {
        let parts = parts(name);
        let last = parts.last().cloned().unwrap_or_default();
        last.strip_prefix(&self.prefix()).map(str::to_string).unwrap_or(last)
    }

    /// Does the name a CREATE TABLE without TEMP gives put it in pg_temp (`pg_temp.t`)?
    fn names_temporary(&self, name: &ObjectName) -> bool {
        matches!(parts(name).as_slice(), [schema, _] if schema == "pg_temp" || *schema == self.namespace)
    }

    /// The temporary relation `name` refers to, by the session's search path (pg_temp
    /// first): None for a permanent one. Another session's namespace is refused, as in
    /// PostgreSQL.
    fn resolve(&self, name: &ObjectName) -> Result<Option<String>, PgError> {
        let parts = parts(name);
        match parts.as_slice() {
            [only] => {
                if let Some(own) = only.strip_prefix(&self.prefix()) {
                    return Ok(Some(own.to_string()));
                }
                if only.starts_with(TEMP_NAMESPACE_PREFIX) && only.contains('.') {
                    return Err(other_sessions());
                }
                let own = self.names.relations.contains(only) || self.names.derived_indexes.contains(only);
                Ok(own.then(|| only.clone()))
            }
            [schema, relation] if schema == "pg_temp" || *schema == self.namespace => Ok(Some(relation.clone())),
            [schema, _] if schema.starts_with(TEMP_NAMESPACE_PREFIX) => Err(other_sessions()),
            _ => Ok(None),
        }
    }

    /// The session's sequence a sequence function's text names (`'t_id_seq'`,
    /// `'pg_temp.t_id_seq'`, `'"T_id_seq"'`), by its SQL name: the sequence of a SERIAL
    /// column of a temporary table is named `<table>_<column>_seq` (the engine's rule), so a
    /// name of that form for one of the session's tables is the session's, as pg_temp comes
    /// first on the search path.
    fn own_sequence(&self, text: &str) -> Option<String> {
        let (explicit, name) = match text.strip_prefix("pg_temp.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => name.to_lowercase(),
        };
        let derived = name.strip_suffix("_seq").is_some_and(|stem| {
            self.names.relations.iter().any(|t| stem.strip_prefix(t.as_str()).is_some_and(|rest| rest.starts_with('_')))
        });
        (explicit || derived || self.names.relations.contains(&name)).then_some(name)
    }

    /// Records what a statement that succeeded did.
    pub fn applied(&mut self, effect: TempEffect) {
        let names = &mut self.names;
        for name in effect.dropped {
            names.relations.remove(&name);
            names.drop_at_commit.remove(&name);
            names.delete_rows.remove(&name);
        }
        names.drop_at_commit.extend(effect.drop_at_commit);
        names.delete_rows.extend(effect.delete_rows);
        names.relations.extend(effect.created);
        let written = effect.written.into_iter().filter(|name| names.delete_rows.contains(name));
        self.rows_to_delete.extend(written);
    }

    /// The catalog's index names (after a statement that changed the session's indexes):
    /// those in the session's namespace that no statement named are the engine's derived
    /// names, which later statements may name too (`DROP INDEX t_x_key`).
    pub fn learn_indexes<'a>(&mut self, indexes: impl Iterator<Item = &'a str>) {
        let prefix = self.prefix();
        let derived =
            indexes.filter_map(|name| name.strip_prefix(&prefix)).filter(|n| !self.names.relations.contains(*n));
        self.names.derived_indexes = derived.map(str::to_string).collect();
    }

    /// Its tables were all dropped (DISCARD).
    pub fn forget_all(&mut self) {
        self.names = Names::default();
        self.rows_to_delete.clear();
        self.creating.set(false);
    }

    /// A transaction block began.
    pub fn begin(&mut self) {
        self.at_begin = Some(self.names.clone());
        self.savepoints.clear();
    }

    /// The block ended: a block that did not commit created, dropped and wrote nothing.
    pub fn ended(&mut self, committed: bool) {
        self.savepoints.clear();
        if !committed {
            self.rows_to_delete.clear();
        }
        if let Some(names) = self.at_begin.take() {
            if !committed {
                self.names = names;
            }
        }
    }

    /// Catalog names of the tables created `ON COMMIT DROP` by transactions that have
    /// committed (call outside a block only), forgotten here.
    pub fn take_commit_drops(&mut self) -> Vec<String> {
        let drops = std::mem::take(&mut self.names.drop_at_commit);
        drops
            .into_iter()
            .map(|name| {
                self.names.relations.remove(&name);
                self.names.delete_rows.remove(&name);
                self.qualified(&name)
            })
            .collect()
    }

    /// Catalog names of the `ON COMMIT DELETE ROWS` tables written by transactions that have
    /// committed (call outside a block only): their rows are to be deleted.
    pub fn take_rows_to_delete(&mut self) -> Vec<String> {
        let written = std::mem::take(&mut self.rows_to_delete);
        written
            .into_iter()
            .filter(|name| self.names.delete_rows.contains(name))
            .map(|name| self.qualified(&name))
            .collect()
    }

    pub fn savepoint(&mut self, name: &str) {
        self.savepoints.push((name.to_string(), self.names.clone()));
    }

    /// RELEASE: the savepoint and later ones go; what happened since stays.
    pub fn release(&mut self, name: &str) {
        if let Some(at) = self.savepoints.iter().rposition(|(n, ..)| n == name) {
            self.savepoints.truncate(at);
        }
    }

    /// ROLLBACK TO: back to the relations at the savepoint, which stays.
    pub fn rollback_to(&mut self, name: &str) {
        if let Some(at) = self.savepoints.iter().rposition(|(n, ..)| n == name) {
            self.savepoints.truncate(at + 1);
            if let Some((_, names)) = self.savepoints.last() {
                self.names = names.clone();
            }
        }
    }

    /// Is `relation` (a catalog name) in the session's namespace?
    pub fn is_own_relation(&self, relation: &str) -> bool {
        relation.strip_prefix(&self.namespace).is_some_and(|rest| rest.starts_with('.'))
    }
}

/// Resolves relation names in place (pg_temp first), keeping what qualified the old name
/// working through an alias.
struct Resolve<'a> {
    schema: &'a TempSchema,
    /// WITH items in scope, innermost last: they shadow tables of their name.
    ctes: Vec<Vec<String>>,
    error: Option<PgError>,
    /// The session's temporary relations the statement names.
    named: BTreeSet<String>,
}

impl Resolve<'_> {
    fn shadowed(&self, name: &ObjectName) -> bool {
        matches!(parts(name).as_slice(), [only] if self.ctes.iter().flatten().any(|c| c == only))
    }

    fn resolve(&mut self, name: &mut ObjectName) -> Option<String> {
        if self.shadowed(name) {
            return None;
        }
        match self.schema.resolve(name) {
            Ok(Some(plain)) => {
                *name = ObjectName::from(vec![quoted(&self.schema.qualified(&plain))]);
                self.named.insert(plain.clone());
                Some(plain)
            }
            Ok(None) => None,
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

impl VisitorMut for Resolve<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let names = query.with.iter().flat_map(|w| &w.cte_tables).map(|c| ident_value(&c.alias.name)).collect();
        self.ctes.push(names);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.ctes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, args: None, .. } = factor {
            let last = parts(name).last().cloned();
            if let (Some(_), Some(last)) = (self.resolve(name), last) {
                if alias.is_none() {
                    *alias = Some(TableAlias { explicit: true, name: quoted(&last), columns: Vec::new(), at: None });
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<()> {
        self.resolve(relation);
        ControlFlow::Continue(())
    }

    /// Functions that name relations: `pg_table_is_visible(oid)` sees the session's own
    /// temporary relations (the engine's two-argument form names the namespace; other
    /// sessions' are never visible), and a sequence function's text naming one of the
    /// session's sequences names it by its catalog name.
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(f) = expr else { return ControlFlow::Continue(()) };
        let name = parts(&f.name);
        let function = match name.as_slice() {
            [n] => n.as_str(),
            [schema, n] if schema == "pg_catalog" => n.as_str(),
            _ => return ControlFlow::Continue(()),
        };
        let FunctionArguments::List(list) = &mut f.args else { return ControlFlow::Continue(()) };
        match function {
            "pg_table_is_visible" if list.args.len() == 1 => {
                let namespace = Expr::value(SqlValue::SingleQuotedString(self.schema.namespace.clone()));
                list.args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(namespace)));
            }
            "nextval" | "currval" | "setval" => {
                let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) = list.args.first_mut() else {
                    return ControlFlow::Continue(());
                };
                let SqlValue::SingleQuotedString(text) = &mut v.value else { return ControlFlow::Continue(()) };
                if let Some(own) = self.schema.own_sequence(text) {
                    *text = format!("\"{}\"", self.schema.qualified(&own));
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

fn other_sessions() -> PgError {
    PgError::new(errors::FEATURE_NOT_SUPPORTED, "cannot access temporary tables of other sessions")
}

/// Might `sql` create or name a temporary relation? (`TEMP`, `TEMPORARY`, `pg_temp`, in
/// any case.) Cheap: statements of sessions without temporary tables pass through unparsed
/// unless this holds.
fn mentions_temp(sql: &str) -> bool {
    sql.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"temp"))
}

fn table_foreign_keys(constraints: &mut [TableConstraint]) -> impl Iterator<Item = &mut ForeignKeyConstraint> {
    constraints.iter_mut().filter_map(|c| match c {
        TableConstraint::ForeignKey(fk) => Some(fk),
        _ => None,
    })
}

fn column_foreign_keys(columns: &mut [ColumnDef]) -> impl Iterator<Item = &mut ForeignKeyConstraint> {
    columns.iter_mut().flat_map(|c| &mut c.options).filter_map(|o| match &mut o.option {
        ColumnOption::ForeignKey(fk) => Some(fk),
        _ => None,
    })
}

fn ident_value(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

fn quoted(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

fn parts(name: &ObjectName) -> Vec<String> {
    name.0.iter().filter_map(ObjectNamePart::as_ident).map(ident_value).collect()
}

/// The unqualified name of a relation a statement creates in pg_temp (`t` or `pg_temp.t`).
fn plain_name(name: &ObjectName) -> Result<String, PgError> {
    match parts(name).as_slice() {
        [only] => Ok(only.clone()),
        [schema, relation] if schema == "pg_temp" || schema.starts_with(TEMP_NAMESPACE_PREFIX) => Ok(relation.clone()),
        _ => Err(PgError::new("42P16", "cannot create temporary relation in non-temporary schema")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session (client 7) that created temporary table `t` (and index `i`).
    fn session() -> TempSchema {
        let mut temp = TempSchema::new(7);
        let (_, effect) = temp.rewrite("CREATE TEMP TABLE t (id INT PRIMARY KEY)").unwrap();
        temp.applied(effect);
        let (_, effect) = temp.rewrite("CREATE INDEX i ON t (id)").unwrap();
        temp.applied(effect);
        temp
    }

    fn rewritten(temp: &TempSchema, sql: &str) -> String {
        let (text, _) = temp.rewrite(sql).unwrap();
        text.unwrap_or_else(|| sql.to_string()).replace(&temp.prefix(), "~")
    }

    #[test]
    fn names_resolve_to_the_sessions_table_first() {
        let temp = session();
        assert_eq!(rewritten(&temp, "SELECT t.id FROM t"), "SELECT t.id FROM \"~t\" AS \"t\"");
        assert_eq!(rewritten(&temp, "SELECT * FROM public.t"), "SELECT * FROM public.t");
        assert_eq!(rewritten(&temp, "SELECT * FROM pg_temp.t x"), "SELECT * FROM \"~t\" x");
        assert_eq!(rewritten(&temp, "INSERT INTO t VALUES (1)"), "INSERT INTO \"~t\" VALUES (1)");
        assert_eq!(rewritten(&temp, "DROP INDEX i"), "DROP INDEX \"~i\"");
        assert_eq!(rewritten(&temp, "DROP TABLE u, t"), "DROP TABLE u, \"~t\"");
        // Sequence functions name the session's sequences; pg_table_is_visible sees the namespace.
        assert_eq!(rewritten(&temp, "SELECT nextval('t_id_seq')"), "SELECT nextval('\"~t_id_seq\"')");
        assert_eq!(rewritten(&temp, "SELECT currval('pg_temp.T_ID_SEQ')"), "SELECT currval('\"~t_id_seq\"')");
        assert_eq!(rewritten(&temp, "SELECT nextval('tx_id_seq')"), "SELECT nextval('tx_id_seq')");
        assert_eq!(rewritten(&temp, "SELECT nextval('u_id_seq')"), "SELECT nextval('u_id_seq')");
        let visible = rewritten(&temp, "SELECT pg_table_is_visible(1)");
        assert_eq!(visible, format!("SELECT pg_table_is_visible(1, '{}')", temp.namespace));
        // A WITH item of the name shadows the table within its query only.
        assert_eq!(
            rewritten(&temp, "SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) q, t"),
            "SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) q, \"~t\" AS \"t\""
        );
        // CREATE TABLE without TEMP makes a permanent table whatever shadows its name, and
        // text naming no temporary relation is left as written.
        assert_eq!(temp.rewrite("CREATE TABLE t (a   INT)").unwrap(), (None, TempEffect::default()));
        assert_eq!(temp.rewrite("SELECT 'temp'  FROM u").unwrap(), (None, TempEffect::default()));
        // Sessions without temporary tables pass statements through unparsed.
        let fresh = TempSchema::new(7);
        assert_eq!(fresh.rewrite("SELECT * FROM t").unwrap(), (None, TempEffect::default()));
    }

    #[test]
    fn other_sessions_namespaces_and_misplaced_names_are_refused() {
        let temp = session();
        let code = |sql: &str| temp.rewrite(sql).map(|_| ()).unwrap_err().code;
        assert_eq!(code("SELECT * FROM pg_temp_1_2_3.t"), "0A000");
        assert_eq!(code("SELECT * FROM \"pg_temp_1_2_3.t\""), "0A000");
        assert_eq!(code("CREATE TEMP TABLE public.x (a INT)"), "42P16");
        assert_eq!(code("CREATE VIEW public.v AS SELECT * FROM t"), "42P16");
        assert_eq!(code("CREATE TABLE p (a INT REFERENCES t)"), "42P16");
        assert_eq!(code("CREATE TEMP TABLE c (a INT REFERENCES public.p)"), "42P16");
        // Text the gateway cannot parse may not name a temporary table.
        assert_eq!(code("SELECT * FROM t WHERE ((("), "0A000");
        assert!(temp.rewrite("SELECT * FROM u WHERE (((").is_ok());
    }

    #[test]
    fn blocks_and_savepoints_undo_what_they_created() {
        let mut temp = session();
        temp.begin();
        let (_, effect) = temp.rewrite("CREATE TEMP TABLE b (a INT) ON COMMIT DROP").unwrap();
        temp.applied(effect);
        temp.savepoint("s");
        let (_, effect) = temp.rewrite("CREATE TEMP TABLE c (a INT)").unwrap();
        temp.applied(effect);
        temp.rollback_to("s");
        assert!(rewritten(&temp, "SELECT * FROM c").ends_with("FROM c"));
        assert!(rewritten(&temp, "SELECT * FROM b").contains("~b"));
        temp.ended(false);
        assert!(rewritten(&temp, "SELECT * FROM b").ends_with("FROM b"));
        assert!(temp.take_commit_drops().is_empty());
        // Committed: ON COMMIT DROP tables are handed over to be dropped, and forgotten.
        temp.begin();
        let (_, effect) = temp.rewrite("CREATE TEMP TABLE b (a INT) ON COMMIT DROP").unwrap();
        temp.applied(effect);
        temp.ended(true);
        assert_eq!(temp.take_commit_drops(), vec![format!("{}b", temp.prefix())]);
        assert!(rewritten(&temp, "SELECT * FROM b").ends_with("FROM b"));
    }

    /// `ON COMMIT DELETE ROWS`: the rows of a table a committed transaction wrote go; reads,
    /// rolled-back blocks and dropped tables leave nothing to delete.
    #[test]
    fn rows_written_to_delete_rows_tables_go_at_commit() {
        let mut temp = session();
        let apply = |temp: &mut TempSchema, sql: &str| {
            let (_, effect) = temp.rewrite(sql).unwrap();
            temp.applied(effect);
        };
        apply(&mut temp, "CREATE TEMP TABLE d (a INT) ON COMMIT DELETE ROWS");
        let d = vec![format!("{}d", temp.prefix())];
        assert!(temp.take_rows_to_delete().is_empty());
        apply(&mut temp, "INSERT INTO d VALUES (1)");
        apply(&mut temp, "INSERT INTO t VALUES (1)");
        assert_eq!(temp.take_rows_to_delete(), d);
        assert!(temp.take_rows_to_delete().is_empty());
        apply(&mut temp, "SELECT * FROM d JOIN t ON true");
        assert!(temp.take_rows_to_delete().is_empty());
        apply(&mut temp, "WITH x AS (DELETE FROM t RETURNING id) SELECT * FROM x, d");
        assert_eq!(temp.take_rows_to_delete(), d);
        apply(&mut temp, "COPY d FROM STDIN");
        assert_eq!(temp.take_rows_to_delete(), d);
        temp.begin();
        apply(&mut temp, "UPDATE d SET a = 2");
        temp.ended(false);
        assert!(temp.take_rows_to_delete().is_empty());
        temp.begin();
        apply(&mut temp, "DELETE FROM d");
        temp.ended(true);
        assert_eq!(temp.take_rows_to_delete(), d);
        apply(&mut temp, "CREATE TEMP TABLE e ON COMMIT DELETE ROWS AS SELECT 1 AS a");
        assert_eq!(temp.take_rows_to_delete(), vec![format!("{}e", temp.prefix())]);
        apply(&mut temp, "INSERT INTO d VALUES (1)");
        apply(&mut temp, "DROP TABLE d");
        assert!(temp.take_rows_to_delete().is_empty());
    }

    /// Indexes the engine named (`t_pkey`, `t_a_key`) resolve to the session's once the
    /// catalog showed them, and only while it does.
    #[test]
    fn derived_index_names_resolve_once_learned() {
        let mut temp = session();
        let (_, effect) = temp.rewrite("ALTER TABLE t ADD UNIQUE (id)").unwrap();
        assert!(effect.indexes_changed());
        temp.applied(effect);
        let catalog = [format!("{}t_pkey", temp.prefix()), format!("{}t_id_key", temp.prefix()), "u_pkey".into()];
        temp.learn_indexes(catalog.iter().map(String::as_str));
        assert_eq!(rewritten(&temp, "DROP INDEX t_id_key"), "DROP INDEX \"~t_id_key\"");
        assert_eq!(rewritten(&temp, "DROP INDEX u_pkey"), "DROP INDEX u_pkey");
        assert!(!temp.rewrite("SELECT * FROM t").unwrap().1.indexes_changed());
        temp.learn_indexes(std::iter::empty());
        assert_eq!(rewritten(&temp, "DROP INDEX t_id_key"), "DROP INDEX t_id_key");
    }

    /// A TEMP view, and a view reading a temporary relation, are the session's.
    #[test]
    fn views_over_temporary_relations_are_temporary() {
        let mut temp = session();
        for (sql, expected) in [
            ("CREATE VIEW v AS SELECT id FROM t", "CREATE VIEW \"~v\" AS SELECT id FROM \"~t\" AS \"t\""),
            ("CREATE TEMP VIEW w AS SELECT 1", "CREATE VIEW \"~w\" AS SELECT 1"),
            ("CREATE VIEW p AS SELECT * FROM public.t", "CREATE VIEW p AS SELECT * FROM public.t"),
        ] {
            assert_eq!(rewritten(&temp, sql), expected);
            let (_, effect) = temp.rewrite(sql).unwrap();
            temp.applied(effect);
        }
        assert_eq!(rewritten(&temp, "SELECT * FROM v, w"), "SELECT * FROM \"~v\" AS \"v\", \"~w\" AS \"w\"");
        assert_eq!(rewritten(&temp, "DROP VIEW v, p"), "DROP VIEW \"~v\", p");
    }

    #[test]
    fn only_earlier_runs_namespaces_are_orphans() {
        let temp = TempSchema::new(7);
        let mine = format!("{}t", temp.prefix());
        assert!(!orphan_namespace(&mine, 7));
        let other_run = format!("pg_temp_7_{:x}_1.t", run_id().wrapping_add(1));
        assert!(orphan_namespace(&other_run, 7));
        assert!(!orphan_namespace(&other_run, 8));
        assert!(!orphan_namespace("t", 7));
        assert!(!orphan_namespace("pg_temp_7_notanumber", 7));
    }
}
