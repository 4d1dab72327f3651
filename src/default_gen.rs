//! [`DefaultUidGenerator`]: each ID computed on demand under a lock.

use crate::bits::BitsAllocator;
use crate::clock::Clock;
use crate::error::{ConfigError, UidError};
use crate::generator::{base_builder_methods, GeneratorBase, UidGenerator};
use crate::sync::{self, Mutex};
use std::fmt;
use std::time::Duration;

/// Computes each ID when asked: the current tick, this worker's ID, and a sequence
/// number that restarts every tick.
///
/// When a tick's sequence is used up, callers sleep (outside the lock) until the clock
/// reaches the next tick. When the clock goes backwards it returns
/// [`UidError::ClockMovedBackwards`] saying by how much; when the layout's time bits are
/// used up, [`UidError::TimeExhausted`]. It never returns a repeated, wrapped or negative ID.
///
/// Throughput is capped at `max_sequence + 1` IDs per tick; for IDs at memory speed use
/// [`CachedUidGenerator`](crate::CachedUidGenerator).
///
/// ```
/// use uidgen::{BitsAllocator, DefaultUidGenerator, Preset, UidGenerator};
///
/// let bits = Preset::Snowflake.builder().build()?;
/// let gen = DefaultUidGenerator::new(bits, 7)?;
/// let (a, b) = (gen.next_uid()?, gen.next_uid()?);
/// assert!(b > a);
/// assert_eq!(gen.parse_uid(b)?.worker_id, 7);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DefaultUidGenerator {
    bits: BitsAllocator,
    worker_id: u64,
    clock: std::sync::Arc<dyn Clock>,
    state: Mutex<TickState>,
}

#[derive(Debug, Default)]
struct TickState {
    /// The tick of the last ID handed out; `None` before the first.
    last_tick: Option<u64>,
    /// The sequence number of the last ID handed out in `last_tick`.
    sequence: u64,
    /// The latest clock reading seen, to say how far a rollback went.
    latest_millis: u64,
}

/// What `next_uid` decided under the lock.
enum Step {
    Issue(u64),
    WaitUntil { until_millis: u64, now_millis: u64 },
}

/// Settings for a [`DefaultUidGenerator`].
pub struct DefaultUidGeneratorBuilder {
    base: GeneratorBase,
}

impl DefaultUidGeneratorBuilder {
    base_builder_methods!();

    /// Checks the worker ID against the layout and the layout against the clock.
    pub fn build(self) -> Result<DefaultUidGenerator, ConfigError> {
        self.base.check()?;
        let GeneratorBase {
            bits,
            worker_id,
            clock,
        } = self.base;
        Ok(DefaultUidGenerator {
            bits,
            worker_id,
            clock,
            state: Mutex::new(TickState::default()),
        })
    }
}

impl DefaultUidGenerator {
    /// A builder with the default layout, worker 0 and the system clock.
    pub fn builder() -> DefaultUidGeneratorBuilder {
        DefaultUidGeneratorBuilder {
            base: GeneratorBase::default(),
        }
    }

    /// A generator for `worker_id` with layout `bits` on the system clock.
    pub fn new(bits: BitsAllocator, worker_id: u64) -> Result<Self, ConfigError> {
        Self::builder().allocator(bits).worker_id(worker_id).build()
    }

    fn step(&self) -> Result<Step, UidError> {
        // The clock is read under the lock: read outside, a thread could hold an older
        // reading than the tick another thread already used, and see a false rollback.
        let mut state = sync::lock(&self.state);
        let now_millis = self.clock.now_millis();
        let tick = self.bits.tick_at(now_millis)?;
        state.latest_millis = state.latest_millis.max(now_millis);
        match state.last_tick {
            Some(last) if tick < last => Err(UidError::ClockMovedBackwards {
                by: Duration::from_millis(state.latest_millis - now_millis),
            }),
            Some(last) if tick == last => {
                if state.sequence < self.bits.max_sequence() {
                    state.sequence += 1;
                    Ok(Step::Issue(self.bits.pack(
                        tick,
                        self.worker_id,
                        state.sequence,
                    )))
                } else if last >= self.bits.max_delta() {
                    Err(self.bits.time_exhausted())
                } else {
                    Ok(Step::WaitUntil {
                        until_millis: self.bits.tick_start_millis(last + 1),
                        now_millis,
                    })
                }
            }
            _ => {
                if tick > self.bits.max_delta() {
                    return Err(self.bits.time_exhausted());
                }
                state.last_tick = Some(tick);
                state.sequence = 0;
                Ok(Step::Issue(self.bits.pack(tick, self.worker_id, 0)))
            }
        }
    }
}

impl UidGenerator for DefaultUidGenerator {
    fn next_uid(&self) -> Result<u64, UidError> {
        loop {
            match self.step()? {
                Step::Issue(uid) => return Ok(uid),
                Step::WaitUntil {
                    until_millis,
                    now_millis,
                } => {
                    // Sleep, not spin: the tick ends on the clock's schedule, not ours.
                    // Naps are short so a clock that jumps (or a test's manual clock)
                    // is noticed promptly.
                    let remaining = until_millis.saturating_sub(now_millis);
                    let nap = if remaining > 1 {
                        Duration::from_millis((remaining - 1).min(5))
                    } else {
                        Duration::from_micros(100)
                    };
                    sync::sleep(nap);
                }
            }
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
            .finish_non_exhaustive()
    }
}
