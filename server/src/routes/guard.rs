//! What every route passes through: the request time limit, armed only when a request
//! has to wait; on the way out, the count of refused answers, the request duration by
//! route, and the access log line when it is on.
//!
//! One layer, not tower-http's `TimeoutLayer` beside a `MapResponseLayer`: that timeout
//! registers a timer with tokio for every request and removes it after, about a tenth of
//! a single-ID request's instructions here, for the nearly every request answered at its
//! first poll (an ID from the ring or a fetched range); and each layer added to a
//! `Router` is one more boxed service cloned per request. This one notes the start time,
//! arms the timer (for the time left) only when the route returns `Pending`, and counts
//! the answer on the way out.

use crate::error::ApiError;
use crate::ids::Ids;
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// Answers 408 when the inner service has not answered within `limit` of the call, and
/// counts every 4xx and 5xx answer (408 included) in `uidgen_requests_refused_total`.
#[derive(Clone)]
pub(crate) struct GuardLayer {
    limit: Duration,
    /// `None` while the service starts: nothing to count into yet.
    ids: Option<Arc<Ids>>,
}

impl GuardLayer {
    pub(crate) fn new(limit: Duration, ids: Option<Arc<Ids>>) -> Self {
        Self { limit, ids }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            limit: self.limit,
            ids: self.ids.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Guard<S> {
    inner: S,
    limit: Duration,
    ids: Option<Arc<Ids>>,
}

impl<S, B> Service<Request<B>> for Guard<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = GuardFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let route = crate::route_table::route_index(request.uri().path());
        let method = request.method().clone();
        GuardFuture {
            inner: self.inner.call(request),
            started,
            limit: self.limit,
            timer: None,
            ids: self.ids.clone(),
            route,
            method,
        }
    }
}

pin_project_lite::pin_project! {
    pub(crate) struct GuardFuture<F> {
        #[pin]
        inner: F,
        started: Instant,
        limit: Duration,
        // Boxed: made only on the slow path, so the future stays small on the fast one.
        timer: Option<Pin<Box<Sleep>>>,
        ids: Option<Arc<Ids>>,
        // The route's index in `ROUTE_TEMPLATES`.
        route: usize,
        method: Method,
    }
}

impl<F, E> Future for GuardFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = match this.inner.poll(cx) {
            Poll::Ready(answer) => answer,
            Poll::Pending => {
                let deadline = *this.started + *this.limit;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Ok(timed_out(*this.limit)),
                    Poll::Pending => return Poll::Pending,
                }
            }
        };
        if let (Ok(response), Some(ids)) = (&answer, this.ids.as_deref()) {
            answered(
                ids,
                this.method,
                *this.route,
                this.started.elapsed(),
                response,
            );
        }
        Poll::Ready(answer)
    }
}

/// IDs an answer handed out, for the access log: put in its extensions by the route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandedOut(pub(crate) u64);

/// Counts an answer that refused or failed, by status; times every answer by route; and
/// writes the access log line (never a query, so never a Tinyid token).
fn answered(ids: &Ids, method: &Method, route: usize, took: Duration, response: &Response) {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        ids.metrics
            .refused
            .get_or_create(&crate::metrics::StatusLabel {
                status: status.as_u16(),
            })
            .inc();
    }
    ids.metrics.request_took(route, took);
    if ids.config.access_log {
        let handed_out = response.extensions().get::<HandedOut>().map_or(0, |n| n.0);
        tracing::info!(
            target: "uidgen_server::access",
            method = %method,
            route = crate::route_table::ROUTE_TEMPLATES[route],
            status = status.as_u16(),
            micros = took.as_micros() as u64,
            ids = handed_out,
            "request"
        );
    }
}

fn timed_out(limit: Duration) -> Response {
    let mut error = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "the request was not answered within the time limit",
    );
    error.limit = Some(format!(
        "limits.request_timeout_ms = {} ms",
        limit.as_millis()
    ));
    error.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    fn after(
        wait: Duration,
    ) -> impl Service<Request<()>, Response = Response, Error = Infallible> + Clone {
        tower::service_fn(move |_: Request<()>| async move {
            tokio::time::sleep(wait).await;
            Ok::<_, Infallible>(StatusCode::OK.into_response())
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_limit_is_408_naming_it_and_one_within_is_answered() {
        let limit = GuardLayer::new(Duration::from_millis(500), None);
        let slow = limit.layer(after(Duration::from_millis(501)));
        let answer = slow.oneshot(Request::new(())).await.unwrap();
        assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);
        let body = axum::body::to_bytes(answer.into_body(), 4096)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("request_timeout_ms = 500 ms"), "{body}");

        let fast = limit.layer(after(Duration::from_millis(499)));
        assert_eq!(
            fast.oneshot(Request::new(())).await.unwrap().status(),
            StatusCode::OK
        );
        let at_once = limit.layer(after(Duration::ZERO));
        assert_eq!(
            at_once.oneshot(Request::new(())).await.unwrap().status(),
            StatusCode::OK
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_limit_counts_from_the_call_not_from_the_first_wait() {
        // Time spent before the route first waits counts against the limit.
        let limit = GuardLayer::new(Duration::from_millis(500), None);
        let service = limit.layer(tower::service_fn(|_: Request<()>| async {
            tokio::time::advance(Duration::from_millis(400)).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok::<_, Infallible>(StatusCode::OK.into_response())
        }));
        let answer = service.oneshot(Request::new(())).await.unwrap();
        assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);
    }
}
