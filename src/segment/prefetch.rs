//! The thread that fetches ranges ahead for segment generators (one per process shared
//! by every tag, plus one per store for residue classes while one is alive,
//! `Prefetcher::for_store`): it
//! waits on its doorbell (rung by takers) or its timer, then tops up each tag, empty ones
//! first. How much to fetch is the tag's business (`tag.rs`); a store's health is shared
//! by every tag on it (`health.rs`).

use super::health::StoreHealth;
use super::tag::{Tag, LOOK_EVERY};
use crate::sync::{lock, thread, Arc, AtomicBool, Mutex, Ordering};
use crate::wait::doorbell::{Doorbell, Wake};
use std::collections::HashMap;
use std::sync::{OnceLock, Weak};
use std::time::{Duration, Instant};

/// The prefetch threads' name (one per process shared by every tag, plus one per store
/// of a live [`ResidueSegmentGenerator`](crate::ResidueSegmentGenerator)).
pub const PREFETCH_THREAD_NAME: &str = "uidgen-segment-prefetch";

/// The prefetch thread's side: the tags it tops up, the stores' health, and its doorbell.
pub(super) struct Prefetcher {
    tags: Mutex<Vec<Weak<Tag>>>,
    /// A taker found its tag empty since the round's order was set.
    urgent: AtomicBool,
    stores: Mutex<HashMap<String, Weak<StoreHealth>>>,
    doorbell: Doorbell,
    thread: thread::Thread,
}

impl std::fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetcher").finish_non_exhaustive()
    }
}

impl Prefetcher {
    /// The process's shared prefetcher, its thread started on first use (and never
    /// ended).
    pub(super) fn get() -> Result<Arc<Prefetcher>, Arc<std::io::Error>> {
        static PREFETCHER: OnceLock<Result<Arc<Prefetcher>, Arc<std::io::Error>>> = OnceLock::new();
        PREFETCHER.get_or_init(Self::spawn).clone()
    }

    /// A prefetcher of its own for the store `describe` names, shared by the generators
    /// on that store that ask for it: a store that hangs then holds up only its own
    /// fetches. Its thread ends once no generator holds it. For generators whose point
    /// is to ride out one store's outage.
    pub(super) fn for_store(describe: &str) -> Result<Arc<Prefetcher>, Arc<std::io::Error>> {
        static BY_STORE: OnceLock<Mutex<HashMap<String, Weak<Prefetcher>>>> = OnceLock::new();
        let mut by_store = lock(BY_STORE.get_or_init(Default::default));
        by_store.retain(|_, prefetcher| prefetcher.strong_count() > 0);
        if let Some(prefetcher) = by_store.get(describe).and_then(Weak::upgrade) {
            return Ok(prefetcher);
        }
        let prefetcher = Self::spawn()?;
        by_store.insert(describe.to_owned(), Arc::downgrade(&prefetcher));
        Ok(prefetcher)
    }

    /// Starts a prefetch thread; it runs rounds until no one but itself holds the
    /// prefetcher (checked at least every `LOOK_EVERY`).
    fn spawn() -> Result<Arc<Prefetcher>, Arc<std::io::Error>> {
        let (sender, receiver) = std::sync::mpsc::channel::<Weak<Prefetcher>>();
        let thread = thread::Builder::new()
            .name(PREFETCH_THREAD_NAME.into())
            .spawn(move || {
                let Ok(prefetcher) = receiver.recv() else {
                    return;
                };
                let mut look_again = LOOK_EVERY;
                while let Some(prefetcher) = prefetcher.upgrade() {
                    // Every tag on this thread depends on it: whatever panics in a
                    // round, the next round goes on.
                    let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        prefetcher.round(look_again)
                    }));
                    look_again = round.unwrap_or_else(|panic| {
                        tracing::error!(
                            message = %crate::sync::panic_message(&*panic),
                            "the segment prefetch thread panicked; going on"
                        );
                        LOOK_EVERY
                    });
                }
            })
            .map_err(Arc::new)?;
        let prefetcher = Arc::new(Prefetcher {
            tags: Mutex::new(Vec::new()),
            urgent: AtomicBool::new(false),
            stores: Mutex::new(HashMap::new()),
            doorbell: Doorbell::default(),
            thread: thread.thread().clone(),
        });
        let _ = sender.send(Arc::downgrade(&prefetcher));
        Ok(prefetcher)
    }

    /// The health of the store `describe` names, shared with every tag on it.
    pub(super) fn health(&self, describe: &str) -> Arc<StoreHealth> {
        let mut stores = lock(&self.stores);
        stores.retain(|_, health| health.strong_count() > 0);
        if let Some(health) = stores.get(describe).and_then(Weak::upgrade) {
            return health;
        }
        let health = Arc::new(StoreHealth::default());
        stores.insert(describe.to_owned(), Arc::downgrade(&health));
        health
    }

    pub(super) fn register(&self, tag: &Arc<Tag>) {
        lock(&self.tags).push(Arc::downgrade(tag));
        self.ring();
    }

    /// Asks for a round now (cheap when one is pending already).
    #[inline]
    pub(super) fn ring(&self) {
        self.doorbell.ring(&self.thread);
    }

    /// A taker found its tag empty: a round now, with empty tags served before the rest
    /// of it.
    pub(super) fn hungry(&self) {
        if !self.urgent.load(Ordering::Relaxed) {
            self.urgent.store(true, Ordering::Relaxed);
        }
        self.ring();
    }

    /// One round: waits for the doorbell or `look_again`, then tops up every tag;
    /// returns when to look again at the latest.
    fn round(&self, look_again: Duration) -> Duration {
        let never = AtomicBool::new(false);
        let wake = self
            .doorbell
            .wait(&never, Some(Instant::now() + look_again));
        let mut look_again = LOOK_EVERY;
        if wake == Wake::Rung {
            self.doorbell.answer();
        }
        let mut live: Vec<Arc<Tag>> = {
            let mut tags = lock(&self.tags);
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
        look_again
    }
}
