//! Errors: the gateway's own (`GatewayError`) and the mapping of client-library errors to
//! SQLSTATEs that PostgreSQL drivers understand.

use pistou_client::ClientError;
use pistou_client::TxnError;
use pistou_sql::SqlError;

/// Why `serve` stopped.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("gateway configuration: {0}")]
    Config(String),
    #[error("gateway listener: {0}")]
    Io(#[from] std::io::Error),
}

/// An error reported to the client: a Pistou SQL error or one of the codes below.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgError {
    pub code: &'static str,
    pub message: String,
}

impl PgError {
    pub fn new(code: &'static str, message: impl Into<String>) -> PgError {
        PgError { code, message: message.into() }
    }

    pub fn with_prefix(mut self, prefix: &str) -> PgError {
        self.message.insert_str(0, prefix);
        self
    }

    /// The constraint an integrity violation names (PostgreSQL's error field `n`, which
    /// drivers expose, e.g. node-postgres's `error.constraint`): the engine's messages name it
    /// as PostgreSQL's do, `... constraint "name"`.
    pub fn constraint(&self) -> Option<String> {
        if !matches!(self.code, "23505" | "23503" | "23514" | "23P01") {
            return None;
        }
        let rest = &self.message[self.message.find("constraint \"")? + "constraint \"".len()..];
        Some(rest[..rest.find('"')?].to_string())
    }

    pub fn is_serialization_failure(&self) -> bool {
        self.code == SERIALIZATION_FAILURE
    }
}

pub const SERIALIZATION_FAILURE: &str = "40001";
pub const IN_FAILED_TRANSACTION: &str = "25P02";
pub const ACTIVE_TRANSACTION: &str = "25001";
pub const NO_ACTIVE_TRANSACTION: &str = "25P01";
pub const SYNTAX_ERROR: &str = "42601";
pub const INVALID_SAVEPOINT: &str = "3B001";
pub const PROTOCOL_VIOLATION: &str = "08P01";
pub const PROGRAM_LIMIT: &str = "54000";
pub const UNDEFINED_STATEMENT: &str = "26000";
pub const DUPLICATE_STATEMENT: &str = "42P05";
pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
pub const UNDEFINED_CURSOR: &str = "34000";
pub const COMPLETION_UNKNOWN: &str = "40003";
pub const QUERY_CANCELED: &str = "57014";
pub const CANNOT_CONNECT_NOW: &str = "57P03";
pub const INTERNAL: &str = "XX000";
pub const SNAPSHOT_TOO_OLD: &str = "72000";

impl From<SqlError> for PgError {
    fn from(e: SqlError) -> PgError {
        PgError { code: e.sqlstate(), message: e.message }
    }
}

pub fn failed_transaction() -> PgError {
    PgError::new(
        IN_FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

pub fn serialization_failure() -> PgError {
    PgError::new(
        SERIALIZATION_FAILURE,
        "could not serialize access due to a concurrent transaction (the transaction was aborted; retry it)",
    )
}

/// A client-library error as the user sees it.
pub fn from_client(e: ClientError) -> PgError {
    match e {
        ClientError::Sql(sql) => sql.into(),
        ClientError::Timeout { op: "commit", after } => PgError::new(
            COMPLETION_UNKNOWN,
            format!("commit timed out after {after:?}: the transaction may or may not have committed"),
        ),
        ClientError::Timeout { op, after } => {
            PgError::new(QUERY_CANCELED, format!("{op} timed out after {after:?} (are enough replicas reachable?)"))
        }
        ClientError::TooManyAborts(_) => serialization_failure(),
        ClientError::Closed => PgError::new(CANNOT_CONNECT_NOW, "the gateway's connection to the cluster is shut down"),
        // As a statement of such a transaction gets (pistou_txn's read_err).
        ClientError::Txn(t @ TxnError::TooOld) => PgError::new(SNAPSHOT_TOO_OLD, t.to_string()),
        ClientError::Txn(t) => PgError::new(PROGRAM_LIMIT, t.to_string()),
        other => PgError::new(INTERNAL, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_violations_name_their_constraint() {
        let e = PgError::new("23505", "duplicate key value violates unique constraint \"t_pkey\"");
        assert_eq!(e.constraint().as_deref(), Some("t_pkey"));
        let e = PgError::new("23503", "insert or update on table \"c\" violates foreign key constraint \"c_p_fkey\"");
        assert_eq!(e.constraint().as_deref(), Some("c_p_fkey"));
        assert_eq!(PgError::new("23514", "violates check constraint \"é\"").constraint().as_deref(), Some("é"));
        assert_eq!(PgError::new("23505", "constraint \"unterminated").constraint(), None);
        assert_eq!(PgError::new("42P01", "constraint \"x\"").constraint(), None);
    }
}
