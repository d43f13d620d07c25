//! Partitioning: device-resident u64 keys or hashes are first grouped by the filter region they
//! fall in (histogram, scan, scatter), then inserted or probed, so that the filter accesses of a
//! filter larger than L2 hit L2. Used by the partitioned inserts ([`crate::image`], the radix
//! grouping in [`crate::radix`]), partitioned lookups ([`crate::lookup`]) and the cell filters'
//! updates ([`crate::cell_filter`]). The passes' launches are in `passes`; the traffic of each
//! insert path per key is counted in [`crate::insert_path`].
//!
//! The partitioner owns one scratch buffer per filter: the grouped hashes (8 bytes per key), the
//! positions of a lookup's keys (4), the radix grouping's first level (8), and the counts and
//! cursors. It is sized to the batch, so the filter is swept once per batch; only when the
//! device cannot hold it is the batch split (each part one more sweep).

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::Params;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut};

use crate::buffer::alloc_zeros;
use crate::error::output_holds;
use crate::hashed::{Hashed, MODE_HASHES, MODE_U64};
use crate::insert_path::{DeviceShape, InsertKernel, FALLBACK_L2_BYTES};
use crate::kernel::{Kernel, MAX_PARTITIONS};
use crate::module::Kernels;
use crate::GpuError;

mod passes;

use passes::COUNT_WORDS;
pub(crate) use passes::{Passes, Segments};

/// Default cap of the scratch buffer, in hashes: as many as the u32 cursors count, i.e. the
/// scratch is sized to the batch (one sweep of the filter per batch).
const DEFAULT_SCRATCH_KEYS: usize = u32::MAX as usize;
/// The smallest scratch buffer worth partitioning with when memory is short.
const MIN_SCRATCH_KEYS: usize = 1 << 20;
/// The cell filters' rule ([`Partitioner::cells_grouped`]): under [`InsertKernel::Auto`], batches
/// of at least this many keys (and at least one key per 4 blocks) into cells and image larger
/// than half the L2 cache are grouped.
const AUTO_MIN_KEYS: usize = 1 << 22;
/// Partition size when the device does not report its L2 size.
const FALLBACK_PARTITION_BYTES: u64 = FALLBACK_L2_BYTES / 2;

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

/// The partitioning's device buffers.
struct Scratch {
    /// The grouped hashes of one chunk.
    hashes: CudaSlice<u64>,
    /// The index in the chunk of each grouped hash's key, when asked for (as many as `hashes`).
    positions: Option<CudaSlice<u32>>,
    /// The first level of a two-level radix grouping, when asked for (as many as `hashes`).
    staging: Option<CudaSlice<u64>>,
    /// Keys per partition ([`COUNT_WORDS`] words).
    counts: CudaSlice<u32>,
    /// Next free position of each partition's run ([`COUNT_WORDS`] words).
    cursor: CudaSlice<u32>,
    /// The coarse segments of a two-level radix grouping, allocated on first use.
    segments: Option<Segments>,
}

impl Scratch {
    /// Allocates the optional buffers `needs` asks for and this scratch lacks, as long as its
    /// grouped hashes.
    fn complete(&mut self, stream: &Arc<CudaStream>, needs: Needs) -> Result<(), GpuError> {
        let len = self.hashes.len();
        if needs.positions && self.positions.is_none() {
            self.positions = Some(alloc_zeros::<u32>(stream, "partition positions", len)?);
        }
        if needs.staging && self.staging.is_none() {
            self.staging = Some(alloc_zeros::<u64>(stream, "partition staging", len)?);
        }
        if needs.staging && self.segments.is_none() {
            self.segments = Some(Segments::new(stream)?);
        }
        Ok(())
    }
}

/// What a grouping needs of the scratch besides the grouped hashes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// The key positions of the grouped hashes (4 bytes per key).
    pub(crate) positions: bool,
    /// The first level of a two-level radix grouping (8 bytes per key) and its segments.
    pub(crate) staging: bool,
}

/// The scratch of one radix grouping, borrowed apart ([`Partitioner::radix_buffers`]).
pub(crate) struct RadixBuffers<'a> {
    /// Where the grouped hashes go.
    pub(crate) grouped: &'a mut CudaSlice<u64>,
    /// Level 1 of two (as long as `grouped`), and the coarse segments.
    pub(crate) staging: Option<(&'a mut CudaSlice<u64>, &'a mut Segments)>,
    pub(crate) counts: &'a mut CudaSlice<u32>,
    /// After the grouping: the end of each partition's run of `grouped`.
    pub(crate) cursor: &'a mut CudaSlice<u32>,
}

/// The partitioned paths' settings and scratch buffers, one per filter.
pub(crate) struct Partitioner {
    /// The device, as the passes and the insert model see it.
    dev: DeviceShape,
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
        Partitioner::with_device(DeviceShape {
            sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).clamp(1, 1 << 16) as u32,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            smem_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            smem_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        })
    }

    /// Settings for a device of this shape, no scratch yet.
    fn with_device(dev: DeviceShape) -> Partitioner {
        Partitioner {
            dev,
            partition_bytes: None,
            scratch_keys: DEFAULT_SCRATCH_KEYS,
            scratch: None,
        }
    }

    /// The device as the passes and the insert model see it.
    pub(crate) fn device(&self) -> DeviceShape {
        self.dev
    }

    /// The L2 cache size the device reports, in bytes (0 if unknown).
    pub(crate) fn l2_bytes(&self) -> u64 {
        self.dev.l2_bytes
    }

    /// Target partition size in bytes (0 = automatic).
    pub(crate) fn set_partition_bytes(&mut self, bytes: u64) {
        self.partition_bytes = (bytes > 0).then_some(bytes);
    }

    /// Target partition size: as set, else a third of L2 (1 to 24 MiB).
    pub(crate) fn partition_bytes(&self) -> u64 {
        self.partition_bytes.unwrap_or(if self.dev.l2_bytes == 0 {
            FALLBACK_PARTITION_BYTES
        } else {
            (self.dev.l2_bytes / 3).clamp(1 << 20, 24 << 20)
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

    /// The L2 size, or [`FALLBACK_L2_BYTES`] when the device does not report it.
    pub(crate) fn l2_or_fallback(&self) -> u64 {
        self.dev.l2()
    }

    /// Whether an update of `keys` device-resident keys of a cell filter of `blocks` blocks
    /// whose image and cells span `bytes` is grouped under `kernel`: always under the grouping
    /// paths (the cell filters have their own kernels for grouped batches), never under the
    /// direct ones, and under [`InsertKernel::Auto`] for batches of at least 2^22 keys and at
    /// least one key per 4 blocks into arrays larger than half the L2 cache.
    pub(crate) fn cells_grouped(
        &self,
        kernel: InsertKernel,
        bytes: u64,
        blocks: u32,
        keys: usize,
    ) -> bool {
        match kernel {
            InsertKernel::Partitioned | InsertKernel::Radix | InsertKernel::Sliced => true,
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

    /// Makes sure the scratch buffer holds `min(n, cap)` hashes (and as many positions and
    /// staged hashes as `needs` says), reusing a big enough one, and returns its capacity; while
    /// the device is short of memory the request is halved, down to `MIN_SCRATCH_KEYS` (or `n`
    /// if smaller), before giving up with [`GpuError::OutOfMemory`].
    fn ensure_scratch(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
        needs: Needs,
    ) -> Result<usize, GpuError> {
        let want = n.min(self.scratch_keys).max(1);
        if let Some(s) = &mut self.scratch {
            if s.hashes.len() >= want {
                // Big enough: add what this grouping needs besides (a filter whose inserts and
                // lookups group alternately keeps both), else allocate anew below.
                if s.complete(stream, needs).is_ok() {
                    return Ok(s.hashes.len());
                }
            }
        }
        self.scratch = None;
        let counts = alloc_zeros::<u32>(stream, "partition counts", COUNT_WORDS)?;
        let cursor = alloc_zeros::<u32>(stream, "partition cursors", COUNT_WORDS)?;
        let floor = MIN_SCRATCH_KEYS.min(want);
        let bytes_per_key = 8 + 4 * u64::from(needs.positions) + 8 * u64::from(needs.staging);
        let mut len = want;
        let (hashes, positions, staging) = loop {
            let attempt = alloc_zeros::<u64>(stream, "partition scratch", len).and_then(|h| {
                let p = needs
                    .positions
                    .then(|| alloc_zeros::<u32>(stream, "partition positions", len))
                    .transpose()?;
                let s = needs
                    .staging
                    .then(|| alloc_zeros::<u64>(stream, "partition staging", len))
                    .transpose()?;
                Ok((h, p, s))
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
        let segments = needs.staging.then(|| Segments::new(stream)).transpose()?;
        self.scratch = Some(Scratch {
            hashes,
            positions,
            staging,
            counts,
            cursor,
            segments,
        });
        Ok(len)
    }

    /// The scratch of a radix grouping of up to `n` keys (`two_levels`: with the staging
    /// buffer and segments), allocated if needed (see `ensure_scratch`), and the most keys one
    /// grouping may take (a chunk).
    pub(crate) fn radix_buffers(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
        two_levels: bool,
    ) -> Result<(usize, RadixBuffers<'_>), GpuError> {
        let needs = Needs {
            positions: false,
            staging: two_levels,
        };
        let chunk = self
            .ensure_scratch(stream, n, needs)?
            .min(self.scratch_keys);
        let s = self.scratch.as_mut().expect("scratch allocated above");
        let staging = match (two_levels, &mut s.staging, &mut s.segments) {
            (true, Some(a), Some(seg)) => Some((a, seg)),
            _ => None,
        };
        Ok((
            chunk,
            RadixBuffers {
                grouped: &mut s.hashes,
                staging,
                counts: &mut s.counts,
                cursor: &mut s.cursor,
            },
        ))
    }

    /// The passes' settings for keys read as `keys` says, with `kernels` and `seed`.
    pub(crate) fn passes<'k>(&self, kernels: &'k Kernels, seed: u64, hashes: bool) -> Passes<'k> {
        Passes {
            kernels,
            dev: self.dev,
            seed,
            mode: if hashes { MODE_HASHES } else { MODE_U64 },
        }
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
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let needs = Needs {
            positions: by.positions,
            staging: false,
        };
        let chunk = self
            .ensure_scratch(stream, n, needs)?
            .min(self.scratch_keys);
        let passes = self.passes(by.kernels, by.seed, keys.are_hashes());
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let mut a = 0;
        while a < n {
            let b = (a + chunk).min(n);
            let mut grouped = scratch.hashes.slice_mut(..b - a);
            let mut pos = match (&mut scratch.positions, by.positions) {
                (Some(p), true) => Some(p.slice_mut(..b - a)),
                _ => None,
            };
            let chunk_keys = keys.keys.slice(a..b);
            let (counts, cursor) = (&mut scratch.counts, &mut scratch.cursor);
            passes.counts(&chunk_keys, by.parts, counts, cursor, None, stream)?;
            let kernel = if pos.is_some() {
                Kernel::PartScatterPos
            } else {
                Kernel::PartScatter
            };
            let out = &mut grouped;
            passes.scatter(
                kernel,
                &chunk_keys,
                by.parts,
                cursor,
                out,
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
        self.ensure_scratch(stream, 1, Needs::default())?;
        let parts = self.partitions(params);
        let passes = self.passes(kernels, params.seed, hashes);
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let (counts, cursor) = (&mut scratch.counts, &mut scratch.cursor);
        passes.counts(keys, parts, counts, cursor, None, stream)?;
        passes.scatter(Kernel::PartScatter, keys, parts, cursor, out, None, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::Layout;

    fn partitioner(l2_bytes: u64) -> Partitioner {
        Partitioner::with_device(DeviceShape {
            sms: 132,
            l2_bytes,
            smem_optin: 227 << 10,
            smem_per_sm: 228 << 10,
        })
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
    fn cell_filters_group_big_batches_into_arrays_past_half_of_l2() {
        let p = partitioner(50 << 20);
        let p = Wanted(&p);
        let big = Params::new(Layout::L8x32, ((64u64 << 20) / 32) as u32);
        let small = Params::new(Layout::L8x32, ((16u64 << 20) / 32) as u32);
        assert!(p.wanted(InsertKernel::Auto, &big, AUTO_MIN_KEYS));
        assert!(!p.wanted(InsertKernel::Auto, &big, AUTO_MIN_KEYS - 1));
        assert!(!p.wanted(InsertKernel::Auto, &small, AUTO_MIN_KEYS));
        for grouped in [
            InsertKernel::Partitioned,
            InsertKernel::Radix,
            InsertKernel::Sliced,
        ] {
            assert!(p.wanted(grouped, &small, 0));
        }
        assert!(!p.wanted(InsertKernel::BulkReduce, &big, 1 << 30));
        assert!(!p.wanted(InsertKernel::Atomic, &big, 1 << 30));
        // Fewer than one key per 4 blocks: not worth grouping.
        let huge = Params::new(Layout::L8x32, u32::MAX);
        assert!(!p.wanted(InsertKernel::Auto, &huge, AUTO_MIN_KEYS));
    }

    /// The rule for a cell filter whose arrays span `params.byte_len()`.
    struct Wanted<'a>(&'a Partitioner);

    impl Wanted<'_> {
        fn wanted(&self, kernel: InsertKernel, params: &Params, keys: usize) -> bool {
            self.0
                .cells_grouped(kernel, params.byte_len(), params.blocks, keys)
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
