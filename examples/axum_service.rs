//! One generator shared by every handler of an axum service.
//!
//! `next_uid_async` waits on the runtime (never blocking a worker thread) if the ring is
//! momentarily empty. Run: `cargo run -p uidgen --example axum_service --features tokio`,
//! then `curl 127.0.0.1:3000/id` or `curl '127.0.0.1:3000/ids?n=5'`.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use uidgen::{CachedUidGenerator, UidGenerator};

/// The service's routes, sharing `generator`.
pub fn app(generator: Arc<CachedUidGenerator>) -> Router {
    Router::new()
        .route("/id", get(one_id))
        .route("/ids", get(many_ids))
        .with_state(generator)
}

async fn one_id(State(generator): State<Arc<CachedUidGenerator>>) -> Result<String, StatusCode> {
    generator
        .next_uid_async()
        .await
        .map(|id| id.to_string())
        .map_err(|_| StatusCode::SERVICE_UNAVAILABLE)
}

#[derive(serde::Deserialize)]
struct Count {
    n: usize,
}

/// Up to 1,000 IDs, one a line.
async fn many_ids(
    State(generator): State<Arc<CachedUidGenerator>>,
    Query(Count { n }): Query<Count>,
) -> Result<String, (StatusCode, String)> {
    if !(1..=1000).contains(&n) {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("n = {n}: ask for 1 to 1000 IDs"),
        ));
    }
    let mut lines = String::new();
    for _ in 0..n {
        let id = generator
            .next_uid_async()
            .await
            .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
        lines.push_str(&id.to_string());
        lines.push('\n');
    }
    Ok(lines)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // In a real service the worker ID comes from a registry (see `embedded_registry`).
    let generator = Arc::new(CachedUidGenerator::builder().worker_id(1).build()?);
    println!("worker {} ready", generator.worker_id());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app(generator)).await?;
    Ok(())
}
