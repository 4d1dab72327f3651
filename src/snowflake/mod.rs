//! The time-based generators: [`DefaultUidGenerator`] computes each ID on demand;
//! [`CachedUidGenerator`] hands out pre-built IDs from a lock-free ring that a padding
//! thread keeps full. Their rollback strategies and reject policies live here too.

mod cached;
mod default;
#[cfg(not(uidgen_loom))]
mod doorbell;
#[cfg(uidgen_loom)]
pub mod doorbell;
mod end_warning;
mod local;
mod padding;
mod reject;
#[cfg(not(uidgen_loom))]
mod ring;
#[cfg(uidgen_loom)]
pub mod ring;
mod rollback;

pub use cached::{CachedStats, CachedUidGenerator, CachedUidGeneratorBuilder, PADDING_THREAD_NAME};
pub use default::{DefaultUidGenerator, DefaultUidGeneratorBuilder};
pub use end_warning::DEFAULT_WARN_BEFORE_END;
pub use reject::{
    PutRejectHandler, PutRejected, RejectedPut, RejectedTake, TakeDecision, TakeRejectPolicy,
};
pub use rollback::RollbackStrategy;

use crate::clock::{Clock, SystemClock};
use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use std::sync::Arc;

/// What every generator is built from: a layout, a worker ID and a clock.
#[derive(Clone)]
struct GeneratorBase {
    bits: BitsAllocator,
    worker_id: u64,
    clock: Arc<dyn Clock>,
    warn_before_end: std::time::Duration,
}

impl Default for GeneratorBase {
    fn default() -> Self {
        Self {
            bits: BitsAllocator::default(),
            worker_id: 0,
            clock: Arc::new(SystemClock),
            warn_before_end: DEFAULT_WARN_BEFORE_END,
        }
    }
}

impl std::fmt::Debug for GeneratorBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratorBase")
            .field("bits", &self.bits)
            .field("worker_id", &self.worker_id)
            .field("warn_before_end", &self.warn_before_end)
            .finish_non_exhaustive()
    }
}

impl GeneratorBase {
    /// The worker ID fits the layout, and the layout is alive by the generator's clock.
    fn check(&self) -> Result<(), ConfigError> {
        self.bits.check_worker_id(self.worker_id)?;
        self.bits.check_alive_at(self.clock.now_millis())
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

        /// The worker ID (default 0); must fit the layout's worker bits.
        pub fn worker_id(mut self, worker_id: u64) -> Self {
            self.base.worker_id = worker_id;
            self
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
