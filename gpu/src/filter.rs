//! [`GpuFilter`]: a split-block Bloom filter in GPU memory: the static image ([`GpuImage`], to
//! which it dereferences for every lookup and setting) and its inserts. The work is done in the
//! other rooms: kernels are launched by [`crate::launch`], device keys are checked by
//! [`crate::device_keys`], the partitioned insert and the host pipeline are reached through
//! [`GpuImage`].

use bloomlanes_core::{Filter, FilterRef, Keys, Params};
use cudarc::driver::PushKernelArg;

use crate::error::output_holds;
use crate::image::filter_wrapper;
use crate::image::GpuImage;
use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::module::{grid, layout_free_kernels};
use crate::{context, DeviceBuffer, DeviceKeys, GpuError, GpuStream, PinnedBuffer};

/// A split-block Bloom filter in GPU memory. Lookups, streams and partitioning settings are its
/// [`GpuImage`]'s (it dereferences to it).
pub struct GpuFilter {
    image: GpuImage,
    keys: Option<u64>,
}

filter_wrapper!(GpuFilter, image: GpuImage, [keys]);

impl GpuFilter {
    /// An empty filter with these parameters on device 0.
    pub fn new(params: Params) -> Result<GpuFilter, GpuError> {
        Ok(GpuFilter {
            image: GpuImage::new(params, 1, 0)?,
            keys: Some(0),
        })
    }

    /// A device copy of a host filter.
    pub fn upload(filter: &Filter) -> Result<GpuFilter, GpuError> {
        let mut g = Self::upload_view(filter.as_view())?;
        g.keys = filter.key_count();
        Ok(g)
    }

    /// A device copy of a borrowed filter (its parameters and words; e.g. a memory-mapped file).
    /// The key count is unknown.
    pub fn upload_view(view: FilterRef<'_, u32>) -> Result<GpuFilter, GpuError> {
        let mut g = Self::new(*view.params())?;
        g.image.upload_words(view.words())?;
        g.keys = None;
        Ok(g)
    }

    /// The filter copied back to the host; its bytes equal what the core builds from the same keys.
    pub fn download(&self) -> Result<Filter, GpuError> {
        let mut f = Filter::new(self.image.params);
        self.image.download_words(f.words_mut())?;
        f.set_key_count(self.keys);
        Ok(f)
    }

    /// Keys inserted since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }

    /// Clears every bit (the key count becomes 0).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.image.zero_words()?;
        self.keys = Some(0);
        self.image.stream.synchronize()
    }

    fn count(&mut self, n: usize) {
        self.keys = self.keys.map(|k| k.saturating_add(n as u64));
    }

    // ---- device-resident keys -------------------------------------------------------------

    /// Writes the hashes of device-resident u64 keys (or the hashes themselves, for
    /// [`DeviceKeys::Hashes`]) into `out`, grouped by the partition of the filter they fall in:
    /// the first three passes of [`InsertKernel::Partitioned`](crate::InsertKernel::Partitioned). Inserting `out` as
    /// [`DeviceKeys::Hashes`] then sets the same bits as inserting `keys`. Queued on `stream`.
    /// Records and strings are refused with [`GpuError::HashMismatch`]; batches must hold fewer
    /// than 2^32 keys.
    pub fn partition_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let (k, hashes) = match keys {
            DeviceKeys::U64(k) => (k, false),
            DeviceKeys::Hashes(k) => (k, true),
            _ => {
                return Err(GpuError::HashMismatch(
                    "partitioning takes u64 keys or hashes",
                ))
            }
        };
        let image = &mut self.image;
        image.check_hash(hashes)?;
        image.partitioner.group(
            &image.k,
            &image.params,
            &k.view(),
            hashes,
            &mut out.view_mut(),
            stream.raw(),
        )
    }

    /// Inserts device-resident keys, queued on `stream` (returns before the kernel finishes).
    /// String offsets are checked on the device first (see [`DeviceKeys::Strings`]), which waits
    /// for the offsets to be written and checked.
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let args = self.image.device_args(keys)?;
        self.image.insert_args(args, 0, stream.raw())?;
        self.count(keys.len());
        Ok(())
    }

    /// Inserts device-resident keys and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.image.stream.clone();
        self.insert_device_async(keys, &s)?;
        s.synchronize()
    }

    /// The speed-of-light reference for a lookup, for benchmarks: for each key, one random
    /// 32-byte read from `buf` (whose size sets the working set), the key read and one byte
    /// written to `out`. Queued on `stream`.
    pub fn speed_of_light_async(
        buf: &DeviceBuffer<u64>,
        keys: &DeviceBuffer<u64>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let k = layout_free_kernels(&context()?)?;
        let n = keys.len() as u64;
        let sectors = (buf.len() / 4) as u64;
        output_holds(keys.len(), out.len())?;
        if sectors == 0 {
            return Err(GpuError::InputTooShort {
                what: "speed-of-light buffer (32-byte sectors)",
                needed: 1,
                found: 0,
            });
        }
        if n == 0 {
            return Ok(());
        }
        let cfg = grid(n, u64::from(THREADS * KEYS_PER_THREAD))?;
        let (buf, keys, mut out) = (buf.view(), keys.view(), out.view_mut());
        let mut l = stream.raw().launch_builder(k.get(Kernel::SpeedOfLight)?);
        l.arg(&buf).arg(&sectors).arg(&keys).arg(&n).arg(&mut out);
        // SAFETY: `bl_speed_of_light(const uint4* buf, u64 sectors, const u64* keys, u64 n,
        // u8* out)` takes these arguments in this order. It reads the two 16-byte halves of
        // sector `s = ((key >> 32) * sectors) >> 32 < sectors`, i.e. bytes `32 s .. 32 s + 32` of
        // `buf`, which holds `4 × sectors` u64s = `32 × sectors` bytes (16-aligned: a u64
        // allocation starts 256-aligned); it reads `keys[i]` and writes `out[i]` for `i < n`,
        // and both hold at least `n` elements (checked above).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_speed_of_light)", n, e))?;
        Ok(())
    }

    // ---- set operations ---------------------------------------------------------------------

    fn combine(&mut self, other: &GpuFilter, kernel: Kernel) -> Result<(), GpuError> {
        self.image.params.check_compatible(&other.image.params)?;
        let n = self.image.params.u32_len();
        let cfg = grid(n, u64::from(THREADS))?;
        let image = &mut self.image;
        let mut l = image.stream.raw().launch_builder(image.k.get(kernel)?);
        l.arg(&mut image.words).arg(&other.image.words).arg(&n);
        // SAFETY: `bl_union` / `bl_intersect(u32* a, const u32* b, u64 n)` take these arguments
        // in this order and touch `a[i]`, `b[i]` for `i < n` only. Both filters' buffers hold
        // `u32_len()` = `n` words of their parameters, which are the same (checked above), and
        // `&mut self` with `&other` makes them distinct buffers.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(set operation)", n * 4, e))?;
        self.image.stream.synchronize()
    }

    /// ORs `other` into `self` on the device: the filter of the union of both key sets, with
    /// the key count and key type [`Filter::union_with`] gives (the sum of both counts, unknown
    /// if either is; a typed side's key type), so the download equals the core's union.
    pub fn union_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, Kernel::Union)?;
        let params = &mut self.image.params;
        params.key_type = params.merged_key_type(&other.image.params);
        self.keys = bloomlanes_core::fold::merged_key_count(self.keys, other.keys);
        Ok(())
    }

    /// ANDs `other` into `self` on the device (contains every key of the intersection); the
    /// key count becomes unknown, as in [`Filter::intersect_with`].
    pub fn intersect_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, Kernel::Intersect)?;
        self.keys = None;
        Ok(())
    }

    // ---- host keys ----------------------------------------------------------------------------

    /// Inserts keys from host memory, streamed through pinned buffers in chunks.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.image.insert_host(keys, 0)?;
        self.count(keys.len());
        Ok(())
    }

    /// Inserts u64 keys already in pinned memory: chunks are copied straight from `keys`, with
    /// copies and kernels overlapped on several streams.
    pub fn insert_pinned(&mut self, keys: &PinnedBuffer<u64>) -> Result<(), GpuError> {
        self.image.insert_pinned_into(keys, 0)?;
        self.count(keys.len());
        Ok(())
    }
}
