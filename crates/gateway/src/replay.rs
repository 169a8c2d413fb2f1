//! What a transaction block showed its client, so that the block can be run again.
//!
//! A block aborted by concurrency control (40001) or by its age (72000) is run again,
//! statement by statement, in a new transaction at a fresh timestamp (`Session::replay`). If
//! every statement shows exactly what it showed the first time (rows, types, command tags and
//! notices, compared by digest), the client cannot tell the new transaction from the one it
//! talked to, so committing the new one is serializable (at its own timestamp) and the client
//! sees success instead of an error it would have to retry itself. Applications that do not
//! retry serialization failures (most ORMs by default) then work under contention.
//!
//! Not replayed: blocks with savepoints, SET / RESET or COPY (their meaning is not in the
//! statements alone: COPY's batches commit on their own), and blocks larger than the bounds
//! below (memory).

use crate::params::RawParams;
use crate::session::{Reply, Work};

/// Statements a replayable block may hold.
const MAX_STATEMENTS: usize = 1_000;
/// Bytes of statement text and parameters a replayable block may hold.
const MAX_BYTES: usize = 1 << 20;

/// A statement as the block ran it, with the digest of what it showed.
pub(crate) struct Entry {
    pub work: Recorded,
    pub shown: [u8; 32],
}

/// An owned [`Work`] of a block.
pub(crate) enum Recorded {
    Statement(String, RawParams),
    Truncate(Vec<String>),
    DropTables(Vec<String>),
    CreateTableAs(Box<crate::command::CreateTableAs>, RawParams),
}

impl Recorded {
    pub fn work(&self) -> Work<'_> {
        match self {
            Recorded::Statement(sql, params) => Work::Statement(sql, params),
            Recorded::Truncate(tables) => Work::Truncate(tables),
            Recorded::DropTables(drops) => Work::DropTables(drops),
            Recorded::CreateTableAs(ctas, params) => Work::CreateTableAs(ctas, params),
        }
    }
}

/// The statements of the current block, while it can still be replayed.
#[derive(Default)]
pub(crate) struct Journal {
    entries: Vec<Entry>,
    bytes: usize,
    forgone: bool,
}

impl Journal {
    pub fn replayable(&self) -> bool {
        !self.forgone
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Records a statement that succeeded in the block, or forgoes replay if it cannot be.
    pub fn record(&mut self, work: &Work<'_>, reply: &Reply) {
        if self.forgone {
            return;
        }
        let (recorded, bytes) = match *work {
            Work::Statement(sql, params) => (
                Recorded::Statement(sql.to_string(), params.clone()),
                sql.len() + params.values.iter().flatten().map(|v| v.len()).sum::<usize>(),
            ),
            Work::Truncate(tables) => (Recorded::Truncate(tables.to_vec()), tables.iter().map(String::len).sum()),
            Work::DropTables(drops) => (Recorded::DropTables(drops.to_vec()), drops.iter().map(String::len).sum()),
            Work::CreateTableAs(ctas, params) => (
                Recorded::CreateTableAs(Box::new(ctas.clone()), params.clone()),
                ctas.query.len() + params.values.iter().flatten().map(|v| v.len()).sum::<usize>(),
            ),
            // COPY's batches commit on their own, outside the block; the checks of older
            // rows run only outside a block too.
            Work::Values(..) | Work::AddUnvalidated(..) | Work::ChangeCatalog(..) => return self.forgo(),
        };
        self.bytes = self.bytes.saturating_add(bytes);
        if self.entries.len() >= MAX_STATEMENTS || self.bytes > MAX_BYTES {
            return self.forgo();
        }
        self.entries.push(Entry { work: recorded, shown: digest(reply) });
    }

    /// The block did something its statements alone do not repeat: never replay it.
    pub fn forgo(&mut self) {
        self.forgone = true;
        self.entries = Vec::new();
    }
}

/// Digest of everything a reply shows the client.
pub(crate) fn digest(reply: &Reply) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    let mut put = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    match reply {
        Reply::Rows { fields, rows, tag } => {
            put(b"rows");
            put(tag.as_bytes());
            for f in fields {
                put(f.name.as_bytes());
                put(&postcard::to_allocvec(&f.ty).unwrap_or_default());
            }
            for row in rows {
                put(&postcard::to_allocvec(row).unwrap_or_default());
            }
        }
        Reply::Command { tag, notices } => {
            put(b"command");
            put(tag.as_bytes());
            for n in notices {
                put(n.severity.as_bytes());
                put(n.code.as_bytes());
                put(n.message.as_bytes());
            }
        }
    }
    *h.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Field, Notice};
    use pistou_sql::{SqlType, Value};

    fn rows(values: Vec<Value>) -> Reply {
        Reply::Rows {
            fields: vec![Field { name: "v".into(), ty: Some(SqlType::Int) }],
            rows: values.into_iter().map(|v| vec![v]).collect(),
            tag: "SELECT 1".into(),
        }
    }

    #[test]
    fn digests_tell_apart_everything_a_client_sees() {
        let base = digest(&rows(vec![Value::Int(1)]));
        assert_eq!(base, digest(&rows(vec![Value::Int(1)])));
        assert_ne!(base, digest(&rows(vec![Value::Int(2)])), "a value");
        assert_ne!(base, digest(&rows(vec![Value::Text("1".into())])), "a type of value");
        assert_ne!(base, digest(&rows(vec![Value::Int(1), Value::Int(1)])), "a row count");
        let Reply::Rows { fields, rows: r, .. } = rows(vec![Value::Int(1)]) else { unreachable!() };
        assert_ne!(base, digest(&Reply::Rows { fields: fields.clone(), rows: r.clone(), tag: "SELECT 2".into() }));
        let renamed = vec![Field { name: "w".into(), ty: Some(SqlType::Int) }];
        assert_ne!(base, digest(&Reply::Rows { fields: renamed, rows: r, tag: "SELECT 1".into() }), "a column name");
        let command = |notices: Vec<Notice>| Reply::Command { tag: "UPDATE 1".into(), notices };
        assert_ne!(digest(&command(vec![])), digest(&command(vec![Notice::info("n")])), "a notice");
    }

    #[test]
    fn blocks_beyond_the_bounds_or_with_copy_are_not_replayable() {
        let reply = Reply::Command { tag: "UPDATE 1".into(), notices: Vec::new() };
        let params = RawParams::default();
        let mut journal = Journal::default();
        for _ in 0..MAX_STATEMENTS {
            journal.record(&Work::Statement("UPDATE t SET v = 1", &params), &reply);
        }
        assert!(journal.replayable());
        assert_eq!(journal.entries().len(), MAX_STATEMENTS);
        journal.record(&Work::Statement("UPDATE t SET v = 1", &params), &reply);
        assert!(!journal.replayable() && journal.entries().is_empty(), "one statement too many");

        let mut journal = Journal::default();
        journal.record(&Work::Statement(&"x".repeat(MAX_BYTES + 1), &params), &reply);
        assert!(!journal.replayable(), "too many bytes");

        let mut journal = Journal::default();
        journal.record(&Work::Values("INSERT INTO t VALUES ($1)", &[Value::Int(1)]), &reply);
        assert!(!journal.replayable(), "a COPY batch");
    }
}
