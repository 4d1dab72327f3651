//! CachedUidGenerator: uniqueness under load, time behaviour, reject policies, shutdown.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};
mod common;

use common::{tiny_layout, EPOCH_MS};
use uidgen::{
    BitsAllocator, CachedUidGenerator, Clock, ConfigError, ManualClock, Preset, SystemClock,
    TakeDecision, TakeRejectPolicy, UidError, UidGenerator,
};

/// Checks what every batch of IDs from one worker must satisfy.
fn assert_all_distinct_positive_and_from(worker_id: u64, bits: &BitsAllocator, ids: &mut [u64]) {
    for &uid in ids.iter() {
        assert!(uid > 0 && uid <= i64::MAX as u64, "{uid} out of range");
        assert_eq!(bits.parse(uid).unwrap().worker_id, worker_id);
    }
    ids.sort_unstable();
    let duplicate = ids.windows(2).find(|w| w[0] == w[1]);
    assert!(duplicate.is_none(), "duplicate ID {duplicate:?}");
}

/// Takes `per_thread` IDs on each of `threads` threads, all starting together.
fn take_on_threads(gen: &CachedUidGenerator, threads: usize, per_thread: usize) -> Vec<Vec<u64>> {
    let start = Barrier::new(threads);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    (0..per_thread)
                        .map(|_| gen.next_uid().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn assert_each_thread_increasing(per_thread: &[Vec<u64>]) {
    for (t, ids) in per_thread.iter().enumerate() {
        let bad = ids.windows(2).position(|w| w[0] >= w[1]);
        assert!(bad.is_none(), "thread {t}: IDs not increasing at {bad:?}");
    }
}

#[test]
fn seven_million_ids_over_eight_threads_are_distinct_and_ordered_per_thread() {
    let per_thread = if cfg!(miri) { 1_000 } else { 875_000 };
    let gen = CachedUidGenerator::builder()
        .allocator(common::seconds_layout())
        .worker_id(4321)
        .build()
        .unwrap();
    let taken = take_on_threads(&gen, 8, per_thread);
    assert_each_thread_increasing(&taken);
    let mut all: Vec<u64> = taken.into_iter().flatten().collect();
    assert_eq!(all.len(), 8 * per_thread);
    assert_all_distinct_positive_and_from(4321, gen.allocator(), &mut all);
}

#[test]
fn batches_and_single_takes_interleave_without_repeats() {
    let gen = CachedUidGenerator::builder().worker_id(9).build().unwrap();
    let per_thread: Vec<Vec<u64>> = thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let gen = &gen;
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let mut batch = [0u64; 100];
                    for round in 0..2_000 {
                        if (round + t) % 3 == 0 {
                            let n = gen.next_uids(&mut batch).unwrap();
                            assert!(n >= 1);
                            mine.extend_from_slice(&batch[..n]);
                        } else {
                            mine.push(gen.next_uid().unwrap());
                        }
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_each_thread_increasing(&per_thread);
    let mut all: Vec<u64> = per_thread.into_iter().flatten().collect();
    assert_all_distinct_positive_and_from(9, gen.allocator(), &mut all);
    assert_eq!(gen.next_uids(&mut []), Ok(0));
}

#[test]
fn after_four_idle_seconds_ids_carry_the_current_tick() {
    let gen = CachedUidGenerator::builder()
        .allocator(common::seconds_layout())
        .worker_id(1)
        .build()
        .unwrap();
    let bits = *gen.allocator();
    gen.next_uid().unwrap();
    // IDs are dropped once their tick is 4 resync intervals (2 s here) behind the clock,
    // at the next resync: by 4 s every ID from before the pause is gone.
    thread::sleep(Duration::from_secs(4));
    let now_tick = bits.tick_at(SystemClock.now_millis()).unwrap();
    let delta = bits.parse(gen.next_uid().unwrap()).unwrap().delta;
    assert!(
        delta.abs_diff(now_tick) <= 1,
        "ID tick {delta} is {} ticks from the clock's {now_tick}",
        delta as i64 - now_tick as i64
    );
    assert!(gen.stats().discarded_stale > 0, "stale IDs were dropped");
}

#[test]
fn clock_moved_back_an_hour_mid_run_repeats_nothing() {
    let clock = ManualClock::new(EPOCH_MS + 86_400_000);
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .worker_id(5)
        .clock(clock.clone())
        .build()
        .unwrap();
    let per_thread = 25_000;
    let taken = thread::scope(|s| {
        let steer = s.spawn(|| {
            for _ in 0..20 {
                clock.advance(Duration::from_millis(700));
                thread::sleep(Duration::from_millis(2));
            }
            clock.rewind(Duration::from_secs(3600));
        });
        let taken = take_on_threads(&gen, 4, per_thread);
        steer.join().unwrap();
        taken
    });
    assert_each_thread_increasing(&taken);
    let mut all: Vec<u64> = taken.into_iter().flatten().collect();
    assert_all_distinct_positive_and_from(5, gen.allocator(), &mut all);
    // After the rollback, a new claim is above every ID handed out before it.
    let after = gen.next_uid().unwrap();
    assert!(after > *all.last().unwrap());
}

#[test]
fn a_layout_at_its_end_returns_time_exhausted_not_an_id_past_it() {
    let bits = tiny_layout();
    // Two ticks from the end: the last two ticks' 4 IDs each, then nothing.
    let clock = ManualClock::new(bits.tick_start_millis(bits.max_delta() - 1));
    let gen = CachedUidGenerator::builder()
        .allocator(bits)
        .clock(clock)
        .build()
        .unwrap();
    let mut ids = Vec::new();
    let err = loop {
        match gen.next_uid() {
            Ok(uid) => ids.push(uid),
            Err(err) => break err,
        }
        assert!(ids.len() <= 8, "more IDs than the layout holds");
    };
    assert_eq!(ids.len(), 8);
    assert!(ids
        .iter()
        .all(|&uid| bits.parse(uid).unwrap().delta <= bits.max_delta()));
    assert!(matches!(err, UidError::TimeExhausted { .. }), "{err}");
    assert!(err
        .to_string()
        .contains(&bits.format_instant(bits.last_instant_millis())));
    assert!(matches!(
        gen.next_uid(),
        Err(UidError::TimeExhausted { .. })
    ));
}

#[test]
fn time_ahead_reports_borrowed_ticks_and_shrinks_as_the_clock_catches_up() {
    let clock = ManualClock::new(EPOCH_MS + 1_000_000);
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .clock(clock.clone())
        .build()
        .unwrap();
    // The first fill holds 8 ticks (4 IDs a tick, ring of 32): 7 ticks borrowed.
    assert_eq!(gen.time_ahead(), Duration::from_secs(7));
    for _ in 0..400 {
        gen.next_uid().unwrap();
    }
    assert!(
        gen.time_ahead() >= Duration::from_secs(100),
        "{:?}",
        gen.time_ahead()
    );
    clock.advance(Duration::from_secs(100_000));
    assert_eq!(gen.time_ahead(), Duration::ZERO);
}

/// A generator with a 4-slot ring (one tick of the tiny layout) and no thread cache, on
/// a clock that stands still and that padding may not run ahead of: once the first
/// tick's 4 IDs are taken, the ring stays empty (neither the padding thread nor a taker
/// may fill it) until the test moves the clock on a tick.
fn stalled_generator(clock: &ManualClock, policy: TakeRejectPolicy) -> CachedUidGenerator {
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .clock(clock.clone())
        .max_time_ahead(Duration::ZERO)
        .boost_power(0)
        .thread_batch(1)
        .take_reject_policy(policy)
        .build()
        .unwrap();
    for _ in 0..4 {
        gen.next_uid().expect("the first fill holds one tick");
    }
    gen
}

/// The next ID, retrying the take policy's refusals (`BufferExhausted`) until `within`
/// has passed: a loaded machine may run neither the padding thread nor a taker's fill at
/// once. Any other error fails the test at once.
fn next_uid_within(gen: &CachedUidGenerator, within: Duration) -> u64 {
    let deadline = Instant::now() + within;
    loop {
        match gen.next_uid() {
            Ok(uid) => return uid,
            Err(UidError::BufferExhausted { .. }) if Instant::now() < deadline => {}
            Err(err) => panic!("no ID within {within:?}: {err:?}"),
        }
    }
}

fn stopped_clock() -> ManualClock {
    ManualClock::new(EPOCH_MS + 1_000_000)
}

#[test]
fn fail_fast_policy_errors_at_once_on_an_empty_ring() {
    let clock = stopped_clock();
    let gen = stalled_generator(&clock, TakeRejectPolicy::fail_fast());
    let start = Instant::now();
    let err = gen.next_uid().unwrap_err();
    assert!(matches!(err, UidError::BufferExhausted { .. }), "{err}");
    assert!(gen.next_uids(&mut [0; 8]).is_err());
    assert_eq!(gen.stats().rejected_takes, 2);
    // At once: not the padding thread's 10 ms look at the clock.
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn wait_policy_waits_for_the_padder_then_gives_up_at_its_bound() {
    let clock = stopped_clock();
    let gen = stalled_generator(&clock, TakeRejectPolicy::wait(Duration::from_millis(200)));
    let start = Instant::now();
    let err = gen.next_uid().unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(
        matches!(err, UidError::BufferExhausted { waited } if waited >= Duration::from_millis(200))
    );
    // With the padder free again, a waiting take gets its ID.
    let opener = {
        let clock = clock.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            clock.advance(Duration::from_secs(1));
        })
    };
    // The capped padder rechecks the clock every 10 ms, so one 200 ms wait is ample on an
    // idle machine; a loaded one may not run the padder in time, so a refused take may be
    // retried, and what is checked is that waiting takes are served once it has run.
    let uid = next_uid_within(&gen, Duration::from_secs(10));
    opener.join().unwrap();
    assert!(gen.parse_uid(uid).is_ok());
}

#[test]
fn take_policies_bound_every_call_while_a_filler_is_stuck_mid_fill() {
    let gen = CachedUidGenerator::builder()
        .worker_id(7)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_millis(200)))
        .build()
        .unwrap();
    let held = gen.hold_filler_for_tests();
    // What the first fill put, then nothing: no one may fill while the lock is held.
    let mut taken = 0;
    let err = loop {
        match gen.next_uid() {
            Ok(_) => taken += 1,
            Err(err) => break err,
        }
    };
    assert!(taken > 0 && taken <= gen.capacity(), "{taken} IDs");
    assert!(
        matches!(err, UidError::BufferExhausted { waited } if waited >= Duration::from_millis(200)),
        "{err:?}"
    );
    // try_next_uid never waits: the ring is empty and filling is not its to do.
    let start = Instant::now();
    assert!(matches!(
        gen.try_next_uid(),
        Err(UidError::WouldBlock { .. })
    ));
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    drop(held);
    // The thread, or this taker, fills again (a few tries of 200 ms: a busy CI machine
    // may run neither at once).
    let uid = next_uid_within(&gen, Duration::from_secs(10));
    assert!(gen.parse_uid(uid).is_ok());
}

#[test]
fn a_clock_that_panics_in_a_takers_fill_fails_no_take() {
    let (gen, armed) = panic_once_generator();
    let ids = thread::scope(|s| {
        let held = gen.hold_padding_thread_for_tests();
        // Let a round already past the gate finish before the clock is armed.
        thread::sleep(Duration::from_millis(50));
        armed.store(true, Ordering::SeqCst);
        let taker = s.spawn(|| (0..100).map(|_| gen.next_uid()).collect::<Vec<_>>());
        thread::sleep(Duration::from_millis(300));
        // Only a taker can have read the clock: the padding thread is held.
        assert!(
            !armed.load(Ordering::SeqCst),
            "a taker's fill read the clock (and its panic was caught)"
        );
        drop(held);
        taker.join().expect("no take panicked")
    });
    let mut ids: Vec<u64> = ids
        .into_iter()
        .map(|r| r.expect("every take served, by the thread after the panic"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_all_distinct_positive_and_from(0, gen.allocator(), &mut ids);
}

#[test]
fn custom_take_policy_is_called_per_refusal_until_it_fails() {
    let clock = stopped_clock();
    let calls = Arc::new(AtomicU32::new(0));
    let policy = {
        let calls = calls.clone();
        TakeRejectPolicy::custom(move |rejected| {
            assert_eq!(rejected.attempt, calls.fetch_add(1, Ordering::SeqCst));
            if rejected.attempt < 3 {
                TakeDecision::Retry
            } else {
                TakeDecision::Fail
            }
        })
    };
    let gen = stalled_generator(&clock, policy);
    assert!(gen.next_uid().is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

/// A clock that panics on one reading, as a buggy user clock might.
struct PanicOnce {
    inner: ManualClock,
    armed: Arc<AtomicBool>,
}

impl Clock for PanicOnce {
    fn now_millis(&self) -> u64 {
        if self.armed.swap(false, Ordering::SeqCst) {
            panic!("clock failure (deliberate, from the test)");
        }
        self.inner.now_millis()
    }
}

/// A generator with a 4-slot ring on a clock that panics on its first reading once the
/// returned flag is set.
fn panic_once_generator() -> (CachedUidGenerator, Arc<AtomicBool>) {
    let armed = Arc::new(AtomicBool::new(false));
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .clock(PanicOnce {
            inner: ManualClock::new(EPOCH_MS + 1_000_000),
            armed: armed.clone(),
        })
        .boost_power(0)
        .thread_batch(1)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(30)))
        .build()
        .unwrap();
    (gen, armed)
}

#[test]
fn a_panic_inside_padding_does_not_stop_padding() {
    let (gen, armed) = panic_once_generator();
    armed.store(true, Ordering::SeqCst);
    // Four IDs a ring: 100 takes need ~25 refills, the first of which panics.
    let mut ids: Vec<u64> = (0..100).map(|_| gen.next_uid().unwrap()).collect();
    assert!(
        !armed.load(Ordering::SeqCst),
        "the padder did hit the panic"
    );
    assert_all_distinct_positive_and_from(0, gen.allocator(), &mut ids);
}

#[test]
fn a_padder_that_dies_turns_takes_into_an_immediate_padder_stopped_error() {
    /// A panic payload that panics again when dropped: the padder's per-round
    /// `catch_unwind` catches the first, and dropping the payload kills the thread.
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panicked too");
        }
    }
    // The clock never moves and the padder may not run ahead of it, so once the first
    // tick is handed out the padder holds back, and calls the handler.
    let armed = Arc::new(AtomicBool::new(false));
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .clock(ManualClock::new(EPOCH_MS + 1_000_000))
        .max_time_ahead(Duration::ZERO)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(30)))
        .put_reject_handler({
            let armed = armed.clone();
            move |_| {
                if armed.load(Ordering::SeqCst) {
                    std::panic::panic_any(Bomb)
                }
            }
        })
        .build()
        .unwrap();
    // Armed after `build`, whose own first round may hold back already.
    armed.store(true, Ordering::SeqCst);
    let start = Instant::now();
    let error = loop {
        match gen.next_uid() {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    assert!(matches!(error, UidError::PadderStopped { .. }), "{error:?}");
    // Not the take policy's 30 s: the closed ring answers at once.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(
        gen.try_next_uid(),
        Err(UidError::PadderStopped { .. })
    ));
}

#[test]
fn dropping_the_generator_stops_and_joins_its_padding_thread() {
    let handler_owner = Arc::new(());
    let handler_ref = handler_owner.clone();
    let gen = CachedUidGenerator::builder()
        .put_reject_handler(move |_| {
            let _keep = &handler_ref;
        })
        .build()
        .unwrap();
    gen.next_uid().unwrap();
    // The padding thread owns the handler; it holds the second reference.
    assert_eq!(Arc::strong_count(&handler_owner), 2);
    let start = Instant::now();
    drop(gen);
    assert_eq!(
        Arc::strong_count(&handler_owner),
        1,
        "the padding thread still holds its state after drop"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[cfg(target_os = "linux")]
#[test]
fn padding_thread_is_named() {
    let thread_names = || -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|name| name.trim().to_owned())
            .collect()
    };
    let gen = CachedUidGenerator::builder().build().unwrap();
    // A new thread names itself as it starts, which may be just after build() returns.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut names = thread_names();
    while !names.iter().any(|n| n == uidgen::PADDING_THREAD_NAME) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
        names = thread_names();
    }
    assert!(
        names.iter().any(|n| n == uidgen::PADDING_THREAD_NAME),
        "{names:?}"
    );
    drop(gen);
}

#[test]
fn bad_settings_are_config_errors_naming_the_limit() {
    let cases: Vec<(&str, Result<CachedUidGenerator, ConfigError>)> = vec![
        (
            "boost_power",
            CachedUidGenerator::builder().boost_power(14).build(),
        ),
        (
            "padding_factor",
            CachedUidGenerator::builder().padding_factor(0).build(),
        ),
        (
            "padding_factor",
            CachedUidGenerator::builder().padding_factor(100).build(),
        ),
        (
            "thread_batch",
            CachedUidGenerator::builder().thread_batch(0).build(),
        ),
        (
            "thread_batch",
            CachedUidGenerator::builder().thread_batch(65).build(),
        ),
        (
            "worker_id",
            CachedUidGenerator::builder().worker_id(1 << 20).build(),
        ),
        (
            "schedule_interval",
            CachedUidGenerator::builder()
                .schedule_interval(Duration::ZERO)
                .build(),
        ),
        (
            "ran out",
            CachedUidGenerator::builder()
                .allocator(
                    Preset::UidGenerator
                        .builder()
                        .build_unchecked_time()
                        .unwrap(),
                )
                .build(),
        ),
    ];
    for (field, result) in cases {
        let err = result.expect_err(field);
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    // The largest ring allowed still builds: 2^13 << 13 = 2^26 slots.
    assert!(CachedUidGenerator::builder()
        .boost_power(13)
        .build()
        .is_ok());
}

#[test]
fn schedule_interval_refills_without_any_take_crossing_the_threshold() {
    let clock = ManualClock::new(EPOCH_MS + 1_000_000);
    let gen = CachedUidGenerator::builder()
        .allocator(tiny_layout())
        .clock(clock)
        .padding_factor(1)
        .thread_batch(1)
        .schedule_interval(Duration::from_millis(20))
        .resync_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    // Below 1% of 32 slots is never reached by one take: only the schedule refills.
    gen.next_uid().unwrap();
    assert_eq!(gen.stats().len, 31);
    let deadline = Instant::now() + Duration::from_secs(5);
    while gen.stats().len < 32 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(gen.stats().len, 32, "{:?}", gen.stats());
}
