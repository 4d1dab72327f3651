//! Opaque public IDs: a keyed, reversible permutation of the 63-bit ID space, so an ID
//! shown outside (in a URL, on a receipt) reveals neither order, time, worker nor volume,
//! and the holder of the key maps it back.
//!
//! The permutation is FF1 (NIST SP 800-38G format-preserving encryption) with AES-256,
//! from the `fpe` crate: radix 2^9 with 7 numerals, so its domain is exactly the 2^63
//! IDs, every ID maps to another ID and back with no cycle walking. Nothing here is
//! hand-rolled cryptography; this module only splits an ID into numerals and joins
//! them again.
//!
//! The string form is 12 characters: one base62 character for the key version, then
//! the permuted ID in fixed-width base62 (11 characters). The version lets keys rotate:
//! new IDs go out under the current key, and strings under a retired key still read
//! back as long as [`OpaqueIds::with_retired_key`] keeps it.

mod error;
#[cfg(test)]
mod tests;

pub use error::OpaqueError;

use crate::encode::IdFormat;
use aes::Aes256;
use fpe::ff1::{FlexibleNumeralString, FF1};
use std::fmt;

/// The largest ID, and so the largest permuted value: IDs never set the sign bit.
const MAX_ID: u64 = i64::MAX as u64;
/// Bits per numeral: 9, so 7 numerals cover exactly 63 bits.
const NUMERAL_BITS: u32 = 9;
const NUMERALS: u32 = 63 / NUMERAL_BITS;
const RADIX: u32 = 1 << NUMERAL_BITS;
/// The key versions a string can carry: one base62 character.
pub const MAX_KEY_VERSION: u8 = 61;
/// The length of [`OpaqueIds::encode`]'s strings.
pub const OPAQUE_LEN: usize = 12;
/// A key's length: AES-256.
pub const OPAQUE_KEY_LEN: usize = 32;

const VERSION_DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

struct Key {
    version: u8,
    cipher: FF1<Aes256>,
}

/// Maps IDs to opaque public IDs and back, under one current key and any retired keys
/// still accepted for reading.
///
/// ```
/// # #[cfg(feature = "opaque")] {
/// use uidgen::OpaqueIds;
///
/// let key = [7u8; 32]; // in production: 32 random bytes kept secret
/// let ids = OpaqueIds::new(1, &key)?;
/// let public = ids.encode(1_234_567)?;
/// assert_eq!(public.len(), 12);
/// assert_eq!(ids.decode(&public)?, 1_234_567);
/// assert_ne!(ids.encode(1_234_568)?[..6], public[..6]); // neighbours look unrelated
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Keep the key secret and stable: whoever has it can map public IDs back, and a lost
/// key means public IDs handed out can no longer be read. `Debug` shows the key versions,
/// never a key.
pub struct OpaqueIds {
    /// The current key first, then retired keys.
    keys: Vec<Key>,
}

impl fmt::Debug for OpaqueIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpaqueIds")
            .field("current_version", &self.current_version())
            .field(
                "retired_versions",
                &self.keys[1..].iter().map(|k| k.version).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl OpaqueIds {
    /// Public IDs under `key`, tagged with `version` (0 to [`MAX_KEY_VERSION`]).
    pub fn new(version: u8, key: &[u8; OPAQUE_KEY_LEN]) -> Result<Self, OpaqueError> {
        Ok(Self {
            keys: vec![Key::new(version, key)?],
        })
    }

    /// Also reads strings made under a retired key `version` (new IDs still use the
    /// current key). A version already known is refused: two keys for one version would
    /// make its strings ambiguous.
    pub fn with_retired_key(
        mut self,
        version: u8,
        key: &[u8; OPAQUE_KEY_LEN],
    ) -> Result<Self, OpaqueError> {
        if self.keys.iter().any(|k| k.version == version) {
            return Err(OpaqueError::DuplicateVersion { version });
        }
        self.keys.push(Key::new(version, key)?);
        Ok(self)
    }

    /// Keys from text, as a service reads them from its environment or a file:
    /// `VERSION:HEX` entries (64 hex digits each) separated by commas or new lines, the
    /// current key first, e.g. `2:<64 hex>,1:<64 hex>`. Errors never show a key.
    pub fn from_spec(spec: &str) -> Result<Self, OpaqueError> {
        let mut entries = spec
            .split([',', '\n'])
            .map(str::trim)
            .filter(|e| !e.is_empty());
        let first = entries.next().ok_or(OpaqueError::NoKey)?;
        let (version, key) = parse_entry(first)?;
        let mut ids = Self::new(version, &key)?;
        for entry in entries {
            let (version, key) = parse_entry(entry)?;
            ids = ids.with_retired_key(version, &key)?;
        }
        Ok(ids)
    }

    /// The version new public IDs carry.
    pub fn current_version(&self) -> u8 {
        self.keys[0].version
    }

    /// `id` permuted under the current key: another number in `0..=2^63-1`, for callers
    /// that store the version apart (the string form carries it).
    pub fn permute(&self, id: u64) -> Result<u64, OpaqueError> {
        self.keys[0].permute(id)
    }

    /// The ID whose [`permute`](Self::permute) under key `version` is `value`.
    pub fn unpermute(&self, version: u8, value: u64) -> Result<u64, OpaqueError> {
        self.key(version)?.unpermute(value)
    }

    /// `id`'s public form under the current key: its version in one base62 character,
    /// then the permuted ID in 11 (12 characters, `[0-9A-Za-z]`, safe in URLs). An ID
    /// above 2^63 − 1 is refused.
    pub fn encode(&self, id: u64) -> Result<String, OpaqueError> {
        let key = &self.keys[0];
        let mut out = String::with_capacity(OPAQUE_LEN);
        out.push(char::from(VERSION_DIGITS[usize::from(key.version)]));
        out.push_str(&IdFormat::Base62.encode(key.permute(id)?));
        Ok(out)
    }

    /// The ID behind a public ID from [`encode`](Self::encode), under whichever known key
    /// its version names. A string of the wrong length or alphabet, or with a version
    /// this has no key for, is an error naming it; a string under a key other than the
    /// one its version names reads back as some other ID (the permutation cannot tell).
    pub fn decode(&self, public: &str) -> Result<u64, OpaqueError> {
        let version = Self::key_version(public)?;
        // The version is one ASCII character; the base62 body names any other.
        let value = IdFormat::Base62
            .decode(&public[1..])
            .map_err(OpaqueError::Body)?;
        self.unpermute(version, value)
    }

    /// The key version a public ID names (its first character), after checking its
    /// length; says nothing of whether the rest is valid.
    pub fn key_version(public: &str) -> Result<u8, OpaqueError> {
        let len = public.chars().count();
        if len != OPAQUE_LEN {
            return Err(OpaqueError::Length { got: len });
        }
        let first = public.chars().next().unwrap_or_default();
        VERSION_DIGITS
            .iter()
            .position(|&d| char::from(d) == first)
            .map(|v| v as u8)
            .ok_or(OpaqueError::VersionChar { found: first })
    }

    fn key(&self, version: u8) -> Result<&Key, OpaqueError> {
        self.keys
            .iter()
            .find(|k| k.version == version)
            .ok_or_else(|| OpaqueError::UnknownVersion {
                version,
                known: self.keys.iter().map(|k| k.version).collect(),
            })
    }
}

impl Key {
    fn new(version: u8, key: &[u8; OPAQUE_KEY_LEN]) -> Result<Self, OpaqueError> {
        if version > MAX_KEY_VERSION {
            return Err(OpaqueError::VersionRange { version });
        }
        // FF1::new fails only for a radix outside 2..=2^16; RADIX is 512.
        let cipher = FF1::<Aes256>::new(key, RADIX).map_err(|_| OpaqueError::Cipher)?;
        Ok(Self { version, cipher })
    }

    fn permute(&self, id: u64) -> Result<u64, OpaqueError> {
        if id > MAX_ID {
            return Err(OpaqueError::AboveMax { id });
        }
        let out = self
            .cipher
            .encrypt(&[], &to_numerals(id))
            .map_err(|_| OpaqueError::Cipher)?;
        Ok(from_numerals(out))
    }

    fn unpermute(&self, value: u64) -> Result<u64, OpaqueError> {
        if value > MAX_ID {
            return Err(OpaqueError::AboveMax { id: value });
        }
        let out = self
            .cipher
            .decrypt(&[], &to_numerals(value))
            .map_err(|_| OpaqueError::Cipher)?;
        Ok(from_numerals(out))
    }
}

/// `value` (below 2^63) as 7 numerals of 9 bits, most significant first.
fn to_numerals(value: u64) -> FlexibleNumeralString {
    let numerals: Vec<u16> = (0..NUMERALS)
        .rev()
        .map(|i| ((value >> (i * NUMERAL_BITS)) & u64::from(RADIX - 1)) as u16)
        .collect();
    FlexibleNumeralString::from(numerals)
}

fn from_numerals(numerals: FlexibleNumeralString) -> u64 {
    Vec::<u16>::from(numerals)
        .into_iter()
        .fold(0, |acc, n| (acc << NUMERAL_BITS) | u64::from(n))
}

fn parse_entry(entry: &str) -> Result<(u8, [u8; OPAQUE_KEY_LEN]), OpaqueError> {
    let (version, hex) = entry.split_once(':').ok_or(OpaqueError::Spec {
        problem: "an entry is not VERSION:HEX".into(),
    })?;
    let version: u8 = version
        .trim()
        .parse()
        .ok()
        .filter(|v| *v <= MAX_KEY_VERSION)
        .ok_or_else(|| OpaqueError::Spec {
            // Two characters at most are shown: a key written first by mistake must not.
            problem: match version.trim() {
                short if short.chars().count() <= 2 => {
                    format!("key version {short:?} is not a number in 0..={MAX_KEY_VERSION}")
                }
                long => format!(
                    "a key version of {} characters is not a number in 0..={MAX_KEY_VERSION} \
                     (VERSION comes first, then ':' and the key)",
                    long.chars().count()
                ),
            },
        })?;
    let hex = hex.trim().as_bytes();
    if hex.len() != 2 * OPAQUE_KEY_LEN {
        return Err(OpaqueError::Spec {
            problem: format!(
                "key {version} has {} hex digits; a key is {} (32 bytes)",
                hex.len(),
                2 * OPAQUE_KEY_LEN
            ),
        });
    }
    let mut key = [0u8; OPAQUE_KEY_LEN];
    for (byte, pair) in key.iter_mut().zip(hex.chunks(2)) {
        let digit = |c: u8| char::from(c).to_digit(16);
        match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => *byte = (hi * 16 + lo) as u8,
            _ => {
                return Err(OpaqueError::Spec {
                    problem: format!("key {version} has a character that is not a hex digit"),
                })
            }
        }
    }
    Ok((version, key))
}
