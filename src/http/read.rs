//! Read-only routes: `/metrics`, `/healthz`, `/status`, `/leader`, `/is-leader`.

use super::error::ApiError;
use super::params::{self, Need};
use super::App;
use crate::algorithm::AlgorithmKind;
use crate::daemon::shared::{GroupView, Shared};
use crate::NodeId;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

const PAUSED: &str = "paused: the node simulates a crash (POST /admin/resume)";

pub async fn metrics(State(app): State<App>) -> Response {
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

pub async fn healthz(State(app): State<App>) -> Response {
    if app.shared.is_paused() {
        (StatusCode::SERVICE_UNAVAILABLE, "paused\n").into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

#[derive(Serialize)]
struct Status {
    node: NodeId,
    cluster: String,
    paused: bool,
    algorithms: Vec<AlgorithmKind>,
    groups: Vec<GroupView>,
}

pub async fn status(
    State(app): State<App>,
    query: RawQuery,
) -> Result<Json<impl Serialize>, ApiError> {
    let only = params::algorithm(&query, &app.shared, Need::Any)?;
    let s = &app.shared;
    Ok(Json(Status {
        node: s.node,
        cluster: s.cluster.clone(),
        paused: s.is_paused(),
        algorithms: s.algorithms.clone(),
        groups: s
            .status()
            .into_iter()
            .filter(|g| only.is_none_or(|a| a == g.algorithm))
            .collect(),
    }))
}

/// The leader of one group as `/leader` and `/is-leader` show it.
#[derive(Serialize)]
struct Leader {
    node: NodeId,
    algorithm: AlgorithmKind,
    leader: Option<NodeId>,
    is_leader: bool,
    term: u64,
    since: f64,
    state: &'static str,
    paused: bool,
}

fn view(shared: &Shared, kind: AlgorithmKind) -> Result<Leader, ApiError> {
    let g = shared.group(kind).ok_or_else(|| {
        ApiError::unavailable(format!("no status for {kind} yet: the node is starting"))
    })?;
    Ok(Leader {
        node: shared.node,
        algorithm: kind,
        leader: g.leader,
        is_leader: g.leader == Some(shared.node),
        term: g.term,
        since: g.since,
        state: g.state,
        paused: shared.is_paused(),
    })
}

fn one(app: &App, query: &RawQuery) -> Result<AlgorithmKind, ApiError> {
    params::algorithm(query, &app.shared, Need::One)?
        .ok_or_else(|| ApiError::bad_request("missing parameter ?algorithm="))
}

pub async fn leader(State(app): State<App>, query: RawQuery) -> Result<Response, ApiError> {
    let kind = one(&app, &query)?;
    Ok(Json(view(&app.shared, kind)?).into_response())
}

/// 200 when this node leads the group and is not paused, 503 otherwise, so that a
/// load balancer health check sends traffic to the leader only.
pub async fn is_leader(State(app): State<App>, query: RawQuery) -> Result<Response, ApiError> {
    let kind = one(&app, &query)?;
    let v = view(&app.shared, kind)?;
    let code = if v.is_leader && !v.paused {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((code, Json(v)).into_response())
}
