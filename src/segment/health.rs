//! How one store is doing, shared by every tag on it: its failures, its last error, and
//! the backoff before it is asked again.

use crate::sync::{lock, AtomicBool, Mutex, Ordering};
use std::time::{Duration, Instant};

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How one store is doing, shared by every tag on it (stores are told apart by their
/// `describe`), so a store that is down costs one timeout per backoff, not one per tag.
#[derive(Debug, Default)]
pub(super) struct StoreHealth {
    /// When to try again, and the pause after that.
    retry: Mutex<(Option<Instant>, Duration)>,
    error: Mutex<Option<String>>,
    failing: AtomicBool,
}

impl StoreHealth {
    /// Whether the store may be asked now (it is not waiting out a backoff).
    pub(super) fn may_try(&self, now: Instant) -> bool {
        let retry = lock(&self.retry);
        retry.0.is_none_or(|at| now >= at)
    }

    /// Records a failure; `true` if the store was answering until now.
    pub(super) fn failed(&self, now: Instant, message: String) -> bool {
        {
            let mut retry = lock(&self.retry);
            let backoff = retry.1.max(FIRST_BACKOFF);
            *retry = (Some(now + backoff), (backoff * 2).min(MAX_BACKOFF));
        }
        *lock(&self.error) = Some(message);
        !self.failing.swap(true, Ordering::Relaxed)
    }

    /// Records an answer; `true` if the store was failing until now.
    pub(super) fn answered(&self) -> bool {
        if !self.failing.swap(false, Ordering::Relaxed) {
            return false;
        }
        *lock(&self.retry) = (None, FIRST_BACKOFF);
        *lock(&self.error) = None;
        true
    }

    pub(super) fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// The last failure while the store is failing.
    pub(super) fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }
}
