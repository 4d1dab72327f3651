//! The ring buffer of pre-built IDs: lock-free takes for any number of threads, puts
//! from one producer (the padding thread).
//!
//! # Algorithm
//!
//! UidGenerator's `RingBuffer` (a power-of-two array of slots, a `tail` and a `cursor`),
//! with each slot's flag and value folded into one atomic word, in the manner of the
//! per-slot stamps of Vyukov's bounded MPMC queue:
//!
//! - A slot holds `uid | FILLED` (can take) or `EMPTY` (can put). IDs never use bit 63
//!   (the sign bit), so the flag costs no space: 8 bytes a slot.
//! - `tail` counts slots ever put and `cursor` slots ever taken; slot `p & mask` holds
//!   position `p`. Both are `u64` counters that never wrap (2^64 takes is 584 years at
//!   10^9 a second). UidGenerator keeps the last index instead; a count is one less
//!   special case.
//! - A taker claims position `c` by moving `cursor` from `c` to `c + 1` with a CAS, but
//!   only while `c < tail`. It then reads the slot and marks it `EMPTY`.
//! - The producer writes position `p` only when `p - cursor < capacity` **and** the slot
//!   reads `EMPTY`. The second check closes the race in UidGenerator's take (their
//!   issue #105): a taker that has claimed position `p - capacity` but not yet read it
//!   leaves the slot `FILLED`, and the producer stops there rather than overwrite it.
//!
//! # Orderings
//!
//! | pair | why |
//! |---|---|
//! | producer `tail.store(Release)` → taker `tail.load(Acquire)` | the slot writes before the store are visible to a taker that sees the new tail |
//! | slot load and `EMPTY` store by the taker, slot load by the producer: `Relaxed` | one location: coherence alone orders them. A producer that reads `EMPTY` writes after it in the slot's modification order, and the taker's earlier read cannot see that later write |
//! | `cursor` CAS and loads: `Relaxed` | the CAS's atomicity gives each position to one taker; the producer reading a stale cursor only sees less room |
//!
//! loom checks these (see `loom-tests/`): weaken the tail pair and a taker reads a slot
//! before its ID is visible.
//!
//! Takers never wait for each other. The producer can be held up by a taker that was
//! preempted between claiming a slot and reading it; it stops at that slot and the
//! padding thread tries again later.

use crate::error::ConfigError;
use crate::sync::{Arc, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// Set in a slot that holds an ID to take; never set in an ID (the sign bit).
const FILLED: u64 = 1 << 63;
/// A slot with nothing to take.
const EMPTY: u64 = 0;

/// How many puts the producer makes before publishing them, so takers waiting on an
/// empty ring see IDs during a long fill without the tail's cache line moving per put.
const PUBLISH_EVERY: u64 = 1024;

/// The largest ring: 2^26 slots, 512 MiB.
pub const MAX_CAPACITY: usize = 1 << 26;

/// A power-of-two ring of IDs. Share it (it is `Sync`); take from any thread.
pub struct RingBuffer {
    /// Slots ever put: position `tail` is the next to fill. Written only by the
    /// [`RingProducer`], with `Release` after the slots it publishes; read by takers with
    /// `Acquire`, which makes those slots' values visible to them.
    tail: CachePadded<AtomicU64>,
    /// Slots ever claimed by takers: position `cursor` is the next to take. Advanced by
    /// takers' CAS, never past `tail`; read by the producer to find room. `Relaxed`
    /// throughout (see the module's table).
    cursor: CachePadded<AtomicU64>,
    /// `uid | FILLED` or `EMPTY`; position `p` lives in `slots[p & mask]`.
    slots: Box<[AtomicU64]>,
    mask: u64,
}

/// One ID taken, with how many were left behind it when it was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// The ID.
    pub uid: u64,
    /// IDs left in the ring after this take (as seen by this taker).
    pub remaining: u64,
}

/// Why the ring refused a put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutRejected {
    /// Every slot holds an ID not yet taken.
    Full,
    /// The next slot's previous ID has been claimed by a taker that has not read it yet.
    SlotBusy,
    /// The value uses bit 63, which no ID does.
    SignBitSet,
}

/// How a [`RingProducer::fill_run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// IDs put.
    pub put: usize,
    /// Why it stopped: `None` when the whole run was put, else the ring's refusal.
    pub stopped_by: Option<PutRejected>,
}

impl RingBuffer {
    /// A ring of `capacity` slots (a power of two, at most [`MAX_CAPACITY`]) and the one
    /// producer that may fill it.
    pub fn new(capacity: usize) -> Result<(Arc<RingBuffer>, RingProducer), ConfigError> {
        if !capacity.is_power_of_two() || capacity > MAX_CAPACITY {
            return Err(ConfigError::OutOfRange {
                field: "ring capacity",
                value: capacity.to_string(),
                limit: format!("a power of two from 1 to {MAX_CAPACITY} (2^26 slots, 512 MiB)"),
            });
        }
        let ring = Arc::new(RingBuffer {
            tail: CachePadded::new(AtomicU64::new(0)),
            cursor: CachePadded::new(AtomicU64::new(0)),
            slots: (0..capacity).map(|_| AtomicU64::new(EMPTY)).collect(),
            mask: capacity as u64 - 1,
        });
        let producer = RingProducer {
            ring: ring.clone(),
            tail: 0,
            cached_cursor: 0,
        };
        Ok((ring, producer))
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// IDs waiting to be taken (a snapshot; it may change at once).
    pub fn len(&self) -> usize {
        let cursor = self.cursor.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        tail.saturating_sub(cursor) as usize
    }

    #[inline]
    fn slot(&self, position: u64) -> &AtomicU64 {
        // Masking keeps the index in bounds; the bounds check that remains is one
        // predictable compare, cheaper than an unsafe block to justify.
        &self.slots[(position & self.mask) as usize]
    }

    /// Takes the oldest ID, or `None` when the ring is empty. Lock-free.
    #[inline]
    pub fn take(&self) -> Option<Taken> {
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.load(Ordering::Acquire);
            if cursor >= tail {
                return None;
            }
            match self.cursor.compare_exchange_weak(
                cursor,
                cursor + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Taken {
                        uid: self.read_claimed(cursor),
                        remaining: tail - cursor - 1,
                    })
                }
                Err(current) => cursor = current,
            }
        }
    }

    /// Takes up to `out.len()` of the oldest IDs with one CAS; returns how many, in order,
    /// at the front of `out` (0 when the ring is empty), and how many were left behind.
    #[inline]
    pub fn take_batch(&self, out: &mut [u64]) -> (usize, u64) {
        if out.is_empty() {
            return (0, self.len() as u64);
        }
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.load(Ordering::Acquire);
            let available = tail.saturating_sub(cursor);
            if available == 0 {
                return (0, 0);
            }
            let n = available.min(out.len() as u64);
            match self.cursor.compare_exchange_weak(
                cursor,
                cursor + n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    for (i, out) in out[..n as usize].iter_mut().enumerate() {
                        *out = self.read_claimed(cursor + i as u64);
                    }
                    return (n as usize, available - n);
                }
                Err(current) => cursor = current,
            }
        }
    }

    /// Reads the ID at a position this thread has claimed, and frees its slot.
    #[inline]
    fn read_claimed(&self, position: u64) -> u64 {
        let slot = self.slot(position);
        let value = slot.load(Ordering::Relaxed);
        slot.store(EMPTY, Ordering::Relaxed);
        debug_assert!(
            value & FILLED != 0,
            "position {position} claimed below tail but its slot is empty"
        );
        value & !FILLED
    }
}

/// The one handle that puts into a [`RingBuffer`]; not `Clone`, so single-producer is
/// a fact of the types, not a convention.
pub struct RingProducer {
    ring: Arc<RingBuffer>,
    /// Next position to fill. Equal to `ring.tail` after each publish; only this
    /// handle writes `ring.tail`.
    tail: u64,
    /// The last `ring.cursor` read; reloaded only when the ring looks full (rtrb's
    /// cached head), so filling does not touch the takers' cache line per put.
    cached_cursor: u64,
}

impl RingProducer {
    /// Whether a put would find room (re-reads the takers' cursor only when the ring
    /// looks full).
    pub fn has_room(&mut self) -> bool {
        let capacity = self.ring.capacity() as u64;
        if self.tail - self.cached_cursor < capacity {
            return true;
        }
        self.cached_cursor = self.ring.cursor.load(Ordering::Relaxed);
        self.tail - self.cached_cursor < capacity
    }

    /// Puts one ID, visible to takers at once (the loom models' step).
    #[cfg(uidgen_loom)]
    pub fn put(&mut self, uid: u64) -> Result<(), PutRejected> {
        match self.fill_run(uid, 1) {
            Fill { put: 1, .. } => Ok(()),
            Fill { stopped_by, .. } => Err(stopped_by.unwrap_or(PutRejected::Full)),
        }
    }

    /// Puts the `count` consecutive IDs `first, first + 1, …` until the ring is full or a
    /// slot is busy; returns how many were put (the first `put` of the run) and why it
    /// stopped (`None`: the whole run). Takers see the IDs in batches as they are written.
    ///
    /// Consecutive IDs are what a padder makes within one tick, so this one tight loop
    /// (check the slot is empty, store) is the whole of the producer's work per ID.
    pub fn fill_run(&mut self, first: u64, count: u64) -> Fill {
        if first.checked_add(count).is_none_or(|end| end > FILLED) {
            return Fill {
                put: 0,
                stopped_by: Some(PutRejected::SignBitSet),
            };
        }
        let ring = &*self.ring;
        let capacity = ring.capacity() as u64;
        let start = self.tail;
        let mut next = first;
        let end = first + count;
        let stopped_by = loop {
            if next == end {
                break None;
            }
            if self.tail - self.cached_cursor == capacity {
                self.cached_cursor = ring.cursor.load(Ordering::Relaxed);
                if self.tail - self.cached_cursor == capacity {
                    break Some(PutRejected::Full);
                }
            }
            // Up to the ring's free room, the run's end and the next publish point.
            let free = capacity - (self.tail - self.cached_cursor);
            let until_publish = PUBLISH_EVERY - (self.tail - start) % PUBLISH_EVERY;
            let chunk = free.min(end - next).min(until_publish);
            let mut written = 0;
            while written < chunk {
                let slot = ring.slot(self.tail + written);
                if slot.load(Ordering::Relaxed) != EMPTY {
                    break;
                }
                slot.store((next + written) | FILLED, Ordering::Relaxed);
                written += 1;
            }
            self.tail += written;
            next += written;
            if written == until_publish {
                ring.tail.store(self.tail, Ordering::Release);
            }
            if written < chunk {
                break Some(PutRejected::SlotBusy);
            }
        };
        if !(self.tail - start).is_multiple_of(PUBLISH_EVERY) {
            ring.tail.store(self.tail, Ordering::Release);
        }
        Fill {
            put: (self.tail - start) as usize,
            stopped_by,
        }
    }

    /// Takes, and throws away, the IDs at the head of the ring while `stale` holds for
    /// them; returns how many. The padder uses it to drop IDs whose time has passed.
    ///
    /// Only the producer may call it: with no put running, the slots between cursor and
    /// tail cannot change except by being taken, so a CAS from the cursor that was read
    /// proves the values read since are still the ones at those positions.
    pub fn discard_while(&mut self, mut stale: impl FnMut(u64) -> bool) -> usize {
        let ring = &*self.ring;
        loop {
            let cursor = ring.cursor.load(Ordering::Relaxed);
            let mut end = cursor;
            while end < self.tail {
                let value = ring.slot(end).load(Ordering::Relaxed);
                // EMPTY: a taker claimed it after our cursor read; the CAS below fails.
                if value == EMPTY || !stale(value & !FILLED) {
                    break;
                }
                end += 1;
            }
            if end == cursor {
                return 0;
            }
            if ring
                .cursor
                .compare_exchange(cursor, end, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                for position in cursor..end {
                    ring.slot(position).store(EMPTY, Ordering::Relaxed);
                }
                return (end - cursor) as usize;
            }
        }
    }
}
