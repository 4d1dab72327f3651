//! A warning, once, when a generator starts handing out IDs from the last stretch of its
//! layout's time, so operators hear of it before `TimeExhausted`, not at it.

use crate::layout::BitsAllocator;
use crate::sync::{AtomicBool, Ordering};
use std::time::Duration;

/// Warn this long before the layout's end by default: a day of ticks.
pub const DEFAULT_WARN_BEFORE_END: Duration = Duration::from_secs(86_400);

pub(crate) struct EndWarning {
    /// The first tick that triggers the warning.
    from_tick: u64,
    warned: AtomicBool,
}

impl Default for EndWarning {
    /// One that never warns.
    fn default() -> Self {
        Self {
            from_tick: u64::MAX,
            warned: AtomicBool::new(false),
        }
    }
}

impl EndWarning {
    pub(crate) fn new(bits: &BitsAllocator, warn_before: Duration) -> Self {
        let ticks = u64::try_from(warn_before.as_millis() / u128::from(bits.unit().millis()))
            .unwrap_or(u64::MAX);
        Self {
            from_tick: bits.max_delta().saturating_sub(ticks),
            warned: AtomicBool::new(false),
        }
    }

    /// Called when a generator starts a new tick.
    #[inline]
    pub(crate) fn observe(&self, tick: u64, bits: &BitsAllocator) {
        if tick >= self.from_tick && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                last_instant = %bits.format_instant(bits.last_instant_millis()),
                ticks_left = bits.max_delta() - tick.min(bits.max_delta()),
                layout = %bits,
                "uidgen layout is near its end: after its last instant every call returns TimeExhausted"
            );
        }
    }

    pub(crate) fn has_warned(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }
}
