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
            ..
        } => {
            if create_step.is_some() {
                return Err(Failure::msg(
                    "--create-step is no longer supported: a take never creates a tag, since \
                     a tag a store lost would be created again and repeat its IDs; create it \
                     with uidgen segment create --tag TAG --step N [--start FIRST]",
                ));
            }
            let generator = SegmentGenerator::builder(store, tag).build()?;
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
        SegmentAction::List { json, sample, .. } => {
            let (tags, sampled) = read_tags(&*store, *sample)?;
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
                        })
                    })
                    .collect();
                out.line(serde_json::json!({
                    "store": store.describe(),
                    "sample_secs": sampled.as_ref().map(|sample| sample.secs),
                    "tags": rows,
                }))?;
            } else {
                out.line(format_args!("store {}", store.describe()))?;
                out.line(format_args!(
                    "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>14}  {:>14}  description",
                    "tag", "max_id (next ID)", "step", "updated", "ids_left", "IDs/s", "runway"
                ))?;
                for t in &tags {
                    let rate = rate(t);
                    out.line(format_args!(
                        "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>14}  {:>14}  {}",
                        t.tag,
                        t.max_id,
                        t.step,
                        when(t.updated_ms),
                        left(t.max_id),
                        rate.per_sec().map_or("-".to_owned(), |r| format!("{r:.1}")),
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
            ..
        } => {
            let created = store.create(tag, *start, *step, description)?;
            let mut out = Lines::new(stdout);
            if created {
                out.line(format_args!(
                    "created tag {tag:?}: first ID {start}, base step {step}, in {}",
                    store.describe()
                ))?;
            } else {
                let record = store.tag(tag)?;
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
            Rate::PerSec(rate) if rate > 0.0 => "measured",
            Rate::PerSec(_) => "idle",
        }
    }
}

/// What `--sample` measured: the seconds between the two reads, and each tag's rate.
struct Sample {
    secs: f64,
    rates: HashMap<String, Rate>,
}

/// The store's tags (as the second read saw them, with a sample window).
fn read_tags(
    store: &dyn SegmentStore,
    sample: Option<Duration>,
) -> Result<(Vec<TagRecord>, Option<Sample>), Failure> {
    let first = store.tags()?;
    let Some(window) = sample else {
        return Ok((first, None));
    };
    // Each read's time is when it returned, so a slow store's round trip is in the
    // divisor as much as in the counters.
    let first_at = Instant::now();
    std::thread::sleep(window);
    let second = store.tags()?;
    let secs = first_at.elapsed().as_secs_f64();
    let rates = rates(&first, &second, secs);
    Ok((second, Some(Sample { secs, rates })))
}

/// Each tag's rate between two reads `secs` apart (tags only in `second` have none).
fn rates(first: &[TagRecord], second: &[TagRecord], secs: f64) -> HashMap<String, Rate> {
    let before: HashMap<&str, u64> = first.iter().map(|t| (t.tag.as_str(), t.max_id)).collect();
    second
        .iter()
        .filter_map(|t| {
            let was = *before.get(t.tag.as_str())?;
            let rate = match t.max_id.checked_sub(was) {
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
    fn a_sample_tells_rising_idle_new_and_given_back_counters_apart() {
        let first = [record("up", 100), record("still", 7), record("back", 5_000)];
        let second = [
            record("up", 4_100),
            record("still", 7),
            record("back", 4_001),
            record("new", 1),
        ];
        let rates = rates(&first, &second, 2.0);
        assert_eq!(rates["up"], Rate::PerSec(2_000.0));
        assert_eq!(rates["still"], Rate::PerSec(0.0));
        assert_eq!(rates["still"].name(), "idle");
        assert_eq!(rates["back"], Rate::GaveBack);
        assert!(!rates.contains_key("new"), "created in the window: no rate");
        assert_eq!(Rate::PerSec(2_000.0).runway_secs(1_000_000), Some(500.0));
        assert_eq!(Rate::PerSec(0.0).runway_secs(1_000_000), None);
        assert_eq!(Rate::GaveBack.runway_secs(1_000_000), None);
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
