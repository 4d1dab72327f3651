//! [`CachedUidGenerator`]: IDs taken from a ring that a padding thread keeps full.

use super::local::{self, MAX_THREAD_BATCH};
use super::padding::{Padder, Shared, LOW_WATER_DIVISOR};
use super::ring::{Claimed, RingBuffer};
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
/// first fill happens in [`build`](crate::CachedUidGeneratorBuilder::build). Dropping the
/// generator stops and joins the thread.
///
/// **Order:** any ID returned after another, on any thread or task, is larger (unless
/// per-thread batches are turned on: [`thread_batch`](crate::CachedUidGeneratorBuilder::thread_batch)).
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
    pub(super) ring: Arc<RingBuffer>,
    pub(super) shared: Arc<Shared>,
    /// The padding thread, to unpark: an atomic swap and a futex wake, so a take that
    /// asks for padding never waits on a lock.
    pub(super) padder_thread: thread::Thread,
    pub(super) take_policy: TakeRejectPolicy,
    /// IDs a thread claims from the ring at once into its thread-local cache (1: none).
    pub(super) thread_batch: usize,
    /// This generator's tag on thread-local caches.
    pub(super) instance: u64,
    pub(super) bits: BitsAllocator,
    pub(super) worker_id: u64,
    pub(super) clock: std::sync::Arc<dyn Clock>,
    pub(super) padder: Option<thread::JoinHandle<()>>,
    /// The padder itself, which a taker fills through when the thread is late.
    pub(super) filler: Arc<Mutex<Padder>>,
    /// The worker ID's time mark (or lease): dropped after the padder has stopped.
    pub(super) mark: super::Mark,
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
    /// out (see [`put_reject_handler`](crate::CachedUidGeneratorBuilder::put_reject_handler)).
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

impl CachedUidGenerator {
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
    /// [`max_time_ahead`](crate::CachedUidGeneratorBuilder::max_time_ahead).
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
    /// [`thread_batch`](crate::CachedUidGeneratorBuilder::thread_batch) above 1 it returns one
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

    /// The worker lease this generator runs on (its holder, expiry and time mark), for
    /// status pages; `None` for a fixed worker ID.
    pub fn lease(&self) -> Option<&crate::WorkerLease> {
        match &self.mark {
            super::Mark::Lease(lease) => Some(lease),
            super::Mark::Process(_) => None,
        }
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
