//! IDs as strings: 10^7 random IDs through every form and back, the fixed-width forms'
//! order against the numbers', and decoding fuzzed (never a panic; what is read writes
//! back as the same string, up to case, aliases, `0x` and leading zeros).

use proptest::prelude::*;
use std::time::Instant;
use uidgen::{decode_any, DecodeError, IdFormat, MAX_ENCODED_LEN};

const MAX: u64 = i64::MAX as u64;

/// splitmix64: a fast PRNG, fixed seed, so a failure repeats.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An ID of any magnitude: 63 random bits shifted right by 0 to 63, so short IDs
    /// (small segment counters) come as often as snowflake-sized ones.
    fn id(&mut self) -> u64 {
        let shift = self.next() % 64;
        (self.next() >> 1) >> shift
    }
}

/// 10^7 IDs (10^5 under miri) through all four forms, each written and read back, and
/// each one's strings compared with the last one's: a fixed-width string sorts as its
/// number. Two threads, half each: 8 to 12 s in a debug build on the 2-core VM.
#[test]
fn ten_million_random_ids_round_trip_and_sort_in_every_form() {
    let count: u64 = if cfg!(miri) { 100_000 } else { 10_000_000 };
    let started = Instant::now();
    std::thread::scope(|scope| {
        for seed in [0x05ee_d1d5, 0x05ee_d1d6] {
            scope.spawn(move || round_trips(SplitMix(seed), count / 2));
        }
    });
    eprintln!("{count} IDs x 4 forms in {:?}", started.elapsed());
}

fn round_trips(mut rng: SplitMix, count: u64) {
    let mut bufs = [[0u8; MAX_ENCODED_LEN]; 4];
    let mut last_bufs = [[0u8; MAX_ENCODED_LEN]; 4];
    let mut last_lens = [0usize; 4];
    let mut last = 0u64;
    for i in 0..count {
        // Every so often the neighbour of the last ID, where order is hardest to keep.
        let id = if i % 16 == 0 {
            last.saturating_add(1).min(MAX)
        } else {
            rng.id()
        };
        for (f, format) in IdFormat::ALL.into_iter().enumerate() {
            let text = format.encode_into(id, &mut bufs[f]);
            assert_eq!(format.decode(text), Ok(id), "{format} {id} {text}");
            let len = text.len();
            if let Some(width) = format.width() {
                assert_eq!(len, width, "{format} {id}");
                // Byte order, as a database or sort(1) compares them.
                let last_text = &last_bufs[f][MAX_ENCODED_LEN - last_lens[f]..];
                let text = &bufs[f][MAX_ENCODED_LEN - len..];
                assert_eq!(
                    last.cmp(&id),
                    last_text.cmp(text),
                    "{format}: {last} vs {id}"
                );
            }
            last_lens[f] = len;
        }
        std::mem::swap(&mut bufs, &mut last_bufs);
        last = id;
    }
}

/// What `format` writes for a string it read: the same string, once case, Crockford's
/// aliases, hex's `0x` and decimal's leading zeros are taken out.
fn canonical(format: IdFormat, text: &str) -> String {
    match format {
        IdFormat::Decimal => {
            let digits = text.trim_start_matches('0');
            if digits.is_empty() { "0" } else { digits }.to_owned()
        }
        IdFormat::Hex => {
            let digits = text
                .strip_prefix("0x")
                .or_else(|| text.strip_prefix("0X"))
                .unwrap_or(text);
            format!("{:0>16}", digits.to_ascii_lowercase())
        }
        IdFormat::Base62 => text.to_owned(),
        IdFormat::Base32 => text
            .to_ascii_uppercase()
            .replace('O', "0")
            .replace(['I', 'L'], "1"),
        _ => unreachable!("a form this test does not know"),
    }
}

/// Reads `text` in every form and with `decode_any`: no panic, nothing above 2^63 - 1,
/// and what is read writes back as the canonical string.
fn check_decoding(text: &str) -> Result<(), TestCaseError> {
    for format in IdFormat::ALL {
        match format.decode(text) {
            Ok(id) => {
                prop_assert!(id <= MAX);
                prop_assert_eq!(format.encode(id), canonical(format, text), "{}", format);
            }
            Err(err) => {
                prop_assert_eq!(err.format(), Some(format));
                let message = err.to_string();
                prop_assert!(
                    message.starts_with(&format!("{format} ID: ")),
                    "{}",
                    message
                );
                if let DecodeError::Char { found, index, .. } = err {
                    prop_assert_eq!(text.chars().nth(index), Some(found));
                }
            }
        }
        // The serde rule never panics either, and agrees with one of its two forms.
        if let Ok(id) = format.decode_or_decimal(text) {
            prop_assert!(format.decode(text) == Ok(id) || IdFormat::Decimal.decode(text) == Ok(id));
        }
    }
    match (decode_any(text), IdFormat::detect(text)) {
        (Ok(id), Some(format)) => prop_assert_eq!(format.decode(text), Ok(id)),
        (Err(err), Some(format)) => prop_assert_eq!(Err(err), format.decode(text)),
        (Err(err), None) => prop_assert_eq!(err.format(), None),
        (Ok(_), None) => prop_assert!(false, "read with no form detected"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn any_string_decodes_without_panic(text in any::<String>()) {
        check_decoding(&text)?;
    }

    #[test]
    fn near_misses_decode_without_panic(
        text in "(0[xX])?[0-9A-Za-z +\\-é\\n\u{0}٣]{0,24}"
    ) {
        check_decoding(&text)?;
    }

    #[test]
    fn strings_of_each_alphabet_read_back_canonically(
        text in prop_oneof![
            "[0-9]{1,25}",
            "(0[xX])?[0-9a-fA-F]{1,17}",
            "[0-9A-Za-z]{10,12}",
            "[0-9A-Za-z]{12,14}",
        ]
    ) {
        check_decoding(&text)?;
    }

    #[test]
    fn random_pairs_sort_as_their_numbers(a in 0..=MAX, b in 0..=MAX) {
        for format in IdFormat::ALL.into_iter().filter(|f| f.width().is_some()) {
            prop_assert_eq!(a.cmp(&b), format.encode(a).cmp(&format.encode(b)), "{}", format);
        }
    }

    #[test]
    fn every_id_round_trips_through_decode_any_unless_all_digits(id in 0..=MAX) {
        for format in IdFormat::ALL {
            let text = format.encode(id);
            let detected = IdFormat::detect(&text);
            // The documented exception: a fixed-width string of digits only is decimal.
            if text.bytes().all(|b| b.is_ascii_digit()) {
                prop_assert_eq!(detected, Some(IdFormat::Decimal));
            } else {
                prop_assert_eq!(detected, Some(format));
                prop_assert_eq!(decode_any(&text), Ok(id));
            }
        }
    }
}
