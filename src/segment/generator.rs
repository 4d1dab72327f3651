//! [`SegmentGenerator`]: one tag's IDs, handed out of ranges fetched ahead.

use super::chain::{Chain, RangeLeft, SLOTS};
use super::prefetch::{FetchState, Limits, Prefetcher, StoreHealth};
use crate::error::{ConfigError, UidError};
use crate::store::segment::{check_tag, SegmentStore, MAX_BASE_STEP};
use crate::store::StoreError;
use crate::wait::take::{self, Supply};
use crate::wait::TakeRejectPolicy;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The default upper bound on one range: Leaf's `MAX_STEP`.
pub const DEFAULT_MAX_STEP: u64 = 1_000_000;
/// The default time one range should last at the recent rate.
pub const DEFAULT_RANGE_LIFETIME: Duration = Duration::from_secs(30);
/// The default bound on the ranges kept ahead of the current one.
pub const DEFAULT_MAX_PREFETCH_DISTANCE: u64 = 4;

/// Why a [`SegmentGenerator`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store failed, or the tag does not exist (the message says how to create it).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store's counter is below a range this generator already has (restored from a
    /// backup, or rolled back): its ranges would repeat IDs.
    #[error(
        "tag {tag:?} in {store}: the store gave the range [{start}, {end}), not at or above \
         {last_end} where an earlier range ended (or past the largest BIGINT); was the store \
         restored or rolled back? Refusing it: raise its max_id to at least {last_end}, then \
         build a new generator"
    )]
    RangeRefused {
        /// The tag.
        tag: String,
        /// The store.
        store: String,
        /// The range's first ID.
        start: u64,
        /// One past its last.
        end: u64,
        /// Where the earlier range ended.
        last_end: u64,
    },
    /// The prefetch thread could not be started.
    #[error("could not start the segment prefetch thread")]
    Spawn(#[source] Arc<std::io::Error>),
}

/// One tag's state, shared by its generator and the prefetch thread.
pub(crate) struct Tag {
    name: String,
    store: Arc<dyn SegmentStore>,
    chain: Chain,
    limits: Limits,
    fetch: Mutex<FetchState>,
    /// Takes that found the chain empty.
    hungry: AtomicU64,
    ranges_fetched: AtomicU64,
    /// Set by the generator's drop: fetch nothing more.
    closed: AtomicBool,
    /// The store's failures and backoff, shared with other tags on it.
    health: Arc<StoreHealth>,
    /// A refused range: the generator serves what it has, then fails with this.
    refused: Mutex<Option<String>>,
    refused_flag: AtomicBool,
    // Stats the prefetch thread publishes.
    step: AtomicU64,
    distance: AtomicU64,
    rate_bits: AtomicU64,
}

impl Tag {
    /// Fetches ranges until the chain holds what the distance asks for (or it is full, or
    /// the store fails). Runs on the prefetch thread; returns when to look at this tag
    /// again unasked.
    pub(crate) fn top_up(&self, now: Instant, urgent: &AtomicBool) -> Duration {
        let mut state = self.fetch.lock().unwrap_or_else(PoisonError::into_inner);
        self.fill(&mut state, now, urgent);
        state.look_again_in()
    }

    fn fill(&self, state: &mut FetchState, now: Instant, urgent: &AtomicBool) {
        state.observe(
            &self.limits,
            self.chain.taken(),
            self.hungry.load(Ordering::Relaxed),
            now,
        );
        self.distance.store(state.distance, Ordering::Relaxed);
        self.rate_bits
            .store(state.rate.to_bits(), Ordering::Relaxed);
        if self.closed.load(Ordering::Acquire) || self.refused_flag.load(Ordering::Relaxed) {
            return;
        }
        // A failing store is asked again only after its backoff (at most 1 s), even
        // while takers wait: they would otherwise hammer a server that is down.
        if !self.health.may_try(now) {
            return;
        }
        while self.chain.has_room()
            && (self.chain.ranges_ahead() < state.wanted_ahead(&self.limits) || self.is_empty())
        {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            // Takers may drain each range as it comes: learn the rate and hunger before
            // every fetch, not once a round, or a burst is served in base steps.
            state.observe(
                &self.limits,
                self.chain.taken(),
                self.hungry.load(Ordering::Relaxed),
                Instant::now(),
            );
            if let Err(()) = self.fetch_one(state, now) {
                return;
            }
            // Another tag ran empty: it comes before this one's further ranges ahead.
            if urgent.load(Ordering::Relaxed) && !self.is_empty() {
                return;
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.chain.ids_left() == 0
    }

    /// Takes one range from the store and publishes it.
    fn fetch_one(&self, state: &mut FetchState, now: Instant) -> Result<(), ()> {
        let step = state.next_step(&self.limits);
        self.step.store(step, Ordering::Relaxed);
        match self.store.allocate(&self.name, step) {
            Ok(max_id) => {
                if self.health.answered() {
                    tracing::info!(tag = %self.name, store = %self.store.describe(), "segment store answers again");
                }
                match checked_range(max_id, step, state.last_end) {
                    Ok(start) => {
                        // Room was checked under the fetch lock, and only this lock's
                        // holder publishes: it cannot be full now.
                        let published = self.chain.publish(start, max_id);
                        debug_assert!(published.is_ok());
                        state.last_end = max_id;
                        self.ranges_fetched.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                    Err((start, end)) => {
                        let err = SegmentError::RangeRefused {
                            tag: self.name.clone(),
                            store: self.store.describe(),
                            start,
                            end,
                            last_end: state.last_end,
                        };
                        tracing::error!(tag = %self.name, "{err}");
                        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(err.to_string());
                        self.refused_flag.store(true, Ordering::Release);
                        Err(())
                    }
                }
            }
            Err(err) => {
                let message = err.to_string();
                if self.health.failed(now, message.clone()) {
                    tracing::warn!(tag = %self.name, "segment store failed; serving fetched ranges: {message}");
                }
                Err(())
            }
        }
    }

    /// A panic in the store (on the prefetch thread) counts as its failure.
    pub(crate) fn store_panicked(&self, panic: &(dyn std::any::Any + Send)) {
        let message = format!("the store panicked: {}", crate::sync::panic_message(panic));
        tracing::error!(tag = %self.name, "{message}");
        self.health.failed(Instant::now(), message);
    }

    /// Why an empty chain will not be refilled soon, for the error a giving-up take
    /// returns.
    fn why_empty(&self) -> String {
        if self.refused_flag.load(Ordering::Acquire) {
            if let Some(why) = self
                .refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
            {
                return why;
            }
        }
        if let Some(err) = self.health.error() {
            return format!("the store {} fails: {err}", self.store.describe());
        }
        format!(
            "the next range from {} did not come in time",
            self.store.describe()
        )
    }
}

/// The range `[max_id - step, max_id)` if it starts at or above `last_end`; else its
/// bounds, to refuse it.
fn checked_range(max_id: u64, step: u64, last_end: u64) -> Result<u64, (u64, u64)> {
    match max_id.checked_sub(step) {
        // Above i64::MAX is no SQL BIGINT: a store gave garbage (and a cursor that near
        // u64::MAX could wrap).
        Some(start) if start >= last_end && start >= 1 && max_id <= i64::MAX as u64 => Ok(start),
        _ => Err((max_id.saturating_sub(step), max_id)),
    }
}

/// What [`SegmentGenerator::shutdown`] gave back to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveBack {
    /// The counter was set back to `to`: the next range anyone takes starts there.
    Returned {
        /// The counter before.
        from: u64,
        /// The counter now: the first ID this generator did not hand out.
        to: u64,
    },
    /// Nothing was left unused.
    NothingLeft,
    /// Someone allocated after this generator's last range, so its tail stays unused
    /// (a gap, never a repeat).
    AllocatedAfter,
}

/// A snapshot of a segment generator, from [`SegmentGenerator::stats`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SegmentStats {
    /// The tag.
    pub tag: String,
    /// Ranges taken from the store so far (the first one included).
    pub ranges_fetched: u64,
    /// The step of the last range taken.
    pub step: u64,
    /// Ranges the prefetch thread keeps ahead of the current one now.
    pub prefetch_distance: u64,
    /// IDs left in the current range and the ranges ahead.
    pub ids_left: u64,
    /// IDs handed out a second, recently (0 until measured).
    pub rate_per_sec: f64,
    /// How long `ids_left` lasts at that rate (`None` until a rate is measured).
    pub runway: Option<Duration>,
    /// Takes that found every range used up (and waited, or failed).
    pub hungry_takes: u64,
    /// The store's last error while it is failing.
    pub store_error: Option<String>,
}

/// Builds a [`SegmentGenerator`]; from [`SegmentGenerator::builder`].
#[derive(Debug)]
#[must_use]
pub struct SegmentGeneratorBuilder {
    store: Arc<dyn SegmentStore>,
    tag: String,
    create_missing: Option<u64>,
    policy: TakeRejectPolicy,
    max_step: u64,
    range_lifetime: Duration,
    max_distance: u64,
    prefetch: bool,
}

impl SegmentGeneratorBuilder {
    /// Creates the tag (counter at 1, base step `step`) if the store does not have it.
    /// Without this, a missing tag is an error naming it and how to create it.
    pub fn create_missing(mut self, step: u64) -> Self {
        self.create_missing = Some(step);
        self
    }

    /// What a take does when every fetched range is used up (the store slow or down):
    /// wait up to a bound (the default, 1 s), fail fast, or your own rule. The same
    /// policies as [`CachedUidGenerator`](crate::CachedUidGenerator)'s.
    pub fn take_reject_policy(mut self, policy: TakeRejectPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The largest range to take at once (default [`DEFAULT_MAX_STEP`], as Leaf's). A
    /// crash wastes at most what is fetched: `(distance + 1) × max_step` IDs.
    pub fn max_step(mut self, max_step: u64) -> Self {
        self.max_step = max_step;
        self
    }

    /// How long one range should last at the recent rate (default 30 s); the step
    /// follows, within the tag's base step and `max_step`.
    pub fn range_lifetime(mut self, lifetime: Duration) -> Self {
        self.range_lifetime = lifetime;
        self
    }

    /// The most ranges kept ahead of the current one (default 4, at most 15). The
    /// prefetch thread keeps two ahead (or this many if fewer), doubling when takers
    /// find none.
    pub fn max_prefetch_distance(mut self, distance: u64) -> Self {
        self.max_distance = distance;
        self
    }

    /// Whether to fetch ahead at all (default yes). Without it, a range is fetched only
    /// when the last one is used up, and the take that finds it so waits for the store:
    /// Leaf's behaviour without its second buffer, for comparison.
    pub fn prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
        self
    }

    /// Checks the settings, creates the tag if asked, takes the first range from the
    /// store (so a store that cannot be used is an error now, not at the first take) and
    /// hands the tag to the process's prefetch thread.
    pub fn build(self) -> Result<SegmentGenerator, SegmentError> {
        let describe = self.store.describe();
        let kind = self.store.kind().name();
        check_tag(kind, &self.tag)?;
        let out_of_range = |field: &'static str, value: String, limit: String| {
            SegmentError::Config(ConfigError::OutOfRange {
                field,
                value,
                limit,
            })
        };
        if self.max_step == 0 || self.max_step > MAX_BASE_STEP * 16 {
            return Err(out_of_range(
                "max_step",
                self.max_step.to_string(),
                format!("1..={}", MAX_BASE_STEP * 16),
            ));
        }
        if self.max_distance == 0 || self.max_distance > SLOTS - 1 {
            return Err(out_of_range(
                "max_prefetch_distance",
                self.max_distance.to_string(),
                format!("1..={}", SLOTS - 1),
            ));
        }
        if self.range_lifetime < Duration::from_millis(1)
            || self.range_lifetime > Duration::from_secs(24 * 3600)
        {
            return Err(out_of_range(
                "range_lifetime",
                format!("{:?}", self.range_lifetime),
                "1 ms to 24 h".into(),
            ));
        }
        if let Some(step) = self.create_missing {
            self.store.create(&self.tag, 1, step, "")?;
        }
        let record = self
            .store
            .tag(&self.tag)?
            .ok_or_else(|| crate::store::segment::missing_tag(kind, &describe, &self.tag))?;
        let limits = Limits {
            base_step: record.step.clamp(1, self.max_step),
            max_step: self.max_step,
            range_lifetime: self.range_lifetime,
            max_distance: self.max_distance,
            prefetch: self.prefetch,
        };
        let prefetcher = Prefetcher::get().map_err(SegmentError::Spawn)?;
        let now = Instant::now();
        let tag = Arc::new(Tag {
            name: self.tag,
            store: self.store,
            chain: Chain::new(),
            limits,
            fetch: Mutex::new(FetchState::new(0, &limits, now)),
            hungry: AtomicU64::new(0),
            ranges_fetched: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            health: prefetcher.health(&describe),
            refused: Mutex::new(None),
            refused_flag: AtomicBool::new(false),
            step: AtomicU64::new(limits.base_step),
            distance: AtomicU64::new(1),
            rate_bits: AtomicU64::new(0),
        });
        // The first range, here: its errors are the caller's.
        {
            let mut state = tag.fetch.lock().unwrap_or_else(PoisonError::into_inner);
            let step = state.next_step(&limits);
            let max_id = tag.store.allocate(&tag.name, step)?;
            let start = checked_range(max_id, step, 0).map_err(|(start, end)| {
                SegmentError::RangeRefused {
                    tag: tag.name.clone(),
                    store: describe.clone(),
                    start,
                    end,
                    last_end: 1,
                }
            })?;
            let _ = tag.chain.publish(start, max_id);
            state.last_end = max_id;
            tag.ranges_fetched.store(1, Ordering::Relaxed);
        }
        prefetcher.register(&tag);
        Ok(SegmentGenerator {
            tag,
            prefetcher,
            policy: self.policy,
        })
    }
}

/// Dense, increasing IDs for one tag (Meituan Leaf's segment mode): ranges of the tag's
/// counter are taken from a [`SegmentStore`] and handed out from memory.
///
/// - **The hot path** is one atomic `fetch_add` on the current range: no lock, no I/O.
/// - **Ranges ahead** are fetched by one thread per process (shared by every tag) before
///   the current one runs out: two ranges ahead, doubled when takers find none (up to
///   [`max_prefetch_distance`](SegmentGeneratorBuilder::max_prefetch_distance)), halved
///   after a quiet while. The step follows the rate, so a range lasts about
///   [`range_lifetime`](SegmentGeneratorBuilder::range_lifetime), within the tag's base
///   step and [`max_step`](SegmentGeneratorBuilder::max_step).
/// - **Unique**: the store moves the counter in one atomic step, so each range belongs
///   to one generator; a range that does not start at or above the end of the last one
///   is refused, and the generator serves what it has, then fails naming it.
///   IDs one thread gets increase; across processes they interleave by range.
/// - **No waste on a graceful stop**: dropping the generator (or
///   [`shutdown`](Self::shutdown)) gives the unused tail back when no one allocated after
///   it, so the next process goes on right after the last ID handed out. A crash
///   wastes at most the fetched runway: `(prefetch distance + 1) × step` IDs (plus any
///   range the store granted in a reply that was lost on the way). Dropping blocks while
///   a fetch is in flight and for the give-back (each bounded by the store's timeout): in
///   async code, drop it (or call `shutdown`) in `spawn_blocking`.
/// - **One prefetch thread for every tag**: a store that hangs delays other tags' fetches
///   by up to its timeout, once per retry (a failing store is retried after a backoff of
///   up to 1 s, shared by its tags, and empty tags are served first). Ranges sized to last
///   `range_lifetime` absorb that; keep store timeouts well below it.
/// - **Store down**: takes go on from fetched ranges ([`stats`](Self::stats)`.runway`
///   says for how long); then the [`TakeRejectPolicy`] decides, and the error names the
///   tag, the store and its failure. Fetching resumes by itself when the store answers.
///
/// ```
/// # #[cfg(feature = "sqlite")] {
/// use uidgen::{SegmentGenerator, SqliteSegmentStore};
///
/// let dir = std::env::temp_dir().join(format!("uidgen-doc-{}", std::process::id()));
/// let store = SqliteSegmentStore::new(dir.join("segments.db"));
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1000).build()?;
/// let a = orders.next_uid()?;
/// let b = orders.next_uid()?;
/// assert_eq!(b, a + 1);
/// # drop(orders);
/// # std::fs::remove_dir_all(dir).ok();
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SegmentGenerator {
    tag: Arc<Tag>,
    prefetcher: &'static Prefetcher,
    policy: TakeRejectPolicy,
}

impl std::fmt::Debug for SegmentGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentGenerator")
            .field("tag", &self.tag.name)
            .field("store", &self.tag.store)
            .field("chain", &self.tag.chain)
            .finish_non_exhaustive()
    }
}

impl SegmentGenerator {
    /// A builder for `tag`'s generator on `store`.
    pub fn builder(store: impl SegmentStore, tag: &str) -> SegmentGeneratorBuilder {
        SegmentGeneratorBuilder {
            store: Arc::new(store),
            tag: tag.to_owned(),
            create_missing: None,
            policy: TakeRejectPolicy::default(),
            max_step: DEFAULT_MAX_STEP,
            range_lifetime: DEFAULT_RANGE_LIFETIME,
            max_distance: DEFAULT_MAX_PREFETCH_DISTANCE,
            prefetch: true,
        }
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        &self.tag.name
    }

    #[inline(always)]
    fn take(&self) -> Option<u64> {
        let (prefetcher, chain) = (self.prefetcher, &self.tag.chain);
        // Moved to the last range fetched: ask for more now. Otherwise the prefetch
        // thread's own timer (half a range's time) comes in time, and this call makes no
        // system call.
        chain.take(|| {
            if chain.ranges_ahead() == 0 {
                prefetcher.ring()
            }
        })
    }

    /// The next ID. When every fetched range is used up, waits as the take policy
    /// allows (blocking this thread); in async code use `try_next_uid` or
    /// `next_uid_async`.
    #[inline]
    pub fn next_uid(&self) -> Result<u64, UidError> {
        match self.take() {
            Some(id) => Ok(id),
            None => take::blocking(self, &self.policy, || self.take()),
        }
    }

    /// The next ID if one is fetched already; never blocks (and never waits on the
    /// store). Otherwise [`UidError::WouldBlock`] while the next range is on its way, or
    /// [`UidError::SegmentExhausted`] (naming the store's failure) while the store fails.
    pub fn try_next_uid(&self) -> Result<u64, UidError> {
        if let Some(id) = self.take() {
            return Ok(id);
        }
        self.hungry();
        // Nothing will come soon: say why rather than "would block" forever.
        if self.tag.refused_flag.load(Ordering::Acquire) || self.tag.health.failing() {
            return self.take().ok_or_else(|| self.exhausted(Duration::ZERO));
        }
        Err(UidError::WouldBlock {
            why: "the tag's fetched ranges are used up; the next is being fetched",
            wait: None,
        })
    }

    /// Fills `out` from the front with new IDs, in increasing order; returns how many (at
    /// least 1 unless `out` is empty; fewer than `out.len()` only when the fetched ranges
    /// ran out after the first).
    pub fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        let Some((first, rest)) = out.split_first_mut() else {
            return Ok(0);
        };
        *first = self.next_uid()?;
        let mut filled = 1;
        for slot in rest {
            match self.take() {
                Some(id) => *slot = id,
                None => break,
            }
            filled += 1;
        }
        Ok(filled)
    }

    /// [`next_uid`](Self::next_uid) as an `i64`, for SQL `BIGINT` columns: counters stay
    /// below `i64::MAX`, so it is the same number.
    pub fn next_uid_i64(&self) -> Result<i64, UidError> {
        self.next_uid().map(|id| id as i64)
    }

    /// The next ID, waiting on the tokio runtime (never blocking its thread) while every
    /// fetched range is used up, as long as the take policy allows.
    #[cfg(feature = "tokio")]
    pub async fn next_uid_async(&self) -> Result<u64, UidError> {
        if let Some(id) = self.take() {
            return Ok(id);
        }
        take::on_runtime(self, &self.policy, || self.take()).await
    }

    fn hungry(&self) {
        self.tag.hungry.fetch_add(1, Ordering::Relaxed);
        self.prefetcher.hungry();
    }

    fn exhausted(&self, waited: Duration) -> UidError {
        UidError::SegmentExhausted {
            tag: self.tag.name.clone(),
            waited,
            why: self.tag.why_empty(),
        }
    }

    /// What the generator holds and how fast it goes.
    pub fn stats(&self) -> SegmentStats {
        let tag = &self.tag;
        let ids_left = tag.chain.ids_left();
        let rate = f64::from_bits(tag.rate_bits.load(Ordering::Relaxed));
        SegmentStats {
            tag: tag.name.clone(),
            ranges_fetched: tag.ranges_fetched.load(Ordering::Relaxed),
            step: tag.step.load(Ordering::Relaxed),
            prefetch_distance: if tag.limits.prefetch {
                tag.distance.load(Ordering::Relaxed)
            } else {
                0
            },
            ids_left,
            rate_per_sec: rate,
            runway: (rate > 0.0)
                .then(|| Duration::try_from_secs_f64(ids_left as f64 / rate).ok())
                .flatten(),
            hungry_takes: tag.hungry.load(Ordering::Relaxed),
            store_error: tag.health.error(),
        }
    }

    /// Stops fetching and gives the unused tail back to the store when no one allocated
    /// after this generator's last range: the next generator of the tag then starts at
    /// the first ID this one did not hand out. Dropping the generator does the same and
    /// logs the outcome; call this to see it.
    pub fn shutdown(self) -> Result<GiveBack, StoreError> {
        self.give_back()
    }

    fn give_back(&self) -> Result<GiveBack, StoreError> {
        let tag = &self.tag;
        if tag.closed.swap(true, Ordering::AcqRel) {
            return Ok(GiveBack::NothingLeft);
        }
        // Waits out a fetch in flight; none starts after `closed`.
        let state = tag.fetch.lock().unwrap_or_else(PoisonError::into_inner);
        let ranges = tag.chain.ranges();
        let Some((from, to)) = unused_tail(&ranges, state.last_end) else {
            return Ok(GiveBack::NothingLeft);
        };
        if tag.store.give_back(&tag.name, from, to)? {
            Ok(GiveBack::Returned { from, to })
        } else {
            Ok(GiveBack::AllocatedAfter)
        }
    }
}

/// How a take that found every fetched range used up waits (`crate::wait::take`).
impl Supply for SegmentGenerator {
    fn found_empty(&self) {
        self.hungry();
    }

    fn ask_for_more(&self) {
        self.prefetcher.ring();
    }

    /// A refused range: nothing more will come.
    fn dried_up(&self, waited: Duration) -> Option<UidError> {
        self.tag
            .refused_flag
            .load(Ordering::Acquire)
            .then(|| self.exhausted(waited))
    }

    fn gave_up(&self, waited: Duration) -> UidError {
        self.exhausted(waited)
    }
}

impl crate::generator::IdSource for SegmentGenerator {
    #[inline]
    fn next_id(&self) -> Result<u64, UidError> {
        self.next_uid()
    }
    fn try_next_id(&self) -> Result<u64, UidError> {
        self.try_next_uid()
    }
    fn next_ids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        self.next_uids(out)
    }
}

/// The counter to give back: from `last_end` (the end of the last range fetched) down
/// to the first unused ID of the unused, contiguous tail of `ranges`; `None` if that
/// tail is empty.
fn unused_tail(ranges: &[RangeLeft], last_end: u64) -> Option<(u64, u64)> {
    let last = ranges.last()?;
    if last.end != last_end {
        return None;
    }
    let mut to = last.next;
    for pair in ranges.windows(2).rev() {
        let (earlier, later) = (pair[0], pair[1]);
        if later.next == later.start && earlier.end == later.start {
            to = earlier.next;
        } else {
            break;
        }
    }
    (to < last_end).then_some((last_end, to))
}

impl Drop for SegmentGenerator {
    fn drop(&mut self) {
        match self.give_back() {
            Ok(GiveBack::Returned { from, to }) => {
                tracing::debug!(tag = %self.tag.name, from, to, "gave the unused tail back")
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(
                tag = %self.tag.name,
                "could not give the unused tail back (a gap, never a repeat): {err}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, next: u64, end: u64) -> RangeLeft {
        RangeLeft { start, next, end }
    }

    #[test]
    fn the_unused_tail_stops_at_a_gap_or_a_used_range() {
        // One range, partly used.
        assert_eq!(unused_tail(&[range(1, 5, 11)], 11), Some((11, 5)));
        // Used up: nothing to give.
        assert_eq!(unused_tail(&[range(1, 11, 11)], 11), None);
        // Contiguous, the later one untouched: back into the earlier.
        assert_eq!(
            unused_tail(&[range(1, 5, 11), range(11, 11, 21)], 21),
            Some((21, 5))
        );
        // Someone took [11, 31) between ours: only the last range goes back.
        assert_eq!(
            unused_tail(&[range(1, 5, 11), range(31, 31, 41)], 41),
            Some((41, 31))
        );
        // The later range is in use: it alone goes back, from its next ID.
        assert_eq!(
            unused_tail(&[range(1, 11, 11), range(11, 15, 21)], 21),
            Some((21, 15))
        );
        // The last range is not the last fetched (should not happen): nothing.
        assert_eq!(unused_tail(&[range(1, 5, 11)], 21), None);
    }

    #[test]
    fn ranges_that_go_back_are_refused() {
        assert_eq!(checked_range(1001, 1000, 1), Ok(1));
        assert_eq!(checked_range(3001, 1000, 1001), Ok(2001));
        assert_eq!(checked_range(1500, 1000, 1001), Err((500, 1500)));
        assert_eq!(checked_range(500, 1000, 0), Err((0, 500)));
        // Past the largest BIGINT: a store's garbage, refused.
        let max = i64::MAX as u64;
        assert_eq!(checked_range(max, 10, 1), Ok(max - 10));
        assert_eq!(
            checked_range(u64::MAX, 10, 1),
            Err((u64::MAX - 10, u64::MAX))
        );
    }
}
