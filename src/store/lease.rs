//! The store side of worker-ID leases: what a store must do (the [`LeaseStore`] trait),
//! and what it is asked and answers. Each engine's module implements it; the lease
//! itself ([`WorkerLease`](crate::WorkerLease)) lives with the worker IDs.

use super::StoreError;
use std::fmt;
use std::time::Duration;

/// A store of worker-ID leases and time marks. Every method is one atomic step on the
/// store, and lease times are the store's own clock; marks are in the generators' clock
/// (Unix milliseconds: the end of the highest tick a holder may have used; 0 for none).
///
/// Implemented by the stores of this crate's features; implement it for another store
/// with the same guarantees.
pub trait LeaseStore: Send + Sync + fmt::Debug + 'static {
    /// The store, for people and errors; never with a password.
    fn describe(&self) -> String;

    /// Takes a worker ID for `request.holder` until the store's now + `request.ttl`: the
    /// one asked for, or else the lowest one at most `request.max_worker_id` that is free
    /// (never leased, released, or expired).
    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError>;

    /// Extends the holder's lease to the store's now + `ttl` and raises the mark to at
    /// least `mark_ms`; `false` if `holder` no longer holds `worker_id`.
    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Frees the worker ID and sets its mark to `mark_ms` (the end of the highest tick
    /// the holder used); `false` if `holder` no longer held it.
    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError>;

    /// Every worker ID the store knows, lowest first.
    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError>;
}

/// What [`LeaseStore::acquire`] is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseRequest<'a> {
    /// Who asks: host, process and a random instance number.
    pub holder: &'a str,
    /// How long the lease lasts unless renewed.
    pub ttl: Duration,
    /// The layout's largest worker ID.
    pub max_worker_id: u64,
    /// A particular worker ID, or `None` for the lowest free one.
    pub worker_id: Option<u64>,
}

impl<'a> LeaseRequest<'a> {
    /// A request for the lowest free worker ID; set `worker_id` to ask for one. (The
    /// struct is non-exhaustive, so code outside this crate, such as a store's own tests,
    /// builds it here.)
    pub fn new(holder: &'a str, ttl: Duration, max_worker_id: u64) -> Self {
        Self {
            holder,
            ttl,
            max_worker_id,
            worker_id: None,
        }
    }
}

/// What [`LeaseStore::acquire`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acquired {
    /// The worker ID is the caller's; `mark_ms` is its time mark (0: never used).
    Granted {
        /// The worker ID.
        worker_id: u64,
        /// The mark, in Unix milliseconds.
        mark_ms: u64,
    },
    /// Every worker ID up to the maximum is held by a live lease.
    Exhausted,
    /// The worker ID asked for is held by another live lease.
    Held {
        /// Who holds it.
        holder: String,
        /// How long its lease lasts unless renewed.
        expires_in: Duration,
    },
}

/// One row of [`LeaseStore::leases`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseRecord {
    /// The worker ID.
    pub worker_id: u64,
    /// Who holds it, if anyone (an expired holder is still shown, with `expires_in` none).
    pub holder: Option<String>,
    /// How long the lease lasts unless renewed; `None` when free or expired.
    pub expires_in: Option<Duration>,
    /// The time mark, in Unix milliseconds (0: never used).
    pub mark_ms: u64,
}

impl LeaseRecord {
    /// A record read from a store's row; `expires_ms` and `now_ms` are the store's clock.
    pub fn new(
        worker_id: u64,
        holder: Option<String>,
        expires_ms: u64,
        now_ms: u64,
        mark_ms: u64,
    ) -> Self {
        let live = holder.is_some() && expires_ms > now_ms;
        Self {
            worker_id,
            holder,
            expires_in: live.then(|| Duration::from_millis(expires_ms - now_ms)),
            mark_ms,
        }
    }
}

/// A boxed store is a store, so a store chosen at run time (say, from a URL) can be used.
impl<S: LeaseStore + ?Sized> LeaseStore for Box<S> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        (**self).acquire(request)
    }
    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        (**self).renew(worker_id, holder, ttl, mark_ms)
    }
    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        (**self).release(worker_id, holder, mark_ms)
    }
    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        (**self).leases()
    }
}
