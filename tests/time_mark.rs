//! Reusing a worker ID repeats nothing: a fixed worker ID rebuilt in one process, and a
//! leased one (embedded store) released and taken again, after borrowed time, after a
//! clock rolled back across the restart, and with the store broken mid-run.

use std::collections::HashSet;
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, CachedUidGenerator, Clock, DefaultUidGenerator, ManualClock, RollbackStrategy,
    SqliteLeaseStore, SystemClock, UidError, UidGenerator, WorkerIdError, WorkerLease,
};

/// Takes `n` IDs, checking each is new to `seen`; returns the smallest and largest.
fn take(generator: &dyn UidGenerator, n: usize, seen: &mut HashSet<u64>) -> (u64, u64) {
    let (mut low, mut high) = (u64::MAX, 0);
    for _ in 0..n {
        let id = generator.next_uid().unwrap();
        assert!(seen.insert(id), "ID {id} repeated");
        low = low.min(id);
        high = high.max(id);
    }
    (low, high)
}

#[test]
fn rebuilding_with_the_same_fixed_worker_id_repeats_nothing() {
    let mut seen = HashSet::new();
    let mut last_high = 0;
    for round in 0..3 {
        // Full speed on the cached generator: it borrows ticks, which a rebuild must not reuse.
        let cached = CachedUidGenerator::builder()
            .worker_id(901)
            .build()
            .unwrap();
        let (low, high) = take(&cached, 200_000, &mut seen);
        assert!(
            low > last_high,
            "round {round} went back below the last round"
        );
        drop(cached);
        let default = DefaultUidGenerator::builder()
            .worker_id(901)
            .rollback_strategy(RollbackStrategy::Continue)
            .build()
            .unwrap();
        let (low, high2) = take(&default, 20_000, &mut seen);
        assert!(
            low > high,
            "round {round}: the default generator started below the cached one"
        );
        last_high = high2;
    }
    assert_eq!(seen.len(), 3 * 220_000);
}

#[test]
fn a_default_generator_rebuilt_at_once_waits_for_the_next_tick_instead_of_repeating() {
    let mut seen = HashSet::new();
    for _ in 0..3 {
        let generator = DefaultUidGenerator::builder()
            .worker_id(902)
            .build()
            .unwrap();
        take(&generator, 5_000, &mut seen);
    }
    assert_eq!(seen.len(), 15_000);
}

#[test]
fn a_manual_clock_keeps_its_marks_apart_from_the_system_clock() {
    // A test clock a year ahead must not push real generators a year ahead.
    let year = 365 * 24 * 3_600_000;
    let clock = ManualClock::new(SystemClock.now_millis() + year);
    let ahead = DefaultUidGenerator::builder()
        .worker_id(903)
        .clock(clock)
        .build()
        .unwrap();
    ahead.next_uid().unwrap();
    drop(ahead);
    let real = DefaultUidGenerator::builder()
        .worker_id(903)
        .build()
        .unwrap();
    let id = real.next_uid().unwrap();
    let at = real.parse_uid(id).unwrap().timestamp_millis;
    let now = SystemClock.now_millis();
    assert!(at <= now + 1_000, "the ID is dated {at}, now is {now}");
}

fn store(dir: &tempfile::TempDir) -> SqliteLeaseStore {
    SqliteLeaseStore::new(dir.path().join("leases.sqlite3"))
}

#[test]
fn leases_take_the_lowest_free_worker_id_and_reuse_released_ones() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::default();
    let a = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    let b = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    assert_eq!((a.worker_id(), b.worker_id()), (0, 1));
    drop(a);
    let c = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    assert_eq!(c.worker_id(), 0, "the released one, lowest first");
    let err = WorkerLease::builder(store(&dir))
        .acquire_id(&bits, 1)
        .unwrap_err();
    assert!(
        matches!(err, WorkerIdError::WorkerIdHeld { worker_id: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(b.holder()), "{err}");
}

#[test]
fn a_small_layout_runs_out_with_a_named_limit_and_never_after_releases() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::builder().bits(42, 2, 19).build().unwrap();
    let held: Vec<_> = (0..4)
        .map(|_| WorkerLease::builder(store(&dir)).acquire(&bits).unwrap())
        .collect();
    let err = WorkerLease::builder(store(&dir))
        .acquire(&bits)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            WorkerIdError::NoFreeWorkerId {
                max_worker_id: 3,
                ..
            }
        ) && message.contains("2 worker bits"),
        "{message}"
    );
    drop(held);
    // Acquire and release far more often than there are worker IDs.
    for _ in 0..200 {
        let lease = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
        assert_eq!(lease.worker_id(), 0);
    }
}

#[test]
fn a_reused_worker_id_starts_above_every_id_of_its_last_holder_even_borrowed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::default();
    let mut seen = HashSet::new();
    let mut high = 0;
    for round in 0..3 {
        let lease = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
        assert_eq!(lease.worker_id(), 0);
        let generator = CachedUidGenerator::builder().lease(lease).build().unwrap();
        let (low, new_high) = take(&generator, 300_000, &mut seen);
        assert!(
            low > high,
            "round {round} started at or below the last holder's IDs"
        );
        high = new_high;
    }
}

#[test]
fn a_clock_rolled_back_an_hour_across_a_restart_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::default();
    let clock = ManualClock::starting_now();
    let mut seen = HashSet::new();
    let lease = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    let first = CachedUidGenerator::builder()
        .clock(clock.clone())
        .lease(lease)
        .build()
        .unwrap();
    let (_, high) = take(&first, 50_000, &mut seen);
    drop(first);
    clock.rewind(Duration::from_secs(3_600));
    let lease = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    let default = DefaultUidGenerator::builder()
        .clock(clock.clone())
        .rollback_strategy(RollbackStrategy::Continue)
        .lease(lease)
        .build()
        .unwrap();
    let (low, _) = take(&default, 10_000, &mut seen);
    assert!(
        low > high,
        "after the rollback IDs went below the last run's"
    );
    drop(default);
    let lease = WorkerLease::builder(store(&dir)).acquire(&bits).unwrap();
    let failing = DefaultUidGenerator::builder()
        .clock(clock.clone())
        .lease(lease)
        .build()
        .unwrap();
    // This generator never saw the clock read later: to it, the worker ID was used up to
    // a mark an hour ahead of the clock, which is not a rollback it could wait out.
    let err = failing.next_uid().unwrap_err();
    assert!(
        matches!(err, UidError::MarkAhead { worker_id: 0, ahead, .. }
            if ahead > Duration::from_secs(3_599)),
        "{err}"
    );
    assert_eq!(failing.rollbacks(), 0);
}

#[test]
fn a_broken_store_lets_the_generator_go_on_within_its_mark_then_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leases.sqlite3");
    let bits = BitsAllocator::default();
    // The keeper revokes at 90% of the TTL after the last renewal; a TTL of seconds
    // leaves the rest as slack for a loaded machine's scheduling.
    let ttl = Duration::from_secs(3);
    let lease = WorkerLease::builder(SqliteLeaseStore::new(&path))
        .ttl(ttl)
        .acquire(&bits)
        .unwrap();
    let generator = DefaultUidGenerator::builder().lease(lease).build().unwrap();
    let mut seen = HashSet::new();
    take(&generator, 1_000, &mut seen);
    // The store breaks: its file is no longer a database.
    std::fs::write(&path, vec![0x55; 8192]).unwrap();
    let start = Instant::now();
    let err = loop {
        match generator.next_uid() {
            Ok(id) => assert!(seen.insert(id), "ID {id} repeated"),
            Err(e) => break e,
        }
        // A steady trickle, so the set stays small over the TTL.
        if seen.len() % 100 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never failed");
    };
    let message = err.to_string();
    assert!(
        matches!(err, UidError::WorkerLease { .. }) && message.contains("leases.sqlite3"),
        "{message}"
    );
    assert!(
        start.elapsed() < ttl,
        "failed only after {:?}",
        start.elapsed()
    );
    assert!(seen.len() > 1_000, "it went on while its lease lasted");
    drop(generator);
    // The store comes back: new leases work.
    std::fs::remove_file(&path).unwrap();
    let lease = WorkerLease::builder(SqliteLeaseStore::new(&path))
        .acquire(&bits)
        .unwrap();
    assert_eq!(lease.worker_id(), 0);
}

#[test]
fn a_lease_for_another_layout_is_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let other = uidgen::Preset::Snowflake.builder().build().unwrap();
    let lease = WorkerLease::builder(store(&dir)).acquire(&other).unwrap();
    let err = CachedUidGenerator::builder()
        .lease(lease)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("another layout"), "{err}");
}

#[test]
fn a_cached_generator_hands_out_no_built_id_once_its_lease_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leases.sqlite3");
    let bits = BitsAllocator::default();
    let ttl = Duration::from_secs(1);
    let lease = WorkerLease::builder(SqliteLeaseStore::new(&path))
        .ttl(ttl)
        .acquire(&bits)
        .unwrap();
    let generator = CachedUidGenerator::builder().lease(lease).build().unwrap();
    for _ in 0..10 {
        generator.next_uid().unwrap();
    }
    assert!(generator.stats().len > 0, "the ring holds built IDs");
    std::fs::write(&path, vec![0x55; 8192]).unwrap();
    // Past the lease's expiry: whatever the ring still held must not come out.
    // (The keeper revokes at 90% of it; the rest, and this margin, are slack for a
    // loaded machine.)
    std::thread::sleep(ttl + Duration::from_millis(500));
    let err = generator.next_uid().unwrap_err();
    assert!(matches!(err, UidError::WorkerLease { .. }), "{err}");
    assert!(matches!(
        generator.try_next_uid(),
        Err(UidError::WorkerLease { .. })
    ));
}

#[test]
fn leased_spares_take_over_after_a_step_back_and_their_marks_cover_what_they_used() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::default();
    let mut seen = HashSet::new();
    let now = SystemClock.now_millis();
    // Worker ID 1 was used by a process whose clock ran a minute ahead: its mark is
    // ahead of the clock, so it cannot serve as a spare after a step back.
    let ahead = DefaultUidGenerator::builder()
        .clock(ManualClock::new(now + 60_000))
        .lease(
            WorkerLease::builder(store(&dir))
                .acquire_id(&bits, 1)
                .unwrap(),
        )
        .build()
        .unwrap();
    take(&ahead, 100, &mut seen);
    drop(ahead);

    let clock = ManualClock::new(now);
    let lease = |id| {
        WorkerLease::builder(store(&dir))
            .acquire_id(&bits, id)
            .unwrap()
    };
    let generator = DefaultUidGenerator::builder()
        .clock(clock.clone())
        .lease(lease(0))
        .spare_leases(vec![lease(1), lease(2)])
        .build()
        .unwrap();
    take(&generator, 1_000, &mut seen);
    clock.rewind(Duration::from_secs(120));
    // No error: worker ID 1 is passed over (its mark is ahead), worker ID 2 serves.
    let after: Vec<u64> = (0..1_000).map(|_| generator.next_uid().unwrap()).collect();
    for id in &after {
        assert!(seen.insert(*id), "ID {id} repeated");
    }
    assert_eq!(generator.current_worker_id(), 2);
    assert!(after
        .iter()
        .all(|id| generator.parse_uid(*id).unwrap().worker_id == 2));
    let highest_on_2 = *after.iter().max().unwrap();
    drop(generator);

    // The spare's lease recorded the ticks used on it: whoever leases worker ID 2 next,
    // on a clock stepped back further still, starts above them.
    clock.rewind(Duration::from_secs(60));
    let next = DefaultUidGenerator::builder()
        .clock(clock.clone())
        .rollback_strategy(RollbackStrategy::Continue)
        .lease(lease(2))
        .build()
        .unwrap();
    let (low, _) = take(&next, 1_000, &mut seen);
    assert!(low > highest_on_2, "{low} is not above {highest_on_2}");
}
