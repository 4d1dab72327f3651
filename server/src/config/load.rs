//! The layers of settings, lowest first: defaults, the TOML file, `UIDGEN_*` variables,
//! then `uidgen serve`'s flags; the secrets (tokens, opaque keys) read once, last.

use super::settings::{Setting, SETTINGS};
use super::{Config, ConfigError};
use crate::tokens::Tokens;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use uidgen::OpaqueIds;

impl Config {
    /// The file's settings (or the defaults with no file), then the `UIDGEN_*` variables
    /// of [`SETTINGS`] found in `env` (pass `std::env::vars()`; others are ignored). The
    /// tokens and opaque keys are read last, from their variable or their file. Call
    /// [`check`](Self::check) after.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        Self::load_with_flags(file, env, Vec::new())
    }

    /// [`load`](Self::load), then `flags` over it: each a `uidgen serve` flag of
    /// [`SETTINGS`] (`--max-count`), and the values given (one; a list flag's values;
    /// `"true"` for a switch). A flag's file wins over its variable's, and a secret's
    /// variable over both, as the secrets are read after the flags.
    ///
    /// ```
    /// let config = uidgen_server::Config::load_with_flags(
    ///     None,
    ///     [("UIDGEN_MAX_COUNT".to_string(), "50".to_string())],
    ///     [("--max-count", vec!["70".to_string()]), ("--tag", vec!["a,b".to_string()])],
    /// )?;
    /// assert_eq!(config.max_count, 70);
    /// assert_eq!(config.tags, ["a,b"]); // a flag's value is one tag
    /// # Ok::<(), uidgen_server::ConfigError>(())
    /// ```
    pub fn load_with_flags(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: impl IntoIterator<Item = (&'static str, Vec<String>)>,
    ) -> Result<Self, ConfigError> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: path.to_owned(),
                    message: parse_problem(&text, &e),
                })?
            }
            None => Config::default(),
        };
        let (mut tokens_var, mut keys_var) = (None, None);
        // Our variables, each found in the table once, applied in the table's order
        // whatever order the environment lists them in.
        let mut given: Vec<(usize, String)> = env
            .into_iter()
            .filter_map(|(name, value)| {
                let index = SETTINGS
                    .iter()
                    .position(|s| s.variable == Some(name.as_str()))?;
                Some((index, value))
            })
            .collect();
        given.sort_by_key(|&(index, _)| index);
        for (index, value) in given {
            let setting = &SETTINGS[index];
            let variable = setting.variable.unwrap_or_default();
            match variable {
                // Set but empty, as templates leave it, is unset.
                "UIDGEN_TOKENS" if value.trim().is_empty() => {}
                "UIDGEN_TOKENS" => tokens_var = Some(value),
                "UIDGEN_OPAQUE_KEYS" => keys_var = Some(value),
                _ => setting.apply(&mut config, variable, &[value])?,
            }
        }
        for (flag, values) in flags {
            match Setting::named(flag).filter(|s| s.flag == Some(flag)) {
                Some(setting) => setting.apply(&mut config, flag, &values)?,
                None => {
                    return Err(ConfigError::Invalid {
                        field: "a flag",
                        value: flag.chars().take(40).collect(),
                        limit: "a flag of uidgen serve's settings".into(),
                    })
                }
            }
        }
        config.secrets_from_vars = (tokens_var.is_some(), keys_var.is_some());
        config.opaque = read_secret(
            keys_var,
            "UIDGEN_OPAQUE_KEYS",
            &config.opaque_keys_file,
            |source_name, problem| ConfigError::OpaqueKeys {
                source_name,
                problem,
            },
        )
        .and_then(|read| {
            read.map(|(text, source_name)| {
                OpaqueIds::from_spec(&text)
                    .map(Arc::new)
                    .map_err(|e| ConfigError::OpaqueKeys {
                        source_name,
                        problem: e.to_string(),
                    })
            })
            .transpose()
        })?;
        config.tokens = match read_secret(
            tokens_var,
            "UIDGEN_TOKENS",
            &config.tokens_file,
            |source_name, problem| ConfigError::Tokens {
                source_name,
                problem,
            },
        )? {
            Some((text, source_name)) => Tokens::parse(&text, &source_name)?,
            None => Tokens::default(),
        };
        Ok(config)
    }

    /// The tokens file read again, for a reload: `None` when the tokens came from
    /// `UIDGEN_TOKENS` or there is no file.
    pub(crate) fn reread_tokens(&self) -> Option<Result<Tokens, ConfigError>> {
        let file = self
            .tokens_file
            .as_ref()
            .filter(|_| !self.secrets_from_vars.0)?;
        let name = file.display().to_string();
        Some(
            std::fs::read_to_string(file)
                .map_err(|e| ConfigError::Tokens {
                    source_name: name.clone(),
                    problem: format!("cannot read it: {e}"),
                })
                .and_then(|text| Tokens::parse(&text, &name).map_err(ConfigError::from)),
        )
    }

    /// The opaque-keys file read again, for a reload: `None` when the keys came from
    /// `UIDGEN_OPAQUE_KEYS` or there is no file.
    pub(crate) fn reread_keys(&self) -> Option<Result<Arc<OpaqueIds>, ConfigError>> {
        let file = self
            .opaque_keys_file
            .as_ref()
            .filter(|_| !self.secrets_from_vars.1)?;
        let name = file.display().to_string();
        let problem = |problem: String| ConfigError::OpaqueKeys {
            source_name: name.clone(),
            problem,
        };
        Some(
            std::fs::read_to_string(file)
                .map_err(|e| problem(format!("cannot read it: {e}")))
                .and_then(|text| {
                    OpaqueIds::from_spec(&text)
                        .map(Arc::new)
                        .map_err(|e| problem(e.to_string()))
                }),
        )
    }
}

/// A secret's text and where it came from: the variable if set, else the file if named.
fn read_secret(
    var: Option<String>,
    var_name: &str,
    file: &Option<PathBuf>,
    unreadable: fn(String, String) -> ConfigError,
) -> Result<Option<(String, String)>, ConfigError> {
    match (var, file) {
        (Some(text), _) => Ok(Some((text, var_name.to_owned()))),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                unreadable(path.display().to_string(), format!("cannot read it: {e}"))
            })?;
            Ok(Some((text, path.display().to_string())))
        }
        (None, None) => Ok(None),
    }
}

/// Where the TOML is wrong and why, never quoting the file: a store URL in it may hold
/// a password, and the parser's own message would show the line.
fn parse_problem(text: &str, error: &toml::de::Error) -> String {
    let line = error
        .span()
        .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
    let why = error.message();
    // A message that quotes a value could quote a password.
    let why = if why.contains('@') || why.contains("://") {
        "a value of the wrong type or form (not quoted here: it may hold a password)"
    } else {
        why
    };
    match line {
        Some(line) => format!("line {line}: {why}"),
        None => why.to_owned(),
    }
}
