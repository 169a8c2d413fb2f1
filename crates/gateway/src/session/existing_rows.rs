//! Checks of the existing rows before a schema change adds a rule they must satisfy
//! (ADD PRIMARY KEY, CREATE UNIQUE INDEX, ADD CONSTRAINT UNIQUE / CHECK / FOREIGN KEY,
//! ALTER COLUMN SET NOT NULL), as PostgreSQL checks them while making the change. A check
//! either passes, finds a violation (PostgreSQL's error), or fails loudly: it is never
//! skipped. See docs/gateway.md, "Checks of existing rows".

use super::*;
use pistou_sql::constraints::{validated_as_added, validation_queries};
use pistou_sql::constraints::{AlterAction, CheckConstraint, ForeignKey, Unvalidated};
use pistou_sql::index_expr::part_texts;
use pistou_sql::keycode::encode_key;
use pistou_sql::system::quote_ident;
use pistou_sql::types::equality_key;
use pistou_sql::{CatalogChange, TableSchema};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Rows one page of a check reads; each page is a read-only transaction of its own.
pub(crate) const CHECK_PAGE_ROWS: usize = 8_192;
/// Referenced values one parent lookup of a foreign-key check asks for.
const PARENT_LOOKUP: usize = 1_024;
/// Bytes of distinct keys a uniqueness check holds in memory (54000 beyond).
const MAX_UNIQUE_CHECK_BYTES: usize = 256 << 20;

/// What a new rule requires of every existing row.
enum Rule {
    /// No two rows without a NULL among `parts` (an index's columns and expressions, as
    /// SQL text) share their values.
    Unique { parts: Vec<String>, error: PgError },
    /// A non-unique index's expression `parts` compute for every row: one failing fails the
    /// check with its error, as PostgreSQL's index build does. Never violated otherwise.
    Computes { parts: Vec<String> },
    /// `column` holds no NULL.
    NotNull { column: usize, error: PgError },
    /// The CHECK expression is not FALSE.
    Check { expr: String, error: PgError },
    /// A one-column foreign key: every non-NULL value of `column` is a value of the parent's
    /// `parent_column` (looked up per page); `sql` checks it in one transaction.
    ForeignKey { column: usize, parent: String, parent_column: String, sql: String, error: PgError },
    /// A query returning a row when the rule is violated, run in one transaction (a
    /// several-column foreign key: each row's parent is looked up by the query itself).
    Query { sql: String, error: PgError },
}

impl Rule {
    /// The error a violation reports (None: the rule has no violation of its own).
    fn error(&self) -> Option<&PgError> {
        match self {
            Rule::Unique { error, .. }
            | Rule::NotNull { error, .. }
            | Rule::Check { error, .. }
            | Rule::ForeignKey { error, .. }
            | Rule::Query { error, .. } => Some(error),
            Rule::Computes { .. } => None,
        }
    }
}

/// The SQL text of columns `columns` of `t`, as index parts.
fn column_parts(t: &TableSchema, columns: &[usize]) -> Vec<String> {
    columns.iter().map(|&c| column_name(t, c)).collect()
}

/// The rules `change` adds to the table it names, in the order PostgreSQL reports their
/// violations (a primary key's duplicates before its NULLs).
fn rules_of(catalog: &Catalog, change: &CatalogChange) -> Option<(Arc<TableSchema>, Vec<Rule>)> {
    let unique_error = |name: &str| PgError::new("23505", format!("could not create unique index \"{name}\""));
    let null_error = |table: &str, column: &str| {
        PgError::new("23502", format!("column \"{column}\" of relation \"{table}\" contains null values"))
    };
    let (table, rules) = match change {
        CatalogChange::AddPrimaryKey { table, index } => {
            let t = catalog.table(table)?;
            let mut rules =
                vec![Rule::Unique { parts: column_parts(t, &index.columns), error: unique_error(&index.name) }];
            for &c in &index.columns {
                let column = t.columns.get(c)?;
                rules.push(Rule::NotNull { column: c, error: null_error(table, &column.name) });
            }
            (table, rules)
        }
        // Every row's parts are computed (an expression failing for one fails the
        // statement); a unique index's must not repeat.
        CatalogChange::CreateIndex { table, index } if index.unique || !index.expressions.is_empty() => {
            let parts = part_texts(catalog.table(table)?, index);
            let rule = match index.unique {
                true => Rule::Unique { parts, error: unique_error(&index.name) },
                false => Rule::Computes { parts },
            };
            (table, vec![rule])
        }
        CatalogChange::AlterTable { table, actions } => {
            let t = catalog.table(table)?;
            let mut rules = Vec::new();
            for action in actions {
                match action {
                    AlterAction::AddUnique { name, columns } => {
                        rules.push(Rule::Unique { parts: column_parts(t, columns), error: unique_error(name) })
                    }
                    AlterAction::AddCheck(c) => rules.push(Rule::Check {
                        expr: c.expr.clone(),
                        error: PgError::new(
                            "23514",
                            format!("check constraint \"{}\" of relation \"{table}\" is violated by some row", c.name),
                        ),
                    }),
                    AlterAction::SetNotNull { column } => {
                        let Some(pos) = t.column_index(column) else { continue };
                        let already = t.columns.get(pos).is_none_or(|c| !c.nullable) || t.primary_key.contains(&pos);
                        if !already {
                            rules.push(Rule::NotNull { column: pos, error: null_error(table, column) });
                        }
                    }
                    AlterAction::AddForeignKey(fk) => {
                        let one = CatalogChange::AlterTable { table: table.clone(), actions: vec![action.clone()] };
                        let parent = if fk.parent == *table { Some(t) } else { catalog.table(&fk.parent) };
                        let parent_column =
                            |p: &usize| parent.and_then(|t| t.columns.get(*p)).map(|c| quote_ident(&c.name));
                        for (sql, error) in validation_queries(catalog, &one) {
                            let error = error.into();
                            rules.push(match (fk.columns.as_slice(), fk.parent_columns.as_slice()) {
                                ([column], [p]) if parent_column(p).is_some() => Rule::ForeignKey {
                                    column: *column,
                                    parent: fk.parent.clone(),
                                    parent_column: parent_column(p).unwrap_or_default(),
                                    sql,
                                    error,
                                },
                                _ => Rule::Query { sql, error },
                            });
                        }
                    }
                    _ => {}
                }
            }
            (table, rules)
        }
        // VALIDATE CONSTRAINT: the rules of the constraint as if it were being added.
        CatalogChange::Validated { table, rules } => {
            let actions = validated_as_added(catalog.table(table)?, rules);
            return rules_of(catalog, &CatalogChange::AlterTable { table: table.clone(), actions });
        }
        _ => return None,
    };
    let schema = catalog.table(table)?.clone();
    (!rules.is_empty()).then_some((schema, rules))
}

/// The column a table's rows can be paged by: its primary key when that is one column (the
/// hidden row id of a table created without one included).
fn cursor_column(t: &TableSchema) -> Option<usize> {
    match t.primary_key.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

fn column_name(t: &TableSchema, c: usize) -> String {
    t.columns.get(c).map(|c| quote_ident(&c.name)).unwrap_or_default()
}

/// A query returning a row when `rule` is violated, over the whole table.
fn whole_table_query(t: &TableSchema, rule: &Rule) -> String {
    let table = quote_ident(&t.name);
    match rule {
        Rule::Unique { parts, .. } => {
            let not_null: Vec<String> = parts.iter().map(|p| format!("{p} IS NOT NULL")).collect();
            let (parts, not_null) = (parts.join(", "), not_null.join(" AND "));
            format!("SELECT 1 FROM {table} WHERE {not_null} GROUP BY {parts} HAVING count(*) > 1 LIMIT 1")
        }
        // Never returns a row: it only computes every part of every row.
        Rule::Computes { parts } => {
            let counts: Vec<String> = parts.iter().map(|p| format!("count({p})")).collect();
            format!("SELECT 1 FROM {table} HAVING least({}) < 0", counts.join(", "))
        }
        Rule::NotNull { column, .. } => {
            format!("SELECT 1 FROM {table} WHERE {} IS NULL LIMIT 1", column_name(t, *column))
        }
        Rule::Check { expr, .. } => format!("SELECT 1 FROM {table} WHERE NOT ({expr}) LIMIT 1"),
        Rule::ForeignKey { sql, .. } | Rule::Query { sql, .. } => sql.clone(),
    }
}

/// The select-list expressions a page reads for `rule` (None: the rule is not paged).
fn page_exprs(t: &TableSchema, rule: &Rule) -> Option<Vec<String>> {
    match rule {
        Rule::Unique { parts, .. } | Rule::Computes { parts } => Some(parts.clone()),
        Rule::NotNull { column, .. } => Some(vec![format!("{} IS NULL", column_name(t, *column))]),
        Rule::Check { expr, .. } => Some(vec![format!("coalesce(NOT ({expr}), false)")]),
        Rule::ForeignKey { column, .. } => Some(vec![column_name(t, *column)]),
        Rule::Query { .. } => None,
    }
}

/// The keys a uniqueness check has seen so far, with their size.
#[derive(Default)]
struct SeenKeys {
    keys: BTreeSet<Vec<u8>>,
    bytes: usize,
}

impl SeenKeys {
    /// False when `values` were seen before (a duplicate). Rows with a NULL are distinct.
    fn insert(&mut self, values: &[Value]) -> Result<bool, PgError> {
        if values.iter().any(|v| matches!(v, Value::Null)) {
            return Ok(true);
        }
        // The unique index's own encoding, so equal here means equal for the index.
        let key = encode_key(values);
        self.bytes = self.bytes.saturating_add(key.len() + 48);
        if self.bytes > MAX_UNIQUE_CHECK_BYTES {
            return Err(PgError::new(
                errors::PROGRAM_LIMIT,
                format!(
                    "checking the existing rows for duplicates would hold more than {} MiB of keys",
                    MAX_UNIQUE_CHECK_BYTES >> 20
                ),
            ));
        }
        Ok(self.keys.insert(key))
    }
}

/// The first violation found of each rule; a check stops once the first rule is violated.
struct Findings {
    found: Vec<Option<PgError>>,
}

impl Findings {
    fn record(&mut self, rule: usize, error: Option<&PgError>) {
        let error =
            error.cloned().unwrap_or_else(|| PgError::new(errors::INTERNAL, "a check found a row it cannot report"));
        if let Some(slot @ None) = self.found.get_mut(rule) {
            *slot = Some(error);
        }
    }

    fn first_rule_violated(&self) -> bool {
        self.found.first().is_some_and(Option::is_some)
    }

    fn into_result(self) -> Result<(), PgError> {
        self.found.into_iter().flatten().next().map_or(Ok(()), Err)
    }
}

/// What a schema change checked after its commit marks as awaiting its check, and the
/// changes that undo it if the check fails.
struct CheckedAfter {
    table: String,
    marks: Vec<Unvalidated>,
    undo: Vec<CatalogChange>,
}

/// The marks and the undoing of `change` (None: it adds no rule a check applies to).
fn checked_after(catalog: &Catalog, change: &CatalogChange) -> Option<CheckedAfter> {
    let (table, marks, undo) = match change {
        // Its columns became NOT NULL with it, and are nullable again without it.
        CatalogChange::AddPrimaryKey { table, index } => {
            let t = catalog.table(table)?;
            let nullable: Vec<AlterAction> = index
                .columns
                .iter()
                .filter_map(|&c| t.columns.get(c).filter(|c| c.nullable))
                .map(|c| AlterAction::DropNotNull { column: c.name.clone() })
                .collect();
            let mut undo = vec![CatalogChange::DropIndex { table: table.clone(), index: index.name.clone() }];
            if !nullable.is_empty() {
                undo.push(CatalogChange::AlterTable { table: table.clone(), actions: nullable });
            }
            (table, vec![Unvalidated::Index(index.name.clone())], undo)
        }
        CatalogChange::CreateIndex { table, index } if index.unique || !index.expressions.is_empty() => (
            table,
            vec![Unvalidated::Index(index.name.clone())],
            vec![CatalogChange::DropIndex { table: table.clone(), index: index.name.clone() }],
        ),
        CatalogChange::AlterTable { table, actions } => {
            let t = catalog.table(table)?;
            let (mut marks, mut undo) = (Vec::new(), Vec::new());
            for action in actions {
                match action {
                    AlterAction::AddUnique { name, .. } => {
                        marks.push(Unvalidated::Index(name.clone()));
                        undo.push(AlterAction::DropConstraint { name: name.clone() });
                    }
                    AlterAction::AddCheck(CheckConstraint { name, .. })
                    | AlterAction::AddForeignKey(ForeignKey { name, .. }) => {
                        marks.push(Unvalidated::Constraint(name.clone()));
                        undo.push(AlterAction::DropConstraint { name: name.clone() });
                    }
                    AlterAction::SetNotNull { column } => {
                        let Some(pos) = t.column_index(column) else { continue };
                        if t.columns.get(pos).is_some_and(|c| c.nullable) && !t.primary_key.contains(&pos) {
                            marks.push(Unvalidated::NotNull(pos));
                            undo.push(AlterAction::DropNotNull { column: column.clone() });
                        }
                    }
                    _ => {}
                }
            }
            (table, marks, vec![CatalogChange::AlterTable { table: table.clone(), actions: undo }])
        }
        _ => return None,
    };
    (!marks.is_empty()).then(|| CheckedAfter { table: table.clone(), marks, undo })
}

impl Session {
    /// Before a schema change that adds a rule the existing rows must satisfy: checks them
    /// all (in the open block's transaction, or in one of its own), returning PostgreSQL's
    /// error for a violation. A statement that does not plan against the schema the session
    /// reads is left to the engine, which reports its error.
    pub(super) async fn check_existing_rows(&mut self, sql: &str) -> Result<(), PgError> {
        let catalog = self.catalog().await?;
        let Ok(prepared) = self.engine.prepare(&catalog, sql) else { return Ok(()) };
        let StatementKind::Ddl(Some(change)) = prepared.kind() else { return Ok(()) };
        let Some((table, rules)) = rules_of(&catalog, &change) else { return Ok(()) };
        self.check_rules(&table, &rules, false).await
    }

    /// A schema change adding rules to a table too large for one transaction's reads, in
    /// three transactions: the change, with its rules marked as awaiting their check
    /// (`Constraints::unvalidated`); the check of every row, in pages or in one transaction
    /// per rule, each started after the change committed; then the mark of the rules as
    /// valid, or the undoing of the change (PostgreSQL's error is returned).
    ///
    /// No row escapes: writers enforce the rules from the change's commit on, and a row
    /// written before it is either read by the check (which reads after it) or, arriving
    /// late with an older timestamp, refused for invalidating the check's reads (MVTSO).
    /// Meanwhile a duplicate of an older row already fails, as during PostgreSQL's
    /// CREATE INDEX CONCURRENTLY; a gateway dying between the transactions leaves the rule
    /// marked (`pg_index.indisvalid` / `pg_constraint.convalidated` false) until dropped.
    pub(super) async fn add_rule_checked_after(&mut self, sql: &str, params: &RawParams) -> Result<Reply, PgError> {
        let catalog = self.catalog().await?;
        let prepared = self.engine.prepare(&catalog, sql).map_err(PgError::from)?;
        let StatementKind::Ddl(Some(change)) = prepared.kind() else {
            return self.autocommit(Work::Statement(sql, params)).await;
        };
        let Some((table, rules)) = rules_of(&catalog, &change) else {
            return self.autocommit(Work::Statement(sql, params)).await;
        };
        // VALIDATE CONSTRAINT: writers have enforced the constraint since it was added NOT
        // VALID, so a check started now sees every row it must.
        if let CatalogChange::Validated { .. } = *change {
            self.check_rules_within_limit(&table, &rules).await?;
            return self.autocommit(Work::Statement(sql, params)).await;
        }
        let Some(after) = checked_after(&catalog, &change) else {
            return Err(PgError::new(errors::INTERNAL, "a schema change adding rules has no mark for them"));
        };
        let mark = CatalogChange::MarkUnvalidated { table: after.table.clone(), rules: after.marks.clone() };
        let reply = self.autocommit(Work::AddUnvalidated(sql, params, &mark)).await?;
        if let Err(e) = self.check_rules_within_limit(&table, &rules).await {
            return match self.autocommit(Work::ChangeCatalog(&after.undo)).await {
                Ok(_) => Err(e),
                Err(undo) => Err(PgError::new(
                    e.code,
                    format!(
                        "{}; undoing the schema change failed too ({}): its rules stay marked as not valid until dropped",
                        e.message, undo.message
                    ),
                )),
            };
        }
        let valid = [CatalogChange::Validated { table: after.table, rules: after.marks }];
        self.autocommit(Work::ChangeCatalog(&valid)).await.map_err(|e| {
            PgError::new(
                e.code,
                format!(
                    "the existing rows hold the new rules, but marking them valid failed ({}); they stay marked as not valid",
                    e.message
                ),
            )
        })?;
        Ok(reply)
    }

    /// Checks `rules` in pages (where they can be), for at most
    /// `GatewayConfig::existing_rows_check_limit`.
    async fn check_rules_within_limit(&mut self, table: &Arc<TableSchema>, rules: &[Rule]) -> Result<(), PgError> {
        let limit = self.config.existing_rows_check_limit;
        match tokio::time::timeout(limit, self.check_rules(table, rules, true)).await {
            Ok(result) => result,
            Err(_) => Err(PgError::new(
                errors::PROGRAM_LIMIT,
                format!(
                    "checking the existing rows of \"{}\" took longer than {} s; the schema change was not made",
                    table.name,
                    limit.as_secs()
                ),
            )),
        }
    }

    /// Checks `rules` over the rows of `table`: in pages when `paged` and the table has a
    /// one-column key, else each rule in one transaction (the block's, if one is open).
    async fn check_rules(&mut self, table: &TableSchema, rules: &[Rule], paged: bool) -> Result<(), PgError> {
        let mut findings = Findings { found: rules.iter().map(|_| None).collect() };
        let paged = paged && cursor_column(table).is_some();
        if paged {
            let page_rules: Vec<usize> = (0..rules.len()).filter(|&i| page_exprs(table, &rules[i]).is_some()).collect();
            if !page_rules.is_empty() {
                self.check_pages(table, rules, &page_rules, &mut findings).await?;
            }
        }
        for (i, rule) in rules.iter().enumerate() {
            if findings.first_rule_violated() {
                break;
            }
            if paged && page_exprs(table, rule).is_some() {
                continue;
            }
            let query = whole_table_query(table, rule);
            if self.check_in_one_transaction(&table.name, &query).await? {
                findings.record(i, rule.error());
            }
        }
        findings.into_result()
    }

    /// Runs `query` (a row: a violation) in the block's transaction, or in one of its own.
    /// A table too large for one transaction's reads fails loudly (54000).
    async fn check_in_one_transaction(&mut self, table: &str, query: &str) -> Result<bool, PgError> {
        let in_block = matches!(self.txn, TxnState::Open(_));
        match self.check_query(query).await {
            Ok(rows) => Ok(!rows.is_empty()),
            Err(e) if e.code == errors::PROGRAM_LIMIT => {
                let advice = if in_block {
                    "run the statement outside a transaction block, where the check reads the table in pages"
                } else {
                    "a foreign key of several columns, or a table whose primary key has several columns, is checked in one transaction"
                };
                Err(PgError::new(
                    errors::PROGRAM_LIMIT,
                    format!("checking the existing rows of \"{table}\" reads more rows than one transaction may ({}); {advice}", e.message),
                ))
            }
            // The block's transaction cannot run this query after its schema changes (it
            // mixes a table the block created with one it did not): a table without rows
            // has nothing to check (a table the block created has only the rows CREATE TABLE
            // AS wrote), which a read of the table alone can still tell.
            Err(e) if in_block && e.code == errors::FEATURE_NOT_SUPPORTED && self.is_empty(table).await => Ok(false),
            Err(e) if in_block && e.code == errors::FEATURE_NOT_SUPPORTED => Err(PgError::new(
                errors::FEATURE_NOT_SUPPORTED,
                format!(
                    "checking the existing rows of \"{table}\" after another schema change in the same transaction block is not supported; run the statement in a transaction of its own ({})",
                    e.message
                ),
            )),
            Err(e) => Err(e),
        }
    }

    /// True if `table` has no row (as the check's transaction sees it); false when that
    /// cannot be read either.
    async fn is_empty(&mut self, table: &str) -> bool {
        let query = format!("SELECT 1 FROM {} LIMIT 1", quote_ident(table));
        self.check_query(&query).await.is_ok_and(|rows| rows.is_empty())
    }

    /// Reads the whole table in pages of `CHECK_PAGE_ROWS` rows by its one-column primary
    /// key, each page a read-only transaction of its own continuing after the last key
    /// read, and records the first violation of each rule in `paged`.
    async fn check_pages(
        &mut self,
        table: &TableSchema,
        rules: &[Rule],
        paged: &[usize],
        findings: &mut Findings,
    ) -> Result<(), PgError> {
        let Some(cursor) = cursor_column(table) else { return Ok(()) };
        let cursor_name = column_name(table, cursor);
        // Each rule's expressions are columns after the cursor: (rule, first column, count).
        let mut select = vec![cursor_name.clone()];
        let mut layout = Vec::new();
        for &i in paged {
            let exprs = rules.get(i).and_then(|r| page_exprs(table, r)).unwrap_or_default();
            layout.push((i, select.len(), exprs.len()));
            select.extend(exprs);
        }
        let from = format!("SELECT {} FROM {}", select.join(", "), quote_ident(&table.name));
        let first_page = format!("{from} LIMIT {CHECK_PAGE_ROWS}");
        let next_page = format!("{from} WHERE {cursor_name} > $1 LIMIT {CHECK_PAGE_ROWS}");
        let mut seen: Vec<SeenKeys> = layout.iter().map(|_| SeenKeys::default()).collect();
        // A page's distinct referencing values of each foreign key, by equality key.
        let mut referenced: Vec<BTreeMap<Vec<u8>, Value>> = layout.iter().map(|_| BTreeMap::new()).collect();
        let mut after: Option<Vec<u8>> = None;
        let mut last: Option<Value> = None;
        let started = Instant::now();
        loop {
            if started.elapsed() > self.config.existing_rows_check_limit {
                return Err(PgError::new(
                    errors::PROGRAM_LIMIT,
                    format!(
                        "checking the existing rows of \"{}\" took longer than {} s; the schema change was not made",
                        table.name,
                        self.config.existing_rows_check_limit.as_secs()
                    ),
                ));
            }
            let rows = match &last {
                None => self.page(&first_page, &[]).await?,
                Some(key) => self.page(&next_page, std::slice::from_ref(key)).await?,
            };
            for row in &rows {
                let Some(key) = row.first() else {
                    return Err(PgError::new(errors::INTERNAL, "a page row without its key"));
                };
                // Pages must follow the key order, or a page could skip rows.
                let encoded = encode_key([key]);
                if after.as_ref().is_some_and(|a| *a >= encoded) {
                    return Err(PgError::new(errors::INTERNAL, "a page of the check was not in key order"));
                }
                after = Some(encoded);
                for (slot, &(rule_index, first, count)) in layout.iter().enumerate() {
                    let Some(rule) = rules.get(rule_index) else { continue };
                    let values = row.get(first..first + count).unwrap_or_default();
                    let violated = match rule {
                        Rule::Unique { .. } => match seen.get_mut(slot) {
                            Some(keys) => !keys.insert(values)?,
                            None => false,
                        },
                        Rule::NotNull { .. } | Rule::Check { .. } => matches!(values, [Value::Bool(true)]),
                        Rule::Computes { .. } => false,
                        Rule::ForeignKey { .. } => {
                            if let ([v], Some(wanted)) = (values, referenced.get_mut(slot)) {
                                if !matches!(v, Value::Null) {
                                    wanted.insert(equality_key([v]), v.clone());
                                }
                            }
                            false
                        }
                        Rule::Query { .. } => false,
                    };
                    if violated {
                        findings.record(rule_index, rule.error());
                    }
                }
                if findings.first_rule_violated() {
                    return Ok(());
                }
            }
            for (slot, &(rule_index, _, _)) in layout.iter().enumerate() {
                let Some(Rule::ForeignKey { parent, parent_column, error, .. }) = rules.get(rule_index) else {
                    continue;
                };
                let wanted = referenced.get_mut(slot).map(std::mem::take).unwrap_or_default();
                if !self.parents_exist(parent, parent_column, wanted).await? {
                    findings.record(rule_index, Some(error));
                }
            }
            if findings.first_rule_violated() {
                return Ok(());
            }
            if rows.len() < CHECK_PAGE_ROWS {
                return Ok(());
            }
            last = rows.last().and_then(|r| r.first()).cloned();
        }
    }

    /// True if every one of `wanted` (a page's referencing values) is a value of
    /// `parent.column`, looked up by equality on the referenced key in read-only
    /// transactions of at most `PARENT_LOOKUP` values each.
    async fn parents_exist(
        &mut self,
        parent: &str,
        column: &str,
        wanted: BTreeMap<Vec<u8>, Value>,
    ) -> Result<bool, PgError> {
        let values: Vec<Value> = wanted.into_values().collect();
        for chunk in values.chunks(PARENT_LOOKUP) {
            let list: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!("SELECT {column} FROM {} WHERE {column} IN ({})", quote_ident(parent), list.join(", "));
            let found: BTreeSet<Vec<u8>> =
                self.page(&sql, chunk).await?.iter().filter_map(|r| r.first()).map(|v| equality_key([v])).collect();
            if chunk.iter().any(|v| !found.contains(&equality_key([v]))) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One page: a read-only statement in a transaction of its own (retried on 40001).
    async fn page(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, PgError> {
        match self.autocommit(Work::Values(sql, params)).await? {
            Reply::Rows { rows, .. } => Ok(rows),
            Reply::Command { .. } => Err(PgError::new(errors::INTERNAL, "a check returned no rows")),
        }
    }
}
