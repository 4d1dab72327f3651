//! Health, readiness and metrics.

use super::text;
use crate::ids::Ids;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// `GET /healthz`: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    summary = "Liveness: the process answers",
    responses((status = 200, description = "ok", content_type = "text/plain", body = String))
)]
pub(super) async fn healthz() -> Response {
    text(StatusCode::OK, "ok\n".into())
}

/// `GET /readyz`: 200 while at least one configured ID source can serve (the snowflake
/// ring on a live lease, a tag with fetched IDs), 503 when none can; either way a line
/// per source says what it can serve, then the store and the last data loss found.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    summary = "Readiness: some ID source can serve",
    responses(
        (status = 200, description = "ready, then a line per source",
         content_type = "text/plain", body = String),
        (status = 503, description = "not ready, then a line per source saying why",
         content_type = "text/plain", body = String),
    )
)]
pub(super) async fn readyz(State(ids): State<Arc<Ids>>) -> Response {
    match ids.readiness() {
        (true, report) => text(StatusCode::OK, format!("ready\n{report}")),
        (false, report) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready:\n{report}"),
        ),
    }
}

/// `GET /metrics`: Prometheus (OpenMetrics text).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    summary = "Prometheus metrics",
    responses((status = 200, description = "OpenMetrics text",
               content_type = "application/openmetrics-text", body = String))
)]
pub(super) async fn metrics(State(ids): State<Arc<Ids>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ids.metrics_text(),
    )
        .into_response()
}
