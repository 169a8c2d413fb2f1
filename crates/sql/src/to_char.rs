//! `to_char(timestamp | timestamptz | date, template)`, PostgreSQL 15's date/time formatting
//! (its "Template Patterns for Date/Time Formatting" table). Time zones are UTC: `TZ` shows
//! `UTC` for a timestamptz and nothing for a timestamp, `OF` shows `+00`.
//!
//! The template is read left to right; at each position the longest pattern that matches
//! wins, else a double-quoted string is copied without its quotes (a backslash in it copies
//! the next character), `\"` is a double quote, and any other character is copied. An empty
//! template gives NULL. Patterns may carry the `FM` prefix
//! (no padding) and the `TH` / `th` suffix (ordinal suffix of a number).

use crate::error::{err, Result, SqlState};
use crate::temporal::{days_from_civil, fields, iso_day_of_week, iso_week};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Longest template PostgreSQL formats (more would only be a memory hazard).
const MAX_TEMPLATE: usize = 4096;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

/// Patterns, longest first where one is a prefix of another. Matching ignores case except
/// where the case of the pattern chooses the case of a name (`Month`, `MONTH`, `month`).
const PATTERNS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "A.M.",
    "a.m.", "P.M.", "p.m.", "AM", "am", "PM", "pm", "Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "I",
    "B.C.", "b.c.", "A.D.", "a.d.", "BC", "bc", "AD", "ad", "MONTH", "Month", "month", "MON", "Mon", "mon", "MM",
    "DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "IDDD", "DD", "D", "ID", "W", "WW", "IW", "CC", "J", "Q", "RM", "rm",
    "TZH", "TZM", "TZ", "tz", "OF",
];

/// Names whose case is taken from the pattern; everything else matches in any case.
fn case_sensitive(p: &str) -> bool {
    ["MONTH", "MON", "DAY", "DY", "RM", "TZ", "AM", "PM", "BC", "AD"].iter().any(|n| p.eq_ignore_ascii_case(n))
        || p.contains('.')
}

/// The pattern at the start of `rest`, if any (longest match).
fn pattern_at(rest: &str) -> Option<&'static str> {
    PATTERNS
        .iter()
        .filter(|p| {
            rest.get(..p.len())
                .is_some_and(|head| if case_sensitive(p) { head == **p } else { head.eq_ignore_ascii_case(p) })
        })
        .max_by_key(|p| p.len())
        .copied()
}

/// A date or time value to format: microseconds since 1970-01-01 and whether it has a zone.
/// None for an empty template.
pub fn format(micros: i64, zoned: bool, template: &str) -> Result<Option<String>> {
    if template.is_empty() {
        return Ok(None);
    }
    if template.len() > MAX_TEMPLATE {
        return err(SqlState::ProgramLimitExceeded, format!("to_char template longer than {MAX_TEMPLATE} bytes"));
    }
    let [year, month, day, hour, minute, second, micro] = fields(micros);
    let days = micros.div_euclid(MICROS_PER_DAY);
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let (iso_year, iso_week_no) = iso_week(days);
    let iso_dow = iso_day_of_week(days);
    let sunday_dow = iso_dow % 7 + 1;
    let mut out = String::new();
    let mut rest = template;
    while !rest.is_empty() {
        let fill = !rest.get(..2).is_some_and(|head| head.eq_ignore_ascii_case("FM"));
        let body = if fill { rest } else { &rest[2..] };
        if let Some(p) = pattern_at(body) {
            rest = &body[p.len()..];
            let upper = p.to_ascii_uppercase();
            let num = |n: i64, width: usize| if fill { format!("{n:0width$}") } else { n.to_string() };
            let name = |full: &str, short: bool| {
                let text = if short { &full[..3] } else { full };
                let text = if p.chars().all(|c| !c.is_ascii_lowercase()) {
                    text.to_ascii_uppercase()
                } else if p.chars().skip(1).all(|c| c.is_ascii_lowercase()) && p.starts_with(char::is_uppercase) {
                    text.to_string()
                } else {
                    text.to_ascii_lowercase()
                };
                if fill && !short {
                    format!("{text:<9}")
                } else {
                    text
                }
            };
            // AM/PM or AD/BC: `first` when `is_first`, with dots if the pattern has them, in
            // the pattern's case.
            let marker = |is_first: bool, first: &str, second: &str| {
                let letters = if is_first { first } else { second };
                let text = if p.contains('.') {
                    letters.chars().flat_map(|c| [c, '.']).collect::<String>()
                } else {
                    letters.to_string()
                };
                if p.starts_with(char::is_lowercase) {
                    text.to_ascii_lowercase()
                } else {
                    text
                }
            };
            let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
            let (value, numeric) = match upper.as_str() {
                "HH" | "HH12" => (num(hour12, 2), Some(hour12)),
                "HH24" => (num(hour, 2), Some(hour)),
                "MI" => (num(minute, 2), Some(minute)),
                "SS" => (num(second, 2), Some(second)),
                "SSSS" | "SSSSS" => {
                    let s = hour * 3600 + minute * 60 + second;
                    (s.to_string(), Some(s))
                }
                "MS" => (num(micro / 1000, 3), Some(micro / 1000)),
                "US" => (num(micro, 6), Some(micro)),
                f if f.starts_with("FF") => {
                    let digits = usize::from(f.as_bytes()[2] - b'0');
                    let scaled = micro / 10i64.pow(6 - digits as u32);
                    (format!("{scaled:0digits$}"), Some(scaled))
                }
                "AM" | "PM" | "A.M." | "P.M." => (marker(hour < 12, "AM", "PM"), None),
                "AD" | "BC" | "A.D." | "B.C." => (marker(year > 0, "AD", "BC"), None),
                "Y,YYY" => (format!("{},{:03}", year / 1000, year % 1000), Some(year)),
                "YYYY" => (num(year, 4), Some(year)),
                "YYY" => (num(year % 1000, 3), Some(year % 1000)),
                "YY" => (num(year % 100, 2), Some(year % 100)),
                "Y" => ((year % 10).to_string(), Some(year % 10)),
                "IYYY" => (num(iso_year, 4), Some(iso_year)),
                "IYY" => (num(iso_year % 1000, 3), Some(iso_year % 1000)),
                "IY" => (num(iso_year % 100, 2), Some(iso_year % 100)),
                "I" => ((iso_year % 10).to_string(), Some(iso_year % 10)),
                "MONTH" => (name(MONTHS[(month - 1) as usize], false), None),
                "MON" => (name(MONTHS[(month - 1) as usize], true), None),
                "MM" => (num(month, 2), Some(month)),
                "DAY" => (name(DAYS[(sunday_dow - 1) as usize], false), None),
                "DY" => (name(DAYS[(sunday_dow - 1) as usize], true), None),
                "DDD" => (num(day_of_year, 3), Some(day_of_year)),
                "IDDD" => {
                    let n = (iso_week_no - 1) * 7 + iso_dow;
                    (num(n, 3), Some(n))
                }
                "DD" => (num(day, 2), Some(day)),
                "D" => (sunday_dow.to_string(), Some(sunday_dow)),
                "ID" => (iso_dow.to_string(), Some(iso_dow)),
                "W" => ((((day - 1) / 7) + 1).to_string(), Some((day - 1) / 7 + 1)),
                "WW" => (num((day_of_year - 1) / 7 + 1, 2), Some((day_of_year - 1) / 7 + 1)),
                "IW" => (num(iso_week_no, 2), Some(iso_week_no)),
                "CC" => {
                    let cc = if year > 0 { (year + 99) / 100 } else { -((99 - year) / 100) };
                    (num(cc, 2), Some(cc))
                }
                "J" => {
                    let j = days + 2_440_588;
                    (j.to_string(), Some(j))
                }
                "Q" => (((month + 2) / 3).to_string(), Some((month + 2) / 3)),
                "RM" => {
                    let numeral = ROMAN[(month - 1) as usize];
                    let text = if p == "rm" { numeral.to_ascii_lowercase() } else { numeral.to_string() };
                    (if fill { format!("{text:<4}") } else { text }, None)
                }
                "TZ" if zoned => (if p == "tz" { "utc".to_string() } else { "UTC".to_string() }, None),
                "TZ" => (String::new(), None),
                "TZH" => ("+00".to_string(), None),
                "TZM" => ("00".to_string(), None),
                "OF" => ("+00".to_string(), None),
                _ => return err(SqlState::InternalError, format!("to_char pattern {p} without a value")),
            };
            out.push_str(&value);
            // The ordinal suffix of a number.
            if let (Some(n), Some(suffix)) = (numeric, rest.get(..2).filter(|s| *s == "TH" || *s == "th")) {
                rest = &rest[2..];
                let ordinal = match (n % 100, n % 10) {
                    (11..=13, _) => "th",
                    (_, 1) => "st",
                    (_, 2) => "nd",
                    (_, 3) => "rd",
                    _ => "th",
                };
                out.push_str(&if suffix == "TH" { ordinal.to_ascii_uppercase() } else { ordinal.to_string() });
            }
            continue;
        }
        if !fill {
            // `FM` before something that is not a pattern is copied as it is.
            out.push_str(&rest[..2]);
            rest = &rest[2..];
            continue;
        }
        let mut chars = rest.chars();
        match chars.next() {
            Some('"') => {
                let mut literal = chars.as_str();
                while let Some(c) = literal.chars().next() {
                    literal = &literal[c.len_utf8()..];
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(next) = literal.chars().next() {
                                out.push(next);
                                literal = &literal[next.len_utf8()..];
                            }
                        }
                        c => out.push(c),
                    }
                }
                rest = literal;
            }
            // Outside quotes a backslash escapes only a double quote.
            Some('\\') if chars.as_str().starts_with('"') => {
                out.push('"');
                rest = &chars.as_str()[1..];
            }
            Some(c) => {
                out.push(c);
                rest = chars.as_str();
            }
            None => break,
        }
    }
    Ok(Some(out))
}
