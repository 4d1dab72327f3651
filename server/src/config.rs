//! The service's settings: a TOML file, then `UIDGEN_*` variables, then flags (the
//! command line sets fields on [`Config`] after [`Config::load`]).

use crate::tokens::{Tokens, TokensError, GRANT_NAMES};
use serde::Deserialize;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use uidgen::OpaqueIds;

/// The largest `count` any route accepts by default.
pub const DEFAULT_MAX_COUNT: u64 = 100_000;
/// The most `count` may be set to: a response of that many IDs is about 40 MB of JSON.
pub const MAX_MAX_COUNT: u64 = 1_000_000;
/// Where the service listens by default: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The variables [`Config::load`] reads.
pub const ENV_VARIABLES: [&str; 18] = [
    "UIDGEN_LISTEN",
    "UIDGEN_STORE",
    "UIDGEN_LAYOUT",
    "UIDGEN_MAX_COUNT",
    "UIDGEN_TAGS",
    "UIDGEN_TAG_START",
    "UIDGEN_CREATE_TAGS",
    "UIDGEN_ALLOW_PUBLIC",
    "UIDGEN_TOKENS_FILE",
    "UIDGEN_TOKENS",
    "UIDGEN_OPAQUE_KEYS_FILE",
    "UIDGEN_OPAQUE_KEYS",
    "UIDGEN_CORS_ORIGINS",
    "UIDGEN_ACCESS_LOG",
    "UIDGEN_WAIT_FOR_STORE",
    "UIDGEN_WORKER_ID",
    "UIDGEN_POD_ORDINAL",
    "UIDGEN_POD_ORDINAL_OFFSET",
];
/// Why `create_tags` (a tag created at 1 on its first request) is refused: a store that
/// lost a tag would have it created again behind the user's back, repeating its IDs.
pub const CREATE_TAGS_GONE: &str = "no longer supported: it created a tag at 1 on its first \
     request, so a tag a store lost would be created again and repeat its IDs; \
     create tags with uidgen segment create --tag TAG --step N --start FIRST, or name where \
     the service creates missing tags with tag_start (--tag-start, UIDGEN_TAG_START)";

/// The library's tag rule (`uidgen::check_segment_tag`): on a tag that breaks it, what a
/// tag must look like.
pub(crate) fn check_tag(tag: &str) -> Result<(), String> {
    uidgen::check_segment_tag(tag).map_err(|e| match e {
        uidgen::StoreError::InvalidName { rule, .. } => rule.to_owned(),
        other => other.to_string(),
    })
}

/// The most stores one residue tag may have.
pub const MAX_RESIDUE_STORES: usize = 64;

/// Everything the service needs to start. Every field has a default, so an empty file (or
/// none) serves snowflake IDs on 127.0.0.1:8080 from the embedded store.
///
/// ```
/// let config: uidgen_server::Config = toml::from_str(r#"
///     listen = "127.0.0.1:9000"
///     store = "/var/lib/uidgen/ids.sqlite3"
///     tags = ["order"]
///     max_count = 5000
///     [limits]
///     request_timeout_ms = 2000
/// "#).unwrap();
/// assert_eq!(config.max_count, 5000);
/// ```
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// The address to listen on (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// Listen on an address other than loopback with no tokens configured (default
    /// no: anyone who can reach it could draw IDs).
    pub allow_public: bool,
    /// The store URL (any form `uidgen::StoreUrl` reads); default the embedded SQLite
    /// store that the `uidgen` command uses.
    pub store: Option<String>,
    /// The snowflake layout's preset name (default `default`).
    pub layout: String,
    /// How long the snowflake generator's worker-ID lease lasts unless renewed (default
    /// 30,000 ms; 1,000 to 3,600,000): a process that dies keeps its worker ID from others
    /// this long, and one paused this long loses it.
    pub lease_ttl_ms: u64,
    /// How far ahead of the clock the snowflake generator may borrow time under load
    /// (default 5,000 ms; 0 for no cap). Past it, snowflake IDs come at the layout's own
    /// rate (the default layout: 8,192 a millisecond), so their timestamps stay within
    /// this of real time; segment IDs are not affected.
    pub max_time_ahead_ms: u64,
    /// Segment tags served from the start. Each must exist in the store unless
    /// `tag_start` is set; a tag not listed is served once it exists (an unknown tag is
    /// 404, and no request creates one).
    pub tags: Vec<String>,
    /// Where the service creates the tags of `tags` and `[[residue_tags]]` that the
    /// store lacks at start: their first ID (default none: a missing tag stops the
    /// start, naming how to create it). Never assumed, since a tag a store lost and
    /// created again low would repeat its IDs; where this machine or the store knows
    /// the tag served IDs at or above it, creating is refused, naming what is known.
    pub tag_start: Option<u64>,
    /// Removed: see [`CREATE_TAGS_GONE`]. Kept so an old config gets that message.
    #[serde(rename = "create_tags")]
    create_tags_removed: Option<bool>,
    /// The base step of tags the service creates (default 1,000).
    pub tag_step: u64,
    /// The largest `count` (or Tinyid `batchSize`) a request may ask for, and the
    /// largest range (default 100,000; at most 1,000,000).
    pub max_count: u64,
    /// Tinyid's `loadingId`: where in a range its client fetches the next, in percent
    /// of the range (default 20, as Tinyid's server).
    pub tinyid_loading_percent: u64,
    /// A file of tokens, one `TOKEN=tag,tag` a line (`*` for every tag,
    /// `@snowflake` for the snowflake routes); read at start and again on SIGHUP.
    pub tokens_file: Option<PathBuf>,
    /// Segment tags whose IDs start with their day or month (`[[period_tags]]`),
    /// created at start.
    pub period_tags: Vec<PeriodTag>,
    /// Segment tags served from several stores, each its own residue class
    /// (`[[residue_tags]]`); each store must have the tag unless `tag_start` is set.
    pub residue_tags: Vec<ResidueTag>,
    /// A file of opaque-ID keys, `VERSION:HEX` entries (64 hex digits each), the
    /// current key first; read at start and again on SIGHUP. With keys, the native
    /// routes take `format=opaque` and `/v1/opaque/{public}` maps a public ID back.
    pub opaque_keys_file: Option<PathBuf>,
    /// Web origins whose pages may call the service from a browser (CORS), each
    /// `scheme://host[:port]` as browsers send it, or `*` for any (default none: browsers
    /// refuse cross-origin answers). Preflights are answered for GET, POST and HEAD with
    /// the `Authorization` and `Accept` headers.
    pub cors_origins: Vec<String>,
    /// One log line per request at info, target `uidgen_server::access`: method, route
    /// template, status, microseconds, IDs handed out; never a query, a token or a body
    /// (default off).
    pub access_log: bool,
    /// How long a start waits for a store it cannot reach (refused, no such host, no
    /// answer), trying every second, in seconds (default 0: fail at once; at most 3,600).
    /// `/healthz` answers meanwhile, and every other route 503 "starting".
    pub wait_for_store_secs: u64,
    /// A fixed worker ID for the snowflake routes (default none: the store leases the
    /// lowest free one). Still leased: a start while another live process holds it
    /// waits up to a lease TTL for that lease to lapse, then fails naming the holder.
    pub worker_id: Option<u64>,
    /// Take the worker ID from this Kubernetes StatefulSet pod's ordinal (the digits
    /// after the last `-` of `$HOSTNAME`), plus `pod_ordinal_offset`; leased as
    /// `worker_id` is (default off).
    pub pod_ordinal: bool,
    /// Added to the pod ordinal (default 0), so StatefulSets sharing a store can each
    /// have their own range of worker IDs.
    pub pod_ordinal_offset: u64,
    /// Connection and request limits.
    pub limits: Limits,
    /// Opaque-ID keys from `UIDGEN_OPAQUE_KEYS` or `opaque_keys_file`; never from the
    /// TOML itself.
    #[serde(skip)]
    pub opaque: Option<Arc<OpaqueIds>>,
    /// Tokens from `UIDGEN_TOKENS` or `tokens_file`; never from the TOML itself, so a
    /// config file can be shown without showing a secret.
    #[serde(skip)]
    pub tokens: Tokens,
    /// Whether the tokens and the keys came from their variables, which a reload
    /// cannot read again (a process's environment is fixed).
    #[serde(skip)]
    pub(crate) secrets_from_vars: (bool, bool),
}

/// A segment tag whose IDs are its period (`yyyyMMdd` or `yyyyMM`) then a sequence that
/// restarts each period (`uidgen::PeriodSegmentGenerator`).
///
/// ```
/// let config: uidgen_server::Config = toml::from_str(r#"
///     [[period_tags]]
///     tag = "receipt"
///     period = "day"
///     utc_offset = "+08:00"
///     sequence_digits = 6
/// "#).unwrap();
/// assert_eq!(config.period_tags[0].tag, "receipt");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PeriodTag {
    /// The tag; each period's counter is the store row `tag:yyyyMMdd` (or `tag:yyyyMM`).
    pub tag: String,
    /// `day` (the default) or `month`.
    #[serde(default = "PeriodTag::default_period")]
    pub period: String,
    /// The zone periods change in, as an offset from UTC: `+08:00`, `-05:00` (default
    /// `+00:00`).
    #[serde(default = "PeriodTag::default_offset")]
    pub utc_offset: String,
    /// Digits of the sequence (default the most that fit: 10 for a day, 12 for a
    /// month; a day with 7 or fewer keeps IDs exact in JavaScript).
    pub sequence_digits: Option<u32>,
    /// Each period's first sequence number (default 1).
    #[serde(default = "PeriodTag::default_first")]
    pub first_sequence: u64,
}

impl PeriodTag {
    fn default_period() -> String {
        "day".into()
    }
    fn default_offset() -> String {
        "+00:00".into()
    }
    fn default_first() -> u64 {
        1
    }

    /// `utc_offset` in minutes east of UTC.
    pub(crate) fn offset_minutes(&self) -> Result<i32, ConfigError> {
        self.utc_offset
            .trim()
            .parse::<chrono::FixedOffset>()
            .map(|offset| offset.local_minus_utc() / 60)
            .map_err(|_| ConfigError::Invalid {
                field: "period_tags.utc_offset",
                value: self.utc_offset.chars().take(16).collect(),
                limit: "an offset from UTC such as +08:00 or -05:30".into(),
            })
    }
}

/// A segment tag served from several independent stores, store `i` handing out only IDs
/// ≡ `remainders[i]` (mod `modulus`), as Tinyid's `delta`/`remainder` and MySQL's
/// `auto_increment_increment` do (`uidgen::ResidueSegmentGenerator`): losing a store
/// loses only its share.
///
/// ```
/// let config: uidgen_server::Config = toml::from_str(r#"
///     [[residue_tags]]
///     tag = "order"
///     stores = ["mysql://ids@db-a/ids", "postgres://ids@db-b/ids"]
/// "#).unwrap();
/// assert_eq!(config.residue_tags[0].stores.len(), 2);
/// ```
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResidueTag {
    /// The tag, the same name in every store.
    pub tag: String,
    /// The stores' URLs (any form `uidgen::StoreUrl` reads), one class each.
    pub stores: Vec<String>,
    /// `d` (default: the number of stores).
    pub modulus: Option<u64>,
    /// Each store's remainder, in the order of `stores` (default 0, 1, 2, …).
    pub remainders: Option<Vec<u64>>,
}

impl std::fmt::Debug for ResidueTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stores: Vec<String> = self
            .stores
            .iter()
            .map(|u| uidgen_store_redacted(u))
            .collect();
        f.debug_struct("ResidueTag")
            .field("tag", &self.tag)
            .field("stores", &stores)
            .field("modulus", &self.modulus)
            .field("remainders", &self.remainders)
            .finish()
    }
}

impl ResidueTag {
    /// `d`, and each store's remainder.
    pub(crate) fn classes(&self) -> (u64, Vec<u64>) {
        let modulus = self.modulus.unwrap_or(self.stores.len() as u64);
        let remainders = self
            .remainders
            .clone()
            .unwrap_or_else(|| (0..self.stores.len() as u64).collect());
        (modulus, remainders)
    }
}

/// The largest request head (request line and headers), in bytes: a larger one is
/// answered 431 with a JSON body naming the limit. hyper's own read buffer is four times
/// this (its limit is checked between reads, so one large read could pass it); only a
/// head past that is cut off by hyper itself, with an empty 431.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The longest request target (path and query), in bytes: a longer one is answered 414
/// with a JSON body naming the limit.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Connection and request limits.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Limits {
    /// A request's whole time, answer included (default 5,000 ms; 408 past it).
    pub request_timeout_ms: u64,
    /// Time for a connection to send a request's headers (default 5,000 ms; the
    /// connection is closed past it).
    pub header_timeout_ms: u64,
    /// Open connections at once (default 10,000); more wait to be accepted.
    pub max_connections: usize,
    /// A request body's size (default 16 KiB; 413 past it).
    pub max_body_bytes: usize,
    /// Time given to in-flight requests on SIGTERM, SIGINT or SIGQUIT (default 10,000 ms).
    pub shutdown_grace_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout_ms: 5_000,
            header_timeout_ms: 5_000,
            max_connections: 10_000,
            max_body_bytes: 16 * 1024,
            shutdown_grace_ms: 10_000,
        }
    }
}

impl Limits {
    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
    pub(crate) fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }
    pub(crate) fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.parse().expect("a valid address"),
            allow_public: false,
            store: None,
            layout: "default".into(),
            lease_ttl_ms: uidgen::DEFAULT_LEASE_TTL.as_millis() as u64,
            max_time_ahead_ms: 5_000,
            tags: Vec::new(),
            tag_start: None,
            create_tags_removed: None,
            tag_step: 1_000,
            max_count: DEFAULT_MAX_COUNT,
            tinyid_loading_percent: 20,
            tokens_file: None,
            period_tags: Vec::new(),
            residue_tags: Vec::new(),
            opaque_keys_file: None,
            cors_origins: Vec::new(),
            access_log: false,
            wait_for_store_secs: 0,
            worker_id: None,
            pod_ordinal: false,
            pod_ordinal_offset: 0,
            limits: Limits::default(),
            opaque: None,
            tokens: Tokens::default(),
            secrets_from_vars: (false, false),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("allow_public", &self.allow_public)
            .field(
                "store",
                &self.store.as_deref().map(uidgen_store_redacted).as_deref(),
            )
            .field("layout", &self.layout)
            .field("tags", &self.tags)
            .field("tag_start", &self.tag_start)
            .field("max_count", &self.max_count)
            .field("period_tags", &self.period_tags)
            .field("residue_tags", &self.residue_tags)
            .field("opaque", &self.opaque)
            .field("tokens", &self.tokens)
            .field("cors_origins", &self.cors_origins)
            .field("access_log", &self.access_log)
            .field("wait_for_store_secs", &self.wait_for_store_secs)
            .field("worker_id", &self.worker_id)
            .field("pod_ordinal", &self.pod_ordinal)
            .field("pod_ordinal_offset", &self.pod_ordinal_offset)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A store URL as it may be shown: parsed and described, or only its scheme.
fn uidgen_store_redacted(url: &str) -> String {
    match uidgen::StoreUrl::parse(url) {
        Ok(parsed) => format!("{parsed:?}"),
        Err(_) => "<a store URL that cannot be read>".into(),
    }
}

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

impl Config {
    /// The file's settings (or the defaults with no file), then `UIDGEN_*` variables
    /// from `env` (pass `std::env::vars()`): `UIDGEN_LISTEN`, `UIDGEN_STORE`,
    /// `UIDGEN_LAYOUT`, `UIDGEN_MAX_COUNT`, `UIDGEN_TAGS` (comma-separated),
    /// `UIDGEN_TAG_START`, `UIDGEN_ALLOW_PUBLIC`, `UIDGEN_TOKENS_FILE`, and the tokens
    /// themselves in `UIDGEN_TOKENS` (`TOKEN=tag,tag;TOKEN2=*`). Tokens are read last,
    /// from the variable or the file; call [`check`](Self::check) after setting flags.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
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
        for (key, value) in env {
            match key.as_str() {
                "UIDGEN_LISTEN" => config.listen = parse_field("UIDGEN_LISTEN", &value)?,
                "UIDGEN_STORE" => config.store = Some(value),
                "UIDGEN_LAYOUT" => config.layout = value,
                "UIDGEN_MAX_COUNT" => config.max_count = parse_field("UIDGEN_MAX_COUNT", &value)?,
                "UIDGEN_TAGS" => {
                    config.tags = value
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect()
                }
                "UIDGEN_TAG_START" => {
                    config.tag_start = Some(parse_field("UIDGEN_TAG_START", &value)?)
                }
                // Set off, the old switch is harmless; set on, it is refused.
                "UIDGEN_CREATE_TAGS"
                    if !value.trim().is_empty()
                        && parse_bool("UIDGEN_CREATE_TAGS", &value).ok() != Some(false) =>
                {
                    return Err(ConfigError::Invalid {
                        field: "UIDGEN_CREATE_TAGS",
                        value: value.chars().take(80).collect(),
                        limit: CREATE_TAGS_GONE.into(),
                    });
                }
                "UIDGEN_WAIT_FOR_STORE" => {
                    config.wait_for_store_secs = parse_field("UIDGEN_WAIT_FOR_STORE", &value)?
                }
                "UIDGEN_WORKER_ID" => {
                    config.worker_id = Some(parse_field("UIDGEN_WORKER_ID", &value)?)
                }
                "UIDGEN_POD_ORDINAL" => {
                    config.pod_ordinal = parse_bool("UIDGEN_POD_ORDINAL", &value)?
                }
                "UIDGEN_POD_ORDINAL_OFFSET" => {
                    config.pod_ordinal_offset = parse_field("UIDGEN_POD_ORDINAL_OFFSET", &value)?
                }
                "UIDGEN_ACCESS_LOG" => config.access_log = parse_bool("UIDGEN_ACCESS_LOG", &value)?,
                "UIDGEN_ALLOW_PUBLIC" => {
                    config.allow_public = parse_bool("UIDGEN_ALLOW_PUBLIC", &value)?
                }
                "UIDGEN_TOKENS_FILE" => config.tokens_file = Some(value.into()),
                // Set but empty, as templates leave it, is unset.
                "UIDGEN_TOKENS" if value.trim().is_empty() => {}
                "UIDGEN_TOKENS" => tokens_var = Some(value),
                "UIDGEN_OPAQUE_KEYS_FILE" => config.opaque_keys_file = Some(value.into()),
                "UIDGEN_OPAQUE_KEYS" => keys_var = Some(value),
                "UIDGEN_CORS_ORIGINS" => {
                    config.cors_origins = value
                        .split(',')
                        .map(str::trim)
                        .filter(|o| !o.is_empty())
                        .map(String::from)
                        .collect()
                }
                _ => {}
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

    /// Checks the settings against each other: limits in range, and no public address
    /// without tokens unless `allow_public`.
    pub fn check(&self) -> Result<(), ConfigError> {
        let invalid = |field, value: String, limit: &str| ConfigError::Invalid {
            field,
            value,
            limit: limit.into(),
        };
        if self.create_tags_removed == Some(true) {
            return Err(invalid("create_tags", "true".into(), CREATE_TAGS_GONE));
        }
        if let (Some(id), true) = (self.worker_id, self.pod_ordinal) {
            return Err(invalid(
                "worker_id",
                id.to_string(),
                "either a fixed worker_id or pod_ordinal, not both",
            ));
        }
        for origin in &self.cors_origins {
            if !is_origin(origin) {
                // A URL with a user part may hold a password.
                let shown = if origin.contains('@') {
                    "(not shown: it holds a user part)".to_owned()
                } else {
                    origin.chars().take(80).collect()
                };
                return Err(invalid(
                    "cors_origins",
                    shown,
                    "* or an origin as browsers send it: http:// or https://, a host and \
                     an optional port, no path (like https://app.example.com:8443)",
                ));
            }
        }
        if let Some(start) = self.tag_start {
            // A tag's counter must leave room for one range below the largest BIGINT.
            let last = (i64::MAX as u64).saturating_sub(self.tag_step);
            if !(1..=last).contains(&start) {
                return Err(invalid(
                    "tag_start",
                    start.to_string(),
                    &format!("1 to {last} (the largest BIGINT less tag_step)"),
                ));
            }
        }
        let limits = &self.limits;
        let step_limit = format!("1 to {}", uidgen::MAX_BASE_STEP);
        // Each numeric setting, its allowed range, and the range in words.
        let ranges: [(&'static str, u64, RangeInclusive<u64>, &str); 11] = [
            (
                "wait_for_store_secs",
                self.wait_for_store_secs,
                0..=3_600,
                "0 to 3600 seconds",
            ),
            (
                "max_count",
                self.max_count,
                1..=MAX_MAX_COUNT,
                "1 to 1000000",
            ),
            (
                "tag_step",
                self.tag_step,
                1..=uidgen::MAX_BASE_STEP,
                &step_limit,
            ),
            (
                "lease_ttl_ms",
                self.lease_ttl_ms,
                1_000..=3_600_000,
                "1000 to 3600000 (1 s to 1 hour)",
            ),
            (
                "max_time_ahead_ms",
                self.max_time_ahead_ms,
                0..=3_600_000,
                "0 (no cap) to 3600000 (1 hour)",
            ),
            (
                "tinyid_loading_percent",
                self.tinyid_loading_percent,
                1..=100,
                "1 to 100",
            ),
            (
                "limits.request_timeout_ms",
                limits.request_timeout_ms,
                1..=3_600_000,
                "1 to 3600000 (1 hour)",
            ),
            (
                "limits.header_timeout_ms",
                limits.header_timeout_ms,
                1..=3_600_000,
                "1 to 3600000 (1 hour)",
            ),
            (
                "limits.shutdown_grace_ms",
                limits.shutdown_grace_ms,
                0..=3_600_000,
                "0 to 3600000 (1 hour)",
            ),
            (
                "limits.max_connections",
                limits.max_connections as u64,
                1..=1_000_000,
                "1 to 1000000",
            ),
            (
                "limits.max_body_bytes",
                limits.max_body_bytes as u64,
                1..=16 * 1024 * 1024,
                "1 to 16777216 (16 MiB)",
            ),
        ];
        for (field, value, allowed, limit) in ranges {
            if !allowed.contains(&value) {
                return Err(invalid(field, value.to_string(), limit));
            }
        }
        // Period and residue tags: each a valid tag, no grant name, listed once, and
        // not also a plain tag.
        let special = self
            .period_tags
            .iter()
            .map(|t| ("period_tags.tag", &t.tag))
            .chain(
                self.residue_tags
                    .iter()
                    .map(|t| ("residue_tags.tag", &t.tag)),
            );
        for (i, (field, tag)) in special.clone().enumerate() {
            if let Err(rule) = check_tag(tag) {
                return Err(invalid(field, tag.chars().take(64).collect(), &rule));
            }
            if GRANT_NAMES.contains(&tag.as_str()) || tag == "*" {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "a tag other than @snowflake, @opaque and * (they mean routes or every tag \
                     in token grants)",
                ));
            }
            if special.clone().take(i).any(|(_, earlier)| earlier == tag) {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "each period or residue tag once (this one is listed twice)",
                ));
            }
            if self.tags.contains(tag) {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "a tag not also in tags (a tag is plain, a period tag or a residue tag)",
                ));
            }
        }
        for period_tag in &self.period_tags {
            period_tag.offset_minutes()?;
            period_tag.period.parse::<uidgen::Period>().map_err(|e| {
                invalid(
                    "period_tags.period",
                    period_tag.period.clone(),
                    &e.to_string(),
                )
            })?;
        }
        for residue_tag in &self.residue_tags {
            let (_, remainders) = residue_tag.classes();
            if !(2..=MAX_RESIDUE_STORES).contains(&residue_tag.stores.len())
                || remainders.len() != residue_tag.stores.len()
            {
                return Err(invalid(
                    "residue_tags.stores",
                    format!(
                        "{} stores and {} remainders",
                        residue_tag.stores.len(),
                        remainders.len()
                    ),
                    &format!(
                        "2 to {MAX_RESIDUE_STORES} stores, and one remainder for each (each \
                         store is a connection and a thread)"
                    ),
                ));
            }
        }
        if !self.listen.ip().is_loopback() && self.tokens.is_empty() && !self.allow_public {
            return Err(invalid(
                "listen",
                self.listen.to_string(),
                "a loopback address while no tokens are configured: set tokens \
                 (UIDGEN_TOKENS or tokens_file), or allow_public = true \
                 (--allow-public) to serve anyone who can reach it",
            ));
        }
        Ok(())
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

/// `*`, or `scheme://host[:port]` with an http(s) scheme and nothing after it.
fn is_origin(origin: &str) -> bool {
    if origin == "*" {
        return true;
    }
    let Ok(uri) = origin.parse::<axum::http::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https"))
        && uri
            .authority()
            .is_some_and(|a| !a.host().is_empty() && !a.as_str().contains('@'))
        && uri
            .path_and_query()
            .is_none_or(|p| p.as_str().is_empty() || p.as_str() == "/")
        && !origin.ends_with('/')
        && axum::http::HeaderValue::from_str(origin).is_ok()
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

fn parse_field<T: std::str::FromStr>(field: &'static str, value: &str) -> Result<T, ConfigError>
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `Config::load` of `toml` (as a file) and `vars`, then `check`.
    fn load_checked(toml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(&file, toml).unwrap();
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Config::load(Some(&file), vars).and_then(|c| c.check().map(|()| c))
    }

    #[test]
    fn an_unknown_key_is_reported_on_its_own_line() {
        for (toml, line) in [
            ("max_cont = 5\n", 1),
            (
                "# a comment\n\nlisten = \"127.0.0.1:9000\"\nmax_cont = 5\n",
                4,
            ),
            ("layout = \"default\"\n\n\n\n\n\n\n\nmax_cont = 5\n", 9),
            ("[limits]\nmax_body_bytes = 100\nbogus = 1\n", 3),
        ] {
            let err = load_checked(toml, &[]).unwrap_err().to_string();
            assert!(err.contains(&format!("line {line}:")), "{toml:?}: {err}");
        }
    }

    #[test]
    fn an_empty_tokens_file_is_refused_saying_how_to_run_without_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        for empty in ["", "\n\n", "# nobody yet\n   \n"] {
            std::fs::write(&file, empty).unwrap();
            let toml = format!("tokens_file = {:?}\n", file.display().to_string());
            let err = load_checked(&toml, &[]).unwrap_err().to_string();
            assert!(err.contains("holds no token"), "{err}");
            assert!(err.contains("leave out tokens_file"), "{err}");
        }
        // A variable set but empty is unset: the service runs with no tokens on loopback.
        let config = load_checked("", &[("UIDGEN_TOKENS", "")]).unwrap();
        assert!(config.tokens.is_empty());
    }

    #[test]
    fn booleans_are_read_in_every_common_spelling() {
        for on in [
            "true", "TRUE", "True", "yes", "Yes", "on", "ON", "1", "y", "t",
        ] {
            let config = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", on)]).unwrap();
            assert!(config.allow_public, "{on}");
            let err = load_checked("", &[("UIDGEN_CREATE_TAGS", on)]).unwrap_err();
            assert!(
                err.to_string().contains("UIDGEN_CREATE_TAGS"),
                "{on}: {err}"
            );
        }
        for off in [
            "false", "FALSE", "no", "No", "off", "0", "n", "f", " false ",
        ] {
            let config = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", off)]).unwrap();
            assert!(!config.allow_public, "{off}");
            assert!(
                load_checked("", &[("UIDGEN_CREATE_TAGS", off)]).is_ok(),
                "{off}"
            );
        }
        let err = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", "maybe")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("yes/no") && err.contains("maybe"), "{err}");
    }

    #[test]
    fn cors_origins_must_be_origins() {
        let config = load_checked(
            "",
            &[(
                "UIDGEN_CORS_ORIGINS",
                "https://a.example, http://b.example:8080",
            )],
        )
        .unwrap();
        assert_eq!(
            config.cors_origins,
            ["https://a.example", "http://b.example:8080"]
        );
        assert!(load_checked("cors_origins = [\"*\"]\n", &[]).is_ok());
        for bad in [
            "a.example",
            "https://a.example/",
            "https://a.example/path",
            "ftp://a.example",
            "https://user:pw@a.example",
            "https://a.example?x=1",
            "https://",
        ] {
            let err = load_checked("", &[("UIDGEN_CORS_ORIGINS", bad)])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("cors_origins") && err.contains("no path"),
                "{bad}: {err}"
            );
            assert!(!err.contains("pw@"), "{err}");
        }
    }

    #[test]
    fn neither_debug_nor_a_bad_file_shows_a_store_password() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(&file, "store = \"mysql://ids:Sup3rSecret@db/ids\"\n").unwrap();
        let config = Config::load(Some(&file), Vec::new()).unwrap();
        assert!(!format!("{config:?}").contains("Sup3rSecret"), "{config:?}");
        for bad in [
            "store = \"mysql://ids:Sup3rSecret@db/ids\nmax_count = 5\n",
            "max_count = \"mysql://ids:Sup3rSecret@db/ids\"\n",
            "store = \"mysql://ids:Sup3rSecret@db/ids\"\nlisten = 5\n",
            "store = \"mysql://ids:Sup3rSecret@db/ids\"\nunknown = 1\n",
        ] {
            std::fs::write(&file, bad).unwrap();
            let err = Config::load(Some(&file), Vec::new())
                .expect_err(bad)
                .to_string();
            assert!(!err.contains("Sup3rSecret"), "{err}");
            assert!(err.contains("line"), "{err}");
        }
    }

    #[test]
    fn tags_are_created_only_where_a_start_is_named() {
        let load = |toml: &str, vars: Vec<(String, String)>| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("serve.toml");
            std::fs::write(&file, toml).unwrap();
            Config::load(Some(&file), vars).and_then(|c| c.check().map(|()| c))
        };
        let config = load("tags = [\"order\"]\n", Vec::new()).unwrap();
        assert_eq!(config.tag_start, None);
        let config = load("tag_start = 1000\n", Vec::new()).unwrap();
        assert_eq!(config.tag_start, Some(1000));
        let var = |v: &str| vec![("UIDGEN_TAG_START".to_string(), v.to_string())];
        assert_eq!(load("", var("7")).unwrap().tag_start, Some(7));
        for (toml, vars, wanted) in [
            (
                "tag_start = 0\n",
                Vec::new(),
                "tag_start = 0 is not allowed: 1 to",
            ),
            ("", var("0"), "tag_start = 0 is not allowed"),
            ("", var("-1"), "UIDGEN_TAG_START"),
            (
                "create_tags = true\n",
                Vec::new(),
                "create_tags = true is not allowed",
            ),
            (
                "",
                vec![("UIDGEN_CREATE_TAGS".into(), "true".into())],
                "UIDGEN_CREATE_TAGS = true is not allowed: no longer supported",
            ),
            (
                "",
                vec![("UIDGEN_CREATE_TAGS".into(), "1".into())],
                "UIDGEN_CREATE_TAGS = 1 is not allowed",
            ),
            // The largest start leaves room for one range of tag_step.
            (
                "tag_start = 9223372036854775807\n",
                Vec::new(),
                "1 to 9223372036854774807 (the largest BIGINT less tag_step)",
            ),
        ] {
            let err = load(toml, vars).unwrap_err().to_string();
            assert!(err.contains(wanted), "{toml:?}: {err}");
        }
        // The old switch set off is harmless.
        assert!(load("create_tags = false\n", Vec::new()).is_ok());
        let off = |v: &str| vec![("UIDGEN_CREATE_TAGS".to_string(), v.to_string())];
        assert!(load("", off("false")).is_ok() && load("", off("0")).is_ok());
        assert!(load("tag_start = 9223372036854774807\n", Vec::new()).is_ok());
    }

    #[test]
    fn variables_override_the_file_and_bad_values_name_the_variable() {
        let config = Config::load(
            None,
            vec![
                ("UIDGEN_MAX_COUNT".into(), "7".into()),
                ("UIDGEN_TAGS".into(), " a, b ,,".into()),
            ],
        )
        .unwrap();
        assert_eq!(config.max_count, 7);
        assert_eq!(config.tags, ["a", "b"]);
        let err = Config::load(None, vec![("UIDGEN_MAX_COUNT".into(), "many".into())])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("UIDGEN_MAX_COUNT") && err.contains("many"),
            "{err}"
        );
        let config = Config {
            max_count: 2_000_000,
            ..Config::default()
        };
        assert!(config
            .check()
            .unwrap_err()
            .to_string()
            .contains("1 to 1000000"));
    }
}
