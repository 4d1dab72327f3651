//! Where the service's IDs come from: one cached snowflake generator on a leased worker
//! ID, one segment generator per tag (made on first use), and ranges straight from the
//! segment store for smart clients.

use crate::config::Config;
use crate::error::{shown_tag, ApiError};
use crate::metrics::Metrics;
use crate::tokens::{GRANT_NAMES, SNOWFLAKE_GRANT};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, CachedUidGenerator, PeriodSegmentGenerator, Preset, ResidueSegmentGenerator,
    SegmentError, SegmentGenerator, SegmentStore, StoreError, StoreUrl, UidError, UidGenerator,
    WorkerLease, WIPED_STORE_AHEAD,
};

/// The most segment tags one service serves at once (each holds a generator).
pub const MAX_SERVED_TAGS: usize = 10_000;
/// The readiness probe's tag: read, never created.
const PROBE_TAG: &str = "uidgen-readiness-probe";
/// How recent the last good store call must be for the service to be ready.
const STORE_FRESH: Duration = Duration::from_secs(3);
/// How long a store call may take before it counts as failed (and the service stops
/// being ready).
pub(crate) const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A setting is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The store URL cannot be read or the store cannot be opened.
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// No worker ID could be leased.
    #[error("no worker ID for the snowflake generator: {0}")]
    WorkerId(#[from] uidgen::WorkerIdError),
    /// The snowflake generator could not be built.
    #[error("the snowflake generator: {0}")]
    Generator(#[from] uidgen::ConfigError),
    /// A configured segment tag could not be set up.
    #[error("segment tag {tag}: {source}")]
    Segment {
        /// The tag (quoted, shortened).
        tag: String,
        /// Why.
        source: Box<SegmentError>,
    },
    /// A configured tag the store does not have, with no `tag_start` to create it: in the
    /// words of whoever configures the service (its settings and `uidgen`'s flags).
    #[error(
        "segment tag {tag} does not exist in {location}: create it with `uidgen segment \
         create --tag TAG --step N [--start FIRST]`, or let the service create the missing \
         tags of tags and [[residue_tags]] at FIRST with tag_start = FIRST (--tag-start, \
         UIDGEN_TAG_START); if it existed before (a store restored or emptied), FIRST must \
         be above the last ID it handed out"
    )]
    MissingTag {
        /// The tag (quoted, shortened).
        tag: String,
        /// The store that lacks it, as it describes itself.
        location: String,
    },
    /// A residue tag a store lacks, with no `tag_start` to create its classes.
    #[error(
        "residue tag {tag}: {location} has no such tag; let the service create every \
         class's row with tag_start = FIRST (--tag-start, UIDGEN_TAG_START), each class's \
         IDs then at or above FIRST (uidgen segment create cannot make a residue class's row)"
    )]
    MissingResidueTag {
        /// The tag (quoted, shortened).
        tag: String,
        /// The store that lacks it, as it describes itself.
        location: String,
    },
    /// The threads for opaque batches could not be started.
    #[error("cannot start the threads for opaque batches: {0}")]
    Threads(std::io::Error),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl StartError {
    /// A tag (a residue tag if `residue`) that could not be set up; a missing one says
    /// how to have it created.
    fn tag(tag: &str, residue: bool, source: SegmentError) -> Self {
        let tag = shown_tag(tag);
        match source {
            SegmentError::Store(StoreError::MissingTag { location, .. }) if residue => {
                Self::MissingResidueTag { tag, location }
            }
            SegmentError::Store(StoreError::MissingTag { location, .. }) => {
                Self::MissingTag { tag, location }
            }
            _ => Self::Segment {
                tag,
                source: Box::new(source),
            },
        }
    }
}

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
        let preset: Preset = config.layout.parse().map_err(|e: uidgen::ConfigError| {
            crate::config::ConfigError::Invalid {
                field: "layout",
                value: config.layout.chars().take(40).collect(),
                limit: e.to_string(),
            }
        })?;
        let bits = BitsAllocator::preset(preset)?;
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
            started: Instant::now(),
            store_error: RwLock::new(None),
            shutting_down: false.into(),
            config,
        };
        let create = ids
            .config
            .tag_start
            .map(|start| (start, ids.config.tag_step));
        for tag in ids.config.tags.clone() {
            let generator = build_segment(Arc::clone(&ids.store), &tag, create)
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
            let generator = build_residue(&residue_tag, ids.config.tag_step, ids.config.tag_start)
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

    /// `count` snowflake IDs, in increasing order; waits (without blocking the runtime)
    /// only while the ring is empty.
    pub(crate) async fn snowflake_ids(&self, count: usize) -> Result<Vec<u64>, ApiError> {
        let mut out = vec![0u64; count];
        let mut filled = 0;
        let snowflake = self.snowflake.load_full();
        while filled < count {
            match snowflake.try_next_uids(&mut out[filled..]) {
                Ok(n) => filled += n,
                Err(UidError::WouldBlock { .. }) => {
                    out[filled] = snowflake
                        .next_uid_async()
                        .await
                        .map_err(|e| self.id_error(e))?;
                    filled += 1;
                }
                Err(e) => return Err(self.id_error(e)),
            }
        }
        Ok(out)
    }

    /// One snowflake ID, for the single-ID routes: no vector, no reference count
    /// taken unless it has to wait.
    pub(crate) async fn snowflake_id(&self) -> Result<u64, ApiError> {
        let ready = self.snowflake.load().try_next_uid();
        match ready {
            Err(UidError::WouldBlock { .. }) => {
                let snowflake = self.snowflake.load_full();
                snowflake
                    .next_uid_async()
                    .await
                    .map_err(|e| self.id_error(e))
            }
            other => other.map_err(|e| self.id_error(e)),
        }
    }

    /// Whether `tag` can be served, as a draw would find (an unknown tag is 404), without
    /// drawing: for HEAD.
    pub(crate) async fn servable(&self, tag: &str) -> Result<(), ApiError> {
        if self.periods.contains_key(tag) || self.residues.contains_key(tag) {
            return Ok(());
        }
        self.segment(tag).await.map(|_| ())
    }

    /// One ID of `tag`, for the single-ID routes.
    pub(crate) async fn segment_id(&self, tag: &str) -> Result<u64, ApiError> {
        if self.periods.contains_key(tag) || self.residues.contains_key(tag) {
            return Ok(self.segment_ids(tag, 1).await?[0]);
        }
        let generator = self.segment(tag).await?;
        self.one(|| generator.try_next_uid(), || generator.next_uid_async())
            .await
    }

    /// `count` IDs of `tag` (in increasing order, but for a residue tag's, which come
    /// from several stores).
    pub(crate) async fn segment_ids(&self, tag: &str, count: usize) -> Result<Vec<u64>, ApiError> {
        if let Some(generator) = self.periods.get(tag) {
            return self.period_ids(generator, count).await;
        }
        if let Some(generator) = self.residues.get(tag) {
            return self
                .collect(
                    count,
                    || generator.try_next_uid(),
                    || generator.next_uid_async(),
                )
                .await;
        }
        let generator = self.segment(tag).await?;
        self.collect(
            count,
            || generator.try_next_uid(),
            || generator.next_uid_async(),
        )
        .await
    }

    /// One ID, taken with `try_one` when one is ready, else awaited with `wait_one`
    /// (which never blocks the runtime).
    async fn one<F: std::future::Future<Output = Result<u64, UidError>>>(
        &self,
        try_one: impl Fn() -> Result<u64, UidError>,
        wait_one: impl Fn() -> F,
    ) -> Result<u64, ApiError> {
        match try_one() {
            Ok(id) => Ok(id),
            Err(UidError::WouldBlock { .. }) => wait_one().await.map_err(|e| self.id_error(e)),
            Err(e) => Err(self.id_error(e)),
        }
    }

    /// `count` IDs, each as [`Ids::one`] takes it.
    async fn collect<F: std::future::Future<Output = Result<u64, UidError>>>(
        &self,
        count: usize,
        try_one: impl Fn() -> Result<u64, UidError>,
        wait_one: impl Fn() -> F,
    ) -> Result<Vec<u64>, ApiError> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            out.push(self.one(&try_one, &wait_one).await?);
        }
        Ok(out)
    }

    /// `count` IDs of a period tag; the first take of a new period sets the period's
    /// counter up in the store, on a blocking thread.
    async fn period_ids(
        &self,
        generator: &Arc<PeriodSegmentGenerator>,
        count: usize,
    ) -> Result<Vec<u64>, ApiError> {
        // IDs a failed batch took come first, while their period is still the one served
        // (never an ID of an earlier period after one of a later).
        let mut out: Vec<u64> = {
            let mut kept = self.period_kept.lock().unwrap_or_else(|p| p.into_inner());
            let kept = kept.entry(generator.tag().to_owned()).or_default();
            let current = generator.current_period();
            kept.retain(|&id| generator.split(id).0 >= current);
            let n = kept.len().min(count);
            kept.drain(..n).collect()
        };
        while out.len() < count {
            let taken = match generator.try_next_uid() {
                Ok(id) => Ok(id),
                Err(UidError::WouldBlock { .. }) => {
                    let generator = Arc::clone(generator);
                    tokio::task::spawn_blocking(move || generator.next_uid())
                        .await
                        .map_err(|_| ApiError::unavailable("a period tag's take panicked"))?
                }
                Err(e) => Err(e),
            };
            match taken {
                Ok(id) => out.push(id),
                Err(e) => {
                    // Kept for the next request rather than dropped.
                    let mut kept = self.period_kept.lock().unwrap_or_else(|p| p.into_inner());
                    let kept = kept.entry(generator.tag().to_owned()).or_default();
                    out.append(kept);
                    *kept = out;
                    return Err(self.id_error(e));
                }
            }
        }
        Ok(out)
    }

    /// Refuses ranges of a period tag (each ID carries its period, so a client cannot
    /// hand out IDs of its own from a range) and of a residue tag (its IDs come from
    /// several stores).
    fn no_ranges(&self, tag: &str) -> Result<(), ApiError> {
        let kind = if self.periods.contains_key(tag) {
            "a period tag (its IDs start with their period)"
        } else if self.residues.contains_key(tag) {
            "a residue tag (its IDs come from several stores)"
        } else {
            return Ok(());
        };
        Err(ApiError::bad_request(
            format!("{} is {kind}: no ranges", shown_tag(tag)),
            "ranges of a plain segment tag; take this tag's IDs from /v1/segment/{tag}",
        ))
    }

    /// A range of `count` IDs of `tag` taken from the store now and marked used there:
    /// `[first, first + count)`. For clients that hand out IDs themselves.
    pub(crate) async fn range(&self, tag: &str, count: u64) -> Result<u64, ApiError> {
        self.check_tag(tag)?;
        self.no_ranges(tag)?;
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || store.allocate(&owned, count))
            .await
            .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("range", started.elapsed(), result.is_ok());
        match result {
            Ok(end) => Ok(end - count),
            Err(StoreError::MissingTag { .. }) => Err(ApiError::unknown_tag(tag)),
            Err(StoreError::InvalidSegment { problem, .. }) => Err(ApiError::bad_request(
                format!(
                    "a range of {count} IDs of {} cannot be taken",
                    shown_tag(tag)
                ),
                problem,
            )),
            Err(e) => Err(ApiError::unavailable(format!("the store failed: {e}"))),
        }
    }

    /// The tag's base step as the store holds it (read once per tag).
    pub(crate) async fn tag_step(&self, tag: &str) -> Result<u64, ApiError> {
        self.no_ranges(tag)?;
        if let Some(step) = read(&self.steps).get(tag) {
            return Ok(*step);
        }
        // Sets the tag up, so a missing tag is a 404 here.
        self.segment(tag).await?;
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || store.tag(&owned))
            .await
            .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("tag_step", started.elapsed(), result.is_ok());
        match result {
            Ok(Some(record)) => {
                let step = record.step.clamp(1, self.config.max_count);
                write(&self.steps).insert(tag.to_owned(), step);
                Ok(step)
            }
            Ok(None) => Err(ApiError::unknown_tag(tag)),
            Err(e) => Err(ApiError::unavailable(format!("the store failed: {e}"))),
        }
    }

    /// Refuses a tag no store can hold before any store call.
    fn check_tag(&self, tag: &str) -> Result<(), ApiError> {
        crate::config::check_tag(tag).map_err(|rule| {
            ApiError::bad_request(format!("the tag {} cannot be used", shown_tag(tag)), rule)
        })?;
        if GRANT_NAMES.contains(&tag) {
            return Err(ApiError::bad_request(
                format!("{tag} names a route in token grants, not a segment tag"),
                "a tag the store holds",
            ));
        }
        // A period tag's rows (`tag:20261124`) are served only through the period tag.
        if let Some((base, _)) = tag.rsplit_once(':') {
            if self.periods.contains_key(base) {
                return Err(ApiError::bad_request(
                    format!(
                        "{} is a row of the period tag {}",
                        shown_tag(tag),
                        shown_tag(base)
                    ),
                    format!("IDs of the period tag itself: /v1/segment/{base}"),
                ));
            }
        }
        Ok(())
    }

    /// The tag's generator, set up on first use.
    pub(crate) async fn segment(&self, tag: &str) -> Result<Arc<SegmentGenerator>, ApiError> {
        if let Some(generator) = read(&self.segments).get(tag) {
            return Ok(Arc::clone(generator));
        }
        self.check_tag(tag)?;
        if self.shutting_down.load(Ordering::Relaxed) {
            return Err(ApiError::unavailable("the service is shutting down"));
        }
        let _one_at_a_time = self.setting_up.lock().await;
        if let Some(generator) = read(&self.segments).get(tag) {
            return Ok(Arc::clone(generator));
        }
        if read(&self.segments).len() >= MAX_SERVED_TAGS {
            return Err(ApiError::unavailable(format!(
                "this service serves {MAX_SERVED_TAGS} tags already, its limit"
            )));
        }
        let started = Instant::now();
        let (store, owned) = (Arc::clone(&self.store), tag.to_owned());
        // A request never creates a tag: a missing one is 404.
        let result = tokio::task::spawn_blocking(move || build_segment(store, &owned, None))
            .await
            .map_err(|_| ApiError::unavailable("setting up the tag panicked"))?;
        self.metrics
            .store_call("tag_setup", started.elapsed(), result.is_ok());
        match result {
            Ok(generator) => {
                let generator = Arc::new(generator);
                write(&self.segments).insert(tag.to_owned(), Arc::clone(&generator));
                Ok(generator)
            }
            Err(SegmentError::Store(StoreError::MissingTag { .. })) => {
                Err(ApiError::unknown_tag(tag))
            }
            Err(SegmentError::Store(StoreError::InvalidName { rule, .. })) => Err(
                ApiError::bad_request(format!("the tag {} cannot be used", shown_tag(tag)), rule),
            ),
            Err(e) => Err(ApiError::unavailable(format!(
                "cannot set up tag {}: {e}",
                shown_tag(tag)
            ))),
        }
    }

    fn id_error(&self, e: UidError) -> ApiError {
        ApiError::unavailable(format!("no ID now: {e}"))
    }

    /// Reads the store once (a tag that is never created), for readiness and the store
    /// latency metric.
    pub(crate) fn probe_store(&self) {
        let started = Instant::now();
        let result = self.store.tag(PROBE_TAG);
        self.metrics
            .store_call("probe", started.elapsed(), result.is_ok());
        match result {
            Ok(_) => {
                let at = self.started.elapsed().as_millis() as u64;
                self.store_ok_at.store(at.max(1), Ordering::Relaxed);
                *write(&self.store_error) = None;
            }
            Err(e) => *write(&self.store_error) = Some(e.to_string()),
        }
    }

    /// What each ID source can serve now, one line each (snowflake, every tag, the
    /// store, the last data loss found), and whether any can: the service is ready while
    /// at least one configured source can serve.
    pub fn readiness(&self) -> (bool, String) {
        if self.shutting_down.load(Ordering::Relaxed) {
            return (false, "shutting down\n".into());
        }
        let mut lines = Vec::new();
        let snowflake = self.snowflake.load();
        let snowflake_ok = match snowflake.worker_id_trouble() {
            Some(why) => {
                lines.push(format!(
                    "snowflake: cannot serve new IDs (worker ID {}): {why}",
                    snowflake.worker_id()
                ));
                false
            }
            None if snowflake.stats().len == 0 => {
                lines.push(match snowflake.waiting_for_clock() {
                    Some(why) => format!("snowflake: worker ID {}: {why}", snowflake.worker_id()),
                    None => format!(
                        "snowflake: the ring is empty (worker ID {}, {:.1} s ahead of the clock)",
                        snowflake.worker_id(),
                        snowflake.time_ahead().as_secs_f64()
                    ),
                });
                false
            }
            None => {
                lines.push(format!(
                    "snowflake: ok (worker ID {})",
                    snowflake.worker_id()
                ));
                true
            }
        };
        let mut any_ok = snowflake_ok;
        for (tag, generator) in &self.periods {
            let (current, clock) = (generator.current_period(), generator.clock_period());
            any_ok = true;
            lines.push(if current > clock {
                format!(
                    "tag {}: period {current}, ahead of the clock's {clock} (begun by a \
                     process whose clock ran ahead)",
                    shown_tag(tag)
                )
            } else {
                format!("tag {}: period {current}", shown_tag(tag))
            });
        }
        let mut tag_line = |tag: &str, left: u64, error: Option<String>| {
            any_ok |= left > 0;
            lines.push(match (left, error) {
                (0, Some(e)) => format!("tag {}: cannot serve: {e}", shown_tag(tag)),
                (0, None) => format!("tag {}: no IDs fetched yet", shown_tag(tag)),
                (left, Some(e)) => format!(
                    "tag {}: serving the {left} IDs fetched; the store is failing: {e}",
                    shown_tag(tag)
                ),
                (left, None) => format!("tag {}: ok ({left} IDs fetched)", shown_tag(tag)),
            });
        };
        for (tag, generator) in read(&self.segments).iter() {
            let stats = generator.stats();
            tag_line(tag, stats.ids_left, stats.store_error);
        }
        for tag in self.residues.keys() {
            // Served from stores of their own: counted as able to serve.
            tag_line(tag, 1, None);
        }
        let ok_at = self.store_ok_at.load(Ordering::Relaxed);
        let now = self.started.elapsed().as_millis() as u64;
        if ok_at == 0 || now.saturating_sub(ok_at) > STORE_FRESH.as_millis() as u64 {
            let why = read(&self.store_error)
                .clone()
                .unwrap_or_else(|| format!("no answer for {} ms", now.saturating_sub(ok_at)));
            lines.push(format!("store {}: {why}", self.store.describe()));
        } else {
            lines.push(format!("store {}: ok", self.store.describe()));
        }
        if let Some(loss) = uidgen::last_data_loss() {
            lines.push(format!("data loss found: {loss}"));
        }
        let mut report = lines.join("\n");
        report.push('\n');
        (any_ok, report)
    }

    /// Why the service is not ready, if it is not (no configured ID source can serve):
    /// what each source says.
    pub fn not_ready(&self) -> Option<String> {
        let (ready, report) = self.readiness();
        (!ready).then_some(report)
    }

    /// Refreshes the gauges and copied counters, then encodes every metric.
    pub(crate) fn metrics_text(&self) -> String {
        use crate::metrics::{set_counter, TagLabel};
        let m = &self.metrics;
        let snowflake = self.snowflake.load();
        let stats = snowflake.stats();
        let retired = *self.retired.lock().unwrap_or_else(|p| p.into_inner());
        m.ring_ids.set(stats.len as i64);
        m.ring_capacity.set(stats.capacity as i64);
        m.time_ahead.set(snowflake.time_ahead().as_secs_f64());
        set_counter(&m.lease_renewals, retired[0] + stats.lease_renewals);
        set_counter(
            &m.lease_renewal_failures,
            retired[1] + stats.lease_renewal_failures,
        );
        set_counter(&m.clock_rollbacks, retired[2] + stats.clock_rollbacks);
        set_counter(
            &m.rejected_takes.get_or_create(&TagLabel {
                tag: SNOWFLAKE_GRANT.into(),
            }),
            retired[3] + stats.rejected_takes,
        );
        set_counter(&m.store_data_loss, uidgen::data_loss_events());
        m.waiting_for_clock
            .set(i64::from(snowflake.waiting_for_clock().is_some()));
        for (tag, generator) in &self.periods {
            m.period_ahead
                .get_or_create(&TagLabel { tag: tag.clone() })
                .set(i64::from(
                    generator.current_period() > generator.clock_period(),
                ));
        }
        for (tag, generator) in read(&self.segments).iter() {
            let stats = generator.stats();
            let label = TagLabel { tag: tag.clone() };
            m.segment_ids_left
                .get_or_create(&label)
                .set(stats.ids_left.min(i64::MAX as u64) as i64);
            if let Some(runway) = stats.runway {
                m.segment_runway
                    .get_or_create(&label)
                    .set(runway.as_secs_f64());
            }
            set_counter(&m.rejected_takes.get_or_create(&label), stats.hungry_takes);
        }
        m.ready.set(i64::from(self.not_ready().is_none()));
        m.encode()
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

/// The worker ID the config fixes (`worker_id`, or the pod's ordinal), if it fixes one.
pub(crate) fn fixed_worker_id(
    config: &Config,
    bits: &BitsAllocator,
) -> Result<Option<u64>, StartError> {
    if config.pod_ordinal {
        let pod = uidgen::PodOrdinal::from_hostname().offset(config.pod_ordinal_offset);
        return Ok(Some(
            uidgen::WorkerIdAssigner::assign_worker_id(&pod, bits)?.worker_id,
        ));
    }
    Ok(config.worker_id)
}

/// The snowflake routes' generator on a worker ID leased from `url`.
fn build_snowflake(
    url: &StoreUrl,
    bits: BitsAllocator,
    config: &Config,
) -> Result<CachedUidGenerator, StartError> {
    let mut builder =
        WorkerLease::builder(url.lease_store()?).ttl(Duration::from_millis(config.lease_ttl_ms));
    if config.max_time_ahead_ms > 0 {
        // A worker ID whose mark is past the cap would leave the ring empty until the
        // clock reaches it: another is taken instead, if one is free.
        builder = builder.prefer_marks_within(Duration::from_millis(config.max_time_ahead_ms));
    }
    let lease = match fixed_worker_id(config, &bits)? {
        Some(id) => builder.acquire_id(&bits, id)?,
        None => builder.acquire(&bits)?,
    };
    let ahead = Duration::from_millis(config.max_time_ahead_ms);
    if url.kind() == uidgen::StoreKind::Sqlite && (ahead.is_zero() || ahead > WIPED_STORE_AHEAD) {
        tracing::warn!(
            max_time_ahead_ms = config.max_time_ahead_ms,
            "borrowed time is capped past the {} s a wiped embedded store starts ahead of the \
             clock: keep the store and its memory (stores/ beside it) on lasting storage, since \
             a store wiped within that time of a run may repeat its IDs",
            WIPED_STORE_AHEAD.as_secs()
        );
    }
    let mut builder = CachedUidGenerator::builder().allocator(bits).lease(lease);
    if config.max_time_ahead_ms > 0 {
        builder = builder.max_time_ahead(Duration::from_millis(config.max_time_ahead_ms));
    }
    Ok(builder.build()?)
}

/// The tag's generator, creating the tag at `create`'s (first ID, base step) if asked.
fn build_segment(
    store: Arc<dyn SegmentStore>,
    tag: &str,
    create: Option<(u64, u64)>,
) -> Result<SegmentGenerator, SegmentError> {
    let mut builder = SegmentGenerator::builder(store, tag);
    if let Some((first_id, step)) = create {
        builder = builder.create_missing(first_id, step);
    }
    builder.build()
}

/// A period tag's generator, its rows created with base step `step`.
fn build_period(
    store: Arc<dyn SegmentStore>,
    tag: &crate::config::PeriodTag,
    step: u64,
) -> Result<PeriodSegmentGenerator, SegmentError> {
    let config = |e: crate::config::ConfigError| {
        SegmentError::Config(uidgen::ConfigError::OutOfRange {
            field: "period_tags",
            value: shown_tag(&tag.tag),
            limit: e.to_string(),
        })
    };
    let period: uidgen::Period = tag.period.parse().map_err(SegmentError::Config)?;
    let mut builder = PeriodSegmentGenerator::builder(store, &tag.tag)
        .period(period)
        .utc_offset_minutes(tag.offset_minutes().map_err(config)?)
        .first_sequence(tag.first_sequence)
        .step(step);
    if let Some(digits) = tag.sequence_digits {
        builder = builder.sequence_digits(digits);
    }
    builder.build()
}

/// A residue tag's generator over its stores, tags created with base step `step`.
fn build_residue(
    tag: &crate::config::ResidueTag,
    step: u64,
    create_at: Option<u64>,
) -> Result<ResidueSegmentGenerator, SegmentError> {
    let (modulus, remainders) = tag.classes();
    let mut builder = ResidueSegmentGenerator::builder(&tag.tag, modulus).step(step);
    if let Some(first_id) = create_at {
        builder = builder.create_missing(first_id);
    }
    for (url, remainder) in tag.stores.iter().zip(remainders) {
        let store =
            StoreUrl::parse(url).and_then(|url| url.timeout(STORE_TIMEOUT).segment_store())?;
        builder = builder.store(store, remainder);
    }
    builder.build()
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}
