//! The ID layout: errors, presets, round trips and UidGenerator's known answer.

use proptest::prelude::*;
use uidgen::{BitsAllocator, ConfigError, ManualClock, Preset, TimeUnit, UidError};

const DAY_MS: u64 = 86_400_000;

#[test]
fn known_answer_from_uidgenerator_readme_layout() {
    let bits = Preset::UidGeneratorReadme.builder().build().unwrap();
    let parts = bits.parse(180_363_646_902_239_241).unwrap();
    assert_eq!(
        (parts.delta, parts.worker_id, parts.sequence),
        (10_498_546, 4, 9)
    );
    assert_eq!(parts.timestamp(), "2017-01-19 12:15:46");
    // Display is UidGenerator's parseUID JSON.
    assert_eq!(
        parts.to_string(),
        r#"{"UID":"180363646902239241","timestamp":"2017-01-19 12:15:46","workerId":"4","sequence":"9"}"#
    );
    // serde round-trips every field.
    #[cfg(feature = "serde")]
    {
        let json = serde_json::to_string(&parts).unwrap();
        assert!(json.contains(r#""worker_id":4"#), "{json}");
        let back: uidgen::UidParts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, parts);
    }
}

#[test]
fn bits_must_add_up_to_63() {
    let err = BitsAllocator::builder()
        .bits(30, 20, 12)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::BitsSum {
                time_bits: 30,
                worker_bits: 20,
                seq_bits: 12,
                sum: 62
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("seq_bits (12)") && msg.contains("exactly 63"),
        "{msg}"
    );
    // Overflowing sums are reported, not wrapped.
    let err = BitsAllocator::builder()
        .bits(u32::MAX, 1, 1)
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::BitsSum { .. }), "{err}");
}

#[test]
fn zero_width_fields_are_refused_by_name() {
    for (bits, field) in [
        ((0, 50, 13), "time_bits"),
        ((50, 0, 13), "worker_bits"),
        ((50, 13, 0), "seq_bits"),
    ] {
        let err = BitsAllocator::builder()
            .bits(bits.0, bits.1, bits.2)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, ConfigError::ZeroBits { field: f } if f == field),
            "{err:?}"
        );
        assert!(err.to_string().starts_with(field));
    }
}

#[test]
fn epoch_in_the_future_is_refused() {
    let clock = ManualClock::new(1_700_000_000_000); // 2023-11-14
    let err = BitsAllocator::builder()
        .epoch("2024-01-01")
        .build_with_clock(&clock)
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::EpochInFuture { .. }));
    assert!(
        msg.contains("2024-01-01 00:00:00") && msg.contains("2023-11-14"),
        "{msg}"
    );
}

#[test]
fn malformed_epoch_names_the_value() {
    let err = BitsAllocator::builder()
        .epoch("20th of May")
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::InvalidEpoch { .. }));
    assert!(err.to_string().contains("\"20th of May\""), "{err}");
}

#[test]
fn uidgenerator_original_layout_is_refused_today_with_its_end_date() {
    let err = BitsAllocator::preset(Preset::UidGenerator).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::LayoutExhausted { .. }));
    assert!(msg.contains("ran out on 2024-11-20"), "{msg}");
    assert!(msg.contains("time_bits 28"), "{msg}");
    // It was alive the day before it ran out.
    let bits = Preset::UidGenerator
        .builder()
        .build_unchecked_time()
        .unwrap();
    assert!(bits.check_alive_at(bits.last_instant_millis()).is_ok());
    assert!(bits.check_alive_at(bits.end_millis()).is_err());
}

#[test]
fn worker_id_above_max_is_refused_with_the_limit() {
    let bits = Preset::Snowflake.builder().build().unwrap();
    assert!(bits.check_worker_id(1023).is_ok());
    let err = bits.check_worker_id(1024).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::WorkerIdTooLarge {
                worker_id: 1024,
                max_worker_id: 1023,
                worker_bits: 10
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("1024") && err.to_string().contains("1023"));
}

#[test]
fn default_layout_meets_its_stated_goals() {
    let bits = BitsAllocator::preset(Preset::Default).unwrap();
    let now = uidgen::Clock::now_millis(&uidgen::SystemClock);
    assert!(
        bits.end_millis() - now >= 30 * 365 * DAY_MS,
        "lives 30 years"
    );
    assert!(bits.max_worker_id() + 1 >= 1024, "1,024 workers at once");
    assert_eq!(bits.unit(), TimeUnit::Milliseconds);
    assert!(
        (bits.max_sequence() + 1) * 1000 >= 2_000_000,
        "2M IDs a second per worker before borrowing"
    );
}

#[test]
fn presets_have_their_published_splits() {
    for (preset, split, unit) in [
        (Preset::UidGeneratorReadme, (29, 21, 13), TimeUnit::Seconds),
        (Preset::Snowflake, (41, 10, 12), TimeUnit::Milliseconds),
        (Preset::Instagram, (40, 13, 10), TimeUnit::Milliseconds),
    ] {
        let bits = preset.builder().build().unwrap();
        assert_eq!(
            (bits.time_bits(), bits.worker_bits(), bits.seq_bits()),
            split
        );
        assert_eq!(bits.unit(), unit);
        assert_eq!(preset.name().parse::<Preset>().unwrap(), preset);
    }
    assert_eq!(
        Preset::Snowflake.builder().build().unwrap().epoch_millis(),
        1_288_834_974_657
    );
    assert!("nope"
        .parse::<Preset>()
        .unwrap_err()
        .to_string()
        .contains("snowflake"));
}

#[test]
fn sonyflake_puts_the_sequence_above_the_machine_id_in_ten_millisecond_ticks() {
    for (preset, epoch) in [
        (Preset::Sonyflake, 1_409_529_600_000),
        (Preset::SonyflakeV2, 1_735_689_600_000),
    ] {
        let bits = preset.builder().build().unwrap();
        assert_eq!(bits.epoch_millis(), epoch, "{preset}");
        assert_eq!(bits.unit(), TimeUnit::Centiseconds);
        // Sonyflake's ID: time << (8 + 16) | sequence << 16 | machine ID.
        assert_eq!(bits.allocate(1, 0, 0).unwrap(), 1 << 24);
        assert_eq!(bits.allocate(0, 0, 1).unwrap(), 1 << 16);
        assert_eq!(bits.allocate(0, 1, 0).unwrap(), 1);
        let parts = bits.parse((5 << 24) | (7 << 16) | 9).unwrap();
        assert_eq!((parts.delta, parts.sequence, parts.worker_id), (5, 7, 9));
        assert_eq!(parts.timestamp_millis, epoch + 50);
        assert!(bits.sequence_first());
        // Read only: a generator refuses it, naming why.
        let err = uidgen::DefaultUidGenerator::builder()
            .allocator(bits)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("Sonyflake's order"), "{err}");
    }
    for alias in ["leaf", "Twitter"] {
        assert_eq!(alias.parse::<Preset>().unwrap(), Preset::Snowflake);
    }
}

#[test]
fn a_region_sits_between_the_time_and_the_worker_id_in_every_id() {
    let bits = uidgen::LayoutBuilder::parse("36/2/10/15")
        .unwrap()
        .region_value(2)
        .unwrap()
        .unit(TimeUnit::Milliseconds)
        .build()
        .unwrap();
    let id = bits.allocate(3, 5, 7).unwrap();
    assert_eq!(id, (3 << 27) | (2 << 25) | (5 << 15) | 7);
    let parts = bits.parse(id).unwrap();
    assert_eq!(
        (parts.region, parts.worker_id, parts.sequence),
        (Some(2), 5, 7)
    );
    assert!(parts.to_string().contains(r#""region":"2""#), "{parts}");
    for (spec, region, limit) in [("36/2/10/15", 4, "0 to 3"), ("36/10/15", 1, "region bits")] {
        let err = uidgen::LayoutBuilder::parse(spec)
            .and_then(|b| b.region_value(region))
            .and_then(|b| b.build())
            .unwrap_err();
        assert!(err.to_string().contains(limit), "{spec}: {err}");
    }
    let err = uidgen::LayoutBuilder::parse("36/2/10/16")
        .unwrap()
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("must be exactly 63"), "{err}");
}

#[test]
fn allocate_refuses_out_of_range_fields() {
    let bits = Preset::Snowflake.builder().build().unwrap();
    let err = bits.allocate(0, 0, 4096).unwrap_err();
    assert!(
        err.to_string()
            .contains("sequence 4096 exceeds its maximum 4095"),
        "{err}"
    );
    assert!(bits.allocate(1 << 41, 0, 0).is_err());
    assert!(bits.allocate(0, 1024, 0).is_err());
}

#[test]
fn parse_refuses_sign_bit_and_malformed_text() {
    let bits = BitsAllocator::default();
    assert!(matches!(
        bits.parse(1 << 63),
        Err(UidError::InvalidUid { .. })
    ));
    for bad in ["-1", "abc", "", "18446744073709551616", "1.5"] {
        let err = bits.parse_str(bad).unwrap_err();
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
    assert_eq!(bits.parse_str(" 42 ").unwrap().sequence, 42);
}

proptest! {
    #[test]
    fn allocate_then_parse_round_trips(
        time_bits in 1u32..=61,
        worker_share in 0.0f64..1.0,
        seed in any::<(u64, u64, u64)>(),
        millis in any::<bool>(),
    ) {
        // Split the remaining bits between worker and sequence, each at least 1.
        let rest = 63 - time_bits;
        let worker_bits = 1 + ((rest - 2) as f64 * worker_share) as u32;
        let seq_bits = rest - worker_bits;
        let unit = if millis { TimeUnit::Milliseconds } else { TimeUnit::Seconds };
        let bits = BitsAllocator::builder()
            .bits(time_bits, worker_bits, seq_bits)
            .unit(unit)
            .epoch("2020-01-01")
            .build_unchecked_time()
            .unwrap();
        let delta = seed.0 % (bits.max_delta() + 1);
        let worker = seed.1 % (bits.max_worker_id() + 1);
        let seq = seed.2 % (bits.max_sequence() + 1);
        let uid = bits.allocate(delta, worker, seq).unwrap();
        prop_assert!(uid <= i64::MAX as u64);
        let parts = bits.parse(uid).unwrap();
        prop_assert_eq!((parts.delta, parts.worker_id, parts.sequence), (delta, worker, seq));
        prop_assert_eq!(parts.timestamp_millis, bits.tick_start_millis(delta));
        prop_assert_eq!(bits.parse_str(&uid.to_string()).unwrap(), parts);
    }
}
