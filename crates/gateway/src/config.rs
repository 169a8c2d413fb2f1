//! Gateway configuration.

use std::time::Duration;

/// How clients authenticate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// Anyone who can reach the port gets in (bind to 127.0.0.1, or put it behind a proxy).
    Trust,
    /// One user and password.
    Password { user: String, password: String, method: PasswordMethod },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordMethod {
    /// SCRAM-SHA-256: the password never crosses the wire.
    ScramSha256,
    /// The password in clear text (only behind TLS termination or on loopback).
    Cleartext,
}

#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub auth: Auth,
    /// Connections served at once; more get "too many clients" (53300) and are closed.
    pub max_connections: usize,
    /// Longest statement text (simple Query or Parse), in bytes (54000 beyond).
    pub max_statement_bytes: usize,
    /// A connection that sends nothing for this long is closed (57P05).
    pub idle_timeout: Duration,
    /// Extra attempts of an autocommit statement that failed with 40001.
    pub autocommit_retries: u32,
    /// Largest protocol message (Bind with large parameters included); a bigger one closes
    /// the connection (08P01).
    pub max_message_bytes: usize,
    /// Prepared statements and portals kept per connection.
    pub max_prepared: usize,
    /// Bytes of statement text and bound parameters kept per connection (54000 beyond).
    pub max_session_bytes: usize,
    /// Longest wait between autocommit retries (the first waits up to 2 ms, doubling).
    pub max_retry_backoff: Duration,
    /// Time allowed to finish the startup and authentication exchange.
    pub startup_timeout: Duration,
    /// Connections still in their startup exchange (not yet authenticated), apart from
    /// `max_connections`, so unauthenticated sockets can never take the slots of
    /// authenticated ones; when all are taken a new connection takes the oldest one's.
    pub max_handshakes: usize,
    /// Of those, at most this many from one source address.
    pub max_handshakes_per_source: usize,
    /// Longest a check of the existing rows before a schema change may read pages (54000
    /// beyond, and the change is not made).
    pub existing_rows_check_limit: Duration,
    /// Prometheus metrics to record into (served apart, see `pistou_metrics::serve`).
    pub metrics: Option<std::sync::Arc<crate::metrics::GatewayMetrics>>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            auth: Auth::Trust,
            max_connections: 100,
            max_statement_bytes: 64 * 1024,
            idle_timeout: Duration::from_secs(600),
            autocommit_retries: 10,
            max_message_bytes: 16 * 1024 * 1024,
            max_prepared: 1000,
            max_session_bytes: 32 * 1024 * 1024,
            max_retry_backoff: Duration::from_millis(200),
            startup_timeout: Duration::from_secs(10),
            max_handshakes: 64,
            max_handshakes_per_source: 8,
            existing_rows_check_limit: Duration::from_secs(600),
            metrics: None,
        }
    }
}

impl GatewayConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_connections == 0 || self.max_handshakes == 0 || self.max_handshakes_per_source == 0 {
            return Err("max_connections, max_handshakes and max_handshakes_per_source must be at least 1".into());
        }
        if self.max_statement_bytes == 0 || self.max_message_bytes < self.max_statement_bytes {
            return Err("max_message_bytes must be at least max_statement_bytes (> 0)".into());
        }
        if self.idle_timeout.is_zero() || self.startup_timeout.is_zero() {
            return Err("timeouts must be positive".into());
        }
        if let Auth::Password { user, password, .. } = &self.auth {
            if user.is_empty() || password.is_empty() {
                return Err("password authentication needs a non-empty user and password".into());
            }
        }
        Ok(())
    }
}
