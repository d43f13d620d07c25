//! The counting insert and delete of one key in an 8x32 block, 4- and 8-bit counters, in AVX-512
//! registers, built on 64-bit variable shifts (`vpsllvq`, which gives 0 for a count outside
//! `0 .. 64`) instead of table lookups. They run inside the AVX-512 kind entry points, compiled
//! with AVX-512F, DQ, BW and VL.
//!
//! With 4-bit counters, lane `i` owns the 16 bytes `16i .. 16i + 16` of the block's 128 bytes of
//! counters (one 128-bit element of the two 512-bit registers: lanes 0–3 in the first, 4–7 in
//! the second), and its counter for bit `b` is the nibble at bit `4b` of those 128 bits: bit
//! `4b` of the element's low 64-bit word, or bit `4b − 64` of its high one. So the nibble mask of
//! the key in both words of element `i` is `0xF << s` with `s = 4b` and `s = 4b − 64`, where
//! the count of the other word is outside `0 .. 64` (`4b − 64 < 0` is zero-extended from 32
//! bits, a huge count). One two-table permute per register spreads the eight lane counts and
//! the eight counts less 64 into place; one shift gives the register's nibble masks `m`, and
//! `m & 0x11…` its one-hot increments. A counter below the maximum is one whose nibble under
//! `m` is not all ones; the test is per 64-bit word (each holds at most one selected nibble),
//! and the masked add or subtract of the one-hot never carries out of the nibble.
//!
//! The image bits come from the same lane indices (an insert sets every one of them: each
//! touched counter is positive afterwards); a delete first tests the key's mask against the
//! image (the image is the counters' projection, so this is "every counter is positive"), then
//! clears the bit of each lane whose counter reached 0: the 64-bit words where that happened
//! (a compare of the old counter with the one-hot) name, two per lane, the 16-bit halves of the
//! image words that hold those bits.
//!
//! The lane bit indices are computed ahead, a chunk of keys at a time ([`store_bits`], through
//! `CounterIsa::ahead`), off the per-key path. Measured on the 2-core AMD EPYC (Zen 4) with the
//! `ab` example against the table-lookup kernels (`counter_lanes.rs`), see BENCHMARKS.md,
//! "CPU counting filter, partitioned (issue #14)".

use core::arch::x86_64::*;

use super::avx2::lane_indices;
use crate::shape::Shape;

/// Writes the lane bit indices (8 × u32 in 0 .. 32) of the key with hash `h` to `out`.
///
/// # Safety
/// The CPU supports AVX2; `S` is 8x32.
#[inline(always)]
pub(crate) unsafe fn store_bits<S: Shape>(h: u32, out: &mut [u32; 8]) {
    // SAFETY: AVX2 is available (contract); `lane_indices` reads salts 0 .. 8; `out` is 32
    // writable bytes (storeu: no alignment needed).
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), lane_indices::<S>(h, 0)) }
}

/// The lane bit indices at `bits` (from [`store_bits`]) and the key's image mask `1 << bit` per
/// lane.
///
/// # Safety
/// The CPU supports AVX2.
#[inline(always)]
unsafe fn bits_and_mask(bits: &[u32; 8]) -> (__m256i, __m256i) {
    // SAFETY: AVX2 is available (contract); `bits` is 32 readable bytes.
    unsafe {
        let bits = _mm256_loadu_si256(bits.as_ptr().cast());
        (bits, _mm256_sllv_epi32(_mm256_set1_epi32(1), bits))
    }
}

/// The nibble masks of the key's counters in the block's two counter registers (see the
/// module documentation).
///
/// # Safety
/// The CPU supports AVX-512F; `bits` holds 8 lane bit indices below 32.
#[inline(always)]
unsafe fn nibble_masks(bits: __m256i) -> [__m512i; 2] {
    // SAFETY: AVX-512F (and so AVX2) is available (contract); register operations only.
    unsafe {
        let nibble = _mm512_set1_epi64(0xF);
        let [s0, s1] = nibble_shifts(bits);
        [_mm512_sllv_epi64(nibble, s0), _mm512_sllv_epi64(nibble, s1)]
    }
}

/// The shift counts of the key's nibbles in the 64-bit words of the block's two counter
/// registers: `4b` in the low word of lane `i`'s element and `4b − 64` in its high one (the
/// count of the other word is outside `0 .. 64`).
///
/// # Safety
/// The CPU supports AVX-512F; `bits` holds 8 lane bit indices below 32.
#[inline(always)]
unsafe fn nibble_shifts(bits: __m256i) -> [__m512i; 2] {
    // SAFETY: AVX-512F (and so AVX2) is available (contract); register operations only.
    unsafe {
        let low = _mm256_slli_epi32::<2>(bits);
        let high = _mm256_sub_epi32(low, _mm256_set1_epi32(64));
        // The tables' upper halves are zero: index 8 reads a zero.
        let (low, high) = (_mm512_zextsi256_si512(low), _mm512_zextsi256_si512(high));
        // 64-bit word 2j of register r gets `low[4r + j]`, word 2j + 1 gets `high[4r + j]`
        // (index 16 + k: the second table), both zero-extended.
        let idx0 = _mm512_setr_epi32(0, 8, 16, 8, 1, 8, 17, 8, 2, 8, 18, 8, 3, 8, 19, 8);
        let idx1 = _mm512_setr_epi32(4, 8, 20, 8, 5, 8, 21, 8, 6, 8, 22, 8, 7, 8, 23, 8);
        [
            _mm512_permutex2var_epi32(low, idx0, high),
            _mm512_permutex2var_epi32(low, idx1, high),
        ]
    }
}

/// Adds one (`INC`) or subtracts one to each counter under the nibble mask `m` of the register
/// at `p` that is below the maximum, and stores the register; returns the 64-bit words whose
/// counter was 1 before (only meaningful for a subtract: those counters reached 0).
///
/// # Safety
/// The 64 bytes at `p` are readable, writable and ours; the CPU supports AVX-512F; `m` has at
/// most one nibble set per 64-bit word; for a subtract, every counter under `m` is positive.
#[inline(always)]
unsafe fn step<const INC: bool>(p: *mut u32, m: __m512i) -> __mmask8 {
    // SAFETY: AVX-512F is available and the register at `p` is ours (contract).
    unsafe {
        let c = _mm512_loadu_si512(p.cast());
        let one = _mm512_and_si512(m, _mm512_set1_epi64(0x1111_1111_1111_1111));
        let cm = _mm512_and_si512(c, m);
        // Below the maximum: the nibble under `m` is not all ones (words without a selected
        // nibble have `m = 0`: never below).
        let below = _mm512_cmpneq_epi64_mask(cm, m);
        if INC {
            _mm512_storeu_si512(p.cast(), _mm512_mask_add_epi64(c, below, c, one));
            0
        } else {
            _mm512_storeu_si512(p.cast(), _mm512_mask_sub_epi64(c, below, c, one));
            _mm512_mask_cmpeq_epi64_mask(below, cm, one)
        }
    }
}

/// ORs the key's `mask` into the 8x32 image block at `ib` (after an insert each of the key's
/// counters is positive).
///
/// # Safety
/// `ib` points to 8 writable image words no one else accesses during the call; the CPU
/// supports AVX2.
#[inline(always)]
unsafe fn set_image_bits(ib: *mut u32, mask: __m256i) {
    // SAFETY: AVX2 is available and the 32 bytes at `ib` are ours (contract).
    unsafe {
        let ip = ib.cast::<__m256i>();
        _mm256_storeu_si256(ip, _mm256_or_si256(_mm256_loadu_si256(ip), mask));
    }
}

/// [`set_image_bits`] that writes only the image words missing one of the key's bits (none,
/// for a key whose bits are all set: the image line stays clean, as the cells' lines of a
/// spatial insert that raises nothing do).
///
/// # Safety
/// As [`set_image_bits`], and the CPU supports AVX-512F and VL.
#[inline(always)]
unsafe fn set_missing_image_bits(ib: *mut u32, mask: __m256i) {
    // SAFETY: AVX-512F/VL are available and the 32 bytes at `ib` are ours (contract); the
    // masked store writes only within them.
    unsafe {
        let img = _mm256_loadu_si256(ib.cast());
        let missing = _mm256_testn_epi32_mask(img, mask);
        _mm256_mask_storeu_epi32(ib.cast(), missing, _mm256_or_si256(img, mask));
    }
}

/// The key's lane bit indices and image mask (as [`bits_and_mask`]) and the 8x32 image block
/// at `ib`, if the block holds every bit of the mask (every counter of the key is positive: a
/// delete may go on); else `None` (the delete is refused).
///
/// # Safety
/// `ib` points to 8 readable image words; the CPU supports AVX2.
#[inline(always)]
unsafe fn holding(ib: *const u32, bits: &[u32; 8]) -> Option<(__m256i, __m256i, __m256i)> {
    // SAFETY: AVX2 is available and the 32 bytes at `ib` are readable (contract).
    unsafe {
        let (bits, mask) = bits_and_mask(bits);
        let img = _mm256_loadu_si256(ib.cast());
        // `testc`: every bit of `mask` is set in `img`.
        (_mm256_testc_si256(img, mask) != 0).then_some((bits, mask, img))
    }
}

/// Counting insert of the key with lane bit indices `bits` into the 8x32 block whose image
/// starts at `ib` and 4-bit counters at `cb`: every counter of the key below 15 gains one, and
/// its image bits are set.
///
/// # Safety
/// `ib` points to the block's 8 image words and `cb` to its 32 counter words, all writable and
/// not accessed by anyone else during the call; `bits` is the key's [`store_bits`]; the CPU
/// supports AVX-512F, BW and VL.
#[inline(always)]
pub(crate) unsafe fn insert4(ib: *mut u32, cb: *mut u32, bits: &[u32; 8]) {
    // SAFETY: AVX-512F (and so AVX2) is available (contract); the image block is 32 bytes at
    // `ib` and the counters two 64-byte registers at `cb` and `cb + 16`, ours (contract).
    unsafe {
        let (bits, mask) = bits_and_mask(bits);
        set_image_bits(ib, mask);
        let [m0, m1] = nibble_masks(bits);
        step::<true>(cb, m0);
        step::<true>(cb.add(16), m1);
    }
}

/// Counting delete of the key with lane bit indices `bits` from the block as in [`insert4`]:
/// refused (`false`, nothing changed) unless the image holds the key's mask (every counter of
/// the key is positive); else every counter of the key below 15 loses one, the image bit of
/// each counter that reaches 0 is cleared, and the result is `true`.
///
/// # Safety
/// As [`insert4`].
#[inline(always)]
pub(crate) unsafe fn remove4(ib: *mut u32, cb: *mut u32, bits: &[u32; 8]) -> bool {
    // SAFETY: as in `insert4` (the 16-bit masked move is AVX-512BW and VL).
    unsafe {
        let Some((bits, mask, img)) = holding(ib, bits) else {
            return false;
        };
        let [m0, m1] = nibble_masks(bits);
        let e0 = step::<false>(cb, m0);
        let e1 = step::<false>(cb.add(16), m1);
        // Bit `2i + q` of `emptied`: lane i's counter lay in 64-bit word q of its element and
        // reached 0. Its image bit `b` lies in 16-bit half q of image word i (both are `b / 16`),
        // so the image clears its bit under a 16-bit-element mask.
        let emptied = _mm512_kunpackb(__mmask16::from(e1), __mmask16::from(e0));
        let cleared = _mm256_mask_mov_epi16(img, emptied, _mm256_andnot_si256(mask, img));
        _mm256_storeu_si256(ib.cast(), cleared);
        true
    }
}

/// [`CellUpdate::Max`](bloomlanes_core::CellUpdate::Max) of `v` (`0 < v <= 15`) on the
/// key's 4-bit cells in the block as in [`insert4`]: each becomes the larger of itself and `v`
/// (the word and the word with `v` in the cell's place compare as 64-bit numbers as the cell
/// and `v` do), and its image bits are set.
///
/// # Safety
/// As [`insert4`], and `v <= 15`.
#[inline(always)]
pub(crate) unsafe fn max4(ib: *mut u32, cb: *mut u32, bits: &[u32; 8], v: u32) {
    // SAFETY: as in `insert4`.
    unsafe {
        let (bits, mask) = bits_and_mask(bits);
        set_missing_image_bits(ib, mask);
        let vv = _mm512_set1_epi64((u64::from(v) * 0x1111_1111_1111_1111) as i64);
        for (r, m) in nibble_masks(bits).into_iter().enumerate() {
            let p = cb.add(16 * r);
            let c = _mm512_loadu_si512(p.cast());
            // `c` with its selected nibble (at most one per word) replaced by `v` (a bitwise
            // select, `m ? vv : c`): as a 64-bit number it is larger than `c` exactly when `v`
            // is larger than the cell, so the larger of the two is the raised word.
            let with_v = _mm512_ternarylogic_epi64::<0xCA>(m, vv, c);
            _mm512_mask_storeu_epi64(p.cast(), _mm512_cmpgt_epu64_mask(with_v, c), with_v);
        }
    }
}

/// The one-hot bytes of the key's 8-bit counters in counter register `r` (0 .. 4) of an 8x32
/// block (see [`insert8`]).
///
/// # Safety
/// The CPU supports AVX-512F; `bits` holds 8 lane bit indices below 32.
#[inline(always)]
unsafe fn one_hot8(bits: __m256i, r: i32) -> __m512i {
    // SAFETY: AVX-512F (and so AVX2) is available (contract); register operations only.
    unsafe {
        let at = _mm256_slli_epi32::<3>(bits);
        let less = _mm256_setr_epi32(0, 64, 128, 192, 0, 64, 128, 192);
        // Words 4j + q of register r: lane 2r + j's count less 64q.
        let (a, b) = (2 * r, 2 * r + 1);
        let idx = _mm256_setr_epi32(a, a, a, a, b, b, b, b);
        let counts = _mm256_sub_epi32(_mm256_permutevar8x32_epi32(at, idx), less);
        _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_cvtepu32_epi64(counts))
    }
}

/// Counting insert of the key with lane bit indices `bits` into the 8x32 block whose image
/// starts at `ib` and 8-bit counters at `cb`: every counter of the key below 255 gains one,
/// and its image bits are set.
///
/// Lane `i` owns the 32 bytes `32i .. 32i + 32` of the block's 256 bytes of counters (half of
/// counter register `i / 2`); its counter for bit `b` is byte `b` of them: bit `8b − 64q` of
/// the lane's 64-bit word `q`, where only `q = b / 8` gives a count in `0 .. 64` (`vpsllvq`
/// gives 0 for the others). The one-hot `1 << count` is added with unsigned byte saturation,
/// which leaves a counter at 255 as it is.
///
/// # Safety
/// `ib` points to the block's 8 image words and `cb` to its 64 counter words, all writable
/// and not accessed by anyone else during the call; the CPU supports AVX-512F and AVX-512BW.
#[inline(always)]
pub(crate) unsafe fn insert8(ib: *mut u32, cb: *mut u32, bits: &[u32; 8]) {
    // SAFETY: AVX-512F/BW (and so AVX2) are available (contract); the image block is 32 bytes
    // at `ib` and the counters four 64-byte registers at `cb + 16r`, ours (contract).
    unsafe {
        let (bits, mask) = bits_and_mask(bits);
        set_image_bits(ib, mask);
        for r in 0..4 {
            let inc = one_hot8(bits, r);
            let p = cb.add(16 * r as usize).cast();
            _mm512_storeu_si512(p, _mm512_adds_epu8(_mm512_loadu_si512(p), inc));
        }
    }
}

/// Spatial insert (`Max(v)`) of the key with lane bit indices `bits` into the block as in
/// [`insert8`]: every 8-bit cell of the key below `v` becomes `v`, and its image bits are set.
/// Lane `2r + j`'s cell for bit `b` is byte `32j + b` of cell register `r`: each lane's `b` is
/// spread to the four bytes of its word once (`vpshufb`), and register `r`'s byte mask is the
/// bytes where lanes `2r` and `2r + 1`'s spread indices (`vpermd`) equal the byte's place in
/// its half (`vpcmpeqb`), all in vector registers. Only the cells that grow are written (a
/// masked store of `v` under the compare of the cells with `v`).
///
/// # Safety
/// As [`insert8`], and `v <= 255`.
#[inline(always)]
pub(crate) unsafe fn max8(ib: *mut u32, cb: *mut u32, bits: &[u32; 8], v: u32) {
    // SAFETY: as in `insert8`.
    unsafe {
        let (bits, mask) = bits_and_mask(bits);
        set_missing_image_bits(ib, mask);
        let spread = _mm256_shuffle_epi8(
            bits,
            _mm256_setr_epi8(
                0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8,
                8, 8, 12, 12, 12, 12,
            ),
        );
        let spread = _mm512_zextsi256_si512(spread);
        // Byte `32j + b` of a register: `b`.
        let place = _mm512_setr_epi64(
            0x0706_0504_0302_0100,
            0x0F0E_0D0C_0B0A_0908,
            0x1716_1514_1312_1110,
            0x1F1E_1D1C_1B1A_1918,
            0x0706_0504_0302_0100,
            0x0F0E_0D0C_0B0A_0908,
            0x1716_1514_1312_1110,
            0x1F1E_1D1C_1B1A_1918,
        );
        let vv = _mm512_set1_epi8(v as u8 as i8);
        for r in 0..4 {
            // Words 0–7 of register `r` take lane `2r`'s index, words 8–15 lane `2r + 1`'s.
            let (a, b) = (2 * r, 2 * r + 1);
            let lanes = _mm512_permutexvar_epi32(
                _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b),
                spread,
            );
            let key = _mm512_cmpeq_epi8_mask(lanes, place);
            let p = cb.add(16 * r as usize);
            let grow = _mm512_mask_cmplt_epu8_mask(key, _mm512_loadu_si512(p.cast()), vv);
            _mm512_mask_storeu_epi8(p.cast(), grow, vv);
        }
    }
}

/// Counting delete of the key with lane bit indices `bits` from the block as in [`insert8`]:
/// refused (`false`, nothing changed) unless the image holds the key's mask (every counter of
/// the key is positive); else every counter of the key below 255 loses one, the image bit of
/// each counter that reaches 0 is cleared, and the result is `true`.
///
/// The byte mask of the counters that reach 0 in register `p` (lanes `2p` and `2p + 1`, bit
/// `32j + b` for lane `2p + j` and bit `b`) is exactly the mask of image bits to clear in the
/// image's 64-bit word `p` (image words `2p` and `2p + 1`).
///
/// # Safety
/// As [`insert8`].
#[inline(always)]
pub(crate) unsafe fn remove8(ib: *mut u32, cb: *mut u32, bits: &[u32; 8]) -> bool {
    // SAFETY: as in `insert8`.
    unsafe {
        let Some((bits, _, img)) = holding(ib, bits) else {
            return false;
        };
        let full = _mm512_set1_epi8(-1);
        let mut emptied = [0u64; 4];
        for (r, e) in emptied.iter_mut().enumerate() {
            let one = one_hot8(bits, r as i32);
            let p = cb.add(16 * r).cast();
            let c = _mm512_loadu_si512(p);
            let key = _mm512_test_epi8_mask(one, one);
            let below = _mm512_mask_cmpneq_epi8_mask(key, c, full);
            *e = _mm512_mask_cmpeq_epi8_mask(below, c, one);
            _mm512_storeu_si512(p, _mm512_mask_sub_epi8(c, below, c, one));
        }
        let clear = _mm256_setr_epi64x(
            emptied[0] as i64,
            emptied[1] as i64,
            emptied[2] as i64,
            emptied[3] as i64,
        );
        _mm256_storeu_si256(ib.cast(), _mm256_andnot_si256(clear, img));
        true
    }
}
