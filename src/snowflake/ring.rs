//! The ring buffer of pre-built IDs: lock-free takes for any number of threads, puts
//! from one producer (the padding thread).
//!
//! # Algorithm
//!
//! UidGenerator's `RingBuffer` (a power-of-two array of slots, a `tail` and a `cursor`),
//! with takes made the way single-producer queues' consumers and work-stealing deques'
//! stealers make them (crossbeam-deque's `Stealer::steal`, Chase–Lev): **read, then
//! claim**.
//!
//! - `tail` counts positions ever published and `cursor` positions ever claimed; slot
//!   `p & mask` holds position `p`. Both are `u64` counters that never wrap (2^64 takes is
//!   584 years at 10^9 a second). A slot is just the ID: 8 bytes, no flag.
//! - A taker reads `cursor` (`c`) and `tail`; if `c < tail` it reads slot `c`, **then**
//!   claims position `c` by moving `cursor` from `c` to `c + 1` with a CAS. If the CAS
//!   fails, someone else claimed `c` (or the producer dropped it as stale), and the value
//!   read is thrown away. A batch reads `n` slots and claims them with one CAS.
//! - The producer writes position `p` only when `p - cursor < capacity`: the slot's
//!   previous position has been claimed, and a claimed slot has been read already.
//!
//! So a taker holds nothing between its read and its claim. One that is preempted there
//! (or stopped in a debugger, or running a signal handler) delays no one: the producer
//! refills past it and other takers claim past it; its CAS then fails and it reads again.
//! Takers never write slots, so they do not pull the producer's cache lines away from it
//! either. UidGenerator's take claims first and reads after, which lets the producer
//! overwrite an unread slot (their issue #105); the fix there, making the producer wait
//! for the reader, makes one stalled taker stall everyone.
//!
//! # Orderings
//!
//! | pair | why |
//! |---|---|
//! | producer's slot writes, then `tail.store(Release)` → taker's `tail.load(Acquire)`, then slot load | a taker that sees the new tail sees the IDs written before it, never an older lap's |
//! | taker's slot load, then `cursor` CAS (`Release` on success) → producer's `cursor.load(Acquire)`, then slot write | a producer that sees position `c` claimed writes slot `c` only after the claimer's read: the read can never see the next lap's ID. (The `Release` heads a release sequence, so a cursor moved on by later CASes still carries it.) |
//! | `cursor` loads by takers: `Relaxed` | a stale cursor only makes the CAS fail |
//! | slot stores and loads: `Relaxed` | ordered by the two pairs above |
//!
//! `loom-tests/` model-checks each row, and `scripts/loom-mutants` weakens each ordering
//! (and moves the publish before the writes) in a scratch copy and requires a model to fail.

use crate::error::ConfigError;
use crate::sync::{Arc, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// No ID uses bit 63 (the sign bit).
const SIGN_BIT: u64 = 1 << 63;

/// How many puts the producer makes before publishing them, so takers waiting on an
/// empty ring see IDs during a long fill without the tail's cache line moving per put.
/// Under loom, small, so the models reach the publish inside a run.
#[cfg(not(uidgen_loom))]
const PUBLISH_EVERY: u64 = 1024;
#[cfg(uidgen_loom)]
const PUBLISH_EVERY: u64 = 2;

/// The largest ring: 2^26 slots, 512 MiB.
pub const MAX_CAPACITY: usize = 1 << 26;

/// A power-of-two ring of IDs. Share it (it is `Sync`); take from any thread.
pub struct RingBuffer {
    /// Positions ever published: position `tail` is the next to fill. Written only by
    /// the [`RingProducer`], with `Release` after the slots it publishes; read by takers
    /// with `Acquire`, which makes those slots' values visible to them.
    tail: CachePadded<AtomicU64>,
    /// Positions ever claimed: position `cursor` is the next to take. Moved only by CAS
    /// (takers, and the producer dropping stale IDs), never past `tail`; a successful CAS
    /// is `Release` after the claimer read its slots, and the producer reads it with
    /// `Acquire` before overwriting them.
    cursor: CachePadded<AtomicU64>,
    /// Position `p`'s ID lives in `slots[p & mask]`.
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

/// Why a padding round put fewer IDs than the ring had room for, or why the ring
/// refused a put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PutRejected {
    /// Every slot holds an ID not yet taken (the normal end of a round).
    Full,
    /// The time-ahead cap (`max_time_ahead`) holds: the padder waits for the clock.
    TimeAheadCap,
    /// The layout's time is used up: no further ID can be made.
    LayoutExhausted,
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
            slots: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
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

    /// Takes the oldest ID, or `None` when the ring is empty. Lock-free; never waits
    /// for another taker.
    #[inline]
    pub fn take(&self) -> Option<Taken> {
        self.take_with(|| ())
    }

    /// [`take`](Self::take), running `between` after the slot is read and before it is
    /// claimed: tests use it to stall a taker at the one point where a claim-then-read
    /// ring would stall everyone.
    #[inline]
    pub(crate) fn take_with(&self, mut between: impl FnMut()) -> Option<Taken> {
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.load(Ordering::Acquire);
            if cursor >= tail {
                return None;
            }
            let uid = self.slot(cursor).load(Ordering::Relaxed);
            between();
            match self.cursor.compare_exchange_weak(
                cursor,
                cursor + 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Taken {
                        uid,
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
            for (i, out) in out[..n as usize].iter_mut().enumerate() {
                *out = self.slot(cursor + i as u64).load(Ordering::Relaxed);
            }
            match self.cursor.compare_exchange_weak(
                cursor,
                cursor + n,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return (n as usize, available - n),
                Err(current) => cursor = current,
            }
        }
    }

    /// Positions ever claimed (IDs taken plus IDs dropped as stale).
    pub fn claimed(&self) -> u64 {
        self.cursor.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for RingBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingBuffer")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for RingProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingProducer")
            .field("tail", &self.tail)
            .finish_non_exhaustive()
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
        self.cached_cursor = self.ring.cursor.load(Ordering::Acquire);
        self.tail - self.cached_cursor < capacity
    }

    /// Slots free for putting now (re-reads the takers' cursor).
    pub fn free_slots(&mut self) -> usize {
        self.cached_cursor = self.ring.cursor.load(Ordering::Acquire);
        (self.ring.capacity() as u64 - (self.tail - self.cached_cursor)) as usize
    }

    /// Puts one ID, visible to takers at once (the loom models' step).
    #[cfg(uidgen_loom)]
    pub fn put(&mut self, uid: u64) -> Result<(), PutRejected> {
        match self.fill_run(uid, 1) {
            Fill { put: 1, .. } => Ok(()),
            Fill { stopped_by, .. } => Err(stopped_by.unwrap_or(PutRejected::Full)),
        }
    }

    /// Puts the `count` consecutive IDs `first, first + 1, …` until the ring is full;
    /// returns how many were put (the first `put` of the run) and why it stopped (`None`:
    /// the whole run). Takers see the IDs every [`PUBLISH_EVERY`] puts and at the end.
    ///
    /// Consecutive IDs are what a padder makes within one tick, so this one tight loop of
    /// stores is the whole of the producer's work per ID.
    pub fn fill_run(&mut self, first: u64, count: u64) -> Fill {
        if first.checked_add(count).is_none_or(|end| end > SIGN_BIT) {
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
                // Acquire: pairs with the claimers' Release, so their reads of the slots
                // about to be overwritten are done.
                self.cached_cursor = ring.cursor.load(Ordering::Acquire);
                if self.tail - self.cached_cursor == capacity {
                    break Some(PutRejected::Full);
                }
            }
            // Up to the ring's free room, the run's end and the next publish point.
            let free = capacity - (self.tail - self.cached_cursor);
            let until_publish = PUBLISH_EVERY - (self.tail - start) % PUBLISH_EVERY;
            let chunk = free.min(end - next).min(until_publish);
            for i in 0..chunk {
                ring.slot(self.tail + i).store(next + i, Ordering::Relaxed);
            }
            self.tail += chunk;
            next += chunk;
            if chunk == until_publish {
                ring.tail.store(self.tail, Ordering::Release);
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
    /// Only the producer may call it, between fills: the slots between cursor and tail
    /// are then its own writes and cannot change, so reading them needs no claim; the CAS
    /// claims the stale prefix as a taker's batch would.
    pub fn discard_while(&mut self, mut stale: impl FnMut(u64) -> bool) -> usize {
        let ring = &*self.ring;
        let mut cursor = ring.cursor.load(Ordering::Relaxed);
        loop {
            let mut end = cursor;
            while end < self.tail && stale(ring.slot(end).load(Ordering::Relaxed)) {
                end += 1;
            }
            if end == cursor {
                return 0;
            }
            match ring
                .cursor
                .compare_exchange(cursor, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return (end - cursor) as usize,
                Err(current) => cursor = current,
            }
        }
    }
}
