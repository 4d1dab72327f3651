//! Health, readiness and metrics.

use super::text;
use crate::ids::Ids;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// `GET /healthz`: the process answers.
pub(super) async fn healthz() -> Response {
    text(StatusCode::OK, "ok\n".into())
}

/// `GET /readyz`: 200 while the worker ID's lease holds, the ring has IDs and the store
/// answered within the last 3 s; 503 naming what is wrong otherwise.
pub(super) async fn readyz(State(ids): State<Arc<Ids>>) -> Response {
    match ids.not_ready() {
        None => text(StatusCode::OK, "ready\n".into()),
        Some(why) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

/// `GET /metrics`: Prometheus (OpenMetrics text).
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
