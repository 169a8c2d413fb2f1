//! The pure scalar functions (`Func`), by value: what the SQL engine's expressions call and
//! what index expressions (`crate::index_expr`) call, so that the engine, `MemStore` and
//! the replicas' row store compute a function's value with one implementation. The
//! functions that need the engine (to_char, the transaction's time, sequences) stay in
//! `pistou_sql::expr`. The operators both evaluate with one implementation are here too
//! (`IN`, `IS DISTINCT FROM`, CASE's test; LIKE and `~` in `crate::pattern`).

use crate::error::{err, Result, SqlError, SqlState};
use crate::func::Func;
use crate::types::{sql_cmp, SqlType, Value};
use std::cmp::Ordering;

/// `a || b` of two values as text (NULL if either is NULL).
pub fn concat(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (l, r) => Value::Text(format!("{l}{r}")),
    }
}

/// SQL `IN`: true if equal to some element, unknown if no match but a NULL was involved
/// (on either side); an empty list never matches, even for a NULL value. `list` is
/// evaluated lazily, up to the first match.
pub fn in_list(v: &Value, list: impl Iterator<Item = Result<Value>>, negated: bool) -> Result<Value> {
    let mut saw_null = false;
    for item in list {
        let item = item?;
        if v.is_null() {
            return Ok(Value::Null);
        }
        match sql_cmp(v, &item)? {
            Some(Ordering::Equal) => return Ok(Value::Bool(!negated)),
            None => saw_null = true,
            Some(_) => {}
        }
    }
    Ok(if saw_null { Value::Null } else { Value::Bool(negated) })
}

/// `l IS [NOT] DISTINCT FROM r`.
pub fn is_distinct(l: &Value, r: &Value, negated: bool) -> Result<Value> {
    let distinct = match (l.is_null(), r.is_null()) {
        (true, true) => false,
        (true, false) | (false, true) => true,
        _ => sql_cmp(l, r)? != Some(Ordering::Equal),
    };
    Ok(Value::Bool(distinct != negated))
}

/// Whether a CASE branch is taken: `CASE subject WHEN w` compares, `CASE WHEN w` tests.
pub fn case_hit(subject: Option<&Value>, when: &Value) -> Result<bool> {
    Ok(match subject {
        Some(s) => sql_cmp(s, when)? == Some(Ordering::Equal),
        None => when.truth()? == Some(true),
    })
}

fn unbound(what: &str) -> SqlError {
    SqlError::new(SqlState::InternalError, format!("unbound {what} in expression"))
}

pub fn text_arg(v: &Value, func: Func) -> Result<&str> {
    match v {
        Value::Text(s) => Ok(s),
        other => {
            err(SqlState::UndefinedFunction, format!("function {}({:?}) does not exist", func.name(), other.sql_type()))
        }
    }
}

fn instant(v: &Value, func: Func) -> Result<crate::temporal::Instant> {
    use crate::temporal::Instant;
    match v {
        Value::Date(d) => Ok(Instant::Date(*d)),
        Value::Timestamp(t) => Ok(Instant::Timestamp(*t)),
        Value::TimestampTz(t) => Ok(Instant::TimestampTz(*t)),
        other => err(
            SqlState::UndefinedFunction,
            format!("function {}(text, {:?}) does not exist", func.name(), other.sql_type()),
        ),
    }
}

/// `split_part(s, delimiter, n)`, as PostgreSQL 15: fields counted from 1, or from the end
/// for a negative n; an empty delimiter makes the whole string the only field.
fn split_part(s: &str, delimiter: &str, n: i64) -> Result<Value> {
    if n == 0 {
        return err(SqlState::InvalidParameterValue, "field position must not be zero");
    }
    let fields: Vec<&str> = if delimiter.is_empty() { vec![s] } else { s.split(delimiter).collect() };
    let index = if n > 0 { usize::try_from(n - 1).ok() } else { fields.len().checked_sub(n.unsigned_abs() as usize) };
    Ok(Value::Text(index.and_then(|i| fields.get(i)).map_or(String::new(), |f| f.to_string())))
}

fn int_arg(v: &Value, func: Func) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        _ => err(SqlState::UndefinedFunction, format!("function {} expects an integer argument", func.name())),
    }
}

/// `age(a, b)` over dates, timestamps and timestamptz values (NULL if either is NULL).
pub fn age(a: &Value, b: &Value) -> Result<Value> {
    let micros = |v: &Value| match v {
        Value::Date(d) => Ok(Some(crate::temporal::date_timestamp(*d))),
        Value::Timestamp(t) | Value::TimestampTz(t) => Ok(Some(*t)),
        Value::Null => Ok(None),
        other => err(
            SqlState::UndefinedFunction,
            format!("function age({}) does not exist", other.sql_type().map_or("unknown", SqlType::pg_name)),
        ),
    };
    Ok(match (micros(a)?, micros(b)?) {
        (Some(x), Some(y)) => Value::Interval(crate::interval::age(x, y)?),
        _ => Value::Null,
    })
}

pub fn array_items(s: &str) -> Result<Vec<Option<String>>> {
    crate::array::items(s)
}

pub fn call(func: Func, args: &[Value]) -> Result<Value> {
    let first = args.first().unwrap_or(&Value::Null);
    if func == Func::Coalesce {
        return Ok(args.iter().find(|v| !v.is_null()).cloned().unwrap_or(Value::Null));
    }
    if func == Func::Concat {
        return Ok(Value::Text(args.iter().filter(|v| !v.is_null()).map(|v| v.to_string()).collect()));
    }
    if matches!(func, Func::Greatest | Func::Least) {
        let mut best: Option<&Value> = None;
        for v in args.iter().filter(|v| !v.is_null()) {
            best = match best {
                None => Some(v),
                Some(b) => {
                    let o = sql_cmp(v, b)?.unwrap_or(Ordering::Equal);
                    let better = if func == Func::Greatest { o == Ordering::Greater } else { o == Ordering::Less };
                    Some(if better { v } else { b })
                }
            };
        }
        return Ok(best.cloned().unwrap_or(Value::Null));
    }
    if func == Func::NullIf {
        let second = args.get(1).unwrap_or(&Value::Null);
        return Ok(match sql_cmp(first, second)? {
            Some(Ordering::Equal) => Value::Null,
            _ => first.clone(),
        });
    }
    if func == Func::JsonBuildObject {
        let Some((Value::Text(types), args)) = args.split_first() else {
            return Err(unbound("argument types of json_build_object"));
        };
        let types: Vec<Option<SqlType>> = types.split(',').map(SqlType::by_pg_name).collect();
        return crate::json::build_object(args, &types);
    }
    if func == Func::ArrayConstruct {
        let Some((Value::Text(element), items)) = args.split_first() else {
            return Err(unbound("element type of ARRAY[]"));
        };
        let element = SqlType::by_pg_name(element).unwrap_or(SqlType::Text);
        return Ok(Value::Text(crate::array::format(items, element)));
    }
    if func == Func::ArrayCat {
        let [_, left, right] = args else { return Err(unbound("element type of array_cat")) };
        if left.is_null() && right.is_null() {
            return Ok(Value::Null);
        }
        let mut items = Vec::new();
        for side in [left, right] {
            if let Value::Text(s) = side {
                items.extend(crate::array::items(s)?);
            }
        }
        return Ok(Value::Text(crate::array::format_items(items.into_iter())));
    }
    if let Func::Jsonb(f) = func {
        if f.strict() && args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        return crate::jsonb::call(f, args);
    }
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    Ok(match func {
        Func::Lower => Value::Text(text_arg(first, func)?.to_lowercase()),
        Func::Upper => Value::Text(text_arg(first, func)?.to_uppercase()),
        Func::Length => Value::Int(text_arg(first, func)?.chars().count() as i64),
        Func::Abs => match first {
            Value::Int(i) => Value::Int(
                i.checked_abs()
                    .ok_or_else(|| SqlError::new(SqlState::NumericValueOutOfRange, "bigint out of range"))?,
            ),
            Value::Numeric(d) => Value::Numeric(d.abs()),
            Value::Float(f) => Value::Float(f.abs()),
            _ => return err(SqlState::UndefinedFunction, "function abs expects a number"),
        },
        Func::Substr => {
            let s = text_arg(first, func)?;
            let start = int_arg(args.get(1).unwrap_or(&Value::Null), func)?;
            let len = args.get(2).map(|v| int_arg(v, func)).transpose()?;
            if len.is_some_and(|l| l < 0) {
                return err(SqlState::InvalidParameterValue, "negative substring length not allowed");
            }
            // SQL positions start at 1; characters before position 1 count against the length.
            let end = len.map(|l| start.saturating_add(l));
            let from = start.max(1);
            let taken: String = s
                .chars()
                .enumerate()
                .map(|(i, c)| (i as i64 + 1, c))
                .filter(|(pos, _)| *pos >= from && end.is_none_or(|e| *pos < e))
                .map(|(_, c)| c)
                .collect();
            Value::Text(taken)
        }
        Func::Round => {
            let digits = args.get(1).map(|v| int_arg(v, func)).transpose()?.unwrap_or(0);
            let digits = u32::try_from(digits.clamp(0, 28)).unwrap_or(0);
            match first {
                Value::Int(i) => Value::Int(*i),
                Value::Numeric(d) => Value::Numeric(
                    d.round_dp_with_strategy(digits, rust_decimal::RoundingStrategy::MidpointAwayFromZero),
                ),
                // PostgreSQL's round(double precision) is rint: halves to even. (The binder
                // refuses round(double precision, n), which PostgreSQL does not have.)
                Value::Float(f) => {
                    let m = 10f64.powi(digits as i32);
                    Value::Float((f * m).round_ties_even() / m)
                }
                _ => return err(SqlState::UndefinedFunction, "function round expects a number"),
            }
        }
        Func::Floor | Func::Ceil => match first {
            Value::Int(i) => Value::Int(*i),
            Value::Numeric(d) => Value::Numeric(if func == Func::Floor { d.floor() } else { d.ceil() }),
            Value::Float(f) => Value::Float(if func == Func::Floor { f.floor() } else { f.ceil() }),
            _ => return err(SqlState::UndefinedFunction, format!("function {} expects a number", func.name())),
        },
        Func::Trim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(first, func)?;
            let set: Vec<char> = match args.get(1) {
                Some(chars) => text_arg(chars, func)?.chars().collect(),
                None => vec![' '],
            };
            let strip = |c: char| set.contains(&c);
            Value::Text(
                match func {
                    Func::Ltrim => s.trim_start_matches(strip),
                    Func::Rtrim => s.trim_end_matches(strip),
                    _ => s.trim_matches(strip),
                }
                .to_string(),
            )
        }
        Func::Replace => {
            let from = text_arg(args.get(1).unwrap_or(&Value::Null), func)?;
            let to = text_arg(args.get(2).unwrap_or(&Value::Null), func)?;
            let s = text_arg(first, func)?;
            if from.is_empty() {
                Value::Text(s.to_string())
            } else {
                Value::Text(s.replace(from, to))
            }
        }
        Func::Position => {
            let s = text_arg(first, func)?;
            let needle = text_arg(args.get(1).unwrap_or(&Value::Null), func)?;
            Value::Int(s.find(needle).map_or(0, |byte| s[..byte].chars().count() as i64 + 1))
        }
        Func::SplitPart => {
            let delimiter = text_arg(args.get(1).unwrap_or(&Value::Null), func)?;
            let n = int_arg(args.get(2).unwrap_or(&Value::Null), func)?;
            split_part(text_arg(first, func)?, delimiter, n)?
        }
        Func::DateTrunc => {
            let value = instant(args.get(1).unwrap_or(&Value::Null), func)?;
            let truncated = crate::temporal::truncate(text_arg(first, func)?, value)?;
            match value {
                crate::temporal::Instant::Timestamp(_) => Value::Timestamp(truncated),
                _ => Value::TimestampTz(truncated),
            }
        }
        Func::Extract | Func::DatePart if matches!(args.get(1), Some(Value::Interval(_))) => {
            let (Some(Value::Interval(i)), unit) = (args.get(1), text_arg(first, func)?) else {
                return err(SqlState::InternalError, "interval argument vanished");
            };
            let is_epoch = crate::temporal::canonical_unit(unit) == Some("epoch");
            match func {
                Func::DatePart if is_epoch => Value::Float(crate::interval::date_part_epoch(i)),
                Func::DatePart => Value::Float(
                    rust_decimal::prelude::ToPrimitive::to_f64(&crate::interval::extract(unit, i)?).unwrap_or(f64::NAN),
                ),
                _ => Value::Numeric(crate::interval::extract(unit, i)?),
            }
        }
        Func::Extract => {
            let value = instant(args.get(1).unwrap_or(&Value::Null), func)?;
            Value::Numeric(crate::temporal::extract(text_arg(first, func)?, value)?)
        }
        Func::DatePart => {
            let value = match instant(args.get(1).unwrap_or(&Value::Null), func)? {
                crate::temporal::Instant::Date(d) => {
                    crate::temporal::Instant::Timestamp(crate::temporal::date_timestamp(d))
                }
                other => other,
            };
            let d = crate::temporal::extract(text_arg(first, func)?, value)?;
            Value::Float(rust_decimal::prelude::ToPrimitive::to_f64(&d).unwrap_or(f64::NAN))
        }
        Func::Float4Text => match first {
            // f32 Display is the shortest text that reads back as the same f32.
            Value::Float(f) => Value::Text((*f as f32).to_string()),
            other => Value::Text(other.to_string()),
        },
        Func::ArrayToString => {
            let separator = text_arg(args.get(1).unwrap_or(&Value::Null), func)?;
            let null_text = match args.get(2) {
                Some(Value::Null) | None => None,
                Some(v) => Some(text_arg(v, func)?),
            };
            let items = array_items(text_arg(first, func)?)?;
            let shown: Vec<&str> = items.iter().filter_map(|i| i.as_deref().or(null_text)).collect();
            Value::Text(shown.join(separator))
        }
        Func::ArrayHas => {
            let wanted = text_arg(first, func)?;
            let items = array_items(text_arg(args.get(1).unwrap_or(&Value::Null), func)?)?;
            if items.iter().any(|i| i.as_deref() == Some(wanted)) {
                Value::Bool(true)
            } else if items.iter().any(Option::is_none) {
                Value::Null
            } else {
                Value::Bool(false)
            }
        }
        Func::Coalesce | Func::NullIf | Func::Concat | Func::Greatest | Func::Least => Value::Null,
        Func::Now | Func::CurrentDate | Func::LocalTimestamp => {
            return Err(unbound("transaction time"));
        }
        Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal => return Err(unbound("sequence value")),
        Func::GenRandomUuid => return Err(unbound("random value")),
        Func::RegexMatch | Func::RegexIMatch => Value::Bool(crate::pattern::regex_match(
            text_arg(first, func)?,
            text_arg(args.get(1).unwrap_or(&Value::Null), func)?,
            func == Func::RegexIMatch,
        )?),
        Func::ToChar => return Err(unbound("engine function")),
        Func::Age => match args {
            [a, b] => age(a, b)?,
            _ => return Err(unbound("transaction time")),
        },
        Func::JsonBuildObject => return Err(unbound("argument types of json_build_object")),
        Func::ArrayConstruct => return Err(unbound("element type of ARRAY[]")),
        Func::ArrayCat => return Err(unbound("element type of array_cat")),
        Func::Jsonb(_) => return Err(unbound("jsonb function")),
    })
}
