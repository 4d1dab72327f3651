//! Opaque public IDs (feature `opaque`): every ID maps back, neighbours look unrelated,
//! a wrong key never maps back, and no string makes decoding panic.
//!
//! The three tests over 10^5 to 10^7 IDs run optimized only: FF1 is generic over its
//! cipher, so its code is compiled into this test at the test's own optimization, about
//! ten times slower unoptimized. `scripts/test` runs them with
//! `cargo test --release -p uidgen --features opaque --test opaque`.

use proptest::prelude::*;
use std::thread;
use uidgen::{CachedUidGenerator, OpaqueError, OpaqueIds, UidGenerator};

const KEY: [u8; 32] = *b"uidgen opaque test key, 32 bytes";

/// SplitMix64: a fixed, reproducible stream of random 63-bit IDs.
fn random_ids(seed: u64) -> impl Iterator<Item = u64> {
    let mut state = seed;
    std::iter::from_fn(move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Some((z ^ (z >> 31)) >> 1)
    })
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: scripts/test runs it with --release"
)]
fn ten_million_random_ids_map_back_through_the_string_form() {
    let ids = OpaqueIds::new(5, &KEY).unwrap();
    let threads = 2;
    let per_thread = 10_000_000 / threads;
    thread::scope(|s| {
        for t in 0..threads {
            let ids = &ids;
            s.spawn(move || {
                for id in random_ids(t as u64).take(per_thread) {
                    let public = ids.encode(id).unwrap();
                    assert_eq!(ids.decode(&public), Ok(id), "{id} -> {public}");
                }
            });
        }
    });
}

/// The leading bits two 63-bit values share.
fn shared_prefix(a: u64, b: u64) -> u32 {
    ((a ^ b) << 1).leading_zeros().min(63)
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: scripts/test runs it with --release"
)]
fn consecutive_ids_give_public_ids_with_no_visible_pattern() {
    let ids = OpaqueIds::new(0, &KEY).unwrap();
    // Real IDs, in the order a generator hands them out.
    let generator = CachedUidGenerator::builder().worker_id(3).build().unwrap();
    let n = 1_000_000;
    let mut plain = vec![0; n];
    let mut filled = 0;
    while filled < n {
        filled += generator.next_uids(&mut plain[filled..]).unwrap();
    }
    let public: Vec<u64> = plain.iter().map(|&id| ids.permute(id).unwrap()).collect();

    // Each output bit is set 50% ± 1% of the time (binomial sd is 0.05% here).
    for bit in 0..63 {
        let set = public.iter().filter(|&&p| p >> bit & 1 == 1).count();
        let share = set as f64 / n as f64;
        assert!((0.49..=0.51).contains(&share), "bit {bit} set {share:.4}");
    }
    // The input bits are far from balanced: the time bits barely change.
    let top_set = plain.iter().filter(|&&p| p >> 62 & 1 == 1).count();
    assert!(top_set == 0 || top_set == n, "the plain IDs' top bit moved");

    // Neighbours share as many leading bits as random pairs do: 1 on average; over 10^6
    // pairs the longest is about log2(10^6) = 20, 40 has odds of 1 in 10^6.
    let prefixes: Vec<u32> = public
        .windows(2)
        .map(|w| shared_prefix(w[0], w[1]))
        .collect();
    let mean = prefixes.iter().map(|&p| f64::from(p)).sum::<f64>() / prefixes.len() as f64;
    let longest = prefixes.iter().copied().max().unwrap();
    assert!((0.95..=1.05).contains(&mean), "mean shared prefix {mean}");
    assert!(longest < 40, "two neighbours share {longest} leading bits");
    // The plain neighbours share most of theirs (what the permutation hides).
    let plain_mean = plain
        .windows(2)
        .map(|w| f64::from(shared_prefix(w[0], w[1])))
        .sum::<f64>()
        / (n - 1) as f64;
    assert!(plain_mean > 40.0, "plain neighbours share {plain_mean}");

    // In the string form, after the version: neighbours rarely share even a character.
    let strings: Vec<String> = plain[..100_000]
        .iter()
        .map(|&id| ids.encode(id).unwrap())
        .collect();
    let longest_chars = strings
        .windows(2)
        .map(|w| {
            w[0].chars()
                .zip(w[1].chars())
                .skip(1)
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap();
    assert!(
        longest_chars <= 4,
        "neighbours share {longest_chars} characters"
    );

    // A permutation: no two IDs gave one public ID.
    let mut sorted = public;
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), n);
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: scripts/test runs it with --release"
)]
fn a_wrong_key_never_maps_back() {
    let right = OpaqueIds::new(1, &KEY).unwrap();
    let mut other = KEY;
    other[31] ^= 1; // one bit off
    let wrong = OpaqueIds::new(1, &other).unwrap();
    for id in random_ids(99).take(200_000) {
        let public = right.encode(id).unwrap();
        assert_ne!(wrong.decode(&public).unwrap(), id, "{public}");
    }
    // Under another version, it is refused outright.
    let elsewhere = OpaqueIds::new(2, &KEY).unwrap();
    assert!(matches!(
        elsewhere.decode(&right.encode(5).unwrap()),
        Err(OpaqueError::UnknownVersion { version: 1, .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn decoding_any_string_never_panics(text in "\\PC{0,16}") {
        let ids = OpaqueIds::new(1, &KEY).unwrap();
        if let Ok(id) = ids.decode(&text) {
            // Whatever reads as an ID writes back as the same string (the alphabet has
            // one spelling per digit).
            prop_assert_eq!(ids.encode(id).unwrap(), text);
        }
    }

    #[test]
    fn decoding_base62_shaped_strings_never_panics(text in "[0-9A-Za-z]{12}") {
        let ids = OpaqueIds::new(1, &KEY).unwrap();
        match ids.decode(&text) {
            Ok(id) => prop_assert_eq!(ids.encode(id).unwrap(), text),
            Err(err) => {
                let expected = matches!(
                    err,
                    OpaqueError::UnknownVersion { .. } | OpaqueError::Body(_)
                );
                prop_assert!(expected, "{}", err);
            }
        }
    }
}
