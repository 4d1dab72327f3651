//! Waiting for IDs, below both generator families so neither imports the other: the
//! take policies a user chooses, the pauses between tries, the doorbell that wakes a
//! filling thread, and the one take loop both generators call when they find nothing to
//! hand out.

#[cfg(not(uidgen_loom))]
pub(crate) mod doorbell;
#[cfg(uidgen_loom)]
pub mod doorbell;
mod pause;
mod policy;
pub(crate) mod take;

pub use policy::{RejectedTake, TakeDecision, TakeRejectPolicy};
