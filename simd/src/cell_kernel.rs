//! The bulk kernels of every cell-based kind (counting, stable, spatial; `bloomlanes_core::cell`),
//! written once over [`CellIsa`] and the [`crate::vector`] block operations: key after key in input
//! order (so that keys of one batch that share cells see each other's updates exactly as the
//! core's key-by-key path does), with the image block and the cell block of upcoming keys
//! prefetched. [`update`] applies one cell operation (increment, decrement, max of a value per
//! key or one for the batch), [`stable_insert`] the stable filter's decays and max; the reads
//! of each key's smallest cell are `cell_read.rs`.
//!
//! A key touches one image block (`L × W` bits) and that block's cells (`L × W × c` bits: 128
//! bytes for 8x32 with 4-bit cells, 256 with 8-bit, 512 with 16-bit). The image is the
//! projection, so "all the key's cells are positive" is the static lookup of its block mask.

use bloomlanes_core::counting::stable_cells;
use bloomlanes_core::{block_index, cell, CellBits, CellUpdate, Params};

use crate::cell_lanes::{Block, CellIsa, Key, DEC, INC, MAX};
use crate::prefetch::Prefetch;
use crate::shape::{with_shape, Shape};

/// Entries of the prefetch ring of [`update`] (a power of two).
const RING: usize = 128;
/// How many newer in-range keys follow one in the ring before it is applied: the prefetch
/// distance, in keys (`LAG + GROUP <= RING`).
const LAG: usize = 32;
/// Keys scanned (range-tested and compacted into the ring) at a time.
const GROUP: usize = 32;

/// The keys of one kernel call: their hashes, the operation's values (one, or one per key)
/// and where refused deletes go (their positions in `hashes`).
struct Batch<'a> {
    hashes: &'a [u64],
    values: &'a [u32],
    refused: &'a mut Vec<u32>,
}

/// The cell operation's value for key `i` of a batch: `values` holds one value per key, or one
/// for the whole batch ([`MAX`] only; the other operations take none).
#[inline(always)]
fn value_of<const OP: u8>(values: &[u32], i: usize) -> u32 {
    if OP == MAX {
        values[if values.len() == 1 { 0 } else { i }]
    } else {
        0
    }
}

/// The value [`apply`] takes for the value `v` of `OP`: none for [`MAX`] of 0, which changes
/// nothing (as in the core); a value above the cells' maximum is taken as the maximum (as the
/// core's [`CellUpdate::Max`] does). The other operations take none (0).
#[inline(always)]
fn applied_value<const C: u32, const OP: u8>(v: u32) -> Option<u32> {
    match OP {
        MAX if v == 0 => None,
        MAX => Some(v.min((1 << C) - 1)),
        _ => Some(0),
    }
}

/// Applies `OP` (value `v` for [`MAX`], from [`applied_value`]) for the key with hash `h` in
/// block `b` of the range whose image starts at `ip` and cells at `cp`; a refused delete
/// pushes `i` onto `refused`.
///
/// A function rather than a closure: a closure does not inherit the `#[target_feature]` of the
/// entry point, and the ISA's intrinsics would not inline into it.
///
/// # Safety
/// Block `b` lies in the image and cells at `ip` and `cp`, which are writable and not accessed
/// by anyone else during the call; for [`MAX`], `0 < v <= 2^C − 1`; the CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn apply<I: CellIsa, S: Shape, const C: u32, const OP: u8>(
    ip: *mut u32,
    cp: *mut u32,
    h: u64,
    b: u32,
    i: u32,
    v: u32,
    a: I::Ahead,
    refused: &mut Vec<u32>,
) {
    let block = Block::nth::<S, C>(
        Block {
            image: ip,
            cells: cp,
        },
        b as usize,
    );
    // SAFETY: block `b`'s image (`per` words) and cells (`per × C` words) lie in the caller's
    // storage, ours for the call; the CPU supports I (caller); the value is at most the
    // maximum (caller).
    let done = unsafe {
        I::update::<S, C, OP>(
            block,
            Key {
                hash: h,
                value: v,
                ahead: a,
            },
        )
    };
    if !done {
        refused.push(i);
    }
}

/// Keys whose local block indices (in a loop the compiler vectorises) and, in L2, whose
/// [`CellIsa::ahead`] values [`dense`] computes at a time, ahead of their updates (64
/// measured best of 8 to 256 on the 2-core EPYC, see BENCHMARKS.md, issue #14).
const DENSE_CHUNK: usize = 64;

/// [`update_shaped`] of a dense batch: key after key, each in-range key applied (the range test
/// is predictable: nearly every key is in range), the block of the key `LAG` ahead prefetched
/// when `PF`. The local block indices are computed [`DENSE_CHUNK`] keys at a time, off the
/// per-key path, and with them (for [`MAX`] with a value per key) the keys' values, a key of
/// `Max(0)` given a block out of range. `ONE`: the batch has one value (read once; a batch of
/// `Max(0)` changes nothing and returns at once).
///
/// # Safety
/// `ip` and `cp` are the image and cells of `sub` blocks (`sub × block_u32s` and
/// `sub × block_u32s × C` words), writable and not accessed by anyone else during the call;
/// the CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dense<
    I: CellIsa,
    S: Shape,
    const C: u32,
    const OP: u8,
    const PF: bool,
    const ONE: bool,
>(
    blocks: u32,
    first: u32,
    sub: u32,
    at: Block,
    batch: Batch<'_>,
    pf: Prefetch,
) {
    let Batch {
        hashes,
        values,
        refused,
    } = batch;
    let one = match applied_value::<C, OP>(if ONE { values[0] } else { 0 }) {
        Some(v) => v,
        None if ONE => return,
        None => 0,
    };
    // A value per key: one per hash (`update` checks; one value is `ONE`).
    let per_key = OP == MAX && !ONE;
    let (ip, cp) = (at.image, at.cells);
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let local = |h: u64| block_index(h, blocks).wrapping_sub(first);
    let mut blocks_of = [0u32; DENSE_CHUNK];
    let mut values_of = [0u32; DENSE_CHUNK];
    let mut aheads = [I::Ahead::default(); DENSE_CHUNK];
    for (c, chunk) in hashes.chunks(DENSE_CHUNK).enumerate() {
        if per_key {
            let given = &values[c * DENSE_CHUNK..c * DENSE_CHUNK + chunk.len()];
            let out = blocks_of.iter_mut().zip(values_of.iter_mut());
            for ((b, v), (&h, &g)) in out.zip(chunk.iter().zip(given)) {
                // `Max(0)` changes nothing: the key is skipped as one of another range.
                *b = if g == 0 { u32::MAX } else { local(h) };
                *v = g.min((1 << C) - 1);
            }
        } else {
            for (b, &h) in blocks_of.iter_mut().zip(chunk) {
                *b = local(h);
            }
        }
        if !PF {
            for (a, &h) in aheads.iter_mut().zip(chunk) {
                // SAFETY: the CPU supports I (caller).
                *a = unsafe { I::ahead::<S, C>(h) };
            }
        }
        let keys = chunk.iter().zip(&blocks_of).zip(&aheads).zip(&values_of);
        for (j, (((&h, &b), &a), &given)) in keys.enumerate() {
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
                    pf.bytes(ip.wrapping_add(b * per), per * 4);
                    pf.bytes(cp.wrapping_add(b * cper), cper * 4);
                }
            }
            if b < sub {
                let v = if per_key { given } else { one };
                // SAFETY: `b < sub`, and `ip`/`cp` are the exclusively borrowed image and
                // cells of `sub` blocks; a value of MAX is nonzero (a key of `Max(0)` has a
                // block out of range, a batch of it returned) and at most the maximum; the CPU
                // supports I (caller).
                unsafe { apply::<I, S, C, OP>(ip, cp, h, b, i as u32, v, a, refused) };
            }
        }
    }
}

/// [`update`] for blocks of `S` and `C`-bit cells.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn update_shaped<I: CellIsa, S: Shape, const C: u32, const OP: u8>(
    blocks: u32,
    first: u32,
    image: &mut [u32],
    cells: &mut [u32],
    batch: Batch<'_>,
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let sub = image.len() / per;
    assert!(image.len() == sub * per && cells.len() == sub * cper);
    let sub = sub as u32;
    let (ip, cp) = (image.as_mut_ptr(), cells.as_mut_ptr());
    let pf = Prefetch::for_bytes((image.len() + cells.len()) as u64 * 4);
    let local = |h: u64| block_index(h, blocks).wrapping_sub(first);
    // Dense batches (the whole filter, or a partition's own keys; judged by the first keys, a
    // hint only: every key's range is still tested) skip the ring: one predictable range test
    // per key, the block of the key `LAG` ahead prefetched.
    if sub == blocks || batch.hashes.iter().take(GROUP).all(|&h| local(h) < sub) {
        let at = Block {
            image: ip,
            cells: cp,
        };
        // SAFETY: `ip`/`cp` are the exclusively borrowed image and cells of `sub` blocks; the
        // CPU supports I (caller).
        unsafe {
            let (on, one) = (pf.is_on(), OP == MAX && batch.values.len() == 1);
            let (b, f, s) = (blocks, first, sub);
            match (on, one) {
                (true, false) => dense::<I, S, C, OP, true, false>(b, f, s, at, batch, pf),
                (false, false) => dense::<I, S, C, OP, false, false>(b, f, s, at, batch, pf),
                (true, true) => dense::<I, S, C, OP, true, true>(b, f, s, at, batch, pf),
                (false, true) => dense::<I, S, C, OP, false, true>(b, f, s, at, batch, pf),
            }
        }
        return;
    }
    let Batch {
        hashes,
        values,
        refused,
    } = batch;
    // The ring of in-range keys: hash, local block, position in `hashes`.
    let mut ring_h = [0u64; RING];
    let mut ring_b = [0u32; RING];
    let mut ring_i = [0u32; RING];
    let (mut head, mut tail) = (0usize, 0usize);
    let groups = hashes.len().div_ceil(GROUP);
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
        if pf.is_on() {
            for e in from..head {
                let b = ring_b[e % RING] as usize;
                pf.bytes(ip.wrapping_add(b * per), per * 4);
                pf.bytes(cp.wrapping_add(b * cper), cper * 4);
            }
        }
        // Apply the entries `LAG` behind the newest; after the last group, all of them.
        let keep = if g + 1 == groups { 0 } else { LAG };
        while head - tail > keep {
            let t = tail % RING;
            let (h, i) = (ring_h[t], ring_i[t]);
            if let Some(v) = applied_value::<C, OP>(value_of::<OP>(values, i as usize)) {
                // SAFETY: ring entries have `b < sub` (only such entries are kept), and
                // `ip`/`cp` are the exclusively borrowed image and cells of `sub` blocks; the
                // value is `applied_value`'s; the CPU supports I (caller).
                unsafe {
                    let a = I::ahead::<S, C>(h);
                    apply::<I, S, C, OP>(ip, cp, h, ring_b[t], i, v, a, refused)
                }
            }
            tail += 1;
        }
    }
}

/// Applies `op` ([`INC`], [`DEC`] or [`MAX`] with `values`: one per key, or one for the batch)
/// to the cells of the keys with `hashes`, in their order, restricted to the block range
/// `first .. first + image.len() / block_u32s` of a filter with parameters `p` (`image` and
/// `cells` hold exactly those blocks' words); keys of other blocks are skipped. A delete whose
/// key is not in the image is refused: its position in `hashes` is pushed onto `refused` and
/// nothing changes.
///
/// # Panics
/// If `p` is not of a kind with cells wider than a bit, the slices are not whole blocks of the
/// same range, or `values` is neither one value nor one per key.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn update<I: CellIsa>(
    op: u8,
    p: Params,
    first: u32,
    image: &mut [u32],
    cells: &mut [u32],
    hashes: &[u64],
    values: &[u32],
    refused: &mut Vec<u32>,
) {
    assert!(hashes.len() <= u32::MAX as usize);
    assert!(values.len() == 1 || values.len() == hashes.len(), "values");
    let (b, n) = (p.blocks, first);
    let k = Batch {
        hashes,
        values,
        refused,
    };
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the rest is checked by `update_shaped`.
        unsafe {
            match (p.kind.cell_bits(), op) {
                (CellBits::Four, INC) => update_shaped::<I, S, 4, INC>(b, n, image, cells, k),
                (CellBits::Four, DEC) => update_shaped::<I, S, 4, DEC>(b, n, image, cells, k),
                (CellBits::Four, _) => update_shaped::<I, S, 4, MAX>(b, n, image, cells, k),
                (CellBits::Eight, INC) => update_shaped::<I, S, 8, INC>(b, n, image, cells, k),
                (CellBits::Eight, DEC) => update_shaped::<I, S, 8, DEC>(b, n, image, cells, k),
                (CellBits::Eight, _) => update_shaped::<I, S, 8, MAX>(b, n, image, cells, k),
                (CellBits::Sixteen, INC) => update_shaped::<I, S, 16, INC>(b, n, image, cells, k),
                (CellBits::Sixteen, DEC) => update_shaped::<I, S, 16, DEC>(b, n, image, cells, k),
                (CellBits::Sixteen, _) => update_shaped::<I, S, 16, MAX>(b, n, image, cells, k),
                (CellBits::One, _) => panic!("a kind with cells wider than a bit"),
            }
        }
    })
}

/// [`CellUpdate::Decay`] of the global cell `k` (a cell at 0 stays 0; one that reaches 0
/// clears its image bit), as the core's stable insert does.
#[inline(always)]
fn decay_cell(image: &mut [u32], cells: &mut [u32], bits: CellBits, k: u64) {
    let v = CellUpdate::Decay.apply(cell::cell(cells, bits, k), bits.max());
    cell::set_cell(cells, bits, k, v);
    if v == 0 {
        image[(k / 32) as usize] &= !(1u32 << (k % 32));
    }
}

/// [`stable_insert`] for blocks of `S` and `C`-bit cells.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
unsafe fn stable_shaped<I: CellIsa, S: Shape, const C: u32>(
    p: Params,
    decrements: u32,
    image: &mut [u32],
    cells: &mut [u32],
    hashes: &[u64],
) {
    let per = S::LAYOUT.block_u32s();
    let cper = per * C as usize;
    let blocks = p.blocks as usize;
    assert!(image.len() == blocks * per && cells.len() == blocks * cper);
    let bits = CellBits::from_bits(C).expect("a cell width");
    let cell_count = p.bit_len();
    let pf = Prefetch::for_bytes((image.len() + cells.len()) as u64 * 4);
    // The cells of the next `ahead` keys, computed (and prefetched) `ahead` keys before their
    // decays: slot `i % slots` holds key `i`'s `P` cells.
    let d = decrements as usize;
    let ahead = if pf.is_on() {
        (64 / (d + 1)).clamp(1, 16)
    } else {
        0
    };
    let slots = ahead + 1;
    let mut ring = vec![0u64; slots * d];
    let (ip, cp) = (image.as_mut_ptr(), cells.as_mut_ptr());
    let per_word = u64::from(32 / C);
    let load = |ring: &mut [u64], j: usize| {
        let h = hashes[j];
        let slot = &mut ring[(j % slots) * d..(j % slots + 1) * d];
        for (s, k) in slot.iter_mut().zip(stable_cells(h, cell_count, decrements)) {
            *s = k;
            pf.bytes(cp.wrapping_add((k / per_word) as usize), 4);
            pf.bytes(ip.wrapping_add((k / 32) as usize), 4);
        }
        if pf.is_on() {
            let b = block_index(h, p.blocks) as usize;
            pf.bytes(ip.wrapping_add(b * per), per * 4);
            pf.bytes(cp.wrapping_add(b * cper), cper * 4);
        }
    };
    for j in 0..ahead.min(hashes.len()) {
        load(&mut ring, j);
    }
    let mut never = Vec::new();
    for (i, &h) in hashes.iter().enumerate() {
        if i + ahead < hashes.len() && ahead > 0 {
            load(&mut ring, i + ahead);
        }
        let slot = (i % slots) * d;
        if ahead == 0 {
            for k in stable_cells(h, cell_count, decrements) {
                decay_cell(image, cells, bits, k);
            }
        } else {
            for &k in &ring[slot..slot + d] {
                decay_cell(image, cells, bits, k);
            }
        }
        let b = block_index(h, p.blocks);
        let max = bits.max();
        // SAFETY: `b < p.blocks`, so block `b`'s image and cells lie in `image` and `cells`
        // (lengths asserted above), exclusively borrowed for the call; the CPU supports I
        // (caller).
        unsafe {
            let a = I::ahead::<S, C>(h);
            let (ip, cp) = (image.as_mut_ptr(), cells.as_mut_ptr());
            apply::<I, S, C, MAX>(ip, cp, h, b, i as u32, max, a, &mut never);
        }
    }
}

/// Stable insert (Deng and Rafiei) of the keys with `hashes`, in their order, exactly as the
/// core's `CellsMut::stable_insert_hash`: for each key, [`CellUpdate::Decay`] of the
/// `decrements` cells of `stable_cells`, then [`CellUpdate::Max`] of the maximum on the key's
/// cells. The cells of upcoming keys are prefetched.
///
/// # Panics
/// If `p` is not of a kind with 4- or 8-bit cells or the slices are not its image and cells.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn stable_insert<I: CellIsa>(
    p: Params,
    decrements: u32,
    image: &mut [u32],
    cells: &mut [u32],
    hashes: &[u64],
) {
    with_shape!(p.layout, S => {
        // SAFETY: the CPU supports I (caller); the rest is checked by `stable_shaped`.
        unsafe {
            match p.kind.cell_bits() {
                CellBits::Four => stable_shaped::<I, S, 4>(p, decrements, image, cells, hashes),
                CellBits::Eight => stable_shaped::<I, S, 8>(p, decrements, image, cells, hashes),
                _ => panic!("stable filters have 4- or 8-bit cells"),
            }
        }
    })
}
