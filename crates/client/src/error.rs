use pistou_txn::TxnError;
use std::time::Duration;

/// How a commit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Durable and serializable. `fast` is true when unanimous votes made an ST2 round
    /// unnecessary (Basil's fast path).
    Committed { fast: bool },
    /// The transaction conflicted; nothing it wrote is visible. Safe to retry.
    Aborted,
}

impl Outcome {
    pub fn is_committed(&self) -> bool {
        matches!(self, Outcome::Committed { .. })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("client configuration: {0}")]
    Config(String),
    /// The operation got no answer in time. For `commit` the outcome is unknown: the
    /// transaction may still commit.
    #[error("{op} timed out after {after:?} (are enough replicas reachable?)")]
    Timeout { op: &'static str, after: Duration },
    #[error(transparent)]
    Txn(#[from] TxnError),
    #[error("the transaction is already committed or aborted")]
    Finished,
    #[error("the client has shut down")]
    Closed,
    #[error("transaction aborted {0} times in a row; giving up")]
    TooManyAborts(u32),
    /// A SQL statement failed (it carries the PostgreSQL SQLSTATE). The transaction stays
    /// open but should be rolled back, as PostgreSQL requires.
    #[error("{0}")]
    Sql(#[from] pistou_sql::SqlError),
}
