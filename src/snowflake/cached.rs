//! [`CachedUidGenerator`]: IDs taken from a ring that a padding thread keeps full.

use super::end_warning::EndWarning;
use super::local::{self, MAX_THREAD_BATCH};
use super::padding::{Demand, Padder, Schedule, Shared, TickSource, LOW_WATER_DIVISOR};
use super::reject::{PutRejectHandler, RejectedPut};
use super::ring::{Claimed, RingBuffer, MAX_CAPACITY};
use super::{base_builder_methods, GeneratorBase};
use crate::clock::Clock;
use crate::error::{ConfigError, UidError};
use crate::generator::UidGenerator;
use crate::layout::BitsAllocator;
use crate::sync::{thread, Arc, Mutex, Ordering};
use crate::wait::take::{self, Supply};
use crate::wait::TakeRejectPolicy;
use std::fmt;
use std::time::Duration;

/// The padding thread's name.
pub const PADDING_THREAD_NAME: &str = "uidgen-padding";

/// The longest `schedule_interval` or `resync_interval`: a day.
const MAX_INTERVAL: Duration = Duration::from_secs(86_400);

/// Hands out IDs from a lock-free ring of pre-built ones; a padding thread refills it.
///
/// `next_uid` is one atomic add on the hot path: no lock, no clock read, no allocation.
/// The ring has room for `(max_sequence + 1) << boost_power` IDs. The padding thread
/// fills it to about what takers took in the last resync interval (all of it under full
/// load, borrowing future ticks: see [`time_ahead`](Self::time_ahead); a few hundred IDs
/// of the current tick under light load), and when fewer than `padding_factor`% of that
/// remain, the first taker to notice wakes it. If fewer than a quarter of that remain
/// before the thread has refilled (a busy machine did not run it in time), the taker
/// fills the ring itself, unless another is filling already: a late padding thread
/// does not make takers wait (`helped_fills` in [`stats`](Self::stats) counts these).
/// Such a fill reads your [`Clock`](crate::Clock) on the taker's thread and never waits
/// on a lease's store; the resync and the put reject handler stay on the thread. The
/// first fill happens in [`build`](CachedUidGeneratorBuilder::build). Dropping the
/// generator stops and joins the thread.
///
/// **Order:** any ID returned after another, on any thread or task, is larger (unless
/// per-thread batches are turned on: [`thread_batch`](CachedUidGeneratorBuilder::thread_batch)).
///
/// **No taker waits for another:** a taker preempted, or stopped in a debugger, between
/// claiming its position and reading it holds up neither the padder nor other takers; if
/// the padder laps the ring meanwhile, the stalled taker claims again (its first ID is
/// never issued).
///
/// **IDs not issued:** a call that fails (the take policy gave up) leaves one, a taker
/// lapped while stalled leaves one, and IDs still in the ring when their tick is
/// `4 × resync_interval` (and at least 1 s) behind the clock are dropped
/// (`discarded_stale`). Fills follow demand (at least 256 IDs), so under a steady rate
/// above 256 IDs per that window none go stale; when load drops, what the ring held may.
///
/// ```
/// use uidgen::{BitsAllocator, CachedUidGenerator, UidGenerator};
///
/// let generator = CachedUidGenerator::builder().worker_id(42).build()?;
/// let a = generator.next_uid()?;
/// let mut batch = [0u64; 64];
/// let n = generator.next_uids(&mut batch)?;
/// assert!(n > 0 && batch[..n].iter().all(|&b| b > a));
/// assert_eq!(generator.parse_uid(a)?.worker_id, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CachedUidGenerator {
    ring: Arc<RingBuffer>,
    shared: Arc<Shared>,
    /// The padding thread, to unpark: an atomic swap and a futex wake, so a take that
    /// asks for padding never waits on a lock.
    padder_thread: thread::Thread,
    take_policy: TakeRejectPolicy,
    /// IDs a thread claims from the ring at once into its thread-local cache (1: none).
    thread_batch: usize,
    /// This generator's tag on thread-local caches.
    instance: u64,
    bits: BitsAllocator,
    worker_id: u64,
    clock: std::sync::Arc<dyn Clock>,
    padder: Option<thread::JoinHandle<()>>,
    /// The padder itself, which a taker fills through when the thread is late.
    filler: Arc<Mutex<Padder>>,
    /// The worker ID's time mark (or lease): dropped after the padder has stopped.
    mark: super::Mark,
}

/// Counters of a [`CachedUidGenerator`], for monitoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CachedStats {
    /// Slots in the ring.
    pub capacity: usize,
    /// IDs waiting in the ring now.
    pub len: usize,
    /// Padding rounds run (including the first, in `build`).
    pub padding_rounds: u64,
    /// Fills a taker made itself because the ring fell below a quarter of the padding
    /// threshold before the padding thread answered (the machine did not run it in time).
    pub helped_fills: u64,
    /// Calls that found the ring empty (each counted once, however long it waited).
    pub rejected_takes: u64,
    /// Padding rounds that left room unfilled: the time-ahead cap held, or the layout ran
    /// out (see [`put_reject_handler`](CachedUidGeneratorBuilder::put_reject_handler)).
    pub rejected_puts: u64,
    /// IDs dropped unissued because their tick was `4 × resync_interval` (and at least
    /// 1 s) behind the clock while they waited in the ring.
    pub discarded_stale: u64,
    /// Times the padder found the clock behind its previous reading. It reads the clock
    /// once per tick batch, so a rollback shorter than that can go unseen (and cannot
    /// matter: the next tick is always after the last one used).
    pub clock_rollbacks: u64,
    /// Whether the near-the-end-of-layout warning has been logged.
    pub warned_near_end: bool,
    /// Ring positions ever claimed: IDs taken (including those parked in per-thread
    /// batches), IDs dropped as stale by the padder, and positions of failed or lapped
    /// calls. Divided by the IDs callers received, it gives ring slots used per ID.
    pub claimed: u64,
    /// Leased worker IDs: times the keeper recorded a higher time mark (each renews the
    /// lease). 0 for fixed worker IDs.
    pub lease_renewals: u64,
    /// Leased worker IDs: times the keeper could not renew (the store failed or was
    /// late) while the lease still lasted.
    pub lease_renewal_failures: u64,
}

/// IDs are dropped as stale no sooner than this after their tick.
const STALE_AT_LEAST: Duration = Duration::from_secs(1);

/// The default [`rollback_allowance`](CachedUidGeneratorBuilder::rollback_allowance): a
/// clock stepped back up to 5 minutes never holds padding back.
pub const DEFAULT_ROLLBACK_ALLOWANCE: Duration = Duration::from_secs(300);

/// Settings for a [`CachedUidGenerator`]; start from [`CachedUidGenerator::builder`].
#[must_use = "a builder does nothing until `build()` is called"]
pub struct CachedUidGeneratorBuilder {
    base: GeneratorBase,
    boost_power: u32,
    ring_capacity: Option<usize>,
    padding_factor: u32,
    thread_batch: usize,
    schedule_interval: Option<Duration>,
    resync_interval: Option<Duration>,
    max_time_ahead: Option<Duration>,
    rollback_allowance: Duration,
    take_policy: TakeRejectPolicy,
    on_rejected_put: Option<PutRejectHandler>,
}

impl CachedUidGeneratorBuilder {
    base_builder_methods!();

    setters! {
        /// The ring holds `(max_sequence + 1) << boost_power` IDs: `2^boost_power` ticks'
        /// worth (default 3, as UidGenerator). The ring may have at most 2^26 slots.
        boost_power(boost_power: u32) => self.boost_power = boost_power;

        /// The ring's size in slots, a power of two from 2 to 2^26, in place of
        /// [`boost_power`](Self::boost_power) (default: none). Use it for layouts with many
        /// sequence bits, where even one tick's worth of slots is more memory than wanted:
        /// the padder then puts part of a tick per round.
        ring_capacity(slots: usize) => self.ring_capacity = Some(slots);

        /// Refill when fewer than this percentage of the padder's last fill remain (1 to 99,
        /// default 50).
        padding_factor(percent: u32) => self.padding_factor = percent;

        /// Per-thread batches, an opt-in (1 to 64; default 1, off): a thread claims up to
        /// this many IDs from the ring with one atomic step and hands them out from a
        /// thread-local cache.
        ///
        /// **The guarantee it weakens:** without batches, any ID returned after another (in
        /// real time, on any thread) is larger; with them, only each thread's own IDs
        /// increase, and an ID made later on another thread (or in an async task that moved
        /// threads) can be smaller. What it gains: fewer atomic steps on the shared cursor (one
        /// CAS per batch). It pays where threads contend for the cursor and loses on one
        /// thread: in the latest `scripts/bench` run (`results/README.md`, 2-core AMD EPYC)
        /// `thread_batch(64)` made 2.4× the ordered default on 2 threads and 2.7× on 4, and
        /// half of it on 1 thread. Measure before you choose it.
        ///
        /// IDs not issued: a batch starts at 1 and doubles with each refill, so a thread that
        /// ends leaves fewer than this many unused (none if it took one ID). A thread keeps
        /// batches for up to 4 generators at once; a fifth evicts the least recently refilled
        /// (whose unused IDs are never issued). IDs whose tick has passed a resync are skipped
        /// (`discarded_stale`).
        thread_batch(ids: usize) => self.thread_batch = ids;

        /// Also refill on a timer, this often (default: only on demand).
        schedule_interval(every: Duration) => self.schedule_interval = Some(every);

        /// How often the padder drops IDs whose tick is more than 4 times this behind the
        /// clock, so IDs taken after a quiet spell carry a current timestamp; also how far
        /// ahead it fills the ring at the recent rate of takes (default: half a tick, at
        /// least 50 ms and at most 500 ms).
        resync_interval(every: Duration) => self.resync_interval = Some(every);

        /// Cap on borrowed time (default: none): the padder does not start a tick further
        /// ahead of the wall clock than this; it waits for the clock instead, and takes that
        /// find the ring empty meanwhile follow the take policy. Throughput is then at most
        /// `max_sequence + 1` IDs per tick once the cap is reached.
        ///
        /// Use it where IDs' timestamps must stay near real time, or where a worker ID may
        /// be reused after a restart (the cap bounds how long the restart must wait).
        max_time_ahead(cap: Duration) => self.max_time_ahead = Some(cap);

        /// How far the clock may step back (an NTP correction, a VM restored) while the
        /// padder goes on from the last tick used at full speed, borrowing past
        /// `max_time_ahead` by as much as the clock went back (default
        /// [`DEFAULT_ROLLBACK_ALLOWANCE`], 5 minutes). Rollbacks are counted
        /// (`stats().clock_rollbacks`) and `time_ahead()` shows the time borrowed. Past
        /// it, the cap holds from the clock as it reads: takes that find the ring empty
        /// fail with [`UidError::WaitingForClock`], saying until when. No cap, no limit.
        rollback_allowance(allowance: Duration) => self.rollback_allowance = allowance;

        /// What a take does when the ring is empty (default: wait up to 1 s, then
        /// [`UidError::BufferExhausted`]).
        take_reject_policy(policy: TakeRejectPolicy) => self.take_policy = policy;
    }

    /// Called on the padding thread when a round leaves room in the ring unfilled: the
    /// time-ahead cap holds, or the layout has run out (default: count it and log at
    /// `debug`). A panic in it is caught and logged; padding goes on.
    pub fn put_reject_handler(
        mut self,
        handler: impl Fn(RejectedPut) + Send + Sync + 'static,
    ) -> Self {
        self.on_rejected_put = Some(std::sync::Arc::new(handler));
        self
    }

    /// Checks the settings, fills the ring once and starts the padding thread.
    pub fn build(self) -> Result<CachedUidGenerator, ConfigError> {
        self.base.check()?;
        let (bits, worker_id, clock, warn_before_end, mark) = self.base.into_parts();
        let capacity = match self.ring_capacity {
            Some(slots) if !(2..=MAX_CAPACITY).contains(&slots) || !slots.is_power_of_two() => {
                return Err(ConfigError::OutOfRange {
                    field: "ring_capacity",
                    value: slots.to_string(),
                    limit: format!("a power of two from 2 to {MAX_CAPACITY} (2^26 slots, 512 MiB)"),
                });
            }
            Some(slots) => slots,
            None => {
                let max_boost = MAX_CAPACITY
                    .trailing_zeros()
                    .saturating_sub(bits.seq_bits());
                if self.boost_power > max_boost {
                    return Err(ConfigError::OutOfRange {
                        field: "boost_power",
                        value: self.boost_power.to_string(),
                        limit: format!(
                            "at most {max_boost}: the ring ((max_sequence + 1) << boost_power = \
                             2^({} + boost_power) slots) may have at most 2^26 slots; or set \
                             ring_capacity",
                            bits.seq_bits()
                        ),
                    });
                }
                1usize << (bits.seq_bits() + self.boost_power)
            }
        };
        if !(1..=99).contains(&self.padding_factor) {
            return Err(ConfigError::OutOfRange {
                field: "padding_factor",
                value: self.padding_factor.to_string(),
                limit: "a percentage from 1 to 99".into(),
            });
        }
        if !(1..=MAX_THREAD_BATCH).contains(&self.thread_batch) {
            return Err(ConfigError::OutOfRange {
                field: "thread_batch",
                value: self.thread_batch.to_string(),
                limit: format!("from 1 (no per-thread batches) to {MAX_THREAD_BATCH}"),
            });
        }
        for (field, interval) in [
            ("schedule_interval", self.schedule_interval),
            ("resync_interval", self.resync_interval),
        ] {
            if let Some(interval) = interval.filter(|i| i.is_zero() || *i > MAX_INTERVAL) {
                return Err(ConfigError::OutOfRange {
                    field,
                    value: format!("{interval:?}"),
                    limit: format!("greater than zero and at most {MAX_INTERVAL:?}"),
                });
            }
        }
        let (ring, producer) = RingBuffer::new(capacity)?;
        let shared = Arc::new(Shared {
            end_warning: EndWarning::new(&bits, warn_before_end),
            ..Shared::default()
        });
        let tick = Duration::from_millis(bits.unit().millis());
        let schedule = Schedule {
            // While capped, look at the clock this often for the next tick.
            capped_retry: (tick / 10).clamp(Duration::from_millis(1), Duration::from_millis(10)),
            pad_every: self.schedule_interval,
            resync_every: self.resync_interval.unwrap_or_else(|| {
                (tick / 2).clamp(Duration::from_millis(50), Duration::from_millis(500))
            }),
        };
        // Stale: a tick at least 4 resync intervals, and at least a second, behind: fills
        // last about one interval at the recent rate, so this leaves room for the rate to
        // drop; and callers that each come back every few hundred milliseconds (a light
        // load on millisecond ticks) must not find their IDs dropped in between.
        let stale_ticks = (4 * schedule.resync_every.as_millis())
            .max(STALE_AT_LEAST.as_millis())
            .div_ceil(u128::from(bits.unit().millis()))
            .max(1) as u64;
        let mut padder = Padder {
            producer,
            source: TickSource::new(bits, worker_id, clock.clone(), mark.state().clone())
                .max_ahead(self.max_time_ahead)
                .rollback_allowance(self.rollback_allowance),
            shared: shared.clone(),
            on_rejected_put: self.on_rejected_put,
            demand: Demand::new(capacity as u64, self.padding_factor, schedule.resync_every),
            stale_ticks,
        };
        if let Some(rejected) = padder.round(false) {
            Padder::report(padder.on_rejected_put.as_ref(), rejected);
        }
        let padder = Arc::new(Mutex::new(padder));

        let handle = thread::Builder::new()
            .name(PADDING_THREAD_NAME.into())
            .spawn({
                let padder = padder.clone();
                move || Padder::run(padder, schedule)
            })
            .map_err(|e| ConfigError::Spawn(std::sync::Arc::new(e)))?;
        {
            // A revoked lease wakes the padder, which drops what the ring holds.
            let (shared, padder) = (shared.clone(), handle.thread().clone());
            mark.state()
                .on_revoke(move || shared.doorbell.ring(&padder));
        }

        Ok(CachedUidGenerator {
            ring,
            shared,
            padder_thread: handle.thread().clone(),
            take_policy: self.take_policy,
            thread_batch: self.thread_batch,
            instance: crate::sync::unique_instance_id(),
            bits,
            worker_id,
            clock,
            padder: Some(handle),
            filler: padder,
            mark,
        })
    }
}

impl CachedUidGenerator {
    /// A builder with the default layout, worker 0, the system clock and UidGenerator's
    /// defaults (`boost_power` 3, `padding_factor` 50, no schedule).
    pub fn builder() -> CachedUidGeneratorBuilder {
        CachedUidGeneratorBuilder {
            base: GeneratorBase::default(),
            boost_power: 3,
            ring_capacity: None,
            padding_factor: 50,
            thread_batch: 1,
            schedule_interval: None,
            resync_interval: None,
            max_time_ahead: None,
            rollback_allowance: DEFAULT_ROLLBACK_ALLOWANCE,
            take_policy: TakeRejectPolicy::default(),
            on_rejected_put: None,
        }
    }

    /// A generator for `worker_id` with layout `bits` and default settings.
    pub fn new(bits: BitsAllocator, worker_id: u64) -> Result<Self, ConfigError> {
        Self::builder().allocator(bits).worker_id(worker_id).build()
    }

    /// Claims up to `out.len()` IDs from the ring, waiting per the take policy if it is
    /// empty; returns how many (at least 1).
    #[inline]
    fn take_into(&self, out: &mut [u64]) -> Result<usize, UidError> {
        match self.take_available(out) {
            Some(n) => Ok(n),
            None => take::blocking(self, &self.take_policy, || self.take_available(out)),
        }
    }

    /// Claims up to `out.len()` IDs from the ring without waiting; `None` when it is empty.
    #[inline]
    fn take_available(&self, out: &mut [u64]) -> Option<usize> {
        let (n, remaining) = self.ring.take_batch(out);
        (n > 0).then(|| {
            self.after_take(remaining);
            n
        })
    }

    /// Claims a position and reads it: the blocking single-ID path, one atomic add.
    #[inline]
    fn next_uid_claiming(&self) -> Result<u64, UidError> {
        let mut position = self.ring.claim();
        // Reads the position, claiming another if it was lapped; `None` while it is not
        // published. The position is ours until read, so waiting keeps it.
        let mut read = move || loop {
            match self.ring.read_claimed(position) {
                Claimed::Taken(taken) => {
                    self.after_take(taken.remaining);
                    return Some(taken.uid);
                }
                Claimed::Lost => position = self.ring.claim(),
                Claimed::NotYet => return None,
            }
        };
        match read() {
            Some(uid) => Ok(uid),
            None => take::blocking(self, &self.take_policy, read),
        }
    }

    /// Takes one ID from the ring without waiting or claiming anything it does not
    /// take; `None` when it is empty.
    #[inline]
    fn take_one(&self) -> Option<u64> {
        self.ring.take().map(|taken| {
            self.after_take(taken.remaining);
            taken.uid
        })
    }

    /// Whether an ID from a per-thread batch is still fresh: its tick has not been passed
    /// by a resync (which dropped such IDs from the ring too).
    #[inline]
    fn is_fresh(&self) -> impl Fn(u64) -> bool + '_ {
        let stale_before = self.shared.stale_before.load(Ordering::Relaxed);
        move |id| self.bits.delta_of(id) >= stale_before
    }

    /// This thread's next cached ID, if it has a fresh one.
    #[inline]
    fn pop_local(&self) -> Option<u64> {
        let mut skipped = 0;
        let uid = local::pop(self.instance, self.is_fresh(), &mut skipped);
        self.count_skipped(skipped);
        uid
    }

    #[inline]
    fn count_skipped(&self, skipped: u64) {
        if skipped > 0 {
            self.shared.discarded.fetch_add(skipped, Ordering::Relaxed);
        }
    }

    /// Claims a batch from the ring for this thread's cache and returns its first ID.
    #[inline(never)]
    fn next_uid_refilling_thread_batch(&self) -> Result<u64, UidError> {
        let mut batch = [0u64; MAX_THREAD_BATCH];
        let size = local::refill_size(self.instance, self.thread_batch);
        let batch = &mut batch[..size];
        let n = self.take_into(batch)?;
        local::store(self.instance, &batch[1..n], self.thread_batch);
        Ok(batch[0])
    }

    /// How far the newest padded tick is ahead of the wall clock (zero when it is not).
    ///
    /// Under sustained load faster than `max_sequence + 1` IDs per tick, the padder
    /// borrows future ticks and this grows: IDs then carry timestamps later than the time
    /// they were made. A generator restarted with the **same** worker ID within this
    /// window could repeat IDs; one worker ID per launch (as UidGenerator assigns them)
    /// rules that out. When load drops, the clock catches up. Cap it with
    /// [`max_time_ahead`](CachedUidGeneratorBuilder::max_time_ahead).
    pub fn time_ahead(&self) -> Duration {
        let padded = self.shared.padded_tick.load(Ordering::Relaxed);
        let now = self.bits.tick_at(self.clock.now_millis()).unwrap_or(0);
        Duration::from_millis(padded.saturating_sub(now) * self.bits.unit().millis())
    }

    /// Not API: `next_uid`'s take with `stall` run between the claim and the read, so
    /// tests can stop a taker where it holds a position. `None` if the position was not
    /// published (it is then lost, as a failed call's is).
    #[doc(hidden)]
    pub fn take_stalled_for_tests(&self, mut stall: impl FnMut()) -> Option<u64> {
        loop {
            let position = self.ring.claim();
            stall();
            match self.ring.read_claimed(position) {
                Claimed::Taken(taken) => return Some(taken.uid),
                Claimed::Lost => continue,
                Claimed::NotYet => return None,
            }
        }
    }

    /// Not API: stops the padding thread before its next round until the guard is
    /// dropped, as a machine too busy to run it would, so tests can show takers fill the
    /// ring themselves meanwhile.
    #[doc(hidden)]
    pub fn hold_padding_thread_for_tests(&self) -> impl Drop + '_ {
        crate::sync::lock(&self.shared.gate)
    }

    /// Not API: holds the padder's lock until the guard is dropped, as a taker preempted
    /// in the middle of a fill would: neither the padding thread nor other takers can
    /// fill meanwhile, so tests can show the take policies still bound every call.
    #[doc(hidden)]
    pub fn hold_filler_for_tests(&self) -> impl Drop + '_ {
        crate::sync::lock(&self.filler)
    }

    /// Counters for monitoring.
    pub fn stats(&self) -> CachedStats {
        let shared = &*self.shared;
        let renewals = self.mark.state().renewal_counts();
        CachedStats {
            capacity: self.ring.capacity(),
            len: self.ring.len(),
            padding_rounds: shared.rounds.load(Ordering::Relaxed),
            helped_fills: shared.helped.load(Ordering::Relaxed),
            rejected_takes: shared.rejected_takes.load(Ordering::Relaxed),
            rejected_puts: shared.rejected_puts.load(Ordering::Relaxed),
            discarded_stale: shared.discarded.load(Ordering::Relaxed),
            clock_rollbacks: shared.clock_rollbacks.load(Ordering::Relaxed),
            warned_near_end: shared.end_warning.has_warned(),
            claimed: self.ring.claimed(),
            lease_renewals: renewals.0,
            lease_renewal_failures: renewals.1,
        }
    }

    /// Fills `out` from the front with IDs ready in the ring now, in increasing order,
    /// claimed with one atomic step; returns how many (at least 1 unless `out` is
    /// empty). Never blocks: when the ring is empty it asks for padding and fails as
    /// [`try_next_uid`](UidGenerator::try_next_uid) does. For async servers, which wait
    /// for the first ID with `next_uid_async` and take the rest with this. With
    /// [`thread_batch`](CachedUidGeneratorBuilder::thread_batch) above 1 it returns one
    /// ID at a time, so this thread's own IDs still come out in order.
    pub fn try_next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.thread_batch <= 1 {
            if let Some(n) = self.take_available(out) {
                return Ok(n);
            }
        }
        out[0] = self.try_next_uid()?;
        Ok(1)
    }

    /// Why this generator cannot make new IDs now, if so: its worker ID's lease was
    /// lost or expired (final), or its keeper cannot reach the store (until the next
    /// renewal). `None` for a fixed worker ID, and for a lease in good standing. For
    /// readiness checks: IDs already in the ring may still be handed out while the lease
    /// lasts.
    pub fn worker_id_trouble(&self) -> Option<String> {
        let state = self.mark.state();
        state.failure().or_else(|| state.trouble())
    }

    /// Why padding waits for the clock now, if it does, in words and with the time it
    /// waits for: a clock stepped back past the rollback allowance, or the worker ID's
    /// time mark ahead of the clock by more than `max_time_ahead`. A service may then move
    /// to another worker ID whose mark is behind the clock.
    pub fn waiting_for_clock(&self) -> Option<String> {
        crate::sync::lock(&self.shared.waiting).clone()
    }

    /// Why this generator will never make new IDs again, if so: its worker ID's lease was
    /// lost, expired or given up (a store that failed past the lease, a pause, a store
    /// that lost data). A service then builds a new generator on a new lease.
    pub fn worker_id_lost(&self) -> Option<String> {
        self.mark.state().failure()
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    #[inline]
    fn after_take(&self, remaining: u64) {
        let threshold = self.shared.hints.threshold.load(Ordering::Relaxed);
        if remaining < threshold {
            if remaining < threshold / LOW_WATER_DIVISOR {
                self.fill_if_late();
            } else {
                self.request_padding();
            }
        }
    }

    /// The ring is low and the padding thread has not refilled it: it was asked when the
    /// ring crossed the threshold, but a busy machine may not have run it since. The
    /// taker puts up to 4,096 IDs itself (a few microseconds of stores, and a reading of
    /// the generator's clock per tick it starts), unless a filler (another taker or the
    /// thread) is at it already, so a late thread
    /// does not make takers wait. Nothing here waits on a lock or the store.
    #[cold]
    #[inline(never)]
    fn fill_if_late(&self) {
        let shared = &*self.shared;
        if shared.hints.capped.load(Ordering::Relaxed) {
            return;
        }
        if shared.takers_stop_filling.load(Ordering::Relaxed) {
            self.request_padding();
            return;
        }
        // One try: a filler at it already (a taker or the thread) is all this take needs.
        let Some(mut padder) = crate::sync::try_lock_once(&self.filler) else {
            return;
        };
        // A user's clock may panic; a take must not. After one such panic takers stop
        // filling for good (one log line, not one per take) and leave it to the thread.
        let helped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| padder.help()))
            .unwrap_or_else(|panic| {
                if !shared.takers_stop_filling.swap(true, Ordering::Relaxed) {
                    tracing::error!(
                        message = %crate::sync::panic_message(&*panic),
                        "uidgen fill on a taker's thread panicked; from now on only the padding thread fills"
                    );
                }
                // Not dropped here: a payload whose drop panics would reach the caller.
                std::mem::forget(panic);
                false
            });
        if !helped {
            drop(padder);
            // Even if the fill just set `capped`: the thread must see it to start its
            // timer, and it may be parked until its next resync.
            shared.doorbell.ring(&self.padder_thread);
        }
    }

    /// Wakes the padder unless a wake-up is already pending, or it is waiting for the
    /// clock (the time-ahead cap), when it wakes itself.
    #[inline]
    fn request_padding(&self) {
        if self.shared.hints.capped.load(Ordering::Relaxed) {
            return;
        }
        self.shared.doorbell.ring(&self.padder_thread);
    }

    /// Why an empty ring will stay empty, if it will: the layout's time is used up, the
    /// padder is gone, the lease is lost, or (until its store answers again) the store the
    /// next tick's mark waits for is failing.
    fn empty_for_good(&self) -> Option<UidError> {
        // Atomic loads first: takers of an empty ring come here often, and must not
        // meet on a lock (try_next_uid never blocks).
        let mark = self.mark.state();
        if mark.revoked() || mark.held() {
            if let Some(err) = mark.stuck() {
                return Some(err);
            }
        }
        if !self.ring.is_closed() {
            return None;
        }
        // Set before the ring was closed, and the closed flag's Acquire makes it visible.
        Some(if self.shared.exhausted.load(Ordering::Relaxed) {
            self.bits.time_exhausted()
        } else {
            UidError::PadderStopped {
                why: "it exited unexpectedly",
            }
        })
    }

    /// The next ID, waiting on the tokio runtime (never blocking its thread) while the
    /// ring is empty, as long as the take policy allows.
    ///
    /// Takes straight from the ring, never from a per-thread batch, so the IDs one task
    /// gets strictly increase even when the task moves between threads.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = uidgen::CachedUidGenerator::builder().worker_id(3).build()?;
    /// let a = generator.next_uid_async().await?;
    /// let b = generator.next_uid_async().await?;
    /// assert!(b > a);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn next_uid_async(&self) -> Result<u64, UidError> {
        if let Some(uid) = self.take_one() {
            return Ok(uid);
        }
        take::on_runtime(self, &self.take_policy, || self.take_one()).await
    }
}

/// How a take that found the ring empty waits (`crate::wait::take`).
impl Supply for CachedUidGenerator {
    fn found_empty(&self) {
        self.shared.rejected_takes.fetch_add(1, Ordering::Relaxed);
    }

    /// Wakes the padder, and fills on the taker's thread if the padding thread is late.
    fn ask_for_more(&self) {
        self.request_padding();
        self.fill_if_late();
    }

    fn dried_up(&self, _waited: Duration) -> Option<UidError> {
        self.empty_for_good()
    }

    /// A ring left empty because the next tick waits for its store to record a mark:
    /// that is the cause to report, naming the store.
    fn gave_up(&self, waited: Duration) -> UidError {
        self.mark.state().held_error().unwrap_or_else(|| {
            match crate::sync::lock(&self.shared.waiting).clone() {
                Some(why) => UidError::WaitingForClock { why },
                None => UidError::BufferExhausted { waited },
            }
        })
    }
}

impl UidGenerator for CachedUidGenerator {
    #[inline]
    fn next_uid(&self) -> Result<u64, UidError> {
        if self.thread_batch > 1 {
            if let Some(uid) = self.pop_local() {
                return Ok(uid);
            }
            return self.next_uid_refilling_thread_batch();
        }
        self.next_uid_claiming()
    }

    fn try_next_uid(&self) -> Result<u64, UidError> {
        if self.thread_batch > 1 {
            if let Some(uid) = self.pop_local() {
                return Ok(uid);
            }
        }
        if let Some(uid) = self.take_one() {
            return Ok(uid);
        }
        self.shared.rejected_takes.fetch_add(1, Ordering::Relaxed);
        self.request_padding();
        if let Some(err) = self.empty_for_good() {
            return self.take_one().ok_or(err);
        }
        Err(UidError::WouldBlock {
            why: if self.mark.state().held() {
                "the ring is empty; the store is recording a higher time mark for the worker ID"
            } else {
                "the ring is empty; its padding thread is refilling it"
            },
            wait: None,
        })
    }

    /// Claims up to `out.len()` consecutive IDs in one atomic step (this thread's cached
    /// IDs first); returns how many (at least 1 unless `out` is empty; fewer than
    /// `out.len()` when the ring held fewer). Errors as `next_uid`.
    #[inline]
    fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        if out.is_empty() {
            return Ok(0);
        }
        // This thread's cached IDs come first: they are older than anything in the ring.
        let cached = if self.thread_batch > 1 {
            let mut skipped = 0;
            let n = local::drain_into(self.instance, self.is_fresh(), &mut skipped, out);
            self.count_skipped(skipped);
            n
        } else {
            0
        };
        if cached == out.len() {
            return Ok(cached);
        }
        if cached > 0 {
            // Some IDs already: top up from the ring without waiting.
            return Ok(cached + self.take_available(&mut out[cached..]).unwrap_or(0));
        }
        self.take_into(out)
    }

    fn allocator(&self) -> &BitsAllocator {
        &self.bits
    }

    fn worker_id(&self) -> u64 {
        self.worker_id
    }
}

impl Drop for CachedUidGenerator {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // A padder waiting for its store to record a higher mark stops waiting.
        self.mark.state().stop_keeper();
        self.padder_thread.unpark();
        if let Some(handle) = self.padder.take() {
            // A panic on the padder is caught per round, so join only fails if the
            // thread died some other way; nothing is left to clean up then.
            let _ = handle.join();
        }
    }
}

impl fmt::Debug for CachedUidGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedUidGenerator")
            .field("bits", &self.bits)
            .field("worker_id", &self.worker_id)
            .field("capacity", &self.ring.capacity())
            .field("thread_batch", &self.thread_batch)
            .field("take_policy", &self.take_policy)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for CachedUidGeneratorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedUidGeneratorBuilder")
            .field("base", &self.base)
            .field("boost_power", &self.boost_power)
            .field("ring_capacity", &self.ring_capacity)
            .field("padding_factor", &self.padding_factor)
            .field("thread_batch", &self.thread_batch)
            .field("schedule_interval", &self.schedule_interval)
            .field("resync_interval", &self.resync_interval)
            .field("max_time_ahead", &self.max_time_ahead)
            .field("take_policy", &self.take_policy)
            .field(
                "put_reject_handler",
                &self.on_rejected_put.as_ref().map(|_| ".."),
            )
            .finish()
    }
}
