//! Binding of the system-catalog functions and OID types PostgreSQL clients use
//! (`pg_get_indexdef`, `format_type`, `'t'::regclass`, …). Each is computed from the catalog
//! the statement is bound against: a function of an OID becomes a CASE over the catalog's
//! objects, a literal name cast to `regclass` becomes its OID while binding.

use super::*;
use crate::system::{self, Objects, BUILTIN_TYPES};

/// Most catalog objects a lookup expression enumerates (each is one CASE branch).
const MAX_LOOKUP_ENTRIES: usize = 100_000;

/// `CASE key WHEN k THEN v … ELSE otherwise END`, keys compared as integers.
fn lookup(key: Expr, entries: Vec<(i64, Value)>, otherwise: Expr) -> Result<Expr> {
    if entries.len() > MAX_LOOKUP_ENTRIES {
        return err(SqlState::ProgramLimitExceeded, "the catalog has too many objects for this function");
    }
    Ok(Expr::Case {
        operand: Some(Box::new(key)),
        whens: entries.into_iter().map(|(k, v)| (Expr::Const(Value::Int(k)), Expr::Const(v))).collect(),
        otherwise: Some(Box::new(otherwise)),
    })
}

/// `CASE key WHEN 'name' THEN oid … END` for a name known only at run time.
fn lookup_by_name(key: Expr, entries: Vec<(i64, String)>) -> Expr {
    Expr::Case {
        operand: Some(Box::new(key)),
        whens: entries.into_iter().map(|(o, n)| (Expr::Const(Value::Text(n)), Expr::Const(Value::Int(o)))).collect(),
        otherwise: Some(Box::new(typed_null(SqlType::Int4))),
    }
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// The last part of a type name, if it is one of the system types handled here (possibly
/// qualified with pg_catalog).
pub(super) fn system_type_name(t: &sql::DataType) -> Option<String> {
    let name = match t {
        sql::DataType::Regclass => return Some("regclass".into()),
        sql::DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            let parts: Vec<String> = name.0.iter().filter_map(|p| p.as_ident()).map(ident).collect();
            match parts.as_slice() {
                [n] => n.clone(),
                [schema, n] if schema == "pg_catalog" => n.clone(),
                _ => return None,
            }
        }
        _ => return None,
    };
    const NAMES: &[&str] = &[
        "regclass",
        "regtype",
        "regnamespace",
        "regrole",
        "regproc",
        "regprocedure",
        "oid",
        "name",
        "char",
        "int2vector",
        "oidvector",
        "text",
        "varchar",
        "bpchar",
        "int2",
        "int4",
        "int8",
        "bool",
        "float4",
        "float8",
        "numeric",
        "date",
        "timestamp",
        "timestamptz",
        "bytea",
    ];
    NAMES.contains(&name.as_str()).then_some(name)
}

/// Resolves a type name as `regtype` input does: `int4`, `integer`, `character varying`, …
fn type_oid_by_name(name: &str) -> Option<i64> {
    let name = name.trim().trim_start_matches("pg_catalog.").to_lowercase();
    let alias = match name.as_str() {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "boolean" => "bool",
        "real" => "float4",
        "double precision" => "float8",
        "character varying" => "varchar",
        "character" => "bpchar",
        "decimal" => "numeric",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        other => other,
    };
    BUILTIN_TYPES.iter().find(|t| t.typname == alias).map(|t| i64::from(t.oid)).or_else(|| {
        let element = alias.strip_suffix("[]")?;
        let oid = type_oid_by_name(element)?;
        BUILTIN_TYPES.iter().find(|t| i64::from(t.oid) == oid).map(|t| i64::from(t.array))
    })
}

/// Every type OID with its `format_type` name (base types and their arrays).
fn type_names() -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for t in BUILTIN_TYPES {
        out.push((i64::from(t.oid), t.display.to_string()));
        out.push((i64::from(t.array), format!("{}[]", t.display)));
    }
    out.sort();
    out
}

/// A relation name as `regclass` input reads it: optionally schema-qualified, identifiers
/// case-folded unless quoted (`Public."T"` is `public.T`).
fn relation_name(input: &str) -> String {
    let part = |p: &str| match p.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => p.to_lowercase(),
    };
    let input = input.trim();
    match input.split_once('.') {
        Some((schema, name)) if !schema.contains('"') || schema.ends_with('"') => {
            format!("{}.{}", part(schema), part(name))
        }
        _ => part(input),
    }
}

/// Every relation `regclass` input may name, by OID: user relations as `name` and
/// `public.name`, the system catalog's as `name` and `pg_catalog.name`.
fn relation_names(objects: &Objects) -> Vec<(i64, String)> {
    let mut all = Vec::new();
    // The bare name first: an OID shows as it (`lookup` takes the first match).
    for (o, n) in objects.relations() {
        let qualified = format!("public.{n}");
        all.push((o, n));
        all.push((o, qualified));
    }
    for (o, n) in system::SYSTEM_RELATION_OIDS {
        all.push((*o, n.to_string()));
        all.push((*o, format!("pg_catalog.{n}")));
    }
    all
}

impl Binder<'_> {
    fn typed(&self, e: Expr, ast: &sql::Expr, scope: &Scope, mode: &Mode, ty: SqlType) -> Result<Expr> {
        let input = self.input_type(ast, &e, scope, mode);
        coerce(e, input, ty)
    }

    /// `expr::t` for a system type `t` (see `system_type_name`).
    pub(super) fn system_cast(&mut self, t: &str, ast: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        let plain = |ty: SqlType| -> Result<(SqlType, TypeLimits)> { Ok((ty, TypeLimits::default())) };
        let (ty, limits) = match t {
            "text" | "name" | "char" => plain(SqlType::Text)?,
            "int2vector" => plain(SqlType::Int2Vector)?,
            "oidvector" => plain(SqlType::OidVector)?,
            "varchar" => plain(SqlType::Varchar)?,
            "bpchar" => plain(SqlType::Char)?,
            "int2" => plain(SqlType::Int2)?,
            "int4" | "oid" => plain(SqlType::Int4)?,
            "int8" => plain(SqlType::Int)?,
            "bool" => plain(SqlType::Bool)?,
            "float4" => plain(SqlType::Float4)?,
            "float8" => plain(SqlType::Float)?,
            "numeric" => plain(SqlType::Numeric)?,
            "date" => plain(SqlType::Date)?,
            "timestamp" => plain(SqlType::Timestamp)?,
            "timestamptz" => plain(SqlType::TimestampTz)?,
            "bytea" => plain(SqlType::Bytes)?,
            _ => return self.reg_cast(t, ast, scope, mode),
        };
        let inner = self.expr(ast, scope, mode)?;
        let inner = if ty.is_text() { self.as_text(inner, scope, mode) } else { inner };
        Ok(match inner {
            Expr::Const(v) => {
                let folded = crate::types::cast_with(&v, ty, &limits)?;
                if literal_type(&folded) == Some(ty) {
                    Expr::Const(folded)
                } else {
                    Expr::Cast { expr: Box::new(Expr::Const(folded)), ty, limits }
                }
            }
            other => Expr::Cast { expr: Box::new(other), ty, limits },
        })
    }

    /// Casts to the OID alias types: a literal name becomes its OID (an integer); an
    /// integer expression becomes the object's name (text), as the type's output shows it.
    fn reg_cast(&mut self, t: &str, ast: &sql::Expr, scope: &Scope, mode: &mut Mode) -> Result<Expr> {
        let inner = self.expr(ast, scope, mode)?;
        let objects = Objects::of(self.catalog);
        let entries: Vec<(i64, String)> = match t {
            "regclass" => relation_names(&objects),
            "regtype" => type_names(),
            "regnamespace" => system::namespace_names().into_iter().map(|(o, n)| (o, n.to_string())).collect(),
            "regrole" => system::role_names().into_iter().map(|(o, n)| (o, n.to_string())).collect(),
            // Pistou has no user functions; built-in ones have no OIDs here.
            _ => return unsupported(format!("cast to {t}")),
        };
        if let Expr::Const(v) = &inner {
            let s = match v {
                Value::Text(s) => s,
                Value::Null => return Ok(typed_null(SqlType::Int4)),
                // An integer shows as the object's name.
                Value::Int(_) => {
                    let fallback = cast_to(inner.clone(), SqlType::Text);
                    return lookup(inner, entries.into_iter().map(|(o, n)| (o, text(n))).collect(), fallback);
                }
                _ => return err(SqlState::InvalidTextRepresentation, format!("invalid input syntax for type {t}")),
            };
            if let Ok(n) = s.trim().parse::<i64>() {
                return Ok(cast_to(Expr::Const(Value::Int(n)), SqlType::Int4));
            }
            let found = match t {
                "regclass" => {
                    let wanted = relation_name(s);
                    entries.iter().find(|(_, n)| *n == wanted).map(|(o, _)| *o)
                }
                "regtype" => type_oid_by_name(s),
                _ => entries.iter().find(|(_, n)| n == s.trim()).map(|(o, _)| *o),
            };
            return match found {
                Some(oid) => Ok(cast_to(Expr::Const(Value::Int(oid)), SqlType::Int4)),
                None if t == "regclass" => {
                    err(SqlState::UndefinedTable, format!("relation \"{}\" does not exist", s.trim()))
                }
                None => err(SqlState::UndefinedObject, format!("{} \"{}\" does not exist", &t[3..], s.trim())),
            };
        }
        match self.type_of(&inner, scope, mode) {
            Some(ty) if ty.is_integer() => {
                let fallback = cast_to(inner.clone(), SqlType::Text);
                lookup(inner, entries.into_iter().map(|(o, n)| (o, text(n))).collect(), fallback)
            }
            Some(ty) if ty.is_text() => Ok(lookup_by_name(inner, entries)),
            _ => {
                let inner = cast_to(inner, SqlType::Text);
                Ok(lookup_by_name(inner, entries))
            }
        }
    }

    /// Binds a call of a system function, or None if `name` is not one.
    pub(super) fn system_function(
        &mut self,
        name: &str,
        args: &[&sql::Expr],
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Option<Expr>> {
        const NAMES: &[&str] = &[
            "pg_table_is_visible",
            "pg_type_is_visible",
            "pg_function_is_visible",
            "pg_collation_is_visible",
            "pg_get_userbyid",
            "format_type",
            "pg_get_indexdef",
            "pg_get_viewdef",
            "pg_get_constraintdef",
            "pg_get_expr",
            "pg_get_serial_sequence",
            "to_regtype",
            "to_regclass",
            "obj_description",
            "col_description",
            "shobj_description",
            "has_table_privilege",
            "has_schema_privilege",
            "has_database_privilege",
            "has_column_privilege",
            "has_any_column_privilege",
            "has_sequence_privilege",
            "has_function_privilege",
            "has_type_privilege",
            "pg_has_role",
            "pg_encoding_to_char",
            "pg_get_function_result",
            "pg_get_function_arguments",
            "pg_get_function_identity_arguments",
            "pg_relation_is_publishable",
            "current_schemas",
            "current_schema",
            "pg_typeof",
        ];
        if !NAMES.contains(&name) {
            return Ok(None);
        }
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            bound.push(self.expr(a, scope, mode)?);
        }
        let arity = |min: usize, max: usize| -> Result<()> {
            if args.len() < min || args.len() > max {
                return err(
                    SqlState::UndefinedFunction,
                    format!("function {name} does not take {} arguments", args.len()),
                );
            }
            Ok(())
        };
        let objects = Objects::of(self.catalog);
        // The first argument, as an OID (integer).
        let first_oid = |this: &Self, bound: &mut Vec<Expr>| -> Result<Expr> {
            let (Some(ast), Some(e)) = (args.first(), bound.first_mut()) else {
                return err(SqlState::UndefinedFunction, format!("function {name} needs an argument"));
            };
            let e = std::mem::replace(e, Expr::Const(Value::Null));
            this.typed(e, ast, scope, &Mode::Plain(""), SqlType::Int4)
        };
        let null_text = typed_null(SqlType::Text);
        let expr = match name {
            // The argument's static type, as regtype prints it (`unknown` for an untyped
            // literal or NULL).
            "pg_typeof" => {
                arity(1, 1)?;
                let (Some(ast), Some(e)) = (args.first(), bound.first()) else {
                    return err(SqlState::UndefinedFunction, "function pg_typeof needs an argument");
                };
                let ty = match self.input_type(ast, e, scope, mode) {
                    InputType::Known(t) => t.pg_name(),
                    _ => "unknown",
                };
                Expr::Const(Value::Text(ty.to_string()))
            }
            "pg_table_is_visible" | "pg_type_is_visible" | "pg_function_is_visible" | "pg_collation_is_visible" => {
                // pg_table_is_visible takes a second argument internally: the gateway names
                // the session's temporary namespace, whose relations it sees (docs/gateway.md,
                // "Temporary tables"); other sessions' temporary relations are not visible.
                let own_namespace = match (name, bound.get(1)) {
                    ("pg_table_is_visible", Some(Expr::Const(Value::Text(ns)))) => Some(ns.clone()),
                    ("pg_table_is_visible", Some(_)) => {
                        return err(
                            SqlState::UndefinedFunction,
                            "pg_table_is_visible's second argument must name a temporary namespace",
                        )
                    }
                    _ => None,
                };
                if name == "pg_table_is_visible" {
                    arity(1, 2)?;
                } else {
                    arity(1, 1)?;
                }
                let key = first_oid(self, &mut bound)?;
                let visible = |relation: &str| match system::temp_namespace(relation) {
                    Some((namespace, _)) => own_namespace.as_deref() == Some(namespace),
                    None => true,
                };
                let oids: Vec<i64> = match name {
                    "pg_table_is_visible" => {
                        objects.relations().into_iter().filter(|(_, n)| visible(n)).map(|(o, _)| o).collect()
                    }
                    "pg_type_is_visible" => type_names().into_iter().map(|(o, _)| o).collect(),
                    // Both collations are pg_catalog's, which is on the search path.
                    "pg_collation_is_visible" => system::COLLATIONS.iter().map(|(o, _)| *o).collect(),
                    _ => Vec::new(),
                };
                if oids.len() > MAX_LOOKUP_ENTRIES {
                    return err(SqlState::ProgramLimitExceeded, "the catalog has too many objects for this function");
                }
                Expr::InList {
                    expr: Box::new(key),
                    list: oids.into_iter().map(|o| Expr::Const(Value::Int(o))).collect(),
                    negated: false,
                }
            }
            "pg_get_userbyid" => {
                arity(1, 1)?;
                let key = first_oid(self, &mut bound)?;
                let unknown = Expr::Concat(
                    Box::new(Expr::Concat(
                        Box::new(Expr::Const(text("unknown (OID="))),
                        Box::new(cast_to(key.clone(), SqlType::Text)),
                    )),
                    Box::new(Expr::Const(text(")"))),
                );
                lookup(key, system::role_names().into_iter().map(|(o, n)| (o, text(n))).collect(), unknown)?
            }
            "format_type" => {
                arity(2, 2)?;
                let key = first_oid(self, &mut bound)?;
                let (Some(ast), Some(m)) = (args.get(1), bound.pop()) else {
                    return err(SqlState::UndefinedFunction, "format_type takes two arguments");
                };
                let typmod = self.typed(m, ast, scope, mode, SqlType::Int4)?;
                self.format_type(key, typmod)?
            }
            "pg_get_indexdef" => {
                arity(1, 3)?;
                let key = first_oid(self, &mut bound)?;
                let defs = objects.index_definitions();
                let whole =
                    lookup(key.clone(), defs.iter().map(|(o, d, _)| (*o, text(d.clone()))).collect(), null_text)?;
                match (args.get(1), bound.get(1).cloned()) {
                    (Some(ast), Some(col)) => {
                        let col = self.typed(col, ast, scope, mode, SqlType::Int4)?;
                        let mut whens = Vec::new();
                        for (oid, _, cols) in &defs {
                            for (k, c) in cols.iter().enumerate() {
                                let at = Expr::and(
                                    Expr::Cmp(
                                        CmpOp::Eq,
                                        Box::new(key.clone()),
                                        Box::new(Expr::Const(Value::Int(*oid))),
                                    ),
                                    Expr::Cmp(
                                        CmpOp::Eq,
                                        Box::new(col.clone()),
                                        Box::new(Expr::Const(Value::Int(k as i64 + 1))),
                                    ),
                                );
                                whens.push((at, Expr::Const(text(c.clone()))));
                            }
                        }
                        if whens.len() > MAX_LOOKUP_ENTRIES {
                            return err(SqlState::ProgramLimitExceeded, "the catalog has too many indexes");
                        }
                        let zero = Expr::Cmp(CmpOp::Eq, Box::new(col), Box::new(Expr::Const(Value::Int(0))));
                        whens.insert(0, (zero, whole));
                        Expr::Case { operand: None, whens, otherwise: Some(Box::new(Expr::Const(text("")))) }
                    }
                    _ => whole,
                }
            }
            "pg_get_viewdef" => {
                // pg_get_viewdef(oid [, pretty]): the pretty flag changes nothing here.
                arity(1, 2)?;
                let key = first_oid(self, &mut bound)?;
                let defs = objects.view_definitions();
                lookup(key, defs.into_iter().map(|(o, d)| (o, text(d))).collect(), null_text)?
            }
            "pg_get_constraintdef" => {
                // pg_get_constraintdef(oid [, pretty]): a CHECK's pretty text is its
                // expression as stored (`CHECK (v > 0)`), the plain one PostgreSQL's
                // deparsed form (`CHECK ((v > 0))`).
                arity(1, 2)?;
                let key = first_oid(self, &mut bound)?;
                let definitions = |pretty: bool| -> Result<Expr> {
                    let defs = objects.constraint_definitions(self.catalog, pretty);
                    lookup(key.clone(), defs.into_iter().map(|(o, d)| (o, text(d))).collect(), null_text.clone())
                };
                match bound.get(1) {
                    None | Some(Expr::Const(Value::Bool(false))) => definitions(false)?,
                    Some(Expr::Const(Value::Bool(true))) => definitions(true)?,
                    Some(pretty) => Expr::Case {
                        operand: None,
                        whens: vec![(pretty.clone(), definitions(true)?)],
                        otherwise: Some(Box::new(definitions(false)?)),
                    },
                }
            }
            "pg_get_expr" => {
                arity(2, 3)?;
                // Expressions are stored as their text (pg_attrdef.adbin).
                let (Some(ast), Some(e)) = (args.first(), bound.into_iter().next()) else {
                    return err(SqlState::UndefinedFunction, "pg_get_expr needs arguments");
                };
                self.typed(e, ast, scope, mode, SqlType::Text)?
            }
            // A name's OID, or NULL where the `::regtype` / `::regclass` cast would fail.
            "to_regtype" | "to_regclass" => {
                arity(1, 1)?;
                let entries = if name == "to_regtype" { type_names() } else { relation_names(&objects) };
                match bound.pop() {
                    Some(Expr::Const(Value::Text(s))) => {
                        let found = if name == "to_regtype" {
                            type_oid_by_name(&s)
                        } else {
                            let wanted = relation_name(&s);
                            entries.iter().find(|(_, n)| *n == wanted).map(|(o, _)| *o)
                        };
                        found.map_or(typed_null(SqlType::Int4), |o| cast_to(Expr::Const(Value::Int(o)), SqlType::Int4))
                    }
                    Some(e) => lookup_by_name(cast_to(e, SqlType::Text), entries),
                    None => return err(SqlState::UndefinedFunction, format!("function {name} needs an argument")),
                }
            }
            // The sequence of a SERIAL or IDENTITY column: (table, column) → 'public.seq'.
            "pg_get_serial_sequence" => {
                arity(2, 2)?;
                let [table, column] = <[Expr; 2]>::try_from(bound).map_err(|_| {
                    SqlError::new(SqlState::UndefinedFunction, "pg_get_serial_sequence needs arguments")
                })?;
                let mut whens = Vec::new();
                for t in self.catalog.tables() {
                    for c in &t.columns {
                        let Some(g) = &c.generated else { continue };
                        // The table is read as a possibly qualified identifier.
                        let names = [
                            t.name.clone(),
                            format!("public.{}", t.name),
                            format!("\"{}\"", t.name),
                            format!("public.\"{}\"", t.name),
                            format!("\"public\".\"{}\"", t.name),
                        ];
                        for table_name in names {
                            let eq = |e: &Expr, v: String| {
                                Expr::Cmp(CmpOp::Eq, Box::new(e.clone()), Box::new(Expr::Const(text(v))))
                            };
                            let at = Expr::and(eq(&table, table_name), eq(&column, c.name.clone()));
                            whens.push((at, Expr::Const(text(format!("public.{}", g.sequence)))));
                        }
                    }
                }
                if whens.len() > MAX_LOOKUP_ENTRIES {
                    return err(SqlState::ProgramLimitExceeded, "the catalog has too many sequences");
                }
                if whens.is_empty() {
                    null_text
                } else {
                    Expr::Case { operand: None, whens, otherwise: Some(Box::new(null_text)) }
                }
            }
            // Pistou keeps no comments (pg_description is empty).
            "obj_description" | "shobj_description" => {
                arity(1, 2)?;
                null_text
            }
            "col_description" => {
                arity(2, 2)?;
                null_text
            }
            // Pistou has no privileges: every user may do everything.
            n if n.starts_with("has_") || n == "pg_has_role" => {
                arity(2, 4)?;
                Expr::Const(Value::Bool(true))
            }
            "pg_encoding_to_char" => {
                arity(1, 1)?;
                let key = first_oid(self, &mut bound)?;
                lookup(key, vec![(6, text("UTF8"))], Expr::Const(text("")))?
            }
            // Pistou has no user functions and publishes nothing.
            "pg_get_function_result" | "pg_get_function_arguments" | "pg_get_function_identity_arguments" => {
                arity(1, 1)?;
                null_text
            }
            // Pistou's search path is fixed: pg_catalog, then public (as the gateway's
            // session functions answer).
            "current_schemas" => {
                arity(1, 1)?;
                let (Some(ast), Some(e)) = (args.first(), bound.into_iter().next()) else {
                    return err(SqlState::UndefinedFunction, "current_schemas takes one argument");
                };
                let implicit = self.typed(e, ast, scope, mode, SqlType::Bool)?;
                Expr::Case {
                    operand: None,
                    whens: vec![(implicit, Expr::Const(text("{pg_catalog,public}")))],
                    otherwise: Some(Box::new(Expr::Const(text("{public}")))),
                }
            }
            "current_schema" => {
                arity(0, 0)?;
                Expr::Const(text("public"))
            }
            "pg_relation_is_publishable" => {
                arity(1, 1)?;
                Expr::Const(Value::Bool(false))
            }
            _ => return Ok(None),
        };
        Ok(Some(expr))
    }

    /// `format_type(type, typmod)`: a lookup of the type's name, with the modifier shown for
    /// VARCHAR / CHAR (length) and NUMERIC (precision, scale).
    fn format_type(&self, key: Expr, typmod: Expr) -> Result<Expr> {
        let c = |v: i64| Expr::Const(Value::Int(v));
        let t = |s: &str| Expr::Const(text(s));
        let concat = |parts: Vec<Expr>| {
            parts.into_iter().reduce(|a, b| Expr::Concat(Box::new(a), Box::new(b))).unwrap_or_else(|| t(""))
        };
        let as_text = |e: Expr| cast_to(e, SqlType::Text);
        let m = Expr::Arith(ArithOp::Sub, Box::new(typmod.clone()), Box::new(c(4)));
        let has_mod = Expr::Cmp(CmpOp::GtEq, Box::new(typmod), Box::new(c(4)));
        let with_mod = |base: &str, shown: Expr| Expr::Case {
            operand: None,
            whens: vec![(has_mod.clone(), concat(vec![t(base), t("("), shown, t(")")]))],
            otherwise: Some(Box::new(t(base))),
        };
        let mut whens = Vec::new();
        for (oid, name) in type_names() {
            let shown = match oid {
                o if o == i64::from(system::OID_VARCHAR) || o == i64::from(system::OID_BPCHAR) => {
                    with_mod(&name, as_text(m.clone()))
                }
                o if o == i64::from(system::OID_NUMERIC) => with_mod(
                    &name,
                    concat(vec![
                        as_text(Expr::Arith(ArithOp::Div, Box::new(m.clone()), Box::new(c(65536)))),
                        t(","),
                        as_text(Expr::Arith(ArithOp::Mod, Box::new(m.clone()), Box::new(c(65536)))),
                    ]),
                ),
                _ => t(&name),
            };
            whens.push((c(oid), shown));
        }
        let unknown = Expr::Case {
            operand: None,
            whens: vec![(Expr::IsNull { expr: Box::new(key.clone()), negated: false }, typed_null(SqlType::Text))],
            otherwise: Some(Box::new(t("???"))),
        };
        Ok(Expr::Case { operand: Some(Box::new(key)), whens, otherwise: Some(Box::new(unknown)) })
    }
}
