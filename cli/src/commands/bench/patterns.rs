//! The four ways a run uses its generators ([`Pattern`]), each one function that makes
//! the calls on its threads, and [`measure`], which runs one of them (after a warm-up)
//! between two reads of the rings' counters.

use super::generators::{Generators, RingCounters};
use super::options::BenchOptions;
use super::recorder::{timed, timer_overhead, Recorder};
use super::report::{summarize, BenchReport};
use crate::pattern::Pattern;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};
use uidgen::IdSource;

/// Calls between two looks at the stop flag and the progress counter.
const CALLS_PER_ROUND: u64 = 1024;

/// Runs the pattern of `options` on `generators` (as many as the pattern uses).
pub(super) fn measure(
    name: &str,
    generators: &Generators<'_>,
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
) -> BenchReport {
    assert_eq!(
        generators.calls.len(),
        options.pattern.generators(),
        "one generator per pattern slot"
    );
    let overhead = timer_overhead();
    let warmup_rejected_takes = (!options.warmup.is_zero()
        && matches!(options.pattern, Pattern::Single | Pattern::Alternate(_)))
    .then(|| {
        // The same calls, unrecorded: the padder learns the load before it is measured.
        let start = RingCounters::read(&generators.rings);
        let warmup = BenchOptions {
            duration: options.warmup,
            check: false,
            ..*options
        };
        flat_out(
            &generators.calls,
            &warmup,
            &indicatif::ProgressBar::hidden(),
        );
        let end = RingCounters::read(&generators.rings);
        start
            .zip(end)
            .map(|(s, e)| e.rejected_takes - s.rejected_takes)
    })
    .flatten();
    let before = RingCounters::read(&generators.rings);
    let (recorders, threads_run) = match options.pattern {
        Pattern::Single | Pattern::Alternate(_) => {
            (flat_out(&generators.calls, options, progress), None)
        }
        Pattern::Churn => {
            let (recorder, threads_run) = churn(generators.calls[0], options, progress);
            (vec![recorder], Some(threads_run))
        }
        Pattern::Light => (light(generators.calls[0], options, progress), None),
    };
    progress.finish_and_clear();
    let after = RingCounters::read(&generators.rings);
    let mut report = summarize(
        name,
        generators,
        options,
        &recorders,
        threads_run,
        overhead,
        before.zip(after),
    );
    report.warmup_secs = options.warmup.as_secs_f64();
    report.warmup_rejected_takes = warmup_rejected_takes;
    report
}

/// Raised when the run's time is up; IDs taken so far, for the progress bar.
#[derive(Default)]
struct Flags {
    stop: AtomicBool,
    taken: AtomicU64,
}

/// Runs `body(thread index, recorder, flags)` on `options.threads` threads that start
/// together (each recorder is made before the start), shows progress until the run's
/// time is up, then raises `stop` and collects the recorders.
fn on_threads(
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
    body: impl Fn(usize, &mut Recorder, &Flags) + Sync,
) -> Vec<Recorder> {
    let flags = Flags::default();
    let ready = Barrier::new(options.threads + 1);
    let generators = options.pattern.generators();
    thread::scope(|s| {
        let workers: Vec<_> = (0..options.threads)
            .map(|i| {
                let (flags, ready, body) = (&flags, &ready, &body);
                s.spawn(move || {
                    let mut recorder = Recorder::new(generators, options.check);
                    ready.wait();
                    let start = Instant::now();
                    body(i, &mut recorder, flags);
                    recorder.elapsed = start.elapsed();
                    recorder
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        while start.elapsed() < options.duration {
            thread::sleep(Duration::from_millis(100));
            progress.set_position(start.elapsed().as_millis() as u64);
            progress.set_message(format!("{} IDs", flags.taken.load(Ordering::Relaxed)));
        }
        flags.stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

/// `single` and `alternate`: every thread calls the generators in turn, flat out, until
/// the time is up.
fn flat_out(
    generators: &[&dyn IdSource],
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
) -> Vec<Recorder> {
    let batch_len = options.batch.max(1);
    on_threads(options, progress, |_, recorder, flags| {
        let mut batch = vec![0u64; batch_len];
        let mut g = 0;
        while !flags.stop.load(Ordering::Relaxed) {
            for _ in 0..CALLS_PER_ROUND {
                let generator = generators[g];
                if batch_len > 1 {
                    recorder.batch(g, &mut batch, |out| generator.next_ids(out));
                } else {
                    recorder.call(g, || generator.next_id());
                }
                g = if g + 1 == generators.len() { 0 } else { g + 1 };
            }
            flags
                .taken
                .fetch_add(CALLS_PER_ROUND * batch_len as u64, Ordering::Relaxed);
        }
    })
}

/// `light`: every thread takes one ID every `options.interval` for the run's time, the
/// threads' first calls spread evenly over one interval. A thread woken late calls at
/// once and keeps its schedule, so the number of calls does not depend on the machine's
/// load.
fn light(
    generator: &dyn IdSource,
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
) -> Vec<Recorder> {
    let sleep_until = |due: Instant| {
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
    };
    on_threads(options, progress, |i, recorder, flags| {
        let start = Instant::now();
        let end = start + options.duration;
        let mut due = start + options.interval.mul_f64(i as f64 / options.threads as f64);
        while due < end {
            sleep_until(due);
            recorder.call(0, || generator.next_id());
            flags.taken.fetch_add(1, Ordering::Relaxed);
            due += options.interval;
        }
        sleep_until(end);
    })
}

/// `churn`: waves of `options.threads` threads, each taking one ID and exiting, every
/// wave joined before the next, until `options.count` threads have run or the time is up.
/// Only the call is timed, not the thread's start. Returns the threads run.
fn churn(
    generator: &dyn IdSource,
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
) -> (Recorder, u64) {
    // IDs from different threads: no order to check between them.
    let mut recorder = Recorder::new(1, options.check);
    let start = Instant::now();
    let mut threads_run = 0u64;
    while threads_run < options.count && start.elapsed() < options.duration {
        let wave = (options.count - threads_run).min(options.threads as u64);
        let taken: Vec<_> = thread::scope(|s| {
            let threads: Vec<_> = (0..wave)
                .map(|_| s.spawn(|| timed(|| generator.next_id())))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for (nanos, uid) in taken {
            recorder.add(0, nanos, uid, false);
        }
        threads_run += wave;
        progress.set_position(start.elapsed().as_millis() as u64);
        progress.set_message(format!("{threads_run} threads"));
    }
    recorder.elapsed = start.elapsed();
    (recorder, threads_run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::bench::report::Percentiles;
    use uidgen::{CachedUidGenerator, DefaultUidGenerator, ManualClock};

    fn options(pattern: Pattern, threads: usize, millis: u64) -> BenchOptions {
        BenchOptions {
            pattern,
            threads,
            duration: Duration::from_millis(millis),
            batch: 1,
            check: true,
            count: 20_000,
            interval: Duration::from_millis(250),
            warmup: Duration::ZERO,
        }
    }

    fn run_quietly(name: &str, generators: &Generators<'_>, options: &BenchOptions) -> BenchReport {
        let report = measure(name, generators, options, &indicatif::ProgressBar::hidden());
        // Shown with --nocapture: the figures to compare across library changes.
        println!("{report}\n");
        report
    }

    /// What every run must show: IDs received, none twice, every call in the histogram.
    fn assert_sound(report: &BenchReport) -> &Percentiles {
        assert!(report.total_ids > 0, "{report}");
        assert_eq!(report.duplicates, Some(0), "{report}");
        assert_eq!(report.errors, 0, "{report}");
        let latency = report
            .latency_ns
            .as_ref()
            .expect("single-ID calls are timed");
        assert_eq!(
            latency.calls, report.total_ids,
            "every call is in the histogram"
        );
        assert!(latency.p50 <= latency.p99 && latency.p9999 <= latency.max && latency.p50 > 0);
        latency
    }

    fn cached(worker_id: u64) -> CachedUidGenerator {
        CachedUidGenerator::builder()
            .worker_id(worker_id)
            .build()
            .unwrap()
    }

    #[test]
    fn patterns_read_as_they_are_written_and_alternate_is_bounded() {
        for (text, pattern) in [
            ("single", Pattern::Single),
            ("alternate:2", Pattern::Alternate(2)),
            ("alternate:64", Pattern::Alternate(64)),
            ("churn", Pattern::Churn),
            ("light", Pattern::Light),
        ] {
            assert_eq!(text.parse::<Pattern>(), Ok(pattern));
            assert_eq!(pattern.to_string(), text);
        }
        for bad in [
            "alternate:1",
            "alternate:65",
            "alternate:x",
            "alternate",
            "churn:2",
            "x",
        ] {
            let err = bad.parse::<Pattern>().unwrap_err();
            assert!(err.contains("2 to 64"), "{bad}: {err}");
        }
    }

    #[test]
    fn single_times_every_call_and_a_cached_generator_uses_one_slot_per_id() {
        let generator = [cached(3)];
        let report = run_quietly(
            "cached",
            &Generators::cached(&generator),
            &options(Pattern::Single, 2, 300),
        );
        assert_sound(&report);
        assert_eq!(report.pattern, "single");
        let slots = report.slots_per_id.unwrap();
        assert!((0.999..=1.001).contains(&slots), "{slots} slots per ID");
        assert!(report.time_ahead_growth_per_sec.is_some());
        assert_eq!(report.ids_per_sec_per_thread.len(), 2);
        let shown = report.to_string();
        assert!(shown.contains("p99.99") && shown.contains("max"), "{shown}");
    }

    #[test]
    fn alternate_uses_every_generator_and_counts_slots_over_all_of_them() {
        // A clock that stands still: no padder drops stale IDs after the run, so the
        // counters read here are the run's.
        let generators: Vec<CachedUidGenerator> = (0..2)
            .map(|i| {
                CachedUidGenerator::builder()
                    .worker_id(20 + i)
                    .clock(ManualClock::starting_now())
                    .build()
                    .unwrap()
            })
            .collect();
        let claimed = || {
            generators
                .iter()
                .map(|g| g.stats().claimed)
                .collect::<Vec<_>>()
        };
        let before = claimed();
        let report = run_quietly(
            "cached",
            &Generators::cached(&generators),
            &options(Pattern::Alternate(2), 1, 200),
        );
        let after = claimed();
        assert_sound(&report);
        assert_eq!(
            (report.pattern.as_str(), report.generators),
            ("alternate:2", 2)
        );
        assert_eq!(report.worker_ids, [20, 21]);
        let used: Vec<u64> = (0..2).map(|g| after[g] - before[g]).collect();
        // Taken in turn from one thread: each generator gave half the IDs (a call that
        // failed would be an error, and there are none).
        assert!(used.iter().all(|&u| u * 2 >= report.total_ids), "{used:?}");
        let expected = (used[0] + used[1]) as f64 / report.total_ids as f64;
        assert_eq!(report.slots_per_id, Some(expected), "{used:?}");
        assert_eq!(
            report.out_of_order, 0,
            "each generator's IDs rise on the thread"
        );
    }

    #[test]
    fn churn_runs_the_threads_asked_for_one_id_each() {
        let generator = [cached(5)];
        let mut options = options(Pattern::Churn, 4, 10_000);
        options.count = 50;
        let report = run_quietly("cached", &Generators::cached(&generator), &options);
        assert_sound(&report);
        assert_eq!(report.threads_run, Some(50));
        assert_eq!(report.total_ids, 50);
        assert!(report.slots_per_id.is_some() && report.time_ahead_start_secs.is_some());
        assert!(report.ids_per_sec_per_thread.is_empty());
    }

    #[test]
    fn light_makes_one_call_per_thread_and_interval() {
        let generator = [cached(6)];
        let mut options = options(Pattern::Light, 8, 500);
        options.interval = Duration::from_millis(50);
        let report = run_quietly("cached", &Generators::cached(&generator), &options);
        let latency = assert_sound(&report);
        // 8 threads × 0.5 s × 1000 / 50 ms: each thread's schedule is fixed, so the count
        // does not depend on the machine's speed (the tolerance is for rounding).
        let expected = 8.0 * 0.5 * 1000.0 / 50.0;
        assert!(
            (latency.calls as f64 - expected).abs() <= 0.1 * expected,
            "{} calls, expected about {expected}",
            latency.calls
        );
        assert_eq!(report.interval_ms, Some(50));
        // 8 threads at 20 IDs/s each against the default layout's 8,192,000 IDs/s.
        let share = report.offered_share_of_layout.unwrap();
        assert!((share - 160.0 / 8_192_000.0).abs() < 1e-12, "{share}");
        assert!(report.time_ahead_start_secs.is_some() && report.time_ahead_secs.is_some());
    }

    #[test]
    fn every_pattern_runs_on_the_default_generator_without_ring_figures() {
        // Millisecond ticks: a generator that has used up its tick waits 1 ms, not 1 s.
        let bits = uidgen::Preset::Snowflake.builder().build().unwrap();
        let generators: Vec<DefaultUidGenerator> = (0..2)
            .map(|i| DefaultUidGenerator::new(bits, 30 + i).unwrap())
            .collect();
        let mut light = options(Pattern::Light, 4, 200);
        light.interval = Duration::from_millis(50);
        let mut churn = options(Pattern::Churn, 2, 1000);
        churn.count = 20;
        for (options, generators) in [
            (options(Pattern::Single, 1, 100), &generators[..1]),
            (options(Pattern::Alternate(2), 2, 100), &generators[..]),
            (churn, &generators[..1]),
            (light, &generators[..1]),
        ] {
            let report = run_quietly("default", &Generators::without_ring(generators), &options);
            assert_sound(&report);
            assert_eq!(report.pattern, options.pattern.to_string());
            assert!(report.slots_per_id.is_none() && report.rejected_takes.is_none());
            let shown = report.to_string();
            assert!(!shown.contains("ring slots"), "{shown}");
        }
    }
}
