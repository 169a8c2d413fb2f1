//! Sequences (CREATE SEQUENCE, SERIAL, IDENTITY) without a hot key in every transaction.
//!
//! A sequence's counter is one Basil key (`pistou_core::sql_keys::sequence_key`) holding the
//! next value not yet handed out. Clients take values from it in blocks, each in a short
//! transaction of its own, and hand them to statements; `nextval` is therefore not
//! transactional (a rolled-back transaction does not return its values), exactly as in
//! PostgreSQL, and concurrent writers of one table never conflict on the counter. A statement
//! that draws values carries the client's block for each sequence it names
//! ([`SequenceInput`]); the client and every replica draw from it in the same order, so all
//! compute the same values, and report how many they drew. docs/sql.md, "Sequences".

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
}

impl SequenceSchema {
    /// A sequence with PostgreSQL's defaults for type `ty`: from 1 by 1 up to the type's
    /// largest value.
    pub fn new(name: String, ty: SqlType) -> Result<SequenceSchema> {
        let max = type_max(ty)?;
        Ok(SequenceSchema { name, id: 0, ty, start: 1, increment: 1, min: 1, max, owned_by: None })
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

/// What a statement may use of one sequence: the values it may draw and the session's
/// current value (currval) before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceInput {
    pub sequence: String,
    pub values: SequenceBlock,
    pub current: Option<i64>,
}

/// Most sequences one statement may name.
pub const MAX_STATEMENT_SEQUENCES: usize = 64;

/// The draws of one statement execution (interior mutability: expressions evaluate through
/// shared references).
pub struct SequenceDraws<'a> {
    inputs: &'a [SequenceInput],
    drawn: RefCell<Vec<u64>>,
}

impl<'a> SequenceDraws<'a> {
    pub fn new(inputs: &'a [SequenceInput]) -> Self {
        SequenceDraws { inputs, drawn: RefCell::new(vec![0; inputs.len()]) }
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
        Ok(v)
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
            _ => input.current.ok_or_else(not_yet),
        }
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
        SequenceInput { sequence: "s".into(), values: SequenceBlock { first, increment: 1, count }, current }
    }

    #[test]
    fn a_statement_draws_its_block_in_order_and_then_asks_for_more() {
        let inputs = [input(10, 2, None)];
        let draws = SequenceDraws::new(&inputs);
        assert_eq!(draws.current("s").map_err(|e| e.state), Err(SqlState::ObjectNotInPrerequisiteState));
        assert_eq!(draws.next("s"), Ok(10));
        assert_eq!(draws.current("s"), Ok(10));
        assert_eq!(draws.next("s"), Ok(11));
        assert_eq!(draws.next("s").map_err(|e| e.state), Err(SqlState::SequenceValuesNeeded));
        assert_eq!(draws.used(), vec![2]);
        assert_eq!(draws.next("other").map_err(|e| e.state), Err(SqlState::SequenceValuesNeeded));
    }

    #[test]
    fn currval_before_any_draw_is_the_sessions() {
        let inputs = [input(10, 0, Some(7))];
        assert_eq!(SequenceDraws::new(&inputs).current("s"), Ok(7));
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
