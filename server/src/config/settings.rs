//! Every setting of the service, with its three spellings (TOML key, `UIDGEN_*` variable,
//! `uidgen serve` flag) and how a one-line value sets it, written once: the loader reads
//! variables and flags through this table, `uidgen serve` builds its flags from it, and a
//! test holds the TOML schema, the table and the README to each other.

use super::error::{parse_bool, parse_field};
use super::{Config, ConfigError, CREATE_TAGS_GONE};
use std::path::PathBuf;

/// How a setting is given on a line: in its variable and on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingKind {
    /// One value: `--listen ADDR`, `UIDGEN_LISTEN=ADDR`.
    Value,
    /// A yes or no: the flag alone says yes; the variable takes true/false, yes/no,
    /// on/off, 1/0 in any case.
    Switch,
    /// A list: the flag repeated, the variable comma-separated, a TOML array.
    List,
    /// Removed: refused, with the reason, when set on.
    Removed,
    /// A secret: its variable only. Never in the TOML file (which may be shown) nor a
    /// flag (which `ps` shows); its file has all three spellings.
    Secret,
    /// TOML tables only (`[[period_tags]]`): nothing that fits on a line.
    Tables,
}

/// Sets a setting from the values given on a line (one, or a list's), naming the
/// spelling that was used when a value is refused.
type Setter = fn(&mut Config, &'static str, &[String]) -> Result<(), ConfigError>;

/// One setting and its spellings.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Setting {
    /// The TOML key (`limits.request_timeout_ms` for a key of the `[limits]` table);
    /// `None` for a secret.
    pub key: Option<&'static str>,
    /// The environment variable; `None` for TOML tables.
    pub variable: Option<&'static str>,
    /// The flag of `uidgen serve` (`--listen`); `None` for secrets and tables.
    pub flag: Option<&'static str>,
    /// The value's name in help (`ADDR`); empty for a switch.
    pub value_name: &'static str,
    /// How it is given on a line.
    pub kind: SettingKind,
    /// What it does, its default and its range (the flag's help).
    pub help: &'static str,
    set: Option<Setter>,
}

impl Setting {
    /// The setting spelled `name` (a key, a variable or a flag with its dashes), if any.
    pub fn named(name: &str) -> Option<&'static Setting> {
        SETTINGS
            .iter()
            .find(|s| s.key == Some(name) || s.variable == Some(name) || s.flag == Some(name))
    }

    /// Applies `values` (one value; a list's values; `["true"]` for a switch) given
    /// under `name`.
    pub(crate) fn apply(
        &self,
        config: &mut Config,
        name: &'static str,
        values: &[String],
    ) -> Result<(), ConfigError> {
        match self.set {
            Some(set) => set(config, name, values),
            None => Ok(()),
        }
    }
}

const fn setting(
    key: &'static str,
    variable: &'static str,
    flag: &'static str,
    value_name: &'static str,
    kind: SettingKind,
    help: &'static str,
    set: Setter,
) -> Setting {
    Setting {
        key: Some(key),
        variable: Some(variable),
        flag: Some(flag),
        value_name,
        kind,
        help,
        set: Some(set),
    }
}

/// The one value of a setting that takes one (the last, if a line gave several).
fn one(values: &[String]) -> &str {
    values.last().map_or("", String::as_str)
}

fn number<T: std::str::FromStr>(name: &'static str, values: &[String]) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    parse_field(name, one(values))
}

fn switch(name: &'static str, values: &[String]) -> Result<bool, ConfigError> {
    parse_bool(name, one(values))
}

/// A list's items: each value split at commas (a variable's form), trimmed, empty ones
/// dropped. Flags give one item per value (a tag may hold a comma), so only variables
/// are split.
fn list(name: &'static str, values: &[String]) -> Vec<String> {
    let split = name.starts_with("UIDGEN_");
    values
        .iter()
        .flat_map(|value| {
            if split {
                value.split(',').map(str::trim).collect::<Vec<_>>()
            } else {
                vec![value.trim()]
            }
        })
        .filter(|item| !item.is_empty())
        .map(String::from)
        .collect()
}

/// Every setting, in the order `uidgen serve --help` lists the flags.
pub const SETTINGS: &[Setting] = &[
    setting(
        "listen",
        "UIDGEN_LISTEN",
        "--listen",
        "ADDR",
        SettingKind::Value,
        "The address to listen on (default 127.0.0.1:8080; port 0 picks a free one)",
        |c, name, v| {
            c.listen = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "allow_public",
        "UIDGEN_ALLOW_PUBLIC",
        "--allow-public",
        "",
        SettingKind::Switch,
        "Listen on a non-loopback address with no tokens configured",
        |c, name, v| {
            c.allow_public = switch(name, v)?;
            Ok(())
        },
    ),
    setting(
        "store",
        "UIDGEN_STORE",
        "--store",
        "URL",
        SettingKind::Value,
        "The store: a SQLite file, mysql://, postgres://, redis:// or etcd:// (default: the \
         embedded store, as other commands use)",
        |c, _, v| {
            c.store = Some(one(v).to_owned());
            Ok(())
        },
    ),
    setting(
        "layout",
        "UIDGEN_LAYOUT",
        "--layout",
        "LAYOUT",
        SettingKind::Value,
        "The snowflake layout: a preset (default, snowflake or leaf, uidgenerator-readme, \
         instagram, js-safe), TIME/WORKER/SEQ or TIME/REGION/WORKER/SEQ, as uidgen migrate \
         plan prints it",
        |c, _, v| {
            c.layout = one(v).to_owned();
            Ok(())
        },
    ),
    setting(
        "unit",
        "UIDGEN_UNIT",
        "--unit",
        "UNIT",
        SettingKind::Value,
        "The layout's tick length: s, ms or 10ms (default: the preset's; seconds for bits)",
        |c, _, v| {
            c.unit = Some(one(v).to_owned());
            Ok(())
        },
    ),
    setting(
        "epoch",
        "UIDGEN_EPOCH",
        "--epoch",
        "DATE",
        SettingKind::Value,
        "The layout's epoch, a UTC date or RFC 3339 instant (default: the preset's; \
         2026-01-01 for bits)",
        |c, _, v| {
            c.epoch = Some(one(v).to_owned());
            Ok(())
        },
    ),
    setting(
        "region",
        "UIDGEN_REGION",
        "--region",
        "N",
        SettingKind::Value,
        "The region every snowflake ID holds, with a TIME/REGION/WORKER/SEQ layout",
        |c, name, v| {
            c.region = Some(number(name, v)?);
            Ok(())
        },
    ),
    setting(
        "id_floor",
        "UIDGEN_ID_FLOOR",
        "--id-floor",
        "ID",
        SettingKind::Value,
        "Serve no ID at or below this one, snowflake or segment (an old scheme's highest, \
         from uidgen migrate plan): the start is refused when the first would be",
        |c, name, v| {
            c.id_floor = Some(number(name, v)?);
            Ok(())
        },
    ),
    setting(
        "lease_ttl_ms",
        "UIDGEN_LEASE_TTL_MS",
        "--lease-ttl-ms",
        "MS",
        SettingKind::Value,
        "How long the worker-ID lease lasts unless renewed (default 30000; 1000 to 3600000): \
         a process that dies keeps its worker ID from others this long",
        |c, name, v| {
            c.lease_ttl_ms = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "max_time_ahead_ms",
        "UIDGEN_MAX_TIME_AHEAD_MS",
        "--max-time-ahead-ms",
        "MS",
        SettingKind::Value,
        "How far ahead of the clock snowflake IDs may borrow time under load (default 5000; \
         0 for no cap, at most 3600000)",
        |c, name, v| {
            c.max_time_ahead_ms = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "tags",
        "UIDGEN_TAGS",
        "--tag",
        "TAG",
        SettingKind::List,
        "A segment tag to serve from the start (repeat for more; the variable takes them \
         comma-separated); it must exist unless --tag-start is given",
        |c, name, v| {
            c.tags = list(name, v);
            Ok(())
        },
    ),
    setting(
        "tag_start",
        "UIDGEN_TAG_START",
        "--tag-start",
        "FIRST",
        SettingKind::Value,
        "Create the tags (and residue tags) that the store lacks, their IDs from FIRST up. \
         Never assumed: a tag a store lost, created again low, would repeat its IDs; creating \
         below what is known to have been served is refused",
        |c, name, v| {
            c.tag_start = Some(number(name, v)?);
            Ok(())
        },
    ),
    setting(
        "create_tags",
        "UIDGEN_CREATE_TAGS",
        "--create-tags",
        "",
        SettingKind::Removed,
        "Removed (a tag created on its first request); refused with the reason",
        |_, name, v| {
            // Set off (or empty), the old switch is harmless; set on, it is refused.
            let given = one(v);
            if given.trim().is_empty() || parse_bool(name, given).ok() == Some(false) {
                return Ok(());
            }
            Err(ConfigError::Invalid {
                field: name,
                value: given.chars().take(80).collect(),
                limit: CREATE_TAGS_GONE.into(),
            })
        },
    ),
    setting(
        "tag_step",
        "UIDGEN_TAG_STEP",
        "--tag-step",
        "N",
        SettingKind::Value,
        "The base step of the tags the service creates (default 1000)",
        |c, name, v| {
            c.tag_step = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "max_count",
        "UIDGEN_MAX_COUNT",
        "--max-count",
        "N",
        SettingKind::Value,
        "The largest count (or batchSize) one request may ask for, and the largest range \
         (default 100000; 1 to 1000000)",
        |c, name, v| {
            c.max_count = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "tinyid_loading_percent",
        "UIDGEN_TINYID_LOADING_PERCENT",
        "--tinyid-loading-percent",
        "PERCENT",
        SettingKind::Value,
        "Tinyid's loadingId: where in a range its client fetches the next, in percent \
         (default 20; 1 to 100)",
        |c, name, v| {
            c.tinyid_loading_percent = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "tokens_file",
        "UIDGEN_TOKENS_FILE",
        "--tokens-file",
        "FILE",
        SettingKind::Value,
        "A file of tokens, one TOKEN=tag,tag a line (* for every tag, @snowflake for the \
         snowflake routes); read again on SIGHUP",
        |c, _, v| {
            c.tokens_file = Some(PathBuf::from(one(v)));
            Ok(())
        },
    ),
    Setting {
        key: None,
        variable: Some("UIDGEN_TOKENS"),
        flag: None,
        value_name: "TOKEN=tag,tag;TOKEN2=*",
        kind: SettingKind::Secret,
        help: "The tokens themselves; wins over the tokens file",
        set: None,
    },
    setting(
        "opaque_keys_file",
        "UIDGEN_OPAQUE_KEYS_FILE",
        "--opaque-keys-file",
        "FILE",
        SettingKind::Value,
        "A file of opaque-ID keys, VERSION:HEX entries (64 hex digits), the current key \
         first; read again on SIGHUP",
        |c, _, v| {
            c.opaque_keys_file = Some(PathBuf::from(one(v)));
            Ok(())
        },
    ),
    Setting {
        key: None,
        variable: Some("UIDGEN_OPAQUE_KEYS"),
        flag: None,
        value_name: "VERSION:HEX,…",
        kind: SettingKind::Secret,
        help: "The opaque-ID keys themselves; win over the keys file",
        set: None,
    },
    setting(
        "cors_origins",
        "UIDGEN_CORS_ORIGINS",
        "--cors-origin",
        "ORIGIN",
        SettingKind::List,
        "A web origin whose pages may call the service from a browser (CORS), like \
         https://app.example.com, or * for any (repeat for more)",
        |c, name, v| {
            c.cors_origins = list(name, v);
            Ok(())
        },
    ),
    setting(
        "access_log",
        "UIDGEN_ACCESS_LOG",
        "--access-log",
        "",
        SettingKind::Switch,
        "Log one line per request (method, route, status, time, IDs handed out) at info",
        |c, name, v| {
            c.access_log = switch(name, v)?;
            Ok(())
        },
    ),
    setting(
        "wait_for_store_secs",
        "UIDGEN_WAIT_FOR_STORE",
        "--wait-for-store",
        "SECONDS",
        SettingKind::Value,
        "At start, wait up to SECONDS for a store that cannot be reached yet, trying every \
         second (0 to 3600; default 0: fail at once)",
        |c, name, v| {
            c.wait_for_store_secs = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "worker_id",
        "UIDGEN_WORKER_ID",
        "--worker-id",
        "N",
        SettingKind::Value,
        "A fixed worker ID for the snowflake routes, still leased (default: the lowest free \
         one); not with --pod-ordinal",
        |c, name, v| {
            c.worker_id = Some(number(name, v)?);
            Ok(())
        },
    ),
    setting(
        "worker_ids",
        "UIDGEN_WORKER_IDS",
        "--worker-ids",
        "FIRST-LAST",
        SettingKind::Value,
        "Lease only worker IDs from FIRST to LAST (such as 0-511; default every one the \
         layout holds): one region's share, so regions with stores of their own never hold \
         the same worker ID",
        |c, name, v| {
            // Read here too, so that a bad value is named in the spelling it came in.
            let text = one(v);
            let range: uidgen::WorkerIdRange = text
                .parse()
                .map_err(|e| super::worker_ids_invalid(name, text.chars().take(40).collect(), e))?;
            c.worker_ids = Some(range.to_string());
            Ok(())
        },
    ),
    setting(
        "pod_ordinal",
        "UIDGEN_POD_ORDINAL",
        "--pod-ordinal",
        "",
        SettingKind::Switch,
        "The worker ID is this Kubernetes StatefulSet pod's ordinal (from HOSTNAME, as web-3 \
         gives 3) plus --pod-ordinal-offset, still leased",
        |c, name, v| {
            c.pod_ordinal = switch(name, v)?;
            Ok(())
        },
    ),
    setting(
        "pod_ordinal_offset",
        "UIDGEN_POD_ORDINAL_OFFSET",
        "--pod-ordinal-offset",
        "N",
        SettingKind::Value,
        "Added to the pod ordinal (default 0)",
        |c, name, v| {
            c.pod_ordinal_offset = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "limits.request_timeout_ms",
        "UIDGEN_REQUEST_TIMEOUT_MS",
        "--request-timeout-ms",
        "MS",
        SettingKind::Value,
        "A request's whole time, answer included (default 5000; 408 past it)",
        |c, name, v| {
            c.limits.request_timeout_ms = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "limits.header_timeout_ms",
        "UIDGEN_HEADER_TIMEOUT_MS",
        "--header-timeout-ms",
        "MS",
        SettingKind::Value,
        "Time for a connection to send a request's headers (default 5000; closed past it)",
        |c, name, v| {
            c.limits.header_timeout_ms = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "limits.max_connections",
        "UIDGEN_MAX_CONNECTIONS",
        "--max-connections",
        "N",
        SettingKind::Value,
        "Open connections at once (default 10000); more wait to be accepted",
        |c, name, v| {
            c.limits.max_connections = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "limits.max_body_bytes",
        "UIDGEN_MAX_BODY_BYTES",
        "--max-body-bytes",
        "BYTES",
        SettingKind::Value,
        "A request body's size (default 16384; 413 past it)",
        |c, name, v| {
            c.limits.max_body_bytes = number(name, v)?;
            Ok(())
        },
    ),
    setting(
        "limits.shutdown_grace_ms",
        "UIDGEN_SHUTDOWN_GRACE_MS",
        "--shutdown-grace-ms",
        "MS",
        SettingKind::Value,
        "Time given to in-flight requests on SIGTERM, SIGINT or SIGQUIT (default 10000)",
        |c, name, v| {
            c.limits.shutdown_grace_ms = number(name, v)?;
            Ok(())
        },
    ),
    Setting {
        key: Some("period_tags"),
        variable: None,
        flag: None,
        value_name: "",
        kind: SettingKind::Tables,
        help: "Segment tags whose IDs start with their day or month ([[period_tags]])",
        set: None,
    },
    Setting {
        key: Some("residue_tags"),
        variable: None,
        flag: None,
        value_name: "",
        kind: SettingKind::Tables,
        help: "Segment tags served from several stores, each its own residue class \
               ([[residue_tags]])",
        set: None,
    },
];

/// Every variable the loader reads, in [`SETTINGS`]' order.
pub fn env_variables() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().filter_map(|s| s.variable)
}
