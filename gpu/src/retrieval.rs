//! [`GpuRetrieval`]: a retrieval table (`bloomlanes_core::retrieval`) in GPU memory, answering
//! exactly as the core's [`RetrievalTable::get_hash`].
//!
//! The table is built on the host (the core's or the SIMD crate's build) and uploaded: its
//! packed cell words, with the zero word at the end, and its shape, which the kernel takes as
//! arguments. A lookup (`bl_retrieval_get`, src/cuda/retrieval.cu) hashes the key (u64 keys with
//! XXH64, or caller hashes), XORs its `a` cells (each one or two adjacent 64-bit loads) and
//! writes the value and one bit of a "found" bitmap per key.
//!
//! # Memory traffic per key
//! The key (8 bytes), the value (4 bytes), one bit, and `a` random cells: `a` sectors of 32
//! bytes (a cell straddling two words is in one sector unless it straddles a 32-byte border).

use std::sync::Arc;

use bloomlanes_core::retrieval::{RetrievalInfo, RetrievalTable};
use bloomlanes_core::{FilterKind, HashId, Keys};
use cudarc::driver::{CudaSlice, PushKernelArg};

use crate::buffer::{alloc_zeros, check_free};
use crate::hashed::{HashScratch, Hashed};
use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::module::{grid, layout_free_module, Kernels};
use crate::{context, DeviceBuffer, DeviceKeys, GpuError, GpuStream, KernelModule};

/// A retrieval table in GPU memory.
pub struct GpuRetrieval {
    stream: GpuStream,
    /// Where device string offsets are checked before a launch uses them.
    check_stream: GpuStream,
    k: Arc<Kernels>,
    /// The packed cells, `shape.words()` words (the last one zero).
    words: CudaSlice<u64>,
    /// The host table's parameters, shape and key count (the table's accessors through
    /// `Deref`).
    info: RetrievalInfo,
}

impl std::fmt::Debug for GpuRetrieval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRetrieval")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The table's [`RetrievalInfo::params`], [`RetrievalInfo::shape`] and
/// [`RetrievalInfo::key_count`], as on the host table.
impl std::ops::Deref for GpuRetrieval {
    type Target = RetrievalInfo;

    fn deref(&self) -> &RetrievalInfo {
        &self.info
    }
}

impl GpuRetrieval {
    /// Copies `table` to the device.
    pub fn upload(table: &RetrievalTable) -> Result<GpuRetrieval, GpuError> {
        let params = *table.params();
        if !matches!(params.kind, FilterKind::Retrieval { .. }) {
            return Err(GpuError::WrongKind {
                expected: "retrieval",
                found: params.kind.name(),
            });
        }
        let shape = *table.shape();
        let words = table.words();
        // The kernel reads any cell with two loads; a table always carries the zero word that
        // makes the second load of the last cell valid (checked here, not assumed).
        if shape.check().is_err() || words.len() as u64 != shape.words() {
            return Err(GpuError::Unsupported(
                "a retrieval table whose words disagree with its shape",
            ));
        }
        let ctx = context()?;
        let bytes = words.len() as u64 * 8;
        check_free(&ctx, "retrieval cells", bytes)?;
        // The lookup kernel is compiled (or read from the cache) now, not on the first lookup;
        // the static module only if hashed keys (records, strings) are looked up.
        let k = layout_free_module(&ctx, KernelModule::Retrieval)?;
        let stream = GpuStream::new()?;
        let mut dev = alloc_zeros::<u64>(stream.raw(), "retrieval cells", words.len())?;
        stream
            .raw()
            .memcpy_htod(words, &mut dev)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
        stream.synchronize()?;
        Ok(GpuRetrieval {
            stream,
            check_stream: GpuStream::new()?,
            k,
            words: dev,
            info: *table.info(),
        })
    }

    /// The table's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }

    fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params().hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this table holds caller-supplied hashes; pass hashes",
            ));
        }
        Ok(())
    }

    /// Queues the lookup of device-resident keys on `stream`: `values[i]` = key `i`'s value (0
    /// when absent), bit `i % 64` of `found[i / 64]` = whether key `i` passed the check bits
    /// (bits past the last key in its word are zero).
    pub fn get_device_async(
        &self,
        keys: DeviceKeys<'_>,
        values: &mut DeviceBuffer<u32>,
        found: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let mut scratch = HashScratch::default();
        let hashed = scratch.hashed(&self.k, self.params().seed, stream.raw(), args)?;
        self.launch(&hashed, values, found, stream)
    }

    /// [`GpuRetrieval::get_device_async`] on the table's stream, then waits.
    pub fn get_device(
        &self,
        keys: DeviceKeys<'_>,
        values: &mut DeviceBuffer<u32>,
        found: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError> {
        self.get_device_async(keys, values, found, &self.stream)?;
        self.stream.synchronize()
    }

    /// Looks up keys from host memory (u64 keys and hashes go to the device as they are; records
    /// and strings are hashed on the host): `values` and `found` as in
    /// [`GpuRetrieval::get_device_async`].
    pub fn get(
        &self,
        keys: Keys<'_>,
        values: &mut [u32],
        found: &mut [u64],
    ) -> Result<(), GpuError> {
        let n = keys.len();
        outputs_fit(n, values.len(), found.len())?;
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let seed = self.params().seed;
        let (host, hashes): (Vec<u64>, bool) = match keys {
            Keys::U64(k) => (k.to_vec(), false),
            Keys::Hashes(h) => (h.to_vec(), true),
            other => ((0..n).map(|i| other.hash(i, seed)).collect(), true),
        };
        let dev = DeviceBuffer::from_host(&host)?;
        let mut v = DeviceBuffer::<u32>::zeros(n.max(1))?;
        let mut f = DeviceBuffer::<u64>::zeros(n.div_ceil(64).max(1))?;
        let dk = if hashes {
            DeviceKeys::Hashes(&dev)
        } else {
            DeviceKeys::U64(&dev)
        };
        self.get_device(dk, &mut v, &mut f)?;
        values[..n].copy_from_slice(&v.to_host()?[..n]);
        found[..n.div_ceil(64)].copy_from_slice(&f.to_host()?[..n.div_ceil(64)]);
        Ok(())
    }

    fn launch(
        &self,
        keys: &Hashed<'_>,
        values: &mut DeviceBuffer<u32>,
        found: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        outputs_fit(n, values.len(), found.len())?;
        if n == 0 {
            return Ok(());
        }
        let s = self.shape();
        let (sigma, segs, arity) = (
            u32::from(s.segment_bits),
            s.segment_count,
            u32::from(s.arity),
        );
        let (vbits, fbits) = (u32::from(s.value_bits), u32::from(s.check_bits));
        let (n64, seed) = (n as u64, self.params().seed);
        let mut vv = values.view_mut();
        let mut fv = found.view_mut();
        let mut l = stream
            .raw()
            .launch_builder(self.k.get(Kernel::RetrievalGet)?);
        l.arg(&self.words)
            .arg(&s.seed)
            .arg(&sigma)
            .arg(&segs)
            .arg(&arity)
            .arg(&vbits)
            .arg(&fbits)
            .arg(&keys.keys)
            .arg(&n64)
            .arg(&seed)
            .arg(&keys.mode)
            .arg(&mut vv)
            .arg(&mut fv);
        // SAFETY: `bl_retrieval_get(const u64* words, u64 cseed, u32 sigma, u32 segs, u32 arity,
        // u32 vbits, u32 fbits, const u64* keys, u64 n, u64 seed, int mode, u32* values, u32*
        // found)` takes these arguments in this order (the u64 bitmap as u32 words: 4-aligned,
        // any bits valid). The shape passed `Shape::check` (arity 3 or 4, σ ≤ 18, S ≥ 1, at most
        // 2^32 − 1 cells, v + f ≤ 64) and `words` holds `shape.words()` words (checked at
        // upload), so every cell index `< (S + a − 1) × 2^σ` reads words `⌊i·c / 64⌋` and the
        // one after, both inside `words`. It reads `keys[i]`, `i < n` = the view's length, and
        // writes `values[i]` (`n ≤ values.len()`, checked) and u32 words of `found` below
        // `2 × n.div_ceil(64) ≤ 2 × found.len()` (checked).
        unsafe { l.launch(grid(n64, u64::from(THREADS * KEYS_PER_THREAD))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_retrieval_get)", n64, e))?;
        Ok(())
    }
}

/// Refuses outputs shorter than one value per key and one found word per 64 keys.
fn outputs_fit(n: usize, values: usize, found: usize) -> Result<(), GpuError> {
    for (needed, have) in [(n, values), (n.div_ceil(64), found)] {
        if have < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: have,
            });
        }
    }
    Ok(())
}
