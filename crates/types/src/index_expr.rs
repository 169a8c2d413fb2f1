//! Index expressions (`CREATE INDEX i ON t (lower(email))`): the one evaluator that computes
//! an expression part of an index key from a row, used by every place that computes an
//! index key (the engine's unique checks and lookups, `MemStore`, the replicas' row store,
//! index builds over existing rows, replica validation of written rows), so that they all
//! compute the same bytes. An expression is stored in the postfix form of wire predicates
//! (`crate::predicate_wire::Node`) over the table's row, and calls only the pure functions
//! of `crate::scalar`, the casts and the arithmetic the engine uses (docs/sql.md,
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
use crate::types::{arith, cast_with, negate, SqlType, TypeLimits, Value};
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
    /// calling only functions this evaluator has. Whether PostgreSQL would call the
    /// expression IMMUTABLE is the binder's check (it knows the operand types); this one
    /// guarantees that every replica can compute it, deterministically and boundedly.
    pub fn check(&self, table: &TableSchema) -> Result<()> {
        if self.nodes.is_empty() || self.nodes.len() > MAX_INDEX_EXPRESSION_NODES {
            return err(
                SqlState::ProgramLimitExceeded,
                format!("an index expression has 1 to {MAX_INDEX_EXPRESSION_NODES} nodes"),
            );
        }
        let mut depth = 0usize;
        for node in &self.nodes {
            let (pops, _) = arity(node)?;
            check_node(node, table)?;
            depth = depth
                .checked_sub(pops)
                .ok_or_else(|| SqlError::new(SqlState::InvalidTableDefinition, "malformed index expression"))?
                + 1;
            if depth > MAX_INDEX_EXPRESSION_DEPTH {
                return err(
                    SqlState::ProgramLimitExceeded,
                    format!("index expression nested deeper than {MAX_INDEX_EXPRESSION_DEPTH}"),
                );
            }
        }
        if depth != 1 {
            return err(SqlState::InvalidTableDefinition, "malformed index expression");
        }
        Ok(())
    }

    /// The expression's value for `row` (a full row of the table). Fails as the engine's
    /// evaluation of the same expression does (e.g. 22012 division by zero), or with 54000
    /// when a value exceeds [`MAX_INDEX_VALUE_BYTES`].
    pub fn eval(&self, row: &[Value]) -> Result<Value> {
        let mut stack: Vec<Value> = Vec::with_capacity(MAX_INDEX_EXPRESSION_DEPTH);
        for node in &self.nodes {
            let (pops, _) = arity(node)?;
            let at = stack.len().checked_sub(pops).ok_or_else(malformed)?;
            let args = stack.split_off(at);
            let value = apply(node, args, row)?;
            check_size(&value)?;
            stack.push(value);
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(v), true) => Ok(v),
            _ => Err(malformed()),
        }
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

/// Operands a node pops (and 1 pushed, always).
fn arity(node: &Node) -> Result<(usize, usize)> {
    let pops = match node {
        Node::Const(_) | Node::Column(_) => 0,
        Node::Neg | Node::Cast(_) | Node::CastLimited(..) => 1,
        Node::Arith(_) | Node::Concat => 2,
        Node::Call { args, .. } => usize::try_from(*args).map_err(|_| malformed())?,
        other => return unsupported_node(other),
    };
    Ok((pops, 1))
}

fn unsupported_node(node: &Node) -> Result<(usize, usize)> {
    let what = match node {
        Node::Not | Node::And | Node::Or | Node::Cmp(_) | Node::IsNull { .. } | Node::IsBool { .. } => {
            "boolean operators"
        }
        Node::IsDistinct { .. } | Node::InList { .. } => "boolean operators",
        Node::Like { .. } | Node::LikeEscape { .. } => "LIKE",
        Node::Case { .. } => "CASE",
        _ => "this expression",
    };
    err(SqlState::FeatureNotSupported, format!("an index expression with {what} is not supported"))
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

/// Whether this evaluator computes `func`: the pure functions of `crate::scalar`, except
/// those that need the argument types the nodes do not carry.
pub fn evaluable_function(func: Func) -> Result<()> {
    if is_mutable(func) {
        return err(SqlState::InvalidObjectDefinition, "functions in index expression must be marked IMMUTABLE");
    }
    match func {
        Func::RegexMatch
        | Func::RegexIMatch
        | Func::DateTrunc
        | Func::Extract
        | Func::DatePart
        | Func::Age
        | Func::Jsonb(JsonbFn::ObjectPair) => {
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

fn apply(node: &Node, args: Vec<Value>, row: &[Value]) -> Result<Value> {
    let [a, b] = match node {
        Node::Const(v) => return Ok(v.clone()),
        Node::Column(c) => {
            let c = usize::try_from(*c).map_err(|_| malformed())?;
            return row.get(c).cloned().ok_or_else(malformed);
        }
        Node::Call { func, .. } => return call(*func, &args),
        Node::Neg | Node::Cast(_) | Node::CastLimited(..) => {
            let [v] = <[Value; 1]>::try_from(args).map_err(|_| malformed())?;
            return match node {
                Node::Neg => negate(&v),
                Node::Cast(ty) => cast_with(&v, *ty, &TypeLimits::default()),
                Node::CastLimited(ty, limits) => cast_with(&v, *ty, limits),
                _ => Err(malformed()),
            };
        }
        _ => <[Value; 2]>::try_from(args).map_err(|_| malformed())?,
    };
    match node {
        Node::Arith(op) => arith(*op, &a, &b),
        Node::Concat => Ok(crate::scalar::concat(&a, &b)),
        _ => Err(malformed()),
    }
}

/// A function call, refusing up front one whose result would exceed the size bound
/// (`replace` can grow its input quadratically).
fn call(func: Func, args: &[Value]) -> Result<Value> {
    evaluable_function(func)?;
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
