//! The HTTP API (axum) of one node: the external contract of docs/architecture.md.
//!
//! | route | answer |
//! |---|---|
//! | `GET /metrics` | Prometheus text format; 503 while paused |
//! | `GET /healthz` | 200 `ok`; 503 `paused` while paused; 503 JSON `{"error", "failing": {check: why}}` while a health check fails (send, persist, roster) |
//! | `GET /readyz` | 200 `ready` when healthy and every group knows its leader; 503 otherwise |
//! | `GET /status` | JSON `{"node", "cluster", "paused", "groups": [GroupView…]}` |
//! | `GET /leader?algorithm=A` | JSON leader of group A (`leader` null if none) |
//! | `GET /is-leader?algorithm=A` | 200 if this node leads A, 503 if not (load balancers) |
//! | `GET /watch[?algorithm=A]` | server-sent events: the current state, then one `leader` event per change |
//! | `POST /admin/election[?algorithm=A]` | call an election (every group without `algorithm`) |
//! | `POST /admin/pause`, `POST /admin/resume` | stop / resume all election traffic |
//! | `POST /admin/transfer?algorithm=A&to=N` | hand this node's leadership of A to node N; waits until N leads (200), or says why not (409 refused, 504 not in time) |
//! | `POST /admin/drain[?algorithm=A]`, `POST /admin/undrain[?algorithm=A]` | make this node ineligible (it steps down and waits for the hand-over) / eligible again |
//!
//! `algorithm` may be left out where the node runs a single group. A malformed query,
//! an unknown or repeated parameter get 400; an algorithm this node does not run gets
//! 404; errors are JSON `{"error": "…"}`. Admin routes need `Authorization: Bearer
//! <token>` matching [`Shared::admin_token`] (compared in constant time): 401 without
//! or with a wrong token, 403 when no token is configured (the admin API is then off).
//!
//! "Paused" simulates a crash to the outside world: the runtime stops all UDP traffic,
//! and `/metrics`, `/healthz` and `/is-leader` answer 503 so that Prometheus and load
//! balancers see the node down; `/status`, `/watch` and the admin routes keep working
//! so that an operator can look and resume.
//!
//! Handlers only read snapshots from [`Shared`], subscribe to its events and send
//! commands on its control channel: they never hold anything the election waits for.

mod admin;
pub mod client;
mod error;
mod params;
mod read;
mod watch;

pub use error::ROUTES;
pub use watch::KEEP_ALIVE as WATCH_KEEP_ALIVE;

use crate::daemon::shared::Shared;
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch as signal;

/// State of every handler: the node's shared state and the server's closing signal
/// (long-lived `/watch` streams end when it turns true, so shutdown never hangs).
#[derive(Clone)]
struct App {
    shared: Arc<Shared>,
    closing: signal::Receiver<bool>,
}

fn build(app: App) -> Router {
    // A known route asked with the wrong method: 405 with a JSON error (and `Allow`).
    let wrong = error::method_not_allowed;
    Router::new()
        .route("/metrics", get(read::metrics).fallback(wrong))
        .route("/healthz", get(read::healthz).fallback(wrong))
        .route("/readyz", get(read::readyz).fallback(wrong))
        .route("/status", get(read::status).fallback(wrong))
        .route("/leader", get(read::leader).fallback(wrong))
        .route("/is-leader", get(read::is_leader).fallback(wrong))
        .route("/watch", get(watch::watch).fallback(wrong))
        .route("/admin/election", post(admin::election).fallback(wrong))
        .route("/admin/pause", post(admin::pause).fallback(wrong))
        .route("/admin/resume", post(admin::resume).fallback(wrong))
        .route("/admin/drain", post(admin::drain).fallback(wrong))
        .route("/admin/undrain", post(admin::undrain).fallback(wrong))
        .route("/admin/transfer", post(admin::transfer).fallback(wrong))
        .fallback(error::not_found)
        .with_state(app)
}

/// Serve the API on `listener` until `shutdown` completes; open `/watch` streams are
/// ended then, and in-flight requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (tx, closing) = signal::channel(false);
    let app = build(App { shared, closing });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = tx.send(true);
        })
        .await
}
