//! The interval type as PostgreSQL 15 has it: months, days and microseconds kept apart (a
//! month is not a fixed number of days, nor a day a fixed number of hours, when added to a
//! date), its input and output (IntervalStyle `postgres`), its arithmetic and its order.

use crate::error::{err, Result, SqlError, SqlState};
use crate::types::{ArithOp, Value};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
const DAYS_PER_MONTH: i64 = 30;
/// Longest interval text accepted (PostgreSQL's own fields are bounded by its buffer).
const MAX_INPUT: usize = 256;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

fn out_of_range() -> SqlError {
    SqlError::new(SqlState::DatetimeFieldOverflow, "interval out of range")
}

fn invalid(s: &str) -> SqlError {
    SqlError::new(SqlState::InvalidDatetimeFormat, format!("invalid input syntax for type interval: \"{s}\""))
}

/// Rounds to microseconds, as PostgreSQL's TSROUND.
fn ts_round(x: f64) -> f64 {
    (x * 1e6).round_ties_even() / 1e6
}

fn to_i32(x: f64) -> Result<i32> {
    if x.is_finite() && x >= f64::from(i32::MIN) && x <= f64::from(i32::MAX) {
        Ok(x as i32)
    } else {
        Err(out_of_range())
    }
}

fn to_i64(x: f64) -> Result<i64> {
    if x.is_finite() && x >= i64::MIN as f64 && x < i64::MAX as f64 {
        Ok(x as i64)
    } else {
        Err(out_of_range())
    }
}

impl Interval {
    /// The interval's length for comparison: a month counts 30 days, a day 24 hours
    /// (PostgreSQL's `interval_cmp_value`): `1 mon` equals `30 days`.
    pub fn span(&self) -> i128 {
        (i128::from(self.months) * 30 + i128::from(self.days)) * i128::from(USECS_PER_DAY) + i128::from(self.micros)
    }

    /// An interval of length `span`, if any interval is that long: months first, then days,
    /// the rest in microseconds (which leaves the fewest microseconds, so if this finds none,
    /// none exists). Reads a primary key back, which holds only the length.
    pub fn with_span(span: i128) -> Option<Interval> {
        let day = i128::from(USECS_PER_DAY);
        let month = i128::from(DAYS_PER_MONTH) * day;
        let months = (span / month).clamp(i128::from(i32::MIN), i128::from(i32::MAX));
        let rest = span - months * month;
        let days = (rest / day).clamp(i128::from(i32::MIN), i128::from(i32::MAX));
        Some(Interval {
            months: i32::try_from(months).ok()?,
            days: i32::try_from(days).ok()?,
            micros: i64::try_from(rest - days * day).ok()?,
        })
    }

    pub fn cmp_span(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    pub fn checked_add(&self, o: &Interval) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_add(o.months).ok_or_else(out_of_range)?,
            days: self.days.checked_add(o.days).ok_or_else(out_of_range)?,
            micros: self.micros.checked_add(o.micros).ok_or_else(out_of_range)?,
        })
    }

    pub fn checked_neg(&self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(out_of_range)?,
            days: self.days.checked_neg().ok_or_else(out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(out_of_range)?,
        })
    }

    pub fn checked_sub(&self, o: &Interval) -> Result<Interval> {
        self.checked_add(&o.checked_neg()?)
    }

    /// `interval * factor` (PostgreSQL's `interval_mul`): whole months and days scale, their
    /// fractions cascade down into days and time.
    pub fn mul(&self, factor: f64) -> Result<Interval> {
        self.scale(|x| x * factor)
    }

    /// `interval / factor` (PostgreSQL's `interval_div`); 22012 for a zero factor.
    pub fn div(&self, factor: f64) -> Result<Interval> {
        if factor == 0.0 {
            return err(SqlState::DivisionByZero, "division by zero");
        }
        self.scale(|x| x / factor)
    }

    fn scale(&self, f: impl Fn(f64) -> f64) -> Result<Interval> {
        let months = f(f64::from(self.months));
        let days = f(f64::from(self.days));
        let mut result = Interval { months: to_i32(months)?, days: to_i32(days)?, micros: 0 };
        let month_remainder_days = ts_round((months - f64::from(result.months)) * DAYS_PER_MONTH as f64);
        let mut sec_remainder =
            ts_round((days - f64::from(result.days) + month_remainder_days - month_remainder_days.trunc()) * 86_400.0);
        if sec_remainder.abs() >= 86_400.0 {
            let whole = (sec_remainder / 86_400.0).trunc();
            result.days = result.days.checked_add(to_i32(whole)?).ok_or_else(out_of_range)?;
            sec_remainder -= whole * 86_400.0;
        }
        result.days = result.days.checked_add(to_i32(month_remainder_days.trunc())?).ok_or_else(out_of_range)?;
        let time = f(self.micros as f64) + sec_remainder * USECS_PER_SEC as f64;
        result.micros = to_i64(time.round_ties_even())?;
        Ok(result)
    }

    /// PostgreSQL's output (IntervalStyle `postgres`): `1 year 2 mons -3 days +04:05:06.5`.
    pub fn format(&self) -> String {
        let mut out = String::new();
        let mut before_negative = false;
        let mut part = |value: i64, unit: &str, out: &mut String| {
            if value == 0 {
                return;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            let sign = if before_negative && value > 0 { "+" } else { "" };
            let plural = if value == 1 { "" } else { "s" };
            out.push_str(&format!("{sign}{value} {unit}{plural}"));
            before_negative = value < 0;
        };
        let months = i64::from(self.months);
        part(months / 12, "year", &mut out);
        part(months % 12, "mon", &mut out);
        part(i64::from(self.days), "day", &mut out);
        if self.micros != 0 || out.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            let negative = self.micros < 0;
            out.push_str(if negative {
                "-"
            } else if before_negative {
                "+"
            } else {
                ""
            });
            let t = self.micros.unsigned_abs();
            let (hours, rest) = (t / USECS_PER_HOUR as u64, t % USECS_PER_HOUR as u64);
            let (minutes, rest) = (rest / USECS_PER_MINUTE as u64, rest % USECS_PER_MINUTE as u64);
            let (seconds, fraction) = (rest / USECS_PER_SEC as u64, rest % USECS_PER_SEC as u64);
            out.push_str(&format!("{hours:02}:{minutes:02}:{seconds:02}"));
            if fraction != 0 {
                out.push_str(format!(".{fraction:06}").trim_end_matches('0'));
            }
        }
        out
    }

    /// Parses PostgreSQL's interval input: `<number> <unit>` pairs (fractions cascade into
    /// smaller units), an `[-]H:M[:S[.f]]` time, a `Y-M` year-month, ISO 8601 `P…T…`, a
    /// leading `@` and a trailing `ago`. A bare number is seconds, or `unit`'s when given
    /// (`INTERVAL '3' DAY`).
    pub fn parse(s: &str, unit: Option<&str>) -> Result<Interval> {
        // PostgreSQL: a field too large for the interval is 22015, naming the input.
        Self::parse_fields(s, unit).map_err(|e| match e.state {
            SqlState::DatetimeFieldOverflow => {
                SqlError::new(SqlState::IntervalFieldOverflow, format!("interval field value out of range: \"{s}\""))
            }
            _ => e,
        })
    }

    fn parse_fields(s: &str, unit: Option<&str>) -> Result<Interval> {
        if s.len() > MAX_INPUT {
            return Err(invalid(s));
        }
        let trimmed = s.trim();
        if let Some(iso) = trimmed.strip_prefix('P') {
            return parse_iso(iso).ok_or_else(|| invalid(s));
        }
        let mut acc = Accumulator::default();
        let lower = trimmed.to_ascii_lowercase();
        let mut tokens: Vec<&str> = lower.split_whitespace().collect();
        if tokens.first() == Some(&"@") {
            tokens.remove(0);
        }
        let ago = tokens.last() == Some(&"ago");
        if ago {
            tokens.pop();
        }
        if tokens.is_empty() {
            return Err(invalid(s));
        }
        let mut i = 0;
        while let Some(token) = tokens.get(i) {
            i += 1;
            if token.contains(':') {
                acc.add_time(parse_time(token).ok_or_else(|| invalid(s))?)?;
                continue;
            }
            if let Some((years, months)) = parse_year_month(token) {
                acc.add(years, "year")?;
                acc.add(if years < 0.0 { -months } else { months }, "mon")?;
                continue;
            }
            // A number with its unit attached (`10d`) or in the next token.
            let split = token.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(token.len());
            let (number, attached) = token.split_at(split);
            let value: f64 = number.parse().map_err(|_| invalid(s))?;
            if !value.is_finite() {
                return Err(invalid(s));
            }
            let unit_name = if !attached.is_empty() {
                attached
            } else if let Some(next) = tokens.get(i).filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic())) {
                i += 1;
                next
            } else {
                unit.unwrap_or("second")
            };
            acc.add(value, unit_name).map_err(|e| {
                if e.state == SqlState::InvalidDatetimeFormat {
                    invalid(s)
                } else {
                    e
                }
            })?;
        }
        let result = acc.finish()?;
        if ago {
            result.checked_neg()
        } else {
            Ok(result)
        }
    }
}

/// `EXTRACT(unit FROM interval)` as PostgreSQL 15 computes it: fields of the months, days
/// and time kept apart (a negative interval gives negative fields), and `epoch` counting a
/// year as 365.25 days and a month as 30. `date_part` is its value as a double precision.
pub fn extract(unit: &str, i: &Interval) -> Result<rust_decimal::Decimal> {
    use rust_decimal::Decimal;
    let canonical = crate::temporal::canonical_unit(unit).ok_or_else(|| {
        SqlError::new(SqlState::InvalidParameterValue, format!("unit \"{unit}\" not recognized for type interval"))
    })?;
    let (years, months) = (i64::from(i.months) / 12, i64::from(i.months) % 12);
    let seconds_micros = i.micros % USECS_PER_MINUTE;
    let whole = |n: i64| Ok(Decimal::from(n));
    match canonical {
        "microseconds" => whole(seconds_micros),
        "milliseconds" => Ok(Decimal::new(seconds_micros, 3)),
        "second" => Ok(Decimal::new(seconds_micros, 6)),
        "minute" => whole(i.micros / USECS_PER_MINUTE % 60),
        "hour" => whole(i.micros / USECS_PER_HOUR),
        "day" => whole(i64::from(i.days)),
        "month" => whole(months),
        "quarter" => whole(months / 3 + 1),
        "year" => whole(years),
        "decade" => whole(years / 10),
        "century" => whole(years / 100),
        "millennium" => whole(years / 1000),
        "epoch" => {
            // In quarter days, so that 365.25-day years stay integers.
            let quarter_days = 1461 * years + 120 * months + 4 * i64::from(i.days);
            let micros = i128::from(quarter_days) * i128::from(USECS_PER_DAY / 4) + i128::from(i.micros);
            Decimal::try_from_i128_with_scale(micros, 6).map_err(|_| out_of_range())
        }
        _ => err(SqlState::FeatureNotSupported, format!("unit \"{unit}\" not supported for type interval")),
    }
}

/// `date_part('epoch', interval)`, computed in double precision as PostgreSQL does (its
/// rounding shows in the last digits).
pub fn date_part_epoch(i: &Interval) -> f64 {
    let (years, months) = (f64::from(i.months / 12), f64::from(i.months % 12));
    i.micros as f64 / 1e6 + 365.25 * 86_400.0 * years + 30.0 * 86_400.0 * months + 86_400.0 * f64::from(i.days)
}

/// `age(a, b)`: the symbolic difference of two timestamps in years, months, days and time, as
/// PostgreSQL's `timestamp_age` forms it (field by field, borrowing from the next larger
/// field; a day borrowed takes the length of a month of the later operand's year).
pub fn age(a: i64, b: i64) -> Result<Interval> {
    let (x, y) = (crate::temporal::fields(a), crate::temporal::fields(b));
    // Differences of year, month, day, hour, minute, second, microsecond.
    let mut d: [i64; 7] = std::array::from_fn(|i| x[i] - y[i]);
    let flip = a < b;
    if flip {
        d.iter_mut().for_each(|f| *f = -*f);
    }
    // (field, its range) from the smallest field up to hours; days borrow a month's length.
    for (field, range) in [(6, 1_000_000), (5, 60), (4, 60), (3, 24)] {
        while d[field] < 0 {
            d[field] += range;
            d[field - 1] -= 1;
        }
    }
    let (year, month) = if flip { (x[0], x[1]) } else { (y[0], y[1]) };
    while d[2] < 0 {
        d[2] += crate::temporal::month_days(year, month);
        d[1] -= 1;
    }
    while d[1] < 0 {
        d[1] += 12;
        d[0] -= 1;
    }
    if flip {
        d.iter_mut().for_each(|f| *f = -*f);
    }
    let months = d[0].checked_mul(12).and_then(|m| m.checked_add(d[1])).ok_or_else(out_of_range)?;
    Ok(Interval {
        months: i32::try_from(months).map_err(|_| out_of_range())?,
        days: i32::try_from(d[2]).map_err(|_| out_of_range())?,
        micros: ((d[3] * 60 + d[4]) * 60 + d[5]) * USECS_PER_SEC + d[6],
    })
}

/// Date, time and interval arithmetic (None: not an interval operation, for the caller's
/// "operator does not exist"): timestamp(tz) ± interval, date ± interval (a timestamp),
/// timestamp − timestamp (days and time, as PostgreSQL's `timestamp_mi`), interval ±
/// interval, interval × number, number × interval, interval ÷ number.
pub fn arith(op: ArithOp, a: &Value, b: &Value) -> Result<Option<Value>> {
    use Value::*;
    let timestamp_out_of_range = || SqlError::new(SqlState::DatetimeFieldOverflow, "timestamp out of range");
    let shift = |micros: i64, i: &self::Interval, sign: i32| -> Result<i64> {
        let months = i.months.checked_mul(sign).ok_or_else(out_of_range)?;
        let days = i64::from(i.days) * i64::from(sign);
        let shifted = crate::temporal::add_months(micros, months)
            .and_then(|t| t.checked_add(days.checked_mul(USECS_PER_DAY)?))
            .and_then(|t| t.checked_add(i.micros.checked_mul(i64::from(sign))?))
            .filter(|t| crate::temporal::in_range(*t));
        shifted.ok_or_else(timestamp_out_of_range)
    };
    let sign = match op {
        ArithOp::Add => 1,
        ArithOp::Sub => -1,
        _ => 0,
    };
    Ok(Some(match (a, b) {
        (Timestamp(t), Interval(i)) if sign != 0 => Timestamp(shift(*t, i, sign)?),
        (TimestampTz(t), Interval(i)) if sign != 0 => TimestampTz(shift(*t, i, sign)?),
        (Date(d), Interval(i)) if sign != 0 => Timestamp(shift(crate::temporal::date_timestamp(*d), i, sign)?),
        (Interval(i), Timestamp(t)) if op == ArithOp::Add => Timestamp(shift(*t, i, 1)?),
        (Interval(i), TimestampTz(t)) if op == ArithOp::Add => TimestampTz(shift(*t, i, 1)?),
        (Interval(i), Date(d)) if op == ArithOp::Add => Timestamp(shift(crate::temporal::date_timestamp(*d), i, 1)?),
        (Date(_) | Timestamp(_) | TimestampTz(_), Date(_) | Timestamp(_) | TimestampTz(_))
            if op == ArithOp::Sub && !matches!((a, b), (Date(_), Date(_))) =>
        {
            let micros_of = |v: &Value| match v {
                Date(d) => crate::temporal::date_timestamp(*d),
                Timestamp(t) | TimestampTz(t) => *t,
                _ => 0,
            };
            let micros = micros_of(a).checked_sub(micros_of(b)).ok_or_else(out_of_range)?;
            let days = micros / USECS_PER_DAY;
            Interval(self::Interval {
                months: 0,
                days: i32::try_from(days).map_err(|_| out_of_range())?,
                micros: micros - days * USECS_PER_DAY,
            })
        }
        (Interval(x), Interval(y)) if op == ArithOp::Add => Interval(x.checked_add(y)?),
        (Interval(x), Interval(y)) if op == ArithOp::Sub => Interval(x.checked_sub(y)?),
        (Interval(i), n) | (n, Interval(i)) if op == ArithOp::Mul => match crate::types::as_f64(n) {
            Some(factor) => Interval(i.mul(factor)?),
            None => return Ok(None),
        },
        (Interval(i), n) if op == ArithOp::Div => match crate::types::as_f64(n) {
            Some(factor) => Interval(i.div(factor)?),
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// Fields as the input adds them, in floating point for the fractions (PostgreSQL's
/// `AdjustFract*` cascade), then rounded to microseconds. An `H:M:S` time is exact
/// (`time_micros`): a double holds microseconds exactly only up to 2^53 (about 285 years).
#[derive(Default)]
struct Accumulator {
    months: i64,
    days: i64,
    micros: f64,
    time_micros: i128,
}

impl Accumulator {
    fn add_time(&mut self, micros: i128) -> Result<()> {
        self.time_micros = self.time_micros.checked_add(micros).ok_or_else(out_of_range)?;
        Ok(())
    }

    /// Adds a fraction of a day (in days) as days and time.
    fn fract_days(&mut self, days: f64) {
        let whole = days.trunc();
        // Saturating: anything beyond i32 fails in `add` (float-to-int casts saturate too).
        self.days = self.days.saturating_add(whole as i64);
        self.micros += (days - whole) * USECS_PER_DAY as f64;
    }

    fn add(&mut self, value: f64, unit: &str) -> Result<()> {
        let whole = value.trunc();
        let fraction = value - whole;
        let months_of = |m: f64| m.round_ties_even() as i64;
        match canonical_unit(unit).ok_or_else(|| SqlError::new(SqlState::InvalidDatetimeFormat, "unit"))? {
            Unit::Micros => self.micros += value,
            Unit::Millis => self.micros += value * 1e3,
            Unit::Seconds => self.micros += value * 1e6,
            Unit::Minutes => self.micros += value * 6e7,
            Unit::Hours => self.micros += value * 3.6e9,
            Unit::Days => self.fract_days(value),
            Unit::Weeks => self.fract_days(value * 7.0),
            Unit::Months => {
                self.months = self.months.saturating_add(whole as i64);
                self.fract_days(fraction * DAYS_PER_MONTH as f64);
            }
            Unit::Years(per) => {
                let months = (whole as i64).saturating_mul(per).saturating_add(months_of(fraction * per as f64));
                self.months = self.months.saturating_add(months);
            }
        }
        if self.months.unsigned_abs() > i32::MAX as u64 || self.days.unsigned_abs() > i32::MAX as u64 {
            return Err(out_of_range());
        }
        Ok(())
    }

    fn finish(self) -> Result<Interval> {
        Ok(Interval {
            months: i32::try_from(self.months).map_err(|_| out_of_range())?,
            days: i32::try_from(self.days).map_err(|_| out_of_range())?,
            micros: i64::try_from(i128::from(to_i64(self.micros.round_ties_even())?) + self.time_micros)
                .map_err(|_| out_of_range())?,
        })
    }
}

enum Unit {
    Micros,
    Millis,
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    /// Months per unit: years, decades, centuries, millennia.
    Years(i64),
}

/// An input unit, by the names PostgreSQL's interval input and EXTRACT share
/// (`crate::temporal::canonical_unit`).
fn canonical_unit(unit: &str) -> Option<Unit> {
    Some(match crate::temporal::canonical_unit(unit)? {
        "microseconds" => Unit::Micros,
        "milliseconds" => Unit::Millis,
        "second" => Unit::Seconds,
        "minute" => Unit::Minutes,
        "hour" => Unit::Hours,
        "day" => Unit::Days,
        "week" => Unit::Weeks,
        "month" => Unit::Months,
        "year" => Unit::Years(12),
        "decade" => Unit::Years(120),
        "century" => Unit::Years(1200),
        "millennium" => Unit::Years(12_000),
        _ => return None,
    })
}

/// `[-]H:M[:S[.f]]` as exact microseconds (the fraction of a second rounded to a
/// microsecond, half to even, as PostgreSQL does).
fn parse_time(token: &str) -> Option<i128> {
    let (negative, body) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token.strip_prefix('+').unwrap_or(token)),
    };
    let parts: Vec<&str> = body.split(':').collect();
    // At most 20 digits, so that the sum below cannot overflow an i128 (anything near that
    // long is out of an interval's range anyway).
    let digits = |p: &str| !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit());
    let number = |p: &str| p.parse::<i128>().ok();
    let (hours, minutes, seconds, fraction) = match parts.as_slice() {
        [h, m] if digits(h) && digits(m) => (number(h)?, number(m)?, 0, 0),
        [h, m, s] if digits(h) && digits(m) => {
            let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
            if !digits(whole) || !(frac.is_empty() || frac.bytes().all(|b| b.is_ascii_digit())) {
                return None;
            }
            let fraction = if frac.is_empty() {
                0
            } else {
                (format!("0.{frac}").parse::<f64>().ok()? * 1e6).round_ties_even() as i128
            };
            (number(h)?, number(m)?, number(whole)?, fraction)
        }
        _ => return None,
    };
    if minutes >= 60 || seconds >= 60 {
        return None;
    }
    let micros = hours * 3_600_000_000 + minutes * 60_000_000 + seconds * 1_000_000 + fraction;
    Some(if negative { -micros } else { micros })
}

/// SQL's year-month literal `Y-M` (`1-2` is 1 year 2 months).
fn parse_year_month(token: &str) -> Option<(f64, f64)> {
    let (negative, body) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token.strip_prefix('+').unwrap_or(token)),
    };
    let (y, m) = body.split_once('-')?;
    if y.is_empty() || m.is_empty() || !y.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (years, months): (f64, f64) = (y.parse().ok()?, m.parse().ok()?);
    if months >= 12.0 {
        return None;
    }
    Some(if negative { (-years, months) } else { (years, months) })
}

/// ISO 8601 durations after the `P`: `1Y2M3DT4H5M6S` (W for weeks).
fn parse_iso(s: &str) -> Option<Interval> {
    let mut acc = Accumulator::default();
    let mut in_time = false;
    let mut number = String::new();
    for c in s.chars() {
        match c {
            'T' if !in_time && number.is_empty() => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            unit => {
                let value: f64 = number.parse().ok()?;
                number.clear();
                let name = match (unit, in_time) {
                    ('Y', false) => "year",
                    ('M', false) => "month",
                    ('W', false) => "week",
                    ('D', false) => "day",
                    ('H', true) => "hour",
                    ('M', true) => "minute",
                    ('S', true) => "second",
                    _ => return None,
                };
                acc.add(value, name).ok()?;
            }
        }
    }
    if !number.is_empty() || s.is_empty() {
        return None;
    }
    acc.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(s: &str) -> String {
        Interval::parse(s, None).map(|i| i.format()).unwrap_or_else(|e| format!("error {}", e.state.code()))
    }

    /// Inputs and outputs checked against PostgreSQL 15.
    #[test]
    fn input_and_output_are_postgresql_s() {
        for (input, output) in [
            ("-1 day +2 hours", "-1 days +02:00:00"),
            ("1 year 2 months 3 days 04:05:06.5", "1 year 2 mons 3 days 04:05:06.5"),
            ("-1 year -2 mons", "-1 years -2 mons"),
            ("0", "00:00:00"),
            ("1.5 days", "1 day 12:00:00"),
            ("1.5 months", "1 mon 15 days"),
            ("25 hours", "25:00:00"),
            ("-00:00:01.5", "-00:00:01.5"),
            ("1 day ago", "-1 days"),
            ("@ 2 hours", "02:00:00"),
            ("1-2", "1 year 2 mons"),
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("5", "00:00:05"),
            ("1 week 2 days", "9 days"),
            ("100 minutes", "01:40:00"),
            ("1 day 7384 second 5 microsecond", "1 day 02:03:04.000005"),
            ("1.5 years", "1 year 6 mons"),
            ("2 decades", "20 years"),
            ("2 cent", "200 years"),
            ("1 dec", "10 years"),
            ("3 mils", "3000 years"),
            ("5 msecs", "00:00:00.005"),
            // A time's microseconds are exact, beyond what a double holds.
            ("1000000000:00:00.000001", "1000000000:00:00.000001"),
            ("-1000000000:00:00.000001", "-1000000000:00:00.000001"),
            ("2562047788:00:54.775807", "2562047788:00:54.775807"),
            ("1 day 1000000000:00:00.000001", "1 day 1000000000:00:00.000001"),
            ("1:2:3.4567895", "01:02:03.45679"),
        ] {
            assert_eq!(shown(input), output, "{input}");
        }
        assert_eq!(shown("1 day 2"), "1 day 00:00:02");
        assert_eq!(shown("10d"), "10 days");
        for bad in ["", "day", "1 fortnight", "2 qtr", "10:70", "ago", "P1Q", "1 day 1 day day", "nan day", "inf day"] {
            assert!(Interval::parse(bad, None).is_err(), "{bad:?}");
        }
        assert_eq!(Interval::parse("3", Some("day")).map(|i| i.format()).ok().as_deref(), Some("3 days"));
        assert!(Interval::parse(&"1 day ".repeat(100), None).is_err(), "bounded input");
        for huge in [
            "1e300 years",
            "99999999999999999999 millennia",
            "99999999999 days",
            "9999999999999 hours",
            "2562047788:00:54.775808",
            "99999999999999999999:59:59.999999",
            "999999999999999999999:00",
        ] {
            assert!(Interval::parse(huge, None).is_err(), "{huge}");
        }
    }

    #[test]
    fn arithmetic_is_postgresql_s() {
        let i = |s: &str| Interval::parse(s, None).expect(s);
        assert_eq!(i("1 day").mul(1.5).map(|x| x.format()).ok().as_deref(), Some("1 day 12:00:00"));
        assert_eq!(i("1 mon").div(7.0).map(|x| x.format()).ok().as_deref(), Some("4 days 06:51:25.6896"));
        assert_eq!(i("1 mon").cmp_span(&i("30 days")), Ordering::Equal);
        assert_eq!(i("1 day").cmp_span(&i("23 hours")), Ordering::Greater);
        assert!(i("1 day").div(0.0).is_err());
        assert_eq!(i("1 day").checked_sub(&i("2 hours")).map(|x| x.format()).ok().as_deref(), Some("1 day -02:00:00"));
        let max = Interval { months: i32::MAX, days: 0, micros: 0 };
        assert!(max.checked_add(&i("1 mon")).is_err());
        assert!(max.mul(2.0).is_err());
    }
}
