//! IDs as strings in JSON (or any serde format), for `#[serde(with = "…")]` on a `u64`
//! field (feature `serde`).
//!
//! JavaScript reads numbers as 64-bit floats, exact only up to 2^53, so an ID sent as a
//! JSON number comes back wrong in a browser. Each module here writes the ID as a string
//! in one form and reads a string in that form or in decimal, or a number, so a field can
//! change from a number to a string without breaking old data.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Order {
//!     #[serde(with = "uidgen::serde_as::decimal_string")]
//!     id: u64,
//!     #[serde(with = "uidgen::serde_as::base62")]
//!     customer: u64,
//! }
//!
//! let order = Order { id: 241_187_831_286_865_920, customer: 61 };
//! let json = serde_json::to_string(&order)?;
//! assert_eq!(json, r#"{"id":"241187831286865920","customer":"0000000000z"}"#);
//! assert_eq!(serde_json::from_str::<Order>(&json)?, order);
//!
//! // Also read: a number, or a decimal string in a base62 field.
//! let old = r#"{"id":241187831286865920,"customer":"61"}"#;
//! assert_eq!(serde_json::from_str::<Order>(old)?, order);
//!
//! // Refused, with the reason: the sign bit, a bad character, a negative number.
//! let err = serde_json::from_str::<Order>(r#"{"id":"9223372036854775808","customer":1}"#);
//! assert!(err.unwrap_err().to_string().contains("exceeds 2^63 - 1"));
//! let err = serde_json::from_str::<Order>(r#"{"id":1,"customer":"0000000000!"}"#);
//! assert!(err.unwrap_err().to_string().contains("'!' at index 10"));
//! assert!(serde_json::from_str::<Order>(r#"{"id":-1,"customer":1}"#).is_err());
//! # Ok::<(), serde_json::Error>(())
//! ```

use super::codec::MAX_ENCODED_LEN;
use super::form::IdFormat;
use super::radix::MAX_ID;
use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;

fn serialize<S: Serializer>(format: IdFormat, id: u64, serializer: S) -> Result<S::Ok, S::Error> {
    let mut buf = [0; MAX_ENCODED_LEN];
    serializer.serialize_str(format.encode_into(id, &mut buf))
}

fn deserialize<'de, D: Deserializer<'de>>(
    format: IdFormat,
    deserializer: D,
) -> Result<u64, D::Error> {
    // A format that cannot say what comes next (bincode) gets the string it was given.
    if deserializer.is_human_readable() {
        deserializer.deserialize_any(IdVisitor(format))
    } else {
        deserializer.deserialize_str(IdVisitor(format))
    }
}

/// Reads a string in its form or decimal, or an integer, into an ID.
struct IdVisitor(IdFormat);

impl Visitor<'_> for IdVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdFormat::Decimal => write!(f, "an ID: a decimal string or an integer in 0..={MAX_ID}"),
            other => write!(
                f,
                "an ID: a {other} or decimal string, or an integer in 0..={MAX_ID}"
            ),
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
        self.0.decode_or_decimal(text).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, id: u64) -> Result<u64, E> {
        if id <= MAX_ID {
            Ok(id)
        } else {
            Err(E::custom(format_args!(
                "ID {id} exceeds 2^63 - 1 = {MAX_ID}, the largest ID (IDs never set the sign bit)"
            )))
        }
    }

    fn visit_i64<E: de::Error>(self, id: i64) -> Result<u64, E> {
        u64::try_from(id).map_err(|_| E::custom(format_args!("ID {id}: IDs are never negative")))
    }
}

macro_rules! form_module {
    ($(#[$doc:meta])* $name:ident, $format:expr) => {
        $(#[$doc])*
        pub mod $name {
            use super::IdFormat;
            use serde::{Deserializer, Serializer};

            /// Writes the ID as a string in this module's form.
            pub fn serialize<S: Serializer>(id: &u64, serializer: S) -> Result<S::Ok, S::Error> {
                super::serialize($format, *id, serializer)
            }

            /// Reads a string in this module's form or in decimal, or an integer; refuses
            /// anything above 2^63 − 1.
            pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
                super::deserialize($format, deserializer)
            }
        }
    };
}

form_module!(
    /// The ID as a decimal string, `"241187831286865920"`; reads that or a number.
    decimal_string,
    IdFormat::Decimal
);
form_module!(
    /// The ID as 16 lower-case hex digits, `"0358df0e00002000"`; reads that (any case, or
    /// `0x` and 1 to 16 digits), a decimal string or a number.
    hex,
    IdFormat::Hex
);
form_module!(
    /// The ID as 11 base62 characters, `"0Hodr1ScMMa"`; reads that, a decimal string or
    /// a number.
    base62,
    IdFormat::Base62
);
form_module!(
    /// The ID as 13 Crockford base32 characters, `"06P6Z1R000800"`; reads that (any case,
    /// Crockford's aliases), a decimal string or a number.
    base32,
    IdFormat::Base32
);
