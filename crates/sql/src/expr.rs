//! Bound scalar expressions, their evaluation under SQL three-valued logic, and the
//! serializable `Predicate` reported for every scan.

use crate::error::{err, Result, SqlError, SqlState};
use crate::to_char_number::Number;
use crate::types::{arith, cast_with, negate, sql_cmp, ArithOp, Row, SqlType, TypeLimits, Value};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

pub use pistou_types::func::{CmpOp, Func};

/// A bound expression. Columns are positions in the row the expression is evaluated on.
/// `Param`, `Outer` and `Subquery*` are placeholders that [`Expr::instantiate`] replaces by
/// constants; reported predicates never contain them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    Const(Value),
    Column(usize),
    /// Column of the outer row of an index nested-loop join.
    Outer(usize),
    /// Column of an enclosing query's row, for a correlated subquery: `level` counts the
    /// enclosing queries from the statement's outermost one (0).
    Enclosing {
        level: usize,
        column: usize,
    },
    /// Statement parameter `$n` (0-based).
    Param(usize),
    /// Value of uncorrelated scalar subquery `i`.
    Subquery(usize),
    /// `expr [NOT] IN (subquery i)`.
    InSubquery {
        expr: Box<Expr>,
        subquery: usize,
        negated: bool,
    },
    /// `[NOT] EXISTS (subquery i)`.
    Exists {
        subquery: usize,
        negated: bool,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `IS [NOT] TRUE/FALSE`.
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    IsDistinct {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// `expr [NOT] [I]LIKE pattern [ESCAPE escape]`; no escape expression means `\\`.
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    /// `CAST(expr AS ty(limits))`; limits are VARCHAR/CHAR length and NUMERIC precision.
    Cast {
        expr: Box<Expr>,
        ty: SqlType,
        limits: TypeLimits,
    },
    Call {
        func: Func,
        args: Vec<Expr>,
    },
}

/// Result of an uncorrelated subquery, computed before the statement's main plan runs.
#[derive(Clone, Debug, PartialEq)]
pub enum SubqueryValue {
    Scalar(Value),
    /// Distinct values of the single column (for IN).
    List(Vec<Value>),
    Exists(bool),
}

/// Values for placeholders during evaluation.
#[derive(Clone, Copy, Default)]
pub struct Env<'a> {
    pub params: &'a [Value],
    pub subqueries: &'a [SubqueryValue],
    /// Values of correlated subqueries for the row being evaluated; they shadow `subqueries`.
    pub correlated: &'a [(usize, SubqueryValue)],
    pub outer: &'a [Value],
    /// Rows of the enclosing queries, outermost first (`Expr::Enclosing`).
    pub enclosing: &'a [Row],
    /// The transaction's time, µs since 1970-01-01 UTC: the time of its Basil timestamp,
    /// chosen by the client and sent with every statement, so that every replica computes
    /// the same `now()`. None where no transaction runs (planning).
    pub now: Option<i64>,
    /// The sequence values the statement may draw (None where no statement runs).
    pub sequences: Option<&'a crate::sequence::SequenceDraws<'a>>,
    /// The statement's random values (`gen_random_uuid()`; None where no statement runs).
    pub random: Option<&'a crate::uuid::StatementRandom>,
    /// What the statement may still compute (None: unbounded, where no statement runs, e.g.
    /// a predicate's test of one written row, whose text is bounded by the row's).
    pub budget: Option<&'a crate::budget::Budget<'a>>,
}

/// Charges a computed value to the statement's budget.
fn charged(v: Value, env: &Env) -> Result<Value> {
    if let (Value::Text(s), Some(budget)) = (&v, env.budget) {
        budget.charge(s.len() as u64)?;
    }
    Ok(v)
}

fn unbound(what: &str) -> SqlError {
    SqlError::new(SqlState::InternalError, format!("unbound {what} in expression"))
}

fn row_value(row: &[Value], i: usize) -> Result<&Value> {
    row.get(i).ok_or_else(|| unbound("column"))
}

fn sub<'a>(env: &Env<'a>, i: usize) -> Result<&'a SubqueryValue> {
    if let Some((_, v)) = env.correlated.iter().find(|(id, _)| *id == i) {
        return Ok(v);
    }
    env.subqueries.get(i).ok_or_else(|| unbound("subquery"))
}

/// `now()` and its relatives.
/// nextval / currval of the sequence named by the call's constant argument, from the
/// values the statement was given (`Env::sequences`).
fn sequence_call(func: Func, args: &[Expr], env: &Env) -> Result<Value> {
    let (Some(draws), [Expr::Const(Value::Text(sequence))]) = (env.sequences, args) else {
        return Err(SqlError::new(
            SqlState::FeatureNotSupported,
            format!("{}() outside a statement's execution (e.g. in a constant DEFAULT)", func.name()),
        ));
    };
    let v = if func == Func::NextVal { draws.next(sequence)? } else { draws.current(sequence)? };
    Ok(Value::Int(v))
}

/// `setval(sequence, value, is_called)`, from the setting the client applied
/// (`Env::sequences`); NULL with a NULL argument, as PostgreSQL's strict function.
fn setval_call(args: &[Expr], row: &[Value], env: &Env) -> Result<Value> {
    let (Some(draws), [Expr::Const(Value::Text(sequence)), value, is_called]) = (env.sequences, args) else {
        return err(SqlState::FeatureNotSupported, "setval() outside a statement's execution (e.g. in a DEFAULT)");
    };
    let (value, is_called) = match (value.eval(row, env)?, is_called.eval(row, env)?) {
        (Value::Int(value), Value::Bool(is_called)) => (value, is_called),
        (Value::Null, _) | (_, Value::Null) => return Ok(Value::Null),
        (value, is_called) => {
            return err(SqlState::InternalError, format!("setval({value:?}, {is_called:?}): arguments not bound"))
        }
    };
    Ok(Value::Int(draws.set(sequence, crate::sequence::SequenceSet { value, is_called })?))
}

fn transaction_time(func: Func, env: &Env) -> Result<Value> {
    let Some(now) = env.now else {
        return Err(SqlError::new(
            SqlState::FeatureNotSupported,
            format!("{}() is not supported outside a statement's execution (e.g. in a DEFAULT)", func.name()),
        ));
    };
    Ok(match func {
        Func::CurrentDate => Value::Date(crate::temporal::timestamp_date(now)),
        Func::LocalTimestamp => Value::Timestamp(now),
        _ => Value::TimestampTz(now),
    })
}

use pistou_types::scalar::{age, in_list, text_arg};

/// A function's value: the engine's own (to_char), else the shared pure implementation
/// (`pistou_types::scalar`, which index expressions use too).
fn call(func: Func, args: &[Value]) -> Result<Value> {
    if func != Func::ToChar || args.iter().any(Value::is_null) {
        return pistou_types::scalar::call(func, args);
    }
    Ok(match func {
        Func::ToChar => {
            // The binder puts the value's static type first (`Func::ToChar`).
            let [Value::Text(ty), value, template] = args else { return Err(unbound("argument type of to_char")) };
            let template = text_arg(template, func)?;
            let number = |n| crate::to_char_number::format(n, template).map(Some);
            let text = match value {
                Value::Timestamp(m) => crate::to_char::format(*m, false, template)?,
                Value::TimestampTz(m) => crate::to_char::format(*m, true, template)?,
                Value::Date(d) => crate::to_char::format(crate::temporal::date_timestamp(*d), false, template)?,
                Value::Interval(iv) => crate::to_char::format_interval(iv, template)?,
                Value::Int(i) if matches!(ty.as_str(), "smallint" | "integer") => number(Number::Int4(*i))?,
                Value::Int(i) => number(Number::Int8(*i))?,
                Value::Float(f) if ty == "real" => number(Number::Float4(*f as f32))?,
                Value::Float(f) => number(Number::Float8(*f))?,
                Value::Numeric(d) => number(Number::Numeric(*d))?,
                _ => return err(SqlState::UndefinedFunction, format!("function to_char({ty}, text) does not exist")),
            };
            text.map_or(Value::Null, Value::Text)
        }
        _ => return Err(unbound("engine function")),
    })
}

impl Expr {
    pub fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }

    /// Conjunction of `parts` (TRUE when empty).
    pub fn conjunction(parts: impl IntoIterator<Item = Expr>) -> Expr {
        parts.into_iter().reduce(Expr::and).unwrap_or(Expr::Const(Value::Bool(true)))
    }

    /// Evaluates over `row`, borrowing a column, parameter or constant instead of copying it
    /// (comparisons and filters need no copy).
    fn operand<'x>(&'x self, row: &'x [Value], env: &Env<'x>) -> Result<Cow<'x, Value>> {
        Ok(match self {
            Expr::Const(v) => Cow::Borrowed(v),
            Expr::Column(i) => Cow::Borrowed(row_value(row, *i)?),
            Expr::Outer(i) => Cow::Borrowed(row_value(env.outer, *i)?),
            Expr::Param(i) => Cow::Borrowed(env.params.get(*i).ok_or_else(|| unbound("parameter"))?),
            other => Cow::Owned(other.eval(row, env)?),
        })
    }

    /// Evaluates over `row` with placeholders taken from `env`.
    pub fn eval(&self, row: &[Value], env: &Env) -> Result<Value> {
        // Leaves (most evaluations) stay out of the large frame of the general case.
        match self {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Column(i) => Ok(row_value(row, *i)?.clone()),
            Expr::Param(i) => Ok(env.params.get(*i).ok_or_else(|| unbound("parameter"))?.clone()),
            _ => self.eval_node(row, env),
        }
    }

    #[inline(never)]
    fn eval_node(&self, row: &[Value], env: &Env) -> Result<Value> {
        use Expr::*;
        Ok(match self {
            Const(v) => v.clone(),
            Column(i) => row_value(row, *i)?.clone(),
            Outer(i) => row_value(env.outer, *i)?.clone(),
            Enclosing { level, column } => {
                row_value(env.enclosing.get(*level).ok_or_else(|| unbound("enclosing row"))?, *column)?.clone()
            }
            Param(i) => env.params.get(*i).ok_or_else(|| unbound("parameter"))?.clone(),
            Subquery(i) => match sub(env, *i)? {
                SubqueryValue::Scalar(v) => v.clone(),
                _ => return Err(unbound("scalar subquery")),
            },
            InSubquery { expr, subquery, negated } => {
                let v = expr.eval(row, env)?;
                match sub(env, *subquery)? {
                    SubqueryValue::List(list) => in_list(&v, list.iter().cloned().map(Ok), *negated)?,
                    _ => return Err(unbound("IN subquery")),
                }
            }
            Exists { subquery, negated } => match sub(env, *subquery)? {
                SubqueryValue::Exists(b) => Value::Bool(*b != *negated),
                _ => return Err(unbound("EXISTS subquery")),
            },
            Not(e) => match e.eval(row, env)?.truth()? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Neg(e) => negate(&e.eval(row, env)?)?,
            And(..) | Or(..) | Cmp(..) => match self.truth_of(row, env)? {
                Some(b) => Value::Bool(b),
                None => Value::Null,
            },
            Arith(op, a, b) => arith(*op, &a.eval(row, env)?, &b.eval(row, env)?)?,
            Concat(a, b) => charged(pistou_types::scalar::concat(&a.eval(row, env)?, &b.eval(row, env)?), env)?,
            IsNull { expr, negated } => Value::Bool(expr.operand(row, env)?.is_null() != *negated),
            IsBool { expr, value, negated } => Value::Bool((expr.eval(row, env)?.truth()? == Some(*value)) != *negated),
            IsDistinct { left, right, negated } => {
                pistou_types::scalar::is_distinct(&left.eval(row, env)?, &right.eval(row, env)?, *negated)?
            }
            InList { expr, list, negated } => {
                let v = expr.eval(row, env)?;
                in_list(&v, list.iter().map(|e| e.eval(row, env)), *negated)?
            }
            Like { expr, pattern, escape, negated, case_insensitive } => {
                let escape = escape.as_ref().map(|e| e.eval(row, env)).transpose()?;
                let (text, pattern) = (expr.eval(row, env)?, pattern.eval(row, env)?);
                pistou_types::pattern::like(&text, &pattern, escape.as_ref(), *negated, *case_insensitive)?
            }
            Case { operand, whens, otherwise } => {
                let subject = operand.as_ref().map(|o| o.eval(row, env)).transpose()?;
                for (when, then) in whens {
                    if pistou_types::scalar::case_hit(subject.as_ref(), &when.eval(row, env)?)? {
                        return then.eval(row, env);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, env)?,
                    None => Value::Null,
                }
            }
            Cast { expr, ty, limits } => cast_with(&expr.eval(row, env)?, *ty, limits)?,
            // COALESCE evaluates no argument after the first non-null one (COALESCE(1, 1/0) is 1).
            Call { func: Func::Coalesce, args } => {
                for arg in args {
                    let v = arg.eval(row, env)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                Value::Null
            }
            Call { func, args } => match func {
                Func::Now | Func::CurrentDate | Func::LocalTimestamp => transaction_time(*func, env)?,
                Func::Age if args.len() == 1 => {
                    let today = transaction_time(Func::LocalTimestamp, env)?;
                    let value = args.first().map(|a| a.eval(row, env)).transpose()?.unwrap_or(Value::Null);
                    age(&crate::types::cast(&today, SqlType::Date)?, &value)?
                }
                Func::NextVal | Func::CurrVal => sequence_call(*func, args, env)?,
                Func::SetVal => setval_call(args, row, env)?,
                Func::LastVal => match env.sequences {
                    Some(draws) => Value::Int(draws.last()?),
                    None => return err(SqlState::FeatureNotSupported, "lastval() outside a statement's execution"),
                },
                Func::GenRandomUuid => match env.random {
                    Some(random) => Value::Text(random.next_uuid()),
                    None => {
                        return err(
                            SqlState::FeatureNotSupported,
                            "gen_random_uuid() outside a statement's execution (e.g. in a DEFAULT)",
                        )
                    }
                },
                _ => {
                    let values = args.iter().map(|a| a.eval(row, env)).collect::<Result<Vec<_>>>()?;
                    charged(call(*func, &values)?, env)?
                }
            },
        })
    }

    /// Evaluates as a filter: only TRUE passes.
    pub fn passes(&self, row: &[Value], env: &Env) -> Result<bool> {
        Ok(self.truth_of(row, env)? == Some(true))
    }

    /// Three-valued truth of a boolean expression; AND, OR and comparisons (what filters are
    /// made of) are decided here without building intermediate values.
    pub(crate) fn truth_of(&self, row: &[Value], env: &Env) -> Result<Option<bool>> {
        match self {
            Expr::And(a, b) => {
                let l = a.truth_of(row, env)?;
                if l == Some(false) {
                    return Ok(Some(false));
                }
                Ok(match (l, b.truth_of(row, env)?) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let l = a.truth_of(row, env)?;
                if l == Some(true) {
                    return Ok(Some(true));
                }
                Ok(match (l, b.truth_of(row, env)?) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Cmp(op, a, b) => Ok(sql_cmp(&*a.operand(row, env)?, &*b.operand(row, env)?)?.map(|o| op.holds(o))),
            Expr::Const(Value::Bool(b)) => Ok(Some(*b)),
            other => other.eval(row, env)?.truth(),
        }
    }

    /// Replaces every placeholder by its value, giving a closed expression over columns and
    /// constants only.
    pub fn instantiate(&self, env: &Env) -> Result<Expr> {
        use Expr::*;
        let inst = |e: &Expr| e.instantiate(env).map(Box::new);
        Ok(match self {
            Const(_) | Column(_) => self.clone(),
            Outer(_) | Enclosing { .. } | Param(_) | Subquery(_) | Exists { .. } => Const(self.eval(&[], env)?),
            InSubquery { expr, subquery, negated } => match sub(env, *subquery)? {
                SubqueryValue::List(list) => {
                    InList { expr: inst(expr)?, list: list.iter().cloned().map(Const).collect(), negated: *negated }
                }
                _ => return Err(unbound("IN subquery")),
            },
            Not(e) => Not(inst(e)?),
            Neg(e) => Neg(inst(e)?),
            And(a, b) => And(inst(a)?, inst(b)?),
            Or(a, b) => Or(inst(a)?, inst(b)?),
            Cmp(op, a, b) => Cmp(*op, inst(a)?, inst(b)?),
            Arith(op, a, b) => Arith(*op, inst(a)?, inst(b)?),
            Concat(a, b) => Concat(inst(a)?, inst(b)?),
            IsNull { expr, negated } => IsNull { expr: inst(expr)?, negated: *negated },
            IsBool { expr, value, negated } => IsBool { expr: inst(expr)?, value: *value, negated: *negated },
            IsDistinct { left, right, negated } => {
                IsDistinct { left: inst(left)?, right: inst(right)?, negated: *negated }
            }
            InList { expr, list, negated } => InList {
                expr: inst(expr)?,
                list: list.iter().map(|e| e.instantiate(env)).collect::<Result<_>>()?,
                negated: *negated,
            },
            Like { expr, pattern, escape, negated, case_insensitive } => Like {
                expr: inst(expr)?,
                pattern: inst(pattern)?,
                escape: escape.as_deref().map(inst).transpose()?,
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            Case { operand, whens, otherwise } => Case {
                operand: operand.as_deref().map(inst).transpose()?,
                whens: whens
                    .iter()
                    .map(|(w, t)| Ok((w.instantiate(env)?, t.instantiate(env)?)))
                    .collect::<Result<_>>()?,
                otherwise: otherwise.as_deref().map(inst).transpose()?,
            },
            Cast { expr, ty, limits } => Cast { expr: inst(expr)?, ty: *ty, limits: limits.clone() },
            // Replicas check reported predicates later, outside the transaction: its time
            // becomes a constant, like a parameter.
            Call { func: func @ (Func::Now | Func::CurrentDate | Func::LocalTimestamp), .. } => {
                Const(transaction_time(*func, env)?)
            }
            // age(x) is from the transaction's date, a constant like now().
            Call { func: Func::Age, args } if args.len() == 1 => {
                let today = crate::types::cast(&transaction_time(Func::LocalTimestamp, env)?, SqlType::Date)?;
                let mut from_today = vec![Const(today)];
                for e in args {
                    from_today.push(e.instantiate(env)?);
                }
                Call { func: Func::Age, args: from_today }
            }
            // A predicate is tested again later, where the statement's values are gone.
            Call { func: Func::GenRandomUuid, .. } => {
                return err(SqlState::FeatureNotSupported, "gen_random_uuid() in a condition on scanned rows")
            }
            Call { func, args } => {
                Call { func: *func, args: args.iter().map(|e| e.instantiate(env)).collect::<Result<_>>()? }
            }
        })
    }

    /// Calls `f` on every direct child.
    pub fn children(&self) -> Vec<&Expr> {
        use Expr::*;
        match self {
            Const(_) | Column(_) | Outer(_) | Enclosing { .. } | Param(_) | Subquery(_) | Exists { .. } => vec![],
            InSubquery { expr, .. }
            | Not(expr)
            | Neg(expr)
            | IsNull { expr, .. }
            | IsBool { expr, .. }
            | Cast { expr, .. } => {
                vec![expr]
            }
            And(a, b) | Or(a, b) | Cmp(_, a, b) | Arith(_, a, b) | Concat(a, b) => vec![a, b],
            IsDistinct { left, right, .. } => vec![left, right],
            InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
            Like { expr, pattern, escape, .. } => [&**expr, &**pattern].into_iter().chain(escape.as_deref()).collect(),
            Case { operand, whens, otherwise } => operand
                .as_deref()
                .into_iter()
                .chain(whens.iter().flat_map(|(w, t)| [w, t]))
                .chain(otherwise.as_deref())
                .collect(),
            Call { args, .. } => args.iter().collect(),
        }
    }

    /// True if `pred` holds for this node or any descendant.
    pub fn any(&self, pred: &dyn Fn(&Expr) -> bool) -> bool {
        pred(self) || self.children().into_iter().any(|c| c.any(pred))
    }

    /// Rewrites column references with `f` (used to move expressions between row layouts).
    pub fn map_columns(&self, f: &dyn Fn(usize) -> Expr) -> Expr {
        use Expr::*;
        let m = |e: &Expr| Box::new(e.map_columns(f));
        match self {
            Column(i) => f(*i),
            Const(_) | Outer(_) | Enclosing { .. } | Param(_) | Subquery(_) | Exists { .. } => self.clone(),
            InSubquery { expr, subquery, negated } => {
                InSubquery { expr: m(expr), subquery: *subquery, negated: *negated }
            }
            Not(e) => Not(m(e)),
            Neg(e) => Neg(m(e)),
            And(a, b) => And(m(a), m(b)),
            Or(a, b) => Or(m(a), m(b)),
            Cmp(op, a, b) => Cmp(*op, m(a), m(b)),
            Arith(op, a, b) => Arith(*op, m(a), m(b)),
            Concat(a, b) => Concat(m(a), m(b)),
            IsNull { expr, negated } => IsNull { expr: m(expr), negated: *negated },
            IsBool { expr, value, negated } => IsBool { expr: m(expr), value: *value, negated: *negated },
            IsDistinct { left, right, negated } => IsDistinct { left: m(left), right: m(right), negated: *negated },
            InList { expr, list, negated } => {
                InList { expr: m(expr), list: list.iter().map(|e| e.map_columns(f)).collect(), negated: *negated }
            }
            Like { expr, pattern, escape, negated, case_insensitive } => Like {
                expr: m(expr),
                pattern: m(pattern),
                escape: escape.as_deref().map(m),
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            Case { operand, whens, otherwise } => Case {
                operand: operand.as_deref().map(m),
                whens: whens.iter().map(|(w, t)| (w.map_columns(f), t.map_columns(f))).collect(),
                otherwise: otherwise.as_deref().map(m),
            },
            Cast { expr, ty, limits } => Cast { expr: m(expr), ty: *ty, limits: limits.clone() },
            Call { func, args } => Call { func: *func, args: args.iter().map(|e| e.map_columns(f)).collect() },
        }
    }

    /// Writes the expression naming columns with `names`.
    pub fn fmt_with(&self, f: &mut fmt::Formatter<'_>, names: &dyn Fn(usize) -> String) -> fmt::Result {
        use Expr::*;
        let show = |e: &Expr| Shown(e, names).to_string();
        match self {
            Const(Value::Text(s)) => write!(f, "'{}'", s.replace('\'', "''")),
            Const(v) => write!(f, "{v}"),
            Column(i) => f.write_str(&names(*i)),
            Outer(i) => write!(f, "outer.#{i}"),
            Enclosing { level, column } => write!(f, "enclosing{level}.#{column}"),
            Param(i) => write!(f, "${}", i + 1),
            Subquery(i) => write!(f, "(subquery {i})"),
            InSubquery { expr, subquery, negated } => {
                write!(f, "{} {}IN (subquery {subquery})", show(expr), if *negated { "NOT " } else { "" })
            }
            Exists { subquery, negated } => {
                write!(f, "{}EXISTS (subquery {subquery})", if *negated { "NOT " } else { "" })
            }
            Not(e) => write!(f, "(NOT {})", show(e)),
            Neg(e) => write!(f, "(- {})", show(e)),
            And(a, b) => write!(f, "({} AND {})", show(a), show(b)),
            Or(a, b) => write!(f, "({} OR {})", show(a), show(b)),
            Cmp(op, a, b) => write!(f, "({} {} {})", show(a), op.symbol(), show(b)),
            Arith(op, a, b) => write!(f, "({} {} {})", show(a), op.symbol(), show(b)),
            Concat(a, b) => write!(f, "({} || {})", show(a), show(b)),
            IsNull { expr, negated } => write!(f, "({} IS {}NULL)", show(expr), if *negated { "NOT " } else { "" }),
            IsBool { expr, value, negated } => write!(
                f,
                "({} IS {}{})",
                show(expr),
                if *negated { "NOT " } else { "" },
                if *value { "TRUE" } else { "FALSE" }
            ),
            IsDistinct { left, right, negated } => {
                write!(f, "({} IS {}DISTINCT FROM {})", show(left), if *negated { "NOT " } else { "" }, show(right))
            }
            InList { expr, list, negated } => {
                let items: Vec<String> = list.iter().map(show).collect();
                write!(f, "({} {}IN ({}))", show(expr), if *negated { "NOT " } else { "" }, items.join(", "))
            }
            Like { expr, pattern, escape, negated, case_insensitive } => write!(
                f,
                "({} {}{} {}{})",
                show(expr),
                if *negated { "NOT " } else { "" },
                if *case_insensitive { "ILIKE" } else { "LIKE" },
                show(pattern),
                escape.as_deref().map_or(String::new(), |e| format!(" ESCAPE {}", show(e)))
            ),
            Case { operand, whens, otherwise } => {
                f.write_str("CASE")?;
                if let Some(o) = operand {
                    write!(f, " {}", show(o))?;
                }
                for (w, t) in whens {
                    write!(f, " WHEN {} THEN {}", show(w), show(t))?;
                }
                if let Some(e) = otherwise {
                    write!(f, " ELSE {}", show(e))?;
                }
                f.write_str(" END")
            }
            Cast { expr, ty, limits } => write!(f, "CAST({} AS {ty}{})", show(expr), type_modifier(limits)),
            Call { func, args } => {
                let items: Vec<String> = args.iter().map(show).collect();
                write!(f, "{}({})", func.name(), items.join(", "))
            }
        }
    }
}

/// `(n)` or `(p,s)` after a type name, as written in SQL.
fn type_modifier(limits: &TypeLimits) -> String {
    match limits {
        TypeLimits { max_len: Some(n), .. } => format!("({n})"),
        TypeLimits { numeric: Some((p, s)), .. } => format!("({p},{s})"),
        _ => String::new(),
    }
}

/// Display adapter naming columns through a closure.
pub struct Shown<'a>(pub &'a Expr, pub &'a dyn Fn(usize) -> String);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_with(f, self.1)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_with(f, &|i| format!("#{i}"))
    }
}

/// A scan's filter predicate: a closed boolean expression over one table's columns
/// (`Column(i)` is the table's i-th column) and constants. The protocol evaluates it on any
/// version of a row of that table to decide whether a write could have changed a read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predicate {
    pub table: String,
    pub expr: Expr,
}

impl Predicate {
    /// SQL three-valued result on a full row of `table`: Some(true), Some(false), or None
    /// (unknown). Rows only satisfy the predicate on Some(true).
    pub fn eval(&self, row: &[Value]) -> Result<Option<bool>> {
        self.expr.eval(row, &Env::default())?.truth()
    }

    /// Conservative test for conflict detection: true unless the predicate is definitely not
    /// TRUE on `row`. An evaluation error (e.g. overflow on this row) counts as a match.
    pub fn may_match(&self, row: &[Value]) -> bool {
        !matches!(self.eval(row), Ok(Some(false)) | Ok(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_follow_three_valued_logic() {
        let env = Env::default();
        let in_list = |v: Value, items: Vec<Value>, negated| {
            Expr::InList { expr: Box::new(Expr::Const(v)), list: items.into_iter().map(Expr::Const).collect(), negated }
                .eval(&[], &env)
                .ok()
        };
        assert_eq!(in_list(Value::Null, vec![], true), Some(Value::Bool(true)), "NULL NOT IN () is true");
        assert_eq!(in_list(Value::Null, vec![], false), Some(Value::Bool(false)));
        assert_eq!(in_list(Value::Null, vec![Value::Int(1)], true), Some(Value::Null));
        assert_eq!(in_list(Value::Int(1), vec![Value::Int(2), Value::Null], true), Some(Value::Null));
        assert_eq!(in_list(Value::Int(1), vec![Value::Null, Value::Int(1)], false), Some(Value::Bool(true)));
        assert_eq!(
            in_list(Value::Int(1), vec![Value::Numeric(rust_decimal::Decimal::new(10, 1))], false),
            Some(Value::Bool(true))
        );
    }

    #[test]
    fn three_valued_logic() {
        let null = Expr::Const(Value::Null);
        let t = Expr::Const(Value::Bool(true));
        let f = Expr::Const(Value::Bool(false));
        let env = Env::default();
        let eval = |e: Expr| e.eval(&[], &env).ok();
        assert_eq!(eval(Expr::and(null.clone(), f.clone())), Some(Value::Bool(false)));
        assert_eq!(eval(Expr::and(null.clone(), t.clone())), Some(Value::Null));
        assert_eq!(eval(Expr::Or(Box::new(null.clone()), Box::new(t))), Some(Value::Bool(true)));
        assert_eq!(eval(Expr::Not(Box::new(null.clone()))), Some(Value::Null));
        let in_with_null = Expr::InList {
            expr: Box::new(Expr::Const(Value::Int(1))),
            list: vec![Expr::Const(Value::Int(2)), null],
            negated: true,
        };
        assert_eq!(eval(in_with_null), Some(Value::Null));
    }
}
