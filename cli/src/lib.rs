//! The `uidgen` command, as a library so that tests can run it in-process: [`run`] takes
//! the arguments, the environment and the three standard streams, and returns the exit
//! status. `main.rs` installs logging and calls it with the real ones.
//!
//! Each command is a module under `commands/`. The dispatcher there reads the worker
//! options and the environment once (through `source.rs`, which also opens every store)
//! and hands each command the worker source or store it takes.

mod args;
mod commands;
mod output;
mod redact;
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
