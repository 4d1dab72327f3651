//! IDs as the outside world meets them: strings in decimal, hex, base62 and Crockford
//! base32, read back with errors that name the form, the problem and the limit.
//!
//! The fixed-width forms (hex 16, base62 11, base32 13 characters, zeros in front) sort
//! as the numbers do, so they keep an ID's time order in a string column or a file
//! sorted by `sort`. [`decode_any`] reads a string in whichever form it is in (the rule:
//! [`IdFormat::detect`]); with the `serde` feature, [`serde_as`] writes `u64` fields as
//! strings.

mod codec;
mod error;
mod form;
mod radix;
#[cfg(feature = "serde")]
pub mod serde_as;
#[cfg(test)]
mod tests;

pub use codec::{decode_any, Encoded, MAX_ENCODED_LEN};
pub use error::{DecodeError, ParseFormatError};
pub use form::IdFormat;
