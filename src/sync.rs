//! The one place that chooses between `std` and `loom` primitives.
//!
//! Every other module imports atomics, `Arc`, `Mutex` and threads from here, so the
//! code that loom model-checks is the code that ships (crossbeam's `ArrayQueue` skipped
//! such a shim and so was never loom-checked). Build with `RUSTFLAGS="--cfg loom"` to
//! swap in loom's versions.

#[cfg(loom)]
pub(crate) use loom::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, MutexGuard,
    },
    thread,
};

#[cfg(not(loom))]
pub(crate) use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, MutexGuard,
    },
    thread,
};

/// Locks `mutex`, recovering the guard if another thread panicked while holding it.
///
/// The state our mutexes guard is only ever written whole (no invariant is half-updated
/// across a panic point), so a poisoned lock still holds consistent data.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sleeps the calling thread; under loom, where time does not pass, yields instead.
pub(crate) fn sleep(duration: std::time::Duration) {
    #[cfg(loom)]
    {
        let _ = duration;
        thread::yield_now();
    }
    #[cfg(not(loom))]
    thread::sleep(duration);
}
