//! Async client library for Pistou's leaderless engine (Basil).
//!
//! A [`Client`] owns one background task that drives the sans-IO
//! [`pistou_txn::Coordinator`]: it ticks it, sends its messages over one TCP link per
//! replica (connected eagerly, reconnected with back-off) and feeds the replies back.
//! Users work with [`Txn`]s; several may run at once on one client.
//!
//! ```no_run
//! # async fn demo(config: std::sync::Arc<pistou_core::ClusterConfig>, key: pistou_crypto::SecretKey) -> Result<(), pistou_client::ClientError> {
//! use pistou_client::{Client, Outcome};
//! let client = Client::connect(config, pistou_core::ClientId(1), Some(key)).await?;
//! let mut txn = client.begin().await?;
//! let old = txn.get(b"counter").await?;
//! txn.put(b"counter", b"1".to_vec())?;
//! match txn.commit().await? {
//!     Outcome::Committed { fast } => println!("committed (fast path: {fast}), was {old:?}"),
//!     Outcome::Aborted => println!("aborted: retry"),
//! }
//! // Or let the library retry aborts:
//! let v = client.run_txn(|t| Box::pin(async move { t.get(b"counter").await })).await?;
//! # let _ = v; Ok(()) }
//! ```

mod client;
mod engine;
mod error;
mod link;
mod options;

pub use client::{Client, Txn, TxnFuture};
pub use engine::SessionSequences;
pub use error::{ClientError, Outcome};
pub use link::LinkCounters;
pub use options::ClientOptions;
pub use pistou_sql::{SqlError, SqlState, Value as SqlValue};
pub use pistou_txn::{RangeStats, SqlOutput, TxnError};
