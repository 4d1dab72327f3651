//! The HTTP routes: Leaf's, Tinyid's, the native API and operations, on one `Router`.

mod leaf;
mod native;
mod ops;
mod tinyid;

use crate::error::ApiError;
use crate::ids::Ids;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{any, get, post};
use axum::Router;
use std::sync::Arc;
use tower::util::MapResponseLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

/// Every route of the service over `ids`, with the request timeout and body limit of
/// its config. Mount it in your own axum app, or serve it with [`crate::serve`].
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use uidgen_server::{router, Config, Ids};
///
/// let ids = Arc::new(tokio::task::spawn_blocking(|| Ids::start(Config::default())).await??);
/// let app = axum::Router::new().nest("/ids", router(ids));
/// # let _ = app; Ok(()) }
/// ```
pub fn router(ids: Arc<Ids>) -> Router {
    let limits = ids.config.limits.clone();
    Router::new()
        .route("/v1/snowflake", get(native::snowflake))
        .route("/v1/segment/{tag}", get(native::segment))
        .route("/v1/segment/{tag}/range", post(native::range))
        .route("/v1/decode/{id}", get(native::decode))
        .route("/v1/opaque/{public}", get(native::reveal))
        .route("/api/segment/get/{key}", get(leaf::segment))
        .route("/api/snowflake/get/{key}", get(leaf::snowflake))
        .route("/decodeSnowflakeId", get(leaf::decode))
        .route("/tinyid/id/nextId", any(tinyid::next_id))
        .route("/tinyid/id/nextIdSimple", any(tinyid::next_id_simple))
        .route("/tinyid/id/nextSegmentId", any(tinyid::next_segment_id))
        .route(
            "/tinyid/id/nextSegmentIdSimple",
            any(tinyid::next_segment_id_simple),
        )
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .fallback(not_found)
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout(),
        ))
        // Outermost, so the timeout's 408 and the body limit's 413 are counted too.
        .layer(MapResponseLayer::new({
            let ids = Arc::clone(&ids);
            move |response: Response| count_refused(&ids, response)
        }))
        .with_state(ids)
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route: see /v1/snowflake, /v1/segment/{tag}, /v1/decode/{id}, \
         /v1/opaque/{public}, \
         /api/segment/get/{key}, /tinyid/id/nextId, /healthz, /readyz, /metrics",
    )
}

/// Counts answers that refused or failed, by status.
fn count_refused(ids: &Ids, response: Response) -> Response {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        ids.metrics
            .refused
            .get_or_create(&crate::metrics::StatusLabel {
                status: status.as_u16(),
            })
            .inc();
    }
    response
}

/// A request's query (and form body) parameters; the first of a repeated name wins.
#[derive(Debug, Default)]
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    pub(crate) fn from_parts(query: Option<&str>, body: &[u8]) -> Self {
        let mut all: Vec<(String, String)> = Vec::new();
        for source in [query.unwrap_or("").as_bytes(), body] {
            all.extend(
                form_urlencoded::parse(source).map(|(k, v)| (k.into_owned(), v.into_owned())),
            );
        }
        Self(all)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `count` (or another name) as a number from 1 to the configured maximum; 1 when
/// absent.
pub(crate) fn parse_count(ids: &Ids, name: &str, raw: Option<&str>) -> Result<usize, ApiError> {
    let max = ids.config.max_count;
    let limit = || format!("a whole number from 1 to {max}");
    let Some(raw) = raw else {
        return Ok(1);
    };
    let shown: String = raw.chars().take(32).flat_map(char::escape_debug).collect();
    let value: u64 = raw.trim().parse().map_err(|_| {
        ApiError::bad_request(format!("{name} = \"{shown}\" is not a number"), limit())
    })?;
    if value == 0 || value > max {
        return Err(ApiError::bad_request(
            format!("{name} = {value} is out of range"),
            limit(),
        ));
    }
    Ok(value as usize)
}

/// The bearer token of a request, if it sent one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Refuses a request whose token may not draw `tag`.
pub(crate) fn authorize(ids: &Ids, token: Option<&str>, tag: &str) -> Result<(), ApiError> {
    match ids.config.tokens.access(token, tag) {
        crate::tokens::Access::Open | crate::tokens::Access::Granted => Ok(()),
        crate::tokens::Access::Unknown => Err(ApiError::unauthorized()),
        crate::tokens::Access::Forbidden => Err(ApiError::forbidden(tag)),
    }
}

/// A text answer.
pub(crate) fn text(status: StatusCode, body: String) -> Response {
    use axum::response::IntoResponse;
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A 200 with `body` as JSON.
pub(crate) fn json_ok<T: serde::Serialize>(body: &T) -> Response {
    json(
        StatusCode::OK,
        serde_json::to_string(body).unwrap_or_default(),
    )
}

/// A JSON answer.
pub(crate) fn json(status: StatusCode, body: String) -> Response {
    use axum::response::IntoResponse;
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
