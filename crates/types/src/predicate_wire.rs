//! The network form of a read predicate. Predicates travel inside transactions (Pesto's
//! PredSet_T) and range-read replies, so they come from untrusted peers. A nested `Expr` tree
//! decoded by serde recurses once per level, and a hostile frame could nest millions of
//! levels and overflow the stack; so on the wire a predicate is a flat postfix sequence of
//! nodes, rebuilt with an explicit stack and a depth cap.
//!
//! The engine turns predicates into this form and back (`pistou_sql::predicate_wire`).

use crate::func::{CmpOp, Func};
use crate::types::{ArithOp, SqlType, TypeLimits, Value};
use serde::{Deserialize, Serialize};

/// Deepest predicate accepted from the network (deeper ones are rejected, not truncated).
pub const MAX_PREDICATE_DEPTH: usize = 256;

/// One postfix node: operands come first, then the operator with its arity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    Const(Value),
    Column(u32),
    Not,
    Neg,
    And,
    Or,
    Cmp(CmpOp),
    Arith(ArithOp),
    Concat,
    IsNull {
        negated: bool,
    },
    IsBool {
        value: bool,
        negated: bool,
    },
    IsDistinct {
        negated: bool,
    },
    /// Pops the tested expression and `len` list items.
    InList {
        len: u32,
        negated: bool,
    },
    Like {
        negated: bool,
        case_insensitive: bool,
    },
    /// Pops [operand], `whens` (condition, result) pairs, [otherwise].
    Case {
        operand: bool,
        whens: u32,
        otherwise: bool,
    },
    Cast(SqlType),
    Call {
        func: Func,
        args: u32,
    },
    // Appended variants (older peers never send them).
    /// LIKE with an ESCAPE operand: pops expression, pattern, escape.
    LikeEscape {
        negated: bool,
        case_insensitive: bool,
    },
    /// CAST with a length or precision modifier.
    CastLimited(SqlType, TypeLimits),
}

/// A predicate over one table's columns, in postfix form.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WirePredicate {
    pub table: String,
    /// Canonical postcard bytes of `Vec<Node>`: kept as bytes so that the predicate is
    /// ordered, hashed and compared without decoding it.
    pub nodes: Vec<u8>,
}
