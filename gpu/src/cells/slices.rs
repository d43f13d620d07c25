//! The shared-memory slice shape of the cell kernels: updates of partition-grouped hashes with the
//! cells in shared memory (the counting filter's inserts and deletes, the spatial filter's
//! inserts; any [`CellUpdate`](bloomlanes_core::CellUpdate) of one batch).
//!
//! The direct kernels ([`CellDev::update`](super::CellDev::update)) pay a load
//! and a compare-and-swap with return per lane in global memory: two L2 round trips per lane, 8
//! lanes per key, even when the partitioner has made the words L2-resident. Here, after the
//! partitioner has grouped a batch's hashes by partition, one CTA per *slice* (a run of whole
//! blocks sized to half an SM's shared memory less the queues, so that two CTAs share an SM)
//! copies the slice's cells and image into shared memory, applies every grouped hash whose
//! block is in the slice with shared-memory compare-and-swap loops (the direct kernels'
//! rules: core's `CellUpdate::apply`), and copies the slice back. Slices are disjoint whole blocks, so no two CTAs touch one word, and the result is
//! the direct kernels' (the updates of one batch commute; a delete's decrements and statuses are
//! the same per key and counter, whatever the order within the batch).
//!
//! A slice reads only the grouped hashes of the partitions that can hold its blocks (their
//! bounds found by `bl_part_bounds`, a binary search per partition), so each hash is read by
//! about `blocks / parts / slice_blocks` CTAs (from L2: a partition's hashes are read by
//! neighbouring CTAs at about the same time); the batch is grouped into as many partitions as
//! the partitioner allows ([`MAX_PARTITIONS`]) to keep that small. Each warp first queues the
//! scanned hashes that fall in its slice (ballot, in shared memory), then applies the queue one
//! hash per lane: without the queue, only the one lane in ~14 whose hash was in the slice did
//! any work, and the shared-memory atomics of those sparse lanes made the kernel 10 times slower.
//!
//! # Memory traffic and time per key (insert, 2 GiB of 4-bit counters, 8x32, 2^28 keys, H100)
//!
//! Grouping (into 2048 partitions): 32 bytes, measured 8.8 ms (4.4 ms into the 154 partitions
//! of the CAS path: the scatter writes shorter runs). Image and counters read and written once:
//! `2 × 2.5 GiB / 2^28` = 20 bytes per key. Slices of 569 blocks (91 KiB) and 8192 blocks per
//! partition: each hash read by ≈ 14.4 slices from L2 (the scan alone measured 4.4 ms with
//! 723-block slices). The rest is the copies and the shared-memory updates: 8 compare-and-swaps
//! and 8 ORs per key (a delete: 8 compare-and-swaps, an AND only where a counter reaches 0, and
//! the key's status read and written in global memory). Measured: 31 ms for the insert of 2^28
//! keys (8.6 G/s), see BENCHMARKS.md.

use std::sync::Arc;

use bloomlanes_core::{CellBits, Params};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::hashed::Hashed;
use crate::kernel::{Kernel, MAX_PARTITIONS, SLICE_KEYS_PER_THREAD, THREADS};
use crate::module::{dynamic_smem, grid, Kernels};
use crate::GpuError;

/// Shared memory of a slice kernel's queues: a hash (8 bytes) and a key index (4) per scanned
/// key of one step.
const QUEUE_BYTES: u64 = THREADS as u64 * SLICE_KEYS_PER_THREAD as u64 * 12;

/// The shared memory of the device, as the slice kernels size their slices by it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceBudget {
    /// Bytes of shared memory one CTA may use (opt-in maximum and half an SM's, whichever is
    /// less); 0 if the device reports neither.
    bytes: u64,
}

/// Bytes of image and cells per block.
fn block_bytes(params: &Params, bits: CellBits) -> u64 {
    let block = params.layout.block_bytes() as u64;
    block + block * u64::from(bits.bits())
}

impl SliceBudget {
    /// The budget of the device of `ctx`.
    pub(crate) fn new(ctx: &CudaContext) -> SliceBudget {
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u64).unwrap_or(0);
        let optin = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        let per_sm =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
        // Two CTAs per SM (each also has 1 KiB reserved by the system), so that one CTA's copies
        // overlap the other's updates.
        SliceBudget {
            bytes: optin.min((per_sm / 2).saturating_sub(1024)),
        }
    }

    /// How the slice kernels cut a filter of `params` with `bits`-bit cells, grouped into at
    /// least `min_parts` partitions; `None` if one block does not fit the budget.
    pub(crate) fn plan(
        &self,
        params: &Params,
        bits: CellBits,
        min_parts: u32,
    ) -> Option<SlicePlan> {
        let per_block = block_bytes(params, bits);
        let blocks = u64::from(params.blocks.max(1));
        let slice_blocks = (self.bytes.saturating_sub(QUEUE_BYTES) / per_block).min(blocks);
        if slice_blocks == 0 {
            return None;
        }
        let slices = blocks.div_ceil(slice_blocks);
        let parts = slices.clamp(u64::from(min_parts), u64::from(MAX_PARTITIONS)) as u32;
        Some(SlicePlan {
            slice_blocks,
            slices,
            smem_bytes: (QUEUE_BYTES + slice_blocks * per_block) as u32,
            smem_limit: self.bytes.min(u64::from(u32::MAX)) as u32,
            parts,
        })
    }
}

/// How a filter is cut into slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlicePlan {
    /// Blocks per slice (the last may have fewer).
    pub(crate) slice_blocks: u64,
    /// Slices (CTAs of a slice launch).
    pub(crate) slices: u64,
    /// Dynamic shared memory per CTA: the queues, one slice's cells and image.
    pub(crate) smem_bytes: u32,
    /// Partitions to group a batch into.
    pub(crate) parts: u32,
    /// The device's budget, at least `smem_bytes`: the kernels' dynamic shared memory limit is
    /// set to it (the same for every filter on the device, so that filters used from several
    /// threads never lower it under one another's launch).
    pub(crate) smem_limit: u32,
}

impl SlicePlan {
    /// Checks that the plan covers a filter of `params` with `bits`-bit cells with slices that
    /// fit their shared memory.
    pub(crate) fn check(&self, params: &Params, bits: CellBits) -> Result<(), GpuError> {
        let per_block = block_bytes(params, bits);
        let blocks = u64::from(params.blocks);
        if self.slice_blocks == 0
            || self
                .slices
                .checked_mul(self.slice_blocks)
                .is_none_or(|c| c < blocks)
            || u64::from(self.smem_bytes) < QUEUE_BYTES + self.slice_blocks.min(blocks) * per_block
            || self.smem_bytes > self.smem_limit
            || self.smem_limit > i32::MAX as u32
        {
            return Err(GpuError::Cuda {
                op: "cell slices",
                bytes: 0,
                message: format!("bad slice plan {self:?} for {blocks} blocks"),
            });
        }
        Ok(())
    }
}

/// The partition bounds of one grouping ([`MAX_PARTITIONS`] + 1 words), kept by the filter.
#[derive(Default)]
pub(crate) struct Bounds(Option<CudaSlice<u32>>);

impl Bounds {
    /// The buffer, allocated on first use.
    pub(crate) fn get(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Result<&mut CudaSlice<u32>, GpuError> {
        if self.0.is_none() {
            let len = MAX_PARTITIONS as usize + 1;
            self.0 = Some(alloc_zeros::<u32>(stream, "partition bounds", len)?);
        }
        Ok(self.0.as_mut().expect("allocated above"))
    }

    /// Frees the buffer.
    pub(crate) fn release(&mut self) {
        self.0 = None;
    }
}

/// A slice launch's inputs besides the filter: the plan and the bounds buffer.
pub(crate) struct Sliced<'b> {
    pub(crate) plan: SlicePlan,
    pub(crate) bounds: &'b mut CudaSlice<u32>,
}

/// Queues `bounds[p]` = the first index of `keys` (hashes grouped by partition of
/// `s.plan.parts`) in partition `p` or later, for `p ≤ parts`.
pub(crate) fn part_bounds(
    kernels: &Kernels,
    keys: &Hashed<'_>,
    s: &mut Sliced<'_>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    let n = keys.len() as u64;
    let parts = s.plan.parts;
    if parts == 0
        || parts > MAX_PARTITIONS
        || (s.bounds.len() as u64) <= u64::from(parts)
        || n > u64::from(u32::MAX)
    {
        return Err(GpuError::Cuda {
            op: "cell slices",
            bytes: 0,
            message: format!(
                "bad bounds launch: {parts} partitions, {n} keys, {} bounds",
                s.bounds.len()
            ),
        });
    }
    let mut l = stream.launch_builder(kernels.get(Kernel::PartBounds)?);
    l.arg(&keys.keys).arg(&n).arg(&parts).arg(&mut *s.bounds);
    // SAFETY: `bl_part_bounds(const u64* hashes, u64 n, u32 parts, u32* bounds)` takes these
    // arguments in this order. Thread `p ≤ parts` reads `hashes[i]` for `i < n` (the view's
    // length; binary search over [0, n)) and writes `bounds[p]`; `bounds` holds more than
    // `parts` words (checked), and the values, at most `n < 2^32`, fit.
    unsafe { l.launch(grid(u64::from(parts) + 1, u64::from(THREADS))?) }
        .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_bounds)", n, e))?;
    Ok(())
}

/// The launch of one slice kernel: a CTA per slice with the slice's shared memory (the kernel's
/// dynamic shared memory limit raised to the device's budget).
pub(crate) fn config(
    kernels: &Kernels,
    kernel: Kernel,
    plan: &SlicePlan,
) -> Result<LaunchConfig, GpuError> {
    dynamic_smem(kernels.get(kernel)?, u64::from(plan.smem_limit))?;
    let ctas = u32::try_from(plan.slices).map_err(|_| GpuError::TooManyElements {
        what: "cell slices",
        len: plan.slices,
        elem_bytes: 0,
    })?;
    Ok(LaunchConfig {
        grid_dim: (ctas, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: plan.smem_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{CounterBits, FilterKind, Layout};

    fn params(layout: Layout, blocks: u32, bits: CounterBits) -> Params {
        Params::new(layout, blocks).with_kind(FilterKind::Counting { counter_bits: bits })
    }

    fn cells(bits: CounterBits) -> CellBits {
        CellBits::from(bits)
    }

    #[test]
    fn slices_cover_the_filter_in_half_an_sm_of_shared_memory() {
        // An H100: 227 KiB opt-in, 228 KiB per SM.
        let b = SliceBudget {
            bytes: (228 << 10) / 2 - 1024,
        };
        let p = b
            .plan(
                &params(Layout::L8x32, 1 << 24, CounterBits::Four),
                cells(CounterBits::Four),
                1,
            )
            .unwrap();
        assert_eq!(p.slice_blocks, (b.bytes - QUEUE_BYTES) / 160);
        assert_eq!(p.slices, (1u64 << 24).div_ceil(p.slice_blocks));
        assert!(u64::from(p.smem_bytes) <= b.bytes);
        assert_eq!(p.parts, MAX_PARTITIONS);
        // A small filter: one slice of all its blocks, partitions as asked.
        let p = b
            .plan(
                &params(Layout::L16x64, 10, CounterBits::Eight),
                cells(CounterBits::Eight),
                3,
            )
            .unwrap();
        assert_eq!(
            (p.slice_blocks, p.slices, p.smem_bytes, p.parts),
            (10, 1, (QUEUE_BYTES + 10 * 128 * 9) as u32, 3)
        );
        // 16-bit cells: 17 bytes of image and cells per image byte.
        let p = b
            .plan(
                &params(Layout::L8x32, 1 << 20, CounterBits::Four),
                CellBits::Sixteen,
                1,
            )
            .unwrap();
        assert_eq!(p.slice_blocks, (b.bytes - QUEUE_BYTES) / (32 * 17));
        // No shared memory: no plan.
        let none = SliceBudget {
            bytes: QUEUE_BYTES + 100,
        };
        assert!(none
            .plan(
                &params(Layout::L8x32, 10, CounterBits::Four),
                cells(CounterBits::Four),
                1
            )
            .is_none());
    }
}
