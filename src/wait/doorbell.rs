//! How takers wake the thread that fills for them (the cached generator's padding thread,
//! the segment generators' prefetch thread): a flag and `Thread::unpark`, never a lock, so
//! a take that asks for more cannot wait on anything (a channel's waker takes a mutex).
//! Below, "the padder" is whichever thread waits on it.
//!
//! The protocol, model-checked in `loom-tests/` (`doorbell_*`):
//! - A taker [`ring`](Doorbell::ring)s: it sets the flag and, if it was the one to set it,
//!   unparks the padder. However many takers ring, one unpark is sent per round.
//! - The padder [`wait`](Doorbell::wait)s: it returns at once if the flag is set (a ring
//!   is never lost: an unpark that comes before the park makes the park return), else
//!   parks until unparked, stopped, or the deadline. A pending ring is served before a
//!   stop is obeyed.
//! - The padder [`answer`](Doorbell::answer)s as a round starts, clearing the flag, so a
//!   ring during the round gets a round of its own.

use crate::sync::{self, thread, AtomicBool, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Instant;

/// Why [`Doorbell::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A taker rang.
    Rung,
    /// The deadline passed.
    Deadline,
    /// `stop` was set (and no ring was pending).
    Stopped,
}

/// The padding request flag; see the module docs.
#[derive(Debug, Default)]
pub struct Doorbell {
    requested: CachePadded<AtomicBool>,
}

impl Doorbell {
    /// A doorbell nobody has rung (the generator builds one through `Default`).
    #[cfg(uidgen_loom)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks `padder` for a round. Cheap when a request is pending already: one load of
    /// a line that only changes once per round.
    #[inline]
    pub fn ring(&self, padder: &thread::Thread) {
        if !self.requested.load(Ordering::Relaxed) && !self.requested.swap(true, Ordering::AcqRel) {
            padder.unpark();
        }
    }

    /// Clears the request as a round starts.
    pub fn answer(&self) {
        self.requested.store(false, Ordering::Release);
    }

    /// Waits (parked) until rung, `stop` is set, or `deadline` (`None`: no deadline).
    pub fn wait(&self, stop: &AtomicBool, deadline: Option<Instant>) -> Wake {
        loop {
            if self.requested.load(Ordering::Acquire) {
                return Wake::Rung;
            }
            if stop.load(Ordering::Acquire) {
                // Read again: the first read may predate a ring made before the stop,
                // which this Acquire of `stop` now makes visible (loom found this).
                return if self.requested.load(Ordering::Acquire) {
                    Wake::Rung
                } else {
                    Wake::Stopped
                };
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Wake::Deadline;
                    }
                    sync::park_timeout(deadline - now);
                }
            }
        }
    }
}
