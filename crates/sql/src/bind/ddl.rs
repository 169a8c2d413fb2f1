//! Binding of CREATE/DROP TABLE, CREATE/DROP INDEX and ALTER TABLE.

use super::*;
use crate::catalog::{Identity, IndexExpression, IndexOrder};
use crate::sequence::SequenceSchema;

/// Checks an index column's operator class. Accepted: the column type's default class, and
/// for text the `*_pattern_ops` classes (Django's LIKE indexes), which order text byte by
/// byte as Pistou always does, so each behaves as the default. Not recorded: the catalog
/// shows the index without it.
fn operator_class(class: &sql::ObjectName, ty: SqlType) -> Result<()> {
    let name = class.0.last().map(|p| p.to_string().trim_matches('"').to_ascii_lowercase()).unwrap_or_default();
    const DEFAULTS: [(SqlType, &str); 11] = [
        (SqlType::Bool, "bool_ops"),
        (SqlType::Int2, "int2_ops"),
        (SqlType::Int4, "int4_ops"),
        (SqlType::Int, "int8_ops"),
        (SqlType::Numeric, "numeric_ops"),
        (SqlType::Float4, "float4_ops"),
        (SqlType::Float, "float8_ops"),
        (SqlType::Bytes, "bytea_ops"),
        (SqlType::Date, "date_ops"),
        (SqlType::Timestamp, "timestamp_ops"),
        (SqlType::TimestampTz, "timestamptz_ops"),
    ];
    const TEXT: [&str; 6] =
        ["text_ops", "varchar_ops", "bpchar_ops", "text_pattern_ops", "varchar_pattern_ops", "bpchar_pattern_ops"];
    let fits = DEFAULTS.contains(&(ty, name.as_str())) || (ty.is_text() && TEXT.contains(&name.as_str()));
    if fits {
        return Ok(());
    }
    if TEXT.contains(&name.as_str()) || DEFAULTS.iter().any(|(_, n)| *n == name) {
        return err(
            SqlState::DatatypeMismatch,
            format!("operator class \"{name}\" does not accept data type {}", ty.pg_name()),
        );
    }
    err(SqlState::UndefinedObject, format!("operator class \"{name}\" does not exist for access method \"btree\""))
}

impl Binder<'_> {
    /// The columns of a PRIMARY KEY or UNIQUE constraint, which take no order (42601).
    pub(super) fn index_columns(
        &self,
        table: &TableSchema,
        cols: &[sql::IndexColumn],
        columns: &[Column],
    ) -> Result<Vec<usize>> {
        let (positions, orders, expressions) = self.ordered_index_columns(table, cols, columns)?;
        if !expressions.is_empty() {
            return err(SqlState::SyntaxError, "a constraint's key is a list of columns, not expressions");
        }
        if !orders.is_empty() || cols.iter().any(|c| c.column.options.sort.is_some()) {
            return err(SqlState::SyntaxError, "a constraint's key columns take no ASC, DESC or NULLS order");
        }
        Ok(positions)
    }

    /// CREATE INDEX's columns and their declared orders (empty when all are ASC NULLS LAST).
    pub(super) fn ordered_index_columns(
        &self,
        table: &TableSchema,
        cols: &[sql::IndexColumn],
        columns: &[Column],
    ) -> Result<(Vec<usize>, Vec<IndexOrder>, Vec<IndexExpression>)> {
        if cols.len() > crate::catalog::MAX_INDEX_COLUMNS {
            return err(
                SqlState::TooManyColumns,
                format!("cannot use more than {} columns in an index", crate::catalog::MAX_INDEX_COLUMNS),
            );
        }
        let mut out = Vec::new();
        let mut orders = Vec::new();
        let mut expressions = Vec::new();
        for c in cols {
            let descending = match &c.column.options.sort {
                None | Some(sql::OrderBySort::Asc) => false,
                Some(sql::OrderBySort::Desc) => true,
                Some(sql::OrderBySort::Using(_)) => return err(SqlState::SyntaxError, "USING in an index column"),
            };
            // PostgreSQL: NULLS FIRST is the default of DESC columns.
            orders.push(IndexOrder { descending, nulls_first: c.column.options.nulls_first.unwrap_or(descending) });
            let sql::Expr::Identifier(i) = strip_nested(&c.column.expr) else {
                expressions.push(self.index_expression(table, &c.column.expr)?);
                out.push(IndexSchema::EXPRESSION);
                continue;
            };
            let name = ident(i);
            let pos = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                SqlError::new(
                    SqlState::UndefinedColumn,
                    format!("column \"{name}\" named in key does not exist in \"{}\"", table.name),
                )
            })?;
            if let (Some(class), Some(column)) = (&c.operator_class, columns.get(pos)) {
                operator_class(class, column.ty)?;
            }
            if out.contains(&pos) {
                return err(SqlState::DuplicateColumn, format!("column \"{name}\" appears twice in key"));
            }
            out.push(pos);
        }
        if orders.iter().all(|o| *o == IndexOrder::default()) {
            orders.clear();
        }
        Ok((out, orders, expressions))
    }

    /// An expression part of CREATE INDEX, bound over the table's row: PostgreSQL's
    /// refusals (subqueries, aggregates, window functions, functions not IMMUTABLE), then
    /// what the index evaluator computes (`crate::index_expr`).
    fn index_expression(&self, table: &TableSchema, ast: &sql::Expr) -> Result<IndexExpression> {
        let e = self.bind_over_table(table, ast, false)?;
        let types: Vec<Option<SqlType>> = table.columns.iter().map(|c| Some(c.ty)).collect();
        crate::index_expr::check_immutable(&e, &types)?;
        let ty = crate::plan::expr_type(&e, &types)
            .ok_or_else(|| SqlError::unsupported("an index expression of unknown type"))?;
        let nodes = crate::predicate_wire::expr_nodes(&e)?;
        let expression = IndexExpression { nodes, ty };
        expression.check(table)?;
        Ok(expression)
    }

    /// `ast` bound over `table`'s row on its own, as an index expression (or, `predicate`,
    /// an index predicate) is: no subqueries, no parameters.
    pub(super) fn bind_over_table(&self, table: &TableSchema, ast: &sql::Expr, predicate: bool) -> Result<Expr> {
        let text = ast.to_string();
        let mut binder = Binder::new(self.catalog, crate::engine::Limits::default().max_depth * 4, &text);
        let scope = Scope::of_table(table, &table.name);
        let (clause, what) =
            if predicate { ("index predicate", "index predicate") } else { ("index expressions", "index expression") };
        let e = binder.expr(ast, &scope, &mut Mode::Plain(clause))?;
        if !binder.subqueries.is_empty() {
            return err(SqlState::FeatureNotSupported, format!("cannot use subquery in {what}"));
        }
        if binder.param_count > 0 {
            return err(SqlState::UndefinedParameter, "there is no parameter $1");
        }
        Ok(e)
    }

    pub(super) fn create_table(&mut self, c: &sql::CreateTable) -> Result<Option<CatalogChange>> {
        if c.temporary {
            return unsupported("TEMP tables (a table is shared by every session of a cluster)");
        }
        if c.query.is_some() {
            // The gateway runs CREATE TABLE … AS itself, in the statement's transaction.
            return unsupported(
                "this form of CREATE TABLE AS (UNLOGGED, with constraints or options, or outside the gateway)",
            );
        }
        if c.or_replace || c.external {
            return unsupported("this CREATE TABLE form");
        }
        storage_parameters(&c.table_options)?;
        let name = object_name(&c.name)?;
        if self.catalog.table(&name).is_some() {
            return if c.if_not_exists {
                self.skip(format!("relation \"{name}\" already exists"))
            } else {
                err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"))
            };
        }
        let mut table = TableSchema {
            name: name.clone(),
            id: 0,
            columns: Vec::new(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
            constraints: Default::default(),
            stored_as: None,
        };
        let mut unique_sets: Vec<(Vec<usize>, Option<String>)> = Vec::new();
        let mut deferred: Vec<&sql::TableConstraint> = Vec::new();
        let mut pk: Option<Vec<usize>> = None;
        let mut sequences = Vec::new();
        let set_pk = |pk: &mut Option<Vec<usize>>, cols: Vec<usize>| {
            if pk.is_some() {
                return err(
                    SqlState::InvalidTableDefinition,
                    format!("multiple primary keys for table \"{name}\" are not allowed"),
                );
            }
            *pk = Some(cols);
            Ok(())
        };
        for def in &c.columns {
            let pos = table.columns.len();
            let (column, key, sequence) = self.column_def(def, &table)?;
            sequences.extend(sequence.map(CatalogChange::CreateSequence));
            match key {
                ColumnKey::None => {}
                ColumnKey::Primary => set_pk(&mut pk, vec![pos])?,
                ColumnKey::Unique => unique_sets.push((vec![pos], None)),
            }
            table.columns.push(column);
        }
        for constraint in &c.constraints {
            match constraint {
                sql::TableConstraint::PrimaryKey(p) => {
                    let cols = self.index_columns(&table, &p.columns, &table.columns)?;
                    set_pk(&mut pk, cols)?;
                }
                sql::TableConstraint::Unique(u) => unique_sets
                    .push((self.index_columns(&table, &u.columns, &table.columns)?, u.name.as_ref().map(ident))),
                sql::TableConstraint::Check(_) | sql::TableConstraint::ForeignKey(_) => deferred.push(constraint),
                other => return unsupported(format!("table constraint {other}")),
            }
        }
        let pk = match pk {
            Some(pk) => pk,
            None => {
                // Rows are keyed by a hidden row id (docs/sql.md, "Tables without a primary key").
                table.columns.push(Column {
                    name: crate::catalog::ROW_ID_COLUMN.to_string(),
                    ty: SqlType::Bytes,
                    limits: TypeLimits::default(),
                    nullable: false,
                    default: None,
                    generated: None,
                    volatile_default: None,
                });
                vec![table.columns.len() - 1]
            }
        };
        for &p in &pk {
            if let Some(col) = table.columns.get_mut(p) {
                col.nullable = false;
            }
        }
        table.primary_key = pk;
        for (cols, constraint_name) in unique_sets {
            if cols == table.primary_key || table.indexes.iter().any(|i| i.columns == cols) {
                continue;
            }
            let col_names: Vec<&str> =
                cols.iter().filter_map(|c| table.columns.get(*c)).map(|c| c.name.as_str()).collect();
            let index_name = constraint_name.unwrap_or_else(|| format!("{name}_{}_key", col_names.join("_")));
            table.constraints.unique.push(index_name.clone());
            table.indexes.push(IndexSchema {
                name: index_name,
                columns: cols,
                unique: true,
                orders: Vec::new(),
                expressions: Vec::new(),
            });
        }
        self.column_constraints(&mut table, &c.columns)?;
        for constraint in deferred {
            self.table_constraint(&mut table, constraint)?;
        }
        if sequences.is_empty() {
            return Ok(Some(CatalogChange::CreateTable(table)));
        }
        sequences.push(CatalogChange::CreateTable(table));
        Ok(Some(CatalogChange::Several(sequences)))
    }

    /// One column definition of CREATE TABLE / ALTER TABLE ADD COLUMN, with the sequence a
    /// SERIAL or IDENTITY column needs.
    pub(super) fn column_def(
        &mut self,
        def: &sql::ColumnDef,
        table: &TableSchema,
    ) -> Result<(Column, ColumnKey, Option<SequenceSchema>)> {
        let col_name = ident(&def.name);
        if col_name.contains('\0') {
            return err(SqlState::SyntaxError, "a column name cannot contain NUL");
        }
        if table.columns.iter().any(|c| c.name == col_name) {
            return err(SqlState::DuplicateColumn, format!("column \"{col_name}\" specified more than once"));
        }
        let serial = super::sequence::serial_type(&def.data_type);
        let (ty, limits) = match serial {
            Some(ty) => (ty, TypeLimits::default()),
            None => data_type(&def.data_type)?,
        };
        let mut column = Column {
            name: col_name,
            ty,
            limits,
            nullable: true,
            default: None,
            generated: None,
            volatile_default: None,
        };
        let mut key = ColumnKey::None;
        let mut identity = None;
        for opt in &def.options {
            match &opt.option {
                sql::ColumnOption::Generated {
                    generated_as: generated_as @ (sql::GeneratedAs::Always | sql::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    if identity.is_some() || serial.is_some() {
                        return err(
                            SqlState::SyntaxError,
                            format!("multiple identity specifications for column \"{}\"", column.name),
                        );
                    }
                    let kind = match generated_as {
                        sql::GeneratedAs::Always => Identity::Always,
                        _ => Identity::ByDefault,
                    };
                    identity = Some((kind, sequence_options.clone().unwrap_or_default()));
                }
                sql::ColumnOption::Null => column.nullable = true,
                sql::ColumnOption::NotNull => column.nullable = false,
                sql::ColumnOption::Default(e) => match self.volatile_default(e, &column)? {
                    Some(func) => column.volatile_default = Some(func),
                    None => column.default = Some(self.constant_default(e, &column)?),
                },
                sql::ColumnOption::PrimaryKey(_) => key = ColumnKey::Primary,
                sql::ColumnOption::Unique(_) => key = ColumnKey::Unique,
                // Bound once the whole table is known (`column_constraints`).
                sql::ColumnOption::Check(_) | sql::ColumnOption::ForeignKey(_) => {}
                other => return unsupported(format!("column option {other}")),
            }
        }
        let generated = match (serial, identity) {
            (Some(_), _) => Some((None, Vec::new())),
            (None, Some((kind, options))) => Some((Some(kind), options)),
            (None, None) => None,
        };
        let Some((kind, options)) = generated else { return Ok((column, key, None)) };
        if column.default.is_some() {
            return err(
                SqlState::SyntaxError,
                format!("multiple default values specified for column \"{}\" of table \"{}\"", column.name, table.name),
            );
        }
        column.nullable = false;
        let (generated, sequence) = self.column_sequence(&table.name, &column, kind, &options)?;
        column.generated = Some(generated);
        Ok((column, key, Some(sequence)))
    }

    /// A DEFAULT that is a call of now() (or a relative) or gen_random_uuid(), evaluated by
    /// each INSERT (None: another expression, which must be constant). Its value must be
    /// assignable to the column (42804 otherwise, as PostgreSQL checks at CREATE TABLE).
    fn volatile_default(&mut self, e: &sql::Expr, column: &Column) -> Result<Option<Func>> {
        let Ok(Expr::Call { func, args }) = self.constant_expr(e, "DEFAULT") else { return Ok(None) };
        let sample = match func {
            Func::Now => Value::TimestampTz(0),
            Func::CurrentDate => Value::Date(0),
            Func::LocalTimestamp => Value::Timestamp(0),
            Func::GenRandomUuid => Value::Text(crate::uuid::format(&[0; 16])),
            _ => return Ok(None),
        };
        if !args.is_empty() {
            return Ok(None);
        }
        if let Err(e) = crate::types::to_column(&sample, column) {
            if e.state == SqlState::DatatypeMismatch {
                let ty = sample.sql_type().map_or("unknown", SqlType::pg_name);
                let ty = if func == Func::GenRandomUuid { "uuid" } else { ty };
                return err(
                    SqlState::DatatypeMismatch,
                    format!(
                        "column \"{}\" is of type {} but default expression is of type {ty}",
                        column.name, column.ty
                    ),
                );
            }
        }
        Ok(Some(func))
    }

    /// A column's DEFAULT: a constant expression (no parameter, subquery or transaction
    /// time), evaluated once and converted to the column's type.
    pub(super) fn constant_default(&mut self, e: &sql::Expr, column: &Column) -> Result<Value> {
        let bound = self.constant_expr(e, "DEFAULT")?;
        if bound.any(&|n| {
            matches!(
                n,
                Expr::Param(_)
                    | Expr::Subquery(_)
                    | Expr::InSubquery { .. }
                    | Expr::Exists { .. }
                    | Expr::Call {
                        func: Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::GenRandomUuid,
                        ..
                    }
            )
        }) {
            return unsupported("non-constant DEFAULT");
        }
        let v = super::dml::assigned(e, bound, Some(column))?.eval(&[], &Env::default())?;
        crate::types::to_column(&v, column)
    }

    /// ALTER TABLE / INDEX / VIEW / SEQUENCE `name` RENAME TO `to`. As in PostgreSQL, ALTER
    /// TABLE and ALTER INDEX rename any relation, ALTER VIEW and ALTER SEQUENCE (`only`) one
    /// of their kind.
    pub(super) fn rename_relation(
        &mut self,
        name: &str,
        to: String,
        if_exists: bool,
        only: Option<RelationKind>,
    ) -> Result<Option<CatalogChange>> {
        let kind = if self.catalog.view(name).is_some() {
            Some(RelationKind::View)
        } else if self.catalog.sequence(name).is_some() {
            Some(RelationKind::Sequence)
        } else {
            None
        };
        let exists =
            kind.is_some() || self.catalog.table(name).is_some() || self.catalog.table_of_index(name).is_some();
        match only {
            Some(wanted) if exists && kind != Some(wanted) => {
                let what = if wanted == RelationKind::View { "view" } else { "sequence" };
                return err(SqlState::WrongObjectType, format!("\"{name}\" is not a {what}"));
            }
            _ => {}
        }
        match kind {
            Some(RelationKind::View) => return Ok(Some(CatalogChange::RenameView { view: name.to_string(), to })),
            Some(RelationKind::Sequence) => {
                return Ok(Some(CatalogChange::RenameSequence { sequence: name.to_string(), to }))
            }
            None => {}
        }
        if self.catalog.table(name).is_some() {
            return Ok(Some(CatalogChange::RenameTable { table: name.to_string(), to }));
        }
        if self.catalog.table_of_index(name).is_some() {
            return Ok(Some(CatalogChange::RenameIndex { index: name.to_string(), to }));
        }
        if self.catalog.tables().any(|t| t.declared_primary_key().is_some() && name == format!("{}_pkey", t.name)) {
            return unsupported(format!("renaming \"{name}\", a declared primary key's index"));
        }
        if if_exists {
            return self.skip(format!("relation \"{name}\" does not exist"));
        }
        err(SqlState::UndefinedTable, format!("relation \"{name}\" does not exist"))
    }

    pub(super) fn alter_index(
        &mut self,
        name: &sql::ObjectName,
        op: &sql::AlterIndexOperation,
    ) -> Result<Option<CatalogChange>> {
        let sql::AlterIndexOperation::RenameIndex { index_name } = op;
        self.rename_relation(&object_name(name)?, object_name(index_name)?, false, None)
    }

    pub(super) fn alter_table(&mut self, a: &sql::AlterTable) -> Result<Option<CatalogChange>> {
        if let [sql::AlterTableOperation::RenameTable { table_name: sql::RenameTableNameKind::To(to) }] =
            a.operations.as_slice()
        {
            return self.rename_relation(&object_name(&a.name)?, object_name(to)?, a.if_exists, self.rename_only);
        }
        if self.catalog.view(&object_name(&a.name)?).is_some() {
            return unsupported("ALTER TABLE of a view (drop and re-create it)");
        }
        let table = match self.catalog.table(&object_name(&a.name)?) {
            Some(t) => t.clone(),
            None if a.if_exists => return self.skip(format!("relation \"{}\" does not exist", object_name(&a.name)?)),
            None => {
                return err(SqlState::UndefinedTable, format!("relation \"{}\" does not exist", object_name(&a.name)?))
            }
        };
        if let [sql::AlterTableOperation::AddConstraint {
            constraint: sql::TableConstraint::PrimaryKey(p),
            not_valid: false,
        }] = a.operations.as_slice()
        {
            return self.add_primary_key(&table, p).map(Some);
        }
        let [sql::AlterTableOperation::AddColumn { if_not_exists, column_def, column_position: None, .. }] =
            a.operations.as_slice()
        else {
            if a.operations.iter().any(|op| matches!(op, sql::AlterTableOperation::AddColumn { .. })) {
                return unsupported("ADD COLUMN together with other ALTER TABLE actions (use one ALTER TABLE each)");
            }
            return self.alter_actions(&table, &a.operations);
        };
        if column_def
            .options
            .iter()
            .any(|o| matches!(o.option, sql::ColumnOption::Check(_) | sql::ColumnOption::ForeignKey(_)))
        {
            return unsupported("CHECK or REFERENCES in ADD COLUMN (add the column, then ADD CONSTRAINT)");
        }
        if *if_not_exists && table.column_index(&ident(&column_def.name)).is_some() {
            let notice =
                format!("column \"{}\" of relation \"{}\" already exists", ident(&column_def.name), table.name);
            return self.skip(notice);
        }
        let (column, key, sequence) = self.column_def(column_def, &table)?;
        if sequence.is_some() {
            return unsupported("adding a SERIAL or IDENTITY column");
        }
        if key != ColumnKey::None {
            return unsupported("adding a PRIMARY KEY or UNIQUE column");
        }
        if !column.nullable && column.default.is_none() {
            return unsupported("adding a NOT NULL column without a DEFAULT");
        }
        Ok(Some(CatalogChange::AddColumn { table: table.name.clone(), column }))
    }

    /// `ALTER TABLE t ADD [CONSTRAINT t_pkey] PRIMARY KEY (cols)` on a table created without
    /// a primary key: a unique index `t_pkey`, the columns becoming NOT NULL (the rows keep
    /// their row-id keys). Existing rows are checked where the change is applied
    /// (`Database`) or by the caller (the gateway) before it is committed.
    fn add_primary_key(&mut self, table: &TableSchema, p: &sql::PrimaryKeyConstraint) -> Result<CatalogChange> {
        if p.index_name.is_some() || p.index_type.is_some() || !p.include.is_empty() || !p.index_options.is_empty() {
            return unsupported("this ADD PRIMARY KEY form");
        }
        if table.declared_primary_key().is_some() {
            return err(
                SqlState::InvalidTableDefinition,
                format!("multiple primary keys for table \"{}\" are not allowed", table.name),
            );
        }
        let name = match &p.name {
            Some(n) => ident(n),
            None => format!("{}_pkey", table.name),
        };
        if name != format!("{}_pkey", table.name) {
            return unsupported("a primary key constraint not named <table>_pkey");
        }
        if self.catalog.table_of_index(&name).is_some() || self.catalog.table(&name).is_some() {
            return err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"));
        }
        let columns = self.index_columns(table, &p.columns, &table.columns)?;
        Ok(CatalogChange::AddPrimaryKey {
            table: table.name.clone(),
            index: IndexSchema { name, columns, unique: true, orders: Vec::new(), expressions: Vec::new() },
        })
    }

    pub(super) fn create_index(&mut self, c: &sql::CreateIndex) -> Result<Option<CatalogChange>> {
        if c.using.is_some()
            || !c.include.is_empty()
            || !c.with.is_empty()
            || c.predicate.is_some()
            || c.concurrently
            || c.nulls_distinct.is_some()
            || !c.index_options.is_empty()
            || !c.alter_options.is_empty()
        {
            return unsupported("this CREATE INDEX form");
        }
        let table = self.table(&c.table_name)?;
        let (columns, orders, expressions) = self.ordered_index_columns(&table, &c.columns, &table.columns)?;
        let name = match &c.name {
            Some(n) => object_name(n)?,
            None => {
                // PostgreSQL names an expression part by its function, else "expr".
                let parts: Vec<String> = columns
                    .iter()
                    .zip(&c.columns)
                    .map(|(i, part)| match (table.columns.get(*i), strip_nested(&part.column.expr)) {
                        (Some(col), _) => col.name.clone(),
                        (None, sql::Expr::Function(f)) => {
                            f.name.0.last().and_then(|p| p.as_ident()).map_or("expr".into(), ident)
                        }
                        _ => "expr".into(),
                    })
                    .collect();
                format!("{}_{}_idx", table.name, parts.join("_"))
            }
        };
        if self.catalog.table_of_index(&name).is_some() || self.catalog.table(&name).is_some() {
            return if c.if_not_exists {
                self.skip(format!("relation \"{name}\" already exists"))
            } else {
                err(SqlState::DuplicateTable, format!("relation \"{name}\" already exists"))
            };
        }
        Ok(Some(CatalogChange::CreateIndex {
            table: table.name.clone(),
            index: IndexSchema { name, columns, unique: c.unique, orders, expressions },
        }))
    }

    /// An `IF [NOT] EXISTS` statement that does nothing: PostgreSQL's NOTICE says so.
    pub(super) fn skip(&mut self, what: String) -> Result<Option<CatalogChange>> {
        self.notice = Some(format!("{what}, skipping"));
        Ok(None)
    }

    pub(super) fn drop(
        &mut self,
        object_type: &sql::ObjectType,
        if_exists: bool,
        name: &sql::ObjectName,
    ) -> Result<Option<CatalogChange>> {
        let name = object_name(name)?;
        let wrong_type = |what: &str, hint: &str| {
            err(SqlState::WrongObjectType, format!("\"{name}\" is not {what} (use DROP {hint} to remove it)"))
        };
        match object_type {
            sql::ObjectType::Table if self.catalog.view(&name).is_some() => wrong_type("a table", "VIEW"),
            sql::ObjectType::View if self.catalog.table(&name).is_some() => wrong_type("a view", "TABLE"),
            sql::ObjectType::View => match self.catalog.view(&name) {
                Some(_) => Ok(Some(CatalogChange::DropView { view: name })),
                None if if_exists => self.skip(format!("view \"{name}\" does not exist")),
                None => err(SqlState::UndefinedTable, format!("view \"{name}\" does not exist")),
            },
            sql::ObjectType::Table => match self.catalog.table(&name) {
                Some(_) => Ok(Some(CatalogChange::DropTable { table: name })),
                None if if_exists => self.skip(format!("table \"{name}\" does not exist")),
                None => err(SqlState::UndefinedTable, format!("table \"{name}\" does not exist")),
            },
            sql::ObjectType::Sequence => match self.catalog.sequence(&name) {
                Some(_) => Ok(Some(CatalogChange::DropSequence { sequence: name })),
                None if if_exists => self.skip(format!("sequence \"{name}\" does not exist")),
                None => err(SqlState::UndefinedTable, format!("sequence \"{name}\" does not exist")),
            },
            sql::ObjectType::Index => match self.catalog.table_of_index(&name) {
                Some(t) => Ok(Some(CatalogChange::DropIndex { table: t.name.clone(), index: name })),
                None if if_exists => self.skip(format!("index \"{name}\" does not exist")),
                None => err(SqlState::UndefinedObject, format!("index \"{name}\" does not exist")),
            },
            other => unsupported(format!("DROP {other}")),
        }
    }
}

/// `CREATE TABLE ... WITH (...)`: PostgreSQL's storage parameters. `fillfactor` (how full
/// PostgreSQL packs heap pages) has no meaning for Pistou's row store and is accepted and
/// ignored, after PostgreSQL's range check; any other parameter is refused.
fn storage_parameters(options: &sql::CreateTableOptions) -> Result<()> {
    let with = match options {
        sql::CreateTableOptions::None => return Ok(()),
        sql::CreateTableOptions::With(with) => with,
        _ => return unsupported("these table options"),
    };
    for option in with {
        let sql::SqlOption::KeyValue { key, value } = option else {
            return unsupported(format!("table option {option}"));
        };
        if ident(key) != "fillfactor" {
            return unsupported(format!("storage parameter \"{}\" (only fillfactor is accepted)", ident(key)));
        }
        let n = match value {
            sql::Expr::Value(v) => match &v.value {
                sql::Value::Number(n, _) => n.parse::<i64>().ok(),
                _ => None,
            },
            _ => None,
        };
        match n {
            Some(10..=100) => {}
            _ => {
                return err(
                    SqlState::InvalidParameterValue,
                    format!("value {value} out of bounds for option \"fillfactor\""),
                )
            }
        }
    }
    Ok(())
}

/// The expression inside any parentheses (`((lower(e)))`).
pub(super) fn strip_nested(mut e: &sql::Expr) -> &sql::Expr {
    while let sql::Expr::Nested(inner) = e {
        e = inner;
    }
    e
}
