//! The HTTP routes: Leaf's, Tinyid's, CosId's, the native API and operations, on one
//! `Router`.

mod cosid;
mod guard;
mod hot;
mod leaf;
mod native;
mod openapi;
mod ops;
mod schema;
mod status;
mod tinyid;

use crate::config::Limits;
use crate::error::{shown_tag, ApiError};
use crate::ids::Ids;
use crate::route_table::{self, Route, ROUTES};
use axum::body::Bytes;
use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::{any, get, patch, post, MethodRouter};
use axum::Router;
pub(crate) use guard::Guard;
use guard::GuardLayer;
pub(crate) use hot::App;
use std::convert::Infallible;
use std::sync::{Arc, LazyLock};
use tower::util::Either;
use tower::Layer;
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;

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
    let guard = GuardLayer::new(ids.config.limits.request_timeout(), Some(Arc::clone(&ids)));
    let cors = cors(&ids.config.cors_origins);
    let routes = routes(ids).layer(guard);
    match cors {
        Some(cors) => routes.layer(cors),
        None => routes,
    }
}

/// What `uidgen serve` runs: the routes, the single-ID ones taken first, with CORS
/// headers where origins are configured.
pub(crate) type Served = Either<Cors<App>, App>;

/// The routes in their guard, as `uidgen serve` runs them: the same answers as
/// [`router`], with one guard around the whole router instead of one around each route,
/// and the single-ID routes taken before the router.
pub(crate) fn guarded(ids: Arc<Ids>) -> Guard<Served> {
    let guard = GuardLayer::new(ids.config.limits.request_timeout(), Some(Arc::clone(&ids)));
    let app = App::new(routes(Arc::clone(&ids)), Arc::clone(&ids));
    guard.layer(match cors(&ids.config.cors_origins) {
        Some(cors) => Either::Left(cors.layer(app)),
        None => Either::Right(app),
    })
}

/// The CORS layer for `origins` (checked by `Config::check`), none without origins.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allowed = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allowed)
            .allow_methods([Method::GET, Method::POST, Method::HEAD])
            .allow_headers([header::AUTHORIZATION, header::ACCEPT, header::CONTENT_TYPE])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// The routes alone, without the time limit and the count of refused answers: one per
/// row of the route table, so the router serves exactly what the table lists.
fn routes(ids: Arc<Ids>) -> Router {
    let limits = ids.config.limits.clone();
    ROUTES
        .iter()
        .fold(Router::new(), |router, entry| {
            router.route(entry.template, handler(entry.route, &limits))
        })
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(ids)
}

/// What answers `route`.
fn handler(route: Route, limits: &Limits) -> MethodRouter<Arc<Ids>> {
    // Only Tinyid's routes read a body (a form), so only they pay for the limit's wrapper.
    let form_route = |call: tinyid::Call| {
        any(
            move |ids: State<Arc<Ids>>, method: Method, query: RawQuery, body: Bytes| {
                tinyid::answer(call, ids, method, query, body)
            },
        )
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
    };
    match route {
        Route::Snowflake => get(native::snowflake),
        Route::Segment => get(native::segment),
        Route::Range => post(native::range),
        Route::GiveBack => post(native::give_back),
        Route::Decode => get(native::decode),
        Route::Reveal => get(native::reveal),
        Route::LeafSegment => get(leaf::segment),
        Route::LeafSnowflake => get(leaf::snowflake),
        Route::LeafDecode => get(leaf::decode),
        Route::TinyidNextId => form_route(tinyid::Call::Ids),
        Route::TinyidNextIdSimple => form_route(tinyid::Call::IdsText),
        Route::TinyidNextSegmentId => form_route(tinyid::Call::Range),
        Route::TinyidNextSegmentIdSimple => form_route(tinyid::Call::RangeText),
        Route::CosIdMachines => post(cosid::distribute)
            .patch(cosid::guard)
            .delete(cosid::revert),
        Route::CosIdCreateSegment => post(cosid::create_segment),
        Route::CosIdNextMaxId => patch(cosid::next_max_id),
        Route::CosIdIds => get(cosid::share),
        Route::CosIdIdsText => get(cosid::share_text),
        Route::CosIdIdsNamed => get(cosid::named),
        Route::CosIdIdsNamedText => get(cosid::named_text),
        Route::Healthz => get(ops::healthz),
        Route::Readyz => get(ops::readyz),
        Route::Metrics => get(ops::metrics),
        Route::OpenApi => get(openapi::document),
        Route::Status => get(status::page),
        Route::StatusJson => get(status::json),
    }
}

async fn method_not_allowed(method: Method) -> ApiError {
    let shown: String = method.as_str().chars().take(32).collect();
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("this route does not take {shown}: the Allow header lists what it takes"),
    )
}

async fn not_found() -> ApiError {
    static LISTED: LazyLock<String> =
        LazyLock::new(|| format!("no such route; the routes: {}", route_table::listed()));
    ApiError::new(StatusCode::NOT_FOUND, LISTED.as_str())
}

/// A request's query (and form body) parameters, each given once.
#[derive(Debug, Default)]
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    /// The parameters of the query and the form body together; a name given twice
    /// (`count=1&count=5`, or in both) is a 400 naming it, never a silent choice.
    pub(crate) fn from_parts(query: Option<&str>, body: &[u8]) -> Result<Self, ApiError> {
        let mut all: Vec<(String, String)> = Vec::new();
        for source in [query.unwrap_or("").as_bytes(), body] {
            not_utf8(source)?;
            for (name, value) in form_urlencoded::parse(source) {
                if all.iter().any(|(seen, _)| *seen == name) {
                    return Err(ApiError::bad_request(
                        format!("the parameter {} is given more than once", shown_tag(&name)),
                        "each parameter once (in the query or the form body)",
                    ));
                }
                all.push((name.into_owned(), value.into_owned()));
            }
        }
        Ok(Self(all))
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Refuses a query or form whose names or values decode to bytes that are not UTF-8:
/// decoded with replacement characters, two different values (`%FF`, `%FE`) would read
/// as one.
fn not_utf8(source: &[u8]) -> Result<(), ApiError> {
    for pair in source.split(|&b| b == b'&') {
        for part in pair.splitn(2, |&b| b == b'=') {
            if percent_encoding::percent_decode(part)
                .decode_utf8()
                .is_err()
            {
                let shown = String::from_utf8_lossy(part);
                return Err(ApiError::bad_request(
                    format!(
                        "the parameter {} is not UTF-8 once decoded",
                        shown_tag(&shown)
                    ),
                    "names and values in UTF-8, percent-encoded",
                ));
            }
        }
    }
    Ok(())
}

/// An ID of this service's layout in the form `params` names (`format=hex`, …), else in
/// whichever form the service writes it is (decimal, or the hex, base62 and base32 of
/// `format=`), told apart as `uidgen parse` does: digits only are decimal, so a hex ID
/// that happens to be all digits needs `format=hex`.
pub(crate) fn read_id(
    ids: &Ids,
    name: &str,
    raw: &str,
    params: &Params,
) -> Result<uidgen::UidParts, ApiError> {
    let layout = ids.layout();
    let refused = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(
            format!("{name} {} is not an ID of this layout: {e}", shown_tag(raw)),
            format!(
                "a decimal from 0 to {}, or its hex, base62 or base32 form (format=hex \
                 and so on when a form is all digits)",
                layout.max_uid()
            ),
        )
    };
    let text = raw.trim();
    let named = match params.get("format") {
        None => None,
        Some(named) => Some(named.parse::<uidgen::IdFormat>().map_err(|e| {
            ApiError::bad_request(
                format!("format = {} cannot be used", shown_tag(named)),
                e.to_string(),
            )
        })?),
    };
    match named.or_else(|| uidgen::IdFormat::detect(text)) {
        Some(format) if format != uidgen::IdFormat::Decimal => {
            let id = format.decode(text).map_err(|e| refused(&e))?;
            layout.parse(id).map_err(|e| refused(&e))
        }
        _ => layout.parse_str(raw).map_err(|e| refused(&e)),
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

/// The two headers an ID route reads: the bearer token and what the client accepts.
/// Taken out of the request's headers by reference (axum's `HeaderMap` extractor copies
/// every header, a sixth of a single-ID request's work).
#[derive(Debug, Default)]
pub(crate) struct Asks {
    authorization: Option<HeaderValue>,
    accept: Option<HeaderValue>,
}

impl<S: Send + Sync> FromRequestParts<S> for Asks {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Self::from_headers(&parts.headers))
    }
}

impl Asks {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        Self {
            authorization: headers.get(header::AUTHORIZATION).cloned(),
            accept: headers.get(header::ACCEPT).cloned(),
        }
    }

    /// The bearer token of a request, if it sent one.
    pub(crate) fn bearer(&self) -> Option<&str> {
        let value = self.authorization.as_ref()?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    }

    /// The request's `Accept` header, if it sent one that is text.
    pub(crate) fn accept(&self) -> Option<&str> {
        self.accept.as_ref()?.to_str().ok()
    }
}

/// Refuses a request whose token may not draw `tag`.
pub(crate) fn authorize(ids: &Ids, token: Option<&str>, tag: &str) -> Result<(), ApiError> {
    match ids.tokens().access(token, tag) {
        crate::tokens::Access::Open | crate::tokens::Access::Granted => Ok(()),
        crate::tokens::Access::Unknown => {
            ids.token_refused(tag, "no token, or one this service does not know");
            Err(match token {
                Some(_) => ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "the token sent is not one this service knows",
                ),
                None => ApiError::unauthorized(),
            })
        }
        crate::tokens::Access::Forbidden => {
            ids.token_refused(tag, "a token not granted this tag");
            Err(ApiError::forbidden(tag))
        }
    }
}

/// The content types of the answers.
pub(crate) const TEXT: &str = "text/plain; charset=utf-8";
pub(crate) const JSON: &str = "application/json";

/// An answer of `content_type`, built directly: axum's tuple responses go through
/// several conversions, a tenth of a single-ID request's work.
pub(crate) fn bytes(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Notes on `response` how many IDs it hands out, for the access log (only when the log
/// is on: an extension costs an allocation).
pub(crate) fn handed_out(ids: &Ids, mut response: Response, count: u64) -> Response {
    if ids.config.access_log {
        response.extensions_mut().insert(guard::HandedOut(count));
    }
    response
}

/// The answer to HEAD on a route that hands out IDs: the status and content type GET
/// would give, and no ID drawn (HEAD is for probes and caches, not for using up IDs).
pub(crate) fn head(content_type: &'static str) -> Response {
    bytes(StatusCode::OK, content_type, Vec::new())
}

/// A text answer.
pub(crate) fn text(status: StatusCode, body: String) -> Response {
    bytes(status, TEXT, body.into_bytes())
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
    bytes(status, JSON, body.into_bytes())
}
