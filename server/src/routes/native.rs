//! uidgen's own API: batches, IDs as strings and numbers, ranges, decoding.

use super::{authorize, bearer, json_ok, parse_count, text, Params};
use crate::config::SNOWFLAKE_GRANT;
use crate::error::{shown_tag, ApiError};
use crate::ids::Ids;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use std::sync::Arc;
use uidgen::IdFormat;

/// IDs as strings in one form, for clients (JavaScript) that lose digits above 2^53.
struct AsStrings<'a>(&'a [u64], IdFormat);

impl Serialize for AsStrings<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        let mut buffer = [0u8; uidgen::MAX_ENCODED_LEN];
        for id in self.0 {
            seq.serialize_element(self.1.encode_into(*id, &mut buffer))?;
        }
        seq.end()
    }
}

/// The `format` parameter: how `ids_str` and text lines write IDs (default decimal).
fn format_of(params: &Params) -> Result<IdFormat, ApiError> {
    match params.get("format") {
        None => Ok(IdFormat::Decimal),
        Some(name) => name.parse().map_err(|e: uidgen::ParseFormatError| {
            ApiError::bad_request(
                format!("format = {} cannot be used", shown_tag(name)),
                e.to_string(),
            )
        }),
    }
}

#[derive(Serialize)]
struct IdsBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
    count: usize,
    ids: &'a [u64],
    ids_str: AsStrings<'a>,
}

/// The IDs as `Accept` asks: `text/plain` one a line, otherwise JSON; strings in
/// `format`.
fn answer(headers: &HeaderMap, tag: Option<&str>, ids: &[u64], format: IdFormat) -> Response {
    let wants_text = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(
            |accept| match (accept.find("text/plain"), accept.find("application/json")) {
                (Some(text), Some(json)) => text < json,
                (Some(_), None) => true,
                _ => false,
            },
        );
    if wants_text {
        let mut body = String::with_capacity(ids.len() * 20);
        let mut buffer = [0u8; uidgen::MAX_ENCODED_LEN];
        for id in ids {
            body.push_str(format.encode_into(*id, &mut buffer));
            body.push('\n');
        }
        return text(StatusCode::OK, body);
    }
    let body = IdsBody {
        tag,
        count: ids.len(),
        ids,
        ids_str: AsStrings(ids, format),
    };
    json_ok(&body)
}

/// `GET /v1/snowflake?count=N`
pub(super) async fn snowflake(
    State(ids): State<Arc<Ids>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, bearer(&headers), SNOWFLAKE_GRANT)?;
    let params = Params::from_parts(query.as_deref(), b"");
    let count = parse_count(&ids, "count", params.get("count"))?;
    let format = format_of(&params)?;
    let out = ids.snowflake_ids(count).await?;
    ids.metrics.served("v1", SNOWFLAKE_GRANT, out.len());
    Ok(answer(&headers, None, &out, format))
}

/// `GET /v1/segment/{tag}?count=N`
pub(super) async fn segment(
    State(ids): State<Arc<Ids>>,
    Path(tag): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, bearer(&headers), &tag)?;
    let params = Params::from_parts(query.as_deref(), b"");
    let count = parse_count(&ids, "count", params.get("count"))?;
    let format = format_of(&params)?;
    let out = ids.segment_ids(&tag, count).await?;
    ids.metrics.served("v1", &tag, out.len());
    Ok(answer(&headers, Some(&tag), &out, format))
}

#[derive(Serialize)]
struct RangeBody<'a> {
    tag: &'a str,
    count: u64,
    first: u64,
    last: u64,
    first_str: String,
    last_str: String,
}

/// `POST /v1/segment/{tag}/range?count=N`: `[first, last]`, taken from the store now
/// and never handed to anyone else.
pub(super) async fn range(
    State(ids): State<Arc<Ids>>,
    Path(tag): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, bearer(&headers), &tag)?;
    let params = Params::from_parts(query.as_deref(), b"");
    let count = parse_count(&ids, "count", params.get("count"))? as u64;
    let first = ids.range(&tag, count).await?;
    let last = first + count - 1;
    ids.metrics.served("v1_range", &tag, count as usize);
    let body = RangeBody {
        tag: &tag,
        count,
        first,
        last,
        first_str: first.to_string(),
        last_str: last.to_string(),
    };
    Ok(json_ok(&body))
}

#[derive(Serialize)]
struct DecodeBody {
    id: u64,
    id_str: String,
    timestamp_millis: u64,
    time_utc: String,
    worker_id: u64,
    sequence: u64,
}

/// `GET /v1/decode/{id}`: the parts of an ID made with this service's layout.
pub(super) async fn decode(
    State(ids): State<Arc<Ids>>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let parts = ids.layout().parse_str(&raw).map_err(|e| {
        ApiError::bad_request(
            format!("{} is not an ID of this layout: {e}", shown_tag(&raw)),
            format!("a decimal from 0 to {}", ids.layout().max_uid()),
        )
    })?;
    let body = DecodeBody {
        id: parts.uid,
        id_str: parts.uid.to_string(),
        timestamp_millis: parts.timestamp_millis,
        time_utc: parts.timestamp(),
        worker_id: parts.worker_id,
        sequence: parts.sequence,
    };
    Ok(json_ok(&body))
}
