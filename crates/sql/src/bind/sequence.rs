//! Binding of sequences: CREATE / DROP SEQUENCE, SERIAL and IDENTITY columns, nextval and
//! currval (crate::sequence explains how values are drawn).

use super::*;
use crate::catalog::{Generated, Identity};
use crate::sequence::SequenceSchema;

/// SERIAL's pseudo-types: the integer type of the column and its sequence.
pub(super) fn serial_type(t: &sql::DataType) -> Option<SqlType> {
    let sql::DataType::Custom(name, modifiers) = t else { return None };
    if !modifiers.is_empty() {
        return None;
    }
    let [part] = name.0.as_slice() else { return None };
    match part.as_ident().map(ident)?.as_str() {
        "smallserial" | "serial2" => Some(SqlType::Int2),
        "serial" | "serial4" => Some(SqlType::Int4),
        "bigserial" | "serial8" => Some(SqlType::Int),
        _ => None,
    }
}

impl Binder<'_> {
    /// The sequence of a SERIAL or IDENTITY column `column` of `table`, named as
    /// PostgreSQL names it, and the column's `generated`.
    pub(super) fn column_sequence(
        &mut self,
        table: &str,
        column: &Column,
        identity: Option<Identity>,
        options: &[sql::SequenceOptions],
    ) -> Result<(Generated, SequenceSchema)> {
        let name = format!("{table}_{}_seq", column.name);
        let mut sequence = SequenceSchema::new(name.clone(), column.ty)?;
        self.sequence_options(&mut sequence, options)?;
        sequence.owned_by = Some((table.to_string(), column.name.clone()));
        Ok((Generated { sequence: name, identity }, sequence))
    }

    /// `CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [options]`.
    pub(super) fn create_sequence(
        &mut self,
        if_not_exists: bool,
        temporary: bool,
        name: &sql::ObjectName,
        data_type: Option<&sql::DataType>,
        options: &[sql::SequenceOptions],
        owned_by: Option<&sql::ObjectName>,
    ) -> Result<Option<CatalogChange>> {
        if temporary {
            return unsupported("temporary sequences");
        }
        if owned_by.is_some() {
            return unsupported("CREATE SEQUENCE ... OWNED BY");
        }
        let name = object_name(name)?;
        if self.catalog.sequence(&name).is_some() && if_not_exists {
            return Ok(None);
        }
        let ty = match data_type {
            None => SqlType::Int,
            Some(t) => super::data_type(t)?.0,
        };
        let mut sequence = SequenceSchema::new(name, ty)?;
        self.sequence_options(&mut sequence, options)?;
        Ok(Some(CatalogChange::CreateSequence(sequence)))
    }

    /// Applies CREATE SEQUENCE's options (and IDENTITY's) as PostgreSQL does: a negative
    /// increment makes the defaults descend; START defaults to MINVALUE (ascending) or
    /// MAXVALUE (descending).
    fn sequence_options(&mut self, s: &mut SequenceSchema, options: &[sql::SequenceOptions]) -> Result<()> {
        let (mut start, mut min, mut max) = (None, None, None);
        for option in options {
            match option {
                sql::SequenceOptions::IncrementBy(e, _) => s.increment = self.sequence_number(e)?,
                sql::SequenceOptions::MinValue(e) => {
                    min = Some(e.as_ref().map(|e| self.sequence_number(e)).transpose()?)
                }
                sql::SequenceOptions::MaxValue(e) => {
                    max = Some(e.as_ref().map(|e| self.sequence_number(e)).transpose()?)
                }
                sql::SequenceOptions::StartWith(e, _) => start = Some(self.sequence_number(e)?),
                // Every client takes blocks of values (crate::sequence); CACHE changes nothing.
                sql::SequenceOptions::Cache(e) => {
                    if self.sequence_number(e)? < 1 {
                        return err(SqlState::InvalidParameterValue, "CACHE must be greater than zero");
                    }
                }
                // The flag is `NO`: Cycle(true) is NO CYCLE.
                sql::SequenceOptions::Cycle(true) => {}
                sql::SequenceOptions::Cycle(false) => return unsupported("CYCLE sequences"),
            }
        }
        let type_max = s.max;
        if s.increment < 0 {
            s.min = -type_max - 1;
            s.max = -1;
        }
        if let Some(v) = min {
            s.min = v.unwrap_or(if s.increment < 0 { -type_max - 1 } else { 1 });
        }
        if let Some(v) = max {
            s.max = v.unwrap_or(if s.increment < 0 { -1 } else { type_max });
        }
        s.start = start.unwrap_or(if s.increment < 0 { s.max } else { s.min });
        s.validate()
    }

    fn sequence_number(&mut self, e: &sql::Expr) -> Result<i64> {
        match self.constant_expr(e, "sequence options")?.eval(&[], &Env::default())? {
            Value::Int(v) => Ok(v),
            other => err(SqlState::InvalidParameterValue, format!("sequence option {other:?} is not an integer")),
        }
    }

    /// `nextval('s')` / `currval('s')` (None: another function). The argument must name the
    /// sequence as a constant (a literal, possibly cast to regclass), as every use by
    /// drivers and DEFAULTs does.
    pub(super) fn sequence_function(&mut self, name: &str, args: &[Option<&sql::Expr>]) -> Result<Option<Expr>> {
        let func = match name {
            "nextval" => Func::NextVal,
            "currval" => Func::CurrVal,
            // Setting a sequence writes its counter key (the next value not yet handed out)
            // in the statement's transaction, and every client holding cached blocks of the
            // sequence would have to drop them: the transaction protocol does neither.
            "setval" => return err(
                SqlState::FeatureNotSupported,
                "setval() is not supported: setting a sequence must write its counter key within the transaction and \
                     invalidate the blocks of values clients have cached, which the transaction protocol \
                     does not do",
            ),
            // The session carries currval per sequence, not which sequence it drew from last.
            "lastval" => return err(
                SqlState::FeatureNotSupported,
                "lastval() is not supported: the session keeps each sequence's currval but not which sequence it drew \
                     from last; use currval('sequence')",
            ),
            _ => return Ok(None),
        };
        let [Some(arg)] = args else {
            return err(SqlState::UndefinedFunction, format!("function {name} takes exactly one argument"));
        };
        let sequence = self.sequence_name(arg)?;
        Ok(Some(self.sequence_call(func, sequence)))
    }

    /// A call drawing from (or reading) `sequence`, which the plan then names.
    pub(super) fn sequence_call(&mut self, func: Func, sequence: String) -> Expr {
        if !self.sequences.contains(&sequence) {
            self.sequences.push(sequence.clone());
        }
        Expr::Call { func, args: vec![Expr::Const(Value::Text(sequence))] }
    }

    /// The sequence a text names: `'s'`, `'public.s'`, `'"S"'`, folded as an identifier.
    fn sequence_name(&self, arg: &sql::Expr) -> Result<String> {
        let text = match arg {
            sql::Expr::Cast { expr, .. } | sql::Expr::Nested(expr) => return self.sequence_name(expr),
            sql::Expr::Value(v) => match &v.value {
                sql::Value::SingleQuotedString(s) => s.clone(),
                _ => return unsupported("nextval/currval of a non-text argument"),
            },
            _ => return unsupported("nextval/currval of a sequence named by an expression"),
        };
        let name = text.strip_prefix("public.").unwrap_or(&text);
        let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => name.to_lowercase(),
        };
        if self.catalog.sequence(&name).is_none() {
            return err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist"));
        }
        Ok(name)
    }
}
