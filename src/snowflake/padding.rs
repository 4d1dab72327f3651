//! The padding side of [`CachedUidGenerator`](crate::CachedUidGenerator): the thread that
//! keeps the ring full with IDs made from "borrowed future ticks".
//!
//! Each run is the rest of one tick's sequence numbers. The next tick is
//! `max(last + 1, now)`: under load the padder runs ahead of the clock (it does not wait
//! for the next second, so throughput is not capped by the clock), when idle it catches up
//! with the clock, and a clock that goes backwards cannot make it reuse a tick. A round
//! that finds the clock past the current tick leaves that tick's unused numbers unused
//! (they were never put, so nothing is wasted) and starts at the clock's tick.
//!
//! **How much** a round puts follows demand ([`Demand`]): the ring is filled to about the
//! IDs taken in one resync interval, up to the whole ring. Under full load that is the
//! whole ring and the padder borrows future ticks; under light load the ring holds a few
//! hundred IDs of the current tick, so IDs are not put only to go stale and be dropped,
//! and no time is borrowed.

use super::end_warning::EndWarning;
use super::reject::{PutRejectHandler, RejectedPut};
use super::ring::{PutRejected, RingProducer};
use crate::clock::Clock;
use crate::layout::BitsAllocator;
use crate::sync::{lock, panic_message, Arc, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::wait::doorbell::{Doorbell, Wake};
use crate::worker::mark::MarkState;
use crossbeam_utils::CachePadded;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// State the takers and the padding thread share.
#[derive(Default)]
pub(crate) struct Shared {
    /// Rung by the first taker that sees the ring below the padding threshold (and by
    /// every taker that finds it empty); answered by the padder as a round starts.
    pub(crate) doorbell: Doorbell,
    /// What takers read on every take and the padder writes once a round.
    pub(crate) hints: CachePadded<Hints>,
    /// The tick below which an ID is stale: set by every resync round, after it drops
    /// such IDs from the ring, so per-thread batches skip theirs too (see `local.rs`).
    pub(crate) stale_before: CachePadded<AtomicU64>,
    /// Set when the generator is dropped.
    pub(crate) stop: AtomicBool,
    /// Set before the ring is closed when the layout's last tick has been padded: a
    /// closed ring then means `TimeExhausted`, else that the padder is gone.
    pub(crate) exhausted: AtomicBool,
    /// The newest tick padded, for `time_ahead()`.
    pub(crate) padded_tick: AtomicU64,
    /// Padding rounds that left room in the ring unfilled (time-ahead cap, layout end).
    pub(crate) rejected_puts: AtomicU64,
    /// `next_uid`/`next_uids` calls that found the ring empty.
    pub(crate) rejected_takes: AtomicU64,
    /// Padding rounds run.
    pub(crate) rounds: AtomicU64,
    /// Fills a taker made because the ring ran low before the padding thread answered.
    pub(crate) helped: AtomicU64,
    /// A taker's fill panicked (a user's clock): takers leave filling to the thread.
    pub(crate) takers_stop_filling: AtomicBool,
    /// The padding thread passes through it before each round; tests hold it to stop
    /// the thread as a busy machine would (never held otherwise).
    pub(crate) gate: Mutex<()>,
    /// IDs dropped unissued because their tick had passed (see resync).
    pub(crate) discarded: AtomicU64,
    /// Times the padder found the clock behind its previous reading.
    pub(crate) clock_rollbacks: AtomicU64,
    /// Warns, once, when the padder starts a tick near the layout's end.
    pub(crate) end_warning: EndWarning,
    /// Why the padder holds back while the time-ahead cap holds, in the user's terms (a
    /// clock stepped back further than the rollback allowance, a time mark ahead of the
    /// clock), and until when: takers that find the ring empty report it.
    pub(crate) waiting: Mutex<Option<String>>,
}

/// Read by takers on every take; written by the padder once a round.
#[derive(Default)]
pub(crate) struct Hints {
    /// A take that leaves fewer IDs than this in the ring asks for padding.
    pub(crate) threshold: AtomicU64,
    /// The last round stopped at the time-ahead cap: the padder is waiting for the clock
    /// and wakes itself, so takes need not wake it.
    pub(crate) capped: AtomicBool,
}

/// How many IDs a round puts: about what takers took in the last `horizon`, so a
/// quiet generator does not fill its ring with IDs that go stale, and a busy one gets
/// the whole ring.
pub(crate) struct Demand {
    /// IDs the ring should hold after a round.
    want: u64,
    /// The smallest fill (and the first, in `build`).
    min: u64,
    capacity: u64,
    /// A take leaving fewer than this percentage of `want` asks for padding.
    padding_factor: u64,
    /// How far ahead a fill provides for: the resync interval.
    horizon: Duration,
    /// When the current resync window began, and the ring's claimed count then.
    window_start: Instant,
    window_claimed: u64,
    /// The first round (in `build`) has run: it fills `min` and learns nothing.
    started: bool,
}

/// A take that leaves fewer than `threshold / LOW_WATER_DIVISOR` IDs in the ring fills
/// it itself: the padding thread, asked at the threshold, is late.
pub(crate) const LOW_WATER_DIVISOR: u64 = 4;

/// The most IDs one taker's fill puts (a few microseconds of stores): enough to go on
/// with while the thread is late, never the whole ring on a caller's thread.
pub(crate) const HELPER_FILL: u64 = 4096;

/// The first and smallest fill: enough for a burst to start on while the padder wakes,
/// few enough to be taken within a resync interval at light load.
pub(crate) const MIN_FILL: u64 = 256;

impl Demand {
    pub(crate) fn new(capacity: u64, padding_factor: u32, horizon: Duration) -> Self {
        let min = MIN_FILL.min(capacity);
        Self {
            want: min,
            min,
            capacity,
            padding_factor: u64::from(padding_factor),
            horizon,
            window_start: Instant::now(),
            window_claimed: 0,
            started: false,
        }
    }

    /// Sets the round's target. A resync round (the timer's, once per `horizon`) sets it
    /// to the rate of takes over the window just ended, up or down: a window is long
    /// enough for the rate to mean something. A round a taker asked for quadruples it if
    /// the ring was nearly drained by the time the padder woke (a burst outpaces it), and
    /// otherwise leaves it.
    fn update(&mut self, claimed: u64, len: u64, resync: bool) -> u64 {
        if !std::mem::replace(&mut self.started, true) {
            return self.want;
        }
        if resync {
            let now = Instant::now();
            let elapsed = now
                .duration_since(self.window_start)
                .max(Duration::from_millis(1));
            let taken = claimed.saturating_sub(self.window_claimed);
            self.window_start = now;
            self.window_claimed = claimed;
            self.want = (taken as f64 * self.horizon.as_secs_f64() / elapsed.as_secs_f64())
                .min(self.capacity as f64) as u64;
        } else if len.saturating_mul(4) <= self.threshold() {
            self.want = self.want.saturating_mul(4);
        }
        self.want = self.want.clamp(self.min, self.capacity);
        self.want
    }

    /// The doorbell threshold for the current target.
    fn threshold(&self) -> u64 {
        self.want * self.padding_factor / 100
    }
}

/// Makes IDs tick by tick; the padder's side of borrowed time.
pub(crate) struct TickSource {
    pub(crate) bits: BitsAllocator,
    pub(crate) worker_id: u64,
    pub(crate) clock: std::sync::Arc<dyn Clock>,
    /// The tick being handed out and the worker ID, packed, with sequence 0.
    base: u64,
    /// The next sequence number in the current tick; past `max_sequence` when a new
    /// tick is due (and before the first).
    next_seq: u64,
    /// The current tick; `None` before the first.
    tick: Option<u64>,
    /// The layout's last tick has been used up.
    exhausted: bool,
    /// Cap on how far a new tick may be ahead of the clock, in ticks.
    max_ahead: Option<u64>,
    /// The last tick check stopped at the cap: the padder retries on a timer.
    capped: bool,
    /// The latest clock reading, to notice rollbacks.
    latest_millis: u64,
    /// The clock is behind `latest_millis` now: this rollback is already counted and logged.
    in_rollback: bool,
    /// How far back the clock may step while ticks go on from the last one used, the
    /// time-ahead cap counting from the time that really passed (ms).
    rollback_allowance_ms: u64,
    /// The last clock reading that was not behind, and when it was taken: the time that
    /// really passed while the clock is behind.
    anchor: Option<(Instant, u64)>,
    /// How far the clock is behind its latest reading now (ms; 0 when it is not).
    behind_ms: u64,
    /// `Shared::waiting` holds this source's reason.
    mark_waiting: bool,
    /// This source has started a tick (before that, the one it waits for is the mark's).
    started_any: bool,
    /// The worker ID's time mark: each tick is admitted (recorded first if need be).
    mark: std::sync::Arc<MarkState>,
}

impl TickSource {
    pub(crate) fn new(
        bits: BitsAllocator,
        worker_id: u64,
        clock: std::sync::Arc<dyn Clock>,
        mark: std::sync::Arc<MarkState>,
    ) -> Self {
        Self {
            bits,
            worker_id,
            clock,
            base: 0,
            next_seq: bits.max_sequence() + 1,
            // As if the ticks below the mark's floor were used up: the first is above.
            tick: mark.floor().checked_sub(1),
            mark,
            exhausted: false,
            max_ahead: None,
            capped: false,
            latest_millis: 0,
            in_rollback: false,
            rollback_allowance_ms: 0,
            anchor: None,
            behind_ms: 0,
            mark_waiting: false,
            started_any: false,
        }
    }

    /// Never uses a tick whose IDs are not all above `floor`: as if the ticks below
    /// were used up, so padding starts at or after the first tick above it (waiting at
    /// the time-ahead cap if that is ahead of the clock).
    pub(crate) fn id_floor(mut self, floor: Option<u64>) -> Self {
        if let Some(floor) = floor {
            let first = self.bits.floor_tick(self.worker_id, floor);
            self.tick = self.tick.max(first.checked_sub(1));
            if first > self.bits.max_delta() {
                self.exhausted = true;
            }
        }
        self
    }

    /// How far back the clock may step without holding padding back (see the builder's
    /// `rollback_allowance`).
    pub(crate) fn rollback_allowance(mut self, allowance: Duration) -> Self {
        self.rollback_allowance_ms = u64::try_from(allowance.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Caps borrowed time (`None`: no cap).
    pub(crate) fn max_ahead(mut self, cap: Option<Duration>) -> Self {
        self.max_ahead = cap.map(|cap| {
            u64::try_from(cap.as_millis() / u128::from(self.bits.unit().millis()))
                .unwrap_or(u64::MAX)
        });
        self
    }

    /// The tick the clock reads now; 0 if it reads before the epoch (the next tick is
    /// then `last + 1`, so a clock set far back still cannot repeat an ID).
    fn now_tick(&self) -> u64 {
        self.bits.tick_at(self.clock.now_millis()).unwrap_or(0)
    }

    /// [`now_tick`](Self::now_tick), noting a clock that went backwards since last read.
    fn observe_now_tick(&mut self, shared: &Shared) -> u64 {
        let now_millis = self.clock.now_millis();
        if now_millis < self.latest_millis {
            self.behind_ms = self.latest_millis - now_millis;
            // Once per episode: the clock stays behind for many ticks after one rollback.
            if !self.in_rollback {
                self.in_rollback = true;
                shared.clock_rollbacks.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    by_ms = self.behind_ms,
                    allowance_ms = self.rollback_allowance_ms,
                    "uidgen: the clock stepped back {:.1} s; ticks go on from the last one used{}",
                    self.behind_ms as f64 / 1000.0,
                    if self.behind_ms <= self.rollback_allowance_ms {
                        " (within the rollback allowance: borrowing past the time-ahead cap)"
                    } else {
                        " (past the rollback allowance: waiting for the clock where the time-ahead cap holds)"
                    }
                );
            }
        } else {
            self.in_rollback = false;
            self.behind_ms = 0;
            self.anchor = Some((Instant::now(), now_millis));
        }
        self.latest_millis = self.latest_millis.max(now_millis);
        self.bits.tick_at(now_millis).unwrap_or(0)
    }

    /// Makes sure the current tick has a sequence number left, starting the next tick
    /// if not; `false` when the layout has no tick left.
    fn ensure_tick(&mut self, shared: &Shared, may_wait: bool) -> bool {
        if self.next_seq <= self.bits.max_sequence() {
            return true;
        }
        if self.exhausted {
            return false;
        }
        // Read once per tick, not per ID.
        let now = self.observe_now_tick(shared);
        let next = self.tick.map_or(now, |last| now.max(last + 1));
        if next > self.bits.max_delta() {
            self.exhausted = true;
            return false;
        }
        // Within the rollback allowance the cap counts from the time that really passed
        // since the clock was last right, not from the clock stepped back.
        let cap_from = match self.anchor {
            Some((at, millis))
                if self.behind_ms > 0 && self.behind_ms <= self.rollback_allowance_ms =>
            {
                let elapsed = u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX);
                self.bits
                    .tick_at(millis.saturating_add(elapsed))
                    .unwrap_or(now)
                    .max(now)
            }
            _ => now,
        };
        self.capped = self
            .max_ahead
            .is_some_and(|cap| next.saturating_sub(cap_from) > cap);
        if self.capped {
            self.note_waiting(shared, next, now);
            return false;
        }
        if self.mark_waiting {
            self.mark_waiting = false;
            *lock(&shared.waiting) = None;
        }
        if let Err(e) = self.mark.admit(next, may_wait) {
            // Retried on the capped timer; takers see a lost lease as their error.
            tracing::debug!(error = %e, "uidgen padder may not start tick {next}");
            self.capped = true;
            return false;
        }
        shared.end_warning.observe(next, &self.bits);
        self.started_any = true;
        self.tick = Some(next);
        self.base = self.bits.pack(next, self.worker_id, 0);
        self.next_seq = 0;
        shared.padded_tick.store(next, Ordering::Relaxed);
        true
    }

    /// Says why padding holds back at the cap, and until when, for takers' errors.
    fn note_waiting(&mut self, shared: &Shared, next: u64, now: u64) {
        let cap = self.max_ahead.unwrap_or(0);
        // Padding goes on once the clock reaches `next - cap`.
        let until = self.bits.tick_start_millis(next.saturating_sub(cap));
        let why = if self.behind_ms > self.rollback_allowance_ms {
            format!(
                "the clock stepped back {:.1} s, more than the {:.1} s rollback allowance; \
                 waiting for it to reach {} UTC",
                self.behind_ms as f64 / 1000.0,
                self.rollback_allowance_ms as f64 / 1000.0,
                crate::clock::format_instant(until)
            )
        } else if !self.started_any {
            // No tick started yet: the one waited for is the mark's (the cap reached by
            // this generator's own borrowing is only the take policy's business).
            format!(
                "worker ID {}'s time mark is {:.1} s ahead of the clock (a previous holder \
                 borrowed that far, or a clock ran ahead); waiting until {} UTC",
                self.worker_id,
                (self.bits.tick_start_millis(next) as f64
                    - self.bits.tick_start_millis(now) as f64)
                    / 1000.0,
                crate::clock::format_instant(until)
            )
        } else {
            return;
        };
        self.mark_waiting = true;
        *lock(&shared.waiting) = Some(why);
    }

    /// Leaves the current tick if the clock has passed it: its unused sequence numbers
    /// were never put, and IDs from the clock's tick are nearer the time they are taken.
    fn catch_up(&mut self, now: u64) {
        if self.tick.is_some_and(|tick| tick < now) {
            self.next_seq = self.bits.max_sequence() + 1;
        }
    }

    /// The rest of the current tick as a run of consecutive IDs `(first, count)`,
    /// starting the next tick if this one is used up; `None` when no tick may start
    /// (the layout is exhausted, or the time-ahead cap holds).
    fn next_run(&mut self, shared: &Shared, may_wait: bool) -> Option<(u64, u64)> {
        self.ensure_tick(shared, may_wait).then(|| {
            (
                self.base | self.next_seq,
                self.bits.max_sequence() + 1 - self.next_seq,
            )
        })
    }

    /// Marks the first `put` IDs of the last run as handed to the ring.
    fn consume(&mut self, put: u64) {
        self.next_seq += put;
    }
}

/// Owns the ring's producer and the tick source; runs on the padding thread after the
/// first round, which `build()` runs itself.
pub(crate) struct Padder {
    pub(crate) producer: RingProducer,
    pub(crate) source: TickSource,
    pub(crate) shared: Arc<Shared>,
    pub(crate) on_rejected_put: Option<PutRejectHandler>,
    pub(crate) demand: Demand,
    /// An ID whose tick is this many ticks behind the clock's is stale: resync drops it.
    pub(crate) stale_ticks: u64,
}

/// When the padding thread wakes by itself.
pub(crate) struct Schedule {
    /// While the time-ahead cap holds padding back, look at the clock this often.
    pub(crate) capped_retry: Duration,
    /// Pad every this often, as well as on demand.
    pub(crate) pad_every: Option<Duration>,
    /// Drop IDs whose tick has passed, and refill, every this often.
    pub(crate) resync_every: Duration,
}

impl Padder {
    /// One padding round: optionally drop IDs whose tick has passed, then fill the ring
    /// to what demand asks for. `resync` rounds are the timer's; others were asked for.
    /// Returns what to [`report`](Self::report) if it left room unfilled.
    pub(crate) fn round(&mut self, resync: bool) -> Option<RejectedPut> {
        let shared = &*self.shared;
        shared.doorbell.answer();
        shared.rounds.fetch_add(1, Ordering::Relaxed);
        if self.source.mark.revoked() {
            // The lease is gone: built IDs must not be handed out any more. Drop them
            // (takers then get the lease's error), and per-thread batches skip theirs.
            let dropped = self.producer.discard_while(|_| true);
            shared
                .discarded
                .fetch_add(dropped as u64, Ordering::Relaxed);
            shared.stale_before.store(u64::MAX, Ordering::Relaxed);
            return None;
        }
        // Before any drop below: demand counts what takers took, not what was dropped.
        let claimed = self.producer.claimed();
        let now = self.source.now_tick();
        if resync {
            // IDs are in tick order in the ring, so the stale ones are a prefix. Dropping
            // them keeps an idle generator's IDs near the wall clock (UidGenerator never
            // resyncs: their issues #8, #89).
            let stale_before = now.saturating_sub(self.stale_ticks);
            let bits = self.source.bits;
            let dropped = self
                .producer
                .discard_while(|uid| bits.delta_of(uid) < stale_before);
            if dropped > 0 {
                shared
                    .discarded
                    .fetch_add(dropped as u64, Ordering::Relaxed);
                tracing::trace!(dropped, "dropped IDs whose tick has passed");
            }
            // Per-thread batches skip IDs below it from now on.
            shared
                .stale_before
                .fetch_max(stale_before, Ordering::Relaxed);
        }
        let want = self.retarget(claimed, now, resync);
        let reason = self.fill_to(want, true).1?;
        self.shared.rejected_puts.fetch_add(1, Ordering::Relaxed);
        Some(RejectedPut {
            reason,
            free_slots: self.producer.free_slots(),
        })
    }

    /// Tells the put reject handler (or the log) about a round that left room unfilled.
    /// Called without the padder's lock held: a slow handler must not keep takers from
    /// filling.
    pub(crate) fn report(handler: Option<&PutRejectHandler>, rejected: RejectedPut) {
        match handler {
            Some(handler) => handler(rejected),
            None => tracing::debug!(
                reason = ?rejected.reason,
                free_slots = rejected.free_slots,
                "padding held back"
            ),
        }
    }

    /// A taker's round, when the ring ran low before the padding thread answered (it
    /// was not scheduled in time): put at most [`HELPER_FILL`] IDs toward the target,
    /// never wait on the store for a time mark, and leave resync and reporting to the
    /// thread. `false` when the thread must run: the fill
    /// was held back (the cap, a tick waiting for its time mark, the layout's end) or
    /// there was nothing a taker may do.
    pub(crate) fn help(&mut self) -> bool {
        if self.producer.is_closed() || self.source.mark.revoked() {
            return false;
        }
        let len = self.producer.queued();
        // (An empty ring always needs a fill: with a threshold under 4 the quotient is 0.)
        if len > 0 && len >= self.demand.threshold() / LOW_WATER_DIVISOR {
            // Another filler came first: this taker's view of the ring was stale.
            return true;
        }
        // The target learns from the burst as a round would (a ring drained before the
        // thread came quadruples it), but this fill puts only its first few thousand.
        let now = self.source.now_tick();
        let want = self.retarget(self.producer.claimed(), now, false);
        let (put, held_back) = self.fill_to(want.min(len + HELPER_FILL), false);
        if put > 0 {
            self.shared.helped.fetch_add(1, Ordering::Relaxed);
        }
        held_back.is_none()
    }

    /// Leaves the current tick if the clock has passed it, and sets the target fill (and
    /// the takers' threshold) from demand; returns the target.
    fn retarget(&mut self, claimed: u64, now: u64, resync: bool) -> u64 {
        self.source.catch_up(now);
        let len = self.producer.queued();
        let want = self.demand.update(claimed, len, resync);
        self.shared
            .hints
            .threshold
            .store(self.demand.threshold(), Ordering::Relaxed);
        want
    }

    /// Puts IDs until the ring holds `want`; returns how many it put and why it stopped
    /// short, if it did. `may_wait`: a tick above the recorded time mark may wait for the
    /// store to raise it.
    fn fill_to(&mut self, want: u64, may_wait: bool) -> (u64, Option<PutRejected>) {
        let shared = &*self.shared;
        let mut put = 0;
        // Room first, then a run: a tick is started only when it has somewhere to go,
        // so `padded_tick` (and `time_ahead`) never counts a tick the ring does not hold.
        let mut held_back = None;
        loop {
            let len = self.producer.queued();
            if len >= want || !self.producer.has_room() {
                break;
            }
            let Some((first, count)) = self.source.next_run(shared, may_wait) else {
                held_back = Some(if self.source.exhausted {
                    PutRejected::LayoutExhausted
                } else {
                    PutRejected::TimeAheadCap
                });
                break;
            };
            let fill = self.producer.fill_run(first, count.min(want - len));
            self.source.consume(fill.put as u64);
            put += fill.put as u64;
            match fill.stopped_by {
                // The run was put: go on (with the rest of the tick, or the next).
                None => continue,
                Some(PutRejected::Full) => break,
                Some(reason) => {
                    held_back = Some(reason);
                    break;
                }
            }
        }
        // Takes do not wake a padder that is waiting for the clock: it looks again on its
        // own timer (`capped_retry`), and a wake-up per take would be a storm.
        shared.hints.capped.store(
            held_back == Some(PutRejected::TimeAheadCap),
            Ordering::Relaxed,
        );
        if self.source.exhausted && !shared.exhausted.swap(true, Ordering::Relaxed) {
            // After the fill published its IDs: a taker that sees the ring closed
            // sees them too, and this flag.
            self.producer.close();
            tracing::error!(
                last_instant = %self.source.bits.format_instant(self.source.bits.last_instant_millis()),
                "uidgen layout's time is exhausted: no further IDs can be made"
            );
        }
        (put, held_back)
    }

    /// The padding thread's loop: a round per wake-up, per schedule, per resync; ends
    /// when the generator is dropped. A panic in a round (a user's reject handler, say)
    /// is logged and the loop goes on: the padder never stays stuck.
    ///
    /// The padder is shared with takers, which fill through it (see [`help`](Self::help))
    /// while the thread is late; the lock makes the ring's one producer one at a time.
    /// However the loop ends, unwinding included, the ring is closed: takes then fail at
    /// once rather than wait for a thread that is gone.
    pub(crate) fn run(padder: Arc<Mutex<Padder>>, schedule: Schedule) {
        let _close = CloseOnExit(padder.clone());
        let (shared, handler) = {
            let padder = lock(&padder);
            (padder.shared.clone(), padder.on_rejected_put.clone())
        };
        let start = Instant::now();
        let mut next_resync = start + schedule.resync_every;
        let mut next_pad = schedule.pad_every.map(|every| start + every);
        loop {
            let mut deadline = next_pad.map_or(next_resync, |pad| pad.min(next_resync));
            if lock(&padder).source.capped {
                deadline = deadline.min(Instant::now() + schedule.capped_retry);
            }
            let woken = match shared.doorbell.wait(&shared.stop, Some(deadline)) {
                Wake::Rung => true,
                Wake::Deadline => false,
                Wake::Stopped => return,
            };
            // A pending ring is served first, but a dropped generator needs no round.
            if shared.stop.load(Ordering::Acquire) {
                return;
            }
            drop(lock(&shared.gate));
            let now = Instant::now();
            let resync = now >= next_resync;
            if resync {
                next_resync = now + schedule.resync_every;
            }
            let scheduled = next_pad.is_some_and(|pad| now >= pad);
            if scheduled {
                next_pad = schedule.pad_every.map(|every| now + every);
            }
            let mut guard = lock(&padder);
            if woken || resync || scheduled || guard.source.capped {
                let round = || {
                    let rejected = guard.round(resync);
                    drop(guard);
                    if let Some(rejected) = rejected {
                        Self::report(handler.as_ref(), rejected);
                    }
                };
                if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(round)) {
                    let message = panic_message(&*panic);
                    tracing::error!(%message, "uidgen padding round panicked; padding goes on");
                }
            }
        }
    }
}

/// Closes the ring when the padding thread's loop ends, however it ends.
struct CloseOnExit(Arc<Mutex<Padder>>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        lock(&self.0).producer.close();
    }
}
