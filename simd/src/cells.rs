//! The bulk cell writes and reads of every cell-based kind (counting, stable, spatial;
//! `bloomlanes_core::cell`), written once: a write is one [`Write`] (increment, decrement, or
//! the max of a value per key or one for the batch), a read the smallest of each key's cells.
//! Keys are hashed a chunk at a time and handed to the vector path's cell kernel, in input
//! order on one thread, over block ranges on every core, or partitioned by filter region; the
//! scalar path runs the core's reference ([`CellsMut`]) key by key. `counting.rs` and
//! `spatial.rs` are the kinds' front doors over these.

use bloomlanes_core::cell::{cell_words, reduce_cells};
use bloomlanes_core::{
    CellBits, CellReduce, CellUpdate, CellsMut, CountingFilter, Keys, Params, SpatialFilter,
};
use rayon::prelude::*;

use crate::cell_lanes::{DEC, INC, MAX};
use crate::kind_entry::{hash_into, kind_fns, KindFns, CHUNK, PAR_CHUNK};
use crate::Probe;

/// Partitions per thread of a partitioned all-core cell write (evens out the load).
pub(crate) const PARTS_PER_THREAD: usize = 4;

/// The classes (values) of a spatial insert: one for the whole batch, or one per key.
///
/// A class above the filter's largest cell value is taken as that value, and class 0 changes
/// nothing, exactly as the core's [`CellUpdate::Max`] does on a [`CellsMut`] view; the owned
/// filter's insert ([`Probe::insert_spatial_filter`]) accepts only the classes `1..=n`.
#[derive(Clone, Copy, Debug)]
pub enum Classes<'a> {
    /// Every key in this class.
    One(u32),
    /// Key `i` in class `classes[i]`.
    U8(&'a [u8]),
    /// Key `i` in class `classes[i]`.
    U16(&'a [u16]),
    /// Key `i` in class `classes[i]`.
    U32(&'a [u32]),
}

impl From<u32> for Classes<'_> {
    fn from(class: u32) -> Self {
        Classes::One(class)
    }
}

impl<'a> From<&'a [u8]> for Classes<'a> {
    fn from(classes: &'a [u8]) -> Self {
        Classes::U8(classes)
    }
}

impl<'a> From<&'a [u16]> for Classes<'a> {
    fn from(classes: &'a [u16]) -> Self {
        Classes::U16(classes)
    }
}

impl<'a> From<&'a [u32]> for Classes<'a> {
    fn from(classes: &'a [u32]) -> Self {
        Classes::U32(classes)
    }
}

impl Classes<'_> {
    /// The number of classes given (`None` for one class for every key).
    pub fn len(&self) -> Option<usize> {
        match self {
            Classes::One(_) => None,
            Classes::U8(c) => Some(c.len()),
            Classes::U16(c) => Some(c.len()),
            Classes::U32(c) => Some(c.len()),
        }
    }

    /// Whether no class is given (a per-key list of none).
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The class of key `i`.
    ///
    /// # Panics
    /// If `i` is past a per-key list.
    pub fn get(&self, i: usize) -> u32 {
        match self {
            Classes::One(c) => *c,
            Classes::U8(c) => u32::from(c[i]),
            Classes::U16(c) => u32::from(c[i]),
            Classes::U32(c) => c[i],
        }
    }

    /// The values of keys `start .. end` as the kernels take them: one value for the batch, or
    /// one per key (widened into `buf`).
    pub(crate) fn chunk<'s>(
        &'s self,
        start: usize,
        end: usize,
        buf: &'s mut Vec<u32>,
    ) -> &'s [u32] {
        buf.clear();
        match self {
            Classes::One(c) => buf.push(*c),
            Classes::U8(c) => buf.extend(c[start..end].iter().map(|&v| u32::from(v))),
            Classes::U16(c) => buf.extend(c[start..end].iter().map(|&v| u32::from(v))),
            Classes::U32(c) => return &c[start..end],
        }
        buf
    }

    /// Calls `f` once per run of keys with the same class: `(class, keys)` for one class for
    /// every key among `n`, else `(class, 1)` per key.
    pub(crate) fn for_each(&self, n: usize, mut f: impl FnMut(u32, u64)) {
        match self.len() {
            None => f(self.get(0), n as u64),
            Some(len) => (0..len).for_each(|i| f(self.get(i), 1)),
        }
    }
}

/// One cell write for every key of a batch: the operation of the cell kernels and its values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write<'a> {
    /// `INC`, `DEC` or `MAX` (`cell_lanes`).
    pub(crate) op: u8,
    /// The values of `MAX` (ignored by the others).
    pub(crate) values: Classes<'a>,
}

impl<'a> Write<'a> {
    /// Counting insert: [`CellUpdate::Increment`].
    pub(crate) const INC: Write<'static> = Write {
        op: INC,
        values: Classes::One(0),
    };
    /// Counting delete: [`CellUpdate::Decrement`], refused unless every cell is positive.
    pub(crate) const DEC: Write<'static> = Write {
        op: DEC,
        values: Classes::One(0),
    };

    /// Spatial insert: [`CellUpdate::Max`] of each key's class.
    pub(crate) fn max(values: Classes<'a>) -> Write<'a> {
        Write { op: MAX, values }
    }

    /// Whether the values are one per key.
    pub(crate) fn per_key(&self) -> bool {
        self.op == MAX && self.values.len().is_some()
    }
}

/// A key count `count` after `added` keys went in and `removed` went out (`None`: unknown).
pub(crate) fn grown(count: Option<u64>, added: usize, removed: usize) -> Option<u64> {
    count.map(|k| {
        k.saturating_add(added as u64)
            .saturating_sub(removed as u64)
    })
}

/// Sets bit `i` of a bitmap.
pub(crate) fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// The filter's cell words per block.
fn cell_words_per_block(p: &Params) -> usize {
    p.layout.block_u32s() * p.kind.cell_bits().bits() as usize
}

/// The core's key-by-key write (the scalar path's): the number of refused deletes, each
/// marked in `refused`.
fn reference(filter: &mut CellsMut<'_>, w: Write<'_>, keys: Keys<'_>, refused: &mut [u64]) -> u64 {
    let seed = filter.params().seed;
    let mut count = 0;
    for i in 0..keys.len() {
        let h = keys.hash(i, seed);
        match w.op {
            INC => filter.update_hash(h, CellUpdate::Increment),
            DEC => {
                if filter.remove_hash(h).is_err() {
                    set_bit(refused, i);
                    count += 1;
                }
            }
            _ => filter.update_hash(h, CellUpdate::Max(w.values.get(i))),
        }
    }
    count
}

/// How a cell write runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// On the calling thread: partitioned by filter region when the probe's
    /// [`crate::Partitioning`] says it pays (in its automatic mode: its rule, then this
    /// process's own timings of writes of the size), else key after key.
    OneThread,
    /// On every core (rayon's current pool): partitioned (a few partitions per thread) where
    /// [`Schedule::OneThread`] would be, else over one block range per thread. One-thread pools
    /// and batches under [`crate::PAR_INSERT_MIN_KEYS`] keys run as [`Schedule::OneThread`].
    AllCores,
    /// Over exactly this many block ranges (at least 1) on every core, with no fallback: each
    /// range's task applies, in input order, the keys that fall into it. For tests and tuning.
    Ranges(usize),
    /// Always partitioned with the probe's [`crate::Partitioning`] sizes (whatever its mode),
    /// on every core if `true`. For tests and tuning.
    Partitioned(bool),
}

impl Probe {
    /// Applies `w` to every key, exactly as the core's key-by-key path in input order, as
    /// `how` says (the scalar path runs the core's reference), and returns the number of
    /// refused deletes (bit `i % 64` of `refused[i / 64]` set for each and cleared for the
    /// others; `refused` is one bit per key for deletes, ignored otherwise).
    pub(crate) fn write_cells(
        &self,
        mut filter: CellsMut<'_>,
        w: Write<'_>,
        keys: Keys<'_>,
        refused: &mut [u64],
        how: Schedule,
    ) -> u64 {
        refused.fill(0);
        let Some(kf) = kind_fns(self.path) else {
            return reference(&mut filter, w, keys, refused);
        };
        let p = *filter.params();
        let n = keys.len();
        let threads = rayon::current_num_threads();
        let all = how == Schedule::AllCores && threads > 1 && n >= crate::PAR_INSERT_MIN_KEYS;
        let auto = matches!(how, Schedule::OneThread | Schedule::AllCores);
        let timed = auto.then(|| self.partitioning.choose_cells(&p, n, all));
        let partitioned = match how {
            Schedule::Partitioned(par) => Some(par),
            _ if timed.as_ref().is_some_and(|t| t.partition()) => Some(all),
            _ => None,
        };
        let refusals = if let Some(par) = partitioned {
            let t = if par { threads } else { 1 };
            let min_parts = if auto && !par {
                1
            } else {
                t * PARTS_PER_THREAD
            };
            let plan = self.partitioning.cells_plan(&p, n, t, min_parts);
            crate::partition::cells_update(self, kf, w, &plan, filter, keys, refused, par)
        } else {
            match how {
                Schedule::Ranges(r) => self.write_ranges(kf, w, filter, keys, r, refused),
                _ if all => self.write_ranges(kf, w, filter, keys, threads, refused),
                _ => self.write_key_by_key(kf, w, filter, keys, refused),
            }
        };
        if let Some(timed) = timed {
            timed.done();
        }
        refusals
    }

    /// The cell write on the calling thread, key after key in chunks of hashes.
    fn write_key_by_key(
        &self,
        kf: &'static KindFns,
        w: Write<'_>,
        mut filter: CellsMut<'_>,
        keys: Keys<'_>,
        refused: &mut [u64],
    ) -> u64 {
        let p = *filter.params();
        let n = keys.len();
        let (image, cells) = filter.parts_mut();
        let (mut buf, mut vbuf, mut no) = (vec![0u64; CHUNK.min(n)], Vec::new(), Vec::new());
        let mut count = 0;
        for start in (0..n).step_by(CHUNK) {
            let end = (start + CHUNK).min(n);
            let hashes = &mut buf[..end - start];
            hash_into(self, keys.slice(start..end), p.seed, hashes);
            let values = w.values.chunk(start, end, &mut vbuf);
            no.clear();
            // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel checks
            // the shapes of the image and cells, which a CellsMut holds for `p`, and of the
            // values (one, or one per key of the chunk).
            unsafe { (kf.cells)(w.op, p, 0, image, cells, hashes, values, &mut no) };
            for &i in &no {
                set_bit(refused, start + i as usize);
            }
            count += no.len() as u64;
        }
        count
    }

    /// The all-core cell write over `ranges` block ranges.
    fn write_ranges(
        &self,
        kf: &'static KindFns,
        w: Write<'_>,
        mut filter: CellsMut<'_>,
        keys: Keys<'_>,
        ranges: usize,
        refused: &mut [u64],
    ) -> u64 {
        let p = *filter.params();
        let n = keys.len();
        if n == 0 {
            return 0;
        }
        let per = p.layout.block_u32s();
        let cper = cell_words_per_block(&p);
        let blocks = p.blocks as usize;
        let ranges = ranges.clamp(1, blocks.max(1));
        let bpr = blocks.div_ceil(ranges);
        let (mut image, mut cells) = filter.parts_mut();
        // The ranges' words, disjoint, in block order, each with its list of refused keys.
        let mut parts = Vec::with_capacity(ranges);
        for r in 0..ranges {
            let take = bpr.min(blocks - (r * bpr).min(blocks));
            let (a, b) = core::mem::take(&mut image).split_at_mut(take * per);
            let (c, d) = core::mem::take(&mut cells).split_at_mut(take * cper);
            parts.push(((r * bpr).min(blocks) as u32, a, c, Vec::<u32>::new()));
            image = b;
            cells = d;
        }
        let (mut buf, mut vbuf) = (vec![0u64; n.min(PAR_CHUNK)], Vec::new());
        let mut count = 0;
        for start in (0..n).step_by(PAR_CHUNK) {
            let end = (start + PAR_CHUNK).min(n);
            let chunk = keys.slice(start..end);
            let hashes = &mut buf[..chunk.len()];
            hashes
                .par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(t, out)| {
                    let lo = t * CHUNK;
                    hash_into(self, chunk.slice(lo..lo + out.len()), p.seed, out);
                });
            let (hashes, values) = (&*hashes, w.values.chunk(start, end, &mut vbuf));
            parts.par_iter_mut().for_each(|(first, image, cells, no)| {
                no.clear();
                // SAFETY: `kf` belongs to an available path (`kind_fns` checks); `image` and
                // `cells` are the whole blocks `first ..` of this filter, cut from its
                // exclusively borrowed words, and the kernel skips keys of other blocks.
                unsafe { (kf.cells)(w.op, p, *first, image, cells, hashes, values, no) };
            });
            for (_, _, _, no) in &parts {
                for &i in no {
                    set_bit(refused, start + i as usize);
                }
                count += no.len() as u64;
            }
        }
        count
    }

    /// Each key's smallest cell ([`CellReduce::Min`]): `out[i]` for key `i`, 0 if the filter
    /// does not hold it (answered from the image alone; the cells of upcoming keys are
    /// prefetched) — a spatial filter's class ([`SpatialFilter::class_of_hash`]), a counting
    /// or stable filter's count ([`CountingFilter::count_hash`]).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`, or `T` is narrower than the cells (`u8` holds 4- and
    /// 8-bit cells, `u16` and `u32` any).
    pub fn min_cells<T: CellValue>(&self, filter: &impl CellFilter, keys: Keys<'_>, out: &mut [T]) {
        self.read_min(filter, keys, out, false)
    }

    /// [`Probe::min_cells`] on every core (rayon's current pool), in chunks of 16 Ki keys.
    ///
    /// # Panics
    /// As [`Probe::min_cells`].
    pub fn par_min_cells<T: CellValue>(
        &self,
        filter: &impl CellFilter,
        keys: Keys<'_>,
        out: &mut [T],
    ) {
        self.read_min(filter, keys, out, true)
    }

    /// [`Probe::min_cells`], on every core if `parallel`.
    fn read_min<T: CellValue>(
        &self,
        filter: &impl CellFilter,
        keys: Keys<'_>,
        out: &mut [T],
        parallel: bool,
    ) {
        let (params, image, cells) = filter.cell_parts();
        let bits = params.kind.cell_bits();
        assert!(bits != CellBits::One, "not a filter with cells");
        assert!(
            bits.max() <= T::MAX,
            "{}-bit cells do not fit the output's {}-bit values",
            bits.bits(),
            T::MAX.count_ones()
        );
        assert_eq!(image.len() as u64, params.u32_len(), "image words");
        assert_eq!(cells.len() as u64, cell_words(params, bits), "cell words");
        crate::chunks::check_per_key(out.len(), &keys);
        let kf = kind_fns(self.path);
        let run = |keys: Keys<'_>, out: &mut [T]| {
            // Hashes already made, answered as `u32`s (a classifier's batches): straight into
            // the kernel, with no buffer allocated or copied.
            if let (Some(kf), Keys::Hashes(hashes), Some(out)) = (kf, keys, T::as_u32s(out)) {
                // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel
                // checks the shapes of the image, cells and output.
                unsafe { (kf.min)(*params, image, cells, hashes, out) };
                return;
            }
            let mut hashes = vec![0u64; out.len().min(CHUNK)];
            let mut vals = vec![0u32; hashes.len()];
            for (c, out) in out.chunks_mut(CHUNK).enumerate() {
                let keys = keys.slice(c * CHUNK..c * CHUNK + out.len());
                let (hashes, vals) = (&mut hashes[..out.len()], &mut vals[..out.len()]);
                match kf {
                    Some(kf) => {
                        hash_into(self, keys, params.seed, hashes);
                        // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the
                        // kernel checks the shapes of the image, cells and output.
                        unsafe { (kf.min)(*params, image, cells, hashes, vals) };
                    }
                    None => {
                        for (i, v) in vals.iter_mut().enumerate() {
                            let h = keys.hash(i, params.seed);
                            *v = reduce_cells(params, bits, cells, h, CellReduce::Min);
                        }
                    }
                }
                for (o, &v) in out.iter_mut().zip(&*vals) {
                    *o = T::from_cell(v);
                }
            }
        };
        if parallel {
            crate::chunks::par_chunks(keys, out, 1, run);
        } else {
            run(keys, out);
        }
    }
}

/// A filter with cells ([`CountingFilter`], [`SpatialFilter`]; sealed): what
/// [`Probe::min_cells`] reads.
pub trait CellFilter: sealed::Sealed {
    /// The parameters, the image and the cells.
    fn cell_parts(&self) -> (&Params, &[u32], &[u32]);
}

impl sealed::Sealed for CountingFilter {}
impl CellFilter for CountingFilter {
    fn cell_parts(&self) -> (&Params, &[u32], &[u32]) {
        (self.params(), self.image_words(), self.counter_words())
    }
}

impl sealed::Sealed for SpatialFilter {}
impl CellFilter for SpatialFilter {
    fn cell_parts(&self) -> (&Params, &[u32], &[u32]) {
        (self.params(), self.image_words(), self.cell_words())
    }
}

/// The integer types a read of cells writes (`u8`, `u16`, `u32`; sealed).
pub trait CellValue: Copy + Send + sealed::Sealed {
    /// The largest value the type holds.
    const MAX: u32;
    /// `v`, which is at most [`CellValue::MAX`].
    fn from_cell(v: u32) -> Self;
    /// `out` itself when `Self` is `u32` (the kernels' own output, written in place), else
    /// `None`.
    fn as_u32s(out: &mut [Self]) -> Option<&mut [u32]>;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! cell_value {
    ($($t:ty => $as_u32s:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl CellValue for $t {
            const MAX: u32 = <$t>::MAX as u32;
            #[inline(always)]
            fn from_cell(v: u32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn as_u32s(out: &mut [Self]) -> Option<&mut [u32]> {
                $as_u32s(out)
            }
        }
    )*};
}
cell_value!(u8 => |_| None, u16 => |_| None, u32 => Some);
