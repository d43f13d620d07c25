//! SSE2: 4 lanes of 32 bits per register; the baseline of every x86_64 CPU.
//!
//! SSE2 has neither a 32-bit `mullo` nor variable shifts, so: the salted products come from two
//! `pmuludq` (even and odd lanes), and `1 << idx` from the float trick — the bits of
//! `(idx << 23) + 0x3f80_0000` are the float `2^idx`, which `cvttps2dq` turns into the integer
//! `2^idx` (for `idx = 31` it overflows to `0x8000_0000`, which is exactly `1 << 31`).
//!
//! Every function here is `unsafe` with the contract "the CPU supports SSE2" (always true on
//! x86_64); the entry points at the bottom carry `#[target_feature(enable = "sse2")]`.

use core::arch::x86_64::*;

use bloomlanes_core::SALTS;

use crate::shape::Shape;
use crate::vector::{Vector, MAX_REGS};

/// The SSE2 instruction set.
pub(crate) struct Sse2;

// Two 64-bit lanes and no 64-bit multiply: scalar `imul` hashes faster.
crate::vector::isa!(Sse2, __m128i, __m128i);

/// Lane bit indices of lanes `4q .. 4q + 4` of a block of `S`.
///
/// # Safety
/// The CPU supports SSE2; `q < 4`.
#[inline(always)]
unsafe fn lane_indices<S: Shape>(h: u32, q: usize) -> __m128i {
    // SAFETY: SSE2 is available (contract); SALTS has 16 entries and `q < 4`, so the 4 salts
    // read from `4q` are in bounds (loadu: no alignment needed).
    unsafe {
        let s = _mm_loadu_si128(SALTS.as_ptr().add(4 * q).cast());
        let a = _mm_set1_epi32(h as i32);
        let even = _mm_mul_epu32(a, s); // lanes 0 and 2, 64-bit products
        let odd = _mm_mul_epu32(a, _mm_srli_epi64::<32>(s)); // lanes 1 and 3
                                                             // The low 32 bits of each product, back in lane order 0, 1, 2, 3.
        let even = _mm_shuffle_epi32::<0b00_00_10_00>(even);
        let odd = _mm_shuffle_epi32::<0b00_00_10_00>(odd);
        let p = _mm_unpacklo_epi32(even, odd);
        _mm_srl_epi32(p, _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32))
    }
}

/// `1 << (idx & 31)` in every 32-bit lane.
///
/// # Safety
/// The CPU supports SSE2.
#[inline(always)]
unsafe fn pow2(idx: __m128i) -> __m128i {
    // SAFETY: SSE2 is available (contract); only register operations.
    unsafe {
        let e = _mm_slli_epi32::<23>(_mm_and_si128(idx, _mm_set1_epi32(31)));
        _mm_cvttps_epi32(_mm_castsi128_ps(_mm_add_epi32(
            e,
            _mm_set1_epi32(0x3f80_0000),
        )))
    }
}

impl Vector for __m128i {
    crate::vector::vector_ops!(words: 4, zero: _mm_setzero_si128, load: _mm_loadu_si128,
        store: _mm_storeu_si128, or: _mm_or_si128, andnot: _mm_andnot_si128,
        is_zero: |v| _mm_movemask_epi8(_mm_cmpeq_epi32(v, _mm_setzero_si128())) == 0xffff);

    #[inline(always)]
    unsafe fn block_mask<S: Shape>(h: u32) -> [Self; MAX_REGS] {
        let (lanes, wide) = (S::LAYOUT.lanes(), S::LAYOUT.word_bits() == 64);
        // SAFETY: SSE2 is available (trait contract); `q < lanes / 4 <= 4`, and the registers
        // written, `q` or `2q` and `2q + 1`, are below `block_u32s / 4 <= 8 = MAX_REGS`.
        unsafe {
            let mut m = [_mm_setzero_si128(); MAX_REGS];
            for q in 0..lanes / 4 {
                let idx = lane_indices::<S>(h, q);
                let p = pow2(idx);
                if !wide {
                    m[q] = p;
                    continue;
                }
                // 64-bit words: lane bit `idx` is bit `idx` of the low word or bit `idx − 32`
                // of the high word; `pow2` already took `idx & 31`.
                let high = _mm_cmpgt_epi32(idx, _mm_set1_epi32(31));
                let lo = _mm_andnot_si128(high, p);
                let hi = _mm_and_si128(high, p);
                m[2 * q] = _mm_unpacklo_epi32(lo, hi);
                m[2 * q + 1] = _mm_unpackhi_epi32(lo, hi);
            }
            m
        }
    }
}

crate::bulk::entry_points!(Sse2, [target_feature(enable = "sse2")]);
