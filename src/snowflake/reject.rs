//! What happens when the ring refuses: a put into a full ring, a take from an empty one.

pub use super::ring::PutRejected;
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

/// The pause between two tries of a blocking take: spin, then yield, then nap.
pub(crate) fn pause_blocking(backoff: &crossbeam_utils::Backoff) {
    if cfg!(uidgen_loom) {
        // Loom explores yields, not spins or sleeps.
        crate::sync::thread::yield_now();
    } else if backoff.is_completed() {
        crate::sync::sleep(Duration::from_micros(50));
    } else {
        backoff.snooze();
    }
}

/// The pause between two tries of an async take: yield to the runtime a few times, then
/// wait on its timer. Never blocks the worker thread.
#[cfg(feature = "tokio")]
pub(crate) async fn pause_async(attempt: u32) {
    if attempt < 8 {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(Duration::from_micros(200)).await;
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
