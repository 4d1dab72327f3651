//! What `DefaultUidGenerator` does when the clock goes backwards, under each strategy.
//! A manual clock stands in for NTP stepping the system clock back.
//! Run: `cargo run -p uidgen --example rollback_strategies`.

use std::time::Duration;
use uidgen::{DefaultUidGenerator, ManualClock, Preset, RollbackStrategy, UidError, UidGenerator};

fn generator(strategy: RollbackStrategy, clock: &ManualClock) -> DefaultUidGenerator {
    DefaultUidGenerator::builder()
        .allocator(Preset::Snowflake.builder().build().expect("a valid preset"))
        .worker_id(1)
        .clock(clock.clone())
        .rollback_strategy(strategy)
        .build()
        .expect("valid settings")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let back = Duration::from_millis(50);

    // Fail (the default): an error saying how far back, until the clock catches up.
    let clock = ManualClock::starting_now();
    let gen = generator(RollbackStrategy::Fail, &clock);
    let before = gen.next_uid()?;
    clock.rewind(back);
    let err = gen.next_uid().unwrap_err();
    println!("fail: {err}");
    assert!(matches!(err, UidError::ClockMovedBackwards { .. }));
    clock.advance(back);
    assert!(gen.next_uid()? > before);

    // Continue: goes on from the last tick used; IDs keep increasing.
    let clock = ManualClock::starting_now();
    let gen = generator(RollbackStrategy::Continue, &clock);
    let before = gen.next_uid()?;
    clock.rewind(back);
    let after = gen.next_uid()?;
    println!("continue: {before} then {after}");
    assert!(after > before);

    // SpareWorker: switches to a worker ID reserved for this, at the clock's own time.
    let clock = ManualClock::starting_now();
    let gen = generator(RollbackStrategy::SpareWorker { spares: vec![2] }, &clock);
    gen.next_uid()?;
    clock.rewind(back);
    let spare = gen.parse_uid(gen.next_uid()?)?.worker_id;
    println!("spare_worker: now worker {spare}");
    assert_eq!(spare, 2);

    // A spare equal to the main worker ID would repeat IDs: refused when built.
    let refused = DefaultUidGenerator::builder()
        .worker_id(1)
        .rollback_strategy(RollbackStrategy::SpareWorker { spares: vec![1] })
        .build();
    println!("spare = main: {}", refused.unwrap_err());
    Ok(())
}
