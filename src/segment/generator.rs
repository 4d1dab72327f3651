//! [`SegmentGenerator`] and its builder: the public face of one tag's IDs, handed out of
//! ranges the prefetch thread fetches ahead.

use super::chain::SLOTS;
use super::error::SegmentError;
use super::prefetch::Prefetcher;
use super::tag::{GiveBack, Limits, SegmentStats, Tag};
use crate::error::UidError;
use crate::store::segment::{check_tag, SegmentStore, MAX_BASE_STEP};
use crate::store::StoreError;
use crate::sync::Arc;
use crate::wait::take::{self, Supply};
use crate::wait::TakeRejectPolicy;
use std::time::Duration;

/// The default upper bound on one range: Leaf's `MAX_STEP`.
pub const DEFAULT_MAX_STEP: u64 = 1_000_000;
/// The default time one range should last at the recent rate.
pub const DEFAULT_RANGE_LIFETIME: Duration = Duration::from_secs(30);
/// The default bound on the ranges kept ahead of the current one.
pub const DEFAULT_MAX_PREFETCH_DISTANCE: u64 = 4;

/// Builds a [`SegmentGenerator`]; from [`SegmentGenerator::builder`].
#[derive(Debug)]
#[must_use]
pub struct SegmentGeneratorBuilder {
    store: Arc<dyn SegmentStore>,
    tag: String,
    create_missing: Option<(u64, u64)>,
    policy: TakeRejectPolicy,
    max_step: u64,
    range_lifetime: Duration,
    max_distance: u64,
    prefetch: bool,
    /// A prefetch thread of the store's own rather than the shared one.
    own_prefetcher: bool,
    floor: Option<u64>,
}

impl SegmentGeneratorBuilder {
    setters! {
        /// What a take does when every fetched range is used up (the store slow or down):
        /// wait up to a bound (the default, 1 s), fail fast, or your own rule. The same
        /// policies as [`CachedUidGenerator`](crate::CachedUidGenerator)'s.
        take_reject_policy(policy: TakeRejectPolicy) => self.policy = policy;

        /// The largest range to take at once (default [`DEFAULT_MAX_STEP`], as Leaf's). A
        /// crash wastes at most what is fetched: `(distance + 1) × max_step` IDs.
        max_step(max_step: u64) => self.max_step = max_step;

        /// How long one range should last at the recent rate (default 30 s); the step
        /// follows, within the tag's base step and `max_step`.
        range_lifetime(lifetime: Duration) => self.range_lifetime = lifetime;

        /// The most ranges kept ahead of the current one (default 4, at most 15). The
        /// prefetch thread keeps two ahead (or this many if fewer), doubling when takers
        /// find none.
        max_prefetch_distance(distance: u64) => self.max_distance = distance;

        /// Whether to fetch ahead at all (default yes). Without it, a range is fetched only
        /// when the last one is used up, and the take that finds it so waits for the store:
        /// Leaf's behaviour without its second buffer, for comparison.
        prefetch(prefetch: bool) => self.prefetch = prefetch;
    }

    /// Creates the tag (its first ID `first_id`, base step `step`) if the store does
    /// not have it. Without this, a missing tag is an error naming it and how to
    /// create it. The start is named, never assumed: a tag that a store lost and
    /// that is created again at 1 repeats every ID it handed out. Where the store
    /// (through [`StoreUrl`](crate::StoreUrl)) or this machine knows the tag served
    /// IDs at or above `first_id`, creating it is refused, naming what is known.
    pub fn create_missing(mut self, first_id: u64, step: u64) -> Self {
        self.create_missing = Some((first_id, step));
        self
    }

    /// No ID at or below `floor` is ever handed out: building refuses a tag whose
    /// counter is at or below it (naming `uidgen migrate plan`), and
    /// [`create_missing`](Self::create_missing) below it is refused the same way. Every
    /// later range starts above the first, so none reaches down to it.
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")] {
    /// use uidgen::{SegmentGenerator, SqliteSegmentStore};
    ///
    /// let dir = std::env::temp_dir().join(format!("uidgen-floor-{}", std::process::id()));
    /// let store = SqliteSegmentStore::new(dir.join("segments.db"));
    /// let below = SegmentGenerator::builder(store.clone(), "order")
    ///     .floor(5_000)
    ///     .create_missing(1, 1000)
    ///     .build();
    /// assert!(below.unwrap_err().to_string().contains("uidgen migrate plan"));
    /// let orders = SegmentGenerator::builder(store, "order")
    ///     .floor(5_000)
    ///     .create_missing(5_001, 1000)
    ///     .build()?;
    /// assert_eq!(orders.next_uid()?, 5_001);
    /// # drop(orders);
    /// # std::fs::remove_dir_all(dir).ok();
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn floor(mut self, floor: u64) -> Self {
        self.floor = Some(floor);
        self
    }

    /// Fetches on the store's own prefetch thread (one per store in the process), so a
    /// store that hangs never delays fetches from another: residue classes.
    pub(super) fn store_prefetcher(mut self) -> Self {
        self.own_prefetcher = true;
        self
    }

    /// Checks the settings, creates the tag if asked, takes the first range from the
    /// store (so a store that cannot be used is an error now, not at the first take) and
    /// hands the tag to the process's prefetch thread.
    pub fn build(self) -> Result<SegmentGenerator, SegmentError> {
        let describe = self.store.describe();
        let kind = self.store.kind().name();
        check_tag(kind, &self.tag)?;
        if self.max_step == 0 || self.max_step > MAX_BASE_STEP * 16 {
            return Err(SegmentError::out_of_range(
                "max_step",
                self.max_step.to_string(),
                format!("1..={}", MAX_BASE_STEP * 16),
            ));
        }
        if self.max_distance == 0 || self.max_distance > SLOTS - 1 {
            return Err(SegmentError::out_of_range(
                "max_prefetch_distance",
                self.max_distance.to_string(),
                format!("1..={}", SLOTS - 1),
            ));
        }
        if self.range_lifetime < Duration::from_millis(1)
            || self.range_lifetime > Duration::from_secs(24 * 3600)
        {
            return Err(SegmentError::out_of_range(
                "range_lifetime",
                format!("{:?}", self.range_lifetime),
                "1 ms to 24 h".into(),
            ));
        }
        if let Some((first_id, step)) = self.create_missing {
            if let Some(floor) = self.floor {
                super::tag::check_floor(&self.tag, &describe, first_id, floor, "would start")?;
            }
            self.store.create(&self.tag, first_id, step, "")?;
        }
        let record = self
            .store
            .tag(&self.tag)?
            .ok_or_else(|| crate::store::segment::missing_tag(kind, &describe, &self.tag))?;
        if let Some(floor) = self.floor {
            super::tag::check_floor(&self.tag, &describe, record.max_id, floor, "hands out next")?;
        }
        let limits = Limits {
            base_step: record.step.clamp(1, self.max_step),
            max_step: self.max_step,
            range_lifetime: self.range_lifetime,
            max_distance: self.max_distance,
            prefetch: self.prefetch,
        };
        let prefetcher = if self.own_prefetcher {
            Prefetcher::for_store(&describe)
        } else {
            Prefetcher::get()
        }
        .map_err(SegmentError::Spawn)?;
        let tag = Arc::new(Tag::new(
            self.tag,
            self.store,
            limits,
            prefetcher.health(&describe),
        ));
        tag.fetch_first(self.floor)?;
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
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
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
    prefetcher: Arc<Prefetcher>,
    policy: TakeRejectPolicy,
}

impl std::fmt::Debug for SegmentGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentGenerator")
            .field("tag", &self.tag.name())
            .field("store", self.tag.store())
            .field("chain", self.tag.chain())
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
            own_prefetcher: false,
            floor: None,
        }
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        self.tag.name()
    }

    #[inline(always)]
    fn take(&self) -> Option<u64> {
        let (prefetcher, chain) = (&self.prefetcher, self.tag.chain());
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
        if self.tag.refused() || self.tag.store_failing() {
            return self
                .take()
                .ok_or_else(|| self.tag.exhausted(Duration::ZERO));
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
        self.tag.count_hungry();
        self.prefetcher.hungry();
    }

    /// What the generator holds and how fast it goes.
    pub fn stats(&self) -> SegmentStats {
        self.tag.stats()
    }

    /// Stops fetching and gives the unused tail back to the store when no one allocated
    /// after this generator's last range: the next generator of the tag then starts at
    /// the first ID this one did not hand out. Dropping the generator does the same and
    /// logs the outcome; call this to see it.
    pub fn shutdown(self) -> Result<GiveBack, StoreError> {
        self.tag.give_back()
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
        self.tag.refused().then(|| self.tag.exhausted(waited))
    }

    fn gave_up(&self, waited: Duration) -> UidError {
        self.tag.exhausted(waited)
    }
}

/// `IdSource` for a segment generator type through its own `next_uid`, `try_next_uid`
/// and `next_uids`.
macro_rules! id_source_from_inherent {
    ($($generator:ty),*) => {$(
        impl crate::generator::IdSource for $generator {
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
    )*};
}
pub(super) use id_source_from_inherent;

id_source_from_inherent!(SegmentGenerator);

impl Drop for SegmentGenerator {
    fn drop(&mut self) {
        match self.tag.give_back() {
            Ok(GiveBack::Returned { from, to }) => {
                tracing::debug!(tag = %self.tag.name(), from, to, "gave the unused tail back")
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(
                tag = %self.tag.name(),
                "could not give the unused tail back (a gap, never a repeat): {err}"
            ),
        }
    }
}
