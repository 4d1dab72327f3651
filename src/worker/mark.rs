//! The time mark: the highest tick a worker ID may have been used at. A generator starts
//! above its worker ID's mark and never starts a tick above the ceiling its keeper has
//! recorded, so no two users of one worker ID — one after another, in a process or across
//! processes — make the same ID.
//!
//! Fixed worker IDs keep their marks in this process ([`process_mark`]); leased ones in
//! their store, through the lease's keeper ([`super::lease`]).

use crate::error::UidError;
use crate::layout::BitsAllocator;
use crate::sync::outside_loom::{lock, wait_timeout, Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

/// `used` before any tick was started.
const NONE: u64 = u64::MAX;

/// One generator's view of its worker ID's mark: shared by the generator (which starts
/// ticks) and whoever records the mark (the process table, or a lease's keeper).
pub(crate) struct MarkState {
    /// The first tick the generator may start: one past the recorded mark.
    floor: u64,
    /// The highest tick the generator may start; `u64::MAX` when nothing outside this
    /// process must record it first (fixed IDs); 0 with `failure` set once revoked.
    ceiling: AtomicU64,
    /// The highest tick started, or [`NONE`].
    used: AtomicU64,
    /// Set when a tick near the ceiling was started: the keeper should raise it now.
    wanted: AtomicBool,
    /// The keeper should stop (the lease is being released).
    stopping: AtomicBool,
    /// Why the ceiling cannot be raised any more (the lease was lost or expired), named
    /// with its store; kept for every later error.
    failure: Mutex<Option<String>>,
    /// Why the keeper cannot raise the ceiling now (its store fails or is late), while
    /// the lease still lasts; cleared by the next raise.
    trouble: Mutex<Option<String>>,
    /// `trouble` is set: read by takers of an empty ring without taking its lock.
    troubled: AtomicBool,
    /// Wakes the keeper (`wanted`), and takers waiting for a raise.
    changed: Condvar,
    /// How far ahead of its start the generator should ask for a raise, in ticks.
    raise_margin: u64,
    /// How long a generator waits for a raise before failing.
    raise_wait: Duration,
    /// Set by `revoke`: no tick may start, and built IDs must not be handed out.
    revoked: AtomicBool,
    /// Called once on revocation (the cached generator wakes its padder to drop its ring).
    on_revoke: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Who records the mark, for errors: the lease and its store.
    keeper: String,
    /// Raises recorded (each one renewed the lease), for monitoring.
    raises: AtomicU64,
    /// Times the keeper could not renew, for monitoring.
    troubles: AtomicU64,
}

impl std::fmt::Debug for MarkState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkState")
            .field("floor", &self.floor)
            .field("ceiling", &self.ceiling)
            .field("used", &self.used())
            .field("revoked", &self.revoked())
            .finish_non_exhaustive()
    }
}

impl MarkState {
    pub(crate) fn new(
        floor: u64,
        ceiling: u64,
        raise_margin: u64,
        raise_wait: Duration,
        keeper: String,
    ) -> Self {
        Self {
            floor,
            ceiling: AtomicU64::new(ceiling),
            used: AtomicU64::new(NONE),
            wanted: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            failure: Mutex::new(None),
            trouble: Mutex::new(None),
            troubled: AtomicBool::new(false),
            changed: Condvar::new(),
            raise_margin,
            raise_wait,
            revoked: AtomicBool::new(false),
            on_revoke: Mutex::new(None),
            keeper,
            raises: AtomicU64::new(0),
            troubles: AtomicU64::new(0),
        }
    }

    /// Whether the lease was revoked (lost, expired or released).
    pub(crate) fn revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }

    /// What to call once the lease is revoked.
    pub(crate) fn on_revoke(&self, callback: impl Fn() + Send + Sync + 'static) {
        *lock(&self.on_revoke) = Some(Box::new(callback));
    }

    /// The highest tick the generator may start now: `u64::MAX` with nothing to record
    /// first (fixed IDs), 0 once revoked.
    pub(crate) fn ceiling(&self) -> u64 {
        self.ceiling.load(Ordering::SeqCst)
    }

    /// The first tick the generator may use.
    pub(crate) fn floor(&self) -> u64 {
        self.floor
    }

    /// The highest tick started, if any.
    pub(crate) fn used(&self) -> Option<u64> {
        Some(self.used.load(Ordering::SeqCst)).filter(|&t| t != NONE)
    }

    /// Lets the generator start `tick` (at or above the floor), or says why not. Called
    /// once per tick, not per ID. When the tick is past the recorded ceiling, waits up to
    /// the raise bound, or, without `may_wait`, asks for a raise and says `WouldBlock`.
    pub(crate) fn admit(&self, tick: u64, may_wait: bool) -> Result<(), UidError> {
        // `used` first, the ceiling second, both SeqCst, and the revoker does the reverse:
        // either this sees the revocation, or the revoker sees this tick in `used`.
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u == NONE || u < tick).then_some(tick)
            })
            .ok();
        let ceiling = self.ceiling.load(Ordering::SeqCst);
        if tick.saturating_add(self.raise_margin) <= ceiling {
            return Ok(());
        }
        if tick <= ceiling {
            // Near the ceiling: ask for a raise, keep going.
            if !self.wanted.swap(true, Ordering::SeqCst) {
                self.changed.notify_all();
            }
            return Ok(());
        }
        if !may_wait {
            if !self.wanted.swap(true, Ordering::SeqCst) {
                self.changed.notify_all();
            }
            return Err(self.stuck().unwrap_or(UidError::WouldBlock {
                why: "the store is recording a higher time mark for the worker ID",
                wait: None,
            }));
        }
        self.wait_for_raise(tick)
    }

    /// Why no tick above the ceiling can start now, if the keeper knows: the lease is
    /// revoked, or its store is failing (or late) while the lease still lasts. Atomic
    /// loads only unless there is an error to return.
    pub(crate) fn stuck(&self) -> Option<UidError> {
        if self.revoked() {
            return Some(UidError::WorkerLease {
                why: self.failure().unwrap_or_default(),
            });
        }
        if self.troubled.load(Ordering::SeqCst) {
            if let Some(why) = lock(&self.trouble).clone() {
                return Some(UidError::WorkerLease { why });
            }
        }
        None
    }

    /// Whether the generator asked for a tick above the ceiling and has not been let
    /// start it: nothing can be made until the keeper records a higher mark (or a revoked
    /// lease never lets it).
    pub(crate) fn held(&self) -> bool {
        // `admit` records the tick in `used` before it looks at the ceiling.
        self.used()
            .is_some_and(|used| used > self.ceiling.load(Ordering::SeqCst))
    }

    /// The error for a take that gave up while the generator is [`held`](Self::held): the
    /// ring stayed empty because the store has not recorded a higher mark, so that is the
    /// cause to report, not the empty ring. `None` when the generator is not held.
    pub(crate) fn held_error(&self) -> Option<UidError> {
        if !self.held() {
            return None;
        }
        Some(self.stuck().unwrap_or_else(|| UidError::WorkerLease {
            why: format!("{} has not recorded a higher time mark yet", self.keeper),
        }))
    }

    fn wait_for_raise(&self, tick: u64) -> Result<(), UidError> {
        let deadline = std::time::Instant::now() + self.raise_wait;
        let mut failure = lock(&self.failure);
        loop {
            if let Some(why) = failure.as_ref() {
                return Err(UidError::WorkerLease { why: why.clone() });
            }
            if tick <= self.ceiling.load(Ordering::SeqCst) {
                return Ok(());
            }
            // The keeper's store is failing or late: say so now rather than wait out the
            // bound (the keeper goes on trying; a later call may succeed).
            if self.troubled.load(Ordering::SeqCst) {
                if let Some(why) = lock(&self.trouble).clone() {
                    return Err(UidError::WorkerLease { why });
                }
            }
            if self.keeper_stopping() {
                return Err(UidError::WorkerLease {
                    why: format!("{} is being released", self.keeper),
                });
            }
            self.wanted.store(true, Ordering::SeqCst);
            self.changed.notify_all();
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(UidError::WorkerLease {
                    why: format!(
                        "{} did not record a higher time mark (for tick {tick}) within {:?}",
                        self.keeper, self.raise_wait
                    ),
                });
            }
            failure = wait_timeout(&self.changed, failure, left.min(Duration::from_millis(50)));
        }
    }

    /// The reason the generator can no longer start ticks, if it cannot.
    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    /// The keeper recorded `ceiling` in the store (and so renewed the lease): its
    /// trouble, if any, is over. Nothing once revoked: a revocation is final.
    pub(crate) fn raise(&self, ceiling: u64) {
        let guard = lock(&self.failure);
        if guard.is_some() {
            return;
        }
        self.ceiling.fetch_max(ceiling, Ordering::SeqCst);
        self.raises.fetch_add(1, Ordering::Relaxed);
        self.wanted.store(false, Ordering::SeqCst);
        self.troubled.store(false, Ordering::SeqCst);
        *lock(&self.trouble) = None;
        self.changed.notify_all();
    }

    /// The keeper cannot renew now (`why` names the lease's store and worker ID): a
    /// generator that needs a higher mark fails with it at once instead of waiting.
    pub(crate) fn set_trouble(&self, why: String) {
        self.troubles.fetch_add(1, Ordering::Relaxed);
        *lock(&self.trouble) = Some(why);
        self.troubled.store(true, Ordering::SeqCst);
        let _guard = lock(&self.failure);
        self.changed.notify_all();
    }

    /// Counts a renewal that ended the lease (lost, taken, given up), for the metrics.
    pub(crate) fn count_failure(&self) {
        self.troubles.fetch_add(1, Ordering::Relaxed);
    }

    /// Raises recorded and times the keeper could not renew, so far.
    pub(crate) fn renewal_counts(&self) -> (u64, u64) {
        (
            self.raises.load(Ordering::Relaxed),
            self.troubles.load(Ordering::Relaxed),
        )
    }

    /// The keeper's current trouble renewing, if any.
    pub(crate) fn trouble(&self) -> Option<String> {
        lock(&self.trouble).clone()
    }

    /// No tick may start any more; returns the highest tick started, which the revoker
    /// can then record as final.
    pub(crate) fn revoke(&self, why: String) -> Option<u64> {
        {
            let mut failure = lock(&self.failure);
            if failure.is_none() {
                *failure = Some(why);
            }
            self.ceiling.store(0, Ordering::SeqCst);
            self.revoked.store(true, Ordering::SeqCst);
            self.changed.notify_all();
        }
        if let Some(callback) = lock(&self.on_revoke).as_ref() {
            callback();
        }
        self.used()
    }

    /// Tells the keeper to stop, and wakes it.
    pub(crate) fn stop_keeper(&self) {
        let _guard = lock(&self.failure);
        self.stopping.store(true, Ordering::SeqCst);
        self.changed.notify_all();
    }

    /// Whether the keeper was told to stop.
    pub(crate) fn keeper_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Waits up to `timeout`, or until the keeper is told to stop.
    pub(crate) fn nap(&self, timeout: Duration) {
        let guard = lock(&self.failure);
        if !self.keeper_stopping() {
            let _unused = wait_timeout(&self.changed, guard, timeout);
        }
    }

    /// Wakes the keeper (a store call it waits for has answered).
    pub(crate) fn wake(&self) {
        let _guard = lock(&self.failure);
        self.changed.notify_all();
    }

    /// Waits until `done` holds or `until`. Whoever makes `done` true calls
    /// [`wake`](Self::wake) (or [`stop_keeper`](Self::stop_keeper)) after, so it is never
    /// missed: `done` is looked at under the lock they take.
    pub(crate) fn nap_until(&self, until: Instant, done: impl Fn() -> bool) {
        let mut guard = lock(&self.failure);
        loop {
            if done() {
                return;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            guard = wait_timeout(&self.changed, guard, left);
        }
    }

    /// Whether a raise was asked for; the keeper waits on this up to `timeout`.
    pub(crate) fn wait_wanted(&self, timeout: Duration) -> bool {
        let guard = lock(&self.failure);
        if self.wanted.load(Ordering::SeqCst) || self.keeper_stopping() {
            return self.wanted.load(Ordering::SeqCst);
        }
        let _unused = wait_timeout(&self.changed, guard, timeout);
        self.wanted.load(Ordering::SeqCst)
    }
}

/// What identifies a worker ID's marks in this process: the clock's domain (so a test's
/// manual clock keeps marks apart from the system's), the layout and the worker ID.
type Key = (usize, BitsAllocator, u64);

#[derive(Default)]
struct ProcessMarks {
    /// The highest tick used by generators that are gone.
    done: HashMap<Key, u64>,
    /// Generators alive now: a new one starts above what they started too.
    live: HashMap<Key, Vec<Weak<MarkState>>>,
}

fn process_marks() -> &'static Mutex<ProcessMarks> {
    static MARKS: OnceLock<Mutex<ProcessMarks>> = OnceLock::new();
    MARKS.get_or_init(Default::default)
}

/// A fixed worker ID's mark, kept for this process: a generator built after another with
/// the same worker ID (and layout and clock) starts above every tick the other started,
/// so building, dropping and building again repeats nothing.
#[derive(Debug)]
pub(crate) struct ProcessMark {
    key: Key,
    state: Arc<MarkState>,
}

/// Registers a generator about to use `worker_id`; its floor is one past every tick a
/// generator with the same key used before (or is using now).
pub(crate) fn process_mark(
    clock_domain: usize,
    bits: &BitsAllocator,
    worker_id: u64,
) -> ProcessMark {
    let key = (clock_domain, *bits, worker_id);
    let mut marks = lock(process_marks());
    let mut highest = marks.done.get(&key).copied();
    let live = marks.live.entry(key).or_default();
    live.retain(|weak| weak.strong_count() > 0);
    if !live.is_empty() {
        tracing::warn!(
            worker_id,
            "two generators with the same worker ID are alive at once in this process: \
             they will make the same IDs; give each its own worker ID"
        );
    }
    for other in live.iter().filter_map(Weak::upgrade) {
        highest = highest.max(other.used());
    }
    let floor = highest.map_or(0, |tick| tick.saturating_add(1));
    let state = Arc::new(MarkState::new(
        floor,
        u64::MAX,
        0,
        Duration::ZERO,
        "this process".into(),
    ));
    live.push(Arc::downgrade(&state));
    ProcessMark { key, state }
}

impl ProcessMark {
    pub(crate) fn state(&self) -> &Arc<MarkState> {
        &self.state
    }
}

impl Drop for ProcessMark {
    fn drop(&mut self) {
        let mut marks = lock(process_marks());
        if let Some(used) = self.state.used() {
            let done = marks.done.entry(self.key).or_insert(used);
            *done = (*done).max(used);
        }
        if let Some(live) = marks.live.get_mut(&self.key) {
            live.retain(|weak| !std::ptr::eq(weak.as_ptr(), Arc::as_ptr(&self.state)));
        }
    }
}
