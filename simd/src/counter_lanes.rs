//! The counters of one key: per-ISA code that reads, updates and writes back the `L` counters a
//! key touches in its block (one per lane) for the counting and stable filters.
//!
//! Counter `k` of a block (`k = lane × W + bit`, see `bloomlanes_core::counting`) is `c` bits at
//! bit `c × (k mod 32/c)` of the block's counter word `k / (32/c)`. The `L` counters of a key lie
//! in `L` different words: lane `i` owns the `Q = W × c / 32` words `i·Q .. (i+1)·Q` and the key
//! touches word `i·Q + bit_i / (32/c)` of them.
//!
//! [`CounterIsa::lanes`] has a scalar default, lane by lane (the portable and SSE2 paths, which
//! have no variable shifts). AVX2 and AVX-512 override it in *word space*: they sweep the whole
//! block's counter words a register at a time (16 words per AVX-512 register, 8 per AVX2
//! register), broadcast each word's lane bit index to it with one permute, and update the
//! counter of the words the key touches under a mask (shift out, compare with the maximum, add
//! or subtract one shifted back in). That is a fixed, branch-free sequence of about 12
//! instructions per register: 2 registers for 8x32 with 4-bit counters. AVX-512 avoids the
//! variable shifts (AMD's double-pumped AVX-512 has few shift units): each word's counter index
//! relative to the word selects it and looks up its one-hot and all-ones values in 16-entry
//! tables (`vpermd`, or one `vpermt2d` that selects on its own for 32-bit lanes), 9 instructions
//! per register; its inserts set the image bits from the same lane bit indices, and its 8x32
//! 4-bit deletes find the emptied counters in lane space with one `vpermt2d` of the two updated
//! registers (measured in L2 on the 2-core EPYC: inserts 170 → 230 M keys/s, deletes 94 → 155). Gathers were tried
//! first and measured 6× slower than the scalar lanes on the reference machine (AMD EPYC).
//! The 8x32 counting inserts and deletes on AVX-512 (4- and 8-bit counters) have kernels of their
//! own on 64-bit variable shifts (`arch::x86_64::counters_8x32`), fed with lane bit indices that
//! the dense loop computes a chunk of keys ahead ([`CounterIsa::ahead`]).

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
    /// What a key's counting insert or delete can have computed ahead of it (a chunk of keys
    /// at a time, off the per-key path): nothing by default.
    type Ahead: Copy + Default;

    /// The [`CounterIsa::Ahead`] of the key with hash `h` in blocks of `S` with `C`-bit
    /// counters.
    ///
    /// # Safety
    /// The CPU supports the ISA.
    unsafe fn ahead<S: Shape, const C: u32>(h: u64) -> Self::Ahead;

    /// A counting insert into one block: the key's bits set in the image block at `ib` (as
    /// [`crate::vector::insert`]), then [`CounterIsa::lanes`] with [`INC`] on its counters.
    /// `a` is the key's [`CounterIsa::ahead`].
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`].
    #[inline(always)]
    unsafe fn insert_counting<S: Shape, const C: u32>(
        ib: *mut u32,
        cb: *mut u32,
        h: u64,
        a: Self::Ahead,
    ) where
        Self: Sized,
    {
        let _ = a;
        // SAFETY: the image block at `ib` is ours and the CPU supports the ISA (caller).
        unsafe {
            crate::vector::insert::<Self, S>(ib, h);
            Self::lanes::<S, C, INC>(ib, cb, h as u32)
        }
    }

    /// A counting delete from one block: refused (`false`, nothing changed) unless the image
    /// block at `ib` holds the key's mask (the image is the counters' projection: every counter
    /// of the key is positive); else [`CounterIsa::lanes`] with [`DEC`], and `true`. `a` is the
    /// key's [`CounterIsa::ahead`].
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`], without its condition on the counters.
    #[inline(always)]
    unsafe fn remove_counting<S: Shape, const C: u32>(
        ib: *mut u32,
        cb: *mut u32,
        h: u64,
        a: Self::Ahead,
    ) -> bool
    where
        Self: Sized,
    {
        let _ = a;
        // SAFETY: the blocks at `ib` and `cb` are ours and the CPU supports the ISA (caller);
        // DEC runs only when the image holds the key's mask, so every counter is positive.
        unsafe {
            if crate::vector::contains::<Self, S>(ib, h) {
                Self::lanes::<S, C, DEC>(ib, cb, h as u32);
                true
            } else {
                false
            }
        }
    }

    /// Applies `OP` ([`INC`], [`DEC`] or [`MAX`]) to the `L` counters (`C` bits each) that `h`
    /// (the low 32 bits of the key's hash) picks in the block whose counters start at `cb`; for
    /// `DEC`, clears the bit of every counter that reaches 0 in the block's image at `ib`.
    ///
    /// # Safety
    /// `cb` points to the `S::LAYOUT.block_u32s() × C` counter words of one block and `ib` to
    /// its `S::LAYOUT.block_u32s()` image words, all writable and not accessed by anyone else
    /// during the call; for `DEC` every counter of the key is positive; the CPU supports the
    /// ISA.
    #[inline(always)]
    unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(ib: *mut u32, cb: *mut u32, h: u32) {
        let layout = S::LAYOUT;
        let max = (1u32 << C) - 1;
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
                    if v == 1 {
                        // SAFETY: `k < L × W`, so its image word `k / 32` lies in the block's
                        // image, ours to write (caller).
                        unsafe { *ib.add(k as usize / 32) &= !(1u32 << (k % 32)) };
                    }
                    word.wrapping_sub(1 << sh)
                }
                MAX => word | (max << sh),
                _ => word,
            };
            // SAFETY: as above.
            unsafe { *p = new };
        }
    }
}

impl CounterIsa for crate::portable::Portable {
    type Ahead = ();

    #[inline(always)]
    unsafe fn ahead<S: Shape, const C: u32>(_: u64) {}
}

#[cfg(target_arch = "x86_64")]
impl CounterIsa for crate::arch::x86_64::sse2::Sse2 {
    type Ahead = ();

    #[inline(always)]
    unsafe fn ahead<S: Shape, const C: u32>(_: u64) {}
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use bloomlanes_core::SALTS;

    use super::{CounterIsa, DEC, INC, MAX};
    use crate::arch::x86_64::avx2::{lane_indices, Avx2};

    /// [`INC`] that also sets the key's bits in the image block (32-bit image words only).
    const INC_IMAGE: u8 = 3;
    use crate::arch::x86_64::avx512::Avx512;
    use crate::arch::x86_64::counters_8x32;

    /// Whether blocks of `S` are 8x32 (with 4-bit counters: the [`counters_8x32`] kernels).
    const fn is_8x32<S: Shape>() -> bool {
        S::LAYOUT.lanes() == 8 && S::LAYOUT.word_bits() == 32
    }

    /// A key's 8 lane bit indices, computed ahead of its update.
    #[derive(Clone, Copy, Default)]
    pub(crate) struct LaneBits([u32; 8]);
    use crate::shape::Shape;

    /// Counter words per lane (`Q = W × c / 32`: 4, 8 or 16).
    const fn words_per_lane<S: Shape, const C: u32>() -> usize {
        S::LAYOUT.word_bits() as usize * C as usize / 32
    }

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

    /// [`CounterIsa::lanes`] in AVX2 registers (8 counter words each).
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`], with AVX2.
    #[inline(always)]
    unsafe fn lanes_avx2<S: Shape, const C: u32, const OP: u8>(ib: *mut u32, cb: *mut u32, h: u32) {
        let q = words_per_lane::<S, C>();
        let regs = S::LAYOUT.lanes() * q / 8;
        let max = ((1u32 << C) - 1) as i32;
        // SAFETY: AVX2 is available (contract). Register `r` covers counter words
        // `8r .. 8r + 8` and `r < L·Q / 8`, so it lies in the block's `L·Q = block_u32s × C`
        // counter words, which are readable, writable and ours (contract); the image bits
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
                let v = _mm256_and_si256(_mm256_srlv_epi32(c, sh), _mm256_set1_epi32(max));
                let below = _mm256_and_si256(sel, _mm256_cmpgt_epi32(_mm256_set1_epi32(max), v));
                let one = _mm256_sllv_epi32(_mm256_set1_epi32(1), sh);
                let new = match OP {
                    INC => _mm256_add_epi32(c, _mm256_and_si256(below, one)),
                    DEC => {
                        let z = _mm256_and_si256(sel, _mm256_cmpeq_epi32(v, _mm256_set1_epi32(1)));
                        let z = _mm256_movemask_ps(_mm256_castsi256_ps(z)) as u32;
                        zeros |= lane_flags(z, 8 * r, 8, q);
                        _mm256_sub_epi32(c, _mm256_and_si256(below, one))
                    }
                    MAX => _mm256_or_si256(
                        c,
                        _mm256_and_si256(sel, _mm256_sllv_epi32(_mm256_set1_epi32(max), sh)),
                    ),
                    _ => c,
                };
                _mm256_storeu_si256(p, new);
            }
            if OP == DEC {
                clear_image_avx2::<S>(ib, groups, zeros);
            }
        }
    }

    impl CounterIsa for Avx2 {
        type Ahead = ();

        #[inline(always)]
        unsafe fn ahead<S: Shape, const C: u32>(_: u64) {}

        #[inline(always)]
        unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(ib: *mut u32, cb: *mut u32, h: u32) {
            // SAFETY: the caller's contract (AVX2 is this ISA).
            unsafe { lanes_avx2::<S, C, OP>(ib, cb, h) }
        }
    }

    /// Word `i` of the one-hot table of `C`-bit counters: a 1 in counter `i` of a word, for the
    /// `32 / C` counters of a word; 0 past them.
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

    /// [`CounterIsa::lanes`] in AVX-512 registers (16 counter words each, updated under mask
    /// registers), without variable shifts (the shift units are the bottleneck on AMD's
    /// double-pumped AVX-512): each word's counter index relative to the word,
    /// `idx = bit - per × sub` (`per = 32 / C` counters per word, `sub` the word's place in its
    /// lane), selects the word iff `idx < per`; the counter's one-hot and all-ones values are
    /// then looked up with `vpermd` in 16-entry tables.
    ///
    /// # Safety
    /// As [`CounterIsa::lanes`], with AVX-512F.
    #[inline(always)]
    unsafe fn lanes_avx512<S: Shape, const C: u32, const OP: u8>(
        ib: *mut u32,
        cb: *mut u32,
        h: u32,
    ) {
        let q = words_per_lane::<S, C>();
        let regs = S::LAYOUT.lanes() * q / 16;
        let max = (1u32 << C) - 1;
        let per = 32 / C;
        let ones = const { one_table::<C>() };
        // SAFETY: AVX-512F is available (contract); SALTS is 16 u32 and the tables 16 u32 (64
        // bytes each, read unaligned). Register `r` covers counter words `16r .. 16r + 16` and
        // `r < L·Q / 16`, so it lies in the block's `L·Q = block_u32s × C` counter words, which
        // are readable, writable and ours (contract); the image bits cleared are
        // `lane × W + bit < L × W` of the block's image, also ours (contract).
        unsafe {
            let bits = _mm512_srl_epi32(
                _mm512_mullo_epi32(
                    _mm512_set1_epi32(h as i32),
                    _mm512_loadu_si512(SALTS.as_ptr().cast()),
                ),
                _mm_cvtsi32_si128(S::LAYOUT.lane_shift() as i32),
            );
            let one_t = _mm512_loadu_si512(ones.as_ptr().cast());
            let max_t = _mm512_mullo_epi32(one_t, _mm512_set1_epi32(max as i32));
            let mut zeros = 0u32;
            // 8 lanes of `Q` = 4 or 8 words (8x32, 4- or 8-bit counters): the whole block's
            // counters are two or four registers, and a delete finds its emptied counters in
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
                    INC | INC_IMAGE => _mm512_mask_add_epi32(c, below, c, one),
                    DEC => {
                        if !two_regs {
                            let z = _mm512_mask_cmpeq_epi32_mask(sel, cm, one);
                            zeros |= group_flags(u32::from(z), q) << (16 * r / q);
                        }
                        _mm512_mask_sub_epi32(c, below, c, one)
                    }
                    MAX => _mm512_or_si512(c, m),
                    _ => c,
                };
                _mm512_storeu_si512(p.cast(), new);
                if let Some(slot) = news.get_mut(r).filter(|_| two_regs) {
                    *slot = new;
                }
            }
            if OP == INC_IMAGE {
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
                // Lane `i`'s counter is word `Q·i + bit_i / per` of the registers, counter
                // `bit_i mod per` of it; it emptied iff that counter is now 0 (it was 1: a
                // saturated counter is never decremented to 0). With Q = 8, lanes 0–3 lie in
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
                let clear =
                    _mm512_castsi512_si256(_mm512_and_si512(bit, _mm512_movm_epi32(emptied)));
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

    impl CounterIsa for Avx512 {
        /// The lane bit indices of 8x32 keys (unused for other shapes).
        type Ahead = LaneBits;

        #[inline(always)]
        unsafe fn ahead<S: Shape, const C: u32>(h: u64) -> LaneBits {
            let mut a = LaneBits::default();
            if is_8x32::<S>() {
                // SAFETY: AVX-512F (and so AVX2) is available (caller); the 32 bytes written
                // are `a`'s.
                unsafe { counters_8x32::store_bits::<S>(h as u32, &mut a.0) };
            }
            a
        }

        #[inline(always)]
        unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(ib: *mut u32, cb: *mut u32, h: u32) {
            // SAFETY: the caller's contract (AVX-512F is part of this ISA).
            unsafe { lanes_avx512::<S, C, OP>(ib, cb, h) }
        }

        #[inline(always)]
        unsafe fn insert_counting<S: Shape, const C: u32>(
            ib: *mut u32,
            cb: *mut u32,
            h: u64,
            a: LaneBits,
        ) {
            // SAFETY: the caller's contract (AVX-512F is part of this ISA); `a` is the key's
            // lane bit indices for 8x32 (the caller's `ahead`).
            unsafe {
                if is_8x32::<S>() && C == 4 {
                    counters_8x32::insert4(ib, cb, &a.0)
                } else if is_8x32::<S>() && C == 8 {
                    counters_8x32::insert8(ib, cb, &a.0)
                } else if S::LAYOUT.word_bits() == 32 {
                    // The image bits come from the lane bit indices the counters use.
                    lanes_avx512::<S, C, INC_IMAGE>(ib, cb, h as u32)
                } else {
                    crate::vector::insert::<Self, S>(ib, h);
                    lanes_avx512::<S, C, INC>(ib, cb, h as u32)
                }
            }
        }

        #[inline(always)]
        unsafe fn remove_counting<S: Shape, const C: u32>(
            ib: *mut u32,
            cb: *mut u32,
            h: u64,
            a: LaneBits,
        ) -> bool {
            // SAFETY: as in `insert_counting`.
            unsafe {
                if is_8x32::<S>() && C == 4 {
                    counters_8x32::remove4(ib, cb, &a.0)
                } else if is_8x32::<S>() && C == 8 {
                    counters_8x32::remove8(ib, cb, &a.0)
                } else if crate::vector::contains::<Self, S>(ib, h) {
                    lanes_avx512::<S, C, DEC>(ib, cb, h as u32);
                    true
                } else {
                    false
                }
            }
        }
    }
}
