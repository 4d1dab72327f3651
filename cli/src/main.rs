//! `uidgen`: generate, parse and inspect IDs from the command line.

mod bench;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use uidgen::{
    BitsAllocator, CachedUidGenerator, Clock, ConfigError, DefaultUidGenerator,
    EmbeddedWorkerIdAssigner, FixedWorkerId, LayoutBuilder, Preset, SystemClock, TimeUnit,
    UidGenerator, WorkerAssignment, WorkerIdAssigner,
};

#[derive(Parser)]
#[command(name = "uidgen", version, about = "Unique, time-ordered 64-bit IDs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print new IDs, one a line.
    Next {
        /// How many IDs.
        #[arg(short = 'n', long = "count", default_value_t = 1)]
        count: u64,
        /// `cached` hands IDs out from the ring, borrowing future ticks for large N;
        /// `default` computes each from the clock (one tick's sequence per tick).
        #[arg(long, value_enum, default_value_t = GeneratorKind::Cached)]
        generator: GeneratorKind,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Assign a worker ID for this launch and show it and where it came from.
    Worker {
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Take IDs apart: one JSON object a line, as UidGenerator's parseUID.
    Parse {
        /// The IDs, in decimal.
        #[arg(required = true, allow_hyphen_values = true)]
        uids: Vec<String>,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Measure IDs/s, sampled latency, rejected takes and duplicates on this machine.
    Bench {
        #[arg(long, value_enum, default_value_t = GeneratorKind::Cached)]
        generator: GeneratorKind,
        /// Threads taking IDs at once.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: u16,
        /// How long to run.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// IDs per call: 1 for `next_uid`, more for `next_uids` (cached only).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        batch: u32,
        /// Skip the duplicate check (it keeps about 16 bytes per run of consecutive IDs).
        #[arg(long)]
        no_check: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        layout: LayoutArgs,
    },
    /// Show the layout, its capacity and when it runs out.
    Layout {
        #[command(flatten)]
        layout: LayoutArgs,
    },
}

/// Where the worker ID comes from: `--worker-id`, else MySQL, else the embedded registry.
#[derive(Args)]
struct WorkerArgs {
    /// Use this worker ID instead of a registry. It must not be in use by another process,
    /// nor by one that ran within the ticks it borrowed.
    #[arg(long)]
    worker_id: Option<u64>,
    /// Take the worker ID from WORKER_NODE on MySQL/MariaDB
    /// (mysql://user[:password]@host[:port]/db; needs the `mysql` feature).
    #[arg(long, env = "UIDGEN_MYSQL_URL", hide_env_values = true)]
    mysql_url: Option<String>,
    /// With --mysql-url: create WORKER_NODE if it does not exist.
    #[arg(long)]
    create_table: bool,
    /// The embedded registry's SQLite file (default: ~/.local/share/uidgen/workers.sqlite3).
    #[arg(long, env = "UIDGEN_WORKER_DB")]
    worker_db: Option<std::path::PathBuf>,
}

impl WorkerArgs {
    fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, AnyError> {
        if let Some(id) = self.worker_id {
            return Ok(FixedWorkerId(id).assign_worker_id(bits)?);
        }
        if let Some(url) = self.mysql_url.as_deref().filter(|u| !u.is_empty()) {
            return assign_from_mysql(url, self.create_table, bits);
        }
        let assigner = match &self.worker_db {
            Some(path) => EmbeddedWorkerIdAssigner::new(path),
            None => EmbeddedWorkerIdAssigner::at_default_path()?,
        };
        Ok(assigner.assign_worker_id(bits)?)
    }
}

#[cfg(feature = "mysql")]
fn assign_from_mysql(
    url: &str,
    create_table: bool,
    bits: &BitsAllocator,
) -> Result<WorkerAssignment, AnyError> {
    let assigner = uidgen::MySqlWorkerIdAssigner::new(url)?.create_table(create_table);
    Ok(assigner.assign_worker_id(bits)?)
}

#[cfg(not(feature = "mysql"))]
fn assign_from_mysql(_: &str, _: bool, _: &BitsAllocator) -> Result<WorkerAssignment, AnyError> {
    Err(
        "this uidgen was built without MySQL support: rebuild with `--features mysql` \
         (or unset UIDGEN_MYSQL_URL to use the embedded registry)"
            .into(),
    )
}

#[derive(Clone, Copy, ValueEnum)]
enum GeneratorKind {
    Default,
    Cached,
}

#[derive(Args)]
struct LayoutArgs {
    /// A preset (default, uidgenerator, uidgenerator-readme, snowflake, instagram) or
    /// bits as TIME/WORKER/SEQ, e.g. 29/21/13.
    #[arg(long, default_value = "default")]
    layout: String,
    /// Tick length: s or ms (default: the preset's; seconds for TIME/WORKER/SEQ).
    #[arg(long, value_parser = parse_unit)]
    unit: Option<TimeUnit>,
    /// Epoch as a UTC date (YYYY-MM-DD) or RFC 3339 instant (default: the preset's).
    #[arg(long)]
    epoch: Option<String>,
}

fn parse_unit(s: &str) -> Result<TimeUnit, String> {
    match s {
        "s" | "sec" | "seconds" => Ok(TimeUnit::Seconds),
        "ms" | "millis" | "milliseconds" => Ok(TimeUnit::Milliseconds),
        other => Err(format!("unit {other:?} is not one of: s, ms")),
    }
}

impl LayoutArgs {
    fn builder(&self) -> Result<LayoutBuilder, ConfigError> {
        let mut builder = match parse_bits(&self.layout) {
            Some(bits) => {
                let (t, w, s) = bits?;
                Preset::Default.builder().bits(t, w, s)
            }
            None => self.layout.parse::<Preset>()?.builder(),
        };
        if let Some(unit) = self.unit {
            builder = builder.unit(unit);
        }
        if let Some(epoch) = &self.epoch {
            builder = builder.epoch(epoch);
        }
        Ok(builder)
    }
}

/// `Some` when `text` looks like TIME/WORKER/SEQ.
fn parse_bits(text: &str) -> Option<Result<(u32, u32, u32), ConfigError>> {
    let parts: Vec<&str> = text.split('/').collect();
    if parts.len() != 3 {
        return None;
    }
    let numbers: Result<Vec<u32>, _> = parts.iter().map(|p| p.trim().parse::<u32>()).collect();
    Some(match numbers {
        Ok(n) => Ok((n[0], n[1], n[2])),
        Err(e) => Err(ConfigError::OutOfRange {
            field: "layout",
            value: text.to_owned(),
            limit: format!("TIME/WORKER/SEQ as three whole numbers adding up to 63 ({e})"),
        }),
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("uidgen: {err}");
            ExitCode::FAILURE
        }
    }
}

type AnyError = Box<dyn std::error::Error>;

fn run(command: Command) -> Result<ExitCode, AnyError> {
    match command {
        Command::Next {
            count,
            generator,
            worker,
            layout,
        } => {
            let bits = layout.builder()?.build()?;
            let worker_id = worker.assign(&bits)?.worker_id;
            let generator: Box<dyn UidGenerator> = match generator {
                GeneratorKind::Default => Box::new(DefaultUidGenerator::new(bits, worker_id)?),
                GeneratorKind::Cached => Box::new(CachedUidGenerator::new(bits, worker_id)?),
            };
            let mut out = BufWriter::new(io::stdout().lock());
            for _ in 0..count {
                writeln!(out, "{}", generator.next_uid()?)?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Parse { uids, layout } => {
            // Old IDs stay readable after their layout has run out.
            let bits = layout.builder()?.build_unchecked_time()?;
            let mut out = BufWriter::new(io::stdout().lock());
            let mut failed = false;
            for uid in &uids {
                match bits.parse_str(uid) {
                    Ok(parts) => writeln!(out, "{parts}")?,
                    Err(err) => {
                        out.flush()?;
                        eprintln!("uidgen: argument {uid:?}: {err}");
                        failed = true;
                    }
                }
            }
            out.flush()?;
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Worker { worker, layout } => {
            let bits = layout.builder()?.build()?;
            let assigned = worker.assign(&bits)?;
            println!("worker_id  {}", assigned.worker_id);
            println!("from       {}", assigned.source);
            println!("layout     {bits} (max_worker_id {})", bits.max_worker_id());
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            generator,
            threads,
            seconds,
            batch,
            no_check,
            json,
            worker,
            layout,
        } => {
            if !(seconds > 0.0 && seconds <= 86_400.0) {
                return Err(format!(
                    "--seconds {seconds} is out of range: more than 0, at most 86400"
                )
                .into());
            }
            if batch > 1 && matches!(generator, GeneratorKind::Default) {
                return Err("--batch above 1 needs --generator cached (next_uids)".into());
            }
            let bits = layout.builder()?.build()?;
            let worker_id = worker.assign(&bits)?.worker_id;
            let options = bench::BenchOptions {
                threads: usize::from(threads),
                duration: std::time::Duration::from_secs_f64(seconds),
                batch: batch as usize,
                check: !no_check,
            };
            let total_ms = options.duration.as_millis() as u64;
            let progress = indicatif::ProgressBar::new(total_ms).with_style(
                indicatif::ProgressStyle::with_template("{bar:40} {elapsed}/{duration} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            let report = match generator {
                GeneratorKind::Cached => {
                    let cached = CachedUidGenerator::new(bits, worker_id)?;
                    bench::run("cached", &cached, Some(&cached), &options, &progress)
                }
                GeneratorKind::Default => {
                    let default = DefaultUidGenerator::new(bits, worker_id)?;
                    bench::run("default", &default, None, &options, &progress)
                }
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Layout { layout } => {
            let bits = layout.builder()?.build_unchecked_time()?;
            print!("{}", describe(&bits, SystemClock.now_millis()));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn describe(bits: &BitsAllocator, now_millis: u64) -> String {
    const YEAR_MS: f64 = 365.25 * 86_400_000.0;
    let unit = match bits.unit() {
        TimeUnit::Seconds => "1 s",
        TimeUnit::Milliseconds => "1 ms",
    };
    let end = bits.end_millis();
    let status = match bits.check_alive_at(now_millis) {
        Ok(()) => format!("{:.1} years from now", (end - now_millis) as f64 / YEAR_MS),
        Err(err) => format!("not usable now: {err}"),
    };
    format!(
        "layout         {bits}\n\
         sign bit       1 bit, always 0 (IDs are positive as i64)\n\
         time bits      {} (ticks of {unit}, max delta {})\n\
         worker bits    {} ({} worker IDs, 0..={})\n\
         sequence bits  {} ({} IDs per tick per worker)\n\
         lifetime       {:.1} years from the epoch\n\
         runs out       {} UTC ({status})\n",
        bits.time_bits(),
        bits.max_delta(),
        bits.worker_bits(),
        bits.max_worker_id() + 1,
        bits.max_worker_id(),
        bits.seq_bits(),
        bits.max_sequence() + 1,
        bits.lifetime().as_millis() as f64 / YEAR_MS,
        bits.format_instant(end),
    )
}
