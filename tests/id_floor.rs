//! `floor(N)`: no generator hands out an ID at or below N, at start or after the clock
//! steps back below the time the floor was passed at.

use std::time::Duration;
use uidgen::{
    CachedUidGenerator, ConfigError, DefaultUidGenerator, ManualClock, Preset, RollbackStrategy,
    TakeRejectPolicy, UidError, UidGenerator,
};

/// 2026-11-27.
const NOW: u64 = 1_795_737_600_000;

/// Leaf's layout on worker 3, on `clock`, with `floor`.
fn leaf_default(clock: &ManualClock, floor: u64) -> uidgen::DefaultUidGeneratorBuilder {
    DefaultUidGenerator::builder()
        .allocator(Preset::Snowflake.builder().build().unwrap())
        .worker_id(3)
        .clock(clock.clone())
        .floor(floor)
}

fn snowflake_floor_at(clock_ms: u64) -> u64 {
    // Leaf's layout: the first ID worker 3 makes in the tick of `clock_ms`, less one.
    let bits = Preset::Snowflake.builder().build().unwrap();
    bits.allocate(bits.tick_at(clock_ms).unwrap(), 3, 0)
        .unwrap()
        - 1
}

#[test]
fn building_below_the_floor_is_refused_naming_the_plan_command() {
    let bits = Preset::Snowflake.builder().build().unwrap();
    let clock = ManualClock::new(NOW);
    let floor = snowflake_floor_at(NOW + 1);
    let err = leaf_default(&clock, floor).build().unwrap_err();
    let ConfigError::BelowFloor { first, .. } = &err else {
        panic!("{err}")
    };
    assert!(*first <= floor);
    assert!(err.to_string().contains("uidgen migrate plan"), "{err}");
    let err = CachedUidGenerator::builder()
        .allocator(bits)
        .worker_id(3)
        .clock(clock.clone())
        .floor(floor)
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::BelowFloor { .. }), "{err}");
    // One tick later the first ID is above it.
    clock.advance(Duration::from_millis(1));
    let generator = leaf_default(&clock, floor).build().unwrap();
    assert_eq!(generator.next_uid().unwrap(), floor + 1);
}

#[test]
fn the_default_generator_refuses_an_id_below_the_floor_after_the_clock_steps_back() {
    let clock = ManualClock::new(NOW);
    let floor = snowflake_floor_at(NOW);
    // `SpareWorker` moves to a worker ID whose ticks of now are below the floor: the
    // floor refuses that one.
    let generator = leaf_default(&clock, floor)
        .rollback_strategy(RollbackStrategy::SpareWorker { spares: vec![1] })
        .build()
        .unwrap();
    let first = generator.next_uid().unwrap();
    assert!(first > floor);
    clock.rewind(Duration::from_secs(5));
    match generator.next_uid() {
        Err(UidError::BelowFloor { floor: f, next, .. }) => {
            assert_eq!(f, floor);
            assert!(next <= floor);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn the_cached_generator_never_pads_a_tick_below_the_floor() {
    let bits = Preset::Snowflake.builder().build().unwrap();
    let clock = ManualClock::new(NOW);
    let floor = snowflake_floor_at(NOW);
    let generator = CachedUidGenerator::builder()
        .allocator(bits)
        .worker_id(3)
        .clock(clock.clone())
        .floor(floor)
        .take_reject_policy(TakeRejectPolicy::fail_fast())
        .build()
        .unwrap();
    // The clock steps back before much is taken: whatever comes is above the floor.
    clock.rewind(Duration::from_secs(60));
    let mut taken = 0;
    for _ in 0..20_000 {
        match generator.next_uid() {
            Ok(id) => {
                assert!(id > floor, "{id} <= {floor}");
                taken += 1;
            }
            Err(_) => break,
        }
    }
    assert!(taken > 0);
}

#[cfg(feature = "sqlite")]
#[test]
fn segment_and_residue_tags_start_above_the_floor_or_not_at_all() {
    use uidgen::{ResidueSegmentGenerator, SegmentGenerator, SqliteSegmentStore};
    let dir = tempfile::tempdir().unwrap();
    let store = |name: &str| SqliteSegmentStore::new(dir.path().join(name));
    let err = SegmentGenerator::builder(store("plain.db"), "t")
        .floor(1000)
        .create_missing(1000, 10)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("uidgen migrate plan"), "{err}");
    let plain = SegmentGenerator::builder(store("plain.db"), "t")
        .floor(1000)
        .create_missing(1001, 10)
        .build()
        .unwrap();
    assert_eq!(plain.next_uid().unwrap(), 1001);
    // Residue classes: IDs are counter × 2 + remainder.
    let residue = |first: u64| {
        ResidueSegmentGenerator::builder("r", 2)
            .store(store("a.db"), 0)
            .store(store("b.db"), 1)
            .floor(1000)
            .create_missing(first)
            .build()
    };
    let err = residue(999).expect_err("a start below the floor is refused");
    assert!(err.to_string().contains("would start at 999"), "{err}");
    let ids = residue(1001).unwrap();
    for _ in 0..100 {
        assert!(ids.next_uid().unwrap() > 1000);
    }
}
