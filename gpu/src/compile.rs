//! Run-time compilation of [`kernel_source`](crate::kernel_source) with NVRTC.

use std::ffi::{c_char, CString};

use bloomlanes_core::Layout;
use cudarc::nvrtc::sys;

use crate::{loader, GpuError, KernelModule};

/// What NVRTC should produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Machine code for one architecture, e.g. `Cubin(90)` for `sm_90` (loads without JIT).
    Cubin(u32),
    /// PTX for a virtual architecture, e.g. `Ptx(90)` for `compute_90` (the driver JIT-compiles it).
    Ptx(u32),
}

impl Target {
    fn arch_flag(self) -> String {
        match self {
            Target::Cubin(sm) => format!("--gpu-architecture=sm_{sm}"),
            Target::Ptx(sm) => format!("--gpu-architecture=compute_{sm}"),
        }
    }
}

/// A compiled kernel image.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// What was asked for.
    pub target: Target,
    /// CUBIN bytes, or PTX text (NUL-terminated).
    pub image: Vec<u8>,
    /// NVRTC's log (warnings).
    pub log: String,
}

fn check(what: &'static str, r: sys::nvrtcResult) -> Result<(), GpuError> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::NoNvrtc(format!("{what} failed: {r:?}")))
    }
}

/// NVRTC's version, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    loader::require_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (`require_nvrtc` above); `major` and `minor` are live `i32`s that
    // NVRTC writes one value each into.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// The `sm_XX` numbers this NVRTC can produce machine code for.
pub fn supported_archs() -> Result<Vec<u32>, GpuError> {
    loader::require_nvrtc()?;
    let mut n = 0;
    // SAFETY: NVRTC is loaded (`require_nvrtc` above); `n` is a live `i32` NVRTC writes the
    // count into.
    check("nvrtcGetNumSupportedArchs", unsafe {
        sys::nvrtcGetNumSupportedArchs(&mut n)
    })?;
    let mut archs = vec![0i32; n.max(0) as usize];
    // SAFETY: NVRTC writes exactly the `n` architectures it just reported, and `archs` holds `n`
    // writable `i32`s (none when `n` is 0, and then nothing is written).
    check("nvrtcGetSupportedArchs", unsafe {
        sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
    })?;
    Ok(archs.into_iter().map(|a| a as u32).collect())
}

/// The best target for a device of compute capability `cc`: CUBIN for its own architecture if
/// this NVRTC knows it, else PTX for the newest older architecture it knows (JIT by the driver).
pub fn target_for(cc: (u32, u32)) -> Result<Target, GpuError> {
    let sm = cc.0 * 10 + cc.1;
    let archs = supported_archs()?;
    if archs.contains(&sm) {
        return Ok(Target::Cubin(sm));
    }
    archs
        .iter()
        .copied()
        .filter(|&a| a <= sm)
        .max()
        .map(Target::Ptx)
        .ok_or_else(|| GpuError::NoNvrtc(format!("this NVRTC cannot target sm_{sm}")))
}

/// Compiles the kernels of `module` for `layout` and `target`. Needs NVRTC only, no GPU.
pub fn compile(layout: Layout, module: KernelModule, target: Target) -> Result<Compiled, GpuError> {
    loader::require_nvrtc()?;
    let src = CString::new(crate::kernel_source(layout, module)).expect("kernel source has no NUL");
    let name = CString::new(format!("bloomlanes_{layout}_{module}.cu")).expect("no NUL");
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: `prog` is a live out-pointer; `src` and `name` are NUL-terminated C strings that
    // outlive the call (NVRTC copies the source); 0 headers, so the two null header arrays are
    // never read.
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let opts: Vec<CString> = [
        target.arch_flag(),
        "--std=c++17".to_string(),
        "--extra-device-vectorization".to_string(),
    ]
    .into_iter()
    .map(|o| CString::new(o).expect("no NUL"))
    .collect();
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `prog` was created above (the `?` returned otherwise) and not destroyed; `ptrs`
    // holds `ptrs.len()` pointers to NUL-terminated strings owned by `opts`, alive until the
    // end of this function.
    let r = unsafe { sys::nvrtcCompileProgram(prog, ptrs.len() as i32, ptrs.as_ptr()) };
    let log = program_log(prog);
    let out = if r != sys::nvrtcResult::NVRTC_SUCCESS {
        Err(GpuError::Compile {
            layout,
            module: module.name(),
            target: target.arch_flag(),
            log: format!("{r:?}: {log}"),
        })
    } else {
        image(prog, target).map(|image| Compiled { target, image, log })
    };
    // SAFETY: `prog` was created above, is destroyed only here, and is not used afterwards
    // (the log and image were copied into owned buffers).
    unsafe { sys::nvrtcDestroyProgram(&mut prog) };
    out
}

/// Environment variable naming a folder of compiled kernel images: [`compile_cached`] reads an
/// image from it when one of the same source, target and NVRTC version is there, and writes
/// what it compiles into it. Images for `sm_90` can be compiled on a machine without a GPU (the
/// compile test does when the variable is set) and carried to the one that runs them, which then
/// loads them without compiling.
pub const KERNEL_CACHE_ENV: &str = "BLOOMLANES_KERNEL_CACHE";

/// [`compile`], through the folder named by [`KERNEL_CACHE_ENV`] if it is set: the image of the
/// same kernel source, target and NVRTC version is read from it (named by their XXH64), or
/// compiled and written into it (a file is written whole or not at all: a temporary file renamed;
/// a cache that cannot be written is only skipped). Unset, it compiles.
pub fn compile_cached(
    layout: Layout,
    module: KernelModule,
    target: Target,
) -> Result<Compiled, GpuError> {
    match std::env::var_os(KERNEL_CACHE_ENV) {
        Some(dir) => compile_cached_in(std::path::Path::new(&dir), layout, module, target),
        None => compile(layout, module, target),
    }
}

/// [`compile_cached`] with the cache folder `dir` (created if missing).
pub fn compile_cached_in(
    dir: &std::path::Path,
    layout: Layout,
    module: KernelModule,
    target: Target,
) -> Result<Compiled, GpuError> {
    let (major, minor) = nvrtc_version()?;
    let key = format!(
        "{}\n{}\nnvrtc {major}.{minor}",
        crate::kernel_source(layout, module),
        target.arch_flag()
    );
    let ext = match target {
        Target::Cubin(_) => "cubin",
        Target::Ptx(_) => "ptx",
    };
    let hash = bloomlanes_core::xxh64(key.as_bytes(), 0);
    let path = dir.join(format!("bloomlanes-{layout}-{module}-{hash:016x}.{ext}"));
    if let Ok(image) = std::fs::read(&path) {
        if !image.is_empty() {
            return Ok(Compiled {
                target,
                image,
                log: String::new(),
            });
        }
    }
    let c = compile(layout, module, target)?;
    let tmp = path.with_extension(format!("{ext}.{}.tmp", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, &c.image))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(c)
}

/// NVRTC's log of a program (created and not yet destroyed); empty if it cannot be read.
fn program_log(prog: sys::nvrtcProgram) -> String {
    let mut size = 0usize;
    // SAFETY: the caller passes a program created and not yet destroyed; `size` is a live
    // `usize` NVRTC writes the log size into.
    if unsafe { sys::nvrtcGetProgramLogSize(prog, &mut size) } != sys::nvrtcResult::NVRTC_SUCCESS {
        return String::new();
    }
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: the same live program; NVRTC writes the `size` bytes it just reported (the log
    // and its NUL), and `buf` holds `size.max(1)` ≥ `size` writable bytes.
    unsafe { sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr() as *mut c_char) };
    String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .trim()
        .to_string()
}

/// NVRTC's size and copy functions of one kind of image.
type ImageFns = (
    unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult,
    unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult,
    [&'static str; 2],
);

/// The compiled image of a program compiled without error (not yet destroyed).
fn image(prog: sys::nvrtcProgram, target: Target) -> Result<Vec<u8>, GpuError> {
    let (size_of, copy, names): ImageFns = match target {
        Target::Cubin(_) => (
            sys::nvrtcGetCUBINSize,
            sys::nvrtcGetCUBIN,
            ["nvrtcGetCUBINSize", "nvrtcGetCUBIN"],
        ),
        Target::Ptx(_) => (
            sys::nvrtcGetPTXSize,
            sys::nvrtcGetPTX,
            ["nvrtcGetPTXSize", "nvrtcGetPTX"],
        ),
    };
    let mut size = 0usize;
    // SAFETY: `prog` is a live program that compiled without error (the caller's contract);
    // `size` is a live `usize` NVRTC writes the image's size (the CUBIN's, or the PTX text's
    // with its NUL) into.
    check(names[0], unsafe { size_of(prog, &mut size) })?;
    let mut buf = vec![0u8; size];
    // SAFETY: the same program; NVRTC writes the `size` bytes it just reported, and `buf` holds
    // `size` writable bytes.
    check(names[1], unsafe {
        copy(prog, buf.as_mut_ptr() as *mut c_char)
    })?;
    Ok(buf)
}
