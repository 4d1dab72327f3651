//! The one mechanism under every form: digits of a number in a radix, written right to
//! left, and read back with checked arithmetic.
//!
//! Hand-written rather than taken from a crate: the base62 crates write as few
//! characters as the number needs (so "z" sorts after "10" while 61 < 62), and the base32
//! crates encode bytes, left-aligned (8 bytes make 13 characters whose last one carries a
//! padding bit), not the number. IDs need the number itself, right-aligned and padded
//! with zeros to a fixed width, so that strings sort as the numbers do; that is the
//! 40 lines below, and it keeps the library's default build free of another crate.

/// The largest ID: IDs never set the sign bit, so they read as positive `i64`s.
pub(crate) const MAX_ID: u64 = i64::MAX as u64;

/// A value in a lookup table that is no digit.
const NONE: u8 = u8::MAX;

/// One radix: its digits in ASCII order, and each byte's value when read.
pub(crate) struct Alphabet {
    pub(crate) radix: u64,
    pub(crate) digits: &'static [u8],
    /// `values[byte]` is the digit's value, or [`NONE`].
    values: [u8; 256],
}

impl Alphabet {
    /// `digits` read back; `also` adds other bytes read as a digit (lower case, aliases).
    const fn new(digits: &'static [u8], also: &[(u8, u8)]) -> Self {
        let mut values = [NONE; 256];
        let mut i = 0;
        while i < digits.len() {
            values[digits[i] as usize] = i as u8;
            i += 1;
        }
        let mut j = 0;
        while j < also.len() {
            values[also[j].0 as usize] = values[also[j].1 as usize];
            j += 1;
        }
        Self {
            radix: digits.len() as u64,
            digits,
            values,
        }
    }

    /// The value of `byte` as a digit, if it is one.
    #[inline]
    pub(crate) fn value(&self, byte: u8) -> Option<u64> {
        match self.values[byte as usize] {
            NONE => None,
            value => Some(u64::from(value)),
        }
    }
}

/// Each lower-case letter read as its upper case: `(b'a', b'A')`, `(b'b', b'B')`, ….
const fn lower_of(upper: &[u8; 26]) -> [(u8, u8); 26] {
    let mut pairs = [(0u8, 0u8); 26];
    let mut i = 0;
    while i < 26 {
        pairs[i] = (upper[i] + 32, upper[i]);
        i += 1;
    }
    pairs
}

const UPPER: &[u8; 26] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";

pub(crate) static DECIMAL: Alphabet = Alphabet::new(b"0123456789", &[]);

pub(crate) static HEX: Alphabet = Alphabet::new(
    b"0123456789abcdef",
    &[
        (b'A', b'a'),
        (b'B', b'b'),
        (b'C', b'c'),
        (b'D', b'd'),
        (b'E', b'e'),
        (b'F', b'f'),
    ],
);

/// Digits, then upper case, then lower case: ASCII order, so strings sort as numbers.
pub(crate) static BASE62: Alphabet = Alphabet::new(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    &[],
);

/// Crockford's base32 (<https://www.crockford.com/base32.html>): no I, L, O or U. It is
/// read in any case, with I and L as 1 and O as 0; U stays an error.
pub(crate) static BASE32: Alphabet = {
    const LOWER: [(u8, u8); 26] = lower_of(UPPER);
    const ALIASES: [(u8, u8); 3] = [(b'O', b'0'), (b'I', b'1'), (b'L', b'1')];
    // The aliases first, so that their lower case follows them.
    const ALSO: [(u8, u8); 29] = {
        let mut all = [(0u8, 0u8); 29];
        let mut i = 0;
        while i < 3 {
            all[i] = ALIASES[i];
            i += 1;
        }
        while i < 29 {
            all[i] = LOWER[i - 3];
            i += 1;
        }
        all
    };
    Alphabet::new(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", &ALSO)
};

/// Writes `id` into the end of `buf` in `alphabet`: at least `width` digits (zeros in
/// front), more if the number needs them. Returns where the digits start.
#[inline]
pub(crate) fn encode(alphabet: &Alphabet, mut id: u64, width: usize, buf: &mut [u8]) -> usize {
    let mut start = buf.len();
    while id > 0 || buf.len() - start < width {
        start -= 1;
        buf[start] = alphabet.digits[(id % alphabet.radix) as usize];
        id /= alphabet.radix;
    }
    start
}

/// Why ASCII digits could not be read.
pub(crate) enum Unreadable {
    /// The byte at this index is no digit of the alphabet.
    Byte(usize),
    /// The number is above [`MAX_ID`].
    Overflow,
}

/// Reads ASCII `digits` in `alphabet`, refusing a number above [`MAX_ID`]. A byte that is
/// no digit is reported before an overflow: a malformed string is malformed, however long.
#[inline]
pub(crate) fn decode(alphabet: &Alphabet, digits: &[u8]) -> Result<u64, Unreadable> {
    // Plain loops and no closures: this runs 4 × 10^7 times in a debug-built test.
    let mut id: u64 = 0;
    let mut overflow = false;
    let mut index = 0;
    while index < digits.len() {
        let digit = alphabet.values[digits[index] as usize];
        if digit == NONE {
            return Err(Unreadable::Byte(index));
        }
        match id.checked_mul(alphabet.radix) {
            Some(next) if next <= MAX_ID - u64::from(digit) => id = next + u64::from(digit),
            _ => overflow = true,
        }
        index += 1;
    }
    if overflow {
        Err(Unreadable::Overflow)
    } else {
        Ok(id)
    }
}
