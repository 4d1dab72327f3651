//! The report of a run: the recorders' histograms and IDs merged, the rings' counters
//! before and after, as JSON ([`BenchReport`]'s fields) or as text for people.

use super::generators::{Generators, RingCounters};
use super::options::BenchOptions;
use super::recorder::{count_duplicates, Recorder};
use crate::pattern::Pattern;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt;
use uidgen::BitsAllocator;

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

/// IDs per second a layout makes for one worker ID at full ticks.
fn layout_ids_per_sec(bits: &BitsAllocator) -> f64 {
    (bits.max_sequence() as f64 + 1.0) * 1000.0 / bits.unit().millis() as f64
}

/// The report of a run: the recorders' histograms and IDs merged, and the rings' counters
/// before and after.
pub(super) fn summarize(
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
