//! Errors of the HTTP API: a status code and a message, sent as JSON `{"error": …}`.

use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An HTTP error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `error` text of the JSON body.
    pub message: String,
}

impl ApiError {
    /// An answer with `status` and `message`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
    /// 400: a malformed request.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    /// 404: no such thing (e.g. an algorithm this node does not run).
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    /// 503: not available now (paused, not the leader…).
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"electd admin\""),
            );
        }
        res
    }
}

/// Every route the server answers (`super::router`), as a 404 lists them.
pub const ROUTES: [&str; 13] = [
    "/metrics",
    "/healthz",
    "/readyz",
    "/status",
    "/leader",
    "/is-leader",
    "/watch",
    "/admin/election",
    "/admin/pause",
    "/admin/resume",
    "/admin/drain",
    "/admin/undrain",
    "/admin/transfer",
];

/// Answer for a route that does not exist.
pub(super) async fn not_found(uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route {}; routes: {}",
        uri.path(),
        ROUTES.join(" ")
    ))
}

/// Answer for a route asked with a method it does not take: 405, JSON, `Allow`.
pub(super) async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let allow = if uri.path().starts_with("/admin/") {
        "POST"
    } else {
        "GET, HEAD"
    };
    let mut res = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}; use {allow}", uri.path()),
    )
    .into_response();
    res.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}
