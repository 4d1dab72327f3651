//! Worker IDs: which number this process puts in the worker field of every ID.
//!
//! | source | how | feature |
//! |---|---|---|
//! | a lease ([`WorkerLease`]; the builders' `.store(..)` and `.embedded()`) | the lowest free worker ID of a [`LeaseStore`] (of a [`WorkerIdRange`], with `worker_ids`), renewed, released on drop, reused above its time mark | a store's |
//! | [`PodOrdinal`] | a Kubernetes StatefulSet pod's ordinal (`web-3` is 3), plus an offset | always |
//! | [`FixedWorkerId`] | you choose (tests, hand-assigned fleets) | always |
//! | [`EmbeddedWorkerIdAssigner`] | one `WORKER_NODE` row per launch in a local SQLite file | `sqlite` |
//! | [`MySqlWorkerIdAssigner`] | one `WORKER_NODE` row per launch on MySQL 5.7+/8 or MariaDB 10+ (`schema.sql`) | `mysql` |
//!
//! Leases are the default: a leased worker ID is given back on drop and reused by later
//! processes, safely, because the store keeps each worker ID's time mark and the next
//! holder starts above it. So launches never run out, and a layout's worker IDs only
//! need to cover the processes running at once.
//!
//! The `WORKER_NODE` registries are UidGenerator's mode: each launch inserts a row and
//! takes its AUTO_INCREMENT id, never reused, so the layout's worker IDs must cover every
//! launch there will ever be. They refuse a layout with fewer than
//! [`MIN_ROW_PER_LAUNCH_WORKER_BITS`] worker bits unless allowed explicitly
//! (`allow_small_worker_space(true)`), and warn once 90% of the layout's worker IDs are
//! used.
//!
//! Assigners run once at start-up and hand back a plain `u64`; generators never touch
//! I/O or async code on the hot path. A fixed worker ID (`.worker_id(n)` on a builder,
//! or one from an assigner through `.worker_id_from(..)`) keeps its mark in this
//! process: a generator built again with it starts above every tick the last one used.

#[cfg(feature = "sqlite")]
mod embedded;
pub(crate) mod lease;
pub(crate) mod mark;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(any(feature = "sqlite", feature = "mysql"))]
mod node;
mod pod;
mod range;

pub use crate::process::holder_identity;
#[cfg(feature = "sqlite")]
pub use embedded::{EmbeddedWorkerIdAssigner, WORKER_DB_ENV};
pub use lease::{WorkerLease, WorkerLeaseBuilder, DEFAULT_LEASE_TTL};
#[cfg(feature = "mysql")]
pub use mysql::{MySqlWorkerIdAssigner, DEFAULT_TABLE, DEFAULT_TIMEOUT, MYSQL_SCHEMA};
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub use node::{NodeType, WorkerNode};
pub use pod::PodOrdinal;
pub use range::WorkerIdRange;

use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use crate::store::lease::LeaseRecord;
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
    /// Every worker ID of the range a lease was limited to
    /// ([`worker_ids`](crate::WorkerLeaseBuilder::worker_ids)) is leased by a live holder.
    #[error(
        "no free worker ID at {store} in the range {range} (worker_ids): all {} are leased; \
         wait for a lease to expire, or give this deployment a wider range",
        range.len()
    )]
    NoFreeWorkerIdInRange {
        /// The range.
        range: WorkerIdRange,
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
    /// A registry that takes a new worker ID on every launch (a `WORKER_NODE` row each,
    /// never reused) was given a layout with fewer than
    /// [`MIN_ROW_PER_LAUNCH_WORKER_BITS`] worker bits, which would run out after
    /// `launches` launches. Refused before any row is inserted, unless allowed with
    /// `allow_small_worker_space(true)`.
    #[error(
        "{registry} takes a new worker ID on every launch and never reuses one, and the \
         layout has {worker_bits} worker bits: that allows {launches} launches in all \
         (worker IDs 1 to {launches}), after which no process can start. Lease worker IDs \
         instead (CachedUidGenerator::builder().store(url) or .embedded(): a released \
         worker ID is reused above its time mark, so launches never run out), or use a \
         layout with at least {min} worker bits (Preset::UidGeneratorReadme has 21), or \
         call .allow_small_worker_space(true) if {launches} launches are enough",
        min = MIN_ROW_PER_LAUNCH_WORKER_BITS
    )]
    SmallWorkerSpace {
        /// The registry.
        registry: String,
        /// Worker bits of the layout.
        worker_bits: u32,
        /// The launches the layout allows: its worker IDs but 0 (AUTO_INCREMENT starts at 1).
        launches: u64,
    },
    /// No pod name was given, and none is in the environment.
    #[error(
        "no pod name to read a StatefulSet ordinal from: {why}; give it with \
         PodOrdinal::pod_name (for example from the downward API's metadata.name)"
    )]
    NoPodName {
        /// What was looked at.
        why: String,
    },
    /// The pod name does not end in `-N`.
    #[error(
        "pod name {name:?} (from {from}) has no StatefulSet ordinal: a StatefulSet names its \
         pods NAME-0, NAME-1, ..., and the worker ID is the digits after the last '-' (plus \
         the offset)"
    )]
    NoPodOrdinal {
        /// The pod name (its first DNS label).
        name: String,
        /// Where it came from: `HOSTNAME`, `/etc/hostname` or the name given.
        from: String,
    },
    /// The pod's ordinal plus the offset is past the layout's largest worker ID.
    #[error(
        "pod {name:?}: ordinal {ordinal} + offset {offset} = worker ID {} exceeds \
         max_worker_id {max_worker_id} ({worker_bits} worker bits); lower the offset, run \
         fewer replicas, or choose a layout with more worker bits",
        u128::from(*ordinal) + u128::from(*offset)
    )]
    OrdinalPastMax {
        /// The pod name.
        name: String,
        /// The ordinal read from it.
        ordinal: u64,
        /// The offset added.
        offset: u64,
        /// The largest worker ID the layout holds.
        max_worker_id: u64,
        /// Worker bits of the layout.
        worker_bits: u32,
    },
}

/// The fewest worker bits a one-row-per-launch registry ([`EmbeddedWorkerIdAssigner`],
/// [`MySqlWorkerIdAssigner`]) accepts without `allow_small_worker_space(true)`: 2^16 =
/// 65,536 worker IDs, so 65,535 launches. UidGenerator's layouts have 21 or 22.
pub const MIN_ROW_PER_LAUNCH_WORKER_BITS: u32 = 16;

/// How much of a layout's worker-ID space a lease store or a `WORKER_NODE` registry has
/// used, and what is left.
///
/// ```
/// use uidgen::{BitsAllocator, WorkerIdUsage};
///
/// let bits = BitsAllocator::default(); // 10 worker bits
/// let rows = WorkerIdUsage::of_launches(1000, &bits);
/// assert_eq!((rows.used, rows.remaining), (1000, 23));
/// assert!(rows.nearly_used_up());
/// let leases = WorkerIdUsage::of_leases(&[], &bits);
/// assert_eq!((leases.used, leases.remaining), (0, 1024));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerIdUsage {
    /// Leases: worker IDs held by a live lease now. One row per launch: worker IDs handed
    /// out so far (the highest row's), which never come back.
    pub used: u64,
    /// Leases: worker IDs free now (a released or expired one is free again). One row
    /// per launch: launches left.
    pub remaining: u64,
    /// The layout's largest worker ID.
    pub max_worker_id: u64,
    /// Whether a worker ID comes back when its holder is done (leases), or never (one
    /// row per launch).
    pub reused: bool,
}

impl WorkerIdUsage {
    /// A lease store's usage from its [`leases`](crate::LeaseStore::leases): the live
    /// leases on worker IDs the layout holds.
    pub fn of_leases(leases: &[LeaseRecord], bits: &BitsAllocator) -> Self {
        let max_worker_id = bits.max_worker_id();
        let used = leases
            .iter()
            .filter(|lease| lease.worker_id <= max_worker_id && lease.expires_in.is_some())
            .count() as u64;
        Self {
            used,
            remaining: max_worker_id.saturating_add(1).saturating_sub(used),
            max_worker_id,
            reused: true,
        }
    }

    /// A `WORKER_NODE` registry's usage, `highest` being the largest ID it handed out:
    /// every ID up to it is gone (AUTO_INCREMENT starts at 1).
    pub fn of_launches(highest: u64, bits: &BitsAllocator) -> Self {
        let max_worker_id = bits.max_worker_id();
        Self {
            used: highest,
            remaining: max_worker_id.saturating_sub(highest),
            max_worker_id,
            reused: false,
        }
    }

    /// `used + remaining`: the worker IDs there are (leases), or the launches there are
    /// (one row per launch: worker ID 0 is never handed out).
    pub fn capacity(&self) -> u64 {
        self.used.saturating_add(self.remaining)
    }

    /// Whether 90% or more of the capacity is used.
    pub fn nearly_used_up(&self) -> bool {
        u128::from(self.used) * 10 >= u128::from(self.capacity()) * 9
    }
}

impl fmt::Display for WorkerIdUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reused {
            write!(
                f,
                "{} of {} worker IDs held by live leases, {} free (a released or expired \
                 worker ID is free again)",
                self.used,
                self.capacity(),
                self.remaining
            )
        } else {
            write!(
                f,
                "{} of {} worker IDs used, {} launches left (one row per launch: worker IDs \
                 are never reused)",
                self.used,
                self.capacity(),
                self.remaining
            )
        }
    }
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

/// The guard of the one-row-per-launch registries, before any row is inserted: a layout
/// with fewer than [`MIN_ROW_PER_LAUNCH_WORKER_BITS`] worker bits is refused unless
/// `allowed`.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) fn check_worker_space(
    bits: &BitsAllocator,
    allowed: bool,
    registry: &str,
) -> Result<(), WorkerIdError> {
    if allowed || bits.worker_bits() >= MIN_ROW_PER_LAUNCH_WORKER_BITS {
        return Ok(());
    }
    Err(WorkerIdError::SmallWorkerSpace {
        registry: registry.to_owned(),
        worker_bits: bits.worker_bits(),
        launches: bits.max_worker_id(),
    })
}

/// Refuses an ID the layout cannot hold (the registry's row stays), and warns once 90%
/// of the layout's worker IDs are used.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) fn check_launch(
    worker_id: u64,
    bits: &BitsAllocator,
    source_name: &str,
) -> Result<(), WorkerIdError> {
    check_fits(worker_id, bits, source_name)?;
    let usage = WorkerIdUsage::of_launches(worker_id, bits);
    if usage.nearly_used_up() {
        tracing::warn!(
            worker_id,
            max_worker_id = usage.max_worker_id,
            launches_left = usage.remaining,
            "uidgen: {source_name} has used {} of this layout's {} worker IDs ({} launches \
             left, never reused); lease worker IDs instead (a generator builder's \
             .store(url) or .embedded()), or move to a layout with more worker bits",
            usage.used,
            usage.capacity(),
            usage.remaining
        );
    }
    Ok(())
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
