//! The device-resident filter and its buffers.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut, Range};
use std::sync::{Arc, Mutex};

use bloomlanes_core::{Filter, FilterRef, HashId, Keys, Layout, Params};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::kernel::{
    names, Kernel, KEYS_PER_THREAD, MAX_PARTITIONS, SCATTER_KEYS_PER_THREAD, THREADS,
};
use crate::{compile, context, GpuError, Target};

/// Keys per chunk when streaming host input (a multiple of 64, so bitmap words never straddle).
const DEFAULT_CHUNK_KEYS: usize = 1 << 22;
/// Byte cap of one chunk of string data.
const CHUNK_BYTES: usize = 64 << 20;
/// Streams (and buffer sets) of the host pipeline: copy in, kernel, copy out all overlap.
const SLOTS: usize = 3;
/// Default cap of the partitioned insert's scratch buffer, in hashes (2^28 = 2 GiB).
const DEFAULT_SCRATCH_KEYS: usize = 1 << 28;
/// The smallest scratch buffer worth partitioning with when memory is short.
const MIN_SCRATCH_KEYS: usize = 1 << 20;
/// [`InsertKernel::Auto`] partitions batches of at least this many keys (and at least one key
/// per 4 blocks), into filters larger than half the L2 cache.
const AUTO_MIN_KEYS: usize = 1 << 22;
/// Partition size when the device does not report its L2 size.
const FALLBACK_PARTITION_BYTES: u64 = 16 << 20;

const _: () = assert!(MAX_PARTITIONS.is_multiple_of(THREADS) && MAX_PARTITIONS < 1 << 16);
const _: () = assert!(THREADS * SCATTER_KEYS_PER_THREAD <= 1 << 16);

/// The compiled kernels of one layout.
struct Kernels {
    _module: Arc<CudaModule>,
    f: HashMap<&'static str, CudaFunction>,
}

static KERNELS: Mutex<Vec<(Layout, Arc<Kernels>)>> = Mutex::new(Vec::new());

fn kernels(ctx: &Arc<CudaContext>, layout: Layout) -> Result<Arc<Kernels>, GpuError> {
    let mut cache = KERNELS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(l, _)| *l == layout) {
        return Ok(k.clone());
    }
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| GpuError::cuda("cuDeviceGetAttribute", 0, e))?;
    let target = compile::target_for((major as u32, minor as u32))?;
    let compiled = compile::compile(layout, target)?;
    let ptx = match target {
        Target::Cubin(_) => Ptx::from_binary(compiled.image),
        Target::Ptx(_) => Ptx::from_src(
            String::from_utf8_lossy(&compiled.image)
                .trim_end_matches('\0')
                .to_string(),
        ),
    };
    let module = ctx
        .load_module(ptx)
        .map_err(|e| GpuError::cuda("cuModuleLoadData", 0, e))?;
    let mut f = HashMap::new();
    for name in Kernel::ALL.map(Kernel::name) {
        let func = module
            .load_function(name)
            .map_err(|e| GpuError::cuda("cuModuleGetFunction", 0, e))?;
        f.insert(name, func);
    }
    let k = Arc::new(Kernels { _module: module, f });
    cache.push((layout, k.clone()));
    Ok(k)
}

fn grid(n: u64, per_block: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(per_block).max(1) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn check_free(ctx: &CudaContext, what: &'static str, bytes: u64) -> Result<(), GpuError> {
    let (free, _) = ctx
        .mem_get_info()
        .map_err(|e| GpuError::cuda("cuMemGetInfo", 0, e))?;
    if bytes > free as u64 {
        return Err(GpuError::OutOfMemory {
            what,
            requested_bytes: bytes,
            free_bytes: free as u64,
        });
    }
    Ok(())
}

fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    what: &'static str,
    n: usize,
) -> Result<CudaSlice<T>, GpuError> {
    let bytes = (n * std::mem::size_of::<T>()) as u64;
    check_free(stream.context(), what, bytes)?;
    stream
        .alloc_zeros::<T>(n.max(1))
        .map_err(|e| GpuError::cuda(what, bytes, e))
}

/// A CUDA stream for the asynchronous calls.
#[derive(Clone, Debug)]
pub struct GpuStream {
    stream: Arc<CudaStream>,
}

impl GpuStream {
    /// A new stream on device 0.
    pub fn new() -> Result<GpuStream, GpuError> {
        let ctx = context()?;
        let stream = ctx
            .new_stream()
            .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))?;
        Ok(GpuStream { stream })
    }
    /// Waits until every call queued on this stream has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))
    }
    /// Starts a timer: record [`Timer::stop`] later on the same stream.
    pub fn timer(&self) -> Result<Timer, GpuError> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(flags)
            .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))?;
        Ok(Timer {
            start,
            stream: self.stream.clone(),
        })
    }
}

/// A CUDA-event timer on a stream (device time, not host time).
#[derive(Debug)]
pub struct Timer {
    start: CudaEvent,
    stream: Arc<CudaStream>,
}

impl Timer {
    /// Records the end event, waits for it, and returns the elapsed device time in milliseconds.
    pub fn stop(self) -> Result<f32, GpuError> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let end = self
            .stream
            .record_event(flags)
            .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))?;
        end.synchronize()
            .map_err(|e| GpuError::cuda("cuEventSynchronize", 0, e))?;
        self.start
            .elapsed_ms(&end)
            .map_err(|e| GpuError::cuda("cuEventElapsedTime", 0, e))
    }
}

/// A buffer in device memory.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
    len: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits + Default + Clone> DeviceBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeros(len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        let stream = context()?.default_stream();
        let slice = alloc_zeros::<T>(&stream, "device buffer", len)?;
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        Ok(DeviceBuffer { slice, len })
    }
    /// A copy of `data` on the device.
    pub fn from_host(data: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        let mut b = DeviceBuffer::zeros(data.len())?;
        if !data.is_empty() {
            let stream = b.slice.stream().clone();
            let bytes = std::mem::size_of_val(data) as u64;
            stream
                .memcpy_htod(data, &mut b.slice.slice_mut(..data.len()))
                .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
            stream
                .synchronize()
                .map_err(|e| GpuError::cuda("cuStreamSynchronize", bytes, e))?;
        }
        Ok(b)
    }
    /// The contents, copied to the host.
    pub fn to_host(&self) -> Result<Vec<T>, GpuError> {
        let mut v = vec![T::default(); self.len];
        if self.len > 0 {
            let stream = self.slice.stream().clone();
            stream
                .memcpy_dtoh(&self.slice.slice(..self.len), &mut v[..])
                .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.bytes(), e))?;
            stream
                .synchronize()
                .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        }
        Ok(v)
    }
}

impl<T> DeviceBuffer<T> {
    /// Copies `src[..self.len()]` (page-locked host memory) into this buffer on `stream` and
    /// waits (a [`Timer`] started on `stream` before the call measures the copy alone).
    pub fn copy_from_pinned(
        &mut self,
        src: &PinnedBuffer<T>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let n = self.len.min(src.len());
        if n == 0 {
            return Ok(());
        }
        let bytes = (n * std::mem::size_of::<T>()) as u64;
        let (dst, _rec) = self.slice.device_ptr_mut(&stream.stream);
        // SAFETY: `dst` holds `len` ≥ `n` elements; the source is pinned host memory of `n`
        // elements, borrowed until the stream is synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dst, &src[..n], stream.stream.cu_stream())
        }
        .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", bytes, e))?;
        stream.synchronize()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
}

impl DeviceBuffer<u64> {
    /// `len` pseudo-random u64 keys generated on the device (SplitMix64 of `seed`, index).
    pub fn random_u64(len: usize, seed: u64) -> Result<DeviceBuffer<u64>, GpuError> {
        let mut b = DeviceBuffer::<u64>::zeros(len)?;
        let ctx = context()?;
        // The kernel is layout-independent; any layout's module has it.
        let k = kernels(&ctx, Layout::L8x32)?;
        let stream = b.slice.stream().clone();
        let n = len as u64;
        if n > 0 {
            let mut l = stream.launch_builder(&k.f[names::FILL_RANDOM]);
            l.arg(&mut b.slice).arg(&n).arg(&seed);
            // SAFETY: the kernel writes `n` u64s into a buffer of `len` = `n` elements.
            unsafe { l.launch(grid(n, u64::from(THREADS))) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_fill_random)", n * 8, e))?;
        }
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        Ok(b)
    }
}

/// Keys already in device memory.
#[derive(Clone, Copy, Debug)]
pub enum DeviceKeys<'a> {
    /// Integer keys, hashed as their 8 little-endian bytes.
    U64(&'a DeviceBuffer<u64>),
    /// Caller-supplied 64-bit hashes.
    Hashes(&'a DeviceBuffer<u64>),
    /// Fixed-width records laid end to end.
    Records {
        /// The record bytes.
        data: &'a DeviceBuffer<u8>,
        /// Record width in bytes (at least 1).
        width: usize,
    },
    /// Strings `data[offsets[i]..offsets[i + 1]]`.
    Strings {
        /// The string bytes.
        data: &'a DeviceBuffer<u8>,
        /// `n + 1` non-decreasing offsets into `data`.
        offsets: &'a DeviceBuffer<u64>,
    },
}

impl DeviceKeys<'_> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        match self {
            DeviceKeys::U64(k) | DeviceKeys::Hashes(k) => k.len,
            DeviceKeys::Records { data, width } => data.len / (*width).max(1),
            DeviceKeys::Strings { offsets, .. } => offsets.len.saturating_sub(1),
        }
    }
    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Page-locked host memory: the fast path for streaming keys in and results out.
pub struct PinnedBuffer<T> {
    ptr: *mut T,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer owns its allocation like a `Vec<T>`; the raw pointer is not shared.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: shared access only hands out `&[T]`.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    /// `len` zeroed elements of page-locked host memory.
    pub fn zeros(len: usize) -> Result<PinnedBuffer<T>, GpuError> {
        let ctx = context()?;
        ctx.bind_to_thread()
            .map_err(|e| GpuError::cuda("cuCtxSetCurrent", 0, e))?;
        let bytes = len.max(1) * std::mem::size_of::<T>();
        // SAFETY: plain page-locked allocation (no flags); checked for null below.
        let ptr = unsafe { cudarc::driver::result::malloc_host(bytes, 0) }
            .map_err(|e| GpuError::cuda("cuMemHostAlloc", bytes as u64, e))?
            as *mut T;
        // SAFETY: `ptr` points at `bytes` writable bytes; zero is a valid `T` (Pod).
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        Ok(PinnedBuffer { ptr, len, ctx })
    }
    /// A pinned copy of `data`.
    pub fn from_slice(data: &[T]) -> Result<PinnedBuffer<T>, GpuError> {
        let mut b = PinnedBuffer::zeros(data.len())?;
        b.copy_from_slice(data);
        Ok(b)
    }
}

impl<T> Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialised elements for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `ptr` came from `cuMemHostAlloc` and is freed once; every copy that used it was
        // synchronised before the call that queued it returned.
        let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut _) };
    }
}

impl<T> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .finish()
    }
}

/// How inserts of u64 keys and hashes set bits. Every choice gives the same filter bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InsertKernel {
    /// One atomic OR per 64-bit word of the block (two 32-bit lanes share one).
    Atomic,
    /// One TMA bulk reduction (`cp.reduce.async.bulk … .or.b64`) of the whole block mask per key,
    /// staged in shared memory (sm_90+; falls back to atomics on older devices). Faster than
    /// atomics for every layout and size measured on an H100.
    BulkReduce,
    /// Device-resident batches are first grouped by filter region, then inserted: one pass
    /// hashes the keys and counts them per partition (a contiguous range of blocks of at most
    /// [`GpuFilter::partition_bytes`], sized to a third of the L2 cache), a scan turns the counts
    /// into offsets, a scatter pass writes the 64-bit hashes grouped by partition into a scratch
    /// buffer (grouped per CTA in shared memory so writes coalesce), and one bulk-reduce insert
    /// runs over the grouped hashes. CTAs run roughly in order, so the blocks being updated at any
    /// moment fit in L2 and the read-modify-writes hit L2 instead of DRAM.
    ///
    /// The scratch buffer holds at most [`GpuFilter::set_scratch_keys`] hashes (2^28 = 2 GiB by
    /// default; larger batches go through in chunks), is allocated on first use and kept until
    /// [`GpuFilter::release_scratch`] or the filter is dropped. If it cannot be allocated the
    /// insert fails with [`GpuError::OutOfMemory`] (no bits are set). Inserts from host memory
    /// (`insert`, `insert_pinned`), which are bound by the host-to-device copy, use the
    /// bulk-reduce kernel instead.
    Partitioned,
    /// The default: [`InsertKernel::Partitioned`] for device-resident batches of at least 2^22
    /// keys and at least one key per 4 blocks into filters larger than half the L2 cache, else
    /// [`InsertKernel::BulkReduce`]. If the scratch buffer cannot be allocated, it falls back to
    /// the bulk-reduce kernel instead of failing.
    #[default]
    Auto,
}

/// What a pass over keys does.
enum Op<'o> {
    Insert,
    Contains(&'o mut [u8]),
    Bitmap(&'o mut [u64]),
}

/// One set of pipeline buffers, used by one stream.
struct Slot {
    stream: Arc<CudaStream>,
    stage: PinnedBuffer<u8>,
    stage_off: PinnedBuffer<u64>,
    dev: CudaSlice<u8>,
    dev_off: CudaSlice<u64>,
    dev_out: CudaSlice<u8>,
    out_stage: PinnedBuffer<u8>,
    /// The chunk whose results sit in `out_stage` once the stream is idle.
    pending: Option<Range<usize>>,
}

impl Slot {
    /// Whether every buffer holds a chunk of `bytes` key bytes, `offs` offsets and `out` result bytes.
    fn fits(&self, bytes: usize, offs: usize, out: usize) -> bool {
        self.stage.len() >= bytes
            && self.dev.len() >= bytes
            && self.stage_off.len() >= offs
            && self.dev_off.len() >= offs
            && self.out_stage.len() >= out
            && self.dev_out.len() >= out
    }
}

/// Copies a chunk of keys into its page-locked staging buffer, on several threads when the chunk
/// is large: from ordinary (pageable) memory, one thread's copy is what bounds a host-memory call,
/// not the PCIe transfer that follows it.
fn staging_copy(dst: &mut [u8], src: &[u8]) {
    const MIN_PART: usize = 2 << 20;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let parts = threads.min(src.len() / MIN_PART);
    if parts < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let part = src.len().div_ceil(parts);
    std::thread::scope(|s| {
        for (d, from) in dst.chunks_mut(part).zip(src.chunks(part)) {
            s.spawn(move || d.copy_from_slice(from));
        }
    });
}

/// Staging slots kept between host-memory calls. Page-locked buffers and streams are expensive to
/// create (a `cuMemHostAlloc` of tens of MiB costs milliseconds), so a process makes them once and
/// reuses them; all belong to the one device-0 context of [`context`].
static SLOT_POOL: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

/// A split-block Bloom filter in GPU memory.
pub struct GpuFilter {
    ctx: Arc<CudaContext>,
    stream: GpuStream,
    k: Arc<Kernels>,
    words: CudaSlice<u32>,
    params: Params,
    keys: Option<u64>,
    chunk_keys: usize,
    insert_kernel: InsertKernel,
    /// Streaming multiprocessors (grid size of the grid-stride histogram pass).
    sms: u32,
    /// L2 cache bytes (0 if unknown).
    l2_bytes: u64,
    /// Partition size of the partitioned insert; `None` = from the L2 size.
    partition_bytes: Option<u64>,
    /// Cap of the partitioned insert's scratch buffer, in hashes.
    scratch_keys: usize,
    /// Scratch of the partitioned insert: grouped hashes, per-partition counts and cursors.
    scratch: Option<Scratch>,
}

/// The partitioned insert's device buffers.
struct Scratch {
    hashes: CudaSlice<u64>,
    counts: CudaSlice<u32>,
    cursor: CudaSlice<u32>,
}

impl std::fmt::Debug for GpuFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuFilter")
            .field("params", &self.params)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl GpuFilter {
    /// An empty filter with these parameters on device 0.
    pub fn new(params: Params) -> Result<GpuFilter, GpuError> {
        let ctx = context()?;
        let layout = params.layout;
        let bytes = params.byte_len();
        // Refuse before compiling anything: the clear error for a filter too big for the device.
        check_free(&ctx, "filter bits", bytes)?;
        let k = kernels(&ctx, layout)?;
        let stream = GpuStream {
            stream: ctx
                .new_stream()
                .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))?,
        };
        let words = alloc_zeros::<u32>(&stream.stream, "filter bits", (bytes / 4) as usize)?;
        stream.synchronize()?;
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u64).unwrap_or(0);
        use cudarc::driver::sys::CUdevice_attribute as A;
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).clamp(1, 1 << 16) as u32;
        let l2_bytes = attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
        Ok(GpuFilter {
            ctx,
            stream,
            k,
            words,
            params,
            keys: Some(0),
            chunk_keys: DEFAULT_CHUNK_KEYS,
            insert_kernel: InsertKernel::Auto,
            sms,
            l2_bytes,
            partition_bytes: None,
            scratch_keys: DEFAULT_SCRATCH_KEYS,
            scratch: None,
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
        let words = view.words();
        let bytes = std::mem::size_of_val(words) as u64;
        g.stream
            .stream
            .memcpy_htod(words, &mut g.words)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
        g.stream.synchronize()?;
        g.keys = None;
        Ok(g)
    }

    /// The filter copied back to the host; its bytes equal what the core builds from the same keys.
    pub fn download(&self) -> Result<Filter, GpuError> {
        let mut f = Filter::new(self.params);
        let bytes = self.byte_len();
        self.stream
            .stream
            .memcpy_dtoh(&self.words, f.words_mut())
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", bytes, e))?;
        self.stream.synchronize()?;
        f.set_key_count(self.keys);
        Ok(f)
    }

    /// The filter's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// The block shape.
    pub fn layout(&self) -> Layout {
        self.params.layout
    }
    /// Number of blocks.
    pub fn blocks(&self) -> u32 {
        self.params.blocks
    }
    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }
    /// Keys inserted since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Size of the bit array in bytes.
    pub fn byte_len(&self) -> u64 {
        self.params.byte_len()
    }
    /// The filter's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }
    /// Keys per chunk when streaming from host memory (rounded up to a multiple of 64).
    pub fn set_chunk_keys(&mut self, keys: usize) {
        self.chunk_keys = keys.max(64).next_multiple_of(64);
    }

    /// Chooses the insert kernel for u64 keys and hashes (results are identical); the default is
    /// [`InsertKernel::Auto`].
    pub fn set_insert_kernel(&mut self, kernel: InsertKernel) {
        self.insert_kernel = kernel;
    }

    /// The insert kernel chosen with [`GpuFilter::set_insert_kernel`].
    pub fn insert_kernel(&self) -> InsertKernel {
        self.insert_kernel
    }

    /// Sets the partitioned insert's target partition size in bytes (0 = automatic: a third of
    /// the device's L2 cache, at most 24 MiB). At most 2048 partitions are used, so partitions of
    /// very large filters may be bigger.
    pub fn set_partition_bytes(&mut self, bytes: u64) {
        self.partition_bytes = (bytes > 0).then_some(bytes);
    }

    /// The partitioned insert's target partition size in bytes.
    pub fn partition_bytes(&self) -> u64 {
        self.partition_bytes.unwrap_or(if self.l2_bytes == 0 {
            FALLBACK_PARTITION_BYTES
        } else {
            (self.l2_bytes / 3).clamp(1 << 20, 24 << 20)
        })
    }

    /// Number of partitions the partitioned insert splits this filter into (1 to 2048).
    pub fn partitions(&self) -> u32 {
        self.byte_len()
            .div_ceil(self.partition_bytes())
            .clamp(1, u64::from(MAX_PARTITIONS)) as u32
    }

    /// Caps the partitioned insert's scratch buffer at `keys` hashes (8 bytes each; at least 64).
    /// Larger batches are partitioned and inserted in chunks of at most this many keys. A buffer
    /// already allocated larger is kept (see [`GpuFilter::release_scratch`]).
    pub fn set_scratch_keys(&mut self, keys: usize) {
        self.scratch_keys = keys.clamp(64, u32::MAX as usize);
    }

    /// Frees the partitioned insert's scratch buffer (it is allocated again when needed).
    pub fn release_scratch(&mut self) {
        self.scratch = None;
    }

    /// The L2 cache size the device reports, in bytes (0 if unknown).
    pub fn l2_bytes(&self) -> u64 {
        self.l2_bytes
    }

    /// Whether a device-resident insert of `keys` u64 keys or hashes takes the partitioned path
    /// with the current [`InsertKernel`] (see [`InsertKernel::Auto`] for the rule).
    pub fn partitioned_for(&self, keys: usize) -> bool {
        match self.insert_kernel {
            InsertKernel::Partitioned => true,
            InsertKernel::Auto => {
                let l2 = if self.l2_bytes == 0 {
                    2 * FALLBACK_PARTITION_BYTES
                } else {
                    self.l2_bytes
                };
                self.byte_len() > l2 / 2
                    && keys >= AUTO_MIN_KEYS
                    && keys as u64 * 4 >= u64::from(self.params.blocks)
            }
            InsertKernel::Atomic | InsertKernel::BulkReduce => false,
        }
    }

    /// The direct (unpartitioned) insert kernel.
    fn insert_name(&self, hashes: bool) -> &'static str {
        match (self.insert_kernel, hashes) {
            (InsertKernel::Atomic, false) => names::INSERT_U64,
            (InsertKernel::Atomic, true) => names::INSERT_HASH,
            (_, false) => names::INSERT_U64_BULK,
            (_, true) => names::INSERT_HASH_BULK,
        }
    }

    /// Makes sure the scratch buffer holds `min(n, cap)` hashes (reusing a big enough one) and
    /// returns its capacity; while the device is short of memory the request is halved, down to
    /// `MIN_SCRATCH_KEYS` (or `n` if smaller), before giving up with [`GpuError::OutOfMemory`].
    fn ensure_scratch(&mut self, n: usize) -> Result<usize, GpuError> {
        let want = n.min(self.scratch_keys).max(1);
        if let Some(s) = &self.scratch {
            if s.hashes.len() >= want {
                return Ok(s.hashes.len());
            }
        }
        self.scratch = None;
        let stream = self.stream.stream.clone();
        let counts = alloc_zeros::<u32>(&stream, "partition counts", MAX_PARTITIONS as usize)?;
        let cursor = alloc_zeros::<u32>(&stream, "partition cursors", MAX_PARTITIONS as usize)?;
        let mut len = want;
        let hashes = loop {
            match alloc_zeros::<u64>(&stream, "partitioned insert scratch", len) {
                Ok(h) => break h,
                Err(GpuError::OutOfMemory { .. }) if len > MIN_SCRATCH_KEYS.min(want) => {
                    len = (len / 2).max(MIN_SCRATCH_KEYS.min(want));
                }
                Err(GpuError::OutOfMemory { free_bytes, .. }) => {
                    return Err(GpuError::OutOfMemory {
                        what: "partitioned insert scratch",
                        requested_bytes: want as u64 * 8,
                        free_bytes,
                    })
                }
                Err(e) => return Err(e),
            }
        };
        self.scratch = Some(Scratch {
            hashes,
            counts,
            cursor,
        });
        Ok(len)
    }

    /// Passes 1–3 of the partitioned insert for keys `0..m` of `keys`: their hashes, grouped by
    /// partition, into `out[..m]`. Queued on `stream`.
    #[allow(clippy::too_many_arguments)]
    fn partition_chunk(
        k: &Kernels,
        sms: u32,
        seed: u64,
        parts: u32,
        keys: &cudarc::driver::CudaView<'_, u64>,
        mode: i32,
        counts: &mut CudaSlice<u32>,
        cursor: &mut CudaSlice<u32>,
        out: &mut CudaSlice<u64>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let m = keys.len() as u64;
        if m == 0 {
            return Ok(());
        }
        stream
            .memset_zeros(counts)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async(partition counts)", 0, e))?;
        let per = u64::from(THREADS * KEYS_PER_THREAD);
        let mut cfg = grid(m, per);
        cfg.grid_dim.0 = cfg.grid_dim.0.min(sms.saturating_mul(8)).max(1);
        let mut l = stream.launch_builder(&k.f[names::PART_HIST]);
        l.arg(keys)
            .arg(&m)
            .arg(&seed)
            .arg(&mode)
            .arg(&parts)
            .arg(&mut *counts);
        // SAFETY: argument list matches `bl_part_hist`; it reads keys `0..m` of the view and
        // counts into `parts` ≤ MAX_PARTITIONS words of `counts` (MAX_PARTITIONS long).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_hist)", m, e))?;
        let mut l = stream.launch_builder(&k.f[names::PART_SCAN]);
        l.arg(&*counts).arg(&parts).arg(&mut *cursor);
        // SAFETY: one CTA reads and writes `parts` ≤ MAX_PARTITIONS words of the two buffers.
        unsafe { l.launch(grid(1, 1)) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scan)", 0, e))?;
        let mut l = stream.launch_builder(&k.f[names::PART_SCATTER]);
        l.arg(keys)
            .arg(&m)
            .arg(&seed)
            .arg(&mode)
            .arg(&parts)
            .arg(&mut *cursor)
            .arg(out);
        // SAFETY: argument list matches `bl_part_scatter`; it reads keys `0..m` and writes each
        // of them once to `out[..m]` (the cursors start at the exclusive prefix sums of the
        // counts of these same keys), and `out` holds at least `m` hashes (checked by callers).
        unsafe { l.launch(grid(m, u64::from(THREADS * SCATTER_KEYS_PER_THREAD))) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_part_scatter)", m, e))?;
        Ok(())
    }

    /// The partitioned insert of device-resident u64 keys or hashes, queued on `stream`.
    fn insert_partitioned(
        &mut self,
        keys: &DeviceBuffer<u64>,
        hashes: bool,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let n = keys.len;
        if n == 0 {
            return Ok(());
        }
        let chunk = self.ensure_scratch(n)?.min(self.scratch_keys);
        let parts = self.partitions();
        let blocks = u64::from(self.params.blocks);
        let seed = self.params.seed;
        let mode: i32 = if hashes { 1 } else { 0 };
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let mut a = 0;
        while a < n {
            let b = (a + chunk).min(n);
            let m = (b - a) as u64;
            let view = keys.slice.slice(a..b);
            Self::partition_chunk(
                &self.k,
                self.sms,
                seed,
                parts,
                &view,
                mode,
                &mut scratch.counts,
                &mut scratch.cursor,
                &mut scratch.hashes,
                stream,
            )?;
            let mut l = stream.launch_builder(&self.k.f[names::INSERT_HASH_BULK]);
            l.arg(&mut self.words)
                .arg(&blocks)
                .arg(&scratch.hashes)
                .arg(&m)
                .arg(&seed);
            // SAFETY: argument list matches `bl_insert_hash_bulk`; it reads the `m` grouped
            // hashes the scatter pass just wrote and ORs bits into blocks `< blocks`.
            unsafe { l.launch(grid(m, u64::from(THREADS * KEYS_PER_THREAD))) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_insert_hash_bulk)", m, e))?;
            a = b;
        }
        Ok(())
    }

    /// Writes the hashes of device-resident u64 keys (or the hashes themselves, for
    /// [`DeviceKeys::Hashes`]) into `out`, grouped by the partition of the filter they fall in:
    /// the first three passes of [`InsertKernel::Partitioned`]. Inserting `out` as
    /// [`DeviceKeys::Hashes`] then sets the same bits as inserting `keys`. Queued on `stream`.
    /// Records and strings are refused with [`GpuError::HashMismatch`]; batches must hold fewer
    /// than 2^32 keys.
    pub fn partition_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let (k, mode) = match keys {
            DeviceKeys::U64(k) => (k, 0i32),
            DeviceKeys::Hashes(k) => (k, 1i32),
            _ => {
                return Err(GpuError::HashMismatch(
                    "partitioning takes u64 keys or hashes",
                ))
            }
        };
        self.check_hash(mode == 1)?;
        if out.len < k.len {
            return Err(GpuError::OutputTooShort {
                needed: k.len,
                found: out.len,
            });
        }
        if k.len >= u32::MAX as usize {
            return Err(GpuError::Cuda {
                op: "partition_device_async",
                bytes: k.len as u64 * 8,
                message: "a batch to partition must hold fewer than 2^32 keys".into(),
            });
        }
        self.ensure_scratch(1)?;
        let parts = self.partitions();
        let scratch = self.scratch.as_mut().expect("scratch allocated above");
        let view = k.slice.slice(0..k.len);
        Self::partition_chunk(
            &self.k,
            self.sms,
            self.params.seed,
            parts,
            &view,
            mode,
            &mut scratch.counts,
            &mut scratch.cursor,
            &mut out.slice,
            &stream.stream,
        )
    }

    /// Clears every bit (the key count becomes 0).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.stream
            .stream
            .memset_zeros(&mut self.words)
            .map_err(|e| GpuError::cuda("cuMemsetD8", self.byte_len(), e))?;
        self.keys = Some(0);
        self.stream.synchronize()
    }

    fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params.hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this filter holds caller-supplied hashes; pass Keys::Hashes",
            ));
        }
        Ok(())
    }

    fn count(&mut self, n: usize) {
        self.keys = self.keys.map(|k| k.saturating_add(n as u64));
    }

    // ---- device-resident keys -------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn launch_device(
        k: &Kernels,
        blocks: u32,
        seed: u64,
        words: DevWords<'_>,
        keys: DeviceKeys<'_>,
        out: DevOut<'_>,
        stream: &Arc<CudaStream>,
        insert_name: Option<&'static str>,
    ) -> Result<(), GpuError> {
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let blocks = u64::from(blocks);
        let (kind, fname, per_block) = match (&keys, &out) {
            (DeviceKeys::U64(_), DevOut::None) => ("insert", names::INSERT_U64, 1),
            (DeviceKeys::Hashes(_), DevOut::None) => ("insert", names::INSERT_HASH, 1),
            (DeviceKeys::Records { .. }, DevOut::None) => ("insert", names::INSERT_RECORDS, 0),
            (DeviceKeys::Strings { .. }, DevOut::None) => ("insert", names::INSERT_STRINGS, 0),
            (DeviceKeys::U64(_), DevOut::Bytes(_)) => ("contains", names::CONTAINS_U64, 1),
            (DeviceKeys::Hashes(_), DevOut::Bytes(_)) => ("contains", names::CONTAINS_HASH, 1),
            (DeviceKeys::Records { .. }, DevOut::Bytes(_)) => {
                ("contains", names::CONTAINS_RECORDS, 0)
            }
            (DeviceKeys::Strings { .. }, DevOut::Bytes(_)) => {
                ("contains", names::CONTAINS_STRINGS, 0)
            }
            (DeviceKeys::U64(_), DevOut::Bits(_)) => ("bitmap", names::BITMAP_U64, 1),
            (DeviceKeys::Hashes(_), DevOut::Bits(_)) => ("bitmap", names::BITMAP_HASH, 1),
            (DeviceKeys::Records { .. }, DevOut::Bits(_)) => ("bitmap", names::BITMAP_RECORDS, 0),
            (DeviceKeys::Strings { .. }, DevOut::Bits(_)) => ("bitmap", names::BITMAP_STRINGS, 0),
        };
        let fname = match (kind, &keys, insert_name) {
            ("insert", DeviceKeys::U64(_) | DeviceKeys::Hashes(_), Some(name)) => name,
            _ => fname,
        };
        let per_block = if per_block == 1 {
            u64::from(THREADS * KEYS_PER_THREAD)
        } else {
            u64::from(THREADS)
        };
        let f = &k.f[fname];
        let mut l = stream.launch_builder(f);
        match words {
            DevWords::Read(w) => l.arg(w),
            DevWords::Write(w) => l.arg(w),
        };
        l.arg(&blocks);
        let (width, base);
        match keys {
            DeviceKeys::U64(k) | DeviceKeys::Hashes(k) => {
                l.arg(&k.slice).arg(&n).arg(&seed);
            }
            DeviceKeys::Records { data, width: w } => {
                width = w as u64;
                l.arg(&data.slice).arg(&width).arg(&n).arg(&seed);
            }
            DeviceKeys::Strings { data, offsets } => {
                base = 0u64;
                l.arg(&data.slice)
                    .arg(&offsets.slice)
                    .arg(&base)
                    .arg(&n)
                    .arg(&seed);
            }
        }
        match out {
            DevOut::None => {}
            DevOut::Bytes(o) => {
                l.arg(o);
            }
            DevOut::Bits(o) => {
                l.arg(o);
            }
        }
        // SAFETY: argument list matches the kernel signature; the kernel touches keys `0..n`,
        // which the buffers hold (checked by the callers), and words inside the filter.
        unsafe { l.launch(grid(n, per_block)) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel", n, e))?;
        Ok(())
    }

    fn check_device_keys(keys: &DeviceKeys<'_>) -> Result<(), GpuError> {
        match keys {
            DeviceKeys::Records { width: 0, .. } => {
                Err(GpuError::Batch(bloomlanes_core::BatchError::ZeroWidth))
            }
            DeviceKeys::Records { data, width } if data.len % width != 0 => Err(GpuError::Batch(
                bloomlanes_core::BatchError::RaggedRecords {
                    len: data.len,
                    width: *width,
                },
            )),
            DeviceKeys::Strings { offsets, .. } if offsets.len == 0 => {
                Err(GpuError::Batch(bloomlanes_core::BatchError::NoOffsets))
            }
            _ => Ok(()),
        }
    }

    /// Inserts device-resident keys, queued on `stream` (returns before the kernel finishes).
    /// Strings offsets must be non-decreasing and within the data (not checked on the device).
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        Self::check_device_keys(&keys)?;
        let hashes = matches!(keys, DeviceKeys::Hashes(_));
        self.check_hash(hashes)?;
        if let DeviceKeys::U64(k) | DeviceKeys::Hashes(k) = keys {
            if self.partitioned_for(k.len) {
                match self.insert_partitioned(k, hashes, &stream.stream) {
                    Ok(()) => {
                        self.count(k.len);
                        return Ok(());
                    }
                    // Nothing was queued: the scratch buffer is allocated before any launch.
                    Err(GpuError::OutOfMemory { .. })
                        if self.insert_kernel == InsertKernel::Auto => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let name = self.insert_name(hashes);
        Self::launch_device(
            &self.k,
            self.params.blocks,
            self.params.seed,
            DevWords::Write(&mut self.words),
            keys,
            DevOut::None,
            &stream.stream,
            Some(name),
        )?;
        self.count(keys.len());
        Ok(())
    }

    /// Inserts device-resident keys and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.stream.clone();
        self.insert_device_async(keys, &s)?;
        s.synchronize()
    }

    /// Looks up device-resident keys into `out` (one byte per key, 1 = maybe present), queued on
    /// `stream`.
    pub fn contains_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        Self::check_device_keys(&keys)?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        if out.len < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len,
            });
        }
        Self::launch_device(
            &self.k,
            self.params.blocks,
            self.params.seed,
            DevWords::Read(&self.words),
            keys,
            DevOut::Bytes(&mut out.slice),
            &stream.stream,
            None,
        )
    }

    /// Looks up device-resident keys into `out` and waits.
    pub fn contains_device(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.contains_device_async(keys, out, &self.stream)?;
        self.stream.synchronize()
    }

    /// Looks up device-resident keys into a packed bitmap (bit `i % 64` of word `i / 64`), queued
    /// on `stream`. Bits past the last key in its word are zero.
    pub fn contains_bitmap_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        Self::check_device_keys(&keys)?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let needed = keys.len().div_ceil(64);
        if out.len < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len,
            });
        }
        Self::launch_device(
            &self.k,
            self.params.blocks,
            self.params.seed,
            DevWords::Read(&self.words),
            keys,
            DevOut::Bits(&mut out.slice),
            &stream.stream,
            None,
        )
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
        let ctx = context()?;
        let k = kernels(&ctx, Layout::L8x32)?;
        let n = keys.len as u64;
        let sectors = (buf.len / 4) as u64;
        if out.len < keys.len || sectors == 0 {
            return Err(GpuError::OutputTooShort {
                needed: keys.len,
                found: out.len,
            });
        }
        if n == 0 {
            return Ok(());
        }
        let mut l = stream.stream.launch_builder(&k.f[names::SPEED_OF_LIGHT]);
        l.arg(&buf.slice)
            .arg(&sectors)
            .arg(&keys.slice)
            .arg(&n)
            .arg(&mut out.slice);
        // SAFETY: reads sectors `< sectors` of `buf`, keys `< n`, writes `out[..n]`.
        unsafe { l.launch(grid(n, u64::from(THREADS * KEYS_PER_THREAD))) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_speed_of_light)", n, e))?;
        Ok(())
    }

    // ---- set operations ---------------------------------------------------------------------

    fn combine(&mut self, other: &GpuFilter, fname: &'static str) -> Result<(), GpuError> {
        self.params.check_compatible(&other.params)?;
        let n = self.byte_len() / 4;
        let mut l = self.stream.stream.launch_builder(&self.k.f[fname]);
        l.arg(&mut self.words).arg(&other.words).arg(&n);
        // SAFETY: both buffers hold `n` words (same layout and block count, checked above).
        unsafe { l.launch(grid(n, u64::from(THREADS))) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(set operation)", n * 4, e))?;
        self.keys = None;
        self.stream.synchronize()
    }

    /// ORs `other` into `self` on the device: the filter of the union of both key sets.
    pub fn union_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, names::UNION)
    }

    /// ANDs `other` into `self` on the device (contains every key of the intersection).
    pub fn intersect_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, names::INTERSECT)
    }

    // ---- host keys ----------------------------------------------------------------------------

    /// Inserts keys from host memory, streamed through pinned buffers in chunks.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        self.run_host(keys, Op::Insert)?;
        self.count(keys.len());
        Ok(())
    }

    /// Looks up keys from host memory: `out[i]` = 1 if key `i` may be present, else 0.
    pub fn contains(&self, keys: Keys<'_>, out: &mut [u8]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        self.run_host(keys, Op::Contains(out))
    }

    /// Looks up keys from host memory into a packed bitmap: bit `i % 64` of `out[i / 64]`.
    /// Bits past the last key are cleared.
    pub fn contains_bitmap(&self, keys: Keys<'_>, out: &mut [u64]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let needed = keys.len().div_ceil(64);
        if out.len() < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len(),
            });
        }
        self.run_host(keys, Op::Bitmap(out))
    }

    fn plan(&self, keys: &Keys<'_>) -> Vec<Range<usize>> {
        let n = keys.len();
        let mut v = Vec::new();
        match keys {
            Keys::Strings(s) => {
                let off = s.offsets();
                let mut a = 0;
                while a < n {
                    // Grow in groups of 64 keys up to the key and byte caps (at least one group).
                    let mut b = (a + 64).min(n);
                    while b < n && b - a < self.chunk_keys {
                        let nb = (b + 64).min(n);
                        if (off[nb] - off[a]) as usize > CHUNK_BYTES {
                            break;
                        }
                        b = nb;
                    }
                    v.push(a..b);
                    a = b;
                }
            }
            _ => {
                let c = match keys {
                    Keys::Records(r) => (CHUNK_BYTES / r.width())
                        .clamp(64, self.chunk_keys)
                        .next_multiple_of(64),
                    _ => self.chunk_keys,
                };
                let mut a = 0;
                while a < n {
                    let b = (a + c).min(n);
                    v.push(a..b);
                    a = b;
                }
            }
        }
        v
    }

    fn payload<'k>(keys: &Keys<'k>, r: &Range<usize>) -> (&'k [u8], &'k [u64]) {
        match *keys {
            Keys::U64(k) | Keys::Hashes(k) => (bytemuck::cast_slice(&k[r.clone()]), &[]),
            Keys::Records(rec) => (&rec.data()[r.start * rec.width()..r.end * rec.width()], &[]),
            Keys::Strings(s) => {
                let off = s.offsets();
                (
                    &s.data()[off[r.start] as usize..off[r.end] as usize],
                    &off[r.start..=r.end],
                )
            }
        }
    }

    fn run_host(&self, keys: Keys<'_>, mut op: Op<'_>) -> Result<(), GpuError> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let chunks = self.plan(&keys);
        let mut max_bytes = 0;
        let mut max_off = 0;
        let mut max_keys = 0;
        for c in &chunks {
            let (d, o) = Self::payload(&keys, c);
            max_bytes = max_bytes.max(d.len());
            max_off = max_off.max(o.len());
            max_keys = max_keys.max(c.len());
        }
        let out_bytes = match op {
            Op::Insert => 0,
            Op::Contains(_) => max_keys,
            Op::Bitmap(_) => max_keys.div_ceil(64) * 8,
        };
        let nslots = SLOTS.min(chunks.len());
        let mut slots = Vec::with_capacity(nslots);
        {
            let mut pool = SLOT_POOL.lock().unwrap_or_else(|e| e.into_inner());
            while slots.len() < nslots {
                match pool
                    .iter()
                    .position(|s| s.fits(max_bytes, max_off, out_bytes))
                {
                    Some(i) => slots.push(pool.swap_remove(i)),
                    None => break,
                }
            }
        }
        while slots.len() < nslots {
            let stream = self
                .ctx
                .new_stream()
                .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))?;
            slots.push(Slot {
                stage: PinnedBuffer::zeros(max_bytes)?,
                stage_off: PinnedBuffer::zeros(max_off)?,
                dev: alloc_zeros::<u8>(&stream, "key chunk", max_bytes)?,
                dev_off: alloc_zeros::<u64>(&stream, "offset chunk", max_off)?,
                dev_out: alloc_zeros::<u8>(&stream, "result chunk", out_bytes)?,
                out_stage: PinnedBuffer::zeros(out_bytes)?,
                pending: None,
                stream,
            });
        }
        // The worker streams start after everything queued on the filter's stream.
        let ready = self
            .stream
            .stream
            .record_event(None)
            .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))?;
        for s in &slots {
            s.stream
                .wait(&ready)
                .map_err(|e| GpuError::cuda("cuStreamWaitEvent", 0, e))?;
        }
        let result = (|| {
            for (i, c) in chunks.iter().enumerate() {
                let slot = &mut slots[i % nslots];
                Self::drain(slot, &mut op)?;
                let (data, off) = Self::payload(&keys, c);
                staging_copy(&mut slot.stage[..data.len()], data);
                slot.stage_off[..off.len()].copy_from_slice(off);
                self.run_chunk(slot, &keys, c, data.len(), off.len(), &op)?;
            }
            for slot in slots.iter_mut() {
                Self::drain(slot, &mut op)?;
            }
            Ok(())
        })();
        // Never leave queued copies reading staging memory that is freed or handed out again,
        // even on an error; slots whose stream did not drain are dropped, not reused.
        let mut pool = SLOT_POOL.lock().unwrap_or_else(|e| e.into_inner());
        for mut slot in slots {
            if slot.stream.synchronize().is_ok() {
                slot.pending = None;
                if pool.len() >= 2 * SLOTS {
                    pool.remove(0); // the oldest goes: the pool follows the recent chunk sizes
                }
                pool.push(slot);
            }
        }
        result
    }

    /// Waits for the slot's stream and hands its finished results to the caller's output.
    fn drain(slot: &mut Slot, op: &mut Op<'_>) -> Result<(), GpuError> {
        slot.stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        if let Some(r) = slot.pending.take() {
            match op {
                Op::Insert => {}
                Op::Contains(out) => out[r.clone()].copy_from_slice(&slot.out_stage[..r.len()]),
                Op::Bitmap(out) => {
                    let words = r.len().div_ceil(64);
                    let src: &[u64] = bytemuck::cast_slice(&slot.out_stage[..words * 8]);
                    out[r.start / 64..r.start / 64 + words].copy_from_slice(src);
                }
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run_chunk(
        &self,
        slot: &mut Slot,
        keys: &Keys<'_>,
        c: &Range<usize>,
        data_len: usize,
        off_len: usize,
        op: &Op<'_>,
    ) -> Result<(), GpuError> {
        let stream = slot.stream.clone();
        let n = c.len() as u64;
        if data_len > 0 {
            let (dst, _rec) = slot.dev.device_ptr_mut(&stream);
            // SAFETY: `dst` holds at least `data_len` bytes; the pinned source stays alive and
            // untouched until this stream is synchronised in `drain`.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    dst,
                    &slot.stage[..data_len],
                    stream.cu_stream(),
                )
            }
            .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", data_len as u64, e))?;
        }
        if off_len > 0 {
            let (dst, _rec) = slot.dev_off.device_ptr_mut(&stream);
            // SAFETY: as above, for the offsets.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    dst,
                    &slot.stage_off[..off_len],
                    stream.cu_stream(),
                )
            }
            .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", off_len as u64 * 8, e))?;
        }
        let blocks = u64::from(self.params.blocks);
        let seed = self.params.seed;
        let (fname, per_block) = match (keys, op) {
            (Keys::U64(_), Op::Insert) => (self.insert_name(false), true),
            (Keys::Hashes(_), Op::Insert) => (self.insert_name(true), true),
            (Keys::Records(_), Op::Insert) => (names::INSERT_RECORDS, false),
            (Keys::Strings(_), Op::Insert) => (names::INSERT_STRINGS, false),
            (Keys::U64(_), Op::Contains(_)) => (names::CONTAINS_U64, true),
            (Keys::Hashes(_), Op::Contains(_)) => (names::CONTAINS_HASH, true),
            (Keys::Records(_), Op::Contains(_)) => (names::CONTAINS_RECORDS, false),
            (Keys::Strings(_), Op::Contains(_)) => (names::CONTAINS_STRINGS, false),
            (Keys::U64(_), Op::Bitmap(_)) => (names::BITMAP_U64, true),
            (Keys::Hashes(_), Op::Bitmap(_)) => (names::BITMAP_HASH, true),
            (Keys::Records(_), Op::Bitmap(_)) => (names::BITMAP_RECORDS, false),
            (Keys::Strings(_), Op::Bitmap(_)) => (names::BITMAP_STRINGS, false),
        };
        let per_block = if per_block {
            u64::from(THREADS * KEYS_PER_THREAD)
        } else {
            u64::from(THREADS)
        };
        let width;
        let base;
        {
            let mut l = stream.launch_builder(&self.k.f[fname]);
            // Inserts from `&self` are safe to run concurrently: the kernel only ORs bits in with
            // atomics, and `insert` holds `&mut self`.
            l.arg(&self.words).arg(&blocks);
            match keys {
                Keys::U64(_) | Keys::Hashes(_) => {
                    l.arg(&slot.dev).arg(&n).arg(&seed);
                }
                Keys::Records(r) => {
                    width = r.width() as u64;
                    l.arg(&slot.dev).arg(&width).arg(&n).arg(&seed);
                }
                Keys::Strings(s) => {
                    base = s.offsets()[c.start];
                    l.arg(&slot.dev)
                        .arg(&slot.dev_off)
                        .arg(&base)
                        .arg(&n)
                        .arg(&seed);
                }
            }
            if !matches!(op, Op::Insert) {
                l.arg(&mut slot.dev_out);
            }
            // SAFETY: the argument list matches the kernel; the chunk buffers hold this chunk's
            // `n` keys (and `n + 1` offsets), and the output holds `n` bytes or `n/64` words.
            unsafe { l.launch(grid(n, per_block)) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel", n, e))?;
        }
        let out_bytes = match op {
            Op::Insert => 0,
            Op::Contains(_) => c.len(),
            Op::Bitmap(_) => c.len().div_ceil(64) * 8,
        };
        if out_bytes > 0 {
            let (src, _rec) = slot.dev_out.device_ptr(&stream);
            // SAFETY: `out_stage` is pinned, holds `out_bytes`, and is read only after `drain`
            // synchronises this stream.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut slot.out_stage[..out_bytes],
                    src,
                    stream.cu_stream(),
                )
            }
            .map_err(|e| GpuError::cuda("cuMemcpyDtoHAsync", out_bytes as u64, e))?;
        }
        slot.pending = Some(c.clone());
        Ok(())
    }

    // ---- pinned host keys: no staging copy ---------------------------------------------------

    /// Inserts u64 keys already in pinned memory: chunks are copied straight from `keys`, with
    /// copies and kernels overlapped on several streams.
    pub fn insert_pinned(&mut self, keys: &PinnedBuffer<u64>) -> Result<(), GpuError> {
        self.check_hash(false)?;
        self.run_pinned(keys, None)?;
        self.count(keys.len());
        Ok(())
    }

    /// Looks up u64 keys in pinned memory into a pinned result buffer (one byte per key).
    pub fn contains_pinned(
        &self,
        keys: &PinnedBuffer<u64>,
        out: &mut PinnedBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.check_hash(false)?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        self.run_pinned(keys, Some(out))
    }

    fn run_pinned(
        &self,
        keys: &PinnedBuffer<u64>,
        mut out: Option<&mut PinnedBuffer<u8>>,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let chunk = self.chunk_keys.min(n);
        let nchunks = n.div_ceil(chunk);
        let nslots = SLOTS.min(nchunks);
        let mut slots = Vec::with_capacity(nslots);
        for _ in 0..nslots {
            let stream = self
                .ctx
                .new_stream()
                .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))?;
            let dk = alloc_zeros::<u64>(&stream, "key chunk", chunk)?;
            let dout = alloc_zeros::<u8>(
                &stream,
                "result chunk",
                if out.is_some() { chunk } else { 0 },
            )?;
            slots.push((stream, dk, dout));
        }
        let ready = self
            .stream
            .stream
            .record_event(None)
            .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))?;
        for s in &slots {
            s.0.wait(&ready)
                .map_err(|e| GpuError::cuda("cuStreamWaitEvent", 0, e))?;
        }
        let blocks = u64::from(self.params.blocks);
        let seed = self.params.seed;
        let per_block = u64::from(THREADS * KEYS_PER_THREAD);
        let result = (|| {
            for i in 0..nchunks {
                let (stream, dk, dout) = &mut slots[i % nslots];
                let r = i * chunk..((i + 1) * chunk).min(n);
                let m = r.len() as u64;
                {
                    let (dst, _rec) = dk.device_ptr_mut(stream);
                    // SAFETY: `dk` holds `chunk` ≥ `m` keys; `keys` is pinned and outlives the
                    // call, which synchronises every stream before returning.
                    unsafe {
                        cudarc::driver::result::memcpy_htod_async(
                            dst,
                            &keys[r.clone()],
                            stream.cu_stream(),
                        )
                    }
                    .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", m * 8, e))?;
                }
                let fname = if out.is_some() {
                    names::CONTAINS_U64
                } else {
                    self.insert_name(false)
                };
                let mut l = stream.launch_builder(&self.k.f[fname]);
                l.arg(&self.words).arg(&blocks).arg(&*dk).arg(&m).arg(&seed);
                if out.is_some() {
                    l.arg(&mut *dout);
                }
                // SAFETY: argument list matches the kernel; `dk` and `dout` hold `m` entries.
                unsafe { l.launch(grid(m, per_block)) }
                    .map_err(|e| GpuError::cuda("cuLaunchKernel", m, e))?;
                if let Some(o) = out.as_deref_mut() {
                    let (src, _rec) = dout.device_ptr(stream);
                    // SAFETY: `o` is pinned and holds `n` bytes; the copy finishes before the
                    // streams are synchronised below, and `o` is borrowed mutably until then.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut o[r.clone()],
                            src,
                            stream.cu_stream(),
                        )
                    }
                    .map_err(|e| GpuError::cuda("cuMemcpyDtoHAsync", m, e))?;
                }
            }
            Ok(())
        })();
        let mut sync = Ok(());
        for s in &slots {
            if let Err(e) = s.0.synchronize() {
                sync = Err(GpuError::cuda("cuStreamSynchronize", 0, e));
            }
        }
        result.and(sync)
    }
}

enum DevWords<'a> {
    Read(&'a CudaSlice<u32>),
    Write(&'a mut CudaSlice<u32>),
}

enum DevOut<'a> {
    None,
    Bytes(&'a mut CudaSlice<u8>),
    Bits(&'a mut CudaSlice<u64>),
}
