//! The inserts of a [`GpuImage`]'s static image (a static filter, a window's generation): from
//! device keys by the path its [`InsertKernel`] and the cost model choose
//! ([`crate::insert_path`]), and from host keys through the pipeline.

use std::sync::Arc;

use bloomlanes_core::{CellBits, Keys};
use cudarc::driver::{CudaSlice, CudaStream};

use crate::hashed::{Hashed, MODE_HASHES, MODE_U64};
use crate::image::GpuImage;
use crate::insert_path::{plan, Batch, InsertPlan};
use crate::launch::{launch_keys, Geometry, KeyArgs, Pass};
use crate::partition::GroupBy;
use crate::pipeline::{HostOp, PinnedOp, Pipeline};
use crate::radix::RadixInsert;
use crate::{GpuError, InsertKernel, PinnedBuffer};

impl GpuImage {
    /// What an insert of `keys` device-resident u64 keys or hashes into this static image (or a
    /// window's generation) does under the current [`InsertKernel`]: the path `Auto` picks by
    /// the cost model, how it groups the batch, and the model's estimate of its device time.
    pub fn insert_plan(&self, keys: usize) -> InsertPlan {
        self.insert_plan_with(self.insert_kernel, keys)
    }

    /// [`GpuImage::insert_plan`] under `kernel` (e.g. each of [`InsertKernel::PATHS`], to see
    /// the estimates `Auto` chose from). A batch larger than the scratch cap goes through in
    /// chunks: the plan is each chunk's, the estimate the whole batch's.
    pub fn insert_plan_with(&self, kernel: InsertKernel, keys: usize) -> InsertPlan {
        let chunk = keys.clamp(1, self.partitioner.scratch_keys());
        let batch = Batch {
            blocks: self.params.blocks,
            block_bytes: self.params.layout.block_bytes() as u64,
            keys: chunk as u64,
        };
        let bytes = self.partitioner.partition_bytes();
        let mut p = plan(kernel, &self.partitioner.device(), &batch, bytes);
        p.estimate_ms *= keys as f64 / chunk as f64;
        p
    }

    /// Whether a device-resident insert (or cell update) of `keys` u64 keys or hashes is grouped
    /// first under the current [`InsertKernel`]: for a static image or window, whether its
    /// [`InsertPlan`] groups (see [`InsertKernel::Auto`]); for a cell filter, whether its
    /// update is partitioned (always under the grouping paths; under `Auto` for batches of at
    /// least 2^22 keys and one key per 4 blocks into cells and image past half the L2).
    pub fn partitioned_for(&self, keys: usize) -> bool {
        if self.params.kind.cell_bits() == CellBits::One {
            return self.insert_plan(keys).levels() > 0;
        }
        let (kernel, blocks) = (self.insert_kernel, self.params.blocks);
        self.partitioner
            .cells_grouped(kernel, self.footprint, blocks, keys)
    }

    /// Queues the insert of `args` into generation `gen` on `stream`: u64 keys and hashes by the
    /// path of their [`InsertPlan`], records and strings directly; directly too when the
    /// scratch of a grouping path cannot be allocated under [`InsertKernel::Auto`].
    pub(crate) fn insert_args(
        &mut self,
        args: KeyArgs<'_>,
        gen: u32,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let n = args.len();
        let geo = self.geometry(gen);
        let words_keys = match &args {
            KeyArgs::U64(k) => Some((k, MODE_U64)),
            KeyArgs::Hashes(k) => Some((k, MODE_HASHES)),
            KeyArgs::Records { .. } | KeyArgs::Strings { .. } => None,
        };
        let plan = self.insert_plan(n);
        let mut direct = self.insert_kernel.direct();
        if let Some((k, mode)) = words_keys.filter(|_| plan.levels() > 0) {
            let keys = Hashed {
                keys: k.slice(..),
                mode,
            };
            let r = match plan.kernel {
                InsertKernel::Partitioned => self.insert_partitioned(&keys, geo, stream),
                _ => {
                    let (kernels, params) = (&*self.k, &self.params);
                    let insert = RadixInsert {
                        kernels,
                        params,
                        geo,
                        plan,
                    };
                    insert.queue(&mut self.partitioner, &keys, &mut self.words, stream)
                }
            };
            match r {
                Ok(()) => return Ok(()),
                // Nothing was queued (the scratch is allocated before any launch): fall back to
                // the direct insert.
                Err(GpuError::OutOfMemory { .. }) if self.insert_kernel == InsertKernel::Auto => {}
                Err(e) => return Err(e),
            }
        } else if words_keys.is_some() {
            direct = plan.kernel.direct();
        }
        let pass = Pass::Insert {
            words: &mut self.words,
            kernel: direct,
        };
        launch_keys(&self.k, &self.params, geo, stream, args, pass)
    }

    /// The one-level partitioned insert ([`InsertKernel::Partitioned`]) of `keys` into the
    /// generation of `geo`, queued on `stream`.
    fn insert_partitioned(
        &mut self,
        keys: &Hashed<'_>,
        geo: Geometry,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let parts = self.partitions();
        let (kernels, params, words) = (&self.k, &self.params, &mut self.words);
        let by = GroupBy::new(kernels, params.seed, parts, false);
        self.partitioner
            .for_each_group(by, keys, stream, |_, grouped, _| {
                let pass = Pass::Insert {
                    words: &mut *words,
                    kernel: crate::launch::DirectInsert::BulkReduce,
                };
                let grouped = KeyArgs::Hashes(grouped.keys);
                launch_keys(kernels, params, geo, stream, grouped, pass)
            })
    }

    /// Inserts keys from host memory into generation `gen`, streamed through pinned buffers in
    /// chunks, and waits.
    pub(crate) fn insert_host(&mut self, keys: Keys<'_>, gen: u32) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let kernel = self.insert_kernel.direct();
        let (pipeline, words) = self.pipeline_and_words(gen);
        pipeline.run_host(keys, HostOp::Insert { words, kernel })
    }

    /// Inserts u64 keys in pinned memory into generation `gen` and waits.
    pub(crate) fn insert_pinned_into(
        &mut self,
        keys: &PinnedBuffer<u64>,
        gen: u32,
    ) -> Result<(), GpuError> {
        self.check_hash(false)?;
        let kernel = self.insert_kernel.direct();
        let (pipeline, words) = self.pipeline_and_words(gen);
        pipeline.run_pinned(keys, PinnedOp::Insert { words, kernel })
    }

    /// The host pipeline of this image and its words, writable, for inserts into generation
    /// `gen`.
    fn pipeline_and_words(&mut self, gen: u32) -> (Pipeline<'_>, &mut CudaSlice<u32>) {
        let pipeline = Pipeline {
            ctx: &self.ctx,
            kernels: &self.k,
            params: &self.params,
            geo: Geometry {
                gens: self.gens,
                gen,
            },
            after: self.stream.raw(),
            chunk_keys: self.chunk_keys,
        };
        (pipeline, &mut self.words)
    }
}
