//! [`GpuWindowFilter`]: a sliding-window filter in GPU memory, bit-identical to
//! [`bloomlanes_core::WindowFilter`] (storage words and rotation state).
//!
//! `g + 1` generations of the split-block image, interleaved by block (block `b` of generation
//! `j` is block `b × (g + 1) + j`). Inserts set the keys' bits in the current generation; lookups
//! find a key whose bits are all set in one generation, reading the `g + 1` copies of its block
//! from consecutive memory; a rotation clears one generation in every block. The host keeps the
//! rotation state and splits each batch where the core would rotate ([`crate::window_plan`]):
//! a window counted in keys rotates before an insert into a current generation holding `span`
//! keys, exactly as the core does key by key; a window counted in nanoseconds takes batches whose
//! keys share one time ([`GpuWindowFilter::insert_at`]).
//!
//! # Memory traffic per key
//!
//! Insert: the key (8 bytes) and a read-modify-write of one block of the current generation (one
//! 32-byte sector for 8x32; random). Lookup: the key, the answer (1 byte or 1 bit) and the
//! `g + 1` blocks of the key's row, read from consecutive memory until one generation holds the
//! key (for 8x32 with `g + 1 = 4`, one 128-byte line). A rotation writes `1 / (g + 1)` of the
//! array once per `span` keys.

use std::sync::Arc;

use bloomlanes_core::window::window_words;
use bloomlanes_core::{FilterKind, HashId, Keys, Params, WindowFilter, WindowState, WindowUnit};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, PushKernelArg};

use crate::buffer::{alloc_zeros, check_free};
use crate::hashed::{HashScratch, Hashed};
use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::module::{grid, kernels, Kernels};
use crate::pipeline::{plan as chunks, DEFAULT_CHUNK_KEYS};
use crate::stage::Stager;
use crate::window_plan::{plan_keys, plan_rotate, plan_time, WindowPlan};
use crate::{context, DeviceBuffer, DeviceKeys, GpuError, GpuStream};

/// A sliding-window filter in GPU memory.
pub struct GpuWindowFilter {
    stream: GpuStream,
    /// Where device string offsets are checked before a launch uses them.
    check_stream: GpuStream,
    k: Arc<Kernels>,
    /// The interleaved generations: `window_words(params)` words.
    words: CudaSlice<u32>,
    params: Params,
    /// Generations in storage, `g + 1`.
    gens: u32,
    unit: WindowUnit,
    span: u64,
    state: WindowState,
    keys: Option<u64>,
    chunk_keys: usize,
    hashes: HashScratch,
    stager: Stager,
}

impl std::fmt::Debug for GpuWindowFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuWindowFilter")
            .field("params", &self.params)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// What the window kernels read and write.
struct WindowDev<'a> {
    kernels: &'a Kernels,
    params: &'a Params,
    gens: u32,
}

impl WindowDev<'_> {
    /// Checks that `words` holds every generation of every block.
    fn check(&self, words: usize) -> Result<(), GpuError> {
        if (words as u64) < u64::from(self.gens) * self.params.u32_len() {
            return Err(GpuError::Cuda {
                op: "window launch",
                bytes: 0,
                message: format!(
                    "{words} words for {} generations of {} words",
                    self.gens,
                    self.params.u32_len()
                ),
            });
        }
        Ok(())
    }

    /// Queues the insert of `keys` into generation `gen`.
    fn insert(
        &self,
        words: &mut CudaSlice<u32>,
        gen: u32,
        keys: &Hashed<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        self.check(words.len())?;
        if gen >= self.gens {
            return Err(GpuError::Unsupported("a generation past the window's"));
        }
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let (blocks, seed) = (u64::from(self.params.blocks), self.params.seed);
        let mut l = stream.launch_builder(self.kernels.get(Kernel::WindowInsert));
        l.arg(words)
            .arg(&blocks)
            .arg(&self.gens)
            .arg(&gen)
            .arg(&keys.keys)
            .arg(&n)
            .arg(&seed)
            .arg(&keys.mode);
        // SAFETY: `bl_window_insert(u32* words, u64 blocks, u32 gens, u32 gen, const u64* keys,
        // u64 n, u64 seed, int mode)` takes these arguments in this order. It reads `keys[i]`,
        // `i < n` = the view's length, and ORs into the `block_u32s` words of storage block
        // `b × gens + gen` with `b = ((h >> 32) × blocks) >> 32 < blocks` and `gen < gens`
        // (checked), i.e. below `blocks × gens` blocks, which `words` holds (checked).
        unsafe { l.launch(grid(n, u64::from(THREADS * KEYS_PER_THREAD))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_window_insert)", n, e))?;
        Ok(())
    }

    /// Queues the clearing of generation `gen` in every block.
    fn clear(
        &self,
        words: &mut CudaSlice<u32>,
        gen: u32,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        self.check(words.len())?;
        if gen >= self.gens {
            return Err(GpuError::Unsupported("a generation past the window's"));
        }
        let blocks = u64::from(self.params.blocks);
        let n = self.params.u32_len();
        let mut l = stream.launch_builder(self.kernels.get(Kernel::WindowClear));
        l.arg(words).arg(&blocks).arg(&self.gens).arg(&gen);
        // SAFETY: `bl_window_clear(u32* words, u64 blocks, u32 gens, u32 gen)` takes these
        // arguments in this order. Thread `i < blocks × block_u32s` (the grid covers `n` =
        // `params.u32_len()` threads, and the kernel tests the bound) writes word
        // `(b × gens + gen) × block_u32s + w` with `b < blocks`, `w < block_u32s` and
        // `gen < gens` (checked): below `blocks × gens × block_u32s`, which `words` holds
        // (checked).
        unsafe { l.launch(grid(n, u64::from(THREADS))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_window_clear)", n * 4, e))?;
        Ok(())
    }

    /// Queues the lookup of `keys` into `out` (bytes or a bitmap).
    fn lookup(
        &self,
        words: &CudaSlice<u32>,
        keys: &Hashed<'_>,
        out: WindowOut<'_, '_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        self.check(words.len())?;
        let n = keys.len() as u64;
        let (blocks, seed) = (u64::from(self.params.blocks), self.params.seed);
        let (kernel, needed, found) = match &out {
            WindowOut::Bytes(o) => (Kernel::WindowContains, keys.len(), o.len()),
            WindowOut::Bits(o) => (Kernel::WindowBitmap, keys.len().div_ceil(64), o.len()),
        };
        if found < needed {
            return Err(GpuError::OutputTooShort { needed, found });
        }
        if n == 0 {
            return Ok(());
        }
        let mut l = stream.launch_builder(self.kernels.get(kernel));
        l.arg(words)
            .arg(&blocks)
            .arg(&self.gens)
            .arg(&keys.keys)
            .arg(&n)
            .arg(&seed)
            .arg(&keys.mode);
        match out {
            WindowOut::Bytes(o) => l.arg(o),
            WindowOut::Bits(o) => l.arg(o),
        };
        // SAFETY: `bl_window_contains` / `bl_window_bitmap(const u32* words, u64 blocks, u32
        // gens, const u64* keys, u64 n, u64 seed, int mode, u8* out | u32* bits)` take these
        // arguments in this order (the u64 bitmap as u32 words: 4-aligned, any bits valid). They
        // read `keys[i]`, `i < n`, and the `gens` consecutive storage blocks `b × gens + j`,
        // `b < blocks`, `j < gens`, inside `words` (checked). Bytes: `out[i]` for `i < n ≤
        // out.len()`; bitmap: u32 words below `2 × n.div_ceil(64) ≤ 2 × out.len()` (checked).
        unsafe { l.launch(grid(n, u64::from(THREADS * KEYS_PER_THREAD))?) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(window lookup)", n, e))?;
        Ok(())
    }
}

/// A window lookup's output.
enum WindowOut<'o, 'v> {
    Bytes(&'o mut CudaViewMut<'v, u8>),
    Bits(&'o mut CudaViewMut<'v, u64>),
}

impl GpuWindowFilter {
    /// An empty window filter with these parameters (their kind must be [`FilterKind::Window`]
    /// with at least one generation and a positive span) on device 0.
    pub fn new(params: Params) -> Result<GpuWindowFilter, GpuError> {
        let FilterKind::Window {
            generations,
            unit,
            span,
        } = params.kind
        else {
            return Err(GpuError::WrongKind {
                expected: "window",
                found: params.kind.name(),
            });
        };
        if generations == 0 || span == 0 {
            return Err(GpuError::Unsupported(
                "a window needs at least one generation and a span of at least 1",
            ));
        }
        let mut params = params;
        params.blocks = params.blocks.max(1);
        let len = window_words(&params);
        let ctx = context()?;
        check_free(&ctx, "window generations", len * 4)?;
        let len = usize::try_from(len).map_err(|_| GpuError::TooManyElements {
            what: "window generations",
            len,
            elem_bytes: 4,
        })?;
        let k = kernels(&ctx, params.layout)?;
        let stream = GpuStream::new()?;
        let words = alloc_zeros::<u32>(stream.raw(), "window generations", len)?;
        stream.synchronize()?;
        Ok(GpuWindowFilter {
            check_stream: GpuStream::new()?,
            stream,
            k,
            words,
            params,
            gens: u32::from(generations) + 1,
            unit,
            span,
            state: WindowState::default(),
            keys: Some(0),
            chunk_keys: DEFAULT_CHUNK_KEYS,
            hashes: HashScratch::default(),
            stager: Stager::default(),
        })
    }

    /// A device copy of a host window filter (words, rotation state and key count).
    pub fn upload(filter: &WindowFilter) -> Result<GpuWindowFilter, GpuError> {
        let mut g = GpuWindowFilter::new(*filter.params())?;
        let bytes = g.byte_len();
        g.stream
            .raw()
            .memcpy_htod(filter.words(), &mut g.words)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
        g.stream.synchronize()?;
        g.state = filter.state();
        g.keys = filter.key_count();
        Ok(g)
    }

    /// The filter copied back to the host: equal to the core's filter after the same inserts.
    pub fn download(&self) -> Result<WindowFilter, GpuError> {
        let mut words = vec![0u32; self.words.len()];
        self.stream
            .raw()
            .memcpy_dtoh(&self.words, &mut words[..])
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.byte_len(), e))?;
        self.stream.synchronize()?;
        WindowFilter::from_parts(self.params, &words, self.state, self.keys).map_err(|e| {
            GpuError::Cuda {
                op: "download",
                bytes: self.byte_len(),
                message: e.to_string(),
            }
        })
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// The rotation state (current generation and its fill).
    pub fn state(&self) -> WindowState {
        self.state
    }
    /// Keys inserted since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Generations kept in storage (`g + 1`).
    pub fn generations(&self) -> u32 {
        self.gens
    }
    /// Bytes of all generations.
    pub fn byte_len(&self) -> u64 {
        u64::from(self.gens) * self.params.byte_len()
    }
    /// The filter's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }
    /// Keys per chunk for host-memory batches (rounded up to a multiple of 64).
    pub fn set_chunk_keys(&mut self, keys: usize) {
        self.chunk_keys = keys.max(64).next_multiple_of(64);
    }
    /// Frees the scratch buffers (allocated again when needed).
    pub fn release_scratch(&mut self) {
        self.hashes.release();
        self.stager.release();
    }

    fn dev(&self) -> WindowDev<'_> {
        WindowDev {
            kernels: &self.k,
            params: &self.params,
            gens: self.gens,
        }
    }

    fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params.hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this filter holds caller-supplied hashes; pass Keys::Hashes",
            ));
        }
        Ok(())
    }

    /// Empties every generation (state and key count start over).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.stream
            .raw()
            .memset_zeros(&mut self.words)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async", self.byte_len(), e))?;
        self.state = WindowState::default();
        self.keys = Some(0);
        self.stream.synchronize()
    }

    /// Clears the oldest generation and makes it the current one, and waits.
    pub fn rotate(&mut self) -> Result<(), GpuError> {
        let plan = plan_rotate(self.state, self.gens);
        let s = self.stream.raw().clone();
        for &g in &plan.clears {
            let dev = WindowDev {
                kernels: &self.k,
                params: &self.params,
                gens: self.gens,
            };
            dev.clear(&mut self.words, g, &s)?;
        }
        self.state = plan.end;
        self.stream.synchronize()
    }

    /// The plan of a batch of `n` keys, at `time` for a window counted in nanoseconds.
    fn plan_for(&self, n: usize, time: Option<u64>) -> Result<WindowPlan, GpuError> {
        match (self.unit, time) {
            (WindowUnit::Keys, _) => Ok(plan_keys(self.state, self.gens, self.span, n)),
            (WindowUnit::Nanos, Some(t)) => Ok(plan_time(self.state, self.gens, self.span, n, t)),
            (WindowUnit::Nanos, None) => Err(GpuError::Unsupported(
                "a window counted in nanoseconds takes insert_at (the keys' time)",
            )),
        }
    }

    /// Queues `plan`'s clears on `stream` (its inserts are the caller's).
    fn queue_clears(
        &mut self,
        plan: &WindowPlan,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        for &g in &plan.clears {
            let dev = WindowDev {
                kernels: &self.k,
                params: &self.params,
                gens: self.gens,
            };
            dev.clear(&mut self.words, g, stream)?;
        }
        Ok(())
    }

    /// Inserts device-resident keys (at `time`, for a window counted in nanoseconds), queued on
    /// `stream`.
    fn insert_device_impl(
        &mut self,
        keys: DeviceKeys<'_>,
        time: Option<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let n = keys.len();
        let plan = self.plan_for(n, time)?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let s = stream.raw();
        self.queue_clears(&plan, s)?;
        let hashed = self.hashes.hashed(&self.k, self.params.seed, s, args)?;
        let dev = WindowDev {
            kernels: &self.k,
            params: &self.params,
            gens: self.gens,
        };
        for (r, g) in &plan.inserts {
            dev.insert(&mut self.words, *g, &hashed.slice(r.clone()), s)?;
        }
        self.state = plan.end;
        self.keys = self.keys.map(|k| k.saturating_add(n as u64));
        Ok(())
    }

    /// Inserts device-resident keys into a window counted in keys, rotating where the core
    /// would; queued on `stream`.
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        self.insert_device_impl(keys, None, stream)
    }

    /// Inserts device-resident keys into a window counted in keys, and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.stream.clone();
        self.insert_device_impl(keys, None, &s)?;
        s.synchronize()
    }

    /// Inserts device-resident keys all seen at `nanos` (a window counted in nanoseconds rotates
    /// first as the core's `insert_at` does for the first of them; a window counted in keys
    /// ignores the time), and waits.
    pub fn insert_device_at(&mut self, keys: DeviceKeys<'_>, nanos: u64) -> Result<(), GpuError> {
        let s = self.stream.clone();
        self.insert_device_impl(keys, Some(nanos), &s)?;
        s.synchronize()
    }

    /// Inserts keys from host memory (chunk by chunk) and waits.
    fn insert_host(&mut self, keys: Keys<'_>, time: Option<u64>) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let plan = self.plan_for(keys.len(), time)?;
        let s = self.stream.raw().clone();
        self.queue_clears(&plan, &s)?;
        for (r, g) in &plan.inserts {
            let part = keys.slice(r.clone());
            for c in chunks(&part, self.chunk_keys) {
                let args = self.stager.stage(&s, &part, c)?;
                let hashed = self.hashes.hashed(&self.k, self.params.seed, &s, args)?;
                let dev = WindowDev {
                    kernels: &self.k,
                    params: &self.params,
                    gens: self.gens,
                };
                dev.insert(&mut self.words, *g, &hashed, &s)?;
            }
        }
        self.state = plan.end;
        self.keys = self.keys.map(|k| k.saturating_add(keys.len() as u64));
        self.stream.synchronize()
    }

    /// Inserts keys from host memory into a window counted in keys, rotating where the core
    /// would, and waits.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.insert_host(keys, None)
    }

    /// Inserts keys from host memory all seen at `nanos` (see
    /// [`GpuWindowFilter::insert_device_at`]), and waits.
    pub fn insert_at(&mut self, keys: Keys<'_>, nanos: u64) -> Result<(), GpuError> {
        self.insert_host(keys, Some(nanos))
    }

    /// Looks up device-resident keys into `out` (1 = in one of the generations), queued on
    /// `stream`. Records and strings are hashed into a buffer of this call first.
    pub fn contains_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let mut scratch = HashScratch::default();
        let hashed = scratch.hashed(&self.k, self.params.seed, stream.raw(), args)?;
        let mut v = out.view_mut();
        self.dev()
            .lookup(&self.words, &hashed, WindowOut::Bytes(&mut v), stream.raw())
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

    /// Looks up device-resident keys into a packed bitmap (bit `i % 64` of word `i / 64`; bits
    /// past the last key in its word are zero), queued on `stream`.
    pub fn contains_bitmap_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let mut scratch = HashScratch::default();
        let hashed = scratch.hashed(&self.k, self.params.seed, stream.raw(), args)?;
        let mut v = out.view_mut();
        self.dev()
            .lookup(&self.words, &hashed, WindowOut::Bits(&mut v), stream.raw())
    }

    /// Looks up keys from host memory (chunk by chunk): `out[i]` = 1 if key `i` may be in the
    /// window, else 0.
    pub fn contains(&mut self, keys: Keys<'_>, out: &mut [u8]) -> Result<(), GpuError> {
        self.host_lookup(keys, HostOut::Bytes(out))
    }

    /// Looks up keys from host memory into a packed bitmap: bit `i % 64` of `out[i / 64]`.
    pub fn contains_bitmap(&mut self, keys: Keys<'_>, out: &mut [u64]) -> Result<(), GpuError> {
        self.host_lookup(keys, HostOut::Bits(out))
    }

    fn host_lookup(&mut self, keys: Keys<'_>, mut out: HostOut<'_>) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let n = keys.len();
        let (needed, found) = match &out {
            HostOut::Bytes(o) => (n, o.len()),
            HostOut::Bits(o) => (n.div_ceil(64), o.len()),
        };
        if found < needed {
            return Err(GpuError::OutputTooShort { needed, found });
        }
        let s = self.stream.raw().clone();
        // Chunks are multiples of 64 keys but for the last, so bitmap words never straddle two.
        let chunk_max = self.chunk_keys;
        let mut dev_bytes: Option<CudaSlice<u8>> = None;
        let mut dev_bits: Option<CudaSlice<u64>> = None;
        for c in chunks(&keys, chunk_max) {
            let args = self.stager.stage(&s, &keys, c.clone())?;
            let hashed = self.hashes.hashed(&self.k, self.params.seed, &s, args)?;
            let dev = WindowDev {
                kernels: &self.k,
                params: &self.params,
                gens: self.gens,
            };
            let err = |e| GpuError::cuda("cuMemcpyDtoH(window answers)", c.len() as u64, e);
            match &mut out {
                HostOut::Bytes(o) => {
                    if dev_bytes.is_none() {
                        dev_bytes = Some(alloc_zeros::<u8>(&s, "window answers", chunk_max)?);
                    }
                    let buf = dev_bytes.as_mut().expect("allocated above");
                    let mut v = buf.slice_mut(..c.len());
                    dev.lookup(&self.words, &hashed, WindowOut::Bytes(&mut v), &s)?;
                    s.memcpy_dtoh(&buf.slice(..c.len()), &mut o[c.clone()])
                        .map_err(err)?;
                }
                HostOut::Bits(o) => {
                    let w = c.len().div_ceil(64);
                    if dev_bits.is_none() {
                        dev_bits = Some(alloc_zeros::<u64>(&s, "window answers", chunk_max / 64)?);
                    }
                    let buf = dev_bits.as_mut().expect("allocated above");
                    let mut v = buf.slice_mut(..w);
                    dev.lookup(&self.words, &hashed, WindowOut::Bits(&mut v), &s)?;
                    let at = c.start / 64;
                    s.memcpy_dtoh(&buf.slice(..w), &mut o[at..at + w])
                        .map_err(err)?;
                }
            }
            // The staging and answer buffers are reused by the next chunk.
            s.synchronize()
                .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        }
        Ok(())
    }
}

/// A host lookup's output.
enum HostOut<'o> {
    Bytes(&'o mut [u8]),
    Bits(&'o mut [u64]),
}
