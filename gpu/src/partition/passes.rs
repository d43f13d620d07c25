//! The launches of the grouping passes (`src/cuda/partition.cu`): the histogram and scan every
//! grouping starts with, the one-level scatter, and the two scatters of the radix grouping. Each
//! checks every length its kernel relies on first.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::insert_path::{DeviceShape, RADIX_FANOUT, RADIX_MAX_PARTITIONS};
use crate::kernel::{
    Kernel, HIST_KEYS_PER_THREAD, MAX_PARTITIONS, SCATTER_KEYS_PER_THREAD,
    SCATTER_POS_KEYS_PER_THREAD, THREADS,
};
use crate::module::{dynamic_smem, grid, Kernels};
use crate::GpuError;

/// Words of the partition counts and cursors: the most partitions of either grouping.
pub(crate) const COUNT_WORDS: usize = RADIX_MAX_PARTITIONS as usize;

// The scatter passes pack (partition, index in tile) into one u32 as 16 + 16 bits.
const _: () = assert!(MAX_PARTITIONS.is_multiple_of(THREADS) && MAX_PARTITIONS < 1 << 16);
const _: () = assert!(RADIX_FANOUT <= THREADS && RADIX_FANOUT < 1 << 16);
const _: () = assert!(THREADS * SCATTER_KEYS_PER_THREAD <= 1 << 16);
const _: () = assert!(THREADS * SCATTER_POS_KEYS_PER_THREAD <= 1 << 16);
const _: () = assert!(COUNT_WORDS >= MAX_PARTITIONS as usize);

/// Keys (or grouped hashes) one scatter tile holds.
pub(crate) const TILE_KEYS: u64 = (THREADS * SCATTER_KEYS_PER_THREAD) as u64;

/// The coarse segments of a two-level radix grouping, `RADIX_FANOUT + 1` words each: the coarse
/// partitions' cursors (level 1), their starts (`seg`, with the total last) and the level-2 tiles
/// before each (`tiles`, with all of them last).
pub(crate) struct Segments {
    pub(crate) coarse_cursor: CudaSlice<u32>,
    pub(crate) seg: CudaSlice<u32>,
    pub(crate) tiles: CudaSlice<u32>,
}

impl Segments {
    /// Zeroed buffers.
    pub(crate) fn new(stream: &Arc<CudaStream>) -> Result<Segments, GpuError> {
        let len = RADIX_FANOUT as usize + 1;
        Ok(Segments {
            coarse_cursor: alloc_zeros::<u32>(stream, "radix segments", len)?,
            seg: alloc_zeros::<u32>(stream, "radix segments", len)?,
            tiles: alloc_zeros::<u32>(stream, "radix segments", len)?,
        })
    }
}

/// What every pass of one grouping shares: the kernels, the device, the seed and how the keys
/// are read ([`MODE_U64`](crate::hashed::MODE_U64) or
/// [`MODE_HASHES`](crate::hashed::MODE_HASHES)).
pub(crate) struct Passes<'a> {
    pub(crate) kernels: &'a Kernels,
    pub(crate) dev: DeviceShape,
    pub(crate) seed: u64,
    pub(crate) mode: i32,
}

impl Passes<'_> {
    /// Queues passes 1 and 2 on `stream`: the histogram of `keys` over `parts` partitions into
    /// `counts` (zeroed first) and its exclusive scan into `cursor` (the start of each
    /// partition); with `segments` (`coarse` partitions of `parts / coarse` each), the coarse
    /// segments of a two-level radix grouping too.
    pub(crate) fn counts(
        &self,
        keys: &CudaView<'_, u64>,
        parts: u32,
        counts: &mut CudaSlice<u32>,
        cursor: &mut CudaSlice<u32>,
        segments: Option<(u32, &mut Segments)>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let m = keys.len() as u64;
        let hist_bytes = u64::from(parts) * 4;
        let coarse = segments.as_ref().map_or(0, |s| s.0);
        let segments_fit = segments.as_ref().is_none_or(|(c, s)| {
            (2..=RADIX_FANOUT).contains(c)
                && parts.is_multiple_of(*c)
                && [&s.coarse_cursor, &s.seg, &s.tiles]
                    .iter()
                    .all(|b| b.len() > *c as usize)
        });
        if parts == 0
            || parts as usize > COUNT_WORDS
            || counts.len() < parts as usize
            || cursor.len() < parts as usize
            || hist_bytes + 1024 > self.dev.smem_optin.max(48 << 10)
            || !segments_fit
            || m > u64::from(u32::MAX)
        {
            return Err(GpuError::internal(
                "partition",
                format!("bad partition counts: {parts} partitions ({coarse} coarse), {m} keys"),
            ));
        }
        stream
            .memset_zeros(counts)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async(partition counts)", 0, e))?;
        let f = self.kernels.get(Kernel::PartHist)?;
        if hist_bytes > 48 << 10 {
            dynamic_smem(f, self.dev.smem_optin)?;
        }
        // As many CTAs as fit on the device at once (the loop is grid-stride): their shared
        // histograms limit them per SM.
        let per_sm = (self.dev.smem_per_sm / (hist_bytes + 1024)).clamp(1, 8) as u32;
        let mut cfg = grid(m.max(1), u64::from(THREADS * HIST_KEYS_PER_THREAD))?;
        cfg.grid_dim.0 = cfg
            .grid_dim
            .0
            .min(self.dev.sms.saturating_mul(per_sm))
            .max(1);
        cfg.shared_mem_bytes = hist_bytes as u32;
        let mut l = stream.launch_builder(f);
        l.arg(keys)
            .arg(&m)
            .arg(&self.seed)
            .arg(&self.mode)
            .arg(&parts)
            .arg(&mut *counts);
        // SAFETY: `bl_part_hist(const u64* keys, u64 n, u64 seed, int mode, u32 parts,
        // u32* counts)` takes these arguments in this order. It reads `keys[i]` for `i < m` (the
        // view's length; grid-stride, so any grid size is covered) and adds into `hist[p]` and
        // `counts[p]` for `p = ((h >> 32) * parts) >> 32 < parts`: its dynamic shared memory
        // holds `parts` words (`shared_mem_bytes`; above 48 KiB the kernel's limit was raised to
        // the device's opt-in maximum, which holds them: checked), and `counts` holds at least
        // `parts` words (checked).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_hist)", m, e))?;

        let null = 0u64;
        let mut l = stream.launch_builder(self.kernels.get(Kernel::PartScan)?);
        l.arg(&*counts).arg(&parts).arg(&mut *cursor).arg(&coarse);
        match segments {
            Some((_, s)) => {
                l.arg(&mut s.coarse_cursor)
                    .arg(&mut s.seg)
                    .arg(&mut s.tiles);
            }
            None => {
                l.arg(&null).arg(&null).arg(&null);
            }
        }
        // SAFETY: `bl_part_scan(const u32* counts, u32 parts, u32* cursor, u32 coarse,
        // u32* coarse_cursor, u32* seg, u32* tiles)` takes these arguments in this order. Its
        // one CTA reads `counts[p]` and writes `cursor[p]` for `p < parts`, and both hold at
        // least `parts` words (checked). With `coarse = 0` it touches nothing else (the three
        // null pointers are never read). Else `2 ≤ coarse ≤ RADIX_FANOUT ≤ THREADS` divides
        // `parts` (checked): thread `c < coarse` reads `cursor[c × fine]` and
        // `cursor[(c + 1) × fine]` below `parts = coarse × fine`, and writes word `c` of the
        // three segment buffers, thread `coarse − 1` also word `coarse`; each holds more than
        // `coarse` words (checked).
        unsafe { l.launch(grid(1, 1)?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scan)", 0, e))?;
        Ok(())
    }

    /// Queues the one-level scatter (pass 3) on `stream`: the hashes of `keys` into
    /// `out[..keys.len()]` grouped by partition of `parts`, at the cursors that
    /// [`Passes::counts`] laid out for these same keys on this stream (with, if `out_pos` is
    /// given, each hash's key index in `keys` at the same place of `out_pos`). `kernel` is
    /// [`Kernel::PartScatter`] (up to [`MAX_PARTITIONS`] partitions; with positions,
    /// [`Kernel::PartScatterPos`]) or [`Kernel::RadixScatterKeys`] (up to [`RADIX_FANOUT`], no
    /// positions).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatter(
        &self,
        kernel: Kernel,
        keys: &CudaView<'_, u64>,
        parts: u32,
        cursor: &mut CudaSlice<u32>,
        out: &mut CudaViewMut<'_, u64>,
        out_pos: Option<&mut CudaViewMut<'_, u32>>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let m = keys.len() as u64;
        let (max, per_thread, name) = match (kernel, &out_pos) {
            (Kernel::PartScatter, None) => (
                MAX_PARTITIONS,
                SCATTER_KEYS_PER_THREAD,
                "cuLaunchKernel(bl_part_scatter)",
            ),
            (Kernel::PartScatterPos, Some(_)) => (
                MAX_PARTITIONS,
                SCATTER_POS_KEYS_PER_THREAD,
                "cuLaunchKernel(bl_part_scatter_pos)",
            ),
            (Kernel::RadixScatterKeys, None) => (
                RADIX_FANOUT,
                SCATTER_KEYS_PER_THREAD,
                "cuLaunchKernel(bl_radix_scatter_keys)",
            ),
            _ => {
                return Err(GpuError::internal(
                    "partition",
                    format!("{kernel:?} is no scatter of keys"),
                ))
            }
        };
        if !(1..=max).contains(&parts)
            || cursor.len() < parts as usize
            || out.len() < keys.len()
            || out_pos.as_ref().is_some_and(|p| p.len() < keys.len())
            || m > u64::from(u32::MAX)
        {
            return Err(GpuError::internal(
                "partition",
                format!(
                    "bad scatter: {parts} partitions, {m} keys, {} outputs",
                    out.len()
                ),
            ));
        }
        if m == 0 {
            return Ok(());
        }
        let cfg = grid(m, u64::from(THREADS * per_thread))?;
        let mut l = stream.launch_builder(self.kernels.get(kernel)?);
        l.arg(keys)
            .arg(&m)
            .arg(&self.seed)
            .arg(&self.mode)
            .arg(&parts)
            .arg(&mut *cursor)
            .arg(out);
        if let Some(pos) = out_pos {
            l.arg(pos);
        }
        // SAFETY: `bl_part_scatter` and `bl_radix_scatter_keys(const u64* keys, u64 n, u64 seed,
        // int mode, u32 parts, u32* cursor, u64* out)` and `bl_part_scatter_pos(…, u64* out,
        // u32* out_pos)` take the arguments pushed above in this order (the last with the
        // positions, as matched above). CTA `t` reads `keys[i]` for `i` in its tile, below `m`
        // (the view's length), bins each hash into `p < parts ≤` its kernel's shared bins (the
        // partition bound matched above), and updates `cursor[p]`, inside `cursor` (checked). It
        // writes each of the `m` hashes once (and its key index once), at `cursor[p]` + its rank
        // among this CTA's hashes of partition `p`: the cursors start (pass 2, same stream) at
        // the exclusive prefix sums of the counts that pass 1 took of these same `m` keys with
        // the same seed, mode and partitions, after the counts were zeroed, and the keys cannot
        // change between the passes (borrowed for this call; earlier writes are ordered before
        // pass 1 by cudarc's events). So every position is below the sum of all counts = `m` ≤
        // `out.len()` (and ≤ `out_pos.len()`, checked), and the kernel skips any position ≥ `m`
        // besides. The u32 cursors do not overflow (`m ≤ 2^32 − 1`, checked). The tile and rank
        // packing fit their 16-bit fields (the const assertions above).
        unsafe { l.launch(cfg) }.map_err(|e| GpuError::cuda(name, m, e))?;
        Ok(())
    }

    /// Queues level 2 of a two-level radix grouping on `stream`: the hashes `staged` (grouped
    /// by coarse partition by level 1, in the segments [`Passes::counts`] laid out) into
    /// `out[..staged.len()]`, each segment's hashes grouped by its `fine` partitions at `cursor`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatter_segments(
        &self,
        staged: &CudaView<'_, u64>,
        coarse: u32,
        fine: u32,
        segments: &Segments,
        cursor: &mut CudaSlice<u32>,
        out: &mut CudaViewMut<'_, u64>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let m = staged.len() as u64;
        let parts = u64::from(coarse) * u64::from(fine);
        if !(2..=RADIX_FANOUT).contains(&coarse)
            || !(1..=RADIX_FANOUT).contains(&fine)
            || (cursor.len() as u64) < parts
            || out.len() < staged.len()
            || [&segments.seg, &segments.tiles]
                .iter()
                .any(|b| b.len() <= coarse as usize)
            || m > u64::from(u32::MAX)
        {
            return Err(GpuError::internal(
                "partition",
                format!("bad radix level 2: {coarse} × {fine} partitions, {m} hashes"),
            ));
        }
        if m == 0 {
            return Ok(());
        }
        // Each segment's tiles, the last one partial: at most m / TILE + coarse of them.
        let ctas = m.div_ceil(TILE_KEYS) + u64::from(coarse);
        let cfg = LaunchConfig {
            grid_dim: (grid(ctas, 1)?.grid_dim.0, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut l = stream.launch_builder(self.kernels.get(Kernel::RadixScatterHashes)?);
        l.arg(staged)
            .arg(&m)
            .arg(&coarse)
            .arg(&fine)
            .arg(&segments.seg)
            .arg(&segments.tiles)
            .arg(&mut *cursor)
            .arg(out);
        // SAFETY: `bl_radix_scatter_hashes(const u64* in, u64 n, u32 coarse, u32 fine,
        // const u32* seg, const u32* tiles, u32* cursor, u64* out)` takes these arguments in this
        // order. It reads `tiles[c]` and `seg[c]` for `c ≤ coarse` (each holds more than `coarse`
        // words: checked) and clamps every range it reads to `in[0, m)`, the view's length. Each
        // hash goes to a bin `< fine ≤ RADIX_FANOUT` (its shared bins; a hash outside its
        // segment's partitions is clamped to the last), whose cursor `cursor[c × fine + bin]` is
        // inside `cursor` (`coarse × fine` words: checked). Positions: the cursors of partition
        // `q` start at its start (pass 2), and level 1 put each coarse partition's hashes in its
        // segment, so each is written once below `m` ≤ `out.len()` (checked); the kernel skips
        // any position ≥ `m` besides. The grid covers every tile (`m / TILE + coarse` bounds
        // their count); CTAs past the last return.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_radix_scatter_hashes)", m, e))?;
        Ok(())
    }
}
