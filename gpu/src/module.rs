//! The compiled kernels of each layout, loaded once per process and module, and the launch grid.
//!
//! A layout's kernels are compiled in four modules ([`KernelModule`]): a layout's static module
//! is loaded when its first filter is made, the window, cell and retrieval modules when the first
//! filter (or table) of a kind that needs them is made (or, failing that, on the first launch of
//! one of their kernels). Each is compiled once per process (or read from the kernel cache, see
//! [`crate::KERNEL_CACHE_ENV`]).

use std::sync::{Arc, Mutex, OnceLock};

use bloomlanes_core::Layout;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig};
use cudarc::nvrtc::Ptx;

use crate::kernel::{Kernel, KernelModule, THREADS};
use crate::{compile, GpuError, Target};

/// One loaded module.
struct Loaded {
    /// Keeps the module loaded while its functions are in use.
    _module: Arc<CudaModule>,
    /// One slot per [`Kernel`], indexed by its discriminant: the module's own kernels are set.
    functions: Vec<Option<CudaFunction>>,
}

/// The kernels of one layout: its modules, each loaded on first use.
pub(crate) struct Kernels {
    ctx: Arc<CudaContext>,
    layout: Layout,
    /// What NVRTC compiles for (the device's architecture).
    target: Target,
    /// One slot per [`KernelModule`], by its index.
    modules: [OnceLock<Loaded>; KernelModule::ALL.len()],
    /// Held while a module is compiled, so that it is compiled once.
    loading: Mutex<()>,
}

impl Kernels {
    /// The loaded entry point of `kernel`, its module loaded first if it is not yet.
    pub(crate) fn get(&self, kernel: Kernel) -> Result<&CudaFunction, GpuError> {
        let loaded = self.load(kernel.module())?;
        Ok(loaded.functions[kernel as usize]
            .as_ref()
            .expect("a module loads every kernel of its own"))
    }

    /// Loads `module` (compiled, or read from the kernel cache) unless it is loaded already.
    pub(crate) fn require(&self, module: KernelModule) -> Result<(), GpuError> {
        self.load(module).map(|_| ())
    }

    fn load(&self, module: KernelModule) -> Result<&Loaded, GpuError> {
        let slot = &self.modules[module.index()];
        if let Some(m) = slot.get() {
            return Ok(m);
        }
        let _one = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.get() {
            return Ok(m);
        }
        let compiled = compile::compile_cached(self.layout, module, self.target)?;
        let ptx = match self.target {
            Target::Cubin(_) => Ptx::from_binary(compiled.image),
            Target::Ptx(_) => Ptx::from_src(
                String::from_utf8_lossy(&compiled.image)
                    .trim_end_matches('\0')
                    .to_string(),
            ),
        };
        let loaded_module = self
            .ctx
            .load_module(ptx)
            .map_err(|e| GpuError::cuda("cuModuleLoadData", 0, e))?;
        let mut functions: Vec<Option<CudaFunction>> = Kernel::ALL.iter().map(|_| None).collect();
        for k in module.kernels() {
            let f = loaded_module
                .load_function(k.name())
                .map_err(|e| GpuError::cuda("cuModuleGetFunction", 0, e))?;
            functions[k as usize] = Some(f);
        }
        let _ = slot.set(Loaded {
            _module: loaded_module,
            functions,
        });
        Ok(slot.get().expect("set above, under the lock"))
    }
}

/// The kernels of each layout used so far (all in the one device-0 context of
/// [`crate::context`]).
static LAYOUTS: Mutex<Vec<(Layout, Arc<Kernels>)>> = Mutex::new(Vec::new());

/// The kernels of `layout`, with its static module compiled with NVRTC for the device and loaded
/// on first use.
pub(crate) fn kernels(ctx: &Arc<CudaContext>, layout: Layout) -> Result<Arc<Kernels>, GpuError> {
    kernels_with(ctx, layout, KernelModule::Static)
}

/// The kernels of `layout`, with `module` loaded (the others load when first launched).
fn kernels_with(
    ctx: &Arc<CudaContext>,
    layout: Layout,
    module: KernelModule,
) -> Result<Arc<Kernels>, GpuError> {
    let k = {
        let mut cache = LAYOUTS.lock().unwrap_or_else(|e| e.into_inner());
        match cache.iter().find(|(l, _)| *l == layout) {
            Some((_, k)) => k.clone(),
            None => {
                let (major, minor) = ctx
                    .compute_capability()
                    .map_err(|e| GpuError::cuda("cuDeviceGetAttribute", 0, e))?;
                let k = Arc::new(Kernels {
                    ctx: ctx.clone(),
                    layout,
                    target: compile::target_for((major as u32, minor as u32))?,
                    modules: std::array::from_fn(|_| OnceLock::new()),
                    loading: Mutex::new(()),
                });
                cache.push((layout, k.clone()));
                k
            }
        }
    };
    k.require(module)?;
    Ok(k)
}

/// The kernels that do not depend on the layout (set operations, checks, benchmarks): any
/// layout's static module has them, so this is the one most likely loaded already.
pub(crate) fn layout_free_kernels(ctx: &Arc<CudaContext>) -> Result<Arc<Kernels>, GpuError> {
    layout_free_module(ctx, KernelModule::Static)
}

/// The kernels of the first layout used so far (8x32 if none), with `module` loaded: for the
/// layout-free kinds (retrieval tables), which need no static module of their own.
pub(crate) fn layout_free_module(
    ctx: &Arc<CudaContext>,
    module: KernelModule,
) -> Result<Arc<Kernels>, GpuError> {
    let first = {
        let cache = LAYOUTS.lock().unwrap_or_else(|e| e.into_inner());
        cache.first().map(|(l, _)| *l)
    };
    kernels_with(ctx, first.unwrap_or(Layout::L8x32), module)
}

/// Raises `f`'s dynamic shared memory limit to `limit_bytes` (the same for every launch of a
/// device's kernel, so that filters used from several threads never lower it under one another's
/// launch) and asks for the largest shared-memory carve-out.
pub(crate) fn dynamic_smem(f: &CudaFunction, limit_bytes: u64) -> Result<(), GpuError> {
    use cudarc::driver::sys::CUfunction_attribute as A;
    let limit = i32::try_from(limit_bytes).unwrap_or(i32::MAX);
    let err = |e| GpuError::cuda("cuFuncSetAttribute", limit_bytes, e);
    f.set_attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, limit)
        .map_err(err)?;
    f.set_attribute(A::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
        .map_err(err)
}

/// Largest grid the driver accepts in x.
const MAX_GRID_X: u64 = (1 << 31) - 1;

/// A one-dimensional launch of [`THREADS`]-thread CTAs, each handling `per_cta` items, for `n`
/// items (at least one CTA). Refuses a grid larger than the device accepts instead of
/// truncating it.
pub(crate) fn grid(n: u64, per_cta: u64) -> Result<LaunchConfig, GpuError> {
    let ctas = n.div_ceil(per_cta.max(1)).max(1);
    if ctas > MAX_GRID_X {
        return Err(GpuError::TooManyElements {
            what: "kernel launch",
            len: n,
            elem_bytes: 0,
        });
    }
    Ok(LaunchConfig {
        grid_dim: (ctas as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_every_item_and_refuses_oversized_launches() {
        assert_eq!(grid(0, 256).unwrap().grid_dim, (1, 1, 1));
        assert_eq!(grid(1, 256).unwrap().grid_dim, (1, 1, 1));
        assert_eq!(grid(256, 256).unwrap().grid_dim, (1, 1, 1));
        assert_eq!(grid(257, 256).unwrap().grid_dim, (2, 1, 1));
        assert_eq!(grid(257, 1024).unwrap().block_dim, (THREADS, 1, 1));
        assert_eq!(
            grid(MAX_GRID_X * 1024, 1024).unwrap().grid_dim.0 as u64,
            MAX_GRID_X
        );
        assert!(matches!(
            grid(MAX_GRID_X * 1024 + 1, 1024),
            Err(GpuError::TooManyElements { .. })
        ));
        assert!(grid(u64::MAX, 1).is_err());
    }
}
