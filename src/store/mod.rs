//! The databases that worker registries (and, later, leases and segments) keep their
//! state in: one module per engine, and the errors they share.
//!
//! Every network step has a bound, name resolution included; every error names the store
//! and what to do; no error, `Debug` or log output shows a password.

mod driver;
pub(crate) mod guard;
pub(crate) mod lease;
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
mod net;
mod open;
#[cfg(test)]
mod race_tests;
pub(crate) mod segment;
#[cfg(any(feature = "mysql", feature = "postgres", feature = "etcd"))]
mod session;
#[cfg(any(feature = "sqlite", feature = "mysql", feature = "postgres"))]
pub(crate) mod sql;
#[cfg(all(
    feature = "tls",
    any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd",
        feature = "zookeeper"
    )
))]
mod tls;
mod url;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) mod versioned;

/// Why a TLS handshake failed, if `err` is such a failure (the rustls error inside it).
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd"
))]
pub(crate) fn tls_failure(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    #[cfg(feature = "tls")]
    return tls::failure(err);
    #[cfg(not(feature = "tls"))]
    {
        let _ = err;
        None
    }
}

#[cfg(feature = "etcd")]
pub use self::etcd::{EtcdLeaseStore, EtcdSegmentStore};
#[cfg(feature = "mysql")]
pub use self::mysql::{
    MySqlLeaseStore, MySqlSegmentStore, MYSQL_LEASE_SCHEMA, MYSQL_SEGMENT_SCHEMA,
};
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
pub use self::net::redact_url;
#[cfg(feature = "postgres")]
pub use self::postgres::{
    PostgresLeaseStore, PostgresSegmentStore, POSTGRES_LEASE_SCHEMA, POSTGRES_SEGMENT_SCHEMA,
};
#[cfg(feature = "redis")]
pub use self::redis::{RedisLeaseStore, RedisSegmentStore};
#[cfg(feature = "sqlite")]
pub use self::sqlite::{SqliteLeaseStore, SqliteSegmentStore, SQLITE_SEGMENT_SCHEMA};
pub use self::url::{StoreUrl, ACCEPTED_STORE_URLS};
#[cfg(feature = "zookeeper")]
pub use self::zookeeper::{
    Handover, LeafFleet, LeafWorker, ZooKeeperLeaseStore, ZooKeeperSegmentStore, LEAF_EPOCH_MS,
    LEAF_FENCE_MS, LEAF_HEARTBEAT, LEAF_MAX_WORKER_ID, MIN_SILENCE, UIDGEN_LEAF_ADDRESS,
};

/// Every engine, declared once: its [`StoreKind`] variant, its name in messages, the
/// crate feature that builds it, the URL schemes that name it, and its folder (whose
/// `driver.rs` opens its stores). From this one list come the folder's `mod` line,
/// `StoreKind` with its `name` and `feature`, the schemes `StoreUrl` accepts
/// (`SCHEMES`), and the drivers `open.rs` picks from (`DRIVERS`): adding an engine is
/// its folder, its feature in `Cargo.toml` and a line in `engines!` below.
macro_rules! engines {
    ($(
        $(#[$doc:meta])*
        $kind:ident: $name:literal, feature $feature:literal, schemes [$($scheme:literal),+],
            folder $folder:ident;
    )+) => {
        $(
            #[cfg(feature = $feature)]
            pub(crate) mod $folder;
        )+

        /// Which engine a store is: said by the store itself, never worked out from its
        /// text.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum StoreKind {
            $($(#[$doc])* $kind,)+
            /// A store implemented outside this crate.
            Other,
        }

        impl StoreKind {
            /// The engine's name, as messages give it: `SQLite`, `MySQL`, `PostgreSQL`,
            /// `Redis`, `etcd`, `ZooKeeper` (`custom` for [`StoreKind::Other`]).
            pub fn name(self) -> &'static str {
                match self {
                    $(StoreKind::$kind => $name,)+
                    StoreKind::Other => "custom",
                }
            }

            /// The crate feature that builds the engine (`None` for
            /// [`StoreKind::Other`]).
            pub fn feature(self) -> Option<&'static str> {
                match self {
                    $(StoreKind::$kind => Some($feature),)+
                    StoreKind::Other => None,
                }
            }
        }

        /// The schemes a store URL may start with, and their engines (built or not: a
        /// URL of an engine this build lacks is refused naming its feature).
        pub(crate) const SCHEMES: &[(&str, StoreKind)] = &[$($(($scheme, StoreKind::$kind),)+)+];

        /// The engines this build has.
        const DRIVERS: &[&driver::Driver] = &[$(
            #[cfg(feature = $feature)]
            &$folder::DRIVER,
        )+];
    };
}

engines! {
    /// The embedded SQLite file.
    Sqlite: "SQLite", feature "sqlite", schemes ["sqlite"], folder sqlite;
    /// MySQL or MariaDB.
    MySql: "MySQL", feature "mysql", schemes ["mysql", "mariadb"], folder mysql;
    /// PostgreSQL.
    Postgres: "PostgreSQL", feature "postgres", schemes ["postgres", "postgresql"], folder postgres;
    /// Redis.
    Redis: "Redis", feature "redis", schemes ["redis", "rediss"], folder redis;
    /// etcd (a consensus store).
    Etcd: "etcd", feature "etcd", schemes ["etcd", "etcds"], folder etcd;
    /// ZooKeeper (a consensus store).
    ZooKeeper: "ZooKeeper", feature "zookeeper", schemes ["zookeeper", "zookeepers"], folder zookeeper;
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `name` can be pasted into SQL as a table name as it is: letters, digits and
/// `_`, not starting with a digit, at most 64 bytes.
pub(crate) fn is_plain_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

/// A table name that can be pasted into SQL, else an error naming the rule.
#[cfg(any(feature = "sqlite", feature = "mysql", feature = "postgres"))]
pub(crate) fn check_table_name(store: &'static str, name: &str) -> Result<(), StoreError> {
    if is_plain_identifier(name) {
        return Ok(());
    }
    Err(StoreError::InvalidName {
        store,
        what: "table name",
        name: name.to_owned(),
        rule: "use letters, digits and _ only, not starting with a digit, at most 64",
    })
}

use std::path::PathBuf;
use std::time::Duration;

/// Whether a URL query parameter (or any key) named `key` may carry a credential, so its
/// value must never be shown: its name contains `pass`, `pwd`, `secret`, `token`, `key`,
/// `auth` or `credential`, in any case.
///
/// ```
/// assert!(uidgen::is_credential_key("Password"));
/// assert!(uidgen::is_credential_key("api_token"));
/// assert!(!uidgen::is_credential_key("ssl-mode"));
/// ```
pub fn is_credential_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "secret",
        "token",
        "key",
        "auth",
        "credential",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// The cause of a store error: the driver's or the operating system's own error.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store could not be used. Messages name the store, where it is (never with a
/// password) and what to do; the driver's own error is the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL could not be read. `url` is shown with any password replaced by `***`, or
    /// not at all when it cannot be parsed well enough to find the password.
    #[error("invalid {store} URL {url}: {reason} (expected {expected})")]
    InvalidUrl {
        /// The kind of store.
        store: &'static str,
        /// The URL, redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
        /// The form expected.
        expected: &'static str,
    },
    /// The host name could not be resolved.
    #[error("cannot resolve the {store} server's host name {host:?}")]
    Resolve {
        /// The kind of store.
        store: &'static str,
        /// The host name.
        host: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing answered at the address, or the connection broke.
    #[error("cannot reach the {store} server at {host}:{port}")]
    Unreachable {
        /// The kind of store.
        store: &'static str,
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The operating system's or driver's error.
        #[source]
        source: Cause,
    },
    /// A step did not finish within its bound.
    #[error(
        "the {store} server at {host}:{port} did not finish {step} within {timeout:?}{}",
        match *step {
            "resolving the host name" => " (is DNS reachable?)",
            "connecting" => " (is the host up and the port open?)",
            _ => " (a lock held by another session, such as LOCK TABLES, or an overloaded server)",
        }
    )]
    Timeout {
        /// The kind of store.
        store: &'static str,
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// What it was doing.
        step: &'static str,
        /// The bound.
        timeout: Duration,
    },
    /// The server refused the user name or password.
    #[error("access denied for user {user:?} at the {store} server {host}:{port}: wrong user name or password")]
    AccessDenied {
        /// The kind of store.
        store: &'static str,
        /// The user.
        user: String,
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The server's error.
        #[source]
        source: Cause,
    },
    /// The TLS handshake failed: the server's certificate is not signed by a trusted CA,
    /// is not for the URL's host name, or the server does not speak TLS there.
    #[error(
        "TLS with the {store} server at {host}:{port} failed: {reason} (check the CA file \
         the URL names, and that its host name is one the server's certificate is for)"
    )]
    Tls {
        /// The kind of store.
        store: &'static str,
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// Why, in the TLS library's words.
        reason: String,
        /// The driver's error.
        #[source]
        source: Cause,
    },
    /// The user logged in but may not use the database.
    #[error(
        "user {user:?} may not use database {database:?} at the {store} server {host}:{port}: \
         grant it access (GRANT ... ON {database}.* TO ...) or name another database"
    )]
    NoDatabaseAccess {
        /// The kind of store.
        store: &'static str,
        /// The user.
        user: String,
        /// The database.
        database: String,
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The server's error.
        #[source]
        source: Cause,
    },
    /// The table does not exist.
    #[error("table {table} does not exist in {location}: {fix}")]
    MissingTable {
        /// The table.
        table: String,
        /// The database, without password.
        location: String,
        /// How to create it.
        fix: &'static str,
    },
    /// A table name or key prefix that cannot be used as it is.
    #[error("{store}: {what} {name:?} cannot be used: {rule}")]
    InvalidName {
        /// The kind of store.
        store: &'static str,
        /// What the name is for (`table name`, `key prefix`).
        what: &'static str,
        /// The name given.
        name: String,
        /// What a name must look like.
        rule: &'static str,
    },
    /// The store answered with something this crate did not expect (another program's
    /// data under the same table or keys, or an incompatible server).
    #[error("{store} at {location} gave an unexpected answer while {step}: {what}")]
    Unexpected {
        /// The kind of store.
        store: &'static str,
        /// Where, without password.
        location: String,
        /// What it was doing.
        step: &'static str,
        /// What was wrong with the answer, and what to check.
        what: String,
    },
    /// The file of an embedded store cannot be used.
    #[error("embedded store {}: {problem}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What could not be done.
        problem: String,
        /// The driver's or operating system's error, if any.
        #[source]
        source: Option<Cause>,
    },
    /// A segment tag that does not exist in the store. Its message names the library's
    /// ways to create it; the `uidgen` command names its own.
    #[error(
        "tag {tag:?} does not exist in {location}: create it with \
         `SegmentStore::create(tag, first_id, step, description)`, or with \
         `create_missing(first_id, step)` on the generator's builder; if it existed before \
         (a store restored or emptied), first_id must be above the last ID it handed out"
    )]
    MissingTag {
        /// The kind of store.
        store: &'static str,
        /// The store, as its `describe` says it (never with a password).
        location: String,
        /// The tag.
        tag: String,
    },
    /// A segment request the store cannot carry out as asked (a step or first ID out of
    /// range, a counter that would pass the largest `BIGINT`).
    #[error("{store}: tag {tag:?}: {problem}")]
    InvalidSegment {
        /// The kind of store.
        store: &'static str,
        /// The tag.
        tag: String,
        /// What is wrong, with the limit.
        problem: String,
    },
    /// The store lost data that IDs already handed out depend on (its identity changed or
    /// vanished, a counter or a lease row went back or away), or creating a tag would
    /// repeat IDs it handed out: nothing more is taken from it that could repeat an ID.
    /// `what` says what was found and what to do (`uidgen store repair`, after a check).
    #[error("{location}: {what}")]
    DataLost {
        /// The kind of store.
        store: &'static str,
        /// The store, as its records' place says it (never with a password).
        location: String,
        /// What was found, the highest IDs or marks known, and what to do.
        what: String,
    },
    /// Any other failure of the store.
    #[error("{store} error at {location} while {step}")]
    Other {
        /// The kind of store.
        store: &'static str,
        /// Where, without password.
        location: String,
        /// What it was doing.
        step: &'static str,
        /// The driver's error.
        #[source]
        source: Cause,
    },
}
