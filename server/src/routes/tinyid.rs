//! Didi Tinyid's routes under `/tinyid`: any method, parameters in the query or a form
//! body, a `token` parameter. Bodies are Tinyid's own where its clients parse them. On
//! failure the JSON routes keep Tinyid's codes (5 `token is error`, 6 anything else)
//! and the simple routes answer a one-line reason; both with an HTTP status that says
//! what happened (Tinyid's client reads a body only from a 200), never an empty 200.

use super::{authorize, json_ok, parse_count, text, Params};
use crate::error::ApiError;
use crate::ids::Ids;
use crate::metrics::Route;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Serialize;
use std::sync::Arc;

const TOKEN_ERROR: i32 = 5;
const SYSTEM_ERROR: i32 = 6;

/// Tinyid's `Response`: fields in its order.
#[derive(Serialize)]
struct Envelope<T: Serialize> {
    data: Option<T>,
    code: i32,
    message: String,
}

/// Tinyid's `SegmentId` as its server writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SegmentId {
    max_id: u64,
    loading_id: u64,
    current_id: u64,
    delta: u64,
    remainder: u64,
}

struct Request {
    params: Params,
}

impl Request {
    fn new(query: Option<String>, body: &Bytes) -> Result<Self, ApiError> {
        Ok(Self {
            params: Params::from_parts(query.as_deref(), body)?,
        })
    }

    /// The biz type, checked against the token.
    fn biz_type(&self, ids: &Ids) -> Result<String, ApiError> {
        let Some(biz_type) = self.params.get("bizType") else {
            return Err(ApiError::bad_request(
                "the bizType parameter is missing",
                "bizType=<a segment tag>",
            ));
        };
        authorize(ids, self.params.get("token"), biz_type)?;
        Ok(biz_type.to_owned())
    }
}

/// The JSON answer of a failure: Tinyid's code, our status and message.
fn envelope_error(e: ApiError) -> Response {
    let code = match e.status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => TOKEN_ERROR,
        _ => SYSTEM_ERROR,
    };
    let message = if code == TOKEN_ERROR {
        "token is error".to_owned()
    } else {
        match &e.limit {
            Some(limit) => format!("{} (allowed: {limit})", e.error),
            None => e.error.clone(),
        }
    };
    let body = Envelope::<()> {
        data: None,
        code,
        message,
    };
    super::json(e.status, serde_json::to_string(&body).unwrap_or_default())
}

fn envelope_ok<T: Serialize>(data: T) -> Response {
    let body = Envelope {
        data: Some(data),
        code: 200,
        message: String::new(),
    };
    json_ok(&body)
}

/// The text answer of a failure.
fn simple_error(e: ApiError) -> Response {
    let line = match &e.limit {
        Some(limit) => format!("error: {} (allowed: {limit})\n", e.error),
        None => format!("error: {}\n", e.error),
    };
    text(e.status, line)
}

/// HEAD's answer: the request checked as GET would check it (parameters, token, tag,
/// batch size when `batch`), no ID drawn, and the route's content type, or its error as
/// the route writes errors.
async fn head(
    ids: &Ids,
    query: Option<String>,
    body: &Bytes,
    batch: bool,
    (kind, refused): (&'static str, fn(ApiError) -> Response),
) -> Response {
    let checked = async {
        let request = Request::new(query, body)?;
        ids.servable(&request.biz_type(ids)?).await?;
        if batch {
            parse_count(ids, "batchSize", request.params.get("batchSize"))?;
        }
        Ok::<(), ApiError>(())
    };
    match checked.await {
        Ok(()) => super::head(kind),
        Err(e) => refused(e),
    }
}

async fn draw(ids: &Ids, query: Option<String>, body: &Bytes) -> Result<Vec<u64>, ApiError> {
    let request = Request::new(query, body)?;
    let biz_type = request.biz_type(ids)?;
    let count = parse_count(ids, "batchSize", request.params.get("batchSize"))?;
    let out = ids.segment_ids(&biz_type, count).await?;
    ids.metrics.served(Route::Tinyid, &biz_type, out.len());
    Ok(out)
}

/// A range for Tinyid's client: it hands out `(currentId, maxId]` itself and asks for
/// the next range once it reaches `loadingId`.
async fn segment_id(ids: &Ids, query: Option<String>, body: &Bytes) -> Result<SegmentId, ApiError> {
    let request = Request::new(query, body)?;
    let biz_type = request.biz_type(ids)?;
    let step = ids.tag_step(&biz_type).await?;
    let first = ids.range(&biz_type, step).await?;
    ids.metrics
        .served(Route::TinyidSegment, &biz_type, step as usize);
    let current_id = first - 1;
    Ok(SegmentId {
        max_id: current_id + step,
        loading_id: current_id + step * ids.config.tinyid_loading_percent / 100,
        current_id,
        delta: 1,
        remainder: 0,
    })
}

/// Tinyid's four calls: IDs or a range, each as JSON or as one line of text.
#[derive(Clone, Copy, Debug)]
pub(super) enum Call {
    /// `/tinyid/id/nextId?bizType=&token=&batchSize=`: `{"data":[…],"code":200,"message":""}`.
    Ids,
    /// `/tinyid/id/nextIdSimple`: `3`, or `4,5,6` for a batch.
    IdsText,
    /// `/tinyid/id/nextSegmentId`: the range as Tinyid's JSON.
    Range,
    /// `/tinyid/id/nextSegmentIdSimple`: `currentId,loadingId,maxId,delta,remainder`.
    RangeText,
}

impl Call {
    fn simple(self) -> bool {
        matches!(self, Call::IdsText | Call::RangeText)
    }

    fn range(self) -> bool {
        matches!(self, Call::Range | Call::RangeText)
    }
}

/// Every Tinyid route: HEAD checks the request and draws nothing; otherwise the IDs or
/// the range, in the call's form, or the error as that form writes errors.
pub(super) async fn answer(
    call: Call,
    State(ids): State<Arc<Ids>>,
    method: Method,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let (kind, refused): (&'static str, fn(ApiError) -> Response) = if call.simple() {
        (super::TEXT, simple_error)
    } else {
        (super::JSON, envelope_error)
    };
    if method == Method::HEAD {
        return head(&ids, query, &body, !call.range(), (kind, refused)).await;
    }
    let (answer, count) = if call.range() {
        match segment_id(&ids, query, &body).await {
            Ok(s) if call.simple() => (
                text(
                    StatusCode::OK,
                    format!(
                        "{},{},{},{},{}",
                        s.current_id, s.loading_id, s.max_id, s.delta, s.remainder
                    ),
                ),
                s.max_id - s.current_id,
            ),
            Ok(s) => {
                let count = s.max_id - s.current_id;
                (envelope_ok(s), count)
            }
            Err(e) => return refused(e),
        }
    } else {
        match draw(&ids, query, &body).await {
            Ok(out) if call.simple() => {
                let line: Vec<String> = out.iter().map(u64::to_string).collect();
                (text(StatusCode::OK, line.join(",")), out.len() as u64)
            }
            Ok(out) => {
                let count = out.len() as u64;
                (envelope_ok(out), count)
            }
            Err(e) => return refused(e),
        }
    };
    super::handed_out(&ids, answer, count)
}
