//! The ring buffer of pre-built IDs: lock-free takes for any number of threads, puts
//! from one producer at a time (the [`RingProducer`], owned by the padder; a taker that
//! fills in for a late padding thread holds the padder's lock, so puts never overlap).
//!
//! # Algorithm
//!
//! UidGenerator's `RingBuffer` (a power-of-two array of slots, a `tail` and a `cursor`),
//! with every read checked the way a seqlock's reader checks (crossbeam's `AtomicCell`
//! fallback, the Linux kernel's `seqcount`), so no taker ever waits for another.
//!
//! - `tail` counts positions ever published and `cursor` positions ever claimed; slot
//!   `p & mask` holds position `p`. Both are `u64` counters that never wrap (2^64 takes is
//!   584 years at 10^9 a second). A slot is just the ID: 8 bytes, no flag.
//! - `next_uid` **claims, then reads**: `cursor.fetch_add(1)` gives it position `p`, which
//!   no one else can get; it waits (per the take policy) until `tail > p`, then reads slot
//!   `p`. One uncontended-or-not atomic add, the cheapest claim there is, and claims are
//!   in one global order, so IDs handed out one after another increase across threads.
//! - The producer writes position `q` once `q - capacity` has been **claimed**, not once
//!   it has been read: a taker stopped between its claim and its read holds no one up.
//!   Before it writes a chunk it raises `writing` to the chunk's end. A taker checks
//!   `writing` after its read: if the producer may have begun writing `p + capacity`, the
//!   value read may be the next lap's, so the taker drops it and claims again (its own
//!   ID, never handed to anyone, is the one lost). That takes a stall of a whole lap of
//!   the ring, about 300 µs of full-speed takes with the default ring.
//! - `try_next_uid`, `next_uids` and async takes **read, then claim** with a CAS from `c`
//!   to `c + n`, so they never hold a position they might give up on; they check
//!   `writing` the same way.
//!
//! Positions claimed past `tail` by takers that then give up (the take policy said fail)
//! are filled later and never handed out: one ID lost per failed call.
//!
//! # Orderings
//!
//! | pair | why |
//! |---|---|
//! | producer's slot writes, then `tail.store(Release)` → taker's `tail.load(Acquire)`, then slot load | a taker that sees the new tail sees the IDs written before it, never an older lap's |
//! | producer's `writing.store`, `fence(Release)`, then slot writes → taker's slot load, `fence(Acquire)`, then `writing.load` | a taker that read a later lap's ID sees that lap's `writing` and drops the value |
//! | `cursor`: `Relaxed` everywhere | a claim is unique by the atomicity of the add or CAS; what the claimer read is checked by the row above, so nothing needs ordering with the claim |
//! | slot stores and loads, `writing`: `Relaxed` | ordered by the fences and the `tail` pair |
//!
//! `loom-tests/` model-checks each row, and `scripts/loom-mutants` weakens each ordering
//! (and moves the publish before the writes, and skips each check) in a scratch copy and
//! requires a model to fail.

use crate::error::ConfigError;
use crate::sync::{fence, Arc, AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// No ID uses bit 63 (the sign bit).
const SIGN_BIT: u64 = 1 << 63;

/// How many puts the producer makes before publishing them, so takers waiting on an
/// empty ring see IDs during a long fill without the tail's cache line moving per put.
/// Under loom, small, so the models reach the publish inside a run.
#[cfg(not(uidgen_loom))]
pub const PUBLISH_EVERY: u64 = 1024;
/// How many puts the producer makes before publishing them (small under loom).
#[cfg(uidgen_loom)]
pub const PUBLISH_EVERY: u64 = 2;

/// How many times the producer retries dropping stale IDs while takers move the cursor;
/// after that the stale IDs are simply taken (they are still unique and in order).
const DISCARD_TRIES: usize = 8;

/// The largest ring: 2^26 slots, 512 MiB.
pub const MAX_CAPACITY: usize = 1 << 26;

/// What the producer writes and takers read together: one cache line.
#[derive(Default)]
struct Published {
    /// Positions ever published: position `tail` is the next to fill. Written only by
    /// the [`RingProducer`], with `Release` after the slots it publishes.
    tail: AtomicU64,
    /// Positions the producer has begun writing (`tail` ≤ `writing`): positions below
    /// `writing - capacity` may have been overwritten by the next lap.
    writing: AtomicU64,
    /// No more puts will come (the layout is used up, or the producer was dropped); set
    /// with `Release` after the last publish.
    closed: AtomicBool,
}

/// A power-of-two ring of IDs. Share it (it is `Sync`); take from any thread.
pub struct RingBuffer {
    published: CachePadded<Published>,
    /// Positions ever claimed: position `cursor` is the next to take. It may run past
    /// `tail` (takers waiting for IDs not yet published).
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

/// What a claimed position held when read: see [`RingBuffer::read_claimed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claimed {
    /// The ID at the position.
    Taken(Taken),
    /// The position is not published yet: read it again later.
    NotYet,
    /// The producer lapped the position before it was read: claim another.
    Lost,
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
            published: CachePadded::new(Published::default()),
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

    /// IDs published and not yet claimed (a snapshot; it may change at once).
    pub fn len(&self) -> usize {
        let cursor = self.cursor.load(Ordering::Relaxed);
        let tail = self.published.tail.load(Ordering::Acquire);
        tail.saturating_sub(cursor) as usize
    }

    /// Whether the producer is gone or has put its last ID (`Acquire`: a taker that sees
    /// it sees every ID published before it, so one more take is the last word).
    pub fn is_closed(&self) -> bool {
        self.published.closed.load(Ordering::Acquire)
    }

    #[inline]
    fn slot(&self, position: u64) -> &AtomicU64 {
        // Masking keeps the index in bounds; the bounds check that remains is one
        // predictable compare, cheaper than an unsafe block to justify.
        &self.slots[(position & self.mask) as usize]
    }

    /// Whether the producer may have begun overwriting `position` with the next lap.
    /// Called after the slot reads it checks, behind `fence(Acquire)`.
    #[inline]
    fn lapped(&self, position: u64) -> bool {
        self.published.writing.load(Ordering::Relaxed) > position + self.mask + 1
    }

    /// Claims the next position: it is this caller's alone. Read it with
    /// [`read_claimed`](Self::read_claimed) (claiming again if it is lost).
    #[inline]
    pub fn claim(&self) -> u64 {
        self.cursor.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads a position this caller [`claim`](Self::claim)ed.
    #[inline]
    pub fn read_claimed(&self, position: u64) -> Claimed {
        let tail = self.published.tail.load(Ordering::Acquire);
        if position >= tail {
            return Claimed::NotYet;
        }
        let uid = self.slot(position).load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if self.lapped(position) {
            return Claimed::Lost;
        }
        Claimed::Taken(Taken {
            uid,
            remaining: tail - position - 1,
        })
    }

    /// Takes the oldest ID, or `None` when the ring is empty; claims nothing it does not
    /// take. Lock-free; never waits for another taker.
    #[inline]
    pub fn take(&self) -> Option<Taken> {
        let mut out = [0];
        match self.take_batch(&mut out) {
            (0, _) => None,
            (_, remaining) => Some(Taken {
                uid: out[0],
                remaining,
            }),
        }
    }

    /// Takes up to `out.len()` of the oldest IDs with one CAS, reading them first;
    /// returns how many, in order, at the front of `out` (0 when the ring is empty), and
    /// how many were left behind.
    #[inline]
    pub fn take_batch(&self, out: &mut [u64]) -> (usize, u64) {
        if out.is_empty() {
            return (0, self.len() as u64);
        }
        let mut cursor = self.cursor.load(Ordering::Relaxed);
        loop {
            let tail = self.published.tail.load(Ordering::Acquire);
            let available = tail.saturating_sub(cursor);
            if available == 0 {
                return (0, 0);
            }
            let n = available.min(out.len() as u64);
            for (i, out) in out[..n as usize].iter_mut().enumerate() {
                *out = self.slot(cursor + i as u64).load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.lapped(cursor) {
                // Overwritten, so claimed by someone since we looked: the cursor is past
                // it now (a stale load of it must not send us round again).
                cursor = self.cursor.load(Ordering::Relaxed).max(cursor + 1);
                continue;
            }
            match self.cursor.compare_exchange_weak(
                cursor,
                cursor + n,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return (n as usize, available - n),
                Err(current) => cursor = current,
            }
        }
    }

    /// Positions ever claimed: IDs taken, IDs dropped as stale, and positions claimed by
    /// takes that then failed or were lapped.
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
/// a fact of the types, not a convention. Dropping it closes the ring.
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
    /// Positions this producer may fill up to (exclusive): a slot is free once its
    /// previous position has been claimed.
    fn limit(&self) -> u64 {
        self.cached_cursor + self.ring.capacity() as u64
    }

    /// Whether a put would find room (re-reads the takers' cursor only when the ring
    /// looks full).
    pub fn has_room(&mut self) -> bool {
        if self.tail < self.limit() {
            return true;
        }
        self.cached_cursor = self.ring.cursor.load(Ordering::Relaxed);
        self.tail < self.limit()
    }

    /// IDs published and not yet claimed (re-reads the takers' cursor).
    pub fn queued(&mut self) -> u64 {
        self.cached_cursor = self.ring.cursor.load(Ordering::Relaxed);
        self.tail.saturating_sub(self.cached_cursor)
    }

    /// Positions ever claimed (see [`RingBuffer::claimed`]).
    pub fn claimed(&self) -> u64 {
        self.ring.claimed()
    }

    /// Slots free for putting now (re-reads the takers' cursor).
    pub fn free_slots(&mut self) -> usize {
        self.cached_cursor = self.ring.cursor.load(Ordering::Relaxed);
        (self.limit() - self.tail).min(self.ring.capacity() as u64) as usize
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
            if self.tail >= self.limit() {
                self.cached_cursor = ring.cursor.load(Ordering::Relaxed);
                if self.tail >= self.limit() {
                    break Some(PutRejected::Full);
                }
            }
            // Up to the ring's free room (one lap at most), the run's end and the next
            // publish point.
            let until_publish = PUBLISH_EVERY - (self.tail - start) % PUBLISH_EVERY;
            let chunk = (self.limit() - self.tail)
                .min(capacity)
                .min(end - next)
                .min(until_publish);
            // Announce the overwrite before making it: a taker that reads one of these
            // values sees this store (the fences pair) and knows its position was lapped.
            ring.published
                .writing
                .store(self.tail + chunk, Ordering::Relaxed);
            fence(Ordering::Release);
            for i in 0..chunk {
                ring.slot(self.tail + i).store(next + i, Ordering::Relaxed);
            }
            self.tail += chunk;
            next += chunk;
            if chunk == until_publish {
                ring.published.tail.store(self.tail, Ordering::Release);
            }
        };
        if !(self.tail - start).is_multiple_of(PUBLISH_EVERY) {
            ring.published.tail.store(self.tail, Ordering::Release);
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
    /// claims the stale prefix as a taker's batch would. Under heavy taking it gives up
    /// after a few lost races (the IDs left are unique and in order, just older).
    pub fn discard_while(&mut self, mut stale: impl FnMut(u64) -> bool) -> usize {
        let ring = &*self.ring;
        let mut cursor = ring.cursor.load(Ordering::Relaxed);
        for _ in 0..DISCARD_TRIES {
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
        0
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.ring.is_closed()
    }

    /// Tells takers no more IDs will come, after everything put so far is published.
    pub fn close(&mut self) {
        self.ring.published.closed.store(true, Ordering::Release);
    }
}

impl Drop for RingProducer {
    fn drop(&mut self) {
        self.close();
    }
}
