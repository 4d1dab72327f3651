//! Worker IDs: which number this process puts in the worker field of every ID.
//!
//! As in UidGenerator, a worker ID is handed out once per launch and never reused: each
//! launch inserts a row into a `WORKER_NODE` table and takes its AUTO_INCREMENT id. Two
//! processes therefore never share a worker ID, and a restarted process never reuses one,
//! which is what makes the cached generator's borrowed future ticks safe.
//!
//! Assigners run once at start-up and hand back a plain `u64`; generators never touch
//! I/O or async code on the hot path.
//!
//! | assigner | where the table lives | feature |
//! |---|---|---|
//! | [`EmbeddedWorkerIdAssigner`] | a local SQLite file (the default: no server needed) | `sqlite` (default) |
//! | [`MySqlWorkerIdAssigner`] | MySQL 5.7+/8 or MariaDB 10+ (`schema.sql`) | `mysql` |
//! | [`FixedWorkerId`] | nowhere: you choose (tests, hand-assigned fleets) | always |

#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "mysql")]
pub use mysql::MySqlWorkerIdAssigner;
#[cfg(feature = "sqlite")]
pub use sqlite::EmbeddedWorkerIdAssigner;

use crate::bits::BitsAllocator;
use std::fmt;
use std::time::Duration;

/// Hands this process its worker ID, once, at start-up.
pub trait WorkerIdAssigner {
    /// A worker ID for this launch, checked against the layout's `max_worker_id`.
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError>;
}

/// A worker ID and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerAssignment {
    /// The worker ID.
    pub worker_id: u64,
    /// Where it came from, for people: the registry and its row.
    pub source: String,
}

impl fmt::Display for WorkerAssignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker ID {} from {}", self.worker_id, self.source)
    }
}

/// Why no worker ID could be assigned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerIdError {
    /// The registry handed out an ID the layout's worker bits cannot hold. Its row stays
    /// (IDs are never reused); the registry has run out for this layout.
    #[error(
        "worker ID {worker_id} from {source_name} exceeds max_worker_id {max_worker_id} \
         ({worker_bits} worker bits); the registry has used up this layout's worker IDs: \
         choose a layout with more worker bits"
    )]
    TooLarge {
        /// The ID handed out.
        worker_id: u64,
        /// The largest the layout holds.
        max_worker_id: u64,
        /// Worker bits of the layout.
        worker_bits: u32,
        /// The registry.
        source_name: String,
    },
    /// The database server could not be reached (or did not answer in time).
    #[error("cannot reach the MySQL server at {host}:{port}: {reason}")]
    Unreachable {
        /// Host from the URL.
        host: String,
        /// Port from the URL.
        port: u16,
        /// What went wrong, with the time limit when it was a time-out.
        reason: String,
    },
    /// The database URL could not be read.
    #[error("invalid database URL {url:?}: {reason} (expected mysql://user[:password]@host[:port]/database)")]
    InvalidUrl {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The server refused the user name or password.
    #[error(
        "access denied for user {user:?} at {host}:{port}: wrong user name or password ({message})"
    )]
    AccessDenied {
        /// User from the URL.
        user: String,
        /// Host from the URL.
        host: String,
        /// Port from the URL.
        port: u16,
        /// The server's words.
        message: String,
    },
    /// The `WORKER_NODE` table does not exist.
    #[error(
        "table {table} does not exist in {location}: run schema.sql from the uidgen repository \
         against it, or ask the assigner to create it (create_table(true), `--create-table`)"
    )]
    MissingTable {
        /// The table name.
        table: String,
        /// The database.
        location: String,
    },
    /// A table name that is not a plain SQL identifier.
    #[error("table name {0:?} is not a plain identifier (letters, digits and _, at most 64)")]
    InvalidTableName(String),
    /// The embedded database could not be opened or written.
    #[error("embedded worker registry at {path}: {message}")]
    Embedded {
        /// The database file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Any other database failure.
    #[error("database error at {location}: {message}")]
    Database {
        /// The database.
        location: String,
        /// What went wrong.
        message: String,
    },
}

/// A worker ID you choose: for tests, and for fleets whose IDs are assigned by hand.
///
/// Each ID must belong to one running process at a time, and a process restarted with
/// the same ID must not start until the clock has passed the ticks the last one used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWorkerId(pub u64);

impl WorkerIdAssigner for FixedWorkerId {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        check_fits(self.0, bits, "a fixed worker ID")?;
        Ok(WorkerAssignment {
            worker_id: self.0,
            source: "a fixed worker ID".into(),
        })
    }
}

/// Refuses an ID the layout cannot hold; the registry's row (if any) stays.
pub(crate) fn check_fits(
    worker_id: u64,
    bits: &BitsAllocator,
    source_name: &str,
) -> Result<(), WorkerIdError> {
    bits.check_worker_id(worker_id)
        .map_err(|_| WorkerIdError::TooLarge {
            worker_id,
            max_worker_id: bits.max_worker_id(),
            worker_bits: bits.worker_bits(),
            source_name: source_name.to_owned(),
        })
}

/// How a node runs, as UidGenerator records it in `WORKER_NODE.TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    /// In a container, with host and port given by its environment (1).
    Container = 1,
    /// On a machine, named by its host name and a per-launch port string (2).
    Actual = 2,
}

/// The row a launch inserts into `WORKER_NODE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerNode {
    /// `HOST_NAME`.
    pub host_name: String,
    /// `PORT`: the container's port, or `pid-random` on a machine (as UidGenerator's
    /// `timestamp-random`, it only needs to tell launches apart for people).
    pub port: String,
    /// `TYPE`.
    pub node_type: NodeType,
}

impl WorkerNode {
    /// From the environment: `UIDGEN_HOST` and `UIDGEN_PORT` (set both in containers)
    /// make a container node; otherwise this machine's host name and `pid-random`.
    pub fn from_env() -> Self {
        match (std::env::var("UIDGEN_HOST"), std::env::var("UIDGEN_PORT")) {
            (Ok(host), Ok(port)) if !host.is_empty() && !port.is_empty() => Self {
                host_name: host,
                port,
                node_type: NodeType::Container,
            },
            _ => Self {
                host_name: gethostname::gethostname().to_string_lossy().into_owned(),
                port: format!("{}-{}", std::process::id(), fastrand::u32(..100_000)),
                node_type: NodeType::Actual,
            },
        }
    }
}

/// The `WORKER_NODE` DDL of `schema.sql`, for MySQL and MariaDB.
pub const MYSQL_SCHEMA: &str = include_str!("../../schema.sql");

/// The default table name.
pub const DEFAULT_TABLE: &str = "WORKER_NODE";

/// How long one network step of an assigner may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_ids_are_checked_against_the_layout() {
        let bits = crate::Preset::Snowflake.builder().build().unwrap();
        assert_eq!(
            FixedWorkerId(1023)
                .assign_worker_id(&bits)
                .unwrap()
                .worker_id,
            1023
        );
        let err = FixedWorkerId(1024).assign_worker_id(&bits).unwrap_err();
        assert!(
            err.to_string().contains("1024") && err.to_string().contains("1023"),
            "{err}"
        );
    }

    #[test]
    fn nodes_come_from_the_environment_or_the_machine() {
        let node = WorkerNode::from_env();
        // Whichever branch: the row's fields are filled in.
        assert!(!node.host_name.is_empty() && !node.port.is_empty());
        if node.node_type == NodeType::Actual {
            assert!(node.port.starts_with(&format!("{}-", std::process::id())));
        }
    }
}
