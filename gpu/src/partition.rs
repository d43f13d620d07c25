//! Partitioning: device-resident u64 keys or hashes are first grouped by the filter region they
//! fall in (histogram, scan, scatter), then inserted or probed, so that the filter accesses of a
//! filter larger than L2 hit L2. Used by the partitioned insert ([`crate::image`]), partitioned
//! lookups ([`crate::lookup`]) and the cell filters' updates ([`crate::cell_filter`]).
//!
//! # Memory traffic of the partitioned insert (per key, counted from the algorithm)
//!
//! Pass 1 (histogram) reads the key: 8 bytes. Pass 3 (scatter) reads it again and writes its hash:
//! 16 bytes. The insert reads the hash (8 bytes) and, partition by partition, reads and writes
//! each filter block it touches once per sweep: `2 × F × (1 − e^(−m/z)) / m` bytes per key for a
//! filter of `F` bytes and `z` blocks and a sweep of `m` keys. The scratch buffer is sized to the
//! batch (8 bytes per key), so a batch is one sweep; only when the device cannot hold it is the
//! batch split (each part one more sweep).
//!
//! - 8 GiB filter (8x32, `z = 2^28`), 2^30 keys in one sweep: 8 + 16 + 8 + 2 × 8 × 0.98 ≈ 48 bytes
//!   per key, a bound of 3.35 TB/s ÷ 48 B ≈ 70 G keys/s on the H100's HBM3. In sweeps of 2^28
//!   keys (the scratch cap before): 32 + 2 × 32 × 0.63 ≈ 72 bytes, ≈ 46 G keys/s. The target of
//!   issue #17 (27 G/s) is below both bounds, so it stands as stated.
//! - 2 GiB filter (`z = 2^26`), 2^28 keys: 32 + 2 × 8 × 0.98 ≈ 48 bytes, ≈ 70 G keys/s.

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::Params;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::error::output_holds;
use crate::hashed::{Hashed, MODE_HASHES, MODE_U64};
use crate::kernel::{
    Kernel, KEYS_PER_THREAD, MAX_PARTITIONS, SCATTER_KEYS_PER_THREAD, SCATTER_POS_KEYS_PER_THREAD,
    THREADS,
};
use crate::launch::DirectInsert;
use crate::module::{grid, Kernels};
use crate::GpuError;

/// Default cap of the scratch buffer, in hashes: as many as the u32 cursors count, i.e. the
/// scratch is sized to the batch (one sweep of the filter per batch).
const DEFAULT_SCRATCH_KEYS: usize = u32::MAX as usize;
/// The smallest scratch buffer worth partitioning with when memory is short.
const MIN_SCRATCH_KEYS: usize = 1 << 20;
/// [`InsertKernel::Auto`] partitions batches of at least this many keys (and at least one key
/// per 4 blocks), into filters larger than half the L2 cache.
const AUTO_MIN_KEYS: usize = 1 << 22;
/// Partition size when the device does not report its L2 size.
const FALLBACK_PARTITION_BYTES: u64 = 16 << 20;

// The scatter pass packs (partition, index in tile) into one u32 as 16 + 16 bits.
const _: () = assert!(MAX_PARTITIONS.is_multiple_of(THREADS) && MAX_PARTITIONS < 1 << 16);
const _: () = assert!(THREADS * SCATTER_KEYS_PER_THREAD <= 1 << 16);
const _: () = assert!(THREADS * SCATTER_POS_KEYS_PER_THREAD <= 1 << 16);

/// How inserts of u64 keys and hashes set bits. Every choice gives the same filter bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InsertKernel {
    /// One atomic OR per 64-bit word of the block (two 32-bit lanes share one).
    Atomic,
    /// One TMA bulk reduction (`cp.reduce.async.bulk … .or.b64`) of the whole block mask per key,
    /// staged in shared memory (sm_90+; falls back to atomics on older devices). Faster than
    /// atomics for every layout and size measured on an H100.
    BulkReduce,
    /// Device-resident batches are first grouped by filter region, then inserted: one pass
    /// hashes the keys and counts them per partition (a contiguous range of blocks of at most
    /// [`GpuImage::partition_bytes`](crate::GpuImage::partition_bytes), sized to a third of
    /// the L2 cache), a scan turns the counts into offsets, a scatter pass writes the 64-bit
    /// hashes grouped by partition into a scratch buffer (grouped per CTA in shared memory so
    /// writes coalesce), and one bulk-reduce insert runs over the grouped hashes. CTAs run
    /// roughly in order, so the blocks being updated at any moment fit in L2 and the
    /// read-modify-writes hit L2 instead of DRAM.
    ///
    /// The scratch buffer is sized to the batch (8 bytes per key), so the filter is swept once
    /// per batch, however large the filter; [`GpuImage::set_scratch_keys`](crate::GpuImage::set_scratch_keys)
    /// caps it (larger batches then go through in chunks, one sweep each). It is allocated on
    /// first use and kept until [`GpuImage::release_scratch`](crate::GpuImage::release_scratch)
    /// or the filter is dropped. When the device cannot hold it, the request is halved (one more
    /// sweep per halving) down to 2^20 keys; below that the insert fails with
    /// [`GpuError::OutOfMemory`] naming the bytes asked for and free (no bits are set). Inserts from host memory (`insert`, `insert_pinned`), which are bound by
    /// the host-to-device copy, use the bulk-reduce kernel instead.
    Partitioned,
    /// The default: [`InsertKernel::Partitioned`] for device-resident batches of at least 2^22
    /// keys and at least one key per 4 blocks into filters larger than half the L2 cache, else
    /// [`InsertKernel::BulkReduce`]. If the scratch buffer cannot be allocated, it falls back to
    /// the bulk-reduce kernel instead of failing.
    #[default]
    Auto,
}

impl InsertKernel {
    /// The kernel of an unpartitioned insert under this choice.
    pub(crate) fn direct(self) -> DirectInsert {
        match self {
            InsertKernel::Atomic => DirectInsert::Atomic,
            _ => DirectInsert::BulkReduce,
        }
    }
}

/// How [`Partitioner::for_each_group`] groups a batch: with these kernels and seed, into
/// `parts` partitions, writing each grouped hash's key position too if `positions`.
#[derive(Clone, Copy)]
pub(crate) struct GroupBy<'a> {
    pub(crate) kernels: &'a Kernels,
    pub(crate) seed: u64,
    pub(crate) parts: u32,
    pub(crate) positions: bool,
}

impl<'a> GroupBy<'a> {
    /// Grouping with `kernels` and `seed` into `parts` partitions, with positions if
    /// `positions`.
    pub(crate) fn new(kernels: &'a Kernels, seed: u64, parts: u32, positions: bool) -> GroupBy<'a> {
        GroupBy {
            kernels,
            seed,
            parts,
            positions,
        }
    }
}

/// The partitioned insert's device buffers.
struct Scratch {
    /// The grouped hashes of one chunk.
    hashes: CudaSlice<u64>,
    /// The index in the chunk of each grouped hash's key, when asked for (as many as `hashes`).
    positions: Option<CudaSlice<u32>>,
    /// Keys per partition ([`MAX_PARTITIONS`] words).
    counts: CudaSlice<u32>,
    /// Next free position of each partition's run ([`MAX_PARTITIONS`] words).
    cursor: CudaSlice<u32>,
}

/// The partitioned insert's settings and scratch buffers, one per filter.
pub(crate) struct Partitioner {
    /// Streaming multiprocessors (grid size of the grid-stride histogram pass).
    sms: u32,
    /// L2 cache bytes (0 if unknown).
    l2_bytes: u64,
    /// Partition size; `None` = from the L2 size.
    partition_bytes: Option<u64>,
    /// Cap of the scratch buffer, in hashes.
    scratch_keys: usize,
    scratch: Option<Scratch>,
}

impl Partitioner {
    /// Settings for the device of `ctx`, no scratch yet.
    pub(crate) fn new(ctx: &CudaContext) -> Partitioner {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u64).unwrap_or(0);
        Partitioner {
            sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).clamp(1, 1 << 16) as u32,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            partition_bytes: None,
            scratch_keys: DEFAULT_SCRATCH_KEYS,
            scratch: None,
        }
    }

    /// The L2 cache size the device reports, in bytes (0 if unknown).
    pub(crate) fn l2_bytes(&self) -> u64 {
        self.l2_bytes
    }

    /// Target partition size in bytes (0 = automatic).
    pub(crate) fn set_partition_bytes(&mut self, bytes: u64) {
        self.partition_bytes = (bytes > 0).then_some(bytes);
    }

    /// Target partition size: as set, else a third of L2 (1 to 24 MiB).
    pub(crate) fn partition_bytes(&self) -> u64 {
        self.partition_bytes.unwrap_or(if self.l2_bytes == 0 {
            FALLBACK_PARTITION_BYTES
        } else {
            (self.l2_bytes / 3).clamp(1 << 20, 24 << 20)
        })
    }

    /// Partitions of a filter of `params` (1 to [`MAX_PARTITIONS`]).
    pub(crate) fn partitions(&self, params: &Params) -> u32 {
        self.partitions_for_bytes(params.byte_len())
    }

    /// Partitions of a filter whose arrays span `bytes` (e.g. a counting filter's image and
    /// counters): 1 to [`MAX_PARTITIONS`].
    pub(crate) fn partitions_for_bytes(&self, bytes: u64) -> u32 {
        bytes
            .div_ceil(self.partition_bytes())
            .clamp(1, u64::from(MAX_PARTITIONS)) as u32
    }

    /// Caps the scratch buffer at `keys` hashes (64 to 2^32 − 1).
    pub(crate) fn set_scratch_keys(&mut self, keys: usize) {
        self.scratch_keys = keys.clamp(64, u32::MAX as usize);
    }

    /// Frees the scratch buffer.
    pub(crate) fn release_scratch(&mut self) {
        self.scratch = None;
    }

    /// The L2 size, or twice the fallback partition size when the device does not report it.
    pub(crate) fn l2_or_fallback(&self) -> u64 {
        if self.l2_bytes == 0 {
            2 * FALLBACK_PARTITION_BYTES
        } else {
            self.l2_bytes
        }
    }

    /// Whether an insert of `keys` device-resident keys into a filter of `blocks` blocks whose
    /// arrays span `bytes` is partitioned under `kernel` (see [`InsertKernel::Auto`] for the
    /// rule).
    pub(crate) fn wanted_for_bytes(
        &self,
        kernel: InsertKernel,
        bytes: u64,
        blocks: u32,
        keys: usize,
    ) -> bool {
        match kernel {
            InsertKernel::Partitioned => true,
            InsertKernel::Auto => {
                bytes > self.l2_or_fallback() / 2
                    && keys >= AUTO_MIN_KEYS
                    && keys as u64 * 4 >= u64::from(blocks)
            }
            InsertKernel::Atomic | InsertKernel::BulkReduce => false,
        }
    }

    /// The cap of the scratch buffer, in keys.
    pub(crate) fn scratch_keys(&self) -> usize {
        self.scratch_keys
    }

    /// Makes sure the scratch buffer holds `min(n, cap)` hashes (and as many positions if
    /// `positions`), reusing a big enough one, and returns its capacity; while the device is
    /// short of memory the request is halved, down to `MIN_SCRATCH_KEYS` (or `n` if smaller),
    /// before giving up with [`GpuError::OutOfMemory`].
    fn ensure_scratch(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
        positions: bool,
    ) -> Result<usize, GpuError> {
        let want = n.min(self.scratch_keys).max(1);
        if let Some(s) = &self.scratch {
            if s.hashes.len() >= want && (!positions || s.positions.is_some()) {
                return Ok(s.hashes.len());
            }
        }
        self.scratch = None;
        let counts = alloc_zeros::<u32>(stream, "partition counts", MAX_PARTITIONS as usize)?;
        let cursor = alloc_zeros::<u32>(stream, "partition cursors", MAX_PARTITIONS as usize)?;
        let floor = MIN_SCRATCH_KEYS.min(want);
        let bytes_per_key = if positions { 12 } else { 8 };
        let mut len = want;
        let (hashes, pos) = loop {
            let attempt = alloc_zeros::<u64>(stream, "partition scratch", len).and_then(|h| {
                let p = if positions {
                    Some(alloc_zeros::<u32>(stream, "partition positions", len)?)
                } else {
                    None
                };
                Ok((h, p))
            });
            match attempt {
                Ok(buffers) => break buffers,
                Err(GpuError::OutOfMemory { .. }) if len > floor => len = (len / 2).max(floor),
                Err(GpuError::OutOfMemory { free_bytes, .. }) => {
                    return Err(GpuError::OutOfMemory {
                        what: "partition scratch",
                        requested_bytes: want as u64 * bytes_per_key,
                        free_bytes,
                    })
                }
                Err(e) => return Err(e),
            }
        };
        self.scratch = Some(Scratch {
            hashes,
            positions: pos,
            counts,
            cursor,
        });
        Ok(len)
    }

    /// Groups `keys` as `by` says in chunks of at most the scratch size, in input order: for
    /// each chunk `r` of the batch, queues passes 1–3 on `stream` and calls `f(r, grouped
    /// hashes, their key positions in the chunk if `by.positions`)`, which queues its work on
    /// the same stream. Nothing is queued if the scratch buffer cannot be allocated.
    pub(crate) fn for_each_group(
        &mut self,
        by: GroupBy<'_>,
        keys: &Hashed<'_>,
        stream: &Arc<CudaStream>,
        mut f: impl FnMut(Range<usize>, Hashed<'_>, Option<CudaView<'_, u32>>) -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        let GroupBy {
            kernels,
            seed,
            parts,
            positions,
        } = by;
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let chunk = self
            .ensure_scratch(stream, n, positions)?
            .min(self.scratch_keys);
        let sms = self.sms;
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let groups = Groups {
            sms,
            seed,
            parts,
            hashes: keys.are_hashes(),
        };
        let mut a = 0;
        while a < n {
            let b = (a + chunk).min(n);
            let mut grouped = scratch.hashes.slice_mut(..b - a);
            let mut pos = match (&mut scratch.positions, positions) {
                (Some(p), true) => Some(p.slice_mut(..b - a)),
                _ => None,
            };
            groups.queue(
                kernels,
                &keys.keys.slice(a..b),
                &mut scratch.counts,
                &mut scratch.cursor,
                &mut grouped,
                pos.as_mut(),
                stream,
            )?;
            let hashes = Hashed::grouped(grouped.as_view());
            f(a..b, hashes, pos.as_ref().map(|p| p.as_view()))?;
            a = b;
        }
        Ok(())
    }

    /// Passes 1–3 alone: the hashes of `keys` (u64 keys, or hashes if `hashes`; fewer than 2^32)
    /// grouped by partition into `out[..keys.len()]`, queued on `stream`.
    pub(crate) fn group(
        &mut self,
        kernels: &Kernels,
        params: &Params,
        keys: &CudaView<'_, u64>,
        hashes: bool,
        out: &mut CudaViewMut<'_, u64>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        output_holds(keys.len(), out.len())?;
        if keys.len() >= u32::MAX as usize {
            return Err(GpuError::Cuda {
                op: "partition_device_async",
                bytes: keys.len() as u64 * 8,
                message: "a batch to partition must hold fewer than 2^32 keys".into(),
            });
        }
        self.ensure_scratch(stream, 1, false)?;
        let groups = Groups {
            sms: self.sms,
            seed: params.seed,
            parts: self.partitions(params),
            hashes,
        };
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        groups.queue(
            kernels,
            keys,
            &mut scratch.counts,
            &mut scratch.cursor,
            out,
            None,
            stream,
        )
    }
}

/// One grouping of a batch: passes 1–3 of the partitioned insert.
struct Groups {
    sms: u32,
    seed: u64,
    /// Partitions, 1 to [`MAX_PARTITIONS`].
    parts: u32,
    /// Whether the keys are hashes already (else u64 keys, hashed on the device).
    hashes: bool,
}

impl Groups {
    /// Queues on `stream`: the partition histogram of `keys` into `counts`, its exclusive scan
    /// into `cursor`, and the scatter of the keys' hashes, grouped by partition, into
    /// `out[..keys.len()]` (with, if `out_pos` is given, the index of each hash's key in `keys`
    /// at the same place of `out_pos`).
    #[allow(clippy::too_many_arguments)]
    fn queue(
        &self,
        kernels: &Kernels,
        keys: &CudaView<'_, u64>,
        counts: &mut CudaSlice<u32>,
        cursor: &mut CudaSlice<u32>,
        out: &mut CudaViewMut<'_, u64>,
        out_pos: Option<&mut CudaViewMut<'_, u32>>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let m = keys.len() as u64;
        if m == 0 {
            return Ok(());
        }
        let mp = MAX_PARTITIONS as usize;
        if !(1..=MAX_PARTITIONS).contains(&self.parts)
            || counts.len() < mp
            || cursor.len() < mp
            || out.len() < keys.len()
            || out_pos.as_ref().is_some_and(|p| p.len() < keys.len())
            || m > u64::from(u32::MAX)
        {
            return Err(GpuError::Cuda {
                op: "partition",
                bytes: m * 8,
                message: format!(
                    "bad partition launch: {} partitions, {m} keys, {} outputs",
                    self.parts,
                    out.len()
                ),
            });
        }
        let (seed, parts) = (self.seed, self.parts);
        let mode = if self.hashes { MODE_HASHES } else { MODE_U64 };
        stream
            .memset_zeros(counts)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async(partition counts)", 0, e))?;

        let mut cfg = grid(m, u64::from(THREADS * KEYS_PER_THREAD))?;
        cfg.grid_dim.0 = cfg.grid_dim.0.min(self.sms.saturating_mul(8)).max(1);
        let mut l = stream.launch_builder(kernels.get(Kernel::PartHist)?);
        l.arg(keys)
            .arg(&m)
            .arg(&seed)
            .arg(&mode)
            .arg(&parts)
            .arg(&mut *counts);
        // SAFETY: `bl_part_hist(const u64* keys, u64 n, u64 seed, int mode, u32 parts,
        // u32* counts)` takes these arguments in this order. It reads `keys[i]` for `i < m` (the
        // view's length; grid-stride, so any grid size is covered) and adds into
        // `counts[p]` for `p = ((h >> 32) * parts) >> 32 < parts ≤ MAX_PARTITIONS`, and `counts`
        // holds MAX_PARTITIONS words (checked above); its shared histogram has MAX_PARTITIONS
        // entries too.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_hist)", m, e))?;

        let mut l = stream.launch_builder(kernels.get(Kernel::PartScan)?);
        l.arg(&*counts).arg(&parts).arg(&mut *cursor);
        // SAFETY: `bl_part_scan(const u32* counts, u32 parts, u32* cursor)` takes these
        // arguments in this order. Its one CTA reads `counts[p]` and writes `cursor[p]` for
        // `p < parts ≤ MAX_PARTITIONS`, and both buffers hold MAX_PARTITIONS words (checked
        // above).
        unsafe { l.launch(grid(1, 1)?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scan)", 0, e))?;

        let (kernel, per_thread, name) = match out_pos {
            None => (
                Kernel::PartScatter,
                SCATTER_KEYS_PER_THREAD,
                "cuLaunchKernel(bl_part_scatter)",
            ),
            Some(_) => (
                Kernel::PartScatterPos,
                SCATTER_POS_KEYS_PER_THREAD,
                "cuLaunchKernel(bl_part_scatter_pos)",
            ),
        };
        let cfg = grid(m, u64::from(THREADS * per_thread))?;
        let mut l = stream.launch_builder(kernels.get(kernel)?);
        l.arg(keys)
            .arg(&m)
            .arg(&seed)
            .arg(&mode)
            .arg(&parts)
            .arg(&mut *cursor)
            .arg(out);
        if let Some(pos) = out_pos {
            l.arg(pos);
        }
        // SAFETY: `bl_part_scatter(const u64* keys, u64 n, u64 seed, int mode, u32 parts,
        // u32* cursor, u64* out)` and `bl_part_scatter_pos(…, u64* out, u32* out_pos)` take the
        // arguments pushed above in this order (the second with the positions). They read
        // `keys[i]`, `i < m`, and update `cursor[p]`, `p < parts ≤ MAX_PARTITIONS` (both checked
        // above). They write each of the `m` hashes once (and its key index once), at
        // `cursor[p] + its rank among this CTA's hashes of partition p`: the cursors start (pass
        // 2, same stream) at the exclusive prefix sums of the counts that pass 1 took of these
        // same `m` keys with the same seed, mode and partitions, after `counts` was zeroed, and
        // the keys cannot change between the passes (borrowed for this call; earlier writes are
        // ordered before pass 1 by cudarc's events). So every position is below the sum of all
        // counts = `m` ≤ `out.len()` (and ≤ `out_pos.len()`, checked), and the kernel skips any
        // position ≥ `m` besides. The u32 cursors do not overflow (`m ≤ 2^32 − 1`, checked). The
        // tile and rank packing fit their 16-bit fields (the const assertions above).
        unsafe { l.launch(cfg) }.map_err(|e| GpuError::cuda(name, m, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::Layout;

    fn partitioner(l2_bytes: u64) -> Partitioner {
        Partitioner {
            sms: 132,
            l2_bytes,
            partition_bytes: None,
            scratch_keys: DEFAULT_SCRATCH_KEYS,
            scratch: None,
        }
    }

    #[test]
    fn partition_count_follows_l2_and_is_clamped() {
        let p = partitioner(50 << 20);
        // A third of 50 MiB, clamped to at most 24 MiB.
        assert_eq!(p.partition_bytes(), (50 << 20) / 3);
        let blocks = |bytes: u64| (bytes / 32) as u32;
        assert_eq!(p.partitions(&Params::new(Layout::L8x32, 1)), 1);
        let f = Params::new(Layout::L8x32, blocks(1 << 30));
        assert_eq!(
            u64::from(p.partitions(&f)),
            (1u64 << 30).div_ceil((50 << 20) / 3)
        );
        let mut p = partitioner(0);
        assert_eq!(p.partition_bytes(), FALLBACK_PARTITION_BYTES);
        p.set_partition_bytes(1);
        let f = Params::new(Layout::L8x32, blocks(1 << 30));
        assert_eq!(p.partitions(&f), MAX_PARTITIONS);
        p.set_partition_bytes(0);
        assert_eq!(p.partition_bytes(), FALLBACK_PARTITION_BYTES);
    }

    #[test]
    fn auto_partitions_big_batches_into_filters_past_half_of_l2() {
        let p = partitioner(50 << 20);
        let p = Wanted(&p);
        let big = Params::new(Layout::L8x32, ((64u64 << 20) / 32) as u32);
        let small = Params::new(Layout::L8x32, ((16u64 << 20) / 32) as u32);
        assert!(p.wanted(InsertKernel::Auto, &big, AUTO_MIN_KEYS));
        assert!(!p.wanted(InsertKernel::Auto, &big, AUTO_MIN_KEYS - 1));
        assert!(!p.wanted(InsertKernel::Auto, &small, AUTO_MIN_KEYS));
        assert!(p.wanted(InsertKernel::Partitioned, &small, 0));
        assert!(!p.wanted(InsertKernel::BulkReduce, &big, 1 << 30));
        assert!(!p.wanted(InsertKernel::Atomic, &big, 1 << 30));
        // Fewer than one key per 4 blocks: not worth grouping.
        let huge = Params::new(Layout::L8x32, u32::MAX);
        assert!(!p.wanted(InsertKernel::Auto, &huge, AUTO_MIN_KEYS));
    }

    /// The rule for a static filter of `params`.
    struct Wanted<'a>(&'a Partitioner);

    impl Wanted<'_> {
        fn wanted(&self, kernel: InsertKernel, params: &Params, keys: usize) -> bool {
            self.0
                .wanted_for_bytes(kernel, params.byte_len(), params.blocks, keys)
        }
    }

    #[test]
    fn scratch_cap_is_clamped_to_what_the_u32_cursors_count() {
        let mut p = partitioner(0);
        p.set_scratch_keys(0);
        assert_eq!(p.scratch_keys, 64);
        p.set_scratch_keys(usize::MAX);
        assert_eq!(p.scratch_keys, u32::MAX as usize);
    }
}
