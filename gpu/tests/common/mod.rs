//! Shared test helpers: finding NVRTC and the GPU, skipping visibly when absent.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// The `nvidia/cu13/lib` folder of the `nvidia-cuda-nvrtc` wheel, if python3 can find it.
fn pip_nvrtc_dir() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.join("libnvrtc.so.13").exists().then_some(p)
}

/// Makes NVRTC usable: `BLOOMLANES_NVRTC`, the library path, or the pip wheel. `false` = absent.
pub fn nvrtc() -> bool {
    if bloomlanes_gpu::require_nvrtc().is_ok() {
        return true;
    }
    if let Some(dir) = pip_nvrtc_dir() {
        if bloomlanes_gpu::preload_nvrtc(&dir).is_ok() {
            return bloomlanes_gpu::require_nvrtc().is_ok();
        }
    }
    false
}

/// Prints a line straight to the process's stderr, past libtest's output capture, so that a
/// skipped test is visible in a plain `cargo test` run.
pub fn skip(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIP: {line}");
}

/// Whether a GPU (and NVRTC) is usable; prints a SKIP line for `test` when not.
pub fn gpu(test: &str) -> bool {
    match bloomlanes_gpu::probe() {
        Err(e) => {
            skip(&format!("{test}: no GPU ({e})"));
            false
        }
        Ok(_) if !nvrtc() => {
            skip(&format!("{test}: NVRTC not found (set BLOOMLANES_NVRTC)"));
            false
        }
        Ok(_) => true,
    }
}
