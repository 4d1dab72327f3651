//! `results/schemes.md` from the schemes' results: the machine, one table of every
//! scheme, what was measured of each claim the articles make, and the charts' links.

use super::result::SchemeResult;
use std::fmt::Write as _;

/// Where and how the run was made.
pub struct Machine {
    pub date: String,
    pub command: String,
    pub cores: String,
    pub cpu: String,
    pub rustc: String,
}

/// A scheme the run could not measure, and why.
pub struct Skipped {
    pub scheme: String,
    pub why: String,
}

/// The charts the report links, each drawn by `chart` beside it.
pub const CHARTS: [(&str, &str); 3] = [
    ("schemes-throughput.svg", "IDs per second against threads"),
    (
        "schemes-side-by-side.svg",
        "Schemes side by side, one thread",
    ),
    ("schemes-latency.svg", "Call time, one thread"),
];

/// The whole report.
pub fn markdown(results: &[SchemeResult], skipped: &[Skipped], machine: &Machine) -> String {
    let mut md = format!(
        "# ID schemes side by side\n\n\
         Made by `{}` on {}: every scheme on this one machine, each store a private server \
         the script started.\n\n\
         - machine: {} cores, {}\n- rustc: {}\n\
         - each scheme ran at 1, 2 and 8 threads, each thread with a connection of its own \
         (in-process schemes share one generator, as threads of a service do), every call \
         timed (the times include two clock reads) and every ID kept: **a duplicate within \
         a run fails the run**, and none did.\n\
         - each figure is one run of 1 s (after the scheme's first connection): on a shared \
         2-core machine expect a run-to-run spread of tens of percent.\n\
         - *restart*: IDs taken for a moment, the store restarted (a private server stopped \
         cleanly and started on its data; the Redis runs with no snapshots and no log, as a \
         cache does), IDs taken again, and those after it looked up among every ID handed \
         out before it. Crashes (SIGKILL, power loss) were not measured. In-process schemes \
         make their generator anew, as a restarted process would; the uuid, ulid and bson \
         crates keep their state in the process, so for them this shows only that a new \
         handle repeats nothing.\n\
         - *sorts by time*: one thread's consecutive IDs compared (as numbers, or as text \
         for a text ID); for a batching scheme, within one caller's batches only.\n\
         - `scripts/schemes` runs the two-server schemes on two databases of one MariaDB, \
         and its private PostgreSQL with fsync off (its restarts are clean shutdowns, which \
         lose nothing either way).\n\n",
        machine.command, machine.date, machine.cores, machine.cpu, machine.rustc
    );
    md.push_str(
        "| scheme | needs | IDs/s, 1 thread | 2 threads | 8 threads | p50 | p99 | p99.9 | max | \
         bytes/ID | sorts by time | restart: repeats |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let at = |threads| rate(ids_per_sec(r, threads));
        let one = r.runs.iter().find(|run| run.threads == 1);
        let lat = |f: fn(&super::result::Latency) -> u64| {
            one.map_or("–".to_owned(), |run| ns(f(&run.latency)))
        };
        let _ = writeln!(
            md,
            "| `{}`{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scheme,
            batch_note(r),
            r.needs,
            at(1),
            at(2),
            at(8),
            lat(|l| l.p50_ns),
            lat(|l| l.p99_ns),
            lat(|l| l.p999_ns),
            lat(|l| l.max_ns),
            r.bytes_per_id,
            if r.order.sorts_by_time() {
                "yes".to_owned()
            } else {
                format!("no ({} rose)", share(r.order.rising, r.order.pairs))
            },
            restart_cell(r),
        );
    }
    md.push_str(
        "\nLatency columns are per call at 1 thread; a batching scheme's call hands out its \
         whole batch.\n",
    );
    if !skipped.is_empty() {
        md.push_str("\nNot measured in this run:\n\n");
        for s in skipped {
            let _ = writeln!(md, "- `{}`: {}", s.scheme, s.why);
        }
    }
    md.push_str("\n## The articles' claims, measured\n\n| claim | measured here |\n|---|---|\n");
    for (claim, measured) in claims(results) {
        let _ = writeln!(md, "| {claim} | {measured} |");
    }
    md.push_str("\n## Charts\n\n");
    for (file, title) in CHARTS {
        let _ = writeln!(md, "![{title}]({file})\n");
    }
    md.push_str("## What each scheme is\n\n");
    for r in results {
        let _ = writeln!(md, "- `{}`: {}", r.scheme, r.title);
    }
    md
}

fn find<'a>(results: &'a [SchemeResult], scheme: &str) -> Option<&'a SchemeResult> {
    results.iter().find(|r| r.scheme == scheme)
}

fn ids_per_sec(r: &SchemeResult, threads: usize) -> Option<f64> {
    r.runs
        .iter()
        .find(|run| run.threads == threads)
        .map(|run| run.ids_per_sec)
}

/// The best IDs/s over the thread counts.
fn best(r: &SchemeResult) -> f64 {
    r.runs.iter().map(|run| run.ids_per_sec).fold(0.0, f64::max)
}

fn batch_note(r: &SchemeResult) -> String {
    if r.ids_per_call > 1 {
        format!(" ({} a call)", r.ids_per_call)
    } else {
        String::new()
    }
}

fn restart_cell(r: &SchemeResult) -> String {
    let x = &r.restart;
    if !x.measured() {
        return "not measured".to_owned();
    }
    let what = if x.what == "store" {
        "store"
    } else {
        "process"
    };
    if x.repeats == 0 {
        format!("**0** of {} ({what})", x.after)
    } else {
        format!(
            "**{}** of {} ({}, {what})",
            x.repeats,
            x.after,
            share(x.repeats, x.after)
        )
    }
}

/// A share as a percentage, with the decimals that keep a share short of 100% from
/// reading as 100%.
fn share(part: u64, whole: u64) -> String {
    let p = percent(part, whole);
    if part < whole && p >= 99.0 {
        format!("{:.3}%", p.min(99.999))
    } else {
        format!("{p:.0}%")
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Each claim of the articles, and what this run measured of it ("not measured" where a
/// scheme it needs did not run).
fn claims(results: &[SchemeResult]) -> Vec<(&'static str, String)> {
    let get = |name| find(results, name);
    let none = || "not measured in this run".to_owned();
    let mut out = Vec::new();
    out.push((
        "\"A ticket server is a single point and a bottleneck\" (Flickr)",
        match (get("flickr-ticket"), get("flickr-ticket-2")) {
            (Some(one), two) => {
                let mut text = format!(
                    "one server: {} at 1 thread, {} at 8 (×{:.1} for 8× the clients)",
                    rate(ids_per_sec(one, 1)),
                    rate(ids_per_sec(one, 8)),
                    ratio(ids_per_sec(one, 8), ids_per_sec(one, 1))
                );
                if let Some(two) = two {
                    let _ = write!(
                        text,
                        "; two ticket databases (odd/even, on one server here): {} at 8 threads",
                        rate(ids_per_sec(two, 8))
                    );
                }
                let _ = write!(text, "; restart: {}", restart_cell(one));
                text
            }
            _ => none(),
        },
    ));
    out.push((
        "\"Redis INCR is fast but loses IDs on restart\"",
        match (get("redis-incr"), get("mysql-auto-increment")) {
            (Some(redis), mysql) => {
                let mut text = format!("INCR: {} at 8 threads", rate(ids_per_sec(redis, 8)));
                if let Some(mysql) = mysql {
                    let _ = write!(
                        text,
                        " (×{:.1} MySQL auto-increment's {})",
                        ratio(ids_per_sec(redis, 8), ids_per_sec(mysql, 8)),
                        rate(ids_per_sec(mysql, 8))
                    );
                }
                let _ = write!(
                    text,
                    "; after a restart of a Redis without persistence: {}",
                    restart_cell(redis)
                );
                if let Some(by) = get("redis-incrby") {
                    let _ = write!(
                        text,
                        "; INCRBY {} a call: {} at 8 threads",
                        by.ids_per_call,
                        rate(ids_per_sec(by, 8))
                    );
                }
                text
            }
            _ => none(),
        },
    ));
    out.push((
        "\"ZooKeeper sequential nodes are slow and cannot batch\"",
        match get("zookeeper-sequential") {
            Some(zk) => format!(
                "{} at 1 thread, {} at 8 (a write through ZooKeeper's log per ID); p99 {}",
                rate(ids_per_sec(zk, 1)),
                rate(ids_per_sec(zk, 8)),
                zk.runs
                    .first()
                    .map_or("–".to_owned(), |r| ns(r.latency.p99_ns))
            ),
            None => none(),
        },
    ));
    out.push((
        "\"UidGenerator makes over 6M IDs/s\" (Baidu)",
        match get("uidgen-ring") {
            Some(ring) => format!(
                "uidgen's ring: {} at 1 thread, best {} (every call timed here; see results/README.md for the untimed figures)",
                rate(ids_per_sec(ring, 1)),
                rate(Some(best(ring)))
            ),
            None => none(),
        },
    ));
    out.push((
        "\"Snowflake is capped at 4096 IDs per ms per worker\"",
        match get("twitter-snowflake") {
            Some(sf) => format!(
                "best {} (4.096M/s is the cap); sorts by time: {}",
                rate(Some(best(sf))),
                if sf.order.sorts_by_time() {
                    "yes"
                } else {
                    "no"
                }
            ),
            None => none(),
        },
    ));
    out.push((
        "\"UUIDs are long and unordered\"",
        match (get("uuid-v4"), get("uuid-v7")) {
            (Some(v4), v7) => {
                let mut text = format!(
                    "v4: {} bytes, {} of consecutive IDs rose",
                    v4.bytes_per_id,
                    share(v4.order.rising, v4.order.pairs)
                );
                if let Some(v7) = v7 {
                    let _ = write!(
                        text,
                        "; v7: {} bytes, sorts by time: {}",
                        v7.bytes_per_id,
                        if v7.order.sorts_by_time() {
                            "yes"
                        } else {
                            "no"
                        }
                    );
                }
                text
            }
            _ => none(),
        },
    ));
    out.push((
        "\"Segments (Leaf) take the database off the hot path\"",
        match (get("uidgen-segment"), get("mysql-auto-increment")) {
            (Some(seg), Some(mysql)) => {
                let mut text = format!(
                    "in-process segments: {} at 1 thread, ×{:.0} an INSERT per ID ({})",
                    rate(ids_per_sec(seg, 1)),
                    ratio(ids_per_sec(seg, 1), ids_per_sec(mysql, 1)),
                    rate(ids_per_sec(mysql, 1))
                );
                if let Some(http) = get("leaf-segment-http") {
                    let _ = write!(
                        text,
                        "; as a service, one ID an HTTP request: {} (the round trip, not the \
                         database, is then the cost)",
                        rate(ids_per_sec(http, 1))
                    );
                }
                text
            }
            _ => none(),
        },
    ));
    out
}

fn ratio(a: Option<f64>, b: Option<f64>) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => a / b,
        _ => f64::NAN,
    }
}

/// IDs per second in k or M.
fn rate(per_sec: Option<f64>) -> String {
    match per_sec {
        None => "–".to_owned(),
        Some(v) if v >= 1e6 => format!("{:.1}M/s", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.1}k/s", v / 1e3),
        Some(v) => format!("{v:.0}/s"),
    }
}

/// Nanoseconds in the unit that suits them.
pub(crate) fn ns(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::result::{Latency, Order, Restart, ThreadRun};

    fn result(scheme: &str, per_sec: [f64; 3], repeats: u64, sorted: bool) -> SchemeResult {
        SchemeResult {
            scheme: scheme.to_owned(),
            title: format!("the {scheme} scheme"),
            needs: "Redis".to_owned(),
            stores: vec!["redis://127.0.0.1:1".to_owned()],
            bytes_per_id: 8,
            ids_per_call: 1,
            runs: [1, 2, 8]
                .iter()
                .zip(per_sec)
                .map(|(&threads, ids_per_sec)| ThreadRun {
                    threads,
                    ids: ids_per_sec as u64,
                    calls: ids_per_sec as u64,
                    errors: 0,
                    duplicates: 0,
                    seconds: 1.0,
                    ids_per_sec,
                    latency: Latency {
                        p50_ns: 20_000,
                        p99_ns: 90_000,
                        p999_ns: 400_000,
                        max_ns: 2_000_000,
                        cdf: vec![(0.0, 1_000), (1.0, 2_000_000)],
                    },
                })
                .collect(),
            order: Order {
                pairs: 100,
                rising: if sorted { 100 } else { 50 },
            },
            restart: Restart {
                what: "store".to_owned(),
                before: 1000,
                after: 800,
                repeats,
                errors: 0,
                note: String::new(),
            },
        }
    }

    fn machine() -> Machine {
        Machine {
            date: "2026-11-27".to_owned(),
            command: "scripts/schemes".to_owned(),
            cores: "2".to_owned(),
            cpu: "a CPU".to_owned(),
            rustc: "rustc 1.x".to_owned(),
        }
    }

    #[test]
    fn the_table_and_the_claims_show_what_was_measured() {
        let results = [
            result("redis-incr", [25_000.0, 48_000.0, 60_000.0], 800, true),
            result(
                "mysql-auto-increment",
                [3_000.0, 5_000.0, 12_000.0],
                0,
                true,
            ),
            result("uuid-v4", [11e6, 20e6, 21e6], 0, false),
        ];
        let skipped = [Skipped {
            scheme: "zookeeper-sequential".to_owned(),
            why: "no java here".to_owned(),
        }];
        let md = markdown(&results, &skipped, &machine());
        assert!(md.contains(
            "| `redis-incr` | Redis | 25.0k/s | 48.0k/s | 60.0k/s | 20.0 µs | 90.0 µs | 400.0 µs | 2.0 ms | 8 | yes | **800** of 800 (100%, store) |"
        ), "{md}");
        assert!(md.contains("| no (50% rose) |"), "{md}");
        // The Redis claim: INCR beside auto-increment at 8 threads, and the repeats.
        assert!(
            md.contains("INCR: 60.0k/s at 8 threads (×5.0 MySQL auto-increment's 12.0k/s)"),
            "{md}"
        );
        assert!(md.contains("without persistence: **800** of 800"), "{md}");
        // A claim whose scheme did not run says so; a skipped scheme gives its reason.
        assert!(md.contains("| \"ZooKeeper sequential nodes are slow and cannot batch\" | not measured in this run |"), "{md}");
        assert!(
            md.contains("- `zookeeper-sequential`: no java here"),
            "{md}"
        );
        for (file, _) in CHARTS {
            assert!(md.contains(&format!("]({file})")), "{file}");
        }
    }
}
