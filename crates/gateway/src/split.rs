//! Splits a simple-query string into statements at top-level `;`, respecting quotes
//! ('…' with '' escapes, E'…' with backslash escapes, "…" identifiers, $tag$…$tag$),
//! `--` line comments and nested `/* */` comments. Empty statements are dropped.

/// The statements of `text`, trimmed, without their terminating `;`.
pub fn split_statements(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b';' => {
                push(&mut out, &text[start..i]);
                start = i + 1;
                i += 1;
            }
            b'\'' => {
                let escapes = i > 0 && matches!(bytes[i - 1], b'e' | b'E') && (i < 2 || !is_ident(bytes[i - 2]));
                i = skip_quoted(bytes, i, b'\'', escapes);
            }
            b'"' => i = skip_quoted(bytes, i, b'"', false),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_block_comment(bytes, i),
            b'$' if i == 0 || !is_ident(bytes[i - 1]) => i = skip_dollar_quoted(text, i),
            _ => i += 1,
        }
    }
    push(&mut out, &text[start..]);
    out
}

fn push<'a>(out: &mut Vec<&'a str>, statement: &'a str) {
    if !is_blank(statement) {
        out.push(statement.trim());
    }
}

/// True when `text` holds nothing but whitespace and comments.
pub fn is_blank(text: &str) -> bool {
    strip_comments(text).trim().is_empty()
}

/// `text` without its leading whitespace and comments.
pub fn strip_comments(text: &str) -> &str {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if rest.starts_with("/*") {
            let end = skip_block_comment(rest.as_bytes(), 0);
            rest = rest.get(end..).unwrap_or("").trim_start();
        } else {
            return rest;
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Index just past the closing quote (a doubled quote is an escaped one).
fn skip_quoted(bytes: &[u8], open: usize, quote: u8, backslash_escapes: bool) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        if backslash_escapes && bytes[i] == b'\\' {
            i += 2;
        } else if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

fn skip_block_comment(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i + 1 < bytes.len() {
        if bytes[i] == b'/' && bytes[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// `$tag$ … $tag$`; a `$` that does not open a tag (e.g. `$1`) is skipped alone.
fn skip_dollar_quoted(text: &str, open: usize) -> usize {
    let rest = &text[open + 1..];
    let Some(close) = rest.find('$') else { return open + 1 };
    let tag = &rest[..close];
    if !tag.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_' || b >= 0x80) {
        return open + 1;
    }
    let delimiter = &text[open..open + close + 2];
    let body_start = open + delimiter.len();
    match text[body_start..].find(delimiter) {
        Some(end) => body_start + end + delimiter.len(),
        None => text.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_top_level_semicolons_only() {
        let sql = "CREATE TABLE t (a TEXT); INSERT INTO t VALUES ('x;y'), (E'it\\'s;'); \
                   SELECT \"we;ird\" FROM t -- c;omment\n; /* a ; /* nested ; */ */ SELECT $$a;b$$, $1;;";
        assert_eq!(
            split_statements(sql),
            vec![
                "CREATE TABLE t (a TEXT)",
                "INSERT INTO t VALUES ('x;y'), (E'it\\'s;')",
                "SELECT \"we;ird\" FROM t -- c;omment",
                "/* a ; /* nested ; */ */ SELECT $$a;b$$, $1",
            ]
        );
    }

    #[test]
    fn blank_input_has_no_statements() {
        assert!(split_statements(" ; ;\n-- only a comment\n").is_empty());
        assert!(split_statements("").is_empty());
        assert_eq!(strip_comments("/* x */ -- y\n  SELECT 1"), "SELECT 1");
    }

    #[test]
    fn unterminated_quotes_do_not_panic() {
        assert_eq!(split_statements("SELECT 'abc; SELECT 2").len(), 1);
        assert_eq!(split_statements("SELECT $tag$ abc; ").len(), 1);
        assert_eq!(split_statements("/* open").len(), 0);
    }
}
