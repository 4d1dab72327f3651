//! Model checks of `uidgen::ring` on a 4-slot ring. Run through `scripts/test`, or:
//! `RUSTFLAGS="--cfg uidgen_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p uidgen-loom-tests --profile loom`
#![cfg(uidgen_loom)]

use loom::thread;
use uidgen::ring::{PutRejected, RingBuffer};

/// Every ID taken was put, none is taken twice, and none put is lost: takers in other
/// threads plus a final drain get exactly the IDs the producer put.
fn assert_taken_exactly_once(put: &[u64], mut taken: Vec<u64>) {
    taken.sort_unstable();
    assert_eq!(taken, put, "taken IDs differ from the IDs put");
}

#[test]
fn one_padder_two_takers_take_each_id_once() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let ring = ring.clone();
                thread::spawn(move || {
                    (0..2)
                        .filter_map(|_| ring.take().map(|t| t.uid))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        // Six IDs into four slots: the producer laps the ring while takers read it.
        let put: Vec<u64> = (1..=6).filter(|&uid| producer.put(uid).is_ok()).collect();
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
fn a_slot_is_not_refilled_before_its_taker_reads_it() {
    loom::model(|| {
        let (ring, mut producer) = RingBuffer::new(4).unwrap();
        for uid in 1..=4 {
            producer.put(uid).unwrap();
        }
        let taker = {
            let ring = ring.clone();
            thread::spawn(move || ring.take().unwrap().uid)
        };
        // Racing the taker for slot 0: the producer may find the ring still full, the
        // slot still held (claimed, not yet read), or free; it must never overwrite the
        // ID before the taker has read it (UidGenerator's issue #105).
        let padder = thread::spawn(move || producer.put(5));
        let outcome = padder.join().unwrap();
        assert_eq!(taker.join().unwrap(), 1, "the taker read the first ID put");
        assert!(
            matches!(
                outcome,
                Ok(()) | Err(PutRejected::Full | PutRejected::SlotBusy)
            ),
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
