//! SSE2: 4 lanes of 32 bits per register; the baseline of every x86_64 CPU.
//!
//! SSE2 has neither a 32-bit `mullo` nor variable shifts, so: the salted products come from two
//! `pmuludq` (even and odd lanes), and `1 << idx` from the float trick — the bits of
//! `(idx << 23) + 0x3f80_0000` are the float `2^idx`, which `cvttps2dq` turns into the integer
//! `2^idx` (for `idx = 31` it overflows to `0x8000_0000`, which is exactly `1 << 31`).
//!
//! Every function here is `unsafe` with the contract "the CPU supports SSE2" (always true on
//! x86_64).

use core::arch::x86_64::*;

use bloomlanes_core::{xxh64_u64, Layout, SALTS};

use crate::bulk::Kernel;

/// The SSE2 kernel.
pub(crate) struct Sse2;

/// Lane bit indices of lanes `4q .. 4q + 4`.
#[inline(always)]
unsafe fn indices(layout: Layout, h: u32, q: usize) -> __m128i {
    // SAFETY: SSE2 is available; SALTS has 16 entries and q < 4, so the load is in bounds.
    unsafe {
        let s = _mm_loadu_si128(SALTS.as_ptr().add(4 * q).cast());
        let a = _mm_set1_epi32(h as i32);
        let even = _mm_mul_epu32(a, s); // lanes 0 and 2, 64-bit products
        let odd = _mm_mul_epu32(a, _mm_srli_epi64::<32>(s)); // lanes 1 and 3
                                                             // low 32 bits of each product, back in lane order 0, 1, 2, 3
        let even = _mm_shuffle_epi32::<0b00_00_10_00>(even);
        let odd = _mm_shuffle_epi32::<0b00_00_10_00>(odd);
        let p = _mm_unpacklo_epi32(even, odd);
        match layout.word_bits() {
            32 => _mm_srli_epi32::<27>(p),
            _ => _mm_srli_epi32::<26>(p),
        }
    }
}

/// `1 << (idx & 31)` in every 32-bit lane.
#[inline(always)]
unsafe fn pow2(idx: __m128i) -> __m128i {
    // SAFETY: SSE2 is available.
    unsafe {
        let e = _mm_slli_epi32::<23>(_mm_and_si128(idx, _mm_set1_epi32(31)));
        _mm_cvttps_epi32(_mm_castsi128_ps(_mm_add_epi32(
            e,
            _mm_set1_epi32(0x3f80_0000),
        )))
    }
}

/// The block mask as `block_bytes / 16` registers (2, 4, 4 or 8) in block order.
#[inline(always)]
unsafe fn masks(layout: Layout, hash: u64) -> ([__m128i; 8], usize) {
    let h = hash as u32;
    // SAFETY: SSE2 is available.
    unsafe {
        let mut m = [_mm_setzero_si128(); 8];
        let quads = layout.lanes() / 4;
        if layout.word_bits() == 32 {
            for (q, mq) in m.iter_mut().enumerate().take(quads) {
                *mq = pow2(indices(layout, h, q));
            }
            (m, quads)
        } else {
            for q in 0..quads {
                let idx = indices(layout, h, q);
                let p = pow2(idx);
                let high = _mm_cmpgt_epi32(idx, _mm_set1_epi32(31));
                let lo = _mm_andnot_si128(high, p);
                let hi = _mm_and_si128(high, p);
                m[2 * q] = _mm_unpacklo_epi32(lo, hi);
                m[2 * q + 1] = _mm_unpackhi_epi32(lo, hi);
            }
            (m, 2 * quads)
        }
    }
}

impl Kernel for Sse2 {
    #[inline(always)]
    unsafe fn contains(layout: Layout, block: *const u32, hash: u64) -> bool {
        // SAFETY: SSE2 is available; `block` points to `n × 4` readable u32s (the block).
        unsafe {
            let (m, n) = masks(layout, hash);
            let mut missing = _mm_setzero_si128();
            for (i, &mi) in m.iter().enumerate().take(n) {
                let b = _mm_loadu_si128(block.add(4 * i).cast());
                missing = _mm_or_si128(missing, _mm_andnot_si128(b, mi));
            }
            _mm_movemask_epi8(_mm_cmpeq_epi32(missing, _mm_setzero_si128())) == 0xffff
        }
    }

    #[inline(always)]
    unsafe fn insert(layout: Layout, block: *mut u32, hash: u64) {
        // SAFETY: as in `contains`; the block is writable and exclusively ours.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                let p = block.add(4 * i).cast::<__m128i>();
                _mm_storeu_si128(p, _mm_or_si128(_mm_loadu_si128(p), mi));
            }
        }
    }

    #[inline(always)]
    unsafe fn mask(layout: Layout, hash: u64, out: &mut [u32; 32]) {
        // SAFETY: SSE2 is available; at most 8 × 4 = 32 u32s are stored into `out`.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                _mm_storeu_si128(out.as_mut_ptr().add(4 * i).cast(), mi);
            }
        }
    }

    #[inline(always)]
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
        // Two 64-bit lanes and no 64-bit multiply: scalar `imul` is faster.
        for (o, &k) in out.iter_mut().zip(keys) {
            *o = xxh64_u64(k, seed);
        }
    }
}

crate::bulk::entry_points!(Sse2, "sse2");
