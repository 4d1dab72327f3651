//! Serving the router: a connection limit, a time limit on request headers, graceful
//! shutdown (stop accepting, finish what is in flight, then give back what is held).

use crate::config::Limits;
use crate::ids::{Ids, StartError};
use crate::routes::router;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The read buffer for a request head (request line and headers), in bytes: a head that
/// does not fit is answered 431. hyper checks between reads, so a head up to one read
/// beyond it can still pass.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Serves `ids` on `listener` until `shutdown` completes, then stops accepting, lets
/// in-flight requests finish (up to the configured grace) and returns. Also keeps the
/// readiness probe of the store running.
pub async fn serve(
    listener: TcpListener,
    ids: Arc<Ids>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = ids.config.limits.clone();
    let app: Arc<OnceLock<Router>> = Arc::new(OnceLock::from(router(Arc::clone(&ids))));
    let probe = tokio::spawn(probe_store(ids));
    let served = accept_loop(listener, &limits, app, shutdown).await;
    probe.abort();
    let _ = probe.await;
    served
}

/// Accepts connections until `shutdown`, each served by the router in `app` once it is
/// set, and by [`starting`] until then; then drains them.
async fn accept_loop(
    listener: TcpListener,
    limits: &Limits,
    app: Arc<OnceLock<Router>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let starting = starting();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(MAX_HEAD_BYTES);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (app, starting) = (Arc::clone(&app), starting.clone());
        // Per request, so a connection opened while starting gets the full routes after.
        let dispatch = tower::service_fn(move |request: axum::extract::Request<Incoming>| {
            let routes = app.get().cloned().unwrap_or_else(|| starting.clone());
            routes.oneshot(request)
        });
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(dispatch));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.shutdown_grace()) => {
            tracing::warn!(grace = ?limits.shutdown_grace(), "requests still in flight after the grace time; closing");
        }
    }
    Ok(())
}

/// The routes while the service starts (leasing a worker ID, filling the ring, setting
/// up tags): alive, not ready, no IDs yet.
fn starting() -> Router {
    const STARTING: &str = "starting: leasing a worker ID, filling the ring and setting up tags";
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(|| async { crate::error::ApiError::unavailable(STARTING).into_response() })
}

/// Reads the store every second, for `/readyz` and the store latency metric.
async fn probe_store(ids: Arc<Ids>) {
    loop {
        let probing = Arc::clone(&ids);
        let _ = tokio::task::spawn_blocking(move || {
            probing.probe_store();
            probing.heal_snowflake();
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs the service as `uidgen serve` does. It listens at once: `/healthz` answers 200
/// and everything else 503 `starting` while it opens the store, leases a worker ID,
/// fills the ring and sets up the configured tags; then it serves every route and calls
/// `on_ready` with the address bound (port 0 picks a free one). It serves until SIGTERM
/// or SIGINT, then gives every tag's unused tail back and releases the worker ID with
/// its exact time mark. A start that fails (a store that cannot be reached, no free
/// worker ID) stops it with that error.
pub async fn run(
    config: crate::Config,
    on_ready: impl FnOnce(std::net::SocketAddr),
) -> Result<(), StartError> {
    config.check()?;
    let addr = config.listen;
    let limits = config.limits.clone();
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| StartError::Listen { addr, source })?;
    let app: Arc<OnceLock<Router>> = Arc::default();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<Result<Arc<Ids>, StartError>>();
    let setting = Arc::clone(&app);
    tokio::spawn(async move {
        let started = tokio::task::spawn_blocking(move || Ids::start(config))
            .await
            .unwrap_or_else(|_| {
                Err(StartError::Listen {
                    addr,
                    source: std::io::Error::other("start-up panicked"),
                })
            });
        let started = started.map(|ids| {
            let ids = Arc::new(ids);
            let _ = setting.set(router(Arc::clone(&ids)));
            ids
        });
        let _ = started_tx.send(started);
    });
    let mut failed = None;
    let ids_slot: Arc<std::sync::Mutex<Option<Arc<Ids>>>> = Arc::default();
    // Listening for signals from here on, once: a signal that comes between start-up and
    // serving is not lost.
    let mut signals = Signals::new().map_err(|source| StartError::Listen { addr, source })?;
    let stop = {
        let ids_slot = Arc::clone(&ids_slot);
        let failed = &mut failed;
        async move {
            let started = tokio::select! {
                started = started_rx => started,
                () = signals.recv() => return,
            };
            let ids = match started {
                Ok(Ok(ids)) => ids,
                Ok(Err(error)) => {
                    *failed = Some(error);
                    return;
                }
                Err(_) => return,
            };
            tracing::info!(%bound, worker_id = uidgen::UidGenerator::worker_id(&*ids.snowflake()), "serving");
            on_ready(bound);
            let probe = tokio::spawn(probe_store(Arc::clone(&ids)));
            *ids_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(ids);
            signals.recv().await;
            probe.abort();
            let _ = probe.await;
        }
    };
    accept_loop(listener, &limits, Arc::clone(&app), stop)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    if let Some(error) = failed {
        return Err(error);
    }
    // The router holds the Ids too: drop it, so the last handle is dropped below.
    drop(app);
    let ids = ids_slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(ids) = ids {
        // Store calls block: off the runtime's threads.
        let _ = tokio::task::spawn_blocking(move || {
            ids.give_back();
            // The last handle: dropping it releases the worker ID with its exact mark.
            drop(ids);
        })
        .await;
    }
    Ok(())
}

/// SIGTERM and SIGINT, listened for from creation on.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                term: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next SIGTERM or SIGINT (one that came since `new` counts).
    async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
