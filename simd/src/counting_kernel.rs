//! The bulk kernels of the counting and stable filters, written once over [`CounterIsa`] and the
//! [`vector`] block operations: key after key in input order (so that keys of one batch that
//! share counters see each other's updates exactly as the core's key-by-key path does), with
//! the image block and the counter block of upcoming keys prefetched.
//!
//! A counting key touches one image block (`L × W` bits) and that block's counters
//! (`L × W × c` bits: 128 bytes for 8x32 with 4-bit counters, 256 with 8-bit). The image is the
//! projection, so "all the key's counters are positive" is the static lookup of its block mask.

use bloomlanes_core::counting::stable_cells;
use bloomlanes_core::{block_index, CounterBits, Params};

use crate::counter_lanes::{CounterIsa, DEC, INC, MAX};
use crate::shape::{with_shape, Shape};
use crate::vector;

/// Storage up to this size (image and counters together) is left to the hardware prefetcher,
/// as in the static bulk path: it sits in L2.
pub(crate) const PREFETCH_MIN_BYTES: usize = 512 << 10;

/// Entries of the prefetch ring of [`update`] (a power of two).
const RING: usize = 128;
/// How many newer in-range keys follow one in the ring before it is applied: the prefetch
/// distance, in keys (`LAG + GROUP <= RING`).
const LAG: usize = 32;
/// Keys scanned (range-tested and compacted into the ring) at a time.
const GROUP: usize = 32;

/// Prefetches into L1 every cache line of the `bytes` bytes from `p` (a hint: it never faults,
/// and the address arithmetic wraps rather than assuming anything about `p`).
#[inline(always)]
pub(crate) fn prefetch_bytes(p: *const u32, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let skew = (p as usize) & 63;
        let start = p.cast::<u8>().wrapping_sub(skew);
        let mut off = 0;
        while off < bytes + skew {
            // SAFETY: a prefetch is a hint; it never faults and needs no more than SSE, which
            // every x86_64 CPU has.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(off).cast::<i8>(),
                )
            };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// Applies `OP` for the key with hash `h` in block `b` of the range whose image starts at `ip`
/// and counters at `cp`; a refused delete pushes `i` onto `refused`.
///
/// A function rather than a closure: a closure does not inherit the `#[target_feature]` of the
/// entry point, and the ISA's intrinsics would not inline into it.
///
/// # Safety
/// Block `b` lies in the image and counters at `ip` and `cp`, which are writable and not
/// accessed by anyone else during the call; the CPU supports `I`.
#[inline(always)]
unsafe fn apply<I: CounterIsa, S: Shape, const C: u32, const OP: u8>(
    ip: *mut u32,
    cp: *mut u32,
    h: u64,
    b: u32,
    i: u32,
    a: I::Ahead,
    refused: &mut Vec<u32>,
) {
    let per = S::LAYOUT.block_u32s();
    let b = b as usize;
    // SAFETY: block `b`'s image (`per` words) and counters (`per × C` words) lie in the
    // caller's storage, ours for the call; the CPU supports I (caller). For DEC the counters
    // are all positive when the image holds the key's mask (the image is their projection).
    unsafe {
        let (ib, cb) = (ip.add(b * per), cp.add(b * per * C as usize));
        match OP {
            DEC => {
                if !I::remove_counting::<S, C>(ib, cb, h, a) {
                    refused.push(i);
                }
            }
            _ => I::insert_counting::<S, C>(ib, cb, h, a),
        }
    }
}

/// Keys whose local block indices (in a loop the compiler vectorises) and, in L2, whose
/// [`CounterIsa::ahead`] values [`dense`] computes at a time, ahead of their updates (64
/// measured best of 8 to 256 on the 2-core EPYC, see BENCHMARKS.md, issue #14).
const DENSE_CHUNK: usize = 64;

/// [`update_shaped`] of a dense batch: key after key, each in-range key applied (the range test
/// is predictable: nearly every key is in range), the block of the key `LAG` ahead prefetched
/// when `PF`. The local block indices are computed [`DENSE_CHUNK`] keys at a time, off the
/// per-key path.
///
/// # Safety
/// `ip` and `cp` are the image and counters of `sub` blocks (`sub × block_u32s` and
/// `sub × block_u32s × C` words), writable and not accessed by anyone else during the call;
/// the CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dense<I: CounterIsa, S: Shape, const C: u32, const OP: u8, const PF: bool>(
    blocks: u32,
    first: u32,
    sub: u32,
    ip: *mut u32,
    cp: *mut u32,
    hashes: &[u64],
    refused: &mut Vec<u32>,
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let local = |h: u64| block_index(h, blocks).wrapping_sub(first);
    let mut blocks_of = [0u32; DENSE_CHUNK];
    let mut aheads = [I::Ahead::default(); DENSE_CHUNK];
    for (c, chunk) in hashes.chunks(DENSE_CHUNK).enumerate() {
        for (b, &h) in blocks_of.iter_mut().zip(chunk) {
            *b = local(h);
        }
        if !PF {
            for (a, &h) in aheads.iter_mut().zip(chunk) {
                // SAFETY: the CPU supports I (caller).
                *a = unsafe { I::ahead::<S, C>(h) };
            }
        }
        for (j, ((&h, &b), &a)) in chunk.iter().zip(&blocks_of).zip(&aheads).enumerate() {
            let i = c * DENSE_CHUNK + j;
            // Beyond L2 (measured at 1 MiB, 5 MiB of storage) the per-key path waits on memory,
            // and the chunk's pass ahead only delays the prefetches: the key's values are
            // computed in place.
            let a = if PF {
                // SAFETY: the CPU supports I (caller).
                unsafe { I::ahead::<S, C>(h) }
            } else {
                a
            };
            if PF {
                if let Some(&a) = hashes.get(i + LAG) {
                    let b = local(a) as usize;
                    // A hint: never faults, and the address arithmetic wraps.
                    prefetch_bytes(ip.wrapping_add(b * per), per * 4);
                    prefetch_bytes(cp.wrapping_add(b * cper), cper * 4);
                }
            }
            if b < sub {
                // SAFETY: `b < sub`, and `ip`/`cp` are the exclusively borrowed image and
                // counters of `sub` blocks; the CPU supports I (caller).
                unsafe { apply::<I, S, C, OP>(ip, cp, h, b, i as u32, a, refused) };
            }
        }
    }
}

/// [`update`] for blocks of `S` and `C`-bit counters.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn update_shaped<I: CounterIsa, S: Shape, const C: u32, const OP: u8>(
    blocks: u32,
    first: u32,
    image: &mut [u32],
    counters: &mut [u32],
    hashes: &[u64],
    refused: &mut Vec<u32>,
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let sub = image.len() / per;
    assert!(image.len() == sub * per && counters.len() == sub * cper);
    let sub = sub as u32;
    let (ip, cp) = (image.as_mut_ptr(), counters.as_mut_ptr());
    let pf = (image.len() + counters.len()) * 4 > PREFETCH_MIN_BYTES;
    let local = |h: u64| block_index(h, blocks).wrapping_sub(first);
    // Dense batches (the whole filter, or a partition's own keys; judged by the first keys, a
    // hint only: every key's range is still tested) skip the ring: one predictable range test
    // per key, the block of the key `LAG` ahead prefetched.
    if sub == blocks || hashes.iter().take(GROUP).all(|&h| local(h) < sub) {
        // SAFETY: `ip`/`cp` are the exclusively borrowed image and counters of `sub` blocks;
        // the CPU supports I (caller).
        unsafe {
            if pf {
                dense::<I, S, C, OP, true>(blocks, first, sub, ip, cp, hashes, refused)
            } else {
                dense::<I, S, C, OP, false>(blocks, first, sub, ip, cp, hashes, refused)
            }
        }
        return;
    }
    // The ring of in-range keys: hash, local block, position in `hashes`.
    let mut ring_h = [0u64; RING];
    let mut ring_b = [0u32; RING];
    let mut ring_i = [0u32; RING];
    let (mut head, mut tail) = (0usize, 0usize);
    for (g, chunk) in hashes.chunks(GROUP).enumerate() {
        let from = head;
        for (j, &h) in chunk.iter().enumerate() {
            // Branch-free compaction: the range test is unpredictable when many ranges scan
            // one batch.
            let b = block_index(h, blocks).wrapping_sub(first);
            ring_h[head % RING] = h;
            ring_b[head % RING] = b;
            ring_i[head % RING] = (g * GROUP + j) as u32;
            head += usize::from(b < sub);
        }
        if pf {
            for e in from..head {
                let b = ring_b[e % RING] as usize;
                prefetch_bytes(ip.wrapping_add(b * per), per * 4);
                prefetch_bytes(cp.wrapping_add(b * cper), cper * 4);
            }
        }
        while head - tail > LAG {
            let t = tail % RING;
            // SAFETY: ring entries have `b < sub` (only such entries are kept), and `ip`/`cp`
            // are the exclusively borrowed image and counters of `sub` blocks; the CPU
            // supports I (caller).
            unsafe {
                let h = ring_h[t];
                apply::<I, S, C, OP>(
                    ip,
                    cp,
                    h,
                    ring_b[t],
                    ring_i[t],
                    I::ahead::<S, C>(h),
                    refused,
                )
            };
            tail += 1;
        }
    }
    while tail < head {
        let t = tail % RING;
        // SAFETY: as above.
        unsafe {
            let h = ring_h[t];
            apply::<I, S, C, OP>(
                ip,
                cp,
                h,
                ring_b[t],
                ring_i[t],
                I::ahead::<S, C>(h),
                refused,
            )
        };
        tail += 1;
    }
}

/// Counting insert (`op` = [`INC`]) or delete ([`DEC`]) of the keys with `hashes`, in their
/// order, restricted to the block range `first .. first + image.len() / block_u32s` of a filter
/// with parameters `p` (`image` and `counters` hold exactly those blocks' words); keys of other
/// blocks are skipped. A delete whose key is not in the image is refused: its position in
/// `hashes` is pushed onto `refused` and nothing changes.
///
/// # Panics
/// If `p` is not of a counting or stable filter, or the slices are not whole blocks of the
/// same range.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn update<I: CounterIsa>(
    op: u8,
    p: Params,
    first: u32,
    image: &mut [u32],
    counters: &mut [u32],
    hashes: &[u64],
    refused: &mut Vec<u32>,
) {
    assert!(hashes.len() <= u32::MAX as usize);
    let bits = p.kind.counter_bits().expect("a counting or stable filter");
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the rest is checked by `update_shaped`.
        unsafe {
            match (bits, op) {
                (CounterBits::Four, INC) => update_shaped::<I, S, 4, INC>(p.blocks, first, image, counters, hashes, refused),
                (CounterBits::Four, _) => update_shaped::<I, S, 4, DEC>(p.blocks, first, image, counters, hashes, refused),
                (CounterBits::Eight, INC) => update_shaped::<I, S, 8, INC>(p.blocks, first, image, counters, hashes, refused),
                (CounterBits::Eight, _) => update_shaped::<I, S, 8, DEC>(p.blocks, first, image, counters, hashes, refused),
            }
        }
    })
}

/// Decrements the global cell `k` (a cell at 0 stays 0; one that reaches 0 clears its image
/// bit), as the core's stable insert does.
#[inline(always)]
fn decrement_cell<const C: u32>(image: &mut [u32], counters: &mut [u32], k: u64) {
    let per_word = u64::from(32 / C);
    let (w, sh) = ((k / per_word) as usize, (k % per_word) as u32 * C);
    let word = counters[w];
    let v = (word >> sh) & ((1 << C) - 1);
    if v > 0 {
        counters[w] = word - (1 << sh);
        if v == 1 {
            image[(k / 32) as usize] &= !(1u32 << (k % 32));
        }
    }
}

/// [`stable_insert`] for blocks of `S` and `C`-bit counters.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn stable_shaped<I: CounterIsa, S: Shape, const C: u32>(
    p: Params,
    decrements: u32,
    image: &mut [u32],
    counters: &mut [u32],
    hashes: &[u64],
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let blocks = p.blocks as usize;
    assert!(image.len() == blocks * per && counters.len() == blocks * cper);
    let cells = p.bit_len();
    let pf = (image.len() + counters.len()) * 4 > PREFETCH_MIN_BYTES;
    // The cells of the next `ahead` keys, computed (and prefetched) `ahead` keys before their
    // decrements: slot `i % slots` holds key `i`'s `P` cells.
    let d = decrements as usize;
    let ahead = if pf { (64 / (d + 1)).clamp(1, 16) } else { 0 };
    let slots = ahead + 1;
    let mut ring = vec![0u64; slots * d];
    let (ip, cp) = (image.as_mut_ptr(), counters.as_mut_ptr());
    let per_word = u64::from(32 / C);
    let load = |ring: &mut [u64], j: usize| {
        let h = hashes[j];
        let slot = &mut ring[(j % slots) * d..(j % slots + 1) * d];
        for (s, k) in slot.iter_mut().zip(stable_cells(h, cells, decrements)) {
            *s = k;
            if pf {
                prefetch_bytes(cp.wrapping_add((k / per_word) as usize), 4);
                prefetch_bytes(ip.wrapping_add((k / 32) as usize), 4);
            }
        }
        if pf {
            let b = block_index(h, p.blocks) as usize;
            prefetch_bytes(ip.wrapping_add(b * per), per * 4);
            prefetch_bytes(cp.wrapping_add(b * cper), cper * 4);
        }
    };
    for j in 0..ahead.min(hashes.len()) {
        load(&mut ring, j);
    }
    for (i, &h) in hashes.iter().enumerate() {
        if i + ahead < hashes.len() && ahead > 0 {
            load(&mut ring, i + ahead);
        }
        let slot = (i % slots) * d;
        if ahead == 0 {
            for k in stable_cells(h, cells, decrements) {
                decrement_cell::<C>(image, counters, k);
            }
        } else {
            for &k in &ring[slot..slot + d] {
                decrement_cell::<C>(image, counters, k);
            }
        }
        let b = block_index(h, p.blocks) as usize;
        // SAFETY: `b < p.blocks`, so the image block `b × per ..` and the counter block
        // `b × cper ..` lie in `image` and `counters` (lengths asserted above), exclusively
        // borrowed for the call; the CPU supports I (caller).
        unsafe {
            let (ib, cb) = (
                image.as_mut_ptr().add(b * per),
                counters.as_mut_ptr().add(b * cper),
            );
            vector::insert::<I, S>(ib, h);
            I::lanes::<S, C, MAX>(ib, cb, h as u32);
        }
    }
}

/// Stable insert (Deng and Rafiei) of the keys with `hashes`, in their order, exactly as the
/// core's `CountingMut::stable_insert_hash`: for each key, decrement the `decrements` cells of
/// `stable_cells`, then set the key's counters to the maximum. The cells of upcoming keys are
/// prefetched.
///
/// # Panics
/// If `p` is not of a counting or stable filter or the slices are not its image and counters.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn stable_insert<I: CounterIsa>(
    p: Params,
    decrements: u32,
    image: &mut [u32],
    counters: &mut [u32],
    hashes: &[u64],
) {
    let bits = p.kind.counter_bits().expect("a counting or stable filter");
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the rest is checked by `stable_shaped`.
        unsafe {
            match bits {
                CounterBits::Four => stable_shaped::<I, S, 4>(p, decrements, image, counters, hashes),
                CounterBits::Eight => stable_shaped::<I, S, 8>(p, decrements, image, counters, hashes),
            }
        }
    })
}
