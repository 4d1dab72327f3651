//! Time safety: clock rollbacks under every strategy, the cap on borrowed time, and the
//! end of a layout's time.

mod common;

use common::{tiny_layout, EPOCH_MS};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, CachedUidGenerator, Clock, DefaultUidGenerator, FixedWorkerId, ManualClock,
    Preset, RollbackStrategy, TakeRejectPolicy, UidError, UidGenerator,
};

const THREADS: usize = 4;
const PER_THREAD: usize = 100_000;
const TICK: Duration = Duration::from_millis(1);

/// Snowflake's millisecond layout: 4,096 IDs a tick, so 400k IDs cross ~100 ticks.
fn ms_layout() -> BitsAllocator {
    Preset::Snowflake.builder().build_unchecked_time().unwrap()
}

struct RollbackRun {
    ids: Vec<u64>,
    errors: Vec<UidError>,
}

/// Takes `PER_THREAD` IDs on each of `THREADS` threads while a steering thread moves the
/// clock a tick at a time; when half the IDs are taken it steps the clock back by `back`
/// and holds it there until `seen()` says the generator noticed (2 s at most), lets it run
/// on from there for 50 ticks, then steps it forward to where it was (as an NTP correction
/// would). Errors are counted and the call retried.
fn run_with_rollback(
    gen: &dyn UidGenerator,
    clock: &ManualClock,
    back: Duration,
    seen: &(dyn Fn() -> bool + Sync),
) -> RollbackRun {
    let taken = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let deadline = Instant::now() + Duration::from_secs(120);
    let ids = thread::scope(|s| {
        s.spawn(|| {
            let mut rewound_from = None;
            let mut ticks_since = 0;
            while !done.load(Ordering::Relaxed) {
                let half_taken = taken.load(Ordering::Relaxed) >= THREADS * PER_THREAD / 2;
                if rewound_from.is_none() && half_taken {
                    // Instead of this step's advance: the threads have used the current
                    // tick, and the clock now reads `back` before it.
                    rewound_from = Some(clock.now_millis());
                    clock.rewind(back);
                    let hold = Instant::now() + Duration::from_secs(2);
                    while !seen() && Instant::now() < hold {
                        thread::sleep(Duration::from_micros(100));
                    }
                } else {
                    clock.advance(TICK);
                }
                if let Some(from) = rewound_from {
                    ticks_since += 1;
                    if ticks_since == 50 && clock.now_millis() < from {
                        clock.set(from);
                    }
                }
                thread::sleep(Duration::from_micros(200));
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::with_capacity(PER_THREAD);
                    while mine.len() < PER_THREAD {
                        assert!(Instant::now() < deadline, "run took over 120 s");
                        match gen.next_uid() {
                            Ok(uid) => {
                                mine.push(uid);
                                taken.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(err) => {
                                errors.lock().unwrap().push(err);
                                thread::sleep(Duration::from_micros(100));
                            }
                        }
                    }
                    mine
                })
            })
            .collect();
        let ids: Vec<u64> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        done.store(true, Ordering::Relaxed);
        ids
    });
    RollbackRun {
        ids,
        errors: errors.into_inner().unwrap(),
    }
}

fn assert_no_duplicates(ids: &[u64]) {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let dup = sorted.windows(2).find(|w| w[0] == w[1]);
    assert!(dup.is_none(), "duplicate ID {dup:?}");
    assert_eq!(sorted.len(), THREADS * PER_THREAD);
}

const ROLLBACKS: [Duration; 3] = [TICK, Duration::from_secs(5), Duration::from_secs(3600)];

fn default_generator(strategy: RollbackStrategy, clock: &ManualClock) -> DefaultUidGenerator {
    DefaultUidGenerator::builder()
        .allocator(ms_layout())
        .worker_id(1)
        .clock(clock.clone())
        .rollback_strategy(strategy)
        .build()
        .unwrap()
}

fn start_clock() -> ManualClock {
    ManualClock::new(1_700_000_000_000)
}

#[test]
fn fail_reports_each_rollback_as_an_error_saying_how_far() {
    for back in ROLLBACKS {
        let clock = start_clock();
        let gen = default_generator(RollbackStrategy::Fail, &clock);
        let run = run_with_rollback(&gen, &clock, back, &|| gen.rollbacks() > 0);
        assert_no_duplicates(&run.ids);
        assert!(
            !run.errors.is_empty(),
            "{back:?}: no error during the rollback"
        );
        for err in &run.errors {
            let UidError::ClockMovedBackwards { by } = err else {
                panic!("{back:?}: unexpected error {err}");
            };
            assert!(*by <= back + TICK, "{back:?}: reported {by:?}");
        }
        assert_eq!(gen.rollbacks(), 1, "{back:?}: one rollback episode");
    }
}

#[test]
fn wait_waits_out_rollbacks_within_max_and_fails_beyond_it() {
    let max = Duration::from_secs(10);
    for back in ROLLBACKS {
        let clock = start_clock();
        let gen = default_generator(RollbackStrategy::Wait { max }, &clock);
        let run = run_with_rollback(&gen, &clock, back, &|| gen.rollbacks() > 0);
        assert_no_duplicates(&run.ids);
        if back <= max {
            assert!(run.errors.is_empty(), "{back:?}: {:?}", run.errors.first());
        } else {
            assert!(!run.errors.is_empty(), "{back:?} is past max: must fail");
            assert!(run
                .errors
                .iter()
                .all(|e| matches!(e, UidError::ClockMovedBackwards { .. })));
        }
        assert_eq!(gen.rollbacks(), 1, "{back:?}");
    }
}

#[test]
fn continue_never_fails_and_never_repeats() {
    for back in ROLLBACKS {
        let clock = start_clock();
        let gen = default_generator(RollbackStrategy::Continue, &clock);
        let run = run_with_rollback(&gen, &clock, back, &|| gen.rollbacks() > 0);
        assert_no_duplicates(&run.ids);
        assert!(run.errors.is_empty(), "{back:?}: {:?}", run.errors.first());
        assert_eq!(gen.rollbacks(), 1, "{back:?}");
    }
}

/// `Continue` after a 1 s rollback under full load: IDs follow the time really passed
/// and run ahead of it by at most the bound (the review saw 1,307 s after one second).
#[test]
fn continue_after_a_rollback_under_full_load_runs_ahead_no_further_than_its_bound() {
    // Four IDs a millisecond: any steady caller outruns it, so the bound is what holds.
    let bits = uidgen::BitsAllocator::builder()
        .bits(41, 20, 2)
        .unit(uidgen::TimeUnit::Milliseconds)
        .epoch_millis(EPOCH_MS)
        .build_unchecked_time()
        .unwrap();
    let clock = ManualClock::starting_now();
    let bound = Duration::from_millis(200);
    let gen = DefaultUidGenerator::builder()
        .allocator(bits)
        .worker_id(5)
        .clock(clock.clone())
        .rollback_strategy(RollbackStrategy::Continue)
        .max_run_ahead(bound)
        .build()
        .unwrap();
    let before = gen.next_uid().unwrap();
    let (start_millis, start) = (clock.now_millis(), Instant::now());
    // The clock goes back a second and stays there; real time goes on.
    clock.rewind(Duration::from_secs(1));
    let mut ids = vec![before];
    let mut worst_ahead_ms = i64::MIN;
    while start.elapsed() < Duration::from_millis(1500) {
        let id = gen.next_uid().unwrap();
        let real = start_millis + start.elapsed().as_millis() as u64;
        let at = bits.parse(id).unwrap().timestamp_millis;
        worst_ahead_ms = worst_ahead_ms.max(at as i64 - real as i64);
        ids.push(id);
    }
    // Strictly increasing: none repeated.
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "IDs went down or repeated"
    );
    assert!(
        worst_ahead_ms <= bound.as_millis() as i64 + 5,
        "IDs ran {worst_ahead_ms} ms ahead of real time (bound {bound:?})"
    );
    // It kept issuing at about the layout's rate: 4 a millisecond for 1.5 s.
    assert!(ids.len() > 2_000, "only {} IDs", ids.len());
}

#[test]
fn spare_worker_switches_worker_and_goes_on() {
    for back in ROLLBACKS {
        let clock = start_clock();
        let strategy = RollbackStrategy::SpareWorker { spares: vec![77] };
        let gen = default_generator(strategy, &clock);
        let run = run_with_rollback(&gen, &clock, back, &|| gen.rollbacks() > 0);
        assert_no_duplicates(&run.ids);
        assert!(run.errors.is_empty(), "{back:?}: {:?}", run.errors.first());
        assert_eq!(gen.current_worker_id(), 77);
        let bits = ms_layout();
        let on_spare = run
            .ids
            .iter()
            .filter(|&&id| bits.parse(id).unwrap().worker_id == 77)
            .count();
        assert!(
            on_spare > 0 && on_spare < run.ids.len(),
            "{back:?}: {on_spare}"
        );
    }
}

#[test]
fn spare_worker_with_no_spare_left_fails() {
    let clock = start_clock();
    let gen = default_generator(RollbackStrategy::SpareWorker { spares: vec![] }, &clock);
    gen.next_uid().unwrap();
    clock.rewind(Duration::from_secs(1));
    assert!(matches!(
        gen.next_uid(),
        Err(UidError::ClockMovedBackwards { .. })
    ));
}

#[test]
fn spares_can_be_reserved_from_an_assigner_and_are_checked() {
    let bits = ms_layout();
    let strategy = RollbackStrategy::spare_workers(&FixedWorkerId(9), &bits, 2).unwrap();
    assert_eq!(
        strategy,
        RollbackStrategy::SpareWorker { spares: vec![9, 9] }
    );
    let err = DefaultUidGenerator::builder()
        .allocator(bits)
        .rollback_strategy(RollbackStrategy::SpareWorker { spares: vec![1024] })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("1024"), "{err}");
}

#[test]
fn the_cached_generator_rides_out_every_rollback() {
    for back in ROLLBACKS {
        let clock = start_clock();
        let gen = CachedUidGenerator::builder()
            .allocator(ms_layout())
            .worker_id(2)
            .clock(clock.clone())
            .build()
            .unwrap();
        let seen = || back == TICK || gen.stats().clock_rollbacks > 0;
        let run = run_with_rollback(&gen, &clock, back, &seen);
        assert_no_duplicates(&run.ids);
        assert!(run.errors.is_empty(), "{back:?}: {:?}", run.errors.first());
        // The padder reads the clock once per tick batch: a one-tick step back need not
        // reach below any reading it has made, so only the longer ones must be counted.
        if back > TICK {
            assert!(
                gen.stats().clock_rollbacks >= 1,
                "{back:?}: {:?}",
                gen.stats()
            );
        }
    }
}

#[test]
fn wait_within_max_blocks_until_the_clock_catches_up() {
    let clock = ManualClock::new(EPOCH_MS + 100_000);
    let gen = Arc::new(
        DefaultUidGenerator::builder()
            .allocator(tiny_layout())
            .clock(clock.clone())
            .rollback_strategy(RollbackStrategy::Wait {
                max: Duration::from_secs(2),
            })
            .build()
            .unwrap(),
    );
    let before = gen.next_uid().unwrap();
    clock.rewind(Duration::from_secs(3));
    assert!(
        matches!(gen.next_uid(), Err(UidError::ClockMovedBackwards { by }) if by == Duration::from_secs(3)),
        "past max: fails at once"
    );
    clock.advance(Duration::from_secs(2)); // now 1 s behind: within max
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = {
        let gen = gen.clone();
        thread::spawn(move || tx.send(gen.next_uid()).unwrap())
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "waits"
    );
    clock.advance(Duration::from_secs(1));
    let after = rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
    waiter.join().unwrap();
    assert!(after > before);
}

#[test]
fn max_time_ahead_holds_time_ahead_under_its_cap_at_full_speed() {
    let cap = Duration::from_secs(2);
    let gen = CachedUidGenerator::builder()
        .allocator(common::seconds_layout())
        .worker_id(3)
        .max_time_ahead(cap)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(5)))
        .build()
        .unwrap();
    assert!(
        gen.time_ahead() <= cap,
        "after the first fill: {:?}",
        gen.time_ahead()
    );
    let stop = Instant::now() + Duration::from_millis(2500);
    let ids: Vec<u64> = thread::scope(|s| {
        let takers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    while Instant::now() < stop {
                        mine.push(gen.next_uid().unwrap());
                        if mine.len() % 1024 == 0 {
                            let ahead = gen.time_ahead();
                            assert!(ahead <= cap, "time_ahead {ahead:?} over the cap");
                        }
                    }
                    mine
                })
            })
            .collect();
        takers.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    // Uncapped, 2.5 s at full speed is millions of IDs; capped, about 8,192 a second on
    // top of the 3 ticks the cap allows ahead.
    assert!(
        ids.len() > 3 * 8192,
        "the cap was never reached: {}",
        ids.len()
    );
    assert!(ids.len() < 10 * 8192, "the cap did not hold: {}", ids.len());
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "duplicates under the cap");
}

#[test]
fn both_generators_stop_at_the_layouts_last_tick_with_time_exhausted() {
    let bits = tiny_layout();
    let last_tick = ManualClock::new(bits.tick_start_millis(bits.max_delta()));
    let default_gen = DefaultUidGenerator::builder()
        .allocator(bits)
        .clock(last_tick.clone())
        .build()
        .unwrap();
    let cached_gen = CachedUidGenerator::builder()
        .allocator(bits)
        .clock(last_tick.clone())
        .build()
        .unwrap();
    for gen in [&default_gen as &dyn UidGenerator, &cached_gen] {
        let mut ids = Vec::new();
        let err = loop {
            match gen.next_uid() {
                Ok(uid) => ids.push(uid),
                Err(err) => break err,
            }
            assert!(ids.len() <= 4, "more IDs than the last tick holds");
        };
        assert_eq!(ids.len(), 4, "the last tick's four IDs");
        assert!(ids
            .iter()
            .all(|&id| bits.parse(id).unwrap().delta == bits.max_delta()));
        assert!(matches!(err, UidError::TimeExhausted { .. }), "{err}");
        assert!(err
            .to_string()
            .contains(&bits.format_instant(bits.last_instant_millis())));
    }
}

/// Everything `tracing` logs in this test binary, from every thread.
fn captured_log() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || SharedWriter(sink.clone()))
            .init();
        log
    })
    .clone()
}

struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn both_generators_warn_through_tracing_ahead_of_the_end() {
    let log = captured_log();
    let bits = tiny_layout();
    let near_end = ManualClock::new(bits.tick_start_millis(bits.max_delta() - 10));
    let far_from_end = ManualClock::new(bits.tick_start_millis(bits.max_delta() - 100_000));

    let warned = DefaultUidGenerator::builder()
        .allocator(bits)
        .clock(near_end.clone())
        .warn_before_end(Duration::from_secs(60))
        .build()
        .unwrap();
    let quiet = DefaultUidGenerator::builder()
        .allocator(bits)
        .clock(far_from_end.clone())
        .warn_before_end(Duration::from_secs(60))
        .build()
        .unwrap();
    warned.next_uid().unwrap();
    quiet.next_uid().unwrap();
    assert!(warned.warned_near_end());
    assert!(!quiet.warned_near_end());

    let cached = CachedUidGenerator::builder()
        .allocator(bits)
        .clock(near_end)
        .build() // default: warn a day ahead; 10 ticks are well inside it
        .unwrap();
    assert!(cached.stats().warned_near_end);

    let text = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let warnings = text.matches("layout is near its end").count();
    assert!(warnings >= 2, "one warning per near-end generator: {text}");
    assert!(
        text.contains(&bits.format_instant(bits.last_instant_millis())),
        "{text}"
    );
}
