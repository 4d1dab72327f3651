//! Model checks of the segment generator's chain of ranges (`uidgen::segment_chain`),
//! which has 2 slots under loom, so a short model reuses one. Run through `scripts/test`,
//! or: `RUSTFLAGS="--cfg uidgen_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uidgen-loom-tests --profile loom`
//! `scripts/loom-mutants` breaks the chain in each documented way and requires these to fail.
#![cfg(uidgen_loom)]

use loom::sync::Arc;
use loom::thread;
use uidgen::segment_chain::{Chain, PublishError};

const RANGES: [(u64, u64); 3] = [(10, 12), (20, 22), (30, 32)];

fn in_a_range(id: u64) -> bool {
    RANGES
        .iter()
        .any(|&(start, end)| (start..end).contains(&id))
}

/// A chain with the first two ranges published, and two takers taking `takes` times
/// each (what they got, in their order).
fn two_ranges_and_two_takers(takes: usize) -> (Arc<Chain>, Vec<thread::JoinHandle<Vec<u64>>>) {
    let chain = Arc::new(Chain::new());
    chain.publish(RANGES[0].0, RANGES[0].1).unwrap();
    chain.publish(RANGES[1].0, RANGES[1].1).unwrap();
    let takers = (0..2)
        .map(|_| {
            let chain = Arc::clone(&chain);
            thread::spawn(move || {
                (0..takes)
                    .filter_map(|_| chain.take(|| {}))
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    (chain, takers)
}

/// Two takers take three times each while the third range is published into the slot
/// of the first: every ID returned is in a published range, none twice, and each
/// taker's IDs increase, however a taker is delayed between reading `head` and taking.
#[test]
fn takers_meet_a_reused_slot_and_stay_in_order() {
    loom::model(|| {
        let (chain, takers) = two_ranges_and_two_takers(3);
        // The third range waits for a free slot: the first must be used up.
        let mut published_third = false;
        for _ in 0..3 {
            match chain.publish(RANGES[2].0, RANGES[2].1) {
                Ok(()) => {
                    published_third = true;
                    break;
                }
                Err(PublishError::Full) => thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        let mut all = Vec::new();
        for taker in takers {
            let ids = taker.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "out of order: {ids:?}");
            all.extend(ids);
        }
        while let Some(id) = chain.take(|| {}) {
            all.push(id);
            assert!(all.len() <= 20, "a take that never ends: {all:?}");
        }
        for &id in &all {
            assert!(in_a_range(id), "{id} is in no published range: {all:?}");
        }
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "an ID twice: {all:?}");
        if !published_third {
            assert!(all.iter().all(|&id| id < RANGES[2].0));
        }
    });
}

/// A publish never overwrites a range that is current or ahead: with both slots live,
/// it is refused, and every ID of both ranges is still taken.
#[test]
fn a_full_chain_refuses_a_publish() {
    loom::model(|| {
        let chain = Chain::new();
        chain.publish(RANGES[0].0, RANGES[0].1).unwrap();
        chain.publish(RANGES[1].0, RANGES[1].1).unwrap();
        assert_eq!(chain.take(|| {}), Some(10));
        assert_eq!(
            chain.publish(RANGES[2].0, RANGES[2].1),
            Err(PublishError::Full),
            "range 0 is still current"
        );
        let rest: Vec<u64> = std::iter::from_fn(|| chain.take(|| {})).collect();
        assert_eq!(rest, [11, 20, 21]);
    });
}

/// A taker that moves `head` on runs the callback once per range moved past.
#[test]
fn moving_to_the_next_range_is_reported_once() {
    loom::model(|| {
        let chain = Arc::new(Chain::new());
        let moved = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        chain.publish(10, 11).unwrap();
        chain.publish(20, 21).unwrap();
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let (chain, moved) = (Arc::clone(&chain), Arc::clone(&moved));
                thread::spawn(move || {
                    chain.take(|| {
                        moved.fetch_add(1, loom::sync::atomic::Ordering::Relaxed);
                    })
                })
            })
            .collect();
        let mut got: Vec<u64> = takers
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, [10, 20]);
        assert_eq!(moved.load(loom::sync::atomic::Ordering::Relaxed), 1);
    });
}

/// A seal while two takers take from two ranges splits every ID exactly: each one is
/// either taken or in a tail the seal returns (from its `next` to its end), never both
/// and never neither, and nothing is taken after the seal.
#[test]
fn a_seal_splits_the_ids_exactly_between_takers_and_tails() {
    loom::model(|| {
        let (chain, takers) = two_ranges_and_two_takers(2);
        let left = chain.seal();
        assert_eq!(chain.take(|| {}), None, "a take after the seal");
        let mut taken: Vec<u64> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        taken.sort_unstable();
        let mut tails: Vec<u64> = left.iter().flat_map(|r| r.next..r.end).collect();
        tails.sort_unstable();
        for id in &taken {
            assert!(
                tails.binary_search(id).is_err(),
                "{id} taken and given back: {left:?}"
            );
        }
        let mut all = taken.clone();
        all.extend(&tails);
        all.sort_unstable();
        assert_eq!(all, [10, 11, 20, 21], "taken {taken:?}, tails {left:?}");
    });
}
