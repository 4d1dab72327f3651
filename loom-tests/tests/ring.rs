//! Model checks of `uidgen::ring` on a 4-slot ring; under loom the producer publishes
//! every 2 puts, so a run of 3 crosses a publish point. Run through `scripts/test`, or:
//! `RUSTFLAGS="--cfg uidgen_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uidgen-loom-tests --profile loom`
//! `scripts/loom-mutants` breaks the ring in each documented way and requires these to fail.
#![cfg(uidgen_loom)]

use loom::sync::Arc;
use loom::thread;
use uidgen::ring::{Claimed, PutRejected, RingBuffer};

/// Every ID taken was put, none is taken twice, and none put is lost: takers in other
/// threads plus a final drain get exactly the IDs the producer put.
fn assert_taken_exactly_once(put: &[u64], mut taken: Vec<u64>) {
    taken.sort_unstable();
    assert_eq!(taken, put, "taken IDs differ from the IDs put");
}

#[test]
fn one_padder_two_takers_take_each_id_once() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(2).unwrap();
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let ring = ring.clone();
                thread::spawn(move || ring.take().map(|t| t.uid).into_iter().collect::<Vec<_>>())
            })
            .collect();
        // Three IDs into two slots: the producer laps the ring while takers read it.
        let put: Vec<u64> = (1..=3).filter(|&uid| producer.put(uid).is_ok()).collect();
        let mut taken: Vec<u64> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        while let Some(t) = ring.take() {
            taken.push(t.uid);
        }
        assert_taken_exactly_once(&put, taken);
    });
}

#[test]
fn batch_takes_and_single_takes_share_the_ring() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        let batcher = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut out = [0u64; 3];
                let (n, _) = ring.take_batch(&mut out);
                assert!(
                    out[..n].windows(2).all(|w| w[0] < w[1]),
                    "a batch is in order"
                );
                out[..n].to_vec()
            })
        };
        let single = {
            let ring = ring.clone();
            thread::spawn(move || ring.take().map(|t| t.uid).into_iter().collect::<Vec<_>>())
        };
        let put: Vec<u64> = (1..=5).filter(|&uid| producer.put(uid).is_ok()).collect();
        let mut taken = batcher.join().unwrap();
        taken.extend(single.join().unwrap());
        let mut rest = [0u64; 4];
        let (n, remaining) = ring.take_batch(&mut rest);
        assert_eq!(remaining, 0);
        taken.extend_from_slice(&rest[..n]);
        assert_taken_exactly_once(&put, taken);
    });
}

#[test]
fn full_and_empty_are_reported() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        assert!(ring.take().is_none(), "a new ring is empty");
        for uid in 1..=4 {
            producer.put(uid).unwrap();
        }
        assert_eq!(producer.put(5), Err(PutRejected::Full));
        let mut rest = [0u64; 4];
        assert_eq!(ring.take_batch(&mut rest), (4, 0));
        assert_eq!(rest, [1, 2, 3, 4]);
        assert!(ring.take().is_none(), "a drained ring is empty");
        assert_eq!(ring.take_batch(&mut rest), (0, 0));
    });
}

#[test]
fn a_taker_never_reads_the_next_laps_id() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        for uid in 1..=4 {
            producer.put(uid).unwrap();
        }
        let taker = {
            let ring = ring.clone();
            thread::spawn(move || ring.take().unwrap().uid)
        };
        // Racing the taker for slot 0: the producer may refill it only once position 0
        // is claimed, and this take claims only after reading (and checking its read),
        // so the taker reads ID 1, never 5.
        let padder = thread::spawn(move || producer.put(5));
        let outcome = padder.join().unwrap();
        assert_eq!(
            taker.join().unwrap(),
            1,
            "the taker read the ID at its position"
        );
        assert!(
            matches!(outcome, Ok(()) | Err(PutRejected::Full)),
            "{outcome:?}"
        );
        let mut rest = [0u64; 4];
        let (n, _) = ring.take_batch(&mut rest);
        let expected: &[u64] = if outcome.is_ok() {
            &[2, 3, 4, 5]
        } else {
            &[2, 3, 4]
        };
        assert_eq!(&rest[..n], expected);
    });
}

#[test]
fn a_run_longer_than_the_publish_interval_is_seen_whole_and_in_order() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        let taker = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..2 {
                    let mut out = [0u64; 2];
                    let (n, _) = ring.take_batch(&mut out);
                    got.extend_from_slice(&out[..n]);
                }
                got
            })
        };
        // Three consecutive IDs: published after the second and at the end.
        let fill = producer.fill_run(10, 3);
        assert_eq!((fill.put, fill.stopped_by), (3, None));
        let got = taker.join().unwrap();
        assert!(
            got.iter().enumerate().all(|(i, &uid)| uid == 10 + i as u64),
            "a taker saw a slot before its ID was written: {got:?}"
        );
        let mut rest = [0u64; 4];
        let (n, _) = ring.take_batch(&mut rest);
        let mut all = got;
        all.extend_from_slice(&rest[..n]);
        assert_eq!(all, [10, 11, 12]);
    });
}

#[test]
fn a_producer_lapping_the_ring_never_overwrites_an_unclaimed_id() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        assert_eq!(producer.fill_run(1, 3).put, 3);
        let taker = {
            let ring = ring.clone();
            thread::spawn(move || ring.take().map(|t| t.uid))
        };
        // Room for one, or two if the taker claims first: never more.
        let fill = producer.fill_run(4, 3);
        let taken = taker.join().unwrap();
        let mut rest = [0u64; 4];
        let (n, _) = ring.take_batch(&mut rest);
        let mut all: Vec<u64> = taken.into_iter().collect();
        all.extend_from_slice(&rest[..n]);
        let put: Vec<u64> = (1..4 + fill.put as u64).collect();
        assert_eq!(
            all, put,
            "every ID put is taken once, in order (put {})",
            fill.put
        );
    });
}

#[test]
fn discarding_stale_ids_never_hands_one_out_twice() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        for uid in 1..=3 {
            producer.put(uid).unwrap();
        }
        let taker = {
            let ring = ring.clone();
            thread::spawn(move || ring.take().map(|t| t.uid))
        };
        // The padder drops IDs 1 and 2 as stale while a taker may be taking one of them.
        let discarded = producer.discard_while(|uid| uid <= 2);
        let taken = taker.join().unwrap();
        let mut rest = [0u64; 4];
        let (n, _) = ring.take_batch(&mut rest);
        let accounted = discarded + taken.iter().count() + n;
        assert_eq!(accounted, 3, "every ID is discarded, taken or left, once");
        if let Some(uid) = taken {
            assert!(
                !rest[..n].contains(&uid),
                "taken ID {uid} still in the ring"
            );
        }
        assert!(
            rest[..n].iter().all(|&uid| uid == 3),
            "a stale ID survived the discard: {:?}",
            &rest[..n]
        );
    });
}

/// Runs `body` on a thread of its own with a handle to `ring`.
fn spawn_on<T: Send + 'static>(
    ring: &Arc<RingBuffer>,
    body: impl FnOnce(&RingBuffer) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let ring = ring.clone();
    thread::spawn(move || body(&ring))
}

/// A thread that claims a position and reads it once: `(position, what it read)`.
fn spawn_claimer(ring: &Arc<RingBuffer>) -> thread::JoinHandle<(u64, Claimed)> {
    spawn_on(ring, |ring| {
        let position = ring.claim();
        (position, ring.read_claimed(position))
    })
}

#[test]
fn a_claimer_lapped_before_it_reads_never_gets_the_next_laps_id() {
    loom::model(|| {
        // Two slots, both filled: positions 0 and 1 hold IDs 1 and 2.
        let (ring, mut producer) = RingBuffer::new(2).unwrap();
        assert_eq!(producer.fill_run(1, 2).put, 2);
        let taker = spawn_claimer(&ring);
        // Another claim, then the producer refills whatever positions are claimed:
        // possibly the taker's, before the taker reads it.
        let mine = ring.claim();
        let fill = producer.fill_run(3, 2);
        let (position, read) = taker.join().unwrap();
        // Position p holds ID p + 1 on the first lap and p + 3 on the second.
        match read {
            Claimed::Taken(taken) => assert_eq!(
                taken.uid,
                position + 1,
                "the taker got another lap's ID for its position"
            ),
            Claimed::Lost => assert!(
                fill.put as u64 > position,
                "the taker was told it was lapped, but position {position} was not refilled"
            ),
            Claimed::NotYet => panic!("position {position} was published before the claim"),
        }
        match ring.read_claimed(mine) {
            Claimed::Taken(taken) => assert_eq!(taken.uid, mine + 1),
            Claimed::Lost => assert!(fill.put as u64 > mine),
            Claimed::NotYet => panic!("a published position read as not yet"),
        }
    });
}

#[test]
fn a_claimer_waiting_on_an_empty_ring_reads_the_id_published_for_it() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        let taker = spawn_claimer(&ring);
        // Three IDs: published after the second and at the end.
        assert_eq!(producer.fill_run(1, 3).put, 3);
        let (position, read) = taker.join().unwrap();
        let read = match read {
            // Not published when it looked: it is now.
            Claimed::NotYet => ring.read_claimed(position),
            other => other,
        };
        match read {
            Claimed::Taken(taken) => assert_eq!(
                taken.uid,
                position + 1,
                "position {position} read before its ID was written"
            ),
            other => panic!("position {position}: {other:?}"),
        }
    });
}

#[test]
fn a_taker_that_sees_the_ring_closed_has_seen_every_id() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        let taker = spawn_on(&ring, |ring| {
            let mut got = Vec::new();
            loop {
                if let Some(taken) = ring.take() {
                    got.push(taken.uid);
                } else if ring.is_closed() {
                    // The last word: after the close, one more look.
                    match ring.take() {
                        Some(taken) => got.push(taken.uid),
                        None => return got,
                    }
                } else {
                    thread::yield_now();
                }
            }
        });
        assert_eq!(producer.fill_run(1, 3).put, 3);
        drop(producer);
        assert_eq!(
            taker.join().unwrap(),
            [1, 2, 3],
            "a taker gave up with IDs left"
        );
    });
}
