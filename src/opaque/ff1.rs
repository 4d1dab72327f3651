//! FF1 (NIST SP 800-38G, Algorithms 7 and 8) on the RustCrypto `aes` crate, for numeral
//! strings whose halves fit in 120 bits, with the numbers held in `u128`.
//!
//! Why not `fpe`: its FF1 is generic over numeral strings of any length, so each call
//! clones the numerals, converts them to big integers and back through allocated vectors
//! in every round, and recomputes AES of the fixed first block: about 7 µs per ID, where
//! the cipher's own work is ten AES blocks (~0.2 µs). Why not an allocation-free numeral
//! type under `fpe`: that still pays for its per-call setup (the key schedule cloned,
//! AES(P) recomputed), about 0.7 µs. Here the parts of the CBC-MAC that do not change
//! between rounds (P and the tweak's blocks) are computed once, so a round is one AES
//! block and a few integer operations, and a power-of-two radix reduces by masking.
//! The AES itself is the `aes` crate's (AES-NI where the CPU has it); nothing of the
//! block cipher is written here.
//!
//! Correctness is shown by NIST's published samples, NIST's ACVP vectors (every radix-64
//! group and the AES-256 groups), the binary vectors `fpe` carries, and a differential
//! test against `fpe` itself (`src/opaque/tests.rs`).

// The general FF1 (any tweak, any radix whose halves fit) runs only in the vector tests;
// the ID domain takes the whole-block round, which the same tests run too.
#![cfg_attr(not(test), allow(dead_code))]

use aes::cipher::consts::U16;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockEncrypt, BlockSizeUser};

/// The most bits a half may take: `b` (the bytes of `NUM(B)`) then stays within 15, so
/// the round's changing bytes fit one block, and `y mod radix^m` fits a `u128`.
const MAX_HALF_BITS: u32 = 120;

type Block = GenericArray<u8, U16>;

/// Why FF1 cannot run on an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ff1Error {
    /// A radix outside 2..=65536.
    Radix,
    /// Fewer than 2 numerals, or a half above 120 bits.
    Length,
    /// A numeral not below the radix.
    Numeral,
}

/// The sizes FF1 derives from the radix and the length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    n: usize,
    u: usize,
    /// Bytes of `NUM(B)` in `Q`.
    b: usize,
    /// Bytes of `S`.
    d: usize,
    /// `radix^u`, `radix^v`.
    pow_u: u128,
    pow_v: u128,
}

impl Params {
    /// `radix^m` of round `i`: `m = u` in even rounds, `v` in odd ones.
    pub(crate) fn modulus(&self, i: u8) -> u128 {
        if i.is_multiple_of(2) {
            self.pow_u
        } else {
            self.pow_v
        }
    }
}

/// The parts of the round function's CBC-MAC that do not change between rounds: the MAC
/// state after `P` and every block of `Q` but the last, and the last block's fixed bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prefix {
    state: [u8; 16],
    last: [u8; 16],
}

/// The round function for a [`Prefix`] whose last block is all zeros (an empty tweak,
/// with `b + 1` bytes of `[i] || NUM(B)` filling the block after the zeros) and `d ≤ 16`:
/// the AES input is `state ⊕ (i << 8b) ⊕ NUM` and `NUM(S)` the top `8d` bits of `R`, all
/// in one `u128`. The radix-2^9 ID domain is such a case.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WholeBlock {
    state: u128,
    i_shift: u32,
    s_shift: u32,
}

impl Prefix {
    /// The `u128` form of this prefix, if its last block is all zeros and `d ≤ 16`.
    pub(crate) fn whole_block(&self, p: &Params) -> Option<WholeBlock> {
        (self.last == [0; 16] && p.d <= 16).then(|| WholeBlock {
            state: u128::from_be_bytes(self.state),
            i_shift: 8 * p.b as u32,
            s_shift: 128 - 8 * p.d as u32,
        })
    }
}

/// FF1 under one key (`C`: AES-128, -192 or -256) and one radix.
#[derive(Clone)]
pub(crate) struct Ff1<C> {
    cipher: C,
    radix: u32,
}

impl<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>> Ff1<C> {
    pub(crate) fn new(cipher: C, radix: u32) -> Result<Self, Ff1Error> {
        if !(2..=1 << 16).contains(&radix) {
            return Err(Ff1Error::Radix);
        }
        Ok(Self { cipher, radix })
    }

    /// The sizes for `n` numerals (steps 1, 3 and 4 of Algorithm 7).
    pub(crate) fn params(&self, n: usize) -> Result<Params, Ff1Error> {
        if n < 2 {
            return Err(Ff1Error::Length);
        }
        let (u, v) = (n / 2, n - n / 2);
        let pow = |m: usize| -> Result<u128, Ff1Error> {
            let mut p: u128 = 1;
            for _ in 0..m {
                p = p
                    .checked_mul(u128::from(self.radix))
                    .filter(|p| *p <= 1 << MAX_HALF_BITS)
                    .ok_or(Ff1Error::Length)?;
            }
            Ok(p)
        };
        let (pow_u, pow_v) = (pow(u)?, pow(v)?);
        // ⌈v·log2(radix)⌉: the bits of radix^v − 1.
        let bits = (128 - (pow_v - 1).leading_zeros()) as usize;
        let b = bits.div_ceil(8);
        let d = 4 * b.div_ceil(4) + 4;
        Ok(Params {
            n,
            u,
            b,
            d,
            pow_u,
            pow_v,
        })
    }

    fn aes(&self, block: [u8; 16]) -> [u8; 16] {
        let mut block = Block::from(block);
        self.cipher.encrypt_block(&mut block);
        block.into()
    }

    /// `P`, then `Q`'s blocks before its last, through the CBC-MAC (steps 5 and 6.i–ii up
    /// to the last block, the same in every round).
    pub(crate) fn prefix(&self, p: &Params, tweak: &[u8]) -> Prefix {
        let t = tweak.len();
        let radix = self.radix.to_be_bytes();
        let mut first = [0u8; 16];
        first[..8].copy_from_slice(&[1, 2, 1, radix[1], radix[2], radix[3], 10, p.u as u8]);
        first[8..12].copy_from_slice(&(p.n as u32).to_be_bytes());
        first[12..].copy_from_slice(&(t as u32).to_be_bytes());
        let mut state = self.aes(first);
        // Q = T || 0^((−t−b−1) mod 16) || [i] || [NUM(B)]^b: a whole number of blocks,
        // of which only the last holds [i] and NUM(B) (b + 1 ≤ 16).
        let zeros = (16 - (t + p.b + 1) % 16) % 16;
        let q_len = t + zeros + 1 + p.b;
        let q_byte = |j: usize| if j < t { tweak[j] } else { 0 };
        let head = q_len - 16;
        for block in 0..head / 16 {
            let mut x = state;
            for (k, byte) in x.iter_mut().enumerate() {
                *byte ^= q_byte(block * 16 + k);
            }
            state = self.aes(x);
        }
        let mut last = [0u8; 16];
        for (k, byte) in last.iter_mut().enumerate().take(15 - p.b) {
            *byte = q_byte(head + k);
        }
        Prefix { state, last }
    }

    /// The last block of round `i`'s `P || Q`, XORed into the MAC state: ready for AES.
    fn round_input(p: &Params, prefix: &Prefix, i: u8, num: u128) -> [u8; 16] {
        let mut block = prefix.last;
        block[15 - p.b] = i;
        block[16 - p.b..].copy_from_slice(&num.to_be_bytes()[16 - p.b..]);
        for (x, s) in block.iter_mut().zip(prefix.state) {
            *x ^= s;
        }
        block
    }

    /// `y = NUM(S) mod modulus` from `R`, the round's PRF output (steps 6.iii–iv, reduced).
    fn y_mod(&self, p: &Params, r: [u8; 16], modulus: u128) -> u128 {
        if p.d <= 16 {
            let mut bytes = [0u8; 16];
            bytes[16 - p.d..].copy_from_slice(&r[..p.d]);
            return reduce(u128::from_be_bytes(bytes), modulus);
        }
        // S = R || CIPH(R ⊕ [1]^16) || …, cut to d bytes, reduced byte by byte
        // (modulus ≤ 2^120, so y·256 + byte never overflows).
        let mut y = 0u128;
        let mut left = p.d;
        let mut j = 0u128;
        while left > 0 {
            let block = if j == 0 {
                r
            } else {
                let mut x = r;
                for (a, b) in x.iter_mut().zip(j.to_be_bytes()) {
                    *a ^= b;
                }
                self.aes(x)
            };
            for byte in block.iter().take(left.min(16)) {
                y = reduce((y << 8) | u128::from(*byte), modulus);
            }
            left -= left.min(16);
            j += 1;
        }
        y
    }

    /// Round `i`'s `y mod radix^m`, from `NUM(B)` (encrypting) or `NUM(A)` (decrypting).
    pub(crate) fn round(&self, p: &Params, prefix: &Prefix, i: u8, num: u128) -> u128 {
        if let Some(whole) = prefix.whole_block(p) {
            let [y] = self.whole_rounds(&whole, i, &[num]);
            return reduce(y, p.modulus(i));
        }
        let r = self.aes(Self::round_input(p, prefix, i, num));
        self.y_mod(p, r, p.modulus(i))
    }

    /// `NUM(S)` of round `i` (not reduced) on a [`WholeBlock`] prefix, for `K` inputs at
    /// once: one AES block each, side by side.
    #[inline]
    pub(crate) fn whole_rounds<const K: usize>(
        &self,
        w: &WholeBlock,
        i: u8,
        nums: &[u128; K],
    ) -> [u128; K] {
        let mut blocks: [Block; K] = std::array::from_fn(|k| {
            Block::from((w.state ^ (u128::from(i) << w.i_shift) ^ nums[k]).to_be_bytes())
        });
        self.cipher.encrypt_blocks(&mut blocks);
        std::array::from_fn(|k| u128::from_be_bytes(blocks[k].into()) >> w.s_shift)
    }

    /// FF1.Encrypt of `x` under `tweak` (Algorithm 7).
    pub(crate) fn encrypt(&self, tweak: &[u8], x: &[u16]) -> Result<Vec<u16>, Ff1Error> {
        let (p, prefix, mut a, mut b) = self.start(tweak, x)?;
        for i in 0..10u8 {
            let c = add_mod(a, self.round(&p, &prefix, i, b), p.modulus(i));
            (a, b) = (b, c);
        }
        Ok(self.numerals(&p, a, b))
    }

    /// FF1.Decrypt of `y` under `tweak` (Algorithm 8).
    pub(crate) fn decrypt(&self, tweak: &[u8], y: &[u16]) -> Result<Vec<u16>, Ff1Error> {
        let (p, prefix, mut a, mut b) = self.start(tweak, y)?;
        for i in (0..10u8).rev() {
            let c = sub_mod(b, self.round(&p, &prefix, i, a), p.modulus(i));
            (b, a) = (a, c);
        }
        Ok(self.numerals(&p, a, b))
    }

    /// Checks `x` and splits it into `NUM(A)`, `NUM(B)`.
    fn start(&self, tweak: &[u8], x: &[u16]) -> Result<(Params, Prefix, u128, u128), Ff1Error> {
        let p = self.params(x.len())?;
        if x.iter().any(|&numeral| u32::from(numeral) >= self.radix) {
            return Err(Ff1Error::Numeral);
        }
        let num = |part: &[u16]| {
            part.iter().fold(0u128, |acc, &n| {
                acc * u128::from(self.radix) + u128::from(n)
            })
        };
        let prefix = self.prefix(&p, tweak);
        Ok((p, prefix, num(&x[..p.u]), num(&x[p.u..])))
    }

    /// `STR_radix^u(a) || STR_radix^v(b)`.
    fn numerals(&self, p: &Params, a: u128, b: u128) -> Vec<u16> {
        let mut out = vec![0u16; p.n];
        let radix = u128::from(self.radix);
        let (left, right) = out.split_at_mut(p.u);
        for (part, mut value) in [(left, a), (right, b)] {
            for numeral in part.iter_mut().rev() {
                *numeral = (value % radix) as u16;
                value /= radix;
            }
        }
        out
    }
}

/// `x mod m`, by masking when `m` is a power of two.
#[inline]
fn reduce(x: u128, m: u128) -> u128 {
    if m.is_power_of_two() {
        x & (m - 1)
    } else {
        x % m
    }
}

/// `(a + y) mod m` for `a, y < m ≤ 2^120`.
#[inline]
pub(crate) fn add_mod(a: u128, y: u128, m: u128) -> u128 {
    let c = a + y;
    if c >= m {
        c - m
    } else {
        c
    }
}

/// `(b − y) mod m` for `b, y < m`.
#[inline]
pub(crate) fn sub_mod(b: u128, y: u128, m: u128) -> u128 {
    if b >= y {
        b - y
    } else {
        b + m - y
    }
}
