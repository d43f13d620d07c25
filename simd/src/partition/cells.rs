//! Partitioned cell writes (counting inserts and deletes, spatial inserts): the scatter of the
//! static partitioned paths ([`Scratch`]), then the cell kernel partition by partition.
//!
//! A key reads and writes its image block (32 bytes for 8x32) and that block's cells (128 bytes
//! with 4-bit cells, 256 with 8-bit, 512 with 16-bit): with the filter beyond L2, a direct
//! update waits for those lines at random. Partitioned, a partition's slice of the image and
//! cells (together about half the L2) is read once, sequentially, and its keys then hit it in
//! L2. A spatial insert with a class per key also scatters the classes: the scatter records
//! each key's partition, and the classes are then written in partition order (each producer's
//! keys of a partition after the earlier producers'), where the partition's kernel calls find
//! them beside its hashes.
//!
//! # Why the result is exactly the core's key-by-key result in input order
//!
//! A cell write of a key reads and writes only its own block: that block's image words and
//! cell words (the image is the projection, so "all the key's cells positive" is a test of the
//! key's bits in that same block). Two keys of different blocks therefore commute:
//! neither reads anything the other writes. The result of a sequence of updates thus depends only
//! on the order of the updates *within each block*. The scatter is stable: each partition holds
//! its keys producer by producer and, within a producer, in input order, and producers cover
//! consecutive ranges of the batch in order; so within each partition, and hence within each
//! block, the keys are applied in input order. Each partition's blocks are a whole, disjoint
//! range of the filter, updated by one task only. Hence every block ends exactly as after the
//! key-by-key sequence, and each delete sees exactly the cells it would have seen there, so it
//! is refused exactly when the core refuses it. Refusals are recorded as bits in partition order
//! and gathered back into input order with the lookups' gather (each key's partition id is
//! recorded by the scatter).

use bloomlanes_core::{CellsMut, Keys, Params};
use rayon::prelude::*;

use super::measure::{Op, Timed};
use super::run::{cursors_of, preload, staged, worth_preloading, Scratch, STAGE};
use super::{PartitionMode, Partitioning, Plan};
use crate::cell_lanes::DEC;
use crate::cells::{set_bit, Write};
use crate::kind_entry::KindFns;
use crate::Probe;

/// [`PartitionMode::Auto`] partitions a cell write once the image and cells together are
/// larger than the last-level cache divided by this: below, the direct update's prefetched
/// random lines come from L3 faster than the partitioned passes go. Measured on the 2-core EPYC
/// (32 MiB L3), one thread, 4-bit counters, M keys/s direct / partitioned: 5 MiB of storage with
/// 2^20-key batches 167 / 100; 20 MiB with 2^18 keys 68 / 72, with 2^20 keys 63 / 87. At most
/// [`AUTO_MAX_L2S`] L2 caches, though: a VM's reported L3 may be a large host's (the 2-core
/// Xeon VM reports 480 MiB), of which the direct update finds little; there, 80 MiB of storage
/// with 2^20-key batches went 21.5–21.6 / 58.6–60.1 (4-bit, thread CPU time, 2 rounds,
/// 2026-11-29) ...
const AUTO_LLC_DIVISOR: u64 = 2;

/// ... or than this many L2 caches, whichever is less (8 MiB on the EPYC, 16 MiB on the VM) ...
const AUTO_MAX_L2S: u64 = 8;

/// ... and the batch has at least this many keys ...
const AUTO_MIN_KEYS: usize = 1 << 14;

/// ... and the image and cells hold at most this many bytes per key of the batch: a
/// partitioned update reads the storage once per round (about `storage / n` bytes per key,
/// sequentially), a direct one 3 random cache lines per key. 80 MiB of storage: 2^17-key
/// batches (640 bytes per key) 47 / 24, 2^18 (320) 37 / 26, 2^19 (160) 39 / 50, 2^20 (80) 36 /
/// 62; 40 MiB with 2^19 keys (80) 53 / 73.
const AUTO_MAX_BYTES_PER_KEY: u64 = 160;

/// Preload a partition's image and cells from one key per this many of their cache lines (a
/// key reads 3 to 9 of them: its image block and its cells; the rule every slice had before
/// the static filter's was measured, not re-measured for cells).
const CELL_LINES_PER_KEY: usize = 4;

/// The bytes of a cell filter's image and cells per image byte (`1 + c`).
fn storage_factor(p: &Params) -> u64 {
    1 + u64::from(p.kind.cell_bits().bits())
}

impl Partitioning {
    /// Whether a cell write of `n` keys into a filter with `params` is partitioned, by the mode
    /// and, in the automatic mode, by the rule alone.
    pub(crate) fn partitions_cells(&self, params: &Params, n: usize) -> bool {
        let storage = params.byte_len() * storage_factor(params);
        match self.mode {
            PartitionMode::Direct => false,
            PartitionMode::Partitioned => n > 0,
            PartitionMode::Auto => {
                self.past_cells_floor(storage)
                    && n >= AUTO_MIN_KEYS
                    && storage <= (n as u64).saturating_mul(AUTO_MAX_BYTES_PER_KEY)
            }
        }
    }

    /// Whether image and cells of `storage` bytes lie past the automatic rule's floor, under
    /// which a cell write is never partitioned.
    fn past_cells_floor(&self, storage: u64) -> bool {
        storage
            > (self.caches.llc as u64 / AUTO_LLC_DIVISOR).min(self.caches.l2 as u64 * AUTO_MAX_L2S)
    }

    /// The mode of one cell write of `n` keys (`parallel`: on every core), timed where the
    /// automatic mode measures it: past the rule's floor, this process's timings of calls of
    /// the size decide, as for the static filter's lookups and inserts (`measure.rs`).
    pub(crate) fn choose_cells(&self, params: &Params, n: usize, parallel: bool) -> Timed {
        let rule = self.partitions_cells(params, n);
        let storage = params.byte_len() * storage_factor(params);
        match self.mode {
            PartitionMode::Auto if self.past_cells_floor(storage) => {
                Timed::auto(Op::CellWrite, parallel, storage, n, rule)
            }
            _ => Timed::fixed(rule),
        }
    }

    /// The plan of a partitioned cell write: as [`Partitioning::plan`], with slices of
    /// `slice_bytes` (default half the L2) of image *and cells* together.
    pub(crate) fn cells_plan(
        &self,
        params: &Params,
        n: usize,
        threads: usize,
        min_parts: usize,
    ) -> Plan {
        let slice = match self.slice_bytes {
            0 => self.caches.l2 / 2,
            s => s,
        };
        let image_slice = (slice as u64 / storage_factor(params)) as usize;
        Partitioning {
            slice_bytes: image_slice.max(1),
            ..*self
        }
        .plan(params, n, threads, min_parts)
    }
}

/// One partition's words: its first block, image and cells.
type Part<'w> = (u32, &'w mut [u32], &'w mut [u32]);

/// Splits the image and cells into the partitions' block ranges.
fn parts<'w>(
    plan: &Plan,
    params: &Params,
    mut image: &'w mut [u32],
    mut cells: &'w mut [u32],
) -> Vec<Part<'w>> {
    let per = params.layout.block_u32s();
    let cper = per * params.kind.cell_bits().bits() as usize;
    let bpp = plan.blocks_per_part() as usize;
    let mut v = Vec::with_capacity(plan.parts());
    for p in 0..plan.parts() {
        let blocks = bpp.min(image.len() / per);
        let (a, b) = image.split_at_mut(blocks * per);
        let (c, d) = cells.split_at_mut(blocks * cper);
        v.push(((p * bpp) as u32, a, c));
        image = b;
        cells = d;
    }
    v
}

/// Writes the values of one round's keys (`w`'s of keys `start ..`) in partition order:
/// partition `p`'s from `value_start[p]` on, producer by producer, in input order within a
/// producer (the order of `staged`).
fn scatter_values(
    plan: &Plan,
    scratch: &mut Scratch,
    value_start: &[usize],
    w: Write<'_>,
    start: usize,
    len: usize,
    parallel: bool,
) {
    let producers = len.div_ceil(plan.task_keys);
    let Scratch {
        scatters,
        ids,
        values,
        ..
    } = scratch;
    values.clear();
    values.resize(len, 0);
    // Each key's slot is its own (the cursors of different producers and partitions never
    // meet), so tasks write disjoint words; atomics make that safe to express.
    let slots = crate::shared::as_atomic(values);
    let (scatters, ids) = (&scatters[..producers], &ids[..len]);
    let task = plan.task_keys;
    let run = |j: usize| {
        let mut cursors = cursors_of(plan, scatters, value_start, j);
        for (i, &p) in ids.iter().enumerate().skip(j * task).take(task) {
            let c = &mut cursors[p as usize];
            slots[*c as usize].store(
                w.values.get(start + i),
                core::sync::atomic::Ordering::Relaxed,
            );
            *c += 1;
        }
    };
    if parallel {
        (0..producers).into_par_iter().for_each(run);
    } else {
        (0..producers).for_each(run);
    }
}

/// Partitioned cell write `w` of every key, in parallel if `parallel`: the image and cells end
/// exactly as after the core's key-by-key updates in input order (see the module
/// documentation). For deletes, bit `i % 64` of `refused[i / 64]` is set for each refused key
/// (`refused` is one bit per key, cleared by the caller); the result is the number of refused
/// keys (0 for the other writes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn update(
    probe: &Probe,
    kf: &KindFns,
    w: Write<'_>,
    plan: &Plan,
    mut filter: CellsMut<'_>,
    keys: Keys<'_>,
    refused: &mut [u64],
    parallel: bool,
) -> u64 {
    let n = keys.len();
    let remove = w.op == DEC;
    let per_key = w.per_key();
    if n == 0 {
        return 0;
    }
    let params = *filter.params();
    let mut scratch = Scratch::take(plan, n, remove || per_key);
    let (image, cells) = filter.parts_mut();
    let mut parts = parts(plan, &params, image, cells);
    let mut total = 0;
    let mut start = 0;
    while start < n {
        let len = (n - start).min(plan.round_keys);
        let round = keys.slice(start..start + len);
        scratch.scatter(
            probe,
            plan,
            (round, params.seed),
            remove || per_key,
            parallel,
        );
        let producers = len.div_ceil(plan.task_keys);
        // Each partition's keys, where its values start, and for deletes where its refusal
        // bits start (64-aligned, so that partitions write whole words of their own).
        let counts: Vec<usize> = (0..plan.parts())
            .map(|p| {
                scratch.scatters[..producers]
                    .iter()
                    .map(|s| s.count(p))
                    .sum()
            })
            .collect();
        let (mut part_start, mut value_start) = (Vec::new(), Vec::new());
        let (mut at, mut vat) = (0usize, 0usize);
        for &c in &counts {
            part_start.push(at);
            value_start.push(vat);
            if remove {
                at += c.next_multiple_of(64);
            }
            vat += c;
        }
        part_start.push(at);
        value_start.push(vat);
        if per_key {
            scatter_values(plan, &mut scratch, &value_start, w, start, len, parallel);
        }
        scratch.answers.clear();
        scratch.answers.resize(at / 64, 0);
        let one = [if per_key { 0 } else { w.values.get(0) }];
        let scatters = &scratch.scatters[..producers];
        let values = &scratch.values;
        let mut work = Vec::with_capacity(plan.parts());
        let mut rest = &mut scratch.answers[..];
        for (p, part) in parts.iter_mut().enumerate() {
            let (a, b) = rest.split_at_mut((part_start[p + 1] - part_start[p]) / 64);
            work.push((p, counts[p], part, a));
            rest = b;
        }
        let run_part =
            |(stage, no): &mut (Vec<u64>, Vec<u32>),
             (p, count, (first, image, cells), bits): (usize, usize, &mut Part<'_>, &mut [u64])|
             -> u64 {
                if count == 0 {
                    return 0;
                }
                if worth_preloading(count, image.len() + cells.len(), CELL_LINES_PER_KEY) {
                    preload(image);
                    preload(cells);
                }
                let (mut at, mut refusals) = (0usize, 0u64);
                staged(scatters, p, stage, |hashes| {
                    no.clear();
                    let vals = if per_key {
                        &values[value_start[p] + at..value_start[p] + at + hashes.len()]
                    } else {
                        &one[..]
                    };
                    // SAFETY: `kf` belongs to an available path (the caller took it from
                    // `kind_fns`); `image` and `cells` are the whole blocks `first ..` of this
                    // filter that this partition owns, cut from its exclusively borrowed words;
                    // the kernel checks each hash's block against that range (every hash of this
                    // partition is in it) and the values' count.
                    unsafe { (kf.cells)(w.op, params, *first, image, cells, hashes, vals, no) };
                    for &i in no.iter() {
                        set_bit(bits, at + i as usize);
                    }
                    refusals += no.len() as u64;
                    at += hashes.len();
                });
                refusals
            };
        let refusals: u64 = if parallel {
            work.into_par_iter()
                .map_init(|| (Vec::with_capacity(STAGE), Vec::new()), run_part)
                .sum()
        } else {
            let mut st = (Vec::with_capacity(STAGE), Vec::new());
            work.into_iter().map(|w| run_part(&mut st, w)).sum()
        };
        if refusals > 0 {
            gather_refusals(plan, &scratch, &part_start, start, len, refused, parallel);
        }
        total += refusals;
        start += len;
    }
    scratch.give_back();
    total
}

/// Gathers one round's refusal bits (partition order, from `part_start[p]` for partition `p`)
/// into input order: `refused`'s words of keys `start .. start + len`.
fn gather_refusals(
    plan: &Plan,
    scratch: &Scratch,
    part_start: &[usize],
    start: usize,
    len: usize,
    refused: &mut [u64],
    parallel: bool,
) {
    let producers = len.div_ceil(plan.task_keys);
    // Rounds and tasks are multiples of 64 keys: whole words.
    super::run::gather_bits(
        plan,
        &scratch.scatters[..producers],
        part_start,
        &scratch.answers,
        &scratch.ids[..len],
        &mut refused[start / 64..(start + len).div_ceil(64)],
        parallel,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CacheSizes;
    use bloomlanes_core::{CounterBits, FilterKind, Layout};

    #[test]
    fn auto_partitions_large_filters_with_large_batches_only() {
        let part = Partitioning {
            caches: CacheSizes {
                l2: 1 << 20,
                llc: 32 << 20,
            },
            ..Partitioning::default()
        };
        // Image bytes / 32 blocks of 8x32; 4-bit storage is 5× the image.
        let params = |image: u64| {
            Params::new(Layout::L8x32, (image / 32) as u32).with_kind(FilterKind::Counting {
                counter_bits: CounterBits::Four,
            })
        };
        let (mib, n) = (1u64 << 20, 1usize << 20);
        assert!(!part.partitions_cells(&params(mib), n), "5 MiB: in L3");
        assert!(
            part.partitions_cells(&params(4 * mib), n),
            "20 MiB, 20 B per key"
        );
        assert!(
            part.partitions_cells(&params(16 * mib), n / 2),
            "80 MiB, 160 B per key"
        );
        assert!(
            !part.partitions_cells(&params(16 * mib), n / 4),
            "80 MiB, 320 B per key"
        );
        assert!(!part.partitions_cells(&params(16 * mib), AUTO_MIN_KEYS - 1));
        // The 2-core Xeon VM: 2 MiB of L2, 480 MiB of L3 reported; 80 MiB of storage, 2^20 keys
        // (direct 21.5–21.6, partitioned 58.6–60.1 M keys/s).
        let vm = Partitioning {
            caches: CacheSizes {
                l2: 2 << 20,
                llc: 480 << 20,
            },
            ..part
        };
        assert!(vm.partitions_cells(&params(16 * mib), n));
        assert!(
            !vm.partitions_cells(&params(3 * mib), n),
            "15 MiB: in 8 L2s"
        );
        let forced = Partitioning {
            mode: PartitionMode::Partitioned,
            ..part
        };
        assert!(forced.partitions_cells(&params(mib), 1));
        assert!(!forced.partitions_cells(&params(mib), 0));
        let direct = Partitioning {
            mode: PartitionMode::Direct,
            ..part
        };
        assert!(!direct.partitions_cells(&params(16 * mib), n));
    }

    #[test]
    fn cell_slices_hold_image_and_cells() {
        let part = Partitioning {
            slice_bytes: 160 << 10,
            ..Partitioning::default()
        };
        let p = Params::new(Layout::L8x32, 1 << 16).with_kind(FilterKind::Counting {
            counter_bits: CounterBits::Four,
        });
        // 160 KiB of image and counters = 32 KiB of image = 1024 blocks.
        let plan = part.cells_plan(&p, 1 << 20, 1, 1);
        assert_eq!(plan.blocks_per_part(), 1024);
        assert_eq!(plan.parts(), 64);
    }
}
