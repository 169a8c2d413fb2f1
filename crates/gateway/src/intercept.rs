//! Answers to the queries the gateway answers itself: session functions (`SELECT
//! version()`, `current_schema()`, …) and the pg_catalog queries psql's `\d`, `\dt` and
//! drivers' type lookups send. Which statements come here is decided from their parse tree
//! (`route.rs`); here a catalog query is matched by shape to one the gateway knows, and
//! answered from the Pistou catalog. Any other catalog query gets a clear "not supported"
//! error (docs/gateway.md lists what is recognized).

use crate::pgtypes::{pg_type, type_name_of_oid};
use crate::route::{CatalogRead, Route, SessionFunction, SessionItem};
use crate::settings::{Settings, VERSION_TEXT};
use pistou_sql::{Catalog, Row, SqlError, SqlState, SqlType, TableSchema, Value};
use std::sync::Arc;

/// A result computed by the gateway.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalRows {
    pub columns: Vec<(String, Option<SqlType>)>,
    pub rows: Vec<Row>,
}

/// Who is asking (for current_user, current_database, pg_backend_pid).
pub struct SessionInfo<'a> {
    pub user: &'a str,
    pub database: &'a str,
    pub pid: i32,
    pub settings: &'a Settings,
}

/// OIDs of user tables: stable for a given catalog (sorted by name), above PostgreSQL's
/// reserved range.
const FIRST_TABLE_OID: i64 = 16_384;

/// A catalog query's text, lower-cased and single-spaced (quoted parts keep their case),
/// with which bytes are inside string literals or quoted identifiers: markers are only
/// looked for where they start outside those, so a literal cannot make a query look like
/// another one.
struct Shape {
    text: String,
    quoted: Vec<bool>,
}

impl Shape {
    fn new(sql: &str) -> Shape {
        let mut shape = Shape { text: String::with_capacity(sql.len()), quoted: Vec::with_capacity(sql.len()) };
        let (mut in_quote, mut in_ident) = (false, false);
        let mut space = false;
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            let was = in_quote || in_ident;
            if !was && (c == '-' && chars.peek() == Some(&'-') || c == '/' && chars.peek() == Some(&'*')) {
                skip_comment(c, &mut chars);
                space = true;
                continue;
            }
            if c == '\'' && !in_ident {
                in_quote = !in_quote;
            }
            if c == '"' && !in_quote {
                in_ident = !in_ident;
            }
            if !in_quote && c.is_whitespace() {
                space = true;
                continue;
            }
            if space && !shape.text.is_empty() {
                shape.push(' ', was);
            }
            space = false;
            // Opening and closing quotes count as quoted.
            let quoted = was || in_quote || in_ident;
            if quoted {
                shape.push(c, true);
            } else {
                c.to_lowercase().for_each(|l| shape.push(l, false));
            }
        }
        // Without the trailing `;`.
        let end = shape.text.trim_end_matches([';', ' ']).len();
        shape.text.truncate(end);
        shape.quoted.truncate(end);
        shape
    }

    fn push(&mut self, c: char, quoted: bool) {
        self.text.push(c);
        self.quoted.extend(std::iter::repeat_n(quoted, c.len_utf8()));
    }

    /// Where the first `marker` starting outside quotes is.
    fn find(&self, marker: &str) -> Option<usize> {
        self.text.match_indices(marker).map(|(at, _)| at).find(|&at| self.quoted.get(at) == Some(&false))
    }

    fn rfind(&self, marker: &str) -> Option<usize> {
        self.text.rmatch_indices(marker).map(|(at, _)| at).find(|&at| self.quoted.get(at) == Some(&false))
    }

    fn contains(&self, marker: &str) -> bool {
        self.find(marker).is_some()
    }

    fn starts_with(&self, prefix: &str) -> bool {
        self.text.starts_with(prefix)
    }

    /// The text after every unquoted occurrence of `marker`.
    fn all_after<'a>(&'a self, marker: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.text
            .match_indices(marker)
            .filter(|(at, _)| self.quoted.get(*at) == Some(&false))
            .map(move |(at, _)| &self.text[at + marker.len()..])
    }

    fn after<'a>(&'a self, marker: &'a str) -> Option<&'a str> {
        self.all_after(marker).next()
    }

    /// The shape from byte `at` on.
    fn tail(&self, at: usize) -> Shape {
        Shape { text: self.text[at..].to_string(), quoted: self.quoted[at..].to_vec() }
    }
}

/// Skips a `--` comment (to the end of the line) or a nested `/* */` comment; `first` is its
/// first character, already read.
fn skip_comment(first: char, chars: &mut std::iter::Peekable<std::str::Chars>) {
    chars.next();
    if first == '-' {
        for c in chars.by_ref() {
            if c == '\n' {
                return;
            }
        }
        return;
    }
    let mut depth = 1usize;
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('/', Some('*')) => {
                chars.next();
                depth += 1;
            }
            ('*', Some('/')) => {
                chars.next();
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            _ => {}
        }
    }
}

/// Answers a statement `route` sent to the gateway (parameters already substituted).
pub fn answer(route: &Route, sql: &str, info: &SessionInfo, catalog: Option<&Catalog>) -> Result<LocalRows, SqlError> {
    let read = match route {
        Route::Session(items) => return session_functions(items, info),
        Route::Catalog(read) => read,
        Route::Mixed => {
            return Err(SqlError::new(
                SqlState::FeatureNotSupported,
                "queries that read pg_catalog / information_schema together with tables are not supported by the Pistou gateway",
            ))
        }
        Route::Engine => return Err(not_supported(sql)),
    };
    let empty = Catalog::new();
    let catalog = catalog.unwrap_or(&empty);
    catalog_query(&Shape::new(sql), read, info, catalog).unwrap_or_else(|| Err(not_supported(sql)))
}

fn not_supported(sql: &str) -> SqlError {
    let start: String = Shape::new(sql).text.chars().take(120).collect();
    SqlError::new(
        SqlState::FeatureNotSupported,
        format!("this pg_catalog / information_schema query is not supported by the Pistou gateway (docs/gateway.md lists the recognized ones): {start}…"),
    )
}

/// Splits at commas outside parentheses and quotes.
fn split_top(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut cur) = (0i32, false, String::new());
    for c in list.chars() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// An item's output name: its alias, or PostgreSQL's default for a function / column.
fn item_name(item: &str) -> (String, String) {
    let (expr, alias) = match item.rsplit_once(" as ") {
        Some((e, a)) if !a.contains(')') => (e.trim(), Some(a.trim().trim_matches('"').to_string())),
        _ => (item.trim(), None),
    };
    let default =
        expr.split('(').next().unwrap_or(expr).rsplit('.').next().unwrap_or(expr).trim().trim_matches('"').to_string();
    (expr.to_string(), alias.unwrap_or(default))
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// The result columns of session functions (known without their arguments' values).
pub fn session_columns(items: &[SessionItem]) -> Vec<(String, Option<SqlType>)> {
    let ty = |f: &SessionFunction| if *f == SessionFunction::BackendPid { SqlType::Int } else { SqlType::Text };
    items.iter().map(|item| (item.name.clone(), Some(ty(&item.function)))).collect()
}

/// Answers session functions. `set_config` answers the setting's value in `info`: the
/// session has applied the change there.
fn session_functions(items: &[SessionItem], info: &SessionInfo) -> Result<LocalRows, SqlError> {
    let mut row = Vec::new();
    for item in items {
        let setting = |name: &str| info.settings.get(&crate::command::canonical_name(name)).map(text);
        let value = match &item.function {
            SessionFunction::Version => text(VERSION_TEXT),
            SessionFunction::CurrentSchema => text("public"),
            SessionFunction::CurrentDatabase => text(info.database),
            SessionFunction::CurrentUser => text(info.user),
            SessionFunction::BackendPid => Value::Int(info.pid.into()),
            SessionFunction::CurrentSchemas(true) => text("{pg_catalog,public}"),
            SessionFunction::CurrentSchemas(false) => text("{public}"),
            SessionFunction::CurrentSetting(Some(name)) => setting(name)?,
            SessionFunction::SetConfig(Some(change)) => setting(&change.name)?,
            SessionFunction::CurrentSetting(None) | SessionFunction::SetConfig(None) => {
                return Err(SqlError::new(
                    SqlState::FeatureNotSupported,
                    "current_setting() and set_config() need constant arguments here",
                ))
            }
        };
        row.push(value);
    }
    Ok(LocalRows { columns: session_columns(items), rows: vec![row] })
}

/// The tables with their synthetic OIDs.
fn tables(catalog: &Catalog) -> Vec<(i64, &Arc<TableSchema>)> {
    catalog.tables().enumerate().map(|(i, t)| (FIRST_TABLE_OID + i as i64, t)).collect()
}

/// The OID in `… = '16384'` after an unquoted `column`.
fn oid_after(n: &Shape, column: &str) -> Option<i64> {
    n.all_after(column).find_map(|rest| {
        let rest = rest.trim_start().strip_prefix('=')?.trim_start();
        let digits: String = rest.trim_start_matches('\'').chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    })
}

/// The string literal opening `rest` (`'it''s' …` → `it's`).
fn literal_at(rest: &str) -> Option<String> {
    let mut chars = rest.strip_prefix('\'')?.chars().peekable();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() != Some(&'\'') {
                return Some(out);
            }
            chars.next();
        }
        out.push(c);
    }
    None
}

/// psql's name pattern, `c.relname OPERATOR(pg_catalog.~) '^(…)$'`, as a LIKE pattern:
/// Some(None) when the query has none, None when it is a regular expression this cannot
/// translate.
fn name_pattern(n: &Shape) -> Option<Option<String>> {
    match n.after("operator(pg_catalog.~) ") {
        None => Some(None),
        Some(rest) => psql_regex_as_like(&literal_at(rest)?).map(Some),
    }
}

/// psql writes name patterns as `^(…)$` with `.*` for `*`, `.` for `?`, and `\` before
/// a literal special character. Anything else (alternatives, classes…) is refused.
fn psql_regex_as_like(regex: &str) -> Option<String> {
    let body = regex.strip_prefix("^(")?.strip_suffix(")$")?;
    let mut like = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                like.push('%');
            }
            '.' => like.push('_'),
            '\\' => push_like_literal(&mut like, chars.next()?),
            '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$' => return None,
            c => push_like_literal(&mut like, c),
        }
    }
    Some(like)
}

fn push_like_literal(like: &mut String, c: char) {
    if matches!(c, '%' | '_' | '\\') {
        like.push('\\');
    }
    like.push(c);
}

/// SQL `name LIKE pattern`: `%` matches any run of characters, `_` one character, `\`
/// makes the next one literal (PostgreSQL's default escape). Iterative: backtracks only to
/// the last `%`, so no pattern is slow or deep.
fn like(pattern: &str, name: &str) -> bool {
    #[derive(PartialEq)]
    enum Token {
        Any,
        One,
        Char(char),
    }
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '%' => Token::Any,
            '_' => Token::One,
            // PostgreSQL refuses a pattern ending with the escape character: no match.
            '\\' => match chars.next() {
                Some(escaped) => Token::Char(escaped),
                None => return false,
            },
            c => Token::Char(c),
        });
    }
    let name: Vec<char> = name.chars().collect();
    let (mut t, mut p) = (0, 0);
    let mut last_any: Option<(usize, usize)> = None;
    while t < name.len() {
        match tokens.get(p) {
            Some(Token::Any) => {
                last_any = Some((p, t));
                p += 1;
            }
            Some(Token::One) => {
                t += 1;
                p += 1;
            }
            Some(Token::Char(c)) if *c == name[t] => {
                t += 1;
                p += 1;
            }
            _ => match last_any {
                Some((any_p, any_t)) => {
                    p = any_p + 1;
                    t = any_t + 1;
                    last_any = Some((any_p, any_t + 1));
                }
                None => return false,
            },
        }
    }
    tokens.get(p..).is_some_and(|rest| rest.iter().all(|x| *x == Token::Any))
}

/// The select list of a `SELECT … FROM …` statement.
fn select_list(n: &str) -> Vec<(String, String)> {
    let body = n.strip_prefix("select ").unwrap_or(n);
    let mut depth = 0i32;
    let mut quoted = false;
    let bytes = body.as_bytes();
    let mut end = body.len();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b' ' if !quoted && depth == 0 && body[i..].starts_with(" from ") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    split_top(&body[..end]).iter().map(|i| item_name(i)).collect()
}

fn text_rows(items: &[(String, String)], rows: Vec<Row>) -> LocalRows {
    LocalRows { columns: items.iter().map(|(_, name)| (name.clone(), Some(SqlType::Text))).collect(), rows }
}

fn catalog_query(
    n: &Shape,
    read: &CatalogRead,
    info: &SessionInfo,
    catalog: &Catalog,
) -> Option<Result<LocalRows, SqlError>> {
    let items = select_list(&n.text);
    let reads = |relation: &str| read.relations.contains(relation);
    // psql \d NAME, step 1: find the relation by name pattern.
    if n.starts_with("select c.oid, n.nspname, c.relname from pg_catalog.pg_class c") {
        let pattern = name_pattern(n)??;
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| like(&pattern, &t.name))
            .map(|(oid, t)| vec![text(oid.to_string()), text("public"), text(t.name.clone())])
            .collect();
        return Some(Ok(text_rows(&items, rows)));
    }
    // psql \d NAME, step 2: relation properties.
    if n.starts_with("select c.relchecks, c.relkind, c.relhasindex") {
        let oid = oid_after(n, "where c.oid")?;
        let known = tables(catalog).iter().any(|(o, _)| *o == oid);
        let row = items.iter().map(|(expr, name)| text(relation_property(expr, name))).collect();
        return Some(Ok(text_rows(&items, if known { vec![row] } else { vec![] })));
    }
    // psql \d NAME, step 3: columns.
    if n.starts_with("select a.attname") && n.contains("from pg_catalog.pg_attribute a") && n.contains("a.attrelid = '")
    {
        let oid = oid_after(n, "a.attrelid")?;
        let (_, table) = tables(catalog).into_iter().find(|(o, _)| *o == oid)?;
        let rows = table
            .columns
            .iter()
            .map(|c| items.iter().map(|(expr, name)| column_property(expr, name, c, table)).collect())
            .collect();
        return Some(Ok(text_rows(&items, rows)));
    }
    // psql \d NAME, step 4: indexes (the primary key and secondary indexes).
    if n.starts_with("select c2.relname, i.indisprimary") {
        let oid = oid_after(n, "where c.oid")?;
        let (_, table) = tables(catalog).into_iter().find(|(o, _)| *o == oid)?;
        return Some(Ok(text_rows(&items, index_rows(&items, table))));
    }
    // psql \d NAME, remaining footers: Pistou has no check or foreign-key constraints,
    // policies, extended statistics, publications, inheritance, rules or triggers.
    const EMPTY: &[&str] = &[
        "from pg_catalog.pg_constraint r",
        "from pg_catalog.pg_policy",
        "from pg_catalog.pg_statistic_ext",
        "from pg_catalog.pg_publication",
        "pg_catalog.pg_inherits",
        "from pg_catalog.pg_trigger",
        "from pg_catalog.pg_rewrite",
    ];
    if EMPTY.iter().any(|m| n.contains(m)) && n.contains("= '") {
        return Some(Ok(text_rows(&items, vec![])));
    }
    // psql \dt, \d (and \dt PATTERN): the relation list.
    if n.contains("from pg_catalog.pg_class c")
        && n.contains("c.relkind in")
        && n.contains("pg_catalog.pg_table_is_visible(c.oid)")
    {
        let pattern = name_pattern(n)?;
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| pattern.as_ref().is_none_or(|p| like(p, &t.name)))
            .map(|(_, t)| items.iter().map(|(_, name)| text(list_property(name, &t.name, info))).collect())
            .collect();
        return Some(Ok(text_rows(&items, rows)));
    }
    // pgjdbc DatabaseMetaData.getTables.
    if n.starts_with("select null as table_cat, n.nspname as table_schem, c.relname as table_name") {
        // pgjdbc 42.5 asks `c.relkind = 'r' AND n.nspname !~ '^pg_' …`, later ones `IN ('r','p')`.
        let wants_tables = n.contains("c.relkind in ('r'") || n.contains("c.relkind = 'r' and n.nspname !~");
        let schema_ok = like_after(n, "n.nspname like ").is_none_or(|p| like(&p, "public"));
        let pattern = like_after(n, "c.relname like ");
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| wants_tables && schema_ok && pattern.as_ref().is_none_or(|p| like(p, &t.name)))
            .map(|(_, t)| {
                items
                    .iter()
                    .map(|(_, col)| match col.as_str() {
                        "table_schem" => text("public"),
                        "table_name" => text(t.name.clone()),
                        "table_type" => text("TABLE"),
                        _ => Value::Null,
                    })
                    .collect()
            })
            .collect();
        return Some(Ok(text_rows(&items, rows)));
    }
    // pgjdbc DatabaseMetaData.getColumns: `SELECT * FROM (SELECT n.nspname, c.relname, a.attname, …) c`.
    if n.starts_with("select * from ( select n.nspname,c.relname,a.attname,a.atttypid")
        || n.starts_with("select * from (select n.nspname,c.relname,a.attname,a.atttypid")
    {
        return Some(Ok(jdbc_columns(n, catalog)));
    }
    // Drivers' type lookups by OID: `… FROM pg_catalog.pg_type … WHERE … oid = N` (N from
    // the parse tree: a literal that mentions an oid is not one).
    if reads("pg_catalog.pg_type") {
        let oid = read.oid?;
        let name = type_name_of_oid(u32::try_from(oid).ok()?)?;
        let row = items
            .iter()
            .map(|(expr, col)| match (expr.as_str(), col.as_str()) {
                (_, "typname") => text(name),
                (_, "nspname") => text("pg_catalog"),
                (_, "oid") => text(oid.to_string()),
                (_, "typtype") => text("b"),
                _ if expr.contains("current_schemas") => text("t"),
                _ if expr.contains("array_in") => text("f"),
                _ => Value::Null,
            })
            .collect();
        return Some(Ok(text_rows(&items, vec![row])));
    }
    None
}

fn jdbc_columns(n: &Shape, catalog: &Catalog) -> LocalRows {
    const COLUMNS: [&str; 15] = [
        "nspname",
        "relname",
        "attname",
        "atttypid",
        "attnotnull",
        "atttypmod",
        "attlen",
        "typtypmod",
        "attnum",
        "attidentity",
        "attgenerated",
        "adsrc",
        "description",
        "typbasetype",
        "typtype",
    ];
    // The outer query's conditions.
    let outer = n.rfind(") c where").map_or_else(|| n.tail(n.text.len()), |at| n.tail(at));
    let schema_ok = like_after(&outer, "nspname like ").is_none_or(|p| like(&p, "public"));
    let table_pattern = like_after(&outer, "relname like ");
    let column_pattern = like_after(&outer, "attname like ");
    let mut rows = Vec::new();
    for (_, table) in tables(catalog) {
        if !schema_ok || !table_pattern.as_ref().is_none_or(|p| like(p, &table.name)) {
            continue;
        }
        for (i, c) in table.columns.iter().enumerate() {
            if !column_pattern.as_ref().is_none_or(|p| like(p, &c.name)) {
                continue;
            }
            let t = pg_type(Some(c.ty));
            let not_null = !c.nullable || table.primary_key.contains(&i);
            rows.push(vec![
                text("public"),
                text(table.name.clone()),
                text(c.name.clone()),
                text(t.oid.to_string()),
                text(if not_null { "t" } else { "f" }),
                text("-1"),
                text(t.size.to_string()),
                text("-1"),
                text((i + 1).to_string()),
                Value::Null,
                Value::Null,
                c.default.as_ref().map_or(Value::Null, |d| text(default_text(d))),
                Value::Null,
                text("0"),
                text("b"),
            ]);
        }
    }
    LocalRows { columns: COLUMNS.iter().map(|c| (c.to_string(), Some(SqlType::Text))).collect(), rows }
}

/// The string literal after an unquoted `marker` (e.g. `c.relname like 'acc%'`).
fn like_after(n: &Shape, marker: &str) -> Option<String> {
    literal_at(n.after(marker)?)
}

fn relation_property(expr: &str, name: &str) -> &'static str {
    match name {
        "relchecks" => "0",
        "relkind" => "r",
        "relhasindex" => "t",
        "reltablespace" => "0",
        "relpersistence" => "p",
        "relreplident" => "d",
        "amname" => "heap",
        _ if expr.starts_with("false")
            || name.starts_with("relhas")
            || name.starts_with("relrow")
            || name.starts_with("relforce")
            || name == "relispartition" =>
        {
            "f"
        }
        _ => "",
    }
}

fn column_property(expr: &str, name: &str, c: &pistou_sql::Column, table: &TableSchema) -> Value {
    let is_pk = table.column_index(&c.name).is_some_and(|i| table.primary_key.contains(&i));
    match name {
        "attname" => text(c.name.clone()),
        "format_type" => text(pg_type(Some(c.ty)).name),
        "attnotnull" => text(if !c.nullable || is_pk { "t" } else { "f" }),
        "attidentity" | "attgenerated" => text(""),
        "attstorage" => text(if pg_type(Some(c.ty)).size < 0 { "x" } else { "p" }),
        _ if expr.contains("pg_get_expr") => c.default.as_ref().map_or(Value::Null, |d| text(default_text(d))),
        _ => Value::Null,
    }
}

fn default_text(v: &Value) -> String {
    match v {
        Value::Text(s) => format!("'{}'::text", s.replace('\'', "''")),
        Value::Null => "NULL".into(),
        other => crate::pgtypes::text_of(other, None),
    }
}

fn index_rows(items: &[(String, String)], table: &TableSchema) -> Vec<Row> {
    let names = |cols: &[usize]| {
        cols.iter().filter_map(|&i| table.columns.get(i)).map(|c| c.name.clone()).collect::<Vec<_>>().join(", ")
    };
    let mut out = Vec::new();
    let mut add = |name: String, primary: bool, unique: bool, cols: &[usize]| {
        let def = format!(
            "CREATE {}INDEX {name} ON public.{} USING btree ({})",
            if unique { "UNIQUE " } else { "" },
            table.name,
            names(cols)
        );
        let row = items
            .iter()
            .map(|(expr, col)| match col.as_str() {
                "relname" => text(name.clone()),
                "indisprimary" => text(if primary { "t" } else { "f" }),
                "indisunique" => text(if unique { "t" } else { "f" }),
                "indisclustered" | "condeferrable" | "condeferred" | "indisreplident" => text("f"),
                "indisvalid" => text("t"),
                "reltablespace" => text("0"),
                "contype" if primary => text("p"),
                "contype" if unique => text("u"),
                _ if expr.contains("pg_get_indexdef") => text(def.clone()),
                _ if expr.contains("pg_get_constraintdef") && primary => text(format!("PRIMARY KEY ({})", names(cols))),
                _ if expr.contains("pg_get_constraintdef") && unique => text(format!("UNIQUE ({})", names(cols))),
                _ => Value::Null,
            })
            .collect();
        out.push(row);
    };
    add(format!("{}_pkey", table.name), true, true, &table.primary_key);
    for index in &table.indexes {
        add(index.name.clone(), false, index.unique, &index.columns);
    }
    out
}

fn list_property(column: &str, table: &str, info: &SessionInfo) -> String {
    match column.to_lowercase().as_str() {
        "schema" => "public".into(),
        "name" => table.to_string(),
        "type" => "table".into(),
        "owner" => info.user.to_string(),
        "persistence" => "permanent".into(),
        "access method" => "heap".into(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::route;

    fn info(settings: &Settings) -> SessionInfo<'_> {
        SessionInfo { user: "alice", database: "pistou", pid: 7, settings }
    }

    fn ask(sql: &str, settings: &Settings, catalog: Option<&Catalog>) -> Result<LocalRows, SqlError> {
        answer(&route(sql), sql, &info(settings), catalog)
    }

    fn accounts() -> Catalog {
        let mut catalog = Catalog::new();
        let column = pistou_sql::Column {
            name: "a".into(),
            ty: SqlType::Int,
            limits: Default::default(),
            nullable: false,
            default: None,
        };
        let table = TableSchema {
            name: "accounts".into(),
            id: 0,
            columns: vec![column],
            primary_key: vec![0],
            indexes: vec![],
        };
        catalog.apply(&pistou_sql::CatalogChange::CreateTable(table)).expect("create table");
        catalog
    }

    #[test]
    fn session_functions_are_answered() {
        let s = Settings::default();
        let r = ask("SELECT version(), current_schema() AS s, current_database();", &s, None).expect("answer");
        assert_eq!(r.columns[1].0, "s");
        assert_eq!(r.columns[2].0, "current_database");
        assert_eq!(r.rows[0][1], Value::Text("public".into()));
        assert_eq!(r.rows[0][2], Value::Text("pistou".into()));
        assert!(matches!(&r.rows[0][0], Value::Text(v) if v.starts_with("PostgreSQL 16.0")));
        let r =
            ask("SELECT current_user, pg_backend_pid(), current_setting('TimeZone') AS tz", &s, None).expect("answer");
        assert_eq!(
            r.columns.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            ["current_user", "pg_backend_pid", "tz"]
        );
        assert_eq!(r.rows[0], vec![text("alice"), Value::Int(7), text("UTC")]);
    }

    #[test]
    fn unknown_and_mixed_catalog_queries_get_a_clear_error() {
        let s = Settings::default();
        for sql in [
            "SELECT * FROM pg_catalog.pg_am",
            "SELECT * FROM accounts, pg_catalog.pg_class",
            "SELECT * FROM pg_type WHERE oid = 999999",
        ] {
            let e = ask(sql, &s, None).expect_err(sql);
            assert_eq!(e.sqlstate(), "0A000", "{sql}");
        }
    }

    #[test]
    fn driver_type_lookup_and_get_tables() {
        let s = Settings::default();
        let q = "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t \
                 JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = '23'";
        let r = ask(q, &s, None).expect("type lookup");
        assert_eq!(r.rows, vec![vec![text("t"), text("pg_catalog"), text("int4")]]);
        let catalog = accounts();
        let q = "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME, 'x' AS TABLE_TYPE, \
                 d.description AS REMARKS FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c WHERE c.relnamespace = n.oid \
                 AND c.relname LIKE 'acc%' AND (false OR ( c.relkind IN ('r','p') AND n.nspname !~ '^pg_')) ORDER BY TABLE_TYPE";
        let r = ask(q, &s, Some(&catalog)).expect("getTables");
        assert_eq!(r.rows, vec![vec![Value::Null, text("public"), text("accounts"), text("TABLE"), Value::Null]]);
        let r = ask(&q.replace("acc%", "zz%"), &s, Some(&catalog)).expect("getTables, no match");
        assert!(r.rows.is_empty());
    }

    #[test]
    fn literals_do_not_make_a_query_look_like_another() {
        let s = Settings::default();
        // Reads pg_class, not pg_type: the literal does not make it a type lookup.
        let e = ask("SELECT 'pg_type oid = 23' FROM pg_catalog.pg_class", &s, None).expect_err("not a type lookup");
        assert_eq!(e.sqlstate(), "0A000");
        // The OID comes from the comparison, not from a literal that looks like one.
        let e = ask("SELECT typname FROM pg_catalog.pg_type WHERE typname = 'oid = 23'", &s, None).expect_err("no oid");
        assert_eq!(e.sqlstate(), "0A000");
        // A footer marker inside a literal or a quoted alias is not the footer query.
        for sql in [
            "SELECT 'from pg_catalog.pg_policy' AS x FROM pg_catalog.pg_class WHERE relname = 'a'",
            "SELECT relname AS \"from pg_catalog.pg_trigger\" FROM pg_catalog.pg_class WHERE relname = 'a'",
            "SELECT relname -- from pg_catalog.pg_rewrite\n FROM pg_catalog.pg_class WHERE relname = 'a'",
            "SELECT relname /* from /* pg_catalog.pg_rewrite */ */ FROM pg_catalog.pg_class WHERE relname = 'a'",
        ] {
            assert_eq!(ask(sql, &s, None).expect_err(sql).sqlstate(), "0A000", "{sql}");
        }
    }

    #[test]
    fn psql_name_patterns() {
        let catalog = accounts();
        let s = Settings::default();
        let lookup = |pattern: &str| {
            let q = format!(
                "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relname OPERATOR(pg_catalog.~) '{pattern}' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3"
            );
            ask(&q, &s, Some(&catalog)).map(|r| r.rows.len())
        };
        assert_eq!(lookup("^(accounts)$"), Ok(1));
        assert_eq!(lookup("^(acc.*)$"), Ok(1));
        assert_eq!(lookup("^(acc.unts)$"), Ok(1));
        assert_eq!(lookup("^(acc)$"), Ok(0));
        assert_eq!(lookup("^(acc_unts)$"), Ok(0), "psql's _ is a literal underscore");
        assert_eq!(lookup("^(acc|accounts)$").map_err(|e| e.sqlstate()), Err("0A000"));
        assert_eq!(psql_regex_as_like("^(a\\.b.*_c)$").as_deref(), Some("a.b%\\_c"));
    }

    #[test]
    fn like_matches_sql_patterns() {
        for (pattern, name, expected) in [
            ("accounts", "accounts", true),
            ("acc%", "accounts", true),
            ("%", "", true),
            ("%unts", "accounts", true),
            ("a%c%s", "accounts", true),
            ("a%x%s", "accounts", false),
            ("acc_unts", "accounts", true),
            ("acc_", "accounts", false),
            ("_", "", false),
            ("", "", true),
            ("", "a", false),
            ("a\\_b", "a_b", true),
            ("a\\_b", "axb", false),
            ("100\\%", "100%", true),
            ("100\\%", "1000", false),
            ("a\\\\b", "a\\b", true),
            ("ab\\", "ab\\", false),
            ("%é_", "café!", true),
            ("%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ] {
            assert_eq!(like(pattern, name), expected, "{name:?} LIKE {pattern:?}");
        }
    }
}
