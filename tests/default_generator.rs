//! DefaultUidGenerator on a manual clock: ticks, rollback, exhaustion, uniqueness.

use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
mod common;

use common::{tiny_layout, EPOCH_MS};
use uidgen::{
    BitsAllocator, DefaultUidGenerator, ManualClock, Preset, RollbackStrategy, UidError,
    UidGenerator,
};

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

// A worker ID's time mark ahead of the clock ------------------------------------------

/// A millisecond layout (Snowflake's) and a manual clock at `start`.
fn ms_generator(clock: &ManualClock, strategy: RollbackStrategy) -> DefaultUidGenerator {
    DefaultUidGenerator::builder()
        .allocator(Preset::Snowflake.builder().build_unchecked_time().unwrap())
        .worker_id(3)
        .clock(clock.clone())
        .rollback_strategy(strategy)
        .build()
        .unwrap()
}

/// A clock at `start` whose worker ID 3 was used, by a generator now gone, up to the
/// tick `ahead` later (as a cached generator that borrowed ticks leaves it); the clock
/// reads `start` again. Returns the clock and the previous holder's ID.
fn clock_behind_the_mark_by(start: u64, ahead: Duration) -> (ManualClock, u64) {
    let clock = ManualClock::new(start);
    clock.advance(ahead);
    let previous = ms_generator(&clock, RollbackStrategy::Fail);
    let id = previous.next_uid().unwrap();
    drop(previous);
    clock.set(start);
    (clock, id)
}

/// A start that is not a whole second, so the mark prints with its milliseconds.
const START_MS: u64 = 1_800_000_000_123;

#[test]
fn a_mark_20ms_ahead_is_waited_for_not_called_a_rollback() {
    let (clock, previous) = clock_behind_the_mark_by(START_MS, Duration::from_millis(20));
    let gen = std::sync::Arc::new(ms_generator(&clock, RollbackStrategy::Fail));
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let gen = gen.clone();
        thread::spawn(move || tx.send(gen.next_uid()).unwrap())
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "issued an ID while the clock is behind the mark"
    );
    // The first tick above the mark starts 21 ms from now.
    assert_eq!(
        gen.try_next_uid(),
        Err(UidError::WouldBlock {
            why: "this tick's sequence is used up, or the clock is behind the last tick used \
                  or the worker ID's time mark",
            wait: Some(Duration::from_millis(21)),
        })
    );
    clock.advance(Duration::from_millis(20));
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "issued an ID in the mark's own tick"
    );
    clock.advance(Duration::from_millis(1));
    let uid = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("issued once the clock passed the mark")
        .expect("no error while waiting within the bound");
    waiter.join().unwrap();
    assert!(
        uid > previous,
        "{uid} not above the previous holder's {previous}"
    );
    let (mine, theirs) = (
        gen.parse_uid(uid).unwrap(),
        gen.parse_uid(previous).unwrap(),
    );
    assert_eq!(
        mine.delta,
        theirs.delta + 1,
        "the first tick above the mark"
    );
    assert_eq!(gen.rollbacks(), 0, "waiting for a mark is not a rollback");
    // A real rollback after that is still one.
    clock.rewind(Duration::from_millis(5));
    assert_eq!(
        gen.next_uid(),
        Err(UidError::ClockMovedBackwards {
            by: Duration::from_millis(5)
        })
    );
    assert_eq!(gen.rollbacks(), 1);
}

#[test]
fn a_mark_further_ahead_than_the_bound_is_an_error_naming_the_worker_id_and_the_mark() {
    let ahead = Duration::from_secs(5);
    let (clock, previous) = clock_behind_the_mark_by(START_MS, ahead);
    let gen = ms_generator(&clock, RollbackStrategy::Fail);
    let started = std::time::Instant::now();
    let err = gen.next_uid().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "failed only after {:?}: it must not wait out a mark past its bound",
        started.elapsed()
    );
    assert_eq!(
        err,
        UidError::MarkAhead {
            worker_id: 3,
            mark_millis: START_MS + 5_000,
            now_millis: START_MS,
            ahead: Duration::from_millis(5_001),
            max_wait: Duration::from_secs(1),
        }
    );
    let message = err.to_string();
    for part in [
        "previous holder of worker ID 3",
        "used ticks up to 2027-01-15 08:00:05.123 UTC",
        "time mark",
        "retry in 5.001s",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }
    assert!(!message.contains("backwards"), "{message}");
    assert_eq!(gen.rollbacks(), 0);
    // The same, once the clock is past the mark: IDs above the previous holder's.
    clock.advance(ahead + Duration::from_millis(1));
    assert!(gen.next_uid().unwrap() > previous);
    assert_eq!(gen.rollbacks(), 0);
}

#[test]
fn the_mark_wait_bound_is_wait_max_when_longer_or_as_set_and_continue_never_waits() {
    let ahead = Duration::from_secs(5);
    // `Wait { max: 10 s }`: a mark 5 s ahead is within the bound, so not an error.
    let (clock, previous) = clock_behind_the_mark_by(START_MS, ahead);
    let wait = RollbackStrategy::Wait {
        max: Duration::from_secs(10),
    };
    let gen = ms_generator(&clock, wait.clone());
    assert!(matches!(
        gen.try_next_uid(),
        Err(UidError::WouldBlock { wait: Some(w), .. }) if w == Duration::from_millis(5_001)
    ));
    drop(gen);
    // Set explicitly, the bound is the one given.
    let gen = DefaultUidGenerator::builder()
        .allocator(Preset::Snowflake.builder().build_unchecked_time().unwrap())
        .worker_id(3)
        .clock(clock.clone())
        .rollback_strategy(wait)
        .max_mark_wait(Duration::from_millis(100))
        .build()
        .unwrap();
    assert!(matches!(
        gen.next_uid(),
        Err(UidError::MarkAhead { max_wait, .. }) if max_wait == Duration::from_millis(100)
    ));
    drop(gen);
    // `Continue` goes on from the mark at once, and counts no rollback.
    let gen = ms_generator(&clock, RollbackStrategy::Continue);
    let uid = gen.next_uid().unwrap();
    assert!(uid > previous);
    assert_eq!(gen.rollbacks(), 0);
    // More than an hour is refused, as for `max_run_ahead`.
    let err = DefaultUidGenerator::builder()
        .max_mark_wait(Duration::from_secs(3_601))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_mark_wait"), "{err}");
}
