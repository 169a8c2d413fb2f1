//! Order-preserving, self-delimiting byte encoding of key values.
//!
//! For two values `a`, `b` of the same column type, `encode(a) < encode(b)` (bytewise) iff
//! `a < b`, and a composite key is the concatenation of its encoded columns, so a range of
//! keys sharing a prefix of column values is a byte range. Layout per value (tag byte first):
//!
//! | value    | bytes                                                                      |
//! |----------|----------------------------------------------------------------------------|
//! | NULL     | `00`                                                                       |
//! | bool     | `02`, `00`/`01`                                                            |
//! | int      | `03`, 8 bytes big-endian of `i ^ i64::MIN` (sign bit flipped)              |
//! | float    | `04`, 8 bytes: bits with sign bit flipped if positive, all bits flipped if negative (-0 = +0) |
//! | numeric  | `05`, sign `01` (neg) / `02` (zero) / `03` (pos); for non-zero: biased 2-byte decimal exponent, one byte per significant digit (`digit + 1`), terminator `00`; all bytes after the sign byte are inverted for negatives |
//! | text     | `06`, UTF-8 bytes with `00` escaped as `00 FF`, terminator `00 01`         |
//! | bytes    | `07`, same escaping as text                                                |
//! | date     | `08`, 4 bytes big-endian of the day number with its sign bit flipped       |
//! | timestamp| `09`, 8 bytes big-endian of the microsecond count with its sign bit flipped |
//! | timestamptz | `0A`, as timestamp                                                      |
//! | interval | `0B`, 16 bytes big-endian of its length in microseconds (a month 30 days) with its sign bit flipped |

use crate::types::Value;
use rust_decimal::Decimal;

pub fn encode_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0x00),
        Value::Bool(b) => out.extend([0x02, u8::from(*b)]),
        Value::Int(i) => {
            out.push(0x03);
            out.extend(((*i as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::Float(f) => {
            out.push(0x04);
            let f = if *f == 0.0 { 0.0 } else { *f };
            let bits = f.to_bits();
            let ordered = if bits >> 63 == 0 { bits ^ (1 << 63) } else { !bits };
            out.extend(ordered.to_be_bytes());
        }
        Value::Numeric(d) => {
            out.push(0x05);
            encode_decimal(out, *d);
        }
        Value::Text(s) => {
            out.push(0x06);
            encode_escaped(out, s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(0x07);
            encode_escaped(out, b);
        }
        Value::Date(d) => {
            out.push(0x08);
            out.extend(((*d as u32) ^ (1 << 31)).to_be_bytes());
        }
        Value::Timestamp(t) => {
            out.push(0x09);
            out.extend(((*t as u64) ^ (1 << 63)).to_be_bytes());
        }
        Value::TimestampTz(t) => {
            out.push(0x0A);
            out.extend(((*t as u64) ^ (1 << 63)).to_be_bytes());
        }
        // By length (`Interval::span`), so `1 mon` and `30 days` share a key, as they are equal.
        Value::Interval(i) => {
            out.push(0x0B);
            out.extend(((i.span() as u128) ^ (1 << 127)).to_be_bytes());
        }
    }
}

fn encode_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        if b == 0 {
            out.extend([0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
    out.extend([0x00, 0x01]);
}

fn encode_decimal(out: &mut Vec<u8>, d: Decimal) {
    if d.is_zero() {
        out.push(0x02);
        return;
    }
    let negative = d.is_sign_negative();
    out.push(if negative { 0x01 } else { 0x03 });
    let normalized = d.abs().normalize();
    let digits = normalized.mantissa().unsigned_abs().to_string();
    // value = 0.d1d2d3... * 10^exponent
    let exponent = digits.len() as i32 - normalized.scale() as i32;
    let start = out.len();
    out.extend(((exponent + 0x8000) as u16).to_be_bytes());
    out.extend(digits.trim_end_matches('0').bytes().map(|c| c - b'0' + 1));
    out.push(0x00);
    if negative {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

/// Encodes a composite key.
pub fn encode_key<'a>(values: impl IntoIterator<Item = &'a Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        encode_value(&mut out, v);
    }
    out
}

/// The smallest byte string greater than every string starting with `prefix`
/// (None when no such string exists, i.e. the prefix is all `FF`).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::total_cmp;

    fn enc(v: &Value) -> Vec<u8> {
        encode_key([v])
    }

    #[test]
    fn order_is_preserved_within_each_type() {
        let dec = |s: &str| Value::Numeric(s.parse().unwrap_or_default());
        let groups: Vec<Vec<Value>> = vec![
            vec![Value::Int(i64::MIN), Value::Int(-5), Value::Int(0), Value::Int(7), Value::Int(i64::MAX)],
            vec![
                Value::Float(f64::NEG_INFINITY),
                Value::Float(-2.5),
                Value::Float(-0.0),
                Value::Float(1e-9),
                Value::Float(3.0),
            ],
            vec![
                dec("-100"),
                dec("-12.5"),
                dec("-12"),
                dec("-0.001"),
                dec("0"),
                dec("0.001"),
                dec("0.5"),
                dec("1"),
                dec("1.05"),
                dec("1.5"),
                dec("10"),
                dec("99.99"),
                dec("100"),
            ],
            vec![
                Value::Text(String::new()),
                Value::Text("a".into()),
                Value::Text("a\0".into()),
                Value::Text("a\0b".into()),
                Value::Text("ab".into()),
                Value::Text("b".into()),
            ],
        ];
        for g in groups {
            for a in &g {
                for b in &g {
                    assert_eq!(enc(a).cmp(&enc(b)), total_cmp(a, b), "{a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn composite_keys_compare_column_by_column() {
        let k = |a: &str, b: i64| encode_key([&Value::Text(a.into()), &Value::Int(b)]);
        assert!(k("a", 5) < k("ab", 1));
        assert!(k("a", 1) < k("a", 2));
        let p = encode_key([&Value::Text("a".into())]);
        let succ = prefix_successor(&p).unwrap_or_default();
        assert!(k("a", i64::MAX) < succ && k("a", i64::MIN) > p && k("ab", 0) > succ);
    }

    #[test]
    fn equal_decimals_with_different_scales_encode_equal() {
        let a = Value::Numeric("1.50".parse().unwrap_or_default());
        let b = Value::Numeric("1.5".parse().unwrap_or_default());
        assert_eq!(enc(&a), enc(&b));
    }
}
