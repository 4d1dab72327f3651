//! `serve`'s flags: one for each setting of `uidgen_server::SETTINGS` that has one, made
//! from that table (its flag, value name and help), plus `--config` and `--log-format`,
//! which are this command's own. The values are handed to the config's loader as they
//! were given, so a flag is read and checked where its variable and key are.

use clap::builder::{EnumValueParser, PathBufValueParser};
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches, ValueEnum};
use std::path::PathBuf;
use uidgen_server::{SettingKind, SETTINGS};

/// `serve`'s flags; each overrides the config file and the environment.
#[derive(Debug, Default)]
pub(crate) struct ServeArgs {
    /// A TOML config file.
    pub(crate) config: Option<PathBuf>,
    /// Each setting's flag given, with its values, in `SETTINGS`' order.
    pub(crate) flags: Vec<(&'static str, Vec<String>)>,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Words, one event a line.
    Text,
    /// One JSON object a line.
    Json,
}

/// clap's id of a flag: its name without the dashes.
fn id(flag: &'static str) -> &'static str {
    flag.trim_start_matches('-')
}

impl clap::Args for ServeArgs {
    fn augment_args(command: Command) -> Command {
        let command = command.arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .value_parser(PathBufValueParser::new())
                .help("A TOML config file (see the uidgen-server docs for its keys)"),
        );
        let command = SETTINGS.iter().fold(command, |command, setting| {
            let Some(flag) = setting.flag else {
                return command;
            };
            let arg = Arg::new(id(flag)).long(id(flag)).help(setting.help);
            let arg = match setting.kind {
                SettingKind::Switch => arg.action(ArgAction::SetTrue),
                SettingKind::Removed => arg.action(ArgAction::SetTrue).hide(true),
                SettingKind::List => arg.action(ArgAction::Append).value_name(setting.value_name),
                _ => arg.action(ArgAction::Set).value_name(setting.value_name),
            };
            command.arg(arg)
        });
        command.arg(
            Arg::new("log-format")
                .long("log-format")
                .value_name("FORMAT")
                // Read before parsing, by `install_logging`; clap checks its value.
                .value_parser(EnumValueParser::<LogFormat>::new())
                .help(
                    "How log lines are written on stderr: text, or json (one object a line). \
                     Also UIDGEN_LOG_FORMAT. The service logs its start at info; RUST_LOG \
                     sets the levels",
                ),
        )
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for ServeArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let flags = SETTINGS
            .iter()
            .filter_map(|setting| {
                let flag = setting.flag?;
                match setting.kind {
                    SettingKind::Switch | SettingKind::Removed => matches
                        .get_flag(id(flag))
                        .then(|| (flag, vec!["true".to_owned()])),
                    _ => matches
                        .get_many::<String>(id(flag))
                        .map(|values| (flag, values.cloned().collect())),
                }
            })
            .collect();
        Ok(Self {
            config: matches.get_one::<PathBuf>("config").cloned(),
            flags,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
