//! `uidgen bench`: throughput, the latency of every call (an HDR histogram), rejected
//! takes, ring slots per ID, borrowed time and an exact duplicate check, on the user's own
//! machine, for four ways of using generators ([`Pattern`]).
//!
//! One idea a file: `options` holds what a run is asked to do, `patterns` makes the calls
//! of each usage pattern, every thread records
//! them through one `recorder`, `report` turns the recorders and the rings' counters into
//! the report, and `generators` holds what is measured. This file is the command: its
//! options, the generators it builds, and the report it prints.

mod generators;
mod options;
mod patterns;
mod recorder;
mod report;
pub(crate) mod schemes;

use super::{cached_generator, default_generator};
use crate::args::{BenchArgs, BenchGenerator};
use crate::output::{Failure, Lines};
use crate::pattern::Pattern;
use crate::source::{Source, StoreChoice, Taken};
use crate::{Env, SUCCESS};
use generators::{Generators, SharedCounter};
use options::BenchOptions;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use uidgen::{BitsAllocator, SegmentGenerator, SegmentStore};

/// Where a bench's IDs come from: `--generator`, with its worker IDs or store.
pub(crate) enum Supply {
    /// The default generator, on worker IDs from this source.
    Default(Source),
    /// The cached generator, on worker IDs from this source.
    Cached(Source),
    /// Segment generators, on counters in this store.
    Segment(StoreChoice),
    /// The baseline: no worker IDs, no store.
    FetchAdd,
}

impl Supply {
    /// Reads the worker options and the environment `--generator` needs (none for the
    /// baseline, whose worker options go unread).
    pub(crate) fn choose(args: &BenchArgs, env: Env) -> Result<Self, Failure> {
        Ok(match args.generator {
            BenchGenerator::Default => Supply::Default(Source::from_args(&args.worker, env)?),
            BenchGenerator::Cached => Supply::Cached(Source::from_args(&args.worker, env)?),
            BenchGenerator::Segment => {
                Supply::Segment(StoreChoice::for_segments(&args.worker, env)?)
            }
            BenchGenerator::FetchAdd => Supply::FetchAdd,
        })
    }
}

/// The run's settings from the options, each default filled in; refuses values out of
/// range.
pub(crate) fn options(args: &BenchArgs) -> Result<BenchOptions, Failure> {
    let seconds = args.seconds.unwrap_or(5.0);
    if !(seconds > 0.0 && seconds <= 86_400.0) {
        return Err(Failure::msg(format!(
            "--seconds {seconds} is out of range: more than 0, at most 86400"
        )));
    }
    if args.batch > 1 && args.generator == BenchGenerator::Default {
        return Err(Failure::msg(
            "--batch above 1 needs --generator cached (the default generator takes \
             IDs one at a time)",
        ));
    }
    let default_threads = match args.pattern {
        Pattern::Light => BenchArgs::LIGHT_THREADS,
        _ => 1,
    };
    Ok(BenchOptions {
        pattern: args.pattern,
        threads: usize::from(args.threads.unwrap_or(default_threads)),
        duration: Duration::from_secs_f64(seconds),
        batch: args.batch as usize,
        check: !args.no_check,
        count: args.count.unwrap_or(BenchArgs::CHURN_COUNT),
        warmup: match args.pattern {
            Pattern::Single | Pattern::Alternate(_) => {
                Duration::from_secs_f64(args.warmup.unwrap_or(BenchArgs::WARMUP_SECS))
            }
            Pattern::Churn | Pattern::Light => Duration::ZERO,
        },
        interval: Duration::from_millis(args.interval_ms.unwrap_or(BenchArgs::INTERVAL_MS)),
    })
}

/// Builds the generators of `supply`, measures them and prints the report.
pub(crate) fn run(
    args: &BenchArgs,
    options: &BenchOptions,
    supply: Supply,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let total_ms = options.duration.as_millis() as u64;
    // indicatif draws only when stderr is a terminal, and never panics on a failed draw.
    let progress = indicatif::ProgressBar::new(total_ms).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {elapsed}/{duration} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let measure = |name: &str, generators: &Generators<'_>| {
        patterns::measure(name, generators, options, &progress)
    };
    let generators = args.pattern.generators();
    let report = match supply {
        Supply::Segment(store) => {
            let (all, store) = segment_generators(args, &store, generators)?;
            let mut report = measure("segment", &Generators::without_layout(&all));
            report.store = Some(store);
            report
        }
        Supply::Cached(source) => {
            let all = time_based(args, &source, generators, |bits, taken| {
                cached_generator(bits, taken, None)
            })?;
            measure("cached", &Generators::cached(&all))
        }
        Supply::FetchAdd => {
            // Counters apart by 2^48, as generators with distinct worker IDs are.
            let all: Vec<_> = (0..generators as u64)
                .map(|i| SharedCounter::starting_at(i << 48))
                .collect();
            measure("fetch-add", &Generators::without_layout(&all))
        }
        Supply::Default(source) => {
            let all = time_based(args, &source, generators, |bits, taken| {
                default_generator(
                    bits,
                    taken,
                    uidgen::RollbackStrategy::Fail,
                    Vec::new(),
                    None,
                )
            })?;
            measure("default", &Generators::without_ring(&all))
        }
    };
    let mut out = Lines::new(stdout);
    if args.json {
        out.text(&serde_json::to_string_pretty(&report)?)?;
    } else {
        out.text(&report.to_string())?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

/// The generators of a time-based bench: `count` worker IDs from `source` on the layout
/// of `--layout`, each made a generator by `build`.
fn time_based<G>(
    args: &BenchArgs,
    source: &Source,
    count: usize,
    build: fn(BitsAllocator, Taken) -> Result<G, Failure>,
) -> Result<Vec<G>, Failure> {
    let bits = args.layout.builder()?.build()?;
    source
        .take_many(&bits, count)?
        .into_iter()
        .map(|taken| build(bits, taken))
        .collect()
}

/// The tag a segment bench takes IDs of unless told, and the start of every name of the
/// bench's own tags.
const BENCH_TAG: &str = "uidgen-bench";

/// The generators of a segment bench: `--tag`, or TAG-0 to TAG-N-1 for alternate:N, in
/// `store`, the bench's own tags created with step 1000 if missing; and the store's
/// description.
fn segment_generators(
    args: &BenchArgs,
    store: &StoreChoice,
    generators: usize,
) -> Result<(Vec<SegmentGenerator>, String), Failure> {
    let store: Arc<dyn SegmentStore> = Arc::from(store.open::<Box<dyn SegmentStore>>()?);
    let tag = args.tag.as_deref().unwrap_or(BENCH_TAG);
    let all = (0..generators)
        .map(|i| {
            let name = if generators == 1 {
                tag.to_owned()
            } else {
                format!("{tag}-{i}")
            };
            let mut builder =
                SegmentGenerator::builder(Arc::clone(&store), &name).prefetch(!args.no_prefetch);
            // The bench's own tags (their IDs are thrown away) are made at 1; a user's tag
            // is never made implicitly: a store that lost it would repeat its IDs.
            if name.starts_with(BENCH_TAG) {
                builder = builder.create_missing(1, 1000);
            }
            if let Some(max_step) = args.max_step {
                builder = builder.max_step(max_step);
            }
            Ok(builder.build()?)
        })
        .collect::<Result<_, Failure>>()?;
    Ok((all, store.describe()))
}
