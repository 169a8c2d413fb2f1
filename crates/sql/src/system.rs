//! The system catalog: `pg_catalog` and `information_schema` relations as PostgreSQL
//! clients read them, computed from the [`Catalog`] a statement is bound against. They are
//! virtual: the binder turns a reference to one into a constant derived table (no storage
//! key is read), so a query over them answers from the catalog snapshot the statement sees.
//!
//! OIDs are deterministic for a given catalog: built-in objects have PostgreSQL's OIDs;
//! user objects are numbered from 16384 in table-name order, each table followed by its
//! indexes (the primary key's first, then the others in creation order), each index that
//! backs a constraint (primary key, UNIQUE) followed by that constraint. They change when DDL adds or
//! removes an object that sorts before them, as PostgreSQL's would after a re-create.

use crate::catalog::{Catalog, Column, IndexSchema, TableSchema};
use crate::expr::Func;
use crate::types::{ArrayElem, SqlType, Value};
use std::sync::Arc;

pub const OID_BOOL: u32 = 16;
pub const OID_BYTEA: u32 = 17;
pub const OID_CHAR: u32 = 18;
pub const OID_NAME: u32 = 19;
pub const OID_INT8: u32 = 20;
pub const OID_INT2: u32 = 21;
pub const OID_INT2VECTOR: u32 = 22;
pub const OID_INT4: u32 = 23;
pub const OID_TEXT: u32 = 25;
pub const OID_OID: u32 = 26;
pub const OID_OIDVECTOR: u32 = 30;
pub const OID_JSON: u32 = 114;
pub const OID_JSONB: u32 = 3802;
pub const OID_FLOAT4: u32 = 700;
pub const OID_FLOAT8: u32 = 701;
pub const OID_UNKNOWN: u32 = 705;
pub const OID_BPCHAR: u32 = 1042;
pub const OID_VARCHAR: u32 = 1043;
pub const OID_DATE: u32 = 1082;
pub const OID_TIMESTAMP: u32 = 1114;
pub const OID_TIMESTAMPTZ: u32 = 1184;
pub const OID_INTERVAL: u32 = 1186;
pub const OID_NUMERIC: u32 = 1700;
pub const OID_UUID: u32 = 2950;

/// First OID of user objects (PostgreSQL's `FirstNormalObjectId`).
pub const FIRST_USER_OID: i64 = 16_384;
pub const NAMESPACE_PG_CATALOG: i64 = 11;
pub const NAMESPACE_PUBLIC: i64 = 2200;
/// PostgreSQL 15 gives information_schema an OID assigned at initdb; this is Pistou's.
pub const NAMESPACE_INFORMATION_SCHEMA: i64 = 13_000;
/// The bootstrap superuser (PostgreSQL's OID 10), which owns every Pistou object.
pub const ROLE_OWNER: i64 = 10;
pub const ROLE_OWNER_NAME: &str = "pistou";
/// `pg_database_owner`, owner of schema public since PostgreSQL 14.
pub const ROLE_DATABASE_OWNER: i64 = 6171;
pub const DATABASE_OID: i64 = 5;
pub const DATABASE_NAME: &str = "pistou";
const AM_HEAP: i64 = 2;
const AM_BTREE: i64 = 403;
const COLLATION_DEFAULT: i64 = 100;
const COLLATION_C: i64 = 950;
/// The collations (OID, name): text compares by code point under both.
pub const COLLATIONS: [(i64, &str); 2] = [(COLLATION_DEFAULT, "default"), (COLLATION_C, "C")];
const TABLESPACE_DEFAULT: i64 = 1663;

/// A built-in type as pg_type describes it.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinType {
    pub oid: u32,
    pub typname: &'static str,
    /// What `format_type` shows.
    pub display: &'static str,
    pub len: i16,
    pub byval: bool,
    pub category: char,
    /// OID of the array type (0 for array types themselves).
    pub array: u32,
    pub collation: i64,
}

impl BuiltinType {
    /// `typstorage` / `attstorage`: plain for fixed-size types, main for numeric (kept
    /// inline, compressed), extended for the other variable-size ones, as in PostgreSQL.
    fn storage(&self) -> &'static str {
        match (self.len, self.typname) {
            (-1, "numeric") => "m",
            (-1, _) => "x",
            _ => "p",
        }
    }
}

const fn ty(
    oid: u32,
    typname: &'static str,
    display: &'static str,
    (len, byval): (i16, bool),
    category: char,
    array: u32,
    collation: i64,
) -> BuiltinType {
    BuiltinType { oid, typname, display, len, byval, category, array, collation }
}

/// The base types Pistou has or its catalog uses, sorted by OID.
pub const BUILTIN_TYPES: &[BuiltinType] = &[
    ty(OID_BOOL, "bool", "boolean", (1, true), 'B', 1000, 0),
    ty(OID_BYTEA, "bytea", "bytea", (-1, false), 'U', 1001, 0),
    ty(OID_CHAR, "char", "\"char\"", (1, true), 'Z', 1002, 0),
    ty(OID_NAME, "name", "name", (64, false), 'S', 1003, COLLATION_C),
    ty(OID_INT8, "int8", "bigint", (8, true), 'N', 1016, 0),
    ty(OID_INT2, "int2", "smallint", (2, true), 'N', 1005, 0),
    ty(OID_INT2VECTOR, "int2vector", "int2vector", (-1, false), 'A', 1006, 0),
    ty(OID_INT4, "int4", "integer", (4, true), 'N', 1007, 0),
    ty(OID_TEXT, "text", "text", (-1, false), 'S', 1009, COLLATION_DEFAULT),
    ty(OID_OID, "oid", "oid", (4, true), 'N', 1028, 0),
    ty(OID_OIDVECTOR, "oidvector", "oidvector", (-1, false), 'A', 1013, 0),
    ty(OID_JSON, "json", "json", (-1, false), 'U', 199, 0),
    ty(OID_FLOAT4, "float4", "real", (4, true), 'N', 1021, 0),
    ty(OID_FLOAT8, "float8", "double precision", (8, true), 'N', 1022, 0),
    ty(OID_BPCHAR, "bpchar", "character", (-1, false), 'S', 1014, COLLATION_DEFAULT),
    ty(OID_VARCHAR, "varchar", "character varying", (-1, false), 'S', 1015, COLLATION_DEFAULT),
    ty(OID_DATE, "date", "date", (4, true), 'D', 1182, 0),
    ty(OID_TIMESTAMP, "timestamp", "timestamp without time zone", (8, true), 'D', 1115, 0),
    ty(OID_TIMESTAMPTZ, "timestamptz", "timestamp with time zone", (8, true), 'D', 1185, 0),
    ty(OID_INTERVAL, "interval", "interval", (16, false), 'T', 1187, 0),
    ty(OID_NUMERIC, "numeric", "numeric", (-1, false), 'N', 1231, 0),
    ty(OID_UUID, "uuid", "uuid", (16, false), 'U', 2951, 0),
    ty(OID_JSONB, "jsonb", "jsonb", (-1, false), 'U', 3807, 0),
];

/// The default btree operator classes of the column types, as PostgreSQL 15 numbers them:
/// (OID, name, family, input type). Every index of Pistou uses its columns' ones.
const OPCLASSES: [(i64, &str, i64, u32); 13] = [
    (1978, "int4_ops", 1976, OID_INT4),
    (1979, "int2_ops", 1976, OID_INT2),
    (3122, "date_ops", 434, OID_DATE),
    (3123, "float8_ops", 1970, OID_FLOAT8),
    (3124, "int8_ops", 1976, OID_INT8),
    (3125, "numeric_ops", 1988, OID_NUMERIC),
    (3126, "text_ops", 1994, OID_TEXT),
    (3128, "timestamp_ops", 434, OID_TIMESTAMP),
    (10003, "bool_ops", 424, OID_BOOL),
    (10004, "bpchar_ops", 426, OID_BPCHAR),
    (10006, "bytea_ops", 428, OID_BYTEA),
    (10012, "float4_ops", 1970, OID_FLOAT4),
    (10065, "uuid_ops", 2968, OID_UUID),
];

/// The operator class an index uses for a column of type `t` (varchar's is text_ops).
fn opclass_of(t: SqlType) -> i64 {
    let input = match t {
        SqlType::Varchar => OID_TEXT,
        other => type_oid(other),
    };
    OPCLASSES.iter().find(|o| o.3 == input).map_or(0, |o| o.0)
}

/// The OID of a Pistou type (an array's is its array type's).
pub fn type_oid(t: SqlType) -> u32 {
    match t {
        SqlType::Array(e) => builtin_type(e.scalar()).array,
        other => builtin_type(other).oid,
    }
}

/// The built-in type of a Pistou type (of its element type for an array).
pub fn builtin_type(t: SqlType) -> &'static BuiltinType {
    let oid = match t {
        SqlType::Bool => OID_BOOL,
        SqlType::Int2 => OID_INT2,
        SqlType::Int4 => OID_INT4,
        SqlType::Int => OID_INT8,
        SqlType::Numeric => OID_NUMERIC,
        SqlType::Float4 => OID_FLOAT4,
        SqlType::Float => OID_FLOAT8,
        SqlType::Text => OID_TEXT,
        SqlType::Varchar => OID_VARCHAR,
        SqlType::Char => OID_BPCHAR,
        SqlType::Bytes => OID_BYTEA,
        SqlType::Date => OID_DATE,
        SqlType::Timestamp => OID_TIMESTAMP,
        SqlType::TimestampTz => OID_TIMESTAMPTZ,
        SqlType::Json => OID_JSON,
        SqlType::Jsonb => OID_JSONB,
        SqlType::Int2Vector => OID_INT2VECTOR,
        SqlType::OidVector => OID_OIDVECTOR,
        SqlType::Uuid => OID_UUID,
        SqlType::Interval => OID_INTERVAL,
        SqlType::Array(e) => return builtin_type(e.scalar()),
    };
    BUILTIN_TYPES.iter().find(|b| b.oid == oid).unwrap_or(&BUILTIN_TYPES[7])
}

/// PostgreSQL's `atttypmod` of a column: VARCHAR(n)/CHAR(n) is n + 4, NUMERIC(p, s) is
/// (p << 16 | s) + 4, -1 without a modifier.
pub fn typmod(c: &Column) -> i64 {
    match (c.ty, &c.limits) {
        (SqlType::Varchar | SqlType::Char, l) => l.max_len.map_or(-1, |n| i64::from(n) + 4),
        (SqlType::Numeric, l) => l.numeric.map_or(-1, |(p, s)| ((i64::from(p) << 16) | i64::from(s)) + 4),
        _ => -1,
    }
}

/// `format_type(type, typmod)` for the built-in types.
pub fn format_type(oid: i64, typmod: i64) -> Option<String> {
    let (base, element) = match BUILTIN_TYPES.iter().find(|b| i64::from(b.oid) == oid) {
        Some(b) => (b, false),
        None => (BUILTIN_TYPES.iter().find(|b| i64::from(b.array) == oid)?, true),
    };
    let mut s = base.display.to_string();
    if typmod >= 4 {
        match base.oid {
            OID_VARCHAR | OID_BPCHAR => s = format!("{s}({})", typmod - 4),
            OID_NUMERIC => s = format!("{s}({},{})", (typmod - 4) >> 16, (typmod - 4) & 0xffff),
            _ => {}
        }
    }
    if element {
        s.push_str("[]");
    }
    Some(s)
}

/// A user index as the catalog shows it.
#[derive(Clone, Debug)]
pub struct IndexObject {
    pub oid: i64,
    pub name: String,
    /// Positions of the indexed columns.
    pub columns: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
    /// The constraint this index backs (primary key or UNIQUE), with its OID.
    pub constraint: Option<i64>,
    /// Declared column orders (`IndexSchema::orders`; empty: all ASC NULLS LAST).
    pub orders: Vec<crate::catalog::IndexOrder>,
    /// Each part's text in `pg_get_indexdef` (a quoted column name, or an expression).
    pub parts: Vec<String>,
    /// The text of each expression part (`pg_index.indexprs`), and its type.
    pub expressions: Vec<(String, SqlType)>,
}

impl IndexObject {
    /// PostgreSQL's `indoption` bits of the `i`-th column: 1 DESC, 2 NULLS FIRST.
    fn option(&self, i: usize) -> i64 {
        self.orders.get(i).map_or(0, |o| i64::from(o.descending) | (i64::from(o.nulls_first) << 1))
    }

    /// The column's order as `pg_get_indexdef` prints it: only what differs from the default
    /// of ASC (NULLS LAST) or DESC (NULLS FIRST).
    fn order_text(&self, i: usize) -> &'static str {
        match self.orders.get(i).map(|o| (o.descending, o.nulls_first)) {
            None | Some((false, false)) => "",
            Some((false, true)) => " NULLS FIRST",
            Some((true, true)) => " DESC",
            Some((true, false)) => " DESC NULLS LAST",
        }
    }
}

/// A user table with its OID and indexes.
#[derive(Clone, Debug)]
pub struct TableObject {
    pub oid: i64,
    pub schema: Arc<TableSchema>,
    pub indexes: Vec<IndexObject>,
    /// CHECK constraints with their OIDs.
    pub checks: Vec<(i64, crate::constraints::CheckConstraint)>,
    /// FOREIGN KEY constraints with their OIDs and the referenced table's OID.
    pub foreign_keys: Vec<(i64, crate::constraints::ForeignKey)>,
}

/// Every user object of a catalog with its OID, in OID order.
pub struct Objects {
    pub tables: Vec<TableObject>,
    /// Each sequence with its OID.
    pub sequences: Vec<(i64, std::sync::Arc<crate::sequence::SequenceSchema>)>,
    /// Each view with its OID.
    pub views: Vec<(i64, std::sync::Arc<crate::view::ViewSchema>)>,
    /// The temporary namespaces holding tables, sorted: the i-th has OID
    /// `FIRST_TEMP_NAMESPACE_OID + i`.
    pub temp_namespaces: Vec<String>,
}

/// OID of the first temporary namespace (`Objects::temp_namespaces`), far above user OIDs.
const FIRST_TEMP_NAMESPACE_OID: i64 = 1_000_000_000;

/// The namespace and name of a session's temporary relation: the gateway names them
/// `pg_temp_<session>.name` in the catalog (docs/gateway.md, "Temporary tables").
pub fn temp_namespace(catalog_name: &str) -> Option<(&str, &str)> {
    if !catalog_name.starts_with("pg_temp_") {
        return None;
    }
    catalog_name.split_once('.')
}

/// A relation's name as SQL shows it (without a temporary namespace).
pub fn unqualified(catalog_name: &str) -> &str {
    temp_namespace(catalog_name).map_or(catalog_name, |(_, name)| name)
}

/// True when `index` is the one a UNIQUE constraint of `table` created (its name is the one
/// CREATE TABLE gives it: `table_col1_col2_key`).
pub(crate) fn is_constraint_index(table: &TableSchema, index: &IndexSchema) -> bool {
    if !index.unique || !index.expressions.is_empty() {
        return false;
    }
    let cols: Vec<&str> = index.columns.iter().filter_map(|&i| table.columns.get(i)).map(|c| c.name.as_str()).collect();
    index.name == format!("{}_{}_key", table.name, cols.join("_")) || table.constraints.unique.contains(&index.name)
}

impl Objects {
    pub fn of(catalog: &Catalog) -> Objects {
        let mut next = FIRST_USER_OID;
        let mut take = || {
            next += 1;
            next - 1
        };
        let mut tables = Vec::new();
        for t in catalog.tables() {
            let oid = take();
            let mut indexes = Vec::new();
            // A table created without a primary key is keyed by its hidden row id; its SQL
            // primary key, if any, is the unique index ADD PRIMARY KEY made (`<t>_pkey`).
            let row_id = t.row_id_column().is_some();
            if !row_id && !t.primary_key.is_empty() {
                let index_oid = take();
                indexes.push(IndexObject {
                    oid: index_oid,
                    name: format!("{}_pkey", t.name),
                    columns: t.primary_key.clone(),
                    unique: true,
                    primary: true,
                    constraint: Some(take()),
                    orders: Vec::new(),
                    parts: t
                        .primary_key
                        .iter()
                        .filter_map(|c| t.columns.get(*c))
                        .map(|c| quote_ident(&c.name))
                        .collect(),
                    expressions: Vec::new(),
                });
            }
            for ix in &t.indexes {
                let index_oid = take();
                let primary = row_id && ix.unique && ix.name == format!("{}_pkey", t.name);
                let constraint = (primary || is_constraint_index(t, ix)).then(&mut take);
                indexes.push(IndexObject {
                    oid: index_oid,
                    name: ix.name.clone(),
                    columns: ix.columns.clone(),
                    unique: ix.unique,
                    primary,
                    constraint,
                    orders: ix.orders.clone(),
                    parts: crate::index_expr::part_texts(t, ix),
                    expressions: crate::index_expr::expression_texts(t, ix)
                        .into_iter()
                        .zip(ix.expressions.iter().map(|e| e.ty))
                        .collect(),
                });
            }
            let checks = t.constraints.checks.iter().map(|c| (take(), c.clone())).collect();
            let foreign_keys = t.constraints.foreign_keys.iter().map(|f| (take(), f.clone())).collect();
            tables.push(TableObject { oid, schema: t.clone(), indexes, checks, foreign_keys });
        }
        let sequences = catalog.sequences().map(|s| (take(), s.clone())).collect();
        let views = catalog.views().map(|v| (take(), v.clone())).collect();
        let relations = catalog.tables().map(|t| &t.name).chain(catalog.views().map(|v| &v.name));
        let temp_namespaces: std::collections::BTreeSet<String> =
            relations.filter_map(|name| temp_namespace(name)).map(|(ns, _)| ns.to_string()).collect();
        Objects { tables, sequences, views, temp_namespaces: temp_namespaces.into_iter().collect() }
    }

    /// The OID of the namespace a relation (by catalog name) is in.
    pub fn namespace_oid(&self, catalog_name: &str) -> i64 {
        temp_namespace(catalog_name)
            .and_then(|(ns, _)| self.temp_namespaces.iter().position(|n| n == ns))
            .map_or(NAMESPACE_PUBLIC, |i| FIRST_TEMP_NAMESPACE_OID + i as i64)
    }

    /// The name of the schema a relation (by catalog name) is in.
    pub fn schema_of<'n>(&self, catalog_name: &'n str) -> &'n str {
        temp_namespace(catalog_name).map_or("public", |(ns, _)| ns)
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Option<&TableObject> {
        self.tables.iter().find(|t| t.schema.name == name)
    }

    /// (OID, name) of every relation: tables and indexes.
    pub fn relations(&self) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        for t in &self.tables {
            out.push((t.oid, t.schema.name.clone()));
            out.extend(t.indexes.iter().map(|i| (i.oid, i.name.clone())));
        }
        out.extend(self.sequences.iter().map(|(o, s)| (*o, s.name.clone())));
        out.extend(self.views.iter().map(|(o, v)| (*o, v.name.clone())));
        out
    }

    /// `pg_get_viewdef` of each view: (OID, definition). The query as Pistou's parser prints
    /// it back, not PostgreSQL's reformatted text.
    pub fn view_definitions(&self) -> Vec<(i64, String)> {
        self.views.iter().map(|(o, v)| (*o, format!("{};", v.query))).collect()
    }

    /// `pg_get_indexdef` of each index: (OID, definition, each part's text: a quoted column
    /// name or an expression).
    pub fn index_definitions(&self) -> Vec<(i64, String, Vec<String>)> {
        let mut out = Vec::new();
        for t in &self.tables {
            for ix in &t.indexes {
                let cols = ix.parts.clone();
                let def = format!(
                    "CREATE {}INDEX {} ON {}.{} USING btree ({})",
                    if ix.unique { "UNIQUE " } else { "" },
                    quote_ident(unqualified(&ix.name)),
                    quote_ident(self.schema_of(&t.schema.name)),
                    quote_ident(unqualified(&t.schema.name)),
                    ix.parts
                        .iter()
                        .enumerate()
                        .map(|(i, c)| format!("{c}{}", ix.order_text(i)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                out.push((ix.oid, def, cols));
            }
        }
        out
    }

    /// (OID, `pg_get_constraintdef`) of each constraint, in pretty form or not (CHECK
    /// expressions differ: as stored, or deparsed as PostgreSQL's ruleutils prints them).
    pub fn constraint_definitions(&self, catalog: &Catalog, pretty: bool) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        for t in &self.tables {
            for ix in &t.indexes {
                if let Some(oid) = ix.constraint {
                    let cols = column_names(&t.schema, &ix.columns);
                    let cols = cols.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", ");
                    let kind = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
                    out.push((oid, format!("{kind} ({cols})")));
                }
            }
            // PostgreSQL appends NOT VALID to a CHECK or FOREIGN KEY whose old rows are unchecked.
            let validity = |name: &str| if t.schema.constraint_is_valid(name) { "" } else { " NOT VALID" };
            for (oid, c) in &t.checks {
                let expression = match pretty {
                    true => c.expr.clone(),
                    false => crate::constraints::bind_check(catalog, &t.schema, &c.expr)
                        .map_or_else(|_| c.expr.clone(), |e| crate::index_expr::deparse(&t.schema, &e)),
                };
                out.push((*oid, format!("CHECK ({expression}){}", validity(&c.name))));
            }
            for (oid, f) in &t.foreign_keys {
                let parent = self.table(&f.parent).map(|p| &*p.schema);
                let def = crate::constraints::foreign_key_definition(&t.schema, parent, f);
                out.push((*oid, format!("{def}{}", validity(&f.name))));
            }
        }
        out
    }
}

/// `pg_index.indkey`'s entry of a part: the column's attnum, 0 for an expression.
fn attnum(column: usize) -> i64 {
    match column {
        crate::catalog::IndexSchema::EXPRESSION => 0,
        c => c as i64 + 1,
    }
}

/// The type of each part of an index.
fn part_types(t: &TableSchema, ix: &IndexObject) -> Vec<Option<SqlType>> {
    let mut expressions = ix.expressions.iter();
    ix.columns
        .iter()
        .map(|&c| match c {
            crate::catalog::IndexSchema::EXPRESSION => expressions.next().map(|e| e.1),
            c => t.columns.get(c).map(|c| c.ty),
        })
        .collect()
}

fn column_names(t: &TableSchema, positions: &[usize]) -> Vec<String> {
    positions.iter().filter_map(|&i| t.columns.get(i)).map(|c| c.name.clone()).collect()
}

/// An identifier as PostgreSQL's `quote_ident` writes it.
pub fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !is_reserved(s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn is_reserved(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "both",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "constraint",
        "create",
        "current_catalog",
        "current_date",
        "current_role",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "deferrable",
        "desc",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "false",
        "fetch",
        "for",
        "foreign",
        "from",
        "grant",
        "group",
        "having",
        "in",
        "initially",
        "intersect",
        "into",
        "lateral",
        "leading",
        "limit",
        "localtime",
        "localtimestamp",
        "not",
        "null",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "placing",
        "primary",
        "references",
        "returning",
        "select",
        "session_user",
        "some",
        "symmetric",
        "table",
        "then",
        "to",
        "trailing",
        "true",
        "union",
        "unique",
        "user",
        "using",
        "variadic",
        "when",
        "where",
        "window",
        "with",
    ];
    RESERVED.contains(&s)
}

/// pg_attribute.attidentity: `a` (ALWAYS), `d` (BY DEFAULT) or empty.
fn identity_code(c: &Column) -> &'static str {
    match c.generated.as_ref().and_then(|g| g.identity) {
        Some(crate::catalog::Identity::Always) => "a",
        Some(crate::catalog::Identity::ByDefault) => "d",
        None => "",
    }
}

/// A column default as `pg_get_expr` shows it: numbers and booleans bare, other values
/// quoted and cast to the column type.
pub fn default_text(c: &Column) -> Option<String> {
    if let Some(g) = &c.generated {
        // SERIAL is a default drawing from its sequence; IDENTITY columns have none.
        return g.identity.is_none().then(|| format!("nextval('{}'::regclass)", unqualified(&g.sequence)));
    }
    if let Some(func) = c.volatile_default {
        return Some(match func {
            Func::CurrentDate => "CURRENT_DATE".to_string(),
            Func::LocalTimestamp => "LOCALTIMESTAMP".to_string(),
            other => format!("{}()", other.name()),
        });
    }
    let v = c.default.as_ref()?;
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let typed = |s: &str| {
        let display = format_type(i64::from(builtin_type(c.ty).oid), typmod(c)).unwrap_or_default();
        format!("{}::{display}", quoted(s))
    };
    Some(match v {
        Value::Null => "NULL".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) if *i >= 0 => i.to_string(),
        Value::Numeric(d) if !d.is_sign_negative() => d.to_string(),
        Value::Float(f) if *f >= 0.0 && f.is_finite() => crate::types::cast(v, SqlType::Text)
            .ok()
            .and_then(|t| if let Value::Text(s) = t { Some(s) } else { None })
            .unwrap_or_else(|| f.to_string()),
        other => match crate::types::cast(other, SqlType::Text) {
            Ok(Value::Text(s)) => typed(&s),
            _ => return None,
        },
    })
}

/// A virtual relation's columns and rows.
pub(crate) struct Relation {
    pub columns: Vec<(&'static str, SqlType)>,
    pub rows: Vec<Vec<Value>>,
}

/// Column types, short.
const OID: SqlType = SqlType::Int4;
const NAME: SqlType = SqlType::Text;
const BOOL: SqlType = SqlType::Bool;
const INT2: SqlType = SqlType::Int2;
const INT4: SqlType = SqlType::Int4;
const INT8: SqlType = SqlType::Int;
const TEXT: SqlType = SqlType::Text;
const FLOAT4: SqlType = SqlType::Float4;

fn oid(v: i64) -> Value {
    Value::Int(v)
}
fn name(s: &str) -> Value {
    Value::Text(s.to_string())
}
fn b(v: bool) -> Value {
    Value::Bool(v)
}
fn int(v: i64) -> Value {
    Value::Int(v)
}
const NULL: Value = Value::Null;

/// The pg_catalog relations Pistou computes.
pub const PG_CATALOG_RELATIONS: &[&str] = &[
    "pg_am",
    "pg_attrdef",
    "pg_attribute",
    "pg_auth_members",
    "pg_class",
    "pg_collation",
    "pg_constraint",
    "pg_database",
    "pg_description",
    "pg_index",
    "pg_indexes",
    "pg_inherits",
    "pg_namespace",
    "pg_opclass",
    "pg_policy",
    "pg_proc",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_roles",
    "pg_sequence",
    "pg_settings",
    "pg_statistic_ext",
    "pg_tables",
    "pg_trigger",
    "pg_type",
    "pg_user",
    "pg_views",
];

/// PostgreSQL's OIDs of the catalog tables clients name as `'pg_class'::regclass` (e.g.
/// as `pg_description.classoid`).
pub const SYSTEM_RELATION_OIDS: &[(i64, &str)] = &[
    (1247, "pg_type"),
    (1249, "pg_attribute"),
    (1255, "pg_proc"),
    (1259, "pg_class"),
    (1262, "pg_database"),
    (2601, "pg_am"),
    (2604, "pg_attrdef"),
    (2606, "pg_constraint"),
    (2609, "pg_description"),
    (2610, "pg_index"),
    (2615, "pg_namespace"),
];

/// The information_schema relations Pistou computes.
pub const INFORMATION_SCHEMA_RELATIONS: &[&str] = &[
    "check_constraints",
    "columns",
    "constraint_column_usage",
    "key_column_usage",
    "referential_constraints",
    "schemata",
    "sequences",
    "table_constraints",
    "tables",
    "views",
];

/// Settings pg_settings shows: the server's fixed ones (the gateway's session settings are
/// SHOW's and current_setting's).
const SETTINGS: &[(&str, &str, &str)] = &[
    ("client_encoding", "UTF8", "Client Connection Defaults"),
    ("max_identifier_length", "63", "Preset Options"),
    ("server_encoding", "UTF8", "Preset Options"),
    ("server_version", "15.0", "Preset Options"),
    ("server_version_num", "150000", "Preset Options"),
    ("standard_conforming_strings", "on", "Version and Platform Compatibility"),
];

/// The relation `schema.name` (schema is `pg_catalog` or `information_schema`), or None if
/// Pistou does not have it.
pub(crate) fn relation(catalog: &Catalog, schema: &str, name: &str) -> Option<Relation> {
    let objects = Objects::of(catalog);
    match schema {
        "pg_catalog" => pg_catalog(&objects, name),
        "information_schema" => information_schema(&objects, name),
        _ => None,
    }
}

fn relation_of(columns: &[(&'static str, SqlType)], rows: Vec<Vec<Value>>) -> Relation {
    Relation { columns: columns.to_vec(), rows }
}

fn namespaces() -> [(i64, &'static str, i64); 3] {
    [
        (NAMESPACE_PG_CATALOG, "pg_catalog", ROLE_OWNER),
        (NAMESPACE_PUBLIC, "public", ROLE_DATABASE_OWNER),
        (NAMESPACE_INFORMATION_SCHEMA, "information_schema", ROLE_OWNER),
    ]
}

fn roles() -> [(i64, &'static str, bool); 2] {
    [(ROLE_DATABASE_OWNER, "pg_database_owner", false), (ROLE_OWNER, ROLE_OWNER_NAME, true)]
}

/// All roles as (OID, name): for `pg_get_userbyid`.
pub fn role_names() -> Vec<(i64, &'static str)> {
    roles().iter().map(|(o, n, _)| (*o, *n)).collect()
}

/// All namespaces as (OID, name).
pub fn namespace_names() -> Vec<(i64, &'static str)> {
    namespaces().iter().map(|(o, n, _)| (*o, *n)).collect()
}

fn pg_catalog(o: &Objects, relname: &str) -> Option<Relation> {
    Some(match relname {
        "pg_namespace" => relation_of(
            &[("oid", OID), ("nspname", NAME), ("nspowner", OID), ("nspacl", TEXT)],
            namespaces()
                .iter()
                .map(|(o, n, owner)| vec![oid(*o), name(n), oid(*owner), NULL])
                .chain(
                    o.temp_namespaces
                        .iter()
                        .enumerate()
                        .map(|(i, n)| vec![oid(FIRST_TEMP_NAMESPACE_OID + i as i64), name(n), oid(ROLE_OWNER), NULL]),
                )
                .collect(),
        ),
        "pg_am" => relation_of(
            &[("oid", OID), ("amname", NAME), ("amhandler", TEXT), ("amtype", TEXT)],
            vec![
                vec![oid(AM_HEAP), name("heap"), name("heap_tableam_handler"), name("t")],
                vec![oid(AM_BTREE), name("btree"), name("bthandler"), name("i")],
            ],
        ),
        "pg_class" => pg_class(o),
        "pg_attribute" => pg_attribute(o),
        "pg_attrdef" => {
            let mut rows = Vec::new();
            let mut next = 0;
            for t in &o.tables {
                for (i, c) in t.schema.visible_columns() {
                    if let Some(text) = default_text(c) {
                        next += 1;
                        rows.push(vec![oid(t.oid * 1000 + next), oid(t.oid), int(i as i64 + 1), name(&text)]);
                    }
                }
            }
            relation_of(&[("oid", OID), ("adrelid", OID), ("adnum", INT2), ("adbin", TEXT)], rows)
        }
        "pg_type" => pg_type(),
        "pg_index" => pg_index(o),
        "pg_constraint" => pg_constraint(o),
        "pg_database" => relation_of(
            &[
                ("oid", OID),
                ("datname", NAME),
                ("datdba", OID),
                ("encoding", INT4),
                ("datlocprovider", TEXT),
                ("datistemplate", BOOL),
                ("datallowconn", BOOL),
                ("datconnlimit", INT4),
                ("dattablespace", OID),
                ("datcollate", TEXT),
                ("datctype", TEXT),
                ("daticulocale", TEXT),
                ("datcollversion", TEXT),
                ("datacl", TEXT),
            ],
            vec![vec![
                oid(DATABASE_OID),
                name(DATABASE_NAME),
                oid(ROLE_OWNER),
                int(6),
                name("c"),
                b(false),
                b(true),
                int(-1),
                oid(TABLESPACE_DEFAULT),
                name("C"),
                name("C"),
                NULL,
                NULL,
                NULL,
            ]],
        ),
        "pg_roles" | "pg_user" => {
            let roles_view = relname == "pg_roles";
            let columns: &[(&'static str, SqlType)] = if roles_view {
                &[
                    ("oid", OID),
                    ("rolname", NAME),
                    ("rolsuper", BOOL),
                    ("rolinherit", BOOL),
                    ("rolcreaterole", BOOL),
                    ("rolcreatedb", BOOL),
                    ("rolcanlogin", BOOL),
                    ("rolreplication", BOOL),
                    ("rolconnlimit", INT4),
                    ("rolpassword", TEXT),
                    ("rolvaliduntil", SqlType::TimestampTz),
                    ("rolbypassrls", BOOL),
                    ("rolconfig", TEXT),
                ]
            } else {
                &[
                    ("usename", NAME),
                    ("usesysid", OID),
                    ("usecreatedb", BOOL),
                    ("usesuper", BOOL),
                    ("userepl", BOOL),
                    ("usebypassrls", BOOL),
                    ("passwd", TEXT),
                    ("valuntil", SqlType::TimestampTz),
                    ("useconfig", TEXT),
                ]
            };
            let rows = roles()
                .iter()
                .filter(|(_, _, login)| roles_view || *login)
                .map(|(o, n, login)| {
                    let s = *login;
                    if roles_view {
                        vec![
                            oid(*o),
                            name(n),
                            b(s),
                            b(true),
                            b(s),
                            b(s),
                            b(s),
                            b(s),
                            int(-1),
                            name("********"),
                            NULL,
                            b(s),
                            NULL,
                        ]
                    } else {
                        vec![name(n), oid(*o), b(s), b(s), b(s), b(s), name("********"), NULL, NULL]
                    }
                })
                .collect();
            relation_of(columns, rows)
        }
        "pg_auth_members" => {
            relation_of(&[("roleid", OID), ("member", OID), ("grantor", OID), ("admin_option", BOOL)], Vec::new())
        }
        "pg_settings" => relation_of(
            &[
                ("name", TEXT),
                ("setting", TEXT),
                ("unit", TEXT),
                ("category", TEXT),
                ("context", TEXT),
                ("vartype", TEXT),
            ],
            SETTINGS
                .iter()
                .map(|(n, v, cat)| vec![name(n), name(v), NULL, name(cat), name("internal"), name("string")])
                .collect(),
        ),
        // Pistou has no user functions, comments, collations beyond the default, policies,
        // inheritance, triggers, extended statistics or views: these are empty.
        "pg_proc" => relation_of(
            &[
                ("oid", OID),
                ("proname", NAME),
                ("pronamespace", OID),
                ("proowner", OID),
                ("prokind", TEXT),
                ("proretset", BOOL),
                ("prorettype", OID),
                ("pronargs", INT2),
                ("proargtypes", TEXT),
                ("prosrc", TEXT),
            ],
            Vec::new(),
        ),
        "pg_description" => {
            relation_of(&[("objoid", OID), ("classoid", OID), ("objsubid", INT4), ("description", TEXT)], Vec::new())
        }
        "pg_sequence" => relation_of(
            &[
                ("seqrelid", OID),
                ("seqtypid", OID),
                ("seqstart", INT8),
                ("seqincrement", INT8),
                ("seqmax", INT8),
                ("seqmin", INT8),
                ("seqcache", INT8),
                ("seqcycle", BOOL),
            ],
            o.sequences
                .iter()
                .map(|(o, s)| {
                    let ty = i64::from(builtin_type(s.ty).oid);
                    vec![oid(*o), oid(ty), int(s.start), int(s.increment), int(s.max), int(s.min), int(1), b(false)]
                })
                .collect(),
        ),
        "pg_collation" => relation_of(
            &[("oid", OID), ("collname", NAME), ("collnamespace", OID), ("collprovider", TEXT)],
            vec![
                vec![oid(COLLATION_DEFAULT), name("default"), oid(NAMESPACE_PG_CATALOG), name("d")],
                vec![oid(COLLATION_C), name("C"), oid(NAMESPACE_PG_CATALOG), name("c")],
            ],
        ),
        "pg_opclass" => relation_of(
            &[
                ("oid", OID),
                ("opcmethod", OID),
                ("opcname", NAME),
                ("opcnamespace", OID),
                ("opcowner", OID),
                ("opcfamily", OID),
                ("opcintype", OID),
                ("opcdefault", BOOL),
                ("opckeytype", OID),
            ],
            OPCLASSES
                .iter()
                .map(|(o, n, family, input)| {
                    let owner = oid(ROLE_OWNER);
                    let (am, ns, input) = (oid(AM_BTREE), oid(NAMESPACE_PG_CATALOG), oid(i64::from(*input)));
                    vec![oid(*o), am, name(n), ns, owner, oid(*family), input, b(true), oid(0)]
                })
                .collect(),
        ),
        "pg_inherits" => relation_of(
            &[("inhrelid", OID), ("inhparent", OID), ("inhseqno", INT4), ("inhdetachpending", BOOL)],
            Vec::new(),
        ),
        "pg_trigger" => relation_of(
            &[
                ("oid", OID),
                ("tgrelid", OID),
                ("tgparentid", OID),
                ("tgname", NAME),
                ("tgenabled", TEXT),
                ("tgisinternal", BOOL),
            ],
            Vec::new(),
        ),
        "pg_policy" => relation_of(
            &[
                ("oid", OID),
                ("polname", NAME),
                ("polrelid", OID),
                ("polcmd", TEXT),
                ("polpermissive", BOOL),
                ("polroles", TEXT),
                ("polqual", TEXT),
                ("polwithcheck", TEXT),
            ],
            Vec::new(),
        ),
        "pg_statistic_ext" => relation_of(
            &[
                ("oid", OID),
                ("stxrelid", OID),
                ("stxname", NAME),
                ("stxnamespace", OID),
                ("stxowner", OID),
                ("stxstattarget", INT4),
                ("stxkeys", TEXT),
                ("stxkind", TEXT),
                ("stxexprs", TEXT),
            ],
            Vec::new(),
        ),
        "pg_publication" => relation_of(
            &[
                ("oid", OID),
                ("pubname", NAME),
                ("pubowner", OID),
                ("puballtables", BOOL),
                ("pubinsert", BOOL),
                ("pubupdate", BOOL),
                ("pubdelete", BOOL),
                ("pubtruncate", BOOL),
                ("pubviaroot", BOOL),
            ],
            Vec::new(),
        ),
        "pg_publication_namespace" => relation_of(&[("oid", OID), ("pnpubid", OID), ("pnnspid", OID)], Vec::new()),
        "pg_publication_rel" => relation_of(
            &[("oid", OID), ("prpubid", OID), ("prrelid", OID), ("prqual", TEXT), ("prattrs", TEXT)],
            Vec::new(),
        ),
        "pg_views" => relation_of(
            &[("schemaname", NAME), ("viewname", NAME), ("viewowner", NAME), ("definition", TEXT)],
            o.view_definitions()
                .into_iter()
                .zip(&o.views)
                .map(|((_, def), (_, v))| {
                    vec![
                        name(o.schema_of(&v.name)),
                        name(unqualified(&v.name)),
                        name(ROLE_OWNER_NAME),
                        Value::Text(def),
                    ]
                })
                .collect(),
        ),
        "pg_tables" => relation_of(
            &[
                ("schemaname", NAME),
                ("tablename", NAME),
                ("tableowner", NAME),
                ("tablespace", NAME),
                ("hasindexes", BOOL),
                ("hasrules", BOOL),
                ("hastriggers", BOOL),
                ("rowsecurity", BOOL),
            ],
            o.tables
                .iter()
                .map(|t| {
                    vec![
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&t.schema.name)),
                        name(ROLE_OWNER_NAME),
                        NULL,
                        b(!t.indexes.is_empty()),
                        b(false),
                        b(false),
                        b(false),
                    ]
                })
                .collect(),
        ),
        "pg_indexes" => {
            let defs = o.index_definitions();
            let mut rows = Vec::new();
            for t in &o.tables {
                for ix in &t.indexes {
                    let def = defs.iter().find(|d| d.0 == ix.oid).map(|d| d.1.clone()).unwrap_or_default();
                    let (schema, table) = (o.schema_of(&t.schema.name), unqualified(&t.schema.name));
                    rows.push(vec![name(schema), name(table), name(unqualified(&ix.name)), NULL, Value::Text(def)]);
                }
            }
            relation_of(
                &[
                    ("schemaname", NAME),
                    ("tablename", NAME),
                    ("indexname", NAME),
                    ("tablespace", NAME),
                    ("indexdef", TEXT),
                ],
                rows,
            )
        }
        _ => return None,
    })
}

fn pg_class(o: &Objects) -> Relation {
    let columns = [
        ("oid", OID),
        ("relname", NAME),
        ("relnamespace", OID),
        ("reltype", OID),
        ("reloftype", OID),
        ("relowner", OID),
        ("relam", OID),
        ("relfilenode", OID),
        ("reltablespace", OID),
        ("relpages", INT4),
        ("reltuples", FLOAT4),
        ("relallvisible", INT4),
        ("reltoastrelid", OID),
        ("relhasindex", BOOL),
        ("relisshared", BOOL),
        ("relpersistence", TEXT),
        ("relkind", TEXT),
        ("relnatts", INT2),
        ("relchecks", INT2),
        ("relhasrules", BOOL),
        ("relhastriggers", BOOL),
        ("relhassubclass", BOOL),
        ("relrowsecurity", BOOL),
        ("relforcerowsecurity", BOOL),
        ("relispopulated", BOOL),
        ("relreplident", TEXT),
        ("relispartition", BOOL),
        ("relrewrite", OID),
        ("relacl", TEXT),
        ("reloptions", SqlType::Array(ArrayElem::Text)),
        ("relpartbound", TEXT),
    ];
    // relchecks counts CHECK constraints; relhastriggers is PostgreSQL's sign of foreign keys
    // on or to the table (its FK triggers): psql lists those sections only when they are set.
    let row = |oid_: i64,
               relname: &str,
               am: i64,
               (hasindex, checks, triggers): (bool, usize, bool),
               kind: &str,
               natts: usize| {
        let namespace = o.namespace_oid(relname);
        vec![
            oid(oid_),
            name(unqualified(relname)),
            oid(namespace),
            oid(0),
            oid(0),
            oid(ROLE_OWNER),
            oid(am),
            oid(oid_),
            oid(0),
            int(0),
            Value::Float(-1.0),
            int(0),
            oid(0),
            b(hasindex),
            b(false),
            name(if namespace == NAMESPACE_PUBLIC { "p" } else { "t" }),
            name(kind),
            int(natts as i64),
            int(checks as i64),
            b(false),
            b(triggers),
            b(false),
            b(false),
            b(false),
            b(true),
            name(if kind == "r" { "d" } else { "n" }),
            b(false),
            oid(0),
            NULL,
            NULL,
            NULL,
        ]
    };
    let mut rows = Vec::new();
    for t in &o.tables {
        let referenced = o.tables.iter().any(|c| c.foreign_keys.iter().any(|(_, fk)| fk.parent == t.schema.name));
        let flags = (!t.indexes.is_empty(), t.checks.len(), referenced || !t.foreign_keys.is_empty());
        // relnatts counts dropped columns too (their attnums stay taken), not the row id.
        let natts = t.schema.columns.iter().filter(|c| c.name != crate::catalog::ROW_ID_COLUMN).count();
        rows.push(row(t.oid, &t.schema.name, AM_HEAP, flags, "r", natts));
        for ix in &t.indexes {
            rows.push(row(ix.oid, &ix.name, AM_BTREE, (false, 0, false), "i", ix.columns.len()));
        }
    }
    for (oid_, sequence) in &o.sequences {
        rows.push(row(*oid_, &sequence.name, 0, (false, 0, false), "S", 3));
    }
    // relhasrules stays false: Pistou has no pg_rewrite (a view is its query, not a rule).
    for (oid_, view) in &o.views {
        rows.push(row(*oid_, &view.name, 0, (false, 0, false), "v", view.columns.len()));
    }
    relation_of(&columns, rows)
}

fn pg_attribute(o: &Objects) -> Relation {
    let columns = [
        ("attrelid", OID),
        ("attname", NAME),
        ("atttypid", OID),
        ("attstattarget", INT4),
        ("attlen", INT2),
        ("attnum", INT2),
        ("attndims", INT4),
        ("atttypmod", INT4),
        ("attbyval", BOOL),
        ("attalign", TEXT),
        ("attstorage", TEXT),
        ("attcompression", TEXT),
        ("attnotnull", BOOL),
        ("atthasdef", BOOL),
        ("atthasmissing", BOOL),
        ("attidentity", TEXT),
        ("attgenerated", TEXT),
        ("attisdropped", BOOL),
        ("attislocal", BOOL),
        ("attinhcount", INT4),
        ("attcollation", OID),
        ("attacl", TEXT),
        ("attoptions", TEXT),
        ("attfdwoptions", TEXT),
    ];
    let row = |rel: i64, num: usize, c: &Column, notnull: bool, hasdef: bool| {
        let t = builtin_type(c.ty);
        vec![
            oid(rel),
            name(&c.name),
            oid(i64::from(t.oid)),
            int(-1),
            int(i64::from(t.len)),
            int(num as i64),
            int(0),
            int(typmod(c)),
            b(t.byval),
            name(match t.len {
                8 => "d",
                4 => "i",
                2 => "s",
                1 => "c",
                _ => "i",
            }),
            name(t.storage()),
            name(""),
            b(notnull),
            b(hasdef),
            b(false),
            name(identity_code(c)),
            name(""),
            b(false),
            b(true),
            int(0),
            oid(t.collation),
            NULL,
            NULL,
            NULL,
        ]
    };
    let mut rows = Vec::new();
    for t in &o.tables {
        for (i, c) in t.schema.visible_columns() {
            let notnull = !c.nullable || t.schema.primary_key.contains(&i);
            rows.push(row(t.oid, i + 1, c, notnull, default_text(c).is_some()));
        }
        for ix in &t.indexes {
            for (k, &col) in ix.columns.iter().enumerate() {
                if let Some(c) = t.schema.columns.get(col) {
                    rows.push(row(ix.oid, k + 1, c, false, false));
                }
            }
        }
    }
    for (view_oid, view) in &o.views {
        for (i, c) in view.columns.iter().enumerate() {
            rows.push(row(*view_oid, i + 1, c, false, false));
        }
    }
    relation_of(&columns, rows)
}

fn pg_type() -> Relation {
    let columns = [
        ("oid", OID),
        ("typname", NAME),
        ("typnamespace", OID),
        ("typowner", OID),
        ("typlen", INT2),
        ("typbyval", BOOL),
        ("typtype", TEXT),
        ("typcategory", TEXT),
        ("typispreferred", BOOL),
        ("typisdefined", BOOL),
        ("typdelim", TEXT),
        ("typrelid", OID),
        ("typelem", OID),
        ("typarray", OID),
        ("typinput", TEXT),
        ("typoutput", TEXT),
        ("typreceive", TEXT),
        ("typsend", TEXT),
        ("typalign", TEXT),
        ("typstorage", TEXT),
        ("typnotnull", BOOL),
        ("typbasetype", OID),
        ("typtypmod", INT4),
        ("typndims", INT4),
        ("typcollation", OID),
        ("typdefault", TEXT),
        ("typacl", TEXT),
    ];
    let mut all: Vec<Vec<Value>> = Vec::new();
    for t in BUILTIN_TYPES {
        let preferred = matches!(t.oid, OID_BOOL | OID_TEXT | OID_FLOAT8 | OID_TIMESTAMPTZ | OID_OID);
        let io = |suffix: &str| name(&format!("{}{suffix}", t.typname));
        let align = match t.len {
            8 => "d",
            2 => "s",
            1 => "c",
            _ => "i",
        };
        let storage = t.storage();
        all.push(vec![
            oid(i64::from(t.oid)),
            name(t.typname),
            oid(NAMESPACE_PG_CATALOG),
            oid(ROLE_OWNER),
            int(i64::from(t.len)),
            b(t.byval),
            name("b"),
            Value::Text(t.category.to_string()),
            b(preferred),
            b(true),
            name(","),
            oid(0),
            oid(0),
            oid(i64::from(t.array)),
            io("in"),
            io("out"),
            io("recv"),
            io("send"),
            name(align),
            name(storage),
            b(false),
            oid(0),
            int(-1),
            int(0),
            oid(t.collation),
            NULL,
            NULL,
        ]);
        let array_io = |f: &str| name(f);
        all.push(vec![
            oid(i64::from(t.array)),
            name(&format!("_{}", t.typname)),
            oid(NAMESPACE_PG_CATALOG),
            oid(ROLE_OWNER),
            int(-1),
            b(false),
            name("b"),
            name("A"),
            b(false),
            b(true),
            name(","),
            oid(0),
            oid(i64::from(t.oid)),
            oid(0),
            array_io("array_in"),
            array_io("array_out"),
            array_io("array_recv"),
            array_io("array_send"),
            name(if t.len == 8 { "d" } else { "i" }),
            name("x"),
            b(false),
            oid(0),
            int(-1),
            int(0),
            oid(t.collation),
            NULL,
            NULL,
        ]);
    }
    all.sort_by_key(|r| match r.first() {
        Some(Value::Int(i)) => *i,
        _ => 0,
    });
    relation_of(&columns, all)
}

/// `int2vector` / `oidvector` text form: values separated by spaces.
fn vector_text(values: impl Iterator<Item = i64>) -> Value {
    Value::Text(values.map(|v| v.to_string()).collect::<Vec<_>>().join(" "))
}

/// An array's text form, as PostgreSQL's array output writes it: `{1,2}`, `{a,"b c",NULL}`.
pub(crate) fn array_text(values: impl Iterator<Item = Value>) -> Value {
    Value::Text(crate::array::format_items(values.map(|v| match v {
        Value::Null => None,
        other => Some(match crate::types::cast(&other, SqlType::Text) {
            Ok(Value::Text(s)) => s,
            _ => other.to_string(),
        }),
    })))
}

fn pg_index(o: &Objects) -> Relation {
    let columns = [
        ("indexrelid", OID),
        ("indrelid", OID),
        ("indnatts", INT2),
        ("indnkeyatts", INT2),
        ("indisunique", BOOL),
        ("indnullsnotdistinct", BOOL),
        ("indisprimary", BOOL),
        ("indisexclusion", BOOL),
        ("indimmediate", BOOL),
        ("indisclustered", BOOL),
        ("indisvalid", BOOL),
        ("indcheckxmin", BOOL),
        ("indisready", BOOL),
        ("indislive", BOOL),
        ("indisreplident", BOOL),
        ("indkey", SqlType::Int2Vector),
        ("indcollation", SqlType::OidVector),
        ("indclass", SqlType::OidVector),
        ("indoption", SqlType::Int2Vector),
        ("indexprs", TEXT),
        ("indpred", TEXT),
    ];
    let mut rows = Vec::new();
    for t in &o.tables {
        for ix in &t.indexes {
            let n = ix.columns.len() as i64;
            let types = part_types(&t.schema, ix);
            let collations = types.iter().map(|ty| ty.map_or(0, |ty| builtin_type(ty).collation));
            rows.push(vec![
                oid(ix.oid),
                oid(t.oid),
                int(n),
                int(n),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(t.schema.index_is_valid(&ix.name)),
                b(false),
                b(true),
                b(true),
                b(false),
                vector_text(ix.columns.iter().map(|&c| attnum(c))),
                vector_text(collations),
                vector_text(types.iter().map(|ty| ty.map_or(0, opclass_of))),
                vector_text((0..ix.columns.len()).map(|i| ix.option(i))),
                if ix.expressions.is_empty() {
                    NULL
                } else {
                    Value::Text(ix.expressions.iter().map(|e| e.0.as_str()).collect::<Vec<_>>().join(", "))
                },
                NULL,
            ]);
        }
    }
    relation_of(&columns, rows)
}

fn pg_constraint(o: &Objects) -> Relation {
    let columns = [
        ("oid", OID),
        ("conname", NAME),
        ("connamespace", OID),
        ("contype", TEXT),
        ("condeferrable", BOOL),
        ("condeferred", BOOL),
        ("convalidated", BOOL),
        ("conrelid", OID),
        ("contypid", OID),
        ("conindid", OID),
        ("conparentid", OID),
        ("confrelid", OID),
        ("confupdtype", TEXT),
        ("confdeltype", TEXT),
        ("confmatchtype", TEXT),
        ("conislocal", BOOL),
        ("coninhcount", INT4),
        ("connoinherit", BOOL),
        ("conkey", SqlType::Array(ArrayElem::Int2)),
        ("confkey", SqlType::Array(ArrayElem::Int2)),
        ("conbin", TEXT),
    ];
    let mut rows = Vec::new();
    for t in &o.tables {
        for ix in &t.indexes {
            let Some(con) = ix.constraint else { continue };
            rows.push(vec![
                oid(con),
                name(unqualified(&ix.name)),
                oid(o.namespace_oid(&t.schema.name)),
                name(if ix.primary { "p" } else { "u" }),
                b(false),
                b(false),
                b(t.schema.constraint_is_valid(&ix.name)),
                oid(t.oid),
                oid(0),
                oid(ix.oid),
                oid(0),
                oid(0),
                name(" "),
                name(" "),
                name(" "),
                b(true),
                int(0),
                b(true),
                array_text(ix.columns.iter().map(|c| int(*c as i64 + 1))),
                NULL,
                NULL,
            ]);
        }
        for (con, c) in &t.checks {
            rows.push(vec![
                oid(*con),
                name(unqualified(&c.name)),
                oid(o.namespace_oid(&t.schema.name)),
                name("c"),
                b(false),
                b(false),
                b(t.schema.constraint_is_valid(&c.name)),
                oid(t.oid),
                oid(0),
                oid(0),
                oid(0),
                oid(0),
                name(" "),
                name(" "),
                name(" "),
                b(true),
                int(0),
                b(false),
                array_text(check_columns(o, t, c).into_iter().map(|c| int(c as i64 + 1))),
                NULL,
                Value::Text(c.expr.clone()),
            ]);
        }
        for (con, f) in &t.foreign_keys {
            let parent = o.table(&f.parent);
            // The index of the referenced key (its primary key or unique index).
            let index = parent.and_then(|p| {
                p.indexes.iter().find(|ix| {
                    ix.unique
                        && ix.columns.len() == f.parent_columns.len()
                        && ix.columns.iter().all(|c| f.parent_columns.contains(c))
                })
            });
            rows.push(vec![
                oid(*con),
                name(unqualified(&f.name)),
                oid(o.namespace_oid(&t.schema.name)),
                name("f"),
                b(f.deferrable),
                b(f.initially_deferred),
                b(t.schema.constraint_is_valid(&f.name)),
                oid(t.oid),
                oid(0),
                oid(index.map_or(0, |i| i.oid)),
                oid(0),
                oid(parent.map_or(0, |p| p.oid)),
                name(f.on_update.code()),
                name(f.on_delete.code()),
                name("s"),
                b(true),
                int(0),
                b(true),
                array_text(f.columns.iter().map(|c| int(*c as i64 + 1))),
                array_text(f.parent_columns.iter().map(|c| int(*c as i64 + 1))),
                NULL,
            ]);
        }
    }
    relation_of(&columns, rows)
}

/// Positions of the columns a CHECK constraint uses, sorted and distinct (`conkey`).
fn check_columns(o: &Objects, t: &TableObject, c: &crate::constraints::CheckConstraint) -> Vec<usize> {
    let _ = o;
    let mut cols = Vec::new();
    if let Ok(e) = crate::constraints::bind_check(&Catalog::new(), &t.schema, &c.expr) {
        crate::bind::collect_all_columns(&e, &mut cols);
    }
    cols.sort_unstable();
    cols.dedup();
    cols
}

fn information_schema(o: &Objects, relname: &str) -> Option<Relation> {
    let catalog_name = || name(DATABASE_NAME);
    let yes_no = |v: bool| name(if v { "YES" } else { "NO" });
    Some(match relname {
        "schemata" => relation_of(
            &[
                ("catalog_name", NAME),
                ("schema_name", NAME),
                ("schema_owner", NAME),
                ("default_character_set_catalog", NAME),
                ("default_character_set_schema", NAME),
                ("default_character_set_name", NAME),
                ("sql_path", TEXT),
            ],
            namespaces()
                .iter()
                .map(|(_, n, owner)| {
                    let owner = role_names().into_iter().find(|(o, _)| o == owner).map_or("", |(_, n)| n);
                    vec![catalog_name(), name(n), name(owner), NULL, NULL, NULL, NULL]
                })
                .collect(),
        ),
        "tables" => relation_of(
            &[
                ("table_catalog", NAME),
                ("table_schema", NAME),
                ("table_name", NAME),
                ("table_type", TEXT),
                ("self_referencing_column_name", NAME),
                ("reference_generation", TEXT),
                ("user_defined_type_catalog", NAME),
                ("user_defined_type_schema", NAME),
                ("user_defined_type_name", NAME),
                ("is_insertable_into", TEXT),
                ("is_typed", TEXT),
                ("commit_action", TEXT),
            ],
            {
                let row = |relation: &str, kind: &str, insertable: &str| {
                    let temporary = temp_namespace(relation).is_some();
                    vec![
                        catalog_name(),
                        name(o.schema_of(relation)),
                        name(unqualified(relation)),
                        name(if temporary { "LOCAL TEMPORARY" } else { kind }),
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        name(insertable),
                        name("NO"),
                        NULL,
                    ]
                };
                let tables = o.tables.iter().map(|t| row(&t.schema.name, "BASE TABLE", "YES"));
                tables.chain(o.views.iter().map(|(_, v)| row(&v.name, "VIEW", "NO"))).collect()
            },
        ),
        "sequences" => relation_of(
            &[
                ("sequence_catalog", NAME),
                ("sequence_schema", NAME),
                ("sequence_name", NAME),
                ("data_type", TEXT),
                ("numeric_precision", INT4),
                ("numeric_precision_radix", INT4),
                ("numeric_scale", INT4),
                ("start_value", TEXT),
                ("minimum_value", TEXT),
                ("maximum_value", TEXT),
                ("increment", TEXT),
                ("cycle_option", TEXT),
            ],
            o.sequences
                .iter()
                .map(|(_, s)| {
                    let bits = match s.ty {
                        SqlType::Int2 => 16,
                        SqlType::Int4 => 32,
                        _ => 64,
                    };
                    let text = |v: i64| Value::Text(v.to_string());
                    vec![
                        catalog_name(),
                        name(o.schema_of(&s.name)),
                        name(unqualified(&s.name)),
                        Value::Text(s.ty.pg_name().to_string()),
                        int(bits),
                        int(2),
                        int(0),
                        text(s.start),
                        text(s.min),
                        text(s.max),
                        text(s.increment),
                        Value::Text("NO".to_string()),
                    ]
                })
                .collect(),
        ),
        "views" => relation_of(
            &[
                ("table_catalog", NAME),
                ("table_schema", NAME),
                ("table_name", NAME),
                ("view_definition", TEXT),
                ("check_option", TEXT),
                ("is_updatable", TEXT),
                ("is_insertable_into", TEXT),
                ("is_trigger_updatable", TEXT),
                ("is_trigger_deletable", TEXT),
                ("is_trigger_insertable_into", TEXT),
            ],
            o.view_definitions()
                .into_iter()
                .zip(&o.views)
                .map(|((_, def), (_, v))| {
                    let (schema, view) = (o.schema_of(&v.name), unqualified(&v.name));
                    let mut row = vec![catalog_name(), name(schema), name(view), Value::Text(def), name("NONE")];
                    row.extend((0..5).map(|_| name("NO")));
                    row
                })
                .collect(),
        ),
        "columns" => {
            let mut rows = Vec::new();
            // (relation, [(position, column, NOT NULL)], updatable): tables, then views.
            let tables = o.tables.iter().map(|t| {
                let columns =
                    t.schema.visible_columns().map(|(i, c)| (i, c, !c.nullable || t.schema.primary_key.contains(&i)));
                (t.schema.name.as_str(), columns.collect::<Vec<_>>(), true)
            });
            let views = o.views.iter().map(|(_, v)| {
                (v.name.as_str(), v.columns.iter().enumerate().map(|(i, c)| (i, c, false)).collect(), false)
            });
            for (relation, columns, updatable) in tables.chain(views) {
                for (i, c, notnull) in columns {
                    let bt = builtin_type(c.ty);
                    let data_type = bt.display.to_string();
                    let text_type = matches!(c.ty, SqlType::Char | SqlType::Varchar | SqlType::Text);
                    let max_len = c.limits.max_len.filter(|_| text_type).map(|n| int(i64::from(n)));
                    let octets = text_type.then(|| int(c.limits.max_len.map_or(1_073_741_824, |n| i64::from(n) * 4)));
                    let (precision, radix, scale) = match c.ty {
                        SqlType::Int2 => (Some(16), Some(2), Some(0)),
                        SqlType::Int4 => (Some(32), Some(2), Some(0)),
                        SqlType::Int => (Some(64), Some(2), Some(0)),
                        SqlType::Float4 => (Some(24), Some(2), None),
                        SqlType::Float => (Some(53), Some(2), None),
                        SqlType::Numeric => match c.limits.numeric {
                            Some((p, s)) => (Some(i64::from(p)), Some(10), Some(i64::from(s))),
                            None => (None, Some(10), None),
                        },
                        _ => (None, None, None),
                    };
                    let datetime_precision = matches!(c.ty, SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz)
                        .then(|| int(if c.ty == SqlType::Date { 0 } else { 6 }));
                    rows.push(vec![
                        catalog_name(),
                        name(o.schema_of(relation)),
                        name(unqualified(relation)),
                        name(&c.name),
                        int(i as i64 + 1),
                        default_text(c).map_or(NULL, Value::Text),
                        yes_no(!notnull),
                        Value::Text(data_type),
                        max_len.unwrap_or(NULL),
                        octets.unwrap_or(NULL),
                        precision.map_or(NULL, int),
                        radix.map_or(NULL, int),
                        scale.map_or(NULL, int),
                        datetime_precision.unwrap_or(NULL),
                        catalog_name(),
                        name("pg_catalog"),
                        name(bt.typname),
                        int(i as i64 + 1),
                        name("NO"),
                        yes_no(!identity_code(c).is_empty()),
                        name("NEVER"),
                        yes_no(updatable),
                    ]);
                }
            }
            relation_of(
                &[
                    ("table_catalog", NAME),
                    ("table_schema", NAME),
                    ("table_name", NAME),
                    ("column_name", NAME),
                    ("ordinal_position", INT4),
                    ("column_default", TEXT),
                    ("is_nullable", TEXT),
                    ("data_type", TEXT),
                    ("character_maximum_length", INT4),
                    ("character_octet_length", INT4),
                    ("numeric_precision", INT4),
                    ("numeric_precision_radix", INT4),
                    ("numeric_scale", INT4),
                    ("datetime_precision", INT4),
                    ("udt_catalog", NAME),
                    ("udt_schema", NAME),
                    ("udt_name", NAME),
                    ("dtd_identifier", NAME),
                    ("is_self_referencing", TEXT),
                    ("is_identity", TEXT),
                    ("is_generated", TEXT),
                    ("is_updatable", TEXT),
                ],
                rows,
            )
        }
        "table_constraints" => {
            let mut rows = Vec::new();
            for t in &o.tables {
                for ix in t.indexes.iter().filter(|ix| ix.constraint.is_some()) {
                    rows.push(vec![
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&ix.name)),
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&t.schema.name)),
                        name(if ix.primary { "PRIMARY KEY" } else { "UNIQUE" }),
                        name("NO"),
                        name("NO"),
                        name("YES"),
                        name("YES"),
                    ]);
                }
                for (_, f) in &t.foreign_keys {
                    rows.push(vec![
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&f.name)),
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&t.schema.name)),
                        name("FOREIGN KEY"),
                        yes_no(f.deferrable),
                        yes_no(f.initially_deferred),
                        name("YES"),
                        NULL,
                    ]);
                }
                for (_, c) in &t.checks {
                    rows.push(vec![
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&c.name)),
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&t.schema.name)),
                        name("CHECK"),
                        name("NO"),
                        name("NO"),
                        name("YES"),
                        NULL,
                    ]);
                }
            }
            relation_of(
                &[
                    ("constraint_catalog", NAME),
                    ("constraint_schema", NAME),
                    ("constraint_name", NAME),
                    ("table_catalog", NAME),
                    ("table_schema", NAME),
                    ("table_name", NAME),
                    ("constraint_type", TEXT),
                    ("is_deferrable", TEXT),
                    ("initially_deferred", TEXT),
                    ("enforced", TEXT),
                    ("nulls_distinct", TEXT),
                ],
                rows,
            )
        }
        "key_column_usage" => {
            let mut rows = Vec::new();
            for t in &o.tables {
                for ix in t.indexes.iter().filter(|ix| ix.constraint.is_some()) {
                    for (k, col) in column_names(&t.schema, &ix.columns).iter().enumerate() {
                        rows.push(vec![
                            catalog_name(),
                            name(o.schema_of(&t.schema.name)),
                            name(unqualified(&ix.name)),
                            catalog_name(),
                            name(o.schema_of(&t.schema.name)),
                            name(unqualified(&t.schema.name)),
                            name(col),
                            int(k as i64 + 1),
                            NULL,
                        ]);
                    }
                }
                for (_, f) in &t.foreign_keys {
                    let key =
                        o.table(&f.parent).and_then(|p| crate::constraints::parent_key(&p.schema, &f.parent_columns));
                    for (k, (c, p)) in f.columns.iter().zip(&f.parent_columns).enumerate() {
                        let in_unique = key.as_ref().and_then(|(_, cols)| cols.iter().position(|x| x == p));
                        rows.push(vec![
                            catalog_name(),
                            name(o.schema_of(&t.schema.name)),
                            name(unqualified(&f.name)),
                            catalog_name(),
                            name(o.schema_of(&t.schema.name)),
                            name(unqualified(&t.schema.name)),
                            name(&column_names(&t.schema, &[*c]).concat()),
                            int(k as i64 + 1),
                            in_unique.map_or(NULL, |i| int(i as i64 + 1)),
                        ]);
                    }
                }
            }
            relation_of(
                &[
                    ("constraint_catalog", NAME),
                    ("constraint_schema", NAME),
                    ("constraint_name", NAME),
                    ("table_catalog", NAME),
                    ("table_schema", NAME),
                    ("table_name", NAME),
                    ("column_name", NAME),
                    ("ordinal_position", INT4),
                    ("position_in_unique_constraint", INT4),
                ],
                rows,
            )
        }
        "referential_constraints" => {
            let mut rows = Vec::new();
            for t in &o.tables {
                for (_, f) in &t.foreign_keys {
                    let parent = o.table(&f.parent);
                    let unique = parent.and_then(|p| {
                        p.indexes.iter().find(|ix| {
                            ix.constraint.is_some()
                                && ix.columns.len() == f.parent_columns.len()
                                && ix.columns.iter().all(|c| f.parent_columns.contains(c))
                        })
                    });
                    rows.push(vec![
                        catalog_name(),
                        name(o.schema_of(&t.schema.name)),
                        name(unqualified(&f.name)),
                        unique.map_or(NULL, |_| catalog_name()),
                        unique.map_or(NULL, |_| name(o.schema_of(&f.parent))),
                        unique.map_or(NULL, |u| name(unqualified(&u.name))),
                        name("NONE"),
                        name(f.on_update.rule()),
                        name(f.on_delete.rule()),
                    ]);
                }
            }
            relation_of(
                &[
                    ("constraint_catalog", NAME),
                    ("constraint_schema", NAME),
                    ("constraint_name", NAME),
                    ("unique_constraint_catalog", NAME),
                    ("unique_constraint_schema", NAME),
                    ("unique_constraint_name", NAME),
                    ("match_option", TEXT),
                    ("update_rule", TEXT),
                    ("delete_rule", TEXT),
                ],
                rows,
            )
        }
        "constraint_column_usage" => {
            // The columns each constraint uses: its own for PRIMARY KEY / UNIQUE / CHECK, the
            // referenced ones for FOREIGN KEY (as PostgreSQL).
            let mut rows = Vec::new();
            let mut push = |table: &str, column: String, constraint: &str| {
                let schema = temp_namespace(table).map_or("public", |(ns, _)| ns);
                rows.push(vec![
                    catalog_name(),
                    name(schema),
                    name(unqualified(table)),
                    name(&column),
                    catalog_name(),
                    name(schema),
                    name(unqualified(constraint)),
                ]);
            };
            for t in &o.tables {
                for ix in t.indexes.iter().filter(|ix| ix.constraint.is_some()) {
                    for c in column_names(&t.schema, &ix.columns) {
                        push(&t.schema.name, c, &ix.name);
                    }
                }
                for (_, c) in &t.checks {
                    for col in check_columns(o, t, c) {
                        push(&t.schema.name, column_names(&t.schema, &[col]).concat(), &c.name);
                    }
                }
                for (_, f) in &t.foreign_keys {
                    if let Some(p) = o.table(&f.parent) {
                        for c in column_names(&p.schema, &f.parent_columns) {
                            push(&p.schema.name, c, &f.name);
                        }
                    }
                }
            }
            relation_of(
                &[
                    ("table_catalog", NAME),
                    ("table_schema", NAME),
                    ("table_name", NAME),
                    ("column_name", NAME),
                    ("constraint_catalog", NAME),
                    ("constraint_schema", NAME),
                    ("constraint_name", NAME),
                ],
                rows,
            )
        }
        "check_constraints" => {
            let mut rows = Vec::new();
            for t in &o.tables {
                for (_, c) in &t.checks {
                    let schema = o.schema_of(&t.schema.name);
                    rows.push(vec![
                        catalog_name(),
                        name(schema),
                        name(unqualified(&c.name)),
                        Value::Text(c.expr.clone()),
                    ]);
                }
            }
            relation_of(
                &[
                    ("constraint_catalog", NAME),
                    ("constraint_schema", NAME),
                    ("constraint_name", NAME),
                    ("check_clause", TEXT),
                ],
                rows,
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::catalog::CatalogChange;
    use crate::database::Database;
    use crate::engine::Output;
    use crate::types::Value;

    fn db() -> Database {
        let mut db = Database::new();
        for ddl in [
            "CREATE TABLE zt (id BIGINT PRIMARY KEY, name VARCHAR(20) NOT NULL, v INT DEFAULT 3, code TEXT UNIQUE)",
            "CREATE INDEX zt_name ON zt (name)",
            "CREATE TABLE a (k INT, n NUMERIC(10,2), PRIMARY KEY (k))",
        ] {
            db.execute(ddl).expect(ddl);
        }
        db
    }

    /// Rows as text, `|`-separated, NULL shown as empty.
    fn rows(db: &mut Database, sql: &str) -> Vec<String> {
        match db.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
            Output::Rows { rows, .. } => rows
                .into_iter()
                .map(|r| {
                    r.iter()
                        .map(|v| match v {
                            Value::Null => String::new(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect(),
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// A table created without a primary key: its hidden row id is never listed, it has no
    /// primary key until ADD PRIMARY KEY, whose index is then the primary key constraint.
    #[test]
    fn a_table_without_a_primary_key_shows_no_hidden_column() {
        let mut db = Database::new();
        db.execute("CREATE TABLE h (x INT NOT NULL, y TEXT)").expect("create");
        let attrs = "SELECT attnum, attname FROM pg_attribute WHERE attrelid = 'h'::regclass ORDER BY attnum";
        assert_eq!(rows(&mut db, attrs), ["1|x", "2|y"]);
        assert_eq!(rows(&mut db, "SELECT relnatts FROM pg_class WHERE relname = 'h'"), ["2"]);
        assert!(rows(&mut db, "SELECT conname FROM pg_constraint").is_empty());
        let cols =
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'h' ORDER BY ordinal_position";
        assert_eq!(rows(&mut db, cols), ["x", "y"]);
        db.execute("ALTER TABLE h ADD PRIMARY KEY (x)").expect("add primary key");
        assert_eq!(rows(&mut db, "SELECT conname, contype, conkey FROM pg_constraint"), ["h_pkey|p|{1}"]);
        assert_eq!(rows(&mut db, "SELECT relname FROM pg_class WHERE relkind = 'i'"), ["h_pkey"]);
        assert_eq!(rows(&mut db, attrs), ["1|x", "2|y"]);
    }

    #[test]
    fn oids_follow_table_order() {
        let mut db = db();
        assert_eq!(
            rows(&mut db, "SELECT oid, relname, relkind FROM pg_catalog.pg_class ORDER BY oid"),
            ["16384|a|r", "16385|a_pkey|i", "16387|zt|r", "16388|zt_pkey|i", "16390|zt_code_key|i", "16392|zt_name|i"]
        );
        assert_eq!(
            rows(&mut db, "SELECT oid, conname, contype, conrelid, conindid, conkey FROM pg_constraint ORDER BY oid"),
            [
                "16386|a_pkey|p|16384|16385|{1}",
                "16389|zt_pkey|p|16387|16388|{1}",
                "16391|zt_code_key|u|16387|16390|{4}"
            ]
        );
        assert_eq!(
            rows(&mut db, "SELECT 'zt'::regclass, 'public.a_pkey'::regclass, 'pg_class'::regclass"),
            ["16387|16385|1259"]
        );
        assert_eq!(rows(&mut db, "SELECT 16387::regclass, 23::regtype, 'integer'::regtype"), ["zt|integer|23"]);
        let missing = db.execute("SELECT 'nope'::regclass").expect_err("missing relation");
        assert_eq!(missing.state, crate::SqlState::UndefinedTable);
    }

    #[test]
    fn namespaces_types_roles_database() {
        let mut db = db();
        assert_eq!(
            rows(&mut db, "SELECT oid, nspname FROM pg_namespace ORDER BY oid"),
            ["11|pg_catalog", "2200|public", "13000|information_schema"]
        );
        assert_eq!(
            rows(&mut db, "SELECT typname, typlen, typarray FROM pg_type WHERE oid IN (20, 1043, 1700) ORDER BY oid"),
            ["int8|8|1016", "varchar|-1|1015", "numeric|-1|1231"]
        );
        assert_eq!(rows(&mut db, "SELECT typname, typelem FROM pg_type WHERE oid = 1007"), ["_int4|23"]);
        assert_eq!(
            rows(&mut db, "SELECT rolname, rolsuper FROM pg_roles ORDER BY 1"),
            ["pg_database_owner|false", "pistou|true"]
        );
        assert_eq!(rows(&mut db, "SELECT usename FROM pg_user"), ["pistou"]);
        assert_eq!(rows(&mut db, "SELECT datname, pg_encoding_to_char(encoding) FROM pg_database"), ["pistou|UTF8"]);
        assert_eq!(rows(&mut db, "SELECT setting FROM pg_settings WHERE name = 'max_identifier_length'"), ["63"]);
    }

    #[test]
    fn attributes_indexes_and_defaults() {
        let mut db = db();
        assert_eq!(
            rows(
                &mut db,
                "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attnum \
                 FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'zt'::regclass AND a.attnum > 0 \
                 AND NOT a.attisdropped ORDER BY a.attnum"
            ),
            ["id|bigint|true|1", "name|character varying(20)|true|2", "v|integer|false|3", "code|text|false|4"]
        );
        assert_eq!(
            rows(
                &mut db,
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 16384 AND attnum = 2"
            ),
            ["numeric(10,2)"]
        );
        assert_eq!(rows(&mut db, "SELECT adnum, pg_get_expr(adbin, adrelid) FROM pg_attrdef"), ["3|3"]);
        assert_eq!(
            rows(
                &mut db,
                "SELECT c2.relname, i.indisprimary, i.indisunique, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true), \
                 pg_catalog.pg_get_constraintdef(con.oid, true), contype \
                 FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i \
                 LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x')) \
                 WHERE c.oid = '16387' AND c.oid = i.indrelid AND i.indexrelid = c2.oid \
                 ORDER BY i.indisprimary DESC, c2.relname"
            ),
            [
                "zt_pkey|true|true|CREATE UNIQUE INDEX zt_pkey ON public.zt USING btree (id)|PRIMARY KEY (id)|p",
                "zt_code_key|false|true|CREATE UNIQUE INDEX zt_code_key ON public.zt USING btree (code)|UNIQUE (code)|u",
                "zt_name|false|false|CREATE INDEX zt_name ON public.zt USING btree (name)||",
            ]
        );
        assert_eq!(rows(&mut db, "SELECT pg_get_indexdef(16392, 1, true)"), ["name"]);
    }

    /// Rules awaiting the check of their table's older rows show as PostgreSQL shows an
    /// index during CREATE INDEX CONCURRENTLY and a NOT VALID constraint.
    #[test]
    fn rules_awaiting_their_check_are_not_valid_in_the_catalog() {
        use crate::constraints::Unvalidated;
        let mut db = db();
        db.execute("ALTER TABLE a ADD CONSTRAINT a_pos CHECK (k > 0)").expect("check");
        let valid = "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                     WHERE i.indrelid = 'zt'::regclass ORDER BY 1";
        let validated = "SELECT conname, convalidated FROM pg_constraint ORDER BY 1";
        assert_eq!(rows(&mut db, valid), ["zt_code_key|true", "zt_name|true", "zt_pkey|true"]);
        let marks = vec![Unvalidated::Index("zt_code_key".into())];
        db.apply_catalog_change(&CatalogChange::MarkUnvalidated { table: "zt".into(), rules: marks.clone() })
            .expect("mark");
        let check = vec![Unvalidated::Constraint("a_pos".into())];
        db.apply_catalog_change(&CatalogChange::MarkUnvalidated { table: "a".into(), rules: check.clone() })
            .expect("mark check");
        assert_eq!(rows(&mut db, valid), ["zt_code_key|false", "zt_name|true", "zt_pkey|true"]);
        assert_eq!(rows(&mut db, validated), ["a_pkey|true", "a_pos|false", "zt_code_key|false", "zt_pkey|true"]);
        let definition = "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'a_pos'";
        assert_eq!(rows(&mut db, definition), ["CHECK ((k > 0)) NOT VALID"]);
        db.apply_catalog_change(&CatalogChange::Validated { table: "zt".into(), rules: marks }).expect("valid");
        db.apply_catalog_change(&CatalogChange::Validated { table: "a".into(), rules: check }).expect("valid");
        assert_eq!(rows(&mut db, valid), ["zt_code_key|true", "zt_name|true", "zt_pkey|true"]);
        assert_eq!(rows(&mut db, validated), ["a_pkey|true", "a_pos|true", "zt_code_key|true", "zt_pkey|true"]);
        assert_eq!(rows(&mut db, definition), ["CHECK ((k > 0))"]);
        let pretty = "SELECT pg_get_constraintdef(oid, true) FROM pg_constraint WHERE conname = 'a_pos'";
        assert_eq!(rows(&mut db, pretty), ["CHECK (k > 0)"]);
    }

    #[test]
    fn psql_patterns_and_visibility() {
        let mut db = db();
        assert_eq!(
            rows(
                &mut db,
                "SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c \
                 LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relname OPERATOR(pg_catalog.~) '^(z.*)$' COLLATE pg_catalog.default \
                 AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3"
            ),
            ["16387|public|zt", "16390|public|zt_code_key", "16392|public|zt_name", "16388|public|zt_pkey"]
        );
        assert_eq!(
            rows(
                &mut db,
                "SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema'"
            ),
            ["public"]
        );
        assert_eq!(rows(&mut db, "SELECT pg_get_userbyid(10), pg_get_userbyid(1)"), ["pistou|unknown (OID=1)"]);
        // pgjdbc's type lookup.
        assert_eq!(
            rows(
                &mut db,
                "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t \
                 JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = '23'"
            ),
            ["true|pg_catalog|int4"]
        );
        assert_eq!(
            rows(&mut db, "SELECT relname FROM pg_class WHERE relname = ANY(ARRAY['a', 'zt']) ORDER BY 1"),
            ["a", "zt"]
        );
        let bad = db.execute("SELECT 'x' ~ '('").expect_err("bad regex");
        assert_eq!(bad.state.code(), "2201B");
        let missing = db.execute("SELECT * FROM pg_catalog.pg_stat_activity").expect_err("not computed");
        assert_eq!(missing.state.code(), "0A000");
        let missing = db.execute("SELECT * FROM pg_locks").expect_err("not computed");
        assert_eq!(missing.state.code(), "0A000");
    }

    #[test]
    fn information_schema_relations() {
        let mut db = db();
        assert_eq!(
            rows(&mut db, "SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 2"),
            ["public|a|BASE TABLE", "public|zt|BASE TABLE"]
        );
        assert_eq!(
            rows(
                &mut db,
                "SELECT column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, \
                 numeric_precision, numeric_scale, udt_name FROM information_schema.columns WHERE table_name = 'zt' \
                 ORDER BY ordinal_position"
            ),
            [
                "id|1||NO|bigint||64|0|int8",
                "name|2||NO|character varying|20|||varchar",
                "v|3|3|YES|integer||32|0|int4",
                "code|4||YES|text||||text",
            ]
        );
        assert_eq!(
            rows(&mut db, "SELECT schema_name FROM information_schema.schemata ORDER BY 1"),
            ["information_schema", "pg_catalog", "public"]
        );
        assert_eq!(
            rows(
                &mut db,
                "SELECT tc.constraint_name, tc.constraint_type, kcu.column_name, kcu.ordinal_position \
                 FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu \
                 ON kcu.constraint_name = tc.constraint_name WHERE tc.table_name = 'zt' ORDER BY 1"
            ),
            ["zt_code_key|UNIQUE|code|1", "zt_pkey|PRIMARY KEY|id|1"]
        );
    }

    #[test]
    fn arrays_as_text_and_empty_relations() {
        let mut db = db();
        assert_eq!(
            rows(
                &mut db,
                "SELECT r.rolname, ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m \
                 JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid) as memberof \
                 FROM pg_catalog.pg_roles r WHERE r.rolname !~ '^pg_' ORDER BY 1"
            ),
            ["pistou|{}"]
        );
        assert_eq!(
            rows(&mut db, "SELECT ARRAY(SELECT relname FROM pg_class WHERE relkind = 'r' ORDER BY 1)"),
            ["{a,zt}"]
        );
        assert_eq!(
            rows(&mut db, "SELECT array_to_string(conkey, ',') FROM pg_constraint WHERE conname = 'zt_pkey'"),
            ["1"]
        );
        assert_eq!(rows(&mut db, "SELECT 1 = ANY(conkey) FROM pg_constraint WHERE conname = 'zt_pkey'"), ["true"]);
        assert_eq!(rows(&mut db, "SELECT array_to_string(datacl, E'\\n') FROM pg_database"), [""]);
        // psql's `\d` footer for policies: its array functions are never evaluated.
        assert!(rows(
            &mut db,
            "SELECT pol.polname, CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname \
             from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END \
             FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '16387' ORDER BY 1"
        )
        .is_empty());
        let e = db.execute("SELECT quote_nullable(relpages) FROM pg_class").expect_err("not over an empty relation");
        assert_eq!(e.state.code(), "42883");
    }

    #[test]
    fn a_system_query_reads_no_table() {
        let db = db();
        let p =
            db.prepare("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace").expect("plan");
        assert!(p.tables().is_empty());
        let p = db.prepare("SELECT * FROM zt JOIN pg_class c ON c.relname = zt.name").expect("plan");
        assert_eq!(p.tables(), ["zt"]);
    }
}
