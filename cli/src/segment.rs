//! `uidgen segment`: next, list and create, on the store of `--store` (default: the
//! embedded one).

use crate::args::{SegmentAction, SegmentStoreArgs};
use crate::output::{Failure, Lines};
use crate::worker::StoreChoice;
use crate::{Env, SUCCESS};
use std::io::Write;
use uidgen::{BitsAllocator, SegmentGenerator, SegmentStore};

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
        SegmentAction::List { json, store } => {
            let store = open_store(store, env)?;
            let tags = store.tags()?;
            let when = |ms: u64| {
                if ms == 0 {
                    "-".to_owned()
                } else {
                    BitsAllocator::default().format_instant(ms)
                }
            };
            let left = |max_id: u64| (i64::MAX as u64).saturating_sub(max_id);
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
                        })
                    })
                    .collect();
                out.line(serde_json::json!({ "store": store.describe(), "tags": rows }))?;
            } else {
                out.line(format_args!("store {}", store.describe()))?;
                out.line(format_args!(
                    "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  description",
                    "tag", "max_id (next ID)", "step", "updated", "ids_left"
                ))?;
                for t in &tags {
                    out.line(format_args!(
                        "{:<24}  {:>20}  {:>10}  {:<23}  {:>20}  {}",
                        t.tag,
                        t.max_id,
                        t.step,
                        when(t.updated_ms),
                        left(t.max_id),
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
