//! `uidgen bench`: throughput, the latency of every call (an HDR histogram), rejected
//! takes, ring slots per ID, borrowed time and an exact duplicate check, on the user's own
//! machine.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{CachedUidGenerator, UidError, UidGenerator};

/// Calls between two looks at the stop flag and the progress counter.
const CALLS_PER_ROUND: u64 = 1024;

/// A histogram of call times in nanoseconds: 3 significant figures, from 1 ns up to an
/// hour (a call that took longer is recorded as an hour, and shows in the maximum).
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("the bounds are valid")
}

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub generator: String,
    pub threads: usize,
    pub batch: usize,
    pub seconds: f64,
    pub total_ids: u64,
    pub ids_per_sec: f64,
    pub ids_per_sec_per_thread: Vec<f64>,
    /// The time of every call, reading the clock included (single-ID runs only).
    pub latency_ns: Option<Percentiles>,
    /// What reading the clock twice costs here: part of every call time above.
    pub timer_overhead_ns: u64,
    pub errors: u64,
    pub rejected_takes: Option<u64>,
    pub time_ahead_secs: Option<f64>,
    /// How much `time_ahead` grew per second of the run.
    pub time_ahead_growth_per_sec: Option<f64>,
    /// Ring positions claimed during the run per ID received, IDs dropped as stale
    /// included: they used up slots too (1.0: none wasted).
    pub slots_per_id: Option<f64>,
    /// IDs the padder dropped unissued during the run because their tick had passed.
    pub discarded_stale: Option<u64>,
    /// IDs handed out more than once (all threads together), or `None` without a check.
    pub duplicates: Option<u64>,
    /// IDs not greater than the previous ID on the same thread.
    pub out_of_order: u64,
}

#[derive(Debug, Serialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
    /// Calls recorded: all of them.
    pub calls: u64,
}

pub struct BenchOptions {
    pub threads: usize,
    pub duration: Duration,
    pub batch: usize,
    pub check: bool,
}

/// What one thread saw.
#[derive(Default)]
struct ThreadResult {
    ids: u64,
    errors: u64,
    out_of_order: u64,
    /// Runs of consecutive IDs `(first, count)`, in the order taken.
    runs: Vec<(u64, u64)>,
    latencies: Option<Histogram<u64>>,
    elapsed: Duration,
}

impl ThreadResult {
    #[inline]
    fn record(&mut self, uid: u64, check: bool) {
        self.ids += 1;
        if let Some((first, count)) = self.runs.last_mut() {
            let next = *first + *count;
            if uid == next {
                *count += 1;
                return;
            }
            if uid < next {
                self.out_of_order += 1;
            }
            if !check {
                // Without the check only the last run is kept, for the order check.
                (*first, *count) = (uid, 1);
                return;
            }
        }
        self.runs.push((uid, 1));
    }
}

/// The cost of timing one call (two clock reads), measured here and reported beside the
/// call times, which include it.
fn timer_overhead() -> u64 {
    let mut samples: Vec<u64> = (0..10_001)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(());
            t.elapsed().as_nanos() as u64
        })
        .collect();
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Runs the generator flat out on `threads` threads for `duration`.
pub fn run(
    name: &str,
    generator: &dyn UidGenerator,
    cached: Option<&CachedUidGenerator>,
    options: &BenchOptions,
    progress: &indicatif::ProgressBar,
) -> BenchReport {
    let overhead = timer_overhead();
    let (ahead_before, claimed_before, stale_before) = cached.map_or((0.0, 0, 0), |c| {
        let stats = c.stats();
        (
            c.time_ahead().as_secs_f64(),
            stats.claimed,
            stats.discarded_stale,
        )
    });
    let stop = AtomicBool::new(false);
    let taken = AtomicU64::new(0);
    let ready = Barrier::new(options.threads + 1);
    let results: Vec<ThreadResult> = thread::scope(|s| {
        let workers: Vec<_> = (0..options.threads)
            .map(|_| {
                s.spawn(|| {
                    let mut result = ThreadResult::default();
                    let mut batch = vec![0u64; options.batch.max(1)];
                    let mut histogram = new_histogram();
                    ready.wait();
                    let start = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..CALLS_PER_ROUND {
                            match (cached, options.batch) {
                                (Some(cached), batch_len) if batch_len > 1 => {
                                    match cached.next_uids(&mut batch) {
                                        Ok(n) => {
                                            for &uid in &batch[..n] {
                                                result.record(uid, options.check);
                                            }
                                        }
                                        Err(_) => result.errors += 1,
                                    }
                                }
                                _ => {
                                    let t = Instant::now();
                                    let uid: Result<u64, UidError> = generator.next_uid();
                                    let nanos = t.elapsed().as_nanos();
                                    histogram.saturating_record(
                                        u64::try_from(nanos).unwrap_or(u64::MAX).max(1),
                                    );
                                    match uid {
                                        Ok(uid) => result.record(uid, options.check),
                                        Err(_) => result.errors += 1,
                                    }
                                }
                            }
                        }
                        taken.fetch_add(
                            CALLS_PER_ROUND * options.batch.max(1) as u64,
                            Ordering::Relaxed,
                        );
                    }
                    result.elapsed = start.elapsed();
                    result.latencies = (!histogram.is_empty()).then_some(histogram);
                    result
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        while start.elapsed() < options.duration {
            thread::sleep(Duration::from_millis(100));
            progress.set_position(start.elapsed().as_millis() as u64);
            progress.set_message(format!("{} IDs", taken.load(Ordering::Relaxed)));
        }
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    progress.finish_and_clear();

    let seconds = results
        .iter()
        .map(|r| r.elapsed.as_secs_f64())
        .fold(0.0, f64::max);
    let total_ids: u64 = results.iter().map(|r| r.ids).sum();
    let mut latencies: Option<Histogram<u64>> = None;
    for histogram in results.iter().filter_map(|r| r.latencies.as_ref()) {
        match &mut latencies {
            // Same bounds on every thread, so adding cannot fail.
            Some(all) => all.add(histogram).expect("histograms of equal bounds"),
            None => latencies = Some(histogram.clone()),
        }
    }
    BenchReport {
        generator: name.to_owned(),
        threads: options.threads,
        batch: options.batch.max(1),
        seconds,
        total_ids,
        ids_per_sec: total_ids as f64 / seconds,
        ids_per_sec_per_thread: results
            .iter()
            .map(|r| r.ids as f64 / r.elapsed.as_secs_f64())
            .collect(),
        latency_ns: latencies.map(|h| Percentiles {
            p50: h.value_at_quantile(0.50),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
            calls: h.len(),
        }),
        timer_overhead_ns: overhead,
        errors: results.iter().map(|r| r.errors).sum(),
        rejected_takes: cached.map(|c| c.stats().rejected_takes),
        time_ahead_secs: cached.map(|c| c.time_ahead().as_secs_f64()),
        time_ahead_growth_per_sec: cached
            .map(|c| (c.time_ahead().as_secs_f64() - ahead_before) / seconds),
        slots_per_id: cached
            .map(|c| (c.stats().claimed - claimed_before) as f64 / total_ids.max(1) as f64),
        discarded_stale: cached.map(|c| c.stats().discarded_stale - stale_before),
        duplicates: options.check.then(|| count_duplicates(&results)),
        out_of_order: results.iter().map(|r| r.out_of_order).sum(),
    }
}

/// IDs covered by more than one run, over all threads: runs sorted by start, each
/// overlap with the furthest end so far counted.
fn count_duplicates(results: &[ThreadResult]) -> u64 {
    let mut runs: Vec<(u64, u64)> = results
        .iter()
        .flat_map(|r| r.runs.iter().copied())
        .collect();
    runs.sort_unstable();
    let mut duplicates = 0;
    let mut end = 0u64; // one past the largest ID covered so far
    for (first, count) in runs {
        let run_end = first + count;
        if first < end {
            duplicates += end.min(run_end) - first;
        }
        end = end.max(run_end);
    }
    duplicates
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "generator      {} ({} thread{}, batch {})",
            self.generator,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.batch
        )?;
        writeln!(
            f,
            "throughput     {:.1}M IDs/s ({} IDs in {:.2} s); per thread: {}",
            self.ids_per_sec / 1e6,
            self.total_ids,
            self.seconds,
            self.ids_per_sec_per_thread
                .iter()
                .map(|r| format!("{:.1}M", r / 1e6))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        match &self.latency_ns {
            Some(p) => writeln!(
                f,
                "latency        p50 {} ns, p99 {} ns, p99.9 {} ns, p99.99 {} ns, max {} ns \
                 (every one of {} calls; reading the clock costs {} ns of each)",
                p.p50, p.p99, p.p999, p.p9999, p.max, p.calls, self.timer_overhead_ns
            )?,
            None => writeln!(f, "latency        not recorded for batches")?,
        }
        if let Some(rejected) = self.rejected_takes {
            writeln!(
                f,
                "rejected takes {rejected} (calls that found the ring empty and waited)"
            )?;
        }
        if let (Some(ahead), Some(growth)) = (self.time_ahead_secs, self.time_ahead_growth_per_sec)
        {
            writeln!(
                f,
                "time ahead     {ahead:.0} s at the end (borrowed future ticks; {growth:+.1} s per second of the run)"
            )?;
        }
        if let (Some(slots), Some(stale)) = (self.slots_per_id, self.discarded_stale) {
            writeln!(
                f,
                "ring slots     {slots:.3} per ID received (positions claimed; {stale} of them \
                 dropped as stale)"
            )?;
        }
        writeln!(f, "errors         {}", self.errors)?;
        match self.duplicates {
            Some(d) => writeln!(f, "duplicates     {d} (every ID checked)")?,
            None => writeln!(f, "duplicates     not checked (--no-check)")?,
        }
        write!(
            f,
            "out of order   {} (IDs not above their thread's previous ID)",
            self.out_of_order
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_with(ids: &[u64]) -> ThreadResult {
        let mut r = ThreadResult::default();
        for &id in ids {
            r.record(id, true);
        }
        r
    }

    #[test]
    fn duplicates_across_threads_are_counted_exactly() {
        let a = thread_with(&[1, 2, 3, 10, 11]);
        let b = thread_with(&[4, 5, 11, 12]);
        assert_eq!(a.runs, [(1, 3), (10, 2)]);
        assert_eq!(count_duplicates(&[a, b]), 1);
        let c = thread_with(&[1, 2, 3]);
        let d = thread_with(&[2, 3, 4]);
        assert_eq!(count_duplicates(&[c, d]), 2);
        assert_eq!(
            count_duplicates(&[thread_with(&[5, 6]), thread_with(&[7])]),
            0
        );
    }

    #[test]
    fn every_call_is_timed_and_a_cached_generator_uses_one_slot_per_id() {
        let generator = CachedUidGenerator::builder().worker_id(3).build().unwrap();
        let options = BenchOptions {
            threads: 2,
            duration: Duration::from_millis(300),
            batch: 1,
            check: true,
        };
        let progress = indicatif::ProgressBar::hidden();
        let report = run("cached", &generator, Some(&generator), &options, &progress);
        let latency = report
            .latency_ns
            .as_ref()
            .expect("single-ID calls are timed");
        assert_eq!(
            latency.calls, report.total_ids,
            "every call is in the histogram"
        );
        assert!(report.total_ids > 0);
        assert!(latency.p50 <= latency.p99 && latency.p9999 <= latency.max && latency.p50 > 0);
        let slots = report.slots_per_id.unwrap();
        assert!((0.999..=1.001).contains(&slots), "{slots} slots per ID");
        assert_eq!(report.duplicates, Some(0));
        assert!(report.time_ahead_growth_per_sec.is_some());
        let shown = report.to_string();
        assert!(shown.contains("p99.99") && shown.contains("max"), "{shown}");
    }

    #[test]
    fn a_thread_going_backwards_is_out_of_order_and_a_duplicate_if_repeated() {
        let r = thread_with(&[5, 6, 6, 4]);
        assert_eq!(r.out_of_order, 2);
        assert_eq!(count_duplicates(&[r]), 1);
    }
}
