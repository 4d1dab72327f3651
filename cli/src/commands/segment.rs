//! `uidgen segment`: next, list and create, on the store of `--store` (default: the
//! embedded one).

use super::write_ids;
use crate::args::SegmentAction;
use crate::output::{Failure, Lines};
use crate::source::StoreChoice;
use crate::SUCCESS;
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};
use uidgen::{BitsAllocator, SegmentGenerator, SegmentStore, TagRecord};

/// How long `segment next` waits for a range before failing, naming why.
const SLOW_STORE_WAIT: Duration = Duration::from_secs(10);

/// Runs `action` on the counters in `store` (`--store`, else the embedded one).
pub(super) fn run(
    action: &SegmentAction,
    store: &StoreChoice,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    let store: Box<dyn SegmentStore> = match action {
        SegmentAction::Create { force: true, .. } => {
            store.url()?.force_create(true).segment_store()?
        }
        _ => store.open()?,
    };
    match action {
        SegmentAction::Next {
            tag,
            count,
            stats,
            create_step,
            id_floor,
            ..
        } => {
            if create_step.is_some() {
                return Err(Failure::msg(
                    "--create-step is no longer supported: a take never creates a tag, since \
                     a tag a store lost would be created again and repeat its IDs; create it \
                     with uidgen segment create --tag TAG --step N [--start FIRST]",
                ));
            }
            // A one-shot command waits out a slow store (each call bounded by the store's
            // own timeout, 5 s by default) rather than failing after the library's 1 s,
            // which suits a service's hot path.
            let mut builder = SegmentGenerator::builder(store, tag)
                .take_reject_policy(uidgen::TakeRejectPolicy::wait(SLOW_STORE_WAIT));
            if let Some(floor) = id_floor {
                builder = builder.floor(*floor);
            }
            let generator = builder.build()?;
            let mut out = Lines::new(stdout);
            let made = write_ids(
                &mut out,
                *count,
                |batch| generator.next_uids(batch),
                |out, id| out.line(id),
            );
            let flushed = out.flush();
            if *stats {
                let s = generator.stats();
                let _ = writeln!(
                    stderr,
                    "tag {}: {} range(s) fetched, step {}, prefetch distance {}, {} IDs left, \
                     {:.0} IDs/s, runway {}",
                    s.tag,
                    s.ranges_fetched,
                    s.step,
                    s.prefetch_distance,
                    s.ids_left,
                    s.rate_per_sec,
                    s.runway
                        .map_or("unknown (no rate yet)".to_owned(), |r| format!("{r:.1?}"))
                );
            }
            // Gives the unused tail back (the next run goes on after the last ID printed);
            // a failure there is only a gap.
            if let Err(err) = generator.shutdown() {
                tracing::warn!(
                    "could not give the unused range back (a gap, never a repeat): {err}"
                );
            }
            made?;
            flushed?;
            Ok(SUCCESS)
        }
        SegmentAction::List {
            json,
            sample,
            services,
            ..
        } => {
            let (tags, sampled) = read_tags(&*store, *sample, services)?;
            let when = |ms: u64| {
                if ms == 0 {
                    "-".to_owned()
                } else {
                    BitsAllocator::default().format_instant(ms)
                }
            };
            let left = |max_id: u64| (i64::MAX as u64).saturating_sub(max_id);
            let rate = |t: &TagRecord| {
                sampled.as_ref().map_or(Rate::NotSampled, |sample| {
                    sample.rates.get(&t.tag).copied().unwrap_or(Rate::New)
                })
            };
            // IDs/s the services handed out: none without --service, 0 for a tag they
            // did not serve.
            let served = |t: &TagRecord| -> Option<f64> {
                let sample = sampled.as_ref()?;
                let served = sample.served.as_ref()?;
                Some(served.get(&t.tag).copied().unwrap_or(0.0))
            };
            let with_services = sampled.as_ref().is_some_and(|s| s.served.is_some());
            let mut out = Lines::new(stdout);
            if *json {
                let rows: Vec<_> = tags
                    .iter()
                    .map(|t| {
                        let rate = rate(t);
                        serde_json::json!({
                            "tag": t.tag,
                            "max_id": t.max_id,
                            "step": t.step,
                            "description": t.description,
                            "updated_ms": t.updated_ms,
                            "ids_left": left(t.max_id),
                            "rate_per_sec": rate.per_sec(),
                            "runway_secs": rate.runway_secs(left(t.max_id)),
                            "sample": rate.name(),
                            "served_per_sec": served(t),
                        })
                    })
                    .collect();
                out.line(serde_json::json!({
                    "store": store.describe(),
                    "sample_secs": sampled.as_ref().map(|sample| sample.secs),
                    "services": services.len(),
                    "tags": rows,
                }))?;
            } else {
                out.line(format_args!("store {}", store.describe()))?;
                // "taken/s": how fast the counter rose (ranges taken from the store);
                // "served/s": what the services given handed out.
                let served_head = if with_services { "served/s" } else { "" };
                out.line(format_args!(
                    "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>14}  {:>14}  {:>16}  description",
                    "tag",
                    "max_id (next ID)",
                    "step",
                    "updated",
                    "ids_left",
                    "taken/s",
                    served_head,
                    "runway"
                ))?;
                for t in &tags {
                    let rate = rate(t);
                    let served = served(t).map_or(String::new(), |r| format!("{r:.1}"));
                    out.line(format_args!(
                        "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>14}  {:>14}  {:>16}  {}",
                        t.tag,
                        t.max_id,
                        t.step,
                        when(t.updated_ms),
                        left(t.max_id),
                        rate.per_sec().map_or("-".to_owned(), |r| format!("{r:.1}")),
                        served,
                        rate.runway_secs(left(t.max_id))
                            .map_or_else(|| rate.name().to_owned(), span),
                        t.description
                    ))?;
                }
            }
            out.flush()?;
            Ok(SUCCESS)
        }
        SegmentAction::Create {
            tag,
            step,
            start,
            description,
            id_floor,
            ..
        } => {
            if let Some(floor) = id_floor.filter(|floor| start <= floor) {
                return Err(uidgen::ConfigError::BelowFloor {
                    floor,
                    first: *start,
                    why: format!("--start {start} is not above --id-floor {floor}"),
                }
                .into());
            }
            let created = store.create(tag, *start, *step, description)?;
            let mut out = Lines::new(stdout);
            if created {
                out.line(format_args!(
                    "created tag {tag:?}: first ID {start}, base step {step}, in {}",
                    store.describe()
                ))?;
            } else {
                let record = store.tag(tag)?;
                let next = record.as_ref().map_or(0, |r| r.max_id);
                if let Some(floor) = id_floor.filter(|floor| next <= *floor) {
                    return Err(uidgen::ConfigError::BelowFloor {
                        floor,
                        first: next,
                        why: format!(
                            "tag {tag:?} exists already in {} and hands out {next} next",
                            store.describe()
                        ),
                    }
                    .into());
                }
                out.line(format_args!(
                    "tag {tag:?} exists already (left as it is: next ID {}, base step {}), in {}",
                    record.as_ref().map_or(0, |r| r.max_id),
                    record.as_ref().map_or(0, |r| r.step),
                    store.describe()
                ))?;
            }
            out.flush()?;
            Ok(SUCCESS)
        }
    }
}

/// What a sample window saw of one tag's counter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rate {
    /// No `--sample`.
    NotSampled,
    /// The tag was created during the window.
    New,
    /// The counter went down: a process gave its unused range back (at every graceful
    /// shutdown) or the store was restored; how fast IDs are taken is unknown.
    GaveBack,
    /// The counter rose this many IDs a second (0: "idle").
    PerSec(f64),
    /// The counter did not move, but moved shortly before the window: a service is
    /// likely handing out the range it took then.
    BetweenFetches,
}

impl Rate {
    fn per_sec(self) -> Option<f64> {
        match self {
            Rate::PerSec(rate) => Some(rate),
            _ => None,
        }
    }

    /// IDs left at this rate, in seconds; `None` unless the counter rose.
    fn runway_secs(self, ids_left: u64) -> Option<f64> {
        self.per_sec()
            .filter(|rate| *rate > 0.0)
            .map(|rate| ids_left as f64 / rate)
    }

    /// What the runway column shows when there is no runway.
    fn name(self) -> &'static str {
        match self {
            Rate::NotSampled => "-",
            Rate::New => "new",
            Rate::GaveBack => "went down",
            Rate::BetweenFetches => "between fetches",
            Rate::PerSec(rate) if rate > 0.0 => "measured",
            Rate::PerSec(_) => "idle",
        }
    }
}

/// What `--sample` measured: the seconds between the two reads, each tag's rate, and
/// with `--service` the IDs/s the services handed out of each tag.
struct Sample {
    secs: f64,
    rates: HashMap<String, Rate>,
    served: Option<HashMap<String, f64>>,
}

/// A counter that did not move is "between fetches" rather than idle when it last moved
/// this recently: two of a generator's 30 s range lifetimes.
const RECENT_FETCH_MS: u64 = 60_000;

/// How long one service may take to answer for its metrics.
const SERVICE_TIMEOUT: Duration = Duration::from_secs(10);

/// The store's tags (as the second read saw them, with a sample window).
fn read_tags(
    store: &dyn SegmentStore,
    sample: Option<Duration>,
    services: &[String],
) -> Result<(Vec<TagRecord>, Option<Sample>), Failure> {
    let served_now = || -> Result<Vec<HashMap<String, f64>>, Failure> {
        services.iter().map(|url| served_by(url)).collect()
    };
    let served_before = served_now()?;
    let first = store.tags()?;
    let Some(window) = sample else {
        return Ok((first, None));
    };
    // Each read's time is when it returned, so a slow store's round trip is in the
    // divisor as much as in the counters.
    let first_at = Instant::now();
    let first_ms = uidgen::Clock::now_millis(&uidgen::SystemClock);
    std::thread::sleep(window);
    let second = store.tags()?;
    let served_after = served_now()?;
    let secs = first_at.elapsed().as_secs_f64();
    let rates = rates(&first, &second, secs, first_ms);
    let served = (!services.is_empty()).then(|| {
        let mut per_tag: HashMap<String, f64> = HashMap::new();
        for (before, after) in served_before.iter().zip(&served_after) {
            for (tag, count) in after {
                // A service that restarted in the window counts from 0 again.
                let was = before.get(tag).copied().unwrap_or(0.0);
                let moved = if *count >= was { count - was } else { *count };
                *per_tag.entry(tag.clone()).or_default() += moved / secs;
            }
        }
        per_tag
    });
    Ok((
        second,
        Some(Sample {
            secs,
            rates,
            served,
        }),
    ))
}

/// The IDs a service at `url` has handed out of each tag since it started, from its
/// `/metrics` (`uidgen_ids_served_total`, summed over routes).
fn served_by(url: &str) -> Result<HashMap<String, f64>, Failure> {
    let base = url.trim_end_matches('/');
    let metrics = if base.ends_with("/metrics") {
        base.to_owned()
    } else {
        format!("{base}/metrics")
    };
    let answer = crate::http::get(&metrics, SERVICE_TIMEOUT)
        .map_err(|e| Failure::msg(format!("--service {url}: {e}")))?;
    if answer.status != 200 {
        return Err(Failure::msg(format!(
            "--service {url}: {metrics} answered {} (expected uidgen serve's metrics)",
            answer.status
        )));
    }
    let served = served_counts(&answer.body);
    if !answer.body.contains("uidgen_ids_served") {
        return Err(Failure::msg(format!(
            "--service {url}: {metrics} has no uidgen_ids_served_total: not a uidgen serve"
        )));
    }
    Ok(served)
}

/// `uidgen_ids_served_total{route="…",tag="…"} N` lines, summed by tag.
fn served_counts(metrics: &str) -> HashMap<String, f64> {
    let mut per_tag: HashMap<String, f64> = HashMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("uidgen_ids_served_total{") else {
            continue;
        };
        let Some(tag) = label(rest, "tag") else {
            continue;
        };
        let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        *per_tag.entry(tag).or_default() += value;
    }
    per_tag
}

/// The value of label `name` in `labels` (`a="x",name="y\"z"}…`), unescaped as the
/// exposition format escapes it (`\\`, `\"`, `\n`).
fn label(labels: &str, name: &str) -> Option<String> {
    let mut rest = labels;
    loop {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (at, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break at,
                c => value.push(c),
            }
        };
        if key.trim_start_matches(',') == name {
            return Some(value);
        }
        rest = &after[end + 1..];
    }
}

/// Each tag's rate between two reads `secs` apart, the first at `first_ms` (tags only in
/// `second` have none).
fn rates(
    first: &[TagRecord],
    second: &[TagRecord],
    secs: f64,
    first_ms: u64,
) -> HashMap<String, Rate> {
    let before: HashMap<&str, u64> = first.iter().map(|t| (t.tag.as_str(), t.max_id)).collect();
    second
        .iter()
        .filter_map(|t| {
            let was = *before.get(t.tag.as_str())?;
            let rate = match t.max_id.checked_sub(was) {
                Some(0) if first_ms.saturating_sub(t.updated_ms) < RECENT_FETCH_MS => {
                    Rate::BetweenFetches
                }
                Some(moved) => Rate::PerSec(moved as f64 / secs),
                None => Rate::GaveBack,
            };
            Some((t.tag.clone(), rate))
        })
        .collect()
}

/// A runway as a person reads it: the largest unit that is at least one, to one decimal,
/// and past 10,000 years in powers of ten (a quiet tag's runway is astronomical).
fn span(secs: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    const UNITS: [(f64, &str); 4] = [
        (YEAR, "years"),
        (86_400.0, "days"),
        (3_600.0, "h"),
        (60.0, "min"),
    ];
    if secs >= 10_000.0 * YEAR {
        return format!("{:.1e} years", secs / YEAR);
    }
    UNITS.iter().find(|(unit, _)| secs >= *unit).map_or_else(
        || format!("{secs:.1} s"),
        |(unit, name)| format!("{:.1} {name}", secs / unit),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tag: &str, max_id: u64) -> TagRecord {
        TagRecord::new(tag.to_owned(), max_id, 1000, String::new(), 0)
    }

    #[test]
    fn served_counts_are_summed_by_tag_over_routes_with_labels_unescaped() {
        let page = "# TYPE uidgen_ids_served counter\n\
            uidgen_ids_served_total{route=\"v1\",tag=\"order\"} 40\n\
            uidgen_ids_served_total{route=\"leaf\",tag=\"order\"} 2\n\
            uidgen_ids_served_total{route=\"v1\",tag=\"q\\\"x\\\\y\"} 5\n\
            uidgen_ids_served_total{route=\"v1\",tag=\"@snowflake\"} 7\n\
            uidgen_ids_served_created{route=\"v1\",tag=\"order\"} 1.7e9\n\
            uidgen_store_errors_total 3\n";
        let counts = served_counts(page);
        assert_eq!(counts["order"], 42.0);
        assert_eq!(counts["q\"x\\y"], 5.0);
        assert_eq!(counts["@snowflake"], 7.0);
        assert_eq!(counts.len(), 3);
        assert_eq!(label("a=\"1\",tag=\"t\"}", "tag").as_deref(), Some("t"));
        assert_eq!(label("a=\"1\"}", "tag"), None);
        assert_eq!(label("tag=\"unterminated", "tag"), None);
    }

    #[test]
    fn a_sample_tells_rising_idle_new_and_given_back_counters_apart() {
        let first = [record("up", 100), record("still", 7), record("back", 5_000)];
        let second = [
            record("up", 4_100),
            record("still", 7),
            record("back", 4_001),
            record("new", 1),
        ];
        // Last moved long before the window (updated_ms 0).
        let rates = rates(&first, &second, 2.0, 1_800_000_000_000);
        assert_eq!(rates["up"], Rate::PerSec(2_000.0));
        assert_eq!(rates["still"], Rate::PerSec(0.0));
        assert_eq!(rates["still"].name(), "idle");
        assert_eq!(rates["back"], Rate::GaveBack);
        assert!(!rates.contains_key("new"), "created in the window: no rate");
        assert_eq!(Rate::PerSec(2_000.0).runway_secs(1_000_000), Some(500.0));
        assert_eq!(Rate::PerSec(0.0).runway_secs(1_000_000), None);
        assert_eq!(Rate::GaveBack.runway_secs(1_000_000), None);

        // A counter that did not move but moved 10 s before the window: between fetches.
        let mut recent = record("recent", 7);
        recent.updated_ms = 1_800_000_000_000 - 10_000;
        let recent = super::rates(&[recent.clone()], &[recent], 2.0, 1_800_000_000_000);
        assert_eq!(recent["recent"], Rate::BetweenFetches);
        assert_eq!(recent["recent"].name(), "between fetches");
    }

    #[test]
    fn runways_read_in_the_largest_fitting_unit() {
        assert_eq!(span(30.0), "30.0 s");
        assert_eq!(span(90.0), "1.5 min");
        assert_eq!(span(5_400.0), "1.5 h");
        assert_eq!(span(86_400.0 * 3.0), "3.0 days");
        assert_eq!(span(365.25 * 86_400.0 * 2.0), "2.0 years");
        // i64::MAX IDs at one a second: 2.9e11 years, not a 15-digit figure.
        assert_eq!(span(i64::MAX as f64), "2.9e11 years");
    }
}
