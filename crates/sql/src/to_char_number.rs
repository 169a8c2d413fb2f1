//! `to_char(number, template)`: PostgreSQL 15's number formatting (formatting.c's
//! `NUMDesc_prepare`, `NUM_processor` and the per-type `*_to_char`). Applications see
//! PostgreSQL's odd corners too (`9.99EEEE` of 9.999 is `10.00e+00`, `SG` in a Roman numeral
//! ends the text, a digit position past the number's end ends it as well), so this follows
//! its state machine step by step rather than re-deriving the layout. The locale is C: `D` is
//! `.`, `G` is `,`, `L` (the currency symbol) is a space, the `S` signs are `+` and `-`.
//!
//! The template is user input: at most `MAX_TEMPLATE` bytes (54000 beyond), parsed once; the
//! text made is bounded by a small multiple of it (a `V` shifts by at most one digit per
//! template byte), and the statement's budget is charged for it by the caller.

use crate::error::{err, Result, SqlError, SqlState};
use rust_decimal::Decimal;

/// Longest template, as for dates.
const MAX_TEMPLATE: usize = 4096;
/// Significant decimal digits of a double and of a real (C's DBL_DIG, FLT_DIG).
const DBL_DIG: i64 = 15;
const FLT_DIG: i64 = 6;

/// A number, with the type that chooses PostgreSQL's to_char.
#[derive(Clone, Copy, Debug)]
pub enum Number {
    /// smallint and integer (`int4_to_char`).
    Int4(i64),
    /// bigint (`int8_to_char`).
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Decimal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    C,
    D,
    Eeee,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    RnUpper,
    RnLower,
    Sg,
    Sp,
    S,
    ThUpper,
    ThLower,
    V,
}

/// PostgreSQL's keywords in its search order (the first that the template continues with
/// wins: `SG` before `S`); only these spellings are keywords.
const KEYWORDS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Dec),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::B),
    ("C", Key::C),
    ("D", Key::D),
    ("EEEE", Key::Eeee),
    ("FM", Key::Fm),
    ("G", Key::G),
    ("L", Key::L),
    ("MI", Key::Mi),
    ("PL", Key::Pl),
    ("PR", Key::Pr),
    ("RN", Key::RnUpper),
    ("SG", Key::Sg),
    ("SP", Key::Sp),
    ("S", Key::S),
    ("TH", Key::ThUpper),
    ("V", Key::V),
    ("b", Key::B),
    ("c", Key::C),
    ("d", Key::D),
    ("eeee", Key::Eeee),
    ("fm", Key::Fm),
    ("g", Key::G),
    ("l", Key::L),
    ("mi", Key::Mi),
    ("pl", Key::Pl),
    ("pr", Key::Pr),
    ("rn", Key::RnLower),
    ("sg", Key::Sg),
    ("sp", Key::Sp),
    ("s", Key::S),
    ("th", Key::ThLower),
    ("v", Key::V),
];

enum Node {
    Key(Key),
    Char(char),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum LocaleSign {
    #[default]
    None,
    Pre,
    Post,
}

/// What the template asks for (PostgreSQL's NUMDesc).
#[derive(Clone, Debug, Default)]
struct Desc {
    /// Digit positions before and after the decimal point, and after `V`.
    pre: i64,
    post: i64,
    multi: i64,
    lsign: LocaleSign,
    pre_lsign_num: i64,
    /// First and last `0` position (1-based), when there is one.
    zero_start: i64,
    zero_end: i64,
    decimal: bool,
    zero: bool,
    blank: bool,
    fill: bool,
    locale_sign: bool,
    bracket: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    shift: bool,
    eeee: bool,
}

fn syntax(message: &str) -> SqlError {
    SqlError::new(SqlState::SyntaxError, message)
}

impl Desc {
    /// `NUMDesc_prepare`: records a keyword, refusing the combinations PostgreSQL refuses.
    fn add(&mut self, key: Key) -> Result<()> {
        if self.eeee && key != Key::Eeee {
            return Err(syntax("\"EEEE\" must be the last pattern used"));
        }
        match key {
            Key::Nine => {
                if self.bracket {
                    return Err(syntax("\"9\" must be ahead of \"PR\""));
                }
                if self.shift {
                    self.multi += 1;
                } else if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
            }
            Key::Zero => {
                if self.bracket {
                    return Err(syntax("\"0\" must be ahead of \"PR\""));
                }
                if !self.zero && !self.decimal {
                    self.zero = true;
                    self.zero_start = self.pre + 1;
                }
                if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
                self.zero_end = self.pre + self.post;
            }
            Key::B => {
                if self.pre == 0 && self.post == 0 && !self.zero {
                    self.blank = true;
                }
            }
            Key::D | Key::Dec => {
                if self.decimal {
                    return Err(syntax("multiple decimal points"));
                }
                if self.shift {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.decimal = true;
            }
            Key::Fm => self.fill = true,
            Key::S => {
                if self.locale_sign {
                    return Err(syntax("cannot use \"S\" twice"));
                }
                if self.plus || self.minus || self.bracket {
                    return Err(syntax("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
                }
                if !self.decimal {
                    self.lsign = LocaleSign::Pre;
                    self.pre_lsign_num = self.pre;
                    self.locale_sign = true;
                } else if self.lsign == LocaleSign::None {
                    self.lsign = LocaleSign::Post;
                    self.locale_sign = true;
                }
            }
            Key::Mi | Key::Pl | Key::Sg => {
                if self.locale_sign {
                    let name = match key {
                        Key::Mi => "MI",
                        Key::Pl => "PL",
                        _ => "SG",
                    };
                    return Err(syntax(&format!("cannot use \"S\" and \"{name}\" together")));
                }
                self.minus |= key != Key::Pl;
                self.plus |= key != Key::Mi;
            }
            Key::Pr => {
                if self.locale_sign || self.plus || self.minus {
                    return Err(syntax("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
                }
                self.bracket = true;
            }
            Key::RnUpper | Key::RnLower => self.roman = true,
            Key::V => {
                if self.decimal {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.shift = true;
            }
            Key::Eeee => {
                if self.eeee {
                    return Err(syntax("cannot use \"EEEE\" twice"));
                }
                if self.blank
                    || self.fill
                    || self.locale_sign
                    || self.bracket
                    || self.minus
                    || self.plus
                    || self.roman
                    || self.shift
                {
                    return Err(syntax("\"EEEE\" is incompatible with other formats"));
                }
                self.eeee = true;
            }
            Key::Comma | Key::C | Key::G | Key::L | Key::Sp | Key::ThUpper | Key::ThLower => {}
        }
        Ok(())
    }
}

/// Splits the template into keywords and characters to copy: a double-quoted string is
/// copied without its quotes (a backslash in it copies the next character), `\"` outside
/// quotes is a double quote.
fn parse(template: &str) -> Result<(Vec<Node>, Desc)> {
    let mut nodes = Vec::new();
    let mut desc = Desc::default();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if let Some((word, key)) = KEYWORDS.iter().find(|(word, _)| rest.starts_with(word)) {
            desc.add(*key)?;
            nodes.push(Node::Key(*key));
            rest = &rest[word.len()..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => {
                let mut chars = rest.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            let escaped = chars.clone().next();
                            if let Some(next) = escaped {
                                chars.next();
                                nodes.push(Node::Char(next));
                            } else {
                                nodes.push(Node::Char('\\'));
                            }
                        }
                        c => nodes.push(Node::Char(c)),
                    }
                }
                rest = chars.as_str();
            }
            '\\' if rest.starts_with('"') => {
                nodes.push(Node::Char('"'));
                rest = &rest[1..];
            }
            c => nodes.push(Node::Char(c)),
        }
    }
    Ok((nodes, desc))
}

/// `to_char(number, template)`.
pub fn format(number: Number, template: &str) -> Result<String> {
    if template.len() > MAX_TEMPLATE {
        return err(SqlState::ProgramLimitExceeded, format!("to_char template longer than {MAX_TEMPLATE} bytes"));
    }
    // PostgreSQL gives the empty text before looking at the number.
    if template.is_empty() {
        return Ok(String::new());
    }
    let (nodes, mut desc) = parse(template)?;
    let (digits, sign, out_pre_spaces) = digits(number, &mut desc)?;
    let out = Processor::new(desc, &digits, sign, out_pre_spaces).run(&nodes)?;
    String::from_utf8(out).map_err(|_| SqlError::new(SqlState::InternalError, "to_char made invalid UTF-8"))
}

/// The number as the processor reads it (PostgreSQL's `numstr`): its digits with the
/// template's decimals and without its sign, a Roman numeral, a scientific form, or `#`s
/// when it has more integer digits than the template; then its sign and how many digit
/// positions stay blank before it.
fn digits(number: Number, desc: &mut Desc) -> Result<(Vec<u8>, u8, i64)> {
    if desc.roman {
        return Ok((roman(roman_value(number)?), 0, 0));
    }
    if desc.eeee {
        let text = match number {
            Number::Int4(i) => scientific_float(i as f64, desc),
            Number::Float4(f) => scientific_float(f64::from(f), desc),
            Number::Float8(f) => scientific_float(f, desc),
            Number::Int8(i) => scientific_numeric(Decimal::from(i), desc.post),
            Number::Numeric(d) => scientific_numeric(d, desc.post),
        };
        return Ok((text.into_bytes(), 0, 0));
    }
    let shift = desc.shift.then_some(desc.multi);
    desc.pre += desc.multi;
    let text = match number {
        Number::Int4(i) => integer(i, shift, desc.post, i64::from(i32::MIN), i64::from(i32::MAX), "integer")?,
        Number::Int8(i) => integer(i, shift, desc.post, i64::MIN, i64::MAX, "bigint")?,
        Number::Float4(f) => {
            // PostgreSQL multiplies in single precision.
            let f = shift.map_or(f, |m| f * 10f64.powf(m as f64) as f32);
            float(f64::from(f), FLT_DIG, desc)
        }
        Number::Float8(f) => float(shift.map_or(f, |m| f * 10f64.powf(m as f64)), DBL_DIG, desc),
        Number::Numeric(d) => numeric(d, shift, desc.post),
    };
    let (sign, text) = match text.strip_prefix('-') {
        Some(unsigned) => (b'-', unsigned.to_string()),
        None => (b'+', text),
    };
    let pre_len = text.find('.').unwrap_or(text.len()) as i64;
    if pre_len > desc.pre {
        let mut filled = vec![b'#'; (desc.pre + desc.post + 1) as usize];
        if let Some(point) = filled.get_mut(desc.pre as usize) {
            *point = b'.';
        }
        return Ok((filled, sign, 0));
    }
    Ok((text.into_bytes(), sign, desc.pre - pre_len))
}

/// The integer a Roman numeral shows: integers as they are, numbers rounded (half away from
/// zero for numeric, to even for floats, whose values out of range show `#`s).
fn roman_value(number: Number) -> Result<i64> {
    let out_of_range = || SqlError::new(SqlState::NumericValueOutOfRange, "integer out of range");
    let float = |f: f64| {
        let r = f.round_ties_even();
        if (1.0..=3999.0).contains(&r) {
            r as i64
        } else {
            0
        }
    };
    match number {
        Number::Int4(i) => Ok(i),
        Number::Int8(i) => i32::try_from(i).map(i64::from).map_err(|_| out_of_range()),
        Number::Float4(f) => Ok(float(f64::from(f))),
        Number::Float8(f) => Ok(float(f)),
        Number::Numeric(d) => {
            let r = d.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
            i32::try_from(r.mantissa() / 10i128.pow(r.scale())).map(i64::from).map_err(|_| out_of_range())
        }
    }
}

/// `int_to_roman`: 1 to 3999, else 15 `#`s.
fn roman(n: i64) -> Vec<u8> {
    if !(1..=3999).contains(&n) {
        return vec![b'#'; 15];
    }
    const DIGITS: [[&str; 10]; 4] = [
        ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"],
        ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"],
        ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"],
        ["", "M", "MM", "MMM", "", "", "", "", "", ""],
    ];
    let mut out = String::new();
    for (place, table) in DIGITS.iter().enumerate().rev() {
        out.push_str(table[(n / 10i64.pow(place as u32) % 10) as usize]);
    }
    out.into_bytes()
}

/// C's `%+.*e` (what PostgreSQL uses for integers and floats), with the `+` of a positive
/// number made a space. (PostgreSQL writes `#`s for NaN and infinities, which Pistou's float
/// values never are: EEEE takes no `V` shift.)
fn scientific_float(f: f64, desc: &Desc) -> String {
    let rust = format!("{:+.*e}", desc.post as usize, f);
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    format!("{}e{exponent:+03}", mantissa.replacen('+', " ", 1))
}

/// `numeric_out_sci` (for numeric and bigint): the significand rounded half away from zero
/// to `post` decimals — 9.999 to two is `10.00e+00`, as in PostgreSQL — and a space for a
/// positive sign.
fn scientific_numeric(d: Decimal, post: i64) -> String {
    let magnitude = d.mantissa().unsigned_abs();
    let count = magnitude.to_string().len() as i64;
    let exponent = if magnitude == 0 { 0 } else { count - 1 - i64::from(d.scale()) };
    // The significand is the magnitude with `count - 1` decimals.
    let significand = with_decimals(magnitude, count - 1, post);
    format!("{}{significand}e{exponent:+03}", if d.is_sign_negative() && magnitude != 0 { '-' } else { ' ' })
}

/// `magnitude / 10^scale` rounded half away from zero to `post` decimals, written with
/// exactly `post` decimals.
fn with_decimals(magnitude: u128, scale: i64, post: i64) -> String {
    let digits = if post >= scale {
        let mut s = magnitude.to_string();
        s.extend(std::iter::repeat_n('0', (post - scale) as usize));
        s
    } else {
        // A Decimal has at most 28 decimals: the divisor fits.
        let divisor = 10u128.pow((scale - post) as u32);
        let (q, r) = (magnitude / divisor, magnitude % divisor);
        (q + u128::from(r >= divisor.div_ceil(2))).to_string()
    };
    if post == 0 {
        return digits;
    }
    let padded = format!("{digits:0>width$}", width = post as usize + 1);
    let (int, frac) = padded.split_at(padded.len() - post as usize);
    format!("{int}.{frac}")
}

/// An integer times 10^shift (`V`; 22003 beyond the type, as PostgreSQL's multiplication),
/// with `post` zero decimals.
fn integer(i: i64, shift: Option<i64>, post: i64, min: i64, max: i64, type_name: &str) -> Result<String> {
    let out_of_range = || SqlError::new(SqlState::NumericValueOutOfRange, format!("{type_name} out of range"));
    let value = match shift {
        Some(m) => {
            let factor = u32::try_from(m).ok().and_then(|m| 10i64.checked_pow(m)).filter(|f| *f <= max);
            let product = factor.and_then(|f| i.checked_mul(f)).filter(|p| (min..=max).contains(p));
            product.ok_or_else(out_of_range)?
        }
        None => i,
    };
    let mut text = value.to_string();
    if post > 0 {
        text.push('.');
        text.extend(std::iter::repeat_n('0', post as usize));
    }
    Ok(text)
}

/// A numeric times 10^shift, rounded half away from zero to `post` decimals (exactly that
/// many written); zero has no sign.
fn numeric(d: Decimal, shift: Option<i64>, post: i64) -> String {
    let magnitude = d.mantissa().unsigned_abs();
    let scale = i64::from(d.scale()) - shift.unwrap_or(0);
    // Shifted past its decimals: an integer (a template with `V` has no decimals).
    let text = if scale < 0 {
        let mut s = magnitude.to_string();
        if magnitude != 0 {
            s.extend(std::iter::repeat_n('0', scale.unsigned_abs() as usize));
        }
        s
    } else {
        with_decimals(magnitude, scale, post)
    };
    let zero = text.bytes().all(|b| b == b'0' || b == b'.');
    if d.is_sign_negative() && !zero {
        format!("-{text}")
    } else {
        text
    }
}

/// C's `%.*f` as PostgreSQL prints it (its snprintf writes `NaN`, `Infinity`).
fn c_fixed(f: f64, post: i64) -> String {
    match f {
        f if f.is_nan() => "NaN".to_string(),
        f if f == f64::INFINITY => "Infinity".to_string(),
        f if f == f64::NEG_INFINITY => "-Infinity".to_string(),
        f => format!("{f:.*}", post as usize),
    }
}

/// A float with `post` decimals, fewer when more than `max_digits` significant digits would
/// show (PostgreSQL cuts `post` to DBL_DIG / FLT_DIG digits in all).
fn float(f: f64, max_digits: i64, desc: &mut Desc) -> String {
    let pre_len = c_fixed(f.abs(), 0).len() as i64;
    if pre_len >= max_digits {
        desc.post = 0;
    } else if pre_len + desc.post > max_digits {
        desc.post = max_digits - pre_len;
    }
    c_fixed(f, desc.post)
}

/// `NUM_processor` writing a number (PostgreSQL's `NUMProc`).
struct Processor<'a> {
    desc: Desc,
    number: &'a [u8],
    /// Next character of `number` to write.
    at: usize,
    sign: u8,
    sign_wrote: bool,
    num_count: i64,
    num_in: bool,
    num_curr: i64,
    out_pre_spaces: i64,
    /// FM with decimals: the last decimal worth writing.
    last_relevant: Option<usize>,
    out: Vec<u8>,
}

impl<'a> Processor<'a> {
    fn new(mut desc: Desc, number: &'a [u8], sign: u8, out_pre_spaces: i64) -> Self {
        desc.zero_start = (desc.zero_start - 1).max(0);
        let mut p = Processor {
            desc,
            number,
            at: 0,
            sign,
            sign_wrote: false,
            num_count: 0,
            num_in: false,
            num_curr: 0,
            out_pre_spaces,
            last_relevant: None,
            out: Vec::new(),
        };
        if p.desc.roman {
            let fill = p.desc.fill;
            p.desc =
                Desc { roman: true, fill, zero_start: p.desc.zero_start, zero_end: p.desc.zero_end, ..Desc::default() };
            p.out_pre_spaces = 0;
        }
        if p.desc.plus || p.desc.minus {
            // MI / PL / SG write the sign themselves; PL alone leaves a sign to write.
            p.sign_wrote = p.desc.minus || !p.desc.plus;
        } else {
            if p.sign != b'-' && p.desc.fill {
                p.desc.bracket = false;
            }
            p.sign_wrote = p.sign == b'+' && p.desc.fill && !p.desc.locale_sign;
            if p.desc.lsign == LocaleSign::Pre && p.desc.pre == p.desc.pre_lsign_num {
                p.desc.lsign = LocaleSign::Post;
            }
        }
        p.num_count = p.desc.post + p.desc.pre - 1;
        if p.desc.fill && p.desc.decimal {
            p.last_relevant = last_relevant_decimal(number);
            if let Some(last) = p.last_relevant {
                if p.desc.zero_end > p.out_pre_spaces {
                    // `0`s after the point are written even when they are trailing zeros.
                    let last_zero = (number.len() as i64 - 1).min(p.desc.zero_end - p.out_pre_spaces);
                    if (last as i64) < last_zero {
                        p.last_relevant = Some(last_zero as usize);
                    }
                }
            }
        }
        if !p.sign_wrote && p.out_pre_spaces == 0 {
            p.num_count += 1;
        }
        p
    }

    /// The character at `i` of the number, NUL past its end (as C's string).
    fn char_at(&self, i: usize) -> u8 {
        self.number.get(i).copied().unwrap_or(0)
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|i| self.char_at(i) == b'.')
    }

    /// `IS_PREDEC_SPACE`: the number's leading 0 before its decimals is written as a space.
    fn predecimal_space(&self) -> bool {
        !self.desc.zero && self.at == 0 && self.char_at(0) == b'0' && self.desc.post != 0
    }

    fn run(mut self, nodes: &[Node]) -> Result<Vec<u8>> {
        if self.desc.eeee {
            return Ok(self.number.to_vec());
        }
        let fill = self.desc.fill;
        for node in nodes {
            let key = match node {
                Node::Char(c) => {
                    let mut buf = [0; 4];
                    self.out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    continue;
                }
                Node::Key(key) => *key,
            };
            match key {
                Key::Nine | Key::Zero | Key::Dec | Key::D => self.digit(key),
                Key::Comma | Key::G if !self.num_in => {
                    if !fill {
                        self.out.push(b' ');
                    }
                }
                Key::Comma | Key::G => self.out.push(b','),
                Key::L => self.out.push(b' '),
                Key::RnUpper | Key::RnLower => {
                    let rest = &self.number[self.at.min(self.number.len())..];
                    let text: Vec<u8> = if key == Key::RnLower { rest.to_ascii_lowercase() } else { rest.to_vec() };
                    if !fill {
                        self.out.extend(std::iter::repeat_n(b' ', 15usize.saturating_sub(text.len())));
                    }
                    self.out.extend_from_slice(&text);
                }
                Key::ThUpper | Key::ThLower => {
                    if self.desc.roman || self.char_at(0) == b'#' || self.sign == b'-' || self.desc.decimal {
                        continue;
                    }
                    let suffix = crate::to_char::ordinal(self.number)?;
                    let suffix = if key == Key::ThUpper { suffix.to_ascii_uppercase() } else { suffix.to_string() };
                    self.out.extend_from_slice(suffix.as_bytes());
                }
                Key::Mi if self.sign == b'-' => self.out.push(b'-'),
                Key::Pl if self.sign == b'+' => self.out.push(b'+'),
                Key::Mi | Key::Pl => {
                    if !fill {
                        self.out.push(b' ');
                    }
                }
                // A Roman numeral has no sign: SG writes NUL, which ends the text.
                Key::Sg => self.out.push(self.sign),
                Key::B | Key::C | Key::Eeee | Key::Fm | Key::Pr | Key::Sp | Key::S | Key::V => {}
            }
        }
        if let Some(end) = self.out.iter().position(|b| *b == 0) {
            self.out.truncate(end);
        }
        Ok(self.out)
    }

    /// `NUM_numpart_to_char`: a digit position or the decimal point, with the sign written
    /// before the first digit shown and after the last.
    fn digit(&mut self, key: Key) {
        if self.desc.roman {
            return;
        }
        self.num_in = false;
        let (fill, zero) = (self.desc.fill, self.desc.zero);
        if !self.sign_wrote
            && (self.num_curr >= self.out_pre_spaces || (zero && self.desc.zero_start == self.num_curr))
            && (!self.predecimal_space() || self.last_relevant_is_point())
        {
            if self.desc.locale_sign {
                if self.desc.lsign == LocaleSign::Pre {
                    self.out.push(if self.sign == b'-' { b'-' } else { b'+' });
                    self.sign_wrote = true;
                }
            } else if self.desc.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'<' });
                self.sign_wrote = true;
            } else if self.sign == b'+' {
                if !fill {
                    self.out.push(b' ');
                }
                self.sign_wrote = true;
            } else if self.sign == b'-' {
                self.out.push(b'-');
                self.sign_wrote = true;
            }
        }
        if self.num_curr < self.out_pre_spaces && (self.desc.zero_start > self.num_curr || !zero) {
            if !fill {
                self.out.push(b' ');
            }
        } else if zero && self.num_curr < self.out_pre_spaces && self.desc.zero_start <= self.num_curr {
            self.out.push(b'0');
            self.num_in = true;
        } else {
            if self.char_at(self.at) == b'.' {
                if !self.last_relevant_is_point() || fill {
                    self.out.push(b'.');
                }
            } else if self.last_relevant.is_some_and(|last| self.at > last) && key != Key::Zero {
                // FM: a trailing zero after the point.
            } else if self.predecimal_space() {
                if !fill {
                    self.out.push(b' ');
                } else if self.last_relevant_is_point() {
                    self.out.push(b'0');
                }
            } else {
                // Past the number's end this writes NUL, ending the text (as PostgreSQL).
                self.out.push(self.char_at(self.at));
                self.num_in = true;
            }
            if self.char_at(self.at) != 0 {
                self.at += 1;
            }
        }
        let mut end = self.num_count + i64::from(self.out_pre_spaces > 0) + i64::from(self.desc.decimal);
        if self.last_relevant == Some(self.at) {
            end = self.num_curr;
        }
        if self.num_curr + 1 == end {
            if self.sign_wrote && self.desc.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'>' });
            } else if self.desc.locale_sign && self.desc.lsign == LocaleSign::Post {
                self.out.push(if self.sign == b'-' { b'-' } else { b'+' });
            }
        }
        self.num_curr += 1;
    }
}

/// `get_last_relevant_decnum`: the last non-zero decimal, or the point when all are zero.
fn last_relevant_decimal(number: &[u8]) -> Option<usize> {
    let point = number.iter().position(|b| *b == b'.')?;
    Some(number.iter().rposition(|b| *b != b'0').filter(|i| *i > point).unwrap_or(point))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Number {
        Number::Numeric(s.parse().expect("decimal"))
    }

    #[test]
    fn formats_as_postgresql() {
        // Outputs of PostgreSQL 15.
        let cases: &[(Number, &str, &str)] = &[
            (Number::Int4(1234), "9,999", " 1,234"),
            (n("-12.345"), "999.99", " -12.35"),
            (n("0.5"), "FM9.99", ".5"),
            (n("9.999"), "9.99EEEE", " 10.00e+00"),
            (Number::Int4(125), "9.9EEEE", " 1.2e+02"),
            (Number::Int8(125), "9.9EEEE", " 1.3e+02"),
            (Number::Float8(0.125), "9.99", "  .12"),
            (Number::Int4(5), "SGRN", ""),
            (Number::Int4(4000), "RN", "###############"),
            (Number::Float8(f64::INFINITY), "99999", " #####"),
            (Number::Float8(f64::NAN), "999999999D99", "       NaN"),
        ];
        for (number, template, expected) in cases {
            assert_eq!(format(*number, template).expect(template), *expected, "{number:?} {template}");
        }
    }

    #[test]
    fn refuses_what_postgresql_refuses() {
        let state = |t: &str| format(Number::Int4(1), t).expect_err(t).state;
        for t in ["9.9.9", "S9S", "9EEEE9", "PR9", "EEEEEEEE", "FM9EEEE", "9.9V9"] {
            assert_eq!(state(t), SqlState::SyntaxError, "{t}");
        }
        assert_eq!(
            format(Number::Int4(3), "9V999999999").expect_err("overflow").state,
            SqlState::NumericValueOutOfRange
        );
        assert_eq!(
            format(Number::Float8(f64::NAN), "999TH").expect_err("NaN").state,
            SqlState::InvalidTextRepresentation
        );
    }

    #[test]
    fn a_long_template_is_bounded() {
        let e = format(Number::Int4(1), &"9".repeat(MAX_TEMPLATE + 1)).expect_err("too long");
        assert_eq!(e.state, SqlState::ProgramLimitExceeded);
        let big = format(n("1.5"), &format!("{}V{}", "9".repeat(10), "9".repeat(4000))).expect("V");
        assert_eq!(big.len(), 4011);
    }
}
