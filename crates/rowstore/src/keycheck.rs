//! Is a byte string the primary-key encoding of some values of the table's key types?
//!
//! A deletion carries only a key, so this is the only check it gets. The key is decoded per
//! primary-key column type (`docs/sql.md`, "Primary-key and index encoding") and re-encoded
//! with the engine's own encoder; it is accepted only if the bytes round-trip, which rejects
//! wrong tags, truncated or trailing bytes, bad escapes, invalid UTF-8, NULL key columns and
//! non-canonical forms (negative zero, numeric trailing zeros).

use pistou_types::keycode::encode_key;
use pistou_types::{SqlType, TableSchema, Value};

/// True if `key` is the canonical encoding of a primary-key tuple of `schema`.
pub(crate) fn is_primary_key(schema: &TableSchema, key: &[u8]) -> bool {
    let mut values = Vec::with_capacity(schema.primary_key.len());
    let mut rest = key;
    for &position in &schema.primary_key {
        let Some(column) = schema.columns.get(position) else { return false };
        let Some((value, tail)) = decode_value(column.ty, rest) else { return false };
        values.push(value);
        rest = tail;
    }
    rest.is_empty() && encode_key(values.iter()) == key
}

fn decode_value(ty: SqlType, bytes: &[u8]) -> Option<(Value, &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    // Keys hold runtime values: SMALLINT/INTEGER are ints, REAL a float, VARCHAR/CHAR text.
    Some(match (ty.storage(), tag) {
        (SqlType::Bool, 0x02) => {
            let (&b, rest) = rest.split_first()?;
            (Value::Bool(b != 0), rest)
        }
        (SqlType::Int, 0x03) => {
            let (v, rest) = take_u64(rest)?;
            (Value::Int((v ^ (1 << 63)) as i64), rest)
        }
        (SqlType::Float, 0x04) => {
            let (v, rest) = take_u64(rest)?;
            // Positive floats were stored with the sign bit flipped, negative ones inverted.
            let bits = if v >> 63 == 1 { v ^ (1 << 63) } else { !v };
            (Value::Float(f64::from_bits(bits)), rest)
        }
        (SqlType::Numeric, 0x05) => return decode_numeric(rest),
        (SqlType::Text, 0x06) => {
            let (raw, rest) = unescape(rest)?;
            (Value::Text(String::from_utf8(raw).ok()?), rest)
        }
        (SqlType::Bytes, 0x07) => {
            let (raw, rest) = unescape(rest)?;
            (Value::Bytes(raw), rest)
        }
        (SqlType::Date, 0x08) => {
            let (head, rest) = split(rest, 4)?;
            let v = u32::from_be_bytes(head.try_into().ok()?);
            (Value::Date((v ^ (1 << 31)) as i32), rest)
        }
        (SqlType::Timestamp, 0x09) => {
            let (v, rest) = take_u64(rest)?;
            (Value::Timestamp((v ^ (1 << 63)) as i64), rest)
        }
        (SqlType::TimestampTz, 0x0A) => {
            let (v, rest) = take_u64(rest)?;
            (Value::TimestampTz((v ^ (1 << 63)) as i64), rest)
        }
        // The key holds the length only: any interval of that length re-encodes to it.
        (SqlType::Interval, 0x0B) => {
            let (head, rest) = split(rest, 16)?;
            let span = (u128::from_be_bytes(head.try_into().ok()?) ^ (1 << 127)) as i128;
            (Value::Interval(pistou_types::interval::Interval::with_span(span)?), rest)
        }
        _ => return None,
    })
}

fn split(bytes: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    (bytes.len() >= n).then(|| bytes.split_at(n))
}

fn take_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = split(bytes, 8)?;
    Some((u64::from_be_bytes(head.try_into().ok()?), rest))
}

/// Text/bytea body: `00` is escaped as `00 FF`, the terminator is `00 01`.
fn unescape(bytes: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match *bytes.get(i)? {
            0x00 => match *bytes.get(i + 1)? {
                0xFF => out.push(0),
                0x01 => return Some((out, bytes.get(i + 2..)?)),
                _ => return None,
            },
            b => {
                out.push(b);
                i += 1;
                continue;
            }
        }
        i += 2;
    }
}

/// Numeric body: sign `01`/`02`/`03`; non-zero: 2-byte biased decimal exponent, one byte per
/// digit (`digit + 1`), terminator `00`, everything after the sign inverted for negatives.
fn decode_numeric(bytes: &[u8]) -> Option<(Value, &[u8])> {
    // A 96-bit mantissa has at most 29 digits and a scale of at most 28; anything far outside
    // cannot be a decimal, and bounding it keeps a hostile exponent from building a huge string.
    const MAX_DIGITS: usize = 29;
    const MAX_EXPONENT: i32 = 40;
    let (&sign, rest) = bytes.split_first()?;
    let negative = match sign {
        0x02 => return Some((Value::Numeric(parse_decimal("0")?), rest)),
        0x01 => true,
        0x03 => false,
        _ => return None,
    };
    let plain = |b: u8| if negative { !b } else { b };
    let (exp, rest) = split(rest, 2)?;
    let exponent = i32::from(u16::from_be_bytes([plain(exp[0]), plain(exp[1])])) - 0x8000;
    let mut digits = String::new();
    let mut i = 0;
    let rest = loop {
        let b = plain(*rest.get(i)?);
        if b == 0 {
            break rest.get(i + 1..)?;
        }
        if !(1..=10).contains(&b) || digits.len() >= MAX_DIGITS {
            return None;
        }
        digits.push(char::from(b'0' + b - 1));
        i += 1;
    };
    if digits.is_empty() || exponent.abs() > MAX_EXPONENT {
        return None;
    }
    // value = 0.d1d2d3... × 10^exponent
    let n = digits.len() as i32;
    let magnitude = if exponent <= 0 {
        format!("0.{}{digits}", "0".repeat(exponent.unsigned_abs() as usize))
    } else if exponent < n {
        let (int, frac) = digits.split_at(exponent as usize);
        format!("{int}.{frac}")
    } else {
        format!("{digits}{}", "0".repeat((exponent - n) as usize))
    };
    let text = if negative { format!("-{magnitude}") } else { magnitude };
    Some((Value::Numeric(parse_decimal(&text)?), rest))
}

/// Parses an exact decimal; the type comes from `Value::Numeric`, so this crate needs no
/// direct dependency on the decimal crate.
fn parse_decimal<D: std::str::FromStr>(text: &str) -> Option<D> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pistou_types::interval::Interval;
    use pistou_types::Column;

    fn schema(types: &[SqlType]) -> TableSchema {
        let columns = types
            .iter()
            .enumerate()
            .map(|(i, &ty)| Column {
                name: format!("c{i}"),
                ty,
                limits: Default::default(),
                nullable: false,
                default: None,
                generated: None,
                volatile_default: None,
            })
            .collect();
        TableSchema {
            name: "t".into(),
            id: 0,
            columns,
            primary_key: (0..types.len()).collect(),
            indexes: vec![],
            constraints: Default::default(),
            stored_as: None,
        }
    }

    fn numeric(s: &str) -> Value {
        Value::Numeric(parse_decimal(s).unwrap_or_else(|| panic!("bad decimal {s}")))
    }

    #[test]
    fn every_encoded_value_is_accepted() {
        let samples: Vec<(SqlType, Vec<Value>)> = vec![
            (SqlType::Bool, vec![Value::Bool(false), Value::Bool(true)]),
            (
                SqlType::Int,
                vec![Value::Int(i64::MIN), Value::Int(-1), Value::Int(0), Value::Int(42), Value::Int(i64::MAX)],
            ),
            (
                SqlType::Float,
                vec![
                    Value::Float(f64::NEG_INFINITY),
                    Value::Float(-2.5),
                    Value::Float(0.0),
                    Value::Float(1e-300),
                    Value::Float(f64::MAX),
                ],
            ),
            (
                SqlType::Numeric,
                [
                    "0",
                    "1",
                    "-1",
                    "1.5",
                    "-12.25",
                    "100",
                    "0.0001",
                    "-0.000000000000000000000000001",
                    "79228162514264337593543950335",
                    "123.4500",
                ]
                .iter()
                .map(|s| numeric(s))
                .collect(),
            ),
            (SqlType::Text, vec![Value::Text(String::new()), Value::Text("a\0b".into()), Value::Text("héllo".into())]),
            (SqlType::Bytes, vec![Value::Bytes(vec![]), Value::Bytes(vec![0, 0xFF, 1, 0])]),
            (SqlType::Date, vec![Value::Date(i32::MIN), Value::Date(0), Value::Date(19000)]),
            (SqlType::Timestamp, vec![Value::Timestamp(i64::MIN), Value::Timestamp(1_700_000_000_000_000)]),
            (SqlType::TimestampTz, vec![Value::TimestampTz(-1), Value::TimestampTz(1_700_000_000_000_000)]),
            (
                SqlType::Interval,
                [(0, 0, 0), (1, -3, 7), (-1, 30, -5), (i32::MAX, i32::MAX, i64::MAX), (i32::MIN, i32::MIN, i64::MIN)]
                    .into_iter()
                    .map(|(months, days, micros)| Value::Interval(Interval { months, days, micros }))
                    .collect(),
            ),
        ];
        for (ty, values) in samples {
            let s = schema(&[ty]);
            for v in values {
                assert!(is_primary_key(&s, &encode_key([&v])), "{ty:?} {v:?}");
            }
        }
        let s = schema(&[SqlType::Text, SqlType::Int]);
        assert!(is_primary_key(&s, &encode_key([&Value::Text("x".into()), &Value::Int(3)])));
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let int = schema(&[SqlType::Int]);
        let good = encode_key([&Value::Int(7)]);
        assert!(!is_primary_key(&int, &[]));
        assert!(!is_primary_key(&int, &good[..5]), "truncated");
        assert!(!is_primary_key(&int, &[good.as_slice(), &[0]].concat()), "trailing byte");
        assert!(!is_primary_key(&int, &encode_key([&Value::Null])), "NULL key column");
        assert!(!is_primary_key(&int, &encode_key([&Value::Text("7".into())])), "wrong type");
        let float = schema(&[SqlType::Float]);
        let negative_zero = [[0x04u8].as_slice(), &(!(1u64 << 63)).to_be_bytes()].concat();
        assert!(!is_primary_key(&float, &negative_zero), "-0 is stored as +0");
        let text = schema(&[SqlType::Text]);
        assert!(!is_primary_key(&text, &[0x06, b'a', 0x00, 0x02]), "bad escape");
        assert!(!is_primary_key(&text, &[0x06, 0xFF, 0x00, 0x01]), "invalid UTF-8");
        assert!(!is_primary_key(&text, &[0x06, b'a']), "unterminated");
        let bool_ = schema(&[SqlType::Bool]);
        assert!(!is_primary_key(&bool_, &[0x02, 0x05]));
        let num = schema(&[SqlType::Numeric]);
        let one = encode_key([&numeric("1")]);
        let mut trailing_zero = one.clone();
        trailing_zero.insert(trailing_zero.len() - 1, 0x01);
        assert!(!is_primary_key(&num, &trailing_zero), "digit string must be trimmed");
        assert!(!is_primary_key(&num, &[0x05, 0x03, 0xFF, 0xFF, 0x02, 0x00]), "absurd exponent");
        assert!(!is_primary_key(&num, &[0x05, 0x03, 0x80, 0x01, 0x00]), "no digits");
        assert!(!is_primary_key(&num, &[0x05, 0x04]), "bad sign");
        let interval = schema(&[SqlType::Interval]);
        let longest = Interval { months: i32::MAX, days: i32::MAX, micros: i64::MAX }.span();
        let too_long = [[0x0Bu8].as_slice(), &((longest + 1) as u128 ^ (1 << 127)).to_be_bytes()].concat();
        assert!(!is_primary_key(&interval, &too_long), "longer than any interval");
        let month = encode_key([&Value::Interval(Interval { months: 1, days: 0, micros: 0 })]);
        assert!(!is_primary_key(&interval, &month[..16]), "truncated interval");
    }

    /// A key holds an interval's length, so `1 mon` and `30 days` are one key, as they are
    /// one value in PostgreSQL's comparisons.
    #[test]
    fn an_interval_key_is_read_back_as_an_interval_of_its_length() {
        let month = Interval { months: 1, days: 0, micros: 0 };
        let days = Interval { months: 0, days: 30, micros: 0 };
        assert_eq!(encode_key([&Value::Interval(month)]), encode_key([&Value::Interval(days)]));
        for span in [0, 1, -1, month.span() * 7 + 3, -(month.span() * 5) - 11] {
            let read = Interval::with_span(span).expect("an interval of that length");
            assert_eq!(read.span(), span);
        }
    }
}
