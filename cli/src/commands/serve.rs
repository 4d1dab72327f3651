//! `uidgen serve`: the ID service (the uidgen-server crate) on a runtime of its own.

use crate::args::ServeArgs;
use crate::output::Failure;
use crate::Env;
use std::io::Write;
use uidgen_server::Config;

pub(crate) fn run(args: &ServeArgs, env: Env, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let vars = uidgen_server::ENV_VARIABLES.iter().filter_map(|name| {
        env(name).map(|value| (name.to_string(), value.to_string_lossy().into_owned()))
    });
    let mut config = Config::load(args.config.as_deref(), vars)?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(store) = &args.store {
        config.store = Some(store.clone());
    }
    if let Some(layout) = &args.layout {
        config.layout = layout.clone();
    }
    if !args.tags.is_empty() {
        config.tags = args.tags.clone();
    }
    if args.create_tags {
        return Err(Failure::msg(format!(
            "--create-tags is {}",
            uidgen_server::CREATE_TAGS_GONE
        )));
    }
    if !args.cors_origins.is_empty() {
        config.cors_origins = args.cors_origins.clone();
    }
    if args.tag_start.is_some() {
        config.tag_start = args.tag_start;
    }
    config.allow_public |= args.allow_public;
    config.access_log |= args.access_log;
    if args.worker_id.is_some() {
        config.worker_id = args.worker_id;
    }
    config.pod_ordinal |= args.pod_ordinal;
    if let Some(offset) = args.pod_ordinal_offset {
        config.pod_ordinal_offset = offset;
    }
    if let Some(secs) = args.wait_for_store {
        config.wait_for_store_secs = secs;
    }
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
    if let Some(max) = args.max_count {
        config.max_count = max;
    }
    if let Some(file) = &args.tokens_file {
        config.tokens_file = Some(file.clone());
        // The file flag wins over UIDGEN_TOKENS_FILE, but not over UIDGEN_TOKENS.
        if env("UIDGEN_TOKENS").is_none_or(|v| v.to_string_lossy().trim().is_empty()) {
            let text = std::fs::read_to_string(file).map_err(|e| {
                Failure::msg(format!(
                    "cannot read the tokens file {}: {e}",
                    file.display()
                ))
            })?;
            config.tokens = uidgen_server::Tokens::parse(&text, &file.display().to_string())?;
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
