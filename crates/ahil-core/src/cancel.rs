//! MCP cancellation: a call runs with the client's cancellation token in scope, and a driver job
//! it starts is stopped through the same cancel flag its deadline uses when the client sends
//! `notifications/cancelled` for it.

use std::future::Future;

use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static CANCEL: CancellationToken;
}

/// Runs `future` (a gate call) so that cancelling `token` stops the driver work it is doing.
pub async fn with_cancel<F: Future>(token: CancellationToken, future: F) -> F::Output {
    CANCEL.scope(token, future).await
}

/// Resolves when the call running now is cancelled by its client; never, for a call without a
/// token (the CLI, a test plan's own steps).
pub async fn cancelled() {
    match CANCEL.try_with(Clone::clone) {
        Ok(token) => token.cancelled().await,
        Err(_) => std::future::pending().await,
    }
}

/// Whether the call running now was cancelled by its client: for work that looks between its own
/// steps rather than waiting on [`cancelled`].
pub fn is_cancelled() -> bool {
    CANCEL
        .try_with(CancellationToken::is_cancelled)
        .unwrap_or(false)
}

/// Runs `future` out of reach of the client's cancellation. The recovery that settles a cancelled
/// call is the gate's own work: the cancel that stopped the call must not stop the proof after it.
pub async fn shielded<F: Future>(future: F) -> F::Output {
    CANCEL.scope(CancellationToken::new(), future).await
}
