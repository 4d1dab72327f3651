//! The one place that chooses between `std` and `loom` primitives.
//!
//! Every other module imports atomics, `Arc`, `Mutex` and threads from here, so the
//! code that loom model-checks is the code that ships (crossbeam's `ArrayQueue` skipped
//! such a shim and so was never loom-checked). Build with `RUSTFLAGS="--cfg uidgen_loom"` and the `loom` feature to
//! swap in loom's versions.

#[cfg(uidgen_loom)]
pub(crate) use loom::{
    sync::{
        atomic::{fence, AtomicBool, AtomicU64, Ordering},
        Arc, Mutex, MutexGuard,
    },
    thread,
};

#[cfg(not(uidgen_loom))]
pub(crate) use std::{
    sync::{
        atomic::{fence, AtomicBool, AtomicU64, Ordering},
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

/// Locks `mutex` if that needs no wait: a few tries, then `None` while another thread
/// holds it (recovering from poisoning as [`lock`] does).
pub(crate) fn try_lock<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    for _ in 0..16 {
        if let Some(guard) = try_lock_once(mutex) {
            return Some(guard);
        }
        std::hint::spin_loop();
    }
    None
}

/// One try at [`try_lock`]: `None` at once while another thread holds `mutex`.
pub(crate) fn try_lock_once<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// A caught panic's message, for a log line or an error.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic whose payload is not a string".into())
}

/// Parks the calling thread until unparked or `timeout` passes (or spuriously); under
/// loom, where time does not pass, yields instead.
pub(crate) fn park_timeout(timeout: std::time::Duration) {
    #[cfg(uidgen_loom)]
    {
        let _ = timeout;
        thread::yield_now();
    }
    #[cfg(not(uidgen_loom))]
    thread::park_timeout(timeout);
}

/// Sleeps the calling thread; under loom, where time does not pass, yields instead.
pub(crate) fn sleep(duration: std::time::Duration) {
    #[cfg(uidgen_loom)]
    {
        let _ = duration;
        thread::yield_now();
    }
    #[cfg(not(uidgen_loom))]
    thread::sleep(duration);
}

/// A number (from 1) no other caller in this process has had or will have: tags
/// per-thread caches so a new generator never serves a dropped one's IDs, and names a
/// `ManualClock`'s mark domain. Process-wide and outside any loom model, so it is a plain
/// `std` static.
pub(crate) fn unique_instance_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// std's own mutex and condvar, for state loom's models leave out: the time marks and the
/// lease keeper wait on the clock, which loom does not model. Poisoning is recovered as
/// [`lock`] does, for the same reason (every write under these locks is whole).
pub(crate) mod outside_loom {
    pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, RwLock};
    use std::sync::{RwLockReadGuard, RwLockWriteGuard};
    use std::time::Duration;

    /// Reads `lock`, recovering the guard if a writer panicked.
    pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
        lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads `lock` if no writer holds it (recovering the guard if a writer panicked).
    // Its one user (period tags) is not built under `--cfg uidgen_loom`.
    #[cfg_attr(uidgen_loom, allow(dead_code))]
    pub(crate) fn try_read<T>(lock: &RwLock<T>) -> Option<RwLockReadGuard<'_, T>> {
        match lock.try_read() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Writes `lock`, recovering the guard if a holder panicked.
    pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
        lock.write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Locks `mutex`, recovering the guard if a holder panicked.
    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits on `changed` up to `timeout` (or spuriously), recovering the guard if a
    /// holder panicked meanwhile.
    pub(crate) fn wait_timeout<'a, T>(
        changed: &Condvar,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> MutexGuard<'a, T> {
        changed
            .wait_timeout(guard, timeout)
            .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard)
    }
}
