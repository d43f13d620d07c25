//! XXH64 of many short byte keys at once: the keys of a text file (a dozen bytes each) hashed
//! 8 at a time in AVX-512 lanes, each lane taking the core's short-input steps
//! (`bloomlanes_core::xxh64`) under a mask that says whether its key has that step. The values
//! are the core's `xxh64(key, seed)`, bit for bit; the text reader plugs [`xxh64_spans`] in as
//! its span hasher (`bloomlanes_input::SpanHasher`).

use bloomlanes_core::xxh64;

#[cfg(target_arch = "x86_64")]
use crate::dispatch::{active_path, SimdPath};

/// The longest key the lanes take (longer keys, and keys within 16 bytes of the buffer's end,
/// go through the core's function).
pub const LANE_KEY_MAX: usize = 16;

/// Appends to `out`, in order, `xxh64(&bytes[start..start + len], seed)` of every span
/// `start | len << 32` of `spans`: on the AVX-512 path 8 keys of up to [`LANE_KEY_MAX`] bytes
/// at a time, else (and for the other keys) the core's function key by key.
///
/// # Panics
/// If a span reaches past the end of `bytes`.
pub fn xxh64_spans(bytes: &[u8], spans: &[u64], seed: u64, out: &mut Vec<u64>) {
    #[cfg(target_arch = "x86_64")]
    if active_path() == SimdPath::Avx512 {
        out.reserve(spans.len());
        // SAFETY: the active path is AVX-512 only when the CPU has AVX-512F, DQ, BW and VL
        // (`SimdPath::is_available`).
        unsafe { avx512::spans(bytes, spans, seed, out) };
        return;
    }
    scalar_spans(bytes, spans, seed, out);
}

/// The core's function, key by key.
fn scalar_spans(bytes: &[u8], spans: &[u64], seed: u64, out: &mut Vec<u64>) {
    out.extend(spans.iter().map(|&s| {
        let start = s as u32 as usize;
        xxh64(&bytes[start..start + (s >> 32) as usize], seed)
    }));
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    use bloomlanes_core::xxh64::{
        short_init, AVALANCHE_SHIFTS, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME64_5,
        ROUND_ROTATE, TAIL1_ROTATE, TAIL4_ROTATE, TAIL8_ROTATE,
    };

    use super::{scalar_spans, LANE_KEY_MAX};

    /// Groups of 8 keys hashed together: independent chains that hide `vpmullq`'s latency.
    const GROUPS: usize = 4;

    /// [`super::xxh64_spans`] on AVX-512: runs of [`GROUPS`] × 8 spans whose keys are at most
    /// [`LANE_KEY_MAX`] bytes and start at least 16 bytes before the end of `bytes` in lanes,
    /// the others key by key.
    ///
    /// # Safety
    /// The CPU supports AVX-512F and AVX-512DQ.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub(super) unsafe fn spans(bytes: &[u8], spans: &[u64], seed: u64, out: &mut Vec<u64>) {
        // Gathers read 16 bytes from a key's start: starts up to `last` keep them inside.
        let Some(last) = bytes.len().checked_sub(16) else {
            return scalar_spans(bytes, spans, seed, out);
        };
        let mut runs = spans.chunks_exact(8 * GROUPS);
        for run in &mut runs {
            let mut starts = [_mm512_setzero_si512(); GROUPS];
            let mut lens = [_mm512_setzero_si512(); GROUPS];
            let mut fits = true;
            for (g, group) in run.chunks_exact(8).enumerate() {
                // SAFETY: AVX-512F is available (contract); `group` is 8 u64 (64 bytes), read
                // unaligned.
                let v = unsafe { _mm512_loadu_si512(group.as_ptr().cast()) };
                starts[g] = _mm512_and_si512(v, _mm512_set1_epi64(u32::MAX as i64));
                lens[g] = _mm512_srli_epi64::<32>(v);
                fits &= _mm512_cmpgt_epu64_mask(lens[g], _mm512_set1_epi64(LANE_KEY_MAX as i64))
                    | _mm512_cmpgt_epu64_mask(starts[g], _mm512_set1_epi64(last as i64))
                    == 0;
            }
            if !fits {
                scalar_spans(bytes, run, seed, out);
                continue;
            }
            let (mut w0, mut w1) = (starts, starts);
            for g in 0..GROUPS {
                // SAFETY: AVX-512F is available (contract). Every lane's start is at most
                // `bytes.len() - 16` (checked above), so both 8-byte gathers, at `start` and
                // `start + 8`, read inside `bytes`.
                unsafe {
                    let base = bytes.as_ptr();
                    w0[g] = _mm512_i64gather_epi64::<1>(starts[g], base.cast());
                    w1[g] = _mm512_i64gather_epi64::<1>(starts[g], base.add(8).cast());
                }
            }
            let h = xxh64_upto16(w0, w1, lens, seed);
            let mut lanes = [0u64; 8 * GROUPS];
            for (g, v) in h.iter().enumerate() {
                // SAFETY: AVX-512F is available (contract); `lanes[8 * g..]` has 8 u64 (64
                // bytes), written unaligned.
                unsafe { _mm512_storeu_si512(lanes[8 * g..].as_mut_ptr().cast(), *v) };
            }
            out.extend_from_slice(&lanes);
        }
        scalar_spans(bytes, runs.remainder(), seed, out);
    }

    /// The masks `lanes(i)` of the lanes of register `i` that take a step, or `None` when no
    /// lane of any register does (so that all skip it).
    #[inline(always)]
    fn masks<const N: usize>(lanes: impl Fn(usize) -> __mmask8) -> Option<[__mmask8; N]> {
        let m: [__mmask8; N] = core::array::from_fn(lanes);
        (m.iter().fold(0, |a, &b| a | b) != 0).then_some(m)
    }

    /// One step of the core's tail, in the lanes of `has` (the others keep `h`):
    /// `h = rotl(h ^ x, ROT) × m + a`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    fn step<const ROT: i32>(h: __m512i, x: __m512i, m: u64, a: u64, has: __mmask8) -> __m512i {
        let t = _mm512_mullo_epi64(
            _mm512_rol_epi64::<ROT>(_mm512_xor_si512(h, x)),
            _mm512_set1_epi64(m as i64),
        );
        _mm512_mask_add_epi64(h, has, t, _mm512_set1_epi64(a as i64))
    }

    /// `xxh64(key, seed)` of `8 × N` keys of `lens` bytes (at most 16) whose first 16 bytes
    /// (bytes past a key's end included, and ignored) are `w0` and `w1`, lane by lane: every
    /// step of the core's short-input path, each kept only in the lanes whose key has it (and
    /// skipped when no key has it). The `N` registers go through each step together, so their
    /// multiplies overlap.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq")]
    fn xxh64_upto16<const N: usize>(
        w0: [__m512i; N],
        w1: [__m512i; N],
        lens: [__m512i; N],
        seed: u64,
    ) -> [__m512i; N] {
        let set = |v: u64| _mm512_set1_epi64(v as i64);
        let mul = _mm512_mullo_epi64;
        let mut h = lens.map(|l| _mm512_add_epi64(set(short_init(seed)), l));
        let mut rest = w0;
        let mut rest_len = lens;
        // Up to two 8-byte words: h ^= round(0, w); h = rotl(h, TAIL8_ROTATE) × P1 + P4, where
        // round(0, w) = rotl(w × P2, ROUND_ROTATE) × P1.
        for (need, w) in [(8u64, w0), (16, w1)] {
            let Some(has) = masks::<N>(|i| _mm512_cmpge_epu64_mask(lens[i], set(need))) else {
                continue;
            };
            for (i, &has) in has.iter().enumerate() {
                let r = mul(
                    _mm512_rol_epi64::<{ ROUND_ROTATE as i32 }>(mul(w[i], set(PRIME64_2))),
                    set(PRIME64_1),
                );
                h[i] = step::<{ TAIL8_ROTATE as i32 }>(h[i], r, PRIME64_1, PRIME64_4, has);
            }
        }
        for i in 0..N {
            // The rest (fewer than 8 bytes) starts at byte 0, 8 or 16 of the key: in `w0`, in
            // `w1`, or nowhere (16-byte keys have none).
            let has8 = _mm512_cmpge_epu64_mask(lens[i], set(8));
            rest[i] = _mm512_mask_blend_epi64(has8, w0[i], w1[i]);
            rest_len[i] = _mm512_and_si512(lens[i], set(7));
        }
        // h ^= lo32(rest) × P1; h = rotl(h, TAIL4_ROTATE) × P2 + P3; skipped when no key has 4
        // bytes left (then every `rest_len` is below 4 already).
        if let Some(has4) = masks::<N>(|i| _mm512_cmpge_epu64_mask(rest_len[i], set(4))) {
            for (i, &has4) in has4.iter().enumerate() {
                let word = mul(
                    _mm512_and_si512(rest[i], set(u64::from(u32::MAX))),
                    set(PRIME64_1),
                );
                h[i] = step::<{ TAIL4_ROTATE as i32 }>(h[i], word, PRIME64_2, PRIME64_3, has4);
                rest[i] = _mm512_mask_blend_epi64(has4, rest[i], _mm512_srli_epi64::<32>(rest[i]));
                rest_len[i] = _mm512_and_si512(rest_len[i], set(3));
            }
        }
        // Up to 3 single bytes: h ^= byte × P5; h = rotl(h, TAIL1_ROTATE) × P1
        for b in 0..3u64 {
            let Some(has) = masks::<N>(|i| _mm512_cmpgt_epu64_mask(rest_len[i], set(b))) else {
                break;
            };
            for (i, &has) in has.iter().enumerate() {
                let byte = mul(_mm512_and_si512(rest[i], set(0xff)), set(PRIME64_5));
                h[i] = step::<{ TAIL1_ROTATE as i32 }>(h[i], byte, PRIME64_1, 0, has);
                rest[i] = _mm512_srli_epi64::<8>(rest[i]);
            }
        }
        // The core's `avalanche`, in lanes.
        const S0: u32 = AVALANCHE_SHIFTS[0];
        const S1: u32 = AVALANCHE_SHIFTS[1];
        const S2: u32 = AVALANCHE_SHIFTS[2];
        h.map(|mut h| {
            h = mul(
                _mm512_xor_si512(h, _mm512_srli_epi64::<S0>(h)),
                set(PRIME64_2),
            );
            h = mul(
                _mm512_xor_si512(h, _mm512_srli_epi64::<S1>(h)),
                set(PRIME64_3),
            );
            _mm512_xor_si512(h, _mm512_srli_epi64::<S2>(h))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(bytes: &[u8], spans: &[u64], seed: u64) -> Vec<u64> {
        let mut out = Vec::new();
        scalar_spans(bytes, spans, seed, &mut out);
        out
    }

    /// Every key length from 0 to 40 at every start, with the keys near the buffer's end among
    /// them, in groups that mix lane keys with longer ones: the same values as the core's.
    #[test]
    fn spans_hash_as_the_core_at_every_length_and_place() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let bytes: Vec<u8> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut spans = Vec::new();
        for len in 0..=40u64 {
            for start in 0..=(bytes.len() as u64 - len) {
                spans.push(start | len << 32);
            }
        }
        // Short keys only too, so that whole groups take the lanes.
        let short: Vec<u64> = spans
            .iter()
            .copied()
            .filter(|s| (s >> 32) <= LANE_KEY_MAX as u64)
            .collect();
        for seed in [0, 7, u64::MAX] {
            for s in [&spans, &short] {
                let mut got = Vec::new();
                xxh64_spans(&bytes, s, seed, &mut got);
                assert_eq!(got, reference(&bytes, s, seed));
                for (i, &span) in s.iter().enumerate().step_by(97) {
                    let start = span as u32 as usize;
                    let key = &bytes[start..start + (span >> 32) as usize];
                    assert_eq!(got[i], xxh64(key, seed));
                }
            }
        }
    }

    #[test]
    fn lanes_hash_as_the_core() {
        // The lane kernel itself, whatever path is active (the test is skipped without AVX-512).
        #[cfg(target_arch = "x86_64")]
        if crate::SimdPath::Avx512.is_available() {
            let bytes: Vec<u8> = (0..64u8).map(|b| b.wrapping_mul(37)).collect();
            // Every length 0..=16 at 4 starts: more than one run of lanes.
            let spans: Vec<u64> = (0..68u64).map(|i| (i % 48) | (i % 17) << 32).collect();
            let mut got = Vec::new();
            // SAFETY: AVX-512 is available (checked above).
            unsafe { avx512::spans(&bytes, &spans, 9, &mut got) };
            assert_eq!(got, reference(&bytes, &spans, 9));
            return;
        }
        bloomlanes_testkit::skip("the AVX-512 span-hash lane test: this CPU lacks AVX-512");
    }
}
