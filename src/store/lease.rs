//! The store side of worker-ID leases: what a store must do (the [`LeaseStore`] trait),
//! and what it is asked and answers. Each engine's module implements it; the lease
//! itself ([`WorkerLease`](crate::WorkerLease)) lives with the worker IDs.

use super::{StoreError, StoreKind};
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

    /// Which engine the store is (for errors and rules that differ by engine); stores
    /// from outside this crate are [`StoreKind::Other`].
    fn kind(&self) -> StoreKind {
        StoreKind::Other
    }

    /// Takes a worker ID for `request.holder` until the store's now + `request.ttl`: the
    /// one asked for, or else the lowest one from `request.min_worker_id` to
    /// `request.max_worker_id` that is free: never used, or released, or expired,
    /// whichever is lowest. [`WorkerLease`](crate::WorkerLease) refuses a worker ID it is
    /// given outside that range, so a store that offers one only fails the acquire.
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

    /// Runs `hook` with the reason as soon as the store is found to have lost data (its
    /// identity changed or vanished), so a lease on it stops at once rather than at its
    /// next renewal. Stores without such checks never call it.
    fn on_data_loss(&self, hook: Box<dyn Fn(&str) + Send + Sync>) {
        let _ = hook;
    }

    /// Says that `holder`, whose lease on `worker_id` was just given up (lost, or not
    /// renewed in time), used ticks only up to `mark_ms`: below the mark recorded ahead
    /// of them. A store that keeps marks of its own in the process may lower them to it;
    /// the store's own mark is left as it is.
    fn note_used(&self, worker_id: u64, holder: &str, mark_ms: u64) {
        let _ = (worker_id, holder, mark_ms);
    }

    /// Refuses a layout this store's worker IDs must not be used with, naming the one
    /// they need ([`WorkerLease`](crate::WorkerLease) asks before it takes a worker ID). A
    /// ZooKeeper store in Leaf mode shares worker IDs with a Leaf fleet, so its IDs must
    /// be Leaf's layout and epoch (preset `snowflake`) to stay above Leaf's; other stores
    /// take any layout.
    fn check_layout(&self, bits: &crate::BitsAllocator) -> Result<(), StoreError> {
        let _ = bits;
        Ok(())
    }
}

/// What [`LeaseStore::acquire`] is asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseRequest<'a> {
    /// Who asks: host, process and a random instance number.
    pub holder: &'a str,
    /// How long the lease lasts unless renewed.
    pub ttl: Duration,
    /// The largest worker ID to take: the layout's largest, or the end of the range
    /// the lease is limited to.
    pub max_worker_id: u64,
    /// The smallest worker ID to take (0 unless the lease is limited to a range: a store
    /// of your own must take none below it).
    pub min_worker_id: u64,
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
            min_worker_id: 0,
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
    fn kind(&self) -> StoreKind {
        (**self).kind()
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
    fn on_data_loss(&self, hook: Box<dyn Fn(&str) + Send + Sync>) {
        (**self).on_data_loss(hook)
    }
    fn note_used(&self, worker_id: u64, holder: &str, mark_ms: u64) {
        (**self).note_used(worker_id, holder, mark_ms)
    }
    fn check_layout(&self, bits: &crate::BitsAllocator) -> Result<(), StoreError> {
        (**self).check_layout(bits)
    }
}

/// Where a generator's builder leases its worker ID from
/// ([`store`](crate::CachedUidGeneratorBuilder::store)): a store URL in any form
/// [`StoreUrl`](super::StoreUrl) reads (`&str`, `String`, or a parsed `StoreUrl`), or a
/// store value (anything that implements [`LeaseStore`], boxed ones included).
pub trait IntoLeaseStore {
    /// Opens the lease store (a network store connects on its first step, not here); a
    /// URL that cannot be read is an error naming the forms accepted.
    fn into_lease_store(self) -> Result<Box<dyn LeaseStore>, StoreError>;
}

impl<S: LeaseStore> IntoLeaseStore for S {
    fn into_lease_store(self) -> Result<Box<dyn LeaseStore>, StoreError> {
        Ok(Box::new(self))
    }
}

/// One engine's primitive lease steps, each atomic on the store; [`acquire`] is the one
/// algorithm over them, the same on every engine (sqlx's `Migrate` and `Migrator` split).
#[cfg_attr(
    not(any(
        feature = "sqlite",
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd",
        feature = "zookeeper"
    )),
    allow(dead_code)
)]
pub(crate) trait LeaseSteps: Send + Sync + 'static {
    /// The store, for people and errors; never with a password.
    fn describe(&self) -> String;
    fn kind(&self) -> StoreKind;
    /// [`LeaseStore::check_layout`]: any layout, unless the engine says otherwise.
    fn check_layout(&self, bits: &crate::BitsAllocator) -> Result<(), StoreError> {
        let _ = bits;
        Ok(())
    }
    /// `worker_id`'s row, if it has one, and the store's clock (Unix ms).
    fn read(&self, worker_id: u64) -> Result<(Option<LeaseRow>, u64), StoreError>;
    /// The lowest worker ID from `min` to `max` whose row is free (no holder, or
    /// expired), and the lowest worker ID at or above `min` that has no row at all (never
    /// used; may be past `max`).
    fn lowest(&self, min: u64, max: u64) -> Result<(Option<u64>, u64), StoreError>;
    /// Takes an existing row if it is free, expired or already `holder`'s; its mark, or
    /// `None` if another holder has it (someone was faster).
    fn take(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError>;
    /// Creates `worker_id`'s row, held by `holder`, mark 0; `false` if it exists.
    fn insert(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<bool, StoreError>;
    /// [`LeaseStore::renew`].
    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError>;
    /// [`LeaseStore::release`].
    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError>;
    /// [`LeaseStore::leases`], lowest first.
    fn list(&self) -> Result<Vec<LeaseRecord>, StoreError>;
}

/// The lowest worker ID from `min` with no mark: the first gap in `marked`, sorted (the
/// `lowest` step of the key-value stores, which list every mark).
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn first_unused(marked: &[u64], min: u64) -> u64 {
    let mut unused = min;
    for id in marked.iter().filter(|id| **id >= min) {
        if *id != unused {
            break;
        }
        unused += 1;
    }
    unused
}

/// A lease row as [`LeaseSteps::read`] finds it.
#[derive(Debug)]
pub(crate) struct LeaseRow {
    pub holder: Option<String>,
    pub expires_ms: u64,
}

/// How many times [`acquire`] tries again after another process took its candidate
/// first. Each retry means someone else was granted a worker ID, so this only runs out
/// when far more processes than that start at the same moment.
const ACQUIRE_ATTEMPTS: usize = 100;

/// Takes a worker ID: the one asked for, or the lowest free one, where "free" is never
/// used, or released, or expired, whichever is lowest. Each step is atomic on the
/// store; a step that finds someone was faster starts over.
#[cfg_attr(
    not(any(
        feature = "sqlite",
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd",
        feature = "zookeeper"
    )),
    allow(dead_code)
)]
pub(crate) fn acquire(
    steps: &dyn LeaseSteps,
    request: &LeaseRequest<'_>,
) -> Result<Acquired, StoreError> {
    for _ in 0..ACQUIRE_ATTEMPTS {
        let (worker_id, exists) = match request.worker_id {
            Some(wanted) => match steps.read(wanted)? {
                (
                    Some(LeaseRow {
                        holder: Some(holder),
                        expires_ms,
                    }),
                    now,
                ) if expires_ms > now && holder != request.holder => {
                    return Ok(Acquired::Held {
                        holder,
                        expires_in: Duration::from_millis(expires_ms - now),
                    })
                }
                (row, _) => (wanted, row.is_some()),
            },
            None => match steps.lowest(request.min_worker_id, request.max_worker_id)? {
                (Some(free), unused) if free < unused => (free, true),
                (_, unused) if unused <= request.max_worker_id => (unused, false),
                _ => return Ok(Acquired::Exhausted),
            },
        };
        if request.worker_id.is_none() && worker_id < request.min_worker_id {
            // An engine's step that forgot the range: refused rather than taken.
            return Err(StoreError::Unexpected {
                store: steps.kind().name(),
                location: steps.describe(),
                step: "looking for a free worker ID",
                what: format!(
                    "worker ID {worker_id} was offered below the range's first, {}",
                    request.min_worker_id
                ),
            });
        }
        let granted = if exists {
            steps.take(worker_id, request.holder, request.ttl)?
        } else {
            steps
                .insert(worker_id, request.holder, request.ttl)?
                .then_some(0)
        };
        if let Some(mark_ms) = granted {
            return Ok(Acquired::Granted { worker_id, mark_ms });
        }
    }
    Err(StoreError::Unexpected {
        store: steps.kind().name(),
        location: steps.describe(),
        step: "taking a worker ID",
        what: format!(
            "another process took each candidate first, {ACQUIRE_ATTEMPTS} times in a row; \
             try again, or start fewer processes at once"
        ),
    })
}

/// `impl LeaseStore` for a public store type whose field `$steps` holds its engine's
/// [`LeaseSteps`].
#[cfg(any(
    feature = "sqlite",
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
macro_rules! lease_store_over_steps {
    ($store:ty, $steps:ident) => {
        impl $crate::store::lease::LeaseStore for $store {
            fn describe(&self) -> String {
                $crate::store::lease::LeaseSteps::describe(&self.$steps)
            }
            fn kind(&self) -> $crate::store::StoreKind {
                $crate::store::lease::LeaseSteps::kind(&self.$steps)
            }
            fn acquire(
                &self,
                request: &$crate::store::lease::LeaseRequest<'_>,
            ) -> Result<$crate::store::lease::Acquired, $crate::store::StoreError> {
                $crate::store::lease::acquire(&self.$steps, request)
            }
            fn renew(
                &self,
                worker_id: u64,
                holder: &str,
                ttl: std::time::Duration,
                mark_ms: u64,
            ) -> Result<bool, $crate::store::StoreError> {
                $crate::store::lease::LeaseSteps::renew(
                    &self.$steps,
                    worker_id,
                    holder,
                    ttl,
                    mark_ms,
                )
            }
            fn release(
                &self,
                worker_id: u64,
                holder: &str,
                mark_ms: u64,
            ) -> Result<bool, $crate::store::StoreError> {
                $crate::store::lease::LeaseSteps::release(&self.$steps, worker_id, holder, mark_ms)
            }
            fn leases(
                &self,
            ) -> Result<Vec<$crate::store::lease::LeaseRecord>, $crate::store::StoreError> {
                $crate::store::lease::LeaseSteps::list(&self.$steps)
            }
            fn check_layout(
                &self,
                bits: &$crate::BitsAllocator,
            ) -> Result<(), $crate::store::StoreError> {
                $crate::store::lease::LeaseSteps::check_layout(&self.$steps, bits)
            }
        }
    };
}
#[cfg(any(
    feature = "sqlite",
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
pub(crate) use lease_store_over_steps;
