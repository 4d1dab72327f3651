//! Serving the router: a connection limit, a time limit on request headers, graceful
//! shutdown (stop accepting, finish what is in flight, then give back what is held).

use crate::config::Limits;
use crate::config::MAX_HEAD_BYTES;
use crate::ids::{Ids, StartError};
use crate::routes::{guarded, Guard, Served};
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
use tower::util::Either;
use tower::ServiceExt;

/// Serves `ids` on `listener` until `shutdown` completes, then stops accepting, lets
/// in-flight requests finish (up to the configured grace) and returns. Also keeps the
/// readiness probe of the store running.
pub async fn serve(
    listener: TcpListener,
    ids: Arc<Ids>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = ids.config.limits.clone();
    let app: Arc<OnceLock<Guard<Served>>> = Arc::new(OnceLock::from(guarded(Arc::clone(&ids))));
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
    app: Arc<OnceLock<Guard<Served>>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let starting = starting();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(MAX_HEAD_BYTES * 4);
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
            let routes = match app.get() {
                Some(app) => Either::Left(app.clone()),
                None => Either::Right(starting.clone()),
            };
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

/// `Ids::start`, tried again every second while the store cannot be reached, for up to
/// `wait_for_store_secs` (routes other than /healthz answer 503 "starting" meanwhile).
async fn start_waiting(
    config: crate::Config,
    addr: std::net::SocketAddr,
) -> Result<Ids, StartError> {
    let begun = tokio::time::Instant::now();
    let deadline = begun + Duration::from_secs(config.wait_for_store_secs);
    // A fixed worker ID (a restarted StatefulSet pod) may still be leased by the process
    // before it: its lease lapses within a TTL.
    let fixed = config.worker_id.is_some() || config.pod_ordinal;
    let lapsed = begun + Duration::from_millis(config.lease_ttl_ms) + Duration::from_secs(2);
    loop {
        let attempt = config.clone();
        let started = tokio::task::spawn_blocking(move || Ids::start(attempt))
            .await
            .unwrap_or_else(|_| {
                Err(StartError::Listen {
                    addr,
                    source: std::io::Error::other("start-up panicked"),
                })
            });
        match started {
            Err(e) if store_unreachable(&e) && tokio::time::Instant::now() < deadline => {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                tracing::warn!(error = %e, left_secs = left.as_secs(), "the store cannot be reached yet; trying again in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(StartError::WorkerId(e @ uidgen::WorkerIdError::WorkerIdHeld { .. }))
                if fixed && tokio::time::Instant::now() < lapsed =>
            {
                tracing::warn!(error = %e, "the fixed worker ID is still leased; trying again in 1 s, until its lease lapses");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            other => return other,
        }
    }
}

/// Whether `error` comes from a store that could not be reached (refused, no such host,
/// no answer in time), which waiting may cure; not a store that answered "no".
fn store_unreachable(error: &StartError) -> bool {
    // The store's error is held by value here (a transparent one is not in the chain of
    // sources); anywhere else, it is looked for among the sources.
    let held = match error {
        StartError::WorkerId(uidgen::WorkerIdError::Store(store)) => Some(store),
        StartError::Segment { source, .. } => match &**source {
            uidgen::SegmentError::Store(store) => Some(store),
            _ => None,
        },
        _ => None,
    };
    let mut found = held;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let (None, Some(e)) = (found, source) {
        found = e.downcast_ref::<uidgen::StoreError>();
        source = e.source();
    }
    matches!(
        found,
        Some(
            uidgen::StoreError::Unreachable { .. }
                | uidgen::StoreError::Resolve { .. }
                | uidgen::StoreError::Timeout { .. }
        )
    )
}

/// Tells systemd (`NOTIFY_SOCKET`, set for `Type=notify` units) how the service stands;
/// nothing without it.
fn supervisor(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!(error = %e, "cannot tell systemd (NOTIFY_SOCKET) how the service stands");
    }
}

/// The one line an operator reads first: what runs, from which commit, on which store
/// (never its password), with which layout, worker ID and tags.
fn log_start(ids: &Ids, bound: std::net::SocketAddr) {
    let config = &ids.config;
    let store = match config.store.as_deref() {
        Some(url) => uidgen::StoreUrl::parse(url).map_or_else(
            |_| "a store URL that cannot be read".to_owned(),
            |url| format!("{} {url}", url.kind().name()),
        ),
        None => "the embedded SQLite store".to_owned(),
    };
    let tags: Vec<&str> = config
        .tags
        .iter()
        .map(String::as_str)
        .chain(config.period_tags.iter().map(|t| t.tag.as_str()))
        .chain(config.residue_tags.iter().map(|t| t.tag.as_str()))
        .collect();
    tracing::info!(
        version = crate::VERSION,
        commit = crate::COMMIT,
        listen = %bound,
        store = %store,
        layout = %config.layout,
        worker_id = uidgen::UidGenerator::worker_id(&*ids.snowflake()),
        tags = ?tags,
        tokens = !config.tokens.is_empty(),
        "serving"
    );
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
/// `on_ready` with the address bound (port 0 picks a free one). It serves until SIGTERM,
/// SIGINT or SIGQUIT (SIGHUP reads the tokens and keys files again), then gives every
/// tag's unused tail back and releases the worker ID with its exact time mark. A start
/// that fails (a store that cannot be reached past `wait_for_store_secs`, no free worker
/// ID) stops it with that error.
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
    let app: Arc<OnceLock<Guard<Served>>> = Arc::default();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<Result<Arc<Ids>, StartError>>();
    let setting = Arc::clone(&app);
    tokio::spawn(async move {
        let started = start_waiting(config, addr).await;
        let started = started.map(|ids| {
            let ids = Arc::new(ids);
            let _ = setting.set(guarded(Arc::clone(&ids)));
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
                () = signals.stop(None) => return,
            };
            let ids = match started {
                Ok(Ok(ids)) => ids,
                Ok(Err(error)) => {
                    *failed = Some(error);
                    return;
                }
                Err(_) => return,
            };
            log_start(&ids, bound);
            on_ready(bound);
            // systemd (Type=notify): ready now, as /readyz would say.
            supervisor(&[
                sd_notify::NotifyState::Ready,
                sd_notify::NotifyState::Status(&format!("serving on {bound}")),
            ]);
            let probe = tokio::spawn(probe_store(Arc::clone(&ids)));
            let serving = Arc::clone(&ids);
            *ids_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(ids);
            signals.stop(Some(&serving)).await;
            supervisor(&[
                sd_notify::NotifyState::Stopping,
                sd_notify::NotifyState::Status("stopping: finishing requests, giving ranges back"),
            ]);
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

/// SIGTERM, SIGINT, SIGQUIT and SIGHUP, listened for from creation on.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    quit: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

/// What a signal asks.
enum Signal {
    /// SIGTERM, SIGINT or SIGQUIT: stop gracefully.
    Stop,
    /// SIGHUP: read the tokens and keys files again.
    Reload,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                term: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
                quit: signal(SignalKind::quit())?,
                hangup: signal(SignalKind::hangup())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// The next signal (one that came since `new` counts).
    async fn recv(&mut self) -> Signal {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => Signal::Stop,
            _ = self.interrupt.recv() => Signal::Stop,
            _ = self.quit.recv() => Signal::Stop,
            _ = self.hangup.recv() => Signal::Reload,
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            Signal::Stop
        }
    }

    /// The next stop signal; a SIGHUP before it reloads `ids`, when there are any yet.
    async fn stop(&mut self, ids: Option<&Arc<Ids>>) {
        loop {
            match self.recv().await {
                Signal::Stop => return,
                Signal::Reload => match ids {
                    Some(ids) => reload(Arc::clone(ids)).await,
                    None => tracing::warn!("SIGHUP while starting: nothing to read again yet"),
                },
            }
        }
    }
}

/// Reads the tokens and keys files again (file reads: off the async threads), and logs
/// what came of it; never a token or a key.
async fn reload(ids: Arc<Ids>) {
    let done = tokio::task::spawn_blocking(move || ids.reload()).await;
    match done {
        Ok(done) if done.is_empty() => tracing::warn!(
            "SIGHUP: nothing to read again (tokens and keys from variables, or none configured)"
        ),
        Ok(done) => {
            for result in done {
                match result {
                    Ok(what) => tracing::info!("SIGHUP: {what}"),
                    Err(e) => tracing::warn!(error = %e, "SIGHUP: the old set keeps serving"),
                }
            }
        }
        Err(_) => {
            tracing::warn!("SIGHUP: reading the files again panicked; the old sets keep serving")
        }
    }
}
