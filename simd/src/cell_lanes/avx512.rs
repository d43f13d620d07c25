//! The writes and reads of a key's cells in AVX-512 registers.
//!
//! Writes of 4- and 8-bit cells sweep the block's cell words in *word space* (16 words per
//! register, updated under mask registers) without variable shifts (AMD's double-pumped
//! AVX-512 has few shift units): each word's cell index relative to the word selects it and
//! looks up its one-hot and all-ones values in 16-entry tables (`vpermd`, or one `vpermt2d`
//! that selects on its own for 32-bit lanes), 9 instructions per register; writes into 32-bit
//! image words set the image bits from the same lane bit indices, and 8x32 deletes find the
//! emptied cells in lane space with one `vpermt2d` of the two updated registers (measured in L2
//! on the 2-core EPYC: inserts 170 → 230 M keys/s, deletes 94 → 155). The 8x32 writes of 4- and
//! 8-bit cells have kernels of their own on 64-bit variable shifts
//! (`arch::x86_64::counters_8x32`), fed with the lane bit indices computed ahead
//! ([`CellIsa::ahead`]). 16-bit cells keep the scalar lanes.
//!
//! Reads of one key are AVX2's (`avx2.rs`); two keys of 8-lane blocks share one register
//! ([`CellIsa::read2`]).

use core::arch::x86_64::*;

use bloomlanes_core::SALTS;

use super::{
    is_8x32, update_with_lanes, words_per_lane, Block, CellIsa, Eight, Key, DEC, INC, MAX,
};
use crate::arch::x86_64::avx512::{lane_indices16, Avx512};
use crate::arch::x86_64::counters_8x32;
use crate::shape::Shape;

/// A key's 8 lane bit indices, computed ahead of its update (8x32 blocks only).
#[derive(Clone, Copy, Default)]
pub(crate) struct LaneBits([u32; 8]);

/// Word `i` of the one-hot table of `C`-bit cells: a 1 in cell `i` of a word, for the
/// `32 / C` cells of a word; 0 past them.
const fn one_table<const C: u32>() -> [u32; 16] {
    let mut t = [0u32; 16];
    let mut i = 0;
    while i < (32 / C) as usize {
        t[i] = 1 << (C as usize * i);
        i += 1;
    }
    t
}

/// The lane flags (bit `t` for the register's lane `t`) of one register's mask `z` of
/// selected words (at most one per lane), with `q` words per lane (4, 8 or 16).
#[inline(always)]
fn group_flags(z: u32, q: usize) -> u32 {
    match q {
        4 => {
            // One bit per group of 4 at most: fold it onto the group's bit 0, then gather
            // bits 0, 4, 8, 12 into bits 9 .. 12 with one multiply (the partial products
            // land on distinct bits, so nothing carries).
            let x = z | (z >> 2);
            let x = (x | (x >> 1)) & 0x1111;
            (x.wrapping_mul(0x249) >> 9) & 0xF
        }
        8 => u32::from(z & 0xFF != 0) | (u32::from(z >> 8 != 0) << 1),
        _ => u32::from(z != 0),
    }
}

/// [`CellIsa::lanes`] in AVX-512 registers (16 cell words each, updated under mask
/// registers), without variable shifts (the shift units are the bottleneck on AMD's
/// double-pumped AVX-512): each word's cell index relative to the word,
/// `idx = bit - per × sub` (`per = 32 / C` cells per word, `sub` the word's place in its
/// lane), selects the word iff `idx < per`; the cell's one-hot and all-ones values are
/// then looked up with `vpermd` in 16-entry tables.
///
/// # Safety
/// As [`CellIsa::lanes`], with AVX-512F.
#[inline(always)]
unsafe fn lanes_avx512<S: Shape, const C: u32, const OP: u8, const IMAGE: bool>(
    b: Block,
    h: u32,
    v: u32,
) {
    let (ib, cb) = (b.image, b.cells);
    let q = words_per_lane::<S, C>();
    let regs = S::LAYOUT.lanes() * q / 16;
    let max = (1u32 << C) - 1;
    let per = 32 / C;
    let ones = const { one_table::<C>() };
    // SAFETY: AVX-512F is available (contract); SALTS is 16 u32 and the tables 16 u32 (64
    // bytes each, read unaligned). Register `r` covers cell words `16r .. 16r + 16` and
    // `r < L·Q / 16`, so it lies in the block's `L·Q = block_u32s × C` cell words, which
    // are readable, writable and ours (contract); the image bits cleared are
    // `lane × W + bit < L × W` of the block's image, also ours (contract).
    unsafe {
        let bits = lane_indices16::<S>(h);
        let one_t = _mm512_loadu_si512(ones.as_ptr().cast());
        let max_t = _mm512_mullo_epi32(one_t, _mm512_set1_epi32(max as i32));
        let mut zeros = 0u32;
        // 8 lanes of `Q` = 4 or 8 words (8x32, 4- or 8-bit cells): the whole block's
        // cells are two or four registers, and a delete finds its emptied cells in
        // lane space (below) instead of packing per-register flags through general
        // registers.
        let two_regs = S::LAYOUT.lanes() == 8 && S::LAYOUT.word_bits() == 32 && regs <= 4;
        let mut news = [_mm512_setzero_si512(); 4];
        for r in 0..regs {
            // Word `16r + t` belongs to lane `(16r + t) / Q` at place `(16r + t) mod Q`.
            let mut lane = [0i32; 16];
            let mut base = [0i32; 16];
            for (t, (l, b)) in lane.iter_mut().zip(base.iter_mut()).enumerate() {
                *l = ((16 * r + t) / q) as i32;
                *b = (per as usize * ((16 * r + t) % q)) as i32;
            }
            let lane = _mm512_loadu_si512(lane.as_ptr().cast());
            let base = _mm512_loadu_si512(base.as_ptr().cast());
            let idx = _mm512_sub_epi32(_mm512_permutexvar_epi32(lane, bits), base);
            let sel = _mm512_cmplt_epu32_mask(idx, _mm512_set1_epi32(per as i32));
            let (one, m) = if S::LAYOUT.word_bits() == 32 {
                // `idx mod 32` is below `per` only for the selected word (`bit < 32`, so
                // `idx` lies in `-32 + per .. 32`): a two-table lookup with zeros past the
                // table selects on its own (the compare above is then unused but by deletes
                // of other shapes).
                let zero = _mm512_setzero_si512();
                (
                    _mm512_permutex2var_epi32(one_t, idx, zero),
                    _mm512_permutex2var_epi32(max_t, idx, zero),
                )
            } else {
                (
                    _mm512_maskz_permutexvar_epi32(sel, idx, one_t),
                    _mm512_maskz_permutexvar_epi32(sel, idx, max_t),
                )
            };
            let p = cb.add(16 * r);
            let c = _mm512_loadu_si512(p.cast());
            let cm = _mm512_and_si512(c, m);
            // Unselected words have `m = 0`, so `cm == m` there: never below.
            let below = _mm512_cmpneq_epi32_mask(cm, m);
            let new = match OP {
                INC => _mm512_mask_add_epi32(c, below, c, one),
                DEC => {
                    if !two_regs {
                        let z = _mm512_mask_cmpeq_epi32_mask(sel, cm, one);
                        zeros |= group_flags(u32::from(z), q) << (16 * r / q);
                    }
                    _mm512_mask_sub_epi32(c, below, c, one)
                }
                MAX => {
                    // `v` in the selected cell's place (`v` times the one-hot of every cell of a
                    // word, under the cell's mask): the larger of the two isolated cells.
                    let rep = ones.iter().fold(0u32, |a, &o| a | o);
                    let vm = _mm512_and_si512(_mm512_set1_epi32(v.wrapping_mul(rep) as i32), m);
                    _mm512_or_si512(_mm512_andnot_si512(m, c), _mm512_max_epu32(cm, vm))
                }
                _ => c,
            };
            _mm512_storeu_si512(p.cast(), new);
            if let Some(slot) = news.get_mut(r).filter(|_| two_regs) {
                *slot = new;
            }
        }
        if IMAGE {
            // 32-bit image words, one per lane: word `i` gets bit `bit_i` (8 lanes: the low
            // half of the register; the block is 32 bytes).
            let bit = _mm512_sllv_epi32(_mm512_set1_epi32(1), bits);
            if S::LAYOUT.lanes() == 8 {
                let p = ib.cast::<__m256i>();
                let img = _mm256_or_si256(_mm256_loadu_si256(p), _mm512_castsi512_si256(bit));
                _mm256_storeu_si256(p, img);
            } else {
                let img = _mm512_or_si512(_mm512_loadu_si512(ib.cast()), bit);
                _mm512_storeu_si512(ib.cast(), img);
            }
        }
        if OP == DEC && two_regs {
            // Lane `i`'s cell is word `Q·i + bit_i / per` of the registers, cell
            // `bit_i mod per` of it; it emptied iff that cell is now 0 (it was 1: a
            // saturated cell is never decremented to 0). With Q = 8, lanes 0–3 lie in
            // registers 0–1 and lanes 4–7 in registers 2–3 (the lookup takes the index
            // modulo 32).
            let lane_q = _mm512_mullo_epi32(
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0),
                _mm512_set1_epi32(q as i32),
            );
            let idx = _mm512_add_epi32(
                lane_q,
                _mm512_srl_epi32(bits, _mm_cvtsi32_si128(per.trailing_zeros() as i32)),
            );
            let mut words = _mm512_permutex2var_epi32(news[0], idx, news[1]);
            if regs == 4 {
                let high = _mm512_permutex2var_epi32(news[2], idx, news[3]);
                words = _mm512_mask_blend_epi32(0xF0, words, high);
            }
            let m = _mm512_permutexvar_epi32(
                _mm512_and_si512(bits, _mm512_set1_epi32(per as i32 - 1)),
                max_t,
            );
            let emptied = _mm512_mask_testn_epi32_mask(0xFF, words, m);
            let bit = _mm512_sllv_epi32(_mm512_set1_epi32(1), bits);
            let clear = _mm512_castsi512_si256(_mm512_and_si512(bit, _mm512_movm_epi32(emptied)));
            let p = ib.cast::<__m256i>();
            _mm256_storeu_si256(p, _mm256_andnot_si256(clear, _mm256_loadu_si256(p)));
        } else if OP == DEC {
            clear_image_avx512::<S>(ib, bits, zeros);
        }
    }
}

/// Clears, in the image block of `S` at `ib`, the key's bit in every lane `i` whose bit
/// `i` is set in `flags`; `bits` holds the lane bit indices of all 16 lanes.
///
/// # Safety
/// The image block is readable, writable and ours; the CPU supports AVX-512F (and so AVX2).
#[inline(always)]
unsafe fn clear_image_avx512<S: Shape>(ib: *mut u32, bits: __m512i, flags: u32) {
    // SAFETY: AVX-512F and AVX2 are available (contract); the registers read and written
    // are the block's `L × W / 32` image words (16 × 32-bit lanes: one register; 8 or 16
    // 64-bit lanes: one or two), which are ours (contract).
    unsafe {
        match (S::LAYOUT.lanes(), S::LAYOUT.word_bits()) {
            (_, 32) => {
                // Only the flagged words are read and written (masked: the words past an
                // 8-lane block are not touched, and masked-off elements never fault).
                let k = flags as __mmask16;
                let m = _mm512_sllv_epi32(_mm512_set1_epi32(1), bits);
                let img = _mm512_maskz_loadu_epi32(k, ib.cast());
                _mm512_mask_storeu_epi32(ib.cast(), k, _mm512_andnot_si512(m, img));
            }
            _ => {
                let halves = [
                    _mm512_castsi512_si256(bits),
                    _mm512_extracti64x4_epi64::<1>(bits),
                ];
                for (k, b) in halves.into_iter().enumerate().take(S::LAYOUT.lanes() / 8) {
                    let p = ib.add(16 * k);
                    let m = _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_cvtepu32_epi64(b));
                    let img = _mm512_loadu_si512(p.cast());
                    let f = (flags >> (8 * k)) as __mmask8;
                    _mm512_storeu_si512(p.cast(), _mm512_mask_andnot_epi64(img, f, m, img));
                }
            }
        }
    }
}

impl CellIsa for Avx512 {
    /// The lane bit indices of 8x32 keys (unused for other shapes).
    type Ahead = LaneBits;

    #[inline(always)]
    unsafe fn ahead<S: Shape, const C: u32>(h: u64) -> LaneBits {
        let mut a = LaneBits::default();
        if is_8x32::<S>() {
            // SAFETY: AVX-512F (and so AVX2) is available (caller); the 32 bytes written are
            // `a`'s.
            unsafe { counters_8x32::store_bits::<S>(h as u32, &mut a.0) };
        }
        a
    }

    #[inline(always)]
    unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(b: Block, h: u32, v: u32) {
        // SAFETY: the caller's contract (AVX-512F is part of this ISA).
        unsafe { lanes_avx512::<S, C, OP, false>(b, h, v) }
    }

    #[inline(always)]
    unsafe fn update<S: Shape, const C: u32, const OP: u8>(b: Block, k: Key<LaneBits>) -> bool {
        let (ib, cb, a, v) = (b.image, b.cells, &k.ahead.0, k.value);
        // SAFETY: the caller's contract (AVX-512F/BW/VL are part of this ISA); `a` is the
        // key's lane bit indices for 8x32 (the caller's `ahead`).
        unsafe {
            match (is_8x32::<S>(), C, OP) {
                (true, 4, INC) => counters_8x32::insert4(ib, cb, a),
                (true, 4, DEC) => return counters_8x32::remove4(ib, cb, a),
                // Measured against the word-space path below (same-run A/B, `ab sinsert`,
                // thread CPU time, 4-bit cells): 64 KiB 200 / 208 M keys/s, 1 MiB 174 / 160.
                // An 8-bit kernel of its own (bytes raised in place, or one-hot bytes under
                // `vpmaxub`) lost in L2 (131 / 142) and was dropped.
                (true, 4, MAX) => counters_8x32::max4(ib, cb, a, v),
                (true, 8, INC) => counters_8x32::insert8(ib, cb, a),
                // Byte masks in vector registers, only the cells below `v` stored: against the
                // word-space path below (same-run A/B, thread CPU time, 2-core Xeon, 1 MiB)
                // 128-133 -> 137-139 M keys/s with masks from general registers, 161-168 now.
                // Masks read as the 64-bit words of the key's image mask (`kmovq k, m64`, no
                // `vpermd`/`vpcmpeqb`: 7 shuffle-port instructions per key instead of 16) lost:
                // 1 MiB 108-122 / 132-139 per-key classes, 113-117 / 125-131 fresh keys.
                (true, 8, MAX) => counters_8x32::max8(ib, cb, a, v),
                (true, 8, DEC) => return counters_8x32::remove8(ib, cb, a),
                // The image bits come from the lane bit indices the cells use.
                (_, 4 | 8, INC | MAX) if S::LAYOUT.word_bits() == 32 => {
                    lanes_avx512::<S, C, OP, true>(b, k.hash as u32, v)
                }
                _ => return update_with_lanes::<Self, S, C, OP>(b, k.hash, v),
            }
        }
        true
    }

    #[inline(always)]
    unsafe fn read<S: Shape, const C: u32>(b: Block, h: u64) -> u32 {
        // SAFETY: the caller's contract (AVX-512F/BW/VL, and so AVX2, are part of this ISA).
        unsafe { super::avx2::read_avx2::<S, C>(b, h) }
    }

    #[inline(always)]
    unsafe fn read2<S: Shape, const C: u32>(at: Block, b: [usize; 2], h: [u64; 2]) -> [u32; 2] {
        // SAFETY: the caller's contract (AVX-512F/BW/VL are part of this ISA).
        unsafe {
            if S::LAYOUT.lanes() == 8 {
                read_pair::<S, C>(at, b, h)
            } else {
                super::read_each::<Self, S, C>(at, b, h)
            }
        }
    }

    #[inline(always)]
    unsafe fn read8<S: Shape, const C: u32, const IMAGE: bool>(at: Block, k: &mut Eight) {
        // SAFETY: the caller's contract (AVX-512F/BW/VL are part of this ISA).
        unsafe {
            if super::read8::fits::<S, C>() {
                super::read8::read8_eight_lanes::<S, C, IMAGE>(at, k)
            } else {
                super::read_pairs::<Self, S, C>(at, k)
            }
        }
    }
}

/// [`CellIsa::read2`] of two keys of 8-lane blocks in one AVX-512 register (8 lanes each):
/// their lane bit indices from one `vpmulld`, their image tests from one compare (32-bit
/// lanes), one gather of their 16 cell words, masked to the keys the image holds (an absent
/// key reads no cell and answers 0), and the two smallest cells with two `phminposuw`.
///
/// # Safety
/// As [`CellIsa::read2`], with AVX-512F, BW and VL; `S` has 8 lanes.
#[inline(always)]
unsafe fn read_pair<S: Shape, const C: u32>(at: Block, b: [usize; 2], h: [u64; 2]) -> [u32; 2] {
    let (ip, cp) = (at.image, at.cells.cast_const().cast::<i32>());
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let q = words_per_lane::<S, C>() as u32;
    // SAFETY: AVX-512F/BW/VL are available (contract); SALTS has 16 u32 (the first 8 read).
    // Blocks `b[k]` lie in the image and cells (contract): an 8x32 image block is the 8 words
    // read at `ip + b[k] × per`; lane `8k + t` gathers cell word
    // `b[k] × cper + t·Q + bit / (32/C) < (b[k] + 1) × cper`, which fits `i32` (the cells hold
    // at most `i32::MAX` words, contract) and is readable; masked-off lanes read nothing.
    unsafe {
        let hv = _mm512_mask_set1_epi32(_mm512_set1_epi32(h[0] as i32), 0xFF00, h[1] as i32);
        let salts = _mm512_broadcast_i64x4(_mm256_loadu_si256(SALTS.as_ptr().cast()));
        let bits = _mm512_srl_epi32(
            _mm512_mullo_epi32(hv, salts),
            _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32),
        );
        let present: __mmask16 = if S::LAYOUT.word_bits() == 32 {
            let img = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm256_loadu_si256(ip.add(b[0] * per).cast())),
                _mm256_loadu_si256(ip.add(b[1] * per).cast()),
            );
            let t = _mm512_test_epi32_mask(img, _mm512_sllv_epi32(_mm512_set1_epi32(1), bits));
            (if t & 0xFF == 0xFF { 0xFF } else { 0 }) | (if t >> 8 == 0xFF { 0xFF00 } else { 0 })
        } else {
            let has = |k: usize| crate::vector::contains::<Avx512, S>(ip.add(b[k] * per), h[k]);
            (if has(0) { 0xFF } else { 0 }) | (if has(1) { 0xFF00 } else { 0 })
        };
        let base = _mm512_mask_set1_epi32(
            _mm512_set1_epi32((b[0] * cper) as i32),
            0xFF00,
            (b[1] * cper) as i32,
        );
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
        let lane_q = _mm512_sll_epi32(lane, _mm_cvtsi32_si128(q.trailing_zeros() as i32));
        let gather = |w| _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), present, w, cp);
        let cells = gathered_cells!(C, _mm512_add_epi32(base, lane_q), bits, gather;
            _mm512_add_epi32, _mm512_srl_epi32, _mm512_sll_epi32, _mm512_and_si512,
            _mm512_srlv_epi32, _mm512_set1_epi32);
        // Cells are below 2^16: narrowed exactly; key 0's in the low 8, key 1's in the high.
        let narrow = _mm512_cvtepi32_epi16(cells);
        let low = _mm_minpos_epu16(_mm256_castsi256_si128(narrow));
        let high = _mm_minpos_epu16(_mm256_extracti128_si256::<1>(narrow));
        [
            (_mm_cvtsi128_si32(low) & 0xFFFF) as u32,
            (_mm_cvtsi128_si32(high) & 0xFFFF) as u32,
        ]
    }
}
