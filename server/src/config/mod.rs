//! The service's settings. `mod.rs` is the schema (the TOML file's keys, their defaults);
//! `settings.rs` names every setting's three spellings and sets one from a line;
//! `load.rs` applies the layers (file, variables, flags, then the secrets); `check.rs`
//! holds them to their limits and to each other; `error.rs` says what is wrong.

mod check;
mod error;
mod load;
mod settings;
#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub use settings::{env_variables, Setting, SettingKind, SETTINGS};

use crate::tokens::Tokens;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use uidgen::OpaqueIds;

/// The largest `count` any route accepts by default.
pub const DEFAULT_MAX_COUNT: u64 = 100_000;
/// The most `count` may be set to: a response of that many IDs is about 40 MB of JSON.
pub const MAX_MAX_COUNT: u64 = 1_000_000;
/// Where the service listens by default: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
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
    /// The snowflake layout: a preset name (default `default`), `TIME/WORKER/SEQ` or
    /// `TIME/REGION/WORKER/SEQ`, as `uidgen migrate plan` prints it.
    pub layout: String,
    /// The layout's tick length (`s`, `ms`, `10ms`; default the preset's, seconds for
    /// bits).
    pub unit: Option<String>,
    /// The layout's epoch (a date or RFC 3339; default the preset's, 2026-01-01 for bits).
    pub epoch: Option<String>,
    /// The region every snowflake ID holds, with a `TIME/REGION/WORKER/SEQ` layout.
    pub region: Option<u64>,
    /// No ID at or below this is served, snowflake or segment (an old scheme's highest
    /// ID, from `uidgen migrate plan`): the service refuses to start when its first
    /// snowflake ID, or a configured tag's next ID, would be at or below it.
    pub id_floor: Option<u64>,
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
    /// Lease only worker IDs from FIRST to LAST, both included (`"0-511"`; default
    /// every one the layout holds): one region's or fleet's share, so deployments with
    /// stores of their own never hold the same worker ID.
    pub worker_ids: Option<String>,
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

impl Config {
    /// The snowflake layout `layout`, `unit`, `epoch` and `region` name, unchecked
    /// against the clock; an error names the setting.
    pub fn layout_builder(&self) -> Result<uidgen::LayoutBuilder, ConfigError> {
        let invalid =
            |field: &'static str, value: &str, e: uidgen::ConfigError| ConfigError::Invalid {
                field,
                value: value.chars().take(40).collect(),
                limit: e.to_string(),
            };
        let mut builder = uidgen::LayoutBuilder::parse(&self.layout)
            .map_err(|e| invalid("layout", &self.layout, e))?;
        if let Some(unit) = &self.unit {
            builder = builder.unit(unit.parse().map_err(|e| invalid("unit", unit, e))?);
        }
        if let Some(epoch) = &self.epoch {
            builder = builder.epoch(epoch);
        }
        if let Some(region) = self.region {
            builder = builder
                .region_value(region)
                .map_err(|e| invalid("region", &region.to_string(), e))?;
        }
        Ok(builder)
    }

    /// `worker_ids` read, unchecked against the layout; an error names the setting.
    pub fn worker_id_range(&self) -> Result<Option<uidgen::WorkerIdRange>, ConfigError> {
        self.worker_ids
            .as_deref()
            .map(|text| {
                text.parse().map_err(|e| {
                    worker_ids_invalid("worker_ids", text.chars().take(40).collect(), e)
                })
            })
            .transpose()
    }
}

/// `worker_ids` refused, in the words of the library's check.
pub(crate) fn worker_ids_invalid(
    field: &'static str,
    value: String,
    err: uidgen::ConfigError,
) -> ConfigError {
    let limit = match err {
        uidgen::ConfigError::OutOfRange { limit, .. } => limit,
        other => other.to_string(),
    };
    ConfigError::Invalid {
        field,
        value,
        limit,
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.parse().expect("a valid address"),
            allow_public: false,
            store: None,
            layout: "default".into(),
            unit: None,
            epoch: None,
            region: None,
            id_floor: None,
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
            worker_ids: None,
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
            .field("unit", &self.unit)
            .field("epoch", &self.epoch)
            .field("region", &self.region)
            .field("id_floor", &self.id_floor)
            .field("lease_ttl_ms", &self.lease_ttl_ms)
            .field("max_time_ahead_ms", &self.max_time_ahead_ms)
            .field("tags", &self.tags)
            .field("tag_start", &self.tag_start)
            .field("tag_step", &self.tag_step)
            .field("max_count", &self.max_count)
            .field("tinyid_loading_percent", &self.tinyid_loading_percent)
            .field("tokens_file", &self.tokens_file)
            .field("period_tags", &self.period_tags)
            .field("residue_tags", &self.residue_tags)
            .field("opaque_keys_file", &self.opaque_keys_file)
            .field("opaque", &self.opaque)
            .field("tokens", &self.tokens)
            .field("cors_origins", &self.cors_origins)
            .field("access_log", &self.access_log)
            .field("wait_for_store_secs", &self.wait_for_store_secs)
            .field("worker_id", &self.worker_id)
            .field("worker_ids", &self.worker_ids)
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
