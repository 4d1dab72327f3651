//! Why an opaque ID could not be made or read, or a key not taken. No variant holds a key.

use crate::encode::DecodeError;

/// Why [`OpaqueIds`](super::OpaqueIds) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpaqueError {
    /// The ID (or permuted value) is above 2^63 − 1, the largest ID.
    #[error("ID {id} is above 2^63 - 1 = {}, the largest ID", i64::MAX)]
    AboveMax {
        /// The number given.
        id: u64,
    },
    /// A key version above 61 (the string form has one base62 character for it).
    #[error("key version {version} is out of range: 0..=61 (one base62 character)")]
    VersionRange {
        /// The version given.
        version: u8,
    },
    /// Two keys for one version.
    #[error("key version {version} is given twice; each version names one key")]
    DuplicateVersion {
        /// The version given twice.
        version: u8,
    },
    /// A public ID whose version has no key here (retired and dropped, or never known).
    #[error("public ID under key version {version}, which is not known here (known: {known:?})")]
    UnknownVersion {
        /// The version the string names.
        version: u8,
        /// The versions known, current first.
        known: Vec<u8>,
    },
    /// A public ID of the wrong length.
    #[error("public ID: expected 12 characters (key version, then 11 base62), got {got}")]
    Length {
        /// Characters given.
        got: usize,
    },
    /// A first character that is not a base62 digit.
    #[error("public ID: the key version {found:?} is not a base62 digit (0-9, A-Z, a-z)")]
    VersionChar {
        /// The character found.
        found: char,
    },
    /// The 11 characters after the version are no base62 ID.
    #[error("public ID, after the key version: {0}")]
    Body(#[source] DecodeError),
    /// Keys given as text could not be read.
    #[error("opaque ID keys: {problem}; expected VERSION:HEX entries (64 hex digits), current key first")]
    Spec {
        /// What is wrong, never showing a key.
        problem: String,
    },
    /// No key in the text.
    #[error("opaque ID keys: none given; expected VERSION:HEX entries (64 hex digits)")]
    NoKey,
    /// The cipher refused (not expected: the numerals are always in range).
    #[error("the FF1 cipher refused the numerals")]
    Cipher,
}
