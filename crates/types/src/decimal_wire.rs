//! Serde form of `Value::Numeric`: the pair (mantissa: i128, scale: u32). rust_decimal's own
//! serde form is a string read back through `deserialize_any`, which postcard (the wire
//! codec) cannot decode; this form is compact, deterministic (the same decimal, including
//! its scale, always gives the same bytes) and validated on decoding, since it may come from
//! an untrusted peer.

use rust_decimal::Decimal;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    (d.mantissa(), d.scale()).serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    let (mantissa, scale) = <(i128, u32)>::deserialize(d)?;
    Decimal::try_from_i128_with_scale(mantissa, scale).map_err(|e| D::Error::custom(format!("invalid numeric: {e}")))
}

#[cfg(test)]
mod tests {
    use crate::types::Value;
    use rust_decimal::Decimal;

    #[test]
    fn numerics_round_trip_through_postcard() {
        let values = [
            Value::Numeric(Decimal::new(-12345, 3)),
            Value::Numeric(Decimal::new(150, 2)),
            Value::Numeric(Decimal::MAX),
            Value::Numeric(Decimal::MIN),
            Value::Numeric(Decimal::ZERO),
        ];
        for v in values {
            let bytes = postcard::to_allocvec(&v).expect("encode");
            let back: Value = postcard::from_bytes(&bytes).expect("decode");
            match (&v, &back) {
                (Value::Numeric(a), Value::Numeric(b)) => {
                    assert_eq!((a.mantissa(), a.scale()), (b.mantissa(), b.scale()), "scale is kept");
                }
                _ => panic!("not numeric: {back:?}"),
            }
            assert_eq!(postcard::to_allocvec(&back).expect("encode"), bytes, "deterministic");
        }
        let row = vec![Value::Int(1), Value::Numeric(Decimal::new(5, 1)), Value::Null];
        let back: Vec<Value> = postcard::from_bytes(&postcard::to_allocvec(&row).expect("encode")).expect("decode");
        assert_eq!(back, row);
    }

    #[test]
    fn hostile_numerics_are_rejected() {
        let bad_scale = postcard::to_allocvec(&(3u32, 1i128, 29u32)).expect("encode");
        assert!(postcard::from_bytes::<Value>(&bad_scale).is_err(), "scale above 28");
        let too_big = postcard::to_allocvec(&(3u32, i128::MAX, 0u32)).expect("encode");
        assert!(postcard::from_bytes::<Value>(&too_big).is_err(), "mantissa above 96 bits");
    }
}
