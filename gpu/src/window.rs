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
//! The generations reuse the static filter's paths: the image is a [`GpuImage`] of `g + 1`
//! generations (to which the window dereferences for every lookup: device keys into bytes, a
//! bitmap or positions, directly or partitioned; host keys through the pipeline), and each
//! segment of a batch is a static insert into one generation (direct, bulk reduce or
//! partitioned; every key form), through the key kernels' window twins, which differ from the
//! static ones only in where a block lies (`BlGens` in `cuda/block.cu`).
//!
//! # Memory traffic per key
//!
//! Insert: the key (8 bytes) and a read-modify-write of one block of the current generation (one
//! 32-byte sector for 8x32; random). Lookup: the key, the answer (1 byte or 1 bit) and the
//! `g + 1` blocks of the key's row, read from consecutive memory until one generation holds the
//! key (for 8x32 with `g + 1 = 4`, one 128-byte line). A rotation writes `1 / (g + 1)` of the
//! array once per `span` keys.

use std::sync::Arc;

use bloomlanes_core::{Keys, Params, WindowFilter, WindowKind, WindowState, WindowUnit};
use cudarc::driver::{CudaStream, PushKernelArg};

use crate::image::filter_wrapper;
use crate::image::GpuImage;
use crate::kernel::{Kernel, THREADS};
use crate::module::grid;
use crate::window_plan::{plan_keys, plan_rotate, plan_time, WindowPlan};
use crate::{DeviceKeys, GpuError, GpuStream, KernelModule};

/// A sliding-window filter in GPU memory. Lookups, streams and insert settings are its
/// [`GpuImage`]'s (it dereferences to it).
pub struct GpuWindowFilter {
    /// The interleaved generations.
    image: GpuImage,
    unit: WindowUnit,
    span: u64,
    state: WindowState,
    keys: Option<u64>,
}

filter_wrapper!(GpuWindowFilter, image: GpuImage, [state, keys]);

impl GpuWindowFilter {
    /// An empty window filter with these parameters (their kind must be a window with at least
    /// one generation and a positive span: [`WindowKind::is_usable`]) on device 0.
    pub fn new(params: Params) -> Result<GpuWindowFilter, GpuError> {
        let Some(window) = WindowKind::of(params.kind) else {
            return Err(GpuError::WrongKind {
                expected: "window",
                found: params.kind.name(),
            });
        };
        if !window.is_usable() {
            return Err(GpuError::Unsupported(
                "a window needs at least one generation and a span of at least 1",
            ));
        }
        let mut params = params;
        params.blocks = params.blocks.max(1);
        let image = GpuImage::new(params, u32::from(window.generations) + 1, 0)?;
        // The window twins are compiled (or read from the cache) now, not on the first insert.
        image.k.require(KernelModule::Window)?;
        Ok(GpuWindowFilter {
            image,
            unit: window.unit,
            span: window.span,
            state: WindowState::default(),
            keys: Some(0),
        })
    }

    /// A device copy of a host window filter (words, rotation state and key count).
    pub fn upload(filter: &WindowFilter) -> Result<GpuWindowFilter, GpuError> {
        let mut g = GpuWindowFilter::new(*filter.params())?;
        g.image.upload_words(filter.words())?;
        g.state = filter.state();
        g.keys = filter.key_count();
        Ok(g)
    }

    /// The filter copied back to the host: equal to the core's filter after the same inserts.
    pub fn download(&self) -> Result<WindowFilter, GpuError> {
        let mut words = vec![0u32; self.image.words.len()];
        self.image.download_words(&mut words)?;
        WindowFilter::from_parts(self.image.params, &words, self.state, self.keys).map_err(|e| {
            GpuError::Cuda {
                op: "download",
                bytes: self.byte_len(),
                message: e.to_string(),
            }
        })
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
        self.image.gens
    }

    /// Empties every generation (state and key count start over).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.image.zero_words()?;
        self.state = WindowState::default();
        self.keys = Some(0);
        self.image.stream.synchronize()
    }

    /// Clears the oldest generation and makes it the current one, and waits.
    pub fn rotate(&mut self) -> Result<(), GpuError> {
        let plan = plan_rotate(self.state, self.image.gens);
        let s = self.image.stream.raw().clone();
        self.queue_clears(&plan, &s)?;
        self.state = plan.end;
        self.image.stream.synchronize()
    }

    /// The plan of a batch of `n` keys, at `time` for a window counted in nanoseconds.
    fn plan_for(&self, n: usize, time: Option<u64>) -> Result<WindowPlan, GpuError> {
        let gens = self.image.gens;
        match (self.unit, time) {
            (WindowUnit::Keys, _) => Ok(plan_keys(self.state, gens, self.span, n)),
            (WindowUnit::Nanos, Some(t)) => Ok(plan_time(self.state, gens, self.span, n, t)),
            (WindowUnit::Nanos, None) => Err(GpuError::Unsupported(
                "a window counted in nanoseconds takes insert_at (the keys' time)",
            )),
        }
    }

    /// Queues the clearing of `plan`'s generations on `stream`: one thread per word of a
    /// generation.
    fn queue_clears(
        &mut self,
        plan: &WindowPlan,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let image = &mut self.image;
        let (blocks, gens, n) = (
            u64::from(image.params.blocks),
            image.gens,
            image.params.u32_len(),
        );
        for &gen in &plan.clears {
            if gen >= gens || (image.words.len() as u64) < u64::from(gens) * n {
                return Err(GpuError::Unsupported("a generation past the window's"));
            }
            let mut l = stream.launch_builder(image.k.get(Kernel::WindowClear)?);
            l.arg(&mut image.words).arg(&blocks).arg(&gens).arg(&gen);
            // SAFETY: `bl_window_clear(u32* words, u64 blocks, u32 gens, u32 gen)` takes these
            // arguments in this order. Thread `i < blocks × block_u32s` (the grid covers `n` =
            // `params.u32_len()` threads, and the kernel tests the bound) writes word
            // `(b × gens + gen) × block_u32s + w` with `b < blocks`, `w < block_u32s` and
            // `gen < gens` (checked): below `blocks × gens × block_u32s`, which `words` holds
            // (checked).
            unsafe { l.launch(grid(n, u64::from(THREADS))?) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_window_clear)", n * 4, e))?;
        }
        Ok(())
    }

    /// Inserts device-resident keys (at `time`, for a window counted in nanoseconds), queued on
    /// `stream`: the plan's clears, then each surviving segment into its generation.
    fn insert_device_impl(
        &mut self,
        keys: DeviceKeys<'_>,
        time: Option<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        let plan = self.plan_for(n, time)?;
        let args = self.image.device_args(keys)?;
        let s = stream.raw();
        self.queue_clears(&plan, s)?;
        for (r, g) in &plan.inserts {
            self.image.insert_args(args.slice(r.clone()), *g, s)?;
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
        let s = self.image.stream.clone();
        self.insert_device_impl(keys, None, &s)?;
        s.synchronize()
    }

    /// Inserts device-resident keys all seen at `nanos` (a window counted in nanoseconds rotates
    /// first as the core's `insert_at` does for the first of them; a window counted in keys
    /// ignores the time), and waits.
    pub fn insert_device_at(&mut self, keys: DeviceKeys<'_>, nanos: u64) -> Result<(), GpuError> {
        let s = self.image.stream.clone();
        self.insert_device_impl(keys, Some(nanos), &s)?;
        s.synchronize()
    }

    /// Inserts keys from host memory (each segment through the static filter's pipeline) and
    /// waits.
    fn insert_host(&mut self, keys: Keys<'_>, time: Option<u64>) -> Result<(), GpuError> {
        self.image.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let plan = self.plan_for(keys.len(), time)?;
        let s = self.image.stream.raw().clone();
        // The pipeline's streams start after the clears queued on the filter's stream.
        self.queue_clears(&plan, &s)?;
        for (r, g) in &plan.inserts {
            self.image.insert_host(keys.slice(r.clone()), *g)?;
        }
        self.state = plan.end;
        self.keys = self.keys.map(|k| k.saturating_add(keys.len() as u64));
        self.image.stream.synchronize()
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
}
