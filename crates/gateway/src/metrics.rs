//! The gateway's Prometheus metrics (see docs/operations.md, "Metrics"), recorded where
//! things happen. Labels carry only fixed sets of values: SQLSTATE codes (compile-time
//! constants of this crate), outcomes and paths; never SQL text, names or user input.

use pistou_metrics::prometheus_client::metrics::counter::Counter;
use pistou_metrics::prometheus_client::metrics::family::Family;
use pistou_metrics::prometheus_client::metrics::gauge::Gauge;
use pistou_metrics::prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use pistou_metrics::prometheus_client::registry::{Registry, Unit};
use std::sync::Arc;
use std::time::Duration;

type Labels = [(&'static str, &'static str); 1];
type Labels2 = [(&'static str, &'static str); 2];

/// Every metric a gateway publishes; give it to `GatewayConfig::metrics` and serve
/// [`GatewayMetrics::registry`] with `pistou_metrics::serve`.
pub struct GatewayMetrics {
    registry: Arc<Registry>,
    connections_accepted: Counter,
    connections_refused: Family<Labels, Counter>,
    connections_open: Gauge,
    statements: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    statement_duration: Histogram,
    transactions: Family<Labels2, Counter>,
}

impl std::fmt::Debug for GatewayMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GatewayMetrics")
    }
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl GatewayMetrics {
    pub fn new() -> GatewayMetrics {
        let mut r = Registry::default();
        let connections_accepted = Counter::default();
        let connections_refused = Family::<Labels, Counter>::default();
        let connections_open = Gauge::default();
        let statements = Family::<Labels, Counter>::default();
        let errors = Family::<Labels, Counter>::default();
        let statement_duration = Histogram::new(exponential_buckets(0.000_1, 2.0, 18));
        let transactions = Family::<Labels2, Counter>::default();
        r.register(
            "pistou_gateway_connections_accepted",
            "Client connections that completed startup and authentication",
            connections_accepted.clone(),
        );
        r.register(
            "pistou_gateway_connections_refused",
            "Client connections closed before serving them, by reason",
            connections_refused.clone(),
        );
        r.register("pistou_gateway_connections_open", "Client connections being served", connections_open.clone());
        r.register(
            "pistou_gateway_statements",
            "Statements run (simple-query statements and Executes), by the SQLSTATE of their outcome (00000: success)",
            statements.clone(),
        );
        r.register(
            "pistou_gateway_errors",
            "ERROR-severity ErrorResponses sent to clients (statements, Parse, Bind, Describe...), by SQLSTATE",
            errors.clone(),
        );
        r.register_with_unit(
            "pistou_gateway_statement_duration",
            "Time to run one statement, from its arrival to its result (before sending rows)",
            Unit::Seconds,
            statement_duration.clone(),
        );
        r.register(
            "pistou_gateway_transactions",
            "Cluster transactions the gateway finished, by outcome (committed, aborted) and path (fast, slow; aborted: unknown)",
            transactions.clone(),
        );
        GatewayMetrics {
            registry: Arc::new(r),
            connections_accepted,
            connections_refused,
            connections_open,
            statements,
            errors,
            statement_duration,
            transactions,
        }
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    pub(crate) fn connection_accepted(&self) {
        self.connections_accepted.inc();
        self.connections_open.inc();
    }

    pub(crate) fn connection_closed(&self) {
        self.connections_open.dec();
    }

    /// `reason`: one of a fixed set ("startup-budget", "auth-failed", "startup-timeout").
    pub(crate) fn connection_refused(&self, reason: &'static str) {
        self.connections_refused.get_or_create(&[("reason", reason)]).inc();
    }

    pub(crate) fn statement(&self, sqlstate: &'static str, took: Duration) {
        self.statements.get_or_create(&[("sqlstate", sqlstate)]).inc();
        self.statement_duration.observe(took.as_secs_f64());
    }

    pub(crate) fn error(&self, sqlstate: &'static str) {
        self.errors.get_or_create(&[("sqlstate", sqlstate)]).inc();
    }

    /// A transaction committed (`Some(fast)`) or aborted (`None`).
    pub(crate) fn transaction(&self, committed: Option<bool>) {
        let labels = match committed {
            Some(true) => [("outcome", "committed"), ("path", "fast")],
            Some(false) => [("outcome", "committed"), ("path", "slow")],
            None => [("outcome", "aborted"), ("path", "unknown")],
        };
        self.transactions.get_or_create(&labels).inc();
    }
}
