//! `uidgen bench`: throughput, the latency of every call (an HDR histogram), rejected
//! takes, ring slots per ID, borrowed time and an exact duplicate check, on the user's own
//! machine, for four ways of using generators ([`Pattern`]).
//!
//! Each pattern is one function that makes the calls; all of them record through the same
//! per-thread [`Recorder`], and one summary turns the recorders and the rings' counters
//! into the [`BenchReport`].

use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{BitsAllocator, CachedUidGenerator, IdSource, UidError, UidGenerator};

/// Calls between two looks at the stop flag and the progress counter.
const CALLS_PER_ROUND: u64 = 1024;

/// A histogram of call times in nanoseconds: 3 significant figures, from 1 ns up to an
/// hour (a call that took longer is recorded as an hour, and shows in the maximum).
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("the bounds are valid")
}

/// How a run uses its generators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// One generator, every thread taking IDs flat out.
    Single,
    /// This many generators, each thread calling them in turn (0, 1, …, N-1, 0, …) flat
    /// out.
    Alternate(usize),
    /// Short-lived threads, each taking one ID from one generator and exiting.
    Churn,
    /// Many threads, each taking one ID every interval.
    Light,
}

impl Pattern {
    /// The fewest generators `alternate` takes.
    pub const ALTERNATE_MIN: usize = 2;
    /// The most generators `alternate` takes.
    pub const ALTERNATE_MAX: usize = 64;

    /// How many generators the pattern uses.
    pub fn generators(self) -> usize {
        match self {
            Pattern::Alternate(n) => n,
            Pattern::Single | Pattern::Churn | Pattern::Light => 1,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Single => f.write_str("single"),
            Pattern::Alternate(n) => write!(f, "alternate:{n}"),
            Pattern::Churn => f.write_str("churn"),
            Pattern::Light => f.write_str("light"),
        }
    }
}

impl FromStr for Pattern {
    type Err = String;

    /// `single`, `alternate:N` (N from 2 to 64), `churn` or `light`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (min, max) = (Pattern::ALTERNATE_MIN, Pattern::ALTERNATE_MAX);
        match text.split_once(':') {
            None => match text {
                "single" => Ok(Pattern::Single),
                "churn" => Ok(Pattern::Churn),
                "light" => Ok(Pattern::Light),
                "alternate" => Err(format!(
                    "alternate needs a count of generators: alternate:N with N from {min} to {max}"
                )),
                _ => Err(format!(
                    "expected single, alternate:N (N from {min} to {max}), churn or light"
                )),
            },
            Some(("alternate", count)) => match count.trim().parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(Pattern::Alternate(n)),
                _ => Err(format!(
                    "alternate:N takes N from {min} to {max} generators, got {count:?}"
                )),
            },
            Some(_) => Err(format!(
                "expected single, alternate:N (N from {min} to {max}), churn or light; only \
                 alternate takes a count"
            )),
        }
    }
}

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    /// `single`, `alternate:N`, `churn` or `light`.
    pub pattern: String,
    pub generator: String,
    /// Segment mode: the store the ranges come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Generators used (N for `alternate:N`, else 1), and their worker IDs.
    pub generators: usize,
    pub worker_ids: Vec<u64>,
    /// Threads taking IDs at once (for churn: the threads of one wave).
    pub threads: usize,
    pub batch: usize,
    pub seconds: f64,
    pub total_ids: u64,
    pub ids_per_sec: f64,
    /// Flat-out patterns only (empty for churn and light).
    pub ids_per_sec_per_thread: Vec<f64>,
    /// Churn: the short-lived threads that ran, one ID each.
    pub threads_run: Option<u64>,
    /// Light: each thread's time between two calls.
    pub interval_ms: Option<u64>,
    /// Light: the IDs per second offered (threads × 1000 / interval) as a share of the
    /// layout's rate ((max_sequence + 1) IDs per tick); 1.0 is the whole of it.
    pub offered_share_of_layout: Option<f64>,
    /// The time of every call, reading the clock included (single-ID runs only).
    pub latency_ns: Option<Percentiles>,
    /// What reading the clock twice costs here: part of every call time above.
    pub timer_overhead_ns: u64,
    pub errors: u64,
    /// Calls that found a ring empty during the run, all generators together.
    pub rejected_takes: Option<u64>,
    /// The unmeasured run before it (single and alternate), and its rejected takes: the
    /// padder starts with a small fill and grows it to the load.
    pub warmup_secs: f64,
    pub warmup_rejected_takes: Option<u64>,
    /// Borrowed time at the start and at the end (the largest over the generators).
    pub time_ahead_start_secs: Option<f64>,
    pub time_ahead_secs: Option<f64>,
    /// How much `time_ahead` grew per second of the run.
    pub time_ahead_growth_per_sec: Option<f64>,
    /// The time the IDs received fill at `max_sequence + 1` IDs a tick, per generator:
    /// time ahead growing by more than this means ticks were used up without IDs given.
    pub ids_fill_secs: Option<f64>,
    /// Ring positions claimed during the run (IDs dropped as stale included), all
    /// generators together, per ID received (1.0: none wasted).
    pub slots_per_id: Option<f64>,
    /// IDs the padders dropped unissued during the run because their tick had passed.
    pub discarded_stale: Option<u64>,
    /// IDs handed out more than once (all threads together), or `None` without a check.
    pub duplicates: Option<u64>,
    /// IDs not greater than the previous ID the same thread got from the same generator.
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

#[derive(Clone, Copy)]
pub struct BenchOptions {
    pub pattern: Pattern,
    /// Threads at once; for churn, the threads of one wave.
    pub threads: usize,
    pub duration: Duration,
    pub batch: usize,
    pub check: bool,
    /// Churn: the most short-lived threads to run.
    pub count: u64,
    /// Single and alternate: an unmeasured run first, this long.
    pub warmup: Duration,
    /// Light: each thread's time between two calls.
    pub interval: Duration,
}

/// The generators of a run: each as a `UidGenerator` for the calls and, for cached ones,
/// as a ring for its counters.
pub struct Generators<'a> {
    calls: Vec<&'a dyn IdSource>,
    rings: Vec<&'a CachedUidGenerator>,
    /// The layout of time-based generators (segment IDs have none).
    bits: Option<BitsAllocator>,
    worker_ids: Vec<u64>,
}

impl<'a> Generators<'a> {
    pub fn cached(all: &'a [CachedUidGenerator]) -> Self {
        Self {
            rings: all.iter().collect(),
            ..Self::without_ring(all)
        }
    }

    /// Time-based generators without a ring (no slots per ID, time ahead or rejected takes).
    pub fn without_ring<G: UidGenerator>(all: &'a [G]) -> Self {
        Self {
            calls: all.iter().map(|g| g as &dyn IdSource).collect(),
            rings: Vec::new(),
            bits: all.first().map(|g| *g.allocator()),
            worker_ids: all.iter().map(|g| g.worker_id()).collect(),
        }
    }

    /// Sources with no layout, no worker IDs and no ring: segment generators, or the
    /// baseline counters.
    pub fn without_layout<T: IdSource>(all: &'a [T]) -> Self {
        Self {
            calls: all.iter().map(|g| g as &dyn IdSource).collect(),
            rings: Vec::new(),
            bits: None,
            worker_ids: Vec::new(),
        }
    }
}

/// The baseline: one `AtomicU64::fetch_add` shared by the threads, timed and checked by
/// the same harness, so a generator's slowest call can be read against what the machine
/// did to a loop that waits on nothing.
#[derive(Default)]
pub struct SharedCounter(AtomicU64);

impl SharedCounter {
    /// A counter whose first ID is `last + 1`.
    pub fn starting_at(last: u64) -> Self {
        Self(AtomicU64::new(last))
    }
}

impl IdSource for SharedCounter {
    #[inline]
    fn next_id(&self) -> Result<u64, UidError> {
        Ok(self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
    #[inline]
    fn try_next_id(&self) -> Result<u64, UidError> {
        self.next_id()
    }
    fn next_ids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        let first = self.0.fetch_add(out.len() as u64, Ordering::Relaxed) + 1;
        for (i, out) in out.iter_mut().enumerate() {
            *out = first + i as u64;
        }
        Ok(out.len())
    }
}

/// The IDs one thread got from one generator.
#[derive(Default)]
struct IdLog {
    ids: u64,
    out_of_order: u64,
    /// Runs of consecutive IDs `(first, count)`, in the order taken.
    runs: Vec<(u64, u64)>,
}

impl IdLog {
    /// Adds an ID; `ordered`: compare it with the previous one (false when they came from
    /// different threads).
    #[inline]
    fn record(&mut self, uid: u64, check: bool, ordered: bool) {
        self.ids += 1;
        if let Some((first, count)) = self.runs.last_mut() {
            let next = *first + *count;
            if uid == next {
                *count += 1;
                return;
            }
            if ordered && uid < next {
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

/// What one thread saw: the time of every single-ID call, and the IDs from each
/// generator. Every pattern records through this.
struct Recorder {
    check: bool,
    histogram: Histogram<u64>,
    /// One per generator, indexed as the run's generators.
    logs: Vec<IdLog>,
    errors: u64,
    elapsed: Duration,
}

impl Recorder {
    fn new(generators: usize, check: bool) -> Self {
        Self {
            check,
            histogram: new_histogram(),
            logs: (0..generators).map(|_| IdLog::default()).collect(),
            errors: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// Times one call to generator `g` and records it.
    #[inline]
    fn call(&mut self, g: usize, take: impl FnOnce() -> Result<u64, UidError>) {
        let (nanos, uid) = timed(take);
        self.add(g, nanos, uid, true);
    }

    /// Records a call timed elsewhere; `ordered` as in [`IdLog::record`].
    #[inline]
    fn add(&mut self, g: usize, nanos: u64, uid: Result<u64, UidError>, ordered: bool) {
        self.histogram.saturating_record(nanos);
        match uid {
            Ok(uid) => self.logs[g].record(uid, self.check, ordered),
            Err(_) => self.errors += 1,
        }
    }

    /// Records one untimed batch call to generator `g`.
    #[inline]
    fn batch(
        &mut self,
        g: usize,
        out: &mut [u64],
        take: impl FnOnce(&mut [u64]) -> Result<usize, UidError>,
    ) {
        match take(out) {
            Ok(n) => {
                for &uid in &out[..n] {
                    self.logs[g].record(uid, self.check, true);
                }
            }
            Err(_) => self.errors += 1,
        }
    }

    fn ids(&self) -> u64 {
        self.logs.iter().map(|log| log.ids).sum()
    }
}

/// Runs `take` and measures it in nanoseconds (at least 1).
#[inline]
fn timed<T>(take: impl FnOnce() -> T) -> (u64, T) {
    let start = Instant::now();
    let out = take();
    let nanos = start.elapsed().as_nanos();
    (u64::try_from(nanos).unwrap_or(u64::MAX).max(1), out)
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

/// The rings' counters, summed over the generators (time ahead: the largest).
#[derive(Debug, Clone, Copy, Default)]
struct RingCounters {
    claimed: u64,
    discarded_stale: u64,
    rejected_takes: u64,
    time_ahead_secs: f64,
}

impl RingCounters {
    /// `None` for generators without a ring.
    fn read(rings: &[&CachedUidGenerator]) -> Option<Self> {
        (!rings.is_empty()).then(|| {
            rings.iter().fold(Self::default(), |sum, ring| {
                let stats = ring.stats();
                Self {
                    claimed: sum.claimed + stats.claimed,
                    discarded_stale: sum.discarded_stale + stats.discarded_stale,
                    rejected_takes: sum.rejected_takes + stats.rejected_takes,
                    time_ahead_secs: sum.time_ahead_secs.max(ring.time_ahead().as_secs_f64()),
                }
            })
        })
    }
}

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

/// IDs per second a layout makes for one worker ID at full ticks.
fn layout_ids_per_sec(bits: &BitsAllocator) -> f64 {
    (bits.max_sequence() as f64 + 1.0) * 1000.0 / bits.unit().millis() as f64
}

/// The report of a run: the recorders' histograms and IDs merged, and the rings' counters
/// before and after.
fn summarize(
    name: &str,
    generators: &Generators<'_>,
    options: &BenchOptions,
    recorders: &[Recorder],
    threads_run: Option<u64>,
    overhead: u64,
    rings: Option<(RingCounters, RingCounters)>,
) -> BenchReport {
    let pattern = options.pattern;
    let bits = generators.bits;
    let seconds = recorders
        .iter()
        .map(|r| r.elapsed.as_secs_f64())
        .fold(0.0, f64::max);
    let total_ids: u64 = recorders.iter().map(Recorder::ids).sum();
    let mut latencies: Option<Histogram<u64>> = None;
    for histogram in recorders.iter().map(|r| &r.histogram) {
        match &mut latencies {
            // Same bounds on every thread, so adding cannot fail.
            Some(all) => all.add(histogram).expect("histograms of equal bounds"),
            None => latencies = Some(histogram.clone()),
        }
    }
    let flat_out = matches!(pattern, Pattern::Single | Pattern::Alternate(_));
    BenchReport {
        pattern: pattern.to_string(),
        generator: name.to_owned(),
        store: None,
        generators: generators.calls.len(),
        worker_ids: generators.worker_ids.clone(),
        threads: options.threads,
        batch: options.batch.max(1),
        seconds,
        total_ids,
        ids_per_sec: total_ids as f64 / seconds,
        ids_per_sec_per_thread: if flat_out {
            recorders
                .iter()
                .map(|r| r.ids() as f64 / r.elapsed.as_secs_f64())
                .collect()
        } else {
            Vec::new()
        },
        threads_run,
        interval_ms: (pattern == Pattern::Light).then_some(options.interval.as_millis() as u64),
        offered_share_of_layout: bits.filter(|_| pattern == Pattern::Light).map(|bits| {
            options.threads as f64 / options.interval.as_secs_f64() / layout_ids_per_sec(&bits)
        }),
        latency_ns: latencies.filter(|h| !h.is_empty()).map(|h| Percentiles {
            p50: h.value_at_quantile(0.50),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
            calls: h.len(),
        }),
        timer_overhead_ns: overhead,
        errors: recorders.iter().map(|r| r.errors).sum(),
        rejected_takes: rings.map(|(b, a)| a.rejected_takes - b.rejected_takes),
        warmup_secs: 0.0,
        warmup_rejected_takes: None,
        time_ahead_start_secs: rings.map(|(b, _)| b.time_ahead_secs),
        time_ahead_secs: rings.map(|(_, a)| a.time_ahead_secs),
        time_ahead_growth_per_sec: rings
            .map(|(b, a)| (a.time_ahead_secs - b.time_ahead_secs) / seconds),
        ids_fill_secs: rings.and(bits).map(|bits| {
            total_ids as f64 / generators.calls.len() as f64 / layout_ids_per_sec(&bits)
        }),
        slots_per_id: rings.map(|(b, a)| (a.claimed - b.claimed) as f64 / total_ids.max(1) as f64),
        discarded_stale: rings.map(|(b, a)| a.discarded_stale - b.discarded_stale),
        duplicates: options
            .check
            .then(|| count_duplicates(recorders.iter().flat_map(|r| &r.logs))),
        out_of_order: recorders
            .iter()
            .flat_map(|r| &r.logs)
            .map(|log| log.out_of_order)
            .sum(),
    }
}

/// IDs covered by more than one run, over all logs: runs sorted by start, each overlap
/// with the furthest end so far counted.
fn count_duplicates<'a>(logs: impl Iterator<Item = &'a IdLog>) -> u64 {
    let mut runs: Vec<(u64, u64)> = logs.flat_map(|log| log.runs.iter().copied()).collect();
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

/// IDs per second for people: 12.3M, 45.6K, 789.
fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.1}M", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.1}K", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

/// Seconds for people: whole ones from 100 on, else to the millisecond.
fn secs(seconds: f64) -> String {
    if seconds.abs() >= 100.0 {
        format!("{seconds:.0}")
    } else {
        format!("{seconds:.3}")
    }
}

impl BenchReport {
    /// The pattern line's words after the pattern's name.
    fn pattern_words(&self) -> String {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        match (self.threads_run, self.interval_ms) {
            (Some(run), _) => format!(
                "{run} short-lived thread{} of one ID each, {} at a time",
                s(run),
                self.threads
            ),
            (None, Some(interval)) if self.offered_share_of_layout.is_none() => {
                let offered = self.threads as f64 * 1000.0 / interval as f64;
                format!(
                    "{} thread{}, one ID each every {interval} ms: {} IDs/s offered",
                    self.threads,
                    s(self.threads as u64),
                    rate(offered),
                )
            }
            (None, Some(interval)) => {
                let offered = self.threads as f64 * 1000.0 / interval as f64;
                let share = self.offered_share_of_layout.unwrap_or(0.0);
                // Three significant figures, however small.
                let decimals = (2.0 - (100.0 * share).log10().floor()).clamp(0.0, 9.0) as usize;
                format!(
                    "{} thread{}, one ID each every {interval} ms: {} IDs/s offered, \
                     {:.decimals$}% of the layout's {} IDs/s",
                    self.threads,
                    s(self.threads as u64),
                    rate(offered),
                    100.0 * share,
                    rate(offered / share),
                )
            }
            (None, None) if self.generators > 1 && self.worker_ids.is_empty() => format!(
                "{} generators (tags), each thread calling them in turn, flat out",
                self.generators
            ),
            (None, None) if self.generators > 1 => {
                let ids = &self.worker_ids;
                let consecutive = ids.windows(2).all(|w| w[1] == w[0] + 1);
                let named = match (ids.first(), ids.last()) {
                    (Some(first), Some(last)) if consecutive => format!("{first} to {last}"),
                    _ => ids
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                format!(
                    "{} generators with worker IDs {named}, each thread calling them in turn, \
                     flat out",
                    self.generators
                )
            }
            (None, None) => "one generator, every thread flat out".to_owned(),
        }
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "generator      {} ({} thread{}, batch {})",
            self.generator,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.batch
        )?;
        if let Some(store) = &self.store {
            writeln!(f, "store          {store}")?;
        }
        writeln!(
            f,
            "pattern        {} ({})",
            self.pattern,
            self.pattern_words()
        )?;
        write!(
            f,
            "throughput     {} IDs/s ({} IDs in {:.3} s)",
            rate(self.ids_per_sec),
            self.total_ids,
            self.seconds,
        )?;
        if !self.ids_per_sec_per_thread.is_empty() {
            write!(
                f,
                "; per thread: {}",
                self.ids_per_sec_per_thread
                    .iter()
                    .map(|&r| rate(r))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        writeln!(f)?;
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
            write!(
                f,
                "rejected takes {rejected} (calls that found the ring empty and waited)"
            )?;
            match self.warmup_rejected_takes {
                Some(warmup) => {
                    writeln!(f, "; {warmup} in the {} s warm-up before", self.warmup_secs)?
                }
                None => writeln!(f)?,
            }
        }
        if let (Some(start), Some(end), Some(growth), Some(fill)) = (
            self.time_ahead_start_secs,
            self.time_ahead_secs,
            self.time_ahead_growth_per_sec,
            self.ids_fill_secs,
        ) {
            writeln!(
                f,
                "time ahead     {} s at the start, {} s at the end (borrowed future ticks; {} s \
                 per second of the run; the IDs received fill {} s of ticks)",
                secs(start),
                secs(end),
                if growth < 0.0 {
                    secs(growth)
                } else {
                    format!("+{}", secs(growth))
                },
                secs(fill)
            )?;
        }
        if let (Some(slots), Some(stale)) = (self.slots_per_id, self.discarded_stale) {
            let whose = if self.generators == 1 {
                String::new()
            } else {
                format!(", all {} generators together", self.generators)
            };
            writeln!(
                f,
                "ring slots     {slots:.3} per ID received (positions claimed{whose}; \
                 {stale} of them dropped as stale)"
            )?;
        }
        writeln!(f, "errors         {}", self.errors)?;
        match self.duplicates {
            Some(d) => writeln!(f, "duplicates     {d} (every ID checked)")?,
            None => writeln!(f, "duplicates     not checked (--no-check)")?,
        }
        write!(
            f,
            "out of order   {} (IDs not above the previous one the thread got from that \
             generator)",
            self.out_of_order
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uidgen::{DefaultUidGenerator, ManualClock};

    fn log_of(ids: &[u64]) -> IdLog {
        let mut log = IdLog::default();
        for &id in ids {
            log.record(id, true, true);
        }
        log
    }

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
    fn duplicates_across_threads_are_counted_exactly() {
        let a = log_of(&[1, 2, 3, 10, 11]);
        let b = log_of(&[4, 5, 11, 12]);
        assert_eq!(a.runs, [(1, 3), (10, 2)]);
        assert_eq!(count_duplicates([a, b].iter()), 1);
        let c = log_of(&[1, 2, 3]);
        let d = log_of(&[2, 3, 4]);
        assert_eq!(count_duplicates([c, d].iter()), 2);
        assert_eq!(count_duplicates([log_of(&[5, 6]), log_of(&[7])].iter()), 0);
    }

    #[test]
    fn a_thread_going_backwards_is_out_of_order_and_a_duplicate_if_repeated() {
        let log = log_of(&[5, 6, 6, 4]);
        assert_eq!(log.out_of_order, 2);
        assert_eq!(count_duplicates([log].iter()), 1);
        // IDs from different threads are not compared.
        let mut log = IdLog::default();
        for id in [5, 3, 4] {
            log.record(id, true, false);
        }
        assert_eq!(log.out_of_order, 0);
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
