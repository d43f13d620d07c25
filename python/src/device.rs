//! Arrays in GPU memory as Python hands them over: `__cuda_array_interface__` (CuPy, PyTorch,
//! Numba, and anything else that speaks it), read without a copy. Parsing lives here, with or
//! without the `gpu` feature, so that a device array given to a build without the GPU backend is
//! recognised and refused by name instead of being misread as host memory.

use bloomlanes_core::KeyType;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::Error;

/// Where a bulk call runs (`backend=` of `insert` and `contains`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// Device arrays on the GPU, everything else on the CPU (the default).
    Auto,
    /// The SIMD backend on every core; device arrays are refused.
    Cpu,
    /// The GPU: device arrays in place, host arrays copied to the device.
    Gpu,
}

impl Backend {
    /// Parses `backend=`: `"auto"` (or None), `"cpu"`, `"gpu"`.
    pub(crate) fn parse(s: Option<&str>) -> Result<Backend, Error> {
        match s.unwrap_or("auto") {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "gpu" => Ok(Backend::Gpu),
            other => Err(Error::value(format!(
                "backend={other:?}: expected 'auto', 'cpu' or 'gpu'"
            ))),
        }
    }
}

/// A one-dimensional, contiguous array in device memory.
#[derive(Clone, Debug)]
pub(crate) struct DeviceArray {
    /// Device address of element 0 (0 for an empty array).
    pub(crate) ptr: u64,
    /// Elements.
    pub(crate) len: usize,
    /// Bytes per element.
    pub(crate) itemsize: usize,
    /// numpy's type string, e.g. `<u8`.
    pub(crate) typestr: String,
    /// The producer marked it read-only.
    pub(crate) readonly: bool,
}

impl DeviceArray {
    /// The key type of a key array, or a message naming the element type and the accepted ones.
    pub(crate) fn key_type(&self) -> Result<KeyType, Error> {
        match self.typestr.as_str() {
            "<u8" => Ok(KeyType::U64),
            "<i8" => Ok(KeyType::I64),
            "<u4" => Ok(KeyType::U32),
            "<i4" => Ok(KeyType::I32),
            t => Err(Error::type_(format!(
                "device keys of element type {t:?}: the GPU backend takes uint64, int64, uint32 \
                 or int32 device arrays (other key types: copy the keys to the host)"
            ))),
        }
    }
}

/// The array behind `obj`'s `__cuda_array_interface__`, or `None` when it has none (a host
/// object). Refused, with the reason: anything but a one-dimensional C-contiguous array without
/// a mask.
pub(crate) fn device_array(obj: &Bound<'_, PyAny>) -> Result<Option<DeviceArray>, Error> {
    let Ok(cai) = obj.getattr("__cuda_array_interface__") else {
        return Ok(None);
    };
    let bad = |what: &str| Error::value(format!("__cuda_array_interface__: {what}"));
    let d = cai.cast::<PyDict>().map_err(|_| bad("not a dict"))?;
    let get = |k: &str| d.get_item(k).ok().flatten().filter(|v| !v.is_none());
    let shape: Vec<usize> = get("shape")
        .ok_or_else(|| bad("no shape"))?
        .extract()
        .map_err(|_| bad("shape is not a tuple of sizes"))?;
    let [len] = shape[..] else {
        return Err(Error::value(format!(
            "device keys must be a one-dimensional array, got shape {shape:?} (flatten it with \
             .ravel())"
        )));
    };
    let typestr: String = get("typestr")
        .ok_or_else(|| bad("no typestr"))?
        .extract()
        .map_err(|_| bad("typestr is not a string"))?;
    let itemsize: usize = typestr
        .get(2..)
        .and_then(|s| s.parse().ok())
        .filter(|&n| (1..=16).contains(&n))
        .ok_or_else(|| bad(&format!("unknown typestr {typestr:?}")))?;
    let (ptr, readonly): (u64, bool) = get("data")
        .ok_or_else(|| bad("no data"))?
        .extract()
        .map_err(|_| bad("data is not (address, read-only)"))?;
    if get("mask").is_some() {
        return Err(Error::value(
            "device arrays with a mask are not supported: drop the masked elements first",
        ));
    }
    if let Some(strides) = get("strides") {
        let strides: Vec<i64> = strides
            .extract()
            .map_err(|_| bad("strides is not a tuple of integers"))?;
        if len > 1 && strides != [itemsize as i64] {
            return Err(Error::value(format!(
                "device keys must be contiguous (strides {strides:?} for {itemsize}-byte \
                 elements): make a contiguous copy (cupy.ascontiguousarray)"
            )));
        }
    }
    if len > 0 && ptr == 0 {
        return Err(bad("a null data address for a non-empty array"));
    }
    Ok(Some(DeviceArray {
        ptr,
        len,
        itemsize,
        typestr,
        readonly,
    }))
}

/// The error for a device array where the GPU backend cannot take it.
pub(crate) fn not_on_this_backend(why: &str) -> Error {
    Error::value(format!(
        "a device array (__cuda_array_interface__) was given, but {why}; copy it to the host \
         (e.g. cupy.asnumpy) for the CPU backend"
    ))
}
