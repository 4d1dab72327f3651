//! `uidgen bench --scheme NAME`: runs one scheme of `crate::schemes` and prints what it
//! measured (a table, or JSON with --json); `--scheme list` lists them. A run with a
//! duplicate fails.

use super::{segment_generators, time_based};
use crate::args::BenchArgs;
use crate::output::{Failure, Lines};
use crate::schemes::report::ns;
use crate::schemes::result::SchemeResult;
use crate::schemes::{self, Client, Needs, Place, Plan, Scheme};
use crate::source::{Source, StoreChoice};
use crate::{Env, SUCCESS};
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use uidgen::IdSource;

/// Thread counts a scheme runs at unless --threads names one.
const THREADS: [usize; 3] = [1, 2, 8];

pub(crate) fn run(
    args: &BenchArgs,
    name: &str,
    env: Env,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let mut out = Lines::new(stdout);
    if name == "list" {
        out.text(&list())?;
        out.flush()?;
        return Ok(SUCCESS);
    }
    let entry = schemes::find(name).map_err(Failure::msg)?;
    let seconds = |given: Option<f64>, default: f64, option: &str, max: f64| {
        let secs = given.unwrap_or(default);
        if secs > 0.0 && secs <= max {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(Failure::msg(format!(
                "{option} {secs} is out of range: more than 0, at most {max}"
            )))
        }
    };
    let mut stores: Vec<String> = Vec::new();
    if entry.stores > 0 {
        stores.extend(args.worker.store.clone());
        stores.extend(args.second_store.clone());
        if stores.len() != entry.stores {
            return Err(Failure::msg(format!(
                "--scheme {name} takes {} ({}): give {}",
                if entry.stores == 2 {
                    "two servers"
                } else {
                    "one server"
                },
                entry.needs.words(),
                if entry.stores == 2 {
                    "--store URL and --second-store URL"
                } else {
                    "--store URL, and no --second-store"
                }
            )));
        }
    } else if args.second_store.is_some() {
        return Err(Failure::msg(format!(
            "--second-store applies only to two-server schemes, not to --scheme {name}"
        )));
    } else if entry.needs == Needs::Nothing && args.worker.store.is_some() {
        return Err(Failure::msg(format!(
            "--store does not apply to --scheme {name}: it runs in-process, on no store"
        )));
    }
    let plan = Plan {
        threads: args
            .threads
            .map_or(THREADS.to_vec(), |t| vec![usize::from(t)]),
        duration: seconds(args.seconds, 1.0, "--seconds", 86_400.0)?,
        restart_duration: seconds(args.restart_seconds, 0.5, "--restart-seconds", 3_600.0)?,
        restart_with: args.restart_with.clone(),
        // uidgen's own schemes name the store their worker IDs or segments are on.
        stores: if entry.needs == Needs::UidgenStore {
            vec![args
                .worker
                .store
                .clone()
                .unwrap_or_else(|| "the embedded store".to_owned())]
        } else {
            stores.clone()
        },
    };
    let tag = args.tag.as_deref().unwrap_or(super::BENCH_TAG);
    let open: Box<dyn Fn() -> Result<Box<dyn Scheme>, String>> = match (entry.open, entry.name) {
        (Some(open), _) => {
            let place_stores = stores.clone();
            let tag = tag.to_owned();
            Box::new(move || {
                open(&Place {
                    stores: &place_stores,
                    tag: &tag,
                })
            })
        }
        (None, "uidgen-ring") => {
            let source = Source::from_args(&args.worker, env)?;
            Box::new(move || {
                let all = time_based(args, &source, 1, |bits, taken| {
                    super::super::cached_generator(bits, taken, None)
                })
                .map_err(words)?;
                Ok(Box::new(Generator(Arc::new(all))) as Box<dyn Scheme>)
            })
        }
        (None, _) => {
            let store = StoreChoice::for_segments(&args.worker, env)?;
            Box::new(move || {
                let (all, _) = segment_generators(args, &store, 1).map_err(words)?;
                Ok(Box::new(Generator(Arc::new(all))) as Box<dyn Scheme>)
            })
        }
    };
    let result = schemes::measure(&entry, &plan, &*open).map_err(Failure::msg)?;
    if args.json {
        out.text(&serde_json::to_string_pretty(&result)?)?;
    } else {
        out.text(&table(&result))?;
    }
    out.flush()?;
    let duplicates: u64 = result.runs.iter().map(|r| r.duplicates).sum();
    if duplicates > 0 {
        return Err(Failure::msg(format!(
            "--scheme {name} handed out {duplicates} duplicate ID(s) within a run"
        )));
    }
    Ok(SUCCESS)
}

/// A failure of uidgen's own, in words with its causes.
fn words(failure: Failure) -> String {
    match failure {
        Failure::Error(e) => crate::output::chain(&*e)
            .trim_start_matches("uidgen: ")
            .to_owned(),
        other => format!("{other:?}"),
    }
}

/// uidgen's generators, every thread on the one generator (as a service shares one).
struct Generator<G>(Arc<Vec<G>>);

impl<G: IdSource + Send + Sync + 'static> Scheme for Generator<G> {
    fn client(&self) -> Result<Box<dyn Client>, String> {
        Ok(Box::new(Generator(Arc::clone(&self.0))))
    }
}

impl<G: IdSource + Send + Sync + 'static> Client for Generator<G> {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), String> {
        let id = self.0[0].next_id().map_err(|e| e.to_string())?;
        out.push(u128::from(id));
        Ok(())
    }
}

/// `--scheme list`: each scheme's name, what it needs and what it is.
fn list() -> String {
    let mut text = String::new();
    for entry in schemes::all() {
        let _ = writeln!(
            text,
            "{:<24} {:<38} {}",
            entry.name,
            entry.needs.words(),
            entry.title
        );
    }
    text
}

/// The report in words: a line per thread count, then order and restart.
fn table(r: &SchemeResult) -> String {
    let mut text = format!("{} ({}): {}\n", r.scheme, r.needs, r.title);
    for store in &r.stores {
        let _ = writeln!(text, "store: {store}");
    }
    let _ = writeln!(
        text,
        "{:>7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}",
        "threads", "IDs/s", "p50", "p99", "p99.9", "max", "errors", "duplicates"
    );
    for run in &r.runs {
        let _ = writeln!(
            text,
            "{:>7} {:>12.0} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10}",
            run.threads,
            run.ids_per_sec,
            ns(run.latency.p50_ns),
            ns(run.latency.p99_ns),
            ns(run.latency.p999_ns),
            ns(run.latency.max_ns),
            run.errors,
            run.duplicates
        );
    }
    let _ = writeln!(
        text,
        "bytes per ID: {}; IDs a call: {}; sorts by time: {} ({} of {} consecutive IDs rose)",
        r.bytes_per_id,
        r.ids_per_call,
        if r.order.sorts_by_time() { "yes" } else { "no" },
        r.order.rising,
        r.order.pairs
    );
    let _ = writeln!(
        text,
        "restart ({}): {} IDs before, {} after, {} repeated; {}",
        r.restart.what, r.restart.before, r.restart.after, r.restart.repeats, r.restart.note
    );
    text
}
