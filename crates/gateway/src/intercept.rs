//! Queries the gateway answers itself: session functions (`SELECT version()`,
//! `current_schema()`, …) and the pg_catalog queries psql's `\d`, `\dt` and drivers'
//! type lookups send. They are recognized by shape, not executed: the answers come from
//! the Pistou catalog. Anything else that touches pg_catalog or information_schema gets
//! a clear "not supported" error (docs/gateway.md lists what is recognized).

use crate::pgtypes::{pg_type, type_name_of_oid};
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

/// Lowercase, single-spaced, without a trailing `;` (string literals keep their case).
pub fn normalize(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let (mut in_quote, mut in_ident) = (false, false);
    let mut last_space = true;
    for c in crate::split::strip_comments(sql).chars() {
        if c == '\'' && !in_ident {
            in_quote = !in_quote;
        }
        if c == '"' && !in_quote {
            in_ident = !in_ident;
        }
        if !in_quote && c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
            continue;
        }
        last_space = false;
        if in_quote || in_ident {
            out.push(c);
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out.trim().trim_end_matches(';').trim().to_string()
}

const CATALOG_MARKERS: &[&str] = &[
    "pg_catalog.", "information_schema.", "pg_class", "pg_type", "pg_namespace", "pg_attribute", "pg_settings",
    "pg_database", "pg_index", "pg_proc", "pg_roles", "pg_user", "pg_tables",
];

/// True for statements the gateway answers (or refuses) itself.
pub fn recognizes(sql: &str) -> bool {
    let n = normalize(sql);
    session_items(&n).is_some() || CATALOG_MARKERS.iter().any(|m| n.contains(m))
}

/// True when answering needs the table catalog (read inside a transaction).
pub fn needs_catalog(sql: &str) -> bool {
    session_items(&normalize(sql)).is_none()
}

pub fn answer(sql: &str, info: &SessionInfo, catalog: Option<&Catalog>) -> Result<LocalRows, SqlError> {
    let n = normalize(sql);
    if let Some(items) = session_items(&n) {
        return session_functions(&items, info);
    }
    let empty = Catalog::new();
    let catalog = catalog.unwrap_or(&empty);
    catalog_query(&n, info, catalog).unwrap_or_else(|| {
        let start: String = n.chars().take(120).collect();
        Err(SqlError::new(
            SqlState::FeatureNotSupported,
            format!("this pg_catalog / information_schema query is not supported by the Pistou gateway (docs/gateway.md lists the recognized ones): {start}…"),
        ))
    })
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
    let default = expr.split('(').next().unwrap_or(expr).rsplit('.').next().unwrap_or(expr).trim().trim_matches('"').to_string();
    (expr.to_string(), alias.unwrap_or(default))
}

/// `SELECT f(), g …` made only of session functions, without FROM.
fn session_items(n: &str) -> Option<Vec<(String, String)>> {
    let list = n.strip_prefix("select ")?;
    if list.contains(" from ") {
        return None;
    }
    let items: Vec<(String, String)> = split_top(list).iter().map(|i| item_name(i)).collect();
    let known = |e: &str| {
        let e = e.strip_prefix("pg_catalog.").unwrap_or(e);
        matches!(
            e,
            "version()" | "current_schema()" | "current_schema" | "current_database()" | "current_user" | "session_user" | "user"
                | "current_catalog" | "pg_backend_pid()" | "current_schemas(true)" | "current_schemas(false)"
        ) || e.starts_with("current_setting(")
    };
    (!items.is_empty() && items.iter().all(|(e, _)| known(e))).then_some(items)
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn session_functions(items: &[(String, String)], info: &SessionInfo) -> Result<LocalRows, SqlError> {
    let mut columns = Vec::new();
    let mut row = Vec::new();
    for (expr, name) in items {
        let e = expr.strip_prefix("pg_catalog.").unwrap_or(expr);
        let (value, ty) = match e {
            "version()" => (text(VERSION_TEXT), SqlType::Text),
            "current_schema()" | "current_schema" => (text("public"), SqlType::Text),
            "current_database()" | "current_catalog" => (text(info.database), SqlType::Text),
            "current_user" | "session_user" | "user" => (text(info.user), SqlType::Text),
            "pg_backend_pid()" => (Value::Int(info.pid.into()), SqlType::Int),
            "current_schemas(true)" => (text("{pg_catalog,public}"), SqlType::Text),
            "current_schemas(false)" => (text("{public}"), SqlType::Text),
            _ => {
                let arg = e.trim_start_matches("current_setting(").trim_end_matches(')');
                let arg = arg.split(',').next().unwrap_or("").trim().trim_matches('\'');
                (text(info.settings.get(&crate::command::canonical_name(arg))?), SqlType::Text)
            }
        };
        columns.push((name.clone(), Some(ty)));
        row.push(value);
    }
    Ok(LocalRows { columns, rows: vec![row] })
}

/// The tables with their synthetic OIDs.
fn tables(catalog: &Catalog) -> Vec<(i64, &Arc<TableSchema>)> {
    catalog.tables().enumerate().map(|(i, t)| (FIRST_TABLE_OID + i as i64, t)).collect()
}

/// The OID in `… = '16384'` after `column`.
fn oid_after(n: &str, column: &str) -> Option<i64> {
    n.match_indices(column).find_map(|(at, _)| {
        let rest = n[at + column.len()..].trim_start().strip_prefix('=')?.trim_start();
        let digits: String = rest.trim_start_matches('\'').chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    })
}

/// psql's `'^(pattern)$'` regular expression as a name matcher (`.*`, `.` and literals).
fn name_pattern(n: &str) -> Option<String> {
    let start = n.find("operator(pg_catalog.~) '")? + "operator(pg_catalog.~) '".len();
    let end = start + n[start..].find('\'')?;
    Some(n[start..end].to_string())
}

fn pattern_matches(pattern: &str, name: &str) -> bool {
    let p = pattern.trim_start_matches('^').trim_end_matches('$');
    let p = p.strip_prefix('(').and_then(|p| p.strip_suffix(')')).unwrap_or(p);
    let p = p.replace(".*", "\u{1}").replace('.', "\u{2}");
    glob(p.as_bytes(), name.as_bytes())
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((1, rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((2, rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
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

fn catalog_query(n: &str, info: &SessionInfo, catalog: &Catalog) -> Option<Result<LocalRows, SqlError>> {
    let items = select_list(n);
    // psql \d NAME, step 1: find the relation by name pattern.
    if n.starts_with("select c.oid, n.nspname, c.relname from pg_catalog.pg_class c") {
        let pattern = name_pattern(n)?;
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| pattern_matches(&pattern, &t.name))
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
    if n.contains("from pg_catalog.pg_attribute a") && n.contains("a.attrelid = '") && n.starts_with("select a.attname") {
        let oid = oid_after(n, "a.attrelid")?;
        let (_, table) = tables(catalog).into_iter().find(|(o, _)| *o == oid)?;
        let rows = table
            .columns
            .iter()
            .map(|c| {
                items
                    .iter()
                    .map(|(expr, name)| column_property(expr, name, c, table))
                    .collect()
            })
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
        "from pg_catalog.pg_constraint r", "from pg_catalog.pg_policy", "from pg_catalog.pg_statistic_ext",
        "from pg_catalog.pg_publication", "pg_catalog.pg_inherits", "from pg_catalog.pg_trigger", "from pg_catalog.pg_rewrite",
    ];
    if EMPTY.iter().any(|m| n.contains(m)) && n.contains("= '") {
        return Some(Ok(text_rows(&items, vec![])));
    }
    // psql \dt, \d (and \dt PATTERN): the relation list.
    if n.contains("from pg_catalog.pg_class c") && n.contains("c.relkind in") && n.contains("pg_catalog.pg_table_is_visible(c.oid)") {
        let pattern = name_pattern(n);
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| pattern.as_ref().is_none_or(|p| pattern_matches(p, &t.name)))
            .map(|(_, t)| items.iter().map(|(_, name)| text(list_property(name, &t.name, info))).collect())
            .collect();
        return Some(Ok(text_rows(&items, rows)));
    }
    // pgjdbc DatabaseMetaData.getTables.
    if n.starts_with("select null as table_cat, n.nspname as table_schem, c.relname as table_name") {
        // pgjdbc 42.5 asks `c.relkind = 'r' AND n.nspname !~ '^pg_' …`, later ones `IN ('r','p')`.
        let wants_tables = n.contains("c.relkind in ('r'") || n.contains("c.relkind = 'r' and n.nspname !~");
        let schema_ok = like_after(n, "n.nspname like ").is_none_or(|p| like_matches(&p, "public"));
        let pattern = like_after(n, "c.relname like ");
        let rows = tables(catalog)
            .into_iter()
            .filter(|(_, t)| wants_tables && schema_ok && pattern.as_ref().is_none_or(|p| like_matches(p, &t.name)))
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
    if n.starts_with("select * from ( select n.nspname,c.relname,a.attname,a.atttypid") || n.starts_with("select * from (select n.nspname,c.relname,a.attname,a.atttypid") {
        return Some(Ok(jdbc_columns(n, catalog)));
    }
    // Drivers' type lookups by OID: `… FROM pg_catalog.pg_type … WHERE … oid = N`.
    if n.contains("pg_type") {
        let oid = oid_after(n, "oid")?;
        let name = type_name_of_oid(oid as u32)?;
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

fn jdbc_columns(n: &str, catalog: &Catalog) -> LocalRows {
    const COLUMNS: [&str; 15] = [
        "nspname", "relname", "attname", "atttypid", "attnotnull", "atttypmod", "attlen", "typtypmod", "attnum",
        "attidentity", "attgenerated", "adsrc", "description", "typbasetype", "typtype",
    ];
    let outer = n.rfind(") c where").map_or("", |i| &n[i..]);
    let schema_ok = like_after(outer, "nspname like ").is_none_or(|p| like_matches(&p, "public"));
    let table_pattern = like_after(outer, "relname like ");
    let column_pattern = like_after(outer, "attname like ");
    let mut rows = Vec::new();
    for (_, table) in tables(catalog) {
        if !schema_ok || !table_pattern.as_ref().is_none_or(|p| like_matches(p, &table.name)) {
            continue;
        }
        for (i, c) in table.columns.iter().enumerate() {
            if !column_pattern.as_ref().is_none_or(|p| like_matches(p, &c.name)) {
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

/// The string literal after `marker` (e.g. `c.relname like 'acc%'`).
fn like_after(n: &str, marker: &str) -> Option<String> {
    let rest = n[n.find(marker)? + marker.len()..].strip_prefix('\'')?;
    Some(rest[..rest.find('\'')?].to_string())
}

/// SQL LIKE with `%` and `_` (pgjdbc escapes nothing for plain names).
fn like_matches(pattern: &str, name: &str) -> bool {
    let p = pattern.replace('%', "\u{1}").replace('_', "\u{2}");
    glob(p.as_bytes(), name.as_bytes())
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
        _ if expr.starts_with("false") || name.starts_with("relhas") || name.starts_with("relrow") || name.starts_with("relforce") || name == "relispartition" => "f",
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
    let names = |cols: &[usize]| cols.iter().filter_map(|&i| table.columns.get(i)).map(|c| c.name.clone()).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    let mut add = |name: String, primary: bool, unique: bool, cols: &[usize]| {
        let def = format!("CREATE {}INDEX {name} ON public.{} USING btree ({})", if unique { "UNIQUE " } else { "" }, table.name, names(cols));
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

    fn info(settings: &Settings) -> SessionInfo<'_> {
        SessionInfo { user: "alice", database: "pistou", pid: 7, settings }
    }

    #[test]
    fn session_functions_are_answered() {
        let s = Settings::default();
        let r = answer("SELECT version(), current_schema() AS s, current_database();", &info(&s), None).unwrap();
        assert_eq!(r.columns[1].0, "s");
        assert_eq!(r.columns[2].0, "current_database");
        assert_eq!(r.rows[0][1], Value::Text("public".into()));
        assert_eq!(r.rows[0][2], Value::Text("pistou".into()));
        assert!(matches!(&r.rows[0][0], Value::Text(v) if v.starts_with("PostgreSQL 16.0")));
        assert!(!recognizes("SELECT version FROM releases"));
    }

    #[test]
    fn unknown_catalog_queries_get_a_clear_error() {
        let s = Settings::default();
        let e = answer("SELECT * FROM pg_catalog.pg_am", &info(&s), None).unwrap_err();
        assert_eq!(e.sqlstate(), "0A000");
    }

    #[test]
    fn driver_type_lookup_and_get_tables() {
        let s = Settings::default();
        let q = "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t \
                 JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = '23'";
        let r = answer(q, &info(&s), None).unwrap();
        assert_eq!(r.rows, vec![vec![text("t"), text("pg_catalog"), text("int4")]]);
        let mut catalog = Catalog::new();
        let column = pistou_sql::Column { name: "a".into(), ty: SqlType::Int, limits: Default::default(), nullable: false, default: None };
        let table = TableSchema { name: "accounts".into(), id: 0, columns: vec![column], primary_key: vec![0], indexes: vec![] };
        catalog.apply(&pistou_sql::CatalogChange::CreateTable(table)).unwrap();
        let q = "SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME, 'x' AS TABLE_TYPE, \
                 d.description AS REMARKS FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c WHERE c.relnamespace = n.oid \
                 AND c.relname LIKE 'acc%' AND (false OR ( c.relkind IN ('r','p') AND n.nspname !~ '^pg_')) ORDER BY TABLE_TYPE";
        let r = answer(q, &info(&s), Some(&catalog)).unwrap();
        assert_eq!(r.rows, vec![vec![Value::Null, text("public"), text("accounts"), text("TABLE"), Value::Null]]);
        let r = answer(&q.replace("acc%", "zz%"), &info(&s), Some(&catalog)).unwrap();
        assert!(r.rows.is_empty());
    }

    #[test]
    fn psql_patterns_match_names() {
        assert!(pattern_matches("^(accounts)$", "accounts"));
        assert!(pattern_matches("^(acc.*)$", "accounts"));
        assert!(!pattern_matches("^(acc)$", "accounts"));
    }
}
