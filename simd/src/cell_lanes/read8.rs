//! [`CellIsa::read8`](super::CellIsa::read8) of 8-lane blocks whose cell block is 32 or 64
//! words (8x32 with 4- or 8-bit cells, 8x64 with 4-bit cells: [`fits`]) in AVX-512 registers,
//! without gathers: two keys share a register (8 lanes each) for their lane bit indices and
//! image test; each key's whole cell block (128 or 256 bytes: 2 or 4 registers) is loaded and
//! its 8 cell words picked in lanes with `vpermt2d`; an absent key loads a block of zeros
//! instead (a branch-free pointer select, so that an absent key reads no cell line and answers
//! 0); the 8 keys' smallest cells come from one transposing min tree (unpacks and one 128-bit
//! shuffle for all 8, instead of a `phminposuw` per key).
//!
//! Measured against the gathers of `read_pair` (same-run A/B, 2-core Xeon, see the commits:
//! 8x32 first, then 8x64, whose 4-bit cells have the 64-word geometry of 8x32's 8-bit ones).

use core::arch::x86_64::*;
use core::hint::select_unpredictable;

use bloomlanes_core::SALTS;

use super::{words_per_lane, Block, Eight};
use crate::shape::Shape;

/// The cells an absent key reads: zeros, as many words as the widest cell block read here
/// (8x32 with 8-bit cells: 64 words), aligned to a cache line.
#[repr(align(64))]
struct Zeros([u32; 64]);

/// [`Zeros`]' one instance.
static ZEROS: Zeros = Zeros([0; 64]);

/// Whether blocks of `S` with `C`-bit cells are read here: 8 lanes, and a cell block of 32 or
/// 64 words (2 or 4 registers).
pub(super) const fn fits<S: Shape, const C: u32>() -> bool {
    S::LAYOUT.lanes() == 8 && matches!(8 * words_per_lane::<S, C>(), 32 | 64)
}

/// The 16 words from word `16 r` at `p`.
///
/// # Safety
/// AVX-512F is available; the words are readable.
#[inline(always)]
unsafe fn load16(p: *const u32, r: usize) -> __m512i {
    // SAFETY: the caller's contract.
    unsafe { _mm512_loadu_si512(p.add(16 * r).cast()) }
}

/// The 16 cells (`C` bits each, in 32-bit lanes) of keys `2j` and `2j + 1` of a group: lanes
/// `0..8` key `2j`'s cells in lane order, lanes `8..16` key `2j + 1`'s; 0 everywhere for a key
/// whose image block lacks one of its bits.
///
/// # Safety
/// AVX-512F/BW/VL are available; `S` and `C` [`fits`]; blocks `b` lie in the image and cells
/// from `at`, readable.
#[inline(always)]
unsafe fn pair_cells<S: Shape, const C: u32, const IMAGE: bool>(
    at: Block,
    b: [usize; 2],
    hashes: __m512i,
    j: usize,
) -> __m512i {
    let q = words_per_lane::<S, C>();
    let cper = 8 * q;
    // SAFETY: AVX-512F/BW/VL are available (contract). The image block is the `per` words at
    // `b[k] × per` (8 of 8x32, 16 of 8x64), in the image (contract); the cell block is the
    // `cper` words at `b[k] × cper`, in the cells (contract), or ZEROS (64 >= cper words);
    // every load reads 16 words at offsets `0, 16, ... < cper` of one of them.
    unsafe {
        // Key `2j` in lanes 0..8 and `2j + 1` in lanes 8..16 (the hashes' low halves).
        let pick = _mm512_add_epi32(
            _mm512_set1_epi32(2 * j as i32),
            _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
        );
        let hv = _mm512_permutexvar_epi32(pick, hashes);
        let salts = _mm512_broadcast_i64x4(_mm256_loadu_si256(SALTS.as_ptr().cast()));
        let shift = _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32);
        let bits = _mm512_srl_epi32(_mm512_mullo_epi32(hv, salts), shift);
        let ip = at.image.cast_const();
        let t = if !IMAGE {
            0xFFFF
        } else if S::LAYOUT.word_bits() == 32 {
            let img = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm256_loadu_si256(ip.add(b[0] * 8).cast())),
                _mm256_loadu_si256(ip.add(b[1] * 8).cast()),
            );
            _mm512_test_epi32_mask(img, _mm512_sllv_epi32(_mm512_set1_epi32(1), bits))
        } else {
            // 8x64: a key's image block is one register of 64-bit lanes, tested against its
            // 8 lane bits widened to 64.
            let one = _mm512_set1_epi64(1);
            let low = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(bits));
            let high = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(bits));
            let t0 = _mm512_test_epi64_mask(
                _mm512_loadu_si512(ip.add(b[0] * 16).cast()),
                _mm512_sllv_epi64(one, low),
            );
            let t1 = _mm512_test_epi64_mask(
                _mm512_loadu_si512(ip.add(b[1] * 16).cast()),
                _mm512_sllv_epi64(one, high),
            );
            u16::from(t0) | u16::from(t1) << 8
        };
        let (zeros, cp) = (ZEROS.0.as_ptr(), at.cells.cast_const());
        let c0 = select_unpredictable(t & 0xFF == 0xFF, cp.wrapping_add(b[0] * cper), zeros);
        let c1 = select_unpredictable(t >> 8 == 0xFF, cp.wrapping_add(b[1] * cper), zeros);
        // Lane `i`'s cell word `i·Q + bit / (32/C)`; `vpermt2d` takes its low 5 bits, the
        // word within the two registers of 32 words that hold lanes `i` of its half.
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
        let idx = _mm512_add_epi32(
            _mm512_sll_epi32(lane, _mm_cvtsi32_si128(q.trailing_zeros() as i32)),
            _mm512_srl_epi32(bits, _mm_cvtsi32_si128((32 / C).trailing_zeros() as i32)),
        );
        let words = if cper == 32 {
            // 32 words per key: lanes 0..8 from its two registers.
            let k0 = _mm512_permutex2var_epi32(load16(c0, 0), idx, load16(c0, 1));
            let k1 = _mm512_permutex2var_epi32(load16(c1, 0), idx, load16(c1, 1));
            _mm512_mask_blend_epi32(0xFF00, k0, k1)
        } else {
            // 64 words per key: lanes 0..4 from registers 0 and 1, lanes 4..8 from 2 and 3.
            let k0a = _mm512_permutex2var_epi32(load16(c0, 0), idx, load16(c0, 1));
            let k0b = _mm512_permutex2var_epi32(load16(c0, 2), idx, load16(c0, 3));
            let k1a = _mm512_permutex2var_epi32(load16(c1, 0), idx, load16(c1, 1));
            let k1b = _mm512_permutex2var_epi32(load16(c1, 2), idx, load16(c1, 3));
            let k0 = _mm512_mask_blend_epi32(0x00F0, k0a, k0b);
            let k1 = _mm512_mask_blend_epi32(0xF000, k1a, k1b);
            _mm512_mask_blend_epi32(0xFF00, k0, k1)
        };
        let cells_per_word = _mm512_set1_epi32((32 / C) as i32 - 1);
        let sh = _mm512_sll_epi32(
            _mm512_and_si512(bits, cells_per_word),
            _mm_cvtsi32_si128(C.trailing_zeros() as i32),
        );
        _mm512_and_si512(
            _mm512_srlv_epi32(words, sh),
            _mm512_set1_epi32((1 << C) - 1),
        )
    }
}

/// The smallest cell of each of the 8 keys of `k` (blocks of `S` from `at`) into `k.out` (0
/// for a key the image does not hold).
///
/// # Safety
/// AVX-512F/BW/VL are available; `S` and `C` [`fits`]; the 8 blocks lie in the image and cells
/// from `at`, readable.
#[inline(always)]
pub(super) unsafe fn read8_eight_lanes<S: Shape, const C: u32, const IMAGE: bool>(
    at: Block,
    k: &mut Eight,
) {
    let b = k.blocks;
    // SAFETY: AVX-512F/BW/VL are available and the blocks are readable (contract); the
    // hashes are 64 bytes and the answers 32, read and written unaligned.
    unsafe {
        let hashes = _mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_loadu_si512(
            k.hashes.as_ptr().cast(),
        )));
        // (Calls, not a closure over `j`: a closure does not inherit the ISA's features.)
        let m = [
            pair_cells::<S, C, IMAGE>(at, [b[0], b[1]], hashes, 0),
            pair_cells::<S, C, IMAGE>(at, [b[2], b[3]], hashes, 1),
            pair_cells::<S, C, IMAGE>(at, [b[4], b[5]], hashes, 2),
            pair_cells::<S, C, IMAGE>(at, [b[6], b[7]], hashes, 3),
        ];
        // A transposing min tree over the four registers `m[j]` (keys `2j` in lanes 0..8,
        // `2j + 1` in 8..16; 128-bit lane `g` of `m[j]` holds cells `4(g mod 2) ..` of key
        // `2j + g / 2`). After the 32-bit step, lane `g` of `x` holds, per register pair,
        // mins of two cells; after the 64-bit step, element `j` of 128-bit lane `g` is the
        // min of lane `g` of `m[j]`.
        let x01 = _mm512_min_epu32(
            _mm512_unpacklo_epi32(m[0], m[1]),
            _mm512_unpackhi_epi32(m[0], m[1]),
        );
        let x23 = _mm512_min_epu32(
            _mm512_unpacklo_epi32(m[2], m[3]),
            _mm512_unpackhi_epi32(m[2], m[3]),
        );
        let y = _mm512_min_epu32(
            _mm512_unpacklo_epi64(x01, x23),
            _mm512_unpackhi_epi64(x01, x23),
        );
        // Lanes 0 and 1 (2 and 3) of the 128-bit lanes are the two halves of keys `2j`
        // (`2j + 1`): swapped and combined, lane 0 holds key `2j`'s min at element `j`, lane 2
        // key `2j + 1`'s.
        let z = _mm512_min_epu32(y, _mm512_shuffle_i32x4::<0b10_11_00_01>(y, y));
        let order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0);
        let mins = _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, z));
        _mm256_storeu_si256(k.out.as_mut_ptr().cast(), mins);
    }
}
