//! Where the service's IDs come from: one cached snowflake generator on a leased worker
//! ID, one segment generator per tag (made on first use), and ranges straight from the
//! segment store for smart clients.

use crate::config::Config;
use crate::error::shown_tag;
use crate::metrics::Metrics;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, CachedUidGenerator, PeriodSegmentGenerator, ResidueSegmentGenerator,
    SegmentGenerator, SegmentStore, StoreUrl, UidGenerator,
};

mod build;
mod draw;
mod error;
mod handed;
pub(crate) mod machines;
mod ready;
mod status;

pub use error::StartError;
#[cfg(test)]
pub(crate) use status::{LeaseStatus, SnowflakeStatus, SourceStatus, StoreStatus, TagStatus};
pub(crate) use status::{RangeStatus, Status};

use build::{build_period, build_residue, build_segment, build_snowflake};
/// The most segment tags one service serves at once (each holds a generator).
pub const MAX_SERVED_TAGS: usize = 10_000;
/// The readiness probe's tag: read, never created.
const PROBE_TAG: &str = "uidgen-readiness-probe";
/// How recent the last good store call must be for the service to be ready.
const STORE_FRESH: Duration = Duration::from_secs(3);
/// How long a store call may take before it counts as failed (and the service stops
/// being ready).
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// The service's ID sources and state, shared by every request.
pub struct Ids {
    pub(crate) config: Config,
    /// Replaced by one on a new lease when the old lease is lost (the store failed past
    /// it, a pause, a store that lost data), once the store lets it be taken.
    snowflake: arc_swap::ArcSwap<CachedUidGenerator>,
    /// Where the snowflake generator's leases come from, and its layout.
    lease_url: StoreUrl,
    bits: BitsAllocator,
    /// When a lost lease was last tried again, in ms since `started`.
    healed_at: AtomicU64,
    /// The last probe found the snowflake generator waiting for the clock.
    waiting_seen: std::sync::atomic::AtomicBool,
    /// The counters of snowflake generators replaced after a lost lease: renewals,
    /// renewal failures, clock rollbacks, rejected takes (metrics never go down).
    retired: std::sync::Mutex<[u64; 4]>,
    store: Arc<dyn SegmentStore>,
    /// CosId's machine IDs, a lease table per namespace.
    machines: machines::Machines,
    /// Ranges handed to clients, with receipts for giving their tails back.
    handed: handed::HandedRanges,
    segments: RwLock<HashMap<String, Arc<SegmentGenerator>>>,
    /// The period tags, set up at start.
    periods: HashMap<String, Arc<PeriodSegmentGenerator>>,
    /// IDs of a period tag that a failed batch took, for the next request.
    period_kept: std::sync::Mutex<HashMap<String, Vec<u64>>>,
    /// The residue tags (one tag over several stores), set up at start.
    residues: HashMap<String, Arc<ResidueSegmentGenerator>>,
    /// Each served tag's base step, the size of a range handed to Tinyid's client.
    steps: RwLock<HashMap<String, u64>>,
    /// Only one task sets up a tag at a time (so two requests do not build two
    /// generators for one tag).
    setting_up: tokio::sync::Mutex<()>,
    pub(crate) metrics: Metrics,
    /// When a refused token was last logged (ms since `started`), and how many refusals
    /// went unlogged since: a client retrying a bad token must not flood the log.
    refusals_logged: AtomicU64,
    refusals_quiet: AtomicU64,
    /// The tokens requests are checked against: the config's, until a reload replaces
    /// them whole.
    tokens: arc_swap::ArcSwap<crate::tokens::Tokens>,
    /// The opaque-ID keys, the same way.
    opaque: arc_swap::ArcSwapOption<uidgen::OpaqueIds>,
    /// Where opaque batches are made (see `batch_pool`); only with opaque-ID keys.
    pub(crate) batches: Option<crate::batch_pool::BatchPool>,
    /// When the store last answered, in ms since `started` (0: never).
    store_ok_at: AtomicU64,
    /// How long the last store probe took, in µs.
    store_latency_us: AtomicU64,
    /// When the probe in flight began (Unix ms; 0: none in flight): a silent store holds
    /// one for the store's step bound.
    probe_started_ms: AtomicU64,
    /// When the first failing probe since the store last answered began (Unix ms; 0: it
    /// answers), written once so that every reader sees the same time.
    store_failing_since_ms: AtomicU64,
    started: Instant,
    store_error: RwLock<Option<String>>,
    shutting_down: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ids")
            .field("store", &self.store)
            .field("worker_id", &self.snowflake.load().worker_id())
            .finish_non_exhaustive()
    }
}

impl Ids {
    /// Opens the store, leases a worker ID, fills the snowflake ring and sets up the
    /// configured tags. Blocks (store calls): call it before serving, or on a blocking
    /// thread.
    pub fn start(config: Config) -> Result<Self, StartError> {
        config.check()?;
        let url = match &config.store {
            Some(url) => StoreUrl::parse(url)?,
            None => StoreUrl::embedded()?,
        }
        .timeout(STORE_TIMEOUT);
        let bits = config.layout_builder()?.build()?;
        let snowflake = build_snowflake(&url, bits, &config)?;
        let store: Arc<dyn SegmentStore> = Arc::from(url.segment_store()?);
        let mut ids = Self {
            snowflake: arc_swap::ArcSwap::from_pointee(snowflake),
            lease_url: url,
            bits,
            healed_at: AtomicU64::new(0),
            waiting_seen: false.into(),
            retired: std::sync::Mutex::new([0; 4]),
            store,
            machines: machines::Machines::default(),
            handed: handed::HandedRanges::default(),
            segments: RwLock::new(HashMap::new()),
            periods: HashMap::new(),
            residues: HashMap::new(),
            period_kept: std::sync::Mutex::new(HashMap::new()),
            steps: RwLock::new(HashMap::new()),
            setting_up: tokio::sync::Mutex::new(()),
            metrics: Metrics::new(),
            refusals_logged: AtomicU64::new(0),
            refusals_quiet: AtomicU64::new(0),
            tokens: arc_swap::ArcSwap::from_pointee(config.tokens.clone()),
            opaque: arc_swap::ArcSwapOption::new(config.opaque.clone()),
            batches: config
                .opaque
                .is_some()
                .then(|| {
                    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                    crate::batch_pool::BatchPool::start(cores)
                })
                .transpose()
                .map_err(StartError::Threads)?,
            store_ok_at: AtomicU64::new(0),
            store_latency_us: AtomicU64::new(0),
            probe_started_ms: AtomicU64::new(0),
            store_failing_since_ms: AtomicU64::new(0),
            started: Instant::now(),
            store_error: RwLock::new(None),
            shutting_down: false.into(),
            config,
        };
        let create = ids
            .config
            .tag_start
            .map(|start| (start, ids.config.tag_step));
        let floor = ids.config.id_floor;
        for tag in ids.config.tags.clone() {
            let generator = build_segment(Arc::clone(&ids.store), &tag, create, floor)
                .map_err(|source| StartError::tag(&tag, false, source))?;
            write(&ids.segments).insert(tag, Arc::new(generator));
        }
        for period_tag in ids.config.period_tags.clone() {
            let generator = build_period(Arc::clone(&ids.store), &period_tag, ids.config.tag_step)
                .map_err(|source| StartError::Segment {
                    tag: shown_tag(&period_tag.tag),
                    source: Box::new(source),
                })?;
            ids.periods.insert(period_tag.tag, Arc::new(generator));
        }
        for residue_tag in ids.config.residue_tags.clone() {
            let generator = build_residue(
                &residue_tag,
                ids.config.tag_step,
                ids.config.tag_start,
                ids.config.id_floor,
            )
            .map_err(|source| StartError::tag(&residue_tag.tag, true, source))?;
            ids.residues.insert(residue_tag.tag, Arc::new(generator));
        }
        ids.probe_store();
        Ok(ids)
    }

    /// The snowflake generator (a new one after a lost lease was taken again).
    pub fn snowflake(&self) -> Arc<CachedUidGenerator> {
        self.snowflake.load_full()
    }

    /// Takes a new lease for the snowflake routes if the old one was lost and a second
    /// has passed since the last try: the service heals by itself once the store lets
    /// it (a store back after an outage, a process resumed after a pause, a store
    /// repaired after it lost data). Blocks (store calls).
    pub(crate) fn heal_snowflake(&self) {
        let current = self.snowflake.load();
        // A generator waiting for the clock (stepped back past the rollback allowance, or
        // a mark far ahead) is replaced too, by one on a worker ID whose mark is behind
        // the clock, once it has waited two probes in a row.
        let waiting = current.waiting_for_clock();
        let waited_before = self.waiting_seen.swap(waiting.is_some(), Ordering::Relaxed);
        let why = match (current.worker_id_lost(), waiting) {
            (Some(lost), _) => lost,
            (None, Some(waiting)) if waited_before => waiting,
            _ => return,
        };
        drop(current);
        if self.shutting_down.load(Ordering::Relaxed) {
            return;
        }
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.healed_at.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < 1000 {
            return;
        }
        self.healed_at.store(now.max(1), Ordering::Relaxed);
        match build_snowflake(&self.lease_url, self.bits, &self.config) {
            // Every free worker ID waits for the clock too: no better than the one held.
            Ok(generator)
                if generator.worker_id_lost().is_none()
                    && self.snowflake.load().worker_id_lost().is_none()
                    && generator.waiting_for_clock().is_some() =>
            {
                tracing::debug!("no free worker ID serves sooner; keeping the one held");
            }
            Ok(generator) => {
                let old = self.snowflake.swap(Arc::new(generator));
                let stats = old.stats();
                let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
                for (total, more) in retired.iter_mut().zip([
                    stats.lease_renewals,
                    stats.lease_renewal_failures,
                    stats.clock_rollbacks,
                    stats.rejected_takes,
                ]) {
                    *total += more;
                }
                self.metrics.leases_taken_again.inc();
                // WARN: a lease lost and taken again is worth an operator's look.
                tracing::warn!(
                    lost_worker_id = old.worker_id(),
                    worker_id = self.snowflake.load().worker_id(),
                    lost = %why,
                    "uidgen serve took a new lease: snowflake IDs are served again"
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "uidgen serve cannot take a new lease yet; retrying every second")
            }
        }
    }

    /// The opaque-ID keys, if configured (the ones read last: see [`Ids::reload`]).
    pub fn opaque(&self) -> Option<Arc<uidgen::OpaqueIds>> {
        self.opaque.load_full()
    }

    /// The tokens requests are checked against (the ones read last).
    pub fn tokens(&self) -> arc_swap::Guard<Arc<crate::tokens::Tokens>> {
        self.tokens.load()
    }

    /// Logs a request refused for its token, at most once a second (with how many were
    /// refused quietly since); never the token.
    pub(crate) fn token_refused(&self, tag: &str, why: &str) {
        let now = self.started.elapsed().as_millis() as u64 + 1;
        let last = self.refusals_logged.load(Ordering::Relaxed);
        if (last != 0 && now - last.min(now) < 1000)
            || self
                .refusals_logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.refusals_quiet.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let quiet = self.refusals_quiet.swap(0, Ordering::Relaxed);
        tracing::warn!(tag = %shown_tag(tag), why, refused_quietly_before = quiet, "refused a request's token");
    }

    /// Reads the tokens file and the opaque-keys file again, as SIGHUP asks. Each set is
    /// replaced whole, so a request sees the old set or the new one, never a mix; a file
    /// that cannot be read or used leaves its old set serving, and the error says why.
    /// Sets that came from `UIDGEN_TOKENS` or `UIDGEN_OPAQUE_KEYS` stay as they are.
    /// Returns what was done, a line per set.
    pub fn reload(&self) -> Vec<Result<String, crate::ConfigError>> {
        let mut done = Vec::new();
        if let Some(tokens) = self.config.reread_tokens() {
            done.push(tokens.map(|tokens| {
                let count = tokens.len();
                self.tokens.store(Arc::new(tokens));
                format!("tokens: {count} read again")
            }));
        }
        if let Some(keys) = self.config.reread_keys() {
            done.push(keys.map(|keys| {
                let version = keys.current_version();
                self.opaque.store(Some(keys));
                format!("opaque-ID keys read again; current key version {version}")
            }));
        }
        done
    }

    /// The snowflake layout.
    pub fn layout(&self) -> &BitsAllocator {
        &self.bits
    }

    /// Stops setting up tags and gives every tag's unused tail back to the store (so the
    /// next service's first ID of a tag is this one's last + 1); logs each outcome.
    /// The snowflake generator releases its worker ID with its exact time mark when the
    /// `Ids` is dropped.
    pub fn give_back(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
        let segments: Vec<_> = write(&self.segments).drain().collect();
        for (tag, generator) in segments {
            match Arc::try_unwrap(generator) {
                Ok(generator) => match generator.shutdown() {
                    Ok(outcome) => tracing::info!(tag = %shown_tag(&tag), ?outcome, "segment tail"),
                    Err(e) => {
                        tracing::warn!(tag = %shown_tag(&tag), error = %e, "segment tail not given back")
                    }
                },
                // A request still holds it: dropping the last handle gives the tail back.
                Err(_) => {
                    tracing::warn!(tag = %shown_tag(&tag), "segment tag still in use at shutdown; its tail is given back when the last request ends")
                }
            }
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}
