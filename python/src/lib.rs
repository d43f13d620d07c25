//! `bloomlanes._native`: the Python extension module of bloomlanes (PyO3, stable ABI for
//! CPython >= 3.9). The Python package `bloomlanes` (python/bloomlanes) re-exports it; its
//! typed interface is `bloomlanes/_native.pyi`.
//!
//! - `filter`: the `Filter` class; `setops`: its `|` and `&` (the cell kinds' `|` is in
//!   `kinds`); `storage`: owned or memory-mapped bits; `convert`: arguments from Python;
//! - `spatial`: `SpatialFilter`; `retrieval`: `Retrieval`; `counting`: `CountingFilter`;
//!   `kinds`: what they share (files under the locks, bytes, key checks);
//! - `input`: keys from numpy, Arrow and lists without copies; `arrow`: the Arrow C Data
//!   Interface structs; `files`: keys from files through the `bloomlanes-input` pipeline;
//! - `ops`: the bulk operations (SIMD backend, every core, no GIL); `errors`: exceptions;
//!   `bench`: the Rust side of the benchmark.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod arrow;
mod bench;
mod convert;
mod counting;
mod device;
mod errors;
mod files;
mod filter;
mod filter_gpu;
#[cfg(feature = "gpu")]
mod gpu;
#[cfg(feature = "gpu")]
mod gpu_kinds;
#[cfg(not(feature = "gpu"))]
#[path = "gpu_kinds_off.rs"]
mod gpu_kinds;
mod input;
mod kind_update;
mod kinds;
mod kinds_gpu;
mod ops;
mod retrieval;
mod setops;
mod spatial;
mod storage;
mod update;

use pyo3::prelude::*;

/// The SIMD path the bulk operations use on this CPU (`avx512`, `avx2`, `sse2`, `portable` or
/// `scalar`; the environment variable `BLOOMLANES_SIMD` overrides it).
#[pyfunction]
fn simd_path() -> &'static str {
    bloomlanes_simd::active_path().name()
}

/// Runs the bulk operations on `threads` threads from now on (0: every core, the default).
/// The GPU that `backend="gpu"` runs on (its name), or None with no usable GPU (or a build
/// without the GPU backend).
#[pyfunction]
fn gpu_device() -> Option<String> {
    #[cfg(feature = "gpu")]
    {
        gpu::device_name().ok()
    }
    #[cfg(not(feature = "gpu"))]
    {
        None
    }
}

#[pyfunction]
fn set_threads(threads: usize) -> PyResult<()> {
    ops::set_threads(threads)?;
    Ok(())
}

/// Number of threads the bulk operations use.
#[pyfunction]
fn threads() -> usize {
    ops::threads()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<filter::PyFilter>()?;
    m.add_class::<spatial::PySpatialFilter>()?;
    m.add_class::<retrieval::PyRetrieval>()?;
    m.add_class::<counting::PyCountingFilter>()?;
    m.add_function(wrap_pyfunction!(simd_path, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_device, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(bench::_rust_bulk_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(input::_list_walk, m)?)?;
    m.add_function(wrap_pyfunction!(input::_list_inserts_in_one_pass, m)?)?;
    m.add("FormatError", py.get_type::<errors::FormatError>())?;
    m.add(
        "IncompatibleFiltersError",
        py.get_type::<errors::IncompatibleFiltersError>(),
    )?;
    m.add("KeyTypeError", py.get_type::<errors::KeyTypeError>())?;
    m.add(
        "FileChangedError",
        py.get_type::<errors::FileChangedError>(),
    )?;
    m.add_class::<update::Update>()?;
    if let Ok(n) = std::env::var("BLOOMLANES_THREADS") {
        let n: usize = n.trim().parse().map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "BLOOMLANES_THREADS={n:?} is not a number of threads"
            ))
        })?;
        ops::set_threads(n)?;
    }
    Ok(())
}
