//! The compiled kernels of each layout, loaded once per process, and the launch grid.

use std::sync::{Arc, Mutex};

use bloomlanes_core::Layout;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, LaunchConfig};
use cudarc::nvrtc::Ptx;

use crate::kernel::{Kernel, THREADS};
use crate::{compile, GpuError, Target};

/// The loaded kernels of one layout's module.
pub(crate) struct Kernels {
    /// Keeps the module loaded while its functions are in use.
    _module: Arc<CudaModule>,
    /// One function per [`Kernel`], indexed by its discriminant.
    functions: Vec<CudaFunction>,
}

impl Kernels {
    /// The loaded entry point of `kernel`.
    pub(crate) fn get(&self, kernel: Kernel) -> &CudaFunction {
        &self.functions[kernel as usize]
    }
}

/// Modules loaded so far, one per layout (all in the one device-0 context of [`crate::context`]).
static MODULES: Mutex<Vec<(Layout, Arc<Kernels>)>> = Mutex::new(Vec::new());

/// The kernels of `layout`, compiled with NVRTC for the device and loaded on first use.
pub(crate) fn kernels(ctx: &Arc<CudaContext>, layout: Layout) -> Result<Arc<Kernels>, GpuError> {
    let mut cache = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = cache.iter().find(|(l, _)| *l == layout) {
        return Ok(k.clone());
    }
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| GpuError::cuda("cuDeviceGetAttribute", 0, e))?;
    let target = compile::target_for((major as u32, minor as u32))?;
    let compiled = compile::compile_cached(layout, target)?;
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
    let functions = Kernel::ALL
        .iter()
        .map(|k| {
            module
                .load_function(k.name())
                .map_err(|e| GpuError::cuda("cuModuleGetFunction", 0, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let k = Arc::new(Kernels {
        _module: module,
        functions,
    });
    cache.push((layout, k.clone()));
    Ok(k)
}

/// The kernels that do not depend on the layout (set operations, checks, benchmarks): any
/// layout's module has them, so this is the one most likely loaded already.
pub(crate) fn layout_free_kernels(ctx: &Arc<CudaContext>) -> Result<Arc<Kernels>, GpuError> {
    {
        let cache = MODULES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, k)) = cache.first() {
            return Ok(k.clone());
        }
    }
    kernels(ctx, Layout::L8x32)
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
