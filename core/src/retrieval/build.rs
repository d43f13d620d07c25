//! Construction of a retrieval table by hypergraph peeling (Graf and Lemire's binary fuse
//! construction, carrying a value beside each key's hash).
//!
//! One attempt, for one construction seed:
//! 1. *Bucket*: the keys are counting-sorted by the segment of their first cell, so that the
//!    next pass touches the cell array in `a` advancing fronts instead of at random.
//! 2. *Count*: every cell keeps the XOR of the mixed hashes and values of its keys, their number
//!    and the XOR of the key's position `j` (which of the key's cells this is): 16 bytes.
//! 3. *Peel*: a cell holding one key determines that key; it is removed from its other cells,
//!    which may then hold one key in turn. The scan runs left to right and follows each cascade
//!    at once, riding the wave in which a fuse graph peels.
//! 4. *Assign*: in reverse peeling order, each key's own cell gets the XOR of its target (check
//!    bits and value) and its other cells.
//! 5. *Pack* the cells at `v + f` bits each.
//!
//! An attempt fails when some keys never peel. Then the keys still in the core are searched
//! for repeats (repeated keys never peel): a key repeated with two values is refused, repeats
//! with one value are dropped; else the next seed is tried, and a table that keeps failing
//! grows by one segment every [`GROW_EVERY`] attempts.

use alloc::vec;
use alloc::vec::Vec;

use super::shape::{Shape, MAX_CELLS};
use super::RetrievalError;

/// Failed attempts after which the table grows by one segment.
pub const GROW_EVERY: u32 = 4;
/// Attempts before the builder gives up ([`RetrievalError::Unpeelable`]); never reached by a
/// set of distinct keys in practice (each attempt fails with probability well below 1/2, and the
/// table keeps growing).
pub const MAX_ATTEMPTS: u32 = 256;

/// The position field of a slot or entry: bits 96.. of the `u128`.
const POS_SHIFT: u32 = 96;
/// One key in a slot's count field.
const ONE: u128 = 4 << POS_SHIFT;
/// Mixed hash and value of an entry or slot (bits 0..96).
const KEY_MASK: u128 = (1 << POS_SHIFT) - 1;

/// The `k`-th construction seed: SplitMix64 from state 0.
pub fn seed(k: u32) -> u64 {
    let mut z = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(k) + 1);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What one key contributes to a slot: mixed hash, value, position.
#[inline]
fn entry(m: u64, value: u32, pos: u32) -> u128 {
    u128::from(m) | u128::from(value) << 64 | u128::from(pos) << POS_SHIFT
}

/// The passes of one attempt. A backend may replace any of them with a faster one (more threads,
/// prefetching) that leaves the same slots ([`Passes::count`]: any order, XOR and addition
/// commute), the same peeling order ([`Passes::peel`]) and the same cells, so that every
/// backend builds the same table, byte for byte. The defaults are this crate's single-thread
/// passes.
///
/// Slots and entries are `u128`: bits 0..64 the mixed hash `m`, 64..96 the value, and in a
/// slot, from bit 96, the XOR of the keys' positions `j` (2 bits) and 4 × the key count; in
/// a peeled entry, from bit 96, the position of the cell that determined the key.
pub trait Passes {
    /// Adds every key to its `a` cells in `slots` (all zero on entry).
    fn count(&self, shape: &Shape, hashes: &[u64], values: &[u32], slots: &mut [u128]) {
        let (entries, _) = bucket(shape, hashes, values);
        count_range(shape, &entries, slots, 0);
    }

    /// Peels; returns the peeled entries in peeling order ([`peel_scan`]'s order).
    fn peel(&self, shape: &Shape, slots: &mut [u128], keys: usize) -> Vec<u128> {
        peel_scan(shape, slots, keys, &NoLookahead)
    }

    /// Sets each key's own cell in reverse peeling order ([`assign`]).
    fn assign(&self, shape: &Shape, order: &[u128], slots: &mut [u128]) {
        assign(shape, order, slots, &NoLookahead);
    }

    /// Packs the cells ([`pack_range`] over all of them).
    fn pack(&self, shape: &Shape, slots: &[u128]) -> Vec<u64> {
        let mut words = vec![0u64; shape.words() as usize];
        pack_range(shape, slots, &mut words);
        words
    }
}

/// This crate's passes, on one thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

impl Passes for Scalar {}

/// A hook that sees, [`Lookahead::DISTANCE`] steps ahead of [`peel_scan`] and [`assign`], the
/// cells they will touch: a backend prefetches them (`base` is the slots' address).
pub trait Lookahead {
    /// Steps ahead (0: never called).
    const DISTANCE: usize;
    /// Called with the cells a later step will touch.
    fn touch(&self, base: *const u128, cells: &[u32]);
}

/// No lookahead.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLookahead;

impl Lookahead for NoLookahead {
    const DISTANCE: usize = 0;
    #[inline]
    fn touch(&self, _: *const u128, _: &[u32]) {}
}

/// The input after the checks: hashes and values of equal length, every value within `v` bits.
pub(super) struct Input<'a> {
    pub(super) hashes: &'a [u64],
    pub(super) values: &'a [u32],
}

/// Builds the packed cells of a table for `input` with `passes`: the shape found (with its
/// seed), the words, and the key count after dropping repeats.
pub(super) fn build(
    input: Input<'_>,
    value_bits: u8,
    check_bits: u8,
    arity: u8,
    passes: &impl Passes,
) -> Result<(Shape, Vec<u64>, u64), RetrievalError> {
    let mut owned: Option<(Vec<u64>, Vec<u32>)> = None;
    // Seeds restart after repeats are dropped, so the table is the one of the distinct keys.
    let mut attempts = 0u32;
    let mut attempt = 0u32;
    let mut failures_here = 0u32;
    let mut extra = 0u32;
    loop {
        let (hashes, values) = match &owned {
            Some((h, v)) => (&h[..], &v[..]),
            None => (input.hashes, input.values),
        };
        let n = hashes.len() as u64;
        let (segment_bits, segment_count) =
            Shape::sized(n, arity, extra).ok_or(RetrievalError::TooManyKeys { keys: n })?;
        let shape = Shape {
            value_bits,
            check_bits,
            arity,
            segment_bits,
            segment_count,
            seed: seed(attempt),
        };
        if attempts >= MAX_ATTEMPTS {
            return Err(RetrievalError::Unpeelable { attempts });
        }
        attempts += 1;
        attempt += 1;
        debug_assert!(shape.cells() <= MAX_CELLS);
        let mut slots = vec![0u128; shape.cells() as usize];
        passes.count(&shape, hashes, values, &mut slots);
        let order = passes.peel(&shape, &mut slots, hashes.len());
        if order.len() == hashes.len() {
            passes.assign(&shape, &order, &mut slots);
            drop(order);
            return Ok((shape, passes.pack(&shape, &slots), n));
        }
        drop(order);
        let core = core_keys(&shape, hashes, values, &slots);
        drop(slots);
        match repeats(&core)? {
            Some(repeated) => {
                owned = Some(without_repeats(hashes, values, &repeated));
                attempt = 0;
                failures_here = 0;
                extra = 0;
            }
            None => {
                failures_here += 1;
                if failures_here.is_multiple_of(GROW_EVERY) {
                    extra += 1;
                }
            }
        }
    }
}

/// Adds the keys of `entries` to their cells; `slots` holds the cells from `first` on (a
/// window of the table that contains every cell of these keys).
#[inline(never)]
pub fn count_range(shape: &Shape, entries: &[u128], slots: &mut [u128], first: usize) {
    let arity = shape.arity as usize;
    for &e in entries {
        let c = shape.cells_of(e as u64);
        for (j, &cell) in c[..arity].iter().enumerate() {
            let s = &mut slots[cell as usize - first];
            *s = s.wrapping_add(ONE) ^ (e | (j as u128) << POS_SHIFT);
        }
    }
}

/// Sets each key's own cell, in reverse peeling order: the XOR of its target and its other
/// cells. Every key left every cell, so the slots are all zero on entry; they end holding the
/// cell values (low 64 bits).
#[inline(never)]
pub fn assign<L: Lookahead>(shape: &Shape, order: &[u128], slots: &mut [u128], ahead: &L) {
    let arity = shape.arity as usize;
    for k in (0..order.len()).rev() {
        if L::DISTANCE > 0 && k >= L::DISTANCE {
            let c = shape.cells_of(order[k - L::DISTANCE] as u64);
            ahead.touch(slots.as_ptr(), &c[..arity]);
        }
        let e = order[k];
        let m = e as u64;
        let found = (e >> POS_SHIFT) as usize;
        let c = shape.cells_of(m);
        let mut x = shape.want(m, (e >> 64) as u32);
        for (j, &cell) in c[..arity].iter().enumerate() {
            if j != found {
                x ^= slots[cell as usize] as u64;
            }
        }
        slots[c[found] as usize] = u128::from(x & shape.cell_mask());
    }
}

/// The keys as entries (mixed hash, value), counting-sorted by the segment of their first
/// cell, and where each segment's entries start (`S + 1` offsets).
#[inline(never)]
pub fn bucket(shape: &Shape, hashes: &[u64], values: &[u32]) -> (Vec<u128>, Vec<usize>) {
    let segments = shape.segment_count as usize;
    let mut starts = vec![0usize; segments + 1];
    for &h in hashes {
        starts[shape.segment_of(shape.mixed(h)) + 1] += 1;
    }
    for s in 1..=segments {
        starts[s] += starts[s - 1];
    }
    let mut next = starts.clone();
    let mut entries = vec![0u128; hashes.len()];
    for (&h, &v) in hashes.iter().zip(values) {
        let m = shape.mixed(h);
        let s = &mut next[shape.segment_of(m)];
        entries[*s] = entry(m, v, 0);
        *s += 1;
    }
    (entries, starts)
}

/// Peels the cells left to right and returns the peeled entries (each with the position of the
/// cell that determined it) in peeling order; fewer than `keys` when some keys did not peel.
///
/// A cell that comes to hold one key is peeled at once only if the scan has passed it; one
/// ahead is left for the scan to find. So every access stays within a few segments of the scan
/// (a cascade followed depth-first would run along the whole peeling wave, all over the table).
/// `ahead` sees the cells of the key in the cell `DISTANCE` ahead of the scan.
#[inline(never)]
pub fn peel_scan<L: Lookahead>(
    shape: &Shape,
    slots: &mut [u128],
    keys: usize,
    ahead: &L,
) -> Vec<u128> {
    let arity = shape.arity as usize;
    let mut order = Vec::with_capacity(keys);
    let mut stack: Vec<u32> = Vec::with_capacity(64);
    for scan in 0..slots.len() {
        if L::DISTANCE > 0 {
            if let Some(&s) = slots.get(scan + L::DISTANCE) {
                if s >> POS_SHIFT >> 2 == 1 {
                    ahead.touch(slots.as_ptr(), &shape.cells_of(s as u64)[..arity]);
                }
            }
        }
        if slots[scan] >> POS_SHIFT >> 2 != 1 {
            continue;
        }
        stack.push(scan as u32);
        while let Some(i) = stack.pop() {
            let s = slots[i as usize];
            if s >> POS_SHIFT >> 2 != 1 {
                continue;
            }
            let key = s & KEY_MASK;
            let found = (s >> POS_SHIFT) as usize & 3;
            order.push(key | (found as u128) << POS_SHIFT);
            slots[i as usize] = 0;
            let c = shape.cells_of(key as u64);
            for (j, &cell) in c[..arity].iter().enumerate() {
                if j != found {
                    let t = &mut slots[cell as usize];
                    *t = t.wrapping_sub(ONE) ^ (key | (j as u128) << POS_SHIFT);
                    if *t >> POS_SHIFT >> 2 == 1 && cell as usize <= scan {
                        stack.push(cell);
                    }
                }
            }
        }
    }
    order
}

/// The keys `(hash, value, index)` whose cells all still hold a key after peeling: the core
/// that did not peel (a peeled key emptied the cell that determined it).
fn core_keys(
    shape: &Shape,
    hashes: &[u64],
    values: &[u32],
    slots: &[u128],
) -> Vec<(u64, u32, usize)> {
    let arity = shape.arity as usize;
    let mut core = Vec::new();
    for (i, (&h, &v)) in hashes.iter().zip(values).enumerate() {
        let c = shape.cells_of(shape.mixed(h));
        if c[..arity].iter().all(|&cell| slots[cell as usize] >= ONE) {
            core.push((h, v, i));
        }
    }
    core
}

/// The hashes repeated in `core` (sorted), or `None` if there are none; an error for a hash
/// repeated with two values, naming the earliest such repeat.
fn repeats(core: &[(u64, u32, usize)]) -> Result<Option<Vec<u64>>, RetrievalError> {
    let mut sorted = core.to_vec();
    sorted.sort_unstable_by_key(|&(h, _, i)| (h, i));
    let mut repeated = Vec::new();
    let mut conflict: Option<RetrievalError> = None;
    let mut run = 0;
    while run < sorted.len() {
        let (h, v, first) = sorted[run];
        let mut end = run + 1;
        while end < sorted.len() && sorted[end].0 == h {
            let (_, w, index) = sorted[end];
            let earlier = match conflict {
                Some(RetrievalError::ConflictingValues { index: e, .. }) => index < e,
                _ => true,
            };
            if w != v && earlier {
                conflict = Some(RetrievalError::ConflictingValues { index, first });
            }
            end += 1;
        }
        if end > run + 1 {
            repeated.push(h);
        }
        run = end;
    }
    match conflict {
        Some(e) => Err(e),
        None if repeated.is_empty() => Ok(None),
        None => Ok(Some(repeated)),
    }
}

/// The input with every repeat of a hash in `repeated` (sorted) after its first dropped.
fn without_repeats(hashes: &[u64], values: &[u32], repeated: &[u64]) -> (Vec<u64>, Vec<u32>) {
    let mut seen = vec![false; repeated.len()];
    let mut h_out = Vec::with_capacity(hashes.len());
    let mut v_out = Vec::with_capacity(hashes.len());
    for (&h, &v) in hashes.iter().zip(values) {
        if let Ok(k) = repeated.binary_search(&h) {
            if core::mem::replace(&mut seen[k], true) {
                continue;
            }
        }
        h_out.push(h);
        v_out.push(v);
    }
    (h_out, v_out)
}

/// Packs the cell values (low 64 bits of each slot) at `c` bits each into little-endian
/// `words`, cell 0 of `slots` at bit 0 of `words[0]` (a backend packs 64 cells at a time into
/// `c` words each, in parallel).
#[inline(never)]
pub fn pack_range(shape: &Shape, slots: &[u128], words: &mut [u64]) {
    let bits = shape.cell_bits();
    let mut acc: u128 = 0;
    let mut have = 0u32;
    let mut w = 0;
    for &s in slots {
        acc |= u128::from(s as u64) << have;
        have += bits;
        if have >= 64 {
            words[w] = acc as u64;
            w += 1;
            acc >>= 64;
            have -= 64;
        }
    }
    if have > 0 {
        words[w] = acc as u64;
    }
}
