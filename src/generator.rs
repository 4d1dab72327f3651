//! The [`UidGenerator`] trait both generators implement.

use crate::bits::BitsAllocator;
use crate::clock::{Clock, SystemClock};
use crate::error::{ConfigError, UidError};
use crate::parts::UidParts;
use std::sync::Arc;

/// A source of unique, time-ordered 64-bit IDs, shareable across threads.
pub trait UidGenerator: Send + Sync {
    /// The next ID: unique for this worker, greater than every ID this thread got before.
    fn next_uid(&self) -> Result<u64, UidError>;

    /// The layout this generator packs IDs with.
    fn allocator(&self) -> &BitsAllocator;

    /// The worker ID inside every ID this generator makes.
    fn worker_id(&self) -> u64;

    /// Takes an ID apart with this generator's layout.
    fn parse_uid(&self, uid: u64) -> Result<UidParts, UidError> {
        self.allocator().parse(uid)
    }
}

/// What every generator is built from: a layout, a worker ID and a clock.
#[derive(Clone)]
pub(crate) struct GeneratorBase {
    pub(crate) bits: BitsAllocator,
    pub(crate) worker_id: u64,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) warn_before_end: std::time::Duration,
}

impl Default for GeneratorBase {
    fn default() -> Self {
        Self {
            bits: BitsAllocator::default(),
            worker_id: 0,
            clock: Arc::new(SystemClock),
            warn_before_end: crate::end_warning::DEFAULT_WARN_BEFORE_END,
        }
    }
}

impl GeneratorBase {
    /// The worker ID fits the layout, and the layout is alive by the generator's clock.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
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
pub(crate) use base_builder_methods;
