//! Binding of sequences: CREATE / DROP SEQUENCE, SERIAL and IDENTITY columns, nextval,
//! currval and setval (crate::sequence explains how values are drawn).

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
            return self.skip(format!("relation \"{name}\" already exists"));
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

    /// `nextval('s')` / `currval('s')` / `setval('s', v [, is_called])` (None: another
    /// function). The first argument must name the sequence as a constant (a literal,
    /// possibly cast to regclass), as every use by drivers, DEFAULTs and dumps does.
    pub(super) fn sequence_function(
        &mut self,
        name: &str,
        args: &[Option<&sql::Expr>],
        scope: &Scope,
        mode: &mut Mode,
    ) -> Result<Option<Expr>> {
        let func = match name {
            "nextval" => Func::NextVal,
            "currval" => Func::CurrVal,
            "setval" => Func::SetVal,
            "lastval" if args.is_empty() => return Ok(Some(Expr::Call { func: Func::LastVal, args: Vec::new() })),
            _ => return Ok(None),
        };
        let (sequence, rest) = match (func, args) {
            (Func::NextVal | Func::CurrVal, [Some(arg)]) => (arg, &[][..]),
            (Func::SetVal, [Some(arg), rest @ ..]) if matches!(rest.len(), 1 | 2) => (arg, rest),
            _ => {
                return err(
                    SqlState::UndefinedFunction,
                    format!("function {name} does not take {} arguments", args.len()),
                )
            }
        };
        let sequence = self.sequence_name(sequence)?;
        let mut bound = Vec::with_capacity(rest.len());
        for (ast, ty) in rest.iter().zip([SqlType::Int, SqlType::Bool]) {
            let Some(ast) = ast else { return unsupported(format!("* argument to {name}")) };
            let e = self.expr(ast, scope, mode)?;
            let input = self.input_type(ast, &e, scope, mode);
            if let InputType::Known(t) = input {
                let fits = if ty == SqlType::Int { t.is_integer() } else { t == ty };
                if !fits {
                    return err(
                        SqlState::UndefinedFunction,
                        format!(
                            "function setval() does not take a {} argument where {} is expected",
                            t.pg_name(),
                            ty.pg_name()
                        ),
                    );
                }
            }
            bound.push(coerce(e, input, ty)?);
        }
        if func == Func::SetVal && bound.len() == 1 {
            bound.push(Expr::Const(Value::Bool(true)));
        }
        Ok(Some(self.sequence_call(func, sequence, bound)?))
    }

    /// A call drawing from (or reading, or setting) `sequence`, which the plan then names;
    /// `args` follow the sequence's name. A statement that sets a sequence does not also draw
    /// from it: the client applies the setting before the statement runs again, so its
    /// nextval values would all come after the setting.
    pub(super) fn sequence_call(&mut self, func: Func, sequence: String, args: Vec<Expr>) -> Result<Expr> {
        let (mine, other) = match func {
            Func::NextVal => (&mut self.sequences_drawn, &self.sequences_set),
            Func::SetVal => (&mut self.sequences_set, &self.sequences_drawn),
            _ => (&mut Vec::new(), &Vec::new()),
        };
        if other.contains(&sequence) {
            return unsupported(format!("nextval and setval of sequence \"{sequence}\" in one statement"));
        }
        if !mine.contains(&sequence) {
            mine.push(sequence.clone());
        }
        if !self.sequences.contains(&sequence) {
            self.sequences.push(sequence.clone());
        }
        let mut all = vec![Expr::Const(Value::Text(sequence))];
        all.extend(args);
        Ok(Expr::Call { func, args: all })
    }

    /// The sequence a text names: `'s'`, `'public.s'`, `'"S"'`, folded as an identifier.
    /// A constant expression is evaluated now: `pg_get_serial_sequence('t', 'id')`, as
    /// Django's sequence reset writes it.
    fn sequence_name(&mut self, arg: &sql::Expr) -> Result<String> {
        let text = match arg {
            sql::Expr::Cast { expr, .. } | sql::Expr::Nested(expr) => return self.sequence_name(expr),
            sql::Expr::Value(v) => match &v.value {
                sql::Value::SingleQuotedString(s) => s.clone(),
                _ => return unsupported("a sequence function of a non-text argument"),
            },
            _ => match self.constant_expr(arg, "a sequence name").and_then(|e| e.eval(&[], &Env::default())) {
                Ok(Value::Text(s)) => s,
                Ok(_) => return unsupported("a sequence function of a sequence named by NULL"),
                Err(_) => return unsupported("a sequence function of a sequence named by a non-constant expression"),
            },
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
