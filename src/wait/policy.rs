//! Take policies: what a take does when its generator has nothing to hand out (the
//! cached generator's ring is empty, a segment generator's ranges are used up).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A take that found the ring empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedTake {
    /// Attempts so far in this call (0 on the first refusal).
    pub attempt: u32,
    /// Time since this call first found the ring empty.
    pub waited: Duration,
}

/// What a take policy decides for one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeDecision {
    /// Try the ring again (the generator backs off between tries).
    Retry,
    /// Give up: `next_uid` returns [`UidError::BufferExhausted`](crate::UidError::BufferExhausted).
    Fail,
}

type TakeFn = dyn Fn(RejectedTake) -> TakeDecision + Send + Sync;

/// What `next_uid` does when the ring is empty. The padding thread has always been woken
/// by then; the policy decides whether to try again. Between tries the generator backs
/// off itself (spin, then yield, then 50 µs naps; in `next_uid_async`, yields to the
/// runtime and its timer), so even a policy that always retries does not burn a core.
/// A [`SegmentGenerator`](crate::SegmentGenerator) takes the same policies for its
/// fetched ranges, and gives up with
/// [`UidError::SegmentExhausted`](crate::UidError::SegmentExhausted).
///
/// ```
/// use std::time::Duration;
/// use uidgen::{CachedUidGenerator, TakeDecision, TakeRejectPolicy};
///
/// let wait = TakeRejectPolicy::wait(Duration::from_millis(50)); // the default is 1 s
/// let fail_fast = TakeRejectPolicy::fail_fast();
/// // Your own: three retries, then fail. It runs on the taking thread (or task), so it
/// // should decide quickly and never block.
/// let custom = TakeRejectPolicy::custom(|r| {
///     if r.attempt < 3 { TakeDecision::Retry } else { TakeDecision::Fail }
/// });
/// let generator = CachedUidGenerator::builder().take_reject_policy(custom).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TakeRejectPolicy {
    kind: PolicyKind,
}

#[derive(Clone)]
enum PolicyKind {
    Wait(Duration),
    FailFast,
    Custom(Arc<TakeFn>),
}

impl TakeRejectPolicy {
    /// Wait for the padder up to `max_wait`, then fail with
    /// [`UidError::BufferExhausted`](crate::UidError::BufferExhausted).
    pub fn wait(max_wait: Duration) -> Self {
        Self {
            kind: PolicyKind::Wait(max_wait),
        }
    }

    /// Fail at once.
    pub fn fail_fast() -> Self {
        Self {
            kind: PolicyKind::FailFast,
        }
    }

    /// Your own policy: called on every refusal until it returns [`TakeDecision::Fail`].
    pub fn custom(decide: impl Fn(RejectedTake) -> TakeDecision + Send + Sync + 'static) -> Self {
        Self {
            kind: PolicyKind::Custom(Arc::new(decide)),
        }
    }

    pub(crate) fn decide(&self, rejected: RejectedTake) -> TakeDecision {
        match &self.kind {
            PolicyKind::Wait(max) if rejected.waited < *max => TakeDecision::Retry,
            PolicyKind::Wait(_) | PolicyKind::FailFast => TakeDecision::Fail,
            PolicyKind::Custom(decide) => decide(rejected),
        }
    }
}

impl Default for TakeRejectPolicy {
    /// [`TakeRejectPolicy::wait`] for up to one second.
    fn default() -> Self {
        Self::wait(Duration::from_secs(1))
    }
}

impl fmt::Debug for TakeRejectPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            PolicyKind::Wait(max) => write!(f, "TakeRejectPolicy::wait({max:?})"),
            PolicyKind::FailFast => f.write_str("TakeRejectPolicy::fail_fast()"),
            PolicyKind::Custom(_) => f.write_str("TakeRejectPolicy::custom(..)"),
        }
    }
}
