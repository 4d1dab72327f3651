//! One tag's state, shared by its generator and the prefetch thread: its chain of ranges,
//! its store's health, and its fill, which runs on the prefetch thread (the first range
//! on the building thread). Also the rules for how much to fetch: the step (so a range
//! lasts about `range_lifetime` at the recent rate) and the distance (ranges kept ahead,
//! two at first: doubled when takers go hungry, halved after a quiet while), within the
//! tag's [`Limits`].

use super::chain::{Chain, RangeLeft};
use super::error::SegmentError;
use super::health::StoreHealth;
use crate::clock::{Clock, SystemClock};
use crate::error::UidError;
use crate::store::segment::SegmentStore;
use crate::store::StoreError;
use crate::sync::{lock, Arc, AtomicBool, AtomicU64, Mutex, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One tag's state, shared by its generator and the prefetch thread.
pub(super) struct Tag {
    name: String,
    store: Arc<dyn SegmentStore>,
    chain: Chain,
    limits: Limits,
    fetch: Mutex<FetchState>,
    /// Takes that found the chain empty.
    hungry: AtomicU64,
    ranges_fetched: AtomicU64,
    /// When the last range came (Unix ms; 0: none yet), for status pages.
    fetched_at_ms: AtomicU64,
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
    /// A tag with no range yet: [`fetch_first`](Self::fetch_first) takes one.
    pub(super) fn new(
        name: String,
        store: Arc<dyn SegmentStore>,
        limits: Limits,
        health: Arc<StoreHealth>,
    ) -> Self {
        Self {
            name,
            store,
            chain: Chain::new(),
            limits,
            fetch: Mutex::new(FetchState::new(0, &limits, Instant::now())),
            hungry: AtomicU64::new(0),
            ranges_fetched: AtomicU64::new(0),
            fetched_at_ms: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            health,
            refused: Mutex::new(None),
            refused_flag: AtomicBool::new(false),
            step: AtomicU64::new(limits.base_step),
            distance: AtomicU64::new(1),
            rate_bits: AtomicU64::new(0),
        }
    }

    /// Takes the first range, on the building thread: its errors are the caller's.
    /// A first range at or below `floor` (a store set back since its counter was read)
    /// is refused: later ranges start above the first.
    pub(super) fn fetch_first(&self, floor: Option<u64>) -> Result<(), SegmentError> {
        let mut state = lock(&self.fetch);
        let step = state.next_step(&self.limits);
        let max_id = self.store.allocate(&self.name, step)?;
        let start =
            checked_range(max_id, step, 0).map_err(|(start, end)| SegmentError::RangeRefused {
                tag: self.name.clone(),
                store: self.store.describe(),
                start,
                end,
                last_end: 1,
            })?;
        if let Some(floor) = floor {
            let describe = self.store.describe();
            check_floor(&self.name, &describe, start, floor, "gave a range")?;
        }
        let _ = self.chain.publish(start, max_id);
        state.last_end = max_id;
        self.ranges_fetched.store(1, Ordering::Relaxed);
        self.fetched_at_ms
            .store(SystemClock.now_millis(), Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn store(&self) -> &Arc<dyn SegmentStore> {
        &self.store
    }

    /// The ranges IDs are taken from.
    #[inline(always)]
    pub(super) fn chain(&self) -> &Chain {
        &self.chain
    }

    /// A take found the chain empty.
    pub(super) fn count_hungry(&self) {
        self.hungry.fetch_add(1, Ordering::Relaxed);
    }

    /// A range was refused: what the chain holds is all this tag will hand out.
    pub(super) fn refused(&self) -> bool {
        self.refused_flag.load(Ordering::Acquire)
    }

    /// The store is failing now (fetched ranges are still served).
    pub(super) fn store_failing(&self) -> bool {
        self.health.failing()
    }

    /// The error of a take that gives up after `waited`, saying why the chain is empty.
    pub(super) fn exhausted(&self, waited: Duration) -> UidError {
        UidError::SegmentExhausted {
            tag: self.name.clone(),
            waited,
            why: self.why_empty(),
        }
    }

    /// Fetches ranges until the chain holds what the distance asks for (or it is full, or
    /// the store fails). Runs on the prefetch thread; returns when to look at this tag
    /// again unasked.
    pub(super) fn top_up(&self, now: Instant, urgent: &AtomicBool) -> Duration {
        let mut state = lock(&self.fetch);
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

    pub(super) fn is_empty(&self) -> bool {
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
                        self.fetched_at_ms
                            .store(SystemClock.now_millis(), Ordering::Relaxed);
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
                        *lock(&self.refused) = Some(err.to_string());
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
    pub(super) fn store_panicked(&self, panic: &(dyn std::any::Any + Send)) {
        let message = format!("the store panicked: {}", crate::sync::panic_message(panic));
        tracing::error!(tag = %self.name, "{message}");
        self.health.failed(Instant::now(), message);
    }

    /// Why an empty chain will not be refilled soon, for the error a giving-up take
    /// returns.
    fn why_empty(&self) -> String {
        if self.refused_flag.load(Ordering::Acquire) {
            if let Some(why) = lock(&self.refused).clone() {
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

    /// What the tag holds and how fast it goes.
    pub(super) fn stats(&self) -> SegmentStats {
        let ids_left = self.chain.ids_left();
        let rate = f64::from_bits(self.rate_bits.load(Ordering::Relaxed));
        SegmentStats {
            tag: self.name.clone(),
            ranges_fetched: self.ranges_fetched.load(Ordering::Relaxed),
            step: self.step.load(Ordering::Relaxed),
            prefetch_distance: if self.limits.prefetch {
                self.distance.load(Ordering::Relaxed)
            } else {
                0
            },
            ids_left,
            rate_per_sec: rate,
            runway: (rate > 0.0)
                .then(|| Duration::try_from_secs_f64(ids_left as f64 / rate).ok())
                .flatten(),
            hungry_takes: self.hungry.load(Ordering::Relaxed),
            store_error: self.health.error(),
            ranges: self
                .chain
                .ranges()
                .into_iter()
                .map(|r| HeldRange {
                    start: r.start,
                    next: r.next,
                    end: r.end,
                })
                .collect(),
            last_fetched: match self.fetched_at_ms.load(Ordering::Relaxed) {
                0 => None,
                ms => Some(UNIX_EPOCH + Duration::from_millis(ms)),
            },
        }
    }

    /// Stops fetching and gives the unused tail back to the store when no one allocated
    /// after this tag's last range; once (later calls find nothing left).
    pub(super) fn give_back(&self) -> Result<GiveBack, StoreError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(GiveBack::NothingLeft);
        }
        // Waits out a fetch in flight; none starts after `closed`.
        let state = lock(&self.fetch);
        let ranges = self.chain.ranges();
        let Some((from, to)) = unused_tail(&ranges, state.last_end) else {
            return Ok(GiveBack::NothingLeft);
        };
        if self.store.give_back(&self.name, from, to)? {
            Ok(GiveBack::Returned { from, to })
        } else {
            Ok(GiveBack::AllocatedAfter)
        }
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

/// Refuses a tag whose next ID `next` is not above `floor`.
pub(super) fn check_floor(
    tag: &str,
    store: &str,
    next: u64,
    floor: u64,
    what: &str,
) -> Result<(), SegmentError> {
    if next > floor {
        return Ok(());
    }
    Err(SegmentError::Config(
        crate::error::ConfigError::BelowFloor {
            floor,
            first: next,
            why: format!(
                "tag {} in {store} {what} at {next}; create it (or set its counter) above the \
             floor",
                crate::error::Shown(tag)
            ),
        },
    ))
}

/// What [`SegmentGenerator::shutdown`](crate::SegmentGenerator::shutdown) gave back to the store.
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

/// A snapshot of a segment generator, from
/// [`SegmentGenerator::stats`](crate::SegmentGenerator::stats).
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
    /// The current range, then those fetched ahead (a snapshot while IDs are taken).
    pub ranges: Vec<HeldRange>,
    /// When the last range was fetched (the machine's clock).
    pub last_fetched: Option<SystemTime>,
}

/// A range a segment generator holds, from [`SegmentStats::ranges`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldRange {
    /// The range's first ID.
    pub start: u64,
    /// The next ID it hands out (`end` once used up).
    pub next: u64,
    /// One past its last ID.
    pub end: u64,
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

/// What one tag's fetching has learnt; guarded by the tag's fetch lock.
#[derive(Debug)]
struct FetchState {
    /// One past the last ID of the last range fetched: a new range must start there or
    /// above, else the store went back (restored, or rolled back) and it is refused.
    last_end: u64,
    step: u64,
    distance: u64,
    /// IDs a second, smoothed; 0 until measured.
    rate: f64,
    sampled_at: Instant,
    taken_then: u64,
    hungry_seen: u64,
    last_hunger: Instant,
    /// Takers went hungry since the last range: the next step at least doubles.
    grow: bool,
}

/// The bounds a tag's fetching keeps to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) base_step: u64,
    pub(super) max_step: u64,
    pub(super) range_lifetime: Duration,
    pub(super) max_distance: u64,
    pub(super) prefetch: bool,
}

/// How often the prefetch thread looks at every tag even when no taker rang: to sample
/// rates, and to retry a store that failed.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(100);
/// Rates are sampled at most this often, so a burst of rings does not make noise.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// Ranges kept ahead at the least (unless `max_prefetch_distance` is lower): with two, a
/// taker that moves to the next range still leaves one ahead, so it need not wake the
/// prefetch thread (a system call on its own call); the thread's own timer comes first.
const MIN_DISTANCE: u64 = 2;

impl FetchState {
    fn new(last_end: u64, limits: &Limits, now: Instant) -> Self {
        Self {
            last_end,
            step: limits.base_step,
            distance: MIN_DISTANCE.min(limits.max_distance),
            rate: 0.0,
            sampled_at: now,
            taken_then: 0,
            hungry_seen: 0,
            last_hunger: now,
            grow: false,
        }
    }

    /// Updates the rate from `taken` (IDs handed out so far) and the distance from
    /// `hungry` (takes that found the chain empty so far).
    fn observe(&mut self, limits: &Limits, taken: u64, hungry: u64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.sampled_at);
        if elapsed >= SAMPLE_EVERY {
            let instant = taken.saturating_sub(self.taken_then) as f64 / elapsed.as_secs_f64();
            // Rises at once (a burst must get big ranges now), falls slowly; below one ID
            // a thousand seconds it is no rate at all.
            self.rate = if instant >= self.rate {
                instant
            } else {
                0.75 * self.rate + 0.25 * instant
            };
            if self.rate < 1e-3 {
                self.rate = 0.0;
            }
            self.sampled_at = now;
            self.taken_then = taken;
        }
        if hungry > self.hungry_seen {
            self.hungry_seen = hungry;
            self.last_hunger = now;
            self.grow = true;
            self.distance = (self.distance * 2).min(limits.max_distance);
        } else if now.saturating_duration_since(self.last_hunger) > 2 * limits.range_lifetime
            && self.distance > MIN_DISTANCE
        {
            self.last_hunger = now;
            self.distance /= 2;
        }
    }

    /// The step for the next range: enough for about `range_lifetime` at the recent rate,
    /// and at least twice the last one if takers went hungry since (a burst outruns the
    /// rate's first sample), within `[base_step, max_step]`.
    fn next_step(&mut self, limits: &Limits) -> u64 {
        let wanted = (self.rate * limits.range_lifetime.as_secs_f64()).ceil();
        let by_rate = if wanted.is_finite() && wanted > 0.0 {
            wanted.min(limits.max_step as f64) as u64
        } else {
            0
        };
        let by_hunger = if std::mem::take(&mut self.grow) {
            self.step.saturating_mul(2)
        } else {
            0
        };
        self.step = by_rate
            .max(by_hunger)
            .clamp(limits.base_step, limits.max_step);
        self.step
    }

    /// When to look at this tag again without being asked: half the time a range lasts
    /// at the recent rate, between 1 ms and [`LOOK_EVERY`].
    fn look_again_in(&self) -> Duration {
        if self.rate <= 0.0 {
            return LOOK_EVERY;
        }
        Duration::try_from_secs_f64(self.step as f64 / self.rate / 2.0)
            .unwrap_or(LOOK_EVERY)
            .clamp(Duration::from_millis(1), LOOK_EVERY)
    }

    /// Ranges to keep ahead of the current one.
    fn wanted_ahead(&self, limits: &Limits) -> u64 {
        if limits.prefetch {
            self.distance
        } else {
            0
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

    fn limits() -> Limits {
        Limits {
            base_step: 1000,
            max_step: 1_000_000,
            range_lifetime: Duration::from_secs(10),
            max_distance: 8,
            prefetch: true,
        }
    }

    #[test]
    fn the_step_follows_the_rate_within_its_bounds() {
        let limits = limits();
        let start = Instant::now();
        let mut state = FetchState::new(1, &limits, start);
        assert_eq!(state.next_step(&limits), 1000, "no rate yet: the base step");
        // 5,000 IDs in one second: 50,000 for ten seconds.
        state.observe(&limits, 5_000, 0, start + Duration::from_secs(1));
        assert_eq!(state.next_step(&limits), 50_000);
        // A burst: capped at max_step.
        state.observe(&limits, 10_005_000, 0, start + Duration::from_secs(2));
        assert_eq!(state.next_step(&limits), 1_000_000);
        // Idle for a long time: the rate decays and the step falls back to the base.
        for s in 3..60 {
            state.observe(&limits, 10_005_000, 0, start + Duration::from_secs(s));
        }
        assert_eq!(state.next_step(&limits), 1000);
        // Decayed to nothing, not to a tiny rate (a runway of 10^20 s would overflow).
        for s in 60..200 {
            state.observe(&limits, 10_005_000, 0, start + Duration::from_secs(s));
        }
        assert_eq!(state.rate, 0.0);
    }

    #[test]
    fn hunger_doubles_the_step_until_the_rate_is_known() {
        let limits = limits();
        let start = Instant::now();
        let mut state = FetchState::new(1, &limits, start);
        let mut steps = Vec::new();
        for hungry in 1..=12 {
            state.observe(&limits, 0, hungry, start);
            steps.push(state.next_step(&limits));
        }
        assert_eq!(steps[..4], [2000, 4000, 8000, 16000]);
        assert_eq!(*steps.last().unwrap(), 1_000_000, "bounded by max_step");
        // No new hunger: back to what the rate (none here) asks for.
        state.observe(&limits, 0, 12, start);
        assert_eq!(state.next_step(&limits), 1000);
    }

    #[test]
    fn the_distance_doubles_on_hunger_and_halves_when_quiet() {
        let limits = limits();
        let start = Instant::now();
        let mut state = FetchState::new(1, &limits, start);
        assert_eq!(state.wanted_ahead(&limits), 2);
        for (i, want) in [4, 8, 8].into_iter().enumerate() {
            state.observe(&limits, 0, i as u64 + 1, start);
            assert_eq!(state.distance, want);
        }
        // Quiet for more than twice the range lifetime: halved, once per quiet spell.
        state.observe(&limits, 0, 3, start + Duration::from_secs(21));
        assert_eq!(state.distance, 4);
        state.observe(&limits, 0, 3, start + Duration::from_secs(22));
        assert_eq!(state.distance, 4);
        state.observe(&limits, 0, 3, start + Duration::from_secs(43));
        assert_eq!(state.distance, 2);
        state.observe(&limits, 0, 3, start + Duration::from_secs(64));
        assert_eq!(state.distance, 2, "never below two");
        // Half a range's time at the recent rate: 1,000 IDs at 100,000 IDs/s is 10 ms.
        state.rate = 100_000.0;
        state.step = 1000;
        assert_eq!(state.look_again_in(), Duration::from_millis(5));
        let off = Limits {
            prefetch: false,
            ..limits
        };
        assert_eq!(state.wanted_ahead(&off), 0);
    }
}
