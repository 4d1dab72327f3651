//! The pauses between two tries of a waiting take.

use std::time::Duration;

/// The pause between two tries of a blocking take: spin, then yield, then nap.
pub(crate) fn blocking(backoff: &crossbeam_utils::Backoff) {
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
pub(crate) async fn on_runtime(attempt: u32) {
    if attempt < 8 {
        tokio::task::yield_now().await;
    } else {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}
