//! `to_char(timestamp | timestamptz | date | interval, template)`, PostgreSQL 15's date/time
//! formatting (its "Template Patterns for Date/Time Formatting" table). Time zones are UTC:
//! `TZ` shows `UTC` for a timestamptz and nothing for a timestamp, `OF` shows `+00`.
//!
//! The template is read left to right; at each position the longest pattern that matches
//! wins, else a double-quoted string is copied without its quotes (a backslash in it copies
//! the next character), `\"` is a double quote, and any other character is copied. An empty
//! template gives NULL. Patterns are matched in capitals or small letters (names also
//! capitalized, `Month`), and may carry one prefix, `FM` (no padding) or `TM`, and one suffix,
//! `TH` / `th` (ordinal suffix of a number) or `SP` (ignored, as by PostgreSQL).
//!
//! An interval prints its parts as PostgreSQL's `interval2itm` splits them, each with the
//! interval's sign: years and months from its months, its days, and hours (not wrapped at 24),
//! minutes, seconds and fractions from its time; `DDD` is the span in 30-day months, `J` the
//! Julian day of the year/month/day the parts make. Patterns tied to calendar dates (names,
//! weekdays, eras, zones) fail with 22007 as in PostgreSQL; the ISO-week patterns apply
//! PostgreSQL's date arithmetic to the interval's year, month and day fields, as it does.

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

/// Patterns, longest first where one is a prefix of another. Each is written in capitals or
/// in small letters (as PostgreSQL's keyword table has them), and where the case chooses the
/// case of a name also capitalized (`Month`, `Day`).
const PATTERNS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6", "A.M.",
    "a.m.", "P.M.", "p.m.", "AM", "am", "PM", "pm", "Y,YYY", "YYYY", "YYY", "YY", "Y", "IYYY", "IYY", "IY", "I",
    "B.C.", "b.c.", "A.D.", "a.d.", "BC", "bc", "AD", "ad", "MONTH", "Month", "month", "MON", "Mon", "mon", "MM",
    "DAY", "Day", "day", "DY", "Dy", "dy", "DDD", "IDDD", "DD", "D", "ID", "W", "WW", "IW", "CC", "J", "Q", "RM", "rm",
    "TZH", "TZM", "TZ", "tz", "OF", "FX",
];

/// Names whose case is taken from the pattern.
fn case_sensitive(p: &str) -> bool {
    ["MONTH", "MON", "DAY", "DY", "RM", "TZ", "AM", "PM", "BC", "AD"].iter().any(|n| p.eq_ignore_ascii_case(n))
        || p.contains('.')
}

/// The pattern at the start of `rest`, if any (longest match).
fn pattern_at(rest: &str) -> Option<&'static str> {
    PATTERNS
        .iter()
        .filter(|p| {
            rest.get(..p.len()).is_some_and(|head| {
                head == **p || (!case_sensitive(p) && head.bytes().eq(p.bytes().map(|b| b.to_ascii_lowercase())))
            })
        })
        .max_by_key(|p| p.len())
        .copied()
}

/// Calendar facts of a date, which an interval has not.
struct Calendar {
    day_of_week: i64,
    iso_day_of_week: i64,
    zoned: bool,
}

/// The ISO-8601 week-numbering fields (`IYYY`, `IW`, `IDDD`).
struct IsoWeek {
    year: i64,
    week: i64,
    /// Day of the ISO year, from 1.
    day: i64,
}

/// What the patterns print (PostgreSQL's `fmt_tm`).
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micro: i64,
    day_of_year: i64,
    julian: i64,
    iso: IsoWeek,
    calendar: Option<Calendar>,
}

/// A date or time value to format: microseconds since 1970-01-01 and whether it has a zone.
/// None for an empty template.
pub fn format(micros: i64, zoned: bool, template: &str) -> Result<Option<String>> {
    let [year, month, day, hour, minute, second, micro] = fields(micros);
    let days = micros.div_euclid(MICROS_PER_DAY);
    let (iso_year, iso_week_no) = iso_week(days);
    let iso_dow = iso_day_of_week(days);
    let f = Fields {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micro,
        day_of_year: days - days_from_civil(year, 1, 1) + 1,
        julian: days + 2_440_588,
        iso: IsoWeek { year: iso_year, week: iso_week_no, day: (iso_week_no - 1) * 7 + iso_dow },
        calendar: Some(Calendar { day_of_week: iso_dow % 7 + 1, iso_day_of_week: iso_dow, zoned }),
    };
    render(&f, template)
}

/// An interval to format. None for an empty template.
pub fn format_interval(iv: &crate::interval::Interval, template: &str) -> Result<Option<String>> {
    // PostgreSQL's C ints (it is built with -fwrapv): its arithmetic wraps.
    let (year, month) = (iv.months / 12, iv.months % 12);
    let f = Fields {
        year: year.into(),
        month: month.into(),
        day: iv.days.into(),
        hour: iv.micros / 3_600_000_000,
        minute: iv.micros / 60_000_000 % 60,
        second: iv.micros / 1_000_000 % 60,
        micro: iv.micros % 1_000_000,
        day_of_year: iv.months.wrapping_mul(30).wrapping_add(iv.days).into(),
        julian: date2j(year, month, iv.days).into(),
        iso: iso_week_of_fields(year, month, iv.days),
        calendar: None,
    };
    render(&f, template)
}

/// PostgreSQL's `date2isoweek`, `date2isoyear` and `date2isoyearday`, which to_char of an
/// interval applies to its year, month and day fields as if they were a date.
fn iso_week_of_fields(year: i32, month: i32, day: i32) -> IsoWeek {
    // `j2day`: day of the week of a Julian day, 0 = Sunday.
    let j2day = |j: i32| j.wrapping_add(1).rem_euclid(7);
    // The Julian day the ISO year `y`'s first week starts on.
    let week_one = |y: i32| {
        let day4 = date2j(y, 1, 4);
        day4.wrapping_sub(j2day(day4.wrapping_sub(1)))
    };
    let dayn = date2j(year, month, day);
    let mut iso_year = year;
    let mut start = week_one(year);
    if dayn < start {
        iso_year = year.wrapping_sub(1);
        start = week_one(iso_year);
    }
    let mut week = dayn.wrapping_sub(start) / 7 + 1;
    if week >= 52 {
        let next = week_one(iso_year.wrapping_add(1));
        if dayn >= next {
            iso_year = iso_year.wrapping_add(1);
            week = dayn.wrapping_sub(next) / 7 + 1;
            start = next;
        }
    }
    IsoWeek { year: iso_year.into(), week: week.into(), day: i64::from(dayn.wrapping_sub(start)) + 1 }
}

/// PostgreSQL's `date2j`, for any year, month and day.
fn date2j(year: i32, month: i32, day: i32) -> i32 {
    let (year, month) =
        if month > 2 { (year.wrapping_add(4800), month + 1) } else { (year.wrapping_add(4799), month + 13) };
    let century = year / 100;
    year.wrapping_mul(365)
        .wrapping_sub(32_167)
        .wrapping_add(year / 4 - century + century / 4)
        .wrapping_add(7834 * month / 256)
        .wrapping_add(day)
}

/// `get_th`: the English ordinal suffix of a number's text (22P02 when it does not end in a
/// digit).
pub(crate) fn ordinal(text: &[u8]) -> Result<&'static str> {
    match text {
        [.., b'1', last] if last.is_ascii_digit() => Ok("th"),
        [.., b'1'] => Ok("st"),
        [.., b'2'] => Ok("nd"),
        [.., b'3'] => Ok("rd"),
        [.., last] if last.is_ascii_digit() => Ok("th"),
        _ => err(SqlState::InvalidTextRepresentation, format!("\"{}\" is not a number", String::from_utf8_lossy(text))),
    }
}

fn render(f: &Fields, template: &str) -> Result<Option<String>> {
    if template.is_empty() {
        return Ok(None);
    }
    if template.len() > MAX_TEMPLATE {
        return err(SqlState::ProgramLimitExceeded, format!("to_char template longer than {MAX_TEMPLATE} bytes"));
    }
    let mut out = String::new();
    let mut rest = template;
    while !rest.is_empty() {
        // One prefix: FM (no padding) or TM (names translated, which in the C locale leaves
        // them as they are, without padding).
        let prefix = ["FM", "fm", "TM", "tm"].into_iter().find(|p| rest.starts_with(p));
        if prefix.is_some() {
            rest = &rest[2..];
        }
        let fill = !matches!(prefix, Some("FM" | "fm"));
        let pad_names = prefix.is_none();
        if let Some(p) = pattern_at(rest) {
            rest = &rest[p.len()..];
            let upper = p.to_ascii_uppercase();
            // C's `%0*d`: the width counts a minus sign, which some patterns add to it.
            let pad = |n: i64, width: usize, negative: bool| {
                if fill {
                    format!("{n:0w$}", w = width + usize::from(negative))
                } else {
                    n.to_string()
                }
            };
            let num = |n: i64, width: usize| pad(n, width, n < 0);
            // PostgreSQL widens an interval's ISO year for a sign by its year field's sign.
            let iso_year = |n: i64, width: usize| match f.calendar {
                Some(_) => num(n, width),
                None => pad(n, width, f.year < 0),
            };
            let name = |full: &str, short: bool| {
                let text = if short { &full[..3] } else { full };
                let text = if p.chars().all(|c| !c.is_ascii_lowercase()) {
                    text.to_ascii_uppercase()
                } else if p.chars().skip(1).all(|c| c.is_ascii_lowercase()) && p.starts_with(char::is_uppercase) {
                    text.to_string()
                } else {
                    text.to_ascii_lowercase()
                };
                if pad_names && !short {
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
            let calendar = || {
                f.calendar.as_ref().ok_or_else(|| {
                    crate::error::SqlError::new(
                        SqlState::InvalidDatetimeFormat,
                        "invalid format specification for an interval value",
                    )
                })
            };
            let hour12 = if f.hour % 12 == 0 { 12 } else { f.hour % 12 };
            let year = f.year;
            let (value, numeric) = match upper.as_str() {
                "HH" | "HH12" => (pad(hour12, 2, f.hour < 0), true),
                "HH24" => (num(f.hour, 2), true),
                "MI" => (num(f.minute, 2), true),
                "SS" => (num(f.second, 2), true),
                "SSSS" | "SSSSS" => ((f.hour * 3600 + f.minute * 60 + f.second).to_string(), true),
                "MS" => (format!("{:03}", f.micro / 1000), true),
                "US" => (format!("{:06}", f.micro), true),
                ff if ff.starts_with("FF") => {
                    let digits = usize::from(ff.as_bytes()[2] - b'0');
                    (format!("{:0digits$}", f.micro / 10i64.pow(6 - digits as u32)), true)
                }
                "AM" | "PM" | "A.M." | "P.M." => (marker(f.hour % 24 < 12, "AM", "PM"), false),
                "AD" | "BC" | "A.D." | "B.C." => {
                    calendar()?;
                    (marker(year > 0, "AD", "BC"), false)
                }
                "Y,YYY" => (format!("{},{:03}", year / 1000, year % 1000), true),
                "YYYY" => (num(year, 4), true),
                "YYY" => (pad(year % 1000, 3, year < 0), true),
                "YY" => (pad(year % 100, 2, year < 0), true),
                "Y" => ((year % 10).to_string(), true),
                "IYYY" => (iso_year(f.iso.year, 4), true),
                "IYY" => (iso_year(f.iso.year % 1000, 3), true),
                "IY" => (iso_year(f.iso.year % 100, 2), true),
                "I" => ((f.iso.year % 10).to_string(), true),
                "MONTH" => {
                    calendar()?;
                    (name(MONTHS[(f.month - 1) as usize], false), false)
                }
                "MON" => {
                    calendar()?;
                    (name(MONTHS[(f.month - 1) as usize], true), false)
                }
                "MM" => (num(f.month, 2), true),
                "DAY" => (name(DAYS[(calendar()?.day_of_week - 1) as usize], false), false),
                "DY" => (name(DAYS[(calendar()?.day_of_week - 1) as usize], true), false),
                "DDD" => (format!("{:0w$}", f.day_of_year, w = if fill { 3 } else { 0 }), true),
                "IDDD" => (num(f.iso.day, 3), true),
                "DD" => (format!("{:0w$}", f.day, w = if fill { 2 } else { 0 }), true),
                "D" => (calendar()?.day_of_week.to_string(), true),
                "ID" => (calendar()?.iso_day_of_week.to_string(), true),
                "W" => (((f.day - 1) / 7 + 1).to_string(), true),
                "WW" => (format!("{:0w$}", (f.day_of_year - 1) / 7 + 1, w = if fill { 2 } else { 0 }), true),
                "IW" => (num(f.iso.week, 2), true),
                "CC" => {
                    let cc = match f.calendar {
                        Some(_) => (year + 99) / 100,
                        None => year / 100,
                    };
                    (if (-99..=99).contains(&cc) { num(cc, 2) } else { cc.to_string() }, true)
                }
                "J" => (f.julian.to_string(), true),
                // An interval of no months shows nothing.
                "Q" if f.month == 0 => (String::new(), false),
                "Q" => (((f.month - 1) / 3 + 1).to_string(), true),
                "RM" if f.month == 0 && year == 0 => (String::new(), false),
                "RM" => {
                    // A negative month counts back from December; whole years show XII
                    // (negative ones I), as in PostgreSQL.
                    let month = match f.month {
                        0 if year >= 0 => 12,
                        0 => 1,
                        m if m < 0 => m + 13,
                        m => m,
                    };
                    let numeral = ROMAN[(month - 1) as usize];
                    let text = if p == "rm" { numeral.to_ascii_lowercase() } else { numeral.to_string() };
                    (if fill { format!("{text:<4}") } else { text }, false)
                }
                "TZ" if calendar()?.zoned => (if p == "tz" { "utc".to_string() } else { "UTC".to_string() }, false),
                "TZ" => (String::new(), false),
                "TZH" => {
                    calendar()?;
                    ("+00".to_string(), false)
                }
                "TZM" => {
                    calendar()?;
                    ("00".to_string(), false)
                }
                "OF" => {
                    calendar()?;
                    ("+00".to_string(), false)
                }
                // Fixed format, for parsing: nothing to write.
                "FX" => (String::new(), false),
                _ => return err(SqlState::InternalError, format!("to_char pattern {p} without a value")),
            };
            out.push_str(&value);
            // One suffix: the ordinal suffix, printed after numbers only, or SP (spelled out,
            // which PostgreSQL ignores).
            if let Some(suffix) = ["TH", "th", "SP"].into_iter().find(|s| rest.starts_with(s)) {
                rest = &rest[2..];
                if numeric && suffix != "SP" {
                    let ordinal = ordinal(value.as_bytes())?;
                    out.push_str(&if suffix == "TH" { ordinal.to_ascii_uppercase() } else { ordinal.to_string() });
                }
            }
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
