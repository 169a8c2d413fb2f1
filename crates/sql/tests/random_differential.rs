//! Random differential test against the machine's PostgreSQL 15, in the spirit of SQLancer.
//!
//! Each seed draws a schema (2–4 tables with a primary key, columns of the integer, numeric,
//! double, text, varchar, boolean, date and timestamp types, some NOT NULL or UNIQUE) and
//! rows (NULLs, duplicates, zero, negative numbers, empty strings, range limits), then
//! statements: queries (WHERE over random boolean expressions, inner, left and cross joins,
//! derived tables, GROUP BY with aggregates and HAVING, DISTINCT, ORDER BY with LIMIT/OFFSET,
//! set operations, scalar / IN / EXISTS subqueries, correlated or not, window functions) and
//! writes (INSERT VALUES / SELECT / ON CONFLICT, UPDATE, DELETE, each followed by a
//! comparison of the whole table). Every statement runs on an embedded `Database` and on
//! PostgreSQL (a database of its own, `rd_<pid>`, with the C collation, dropped at the end).
//!
//! Comparison (`verdict`): the same result column types and rows (normalized as in
//! `differential_pg.rs`: numeric to 13 significant digits, floats to 15), compared in order
//! only when the ORDER BY covers every output column (otherwise as sorted multisets), or the
//! same number of rows written, or errors with the same SQLSTATE. Deliberate exceptions,
//! counted and reported: a statement Pistou refuses with 0A000 is "unsupported", not a
//! mismatch (the run fails if too few statements run on both sides, so the generator keeps
//! to supported SQL); errors of classes 21, 22 and 23 match each other whatever their codes,
//! and on one side only are "evaluation-dependent", because which row fails first, and
//! whether an expression is evaluated at all, depends on the plan (see `verdict`).
//!
//! A second oracle needs no PostgreSQL: ternary logic partitioning (TLP). For a query `q`
//! and a predicate `p`, the rows of `q` are exactly the rows of `q WHERE p`, `q WHERE NOT p`
//! and `q WHERE (p) IS NULL` together (as sets for SELECT DISTINCT); checked on Pistou.
//!
//! A mismatch is shrunk (data statements dropped one at a time, then subexpressions replaced
//! by their operands or by literals while the mismatch remains) and reported with the seed,
//! the schema, the data statements, the statement and both outcomes.
//!
//! The suite runs `SEEDS` seeds of `STATEMENTS_PER_SEED` statements. A long run:
//! `PISTOU_RANDOM_DIFF_STATEMENTS=200000 PISTOU_RANDOM_DIFF_SEED=1000 <test binary>
//! --nocapture` runs seeds from 1000 on until that many statements have run, and prints the
//! counts (docs/testing.md has the last one).

mod common;

use common::{on_pistou_in, on_postgres_in, pg, Order, Outcome};
use pistou_sql::Database;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Seeds of the bounded run, and statements per seed.
const SEEDS: std::ops::Range<u64> = 0..40;
const STATEMENTS_PER_SEED: usize = 150;

/// The run fails if fewer statements than this fraction ran without error on both sides
/// (measured: see docs/testing.md), so that the generator keeps producing SQL both accept.
const MIN_BOTH_OK: f64 = 0.85;

/// Attempts spent shrinking the statement of a mismatch.
const SHRINK_BUDGET: usize = 600;

// ---------------------------------------------------------------------------------------------
// Schema and values
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Int2,
    Int4,
    Int8,
    Numeric(u32, u32),
    Double,
    Text,
    Varchar(u32),
    Bool,
    Date,
    Timestamp,
}

/// Type categories: expressions of one category compare and combine with each other; the
/// generator builds well-typed expressions by category, PostgreSQL and Pistou resolve the
/// exact types (which the comparison checks).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cat {
    Num,
    Text,
    Bool,
    Date,
    Ts,
    /// Not an expression (a clause, a list): only the shrinker looks at it.
    Other,
}

impl Ty {
    fn sql(self) -> String {
        match self {
            Ty::Int2 => "SMALLINT".into(),
            Ty::Int4 => "INT".into(),
            Ty::Int8 => "BIGINT".into(),
            Ty::Numeric(p, s) => format!("NUMERIC({p},{s})"),
            Ty::Double => "DOUBLE PRECISION".into(),
            Ty::Text => "TEXT".into(),
            Ty::Varchar(n) => format!("VARCHAR({n})"),
            Ty::Bool => "BOOLEAN".into(),
            Ty::Date => "DATE".into(),
            Ty::Timestamp => "TIMESTAMP".into(),
        }
    }

    fn cat(self) -> Cat {
        match self {
            Ty::Int2 | Ty::Int4 | Ty::Int8 | Ty::Numeric(..) | Ty::Double => Cat::Num,
            Ty::Text | Ty::Varchar(_) => Cat::Text,
            Ty::Bool => Cat::Bool,
            Ty::Date => Cat::Date,
            Ty::Timestamp => Cat::Ts,
        }
    }
}

struct Column {
    name: String,
    ty: Ty,
    unique: bool,
    not_null: bool,
}

/// A table; its first column `id` is the primary key.
struct Table {
    name: String,
    columns: Vec<Column>,
}

impl Table {
    fn create_sql(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let constraint = match (i, c.unique, c.not_null) {
                    (0, ..) => " PRIMARY KEY",
                    (_, true, true) => " UNIQUE NOT NULL",
                    (_, true, false) => " UNIQUE",
                    (_, false, true) => " NOT NULL",
                    _ => "",
                };
                format!("{} {}{constraint}", c.name, c.ty.sql())
            })
            .collect();
        format!("CREATE TABLE {} ({})", self.name, columns.join(", "))
    }
}

fn pick<T: Clone>(rng: &mut StdRng, items: &[T]) -> T {
    items[rng.gen_range(0..items.len())].clone()
}

fn random_ty(rng: &mut StdRng) -> Ty {
    match rng.gen_range(0..12) {
        0 => Ty::Int2,
        1 | 2 => Ty::Int4,
        3 => Ty::Int8,
        4 | 5 => {
            let p = rng.gen_range(3..=12);
            Ty::Numeric(p, rng.gen_range(0..=p.min(4)))
        }
        6 => Ty::Double,
        7 => Ty::Text,
        8 => Ty::Varchar(rng.gen_range(1..=6)),
        9 => Ty::Bool,
        10 => Ty::Date,
        _ => Ty::Timestamp,
    }
}

fn random_schema(rng: &mut StdRng) -> Vec<Table> {
    (0..rng.gen_range(2..=4))
        .map(|i| {
            let key = pick(rng, &[Ty::Int4, Ty::Int4, Ty::Int8, Ty::Int2, Ty::Text]);
            let mut columns = vec![Column { name: "id".into(), ty: key, unique: false, not_null: true }];
            for j in 1..=rng.gen_range(2..=5) {
                let ty = random_ty(rng);
                columns.push(Column {
                    name: format!("c{j}"),
                    ty,
                    unique: rng.gen_bool(0.15),
                    not_null: rng.gen_bool(0.15),
                });
            }
            Table { name: format!("t{i}"), columns }
        })
        .collect()
}

const TEXTS: &[&str] = &["", "a", "b", "ab", "abc", "A", "B", "a ", " a", "a%", "x_y", "hello", "Zz", "10", "a'b"];
const DATES: &[&str] = &["2020-01-01", "2020-02-29", "1999-12-31", "2024-06-15", "2020-01-02", "1970-01-01"];
const TIMESTAMPS: &[&str] = &[
    "2020-01-01 00:00:00",
    "2020-01-01 12:30:00",
    "2020-02-29 23:59:59.5",
    "1999-12-31 00:00:00",
    "2024-06-15 08:00:00",
];

/// A non-NULL value of `ty`: usually small and colliding (duplicates make joins, GROUP BY and
/// DISTINCT interesting), sometimes a range limit. `typed` spells dates and timestamps with
/// their type (in expressions); otherwise they may be bare quoted literals, typed by context.
fn literal(rng: &mut StdRng, ty: Ty, typed: bool) -> String {
    let small = |rng: &mut StdRng| pick(rng, &[0i64, 1, -1, 2, 3, 5, -7, 10, 42, 100, -100]).to_string();
    let edge = rng.gen_bool(0.04);
    match ty {
        Ty::Int2 if edge => pick(rng, &["32767", "-32768"]).into(),
        Ty::Int4 if edge => pick(rng, &["2147483647", "-2147483648", "100000"]).into(),
        Ty::Int8 if edge => pick(rng, &["9223372036854775807", "-9223372036854775808", "5000000000"]).into(),
        Ty::Int2 | Ty::Int4 | Ty::Int8 => small(rng),
        Ty::Numeric(p, s) => numeric_literal(rng, p, s),
        Ty::Double => pick(rng, &["0", "0.5", "-1.25", "3", "1024", "-0.125", "1e10", "2.5"]).into(),
        Ty::Text => quote(pick(rng, TEXTS)),
        Ty::Varchar(n) => {
            let fitting: Vec<&str> = TEXTS.iter().copied().filter(|t| t.len() <= n as usize).collect();
            // Now and then one too long (22001 on both sides).
            quote(if rng.gen_bool(0.05) { "abcdefg" } else { pick(rng, &fitting) })
        }
        Ty::Bool => pick(rng, &["TRUE", "FALSE"]).into(),
        Ty::Date => typed_literal(rng, "DATE", DATES, typed),
        Ty::Timestamp => typed_literal(rng, "TIMESTAMP", TIMESTAMPS, typed),
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn typed_literal(rng: &mut StdRng, ty: &str, values: &[&str], typed: bool) -> String {
    let value = pick(rng, values);
    if typed || rng.gen_bool(0.5) {
        format!("{ty} '{value}'")
    } else {
        format!("'{value}'")
    }
}

/// A decimal with up to `p - s` integer digits and up to `s + 1` fraction digits (so that
/// assignment rounds), now and then one digit too many (22003 on both sides).
fn numeric_literal(rng: &mut StdRng, p: u32, s: u32) -> String {
    let int_digits = rng.gen_range(0..=(p - s).min(4)) + u32::from(rng.gen_bool(0.02));
    let integer: u64 = if int_digits == 0 { 0 } else { rng.gen_range(0..10u64.pow(int_digits)) };
    let fraction_digits = rng.gen_range(0..=s + 1);
    let sign = if rng.gen_bool(0.3) { "-" } else { "" };
    if fraction_digits == 0 {
        format!("{sign}{integer}")
    } else {
        let fraction: u64 = rng.gen_range(0..10u64.pow(fraction_digits));
        format!("{sign}{integer}.{fraction:0width$}", width = fraction_digits as usize)
    }
}

/// A column's value for INSERT: NULL now and then if the column allows it.
fn value(rng: &mut StdRng, column: &Column) -> String {
    if !column.not_null && rng.gen_bool(0.15) {
        "NULL".into()
    } else {
        literal(rng, column.ty, false)
    }
}

fn insert_rows(rng: &mut StdRng, table: &Table, rows: usize) -> String {
    let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
    let rows: Vec<String> = (0..rows)
        .map(|_| {
            let values: Vec<String> = table.columns.iter().map(|c| value(rng, c)).collect();
            format!("({})", values.join(", "))
        })
        .collect();
    format!("INSERT INTO {} ({}) VALUES {}", table.name, names.join(", "), rows.join(", "))
}

// ---------------------------------------------------------------------------------------------
// Statements as trees, so that a mismatch can be shrunk
// ---------------------------------------------------------------------------------------------

/// A piece of SQL: text fragments around its children (`parts.len() == kids.len() + 1`).
/// The shrinker replaces a node by a child of the same category or by a literal; drops an
/// `optional` node (a WHERE clause) and the items of a `list` node. The children of an
/// `opaque` node (a subquery, an aggregate call) are not lifted out of it: outside, they
/// would refer to columns out of scope or aggregate another query.
#[derive(Clone, Debug)]
struct Node {
    cat: Cat,
    parts: Vec<String>,
    kids: Vec<Node>,
    optional: bool,
    list: bool,
    opaque: bool,
}

impl Node {
    fn leaf(cat: Cat, text: impl Into<String>) -> Node {
        Node { cat, parts: vec![text.into()], kids: Vec::new(), optional: false, list: false, opaque: false }
    }

    /// A node from a template whose `{}` stand for the children, in order.
    fn new(cat: Cat, template: &str, kids: Vec<Node>) -> Node {
        let parts: Vec<String> = template.split("{}").map(str::to_string).collect();
        assert_eq!(parts.len(), kids.len() + 1, "template {template}");
        Node { cat, parts, kids, optional: false, list: false, opaque: false }
    }

    fn list(items: Vec<Node>, separator: &str) -> Node {
        let mut parts = vec![String::new()];
        parts.extend((1..items.len()).map(|_| separator.to_string()));
        parts.push(String::new());
        Node { cat: Cat::Other, parts, kids: items, optional: false, list: true, opaque: false }
    }

    fn optional(mut self) -> Node {
        self.optional = true;
        self
    }

    fn opaque(mut self) -> Node {
        self.opaque = true;
        self
    }

    fn empty() -> Node {
        Node::leaf(Cat::Other, "")
    }

    fn render(&self) -> String {
        let mut out = self.parts[0].clone();
        for (kid, part) in self.kids.iter().zip(&self.parts[1..]) {
            out.push_str(&kid.render());
            out.push_str(part);
        }
        out
    }

    fn size(&self) -> usize {
        1 + self.kids.iter().map(Node::size).sum::<usize>()
    }

    /// Paths (child indexes from the root) of every node, parents first.
    fn paths(&self, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(prefix.clone());
        for (i, kid) in self.kids.iter().enumerate() {
            prefix.push(i);
            kid.paths(prefix, out);
            prefix.pop();
        }
    }

    fn at(&self, path: &[usize]) -> &Node {
        path.iter().fold(self, |node, &i| &node.kids[i])
    }

    fn replaced(&self, path: &[usize], with: Node) -> Node {
        let mut copy = self.clone();
        let mut node = &mut copy;
        for &i in path {
            node = &mut node.kids[i];
        }
        *node = with;
        copy
    }

    /// Simpler versions of this node, for the shrinker.
    fn simplifications(&self) -> Vec<Node> {
        let mut out = Vec::new();
        if self.optional && !self.render().is_empty() {
            out.push(Node::empty());
        }
        if self.list && self.kids.len() > 1 {
            for i in 0..self.kids.len() {
                let mut items = self.kids.clone();
                items.remove(i);
                out.push(Node::list(items, &self.parts[1]));
            }
        }
        if self.cat != Cat::Other {
            if !self.opaque {
                out.extend(self.kids.iter().filter(|k| k.cat == self.cat).cloned());
            }
            if !self.kids.is_empty() {
                out.push(Node::leaf(self.cat, simplest_literal(self.cat)));
                out.push(Node::leaf(self.cat, typed_null(self.cat)));
            }
        }
        out
    }
}

/// NULL of a category's type. The generator writes no bare NULL: PostgreSQL types it
/// `unknown`, and where a subquery's output column or an argument of `sum`, unary minus or a
/// polymorphic window function is unknown, it resolves it differently from Pistou (the
/// differences found and not fixed, docs/testing.md).
fn typed_null(cat: Cat) -> &'static str {
    match cat {
        Cat::Num => "CAST(NULL AS INT)",
        Cat::Text => "CAST(NULL AS TEXT)",
        Cat::Bool => "CAST(NULL AS BOOLEAN)",
        Cat::Date => "CAST(NULL AS DATE)",
        Cat::Ts => "CAST(NULL AS TIMESTAMP)",
        Cat::Other => "",
    }
}

fn simplest_literal(cat: Cat) -> &'static str {
    match cat {
        Cat::Num => "1",
        Cat::Text => "'a'",
        Cat::Bool => "TRUE",
        Cat::Date => "DATE '2020-01-01'",
        Cat::Ts => "TIMESTAMP '2020-01-01 00:00:00'",
        Cat::Other => "",
    }
}

// ---------------------------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------------------------

/// Columns visible to an expression: qualified name and category.
type Scope = Vec<(String, Cat)>;

/// A FROM clause: its SQL, the columns it makes visible, and the primary-key columns that
/// order its rows completely (None when a derived table is in it).
struct From {
    node: Node,
    scope: Scope,
    keys: Option<Vec<String>>,
}

struct Gen<'a> {
    rng: StdRng,
    tables: &'a [Table],
    aliases: usize,
    /// In HAVING: the group keys and the FROM scope the aggregates read.
    having: Option<(Scope, Scope)>,
    /// In an aggregate's argument: no subqueries there (one that reads only enclosing
    /// queries' columns makes an outer-level aggregate, which is 0A000 with a subquery in it).
    in_aggregate: bool,
}

impl<'a> Gen<'a> {
    fn subqueries_allowed(&self) -> bool {
        self.having.is_none() && !self.in_aggregate
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    fn alias(&mut self) -> String {
        self.aliases += 1;
        format!("a{}", self.aliases)
    }

    fn table(&mut self) -> &'a Table {
        let tables = self.tables;
        &tables[self.rng.gen_range(0..tables.len())]
    }

    fn value_cat(&mut self) -> Cat {
        // Numbers most often: they have the most operators and types to resolve.
        pick(&mut self.rng, &[Cat::Num, Cat::Num, Cat::Num, Cat::Text, Cat::Text, Cat::Bool, Cat::Date, Cat::Ts])
    }

    fn table_scope(table: &Table, alias: &str) -> Scope {
        table.columns.iter().map(|c| (format!("{alias}.{}", c.name), c.ty.cat())).collect()
    }

    // --- leaves -----------------------------------------------------------------------------

    fn column(&mut self, scope: &Scope, cat: Cat) -> Option<Node> {
        let matching: Vec<&(String, Cat)> = scope.iter().filter(|(_, c)| *c == cat).collect();
        if matching.is_empty() {
            return None;
        }
        let (name, _) = matching[self.rng.gen_range(0..matching.len())];
        Some(Node::leaf(cat, name.clone()))
    }

    fn constant(&mut self, cat: Cat) -> Node {
        if self.chance(0.08) {
            let null = match cat {
                Cat::Num => pick(&mut self.rng, &["CAST(NULL AS INT)", "CAST(NULL AS NUMERIC)"]),
                _ => typed_null(cat),
            };
            return Node::leaf(cat, null);
        }
        let ty = match cat {
            Cat::Num => pick(&mut self.rng, &[Ty::Int4, Ty::Int4, Ty::Int8, Ty::Numeric(6, 2), Ty::Double]),
            Cat::Text => Ty::Text,
            Cat::Bool => Ty::Bool,
            Cat::Date => Ty::Date,
            _ => Ty::Timestamp,
        };
        let text = literal(&mut self.rng, ty, true);
        // Typed constants of the other widths, so that their resolution is exercised too.
        let text = match ty {
            Ty::Double => format!("CAST({text} AS DOUBLE PRECISION)"),
            Ty::Int8 if self.chance(0.5) => format!("CAST({text} AS BIGINT)"),
            // Small values only: Pistou folds a constant CAST while binding, so an overflow
            // there comes before errors PostgreSQL finds first (42883 for `double % int`).
            Ty::Int4 if text.len() <= 4 && self.chance(0.1) => format!("CAST({text} AS SMALLINT)"),
            _ => text,
        };
        // A negative literal is a unary minus in PostgreSQL's grammar: parenthesize it.
        Node::leaf(cat, if text.starts_with('-') { format!("({text})") } else { text })
    }

    fn leaf(&mut self, cat: Cat, scope: &Scope) -> Node {
        if let Some((keys, from)) = self.having.clone() {
            return self.having_leaf(cat, &keys, &from);
        }
        if self.chance(0.7) {
            if let Some(column) = self.column(scope, cat) {
                return column;
            }
        }
        self.constant(cat)
    }

    // --- expressions ------------------------------------------------------------------------

    fn expr(&mut self, cat: Cat, scope: &Scope, depth: u32) -> Node {
        if depth == 0 || self.chance(0.35) {
            return self.leaf(cat, scope);
        }
        let d = depth - 1;
        // Forms every category has.
        match self.rng.gen_range(0..10) {
            0 => return Node::new(cat, "COALESCE({}, {})", vec![self.expr(cat, scope, d), self.expr(cat, scope, d)]),
            1 if cat != Cat::Bool => {
                return Node::new(cat, "NULLIF({}, {})", vec![self.expr(cat, scope, d), self.expr(cat, scope, d)]);
            }
            2 => {
                let kids = vec![self.pred(scope, d), self.expr(cat, scope, d), self.expr(cat, scope, d)];
                return Node::new(cat, "CASE WHEN {} THEN {} ELSE {} END", kids);
            }
            3 if cat != Cat::Bool && self.subqueries_allowed() => return self.scalar_subquery(cat, scope, d),
            _ => {}
        }
        match cat {
            Cat::Num => self.num(scope, d),
            Cat::Text => self.text(scope, d),
            Cat::Bool => self.pred(scope, depth),
            Cat::Date => self.date(scope, d),
            _ => self.timestamp(scope, d),
        }
    }

    fn num(&mut self, scope: &Scope, d: u32) -> Node {
        let e = |g: &mut Self| g.expr(Cat::Num, scope, d);
        match self.rng.gen_range(0..14) {
            0 => Node::new(Cat::Num, "({} + {})", vec![e(self), e(self)]),
            1 => Node::new(Cat::Num, "({} - {})", vec![e(self), e(self)]),
            2 => Node::new(Cat::Num, "({} * {})", vec![e(self), e(self)]),
            // Divisors are non-zero constants: division by zero would depend on evaluation order.
            3 => {
                let divisor = pick(&mut self.rng, &["2", "3", "(-4)", "7", "2.5", "CAST(2 AS DOUBLE PRECISION)"]);
                Node::new(Cat::Num, &format!("({{}} / {divisor})"), vec![e(self)])
            }
            4 => {
                let divisor = pick(&mut self.rng, &["2", "3", "(-4)", "7", "2.5"]);
                Node::new(Cat::Num, &format!("({{}} % {divisor})"), vec![e(self)])
            }
            5 => Node::new(Cat::Num, "abs({})", vec![e(self)]),
            6 => Node::new(Cat::Num, "(- {})", vec![e(self)]),
            7 => {
                let ty =
                    pick(&mut self.rng, &["INT", "BIGINT", "SMALLINT", "NUMERIC(10,2)", "NUMERIC", "DOUBLE PRECISION"]);
                Node::new(Cat::Num, &format!("CAST({{}} AS {ty})"), vec![e(self)])
            }
            8 => {
                let f = pick(&mut self.rng, &["GREATEST", "LEAST"]);
                Node::new(Cat::Num, &format!("{f}({{}}, {{}})"), vec![e(self), e(self)])
            }
            9 => {
                let f = pick(&mut self.rng, &["round({})", "floor({})", "ceil({})", "round({}, 1)"]);
                Node::new(Cat::Num, f, vec![e(self)])
            }
            10 => Node::new(Cat::Num, "length({})", vec![self.expr(Cat::Text, scope, d)]),
            11 => {
                Node::new(Cat::Num, "({} - {})", vec![self.expr(Cat::Date, scope, d), self.expr(Cat::Date, scope, d)])
            }
            12 => Node::new(
                Cat::Num,
                "position({} IN {})",
                vec![self.expr(Cat::Text, scope, d), self.expr(Cat::Text, scope, d)],
            ),
            _ => self.leaf(Cat::Num, scope),
        }
    }

    fn text(&mut self, scope: &Scope, d: u32) -> Node {
        let e = |g: &mut Self| g.expr(Cat::Text, scope, d);
        match self.rng.gen_range(0..9) {
            0 => Node::new(Cat::Text, "({} || {})", vec![e(self), e(self)]),
            1 => Node::new(Cat::Text, "lower({})", vec![e(self)]),
            2 => Node::new(Cat::Text, "upper({})", vec![e(self)]),
            3 => Node::new(Cat::Text, "substr({}, 2, 2)", vec![e(self)]),
            4 => Node::new(Cat::Text, "trim({})", vec![e(self)]),
            5 => Node::new(Cat::Text, "replace({}, 'a', 'xy')", vec![e(self)]),
            6 => Node::new(Cat::Text, "concat({}, {})", vec![e(self), e(self)]),
            // A number's text: integers and table columns (whose scale is declared) only, as a
            // quotient's or avg's numeric scale is a documented difference (a derived table's
            // column `aN.xK` may hold one).
            7 => match self.column(scope, Cat::Num).filter(|c| !c.render().contains(".x")) {
                Some(column) if self.having.is_none() => Node::new(Cat::Text, "CAST({} AS TEXT)", vec![column]),
                _ => Node::new(Cat::Text, "CAST({} AS TEXT)", vec![Node::leaf(Cat::Num, "42")]),
            },
            _ => self.leaf(Cat::Text, scope),
        }
    }

    fn date(&mut self, scope: &Scope, d: u32) -> Node {
        let days = pick(&mut self.rng, &["1", "30", "(-1)", "366"]);
        match self.rng.gen_range(0..4) {
            0 => Node::new(Cat::Date, &format!("({{}} + {days})"), vec![self.expr(Cat::Date, scope, d)]),
            1 => Node::new(Cat::Date, &format!("({{}} - {days})"), vec![self.expr(Cat::Date, scope, d)]),
            2 => {
                let f = pick(&mut self.rng, &["GREATEST", "LEAST"]);
                let kids = vec![self.expr(Cat::Date, scope, d), self.expr(Cat::Date, scope, d)];
                Node::new(Cat::Date, &format!("{f}({{}}, {{}})"), kids)
            }
            _ => self.leaf(Cat::Date, scope),
        }
    }

    fn timestamp(&mut self, scope: &Scope, d: u32) -> Node {
        match self.rng.gen_range(0..3) {
            0 => Node::new(Cat::Ts, "CAST({} AS TIMESTAMP)", vec![self.expr(Cat::Date, scope, d)]),
            1 => {
                let f = pick(&mut self.rng, &["GREATEST", "LEAST"]);
                Node::new(
                    Cat::Ts,
                    &format!("{f}({{}}, {{}})"),
                    vec![self.expr(Cat::Ts, scope, d), self.expr(Cat::Ts, scope, d)],
                )
            }
            _ => self.leaf(Cat::Ts, scope),
        }
    }

    /// A boolean expression: the WHERE, ON, HAVING and CASE conditions.
    fn pred(&mut self, scope: &Scope, depth: u32) -> Node {
        if depth == 0 {
            return if self.chance(0.5) { self.comparison(scope, 0) } else { self.leaf(Cat::Bool, scope) };
        }
        let d = depth - 1;
        let subqueries = self.subqueries_allowed();
        match self.rng.gen_range(0..15) {
            0 => Node::new(Cat::Bool, "({} AND {})", vec![self.pred(scope, d), self.pred(scope, d)]),
            1 => Node::new(Cat::Bool, "({} OR {})", vec![self.pred(scope, d), self.pred(scope, d)]),
            2 => Node::new(Cat::Bool, "(NOT {})", vec![self.pred(scope, d)]),
            3 => {
                let cat = self.value_cat();
                let test = pick(&mut self.rng, &["IS NULL", "IS NOT NULL"]);
                Node::new(Cat::Bool, &format!("({{}} {test})"), vec![self.expr(cat, scope, d)])
            }
            4 => {
                let test = pick(&mut self.rng, &["IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE", "IS UNKNOWN"]);
                Node::new(Cat::Bool, &format!("({{}} {test})"), vec![self.pred(scope, d)])
            }
            5 => {
                // Every category has an order (booleans: false < true).
                let cat = self.value_cat();
                let not = if self.chance(0.3) { "NOT " } else { "" };
                let kids = vec![self.expr(cat, scope, d), self.expr(cat, scope, d), self.expr(cat, scope, d)];
                Node::new(Cat::Bool, &format!("({{}} {not}BETWEEN {{}} AND {{}})"), kids)
            }
            6 => {
                let cat = self.value_cat();
                let not = if self.chance(0.3) { "NOT " } else { "" };
                let n = self.rng.gen_range(1..=4);
                // Leaves only: sqlparser 0.63 fails to parse a parenthesized subquery followed by
                // more items in an IN list (`x IN ((SELECT ...), 1)`, 42601).
                let items: Vec<Node> = (0..n).map(|_| self.leaf(cat, scope)).collect();
                Node::new(
                    Cat::Bool,
                    &format!("({{}} {not}IN ({{}}))"),
                    vec![self.expr(cat, scope, d), Node::list(items, ", ")],
                )
            }
            7 if subqueries => self.in_subquery(scope, d),
            8 if subqueries => self.exists(scope, d),
            9 => {
                let op = pick(&mut self.rng, &["LIKE", "NOT LIKE", "ILIKE"]);
                let pattern =
                    pick(&mut self.rng, &["'a%'", "'%b'", "'_'", "'%'", "'a_c'", "''", "'%a%'", "'A%'", "'x\\_y'"]);
                Node::new(Cat::Bool, &format!("({{}} {op} {pattern})"), vec![self.expr(Cat::Text, scope, d)])
            }
            10 => {
                let cat = self.value_cat();
                let op = pick(&mut self.rng, &["IS DISTINCT FROM", "IS NOT DISTINCT FROM"]);
                Node::new(
                    Cat::Bool,
                    &format!("({{}} {op} {{}})"),
                    vec![self.expr(cat, scope, d), self.expr(cat, scope, d)],
                )
            }
            11 => self.leaf(Cat::Bool, scope),
            _ => self.comparison(scope, d),
        }
    }

    fn comparison(&mut self, scope: &Scope, d: u32) -> Node {
        let cat = self.value_cat();
        let op = pick(&mut self.rng, &["=", "<>", "<", "<=", ">", ">="]);
        // Dates compare with timestamps too.
        let right = match cat {
            Cat::Date if self.chance(0.2) => Cat::Ts,
            Cat::Ts if self.chance(0.2) => Cat::Date,
            _ => cat,
        };
        Node::new(Cat::Bool, &format!("({{}} {op} {{}})"), vec![self.expr(cat, scope, d), self.expr(right, scope, d)])
    }

    // --- subqueries -------------------------------------------------------------------------

    /// A single table with a fresh alias, and the scope inside a subquery over it: its own
    /// columns first, then the enclosing query's (correlation).
    fn subquery_table(&mut self, outer: &Scope) -> (String, Scope, Scope) {
        let alias = self.alias();
        let table = self.table();
        let from = format!("{} AS {alias}", table.name);
        let own = Gen::table_scope(table, &alias);
        let mut scope = own.clone();
        scope.extend(outer.iter().cloned());
        (from, own, scope)
    }

    fn subquery_where(&mut self, scope: &Scope, d: u32) -> Node {
        if self.chance(0.8) {
            Node::new(Cat::Other, " WHERE {}", vec![self.pred(scope, d)]).optional()
        } else {
            Node::empty()
        }
    }

    /// A scalar subquery: an aggregate (one row whatever the data), or a column of the row of
    /// a given primary key (at most one row).
    fn scalar_subquery(&mut self, cat: Cat, outer: &Scope, d: u32) -> Node {
        let (from, own, scope) = self.subquery_table(outer);
        if self.chance(0.5) {
            if let Some(column) = self.column(&own, cat) {
                let key_cat = own[0].1;
                let key = Node::leaf(Cat::Other, own[0].0.clone());
                let value = self.expr(key_cat, outer, d);
                return Node::new(
                    cat,
                    &format!("(SELECT {{}} FROM {from} WHERE {{}} = {{}})"),
                    vec![column, key, value],
                )
                .opaque();
            }
        }
        // The argument reads the subquery's own table: one over enclosing columns only would
        // make an outer-level aggregate, turning the enclosing query into a grouped one
        // (which the TLP oracle's partitioning does not preserve).
        let aggregate = self.aggregate(cat, &own, d);
        let filter = self.subquery_where(&scope, d);
        Node::new(cat, &format!("(SELECT {{}} FROM {from}{{}})"), vec![aggregate, filter]).opaque()
    }

    fn in_subquery(&mut self, outer: &Scope, d: u32) -> Node {
        let (from, _, scope) = self.subquery_table(outer);
        let cat = self.value_cat();
        let not = if self.chance(0.3) { "NOT " } else { "" };
        let selected = self.expr(cat, &scope, d.min(1));
        let kids = vec![self.expr(cat, outer, d), selected, self.subquery_where(&scope, d)];
        Node::new(Cat::Bool, &format!("({{}} {not}IN (SELECT {{}} FROM {from}{{}}))"), kids).opaque()
    }

    fn exists(&mut self, outer: &Scope, d: u32) -> Node {
        let (from, _, scope) = self.subquery_table(outer);
        let not = if self.chance(0.3) { "NOT " } else { "" };
        Node::new(Cat::Bool, &format!("({not}EXISTS (SELECT 1 FROM {from}{{}}))"), vec![self.subquery_where(&scope, d)])
    }

    // --- aggregates -------------------------------------------------------------------------

    /// An aggregate call of category `cat` over `scope`.
    fn aggregate(&mut self, cat: Cat, scope: &Scope, d: u32) -> Node {
        let saved = self.having.take();
        let was_in_aggregate = std::mem::replace(&mut self.in_aggregate, true);
        let arg_depth = d.min(1);
        let node = match cat {
            Cat::Num => match self.rng.gen_range(0..7) {
                0 => Node::leaf(Cat::Num, "count(*)"),
                1 => {
                    let c = self.value_cat();
                    Node::new(Cat::Num, "count({})", vec![self.expr(c, scope, arg_depth)])
                }
                2 => {
                    let c = self.value_cat();
                    Node::new(Cat::Num, "count(DISTINCT {})", vec![self.expr(c, scope, arg_depth)])
                }
                3 => Node::new(Cat::Num, "sum({})", vec![self.expr(Cat::Num, scope, arg_depth)]),
                4 => Node::new(Cat::Num, "avg({})", vec![self.expr(Cat::Num, scope, arg_depth)]),
                5 => Node::new(Cat::Num, "min({})", vec![self.expr(Cat::Num, scope, arg_depth)]),
                _ => Node::new(Cat::Num, "max({})", vec![self.expr(Cat::Num, scope, arg_depth)]),
            },
            Cat::Bool => {
                let f = pick(&mut self.rng, &["bool_and({})", "bool_or({})"]);
                Node::new(Cat::Bool, f, vec![self.pred(scope, arg_depth)])
            }
            _ => {
                let f = pick(&mut self.rng, &["min({})", "max({})"]);
                Node::new(cat, f, vec![self.expr(cat, scope, arg_depth)])
            }
        };
        self.having = saved;
        self.in_aggregate = was_in_aggregate;
        node.opaque()
    }

    /// In HAVING, a value is a group key, an aggregate or a constant.
    fn having_leaf(&mut self, cat: Cat, keys: &Scope, from: &Scope) -> Node {
        match self.rng.gen_range(0..3) {
            0 => match self.column(keys, cat) {
                Some(key) => key,
                None => self.constant(cat),
            },
            1 => self.aggregate(cat, from, 1),
            _ => self.constant(cat),
        }
    }

    // --- queries ----------------------------------------------------------------------------

    fn gen_from(&mut self, outer: &Scope) -> From {
        let first = self.gen_from_item(outer);
        let mut node = first.node;
        let mut scope = first.scope;
        let mut keys = first.keys;
        // The items after the last comma: a JOIN binds tighter than a comma, so its ON sees
        // only them (PostgreSQL: 42P01 "invalid reference to FROM-clause entry").
        let mut since_comma = scope.clone();
        for _ in 0..self.rng.gen_range(0..=2) {
            let next = self.gen_from_item(outer);
            let mut joined = scope.clone();
            joined.extend(next.scope.iter().cloned());
            since_comma.extend(next.scope.iter().cloned());
            let mut on_scope = since_comma.clone();
            on_scope.extend(outer.iter().cloned());
            node = match self.rng.gen_range(0..6) {
                0 => {
                    since_comma = next.scope.clone();
                    Node::new(Cat::Other, "{}, {}", vec![node, next.node])
                }
                1 => Node::new(Cat::Other, "{} CROSS JOIN {}", vec![node, next.node]),
                2 | 3 => {
                    let on = self.join_condition(&on_scope);
                    Node::new(Cat::Other, "{} JOIN {} ON {}", vec![node, next.node, on])
                }
                _ => {
                    let on = self.join_condition(&on_scope);
                    Node::new(Cat::Other, "{} LEFT JOIN {} ON {}", vec![node, next.node, on])
                }
            };
            scope = joined;
            keys = match (keys, next.keys) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            };
        }
        From { node, scope, keys }
    }

    /// Mostly an equality between columns of the two sides (the common join), else any
    /// predicate.
    fn join_condition(&mut self, scope: &Scope) -> Node {
        if self.chance(0.6) {
            let cat = self.value_cat();
            let (Some(a), Some(b)) = (self.column(scope, cat), self.column(scope, cat)) else {
                return self.pred(scope, 2);
            };
            let eq = Node::new(Cat::Bool, "{} = {}", vec![a, b]);
            if self.chance(0.3) {
                let extra = self.pred(scope, 1);
                return Node::new(Cat::Bool, "({} AND {})", vec![eq, extra]);
            }
            return eq;
        }
        self.pred(scope, 2)
    }

    /// A table, or now and then a derived table over one.
    fn gen_from_item(&mut self, outer: &Scope) -> From {
        let alias = self.alias();
        if self.chance(0.12) {
            let inner = self.select_plain(outer, 2, false);
            let names: Vec<String> = (0..inner.cats.len()).map(|i| format!("x{i}")).collect();
            let scope = names.iter().zip(&inner.cats).map(|(n, c)| (format!("{alias}.{n}"), *c)).collect();
            let node = Node::new(Cat::Other, &format!("({{}}) AS {alias} ({})", names.join(", ")), vec![inner.node]);
            return From { node, scope, keys: None };
        }
        let table = self.table();
        let name = table.name.clone();
        let scope = Gen::table_scope(table, &alias);
        let key = format!("{alias}.id");
        From { node: Node::leaf(Cat::Other, format!("{name} AS {alias}")), scope, keys: Some(vec![key]) }
    }

    fn where_clause(&mut self, scope: &Scope, depth: u32) -> Node {
        if self.chance(0.75) {
            Node::new(Cat::Other, " WHERE {}", vec![self.pred(scope, depth)]).optional()
        } else {
            Node::empty()
        }
    }

    /// SELECT [DISTINCT] items FROM ... [WHERE ...], without ORDER BY.
    fn select_plain(&mut self, outer: &Scope, depth: u32, distinct_allowed: bool) -> Select {
        let from = self.gen_from(outer);
        let mut scope = from.scope.clone();
        scope.extend(outer.iter().cloned());
        let cats: Vec<Cat> = (0..self.rng.gen_range(1..=3)).map(|_| self.value_cat()).collect();
        self.select_with(&from, &scope, cats, depth, distinct_allowed)
    }

    fn select_with(
        &mut self,
        from: &From,
        scope: &Scope,
        cats: Vec<Cat>,
        depth: u32,
        distinct_allowed: bool,
    ) -> Select {
        let items: Vec<Node> = cats.iter().map(|c| self.expr(*c, scope, depth)).collect();
        let distinct = if distinct_allowed && self.chance(0.2) { "DISTINCT " } else { "" };
        let filter = self.where_clause(scope, depth + 1);
        let node = Node::new(
            Cat::Other,
            &format!("SELECT {distinct}{{}} FROM {{}}{{}}"),
            vec![Node::list(items, ", "), from.node.clone(), filter],
        );
        Select { node, cats }
    }

    /// ORDER BY every output column (so the order is determined and LIMIT / OFFSET are
    /// deterministic), or nothing.
    fn order_by(&mut self, columns: usize) -> (String, Order) {
        if self.chance(0.5) {
            return (String::new(), Order::Sorted);
        }
        let terms: Vec<String> = (1..=columns)
            .map(|i| {
                let direction = pick(&mut self.rng, &["", " ASC", " DESC"]);
                let nulls = pick(&mut self.rng, &["", "", " NULLS FIRST", " NULLS LAST"]);
                format!("{i}{direction}{nulls}")
            })
            .collect();
        let mut clause = format!(" ORDER BY {}", terms.join(", "));
        if self.chance(0.5) {
            clause.push_str(&format!(" LIMIT {}", self.rng.gen_range(0..5)));
        }
        if self.chance(0.3) {
            clause.push_str(&format!(" OFFSET {}", self.rng.gen_range(0..4)));
        }
        (clause, Order::Kept)
    }

    fn query(&mut self) -> (Node, Order) {
        let none = Scope::new();
        let (node, columns) = match self.rng.gen_range(0..10) {
            0..=3 => {
                let select = self.select_plain(&none, 3, true);
                (select.node, select.cats.len())
            }
            4..=5 => self.grouped(),
            6..=7 => self.set_operation(),
            _ => self.windowed(),
        };
        let (order_by, order) = self.order_by(columns);
        (Node::new(Cat::Other, &format!("{{}}{order_by}"), vec![node]), order)
    }

    /// SELECT keys, aggregates FROM ... [WHERE] [GROUP BY keys] [HAVING].
    fn grouped(&mut self) -> (Node, usize) {
        let from = self.gen_from(&Scope::new());
        let n_keys = self.rng.gen_range(0..=2);
        let keys: Scope = (0..n_keys)
            .filter_map(|_| {
                let cat = self.value_cat();
                self.column(&from.scope, cat).map(|n| (n.render(), cat))
            })
            .collect();
        let mut items: Vec<Node> = keys.iter().map(|(k, c)| Node::leaf(*c, k.clone())).collect();
        for _ in 0..self.rng.gen_range(1..=3) {
            let cat = self.value_cat();
            items.push(self.aggregate(cat, &from.scope, 2));
        }
        let columns = items.len();
        let filter = self.where_clause(&from.scope, 2);
        let group_by = if keys.is_empty() {
            String::new()
        } else {
            format!(" GROUP BY {}", keys.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "))
        };
        let having = if self.chance(0.4) {
            self.having = Some((keys.clone(), from.scope.clone()));
            let p = self.pred(&Scope::new(), 2);
            self.having = None;
            Node::new(Cat::Other, " HAVING {}", vec![p]).optional()
        } else {
            Node::empty()
        };
        let node = Node::new(
            Cat::Other,
            &format!("SELECT {{}} FROM {{}}{{}}{group_by}{{}}"),
            vec![Node::list(items, ", "), from.node, filter, having],
        );
        (node, columns)
    }

    /// Two or three plain SELECTs of the same column categories joined by set operators.
    fn set_operation(&mut self) -> (Node, usize) {
        let cats: Vec<Cat> = (0..self.rng.gen_range(1..=2)).map(|_| self.value_cat()).collect();
        let mut node = self.select_of(&cats).node;
        for _ in 0..self.rng.gen_range(1..=2) {
            let op = pick(&mut self.rng, &["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"]);
            let right = self.select_of(&cats).node;
            node = Node::new(Cat::Other, &format!("{{}} {op} {{}}"), vec![node, right]);
        }
        (node, cats.len())
    }

    /// An operand of a set operation; without DISTINCT: `SELECT DISTINCT 'x'` makes the
    /// literal text in PostgreSQL, where Pistou leaves it to the set operation's common type
    /// (`SELECT DISTINCT 'x' INTERSECT SELECT varchar` is text there; not fixed).
    fn select_of(&mut self, cats: &[Cat]) -> Select {
        let none = Scope::new();
        let from = self.gen_from(&none);
        let scope = from.scope.clone();
        self.select_with(&from, &scope, cats.to_vec(), 2, false)
    }

    /// SELECT items, window calls FROM ... [WHERE]. Calls whose result depends on the order
    /// of peers (row_number, lag, ...) order by every primary key of the FROM clause.
    fn windowed(&mut self) -> (Node, usize) {
        let from = self.gen_from(&Scope::new());
        let scope = from.scope.clone();
        let mut items: Vec<Node> = (0..self.rng.gen_range(0..=2))
            .map(|_| {
                let cat = self.value_cat();
                self.expr(cat, &scope, 1)
            })
            .collect();
        for _ in 0..self.rng.gen_range(1..=2) {
            items.push(self.window_call(&scope, from.keys.as_deref()));
        }
        let columns = items.len();
        let filter = self.where_clause(&scope, 2);
        let node = Node::new(Cat::Other, "SELECT {} FROM {}{}", vec![Node::list(items, ", "), from.node, filter]);
        (node, columns)
    }

    fn window_call(&mut self, scope: &Scope, keys: Option<&[String]>) -> Node {
        let partition = if self.chance(0.6) {
            let cat = self.value_cat();
            format!("PARTITION BY {}", self.expr(cat, scope, 1).render())
        } else {
            String::new()
        };
        let order_by = |g: &mut Self| {
            let cat = g.value_cat();
            let direction = pick(&mut g.rng, &["", " DESC"]);
            format!("{}{direction}", g.expr(cat, scope, 1).render())
        };
        if let Some(keys) = keys.filter(|_| self.chance(0.5)) {
            let total = format!("{partition} ORDER BY {}", keys.join(", "));
            let value_cat = self.value_cat();
            let mut value = self.expr(value_cat, scope, 1).render();
            // A quoted literal is `unknown` there, which lag, first_value, ... (polymorphic)
            // refuse in PostgreSQL (42804) and Pistou reads as text (not fixed).
            if value.starts_with('\'') {
                value = format!("CAST({value} AS TEXT)");
            }
            let num = self.expr(Cat::Num, scope, 1).render();
            let call = match self.rng.gen_range(0..7) {
                0 => format!("row_number() OVER ({total})"),
                1 => format!("lag({value}) OVER ({total})"),
                2 => format!("lead({value}, 2) OVER ({total})"),
                3 => format!("first_value({value}) OVER ({total})"),
                4 => format!("ntile(3) OVER ({total})"),
                5 => format!("sum({num}) OVER ({total} ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"),
                _ => format!("last_value({value}) OVER ({total} ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"),
            };
            return Node::leaf(Cat::Other, call);
        }
        // Peers get the same value from these, whatever their order.
        let ordered = if self.chance(0.6) { format!(" ORDER BY {}", order_by(self)) } else { String::new() };
        let window = format!("{partition}{ordered}");
        let any_cat = pick(&mut self.rng, &[Cat::Num, Cat::Text, Cat::Date]);
        let value = self.expr(any_cat, scope, 1).render();
        let num = self.expr(Cat::Num, scope, 1).render();
        let call = match self.rng.gen_range(0..9) {
            0 => "rank()".to_string(),
            1 => "dense_rank()".to_string(),
            2 => "percent_rank()".to_string(),
            3 => "cume_dist()".to_string(),
            4 => "count(*)".to_string(),
            5 => format!("sum({num})"),
            6 => format!("avg({num})"),
            7 => format!("min({value})"),
            _ => format!("max({value})"),
        };
        Node::leaf(Cat::Other, format!("{call} OVER ({window})"))
    }

    // --- writes -----------------------------------------------------------------------------

    /// A write to a random table; returns it and the table's name.
    fn write(&mut self) -> (Node, String) {
        let table = self.table();
        let node = match self.rng.gen_range(0..10) {
            0..=2 => self.insert_values(table),
            3 => self.insert_select(table),
            4..=6 => self.update(table),
            _ => self.delete(table),
        };
        (node, table.name.clone())
    }

    fn insert_values(&mut self, table: &Table) -> Node {
        let rows = self.rng.gen_range(1..=3);
        let mut sql = insert_rows(&mut self.rng, table, rows);
        match self.rng.gen_range(0..6) {
            0 => sql.push_str(" ON CONFLICT DO NOTHING"),
            1 => sql.push_str(" ON CONFLICT (id) DO NOTHING"),
            2 if table.columns.len() > 1 => {
                let column = &table.columns[self.rng.gen_range(1..table.columns.len())].name;
                sql.push_str(&format!(" ON CONFLICT (id) DO UPDATE SET {column} = excluded.{column}"));
            }
            _ => {}
        }
        Node::leaf(Cat::Other, sql)
    }

    fn insert_select(&mut self, table: &Table) -> Node {
        let from = self.gen_from(&Scope::new());
        let scope = from.scope.clone();
        let cats: Vec<Cat> = table.columns.iter().map(|c| c.ty.cat()).collect();
        let select = self.select_with(&from, &scope, cats, 2, true);
        let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
        Node::new(Cat::Other, &format!("INSERT INTO {} ({}) {{}}", table.name, names.join(", ")), vec![select.node])
    }

    /// UPDATE of non-key columns. UNIQUE columns get constants only: PostgreSQL checks
    /// uniqueness row by row, so `SET u = u + 1` may fail there on a transient duplicate that
    /// the end of the statement would not have.
    fn update(&mut self, table: &Table) -> Node {
        let scope = Gen::table_scope(table, &table.name);
        let n = self.rng.gen_range(1..=2.min(table.columns.len() - 1));
        let mut assignments = Vec::new();
        let mut used = Vec::new();
        for _ in 0..n {
            let column = &table.columns[self.rng.gen_range(1..table.columns.len())];
            if used.contains(&column.name) {
                continue;
            }
            used.push(column.name.clone());
            let value = if column.unique {
                Node::leaf(column.ty.cat(), value(&mut self.rng, column))
            } else {
                self.expr(column.ty.cat(), &scope, 2)
            };
            assignments.push(Node::new(Cat::Other, &format!("{} = {{}}", column.name), vec![value]));
        }
        let filter = self.where_clause(&scope, 3);
        Node::new(
            Cat::Other,
            &format!("UPDATE {} SET {{}}{{}}", table.name),
            vec![Node::list(assignments, ", "), filter],
        )
    }

    fn delete(&mut self, table: &Table) -> Node {
        let scope = Gen::table_scope(table, &table.name);
        let filter = Node::new(Cat::Other, " WHERE {}", vec![self.pred(&scope, 3)]).optional();
        Node::new(Cat::Other, &format!("DELETE FROM {}{{}}", table.name), vec![filter])
    }

    // --- TLP --------------------------------------------------------------------------------

    /// A query and a predicate for ternary logic partitioning, as one node rendered
    /// `query \u{1} predicate`.
    fn tlp(&mut self) -> (Node, bool) {
        let from = self.gen_from(&Scope::new());
        let scope = from.scope.clone();
        let distinct = self.chance(0.3);
        let items: Vec<Node> = (0..self.rng.gen_range(1..=3))
            .map(|_| {
                let cat = self.value_cat();
                self.expr(cat, &scope, 2)
            })
            .collect();
        let select = if distinct { "SELECT DISTINCT {} FROM {}" } else { "SELECT {} FROM {}" };
        let query = Node::new(Cat::Other, select, vec![Node::list(items, ", "), from.node]);
        let predicate = self.pred(&scope, 3);
        (Node::new(Cat::Other, "{}\u{1}{}", vec![query, predicate]), distinct)
    }
}

struct Select {
    node: Node,
    cats: Vec<Cat>,
}

// ---------------------------------------------------------------------------------------------
// Running and comparing
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Verdict {
    BothOk,
    BothError,
    Unsupported,
    /// An error on one side only whose occurrence depends on evaluation (see `verdict`).
    OneSidedError,
    Mismatch,
}

/// Compares two outcomes. Beyond equality, deliberately:
/// - Pistou's 0A000 is "unsupported", whatever PostgreSQL did.
/// - Two errors of classes 21 (cardinality: a scalar subquery's second row), 22 (data
///   exception) or 23 (integrity constraint) match whatever their codes: which row fails
///   first, and so which error, depends on the order rows are produced and expressions
///   evaluated, which SQL leaves open (a DISTINCT's order decides whether a duplicate key or
///   an overflowing value comes first).
/// - An error of those classes on one side and a result on the other is counted apart, not
///   as a mismatch: PostgreSQL folds constants while planning (`CAST(5005 AS NUMERIC(3,2))`
///   fails with no row to compute), runs an uncorrelated scalar subquery only when a row
///   needs it (Pistou runs it once before reading rows), skips derived-table columns no one
///   reads, and stops evaluating early where Pistou does not, and the other way round. The
///   generator keeps them rare (no division by a column, few range limits); the count is
///   reported.
fn verdict(ours: &Outcome, theirs: &Outcome) -> Verdict {
    let evaluation_dependent = |class: &str| ["21", "22", "23"].contains(&class);
    let class = |o: &Outcome| match o {
        Outcome::Error(code) => code.get(..2).unwrap_or_default().to_string(),
        _ => String::new(),
    };
    match (ours, theirs) {
        (Outcome::Error(code), _) if code == "0A000" => Verdict::Unsupported,
        _ if ours == theirs => {
            if class(ours).is_empty() {
                Verdict::BothOk
            } else {
                Verdict::BothError
            }
        }
        _ if evaluation_dependent(&class(ours)) && evaluation_dependent(&class(theirs)) => Verdict::BothError,
        _ if evaluation_dependent(&class(ours)) && class(theirs).is_empty() => Verdict::OneSidedError,
        _ if evaluation_dependent(&class(theirs)) && class(ours).is_empty() => Verdict::OneSidedError,
        _ => Verdict::Mismatch,
    }
}

/// What to check for a statement; `Node` holds the statement.
#[derive(Clone)]
enum Check {
    /// Run on both, compare (rows in `order`), then compare the table `written` if given.
    Differential { order: Order, written: Option<String> },
    /// On Pistou alone: the node renders `query \u{1} predicate`.
    Tlp { distinct: bool },
}

#[derive(Default)]
struct Stats {
    statements: usize,
    both_ok: usize,
    both_error: usize,
    unsupported: usize,
    one_sided_errors: usize,
    mismatches: usize,
    tlp_checks: usize,
    tlp_skipped: usize,
    tlp_mismatches: usize,
}

impl Stats {
    fn count(&mut self, verdict: &Verdict) {
        self.statements += 1;
        match verdict {
            Verdict::BothOk => self.both_ok += 1,
            Verdict::BothError => self.both_error += 1,
            Verdict::Unsupported => self.unsupported += 1,
            Verdict::OneSidedError => self.one_sided_errors += 1,
            Verdict::Mismatch => self.mismatches += 1,
        }
    }
}

/// Runs a statement on both sides (for real) and returns the verdict and the two outcomes.
fn run_both(client: &mut pg::Client, db: &mut Database, sql: &str, order: Order) -> (Verdict, Outcome, Outcome) {
    let ours = on_pistou_in(db, sql, order);
    let theirs = on_postgres_in(client, sql, order);
    (verdict(&ours, &theirs), ours, theirs)
}

/// A difference found: the statement run and what each side gave.
struct Difference {
    sql: String,
    ours: String,
    theirs: String,
    /// The kind of difference: shrinking keeps to the same kind, not to any difference.
    kind: String,
}

/// An outcome's kind: its SQLSTATE, or "rows" / "count" (the same kind of wrong result).
fn kind(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Error(code) => code.clone(),
        Outcome::Rows(types, _) => format!("rows {types:?}"),
        Outcome::Count(_) => "count".into(),
    }
}

/// Performs `check`; None if both sides agree. A write must run in a PostgreSQL transaction
/// block: it runs under a savepoint, rolled back if it failed there (so that the comparison
/// of the table can follow); a write that only one side could run (0A000 here, a data
/// exception on one side) is undone on both, so that the two stay equal.
fn perform(
    client: &mut pg::Client,
    db: &mut Database,
    check: &Check,
    node: &Node,
    stats: Option<&mut Stats>,
) -> Option<Difference> {
    let sql = node.render();
    match check {
        Check::Differential { order, written } => {
            let before = written.is_some().then(|| db.clone());
            if written.is_some() {
                client.query("SAVEPOINT w").expect("SAVEPOINT");
            }
            let (v, ours, theirs) = run_both(client, db, &sql, *order);
            let one_sided = matches!(v, Verdict::Unsupported | Verdict::OneSidedError);
            if let Some(before) = before {
                let undo = matches!(theirs, Outcome::Error(_)) || one_sided;
                let end = if undo { "ROLLBACK TO SAVEPOINT w" } else { "RELEASE SAVEPOINT w" };
                client.query(end).expect("savepoint");
                if one_sided {
                    *db = before;
                }
            }
            let mismatch = v == Verdict::Mismatch;
            if let Some(stats) = stats {
                stats.count(&v);
            }
            if mismatch {
                let kind = format!("{} / {}", kind(&ours), kind(&theirs));
                return Some(Difference { sql, ours: format!("{ours:?}"), theirs: format!("{theirs:?}"), kind });
            }
            let table = written.as_ref().filter(|_| !one_sided)?;
            let all = format!("SELECT * FROM {table}");
            let (v, ours, theirs) = run_both(client, db, &all, Order::Sorted);
            (v == Verdict::Mismatch).then(|| Difference {
                sql: format!("{sql};\n{all}"),
                kind: format!("table {} / {}", kind(&ours), kind(&theirs)),
                ours: format!("{ours:?}"),
                theirs: format!("{theirs:?}"),
            })
        }
        Check::Tlp { distinct } => {
            let outcome = tlp(db, &sql, *distinct);
            if let Some(stats) = stats {
                match outcome {
                    Tlp::Agree => stats.tlp_checks += 1,
                    Tlp::Error => stats.tlp_skipped += 1,
                    Tlp::Differ(..) => stats.tlp_mismatches += 1,
                }
            }
            match outcome {
                Tlp::Differ(whole, parts) => Some(Difference {
                    sql: tlp_statements(&sql).join(";\n"),
                    ours: whole,
                    theirs: parts,
                    kind: "tlp".into(),
                }),
                _ => None,
            }
        }
    }
}

/// Performs `check` and undoes its effects: on a copy of the database, and in a transaction
/// rolled back on PostgreSQL.
fn sandboxed(client: &mut pg::Client, db: &Database, check: &Check, node: &Node) -> Option<Difference> {
    let mut copy = db.clone();
    client.query("BEGIN").expect("BEGIN");
    let difference = perform(client, &mut copy, check, node, None);
    client.query("ROLLBACK").expect("ROLLBACK");
    difference
}

enum Tlp {
    Agree,
    /// A part or the whole failed (a data exception in the predicate, say): no check.
    Error,
    Differ(String, String),
}

fn tlp_statements(rendered: &str) -> Vec<String> {
    let (query, predicate) = rendered.split_once('\u{1}').unwrap_or((rendered, "TRUE"));
    vec![
        query.to_string(),
        format!("{query} WHERE {predicate}"),
        format!("{query} WHERE NOT ({predicate})"),
        format!("{query} WHERE ({predicate}) IS NULL"),
    ]
}

fn tlp(db: &mut Database, rendered: &str, distinct: bool) -> Tlp {
    let mut results = Vec::new();
    for sql in tlp_statements(rendered) {
        match on_pistou_in(db, &sql, Order::Sorted) {
            Outcome::Rows(_, rows) => results.push(rows),
            _ => return Tlp::Error,
        }
    }
    let whole = results.remove(0);
    let mut parts: Vec<Vec<String>> = results.into_iter().flatten().collect();
    parts.sort();
    if distinct {
        parts.dedup();
    }
    if whole == parts {
        Tlp::Agree
    } else {
        Tlp::Differ(format!("{whole:?}"), format!("{parts:?}"))
    }
}

// ---------------------------------------------------------------------------------------------
// One seed
// ---------------------------------------------------------------------------------------------

const DROP_TABLES: &str = "DROP TABLE IF EXISTS t0, t1, t2, t3";

/// The state of a seed: schema, and the data statements that changed it (for a reproducer).
struct Run<'a> {
    seed: u64,
    tables: &'a [Table],
    setup: Vec<String>,
}

impl Run<'_> {
    /// Both sides from scratch with `setup`; None if a setup statement now differs.
    fn rebuild(&self, client: &mut pg::Client, setup: &[String]) -> Option<Database> {
        client.query(DROP_TABLES).expect("drop tables");
        let mut db = Database::new();
        for table in self.tables {
            let sql = table.create_sql();
            let (v, ours, theirs) = run_both(client, &mut db, &sql, Order::Sorted);
            assert_eq!(v, Verdict::BothOk, "{sql}: {ours:?} / {theirs:?}");
        }
        for sql in setup {
            let (v, ..) = run_both(client, &mut db, sql, Order::Sorted);
            if !matches!(v, Verdict::BothOk | Verdict::BothError) {
                return None;
            }
        }
        Some(db)
    }

    /// Shrinks a mismatch and describes it for the failure message.
    fn report(&self, client: &mut pg::Client, check: &Check, node: &Node) -> String {
        let found = self.rebuild(client, &self.setup).and_then(|db| sandboxed(client, &db, check, node));
        let kind = found.map(|d| d.kind).unwrap_or_default();
        let node_before_shrinking = node;
        let mut setup = self.shrink_setup(client, check, node, &kind, self.setup.clone());
        let node = match self.rebuild(client, &setup) {
            Some(db) => shrink_node(client, &db, check, &kind, node),
            None => node.clone(),
        };
        setup = self.shrink_setup(client, check, &node, &kind, setup);
        let difference = self.rebuild(client, &setup).and_then(|db| sandboxed(client, &db, check, &node));
        let original = node_before_shrinking.render().replace('\u{1}', " -- TLP predicate: ");
        let schema: Vec<String> = self.tables.iter().map(|t| format!("{};", t.create_sql())).collect();
        let setup_text: Vec<String> = setup.iter().map(|s| format!("{s};")).collect();
        let mut out = format!(
            "seed {} ({}): mismatch\n-- schema\n{}\n-- data ({} of {} statements needed)\n{}\n-- statement\n",
            self.seed,
            match check {
                Check::Differential { .. } => "Pistou vs PostgreSQL",
                Check::Tlp { .. } => "TLP on Pistou",
            },
            schema.join("\n"),
            setup.len(),
            self.setup.len(),
            setup_text.join("\n"),
        );
        match difference {
            Some(d) => {
                // A TLP difference holds the whole query's rows and the parts' (both Pistou's).
                let (a, b) = match check {
                    Check::Differential { .. } => ("pistou:    ", "postgresql:"),
                    Check::Tlp { .. } => ("rows of the whole query (Pistou):", "rows of its three parts (Pistou):"),
                };
                out.push_str(&format!("{};\n-- {a} {}\n-- {b} {}\n", d.sql, d.ours, d.theirs));
                if let (Check::Differential { .. }, Some(db)) = (check, self.rebuild(client, &setup)) {
                    out.push_str(&messages(client, &db, &d.sql));
                }
            }
            None => {
                out.push_str(&format!("{};\n-- (the difference did not reproduce after shrinking)\n", node.render()))
            }
        }
        out.push_str(&format!("-- statement before shrinking: {original}\n"));
        out
    }

    /// Drops data statements one at a time, last first, while a mismatch of the same kind
    /// remains.
    fn shrink_setup(
        &self,
        client: &mut pg::Client,
        check: &Check,
        node: &Node,
        kind: &str,
        mut setup: Vec<String>,
    ) -> Vec<String> {
        let mut i = setup.len();
        while i > 0 {
            i -= 1;
            let mut candidate = setup.clone();
            candidate.remove(i);
            if let Some(db) = self.rebuild(client, &candidate) {
                if sandboxed(client, &db, check, node).is_some_and(|d| d.kind == kind) {
                    setup = candidate;
                }
            }
        }
        setup
    }
}

/// The error messages of a statement on both sides (for the report).
fn messages(client: &mut pg::Client, db: &Database, sql: &str) -> String {
    let first = sql.split(";\n").next().unwrap_or(sql);
    let mut copy = db.clone();
    let ours = copy.execute(first).err().map(|e| e.to_string());
    client.query("BEGIN").expect("BEGIN");
    let theirs = client.query(first).err().map(|(code, message)| format!("{code}: {message}"));
    client.query("ROLLBACK").expect("ROLLBACK");
    match (ours, theirs) {
        (None, None) => String::new(),
        (ours, theirs) => format!("-- pistou error:     {ours:?}\n-- postgresql error: {theirs:?}\n"),
    }
}

/// Replaces subtrees by simpler ones while a mismatch of the same kind remains (greedy,
/// smallest first).
fn shrink_node(client: &mut pg::Client, db: &Database, check: &Check, kind: &str, node: &Node) -> Node {
    let mut current = node.clone();
    let mut attempts = 0;
    'outer: loop {
        let mut paths = Vec::new();
        current.paths(&mut Vec::new(), &mut paths);
        for path in paths {
            let mut candidates = current.at(&path).simplifications();
            candidates.sort_by_key(Node::size);
            for candidate in candidates {
                attempts += 1;
                if attempts > SHRINK_BUDGET {
                    return current;
                }
                let trial = current.replaced(&path, candidate);
                if sandboxed(client, db, check, &trial).is_some_and(|d| d.kind == kind) {
                    current = trial;
                    continue 'outer;
                }
            }
        }
        return current;
    }
}

/// Runs one seed: schema, rows, then `statements` statements. Returns the report of the
/// first mismatch (the seed stops there: the two databases may have diverged).
fn run_seed(client: &mut pg::Client, seed: u64, statements: usize, stats: &mut Stats) -> Option<String> {
    let mut schema_rng = StdRng::seed_from_u64(seed);
    let tables = random_schema(&mut schema_rng);
    let mut run = Run { seed, tables: &tables, setup: Vec::new() };
    let mut db = run.rebuild(client, &[]).expect("empty tables");
    let mut gen = Gen { rng: schema_rng, tables: &tables, aliases: 0, having: None, in_aggregate: false };

    // Rows one INSERT each, so that shrinking can drop them one by one.
    for table in &tables {
        for _ in 0..gen.rng.gen_range(0..=10) {
            let sql = insert_rows(&mut gen.rng, table, 1);
            let check = Check::Differential { order: Order::Sorted, written: None };
            let node = Node::leaf(Cat::Other, sql.clone());
            let (v, ..) = run_both(client, &mut db, &sql, Order::Sorted);
            stats.count(&v);
            match v {
                Verdict::BothOk => run.setup.push(sql),
                Verdict::Mismatch => return Some(run.report(client, &check, &node)),
                _ => {}
            }
        }
    }

    for _ in 0..statements {
        gen.aliases = 0;
        let (check, node) = match gen.rng.gen_range(0..100) {
            0..=64 => {
                let (node, order) = gen.query();
                (Check::Differential { order, written: None }, node)
            }
            65..=79 => {
                let (node, distinct) = gen.tlp();
                (Check::Tlp { distinct }, node)
            }
            _ => {
                let (node, table) = gen.write();
                (Check::Differential { order: Order::Sorted, written: Some(table) }, node)
            }
        };
        let before = stats.both_ok;
        let write = matches!(check, Check::Differential { written: Some(_), .. });
        if write {
            client.query("BEGIN").expect("BEGIN");
        }
        let difference = perform(client, &mut db, &check, &node, Some(stats));
        if write {
            client.query("COMMIT").expect("COMMIT");
        }
        if difference.is_some() {
            return Some(run.report(client, &check, &node));
        }
        if write && stats.both_ok > before {
            run.setup.push(node.render());
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

/// A PostgreSQL database of the run's own (C collation, so text orders byte by byte as in
/// Pistou), dropped when the run ends, even by a panic.
struct Scratch {
    client: Option<pg::Client>,
    name: String,
}

impl Scratch {
    fn create() -> Scratch {
        let name = format!("rd_{}", std::process::id());
        let mut admin = common::connect("test");
        let _ = admin.query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        admin
            .query(&format!("CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e:?}"));
        Scratch { client: Some(common::connect(&name)), name }
    }

    fn client(&mut self) -> &mut pg::Client {
        self.client.as_mut().expect("client")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.client = None;
        let mut admin = common::connect("test");
        let _ = admin.query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

#[test]
fn random_statements_agree_with_postgresql() {
    let started = Instant::now();
    let mut scratch = Scratch::create();
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    let long_run = env_number("PISTOU_RANDOM_DIFF_STATEMENTS");
    let first = env_number("PISTOU_RANDOM_DIFF_SEED").unwrap_or(SEEDS.start);
    let mut seeds = 0;
    for seed in first.. {
        let done = match long_run {
            Some(total) => stats.statements as u64 >= total,
            None => seed >= first + (SEEDS.end - SEEDS.start),
        };
        if done {
            break;
        }
        seeds += 1;
        if let Some(report) = run_seed(scratch.client(), seed, STATEMENTS_PER_SEED, &mut stats) {
            // As found: a long run reports every seed's mismatch before its end.
            eprintln!("{report}\n");
            failures.push(seed);
        }
    }
    let both_ok = stats.both_ok as f64 / stats.statements.max(1) as f64;
    println!(
        "{seeds} seeds from {first}, {} statements in {:?}: {} both ok ({:.1}%), {} both error, {} unsupported (0A000), \
         {} an evaluation-dependent error on one side only, {} mismatches; TLP: {} checks agree, {} skipped (an error), {} differ",
        stats.statements,
        started.elapsed(),
        stats.both_ok,
        both_ok * 100.0,
        stats.both_error,
        stats.unsupported,
        stats.one_sided_errors,
        stats.mismatches,
        stats.tlp_checks,
        stats.tlp_skipped,
        stats.tlp_mismatches,
    );
    assert!(failures.is_empty(), "seeds {failures:?} found a mismatch (reports above, each shrunk to a reproducer)");
    assert!(
        both_ok >= MIN_BOTH_OK,
        "only {:.1}% of the statements ran on both sides without error (threshold {:.0}%): the generator drifted \
         to SQL that fails",
        both_ok * 100.0,
        MIN_BOTH_OK * 100.0
    );
}
