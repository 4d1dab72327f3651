//! uidgen's own API: batches, IDs as strings and numbers, ranges, decoding.

use super::{authorize, bearer, json_ok, parse_count, text, Params};
use crate::config::{OPAQUE_GRANT, SNOWFLAKE_GRANT};
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

/// How the answer writes IDs: numbers with strings in one form, or opaque public IDs
/// only (never beside the numbers they hide).
#[derive(Clone)]
enum Form {
    Plain(IdFormat),
    Opaque(Arc<uidgen::OpaqueIds>),
}

/// Opaque batches up to this many IDs are made on the request's own thread (a few µs);
/// larger ones on the batch pool, at a lower priority, so a long batch never holds up
/// other requests.
const OPAQUE_INLINE: usize = 64;

/// The `format` parameter (default decimal): one of [`IdFormat`]'s names, or `opaque`
/// when the service has keys.
fn format_of(ids: &Ids, params: &Params) -> Result<Form, ApiError> {
    match params.get("format") {
        None => Ok(Form::Plain(IdFormat::Decimal)),
        Some("opaque") => ids.opaque_keys().map(Form::Opaque).ok_or_else(|| {
            ApiError::bad_request(
                "format = \"opaque\" cannot be used: this service has no opaque-ID keys",
                "decimal, hex, base62 or base32 (opaque needs UIDGEN_OPAQUE_KEYS or \
                 opaque_keys_file)",
            )
        }),
        Some(name) => name
            .parse()
            .map(Form::Plain)
            .map_err(|e: uidgen::ParseFormatError| {
                ApiError::bad_request(
                    format!("format = {} cannot be used", shown_tag(name)),
                    format!("{e}, or opaque"),
                )
            }),
    }
}

#[derive(Serialize)]
struct OpaqueBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
    count: usize,
    key_version: u8,
    ids: Vec<String>,
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
/// `form`.
async fn answer(
    service: &Ids,
    headers: &HeaderMap,
    tag: Option<&str>,
    ids: Vec<u64>,
    form: Form,
) -> Result<Response, ApiError> {
    let format = match form {
        Form::Plain(format) => format,
        Form::Opaque(keys) => {
            let (text, tag) = (wants_text(headers), tag.map(str::to_owned));
            let inline = ids.len() <= OPAQUE_INLINE;
            let make = move || opaque_answer(&keys, text, tag.as_deref(), &ids);
            // The pool is there whenever keys are.
            return match &service.batches {
                Some(pool) if !inline => pool
                    .run(make)
                    .await
                    .ok_or_else(|| ApiError::unavailable("making opaque IDs panicked"))?,
                _ => make(),
            };
        }
    };
    let ids = ids.as_slice();
    if wants_text(headers) {
        let mut body = String::with_capacity(ids.len() * 20);
        let mut buffer = [0u8; uidgen::MAX_ENCODED_LEN];
        for id in ids {
            body.push_str(format.encode_into(*id, &mut buffer));
            body.push('\n');
        }
        return Ok(text(StatusCode::OK, body));
    }
    let body = IdsBody {
        tag,
        count: ids.len(),
        ids,
        ids_str: AsStrings(ids, format),
    };
    Ok(json_ok(&body))
}

/// Public IDs only: `{"count","key_version","ids":[…]}`, or one a line (`as_text`).
fn opaque_answer(
    keys: &uidgen::OpaqueIds,
    as_text: bool,
    tag: Option<&str>,
    ids: &[u64],
) -> Result<Response, ApiError> {
    let public = keys
        .encode_many(ids)
        .map_err(|e| ApiError::unavailable(format!("an ID could not be made opaque: {e}")))?;
    if as_text {
        let mut body = public.join("\n");
        body.push('\n');
        return Ok(text(StatusCode::OK, body));
    }
    Ok(json_ok(&OpaqueBody {
        tag,
        count: public.len(),
        key_version: keys.current_version(),
        ids: public,
    }))
}

/// Whether `Accept` puts `text/plain` before JSON.
fn wants_text(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(
            |accept| match (accept.find("text/plain"), accept.find("application/json")) {
                (Some(text), Some(json)) => text < json,
                (Some(_), None) => true,
                _ => false,
            },
        )
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
    let form = format_of(&ids, &params)?;
    let out = ids.snowflake_ids(count).await?;
    ids.metrics.served("v1", SNOWFLAKE_GRANT, out.len());
    answer(&ids, &headers, None, out, form).await
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
    let form = format_of(&ids, &params)?;
    let out = ids.segment_ids(&tag, count).await?;
    ids.metrics.served("v1", &tag, out.len());
    answer(&ids, &headers, Some(&tag), out, form).await
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

#[derive(Serialize)]
struct RevealBody {
    id: u64,
    id_str: String,
    key_version: u8,
}

/// `GET /v1/opaque/{public}`: the ID behind a public ID (token grant `@opaque` when
/// tokens are configured: whoever may call it can undo the permutation).
pub(super) async fn reveal(
    State(ids): State<Arc<Ids>>,
    Path(public): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize(&ids, bearer(&headers), OPAQUE_GRANT)?;
    let keys = ids.opaque().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "opaque IDs are off: this service has no keys (UIDGEN_OPAQUE_KEYS or \
             opaque_keys_file)",
        )
    })?;
    let id = keys.decode(&public).map_err(|e| {
        ApiError::bad_request(
            format!("{} is not a public ID of this service", shown_tag(&public)),
            e.to_string(),
        )
    })?;
    // `decode` read it already.
    let key_version = uidgen::OpaqueIds::key_version(&public).unwrap_or_default();
    Ok(json_ok(&RevealBody {
        id,
        id_str: id.to_string(),
        key_version,
    }))
}
