//! The command line: subcommands and options, as clap reads them.
//!
//! Help texts are plain words (clap prints doc comments as they are, backticks included).
//! Environment variables are read in `source.rs`, not by clap, so that `run` can be given
//! an environment of its own and an empty variable counts as unset everywhere.

mod bench;
mod serve;

pub(crate) use bench::{BenchArgs, BenchGenerator};
pub(crate) use serve::ServeArgs;

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use uidgen::{ConfigError, IdFormat, LayoutBuilder, TimeUnit};

#[derive(Parser)]
#[command(
    name = "uidgen",
    version = crate::VERSION.as_str(),
    propagate_version = true,
    about = "Unique, time-ordered 64-bit IDs: make them, take them apart, inspect layouts",
    after_help = "Exit status: 0 on success (also when stdout is closed early, as by head), \
                  1 when something failed, 2 for a command line that cannot be read.\n\
                  Logs go to stderr: warnings by default, more with RUST_LOG (e.g. RUST_LOG=debug)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Print new IDs, one a line.
    Next {
        /// How many IDs (0 checks the settings and takes no worker ID).
        #[arg(short = 'n', long = "count", default_value_t = 1, value_name = "N")]
        count: u64,
        /// Which generator makes the IDs.
        #[arg(long, value_enum, default_value_t = GeneratorKind::Cached)]
        generator: GeneratorKind,
        /// What the default generator does when the clock steps back: fail (refuse until
        /// it catches up), wait:SECONDS (wait out a step back of at most that long),
        /// continue (go on from the last tick used), or spare:N (take N more worker IDs
        /// now, 1 to 8, and move to one whose mark is behind the clock). The cached
        /// generator always goes on from the last tick used.
        #[arg(long, value_name = "STRATEGY", default_value = "fail", value_parser = parse_rollback)]
        on_rollback: OnRollback,
        /// Print each ID taken apart, as parse prints it, one JSON object a line.
        #[arg(long)]
        json: bool,
        /// How each ID is written. hex, base62 and base32 are fixed width (16, 11 and 13
        /// characters, zeros in front), so they sort as the numbers do.
        #[arg(long, value_enum, default_value_t = FormatArg::Decimal, conflicts_with = "json")]
        format: FormatArg,
        /// Hand out no ID at or below this one (an old scheme's highest ID): refused at
        /// start when the first ID would be, naming uidgen migrate plan.
        #[arg(long, value_name = "ID")]
        id_floor: Option<u64>,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Take IDs apart: one JSON object a line, as UidGenerator's parseUID.
    Parse {
        /// The IDs, in any form next writes. None, or -, reads them from stdin (separated
        /// by white space). Put -- before IDs that start with a dash.
        #[arg(value_name = "ID", allow_negative_numbers = true)]
        uids: Vec<String>,
        /// Read every ID in this form. Default: each in the form it looks like: digits
        /// only are decimal; then 11 characters base62, 13 base32, 16 hex; then 0x... hex.
        /// Name the form when fixed-width IDs may be digits only (small IDs in hex).
        #[arg(long, value_enum)]
        format: Option<FormatArg>,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Lease a worker ID, show it and where it came from, and give it back; or, with
    /// list, show the store's leases, holders, time marks and expiry.
    Worker {
        /// list: show every worker ID the store knows.
        #[arg(value_name = "ACTION", value_parser = ["list"])]
        action: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Segment mode (Leaf's number segments): dense, increasing IDs per tag, taken a range
    /// at a time from a counter in a store.
    Segment {
        #[command(subcommand)]
        action: SegmentAction,
    },
    /// Look after a store: after a restore, a failover or a restart that lost data,
    /// store repair raises it past every ID handed out, so services can start again.
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Move from another ID scheme: plan a layout (or a segment start) whose every new ID
    /// sorts above the old scheme's highest, with the proof.
    Migrate {
        #[command(subcommand)]
        action: MigrateAction,
    },
    /// Show a layout, its capacity and when it runs out.
    Layout {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Measure IDs/s, the latency of every call, rejected takes, ring slots per ID and duplicates on this machine, in one of four usage patterns.
    Bench(BenchArgs),
    /// Run the ID service: Leaf's and Tinyid's routes, /v1 batches and ranges, /healthz,
    /// /readyz and /metrics over HTTP, until SIGTERM or SIGINT (then it gives every tag's
    /// unused range back and releases its worker ID). Settings come from --config, then
    /// UIDGEN_* variables, then these flags; tokens only from UIDGEN_TOKENS or a tokens
    /// file, never the command line.
    Serve(ServeArgs),
    /// Check a running service over HTTP: GET the URL; for 2xx print the status line and
    /// exit 0, otherwise exit 1 saying what it answered (a container health check where
    /// there is no curl).
    Probe {
        /// The URL, plain http:// (default: the readiness route on the default address).
        #[arg(default_value = "http://127.0.0.1:8080/readyz")]
        url: String,
        /// Give up after this many seconds (1 to 300).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
        timeout: u64,
    },
    /// Print a completion script for a shell (e.g. uidgen completions bash > /etc/bash_completion.d/uidgen).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// What `segment` does.
#[derive(Subcommand)]
pub(crate) enum SegmentAction {
    /// Print new IDs of a tag, one a line. The unused rest of the range goes back to the
    /// store at the end, so the next run goes on right after the last ID printed.
    Next {
        /// The tag (Leaf's biz_tag), 1 to 128 characters.
        #[arg(long, value_parser = NonEmptyStringValueParser::new())]
        tag: String,
        /// How many IDs.
        #[arg(short = 'n', long = "count", default_value_t = 1, value_name = "N")]
        count: u64,
        /// Removed (a take never creates a tag); refused with the reason.
        #[arg(long, hide = true, value_name = "STEP")]
        create_step: Option<String>,
        /// Print the generator's figures (ranges, step, runway) to stderr at the end.
        #[arg(long)]
        stats: bool,
        /// Hand out no ID at or below this one (an old scheme's highest ID): refused at
        /// start when the first ID would be, naming uidgen migrate plan.
        #[arg(long, value_name = "ID")]
        id_floor: Option<u64>,
        #[command(flatten)]
        store: SegmentStoreArgs,
    },
    /// Show every tag: its counter (the next ID anyone gets), base step, last change, the
    /// IDs left before the largest SQL BIGINT, and with --sample its rate and runway.
    List {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Read every tag twice, this many seconds apart (0.001 to 86400), to measure the
        /// rate at which processes take its IDs from the store, and show its runway: the
        /// IDs left at that rate. Without a rise the runway column says why: "idle" (the
        /// counter did not move), "went down" (a process gave its unused range back at
        /// shutdown, which hides the rate; or the store was set back, which the next
        /// fetch catches and repairs), "new" (created in the window);
        /// "-" without --sample; "between fetches" when the counter did not move but was
        /// last moved in the minute before (a service is likely handing out a range it
        /// holds: give --service to know). Ranges are taken in steps sized to last about
        /// 30 s (a generator's range_lifetime), so sample for longer than that.
        #[arg(long, value_name = "SECONDS", value_parser = parse_sample)]
        sample: Option<Duration>,
        /// A running uidgen serve (http://HOST:PORT) whose /metrics counts the IDs it
        /// handed out of each tag; with --sample, the IDs/s handed out across the
        /// services given (repeat for each service), beside the rate taken from the
        /// store.
        #[arg(long = "service", value_name = "URL", requires = "sample")]
        services: Vec<String>,
        #[command(flatten)]
        store: SegmentStoreArgs,
    },
    /// Create a tag (an existing one is left as it is, and said so).
    Create {
        /// The tag (Leaf's biz_tag), 1 to 128 characters.
        #[arg(long, value_parser = NonEmptyStringValueParser::new())]
        tag: String,
        /// The base step: the smallest range a generator takes (1 to 2147483647; the
        /// step grows with the rate, up to 1000000 by default).
        #[arg(long)]
        step: u64,
        /// The first ID to hand out.
        #[arg(long, default_value_t = 1)]
        start: u64,
        /// Free text stored with the tag.
        #[arg(long, default_value = "")]
        description: String,
        /// Refuse a start (or an existing tag's next ID) at or below this ID: an old
        /// scheme's highest (see uidgen migrate plan).
        #[arg(long, value_name = "ID")]
        id_floor: Option<u64>,
        /// Create it even below what this store or machine knows it handed out before
        /// (refused by default, naming what was handed out): only when those IDs are gone.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        store: SegmentStoreArgs,
    },
}

/// What `migrate` does.
#[derive(Subcommand)]
pub(crate) enum MigrateAction {
    /// From the old scheme and its highest ID (given, or read with MAX(column) from its
    /// table), choose a layout and epoch whose every ID from now on is above it (or, where
    /// nothing fits above, never equal to an old ID), and a segment start; show the proof
    /// and the flags, config keys and builder calls that apply it.
    Plan(PlanArgs),
    /// A Leaf snowflake fleet on ZooKeeper: list its servers' worker IDs, and hand them
    /// over to uidgen one at a time, each once its Leaf has stopped (needs a uidgen built
    /// with the zookeeper feature).
    #[command(name = "leaf-zk")]
    LeafZk(LeafZkArgs),
}

/// `migrate leaf-zk`'s options.
#[derive(Args)]
pub(crate) struct LeafZkArgs {
    /// The ensemble: zookeeper://h1:2181,h2:2181,h3:2181/PATH, PATH being where uidgen
    /// keeps its own nodes (the same URL, with ?leaf=NAME, is the --store of serve and
    /// next afterwards).
    #[arg(long, value_name = "URL", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) zookeeper: String,
    /// Leaf's leaf.name: its servers' nodes are under /snowflake/NAME/forever.
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) leaf_name: String,
    /// How long a node must stay unchanged for its Leaf to count as stopped (Leaf writes it
    /// every 3 s; at least 6). `take` watches the node this long before it hands over.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_silence)]
    pub(crate) silent_for: Duration,
    /// Print JSON: one object per line.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) action: LeafZkAction,
}

/// What `migrate leaf-zk` does.
#[derive(Subcommand)]
pub(crate) enum LeafZkAction {
    /// Every Leaf server's node: ip:port, worker ID, last timestamp, whether it still
    /// heartbeats, and whether uidgen has it.
    List,
    /// Hand one worker ID over to uidgen, once its Leaf has stopped heartbeating: its node
    /// is rewritten so that Leaf, started again on that ip:port once its cache file is
    /// deleted (the output names it), refuses to start, and uidgen's time mark for it is
    /// set above every ID that Leaf can have made.
    Take {
        /// The worker ID, or the Leaf's ip:port.
        #[arg(value_name = "WORKER_ID|IP:PORT")]
        which: String,
        /// How far a Leaf's clock may be ahead of this one's, added to the mark.
        #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_timeout)]
        skew_margin: Duration,
    },
}

fn parse_silence(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 3600).and_then(|d| {
        // uidgen::MIN_SILENCE, which exists only with the zookeeper feature.
        if d < Duration::from_secs(6) {
            Err(
                "at least 6 seconds: two of Leaf's heartbeats (it writes its node every 3 s)"
                    .into(),
            )
        } else {
            Ok(d)
        }
    })
}

/// `migrate plan`'s options.
#[derive(Args)]
pub(crate) struct PlanArgs {
    /// The old scheme: a preset (uidgenerator, uidgenerator-readme, snowflake or leaf or
    /// twitter, sonyflake, sonyflake-v2, instagram, default, js-safe), bits as
    /// TIME/WORKER/SEQ (with --from-unit and --from-epoch), or auto-increment.
    #[arg(long, value_name = "SCHEME")]
    pub(crate) from: String,
    /// The old tick length (s, ms or 10ms; default the preset's, s for bits). Bits
    /// written by hand put the worker ID above the sequence: for Sonyflake's order give
    /// --from sonyflake (with --from-epoch for another start time).
    #[arg(long, value_name = "UNIT", value_parser = parse_unit)]
    pub(crate) from_unit: Option<TimeUnit>,
    /// The old epoch (YYYY-MM-DD or RFC 3339; default the preset's, 2026-01-01 for bits).
    #[arg(long, value_name = "DATE")]
    pub(crate) from_epoch: Option<String>,
    /// The highest ID in use. Or read it with --db and --table.
    #[arg(long, value_name = "ID", conflicts_with = "db")]
    pub(crate) max_id: Option<u64>,
    /// The database holding the old IDs: a SQLite file, or a mysql:// (mariadb://) or
    /// postgres:// URL (the store URLs' forms).
    #[arg(long, value_name = "URL", requires = "table", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) db: Option<String>,
    /// The table holding the old IDs (schema.table allowed); repeat for several, the
    /// highest of all counts.
    #[arg(long, value_name = "TABLE", requires = "db")]
    pub(crate) table: Vec<String>,
    /// The ID column.
    #[arg(long, value_name = "COLUMN", default_value = "id")]
    pub(crate) column: String,
    /// The highest worker ID the old scheme used (for UidGenerator: MAX(ID) of
    /// WORKER_NODE): proves new IDs apart from old ones where nothing fits above.
    #[arg(long, value_name = "ID")]
    pub(crate) old_max_worker: Option<u64>,
    /// Worker IDs the new generator must hold at once (1 to 2^30).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub(crate) workers: u64,
    /// IDs a second each worker must make (1 to 2^40).
    #[arg(long, default_value_t = 1_000_000, value_name = "IDS")]
    pub(crate) rate: u64,
    /// Years the new layout must last from now (1 to 1000).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub(crate) years: u32,
    /// The tag the segment plan's commands name.
    #[arg(long, default_value = "TAG")]
    pub(crate) tag: String,
    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `store` does.
#[derive(Subcommand)]
pub(crate) enum StoreAction {
    /// After a restore (or any loss of data, once checked): raise every segment counter by
    /// --margin above itself and above every range end known (the store's records, this
    /// machine's memory), create again the tags known to be gone above what they handed
    /// out, start every worker ID's time mark at least --ahead past now, and give the
    /// store a new identity that replaces the old, so processes that refused it take from
    /// it again. Run it once, then start the services.
    Repair {
        /// How far above each counter to raise it (more than any range a process may
        /// still hold).
        #[arg(long, default_value_t = uidgen::REPAIR_MARGIN, value_name = "IDS")]
        margin: u64,
        /// The largest time any process borrowed ahead of the clock, in seconds (uidgen
        /// serve caps it at 5 s by default; raise it if a process ran with a larger cap or
        /// none): every lease starts at least this far past now.
        #[arg(long, default_value = "5", value_name = "SECONDS", value_parser = parse_sample)]
        ahead: Duration,
        #[command(flatten)]
        store: SegmentStoreArgs,
    },
}

impl SegmentAction {
    /// `--store`, if given.
    pub(crate) fn store(&self) -> Option<&str> {
        match self {
            SegmentAction::Next { store, .. }
            | SegmentAction::List { store, .. }
            | SegmentAction::Create { store, .. } => store.store.as_deref(),
        }
    }
}

/// Where segment counters are kept.
#[derive(Args)]
pub(crate) struct SegmentStoreArgs {
    /// A SQLite file (PATH, sqlite:PATH), or a mysql:// (mariadb://), postgres://, redis://
    /// (rediss://) or etcd:// (etcds://) URL; TLS by the URL's own parameters. Default: the embedded
    /// store, the same file as the worker-ID leases (UIDGEN_WORKER_DB, else
    /// uidgen/workers.sqlite3 in the user's data folder). A typo is refused.
    #[arg(long, value_name = "URL", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) store: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum GeneratorKind {
    /// Computes each ID from the clock; at most one tick's sequence per tick.
    Default,
    /// Hands IDs out from a ring a padding thread keeps full, borrowing future ticks for large runs.
    Cached,
}

/// A string form of IDs (the library's `IdFormat`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    /// Decimal digits, as UidGenerator writes them.
    Decimal,
    /// 16 lower-case hex digits (read in any case, or as 0x and 1 to 16 digits).
    Hex,
    /// 11 characters of 0-9, A-Z, a-z.
    Base62,
    /// 13 characters of Crockford's base32 (read in any case; O as 0, I and L as 1).
    Base32,
}

impl From<FormatArg> for IdFormat {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Decimal => IdFormat::Decimal,
            FormatArg::Hex => IdFormat::Hex,
            FormatArg::Base62 => IdFormat::Base62,
            FormatArg::Base32 => IdFormat::Base32,
        }
    }
}

/// Which generator `bench` measures.
/// Where the worker ID comes from: exactly one of a fixed ID, MySQL, or the embedded
/// registry (the default).
#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// Lease this worker ID rather than the lowest free one. It is refused while another
    /// process holds it, and starts above every tick an earlier holder used (its time
    /// mark in the store).
    #[arg(long, value_name = "ID")]
    pub(crate) worker_id: Option<u64>,
    /// Lease only worker IDs from FIRST to LAST (both included), such as 0-511: the share
    /// of one region or fleet, so that deployments with stores of their own never hold
    /// the same worker ID. Default: every worker ID the layout holds.
    #[arg(long, value_name = "FIRST-LAST", value_parser = parse_worker_ids)]
    pub(crate) worker_ids: Option<uidgen::WorkerIdRange>,
    /// Where worker-ID leases and time marks are kept: a SQLite file (PATH, sqlite:PATH;
    /// the default is the embedded store, see --worker-db), or a mysql:// (mariadb://),
    /// postgres://, redis:// (rediss://) or etcd:// (etcds://) URL; TLS by the URL's own
    /// parameters. A typo is refused.
    #[arg(long, value_name = "URL", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) store: Option<String>,
    /// How long a lease lasts unless renewed, in seconds (from 0.3; default 30): a run
    /// killed without a chance to release keeps its worker ID this long.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub(crate) lease_ttl: Option<Duration>,
    /// Take the worker ID from the WORKER_NODE table on MySQL or MariaDB:
    /// mysql://user[:password]@host[:port]/database. Also read from UIDGEN_MYSQL_URL.
    /// Needs a uidgen built with the mysql feature.
    #[arg(long, value_name = "URL", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) mysql_url: Option<String>,
    /// With a MySQL URL: create WORKER_NODE if it does not exist.
    #[arg(long)]
    pub(crate) create_table: bool,
    /// With a MySQL URL: the bound on each network step (resolving the host name,
    /// connecting, each statement), in seconds [default: 5].
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub(crate) mysql_timeout: Option<Duration>,
    /// The embedded store's SQLite file (leases and time marks). Also read from
    /// UIDGEN_WORKER_DB.
    /// Default: uidgen/workers.sqlite3 in the user's data folder (~/.local/share on Linux).
    #[arg(long, value_name = "FILE", value_parser = parse_path)]
    pub(crate) worker_db: Option<PathBuf>,
}

fn parse_worker_ids(text: &str) -> Result<uidgen::WorkerIdRange, String> {
    // clap names the flag and the value: only the library's limit is added.
    text.parse().map_err(|e| match e {
        uidgen::ConfigError::OutOfRange { limit, .. } => limit,
        other => other.to_string(),
    })
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 3600)
}

/// Seconds from 0.001 to `max`, as a user types them (fractions allowed).
fn parse_seconds(text: &str, max: u32) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if (0.001..=f64::from(max)).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("expected a number of seconds from 0.001 to {max}")),
    }
}

/// `next --on-rollback`: a library strategy, or spare worker IDs to take at start.
#[derive(Clone, Debug)]
pub(crate) enum OnRollback {
    Strategy(uidgen::RollbackStrategy),
    /// `SpareWorker` on this many worker IDs taken beside the main one.
    Spares(usize),
}

/// The most spare worker IDs `--on-rollback spare:N` takes.
pub(crate) const MAX_SPARES: usize = 8;

fn parse_rollback(text: &str) -> Result<OnRollback, String> {
    let strategy = |s| Ok(OnRollback::Strategy(s));
    match text {
        "fail" => strategy(uidgen::RollbackStrategy::Fail),
        "continue" => strategy(uidgen::RollbackStrategy::Continue),
        _ => {
            if let Some(seconds) = text.strip_prefix("wait:") {
                return strategy(uidgen::RollbackStrategy::Wait {
                    max: parse_seconds(seconds, 86_400)?,
                });
            }
            if let Some(count) = text.strip_prefix("spare:") {
                return match count.parse::<usize>() {
                    Ok(n) if (1..=MAX_SPARES).contains(&n) => Ok(OnRollback::Spares(n)),
                    _ => Err(format!(
                        "spare:{count}: expected a number of spare worker IDs from 1 to \
                         {MAX_SPARES}"
                    )),
                };
            }
            Err(format!(
                "{text:?} is not a strategy: fail, wait:SECONDS (up to 86400), continue or \
                 spare:N (1 to {MAX_SPARES})"
            ))
        }
    }
}

fn parse_sample(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 86_400)
}

fn parse_path(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        Err("expected a file path, got an empty one".into())
    } else {
        Ok(PathBuf::from(text))
    }
}

#[derive(Args)]
pub(crate) struct LayoutArgs {
    /// A preset (default, uidgenerator, uidgenerator-readme, snowflake or leaf, instagram,
    /// js-safe, sonyflake, sonyflake-v2) or bits as TIME/WORKER/SEQ adding up to 63, e.g.
    /// 29/21/13, or TIME/REGION/WORKER/SEQ with --region.
    #[arg(long, default_value = "default")]
    pub(crate) layout: String,
    /// Tick length: s, ms or 10ms (default: the preset's; seconds for bits).
    #[arg(long, value_parser = parse_unit)]
    pub(crate) unit: Option<TimeUnit>,
    /// Epoch as a UTC date (YYYY-MM-DD) or RFC 3339 instant (default: the preset's;
    /// 2026-01-01 for bits).
    #[arg(long)]
    pub(crate) epoch: Option<String>,
    /// The region every ID holds, with a TIME/REGION/WORKER/SEQ layout (default 0).
    #[arg(long, value_name = "N")]
    pub(crate) region: Option<u64>,
}

fn parse_unit(s: &str) -> Result<TimeUnit, String> {
    s.parse().map_err(|_| "expected s, ms or 10ms".to_owned())
}

impl LayoutArgs {
    pub(crate) fn builder(&self) -> Result<LayoutBuilder, ConfigError> {
        // Our own field name: it names the option.
        let option = |err: ConfigError| match err {
            ConfigError::OutOfRange {
                field,
                value,
                limit,
            } => ConfigError::OutOfRange {
                field: match field {
                    "layout" => "--layout",
                    "region" => "--region",
                    other => other,
                },
                value,
                limit,
            },
            other => other,
        };
        let mut builder = LayoutBuilder::parse(&self.layout).map_err(option)?;
        if let Some(unit) = self.unit {
            builder = builder.unit(unit);
        }
        if let Some(epoch) = &self.epoch {
            builder = builder.epoch(epoch);
        }
        if let Some(region) = self.region {
            builder = builder.region_value(region).map_err(option)?;
        }
        Ok(builder)
    }
}

/// User input for a message: quoted, and cut short when long.
pub(crate) fn shorten(text: &str) -> String {
    const MAX_CHARS: usize = 64;
    let chars = text.chars().count();
    if chars <= MAX_CHARS {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX_CHARS).collect();
        format!("{head:?}… ({chars} characters)")
    }
}
