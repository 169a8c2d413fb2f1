//! Table schemas and the versioned catalog. DDL never mutates a catalog behind the caller's
//! back: planning a DDL statement yields a `CatalogChange`, which the caller applies.

pub use crate::constraints::{AlterAction, CheckConstraint, Constraints, FkAction, ForeignKey};
use crate::error::{err, Result, SqlState};
use crate::keycode::encode_key;
use crate::types::{SqlType, TypeLimits, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: SqlType,
    pub limits: TypeLimits,
    pub nullable: bool,
    /// Constant default for INSERTs that omit the column (NULL when absent).
    pub default: Option<Value>,
}

/// Name of the hidden row-id column of a table created without a primary key (see
/// docs/sql.md, "Tables without a primary key"). No SQL identifier can name it: identifiers
/// cannot contain NUL (the binder refuses them), so it is never resolved, expanded by `*`,
/// assigned, or described.
pub const ROW_ID_COLUMN: &str = "\0row_id";

impl Column {
    /// The hidden row-id column of a table without a declared primary key.
    /// The hidden row id, or a dropped column (`constraints::DROPPED_PREFIX`).
    pub fn is_hidden(&self) -> bool {
        self.name.starts_with('\0')
    }
}

/// The row id of the `n`-th row a transaction inserts into a table without a primary key,
/// from the transaction's Basil timestamp: (time, client, seq) is unique per transaction
/// and `n` per row within it, so ids never collide across clients and no counter is
/// shared. Each number is written as a length byte and its minimal big-endian bytes, so ids
/// sort by (time, client, seq, n): rows of a table come back in insertion order.
pub fn row_id(ts: &pistou_core::Timestamp, n: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    for v in [ts.time, ts.client.0, ts.seq, n] {
        let bytes = v.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push((8 - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexSchema {
    pub name: String,
    /// Positions of the indexed columns in the table row.
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableSchema {
    pub name: String,
    /// The table's identity: the catalog version its CREATE TABLE produced (set by
    /// [`Catalog::apply`]; whatever a `CreateTable` change carries is ignored). Catalog
    /// versions only grow, so a table dropped and created again under the same name gets a
    /// new id, and its rows (keyed by name and id) are not the old table's.
    pub id: u64,
    pub columns: Vec<Column>,
    /// Positions of the primary-key columns in the table row (never empty).
    pub primary_key: Vec<usize>,
    /// Secondary indexes, including those backing UNIQUE constraints.
    pub indexes: Vec<IndexSchema>,
    /// FOREIGN KEY, CHECK and UNIQUE constraints (`crate::constraints`).
    pub constraints: Constraints,
}

impl TableSchema {
    /// Position of the visible column `name` (the hidden row id is never found).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name && !c.is_hidden())
    }

    /// Position of the hidden row-id column when the table has no declared primary key
    /// (it is then the whole primary key).
    pub fn row_id_column(&self) -> Option<usize> {
        match self.primary_key.as_slice() {
            [only] if self.columns.get(*only).is_some_and(|c| c.name == ROW_ID_COLUMN) => Some(*only),
            _ => None,
        }
    }

    /// Positions of the columns SQL sees (`SELECT *`, INSERT without a column list, COPY,
    /// Describe): all but the hidden row id.
    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &Column)> {
        self.columns.iter().enumerate().filter(|(_, c)| !c.is_hidden())
    }

    /// The primary key's name and columns as SQL sees them: the declared primary key, or
    /// the unique index ALTER TABLE ... ADD PRIMARY KEY made on a table created without
    /// one (named `<table>_pkey`).
    pub fn declared_primary_key(&self) -> Option<Vec<usize>> {
        if self.row_id_column().is_none() {
            return Some(self.primary_key.clone());
        }
        self.index(&format!("{}_pkey", self.name)).filter(|i| i.unique).map(|i| i.columns.clone())
    }

    /// Encoded primary key of a full row.
    pub fn row_key(&self, row: &[Value]) -> Vec<u8> {
        encode_key(self.primary_key.iter().filter_map(|&i| row.get(i)))
    }

    /// Encoded index key (indexed columns only, without the primary key) of a full row.
    pub fn index_key(&self, index: &IndexSchema, row: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_index_key(index, row, &mut out);
        out
    }

    /// Appends the encoded index key of `row` to `out` (reusing a buffer across rows).
    pub fn write_index_key(&self, index: &IndexSchema, row: &[Value], out: &mut Vec<u8>) {
        for v in index.columns.iter().filter_map(|&i| row.get(i)) {
            crate::keycode::encode_value(out, v);
        }
    }

    pub fn index(&self, name: &str) -> Option<&IndexSchema> {
        self.indexes.iter().find(|i| i.name == name)
    }
}

/// A change to the catalog produced by a DDL statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CatalogChange {
    CreateTable(TableSchema),
    DropTable {
        table: String,
    },
    CreateIndex {
        table: String,
        index: IndexSchema,
    },
    DropIndex {
        table: String,
        index: String,
    },
    /// Appends a nullable or defaulted column; stored rows read as having its default (NULL
    /// when none).
    AddColumn {
        table: String,
        column: Column,
    },
    /// `ALTER TABLE ... ADD PRIMARY KEY (cols)` on a table created without one: a unique
    /// index named `<table>_pkey` over the columns, which become NOT NULL. Rows keep their
    /// hidden row-id keys.
    AddPrimaryKey {
        table: String,
        index: IndexSchema,
    },
    /// ALTER TABLE actions other than ADD COLUMN / ADD PRIMARY KEY, applied in order
    /// (`crate::constraints::AlterAction`).
    AlterTable {
        table: String,
        actions: Vec<AlterAction>,
    },
}

/// All table schemas plus a version number bumped by every applied change (plans are
/// cached per catalog version).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    version: u64,
    tables: BTreeMap<String, Arc<TableSchema>>,
}

impl Catalog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn table(&self, name: &str) -> Option<&Arc<TableSchema>> {
        self.tables.get(name)
    }

    pub fn tables(&self) -> impl Iterator<Item = &Arc<TableSchema>> {
        self.tables.values()
    }

    /// The table owning index `name`, if any (index names are unique per catalog).
    pub fn table_of_index(&self, name: &str) -> Option<&Arc<TableSchema>> {
        self.tables.values().find(|t| t.index(name).is_some())
    }

    /// Applies a change, re-checking it against the current catalog.
    pub fn apply(&mut self, change: &CatalogChange) -> Result<()> {
        match change {
            CatalogChange::CreateTable(schema) => {
                if self.tables.contains_key(&schema.name) {
                    return err(SqlState::DuplicateTable, format!("relation \"{}\" already exists", schema.name));
                }
                for index in &schema.indexes {
                    self.check_new_index_name(&index.name)?;
                }
                crate::constraints::check_new_table(self, schema)?;
                let mut schema = schema.clone();
                schema.id = self.version + 1;
                self.tables.insert(schema.name.clone(), Arc::new(schema));
            }
            CatalogChange::DropTable { table } => {
                if crate::constraints::referencing(self, table).iter().any(|(c, _)| c.name != *table) {
                    return err(
                        SqlState::DependentObjectsStillExist,
                        format!("cannot drop table {table} because other objects depend on it"),
                    );
                }
                if self.tables.remove(table).is_none() {
                    return err(SqlState::UndefinedTable, format!("table \"{table}\" does not exist"));
                }
            }
            CatalogChange::CreateIndex { table, index } => {
                self.check_new_index_name(&index.name)?;
                let Some(schema) = self.tables.get_mut(table) else {
                    return err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist"));
                };
                Arc::make_mut(schema).indexes.push(index.clone());
            }
            CatalogChange::AddColumn { table, column } => {
                let Some(schema) = self.tables.get_mut(table) else {
                    return err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist"));
                };
                if schema.column_index(&column.name).is_some() {
                    return err(
                        SqlState::DuplicateColumn,
                        format!("column \"{}\" of relation \"{table}\" already exists", column.name),
                    );
                }
                Arc::make_mut(schema).columns.push(column.clone());
            }
            CatalogChange::AddPrimaryKey { table, index } => {
                self.check_new_index_name(&index.name)?;
                let Some(schema) = self.tables.get_mut(table) else {
                    return err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist"));
                };
                if schema.declared_primary_key().is_some() {
                    return err(
                        SqlState::InvalidTableDefinition,
                        format!("multiple primary keys for table \"{table}\" are not allowed"),
                    );
                }
                if !index.unique
                    || index.columns.is_empty()
                    || index.columns.iter().any(|c| schema.columns.get(*c).is_none_or(Column::is_hidden))
                {
                    return err(
                        SqlState::InvalidTableDefinition,
                        "a primary key is a unique index over visible columns",
                    );
                }
                let schema = Arc::make_mut(schema);
                for c in &index.columns {
                    if let Some(column) = schema.columns.get_mut(*c) {
                        column.nullable = false;
                    }
                }
                schema.indexes.push(index.clone());
            }
            CatalogChange::DropIndex { table, index } => {
                let Some(schema) = self.tables.get_mut(table) else {
                    return err(SqlState::UndefinedTable, format!("relation \"{table}\" does not exist"));
                };
                if schema.constraints.unique.contains(index) {
                    return err(
                        SqlState::DependentObjectsStillExist,
                        format!("cannot drop index {index} because constraint {index} on table {table} requires it"),
                    );
                }
                let before = schema.indexes.len();
                Arc::make_mut(schema).indexes.retain(|i| &i.name != index);
                if schema.indexes.len() == before {
                    return err(SqlState::UndefinedObject, format!("index \"{index}\" does not exist"));
                }
            }
            CatalogChange::AlterTable { table, actions } => {
                // Applied to a copy: a failing action leaves the catalog as it was.
                let mut next = self.clone();
                crate::constraints::apply_alter(&mut next, table, actions)?;
                self.tables = next.tables;
            }
        }
        self.version += 1;
        Ok(())
    }

    /// Replaces a table's schema (ALTER TABLE actions).
    pub(crate) fn replace_table(&mut self, schema: Arc<TableSchema>) {
        self.tables.insert(schema.name.clone(), schema);
    }

    fn check_new_index_name(&self, name: &str) -> Result<()> {
        if self.table_of_index(name).is_some() || self.tables.contains_key(name) {
            return err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> TableSchema {
        let id = Column {
            name: "id".into(),
            ty: SqlType::Int,
            limits: TypeLimits::default(),
            nullable: false,
            default: None,
        };
        TableSchema {
            name: name.into(),
            id: 0,
            columns: vec![id],
            primary_key: vec![0],
            indexes: vec![],
            constraints: Default::default(),
        }
    }

    #[test]
    fn a_table_created_again_gets_a_new_identity() {
        let mut catalog = Catalog::new();
        catalog.apply(&CatalogChange::CreateTable(table("r"))).expect("create");
        let first = catalog.table("r").expect("r").id;
        catalog.apply(&CatalogChange::DropTable { table: "r".into() }).expect("drop");
        catalog.apply(&CatalogChange::CreateTable(TableSchema { id: first, ..table("r") })).expect("create again");
        let second = catalog.table("r").expect("r").id;
        assert!(second > first, "the id a change carries is ignored; ids are never reused");
    }

    #[test]
    fn identities_are_the_same_wherever_the_change_is_applied() {
        let (mut a, mut b) = (Catalog::new(), Catalog::new());
        for c in [&mut a, &mut b] {
            c.apply(&CatalogChange::CreateTable(table("x"))).expect("create");
            c.apply(&CatalogChange::CreateTable(table("y"))).expect("create");
        }
        assert_eq!(a, b);
        assert_ne!(a.table("x").map(|t| t.id), a.table("y").map(|t| t.id));
    }
}
