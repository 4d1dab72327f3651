//! Opaque public IDs: a keyed, reversible permutation of the 63-bit ID space, so an ID
//! shown outside (in a URL, on a receipt) reveals neither order, time, worker nor volume,
//! and the holder of the key maps it back.
//!
//! The permutation is FF1 (NIST SP 800-38G format-preserving encryption) with AES-256 on
//! radix 2^9 with 7 numerals, so its domain is exactly the 2^63 IDs: every ID maps to
//! another ID and back with no cycle walking. FF1 is specialised here (`ff1.rs`, which
//! says why) on the `aes` crate's AES: about ten AES blocks per ID, where the `fpe` crate
//! that made the first public IDs spent 30 times that; its output is the same, bit for
//! bit (a differential test runs `fpe` beside it). An ID's 63 bits are FF1's numerals
//! directly: the first 3 (27 bits) are `A`, the last 4 (36 bits) are `B`.
//!
//! The string form is 12 characters: one base62 character for the key version, then
//! the permuted ID in fixed-width base62 (11 characters). The version lets keys rotate:
//! new IDs go out under the current key, and strings under a retired key still read
//! back as long as [`OpaqueIds::with_retired_key`] keeps it.

mod error;
mod ff1;
#[cfg(test)]
mod tests;

pub use error::OpaqueError;

use crate::encode::IdFormat;
use aes::cipher::KeyInit;
use aes::Aes256;
use ff1::{Ff1, WholeBlock};
use std::fmt;

/// The largest ID, and so the largest permuted value: IDs never set the sign bit.
const MAX_ID: u64 = i64::MAX as u64;
/// Bits per numeral: 9, so 7 numerals cover exactly 63 bits.
const NUMERAL_BITS: u32 = 9;
const NUMERALS: u32 = 63 / NUMERAL_BITS;
const RADIX: u32 = 1 << NUMERAL_BITS;
/// The bits of FF1's right half `B` (its last ⌈7/2⌉ = 4 numerals).
const B_BITS: u32 = NUMERAL_BITS * (NUMERALS - NUMERALS / 2);
/// IDs taken through AES together by the batch calls (AES-NI pipelines eight blocks).
const LANES: usize = 8;
/// The key versions a string can carry: one base62 character.
pub const MAX_KEY_VERSION: u8 = 61;
/// The length of [`OpaqueIds::encode`]'s strings.
pub const OPAQUE_LEN: usize = 12;
/// A key's length: AES-256.
pub const OPAQUE_KEY_LEN: usize = 32;

const VERSION_DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

struct Key {
    version: u8,
    ff1: Ff1<Aes256>,
    /// The CBC-MAC's fixed part for the empty tweak, computed once per key.
    prefix: WholeBlock,
}

/// `radix^m − 1` of each round: `m = u` (3 numerals, 27 bits) in even rounds, `v` (4, 36
/// bits) in odd ones. A power-of-two modulus: reducing is masking.
const fn round_mask(i: u8) -> u128 {
    let numerals = if i.is_multiple_of(2) {
        NUMERALS / 2
    } else {
        NUMERALS - NUMERALS / 2
    };
    (1 << (NUMERAL_BITS * numerals)) - 1
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

    /// [`permute`](Self::permute) of each ID in place, eight at a time through AES. An ID
    /// above 2^63 − 1 is refused, and then nothing is changed.
    pub fn permute_many(&self, ids: &mut [u64]) -> Result<(), OpaqueError> {
        self.keys[0].map_many(ids, false)
    }

    /// [`unpermute`](Self::unpermute) of each value in place under key `version`, eight
    /// at a time; a value above 2^63 − 1 is refused, and then nothing is changed.
    pub fn unpermute_many(&self, version: u8, values: &mut [u64]) -> Result<(), OpaqueError> {
        self.key(version)?.map_many(values, true)
    }

    /// [`encode`](Self::encode) of each ID, the permutations done eight at a time.
    pub fn encode_many(&self, ids: &[u64]) -> Result<Vec<String>, OpaqueError> {
        let mut values = ids.to_vec();
        self.permute_many(&mut values)?;
        let version = char::from(VERSION_DIGITS[usize::from(self.keys[0].version)]);
        Ok(values
            .into_iter()
            .map(|value| {
                let mut out = String::with_capacity(OPAQUE_LEN);
                out.push(version);
                out.push_str(&IdFormat::Base62.encode(value));
                out
            })
            .collect())
    }

    /// [`decode`](Self::decode) of each public ID (under whichever keys their versions
    /// name), the permutations done eight at a time per key; the first bad string is the
    /// error.
    pub fn decode_many<S: AsRef<str>>(&self, publics: &[S]) -> Result<Vec<u64>, OpaqueError> {
        let mut read = Vec::with_capacity(publics.len());
        for public in publics {
            let public = public.as_ref();
            let version = Self::key_version(public)?;
            self.key(version)?;
            let value = IdFormat::Base62
                .decode(&public[1..])
                .map_err(OpaqueError::Body)?;
            read.push((version, check(value)?));
        }
        let mut out = vec![0u64; read.len()];
        for key in &self.keys {
            let (places, mut values): (Vec<usize>, Vec<u64>) = read
                .iter()
                .enumerate()
                .filter(|(_, (version, _))| *version == key.version)
                .map(|(place, (_, value))| (place, *value))
                .unzip();
            key.map_many(&mut values, true)?;
            for (place, id) in places.into_iter().zip(values) {
                out[place] = id;
            }
        }
        Ok(out)
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
        let ff1 = Ff1::new(Aes256::new(key.into()), RADIX).map_err(|_| OpaqueError::Cipher)?;
        let params = ff1
            .params(NUMERALS as usize)
            .map_err(|_| OpaqueError::Cipher)?;
        // b = 5, d = 12: `[i] || NUM(B)` and the ten zeros before it fill one block.
        let prefix = ff1
            .prefix(&params, &[])
            .whole_block(&params)
            .ok_or(OpaqueError::Cipher)?;
        Ok(Self {
            version,
            ff1,
            prefix,
        })
    }

    /// FF1.Encrypt (Algorithm 7) of the ID's numerals, on their bits.
    fn permute(&self, id: u64) -> Result<u64, OpaqueError> {
        self.map_one(id, false)
    }

    /// FF1.Decrypt (Algorithm 8).
    fn unpermute(&self, value: u64) -> Result<u64, OpaqueError> {
        self.map_one(value, true)
    }

    fn map_one(&self, value: u64, back: bool) -> Result<u64, OpaqueError> {
        let (a, b) = split(check(value)?);
        let (mut a, mut b) = ([a], [b]);
        self.feistel(&mut a, &mut b, back);
        Ok(join(a[0], b[0]))
    }

    /// The ten rounds over `K` IDs' halves at once (their AES blocks side by side):
    /// Algorithm 7, or with `back` Algorithm 8.
    fn feistel<const K: usize>(&self, a: &mut [u128; K], b: &mut [u128; K], back: bool) {
        for round in 0..10u8 {
            if back {
                let i = 9 - round;
                let ys = self.ff1.whole_rounds(&self.prefix, i, a);
                for k in 0..K {
                    (b[k], a[k]) = (a[k], b[k].wrapping_sub(ys[k]) & round_mask(i));
                }
            } else {
                let ys = self.ff1.whole_rounds(&self.prefix, round, b);
                for k in 0..K {
                    (a[k], b[k]) = (b[k], a[k].wrapping_add(ys[k]) & round_mask(round));
                }
            }
        }
    }

    /// [`permute`](Self::permute) (or, with `back`, `unpermute`) of each value in place,
    /// eight at a time through AES.
    fn map_many(&self, values: &mut [u64], back: bool) -> Result<(), OpaqueError> {
        for &value in values.iter() {
            check(value)?;
        }
        let mut chunks = values.chunks_exact_mut(LANES);
        for chunk in &mut chunks {
            let (mut a, mut b) = ([0u128; LANES], [0u128; LANES]);
            for (k, value) in chunk.iter().enumerate() {
                (a[k], b[k]) = split(*value);
            }
            self.feistel(&mut a, &mut b, back);
            for (k, value) in chunk.iter_mut().enumerate() {
                *value = join(a[k], b[k]);
            }
        }
        for value in chunks.into_remainder() {
            *value = self.map_one(*value, back)?;
        }
        Ok(())
    }
}

/// `id` if it is an ID (at most 2^63 − 1).
fn check(id: u64) -> Result<u64, OpaqueError> {
    if id > MAX_ID {
        return Err(OpaqueError::AboveMax { id });
    }
    Ok(id)
}

/// `NUM(A)` and `NUM(B)` of an ID's 7 numerals: with a power-of-two radix, its bits.
fn split(id: u64) -> (u128, u128) {
    (
        u128::from(id >> B_BITS),
        u128::from(id & ((1 << B_BITS) - 1)),
    )
}

fn join(a: u128, b: u128) -> u64 {
    ((a << B_BITS) | b) as u64
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
