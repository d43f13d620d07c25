//! The portable vector path on the `wide` crate: 8 lanes of 32 bits per `u32x8`, with whatever
//! vector instructions the target was compiled for (SSE2 on a default x86_64 build, NEON on
//! aarch64, simd128 on wasm). It needs no run-time detection and no `unsafe` of its own.
//!
//! 64-bit lane words are handled as pairs of 32-bit halves (`lo = 1 << idx`, `hi = 1 << (idx −
//! 32)`, with `unbounded_shl` giving 0 for counts of 32 or more), which is independent of the
//! target's endianness: the filter's words are `u32` numbers and a 64-bit lane is `lo | hi << 32`.

use bloomlanes_core::{xxh64_u64, Layout, SALTS};
use wide::u32x8;

use crate::bulk::Kernel;

/// The portable kernel.
pub(crate) struct Portable;

/// Lane bit indices of lanes `8g .. 8g + 8`.
#[inline(always)]
fn indices(layout: Layout, h: u32, g: usize) -> u32x8 {
    let mut s = [0u32; 8];
    s.copy_from_slice(&SALTS[8 * g..8 * g + 8]);
    (u32x8::splat(h) * u32x8::new(s)).unbounded_shr_scalar(layout.lane_shift())
}

/// The mask of lanes `8g .. 8g + 8`: for 32-bit words one `u32x8`, for 64-bit words the low and
/// the high halves.
#[inline(always)]
fn group_mask(layout: Layout, h: u32, g: usize) -> (u32x8, u32x8) {
    let idx = indices(layout, h, g);
    let one = u32x8::splat(1);
    if layout.word_bits() == 32 {
        (one.unbounded_shl(idx), u32x8::ZERO)
    } else {
        (
            one.unbounded_shl(idx),
            one.unbounded_shl(idx - u32x8::splat(32)),
        )
    }
}

/// Reads 8 words starting at `p`, `step` apart.
///
/// # Safety
/// `p.add(step × 7)` and everything before it is readable.
#[inline(always)]
unsafe fn gather(p: *const u32, step: usize) -> u32x8 {
    let mut a = [0u32; 8];
    for (i, x) in a.iter_mut().enumerate() {
        // SAFETY: in bounds by the function's contract; u32 alignment is the slice's own.
        *x = unsafe { *p.add(step * i) };
    }
    u32x8::new(a)
}

/// Writes 8 words starting at `p`, `step` apart.
///
/// # Safety
/// `p.add(step × 7)` and everything before it is writable and exclusively ours.
#[inline(always)]
unsafe fn scatter(p: *mut u32, step: usize, v: u32x8) {
    for (i, x) in v.to_array().into_iter().enumerate() {
        // SAFETY: in bounds by the function's contract.
        unsafe { *p.add(step * i) = x };
    }
}

impl Kernel for Portable {
    #[inline(always)]
    unsafe fn contains(layout: Layout, block: *const u32, hash: u64) -> bool {
        let mut missing = u32x8::ZERO;
        for g in 0..layout.lanes() / 8 {
            let (lo, hi) = group_mask(layout, hash as u32, g);
            // SAFETY: `block` points to the whole block (Kernel contract): group g of 32-bit
            // words is words 8g..8g+8; of 64-bit words, words 16g..16g+16.
            unsafe {
                if layout.word_bits() == 32 {
                    let b = gather(block.add(8 * g), 1);
                    missing |= (b & lo) ^ lo;
                } else {
                    let bl = gather(block.add(16 * g), 2);
                    let bh = gather(block.add(16 * g + 1), 2);
                    missing |= ((bl & lo) ^ lo) | ((bh & hi) ^ hi);
                }
            }
        }
        missing == u32x8::ZERO
    }

    #[inline(always)]
    unsafe fn insert(layout: Layout, block: *mut u32, hash: u64) {
        for g in 0..layout.lanes() / 8 {
            let (lo, hi) = group_mask(layout, hash as u32, g);
            // SAFETY: as in `contains`; the block is writable and exclusively ours.
            unsafe {
                if layout.word_bits() == 32 {
                    let p = block.add(8 * g);
                    scatter(p, 1, gather(p, 1) | lo);
                } else {
                    let p = block.add(16 * g);
                    scatter(p, 2, gather(p, 2) | lo);
                    scatter(p.add(1), 2, gather(p.add(1), 2) | hi);
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn mask(layout: Layout, hash: u64, out: &mut [u32; 32]) {
        for g in 0..layout.lanes() / 8 {
            let (lo, hi) = group_mask(layout, hash as u32, g);
            if layout.word_bits() == 32 {
                out[8 * g..8 * g + 8].copy_from_slice(&lo.to_array());
            } else {
                for (i, (l, h)) in lo.to_array().into_iter().zip(hi.to_array()).enumerate() {
                    out[16 * g + 2 * i] = l;
                    out[16 * g + 2 * i + 1] = h;
                }
            }
        }
    }

    #[inline(always)]
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
        for (o, &k) in out.iter_mut().zip(keys) {
            *o = xxh64_u64(k, seed);
        }
    }
}

crate::bulk::entry_points!(Portable);
