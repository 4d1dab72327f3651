//! Meituan Leaf's routes, answering as Leaf's server does where its clients parse: a
//! plain decimal with 200. Unlike Leaf, a failure is never a `0` with 200: it is a 500
//! (Leaf's status for failures) with a JSON body naming the problem, or 401/403 for
//! tokens.

use super::{authorize, json_ok, read_id, Asks, Params};
use crate::error::ApiError;
use crate::ids::Ids;
use crate::metrics::Route;
use crate::tokens::SNOWFLAKE_GRANT;
use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// Leaf answers every failure of an ID route with 500; tokens keep their own statuses.
fn as_leaf(e: ApiError) -> ApiError {
    match e.status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => e,
        _ => ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            ..e
        },
    }
}

/// `GET /api/segment/get/{key}`: the next ID of segment tag `key`.
pub(super) async fn segment(
    State(ids): State<Arc<Ids>>,
    method: Method,
    Path(key): Path<String>,
    asks: Asks,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), &key).map_err(as_leaf)?;
    if method == Method::HEAD {
        ids.servable(&key).await.map_err(as_leaf)?;
        return Ok(super::head(super::TEXT));
    }
    let id = ids.segment_id(&key).await.map_err(as_leaf)?;
    ids.metrics.served(Route::Leaf, &key, 1);
    Ok(super::handed_out(&ids, decimal(id), 1))
}

/// `GET /api/snowflake/get/{key}`: the next snowflake ID (`key` is not used, as in Leaf).
pub(super) async fn snowflake(
    State(ids): State<Arc<Ids>>,
    method: Method,
    // No `Path` extractor: the key is not read, and decoding it is a tenth of the route's work.
    asks: Asks,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), SNOWFLAKE_GRANT).map_err(as_leaf)?;
    if method == Method::HEAD {
        return Ok(super::head(super::TEXT));
    }
    let id = ids.snowflake_id().await.map_err(as_leaf)?;
    ids.metrics.served(Route::Leaf, SNOWFLAKE_GRANT, 1);
    Ok(super::handed_out(&ids, decimal(id), 1))
}

/// An ID as Leaf answers it: a decimal, as text.
fn decimal(id: u64) -> Response {
    let digits = itoa::Buffer::new().format(id).as_bytes().to_vec();
    super::bytes(StatusCode::OK, super::TEXT, digits)
}

/// Leaf's decoded ID, fields in its order.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Decoded {
    worker_id: String,
    sequence_id: String,
    timestamp: String,
}

/// `GET /decodeSnowflakeId?snowflakeId=N`: Leaf's JSON of string values, in the order
/// Leaf's server writes them: `workerId`, `sequenceId`, `timestamp` as
/// `"<ms>(<yyyy-MM-dd HH:mm:ss.SSS>)"`. The time is UTC (Leaf's is its JVM's zone), and
/// the layout is this service's (Leaf's own is the `snowflake` preset). An ID that
/// cannot be read is a 400 naming it, where Leaf answers 200 with `errorMsg`.
pub(super) async fn decode(
    State(ids): State<Arc<Ids>>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::from_parts(query.as_deref(), b"")?;
    let Some(raw) = params.get("snowflakeId") else {
        return Err(ApiError::bad_request(
            "the snowflakeId parameter is missing",
            "?snowflakeId=<a decimal ID>",
        ));
    };
    let parts = read_id(&ids, "snowflakeId", raw, &params)?;
    let time = chrono::DateTime::from_timestamp_millis(parts.timestamp_millis as i64)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_default();
    let body = Decoded {
        worker_id: parts.worker_id.to_string(),
        sequence_id: parts.sequence.to_string(),
        timestamp: format!("{}({time})", parts.timestamp_millis),
    };
    Ok(json_ok(&body))
}
