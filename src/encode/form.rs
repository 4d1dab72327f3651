//! [`IdFormat`]: which string form, its name and width. Writing and reading are in
//! `codec.rs`.

use std::fmt;

/// A string form of an ID.
///
/// | form | width | alphabet | 2^63 − 1 |
/// |---|---|---|---|
/// | `Decimal` | as many digits as needed | `0-9` | `9223372036854775807` |
/// | `Hex` | 16, zeros in front | `0-9 a-f`, lower case | `7fffffffffffffff` |
/// | `Base62` | 11, zeros in front | `0-9 A-Z a-z` (ASCII order) | `AzL8n0Y58m7` |
/// | `Base32` | 13, zeros in front | Crockford's `0-9 A-Z` without `I L O U` | `7ZZZZZZZZZZZZ` |
///
/// The three fixed-width forms sort as the numbers do: for IDs `a < b`,
/// `encode(a) < encode(b)` as strings (byte order, as a database or `sort` compares
/// them). Decimal sorts so only among IDs of the same number of digits.
///
/// Reading is exact about length and alphabet, and lenient where the form allows:
/// hex and base32 in any case, base32 with Crockford's aliases (`O` as 0, `I` and `L`
/// as 1), hex also as `0x` and 1 to 16 digits, decimal with leading zeros. White space is
/// an error (trim first if your input may carry it). Every `u64` can be encoded, but no
/// string above 2^63 − 1 is read: IDs never set the sign bit.
///
/// ```
/// use uidgen::IdFormat;
///
/// let id = 241_187_831_286_865_920;
/// assert_eq!(IdFormat::Base62.encode(id), "0Hodr1ScMMa");
/// assert_eq!(IdFormat::Base32.encode(id), "06P6Z1R000800");
/// assert_eq!(IdFormat::Hex.encode(id), "0358df0e00002000");
/// assert_eq!(IdFormat::Base32.decode("o6p6zlr0oo8oo")?, id); // any case, O as 0, L as 1
///
/// let err = IdFormat::Base62.decode("0Hodr1ScMM").unwrap_err();
/// assert_eq!(err.to_string(), "base62 ID: expected 11 characters, got 10 characters");
/// # Ok::<(), uidgen::DecodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum IdFormat {
    /// Decimal digits, no leading zeros: `uidgen`'s and UidGenerator's usual form.
    #[default]
    Decimal,
    /// 16 lower-case hex digits.
    Hex,
    /// 11 characters of `0-9 A-Z a-z`.
    Base62,
    /// 13 characters of Crockford's base32.
    Base32,
}

impl IdFormat {
    /// Every form, in the order their names are listed.
    pub const ALL: [IdFormat; 4] = [
        IdFormat::Decimal,
        IdFormat::Hex,
        IdFormat::Base62,
        IdFormat::Base32,
    ];

    /// Its name: `decimal`, `hex`, `base62` or `base32`, as `str::parse` reads it.
    pub const fn name(self) -> &'static str {
        match self {
            IdFormat::Decimal => "decimal",
            IdFormat::Hex => "hex",
            IdFormat::Base62 => "base62",
            IdFormat::Base32 => "base32",
        }
    }

    /// How many characters it always writes: `None` for decimal, which writes as many as
    /// the number needs.
    pub const fn width(self) -> Option<usize> {
        match self {
            IdFormat::Decimal => None,
            IdFormat::Hex => Some(16),
            IdFormat::Base62 => Some(11),
            IdFormat::Base32 => Some(13),
        }
    }
}

impl fmt::Display for IdFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}
