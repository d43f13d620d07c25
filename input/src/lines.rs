//! Splitting a chunk into lines in one pass: each 64-byte block of the chunk becomes a bit mask
//! of its newlines (SSE2 compares on x86-64, word-at-a-time elsewhere), and the lines are read
//! off the masks' set bits. For the short lines of a key file (a dozen bytes) this costs a few
//! instructions per line, where a `memchr` call per line pays its setup every time.

use bloomlanes_core::xxh64;

/// Hashes a batch of keys that are places in one buffer: `out` gets, in order,
/// `xxh64(&bytes[start..start + len], seed)` of every span `start | len << 32` of `spans`
/// (each within `bytes`). [`xxh64_spans`] is the reference; a caller brings a faster one of the
/// same values (SIMD lanes) through [`InputOptions::span_hasher`](crate::InputOptions).
pub type SpanHasher = fn(bytes: &[u8], spans: &[u64], seed: u64, out: &mut Vec<u64>);

/// The span `start | len << 32` as a range of the buffer.
#[inline(always)]
pub fn span_range(span: u64) -> std::ops::Range<usize> {
    let start = span as u32 as usize;
    start..start + (span >> 32) as usize
}

/// The reference [`SpanHasher`]: the core's XXH64 of each span in turn.
pub fn xxh64_spans(bytes: &[u8], spans: &[u64], seed: u64, out: &mut Vec<u64>) {
    out.extend(spans.iter().map(|&s| xxh64(&bytes[span_range(s)], seed)));
}

/// Whether every place in `bytes` fits a span's 32-bit start and length.
#[inline]
pub(crate) fn spans_fit(bytes: &[u8]) -> bool {
    u32::try_from(bytes.len()).is_ok()
}

/// The newline mask of one 64-byte block: bit `i` is set when `block[i] == b'\n'`.
#[inline(always)]
fn newline_mask(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        let mut mask = 0u64;
        for (i, part) in block.chunks_exact(16).enumerate() {
            // SAFETY: `part` is 16 readable bytes (a `chunks_exact(16)` piece of a 64-byte
            // array), which is what an unaligned 128-bit load reads; SSE2 is part of every
            // x86-64 target, so the instructions exist wherever this compiles.
            let bits = unsafe {
                let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8)))
            };
            mask |= u64::from(bits as u32 as u16) << (16 * i);
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        newline_mask_words(block)
    }
}

/// [`newline_mask`] a word at a time, without vector instructions: the high bit of each byte
/// of a word that equals `\n` (exactly: no borrow crosses bytes), gathered into 8 bits by a
/// multiply.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn newline_mask_words(block: &[u8; 64]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut mask = 0u64;
    for (i, word) in block.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ NL;
        // High bit set exactly in the bytes of `w` that are zero.
        let zero = !(((w & LOW7) + LOW7) | w | LOW7);
        // Byte k's high bit (bit 8k + 7) to bit 56 + k, then down to bit k.
        let bits = ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56;
        mask |= bits << (8 * i);
    }
    mask
}

/// Calls `line(start, end)` for every line of `bytes` in order: `bytes[start..end]` is the line
/// without its `\n` (a `\r` before it is kept); a last line without a newline is included, an
/// empty input has none. Stops at the first error `line` returns. Returns the number of lines.
#[inline]
pub(crate) fn for_each_line<E>(
    bytes: &[u8],
    mut line: impl FnMut(usize, usize) -> Result<(), E>,
) -> Result<u64, E> {
    let mut start = 0usize;
    let mut count = 0u64;
    let whole = bytes.len() / 64 * 64;
    let mut tail = [0u8; 64];
    tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
    // The tail block's mask ends an unterminated last line at the end of the input, so that
    // `line` has one call site (and is inlined into this loop).
    let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
    let mut base = 0usize;
    while base <= whole {
        let mask = if base < whole {
            prefetch(bytes, base + PREFETCH_AHEAD);
            newline_mask(bytes[base..base + 64].try_into().expect("64 bytes"))
        } else {
            newline_mask(&tail) | u64::from(unterminated) << (bytes.len() - whole)
        };
        let mut mask = mask;
        while mask != 0 {
            let end = base + mask.trailing_zeros() as usize;
            line(start, end)?;
            count += 1;
            start = end + 1;
            mask &= mask - 1;
        }
        base += 64;
    }
    Ok(count)
}

/// How far ahead of the block being split its bytes are fetched: the hardware's stream
/// prefetcher stops at page boundaries, and a mapped file's next page is a cold miss.
const PREFETCH_AHEAD: usize = 1024;

/// Asks for the cache line at `bytes[at]` (nothing when `at` is past the end).
#[inline(always)]
fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults and changes no memory; `b` is a
        // byte of `bytes` in any case.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines as `split` finds them (the reference).
    fn reference(bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                out.push((start, i));
                start = i + 1;
            }
        }
        if start < bytes.len() {
            out.push((start, bytes.len()));
        }
        out
    }

    fn lines(bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let n = for_each_line(bytes, |a, b| {
            out.push((a, b));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(n as usize, out.len());
        out
    }

    #[test]
    fn lines_match_a_byte_by_byte_split_at_every_length_and_alignment() {
        // Newlines at every position of a few blocks, in patterns a pseudo-random walk picks,
        // with bytes that differ from `\n` by one bit (0x0b, 0x08, 0x8a) and the SWAR's
        // borrow cases (0x00, 0x01, 0x80, 0xff) around them.
        let noise = [b'a', 0x0b, 0x08, 0x8a, 0x00, 0x01, 0x80, 0xff, b'\r'];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..300 {
            for _ in 0..8 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x.is_multiple_of(5) {
                            b'\n'
                        } else {
                            noise[(x >> 8) as usize % noise.len()]
                        }
                    })
                    .collect();
                assert_eq!(lines(&bytes), reference(&bytes), "{bytes:?}");
            }
        }
        assert_eq!(lines(b""), vec![]);
        assert_eq!(lines(b"\n\n"), vec![(0, 0), (1, 1)]);
        assert_eq!(lines(b"ab"), vec![(0, 2)]);
    }

    #[test]
    fn both_masks_agree_on_every_byte_value_at_every_position() {
        for pos in 0..64 {
            for v in 0..=255u8 {
                let mut block = [b'\n'; 64];
                block[pos] = v;
                let mut other = [v; 64];
                other[pos] = b'\n';
                for b in [&block, &other] {
                    let want = b
                        .iter()
                        .enumerate()
                        .fold(0u64, |m, (i, &c)| m | u64::from(c == b'\n') << i);
                    assert_eq!(newline_mask(b), want);
                    assert_eq!(newline_mask_words(b), want);
                }
            }
        }
    }

    #[test]
    fn an_error_stops_the_walk() {
        let mut seen = 0;
        let r = for_each_line(b"a\nb\nc\n", |a, _| {
            seen += 1;
            if a == 2 {
                Err(a)
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err(2));
        assert_eq!(seen, 2);
    }
}
