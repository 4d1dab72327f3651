//! `uidgen serve`: the ID service (the uidgen-server crate) on a runtime of its own.

use crate::args::ServeArgs;
use crate::output::Failure;
use crate::Env;
use std::io::Write;
use uidgen_server::Config;

pub(crate) fn run(args: &ServeArgs, env: Env, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let vars = uidgen_server::env_variables().filter_map(|name| {
        env(name).map(|value| (name.to_string(), value.to_string_lossy().into_owned()))
    });
    let config = Config::load_with_flags(args.config.as_deref(), vars, args.flags.iter().cloned())?;
    if let Some(format) = env("UIDGEN_LOG_FORMAT") {
        let format = format.to_string_lossy();
        if !matches!(
            format.trim().to_ascii_lowercase().as_str(),
            "" | "text" | "json"
        ) {
            return Err(Failure::msg(format!(
                "UIDGEN_LOG_FORMAT={:?} cannot be used: text or json",
                format.chars().take(40).collect::<String>()
            )));
        }
    }
    config.check()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("uidgen-serve")
        .build()?;
    let mut announced = Ok(());
    runtime.block_on(uidgen_server::run(config, |addr| {
        announced = writeln!(stdout, "listening on http://{addr}").and_then(|()| stdout.flush());
    }))?;
    announced.map_err(Failure::stdout)?;
    Ok(crate::SUCCESS)
}
