//! What happens when the ring refuses a put: a padding round that leaves room unfilled.
//! (A take from an empty ring follows a take policy: see `crate::wait`.)

pub use super::ring::PutRejected;
use std::sync::Arc;

/// A padding round that left room in the ring unfilled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedPut {
    /// Why: the time-ahead cap holds ([`PutRejected::TimeAheadCap`]), or the layout's
    /// time is used up ([`PutRejected::LayoutExhausted`]).
    pub reason: PutRejected,
    /// Slots left empty.
    pub free_slots: usize,
}

/// Called on the padding thread when a round leaves room in the ring it may not fill
/// (UidGenerator's "rejected put"): the time-ahead cap holds, or the layout has run out.
/// A full ring is the normal end of a round and is not reported; the padder never makes
/// an ID without a slot for it, so none is ever thrown away. The default counts it (see
/// `rejected_puts`) and logs at `debug`. While the cap holds, the padder looks at the
/// clock every few milliseconds, and each look that finds it still holding is reported.
pub type PutRejectHandler = Arc<dyn Fn(RejectedPut) + Send + Sync>;
