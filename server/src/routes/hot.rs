//! The single-ID routes answered without the router, when a request is plainly one of
//! them: `GET` of Leaf's two routes, or of `/v1/snowflake` and `/v1/segment/{tag}`
//! without a query, with a key that needs no decoding. The same handlers answer them,
//! and the guard around both still times and counts them; what this skips is the
//! router's work for a route with a path parameter (matching, a map of parameters per
//! request, a boxed route cloned per request, taking the request apart for extractors),
//! which was a quarter of such a request's instructions here. Anything else, HEAD
//! included, goes to the router.

use super::{leaf, native, Asks};
use crate::config::{MAX_HEAD_BYTES, MAX_URI_BYTES};
use crate::error::ApiError;
use crate::ids::Ids;
use crate::route_table::{self, Route, ROUTES};
use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::util::Oneshot;
use tower::{Service, ServiceExt};

/// The router with its hot routes taken first.
#[derive(Clone)]
pub(crate) struct App {
    router: Router,
    ids: Arc<Ids>,
}

impl App {
    pub(crate) fn new(router: Router, ids: Arc<Ids>) -> Self {
        Self { router, ids }
    }
}

/// A hot route, with the key it was asked for.
#[derive(Debug, PartialEq)]
enum Hot<'a> {
    LeafSnowflake,
    LeafSegment(&'a str),
    V1Snowflake,
    V1Segment(&'a str),
}

fn hot<B>(request: &Request<B>) -> Option<Hot<'_>> {
    if request.method() != Method::GET {
        return None;
    }
    let uri = request.uri();
    let (index, parameter) = route_table::find(uri.path())?;
    // The native routes read their query: with one, the router's extractors take it.
    let no_query = uri.query().is_none();
    let key = parameter.filter(|key| plain(key));
    match ROUTES[index].route {
        Route::LeafSnowflake => key.map(|_| Hot::LeafSnowflake),
        Route::LeafSegment => key.map(Hot::LeafSegment),
        Route::Snowflake if no_query => Some(Hot::V1Snowflake),
        Route::Segment if no_query => key.map(Hot::V1Segment),
        _ => None,
    }
}

/// A path segment the router would hand over as it is (the table's match makes it one
/// non-empty segment): nothing percent-encoded.
fn plain(segment: &str) -> bool {
    !segment.contains('%')
}

/// A 400 with a JSON body for a path that is not UTF-8 once percent-decoded (a tag, a
/// key, a namespace): the router's own answer to it is plain text.
fn undecodable<B>(request: &Request<B>) -> Option<Response> {
    let path = request.uri().path();
    if !path.contains('%')
        || percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .is_ok()
    {
        return None;
    }
    Some(
        ApiError::bad_request(
            "the request path is not UTF-8 once percent-decoded",
            "a path whose percent-encoded bytes are UTF-8 (a tag, key or namespace of \
             UTF-8 characters)",
        )
        .into_response(),
    )
}

/// A 414 or 431 with a JSON body, for a request target or head past the service's limits
/// (hyper's own answers to these have no body).
fn oversized<B>(request: &Request<B>) -> Option<Response> {
    let target = request
        .uri()
        .path_and_query()
        .map_or(1, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        let mut error = ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("the request target (path and query) is {target} bytes"),
        );
        error.limit = Some(format!("{MAX_URI_BYTES} bytes"));
        return Some(error.into_response());
    }
    // As sent: "METHOD TARGET HTTP/1.1\r\n", then "name: value\r\n" for each header.
    let head = request.method().as_str().len()
        + target
        + 11
        + request
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 4)
            .sum::<usize>();
    if head > MAX_HEAD_BYTES {
        let mut error = ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("the request head (request line and headers) is {head} bytes"),
        );
        error.limit = Some(format!("{MAX_HEAD_BYTES} bytes"));
        return Some(error.into_response());
    }
    None
}

type Answer = Pin<Box<dyn Future<Output = Response> + Send>>;

fn answer(ids: Arc<Ids>, asks: Asks, route: Hot<'_>) -> Answer {
    match route {
        Hot::LeafSnowflake => Box::pin(async move {
            leaf::snowflake(State(ids), Method::GET, asks)
                .await
                .into_response()
        }),
        Hot::LeafSegment(key) => {
            let key = Path(key.to_owned());
            Box::pin(async move {
                leaf::segment(State(ids), Method::GET, key, asks)
                    .await
                    .into_response()
            })
        }
        Hot::V1Snowflake => Box::pin(async move {
            native::snowflake(State(ids), Method::GET, asks, RawQuery(None))
                .await
                .into_response()
        }),
        Hot::V1Segment(tag) => {
            let tag = Path(tag.to_owned());
            Box::pin(async move {
                native::segment(State(ids), Method::GET, tag, asks, RawQuery(None))
                    .await
                    .into_response()
            })
        }
    }
}

impl<B> Service<Request<B>> for App
where
    Router: Service<Request<B>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = AppFuture<Oneshot<Router, Request<B>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // A Router is always ready; the router call below is a oneshot.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if let Some(refused) = oversized(&request).or_else(|| undecodable(&request)) {
            return AppFuture::Hot {
                answer: Box::pin(std::future::ready(refused)),
            };
        }
        match hot(&request) {
            Some(route) => {
                let asks = Asks::from_headers(request.headers());
                AppFuture::Hot {
                    answer: answer(Arc::clone(&self.ids), asks, route),
                }
            }
            None => AppFuture::Routed {
                future: self.router.clone().oneshot(request),
            },
        }
    }
}

pin_project_lite::pin_project! {
    #[project = AppProjection]
    pub(crate) enum AppFuture<F> {
        Hot { answer: Answer },
        Routed { #[pin] future: F },
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for AppFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AppProjection::Hot { answer } => answer.as_mut().poll(cx).map(Ok),
            AppProjection::Routed { future } => future.poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn request(method: Method, uri: &str) -> Request<()> {
        Request::builder().method(method).uri(uri).body(()).unwrap()
    }

    #[test]
    fn only_plain_gets_of_the_four_routes_are_hot() {
        let get = |uri| hot(&request(Method::GET, uri)).map(|route| format!("{route:?}"));
        let taken = |route: Hot<'_>| Some(format!("{route:?}"));
        assert_eq!(get("/api/snowflake/get/x"), taken(Hot::LeafSnowflake));
        assert_eq!(get("/api/snowflake/get/x?y=1"), taken(Hot::LeafSnowflake));
        assert_eq!(
            get("/api/segment/get/order"),
            taken(Hot::LeafSegment("order"))
        );
        assert_eq!(get("/v1/snowflake"), taken(Hot::V1Snowflake));
        assert_eq!(get("/v1/segment/order"), taken(Hot::V1Segment("order")));
        for routed in [
            "/api/snowflake/get/",
            "/api/snowflake/get/x/",
            "/api/segment/get/",
            "/api/segment/get/a/b",
            "/api/segment/get/%6Frder",
            "/v1/snowflake?count=2",
            "/v1/snowflake?",
            "/v1/snowflake/",
            "/v1/segment/order?count=2",
            "/v1/segment/order/range",
            "/v1/segment/",
            "/v1/segment/a%20b",
            "/v1/decode/1",
            "/healthz",
            "/",
        ] {
            assert_eq!(get(routed), None, "{routed}");
        }
        for method in [Method::HEAD, Method::POST, Method::PUT, Method::OPTIONS] {
            let request = request(method.clone(), "/v1/snowflake");
            assert_eq!(hot(&request), None, "{method}");
        }
    }

    /// The status, content type and body shape of an answer: IDs differ between two
    /// draws, so each run of digits is one `N`.
    async fn seen(answer: Response) -> (u16, String, String) {
        let status = answer.status().as_u16();
        let kind = answer
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = axum::body::to_bytes(answer.into_body(), 1 << 20)
            .await
            .unwrap();
        let mut shape = String::new();
        for c in String::from_utf8(body.to_vec()).unwrap().chars() {
            if !c.is_ascii_digit() {
                shape.push(c);
            } else if !shape.ends_with('N') {
                shape.push('N');
            }
        }
        (status, kind, shape)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_fast_path_answers_as_the_router_does() {
        let dir = tempfile::tempdir().unwrap();
        let env = [
            (
                "UIDGEN_STORE",
                dir.path().join("ids.sqlite3").display().to_string(),
            ),
            ("UIDGEN_LISTEN", "127.0.0.1:0".to_owned()),
            ("UIDGEN_TAGS", "order,user".to_owned()),
            ("UIDGEN_TAG_START", "1".to_owned()),
            (
                "UIDGEN_TOKENS",
                "order-token-0123456789abcdef=order;flake-token-0123456789abcdef=@snowflake"
                    .to_owned(),
            ),
        ]
        .map(|(k, v)| (k.to_owned(), v));
        let config = Config::load(None, env).unwrap();
        let ids = Arc::new(
            tokio::task::spawn_blocking(move || Ids::start(config))
                .await
                .unwrap()
                .unwrap(),
        );
        let plain = super::super::router(Arc::clone(&ids));
        let fast = super::super::guarded(Arc::clone(&ids));
        let tokens = [
            None,
            Some("Bearer order-token-0123456789abcdef"),
            Some("Bearer flake-token-0123456789abcdef"),
            Some("Bearer wrong-token-0123456789abcdef"),
            Some("Basic b3JkZXI="),
        ];
        let paths = [
            "/api/snowflake/get/x",
            "/api/segment/get/order",
            "/api/segment/get/user",
            "/api/segment/get/missing",
            "/v1/snowflake",
            "/v1/segment/order",
            "/v1/segment/missing",
        ];
        let mut hot_answers = 0;
        for path in paths {
            for token in tokens {
                for accept in [None, Some("text/plain"), Some("application/json")] {
                    let make = || {
                        let mut request = Request::builder().uri(path);
                        if let Some(token) = token {
                            request = request.header("authorization", token);
                        }
                        if let Some(accept) = accept {
                            request = request.header("accept", accept);
                        }
                        request.body(axum::body::Body::empty()).unwrap()
                    };
                    assert!(
                        hot(&make()).is_some(),
                        "{path} is not taken by the fast path"
                    );
                    let routed = seen(plain.clone().oneshot(make()).await.unwrap()).await;
                    let taken = seen(fast.clone().oneshot(make()).await.unwrap()).await;
                    assert_eq!(taken, routed, "{path} {token:?} {accept:?}");
                    hot_answers += usize::from(taken.0 == 200);
                }
            }
        }
        // Both successes and refusals were compared.
        assert!(hot_answers >= 6, "{hot_answers} successes");
        // Every route of the table is served: each is routed somewhere other than the 404
        // fallback; and a path the table does not list is not (with the OpenAPI check,
        // which holds the documented routes to the table, nothing is served unlisted).
        for path in [
            "/v1/snowflake/",
            "/v1/snowflakes",
            "/api/segment/get",
            "/tinyid/id",
        ] {
            let request = Request::builder()
                .uri(path)
                .body(axum::body::Body::empty())
                .unwrap();
            let (status, _, body) = seen(plain.clone().oneshot(request).await.unwrap()).await;
            assert_eq!(status, 404, "{path}: {body}");
            assert!(body.contains("no such route"), "{path}: {body}");
            // (`seen` writes digits as N: /v1 is /vN.)
            let listed = crate::route_table::listed().replace('1', "N");
            assert!(body.contains(&listed), "{body}");
        }
        for entry in &ROUTES {
            let path = crate::route_table::tests::concrete(entry.template);
            for method in [Method::GET, Method::POST] {
                let request = Request::builder()
                    .method(method.clone())
                    .uri(&path)
                    .body(axum::body::Body::empty())
                    .unwrap();
                let (status, _, body) = seen(plain.clone().oneshot(request).await.unwrap()).await;
                assert!(
                    !body.contains("no such route"),
                    "{method} {path}: {status} {body}"
                );
            }
        }
        ids.give_back();
    }
}
