//! Pistou SQL engine over a versioned snapshot.
//!
//! SPECIFICATION (read first): the full text of issue 4 is in `crates/sql/ISSUE-4.md`
//! (the brief said "{ISSUE4}" where this text belongs). Delete ISSUE-4.md and this note
//! once the crate's own docs (docs/sql.md) describe the engine.
