//! `uidgen completions`: a shell's completion script.

use crate::args::Cli;
use crate::output::Failure;
use crate::SUCCESS;
use clap::CommandFactory;
use std::io::Write;

pub(super) fn run(shell: clap_complete::Shell, stdout: &mut dyn Write) -> Result<u8, Failure> {
    // Into memory first: clap_complete panics if its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "uidgen", &mut script);
    stdout.write_all(&script).map_err(Failure::stdout)?;
    stdout.flush().map_err(Failure::stdout)?;
    Ok(SUCCESS)
}
