//! Pattern matching by value: `[NOT] [I]LIKE … [ESCAPE …]` and the regular-expression
//! operators `~` / `~*`. The engine's expressions and index expressions
//! (`crate::index_expr`) both call these, so a filter and an index entry always agree.

use crate::error::{err, Result, SqlError, SqlState};
use crate::types::Value;

/// One element of a compiled LIKE pattern.
#[derive(Clone, Copy, PartialEq)]
enum LikeToken {
    Literal(char),
    /// `_`: exactly one character.
    One,
    /// `%`: any run of characters.
    Many,
}

/// Compiles a LIKE pattern; `escape` makes the next character literal.
fn like_tokens(pattern: &str, escape: Option<char>) -> Result<Vec<LikeToken>> {
    let mut out = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            _ if Some(c) == escape => match chars.next() {
                Some(next) => LikeToken::Literal(next),
                None => return err(SqlState::InvalidEscapeSequence, "LIKE pattern must not end with escape character"),
            },
            '%' => LikeToken::Many,
            '_' => LikeToken::One,
            other => LikeToken::Literal(other),
        });
    }
    Ok(out)
}

/// The escape character of `ESCAPE e`: one character, or none for the empty string.
fn like_escape(e: &Value) -> Result<Option<char>> {
    let Value::Text(s) = e else { return err(SqlState::UndefinedFunction, "ESCAPE requires a text operand") };
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => {
            err(SqlState::InvalidEscapeSequence, "invalid escape string: escape string must be empty or one character")
        }
    }
}

/// SQL LIKE over compiled tokens.
fn like_match(text: &str, pattern: &[LikeToken]) -> bool {
    let t: Vec<char> = text.chars().collect();
    let p = pattern;
    // Iterative matcher with a single backtrack point on the last '%': no recursion.
    let (mut ti, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(LikeToken::Many) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(LikeToken::One) => {
                ti += 1;
                pi += 1;
            }
            Some(LikeToken::Literal(c)) if t.get(ti) == Some(c) => {
                ti += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..).is_some_and(|rest| rest.iter().all(|x| *x == LikeToken::Many))
}

/// `text [NOT] [I]LIKE pattern [ESCAPE escape]`, three-valued; no `escape` means `\`.
pub fn like(
    text: &Value,
    pattern: &Value,
    escape: Option<&Value>,
    negated: bool,
    case_insensitive: bool,
) -> Result<Value> {
    let backslash = Value::Text("\\".to_string());
    let escape = escape.unwrap_or(&backslash);
    Ok(match (text, pattern, escape) {
        (Value::Null, _, _) | (_, Value::Null, _) | (_, _, Value::Null) => Value::Null,
        (Value::Text(t), Value::Text(p), escape) => {
            let escape = like_escape(escape)?;
            let m = if case_insensitive {
                like_match(
                    &t.to_lowercase(),
                    &like_tokens(&p.to_lowercase(), escape.map(|c| c.to_lowercase().next().unwrap_or(c)))?,
                )
            } else {
                like_match(t, &like_tokens(p, escape)?)
            };
            Value::Bool(m != negated)
        }
        _ => return err(SqlState::UndefinedFunction, "LIKE requires text operands"),
    })
}

/// Longest regular expression accepted, and the compiled size bound (a pattern cannot make
/// the engine use unbounded memory or time: the `regex` crate matches in linear time, and
/// its parser's nesting limit bounds recursion).
pub const MAX_REGEX_LEN: usize = 4096;
pub const MAX_REGEX_SIZE: usize = 1 << 20;

/// `text ~ pattern` (`~*` when `case_insensitive`).
pub fn regex_match(text: &str, pattern: &str, case_insensitive: bool) -> Result<bool> {
    if pattern.len() > MAX_REGEX_LEN {
        return err(SqlState::ProgramLimitExceeded, format!("regular expression longer than {MAX_REGEX_LEN} bytes"));
    }
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(MAX_REGEX_SIZE)
        .dfa_size_limit(MAX_REGEX_SIZE)
        .build()
        .map_err(|e| SqlError::new(SqlState::InvalidRegularExpression, format!("invalid regular expression: {e}")))?;
    Ok(re.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn like_text(text: &str, pattern: &str) -> bool {
        like(&Value::Text(text.into()), &Value::Text(pattern.into()), None, false, false) == Ok(Value::Bool(true))
    }

    #[test]
    fn like_matches_wildcards() {
        assert!(like_text("hello", "h%o"));
        assert!(like_text("hello", "_ello"));
        assert!(like_text("", "%"));
        assert!(!like_text("hello", "h%x"));
        assert!(like_text("abcabc", "%bc%bc"));
        assert!(!like_text("ab", "a_b"));
        assert!(like_text("a_b", "a\\_b") && !like_text("axb", "a\\_b"), "backslash escapes by default");
        assert!(!like_text("100%", "100!%"), "! is no escape by default");
        let tokens = like_tokens("100!%", Some('!')).unwrap_or_default();
        assert!(like_match("100%", &tokens) && !like_match("1000", &tokens));
        assert!(like_tokens("ab!", Some('!')).is_err(), "pattern ending with the escape character");
        assert!(like_escape(&Value::Text("ab".into())).is_err());
        assert_eq!(like_escape(&Value::Text(String::new())).ok(), Some(None));
        let ci = like(&Value::Text("ABC".into()), &Value::Text("a%".into()), None, true, true);
        assert_eq!(ci, Ok(Value::Bool(false)), "NOT ILIKE");
        assert_eq!(like(&Value::Null, &Value::Text("a".into()), None, false, false), Ok(Value::Null));
    }

    #[test]
    fn regular_expressions_are_bounded() {
        assert_eq!(regex_match("abc", "^a", false), Ok(true));
        assert_eq!(regex_match("ABC", "^a", true), Ok(true));
        assert!(regex_match("a", "(", false).is_err_and(|e| e.state == SqlState::InvalidRegularExpression));
        let long = "a".repeat(MAX_REGEX_LEN + 1);
        assert!(regex_match("a", &long, false).is_err_and(|e| e.state == SqlState::ProgramLimitExceeded));
        // Compiles to more than the size bound.
        assert!(regex_match("a", "\\w{1000}{1000}", false).is_err());
    }
}
