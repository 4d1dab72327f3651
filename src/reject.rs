//! What happens when the ring refuses: a put into a full ring, a take from an empty one.

use crate::ring::PutRejected;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A take that found the ring empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectedTake {
    /// Attempts so far in this call (0 on the first refusal).
    pub attempt: u32,
    /// Time since this call first found the ring empty.
    pub waited: Duration,
}

/// What a take policy decides for one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeDecision {
    /// Try the ring again (after whatever backoff the policy did).
    Retry,
    /// Give up: `next_uid` returns [`UidError::BufferExhausted`](crate::UidError::BufferExhausted).
    Fail,
}

type TakeFn = dyn Fn(RejectedTake) -> TakeDecision + Send + Sync;

/// What `next_uid` does when the ring is empty. The padding thread has always been woken
/// by then; the policy decides how long to wait for it.
///
/// ```
/// use std::time::Duration;
/// use uidgen::{TakeDecision, TakeRejectPolicy};
///
/// let wait = TakeRejectPolicy::wait(Duration::from_millis(50)); // the default is 1 s
/// let fail_fast = TakeRejectPolicy::fail_fast();
/// // Your own: three quick retries, then fail.
/// let custom = TakeRejectPolicy::custom(|r| {
///     if r.attempt < 3 { std::thread::yield_now(); TakeDecision::Retry } else { TakeDecision::Fail }
/// });
/// ```
#[derive(Clone)]
pub struct TakeRejectPolicy {
    decide: Arc<TakeFn>,
    name: &'static str,
}

impl TakeRejectPolicy {
    /// Wait for the padder up to `max_wait`, spinning first, then yielding, then sleeping
    /// in 50 µs naps; then fail.
    pub fn wait(max_wait: Duration) -> Self {
        Self {
            decide: Arc::new(move |r: RejectedTake| {
                if r.waited >= max_wait {
                    return TakeDecision::Fail;
                }
                match r.attempt {
                    0..=63 => crate::sync::spin_loop(),
                    64..=127 => crate::sync::thread::yield_now(),
                    _ => crate::sync::sleep(Duration::from_micros(50)),
                }
                TakeDecision::Retry
            }),
            name: "wait",
        }
    }

    /// Fail at once.
    pub fn fail_fast() -> Self {
        Self {
            decide: Arc::new(|_| TakeDecision::Fail),
            name: "fail_fast",
        }
    }

    /// Your own policy: called on every refusal until it returns [`TakeDecision::Fail`].
    pub fn custom(decide: impl Fn(RejectedTake) -> TakeDecision + Send + Sync + 'static) -> Self {
        Self {
            decide: Arc::new(decide),
            name: "custom",
        }
    }

    pub(crate) fn decide(&self, rejected: RejectedTake) -> TakeDecision {
        (self.decide)(rejected)
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
        write!(f, "TakeRejectPolicy::{}", self.name)
    }
}

/// A padding round that stopped short because the ring refused an ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectedPut {
    /// The ID that did not fit. It is not lost: the next round puts it first.
    pub uid: u64,
    /// Why the ring refused it.
    pub reason: PutRejected,
}

/// Called on the padding thread when a round stops at a refused put.
///
/// The padder makes an ID only when the ring has a slot for it, so a full ring refuses
/// nothing and UidGenerator's "discard the rest of the second" never happens; what is
/// reported is a slot still held by a taker that has claimed but not yet read it.
/// The default counts it (see `rejected_puts`) and logs at `debug`.
pub type PutRejectHandler = Arc<dyn Fn(RejectedPut) + Send + Sync>;
