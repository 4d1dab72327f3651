//! The one thread per process that fetches ranges ahead for every segment generator, and
//! the rules for how much to fetch: the step (so a range lasts about `range_lifetime` at
//! the recent rate) and the distance (ranges kept ahead, two at first: doubled when takers go hungry,
//! halved after a quiet while).

use super::Tag;
use crate::wait::doorbell::{Doorbell, Wake};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

/// The prefetch thread's name (one per process, shared by every tag).
pub const PREFETCH_THREAD_NAME: &str = "uidgen-segment-prefetch";

/// How often the thread looks at every tag even when no taker rang: to sample rates, and
/// to retry a store that failed.
const LOOK_EVERY: Duration = Duration::from_millis(100);

pub(crate) struct Prefetcher {
    tags: Mutex<Vec<Weak<Tag>>>,
    /// A taker found its tag empty since the round's order was set.
    urgent: AtomicBool,
    stores: Mutex<HashMap<String, Weak<StoreHealth>>>,
    doorbell: Doorbell,
    thread: std::thread::Thread,
}

impl std::fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetcher").finish_non_exhaustive()
    }
}

impl Prefetcher {
    /// The process's prefetcher, its thread started on first use.
    pub(crate) fn get() -> Result<&'static Prefetcher, Arc<std::io::Error>> {
        static PREFETCHER: OnceLock<Result<&'static Prefetcher, Arc<std::io::Error>>> =
            OnceLock::new();
        PREFETCHER
            .get_or_init(|| {
                let (sender, receiver) = std::sync::mpsc::channel::<&'static Prefetcher>();
                let thread = std::thread::Builder::new()
                    .name(PREFETCH_THREAD_NAME.into())
                    .spawn(move || {
                        if let Ok(prefetcher) = receiver.recv() {
                            // Every tag of the process depends on this thread: whatever
                            // panics in a round, the next round goes on.
                            loop {
                                let round = std::panic::catch_unwind(|| prefetcher.run());
                                if let Err(panic) = round {
                                    tracing::error!(
                                        message = %crate::sync::panic_message(&*panic),
                                        "the segment prefetch thread panicked; going on"
                                    );
                                }
                            }
                        }
                    })
                    .map_err(Arc::new)?;
                // Leaked on purpose: one per process, alive as long as the process.
                let prefetcher: &'static Prefetcher = Box::leak(Box::new(Prefetcher {
                    tags: Mutex::new(Vec::new()),
                    urgent: AtomicBool::new(false),
                    stores: Mutex::new(HashMap::new()),
                    doorbell: Doorbell::default(),
                    thread: thread.thread().clone(),
                }));
                let _ = sender.send(prefetcher);
                Ok(prefetcher)
            })
            .clone()
    }

    /// The health of the store `describe` names, shared with every tag on it.
    pub(crate) fn health(&self, describe: &str) -> Arc<StoreHealth> {
        let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        stores.retain(|_, health| health.strong_count() > 0);
        if let Some(health) = stores.get(describe).and_then(Weak::upgrade) {
            return health;
        }
        let health = Arc::new(StoreHealth::default());
        stores.insert(describe.to_owned(), Arc::downgrade(&health));
        health
    }

    pub(crate) fn register(&self, tag: &Arc<Tag>) {
        self.tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::downgrade(tag));
        self.ring();
    }

    /// Asks for a round now (cheap when one is pending already).
    #[inline]
    pub(crate) fn ring(&self) {
        self.doorbell.ring(&self.thread);
    }

    /// A taker found its tag empty: a round now, with empty tags served before the rest
    /// of it.
    pub(crate) fn hungry(&self) {
        if !self.urgent.load(Ordering::Relaxed) {
            self.urgent.store(true, Ordering::Relaxed);
        }
        self.ring();
    }

    fn run(&self) {
        let never = AtomicBool::new(false);
        let mut look_again = LOOK_EVERY;
        loop {
            let wake = self
                .doorbell
                .wait(&never, Some(Instant::now() + look_again));
            look_again = LOOK_EVERY;
            if wake == Wake::Rung {
                self.doorbell.answer();
            }
            let mut live: Vec<Arc<Tag>> = {
                let mut tags = self.tags.lock().unwrap_or_else(PoisonError::into_inner);
                tags.retain(|t| t.strong_count() > 0);
                tags.iter().filter_map(Weak::upgrade).collect()
            };
            // Tags whose takers wait first (popped from the end): a slow store elsewhere
            // should not come before them, and a tag that runs empty during the round
            // moves up.
            // Keys read once: a tag's emptiness changes while takers take, and a sort
            // whose order changes under it may panic.
            live.sort_by_cached_key(|tag| tag.is_empty());
            self.urgent.store(false, Ordering::Relaxed);
            while let Some(tag) = live.pop() {
                // A store of the user's that panics must not end prefetching for every
                // tag: the panic counts as that store's failure.
                let topped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tag.top_up(Instant::now(), &self.urgent)
                }));
                match topped {
                    Ok(again) => look_again = look_again.min(again),
                    Err(panic) => tag.store_panicked(panic.as_ref()),
                }
                if self.urgent.swap(false, Ordering::Relaxed) {
                    live.sort_by_cached_key(|tag| tag.is_empty());
                }
            }
        }
    }
}

/// What one tag's fetching has learnt; guarded by the tag's fetch lock.
#[derive(Debug)]
pub(crate) struct FetchState {
    /// One past the last ID of the last range fetched: a new range must start there or
    /// above, else the store went back (restored, or rolled back) and it is refused.
    pub(crate) last_end: u64,
    pub(crate) step: u64,
    pub(crate) distance: u64,
    /// IDs a second, smoothed; 0 until measured.
    pub(crate) rate: f64,
    sampled_at: Instant,
    taken_then: u64,
    hungry_seen: u64,
    last_hunger: Instant,
    /// Takers went hungry since the last range: the next step at least doubles.
    grow: bool,
}

/// The bounds a tag's fetching keeps to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) base_step: u64,
    pub(crate) max_step: u64,
    pub(crate) range_lifetime: Duration,
    pub(crate) max_distance: u64,
    pub(crate) prefetch: bool,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Rates are sampled at most this often, so a burst of rings does not make noise.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// Ranges kept ahead at the least (unless `max_prefetch_distance` is lower): with two, a
/// taker that moves to the next range still leaves one ahead, so it need not wake the
/// prefetch thread (a system call on its own call); the thread's own timer comes first.
const MIN_DISTANCE: u64 = 2;

impl FetchState {
    pub(crate) fn new(last_end: u64, limits: &Limits, now: Instant) -> Self {
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
    pub(crate) fn observe(&mut self, limits: &Limits, taken: u64, hungry: u64, now: Instant) {
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
    pub(crate) fn next_step(&mut self, limits: &Limits) -> u64 {
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
    pub(crate) fn look_again_in(&self) -> Duration {
        if self.rate <= 0.0 {
            return LOOK_EVERY;
        }
        Duration::try_from_secs_f64(self.step as f64 / self.rate / 2.0)
            .unwrap_or(LOOK_EVERY)
            .clamp(Duration::from_millis(1), LOOK_EVERY)
    }

    /// Ranges to keep ahead of the current one.
    pub(crate) fn wanted_ahead(&self, limits: &Limits) -> u64 {
        if limits.prefetch {
            self.distance
        } else {
            0
        }
    }
}

/// How one store is doing, shared by every tag on it (stores are told apart by their
/// `describe`), so a store that is down costs one timeout per backoff, not one per tag.
#[derive(Debug, Default)]
pub(crate) struct StoreHealth {
    /// When to try again, and the pause after that.
    retry: Mutex<(Option<Instant>, Duration)>,
    error: Mutex<Option<String>>,
    failing: AtomicBool,
}

impl StoreHealth {
    /// Whether the store may be asked now (it is not waiting out a backoff).
    pub(crate) fn may_try(&self, now: Instant) -> bool {
        let retry = self.retry.lock().unwrap_or_else(PoisonError::into_inner);
        retry.0.is_none_or(|at| now >= at)
    }

    /// Records a failure; `true` if the store was answering until now.
    pub(crate) fn failed(&self, now: Instant, message: String) -> bool {
        {
            let mut retry = self.retry.lock().unwrap_or_else(PoisonError::into_inner);
            let backoff = retry.1.max(FIRST_BACKOFF);
            *retry = (Some(now + backoff), (backoff * 2).min(MAX_BACKOFF));
        }
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
        !self.failing.swap(true, Ordering::Relaxed)
    }

    /// Records an answer; `true` if the store was failing until now.
    pub(crate) fn answered(&self) -> bool {
        if !self.failing.swap(false, Ordering::Relaxed) {
            return false;
        }
        *self.retry.lock().unwrap_or_else(PoisonError::into_inner) = (None, FIRST_BACKOFF);
        *self.error.lock().unwrap_or_else(PoisonError::into_inner) = None;
        true
    }

    pub(crate) fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// The last failure while the store is failing.
    pub(crate) fn error(&self) -> Option<String> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
