//! AVX-512 (F + DQ): 16 lanes of 32 bits or 8 of 64 bits per register. A whole 16×32 or 8×64
//! block (one cache line) is one register: one `vpmulld`, one shift, one `vpsllvd`/`vpsllvq`,
//! one compare into a mask register. XXH64 of 8 integer keys at once with `vpmullq`.
//!
//! Every function here is `unsafe` with the contract "the CPU supports AVX-512F and AVX-512DQ"
//! (which, in Rust's feature model, implies AVX2); it is only reached through the entry points
//! at the bottom, which the dispatcher calls only after detecting both features.

use core::arch::x86_64::*;

use bloomlanes_core::xxh64::{PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5};
use bloomlanes_core::{xxh64_u64, Layout, SALTS};

use super::avx2::{indices as indices8, Avx2};
use crate::bulk::Kernel;

/// The AVX-512 kernel.
pub(crate) struct Avx512;

/// Lane bit indices of all 16 lanes.
#[inline(always)]
unsafe fn indices16(layout: Layout, h: u32) -> __m512i {
    // SAFETY: AVX-512F is available (module contract); SALTS is 16 × u32 = 64 bytes, read
    // unaligned.
    unsafe {
        let s = _mm512_loadu_si512(SALTS.as_ptr().cast());
        let p = _mm512_mullo_epi32(_mm512_set1_epi32(h as i32), s);
        match layout.word_bits() {
            32 => _mm512_srli_epi32::<27>(p),
            _ => _mm512_srli_epi32::<26>(p),
        }
    }
}

/// 64-bit masks `1 << idx` of 8 lanes whose indices are the 8 u32 of `idx`.
#[inline(always)]
unsafe fn mask64(idx: __m256i) -> __m512i {
    // SAFETY: AVX-512F is available (module contract).
    unsafe { _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_cvtepu32_epi64(idx)) }
}

/// The block mask of a 512- or 1024-bit block as 1 or 2 registers (8x32 is left to AVX2).
#[inline(always)]
unsafe fn masks(layout: Layout, hash: u64) -> ([__m512i; 2], usize) {
    let h = hash as u32;
    // SAFETY: AVX-512F is available (module contract); AVX2 is implied by it.
    unsafe {
        match layout {
            Layout::L16x32 => {
                let m = _mm512_sllv_epi32(_mm512_set1_epi32(1), indices16(layout, h));
                ([m, _mm512_setzero_si512()], 1)
            }
            Layout::L8x64 => ([mask64(indices8(layout, h, 0)), _mm512_setzero_si512()], 1),
            _ => {
                let idx = indices16(layout, h);
                let lo = _mm512_castsi512_si256(idx);
                let hi = _mm512_extracti64x4_epi64::<1>(idx);
                ([mask64(lo), mask64(hi)], 2)
            }
        }
    }
}

impl Kernel for Avx512 {
    #[inline(always)]
    unsafe fn contains(layout: Layout, block: *const u32, hash: u64) -> bool {
        if layout == Layout::L8x32 {
            // SAFETY: AVX2 is implied by AVX-512F; the block contract is forwarded.
            return unsafe { Avx2::contains(layout, block, hash) };
        }
        // SAFETY: AVX-512F is available; `block` points to `n × 16` readable u32s (the block).
        unsafe {
            let (m, n) = masks(layout, hash);
            let mut missing = _mm512_setzero_si512();
            for (i, &mi) in m.iter().enumerate().take(n) {
                let b = _mm512_loadu_si512(block.add(16 * i).cast());
                missing = _mm512_or_si512(missing, _mm512_andnot_si512(b, mi));
            }
            _mm512_test_epi32_mask(missing, missing) == 0
        }
    }

    #[inline(always)]
    unsafe fn insert(layout: Layout, block: *mut u32, hash: u64) {
        if layout == Layout::L8x32 {
            // SAFETY: AVX2 is implied by AVX-512F; the block contract is forwarded.
            return unsafe { Avx2::insert(layout, block, hash) };
        }
        // SAFETY: as in `contains`; the block is writable and exclusively ours.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                let p = block.add(16 * i);
                let b = _mm512_loadu_si512(p.cast());
                _mm512_storeu_si512(p.cast(), _mm512_or_si512(b, mi));
            }
        }
    }

    #[inline(always)]
    unsafe fn mask(layout: Layout, hash: u64, out: &mut [u32; 32]) {
        if layout == Layout::L8x32 {
            // SAFETY: AVX2 is implied by AVX-512F.
            return unsafe { Avx2::mask(layout, hash, out) };
        }
        // SAFETY: AVX-512F is available; at most 2 × 16 = 32 u32s are stored into `out`.
        unsafe {
            let (m, n) = masks(layout, hash);
            for (i, &mi) in m.iter().enumerate().take(n) {
                _mm512_storeu_si512(out.as_mut_ptr().add(16 * i).cast(), mi);
            }
        }
    }

    #[inline(always)]
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]) {
        debug_assert_eq!(keys.len(), out.len());
        let mut i = 0;
        // SAFETY: AVX-512F/DQ are available; each iteration reads and writes 8 u64 at `i`,
        // with `i + 8 <= len` for both slices.
        unsafe {
            while i + 8 <= keys.len() {
                let k = _mm512_loadu_si512(keys.as_ptr().add(i).cast());
                _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), xxh64_u64x8(k, seed));
                i += 8;
            }
        }
        for (o, &k) in out[i..].iter_mut().zip(&keys[i..]) {
            *o = xxh64_u64(k, seed);
        }
    }
}

/// `xxh64_u64` of 8 keys at once, lane for lane the same as the core's scalar definition.
#[inline(always)]
unsafe fn xxh64_u64x8(k: __m512i, seed: u64) -> __m512i {
    // SAFETY: AVX-512F (rotates, shifts) and AVX-512DQ (`vpmullq`) are available.
    unsafe {
        let set = |v: u64| _mm512_set1_epi64(v as i64);
        let r = _mm512_mullo_epi64(
            _mm512_rol_epi64::<31>(_mm512_mullo_epi64(k, set(PRIME64_2))),
            set(PRIME64_1),
        );
        let mut h = _mm512_xor_si512(set(seed.wrapping_add(PRIME64_5).wrapping_add(8)), r);
        h = _mm512_add_epi64(
            _mm512_mullo_epi64(_mm512_rol_epi64::<27>(h), set(PRIME64_1)),
            set(PRIME64_4),
        );
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<33>(h));
        h = _mm512_mullo_epi64(h, set(PRIME64_2));
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<29>(h));
        h = _mm512_mullo_epi64(h, set(PRIME64_3));
        _mm512_xor_si512(h, _mm512_srli_epi64::<32>(h))
    }
}

crate::bulk::entry_points!(Avx512, "avx512f,avx512dq");
