//! [`CachedUidGeneratorBuilder`]: a cached generator's settings, their checks, and
//! `build()`, which fills the ring once and starts the padding thread.

use super::cached::{CachedUidGenerator, PADDING_THREAD_NAME};
use super::end_warning::EndWarning;
use super::local::MAX_THREAD_BATCH;
use super::padding::{Demand, Padder, Schedule, Shared, TickSource};
use super::reject::{PutRejectHandler, RejectedPut};
use super::ring::{RingBuffer, MAX_CAPACITY};
use super::{base_builder_methods, GeneratorBase};
use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use crate::sync::{thread, Arc, Mutex};
use crate::wait::TakeRejectPolicy;
use std::fmt;
use std::time::Duration;

/// The longest `schedule_interval` or `resync_interval`: a day.
const MAX_INTERVAL: Duration = Duration::from_secs(86_400);

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
        /// fail with [`UidError::WaitingForClock`](crate::UidError::WaitingForClock), saying until when. No cap, no limit.
        rollback_allowance(allowance: Duration) => self.rollback_allowance = allowance;

        /// What a take does when the ring is empty (default: wait up to 1 s, then
        /// [`UidError::BufferExhausted`](crate::UidError::BufferExhausted)).
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
        let capacity = self.capacity(&self.base.bits)?;
        self.check()?;
        let schedule = self.schedule(&self.base.bits);
        let (bits, worker_id, clock, warn_before_end, mark, floor) = self.base.into_parts();
        let (ring, producer) = RingBuffer::new(capacity)?;
        let shared = Arc::new(Shared {
            end_warning: EndWarning::new(&bits, warn_before_end),
            ..Shared::default()
        });
        let mut padder = Padder {
            producer,
            source: TickSource::new(bits, worker_id, clock.clone(), mark.state().clone())
                .max_ahead(self.max_time_ahead)
                .id_floor(floor)
                .rollback_allowance(self.rollback_allowance),
            shared: shared.clone(),
            on_rejected_put: self.on_rejected_put,
            demand: Demand::new(capacity as u64, self.padding_factor, schedule.resync_every),
            stale_ticks: stale_ticks(&bits, &schedule),
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

    /// The ring's slots: `ring_capacity`, else one tick's sequence `<< boost_power`.
    fn capacity(&self, bits: &BitsAllocator) -> Result<usize, ConfigError> {
        match self.ring_capacity {
            Some(slots) if !(2..=MAX_CAPACITY).contains(&slots) || !slots.is_power_of_two() => {
                Err(ConfigError::OutOfRange {
                    field: "ring_capacity",
                    value: slots.to_string(),
                    limit: format!("a power of two from 2 to {MAX_CAPACITY} (2^26 slots, 512 MiB)"),
                })
            }
            Some(slots) => Ok(slots),
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
                Ok(1usize << (bits.seq_bits() + self.boost_power))
            }
        }
    }

    /// The other settings' ranges.
    fn check(&self) -> Result<(), ConfigError> {
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
        Ok(())
    }

    /// When the padder looks at the clock, pads on a timer and resyncs.
    fn schedule(&self, bits: &BitsAllocator) -> Schedule {
        let tick = Duration::from_millis(bits.unit().millis());
        Schedule {
            // While capped, look at the clock this often for the next tick.
            capped_retry: (tick / 10).clamp(Duration::from_millis(1), Duration::from_millis(10)),
            pad_every: self.schedule_interval,
            resync_every: self.resync_interval.unwrap_or_else(|| {
                (tick / 2).clamp(Duration::from_millis(50), Duration::from_millis(500))
            }),
        }
    }
}

/// Stale: a tick at least 4 resync intervals, and at least a second, behind: fills last
/// about one interval at the recent rate, so this leaves room for the rate to drop; and
/// callers that each come back every few hundred milliseconds (a light load on
/// millisecond ticks) must not find their IDs dropped in between.
fn stale_ticks(bits: &BitsAllocator, schedule: &Schedule) -> u64 {
    (4 * schedule.resync_every.as_millis())
        .max(STALE_AT_LEAST.as_millis())
        .div_ceil(u128::from(bits.unit().millis()))
        .max(1) as u64
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
