//! Admin routes: `POST /admin/election`, `/admin/pause`, `/admin/resume`,
//! `/admin/drain`, `/admin/undrain`, `/admin/transfer`.
//!
//! Off unless a token is configured (`[admin] token_file`): 403 then. With a token,
//! every request needs `Authorization: Bearer <token>`; the comparison hashes both
//! sides and compares the digests in constant time, so neither the token's content
//! nor its length leaks through timing. Authentication is checked before anything
//! else, so an unauthenticated client learns nothing about the node's groups.

use super::error::ApiError;
use super::params::{self, Need};
use super::App;
use crate::contract::algorithm::AlgorithmKind;
use crate::contract::policy::Ineligible;
use crate::daemon::shared::{Control, Shared};
use crate::NodeId;
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

/// One group's answer to a drain: who leads now, and whether the hand-over is done.
#[derive(serde::Serialize)]
struct Drained {
    algorithm: AlgorithmKind,
    leader: Option<NodeId>,
    term: u64,
    /// Another node leads (drain), or this node may lead again (undrain).
    done: bool,
    /// Why not, when not done.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

/// Make this node ineligible (`POST /admin/drain`) or eligible again
/// (`POST /admin/undrain`) in one group (`?algorithm=A`) or every group. A drain waits,
/// at most the hand-over bound the runtime names, until another node leads each
/// group, and answers per group who leads: 200 when every group was handed over,
/// 504 with the reason per group otherwise (the node stays drained either way).
async fn drain_or_undrain(app: &App, query: &RawQuery, on: bool) -> Result<Response, ApiError> {
    let only = params::algorithm(query, &app.shared, Need::Any)?;
    if app.shared.is_paused() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "the node is paused: POST /admin/resume first",
        ));
    }
    let groups: Vec<AlgorithmKind> = match only {
        Some(a) => vec![a],
        None => app.shared.algorithms.clone(),
    };
    // Subscribe before asking, so that no hand-over can slip between the two.
    let mut events = app.shared.subscribe();
    let (tx, rx) = oneshot::channel();
    let cmd = Control::Drain {
        algorithm: only,
        on,
        reply: tx,
    };
    if !app.shared.command(cmd).await {
        return Err(gone());
    }
    let bound = match tokio::time::timeout(REPLY_TIMEOUT, rx).await {
        Ok(Ok(Ok(bound))) => bound,
        Ok(Ok(Err(why))) => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "{} in this process, but not on disk ({why}): it would not survive a \
                     restart",
                    if on { "drained" } else { "undrained" }
                ),
            ))
        }
        Ok(Err(_)) | Err(_) => return Err(gone()),
    };
    let me = app.shared.node;
    let handed_over = |g: &crate::daemon::shared::GroupView| g.leader.is_some_and(|l| l != me);
    let deadline = tokio::time::Instant::now() + bound;
    if on {
        // Wait for a leader other than this node in every group asked for (each event
        // re-reads the status; the loop ends at the deadline or when the stream ends).
        loop {
            let status = app.shared.status();
            let pending = groups
                .iter()
                .any(|&k| !status.iter().any(|g| g.algorithm == k && handed_over(g)));
            if !pending {
                break;
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(_)) | Err(_) => break,
            }
        }
    }
    let status = app.shared.status();
    let answers: Vec<Drained> = groups
        .iter()
        .map(|&k| {
            let g = status.iter().find(|g| g.algorithm == k);
            let leader = g.and_then(|g| g.leader);
            let term = g.map_or(0, |g| g.term);
            let done = if on {
                g.is_some_and(handed_over)
            } else {
                g.is_some_and(|g| !g.ineligible.contains(&Ineligible::Drained))
            };
            let why = (!done).then(|| match (on, leader) {
                (true, Some(l)) if l == me => format!(
                    "still leading after {} ms: no other eligible member took over",
                    bound.as_millis()
                ),
                (true, _) => format!(
                    "no leader after {} ms: no other eligible member answered",
                    bound.as_millis()
                ),
                (false, _) => "still ineligible".to_string(),
            });
            Drained {
                algorithm: k,
                leader,
                term,
                done,
                why,
            }
        })
        .collect();
    let all = answers.iter().all(|a| a.done);
    tracing::info!(groups = ?groups, done = all, "{}", if on { "drain" } else { "undrain" });
    let code = if all {
        StatusCode::OK
    } else {
        StatusCode::GATEWAY_TIMEOUT
    };
    let body = serde_json::json!({ "node": me, "drained": on, "done": all, "groups": answers });
    Ok((code, Json(body)).into_response())
}

/// `POST /admin/drain[?algorithm=A]`: see [`drain_or_undrain`].
pub(super) async fn drain(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    drain_or_undrain(&app, &query, true).await
}

/// `POST /admin/undrain[?algorithm=A]`: see [`drain_or_undrain`].
pub(super) async fn undrain(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    drain_or_undrain(&app, &query, false).await
}

/// `POST /admin/transfer?algorithm=A&to=N`: hand this node's leadership of group A to
/// node N ([`crate::node::Node::transfer`]). The answer waits, at most the bound the
/// node names, until N leads: 200 `{"done": true, "leader": N, "term": …}`; 409 with
/// the reason when the node refuses (it does not lead, N is not a member or may not
/// lead, a node outranking N would take over again, …) or when N refuses the
/// hand-over because it may not lead now (drained, failing a check; this node then
/// leads on); 504 when N did not take over in time (with who leads now).
///
/// Without `algorithm` on a node that runs several groups: every group this node
/// leads, handed over together; the answer lists them under `groups` as a drain's
/// does (200 when every one was handed over, 409 when none timed out but some were
/// refused, 504 otherwise); 409 when this node leads no group.
pub(super) async fn transfer(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<Response, ApiError> {
    authorize(&app.shared, &headers)?;
    let (only, to) = params::transfer_target(&query, &app.shared)?;
    let me = app.shared.node;
    let groups: Vec<AlgorithmKind> = match only {
        Some(a) => vec![a],
        None => app
            .shared
            .status()
            .iter()
            .filter(|g| g.leader == Some(me))
            .map(|g| g.algorithm)
            .collect(),
    };
    if groups.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("transfer to node {to} refused: this node leads no group"),
        ));
    }
    let mut events = app.shared.subscribe();
    // Start every transfer first, so that they run together.
    let (refusals_tx, mut refusals) = tokio::sync::mpsc::unbounded_channel();
    let mut outcome: Vec<(AlgorithmKind, Option<String>)> = Vec::new();
    let mut bound = Duration::ZERO;
    for &algorithm in &groups {
        let (tx, rx) = oneshot::channel();
        let cmd = Control::Transfer {
            algorithm,
            to,
            reply: tx,
        };
        if !app.shared.command(cmd).await {
            return Err(gone());
        }
        match tokio::time::timeout(REPLY_TIMEOUT, rx).await {
            Ok(Ok(Ok(started))) => {
                bound = bound.max(started.bound);
                let tx = refusals_tx.clone();
                let refused = started.refused;
                tokio::spawn(async move {
                    if let Ok(why) = refused.await {
                        let _ = tx.send((algorithm, why));
                    }
                });
                outcome.push((algorithm, None));
            }
            Ok(Ok(Err(why))) => {
                let why = format!("transfer of {algorithm} to node {to} refused: {why}");
                if only.is_some() {
                    return Err(ApiError::new(StatusCode::CONFLICT, why));
                }
                outcome.push((algorithm, Some(why)));
            }
            Ok(Err(_)) | Err(_) => return Err(gone()),
        }
    }
    drop(refusals_tx);
    let deadline = tokio::time::Instant::now() + bound;
    let settled = |app: &App, outcome: &[(AlgorithmKind, Option<String>)]| {
        outcome.iter().all(|(k, refused)| {
            refused.is_some() || app.shared.group(*k).is_some_and(|g| g.leader == Some(to))
        })
    };
    while !settled(&app, &outcome) {
        tokio::select! {
            ev = events.recv() => match ev {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
            Some((k, why)) = refusals.recv() => {
                let why = format!("transfer of {k} to node {to} refused: {why}");
                if let Some(o) = outcome.iter_mut().find(|o| o.0 == k) {
                    o.1 = Some(why);
                }
            }
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    let answers: Vec<Drained> = outcome
        .iter()
        .map(|(k, refused)| {
            let g = app.shared.group(*k);
            let (leader, term) = (g.as_ref().and_then(|g| g.leader), g.map_or(0, |g| g.term));
            let done = refused.is_none() && leader == Some(to);
            let why = match refused {
                Some(r) => Some(r.clone()),
                None if !done => Some(format!(
                    "node {to} did not take over within {} ms; the leader now is {}",
                    bound.as_millis(),
                    leader.map_or("none".to_string(), |l| l.to_string())
                )),
                None => None,
            };
            Drained {
                algorithm: *k,
                leader,
                term,
                done,
                why,
            }
        })
        .collect();
    let all = answers.iter().all(|a| a.done);
    let timed_out = outcome
        .iter()
        .zip(&answers)
        .any(|((_, refused), a)| refused.is_none() && !a.done);
    tracing::info!(groups = ?groups, to, done = all, "transfer through the admin API");
    let code = if all {
        StatusCode::OK
    } else if timed_out {
        StatusCode::GATEWAY_TIMEOUT
    } else {
        StatusCode::CONFLICT
    };
    if let (Some(_), [a]) = (only, answers.as_slice()) {
        // One group asked for: the answer of one transfer (a refusal as an error).
        if let (false, false, Some(why)) = (a.done, timed_out, &a.why) {
            return Err(ApiError::new(StatusCode::CONFLICT, why.clone()));
        }
        let mut body = serde_json::json!({
            "node": me,
            "algorithm": a.algorithm,
            "to": to,
            "done": a.done,
            "leader": a.leader,
            "term": a.term,
        });
        if let Some(why) = &a.why {
            body["why"] = serde_json::json!(why);
        }
        return Ok((code, Json(body)).into_response());
    }
    let body = serde_json::json!({ "node": me, "to": to, "done": all, "groups": answers });
    Ok((code, Json(body)).into_response())
}
