//! What a run measures: its generators, each as an [`IdSource`] for the calls and, for
//! cached ones, as a ring for its counters; and the shared-counter baseline.

use std::sync::atomic::{AtomicU64, Ordering};
use uidgen::{BitsAllocator, CachedUidGenerator, IdSource, UidError, UidGenerator};

/// The generators of a run: each as a `UidGenerator` for the calls and, for cached ones,
/// as a ring for its counters.
pub struct Generators<'a> {
    pub(super) calls: Vec<&'a dyn IdSource>,
    pub(super) rings: Vec<&'a CachedUidGenerator>,
    /// The layout of time-based generators (segment IDs have none).
    pub(super) bits: Option<BitsAllocator>,
    pub(super) worker_ids: Vec<u64>,
}

impl<'a> Generators<'a> {
    pub fn cached(all: &'a [CachedUidGenerator]) -> Self {
        Self {
            rings: all.iter().collect(),
            ..Self::without_ring(all)
        }
    }

    /// Time-based generators without a ring (no slots per ID, time ahead or rejected takes).
    pub fn without_ring<G: UidGenerator>(all: &'a [G]) -> Self {
        Self {
            calls: all.iter().map(|g| g as &dyn IdSource).collect(),
            rings: Vec::new(),
            bits: all.first().map(|g| *g.allocator()),
            worker_ids: all.iter().map(|g| g.worker_id()).collect(),
        }
    }

    /// Sources with no layout, no worker IDs and no ring: segment generators, or the
    /// baseline counters.
    pub fn without_layout<T: IdSource>(all: &'a [T]) -> Self {
        Self {
            calls: all.iter().map(|g| g as &dyn IdSource).collect(),
            rings: Vec::new(),
            bits: None,
            worker_ids: Vec::new(),
        }
    }
}

/// The baseline: one `AtomicU64::fetch_add` shared by the threads, timed and checked by
/// the same harness, so a generator's slowest call can be read against what the machine
/// did to a loop that waits on nothing.
#[derive(Default)]
pub struct SharedCounter(AtomicU64);

impl SharedCounter {
    /// A counter whose first ID is `last + 1`.
    pub fn starting_at(last: u64) -> Self {
        Self(AtomicU64::new(last))
    }
}

impl IdSource for SharedCounter {
    #[inline]
    fn next_id(&self) -> Result<u64, UidError> {
        Ok(self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
    #[inline]
    fn try_next_id(&self) -> Result<u64, UidError> {
        self.next_id()
    }
    fn next_ids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        let first = self.0.fetch_add(out.len() as u64, Ordering::Relaxed) + 1;
        for (i, out) in out.iter_mut().enumerate() {
            *out = first + i as u64;
        }
        Ok(out.len())
    }
}

/// The rings' counters, summed over the generators (time ahead: the largest).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RingCounters {
    pub(super) claimed: u64,
    pub(super) discarded_stale: u64,
    pub(super) rejected_takes: u64,
    pub(super) time_ahead_secs: f64,
}

impl RingCounters {
    /// `None` for generators without a ring.
    pub(super) fn read(rings: &[&CachedUidGenerator]) -> Option<Self> {
        (!rings.is_empty()).then(|| {
            rings.iter().fold(Self::default(), |sum, ring| {
                let stats = ring.stats();
                Self {
                    claimed: sum.claimed + stats.claimed,
                    discarded_stale: sum.discarded_stale + stats.discarded_stale,
                    rejected_takes: sum.rejected_takes + stats.rejected_takes,
                    time_ahead_secs: sum.time_ahead_secs.max(ring.time_ahead().as_secs_f64()),
                }
            })
        })
    }
}
