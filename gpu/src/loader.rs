//! Finding the CUDA driver and NVRTC at run time without letting `cudarc` panic.
//!
//! `cudarc` loads `libcuda` and `libnvrtc` lazily and panics when they are missing. Every entry
//! point of this crate first asks here, so a machine without CUDA gets an error, never a panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::GpuError;

/// Environment variable naming the NVRTC library (a file such as `libnvrtc.so.13`, or the folder
/// that holds it, e.g. the `nvidia/cu13/lib` folder of the `nvidia-cuda-nvrtc` wheel).
pub const NVRTC_ENV: &str = "BLOOMLANES_NVRTC";

/// Libraries we opened by full path; kept open for the life of the process so that `cudarc`'s
/// later `dlopen` by name finds them already loaded (glibc matches the SONAME).
static PRELOADED: Mutex<Vec<libloading::Library>> = Mutex::new(Vec::new());
static DRIVER: OnceLock<bool> = OnceLock::new();
static NVRTC_OK: OnceLock<()> = OnceLock::new();

/// Whether a CUDA driver library can be loaded. Never panics.
pub fn driver_present() -> bool {
    *DRIVER.get_or_init(|| {
        // SAFETY: `is_culib_present` has no preconditions: it only tries `dlopen` on cudarc's
        // candidate names of the driver library and closes what it opened; a panic inside is
        // caught.
        catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
    })
}

/// Returns `Err(GpuError::NoDriver)` unless the driver library can be loaded.
pub fn require_driver() -> Result<(), GpuError> {
    if driver_present() {
        Ok(())
    } else {
        Err(GpuError::NoDriver(
            "no CUDA driver found (libcuda.so.1 / libcuda.so could not be loaded)".into(),
        ))
    }
}

fn candidates(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        let mut libs = Vec::new();
        let mut builtins = Vec::new();
        if let Ok(dir) = std::fs::read_dir(path) {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // The `.alt.` variants are the same library built differently; skip them.
                if name.contains(".alt.") {
                    continue;
                }
                if name.starts_with("libnvrtc-builtins.so") {
                    builtins.push(e.path());
                } else if name.starts_with("libnvrtc.so") {
                    libs.push(e.path());
                }
            }
        }
        builtins.sort();
        libs.sort();
        // The builtins first: libnvrtc opens them by SONAME when it compiles.
        builtins.into_iter().chain(libs).collect()
    } else {
        let mut v = Vec::new();
        if let Some(dir) = path.parent() {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("libnvrtc-builtins.so") && !name.contains(".alt.") {
                    v.push(e.path());
                }
            }
        }
        v.push(path.to_path_buf());
        v
    }
}

/// Opens the NVRTC library at `path` (a file, or a folder holding `libnvrtc.so.*`), and its
/// builtins beside it, and keeps them loaded so that kernels can be compiled.
pub fn preload_nvrtc(path: &Path) -> Result<(), GpuError> {
    let files = candidates(path);
    if !files.iter().any(|f| {
        f.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("libnvrtc.so"))
    }) {
        return Err(GpuError::NoNvrtc(format!(
            "no libnvrtc.so* at {}",
            path.display()
        )));
    }
    let mut keep = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
    for f in files {
        // SAFETY: `f` names an NVRTC library file (or its builtins) chosen above by name; loading
        // it runs only NVRTC's own initialisers, which have no preconditions on this process.
        let lib = unsafe { libloading::Library::new(&f) }
            .map_err(|e| GpuError::NoNvrtc(format!("could not load {}: {e}", f.display())))?;
        keep.push(lib);
    }
    Ok(())
}

/// Returns `Ok` once NVRTC can be used: from [`NVRTC_ENV`] if set, else from the loader's search
/// path (`LD_LIBRARY_PATH`, the system library folders). Never panics.
pub fn require_nvrtc() -> Result<(), GpuError> {
    if NVRTC_OK.get().is_some() {
        return Ok(());
    }
    if let Some(p) = std::env::var_os(NVRTC_ENV) {
        preload_nvrtc(Path::new(&p))?;
    }
    // SAFETY: `is_culib_present` has no preconditions: it only tries `dlopen` on cudarc's
    // candidate names of NVRTC and closes what it opened; a panic inside is caught.
    let present = catch_unwind(AssertUnwindSafe(|| unsafe {
        cudarc::nvrtc::sys::is_culib_present()
    }))
    .unwrap_or(false);
    if present {
        let _ = NVRTC_OK.set(());
        Ok(())
    } else {
        Err(GpuError::NoNvrtc(format!(
            "libnvrtc.so.13 not found: set {NVRTC_ENV} to the library or its folder, or add it to LD_LIBRARY_PATH"
        )))
    }
}
