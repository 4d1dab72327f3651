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
//!
//! # Where things live
//!
//! `ARCHITECTURE.md` in the repository follows a request through these; no module imports
//! one that imports it back (`scripts/check-module-cycles --strict`).
//!
//! | module | owns |
//! |---|---|
//! | `config/` | the settings: the schema, every setting's three spellings (`SETTINGS`), the layers' loader, the checks, the errors |
//! | `tokens` | bearer tokens, the grant names and their errors |
//! | `ids` | the ID sources built from a config, and `/readyz`'s view of them |
//! | `route_table` | a leaf: every route's template, the index metrics and the access log label by |
//! | `routes/` | the router, the fast path of the single-ID routes, the handlers, the guard, OpenAPI |
//! | `metrics` | the Prometheus exposition |
//! | `listen` | the listener, graceful shutdown, reloads |
//! | `batch_pool` | large opaque batches on low-priority threads |
//! | `error` | the JSON errors |

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
    env_variables, Config, ConfigError, Limits, PeriodTag, ResidueTag, Setting, SettingKind,
    CREATE_TAGS_GONE, DEFAULT_LISTEN, DEFAULT_MAX_COUNT, MAX_HEAD_BYTES, MAX_MAX_COUNT,
    MAX_RESIDUE_STORES, MAX_URI_BYTES, SETTINGS,
};
pub use error::ApiError;
pub use ids::{Ids, StartError, MAX_SERVED_TAGS};
pub use listen::{run, serve};
pub use routes::router;
pub use tokens::{Access, Tokens, MAX_TOKEN_LEN, MIN_TOKEN_LEN};
pub use tokens::{OPAQUE_GRANT, SNOWFLAKE_GRANT};
