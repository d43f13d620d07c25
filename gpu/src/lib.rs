//! `bloomlanes-gpu`: the CUDA backend of bloomlanes.
//!
//! Bulk insert and lookup of u64 keys, fixed-width records, variable-length strings and
//! caller-supplied hashes in a split-block Bloom filter kept in GPU memory. The filter's bytes are
//! identical to what `bloomlanes-core` builds from the same keys: the kernels are CUDA C generated
//! from core's constants ([`kernel_source`]) and compiled at run time with NVRTC.
//!
//! Inserts of device-resident batches choose their path by a cost model over the filter's size
//! and the batch ([`InsertKernel::Auto`], [`GpuImage::insert_plan`]): directly with one bulk
//! reduction per key while the filter fits in L2, else grouped by filter region first so that
//! the read-modify-writes of the filter hit L2 or run in address order, in one or two radix
//! passes of at most 256 partitions each ([`InsertKernel::Radix`]; every path by name in
//! [`InsertKernel::PATHS`]). Lookups through [`GpuImage::lookup_device_async`] are partitioned
//! the same way when it pays ([`LookupKernel::Auto`], [`LookupAuto`]) and write bytes, a bitmap
//! or the list of maybe-present positions ([`LookupOutput`]); the older `contains_*` calls stay
//! direct.
//!
//! The filter kinds of `bloomlanes_core` have GPU types with the same bits. The cell-based ones
//! are instances of one [`GpuCellFilter`] (core's cell algebra: one CUDA template per update
//! shape, instantiated per cell operation): [`GpuCountingFilter`] (inserts, deletes with the
//! core's key-by-key semantics, counts) and [`GpuSpatialFilter`] (inserts with a class per batch
//! or per key, class lookups). [`GpuWindowFilter`] keeps its generations in a static image and
//! reuses the static paths (inserts that rotate where the core does, lookups over all
//! generations). Every filter type dereferences to its [`GpuImage`], the bits its static lookups
//! read, so every lookup path serves every kind.
//!
//! CUDA is loaded at run time (`cudarc` with dynamic loading): this crate builds and links on
//! machines without CUDA, and every entry point returns [`GpuError::NoDriver`] there instead of
//! panicking. NVRTC (`libnvrtc.so.13`) is found on the library search path or through the
//! [`NVRTC_ENV`] variable (a file or folder, e.g. the `nvidia/cu13/lib` folder of the
//! `nvidia-cuda-nvrtc` wheel).
//!
//! # Rooms
//! - `kernel`: the CUDA source (`src/cuda/*.cu`, included at compile time) of each
//!   [`KernelModule`] and the prelude of constants generated from core; `entry`: the table of
//!   entry points, their modules and the cell operations (the cell entry points are generated
//!   from it); `compile`: NVRTC; `module`: the loaded kernels, each module compiled on first use.
//! - `launch`: the one launcher of the key kernels, for every (operation × key form × geometry);
//!   `cells`: the one launcher of the cell kernels (update, slices, reduce), `cells/slices.rs`
//!   their shared-memory slice shape.
//! - `buffer`, `pinned`, `stream`: device memory, page-locked host memory, streams and timers.
//! - `device_keys`: keys in device memory and the checks that run before they are used.
//! - `partition`: grouping by filter region (its scratch; `partition/passes.rs`: the passes'
//!   launches); `insert_path`: the insert paths and the cost model; `radix`: the radix-grouped
//!   inserts. `lookup`: lookups into three outputs, direct or partitioned. `hashed`: keys as the
//!   hash-taking kernels see them.
//! - `pipeline`: the host-memory pipeline; `stage`: host chunks one at a time (for the kinds).
//! - `image`: [`GpuImage`], the static image and its lookups; `image_insert`: its inserts;
//!   `filter`: [`GpuFilter`] on it.
//! - `cell_filter`: [`GpuCellFilter`]; `counting`, `counting_delete`: [`GpuCountingFilter`] and
//!   its delete semantics; `spatial`: [`GpuSpatialFilter`]; `window`, `window_plan`:
//!   [`GpuWindowFilter`] and where its batches rotate.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod borrowed;
mod buffer;
mod cell_filter;
mod cells;
mod compile;
mod counting;
mod counting_delete;
mod device_keys;
mod entry;
mod error;
mod filter;
mod hashed;
mod image;
mod image_insert;
mod insert_path;
mod kernel;
mod launch;
mod loader;
mod lookup;
mod module;
mod partition;
mod pinned;
mod pipeline;
mod radix;
mod retrieval;
mod spatial;
mod stage;
mod stream;
mod window;
mod window_plan;

pub use borrowed::BorrowedBuffer;
pub use buffer::DeviceBuffer;
pub use cell_filter::GpuCellFilter;
pub use cells::CellAnswer;
pub use compile::{
    compile, compile_cached, compile_cached_in, nvrtc_version, supported_archs, target_for,
    Compiled, Target, KERNEL_CACHE_ENV,
};
pub use counting::GpuCountingFilter;
pub use counting_delete::DeleteReport;
pub use device_keys::DeviceKeys;
pub use error::GpuError;
pub use filter::GpuFilter;
pub use image::GpuImage;
pub use insert_path::{InsertKernel, InsertPlan};
pub use kernel::{kernel_entry_points, kernel_source, KernelModule, KEYS_PER_THREAD, THREADS};
pub use loader::{driver_present, preload_nvrtc, require_nvrtc, NVRTC_ENV};
pub use lookup::{LookupAuto, LookupKernel, LookupOutput, LookupPath};
pub use pinned::PinnedBuffer;
pub use retrieval::GpuRetrieval;
pub use spatial::GpuSpatialFilter;
pub use stream::{GpuStream, Timer};
pub use window::GpuWindowFilter;

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaContext;

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Total device memory in bytes.
    pub memory_bytes: u64,
    /// Compute capability `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (u32, u32),
}

static CONTEXT: Mutex<Option<Arc<CudaContext>>> = Mutex::new(None);

/// The primary context of device 0, created once.
pub(crate) fn context() -> Result<Arc<CudaContext>, GpuError> {
    loader::require_driver()?;
    let mut g = CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = g.as_ref() {
        return Ok(c.clone());
    }
    let count = CudaContext::device_count()
        .map_err(|e| GpuError::NoDevice(format!("cuInit/cuDeviceGetCount failed: {e}")))?;
    if count < 1 {
        return Err(GpuError::NoDevice(
            "the CUDA driver reports no device".into(),
        ));
    }
    let ctx = CudaContext::new(0)
        .map_err(|e| GpuError::NoDevice(format!("could not open device 0: {e}")))?;
    *g = Some(ctx.clone());
    Ok(ctx)
}

/// Waits until all work queued on the device by anyone in this process (CuPy, PyTorch, this
/// crate) is complete (`cuCtxSynchronize`): what a caller does before borrowing memory another
/// library just wrote (see [`BorrowedBuffer`]).
pub fn synchronize_device() -> Result<(), GpuError> {
    context()?
        .synchronize()
        .map_err(|e| GpuError::cuda("cuCtxSynchronize", 0, e))
}

/// Looks for a CUDA device. Returns [`GpuError::NoDriver`] when `libcuda` is missing and
/// [`GpuError::NoDevice`] when the driver has no device; never panics.
pub fn probe() -> Result<DeviceInfo, GpuError> {
    let ctx = context()?;
    let err = |op: &'static str| move |e| GpuError::cuda(op, 0, e);
    let name = ctx.name().map_err(err("cuDeviceGetName"))?;
    let memory_bytes = ctx.total_mem().map_err(err("cuDeviceTotalMem"))? as u64;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(err("cuDeviceGetAttribute"))?;
    Ok(DeviceInfo {
        name,
        memory_bytes,
        compute_capability: (major as u32, minor as u32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_stay_send_and_sync() {
        // The host crate moves filters and buffers across threads; the split must keep that.
        send_sync::<GpuFilter>();
        send_sync::<GpuCountingFilter>();
        send_sync::<GpuWindowFilter>();
        send_sync::<GpuSpatialFilter>();
        send_sync::<GpuCellFilter>();
        send_sync::<DeviceBuffer<u64>>();
        send_sync::<PinnedBuffer<u64>>();
        send_sync::<GpuStream>();
        send_sync::<GpuError>();
    }
}
