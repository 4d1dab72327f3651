//! Worker-ID leases: a worker ID held for a while from a store, renewed in the
//! background, given back on drop, and reused by later processes — safely, because the
//! store also keeps each worker ID's time mark.

use super::mark::MarkState;
use super::{WorkerIdError, WorkerIdRange};
use crate::layout::BitsAllocator;
use crate::process::holder_identity;
use crate::store::lease::{Acquired, LeaseRequest, LeaseStore};
use crate::store::StoreError;
use crate::sync::outside_loom::{lock, Mutex};
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default lease length: a holder that dies keeps its worker ID from others this long.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// Settings for a [`WorkerLease`]; start from [`WorkerLease::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `acquire` is called"]
pub struct WorkerLeaseBuilder {
    store: Arc<dyn LeaseStore>,
    ttl: Duration,
    raise_wait: Duration,
    holder: Option<String>,
    prefer_within: Option<Duration>,
    range: Option<WorkerIdRange>,
}

/// How many worker IDs past the lowest free one
/// [`prefer_marks_within`](WorkerLeaseBuilder::prefer_marks_within) looks at.
pub const PASS_OVER_AT_MOST: u64 = 64;

impl WorkerLeaseBuilder {
    setters! {
        /// How long the lease lasts unless renewed (default 30 s; at least 300 ms). It is
        /// renewed every third of that, and the mark is recorded two thirds ahead of the
        /// ticks in use, so a holder that dies leaves a mark at most that far ahead.
        ttl(ttl: Duration) => self.ttl = ttl;

        /// How long a generator waits for the store to record a higher mark before its call
        /// fails (default 5 s).
        raise_wait(wait: Duration) => self.raise_wait = wait;

        /// The holder's identity (default [`holder_identity`]).
        holder(holder: impl Into<String>) => self.holder = Some(holder.into());

        /// Prefer a worker ID whose time mark is at most `within` ahead of the clock over
        /// a lower one whose mark is further ahead (a previous holder whose clock ran a day
        /// ahead leaves a mark a day ahead: a generator capped on borrowed time would wait
        /// that long). Set it to the generator's `max_time_ahead`. Default: the lowest.
        prefer_marks_within(within: Duration) => self.prefer_within = Some(within);

        /// Take worker IDs only from `range` (default: every one the layout holds). Two
        /// deployments with stores of their own (two regions) whose ranges do not overlap
        /// never hold the same worker ID, so never make the same ID; see the README's
        /// "Several regions". A range past the layout's worker bits is refused, naming
        /// the limit, and so is [`acquire_id`](Self::acquire_id) outside it.
        worker_ids(range: WorkerIdRange) => self.range = Some(range);
    }

    /// With [`prefer_marks_within`](Self::prefer_marks_within): the lowest free worker
    /// ID whose mark is at most `within` ahead of the clock, looking at up to
    /// [`PASS_OVER_AT_MOST`] more after the lowest; each passed over is released with its
    /// mark as it was, and said so. None such: the lowest, also said so.
    fn lowest_usable_now(
        &self,
        request: &LeaseRequest<'_>,
        within: Duration,
    ) -> Result<Acquired, WorkerIdError> {
        let first = self.store.acquire(request)?;
        // The clock read after the store answered: a mark the acquire itself set from the
        // clock (a wiped store's start, `WIPED_STORE_AHEAD` ahead) is judged by the same
        // clock, not one read before it.
        let now_ms = crate::clock::Clock::now_millis(&crate::clock::SystemClock);
        let limit = now_ms.saturating_add(u64::try_from(within.as_millis()).unwrap_or(u64::MAX));
        let (lowest, lowest_mark) = match first {
            Acquired::Granted { worker_id, mark_ms } if mark_ms > limit => (worker_id, mark_ms),
            other => return Ok(other),
        };
        let ahead = |mark: u64| Duration::from_millis(mark.saturating_sub(now_ms));
        let pass_over = |worker_id: u64, mark_ms: u64| -> Result<(), WorkerIdError> {
            tracing::debug!(worker_id, mark_ms, "uidgen passes over a worker ID");
            self.store.release(worker_id, request.holder, mark_ms)?;
            Ok(())
        };
        // One line for the whole look, not one per worker ID.
        tracing::warn!(
            worker_id = lowest,
            mark = %crate::clock::format_instant(lowest_mark),
            "uidgen passes over worker ID {lowest}: its time mark is {:.1?} ahead of the clock \
             (a previous holder's clock ran ahead, it borrowed that far, or a repair set every \
             mark ahead); looking for a free worker ID whose mark is within {within:?}",
            ahead(lowest_mark)
        );
        pass_over(lowest, lowest_mark)?;
        let last = lowest
            .saturating_add(PASS_OVER_AT_MOST)
            .min(request.max_worker_id);
        for candidate in lowest + 1..=last {
            let named = LeaseRequest {
                worker_id: Some(candidate),
                ..request.clone()
            };
            match self.store.acquire(&named)? {
                Acquired::Granted { worker_id, mark_ms } if mark_ms > limit => {
                    pass_over(worker_id, mark_ms)?
                }
                Acquired::Granted { worker_id, mark_ms } => {
                    return Ok(Acquired::Granted { worker_id, mark_ms })
                }
                _ => {}
            }
        }
        tracing::warn!(
            "uidgen found no free worker ID whose time mark is within {within:?} of the clock; \
             taking worker ID {lowest}, whose mark is {:.1?} ahead",
            ahead(lowest_mark)
        );
        Ok(self.store.acquire(&LeaseRequest {
            worker_id: Some(lowest),
            ..request.clone()
        })?)
    }

    /// Leases the lowest free worker ID the layout holds.
    pub fn acquire(self, bits: &BitsAllocator) -> Result<WorkerLease, WorkerIdError> {
        self.acquire_inner(bits, None)
    }

    /// Leases `worker_id` itself (a hand-assigned ID that still goes through the store's
    /// mark); refused while another live lease holds it.
    pub fn acquire_id(
        self,
        bits: &BitsAllocator,
        worker_id: u64,
    ) -> Result<WorkerLease, WorkerIdError> {
        bits.check_worker_id(worker_id)?;
        self.acquire_inner(bits, Some(worker_id))
    }

    fn acquire_inner(
        self,
        bits: &BitsAllocator,
        wanted: Option<u64>,
    ) -> Result<WorkerLease, WorkerIdError> {
        const MIN_TTL: Duration = Duration::from_millis(300);
        if self.ttl < MIN_TTL {
            return Err(crate::error::ConfigError::OutOfRange {
                field: "lease ttl",
                value: format!("{:?}", self.ttl),
                limit: format!("at least {MIN_TTL:?}"),
            }
            .into());
        }
        let range = match self.range {
            Some(range) => range.check(bits)?,
            None => WorkerIdRange::all(bits),
        };
        if let Some(wanted) = wanted.filter(|id| !range.contains(*id)) {
            return Err(crate::error::ConfigError::OutOfRange {
                field: "worker_id",
                value: wanted.to_string(),
                limit: format!("a worker ID in this lease's range {range} (worker_ids)"),
            }
            .into());
        }
        self.store.check_layout(bits)?;
        let holder = self.holder.clone().unwrap_or_else(holder_identity);
        let request = LeaseRequest {
            holder: &holder,
            ttl: self.ttl,
            max_worker_id: range.last(),
            min_worker_id: range.first(),
            worker_id: wanted,
        };
        let acquired = match (wanted, self.prefer_within) {
            (None, Some(within)) => self.lowest_usable_now(&request, within)?,
            _ => self.store.acquire(&request)?,
        };
        let (worker_id, mark_ms) = match acquired {
            Acquired::Granted { worker_id, mark_ms } if !range.contains(worker_id) => {
                // A store of someone else's that ignored the range: given back, refused.
                let _ = self.store.release(worker_id, &holder, mark_ms);
                return Err(StoreError::Unexpected {
                    store: self.store.kind().name(),
                    location: self.store.describe(),
                    step: "taking a worker ID",
                    what: format!(
                        "the store granted worker ID {worker_id}, outside the range {range} \
                         it was asked for (LeaseRequest::min_worker_id and max_worker_id)"
                    ),
                }
                .into());
            }
            Acquired::Granted { worker_id, mark_ms } => (worker_id, mark_ms),
            Acquired::Exhausted if self.range.is_some() => {
                return Err(WorkerIdError::NoFreeWorkerIdInRange {
                    range,
                    store: self.store.describe(),
                })
            }
            Acquired::Exhausted => {
                return Err(WorkerIdError::NoFreeWorkerId {
                    max_worker_id: bits.max_worker_id(),
                    worker_bits: bits.worker_bits(),
                    store: self.store.describe(),
                })
            }
            Acquired::Held {
                holder: other,
                expires_in,
            } => {
                return Err(WorkerIdError::WorkerIdHeld {
                    worker_id: wanted.unwrap_or_default(),
                    holder: other,
                    expires_in,
                    store: self.store.describe(),
                })
            }
        };
        if worker_id > bits.max_worker_id() {
            return Err(WorkerIdError::RegistryExhausted {
                worker_id,
                max_worker_id: bits.max_worker_id(),
                worker_bits: bits.worker_bits(),
                source_name: self.store.describe(),
            });
        }
        let floor = floor_after(bits, mark_ms);
        let renew_every = self.ttl / 3;
        let ahead = ticks_in(bits, renew_every * 2).max(1);
        let state = Arc::new(MarkState::new(
            floor,
            0,
            ahead / 2,
            self.raise_wait,
            format!(
                "the lease on worker ID {worker_id} at {}",
                self.store.describe()
            ),
        ));
        let lease = WorkerLease {
            inner: Arc::new(Inner {
                store: self.store,
                bits: *bits,
                worker_id,
                holder,
                mark_ms,
                ttl: self.ttl,
                ahead,
                state,
                // Until the first raise below: no generator runs before it.
                // Set right before the first renewal below.
                lapses_at: Mutex::new(Instant::now() + self.ttl - self.ttl / 10),
            }),
            keeper: None,
        };
        // The first raise is recorded before any tick is used: a store that took the
        // lease but cannot record a mark fails here, not on the first ID.
        let target = lease.inner.target_tick();
        // That renewal sets the store's expiry to its now + TTL, its now being after
        // this: the keeper's deadline counts from here (an acquire may wait, as on a
        // store whose identity is brand new).
        let started = Instant::now();
        *lock(&lease.inner.lapses_at) = started + self.ttl - self.ttl / 10;
        match lease.inner.record(target) {
            Ok(true) => {}
            Ok(false) => {
                return Err(WorkerIdError::Lease {
                    why: format!(
                    "the lease on worker ID {worker_id} at {} was lost right after it was taken",
                    lease.inner.store.describe()
                ),
                })
            }
            Err(e) => return Err(e.into()),
        }
        // A store found to have lost data stops the lease at once, not at its renewal.
        let inner = Arc::downgrade(&lease.inner);
        lease.inner.store.on_data_loss(Box::new(move |why| {
            if let Some(inner) = inner.upgrade() {
                inner.give_up(why.to_owned());
            }
        }));
        let mut lease = lease;
        let inner = Arc::clone(&lease.inner);
        let deadline = started + self.ttl;
        lease.keeper = Some(
            std::thread::Builder::new()
                .name("uidgen-lease".into())
                .spawn(move || inner.keep(deadline))
                .map_err(|e| WorkerIdError::Lease {
                    why: format!("cannot start the lease-renewing thread: {e}"),
                })?,
        );
        tracing::debug!(worker_id, store = %lease.inner.store.describe(), "uidgen leased a worker ID");
        Ok(lease)
    }
}

/// The first tick above a mark.
fn floor_after(bits: &BitsAllocator, mark_ms: u64) -> u64 {
    if mark_ms < bits.epoch_millis() {
        return 0;
    }
    bits.tick_at(mark_ms)
        .map_or(bits.max_delta().saturating_add(1), |tick| tick + 1)
}

/// The mark that covers `tick`: the last millisecond of it.
pub(crate) fn mark_of(bits: &BitsAllocator, tick: u64) -> u64 {
    bits.tick_start_millis(tick.saturating_add(1))
        .saturating_sub(1)
}

fn ticks_in(bits: &BitsAllocator, span: Duration) -> u64 {
    u64::try_from(span.as_millis() / u128::from(bits.unit().millis())).unwrap_or(u64::MAX)
}

/// A worker ID held from a [`LeaseStore`]: renewed by a background thread, released
/// (with the exact mark of the ticks used) when dropped. Give it to a generator's
/// builder (`.lease(lease)`); the generator then starts above the worker ID's mark,
/// records a higher mark before it uses a later tick, and stops issuing if the lease is
/// lost or cannot be renewed before it expires (a cached generator drops the IDs its ring
/// and per-thread batches still hold).
///
/// ```
/// # #[cfg(feature = "sqlite")] {
/// use uidgen::{CachedUidGenerator, SqliteLeaseStore, UidGenerator, WorkerLease};
///
/// let dir = tempfile_dir();
/// let store = SqliteLeaseStore::new(dir.join("leases.sqlite3"));
/// let bits = uidgen::BitsAllocator::default();
/// let lease = WorkerLease::builder(store.clone()).acquire(&bits)?;
/// assert_eq!(lease.worker_id(), 0, "the lowest free worker ID");
/// let generator = CachedUidGenerator::builder().allocator(bits).lease(lease).build()?;
/// let last = generator.next_uid()?;
/// drop(generator); // releases worker ID 0, recording the ticks it used
///
/// let again = WorkerLease::builder(store).acquire(&bits)?;
/// assert_eq!(again.worker_id(), 0, "reused");
/// let generator = CachedUidGenerator::builder().allocator(bits).lease(again).build()?;
/// assert!(generator.next_uid()? > last, "and above every ID made before");
/// # std::fs::remove_dir_all(dir).ok();
/// # fn tempfile_dir() -> std::path::PathBuf {
/// #     let dir = std::env::temp_dir().join(format!("uidgen-lease-doc-{}", std::process::id()));
/// #     std::fs::create_dir_all(&dir).unwrap();
/// #     dir
/// # }
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WorkerLease {
    inner: Arc<Inner>,
    keeper: Option<JoinHandle<()>>,
}

struct Inner {
    store: Arc<dyn LeaseStore>,
    bits: BitsAllocator,
    worker_id: u64,
    holder: String,
    /// The mark found at acquire: released again if no tick was used.
    mark_ms: u64,
    ttl: Duration,
    /// How far ahead of the ticks in use the mark is recorded, in ticks.
    ahead: u64,
    state: Arc<MarkState>,
    /// When the keeper gives the lease up unless it is renewed first: a tenth of the TTL
    /// before the store's expiry. A release waits for the store no longer than this.
    lapses_at: Mutex<Instant>,
}

/// A store call's answer, or its panic.
type Answer<T> = std::thread::Result<Result<T, StoreError>>;

/// Where a helper thread leaves a store call's answer.
type AnswerSlot<T> = Arc<Mutex<Option<Answer<T>>>>;

/// What waiting for a store call on a helper thread came to.
enum Waited<T> {
    /// The store's answer; a panicking store is a `Lease` error.
    Answered(Result<T, WorkerIdError>),
    /// No answer by the time given: the call is left behind, its answer unread.
    NoAnswer,
    /// The keeper was told to stop meanwhile.
    Stopping,
}

impl fmt::Debug for WorkerLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerLease")
            .field("worker_id", &self.inner.worker_id)
            .field("holder", &self.inner.holder)
            .field("store", &self.inner.store.describe())
            .field("ttl", &self.inner.ttl)
            .finish_non_exhaustive()
    }
}

impl WorkerLease {
    /// Settings for a lease from `store`.
    pub fn builder(store: impl LeaseStore) -> WorkerLeaseBuilder {
        WorkerLeaseBuilder {
            store: Arc::new(store),
            ttl: DEFAULT_LEASE_TTL,
            raise_wait: Duration::from_secs(5),
            holder: None,
            prefer_within: None,
            range: None,
        }
    }

    /// The leased worker ID.
    pub fn worker_id(&self) -> u64 {
        self.inner.worker_id
    }

    /// Who holds it (this process).
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// The store, for people.
    pub fn store(&self) -> String {
        self.inner.store.describe()
    }

    /// The layout the lease was taken for.
    pub fn allocator(&self) -> &BitsAllocator {
        &self.inner.bits
    }

    /// How long the lease lasts if no renewal comes: until a tenth of the TTL before the
    /// store's expiry, when the generator stops; zero once that has passed, or once the
    /// lease was lost or given up.
    pub fn expires_in(&self) -> Duration {
        if self.inner.state.revoked() || self.inner.state.failure().is_some() {
            return Duration::ZERO;
        }
        lock(&self.inner.lapses_at).saturating_duration_since(Instant::now())
    }

    /// The time mark recorded in the store (Unix ms): the generator starts no tick past
    /// it before a higher one is recorded. `None` once the lease was lost.
    pub fn time_mark_ms(&self) -> Option<u64> {
        match self.inner.state.ceiling() {
            0 => None,
            ceiling => Some(mark_of(&self.inner.bits, ceiling)),
        }
    }

    /// Why no new tick may be started any more, if so (the lease was lost or expired).
    pub fn failure(&self) -> Option<String> {
        self.inner.state.failure()
    }

    pub(crate) fn state(&self) -> &Arc<MarkState> {
        &self.inner.state
    }

    /// Gives the worker ID back now, recording the exact mark; reports a store error that
    /// dropping would only log.
    pub fn release(mut self) -> Result<(), WorkerIdError> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), WorkerIdError> {
        let Some(keeper) = self.keeper.take() else {
            return Ok(());
        };
        let inner = &self.inner;
        inner.state.stop_keeper();
        // Prompt: the keeper never waits on the store itself (see `keep`).
        let _ = keeper.join();
        if let Some(why) = inner.state.failure() {
            // Lost or given up by the keeper: the store is someone else's now or is not
            // answering, and the mark it holds covers every tick used (none was started
            // above it). The lease lapses on its own; nothing to wait for.
            return Err(WorkerIdError::Lease {
                why: format!("not released: {why}"),
            });
        }
        let trouble = inner.state.trouble();
        let used = inner.state.revoke(format!(
            "the lease on worker ID {} was released",
            inner.worker_id
        ));
        let mark = used.map_or(inner.mark_ms, |tick| mark_of(&inner.bits, tick));
        let (worker_id, holder) = (inner.worker_id, inner.holder.clone());
        let call = inner.call_store(move |store| store.release(worker_id, &holder, mark));
        // A store the keeper found failing is not waited for (the release still goes out,
        // and lands if the store comes back while this process lives); a healthy one at
        // most as long as the lease would last anyway. Either way the store's mark covers
        // every tick used, and the lease lapses if the release never lands.
        let until = match &trouble {
            Some(_) => Instant::now(),
            None => *lock(&inner.lapses_at),
        };
        match inner.wait_for(&call?, until, false) {
            Waited::Answered(answer) => answer.map(|_| ()),
            Waited::NoAnswer | Waited::Stopping => Err(WorkerIdError::Lease {
                why: format!(
                    "{} did not answer the release of worker ID {worker_id} in time ({}); \
                     the lease lapses on its own",
                    inner.store.describe(),
                    trouble.as_deref().unwrap_or("it was healthy until now")
                ),
            }),
        }
    }
}

impl Drop for WorkerLease {
    fn drop(&mut self) {
        if let Err(e) = self.release_inner() {
            // The lease expires on its own; its mark already covers every tick used.
            tracing::warn!(error = %e, "uidgen could not release its worker-ID lease");
        }
    }
}

impl Inner {
    /// Stops new ticks for good (logging why), and tells the store how far the ticks
    /// really went, so a new lease here need not start above the mark recorded ahead.
    fn give_up(&self, why: String) {
        tracing::error!("uidgen stops starting new ticks: {why}");
        self.state.count_failure();
        if let Some(used) = self.state.revoke(why) {
            self.store
                .note_used(self.worker_id, &self.holder, mark_of(&self.bits, used));
        }
    }

    /// The tick to record next: this far ahead of the clock, or of the ticks in use if
    /// those are ahead (borrowed by the cached generator).
    fn target_tick(&self) -> u64 {
        let now = self
            .bits
            .tick_at(crate::clock::Clock::now_millis(&crate::clock::SystemClock))
            .unwrap_or(0);
        let in_use = self.state.used().unwrap_or(0).max(self.state.floor());
        now.max(in_use)
            .saturating_add(self.ahead)
            .min(self.bits.max_delta())
    }

    /// Renews the lease and records `target` as the mark; on success generators may use
    /// ticks up to it. Used at acquire, on the caller's thread (the store's own bound
    /// applies); the keeper renews through [`call_store`](Self::call_store) instead.
    fn record(&self, target: u64) -> Result<bool, StoreError> {
        let renewed = self.store.renew(
            self.worker_id,
            &self.holder,
            self.ttl,
            mark_of(&self.bits, target),
        )?;
        if renewed {
            self.state.raise(target);
        }
        Ok(renewed)
    }

    /// Runs `call` against the store on a helper thread, so that whoever waits for it can
    /// stop waiting: a silent store holds a call for its own step bound (5 s by default),
    /// longer than a short lease. The answer lands in the returned slot and wakes the
    /// keeper; a call left behind finishes on its own, and nobody reads its answer.
    fn call_store<T: Send + 'static>(
        &self,
        call: impl FnOnce(&dyn LeaseStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<AnswerSlot<T>, WorkerIdError> {
        let slot: AnswerSlot<T> = Arc::new(Mutex::new(None));
        let (store, state, answer) = (self.store.clone(), self.state.clone(), slot.clone());
        std::thread::Builder::new()
            .name("uidgen-lease-call".into())
            .spawn(move || {
                // A panicking store is a failed call, not a keeper that waits forever.
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(&*store)));
                *lock(&answer) = Some(result);
                state.wake();
            })
            .map_err(|e| WorkerIdError::Lease {
                why: format!("cannot start a thread for a call to the lease store: {e}"),
            })?;
        Ok(slot)
    }

    /// Waits for a [`call_store`](Self::call_store) answer until `until`, or (with
    /// `keeper`) until the keeper is told to stop.
    fn wait_for<T>(&self, slot: &AnswerSlot<T>, until: Instant, keeper: bool) -> Waited<T> {
        let stopping = || keeper && self.state.keeper_stopping();
        self.state
            .nap_until(until, || lock(slot).is_some() || stopping());
        match lock(slot).take() {
            Some(Ok(result)) => Waited::Answered(result.map_err(WorkerIdError::from)),
            Some(Err(panic)) => Waited::Answered(Err(WorkerIdError::Lease {
                why: format!(
                    "{} panicked: {}",
                    self.store.describe(),
                    crate::sync::panic_message(&*panic)
                ),
            })),
            None if stopping() => Waited::Stopping,
            None => Waited::NoAnswer,
        }
    }

    /// The keeper's renewal of the lease with `target` as the mark: on a helper thread,
    /// waited for until `lapse` at the latest. A store that has not answered within a
    /// tenth of the TTL is reported as failing (a generator needing a higher mark then
    /// fails at once, naming it) while the wait goes on.
    fn renew_by(&self, target: u64, lapse: Instant) -> Waited<bool> {
        let (worker_id, holder, ttl) = (self.worker_id, self.holder.clone(), self.ttl);
        let mark = mark_of(&self.bits, target);
        let slot = match self.call_store(move |store| store.renew(worker_id, &holder, ttl, mark)) {
            Ok(slot) => slot,
            Err(e) => return Waited::Answered(Err(e)),
        };
        let late = self.ttl / 10;
        match self.wait_for(&slot, (Instant::now() + late).min(lapse), true) {
            Waited::NoAnswer if Instant::now() < lapse => {
                self.state.set_trouble(self.cannot_renew(&format!(
                    "the store has not answered a renewal within {late:?}"
                )));
                self.wait_for(&slot, lapse, true)
            }
            waited => waited,
        }
    }

    /// The keeper's trouble, for generators' errors: names the worker ID and the store.
    fn cannot_renew(&self, why: &str) -> String {
        format!(
            "the lease on worker ID {} at {} cannot be renewed now: {why}",
            self.worker_id,
            self.store.describe()
        )
    }

    /// The keeper thread: renews every third of the TTL (and whenever a generator nears
    /// the recorded mark); revokes the generator's right to new ticks once the lease is
    /// lost, or a tenth of the TTL before it would expire for want of a renewal. It never
    /// sits in a store call: each runs on a helper thread and is waited for at most until
    /// then, so a silent store cannot hold the lease past its expiry.
    fn keep(&self, mut deadline: Instant) {
        let renew_every = self.ttl / 3;
        // A small margin: a revocation must not come after the store's expiry.
        let margin = self.ttl / 10;
        let mut next_renew = Instant::now() + renew_every;
        let mut failing: Option<String> = None;
        loop {
            let now = Instant::now();
            let lapse = deadline - margin;
            if now >= lapse {
                let why = format!(
                    "the lease on worker ID {} at {} was given up before it expires: it \
                     could not be renewed ({})",
                    self.worker_id,
                    self.store.describe(),
                    failing.as_deref().unwrap_or("no answer in time")
                );
                self.give_up(why);
                return;
            }
            let wait = next_renew.min(lapse).saturating_duration_since(now);
            // While the store fails, retry on the timer only: a generator still asking
            // for a raise must not turn this into a tight loop against the store.
            let wanted = if failing.is_some() {
                self.state.nap(wait);
                false
            } else {
                self.state.wait_wanted(wait)
            };
            if self.state.keeper_stopping() {
                return;
            }
            let woke = Instant::now();
            if woke >= lapse {
                let late = woke.saturating_duration_since(now + wait);
                if late > margin.max(Duration::from_millis(100)) {
                    // Not the store: this process did not run when the renewal was due.
                    let why = format!(
                        "the lease on worker ID {} at {} lapsed while this process was not \
                         running: its keeper woke {late:?} after it was due (a pause such as \
                         SIGSTOP, a frozen VM or a debugger), too late to renew",
                        self.worker_id,
                        self.store.describe()
                    );
                    self.give_up(why);
                    return;
                }
                // The loop's top gives the lease up, naming the store's failure.
                continue;
            }
            if !wanted && woke < next_renew {
                continue;
            }
            let started = Instant::now();
            let target = self.target_tick();
            match self.renew_by(target, lapse) {
                Waited::Stopping => return,
                Waited::NoAnswer => {
                    // Past the lapse: the loop's top gives the lease up.
                    failing = Some(format!(
                        "the store did not answer a renewal within {:?}",
                        started.elapsed()
                    ));
                }
                Waited::Answered(Ok(true)) => {
                    self.state.raise(target);
                    if failing.take().is_some() {
                        tracing::info!(
                            worker_id = self.worker_id,
                            "uidgen renewed its lease again"
                        );
                    }
                    // The store's expiry is its now + TTL, and its now was after `started`.
                    deadline = started + self.ttl;
                    *lock(&self.lapses_at) = deadline - margin;
                    next_renew = started + renew_every;
                }
                Waited::Answered(Ok(false)) => {
                    let why = format!(
                        "the lease on worker ID {} at {} was taken by another holder after it expired",
                        self.worker_id,
                        self.store.describe()
                    );
                    self.give_up(why);
                    return;
                }
                Waited::Answered(Err(WorkerIdError::Store(e @ StoreError::DataLost { .. }))) => {
                    let why = e.to_string();
                    self.give_up(why);
                    return;
                }
                Waited::Answered(Err(e)) => {
                    let e = e.to_string();
                    if failing.is_none() {
                        tracing::warn!(error = %e, "uidgen could not renew its worker-ID lease; retrying");
                    }
                    self.state.set_trouble(self.cannot_renew(&e));
                    failing = Some(e);
                    // Retry soon, but not in a tight loop against a store that is down.
                    next_renew = Instant::now() + (self.ttl / 30).max(Duration::from_millis(50));
                }
            }
        }
    }
}
