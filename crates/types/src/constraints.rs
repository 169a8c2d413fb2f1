//! Table constraints beyond the primary key, as the catalog keeps them: FOREIGN KEY, CHECK
//! and named UNIQUE constraints, and the ALTER TABLE actions (`CatalogChange::AlterTable`).
//! Validating them needs the SQL engine (a CHECK is SQL text): `pistou_sql::constraints`.

use crate::catalog::{Catalog, TableSchema};
use crate::types::{SqlType, TypeLimits, Value};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Longest CHECK expression text, in bytes.
pub const MAX_CHECK_TEXT: usize = 4096;
/// Most constraints (CHECK + FOREIGN KEY) per table, and columns per foreign key.
pub const MAX_CONSTRAINTS: usize = 256;
pub const MAX_KEY_COLUMNS: usize = 32;
/// Most actions in one ALTER TABLE.
pub const MAX_ALTER_ACTIONS: usize = 64;
/// What a referencing row does when its referenced row goes (ON DELETE / ON UPDATE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FkAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
}

impl FkAction {
    /// `pg_constraint.confdeltype` / `confupdtype`.
    pub fn code(self) -> &'static str {
        match self {
            FkAction::NoAction => "a",
            FkAction::Restrict => "r",
            FkAction::Cascade => "c",
            FkAction::SetNull => "n",
        }
    }

    /// information_schema's `update_rule` / `delete_rule`.
    pub fn rule(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: String,
    /// Positions of the referencing columns in this table.
    pub columns: Vec<usize>,
    /// The referenced table (on the same shard: statements read one shard).
    pub parent: String,
    /// Positions of the referenced columns in the parent, paired with `columns`; they are the
    /// parent's primary key or a unique index, in some order.
    pub parent_columns: Vec<usize>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    /// DEFERRABLE / INITIALLY DEFERRED as declared (shown in the catalog); Pistou checks
    /// every foreign key at the end of each statement (docs/sql.md).
    pub deferrable: bool,
    pub initially_deferred: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckConstraint {
    pub name: String,
    /// The expression as SQL text over the table's column names.
    pub expr: String,
}

/// A table's constraints other than its primary key and unique indexes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Constraints {
    pub checks: Vec<CheckConstraint>,
    pub foreign_keys: Vec<ForeignKey>,
    /// Unique indexes that are UNIQUE constraints (`UNIQUE` in CREATE TABLE or ALTER TABLE ADD
    /// CONSTRAINT), as opposed to CREATE UNIQUE INDEX.
    pub unique: Vec<String>,
    /// Rules added to the table that every row written since holds (writers enforce them),
    /// but that the rows older than the rule are not yet known to hold: a check of a table
    /// too large for one transaction runs after the rule is committed, and then marks it
    /// valid or drops it (PostgreSQL's `indisvalid` / `convalidated` false meanwhile; see
    /// docs/gateway.md, "Checks of existing rows").
    pub unvalidated: Vec<Unvalidated>,
}

/// A rule of a table whose check of the rows older than it has not finished
/// ([`Constraints::unvalidated`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Unvalidated {
    /// A unique or expression index (a primary key's and a UNIQUE constraint's included).
    Index(String),
    /// A CHECK or FOREIGN KEY constraint.
    Constraint(String),
    /// NOT NULL on the column at this position.
    NotNull(usize),
}

impl std::fmt::Display for Unvalidated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unvalidated::Index(name) => write!(f, "index \"{name}\""),
            Unvalidated::Constraint(name) => write!(f, "constraint \"{name}\""),
            Unvalidated::NotNull(column) => write!(f, "NOT NULL of column {}", column + 1),
        }
    }
}

/// Most rules of one table awaiting their check.
pub const MAX_UNVALIDATED: usize = 64;

/// One action of ALTER TABLE (several may form one `CatalogChange::AlterTable`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AlterAction {
    /// The column stays in stored rows, renamed to a hidden name (as PostgreSQL's
    /// attisdropped): stored rows, late writebacks and index positions are unaffected. Indexes,
    /// CHECK and foreign-key constraints of this table using it are dropped with it.
    DropColumn {
        column: String,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    /// SET DEFAULT (a constant) / DROP DEFAULT (None).
    SetDefault {
        column: String,
        default: Option<Value>,
    },
    DropNotNull {
        column: String,
    },
    /// A type change that rewrites no row: varchar(n) to varchar(m >= n), varchar or text.
    SetType {
        column: String,
        ty: SqlType,
        limits: TypeLimits,
    },
    AddCheck(CheckConstraint),
    AddForeignKey(ForeignKey),
    /// A UNIQUE constraint: a unique index named like the constraint.
    AddUnique {
        name: String,
        columns: Vec<usize>,
    },
    DropConstraint {
        name: String,
    },
    /// Appended (the serialized index of each variant is part of the wire format). Existing
    /// rows are checked before the change (`pistou_sql::constraints::validation_queries`).
    SetNotNull {
        column: String,
    },
}

/// Prefix of the hidden name a dropped column gets.
pub const DROPPED_PREFIX: &str = "\0dropped";

/// Foreign keys of other tables (or this one) referencing `table`: (child table, key).
pub fn referencing<'c>(catalog: &'c Catalog, table: &str) -> Vec<(&'c Arc<TableSchema>, &'c ForeignKey)> {
    catalog
        .tables()
        .flat_map(|t| t.constraints.foreign_keys.iter().filter(|f| f.parent == table).map(move |f| (t, f)))
        .collect()
}
