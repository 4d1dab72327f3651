//! Serving the router: a connection limit, a time limit on request headers, graceful
//! shutdown (stop accepting, finish what is in flight, then give back what is held).

use crate::ids::{Ids, StartError};
use crate::routes::router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

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
    let app = router(Arc::clone(&ids));
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout())
        .max_buf_size(MAX_HEAD_BYTES);
    let probe = tokio::spawn(probe_store(Arc::clone(&ids)));
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
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
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
    probe.abort();
    let _ = probe.await;
    Ok(())
}

/// Reads the store every second, for `/readyz` and the store latency metric.
async fn probe_store(ids: Arc<Ids>) {
    loop {
        let probing = Arc::clone(&ids);
        let _ = tokio::task::spawn_blocking(move || probing.probe_store()).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs the service as `uidgen serve` does: starts it (store, worker ID, tags), listens,
/// serves until SIGTERM or SIGINT, then gives every tag's unused tail back and releases
/// the worker ID with its exact time mark. `on_listening` hears the address bound (port 0
/// picks a free one).
pub async fn run(
    config: crate::Config,
    on_listening: impl FnOnce(std::net::SocketAddr),
) -> Result<(), StartError> {
    let addr = config.listen;
    let ids = tokio::task::spawn_blocking(move || Ids::start(config))
        .await
        .map_err(|_| StartError::Listen {
            addr,
            source: std::io::Error::other("start-up panicked"),
        })??;
    let ids = Arc::new(ids);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| StartError::Listen { addr, source })?;
    tracing::info!(%bound, worker_id = uidgen::UidGenerator::worker_id(ids.snowflake()), "serving");
    on_listening(bound);
    serve(listener, Arc::clone(&ids), signal())
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    // Store calls block: off the runtime's threads.
    let _ = tokio::task::spawn_blocking(move || {
        ids.give_back();
        // The last handle: dropping it releases the worker ID with its exact mark.
        drop(ids);
    })
    .await;
    Ok(())
}

/// SIGTERM or SIGINT.
async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
