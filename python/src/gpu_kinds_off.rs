//! `gpu_kinds.rs` in a build without the GPU backend: the same names, each call refused by
//! name (a device array or `backend="gpu"` is never misread as host memory).

use bloomlanes_core::retrieval::RetrievalTable;
use bloomlanes_core::{Keys, SpatialFilter};
use pyo3::Python;

use crate::device::{not_on_this_backend, DeviceArray};
use crate::errors::Error;
use crate::kinds::Held;

/// No device copy.
#[derive(Default)]
pub(crate) struct SpatialSlot;
/// No device copy.
#[derive(Default)]
pub(crate) struct RetrievalSlot;

/// The classes of a GPU insert (see `gpu_kinds.rs`).
#[allow(dead_code)]
pub(crate) enum GpuClasses<'a> {
    One(u32),
    Host(&'a [u32]),
    Device(&'a DeviceArray),
}

fn off() -> Error {
    not_on_this_backend("this build has no GPU backend")
}

pub(crate) unsafe fn spatial_classify_device(
    _: Python<'_>,
    _: &SpatialSlot,
    _: &Held<SpatialFilter>,
    _: &DeviceArray,
    _: &DeviceArray,
) -> Result<(), Error> {
    Err(off())
}

pub(crate) fn spatial_classify_host(
    _: Python<'_>,
    _: &SpatialSlot,
    _: &Held<SpatialFilter>,
    _: &[Keys<'_>],
    _: &mut [u16],
) -> Result<(), Error> {
    Err(off())
}

pub(crate) unsafe fn spatial_insert_device(
    _: Python<'_>,
    _: &SpatialSlot,
    _: &Held<SpatialFilter>,
    _: &DeviceArray,
    _: GpuClasses<'_>,
) -> Result<(), Error> {
    Err(off())
}

pub(crate) fn spatial_insert_host(
    _: Python<'_>,
    _: &SpatialSlot,
    _: &Held<SpatialFilter>,
    _: &[Keys<'_>],
    _: GpuClasses<'_>,
) -> Result<(), Error> {
    Err(off())
}

pub(crate) unsafe fn retrieval_get_device(
    _: Python<'_>,
    _: &RetrievalSlot,
    _: &RetrievalTable,
    _: &DeviceArray,
    _: &DeviceArray,
    _: &DeviceArray,
) -> Result<(), Error> {
    Err(off())
}

pub(crate) fn retrieval_get_host(
    _: Python<'_>,
    _: &RetrievalSlot,
    _: &RetrievalTable,
    _: &[Keys<'_>],
    _: &mut [u32],
    _: &mut [u8],
) -> Result<(), Error> {
    Err(off())
}
