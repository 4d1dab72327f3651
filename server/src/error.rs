//! Errors of the native routes: an HTTP status that says what happened, and a JSON body
//! that names the problem (and the limit, where there is one).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A refused or failed request.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, in words (never a token or a password).
    pub error: String,
    /// The limit broken, where there is one.
    pub limit: Option<String>,
}

/// The body of every refusal of the native routes.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    /// What went wrong, in words.
    error: &'a str,
    /// The limit broken, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<&'a str>,
    /// The HTTP status again.
    status: u16,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, error: impl Into<String>) -> Self {
        Self {
            status,
            error: error.into(),
            limit: None,
        }
    }

    pub(crate) fn bad_request(error: impl Into<String>, limit: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            error: error.into(),
            limit: Some(limit.into()),
        }
    }

    pub(crate) fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "a token is needed: send `Authorization: Bearer TOKEN` (Tinyid routes: the `token` parameter)",
        )
    }

    pub(crate) fn forbidden(tag: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            format!("this token may not draw IDs of {}", shown_tag(tag)),
        )
    }

    pub(crate) fn unknown_tag(tag: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!(
                "no segment tag {} in the store (create it with `uidgen segment create --tag TAG \
                 --step N --start FIRST`; no request creates a tag but CosId's \
                 createDistributor)",
                shown_tag(tag)
            ),
        )
    }

    pub(crate) fn unavailable(error: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, error)
    }

    /// The JSON body, for routes that wrap it in their own status.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(&ErrorBody {
            error: &self.error,
            limit: self.limit.as_deref(),
            status: self.status.as_u16(),
        })
        .unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            self.json(),
        )
            .into_response()
    }
}

/// A tag as an error may quote it: at most 64 characters, control characters escaped,
/// so a hostile 10 KB tag does not become a 10 KB error or a broken log line.
pub(crate) fn shown_tag(tag: &str) -> String {
    let mut shown: String = tag.chars().take(64).flat_map(char::escape_debug).collect();
    if tag.chars().count() > 64 {
        shown.push('…');
    }
    format!("\"{shown}\"")
}
