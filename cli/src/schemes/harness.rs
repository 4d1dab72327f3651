//! Drives any scheme the same way: a run at each thread count (every call timed, every
//! ID kept and checked unique), the order of one thread's IDs, and a restart between two
//! short runs with the IDs after it looked up among those before.

use super::result::{Latency, Order, Restart, SchemeResult, ThreadRun};
use super::{Client, Entry, Error, Scheme};
use hdrhistogram::Histogram;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// How to run a scheme.
pub(crate) struct Plan {
    pub(crate) threads: Vec<usize>,
    /// Each thread count's run.
    pub(crate) duration: Duration,
    /// Each of the two runs around the restart.
    pub(crate) restart_duration: Duration,
    /// A shell command that restarts the scheme's store and returns once it answers;
    /// `None`: an in-process scheme restarts its generator, a store's is not measured.
    pub(crate) restart_with: Option<String>,
    pub(crate) stores: Vec<String>,
}

/// Keys of IDs a run keeps (16 bytes each): past this, a thread stops early rather than
/// take the machine's memory (the report's IDs/s is over the time it ran).
const MAX_KEYS_PER_RUN: usize = 30_000_000;

/// Runs `entry` as `plan` says; `open` opens it (again after a restart). The result's
/// runs hold each run's duplicates: the caller fails the run on any.
pub(crate) fn measure(
    entry: &Entry,
    plan: &Plan,
    open: &dyn Fn() -> Result<Box<dyn Scheme>, Error>,
) -> Result<SchemeResult, Error> {
    let scheme = open()?;
    let mut runs = Vec::new();
    let mut order = Order {
        pairs: 0,
        rising: 0,
    };
    // Every ID handed out so far, sorted: each run's IDs must be new to it (a duplicate
    // across runs is one too), and after the restart a repeat of any of them counts.
    let mut history: Vec<u128> = Vec::new();
    for &threads in &plan.threads {
        let (mut run, run_order, keys) = run(&*scheme, threads, plan.duration)?;
        if threads == 1 || order.pairs == 0 {
            order = run_order;
        }
        run.duplicates += found_in(&history, &keys);
        runs.push(run);
        merge_into(&mut history, keys);
    }
    let restart = restart(entry, plan, scheme, open, history)?;
    Ok(SchemeResult {
        scheme: entry.name.to_owned(),
        title: entry.title.to_owned(),
        needs: entry.needs.words().to_owned(),
        stores: plan.stores.iter().map(|s| super::describe(s)).collect(),
        bytes_per_id: entry.bytes_per_id,
        ids_per_call: entry.ids_per_call,
        runs,
        order,
        restart,
    })
}

/// One run: `threads` threads, each with a client of its own, for `duration`; the run's
/// figures (its duplicates those within it), the order of the first thread's keys, and
/// all the keys, sorted.
fn run(
    scheme: &dyn Scheme,
    threads: usize,
    duration: Duration,
) -> Result<(ThreadRun, Order, Vec<u128>), Error> {
    let clients = (0..threads)
        .map(|_| scheme.client())
        .collect::<Result<Vec<_>, _>>()?;
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    let per_thread_cap = MAX_KEYS_PER_RUN / threads;
    let (seen, elapsed) = thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .map(|client| s.spawn(|| drive(client, &stop, &start, per_thread_cap)))
            .collect();
        start.wait();
        let began = Instant::now();
        thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<Result<Seen, Error>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "a client's thread panicked".to_owned())
            })
            .collect();
        (seen, began.elapsed())
    });
    let seen = seen.into_iter().collect::<Result<Vec<Seen>, Error>>()?;
    let mut histogram = new_histogram();
    let (mut calls, mut errors, mut ids) = (0, 0, 0u64);
    let mut first_error = None;
    for s in &seen {
        let _ = histogram.add(&s.histogram);
        calls += s.calls;
        errors += s.errors;
        ids += s.keys.len() as u64;
        if first_error.is_none() {
            first_error.clone_from(&s.first_error);
        }
    }
    if ids == 0 {
        return Err(first_error.unwrap_or_else(|| "no ID in the whole run".to_owned()));
    }
    // A thread that hit the key cap stopped early: the rate is over its own time.
    let seconds = seen
        .iter()
        .map(|s| s.elapsed.unwrap_or(elapsed).as_secs_f64())
        .fold(0.0, f64::max);
    let order = order_of(&seen[0].keys);
    let mut keys: Vec<u128> = Vec::with_capacity(ids as usize);
    for s in seen {
        keys.extend(s.keys);
    }
    keys.sort_unstable();
    let duplicates = keys.windows(2).filter(|w| w[0] == w[1]).count() as u64;
    Ok((
        ThreadRun {
            threads,
            ids,
            calls,
            errors,
            duplicates,
            seconds,
            ids_per_sec: ids as f64 / seconds,
            latency: latency(&histogram),
        },
        order,
        keys,
    ))
}

/// What one thread saw.
struct Seen {
    keys: Vec<u128>,
    histogram: Histogram<u64>,
    calls: u64,
    errors: u64,
    first_error: Option<String>,
    /// Set when the thread stopped early at its key cap.
    elapsed: Option<Duration>,
}

impl Seen {
    fn new() -> Self {
        Self {
            keys: Vec::new(),
            histogram: new_histogram(),
            calls: 0,
            errors: 0,
            first_error: None,
            elapsed: None,
        }
    }
}

/// Calls `client` flat out until `stop`, timing every call.
fn drive(mut client: Box<dyn Client>, stop: &AtomicBool, start: &Barrier, cap: usize) -> Seen {
    let mut seen = Seen::new();
    start.wait();
    let began = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let result = client.next(&mut seen.keys);
        let nanos = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        seen.histogram.saturating_record(nanos.max(1));
        seen.calls += 1;
        if let Err(e) = result {
            seen.errors += 1;
            seen.first_error.get_or_insert(e);
            // A store that refuses is not asked again at full speed.
            thread::sleep(Duration::from_millis(10));
        }
        if seen.keys.len() >= cap {
            seen.elapsed = Some(began.elapsed());
            break;
        }
    }
    seen
}

/// A histogram of call times in nanoseconds: 3 significant figures, 1 ns to an hour.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("the bounds are valid")
}

/// Fractions of calls the latency chart draws, more of them in the tail.
const CDF_FRACTIONS: [f64; 14] = [
    0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1.0,
];

fn latency(h: &Histogram<u64>) -> Latency {
    Latency {
        p50_ns: h.value_at_quantile(0.5),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        max_ns: h.max(),
        cdf: CDF_FRACTIONS
            .iter()
            .map(|&q| (q, h.value_at_quantile(q)))
            .collect(),
    }
}

/// Consecutive keys of one thread that rise.
fn order_of(keys: &[u128]) -> Order {
    let pairs = keys.len().saturating_sub(1) as u64;
    let rising = keys.windows(2).filter(|w| w[1] > w[0]).count() as u64;
    Order { pairs, rising }
}

/// Keys of `keys` (sorted) found in `history` (sorted), each counted.
fn found_in(history: &[u128], keys: &[u128]) -> u64 {
    let (mut h, mut found) = (0, 0);
    for key in keys {
        while h < history.len() && history[h] < *key {
            h += 1;
        }
        if h < history.len() && history[h] == *key {
            found += 1;
        }
    }
    found
}

/// Adds the sorted `keys` to the sorted `history`, keeping it sorted.
fn merge_into(history: &mut Vec<u128>, keys: Vec<u128>) {
    if history.is_empty() {
        *history = keys;
        return;
    }
    history.extend(keys);
    // Two sorted runs: the sort merges them.
    history.sort();
}

/// One thread's run before the restart, the restart, one thread's run after it; the IDs
/// after it looked up among all before it (`history` and the run just before).
fn restart(
    entry: &Entry,
    plan: &Plan,
    scheme: Box<dyn Scheme>,
    open: &dyn Fn() -> Result<Box<dyn Scheme>, Error>,
    mut history: Vec<u128>,
) -> Result<Restart, Error> {
    let in_process = entry.stores == 0;
    let what = match (&plan.restart_with, in_process) {
        (Some(_), _) => "store",
        (None, true) => "process",
        (None, false) => {
            return Ok(Restart {
                what: "not measured".to_owned(),
                before: 0,
                after: 0,
                repeats: 0,
                errors: 0,
                note: "no --restart-with command to restart the store".to_owned(),
            })
        }
    };
    let (before_run, _, before) = run(&*scheme, 1, plan.restart_duration)?;
    let repeated = before_run.duplicates + found_in(&history, &before);
    if repeated > 0 {
        return Err(format!(
            "{repeated} duplicate ID(s) in the run before the restart (the store was not \
             restarted yet)"
        ));
    }
    // The old generator or connections go first, as a process's would.
    drop(scheme);
    let note = match &plan.restart_with {
        Some(command) => {
            run_restart(command)?;
            // Not the command itself: it may hold a password.
            "ran the --restart-with command".to_owned()
        }
        None => "the generator made anew in the same process, as a restarted process \
                 would make it"
            .to_owned(),
    };
    let scheme = open_again(open)?;
    let (after_run, _, after) = run(&*scheme, 1, plan.restart_duration)?;
    let just_before = before.len() as u64;
    merge_into(&mut history, before);
    // A key repeated within the run after counts once per repeat, as across it.
    let repeats = after_run.duplicates + found_in(&history, &after);
    Ok(Restart {
        what: what.to_owned(),
        before: just_before,
        after: after.len() as u64,
        errors: before_run.errors + after_run.errors,
        repeats,
        note,
    })
}

/// The longest a --restart-with command may take.
const RESTART_LIMIT: Duration = Duration::from_secs(300);

/// Runs the restart command with its output on stderr (stdout is the report's), killed
/// past [`RESTART_LIMIT`].
fn run_restart(command: &str) -> Result<(), Error> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .spawn()
        .map_err(|e| format!("cannot run --restart-with: {e}"))?;
    let deadline = Instant::now() + RESTART_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("the --restart-with command failed: {status}")),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the --restart-with command did not end within {} s",
                    RESTART_LIMIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("the --restart-with command: {e}")),
        }
    }
}

/// Opens the scheme after a restart, giving a store that is still starting up 30 s.
fn open_again(open: &dyn Fn() -> Result<Box<dyn Scheme>, Error>) -> Result<Box<dyn Scheme>, Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match open().and_then(|s| s.client().map(|_| s)) {
            Ok(scheme) => return Ok(scheme),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("the scheme did not open after the restart: {e}"))
            }
            Err(_) => thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_looked_up_in_the_history_and_merged_into_it() {
        let mut history = Vec::new();
        merge_into(&mut history, vec![1, 3, 5]);
        assert_eq!(found_in(&history, &[0, 2, 4, 6]), 0);
        assert_eq!(found_in(&history, &[1, 3, 3, 6]), 3);
        merge_into(&mut history, vec![2, 4]);
        assert_eq!(history, [1, 2, 3, 4, 5]);
        assert_eq!(found_in(&history, &[5, 6]), 1);
        assert_eq!(found_in(&[], &[1]), 0);
    }

    #[test]
    fn order_counts_rising_pairs() {
        assert_eq!(
            order_of(&[1, 2, 3]),
            Order {
                pairs: 2,
                rising: 2
            }
        );
        assert!(order_of(&[1, 2, 3]).sorts_by_time());
        assert_eq!(
            order_of(&[3, 1, 2]),
            Order {
                pairs: 2,
                rising: 1
            }
        );
        assert!(!order_of(&[5]).sorts_by_time());
    }
}
