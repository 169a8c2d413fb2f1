//! PostgreSQL wire-protocol gateway for Pistou: psql, psycopg, JDBC and other
//! PostgreSQL clients talk to a Pistou cluster through it.
//!
//! Each connection is a session with at most one open Pistou transaction. Statements
//! outside `BEGIN … COMMIT` run as one-statement transactions (retried on serialization
//! failure); SQL goes to the cluster through [`pistou_client::Txn::query`]. The gateway
//! answers transaction control, SET / SHOW and the catalog queries of common clients
//! itself. See docs/gateway.md.
//!
//! ```no_run
//! # async fn run(client: pistou_client::Client) -> Result<(), pistou_gateway::GatewayError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:5433").await?;
//! pistou_gateway::serve(listener, client, pistou_gateway::GatewayConfig::default(), async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await
//! # }
//! ```

mod auth;
mod command;
mod config;
mod conn;
mod copy;
mod errors;
pub mod frontend;
mod intercept;
mod metrics;
mod params;
pub mod pgtypes;
mod prepared;
mod read_only;
mod replay;
mod route;
mod server;
mod session;
mod settings;
mod split;
mod temp;

pub use config::{Auth, GatewayConfig, PasswordMethod};
pub use errors::GatewayError;
pub use metrics::GatewayMetrics;
pub use server::serve;
