//! The one launcher of the cell kernels (`cuda/cells.cu`): the updates of core's cell algebra
//! ([`CellUpdate`]: `Set`, `Increment`, `Decrement`, `Decay`, `Max`) on packed 4-, 8- and 16-bit
//! cells in the direct (and partitioned) and shared-memory slice shapes, and its reductions
//! ([`CellReduce`]: `AllNonZero`, `Min`). Every cell kernel takes the one parameter list
//! `BL_CELL_PARAMS`, pushed by [`launch_cells`] alone after [`CellCall::check`]; the counting and
//! spatial filters are instances of these calls (`counting_delete.rs`, `cell_filter.rs`).

use std::sync::Arc;

use bloomlanes_core::cell::cell_words;
use bloomlanes_core::{CellBits, CellReduce, CellUpdate, Params};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};

use crate::entry::{reduce_kernel, CellOp};
use crate::error::output_holds;
use crate::hashed::Hashed;
use crate::kernel::{
    Kernel, KEYS_PER_THREAD, MAX_PARTITIONS, STATUS_LANES, STATUS_RECORD, THREADS,
};
use crate::module::{grid, Kernels};
use crate::GpuError;

mod slices;

pub(crate) use slices::{Bounds, SliceBudget, SlicePlan, Sliced};

/// The operand of an update: one for the batch, or one per key (indexed like the answers).
#[derive(Debug)]
pub(crate) enum Operand<'c> {
    /// The same operand for every key.
    One(u32),
    /// `values[p]` for the key at position `p` of the batch (at least one per key).
    PerKey(CudaView<'c, u32>),
}

/// Where a reduction writes key `p`'s answer: 1, 2 or 4 bytes each, at least one per key.
#[derive(Debug)]
#[doc(hidden)]
pub enum Answers<'c> {
    /// One byte per key.
    Bytes(CudaViewMut<'c, u8>),
    /// One u16 per key.
    Halves(CudaViewMut<'c, u16>),
    /// One u32 per key.
    Words(CudaViewMut<'c, u32>),
}

impl Answers<'_> {
    /// Answers `r` of these (panics past the end, like slicing).
    pub(crate) fn slice_mut(&mut self, r: std::ops::Range<usize>) -> Answers<'_> {
        match self {
            Answers::Bytes(o) => Answers::Bytes(o.slice_mut(r)),
            Answers::Halves(o) => Answers::Halves(o.slice_mut(r)),
            Answers::Words(o) => Answers::Words(o.slice_mut(r)),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Answers::Bytes(o) => o.len(),
            Answers::Halves(o) => o.len(),
            Answers::Words(o) => o.len(),
        }
    }

    pub(crate) fn width(&self) -> u32 {
        match self {
            Answers::Bytes(_) => 1,
            Answers::Halves(_) => 2,
            Answers::Words(_) => 4,
        }
    }
}

/// The element types a cell reduction writes its answers in: `u8`, `u16` or `u32` (a class or
/// count always fits its cell width's type: 16-bit cells need `u16` or `u32`).
pub trait CellAnswer:
    sealed::Sealed + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Default + Copy
{
    /// Bytes per answer.
    const BYTES: u32;
    /// A view of answers as the kernels take it.
    #[doc(hidden)]
    fn answers(view: CudaViewMut<'_, Self>) -> Answers<'_>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

impl CellAnswer for u8 {
    const BYTES: u32 = 1;
    fn answers(view: CudaViewMut<'_, u8>) -> Answers<'_> {
        Answers::Bytes(view)
    }
}

impl CellAnswer for u16 {
    const BYTES: u32 = 2;
    fn answers(view: CudaViewMut<'_, u16>) -> Answers<'_> {
        Answers::Halves(view)
    }
}

impl CellAnswer for u32 {
    const BYTES: u32 = 4;
    fn answers(view: CudaViewMut<'_, u32>) -> Answers<'_> {
        Answers::Words(view)
    }
}

/// Everything a cell kernel takes besides the filter's arrays and the slice shape (see
/// `BL_CELL_PARAMS`).
#[derive(Debug)]
pub(crate) struct CellCall<'c> {
    /// The keys (u64 keys or hashes; grouped hashes for the partitioned and slice shapes).
    pub(crate) keys: Hashed<'c>,
    /// The operand of an update (ignored by reductions).
    pub(crate) operand: Operand<'c>,
    /// For grouped hashes: `pos[i]` = the position in the batch of grouped key `i`, by which its
    /// operand and answer are indexed. `None`: keys in input order.
    pub(crate) pos: Option<CudaView<'c, u32>>,
    /// A delete's statuses (one per key, indexed like the keys) with `flags`
    /// ([`STATUS_RECORD`] or [`STATUS_LANES`]); `None` with flags 0.
    pub(crate) status: Option<CudaViewMut<'c, u32>>,
    /// 0, [`STATUS_RECORD`] or [`STATUS_LANES`].
    pub(crate) flags: u32,
    /// With [`STATUS_RECORD`]: `stats[1]` += the cells found at 0.
    pub(crate) stats: Option<CudaViewMut<'c, u64>>,
    /// A reduction's answers.
    pub(crate) out: Option<Answers<'c>>,
}

fn bad_call(message: String) -> GpuError {
    GpuError::Cuda {
        op: "cell launch",
        bytes: 0,
        message,
    }
}

impl<'c> CellCall<'c> {
    /// An update of `keys` (in input order) with one operand.
    pub(crate) fn update(keys: Hashed<'c>, operand: Operand<'c>) -> CellCall<'c> {
        CellCall {
            keys,
            operand,
            pos: None,
            status: None,
            flags: 0,
            stats: None,
            out: None,
        }
    }

    /// A reduction of `keys` into `out`.
    pub(crate) fn reduce(keys: Hashed<'c>, out: Answers<'c>) -> CellCall<'c> {
        CellCall {
            out: Some(out),
            ..CellCall::update(keys, Operand::One(0))
        }
    }

    /// Checks every length and flag the kernels rely on (the SAFETY argument of
    /// [`launch_cells`] rests on these).
    fn check(&self) -> Result<(), GpuError> {
        let n = self.keys.len();
        let short = |what: &str, len: usize, need: usize| {
            if len < need {
                Err(bad_call(format!("{what} holds {len}, {need} needed")))
            } else {
                Ok(())
            }
        };
        if let Some(p) = &self.pos {
            short("positions", p.len(), n)?;
        }
        if let Operand::PerKey(v) = &self.operand {
            short("operands", v.len(), n)?;
        }
        match (self.flags, &self.status) {
            (0, None) => {}
            (STATUS_RECORD | STATUS_LANES, Some(s)) => short("statuses", s.len(), n)?,
            (flags, _) => return Err(bad_call(format!("status flags {flags} without statuses"))),
        }
        if self.flags == STATUS_RECORD {
            short("counts", self.stats.as_ref().map_or(0, |s| s.len()), 2)?;
        }
        if let Some(o) = &self.out {
            output_holds(n, o.len())?;
        }
        Ok(())
    }
}

/// A cell filter's arrays as a kernel reads or writes them.
pub(crate) enum CellArrays<'a> {
    /// An update writes the image and the cells.
    Write {
        image: &'a mut CudaSlice<u32>,
        cells: &'a mut CudaSlice<u32>,
    },
    /// A reduction reads the image (first: a clear bit answers 0) and the cells.
    Read {
        image: &'a CudaSlice<u32>,
        cells: &'a CudaSlice<u32>,
    },
}

/// The filter a cell kernel runs on: its kernels, parameters and cell width.
#[derive(Clone, Copy)]
pub(crate) struct CellShape<'a> {
    pub(crate) kernels: &'a Kernels,
    pub(crate) params: &'a Params,
    pub(crate) bits: CellBits,
}

impl CellShape<'_> {
    /// Checks that the arrays hold every word the kernels can index for these parameters, and
    /// that the cells are 4, 8 or 16 bits wide.
    fn check_arrays(&self, arrays: &CellArrays<'_>) -> Result<(), GpuError> {
        if self.bits == CellBits::One {
            return Err(bad_call(
                "the cell kernels take 4-, 8- or 16-bit cells".into(),
            ));
        }
        let (image, cells) = match arrays {
            CellArrays::Write { image, cells } => (image.len(), cells.len()),
            CellArrays::Read { image, cells } => (image.len(), cells.len()),
        };
        let (want_image, want_cells) = (self.params.u32_len(), cell_words(self.params, self.bits));
        if (image as u64) < want_image || (cells as u64) < want_cells {
            return Err(bad_call(format!(
                "arrays of {image} + {cells} words for {want_image} + {want_cells}"
            )));
        }
        Ok(())
    }
}

/// The slice shape of a launch: the partition bounds of the grouped keys and the plan.
pub(crate) struct SliceArgs<'b> {
    pub(crate) bounds: &'b CudaSlice<u32>,
    pub(crate) plan: SlicePlan,
}

/// Queues cell kernel `kernel` over `call` on the filter `arrays` of `shape`, with the slice
/// shape's arguments if `slices` is given (else the direct shape's grid): the one place where
/// cell kernels are launched. Checks every length first; a batch of no keys launches nothing.
pub(crate) fn launch_cells(
    shape: CellShape<'_>,
    stream: &Arc<CudaStream>,
    kernel: Kernel,
    mut arrays: CellArrays<'_>,
    mut call: CellCall<'_>,
    slices: Option<&SliceArgs<'_>>,
) -> Result<(), GpuError> {
    shape.check_arrays(&arrays)?;
    call.check()?;
    let n = call.keys.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let (cfg, parts, sb): (LaunchConfig, u32, u64) = match slices {
        Some(s) => {
            s.plan.check(shape.params, shape.bits)?;
            if s.plan.parts == 0
                || s.plan.parts > MAX_PARTITIONS
                || (s.bounds.len() as u64) <= u64::from(s.plan.parts)
                || n > u64::from(u32::MAX)
            {
                return Err(bad_call(format!(
                    "slices over {} partitions, {n} keys, {} bounds",
                    s.plan.parts,
                    s.bounds.len()
                )));
            }
            let cfg = slices::config(shape.kernels, kernel, &s.plan)?;
            (cfg, s.plan.parts, s.plan.slice_blocks)
        }
        None => (grid(n, u64::from(THREADS * KEYS_PER_THREAD))?, 0, 0),
    };
    let (blocks, seed, cbits) = (
        u64::from(shape.params.blocks),
        shape.params.seed,
        shape.bits.bits(),
    );
    let (value, flags, out_bytes) = (
        match call.operand {
            Operand::One(v) => v,
            Operand::PerKey(_) => 0,
        },
        call.flags,
        call.out.as_ref().map_or(0, Answers::width),
    );
    let null = 0u64;
    let mut l = stream.launch_builder(shape.kernels.get(kernel)?);
    match &mut arrays {
        CellArrays::Write { image, cells } => l.arg(&mut **image).arg(&mut **cells),
        CellArrays::Read { image, cells } => l.arg(*image).arg(*cells),
    };
    l.arg(&blocks)
        .arg(&call.keys.keys)
        .arg(&n)
        .arg(&seed)
        .arg(&call.keys.mode)
        .arg(&cbits)
        .arg(&value);
    match &call.operand {
        Operand::PerKey(v) => l.arg(v),
        Operand::One(_) => l.arg(&null),
    };
    match &call.pos {
        Some(p) => l.arg(p),
        None => l.arg(&null),
    };
    match &mut call.status {
        Some(s) => l.arg(s),
        None => l.arg(&null),
    };
    l.arg(&flags);
    match &mut call.stats {
        Some(s) => l.arg(s),
        None => l.arg(&null),
    };
    match slices {
        Some(s) => l.arg(s.bounds),
        None => l.arg(&null),
    };
    l.arg(&parts).arg(&sb);
    match &mut call.out {
        Some(Answers::Bytes(o)) => l.arg(o),
        Some(Answers::Halves(o)) => l.arg(o),
        Some(Answers::Words(o)) => l.arg(o),
        None => l.arg(&null),
    };
    l.arg(&out_bytes);
    // SAFETY: every cell kernel takes `BL_CELL_PARAMS` = `(u32* image, u32* cells, u64 blocks,
    // const u64* keys, u64 n, u64 seed, int mode, u32 cbits, u32 value, const u32* values,
    // const u32* pos, u32* status, u32 flags, u64* stats, const u32* bounds, u32 parts, u64 sb,
    // u8* out, u32 out_bytes)` (tested against the source below), pushed here in this order and
    // with these sizes; an absent pointer is a null u64, and the kernels dereference `values`,
    // `pos`, `status` and `stats` only when they are not null or `flags` says so (a reduction
    // reads `image` and never writes it, an update never touches `out`). Everything the kernel
    // touches is inside its buffer:
    // - image and cells: for any hash the block is `((h >> 32) × blocks) >> 32 < blocks` and each
    //   cell `k = (block × L + lane) × W + bit < blocks × L × W`; the kernels index image word
    //   `k / 32` (and the block's `block_u32s` words) and cell word `k >> (5 − log2 cbits)` with
    //   cbits = 4, 8 or 16 from `CellBits`: below `params.u32_len()` and `cell_words(params,
    //   bits)`, which the arrays hold (`check_arrays`). The slice shape copies whole blocks
    //   `[s × sb, min((s + 1) × sb, blocks))` of both arrays to and from dynamic shared memory
    //   that holds the queues and `min(sb, blocks)` blocks of both, with the kernel's limit at
    //   least that, and no CTA starts past the blocks (`SlicePlan::check`, `slices::config`);
    //   it reads `bounds[p]` for `p ≤ parts` (`bounds` holds more than `parts` words, checked;
    //   written by `bl_part_bounds` for these keys and `parts`, values ≤ n).
    // - keys `[0, n)`, n = the view's length; `values[p]` and answers `out[p]` for positions
    //   `p < n` only (the kernels test `p < n` whatever `pos` holds); `pos[i]`, `status[i]` for
    //   `i < n`; `stats[1]`: each at least that long (`CellCall::check`; `out` at least `n`
    //   elements of `out_bytes` bytes). Grouped indices fit the queue's u32 (n < 2^32, checked).
    // Updates get the arrays as `&mut` and reductions the cells as `&`, so cudarc orders every
    // launch after earlier uses of the filter on other streams.
    unsafe { l.launch(cfg) }.map_err(|e| GpuError::cuda("cuLaunchKernel(cell kernel)", n, e))?;
    Ok(())
}

/// A cell filter's arrays on the device, for its updates.
pub(crate) struct CellDev<'a> {
    pub(crate) shape: CellShape<'a>,
    /// The projection image: `params.u32_len()` words.
    pub(crate) image: &'a mut CudaSlice<u32>,
    /// The cells: `cell_words(params, bits)` words.
    pub(crate) cells: &'a mut CudaSlice<u32>,
}

impl CellDev<'_> {
    fn arrays(&mut self) -> CellArrays<'_> {
        CellArrays::Write {
            image: self.image,
            cells: self.cells,
        }
    }

    /// Queues `update` of the keys of `call` (its operand replaced by the update's own unless
    /// the call has one per key) in the direct shape: keys in input order, or grouped hashes
    /// with their positions.
    pub(crate) fn update(
        &mut self,
        update: CellUpdate,
        mut call: CellCall<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let (op, value) = CellOp::of(update);
        if let Operand::One(_) = call.operand {
            call.operand = Operand::One(value);
        }
        let shape = self.shape;
        launch_cells(shape, stream, op.update_kernel(), self.arrays(), call, None)
    }

    /// Queues `update` of `call`'s keys (hashes grouped into `sliced.plan.parts` partitions) in
    /// the shared-memory slice shape: first the partition bounds, then one CTA per slice.
    pub(crate) fn update_sliced(
        &mut self,
        update: CellUpdate,
        mut call: CellCall<'_>,
        sliced: &mut Sliced<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let (op, value) = CellOp::of(update);
        if let Operand::One(_) = call.operand {
            call.operand = Operand::One(value);
        }
        if call.flags == STATUS_LANES {
            return Err(bad_call("the slice shape takes no lane masks".into()));
        }
        if call.keys.len() == 0 {
            return Ok(());
        }
        slices::part_bounds(self.shape.kernels, &call.keys, sliced, stream)?;
        let args = SliceArgs {
            bounds: sliced.bounds,
            plan: sliced.plan,
        };
        let shape = self.shape;
        launch_cells(
            shape,
            stream,
            op.slices_kernel(),
            self.arrays(),
            call,
            Some(&args),
        )
    }
}

/// Queues `reduce` of `call`'s keys over `cells` into its answers (direct shape; for grouped
/// hashes with their positions).
pub(crate) fn reduce_cells(
    shape: CellShape<'_>,
    image: &CudaSlice<u32>,
    cells: &CudaSlice<u32>,
    reduce: CellReduce,
    call: CellCall<'_>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    if call.out.is_none() {
        return Err(bad_call("a reduction without answers".into()));
    }
    let arrays = CellArrays::Read { image, cells };
    launch_cells(shape, stream, reduce_kernel(reduce), arrays, call, None)
}

#[cfg(test)]
mod tests {
    use crate::{kernel_source, KernelModule};
    use bloomlanes_core::Layout;

    #[test]
    fn the_cell_kernels_take_the_parameters_the_launcher_pushes() {
        // The order and types `launch_cells` pushes (see its SAFETY comment).
        let pushed = "#define BL_CELL_PARAMS u32* image, u32* cells, u64 blocks, const u64* keys, \
            u64 n, u64 seed, int mode, u32 cbits, \\\n    u32 value, const u32* values, const u32* \
            pos, u32* status, u32 flags, u64* stats, \\\n    const u32* bounds, u32 parts, u64 sb, \
            u8* out, u32 out_bytes\n";
        let src = kernel_source(Layout::L8x32, KernelModule::Cells);
        assert!(src.contains(pushed), "BL_CELL_PARAMS changed");
        assert_eq!(
            src.matches("__launch_bounds__(BL_THREADS) bl_cells_")
                .count(),
            12
        );
        if let Some(ptx) = crate::kernel::ptx::entries() {
            let list = pushed
                .trim_start_matches("#define BL_CELL_PARAMS ")
                .replace("\\\n", "");
            let sizes = crate::kernel::ptx::sizes(&list);
            assert_eq!(sizes.len(), 19);
            for (name, got) in ptx.iter().filter(|(n, _)| n.starts_with("bl_cells_")) {
                assert_eq!(got, &sizes, "{name}");
            }
        }
    }
}
