//! What one thread saw of a run: the time of every single-ID call (an HDR histogram) and
//! the IDs from each generator, kept as runs of consecutive IDs so that every ID can be
//! checked for duplicates and order. Every pattern records through the same [`Recorder`].

use hdrhistogram::Histogram;
use std::time::{Duration, Instant};
use uidgen::UidError;

/// A histogram of call times in nanoseconds: 3 significant figures, from 1 ns up to an
/// hour (a call that took longer is recorded as an hour, and shows in the maximum).
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("the bounds are valid")
}

/// The IDs one thread got from one generator.
#[derive(Default)]
pub(super) struct IdLog {
    ids: u64,
    pub(super) out_of_order: u64,
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
pub(super) struct Recorder {
    check: bool,
    pub(super) histogram: Histogram<u64>,
    /// One per generator, indexed as the run's generators.
    pub(super) logs: Vec<IdLog>,
    pub(super) errors: u64,
    pub(super) elapsed: Duration,
}

impl Recorder {
    pub(super) fn new(generators: usize, check: bool) -> Self {
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
    pub(super) fn call(&mut self, g: usize, take: impl FnOnce() -> Result<u64, UidError>) {
        let (nanos, uid) = timed(take);
        self.add(g, nanos, uid, true);
    }

    /// Records a call timed elsewhere; `ordered` as in [`IdLog::record`].
    #[inline]
    pub(super) fn add(&mut self, g: usize, nanos: u64, uid: Result<u64, UidError>, ordered: bool) {
        self.histogram.saturating_record(nanos);
        match uid {
            Ok(uid) => self.logs[g].record(uid, self.check, ordered),
            Err(_) => self.errors += 1,
        }
    }

    /// Records one untimed batch call to generator `g`.
    #[inline]
    pub(super) fn batch(
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

    pub(super) fn ids(&self) -> u64 {
        self.logs.iter().map(|log| log.ids).sum()
    }
}

/// Runs `take` and measures it in nanoseconds (at least 1).
#[inline]
pub(super) fn timed<T>(take: impl FnOnce() -> T) -> (u64, T) {
    let start = Instant::now();
    let out = take();
    let nanos = start.elapsed().as_nanos();
    (u64::try_from(nanos).unwrap_or(u64::MAX).max(1), out)
}

/// The cost of timing one call (two clock reads), measured here and reported beside the
/// call times, which include it.
pub(super) fn timer_overhead() -> u64 {
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

/// IDs covered by more than one run, over all logs: runs sorted by start, each overlap
/// with the furthest end so far counted.
pub(super) fn count_duplicates<'a>(logs: impl Iterator<Item = &'a IdLog>) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(ids: &[u64]) -> IdLog {
        let mut log = IdLog::default();
        for &id in ids {
            log.record(id, true, true);
        }
        log
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
}
