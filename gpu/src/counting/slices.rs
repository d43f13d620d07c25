//! The counting filter's sliced kernels: inserts and deletes of partition-grouped hashes with
//! shared-memory counters.
//!
//! The CAS kernels ([`CountingDev::insert`], the delete of [`CountingDev::attempt`]) pay a load
//! and a compare-and-swap with return per lane in global memory: two L2 round trips per lane, 8
//! lanes per key, even when the partitioner has made the words L2-resident. Here, after the
//! partitioner has grouped a batch's hashes by partition, one CTA per *slice* (a run of whole
//! blocks sized to half an SM's shared memory less the queues, so that two CTAs share an SM)
//! copies the slice's counters and image into shared memory, applies every grouped hash whose
//! block is in the slice with shared-memory compare-and-swap loops (same rules as the CAS
//! kernels: a counter at the maximum sticks, a counter at 0 is never decremented), and copies the
//! slice back. Slices are disjoint whole blocks, so no two CTAs touch one word, and the result is
//! the CAS kernels' (inserts commute; a delete's decrements and statuses are the same per key and
//! counter, whatever the order within the batch).
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

use bloomlanes_core::{CounterBits, Params};
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::counting_delete::CountingDev;
use crate::hashed::Hashed;
use crate::kernel::{Kernel, MAX_PARTITIONS, SLICE_KEYS_PER_THREAD, THREADS};

/// Shared memory of a slice kernel's queues: a hash (8 bytes) and a key index (4) per scanned
/// key of one step.
const QUEUE_BYTES: u64 = THREADS as u64 * SLICE_KEYS_PER_THREAD as u64 * 12;
use crate::module::grid;
use crate::GpuError;

/// The shared memory of the device, as the sliced kernels size their slices by it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SliceBudget {
    /// Bytes of shared memory one CTA may use (opt-in maximum and half an SM's, whichever is
    /// less); 0 if the device reports neither.
    bytes: u64,
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

    /// How the sliced kernels cut a filter of `params` with `bits`-bit counters, grouped into at
    /// least `min_parts` partitions; `None` if one block does not fit the budget.
    pub(crate) fn plan(
        &self,
        params: &Params,
        bits: CounterBits,
        min_parts: u32,
    ) -> Option<SlicePlan> {
        let block = params.layout.block_bytes() as u64;
        let per_block = block + block * u64::from(bits.bits());
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
    /// Slices (CTAs of a sliced launch).
    pub(crate) slices: u64,
    /// Dynamic shared memory per CTA: the queues, one slice's counters and image.
    pub(crate) smem_bytes: u32,
    /// Partitions to group a batch into.
    pub(crate) parts: u32,
    /// The device's budget, at least `smem_bytes`: the kernels' dynamic shared memory limit is
    /// set to it (the same for every filter on the device, so that filters used from several
    /// threads never lower it under one another's launch).
    pub(crate) smem_limit: u32,
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

/// A sliced launch's inputs besides the filter: the plan and the bounds buffer.
pub(crate) struct Sliced<'b> {
    pub(crate) plan: SlicePlan,
    pub(crate) bounds: &'b mut CudaSlice<u32>,
}

impl CountingDev<'_> {
    /// Queues `bounds[p]` = the first index of `keys` (hashes grouped by partition of
    /// `plan.parts`) in partition `p` or later, for `p ≤ parts`.
    fn part_bounds(
        &self,
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
                op: "counting slices",
                bytes: 0,
                message: format!(
                    "bad bounds launch: {parts} partitions, {n} keys, {} bounds",
                    s.bounds.len()
                ),
            });
        }
        let mut l = stream.launch_builder(self.kernels.get(Kernel::PartBounds));
        l.arg(&keys.keys).arg(&n).arg(&parts).arg(&mut *s.bounds);
        // SAFETY: `bl_part_bounds(const u64* hashes, u64 n, u32 parts, u32* bounds)` takes these
        // arguments in this order. Thread `p ≤ parts` reads `hashes[i]` for `i < n` (the view's
        // length; binary search over [0, n)) and writes `bounds[p]`; `bounds` holds more than
        // `parts` words (checked), and the values, at most `n < 2^32`, fit.
        unsafe { l.launch(grid(u64::from(parts) + 1, u64::from(THREADS))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_bounds)", n, e))?;
        Ok(())
    }

    /// The launch of one sliced kernel: a CTA per slice with the slice's shared memory (the
    /// kernel's dynamic shared memory limit raised to the device's budget).
    fn slice_config(&self, kernel: Kernel, plan: &SlicePlan) -> Result<LaunchConfig, GpuError> {
        let f = self.kernels.get(kernel);
        let err = |e| GpuError::cuda("cuFuncSetAttribute", u64::from(plan.smem_bytes), e);
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            plan.smem_limit as i32,
        )
        .map_err(err)?;
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            100,
        )
        .map_err(err)?;
        let ctas = u32::try_from(plan.slices).map_err(|_| GpuError::TooManyElements {
            what: "counting slices",
            len: plan.slices,
            elem_bytes: 0,
        })?;
        Ok(LaunchConfig {
            grid_dim: (ctas, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: plan.smem_bytes,
        })
    }

    /// Checks that `plan` covers this filter with slices that fit its shared memory.
    fn check_plan(&self, plan: &SlicePlan) -> Result<(), GpuError> {
        let block = self.params.layout.block_bytes() as u64;
        let per_block = block * (1 + u64::from(self.bits.bits()));
        let blocks = u64::from(self.params.blocks);
        if plan.slice_blocks == 0
            || plan
                .slices
                .checked_mul(plan.slice_blocks)
                .is_none_or(|c| c < blocks)
            || u64::from(plan.smem_bytes) < QUEUE_BYTES + plan.slice_blocks.min(blocks) * per_block
            || plan.smem_bytes > plan.smem_limit
            || plan.smem_limit > i32::MAX as u32
        {
            return Err(GpuError::Cuda {
                op: "counting slices",
                bytes: 0,
                message: format!("bad slice plan {plan:?} for {blocks} blocks"),
            });
        }
        Ok(())
    }

    /// Queues the sliced insert of `keys` (hashes grouped into `s.plan.parts` partitions).
    pub(crate) fn insert_sliced(
        &mut self,
        keys: &Hashed<'_>,
        s: &mut Sliced<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        self.check_arrays()?;
        self.check_plan(&s.plan)?;
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(());
        }
        self.part_bounds(keys, s, stream)?;
        let cfg = self.slice_config(Kernel::CountInsertSlices, &s.plan)?;
        let (blocks, cbits, parts, sb) = (
            u64::from(self.params.blocks),
            self.bits.bits(),
            s.plan.parts,
            s.plan.slice_blocks,
        );
        let mut l = stream.launch_builder(self.kernels.get(Kernel::CountInsertSlices));
        l.arg(&mut *self.image)
            .arg(&mut *self.counters)
            .arg(&blocks)
            .arg(&keys.keys)
            .arg(&n)
            .arg(&*s.bounds)
            .arg(&parts)
            .arg(&cbits)
            .arg(&sb);
        // SAFETY: `bl_count_insert_slices(u32* image, u32* counters, u64 blocks, const u64*
        // hashes, u64 n, const u32* bounds, u32 parts, u32 cbits, u64 sb)` takes these arguments
        // in this order. CTA `s` covers blocks `[s × sb, min((s + 1) × sb, blocks))` (the grid
        // covers all blocks and no CTA starts past them: `check_plan`) and copies exactly their
        // counter words (`L × W × cbits / 32` per block) and image words (`block_u32s` per
        // block) to and from its dynamic shared memory, which holds the queues (`QUEUE_BYTES`:
        // 12 bytes per thread and scanned key of a step) and `min(sb, blocks)` blocks of both
        // (`check_plan`), and the kernel's limit is at least that (`check_plan`, `slice_config`); those words lie inside both arrays (`check_arrays`). It reads
        // `bounds[p]` for `p ≤ parts` (written above for this `keys` and `parts`, `bounds` has
        // more than `parts` words) and `hashes[i]` for `i < min(bounds, n)` = the view's length.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_count_insert_slices)", n, e))?;
        Ok(())
    }

    /// Queues the sliced delete step of an attempt over `keys` (hashes grouped into
    /// `s.plan.parts` partitions) whose check has written `status`: for each accepted key, its
    /// counters decremented and its status set as `bl_count_delete` does; `stats[1]` += the
    /// counters found at 0.
    pub(crate) fn delete_sliced(
        &mut self,
        keys: &Hashed<'_>,
        status: &mut cudarc::driver::CudaViewMut<'_, u32>,
        stats: &mut CudaSlice<u64>,
        s: &mut Sliced<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        self.check_arrays()?;
        self.check_plan(&s.plan)?;
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(());
        }
        if status.len() < keys.len() || stats.len() < 2 {
            return Err(GpuError::Cuda {
                op: "counting slices",
                bytes: 0,
                message: format!(
                    "{} statuses and {} counts for {n} keys",
                    status.len(),
                    stats.len()
                ),
            });
        }
        self.part_bounds(keys, s, stream)?;
        let cfg = self.slice_config(Kernel::CountDeleteSlices, &s.plan)?;
        let (blocks, cbits, parts, sb) = (
            u64::from(self.params.blocks),
            self.bits.bits(),
            s.plan.parts,
            s.plan.slice_blocks,
        );
        let mut l = stream.launch_builder(self.kernels.get(Kernel::CountDeleteSlices));
        l.arg(&mut *self.image)
            .arg(&mut *self.counters)
            .arg(&blocks)
            .arg(&keys.keys)
            .arg(&n)
            .arg(&*s.bounds)
            .arg(&parts)
            .arg(&cbits)
            .arg(&sb)
            .arg(&mut *status)
            .arg(&mut *stats);
        // SAFETY: `bl_count_delete_slices(…, u64 sb, u32* status, u64* stats)` takes the
        // arguments of `bl_count_insert_slices` (see `insert_sliced`: the same checks cover its
        // shared memory, filter words, bounds and hashes), then these two. It reads and writes
        // `status[i]` for the same `i < n ≤ status.len()` (checked) and adds to `stats[1]`
        // (`stats.len() ≥ 2`, checked).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_count_delete_slices)", n, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{FilterKind, Layout};

    fn params(layout: Layout, blocks: u32, bits: CounterBits) -> Params {
        Params::new(layout, blocks).with_kind(FilterKind::Counting { counter_bits: bits })
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
                CounterBits::Four,
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
                CounterBits::Eight,
                3,
            )
            .unwrap();
        assert_eq!(
            (p.slice_blocks, p.slices, p.smem_bytes, p.parts),
            (10, 1, (QUEUE_BYTES + 10 * 128 * 9) as u32, 3)
        );
        // No shared memory: no plan.
        let none = SliceBudget {
            bytes: QUEUE_BYTES + 100,
        };
        assert!(none
            .plan(
                &params(Layout::L8x32, 10, CounterBits::Four),
                CounterBits::Four,
                1
            )
            .is_none());
    }
}
