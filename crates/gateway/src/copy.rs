//! COPY's data formats: the options of a `COPY` statement, an incremental parser of the
//! text and CSV formats (what arrives in CopyData messages) and their output. Sans-IO: the
//! connection feeds bytes in and takes records out.
//!
//! Both formats follow PostgreSQL 15 (`copyfromparse.c`, `copyto.c`): text-format
//! backslash escapes, `\N` as NULL (compared before de-escaping), `\.` ending the data; CSV
//! quoting with QUOTE and ESCAPE, NULL only when unquoted, quoted fields spanning lines.
//! Lines end with `\n` or `\r\n` (the first line decides); the old bare-`\r` line ending is
//! not recognized.

use crate::errors::{PgError, FEATURE_NOT_SUPPORTED, PROGRAM_LIMIT};
use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption};

pub const BAD_COPY_FORMAT: &str = "22P04";
pub const INVALID_PARAMETER_VALUE: &str = "22023";
pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
pub const SYNTAX_ERROR: &str = "42601";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Csv,
}

/// A COPY statement's options, checked as PostgreSQL checks them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: Format,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

fn bad_option(message: impl Into<String>) -> PgError {
    PgError::new(SYNTAX_ERROR, message)
}

fn single_byte(c: char, what: &str) -> Result<u8, PgError> {
    if c.is_ascii() {
        Ok(c as u8)
    } else {
        Err(PgError::new(FEATURE_NOT_SUPPORTED, format!("COPY {what} must be a single one-byte character")))
    }
}

impl CopyOptions {
    /// From `WITH (…)` options and the pre-9.0 forms (`CSV HEADER`, `DELIMITER 'x'`, …).
    pub fn parse(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CopyOptions, PgError> {
        let mut format = None;
        let (mut delimiter, mut null, mut header, mut quote, mut escape) = (None, None, None, None, None);
        fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), PgError> {
            if slot.is_some() {
                return Err(bad_option("conflicting or redundant options"));
            }
            *slot = Some(value);
            Ok(())
        }
        for option in options {
            match option {
                CopyOption::Format(name) => {
                    let f = match name.value.to_ascii_lowercase().as_str() {
                        "text" => Format::Text,
                        "csv" => Format::Csv,
                        "binary" => {
                            return Err(PgError::new(FEATURE_NOT_SUPPORTED, "COPY binary format is not supported"))
                        }
                        other => {
                            return Err(PgError::new(
                                INVALID_PARAMETER_VALUE,
                                format!("COPY format \"{other}\" not recognized"),
                            ))
                        }
                    };
                    once(&mut format, f)?;
                }
                // FREEZE lets PostgreSQL skip later vacuuming; Pistou has none to skip.
                CopyOption::Freeze(_) => {}
                CopyOption::Delimiter(c) => once(&mut delimiter, single_byte(*c, "delimiter")?)?,
                CopyOption::Null(s) => once(&mut null, s.clone())?,
                CopyOption::Header(h) => once(&mut header, *h)?,
                CopyOption::Quote(c) => once(&mut quote, single_byte(*c, "quote")?)?,
                CopyOption::Escape(c) => once(&mut escape, single_byte(*c, "escape")?)?,
                CopyOption::Encoding(e) => {
                    let e = e.to_ascii_lowercase().replace(['-', '_'], "");
                    if e != "utf8" {
                        return Err(PgError::new(FEATURE_NOT_SUPPORTED, "COPY supports only the UTF8 encoding"));
                    }
                }
                CopyOption::ForceQuote(_) | CopyOption::ForceNotNull(_) | CopyOption::ForceNull(_) => {
                    return Err(PgError::new(
                        FEATURE_NOT_SUPPORTED,
                        "COPY FORCE_QUOTE, FORCE_NOT_NULL and FORCE_NULL are not supported",
                    ))
                }
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Binary => {
                    return Err(PgError::new(FEATURE_NOT_SUPPORTED, "COPY binary format is not supported"))
                }
                CopyLegacyOption::Delimiter(c) => once(&mut delimiter, single_byte(*c, "delimiter")?)?,
                CopyLegacyOption::Null(s) => once(&mut null, s.clone())?,
                CopyLegacyOption::Csv(csv) => {
                    once(&mut format, Format::Csv)?;
                    for o in csv {
                        match o {
                            CopyLegacyCsvOption::Header => once(&mut header, true)?,
                            CopyLegacyCsvOption::Quote(c) => once(&mut quote, single_byte(*c, "quote")?)?,
                            CopyLegacyCsvOption::Escape(c) => once(&mut escape, single_byte(*c, "escape")?)?,
                            _ => {
                                return Err(PgError::new(
                                    FEATURE_NOT_SUPPORTED,
                                    "COPY FORCE_QUOTE, FORCE_NOT_NULL and FORCE_NULL are not supported",
                                ))
                            }
                        }
                    }
                }
                other => {
                    return Err(PgError::new(FEATURE_NOT_SUPPORTED, format!("COPY option {other} is not supported")))
                }
            }
        }
        let format = format.unwrap_or(Format::Text);
        let csv = format == Format::Csv;
        if !csv && quote.is_some() {
            return Err(PgError::new(FEATURE_NOT_SUPPORTED, "COPY quote available only in CSV mode"));
        }
        if !csv && escape.is_some() {
            return Err(PgError::new(FEATURE_NOT_SUPPORTED, "COPY escape available only in CSV mode"));
        }
        let delimiter = delimiter.unwrap_or(if csv { b',' } else { b'\t' });
        let null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
        let quote = quote.unwrap_or(b'"');
        let escape = escape.unwrap_or(quote);
        if delimiter == b'\n' || delimiter == b'\r' {
            return Err(PgError::new(INVALID_PARAMETER_VALUE, "COPY delimiter cannot be newline or carriage return"));
        }
        if null.contains(['\n', '\r']) {
            return Err(PgError::new(
                INVALID_PARAMETER_VALUE,
                "COPY null representation cannot use newline or carriage return",
            ));
        }
        if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&delimiter.to_ascii_lowercase()) {
            return Err(PgError::new(
                INVALID_PARAMETER_VALUE,
                format!("COPY delimiter cannot be \"{}\"", delimiter as char),
            ));
        }
        if csv && delimiter == quote {
            return Err(PgError::new(INVALID_PARAMETER_VALUE, "COPY delimiter and quote must be different"));
        }
        if null.as_bytes().contains(&delimiter) {
            return Err(PgError::new(
                INVALID_PARAMETER_VALUE,
                "COPY delimiter character must not appear in the NULL specification",
            ));
        }
        if csv && null.as_bytes().contains(&quote) {
            return Err(PgError::new(
                FEATURE_NOT_SUPPORTED,
                "CSV quote character must not appear in the NULL specification",
            ));
        }
        Ok(CopyOptions { format, delimiter, null, header: header.unwrap_or(false), quote, escape })
    }
}

/// One input record: a value per field, None for NULL.
pub type Record = Vec<Option<String>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Eol {
    Nl,
    CrNl,
}

/// Incremental parser of COPY FROM input.
pub struct CopyIn {
    options: CopyOptions,
    /// Column names, in input order (for "missing data for column" errors).
    columns: Vec<String>,
    max_record: usize,
    buf: Vec<u8>,
    pos: usize,
    /// Line number of the next record (1-based, as PostgreSQL counts in its CONTEXT).
    line: u64,
    header_pending: bool,
    eol: Option<Eol>,
    /// `\.` was seen: the rest of the input is ignored.
    ended: bool,
    /// `\.` ended a line that had fields: the data ends after that record.
    ended_after_record: bool,
}

impl CopyIn {
    /// `max_record`: the longest record accepted, in bytes (54000 beyond).
    pub fn new(options: CopyOptions, columns: Vec<String>, max_record: usize) -> CopyIn {
        let header_pending = options.header;
        CopyIn {
            options,
            columns,
            max_record,
            buf: Vec::new(),
            pos: 0,
            line: 1,
            header_pending,
            eol: None,
            ended: false,
            ended_after_record: false,
        }
    }

    /// The line number the next error refers to.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Appends a CopyData message's bytes.
    pub fn push(&mut self, data: &[u8]) {
        if self.ended {
            return;
        }
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete record, if any; `at_end` once CopyDone arrived (a last line
    /// without its newline is then complete).
    pub fn next_record(&mut self, at_end: bool) -> Result<Option<Record>, PgError> {
        loop {
            if self.ended || self.pos >= self.buf.len() {
                return Ok(None);
            }
            let found = match self.options.format {
                Format::Text => self.text_line(at_end)?,
                Format::Csv => self.csv_record(at_end)?,
            };
            let Some(fields) = found else {
                if self.buf.len() - self.pos > self.max_record {
                    return Err(self
                        .error(PROGRAM_LIMIT, format!("COPY line is too long (more than {} bytes)", self.max_record)));
                }
                return Ok(None);
            };
            let Some(fields) = fields else {
                // The end-of-data marker.
                self.ended = true;
                return Ok(None);
            };
            self.line += 1;
            if std::mem::take(&mut self.ended_after_record) {
                self.ended = true;
            }
            if std::mem::take(&mut self.header_pending) {
                continue;
            }
            return self.check_count(fields).map(Some);
        }
    }

    fn error(&self, code: &'static str, message: impl Into<String>) -> PgError {
        PgError::new(code, message)
    }

    fn check_count(&self, fields: Record) -> Result<Record, PgError> {
        if fields.len() > self.columns.len() {
            return Err(self.error(BAD_COPY_FORMAT, "extra data after last expected column"));
        }
        if let Some(missing) = self.columns.get(fields.len()) {
            return Err(self.error(BAD_COPY_FORMAT, format!("missing data for column \"{missing}\"")));
        }
        Ok(fields)
    }

    /// The line ending of the line that ends at `nl` (the index of its `\n`), checked
    /// against the first line's.
    fn line_end(&mut self, start: usize, nl: usize) -> Result<usize, PgError> {
        let crlf = nl > start && self.buf.get(nl - 1) == Some(&b'\r');
        let eol = if crlf { Eol::CrNl } else { Eol::Nl };
        match self.eol {
            None => self.eol = Some(eol),
            Some(Eol::CrNl) if !crlf => return Err(self.error(BAD_COPY_FORMAT, "literal newline found in data")),
            Some(Eol::Nl) if crlf => return Err(self.error(BAD_COPY_FORMAT, "literal carriage return found in data")),
            Some(_) => {}
        }
        Ok(if crlf { nl - 1 } else { nl })
    }

    /// Text format: one line. `Some(None)` is the end marker.
    #[allow(clippy::type_complexity)]
    fn text_line(&mut self, at_end: bool) -> Result<Option<Option<Record>>, PgError> {
        let start = self.pos;
        let rest = &self.buf[start..];
        let (end, next) = match rest.iter().position(|b| *b == b'\n') {
            Some(i) => (self.line_end(start, start + i)?, start + i + 1),
            None if at_end => (self.buf.len(), self.buf.len()),
            None => return Ok(None),
        };
        if end - start > self.max_record {
            return Err(
                self.error(PROGRAM_LIMIT, format!("COPY line is too long (more than {} bytes)", self.max_record))
            );
        }
        self.pos = next;
        let line = &self.buf[start..end];
        if line == b"\\." {
            return Ok(Some(None));
        }
        let delimiter = self.options.delimiter;
        let null = self.options.null.as_bytes();
        let mut fields = Vec::new();
        let mut i = 0;
        let mut field_start = 0;
        loop {
            let at_delimiter = line.get(i) == Some(&delimiter);
            if i == line.len() || at_delimiter {
                let raw = &line[field_start..i];
                fields.push(if raw == null { None } else { Some(self.unescape_text(raw)?) });
                if i == line.len() {
                    break;
                }
                i += 1;
                field_start = i;
                continue;
            }
            match line[i] {
                b'\\' => {
                    // `\.` is the end-of-data marker wherever it is, as in PostgreSQL 15: at
                    // the end of a line it ends the data after that line's fields; anything
                    // after it on the line is an error.
                    if line.get(i + 1) == Some(&b'.') {
                        if i + 2 != line.len() {
                            return Err(self.error(BAD_COPY_FORMAT, "end-of-copy marker corrupt"));
                        }
                        let raw = &line[field_start..i];
                        fields.push(if raw == null { None } else { Some(self.unescape_text(raw)?) });
                        self.pos = self.buf.len();
                        self.ended_after_record = true;
                        return Ok(Some(Some(fields)));
                    }
                    i += 2;
                    i = i.min(line.len());
                }
                b'\r' => return Err(self.error(BAD_COPY_FORMAT, "literal carriage return found in data")),
                _ => i += 1,
            }
        }
        Ok(Some(Some(fields)))
    }

    fn unescape_text(&self, raw: &[u8]) -> Result<String, PgError> {
        if !raw.contains(&b'\\') {
            return self.utf8(raw.to_vec());
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while let Some(&b) = raw.get(i) {
            i += 1;
            if b != b'\\' {
                out.push(b);
                continue;
            }
            let Some(&c) = raw.get(i) else {
                // A backslash ending the line: PostgreSQL keeps it.
                out.push(b'\\');
                break;
            };
            i += 1;
            match c {
                b'0'..=b'7' => {
                    let mut v = u32::from(c - b'0');
                    for _ in 0..2 {
                        match raw.get(i) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push((v & 0xff) as u8);
                }
                b'x' => {
                    let hex = |d: Option<&u8>| d.and_then(|d| (*d as char).to_digit(16));
                    match hex(raw.get(i)) {
                        Some(h) => {
                            i += 1;
                            let mut v = h;
                            if let Some(l) = hex(raw.get(i)) {
                                v = v * 16 + l;
                                i += 1;
                            }
                            out.push(v as u8);
                        }
                        None => out.push(b'x'),
                    }
                }
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(11),
                other => out.push(other),
            }
        }
        self.utf8(out)
    }

    fn utf8(&self, bytes: Vec<u8>) -> Result<String, PgError> {
        if let Some(at) = bytes.iter().position(|b| *b == 0) {
            let _ = at;
            return Err(self.error(CHARACTER_NOT_IN_REPERTOIRE, "invalid byte sequence for encoding \"UTF8\": 0x00"));
        }
        String::from_utf8(bytes).map_err(|e| {
            let bad = e.as_bytes().get(e.utf8_error().valid_up_to()).copied().unwrap_or(0);
            self.error(CHARACTER_NOT_IN_REPERTOIRE, format!("invalid byte sequence for encoding \"UTF8\": 0x{bad:02x}"))
        })
    }

    /// CSV: one record, possibly over several lines. `Some(None)` is the end marker.
    #[allow(clippy::type_complexity)]
    fn csv_record(&mut self, at_end: bool) -> Result<Option<Option<Record>>, PgError> {
        let (delimiter, quote, escape) = (self.options.delimiter, self.options.quote, self.options.escape);
        let null = self.options.null.as_bytes();
        let start = self.pos;
        let buf = &self.buf;
        let mut fields: Record = Vec::new();
        let mut field: Vec<u8> = Vec::new();
        let mut raw_start = start;
        let mut quoted = false;
        let mut in_quotes = false;
        let mut lines = 0u64;
        let mut i = start;
        // Where the record ends: (index after its line ending, the line ending's index).
        let end;
        loop {
            if i - start > self.max_record {
                return Err(
                    self.error(PROGRAM_LIMIT, format!("COPY line is too long (more than {} bytes)", self.max_record))
                );
            }
            let Some(&b) = buf.get(i) else {
                if !at_end {
                    return Ok(None);
                }
                if in_quotes {
                    return Err(self.error(BAD_COPY_FORMAT, "unterminated CSV quoted field"));
                }
                end = (buf.len(), buf.len());
                break;
            };
            if in_quotes {
                if b == escape
                    && buf.get(i + 1).is_some_and(|n| *n == quote || *n == escape)
                    && (escape != quote || buf.get(i + 1) == Some(&quote))
                {
                    field.push(buf[i + 1]);
                    i += 2;
                    continue;
                }
                if b == quote {
                    in_quotes = false;
                    i += 1;
                    continue;
                }
                if b == b'\n' {
                    lines += 1;
                }
                field.push(b);
                i += 1;
                continue;
            }
            if b == quote {
                in_quotes = true;
                quoted = true;
                i += 1;
                continue;
            }
            if b == delimiter {
                fields.push(self.csv_field(std::mem::take(&mut field), quoted, &buf[raw_start..i], null)?);
                quoted = false;
                i += 1;
                raw_start = i;
                continue;
            }
            if b == b'\n' {
                end = (i + 1, i);
                break;
            }
            if b == b'\r' {
                if buf.get(i + 1) == Some(&b'\n') {
                    end = (i + 2, i);
                    break;
                }
                if buf.get(i + 1).is_none() && !at_end {
                    return Ok(None);
                }
                return Err(self.error(BAD_COPY_FORMAT, "unquoted carriage return found in data"));
            }
            field.push(b);
            i += 1;
        }
        let (next, line_end) = end;
        let last_raw = &buf[raw_start..line_end];
        // `\.` alone on a line ends the data.
        if fields.is_empty() && !quoted && last_raw == b"\\." {
            self.pos = next;
            return Ok(Some(None));
        }
        fields.push(self.csv_field(field, quoted, last_raw, null)?);
        if line_end < next {
            let crlf = next - line_end == 2;
            let eol = if crlf { Eol::CrNl } else { Eol::Nl };
            match self.eol {
                None => self.eol = Some(eol),
                Some(e) if e != eol => {
                    return Err(self.error(
                        BAD_COPY_FORMAT,
                        if crlf { "unquoted carriage return found in data" } else { "unquoted newline found in data" },
                    ))
                }
                Some(_) => {}
            }
        }
        self.pos = next;
        self.line += lines;
        Ok(Some(Some(fields)))
    }

    fn csv_field(&self, value: Vec<u8>, quoted: bool, raw: &[u8], null: &[u8]) -> Result<Option<String>, PgError> {
        if !quoted && raw == null {
            return Ok(None);
        }
        self.utf8(value).map(Some)
    }
}

/// One output line of COPY TO in `options`' format (with its newline).
pub fn format_record<'a>(options: &CopyOptions, values: impl Iterator<Item = Option<&'a str>>, out: &mut Vec<u8>) {
    for (i, value) in values.enumerate() {
        if i > 0 {
            out.push(options.delimiter);
        }
        match (value, options.format) {
            (None, _) => out.extend_from_slice(options.null.as_bytes()),
            (Some(v), Format::Text) => {
                for &b in v.as_bytes() {
                    match b {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b'\t' => out.extend_from_slice(b"\\t"),
                        8 => out.extend_from_slice(b"\\b"),
                        12 => out.extend_from_slice(b"\\f"),
                        11 => out.extend_from_slice(b"\\v"),
                        d if d == options.delimiter => {
                            out.push(b'\\');
                            out.push(d);
                        }
                        other => out.push(other),
                    }
                }
            }
            (Some(v), Format::Csv) => {
                let bytes = v.as_bytes();
                let needs_quotes = v == options.null
                    || (v == "\\." && i == 0)
                    || bytes
                        .iter()
                        .any(|b| *b == options.delimiter || *b == options.quote || *b == b'\n' || *b == b'\r');
                if !needs_quotes {
                    out.extend_from_slice(bytes);
                    continue;
                }
                out.push(options.quote);
                for &b in bytes {
                    if b == options.quote || b == options.escape {
                        out.push(options.escape);
                    }
                    out.push(b);
                }
                out.push(options.quote);
            }
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(format: Format) -> CopyOptions {
        let csv = format == Format::Csv;
        CopyOptions {
            format,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".into() },
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }

    fn parse_all(options: CopyOptions, columns: usize, chunks: &[&[u8]]) -> Result<Vec<Record>, PgError> {
        let names = (0..columns).map(|i| format!("c{i}")).collect();
        let mut p = CopyIn::new(options, names, 1 << 16);
        let mut out = Vec::new();
        for c in chunks {
            p.push(c);
            while let Some(r) = p.next_record(false)? {
                out.push(r);
            }
        }
        while let Some(r) = p.next_record(true)? {
            out.push(r);
        }
        Ok(out)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn text_escapes_and_nulls() {
        let input: &[u8] = b"1\ta\\tb\t\\N\n2\t\\\\N\t\\x41\\101\\7\n3\t\\q\\n\t\n";
        let rows = parse_all(opts(Format::Text), 3, &[input]).expect("parse");
        assert_eq!(rows[0], vec![s("1"), s("a\tb"), None]);
        assert_eq!(rows[1], vec![s("2"), s("\\N"), s("AA\u{7}")]);
        assert_eq!(rows[2], vec![s("3"), s("q\n"), s("")]);
    }

    #[test]
    fn text_records_split_across_messages_and_end_marker() {
        let rows = parse_all(opts(Format::Text), 2, &[b"1\tab", b"c\n2", b"\tx\r", b"\n"]);
        // The first line sets the line ending to \n: a later \r\n is a literal CR.
        assert_eq!(rows.expect_err("mixed endings").code, BAD_COPY_FORMAT);
        let rows = parse_all(opts(Format::Text), 2, &[b"1\tab", b"c\n2", b"\tx\n\\.\nignored"]).expect("parse");
        assert_eq!(rows, vec![vec![s("1"), s("abc")], vec![s("2"), s("x")]]);
        let rows = parse_all(opts(Format::Text), 1, &[b"a\r\nb\r\n"]).expect("crlf");
        assert_eq!(rows, vec![vec![s("a")], vec![s("b")]]);
        // A last line without newline is complete at CopyDone; an empty line is one empty field.
        let rows = parse_all(opts(Format::Text), 2, &[b"a\tb\\.\nignored\n"]).expect("parse");
        assert_eq!(rows, vec![vec![s("a"), s("b")]]);
        let rows = parse_all(opts(Format::Text), 1, &[b"\nlast"]).expect("parse");
        assert_eq!(rows, vec![vec![s("")], vec![s("last")]]);
    }

    #[test]
    fn text_malformed_input() {
        let code = |cols, input: &[u8]| parse_all(opts(Format::Text), cols, &[input]).expect_err("must fail").code;
        assert_eq!(code(2, b"1\t2\t3\n"), BAD_COPY_FORMAT);
        assert_eq!(code(3, b"1\t2\n"), BAD_COPY_FORMAT);
        assert_eq!(code(1, b"a\\.b\n"), BAD_COPY_FORMAT);
        assert_eq!(code(1, b"\xff\n"), CHARACTER_NOT_IN_REPERTOIRE);
        assert_eq!(code(1, b"\\000\n"), CHARACTER_NOT_IN_REPERTOIRE);
        assert_eq!(code(1, b"\\xc3\\x28\n"), CHARACTER_NOT_IN_REPERTOIRE);
        assert_eq!(code(1, b"a\rb\n"), BAD_COPY_FORMAT);
        let e = parse_all(opts(Format::Text), 2, &[b"1\n"]).expect_err("missing");
        assert_eq!(e.message, "missing data for column \"c1\"");
    }

    #[test]
    fn csv_quoting() {
        let input: &[u8] = b"1,\"a,b\",\"\"\n2,,\"x\"\"y\"\n3,\"multi\nline\",plain\"quoted\"part\n";
        let rows = parse_all(opts(Format::Csv), 3, &[input]).expect("parse");
        assert_eq!(rows[0], vec![s("1"), s("a,b"), s("")]);
        assert_eq!(rows[1], vec![s("2"), None, s("x\"y")]);
        assert_eq!(rows[2], vec![s("3"), s("multi\nline"), s("plainquotedpart")]);
        // A quoted field split across messages waits for its closing quote.
        let rows = parse_all(opts(Format::Csv), 2, &[b"1,\"a\n", b"b\"\n\\.\n"]).expect("parse");
        assert_eq!(rows, vec![vec![s("1"), s("a\nb")]]);
        // ESCAPE other than QUOTE, and a different NULL string.
        let mut o = opts(Format::Csv);
        o.escape = b'\\';
        o.null = "NULL".into();
        let rows = parse_all(o, 3, &[b"\"a\\\"b\",NULL,\"NULL\"\n"]).expect("parse");
        assert_eq!(rows, vec![vec![s("a\"b"), None, s("NULL")]]);
    }

    #[test]
    fn csv_header_and_malformed_input() {
        let mut o = opts(Format::Csv);
        o.header = true;
        let rows = parse_all(o, 2, &[b"a,b\n1,2\n"]).expect("parse");
        assert_eq!(rows, vec![vec![s("1"), s("2")]]);
        let code = |cols, input: &[u8]| parse_all(opts(Format::Csv), cols, &[input]).expect_err("must fail").code;
        assert_eq!(code(2, b"1,\"open\n"), BAD_COPY_FORMAT);
        assert_eq!(code(1, b"a\rb\n"), BAD_COPY_FORMAT);
        assert_eq!(code(2, b"1,2,3\n"), BAD_COPY_FORMAT);
    }

    #[test]
    fn limits() {
        let names = vec!["a".to_string()];
        let mut p = CopyIn::new(opts(Format::Text), names.clone(), 8);
        p.push(b"0123456789");
        assert_eq!(p.next_record(false).expect_err("too long").code, PROGRAM_LIMIT);
        let mut p = CopyIn::new(opts(Format::Csv), names, 8);
        p.push(b"\"0123456789");
        assert_eq!(p.next_record(false).expect_err("too long").code, PROGRAM_LIMIT);
    }

    #[test]
    fn output_round_trips() {
        for format in [Format::Text, Format::Csv] {
            let o = opts(format);
            let values = [Some("plain"), None, Some(""), Some("tab\there"), Some("q\"uote,comma\nline\\")];
            let mut out = Vec::new();
            format_record(&o, values.iter().copied(), &mut out);
            let rows = parse_all(o, values.len(), &[&out]).expect("parse own output");
            let expected: Record = values.iter().map(|v| v.map(str::to_string)).collect();
            assert_eq!(rows, vec![expected]);
        }
        let mut out = Vec::new();
        format_record(&opts(Format::Csv), [Some("a"), None, Some("")].into_iter(), &mut out);
        assert_eq!(out, b"a,,\"\"\n");
    }

    #[test]
    fn options_follow_postgres() {
        use sqlparser::ast::Ident;
        let o =
            CopyOptions::parse(&[CopyOption::Format(Ident::new("csv")), CopyOption::Header(true)], &[]).expect("ok");
        assert_eq!((o.format, o.delimiter, o.null.as_str(), o.header), (Format::Csv, b',', "", true));
        let err = |options: &[CopyOption]| CopyOptions::parse(options, &[]).expect_err("must fail").code;
        assert_eq!(err(&[CopyOption::Quote('\'')]), FEATURE_NOT_SUPPORTED);
        assert_eq!(err(&[CopyOption::Delimiter('a')]), INVALID_PARAMETER_VALUE);
        assert_eq!(err(&[CopyOption::Format(Ident::new("binary"))]), FEATURE_NOT_SUPPORTED);
        assert_eq!(err(&[CopyOption::Format(Ident::new("xml"))]), INVALID_PARAMETER_VALUE);
        assert_eq!(err(&[CopyOption::Header(true), CopyOption::Header(false)]), SYNTAX_ERROR);
        assert_eq!(err(&[CopyOption::Delimiter(','), CopyOption::Null("a,b".into())]), INVALID_PARAMETER_VALUE);
        assert!(CopyOptions::parse(&[CopyOption::Freeze(true)], &[]).is_ok());
    }
}
