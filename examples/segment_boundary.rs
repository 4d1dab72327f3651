//! The stall at a range boundary: one thread takes segment IDs at a steady rate (default
//! 1M IDs/s), each call timed, on ranges of exactly `--step` IDs (default 10,000: a
//! boundary every 10 ms), with the prefetch thread and without it (the taker that finds
//! its range used up then waits for the store). Prints, per store and mode, the latency
//! of every call and of the calls that opened a new range.
//!
//! ```text
//! cargo run --release --all-features --example segment_boundary -- [--rate N] [--seconds S] [--step N] [--json] [STORE...]
//! ```
//! STORE is a SQLite file path or a mysql://, postgres:// or redis:// URL (in a build
//! with that feature); the default is a temporary SQLite file. Tags
//! `uidgen-boundary-prefetch` and `uidgen-boundary-no-prefetch` are created in each store
//! if missing, and their unused tails given back at the end.

use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen::{SegmentGenerator, SegmentStore, TakeRejectPolicy};

struct Settings {
    rate: u64,
    seconds: f64,
    step: u64,
    json: bool,
    stores: Vec<String>,
}

fn settings() -> Result<Settings, String> {
    let mut settings = Settings {
        rate: 1_000_000,
        seconds: 3.0,
        step: 10_000,
        json: false,
        stores: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--rate" => {
                settings.rate = value("--rate")?
                    .parse()
                    .ok()
                    .filter(|r| (1..=50_000_000).contains(r))
                    .ok_or("--rate: expected 1 to 50000000 IDs a second")?
            }
            "--seconds" => {
                settings.seconds = value("--seconds")?
                    .parse()
                    .ok()
                    .filter(|s| (0.1..=600.0).contains(s))
                    .ok_or("--seconds: expected 0.1 to 600")?
            }
            "--step" => {
                settings.step = value("--step")?
                    .parse()
                    .ok()
                    .filter(|s| (1..=uidgen::MAX_BASE_STEP).contains(s))
                    .ok_or("--step: expected 1 to 2147483647")?
            }
            "--json" => settings.json = true,
            store if !store.starts_with("--") => settings.stores.push(store.to_owned()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(settings)
}

/// The store a user names, in any form the library reads (a file path, or a URL).
fn open(store: &str) -> Result<Arc<dyn SegmentStore>, Box<dyn std::error::Error>> {
    Ok(Arc::from(uidgen::StoreUrl::parse(store)?.segment_store()?))
}

/// The nanoseconds at quantile `q` of sorted `values`.
fn at(values: &[u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn run(
    store: Arc<dyn SegmentStore>,
    prefetch: bool,
    s: &Settings,
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let tag = if prefetch {
        "uidgen-boundary-prefetch"
    } else {
        "uidgen-boundary-no-prefetch"
    };
    let describe = store.describe();
    let generator = SegmentGenerator::builder(store, tag)
        .create_missing(1, s.step)
        .max_step(s.step)
        .prefetch(prefetch)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(30)))
        .build()?;
    let calls = (s.rate as f64 * s.seconds) as u64;
    let mut all = Vec::with_capacity(calls as usize);
    let mut boundary = Vec::new();
    let mut first = None;
    let mut late_ns = 0u64;
    let start = Instant::now();
    for i in 0..calls {
        let due = start + Duration::from_nanos(i * 1_000_000_000 / s.rate);
        let mut now = Instant::now();
        while now < due {
            std::hint::spin_loop();
            now = Instant::now();
        }
        late_ns = late_ns.max((now - due).as_nanos() as u64);
        let id = generator.next_uid()?;
        let took = now.elapsed().as_nanos() as u64;
        all.push(took);
        let first = *first.get_or_insert(id);
        // Nothing else takes from the tag, so ranges follow one another from the first.
        if (id - first).is_multiple_of(s.step) && id != first {
            boundary.push(took);
        }
    }
    let stats = generator.stats();
    drop(generator);
    all.sort_unstable();
    boundary.sort_unstable();
    Ok(serde_json::json!({
        "store": describe,
        "prefetch": prefetch,
        "rate": s.rate,
        "step": s.step,
        "seconds": s.seconds,
        "calls": calls,
        "p50_ns": at(&all, 0.5),
        "p99_ns": at(&all, 0.99),
        "p999_ns": at(&all, 0.999),
        "max_ns": all.last().copied().unwrap_or(0),
        "boundaries": boundary.len(),
        "boundary_p50_ns": at(&boundary, 0.5),
        "boundary_max_ns": boundary.last().copied().unwrap_or(0),
        "most_behind_schedule_ns": late_ns,
        "hungry_takes": stats.hungry_takes,
    }))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let s = settings()?;
    let temp = tempfile::tempdir()?;
    let stores = if s.stores.is_empty() {
        vec![temp.path().join("segments.db").display().to_string()]
    } else {
        s.stores.clone()
    };
    let mut results = Vec::new();
    for store in &stores {
        let store = open(store)?;
        for prefetch in [true, false] {
            let result = run(Arc::clone(&store), prefetch, &s)?;
            if !s.json {
                println!(
                    "{} | prefetch {:<5} | {} calls at {} IDs/s, ranges of {}: p50 {} ns, p99.9 {} ns, max {} ns | {} boundaries: p50 {} ns, max {} ns | hungry takes {}",
                    result["store"].as_str().unwrap_or("?"),
                    prefetch,
                    result["calls"],
                    s.rate,
                    s.step,
                    result["p50_ns"],
                    result["p999_ns"],
                    result["max_ns"],
                    result["boundaries"],
                    result["boundary_p50_ns"],
                    result["boundary_max_ns"],
                    result["hungry_takes"],
                );
            }
            results.push(result);
        }
    }
    if s.json {
        println!("{}", serde_json::Value::Array(results));
    }
    Ok(())
}
