//! AVX2: 8 lanes of 32 bits per register. The lane bit indices of 8 lanes come from one
//! `vpmulld` of the splatted `lo32(hash)` by the salts and one shift; `vpsllvd` (32-bit words) or
//! `vpsllvq` (64-bit words) turns them into the mask; `vptest` checks it against the block.
//! Integer keys are hashed 4 at a time in 64-bit lanes (the multiply emulated with `vpmuludq`).
//!
//! Every function here is `unsafe` with the contract "the CPU supports AVX2" and is only reached
//! through the `#[target_feature(enable = "avx2")]` entry points at the bottom (or the AVX-512
//! ones, which imply AVX2), which the dispatcher calls only after detecting the features.

use core::arch::x86_64::*;

use bloomlanes_core::{xxh64_u64, SALTS};

use crate::shape::Shape;
use crate::vector::{Vector, MAX_REGS};

/// The AVX2 instruction set.
pub(crate) struct Avx2;

crate::vector::isa!(Avx2, __m256i, __m256i, hash_avx2);

/// XXH64 of `u64` keys in AVX2 lanes (see [`super::HYBRID_HASH_AVX2`]).
///
/// # Safety
/// The CPU supports AVX2; `keys.len() == out.len()`.
#[inline(always)]
unsafe fn hash_avx2(keys: &[u64], seed: u64, out: &mut [u64]) {
    let n = keys.len();
    let mut i = 0;
    if super::HYBRID_HASH_AVX2 {
        // 4 keys in vector lanes and the next 4 with scalar `imul`, interleaved: the two
        // use different execution units, so their multiplies overlap.
        while i + 8 <= n {
            // SAFETY: AVX2 is available (contract); the 4 u64 read at `i` lie below
            // `i + 8 <= n = keys.len()`.
            let v = unsafe { xxh64_u64x4(_mm256_loadu_si256(keys.as_ptr().add(i).cast()), seed) };
            for (o, &k) in out[i + 4..i + 8].iter_mut().zip(&keys[i + 4..i + 8]) {
                *o = xxh64_u64(k, seed);
            }
            // SAFETY: AVX2 is available (contract); the 4 u64 written at `i` lie below
            // `i + 8 <= n = out.len()`.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), v) };
            i += 8;
        }
    }
    while i + 4 <= n {
        // SAFETY: AVX2 is available (contract); the 4 u64 read from `keys` and written to
        // `out` at `i` lie below `i + 4 <= n`, the length of both.
        unsafe {
            let k = _mm256_loadu_si256(keys.as_ptr().add(i).cast());
            _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), xxh64_u64x4(k, seed));
        }
        i += 4;
    }
    for (o, &k) in out[i..].iter_mut().zip(&keys[i..]) {
        *o = xxh64_u64(k, seed);
    }
}

/// Lane bit indices (one per 32-bit lane) of lanes `first .. first + 8` of a block of `S`.
///
/// # Safety
/// The CPU supports AVX2; `first + 8 <= 16`.
#[inline(always)]
pub(crate) unsafe fn lane_indices<S: Shape>(h: u32, first: usize) -> __m256i {
    // SAFETY: AVX2 is available (contract); SALTS has 16 entries and `first + 8 <= 16`, so the
    // 8 salts read are in bounds (loadu: no alignment needed).
    unsafe {
        let salts = _mm256_loadu_si256(SALTS.as_ptr().add(first).cast());
        let p = _mm256_mullo_epi32(_mm256_set1_epi32(h as i32), salts);
        _mm256_srl_epi32(p, _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32))
    }
}

/// 64-bit-word masks `1 << idx` of the 8 lanes whose indices are the 8 u32 of `idx`: lanes 0..4
/// and 4..8 as two registers of 4 × u64.
///
/// # Safety
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn pow2_u64x8(idx: __m256i) -> [__m256i; 2] {
    // SAFETY: AVX2 is available (contract); only register operations.
    unsafe {
        let one = _mm256_set1_epi64x(1);
        let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(idx));
        let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(idx));
        [_mm256_sllv_epi64(one, lo), _mm256_sllv_epi64(one, hi)]
    }
}

impl Vector for __m256i {
    crate::vector::vector_ops!(words: 8, zero: _mm256_setzero_si256, load: _mm256_loadu_si256,
        store: _mm256_storeu_si256, or: _mm256_or_si256, andnot: _mm256_andnot_si256,
        is_zero: |v| _mm256_testz_si256(v, v) != 0);

    #[inline(always)]
    unsafe fn block_mask<S: Shape>(h: u32) -> [Self; MAX_REGS] {
        let layout = S::LAYOUT;
        // SAFETY: AVX2 is available (trait contract); `g < lanes / 8 <= 2`, so `8g + 8 <= 16`
        // salts, and the registers written, `g` or `2g` and `2g + 1`, are below
        // `block_u32s / 8 <= 4 < MAX_REGS`.
        unsafe {
            let mut m = [_mm256_setzero_si256(); MAX_REGS];
            for g in 0..layout.lanes() / 8 {
                let idx = lane_indices::<S>(h, 8 * g);
                if layout.word_bits() == 32 {
                    m[g] = _mm256_sllv_epi32(_mm256_set1_epi32(1), idx);
                } else {
                    [m[2 * g], m[2 * g + 1]] = pow2_u64x8(idx);
                }
            }
            m
        }
    }
}

/// `a × b mod 2^64` per 64-bit lane from three 32 × 32 → 64 multiplies (AVX2 has no `vpmullq`).
///
/// # Safety
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn mul64(a: __m256i, b: u64) -> __m256i {
    // SAFETY: AVX2 is available (contract); only register operations.
    unsafe {
        let b_lo = _mm256_set1_epi64x(b as i64);
        let b_hi = _mm256_set1_epi64x((b >> 32) as i64);
        let lo = _mm256_mul_epu32(a, b_lo);
        let cross = _mm256_add_epi64(
            _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), b_lo),
            _mm256_mul_epu32(a, b_hi),
        );
        _mm256_add_epi64(lo, _mm256_slli_epi64::<32>(cross))
    }
}

/// `x` rotated left by `L` bits in every 64-bit lane; `R` must be `64 − L`.
///
/// # Safety
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    const { assert!(L + R == 64) };
    // SAFETY: AVX2 is available (contract); only register operations.
    unsafe { _mm256_or_si256(_mm256_slli_epi64::<L>(x), _mm256_srli_epi64::<R>(x)) }
}

/// `xxh64_u64` of 4 keys at once, lane for lane the core's definition, with the core's
/// constants (`bloomlanes_core::xxh64`).
///
/// # Safety
/// The CPU supports AVX2.
#[inline(always)]
pub(crate) unsafe fn xxh64_u64x4(k: __m256i, seed: u64) -> __m256i {
    use bloomlanes_core::xxh64::{
        short_init, AVALANCHE_SHIFTS, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, ROUND_ROTATE,
        TAIL8_ROTATE,
    };
    const ROUND: i32 = ROUND_ROTATE as i32;
    const TAIL8: i32 = TAIL8_ROTATE as i32;
    const S0: i32 = AVALANCHE_SHIFTS[0] as i32;
    const S1: i32 = AVALANCHE_SHIFTS[1] as i32;
    const S2: i32 = AVALANCHE_SHIFTS[2] as i32;
    // SAFETY: AVX2 is available (contract); only register operations.
    unsafe {
        let set = |v: u64| _mm256_set1_epi64x(v as i64);
        // round(0, key) = rotl(key × P2, ROUND_ROTATE) × P1
        let r = mul64(
            rotl::<ROUND, { 64 - ROUND }>(mul64(k, PRIME64_2)),
            PRIME64_1,
        );
        // An 8-byte input: h = short_init(seed) + 8, then the one 8-byte tail step.
        let mut h = _mm256_xor_si256(set(short_init(seed).wrapping_add(8)), r);
        h = _mm256_add_epi64(
            mul64(rotl::<TAIL8, { 64 - TAIL8 }>(h), PRIME64_1),
            set(PRIME64_4),
        );
        // avalanche
        h = _mm256_xor_si256(h, _mm256_srli_epi64::<S0>(h));
        h = mul64(h, PRIME64_2);
        h = _mm256_xor_si256(h, _mm256_srli_epi64::<S1>(h));
        h = mul64(h, PRIME64_3);
        _mm256_xor_si256(h, _mm256_srli_epi64::<S2>(h))
    }
}

crate::bulk::entry_points!(Avx2, [target_feature(enable = "avx2")]);

/// XXH64 of `u64` keys, 4 at a time in AVX2 lanes only, whatever [`super::HYBRID_HASH_AVX2`]
/// says (for the benchmark that decides it).
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn hash_u64_vector(keys: &[u64], seed: u64, out: &mut [u64]) {
    let n = keys.len().min(out.len());
    let mut i = 0;
    // SAFETY: AVX2 is available (contract); each step reads `keys[i .. i + 4]` and writes
    // `out[i .. i + 4]`, with `i + 4 <= n`, the length of both prefixes.
    unsafe {
        while i + 4 <= n {
            let k = _mm256_loadu_si256(keys.as_ptr().add(i).cast());
            _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), xxh64_u64x4(k, seed));
            i += 4;
        }
    }
    for (o, &k) in out[i..n].iter_mut().zip(&keys[i..n]) {
        *o = xxh64_u64(k, seed);
    }
}
