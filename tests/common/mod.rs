//! Helpers shared by the integration tests.

use uidgen::{BitsAllocator, TimeUnit};

/// A fixed epoch (2020-09-13) for manual-clock tests.
pub const EPOCH_MS: u64 = 1_600_000_000_000;

/// A seconds layout with four IDs a tick (2 sequence bits), so tests reach the end of a
/// tick, and of the layout, after a handful of IDs.
pub fn tiny_layout() -> BitsAllocator {
    BitsAllocator::builder()
        .bits(40, 21, 2)
        .unit(TimeUnit::Seconds)
        .epoch_millis(EPOCH_MS)
        .build_unchecked_time()
        .unwrap()
}
