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
//!
//! Leases ([`WorkerLease`]) reuse worker IDs safely: a [`LeaseStore`] keeps each worker
//! ID's time mark, and a generator built with a lease starts above it. A fixed worker ID
//! (`.worker_id(n)` on a builder) keeps its mark in this process: a generator built again
//! with it starts above every tick the last one used.

#[cfg(feature = "sqlite")]
mod embedded;
pub(crate) mod lease;
pub(crate) mod mark;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(any(feature = "sqlite", feature = "mysql"))]
mod node;

#[cfg(feature = "sqlite")]
pub use embedded::{EmbeddedWorkerIdAssigner, WORKER_DB_ENV};
pub use lease::{holder_identity, WorkerLease, WorkerLeaseBuilder, DEFAULT_LEASE_TTL};
#[cfg(feature = "mysql")]
pub use mysql::{MySqlWorkerIdAssigner, DEFAULT_TABLE, DEFAULT_TIMEOUT, MYSQL_SCHEMA};
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub use node::{NodeType, WorkerNode};

use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use crate::store::StoreError;
use std::fmt;
use std::time::Duration;
/// Hands this process its worker ID, once, at start-up.
pub trait WorkerIdAssigner {
    /// A worker ID for this launch, checked against the layout's `max_worker_id`.
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError>;
}

/// A worker ID and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerIdError {
    /// The registry handed out an ID the layout's worker bits cannot hold. Its row stays
    /// (IDs are never reused); the registry has run out for this layout.
    #[error(
        "worker ID {worker_id} from {source_name} exceeds max_worker_id {max_worker_id} \
         ({worker_bits} worker bits): the registry has used up this layout's worker IDs; \
         choose a layout with more worker bits"
    )]
    RegistryExhausted {
        /// The ID handed out.
        worker_id: u64,
        /// The largest the layout holds.
        max_worker_id: u64,
        /// Worker bits of the layout.
        worker_bits: u32,
        /// The registry.
        source_name: String,
    },
    /// A worker ID given by hand does not fit the layout.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A table name that is not a plain SQL identifier.
    #[error("table name {0:?} is not a plain identifier (letters, digits and _, at most 64)")]
    InvalidTableName(String),
    /// Every worker ID the layout holds is leased by a live holder.
    #[error(
        "no free worker ID at {store}: all {} worker IDs up to max_worker_id {max_worker_id} \
         ({worker_bits} worker bits) are leased; wait for a lease to expire, or use a layout \
         with more worker bits",
        max_worker_id + 1
    )]
    NoFreeWorkerId {
        /// The largest the layout holds.
        max_worker_id: u64,
        /// Worker bits of the layout.
        worker_bits: u32,
        /// The store.
        store: String,
    },
    /// The worker ID asked for is leased by another live holder.
    #[error(
        "worker ID {worker_id} is leased by {holder} at {store} for {expires_in:?} more \
         (unless renewed); choose another, or let the store pick a free one"
    )]
    WorkerIdHeld {
        /// The worker ID.
        worker_id: u64,
        /// Who holds it.
        holder: String,
        /// How long its lease lasts unless renewed.
        expires_in: Duration,
        /// The store.
        store: String,
    },
    /// The lease could not be kept.
    #[error("worker-ID lease: {why}")]
    Lease {
        /// What happened.
        why: String,
    },
    /// The registry's store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A worker ID you choose: for tests, and for fleets whose IDs are assigned by hand.
///
/// Each ID must belong to one running process at a time, and a process restarted with
/// the same ID must not start until the clock has passed the ticks the last one used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWorkerId(pub u64);

impl WorkerIdAssigner for FixedWorkerId {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        bits.check_worker_id(self.0)?;
        Ok(WorkerAssignment {
            worker_id: self.0,
            source: "a fixed worker ID".into(),
        })
    }
}

/// A random number from the standard library's per-process random keys and the time (no
/// random-number crate is needed for one number per launch or lease).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Refuses an ID the layout cannot hold; the registry's row stays.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) fn check_fits(
    worker_id: u64,
    bits: &BitsAllocator,
    source_name: &str,
) -> Result<(), WorkerIdError> {
    bits.check_worker_id(worker_id)
        .map_err(|_| WorkerIdError::RegistryExhausted {
            worker_id,
            max_worker_id: bits.max_worker_id(),
            worker_bits: bits.worker_bits(),
            source_name: source_name.to_owned(),
        })
}

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
        let message = err.to_string();
        assert!(
            message.contains("1024") && message.contains("1023"),
            "{message}"
        );
        assert!(
            !message.contains("registry"),
            "a fixed ID is not the registry's: {message}"
        );
    }
}
