//! The partitioned insert: device-resident u64 keys or hashes are first grouped by the filter
//! region they fall in (histogram, scan, scatter), then inserted, so that the read-modify-writes
//! of a filter larger than L2 hit L2.

use std::sync::Arc;

use bloomlanes_core::Params;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::kernel::{Kernel, KEYS_PER_THREAD, MAX_PARTITIONS, SCATTER_KEYS_PER_THREAD, THREADS};
use crate::launch::{launch_keys, DirectInsert, KeyArgs, Pass};
use crate::module::{grid, Kernels};
use crate::GpuError;

/// Default cap of the scratch buffer, in hashes (2^28 = 2 GiB).
const DEFAULT_SCRATCH_KEYS: usize = 1 << 28;
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
    /// [`GpuFilter::partition_bytes`](crate::GpuFilter::partition_bytes), sized to a third of
    /// the L2 cache), a scan turns the counts into offsets, a scatter pass writes the 64-bit
    /// hashes grouped by partition into a scratch buffer (grouped per CTA in shared memory so
    /// writes coalesce), and one bulk-reduce insert runs over the grouped hashes. CTAs run
    /// roughly in order, so the blocks being updated at any moment fit in L2 and the
    /// read-modify-writes hit L2 instead of DRAM.
    ///
    /// The scratch buffer holds at most
    /// [`GpuFilter::set_scratch_keys`](crate::GpuFilter::set_scratch_keys) hashes (2^28 = 2 GiB
    /// by default; larger batches go through in chunks), is allocated on first use and kept
    /// until [`GpuFilter::release_scratch`](crate::GpuFilter::release_scratch) or the filter is
    /// dropped. If it cannot be allocated the insert fails with [`GpuError::OutOfMemory`] (no
    /// bits are set). Inserts from host memory (`insert`, `insert_pinned`), which are bound by
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

/// The partitioned insert's device buffers.
struct Scratch {
    /// The grouped hashes of one chunk.
    hashes: CudaSlice<u64>,
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
        params
            .byte_len()
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

    /// Whether an insert of `keys` device-resident keys into a filter of `params` is partitioned
    /// under `kernel` (see [`InsertKernel::Auto`] for the rule).
    pub(crate) fn wanted(&self, kernel: InsertKernel, params: &Params, keys: usize) -> bool {
        match kernel {
            InsertKernel::Partitioned => true,
            InsertKernel::Auto => {
                let l2 = if self.l2_bytes == 0 {
                    2 * FALLBACK_PARTITION_BYTES
                } else {
                    self.l2_bytes
                };
                params.byte_len() > l2 / 2
                    && keys >= AUTO_MIN_KEYS
                    && keys as u64 * 4 >= u64::from(params.blocks)
            }
            InsertKernel::Atomic | InsertKernel::BulkReduce => false,
        }
    }

    /// Makes sure the scratch buffer holds `min(n, cap)` hashes (reusing a big enough one) and
    /// returns its capacity; while the device is short of memory the request is halved, down to
    /// `MIN_SCRATCH_KEYS` (or `n` if smaller), before giving up with [`GpuError::OutOfMemory`].
    fn ensure_scratch(&mut self, stream: &Arc<CudaStream>, n: usize) -> Result<usize, GpuError> {
        let want = n.min(self.scratch_keys).max(1);
        if let Some(s) = &self.scratch {
            if s.hashes.len() >= want {
                return Ok(s.hashes.len());
            }
        }
        self.scratch = None;
        let counts = alloc_zeros::<u32>(stream, "partition counts", MAX_PARTITIONS as usize)?;
        let cursor = alloc_zeros::<u32>(stream, "partition cursors", MAX_PARTITIONS as usize)?;
        let floor = MIN_SCRATCH_KEYS.min(want);
        let mut len = want;
        let hashes = loop {
            match alloc_zeros::<u64>(stream, "partitioned insert scratch", len) {
                Ok(h) => break h,
                Err(GpuError::OutOfMemory { .. }) if len > floor => len = (len / 2).max(floor),
                Err(GpuError::OutOfMemory { free_bytes, .. }) => {
                    return Err(GpuError::OutOfMemory {
                        what: "partitioned insert scratch",
                        requested_bytes: want as u64 * 8,
                        free_bytes,
                    })
                }
                Err(e) => return Err(e),
            }
        };
        self.scratch = Some(Scratch {
            hashes,
            counts,
            cursor,
        });
        Ok(len)
    }

    /// The partitioned insert of device-resident u64 keys (or hashes if `hashes`) into `words`,
    /// queued on `stream`. Nothing is queued if the scratch buffer cannot be allocated.
    pub(crate) fn insert(
        &mut self,
        kernels: &Kernels,
        params: &Params,
        words: &mut CudaSlice<u32>,
        keys: &CudaView<'_, u64>,
        hashes: bool,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let chunk = self.ensure_scratch(stream, n)?.min(self.scratch_keys);
        let parts = self.partitions(params);
        let (sms, seed) = (self.sms, params.seed);
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let mut a = 0;
        while a < n {
            let b = (a + chunk).min(n);
            let mut grouped = scratch.hashes.slice_mut(..b - a);
            let groups = Groups {
                sms,
                seed,
                parts,
                hashes,
            };
            groups.queue(
                kernels,
                &keys.slice(a..b),
                &mut scratch.counts,
                &mut scratch.cursor,
                &mut grouped,
                stream,
            )?;
            let pass = Pass::Insert {
                words: &mut *words,
                kernel: DirectInsert::BulkReduce,
            };
            launch_keys(
                kernels,
                params,
                stream,
                KeyArgs::Hashes(grouped.as_view()),
                pass,
            )?;
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
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        if keys.len() >= u32::MAX as usize {
            return Err(GpuError::Cuda {
                op: "partition_device_async",
                bytes: keys.len() as u64 * 8,
                message: "a batch to partition must hold fewer than 2^32 keys".into(),
            });
        }
        self.ensure_scratch(stream, 1)?;
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
    /// `out[..keys.len()]`.
    fn queue(
        &self,
        kernels: &Kernels,
        keys: &CudaView<'_, u64>,
        counts: &mut CudaSlice<u32>,
        cursor: &mut CudaSlice<u32>,
        out: &mut CudaViewMut<'_, u64>,
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
        let mode: i32 = if self.hashes { 1 } else { 0 };
        stream
            .memset_zeros(counts)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async(partition counts)", 0, e))?;

        let mut cfg = grid(m, u64::from(THREADS * KEYS_PER_THREAD))?;
        cfg.grid_dim.0 = cfg.grid_dim.0.min(self.sms.saturating_mul(8)).max(1);
        let mut l = stream.launch_builder(kernels.get(Kernel::PartHist));
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

        let mut l = stream.launch_builder(kernels.get(Kernel::PartScan));
        l.arg(&*counts).arg(&parts).arg(&mut *cursor);
        // SAFETY: `bl_part_scan(const u32* counts, u32 parts, u32* cursor)` takes these
        // arguments in this order. Its one CTA reads `counts[p]` and writes `cursor[p]` for
        // `p < parts ≤ MAX_PARTITIONS`, and both buffers hold MAX_PARTITIONS words (checked
        // above).
        unsafe { l.launch(grid(1, 1)?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scan)", 0, e))?;

        let cfg = grid(m, u64::from(THREADS * SCATTER_KEYS_PER_THREAD))?;
        let mut l = stream.launch_builder(kernels.get(Kernel::PartScatter));
        l.arg(keys)
            .arg(&m)
            .arg(&seed)
            .arg(&mode)
            .arg(&parts)
            .arg(&mut *cursor)
            .arg(out);
        // SAFETY: `bl_part_scatter(const u64* keys, u64 n, u64 seed, int mode, u32 parts,
        // u32* cursor, u64* out)` takes these arguments in this order. It reads `keys[i]`,
        // `i < m`, and updates `cursor[p]`, `p < parts ≤ MAX_PARTITIONS` (both checked above). It
        // writes each of the `m` hashes once, at `cursor[p] + its rank among this CTA's hashes of
        // partition p`: the cursors start (pass 2, same stream) at the exclusive prefix sums of
        // the counts that pass 1 took of these same `m` keys with the same seed, mode and
        // partitions, after `counts` was zeroed, and the keys cannot change between the passes
        // (borrowed for this call; earlier writes are ordered before pass 1 by cudarc's
        // events). So every position is below the sum of all counts = `m` ≤ `out.len()`, and the
        // u32 cursors do not overflow (`m ≤ 2^32 − 1`, checked). The tile and rank packing fit
        // their 16-bit fields (the const assertions above).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scatter)", m, e))?;
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

    #[test]
    fn scratch_cap_is_clamped_to_what_the_u32_cursors_count() {
        let mut p = partitioner(0);
        p.set_scratch_keys(0);
        assert_eq!(p.scratch_keys, 64);
        p.set_scratch_keys(usize::MAX);
        assert_eq!(p.scratch_keys, u32::MAX as usize);
    }
}
