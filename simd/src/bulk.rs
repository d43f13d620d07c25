//! The bulk algorithm, written once over the per-ISA surface of [`crate::vector`]: hash a group
//! of keys, prefetch their blocks, then probe them while the next group's blocks are already on
//! their way.
//!
//! Everything here is `#[inline(always)]` and generic over an [`Isa`] and a layout [`Shape`], so
//! that it is compiled inside each ISA's `#[target_feature]` entry points ([`entry_points!`]),
//! with that ISA's instructions, once per layout.

use core::sync::atomic::{AtomicU32, Ordering};

use bloomlanes_core::{block_index, Keys, Layout, Params};

use crate::shape::{with_shape, Shape};
use crate::vector::{self, Isa};

/// Keys hashed and probed per group; also the width of the result bit mask of one group.
pub(crate) const GROUP: usize = 32;

/// Where the results of a group go.
pub(crate) trait Sink {
    /// `hits[i]` (0 or 1) is the answer for key `start + i`, `i < n`. `start` is a multiple of
    /// [`GROUP`].
    fn put(&mut self, start: usize, n: usize, hits: &[u8; GROUP]);
}

/// One byte (0 or 1) per key.
pub(crate) struct Bytes<'a>(pub(crate) &'a mut [u8]);

impl Sink for Bytes<'_> {
    #[inline(always)]
    fn put(&mut self, start: usize, n: usize, hits: &[u8; GROUP]) {
        self.0[start..start + n].copy_from_slice(&hits[..n]);
    }
}

/// One bit per key, bit `i % 64` of word `i / 64`; bits past the last key are zero.
pub(crate) struct Bitmap<'a>(pub(crate) &'a mut [u64]);

impl Sink for Bitmap<'_> {
    #[inline(always)]
    fn put(&mut self, start: usize, n: usize, hits: &[u8; GROUP]) {
        // Eight answer bytes (each 0 or 1) become eight bits per step; bytes past the `n`
        // answers of a short last group are stale, so their bits are masked off (`n <= 32`).
        let mut bits = 0u64;
        for (i, eight) in hits.chunks_exact(8).enumerate() {
            let eight = u64::from_le_bytes(eight.try_into().expect("chunks of 8 bytes"));
            bits |= pack8(eight) << (8 * i);
        }
        bits &= (1u64 << n) - 1;
        // GROUP is 32: a group fills the low or the high half of one word, low half first.
        let word = &mut self.0[start / 64];
        if start.is_multiple_of(64) {
            *word = bits;
        } else {
            *word |= bits << 32;
        }
    }
}

/// Packs eight bytes, each 0 or 1, into the low eight bits: byte `k` (little-endian) becomes bit
/// `k`. Byte `j` of the constant is `2^(7 − j)`, i.e. bit `7j + 7`, so input bit `8k` times it
/// lands at bit `8k + 7j + 7`, which is `56 + k` for `j = 7 − k`; the 64 exponents `8k + 7j + 7`
/// are distinct (`8Δk = 7Δj` has no other solution in range), so no partial products carry.
#[inline(always)]
fn pack8(bytes: u64) -> u64 {
    bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// The hashes and block offsets of one group.
struct Group {
    hashes: [u64; GROUP],
    offsets: [usize; GROUP],
}

impl Group {
    const EMPTY: Group = Group {
        hashes: [0; GROUP],
        offsets: [0; GROUP],
    };
}

/// Filters up to this size are left to the hardware: they live in L2, where a software prefetch
/// costs more issue slots than the latency it hides.
const PREFETCH_MIN_BYTES: usize = 512 << 10;

/// Prefetches the cache line at `p` into L1.
#[inline(always)]
pub(crate) fn prefetch_line(p: *const u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults and needs no more than SSE, which every
    // x86_64 CPU has.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How to prefetch a block: not at all, its `lines` whole cache lines (the block is aligned to
/// its size or to 64 bytes), or every line its bytes touch (unaligned storage).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prefetch {
    Off,
    Aligned,
    Unaligned,
}

impl Prefetch {
    fn choose(layout: Layout, blocks: u32, words: *const u32) -> Prefetch {
        let bytes = layout.block_bytes();
        if blocks as usize * bytes <= PREFETCH_MIN_BYTES {
            Prefetch::Off
        } else if (words as usize).is_multiple_of(bytes.min(64)) {
            Prefetch::Aligned
        } else {
            Prefetch::Unaligned
        }
    }

    /// Prefetches the block at `p` (`wrapping_add` keeps the address arithmetic free of UB even
    /// in principle; the block is in bounds anyway).
    #[inline(always)]
    fn block(self, layout: Layout, p: *const u32) {
        let bytes = layout.block_bytes();
        match self {
            Prefetch::Off => {}
            Prefetch::Aligned => {
                prefetch_line(p);
                if bytes > 64 {
                    prefetch_line(p.wrapping_add(16));
                }
            }
            Prefetch::Unaligned => {
                prefetch_line(p);
                prefetch_line(p.wrapping_add(bytes / 4 - 1));
                if bytes > 64 {
                    prefetch_line(p.wrapping_add(16));
                }
            }
        }
    }
}

/// Hashes keys `start..start + n` of `keys` into `g.hashes`, computes their block offsets (in
/// `u32`s) and prefetches the blocks.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fill<I: Isa, S: Shape>(
    blocks: u32,
    words: *const u32,
    seed: u64,
    keys: &Keys<'_>,
    start: usize,
    n: usize,
    g: &mut Group,
    pf: Prefetch,
) {
    let hashes = &mut g.hashes[..n];
    match keys {
        // SAFETY: the caller guarantees that the CPU supports I.
        Keys::U64(k) => unsafe { I::hash_u64(&k[start..start + n], seed, hashes) },
        Keys::Hashes(h) => hashes.copy_from_slice(&h[start..start + n]),
        _ => {
            for (i, h) in hashes.iter_mut().enumerate() {
                *h = keys.hash(start + i, seed);
            }
        }
    }
    for i in 0..n {
        let off = block_index(g.hashes[i], blocks) as usize * S::LAYOUT.block_u32s();
        g.offsets[i] = off;
        pf.block(S::LAYOUT, words.wrapping_add(off));
    }
}

/// Runs `probe(offset, hash)` over every key of `keys`, group by group, with the blocks of the
/// next group prefetched before the current group is probed, and hands each group's answers (one
/// bit per key) to `put`. `offset` is the key's block's first word: `block_index × block_u32s`
/// for a filter of `blocks` blocks of `S`.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn drive<I: Isa, S: Shape>(
    blocks: u32,
    words: *const u32,
    seed: u64,
    keys: Keys<'_>,
    mut probe: impl FnMut(usize, u64) -> bool,
    mut put: impl FnMut(usize, usize, &[u8; GROUP]),
) {
    let n = keys.len();
    if n == 0 {
        return;
    }
    let pf = Prefetch::choose(S::LAYOUT, blocks, words);
    // Two groups used in turn (indexing instead of swapping avoids copying them).
    let mut groups = [Group::EMPTY, Group::EMPTY];
    let mut cur = 0;
    let mut start = 0;
    let mut len = n.min(GROUP);
    // SAFETY: the caller guarantees that the CPU supports I; `words` is only prefetched through.
    unsafe { fill::<I, S>(blocks, words, seed, &keys, 0, len, &mut groups[0], pf) };
    let mut hits = [0u8; GROUP];
    loop {
        let next_start = start + len;
        let next_len = (n - next_start).min(GROUP);
        if next_len > 0 {
            let next = &mut groups[cur ^ 1];
            // SAFETY: the caller guarantees that the CPU supports I; `words` is only prefetched
            // through.
            unsafe { fill::<I, S>(blocks, words, seed, &keys, next_start, next_len, next, pf) };
        }
        let g = &groups[cur];
        for ((h, &off), &hash) in hits[..len].iter_mut().zip(&g.offsets).zip(&g.hashes) {
            *h = u8::from(probe(off, hash));
        }
        put(start, len, &hits);
        if next_len == 0 {
            return;
        }
        cur ^= 1;
        start = next_start;
        len = next_len;
    }
}

/// Bulk lookup of every key into `sink` (which the caller made as long as the batch).
///
/// # Safety
/// `words` holds exactly `p.blocks` blocks of `p.layout` (the [`FilterRef`] invariant); the
/// CPU supports `I`.
///
/// [`FilterRef`]: bloomlanes_core::FilterRef
#[inline(always)]
pub(crate) unsafe fn contains<I: Isa>(
    p: Params,
    words: &[u32],
    keys: Keys<'_>,
    sink: &mut impl Sink,
) {
    debug_assert_eq!(words.len(), p.blocks as usize * p.layout.block_u32s());
    let w = words.as_ptr();
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller). Every `off` is `block_index(_, p.blocks) ×
        // block_u32s` with `block_index < p.blocks`, so `w + off` starts a whole block inside
        // `words`, which holds `p.blocks` blocks of `S` (caller) and is borrowed for the call.
        unsafe {
            drive::<I, S>(
                p.blocks,
                w,
                p.seed,
                keys,
                |off, h| vector::contains::<I, S>(w.add(off), h),
                |s, n, hits| sink.put(s, n, hits),
            )
        }
    })
}

/// Bulk insert into exclusively borrowed words.
///
/// # Safety
/// `words` holds exactly `p.blocks` blocks of `p.layout` (the [`FilterMut`] invariant); the
/// CPU supports `I`.
///
/// [`FilterMut`]: bloomlanes_core::FilterMut
#[inline(always)]
pub(crate) unsafe fn insert<I: Isa>(p: Params, words: &mut [u32], keys: Keys<'_>) {
    debug_assert_eq!(words.len(), p.blocks as usize * p.layout.block_u32s());
    let w = words.as_mut_ptr();
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller). Every `off` is `block_index(_, p.blocks) ×
        // block_u32s` with `block_index < p.blocks`, so `w + off` starts a whole block inside
        // `words`, which holds `p.blocks` blocks of `S` (caller) and is exclusively borrowed for
        // the call, so the block is writable and no one else accesses it.
        unsafe {
            drive::<I, S>(
                p.blocks,
                w,
                p.seed,
                keys,
                |off, h| {
                    vector::insert::<I, S>(w.add(off), h);
                    false
                },
                |_, _, _| {},
            )
        }
    })
}

/// Bulk insert into shared words by atomic OR (no bit is lost to a concurrent writer).
///
/// # Panics
/// If `words` is not `p.blocks` blocks of `p.layout` long.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn insert_atomic<I: Isa>(p: Params, words: &[AtomicU32], keys: Keys<'_>) {
    assert_eq!(words.len(), p.blocks as usize * p.layout.block_u32s());
    with_shape!(p.layout, S => {
        let per = S::LAYOUT.block_u32s();
        let mut mask = [0u32; 32];
        // SAFETY: the CPU supports I (caller). `words.as_ptr()` is only prefetched through; the
        // words are read and written below with atomic operations on bounds-checked slices.
        unsafe {
            drive::<I, S>(
                p.blocks,
                words.as_ptr().cast::<u32>(),
                p.seed,
                keys,
                |off, h| {
                    vector::mask_words::<I, S>(h, &mut mask);
                    let block = &words[off..off + per];
                    for (a, &m) in block.iter().zip(&mask[..per]) {
                        // Skip the read-modify-write when the bits are already there (common
                        // in a filling filter): a plain load is far cheaper than a locked OR.
                        if m != 0 && a.load(Ordering::Relaxed) & m != m {
                            a.fetch_or(m, Ordering::Relaxed);
                        }
                    }
                    false
                },
                |_, _, _| {},
            )
        }
    })
}

/// Hashes every key of `keys` into `out` (`out.len() == keys.len()`), integer keys in the
/// ISA's lanes.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn hash<I: Isa>(keys: Keys<'_>, seed: u64, out: &mut [u64]) {
    assert_eq!(out.len(), keys.len());
    match keys {
        // SAFETY: the caller guarantees that the CPU supports I.
        Keys::U64(k) => unsafe { I::hash_u64(k, seed, out) },
        Keys::Hashes(h) => out.copy_from_slice(h),
        _ => {
            for (i, h) in out.iter_mut().enumerate() {
                *h = keys.hash(i, seed);
            }
        }
    }
}

/// Entries of the prefetch ring of [`insert_hashes`] (a power of two).
const RING: usize = 256;
/// How many newer in-range hashes follow one in the ring before it is inserted
/// (`RING_LAG + GROUP <= RING`).
const RING_LAG: usize = 128;

/// [`insert_hashes`] for blocks of `S`.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn insert_hashes_shaped<I: Isa, S: Shape>(
    blocks: u32,
    first: u32,
    words: &mut [u32],
    hashes: &[u64],
) {
    let per = S::LAYOUT.block_u32s();
    let sub = (words.len() / per) as u32;
    let w = words.as_mut_ptr();
    let pf = Prefetch::choose(S::LAYOUT, sub, w);
    // A ring of the in-range hashes and their block offsets: each group of GROUP hashes is
    // compacted into it (branch-free: the range test is unpredictable when scanning a shared
    // batch) and its blocks prefetched; entries are inserted once RING_LAG newer ones follow
    // them. With no hashing between the prefetch and the insert, a distance of one group would
    // be shorter than a memory latency.
    let mut ring_h = [0u64; RING];
    let mut ring_off = [0usize; RING];
    let (mut head, mut tail) = (0usize, 0usize);
    for chunk in hashes.chunks(GROUP) {
        let from = head;
        for &h in chunk {
            let b = block_index(h, blocks).wrapping_sub(first);
            ring_h[head % RING] = h;
            ring_off[head % RING] = b as usize * per;
            head += usize::from(b < sub);
        }
        for i in from..head {
            pf.block(S::LAYOUT, w.wrapping_add(ring_off[i % RING]));
        }
        while head - tail > RING_LAG {
            // SAFETY: the ring entries below `head` are `b × per` for a block `b < sub`, so the
            // block lies inside `words`, which is exclusively borrowed; the CPU supports I
            // (caller).
            unsafe { vector::insert::<I, S>(w.add(ring_off[tail % RING]), ring_h[tail % RING]) };
            tail += 1;
        }
    }
    while tail < head {
        // SAFETY: the entries `tail .. head` still in the ring are offsets `b × per` of blocks
        // `b < sub` inside the exclusively borrowed `words`; the CPU supports I (caller).
        unsafe { vector::insert::<I, S>(w.add(ring_off[tail % RING]), ring_h[tail % RING]) };
        tail += 1;
    }
}

/// Inserts into the block range `first .. first + words.len() / block_u32s` of a filter with
/// parameters `p` (`words` holds exactly those blocks) every hash of `hashes` whose block falls
/// in that range; the others are skipped.
///
/// # Panics
/// If `words` is not a whole number of blocks.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn insert_hashes<I: Isa>(
    p: Params,
    first: u32,
    words: &mut [u32],
    hashes: &[u64],
) {
    assert!(words.len().is_multiple_of(p.layout.block_u32s()));
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller).
        unsafe { insert_hashes_shaped::<I, S>(p.blocks, first, words, hashes) }
    })
}

/// Defines the entry points of one [`Isa`], each compiled with `$feature` (memchr style: the
/// generic code above is inlined into these functions and so uses the ISA's instructions), and
/// their dispatch table `FNS`.
macro_rules! entry_points {
    ($isa:ty $(, $feature:literal)?) => {
        /// Bulk lookup, one byte per key.
        ///
        /// # Safety
        /// `words` holds exactly `p.blocks` blocks of `p.layout`; the CPU supports this
        /// module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn contains_bytes(
            p: bloomlanes_core::Params,
            words: &[u32],
            keys: bloomlanes_core::Keys<'_>,
            out: &mut [u8],
        ) {
            // SAFETY: both conditions are the caller's.
            unsafe { crate::bulk::contains::<$isa>(p, words, keys, &mut crate::bulk::Bytes(out)) }
        }

        /// Bulk lookup, one bit per key.
        ///
        /// # Safety
        /// `words` holds exactly `p.blocks` blocks of `p.layout`; the CPU supports this
        /// module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn contains_bitmap(
            p: bloomlanes_core::Params,
            words: &[u32],
            keys: bloomlanes_core::Keys<'_>,
            out: &mut [u64],
        ) {
            // SAFETY: both conditions are the caller's.
            unsafe { crate::bulk::contains::<$isa>(p, words, keys, &mut crate::bulk::Bitmap(out)) }
        }

        /// Bulk insert into exclusively borrowed words.
        ///
        /// # Safety
        /// `words` holds exactly `p.blocks` blocks of `p.layout`; the CPU supports this
        /// module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn insert(
            p: bloomlanes_core::Params,
            words: &mut [u32],
            keys: bloomlanes_core::Keys<'_>,
        ) {
            // SAFETY: both conditions are the caller's.
            unsafe { crate::bulk::insert::<$isa>(p, words, keys) }
        }

        /// Bulk insert into shared words by atomic OR.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn insert_atomic(
            p: bloomlanes_core::Params,
            words: &[core::sync::atomic::AtomicU32],
            keys: bloomlanes_core::Keys<'_>,
        ) {
            // SAFETY: the instruction set is the caller's condition; the word count is checked.
            unsafe { crate::bulk::insert_atomic::<$isa>(p, words, keys) }
        }

        /// Hashes every key into `out`.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn hash(keys: bloomlanes_core::Keys<'_>, seed: u64, out: &mut [u64]) {
            // SAFETY: the instruction set is the caller's condition.
            unsafe { crate::bulk::hash::<$isa>(keys, seed, out) }
        }

        /// Inserts the hashes whose block lies in the block range that `words` holds.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn insert_hashes(
            p: bloomlanes_core::Params,
            first: u32,
            words: &mut [u32],
            hashes: &[u64],
        ) {
            // SAFETY: the instruction set is the caller's condition; the kernel only touches
            // blocks inside `words`.
            unsafe { crate::bulk::insert_hashes::<$isa>(p, first, words, hashes) }
        }

        /// The dispatch table of this module.
        pub(crate) const FNS: crate::Fns = crate::Fns {
            contains_bytes,
            contains_bitmap,
            insert,
            insert_atomic,
            hash,
            insert_hashes,
        };
    };
}
pub(crate) use entry_points;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack8_puts_byte_k_at_bit_k() {
        for pattern in 0u32..256 {
            let bytes: [u8; 8] = core::array::from_fn(|k| ((pattern >> k) & 1) as u8);
            assert_eq!(pack8(u64::from_le_bytes(bytes)), u64::from(pattern));
        }
    }

    #[test]
    fn bitmap_sink_masks_stale_hits_of_a_short_group() {
        let mut words = [u64::MAX; 2];
        let mut sink = Bitmap(&mut words);
        let mut hits = [1u8; GROUP];
        hits[1] = 0;
        sink.put(0, GROUP, &hits);
        sink.put(32, 3, &hits);
        assert_eq!(words[0], 0b101 << 32 | (u64::from(u32::MAX) & !0b10));
        assert_eq!(words[1], u64::MAX, "other words untouched");
    }
}
