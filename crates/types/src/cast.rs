//! Conversions between types: explicit casts, assignment to a column (with the declared
//! width and length limits), and exact conversions for building index keys.

use crate::catalog::Column;
use crate::error::{err, Result, SqlError, SqlState};
use crate::temporal;
use crate::types::{out_of_range, total_cmp, SqlType, TypeLimits, Value, FLOAT_OVERFLOW};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};
use std::cmp::Ordering;

fn decimal_to_int(d: Decimal) -> Result<i64> {
    d.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
        .to_i64()
        .ok_or_else(|| out_of_range("bigint out of range"))
}

/// Checks an i64 against the range of a narrower integer type.
fn narrow_int(i: i64, ty: SqlType) -> Result<Value> {
    match ty.int_range() {
        Some((lo, hi, message)) if i < lo || i > hi => Err(out_of_range(message)),
        _ => Ok(Value::Int(i)),
    }
}

/// Rounds an f64 to the nearest f32 (REAL), failing where PostgreSQL does.
fn to_float4(x: f64) -> Result<Value> {
    let f = x as f32;
    if !f.is_finite() {
        return Err(out_of_range(FLOAT_OVERFLOW));
    }
    if f == 0.0 && x != 0.0 {
        return Err(out_of_range("value out of range: underflow"));
    }
    Ok(Value::Float(f64::from(f)))
}

/// CHAR values are kept without trailing blanks (PostgreSQL ignores them in comparisons);
/// output pads them back to the declared length.
pub fn strip_blanks(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// An array's text form (arrays are their text, `crate::array`) from text or from another
/// array: each element cast to `element`, written back in the canonical form.
fn cast_to_array(v: &Value, ty: SqlType, element: SqlType) -> Result<Value> {
    let s = match v {
        Value::Null => return Ok(Value::Null),
        Value::Text(s) => s,
        other => {
            let from = other.sql_type().map_or("unknown", SqlType::pg_name);
            return err(SqlState::CannotCoerce, format!("cannot cast type {from} to {ty}"));
        }
    };
    if !s.trim_start().starts_with('{') {
        return err(SqlState::InvalidTextRepresentation, format!("malformed array literal: \"{s}\""));
    }
    let values = crate::array::items(s)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(text) => cast(&Value::Text(text), element),
        })
        .collect::<Result<Vec<Value>>>()?;
    Ok(Value::Text(crate::array::format(&values, element)))
}

/// Explicit `CAST(v AS ty)` without a length or precision modifier.
pub fn cast(v: &Value, ty: SqlType) -> Result<Value> {
    use Value::*;
    let invalid = |s: &str| {
        let syntax = |state| SqlError::new(state, format!("invalid input syntax for type {ty}: \"{s}\""));
        // PostgreSQL reports bad date and time input with SQLSTATEs of their own.
        match ty {
            SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz if temporal::is_out_of_range_datetime(s) => {
                SqlError::new(SqlState::DatetimeFieldOverflow, format!("date/time field value out of range: \"{s}\""))
            }
            SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz => syntax(SqlState::InvalidDatetimeFormat),
            _ => syntax(SqlState::InvalidTextRepresentation),
        }
    };
    if let SqlType::Array(element) = ty {
        return cast_to_array(v, ty, element.scalar());
    }
    if ty == SqlType::Uuid && !matches!(v, Null | Text(_)) {
        return err(
            SqlState::CannotCoerce,
            format!("cannot cast type {} to uuid", v.sql_type().map_or("unknown", SqlType::pg_name)),
        );
    }
    if let (SqlType::Json, Text(s)) = (ty, v) {
        // json keeps its input text; it must be a valid document.
        crate::jsonb::parse(s)?;
        return Ok(v.clone());
    }
    if ty == SqlType::Jsonb {
        // Text, json and jsonb values are all documents as text: read and canonicalized.
        return match v {
            Null => Ok(Null),
            Text(s) => Ok(Text(crate::jsonb::canonical(s)?)),
            other => err(
                SqlState::CannotCoerce,
                format!("cannot cast type {} to jsonb", other.sql_type().map_or("unknown", SqlType::pg_name)),
            ),
        };
    }
    let base = ty.storage();
    let converted = match (v, base) {
        (Null, _) => return Ok(Null),
        (Bool(_), SqlType::Bool)
        | (Int(_), SqlType::Int)
        | (Numeric(_), SqlType::Numeric)
        | (Float(_), SqlType::Float)
        | (Text(_), SqlType::Text)
        | (Bytes(_), SqlType::Bytes)
        | (Date(_), SqlType::Date)
        | (Timestamp(_), SqlType::Timestamp)
        | (TimestampTz(_), SqlType::TimestampTz)
        | (Interval(_), SqlType::Interval) => v.clone(),
        (Text(s), SqlType::Interval) => Interval(crate::interval::Interval::parse(s, None)?),
        // The session's time zone is UTC: local and UTC times are the same.
        (Text(s), SqlType::TimestampTz) => TimestampTz(temporal::parse_timestamptz(s).ok_or_else(|| invalid(s))?),
        (Date(d), SqlType::TimestampTz) => TimestampTz(temporal::date_timestamp(*d)),
        (Timestamp(t), SqlType::TimestampTz) => TimestampTz(*t),
        (TimestampTz(t), SqlType::Timestamp) => Timestamp(*t),
        (TimestampTz(t), SqlType::Date) => Date(temporal::timestamp_date(*t)),
        (Text(s), SqlType::Date) => Date(temporal::parse_date(s).ok_or_else(|| invalid(s))?),
        (Text(s), SqlType::Timestamp) => Timestamp(temporal::parse_timestamp(s).ok_or_else(|| invalid(s))?),
        (Date(d), SqlType::Timestamp) => Timestamp(temporal::date_timestamp(*d)),
        (Timestamp(t), SqlType::Date) => Date(temporal::timestamp_date(*t)),
        (Int(i), SqlType::Numeric) => Numeric(Decimal::from(*i)),
        (Int(i), SqlType::Float) => Float(*i as f64),
        (Int(i), SqlType::Bool) => Bool(*i != 0),
        (Numeric(d), SqlType::Int) => Int(decimal_to_int(*d)?),
        // `+ 0.0`: a numeric has no negative zero (`-0.0` is 0), so neither has the float.
        (Numeric(d), SqlType::Float) => Float(d.to_f64().ok_or_else(|| out_of_range(FLOAT_OVERFLOW))? + 0.0),
        // As PostgreSQL's rint: 2.5 becomes 2, 3.5 becomes 4 (numeric rounds halves away
        // from zero, floats to even).
        (Float(f), SqlType::Int) => {
            let r = f.round_ties_even();
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(out_of_range("bigint out of range"));
            }
            Int(r as i64)
        }
        (Float(f), SqlType::Numeric) => {
            Numeric(Decimal::from_f64(*f).ok_or_else(|| out_of_range("value overflows numeric format"))?)
        }
        (Bool(b), SqlType::Int) => Int(i64::from(*b)),
        (Text(s), SqlType::Int) => {
            let t = s.trim();
            match t.parse::<i64>() {
                Ok(i) => Int(i),
                // Digits that do not fit: PostgreSQL calls that out of range, not bad syntax.
                Err(_) if !t.is_empty() && t.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit()) => {
                    return err(
                        SqlState::NumericValueOutOfRange,
                        format!("value \"{s}\" is out of range for type {ty}"),
                    )
                }
                Err(_) => return Err(invalid(s)),
            }
        }
        (Text(s), SqlType::Numeric) => Numeric(parse_decimal(s.trim()).ok_or_else(|| invalid(s))?),
        (Text(s), SqlType::Float) => {
            let f: f64 = s.trim().parse().map_err(|_| invalid(s))?;
            if f.is_finite() {
                Float(f)
            } else {
                return Err(invalid(s));
            }
        }
        (Text(s), SqlType::Bool) => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "yes" | "y" | "on" | "1" => Bool(true),
            "f" | "false" | "no" | "n" | "off" | "0" => Bool(false),
            _ => return Err(invalid(s)),
        },
        (Text(s), SqlType::Bytes) => Bytes(s.as_bytes().to_vec()),
        (_, SqlType::Text) => Text(v.to_string()),
        (other, _) => {
            return err(
                SqlState::DatatypeMismatch,
                format!("cannot cast type {} to {ty}", other.sql_type().map_or("unknown", SqlType::pg_name)),
            )
        }
    };
    narrow(converted, ty)
}

/// Brings a value of `ty`'s runtime type into `ty`'s narrower domain.
fn narrow(v: Value, ty: SqlType) -> Result<Value> {
    match (v, ty) {
        (Value::Int(i), SqlType::Int2 | SqlType::Int4) => narrow_int(i, ty),
        (Value::Float(f), SqlType::Float4) => to_float4(f),
        (Value::Text(s), SqlType::Char) => Ok(Value::Text(strip_blanks(&s).to_string())),
        (Value::Text(s), SqlType::Uuid) => crate::uuid::canonical(&s).map(Value::Text),
        (v, _) => Ok(v),
    }
}

/// Explicit `CAST(v AS ty(modifiers))`: like `cast`, then VARCHAR(n)/CHAR(n) truncate to n
/// characters and NUMERIC(p, s) rounds to s digits (failing if the result needs more than p).
pub fn cast_with(v: &Value, ty: SqlType, limits: &TypeLimits) -> Result<Value> {
    let converted = cast(v, ty)?;
    match (converted, limits) {
        (Value::Text(s), TypeLimits { max_len: Some(n), .. }) => {
            let cut: String = s.chars().take(*n as usize).collect();
            Ok(Value::Text(if ty == SqlType::Char { strip_blanks(&cut).to_string() } else { cut }))
        }
        (v @ Value::Numeric(_), _) => check_limits(v, ty, limits, None),
        (v, _) => Ok(v),
    }
}

/// Parses a decimal literal, including exponent notation (`1.5e3`).
pub fn parse_decimal(s: &str) -> Option<Decimal> {
    if s.contains(['e', 'E']) {
        Decimal::from_scientific(s).ok()
    } else {
        s.parse().ok()
    }
}

/// Coerces a value for storage in a column of type `ty` (assignment cast): numbers convert
/// among themselves, strings to dates and timestamps, every other mismatch is an error.
pub fn assign_cast(v: &Value, ty: SqlType, column: &str) -> Result<Value> {
    match (v, ty.storage()) {
        (Value::Null, _) => Ok(Value::Null),
        (Value::Int(_) | Value::Numeric(_) | Value::Float(_), SqlType::Int | SqlType::Numeric | SqlType::Float) => {
            cast(v, ty)
        }
        _ if v.sql_type() == Some(ty.storage()) => cast(v, ty),
        (Value::Text(_), SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz)
        | (Value::Date(_), SqlType::Timestamp | SqlType::TimestampTz)
        | (Value::Timestamp(_), SqlType::TimestampTz)
        | (Value::TimestampTz(_), SqlType::Date | SqlType::Timestamp) => cast(v, ty),
        _ => err(
            SqlState::DatatypeMismatch,
            format!(
                "column \"{column}\" is of type {ty} but expression is of type {}",
                v.sql_type().map_or("unknown", SqlType::pg_name)
            ),
        ),
    }
}

/// Assignment of `v` to `column`: type coercion, then the column's declared limits.
pub fn to_column(v: &Value, column: &Column) -> Result<Value> {
    check_limits(assign_cast(v, column.ty, &column.name)?, column.ty, &column.limits, Some(&column.name))
}

/// Converts a value to exactly `ty` when that loses nothing (used to build index keys);
/// None when no value of `ty` equals `v` under SQL `=`.
pub fn exact_cast(v: &Value, ty: SqlType) -> Option<Value> {
    match (v, ty.storage()) {
        (Value::Int(_) | Value::Numeric(_) | Value::Float(_), SqlType::Int | SqlType::Numeric | SqlType::Float) => {
            let c = cast(v, ty).ok()?;
            (total_cmp(&c, v) == Ordering::Equal).then_some(c)
        }
        // Stored CHAR values have no trailing blanks, so a value with some equals none.
        (Value::Text(s), SqlType::Text) if ty == SqlType::Char && s.ends_with(' ') => None,
        (Value::Text(_), SqlType::Text) if ty == SqlType::Uuid => cast(v, ty).ok(),
        (Value::Text(_), SqlType::Text) if ty == SqlType::Jsonb => cast(v, ty).ok(),
        (Value::Text(_), SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz) => cast(v, ty).ok(),
        (Value::TimestampTz(_), SqlType::Timestamp) | (Value::Timestamp(_), SqlType::TimestampTz) => cast(v, ty).ok(),
        _ if v.sql_type() == Some(ty.storage()) => Some(v.clone()),
        _ => None,
    }
}

fn numeric_overflow(precision: u32, scale: u32, column: Option<&str>) -> SqlError {
    let place = column.map_or(String::new(), |c| format!(" in column \"{c}\""));
    SqlError::new(
        SqlState::NumericValueOutOfRange,
        format!(
            "numeric field overflow{place}: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
            precision - scale
        ),
    )
}

fn integer_digits(d: &Decimal) -> u32 {
    d.trunc().abs().to_string().trim_start_matches('0').len() as u32
}

/// Applies NUMERIC(p, s) and VARCHAR(n)/CHAR(n) limits to a value already of type `ty`.
/// Text longer than n fails unless the excess is blanks, which are cut (as in PostgreSQL).
pub fn check_limits(v: Value, ty: SqlType, limits: &TypeLimits, column: Option<&str>) -> Result<Value> {
    match (v, limits) {
        (Value::Numeric(d), TypeLimits { numeric: Some((precision, scale)), .. }) => {
            // Limits may come from a peer's predicate: only those DDL accepts are valid.
            if !(1..=28).contains(precision) || scale > precision {
                return err(SqlState::InvalidParameterValue, "NUMERIC precision must be 1..28 and scale 0..precision");
            }
            let mut r = d.round_dp_with_strategy(*scale, RoundingStrategy::MidpointAwayFromZero);
            r.rescale(*scale);
            if integer_digits(&r) + scale > *precision {
                return Err(numeric_overflow(*precision, *scale, column));
            }
            Ok(Value::Numeric(r))
        }
        (Value::Text(s), TypeLimits { max_len: Some(n), .. }) if s.chars().count() > *n as usize => {
            let n_chars = *n as usize;
            if s.chars().skip(n_chars).all(|c| c == ' ') {
                let cut: String = s.chars().take(n_chars).collect();
                return Ok(Value::Text(if ty == SqlType::Char { strip_blanks(&cut).to_string() } else { cut }));
            }
            let name = if ty == SqlType::Char { "character" } else { "character varying" };
            err(SqlState::StringDataRightTruncation, format!("value too long for type {name}({n})"))
        }
        (v, _) => Ok(v),
    }
}

/// Why a stored value is not a value the engine would have stored in a column of type `ty`
/// with `limits` (None: it is one). For a store validating writes from untrusted clients;
/// the value must already have the column's runtime type.
pub fn stored_value_problem(ty: SqlType, limits: &TypeLimits, v: &Value) -> Option<String> {
    match v {
        Value::Int(i) => ty.int_range().filter(|(lo, hi, _)| i < lo || i > hi).map(|(_, _, m)| m.to_string()),
        Value::Float(f) if ty == SqlType::Float4 && f64::from(*f as f32).to_bits() != f.to_bits() => {
            Some(format!("{f} is not a real (float4) value"))
        }
        Value::Text(s) => {
            if ty == SqlType::Char && s.ends_with(' ') {
                return Some("character value stored with trailing blanks".to_string());
            }
            if ty == SqlType::Uuid && !crate::uuid::is_canonical(s) {
                return Some("uuid value not stored in canonical form".to_string());
            }
            limits.max_len.filter(|&n| s.chars().count() > n as usize).map(|n| {
                format!(
                    "value too long for type {}({n})",
                    if ty == SqlType::Char { "character" } else { "character varying" }
                )
            })
        }
        Value::Numeric(d) => limits.numeric.and_then(|(precision, scale)| {
            let fits = d.scale() <= scale && integer_digits(d) <= precision.saturating_sub(scale);
            (!fits).then(|| format!("value {d} does not fit numeric({precision}, {scale})"))
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state<T: std::fmt::Debug>(r: Result<T>) -> Option<SqlState> {
        r.err().map(|e| e.state)
    }

    #[test]
    fn narrow_integers_are_range_checked_with_postgres_messages() {
        assert_eq!(cast(&Value::Int(32767), SqlType::Int2).ok(), Some(Value::Int(32767)));
        let e = cast(&Value::Int(32768), SqlType::Int2).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("smallint out of range"));
        let e = cast(&Value::Int(1 << 31), SqlType::Int4).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("integer out of range"));
        assert_eq!(
            state(cast(&Value::Text("99999999999".into()), SqlType::Int4)),
            Some(SqlState::NumericValueOutOfRange)
        );
        assert_eq!(state(cast(&Value::Text("x".into()), SqlType::Int4)), Some(SqlState::InvalidTextRepresentation));
        assert_eq!(cast(&Value::Numeric(Decimal::new(25, 1)), SqlType::Int4).ok(), Some(Value::Int(3)));
    }

    #[test]
    fn real_rounds_to_f32_and_overflows() {
        assert_eq!(cast(&Value::Float(0.1), SqlType::Float4).ok(), Some(Value::Float(f64::from(0.1f32))));
        assert_eq!(state(cast(&Value::Float(1e300), SqlType::Float4)), Some(SqlState::NumericValueOutOfRange));
        assert_eq!(state(cast(&Value::Float(1e-300), SqlType::Float4)), Some(SqlState::NumericValueOutOfRange));
        assert_eq!(exact_cast(&Value::Float(0.1), SqlType::Float4), None, "0.1 is no real");
        assert_eq!(exact_cast(&Value::Numeric(Decimal::new(15, 1)), SqlType::Float), Some(Value::Float(1.5)));
        assert_eq!(exact_cast(&Value::Numeric(Decimal::new(15, 1)), SqlType::Int4), None);
        assert_eq!(exact_cast(&Value::Int(1 << 40), SqlType::Int4), None);
    }

    #[test]
    fn character_types_follow_postgres_length_rules() {
        let text = |s: &str| Value::Text(s.into());
        let limits = TypeLimits { max_len: Some(3), numeric: None };
        assert_eq!(check_limits(text("ab   "), SqlType::Varchar, &limits, None).ok(), Some(text("ab ")));
        let e = check_limits(text("abcd"), SqlType::Varchar, &limits, None).err().map(|e| e.message);
        assert_eq!(e.as_deref(), Some("value too long for type character varying(3)"));
        assert_eq!(cast(&text("a  "), SqlType::Char).ok(), Some(text("a")));
        assert_eq!(cast_with(&text("abcdef"), SqlType::Varchar, &limits).ok(), Some(text("abc")));
        assert_eq!(cast_with(&text("ab  x"), SqlType::Char, &limits).ok(), Some(text("ab")));
        assert_eq!(exact_cast(&text("a "), SqlType::Char), None);
    }

    #[test]
    fn numeric_precision_and_scale_are_enforced() {
        let limits = TypeLimits { max_len: None, numeric: Some((5, 2)) };
        let n = |s: &str| Value::Numeric(s.parse().unwrap_or_default());
        assert_eq!(
            cast_with(&n("123.456"), SqlType::Numeric, &limits).ok().map(|v| v.to_string()),
            Some("123.46".into())
        );
        assert_eq!(state(cast_with(&n("1234"), SqlType::Numeric, &limits)), Some(SqlState::NumericValueOutOfRange));
        assert!(stored_value_problem(SqlType::Numeric, &limits, &n("1.234")).is_some());
        assert_eq!(
            stored_value_problem(SqlType::Int2, &TypeLimits::default(), &Value::Int(70000)).as_deref(),
            Some("smallint out of range")
        );
    }
}
