//! The ID layout: `sign | time | worker | sequence` in 64 bits, its presets, and IDs taken
//! apart.

mod bits;
mod epoch;
mod parts;
mod unit;

pub use bits::{BitsAllocator, LayoutBuilder, Preset, JS_MAX_SAFE_INTEGER, TOTAL_BITS};
pub use parts::UidParts;
pub use unit::TimeUnit;
