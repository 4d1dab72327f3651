//! The time-based generators: [`DefaultUidGenerator`] computes each ID on demand;
//! [`CachedUidGenerator`] hands out pre-built IDs from a lock-free ring that a padding
//! thread keeps full. Their rollback strategies and the ring's put reject handler live
//! here too; take policies are in `crate::wait`, shared with the segment generators.

mod cached;
mod cached_builder;
mod default;
mod end_warning;
mod local;
mod padding;
mod reject;
#[cfg(not(uidgen_loom))]
mod ring;
#[cfg(uidgen_loom)]
pub mod ring;
mod rollback;

pub use cached::{CachedStats, CachedUidGenerator, PADDING_THREAD_NAME};
pub use cached_builder::{CachedUidGeneratorBuilder, DEFAULT_ROLLBACK_ALLOWANCE};
pub use default::{DefaultUidGenerator, DefaultUidGeneratorBuilder};
pub use end_warning::DEFAULT_WARN_BEFORE_END;
pub use reject::{PutRejectHandler, PutRejected, RejectedPut};
pub use rollback::RollbackStrategy;

use crate::clock::{Clock, SystemClock};
use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use crate::worker::lease::WorkerLease;
use crate::worker::mark::{process_mark, MarkState, ProcessMark};
use std::sync::Arc;

/// What every generator is built from: a layout, a worker ID (or a lease) and a clock.
struct GeneratorBase {
    bits: BitsAllocator,
    worker_id: u64,
    lease: Option<WorkerLease>,
    clock: Arc<dyn Clock>,
    warn_before_end: std::time::Duration,
    /// No ID at or below this is handed out (`floor`).
    floor: Option<u64>,
}

/// Where a generator's worker ID keeps its time mark; dropped with the generator, which
/// records the ticks it used (in this process, or in the lease's store on release).
#[derive(Debug)]
#[allow(dead_code)] // Held for its `Drop`.
enum Mark {
    Process(ProcessMark),
    Lease(WorkerLease),
}

impl Mark {
    fn state(&self) -> &Arc<MarkState> {
        match self {
            Mark::Process(mark) => mark.state(),
            Mark::Lease(lease) => lease.state(),
        }
    }
}

impl Default for GeneratorBase {
    fn default() -> Self {
        Self {
            bits: BitsAllocator::default(),
            worker_id: 0,
            lease: None,
            clock: Arc::new(SystemClock),
            warn_before_end: DEFAULT_WARN_BEFORE_END,
            floor: None,
        }
    }
}

impl std::fmt::Debug for GeneratorBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratorBase")
            .field("bits", &self.bits)
            .field("worker_id", &self.worker_id)
            .field("lease", &self.lease)
            .field("warn_before_end", &self.warn_before_end)
            .field("floor", &self.floor)
            .finish_non_exhaustive()
    }
}

impl GeneratorBase {
    /// The worker ID fits the layout, and the layout is alive by the generator's clock.
    fn check(&self) -> Result<(), ConfigError> {
        if let Some(lease) = &self.lease {
            if *lease.allocator() != self.bits {
                return Err(ConfigError::Conflict {
                    first: "lease",
                    second: "allocator",
                    why: "the lease was taken for another layout; acquire it with the \
                          generator's layout (set .allocator(..) before .store(..) or \
                          .embedded(), which lease for the layout set so far)",
                });
            }
        }
        if self.bits.sequence_first() {
            return Err(ConfigError::ReadOnlyLayout {
                layout: self.bits.to_string(),
            });
        }
        self.bits.check_worker_id(self.worker_id)?;
        let now = self.clock.now_millis();
        self.bits.check_alive_at(now)?;
        if let Some(floor) = self.floor {
            self.bits.check_floor_at(floor, self.worker_id, now)?;
        }
        Ok(())
    }

    /// The worker ID's mark: the lease's, or this process's for a fixed worker ID.
    fn into_parts(
        self,
    ) -> (
        BitsAllocator,
        u64,
        Arc<dyn Clock>,
        std::time::Duration,
        Mark,
        Option<u64>,
    ) {
        let mark = match self.lease {
            Some(lease) => Mark::Lease(lease),
            None => Mark::Process(process_mark(
                self.clock.mark_domain(),
                &self.bits,
                self.worker_id,
            )),
        };
        (
            self.bits,
            self.worker_id,
            self.clock,
            self.warn_before_end,
            mark,
            self.floor,
        )
    }
}

/// The builder methods every generator's builder shares; the builder has a `base` field.
macro_rules! base_builder_methods {
    () => {
        /// The layout (default: [`Preset::Default`](crate::Preset::Default)).
        pub fn allocator(mut self, bits: $crate::BitsAllocator) -> Self {
            self.base.bits = bits;
            self
        }

        /// No ID at or below `floor` is ever handed out: building refuses a generator
        /// whose first ID now would be at or below it (naming `uidgen migrate plan`),
        /// and a tick whose IDs would be is never used (after the clock steps back, the
        /// generator waits or fails as for its time mark). Set it to the highest ID an
        /// old scheme made, so new IDs all sort above the old.
        ///
        /// ```
        /// use uidgen::{DefaultUidGenerator, UidGenerator};
        ///
        /// let err = DefaultUidGenerator::builder().floor(u64::MAX >> 2).build().unwrap_err();
        /// assert!(err.to_string().contains("uidgen migrate plan"));
        /// let generator = DefaultUidGenerator::builder().floor(1_000_000).build()?;
        /// assert!(generator.next_uid()? > 1_000_000);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn floor(mut self, floor: u64) -> Self {
            self.base.floor = Some(floor);
            self
        }

        /// The worker ID (default 0); must fit the layout's worker bits. Its time mark is
        /// kept in this process: a generator built after another with the same worker ID
        /// (and layout and clock) starts above every tick the other used. Across
        /// processes, use a [`lease`](Self::lease).
        pub fn worker_id(mut self, worker_id: u64) -> Self {
            self.base.worker_id = worker_id;
            self.base.lease = None;
            self
        }

        /// A leased worker ID ([`WorkerLease`](crate::WorkerLease)), taken for the same
        /// layout: the generator starts above its store's time mark, records a higher
        /// mark before it uses a later tick, and releases the lease when dropped.
        pub fn lease(mut self, lease: $crate::WorkerLease) -> Self {
            self.base.worker_id = lease.worker_id();
            self.base.lease = Some(lease);
            self
        }

        /// Leases the lowest free worker ID from `store` now, for the layout set so far
        /// (so set [`allocator`](Self::allocator) first): the generator starts above the
        /// worker ID's time mark, renews the lease in the background, and gives the
        /// worker ID back when dropped, for the next process to reuse. So launches never
        /// run out of worker IDs, and the layout's only need to cover the processes
        /// running at once.
        ///
        /// `store` is a store URL (`"mysql://user:pw@host/db"`, `"postgres://…"`,
        /// `"redis://…"`, a SQLite file path: any form [`StoreUrl`](crate::StoreUrl)
        /// reads), a parsed `StoreUrl`, or a store value
        /// ([`LeaseStore`](crate::LeaseStore)). Leases last 30 s unless renewed; for other
        /// settings, or a worker ID of your choosing, build a
        /// [`WorkerLease`](crate::WorkerLease) and give it to [`lease`](Self::lease).
        /// Errors name the store: a URL that cannot be read, a store that cannot be
        /// reached, or every worker ID of the layout leased by a live holder.
        ///
        /// ```no_run
        /// # #[cfg(feature = "mysql")] {
        /// use uidgen::{CachedUidGenerator, UidGenerator};
        ///
        /// let generator = CachedUidGenerator::builder()
        ///     .store("mysql://app:secret@db.internal:3306/ids")?
        ///     .build()?;
        /// println!("{}", generator.next_uid()?);
        /// # }
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn store(
            self,
            store: impl $crate::IntoLeaseStore,
        ) -> Result<Self, $crate::WorkerIdError> {
            let store = store.into_lease_store()?;
            let lease = $crate::WorkerLease::builder(store).acquire(&self.base.bits)?;
            Ok(self.lease(lease))
        }

        /// [`store`](Self::store) on the embedded store at its default place: the SQLite
        /// file `$UIDGEN_WORKER_DB`, or else `uidgen/workers.sqlite3` under the user's
        /// data directory (`~/.local/share` on Linux), which the `uidgen` command line
        /// uses too. One machine, no server (feature `sqlite`).
        ///
        /// ```
        /// use uidgen::{CachedUidGenerator, UidGenerator};
        ///
        /// # let dir = tempfile_dir();
        /// # std::env::set_var("UIDGEN_WORKER_DB", dir.join("workers.sqlite3"));
        /// let generator = CachedUidGenerator::builder().embedded()?.build()?;
        /// let id = generator.next_uid()?;
        /// # assert_eq!(generator.parse_uid(id)?.worker_id, 0, "the lowest free worker ID");
        /// # drop(generator);
        /// # std::fs::remove_dir_all(dir).ok();
        /// # fn tempfile_dir() -> std::path::PathBuf {
        /// #     let dir = std::env::temp_dir().join(format!("uidgen-embedded-doc-{}", std::process::id()));
        /// #     std::fs::create_dir_all(&dir).unwrap();
        /// #     dir
        /// # }
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[cfg(feature = "sqlite")]
        pub fn embedded(self) -> Result<Self, $crate::WorkerIdError> {
            self.store($crate::StoreUrl::embedded()?)
        }

        /// The worker ID `assigner` hands out for the layout set so far (so set
        /// [`allocator`](Self::allocator) first), kept as a fixed one (see
        /// [`worker_id`](Self::worker_id)): a [`PodOrdinal`](crate::PodOrdinal), a
        /// [`FixedWorkerId`](crate::FixedWorkerId), or a one-row-per-launch registry.
        pub fn worker_id_from(
            self,
            assigner: &dyn $crate::WorkerIdAssigner,
        ) -> Result<Self, $crate::WorkerIdError> {
            let assigned = assigner.assign_worker_id(&self.base.bits)?;
            Ok(self.worker_id(assigned.worker_id))
        }

        /// The clock (default: the system clock).
        pub fn clock(mut self, clock: impl $crate::Clock) -> Self {
            self.base.clock = std::sync::Arc::new(clock);
            self
        }

        /// Log a `tracing` warning, once, when IDs start coming from the last `before`
        /// of the layout's time (default: one day).
        pub fn warn_before_end(mut self, before: std::time::Duration) -> Self {
            self.base.warn_before_end = before;
            self
        }
    };
}
use base_builder_methods;
