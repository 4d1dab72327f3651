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
