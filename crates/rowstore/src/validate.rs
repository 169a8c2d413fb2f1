//! Checks a client's write against the table schema before anything is installed.

use crate::error::{show_key, StoreError};
use crate::keycheck::is_primary_key;
use pistou_types::types::stored_value_problem;
use pistou_types::{Column, TableSchema, Value, Write};

/// Checks every write against its table's schema in `catalog` (as [`crate::RowStore::insert`]
/// does), for rows of tables the store does not hold yet: those a transaction creates.
pub fn check_writes(writes: &pistou_types::WriteSet, catalog: &pistou_types::Catalog) -> Result<(), StoreError> {
    for (name, table_writes) in &writes.tables {
        let schema = catalog.stored(name).ok_or_else(|| StoreError::UnknownTable { table: name.clone() })?;
        for (key, write) in table_writes {
            check_write(schema, key, write)?;
        }
    }
    Ok(())
}

/// Checks one write: an upsert must be a well-typed full row of the current schema whose
/// primary key encodes to exactly `key`; a deletion's key must be a well-formed primary key.
pub(crate) fn check_write(schema: &TableSchema, key: &[u8], write: &Write) -> Result<(), StoreError> {
    match write {
        Write::Upsert(row) => check_row(schema, key, row),
        Write::Delete if is_primary_key(schema, key) => Ok(()),
        Write::Delete => Err(StoreError::MalformedKey { table: schema.name.clone(), key: show_key(key) }),
    }
}

fn check_row(schema: &TableSchema, key: &[u8], row: &[Value]) -> Result<(), StoreError> {
    if row.len() != schema.columns.len() {
        return Err(StoreError::WrongArity {
            table: schema.name.clone(),
            key: show_key(key),
            expected: schema.columns.len(),
            got: row.len(),
        });
    }
    for (position, (column, value)) in schema.columns.iter().zip(row).enumerate() {
        let in_key = schema.primary_key.contains(&position);
        check_value(schema, column, in_key, value)?;
    }
    if schema.row_key(row) != key {
        return Err(StoreError::KeyMismatch { table: schema.name.clone(), key: show_key(key) });
    }
    // A correct client's statement fails on a row an index expression fails for, so such a
    // row was not written by one; refusing it keeps every entry the row's true one.
    for index in schema.indexes.iter().filter(|i| !i.expressions.is_empty()) {
        if let Err(e) = schema.checked_index_key(index, row) {
            return Err(StoreError::IndexExpression {
                table: schema.name.clone(),
                index: index.name.clone(),
                key: show_key(key),
                detail: e.to_string(),
            });
        }
    }
    Ok(())
}

/// The engine stores values already cast to the column type (`assign_cast`) and within the
/// column's limits (`check_limits`), so anything else did not come from a correct client.
fn check_value(schema: &TableSchema, column: &Column, in_key: bool, value: &Value) -> Result<(), StoreError> {
    let at = || (schema.name.clone(), column.name.clone());
    let Some(ty) = value.sql_type() else {
        if column.nullable && !in_key {
            return Ok(());
        }
        let (table, column) = at();
        return Err(StoreError::NullViolation { table, column });
    };
    if ty != column.ty.storage() {
        let (table, column_name) = at();
        return Err(StoreError::WrongType { table, column: column_name, expected: column.ty, got: ty.to_string() });
    }
    let violation = stored_value_problem(column.ty, &column.limits, value);
    match violation {
        Some(detail) => {
            let (table, column) = at();
            Err(StoreError::OutOfLimits { table, column, detail })
        }
        None => Ok(()),
    }
}
