//! What a setting that cannot be used says, and the readers of one-line values that name
//! the spelling used when they refuse one.

use crate::tokens::TokensError;
use std::path::PathBuf;

/// A setting that cannot be used: names the setting, the value (never a secret) and
/// what is allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid TOML, or has an unknown key or a wrong type.
    #[error("the config file {path} is not valid: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line and the TOML parser's words, without the line's text (a store URL
        /// there may hold a password).
        message: String,
    },
    /// A variable or setting out of its range.
    #[error("{field} = {value} is not allowed: {limit}")]
    Invalid {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        limit: String,
    },
    /// A token list that cannot be read (the token itself is never named).
    #[error("tokens from {source_name}: {problem}")]
    Tokens {
        /// `UIDGEN_TOKENS` or the file.
        source_name: String,
        /// What is wrong, with the line number.
        problem: String,
    },
    /// Opaque-ID keys that cannot be read (no key is ever shown).
    #[error("opaque-ID keys from {source_name}: {problem}")]
    OpaqueKeys {
        /// `UIDGEN_OPAQUE_KEYS` or the file.
        source_name: String,
        /// What is wrong.
        problem: String,
    },
}

impl From<TokensError> for ConfigError {
    fn from(e: TokensError) -> Self {
        ConfigError::Tokens {
            source_name: e.source_name,
            problem: e.problem,
        }
    }
}

/// A yes or no in any common spelling, in any case: true/false, yes/no, on/off, 1/0,
/// y/n, t/f.
pub(crate) fn parse_bool(field: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "y" | "t" => Ok(true),
        "false" | "no" | "off" | "0" | "n" | "f" => Ok(false),
        _ => Err(ConfigError::Invalid {
            field,
            value: value.chars().take(80).collect(),
            limit: "a yes or no: true/false, yes/no, on/off, 1/0 (any case)".into(),
        }),
    }
}

pub(crate) fn parse_field<T: std::str::FromStr>(
    field: &'static str,
    value: &str,
) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e: T::Err| ConfigError::Invalid {
            field,
            value: value.chars().take(80).collect(),
            limit: e.to_string(),
        })
}
