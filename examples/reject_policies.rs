//! What a `CachedUidGenerator` does when its ring is empty (take policies) or a padding
//! round is cut short (the put reject handler).
//! Run: `cargo run -p uidgen --example reject_policies`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen::{
    CachedUidGenerator, ManualClock, PutRejected, TakeDecision, TakeRejectPolicy, UidError,
    UidGenerator,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A clock that never moves and no borrowing ahead of it: after the first tick's IDs
    // the ring stays empty, so every take is refused.
    let starved = |policy| {
        CachedUidGenerator::builder()
            .clock(ManualClock::starting_now())
            .max_time_ahead(Duration::ZERO)
            .thread_batch(1)
            .take_reject_policy(policy)
            .build()
    };

    // Fail fast: an error at once, for callers that have something better to do.
    let generator = starved(TakeRejectPolicy::fail_fast())?;
    let mut handed_out = 0;
    let err = loop {
        match generator.next_uid() {
            Ok(_) => handed_out += 1,
            Err(err) => break err,
        }
    };
    println!("fail_fast: {handed_out} IDs, then: {err}");
    assert!(matches!(err, UidError::BufferExhausted { .. }));

    // Your own: count refusals, retry three times (the generator backs off between
    // tries), then give up.
    let refusals = Arc::new(AtomicU64::new(0));
    let counted = refusals.clone();
    let generator = starved(TakeRejectPolicy::custom(move |rejected| {
        counted.fetch_add(1, Ordering::Relaxed);
        if rejected.attempt < 3 {
            TakeDecision::Retry
        } else {
            TakeDecision::Fail
        }
    }))?;
    // The padder fills in steps, so a call may be refused, retry, and be served: drain
    // until a pause brings no more, then count the refusals of one call on the empty ring.
    drain(&generator);
    refusals.store(0, Ordering::Relaxed);
    let err = generator.next_uid().expect_err("the ring stays empty");
    println!(
        "custom: gave up after {} refusals: {err}",
        refusals.load(Ordering::Relaxed)
    );
    assert_eq!(refusals.load(Ordering::Relaxed), 4);

    // A handler for padding rounds that leave room unfilled: here the time-ahead cap
    // holds (the clock never moves). The default counts it and logs at debug.
    let held_back = Arc::new(AtomicU64::new(0));
    let seen = held_back.clone();
    let generator = CachedUidGenerator::builder()
        .clock(ManualClock::starting_now())
        .max_time_ahead(Duration::ZERO)
        .take_reject_policy(TakeRejectPolicy::fail_fast())
        .put_reject_handler(move |rejected| {
            assert_eq!(rejected.reason, PutRejected::TimeAheadCap);
            seen.fetch_add(1, Ordering::Relaxed);
        })
        .build()?;
    // The padder fills to demand in growing steps.
    drain(&generator);
    // The handler runs after the round lets go of the padder; it may be a moment behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    while held_back.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "the handler was never called");
        std::thread::sleep(Duration::from_millis(10));
    }
    println!(
        "put handler: {} rounds held back by the cap",
        held_back.load(Ordering::Relaxed)
    );
    Ok(())
}

/// Takes until the ring is empty for good: a padding round was held back by the cap (the
/// stopped clock's tick is all put) and nothing is left.
fn drain(generator: &CachedUidGenerator) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        while generator.next_uid().is_ok() {}
        if generator.stats().rejected_puts > 0 && generator.next_uid().is_err() {
            return;
        }
        assert!(Instant::now() < deadline, "{:?}", generator.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
}
