//! DATE (days since 1970-01-01) and TIMESTAMP (microseconds since 1970-01-01 00:00:00, no
//! time zone): parsing and formatting of the ISO forms `YYYY-MM-DD[ HH:MM:SS[.ffffff]]`.

use crate::error::{Result, SqlError, SqlState};
use rust_decimal::Decimal;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn number(s: &str, digits: std::ops::RangeInclusive<usize>) -> Option<i64> {
    (digits.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn parse_date_part(s: &str) -> Option<i64> {
    let mut parts = s.split('-');
    let (year, month, day) =
        (number(parts.next()?, 4..=4)?, number(parts.next()?, 1..=2)?, number(parts.next()?, 1..=2)?);
    if parts.next().is_some() || year < 1 || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Parses `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Option<i32> {
    i32::try_from(parse_date_part(s.trim())?).ok()
}

/// Parses `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]`.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (s, None),
    };
    let days = parse_date_part(date)?;
    let micros = match time {
        None => 0,
        Some(t) => {
            let (hms, fraction) = t.split_once('.').unwrap_or((t, ""));
            let mut parts = hms.split(':');
            let (h, m) = (number(parts.next()?, 1..=2)?, number(parts.next()?, 1..=2)?);
            let sec = match parts.next() {
                Some(p) => number(p, 1..=2)?,
                None => 0,
            };
            if parts.next().is_some() || h > 23 || m > 59 || sec > 59 || fraction.len() > 6 {
                return None;
            }
            let frac =
                if fraction.is_empty() { 0 } else { number(fraction, 1..=6)? * 10i64.pow(6 - fraction.len() as u32) };
            ((h * 60 + m) * 60 + sec) * 1_000_000 + frac
        }
    };
    days.checked_mul(MICROS_PER_DAY)?.checked_add(micros)
}

/// True if `s` has the shape of a date or timestamp (numeric fields with their separators)
/// that `parse_timestamp` still refuses: a field is out of range (`2023-02-29`, `25:00`),
/// which PostgreSQL reports apart from bad syntax.
pub fn is_out_of_range_datetime(s: &str) -> bool {
    let digits = |f: &str| !f.is_empty() && f.len() <= 4 && f.bytes().all(|b| b.is_ascii_digit());
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).map_or((s, None), |(d, t)| (d, Some(t.trim())));
    let date_ok = date.split('-').count() == 3 && date.split('-').all(digits);
    let time_ok = time.is_none_or(|t| {
        let (hms, fraction) = t.split_once('.').unwrap_or((t, "0"));
        (2..=3).contains(&hms.split(':').count())
            && hms.split(':').all(digits)
            && fraction.bytes().all(|b| b.is_ascii_digit())
    });
    date_ok && time_ok && parse_timestamp(s).is_none()
}

pub fn format_date(days: i32) -> String {
    let (y, m, d) = civil_from_days(i64::from(days));
    format!("{y:04}-{m:02}-{d:02}")
}

/// A timestamptz as PostgreSQL prints it with `TimeZone` UTC.
pub fn format_timestamptz(micros: i64) -> String {
    format!("{}+00", format_timestamp(micros))
}

/// Parses a timestamptz: a timestamp, then optionally a zone: `Z`, `UTC`, `GMT` or an offset
/// `±hh[:mm]` / `±hhmm`. Without a zone it is in the session's time zone (UTC).
pub fn parse_timestamptz(s: &str) -> Option<i64> {
    let s = s.trim();
    for zone in ["UTC", "GMT", "Z"] {
        if let Some(rest) = s.strip_suffix(zone).or_else(|| s.strip_suffix(&zone.to_ascii_lowercase())) {
            return parse_timestamp(rest.trim_end());
        }
    }
    // An offset follows the time: look for its sign after the date's own dashes.
    let Some(time_start) = s.find([' ', 'T']) else { return parse_timestamp(s) };
    let Some(sign_at) = s[time_start..].rfind(['+', '-']).map(|i| i + time_start) else {
        return parse_timestamp(s);
    };
    let (local, offset) = s.split_at(sign_at);
    let (sign, digits) = offset.split_at(1);
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (number(h, 1..=2)?, number(m, 2..=2)?),
        None if digits.len() == 4 && digits.is_ascii() => (number(&digits[..2], 2..=2)?, number(&digits[2..], 2..=2)?),
        None => (number(digits, 1..=2)?, 0),
    };
    if h > 15 || m > 59 {
        return None;
    }
    let offset = (h * 60 + m) * 60_000_000;
    let local = parse_timestamp(local.trim_end())?;
    if sign == "+" {
        local.checked_sub(offset)
    } else {
        local.checked_add(offset)
    }
}

pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let rem = micros.rem_euclid(MICROS_PER_DAY);
    let (y, mo, d) = civil_from_days(days);
    let (secs, frac) = (rem / 1_000_000, rem % 1_000_000);
    let base = format!("{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac == 0 {
        base
    } else {
        format!("{base}.{}", format!("{frac:06}").trim_end_matches('0'))
    }
}

/// A timestamp plus `months`, its day of month clamped to the new month's length
/// (PostgreSQL's `timestamp_pl_interval`: January 31 plus a month is February 28 or 29).
pub fn add_months(micros: i64, months: i32) -> Option<i64> {
    let (days, time) = (micros.div_euclid(MICROS_PER_DAY), micros.rem_euclid(MICROS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    let total = (year * 12 + month - 1).checked_add(i64::from(months))?;
    let (year, month) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let day = day.min(days_in_month(year, month));
    days_from_civil(year, month, day).checked_mul(MICROS_PER_DAY)?.checked_add(time)
}

/// A timestamp's civil fields: (year, month 1–12, day, hour, minute, second, microsecond).
pub fn fields(micros: i64) -> [i64; 7] {
    let (days, time) = (micros.div_euclid(MICROS_PER_DAY), micros.rem_euclid(MICROS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (time / 3_600_000_000, time / 60_000_000 % 60);
    [year, month, day, hour, minute, time / 1_000_000 % 60, time % 1_000_000]
}

/// Days in `month` (1–12) of `year`.
pub fn month_days(year: i64, month: i64) -> i64 {
    days_in_month(year, month)
}

/// Whether a timestamp is within the years 1..=9999 Pistou's dates and timestamps span.
pub fn in_range(micros: i64) -> bool {
    (-62_135_596_800_000_000..253_402_300_800_000_000).contains(&micros)
}

/// The date of a timestamp.
pub fn timestamp_date(micros: i64) -> i32 {
    i32::try_from(micros.div_euclid(MICROS_PER_DAY)).unwrap_or(if micros < 0 { i32::MIN } else { i32::MAX })
}

/// Midnight of a date.
pub fn date_timestamp(days: i32) -> i64 {
    i64::from(days) * MICROS_PER_DAY
}

/// A date or time value EXTRACT, date_part and date_trunc take apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Instant {
    Date(i32),
    Timestamp(i64),
    /// In the session's time zone, which is UTC.
    TimestampTz(i64),
}

impl Instant {
    fn type_name(self) -> &'static str {
        match self {
            Instant::Date(_) => "date",
            Instant::Timestamp(_) => "timestamp without time zone",
            Instant::TimestampTz(_) => "timestamp with time zone",
        }
    }

    fn micros(self) -> i64 {
        match self {
            Instant::Date(d) => date_timestamp(d),
            Instant::Timestamp(t) | Instant::TimestampTz(t) => t,
        }
    }
}

/// PostgreSQL's unit names (with their plurals and abbreviations) to one canonical name.
pub fn canonical_unit(unit: &str) -> Option<&'static str> {
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "usecond" | "useconds" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "msecond" | "mseconds" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" | "decs" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => "millennium",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "isoyear" => "isoyear",
        "epoch" => "epoch",
        "julian" | "j" => "julian",
        "timezone" => "timezone",
        "timezone_h" | "timezone_hour" => "timezone_hour",
        "timezone_m" | "timezone_minute" => "timezone_minute",
        _ => return None,
    })
}

fn not_recognized(unit: &str, of: Instant) -> SqlError {
    SqlError::new(
        SqlState::InvalidParameterValue,
        format!("unit \"{}\" not recognized for type {}", unit.trim(), of.type_name()),
    )
}

fn not_supported(unit: &str, of: Instant) -> SqlError {
    SqlError::new(
        SqlState::FeatureNotSupported,
        format!("unit \"{}\" not supported for type {}", unit.trim(), of.type_name()),
    )
}

/// Monday-based day of the week, 1 to 7, of a day count.
pub fn iso_day_of_week(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// The ISO 8601 year and week of a day count: weeks start on Monday, and week 1 holds the
/// year's first Thursday.
pub fn iso_week(days: i64) -> (i64, i64) {
    let thursday = days - (iso_day_of_week(days) - 1) + 3;
    let (year, _, _) = civil_from_days(thursday);
    (year, (thursday - days_from_civil(year, 1, 1)) / 7 + 1)
}

/// `EXTRACT(unit FROM value)`: the field as PostgreSQL 15's numeric result (scale 6 for
/// second and epoch of timestamps, 3 for milliseconds, 0 otherwise).
pub fn extract(unit: &str, value: Instant) -> Result<Decimal> {
    let Some(canonical) = canonical_unit(unit) else { return Err(not_recognized(unit, value)) };
    let micros = value.micros();
    let days = micros.div_euclid(MICROS_PER_DAY);
    let time = micros.rem_euclid(MICROS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let date = matches!(value, Instant::Date(_));
    let whole = |n: i64| Ok(Decimal::from(n));
    let seconds_micros = time % 60_000_000;
    match canonical {
        "microseconds" | "milliseconds" | "second" | "minute" | "hour" if date => Err(not_supported(unit, value)),
        "timezone" | "timezone_hour" | "timezone_minute" if !matches!(value, Instant::TimestampTz(_)) => {
            Err(not_supported(unit, value))
        }
        // Julian days of timestamps carry a day fraction PostgreSQL prints to 20 digits.
        "julian" if !date => Err(not_supported(unit, value)),
        "microseconds" => whole(seconds_micros),
        "milliseconds" => Ok(Decimal::new(seconds_micros, 3)),
        "second" => Ok(Decimal::new(seconds_micros, 6)),
        "minute" => whole(time / 60_000_000 % 60),
        "hour" => whole(time / 3_600_000_000),
        "day" => whole(day),
        "week" => whole(iso_week(days).1),
        "month" => whole(month),
        "quarter" => whole((month - 1) / 3 + 1),
        "year" => whole(year),
        "decade" => whole(year.div_euclid(10)),
        "century" => whole((year - 1).div_euclid(100) + 1),
        "millennium" => whole((year - 1).div_euclid(1000) + 1),
        "dow" => whole(iso_day_of_week(days) % 7),
        "isodow" => whole(iso_day_of_week(days)),
        "doy" => whole(days - days_from_civil(year, 1, 1) + 1),
        "isoyear" => whole(iso_week(days).0),
        "epoch" if date => whole(days * 86_400),
        "epoch" => Ok(Decimal::new(micros, 6)),
        "julian" => whole(days + 2_440_588),
        _ => whole(0),
    }
}

/// `date_trunc(unit, value)`: the value with every field finer than the unit reset, as a
/// timestamp (the value's type; a date is read as a timestamptz at midnight, as PostgreSQL's
/// implicit cast does).
pub fn truncate(unit: &str, value: Instant) -> Result<i64> {
    let unknown = || {
        not_recognized(unit, if let Instant::Date(d) = value { Instant::TimestampTz(date_timestamp(d)) } else { value })
    };
    let canonical = canonical_unit(unit).ok_or_else(unknown)?;
    let micros = value.micros();
    let days = micros.div_euclid(MICROS_PER_DAY);
    let (year, month, _) = civil_from_days(days);
    let down = |step: i64| micros - micros.rem_euclid(step);
    let first_of = |y: i64, m: i64| days_from_civil(y, m, 1) * MICROS_PER_DAY;
    Ok(match canonical {
        "microseconds" => micros,
        "milliseconds" => down(1_000),
        "second" => down(1_000_000),
        "minute" => down(60_000_000),
        "hour" => down(3_600_000_000),
        "day" => down(MICROS_PER_DAY),
        "week" => (days - iso_day_of_week(days) + 1) * MICROS_PER_DAY,
        "month" => first_of(year, month),
        "quarter" => first_of(year, (month - 1) / 3 * 3 + 1),
        "year" => first_of(year, 1),
        "decade" => first_of(year - year.rem_euclid(10), 1),
        "century" => first_of((year - 1).div_euclid(100) * 100 + 1, 1),
        "millennium" => first_of((year - 1).div_euclid(1000) * 1000 + 1, 1),
        _ => return Err(unknown()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["1970-01-01", "2000-02-29", "1969-12-31", "0001-01-01", "9999-12-31", "2024-03-01"] {
            let d = parse_date(s).unwrap_or(i32::MIN);
            assert_eq!(format_date(d), s);
        }
        assert_eq!(parse_date("1970-01-02"), Some(1));
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2023-13-01"), None);
        for s in ["2024-05-06 07:08:09", "1960-01-01 00:00:00.5", "2024-05-06 23:59:59.123456"] {
            assert_eq!(parse_timestamp(s).map(format_timestamp).as_deref(), Some(s));
        }
        assert_eq!(parse_timestamp("1970-01-01T00:00:01"), Some(1_000_000));
        assert_eq!(parse_timestamp("2024-05-06 24:00:00"), None);
        assert_eq!(parse_timestamp("x"), None);
        assert!(is_out_of_range_datetime("2023-02-29") && is_out_of_range_datetime("2024-05-06 24:00:00"));
        let t = parse_timestamp("2024-05-06 07:08:09.5");
        for s in [
            "2024-05-06 07:08:09.5",
            "2024-05-06 07:08:09.5+00",
            "2024-05-06T07:08:09.5Z",
            "2024-05-06 09:08:09.5+02:00",
        ] {
            assert_eq!(parse_timestamptz(s), t, "{s}");
        }
        assert_eq!(parse_timestamptz("2024-05-06 02:08:09.5-0500"), t);
        assert_eq!(parse_timestamptz("2024-05-06 07:08:09.5 UTC"), t);
        assert_eq!(parse_timestamptz("2024-05-06 07:08:09+99"), None);
        assert_eq!(parse_timestamptz("2024-05-06"), parse_timestamp("2024-05-06"));
        assert_eq!(t.map(format_timestamptz).as_deref(), Some("2024-05-06 07:08:09.5+00"));
        // Hostile offsets (multi-byte characters where digits go) are refused, never sliced.
        for zone in ["+1é1", "-é12", "+é", "+", "-:", "+1:é", "+123", "+12345", "T", "+ 1"] {
            assert_eq!(parse_timestamptz(&format!("2024-05-06 07:08:09{zone}")), None, "{zone}");
        }
        assert!(
            !is_out_of_range_datetime("x")
                && !is_out_of_range_datetime("2024-05-06")
                && !is_out_of_range_datetime("2024-05-06 1:2:x")
        );
    }
}
