//! uidgen's ID service: one [`axum::Router`] that answers Meituan Leaf's and Didi Tinyid's
//! routes (their clients work unchanged), a native API with batches and ranges, bearer
//! tokens per tag, `/healthz`, `/readyz` and Prometheus `/metrics`; `uidgen serve` runs it.
//!
//! | route | answer |
//! |---|---|
//! | `GET /v1/snowflake?count=N` | `{"count":N,"ids":[…],"ids_str":["…"]}`, or one ID a line with `Accept: text/plain` |
//! | `GET /v1/segment/{tag}?count=N` | the same, with `"tag"` |
//! | `POST /v1/segment/{tag}/range?count=N` | `{"tag","count","first","last","first_str","last_str"}`: taken from the store, used by no one else |
//! | `GET /v1/decode/{id}` | the ID's time, worker ID and sequence in this service's layout |
//! | `GET /api/segment/get/{key}`, `/api/snowflake/get/{key}` | Leaf: a decimal |
//! | `GET /decodeSnowflakeId?snowflakeId=N` | Leaf: `{"workerId","sequenceId","timestamp"}` as strings |
//! | `/tinyid/id/nextId`, `nextIdSimple`, `nextSegmentId`, `nextSegmentIdSimple` | Tinyid's bodies; `bizType`, `token`, `batchSize` |
//! | `/healthz`, `/readyz`, `/metrics` | alive; lease, ring and store ready (503 naming why not); Prometheus |
//!
//! Errors are never a `0` or an empty 200: 400 names the parameter and its limit, 401/403
//! are tokens, 404 an unknown tag, 503 a store or lease in trouble.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = uidgen_server::Config::load(None, std::env::vars())?;
//! uidgen_server::run(config, |addr| println!("listening on {addr}")).await?;
//! # Ok(()) }
//! ```

/// This crate's version (the whole workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit this build is made from (`UIDGEN_COMMIT` at build time, else the
/// checkout's, else `unknown`).
pub const COMMIT: &str = env!("UIDGEN_COMMIT");

mod batch_pool;
mod config;
mod error;
mod ids;
mod listen;
mod metrics;
mod route_table;
mod routes;
mod tokens;

pub use config::{
    Config, ConfigError, Limits, PeriodTag, ResidueTag, CREATE_TAGS_GONE, DEFAULT_LISTEN,
    DEFAULT_MAX_COUNT, ENV_VARIABLES, MAX_HEAD_BYTES, MAX_MAX_COUNT, MAX_RESIDUE_STORES,
    MAX_URI_BYTES,
};
pub use error::ApiError;
pub use ids::{Ids, StartError, MAX_SERVED_TAGS};
pub use listen::{run, serve};
pub use routes::router;
pub use tokens::{Access, Tokens, MAX_TOKEN_LEN, MIN_TOKEN_LEN};
pub use tokens::{OPAQUE_GRANT, SNOWFLAKE_GRANT};
