//! Segment mode (Meituan Leaf's 号段): dense, increasing IDs per tag, taken a range at a
//! time from a counter in a store and handed out from memory.
//!
//! [`SegmentGenerator`] keeps a lock-free chain of ranges (`chain`); one process-wide
//! thread fetches ranges ahead for every tag (`prefetch`).

#[cfg(not(uidgen_loom))]
mod chain;
#[cfg(uidgen_loom)]
pub mod chain;
#[cfg(not(uidgen_loom))]
mod generator;
#[cfg(not(uidgen_loom))]
mod prefetch;

#[cfg(not(uidgen_loom))]
use generator::Tag;
#[cfg(not(uidgen_loom))]
pub use generator::{
    GiveBack, SegmentError, SegmentGenerator, SegmentGeneratorBuilder, SegmentStats,
    DEFAULT_MAX_PREFETCH_DISTANCE, DEFAULT_MAX_STEP, DEFAULT_RANGE_LIFETIME,
};
#[cfg(not(uidgen_loom))]
pub use prefetch::PREFETCH_THREAD_NAME;
