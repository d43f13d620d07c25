//! Per-ISA kernels chosen at run time. Only x86_64 has run-time choices; on other targets the
//! portable path (on `wide`, compiled for the target's own vector ISA: NEON, wasm simd128) is
//! the vector path.

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;
