//! Bound parameters as they arrive in a Bind message, decoded once the statement's
//! parameter types are known.

use crate::errors::{PgError, PROTOCOL_VIOLATION};
use crate::pgtypes::decode_param;
use bytes::Bytes;
use pistou_sql::{SqlType, Value};

#[derive(Clone, Debug, Default)]
pub struct RawParams {
    pub values: Vec<Option<Bytes>>,
    /// Bind's format codes: none (all text), one (for all) or one per parameter.
    pub formats: Vec<i16>,
    /// OIDs the client declared in Parse (0: unspecified).
    pub declared: Vec<u32>,
}

impl RawParams {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn binary(&self, i: usize) -> bool {
        match self.formats.as_slice() {
            [] => false,
            [one] => *one == 1,
            many => many.get(i) == Some(&1),
        }
    }

    /// `sql` with `$n` replaced by the parameters as SQL literals, for the statements the
    /// gateway answers itself (routed again and matched by shape once bound).
    pub fn substitute(&self, sql: &str) -> Result<String, PgError> {
        let mut literals = Vec::with_capacity(self.values.len());
        for (i, v) in self.values.iter().enumerate() {
            literals.push(match v {
                None => "NULL".to_string(),
                Some(bytes) => {
                    let oid = self.declared.get(i).copied().unwrap_or(0);
                    let value = decode_param(bytes, oid, None, self.binary(i)).map_err(PgError::from)?;
                    format!("'{}'", crate::pgtypes::text_of(&value, None).replace('\'', "''"))
                }
            });
        }
        // One pass over the statement, so a parameter's value is never itself rewritten
        // (a value containing "$1" stays as sent).
        let mut out = String::with_capacity(sql.len());
        let mut rest = sql;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let digits = rest[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
            let literal = rest[at + 1..at + 1 + digits]
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| literals.get(i));
            match literal {
                Some(l) => out.push_str(l),
                None => out.push_str(&rest[at..at + 1 + digits]),
            }
            rest = &rest[at + 1 + digits..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// Decodes every parameter; `inferred` holds the statement's own parameter types.
    pub fn decode(&self, inferred: &[Option<SqlType>]) -> Result<Vec<Value>, PgError> {
        if self.values.len() != inferred.len() {
            return Err(PgError::new(
                PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {} parameters, but the statement requires {}",
                    self.values.len(),
                    inferred.len()
                ),
            ));
        }
        if self.formats.len() > 1 && self.formats.len() != self.values.len() {
            return Err(PgError::new(
                PROTOCOL_VIOLATION,
                "bind message has a parameter format count that does not match its parameters",
            ));
        }
        self.values
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                None => Ok(Value::Null),
                Some(bytes) => {
                    let oid = self.declared.get(i).copied().unwrap_or(0);
                    decode_param(bytes, oid, inferred[i], self.binary(i))
                        .map_err(|e| PgError::from(e).with_prefix(&format!("parameter ${}: ", i + 1)))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_quotes_and_orders_parameters() {
        let values =
            (1..=10).map(|i| Some(Bytes::from(i.to_string()))).chain([Some(Bytes::from_static(b"it's"))]).collect();
        let p = RawParams { values, formats: vec![], declared: vec![] };
        let sql = p.substitute("SELECT $1, $10, $11").unwrap();
        assert_eq!(sql, "SELECT '1', '10', 'it''s'");
    }

    #[test]
    fn a_value_is_never_rewritten_and_unknown_placeholders_stay() {
        let values = vec![Some(Bytes::from_static(b"x")), Some(Bytes::from_static(b"$1"))];
        let p = RawParams { values, formats: vec![], declared: vec![] };
        assert_eq!(p.substitute("SELECT $2, $1, $3, $0, $").expect("substitute"), "SELECT '$1', 'x', $3, $0, $");
    }
}
