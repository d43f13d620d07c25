//! The bulk algorithm, written once over the per-ISA surface of [`crate::vector`]: hash a group
//! of keys, prefetch their blocks, then probe them while the next group's blocks are already on
//! their way.
//!
//! Everything here is `#[inline(always)]` and generic over an [`Isa`] and a layout [`Shape`], so
//! that it is compiled inside each ISA's `#[target_feature]` entry points ([`entry_points!`]),
//! with that ISA's instructions, once per layout.

use core::sync::atomic::{AtomicU32, Ordering};

use bloomlanes_core::{block_index, Keys, Layout, Params};

use crate::prefetch::Prefetch;
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

/// How to prefetch a block: where to ([`Prefetch`], by the filter's size), and whether the block
/// is aligned to its size or to 64 bytes (its whole lines) or not (every line its bytes touch).
#[derive(Clone, Copy, PartialEq, Eq)]
struct BlockPrefetch {
    target: Prefetch,
    aligned: bool,
}

impl BlockPrefetch {
    fn choose(layout: Layout, blocks: u32, words: *const u32) -> BlockPrefetch {
        let bytes = layout.block_bytes();
        BlockPrefetch {
            target: Prefetch::for_bytes(u64::from(blocks) * bytes as u64),
            aligned: (words as usize).is_multiple_of(bytes.min(64)),
        }
    }

    /// Prefetches the block at `p` (`wrapping_add` keeps the address arithmetic free of UB even
    /// in principle; the block is in bounds anyway).
    #[inline(always)]
    fn block(self, layout: Layout, p: *const u32) {
        let bytes = layout.block_bytes();
        if !self.target.is_on() {
            return;
        }
        self.target.line(p);
        if !self.aligned {
            self.target.line(p.wrapping_add(bytes / 4 - 1));
        }
        if bytes > 64 {
            self.target.line(p.wrapping_add(16));
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
    pf: BlockPrefetch,
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
    let pf = BlockPrefetch::choose(S::LAYOUT, blocks, words);
    // Two groups used in turn: group `g` is filled (hashed, its blocks prefetched) while group
    // `g - 1` waits to be probed. Each group's keys are found from its number alone (no state
    // carried between iterations): the earlier form, which carried the next start and length
    // from one iteration to the next, compiled to code that ran at half the speed on AVX-512.
    let mut groups = [Group::EMPTY, Group::EMPTY];
    let total = n.div_ceil(GROUP);
    let span = |g: usize| (g * GROUP, (n - g * GROUP).min(GROUP));
    let (s0, l0) = span(0);
    // SAFETY: the caller guarantees that the CPU supports I; `words` is only prefetched through.
    unsafe { fill::<I, S>(blocks, words, seed, &keys, s0, l0, &mut groups[0], pf) };
    let mut hits = [0u8; GROUP];
    for g in 0..total {
        if g + 1 < total {
            let (s, l) = span(g + 1);
            // SAFETY: as for the first group.
            unsafe {
                fill::<I, S>(
                    blocks,
                    words,
                    seed,
                    &keys,
                    s,
                    l,
                    &mut groups[(g + 1) % 2],
                    pf,
                )
            };
        }
        let (start, len) = span(g);
        let cur = &groups[g % 2];
        for ((h, &off), &hash) in hits[..len].iter_mut().zip(&cur.offsets).zip(&cur.hashes) {
            *h = u8::from(probe(off, hash));
        }
        put(start, len, &hits);
    }
}

/// What a bulk pass does with each key's block: look it up, insert, or insert by atomic OR.
trait BlockOp {
    /// The key with hash `h`, whose block starts at word `off`; the result is the key's answer
    /// (lookups; the others answer `false`).
    ///
    /// # Safety
    /// `off` is `block_index × block_u32s` of a block of the words the operation was made
    /// over (which hold `p.blocks` blocks of `S`, exclusively borrowed for the writes); the CPU
    /// supports `I`.
    unsafe fn apply<I: Isa, S: Shape>(&mut self, off: usize, h: u64) -> bool;
}

/// Lookups in the words from the pointer.
struct Lookup(*const u32);

impl BlockOp for Lookup {
    #[inline(always)]
    unsafe fn apply<I: Isa, S: Shape>(&mut self, off: usize, h: u64) -> bool {
        // SAFETY: the block at `off` lies in the words (caller); the CPU supports I (caller).
        unsafe { vector::contains::<I, S>(self.0.add(off), h) }
    }
}

/// Inserts into the exclusively borrowed words from the pointer.
struct Set(*mut u32);

impl BlockOp for Set {
    #[inline(always)]
    unsafe fn apply<I: Isa, S: Shape>(&mut self, off: usize, h: u64) -> bool {
        // SAFETY: the block at `off` lies in the words, which are ours (caller); the CPU
        // supports I (caller).
        unsafe { vector::insert::<I, S>(self.0.add(off), h) };
        false
    }
}

/// Inserts into shared words by atomic OR.
struct AtomicOr<'a>(&'a [AtomicU32]);

impl BlockOp for AtomicOr<'_> {
    #[inline(always)]
    unsafe fn apply<I: Isa, S: Shape>(&mut self, off: usize, h: u64) -> bool {
        let per = S::LAYOUT.block_u32s();
        let mut mask = [0u32; 32];
        // SAFETY: the CPU supports I (caller).
        unsafe { vector::mask_words::<I, S>(h, &mut mask) };
        for (a, &m) in self.0[off..off + per].iter().zip(&mask[..per]) {
            // Skip the read-modify-write when the bits are already there (common in a filling
            // filter): a plain load is far cheaper than a locked OR.
            if m != 0 && a.load(Ordering::Relaxed) & m != m {
                a.fetch_or(m, Ordering::Relaxed);
            }
        }
        false
    }
}

/// Runs `op` over every key's block (at `words`, which only `op` reads or writes) with the
/// group-and-prefetch loop of [`drive`], and hands the answers to `sink`.
///
/// # Safety
/// `words` holds `p.blocks` blocks of `p.layout`, as `op` needs them; the CPU supports `I`.
#[inline(always)]
unsafe fn run<I: Isa>(
    p: Params,
    words: *const u32,
    keys: Keys<'_>,
    op: &mut impl BlockOp,
    sink: &mut impl Sink,
) {
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller). Every `off` is `block_index(_, p.blocks) ×
        // block_u32s` with `block_index < p.blocks`, so it starts a whole block of the words,
        // which hold `p.blocks` blocks of `S` as `op` needs them (caller); `words` itself is
        // only prefetched through.
        unsafe {
            drive::<I, S>(
                p.blocks,
                words,
                p.seed,
                keys,
                |off, h| op.apply::<I, S>(off, h),
                |s, n, hits| sink.put(s, n, hits),
            )
        }
    })
}

/// Discards the answers of a write.
struct NoAnswers;

impl Sink for NoAnswers {
    #[inline(always)]
    fn put(&mut self, _: usize, _: usize, _: &[u8; GROUP]) {}
}

/// Bulk lookup of every key into `sink` (which the caller made as long as the batch).
///
/// # Safety
/// `words` holds exactly `p.blocks` blocks of `p.layout` (the [`FilterRef`] invariant); the
/// CPU supports `I`.
///
/// [`FilterRef`]: bloomlanes_core::FilterRef
#[inline(always)]
unsafe fn contains<I: Isa>(p: Params, words: &[u32], keys: Keys<'_>, sink: &mut impl Sink) {
    debug_assert_eq!(words.len(), p.blocks as usize * p.layout.block_u32s());
    let w = words.as_ptr();
    // SAFETY: the words hold `p.blocks` blocks, borrowed for the call (caller); the CPU
    // supports I (caller).
    unsafe { run::<I>(p, w, keys, &mut Lookup(w), sink) }
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
    // SAFETY: the words hold `p.blocks` blocks and are exclusively borrowed for the call
    // (caller), so every block is writable and no one else accesses it; the CPU supports I.
    unsafe { run::<I>(p, w, keys, &mut Set(w), &mut NoAnswers) }
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
    let w = words.as_ptr().cast::<u32>();
    // SAFETY: the CPU supports I (caller); the words are `p.blocks` blocks (checked), read and
    // written only atomically through bounds-checked slices (`w` is only prefetched through).
    unsafe { run::<I>(p, w, keys, &mut AtomicOr(words), &mut NoAnswers) }
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
    let pf = BlockPrefetch::choose(S::LAYOUT, sub, w);
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

/// Bulk lookup of every key, one byte (0 or 1) per key into `out` (as long as the batch).
///
/// # Safety
/// As [`contains`].
#[inline(always)]
pub(crate) unsafe fn contains_bytes<I: Isa>(p: Params, w: &[u32], keys: Keys<'_>, out: &mut [u8]) {
    // SAFETY: the caller's contract.
    unsafe { contains::<I>(p, w, keys, &mut Bytes(out)) }
}

/// Bulk lookup of every key, one bit per key into `out` (a word per 64 keys).
///
/// # Safety
/// As [`contains`].
#[inline(always)]
pub(crate) unsafe fn contains_bitmap<I: Isa>(p: Params, w: &[u32], keys: Keys<'_>, o: &mut [u64]) {
    // SAFETY: the caller's contract.
    unsafe { contains::<I>(p, w, keys, &mut Bitmap(o)) }
}

/// Defines the entry points of one [`Isa`], each compiled with the attributes `[...]` (its
/// `#[target_feature]`, memchr style: the generic code above is inlined into these functions
/// and so uses the ISA's instructions), and their dispatch table `FNS`.
macro_rules! entry_points {
    ($isa:ty, $attrs:tt) => {
        crate::dispatch::entries!($isa, $attrs;
            contains_bytes = crate::bulk::contains_bytes(
                p: bloomlanes_core::Params, words: &[u32], keys: bloomlanes_core::Keys<'_>,
                out: &mut [u8]
            );
            contains_bitmap = crate::bulk::contains_bitmap(
                p: bloomlanes_core::Params, words: &[u32], keys: bloomlanes_core::Keys<'_>,
                out: &mut [u64]
            );
            insert = crate::bulk::insert(
                p: bloomlanes_core::Params, words: &mut [u32], keys: bloomlanes_core::Keys<'_>
            );
            insert_atomic = crate::bulk::insert_atomic(
                p: bloomlanes_core::Params, words: &[core::sync::atomic::AtomicU32],
                keys: bloomlanes_core::Keys<'_>
            );
            hash = crate::bulk::hash(keys: bloomlanes_core::Keys<'_>, seed: u64, out: &mut [u64]);
            insert_hashes = crate::bulk::insert_hashes(
                p: bloomlanes_core::Params, first: u32, words: &mut [u32], hashes: &[u64]
            );
        );

        /// The dispatch table of this ISA.
        pub(crate) const FNS: crate::dispatch::Fns = crate::dispatch::fns!();
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
