//! Public entry points: parse + plan (`prepare`, with a bounded plan cache) and `execute`.

use crate::bind::{Binder, RelationKind};
use crate::budget::{Budget, Interrupt};
use crate::catalog::{Catalog, CatalogChange};
use crate::error::{err, Result, SqlError, SqlState};
use crate::exec::{key_range, Exec, Reader};
use crate::expr::Env;
use crate::plan::{explain, Plan, QueryBody, Returning, Statement, TxnControl};
use crate::report::ReadReport;
use crate::sequence::{SequenceDraws, SequenceInput, SequenceLast};
use crate::storage::{ReadAt, Storage, WriteSet};
use crate::types::{Row, SqlType, TypeLimits, Value};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Resource limits protecting the engine from hostile statements.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest accepted statement text, in bytes.
    pub max_sql_len: usize,
    /// The parser's recursion limit (nesting of parentheses and subqueries); bound expressions
    /// may be four times as deep (left-associative operator chains).
    pub max_depth: usize,
    /// Most rows any intermediate result (a scan, a join, an INSERT source) may hold.
    pub max_rows: usize,
    /// Most rows a statement may read as active rows (Pesto's Q-READ: rows that satisfied a
    /// scan's predicate, or point reads). A transaction carries at most
    /// `pistou_wire::MAX_TXN_OPS` reads, so replicas and clients stop a statement at that
    /// many instead of scanning on and building a reply nobody can accept. Unbounded here.
    pub max_read_rows: usize,
    /// Plans kept in the plan cache.
    pub plan_cache_entries: usize,
    /// Most bytes of text a statement's expressions may compute in all (`||`, text
    /// functions): what a hostile statement could otherwise grow without bound, e.g. by
    /// doubling a string in a recursive query (`crate::budget::Budget`).
    pub max_computed_bytes: usize,
    /// Most bytes of rows a statement may materialize in all (scanned rows it keeps, join
    /// results): with `max_rows` alone a join of wide rows could hold many gigabytes. Counted
    /// the same way at every replica, so all stop a statement at the same row.
    pub max_materialized_bytes: usize,
    /// Most units of work a statement may do in all: rows read from storage plus pairs of
    /// rows its joins examine (`crate::budget::Budget`). Bounds the CPU of statements that
    /// examine much and keep little (a cross join filtered to nothing).
    pub max_work: u64,
}

impl Limits {
    /// The limits every replica and client of a cluster applies to statements (they must
    /// agree, so that all stop a statement at the same point), from its configuration.
    pub fn of_cluster(sql: &pistou_core::SqlConfig, max_read_rows: usize) -> Limits {
        Limits {
            max_rows: sql.statement_max_rows,
            max_work: sql.statement_max_work,
            max_materialized_bytes: sql.statement_max_materialized_bytes,
            max_computed_bytes: sql.statement_max_computed_bytes,
            max_read_rows,
            ..Limits::default()
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sql_len: 64 * 1024,
            max_depth: 64,
            max_rows: 1_000_000,
            max_read_rows: usize::MAX,
            plan_cache_entries: 512,
            max_computed_bytes: 256 << 20,
            max_materialized_bytes: 512 << 20,
            max_work: 64_000_000,
        }
    }
}

/// The one result column of EXPLAIN, as PostgreSQL names it.
static EXPLAIN_COLUMNS: std::sync::LazyLock<[String; 1]> = std::sync::LazyLock::new(|| ["QUERY PLAN".to_string()]);

/// A parsed and planned statement, valid for the catalog version it was planned against.
#[derive(Debug)]
pub struct Prepared {
    sql: String,
    catalog_version: u64,
    plan: Arc<Plan>,
    /// The stored tables the statement reads or writes, found once at planning (every
    /// statement a replica executes asks for them).
    tables: Vec<String>,
}

impl Prepared {
    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub fn catalog_version(&self) -> u64 {
        self.catalog_version
    }

    /// Names of the stored tables the statement reads or writes, sorted (see
    /// `describe::plan_tables`).
    pub fn tables(&self) -> &[String] {
        &self.tables
    }

    /// Number of `$n` parameters the statement expects.
    pub fn param_count(&self) -> usize {
        self.plan.param_count
    }

    /// Inferred type of each parameter (None where the statement gives no context, e.g.
    /// `SELECT $1`); drivers that do not declare parameter types decode values with these.
    pub fn param_types(&self) -> &[Option<SqlType>] {
        &self.plan.param_types
    }

    /// Result column names for a query (None for other statements).
    pub fn columns(&self) -> Option<&[String]> {
        match &self.plan.statement {
            Statement::Query(q) => Some(&q.names),
            Statement::Explain { .. } => Some(EXPLAIN_COLUMNS.as_slice()),
            _ => None,
        }
    }

    /// Static result column types for a query (None for other statements; a column's type is
    /// None when only known at run time, e.g. a bare `$1`).
    pub fn column_types(&self) -> Option<&[Option<SqlType>]> {
        match &self.plan.statement {
            Statement::Query(q) => Some(&q.types),
            Statement::Explain { .. } => Some(&[Some(SqlType::Text)]),
            _ => None,
        }
    }

    /// Declared limits of each result column where known (`VARCHAR(n)`, `CHAR(n)`,
    /// `NUMERIC(p,s)`): the type modifier a wire protocol describes.
    pub fn column_limits(&self) -> Option<&[TypeLimits]> {
        match &self.plan.statement {
            Statement::Query(q) => Some(&q.limits),
            _ => None,
        }
    }

    /// Classifies the statement before execution: `Some` when it is a SELECT, UPDATE or DELETE
    /// that reads one table through a full-primary-key point lookup, with no join, derived
    /// table or subquery (so the key alone decides what it reads).
    pub fn point_key(&self, params: &[Value]) -> Result<Option<PointKey>> {
        if !self.plan.subqueries.is_empty() {
            return Ok(None);
        }
        let scan = match &self.plan.statement {
            Statement::Query(q) => match &q.body {
                QueryBody::Select(core) if core.from.joins.is_empty() => core.from.first.as_ref(),
                _ => None,
            },
            Statement::Update(u) => u.rows.single_scan(),
            Statement::Delete(d) => d.rows.single_scan(),
            _ => None,
        };
        let Some(scan) = scan.filter(|s| s.derived.is_none() && s.access.is_point(&s.table)) else {
            return Ok(None);
        };
        if params.len() != self.plan.param_count {
            return err(
                SqlState::UndefinedParameter,
                format!("statement expects {} parameters, got {}", self.plan.param_count, params.len()),
            );
        }
        let env = Env { params, ..Env::default() };
        let range = key_range(&scan.table, &scan.access, &scan.table.primary_key, &env)?;
        let key = range.and_then(|r| match r.start {
            std::ops::Bound::Included(k) => Some(k),
            _ => None,
        });
        Ok(Some(PointKey { table: scan.table.storage_name().to_string(), table_id: scan.table.id, key }))
    }

    /// Sequences the statement draws from or reads: the caller hands it values of each
    /// (`ExecContext::sequences`).
    pub fn sequences(&self) -> &[String] {
        &self.plan.sequences
    }

    /// Of [`Prepared::sequences`], the ones the statement only sets (setval): it needs no
    /// values of them.
    pub fn sequences_set(&self) -> &[String] {
        &self.plan.sequences_set
    }

    /// A NOTICE PostgreSQL would send with the statement's result (an `IF [NOT] EXISTS`
    /// that skips).
    pub fn notice(&self) -> Option<&str> {
        self.plan.notice.as_deref()
    }

    /// Views the statement reads: their definitions are part of what it means.
    pub fn views(&self) -> &[String] {
        &self.plan.views
    }

    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Textual plan, as EXPLAIN prints it.
    pub fn explain(&self) -> String {
        explain(&self.plan)
    }
}

/// Pads the values of `CHAR(n)` result columns to n characters: stored without trailing
/// blanks, they are shown as PostgreSQL shows them.
fn pad_chars(mut rows: Vec<Row>, types: &[Option<SqlType>], limits: &[TypeLimits]) -> Vec<Row> {
    if !types.contains(&Some(SqlType::Char)) {
        return rows;
    }
    let widths: Vec<Option<usize>> = types
        .iter()
        .zip(limits)
        .map(|(t, l)| l.max_len.filter(|_| *t == Some(SqlType::Char)).map(|n| n as usize))
        .collect();
    if widths.iter().all(Option::is_none) {
        return rows;
    }
    for row in &mut rows {
        for (v, width) in row.iter_mut().zip(&widths) {
            if let (Value::Text(s), Some(n)) = (v, width) {
                let len = s.chars().count();
                if len < *n {
                    s.extend(std::iter::repeat_n(' ', n - len));
                }
            }
        }
    }
    rows
}

/// The single row a statement reads, when it reads exactly one row by its full primary key
/// (Pesto §5.3: such statements can use the point-read protocol).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointKey {
    pub table: String,
    /// The table's identity ([`crate::TableSchema::id`]).
    pub table_id: u64,
    /// Encoded primary key (None: a key value is NULL or cannot match the column type, so the
    /// statement reads no row at all).
    pub key: Option<Vec<u8>>,
}

/// What to read: a store, the snapshot to read at, and the caller's own buffered writes
/// (read-your-writes).
#[derive(Clone, Copy)]
pub struct ExecContext<'a> {
    pub storage: &'a dyn Storage,
    pub at: ReadAt<'a>,
    pub pending: &'a WriteSet,
    /// Values of the sequences the statement names ([`Prepared::sequences`]), in that order.
    pub sequences: &'a [SequenceInput],
    /// The statement's random seed, chosen by the client and sent with the statement so that
    /// every replica computes the same `gen_random_uuid()` values (`crate::uuid`).
    pub random_seed: [u8; 32],
    /// The session's lastval before the statement (`lastval()`).
    pub lastval: Option<&'a SequenceLast>,
}

/// The statement's visible result.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A query result (also EXPLAIN, one line per row).
    Rows { columns: Vec<String>, rows: Vec<Row> },
    /// INSERT/UPDATE/DELETE: affected row count and RETURNING rows, if requested.
    Affected { command: &'static str, count: u64, returning: Option<(Vec<String>, Vec<Row>)> },
    /// DDL: the change to apply to the catalog (None for an `IF [NOT] EXISTS` no-op).
    Catalog(Option<CatalogChange>),
    /// BEGIN / COMMIT / ROLLBACK, for the caller's transaction handling.
    Transaction(TxnControl),
}

/// Everything one statement execution produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Execution {
    pub output: Output,
    /// Scans performed, with predicates and active rows.
    pub reads: ReadReport,
    /// Writes the statement wants to make (not applied anywhere).
    pub writes: WriteSet,
    /// Values drawn from each of `ExecContext::sequences`.
    pub sequences_used: Vec<u64>,
    /// The session's lastval after the statement.
    pub lastval: Option<SequenceLast>,
}

/// Plans by catalog version, then by statement text (nested so that a lookup borrows the
/// text instead of copying it), and their insertion order for eviction.
#[derive(Default)]
struct PlanCache {
    plans: HashMap<u64, HashMap<String, Arc<Prepared>>>,
    entries: usize,
    order: VecDeque<(u64, String)>,
}

impl PlanCache {
    fn get(&self, version: u64, sql: &str) -> Option<Arc<Prepared>> {
        self.plans.get(&version)?.get(sql).cloned()
    }

    fn insert(&mut self, version: u64, prepared: Arc<Prepared>, capacity: usize) {
        if self.entries >= capacity {
            if let Some((old_version, old_sql)) = self.order.pop_front() {
                if let Some(by_text) = self.plans.get_mut(&old_version) {
                    if by_text.remove(&old_sql).is_some() {
                        self.entries -= 1;
                    }
                    if by_text.is_empty() {
                        self.plans.remove(&old_version);
                    }
                }
            }
        }
        let sql = prepared.sql.clone();
        if self.plans.entry(version).or_default().insert(sql.clone(), prepared).is_none() {
            self.entries += 1;
            self.order.push_back((version, sql));
        }
    }
}

/// The SQL engine: stateless apart from its plan cache; share one per process.
pub struct Engine {
    limits: Limits,
    cache: Mutex<PlanCache>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(Limits::default())
    }
}

/// PostgreSQL reads `TRIM([BOTH | LEADING | TRAILING] FROM s)` as trimming spaces; sqlparser
/// wants the characters before FROM. The tokens of `sql` with `' '` put there, or None if
/// `sql` has no such TRIM (only tried on text that did not parse).
fn trim_from_tokens(dialect: &PostgreSqlDialect, sql: &str) -> Option<Vec<TokenWithSpan>> {
    use sqlparser::keywords::Keyword;
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    let keyword = |t: &Token| match t {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    let mut out = Vec::with_capacity(tokens.len() + 1);
    // The significant tokens since the last `TRIM (`: None outside one.
    let mut after_trim: Option<usize> = None;
    let mut previous: Option<Keyword> = None;
    let mut changed = false;
    for t in tokens {
        if matches!(t.token, Token::Whitespace(_)) {
            out.push(t);
            continue;
        }
        let word = keyword(&t.token);
        if word == Some(Keyword::FROM) {
            let bare = match after_trim {
                Some(0) => true,
                Some(1) => matches!(previous, Some(Keyword::BOTH | Keyword::LEADING | Keyword::TRAILING)),
                _ => false,
            };
            if bare {
                out.push(TokenWithSpan::wrap(Token::SingleQuotedString(" ".into())));
                changed = true;
            }
        }
        after_trim = match (&t.token, previous, after_trim) {
            (Token::LParen, Some(Keyword::TRIM), _) => Some(0),
            (_, _, Some(n)) => Some(n + 1),
            _ => None,
        };
        previous = word;
        out.push(t);
    }
    changed.then_some(out)
}

/// `INSERT … ON CONFLICT (element, …) [WHERE predicate] DO …` where sqlparser reads only a
/// list of column names (no index expressions, no predicate): the tokens of the statement
/// without the target, and the target parsed apart (the binder takes it,
/// `Binder::conflict_inference`). None for any other statement (only tried on text that did
/// not parse).
fn conflict_target_apart(
    dialect: &PostgreSqlDialect,
    sql: &str,
    max_depth: usize,
) -> Option<(Vec<TokenWithSpan>, crate::bind::ConflictInference)> {
    use sqlparser::keywords::Keyword;
    let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    let keyword = |t: &TokenWithSpan| match &t.token {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    // Positions of the significant tokens.
    let words: Vec<usize> =
        tokens.iter().enumerate().filter(|(_, t)| !matches!(t.token, Token::Whitespace(_))).map(|(i, _)| i).collect();
    let word = |w: usize| words.get(w).and_then(|&i| tokens.get(i));
    if word(0).and_then(keyword) != Some(Keyword::INSERT) {
        return None;
    }
    let mut targets = (0..words.len()).filter(|&w| {
        word(w).and_then(keyword) == Some(Keyword::ON)
            && word(w + 1).and_then(keyword) == Some(Keyword::CONFLICT)
            && word(w + 2).is_some_and(|t| t.token == Token::LParen)
    });
    let (Some(on), None) = (targets.next(), targets.next()) else { return None };
    // The closing parenthesis of the element list, then the predicate up to DO.
    let open = on + 2;
    let mut depth = 0usize;
    let mut close = None;
    for w in open..words.len() {
        match word(w).map(|t| &t.token) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    close = Some(w);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    let has_predicate = word(close + 1).and_then(keyword) == Some(Keyword::WHERE);
    let mut action = close + 1;
    if has_predicate {
        let mut depth = 0usize;
        action = (close + 2..words.len()).find(|&w| {
            match word(w).map(|t| &t.token) {
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth = depth.saturating_sub(1),
                _ => {}
            }
            depth == 0 && word(w).and_then(keyword) == Some(Keyword::DO)
        })?;
    }
    if word(action).and_then(keyword) != Some(Keyword::DO) {
        return None;
    }
    let span = |from: usize, to: usize| -> Option<Vec<TokenWithSpan>> {
        Some(tokens.get(*words.get(from)?..*words.get(to)?)?.to_vec())
    };
    let parse = |tokens: Vec<TokenWithSpan>, list: bool| -> Option<Vec<sqlparser::ast::Expr>> {
        let mut p = Parser::new(dialect).with_recursion_limit(max_depth).with_tokens_with_locations(tokens);
        let exprs = if list { p.parse_comma_separated(Parser::parse_expr).ok()? } else { vec![p.parse_expr().ok()?] };
        p.expect_token(&Token::EOF).ok()?;
        Some(exprs)
    };
    let elements = parse(span(open + 1, close)?, true)?;
    let predicate = match has_predicate {
        true => parse(span(close + 2, action)?, false)?.pop(),
        false => None,
    };
    let mut out = tokens.get(..*words.get(open)?)?.to_vec();
    out.extend(tokens.get(*words.get(action)?..)?.iter().cloned());
    Some((out, crate::bind::ConflictInference { elements, predicate }))
}

/// `ALTER VIEW | SEQUENCE [IF EXISTS] x RENAME TO y`, which sqlparser does not read, as the
/// tokens of the same ALTER TABLE (PostgreSQL's ALTER TABLE renames any relation) and the
/// kind the binder must then find. None for any other statement.
fn alter_rename_as_table(dialect: &PostgreSqlDialect, sql: &str) -> Option<(Vec<TokenWithSpan>, RelationKind)> {
    use sqlparser::keywords::Keyword;
    let mut tokens = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    let mut words = tokens.iter_mut().filter(|t| !matches!(t.token, Token::Whitespace(_)));
    let keyword = |t: &TokenWithSpan| match &t.token {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    if words.next().and_then(|t| keyword(t)) != Some(Keyword::ALTER) {
        return None;
    }
    let object = words.next()?;
    let kind = match keyword(object) {
        Some(Keyword::VIEW) => RelationKind::View,
        Some(Keyword::SEQUENCE) => RelationKind::Sequence,
        _ => return None,
    };
    object.token = Token::make_keyword("TABLE");
    let rename = tokens.iter().any(|t| keyword(t) == Some(Keyword::RENAME));
    rename.then_some((tokens, kind))
}

fn parse_error(e: ParserError) -> SqlError {
    match e {
        ParserError::RecursionLimitExceeded => {
            SqlError::new(SqlState::StatementTooComplex, "statement is nested too deeply")
        }
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => SqlError::new(SqlState::SyntaxError, m),
    }
}

/// A statement text as the engine reads it, with what the binder must be told of the rewrites
/// that read what sqlparser does not.
struct Parsed {
    statements: Vec<sqlparser::ast::Statement>,
    rename_only: Option<RelationKind>,
    conflict_inference: Option<crate::bind::ConflictInference>,
}

/// Parses `sql` as the engine does: sqlparser, then, for text it does not read, `TABLE x`
/// as a query, TRIM FROM, ALTER VIEW / SEQUENCE RENAME and ON CONFLICT targets.
fn parse(sql: &str, max_depth: usize) -> Result<Parsed> {
    let dialect = PostgreSqlDialect {};
    let mut rename_only = None;
    let mut conflict_inference = None;
    let parsed =
        Parser::new(&dialect).with_recursion_limit(max_depth).try_with_sql(sql).and_then(|mut p| p.parse_statements());
    let statements = match parsed {
        // sqlparser reads `TABLE x` as a query only where a query is expected.
        Err(_) if sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("table ")) => Parser::new(&dialect)
            .with_recursion_limit(max_depth)
            .try_with_sql(sql)
            .and_then(|mut p| {
                let query = p.parse_query()?;
                while p.consume_token(&sqlparser::tokenizer::Token::SemiColon) {}
                p.expect_token(&sqlparser::tokenizer::Token::EOF)?;
                Ok(vec![sqlparser::ast::Statement::Query(query)])
            })
            .map_err(parse_error)?,
        Err(e) => {
            let fallback = trim_from_tokens(&dialect, sql)
                .or_else(|| {
                    let (tokens, kind) = alter_rename_as_table(&dialect, sql)?;
                    rename_only = Some(kind);
                    Some(tokens)
                })
                .or_else(|| {
                    let (tokens, target) = conflict_target_apart(&dialect, sql, max_depth)?;
                    conflict_inference = Some(target);
                    Some(tokens)
                });
            match fallback {
                Some(tokens) => Parser::new(&dialect)
                    .with_recursion_limit(max_depth)
                    .with_tokens_with_locations(tokens)
                    .parse_statements()
                    .map_err(parse_error)?,
                None => return Err(parse_error(e)),
            }
        }
        Ok(statements) => statements,
    };
    Ok(Parsed { statements, rename_only, conflict_inference })
}

/// The statements of `sql` as the engine reads them (see `parse`), for callers that judge a
/// statement by its parse tree before it runs (the gateway's read-only check): an ON
/// CONFLICT target sqlparser does not read is left out of the tree.
pub fn parse_statements(sql: &str, max_depth: usize) -> Result<Vec<sqlparser::ast::Statement>> {
    parse(sql, max_depth).map(|p| p.statements)
}

/// Statements longer than this are parsed and bound on a helper thread with a large stack:
/// the parser builds chains like `1+1+...+1` without recursion limits, and walking or
/// dropping such a tree recurses once per operator.
const INLINE_PLAN_MAX_LEN: usize = 1024;
const PLANNER_STACK: usize = 256 << 20;

impl Engine {
    pub fn new(limits: Limits) -> Self {
        Engine { limits, cache: Mutex::new(PlanCache::default()) }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses and plans one statement against `catalog` (cached by text and catalog version).
    pub fn prepare(&self, catalog: &Catalog, sql: &str) -> Result<Arc<Prepared>> {
        if let Some(p) = self.cache.lock().ok().and_then(|cache| cache.get(catalog.version(), sql)) {
            return Ok(p);
        }
        let prepared = Arc::new(self.plan(catalog, sql)?);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(catalog.version(), prepared.clone(), self.limits.plan_cache_entries);
        }
        Ok(prepared)
    }

    /// Parses and plans one statement against a catalog that is not committed (a schema
    /// change buffered by the transaction itself): never cached, since an uncommitted
    /// catalog's version number may later name a different committed catalog.
    pub fn prepare_uncommitted(&self, catalog: &Catalog, sql: &str) -> Result<Arc<Prepared>> {
        self.plan(catalog, sql).map(Arc::new)
    }

    fn plan(&self, catalog: &Catalog, sql: &str) -> Result<Prepared> {
        if sql.len() > self.limits.max_sql_len {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("statement longer than {} bytes", self.limits.max_sql_len),
            );
        }
        if sql.len() <= INLINE_PLAN_MAX_LEN {
            return self.parse_and_bind(catalog, sql);
        }
        std::thread::scope(|scope| {
            let planner = std::thread::Builder::new()
                .stack_size(PLANNER_STACK)
                .spawn_scoped(scope, || self.parse_and_bind(catalog, sql))
                .map_err(|e| {
                    SqlError::new(SqlState::ProgramLimitExceeded, format!("cannot start planner thread: {e}"))
                })?;
            planner.join().unwrap_or_else(|_| err(SqlState::InternalError, "planner failed on this statement"))
        })
    }

    /// The first stored table `sql` names (see `bind::first_named_table`), without a catalog:
    /// lets a client that has no catalog yet route a statement to its table's shard. None if
    /// the statement does not parse, is long (it is not worth a planner thread), or names no
    /// table in a place this looks.
    pub fn first_named_table(&self, sql: &str) -> Option<String> {
        if sql.len() > INLINE_PLAN_MAX_LEN {
            return None;
        }
        let dialect = PostgreSqlDialect {};
        let statements = Parser::new(&dialect)
            .with_recursion_limit(self.limits.max_depth)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statements())
            .ok()?;
        match statements.as_slice() {
            [one] => crate::bind::first_named_table(one),
            _ => None,
        }
    }

    fn parse_and_bind(&self, catalog: &Catalog, sql: &str) -> Result<Prepared> {
        let Parsed { statements, rename_only, conflict_inference } = parse(sql, self.limits.max_depth)?;
        let statement = match statements.as_slice() {
            [one] => one,
            [] => return err(SqlState::SyntaxError, "empty statement"),
            _ => return err(SqlState::FeatureNotSupported, "several statements in one call are not supported"),
        };
        let mut binder = Binder::new(catalog, self.limits.max_depth * 4, sql);
        binder.rename_only = rename_only;
        binder.conflict_inference = conflict_inference;
        let plan = binder.plan(statement)?;
        let tables = crate::describe::plan_tables(&plan);
        Ok(Prepared { sql: sql.to_string(), catalog_version: catalog.version(), plan: Arc::new(plan), tables })
    }

    /// Parses, plans and executes `sql`.
    pub fn run(&self, catalog: &Catalog, sql: &str, params: &[Value], ctx: &ExecContext) -> Result<Execution> {
        let prepared = self.prepare(catalog, sql)?;
        self.execute(catalog, &prepared, params, ctx)
    }

    /// Executes a prepared statement. A statement prepared against an older catalog version
    /// is planned again first.
    pub fn execute(
        &self,
        catalog: &Catalog,
        prepared: &Prepared,
        params: &[Value],
        ctx: &ExecContext,
    ) -> Result<Execution> {
        self.execute_interruptible(catalog, prepared, params, ctx, Interrupt::default())
    }

    /// [`Engine::execute`] that may stop early as `interrupt` says (its result is then an
    /// error to throw away: `WorkSliceUsed` or 57014).
    pub fn execute_interruptible(
        &self,
        catalog: &Catalog,
        prepared: &Prepared,
        params: &[Value],
        ctx: &ExecContext,
        interrupt: Interrupt,
    ) -> Result<Execution> {
        // lastval of a sequence dropped since is not defined, as in PostgreSQL; one renamed
        // since still is (its storage name is the name it was drawn under).
        let exists =
            |name: &str| catalog.sequence(name).is_some() || catalog.sequences().any(|s| s.storage_name() == name);
        let lastval = ctx.lastval.filter(|l| exists(&l.sequence));
        let ctx = &ExecContext { lastval, ..*ctx };
        if prepared.catalog_version != catalog.version() {
            let fresh = self.prepare(catalog, &prepared.sql)?;
            return self.execute_plan(&fresh.plan, params, ctx, interrupt);
        }
        self.execute_plan(&prepared.plan, params, ctx, interrupt)
    }

    fn execute_plan(
        &self,
        plan: &Plan,
        params: &[Value],
        ctx: &ExecContext,
        interrupt: Interrupt,
    ) -> Result<Execution> {
        // EXPLAIN shows the plan of a parameterized statement without values for it.
        let explaining = matches!(plan.statement, Statement::Explain { analyze: false, .. });
        if let Statement::Explain { inner, analyze: true } = &plan.statement {
            return self.explain_analyze(inner, params, ctx, interrupt);
        }
        if !explaining && params.len() != plan.param_count {
            return err(
                SqlState::UndefinedParameter,
                format!("statement expects {} parameters, got {}", plan.param_count, params.len()),
            );
        }
        let budget = Budget::computed_text(self.limits.max_computed_bytes);
        let materialized = Budget::materialized_rows(self.limits.max_materialized_bytes);
        let work = Budget::work(self.limits.max_work, interrupt);
        let reader = Reader {
            storage: ctx.storage,
            at: ctx.at,
            pending: ctx.pending,
            max_rows: self.limits.max_rows,
            work: &work,
            max_read_rows: self.limits.max_read_rows,
            active_rows: Default::default(),
            computed: &budget,
            materialized: &materialized,
        };
        let draws = SequenceDraws::new(ctx.sequences, ctx.lastval.cloned());
        let random = crate::uuid::StatementRandom::new(ctx.random_seed);
        let mut exec = Exec::new(reader, params, &plan.subqueries);
        exec.sequences = Some(&draws);
        exec.random = Some(&random);
        if !matches!(plan.statement, Statement::Explain { .. } | Statement::Ddl(_) | Statement::Txn(_)) {
            exec.run_subqueries()?;
        }
        let mut writes = WriteSet::default();
        let affected =
            |command, (count, rows, _): &(u64, Vec<Row>, WriteSet), returning: Option<&Returning>| Output::Affected {
                command,
                count: *count,
                returning: returning.map(|r| (r.names.clone(), pad_chars(rows.clone(), &r.types, &r.limits))),
            };
        let output = match &plan.statement {
            Statement::Query(q) => {
                Output::Rows { columns: q.names.clone(), rows: pad_chars(exec.query(q)?, &q.types, &q.limits) }
            }
            Statement::Insert(p) => {
                let r = exec.insert(p)?;
                let out = affected("INSERT", &r, p.returning.as_ref());
                writes = r.2;
                out
            }
            Statement::Update(p) => {
                let r = exec.update(p)?;
                let out = affected("UPDATE", &r, p.returning.as_ref());
                writes = r.2;
                out
            }
            Statement::Delete(p) => {
                let r = exec.delete(p)?;
                let out = affected("DELETE", &r, p.returning.as_ref());
                writes = r.2;
                out
            }
            Statement::Ddl(change) => Output::Catalog(change.clone()),
            Statement::Explain { inner, .. } => Output::Rows {
                columns: EXPLAIN_COLUMNS.to_vec(),
                rows: explain(inner).lines().map(|l| vec![Value::Text(l.to_string())]).collect(),
            },
            Statement::Txn(t) => Output::Transaction(*t),
        };
        let sequences_used = draws.used();
        Ok(Execution { output, reads: exec.reads, writes, sequences_used, lastval: draws.lastval() })
    }

    /// EXPLAIN ANALYZE: runs `inner` (its reads and writes are the statement's), then shows
    /// its plan and what it did: rows returned or affected, scans and the rows they relied on.
    fn explain_analyze(
        &self,
        inner: &Plan,
        params: &[Value],
        ctx: &ExecContext,
        interrupt: Interrupt,
    ) -> Result<Execution> {
        let ran = self.execute_plan(inner, params, ctx, interrupt)?;
        let produced = match &ran.output {
            Output::Rows { rows, .. } => format!("Rows returned: {}", rows.len()),
            Output::Affected { command, count, .. } => format!("Rows affected ({command}): {count}"),
            Output::Catalog(_) | Output::Transaction(_) => {
                return err(SqlState::InternalError, "EXPLAIN ANALYZE of a statement that is not run")
            }
        };
        let active: usize = ran.reads.scans.iter().map(|s| s.rows.len()).sum();
        let mut lines: Vec<String> = explain(inner).lines().map(str::to_string).collect();
        lines.push(produced);
        lines.push(format!("Scans: {}, rows read: {active}", ran.reads.scans.len()));
        lines.push(format!("Rows written: {}", ran.writes.len()));
        Ok(Execution {
            output: Output::Rows {
                columns: EXPLAIN_COLUMNS.to_vec(),
                rows: lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
            },
            reads: ran.reads,
            writes: ran.writes,
            sequences_used: ran.sequences_used,
            lastval: ran.lastval.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let engine = Engine::default();
        let mut catalog = Catalog::new();
        for ddl in
            ["CREATE TABLE a (id BIGINT PRIMARY KEY, v BIGINT)", "CREATE TABLE b (id BIGINT PRIMARY KEY, w BIGINT)"]
        {
            let p = engine.prepare(&catalog, ddl).expect("plan");
            let Statement::Ddl(Some(change)) = &p.plan().statement else { panic!("not DDL") };
            catalog.apply(change, &crate::EngineRules).expect("apply");
        }
        catalog
    }

    #[test]
    fn the_plan_cache_is_bounded_and_evicts_the_oldest_plan() {
        let engine = Engine::new(Limits { plan_cache_entries: 2, ..Limits::default() });
        let catalog = catalog();
        let plan = |sql: &str| engine.prepare(&catalog, sql).expect("plan");
        let (one, two) = (plan("SELECT 1"), plan("SELECT 2"));
        assert!(Arc::ptr_eq(&one, &plan("SELECT 1")), "a repeated statement is served from the cache");
        let three = plan("SELECT 3");
        let cache = engine.cache.lock().expect("lock");
        assert_eq!(cache.entries, 2);
        assert!(cache.get(catalog.version(), "SELECT 1").is_none(), "the oldest plan went first");
        assert!(cache.get(catalog.version(), "SELECT 2").is_some_and(|p| Arc::ptr_eq(&p, &two)));
        assert!(cache.get(catalog.version(), "SELECT 3").is_some_and(|p| Arc::ptr_eq(&p, &three)));
        assert!(cache.get(catalog.version() + 1, "SELECT 3").is_none(), "plans are per catalog version");
    }

    #[test]
    fn a_prepared_statement_knows_its_tables() {
        let engine = Engine::default();
        let catalog = catalog();
        let tables = |sql: &str| engine.prepare(&catalog, sql).expect("plan").tables().to_vec();
        assert_eq!(tables("UPDATE b SET w = w + 1 WHERE id >= $1 AND id <= $1"), ["b"]);
        assert_eq!(tables("SELECT * FROM b JOIN a ON a.id = b.id WHERE a.v IN (SELECT w FROM b)"), ["a", "b"]);
        assert_eq!(tables("INSERT INTO a SELECT id, w FROM b"), ["a", "b"]);
        assert!(tables("SELECT 1").is_empty());
        assert!(tables("EXPLAIN SELECT * FROM a").is_empty());
        assert_eq!(tables("EXPLAIN ANALYZE UPDATE b SET w = 1 WHERE id IN (SELECT id FROM a)"), ["a", "b"]);
    }
}
