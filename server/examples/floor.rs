//! The HTTP floor on this machine: the same stack as `uidgen serve` (tokio's
//! multi-thread runtime, hyper's HTTP/1 connection builder, an axum 0.8 `Router`, no-delay
//! sockets) with one handler that returns a constant short body and nothing else: no
//! generator, no metrics, no timeout or body-limit layers. `scripts/loadtest` measures it
//! first, so the service's figures can be read against what HTTP alone costs here.
//!
//! ```text
//! cargo run --release -p uidgen-server --example floor -- 127.0.0.1:0
//! ```
//!
//! Prints `listening on http://ADDR` once bound; runs until killed.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;
use tokio::net::TcpListener;

/// The body every request gets: about as long as one decimal snowflake ID.
const BODY: &str = "1234567890123456789";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(raw), None) = (args.next(), args.next()) else {
        eprintln!("usage: floor ADDR (for example 127.0.0.1:0; port 0 picks a free one)");
        return ExitCode::from(2);
    };
    let addr: SocketAddr = match raw.parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("floor: {raw:?} is not a socket address (like 127.0.0.1:8081): {e}");
            return ExitCode::from(2);
        }
    };
    // As `uidgen serve` builds its runtime.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("floor")
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("floor: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(addr)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(addr: SocketAddr) -> Result<(), String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address bound for {addr}: {e}"))?;
    let app = Router::new().fallback(|| async { BODY });
    // The connection settings uidgen-server's `serve` uses.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(5))
        .max_buf_size(64 * 1024);
    println!("listening on http://{bound}");
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("floor: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}
