//! Partitioned bulk operations: past the random-access wall for filters larger than the caches.
//!
//! A direct bulk lookup reads one random block per key; once the filter is larger than the
//! last-level cache every key waits for DRAM, and the rate is the random-access rate however
//! well the reads overlap. A partitioned operation instead hashes a large batch, scatters the
//! hashes by filter region (partitions of `2^k` consecutive blocks whose slice of the filter
//! fits in L2), and then probes (or inserts) partition by partition: the blocks it touches at
//! any moment lie in one slice, which is read from memory once per batch, sequentially, and
//! then hit in L2 by the partition's keys. Lookups then gather the answers back into input
//! order (bytes or a bitmap), or list the positions of the keys that may be present (the
//! screening form: [`Probe::contains_positions`]). The idea is Schmidt, Bandle and Giceva's
//! ("A four-dimensional analysis of partitioned approximate filters", VLDB 2021), on the same
//! vocabulary as the GPU's partitioned lookups (`bloomlanes-gpu`, `lookup.rs`).
//!
//! # The passes
//!
//! 1. Scatter: the keys are hashed 256 at a time and each hash is appended to its partition's
//!    write-combining line; full lines go to pages chained per partition (non-temporal stores
//!    when the scratch outgrows half the L2). Lookups also write each key's partition
//!    (2 bytes). All threads: each task scatters its own contiguous range of the batch.
//! 2. Probe or insert: partition by partition (all threads: one task per partition), with the
//!    vector kernels of the [`Probe`]'s path; inserts own their partition's blocks, so no
//!    atomics. Answers are bits in partition order.
//! 3. Gather (lookups): the keys in input order, one cursor per partition; each task gathers
//!    its own range of the batch.
//!
//! # Memory traffic per key (counted from the algorithm)
//!
//! For `n` integer keys and a filter of `F` bytes, one round (see [`Partitioning::round_keys`]),
//! with `F' = F × (1 − e^(−n / lines)) / n` the filter bytes read per key (each cache line of
//! the filter that a key of the round hits is read once):
//!
//! - Lookup into bytes: scatter reads the key (8) and writes the hash (8, streamed) and the
//!   partition id (2, plus 2 read for ownership); the probe reads the hash (8) and `F'`, and
//!   writes the answer bit (1/8, plus 1/8 read); the gather reads the id (2) and the bit
//!   (1/8) and writes the byte (1, plus 1 read). In all `32.5 + F'` bytes. Into a bitmap:
//!   `30.6 + F'`. Positions: the bitmap's, plus 4 bytes per maybe-present key.
//! - Insert: scatter 8 + 8, the insert pass reads the hash (8) and reads and writes back the
//!   filter lines hit (`2F'`): `24 + 2F'` bytes.
//! - 1 GiB filter (8x32), `n = 2^26` keys: `F' ≈ 15.7`, so 48.2 bytes per key into bytes, 46.3
//!   into a bitmap, 55.4 per insert. The direct paths move 9 bytes per key but one random
//!   64-byte line each, bound by the random-access rate instead. Measured bounds: BENCHMARKS.md.
//!
//! # When [`PartitionMode::Auto`] partitions
//!
//! When the filter is larger than [`PartitionAuto::min_filter_bytes`] and the batch holds at
//! least [`PartitionAuto::min_keys`] keys: [`PartitionAuto::resident_min_keys`] for a filter
//! of at most [`PartitionAuto::resident_bytes`], which the direct path finds mostly in the
//! last-level cache, and [`PartitionAuto::far_min_keys`] past [`PartitionAuto::far_bytes`].
//! Not a bound on filter bytes per key: the partitioned rate grows with the
//! batch (its per-call and per-partition costs amortise) and does not fall with the filter, while
//! the direct rate falls to the random-access rate once the filter is out of the caches' reach.
//! The defaults come from the sweep of the `partition` benchmark (issue #25). The rule decides
//! a size class's first calls; from then on each process takes the mode its own timings found
//! faster for that class (`measure.rs`): the better mode moves with the machine and its load.

mod cells;
mod gather;
mod measure;
mod par_insert;
mod run;
mod scatter;

use bloomlanes_core::{FilterMut, FilterRef, Keys, Params};

pub use crate::cache::CacheSizes;
use crate::Probe;
pub(crate) use run::Out;
use scatter::PartOf;

pub(crate) use cells::update as cells_update;
pub use measure::set_partition_measurement;
use measure::{Op, Timed};
pub(crate) use par_insert::par_insert;

/// Frees the scratch memory that partitioned operations keep for reuse. They keep the scratch
/// of the two largest recent calls (about 10 bytes per key of a round, see
/// [`Partitioning::round_keys`]), because fresh memory must be faulted in page by page, which
/// costs about as much again as the partitioning itself.
pub fn release_partition_scratch() {
    run::release_scratch();
}

/// Whether bulk operations partition the batch by filter region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PartitionMode {
    /// Never: one random block access per key, in input order.
    Direct,
    /// Always (for tests and measurements; slow for filters that fit in the caches).
    Partitioned,
    /// Where [`PartitionAuto`] says it pays, checked by this process's own timings: of large
    /// batches (2^16 keys and more) past the rule's floor, each size class is timed both ways
    /// on its first calls and then takes the mode that was faster, trying the other one call
    /// in 64 (see [`set_partition_measurement`]).
    #[default]
    Auto,
}

/// The rule of [`PartitionMode::Auto`]: partition a batch of `n` keys for a filter of `F` bytes
/// when `F > min_filter_bytes` and `n` is at least `resident_min_keys` where `F ≤
/// resident_bytes`, `far_min_keys` where `F > far_bytes`, `min_keys` in between.
///
/// Measured with the `partition` bench (2-core Xeon VM, 2 MiB L2 per core, 480 MiB of L3 shared
/// with the host's other guests; one thread, thread CPU time, median of 3; 8x32, 2026-11-29),
/// direct / partitioned in M keys/s, lookups into bytes (inserts alike within 10 %):
///
/// | filter | 2^14 keys | 2^15 | 2^16 | 2^17 | 2^19 | 2^21 | 2^24 |
/// |---|---|---|---|---|---|---|---|
/// | 16 MiB | 134 / 93 | 141 / 86 | 92 / 68 | 94 / 69 | 103 / 83 | 98 / 101 | 95 / 104 |
/// | 64 MiB | 40 / 33 | 39 / 38 | 43 / 37 | 45 / 51 | 43 / 64 | 44 / 79 | 45 / 90 |
/// | 256 MiB | 28 / 25 | 36 / 32 | 34 / 32 | 36 / 44 | 37 / 61 | 31 / 66 | 31 / 70 |
/// | 1 GiB | 16 / 15 | 17 / 16 | 18 / 19 | 17 / 25 | 16 / 37 | 16 / 52 | 15 / 65 |
///
/// The direct rate depends on the filter only: a 16 MiB filter is mostly in the L3; from 64
/// MiB it is the random-access rate, which halves again at 1 GiB (page walks). The partitioned
/// rate grows with the batch, as its per-call and per-partition costs amortise. So the
/// least batch that pays falls as the filter grows, whatever the filter bytes per key (the
/// former rule, at most 64 of them, probed 1 GiB directly below 2^24 keys, at 0.24–0.69× of
/// the partitioned rate from 2^17 keys on). At 64 MiB the direct rate swings with the other
/// guests' use of the L3: 71–73 M keys/s in a check run half an hour later (2^15–2^17 keys;
/// partitioned 64–68 at 2^17), 43–48 in the sweep; partitioning from 2^17 keys there costs up
/// to 11 % in the one state and gains up to 1.5× (2^19–2^20) in the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionAuto {
    /// Filters of at most this many bytes are probed directly; 0 = 4 × the L2 cache, at most
    /// the last-level cache (a 1 MiB filter, 2^21-key lookups: 280 M keys/s direct, 105
    /// partitioned).
    pub min_filter_bytes: u64,
    /// Filters of at most this many bytes (mostly in the last-level cache when probed directly)
    /// partition from [`PartitionAuto::resident_min_keys`]; 0 = 16 × the L2 cache, at most the
    /// last-level cache.
    pub resident_bytes: u64,
    /// The least batch that partitions a filter of at most [`PartitionAuto::resident_bytes`].
    pub resident_min_keys: usize,
    /// The least batch that partitions a filter between the resident and the far sizes.
    pub min_keys: usize,
    /// Filters of more than this many bytes partition from [`PartitionAuto::far_min_keys`]; 0 =
    /// 256 × the L2 cache.
    pub far_bytes: u64,
    /// The least batch that partitions a filter of more than [`PartitionAuto::far_bytes`].
    pub far_min_keys: usize,
}

impl Default for PartitionAuto {
    fn default() -> Self {
        PartitionAuto {
            min_filter_bytes: 0,
            resident_bytes: 0,
            resident_min_keys: 1 << 21,
            min_keys: 1 << 17,
            far_bytes: 0,
            far_min_keys: 1 << 16,
        }
    }
}

/// `bytes`, or where it is 0, `l2s` times the L2 cache, at most `cap`.
fn or_l2s(bytes: u64, l2s: u64, caches: CacheSizes, cap: usize) -> u64 {
    match bytes {
        0 => (caches.l2 as u64 * l2s).min(cap as u64),
        b => b,
    }
}

impl PartitionAuto {
    /// Whether a filter of `filter_bytes` is past the rule's floor (so that partitioning may
    /// pay for a large enough batch).
    fn past_floor(&self, filter_bytes: u64, caches: CacheSizes) -> bool {
        filter_bytes > or_l2s(self.min_filter_bytes, 4, caches, caches.llc)
    }

    /// Whether a batch of `keys` keys for a filter of `filter_bytes` bytes is partitioned on a
    /// machine with `caches`, by the rule (the automatic mode also checks the rule against its
    /// own timings: [`PartitionMode::Auto`]).
    pub fn partitions(&self, filter_bytes: u64, caches: CacheSizes, keys: usize) -> bool {
        let least = if filter_bytes <= or_l2s(self.resident_bytes, 16, caches, caches.llc) {
            self.resident_min_keys
        } else if filter_bytes <= or_l2s(self.far_bytes, 256, caches, usize::MAX) {
            self.min_keys
        } else {
            self.far_min_keys
        };
        self.past_floor(filter_bytes, caches) && keys >= least
    }
}

/// How a [`Probe`] partitions bulk operations: the mode, the rule of the automatic mode, and
/// the sizes of the partitioned passes. `Default` is the automatic mode on this machine's
/// detected caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitioning {
    /// Whether to partition.
    pub mode: PartitionMode,
    /// The rule of [`PartitionMode::Auto`].
    pub auto: PartitionAuto,
    /// The cache sizes the rule and the sizes below go by.
    pub caches: CacheSizes,
    /// Filter bytes per partition (rounded down to a power of two of blocks, at least one
    /// block); 0 = half the L2 cache.
    pub slice_bytes: usize,
    /// Keys per round: a larger batch is partitioned a round at a time, which bounds the
    /// scratch (about 10 bytes per key of a round) at the cost of reading the filter once per
    /// round; 0 = `max(F / 16, 2^22)` keys for a filter of `F` bytes (so the filter adds at
    /// most 16 bytes of traffic per key).
    pub round_keys: usize,
    /// Keys per scatter and gather task of the all-core operations; 0 = a round's share of
    /// two tasks per thread, at least 2^14.
    pub task_keys: usize,
    /// Fewer partitions (larger slices) where the batch would leave fewer keys than this per
    /// partition on average; 0 = no such limit.
    pub min_part_keys: usize,
}

impl Default for Partitioning {
    fn default() -> Self {
        Partitioning {
            mode: PartitionMode::Auto,
            auto: PartitionAuto::default(),
            caches: CacheSizes::detected(),
            slice_bytes: 0,
            round_keys: 0,
            task_keys: 0,
            min_part_keys: 256,
        }
    }
}

/// Scratch bytes per key of a round (hash, partition id), for the choice of streaming stores.
const SCRATCH_BYTES_PER_KEY: usize = 10;

/// The most partitions (2^13: their write-combining lines take 512 KiB; partition ids are
/// `u16`).
const MAX_PARTS: usize = 1 << 13;

/// The shape of one partitioned operation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(super) part_of: PartOf,
    /// A multiple of 64.
    pub(super) round_keys: usize,
    /// A multiple of 64, at most `round_keys`.
    pub(super) task_keys: usize,
    /// Non-temporal scatter stores: where the round's scratch is larger than half the L2 (a
    /// slice's room). Written with plain stores, each scratch line is read for ownership and
    /// then evicted by the rest of the scatter before the probe pass reads it back; streamed,
    /// lookups went 38–48 → 64–67 M keys/s at 256 MiB with 2^21-key batches, 44 → 59 at 1 GiB,
    /// 61 → 87 at 64 MiB with 2^22 (2-core Xeon VM with 480 MiB of L3, where the former rule,
    /// scratch larger than the L3, never streamed; thread CPU time).
    pub(super) stream: bool,
}

impl Plan {
    /// Blocks per partition (the last may have fewer).
    pub(super) fn blocks_per_part(&self) -> u64 {
        1 << self.part_of.bits
    }

    /// The number of partitions.
    pub(super) fn parts(&self) -> usize {
        self.part_of.blocks.div_ceil(self.blocks_per_part()) as usize
    }
}

impl Partitioning {
    /// The plan of a partitioned operation on `n` keys (at least one) with `threads` threads;
    /// at least `min_parts` partitions where the filter has that many blocks.
    pub(crate) fn plan(&self, params: &Params, n: usize, threads: usize, min_parts: usize) -> Plan {
        let blocks = u64::from(params.blocks);
        let block_bytes = params.layout.block_bytes() as u64;
        let filter_bytes = params.byte_len();
        let slice = match self.slice_bytes {
            0 => self.caches.l2 as u64 / 2,
            s => s as u64,
        };
        let parts_for = |bits: u32| blocks.div_ceil(1u64 << bits) as usize;
        // Slices of at most `slice` bytes; then fewer partitions where there would be more than
        // the cap; then more where there would be fewer than `min_parts`.
        let mut bits = (slice / block_bytes).max(1).ilog2().min(32);
        let min_parts = min_parts.min(MAX_PARTS);
        let cap = match self.min_part_keys {
            0 => MAX_PARTS,
            k => (n / k).clamp(min_parts.max(1), MAX_PARTS),
        };
        while bits < 32 && parts_for(bits) > cap {
            bits += 1;
        }
        while bits > 0 && parts_for(bits) < min_parts {
            bits -= 1;
        }
        let round_keys = match self.round_keys {
            0 => ((filter_bytes / 16) as usize).max(1 << 22),
            r => r,
        }
        .clamp(64, 1 << 31)
        .next_multiple_of(64);
        let round = round_keys.min(n.next_multiple_of(64));
        let task_keys = if threads <= 1 {
            round_keys
        } else {
            match self.task_keys {
                0 => round.div_ceil(2 * threads).max(1 << 14),
                t => t,
            }
            .next_multiple_of(64)
            .min(round_keys)
        };
        Plan {
            part_of: PartOf { blocks, bits },
            round_keys,
            task_keys,
            stream: round.saturating_mul(SCRATCH_BYTES_PER_KEY) > self.caches.l2 / 2,
        }
    }

    /// The mode of one lookup or insert call of `n` keys (`parallel`: on every core), timed
    /// where the automatic mode measures it.
    fn choose(&self, op: Op, parallel: bool, params: &Params, n: usize) -> Timed {
        let bytes = params.byte_len();
        match self.mode {
            PartitionMode::Auto if self.auto.past_floor(bytes, self.caches) => {
                Timed::auto(op, parallel, bytes, n, self.partitions(params, n))
            }
            _ => Timed::fixed(self.partitions(params, n)),
        }
    }

    /// Whether a lookup or insert of `n` keys into a filter with `params` is partitioned, by
    /// the mode and, in the automatic mode, by the rule alone.
    pub fn partitions(&self, params: &Params, n: usize) -> bool {
        match self.mode {
            PartitionMode::Direct => false,
            PartitionMode::Partitioned => n > 0,
            PartitionMode::Auto => self.auto.partitions(params.byte_len(), self.caches, n),
        }
    }
}

impl Probe {
    /// This probe with the partitioning settings `partitioning`.
    pub fn with_partitioning(mut self, partitioning: Partitioning) -> Probe {
        self.partitioning = partitioning;
        self
    }

    /// The partitioning settings of this probe.
    pub fn partitioning(&self) -> &Partitioning {
        &self.partitioning
    }

    /// Looks up every key and lists the positions of those that may be present (the screening
    /// form): `out` is cleared and receives each such `i` in ascending order.
    ///
    /// # Panics
    /// If the batch holds more than 2^32 keys.
    pub fn contains_positions(&self, f: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut Vec<u32>) {
        self.positions(f, keys, out, false)
    }

    /// [`Probe::contains_positions`] on every core.
    ///
    /// # Panics
    /// If the batch holds more than 2^32 keys.
    pub fn par_contains_positions(
        &self,
        f: FilterRef<'_, u32>,
        keys: Keys<'_>,
        out: &mut Vec<u32>,
    ) {
        self.positions(f, keys, out, true)
    }

    fn positions(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut Vec<u32>, par: bool) {
        assert!(
            keys.len() as u64 <= 1 << 32,
            "positions are u32: at most 2^32 keys per batch"
        );
        out.clear();
        let mut bits = vec![0u64; keys.len().div_ceil(64)];
        if par {
            self.par_contains_bitmap(filter, keys, &mut bits);
        } else {
            self.contains_bitmap(filter, keys, &mut bits);
        }
        gather::positions(&bits, 0, out);
    }

    /// The partitioned lookup, if the settings say so for this batch; if not taken, the
    /// direct lookup's timer, which the caller stops ([`Timed::done`]) after running it.
    pub(crate) fn partitioned_contains(
        &self,
        filter: FilterRef<'_, u32>,
        keys: Keys<'_>,
        out: Out<'_>,
        parallel: bool,
    ) -> Option<Timed> {
        let n = keys.len();
        let timed = self
            .partitioning
            .choose(Op::Lookup, parallel, filter.params(), n);
        if !timed.partition() {
            return Some(timed);
        }
        let threads = if parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        let plan = self.partitioning.plan(filter.params(), n, threads, 1);
        run::contains(self, &plan, filter, keys, out, parallel);
        timed.done();
        None
    }

    /// The one-thread partitioned insert, if the settings say so for this batch; if not
    /// taken, gives the filter back with the direct insert's timer (see
    /// [`Probe::partitioned_contains`]).
    pub(crate) fn partitioned_insert<'f>(
        &self,
        filter: FilterMut<'f, u32>,
        keys: Keys<'_>,
    ) -> Option<(FilterMut<'f, u32>, Timed)> {
        let n = keys.len();
        let timed = self
            .partitioning
            .choose(Op::Insert, false, filter.params(), n);
        if !timed.partition() {
            return Some((filter, timed));
        }
        let plan = self.partitioning.plan(filter.params(), n, 1, 1);
        run::insert(self, &plan, filter, keys, false);
        timed.done();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// The caches of the machine the rule was measured on: 2 MiB of L2 per core, 480 MiB of L3.
    const XEON_VM: CacheSizes = CacheSizes {
        l2: 2 << 20,
        llc: 480 << 20,
    };

    /// Points of the sweep behind [`PartitionAuto`]'s table where one mode was more than 5 %
    /// ahead: the rule picks that mode (at 64 MiB and 2^17 keys only in the sweep's state of the
    /// L3, see [`PartitionAuto`]).
    #[test]
    fn auto_makes_the_measured_choice() {
        let auto = PartitionAuto::default();
        let parts = |mib: u64, log2_keys: u32| auto.partitions(mib * MIB, XEON_VM, 1 << log2_keys);
        // (filter MiB, log2 batches where direct led, where partitioned led)
        let led: [(u64, &[u32], &[u32]); 4] = [
            (16, &[14, 17, 19], &[22, 24]),
            (64, &[14, 16], &[17, 21]),
            (256, &[14, 15], &[17, 21]),
            (1024, &[15], &[16, 17, 21, 24]),
        ];
        for (mib, direct, parted) in led {
            for &k in direct {
                assert!(!parts(mib, k), "{mib} MiB, 2^{k} keys: direct");
            }
            for &k in parted {
                assert!(parts(mib, k), "{mib} MiB, 2^{k} keys: partitioned");
            }
        }
        // In L2 or L3 (1 MiB, 2^21-key lookups: 280 M keys/s direct, 105 partitioned).
        assert!(!parts(1, 21));
        assert!(!parts(8, 24));
    }

    /// Zero sizes follow the caches (4 and 16 L2s, at most the last-level cache); set sizes are
    /// taken as they are.
    #[test]
    fn auto_sizes_follow_the_caches() {
        let auto = PartitionAuto::default();
        let small = CacheSizes {
            l2: 1 << 20,
            llc: 8 << 20,
        };
        // Floor min(4 MiB, 8 MiB); resident up to min(16 MiB, 8 MiB).
        assert!(!auto.partitions(4 * MIB, small, 1 << 24));
        assert!(auto.partitions(5 * MIB, small, 1 << 21));
        assert!(!auto.partitions(5 * MIB, small, (1 << 21) - 1));
        assert!(auto.partitions(9 * MIB, small, 1 << 17));
        assert!(!auto.partitions(9 * MIB, small, (1 << 17) - 1));
        let tiny_llc = CacheSizes {
            l2: 1 << 20,
            llc: 2 << 20,
        };
        assert!(auto.partitions(3 * MIB, tiny_llc, 1 << 17));
        let set = PartitionAuto {
            min_filter_bytes: 100 * MIB,
            resident_bytes: 200 * MIB,
            ..auto
        };
        assert!(!set.partitions(100 * MIB, XEON_VM, 1 << 24));
        assert!(!set.partitions(200 * MIB, XEON_VM, (1 << 21) - 1));
        assert!(set.partitions(200 * MIB, XEON_VM, 1 << 21));
        assert!(set.partitions(201 * MIB, XEON_VM, 1 << 17));
        // Past 256 L2s (512 MiB here), from 2^16 keys.
        assert!(!auto.partitions(512 * MIB, XEON_VM, 1 << 16));
        assert!(auto.partitions(513 * MIB, XEON_VM, 1 << 16));
        assert!(!auto.partitions(513 * MIB, XEON_VM, (1 << 16) - 1));
    }
}
