//! Segment mode (Meituan Leaf's 号段): dense, increasing IDs per tag, taken a range at a
//! time from a counter in a store and handed out from memory.
//!
//! Split by job, each file importing only those listed before it:
//! - `chain`: the lock-free chain of ranges a tag's IDs are taken from (loom-checked);
//! - `error`: why a generator could not be built;
//! - `health`: how a store is doing, shared by every tag on it;
//! - `tag`: one tag's state, its fill, and the rules (step, distance) and limits it keeps;
//! - `prefetch`: the one thread per process that tops up every tag;
//! - `generator`: [`SegmentGenerator`] and its builder, the public face;
//! - `period`: [`PeriodSegmentGenerator`], IDs that start with their day or month, a
//!   segment generator per period;
//! - `residue`: [`ResidueSegmentGenerator`], one tag over several stores, each handing
//!   out its own residue class.

pub mod chain;
#[cfg(not(uidgen_loom))]
mod error;
#[cfg(not(uidgen_loom))]
mod generator;
#[cfg(not(uidgen_loom))]
mod health;
#[cfg(not(uidgen_loom))]
mod period;
#[cfg(not(uidgen_loom))]
mod prefetch;
#[cfg(not(uidgen_loom))]
mod residue;
#[cfg(not(uidgen_loom))]
mod tag;

#[cfg(not(uidgen_loom))]
pub use error::SegmentError;
#[cfg(not(uidgen_loom))]
pub use generator::{
    SegmentGenerator, SegmentGeneratorBuilder, DEFAULT_MAX_PREFETCH_DISTANCE, DEFAULT_MAX_STEP,
    DEFAULT_RANGE_LIFETIME,
};
#[cfg(not(uidgen_loom))]
pub use period::{Period, PeriodSegmentGenerator, PeriodSegmentGeneratorBuilder};
#[cfg(not(uidgen_loom))]
pub use prefetch::PREFETCH_THREAD_NAME;
#[cfg(not(uidgen_loom))]
pub use residue::{ResidueSegmentGenerator, ResidueSegmentGeneratorBuilder, MAX_RESIDUE_MODULUS};
#[cfg(not(uidgen_loom))]
pub use tag::{GiveBack, HeldRange, SegmentStats};
