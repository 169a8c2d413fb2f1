//! The one place that maps Pistou SQL types to PostgreSQL types: OIDs, sizes, and the
//! text and binary wire encodings of values (results) and parameters. A new `SqlType`
//! needs a line in `pg_type`, `sql_type_of_oid`, and the two codecs below.

use pistou_sql::types::cast;
use pistou_sql::{temporal, SqlError, SqlState, SqlType, Value};
use rust_decimal::Decimal;

// The built-in type OIDs live with the system catalog, which the SQL engine computes.
use pistou_sql::system::{type_oid, OID_INTERVAL, OID_JSON, OID_JSONB, OID_UUID};
pub use pistou_sql::system::{
    OID_BOOL, OID_BPCHAR, OID_BYTEA, OID_DATE, OID_FLOAT4, OID_FLOAT8, OID_INT2, OID_INT4, OID_INT8, OID_NAME,
    OID_NUMERIC, OID_OID, OID_TEXT, OID_TIMESTAMP, OID_TIMESTAMPTZ, OID_UNKNOWN, OID_VARCHAR,
};

/// Days from 1970-01-01 (Pistou's epoch) to 2000-01-01 (PostgreSQL's binary epoch).
const PG_EPOCH_DAYS: i32 = 10_957;
const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * 86_400_000_000;

/// What a column or parameter looks like on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgType {
    pub oid: u32,
    /// `typlen`: bytes of the binary form, -1 for variable length.
    pub size: i16,
    /// The name `format_type` / `\d` shows.
    pub name: &'static str,
}

pub const TEXT: PgType = PgType { oid: OID_TEXT, size: -1, name: "text" };

/// The PostgreSQL type of a Pistou type (None, i.e. unknown until run time, is sent as text).
pub fn pg_type(ty: Option<SqlType>) -> PgType {
    match ty {
        None => TEXT,
        Some(SqlType::Bool) => PgType { oid: OID_BOOL, size: 1, name: "boolean" },
        Some(SqlType::Int2) => PgType { oid: OID_INT2, size: 2, name: "smallint" },
        Some(SqlType::Int4) => PgType { oid: OID_INT4, size: 4, name: "integer" },
        Some(SqlType::Int) => PgType { oid: OID_INT8, size: 8, name: "bigint" },
        Some(SqlType::Numeric) => PgType { oid: OID_NUMERIC, size: -1, name: "numeric" },
        Some(SqlType::Float4) => PgType { oid: OID_FLOAT4, size: 4, name: "real" },
        Some(SqlType::Float) => PgType { oid: OID_FLOAT8, size: 8, name: "double precision" },
        Some(SqlType::Text) => TEXT,
        Some(SqlType::Varchar) => PgType { oid: OID_VARCHAR, size: -1, name: "character varying" },
        Some(SqlType::Char) => PgType { oid: OID_BPCHAR, size: -1, name: "character" },
        Some(SqlType::Bytes) => PgType { oid: OID_BYTEA, size: -1, name: "bytea" },
        Some(SqlType::Date) => PgType { oid: OID_DATE, size: 4, name: "date" },
        Some(SqlType::Timestamp) => PgType { oid: OID_TIMESTAMP, size: 8, name: "timestamp without time zone" },
        Some(SqlType::TimestampTz) => PgType { oid: OID_TIMESTAMPTZ, size: 8, name: "timestamp with time zone" },
        Some(SqlType::Json) => PgType { oid: OID_JSON, size: -1, name: "json" },
        Some(SqlType::Uuid) => PgType { oid: OID_UUID, size: 16, name: "uuid" },
        Some(SqlType::Interval) => PgType { oid: OID_INTERVAL, size: 16, name: "interval" },
        Some(SqlType::Jsonb) => PgType { oid: OID_JSONB, size: -1, name: "jsonb" },
        Some(t @ (SqlType::Int2Vector | SqlType::OidVector | SqlType::Array(_))) => {
            PgType { oid: type_oid(t), size: -1, name: t.pg_name() }
        }
    }
}

/// The Pistou type a client-declared parameter OID converts to (None: unknown or unsupported,
/// the statement's own inferred type decides).
pub fn sql_type_of_oid(oid: u32) -> Option<SqlType> {
    Some(match oid {
        OID_BOOL => SqlType::Bool,
        OID_INT2 => SqlType::Int2,
        OID_INT4 => SqlType::Int4,
        OID_INT8 | OID_OID => SqlType::Int,
        OID_NUMERIC => SqlType::Numeric,
        OID_FLOAT4 => SqlType::Float4,
        OID_FLOAT8 => SqlType::Float,
        OID_VARCHAR => SqlType::Varchar,
        OID_BPCHAR => SqlType::Char,
        OID_TEXT | OID_NAME => SqlType::Text,
        OID_BYTEA => SqlType::Bytes,
        OID_DATE => SqlType::Date,
        OID_TIMESTAMP => SqlType::Timestamp,
        OID_TIMESTAMPTZ => SqlType::TimestampTz,
        OID_UUID => SqlType::Uuid,
        OID_INTERVAL => SqlType::Interval,
        OID_JSONB => SqlType::Jsonb,
        _ => return None,
    })
}

fn invalid(what: &str, detail: impl std::fmt::Display) -> SqlError {
    SqlError::new(SqlState::InvalidTextRepresentation, format!("invalid input for type {what}: {detail}"))
}

fn binary_error(what: &str) -> SqlError {
    SqlError::new(SqlState::ProtocolViolation, format!("incorrect binary data format for type {what}"))
}

/// Encodes one result value for a column described as `ty`, in text or binary format.
/// A value of another type than the column's is converted first (the column type was
/// announced before the rows).
pub fn encode_value(value: &Value, ty: Option<SqlType>, binary: bool) -> Result<Option<Vec<u8>>, SqlError> {
    if value.is_null() {
        return Ok(None);
    }
    let converted;
    // Declared types share a runtime form (INTEGER and BIGINT are both `Value::Int`): only
    // a value of another form needs converting.
    let value = match ty {
        Some(t) if value.sql_type().map(SqlType::storage) != Some(t.storage()) => {
            converted = cast(value, t)?;
            &converted
        }
        _ => value,
    };
    if !binary || ty.is_none() {
        return Ok(Some(text_of(value, ty).into_bytes()));
    }
    let narrow = |what: &str| SqlError::new(SqlState::NumericValueOutOfRange, format!("{what} out of range"));
    let mut out = Vec::new();
    if let Some(t @ (SqlType::Int2Vector | SqlType::OidVector | SqlType::Array(_))) = ty {
        encode_array(value, t, &mut out)?;
        return Ok(Some(out));
    }
    if let (Some(SqlType::Uuid), Value::Text(s)) = (ty, value) {
        let bytes = pistou_sql::uuid::parse(s).ok_or_else(|| binary_error("uuid"))?;
        return Ok(Some(bytes.to_vec()));
    }
    match value {
        Value::Null => return Ok(None),
        // jsonb's binary form is a version byte (1) and the text.
        Value::Text(s) if ty == Some(SqlType::Jsonb) => {
            out.push(1);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Int(i) => match ty {
            Some(SqlType::Int2) => {
                out.extend_from_slice(&i16::try_from(*i).map_err(|_| narrow("smallint"))?.to_be_bytes())
            }
            Some(SqlType::Int4) => {
                out.extend_from_slice(&i32::try_from(*i).map_err(|_| narrow("integer"))?.to_be_bytes())
            }
            _ => out.extend_from_slice(&i.to_be_bytes()),
        },
        // REAL values are exactly representable as f32 (the engine rounds on assignment).
        Value::Float(f) if ty == Some(SqlType::Float4) => out.extend_from_slice(&(*f as f32).to_be_bytes()),
        Value::Float(f) => out.extend_from_slice(&f.to_be_bytes()),
        Value::Numeric(d) => encode_numeric(d, &mut out),
        Value::Text(s) => out.extend_from_slice(s.as_bytes()),
        Value::Bytes(b) => out.extend_from_slice(b),
        Value::Date(d) => out.extend_from_slice(&d.saturating_sub(PG_EPOCH_DAYS).to_be_bytes()),
        Value::Timestamp(t) | Value::TimestampTz(t) => {
            out.extend_from_slice(&t.saturating_sub(PG_EPOCH_MICROS).to_be_bytes())
        }
        // PostgreSQL's layout: microseconds, days, months.
        Value::Interval(i) => {
            out.extend_from_slice(&i.micros.to_be_bytes());
            out.extend_from_slice(&i.days.to_be_bytes());
            out.extend_from_slice(&i.months.to_be_bytes());
        }
    }
    Ok(Some(out))
}

/// PostgreSQL's text output of a value of a column typed `ty`.
pub fn text_of(value: &Value, ty: Option<SqlType>) -> String {
    match value {
        Value::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
        Value::Float(f) if f.is_nan() => "NaN".to_string(),
        Value::Float(f) if f.is_infinite() => (if *f > 0.0 { "Infinity" } else { "-Infinity" }).to_string(),
        other => pistou_sql::types::output_text(other, ty),
    }
}

/// Decodes one bound parameter. `oid` is what the client declared (0: unspecified);
/// `inferred` is the type the statement gives the parameter.
pub fn decode_param(bytes: &[u8], oid: u32, inferred: Option<SqlType>, binary: bool) -> Result<Value, SqlError> {
    let declared = sql_type_of_oid(oid);
    if binary {
        return decode_binary(bytes, oid, declared.or(inferred));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("text", "not valid UTF-8"))?;
    match declared.or(inferred) {
        None | Some(SqlType::Text | SqlType::Varchar | SqlType::Char) => Ok(Value::Text(text.to_string())),
        Some(SqlType::Bytes) => decode_bytea_text(text),
        Some(SqlType::Timestamp) => Ok(Value::Timestamp(parse_timestamp_text(text)?)),
        Some(SqlType::TimestampTz) => temporal::parse_timestamptz(text)
            .map(Value::TimestampTz)
            .ok_or_else(|| invalid("timestamp with time zone", format!("\"{text}\""))),
        Some(t) => cast(&Value::Text(text.to_string()), t),
    }
}

/// Timestamps as drivers send them: ISO text, optionally with a `T` separator or a UTC
/// offset (only +00 is exact for a zone-less timestamp; others are rejected).
fn parse_timestamp_text(text: &str) -> Result<i64, SqlError> {
    let trimmed = text.trim().replacen('T', " ", 1);
    let without_zone = ["+00:00", "+00", "Z", "z"].iter().find_map(|z| trimmed.strip_suffix(z)).unwrap_or(&trimmed);
    temporal::parse_timestamp(without_zone.trim()).ok_or_else(|| invalid("timestamp", format!("\"{text}\"")))
}

fn decode_bytea_text(text: &str) -> Result<Value, SqlError> {
    match text.strip_prefix("\\x") {
        Some(hex) => {
            if hex.len() % 2 != 0 {
                return Err(invalid("bytea", "odd number of hex digits"));
            }
            let digits = hex.as_bytes();
            let mut out = Vec::with_capacity(hex.len() / 2);
            for pair in digits.chunks(2) {
                let s = std::str::from_utf8(pair).map_err(|_| invalid("bytea", "bad hex digit"))?;
                out.push(u8::from_str_radix(s, 16).map_err(|_| invalid("bytea", "bad hex digit"))?);
            }
            Ok(Value::Bytes(out))
        }
        None => Ok(Value::Bytes(text.as_bytes().to_vec())),
    }
}

fn fixed<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], SqlError> {
    bytes.try_into().map_err(|_| binary_error(what))
}

fn decode_binary(bytes: &[u8], oid: u32, ty: Option<SqlType>) -> Result<Value, SqlError> {
    // The declared OID fixes the binary layout; int2/int4/float4 are narrower than ours.
    Ok(match oid {
        OID_INT2 => Value::Int(i16::from_be_bytes(fixed(bytes, "smallint")?).into()),
        OID_INT4 => Value::Int(i32::from_be_bytes(fixed(bytes, "integer")?).into()),
        OID_OID => Value::Int(u32::from_be_bytes(fixed(bytes, "oid")?).into()),
        OID_FLOAT4 => Value::Float(f32::from_be_bytes(fixed(bytes, "real")?).into()),
        _ if ty == Some(SqlType::Jsonb) => match bytes.split_first() {
            Some((1, text)) => {
                let text = std::str::from_utf8(text).map_err(|_| invalid("jsonb", "not valid UTF-8"))?;
                cast(&Value::Text(text.to_string()), SqlType::Jsonb)?
            }
            _ => return Err(binary_error("jsonb")),
        },
        _ => match ty {
            Some(SqlType::Bool) => match bytes {
                [b] => Value::Bool(*b != 0),
                _ => return Err(binary_error("boolean")),
            },
            Some(SqlType::Int) => Value::Int(i64::from_be_bytes(fixed(bytes, "bigint")?)),
            Some(SqlType::Int2) => Value::Int(i16::from_be_bytes(fixed(bytes, "smallint")?).into()),
            Some(SqlType::Int4) => Value::Int(i32::from_be_bytes(fixed(bytes, "integer")?).into()),
            Some(SqlType::Float) => Value::Float(f64::from_be_bytes(fixed(bytes, "double precision")?)),
            Some(SqlType::Float4) => Value::Float(f32::from_be_bytes(fixed(bytes, "real")?).into()),
            Some(SqlType::Numeric) => Value::Numeric(decode_numeric(bytes)?),
            Some(SqlType::Bytes) => Value::Bytes(bytes.to_vec()),
            Some(SqlType::Uuid) => Value::Text(pistou_sql::uuid::format(&fixed(bytes, "uuid")?)),
            Some(SqlType::Interval) => {
                let raw: [u8; 16] = fixed(bytes, "interval")?;
                let (micros, rest) = raw.split_at(8);
                let (days, months) = rest.split_at(4);
                Value::Interval(pistou_sql::interval::Interval {
                    micros: i64::from_be_bytes(fixed(micros, "interval")?),
                    days: i32::from_be_bytes(fixed(days, "interval")?),
                    months: i32::from_be_bytes(fixed(months, "interval")?),
                })
            }
            Some(SqlType::Date) => {
                let days = i32::from_be_bytes(fixed(bytes, "date")?);
                Value::Date(days.checked_add(PG_EPOCH_DAYS).ok_or_else(|| binary_error("date"))?)
            }
            Some(SqlType::Timestamp) => {
                let micros = i64::from_be_bytes(fixed(bytes, "timestamp")?);
                Value::Timestamp(micros.checked_add(PG_EPOCH_MICROS).ok_or_else(|| binary_error("timestamp"))?)
            }
            Some(SqlType::TimestampTz) => {
                let micros = i64::from_be_bytes(fixed(bytes, "timestamptz")?);
                Value::TimestampTz(micros.checked_add(PG_EPOCH_MICROS).ok_or_else(|| binary_error("timestamptz"))?)
            }
            Some(
                SqlType::Text
                | SqlType::Varchar
                | SqlType::Char
                | SqlType::Json
                | SqlType::Jsonb
                | SqlType::Int2Vector
                | SqlType::OidVector
                | SqlType::Array(_),
            )
            | None => Value::Text(String::from_utf8(bytes.to_vec()).map_err(|_| invalid("text", "not valid UTF-8"))?),
        },
    })
}

/// PostgreSQL's binary array (also the vector types'): dimensions, a NULL flag, the
/// element type, each dimension's length and lower bound, then each element's length
/// (-1 for NULL) and binary form.
fn encode_array(value: &Value, ty: SqlType, out: &mut Vec<u8>) -> Result<(), SqlError> {
    let element = ty.element().unwrap_or(SqlType::Text);
    let items = pistou_sql::array::elements(value, ty)?;
    let count = i32::try_from(items.len()).map_err(|_| binary_error("array"))?;
    let lower = pistou_sql::array::lower_bound(ty) as i32;
    out.extend_from_slice(&i32::from(!items.is_empty()).to_be_bytes());
    out.extend_from_slice(&i32::from(items.iter().any(Value::is_null)).to_be_bytes());
    out.extend_from_slice(&type_oid(element).to_be_bytes());
    if !items.is_empty() {
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&lower.to_be_bytes());
    }
    for item in &items {
        match encode_value(item, Some(element), true)? {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                out.extend_from_slice(&i32::try_from(bytes.len()).map_err(|_| binary_error("array"))?.to_be_bytes());
                out.extend_from_slice(&bytes);
            }
        }
    }
    Ok(())
}

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;

/// PostgreSQL's binary NUMERIC: ndigits, weight, sign, dscale, then base-10000 digits.
fn encode_numeric(d: &Decimal, out: &mut Vec<u8>) {
    let scale = d.scale();
    let text = d.abs().to_string();
    let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
    let int_part = int_part.trim_start_matches('0');
    // Pad both parts to whole groups of four decimal digits.
    let int_pad = (4 - int_part.len() % 4) % 4;
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let int_digits = format!("{}{}", "0".repeat(int_pad), int_part);
    let frac_digits = format!("{}{}", frac_part, "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes().chunks(4).map(|c| c.iter().fold(0i16, |acc, b| acc * 10 + i16::from(b - b'0'))).collect()
    };
    let mut digits = group(&int_digits);
    let int_groups = digits.len() as i16;
    digits.extend(group(&frac_digits));
    // Strip leading zero groups (adjusting the weight) and trailing zero groups.
    let mut weight = int_groups - 1;
    let leading = digits.iter().take_while(|&&g| g == 0).count();
    digits.drain(..leading);
    weight -= leading as i16;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let sign = if d.is_sign_negative() && !digits.is_empty() { NUMERIC_NEG } else { NUMERIC_POS };
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in digits {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

fn decode_numeric(bytes: &[u8]) -> Result<Decimal, SqlError> {
    let err = || binary_error("numeric");
    let header = bytes.get(..8).ok_or_else(err)?;
    let word = |i: usize| i16::from_be_bytes([header[i], header[i + 1]]);
    let (ndigits, weight, sign, dscale) = (word(0), word(2), word(4) as u16, word(6));
    if ndigits < 0 || dscale < 0 || sign == NUMERIC_NAN || (sign != NUMERIC_POS && sign != NUMERIC_NEG) {
        return Err(err());
    }
    let body = bytes.get(8..).ok_or_else(err)?;
    if body.len() != ndigits as usize * 2 {
        return Err(err());
    }
    // Rebuild the decimal text: digit group k has place value 10000^(weight - k).
    let groups: Vec<i16> = body.chunks(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect();
    if groups.iter().any(|g| !(0..10_000).contains(g)) || weight.unsigned_abs() > 64 {
        return Err(err());
    }
    let mut int_text = String::new();
    let mut frac_text = String::new();
    for (k, g) in groups.iter().enumerate() {
        let place = weight - k as i16;
        if place >= 0 {
            int_text.push_str(&format!("{g:04}"));
        } else {
            frac_text.push_str(&format!("{g:04}"));
        }
    }
    // Groups between the last digit and the decimal point are implicit zeros.
    let last_place = weight - groups.len() as i16 + 1;
    if last_place > 0 {
        int_text.push_str(&"0000".repeat(last_place as usize));
    }
    // Groups between the decimal point and the first fractional digit are implicit zeros.
    if weight < -1 {
        frac_text.insert_str(0, &"0000".repeat((-1 - weight) as usize));
    }
    let int_text = if int_text.trim_start_matches('0').is_empty() {
        "0".to_string()
    } else {
        int_text.trim_start_matches('0').to_string()
    };
    let text = if frac_text.is_empty() { int_text } else { format!("{int_text}.{frac_text}") };
    let mut d: Decimal = text.parse().map_err(|_| err())?;
    if sign == NUMERIC_NEG {
        d.set_sign_negative(true);
    }
    d.rescale(dscale as u32);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_round_trip(s: &str) {
        let d: Decimal = s.parse().unwrap();
        let mut out = Vec::new();
        encode_numeric(&d, &mut out);
        let back = decode_numeric(&out).unwrap();
        assert_eq!(back, d, "{s}");
        assert_eq!(back.to_string(), d.to_string(), "{s}");
    }

    #[test]
    fn arrays_and_vectors_have_postgres_binary_form() {
        use pistou_sql::types::ArrayElem;
        let ty = SqlType::Array(ArrayElem::Int4);
        let out = encode_value(&Value::Text("{7,NULL}".into()), Some(ty), true).unwrap().unwrap();
        let mut expected = Vec::new();
        for word in [1i32, 1, 23, 2, 1, 4, 7, -1] {
            expected.extend_from_slice(&word.to_be_bytes());
        }
        assert_eq!(out, expected);
        let empty = encode_value(&Value::Text("{}".into()), Some(ty), true).unwrap().unwrap();
        assert_eq!(empty, [0i32, 0, 23].iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>());
        // int2vector: smallint elements, subscripts from 0.
        let vector = encode_value(&Value::Text("3 1".into()), Some(SqlType::Int2Vector), true).unwrap().unwrap();
        assert_eq!(&vector[..20], [1i32, 0, 21, 2, 0].iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>());
        assert_eq!(&vector[20..], [0, 0, 0, 2, 0, 3, 0, 0, 0, 2, 0, 1]);
        assert_eq!(pg_type(Some(ty)).oid, 1007);
        assert_eq!(pg_type(Some(SqlType::Json)).oid, OID_JSON);
        let text = encode_value(&Value::Text("{a,\"b c\"}".into()), Some(SqlType::Array(ArrayElem::Text)), false);
        assert_eq!(text.unwrap().unwrap(), b"{a,\"b c\"}");
    }

    #[test]
    fn numeric_binary_round_trips() {
        for s in [
            "0",
            "1",
            "-1",
            "12345.678",
            "0.0001",
            "0.00001234",
            "100000000",
            "-98765432109876.5",
            "3.14159",
            "10000",
            "0.50",
        ] {
            numeric_round_trip(s);
        }
    }

    #[test]
    fn numeric_binary_matches_postgres_layout() {
        // 12345.678 is [1, 2345, 6780] with weight 1, scale 3 in PostgreSQL.
        let mut out = Vec::new();
        encode_numeric(&"12345.678".parse().unwrap(), &mut out);
        assert_eq!(out, vec![0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1A, 0x7C]);
    }

    #[test]
    fn params_decode_by_declared_or_inferred_type() {
        assert_eq!(decode_param(b"42", OID_INT4, None, false).unwrap(), Value::Int(42));
        assert_eq!(decode_param(b"42", 0, Some(SqlType::Int), false).unwrap(), Value::Int(42));
        assert_eq!(decode_param(&7i32.to_be_bytes(), OID_INT4, Some(SqlType::Int), true).unwrap(), Value::Int(7));
        assert_eq!(decode_param(b"\\x0aff", OID_BYTEA, None, false).unwrap(), Value::Bytes(vec![10, 255]));
        assert_eq!(
            decode_param(b"2024-02-03T04:05:06", OID_TIMESTAMP, None, false).unwrap(),
            Value::Timestamp(temporal::parse_timestamp("2024-02-03 04:05:06").unwrap())
        );
        assert!(decode_param(b"abc", OID_INT8, None, false).is_err());
        assert!(decode_param(&[1, 2, 3], OID_INT8, None, true).is_err());
        assert!(decode_param(&[0xff, 0xfe], OID_TEXT, None, false).is_err());
    }

    #[test]
    fn dates_use_the_postgres_epoch_in_binary() {
        let day = temporal::parse_date("2000-01-02").unwrap();
        let out = encode_value(&Value::Date(day), Some(SqlType::Date), true).unwrap().unwrap();
        assert_eq!(out, 1i32.to_be_bytes().to_vec());
        assert_eq!(decode_param(&out, OID_DATE, None, true).unwrap(), Value::Date(day));
    }
}
