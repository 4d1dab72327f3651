//! The databases that worker registries (and, later, leases and segments) keep their
//! state in: one module per engine, and the errors they share.
//!
//! Every network step has a bound, name resolution included; every error names the store
//! and what to do; no error, `Debug` or log output shows a password.

#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
#[cfg(feature = "mysql")]
mod url;

#[cfg(feature = "mysql")]
pub use self::url::redact_url;

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
