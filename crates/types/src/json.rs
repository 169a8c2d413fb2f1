//! The json type as computed values: `json_build_object` writes a document as PostgreSQL's
//! json output shows it (`{"a" : 1, "b" : [1,2]}`); a json value is `Value::Text` holding
//! that document, typed `SqlType::Json`.

use crate::error::{err, Result, SqlState};
use crate::types::{SqlType, Value};

/// Appends `s` as a JSON string, escaped as PostgreSQL's `escape_json` does.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `v`, of static type `ty`, as a JSON value: numbers and booleans as themselves
/// (non-finite floats as strings), json as it is, arrays as JSON arrays, dates and times
/// in ISO form with a `T`, everything else as a string of its text.
fn push_value(out: &mut String, v: &Value, ty: Option<SqlType>) -> Result<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Numeric(d) => out.push_str(&d.to_string()),
        Value::Float(f) if f.is_finite() => out.push_str(&crate::types::output_text(v, ty)),
        Value::Float(f) if f.is_nan() => push_string(out, "NaN"),
        Value::Float(f) => push_string(out, if *f > 0.0 { "Infinity" } else { "-Infinity" }),
        Value::Date(_) | Value::Interval(_) => push_string(out, &v.to_string()),
        Value::Timestamp(_) => push_string(out, &v.to_string().replacen(' ', "T", 1)),
        Value::TimestampTz(_) => {
            let text = v.to_string().replacen(' ', "T", 1);
            // PostgreSQL writes the offset with minutes in JSON (`+00:00`).
            let text = match text.strip_suffix("+00") {
                Some(stem) => format!("{stem}+00:00"),
                None => text,
            };
            push_string(out, &text)
        }
        Value::Text(s) => match ty {
            Some(SqlType::Json | SqlType::Jsonb) => out.push_str(s),
            Some(t @ (SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector)) => {
                let element = t.element();
                out.push('[');
                for (i, e) in crate::array::elements(v, t)?.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_value(out, e, element)?;
                }
                out.push(']');
            }
            _ => push_string(out, s),
        },
        Value::Bytes(_) => push_string(out, &v.to_string()),
    }
    Ok(())
}

/// `json_build_object(k1, v1, …)`: keys (any non-NULL value, as text) and values of the
/// given static types.
pub fn build_object(args: &[Value], types: &[Option<SqlType>]) -> Result<Value> {
    if !args.len().is_multiple_of(2) {
        return err(
            SqlState::InvalidParameterValue,
            "argument list must have even number of elements (json_build_object() takes alternating keys and values)",
        );
    }
    let mut out = String::from("{");
    for (i, pair) in args.chunks(2).enumerate() {
        let [key, value] = pair else { continue };
        if key.is_null() {
            return err(
                SqlState::InvalidParameterValue,
                format!("argument {} cannot be null (object keys should be text)", 2 * i + 1),
            );
        }
        if i > 0 {
            out.push_str(", ");
        }
        let key_type = types.get(2 * i).copied().flatten();
        push_string(&mut out, &crate::types::output_text(key, key_type));
        out.push_str(" : ");
        push_value(&mut out, value, types.get(2 * i + 1).copied().flatten())?;
    }
    out.push('}');
    Ok(Value::Text(out))
}

/// `json_build_array(v1, …)` in json's output form (`[1, "a"]`), values of the given
/// static types (jsonb's builders canonicalize it).
pub fn build_array(args: &[Value], types: &[Option<SqlType>]) -> Result<String> {
    let mut out = String::from("[");
    for (i, value) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_value(&mut out, value, types.get(i).copied().flatten())?;
    }
    out.push(']');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_print_as_postgres_prints_them() {
        let args = [
            Value::Text("a".into()),
            Value::Int(1),
            Value::Text("b".into()),
            Value::Bool(true),
            Value::Text("c".into()),
            Value::Null,
            Value::Text("d".into()),
            Value::Text("x\"\\\n\u{1}y".into()),
            Value::Text("g".into()),
            Value::Float(f64::NAN),
        ];
        let types = [None, Some(SqlType::Int4), None, Some(SqlType::Bool), None, None, None, None, None, None];
        let Value::Text(s) = build_object(&args, &types).expect("object") else { panic!("not text") };
        assert_eq!(s, r#"{"a" : 1, "b" : true, "c" : null, "d" : "x\"\\\n\u0001y", "g" : "NaN"}"#);
        assert_eq!(build_object(&[], &[]).expect("empty"), Value::Text("{}".into()));
        let odd = build_object(&[Value::Int(1)], &[None]).expect_err("odd");
        assert_eq!(odd.state, SqlState::InvalidParameterValue);
        let null_key = build_object(&[Value::Null, Value::Int(1)], &[None, None]).expect_err("null key");
        assert_eq!(null_key.state, SqlState::InvalidParameterValue);
    }
}
