//! The jsonb type. A jsonb value is `Value::Text` holding its canonical document, which is
//! PostgreSQL's jsonb output: object keys deduplicated (the last one wins) and sorted as
//! PostgreSQL stores them (shorter keys first, then bytewise), numbers in numeric's output
//! form (`1.50` stays `1.50`, `1e3` is `1000`), `", "` between items and `": "` after keys.
//! Equal documents (same keys, values and number texts) have equal texts. Input is parsed
//! strictly, with bounded size and nesting depth; operators parse the stored text again.

use crate::error::{err, Result, SqlError, SqlState};
use crate::types::{SqlType, Value};

/// The deepest nesting of arrays and objects accepted (PostgreSQL's own limit is its stack
/// depth; beyond this Pistou fails with 54001 as PostgreSQL does on very deep input).
pub const MAX_DEPTH: usize = 1000;
/// The longest document text accepted, in bytes.
pub const MAX_DOCUMENT: usize = 16 << 20;
/// The largest decimal exponent of a number (PostgreSQL's numeric input allows ±1000).
const MAX_EXPONENT: i64 = 1000;

/// A parsed document. Numbers keep their numeric text (canonical form); objects are sorted
/// and deduplicated.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

fn syntax() -> SqlError {
    SqlError::new(SqlState::InvalidTextRepresentation, "invalid input syntax for type json")
}

/// PostgreSQL's order of object keys in jsonb: by length, then bytewise.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Sorts object members into jsonb order, keeping the last of duplicate keys.
fn normalize_object(mut members: Vec<(String, Json)>) -> Vec<(String, Json)> {
    // A stable sort keeps duplicates in input order: the last of each run wins.
    members.sort_by(|a, b| key_order(&a.0, &b.0));
    let mut out: Vec<(String, Json)> = Vec::with_capacity(members.len());
    for (k, v) in members {
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 = v,
            _ => out.push((k, v)),
        }
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    /// Bytes of number text made so far: `1e1000` is 5 bytes in and 1001 out, so the
    /// document's canonical size is bounded here, not only its input size.
    number_bytes: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, b: u8) -> Result<()> {
        self.skip_ws();
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(syntax())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => {
                if depth >= MAX_DEPTH {
                    return Err(too_deep());
                }
                self.pos += 1;
                let mut members = Vec::new();
                self.skip_ws();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.skip_ws();
                    if self.peek() != Some(b'"') {
                        return Err(syntax());
                    }
                    let key = self.string()?;
                    self.expect(b':')?;
                    let v = self.value(depth + 1)?;
                    members.push((key, v));
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Json::Object(normalize_object(members)));
                        }
                        _ => return Err(syntax()),
                    }
                }
            }
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return Err(too_deep());
                }
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(syntax()),
                    }
                }
            }
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'a'..=b'z' | b'A'..=b'Z') => {
                let start = self.pos;
                while let Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') = self.peek() {
                    self.pos += 1;
                }
                match &self.s[start..self.pos] {
                    b"true" => Ok(Json::Bool(true)),
                    b"false" => Ok(Json::Bool(false)),
                    b"null" => Ok(Json::Null),
                    _ => Err(syntax()),
                }
            }
            _ => Err(syntax()),
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.s.get(self.pos..self.pos + 4).ok_or_else(syntax)?;
        let text = std::str::from_utf8(digits).map_err(|_| syntax())?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(syntax());
        }
        self.pos += 4;
        u32::from_str_radix(text, 16).map_err(|_| syntax())
    }

    /// A string at `pos` (which holds the opening quote), escapes resolved.
    fn string(&mut self) -> Result<String> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = self.peek().ok_or_else(syntax)?;
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or_else(syntax)?;
                    self.pos += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first) {
                                if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(syntax());
                                }
                                self.pos += 2;
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return Err(syntax());
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&first) {
                                return Err(syntax());
                            } else {
                                first
                            };
                            if code == 0 {
                                return err(SqlState::UntranslatableCharacter, "unsupported Unicode escape sequence");
                            }
                            char::from_u32(code).ok_or_else(syntax)?
                        }
                        _ => return Err(syntax()),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return Err(syntax()),
                b => out.push(b),
            }
        }
        // The input is a &str and escapes add whole characters: the bytes are UTF-8.
        String::from_utf8(out).map_err(|_| syntax())
    }

    /// A number, in numeric's output form.
    fn number(&mut self) -> Result<Json> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let digits = |p: &mut Self| {
            let from = p.pos;
            while let Some(b'0'..=b'9') = p.peek() {
                p.pos += 1;
            }
            from..p.pos
        };
        let int = digits(self);
        if int.is_empty() || (int.len() > 1 && self.s[int.start] == b'0') {
            return Err(syntax());
        }
        let mut frac = self.pos..self.pos;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            frac = digits(self);
            if frac.is_empty() {
                return Err(syntax());
            }
        }
        let mut exponent: i64 = 0;
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            let minus = match self.peek() {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let e = digits(self);
            if e.is_empty() {
                return Err(syntax());
            }
            let text = std::str::from_utf8(&self.s[e]).map_err(|_| syntax())?;
            let magnitude: i64 = text.parse().unwrap_or(i64::MAX);
            if magnitude > MAX_EXPONENT {
                let lexeme = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                return err(
                    SqlState::InvalidTextRepresentation,
                    format!("invalid input syntax for type numeric: \"{lexeme}\""),
                );
            }
            exponent = if minus { -magnitude } else { magnitude };
        }
        // A token continuing with letters or digits is not a number (`1x`, `01`).
        if let Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') = self.peek() {
            return Err(syntax());
        }
        let int_digits = &self.s[int];
        let frac_digits = &self.s[frac];
        let text = numeric_text(negative, int_digits, frac_digits, exponent);
        self.number_bytes += text.len();
        if self.number_bytes > MAX_DOCUMENT {
            return Err(too_big(self.number_bytes));
        }
        Ok(Json::Number(text))
    }
}

fn too_big(len: usize) -> SqlError {
    SqlError::new(
        SqlState::ProgramLimitExceeded,
        format!("jsonb document of {len} bytes exceeds the maximum of {MAX_DOCUMENT} bytes"),
    )
}

fn too_deep() -> SqlError {
    SqlError::new(
        SqlState::StatementTooComplex,
        format!("stack depth limit exceeded (jsonb nests at most {MAX_DEPTH} arrays and objects)"),
    )
}

/// numeric's output of `[-]int.frac e exponent`: the display scale is the fraction's digits
/// less the exponent (at least 0), as numeric input computes it.
fn numeric_text(negative: bool, int: &[u8], frac: &[u8], exponent: i64) -> String {
    let digits: Vec<u8> = int.iter().chain(frac).copied().collect();
    let scale = (frac.len() as i64 - exponent).max(0) as usize;
    // Position of the decimal point within `digits`.
    let point = int.len() as i64 + exponent;
    let digit_at = |i: i64| -> u8 {
        if i >= 0 {
            digits.get(i as usize).copied().unwrap_or(b'0')
        } else {
            b'0'
        }
    };
    let mut int_part: Vec<u8> = (0..point.max(0)).map(digit_at).collect();
    let first_nonzero = int_part.iter().position(|d| *d != b'0').unwrap_or(int_part.len());
    int_part.drain(..first_nonzero);
    if int_part.is_empty() {
        int_part.push(b'0');
    }
    let frac_part: Vec<u8> = (0..scale as i64).map(|i| digit_at(point + i)).collect();
    let zero = digits.iter().all(|d| *d == b'0');
    let mut out = String::new();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(&String::from_utf8_lossy(&int_part));
    if scale > 0 {
        out.push('.');
        out.push_str(&String::from_utf8_lossy(&frac_part));
    }
    out
}

/// Parses a document (22P02 on bad input, 54001 when nested too deeply).
pub fn parse(text: &str) -> Result<Json> {
    if text.len() > MAX_DOCUMENT {
        return Err(too_big(text.len()));
    }
    let mut p = Parser { s: text.as_bytes(), pos: 0, number_bytes: 0 };
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(syntax());
    }
    Ok(v)
}

/// The canonical text of a document given as text.
pub fn canonical(text: &str) -> Result<String> {
    Ok(write(&parse(text)?))
}

pub fn write(j: &Json) -> String {
    let mut out = String::new();
    write_into(&mut out, j);
    out
}

fn write_into(out: &mut String, j: &Json) {
    match j {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(n),
        Json::String(s) => crate::json::push_string(out, s),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_into(out, item);
            }
            out.push(']');
        }
        Json::Object(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                crate::json::push_string(out, k);
                out.push_str(": ");
                write_into(out, v);
            }
            out.push('}');
        }
    }
}

/// `jsonb_pretty`: as PostgreSQL indents (four spaces, empty containers on two lines).
fn pretty_into(out: &mut String, j: &Json, level: usize) -> Result<()> {
    // Indentation multiplies a deep document's size: the output is bounded too.
    if out.len() > 4 * MAX_DOCUMENT {
        return Err(too_big(out.len()));
    }
    let indent = |out: &mut String, level: usize| {
        out.push('\n');
        out.push_str(&" ".repeat(4 * level));
    };
    match j {
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                pretty_into(out, item, level + 1)?;
            }
            indent(out, level);
            out.push(']');
        }
        Json::Object(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                crate::json::push_string(out, k);
                out.push_str(": ");
                pretty_into(out, v, level + 1)?;
            }
            indent(out, level);
            out.push('}');
        }
        scalar => write_into(out, scalar),
    }
    Ok(())
}

/// A jsonb value as SQL text for `->>` and `#>>`: a string unquoted, null as SQL NULL.
fn as_text(j: Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::String(s) => Value::Text(s),
        other => Value::Text(write(&other)),
    }
}

fn doc(v: &Value) -> Result<Json> {
    match v {
        Value::Text(s) => parse(s),
        other => err(
            SqlState::DatatypeMismatch,
            format!("jsonb operand of type {}", other.sql_type().map_or("unknown", SqlType::pg_name)),
        ),
    }
}

fn text<'a>(v: &'a Value, what: &str) -> Result<&'a str> {
    match v {
        Value::Text(s) => Ok(s),
        _ => err(SqlState::DatatypeMismatch, format!("{what} must be text")),
    }
}

/// Array element `i` (negative: from the end).
fn index(len: usize, i: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

/// `->`: an object's field by key (text) or an array's element by position (integer).
fn get(j: Json, key: &Value) -> Option<Json> {
    match (j, key) {
        (Json::Object(members), Value::Text(k)) => members.into_iter().find(|(m, _)| m == k).map(|(_, v)| v),
        (Json::Array(mut items), Value::Int(i)) => index(items.len(), *i).map(|i| items.swap_remove(i)),
        // A scalar document is stored as a one-element array: `'"x"' -> 0` is "x".
        (Json::Object(_), _) | (Json::Array(_), _) => None,
        (scalar, Value::Int(i)) => index(1, *i).map(|_| scalar),
        _ => None,
    }
}

/// One step of a text path: a key of an object, a position (as text) of an array.
fn step(j: Json, key: &str) -> Option<Json> {
    match j {
        Json::Object(members) => members.into_iter().find(|(m, _)| m == key).map(|(_, v)| v),
        Json::Array(mut items) => {
            let i: i64 = key.trim_start().parse().ok()?;
            index(items.len(), i).map(|i| items.swap_remove(i))
        }
        _ => None,
    }
}

/// `#>`: the value at a path (None for a NULL step or a missing one).
fn path(j: Json, steps: &[Option<String>]) -> Option<Json> {
    let mut cur = j;
    for s in steps {
        cur = step(cur, s.as_deref()?)?;
    }
    Some(cur)
}

fn path_arg(v: &Value) -> Result<Vec<Option<String>>> {
    crate::array::items(text(v, "a jsonb path")?)
}

fn is_scalar(j: &Json) -> bool {
    !matches!(j, Json::Array(_) | Json::Object(_))
}

/// `a @> b` with PostgreSQL's rules: objects contain objects whose pairs they contain,
/// arrays contain arrays all of whose elements they contain (in any order, duplicates
/// ignored), scalars only equal scalars; at the top level an array contains a scalar.
fn contains(a: &Json, b: &Json, top: bool) -> bool {
    match (a, b) {
        (Json::Object(am), Json::Object(bm)) => bm.iter().all(|(k, bv)| match am.iter().find(|(m, _)| m == k) {
            None => false,
            Some((_, av)) => match (is_scalar(av), is_scalar(bv)) {
                (true, true) => av == bv,
                (false, false) => contains(av, bv, false),
                _ => false,
            },
        }),
        (Json::Array(ai), Json::Array(bi)) => bi.iter().all(|bv| {
            if is_scalar(bv) {
                ai.iter().any(|av| av == bv)
            } else {
                ai.iter().any(|av| !is_scalar(av) && contains(av, bv, false))
            }
        }),
        (Json::Array(ai), scalar) if top && is_scalar(scalar) => ai.iter().any(|av| av == scalar),
        (x, y) if is_scalar(x) && is_scalar(y) => x == y,
        _ => false,
    }
}

/// `?`: a top-level key, or a string element of an array (or the string itself).
fn exists(j: &Json, key: &str) -> bool {
    match j {
        Json::Object(members) => members.iter().any(|(k, _)| k == key),
        Json::Array(items) => items.iter().any(|i| matches!(i, Json::String(s) if s == key)),
        Json::String(s) => s == key,
        _ => false,
    }
}

/// `||`: objects merge (the right side's keys win); anything else concatenates as arrays
/// (a scalar or object counting as a one-element array).
fn concat(a: Json, b: Json) -> Json {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => Json::Object(normalize_object(x.into_iter().chain(y).collect())),
        (a, b) => {
            let items = |j: Json| match j {
                Json::Array(items) => items,
                other => vec![other],
            };
            let mut out = items(a);
            out.extend(items(b));
            Json::Array(out)
        }
    }
}

fn delete_from_scalar() -> SqlError {
    SqlError::new(SqlState::InvalidParameterValue, "cannot delete from scalar")
}

/// `- key` / `- position`.
fn delete(j: Json, key: &Value) -> Result<Json> {
    Ok(match (j, key) {
        (Json::Object(members), Value::Text(k)) => Json::Object(members.into_iter().filter(|(m, _)| m != k).collect()),
        (Json::Array(items), Value::Text(k)) => {
            Json::Array(items.into_iter().filter(|i| !matches!(i, Json::String(s) if s == k)).collect())
        }
        (Json::Array(mut items), Value::Int(i)) => {
            if let Some(i) = index(items.len(), *i) {
                items.remove(i);
            }
            Json::Array(items)
        }
        (Json::Object(_), _) => {
            return err(SqlState::InvalidParameterValue, "cannot delete from object using integer index")
        }
        _ => return Err(delete_from_scalar()),
    })
}

fn strip_nulls(j: Json) -> Json {
    match j {
        Json::Object(members) => Json::Object(
            members.into_iter().filter(|(_, v)| *v != Json::Null).map(|(k, v)| (k, strip_nulls(v))).collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// `jsonb_set(target, path, new, create_missing)`: replaces (or, at the last step, adds)
/// the value at `path`; a missing intermediate step leaves the document unchanged.
fn set(j: &mut Json, steps: &[Option<String>], new: &Json, create: bool, level: usize) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else {
        *j = new.clone();
        return Ok(());
    };
    let Some(key) = first else {
        return err(SqlState::NullValueNotAllowed, format!("path element at position {} is null", level + 1));
    };
    match j {
        Json::Object(members) => match members.iter_mut().find(|(m, _)| m == key) {
            Some((_, v)) => set(v, rest, new, create, level + 1)?,
            None if rest.is_empty() && create => {
                members.push((key.clone(), new.clone()));
                let taken = std::mem::take(members);
                *members = normalize_object(taken);
            }
            None => {}
        },
        Json::Array(items) => {
            let i: i64 = key.trim().parse().map_err(|_| {
                SqlError::new(
                    SqlState::InvalidTextRepresentation,
                    format!("path element at position {} is not an integer: \"{key}\"", level + 1),
                )
            })?;
            match index(items.len(), i) {
                Some(at) => {
                    if let Some(item) = items.get_mut(at) {
                        set(item, rest, new, create, level + 1)?;
                    }
                }
                None if rest.is_empty() && create => {
                    if i < 0 {
                        items.insert(0, new.clone());
                    } else {
                        items.push(new.clone());
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// `#-`: removes the field or element at `path`; a missing step leaves the document as it is.
fn delete_path(j: &mut Json, steps: &[Option<String>], level: usize) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else { return Ok(()) };
    let Some(key) = first else {
        return err(SqlState::NullValueNotAllowed, format!("path element at position {} is null", level + 1));
    };
    match j {
        Json::Object(members) => match members.iter().position(|(m, _)| m == key) {
            Some(at) if rest.is_empty() => {
                members.remove(at);
            }
            Some(at) => {
                if let Some((_, v)) = members.get_mut(at) {
                    delete_path(v, rest, level + 1)?;
                }
            }
            None => {}
        },
        Json::Array(items) => {
            let i: i64 = key.trim().parse().map_err(|_| {
                SqlError::new(
                    SqlState::InvalidTextRepresentation,
                    format!("path element at position {} is not an integer: \"{key}\"", level + 1),
                )
            })?;
            match index(items.len(), i) {
                Some(at) if rest.is_empty() => {
                    items.remove(at);
                }
                Some(at) => {
                    if let Some(item) = items.get_mut(at) {
                        delete_path(item, rest, level + 1)?;
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(())
}

fn typeof_name(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// The jsonb operators and functions (`Func::Jsonb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JsonbFn {
    /// `->`
    Get,
    /// `->>`
    GetText,
    /// `#>`
    Path,
    /// `#>>`
    PathText,
    /// `@>` (`<@` is bound with its operands swapped)
    Contains,
    /// `?`
    Exists,
    /// `?|`
    ExistsAny,
    /// `?&`
    ExistsAll,
    /// `||`
    Concat,
    /// `- text` / `- integer`
    Delete,
    /// `- text[]`
    DeleteKeys,
    /// `#-`
    DeletePath,
    /// `jsonb_build_object(…)`: the binder puts the arguments' type names first.
    BuildObject,
    /// `jsonb_build_array(…)`: the binder puts the arguments' type names first.
    BuildArray,
    /// `to_jsonb(x)`: the binder puts the argument's type name first.
    ToJsonb,
    Typeof,
    ArrayLength,
    ExtractPath,
    ExtractPathText,
    StripNulls,
    Set,
    Pretty,
    /// `{k: v}` for `jsonb_object_agg(k, v)`: the binder puts the type names first.
    ObjectPair,
}

impl JsonbFn {
    pub fn by_name(name: &str) -> Option<JsonbFn> {
        Some(match name {
            "jsonb_build_object" => JsonbFn::BuildObject,
            "jsonb_build_array" => JsonbFn::BuildArray,
            "to_jsonb" => JsonbFn::ToJsonb,
            "jsonb_typeof" => JsonbFn::Typeof,
            "jsonb_array_length" => JsonbFn::ArrayLength,
            "jsonb_extract_path" => JsonbFn::ExtractPath,
            "jsonb_extract_path_text" => JsonbFn::ExtractPathText,
            "jsonb_strip_nulls" => JsonbFn::StripNulls,
            "jsonb_set" => JsonbFn::Set,
            "jsonb_pretty" => JsonbFn::Pretty,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            JsonbFn::Get => "jsonb_object_field",
            JsonbFn::GetText => "jsonb_object_field_text",
            JsonbFn::Path => "jsonb_extract_path_op",
            JsonbFn::PathText => "jsonb_extract_path_text_op",
            JsonbFn::Contains => "jsonb_contains",
            JsonbFn::Exists => "jsonb_exists",
            JsonbFn::ExistsAny => "jsonb_exists_any",
            JsonbFn::ExistsAll => "jsonb_exists_all",
            JsonbFn::Concat => "jsonb_concat",
            JsonbFn::Delete => "jsonb_delete",
            JsonbFn::DeleteKeys => "jsonb_delete_keys",
            JsonbFn::DeletePath => "jsonb_delete_path",
            JsonbFn::BuildObject => "jsonb_build_object",
            JsonbFn::BuildArray => "jsonb_build_array",
            JsonbFn::ToJsonb => "to_jsonb",
            JsonbFn::Typeof => "jsonb_typeof",
            JsonbFn::ArrayLength => "jsonb_array_length",
            JsonbFn::ExtractPath => "jsonb_extract_path",
            JsonbFn::ExtractPathText => "jsonb_extract_path_text",
            JsonbFn::StripNulls => "jsonb_strip_nulls",
            JsonbFn::Set => "jsonb_set",
            JsonbFn::Pretty => "jsonb_pretty",
            JsonbFn::ObjectPair => "jsonb_object_agg",
        }
    }

    /// Accepted argument counts as written in SQL (before the binder adds type names).
    pub fn arity(self) -> (usize, usize) {
        match self {
            JsonbFn::BuildObject | JsonbFn::BuildArray => (0, usize::MAX),
            JsonbFn::ToJsonb | JsonbFn::Typeof | JsonbFn::ArrayLength | JsonbFn::StripNulls | JsonbFn::Pretty => (1, 1),
            JsonbFn::ExtractPath | JsonbFn::ExtractPathText => (1, usize::MAX),
            JsonbFn::Set => (3, 4),
            _ => (2, 2),
        }
    }

    /// The result type.
    pub fn result_type(self) -> SqlType {
        match self {
            JsonbFn::GetText | JsonbFn::PathText | JsonbFn::ExtractPathText | JsonbFn::Typeof | JsonbFn::Pretty => {
                SqlType::Text
            }
            JsonbFn::Contains | JsonbFn::Exists | JsonbFn::ExistsAny | JsonbFn::ExistsAll => SqlType::Bool,
            JsonbFn::ArrayLength => SqlType::Int4,
            _ => SqlType::Jsonb,
        }
    }

    /// True if a NULL argument makes the result NULL (all but the builders).
    pub fn strict(self) -> bool {
        !matches!(self, JsonbFn::BuildObject | JsonbFn::BuildArray | JsonbFn::ObjectPair)
    }
}

fn jsonb(j: &Json) -> Value {
    Value::Text(write(j))
}

/// A document made by an operator or function that can grow one (`||`, `jsonb_set`): at
/// most `MAX_DOCUMENT` bytes, so that every stored document can be read again.
fn made(j: &Json) -> Result<Value> {
    let text = write(j);
    if text.len() > MAX_DOCUMENT {
        return Err(too_big(text.len()));
    }
    Ok(Value::Text(text))
}

fn typed_args(args: &[Value], what: &str) -> Result<(Vec<Option<SqlType>>, Vec<Value>)> {
    let Some((Value::Text(types), rest)) = args.split_first() else {
        return err(SqlState::InternalError, format!("argument types of {what} were not bound"));
    };
    let types = if rest.is_empty() { Vec::new() } else { types.split(',').map(SqlType::by_pg_name).collect() };
    Ok((types, rest.to_vec()))
}

/// `jsonb_object_agg`'s result: the one-pair objects merged in order, the last of equal
/// keys winning.
pub fn merge_objects(objects: &[Value]) -> Result<Value> {
    let mut members = Vec::new();
    for o in objects {
        if let Json::Object(m) = doc(o)? {
            members.extend(m);
        }
    }
    made(&Json::Object(normalize_object(members)))
}

/// Evaluates `f` (NULL arguments of strict functions are handled by the caller).
pub fn call(f: JsonbFn, args: &[Value]) -> Result<Value> {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    Ok(match f {
        JsonbFn::BuildObject => {
            let (types, values) = typed_args(args, f.name())?;
            let json = crate::json::build_object(&values, &types)?;
            Value::Text(canonical(text(&json, "json")?)?)
        }
        JsonbFn::BuildArray => {
            let (types, values) = typed_args(args, f.name())?;
            Value::Text(canonical(&crate::json::build_array(&values, &types)?)?)
        }
        JsonbFn::ToJsonb => {
            let (types, values) = typed_args(args, f.name())?;
            let json = crate::json::build_array(&values, &types)?;
            match parse(&json)? {
                Json::Array(mut items) if items.len() == 1 => jsonb(&items.swap_remove(0)),
                _ => return err(SqlState::InternalError, "to_jsonb of one value"),
            }
        }
        JsonbFn::ObjectPair => {
            if arg(1).is_null() {
                return err(SqlState::InvalidParameterValue, "field name must not be null");
            }
            let (types, values) = typed_args(args, f.name())?;
            let json = crate::json::build_object(&values, &types)?;
            Value::Text(canonical(text(&json, "json")?)?)
        }
        JsonbFn::Get => get(doc(arg(0))?, arg(1)).map_or(Value::Null, |j| jsonb(&j)),
        JsonbFn::GetText => get(doc(arg(0))?, arg(1)).map_or(Value::Null, as_text),
        JsonbFn::Path => path(doc(arg(0))?, &path_arg(arg(1))?).map_or(Value::Null, |j| jsonb(&j)),
        JsonbFn::PathText => path(doc(arg(0))?, &path_arg(arg(1))?).map_or(Value::Null, as_text),
        JsonbFn::ExtractPath | JsonbFn::ExtractPathText => {
            let rest = args.get(1..).unwrap_or_default();
            let steps = rest.iter().map(|v| text(v, "a path element").map(|s| Some(s.to_string())));
            let steps = steps.collect::<Result<Vec<_>>>()?;
            let found = path(doc(arg(0))?, &steps);
            match f {
                JsonbFn::ExtractPath => found.map_or(Value::Null, |j| jsonb(&j)),
                _ => found.map_or(Value::Null, as_text),
            }
        }
        JsonbFn::Contains => Value::Bool(contains(&doc(arg(0))?, &doc(arg(1))?, true)),
        JsonbFn::Exists => Value::Bool(exists(&doc(arg(0))?, text(arg(1), "a key")?)),
        JsonbFn::ExistsAny | JsonbFn::ExistsAll => {
            let j = doc(arg(0))?;
            let keys: Vec<String> = path_arg(arg(1))?.into_iter().flatten().collect();
            let mut found = keys.iter().map(|k| exists(&j, k));
            Value::Bool(if f == JsonbFn::ExistsAny { found.any(|b| b) } else { found.all(|b| b) })
        }
        JsonbFn::Concat => made(&concat(doc(arg(0))?, doc(arg(1))?))?,
        JsonbFn::Delete => jsonb(&delete(doc(arg(0))?, arg(1))?),
        JsonbFn::DeleteKeys => {
            let mut j = doc(arg(0))?;
            if is_scalar(&j) {
                return Err(delete_from_scalar());
            }
            for key in path_arg(arg(1))?.into_iter().flatten() {
                j = delete(j, &Value::Text(key))?;
            }
            jsonb(&j)
        }
        JsonbFn::DeletePath => {
            let mut j = doc(arg(0))?;
            match &j {
                Json::Array(items) if items.is_empty() => {}
                Json::Object(members) if members.is_empty() => {}
                Json::Array(_) | Json::Object(_) => delete_path(&mut j, &path_arg(arg(1))?, 0)?,
                _ => return err(SqlState::InvalidParameterValue, "cannot delete path in scalar"),
            }
            jsonb(&j)
        }
        JsonbFn::Typeof => Value::Text(typeof_name(&doc(arg(0))?).to_string()),
        JsonbFn::ArrayLength => match doc(arg(0))? {
            Json::Array(items) => Value::Int(items.len() as i64),
            Json::Object(_) => {
                return err(SqlState::InvalidParameterValue, "cannot get array length of a non-array");
            }
            _ => return err(SqlState::InvalidParameterValue, "cannot get array length of a scalar"),
        },
        JsonbFn::StripNulls => jsonb(&strip_nulls(doc(arg(0))?)),
        JsonbFn::Set => {
            let mut j = doc(arg(0))?;
            let steps = path_arg(arg(1))?;
            let new = doc(arg(2))?;
            let create = !matches!(arg(3), Value::Bool(false));
            if is_scalar(&j) {
                return err(SqlState::InvalidParameterValue, "cannot set path in scalar");
            }
            set(&mut j, &steps, &new, create, 0)?;
            made(&j)?
        }
        JsonbFn::Pretty => {
            let mut out = String::new();
            pretty_into(&mut out, &doc(arg(0))?, 0)?;
            Value::Text(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> String {
        canonical(s).unwrap_or_else(|e| format!("ERROR {}", e.state.code()))
    }

    #[test]
    fn keys_are_sorted_by_length_then_bytes_and_deduplicated() {
        assert_eq!(c(r#"{"bb":1,"a":2,"aa":3, "b":4}"#), r#"{"a": 2, "b": 4, "aa": 3, "bb": 1}"#);
        assert_eq!(c(r#"{"a":1,"a":2}"#), r#"{"a": 2}"#);
        assert_eq!(
            c(r#"{"b":{"y":1,"x":[1, {"z":null,"z":true}]},"a":"s"}"#),
            r#"{"a": "s", "b": {"x": [1, {"z": true}], "y": 1}}"#
        );
        assert_eq!(c(" [ ] "), "[]");
        assert_eq!(c("{}"), "{}");
    }

    #[test]
    fn numbers_keep_numeric_form() {
        for (input, out) in [
            ("1.50", "1.50"),
            ("1e3", "1000"),
            ("1.0e1", "10"),
            ("-0", "0"),
            ("-0.0", "0.0"),
            ("1E-2", "0.01"),
            ("0.00e5", "0"),
            ("12.5e-1", "1.25"),
            ("-12.5E+1", "-125"),
            ("100", "100"),
            ("0.1", "0.1"),
        ] {
            assert_eq!(c(input), out, "{input}");
        }
        assert_eq!(c("1e1001"), "ERROR 22P02");
        assert_eq!(c("1e1000").len(), 1001);
    }

    #[test]
    fn bad_input_is_22p02() {
        for bad in [
            "",
            "[1,2",
            "[01]",
            "{\"a\" 1}",
            "tru",
            "nul",
            "[1,]",
            "\"a",
            "1 2",
            "'a'",
            "-",
            "1.",
            ".5",
            "+1",
            "\"\t\"",
        ] {
            assert_eq!(c(bad), "ERROR 22P02", "{bad:?}");
        }
        assert_eq!(c(r#""\u0000""#), "ERROR 22P05");
        assert_eq!(c(r#""\ud83d\ude00 \u00e9""#), "\"😀 é\"");
    }

    #[test]
    fn depth_and_size_are_bounded() {
        assert_eq!(c(&"[".repeat(100_000)), "ERROR 54001");
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(c(&deep), deep);
        let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(c(&too_deep), "ERROR 54001");
        let big = format!("\"{}\"", "x".repeat(MAX_DOCUMENT));
        assert_eq!(c(&big), "ERROR 54000");
        // Exponents make numbers longer than their input: the canonical size is bounded too.
        let wide = format!("[{}1]", "1e1000,".repeat(MAX_DOCUMENT / 1000));
        assert_eq!(c(&wide), "ERROR 54000");
        // jsonb_pretty's indentation is bounded (deep nesting times many elements).
        let nested = format!("{}{}{}", "[".repeat(MAX_DEPTH - 1), "1,".repeat(20_000), "1");
        let deep_wide = format!("{nested}{}", "]".repeat(MAX_DEPTH - 1));
        let doc = Value::Text(canonical(&deep_wide).expect("canonical"));
        let pretty = call(JsonbFn::Pretty, &[doc]).expect_err("pretty too big");
        assert_eq!(pretty.state, SqlState::ProgramLimitExceeded);
    }

    /// sqlparser 0.63's PostgreSQL dialect parses the jsonb operators to the operators the
    /// binder maps (`bind::expr::jsonb_operator`), with PostgreSQL's left associativity and
    /// below-comparison precedence where it matters (`d ->> 'k' = 'x'`).
    #[test]
    fn operators_parse_as_postgres_writes_them() {
        use sqlparser::ast::{BinaryOperator as B, Expr, SelectItem, SetExpr, Statement};
        let top = |sql: &str| -> (B, String, String) {
            let parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, sql);
            let Ok(mut statements) = parsed else { panic!("{sql}: {parsed:?}") };
            let Some(Statement::Query(q)) = statements.pop() else { panic!("{sql}: not a query") };
            let SetExpr::Select(s) = *q.body else { panic!("{sql}: not a select") };
            let Some(SelectItem::UnnamedExpr(Expr::BinaryOp { left, op, right })) = s.projection.first() else {
                panic!("{sql}: not a binary operator")
            };
            (op.clone(), left.to_string(), right.to_string())
        };
        for (sql, op) in [
            ("SELECT d -> 'a'", B::Arrow),
            ("SELECT d ->> 'a'", B::LongArrow),
            ("SELECT d #> '{a,b}'", B::HashArrow),
            ("SELECT d #>> '{a,b}'", B::HashLongArrow),
            ("SELECT d @> '{}'", B::AtArrow),
            ("SELECT d <@ '{}'", B::ArrowAt),
            ("SELECT d ? 'a'", B::Question),
            ("SELECT d ?| ARRAY['a']", B::QuestionPipe),
            ("SELECT d ?& ARRAY['a']", B::QuestionAnd),
            ("SELECT d #- '{a}'", B::HashMinus),
            ("SELECT d || '[1]'", B::StringConcat),
            ("SELECT d - 'a'", B::Minus),
        ] {
            assert_eq!(top(sql).0, op, "{sql}");
        }
        assert_eq!(top("SELECT d -> 'a' -> 0"), (B::Arrow, "d -> 'a'".into(), "0".into()));
        assert_eq!(top("SELECT d ->> 'k' = 'x'"), (B::Eq, "d ->> 'k'".into(), "'x'".into()));
        assert_eq!(top("SELECT d @> '{}' AND true").0, B::And);
    }

    #[test]
    fn containment_follows_postgres() {
        let has = |a: &str, b: &str| contains(&parse(a).expect("a"), &parse(b).expect("b"), true);
        assert!(has("[1,2]", "1"));
        assert!(!has("1", "[1]"));
        assert!(!has(r#"{"a":[1,2]}"#, r#"{"a":1}"#));
        assert!(has(r#"{"a":[1,2]}"#, r#"{"a":[2]}"#));
        assert!(has(r#"{"a":{"b":1,"c":2}}"#, r#"{"a":{"c":2}}"#));
        assert!(!has("[[1,2]]", "[1]"));
        assert!(has("[[1,2],3]", "[[2],3,3]"));
    }
}
