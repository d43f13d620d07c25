//! The probe launches of a lookup: direct, partitioned into a bitmap, into the list of
//! maybe-present positions, and the bitmap expanded to bytes.

use std::sync::Arc;

use bloomlanes_core::Params;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use super::{bad_launch, LookupOutput};
use crate::buffer::alloc_zeros;
use crate::hashed::Hashed;
use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::launch::{launch_keys, Geometry, KeyArgs, Pass};
use crate::module::{grid, Kernels};
use crate::partition::{GroupBy, Partitioner};
use crate::GpuError;

/// Where a probe writes.
enum ProbeOut<'o, 'v> {
    /// The bitmap of all `n` keys of the batch (at least `n.div_ceil(64)` words).
    Bits {
        bits: &'o mut CudaViewMut<'v, u64>,
        n: usize,
    },
    /// The list of maybe-present positions and their count.
    List {
        list: &'o mut CudaViewMut<'v, u32>,
        count: &'o mut CudaViewMut<'v, u64>,
    },
}

/// The keys of a probe.
enum ProbeKeys<'a, 'v> {
    /// Hashes grouped by partition: key `base + pos[i]` has hash `hashes[i]`.
    Grouped {
        hashes: &'a CudaView<'v, u64>,
        pos: &'a CudaView<'v, u32>,
        base: u64,
    },
    /// Keys (or hashes) in input order.
    Input(&'a Hashed<'v>),
}

/// Queues `dst` zeroed on `stream`.
fn zero<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    dst: &mut CudaViewMut<'_, T>,
) -> Result<(), GpuError> {
    if dst.is_empty() {
        return Ok(());
    }
    stream
        .memset_zeros(dst)
        .map_err(|e| GpuError::cuda("cuMemsetD8Async(lookup output)", 0, e))
}

/// The probe launches over one filter, on one stream.
pub(super) struct Probe<'a> {
    pub(super) kernels: &'a Kernels,
    pub(super) params: &'a Params,
    pub(super) geo: Geometry,
    /// At least `geo.words(params)` words (checked by `LookupTarget::lookup`).
    pub(super) words: &'a CudaSlice<u32>,
    pub(super) stream: &'a Arc<CudaStream>,
}

impl Probe<'_> {
    /// The unpartitioned lookup of `keys` into `out`.
    pub(super) fn direct(
        &self,
        keys: &Hashed<'_>,
        out: &mut LookupOutput<'_>,
    ) -> Result<(), GpuError> {
        let args = || {
            if keys.are_hashes() {
                KeyArgs::Hashes(keys.keys.slice(..))
            } else {
                KeyArgs::U64(keys.keys.slice(..))
            }
        };
        let (kernels, params, words, stream) = (self.kernels, self.params, self.words, self.stream);
        let pass = match out {
            LookupOutput::Bytes(o) => Pass::Contains {
                words,
                out: o.view_mut(),
            },
            LookupOutput::Bitmap(o) => Pass::Bitmap {
                words,
                out: o.view_mut(),
            },
            LookupOutput::Positions { list, count } => {
                zero(stream, &mut count.view_mut())?;
                let (mut list, mut count) = (list.view_mut(), count.view_mut());
                let out = ProbeOut::List {
                    list: &mut list,
                    count: &mut count,
                };
                return self.probe(ProbeKeys::Input(keys), out);
            }
        };
        launch_keys(kernels, params, self.geo, stream, args(), pass)
    }

    /// The partitioned lookup of `keys` into `out`; `bitmap` is the scratch bitmap of a lookup
    /// into bytes. Nothing is queued but zeroing the output if the scratch cannot be allocated.
    pub(super) fn partitioned(
        &self,
        partitioner: &mut Partitioner,
        bitmap: &mut Option<CudaSlice<u64>>,
        keys: &Hashed<'_>,
        out: &mut LookupOutput<'_>,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        let stream = self.stream;
        let words64 = n.div_ceil(64);
        let mut scratch_bits = None;
        match out {
            LookupOutput::Bytes(_) => {
                if bitmap.as_ref().is_none_or(|b| b.len() < words64) {
                    *bitmap = None;
                    *bitmap = Some(alloc_zeros::<u64>(stream, "lookup bitmap", words64)?);
                }
                let mut v = bitmap
                    .as_mut()
                    .expect("allocated above")
                    .slice_mut(..words64);
                zero(stream, &mut v)?;
                scratch_bits = Some(v);
            }
            LookupOutput::Bitmap(o) => zero(stream, &mut o.view_mut().slice_mut(..words64))?,
            LookupOutput::Positions { count, .. } => zero(stream, &mut count.view_mut())?,
        }
        let parts = partitioner.partitions_for_bytes(self.geo.words(self.params) * 4);
        let by = GroupBy::new(self.kernels, self.params.seed, parts, true);
        partitioner.for_each_group(by, keys, stream, |r, hashes, pos| {
            let pos = pos.ok_or_else(|| bad_launch("grouping without positions".into()))?;
            let keys = ProbeKeys::Grouped {
                hashes: &hashes.keys,
                pos: &pos,
                base: r.start as u64,
            };
            match &mut *out {
                LookupOutput::Bytes(_) => {
                    let bits = scratch_bits.as_mut().expect("set for bytes");
                    self.probe(keys, ProbeOut::Bits { bits, n })
                }
                LookupOutput::Bitmap(o) => {
                    let bits = &mut o.view_mut();
                    self.probe(keys, ProbeOut::Bits { bits, n })
                }
                LookupOutput::Positions { list, count } => {
                    let (mut list, mut count) = (list.view_mut(), count.view_mut());
                    let out = ProbeOut::List {
                        list: &mut list,
                        count: &mut count,
                    };
                    self.probe(keys, out)
                }
            }
        })?;
        if let (LookupOutput::Bytes(o), Some(bits)) = (out, scratch_bits) {
            self.bits_to_bytes(&bits.as_view(), n, &mut o.view_mut())?;
        }
        Ok(())
    }

    /// Probes `keys` into `out`: grouped hashes into the bitmap of the batch's keys
    /// (`bl_probe_bitmap`) or the list of positions (`bl_probe_list`), or keys in input order into
    /// the list (`bl_positions_keys`, the unpartitioned screening form; the direct bitmap is
    /// `launch_keys`'s).
    fn probe(&self, keys: ProbeKeys<'_, '_>, out: ProbeOut<'_, '_>) -> Result<(), GpuError> {
        let (m, base) = match &keys {
            ProbeKeys::Grouped { hashes, pos, base } if pos.len() >= hashes.len() => {
                (hashes.len() as u64, *base)
            }
            ProbeKeys::Input(k) => (k.len() as u64, 0),
            ProbeKeys::Grouped { hashes, pos, .. } => {
                let (p, h) = (pos.len(), hashes.len());
                return Err(bad_launch(format!("{p} positions of {h} keys")));
            }
        };
        let kernel = match (&keys, &out) {
            (ProbeKeys::Grouped { .. }, ProbeOut::Bits { bits, n })
                if base + m <= *n as u64 && bits.len() >= n.div_ceil(64) =>
            {
                Kernel::ProbeBitmap
            }
            (ProbeKeys::Grouped { .. }, ProbeOut::List { count, .. }) if !count.is_empty() => {
                Kernel::ProbeList
            }
            (ProbeKeys::Input(_), ProbeOut::List { count, .. }) if !count.is_empty() => {
                Kernel::PositionsKeys
            }
            _ => {
                return Err(bad_launch(format!(
                    "a probe of keys {base}..{} into an output that cannot hold them",
                    base + m
                )))
            }
        };
        if m == 0 {
            return Ok(());
        }
        let (blocks, seed) = (u64::from(self.params.blocks), self.params.seed);
        let mut l = self
            .stream
            .launch_builder(self.kernels.get(self.geo.kernel(kernel))?);
        l.arg(self.words).arg(&blocks);
        match &keys {
            ProbeKeys::Grouped { hashes, pos, base } => l.arg(*hashes).arg(*pos).arg(&m).arg(base),
            ProbeKeys::Input(k) => l.arg(&k.keys).arg(&m).arg(&seed).arg(&k.mode),
        };
        let cap = match &out {
            ProbeOut::List { list, .. } => list.len() as u64,
            ProbeOut::Bits { .. } => 0,
        };
        match out {
            ProbeOut::Bits { bits, .. } => l.arg(bits),
            ProbeOut::List { list, count } => l.arg(list).arg(&cap).arg(count),
        };
        self.geo.push(&mut l);
        // SAFETY: `bl_probe_bitmap(const u32* words, u64 blocks, const u64* hashes, const u32*
        // pos, u64 n, u64 base, u32* bits)`, `bl_probe_list(…, u64 base, u32* list, u64 cap,
        // u64* count)` (the same first six) and `bl_positions_keys(const u32* words, u64 blocks,
        // const u64* keys, u64 n, u64 seed, int mode, u32* list, u64 cap, u64* count)`, and
        // their window twins (with `u32 gens, u32 gen` after), take the arguments pushed above
        // in this order (the u64 bitmap as u32 words: 4-aligned, any bits valid). They read
        // `hashes[i]` and `pos[i]` (at least `m` each, checked), or `keys[i]` (the view's
        // length), for `i < m`, and blocks `((h >> 32) × blocks) >> 32 < blocks` of each of the
        // `gens` generations of `words` (`≥ gens × params.u32_len()` words, checked by the
        // caller). The bitmap probe sets bit `base + p` only for `p = pos[i] < m` (tested in the
        // kernel, whatever `pos` holds), and `base + m ≤ n` (checked), so the u32 word
        // `(base + p) / 32 < n.div_ceil(32) ≤ 2 × bits.len()` lies inside `bits`; the list
        // probes add to `count[0]` (not empty, checked) and write `list[s]` only for
        // `s < cap = list.len()`.
        unsafe { l.launch(grid(m, u64::from(THREADS * KEYS_PER_THREAD))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(probe)", m, e))?;
        Ok(())
    }

    /// `out[i]` = bit `i` of `bits`, for `i < n`.
    fn bits_to_bytes(
        &self,
        bits: &CudaView<'_, u64>,
        n: usize,
        out: &mut CudaViewMut<'_, u8>,
    ) -> Result<(), GpuError> {
        if bits.len() < n.div_ceil(64) || out.len() < n {
            return Err(bad_launch(format!(
                "{} bitmap words and {} bytes for {n} keys",
                bits.len(),
                out.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let m = n as u64;
        let mut l = self
            .stream
            .launch_builder(self.kernels.get(Kernel::BitsToBytes)?);
        l.arg(bits).arg(&m).arg(out);
        // SAFETY: `bl_bits_to_bytes(const u32* bits, u64 n, u8* out)` takes these arguments in
        // this order (the u64 bitmap as u32 words: 4-aligned, any bits valid). Thread `i < n`
        // reads u32 word `i / 32 < n.div_ceil(32) ≤ 2 × bits.len()` and writes `out[i]`
        // (`out.len() ≥ n`); both checked above.
        unsafe { l.launch(grid(m, u64::from(THREADS))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_bits_to_bytes)", m, e))?;
        Ok(())
    }
}
