//! `uidgen`: the command line. Everything but logging lives in the library (`lib.rs`), so
//! that tests can run it in-process.

use std::ffi::OsString;
use std::io;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let env = |name: &str| std::env::var_os(name);
    let secrets = Arc::new(uidgen_cli::Secrets::find(&args, &env));
    uidgen_cli::install_logging(&args, &env, secrets, &mut io::stderr());
    // Stderr is not locked for the whole run: the padding thread may log to it, and the
    // main thread waits for that thread when the generator is dropped.
    let code = uidgen_cli::run(
        args,
        &env,
        &mut io::stdin().lock(),
        &mut io::stdout().lock(),
        &mut io::stderr(),
    );
    ExitCode::from(code)
}
