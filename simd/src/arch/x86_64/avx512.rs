//! AVX-512 (F + DQ): 16 lanes of 32 bits or 8 of 64 bits per register. A whole 16×32 or 8×64
//! block (one cache line) is one register: one `vpmulld`, one shift, one `vpsllvd`/`vpsllvq`,
//! one compare into a mask register. The 256-bit 8x32 block is left to AVX2 registers
//! ([`Isa::Narrow`]). XXH64 of 8 integer keys at once with `vpmullq`.
//!
//! Every function here is `unsafe` with the contract "the CPU supports AVX-512F and AVX-512DQ"
//! (which, in Rust's feature model, implies AVX2); it is only reached through the entry points
//! at the bottom, which the dispatcher calls only after detecting both features.

use core::arch::x86_64::*;

use bloomlanes_core::SALTS;

use super::avx2::lane_indices as lane_indices8;
use crate::shape::Shape;
use crate::vector::{Vector, MAX_REGS};

/// The AVX-512 (F + DQ) instruction set.
pub(crate) struct Avx512;

crate::vector::isa!(Avx512, __m512i, __m256i, hash_avx512);

/// The found words of the whole groups of 64 `labels` (bit set where a label is not 0), 16
/// labels a `vptestmd`; returns the labels done (a multiple of 64).
///
/// # Safety
/// The CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn nonzero_bits(labels: &[u32], found: &mut [u64]) -> usize {
    let whole = (labels.len() / 64).min(found.len());
    for (w, group) in found[..whole].iter_mut().zip(labels.chunks_exact(64)) {
        let mut bits = 0u64;
        for (q, part) in group.chunks_exact(16).enumerate() {
            // SAFETY: AVX-512F is available (contract); `part` is 16 u32 (64 bytes), read
            // unaligned.
            let v = unsafe { _mm512_loadu_si512(part.as_ptr().cast()) };
            bits |= u64::from(_mm512_test_epi32_mask(v, v)) << (16 * q);
        }
        *w = bits;
    }
    whole * 64
}

/// XXH64 of `u64` keys, 8 at a time in AVX-512 lanes.
///
/// # Safety
/// The CPU supports AVX-512F and DQ; `keys.len() == out.len()`.
#[inline(always)]
unsafe fn hash_avx512(keys: &[u64], seed: u64, out: &mut [u64]) {
    let whole = keys.len() / 8 * 8;
    for (k, o) in keys[..whole].chunks_exact(8).zip(out.chunks_exact_mut(8)) {
        // SAFETY: AVX-512F/DQ are available (contract); `k` and `o` are 8 u64 (64 bytes)
        // each, read and written unaligned.
        unsafe {
            let v = xxh64_u64x8(_mm512_loadu_si512(k.as_ptr().cast()), seed);
            _mm512_storeu_si512(o.as_mut_ptr().cast(), v);
        }
    }
    // SAFETY: scalar code.
    unsafe { crate::vector::hash_u64_scalar(&keys[whole..], seed, &mut out[whole..]) }
}

/// Lane bit indices of all 16 lanes of a block of `S`.
///
/// # Safety
/// The CPU supports AVX-512F.
#[inline(always)]
pub(crate) unsafe fn lane_indices16<S: Shape>(h: u32) -> __m512i {
    // SAFETY: AVX-512F is available (contract); SALTS is 16 × u32 = 64 bytes, read unaligned.
    unsafe {
        let s = _mm512_loadu_si512(SALTS.as_ptr().cast());
        let p = _mm512_mullo_epi32(_mm512_set1_epi32(h as i32), s);
        _mm512_srl_epi32(p, _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32))
    }
}

/// 64-bit masks `1 << idx` of 8 lanes whose indices are the 8 u32 of `idx`.
///
/// # Safety
/// The CPU supports AVX-512F.
#[inline(always)]
unsafe fn pow2_u64x8(idx: __m256i) -> __m512i {
    // SAFETY: AVX-512F is available (contract); only register operations.
    unsafe { _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_cvtepu32_epi64(idx)) }
}

impl Vector for __m512i {
    crate::vector::vector_ops!(words: 16, zero: _mm512_setzero_si512, load: _mm512_loadu_si512,
        store: _mm512_storeu_si512, or: _mm512_or_si512, andnot: _mm512_andnot_si512,
        is_zero: |v| _mm512_test_epi32_mask(v, v) == 0);

    #[inline(always)]
    unsafe fn block_mask<S: Shape>(h: u32) -> [Self; MAX_REGS] {
        let layout = S::LAYOUT;
        // SAFETY: AVX-512F (and so AVX2) is available (trait contract); the registers written
        // (0, or 0 and 1) are below MAX_REGS; `lane_indices8` reads salts 0..8.
        unsafe {
            let mut m = [_mm512_setzero_si512(); MAX_REGS];
            match (layout.lanes(), layout.word_bits()) {
                (16, 32) => m[0] = _mm512_sllv_epi32(_mm512_set1_epi32(1), lane_indices16::<S>(h)),
                (8, 64) => m[0] = pow2_u64x8(lane_indices8::<S>(h, 0)),
                (16, 64) => {
                    let idx = lane_indices16::<S>(h);
                    m[0] = pow2_u64x8(_mm512_castsi512_si256(idx));
                    m[1] = pow2_u64x8(_mm512_extracti64x4_epi64::<1>(idx));
                }
                // 8x32 (256 bits) is held in `Isa::Narrow` registers, never here.
                _ => {}
            }
            m
        }
    }
}

/// `xxh64_u64` of 8 keys at once, lane for lane the core's definition, with the core's
/// constants (`bloomlanes_core::xxh64`).
///
/// # Safety
/// The CPU supports AVX-512F and AVX-512DQ.
#[inline(always)]
unsafe fn xxh64_u64x8(k: __m512i, seed: u64) -> __m512i {
    use bloomlanes_core::xxh64::{
        short_init, AVALANCHE_SHIFTS, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, ROUND_ROTATE,
        TAIL8_ROTATE,
    };
    const ROUND: u32 = ROUND_ROTATE;
    const TAIL8: u32 = TAIL8_ROTATE;
    const S0: u32 = AVALANCHE_SHIFTS[0];
    const S1: u32 = AVALANCHE_SHIFTS[1];
    const S2: u32 = AVALANCHE_SHIFTS[2];
    // SAFETY: AVX-512F (rotates, shifts) and AVX-512DQ (`vpmullq`) are available (contract);
    // only register operations.
    unsafe {
        let set = |v: u64| _mm512_set1_epi64(v as i64);
        // round(0, key) = rotl(key × P2, ROUND_ROTATE) × P1
        let r = _mm512_mullo_epi64(
            _mm512_rol_epi64::<{ ROUND as i32 }>(_mm512_mullo_epi64(k, set(PRIME64_2))),
            set(PRIME64_1),
        );
        // An 8-byte input: h = short_init(seed) + 8, then the one 8-byte tail step.
        let mut h = _mm512_xor_si512(set(short_init(seed).wrapping_add(8)), r);
        h = _mm512_add_epi64(
            _mm512_mullo_epi64(_mm512_rol_epi64::<{ TAIL8 as i32 }>(h), set(PRIME64_1)),
            set(PRIME64_4),
        );
        // avalanche
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<S0>(h));
        h = _mm512_mullo_epi64(h, set(PRIME64_2));
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<S1>(h));
        h = _mm512_mullo_epi64(h, set(PRIME64_3));
        _mm512_xor_si512(h, _mm512_srli_epi64::<S2>(h))
    }
}

crate::bulk::entry_points!(Avx512, [target_feature(enable = "avx512f,avx512dq")]);
