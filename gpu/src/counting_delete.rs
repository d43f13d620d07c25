//! The counting filter's kernels as launches, and deletes that give the core's answer.
//!
//! # Delete semantics
//!
//! The core deletes a batch key by key, in input order: a key is refused (and changes nothing)
//! unless all its counters are positive; otherwise each of its counters that is not saturated
//! goes down by one, and an image bit is cleared when its counter reaches 0
//! ([`bloomlanes_core::CountingMut::remove_hash`]). On the GPU a batch (or a part of it) is first
//! *attempted* in parallel:
//!
//! 1. `bl_count_check` accepts each key iff all its image bits are set before the attempt;
//! 2. `bl_cells_update_dec` (or, for a partitioned batch, `bl_cells_slices_dec`: the same rules
//!    on a slice of the filter in shared memory, see `cells/slices.rs`), with the status
//!    recorded (`BL_STATUS_RECORD`), decrements the counters of the accepted keys with
//!    compare-and-swap ([`CellUpdate::Decrement`]); a saturated counter is left alone,
//!    and a counter already at 0 is left at 0 and counted as an *underflow*. Each key records
//!    which of its lanes it decremented.
//!
//! If no counter underflowed, the attempt equals the core's sequential delete of the same keys:
//! a key refused in step 1 has a zero counter, which stays zero through the batch, so the core
//! refuses it too; for an accepted key, each counter `c` it touches received `d_c ≤ v_c` decrements
//! in all (no underflow), so when the core reaches the key, `c` still holds at least
//! `v_c − (d_c − 1) ≥ 1` and the core accepts it too; both end with `v_c − d_c` in every
//! unsaturated counter and the same image bits. This is the case whenever the batch deletes only
//! keys that are present, each at most as often as it was inserted (and no absent key was deleted
//! before): an unsaturated counter then counts the present keys that touch it.
//!
//! If a counter underflowed (keys that were never inserted but pass the check as false positives,
//! or a key deleted more often than it is present), the attempt is undone exactly
//! (`bl_cells_update_inc` over the recorded lanes only, `BL_STATUS_LANES`, adds back the
//! decrements: every counter and image bit returns to its state before the attempt) and the range is split in two halves, run in order, recursively; a
//! single key never underflows (its counters are distinct and were all positive). So every delete
//! equals the core's key-by-key delete in input order, refusals included; conflicting batches only
//! cost more time ([`DeleteReport::retries`] says how many attempts were undone).
//!
//! # Memory traffic per key (direct delete, no conflict)
//!
//! Check: the key (8 bytes), its image block (one 32-byte sector for 8x32; random), the status
//! (4 bytes written). Delete: the key again (8), the status (4 + 4), and per lane one counter word
//! read and CAS'd (for 8x32 with 4-bit counters the 8 words lie in one 128-byte line; random).
//! Partitioned (for counters larger than L2): 8 + 16 bytes to group the keys (+ 4 for their
//! positions when per-key results are asked for), the check (8 + 4, and the image read once per
//! batch), the delete (8 + 8, and image and counters read and written once per batch) instead of
//! random lines (see [`crate::partition`]). At 2 GiB of 4-bit counters (512 MiB image) and 2^28
//! keys: 24 + 12 + 2 + 16 + 2 × 2.5 GiB / 2^28 ≈ 74 bytes per key, a bound of 3.35 TB/s ÷ 74 B
//! ≈ 45 G deletes/s on the H100's HBM3, above the 10 G ops/s target of issue #14 (which stands).
//! Each attempt also waits once for its two counts (one round trip per chunk).

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::CellUpdate;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::cells::{CellCall, CellDev, Operand, Sliced};
use crate::error::output_holds;
use crate::hashed::Hashed;
use crate::kernel::{Kernel, KEYS_PER_THREAD, STATUS_LANES, STATUS_RECORD, THREADS};
use crate::module::{grid, Kernels};
use crate::GpuError;

/// What a delete did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteReport {
    /// Keys deleted.
    pub deleted: u64,
    /// Keys refused (one of their counters was zero when their turn came): nothing changed for
    /// them.
    pub refused: u64,
    /// Parallel attempts that were undone and split because the batch asked a counter for more
    /// decrements than it held (0 when every deleted key was present).
    pub retries: u64,
}

/// What one parallel attempt over a range of keys found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// Keys accepted by the check.
    pub(crate) accepted: u64,
    /// Decrements that found a counter at 0.
    pub(crate) underflows: u64,
}

/// The two steps a delete is built from, over ranges of one batch.
pub(crate) trait DeleteSteps {
    /// The error of a step.
    type Error;
    /// Checks keys `r` against the filter as it is, then decrements the accepted keys' counters
    /// (never below 0), recording each key's status.
    fn attempt(&mut self, r: Range<usize>) -> Result<Attempt, Self::Error>;
    /// Puts back exactly what the last attempt over `r` decremented.
    fn undo(&mut self, r: Range<usize>) -> Result<(), Self::Error>;
}

/// Keys deleted and attempts undone by [`delete_in_order`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) deleted: u64,
    pub(crate) retries: u64,
}

/// Deletes keys `range` with the core's key-by-key semantics: attempts a range, and if a counter
/// underflowed, undoes it and does its two halves in order. `already_failed` says that an attempt
/// over the whole range was just made and undone (it is split straight away). A single key's
/// attempt always stands.
pub(crate) fn delete_in_order<S: DeleteSteps>(
    steps: &mut S,
    range: Range<usize>,
    already_failed: bool,
) -> Result<Tally, S::Error> {
    let mut tally = Tally::default();
    // A stack of ranges still to do; the last is the next in input order.
    let mut todo = Vec::new();
    let split = |r: &Range<usize>, todo: &mut Vec<Range<usize>>| {
        let mid = r.start + r.len() / 2;
        todo.push(mid..r.end);
        todo.push(r.start..mid);
    };
    if already_failed && range.len() > 1 {
        split(&range, &mut todo);
    } else {
        todo.push(range);
    }
    while let Some(r) = todo.pop() {
        if r.is_empty() {
            continue;
        }
        let a = steps.attempt(r.clone())?;
        if a.underflows == 0 || r.len() == 1 {
            tally.deleted += a.accepted;
            continue;
        }
        steps.undo(r.clone())?;
        tally.retries += 1;
        split(&r, &mut todo);
    }
    Ok(tally)
}

fn bad_launch(message: String) -> GpuError {
    GpuError::Cuda {
        op: "counting delete",
        bytes: 0,
        message,
    }
}

/// Attempts to delete `keys` (see the module documentation) from the cell filter `dev`: check,
/// then [`CellUpdate::Decrement`] recording each key's status (with the slice kernels if
/// `sliced` is given: `keys` are then hashes grouped into its partitions), then the two counts
/// read back; `status[i]` = key `i`'s status. Waits for `stream`.
pub(crate) fn attempt(
    dev: &mut CellDev<'_>,
    keys: &Hashed<'_>,
    status: &mut CudaViewMut<'_, u32>,
    stats: &mut CudaSlice<u64>,
    sliced: Option<&mut Sliced<'_>>,
    stream: &Arc<CudaStream>,
) -> Result<Attempt, GpuError> {
    let n = keys.len() as u64;
    let params = dev.shape.params;
    if status.len() < keys.len() || stats.len() < 2 || (dev.image.len() as u64) < params.u32_len() {
        return Err(bad_launch(format!(
            "{} statuses, {} counts and {} image words for {n} keys",
            status.len(),
            stats.len(),
            dev.image.len()
        )));
    }
    if n == 0 {
        return Ok(Attempt::default());
    }
    stream
        .memset_zeros(stats)
        .map_err(|e| GpuError::cuda("cuMemsetD8Async(delete counts)", 16, e))?;
    let cfg = grid(n, u64::from(THREADS * KEYS_PER_THREAD))?;
    let (blocks, seed) = (u64::from(params.blocks), params.seed);
    let mut l = stream.launch_builder(dev.shape.kernels.get(Kernel::CountCheck)?);
    l.arg(&*dev.image)
        .arg(&blocks)
        .arg(&keys.keys)
        .arg(&n)
        .arg(&seed)
        .arg(&keys.mode)
        .arg(&mut *status)
        .arg(&mut *stats);
    // SAFETY: `bl_count_check(const u32* image, u64 blocks, const u64* keys, u64 n, u64 seed,
    // int mode, u32* status, u64* stats)` takes these arguments in this order. It reads
    // `keys[i]`, `i < n` = the view's length, and the block `((h >> 32) × blocks) >> 32 <
    // blocks` of the image (`block_u32s` words each; `image.len() ≥ params.u32_len()`, checked);
    // it writes `status[i]`, `i < n ≤ status.len()`, and adds to `stats[0]` (`stats.len() ≥ 2`,
    // checked).
    unsafe { l.launch(cfg) }.map_err(|e| GpuError::cuda("cuLaunchKernel(bl_count_check)", n, e))?;
    let call = CellCall {
        status: Some(status.slice_mut(..)),
        flags: STATUS_RECORD,
        stats: Some(stats.slice_mut(..)),
        ..CellCall::update(keys.slice(0..keys.len()), Operand::One(0))
    };
    match sliced {
        Some(s) => dev.update_sliced(CellUpdate::Decrement, call, s, stream)?,
        None => dev.update(CellUpdate::Decrement, call, stream)?,
    }
    let counts = stream
        .clone_dtoh(&stats.slice(..2))
        .map_err(|e| GpuError::cuda("cuMemcpyDtoH(delete counts)", 16, e))?;
    stream
        .synchronize()
        .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
    Ok(Attempt {
        accepted: counts[0],
        underflows: counts[1],
    })
}

/// Queues the undo of the last attempt over `keys`, whose statuses are `status`: an
/// [`CellUpdate::Increment`] of exactly the lanes each status records (every such counter ends
/// at its value before the attempt, at most the maximum less one, so the increments never stick).
pub(crate) fn undo(
    dev: &mut CellDev<'_>,
    keys: &Hashed<'_>,
    status: CudaViewMut<'_, u32>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    let call = CellCall {
        status: Some(status),
        flags: STATUS_LANES,
        ..CellCall::update(keys.slice(0..keys.len()), Operand::One(0))
    };
    dev.update(CellUpdate::Increment, call, stream)
}

/// Queues `out[i] = status[i] >> 31` for `i < status.len()` (`out` at least as long).
pub(crate) fn status_bytes(
    kernels: &Kernels,
    status: &CudaView<'_, u32>,
    out: &mut CudaViewMut<'_, u8>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    let n = status.len() as u64;
    output_holds(status.len(), out.len())?;
    if n == 0 {
        return Ok(());
    }
    let mut l = stream.launch_builder(kernels.get(Kernel::StatusBytes)?);
    l.arg(status).arg(&n).arg(out);
    // SAFETY: `bl_status_bytes(const u32* status, u64 n, u8* out)` takes these arguments in this
    // order and touches `status[i]` and `out[i]` for `i < n` only; `status` holds `n` and `out`
    // at least `n` (checked).
    unsafe { l.launch(grid(n, u64::from(THREADS))?) }
        .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_status_bytes)", n, e))?;
    Ok(())
}

/// Queues `out[pos[i]] = status[i] >> 31` for `i < status.len()` (statuses in grouped order).
pub(crate) fn status_scatter(
    kernels: &Kernels,
    status: &CudaView<'_, u32>,
    pos: &CudaView<'_, u32>,
    out: &mut CudaViewMut<'_, u8>,
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    let n = status.len() as u64;
    output_holds(status.len(), out.len().min(pos.len()))?;
    if n == 0 {
        return Ok(());
    }
    let mut l = stream.launch_builder(kernels.get(Kernel::StatusScatter)?);
    l.arg(status).arg(pos).arg(&n).arg(out);
    // SAFETY: `bl_status_scatter(const u32* status, const u32* pos, u64 n, u8* out)` takes these
    // arguments in this order. It reads `status[i]` and `pos[i]` for `i < n` (both at least `n`
    // long, checked) and writes `out[p]` only for `p = pos[i] < n ≤ out.len()` (checked in the
    // kernel and here), whatever `pos` holds.
    unsafe { l.launch(grid(n, u64::from(THREADS))?) }
        .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_status_scatter)", n, e))?;
    Ok(())
}

/// The delete's device buffers: one status per key of a chunk, and the two counts.
#[derive(Default)]
pub(crate) struct DeleteWork {
    status: Option<CudaSlice<u32>>,
    stats: Option<CudaSlice<u64>>,
}

impl DeleteWork {
    /// The status buffer (at least `n` long) and the counts.
    pub(crate) fn buffers(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<(&mut CudaSlice<u32>, &mut CudaSlice<u64>), GpuError> {
        if self.status.as_ref().is_none_or(|s| s.len() < n) {
            self.status = None;
            self.status = Some(alloc_zeros::<u32>(stream, "delete statuses", n)?);
        }
        if self.stats.is_none() {
            self.stats = Some(alloc_zeros::<u64>(stream, "delete counts", 2)?);
        }
        match (&mut self.status, &mut self.stats) {
            (Some(s), Some(c)) => Ok((s, c)),
            _ => unreachable!("allocated above"),
        }
    }

    /// Frees the buffers.
    pub(crate) fn release(&mut self) {
        *self = DeleteWork::default();
    }
}

/// [`DeleteSteps`] on the device: ranges of `keys` (input order), statuses in `status`.
pub(crate) struct DeviceSteps<'s, 'a, 'k> {
    pub(crate) dev: &'s mut CellDev<'a>,
    pub(crate) keys: &'s Hashed<'k>,
    pub(crate) status: &'s mut CudaSlice<u32>,
    pub(crate) stats: &'s mut CudaSlice<u64>,
    pub(crate) stream: &'s Arc<CudaStream>,
}

impl DeleteSteps for DeviceSteps<'_, '_, '_> {
    type Error = GpuError;

    fn attempt(&mut self, r: Range<usize>) -> Result<Attempt, GpuError> {
        let keys = self.keys.slice(r.clone());
        let mut status = self.status.slice_mut(r);
        attempt(self.dev, &keys, &mut status, self.stats, None, self.stream)
    }

    fn undo(&mut self, r: Range<usize>) -> Result<(), GpuError> {
        let keys = self.keys.slice(r.clone());
        undo(self.dev, &keys, self.status.slice_mut(r), self.stream)
    }
}

#[cfg(test)]
mod tests;
