//! The counters of one key: per-ISA code that reads, updates and writes back the `L` counters a
//! key touches in its block (one per lane) for the counting and stable filters.
//!
//! Counter `k` of a block (`k = lane × W + bit`, see `bloomlanes_core::counting`) is `c` bits at
//! bit `c × (k mod 32/c)` of the block's counter word `k / (32/c)`. The `L` counters of a key lie
//! in `L` different words (each lane owns `W × c / 32 >= 4` whole words), so one key's update
//! never writes a word twice: the vector ISAs gather the `L` words, update every counter in its
//! lane at once (shift out, compare with the maximum, add or subtract one shifted back in) and
//! write the words back, AVX-512 with one scatter.
//!
//! [`CounterIsa::lanes`] has a scalar default (the portable and SSE2 paths, which have neither
//! gathers nor variable shifts); AVX2 and AVX-512 override it.

use bloomlanes_core::lane_bit;

use crate::shape::Shape;
use crate::vector::Isa;

/// Add one to every counter of the key that is below the maximum.
pub(crate) const INC: u8 = 0;
/// Subtract one from every counter of the key that is below the maximum (all are positive).
pub(crate) const DEC: u8 = 1;
/// Set every counter of the key to the maximum.
pub(crate) const MAX: u8 = 2;

/// Where counter `k` of a block lives: its word within the block's counters and its shift.
#[inline(always)]
const fn place<const C: u32>(k: u32) -> (usize, u32) {
    let per_word = 32 / C;
    ((k / per_word) as usize, (k % per_word) * C)
}

/// One ISA's update of a key's counters.
pub(crate) trait CounterIsa: Isa {
    /// Applies `OP` ([`INC`], [`DEC`] or [`MAX`]) to the `L` counters (`C` bits each) that `h`
    /// (the low 32 bits of the key's hash) picks in the block whose counters start at `cb`, and
    /// returns the lanes (bit `i` for lane `i`) whose counter went from 1 to 0 (only for `DEC`;
    /// 0 otherwise).
    ///
    /// # Safety
    /// `cb` points to the `S::LAYOUT.block_u32s() × C` counter words of one block, writable and
    /// not accessed by anyone else during the call; for `DEC` every counter of the key is
    /// positive; the CPU supports the ISA.
    #[inline(always)]
    unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(cb: *mut u32, h: u32) -> u32 {
        let layout = S::LAYOUT;
        let max = (1u32 << C) - 1;
        let mut zeros = 0;
        for lane in 0..layout.lanes() {
            let k = lane as u32 * layout.word_bits() + lane_bit(layout, u64::from(h), lane);
            let (w, sh) = place::<C>(k);
            // SAFETY: `k < L × W`, so `w < L × W × C / 32 = block_u32s × C`: the word lies in
            // the block's counters, which are ours to read and write (caller).
            let p = unsafe { cb.add(w) };
            // SAFETY: as above.
            let word = unsafe { *p };
            let v = (word >> sh) & max;
            let new = match OP {
                INC if v < max => word + (1 << sh),
                DEC if v < max => {
                    zeros |= u32::from(v == 1) << lane;
                    word.wrapping_sub(1 << sh)
                }
                MAX => word | (max << sh),
                _ => word,
            };
            // SAFETY: as above.
            unsafe { *p = new };
        }
        zeros
    }
}

impl CounterIsa for crate::portable::Portable {}

#[cfg(target_arch = "x86_64")]
impl CounterIsa for crate::arch::x86_64::sse2::Sse2 {}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use bloomlanes_core::SALTS;

    use super::{CounterIsa, DEC, INC, MAX};
    use crate::arch::x86_64::avx2::{lane_indices, Avx2};
    use crate::arch::x86_64::avx512::Avx512;
    use crate::shape::Shape;

    /// Counter indices `lane × W + bit` of lanes `first .. first + 8` for `h`.
    ///
    /// # Safety
    /// The CPU supports AVX2; `first + 8 <= S::LAYOUT.lanes()`.
    #[inline(always)]
    unsafe fn indices8<S: Shape>(h: u32, first: usize) -> __m256i {
        let w = S::LAYOUT.word_bits() as i32;
        // SAFETY: AVX2 is available (contract); `first + 8 <= 16` salts (contract).
        unsafe {
            let lanes = _mm256_add_epi32(
                _mm256_set1_epi32(first as i32),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            );
            _mm256_add_epi32(
                _mm256_mullo_epi32(lanes, _mm256_set1_epi32(w)),
                lane_indices::<S>(h, first),
            )
        }
    }

    /// [`CounterIsa::lanes`] for lanes `first .. first + 8` in AVX2 registers: one gather of
    /// the 8 words, the update in lanes, 8 scalar stores.
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`], with `first + 8 <= S::LAYOUT.lanes()` and AVX2.
    #[inline(always)]
    unsafe fn lanes8<S: Shape, const C: u32, const OP: u8>(
        cb: *mut u32,
        h: u32,
        first: usize,
    ) -> u32 {
        let per_shift = (32 / C).trailing_zeros() as i32;
        let c_shift = C.trailing_zeros() as i32;
        let max = ((1u32 << C) - 1) as i32;
        // SAFETY: AVX2 is available (contract). Every index `k < L × W`, so every word index
        // `k >> per_shift < block_u32s × C` lies in the block's counters (readable and ours,
        // contract); the gather reads those 8 words and the stores write the same 8 words,
        // which are distinct (each lane owns whole words), so no update is lost.
        unsafe {
            let k = indices8::<S>(h, first);
            let widx = _mm256_srl_epi32(k, _mm_cvtsi32_si128(per_shift));
            let sh = _mm256_sll_epi32(
                _mm256_and_si256(k, _mm256_set1_epi32((1 << per_shift) - 1)),
                _mm_cvtsi32_si128(c_shift),
            );
            let words = _mm256_i32gather_epi32::<4>(cb.cast_const().cast(), widx);
            let v = _mm256_and_si256(_mm256_srlv_epi32(words, sh), _mm256_set1_epi32(max));
            let below = _mm256_cmpgt_epi32(_mm256_set1_epi32(max), v);
            let one = _mm256_sllv_epi32(_mm256_set1_epi32(1), sh);
            let (new, zeros) = match OP {
                INC => (_mm256_add_epi32(words, _mm256_and_si256(one, below)), 0),
                DEC => {
                    let z = _mm256_cmpeq_epi32(v, _mm256_set1_epi32(1));
                    let zeros = _mm256_movemask_ps(_mm256_castsi256_ps(z)) as u32;
                    (_mm256_sub_epi32(words, _mm256_and_si256(one, below)), zeros)
                }
                MAX => (
                    _mm256_or_si256(words, _mm256_sllv_epi32(_mm256_set1_epi32(max), sh)),
                    0,
                ),
                _ => (words, 0),
            };
            let mut out = [0u32; 8];
            let mut at = [0u32; 8];
            _mm256_storeu_si256(out.as_mut_ptr().cast(), new);
            _mm256_storeu_si256(at.as_mut_ptr().cast(), widx);
            for (&w, &a) in out.iter().zip(&at) {
                *cb.add(a as usize) = w;
            }
            zeros << first
        }
    }

    impl CounterIsa for Avx2 {
        #[inline(always)]
        unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(cb: *mut u32, h: u32) -> u32 {
            let mut zeros = 0;
            for first in (0..S::LAYOUT.lanes()).step_by(8) {
                // SAFETY: the caller's contract, and `first + 8 <= lanes`.
                zeros |= unsafe { lanes8::<S, C, OP>(cb, h, first) };
            }
            zeros
        }
    }

    /// [`CounterIsa::lanes`] for the 16 lanes of a 16-lane layout in one AVX-512 register: a
    /// gather, the update, a scatter.
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`], with `S::LAYOUT.lanes() == 16` and AVX-512F.
    #[inline(always)]
    unsafe fn lanes16<S: Shape, const C: u32, const OP: u8>(cb: *mut u32, h: u32) -> u32 {
        let per_shift = (32 / C).trailing_zeros();
        let c_shift = C.trailing_zeros();
        let max = ((1u32 << C) - 1) as i32;
        let w = S::LAYOUT.word_bits() as i32;
        // SAFETY: AVX-512F is available (contract); SALTS is 16 u32 (64 bytes, read unaligned).
        // Every index `k < 16 × W`, so every word index `k >> per_shift < block_u32s × C` lies
        // in the block's counters (readable and ours, contract); the 16 words are distinct
        // (each lane owns whole words), so the scatter writes each once.
        unsafe {
            let bits = _mm512_srl_epi32(
                _mm512_mullo_epi32(
                    _mm512_set1_epi32(h as i32),
                    _mm512_loadu_si512(SALTS.as_ptr().cast()),
                ),
                _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32),
            );
            let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let k = _mm512_add_epi32(_mm512_mullo_epi32(lanes, _mm512_set1_epi32(w)), bits);
            let widx = _mm512_srl_epi32(k, _mm_cvtsi32_si128(per_shift as i32));
            let sh = _mm512_sll_epi32(
                _mm512_and_si512(k, _mm512_set1_epi32((1 << per_shift) - 1)),
                _mm_cvtsi32_si128(c_shift as i32),
            );
            let words = _mm512_i32gather_epi32::<4>(widx, cb.cast_const().cast());
            let v = _mm512_and_si512(_mm512_srlv_epi32(words, sh), _mm512_set1_epi32(max));
            let below = _mm512_cmplt_epi32_mask(v, _mm512_set1_epi32(max));
            let one = _mm512_sllv_epi32(_mm512_set1_epi32(1), sh);
            let (new, zeros) = match OP {
                INC => (_mm512_mask_add_epi32(words, below, words, one), 0),
                DEC => {
                    let z = _mm512_cmpeq_epi32_mask(v, _mm512_set1_epi32(1));
                    (
                        _mm512_mask_sub_epi32(words, below, words, one),
                        u32::from(z),
                    )
                }
                MAX => (
                    _mm512_or_si512(words, _mm512_sllv_epi32(_mm512_set1_epi32(max), sh)),
                    0,
                ),
                _ => (words, 0),
            };
            _mm512_i32scatter_epi32::<4>(cb.cast(), widx, new);
            zeros
        }
    }

    impl CounterIsa for Avx512 {
        #[inline(always)]
        unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(cb: *mut u32, h: u32) -> u32 {
            if S::LAYOUT.lanes() == 16 {
                // SAFETY: the caller's contract; 16 lanes; AVX-512F is available.
                unsafe { lanes16::<S, C, OP>(cb, h) }
            } else {
                // SAFETY: the caller's contract; AVX-512F implies AVX2 (Rust's feature model).
                unsafe { <Avx2 as CounterIsa>::lanes::<S, C, OP>(cb, h) }
            }
        }
    }
}
