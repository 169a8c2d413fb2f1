//! Sequences (CREATE SEQUENCE, SERIAL, IDENTITY) without a hot key in every transaction.
//!
//! A sequence's counter is one Basil key (`pistou_core::sql_keys::sequence_key`) holding the
//! next value not yet handed out. Clients take values from it in blocks, each in a short
//! transaction of its own, and hand them to statements; `nextval` is therefore not
//! transactional (a rolled-back transaction does not return its values), exactly as in
//! PostgreSQL, and concurrent writers of one table never conflict on the counter. A statement
//! that draws values carries the client's block for each sequence it names
//! ([`SequenceInput`]); the client and every replica draw from it in the same order, so all
//! compute the same values, and report how many they drew. `setval` is not transactional
//! either: the client writes the counter in a transaction of its own and runs the statement
//! again with the setting as an input ([`SequenceSet`]). docs/sql.md, "Sequences".

use crate::error::{err, Result, SqlError, SqlState};
use crate::types::SqlType;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;

/// A sequence in the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceSchema {
    pub name: String,
    /// The sequence's identity, as a table's: the catalog version its creation produced (set
    /// by `Catalog::apply`), so a sequence dropped and created again starts afresh.
    pub id: u64,
    /// `smallint`, `integer` or `bigint`: bounds the default MINVALUE / MAXVALUE.
    pub ty: SqlType,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// The column whose default draws from it (SERIAL, IDENTITY): dropped with its table.
    pub owned_by: Option<(String, String)>,
    /// The name its counter is stored under when that is not `name`: its name at CREATE,
    /// kept across renames (set by `Catalog::apply`; whatever a change carries is ignored).
    pub stored_as: Option<String>,
}

impl SequenceSchema {
    /// A sequence with PostgreSQL's defaults for type `ty`: from 1 by 1 up to the type's
    /// largest value.
    pub fn new(name: String, ty: SqlType) -> Result<SequenceSchema> {
        let max = type_max(ty)?;
        Ok(SequenceSchema { name, id: 0, ty, start: 1, increment: 1, min: 1, max, owned_by: None, stored_as: None })
    }

    /// The name its counter is stored under (with its id): its name when it was created.
    pub fn storage_name(&self) -> &str {
        self.stored_as.as_deref().unwrap_or(&self.name)
    }

    /// Checks the options as PostgreSQL's CREATE SEQUENCE does.
    pub fn validate(&self) -> Result<()> {
        let max = type_max(self.ty)?;
        if self.increment == 0 {
            return err(SqlState::InvalidParameterValue, "INCREMENT must not be zero");
        }
        if self.min < -max - 1 || self.max > max {
            return err(
                SqlState::InvalidParameterValue,
                format!("MINVALUE ({}) and MAXVALUE ({}) are out of range for the sequence's type", self.min, self.max),
            );
        }
        if self.min >= self.max {
            return err(
                SqlState::InvalidParameterValue,
                format!("MINVALUE ({}) must be less than MAXVALUE ({})", self.min, self.max),
            );
        }
        if self.start < self.min || self.start > self.max {
            return err(
                SqlState::InvalidParameterValue,
                format!("START value ({}) cannot be outside [{}, {}]", self.start, self.min, self.max),
            );
        }
        Ok(())
    }

    /// The next block after `next` (the counter's value; None: never drawn): up to `want`
    /// values from `next`, and the counter's new value (an i128: past a limit of i64's
    /// range it is one step beyond it). Fails once the sequence is used up (no CYCLE).
    pub fn block(&self, next: Option<i128>, want: u64) -> Result<(SequenceBlock, i128)> {
        let first = next.unwrap_or(self.start as i128);
        let exhausted = || {
            let (what, limit) = if self.increment > 0 { ("maximum", self.max) } else { ("minimum", self.min) };
            SqlError::new(
                SqlState::SequenceGeneratorLimitExceeded,
                format!("nextval: reached {what} value of sequence \"{}\" ({limit})", self.name),
            )
        };
        let first = match i64::try_from(first) {
            Ok(v) if (self.min..=self.max).contains(&v) => v,
            _ => return Err(exhausted()),
        };
        // Values left from `first` to the limit in the increment's direction.
        let span = if self.increment > 0 { self.max as i128 - first as i128 } else { first as i128 - self.min as i128 };
        let left = span / (self.increment as i128).abs() + 1;
        let count = (want.max(1) as i128).min(left) as u64;
        let after = first as i128 + count as i128 * self.increment as i128;
        Ok((SequenceBlock { first, increment: self.increment, count }, after))
    }

    /// The counter's value after `set` (the next value handed out): 22003 outside
    /// [min, max], as PostgreSQL's setval.
    pub fn counter_after(&self, set: SequenceSet) -> Result<i128> {
        if set.value < self.min || set.value > self.max {
            return err(
                SqlState::NumericValueOutOfRange,
                format!(
                    "setval: value {} is out of bounds for sequence \"{}\" ({}..{})",
                    set.value, self.name, self.min, self.max
                ),
            );
        }
        let step = if set.is_called { self.increment as i128 } else { 0 };
        Ok(set.value as i128 + step)
    }
}

/// `setval(sequence, value, is_called)`: the next value handed out becomes `value`
/// (`is_called` false) or the one after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceSet {
    pub value: i64,
    pub is_called: bool,
}

impl SequenceSet {
    /// Asks the client to apply this setting of `sequence` and run the statement again.
    /// Never reaches an application.
    fn needed(self, sequence: &str) -> SqlError {
        SqlError::new(SqlState::SequenceSetNeeded, format!("{} {} {sequence}", self.value, self.is_called))
    }

    /// The sequence and setting a `SequenceSetNeeded` error asks for.
    pub fn requested(e: &SqlError) -> Option<(String, SequenceSet)> {
        if e.state != SqlState::SequenceSetNeeded {
            return None;
        }
        let mut parts = e.message.splitn(3, ' ');
        let value = parts.next()?.parse().ok()?;
        let is_called = parts.next()?.parse().ok()?;
        Some((parts.next()?.to_string(), SequenceSet { value, is_called }))
    }
}

/// Largest value of a sequence of type `ty`.
fn type_max(ty: SqlType) -> Result<i64> {
    match ty {
        SqlType::Int2 => Ok(i16::MAX as i64),
        SqlType::Int4 => Ok(i32::MAX as i64),
        SqlType::Int => Ok(i64::MAX),
        _ => err(SqlState::InvalidParameterValue, "sequence type must be smallint, integer, or bigint"),
    }
}

/// Values a client holds for one sequence: `count` values from `first`, `increment` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceBlock {
    pub first: i64,
    pub increment: i64,
    pub count: u64,
}

impl SequenceBlock {
    /// The `n`-th value (0-based), if within the block.
    pub fn value(&self, n: u64) -> Option<i64> {
        if n >= self.count {
            return None;
        }
        let v = self.first as i128 + n as i128 * self.increment as i128;
        i64::try_from(v).ok()
    }

    /// The block without its first `n` values.
    pub fn skip(&self, n: u64) -> SequenceBlock {
        let n = n.min(self.count);
        let first = self.value(n).unwrap_or(self.first);
        SequenceBlock { first, increment: self.increment, count: self.count - n }
    }
}

/// What a statement may use of one sequence: the values it may draw, the session's
/// current value (currval) before it, and the setting its client applied for its setval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceInput {
    pub sequence: String,
    pub values: SequenceBlock,
    pub current: Option<i64>,
    pub set: Option<SequenceSet>,
}

/// A session's sequence state, carried from one transaction to the next (it is not
/// transactional): each sequence's currval and the session's lastval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionSequences {
    pub currval: std::collections::BTreeMap<String, i64>,
    pub lastval: Option<SequenceLast>,
}

/// The sequence nextval last drew from in a session, and its currval: `lastval()` (as in
/// PostgreSQL, a setval of that sequence with is_called changes it; other setvals do not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceLast {
    pub sequence: String,
    pub value: i64,
}

impl SessionSequences {
    /// The state after `later`, which ran after this one (a COPY batch).
    pub fn absorb(&mut self, later: SessionSequences) {
        self.currval.extend(later.currval);
        self.lastval = later.lastval.or(self.lastval.take());
    }
}

/// Most sequences one statement may name.
pub const MAX_STATEMENT_SEQUENCES: usize = 64;

/// The draws of one statement execution (interior mutability: expressions evaluate through
/// shared references).
pub struct SequenceDraws<'a> {
    inputs: &'a [SequenceInput],
    drawn: RefCell<Vec<u64>>,
    /// Which inputs' settings a setval call returned.
    set: RefCell<Vec<bool>>,
    /// lastval: the session's before the statement, then as it draws and sets.
    last: RefCell<Option<SequenceLast>>,
}

impl<'a> SequenceDraws<'a> {
    /// Draws from `inputs`, in a session whose lastval is `lastval`.
    pub fn new(inputs: &'a [SequenceInput], lastval: Option<SequenceLast>) -> Self {
        SequenceDraws {
            inputs,
            drawn: RefCell::new(vec![0; inputs.len()]),
            set: RefCell::new(vec![false; inputs.len()]),
            last: RefCell::new(lastval),
        }
    }

    fn position(&self, sequence: &str) -> Result<usize> {
        self.inputs.iter().position(|i| i.sequence == sequence).ok_or_else(|| needed(sequence))
    }

    /// `nextval(sequence)`.
    pub fn next(&self, sequence: &str) -> Result<i64> {
        let i = self.position(sequence)?;
        let mut drawn = self.drawn.borrow_mut();
        let n = drawn.get(i).copied().unwrap_or(u64::MAX);
        let v = self.inputs.get(i).and_then(|input| input.values.value(n)).ok_or_else(|| needed(sequence))?;
        if let Some(d) = drawn.get_mut(i) {
            *d += 1;
        }
        *self.last.borrow_mut() = Some(SequenceLast { sequence: sequence.to_string(), value: v });
        Ok(v)
    }

    /// `lastval()`: the currval of the sequence nextval last drew from in the session.
    pub fn last(&self) -> Result<i64> {
        self.last.borrow().as_ref().map(|l| l.value).ok_or_else(|| {
            SqlError::new(SqlState::ObjectNotInPrerequisiteState, "lastval is not yet defined in this session")
        })
    }

    /// The session's lastval after the statement.
    pub fn lastval(&self) -> Option<SequenceLast> {
        self.last.borrow().clone()
    }

    /// `currval(sequence)`: the last value drawn in this statement, else the session's.
    pub fn current(&self, sequence: &str) -> Result<i64> {
        let not_yet = || {
            SqlError::new(
                SqlState::ObjectNotInPrerequisiteState,
                format!("currval of sequence \"{sequence}\" is not yet defined in this session"),
            )
        };
        let Ok(i) = self.position(sequence) else { return Err(not_yet()) };
        let input = self.inputs.get(i).ok_or_else(not_yet)?;
        match self.drawn.borrow().get(i) {
            Some(&n) if n > 0 => input.values.value(n - 1).ok_or_else(not_yet),
            _ => match input.set {
                Some(set) if set.is_called && self.set.borrow().get(i) == Some(&true) => Ok(set.value),
                _ => input.current.ok_or_else(not_yet),
            },
        }
    }

    /// `setval(sequence, …)`: the value set, once the client has applied this setting (the
    /// statement's input carries it); otherwise the request to apply it. One statement sets
    /// a sequence at most once (a second, different setting fails with 0A000).
    pub fn set(&self, sequence: &str, set: SequenceSet) -> Result<i64> {
        let i = self.position(sequence)?;
        let applied = self.inputs.get(i).and_then(|input| input.set);
        let mut matched = self.set.borrow_mut();
        if applied == Some(set) {
            if let Some(m) = matched.get_mut(i) {
                *m = true;
            }
            match self.last.borrow_mut().as_mut() {
                Some(last) if set.is_called && last.sequence == sequence => last.value = set.value,
                _ => {}
            }
            return Ok(set.value);
        }
        if matched.get(i) == Some(&true) {
            return err(
                SqlState::FeatureNotSupported,
                format!("setval of sequence \"{sequence}\" to two different settings in one statement"),
            );
        }
        Err(set.needed(sequence))
    }

    /// Values drawn from each input, in input order.
    pub fn used(&self) -> Vec<u64> {
        self.drawn.borrow().clone()
    }
}

/// The statement needs (more) values of `sequence` than the client gave it: the client
/// takes a larger block and runs the statement again. Never reaches an application.
fn needed(sequence: &str) -> SqlError {
    SqlError::new(SqlState::SequenceValuesNeeded, sequence.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(first: i64, count: u64, current: Option<i64>) -> SequenceInput {
        SequenceInput { sequence: "s".into(), values: SequenceBlock { first, increment: 1, count }, current, set: None }
    }

    #[test]
    fn setval_asks_the_client_to_apply_the_setting_then_returns_it() {
        let set = SequenceSet { value: 42, is_called: true };
        let inputs = [input(10, 0, Some(7))];
        let e = SequenceDraws::new(&inputs, None).set("s", set).expect_err("not applied yet");
        assert_eq!(SequenceSet::requested(&e), Some(("s".to_string(), set)));
        let inputs = [SequenceInput { set: Some(set), ..input(10, 0, Some(7)) }];
        let draws = SequenceDraws::new(&inputs, None);
        assert_eq!(draws.current("s"), Ok(7), "currval is the session's until setval runs");
        assert_eq!(draws.set("s", set), Ok(42));
        assert_eq!(draws.current("s"), Ok(42), "setval(…, true) is currval");
        assert_eq!(draws.set("s", set), Ok(42), "the same setting again");
        let other = SequenceSet { value: 5, is_called: true };
        assert_eq!(draws.set("s", other).map_err(|e| e.state), Err(SqlState::FeatureNotSupported));
        let not_called = SequenceSet { value: 42, is_called: false };
        let inputs = [SequenceInput { set: Some(not_called), ..input(10, 0, Some(7)) }];
        let draws = SequenceDraws::new(&inputs, None);
        assert_eq!(draws.set("s", not_called), Ok(42));
        assert_eq!(draws.current("s"), Ok(7), "setval(…, false) leaves currval");
    }

    #[test]
    fn setval_bounds_and_counters_are_postgres() {
        let s = SequenceSchema::new("s".into(), SqlType::Int4).expect("int4");
        let e = s.counter_after(SequenceSet { value: 0, is_called: true }).expect_err("below min");
        assert_eq!(e.state, SqlState::NumericValueOutOfRange);
        assert_eq!(e.message, "setval: value 0 is out of bounds for sequence \"s\" (1..2147483647)");
        assert_eq!(s.counter_after(SequenceSet { value: 9, is_called: true }), Ok(10));
        assert_eq!(s.counter_after(SequenceSet { value: 9, is_called: false }), Ok(9));
        let max = s.counter_after(SequenceSet { value: s.max, is_called: true }).expect("max");
        assert!(s.block(Some(max), 1).is_err(), "set to the last value: used up");
        let down = SequenceSchema { increment: -1, start: -1, min: -10, max: -1, ..s };
        assert_eq!(down.counter_after(SequenceSet { value: -3, is_called: true }), Ok(-4));
    }

    #[test]
    fn a_statement_draws_its_block_in_order_and_then_asks_for_more() {
        let inputs = [input(10, 2, None)];
        let draws = SequenceDraws::new(&inputs, None);
        assert_eq!(draws.current("s").map_err(|e| e.state), Err(SqlState::ObjectNotInPrerequisiteState));
        assert_eq!(draws.next("s"), Ok(10));
        assert_eq!(draws.current("s"), Ok(10));
        assert_eq!(draws.next("s"), Ok(11));
        assert_eq!(draws.next("s").map_err(|e| e.state), Err(SqlState::SequenceValuesNeeded));
        assert_eq!(draws.used(), vec![2]);
        assert_eq!(draws.next("other").map_err(|e| e.state), Err(SqlState::SequenceValuesNeeded));
    }

    #[test]
    fn lastval_is_the_currval_of_the_sequence_last_drawn_from() {
        let last = |sequence: &str, value| Some(SequenceLast { sequence: sequence.into(), value });
        let inputs = [input(10, 2, None), SequenceInput { sequence: "t".into(), ..input(50, 2, None) }];
        let fresh = SequenceDraws::new(&inputs, None);
        assert_eq!(fresh.last().map_err(|e| e.state), Err(SqlState::ObjectNotInPrerequisiteState));
        let draws = SequenceDraws::new(&inputs, last("u", 3));
        assert_eq!(draws.last(), Ok(3), "the session's, before any draw");
        assert_eq!((draws.next("t"), draws.next("s")), (Ok(50), Ok(10)));
        assert_eq!((draws.last(), draws.lastval()), (Ok(10), last("s", 10)), "across sequences, the last drawn");
        // setval with is_called changes lastval only if it sets the sequence last drawn from.
        let (to_7, to_8) = (SequenceSet { value: 7, is_called: true }, SequenceSet { value: 8, is_called: false });
        for (sequence, set, expected) in [("s", to_7, 7), ("t", to_7, 3), ("s", to_8, 3)] {
            let inputs = [SequenceInput { sequence: sequence.into(), set: Some(set), ..input(10, 0, None) }];
            let draws = SequenceDraws::new(&inputs, last("s", 3));
            assert_eq!((draws.set(sequence, set), draws.last()), (Ok(set.value), Ok(expected)), "{sequence} {set:?}");
        }
    }

    #[test]
    fn currval_before_any_draw_is_the_sessions() {
        let inputs = [input(10, 0, Some(7))];
        assert_eq!(SequenceDraws::new(&inputs, None).current("s"), Ok(7));
    }

    #[test]
    fn blocks_stop_at_the_sequences_limit() {
        let mut s = SequenceSchema::new("s".into(), SqlType::Int2).expect("int2");
        s.max = 5;
        let (block, after) = s.block(None, 4).expect("first block");
        assert_eq!((block, after), (SequenceBlock { first: 1, increment: 1, count: 4 }, 5));
        let (block, after) = s.block(Some(after), 4).expect("last value");
        assert!(s.block(Some(i64::MAX as i128 + 1), 1).is_err(), "a counter past i64 is used up");
        assert_eq!((block.count, block.first, after), (1, 5, 6));
        let e = s.block(Some(after), 4).expect_err("used up");
        assert_eq!(e.state, SqlState::SequenceGeneratorLimitExceeded);
        let down = SequenceSchema { increment: -2, start: -1, min: -6, max: -1, ..s };
        let (block, after) = down.block(None, 10).expect("descending");
        assert_eq!((block.count, block.value(2), after), (3, Some(-5), -7));
        assert!(down.block(Some(after), 1).is_err());
    }

    #[test]
    fn options_are_checked_as_in_postgres() {
        let s = SequenceSchema::new("s".into(), SqlType::Int4).expect("int4");
        assert!(SequenceSchema { increment: 0, ..s.clone() }.validate().is_err());
        assert!(SequenceSchema { start: 0, ..s.clone() }.validate().is_err());
        assert!(SequenceSchema { max: i64::MAX, ..s.clone() }.validate().is_err());
        assert!(SequenceSchema { min: 5, max: 5, start: 5, ..s.clone() }.validate().is_err());
        assert!(SequenceSchema::new("s".into(), SqlType::Text).is_err());
        assert!(s.validate().is_ok());
    }

    #[test]
    fn a_block_skips_what_was_used() {
        let b = SequenceBlock { first: 3, increment: 2, count: 5 };
        assert_eq!(b.skip(2), SequenceBlock { first: 7, increment: 2, count: 3 });
        assert_eq!(b.skip(9).count, 0);
    }
}
