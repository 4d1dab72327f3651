//! The chain of ranges a segment generator hands IDs out of: a small ring of slots, one
//! range each; the current one (`head`) and the ranges fetched ahead of it.
//!
//! Taking is one `fetch_add` on the current range's cursor, checked against its end. A
//! slot is reused for a later range only once `head` has moved past it, and `head` only
//! moves past a range a taker found used up. A taker that read `head` long ago may land
//! on a reused slot; it then sees the slot's range number change and looks again, so it
//! never returns an ID out of its own range's order (it may burn one ID of the new range:
//! a gap, never a repeat).
//!
//! Orderings (each has a mutant in `scripts/loom-mutants`):
//! - `publish` writes `number`, `start` and `cursor`, then `end` (Release), then
//!   `published` (Release). A taker loads `head` (Acquire), `end` (Acquire) and `number`
//!   (Relaxed), then, if `number` is its range's, takes with a `fetch_add` (Relaxed).
//! - A taker that reads range `k` from `head` sees its slot written (the mover of
//!   `head` saw `published`; `head` moves by AcqRel CAS), so the cursor it adds to is
//!   range `k`'s or a later range's (coherence), and so is the `end` it reads. `number`,
//!   read after that `end` (Acquire), is that range's number or a later one's, so
//!   `number == k` means the `end` read is range `k`'s. The cursor the add reads is then
//!   range `k`'s or a later one's, and a later range's IDs are all at or above range
//!   `k`'s end: `id < end` means the ID is range `k`'s.
//! - `seal` swaps every live range's cursor to [`MAX_END`] (AcqRel): a cursor's adds and
//!   the swap are one chain of RMWs, so each add before the swap got an ID below the
//!   value the swap returns and each add after it gets one at or past every end. What
//!   the swap returns is exactly where the range's unused tail starts.
//!
//! Public for the segment generator's loom models and for `uidgen-client`, which hands
//! out ranges leased from `uidgen serve` with the same chain.

use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// Slots in a chain: the current range plus up to this many minus one fetched ahead.
#[cfg(not(uidgen_loom))]
pub const SLOTS: u64 = 16;
/// Slots in a chain under loom: two, so a short model reuses a slot.
#[cfg(uidgen_loom)]
pub const SLOTS: u64 = 2;

/// The highest end a range may have: [`Chain::seal`] moves every cursor here, past any
/// range's end, with room above for as many adds as any process could make (IDs fit in a
/// signed 64-bit column, so no store hands out one this high).
pub const MAX_END: u64 = 1 << 63;

/// Written by `publish` only; read by takers on every take (kept apart from the cursor,
/// whose line every take writes).
struct Meta {
    number: AtomicU64,
    start: AtomicU64,
    end: AtomicU64,
}

struct Slot {
    meta: CachePadded<Meta>,
    cursor: CachePadded<AtomicU64>,
}

/// Why [`Chain::publish`] refused a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishError {
    /// No free slot: the ranges ahead already fill the chain.
    Full,
    /// Not a range the chain can hand out: empty, starting below the last range's end, or
    /// ending past [`MAX_END`] (the order of IDs and the seal hold only for increasing
    /// ranges below it).
    NotARange,
}

/// One range in the chain, as [`Chain::ranges`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeLeft {
    /// The range's first ID.
    pub start: u64,
    /// The first ID of the range not yet handed out (never past `end`).
    pub next: u64,
    /// One past the range's last ID.
    pub end: u64,
}

/// See the module docs.
pub struct Chain {
    head: CachePadded<AtomicU64>,
    published: CachePadded<AtomicU64>,
    /// The last published range's end (the publisher's alone: a new range starts there
    /// or above).
    last_end: AtomicU64,
    /// IDs in ranges `head` has moved past (for the rate estimate).
    retired: CachePadded<AtomicU64>,
    /// Inline, not boxed: a take then follows no pointer and checks no length.
    slots: [Slot; SLOTS as usize],
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("head", &self.head.load(Ordering::Relaxed))
            .field("published", &self.published.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for Chain {
    fn default() -> Self {
        Self::new()
    }
}

impl Chain {
    /// An empty chain: takes find nothing until the first publish.
    pub fn new() -> Self {
        let slots = std::array::from_fn(|_| Slot {
            meta: CachePadded::new(Meta {
                // No range has this number, so an unused slot never matches.
                number: AtomicU64::new(u64::MAX),
                start: AtomicU64::new(0),
                end: AtomicU64::new(0),
            }),
            cursor: CachePadded::new(AtomicU64::new(0)),
        });
        Self {
            head: CachePadded::new(AtomicU64::new(0)),
            published: CachePadded::new(AtomicU64::new(0)),
            last_end: AtomicU64::new(0),
            retired: CachePadded::new(AtomicU64::new(0)),
            slots,
        }
    }

    #[inline(always)]
    fn slot(&self, number: u64) -> &Slot {
        // SLOTS is a power of two.
        &self.slots[(number & (SLOTS - 1)) as usize]
    }

    /// The next ID, or `None` when every published range is used up. `moved` runs on
    /// the thread that moves `head` to the next range (to ask for more ranges).
    #[inline(always)]
    pub fn take(&self, moved: impl Fn()) -> Option<u64> {
        loop {
            let number = self.head.load(Ordering::Acquire);
            let slot = self.slot(number);
            // Both loads before the add, from one line: nothing waits on the add but a
            // compare, and a taker that sees its slot reused adds nothing.
            let end = slot.meta.end.load(Ordering::Acquire);
            if slot.meta.number.load(Ordering::Relaxed) == number {
                let id = slot.cursor.fetch_add(1, Ordering::Relaxed);
                if id < end {
                    return Some(id);
                }
            }
            if !self.advance(number, &moved) {
                return None;
            }
        }
    }

    /// Range `number` gave nothing (used up, or this taker's `head` was stale): moves
    /// `head` past it if the next range is published. `false` when there is none.
    #[cold]
    fn advance(&self, number: u64, moved: &impl Fn()) -> bool {
        if self.published.load(Ordering::Acquire) <= number + 1 {
            // Nothing after it; unless someone moved on meanwhile, the chain is empty.
            return self.head.load(Ordering::Acquire) != number;
        }
        // Read before the CAS: until `head` moves past this range its slot cannot be
        // reused, so a CAS that succeeds proves these were the range's own.
        let meta = &self.slot(number).meta;
        let size = meta
            .end
            .load(Ordering::Relaxed)
            .saturating_sub(meta.start.load(Ordering::Relaxed));
        if self
            .head
            .compare_exchange(number, number + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.retired.fetch_add(size, Ordering::Relaxed);
            moved();
        }
        true
    }

    /// Appends the range `[start, end)`; one publisher at a time (the generator holds its
    /// fetch lock). Ranges must increase: `start` at or above the last range's end, and
    /// `end` at most [`MAX_END`]; any other is refused.
    pub fn publish(&self, start: u64, end: u64) -> Result<(), PublishError> {
        if start >= end || end > MAX_END || start < self.last_end.load(Ordering::Relaxed) {
            return Err(PublishError::NotARange);
        }
        let number = self.published.load(Ordering::Relaxed);
        if number >= self.head.load(Ordering::Acquire) + SLOTS {
            return Err(PublishError::Full);
        }
        self.last_end.store(end, Ordering::Relaxed);
        let slot = self.slot(number);
        slot.meta.number.store(number, Ordering::Relaxed);
        slot.meta.start.store(start, Ordering::Relaxed);
        // A swap, not a store: stale takers may still be adding to this cursor, and an
        // RMW joins their chain of RMWs exactly (loom, too, models RMW chains exactly,
        // but a plain store racing them only approximately, and then reports a false
        // repeat).
        slot.cursor.swap(start, Ordering::Relaxed);
        slot.meta.end.store(end, Ordering::Release);
        self.published.store(number + 1, Ordering::Release);
        Ok(())
    }

    /// Stops every take for good and returns, for the current range and those ahead
    /// (oldest first), where its unused tail starts (`next`): each ID of a range below
    /// its `next` was handed out (or burnt by a stale taker), and none from `next` on
    /// ever will be, so the tails can go back to the store. Ranges `head` moved past are
    /// used up and not listed. Nothing may be published after (the caller's publish lock
    /// and its closed flag see to it): a publish would reopen a slot.
    pub fn seal(&self) -> Vec<RangeLeft> {
        let head = self.head.load(Ordering::Acquire);
        let published = self.published.load(Ordering::Acquire);
        (head..published)
            .filter_map(|number| {
                let slot = self.slot(number);
                let end = slot.meta.end.load(Ordering::Acquire);
                let start = slot.meta.start.load(Ordering::Relaxed);
                (slot.meta.number.load(Ordering::Relaxed) == number).then(|| {
                    let next = slot.cursor.swap(MAX_END, Ordering::AcqRel);
                    // Never below the start (nor a panic, as `clamp` could).
                    let next = next.min(end).max(start);
                    RangeLeft { start, next, end }
                })
            })
            .collect()
    }

    /// Ranges after the current one.
    pub fn ranges_ahead(&self) -> u64 {
        let head = self.head.load(Ordering::Acquire);
        self.published
            .load(Ordering::Acquire)
            .saturating_sub(head + 1)
    }

    /// Whether another range can be published now.
    pub fn has_room(&self) -> bool {
        self.published.load(Ordering::Acquire) < self.head.load(Ordering::Acquire) + SLOTS
    }

    /// The current range and those ahead, oldest first, with what is left of each. Exact
    /// only while no one takes (at shutdown); otherwise a snapshot.
    pub fn ranges(&self) -> Vec<RangeLeft> {
        self.ranges_left().collect()
    }

    /// The current range, with what is left of it (a snapshot, as
    /// [`ranges`](Self::ranges)); `None` before the first publish.
    pub fn current(&self) -> Option<RangeLeft> {
        self.ranges_left().next()
    }

    /// IDs left in the current range and those ahead (a snapshot, as [`ranges`](Self::ranges),
    /// without building the list: the prefetch thread asks this of every tag each round).
    pub fn ids_left(&self) -> u64 {
        self.ranges_left().map(|r| r.end - r.next).sum()
    }

    fn ranges_left(&self) -> impl Iterator<Item = RangeLeft> + '_ {
        let head = self.head.load(Ordering::Acquire);
        let published = self.published.load(Ordering::Acquire);
        (head..published).filter_map(|number| {
            let slot = self.slot(number);
            let end = slot.meta.end.load(Ordering::Acquire);
            let next = slot.cursor.load(Ordering::Acquire).min(end);
            let start = slot.meta.start.load(Ordering::Relaxed);
            (slot.meta.number.load(Ordering::Relaxed) == number).then_some(RangeLeft {
                start,
                next,
                end,
            })
        })
    }

    /// IDs handed out (or burnt) so far, for the rate estimate.
    pub fn taken(&self) -> u64 {
        loop {
            let head = self.head.load(Ordering::Acquire);
            let retired = self.retired.load(Ordering::Relaxed);
            let current = if head >= self.published.load(Ordering::Acquire) {
                0
            } else {
                let slot = self.slot(head);
                let end = slot.meta.end.load(Ordering::Acquire);
                let start = slot.meta.start.load(Ordering::Relaxed).min(end);
                slot.cursor.load(Ordering::Relaxed).clamp(start, end) - start
            };
            // `head` moved meanwhile: the reads may mix two ranges; read again.
            if self.head.load(Ordering::Acquire) == head {
                return retired + current;
            }
        }
    }
}

#[cfg(all(test, not(uidgen_loom)))]
mod tests {
    use super::*;

    #[test]
    fn publish_refuses_what_the_chain_cannot_hand_out_and_seal_never_panics() {
        let chain = Chain::new();
        for (start, end) in [(10, 10), (10, 5), (0, MAX_END + 1)] {
            assert_eq!(chain.publish(start, end), Err(PublishError::NotARange));
        }
        chain.publish(10, 20).unwrap();
        assert_eq!(
            chain.publish(15, 30),
            Err(PublishError::NotARange),
            "below 20"
        );
        chain.publish(20, MAX_END).unwrap();
        assert_eq!(chain.take(|| {}), Some(10));
        let left = chain.seal();
        assert_eq!(
            left,
            [
                RangeLeft {
                    start: 10,
                    next: 11,
                    end: 20
                },
                RangeLeft {
                    start: 20,
                    next: 20,
                    end: MAX_END
                },
            ]
        );
        assert_eq!(chain.take(|| {}), None);
        // Sealed again: nothing left anywhere.
        assert!(chain.seal().iter().all(|r| r.next == r.end));
    }
}
