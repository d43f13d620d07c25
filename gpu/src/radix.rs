//! The radix-grouped inserts of a static image ([`InsertKernel::Radix`],
//! [`InsertKernel::Sliced`]): a batch's hashes grouped into the plan's partitions in one or two
//! passes of at most [`RADIX_FANOUT`](crate::insert_path) partitions each (`cuda/partition.cu`),
//! then inserted with the bulk-reduce kernel in grouped order, or by the slice kernel
//! (`bl_insert_slices`, `cuda/keys.cu`): one CTA per slice of whole blocks in shared memory.
//! Every path sets the bits the direct kernels set (an OR of each key's block mask, in any order).

use std::sync::Arc;

use bloomlanes_core::Params;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, LaunchConfig, PushKernelArg};

use crate::hashed::Hashed;
use crate::insert_path::{DeviceShape, InsertKernel, InsertPlan, RADIX_FANOUT};
use crate::kernel::{Kernel, THREADS};
use crate::launch::{launch_keys, DirectInsert, Geometry, KeyArgs, Pass};
use crate::module::{dynamic_smem, grid, Kernels};
use crate::partition::{Partitioner, Passes, RadixBuffers};
use crate::GpuError;

/// One radix-grouped insert: where it inserts and how.
pub(crate) struct RadixInsert<'a> {
    pub(crate) kernels: &'a Kernels,
    pub(crate) params: &'a Params,
    /// The image's geometry and the generation inserted into.
    pub(crate) geo: Geometry,
    /// A plan of [`InsertKernel::Radix`] or [`InsertKernel::Sliced`] with at least one
    /// partition.
    pub(crate) plan: InsertPlan,
}

impl RadixInsert<'_> {
    /// Queues the insert of `keys` into `words` on `stream`, in chunks of at most the scratch
    /// size (each grouped, then inserted). Nothing is queued if the scratch cannot be allocated.
    pub(crate) fn queue(
        &self,
        partitioner: &mut Partitioner,
        keys: &Hashed<'_>,
        words: &mut CudaSlice<u32>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let plan = &self.plan;
        let radix = matches!(plan.kernel, InsertKernel::Radix | InsertKernel::Sliced);
        if !radix || plan.partitions == 0 {
            return Err(GpuError::internal(
                "radix insert",
                format!("not a radix plan: {plan:?}"),
            ));
        }
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let passes = partitioner.passes(self.kernels, self.params.seed, keys.are_hashes());
        let dev = partitioner.device();
        let (chunk, mut bufs) = partitioner.radix_buffers(stream, n, plan.coarse > 0)?;
        let mut a = 0;
        while a < n {
            let b = (a + chunk).min(n);
            let m = b - a;
            group(&passes, plan, &keys.keys.slice(a..b), &mut bufs, stream)?;
            let grouped = bufs.grouped.slice(..m);
            match plan.kernel {
                InsertKernel::Sliced => self.slices(&dev, words, &grouped, bufs.cursor, stream)?,
                _ => {
                    let pass = Pass::Insert {
                        words: &mut *words,
                        kernel: DirectInsert::BulkReduce,
                    };
                    let grouped = KeyArgs::Hashes(grouped);
                    launch_keys(self.kernels, self.params, self.geo, stream, grouped, pass)?;
                }
            }
            a = b;
        }
        Ok(())
    }

    /// Queues the slice insert of `grouped` (grouped into the plan's partitions, `ends[p]` the end
    /// of partition `p`'s run) into `words` on `stream`: one CTA per slice of
    /// `plan.slice_blocks` blocks.
    fn slices(
        &self,
        dev: &DeviceShape,
        words: &mut CudaSlice<u32>,
        grouped: &CudaView<'_, u64>,
        ends: &CudaSlice<u32>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let (params, geo, plan) = (self.params, self.geo, &self.plan);
        geo.check(params, words.len())?;
        let blocks = u64::from(params.blocks);
        let sb = plan.slice_blocks;
        let smem = sb * params.layout.block_bytes() as u64;
        let parts = plan.partitions;
        let n = grouped.len() as u64;
        if sb == 0 || smem > dev.slice_bytes() || (ends.len() as u64) < u64::from(parts) {
            return Err(GpuError::internal(
                "radix insert",
                format!("bad slice plan {plan:?} for {blocks} blocks"),
            ));
        }
        let slices = blocks.div_ceil(sb).max(1);
        let f = self.kernels.get(geo.kernel(Kernel::InsertSlices))?;
        dynamic_smem(f, dev.slice_bytes())?;
        let cfg = LaunchConfig {
            grid_dim: (grid(slices, 1)?.grid_dim.0, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        let mut l = stream.launch_builder(f);
        l.arg(&mut *words)
            .arg(&blocks)
            .arg(grouped)
            .arg(&n)
            .arg(ends)
            .arg(&parts)
            .arg(&sb);
        geo.push(&mut l);
        // SAFETY: `bl_insert_slices(u32* words, u64 blocks, const u64* hashes, u64 n,
        // const u32* ends, u32 parts, u64 sb)` takes these arguments in this order, and its
        // window twin `(…, u32 gens, u32 gen)` after them (`Geometry::push`, with the kernel of
        // the same geometry). CTA `s` copies blocks `[s × sb, min((s + 1) × sb, blocks))` of
        // generation `gen < gens` (storage block `b × gens + gen`) into its dynamic shared
        // memory, `sb × block_bytes` = `smem` bytes (the launch's; the kernel's limit was raised
        // to the device's slice budget, which holds them: checked), and back: `words` holds
        // every generation (`Geometry::check`). It reads `ends[p]` for `p ≤ p_hi < parts` and
        // `ends[p_lo − 1]` for `p_lo ≥ 1` (partitions are `(x × parts) >> 32 < parts`), inside
        // `ends` (checked), and `hashes[i]` for `i` below `min(ends[p_hi], n)`, `n` the view's
        // length, whatever the ends hold. It ORs each hash only into the slice's own blocks in
        // shared memory (block index tested against the slice), and slices are disjoint.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_insert_slices)", n, e))?;
        Ok(())
    }
}

/// Queues the grouping of `keys` (at most the scratch's capacity) by `plan` on `stream`: their
/// hashes into `bufs.grouped[..keys.len()]` grouped by partition, and `bufs.cursor[p]` = the end
/// of partition `p`'s run.
fn group(
    passes: &Passes<'_>,
    plan: &InsertPlan,
    keys: &CudaView<'_, u64>,
    bufs: &mut RadixBuffers<'_>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    let m = keys.len();
    let parts = plan.partitions;
    let (counts, cursor) = (&mut *bufs.counts, &mut *bufs.cursor);
    match (&mut bufs.staging, plan.coarse) {
        (_, 0) => {
            passes.counts(keys, parts, counts, cursor, None, stream)?;
            let mut out = bufs.grouped.slice_mut(..m);
            passes.scatter(
                Kernel::RadixScatterKeys,
                keys,
                parts,
                cursor,
                &mut out,
                None,
                stream,
            )
        }
        (Some((staged, segments)), coarse) if coarse <= RADIX_FANOUT => {
            let fine = parts / coarse;
            passes.counts(
                keys,
                parts,
                counts,
                cursor,
                Some((coarse, segments)),
                stream,
            )?;
            let mut level1 = staged.slice_mut(..m);
            let coarse_cursor = &mut segments.coarse_cursor;
            let k = Kernel::RadixScatterKeys;
            passes.scatter(k, keys, coarse, coarse_cursor, &mut level1, None, stream)?;
            let mut out = bufs.grouped.slice_mut(..m);
            let level1 = staged.slice(..m);
            passes.scatter_segments(&level1, coarse, fine, segments, cursor, &mut out, stream)
        }
        _ => Err(GpuError::internal(
            "radix insert",
            format!("no staging for the two levels of {plan:?}"),
        )),
    }
}
