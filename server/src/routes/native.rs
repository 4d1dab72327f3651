//! uidgen's own API: batches, IDs as strings and numbers, ranges, decoding.

use super::schema::{self as openapi, OpaqueBody, Refusals};
use super::{
    authorize, bytes, handed_out, head, json_ok, parse_count, read_id, text, Asks, Params, JSON,
    TEXT,
};
use crate::error::ErrorBody;
use crate::error::{shown_tag, ApiError};
use crate::ids::Ids;
use crate::metrics::Route;
use crate::tokens::{OPAQUE_GRANT, SNOWFLAKE_GRANT};
use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Serialize;
use std::sync::Arc;
use uidgen::IdFormat;
use utoipa::ToSchema;

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
        Some("opaque") => ids.opaque().map(Form::Opaque).ok_or_else(|| {
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

/// The IDs as `Accept` asks: `text/plain` one a line, otherwise JSON; strings in
/// `form`.
async fn answer(
    service: &Ids,
    as_text: bool,
    tag: Option<&str>,
    ids: Vec<u64>,
    form: Form,
) -> Result<Response, ApiError> {
    let format = match form {
        Form::Plain(format) => format,
        Form::Opaque(keys) => {
            let tag = tag.map(str::to_owned);
            let inline = ids.len() <= OPAQUE_INLINE;
            let make = move || opaque_answer(&keys, as_text, tag.as_deref(), &ids);
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
    if as_text {
        let mut body = Vec::with_capacity(ids.len() * 20);
        let mut digits = IdDigits::new(format);
        for id in ids {
            body.extend_from_slice(digits.encode(*id));
            body.push(b'\n');
        }
        return Ok(bytes(StatusCode::OK, TEXT, body));
    }
    Ok(bytes(StatusCode::OK, JSON, ids_json(tag, ids, format)))
}

/// Writes IDs in one form: decimal with `itoa` (the generic radix code divides by a
/// radix it reads at run time, several times slower for the common form).
struct IdDigits {
    format: IdFormat,
    decimal: itoa::Buffer,
    other: [u8; uidgen::MAX_ENCODED_LEN],
}

impl IdDigits {
    fn new(format: IdFormat) -> Self {
        Self {
            format,
            decimal: itoa::Buffer::new(),
            other: [0; uidgen::MAX_ENCODED_LEN],
        }
    }

    fn encode(&mut self, id: u64) -> &[u8] {
        match self.format {
            IdFormat::Decimal => self.decimal.format(id).as_bytes(),
            format => format.encode_into(id, &mut self.other).as_bytes(),
        }
    }
}

/// `{"tag":…,"count":N,"ids":[…],"ids_str":["…"]}` (no `tag` for snowflake IDs), the
/// strings in `format` for clients (JavaScript) that lose digits above 2^53. Written by
/// hand, not by serde: IDs are numbers and their strings digits and letters, so only
/// the tag needs JSON's escaping, and serde's general path was a sixth of a single-ID
/// request's work.
fn ids_json(tag: Option<&str>, ids: &[u64], format: IdFormat) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + tag.map_or(0, str::len) + ids.len() * 44);
    out.push(b'{');
    if let Some(tag) = tag {
        out.extend_from_slice(b"\"tag\":");
        // Writing a string to a vector cannot fail.
        let _ = serde_json::to_writer(&mut out, tag);
        out.push(b',');
    }
    let mut count = itoa::Buffer::new();
    out.extend_from_slice(b"\"count\":");
    out.extend_from_slice(count.format(ids.len()).as_bytes());
    out.extend_from_slice(b",\"ids\":[");
    let mut decimal = IdDigits::new(IdFormat::Decimal);
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(decimal.encode(*id));
    }
    out.extend_from_slice(b"],\"ids_str\":[");
    let mut digits = IdDigits::new(format);
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(digits.encode(*id));
        out.push(b'"');
    }
    out.extend_from_slice(b"]}");
    out
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

/// Whether `Accept` asks for `text/plain` rather than JSON, by its rules: media types
/// in any case, the most specific range that matches each type gives its weight (`q`),
/// the heavier wins, and on a tie the one listed first (JSON for wildcards). An `Accept`
/// that takes neither is a 406, before any ID is drawn.
fn wants_text(asks: &Asks) -> Result<bool, ApiError> {
    let Some(accept) = asks.accept() else {
        return Ok(false);
    };
    // Per type (JSON, text): weight, specificity and position of the range that decides it.
    let mut decided: [Option<(f32, u8, usize)>; 2] = [None, None];
    for (position, item) in accept.split(',').enumerate() {
        let Ok(range) = item.trim().parse::<mime::Mime>() else {
            continue;
        };
        let weight = range
            .get_param("q")
            .map_or(Some(1.0), |q| q.as_str().parse::<f32>().ok())
            .filter(|q| (0.0..=1.0).contains(q));
        let Some(weight) = weight else {
            continue;
        };
        for (slot, (kind, sub)) in [(mime::APPLICATION, mime::JSON), (mime::TEXT, mime::PLAIN)]
            .into_iter()
            .enumerate()
        {
            let specificity = if range.type_() == kind && range.subtype() == sub {
                3
            } else if range.type_() == kind && range.subtype() == mime::STAR {
                2
            } else if range.type_() == mime::STAR && range.subtype() == mime::STAR {
                1
            } else {
                continue;
            };
            if decided[slot].is_none_or(|(_, best, _)| specificity > best) {
                decided[slot] = Some((weight, specificity, position));
            }
        }
    }
    let [json, text] = decided.map(|d| d.filter(|(weight, _, _)| *weight > 0.0));
    match (json, text) {
        (None, None) => Err(ApiError {
            status: StatusCode::NOT_ACCEPTABLE,
            error: "the Accept header takes neither form this route answers in".to_owned(),
            limit: Some("application/json (the default) or text/plain".to_owned()),
        }),
        (Some(_), None) => Ok(false),
        (None, Some(_)) => Ok(true),
        (Some((jw, _, jp)), Some((tw, _, tp))) => Ok(tw > jw || (tw == jw && tp < jp)),
    }
}

/// `GET /v1/snowflake?count=N`
#[utoipa::path(
    get,
    path = "/v1/snowflake",
    tag = "ids",
    summary = "Snowflake IDs: time, worker ID and sequence, rising",
    params(
        openapi::IdQuery,
        openapi::AcceptHeader,
    ),
    responses(
        (status = 200, description = "The IDs, as JSON or one a line; HEAD answers the same \
                                      status and draws no ID",
         content((openapi::Issued = "application/json"), (String = "text/plain"))),
        (status = 406, description = "Accept takes neither JSON nor text", body = ErrorBody),
        Refusals,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn snowflake(
    State(ids): State<Arc<Ids>>,
    method: Method,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), SNOWFLAKE_GRANT)?;
    let params = Params::from_parts(query.as_deref(), b"")?;
    let count = parse_count(&ids, "count", params.get("count"))?;
    let form = format_of(&ids, &params)?;
    let as_text = wants_text(&asks)?;
    if method == Method::HEAD {
        return Ok(head(if as_text { TEXT } else { JSON }));
    }
    let out = ids.snowflake_ids(count).await?;
    ids.metrics.served(Route::V1, SNOWFLAKE_GRANT, out.len());
    let count = out.len() as u64;
    let response = answer(&ids, as_text, None, out, form).await?;
    Ok(handed_out(&ids, response, count))
}

/// `GET /v1/segment/{tag}?count=N`
#[utoipa::path(
    get,
    path = "/v1/segment/{tag}",
    tag = "ids",
    summary = "Segment IDs of a tag, rising",
    params(
        ("tag" = String, Path, description = "A tag created in the store", example = "order"),
        openapi::IdQuery,
        openapi::AcceptHeader,
    ),
    responses(
        (status = 200, description = "The IDs, as JSON or one a line; HEAD answers the same \
                                      status and draws no ID",
         content((openapi::Issued = "application/json"), (String = "text/plain"))),
        (status = 404, description = "No such tag in the store", body = ErrorBody),
        (status = 406, description = "Accept takes neither JSON nor text", body = ErrorBody),
        Refusals,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn segment(
    State(ids): State<Arc<Ids>>,
    method: Method,
    Path(tag): Path<String>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), &tag)?;
    let params = Params::from_parts(query.as_deref(), b"")?;
    let count = parse_count(&ids, "count", params.get("count"))?;
    let form = format_of(&ids, &params)?;
    let as_text = wants_text(&asks)?;
    if method == Method::HEAD {
        ids.servable(&tag).await?;
        return Ok(head(if as_text { TEXT } else { JSON }));
    }
    let out = ids.segment_ids(&tag, count).await?;
    ids.metrics.served(Route::V1, &tag, out.len());
    let count = out.len() as u64;
    let response = answer(&ids, as_text, Some(&tag), out, form).await?;
    Ok(handed_out(&ids, response, count))
}

#[derive(Serialize, ToSchema)]
#[schema(as = Range)]
struct RangeBody<'a> {
    tag: &'a str,
    count: u64,
    first: u64,
    last: u64,
    first_str: String,
    last_str: String,
    /// Kept by the client to give the range's unused tail back
    /// (`/v1/segment/{tag}/giveback`), to this service process.
    receipt: String,
}

/// `POST /v1/segment/{tag}/range?count=N`: `[first, last]`, taken from the store now
/// and never handed to anyone else.
#[utoipa::path(
    post,
    path = "/v1/segment/{tag}/range",
    tag = "ids",
    summary = "A range of a tag's IDs, taken from the store for the caller alone",
    params(
        ("tag" = String, Path, description = "A tag created in the store", example = "order"),
        ("count" = Option<u64>, Query, minimum = 1, maximum = 100000,
         description = "How many IDs (1 when absent), up to max_count (100,000 unless \
                        configured)"),
    ),
    responses(
        (status = 200, description = "The range, first and last included", body = RangeBody),
        (status = 404, description = "No such tag in the store", body = ErrorBody),
        Refusals,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn range(
    State(ids): State<Arc<Ids>>,
    Path(tag): Path<String>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), &tag)?;
    let params = Params::from_parts(query.as_deref(), b"")?;
    let count = parse_count(&ids, "count", params.get("count"))? as u64;
    let first = ids.range(&tag, count).await?;
    let last = first + count - 1;
    ids.metrics.served(Route::V1Range, &tag, count as usize);
    let body = RangeBody {
        tag: &tag,
        count,
        first,
        last,
        first_str: first.to_string(),
        last_str: last.to_string(),
        receipt: ids.receipt(&tag, first, last),
    };
    Ok(handed_out(&ids, json_ok(&body), count))
}

#[derive(Serialize, ToSchema)]
#[schema(as = GivenBack)]
struct GiveBackBody<'a> {
    tag: &'a str,
    /// Whether the IDs went back to the store (false: a range came after that one, nothing
    /// was left, or another service process handed it out). Hand none of them out either way.
    given_back: bool,
}

/// `POST /v1/segment/{tag}/giveback?first=U&receipt=R`: the unused tail `U..=last` of a
/// range this process handed out goes back to the store, if no range came after it.
#[utoipa::path(
    post,
    path = "/v1/segment/{tag}/giveback",
    tag = "ids",
    summary = "Gives the unused tail of a range back (a client that closes)",
    params(
        ("tag" = String, Path, description = "The range's tag", example = "order"),
        ("first" = u64, Query, description = "The first ID not handed out: from the range's \
                                               first to one past its last"),
        ("receipt" = String, Query, description = "The range's receipt, as /range answered it",
         example = "0123456789abcdef0123456789abcdef"),
    ),
    responses(
        (status = 200, description = "Whether the tail went back", body = GiveBackBody),
        Refusals,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn give_back(
    State(ids): State<Arc<Ids>>,
    Path(tag): Path<String>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), &tag)?;
    let params = Params::from_parts(query.as_deref(), b"")?;
    let raw = params.get("first").ok_or_else(|| {
        ApiError::bad_request(
            "the first parameter is missing",
            "first=<the first unused ID>",
        )
    })?;
    let first: u64 = raw.trim().parse().map_err(|_| {
        ApiError::bad_request(
            format!("first = {} is not a number", crate::error::shown_tag(raw)),
            "a whole number: the first ID not handed out",
        )
    })?;
    let receipt = params.get("receipt").ok_or_else(|| {
        ApiError::bad_request(
            "the receipt parameter is missing",
            "receipt=<the range's receipt>",
        )
    })?;
    let given_back = ids.give_back_range(&tag, first, receipt).await?;
    Ok(json_ok(&GiveBackBody {
        tag: &tag,
        given_back,
    }))
}

#[derive(Serialize, ToSchema)]
#[schema(as = Decoded)]
struct DecodeBody {
    id: u64,
    id_str: String,
    timestamp_millis: u64,
    time_utc: String,
    /// The region, with a TIME/REGION/WORKER/SEQ layout (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<u64>,
    worker_id: u64,
    sequence: u64,
}

/// `GET /v1/decode/{id}`: the parts of an ID made with this service's layout.
#[utoipa::path(
    get,
    path = "/v1/decode/{id}",
    tag = "decoding",
    summary = "The time, region, worker ID and sequence of a snowflake ID of this service's layout",
    params(
        ("id" = String, Path, description = "The ID: decimal, or its hex, base62 or base32 form",
         example = "7394012345678"),
        ("format" = Option<openapi::IdForm>, Query,
         description = "The ID's form, needed when it is all digits but not decimal"),
    ),
    responses(
        (status = 200, description = "The ID's parts", body = DecodeBody),
        (status = 400, description = "Not an ID of this layout, or a form that cannot be \
                                      used", body = ErrorBody),
        (status = 408, description = "The request took longer than the request timeout",
         body = ErrorBody),
    )
)]
pub(super) async fn decode(
    State(ids): State<Arc<Ids>>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::from_parts(query.as_deref(), b"")?;
    let parts = read_id(&ids, "the ID", &raw, &params)?;
    let body = DecodeBody {
        id: parts.uid,
        id_str: parts.uid.to_string(),
        timestamp_millis: parts.timestamp_millis,
        time_utc: parts.timestamp(),
        region: parts.region,
        worker_id: parts.worker_id,
        sequence: parts.sequence,
    };
    Ok(json_ok(&body))
}

#[derive(Serialize, ToSchema)]
#[schema(as = Revealed)]
struct RevealBody {
    id: u64,
    id_str: String,
    key_version: u8,
}

/// `GET /v1/opaque/{public}`: the ID behind a public ID (token grant `@opaque` when
/// tokens are configured: whoever may call it can undo the permutation).
#[utoipa::path(
    get,
    path = "/v1/opaque/{public}",
    tag = "decoding",
    summary = "The ID behind a public ID",
    params(
        ("public" = String, Path, description = "A public ID this service handed out"),
    ),
    responses(
        (status = 200, description = "The ID, and the key version that hid it", body = RevealBody),
        (status = 404, description = "Opaque IDs are off: the service has no keys",
         body = ErrorBody),
        Refusals,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn reveal(
    State(ids): State<Arc<Ids>>,
    Path(public): Path<String>,
    asks: Asks,
) -> Result<Response, ApiError> {
    authorize(&ids, asks.bearer(), OPAQUE_GRANT)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn the_hand_written_json_is_what_serde_writes_for_every_form_tag_and_count() {
        let tags = [
            None,
            Some("order"),
            Some("quote\" back\\ slash / tab\t nul\u{0} bell\u{7} é 日本 🎉"),
            Some(""),
        ];
        let lists: [&[u64]; 4] = [&[], &[0], &[1, 2, 3], &[u64::MAX, 1 << 63, (1 << 53) + 1]];
        for format in [
            IdFormat::Decimal,
            IdFormat::Hex,
            IdFormat::Base62,
            IdFormat::Base32,
        ] {
            for tag in tags {
                for ids in lists {
                    let written = ids_json(tag, ids, format);
                    let read: Value = serde_json::from_slice(&written)
                        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&written)));
                    // The shape the OpenAPI document describes.
                    let want = json!(openapi::IdsBody {
                        tag: tag.map(str::to_owned),
                        count: ids.len() as u64,
                        ids: ids.to_vec(),
                        ids_str: ids.iter().map(|id| format.encode(*id)).collect(),
                    });
                    assert_eq!(read, want, "{format:?} {tag:?} {ids:?}");
                    // The field order clients saw before: tag, count, ids, ids_str.
                    let text = String::from_utf8(written).unwrap();
                    let at = |key: &str| text.find(&format!("\"{key}\":"));
                    assert!(
                        at("count") < at("ids") && at("ids") < at("ids_str"),
                        "{text}"
                    );
                    if tag.is_some() {
                        assert!(at("tag") < at("count"), "{text}");
                    }
                }
            }
        }
    }

    #[test]
    fn decimal_digits_are_the_ones_the_library_writes() {
        let mut digits = IdDigits::new(IdFormat::Decimal);
        for id in [0, 9, 10, 99, 12_345, u64::MAX >> 1, u64::MAX] {
            assert_eq!(digits.encode(id), IdFormat::Decimal.encode(id).as_bytes());
        }
    }
}
