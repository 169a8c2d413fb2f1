//! Predicates to and from their network form (`pistou_types::predicate_wire`: a flat
//! postfix sequence of nodes, rebuilt here with an explicit stack and a depth cap, because a
//! predicate comes from untrusted peers and a nested tree decoded recursively could overflow
//! the stack).

use crate::error::{err, Result, SqlState};
use crate::expr::{Expr, Func, Predicate};
use crate::types::{TypeLimits, Value};
pub use pistou_types::predicate_wire::{Node, WirePredicate, MAX_PREDICATE_DEPTH};

impl Predicate {
    /// Encodes a closed predicate (columns and constants only). Fails on placeholders
    /// (parameters, subqueries, outer columns), which a reported predicate never contains.
    pub fn to_wire(&self) -> Result<WirePredicate> {
        let mut nodes = Vec::new();
        flatten(&self.expr, &mut nodes)?;
        let bytes = postcard::to_allocvec(&nodes)
            .map_err(|e| crate::error::SqlError::new(SqlState::InternalError, format!("predicate encoding: {e}")))?;
        Ok(WirePredicate { table: self.table.clone(), nodes: bytes })
    }

    /// Rebuilds the predicate, rejecting malformed or too deep input with 08P01
    /// (protocol violation). `columns` is the table's column count: columns beyond it are
    /// rejected too.
    pub fn from_wire(wire: &WirePredicate, columns: usize) -> Result<Predicate> {
        let nodes: Vec<Node> =
            postcard::from_bytes(&wire.nodes).map_err(|e| bad(&format!("undecodable predicate: {e}")))?;
        let expr = rebuild(nodes, columns)?;
        Ok(Predicate { table: wire.table.clone(), expr })
    }
}

/// The postfix nodes of a closed expression (an index expression's stored form).
pub(crate) fn expr_nodes(e: &Expr) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    flatten(e, &mut out)?;
    Ok(out)
}

/// The expression of postfix nodes over a row of `columns` columns.
pub(crate) fn nodes_expr(nodes: &[Node], columns: usize) -> Result<Expr> {
    rebuild(nodes.to_vec(), columns)
}

fn bad(msg: &str) -> crate::error::SqlError {
    crate::error::SqlError::new(SqlState::ProtocolViolation, msg.to_string())
}

fn flatten(e: &Expr, out: &mut Vec<Node>) -> Result<()> {
    let all = |items: &[&Expr], out: &mut Vec<Node>| items.iter().try_for_each(|x| flatten(x, out));
    let node = match e {
        Expr::Const(v) => Node::Const(v.clone()),
        Expr::Column(i) => Node::Column(u32::try_from(*i).map_err(|_| bad("column index too large"))?),
        Expr::Not(a) => {
            all(&[a], out)?;
            Node::Not
        }
        Expr::Neg(a) => {
            all(&[a], out)?;
            Node::Neg
        }
        Expr::And(a, b) => {
            all(&[a, b], out)?;
            Node::And
        }
        Expr::Or(a, b) => {
            all(&[a, b], out)?;
            Node::Or
        }
        Expr::Cmp(op, a, b) => {
            all(&[a, b], out)?;
            Node::Cmp(*op)
        }
        Expr::Arith(op, a, b) => {
            all(&[a, b], out)?;
            Node::Arith(*op)
        }
        Expr::Concat(a, b) => {
            all(&[a, b], out)?;
            Node::Concat
        }
        Expr::IsNull { expr, negated } => {
            all(&[expr], out)?;
            Node::IsNull { negated: *negated }
        }
        Expr::IsBool { expr, value, negated } => {
            all(&[expr], out)?;
            Node::IsBool { value: *value, negated: *negated }
        }
        Expr::IsDistinct { left, right, negated } => {
            all(&[left, right], out)?;
            Node::IsDistinct { negated: *negated }
        }
        Expr::InList { expr, list, negated } => {
            all(&[expr], out)?;
            list.iter().try_for_each(|x| flatten(x, out))?;
            Node::InList { len: count(list.len())?, negated: *negated }
        }
        Expr::Like { expr, pattern, escape: None, negated, case_insensitive } => {
            all(&[expr, pattern], out)?;
            Node::Like { negated: *negated, case_insensitive: *case_insensitive }
        }
        Expr::Like { expr, pattern, escape: Some(escape), negated, case_insensitive } => {
            all(&[expr, pattern, escape], out)?;
            Node::LikeEscape { negated: *negated, case_insensitive: *case_insensitive }
        }
        Expr::Case { operand, whens, otherwise } => {
            if let Some(o) = operand {
                flatten(o, out)?;
            }
            for (w, t) in whens {
                flatten(w, out)?;
                flatten(t, out)?;
            }
            if let Some(o) = otherwise {
                flatten(o, out)?;
            }
            Node::Case { operand: operand.is_some(), whens: count(whens.len())?, otherwise: otherwise.is_some() }
        }
        Expr::Cast { expr, ty, limits } => {
            all(&[expr], out)?;
            if *limits == TypeLimits::default() {
                Node::Cast(*ty)
            } else {
                Node::CastLimited(*ty, limits.clone())
            }
        }
        Expr::Call { func: Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal, .. } => {
            // A predicate is re-evaluated by replicas against other transactions' rows,
            // where no sequence values exist.
            return Err(crate::SqlError::unsupported("nextval, currval, setval or lastval in a WHERE clause"));
        }
        Expr::Call { func, args } => {
            args.iter().try_for_each(|x| flatten(x, out))?;
            Node::Call { func: *func, args: count(args.len())? }
        }
        Expr::Outer(_)
        | Expr::Enclosing { .. }
        | Expr::Param(_)
        | Expr::Subquery(_)
        | Expr::InSubquery { .. }
        | Expr::Exists { .. } => {
            return err(SqlState::InternalError, "a read predicate still contains a placeholder".to_string());
        }
    };
    out.push(node);
    Ok(())
}

fn count(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| bad("list too long"))
}

/// Postfix → tree with an explicit stack of (expression, depth).
fn rebuild(nodes: Vec<Node>, columns: usize) -> Result<Expr> {
    let mut stack: Vec<(Expr, usize)> = Vec::new();
    for node in nodes {
        let mut pop = |n: usize| -> Result<(Vec<Expr>, usize)> {
            if n > stack.len() {
                return Err(bad("predicate operator lacks operands"));
            }
            let items = stack.split_off(stack.len() - n);
            let depth = items.iter().map(|(_, d)| *d).max().unwrap_or(0) + 1;
            if depth > MAX_PREDICATE_DEPTH {
                return Err(bad("predicate nested too deeply"));
            }
            Ok((items.into_iter().map(|(e, _)| e).collect(), depth))
        };
        let (expr, depth) = match node {
            Node::Const(v) => (Expr::Const(v), 1),
            Node::Column(i) => {
                if i as usize >= columns {
                    return Err(bad("predicate refers to a column the table does not have"));
                }
                (Expr::Column(i as usize), 1)
            }
            Node::Not => unary(pop(1)?, |a| Expr::Not(Box::new(a))),
            Node::Neg => unary(pop(1)?, |a| Expr::Neg(Box::new(a))),
            Node::And => binary(pop(2)?, |a, b| Expr::And(Box::new(a), Box::new(b))),
            Node::Or => binary(pop(2)?, |a, b| Expr::Or(Box::new(a), Box::new(b))),
            Node::Cmp(op) => binary(pop(2)?, |a, b| Expr::Cmp(op, Box::new(a), Box::new(b))),
            Node::Arith(op) => binary(pop(2)?, |a, b| Expr::Arith(op, Box::new(a), Box::new(b))),
            Node::Concat => binary(pop(2)?, |a, b| Expr::Concat(Box::new(a), Box::new(b))),
            Node::IsNull { negated } => unary(pop(1)?, |a| Expr::IsNull { expr: Box::new(a), negated }),
            Node::IsBool { value, negated } => unary(pop(1)?, |a| Expr::IsBool { expr: Box::new(a), value, negated }),
            Node::IsDistinct { negated } => {
                binary(pop(2)?, |a, b| Expr::IsDistinct { left: Box::new(a), right: Box::new(b), negated })
            }
            Node::InList { len, negated } => {
                let (mut items, depth) = pop(len as usize + 1)?;
                let expr = Box::new(items.remove(0));
                (Expr::InList { expr, list: items, negated }, depth)
            }
            Node::Like { negated, case_insensitive } => binary(pop(2)?, |a, b| Expr::Like {
                expr: Box::new(a),
                pattern: Box::new(b),
                escape: None,
                negated,
                case_insensitive,
            }),
            Node::LikeEscape { negated, case_insensitive } => {
                let (items, depth) = pop(3)?;
                let [a, b, c]: [Expr; 3] = items.try_into().map_err(|_| bad("malformed LIKE"))?;
                (
                    Expr::Like {
                        expr: Box::new(a),
                        pattern: Box::new(b),
                        escape: Some(Box::new(c)),
                        negated,
                        case_insensitive,
                    },
                    depth,
                )
            }
            Node::Case { operand, whens, otherwise } => {
                let n = operand as usize + 2 * whens as usize + otherwise as usize;
                let (items, depth) = pop(n)?;
                let mut items = items.into_iter();
                let operand = if operand { items.next().map(Box::new) } else { None };
                let mut pairs = Vec::with_capacity(whens as usize);
                for _ in 0..whens {
                    match (items.next(), items.next()) {
                        (Some(w), Some(t)) => pairs.push((w, t)),
                        _ => return Err(bad("malformed CASE")),
                    }
                }
                let otherwise = items.next().map(Box::new);
                (Expr::Case { operand, whens: pairs, otherwise }, depth)
            }
            Node::Cast(ty) => unary(pop(1)?, |a| Expr::Cast { expr: Box::new(a), ty, limits: TypeLimits::default() }),
            Node::CastLimited(ty, limits) => unary(pop(1)?, |a| Expr::Cast { expr: Box::new(a), ty, limits }),
            Node::Call { func: Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal, .. } => {
                return Err(bad("a sequence function"))
            }
            Node::Call { func, args } => {
                let (args, depth) = pop(args as usize)?;
                (Expr::Call { func, args }, depth)
            }
        };
        stack.push((expr, depth));
    }
    match (stack.pop(), stack.is_empty()) {
        (Some((expr, _)), true) => Ok(expr),
        _ => Err(bad("predicate is not a single expression")),
    }
}

fn unary((mut items, depth): (Vec<Expr>, usize), f: impl FnOnce(Expr) -> Expr) -> (Expr, usize) {
    // `pop(1)` returned exactly one item.
    let a = items.pop().unwrap_or(Expr::Const(Value::Null));
    (f(a), depth)
}

fn binary((items, depth): (Vec<Expr>, usize), f: impl FnOnce(Expr, Expr) -> Expr) -> (Expr, usize) {
    let mut it = items.into_iter();
    // `pop(2)` returned exactly two items.
    let (a, b) = (it.next().unwrap_or(Expr::Const(Value::Null)), it.next().unwrap_or(Expr::Const(Value::Null)));
    (f(a, b), depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::CmpOp;
    use crate::{Database, ExecContext, ReadAt, Timestamp, WriteSet};

    fn predicates_of(sql: &str) -> Vec<Predicate> {
        let mut db = Database::new();
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, s TEXT)").expect("create");
        db.execute("INSERT INTO t VALUES (1, 5, 'x'), (2, NULL, 'yy')").expect("insert");
        let empty = WriteSet::default();
        let ctx = ExecContext {
            storage: db.store(),
            at: ReadAt::latest_before(Timestamp::MAX),
            pending: &empty,
            sequences: &[],
            random_seed: [0; 32],
            lastval: None,
        };
        let exec = db.engine().run(db.catalog(), sql, &[], &ctx).expect("run");
        exec.reads.scans.into_iter().map(|s| s.predicate).collect()
    }

    #[test]
    fn round_trip_preserves_predicates() {
        let sqls = [
            "SELECT * FROM t WHERE a > 3 AND s LIKE 'x%' OR a IS NULL",
            "SELECT * FROM t WHERE a IN (1, 2, 3) AND NOT (s = 'q')",
            "SELECT * FROM t WHERE CASE WHEN a > 1 THEN s ELSE 'z' END = 'x' AND -a < 0",
            "SELECT * FROM t WHERE lower(s) || 'a' = 'xa' AND CAST(a AS TEXT) = '5'",
            "SELECT * FROM t WHERE a IS DISTINCT FROM 4 AND (a > 1) IS TRUE",
            "SELECT * FROM t WHERE s LIKE 'a!%' ESCAPE '!' AND CAST(s AS VARCHAR(2)) = 'x' AND CAST(a AS NUMERIC(4,1)) > 1.5",
            "SELECT * FROM t WHERE a = 1.5 OR a = CAST(2 AS SMALLINT)",
        ];
        for sql in sqls {
            for p in predicates_of(sql) {
                let wire = p.to_wire().expect("encode");
                assert_eq!(Predicate::from_wire(&wire, 3).expect("decode"), p, "{sql}");
            }
        }
    }

    #[test]
    fn hostile_input_is_rejected_without_recursion() {
        let enc = |nodes: Vec<Node>| WirePredicate {
            table: "t".into(),
            nodes: postcard::to_allocvec(&nodes).expect("encode"),
        };
        // A million nested NOTs: rejected by the depth cap, and rebuilt without recursion.
        let mut deep = vec![Node::Column(0)];
        deep.extend(std::iter::repeat_n(Node::Not, 1_000_000));
        assert!(Predicate::from_wire(&enc(deep), 1).is_err());
        assert!(Predicate::from_wire(&enc(vec![Node::And]), 1).is_err(), "missing operands");
        assert!(Predicate::from_wire(&enc(vec![Node::Column(0), Node::Column(0)]), 1).is_err(), "two roots");
        assert!(Predicate::from_wire(&enc(vec![Node::Column(5)]), 1).is_err(), "column out of range");
        assert!(Predicate::from_wire(&enc(vec![Node::Column(0), Node::InList { len: u32::MAX, negated: false }]), 1)
            .is_err());
        assert!(Predicate::from_wire(&WirePredicate { table: "t".into(), nodes: vec![0xff; 9] }, 1).is_err());
        let ok = enc(vec![Node::Column(0), Node::Const(Value::Int(1)), Node::Cmp(CmpOp::Eq)]);
        assert!(Predicate::from_wire(&ok, 1).is_ok());
    }

    #[test]
    fn sequence_functions_are_not_predicates() {
        for func in [Func::NextVal, Func::CurrVal, Func::SetVal, Func::LastVal] {
            let p = Predicate { table: "t".into(), expr: Expr::Call { func, args: vec![] } };
            assert!(p.to_wire().is_err(), "{func:?}");
            let nodes = postcard::to_allocvec(&vec![Node::Call { func, args: 0 }]).expect("encode");
            assert!(Predicate::from_wire(&WirePredicate { table: "t".into(), nodes }, 1).is_err(), "{func:?}");
        }
    }

    #[test]
    fn placeholders_cannot_be_encoded() {
        let p = Predicate { table: "t".into(), expr: Expr::Param(0) };
        assert!(p.to_wire().is_err());
    }
}
