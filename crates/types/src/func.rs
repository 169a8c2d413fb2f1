//! The operators and functions that bound expressions call, by identity: they travel in
//! predicates (`crate::predicate_wire`) and in the catalog (volatile column defaults), so
//! they belong to the shared types; evaluating them is the SQL engine's.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    pub fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::NotEq => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::LtEq => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::GtEq => o != Ordering::Less,
        }
    }

    /// The operator with its operands swapped (`a < b` ⇔ `b > a`).
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

/// Scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Func {
    Lower,
    Upper,
    Length,
    Abs,
    Coalesce,
    NullIf,
    Substr,
    Round,
    Floor,
    Ceil,
    Trim,
    Replace,
    Concat,
    Greatest,
    Least,
    Position,
    /// Text form of a REAL (float4) value: its shortest f32 representation. Inserted by the
    /// binder where a REAL expression becomes text; not callable by name.
    Float4Text,
    /// `now()`, `current_timestamp`, `transaction_timestamp()`, `statement_timestamp()`: the
    /// transaction's time (`Env::now`), a timestamptz.
    Now,
    /// `current_date`: the date of the transaction's time (UTC).
    CurrentDate,
    /// `localtimestamp`: the transaction's time as a timestamp (UTC).
    LocalTimestamp,
    // Appended variants (the wire form numbers variants in order).
    /// `text ~ pattern`: POSIX-style regular expression match (the `regex` crate's syntax,
    /// which covers the patterns psql and drivers write). Bound from operators only.
    RegexMatch,
    /// `text ~* pattern`: case-insensitive.
    RegexIMatch,
    /// `array_to_string(array, separator[, null_text])` over an array's text form.
    ArrayToString,
    /// `value = ANY(array)` over an array's text form, the value compared as text. Bound
    /// from `= ANY(…)` only.
    ArrayHas,
    /// Appended (the serialized index of each variant is part of the wire format).
    NextVal,
    CurrVal,
    /// `json_build_object(k1, v1, …)`. The binder puts the arguments' static types first,
    /// as a constant list of type names (`crate::json` needs them: json, arrays and REAL
    /// values are written by type).
    JsonBuildObject,
    /// `ARRAY[e1, …]`: the binder puts the element type's name first (a constant).
    ArrayConstruct,
    /// `array || array` (`array_cat`; an element on either side is bound as a one-element
    /// array): the elements of both, a NULL array counting as empty. The binder puts the
    /// element type's name first (a constant), as for `ArrayConstruct`.
    ArrayCat,
    /// `split_part(text, delimiter, n)`: the n-th field (from the end when n < 0).
    SplitPart,
    /// `date_trunc(unit, value)` (`crate::temporal::truncate`).
    DateTrunc,
    /// `EXTRACT(unit FROM value)`: numeric (`crate::temporal::extract`).
    Extract,
    /// `date_part(unit, value)`: EXTRACT's value as double precision, a date read as a
    /// timestamp.
    DatePart,
    /// `gen_random_uuid()`: the statement's next random uuid (`Env::random`).
    GenRandomUuid,
    /// The jsonb operators and functions (`crate::jsonb`).
    Jsonb(crate::jsonb::JsonbFn),
    /// `age(a, b)`: the symbolic difference (`crate::interval::age`); `age(b)` is from
    /// midnight of the transaction's date.
    Age,
    /// `to_char(value, template)` of a date, timestamp, interval or number
    /// (`pistou_sql::to_char`, `to_char_number`): the binder puts the value's static type
    /// name first (a constant), which chooses among PostgreSQL's to_char of integer, bigint,
    /// real and double precision.
    ToChar,
    /// `setval(sequence, value, is_called)`: the binder puts the sequence's name first (a
    /// constant) and always passes is_called (`pistou_sql::sequence`).
    SetVal,
    /// `lastval()`: the session's last value drawn (or set) from any sequence.
    LastVal,
    /// `ltrim(text[, characters])` and `TRIM(LEADING …)`; `Trim` is btrim, both ends.
    Ltrim,
    /// `rtrim(text[, characters])` and `TRIM(TRAILING …)`.
    Rtrim,
}

impl Func {
    pub fn by_name(name: &str) -> Option<Func> {
        Some(match name {
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "abs" => Func::Abs,
            "coalesce" => Func::Coalesce,
            "nullif" => Func::NullIf,
            "substr" | "substring" => Func::Substr,
            "round" => Func::Round,
            "floor" => Func::Floor,
            "ceil" | "ceiling" => Func::Ceil,
            "trim" | "btrim" => Func::Trim,
            "ltrim" => Func::Ltrim,
            "rtrim" => Func::Rtrim,
            "replace" => Func::Replace,
            "concat" => Func::Concat,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "strpos" => Func::Position,
            "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" => Func::Now,
            "current_date" => Func::CurrentDate,
            "localtimestamp" => Func::LocalTimestamp,
            "array_to_string" => Func::ArrayToString,
            "json_build_object" => Func::JsonBuildObject,
            "split_part" => Func::SplitPart,
            "date_trunc" => Func::DateTrunc,
            "date_part" => Func::DatePart,
            "gen_random_uuid" => Func::GenRandomUuid,
            "age" => Func::Age,
            "to_char" => Func::ToChar,
            other => return crate::jsonb::JsonbFn::by_name(other).map(Func::Jsonb),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Func::Lower => "lower",
            Func::Upper => "upper",
            Func::Length => "length",
            Func::Abs => "abs",
            Func::Coalesce => "coalesce",
            Func::NullIf => "nullif",
            Func::Substr => "substr",
            Func::Round => "round",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Trim => "trim",
            Func::Replace => "replace",
            Func::Concat => "concat",
            Func::Greatest => "greatest",
            Func::Least => "least",
            Func::Position => "strpos",
            Func::Float4Text => "float4out",
            Func::Now => "now",
            Func::CurrentDate => "current_date",
            Func::LocalTimestamp => "localtimestamp",
            Func::RegexMatch => "textregexeq",
            Func::RegexIMatch => "texticregexeq",
            Func::ArrayToString => "array_to_string",
            Func::ArrayHas => "arrayhas",
            Func::NextVal => "nextval",
            Func::CurrVal => "currval",
            Func::JsonBuildObject => "json_build_object",
            Func::ArrayConstruct => "array",
            Func::ArrayCat => "array_cat",
            Func::SplitPart => "split_part",
            Func::DateTrunc => "date_trunc",
            Func::Extract => "extract",
            Func::DatePart => "date_part",
            Func::GenRandomUuid => "gen_random_uuid",
            Func::Jsonb(f) => f.name(),
            Func::Age => "age",
            Func::ToChar => "to_char",
            Func::SetVal => "setval",
            Func::LastVal => "lastval",
            Func::Ltrim => "ltrim",
            Func::Rtrim => "rtrim",
        }
    }

    /// Accepted argument counts (inclusive).
    pub fn arity(self) -> (usize, usize) {
        match self {
            Func::Coalesce | Func::Concat | Func::Greatest | Func::Least => (1, usize::MAX),
            Func::JsonBuildObject | Func::ArrayConstruct => (0, usize::MAX),
            Func::NullIf | Func::Position | Func::RegexMatch | Func::RegexIMatch => (2, 2),
            Func::Replace | Func::SplitPart => (3, 3),
            Func::DateTrunc | Func::Extract | Func::DatePart => (2, 2),
            Func::ArrayToString => (2, 3),
            Func::ArrayCat => (3, 3),
            Func::ArrayHas => (2, 2),
            Func::Substr => (2, 3),
            Func::Trim | Func::Ltrim | Func::Rtrim => (1, 2),
            Func::Round => (1, 2),
            Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::GenRandomUuid => (0, 0),
            Func::Jsonb(f) => f.arity(),
            Func::Age => (1, 2),
            Func::ToChar => (2, 2),
            Func::SetVal => (3, 3),
            Func::LastVal => (0, 0),
            _ => (1, 1),
        }
    }
}
