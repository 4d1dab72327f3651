//! Helpers shared by the integration tests.
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use uidgen::{BitsAllocator, TimeUnit, WorkerIdError};

/// A fixed epoch (2020-09-13) for manual-clock tests.
pub const EPOCH_MS: u64 = 1_600_000_000_000;

/// A seconds layout with four IDs a tick (2 sequence bits), so tests reach the end of a
/// tick, and of the layout, after a handful of IDs.
pub fn tiny_layout() -> BitsAllocator {
    BitsAllocator::builder()
        .bits(40, 21, 2)
        .unit(TimeUnit::Seconds)
        .epoch_millis(EPOCH_MS)
        .build_unchecked_time()
        .unwrap()
}

/// The second-based layout some tests are written in (30/20/13, epoch 2026-01-01: the
/// default before leases made millisecond ticks the default).
pub fn seconds_layout() -> BitsAllocator {
    BitsAllocator::builder()
        .bits(30, 20, 13)
        .unit(TimeUnit::Seconds)
        .epoch("2026-01-01")
        .build()
        .unwrap()
}

/// Asserts a registry's overflow: `worker_id` handed out, past the layout's `max_worker_id`.
pub fn assert_overflow(err: &WorkerIdError, worker_id: u64, max_worker_id: u64) {
    match err {
        WorkerIdError::RegistryExhausted {
            worker_id: got,
            max_worker_id: max,
            ..
        } => assert_eq!((*got, *max), (worker_id, max_worker_id), "{err}"),
        other => panic!("expected an overflow error, got: {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&worker_id.to_string()) && message.contains(&max_worker_id.to_string()),
        "the message names both numbers: {message}"
    );
}
