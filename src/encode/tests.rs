//! Known answers, edges and every error's words. Round trips of random IDs, fuzzing and
//! ordering are in `tests/encode.rs`.

use super::*;
use IdFormat::{Base32, Base62, Decimal, Hex};

const MAX: u64 = i64::MAX as u64;

#[test]
fn known_answers_at_the_edges() {
    let cases: [(IdFormat, u64, &str); 12] = [
        (Decimal, 0, "0"),
        (Decimal, MAX, "9223372036854775807"),
        (Decimal, u64::MAX, "18446744073709551615"),
        (Hex, 0, "0000000000000000"),
        (Hex, MAX, "7fffffffffffffff"),
        (Hex, u64::MAX, "ffffffffffffffff"),
        (Base62, 0, "00000000000"),
        (Base62, MAX, "AzL8n0Y58m7"),
        (Base62, u64::MAX, "LygHa16AHYF"),
        (Base32, 0, "0000000000000"),
        (Base32, MAX, "7ZZZZZZZZZZZZ"),
        (Base32, u64::MAX, "FZZZZZZZZZZZZ"),
    ];
    for (format, id, text) in cases {
        assert_eq!(format.encode(id), text, "{format} {id}");
        assert_eq!(format.display(id).to_string(), text);
        if id <= MAX {
            assert_eq!(format.decode(text), Ok(id), "{format} {text}");
            assert_eq!(decode_any(text), Ok(id), "{text}");
        }
    }
    // Every u64 is written; above 2^63 - 1 nothing is read.
    for format in IdFormat::ALL {
        let top = format.encode(MAX + 1);
        assert_eq!(
            format.decode(&top),
            Err(DecodeError::Overflow { format }),
            "{top}"
        );
        assert!(format.encode(u64::MAX).len() <= MAX_ENCODED_LEN);
    }
}

#[test]
fn lenient_where_the_form_allows() {
    assert_eq!(Hex.decode("7FFFFFFFFFFFFFFF"), Ok(MAX));
    assert_eq!(Hex.decode("0x1f"), Ok(31));
    assert_eq!(Hex.decode("0X7fffffffffffffff"), Ok(MAX));
    assert_eq!(Base32.decode("7zzzzzzzzzzzz"), Ok(MAX));
    assert_eq!(Base32.decode("OoOoOoOoOoOiL"), Ok(33)); // 0… then 1, 1
    assert_eq!(
        Base32.decode("0000000000001"),
        Base32.decode("000000000000l")
    );
    assert_eq!(Decimal.decode("0007"), Ok(7));
    assert_eq!(Decimal.decode(&format!("{}1", "0".repeat(10_000))), Ok(1));
    // Base62's case is its meaning: a and A are different digits.
    assert_eq!(Base62.decode("0000000000a"), Ok(36));
    assert_eq!(Base62.decode("0000000000A"), Ok(10));
}

#[test]
fn wrong_lengths_name_the_form_and_the_width() {
    let cases = [
        (
            Base62,
            "",
            "base62 ID: expected 11 characters, got 0 characters",
        ),
        (
            Base62,
            "z",
            "base62 ID: expected 11 characters, got 1 character",
        ),
        (
            Base32,
            "000000000000000",
            "base32 ID: expected 13 characters, got 15 characters",
        ),
        (
            Hex,
            "0x",
            "hex ID: expected 16 characters, or 0x and 1 to 16 hex digits, got 2 characters",
        ),
        (
            Hex,
            "0x00000000000000001",
            "hex ID: expected 16 characters, or 0x and 1 to 16 hex digits, got 19 characters",
        ),
        (
            Decimal,
            "",
            "decimal ID: expected 1 or more digits, got 0 characters",
        ),
        // Characters, not bytes: ten of them, fourteen bytes.
        (
            Base62,
            "ééé0000000",
            "base62 ID: expected 11 characters, got 10 characters",
        ),
    ];
    for (format, text, message) in cases {
        let err = format.decode(text).unwrap_err();
        assert_eq!(err.to_string(), message);
        assert_eq!(err.format(), Some(format));
    }
}

#[test]
fn bad_characters_are_named_with_their_index() {
    let cases = [
        (
            Base32,
            "000000000U000",
            "base32 ID: 'U' at index 9 is not a Crockford base32 digit (0-9 and A-Z but U, \
             any case; I and L read as 1, O as 0)",
        ),
        (
            Base62,
            "0000000000-",
            "base62 ID: '-' at index 10 is not a base62 digit (0-9, A-Z, a-z)",
        ),
        (
            Hex,
            "0x12g",
            "hex ID: 'g' at index 4 is not a hex digit (0-9, a-f, any case)",
        ),
        (
            Decimal,
            "-5",
            "decimal ID: '-' at index 0 is not a digit 0-9; IDs are never negative",
        ),
        (
            Decimal,
            "+5",
            "decimal ID: '+' at index 0 is not a digit 0-9",
        ),
        (
            Decimal,
            "12x",
            "decimal ID: 'x' at index 2 is not a digit 0-9",
        ),
        // White space is not trimmed.
        (
            Decimal,
            " 5",
            "decimal ID: ' ' at index 0 is not a digit 0-9",
        ),
        (
            Base62,
            "0000000000\n",
            "base62 ID: '\\n' at index 10 is not a base62 digit (0-9, A-Z, a-z)",
        ),
        // Not ASCII: named as a character, at its index in characters.
        (
            Base62,
            "0000é000000",
            "base62 ID: 'é' at index 4 is not a base62 digit (0-9, A-Z, a-z)",
        ),
        (
            Decimal,
            "12٣",
            "decimal ID: '٣' at index 2 is not a digit 0-9",
        ),
        // The first bad character, even when a non-ASCII one comes later.
        (
            Base62,
            "0!00é000000",
            "base62 ID: '!' at index 1 is not a base62 digit (0-9, A-Z, a-z)",
        ),
    ];
    for (format, text, message) in cases {
        assert_eq!(
            format.decode(text).unwrap_err().to_string(),
            message,
            "{text:?}"
        );
    }
    // A bad character wins over an overflow.
    assert!(matches!(
        Decimal.decode("99999999999999999999x"),
        Err(DecodeError::Char {
            found: 'x',
            index: 20,
            ..
        })
    ));
}

#[test]
fn overflow_says_the_sign_bit_is_never_set() {
    for (format, text) in [
        (Decimal, "9223372036854775808"),
        (Decimal, "99999999999999999999999"),
        (Hex, "8000000000000000"),
        (Hex, "0xffffffffffffffff"),
        (Base62, "AzL8n0Y58m8"),
        (Base62, "zzzzzzzzzzz"),
        (Base32, "8000000000000"),
        (Base32, "ZZZZZZZZZZZZZ"),
    ] {
        let message = format.decode(text).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "{format} ID: the value exceeds 2^63 - 1 = 9223372036854775807, the largest ID \
                 (IDs never set the sign bit)"
            ),
            "{text}"
        );
    }
}

#[test]
fn detect_follows_its_documented_rule() {
    let cases = [
        ("0x1", Some(Hex)),
        ("0x123456789", Some(Base62)), // 11 characters: base62 strings may start 0x
        ("0X00000000000", Some(Base32)), // 13: base32 strings may start 0X
        ("0x00000000000000", Some(Hex)), // 16, 0x and 14 digits
        ("0x0000000000000000", Some(Hex)),
        ("0Xabc", Some(Hex)),
        ("5", Some(Decimal)),
        ("12345678901", Some(Decimal)), // 11 digits: decimal, not base62
        ("1234567890123", Some(Decimal)), // 13: not base32
        ("1234567890123456", Some(Decimal)), // 16: not hex
        ("1234567890A", Some(Base62)),
        ("123456789012A", Some(Base32)),
        ("123456789012345a", Some(Hex)),
        ("ééééééééééé", Some(Base62)), // 11 characters (then refused by base62)
        ("", None),
        ("-5", None),
        ("12x", None),
        ("abcdefghijkl", None),
    ];
    for (text, form) in cases {
        assert_eq!(IdFormat::detect(text), form, "{text:?}");
    }
    assert_eq!(
        decode_any("12x").unwrap_err().to_string(),
        "not an ID in any form: 3 characters, not all digits; decimal is digits only, base62 \
         has 11 characters, base32 13, hex 16 (or 0x and 1 to 16 hex digits)"
    );
    assert_eq!(decode_any("0x00000000000000ff"), Ok(255));
    assert_eq!(decode_any("0x000000000000ff"), Ok(255));
    assert!(decode_any("")
        .unwrap_err()
        .to_string()
        .starts_with("empty, not an ID: "));
    assert_eq!(decode_any("").unwrap_err().format(), None);
    assert!(matches!(
        decode_any("ééééééééééé"),
        Err(DecodeError::Char {
            format: Base62,
            found: 'é',
            index: 0
        })
    ));
}

#[test]
fn decode_or_decimal_prefers_the_form_at_its_width() {
    assert_eq!(Base62.decode_or_decimal("00000000010"), Ok(62));
    assert_eq!(Base62.decode_or_decimal("10"), Ok(10));
    assert_eq!(Hex.decode_or_decimal("0x10"), Ok(16));
    assert_eq!(Hex.decode_or_decimal("0000000000000010"), Ok(16));
    assert_eq!(Hex.decode_or_decimal("10"), Ok(10));
    assert_eq!(Base32.decode_or_decimal("0000000000010"), Ok(32));
    // Neither the form nor decimal: the form's error, which names its width.
    assert_eq!(
        Base32.decode_or_decimal("abc").unwrap_err().to_string(),
        "base32 ID: expected 13 characters, got 3 characters"
    );
    assert!(matches!(
        Base32.decode_or_decimal("9223372036854775808"),
        Err(DecodeError::Overflow { format: Decimal })
    ));
}

#[test]
fn names_read_back_and_a_wrong_one_lists_them() {
    for format in IdFormat::ALL {
        assert_eq!(format.name().parse::<IdFormat>(), Ok(format));
        assert_eq!(format.to_string(), format.name());
    }
    assert_eq!(" Base62 ".parse::<IdFormat>(), Ok(Base62));
    assert_eq!(
        "base64".parse::<IdFormat>().unwrap_err().to_string(),
        "unknown ID format \"base64\": expected one of decimal, hex, base62, base32"
    );
    let long = "x".repeat(10_000).parse::<IdFormat>().unwrap_err();
    assert!(long.to_string().len() < 200);
    assert_eq!(format!("{:>8}", Hex), "     hex");
    assert_eq!(format!("{:>12}", Base62.display(1)), " 00000000001");
}

#[test]
fn encode_into_writes_no_more_than_the_form() {
    let mut buf = [b'#'; MAX_ENCODED_LEN];
    assert_eq!(Decimal.encode_into(42, &mut buf), "42");
    assert_eq!(Hex.encode_into(42, &mut buf), "000000000000002a");
    assert_eq!(Decimal.encode_into(0, &mut buf), "0");
}
