//! Waiting for Ctrl-C or SIGTERM.

use tokio::signal::unix::{signal, SignalKind};

/// Completes on SIGINT or SIGTERM. A signal that cannot be watched is ignored (the other
/// one still works); this never completes spuriously.
pub async fn stop_requested() -> &'static str {
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let int = async {
        match signal(SignalKind::interrupt()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => "SIGTERM",
        _ = int => "SIGINT",
    }
}
