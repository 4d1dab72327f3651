//! [`IdFormat`]'s four forms written and read, on the one mechanism in `radix.rs`.

use super::error::{DecodeError, ParseFormatError};
use super::form::IdFormat;
use super::radix::{self, Alphabet, Unreadable};
use std::fmt;
use std::str::FromStr;

/// The longest string any form writes: 20 decimal digits (`u64::MAX`).
pub const MAX_ENCODED_LEN: usize = 20;

impl IdFormat {
    fn alphabet(self) -> &'static Alphabet {
        match self {
            IdFormat::Decimal => &radix::DECIMAL,
            IdFormat::Hex => &radix::HEX,
            IdFormat::Base62 => &radix::BASE62,
            IdFormat::Base32 => &radix::BASE32,
        }
    }

    /// `id` in this form.
    pub fn encode(self, id: u64) -> String {
        let mut buf = [0; MAX_ENCODED_LEN];
        self.encode_into(id, &mut buf).to_owned()
    }

    /// `id` in this form, written into `buf` with no allocation; the string is the end
    /// of `buf`.
    ///
    /// ```
    /// use uidgen::{IdFormat, MAX_ENCODED_LEN};
    ///
    /// let mut buf = [0; MAX_ENCODED_LEN];
    /// assert_eq!(IdFormat::Base62.encode_into(61, &mut buf), "0000000000z");
    /// ```
    pub fn encode_into(self, id: u64, buf: &mut [u8; MAX_ENCODED_LEN]) -> &str {
        let start = radix::encode(self.alphabet(), id, self.width().unwrap_or(1), buf);
        // Every alphabet is ASCII, so this never fails.
        std::str::from_utf8(&buf[start..]).unwrap_or_default()
    }

    /// `id` in this form as a [`Display`](fmt::Display) value, written with no
    /// allocation: `format!("{}", IdFormat::Hex.display(id))`.
    pub fn display(self, id: u64) -> Encoded {
        Encoded { format: self, id }
    }

    /// Reads an ID written in this form (see the type's docs for what is accepted).
    pub fn decode(self, text: &str) -> Result<u64, DecodeError> {
        let format = self;
        let (prefix, digits) = match self {
            IdFormat::Hex => match text.get(..2) {
                Some("0x" | "0X") => (2, &text[2..]),
                _ => (0, text),
            },
            _ => (0, text),
        };
        let len = char_len(digits);
        let fits = match self.width() {
            Some(width) if prefix > 0 => (1..=width).contains(&len),
            Some(width) => len == width,
            None => len > 0,
        };
        if !fits {
            return Err(DecodeError::Length {
                format,
                got: char_len(text),
            });
        }
        let alphabet = self.alphabet();
        if !digits.is_ascii() {
            // Some character is not ASCII: report the first one that is no digit.
            let (index, found) = digits
                .chars()
                .enumerate()
                .find(|&(_, c)| !c.is_ascii() || alphabet.value(c as u8).is_none())
                .unwrap_or((0, '\u{fffd}'));
            return Err(DecodeError::Char {
                format,
                found,
                index: prefix + index,
            });
        }
        radix::decode(alphabet, digits.as_bytes()).map_err(|why| match why {
            Unreadable::Byte(index) => DecodeError::Char {
                format,
                found: char::from(digits.as_bytes()[index]),
                index: prefix + index,
            },
            Unreadable::Overflow => DecodeError::Overflow { format },
        })
    }

    /// Reads an ID written in this form, or in decimal: what a field that writes this form
    /// accepts (the serde helpers in [`serde_as`](crate::serde_as) read strings so). A
    /// string of this form's width, or hex's `0x`, is read in this form, even when it is
    /// all digits; another string of digits only is read as decimal.
    ///
    /// ```
    /// use uidgen::IdFormat;
    ///
    /// assert_eq!(IdFormat::Base62.decode_or_decimal("0000000000z")?, 61);
    /// assert_eq!(IdFormat::Base62.decode_or_decimal("61")?, 61);
    /// assert_eq!(IdFormat::Base62.decode_or_decimal("00000000010")?, 62); // 11 characters: base62
    /// # Ok::<(), uidgen::DecodeError>(())
    /// ```
    pub fn decode_or_decimal(self, text: &str) -> Result<u64, DecodeError> {
        let own = self.width().is_none_or(|width| char_len(text) == width)
            || (self == IdFormat::Hex && matches!(text.get(..2), Some("0x" | "0X")));
        if !own && is_decimal(text) {
            IdFormat::Decimal.decode(text)
        } else {
            self.decode(text)
        }
    }

    /// The form a string is read in by [`decode_any`](super::decode_any), the rule `uidgen
    /// parse` follows, in this order:
    ///
    /// 1. Digits only: decimal, whatever the length. So IDs written as decimal keep their
    ///    meaning, but a fixed-width string that happens to be digits only (an 11-digit
    ///    string is valid base62, a 16-digit one valid hex) is read as decimal.
    /// 2. By length, in characters: 11 is base62, 13 base32, 16 hex. What `encode` writes
    ///    is always read back in its own form, unless it is digits only (rule 1).
    /// 3. `0x` or `0X` in front, at another length: hex (`0x1f`). Not at 11 or 13
    ///    characters, where base62 and base32 strings may start so.
    /// 4. Anything else: `None`.
    ///
    /// Where digit-only fixed-width strings may come (small IDs in hex are mostly
    /// digits), name the form instead: [`IdFormat::decode`], `uidgen parse --format`.
    ///
    /// ```
    /// use uidgen::IdFormat;
    ///
    /// assert_eq!(IdFormat::detect("0Hodr1ScMMa"), Some(IdFormat::Base62));
    /// assert_eq!(IdFormat::detect("06P6Z1R000800"), Some(IdFormat::Base32));
    /// assert_eq!(IdFormat::detect("0358df0e00002000"), Some(IdFormat::Hex));
    /// assert_eq!(IdFormat::detect("0x1f"), Some(IdFormat::Hex));
    /// assert_eq!(IdFormat::detect("0xAzL8n0Y58"), Some(IdFormat::Base62)); // 11 characters
    /// assert_eq!(IdFormat::detect("12345678901"), Some(IdFormat::Decimal)); // not base62
    /// assert_eq!(IdFormat::detect("12x"), None);
    /// ```
    pub fn detect(text: &str) -> Option<IdFormat> {
        if is_decimal(text) {
            return Some(IdFormat::Decimal);
        }
        match char_len(text) {
            11 => Some(IdFormat::Base62),
            13 => Some(IdFormat::Base32),
            16 => Some(IdFormat::Hex),
            _ if matches!(text.get(..2), Some("0x" | "0X")) => Some(IdFormat::Hex),
            _ => None,
        }
    }
}

/// Reads an ID in whichever form [`IdFormat::detect`] finds: digits only are decimal;
/// then 11 characters base62, 13 base32, 16 hex; then `0x…` hex.
///
/// ```
/// use uidgen::decode_any;
///
/// for text in ["241187831286865920", "0Hodr1ScMMa", "06P6Z1R000800", "0358df0e00002000"] {
///     assert_eq!(decode_any(text)?, 241_187_831_286_865_920);
/// }
/// assert!(decode_any("12x").unwrap_err().to_string().contains("not an ID in any form"));
/// # Ok::<(), uidgen::DecodeError>(())
/// ```
pub fn decode_any(text: &str) -> Result<u64, DecodeError> {
    match IdFormat::detect(text) {
        Some(format) => format.decode(text),
        None => Err(DecodeError::Unrecognized {
            len: char_len(text),
        }),
    }
}

/// Not empty, and ASCII digits only.
fn is_decimal(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Its length in characters (the bytes, when all are ASCII).
fn char_len(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

impl FromStr for IdFormat {
    type Err = ParseFormatError;

    /// `decimal`, `hex`, `base62` or `base32`, in any case, white space around ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IdFormat::ALL
            .into_iter()
            .find(|format| format.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseFormatError {
                given: s.chars().take(64).collect(),
            })
    }
}

/// An ID in a form, for `{}`: from [`IdFormat::display`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    format: IdFormat,
    id: u64,
}

impl fmt::Display for Encoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0; MAX_ENCODED_LEN];
        f.pad(self.format.encode_into(self.id, &mut buf))
    }
}
