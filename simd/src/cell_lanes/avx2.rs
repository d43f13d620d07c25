//! The writes of a key's 4- and 8-bit cells in AVX2 registers, in *word space*: the whole
//! block's cell words are swept a register (8 words) at a time, each word's lane bit index is
//! broadcast to it with one permute, and the cell of the words the key touches is updated under
//! a mask (shift out, compare, add, subtract or raise to the value, shifted back in): a fixed,
//! branch-free sequence of about 12 instructions per register, 2 registers for 8x32 with 4-bit
//! cells. 16-bit cells keep the scalar lanes (16 to 64 registers per block: see `mod.rs`).
//!
//! Reads ([`read_avx2`], also the AVX-512 path's for one key) test the key's mask against
//! the image block from the same lane bit indices, then gather the key's cell words 8 at a
//! time (`vpgatherdd`), shift each cell down (`vpsrlvd`), narrow them to 16 bits and take the
//! smallest with one `phminposuw`.

use core::arch::x86_64::*;

use super::{words_per_lane, Block, CellIsa, DEC, INC, MAX};
use crate::arch::x86_64::avx2::{lane_indices, Avx2};
use crate::shape::Shape;
use crate::vector;

/// Clears, in the image block of `S` at `ib`, the key's bit in every lane `i` whose bit
/// `i` is set in `flags`; `groups[g]` holds the lane bit indices of lanes `8g .. 8g + 8`.
///
/// # Safety
/// The image block is readable, writable and ours; the CPU supports AVX2.
#[inline(always)]
unsafe fn clear_image_avx2<S: Shape>(ib: *mut u32, groups: [__m256i; 2], flags: u32) {
    // SAFETY: AVX2 is available (contract); group `g < L / 8` covers image words
    // `8g .. 8g + 8` (32-bit lanes) or `16g .. 16g + 16` (64-bit lanes), inside the block's
    // `L × W / 32` words, which are ours (contract).
    unsafe {
        let pow = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        for (g, &bits) in groups.iter().enumerate().take(S::LAYOUT.lanes() / 8) {
            let f = _mm256_set1_epi32((flags >> (8 * g)) as i32);
            let f = _mm256_cmpeq_epi32(_mm256_and_si256(f, pow), pow);
            if S::LAYOUT.word_bits() == 32 {
                let p = ib.add(8 * g).cast::<__m256i>();
                let m = _mm256_sllv_epi32(_mm256_set1_epi32(1), bits);
                let img = _mm256_loadu_si256(p);
                _mm256_storeu_si256(p, _mm256_andnot_si256(_mm256_and_si256(m, f), img));
            } else {
                let halves = [
                    (_mm256_castsi256_si128(bits), _mm256_castsi256_si128(f)),
                    (
                        _mm256_extracti128_si256::<1>(bits),
                        _mm256_extracti128_si256::<1>(f),
                    ),
                ];
                for (k, (b, f)) in halves.into_iter().enumerate() {
                    let p = ib.add(16 * g + 8 * k).cast::<__m256i>();
                    let m = _mm256_sllv_epi64(_mm256_set1_epi64x(1), _mm256_cvtepu32_epi64(b));
                    let f = _mm256_cvtepi32_epi64(f);
                    let img = _mm256_loadu_si256(p);
                    _mm256_storeu_si256(p, _mm256_andnot_si256(_mm256_and_si256(m, f), img));
                }
            }
        }
    }
}

/// The lane flags (bit `lane`) of one register's zero-word mask `z` (bit `t` for word
/// `first + t` of the block, `words` words), with `q` words per lane.
#[inline(always)]
fn lane_flags(z: u32, first: usize, words: usize, q: usize) -> u32 {
    let step = q.min(words);
    let group = (1u32 << step) - 1;
    let mut flags = 0;
    let mut t = 0;
    while t < words {
        flags |= u32::from((z >> t) & group != 0) << ((first + t) / q);
        t += step;
    }
    flags
}

/// [`CellIsa::lanes`] in AVX2 registers (8 cell words each).
///
/// # Safety
/// As [`CellIsa::lanes`], with AVX2.
#[inline(always)]
unsafe fn lanes_avx2<S: Shape, const C: u32, const OP: u8>(b: Block, h: u32, v: u32) {
    let (ib, cb) = (b.image, b.cells);
    let q = words_per_lane::<S, C>();
    let regs = S::LAYOUT.lanes() * q / 8;
    let max = ((1u32 << C) - 1) as i32;
    // SAFETY: AVX2 is available (contract). Register `r` covers cell words
    // `8r .. 8r + 8` and `r < L·Q / 8`, so it lies in the block's `L·Q = block_u32s × C`
    // cell words, which are readable, writable and ours (contract); the image bits
    // cleared are `lane × W + bit < L × W` of the block's image, also ours (contract). The
    // lane indices read salts `8g .. 8g + 8` with `8g + 8 <= L <= 16`.
    unsafe {
        let per_shift = _mm_cvtsi32_si128((32 / C).trailing_zeros() as i32);
        let c_shift = _mm_cvtsi32_si128(C.trailing_zeros() as i32);
        let q_shift = _mm_cvtsi32_si128(q.trailing_zeros() as i32);
        let groups = [
            lane_indices::<S>(h, 0),
            if S::LAYOUT.lanes() == 16 {
                lane_indices::<S>(h, 8)
            } else {
                _mm256_setzero_si256()
            },
        ];
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut zeros = 0;
        for r in 0..regs {
            // Word `8r + t` belongs to lane `(8r + t) / Q`, whose group of 8 lanes is
            // `r / Q` (8Q is a multiple of 8), at sub-word `(8r + t) mod Q`.
            let word = _mm256_add_epi32(_mm256_set1_epi32(8 * r as i32), iota);
            let lane = _mm256_and_si256(_mm256_srl_epi32(word, q_shift), _mm256_set1_epi32(7));
            let sub = _mm256_and_si256(word, _mm256_set1_epi32(q as i32 - 1));
            let bit = _mm256_permutevar8x32_epi32(groups[r / q], lane);
            let sel = _mm256_cmpeq_epi32(_mm256_srl_epi32(bit, per_shift), sub);
            let sh = _mm256_sll_epi32(
                _mm256_and_si256(bit, _mm256_set1_epi32((32 / C) as i32 - 1)),
                c_shift,
            );
            let p = cb.add(8 * r).cast::<__m256i>();
            let c = _mm256_loadu_si256(p);
            let cell = _mm256_and_si256(_mm256_srlv_epi32(c, sh), _mm256_set1_epi32(max));
            let below = _mm256_and_si256(sel, _mm256_cmpgt_epi32(_mm256_set1_epi32(max), cell));
            let one = _mm256_sllv_epi32(_mm256_set1_epi32(1), sh);
            let new = match OP {
                INC => _mm256_add_epi32(c, _mm256_and_si256(below, one)),
                DEC => {
                    let z = _mm256_and_si256(sel, _mm256_cmpeq_epi32(cell, _mm256_set1_epi32(1)));
                    let z = _mm256_movemask_ps(_mm256_castsi256_ps(z)) as u32;
                    zeros |= lane_flags(z, 8 * r, 8, q);
                    _mm256_sub_epi32(c, _mm256_and_si256(below, one))
                }
                MAX => {
                    // The cell becomes `v` where `v` is larger: add `(v − cell) << sh`.
                    let vv = _mm256_set1_epi32(v as i32);
                    let gt = _mm256_and_si256(sel, _mm256_cmpgt_epi32(vv, cell));
                    let up = _mm256_sllv_epi32(_mm256_sub_epi32(vv, cell), sh);
                    _mm256_add_epi32(c, _mm256_and_si256(gt, up))
                }
                _ => c,
            };
            _mm256_storeu_si256(p, new);
        }
        if OP == DEC {
            clear_image_avx2::<S>(ib, groups, zeros);
        }
    }
}

/// [`CellIsa::read`] in AVX2 registers, 8 lanes at a time.
///
/// # Safety
/// As [`CellIsa::read`], with AVX2.
#[inline(always)]
pub(super) unsafe fn read_avx2<S: Shape, const C: u32>(b: Block, h: u64) -> u32 {
    let (ib, cb) = (b.image, b.cells);
    let q = words_per_lane::<S, C>() as u32;
    let groups = S::LAYOUT.lanes() / 8;
    // SAFETY: AVX2 is available (contract). The image words read are `8g .. 8g + 8 <= L` of
    // the block's `L` words (32-bit lanes), readable (contract); lane `8g + t` gathers cell word
    // `(8g + t)·Q + bit / per < L·Q = block_u32s × C`, readable (contract).
    unsafe {
        let bits = [
            lane_indices::<S>(h as u32, 0),
            if groups == 2 {
                lane_indices::<S>(h as u32, 8)
            } else {
                _mm256_setzero_si256()
            },
        ];
        if S::LAYOUT.word_bits() == 32 {
            for (g, &bg) in bits.iter().enumerate().take(groups) {
                let img = _mm256_loadu_si256(ib.add(8 * g).cast());
                if _mm256_testc_si256(img, _mm256_sllv_epi32(_mm256_set1_epi32(1), bg)) == 0 {
                    return 0;
                }
            }
        } else if !vector::contains::<Avx2, S>(ib, h) {
            return 0;
        }
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut acc = _mm_set1_epi16(-1);
        for (g, &bg) in bits.iter().enumerate().take(groups) {
            let lane = _mm256_add_epi32(iota, _mm256_set1_epi32(8 * g as i32));
            let first = _mm256_sll_epi32(lane, _mm_cvtsi32_si128(q.trailing_zeros() as i32));
            let cells = gathered_cells!(C, first, bg, |w| _mm256_i32gather_epi32::<4>(cb.cast(), w);
                _mm256_add_epi32, _mm256_srl_epi32, _mm256_sll_epi32, _mm256_and_si256,
                _mm256_srlv_epi32, _mm256_set1_epi32);
            // Cells are below 2^16: the signed pack keeps them; each 128-bit half holds its 4.
            let packed = _mm256_packus_epi32(cells, cells);
            let halves = _mm_min_epu16(
                _mm256_castsi256_si128(packed),
                _mm256_extracti128_si256::<1>(packed),
            );
            acc = _mm_min_epu16(acc, halves);
        }
        (_mm_cvtsi128_si32(_mm_minpos_epu16(acc)) & 0xFFFF) as u32
    }
}

impl CellIsa for Avx2 {
    type Ahead = ();

    #[inline(always)]
    unsafe fn ahead<S: Shape, const C: u32>(_: u64) {}

    #[inline(always)]
    unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(b: Block, h: u32, v: u32) {
        // SAFETY: the caller's contract (AVX2 is this ISA).
        unsafe { lanes_avx2::<S, C, OP>(b, h, v) }
    }

    #[inline(always)]
    unsafe fn read<S: Shape, const C: u32>(b: Block, h: u64) -> u32 {
        // SAFETY: the caller's contract (AVX2 is this ISA).
        unsafe { read_avx2::<S, C>(b, h) }
    }
}
