//! The JavaScript-safe layout: no ID above 2^53 − 1, from either generator, and a layout
//! capped below 63 bits refuses what does not fit, naming the cap.

use std::collections::HashSet;
use uidgen::{
    BitsAllocator, CachedUidGenerator, ConfigError, DefaultUidGenerator, Preset, UidError,
    UidGenerator, JS_MAX_SAFE_INTEGER,
};

#[test]
fn the_js_safe_preset_tops_out_at_javascripts_largest_exact_integer() {
    let bits = BitsAllocator::preset(Preset::JsSafe).unwrap();
    assert_eq!(bits.total_bits(), 53);
    assert_eq!(bits.max_uid(), JS_MAX_SAFE_INTEGER);
    let last = bits
        .allocate(bits.max_delta(), bits.max_worker_id(), bits.max_sequence())
        .unwrap();
    assert_eq!(last, JS_MAX_SAFE_INTEGER);
    // What its doc promises: 34.8 years, 128 workers, 64 IDs a millisecond.
    assert_eq!(
        (bits.max_worker_id() + 1, bits.max_sequence() + 1),
        (128, 64)
    );
    let years = bits.lifetime().as_secs_f64() / (365.25 * 86_400.0);
    assert!((34.8..34.9).contains(&years), "{years}");
    assert_eq!("js-safe".parse::<Preset>().unwrap(), Preset::JsSafe);
}

#[test]
fn both_generators_make_only_js_safe_ids() {
    let bits = BitsAllocator::preset(Preset::JsSafe).unwrap();
    let cached = CachedUidGenerator::builder()
        .allocator(bits)
        .worker_id(bits.max_worker_id())
        .build()
        .unwrap();
    let default = DefaultUidGenerator::builder()
        .allocator(bits)
        .worker_id(bits.max_worker_id() - 1)
        .build()
        .unwrap();
    let mut seen = HashSet::new();
    for generator in [&cached as &dyn UidGenerator, &default] {
        let mut last = 0;
        for _ in 0..100_000 {
            let id = generator.next_uid().unwrap();
            assert!(id <= JS_MAX_SAFE_INTEGER, "{id} is above 2^53 - 1");
            assert!(id > last);
            assert!(seen.insert(id), "{id} twice");
            last = id;
        }
        // Its worker ID sits in the top worker bits, so a wrong shift would overflow 53.
        let parts = generator.parse_uid(last).unwrap();
        assert_eq!(parts.worker_id, generator.worker_id());
    }
}

#[test]
fn a_capped_layout_refuses_ids_and_widths_that_do_not_fit_naming_the_cap() {
    let bits = BitsAllocator::preset(Preset::JsSafe).unwrap();
    match bits.parse(1 << 53) {
        Err(err @ UidError::InvalidUid { .. }) => {
            let text = err.to_string();
            assert!(
                text.contains("53 bits") && text.contains(&JS_MAX_SAFE_INTEGER.to_string()),
                "{text}"
            );
        }
        other => panic!("2^53 read by a 53-bit layout: {other:?}"),
    }
    assert!(bits.parse(JS_MAX_SAFE_INTEGER).is_ok());

    let err = BitsAllocator::builder()
        .total_bits(53)
        .bits(40, 7, 7)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::BitsTotal {
                sum: 54,
                total: 53,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("total_bits (53)"), "{err}");
    for total in [0, 2, 64] {
        let err = BitsAllocator::builder()
            .total_bits(total)
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("total_bits") && err.contains("3 to 63"),
            "{err}"
        );
    }
    // The default stays 63, and its errors are as before.
    let err = BitsAllocator::builder()
        .bits(30, 20, 12)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, ConfigError::BitsSum { sum: 62, .. }),
        "{err:?}"
    );
}
