//! Why a string is no ID, or no form's name.

use super::form::IdFormat;
use super::radix::MAX_ID;
use std::fmt;

/// Why a string could not be read as an ID. Each names the form, the problem and the
/// limit; none holds the input, which the caller has (and may want to show cut short).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Too many or too few characters for the form (counted in characters, not bytes).
    #[error("{format} ID: expected {}, got {}", Expected(*format), plural(*got, "character"))]
    Length {
        /// The form it was read in.
        format: IdFormat,
        /// How many characters were given.
        got: usize,
    },
    /// A character that is not in the form's alphabet.
    #[error("{format} ID: {found:?} at index {index} is not {}{}", Alphabet(*format), Negative(*format, *found, *index))]
    Char {
        /// The form it was read in.
        format: IdFormat,
        /// The first character that is not in the alphabet.
        found: char,
        /// Where it is, in characters from 0 (a `0x` prefix counted).
        index: usize,
    },
    /// The number is above 2^63 − 1, the largest ID.
    #[error(
        "{format} ID: the value exceeds 2^63 - 1 = {MAX_ID}, the largest ID \
         (IDs never set the sign bit)"
    )]
    Overflow {
        /// The form it was read in.
        format: IdFormat,
    },
    /// [`decode_any`](super::decode_any) found no form it could be in.
    #[error("{}", Unrecognized(*len))]
    Unrecognized {
        /// How many characters were given.
        len: usize,
    },
}

impl DecodeError {
    /// The form the string was read in; `None` when no form was recognized.
    pub fn format(&self) -> Option<IdFormat> {
        match self {
            DecodeError::Length { format, .. }
            | DecodeError::Char { format, .. }
            | DecodeError::Overflow { format } => Some(*format),
            DecodeError::Unrecognized { .. } => None,
        }
    }
}

/// A name that is not one of [`IdFormat::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ID format {given:?}: expected one of decimal, hex, base62, base32")]
pub struct ParseFormatError {
    /// The name as given (cut to 64 characters).
    pub given: String,
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// What a form's length must be.
struct Expected(IdFormat);

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.0.width()) {
            (IdFormat::Hex, Some(width)) => {
                write!(f, "{width} characters, or 0x and 1 to {width} hex digits")
            }
            (_, Some(width)) => write!(f, "{width} characters"),
            (_, None) => f.write_str("1 or more digits"),
        }
    }
}

/// A form's alphabet, in words.
struct Alphabet(IdFormat);

impl fmt::Display for Alphabet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            IdFormat::Decimal => "a digit 0-9",
            IdFormat::Hex => "a hex digit (0-9, a-f, any case)",
            IdFormat::Base62 => "a base62 digit (0-9, A-Z, a-z)",
            IdFormat::Base32 => {
                "a Crockford base32 digit (0-9 and A-Z but U, any case; I and L read as 1, O as 0)"
            }
        })
    }
}

/// A minus sign in front of a decimal, said in words.
struct Negative(IdFormat, char, usize);

impl fmt::Display for Negative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Negative(IdFormat::Decimal, '-', 0) => f.write_str("; IDs are never negative"),
            _ => Ok(()),
        }
    }
}

/// `decode_any`'s refusal: what each form looks like.
struct Unrecognized(usize);

impl fmt::Display for Unrecognized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let forms = "decimal is digits only, base62 has 11 characters, base32 13, \
                     hex 16 (or 0x and 1 to 16 hex digits)";
        match self.0 {
            0 => write!(f, "empty, not an ID: {forms}"),
            len => write!(
                f,
                "not an ID in any form: {}, not all digits; {forms}",
                plural(len, "character")
            ),
        }
    }
}
