//! The `uidgen` command, as a library so that tests can run it in-process: [`run`] takes
//! the arguments, the environment and the three standard streams, and returns the exit
//! status. `main.rs` installs logging and calls it with the real ones.
//!
//! Each command is a module under `commands/`. The dispatcher there reads the worker
//! options and the environment once (through `source.rs`, which also opens every store)
//! and hands each command the worker source or store it takes.
//!
//! # Where things live
//!
//! | module | owns |
//! |---|---|
//! | `args`, `pattern` | the clap grammar; the bench's `--pattern` values |
//! | `source` | the worker options and the store variables, read once; the only place a store is opened |
//! | `commands/` | one module per command and the dispatcher; `bench/` the generators' benchmark |
//! | [`schemes`] | `uidgen bench --scheme`: every ID scheme compared, its drivers, the harness, report and charts |
//! | `output`, `words`, `redact`, `http` | errors and their chains, wording, password scrubbing, `probe`'s HTTP client |
//!
//! No module imports one that imports it back (`scripts/check-module-cycles --strict`);
//! `ARCHITECTURE.md` in the repository has the whole map.

mod args;
mod commands;
mod http;
mod output;
mod pattern;
mod redact;
pub mod schemes;
mod source;
mod words;

pub use redact::{Scrubbed, Secrets};

use args::Cli;
use clap::{CommandFactory, Parser};
use output::{chain, report, Failure, Lines};
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::sync::Arc;

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
    uidgen::remember_stores_in(store_memory_dir(env));
    match commands::execute(cli.command, env, stdin, stdout, &mut stderr) {
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

/// Where the command remembers what it saw of each store (uidgen's defence against a
/// store that loses data): `UIDGEN_STATE_DIR`, else `stores/` beside the embedded store's
/// file (`UIDGEN_WORKER_DB`'s folder, else the user's data folder).
fn store_memory_dir(env: Env) -> Option<std::path::PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("UIDGEN_STATE_DIR") {
        return Some(dir.into());
    }
    if let Some(file) = set(uidgen::WORKER_DB_ENV) {
        return std::path::Path::new(&file)
            .parent()
            .map(|dir| dir.join("stores"));
    }
    uidgen::default_store_memory_dir()
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

/// A usage error clap cannot find alone, said as clap says its own (status 2).
pub(crate) fn usage_error(
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

/// `uidgen --version`'s words: the version and the commit it was built from.
pub(crate) static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (commit {})",
        uidgen_server::VERSION,
        uidgen_server::COMMIT
    )
});

/// Installs the log subscriber: `RUST_LOG` (tracing-subscriber's EnvFilter syntax), by
/// default warnings (and the service's own start, stop and access lines at info for
/// `uidgen serve`), on stderr with passwords scrubbed, colours only on a terminal; as
/// JSON lines with `serve --log-format json` or `UIDGEN_LOG_FORMAT=json`. Read from the
/// arguments before they are parsed, so that the parser's own complaints are logged as
/// asked. The `log` crate is not bridged: the MySQL driver's own logs could name
/// connection details.
pub fn install_logging(args: &[OsString], env: Env, secrets: Arc<Secrets>, stderr: &mut dyn Write) {
    use std::io::IsTerminal;
    use tracing_subscriber::filter::EnvFilter;
    let serving = args.get(1).is_some_and(|a| a == "serve");
    let default = if serving {
        "warn,uidgen_server=info"
    } else {
        "warn"
    };
    let builder = EnvFilter::builder();
    let wanted = env("RUST_LOG")
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_owned());
    // `parse`, not `from_env_lossy`: the lossy one prints its complaints with eprintln!,
    // which panics when stderr cannot be written.
    let filter = builder.parse(&wanted).unwrap_or_else(|err| {
        let scrubbed = Scrubbed::new(&mut *stderr, secrets.clone());
        let mut scrubbed = scrubbed;
        report(
            &mut scrubbed,
            &format!("uidgen: ignoring RUST_LOG ({err}); logging as by default ({default})"),
        );
        builder.parse_lossy(default)
    });
    let json = log_format(args, env).as_deref() == Some("json");
    let writer = move || Scrubbed::new(std::io::stderr(), secrets.clone());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    // `try_init`: a second call (tests) keeps the first subscriber.
    let _ = if json {
        logs.json().with_current_span(false).try_init()
    } else {
        logs.with_ansi(std::io::stderr().is_terminal()).try_init()
    };
}

/// `--log-format FORMAT` (or `--log-format=FORMAT`) among the arguments, else
/// `UIDGEN_LOG_FORMAT`; clap checks the flag's value later.
fn log_format(args: &[OsString], env: Env) -> Option<String> {
    let mut args = args.iter().map(|a| a.to_string_lossy());
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if arg == "--log-format" {
            return args.next().map(|v| v.to_ascii_lowercase());
        }
        if let Some(value) = arg.strip_prefix("--log-format=") {
            return Some(value.to_ascii_lowercase());
        }
    }
    env("UIDGEN_LOG_FORMAT").map(|v| v.to_string_lossy().trim().to_ascii_lowercase())
}
