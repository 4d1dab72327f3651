//! DefaultUidGenerator on a manual clock: ticks, rollback, exhaustion, uniqueness.

use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
mod common;

use common::{tiny_layout, EPOCH_MS};
use uidgen::{BitsAllocator, DefaultUidGenerator, ManualClock, Preset, UidError, UidGenerator};

fn generator(bits: BitsAllocator, clock: &ManualClock) -> DefaultUidGenerator {
    DefaultUidGenerator::builder()
        .allocator(bits)
        .worker_id(3)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn ids_carry_the_clock_tick_worker_and_sequence() {
    let clock = ManualClock::new(EPOCH_MS + 10_500);
    let gen = generator(tiny_layout(), &clock);
    let parts: Vec<_> = (0..4)
        .map(|_| gen.parse_uid(gen.next_uid().unwrap()).unwrap())
        .collect();
    for (i, p) in parts.iter().enumerate() {
        assert_eq!((p.delta, p.worker_id, p.sequence), (10, 3, i as u64));
    }
}

#[test]
fn sequence_exhaustion_waits_for_the_next_tick() {
    let clock = ManualClock::new(EPOCH_MS + 5_000);
    let gen = std::sync::Arc::new(generator(tiny_layout(), &clock));
    for _ in 0..4 {
        gen.next_uid().unwrap();
    }
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let gen = gen.clone();
        thread::spawn(move || tx.send(gen.next_uid()).unwrap())
    };
    // The fifth ID of tick 5 does not exist: the caller must still be waiting.
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "returned an ID without a new tick"
    );
    clock.advance(Duration::from_secs(1));
    let uid = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("woke up after the tick")
        .unwrap();
    waiter.join().unwrap();
    let parts = gen.parse_uid(uid).unwrap();
    assert_eq!((parts.delta, parts.sequence), (6, 0));
}

#[test]
fn clock_rollback_is_an_error_saying_how_far() {
    let clock = ManualClock::new(EPOCH_MS + 60_000);
    let gen = generator(tiny_layout(), &clock);
    let before = gen.next_uid().unwrap();
    clock.rewind(Duration::from_millis(2_500));
    assert_eq!(
        gen.next_uid(),
        Err(UidError::ClockMovedBackwards {
            by: Duration::from_millis(2_500)
        })
    );
    clock.advance(Duration::from_millis(2_500));
    assert!(
        gen.next_uid().unwrap() > before,
        "recovers once the clock catches up"
    );
}

#[test]
fn exhausted_time_bits_are_an_error_not_a_wrapped_id() {
    let bits = tiny_layout();
    // The last tick of the layout.
    let clock = ManualClock::new(bits.tick_start_millis(bits.max_delta()));
    let gen = generator(bits, &clock);
    let mut last = 0;
    for _ in 0..=bits.max_sequence() {
        last = gen.next_uid().unwrap();
    }
    assert_eq!(gen.parse_uid(last).unwrap().delta, bits.max_delta());
    // The tick's sequence is used up and there is no next tick: error, not a wait.
    let err = gen.next_uid().unwrap_err();
    assert!(matches!(err, UidError::TimeExhausted { .. }), "{err}");
    // Past the end by the clock: still an error.
    clock.advance(Duration::from_secs(5));
    let err = gen.next_uid().unwrap_err();
    assert!(
        err.to_string()
            .contains(&bits.format_instant(bits.last_instant_millis())),
        "{err}"
    );
}

#[test]
fn building_checks_worker_id_and_layout_against_the_clock() {
    let bits = tiny_layout();
    let clock = ManualClock::new(EPOCH_MS - 1);
    let err = DefaultUidGenerator::builder()
        .allocator(bits)
        .clock(clock.clone())
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("in the future"), "{err}");
    clock.set(EPOCH_MS);
    let err = DefaultUidGenerator::builder()
        .allocator(bits)
        .worker_id(1 << 21)
        .clock(clock)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_worker_id 2097151"), "{err}");
}

#[test]
fn four_threads_get_distinct_ids_on_a_millisecond_layout() {
    let per_thread = if cfg!(miri) { 500 } else { 100_000 };
    let bits = Preset::Snowflake.builder().build().unwrap();
    let gen = DefaultUidGenerator::new(bits, 1).unwrap();
    let all: Vec<Vec<u64>> = thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..per_thread)
                        .map(|_| gen.next_uid().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ids in &all {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "each thread's IDs increase"
        );
    }
    let distinct: HashSet<u64> = all.iter().flatten().copied().collect();
    assert_eq!(distinct.len(), 4 * per_thread);
}
