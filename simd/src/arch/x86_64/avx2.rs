//! AVX2: 8 lanes of 32 bits per register. The lane bit indices of 8 lanes come from one
//! `vpmulld` of the splatted `lo32(hash)` by the salts and one shift; `vpsllvd` (32-bit words) or
//! `vpsllvq` (64-bit words) turns them into the mask; `vptest` checks it against the block.
//!
//! Every function here is `unsafe` with the contract "the CPU supports AVX2" and is only reached
//! through the `#[target_feature(enable = "avx2")]` entry points at the bottom, which the
//! dispatcher calls only after `is_x86_feature_detected!("avx2")`.

use core::arch::x86_64::*;

use bloomlanes_core::xxh64::{PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5};
use bloomlanes_core::{xxh64_u64, Layout, SALTS};

use crate::bulk::Kernel;

/// The AVX2 kernel.
pub(crate) struct Avx2;

/// Salts of lanes `8 × half ..` as one register.
#[inline(always)]
unsafe fn salts(half: usize) -> __m256i {
    // SAFETY: SALTS has 16 entries, so 8 from `8 × half` (half ∈ {0, 1}) are in bounds;
    // loadu has no alignment requirement.
    unsafe { _mm256_loadu_si256(SALTS.as_ptr().add(8 * half).cast()) }
}

/// Lane bit indices (one per 32-bit lane) of lanes `8 × half .. 8 × half + 8`.
#[inline(always)]
pub(crate) unsafe fn indices(layout: Layout, h: u32, half: usize) -> __m256i {
    // SAFETY: AVX2 is available (module contract).
    unsafe {
        let p = _mm256_mullo_epi32(_mm256_set1_epi32(h as i32), salts(half));
        match layout.word_bits() {
            32 => _mm256_srli_epi32::<27>(p),
            _ => _mm256_srli_epi32::<26>(p),
        }
    }
}

/// 32-bit-word masks: `1 << idx` in every lane.
#[inline(always)]
pub(crate) unsafe fn mask32(idx: __m256i) -> __m256i {
    // SAFETY: AVX2 is available (module contract).
    unsafe { _mm256_sllv_epi32(_mm256_set1_epi32(1), idx) }
}

/// 64-bit-word masks of 8 lanes: lanes 0..4 and 4..8 as two registers of 4 × u64.
#[inline(always)]
pub(crate) unsafe fn mask64(idx: __m256i) -> [__m256i; 2] {
    // SAFETY: AVX2 is available (module contract).
    unsafe {
        let one = _mm256_set1_epi64x(1);
        let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(idx));
        let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(idx));
        [_mm256_sllv_epi64(one, lo), _mm256_sllv_epi64(one, hi)]
    }
}

/// The block mask as `layout.block_bytes() / 32` registers (1, 2, 2 or 4), in block order.
#[inline(always)]
unsafe fn masks(layout: Layout, hash: u64) -> ([__m256i; 4], usize) {
    let h = hash as u32;
    // SAFETY: AVX2 is available (module contract).
    unsafe {
        let z = _mm256_setzero_si256();
        match layout {
            Layout::L8x32 => ([mask32(indices(layout, h, 0)), z, z, z], 1),
            Layout::L16x32 => (
                [
                    mask32(indices(layout, h, 0)),
                    mask32(indices(layout, h, 1)),
                    z,
                    z,
                ],
                2,
            ),
            Layout::L8x64 => {
                let [a, b] = mask64(indices(layout, h, 0));
                ([a, b, z, z], 2)
            }
            Layout::L16x64 => {
                let [a, b] = mask64(indices(layout, h, 0));
                let [c, d] = mask64(indices(layout, h, 1));
                ([a, b, c, d], 4)
            }
        }
    }
}

impl Kernel for Avx2 {
    #[inline(always)]
    unsafe fn contains(layout: Layout, block: *const u32, hash: u64) -> bool {
        // SAFETY: AVX2 is available (module contract); `block` points to `n × 8` readable
        // u32s (Kernel contract: n × 32 bytes = the block), read unaligned.
        unsafe {
            let (m, n) = masks(layout, hash);
            let mut missing = _mm256_setzero_si256();
            for (i, &mi) in m.iter().enumerate().take(n) {
                let b = _mm256_loadu_si256(block.add(8 * i).cast());
                missing = _mm256_or_si256(missing, _mm256_andnot_si256(b, mi));
            }
            _mm256_testz_si256(missing, missing) != 0
        }
    }

    #[inline(always)]
    unsafe fn insert(layout: Layout, block: *mut u32, hash: u64) {
        // SAFETY: as in `contains`; the block is writable and exclusively ours.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                let p = block.add(8 * i).cast::<__m256i>();
                _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p), mi));
            }
        }
    }

    #[inline(always)]
    unsafe fn mask(layout: Layout, hash: u64, out: &mut [u32; 32]) {
        // SAFETY: AVX2 is available; at most 4 × 8 = 32 u32s are stored into `out`.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                _mm256_storeu_si256(out.as_mut_ptr().add(8 * i).cast(), mi);
            }
        }
    }

    #[inline(always)]
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
        debug_assert_eq!(keys.len(), out.len());
        let n = keys.len().min(out.len());
        let (keys, out) = (&keys[..n], &mut out[..n]);
        let mut i = 0;
        if crate::arch::x86_64::HYBRID_HASH_AVX2 {
            // 4 keys in vector lanes and the next 4 with scalar `imul`, interleaved: the two
            // use different execution units, so their multiplies overlap.
            while i + 8 <= n {
                // SAFETY: AVX2 is available; 4 u64 are read at `i` and `i + 8 <= n`.
                let v =
                    unsafe { xxh64_u64x4(_mm256_loadu_si256(keys.as_ptr().add(i).cast()), seed) };
                for (o, &k) in out[i + 4..i + 8].iter_mut().zip(&keys[i + 4..i + 8]) {
                    *o = xxh64_u64(k, seed);
                }
                // SAFETY: AVX2 is available; 4 u64 are written at `i` and `i + 8 <= n`.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), v) };
                i += 8;
            }
        }
        while i + 4 <= n {
            // SAFETY: AVX2 is available; 4 u64 are read and written at `i`, `i + 4 <= n`.
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
}

/// `a × b mod 2^64` per 64-bit lane from three 32 × 32 → 64 multiplies (AVX2 has no `vpmullq`).
#[inline(always)]
unsafe fn mul64(a: __m256i, b: u64) -> __m256i {
    // SAFETY: AVX2 is available (module contract).
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

#[inline(always)]
unsafe fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    // SAFETY: AVX2 is available (module contract).
    unsafe { _mm256_or_si256(_mm256_slli_epi64::<L>(x), _mm256_srli_epi64::<R>(x)) }
}

/// `xxh64_u64` of 4 keys at once, lane for lane the same as the core's scalar definition.
#[inline(always)]
pub(crate) unsafe fn xxh64_u64x4(k: __m256i, seed: u64) -> __m256i {
    // SAFETY: AVX2 is available (module contract).
    unsafe {
        let set = |v: u64| _mm256_set1_epi64x(v as i64);
        // round(0, key) = rotl(key × P2, 31) × P1
        let r = mul64(rotl::<31, 33>(mul64(k, PRIME64_2)), PRIME64_1);
        let mut h = _mm256_xor_si256(set(seed.wrapping_add(PRIME64_5).wrapping_add(8)), r);
        h = _mm256_add_epi64(mul64(rotl::<27, 37>(h), PRIME64_1), set(PRIME64_4));
        // avalanche
        h = _mm256_xor_si256(h, _mm256_srli_epi64::<33>(h));
        h = mul64(h, PRIME64_2);
        h = _mm256_xor_si256(h, _mm256_srli_epi64::<29>(h));
        h = mul64(h, PRIME64_3);
        _mm256_xor_si256(h, _mm256_srli_epi64::<32>(h))
    }
}

crate::bulk::entry_points!(Avx2, "avx2");

/// XXH64 of `u64` keys, 4 at a time in AVX2 lanes only, whatever [`super::HYBRID_HASH_AVX2`] says (for
/// the benchmark that decides it).
///
/// # Safety
/// The CPU supports AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn hash_u64_vector(keys: &[u64], seed: u64, out: &mut [u64]) {
    let n = keys.len().min(out.len());
    let mut i = 0;
    // SAFETY: AVX2 is available (contract); each step reads and writes 4 u64 below `n`.
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
