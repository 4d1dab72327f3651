//! The `uidgen` command, as a library so that tests can run it in-process: [`run`] takes
//! the arguments, the environment and the three standard streams, and returns the exit
//! status. `main.rs` installs logging and calls it with the real ones.

mod args;
mod bench;
mod output;
mod redact;
mod segment;
mod words;
mod worker;

pub use redact::{Scrubbed, Secrets};

use args::{BenchArgs, BenchGenerator, Cli, Command, GeneratorKind, LayoutArgs, WorkerArgs};
use clap::{CommandFactory, Parser};
use output::{chain, report, Failure, Lines};
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::sync::Arc;
use uidgen::{
    BitsAllocator, CachedUidGenerator, Clock, DefaultUidGenerator, SystemClock, TimeUnit,
    UidGenerator,
};
use worker::{Source, Taken};

/// The environment, as a lookup: `std::env::var_os` in the binary, a map in tests.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// Exit status: done.
pub const SUCCESS: u8 = 0;
/// Exit status: something failed (and stderr says what).
pub const FAILURE: u8 = 1;
/// Exit status: the command line cannot be read (clap's usage errors).
pub const USAGE: u8 = 2;

/// Runs one command line (`args[0]` is the program name) and returns its exit status.
///
/// Nothing here panics on any input, and every write is checked: a closed stdout ends the
/// command quietly with status 0, any other write failure is an error message and 1.
/// Everything written to `stderr` has any password from `args` or `UIDGEN_MYSQL_URL`
/// replaced by `***`.
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    env: Env,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let args: Vec<OsString> = args.into_iter().collect();
    let mut stderr = Scrubbed::new(stderr, Arc::new(Secrets::find(&args, env)));
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => return clap_message(&err, stdout, &mut stderr),
    };
    match execute(cli.command, env, stdin, stdout, &mut stderr) {
        Ok(code) => code,
        Err(Failure::ClosedPipe) => SUCCESS,
        Err(Failure::Stdout(err)) => {
            report(
                &mut stderr,
                &format!("uidgen: cannot write to stdout: {err}"),
            );
            FAILURE
        }
        Err(Failure::Error(err)) => {
            report(&mut stderr, &chain(&*err));
            FAILURE
        }
    }
}

/// Help and version go to stdout with status 0; usage errors to stderr with status 2.
fn clap_message(err: &clap::Error, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    // Display without styles: plain text whatever the terminal.
    let text = err.render().to_string();
    if err.use_stderr() {
        report(stderr, text.trim_end());
        return err.exit_code().clamp(0, 255) as u8;
    }
    let mut out = Lines::new(stdout);
    match out.text(&text).and_then(|()| out.flush()) {
        Ok(()) | Err(Failure::ClosedPipe) => SUCCESS,
        Err(Failure::Stdout(e)) => {
            report(stderr, &format!("uidgen: cannot write to stdout: {e}"));
            FAILURE
        }
        Err(Failure::Error(e)) => {
            report(stderr, &chain(&*e));
            FAILURE
        }
    }
}

fn execute(
    command: Command,
    env: Env,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    match command {
        Command::Next {
            count,
            generator,
            json,
            worker,
            layout,
        } => next(count, generator, json, &worker, &layout, env, stdout),
        Command::Parse { uids, layout } => parse(&uids, &layout, stdin, stdout, stderr),
        Command::Worker {
            action,
            json,
            worker,
            layout,
        } => match action.as_deref() {
            Some("list") => list_workers(json, &worker, &layout, env, stdout),
            _ => show_worker(json, &worker, &layout, env, stdout),
        },
        Command::Segment { action } => segment::run(&action, env, stdout, stderr),
        Command::Layout { json, layout } => show_layout(json, &layout, stdout),
        Command::Bench(args) => bench(&args, env, stdout, stderr),
        Command::Completions { shell } => {
            // Into memory first: clap_complete panics if its writer fails.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "uidgen", &mut script);
            stdout.write_all(&script).map_err(Failure::stdout)?;
            stdout.flush().map_err(Failure::stdout)?;
            Ok(SUCCESS)
        }
    }
}

/// A usage error clap cannot find alone, said as clap says its own (status 2).
fn usage_error(
    subcommand: &str,
    message: &str,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let mut cli = Cli::command();
    // Built, so that the subcommand's usage line says `uidgen bench`.
    cli.build();
    let err = match cli.find_subcommand_mut(subcommand) {
        Some(command) => command.error(clap::error::ErrorKind::ArgumentConflict, message),
        None => cli.error(clap::error::ErrorKind::ArgumentConflict, message),
    };
    clap_message(&err, stdout, stderr)
}

fn bench(
    args: &BenchArgs,
    env: Env,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    if let Some(problem) = args.misplaced_option() {
        return Ok(usage_error("bench", &problem, stdout, stderr));
    }
    let seconds = args.seconds;
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
        bench::Pattern::Light => BenchArgs::LIGHT_THREADS,
        _ => 1,
    };
    let options = bench::BenchOptions {
        pattern: args.pattern,
        threads: usize::from(args.threads.unwrap_or(default_threads)),
        duration: std::time::Duration::from_secs_f64(seconds),
        batch: args.batch as usize,
        check: !args.no_check,
        count: args.count.unwrap_or(BenchArgs::CHURN_COUNT),
        warmup: match args.pattern {
            bench::Pattern::Single | bench::Pattern::Alternate(_) => {
                std::time::Duration::from_secs_f64(args.warmup.unwrap_or(BenchArgs::WARMUP_SECS))
            }
            bench::Pattern::Churn | bench::Pattern::Light => std::time::Duration::ZERO,
        },
        interval: std::time::Duration::from_millis(
            args.interval_ms.unwrap_or(BenchArgs::INTERVAL_MS),
        ),
    };
    let total_ms = options.duration.as_millis() as u64;
    // indicatif draws only when stderr is a terminal, and never panics on a failed draw.
    let progress = indicatif::ProgressBar::new(total_ms).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {elapsed}/{duration} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let generators = args.pattern.generators();
    let report = match args.generator {
        BenchGenerator::Segment => {
            let (all, store) = segment_generators(args, generators, env)?;
            let mut report = bench::run(
                "segment",
                &bench::Generators::without_layout(&all),
                &options,
                &progress,
            );
            report.store = Some(store);
            report
        }
        BenchGenerator::Cached => {
            let (bits, taken) = bench_workers(args, generators, env)?;
            let all = taken
                .into_iter()
                .map(|taken| cached_generator(bits, taken))
                .collect::<Result<Vec<_>, _>>()?;
            bench::run(
                "cached",
                &bench::Generators::cached(&all),
                &options,
                &progress,
            )
        }
        BenchGenerator::FetchAdd => {
            // Counters apart by 2^48, as generators with distinct worker IDs are.
            let all: Vec<_> = (0..generators as u64)
                .map(|i| bench::SharedCounter::starting_at(i << 48))
                .collect();
            bench::run(
                "fetch-add",
                &bench::Generators::without_layout(&all),
                &options,
                &progress,
            )
        }
        BenchGenerator::Default => {
            let (bits, taken) = bench_workers(args, generators, env)?;
            let all = taken
                .into_iter()
                .map(|taken| default_generator(bits, taken))
                .collect::<Result<Vec<_>, _>>()?;
            let generators = bench::Generators::without_ring(&all);
            bench::run("default", &generators, &options, &progress)
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

/// The layout and the worker IDs of a time-based bench.
fn bench_workers(
    args: &BenchArgs,
    generators: usize,
    env: Env,
) -> Result<(BitsAllocator, Vec<Taken>), Failure> {
    let source = Source::from_args(&args.worker, env)?;
    let bits = args.layout.builder()?.build()?;
    Ok((bits, source.take_many(&bits, generators)?))
}

/// The generators of a segment bench: `--tag`, or TAG-0 to TAG-N-1 for alternate:N, on
/// `--store` (default: the embedded store), each tag created with step 1000 if missing.
fn segment_generators(
    args: &BenchArgs,
    generators: usize,
    env: Env,
) -> Result<(Vec<uidgen::SegmentGenerator>, String), Failure> {
    let worker = &args.worker;
    if worker.worker_id.is_some() || worker.mysql_url.is_some() || worker.lease_ttl.is_some() {
        return Err(Failure::msg(
            "--worker-id, --mysql-url and --lease-ttl choose worker IDs, which segment mode \
             has none of; leave them out (--store chooses the counters' store)",
        ));
    }
    let choice = match (&worker.store, &worker.worker_db) {
        (Some(url), _) => worker::StoreChoice::Url(url.clone()),
        (None, Some(path)) => worker::StoreChoice::Embedded(Some(path.clone())),
        (None, None) => worker::StoreChoice::from_option(None, env),
    };
    let store: Arc<dyn uidgen::SegmentStore> =
        Arc::from(choice.open::<Box<dyn uidgen::SegmentStore>>()?);
    let tag = args.tag.as_deref().unwrap_or("uidgen-bench");
    let all = (0..generators)
        .map(|i| {
            let name = if generators == 1 {
                tag.to_owned()
            } else {
                format!("{tag}-{i}")
            };
            let mut builder = uidgen::SegmentGenerator::builder(Arc::clone(&store), &name)
                .create_missing(1000)
                .prefetch(!args.no_prefetch);
            if let Some(max_step) = args.max_step {
                builder = builder.max_step(max_step);
            }
            Ok(builder.build()?)
        })
        .collect::<Result<_, Failure>>()?;
    Ok((all, store.describe()))
}

/// The ring's slots for the cached generator: UidGenerator's eight ticks' worth, at most
/// 2^17 slots (1 MiB). Layouts with many sequence bits (30/9/24) would otherwise want
/// more than the library's 2^26-slot limit, or half a gigabyte for a single ID.
fn ring_slots(bits: &BitsAllocator) -> usize {
    1usize << (bits.seq_bits() + 3).min(17)
}

fn cached_generator(bits: BitsAllocator, taken: Taken) -> Result<CachedUidGenerator, Failure> {
    let builder = CachedUidGenerator::builder()
        .allocator(bits)
        .ring_capacity(ring_slots(&bits));
    Ok(match taken.lease {
        Some(lease) => builder.lease(lease),
        None => builder.worker_id(taken.worker_id),
    }
    .build()?)
}

/// The default generator on the worker ID taken (its lease, if any, goes with it).
fn default_generator(bits: BitsAllocator, taken: Taken) -> Result<DefaultUidGenerator, Failure> {
    let builder = DefaultUidGenerator::builder().allocator(bits);
    Ok(match taken.lease {
        Some(lease) => builder.lease(lease),
        None => builder.worker_id(taken.worker_id),
    }
    .build()?)
}

fn next(
    count: u64,
    generator: GeneratorKind,
    json: bool,
    worker: &WorkerArgs,
    layout: &LayoutArgs,
    env: Env,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let source = Source::from_args(worker, env)?;
    let bits = layout.builder()?.build()?;
    if count == 0 {
        // Nothing to make: check the settings, take no registry row.
        source.check(&bits)?;
        return Ok(SUCCESS);
    }
    let taken = source.take(&bits)?;
    let generator: Box<dyn UidGenerator> = match generator {
        GeneratorKind::Default => Box::new(default_generator(bits, taken)?),
        GeneratorKind::Cached => Box::new(cached_generator(bits, taken)?),
    };
    let mut out = Lines::new(stdout);
    let made = write_ids(
        &mut out,
        count,
        |batch| generator.next_uids(batch),
        |out, uid| {
            if json {
                out.line(bits.parse(uid)?)
            } else {
                out.line(uid)
            }
        },
    );
    // The IDs made before a failure are good: write them, then report it.
    let flushed = out.flush();
    made?;
    flushed?;
    Ok(SUCCESS)
}

/// Writes `count` IDs, taken in batches by `take`, each through `line`; stops at the
/// first failure (the IDs before it are written).
pub(crate) fn write_ids(
    out: &mut Lines<'_>,
    count: u64,
    mut take: impl FnMut(&mut [u64]) -> Result<usize, uidgen::UidError>,
    mut line: impl FnMut(&mut Lines<'_>, u64) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut batch = [0u64; 256];
    let mut left = count;
    while left > 0 {
        let want = usize::try_from(left)
            .unwrap_or(batch.len())
            .min(batch.len());
        let n = take(&mut batch[..want])?;
        for &uid in &batch[..n] {
            line(out, uid)?;
        }
        left -= n as u64;
    }
    Ok(())
}

fn parse(
    uids: &[String],
    layout: &LayoutArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    // Old IDs stay readable after their layout has run out.
    let bits = layout.builder()?.build_unchecked_time()?;
    let mut out = Lines::new(stdout);
    let mut failed = false;
    // Decodes one ID, or reports why it is none; `line` is its stdin line, if from stdin.
    let mut decode = |out: &mut Lines<'_>, word: &str, len: usize, line: Option<u64>| {
        let place = line.map_or(String::new(), |line| format!("stdin line {line}: "));
        let error = if len > words::MAX_WORD {
            format!(
                "invalid UID {}: {len} bytes long, so not a decimal integer in 0..={}",
                args::shorten(word),
                i64::MAX
            )
        } else {
            match bits.parse_str(word) {
                Ok(parts) => return out.line(parts),
                Err(err) => err.to_string(),
            }
        };
        // What came before it first, so that the two streams read in order.
        out.flush()?;
        report(stderr, &format!("uidgen: {place}{error}"));
        failed = true;
        Ok(())
    };
    let result = (|| {
        // No IDs: read them from stdin, as a lone - does (once: a second finds its end).
        let from_stdin = uids.is_empty();
        let mut stdin_read = false;
        for uid in uids
            .iter()
            .map(String::as_str)
            .chain(from_stdin.then_some("-"))
        {
            if uid != "-" {
                decode(&mut out, uid, 0, None)?;
            } else if !std::mem::replace(&mut stdin_read, true) {
                let out = std::cell::RefCell::new(&mut out);
                words::for_each_word(stdin, &mut || out.borrow_mut().flush(), &mut |word| {
                    let text = String::from_utf8_lossy(word.text);
                    decode(&mut out.borrow_mut(), &text, word.len, Some(word.line))
                })?;
            }
        }
        out.flush()
    })();
    match result {
        // A closed stdout ends the command with the status earned so far.
        Ok(()) | Err(Failure::ClosedPipe) => Ok(if failed { FAILURE } else { SUCCESS }),
        Err(other) => Err(other),
    }
}

/// `uidgen worker list`: every worker ID the store knows, with holder, mark and expiry,
/// and how many of the layout's worker IDs are held and free; for `--mysql-url`'s
/// WORKER_NODE, the rows used and the launches left.
fn list_workers(
    json: bool,
    worker: &WorkerArgs,
    layout: &LayoutArgs,
    env: Env,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let source = Source::from_args(worker, env)?;
    // Any layout, even one whose time has run out: this only counts worker IDs.
    let bits = layout.builder()?.build_unchecked_time()?;
    if let Some((registry, usage)) = source.registry_usage(&bits)? {
        let mut out = Lines::new(stdout);
        if json {
            out.line(serde_json::json!({
                "registry": registry,
                "layout": bits.to_string(),
                "worker_ids": worker::usage_json(&usage),
            }))?;
        } else {
            out.line(format_args!("registry {registry}"))?;
            out.line(format_args!("layout {bits}: {usage}"))?;
        }
        out.flush()?;
        return Ok(SUCCESS);
    }
    let store = source.store()?;
    let leases = store.leases()?;
    let mark = |ms: u64| {
        if ms == 0 {
            "-".to_owned()
        } else {
            uidgen::BitsAllocator::default().format_instant(ms)
        }
    };
    let mut out = Lines::new(stdout);
    if json {
        let rows: Vec<_> = leases
            .iter()
            .map(|lease| {
                serde_json::json!({
                    "worker_id": lease.worker_id,
                    "holder": lease.holder,
                    "live": lease.expires_in.is_some(),
                    "expires_in_ms": lease.expires_in.map(|d| d.as_millis() as u64),
                    "mark_ms": lease.mark_ms,
                })
            })
            .collect();
        out.line(serde_json::json!({
            "store": store.describe(),
            "leases": rows,
            "layout": bits.to_string(),
            "worker_ids": worker::usage_json(&uidgen::WorkerIdUsage::of_leases(&leases, &bits)),
        }))?;
    } else {
        out.line(format_args!("store {}", store.describe()))?;
        out.line(format_args!(
            "{:>9}  {:<8}  {:<12}  {:<23}  holder",
            "worker_id", "state", "expires_in", "mark"
        ))?;
        for lease in &leases {
            let (state, expires) = match (lease.expires_in, &lease.holder) {
                (Some(left), _) => ("held", format!("{:.1}s", left.as_secs_f64())),
                (None, Some(_)) => ("expired", "-".to_owned()),
                (None, None) => ("free", "-".to_owned()),
            };
            out.line(format_args!(
                "{:>9}  {state:<8}  {expires:<12}  {:<23}  {}",
                lease.worker_id,
                mark(lease.mark_ms),
                lease.holder.as_deref().unwrap_or("-")
            ))?;
        }
        out.line(format_args!(
            "layout {bits}: {}",
            uidgen::WorkerIdUsage::of_leases(&leases, &bits)
        ))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

fn show_worker(
    json: bool,
    worker: &WorkerArgs,
    layout: &LayoutArgs,
    env: Env,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let source = Source::from_args(worker, env)?;
    let bits = layout.builder()?.build()?;
    // Taken and given back at the end: the worker ID shown is free again afterwards.
    let assigned = source.take(&bits)?;
    let mut out = Lines::new(stdout);
    if json {
        out.line(serde_json::json!({
            "worker_id": assigned.worker_id,
            "source": assigned.source,
            "layout": bits.to_string(),
            "max_worker_id": bits.max_worker_id(),
        }))?;
    } else {
        out.line(format_args!("worker_id  {}", assigned.worker_id))?;
        out.line(format_args!("from       {}", assigned.source))?;
        out.line(format_args!(
            "layout     {bits} (max_worker_id {})",
            bits.max_worker_id()
        ))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

fn show_layout(json: bool, layout: &LayoutArgs, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let bits = layout.builder()?.build_unchecked_time()?;
    let now = SystemClock.now_millis();
    let mut out = Lines::new(stdout);
    if json {
        out.line(layout_json(&bits, now))?;
    } else {
        out.text(&describe(&bits, now))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

const YEAR_MS: f64 = 365.25 * 86_400_000.0;

fn layout_json(bits: &BitsAllocator, now_millis: u64) -> serde_json::Value {
    let alive = bits.check_alive_at(now_millis);
    serde_json::json!({
        "layout": bits.to_string(),
        "time_bits": bits.time_bits(),
        "worker_bits": bits.worker_bits(),
        "seq_bits": bits.seq_bits(),
        "unit": bits.unit().symbol(),
        "epoch": bits.format_instant(bits.epoch_millis()),
        "epoch_millis": bits.epoch_millis(),
        "max_delta": bits.max_delta(),
        "max_worker_id": bits.max_worker_id(),
        "ids_per_tick": bits.max_sequence() + 1,
        "lifetime_years": bits.lifetime().as_millis() as f64 / YEAR_MS,
        "runs_out": bits.format_instant(bits.end_millis()),
        "end_millis": bits.end_millis(),
        "usable_now": alive.is_ok(),
        "problem": alive.err().map(|e| e.to_string()),
    })
}

fn describe(bits: &BitsAllocator, now_millis: u64) -> String {
    let unit = match bits.unit() {
        TimeUnit::Seconds => "1 s",
        TimeUnit::Milliseconds => "1 ms",
    };
    let end = bits.end_millis();
    let status = match bits.check_alive_at(now_millis) {
        Ok(()) => format!(
            "{:.1} years from now",
            end.saturating_sub(now_millis) as f64 / YEAR_MS
        ),
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

/// Installs the log subscriber: `RUST_LOG` (tracing-subscriber's EnvFilter syntax),
/// warnings by default, on stderr with passwords scrubbed, colours only on a terminal.
/// The `log` crate is not bridged: the MySQL driver's own logs could name connection
/// details.
pub fn install_logging(env: Env, secrets: Arc<Secrets>, stderr: &mut dyn Write) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::{EnvFilter, LevelFilter};
    let builder = EnvFilter::builder().with_default_directive(LevelFilter::WARN.into());
    let wanted = env("RUST_LOG")
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    // `parse`, not `from_env_lossy`: the lossy one prints its complaints with eprintln!,
    // which panics when stderr cannot be written.
    let filter = builder.parse(&wanted).unwrap_or_else(|err| {
        let scrubbed = Scrubbed::new(&mut *stderr, secrets.clone());
        let mut scrubbed = scrubbed;
        report(
            &mut scrubbed,
            &format!("uidgen: ignoring RUST_LOG ({err}); logging warnings only"),
        );
        builder.parse_lossy("")
    });
    let writer = move || Scrubbed::new(std::io::stderr(), secrets.clone());
    // `try_init`: a second call (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_fit_every_layout() {
        for seq in 1..=61 {
            let bits = BitsAllocator::builder()
                .bits(62 - seq, 1, seq)
                .build_unchecked_time()
                .unwrap();
            let slots = ring_slots(&bits);
            assert!(slots.is_power_of_two() && (16..=1 << 17).contains(&slots));
        }
        assert_eq!(ring_slots(&BitsAllocator::default()), 1 << 16);
    }

    #[test]
    fn layout_end_past_the_calendar_is_said_in_words() {
        let bits = BitsAllocator::builder()
            .bits(61, 1, 1)
            .unit(TimeUnit::Milliseconds)
            .build_unchecked_time()
            .unwrap();
        let text = describe(&bits, SystemClock.now_millis());
        assert!(!text.contains("18446744073709551615"), "{text}");
        assert!(text.contains("after the year 262143"), "{text}");
    }
}
