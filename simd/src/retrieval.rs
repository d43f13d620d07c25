//! Bulk operations of retrieval tables (`bloomlanes_core::retrieval`): batched lookups that
//! prefetch every key's cells a group ahead, on one thread and on every core, and a build whose
//! passes run on every core and prefetch, leaving the core's table byte for byte.
//!
//! ```
//! use bloomlanes_core::retrieval::RetrievalSpec;
//! use bloomlanes_core::{Keys, Layout, Params};
//! use bloomlanes_simd::Probe;
//!
//! let probe = Probe::active();
//! let hashes: Vec<u64> = (0..10_000u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
//! let values: Vec<u32> = (0..10_000).map(|k| k % 251).collect();
//! let base = Params::new(Layout::L8x64, 1);
//! let table = probe.build_retrieval(base, RetrievalSpec::new(8, 8), &hashes, &values).unwrap();
//! let (mut got, mut found) = (vec![0u32; hashes.len()], vec![0u64; hashes.len().div_ceil(64)]);
//! probe.get_retrieval(&table, Keys::Hashes(&hashes), &mut got, &mut found);
//! assert_eq!(got, values);
//! assert!((0..hashes.len()).all(|i| found[i / 64] >> (i % 64) & 1 == 1));
//! ```

use bloomlanes_core::retrieval::build::{self, Lookahead, Passes, Sorted};
use bloomlanes_core::retrieval::{
    check_outputs, read_cell, Cells, RetrievalError, RetrievalSpec, RetrievalTable, Shape,
};
use bloomlanes_core::{Keys, Params};
use rayon::prelude::*;

use crate::kind_entry::{hash_into, CHUNK};
use crate::prefetch::Prefetch;
use crate::{Probe, SimdPath};

/// Keys whose cells are prefetched ahead of the one being answered (a power of two).
const AHEAD: usize = 16;
/// Tables up to this size are answered in vector lanes on the AVX-512 path; larger ones key by
/// key with prefetching. Measured (2-core Xeon VM, 2 MiB of L2 a core, 64 Ki present keys a
/// call, M keys/s, key by key → lanes): 4-wise 16-bit cells, 0.43 MB 128 → 256, 2.1 MB 108 →
/// 149, 8.6 MB 47 → 55; 21.5 MB 36 → 30 (lanes without prefetching), 33 → 27 (lanes with the
/// cells prefetched 16 to 64 keys ahead).
const LANES_MAX_BYTES: u64 = 8 << 20;
/// Scan steps (peeling) and keys (assigning) that the build prefetches ahead.
const BUILD_AHEAD: usize = 16;
/// Cells packed per parallel task (a multiple of 64, so that each task starts on a word).
const PACK_CELLS: usize = 64 << 10;

impl Probe {
    /// Looks up every key in a retrieval table: `values[i]` is key `i`'s value and bit `i % 64`
    /// of `found[i / 64]` is set, or, for a key the check bits call absent, `values[i]` is 0
    /// and the bit is clear (the core's [`RetrievalTable::get_hash`]). Bits past the last key
    /// are cleared.
    ///
    /// # Panics
    /// If `values.len() != keys.len()` or `found.len() != keys.len().div_ceil(64)`.
    pub fn get_retrieval(
        &self,
        table: &RetrievalTable,
        keys: Keys<'_>,
        values: &mut [u32],
        found: &mut [u64],
    ) {
        check_outputs(keys.len(), values.len(), found.len());
        // Hashes already made (a classifier's batches): answered in place, nothing copied.
        if let Keys::Hashes(hashes) = keys {
            return lookup_hashes(self.path(), table, hashes, values, found);
        }
        let mut hashes = vec![0u64; CHUNK.min(keys.len())];
        for (c, (values, found)) in values
            .chunks_mut(CHUNK)
            .zip(found.chunks_mut(CHUNK / 64))
            .enumerate()
        {
            let chunk = keys.slice(c * CHUNK..c * CHUNK + values.len());
            let hashes = &mut hashes[..values.len()];
            hash_into(self, chunk, table.params().seed, hashes);
            lookup_hashes(self.path(), table, hashes, values, found);
        }
    }

    /// [`Probe::get_retrieval`] on every core (rayon's current pool), in chunks of 16 Ki keys.
    ///
    /// # Panics
    /// As [`Probe::get_retrieval`].
    pub fn par_get_retrieval(
        &self,
        table: &RetrievalTable,
        keys: Keys<'_>,
        values: &mut [u32],
        found: &mut [u64],
    ) {
        check_outputs(keys.len(), values.len(), found.len());
        values
            .par_chunks_mut(crate::PAR_CHUNK)
            .zip(found.par_chunks_mut(crate::PAR_CHUNK / 64))
            .enumerate()
            .for_each(|(c, (values, found))| {
                let start = c * crate::PAR_CHUNK;
                self.get_retrieval(
                    table,
                    keys.slice(start..start + values.len()),
                    values,
                    found,
                );
            });
    }

    /// Builds a retrieval table (the core's [`RetrievalTable::build`], same bytes) with passes
    /// that use every core (bucketing, counting, packing) and prefetch (peeling, assigning).
    ///
    /// # Errors
    /// As [`RetrievalTable::build`].
    pub fn build_retrieval(
        &self,
        base: Params,
        spec: RetrievalSpec,
        hashes: &[u64],
        values: &[u32],
    ) -> Result<RetrievalTable, RetrievalError> {
        RetrievalTable::build_with(base, spec, hashes, values, &ParallelPasses)
    }
}

/// Answers `hashes` into `values` and the bitmap words `found` (bits past the last key
/// cleared), with the loops over a key's cells unrolled for the table's arity and, for cells
/// of 8, 16 or 32 bits, each cell read with one load and constant shifts. On the AVX-512 path,
/// tables up to [`LANES_MAX_BYTES`] are answered 8 keys at a time in vector lanes (whole groups
/// of 64 keys; the rest here).
fn lookup_hashes(
    path: SimdPath,
    table: &RetrievalTable,
    hashes: &[u64],
    values: &mut [u32],
    found: &mut [u64],
) {
    let shape = table.shape();
    let (p, t, h, v, f) = (path, table, hashes, values, found);
    match (shape.arity, shape.cell_bits()) {
        (3, 8) => lookup_with::<3, 8>(p, t, h, v, f),
        (3, 16) => lookup_with::<3, 16>(p, t, h, v, f),
        (3, 32) => lookup_with::<3, 32>(p, t, h, v, f),
        (3, _) => lookup_with::<3, 0>(p, t, h, v, f),
        (_, 8) => lookup_with::<4, 8>(p, t, h, v, f),
        (_, 16) => lookup_with::<4, 16>(p, t, h, v, f),
        (_, 32) => lookup_with::<4, 32>(p, t, h, v, f),
        (_, _) => lookup_with::<4, 0>(p, t, h, v, f),
    }
}

/// [`lookup_hashes`] for `A` cells per key of `W` bits: on the AVX-512 path, for a table up to
/// [`LANES_MAX_BYTES`], the whole groups of 64 keys in vector lanes; the rest (every key on
/// other paths) key by key ([`lookup_shaped`]).
#[inline(always)]
fn lookup_with<const A: u32, const W: u32>(
    path: SimdPath,
    table: &RetrievalTable,
    hashes: &[u64],
    values: &mut [u32],
    found: &mut [u64],
) {
    let (shape, words) = (table.shape(), table.words());
    let done = match path {
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx512 if path.is_available() && shape.array_bytes() <= LANES_MAX_BYTES => {
            // SAFETY: `is_available` checked that this CPU has AVX-512F and DQ.
            unsafe {
                crate::arch::x86_64::retrieval::lookup::<A, W>(shape, words, hashes, values, found)
            }
        }
        _ => 0,
    };
    let (h, v, f) = (
        &hashes[done..],
        &mut values[done..],
        &mut found[done / 64..],
    );
    lookup_shaped::<A, W>(table, h, v, f);
}

/// [`lookup_hashes`] for `A` cells per key of `W` bits (8, 16 or 32: a cell never straddles
/// two words; 0: any width, read with [`read_cell`]). Each key's cells are prefetched
/// [`AHEAD`] keys before they are read when the table is larger than L2 likes; the found bits
/// are gathered a word at a time.
#[inline(always)]
fn lookup_shaped<const A: u32, const W: u32>(
    table: &RetrievalTable,
    hashes: &[u64],
    values: &mut [u32],
    found: &mut [u64],
) {
    let shape = table.shape();
    let words = table.words();
    let bits = shape.cell_bits();
    let pf = Prefetch::for_bytes(shape.array_bytes());
    let place = |h: u64| {
        let m = shape.mixed(h);
        (m, shape.cells_for(m, A))
    };
    // Cell `c` in the low bits (the bits above it are masked off by `Shape::answer`).
    let read = |c: u32| {
        if W == 0 {
            read_cell(words, bits, c)
        } else {
            let per = 64 / W.max(1);
            words[(c / per) as usize] >> ((c % per) * W)
        }
    };
    let mut ring = [(0u64, Cells::default()); AHEAD];
    if pf.is_on() {
        for (i, &h) in hashes.iter().take(AHEAD).enumerate() {
            ring[i] = place(h);
            touch_cells(pf, shape, words, &ring[i].1[..A as usize]);
        }
    }
    let chunks = values.chunks_mut(64).zip(found.iter_mut());
    for (c, (values, word)) in chunks.enumerate() {
        let mut hits = 0u64;
        for (k, v) in values.iter_mut().enumerate() {
            let i = c * 64 + k;
            let (m, cells) = if pf.is_on() {
                let here = ring[i % AHEAD];
                if let Some(&h) = hashes.get(i + AHEAD) {
                    ring[i % AHEAD] = place(h);
                    touch_cells(pf, shape, words, &ring[i % AHEAD].1[..A as usize]);
                }
                here
            } else {
                place(hashes[i])
            };
            let x = cells[..A as usize].iter().fold(0, |x, &c| x ^ read(c));
            let answer = shape.answer(m, x);
            *v = answer.unwrap_or(0);
            hits |= u64::from(answer.is_some()) << k;
        }
        *word = hits;
    }
}

/// Prefetches the word of each cell in `cells` (a cell's second word, if any, is the next one:
/// one line in 8, and the hardware's adjacent-line prefetcher covers it).
#[inline(always)]
fn touch_cells(pf: Prefetch, shape: &Shape, words: &[u64], cells: &[u32]) {
    for &c in cells {
        let w = (u64::from(c) * u64::from(shape.cell_bits())) >> 6;
        // `wrapping_add` keeps this safe for any index; the prefetch only hints an address.
        pf.line(words.as_ptr().wrapping_add(w as usize));
    }
}

/// The build's passes on every core, prefetching: the slots, peeling order and cells they leave
/// are the core's ([`Passes`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct ParallelPasses;

/// Prefetches the keys and slots the build will touch [`BUILD_AHEAD`] steps later (keys
/// twice as far ahead).
struct PrefetchSlots(Prefetch);

impl Lookahead for PrefetchSlots {
    const DISTANCE: usize = BUILD_AHEAD;
    #[inline(always)]
    fn touch<T>(&self, at: *const T) {
        self.0.line(at);
    }
}

/// Whether the build is small enough to stay on one thread (and in L2, without prefetching).
fn small(shape: &Shape, keys: usize) -> bool {
    rayon::current_num_threads() == 1
        || keys < 1 << 16
        || !Prefetch::for_bytes(shape.cells() * 8).is_on()
}

impl Passes for ParallelPasses {
    fn sort(&self, shape: &Shape, hashes: &[u64], values: &[u32]) -> Sorted {
        if small(shape, hashes.len()) {
            return build::Scalar.sort(shape, hashes, values);
        }
        // One run per task; runs are sorted independently (a key is named by its place).
        let segments = shape.segment_count as usize;
        let run = hashes.len().div_ceil(2 * rayon::current_num_threads());
        let mut sorted = Sorted::with_runs(hashes.len(), run, segments);
        sorted
            .mixed
            .par_chunks_mut(run)
            .zip(sorted.values.par_chunks_mut(run))
            .zip(sorted.starts.par_chunks_mut(segments + 1))
            .zip(hashes.par_chunks(run).zip(values.par_chunks(run)))
            .for_each(|(((mixed, out), starts), (h, v))| {
                build::bucket_into(shape, h, v, mixed, out, starts);
            });
        sorted
    }

    fn count(&self, shape: &Shape, sorted: &Sorted, slots: &mut [u64]) {
        let keys = sorted.mixed.len();
        if small(shape, keys) {
            return build::Scalar.count(shape, sorted, slots);
        }
        let threads = rayon::current_num_threads();
        let segments = shape.segment_count as usize;
        let arity = shape.arity as usize;
        // Segment ranges at least `a` wide: the cell windows of every other range are disjoint.
        let width = (segments / (8 * threads)).max(arity);
        if segments < 4 * width {
            return build::Scalar.count(shape, sorted, slots);
        }
        let runs = keys.div_ceil(sorted.run);
        let len = shape.segment_len() as usize;
        let ranges: Vec<(usize, usize)> = (0..segments)
            .step_by(width)
            .map(|g| (g, (g + width).min(segments)))
            .collect();
        for parity in 0..2 {
            // Cells of range [g0, g1): segments g0 .. g1 + a − 1.
            let windows: Vec<(usize, usize, usize)> = ranges
                .iter()
                .skip(parity)
                .step_by(2)
                .map(|&(g0, g1)| (g0, g1, ((g1 + arity - 1) * len).min(slots.len())))
                .collect();
            let mut parts = Vec::with_capacity(windows.len());
            let mut rest = &mut *slots;
            let mut at = 0;
            for &(g0, g1, end) in &windows {
                let (_, tail) = rest.split_at_mut(g0 * len - at);
                let (window, tail) = tail.split_at_mut(end - g0 * len);
                parts.push((g0, g1, window));
                rest = tail;
                at = end;
            }
            // Segment by segment, every run's keys of it: the `a` segments a key's cells fall
            // in stay in cache while all the runs' keys of a segment are counted (run by run
            // over the whole range, each run would fetch the range's cells again: 2.3x the CPU
            // time at 10^7 keys).
            parts.into_par_iter().for_each(|(g0, g1, window)| {
                for g in g0..g1 {
                    for r in 0..runs {
                        let (i0, i1) = sorted.range(segments, r, g, g + 1);
                        build::count_range(shape, &sorted.mixed[i0..i1], i0, window, g0 * len);
                    }
                }
            });
        }
    }

    fn peel(&self, shape: &Shape, sorted: &Sorted, slots: &mut [u64]) -> Vec<u32> {
        match Prefetch::for_bytes(shape.cells() * 8) {
            Prefetch::Off => build::peel_scan(shape, &sorted.mixed, slots, &build::NoLookahead),
            pf => build::peel_scan(shape, &sorted.mixed, slots, &PrefetchSlots(pf)),
        }
    }

    fn assign(&self, shape: &Shape, sorted: &Sorted, order: &[u32], slots: &mut [u64]) {
        match Prefetch::for_bytes(shape.cells() * 8) {
            Prefetch::Off => build::assign(shape, sorted, order, slots, &build::NoLookahead),
            pf => build::assign(shape, sorted, order, slots, &PrefetchSlots(pf)),
        }
    }

    fn pack(&self, shape: &Shape, slots: &[u64]) -> Vec<u64> {
        let mut words = crate::huge_pages::zeroed_words(shape.words() as usize);
        let per_task = PACK_CELLS / 64 * shape.cell_bits() as usize;
        slots
            .par_chunks(PACK_CELLS)
            .zip(words.par_chunks_mut(per_task))
            .for_each(|(s, w)| build::pack_range(shape, s, w));
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimdPath;
    use bloomlanes_core::Layout;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn table(n: usize, v: u8, f: u8, arity: u8) -> (RetrievalTable, Vec<u64>, Vec<u32>) {
        let mut s = n as u64 + u64::from(arity);
        let keys: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
        let mask = ((1u64 << v) - 1) as u32;
        let values: Vec<u32> = keys.iter().map(|&k| (k >> 20) as u32 & mask).collect();
        let base = Params::new(Layout::L8x64, 1).with_seed(3);
        let spec = RetrievalSpec::new(v, f).with_arity(arity);
        let t = RetrievalTable::build_keys(base, spec, &keys, &values).expect("builds");
        (t, keys, values)
    }

    /// The core's answers for `keys`, as values and found bits.
    fn reference(t: &RetrievalTable, keys: &[u64]) -> (Vec<u32>, Vec<u64>) {
        let hashes: Vec<u64> = keys.iter().map(|k| t.params().hash_key(k)).collect();
        let mut values = vec![0u32; keys.len()];
        let mut found = vec![0u64; keys.len().div_ceil(64)];
        t.get_hashes(&hashes, &mut values, &mut found);
        (values, found)
    }

    #[test]
    fn lookups_match_the_core_on_every_path_with_and_without_prefetch() {
        // (value, check) bits: cells of 16, 8 and 32 bits (one load each) and of 64, 1 and 13
        // bits (`read_cell`), each at arity 3 and 4 in L2 (no prefetch); then 400 000 keys of
        // 24-bit cells and 300 000 of 32-bit cells, past it.
        let widths = [(8, 8), (4, 4), (20, 12), (32, 32), (1, 0), (7, 6)];
        let small = widths.map(|(v, f)| [(1500, v, f, 3), (3000, v, f, 4)]);
        let large = [(400_000, 16, 8, 4), (300_000, 16, 16, 3)];
        for (n, v, f, a) in small.into_iter().flatten().chain(large) {
            let (t, keys, _) = table(n, v, f, a);
            let mut s = 99;
            let mut probes = keys.clone();
            probes.extend((0..n / 2 + 100).map(|_| splitmix(&mut s)));
            let (want_values, want_found) = reference(&t, &probes);
            let hashes: Vec<u64> = probes.iter().map(|k| t.params().hash_key(k)).collect();
            for path in SimdPath::ALL.into_iter().filter(|p| p.is_available()) {
                let probe = Probe::new(path).unwrap();
                // The keys, their hashes answered in place (no chunking), and every core.
                for (way, keys, par) in [
                    ("keys", Keys::U64(&probes), false),
                    ("hashes", Keys::Hashes(&hashes), false),
                    ("par", Keys::U64(&probes), true),
                ] {
                    let mut values = vec![7u32; probes.len()];
                    let mut found = vec![u64::MAX; probes.len().div_ceil(64)];
                    match par {
                        false => probe.get_retrieval(&t, keys, &mut values, &mut found),
                        true => probe.par_get_retrieval(&t, keys, &mut values, &mut found),
                    }
                    assert_eq!(values, want_values, "{path} {way} n = {n} v = {v} a = {a}");
                    assert_eq!(found, want_found, "{path} {way} n = {n} v = {v} a = {a}");
                }
            }
        }
    }

    #[test]
    fn the_parallel_build_writes_the_cores_bytes() {
        for (n, v, f, arity) in [
            (0, 8, 0, 4),
            (100, 8, 8, 4),
            (70_000, 13, 3, 4),
            (300_000, 16, 0, 4),
            (200_000, 8, 8, 3),
        ] {
            let mut s = n as u64 + 1;
            let hashes: Vec<u64> = (0..n).map(|_| splitmix(&mut s)).collect();
            let mask = ((1u64 << v) - 1) as u32;
            let values: Vec<u32> = hashes.iter().map(|&h| h as u32 & mask).collect();
            let spec = RetrievalSpec::new(v, f).with_arity(arity);
            let base = Params::new(Layout::L8x64, 1);
            let core = RetrievalTable::build(base, spec, &hashes, &values).unwrap();
            // Also on 3 threads: 6 runs sorted apart, the last one short.
            for threads in [0, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let fast = pool
                    .install(|| Probe::active().build_retrieval(base, spec, &hashes, &values))
                    .unwrap();
                assert_eq!(fast.to_file_bytes(), core.to_file_bytes(), "n = {n}");
            }
        }
    }

    #[test]
    fn the_parallel_build_refuses_a_repeat_like_the_core() {
        let mut s = 5;
        let mut hashes: Vec<u64> = (0..100_000).map(|_| splitmix(&mut s)).collect();
        let mut values: Vec<u32> = vec![1; hashes.len()];
        hashes[90_000] = hashes[17];
        values[90_000] = 2;
        let base = Params::new(Layout::L8x64, 1);
        let err = Probe::active()
            .build_retrieval(base, RetrievalSpec::new(8, 0), &hashes, &values)
            .unwrap_err();
        assert_eq!(
            err,
            RetrievalError::ConflictingValues {
                index: 90_000,
                first: 17
            }
        );
    }
}
