//! `uidgen segment`: next, list and create, on the store of `--store` (default: the
//! embedded one).

use crate::args::{SegmentAction, SegmentStoreArgs};
use crate::output::{Failure, Lines};
use crate::worker::StoreChoice;
use crate::{Env, SUCCESS};
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};
use uidgen::{BitsAllocator, SegmentGenerator, SegmentStore, TagRecord};

/// The store of `--store`, else the embedded one (UIDGEN_WORKER_DB, else the default path).
pub(crate) fn open_store(
    args: &SegmentStoreArgs,
    env: Env,
) -> Result<Box<dyn SegmentStore>, Failure> {
    StoreChoice::from_option(args.store.as_deref(), env).open()
}

pub(crate) fn run(
    action: &SegmentAction,
    env: Env,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    match action {
        SegmentAction::Next {
            tag,
            count,
            create_step,
            stats,
            store,
        } => {
            let store = open_store(store, env)?;
            let mut builder = SegmentGenerator::builder(store, tag);
            if let Some(step) = create_step {
                builder = builder.create_missing(*step);
            }
            let generator = builder.build()?;
            let mut out = Lines::new(stdout);
            let made = crate::write_ids(
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
            store,
        } => {
            let store = open_store(store, env)?;
            let (tags, rates) = read_tags(&*store, *sample)?;
            let when = |ms: u64| {
                if ms == 0 {
                    "-".to_owned()
                } else {
                    BitsAllocator::default().format_instant(ms)
                }
            };
            let left = |max_id: u64| (i64::MAX as u64).saturating_sub(max_id);
            let rate = |t: &TagRecord| rates.get(&t.tag).copied();
            let runway_secs = |t: &TagRecord| {
                rate(t)
                    .filter(|r| *r > 0.0)
                    .map(|r| left(t.max_id) as f64 / r)
            };
            let mut out = Lines::new(stdout);
            if *json {
                let rows: Vec<_> = tags
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "tag": t.tag,
                            "max_id": t.max_id,
                            "step": t.step,
                            "description": t.description,
                            "updated_ms": t.updated_ms,
                            "ids_left": left(t.max_id),
                            "rate_per_sec": rate(t),
                            "runway_secs": runway_secs(t),
                        })
                    })
                    .collect();
                out.line(serde_json::json!({
                    "store": store.describe(),
                    "sample_secs": sample.map(|s| s.as_secs_f64()),
                    "tags": rows,
                }))?;
            } else {
                out.line(format_args!("store {}", store.describe()))?;
                out.line(format_args!(
                    "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>12}  {:>16}  description",
                    "tag", "max_id (next ID)", "step", "updated", "ids_left", "IDs/s", "runway"
                ))?;
                for t in &tags {
                    let (rate_text, runway_text) = match (rate(t), runway_secs(t)) {
                        (None, _) => ("-".to_owned(), "-".to_owned()),
                        (Some(r), None) => (format!("{r:.1}"), "idle".to_owned()),
                        (Some(r), Some(secs)) => (format!("{r:.1}"), span(secs)),
                    };
                    out.line(format_args!(
                        "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {:>12}  {:>16}  {}",
                        t.tag,
                        t.max_id,
                        t.step,
                        when(t.updated_ms),
                        left(t.max_id),
                        rate_text,
                        runway_text,
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
            store,
        } => {
            let store = open_store(store, env)?;
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

/// The store's tags, and with a sample window each tag's rate: how fast its counter
/// moved between two reads (IDs per second; tags created in the window have none).
fn read_tags(
    store: &dyn SegmentStore,
    sample: Option<Duration>,
) -> Result<(Vec<TagRecord>, HashMap<String, f64>), Failure> {
    let first = store.tags()?;
    let Some(window) = sample else {
        return Ok((first, HashMap::new()));
    };
    let read_at = Instant::now();
    std::thread::sleep(window);
    let second = store.tags()?;
    let secs = read_at.elapsed().as_secs_f64();
    let before: HashMap<_, _> = first.into_iter().map(|t| (t.tag, t.max_id)).collect();
    let rates = second
        .iter()
        .filter_map(|t| {
            // A counter that went down (a store restored from a backup) has no rate.
            let moved = t.max_id.checked_sub(*before.get(&t.tag)?)?;
            Some((t.tag.clone(), moved as f64 / secs))
        })
        .collect();
    Ok((second, rates))
}

/// A runway as a person reads it: the largest unit that is at least one, one decimal.
fn span(secs: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (365.25 * 86_400.0, "years"),
        (86_400.0, "days"),
        (3_600.0, "h"),
        (60.0, "min"),
    ];
    UNITS.iter().find(|(unit, _)| secs >= *unit).map_or_else(
        || format!("{secs:.1} s"),
        |(unit, name)| format!("{:.1} {name}", secs / unit),
    )
}
