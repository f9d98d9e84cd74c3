//! Read-only routes: `/metrics`, `/healthz`, `/status`, `/leader`, `/is-leader`.

use super::error::ApiError;
use super::params::{self, Need};
use super::App;
use crate::contract::algorithm::AlgorithmKind;
use crate::daemon::shared::{GroupView, Shared};
use crate::NodeId;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

const PAUSED: &str = "paused: the node simulates a crash (POST /admin/resume)";

pub(super) async fn metrics(State(app): State<App>, query: RawQuery) -> Response {
    if let Err(e) = params::algorithm(&query, &app.shared, Need::Nothing) {
        return e.into_response();
    }
    if app.shared.is_paused() {
        return ApiError::unavailable(PAUSED).into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        app.shared.metrics.encode(),
    )
        .into_response()
}

/// 200 `ok` while every health check passes; 503 `paused` while paused; 503 with
/// JSON `{"error", "failing": {check: why}}` while a check fails (the node cannot send,
/// cannot persist its state, or has peers its socket cannot reach).
pub(super) async fn healthz(State(app): State<App>, query: RawQuery) -> Response {
    if let Err(e) = params::algorithm(&query, &app.shared, Need::Nothing) {
        return e.into_response();
    }
    if app.shared.is_paused() {
        return (StatusCode::SERVICE_UNAVAILABLE, "paused\n").into_response();
    }
    match unhealthy(&app.shared) {
        Some(r) => r,
        None => (StatusCode::OK, "ok\n").into_response(),
    }
}

/// The 503 answer of a failing health check, if any fails.
fn unhealthy(shared: &Shared) -> Option<Response> {
    let problems = shared.problems();
    if problems.is_empty() {
        return None;
    }
    let names: Vec<&str> = problems.iter().map(|p| p.0).collect();
    let failing: serde_json::Map<String, serde_json::Value> = problems
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone())))
        .collect();
    Some(
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({
                "error": format!("unhealthy: {}", names.join(", ")),
                "failing": failing,
            })),
        )
            .into_response(),
    )
}

/// Readiness: healthy (as `/healthz`), not paused, and every group knows its leader.
/// 200 `ready`; 503 otherwise with the reason.
pub(super) async fn readyz(State(app): State<App>, query: RawQuery) -> Response {
    if let Err(e) = params::algorithm(&query, &app.shared, Need::Nothing) {
        return e.into_response();
    }
    if app.shared.is_paused() {
        return ApiError::unavailable(PAUSED).into_response();
    }
    if let Some(r) = unhealthy(&app.shared) {
        return r;
    }
    let status = app.shared.status();
    let waiting: Vec<&str> = app
        .shared
        .algorithms
        .iter()
        .filter(|a| {
            !status
                .iter()
                .any(|g| g.algorithm == **a && g.leader.is_some())
        })
        .map(|a| a.as_str())
        .collect();
    if waiting.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        ApiError::unavailable(format!("no leader known yet for: {}", waiting.join(", ")))
            .into_response()
    }
}

#[derive(Serialize)]
struct Status {
    node: NodeId,
    cluster: String,
    paused: bool,
    /// Unix microseconds at this process's start (at `/admin/resume`, which comes
    /// back as a restarted process, the time of the resume); 0 before the runtime runs.
    incarnation: u64,
    algorithms: Vec<AlgorithmKind>,
    groups: Vec<GroupView>,
    /// This node's configuration digest and its peers' (absent when the node sends
    /// none: only runtimes embedded in tests).
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<crate::daemon::drift::ConfigView>,
}

pub(super) async fn status(
    State(app): State<App>,
    query: RawQuery,
) -> Result<Json<impl Serialize>, ApiError> {
    let only = params::algorithm(&query, &app.shared, Need::Any)?;
    let s = &app.shared;
    Ok(Json(Status {
        node: s.node,
        cluster: s.cluster.clone(),
        paused: s.is_paused(),
        incarnation: s.incarnation(),
        algorithms: s.algorithms.clone(),
        groups: s
            .status()
            .into_iter()
            .filter(|g| only.is_none_or(|a| a == g.algorithm))
            .collect(),
        config: s.config_view(),
    }))
}

/// The leader of one group as `/leader` and `/is-leader` show it.
#[derive(Serialize)]
struct Leader {
    node: NodeId,
    algorithm: AlgorithmKind,
    /// The leader this node believes in (itself included), `None` if none.
    leader: Option<NodeId>,
    /// This node may act as the leader now: it leads, is not paused and, where the
    /// group keeps a lease, holds it. Exactly when `/is-leader` answers 200.
    is_leader: bool,
    /// Why not, when the node is paused (it names no leader then: it stopped as a
    /// crashed node would) or believes it leads but `is_leader` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    term: u64,
    since: f64,
    state: &'static str,
    paused: bool,
    /// `none`: the group keeps no lease, the answer is a belief with no promise for
    /// how long; `quorum`: a lease is kept (see docs/leases.md).
    lease: &'static str,
    /// With `lease = quorum`: how long no other node can be elected (0 on a follower,
    /// on a paused node, and on a leader no majority answered recently); absent with
    /// `lease = none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_remaining_ms: Option<u64>,
}

fn view(shared: &Shared, kind: AlgorithmKind) -> Result<Leader, ApiError> {
    let g = shared.group(kind).ok_or_else(|| {
        ApiError::unavailable(format!("no status for {kind} yet: the node is starting"))
    })?;
    let (lease, lease_remaining_ms) = g.lease.remaining();
    let paused = shared.is_paused();
    let leads = g.leader == Some(shared.node);
    let why = if paused {
        // Whether or not it led: a pause publishes every group without a leader.
        Some("paused: the node simulates a crash (POST /admin/resume)".to_string())
    } else if !leads {
        None
    } else if lease_remaining_ms == Some(0) {
        Some(
            "leads, but holds no lease: no majority has answered its heartbeats recently \
             enough (a new leader holds none until it has; docs/leases.md)"
                .to_string(),
        )
    } else {
        None
    };
    Ok(Leader {
        node: shared.node,
        algorithm: kind,
        leader: g.leader,
        is_leader: leads && why.is_none(),
        why,
        term: g.term,
        since: g.since,
        state: g.state,
        paused,
        lease,
        lease_remaining_ms,
    })
}

fn one(app: &App, query: &RawQuery) -> Result<AlgorithmKind, ApiError> {
    params::algorithm(query, &app.shared, Need::One)?
        .ok_or_else(|| ApiError::bad_request("missing parameter ?algorithm="))
}

pub(super) async fn leader(State(app): State<App>, query: RawQuery) -> Result<Response, ApiError> {
    let kind = one(&app, &query)?;
    Ok(Json(view(&app.shared, kind)?).into_response())
}

/// 200 when this node leads the group, is not paused and, where the group keeps a
/// lease, holds it (time left); 503 otherwise, so that a load balancer health check
/// sends traffic to the leader only. The body's `is_leader` is true exactly with 200.
pub(super) async fn is_leader(
    State(app): State<App>,
    query: RawQuery,
) -> Result<Response, ApiError> {
    let kind = one(&app, &query)?;
    let v = view(&app.shared, kind)?;
    let code = if v.is_leader {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((code, Json(v)).into_response())
}
