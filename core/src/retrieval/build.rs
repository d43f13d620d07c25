//! Construction of a retrieval table by hypergraph peeling (Graf and Lemire's binary fuse
//! construction, carrying a value beside each key's hash).
//!
//! One attempt, for one construction seed:
//! 1. *Bucket*: the keys are counting-sorted by the segment of their first cell, so that the
//!    next pass touches the cell array in `a` advancing fronts instead of at random; a key is
//!    named by its index in this order from here on.
//! 2. *Count*: every cell keeps the XOR of the indices of its keys and their number: 8 bytes
//!    (the mixed hash and value are read by index, near the scan, only when a key peels or is
//!    assigned).
//! 3. *Peel*: a cell holding one key determines that key; it is removed from its other cells,
//!    which may then hold one key in turn. The scan runs left to right and follows each cascade
//!    at once, riding the wave in which a fuse graph peels. The peeling order is a list of the
//!    cells that determined keys (4 bytes a key); such a cell keeps its key's index.
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

pub use super::peel::peel_scan;
use super::shape::{Shape, MAX_CELLS};
use super::RetrievalError;

/// Failed attempts after which the table grows by one segment.
pub const GROW_EVERY: u32 = 4;
/// Attempts before the builder gives up ([`RetrievalError::Unpeelable`]); never reached by a
/// set of distinct keys in practice (each attempt fails with probability well below 1/2, and the
/// table keeps growing).
pub const MAX_ATTEMPTS: u32 = 256;

/// Where a slot's count field starts: bit 32 of the `u64`.
pub(super) const COUNT_SHIFT: u32 = 32;
/// One key in a slot's count field.
pub(super) const ONE: u64 = 1 << COUNT_SHIFT;
/// A slot's key field: the XOR of its keys' indices in [`Sorted`] (bits 0..32).
pub(super) const INDEX_MASK: u64 = ONE - 1;

/// The `k`-th construction seed: SplitMix64 from state 0.
pub fn seed(k: u32) -> u64 {
    let mut z = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(k) + 1);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The keys of one attempt, counting-sorted by the segment of their first cell within each run
/// of [`Sorted::run`] consecutive input keys (one run on one thread; a backend sorts several
/// runs in parallel). A key is named by its index here: slots and the peeling order hold
/// indices (8 bytes per cell and per key instead of the 16 that hash, value and count take).
#[derive(Clone, Debug, Default)]
pub struct Sorted {
    /// Mixed hashes `m`.
    pub mixed: Vec<u64>,
    /// Values, beside their keys' mixed hashes.
    pub values: Vec<u32>,
    /// Keys per run (the last run may be shorter).
    pub run: usize,
    /// For run `r`, `starts[r × (S + 1) + s]` is where segment `s` starts within the run.
    pub starts: Vec<usize>,
}

impl Sorted {
    /// Room for `keys` keys in runs of `run` and `segments` segments (`S`).
    pub fn with_runs(keys: usize, run: usize, segments: usize) -> Sorted {
        let runs = keys.div_ceil(run.max(1)).max(1);
        Sorted {
            mixed: vec![0; keys],
            values: vec![0; keys],
            run: run.max(1),
            starts: vec![0; runs * (segments + 1)],
        }
    }

    /// The indices of run `r`'s keys whose first cell lies in segments `g0 .. g1`.
    #[inline]
    pub fn range(&self, segments: usize, r: usize, g0: usize, g1: usize) -> (usize, usize) {
        let starts = &self.starts[r * (segments + 1)..];
        (r * self.run + starts[g0], r * self.run + starts[g1])
    }
}

/// The passes of one attempt. A backend may replace any of them with a faster one (more threads,
/// prefetching) that leaves the same slots ([`Passes::count`]: any order, XOR and addition
/// commute), the same peeling order ([`Passes::peel`]) and the same cells, so that every
/// backend builds the same table, byte for byte. The defaults are this crate's single-thread
/// passes.
///
/// A slot is a `u64`: bits 0..32 the XOR of its keys' indices in [`Sorted`], from bit 32 the
/// key count. The peeling order lists the
/// cells that determined keys; after peeling, such a cell's slot is its key's index (count 0),
/// every other slot is zero.
pub trait Passes {
    /// Sorts the keys into [`Sorted`] ([`bucket`]: one run).
    fn sort(&self, shape: &Shape, hashes: &[u64], values: &[u32]) -> Sorted {
        let mut sorted =
            Sorted::with_runs(hashes.len(), hashes.len(), shape.segment_count as usize);
        bucket(shape, hashes, values, &mut sorted, 0);
        sorted
    }

    /// Adds every key to its `a` cells in `slots` (all zero on entry).
    fn count(&self, shape: &Shape, sorted: &Sorted, slots: &mut [u64]) {
        count_range(shape, &sorted.mixed, 0, slots, 0);
    }

    /// Peels; returns the cells that determined keys, in peeling order ([`peel_scan`]'s).
    fn peel(&self, shape: &Shape, sorted: &Sorted, slots: &mut [u64]) -> Vec<u32> {
        peel_scan(shape, &sorted.mixed, slots, &NoLookahead)
    }

    /// Sets each key's own cell in reverse peeling order ([`assign`]).
    fn assign(&self, shape: &Shape, sorted: &Sorted, order: &[u32], slots: &mut [u64]) {
        assign(shape, sorted, order, slots, &NoLookahead);
    }

    /// Packs the cells ([`pack_range`] over all of them).
    fn pack(&self, shape: &Shape, slots: &[u64]) -> Vec<u64> {
        let mut words = vec![0u64; shape.words() as usize];
        pack_range(shape, slots, &mut words);
        words
    }
}

/// This crate's passes, on one thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

impl Passes for Scalar {}

/// A hook that sees what [`peel_scan`] and [`assign`] will read: the key (mixed hash, value)
/// [`Lookahead::DISTANCE`] × 2 steps ahead, then its cells `DISTANCE` steps ahead, so that a
/// backend prefetches them in two stages (the cells are known only once the hash is read);
/// [`assign`] also sees the slot that names the key `DISTANCE` × 3 steps ahead.
pub trait Lookahead {
    /// Steps ahead (0: never called).
    const DISTANCE: usize;
    /// Called with the address of a value a later step will read.
    fn touch<T>(&self, at: *const T);
}

/// No lookahead.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLookahead;

impl Lookahead for NoLookahead {
    const DISTANCE: usize = 0;
    #[inline]
    fn touch<T>(&self, _: *const T) {}
}

/// Touches the slots of the cells of the key whose mixed hash is `m`.
#[inline(always)]
pub(super) fn touch_cells<const A: usize, L: Lookahead>(
    ahead: &L,
    shape: &Shape,
    slots: &[u64],
    m: u64,
) {
    for &cell in &shape.cells_for(m, A as u32)[..A] {
        // `wrapping_add` keeps the address computation safe; it is only a hint.
        ahead.touch(slots.as_ptr().wrapping_add(cell as usize));
    }
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
        let sorted = passes.sort(&shape, hashes, values);
        let mut slots = vec![0u64; shape.cells() as usize];
        passes.count(&shape, &sorted, &mut slots);
        let order = passes.peel(&shape, &sorted, &mut slots);
        if order.len() == hashes.len() {
            passes.assign(&shape, &sorted, &order, &mut slots);
            drop((order, sorted));
            return Ok((shape, passes.pack(&shape, &slots), n));
        }
        drop((order, sorted));
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

/// Adds the keys `first_index ..` (mixed hashes `mixed`) to their cells; `slots` holds the
/// cells from `first_cell` on (a window of the table that contains every cell of these keys).
#[inline(never)]
pub fn count_range(
    shape: &Shape,
    mixed: &[u64],
    first_index: usize,
    slots: &mut [u64],
    first_cell: usize,
) {
    if shape.arity == 3 {
        count_arity::<3>(shape, mixed, first_index, slots, first_cell);
    } else {
        count_arity::<4>(shape, mixed, first_index, slots, first_cell);
    }
}

/// [`count_range`] for `A` cells per key.
#[inline(always)]
fn count_arity<const A: usize>(
    shape: &Shape,
    mixed: &[u64],
    first_index: usize,
    slots: &mut [u64],
    first_cell: usize,
) {
    for (i, &m) in mixed.iter().enumerate() {
        let c = shape.cells_for(m, A as u32);
        for &cell in &c[..A] {
            let s = &mut slots[cell as usize - first_cell];
            *s = s.wrapping_add(ONE) ^ (first_index + i) as u64;
        }
    }
}

/// Sets each key's own cell, in reverse peeling order (`order`: the cells that determined keys):
/// the XOR of its target and its other cells. On entry the slots are as [`peel_scan`] left
/// them (a key's index in its own cell, zero elsewhere); they end holding the cell values.
#[inline(never)]
pub fn assign<L: Lookahead>(
    shape: &Shape,
    sorted: &Sorted,
    order: &[u32],
    slots: &mut [u64],
    ahead: &L,
) {
    if shape.arity == 3 {
        assign_arity::<3, L>(shape, sorted, order, slots, ahead);
    } else {
        assign_arity::<4, L>(shape, sorted, order, slots, ahead);
    }
}

/// [`assign`] for `A` cells per key. A key's other cells hold values of keys peeled after it
/// (assigned already) or zero; its own cell holds its index, which the XOR of all its cells
/// takes in once and the XOR with the own cell takes out again (no branch).
#[inline(always)]
fn assign_arity<const A: usize, L: Lookahead>(
    shape: &Shape,
    sorted: &Sorted,
    order: &[u32],
    slots: &mut [u64],
    ahead: &L,
) {
    for k in (0..order.len()).rev() {
        if L::DISTANCE > 0 {
            if let Some(&own) = k.checked_sub(3 * L::DISTANCE).and_then(|k| order.get(k)) {
                ahead.touch(slots.as_ptr().wrapping_add(own as usize));
            }
            if let Some(&s) = named(order, slots, k.checked_sub(2 * L::DISTANCE)) {
                let index = (s & INDEX_MASK) as usize;
                ahead.touch(sorted.mixed.as_ptr().wrapping_add(index));
                ahead.touch(sorted.values.as_ptr().wrapping_add(index));
            }
            if let Some(&s) = named(order, slots, k.checked_sub(L::DISTANCE)) {
                if let Some(&m) = sorted.mixed.get((s & INDEX_MASK) as usize) {
                    touch_cells::<A, L>(ahead, shape, slots, m);
                }
            }
        }
        let own = order[k] as usize;
        let index = (slots[own] & INDEX_MASK) as usize;
        let m = sorted.mixed[index];
        let c = shape.cells_for(m, A as u32);
        let mut x = shape.want(m, sorted.values[index]) ^ slots[own];
        for &cell in &c[..A] {
            x ^= slots[cell as usize];
        }
        slots[own] = x & shape.cell_mask();
    }
}

/// The slot of the cell that determined the `k`-th key peeled (its index until assigned).
#[inline(always)]
fn named<'a>(order: &[u32], slots: &'a [u64], k: Option<usize>) -> Option<&'a u64> {
    slots.get(*order.get(k?)? as usize)
}

/// Counting-sorts `hashes` (mixed) and `values` by the segment of their first cell into run
/// `r` of `sorted` (`hashes` are that run's input keys).
#[inline(never)]
pub fn bucket(shape: &Shape, hashes: &[u64], values: &[u32], sorted: &mut Sorted, r: usize) {
    let segments = shape.segment_count as usize;
    let at = r * sorted.run;
    let starts = &mut sorted.starts[r * (segments + 1)..(r + 1) * (segments + 1)];
    bucket_into(
        shape,
        hashes,
        values,
        &mut sorted.mixed[at..at + hashes.len()],
        &mut sorted.values[at..at + hashes.len()],
        starts,
    );
}

/// [`bucket`] into one run's slices: `mixed` and `out` as long as `hashes`, `starts` `S + 1`
/// long (a backend hands each thread its own run).
#[inline(never)]
pub fn bucket_into(
    shape: &Shape,
    hashes: &[u64],
    values: &[u32],
    mixed: &mut [u64],
    out: &mut [u32],
    starts: &mut [usize],
) {
    let segments = shape.segment_count as usize;
    starts.fill(0);
    for &h in hashes {
        starts[shape.segment_of(shape.mixed(h)) + 1] += 1;
    }
    for s in 1..=segments {
        starts[s] += starts[s - 1];
    }
    let mut next = starts[..segments].to_vec();
    for (&h, &v) in hashes.iter().zip(values) {
        let m = shape.mixed(h);
        let s = &mut next[shape.segment_of(m)];
        mixed[*s] = m;
        out[*s] = v;
        *s += 1;
    }
}

/// The keys `(hash, value, index)` whose cells all still hold a key after peeling: the core
/// that did not peel (a peeled key emptied the cell that determined it).
fn core_keys(
    shape: &Shape,
    hashes: &[u64],
    values: &[u32],
    slots: &[u64],
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
pub fn pack_range(shape: &Shape, slots: &[u64], words: &mut [u64]) {
    let bits = shape.cell_bits();
    let mut acc: u128 = 0;
    let mut have = 0u32;
    let mut w = 0;
    for &s in slots {
        acc |= u128::from(s) << have;
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

#[cfg(test)]
mod tests {
    use crate::retrieval::{RetrievalSpec, RetrievalTable};
    use crate::{Layout, Params};
    use alloc::vec::Vec;

    /// SplitMix64 hashes and `v`-bit values.
    fn pairs(n: usize, v: u8, seed: u64) -> (Vec<u64>, Vec<u32>) {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (s ^ (s >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let hashes: Vec<u64> = (0..n).map(|_| next()).collect();
        let mask = ((1u64 << v) - 1) as u32;
        let values = (0..n).map(|_| next() as u32 & mask).collect();
        (hashes, values)
    }

    /// A lookahead that touches nothing but takes the prefetching paths (branch-free pushes).
    struct Hook;

    impl super::Lookahead for Hook {
        const DISTANCE: usize = 4;
        fn touch<T>(&self, _: *const T) {}
    }

    /// Both peeling paths leave the same order, and each cell of the order names its key (the
    /// contract `assign` reads), every other slot zero.
    #[test]
    fn both_peel_paths_agree_and_leave_each_own_cell_naming_its_key() {
        use super::{peel_scan, seed, NoLookahead, Passes, Scalar, Shape};
        for arity in [3u8, 4] {
            let (hashes, values) = pairs(50_000, 8, u64::from(arity));
            let (segment_bits, segment_count) = Shape::sized(50_000, arity, 0).unwrap();
            let shape = Shape {
                value_bits: 8,
                check_bits: 0,
                arity,
                segment_bits,
                segment_count,
                seed: seed(0),
            };
            let sorted = Scalar.sort(&shape, &hashes, &values);
            let mut slots = alloc::vec![0u64; shape.cells() as usize];
            Scalar.count(&shape, &sorted, &mut slots);
            let mut hooked = slots.clone();
            let order = peel_scan(&shape, &sorted.mixed, &mut slots, &NoLookahead);
            assert_eq!(order, peel_scan(&shape, &sorted.mixed, &mut hooked, &Hook));
            assert_eq!(slots, hooked);
            assert_eq!(
                order.len(),
                hashes.len(),
                "arity {arity}: a seed that peels"
            );
            let mut named = alloc::vec![false; slots.len()];
            for &own in &order {
                let index = slots[own as usize] as usize;
                let cells = shape.cells_of(sorted.mixed[index]);
                assert!(cells[..arity as usize].contains(&own));
                named[own as usize] = true;
            }
            assert!((0..slots.len()).all(|c| named[c] || slots[c] == 0));
        }
    }

    /// FNV-1a of `bytes`.
    fn digest(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    /// The file bytes of tables built before the slots shrank to 8 bytes (16-byte slots holding
    /// hash and value, commit 063dec4), pinned: the construction may get faster, never change
    /// a table (the seed is recorded, the cells must stay the same).
    #[test]
    fn builds_keep_the_bytes_of_the_first_construction() {
        let cases: [(usize, u8, u8, u8, u64); 6] = [
            (0, 8, 0, 4, 0x3bcf6843638d5676),
            (1000, 8, 8, 4, 0xcfd4f67394d72f91),
            (70_000, 13, 3, 4, 0x16548f6752d97d14),
            (300_000, 16, 0, 4, 0x8f16e05f7bf690d3),
            (200_000, 8, 8, 3, 0x345e726736a6c32d),
            (50_000, 32, 32, 4, 0xf01596be9ff947f1),
        ];
        for (n, v, f, arity, want) in cases {
            let (mut hashes, mut values) = pairs(n, v, n as u64 + 7);
            if n > 10 {
                // A repeat: dropped with its one value (a retry), refused with two (v = 32).
                hashes[n / 2] = hashes[3];
                if v < 32 {
                    values[n / 2] = values[3];
                }
            }
            let spec = RetrievalSpec::new(v, f).with_arity(arity);
            let got = match RetrievalTable::build(
                Params::new(Layout::L8x64, 1),
                spec,
                &hashes,
                &values,
            ) {
                Ok(t) => digest(&t.to_file_bytes()),
                Err(e) => digest(alloc::format!("{e}").as_bytes()),
            };
            assert_eq!(got, want, "n = {n} v = {v} f = {f} arity = {arity}");
        }
    }
}
