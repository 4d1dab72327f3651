//! [`DefaultUidGenerator`]: each ID computed on demand under a lock.

use super::end_warning::EndWarning;
use super::rollback::RollbackStrategy;
use super::{base_builder_methods, GeneratorBase};
use crate::clock::Clock;
use crate::error::{ConfigError, UidError};
use crate::generator::UidGenerator;
use crate::layout::BitsAllocator;
use crate::sync::{self, AtomicU64, Mutex, Ordering};
use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

/// Computes each ID when asked: the current tick, this worker's ID, and a sequence
/// number that restarts every tick.
///
/// When a tick's sequence is used up, callers sleep (outside the lock) until the clock
/// reaches the next tick. When the clock goes backwards, its [`RollbackStrategy`] decides
/// (default: [`UidError::ClockMovedBackwards`] saying by how much). When the layout's
/// time bits are used up, [`UidError::TimeExhausted`]. It never returns a repeated,
/// wrapped or negative ID.
///
/// A worker ID's time mark ahead of the clock is not a rollback: a previous holder (a
/// [`CachedUidGenerator`](crate::CachedUidGenerator) borrows future ticks) used ticks the
/// clock has not reached yet. The generator starts above the mark: with `Continue` at
/// once, with every other strategy once the clock passes it, waiting up to
/// [`max_mark_wait`](DefaultUidGeneratorBuilder::max_mark_wait) (default: 1 s, or
/// `Wait`'s `max` if longer) and past that failing with [`UidError::MarkAhead`], which
/// names the worker ID and the mark. Such a wait is not counted in
/// [`rollbacks`](Self::rollbacks).
///
/// Throughput is capped at `max_sequence + 1` IDs per tick; for IDs at memory speed use
/// [`CachedUidGenerator`](crate::CachedUidGenerator).
///
/// ```
/// use std::time::Duration;
/// use uidgen::{DefaultUidGenerator, Preset, RollbackStrategy, UidGenerator};
///
/// let gen = DefaultUidGenerator::builder()
///     .allocator(Preset::Snowflake.builder().build()?)
///     .worker_id(7)
///     .rollback_strategy(RollbackStrategy::Wait { max: Duration::from_millis(5) })
///     .build()?;
/// let (a, b) = (gen.next_uid()?, gen.next_uid()?);
/// assert!(b > a);
/// assert_eq!(gen.parse_uid(b)?.worker_id, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DefaultUidGenerator {
    bits: BitsAllocator,
    /// The worker ID given at build; [`TickState::worker_id`] may move on to spares.
    worker_id: u64,
    clock: std::sync::Arc<dyn Clock>,
    strategy: RollbackStrategy,
    end_warning: EndWarning,
    /// Rollback episodes seen (a rollback that lasts many calls counts once).
    rollbacks: AtomicU64,
    state: Mutex<TickState>,
    /// The worker ID's time mark: the first tick allowed, and ticks recorded before use.
    mark: super::Mark,
    /// The marks of leased spare worker IDs (`spare_leases`), by worker ID.
    spare_marks: Vec<(u64, super::Mark)>,
    /// `Continue`: ticks IDs may run ahead of the really-elapsed time during a rollback.
    max_run_ahead_ticks: u64,
    /// The longest a call waits for the clock to pass the worker ID's time mark.
    max_mark_wait: Duration,
    /// No ID at or below this is handed out.
    id_floor: Option<u64>,
}

#[derive(Debug, Default)]
struct TickState {
    /// The tick of the last ID handed out; `None` before the first (and after a switch
    /// to a spare worker).
    last_tick: Option<u64>,
    /// The sequence number of the last ID handed out in `last_tick`.
    sequence: u64,
    /// The latest clock reading seen (0 before the first): the clock is behind only when
    /// it reads less than this. Ticks ahead of it that came from the worker ID's time mark
    /// (or from `Continue` running ahead) are not the clock's doing.
    latest_millis: u64,
    /// The worker ID in use.
    worker_id: u64,
    /// Spare worker IDs not yet used (`SpareWorker`).
    spares: VecDeque<u64>,
    /// The index in `spare_marks` of the leased spare in use; `None`: the main mark.
    spare_mark: Option<usize>,
    /// The clock is behind `last_tick` now: the current rollback is already counted.
    in_rollback: bool,
    /// The last reading of a clock that was not behind, and when it was taken: during a
    /// rollback, `Continue` follows the time that has really passed since.
    anchor: Option<(Instant, u64)>,
}

/// What `next_uid` decided under the lock.
enum Step {
    Issue(u64),
    WaitUntil { until_millis: u64, now_millis: u64 },
}

/// Settings for a [`DefaultUidGenerator`]; start from [`DefaultUidGenerator::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct DefaultUidGeneratorBuilder {
    base: GeneratorBase,
    strategy: RollbackStrategy,
    max_run_ahead: Duration,
    max_mark_wait: Option<Duration>,
    spare_leases: Vec<crate::WorkerLease>,
}

impl DefaultUidGeneratorBuilder {
    base_builder_methods!();

    /// Leased spare worker IDs: sets [`RollbackStrategy::SpareWorker`] with them. On a
    /// clock step back the generator moves to the first spare whose time mark is at or
    /// behind the clock (one whose mark is ahead is passed over, said at `warn`), goes on
    /// at the clock's time, and records the ticks it uses in that lease's mark as it does
    /// on its main worker ID, so whoever leases the spare next starts above them. Every
    /// lease is renewed while the generator lives and released when it is dropped.
    ///
    /// Take them from the same store and for the same layout as the main lease, with
    /// [`prefer_marks_within`](crate::WorkerLeaseBuilder::prefer_marks_within) so their
    /// marks are not ahead of the clock.
    pub fn spare_leases(mut self, leases: Vec<crate::WorkerLease>) -> Self {
        self.strategy = RollbackStrategy::SpareWorker {
            spares: leases.iter().map(crate::WorkerLease::worker_id).collect(),
        };
        self.spare_leases = leases;
        self
    }

    setters! {
        /// What to do when the clock goes backwards (default: [`RollbackStrategy::Fail`]).
        rollback_strategy(strategy: RollbackStrategy) => self.strategy = strategy;

        /// With [`RollbackStrategy::Continue`]: how far IDs may run ahead of the time that
        /// has really passed (a monotonic clock from the last good reading) while the clock
        /// is behind; past it, `next_uid` waits and `try_next_uid` says `WouldBlock`
        /// (default 1 s, at most 1 hour).
        max_run_ahead(bound: Duration) => self.max_run_ahead = bound;

        /// How long a call may wait for the clock to pass the worker ID's time mark, when a
        /// previous holder of the worker ID used ticks ahead of the clock (a cached generator
        /// borrows future ticks). Past it, the call fails with [`UidError::MarkAhead`] naming
        /// the worker ID and the mark. Not used by [`RollbackStrategy::Continue`], which goes
        /// on from the mark at once.
        ///
        /// Default: 1 s, or `Wait`'s `max` when that is longer; at most 1 hour. The wait is
        /// for the first tick above the mark only, so it delays the first calls of a
        /// generator, never later ones.
        max_mark_wait(bound: Duration) => self.max_mark_wait = Some(bound);
    }

    /// Checks the worker IDs (and spares) against the layout and the layout against the
    /// clock.
    pub fn build(self) -> Result<DefaultUidGenerator, ConfigError> {
        self.base.check()?;
        for (field, bound) in [
            ("max_run_ahead", Some(self.max_run_ahead)),
            ("max_mark_wait", self.max_mark_wait),
        ] {
            if let Some(bound) = bound.filter(|b| *b > Duration::from_secs(3600)) {
                return Err(ConfigError::OutOfRange {
                    field,
                    value: format!("{bound:?}"),
                    limit: "at most 1 hour".into(),
                });
            }
        }
        let max_mark_wait = self.max_mark_wait.unwrap_or(match &self.strategy {
            RollbackStrategy::Wait { max } => (*max).max(DEFAULT_MARK_WAIT),
            _ => DEFAULT_MARK_WAIT,
        });
        let (bits, worker_id, clock, warn_before_end, mark, id_floor) = self.base.into_parts();
        let spare_marks: Vec<(u64, super::Mark)> = self
            .spare_leases
            .into_iter()
            .map(|lease| (lease.worker_id(), super::Mark::Lease(lease)))
            .collect();
        let spares: VecDeque<u64> = match &self.strategy {
            RollbackStrategy::SpareWorker { spares } => spares.iter().copied().collect(),
            _ => VecDeque::new(),
        };
        for (i, &spare) in spares.iter().enumerate() {
            bits.check_worker_id(spare)?;
            // A spare that repeats the main ID, or another spare, would repeat IDs after
            // the switch: that worker ID's past ticks are not known.
            if spare == worker_id || spares.iter().take(i).any(|&s| s == spare) {
                return Err(ConfigError::OutOfRange {
                    field: "SpareWorker spares",
                    value: format!("{spare}"),
                    limit: format!(
                        "each spare must differ from the main worker ID ({worker_id}) and from \
                         every other spare"
                    ),
                });
            }
        }
        // An earlier user of this worker ID got as far as tick `floor - 1`: start as if
        // this generator had used it up, so its first ID is above it. The clock was never
        // seen there (`latest_millis` stays 0): a clock behind it is a wait for the mark,
        // not a rollback.
        let floor = mark.state().floor();
        let state = match floor.checked_sub(1) {
            Some(last) => TickState {
                last_tick: Some(last),
                sequence: bits.max_sequence(),
                latest_millis: 0,
                worker_id,
                spares,
                spare_mark: None,
                in_rollback: false,
                // Real time is taken to be the mark's now: `Continue` goes on from it at
                // the pace of real time rather than waiting for a clock that is behind.
                anchor: Some((Instant::now(), bits.tick_start_millis(floor))),
            },
            None => TickState {
                worker_id,
                spares,
                ..TickState::default()
            },
        };
        Ok(DefaultUidGenerator {
            end_warning: EndWarning::new(&bits, warn_before_end),
            bits,
            worker_id,
            clock,
            strategy: self.strategy,
            rollbacks: AtomicU64::new(0),
            state: Mutex::new(state),
            mark,
            spare_marks,
            max_run_ahead_ticks: u64::try_from(
                self.max_run_ahead.as_millis() / u128::from(bits.unit().millis()),
            )
            .unwrap_or(u64::MAX),
            max_mark_wait,
            id_floor,
        })
    }
}

/// How long a generator waits for the clock to pass its worker ID's time mark unless told
/// otherwise ([`DefaultUidGeneratorBuilder::max_mark_wait`]).
const DEFAULT_MARK_WAIT: Duration = Duration::from_secs(1);

impl DefaultUidGenerator {
    /// A builder with the default layout, worker 0, the system clock and
    /// [`RollbackStrategy::Fail`].
    pub fn builder() -> DefaultUidGeneratorBuilder {
        DefaultUidGeneratorBuilder {
            base: GeneratorBase::default(),
            strategy: RollbackStrategy::default(),
            max_run_ahead: Duration::from_secs(1),
            max_mark_wait: None,
            spare_leases: Vec::new(),
        }
    }

    /// A generator for `worker_id` with layout `bits` on the system clock.
    pub fn new(bits: BitsAllocator, worker_id: u64) -> Result<Self, ConfigError> {
        Self::builder().allocator(bits).worker_id(worker_id).build()
    }

    /// How many times the clock was seen going backwards (each episode once): read lower
    /// than it had read before. A worker ID's time mark ahead of the clock is not one.
    pub fn rollbacks(&self) -> u64 {
        self.rollbacks.load(Ordering::Relaxed)
    }

    /// The worker ID in use now: the one given at build, or a spare after a switch.
    pub fn current_worker_id(&self) -> u64 {
        sync::lock(&self.state).worker_id
    }

    /// Whether the near-the-end warning has been logged.
    pub fn warned_near_end(&self) -> bool {
        self.end_warning.has_warned()
    }

    fn step(&self) -> Result<Step, UidError> {
        self.step_locked(&mut sync::lock(&self.state), true)
    }

    /// [`step`](Self::step) if the lock is free; `None` while another thread holds it
    /// (it may have been preempted there, so waiting could take a scheduler slice).
    fn try_step(&self) -> Option<Result<Step, UidError>> {
        sync::try_lock(&self.state).map(|mut state| self.step_locked(&mut state, false))
    }

    /// One step under the lock; `may_wait` is false for `try_next_uid`, which must not
    /// wait for the store to record a higher time mark.
    fn step_locked(&self, state: &mut TickState, may_wait: bool) -> Result<Step, UidError> {
        // The clock is read under the lock: read outside, a thread could hold an older
        // reading than the tick another thread already used, and see a false rollback.
        let now_millis = self.clock.now_millis();
        let wall_tick = match (self.bits.tick_at(now_millis), &self.strategy) {
            // Before the epoch: a logical clock can still go on from its last tick.
            (Err(_), RollbackStrategy::Continue) if state.last_tick.is_some() => 0,
            (tick, _) => tick?,
        };
        // The clock moved backwards only if it read later than this before.
        let clock_went_back = now_millis < state.latest_millis;
        state.latest_millis = state.latest_millis.max(now_millis);
        let mut tick = wall_tick;
        // The time that has really passed: the wall clock when it is not behind, else the
        // last good reading plus a monotonic clock's elapsed time since.
        let mut real_tick = wall_tick;
        if state.last_tick.is_none_or(|last| wall_tick >= last) {
            state.anchor = Some((Instant::now(), now_millis));
        } else if let Some((at, millis)) = state.anchor {
            let elapsed = u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX);
            real_tick = self
                .bits
                .tick_at(millis.saturating_add(elapsed))
                .unwrap_or(wall_tick)
                .max(wall_tick);
        }
        match state.last_tick {
            // The last tick is ahead of every reading of the clock: it is the worker ID's
            // time mark (or `Continue` running ahead after a rollback), not a reading the
            // clock went back from.
            Some(last) if wall_tick < last && !clock_went_back => match &self.strategy {
                RollbackStrategy::Continue => tick = last.max(real_tick),
                _ => return self.wait_for_mark(state.worker_id, last, now_millis),
            },
            Some(last) if wall_tick < last => {
                let by = Duration::from_millis(state.latest_millis - now_millis);
                self.note_rollback(state, by);
                match &self.strategy {
                    RollbackStrategy::Fail => return Err(UidError::ClockMovedBackwards { by }),
                    RollbackStrategy::Wait { max } if by > *max => {
                        return Err(UidError::ClockMovedBackwards { by })
                    }
                    RollbackStrategy::Wait { .. } => {
                        return Ok(Step::WaitUntil {
                            until_millis: self.bits.tick_start_millis(last),
                            now_millis,
                        })
                    }
                    RollbackStrategy::Continue => tick = last.max(real_tick),
                    RollbackStrategy::SpareWorker { .. } => {
                        let Some((spare, mark)) = self.next_spare(state, wall_tick) else {
                            return Err(UidError::ClockMovedBackwards { by });
                        };
                        tracing::warn!(
                            from = state.worker_id,
                            to = spare,
                            ?by,
                            "uidgen switched to a spare worker ID after the clock stepped back"
                        );
                        // A worker ID never used before, or (leased) none of whose ticks
                        // from here on were used: its mark is at or behind the clock.
                        state.worker_id = spare;
                        state.spare_mark = mark;
                        state.last_tick = None;
                        state.in_rollback = false;
                    }
                }
            }
            _ => state.in_rollback = false,
        }
        match state.last_tick {
            Some(last) if tick == last => {
                if state.sequence < self.bits.max_sequence() {
                    state.sequence += 1;
                    return Ok(Step::Issue(self.bits.pack(
                        tick,
                        state.worker_id,
                        state.sequence,
                    )));
                }
                if last >= self.bits.max_delta() {
                    return Err(self.bits.time_exhausted());
                }
                if tick > wall_tick {
                    // `Continue` on a logical clock: never wait for a clock that is behind,
                    // but never run further ahead of the time really passed than the bound.
                    let next = last + 1;
                    if next.saturating_sub(real_tick) > self.max_run_ahead_ticks {
                        let real_millis = self.bits.tick_start_millis(real_tick);
                        return Ok(Step::WaitUntil {
                            until_millis: real_millis
                                + (next - real_tick - self.max_run_ahead_ticks)
                                    * self.bits.unit().millis(),
                            now_millis: real_millis,
                        });
                    }
                    return Ok(Step::Issue(self.start_tick(state, next, may_wait)?));
                }
                Ok(Step::WaitUntil {
                    until_millis: self.bits.tick_start_millis(last + 1),
                    now_millis,
                })
            }
            _ => {
                if tick > self.bits.max_delta() {
                    return Err(self.bits.time_exhausted());
                }
                Ok(Step::Issue(self.start_tick(state, tick, may_wait)?))
            }
        }
    }

    /// The next spare to move to, and the index of its lease's mark if leased: a leased
    /// spare whose mark is ahead of `wall_tick` is passed over (its earlier holder used
    /// ticks the clock has not reached).
    fn next_spare(&self, state: &mut TickState, wall_tick: u64) -> Option<(u64, Option<usize>)> {
        while let Some(spare) = state.spares.pop_front() {
            let Some(index) = self.spare_marks.iter().position(|(id, _)| *id == spare) else {
                return Some((spare, None));
            };
            let floor = self.spare_marks[index].1.state().floor();
            if floor <= wall_tick {
                return Some((spare, Some(index)));
            }
            tracing::warn!(
                spare,
                mark_millis = self.bits.tick_start_millis(floor),
                "uidgen passed over a spare worker ID: its time mark is ahead of the clock"
            );
        }
        None
    }

    /// The clock is behind ticks a previous holder of the worker ID may have used, up to
    /// `last`: wait for it to reach the next tick, within the bound, or say why not.
    fn wait_for_mark(&self, worker_id: u64, last: u64, now_millis: u64) -> Result<Step, UidError> {
        let until_millis = self.bits.tick_start_millis(last.saturating_add(1));
        let ahead = Duration::from_millis(until_millis.saturating_sub(now_millis));
        if ahead > self.max_mark_wait {
            return Err(UidError::MarkAhead {
                worker_id,
                mark_millis: until_millis.saturating_sub(1),
                now_millis,
                ahead,
                max_wait: self.max_mark_wait,
            });
        }
        Ok(Step::WaitUntil {
            until_millis,
            now_millis,
        })
    }

    /// Makes the first ID of `tick`, once the worker ID's mark allows it.
    fn start_tick(
        &self,
        state: &mut TickState,
        tick: u64,
        may_wait: bool,
    ) -> Result<u64, UidError> {
        let mark = match state.spare_mark {
            Some(index) => &self.spare_marks[index].1,
            None => &self.mark,
        };
        let first = self.bits.pack(tick, state.worker_id, 0);
        if let Some(floor) = self.id_floor.filter(|&floor| first <= floor) {
            return Err(UidError::BelowFloor {
                floor,
                next: first,
                why: " (the clock is behind the time the floor was passed at)",
            });
        }
        mark.state().admit(tick, may_wait)?;
        self.end_warning.observe(tick, &self.bits);
        state.last_tick = Some(tick);
        state.sequence = 0;
        Ok(self.bits.pack(tick, state.worker_id, 0))
    }

    /// Counts and logs a rollback once per episode.
    fn note_rollback(&self, state: &mut TickState, by: Duration) {
        if !state.in_rollback {
            state.in_rollback = true;
            self.rollbacks.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                ?by,
                strategy = self.strategy.name(),
                "uidgen saw the clock move backwards"
            );
        }
    }
}

/// How long to nap before looking at the clock again: short, so a clock that jumps (or a
/// test's manual clock) is noticed promptly.
fn nap(until_millis: u64, now_millis: u64) -> Duration {
    let remaining = until_millis.saturating_sub(now_millis);
    if remaining > 1 {
        Duration::from_millis((remaining - 1).min(5))
    } else {
        Duration::from_micros(100)
    }
}

impl DefaultUidGenerator {
    /// The next ID, waiting on the tokio runtime's timer (never blocking its thread) for
    /// the next tick or for the clock to catch up.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let generator = uidgen::DefaultUidGenerator::builder().worker_id(3).build()?;
    /// let a = generator.next_uid_async().await?;
    /// assert!(generator.next_uid_async().await? > a);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub async fn next_uid_async(&self) -> Result<u64, UidError> {
        loop {
            match self.try_step() {
                Some(step) => match step? {
                    Step::Issue(uid) => return Ok(uid),
                    Step::WaitUntil {
                        until_millis,
                        now_millis,
                    } => tokio::time::sleep(nap(until_millis, now_millis)).await,
                },
                // Another thread holds the lock: let the runtime run something else.
                None => tokio::task::yield_now().await,
            }
        }
    }
}

impl UidGenerator for DefaultUidGenerator {
    /// Blocks the thread (sleeping, outside the lock) while the tick's sequence is used
    /// up, while a `Wait` strategy waits out a rollback, or while the clock has not yet
    /// passed the worker ID's time mark (up to `max_mark_wait`).
    fn next_uid(&self) -> Result<u64, UidError> {
        loop {
            match self.step()? {
                Step::Issue(uid) => return Ok(uid),
                // Sleep, not spin: the tick ends on the clock's schedule, not ours.
                Step::WaitUntil {
                    until_millis,
                    now_millis,
                } => sync::sleep(nap(until_millis, now_millis)),
            }
        }
    }

    fn try_next_uid(&self) -> Result<u64, UidError> {
        let Some(step) = self.try_step() else {
            return Err(UidError::WouldBlock {
                why: "another thread holds the generator's lock",
                wait: None,
            });
        };
        match step? {
            Step::Issue(uid) => Ok(uid),
            Step::WaitUntil {
                until_millis,
                now_millis,
            } => Err(UidError::WouldBlock {
                why: "this tick's sequence is used up, or the clock is behind the last tick \
                      used or the worker ID's time mark",
                wait: Some(Duration::from_millis(
                    until_millis.saturating_sub(now_millis),
                )),
            }),
        }
    }

    fn allocator(&self) -> &BitsAllocator {
        &self.bits
    }

    fn worker_id(&self) -> u64 {
        self.worker_id
    }
}

impl fmt::Debug for DefaultUidGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultUidGenerator")
            .field("bits", &self.bits)
            .field("worker_id", &self.worker_id)
            .field("strategy", &self.strategy)
            .field("max_mark_wait", &self.max_mark_wait)
            .finish_non_exhaustive()
    }
}
