//! The HTTP API (axum) of one node: `/metrics`, `/healthz`, and the rest of
//! DESIGN.md's contract.

use crate::daemon::shared::Shared;
use axum::extract::State;
use axum::routing::get;
use axum::Router;
use std::future::Future;
use std::sync::Arc;

/// The router of every HTTP route, over the node's shared state.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .with_state(shared)
}

async fn metrics(
    State(shared): State<Arc<Shared>>,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        shared.metrics.encode(),
    )
}

/// `GET /status`: `{"node": N, "paused": bool, "groups": [GroupView, …]}` (minimal;
/// the observability work extends it).
async fn status(State(shared): State<Arc<Shared>>) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "node": shared.node,
        "cluster": shared.cluster,
        "paused": shared.is_paused(),
        "groups": shared.status(),
    }))
}

/// Serve the API on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(shared))
        .with_graceful_shutdown(shutdown)
        .await
}
