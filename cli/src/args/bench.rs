//! `bench`'s options, and which of them apply to which pattern.

use super::{LayoutArgs, WorkerArgs};
use crate::pattern::Pattern;
use clap::builder::NonEmptyStringValueParser;
use clap::{Args, ValueEnum};

/// The options of `bench`.
#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Which generator makes the IDs.
    #[arg(long, value_enum, default_value_t = BenchGenerator::Cached)]
    pub(crate) generator: BenchGenerator,
    /// How the generators are used: single, alternate:N with N from 2 to 64 (e.g.
    /// --pattern alternate:4), churn or light.
    ///
    /// single: one generator, every thread flat out.
    ///
    /// alternate:N: N generators, each thread calling them in turn (0, 1, ..., N-1, 0,
    /// ...), flat out. Their worker IDs are consecutive from --worker-id, or N rows of the
    /// registry.
    ///
    /// churn: short-lived threads that take one ID each and exit, --threads at a time,
    /// until --count threads have run or --seconds are up.
    ///
    /// light: --threads threads (default 400) each taking one ID every --interval-ms, for
    /// --seconds.
    #[arg(long, default_value = "single", value_name = "PATTERN", value_parser = parse_pattern)]
    pub(crate) pattern: Pattern,
    /// Threads taking IDs at once, 1 to 1024 (churn: threads started together in one
    /// wave) [default: 1; 400 for light]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) threads: Option<u16>,
    /// How long to run, in seconds (more than 0, at most 86400) [default: 5; with
    /// --scheme, 1 for each thread count]
    #[arg(long)]
    pub(crate) seconds: Option<f64>,
    /// single and alternate only: run this many seconds first, unmeasured, so the
    /// padder has sized its fills to the load (0 to 60; the report gives the warm-up's
    /// rejected takes apart) [default: 1]
    #[arg(long, value_name = "SECONDS", value_parser = parse_warmup)]
    pub(crate) warmup: Option<f64>,
    /// churn only: the most short-lived threads to run, 1 to 10000000 [default: 20000]
    #[arg(long, value_name = "THREADS", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) count: Option<u64>,
    /// light only: each thread's time between two IDs, in milliseconds, 1 to 60000
    /// [default: 250]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) interval_ms: Option<u64>,
    /// IDs per call: 1 takes them one at a time, more takes batches (cached generator,
    /// single and alternate only).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) batch: u32,
    /// --generator segment: the tag to take IDs of (alternate:N uses TAG-0 to TAG-N-1), in
    /// the store of --store (default: the embedded store). A name starting uidgen-bench is
    /// the bench's own, created at 1 with step 1000 if missing; any other tag must exist.
    /// [default: uidgen-bench]
    #[arg(long, value_parser = NonEmptyStringValueParser::new())]
    pub(crate) tag: Option<String>,
    /// --generator segment: the largest range to take at once, 1 to 34359738352
    /// [default: 1000000]
    #[arg(long, value_name = "N")]
    pub(crate) max_step: Option<u64>,
    /// --generator segment: fetch a range only when the last is used up (Leaf without
    /// its second buffer), to see the stall at each range boundary.
    #[arg(long)]
    pub(crate) no_prefetch: bool,
    /// Skip the duplicate check (it keeps about 16 bytes per run of consecutive IDs).
    #[arg(long)]
    pub(crate) no_check: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Measure an ID scheme of the literature instead of a generator: NAME is one of
    /// --scheme list's (UUID, ULID, ObjectId, snowflake, auto-increment, Flickr's ticket
    /// servers, Redis INCR, Instagram's, ZooKeeper, uidgen's own, Leaf's and Tinyid's
    /// routes). It runs at 1, 2 and 8 threads (or --threads), each thread with a
    /// connection of its own, checks every ID unique, and measures a restart. Its server,
    /// if it needs one, is --store (with --second-store for a two-server scheme).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["pattern", "generator", "batch", "no_check"])]
    pub(crate) scheme: Option<String>,
    /// --scheme: the second server of a two-server scheme (mysql-auto-increment-2,
    /// flickr-ticket-2).
    #[arg(long, value_name = "URL", requires = "scheme")]
    pub(crate) second_store: Option<String>,
    /// --scheme: a shell command that restarts the scheme's store and returns once it
    /// answers, run between two runs of --restart-seconds; the IDs after it are looked up
    /// among those before. Without it an in-process scheme is restarted by making its
    /// generator anew, and a store's restart is not measured.
    #[arg(long, value_name = "COMMAND", requires = "scheme")]
    pub(crate) restart_with: Option<String>,
    /// --scheme: each of the two runs around the restart, in seconds (more than 0, at
    /// most 3600) [default: 0.5]
    #[arg(long, value_name = "SECONDS", requires = "scheme")]
    pub(crate) restart_seconds: Option<f64>,
    #[command(flatten)]
    pub(crate) worker: WorkerArgs,
    #[command(flatten)]
    pub(crate) layout: LayoutArgs,
}

impl BenchArgs {
    /// Threads of `light` when --threads is not given.
    pub(crate) const LIGHT_THREADS: u16 = 400;
    /// Short-lived threads of `churn` when --count is not given.
    pub(crate) const CHURN_COUNT: u64 = 20_000;
    /// Time between two IDs of a `light` thread when --interval-ms is not given.
    pub(crate) const INTERVAL_MS: u64 = 250;
    /// Unmeasured seconds before a flat-out run when --warmup is not given.
    pub(crate) const WARMUP_SECS: f64 = 1.0;

    /// An option given for a pattern it does not apply to (clap cannot see that alone).
    pub(crate) fn misplaced_option(&self) -> Option<String> {
        let pattern = self.pattern;
        let wrong = |option: &str, applies_to: &str| {
            format!("{option} applies only to {applies_to}, not to --pattern {pattern}")
        };
        if self.count.is_some() && pattern != Pattern::Churn {
            return Some(wrong("--count", "--pattern churn"));
        }
        if self.warmup.is_some() && matches!(pattern, Pattern::Churn | Pattern::Light) {
            return Some(wrong("--warmup", "--pattern single and alternate:N"));
        }
        if self.interval_ms.is_some() && pattern != Pattern::Light {
            return Some(wrong("--interval-ms", "--pattern light"));
        }
        if self.batch > 1 && matches!(pattern, Pattern::Churn | Pattern::Light) {
            return Some(wrong("--batch above 1", "--pattern single and alternate:N"));
        }
        if self.scheme.is_some() {
            for (given, option) in [
                (self.warmup.is_some(), "--warmup"),
                (self.count.is_some(), "--count"),
                (self.interval_ms.is_some(), "--interval-ms"),
                (self.max_step.is_some(), "--max-step"),
                (self.no_prefetch, "--no-prefetch"),
            ] {
                if given {
                    return Some(format!("{option} does not apply to --scheme"));
                }
            }
            return None;
        }
        if self.generator != BenchGenerator::Segment {
            for (given, option) in [
                (self.tag.is_some(), "--tag"),
                (self.max_step.is_some(), "--max-step"),
                (self.no_prefetch, "--no-prefetch"),
            ] {
                if given {
                    return Some(format!("{option} applies only to --generator segment"));
                }
            }
        }
        None
    }
}

fn parse_warmup(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if (0.0..=60.0).contains(&secs) => Ok(secs),
        _ => Err(format!("expected seconds from 0 to 60, got {text:?}")),
    }
}

/// Which generator makes the IDs.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchGenerator {
    /// Computes each ID from the clock; at most one tick's sequence per tick.
    Default,
    /// Hands IDs out from a ring a padding thread keeps full, borrowing future ticks for large runs.
    Cached,
    /// Segment mode: dense IDs of a tag (--tag), from ranges of a counter in --store.
    Segment,
    /// Not a generator: one AtomicU64::fetch_add shared by the threads, the baseline to
    /// read the others' figures (the slowest call above all) against.
    FetchAdd,
}

fn parse_pattern(text: &str) -> Result<Pattern, String> {
    text.parse()
}
