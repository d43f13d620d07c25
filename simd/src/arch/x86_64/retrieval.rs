//! Retrieval-table lookups (`bloomlanes_core::retrieval`) 8 keys at a time in AVX-512 lanes: the
//! mixing (`fmix64`, two `vpmullq`), the placement (`start = ⌊m × span / 2^64⌋` and the 128-bit
//! product of `spread`, from `vpmuludq` halves), one gather per cell (two for cells of other
//! widths than 8, 16 or 32 bits, which may straddle two words) and the check compare into a
//! mask register. The scalar loop spends about 70 instructions a key, most of them on the
//! multiplies; here they are shared by 8 keys. Answers are the core's
//! ([`bloomlanes_core::retrieval::lookup`]) bit for bit.

use core::arch::x86_64::*;

use bloomlanes_core::retrieval::{Shape, MIX_MUL1, MIX_MUL2};

/// Keys per group: one word of found bits, 8 vectors of 8 keys.
const GROUP: usize = 64;

/// Where 8 keys' cells are: each key's mixed hash, and per cell the index of its (first) word
/// and the shift of the cell in it.
struct Placed {
    mixed: __m512i,
    words: [__m512i; 4],
    shifts: [__m512i; 4],
}

/// Answers the whole [`GROUP`]s of `hashes` (the first `hashes.len() / 64 * 64` keys) into
/// `values` and `found` and returns how many keys it answered: 0 when the table's cells are
/// not `W` bits (8, 16 or 32; `W` = 0 takes any width), or its span does not fit the 32-bit
/// placement (never for a checked [`Shape`]); the caller answers the rest. Nothing is
/// prefetched: the gathers keep 8 × arity reads in flight, which is what a table of a few MiB
/// needs (see the caller for larger ones).
///
/// Every gather index is clamped to the last word of `words`, so no table, however made,
/// reads outside it (a well-formed table never needs the clamp: its cells are below
/// [`Shape::cells`], whose words it holds).
///
/// # Safety
/// The CPU supports AVX-512F and AVX-512DQ.
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn lookup<const A: u32, const W: u32>(
    shape: &Shape,
    words: &[u64],
    hashes: &[u64],
    values: &mut [u32],
    found: &mut [u64],
) -> usize {
    let span = u64::from(shape.segment_count) << shape.segment_bits;
    let width_ok = W == 0 || (matches!(W, 8 | 16 | 32) && shape.cell_bits() == W);
    if !width_ok || span >> 32 != 0 || words.is_empty() {
        return 0;
    }
    let whole = (hashes.len() / GROUP)
        .min(values.len() / GROUP)
        .min(found.len());
    let per_log = (64 / W.max(1)).trailing_zeros(); // cells per word, log2
    let w_log = W.trailing_zeros();
    let len = shape.segment_len();
    let check_mask = if shape.check_bits == 0 {
        0
    } else {
        (1u64 << shape.check_bits) - 1
    };
    let seed = _mm512_set1_epi64(shape.seed as i64);
    let mul1 = _mm512_set1_epi64(MIX_MUL1 as i64);
    let mul2 = _mm512_set1_epi64(MIX_MUL2 as i64);
    let mul2_hi = _mm512_set1_epi64((MIX_MUL2 >> 32) as i64);
    let low32 = _mm512_set1_epi64(0xffff_ffff);
    let span_v = _mm512_set1_epi64(span as i64);
    let seg_mask = _mm512_set1_epi64((len - 1) as i64);
    let last_word = _mm512_set1_epi64((words.len() - 1) as i64);
    let in_word = _mm512_set1_epi64(i64::from((1u32 << per_log) - 1));
    let (cell_bits, low6, sixty_four) = (
        _mm512_set1_epi64(i64::from(shape.cell_bits())),
        _mm512_set1_epi64(63),
        _mm512_set1_epi64(64),
    );
    let one = _mm512_set1_epi64(1);
    let cell_mask = _mm512_set1_epi64(shape.cell_mask() as i64);
    let value_mask = _mm512_set1_epi64(i64::from(shape.value_mask()));
    let check_v = _mm512_set1_epi64(check_mask as i64);
    let value_shift = _mm_set_epi64x(0, i64::from(shape.value_bits));
    let (per_log, w_log) = (
        _mm_set_epi64x(0, per_log.into()),
        _mm_set_epi64x(0, w_log.into()),
    );
    // The key's mixed hash and its cells' word indices (clamped) and bit shifts, 8 keys at once.
    let place = |at: usize| -> Placed {
        // SAFETY: `hashes[at..at + 8]` is 8 u64 (64 bytes; the slice checks the bounds), read
        // unaligned; AVX-512F (the contract).
        let h = unsafe { _mm512_loadu_si512(hashes[at..at + 8].as_ptr().cast()) };
        // m = fmix64(h + seed)
        let mut x = _mm512_add_epi64(h, seed);
        x = _mm512_xor_si512(x, _mm512_srli_epi64::<33>(x));
        x = _mm512_mullo_epi64(x, mul1);
        x = _mm512_xor_si512(x, _mm512_srli_epi64::<33>(x));
        x = _mm512_mullo_epi64(x, mul2);
        let m = _mm512_xor_si512(x, _mm512_srli_epi64::<33>(x));
        let m_hi = _mm512_srli_epi64::<32>(m);
        // start = (m × span) >> 64 with span < 2^32: (m_hi·span + (m_lo·span >> 32)) >> 32.
        let lo = _mm512_srli_epi64::<32>(_mm512_mul_epu32(m, span_v));
        let start = _mm512_srli_epi64::<32>(_mm512_add_epi64(_mm512_mul_epu32(m_hi, span_v), lo));
        // spread = hi64(m × MUL2) ^ lo64(m × MUL2), the high half from four 32×32 products.
        let ll = _mm512_mul_epu32(m, mul2);
        let lh = _mm512_mul_epu32(m, mul2_hi);
        let hl = _mm512_mul_epu32(m_hi, mul2);
        let hh = _mm512_mul_epu32(m_hi, mul2_hi);
        let mid = _mm512_add_epi64(
            _mm512_srli_epi64::<32>(ll),
            _mm512_add_epi64(_mm512_and_si512(lh, low32), _mm512_and_si512(hl, low32)),
        );
        let hi = _mm512_add_epi64(
            _mm512_add_epi64(hh, _mm512_srli_epi64::<32>(mid)),
            _mm512_add_epi64(_mm512_srli_epi64::<32>(lh), _mm512_srli_epi64::<32>(hl)),
        );
        let r = _mm512_xor_si512(hi, _mm512_mullo_epi64(m, mul2));
        // Cell 0 is `start`; cell j > 0 is (start + j·L) ^ offset_j.
        let mut placed = Placed {
            mixed: m,
            words: [_mm512_setzero_si512(); 4],
            shifts: [_mm512_setzero_si512(); 4],
        };
        for j in 0..A as usize {
            let cell = if j == 0 {
                start
            } else {
                let shift = _mm_set_epi64x(0, ((j - 1) * usize::from(shape.segment_bits)) as i64);
                let offset = _mm512_and_si512(_mm512_srl_epi64(r, shift), seg_mask);
                let base = _mm512_add_epi64(start, _mm512_set1_epi64((j as u64 * len) as i64));
                _mm512_xor_si512(base, offset)
            };
            let (word, shift) = if W == 0 {
                // Bit `cell × c` of the array: its word and the bit in it (cell < 2^32, c ≤ 64).
                let bit = _mm512_mul_epu32(cell, cell_bits);
                (_mm512_srli_epi64::<6>(bit), _mm512_and_si512(bit, low6))
            } else {
                let shift = _mm512_sll_epi64(_mm512_and_si512(cell, in_word), w_log);
                (_mm512_srl_epi64(cell, per_log), shift)
            };
            placed.words[j] = _mm512_min_epu64(word, last_word);
            placed.shifts[j] = shift;
        }
        placed
    };
    for (g, word) in found[..whole].iter_mut().enumerate() {
        let mut hits = 0u64;
        for v in 0..GROUP / 8 {
            let at = g * GROUP + v * 8;
            let placed = place(at);
            let mut cells = _mm512_setzero_si512();
            for j in 0..A as usize {
                // SAFETY: every index was clamped to `words.len() − 1` (`words` is not empty),
                // so each lane reads a whole u64 of `words`; AVX-512F (the contract).
                let bits =
                    unsafe { _mm512_i64gather_epi64::<8>(placed.words[j], words.as_ptr().cast()) };
                let mut cell = _mm512_srlv_epi64(bits, placed.shifts[j]);
                if W == 0 {
                    // The cell's high bits from the next word (`words` ends in a zero word); a
                    // shift of 64 (a cell at bit 0 of its word) gives 0.
                    let next = _mm512_min_epu64(_mm512_add_epi64(placed.words[j], one), last_word);
                    // SAFETY: as above, the indices are clamped to `words.len() − 1`.
                    let high = unsafe { _mm512_i64gather_epi64::<8>(next, words.as_ptr().cast()) };
                    let up = _mm512_sub_epi64(sixty_four, placed.shifts[j]);
                    cell = _mm512_or_si512(cell, _mm512_sllv_epi64(high, up));
                }
                cells = _mm512_xor_si512(cells, cell);
            }
            let x = _mm512_and_si512(cells, cell_mask);
            let hit = _mm512_cmpeq_epi64_mask(
                _mm512_srl_epi64(x, value_shift),
                _mm512_and_si512(placed.mixed, check_v),
            );
            let answer = _mm512_maskz_and_epi64(hit, x, value_mask);
            let out = &mut values[at..at + 8];
            // SAFETY: `out` is 8 u32 (32 bytes), written unaligned; AVX-512F (the contract).
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm512_cvtepi64_epi32(answer)) };
            hits |= u64::from(hit) << (8 * v);
        }
        *word = hits;
    }
    whole * GROUP
}
