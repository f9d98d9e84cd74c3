//! Admin routes: `POST /admin/election`, `/admin/pause`, `/admin/resume`.
//!
//! Off unless a token is configured (`[admin] token_file`): 403 then. With a token,
//! every request needs `Authorization: Bearer <token>`; the comparison hashes both
//! sides and compares the digests in constant time, so neither the token's content
//! nor its length leaks through timing. Authentication is checked before anything
//! else, so an unauthenticated client learns nothing about the node's groups.

use super::error::ApiError;
use super::params::{self, Need};
use super::App;
use crate::daemon::shared::{Control, Shared};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sha2::{Digest, Sha256};
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;

/// How long an election request waits for the runtime task to take it.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

fn authorize(shared: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = shared.admin_token.as_deref() else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "the admin API is off: configure [admin] token_file to enable it",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing bearer token: send Authorization: Bearer <token>",
            )
        })?;
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(token.as_bytes());
    if bool::from(a.as_slice().ct_eq(b.as_slice())) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "wrong bearer token",
        ))
    }
}

fn gone() -> ApiError {
    ApiError::unavailable("the node's runtime is not running")
}

/// Call an election in one group (`?algorithm=A`) or in every group.
pub(super) async fn election(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    let only = params::algorithm(&query, &app.shared, Need::Any)?;
    if app.shared.is_paused() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "the node is paused: POST /admin/resume first",
        ));
    }
    let groups = match only {
        Some(a) => vec![a],
        None => app.shared.algorithms.clone(),
    };
    for &kind in &groups {
        let (tx, rx) = oneshot::channel();
        if !app.shared.command(Control::Elect(kind, tx)).await {
            return Err(gone());
        }
        match tokio::time::timeout(REPLY_TIMEOUT, rx).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => {
                return Err(ApiError::not_found(format!(
                    "the runtime has no group {kind}"
                )))
            }
            Ok(Err(_)) | Err(_) => return Err(gone()),
        }
    }
    tracing::info!(groups = ?groups, "election called through the admin API");
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({ "node": app.shared.node, "elections": groups })),
    )
        .into_response())
}

async fn set_paused(app: &App, paused: bool) -> Result<Response, ApiError> {
    let cmd = if paused {
        Control::Pause
    } else {
        Control::Resume
    };
    if !app.shared.command(cmd).await {
        return Err(gone());
    }
    app.shared.set_paused(paused);
    tracing::info!(
        paused,
        "traffic {} through the admin API",
        if paused { "paused" } else { "resumed" }
    );
    Ok(Json(serde_json::json!({ "node": app.shared.node, "paused": paused })).into_response())
}

/// Stop all election traffic (the node simulates a crash).
pub(super) async fn pause(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    params::algorithm(&query, &app.shared, Need::Nothing)?;
    set_paused(&app, true).await
}

/// Resume traffic after a pause.
pub(super) async fn resume(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    params::algorithm(&query, &app.shared, Need::Nothing)?;
    set_paused(&app, false).await
}
