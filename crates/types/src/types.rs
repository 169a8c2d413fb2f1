//! SQL types and values: comparison (with SQL NULL semantics), arithmetic, casts.

use crate::error::{err, Result, SqlError, SqlState};
use crate::keycode::encode_value;
use crate::temporal;

pub use crate::cast::exact_cast;
pub use crate::cast::{assign_cast, cast, cast_with, parse_decimal, stored_value_problem, to_column};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// Declared column and expression types. Values have one runtime representation per family
/// (`Value::Int` is an i64, `Value::Float` an f64, `Value::Text` a string); the narrower
/// declared types (`Int2`, `Int4`, `Float4`, `Varchar`, `Char`) are enforced when a value is
/// assigned or cast to them and by the result types of expressions (see `docs/sql.md`).
/// Variants are only ever appended: the serialized index of each is part of the catalog and
/// of wire predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SqlType {
    Bool,
    /// BIGINT (int8).
    Int,
    Numeric,
    /// DOUBLE PRECISION (float8).
    Float,
    Text,
    Bytes,
    Date,
    Timestamp,
    /// SMALLINT (int2).
    Int2,
    /// INTEGER (int4).
    Int4,
    /// REAL (float4): an f64 holding a value exactly representable as f32.
    Float4,
    /// VARCHAR[(n)]: text with an optional length limit.
    Varchar,
    /// CHAR(n) (bpchar): stored without trailing blanks, padded to n on output.
    Char,
    /// TIMESTAMP WITH TIME ZONE: the type of `now()`; not a column type. Values are instants,
    /// shown in UTC (the only time zone sessions may set).
    TimestampTz,
    // Appended: types of computed values only (never of a column), whose values are
    // `Value::Text` in PostgreSQL's output form (crate::array, crate::json).
    /// json: a JSON document as `json_build_object` writes it.
    Json,
    /// int2vector (`pg_index.indkey`): integers separated by spaces, subscripts from 0.
    Int2Vector,
    /// oidvector (`pg_index.indclass`): OIDs separated by spaces, subscripts from 0.
    OidVector,
    /// A one-dimensional array `elem[]` (`array_agg`, `pg_constraint.conkey`): `{a,b}`.
    Array(ArrayElem),
    /// uuid, a column type: `Value::Text` in canonical form (`crate::uuid`).
    Uuid,
    /// interval: a computed type (not a column's), `Value::Interval` (`crate::interval`).
    Interval,
    /// jsonb: a column type whose values are `Value::Text` holding the canonical document
    /// (`crate::jsonb`), so that equal documents have equal texts.
    Jsonb,
}

/// The element type of an array: the scalar types (an array of arrays is not a type here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ArrayElem {
    Bool,
    Int2,
    Int4,
    Int,
    Numeric,
    Float4,
    Float,
    Text,
    Varchar,
    Char,
    Bytes,
    Date,
    Timestamp,
    TimestampTz,
}

impl ArrayElem {
    /// The element type of arrays of `t` (None: `t` is not a scalar type).
    pub fn of(t: SqlType) -> Option<ArrayElem> {
        Some(match t {
            SqlType::Bool => ArrayElem::Bool,
            SqlType::Int2 => ArrayElem::Int2,
            SqlType::Int4 => ArrayElem::Int4,
            SqlType::Int => ArrayElem::Int,
            SqlType::Numeric => ArrayElem::Numeric,
            SqlType::Float4 => ArrayElem::Float4,
            SqlType::Float => ArrayElem::Float,
            SqlType::Text => ArrayElem::Text,
            SqlType::Varchar => ArrayElem::Varchar,
            SqlType::Char => ArrayElem::Char,
            SqlType::Bytes => ArrayElem::Bytes,
            SqlType::Date => ArrayElem::Date,
            SqlType::Timestamp => ArrayElem::Timestamp,
            SqlType::TimestampTz => ArrayElem::TimestampTz,
            SqlType::Json
            | SqlType::Jsonb
            | SqlType::Int2Vector
            | SqlType::OidVector
            | SqlType::Array(_)
            | SqlType::Uuid
            | SqlType::Interval => return None,
        })
    }

    pub fn scalar(self) -> SqlType {
        match self {
            ArrayElem::Bool => SqlType::Bool,
            ArrayElem::Int2 => SqlType::Int2,
            ArrayElem::Int4 => SqlType::Int4,
            ArrayElem::Int => SqlType::Int,
            ArrayElem::Numeric => SqlType::Numeric,
            ArrayElem::Float4 => SqlType::Float4,
            ArrayElem::Float => SqlType::Float,
            ArrayElem::Text => SqlType::Text,
            ArrayElem::Varchar => SqlType::Varchar,
            ArrayElem::Char => SqlType::Char,
            ArrayElem::Bytes => SqlType::Bytes,
            ArrayElem::Date => SqlType::Date,
            ArrayElem::Timestamp => SqlType::Timestamp,
            ArrayElem::TimestampTz => SqlType::TimestampTz,
        }
    }
}

impl SqlType {
    /// The PostgreSQL name of the type (as `format_type` prints it), for describe messages
    /// and error messages.
    pub fn pg_name(self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int => "bigint",
            SqlType::Numeric => "numeric",
            SqlType::Float4 => "real",
            SqlType::Float => "double precision",
            SqlType::Text => "text",
            SqlType::Varchar => "character varying",
            SqlType::Char => "character",
            SqlType::Bytes => "bytea",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Json => "json",
            SqlType::Jsonb => "jsonb",
            SqlType::Int2Vector => "int2vector",
            SqlType::OidVector => "oidvector",
            SqlType::Uuid => "uuid",
            SqlType::Interval => "interval",
            SqlType::Array(e) => match e {
                ArrayElem::Bool => "boolean[]",
                ArrayElem::Int2 => "smallint[]",
                ArrayElem::Int4 => "integer[]",
                ArrayElem::Int => "bigint[]",
                ArrayElem::Numeric => "numeric[]",
                ArrayElem::Float4 => "real[]",
                ArrayElem::Float => "double precision[]",
                ArrayElem::Text => "text[]",
                ArrayElem::Varchar => "character varying[]",
                ArrayElem::Char => "character[]",
                ArrayElem::Bytes => "bytea[]",
                ArrayElem::Date => "date[]",
                ArrayElem::Timestamp => "timestamp without time zone[]",
                ArrayElem::TimestampTz => "timestamp with time zone[]",
            },
        }
    }

    /// The type whose `pg_name` is `name` (None for any other name).
    pub fn by_pg_name(name: &str) -> Option<SqlType> {
        use SqlType::*;
        const SCALARS: [SqlType; 14] =
            [Bool, Int2, Int4, Int, Numeric, Float4, Float, Text, Varchar, Char, Bytes, Date, Timestamp, TimestampTz];
        let arrays = SCALARS.iter().filter_map(|t| ArrayElem::of(*t)).map(Array);
        SCALARS
            .into_iter()
            .chain([Json, Jsonb, Int2Vector, OidVector, Uuid, Interval])
            .chain(arrays)
            .find(|t| t.pg_name() == name)
    }

    /// The element type of an array or vector type (None for other types).
    pub fn element(self) -> Option<SqlType> {
        match self {
            SqlType::Array(e) => Some(e.scalar()),
            SqlType::Int2Vector => Some(SqlType::Int2),
            SqlType::OidVector => Some(SqlType::Int4),
            _ => None,
        }
    }

    /// The type of the runtime values of this type (`Value::sql_type` of a non-NULL value).
    pub fn storage(self) -> SqlType {
        match self {
            SqlType::Int2 | SqlType::Int4 => SqlType::Int,
            SqlType::Float4 => SqlType::Float,
            SqlType::Varchar | SqlType::Char => SqlType::Text,
            SqlType::Json
            | SqlType::Jsonb
            | SqlType::Int2Vector
            | SqlType::OidVector
            | SqlType::Array(_)
            | SqlType::Uuid => SqlType::Text,
            other => other,
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int2 | SqlType::Int4 | SqlType::Int)
    }

    pub fn is_number(self) -> bool {
        matches!(
            self,
            SqlType::Int2 | SqlType::Int4 | SqlType::Int | SqlType::Numeric | SqlType::Float4 | SqlType::Float
        )
    }

    pub fn is_text(self) -> bool {
        matches!(self, SqlType::Text | SqlType::Varchar | SqlType::Char)
    }

    /// PostgreSQL's type category (`pg_type.typcategory`): common-type resolution never
    /// crosses categories.
    pub fn category(self) -> TypeCategory {
        match self {
            SqlType::Bool => TypeCategory::Boolean,
            SqlType::Int2 | SqlType::Int4 | SqlType::Int | SqlType::Numeric | SqlType::Float4 | SqlType::Float => {
                TypeCategory::Numeric
            }
            SqlType::Text | SqlType::Varchar | SqlType::Char => TypeCategory::String,
            SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz => TypeCategory::DateTime,
            SqlType::Bytes | SqlType::Json | SqlType::Jsonb | SqlType::Uuid => TypeCategory::UserDefined,
            SqlType::Interval => TypeCategory::Timespan,
            SqlType::Int2Vector | SqlType::OidVector | SqlType::Array(_) => TypeCategory::Array,
        }
    }

    /// The preferred type of its category (`pg_type.typispreferred`): once chosen as a
    /// common type it is never displaced.
    pub fn is_preferred(self) -> bool {
        matches!(self, SqlType::Bool | SqlType::Float | SqlType::Text)
    }

    /// True if PostgreSQL converts `self` to `to` implicitly (`pg_cast` context `i`): numbers
    /// up the chain smallint < integer < bigint < numeric < real < double precision, the
    /// string types into one another, date to timestamp, both to timestamptz.
    pub fn implicitly_casts_to(self, to: SqlType) -> bool {
        const NUMBERS: [SqlType; 6] =
            [SqlType::Int2, SqlType::Int4, SqlType::Int, SqlType::Numeric, SqlType::Float4, SqlType::Float];
        let rank = |t: SqlType| NUMBERS.iter().position(|x| *x == t);
        match (rank(self), rank(to)) {
            (Some(a), Some(b)) => a <= b,
            _ => {
                self == to
                    || (self.is_text() && to.is_text())
                    || (self == SqlType::Date && to == SqlType::Timestamp)
                    || (matches!(self, SqlType::Date | SqlType::Timestamp) && to == SqlType::TimestampTz)
            }
        }
    }

    /// Range of an integer type, and its out-of-range message.
    pub fn int_range(self) -> Option<(i64, i64, &'static str)> {
        match self {
            SqlType::Int2 => Some((i64::from(i16::MIN), i64::from(i16::MAX), "smallint out of range")),
            SqlType::Int4 => Some((i64::from(i32::MIN), i64::from(i32::MAX), "integer out of range")),
            SqlType::Int => Some((i64::MIN, i64::MAX, "bigint out of range")),
            _ => None,
        }
    }
}

/// PostgreSQL's type categories of the supported types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeCategory {
    Boolean,
    Numeric,
    String,
    DateTime,
    /// bytea, json.
    UserDefined,
    /// interval.
    Timespan,
    Array,
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.pg_name())
    }
}

/// A typed SQL value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// Exact decimal; on the wire as (mantissa, scale), see `decimal_wire`.
    #[serde(with = "crate::decimal_wire")]
    Numeric(Decimal),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00 (no time zone).
    Timestamp(i64),
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    TimestampTz(i64),
    /// Appended: months, days and microseconds (`crate::interval`).
    Interval(crate::interval::Interval),
}

/// A row: one value per column, in schema (or output) column order.
pub type Row = Vec<Value>;

/// Equality used for grouping, DISTINCT, tests and plan comparison: NULL equals NULL here,
/// numbers compare by value across Int/Numeric/Float.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        total_cmp(self, other) == Ordering::Equal
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn sql_type(&self) -> Option<SqlType> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(_) => SqlType::Bool,
            Value::Int(_) => SqlType::Int,
            Value::Numeric(_) => SqlType::Numeric,
            Value::Float(_) => SqlType::Float,
            Value::Text(_) => SqlType::Text,
            Value::Bytes(_) => SqlType::Bytes,
            Value::Date(_) => SqlType::Date,
            Value::Timestamp(_) => SqlType::Timestamp,
            Value::TimestampTz(_) => SqlType::TimestampTz,
            Value::Interval(_) => SqlType::Interval,
        })
    }

    fn type_name(&self) -> String {
        self.sql_type().map_or("unknown".to_string(), |t| t.to_string())
    }

    /// Truth value of a boolean expression result (None = SQL unknown).
    pub fn truth(&self) -> Result<Option<bool>> {
        match self {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            other => err(
                SqlState::DatatypeMismatch,
                format!("argument of boolean context must be type boolean, not type {}", other.type_name()),
            ),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Int(i) => write!(f, "{i}"),
            // PostgreSQL's numeric has no negative zero (`-(0::numeric)` prints 0).
            Value::Numeric(d) if d.is_zero() => write!(f, "{}", d.abs()),
            Value::Numeric(d) => write!(f, "{d}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Text(s) => f.write_str(s),
            Value::Date(d) => f.write_str(&temporal::format_date(*d)),
            Value::Timestamp(t) => f.write_str(&temporal::format_timestamp(*t)),
            Value::TimestampTz(t) => f.write_str(&temporal::format_timestamptz(*t)),
            Value::Interval(i) => f.write_str(&i.format()),
            Value::Bytes(b) => {
                f.write_str("\\x")?;
                b.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
            }
        }
    }
}

/// The text a client sees for a value of static type `ty`: its `Display` form, except that a
/// REAL prints as the shortest text of its f32 value (`0.1`, not the double `0.100000001…`).
pub fn output_text(v: &Value, ty: Option<SqlType>) -> String {
    match (v, ty) {
        (Value::Float(f), Some(SqlType::Float4)) => (*f as f32).to_string(),
        _ => v.to_string(),
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Int(_) | Value::Numeric(_) | Value::Float(_) => 2,
        Value::Text(_) => 3,
        Value::Bytes(_) => 4,
        Value::Date(_) => 5,
        Value::Timestamp(_) => 6,
        Value::TimestampTz(_) => 7,
        Value::Interval(_) => 8,
    }
}

/// Sort key of a number: its f64 image first, then its exact decimal image. Comparing keys
/// lexicographically is a total order over mixed Int/Numeric/Float values (plain f64 or
/// decimal comparison alone is not transitive across types, and sorting requires that).
fn num_key(v: &Value) -> Option<(f64, Decimal)> {
    let f = as_f64(v)?;
    let exact = match v {
        Value::Int(i) => Decimal::from(*i),
        Value::Numeric(d) => *d,
        Value::Float(x) => Decimal::from_f64(*x).unwrap_or(if *x < 0.0 { Decimal::MIN } else { Decimal::MAX }),
        _ => return None,
    };
    Some((if f == 0.0 { 0.0 } else { f }, exact))
}

fn num_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        return Some(x.cmp(y));
    }
    let (fa, da) = num_key(a)?;
    let (fb, db) = num_key(b)?;
    Some(fa.total_cmp(&fb).then(da.cmp(&db)))
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Numeric(d) => d.to_f64(),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// A total order over all values (NULL first, then by type family, then by value); used for
/// sorting and grouping, never for SQL comparison semantics.
pub fn total_cmp(a: &Value, b: &Value) -> Ordering {
    use Value::*;
    match (a, b) {
        (Bool(x), Bool(y)) => x.cmp(y),
        (Text(x), Text(y)) => x.cmp(y),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Date(x), Date(y)) => x.cmp(y),
        (Timestamp(x), Timestamp(y)) | (TimestampTz(x), TimestampTz(y)) => x.cmp(y),
        (Interval(x), Interval(y)) => x.cmp_span(y),
        _ => num_cmp(a, b).unwrap_or_else(|| type_rank(a).cmp(&type_rank(b))),
    }
}

/// Appends a byte key of `v` such that two values get the same key exactly when
/// `total_cmp` says they are equal: numbers of different types that are equal (1, 1.0, 1.00)
/// share a key. Used for DISTINCT, GROUP BY, set operations and hash joins. The keys of
/// values of one type family sort in value order.
pub fn push_equality_key(out: &mut Vec<u8>, v: &Value) {
    match num_key(v) {
        Some((f, d)) => {
            encode_value(out, &Value::Float(f));
            encode_value(out, &Value::Numeric(d));
        }
        None => encode_value(out, v),
    }
}

/// Equality key of a row (see `push_equality_key`).
pub fn equality_key<'a>(values: impl IntoIterator<Item = &'a Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        push_equality_key(&mut out, v);
    }
    out
}

/// SQL comparison: None if either side is NULL, an error if the types are not comparable.
pub fn sql_cmp(a: &Value, b: &Value) -> Result<Option<Ordering>> {
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        return Ok(Some(x.cmp(y)));
    }
    if a.is_null() || b.is_null() {
        return Ok(None);
    }
    // A date compares with a timestamp as its midnight (PostgreSQL's cross-type operators).
    // (Quoted literals compared with dates are read as dates while binding.)
    match (a, b) {
        (Value::Date(d), Value::Timestamp(_)) => {
            return Ok(Some(total_cmp(&Value::Timestamp(temporal::date_timestamp(*d)), b)))
        }
        (Value::Timestamp(_), Value::Date(d)) => {
            return Ok(Some(total_cmp(a, &Value::Timestamp(temporal::date_timestamp(*d)))))
        }
        _ => {}
    }
    // timestamptz against a date or timestamp: the latter read in the session's time zone,
    // always UTC.
    if let (Some(x), Some(y)) = (utc_micros(a), utc_micros(b)) {
        if matches!(a, Value::TimestampTz(_)) || matches!(b, Value::TimestampTz(_)) {
            return Ok(Some(x.cmp(&y)));
        }
    }
    if type_rank(a) != type_rank(b) {
        return err(
            SqlState::UndefinedFunction,
            format!("operator does not exist: {} = {}", a.type_name(), b.type_name()),
        );
    }
    Ok(Some(total_cmp(a, b)))
}

/// A date, timestamp or timestamptz as microseconds since 1970-01-01 00:00 UTC.
fn utc_micros(v: &Value) -> Option<i64> {
    match v {
        Value::Date(d) => Some(temporal::date_timestamp(*d)),
        Value::Timestamp(t) | Value::TimestampTz(t) => Some(*t),
        _ => None,
    }
}

pub fn out_of_range(message: &str) -> SqlError {
    SqlError::new(SqlState::NumericValueOutOfRange, message)
}

const BIGINT_RANGE: &str = "bigint out of range";
pub const FLOAT_OVERFLOW: &str = "value out of range: overflow";
const NUMERIC_OVERFLOW: &str = "value overflows numeric format";

/// Binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl ArithOp {
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
        }
    }
}

/// Arithmetic with numeric promotion Int -> Numeric -> Float; overflow and division by zero
/// are errors, never panics or silent wraps.
pub fn arith(op: ArithOp, a: &Value, b: &Value) -> Result<Value> {
    use Value::*;
    if a.is_null() || b.is_null() {
        return Ok(Null);
    }
    let mismatch = || {
        err(
            SqlState::UndefinedFunction,
            format!("operator does not exist: {} {} {}", a.type_name(), op.symbol(), b.type_name()),
        )
    };
    match (a, b) {
        (Int(x), Int(y)) => {
            let r = match op {
                ArithOp::Add => x.checked_add(*y),
                ArithOp::Sub => x.checked_sub(*y),
                ArithOp::Mul => x.checked_mul(*y),
                ArithOp::Div | ArithOp::Mod if *y == 0 => return err(SqlState::DivisionByZero, "division by zero"),
                ArithOp::Div => x.checked_div(*y),
                ArithOp::Mod => x.checked_rem(*y),
            };
            r.map(Int).ok_or_else(|| out_of_range(BIGINT_RANGE))
        }
        (Float(_), _) | (_, Float(_)) => {
            let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) else { return mismatch() };
            let r = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div | ArithOp::Mod if y == 0.0 => return err(SqlState::DivisionByZero, "division by zero"),
                ArithOp::Div => x / y,
                ArithOp::Mod => x % y,
            };
            if r.is_finite() {
                Ok(Float(r))
            } else {
                Err(out_of_range(FLOAT_OVERFLOW))
            }
        }
        (Date(d), Int(n)) if matches!(op, ArithOp::Add | ArithOp::Sub) => {
            let n = i32::try_from(*n).map_err(|_| out_of_range("date out of range"))?;
            let r = if op == ArithOp::Add { d.checked_add(n) } else { d.checked_sub(n) };
            r.filter(|r| (-719_162..=2_932_896).contains(r)).map(Date).ok_or_else(|| out_of_range("date out of range"))
        }
        (Int(n), Date(d)) if op == ArithOp::Add => arith(op, &Date(*d), &Int(*n)),
        (Date(x), Date(y)) if op == ArithOp::Sub => Ok(Int(i64::from(*x) - i64::from(*y))),
        (Date(_) | Timestamp(_) | TimestampTz(_) | Interval(_), _) | (_, Interval(_)) => {
            crate::interval::arith(op, a, b)?.map_or_else(mismatch, Ok)
        }
        (Int(_) | Numeric(_), Int(_) | Numeric(_)) => {
            let (Some(x), Some(y)) = (as_decimal(a), as_decimal(b)) else { return mismatch() };
            let r = match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                ArithOp::Div | ArithOp::Mod if y.is_zero() => return err(SqlState::DivisionByZero, "division by zero"),
                ArithOp::Div => x.checked_div(y),
                ArithOp::Mod => x.checked_rem(y),
            };
            r.map(Numeric).ok_or_else(|| out_of_range(NUMERIC_OVERFLOW))
        }
        _ => mismatch(),
    }
}

pub fn as_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from(*i)),
        Value::Numeric(d) => Some(*d),
        Value::Float(f) => Decimal::from_f64(*f),
        _ => None,
    }
}

pub fn negate(v: &Value) -> Result<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(|| out_of_range(BIGINT_RANGE)),
        Value::Numeric(d) => Ok(Value::Numeric(-*d)),
        Value::Float(f) => Ok(Value::Float(-*f)),
        Value::Interval(i) => i.checked_neg().map(Value::Interval),
        other => err(SqlState::UndefinedFunction, format!("operator does not exist: -{}", other.type_name())),
    }
}

/// Declared size limits of a column type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeLimits {
    /// VARCHAR(n) / CHAR(n) length in characters.
    pub max_len: Option<u32>,
    /// NUMERIC(precision, scale).
    pub numeric: Option<(u32, u32)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_numeric_order_is_total() {
        let big = 1i64 << 53;
        let mut values = vec![
            Value::Int(big + 1),
            Value::Float(big as f64),
            Value::Int(big),
            Value::Numeric(Decimal::from(big) + Decimal::new(5, 1)),
            Value::Float(-0.0),
            Value::Int(0),
            Value::Numeric(Decimal::new(1, 1)),
            Value::Float(0.1),
        ];
        values.sort_by(total_cmp);
        for w in values.windows(2) {
            assert_ne!(total_cmp(&w[0], &w[1]), Ordering::Greater);
        }
        for a in &values {
            for b in &values {
                for c in &values {
                    if total_cmp(a, b) != Ordering::Greater && total_cmp(b, c) != Ordering::Greater {
                        assert_ne!(total_cmp(a, c), Ordering::Greater, "{a:?} {b:?} {c:?}");
                    }
                }
            }
        }
        assert_eq!(Value::Int(1), Value::Numeric(Decimal::new(100, 2)));
        assert_eq!(Value::Int(1), Value::Float(1.0));
    }

    #[test]
    fn arithmetic_never_wraps() {
        assert_eq!(
            arith(ArithOp::Add, &Value::Int(i64::MAX), &Value::Int(1)).map_err(|e| e.state),
            Err(SqlState::NumericValueOutOfRange)
        );
        assert_eq!(
            arith(ArithOp::Div, &Value::Int(i64::MIN), &Value::Int(-1)).map_err(|e| e.state),
            Err(SqlState::NumericValueOutOfRange)
        );
        assert_eq!(
            arith(ArithOp::Mod, &Value::Int(1), &Value::Int(0)).map_err(|e| e.state),
            Err(SqlState::DivisionByZero)
        );
        assert_eq!(
            arith(ArithOp::Mul, &Value::Float(1e300), &Value::Float(1e300)).map_err(|e| e.state),
            Err(SqlState::NumericValueOutOfRange)
        );
        assert_eq!(
            arith(ArithOp::Add, &Value::Int(1), &Value::Numeric(Decimal::new(15, 1))).ok(),
            Some(Value::Numeric(Decimal::new(25, 1)))
        );
    }

    #[test]
    fn implicit_casts_follow_pg_cast() {
        use SqlType::*;
        assert!(
            Int2.implicitly_casts_to(Float)
                && Numeric.implicitly_casts_to(Float4)
                && !Float4.implicitly_casts_to(Numeric)
        );
        assert!(!Int.implicitly_casts_to(Int4), "narrowing is an assignment cast");
        assert!(
            Char.implicitly_casts_to(Varchar) && Varchar.implicitly_casts_to(Char) && Text.implicitly_casts_to(Char)
        );
        assert!(Date.implicitly_casts_to(Timestamp) && !Timestamp.implicitly_casts_to(Date));
        assert!(!Bool.implicitly_casts_to(Int4) && !Int4.implicitly_casts_to(Text));
    }

    #[test]
    fn dates_compare_with_timestamps_and_not_with_text() {
        let midnight = Value::Timestamp(temporal::date_timestamp(10));
        assert_eq!(sql_cmp(&Value::Date(10), &midnight).ok(), Some(Some(Ordering::Equal)));
        assert_eq!(sql_cmp(&Value::Timestamp(1), &Value::Date(0)).ok(), Some(Some(Ordering::Greater)));
        assert_eq!(
            sql_cmp(&Value::Text("1970-01-01".into()), &Value::Date(0)).err().map(|e| e.state),
            Some(SqlState::UndefinedFunction)
        );
    }
}
