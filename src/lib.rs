//! Unique 64-bit IDs at memory speed, for Rust services.
//!
//! uidgen makes snowflake-style IDs — `sign | time | worker | sequence` in one `u64` —
//! the way Baidu's UidGenerator does: a padding thread keeps a lock-free ring full of
//! pre-built IDs, so taking one is a single atomic step with no lock, no clock read and
//! no allocation. IDs are positive as `i64` (SQL `BIGINT`), increase with time, and are
//! never repeated by one worker ID.
//!
//! ```
//! # #[cfg(feature = "sqlite")] {
//! use uidgen::{CachedUidGenerator, UidGenerator};
//!
//! # let dir = std::env::temp_dir().join(format!("uidgen-crate-doc-{}", std::process::id()));
//! # std::env::set_var("UIDGEN_WORKER_DB", dir.join("workers.sqlite3"));
//! // A worker ID leased from the embedded store (feature `sqlite`), given back on drop.
//! let generator = CachedUidGenerator::builder().embedded()?.build()?;
//! let id = generator.next_uid()?;
//! let parts = generator.parse_uid(id)?;
//! println!("{parts}"); // {"UID":"…","timestamp":"…","workerId":"0","sequence":"0"}
//! # drop(generator);
//! # std::fs::remove_dir_all(dir).ok();
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Which generator
//!
//! - [`CachedUidGenerator`]: the hot path. Takes pre-built IDs from a ring; under load it
//!   borrows future ticks rather than wait for the clock ([`time_ahead`](CachedUidGenerator::time_ahead)).
//!   Costs one thread and 8 bytes a ring slot.
//! - [`DefaultUidGenerator`]: each ID computed from the clock under a lock; its timestamp
//!   is its creation time; throughput is capped at one tick's sequence per tick. Chooses
//!   what to do when the clock goes backwards with a [`RollbackStrategy`].
//!
//! - [`SegmentGenerator`]: segment mode (Meituan Leaf's): dense, increasing IDs per tag
//!   with no clock in them, from ranges of a counter in a [`SegmentStore`] (SQLite, MySQL,
//!   PostgreSQL, Redis), handed out with one `fetch_add`; a shared thread fetches ahead.
//!
//! The time-based two implement [`UidGenerator`], also through `&T`, `Box<T>` and `Arc<T>`,
//! so share one generator across threads with an `Arc`. All three implement [`IdSource`].
//!
//! # In async code
//!
//! `next_uid` may block its thread (waiting for a tick, or for the ring to be refilled).
//! In a tokio service use [`try_next_uid`](UidGenerator::try_next_uid), which never
//! blocks, or, with the `tokio` feature, `next_uid_async().await`, which waits on the
//! runtime. `examples/axum_service.rs` shares one generator across handlers.
//!
//! # Worker IDs
//!
//! Every ID carries its worker ID, and two processes using the same worker ID at once
//! make the same IDs. Lease them: a builder's
//! [`embedded()`](CachedUidGeneratorBuilder::embedded) (feature `sqlite`: a SQLite file
//! at the user's data path, one machine) or [`store(url)`](CachedUidGeneratorBuilder::store)
//! (MySQL, PostgreSQL, Redis, a file, or any [`LeaseStore`]) takes the lowest free worker
//! ID in one call; the generator starts above every ID it made before, renews the
//! lease, and gives the worker ID back when dropped, so launches never run out.
//!
//! ```no_run
//! # #[cfg(feature = "postgres")] {
//! use uidgen::{DefaultUidGenerator, UidGenerator};
//!
//! let generator = DefaultUidGenerator::builder()
//!     .store("postgres://app@db.internal/ids")?
//!     .build()?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! In Kubernetes, a StatefulSet pod's ordinal can be the worker ID ([`PodOrdinal`]);
//! [`FixedWorkerId`] is one you assign by hand. UidGenerator's one `WORKER_NODE` row per
//! launch is there too ([`EmbeddedWorkerIdAssigner`], [`MySqlWorkerIdAssigner`]): every
//! launch uses up a worker ID, so they refuse a layout with fewer than
//! [`MIN_ROW_PER_LAUNCH_WORKER_BITS`] worker bits unless allowed explicitly.
//!
//! # Layouts
//!
//! [`BitsAllocator`] owns the split of the 63 bits; [`Preset`] has UidGenerator's,
//! Twitter's and Instagram's. Bad settings are a [`ConfigError`] naming the field, the
//! value and the limit, when the layout is built — never a wrong ID later.
//!
//! # IDs as strings
//!
//! [`IdFormat`] writes and reads an ID in decimal, hex, base62 or Crockford base32; the
//! fixed-width three sort as the numbers do. [`decode_any`] reads any of them, and
//! [`DecodeError`] says what is wrong with a string that is none.
//!
//! # Features
//!
//! | feature | brings |
//! |---|---|
//! | (none, the default) | the layouts and both generators: no database, no async runtime |
//! | `tokio` | `next_uid_async` on both generators; an async `assign` on the registries |
//! | `serde` | `Serialize`/`Deserialize` for [`UidParts`] and [`TimeUnit`]; [`serde_as`]: IDs as strings |
//! | `sqlite` | [`EmbeddedWorkerIdAssigner`], [`SqliteLeaseStore`], [`SqliteSegmentStore`]; SQLite compiled in (no system library; a C compiler builds it) |
//! | `mysql` | [`MySqlWorkerIdAssigner`], `MySqlLeaseStore`, `MySqlSegmentStore` on `mysql_async` (pulls in `tokio`) |
//! | `postgres` | `PostgresLeaseStore`, `PostgresSegmentStore` on `tokio-postgres` (pulls in `tokio`) |
//! | `redis` | `RedisLeaseStore`, `RedisSegmentStore` on `redis`'s synchronous connection |
//! | `etcd` | `EtcdLeaseStore`, `EtcdSegmentStore` on `etcd-client` (gRPC on `tokio`); building it needs `protoc` and Google's `.proto` files (Debian: `protobuf-compiler libprotobuf-dev`) |
//! | `zookeeper` | `ZooKeeperLeaseStore`, `ZooKeeperSegmentStore` on `zookeeper-client` (on `tokio`): a lease is a ZooKeeper session |
//! | `tls` | TLS (rustls) to the network stores when the URL asks for it: `rediss://`, PostgreSQL's `sslmode` (`require`, `verify-ca`, `verify-full`), MySQL's `ssl-mode` (`REQUIRED`, `VERIFY_IDENTITY`), `etcds://`, `zookeepers://`, with a CA file parameter |
//! | `opaque` | [`OpaqueIds`]: public IDs that hide order, time and volume (FF1 with AES-256, written here on the `aes` crate and checked against NIST's vectors and against `fpe` in the tests) |
//!
//! # Where things live
//!
//! One folder per idea; a lower one never imports a higher one (`scripts/check-module-cycles
//! --strict`). `ARCHITECTURE.md` in the repository says more.
//!
//! | module | owns |
//! |---|---|
//! | `sync` | the one switch between std's and loom's atomics and threads |
//! | `clock`, `error`, `process` | clocks, the error types, this process's holder name |
//! | `layout/` | the bit layout, presets, parsing an ID back into its parts |
//! | `generator` | the [`UidGenerator`] and [`IdSource`] traits |
//! | `wait/` | take policies, the padder's doorbell, the one take loop |
//! | `store/` | the lease and segment store traits, the URL, the data-loss guard, one folder per engine |
//! | `worker/` | worker IDs: leases with time marks, `WORKER_NODE`, fixed IDs, pod ordinals |
//! | `snowflake/` | [`DefaultUidGenerator`], [`CachedUidGenerator`] with its ring and padding thread |
//! | `segment/` | [`SegmentGenerator`] and its chain of ranges, period and residue tags |
//! | `encode/` | string forms and serde helpers |
//! | `opaque/` | [`OpaqueIds`] (feature `opaque`) |
//!
//! The command-line tool is the separate `uidgen-cli` crate.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks
)]

#[cfg(all(uidgen_loom, not(feature = "loom")))]
compile_error!("--cfg uidgen_loom needs the `loom` feature (see loom-tests/)");

#[macro_use]
mod setters;
mod clock;
mod encode;
mod error;
mod generator;
mod layout;
mod migrate;
#[cfg(feature = "opaque")]
mod opaque;
mod process;
mod segment;
mod snowflake;
mod store;
mod sync;
mod wait;
mod worker;

pub use clock::{Clock, ManualClock, SystemClock};
/// `#[serde(with = "uidgen::serde_as::base62")]` and the like: `u64` IDs as strings
/// (feature `serde`).
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub use encode::serde_as;
pub use encode::{decode_any, DecodeError, Encoded, IdFormat, ParseFormatError, MAX_ENCODED_LEN};
pub use error::{ConfigError, InvalidUidReason, UidError};
pub use generator::{IdSource, UidGenerator};
pub use layout::{
    BitsAllocator, LayoutBuilder, Preset, TimeUnit, UidParts, JS_MAX_SAFE_INTEGER, TOTAL_BITS,
};
pub use migrate::{
    Guarantee, MigrationPlan, Needs, OldScheme, PlanError, SegmentPlan, TimeBasedPlan,
};
#[cfg(feature = "opaque")]
pub use opaque::{OpaqueError, OpaqueIds, MAX_KEY_VERSION, OPAQUE_KEY_LEN, OPAQUE_LEN};
#[cfg(not(uidgen_loom))]
pub use segment::{
    GiveBack, HeldRange, Period, PeriodSegmentGenerator, PeriodSegmentGeneratorBuilder,
    ResidueSegmentGenerator, ResidueSegmentGeneratorBuilder, SegmentError, SegmentGenerator,
    SegmentGeneratorBuilder, SegmentStats, DEFAULT_MAX_PREFETCH_DISTANCE, DEFAULT_MAX_STEP,
    DEFAULT_RANGE_LIFETIME, MAX_RESIDUE_MODULUS, PREFETCH_THREAD_NAME,
};
pub use snowflake::{
    CachedStats, CachedUidGenerator, CachedUidGeneratorBuilder, DefaultUidGenerator,
    DefaultUidGeneratorBuilder, PutRejectHandler, PutRejected, RejectedPut, RollbackStrategy,
    DEFAULT_ROLLBACK_ALLOWANCE, DEFAULT_WARN_BEFORE_END, PADDING_THREAD_NAME,
};
pub use store::guard::{
    data_loss_events, last_data_loss, remember_stores_in, RepairReport, REPAIR_MARGIN,
    WIPED_STORE_AHEAD, YOUNG_STORE,
};
pub use store::lease::{Acquired, IntoLeaseStore, LeaseRecord, LeaseRequest, LeaseStore};
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
pub use store::redact_url;
pub use store::segment::{
    check_segment_tag, SegmentStore, TagRecord, MAX_BASE_STEP, MAX_DESCRIPTION_LEN, MAX_TAG_LEN,
};
#[cfg(feature = "sqlite")]
pub use store::sqlite::default_store_memory_dir;
pub use store::{is_credential_key, Cause, StoreError, StoreKind, StoreUrl, ACCEPTED_STORE_URLS};
#[cfg(feature = "etcd")]
pub use store::{EtcdLeaseStore, EtcdSegmentStore};
#[cfg(feature = "zookeeper")]
pub use store::{
    Handover, LeafFleet, LeafWorker, ZooKeeperLeaseStore, ZooKeeperSegmentStore, LEAF_EPOCH_MS,
    LEAF_FENCE_MS, LEAF_HEARTBEAT, LEAF_MAX_WORKER_ID, MIN_SILENCE, UIDGEN_LEAF_ADDRESS,
};
#[cfg(feature = "mysql")]
pub use store::{MySqlLeaseStore, MySqlSegmentStore, MYSQL_LEASE_SCHEMA, MYSQL_SEGMENT_SCHEMA};
#[cfg(feature = "postgres")]
pub use store::{
    PostgresLeaseStore, PostgresSegmentStore, POSTGRES_LEASE_SCHEMA, POSTGRES_SEGMENT_SCHEMA,
};
#[cfg(feature = "redis")]
pub use store::{RedisLeaseStore, RedisSegmentStore};
#[cfg(feature = "sqlite")]
pub use store::{SqliteLeaseStore, SqliteSegmentStore, SQLITE_SEGMENT_SCHEMA};
pub use wait::{RejectedTake, TakeDecision, TakeRejectPolicy};
pub use worker::{
    holder_identity, FixedWorkerId, PodOrdinal, WorkerAssignment, WorkerIdAssigner, WorkerIdError,
    WorkerIdRange, WorkerIdUsage, WorkerLease, WorkerLeaseBuilder, DEFAULT_LEASE_TTL,
    MIN_ROW_PER_LAUNCH_WORKER_BITS,
};
#[cfg(feature = "sqlite")]
pub use worker::{EmbeddedWorkerIdAssigner, WORKER_DB_ENV};
#[cfg(feature = "mysql")]
pub use worker::{MySqlWorkerIdAssigner, DEFAULT_TABLE, DEFAULT_TIMEOUT, MYSQL_SCHEMA};
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub use worker::{NodeType, WorkerNode};

/// The repository README's examples, run as doctests so they cannot drift.
#[cfg(all(doctest, feature = "sqlite"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The ring buffer, public only for uidgen's loom model checks (`loom-tests/`).
#[cfg(uidgen_loom)]
#[doc(hidden)]
pub use snowflake::ring;

/// The doorbell that wakes the padding and prefetch threads, public only for uidgen's
/// loom model checks.
#[cfg(uidgen_loom)]
#[doc(hidden)]
pub use wait::doorbell;

/// The lock-free chain of ranges a [`SegmentGenerator`] hands its IDs out of, for code
/// that leases ranges elsewhere and hands them out itself (`uidgen-client` does, from
/// `uidgen serve`): one atomic add per ID, and a seal that says exactly which IDs were
/// not handed out.
///
/// ```
/// use uidgen::segment_chain::Chain;
///
/// let chain = Chain::new();
/// chain.publish(100, 103).unwrap(); // IDs 100, 101 and 102
/// assert_eq!(chain.take(|| {}), Some(100));
/// let left = chain.seal();
/// assert_eq!((left[0].next, left[0].end), (101, 103)); // 101 and 102 can go back
/// assert_eq!(chain.take(|| {}), None);
/// ```
pub use segment::chain as segment_chain;
