//! The portable vector path on the `wide` crate: 8 lanes of 32 bits per `u32x8`, with whatever
//! vector instructions the target was compiled for (SSE2 on a default x86_64 build, NEON on
//! aarch64, simd128 on wasm). It needs no run-time detection; its only `unsafe` is reading and
//! writing a register's worth of a block through the pointer that the shared block code hands it.
//!
//! 64-bit lane words are built from 32-bit halves (`lo = 1 << idx`, `hi = 1 << (idx − 32)`, with
//! `unbounded_shl` giving 0 for counts of 32 or more), which is independent of the target's
//! endianness: the filter's words are `u32` numbers and a 64-bit lane is `lo | hi << 32`.

use bloomlanes_core::{xxh64_u64, SALTS};
use wide::u32x8;

use crate::shape::Shape;
use crate::vector::{Isa, Vector, MAX_REGS};

/// The portable instruction set (whatever the build target has).
pub(crate) struct Portable;

impl Isa for Portable {
    type Wide = u32x8;
    type Narrow = u32x8;

    #[inline(always)]
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
        for (o, &k) in out.iter_mut().zip(keys) {
            *o = xxh64_u64(k, seed);
        }
    }
}

/// Lane bit indices of lanes `first .. first + 8` of a block of `S` (`first + 8 <= 16`).
#[inline(always)]
fn lane_indices<S: Shape>(h: u32, first: usize) -> u32x8 {
    let mut s = [0u32; 8];
    s.copy_from_slice(&SALTS[first..first + 8]);
    (u32x8::splat(h) * u32x8::new(s)).unbounded_shr_scalar(S::LAYOUT.lane_shift())
}

impl Vector for u32x8 {
    const WORDS: usize = 8;

    #[inline(always)]
    unsafe fn zero() -> Self {
        u32x8::ZERO
    }

    #[inline(always)]
    unsafe fn load(p: *const u32) -> Self {
        // SAFETY: the 8 words at `p` are readable and `p` is aligned for `u32` (trait
        // contract), which is the alignment of `[u32; 8]`.
        u32x8::new(unsafe { p.cast::<[u32; 8]>().read() })
    }

    #[inline(always)]
    unsafe fn store(self, p: *mut u32) {
        // SAFETY: the 8 words at `p` are writable, ours, and aligned for `u32` (trait
        // contract), which is the alignment of `[u32; 8]`.
        unsafe { p.cast::<[u32; 8]>().write(self.to_array()) }
    }

    #[inline(always)]
    unsafe fn block_mask<S: Shape>(h: u32) -> [Self; MAX_REGS] {
        let layout = S::LAYOUT;
        let one = u32x8::splat(1);
        let mut m = [u32x8::ZERO; MAX_REGS];
        for g in 0..layout.lanes() / 8 {
            let idx = lane_indices::<S>(h, 8 * g);
            if layout.word_bits() == 32 {
                m[g] = one.unbounded_shl(idx);
            } else {
                // Lane `i` of the group is the words `2i` (low half) and `2i + 1` (high half).
                let lo = one.unbounded_shl(idx).to_array();
                let hi = one.unbounded_shl(idx - u32x8::splat(32)).to_array();
                let mut words = [[0u32; 8]; 2];
                for i in 0..8 {
                    words[i / 4][2 * (i % 4)] = lo[i];
                    words[i / 4][2 * (i % 4) + 1] = hi[i];
                }
                m[2 * g] = u32x8::new(words[0]);
                m[2 * g + 1] = u32x8::new(words[1]);
            }
        }
        m
    }

    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        self | other
    }

    #[inline(always)]
    unsafe fn clear_in(self, block: Self) -> Self {
        // `wide` has `andnot` on some types only; `(m & b) ^ m` is `m & !b`.
        (self & block) ^ self
    }

    #[inline(always)]
    unsafe fn is_zero(self) -> bool {
        self == u32x8::ZERO
    }
}

crate::bulk::entry_points!(Portable);
