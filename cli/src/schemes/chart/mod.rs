//! Charts of benchmark results as SVG text: three charts of [`SchemeResult`]s that each
//! answer one question, drawn with the kit in `kit.rs` (a generic line chart too).

mod kit;

pub use kit::{lines, ChartError, Series};

use super::result::{SchemeResult, ThreadRun};
use kit::{draw, lines_on, Axis, Body, Ticks, NINES, NS, SI};

/// "1 thread", "8 threads".
fn threads_word(threads: usize) -> String {
    format!("{threads} thread{}", if threads == 1 { "" } else { "s" })
}

/// Each scheme with a run at `threads` threads, and that run.
fn runs_at<'a>(
    results: &'a [SchemeResult],
    threads: usize,
) -> impl Iterator<Item = (&'a SchemeResult, &'a ThreadRun)> {
    let at = move |r: &'a SchemeResult| r.runs.iter().find(|run| run.threads == threads);
    results.iter().filter_map(move |r| Some((r, at(r)?)))
}

/// IDs per second against threads, one line per scheme: how each scheme scales. Both axes
/// log, x ticks at the thread counts run; schemes without runs are left out.
pub fn throughput_by_threads(results: &[SchemeResult]) -> Result<String, ChartError> {
    let series: Vec<Series> = results
        .iter()
        .filter(|r| !r.runs.is_empty())
        .map(|r| {
            let mut points: Vec<_> = r
                .runs
                .iter()
                .map(|run| (run.threads as f64, run.ids_per_sec))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name: r.scheme.clone(),
                points,
            }
        })
        .collect();
    let title = "IDs per second by threads";
    lines(title, "threads", "IDs/s", &series, true, true)
}

/// Call time against the share of calls that took no longer, at `threads` threads, one
/// line per scheme from `latency.cdf`: how the slow calls compare. x is log nanoseconds;
/// y is in "nines", -log10(1 - fraction), so 90%, 99%, 99.9% are evenly spaced and the
/// tail is as visible as the median. The slowest call (fraction 1, which that axis cannot
/// place) is drawn at 1 - 1/calls, the finest fraction the run resolves. Schemes with no
/// run at `threads` are left out.
pub fn latency_cdf(results: &[SchemeResult], threads: usize) -> Result<String, ChartError> {
    let series: Vec<Series> = runs_at(results, threads)
        .map(|(r, run)| {
            let finest = 1.0 / run.calls.max(1) as f64;
            let nines = |f: f64| -(1.0 - f).max(finest).log10();
            let points = run.latency.cdf.iter().map(|&(f, t)| (t as f64, nines(f)));
            Series {
                name: r.scheme.clone(),
                points: points.collect(),
            }
        })
        .collect();
    let title = format!("Call time, {}", threads_word(threads));
    let x = ("call time", true, Ticks::Auto, NS);
    lines_on(
        &title,
        x,
        ("calls no slower", false, Ticks::Whole, NINES),
        &series,
    )
}

/// IDs per second at `threads` threads, one bar per scheme, fastest at the top: who is
/// fastest, and by how much (log axis, each bar labelled with its value; uidgen's bars
/// blue, the others grey). Schemes with no run at `threads` are left out.
pub fn side_by_side(results: &[SchemeResult], threads: usize) -> Result<String, ChartError> {
    let mut bars: Vec<(String, f64)> = runs_at(results, threads)
        .map(|(r, run)| (r.scheme.clone(), run.ids_per_sec))
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .collect();
    bars.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Room right of the fastest bar for its label.
    let values: Vec<f64> = bars.iter().flat_map(|b| [b.1, 2.0 * b.1]).collect();
    let xa = Axis::fit(("IDs/s", true, Ticks::Auto, SI), &values).ok_or(ChartError::NoData)?;
    let n = bars.len();
    let name_of = |at: f64| {
        let k = (n as f64 - 1.0 - at).round() as usize;
        bars.get(k).map_or(String::new(), |b| b.0.clone())
    };
    let (ticks, span) = ((0..n).map(|i| i as f64).collect(), -0.6..n as f64 - 0.4);
    let (label, log, fmt, minor) = ("", false, &name_of, vec![]);
    let ya = Axis {
        label,
        log,
        fmt,
        span,
        ticks,
        minor,
    };
    let title = format!("IDs per second, {}, fastest first", threads_word(threads));
    draw(&title, &xa, &ya, Body::Bars(&bars))
}

#[cfg(test)]
mod tests {
    use super::kit::{style_of, MARKERS, PALETTE};
    use super::*;
    use serde_json::{json, Value};
    use std::collections::HashSet;

    /// 60k..300M IDs/s, one uidgen scheme; redis-incr has no 8-thread run. Call times are
    /// multiples of each run's median (`p50`, ns), up to 1000×.
    fn results() -> Vec<SchemeResult> {
        let run = |threads: usize, ids_per_sec: f64, p50: u64| {
            let cdf = [
                (0.0, 1),
                (0.5, 2),
                (0.9, 4),
                (0.99, 20),
                (0.999, 80),
                (1.0, 2000),
            ];
            let cdf = cdf.map(|(f, k)| (f, k * p50 / 2));
            json!({"threads": threads, "ids": 1_000_000, "calls": 1_000_000, "errors": 0,
                "duplicates": 0, "seconds": 1.0, "ids_per_sec": ids_per_sec,
                "latency": {"p50_ns": p50, "p99_ns": 10 * p50, "p999_ns": 40 * p50,
                    "max_ns": 1000 * p50, "cdf": cdf}})
        };
        let scheme = |name: &str, runs: Vec<Value>| {
            json!({"scheme": name, "title": name, "needs": "nothing", "stores": [],
                "bytes_per_id": 8, "ids_per_call": 1, "runs": runs,
                "order": {"pairs": 0, "rising": 0},
                "restart": {"what": "not measured", "before": 0, "after": 0, "repeats": 0,
                    "note": ""}})
        };
        serde_json::from_value(json!([
            scheme(
                "uuid-v7",
                vec![run(1, 20e6, 40), run(2, 30e6, 60), run(8, 35e6, 200)]
            ),
            scheme(
                "uidgen-cached",
                vec![run(1, 150e6, 20), run(2, 250e6, 24), run(8, 300e6, 40)]
            ),
            scheme(
                "redis-incr",
                vec![run(1, 60e3, 15_000), run(2, 110e3, 17_000)]
            ),
            scheme(
                "snowflake-mutex",
                vec![run(1, 10e6, 90), run(2, 6e6, 300), run(8, 4e6, 2000)]
            ),
        ]))
        .unwrap()
    }

    /// Each `<text>`: its x, y and content.
    fn texts(svg: &str) -> Vec<(f64, f64, String)> {
        let text = |t: &str| {
            let (tag, rest) = t.split_once('>')?;
            let num = |key: &str| tag.split(key).nth(1)?.split('"').next()?.parse().ok();
            Some((
                num(" x=\"")?,
                num(" y=\"")?,
                rest.split("</text>").next()?.trim().into(),
            ))
        };
        svg.split("<text").skip(1).filter_map(text).collect()
    }

    /// Asserts `svg` is an SVG document with a text of its own for each of `wanted`.
    fn shows(svg: &str, wanted: &[&str]) {
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "not SVG"
        );
        let texts = texts(svg);
        for w in wanted {
            assert!(texts.iter().any(|t| t.2 == *w), "no text {w:?}");
        }
    }

    /// The (colour, width) of every polyline 2 px or wider: data lines and legend samples
    /// (grid and axes are 1 px).
    fn strokes(svg: &str) -> Vec<(String, u32)> {
        let stroke = |t: &str| {
            let attr = |key: &str| t.split(key).nth(1)?.split('"').next();
            Some((
                attr(" stroke=\"")?.to_owned(),
                attr(" stroke-width=\"")?.parse().ok()?,
            ))
        };
        let all = svg.split("<polyline").skip(1).filter_map(stroke);
        all.filter(|s| s.1 >= 2).collect()
    }

    fn colours(svg: &str) -> usize {
        strokes(svg)
            .into_iter()
            .map(|s| s.0)
            .collect::<HashSet<_>>()
            .len()
    }

    /// `n` series at 1, 2, 4 threads, 1M..40M; the second is uidgen's.
    fn series(n: usize) -> Vec<Series> {
        let name = |i| {
            if i == 1 {
                "uidgen-cached".into()
            } else {
                format!("peer-{i}")
            }
        };
        let points = |i: usize| {
            [1.0, 2.0, 4.0]
                .map(|t| (t, 1e6 * (i + 1) as f64 * t))
                .into()
        };
        (0..n)
            .map(|i| Series {
                name: name(i),
                points: points(i),
            })
            .collect()
    }

    #[test]
    fn pairs_of_colour_and_marker_are_distinct() {
        let pairs: Vec<(usize, usize)> = (0..25).map(style_of).collect();
        assert_eq!(pairs.iter().collect::<HashSet<_>>().len(), 25);
        assert_eq!(
            pairs.iter().map(|p| p.1).collect::<HashSet<_>>().len(),
            MARKERS
        );
        for w in pairs.windows(2) {
            assert!(
                w[0].0 != w[1].0 && w[0].1 != w[1].1,
                "neighbours alike: {w:?}"
            );
        }
        // As the doc comment says: 60 before a pair comes back.
        assert_eq!((0..60).map(style_of).collect::<HashSet<_>>().len(), 60);
    }

    #[test]
    fn lines_give_each_series_a_colour_and_a_legend_right_of_the_frame() {
        for n in [4, 10] {
            let svg = lines("t", "threads", "IDs/s", &series(n), true, true).unwrap();
            // Decades of 1M..40M, and x ticks at the values given.
            shows(&svg, &["1M", "10M", "100M", "1", "2", "4"]);
            assert_eq!(colours(&svg), n);
            for s in series(n) {
                let texts = texts(&svg);
                assert!(
                    texts.iter().any(|t| t.2 == s.name && t.0 > 720.0),
                    "{}",
                    s.name
                );
            }
            // uidgen's line (and its legend sample) alone are thick.
            let uidgen = format!("#{:06X}", PALETTE[1]);
            assert!(strokes(&svg)
                .iter()
                .all(|(c, w)| (*w == 4) == (*c == uidgen)));
        }
        let linear = lines("t", "x", "y", &series(3), false, false).unwrap();
        shows(&linear, &["peer-0", "uidgen-cached", "peer-2", "10M"]);
    }

    #[test]
    fn throughput_by_threads_has_every_scheme_and_decade() {
        let svg = throughput_by_threads(&results()).unwrap();
        shows(
            &svg,
            &["uuid-v7", "uidgen-cached", "redis-incr", "snowflake-mutex"],
        );
        shows(
            &svg,
            &["10k", "100k", "1M", "10M", "100M", "1G", "1", "2", "8"],
        );
        assert_eq!(colours(&svg), 4);
    }

    #[test]
    fn latency_cdf_shows_the_tail_and_leaves_out_schemes_not_run() {
        let svg = latency_cdf(&results(), 8).unwrap();
        shows(&svg, &["uuid-v7", "uidgen-cached", "snowflake-mutex"]);
        assert!(!svg.contains("redis-incr"));
        assert_eq!(colours(&svg), 3);
        // 10 ns .. 2 ms, and the nines up to 1 - 1/calls.
        shows(
            &svg,
            &[
                "10 ns", "1 µs", "1 ms", "0%", "90%", "99%", "99.9%", "99.9999%",
            ],
        );
        shows(&latency_cdf(&results(), 1).unwrap(), &["redis-incr"]);
    }

    #[test]
    fn side_by_side_sorts_fastest_first_and_leaves_out_schemes_not_run() {
        let svg = side_by_side(&results(), 8).unwrap();
        shows(&svg, &["1M", "10M", "100M", "300M", "35M", "4M"]);
        assert!(!svg.contains("redis-incr"));
        let y = |name: &str| texts(&svg).into_iter().find(|t| t.2 == name).map(|t| t.1);
        let ys = ["uidgen-cached", "uuid-v7", "snowflake-mutex"].map(y);
        assert!(ys.iter().all(Option::is_some), "{ys:?}");
        assert!(
            ys.windows(2).all(|w| w[0] < w[1]),
            "not fastest first: {ys:?}"
        );
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        let none = |r: Result<String, ChartError>| matches!(r, Err(ChartError::NoData));
        assert!(none(throughput_by_threads(&[])));
        assert!(none(latency_cdf(&results(), 3)));
        assert!(none(side_by_side(&[], 1)));
        assert!(none(lines("t", "x", "y", &[], false, false)));
        // A log axis has no place for zero.
        let zero = [Series {
            name: "z".into(),
            points: vec![(1.0, 0.0)],
        }];
        assert!(none(lines("t", "x", "y", &zero, false, true)));
    }
}
