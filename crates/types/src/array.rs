//! Arrays and the vector types as values: PostgreSQL's text form (`{a,"b c",NULL}` for
//! arrays, `1 2` for int2vector / oidvector) is their runtime representation
//! (`Value::Text`), their static type says what the elements are (`SqlType::Array`,
//! `SqlType::Int2Vector`, `SqlType::OidVector`). Functions that take arrays apart
//! (`unnest`, `generate_subscripts`, `= ANY`) parse the text; `array_agg` writes it.

use crate::error::{Result, SqlError, SqlState};
use crate::types::{cast, SqlType, Value};

fn malformed(s: &str) -> SqlError {
    SqlError::new(SqlState::InvalidTextRepresentation, format!("malformed array literal: \"{s}\""))
}

/// The elements of an array's text form (`{…}`) or of a vector's (space-separated), as
/// text; NULL elements are None.
pub fn items(s: &str) -> Result<Vec<Option<String>>> {
    if !s.trim_start().starts_with('{') {
        return Ok(s.split_whitespace().map(|i| Some(i.to_string())).collect());
    }
    parse_array_text(s).ok_or_else(|| malformed(s))
}

/// The elements of `v`, a value of array or vector type `ty`, as values of its element type.
pub fn elements(v: &Value, ty: SqlType) -> Result<Vec<Value>> {
    let Value::Text(s) = v else {
        return Ok(Vec::new());
    };
    let element = ty.element().unwrap_or(SqlType::Text);
    items(s)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Value::Null),
            Some(text) => cast(&Value::Text(text), element),
        })
        .collect()
}

/// The subscript of the first element: 0 for the vector types, 1 for arrays.
pub fn lower_bound(ty: SqlType) -> i64 {
    match ty {
        SqlType::Int2Vector | SqlType::OidVector => 0,
        _ => 1,
    }
}

/// One element as array output writes it (booleans `t`/`f`, REAL as its shortest f32).
fn element_text(v: &Value, ty: SqlType) -> String {
    match v {
        Value::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
        other => crate::types::output_text(other, Some(ty)),
    }
}

/// The text form of an array of `elements` of type `element_type`: `{1,2}`, `{a,"b c",NULL}`.
pub fn format(elements: &[Value], element_type: SqlType) -> String {
    format_items(elements.iter().map(|v| (!v.is_null()).then(|| element_text(v, element_type))))
}

/// The text form of an array of elements given as text (None: NULL), quoted where array
/// input would otherwise misread them.
pub fn format_items(items: impl Iterator<Item = Option<String>>) -> String {
    let items: Vec<String> = items
        .map(|item| {
            let Some(s) = item else { return "NULL".to_string() };
            let plain = !s.is_empty()
                && !s.eq_ignore_ascii_case("null")
                && !s.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
            if plain {
                s
            } else {
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            }
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

/// The elements of an array's text form (None: not an array literal). NULL elements are None.
pub fn parse_array_text(s: &str) -> Option<Vec<Option<String>>> {
    let inner = s.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Some(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => item.push(chars.next()?),
                    c => item.push(c),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '}' || c == '"' {
                    return None;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim_end().to_string();
        }
        out.push(if !quoted && item.eq_ignore_ascii_case("null") { None } else { Some(item) });
        match chars.next() {
            None => return Some(out),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ArrayElem;

    #[test]
    fn arrays_and_vectors_round_trip_through_their_text_form() {
        let text = SqlType::Array(ArrayElem::Text);
        let values = vec![Value::Text("a".into()), Value::Null, Value::Text("b c".into()), Value::Text("".into())];
        let s = format(&values, SqlType::Text);
        assert_eq!(s, r#"{a,NULL,"b c",""}"#);
        assert_eq!(elements(&Value::Text(s), text).expect("parse"), values);
        let bools = format(&[Value::Bool(true), Value::Bool(false)], SqlType::Bool);
        assert_eq!(bools, "{t,f}");
        assert_eq!(
            elements(&Value::Text(bools), SqlType::Array(ArrayElem::Bool)).expect("parse"),
            vec![Value::Bool(true), Value::Bool(false)]
        );
        let vector = elements(&Value::Text("3 1".into()), SqlType::Int2Vector).expect("vector");
        assert_eq!(vector, vec![Value::Int(3), Value::Int(1)]);
        assert_eq!(lower_bound(SqlType::Int2Vector), 0);
        assert!(elements(&Value::Text("{a".into()), text).is_err());
        assert_eq!(elements(&Value::Null, text).expect("null"), Vec::<Value>::new());
    }
}
