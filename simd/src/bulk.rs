//! The bulk algorithm, written once over the tiny per-ISA [`Kernel`] surface (hashbrown's
//! `Group`, memchr's `Vector`): hash a group of keys, prefetch their blocks, then probe them while
//! the next group's blocks are already on their way.
//!
//! Everything here is `#[inline(always)]` so that it is compiled inside each ISA's
//! `#[target_feature]` entry point (see `arch::x86_64::*::entry`), with that ISA's instructions.

use core::sync::atomic::{AtomicU32, Ordering};

use bloomlanes_core::{block_index, Keys, Layout};

/// Keys hashed and probed per group; also the width of the result bit mask of one group.
pub(crate) const GROUP: usize = 32;

/// The per-ISA surface: build one key's block mask in vector registers and test it against, or
/// OR it into, one block. `layout` is always a compile-time constant at the call sites (the
/// driver is instantiated per layout), so the `match` on it folds away.
pub(crate) trait Kernel {
    /// Whether every bit of `hash`'s mask is set in the block that starts at `block`.
    ///
    /// # Safety
    /// `block` points to `layout.block_u32s()` readable `u32`s (any alignment of `u32`), and the
    /// CPU supports the kernel's instruction set.
    unsafe fn contains(layout: Layout, block: *const u32, hash: u64) -> bool;

    /// ORs `hash`'s mask into the block that starts at `block`.
    ///
    /// # Safety
    /// As [`Kernel::contains`], and the words are writable and not accessed by anyone else.
    unsafe fn insert(layout: Layout, block: *mut u32, hash: u64);

    /// Writes `hash`'s mask as `layout.block_u32s()` words into `out` (the rest is untouched).
    ///
    /// # Safety
    /// The CPU supports the kernel's instruction set.
    unsafe fn mask(layout: Layout, hash: u64, out: &mut [u32; 32]);

    /// `out[i] = xxh64_u64(keys[i], seed)`; `out.len() == keys.len()`.
    ///
    /// # Safety
    /// The CPU supports the kernel's instruction set.
    unsafe fn hash_u64(keys: &[u64], seed: u64, out: &mut [u64]);
}

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
        let mut bits = 0u64;
        for (i, &h) in hits[..n].iter().enumerate() {
            bits |= u64::from(h) << i;
        }
        // GROUP is 32: a group fills the low or the high half of one word, low half first.
        let word = &mut self.0[start / 64];
        if start.is_multiple_of(64) {
            *word = bits;
        } else {
            *word |= bits << 32;
        }
    }
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
fn prefetch_line(p: *const u32) {
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
/// `words` points to `blocks × layout.block_u32s()` words; the CPU supports `K`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fill<K: Kernel>(
    layout: Layout,
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
        // SAFETY: the caller guarantees the CPU supports K.
        Keys::U64(k) => unsafe { K::hash_u64(&k[start..start + n], seed, hashes) },
        Keys::Hashes(h) => hashes.copy_from_slice(&h[start..start + n]),
        _ => {
            for (i, h) in hashes.iter_mut().enumerate() {
                *h = keys.hash(start + i, seed);
            }
        }
    }
    for i in 0..n {
        let off = block_index(g.hashes[i], blocks) as usize * layout.block_u32s();
        g.offsets[i] = off;
        pf.block(layout, words.wrapping_add(off));
    }
}

/// Runs `probe(offset, hash)` over every key of `keys`, group by group, with the blocks of the
/// next group prefetched before the current group is probed. `probe` answers one bit per key.
///
/// # Safety
/// `words` points to `blocks × layout.block_u32s()` words; the CPU supports `K`.
#[inline(always)]
unsafe fn drive<K: Kernel>(
    layout: Layout,
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
    let pf = Prefetch::choose(layout, blocks, words);
    // Two groups used in turn (indexing instead of swapping avoids copying them).
    let mut groups = [Group::EMPTY, Group::EMPTY];
    let mut cur = 0;
    let mut start = 0;
    let mut len = n.min(GROUP);
    // SAFETY: forwarded from the caller.
    unsafe {
        fill::<K>(
            layout,
            blocks,
            words,
            seed,
            &keys,
            0,
            len,
            &mut groups[0],
            pf,
        )
    };
    let mut hits = [0u8; GROUP];
    loop {
        let next_start = start + len;
        let next_len = (n - next_start).min(GROUP);
        if next_len > 0 {
            // SAFETY: forwarded from the caller.
            unsafe {
                fill::<K>(
                    layout,
                    blocks,
                    words,
                    seed,
                    &keys,
                    next_start,
                    next_len,
                    &mut groups[cur ^ 1],
                    pf,
                )
            };
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

/// The layout with index `L` (const generics cannot take an enum on stable Rust).
#[inline(always)]
pub(crate) const fn layout_of(l: u8) -> Layout {
    match l {
        0 => Layout::L8x32,
        1 => Layout::L8x64,
        2 => Layout::L16x32,
        _ => Layout::L16x64,
    }
}

/// Calls `$f::<K, L>` with the const index of `$layout`, so each layout gets its own loop.
macro_rules! per_layout {
    ($layout:expr, $f:ident :: <$k:ty> ($($arg:expr),* $(,)?)) => {
        match $layout {
            Layout::L8x32 => $f::<$k, 0>($($arg),*),
            Layout::L8x64 => $f::<$k, 1>($($arg),*),
            Layout::L16x32 => $f::<$k, 2>($($arg),*),
            Layout::L16x64 => $f::<$k, 3>($($arg),*),
        }
    };
}

#[inline(always)]
unsafe fn contains_l<K: Kernel, const L: u8>(
    blocks: u32,
    words: *const u32,
    seed: u64,
    keys: Keys<'_>,
    sink: &mut impl Sink,
) {
    let layout = layout_of(L);
    // SAFETY: forwarded from the caller; `off` comes from `block_index(_, blocks)` and so the
    // block `words[off..off + block_u32s]` lies inside the filter.
    unsafe {
        drive::<K>(
            layout,
            blocks,
            words,
            seed,
            keys,
            |off, h| K::contains(layout, words.add(off), h),
            |s, n, hits| sink.put(s, n, hits),
        )
    }
}

/// Bulk lookup. The caller checked that the sink is as long as the batch.
///
/// # Safety
/// The CPU supports `K`.
#[inline(always)]
pub(crate) unsafe fn contains<K: Kernel>(
    layout: Layout,
    blocks: u32,
    words: &[u32],
    seed: u64,
    keys: Keys<'_>,
    sink: &mut impl Sink,
) {
    debug_assert_eq!(words.len(), blocks as usize * layout.block_u32s());
    let w = words.as_ptr();
    // SAFETY: `words` holds `blocks` whole blocks (the FilterRef invariant, checked by the caller).
    unsafe { per_layout!(layout, contains_l::<K>(blocks, w, seed, keys, sink)) }
}

#[inline(always)]
unsafe fn insert_l<K: Kernel, const L: u8>(
    blocks: u32,
    words: *mut u32,
    seed: u64,
    keys: Keys<'_>,
) {
    let layout = layout_of(L);
    // SAFETY: as in `contains_l`; the words are exclusively borrowed by the caller.
    unsafe {
        drive::<K>(
            layout,
            blocks,
            words,
            seed,
            keys,
            |off, h| {
                K::insert(layout, words.add(off), h);
                false
            },
            |_, _, _| {},
        )
    }
}

/// Bulk insert into exclusively borrowed words.
///
/// # Safety
/// The CPU supports `K`.
#[inline(always)]
pub(crate) unsafe fn insert<K: Kernel>(
    layout: Layout,
    blocks: u32,
    words: &mut [u32],
    seed: u64,
    keys: Keys<'_>,
) {
    debug_assert_eq!(words.len(), blocks as usize * layout.block_u32s());
    let w = words.as_mut_ptr();
    // SAFETY: `words` holds `blocks` whole blocks and is exclusively ours for the call.
    unsafe { per_layout!(layout, insert_l::<K>(blocks, w, seed, keys)) }
}

#[inline(always)]
unsafe fn insert_atomic_l<K: Kernel, const L: u8>(
    blocks: u32,
    words: &[AtomicU32],
    seed: u64,
    keys: Keys<'_>,
) {
    let layout = layout_of(L);
    let per = layout.block_u32s();
    let mut mask = [0u32; 32];
    // SAFETY: forwarded from the caller; `words.as_ptr()` is only prefetched through, the
    // accesses below are atomic and bounds-checked.
    unsafe {
        drive::<K>(
            layout,
            blocks,
            words.as_ptr().cast::<u32>(),
            seed,
            keys,
            |off, h| {
                K::mask(layout, h, &mut mask);
                let block = &words[off..off + per];
                for (a, &m) in block.iter().zip(&mask[..per]) {
                    // Skip the read-modify-write when the bits are already there (common in
                    // a filling filter): a plain load is far cheaper than a locked OR.
                    if m != 0 && a.load(Ordering::Relaxed) & m != m {
                        a.fetch_or(m, Ordering::Relaxed);
                    }
                }
                false
            },
            |_, _, _| {},
        )
    }
}

/// Bulk insert into shared words by atomic OR (no bit is lost to a concurrent writer).
///
/// # Safety
/// The CPU supports `K`.
#[inline(always)]
pub(crate) unsafe fn insert_atomic<K: Kernel>(
    layout: Layout,
    blocks: u32,
    words: &[AtomicU32],
    seed: u64,
    keys: Keys<'_>,
) {
    assert_eq!(words.len(), blocks as usize * layout.block_u32s());
    // SAFETY: forwarded from the caller.
    unsafe { per_layout!(layout, insert_atomic_l::<K>(blocks, words, seed, keys)) }
}

/// Hashes every key of `keys` into `out` (`out.len() == keys.len()`), integer keys in the
/// kernel's lanes.
///
/// # Safety
/// The CPU supports `K`.
#[inline(always)]
pub(crate) unsafe fn hash<K: Kernel>(keys: Keys<'_>, seed: u64, out: &mut [u64]) {
    assert_eq!(out.len(), keys.len());
    match keys {
        // SAFETY: the caller guarantees the CPU supports K.
        Keys::U64(k) => unsafe { K::hash_u64(k, seed, out) },
        Keys::Hashes(h) => out.copy_from_slice(h),
        _ => {
            for (i, h) in out.iter_mut().enumerate() {
                *h = keys.hash(i, seed);
            }
        }
    }
}

#[inline(always)]
unsafe fn insert_hashes_l<K: Kernel, const L: u8>(
    blocks: u32,
    first: u32,
    words: &mut [u32],
    hashes: &[u64],
) {
    let layout = layout_of(L);
    let per = layout.block_u32s();
    let sub = (words.len() / per) as u32;
    let w = words.as_mut_ptr();
    let pf = Prefetch::choose(layout, sub, w);
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
            pf.block(layout, w.wrapping_add(ring_off[i % RING]));
        }
        while head - tail > RING_LAG {
            // SAFETY: `ring_off` entries below `head` are `b × per` for a block `b < sub` of
            // `words`, so the block lies in `words`, which is exclusively ours; the CPU supports
            // K (caller).
            unsafe { K::insert(layout, w.add(ring_off[tail % RING]), ring_h[tail % RING]) };
            tail += 1;
        }
    }
    while tail < head {
        // SAFETY: as above.
        unsafe { K::insert(layout, w.add(ring_off[tail % RING]), ring_h[tail % RING]) };
        tail += 1;
    }
}

/// Entries of the prefetch ring of [`insert_hashes`] (a power of two).
const RING: usize = 256;
/// How many newer in-range hashes follow one in the ring before it is inserted
/// (`RING_LAG + GROUP <= RING`).
const RING_LAG: usize = 128;

/// Inserts into the block range `first .. first + words.len() / layout.block_u32s()` of a filter
/// of `blocks` blocks (`words` holds exactly those blocks) every hash of `hashes` whose block
/// falls in that range; the others are skipped.
///
/// # Safety
/// The CPU supports `K`.
#[inline(always)]
pub(crate) unsafe fn insert_hashes<K: Kernel>(
    layout: Layout,
    blocks: u32,
    first: u32,
    words: &mut [u32],
    hashes: &[u64],
) {
    assert!(words.len().is_multiple_of(layout.block_u32s()));
    // SAFETY: forwarded from the caller; the kernel only touches blocks inside `words`.
    unsafe { per_layout!(layout, insert_hashes_l::<K>(blocks, first, words, hashes)) }
}

/// Defines the entry points of one kernel, each compiled with `$feature` (memchr style:
/// the generic code above is inlined into these functions and so uses the ISA's instructions).
macro_rules! entry_points {
    ($kernel:ty $(, $feature:literal)?) => {
        /// Bulk lookup, one byte per key.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn contains_bytes(
            p: bloomlanes_core::Params,
            words: &[u32],
            keys: bloomlanes_core::Keys<'_>,
            out: &mut [u8],
        ) {
            // SAFETY: the caller guarantees the instruction set.
            unsafe {
                crate::bulk::contains::<$kernel>(
                    p.layout, p.blocks, words, p.seed, keys, &mut crate::bulk::Bytes(out),
                )
            }
        }

        /// Bulk lookup, one bit per key.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn contains_bitmap(
            p: bloomlanes_core::Params,
            words: &[u32],
            keys: bloomlanes_core::Keys<'_>,
            out: &mut [u64],
        ) {
            // SAFETY: the caller guarantees the instruction set.
            unsafe {
                crate::bulk::contains::<$kernel>(
                    p.layout, p.blocks, words, p.seed, keys, &mut crate::bulk::Bitmap(out),
                )
            }
        }

        /// Bulk insert into exclusively borrowed words.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn insert(
            p: bloomlanes_core::Params,
            words: &mut [u32],
            keys: bloomlanes_core::Keys<'_>,
        ) {
            // SAFETY: the caller guarantees the instruction set.
            unsafe { crate::bulk::insert::<$kernel>(p.layout, p.blocks, words, p.seed, keys) }
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
            // SAFETY: the caller guarantees the instruction set.
            unsafe {
                crate::bulk::insert_atomic::<$kernel>(p.layout, p.blocks, words, p.seed, keys)
            }
        }

        /// Hashes every key into `out`.
        ///
        /// # Safety
        /// The CPU supports this module's instruction set.
        $(#[target_feature(enable = $feature)])?
        pub(crate) unsafe fn hash(keys: bloomlanes_core::Keys<'_>, seed: u64, out: &mut [u64]) {
            // SAFETY: the caller guarantees the instruction set.
            unsafe { crate::bulk::hash::<$kernel>(keys, seed, out) }
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
            // SAFETY: the caller guarantees the instruction set.
            unsafe {
                crate::bulk::insert_hashes::<$kernel>(p.layout, p.blocks, first, words, hashes)
            }
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
