//! How an insert of device-resident u64 keys or hashes sets the bits of a static image (a static
//! filter, a window's generation): the paths ([`InsertKernel`]), what one does with a batch
//! ([`InsertPlan`]), and the cost model by which [`InsertKernel::Auto`] picks the fastest.
//!
//! # Memory traffic per key (counted from the algorithms; `F` image bytes, `z` blocks, `n` keys)
//!
//! - Direct (`Atomic`, `BulkReduce`): the key (8 bytes) and a read-modify-write of its block,
//!   in L2 when the image fits there, else a random DRAM access per key.
//! - Grouped passes: the histogram reads the keys (8), each scatter reads 8 and writes 8. The
//!   one-level grouping (`Partitioned`) scatters into up to 2048 partitions in one pass; past a
//!   few hundred, a tile of 4096 keys writes runs of a few hashes and the pass slows (measured on
//!   an H100: 2.98 ms per 2^28 keys at 16 partitions, 7.37 ms at 492). The radix grouping
//!   (`Radix`, `Sliced`) scatters in one or two passes of at most [`RADIX_FANOUT`] partitions
//!   each: 8 + 16 or 8 + 16 + 16 bytes, with runs of tens of hashes whatever the filter's size.
//! - Grouped bulk insert (`Partitioned`, `Radix`): the grouped hashes (8) and each touched block
//!   read and written once per sweep, `2 F (1 − e^(−n/z)) / n`, at the rate of L2-resident
//!   reductions while the partition being swept fits in L2.
//! - Slice insert (`Sliced`): the grouped hashes (8), the image read and written once in 16-byte
//!   vectors (`2 F / n`), the lane bits ORed in shared memory.
//!
//! At 8x32 and `n = 2^28` on an H200 (4.8 TB/s HBM3e, ~3.79 TB/s copy rate): 2 GiB, one radix
//! level: 32 + 8 + 16 bytes per key; 64 GiB, two levels: 48 + 8 bytes and one sector read and
//! written per key (`z = 2^31`, `1 − e^(−1/8)` = 12 % of the blocks touched: 60 bytes per key).
//!
//! # The model
//!
//! [`InsertKernel::Auto`] estimates every candidate's device time for the batch from the
//! constants below (rates of the H200 and H100 runs in BENCHMARKS.md and issue #25; the slice
//! insert's are estimates until measured) and takes the smallest. `gpu_bench SECTIONS=insert`
//! prints each path's measured rate beside its estimate and what `Auto` picked.

use crate::kernel::{MAX_PARTITIONS, SCATTER_KEYS_PER_THREAD, THREADS};

/// How inserts of u64 keys and hashes set bits. Every choice gives the same filter bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum InsertKernel {
    /// One atomic OR per 64-bit word of the block (two 32-bit lanes share one).
    Atomic,
    /// One TMA bulk reduction (`cp.reduce.async.bulk … .or.b64`) of the whole block mask per key,
    /// staged in shared memory (sm_90+; falls back to atomics on older devices).
    BulkReduce,
    /// Device-resident batches are first grouped by filter region in one pass into up to 2048
    /// partitions (a contiguous range of blocks of at most
    /// [`GpuImage::partition_bytes`](crate::GpuImage::partition_bytes) each), then the grouped
    /// hashes are inserted with the bulk-reduce kernel: CTAs run roughly in order, so the
    /// blocks being updated at any moment are L2-resident. One histogram pass, a scan, a
    /// scatter pass (grouped per CTA in shared memory so writes coalesce), the insert.
    ///
    /// The scratch buffer is sized to the batch (8 bytes per key; 16 for the two-level radix
    /// grouping), so the filter is swept once per batch;
    /// [`GpuImage::set_scratch_keys`](crate::GpuImage::set_scratch_keys) caps it (larger
    /// batches then go through in chunks, one sweep each). It is allocated on first use and kept
    /// until [`GpuImage::release_scratch`](crate::GpuImage::release_scratch) or the filter is
    /// dropped. When the device cannot hold it, the request is halved (one more sweep per
    /// halving) down to 2^20 keys; below that the insert fails with
    /// [`GpuError::OutOfMemory`](crate::GpuError::OutOfMemory) naming the bytes asked for and
    /// free (no bits are set). Inserts from host memory (`insert`, `insert_pinned`), which are
    /// bound by the host-to-device copy, use the bulk-reduce kernel instead.
    Partitioned,
    /// [`InsertKernel::Partitioned`] with a radix grouping whose every pass scatters into at most
    /// 256 partitions: up to 256 partitions in one pass, up to 32,768 in two (coarse partitions,
    /// then each coarse partition's fine ones), so that a tile's runs stay tens of hashes long
    /// however large the filter. Partitions of at most
    /// [`GpuImage::partition_bytes`](crate::GpuImage::partition_bytes); the grouped hashes are
    /// inserted with the bulk-reduce kernel.
    Radix,
    /// The radix grouping, then one CTA per slice of the image (about 110 KiB of whole blocks on
    /// an H100 or H200, two per SM) copies its blocks into shared memory, ORs in the grouped
    /// hashes that fall there and copies them back: the image is read and written once in
    /// 16-byte vectors, whatever the keys, so it pays where the batch touches most blocks.
    Sliced,
    /// The default: the fastest of [`InsertKernel::BulkReduce`], [`InsertKernel::Radix`] and
    /// [`InsertKernel::Sliced`] for this batch and filter by the cost model (see
    /// [`GpuImage::insert_plan`](crate::GpuImage::insert_plan)). If the scratch buffer cannot
    /// be allocated, it falls back to the bulk-reduce kernel instead of failing.
    #[default]
    Auto,
}

impl InsertKernel {
    /// Every path `Auto` may choose or a caller may force, without `Auto`.
    pub const PATHS: [InsertKernel; 5] = [
        InsertKernel::Atomic,
        InsertKernel::BulkReduce,
        InsertKernel::Partitioned,
        InsertKernel::Radix,
        InsertKernel::Sliced,
    ];

    /// The candidates of [`InsertKernel::Auto`].
    const AUTO_CANDIDATES: [InsertKernel; 3] = [
        InsertKernel::BulkReduce,
        InsertKernel::Radix,
        InsertKernel::Sliced,
    ];

    /// The path's name (as `gpu_bench` prints it).
    pub const fn name(self) -> &'static str {
        match self {
            InsertKernel::Atomic => "atomic",
            InsertKernel::BulkReduce => "bulk reduce",
            InsertKernel::Partitioned => "partitioned",
            InsertKernel::Radix => "radix",
            InsertKernel::Sliced => "sliced",
            InsertKernel::Auto => "auto",
        }
    }

    /// The kernel of an unpartitioned insert under this choice.
    pub(crate) fn direct(self) -> crate::launch::DirectInsert {
        match self {
            InsertKernel::Atomic => crate::launch::DirectInsert::Atomic,
            _ => crate::launch::DirectInsert::BulkReduce,
        }
    }
}

/// Most partitions one pass of the radix grouping scatters into.
pub(crate) const RADIX_FANOUT: u32 = crate::kernel::RADIX_FANOUT;
/// Most partitions of the radix grouping (two passes); fewer when the device's shared memory
/// cannot hold that many histogram bins in one CTA.
pub(crate) const RADIX_MAX_PARTITIONS: u32 = 32768;

// Two balanced levels of at most RADIX_FANOUT each reach RADIX_MAX_PARTITIONS, and level 2's
// segments fit the scan's one-thread-per-coarse-partition layout.
const _: () =
    assert!(RADIX_FANOUT <= THREADS && RADIX_FANOUT * RADIX_FANOUT >= RADIX_MAX_PARTITIONS);
const _: () = assert!(RADIX_MAX_PARTITIONS >= MAX_PARTITIONS);

// ---- the cost model's constants (8x32, per key; the other layouts scale by their block) ----

/// Direct bulk-reduce inserts into an image of at most half the L2, keys per ns (H200, 1 MiB:
/// 65.84 G keys/s).
const BULK_IN_L2_KEYS_PER_NS: f64 = 62.0;
/// Direct bulk-reduce inserts into an image past the L2: one random DRAM read-modify-write per
/// key (H200, 32 GiB: 15.44; H100 from 256 MiB to 8 GiB: 12.7 to 14.6).
const BULK_IN_DRAM_KEYS_PER_NS: f64 = 15.4;
/// Direct atomic inserts, in L2 and past it (H100: 21.77 at 1 MiB, 9.9 to 10.5 past L2).
const ATOMIC_IN_L2_KEYS_PER_NS: f64 = 21.8;
const ATOMIC_IN_DRAM_KEYS_PER_NS: f64 = 10.0;
/// What the grouping passes stream, bytes per ns (fitted to the H200's partitioned insert at
/// 256 MiB, 39.91 G keys/s with 13 partitions).
const STREAM_BYTES_PER_NS: f64 = 3000.0;
/// The extra cost of one run of a scatter tile, as bytes streamed (fitted to the H100's
/// partition phase: 2.98 ms per 2^28 keys at 16 partitions, 4.34 at 123, 7.37 at 492).
const RUN_BYTES: f64 = 320.0;
/// The grouped bulk insert: keys per ns while its partitions are L2-resident, plus its sweep of
/// the touched blocks at this many bytes per ns (fitted to the H200's partitioned insert at
/// 256 MiB and 2 GiB; 8 GiB then comes out within 13 %).
const GROUPED_KEYS_PER_NS: f64 = 75.0;
const GROUPED_SWEEP_BYTES_PER_NS: f64 = 2500.0;
/// The slice insert: hashes scanned per ns (read from L2, tested against the slice), hashes ORed
/// into shared memory per ns, and the image's copy in and out, bytes per ns. Not measured yet:
/// the first two are set low on purpose, so that `Auto` takes the measured paths until a device
/// run says otherwise (`gpu_bench SECTIONS=insert` prints the slice insert's rate beside them).
const SLICE_SCAN_KEYS_PER_NS: f64 = 500.0;
const SLICE_OR_KEYS_PER_NS: f64 = 120.0;
const SLICE_COPY_BYTES_PER_NS: f64 = 3300.0;
/// The fixed cost of one kernel launch in a sequence, ns.
const LAUNCH_NS: f64 = 5000.0;
/// An image of at most this fraction of the L2 counts as L2-resident for direct inserts.
const IN_L2_FRACTION: f64 = 0.5;
/// L2 size assumed when the device does not report it, and the partition size then.
pub(crate) const FALLBACK_L2_BYTES: u64 = 32 << 20;

/// The device as the model and the plans see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceShape {
    /// Streaming multiprocessors.
    pub(crate) sms: u32,
    /// L2 cache bytes (0 if unknown).
    pub(crate) l2_bytes: u64,
    /// Most dynamic shared memory one CTA may opt in to.
    pub(crate) smem_optin: u64,
    /// Shared memory of one SM.
    pub(crate) smem_per_sm: u64,
}

impl DeviceShape {
    /// The L2 size, or [`FALLBACK_L2_BYTES`] when the device does not report it.
    pub(crate) fn l2(&self) -> u64 {
        if self.l2_bytes == 0 {
            FALLBACK_L2_BYTES
        } else {
            self.l2_bytes
        }
    }

    /// Shared memory of one slice-insert CTA: two per SM (each also has 1 KiB reserved), within
    /// the opt-in limit.
    pub(crate) fn slice_bytes(&self) -> u64 {
        self.smem_optin
            .min((self.smem_per_sm / 2).saturating_sub(1024))
    }

    /// Most partitions of the radix grouping: its histogram counts them in one CTA's shared
    /// memory (a word each).
    pub(crate) fn max_radix_parts(&self) -> u32 {
        let bins = self.smem_optin.saturating_sub(1024) / 4;
        bins.clamp(1, u64::from(RADIX_MAX_PARTITIONS)) as u32
    }
}

/// What an insert is planned for: the image inserted into and the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Batch {
    /// Blocks of the image (of one generation).
    pub(crate) blocks: u32,
    /// Bytes per block.
    pub(crate) block_bytes: u64,
    /// Keys per grouping (the batch, or the scratch cap if smaller).
    pub(crate) keys: u64,
}

impl Batch {
    fn image_bytes(&self) -> u64 {
        u64::from(self.blocks) * self.block_bytes
    }
}

/// What an insert of a batch of device-resident u64 keys or hashes does under an
/// [`InsertKernel`] ([`GpuImage::insert_plan`](crate::GpuImage::insert_plan)): the path, how it
/// groups the batch, and the cost model's estimate of its device time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InsertPlan {
    /// The path (never [`InsertKernel::Auto`]).
    pub kernel: InsertKernel,
    /// Partitions the batch is grouped into (0 for the direct paths).
    pub partitions: u32,
    /// Of a two-level radix grouping, the coarse partitions (each of `partitions / coarse` fine
    /// ones); 0 for one level.
    pub coarse: u32,
    /// Of the slice insert, blocks per slice (one CTA each); else 0.
    pub slice_blocks: u64,
    /// The cost model's estimate of the insert's device time, in milliseconds.
    pub estimate_ms: f64,
}

impl InsertPlan {
    /// Grouping passes: 0 (direct), 1 or 2.
    pub fn levels(&self) -> u32 {
        match (self.partitions, self.coarse) {
            (0, _) => 0,
            (_, 0) => 1,
            _ => 2,
        }
    }

    /// Partitions of each coarse partition (of a two-level grouping; else all of them).
    pub fn fine(&self) -> u32 {
        self.partitions
            .checked_div(self.coarse)
            .unwrap_or(self.partitions)
    }
}

/// The plan of `kernel` for `batch` on `dev`, with partitions of `partition_bytes` for the
/// grouped bulk insert paths.
pub(crate) fn plan(
    kernel: InsertKernel,
    dev: &DeviceShape,
    batch: &Batch,
    partition_bytes: u64,
) -> InsertPlan {
    let direct = |kernel, ns_per_key: f64| InsertPlan {
        kernel,
        partitions: 0,
        coarse: 0,
        slice_blocks: 0,
        estimate_ms: ms(batch.keys as f64 * ns_per_key + LAUNCH_NS),
    };
    let in_l2 = batch.image_bytes() as f64 <= dev.l2() as f64 * IN_L2_FRACTION;
    let parts_for = |bytes: u64| batch.image_bytes().div_ceil(bytes.max(1)).max(1);
    match kernel {
        InsertKernel::Auto => InsertKernel::AUTO_CANDIDATES
            .map(|k| plan(k, dev, batch, partition_bytes))
            .into_iter()
            .min_by(|a, b| a.estimate_ms.total_cmp(&b.estimate_ms))
            .expect("three candidates"),
        InsertKernel::Atomic => direct(
            kernel,
            1.0 / if in_l2 {
                ATOMIC_IN_L2_KEYS_PER_NS
            } else {
                ATOMIC_IN_DRAM_KEYS_PER_NS
            },
        ),
        InsertKernel::BulkReduce => direct(
            kernel,
            1.0 / if in_l2 {
                BULK_IN_L2_KEYS_PER_NS
            } else {
                BULK_IN_DRAM_KEYS_PER_NS
            },
        ),
        InsertKernel::Partitioned => {
            let parts = parts_for(partition_bytes).min(u64::from(MAX_PARTITIONS)) as u32;
            let grouping = grouping_ns(batch.keys, &[parts]);
            grouped(kernel, batch, parts, 0, grouping)
        }
        InsertKernel::Radix => {
            let (parts, coarse) = split(parts_for(partition_bytes), dev.max_radix_parts());
            let grouping = grouping_ns(batch.keys, &level_bins(parts, coarse));
            grouped(kernel, batch, parts, coarse, grouping)
        }
        InsertKernel::Sliced => sliced(dev, batch),
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// `parts` radix partitions (at least 1, at most `max`) as (partitions, coarse): one level of
/// `parts` when at most [`RADIX_FANOUT`], else two balanced levels (coarse × fine, both at most
/// [`RADIX_FANOUT`], at least `parts` in all unless `max` is smaller).
pub(crate) fn split(parts: u64, max: u32) -> (u32, u32) {
    let p = parts.clamp(1, u64::from(max.max(1))) as u32;
    if p <= RADIX_FANOUT {
        return (p, 0);
    }
    let coarse = (f64::from(p).sqrt().ceil() as u32).clamp(2, RADIX_FANOUT);
    let fine = p.div_ceil(coarse).min(RADIX_FANOUT);
    let fine = if coarse * fine > max {
        max / coarse
    } else {
        fine
    };
    (coarse * fine, coarse)
}

/// The partitions each pass of a grouping into `parts` (`coarse` of them coarse) scatters into.
fn level_bins(parts: u32, coarse: u32) -> Vec<u32> {
    if coarse == 0 {
        vec![parts]
    } else {
        vec![coarse, parts / coarse]
    }
}

/// Device time of the grouping passes of `keys` keys whose scatters write `bins` partitions each:
/// the histogram reads the keys, each scatter reads and writes them and pays for its runs.
fn grouping_ns(keys: u64, bins: &[u32]) -> f64 {
    let tile = f64::from(THREADS * SCATTER_KEYS_PER_THREAD);
    let scatters: f64 = bins
        .iter()
        .map(|&b| 16.0 + RUN_BYTES * f64::from(b).min(tile) / tile)
        .sum();
    let launches = 2 + bins.len();
    keys as f64 * (8.0 + scatters) / STREAM_BYTES_PER_NS + launches as f64 * LAUNCH_NS
}

/// Bytes of blocks one sweep of `batch` reads and writes, per key: each touched block once.
fn sweep_bytes_per_key(batch: &Batch) -> f64 {
    let (n, z) = (batch.keys.max(1) as f64, f64::from(batch.blocks.max(1)));
    2.0 * batch.image_bytes() as f64 * (1.0 - (-n / z).exp()) / n
}

/// A grouped bulk insert's plan: the grouping, then the bulk-reduce insert of the grouped hashes.
fn grouped(
    kernel: InsertKernel,
    batch: &Batch,
    parts: u32,
    coarse: u32,
    grouping: f64,
) -> InsertPlan {
    let per_key = 8.0 / STREAM_BYTES_PER_NS
        + 1.0 / GROUPED_KEYS_PER_NS
        + sweep_bytes_per_key(batch) / GROUPED_SWEEP_BYTES_PER_NS;
    InsertPlan {
        kernel,
        partitions: parts,
        coarse,
        slice_blocks: 0,
        estimate_ms: ms(grouping + batch.keys as f64 * per_key + LAUNCH_NS),
    }
}

/// The slice insert's plan: slices of as many whole blocks as one slice CTA's shared memory
/// holds, and the radix grouping (among powers of two up to the device's most, and twice the
/// slices) that makes the whole cheapest: more partitions cost the scatters longer runs, fewer
/// make each slice scan hashes of its neighbours (`n (1 + slices / partitions)` scanned).
fn sliced(dev: &DeviceShape, batch: &Batch) -> InsertPlan {
    let blocks = u64::from(batch.blocks.max(1));
    let slice_blocks = (dev.slice_bytes() / batch.block_bytes.max(1)).min(blocks);
    if slice_blocks == 0 {
        return InsertPlan {
            kernel: InsertKernel::Sliced,
            partitions: 0,
            coarse: 0,
            slice_blocks: 0,
            estimate_ms: f64::INFINITY,
        };
    }
    let slices = blocks.div_ceil(slice_blocks);
    let n = batch.keys as f64;
    let copy = 2.0 * batch.image_bytes() as f64 / SLICE_COPY_BYTES_PER_NS;
    let max = dev.max_radix_parts();
    let candidates = (0..=RADIX_MAX_PARTITIONS.trailing_zeros())
        .map(|k| 1u64 << k)
        .chain([2 * slices]);
    let best = candidates
        .map(|p| split(p, max))
        .map(|(parts, coarse)| {
            let scanned = n * (1.0 + slices as f64 / f64::from(parts));
            let ns = grouping_ns(batch.keys, &level_bins(parts, coarse))
                + n * 8.0 / STREAM_BYTES_PER_NS
                + scanned / SLICE_SCAN_KEYS_PER_NS
                + n / SLICE_OR_KEYS_PER_NS
                + copy
                + LAUNCH_NS;
            (parts, coarse, ns)
        })
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .expect("candidates");
    InsertPlan {
        kernel: InsertKernel::Sliced,
        partitions: best.0,
        coarse: best.1,
        slice_blocks,
        estimate_ms: ms(best.2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H200: 132 SMs, 60 MiB of L2, 227 KiB of opt-in shared memory, 228 KiB per SM.
    const H200: DeviceShape = DeviceShape {
        sms: 132,
        l2_bytes: 60 << 20,
        smem_optin: 227 << 10,
        smem_per_sm: 228 << 10,
    };

    fn batch(bytes: u64, keys: u64) -> Batch {
        Batch {
            blocks: (bytes / 32) as u32,
            block_bytes: 32,
            keys,
        }
    }

    #[test]
    fn radix_splits_bound_every_pass_and_cover_the_partitions_asked_for() {
        for p in [
            1u64,
            2,
            255,
            256,
            257,
            1000,
            1639,
            4097,
            32767,
            32768,
            1 << 20,
        ] {
            let (parts, coarse) = split(p, RADIX_MAX_PARTITIONS);
            assert!(parts >= 1, "{p}");
            if let Some(fine) = parts.checked_div(coarse) {
                assert_eq!(parts, coarse * fine, "{p}");
                assert!(coarse <= RADIX_FANOUT, "{p}");
                assert!((1..=RADIX_FANOUT).contains(&fine), "{p}");
                assert!(parts <= RADIX_MAX_PARTITIONS, "{p}");
                // At least what was asked for, or within 1 % of the most there may be.
                let want = p.min(u64::from(RADIX_MAX_PARTITIONS));
                assert!(u64::from(parts) * 100 >= want * 99, "{p}: {parts}");
            } else {
                assert!(parts <= RADIX_FANOUT && u64::from(parts) == p, "{p}");
            }
        }
        // A device whose shared memory holds fewer bins caps the partitions.
        let (parts, coarse) = split(1 << 20, 4000);
        assert!(
            parts <= 4000 && coarse > 0 && parts % coarse == 0,
            "{parts} {coarse}"
        );
        assert_eq!(split(0, 0), (1, 0));
    }

    #[test]
    fn the_device_limits_of_the_plans() {
        assert_eq!(H200.slice_bytes(), (114 << 10) - 1024);
        assert_eq!(H200.max_radix_parts(), RADIX_MAX_PARTITIONS);
        let small = DeviceShape {
            smem_optin: 48 << 10,
            smem_per_sm: 64 << 10,
            ..H200
        };
        assert_eq!(small.max_radix_parts(), ((48 << 10) - 1024) / 4);
        assert_eq!(small.slice_bytes(), (31 << 10));
        let unknown = DeviceShape {
            l2_bytes: 0,
            ..H200
        };
        assert_eq!(unknown.l2(), FALLBACK_L2_BYTES);
    }

    #[test]
    fn every_path_plans_what_it_runs() {
        let b = batch(8 << 30, 1 << 28);
        let p = plan(InsertKernel::BulkReduce, &H200, &b, 20 << 20);
        assert_eq!((p.partitions, p.levels()), (0, 0));
        let p = plan(InsertKernel::Partitioned, &H200, &b, 20 << 20);
        assert_eq!((p.partitions, p.levels()), (410, 1));
        let p = plan(InsertKernel::Radix, &H200, &b, 20 << 20);
        assert_eq!(p.levels(), 2);
        assert!(p.partitions >= 410 && p.partitions < 450, "{p:?}");
        assert!(p.coarse <= RADIX_FANOUT && p.fine() <= RADIX_FANOUT);
        let p = plan(InsertKernel::Sliced, &H200, &b, 20 << 20);
        assert_eq!(p.slice_blocks, H200.slice_bytes() / 32);
        assert!(p.partitions >= 1 && p.estimate_ms.is_finite());
        // Under Auto, the cheapest candidate by the estimates.
        let auto = plan(InsertKernel::Auto, &H200, &b, 20 << 20);
        for k in InsertKernel::AUTO_CANDIDATES {
            assert!(auto.estimate_ms <= plan(k, &H200, &b, 20 << 20).estimate_ms);
        }
        assert_ne!(auto.kernel, InsertKernel::Auto);
    }

    #[test]
    fn auto_keeps_small_images_and_small_batches_direct_and_groups_the_rest() {
        // What Auto picks on the H200 for an image of `bytes` bytes and `keys` keys.
        let auto = |bytes, keys| plan(InsertKernel::Auto, &H200, &batch(bytes, keys), 20 << 20);
        // In L2: direct. A handful of keys: direct (the grouping's launches dominate).
        assert_eq!(auto(1 << 20, 1 << 28).kernel, InsertKernel::BulkReduce);
        assert_eq!(auto(8 << 30, 1 << 10).kernel, InsertKernel::BulkReduce);
        // The sizes of issue #25 with 2^28 keys: every one past L2 grouped.
        for bytes in [256u64 << 20, 2 << 30, 8 << 30, 32 << 30, 64 << 30] {
            let p = auto(bytes, 1 << 28);
            assert_ne!(p.kernel, InsertKernel::BulkReduce, "{bytes}: {p:?}");
        }
    }

    #[test]
    fn the_model_reproduces_the_measurements_it_was_fitted_to() {
        // The H200's partitioned insert (issue #25, 2^28 keys, 8x32): 39.91 G keys/s at
        // 256 MiB, 30.35 at 2 GiB, 18.11 at 8 GiB; bulk reduce 65.84 at 1 MiB, 15.44 at 32 GiB.
        let rate = |k, bytes| {
            let p = plan(k, &H200, &batch(bytes, 1 << 28), (60 << 20) / 3);
            (1u64 << 28) as f64 / p.estimate_ms / 1e6
        };
        let near = |got: f64, want: f64, tol: f64| {
            assert!((got / want - 1.0).abs() <= tol, "{got} against {want}")
        };
        near(rate(InsertKernel::Partitioned, 256 << 20), 39.91, 0.05);
        near(rate(InsertKernel::Partitioned, 2 << 30), 30.35, 0.10);
        near(rate(InsertKernel::Partitioned, 8 << 30), 18.11, 0.15);
        near(rate(InsertKernel::BulkReduce, 1 << 20), 65.84, 0.10);
        near(rate(InsertKernel::BulkReduce, 32 << 30), 15.44, 0.05);
    }
}
