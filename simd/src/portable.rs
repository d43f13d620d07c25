//! The portable vector path on the `wide` crate: 8 lanes of 32 bits per `u32x8`, with whatever
//! vector instructions the target was compiled for (SSE2 on a default x86_64 build, NEON on
//! aarch64, simd128 on wasm). It needs no run-time detection; its only `unsafe` is reading and
//! writing a register's worth of a block through the pointer that the shared block code hands it.
//!
//! 64-bit lane words are handled as their 32-bit halves, the low halves of 8 lanes in one
//! register and the high halves in another (`lo = 1 << idx`, `hi = 1 << (idx − 32)`, with
//! `unbounded_shl` giving 0 for counts of 32 or more), which is independent of the target's
//! endianness: the filter's words are `u32` numbers and a 64-bit lane is `lo | hi << 32`.

use bloomlanes_core::SALTS;
use wide::u32x8;

use crate::shape::Shape;
use crate::vector::{Vector, MAX_REGS};

/// The portable instruction set (whatever the build target has).
pub(crate) struct Portable;

crate::vector::isa!(Portable, u32x8, u32x8);

/// Lane bit indices of lanes `first .. first + 8` of a block of `S` (`first + 8 <= 16`).
#[inline(always)]
fn lane_indices<S: Shape>(h: u32, first: usize) -> u32x8 {
    let mut s = [0u32; 8];
    s.copy_from_slice(&SALTS[first..first + 8]);
    (u32x8::splat(h) * u32x8::new(s)).unbounded_shr_scalar(S::LAYOUT.lane_shift())
}

/// Reads the 8 words `p, p + 2, …, p + 14`.
///
/// # Safety
/// Those words are readable.
#[inline(always)]
unsafe fn gather(p: *const u32) -> u32x8 {
    let mut a = [0u32; 8];
    for (i, x) in a.iter_mut().enumerate() {
        // SAFETY: `p + 2i` for `i < 8` is readable (contract) and aligned for `u32` like `p`.
        *x = unsafe { *p.add(2 * i) };
    }
    u32x8::new(a)
}

/// Writes `v` to the 8 words `p, p + 2, …, p + 14`.
///
/// # Safety
/// Those words are writable and no one else accesses them during the call.
#[inline(always)]
unsafe fn scatter(p: *mut u32, v: u32x8) {
    for (i, x) in v.to_array().into_iter().enumerate() {
        // SAFETY: `p + 2i` for `i < 8` is writable and ours (contract), aligned like `p`.
        unsafe { *p.add(2 * i) = x };
    }
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

    /// Blocks of 32-bit lanes map registers to consecutive words. Blocks of 64-bit lanes keep
    /// the 8 lanes `8g .. 8g + 8` in two registers, `2g` with their low halves (words
    /// `16g, 16g + 2, …`) and `2g + 1` with their high halves (words `16g + 1, 16g + 3, …`), so
    /// that the two halves' masks need no interleaving: on baseline x86_64, where `wide` does
    /// variable shifts lane by lane, interleaving them into block order (`unpack_lo`/`_hi`, or
    /// per-word salts) made portable 8x64 and 16x64 lookups 7–47 % slower (`paths/1M`).
    #[inline(always)]
    unsafe fn load_part<S: Shape>(block: *const u32, part: usize) -> Self {
        if S::LAYOUT.word_bits() == 32 {
            // SAFETY: `part < block_u32s / 8` (trait contract), so words `8 part .. 8 part + 8`
            // lie in the readable block.
            unsafe { Self::load(block.add(8 * part)) }
        } else {
            // SAFETY: the words read, `16 (part / 2) + part % 2 + 2i` for `i < 8`, are at most
            // `16 (part / 2) + 15`, below `block_u32s` since `part / 2 < block_u32s / 16`
            // (trait contract: `part < block_u32s / 8`, and 64-bit blocks are 16 or 32 words);
            // the block is readable.
            unsafe { gather(block.add(16 * (part / 2) + part % 2)) }
        }
    }

    #[inline(always)]
    unsafe fn store_part<S: Shape>(self, block: *mut u32, part: usize) {
        if S::LAYOUT.word_bits() == 32 {
            // SAFETY: `part < block_u32s / 8` (trait contract), so words `8 part .. 8 part + 8`
            // lie in the block, which is writable and ours.
            unsafe { self.store(block.add(8 * part)) }
        } else {
            // SAFETY: the words written, `16 (part / 2) + part % 2 + 2i` for `i < 8`, are at most
            // `16 (part / 2) + 15`, below `block_u32s` since `part / 2 < block_u32s / 16`
            // (trait contract: `part < block_u32s / 8`, and 64-bit blocks are 16 or 32 words);
            // the block is writable and ours.
            unsafe { scatter(block.add(16 * (part / 2) + part % 2), self) }
        }
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
                // The low half of a 64-bit lane holds `1 << idx`, the high half
                // `1 << (idx − 32)`; `unbounded_shl` makes the other one 0 (`idx − 32` wraps to
                // a huge count when `idx < 32`). Register order: see `load_part`.
                m[2 * g] = one.unbounded_shl(idx);
                m[2 * g + 1] = one.unbounded_shl(idx - u32x8::splat(32));
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

crate::bulk::entry_points!(Portable, []);
