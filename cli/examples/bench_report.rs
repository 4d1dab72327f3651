//! Turns criterion's estimates and `uidgen bench --json` reports (one per usage pattern,
//! shown as a table) into `results/README.md` and `results/throughput.svg`.
//! `scripts/bench` runs it; by hand:
//! `cargo run --release --example bench_report -- REPORT.json...`
//! (machine details come from the environment variables `scripts/bench` sets).

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use uidgen_cli::schemes::chart::{self, Series};

/// One criterion benchmark in IDs per second: at its median, the 95% interval of the
/// median, and at its mean (which, unlike the median, includes rare long stalls such as
/// a clock-bound generator waiting for the next tick).
#[derive(Debug, Clone)]
struct Measured {
    median: f64,
    low: f64,
    high: f64,
    mean: f64,
}

type Group = BTreeMap<String, BTreeMap<u64, Measured>>;

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// `target/criterion/<group>/<function>/<param>/new/*.json` for one group.
fn load_group(root: &Path, group: &str) -> Group {
    let mut out = Group::new();
    let Ok(functions) = std::fs::read_dir(root.join(group)) else {
        return out;
    };
    for function in functions.flatten() {
        let Ok(params) = std::fs::read_dir(function.path()) else {
            continue;
        };
        for param in params.flatten() {
            let new = param.path().join("new");
            let (Some(bench), Some(est)) = (
                read_json(&new.join("benchmark.json")),
                read_json(&new.join("estimates.json")),
            ) else {
                continue;
            };
            let elements = bench["throughput"]["Elements"].as_f64().unwrap_or(1.0);
            let median = &est["median"];
            let per_sec = |ns: f64| elements * 1e9 / ns;
            let (Some(point), Some(lower), Some(upper), Some(mean)) = (
                median["point_estimate"].as_f64(),
                median["confidence_interval"]["lower_bound"].as_f64(),
                median["confidence_interval"]["upper_bound"].as_f64(),
                est["mean"]["point_estimate"].as_f64(),
            ) else {
                continue;
            };
            let name = bench["function_id"].as_str().unwrap_or("?").to_owned();
            let Some(param) = bench["value_str"].as_str().and_then(|v| v.parse().ok()) else {
                continue;
            };
            out.entry(name).or_default().insert(
                param,
                Measured {
                    median: per_sec(point),
                    low: per_sec(upper),
                    high: per_sec(lower),
                    mean: per_sec(mean),
                },
            );
        }
    }
    out
}

/// The cached generator with per-thread batches (`thread_batch(64)` in benches/ids.rs):
/// IDs unique, but not ordered across threads.
const THREAD_BATCH: &str = "uidgen-cached-thread_batch";

fn is_peer(name: &str) -> bool {
    !name.starts_with("uidgen") && !name.starts_with("baseline")
}

fn m(v: f64) -> String {
    if v >= 100e6 {
        format!("{:.0}M", v / 1e6)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn best_peer(group: &Group, param: u64) -> Option<(&str, f64)> {
    group
        .iter()
        .filter(|(name, _)| is_peer(name))
        .filter_map(|(name, by)| by.get(&param).map(|r| (name.as_str(), r.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

fn table(group: &Group, params: &[u64], param_name: &str, baseline: &str) -> String {
    let mut t = format!("| generator | {param_name} | IDs/s (median) | 95% interval | mean | vs `{baseline}` | vs best peer |\n|---|---|---|---|---|---|---|\n");
    for (name, by) in group {
        for p in params {
            let Some(r) = by.get(p) else { continue };
            let vs_base = group
                .get(baseline)
                .and_then(|b| b.get(p))
                .map_or("".into(), |b| format!("{:.2}×", r.median / b.median));
            let vs_peer = best_peer(group, *p).map_or("".into(), |(peer, v)| {
                format!("{:.2}× ({peer})", r.median / v)
            });
            // A mean far below the median: rare long stalls the median does not show.
            let stalls = if r.mean < 0.5 * r.median {
                " ⚠ stalls"
            } else {
                ""
            };
            let _ = writeln!(
                t,
                "| {name} | {p} | {} | {}–{} | {}{stalls} | {vs_base} | {vs_peer} |",
                m(r.median),
                m(r.low),
                m(r.high),
                m(r.mean)
            );
        }
    }
    t
}

/// Mean IDs/s against threads, one line per generator, log scale. The mean, not the
/// median: a clock-bound generator's waits for the next tick show only in the mean.
fn svg(group: &Group) -> String {
    // Only generators run at more than one thread count make a line.
    let series: Vec<Series> = group
        .iter()
        .filter(|(_, by)| by.len() > 1)
        .map(|(name, by)| Series {
            name: name.clone(),
            points: by.iter().map(|(t, r)| (*t as f64, r.mean)).collect(),
        })
        .collect();
    let title = "IDs per second against threads (log scale; mean over criterion's samples)";
    chart::lines(title, "threads", "IDs/s", &series, true, true).unwrap_or_else(|e| {
        // The report is still written; the image says why it has no chart.
        eprintln!("results/throughput.svg: {e}");
        let e = e.to_string().replace('&', "&amp;").replace('<', "&lt;");
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"40\">\
             <text x=\"10\" y=\"25\">no chart: {e}</text></svg>\n"
        )
    })
}

/// The `patterns` group: each benchmark's time per ID, and what starting a thread
/// leaves of `churn/1` when `spawn_only/1` is taken off.
fn patterns_table(group: &Group) -> String {
    let mut t = String::from(
        "| benchmark | what one iteration is | time per ID (median) | IDs/s (median) | 95% interval | mean |\n|---|---|---|---|---|---|\n",
    );
    let what = |name: &str, param: u64| match name {
        "single" => "one ID from one cached generator".to_owned(),
        "alternate" => format!("one ID from the next of {param} cached generators in turn"),
        "churn" => "start a thread, take one ID in it, join it".to_owned(),
        "spawn_only" => "start a thread that does nothing, join it".to_owned(),
        "light" => format!("one ID after a {param} µs pause (only the call timed)"),
        _ => String::new(),
    };
    // The reference first, then the patterns, each beside its baseline.
    let order = ["single", "alternate", "churn", "spawn_only", "light"];
    let rank = |name: &str| order.iter().position(|o| *o == name).unwrap_or(order.len());
    let mut names: Vec<&String> = group.keys().collect();
    names.sort_by_key(|name| (rank(name), name.as_str()));
    for name in names {
        for (param, r) in &group[name] {
            let _ = writeln!(
                t,
                "| `{name}/{param}` | {} | {} | {} | {}–{} | {} |",
                what(name, *param),
                ns(1e9 / r.median),
                m(r.median),
                m(r.low),
                m(r.high),
                m(r.mean)
            );
        }
    }
    let time = |name: &str| {
        group
            .get(name)
            .and_then(|b| b.get(&1))
            .map(|r| 1e9 / r.median)
    };
    if let (Some(churn), Some(spawn)) = (time("churn"), time("spawn_only")) {
        let _ = if churn > spawn {
            writeln!(
                t,
                "\nThe ID's share of a thread started for it: {} of {} (`churn/1` less `spawn_only/1`; thread start-up is noisy here).",
                ns(churn - spawn),
                ns(churn)
            )
        } else {
            // Medians of two noisy runs: the thread with an ID was the quicker one.
            writeln!(
                t,
                "\nA thread started for one ID took {}, a thread that takes none {}: the ID's share is within the noise of thread start-up here.",
                ns(churn),
                ns(spawn)
            )
        };
    }
    t
}

/// A time in nanoseconds for people.
fn ns(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.2} ms", v / 1e6)
    } else if v.abs() >= 1e3 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{v:.1} ns")
    }
}

/// One row per store and mode of `examples/segment_boundary.rs`.
fn boundary_table(rows: &[Value]) -> String {
    let mut t = String::from("| store | prefetch | calls | p50 / p99.9 / max | boundaries | at a boundary: p50 / max | hungry takes |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        let n = |k: &str| ns(r[k].as_f64().unwrap_or(0.0));
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} / {} / {} | {} | {} / {} | {} |",
            r["store"].as_str().unwrap_or("?"),
            if r["prefetch"] == true { "yes" } else { "no" },
            r["calls"],
            n("p50_ns"),
            n("p999_ns"),
            n("max_ns"),
            r["boundaries"],
            n("boundary_p50_ns"),
            n("boundary_max_ns"),
            r["hungry_takes"]
        );
    }
    t
}

/// One row per `uidgen bench --json` report: the pattern, how it ran, and what it cost.
fn runs_table(runs: &[Value]) -> String {
    let mut t = String::from(
        "| pattern | threads | generator | seconds | IDs/s | slots per ID | dropped stale | time ahead start → end | growth per s | p50 / p99.99 / max (ns) | rejected takes | duplicates |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    // A figure, or a dash where the run has none (no ring, no check, a batch run).
    let num = |v: &Value, decimals: usize| {
        v.as_f64()
            .map_or("–".to_owned(), |x| format!("{x:.decimals$}"))
    };
    for run in runs {
        let mut pattern = run["pattern"].as_str().unwrap_or("single").to_owned();
        if let Some(batch @ 2..) = run["batch"].as_u64() {
            let _ = write!(pattern, ", batch {batch}");
        }
        let threads = match (run["threads_run"].as_u64(), run["interval_ms"].as_u64()) {
            (Some(total), _) => format!("{total} ({} at a time)", run["threads"]),
            (None, Some(interval)) => format!(
                "{} × 1 ID / {interval} ms ({:.2}% of the layout's rate)",
                run["threads"],
                100.0 * run["offered_share_of_layout"].as_f64().unwrap_or(0.0)
            ),
            (None, None) => run["threads"].to_string(),
        };
        let lat = &run["latency_ns"];
        let latency = if lat.is_null() {
            "–".to_owned()
        } else {
            format!("{} / {} / {}", lat["p50"], lat["p9999"], lat["max"])
        };
        let ahead = match (
            run["time_ahead_start_secs"].as_f64(),
            run["time_ahead_secs"].as_f64(),
            run["time_ahead_growth_per_sec"].as_f64(),
        ) {
            (Some(start), Some(end), Some(growth)) => (
                format!("{start:.0} s → {end:.0} s"),
                format!("{growth:+.2} s"),
            ),
            _ => ("–".to_owned(), "–".to_owned()),
        };
        let _ = writeln!(
            t,
            "| {pattern} | {threads} | {} | {:.1} | {} | {} | {} | {} | {} | {latency} | {} | {} |",
            match run["store"].as_str() {
                Some(store) => format!("{} ({store})", run["generator"].as_str().unwrap_or("?")),
                None => run["generator"].as_str().unwrap_or("?").to_owned(),
            },
            run["seconds"].as_f64().unwrap_or(0.0),
            m(run["ids_per_sec"].as_f64().unwrap_or(0.0)),
            num(&run["slots_per_id"], 3),
            num(&run["discarded_stale"], 0),
            ahead.0,
            ahead.1,
            num(&run["rejected_takes"], 0),
            num(&run["duplicates"], 0),
        );
    }
    t
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let criterion = PathBuf::from("target/criterion");
    let threads = load_group(&criterion, "threads");
    let batch = load_group(&criterion, "batch");
    let patterns = load_group(&criterion, "patterns");
    if threads.is_empty() {
        return Err("no criterion results under target/criterion/threads: run `cargo bench --bench ids` first".into());
    }
    let runs: Vec<Value> = std::env::args()
        .skip(1)
        .filter_map(|p| read_json(Path::new(&p)))
        .collect();
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "(unknown)".into());

    let get = |g: &Group, name: &str, p: u64| g.get(name).and_then(|b| b.get(&p)).map(|r| r.median);
    let cached = |t| get(&threads, "uidgen-cached", t);
    let fetch_add = |t| get(&threads, "baseline-fetch_add", t);
    let verdict = |ok: bool| if ok { "met" } else { "**not met**" };
    let mut targets = String::from("| target | measured | verdict |\n|---|---|---|\n");
    if let (Some(c1), Some(f1)) = (cached(1), fetch_add(1)) {
        let _ = writeln!(
            targets,
            "| cached `next_uid`, 1 thread ≥ 150M IDs/s | {} | {} |",
            m(c1),
            verdict(c1 >= 150e6)
        );
        let _ = writeln!(
            targets,
            "| … and ≥ 40% of 1-thread `fetch_add` | {:.0}% of {} | {} |",
            100.0 * c1 / f1,
            m(f1),
            verdict(c1 >= 0.4 * f1)
        );
    }
    if let (Some(c2), Some(f2)) = (cached(2), fetch_add(2)) {
        let _ = writeln!(
            targets,
            "| cached `next_uid`, 2 threads ≥ 1.0× `fetch_add` on as many threads | {} vs {} = {:.2}× | {} |",
            m(c2),
            m(f2),
            c2 / f2,
            verdict(c2 >= f2)
        );
        // What any lock-free, ordered design could reach here: the add plus the least
        // such a design does with its result (see benches/ids.rs).
        for (floor, what) in [
            ("baseline-floor-range", "a range check"),
            ("baseline-floor-slot", "a pre-built slot's read"),
        ] {
            if let Some(x) = get(&threads, floor, 2) {
                let _ = writeln!(
                    targets,
                    "| … reference, not a generator: `fetch_add` plus {what} (`{floor}`), 2 threads | {} vs {} = {:.2}× | reference |",
                    m(x),
                    m(f2),
                    x / f2
                );
            }
        }
    }
    if let (Some(c2), Some(c4)) = (cached(2), cached(4)) {
        let _ = writeln!(
            targets,
            "| cached `next_uid`, 2 threads ≥ 50M IDs/s total | {} | {} |",
            m(c2),
            verdict(c2 >= 50e6)
        );
        let _ = writeln!(
            targets,
            "| 4 threads no worse than 2 (within 10%, the run-to-run noise here) | {} vs {} | {} |",
            m(c4),
            m(c2),
            verdict(c4 >= 0.9 * c2)
        );
    }
    if let Some(b) = get(&batch, "uidgen-next_uids", 1024) {
        let _ = writeln!(
            targets,
            "| `next_uids` in batches of 1024 ≥ 300M IDs/s | {} | {} |",
            m(b),
            verdict(b >= 300e6)
        );
    }
    // Runs from before `--pattern` have no such field: they were `single`.
    let pattern_of = |run: &Value| run["pattern"].as_str().unwrap_or("single").to_owned();
    let segment = |t| get(&threads, "uidgen-segment", t);
    for t in [1u64, 2] {
        if let (Some(s), Some(f)) = (segment(t), fetch_add(t)) {
            let _ = writeln!(
                targets,
                "| segment `next_uid`, {t} thread{} ≥ 0.9× `fetch_add` on as many threads | {} vs {} = {:.2}× | {} |",
                if t == 1 { "" } else { "s" },
                m(s),
                m(f),
                s / f,
                verdict(s >= 0.9 * f)
            );
        }
    }
    let boundary: Vec<Value> = std::env::var("UIDGEN_BENCH_BOUNDARY")
        .ok()
        .and_then(|p| read_json(Path::new(&p)))
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    for b in boundary.iter().filter(|b| b["prefetch"] == true) {
        let max = b["boundary_max_ns"].as_u64().unwrap_or(u64::MAX);
        let without = boundary
            .iter()
            .find(|w| w["prefetch"] == false && w["store"] == b["store"])
            .map_or("–".to_owned(), |w| {
                ns(w["boundary_max_ns"].as_f64().unwrap_or(0.0))
            });
        let _ = writeln!(
            targets,
            "| segment: max `next_uid` at a range boundary, 1M IDs/s, with prefetch ≤ 100 µs ({}) | {} (without prefetch: {without}) | {} |",
            b["store"].as_str().unwrap_or("?"),
            ns(max as f64),
            verdict(max <= 100_000)
        );
    }
    let is_cached = |run: &Value| run["generator"].as_str().unwrap_or("cached") == "cached";
    for run in runs
        .iter()
        .filter(|run| pattern_of(run) == "single" && is_cached(run))
    {
        let (t, secs, batch_len) = (
            run["threads"].as_u64().unwrap_or(0),
            run["seconds"].as_f64().unwrap_or(0.0),
            run["batch"].as_u64().unwrap_or(1),
        );
        let rejected = run["rejected_takes"].as_u64().unwrap_or(0);
        let dups = run["duplicates"].as_u64();
        if secs >= 9.5 && batch_len == 1 {
            let _ = writeln!(targets, "| sustained {secs:.0} s at full speed ({t} thread{}), default settings: zero rejected takes | {rejected} rejected takes | {} |", if t == 1 { "" } else { "s" }, verdict(rejected == 0));
            let _ = writeln!(
                targets,
                "| … zero duplicates | {} | {} |",
                dups.map_or("not checked".into(), |d| d.to_string()),
                verdict(dups == Some(0))
            );
        }
        if t == 2 && batch_len == 1 && secs >= 9.5 {
            let max = run["latency_ns"]["max"].as_u64().unwrap_or(u64::MAX);
            let baseline = runs
                .iter()
                .find(|b| b["generator"] == "fetch-add" && b["threads"] == t)
                .and_then(|b| b["latency_ns"]["max"].as_f64())
                .map_or("no baseline run".to_owned(), |b| {
                    format!("`fetch-add` in the same harness: {}", ns(b))
                });
            let _ = writeln!(
                targets,
                "| cached max single-call latency, 2 threads, {secs:.0} s ≤ 1 ms | {} ({baseline}) | {} |",
                ns(max as f64),
                verdict(max <= 1_000_000)
            );
        }
        if t == 2 && batch_len == 1 {
            if let Some(p999) = run["latency_ns"]["p999"].as_u64() {
                let _ = writeln!(
                    targets,
                    "| cached p99.9 single-call latency, 2 threads < 1 µs | {p999} ns | {} |",
                    verdict(p999 < 1000)
                );
            }
        }
    }
    let rows_ahead: Vec<String> = [1u64, 2, 4]
        .iter()
        .filter_map(|&t| {
            let (peer, v) = best_peer(&threads, t)?;
            let c = cached(t)?;
            Some(format!(
                "{t} thread(s): {} vs {peer} {} ({})",
                m(c),
                m(v),
                if c > v { "ahead" } else { "behind" }
            ))
        })
        .collect();
    let all_ahead = rows_ahead.iter().all(|r| r.ends_with("(ahead)"));
    let _ = writeln!(
        targets,
        "| ahead of every peer on every row | {} | {} |",
        rows_ahead.join("; "),
        verdict(all_ahead)
    );
    // The opt-in that gives up order across threads: no target of its own, shown beside
    // the same yardsticks as the ordered default.
    for t in [1u64, 2, 4] {
        let (Some(b), Some(f)) = (get(&threads, THREAD_BATCH, t), fetch_add(t)) else {
            continue;
        };
        let peer = best_peer(&threads, t).map_or(String::new(), |(peer, v)| {
            format!(
                "; best peer {peer} {} ({})",
                m(v),
                if b > v { "ahead" } else { "behind" }
            )
        });
        let _ = writeln!(
            targets,
            "| … reference, opt-in: per-thread batches (`{THREAD_BATCH}`, not ordered across threads), {t} thread{} | {} vs `fetch_add` {} = {:.2}×{peer} | reference |",
            if t == 1 { "" } else { "s" },
            m(b),
            m(f),
            b / f
        );
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Benchmark results\n\nMade by `{}` on {}.\n",
        env("UIDGEN_BENCH_COMMAND"),
        env("UIDGEN_BENCH_DATE")
    );
    let _ = writeln!(out, "- machine: {} cores, {}\n- rustc: {}\n- criterion: warm-up 0.5 s, 2 s of measurement, 20 samples per benchmark; IDs/s is elements over the median time per iteration, and the interval is criterion's 95% interval of that median. The mean column (and the plot) use the mean time instead: a generator that stalls now and then (⚠, e.g. one waiting for the next tick) is fast at the median and slow on average.\n- peers, each through its own thread-safe API: `uuid` v4 and v7, `ulid` (`Ulid::generate`), `snowflaked::sync::Generator`, `ferroid::AtomicSnowflakeGenerator`, and `rs-snowflake`'s generator and pre-built bucket, each behind a `Mutex` because they need `&mut`.\n- `uidgen-cached-thread_batch`: the cached generator with the opt-in per-thread batches (`thread_batch(64)`): each thread hands out IDs from a batch of its own, claimed with one CAS, so IDs are unique but not ordered across threads; `uidgen-cached` is the ordered default.\n- baselines: one `AtomicU64::fetch_add` shared by the same threads, a plain counter, and two floors: that `fetch_add` plus the least a lock-free generator that keeps order across threads does with its result (`baseline-floor-range`: a check against a range's bounds; `baseline-floor-slot`: the read of a pre-built ID from a ring filled once).\n", env("UIDGEN_BENCH_NPROC"), env("UIDGEN_BENCH_CPU"), env("UIDGEN_BENCH_RUSTC"));
    let _ = writeln!(out, "## Targets\n\n{targets}");
    let _ = writeln!(out, "![IDs per second against threads](throughput.svg)\n");
    let _ = writeln!(
        out,
        "## One ID per call (`threads` group)\n\n{}",
        table(&threads, &[1, 2, 4], "threads", "baseline-fetch_add")
    );
    let _ = writeln!(
        out,
        "## Batches, one thread (`batch` group)\n\n{}",
        table(&batch, &[64, 1024], "batch", "baseline-fetch_add")
    );
    let _ = writeln!(
        out,
        "## Usage patterns (`patterns` group, one thread)\n\n{}",
        patterns_table(&patterns)
    );
    let _ = writeln!(
        out,
        "## `uidgen bench` by pattern (every ID checked for duplicates)\n\n{}",
        runs_table(&runs)
    );
    if !boundary.is_empty() {
        let _ = writeln!(
            out,
            "## Segment mode: a range boundary at 1M IDs/s (`examples/segment_boundary.rs`)\n\nOne thread takes an ID every microsecond, each call timed, on ranges of exactly {} IDs (a boundary every {} ms); with the prefetch thread, and without it (the taker that finds its range used up waits for the store, as Leaf without its second buffer).\n\n{}",
            boundary[0]["step"],
            boundary[0]["step"].as_f64().unwrap_or(0.0) / 1000.0,
            boundary_table(&boundary)
        );
    }
    std::fs::create_dir_all("results")?;
    std::fs::write("results/README.md", out)?;
    std::fs::write("results/throughput.svg", svg(&threads))?;
    println!("wrote results/README.md and results/throughput.svg");
    Ok(())
}
