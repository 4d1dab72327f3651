//! Model checks of the padder's doorbell (`uidgen::doorbell`): takers ring with a flag and
//! an unpark, the padder waits parked. A lost ring shows as a padder parked for ever
//! (loom reports the deadlock) or as a round too few.
#![cfg(uidgen_loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use uidgen::doorbell::{Doorbell, Wake};

/// A padder that runs a round per ring until stopped; returns the rounds it ran.
fn padder(bell: Arc<Doorbell>, stop: Arc<AtomicBool>, rounds: Arc<AtomicUsize>) -> usize {
    loop {
        match bell.wait(&stop, None) {
            Wake::Rung => {
                bell.answer();
                rounds.fetch_add(1, Ordering::SeqCst);
            }
            Wake::Stopped => return rounds.load(Ordering::SeqCst),
            Wake::Deadline => unreachable!("no deadline was given"),
        }
    }
}

type Padding = (
    Arc<Doorbell>,
    Arc<AtomicBool>,
    Arc<AtomicUsize>,
    thread::JoinHandle<usize>,
);

/// A doorbell and a padder thread waiting on it.
fn start_padder() -> Padding {
    let bell = Arc::new(Doorbell::new());
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let padding = {
        let (bell, stop, rounds) = (bell.clone(), stop.clone(), rounds.clone());
        thread::spawn(move || padder(bell, stop, rounds))
    };
    (bell, stop, rounds, padding)
}

#[test]
fn doorbell_a_ring_is_never_lost() {
    loom::model(|| {
        let (bell, stop, _, padding) = start_padder();
        let padder_thread = padding.thread().clone();
        let taker = {
            let (bell, padder_thread) = (bell.clone(), padder_thread.clone());
            thread::spawn(move || bell.ring(&padder_thread))
        };
        taker.join().unwrap();
        // The ring came first: it must be served before the stop is obeyed.
        stop.store(true, Ordering::SeqCst);
        padder_thread.unpark();
        assert!(padding.join().unwrap() >= 1, "a ring was lost");
    });
}

#[test]
fn doorbell_a_ring_during_a_round_gets_a_round_of_its_own() {
    loom::model(|| {
        let (bell, stop, rounds, padding) = start_padder();
        let padder_thread = padding.thread().clone();
        bell.ring(&padder_thread);
        // Once the first round has begun, ring again: that needs a second round.
        while rounds.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        bell.ring(&padder_thread);
        while rounds.load(Ordering::SeqCst) < 2 {
            thread::yield_now();
        }
        stop.store(true, Ordering::SeqCst);
        padder_thread.unpark();
        assert!(padding.join().unwrap() >= 2);
    });
}
