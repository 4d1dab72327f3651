//! Per-period segment tags on every store: a hand clock crosses midnight while 8 threads
//! take IDs; processes whose clocks differ; a clock that steps back; a full period.
// IDs written `period_sequence`, grouped as they are read.
#![allow(clippy::inconsistent_digit_grouping)]

#[path = "support/servers.rs"]
mod servers;
#[path = "support/stores.rs"]
mod stores;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;
use stores::{for_each_store, Fixture};
use uidgen::{
    ManualClock, Period, PeriodSegmentGenerator, SqliteSegmentStore, TakeRejectPolicy, UidError,
};

/// 2026-12-01 00:00:00 in UTC+8 (2026-11-30 16:00 UTC), in Unix milliseconds.
const MIDNIGHT: u64 = 1_796_054_400_000;
const OLD_DAY: u64 = 20261130;
const NEW_DAY: u64 = 20261201;
/// 10^8: IDs are `yyyyMMdd × 10^8 + sequence` with `sequence_digits(8)`.
const SPAN: u64 = 100_000_000;

fn orders(fixture: &Fixture, tag: &str, clock: &ManualClock) -> PeriodSegmentGenerator {
    PeriodSegmentGenerator::builder(fixture.segment_store(), tag)
        .utc_offset_minutes(8 * 60)
        .sequence_digits(8)
        .step(10)
        .max_step(50)
        .clock(clock.clone())
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(30)))
        .build()
        .unwrap()
}

#[test]
fn midnight_mid_run_with_eight_threads() {
    for_each_store(|fixture| {
        let clock = ManualClock::new(MIDNIGHT - 500);
        let generator = orders(fixture, "order", &clock);
        let (stop, start) = (AtomicBool::new(false), Barrier::new(9));
        let per_thread: Vec<Vec<u64>> = thread::scope(|s| {
            let takers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let mut ids = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            ids.push(generator.next_uid().unwrap());
                        }
                        ids
                    })
                })
                .collect();
            start.wait();
            thread::sleep(Duration::from_millis(150));
            clock.set(MIDNIGHT + 20);
            // Until a take has begun the new day (however loaded the machine), then on.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while generator.current_period() != NEW_DAY {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the new day never began"
                );
                thread::sleep(Duration::from_millis(5));
            }
            thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });

        let mut all = HashSet::new();
        for ids in &per_thread {
            // One thread's IDs increase: once it has a new-day ID, never an old-day one.
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "a thread's IDs went back"
            );
            for &id in ids {
                assert!(all.insert(id), "{id} handed out twice");
                assert!(
                    [OLD_DAY, NEW_DAY].contains(&(id / SPAN)),
                    "{id}: another day"
                );
            }
        }
        let old: Vec<u64> = all
            .iter()
            .filter(|&&id| id / SPAN == OLD_DAY)
            .copied()
            .collect();
        let new: Vec<u64> = all
            .iter()
            .filter(|&&id| id / SPAN == NEW_DAY)
            .copied()
            .collect();
        assert!(
            !old.is_empty() && !new.is_empty(),
            "{} old, {} new",
            old.len(),
            new.len()
        );
        assert_eq!(old.iter().min(), Some(&(OLD_DAY * SPAN + 1)));
        // The new day starts again at sequence 1.
        assert_eq!(new.iter().min(), Some(&(NEW_DAY * SPAN + 1)));
        assert_eq!(generator.current_period(), NEW_DAY);
        // The day's counter is its own row, next to the old day's.
        let rows = fixture.segment_store().0.tags().unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.tag.as_str()).collect();
        assert_eq!(names, ["order:20261130", "order:20261201"], "{names:?}");
    });
}

#[test]
fn a_process_whose_clock_is_behind_moves_on_at_its_next_fetch() {
    for_each_store(|fixture| {
        // B's clock is 200 ms behind A's; A crosses midnight first.
        let (a_clock, b_clock) = (
            ManualClock::new(MIDNIGHT + 100),
            ManualClock::new(MIDNIGHT - 100),
        );
        let b = orders(fixture, "receipt", &b_clock);
        let first_b = b.next_uid().unwrap();
        assert_eq!(first_b, OLD_DAY * SPAN + 1);
        let a = orders(fixture, "receipt", &a_clock);
        assert_eq!(a.next_uid().unwrap(), NEW_DAY * SPAN + 1);

        // B goes on from what it fetched, then its next range fetch finds the new day
        // begun and B moves to it, its clock still in the old day.
        let mut b_ids = vec![first_b];
        for _ in 0..600 {
            b_ids.push(b.next_uid().unwrap());
        }
        assert!(b_ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(b.current_period(), NEW_DAY);
        assert_eq!(*b_ids.last().unwrap() / SPAN, NEW_DAY);
        let mut a_ids: HashSet<u64> = (0..200).map(|_| a.next_uid().unwrap()).collect();
        a_ids.insert(NEW_DAY * SPAN + 1);
        assert!(
            b_ids.iter().all(|id| !a_ids.contains(id)),
            "A and B shared an ID"
        );

        // A process started now with the old day on its clock begins the new day.
        let c = orders(fixture, "receipt", &ManualClock::new(MIDNIGHT - 100));
        assert_eq!(c.current_period(), NEW_DAY);
        assert_eq!(c.next_uid().unwrap() / SPAN, NEW_DAY);
    });
}

fn sqlite() -> (tempfile::TempDir, SqliteSegmentStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSegmentStore::new(dir.path().join("s.db"));
    (dir, store)
}

#[test]
fn the_period_never_goes_back_when_the_clock_does() {
    let (_dir, store) = sqlite();
    let clock = ManualClock::new(MIDNIGHT + 1_000);
    let generator = PeriodSegmentGenerator::builder(store, "ticket")
        .utc_offset_minutes(8 * 60)
        .clock(clock.clone())
        .build()
        .unwrap();
    let before = generator.next_uid().unwrap();
    clock.rewind(Duration::from_secs(60));
    let after = generator.next_uid().unwrap();
    assert!(after > before);
    assert_eq!(generator.split(after), (NEW_DAY, 2));
}

#[test]
fn months_and_offsets() {
    let (_dir, store) = sqlite();
    // 2026-11-30 16:00 UTC is still November in UTC, already December in UTC+8.
    let utc = PeriodSegmentGenerator::builder(store.clone(), "invoice")
        .period(Period::Month)
        .sequence_digits(5)
        .first_sequence(100)
        .clock(ManualClock::new(MIDNIGHT))
        .build()
        .unwrap();
    assert_eq!(utc.next_uid().unwrap(), 202611_00100);
    let east = PeriodSegmentGenerator::builder(store, "invoice")
        .period(Period::Month)
        .sequence_digits(5)
        .first_sequence(100)
        .utc_offset_minutes(480)
        .clock(ManualClock::new(MIDNIGHT))
        .build()
        .unwrap();
    assert_eq!(east.next_uid().unwrap(), 202612_00100);
}

#[test]
fn a_full_period_is_an_error_never_another_days_id() {
    let (_dir, store) = sqlite();
    let clock = ManualClock::new(MIDNIGHT);
    let generator = PeriodSegmentGenerator::builder(store, "tiny")
        .sequence_digits(1)
        .step(3)
        .clock(clock.clone())
        .build()
        .unwrap();
    let ids: Vec<u64> = (0..9).map_while(|_| generator.next_uid().ok()).collect();
    assert_eq!(ids, (1..=9).map(|s| OLD_DAY * 10 + s).collect::<Vec<_>>());
    let err = generator.next_uid().unwrap_err();
    assert!(matches!(err, UidError::SegmentExhausted { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("period 20261130 has used every sequence number below 10 (1 digits)"),
        "{message}"
    );
    // The next day starts again.
    clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(generator.next_uid().unwrap(), NEW_DAY * 10 + 1);
}

#[test]
fn bad_settings_name_the_limit() {
    let (_dir, store) = sqlite();
    let message = |b: uidgen::PeriodSegmentGeneratorBuilder| b.build().unwrap_err().to_string();
    let builder = || PeriodSegmentGenerator::builder(store.clone(), "order");
    assert_eq!(
        message(builder().sequence_digits(11)),
        "sequence_digits = 11 is out of range: 1..=10 for a day period"
    );
    assert_eq!(
        message(builder().period(Period::Month).sequence_digits(0)),
        "sequence_digits = 0 is out of range: 1..=12 for a month period"
    );
    assert_eq!(
        message(builder().sequence_digits(3).first_sequence(1000)),
        "first_sequence = 1000 is out of range: 1..=999 for 3 digits"
    );
    assert_eq!(
        message(builder().utc_offset_minutes(1440)),
        "utc_offset_minutes = 1440 is out of range: -1439..=1439"
    );
    let long = "t".repeat(120);
    let err = message(PeriodSegmentGenerator::builder(store.clone(), &long));
    assert!(err.contains("1 to 128 characters"), "{err}");
    assert_eq!(
        "week".parse::<Period>().unwrap_err().to_string(),
        "period = week is out of range: day or month"
    );
}

#[test]
fn a_clock_past_the_year_9999_gets_an_error_not_a_wrapped_id() {
    let (_dir, store) = sqlite();
    // About the year 103,000: yyyyyyMMdd has 10 digits, and 10 more do not fit.
    let generator = PeriodSegmentGenerator::builder(store, "far")
        .clock(ManualClock::new(3_200_000_000_000_000))
        .build()
        .unwrap();
    let message = generator.next_uid().unwrap_err().to_string();
    assert!(
        message.contains("past the largest ID 2^63 - 1"),
        "{message}"
    );
    let mut batch = [0u64; 4];
    assert!(generator.next_uids(&mut batch).is_err());
}
