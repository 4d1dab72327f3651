use super::*;

fn ids() -> OpaqueIds {
    OpaqueIds::new(3, &[9; 32]).unwrap()
}

#[test]
fn strings_carry_the_version_and_read_back() {
    let ids = ids();
    for id in [0, 1, 2, 1 << 40, MAX_ID - 1, MAX_ID] {
        let public = ids.encode(id).unwrap();
        assert_eq!(public.len(), OPAQUE_LEN);
        assert!(public.starts_with('3'), "{public}");
        assert_eq!(ids.decode(&public).unwrap(), id);
        assert_eq!(ids.unpermute(3, ids.permute(id).unwrap()).unwrap(), id);
    }
}

#[test]
fn refusals_name_the_problem() {
    let ids = ids();
    assert_eq!(
        ids.encode(MAX_ID + 1).unwrap_err().to_string(),
        format!(
            "ID {} is above 2^63 - 1 = {MAX_ID}, the largest ID",
            MAX_ID + 1
        )
    );
    assert_eq!(
        ids.decode("3abc").unwrap_err(),
        OpaqueError::Length { got: 4 }
    );
    assert_eq!(
        ids.decode("-00000000000").unwrap_err(),
        OpaqueError::VersionChar { found: '-' }
    );
    assert_eq!(
        ids.decode("ééééééééééé1").unwrap_err(),
        OpaqueError::VersionChar { found: 'é' }
    );
    assert!(matches!(
        ids.decode("30000000000!").unwrap_err(),
        OpaqueError::Body(_)
    ));
    // Above 2^63 - 1 in base62 ("AzL8n0Y58m8" is 2^63 - 1).
    assert!(matches!(
        ids.decode("3zzzzzzzzzzz").unwrap_err(),
        OpaqueError::Body(_)
    ));
    assert_eq!(
        ids.decode("400000000000").unwrap_err().to_string(),
        "public ID under key version 4, which is not known here (known: [3])"
    );
    assert_eq!(
        OpaqueIds::new(62, &[0; 32]).unwrap_err(),
        OpaqueError::VersionRange { version: 62 }
    );
    assert_eq!(
        ids.with_retired_key(3, &[1; 32]).unwrap_err(),
        OpaqueError::DuplicateVersion { version: 3 }
    );
}

#[test]
fn rotation_keeps_old_strings_readable() {
    let old = OpaqueIds::new(1, &[1; 32]).unwrap();
    let before = old.encode(42).unwrap();
    let rotated = OpaqueIds::new(2, &[2; 32])
        .unwrap()
        .with_retired_key(1, &[1; 32])
        .unwrap();
    let after = rotated.encode(42).unwrap();
    assert!(after.starts_with('2'));
    assert_ne!(after[1..], before[1..]);
    assert_eq!(rotated.decode(&before).unwrap(), 42);
    assert_eq!(rotated.decode(&after).unwrap(), 42);
    assert_eq!(rotated.current_version(), 2);
}

#[test]
fn specs_are_read_and_refused_without_showing_keys() {
    let hex1 = "11".repeat(32);
    let hex2 = "ab".repeat(32);
    let ids = OpaqueIds::from_spec(&format!("2:{hex2}, 1:{hex1}")).unwrap();
    let from_lines = OpaqueIds::from_spec(&format!("2:{hex2}\n1:{hex1}\n")).unwrap();
    assert_eq!(from_lines.encode(9).unwrap(), ids.encode(9).unwrap());
    assert_eq!(ids.current_version(), 2);
    let same = OpaqueIds::new(2, &[0xab; 32]).unwrap();
    assert_eq!(ids.encode(7).unwrap(), same.encode(7).unwrap());
    assert_eq!(
        ids.decode(&OpaqueIds::new(1, &[0x11; 32]).unwrap().encode(7).unwrap())
            .unwrap(),
        7
    );
    let debug = format!("{ids:?}");
    assert!(!debug.contains(&hex2) && !debug.contains("171"), "{debug}");
    assert_eq!(
        debug,
        "OpaqueIds { current_version: 2, retired_versions: [1], .. }"
    );
    let secret = "5".repeat(63) + "g";
    for (spec, says) in [
        ("", "none given"),
        ("1", "not VERSION:HEX"),
        ("x:00", "key version \"x\" is not a number in 0..=61"),
        ("99:00", "key version \"99\""),
        (
            &format!("{hex1}:1"),
            "a key version of 64 characters is not a number",
        ),
        ("1:abcd", "key 1 has 4 hex digits; a key is 64 (32 bytes)"),
        (
            &format!("1:{secret}"),
            "key 1 has a character that is not a hex digit",
        ),
        (
            &format!("1:{hex1},1:{hex2}"),
            "key version 1 is given twice",
        ),
    ] {
        let err = OpaqueIds::from_spec(spec).unwrap_err().to_string();
        assert!(err.contains(says), "{spec:?}: {err}");
        assert!(
            !err.contains(&secret[..16]) && !err.contains(&hex1[..16]),
            "{err}"
        );
    }
}

/// Public IDs as the release whose FF1 was the `fpe` crate's made them (computed with
/// it, before `ff1.rs` replaced it): made again the same, and read back.
#[test]
fn public_ids_made_before_the_change_are_unchanged() {
    for (key, id, permuted) in [
        ([9u8; 32], 0, 8_348_971_059_066_783_210u64),
        ([9; 32], 1, 8_267_758_546_212_086_484),
        ([9; 32], MAX_ID, 205_647_960_935_542),
        (
            *b"uidgen opaque bench key 32 bytes",
            238_832_451_181_346_816,
            7_906_144_327_881_890_213,
        ),
        ([0xA5; 32], 123_456_789, 1_365_295_752_123_220_709),
    ] {
        let ids = OpaqueIds::new(1, &key).unwrap();
        assert_eq!(ids.permute(id).unwrap(), permuted, "{id}");
        let public = format!("1{}", IdFormat::Base62.encode(permuted));
        assert_eq!(ids.encode(id).unwrap(), public);
        assert_eq!(ids.decode(&public).unwrap(), id);
    }
    let ids = OpaqueIds::new(1, &[9; 32]).unwrap();
    assert_eq!(ids.encode(0).unwrap(), "19wkNJRh0az4");
    assert_eq!(ids.decode("1000wOXxGVSY").unwrap(), MAX_ID);
}

/// A small deterministic generator (SplitMix64), so a failure can be run again.
fn random_ids(seed: u64, n: usize) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) >> 1
        })
        .collect()
}

#[test]
fn the_same_permutation_as_fpe_both_ways_one_at_a_time_and_in_batches() {
    use fpe::ff1::{FlexibleNumeralString, FF1};
    let key = [0x3c; 32];
    let ids = OpaqueIds::new(0, &key).unwrap();
    let reference = FF1::<Aes256>::new(&key, RADIX).unwrap();
    let numerals = |value: u64| -> FlexibleNumeralString {
        let digits: Vec<u16> = (0..NUMERALS)
            .rev()
            .map(|i| ((value >> (i * NUMERAL_BITS)) & u64::from(RADIX - 1)) as u16)
            .collect();
        digits.into()
    };
    let value = |out: FlexibleNumeralString| -> u64 {
        Vec::<u16>::from(out)
            .into_iter()
            .fold(0, |acc, n| (acc << NUMERAL_BITS) | u64::from(n))
    };
    let mut sample = vec![0, 1, 2, MAX_ID, MAX_ID - 1, 1 << B_BITS, (1 << B_BITS) - 1];
    sample.extend(random_ids(0x5eed, 100_000));
    let mut batch = sample.clone();
    ids.permute_many(&mut batch).unwrap();
    let mut undone = sample.clone();
    ids.unpermute_many(0, &mut undone).unwrap();
    for ((&id, &permuted), &unpermuted) in sample.iter().zip(&batch).zip(&undone) {
        let encrypted = value(reference.encrypt(&[], &numerals(id)).unwrap());
        let decrypted = value(reference.decrypt(&[], &numerals(id)).unwrap());
        assert_eq!(ids.permute(id).unwrap(), encrypted, "permute({id})");
        assert_eq!(permuted, encrypted, "permute_many at {id}");
        assert_eq!(ids.unpermute(0, id).unwrap(), decrypted, "unpermute({id})");
        assert_eq!(unpermuted, decrypted, "unpermute_many at {id}");
    }
}

#[test]
fn batches_match_single_calls_and_refuse_whole() {
    let ids = ids();
    for n in [0, 1, 7, 8, 9, 16, 17, 100] {
        let sample = random_ids(n as u64, n);
        let publics = ids.encode_many(&sample).unwrap();
        let singles: Vec<String> = sample.iter().map(|&id| ids.encode(id).unwrap()).collect();
        assert_eq!(publics, singles);
        assert_eq!(ids.decode_many(&publics).unwrap(), sample);
    }
    // Strings under two keys, mixed: each read under its own.
    let rotated = OpaqueIds::new(4, &[4; 32])
        .unwrap()
        .with_retired_key(3, &[9; 32])
        .unwrap();
    let sample = random_ids(3, 20);
    let mixed: Vec<String> = sample
        .iter()
        .enumerate()
        .map(|(k, &id)| {
            if k % 3 == 0 {
                ids.encode(id).unwrap()
            } else {
                rotated.encode(id).unwrap()
            }
        })
        .collect();
    assert_eq!(rotated.decode_many(&mixed).unwrap(), sample);
    // One ID above 2^63 − 1 refuses the batch and changes nothing.
    let mut values = vec![5, MAX_ID + 1, 6, 7, 8, 9, 10, 11, 12];
    let before = values.clone();
    assert_eq!(
        ids.permute_many(&mut values).unwrap_err(),
        OpaqueError::AboveMax { id: MAX_ID + 1 }
    );
    assert_eq!(values, before);
    assert!(matches!(
        ids.decode_many(&["3abc"]).unwrap_err(),
        OpaqueError::Length { got: 4 }
    ));
}

/// Runs every vector of a file (`tgId tcId direction keyLen radix alphabet key tweak pt
/// ct` a line) through `ff1.rs` both ways; returns how many ran, and how many of those
/// took the whole-block round (the one the ID domain uses) rather than the general one.
fn run_vectors(file: &str, text: &str) -> (usize, usize) {
    use aes::{Aes128, Aes192};
    let hex = |s: &str| -> Vec<u8> {
        if s == "-" {
            return Vec::new();
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    let (mut ran, mut whole) = (0, 0);
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 10, "{file}: {line}");
        let (radix, alphabet): (u32, Vec<char>) = (f[4].parse().unwrap(), f[5].chars().collect());
        assert_eq!(alphabet.len(), radix as usize, "{file}: {line}");
        let numerals = |s: &str| -> Vec<u16> {
            s.chars()
                .map(|c| alphabet.iter().position(|&a| a == c).unwrap() as u16)
                .collect()
        };
        let text_of =
            |n: Vec<u16>| -> String { n.into_iter().map(|d| alphabet[usize::from(d)]).collect() };
        let (key, tweak, pt, ct) = (hex(f[6]), hex(f[7]), numerals(f[8]), numerals(f[9]));
        let (encrypted, decrypted) = match f[3] {
            "128" => {
                let ff1 = ff1::Ff1::new(Aes128::new(key.as_slice().into()), radix).unwrap();
                (ff1.encrypt(&tweak, &pt), ff1.decrypt(&tweak, &ct))
            }
            "192" => {
                let ff1 = ff1::Ff1::new(Aes192::new(key.as_slice().into()), radix).unwrap();
                (ff1.encrypt(&tweak, &pt), ff1.decrypt(&tweak, &ct))
            }
            "256" => {
                let ff1 = ff1::Ff1::new(Aes256::new(key.as_slice().into()), radix).unwrap();
                let params = ff1.params(pt.len()).unwrap();
                whole += usize::from(ff1.prefix(&params, &tweak).whole_block(&params).is_some());
                (ff1.encrypt(&tweak, &pt), ff1.decrypt(&tweak, &ct))
            }
            other => panic!("{file}: key length {other}"),
        };
        let id = format!("{file} group {} test {} ({})", f[0], f[1], f[2]);
        assert_eq!(text_of(encrypted.unwrap()), f[9], "{id}: encrypt");
        assert_eq!(text_of(decrypted.unwrap()), f[8], "{id}: decrypt");
        ran += 1;
    }
    (ran, whole)
}

#[test]
fn nist_samples_and_the_binary_vectors_fpe_carries_pass() {
    let (ran, whole) = run_vectors(
        "nist_and_fpe_ff1.txt",
        include_str!("vectors/nist_and_fpe_ff1.txt"),
    );
    assert_eq!(ran, 7);
    assert!(
        whole > 0 && whole < ran,
        "{whole} of {ran} took the whole-block round"
    );
}

#[test]
fn every_acvp_radix_64_vector_passes() {
    let (ran, whole) = run_vectors(
        "acvp_ff1_radix64.txt",
        include_str!("vectors/acvp_ff1_radix64.txt"),
    );
    assert_eq!(ran, 150);
    assert!(whole > 0, "{whole} of {ran} took the whole-block round");
}

#[test]
fn every_acvp_aes_256_vector_passes() {
    let (ran, whole) = run_vectors(
        "acvp_ff1_aes256.txt",
        include_str!("vectors/acvp_ff1_aes256.txt"),
    );
    assert_eq!(ran, 100);
    assert!(
        whole > 0 && whole < ran,
        "{whole} of {ran} took the whole-block round"
    );
}

#[test]
fn inputs_ff1_cannot_take_are_errors() {
    let ff1 = ff1::Ff1::new(Aes256::new(&[0u8; 32].into()), 10).unwrap();
    assert_eq!(ff1.encrypt(&[], &[1]).unwrap_err(), ff1::Ff1Error::Length);
    assert_eq!(
        ff1.encrypt(&[], &[1, 10]).unwrap_err(),
        ff1::Ff1Error::Numeral
    );
    // 10^37 > 2^120: a half too long for the u128 arithmetic.
    assert_eq!(
        ff1.encrypt(&[], &[0; 74]).unwrap_err(),
        ff1::Ff1Error::Length
    );
    assert!(ff1.encrypt(&[], &[0; 72]).is_ok());
    assert!(ff1::Ff1::new(Aes256::new(&[0u8; 32].into()), 1).is_err());
    assert!(ff1::Ff1::new(Aes256::new(&[0u8; 32].into()), 65_537).is_err());
}
