//! Index expressions (`CREATE INDEX i ON t (lower(email))`): the one evaluator that computes
//! an expression part of an index key from a row, used by every place that computes an
//! index key (the engine's unique checks and lookups, `MemStore`, the replicas' row store,
//! index builds over existing rows, replica validation of written rows), so that they all
//! compute the same bytes. An expression is stored in the postfix form of wire predicates
//! (`crate::predicate_wire::Node`) over the table's row, and calls only the implementations
//! the engine's own evaluation calls: the pure functions of `crate::scalar`, the pattern
//! matching of `crate::pattern`, the casts, comparisons and arithmetic (docs/sql.md,
//! "Expression indexes").
//!
//! The catalog takes a schema change from a possibly Byzantine client, so
//! [`IndexExpression::check`] bounds what an expression may be, and evaluation bounds what
//! it may compute ([`MAX_INDEX_VALUE_BYTES`]).

use crate::catalog::{Column, TableSchema};
use crate::error::{err, Result, SqlError, SqlState};
use crate::func::Func;
use crate::jsonb::JsonbFn;
use crate::predicate_wire::Node;
use crate::types::{arith, cast_with, negate, sql_cmp, SqlType, TypeLimits, Value};
use serde::{Deserialize, Serialize};

/// Most nodes in one index expression.
pub const MAX_INDEX_EXPRESSION_NODES: usize = 64;
/// Deepest operand stack while evaluating one index expression (its nesting depth).
pub const MAX_INDEX_EXPRESSION_DEPTH: usize = 16;
/// Largest text or bytea value an index expression may compute (every intermediate value
/// and the result): PostgreSQL's btree entry limit, which bounds what a hostile expression
/// (nested `replace`, `||`) can make a replica compute per row.
pub const MAX_INDEX_VALUE_BYTES: usize = 2704;

/// One expression part of an index: postfix nodes over the table's row, and the type of
/// its value (which lookups cast their keys to, and the catalog shows).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexExpression {
    pub nodes: Vec<Node>,
    pub ty: SqlType,
}

impl IndexExpression {
    /// Checks an expression a client's schema change carries: at most
    /// [`MAX_INDEX_EXPRESSION_NODES`] nodes of the supported forms, well formed (one value
    /// left), at most [`MAX_INDEX_EXPRESSION_DEPTH`] deep, over visible columns of `table`,
    /// calling only functions this evaluator has, none of PostgreSQL's date/time variants
    /// that are only STABLE where the operand's type shows (a column, constant or cast;
    /// evaluation refuses the others by the values' types). The binder's IMMUTABLE check
    /// knows every operand's type; this one guarantees that every replica can compute the
    /// expression, deterministically and boundedly.
    pub fn check(&self, table: &TableSchema) -> Result<()> {
        if self.nodes.is_empty() || self.nodes.len() > MAX_INDEX_EXPRESSION_NODES {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("an index expression has 1 to {MAX_INDEX_EXPRESSION_NODES} nodes"),
            );
        }
        let starts = subtrees(&self.nodes)?;
        for (at, node) in self.nodes.iter().enumerate() {
            check_node(node, table)?;
            if let Node::Call { func, args } = node {
                let operands = operands(&starts, at, usize::try_from(*args).map_err(|_| malformed())?)?;
                let type_of = |i: &usize| match self.nodes.get(*i) {
                    Some(Node::Column(c)) => usize::try_from(*c).ok().and_then(|c| table.columns.get(c)).map(|c| c.ty),
                    Some(Node::Const(v)) => v.sql_type(),
                    Some(Node::Cast(ty) | Node::CastLimited(ty, _)) => Some(*ty),
                    _ => None,
                };
                let types: Vec<Option<SqlType>> = operands.iter().map(type_of).collect();
                if stable_temporal_call(*func, &types) {
                    return not_immutable();
                }
            }
        }
        Ok(())
    }

    /// The expression's value for `row` (a full row of the table). Evaluates as the engine
    /// evaluates the same expression, including what it leaves unevaluated (AND and OR
    /// after a deciding operand, CASE branches not taken, COALESCE after a non-null
    /// argument), so it fails exactly where the engine does (e.g. 22012 division by zero);
    /// or with 54000 when a value exceeds [`MAX_INDEX_VALUE_BYTES`].
    pub fn eval(&self, row: &[Value]) -> Result<Value> {
        if self.nodes.len() > MAX_INDEX_EXPRESSION_NODES {
            return Err(malformed());
        }
        let starts = subtrees(&self.nodes)?;
        let root = self.nodes.len().checked_sub(1).ok_or_else(malformed)?;
        // Recursion follows the nesting, at most MAX_INDEX_EXPRESSION_NODES deep.
        Eval { nodes: &self.nodes, starts, row }.value(root)
    }

    /// Positions of the table columns the expression reads.
    pub fn columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().filter_map(|n| match n {
            Node::Column(c) => usize::try_from(*c).ok(),
            _ => None,
        })
    }
}

fn malformed() -> SqlError {
    SqlError::new(SqlState::InternalError, "malformed index expression")
}

fn not_immutable<T>() -> Result<T> {
    err(SqlState::InvalidObjectDefinition, "functions in index expression must be marked IMMUTABLE")
}

/// Operands a node pops (it pushes one value).
fn arity(node: &Node) -> Result<usize> {
    let count = |n: u32| usize::try_from(n).map_err(|_| malformed());
    Ok(match node {
        Node::Const(_) | Node::Column(_) => 0,
        Node::Neg | Node::Cast(_) | Node::CastLimited(..) | Node::Not | Node::IsNull { .. } | Node::IsBool { .. } => 1,
        Node::Arith(_)
        | Node::Concat
        | Node::And
        | Node::Or
        | Node::Cmp(_)
        | Node::IsDistinct { .. }
        | Node::Like { .. } => 2,
        Node::LikeEscape { .. } => 3,
        Node::InList { len, .. } => count(*len)?.checked_add(1).ok_or_else(malformed)?,
        Node::Case { operand, whens, otherwise } => count(*whens)?
            .checked_mul(2)
            .and_then(|n| n.checked_add(usize::from(*operand) + usize::from(*otherwise)))
            .ok_or_else(malformed)?,
        Node::Call { args, .. } => count(*args)?,
    })
}

/// For each node, the position of the first node of the subtree it roots (postfix: a
/// node's operands are the subtrees just before it). Fails unless the nodes form one
/// expression whose operand stack stays within [`MAX_INDEX_EXPRESSION_DEPTH`].
fn subtrees(nodes: &[Node]) -> Result<Vec<usize>> {
    let malformed_expression = || SqlError::new(SqlState::InvalidTableDefinition, "malformed index expression");
    let mut starts = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = Vec::with_capacity(MAX_INDEX_EXPRESSION_DEPTH);
    for (at, node) in nodes.iter().enumerate() {
        let base = stack.len().checked_sub(arity(node)?).ok_or_else(malformed_expression)?;
        let start = stack.get(base).copied().unwrap_or(at);
        stack.truncate(base);
        stack.push(start);
        starts.push(start);
        if stack.len() > MAX_INDEX_EXPRESSION_DEPTH {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("index expression nested deeper than {MAX_INDEX_EXPRESSION_DEPTH}"),
            );
        }
    }
    if stack.len() != 1 {
        return Err(malformed_expression());
    }
    Ok(starts)
}

/// The roots of the `n` operands of the node at `at`, in order.
fn operands(starts: &[usize], at: usize, n: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(n.min(starts.len()));
    let mut end = at;
    for _ in 0..n {
        let root = end.checked_sub(1).ok_or_else(malformed)?;
        out.push(root);
        end = *starts.get(root).ok_or_else(malformed)?;
    }
    out.reverse();
    Ok(out)
}

fn check_node(node: &Node, table: &TableSchema) -> Result<()> {
    match node {
        Node::Column(c) => {
            let visible =
                usize::try_from(*c).ok().and_then(|c| table.columns.get(c)).is_some_and(|c| !Column::is_hidden(c));
            if !visible {
                return err(SqlState::UndefinedColumn, format!("index expression names no column at position {c}"));
            }
        }
        Node::Const(v) => check_size(v)?,
        Node::Call { func, args } => {
            evaluable_function(*func)?;
            let (min, max) = func.arity();
            let n = usize::try_from(*args).map_err(|_| malformed())?;
            if n < min || n > max {
                return err(
                    SqlState::UndefinedFunction,
                    format!("function {} does not take {n} arguments", func.name()),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

/// Functions whose value depends on more than their arguments (the transaction's time,
/// sequences, randomness): PostgreSQL's VOLATILE and STABLE functions that Pistou has.
pub fn is_mutable(func: Func) -> bool {
    matches!(
        func,
        Func::Now
            | Func::CurrentDate
            | Func::LocalTimestamp
            | Func::NextVal
            | Func::CurrVal
            | Func::SetVal
            | Func::LastVal
            | Func::GenRandomUuid
            // STABLE in PostgreSQL (their output depends on settings or on types' output
            // functions), hence refused there too.
            | Func::Concat
            | Func::ArrayToString
            | Func::ToChar
            | Func::JsonBuildObject
            | Func::Jsonb(JsonbFn::BuildObject | JsonbFn::BuildArray | JsonbFn::ToJsonb)
    )
}

/// Whether PostgreSQL resolves date_trunc, EXTRACT, date_part or age over operands of these
/// types (`operands`: the arguments' types, the value last, None where unknown) to
/// a variant that is only STABLE: over timestamptz (it reads the session's time zone),
/// over a date that PostgreSQL casts to timestamptz (date_trunc; age unless the other
/// operand is a timestamp), mixing timestamptz and timestamp in age, or age(x), which
/// reads the current date. `age(timestamptz, timestamptz)` is IMMUTABLE.
pub fn stable_temporal_call(func: Func, operands: &[Option<SqlType>]) -> bool {
    use SqlType::{Date, TimestampTz};
    let value = operands.last().copied().flatten();
    match (func, operands) {
        (Func::DateTrunc, _) => matches!(value, Some(TimestampTz | Date)),
        (Func::Extract | Func::DatePart, _) => value == Some(TimestampTz),
        (Func::Age, [_]) => true,
        (Func::Age, [a, b]) => match (a, b) {
            (Some(TimestampTz), Some(TimestampTz)) => false,
            (Some(TimestampTz), Some(_)) | (Some(_), Some(TimestampTz)) => true,
            _ => *a == Some(Date) && *b == Some(Date),
        },
        _ => false,
    }
}

/// Whether this evaluator computes `func`: the pure functions of `crate::scalar`, except
/// those that need the argument types the nodes do not carry.
pub fn evaluable_function(func: Func) -> Result<()> {
    if is_mutable(func) {
        return not_immutable();
    }
    match func {
        Func::Jsonb(JsonbFn::ObjectPair) => {
            err(SqlState::FeatureNotSupported, format!("{} in an index expression is not supported", func.name()))
        }
        _ => Ok(()),
    }
}

fn check_size(v: &Value) -> Result<()> {
    let len = match v {
        Value::Text(s) => s.len(),
        Value::Bytes(b) => b.len(),
        _ => 0,
    };
    if len > MAX_INDEX_VALUE_BYTES {
        return err(
            SqlState::ProgramLimitExceeded,
            format!("index expression value of {len} bytes exceeds the maximum {MAX_INDEX_VALUE_BYTES}"),
        );
    }
    Ok(())
}

fn bool_or_null(b: Option<bool>) -> Value {
    b.map_or(Value::Null, Value::Bool)
}

/// One evaluation of an expression over a row.
struct Eval<'a> {
    nodes: &'a [Node],
    /// `subtrees` of the nodes.
    starts: Vec<usize>,
    row: &'a [Value],
}

impl Eval<'_> {
    /// The value of the subtree rooted at `at`, each operand computed only when the
    /// engine's evaluation computes it.
    fn value(&self, at: usize) -> Result<Value> {
        let node = self.nodes.get(at).ok_or_else(malformed)?;
        let ops = operands(&self.starts, at, arity(node)?)?;
        let op = |k: usize| ops.get(k).copied().ok_or_else(malformed);
        let value = |k: usize| self.value(op(k)?);
        let truth = |k: usize| value(k)?.truth();
        let v = match node {
            Node::Const(v) => v.clone(),
            Node::Column(c) => {
                let c = usize::try_from(*c).map_err(|_| malformed())?;
                self.row.get(c).cloned().ok_or_else(malformed)?
            }
            Node::Not => bool_or_null(truth(0)?.map(|b| !b)),
            Node::Neg => negate(&value(0)?)?,
            Node::Cast(ty) => cast_with(&value(0)?, *ty, &TypeLimits::default())?,
            Node::CastLimited(ty, limits) => cast_with(&value(0)?, *ty, limits)?,
            Node::And => match truth(0)? {
                Some(false) => Value::Bool(false),
                l => bool_or_null(match (l, truth(1)?) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }),
            },
            Node::Or => match truth(0)? {
                Some(true) => Value::Bool(true),
                l => bool_or_null(match (l, truth(1)?) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }),
            },
            Node::Cmp(cmp) => bool_or_null(sql_cmp(&value(0)?, &value(1)?)?.map(|o| cmp.holds(o))),
            Node::Arith(a) => arith(*a, &value(0)?, &value(1)?)?,
            Node::Concat => crate::scalar::concat(&value(0)?, &value(1)?),
            Node::IsNull { negated } => Value::Bool(value(0)?.is_null() != *negated),
            Node::IsBool { value: b, negated } => Value::Bool((truth(0)? == Some(*b)) != *negated),
            Node::IsDistinct { negated } => crate::scalar::is_distinct(&value(0)?, &value(1)?, *negated)?,
            Node::InList { negated, .. } => {
                let v = value(0)?;
                crate::scalar::in_list(&v, ops.iter().skip(1).map(|&i| self.value(i)), *negated)?
            }
            Node::Like { negated, case_insensitive } => {
                crate::pattern::like(&value(0)?, &value(1)?, None, *negated, *case_insensitive)?
            }
            Node::LikeEscape { negated, case_insensitive } => {
                let escape = value(2)?;
                crate::pattern::like(&value(0)?, &value(1)?, Some(&escape), *negated, *case_insensitive)?
            }
            Node::Case { operand, whens, otherwise } => {
                let subject = if *operand { Some(value(0)?) } else { None };
                let first = usize::from(*operand);
                let whens = usize::try_from(*whens).map_err(|_| malformed())?;
                let mut taken = None;
                for w in 0..whens {
                    let when = first + 2 * w;
                    if crate::scalar::case_hit(subject.as_ref(), &value(when)?)? {
                        taken = Some(when + 1);
                        break;
                    }
                }
                match (taken, otherwise) {
                    (Some(then), _) => value(then)?,
                    (None, true) => value(first + 2 * whens)?,
                    (None, false) => Value::Null,
                }
            }
            Node::Call { func: Func::Coalesce, .. } => {
                let mut found = Value::Null;
                for &i in &ops {
                    let v = self.value(i)?;
                    if !v.is_null() {
                        found = v;
                        break;
                    }
                }
                found
            }
            Node::Call { func, .. } => {
                let args = ops.iter().map(|&i| self.value(i)).collect::<Result<Vec<_>>>()?;
                call(*func, &args)?
            }
        };
        check_size(&v)?;
        Ok(v)
    }
}

/// A function call, refusing up front one whose result would exceed the size bound
/// (`replace` can grow its input quadratically), and PostgreSQL's STABLE variants of the
/// date/time functions by the types of the values (a client's change may hide an
/// operand's type from `IndexExpression::check`).
fn call(func: Func, args: &[Value]) -> Result<Value> {
    evaluable_function(func)?;
    let values: &[Value] = match func {
        Func::Age => args,
        _ => args.get(1..).unwrap_or_default(),
    };
    if stable_temporal_call(func, &values.iter().map(Value::sql_type).collect::<Vec<_>>()) {
        return not_immutable();
    }
    if let (Func::Replace, [Value::Text(s), Value::Text(from), Value::Text(to)]) = (func, args) {
        let grows = to.len().saturating_sub(from.len());
        if grows > 0 && !from.is_empty() {
            let len = s.matches(from.as_str()).count().saturating_mul(grows).saturating_add(s.len());
            if len > MAX_INDEX_VALUE_BYTES {
                return err(
                    SqlState::ProgramLimitExceeded,
                    format!("index expression value of {len} bytes exceeds the maximum {MAX_INDEX_VALUE_BYTES}"),
                );
            }
        }
    }
    crate::scalar::call(func, args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::func::CmpOp;
    use crate::types::ArithOp;

    fn eval(nodes: Vec<Node>, row: &[Value]) -> Result<Value> {
        IndexExpression { nodes, ty: SqlType::Text }.eval(row)
    }

    fn text(s: &str) -> Node {
        Node::Const(Value::Text(s.into()))
    }

    /// `1 / c0`, which fails for a row whose c0 is 0.
    fn one_over_c0() -> [Node; 3] {
        [Node::Const(Value::Int(1)), Node::Column(0), Node::Arith(ArithOp::Div)]
    }

    #[test]
    fn operands_the_engine_leaves_unevaluated_are_not_evaluated() {
        let zero = [Value::Int(0)];
        // CASE WHEN c0 = 0 THEN 0 ELSE 1 / c0 END
        let mut case =
            vec![Node::Column(0), Node::Const(Value::Int(0)), Node::Cmp(CmpOp::Eq), Node::Const(Value::Int(0))];
        case.extend(one_over_c0());
        case.push(Node::Case { operand: false, whens: 1, otherwise: true });
        assert_eq!(eval(case.clone(), &zero), Ok(Value::Int(0)));
        assert_eq!(eval(case, &[Value::Int(1)]), Ok(Value::Int(1)));
        // false AND 1 / c0 = 1; true OR …; COALESCE(1, 1 / c0)
        for (first, op, expected) in [(false, Node::And, false), (true, Node::Or, true)] {
            let mut nodes = vec![Node::Const(Value::Bool(first))];
            nodes.extend(one_over_c0());
            nodes.extend([Node::Const(Value::Int(1)), Node::Cmp(CmpOp::Eq), op]);
            assert_eq!(eval(nodes, &zero), Ok(Value::Bool(expected)));
        }
        let mut coalesce = vec![Node::Const(Value::Int(1))];
        coalesce.extend(one_over_c0());
        coalesce.push(Node::Call { func: Func::Coalesce, args: 2 });
        assert_eq!(eval(coalesce, &zero), Ok(Value::Int(1)));
        // A deciding operand that comes second still needs the first: NULL AND 1 / c0 = 1 fails.
        let mut nodes = vec![Node::Const(Value::Null)];
        nodes.extend(one_over_c0());
        nodes.extend([Node::Const(Value::Int(1)), Node::Cmp(CmpOp::Eq), Node::And]);
        assert_eq!(eval(nodes, &zero).map_err(|e| e.state), Err(SqlState::DivisionByZero));
    }

    #[test]
    fn boolean_forms_follow_three_valued_logic() {
        let row = [Value::Int(1), Value::Null, Value::Text("Apple".into())];
        let cases: Vec<(Vec<Node>, Value)> = vec![
            (vec![Node::Column(0), Node::Const(Value::Int(0)), Node::Cmp(CmpOp::Gt)], Value::Bool(true)),
            (vec![Node::Column(1), Node::Const(Value::Int(0)), Node::Cmp(CmpOp::Gt)], Value::Null),
            (vec![Node::Column(1), Node::Not], Value::Null),
            (vec![Node::Column(1), Node::IsNull { negated: false }], Value::Bool(true)),
            (vec![Node::Column(1), Node::IsBool { value: true, negated: true }], Value::Bool(true)),
            (vec![Node::Column(0), Node::Column(1), Node::IsDistinct { negated: false }], Value::Bool(true)),
            (
                vec![
                    Node::Column(0),
                    Node::Const(Value::Int(2)),
                    Node::Column(1),
                    Node::InList { len: 2, negated: false },
                ],
                Value::Null,
            ),
            (
                vec![
                    Node::Column(0),
                    Node::Const(Value::Int(1)),
                    Node::Column(1),
                    Node::InList { len: 2, negated: true },
                ],
                Value::Bool(false),
            ),
            (
                vec![Node::Column(2), text("a%"), Node::Like { negated: false, case_insensitive: true }],
                Value::Bool(true),
            ),
            (
                vec![Node::Column(2), text("a%"), Node::Like { negated: false, case_insensitive: false }],
                Value::Bool(false),
            ),
            (
                vec![
                    Node::Column(2),
                    text("Appl!e"),
                    text("!"),
                    Node::LikeEscape { negated: true, case_insensitive: false },
                ],
                Value::Bool(false),
            ),
            (vec![Node::Column(2), text("^ap"), Node::Call { func: Func::RegexIMatch, args: 2 }], Value::Bool(true)),
            (vec![Node::Column(2), text("^ap"), Node::Call { func: Func::RegexMatch, args: 2 }], Value::Bool(false)),
            // CASE c0 WHEN 2 THEN 'two' WHEN 1 THEN 'one' END
            (
                vec![
                    Node::Column(0),
                    Node::Const(Value::Int(2)),
                    text("two"),
                    Node::Const(Value::Int(1)),
                    text("one"),
                    Node::Case { operand: true, whens: 2, otherwise: false },
                ],
                Value::Text("one".into()),
            ),
            (vec![Node::Column(1), text("x"), Node::Case { operand: false, whens: 1, otherwise: false }], Value::Null),
        ];
        for (nodes, expected) in cases {
            assert_eq!(eval(nodes.clone(), &row), Ok(expected), "{nodes:?}");
        }
        let bad_regex = vec![Node::Column(2), text("("), Node::Call { func: Func::RegexMatch, args: 2 }];
        assert_eq!(eval(bad_regex, &row).map_err(|e| e.state), Err(SqlState::InvalidRegularExpression));
    }

    #[test]
    fn date_time_functions_refuse_their_stable_variants_by_value() {
        let trunc = vec![text("day"), Node::Column(0), Node::Call { func: Func::DateTrunc, args: 2 }];
        let hour = 3_600_000_000;
        assert_eq!(eval(trunc.clone(), &[Value::Timestamp(25 * hour)]), Ok(Value::Timestamp(24 * hour)));
        // A client's change may claim any column: the value's type decides.
        for v in [Value::TimestampTz(hour), Value::Date(1)] {
            assert_eq!(eval(trunc.clone(), &[v]).map_err(|e| e.state), Err(SqlState::InvalidObjectDefinition));
        }
        let extract = vec![text("year"), Node::Column(0), Node::Call { func: Func::Extract, args: 2 }];
        assert!(eval(extract.clone(), &[Value::Date(0)]).is_ok());
        assert_eq!(
            eval(extract, &[Value::TimestampTz(0)]).map_err(|e| e.state),
            Err(SqlState::InvalidObjectDefinition)
        );
        let age = vec![Node::Column(0), Node::Column(1), Node::Call { func: Func::Age, args: 2 }];
        assert!(eval(age.clone(), &[Value::TimestampTz(0), Value::TimestampTz(hour)]).is_ok());
        assert!(eval(age.clone(), &[Value::Timestamp(0), Value::Date(1)]).is_ok());
        for row in [[Value::Date(0), Value::Date(1)], [Value::TimestampTz(0), Value::Timestamp(0)]] {
            assert_eq!(eval(age.clone(), &row).map_err(|e| e.state), Err(SqlState::InvalidObjectDefinition));
        }
    }

    #[test]
    fn the_stable_variants_are_postgresqls() {
        use SqlType::{Date, Interval, Text, Timestamp, TimestampTz};
        let stable =
            |func, types: &[SqlType]| stable_temporal_call(func, &types.iter().copied().map(Some).collect::<Vec<_>>());
        assert!(stable(Func::DateTrunc, &[Text, TimestampTz]) && stable(Func::DateTrunc, &[Text, Date]));
        assert!(!stable(Func::DateTrunc, &[Text, Timestamp]) && !stable(Func::DateTrunc, &[Text, Interval]));
        assert!(stable(Func::Extract, &[Text, TimestampTz]) && !stable(Func::Extract, &[Text, Date]));
        assert!(stable(Func::DatePart, &[Text, TimestampTz]) && !stable(Func::DatePart, &[Text, Date]));
        assert!(stable(Func::Age, &[Timestamp]) && stable(Func::Age, &[Date, Date]));
        assert!(stable(Func::Age, &[TimestampTz, Timestamp]) && stable(Func::Age, &[Date, TimestampTz]));
        assert!(!stable(Func::Age, &[TimestampTz, TimestampTz]) && !stable(Func::Age, &[Timestamp, Date]));
        assert!(!stable(Func::Lower, &[TimestampTz]));
    }
}
