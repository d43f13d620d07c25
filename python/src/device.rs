//! Arrays in GPU memory as Python hands them over, read without a copy:
//! `__cuda_array_interface__` (CuPy, PyTorch, Numba) or, for objects without it, DLPack
//! (`__dlpack_device__` naming a CUDA device, then `__dlpack__`; JAX and other array-API
//! libraries). Parsing lives here, with or
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
#[derive(Debug)]
// Without the GPU backend a device array is only recognised and refused: its address is unread.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
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
    /// What keeps the memory described alive besides the caller's object: the DLPack capsule
    /// (its destructor calls the producer's deleter once we drop it).
    pub(crate) _owner: Option<Py<PyAny>>,
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
        return dlpack_array(obj);
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
        _owner: None,
    }))
}

/// DLPack's device types that kernels on our device can read: CUDA and CUDA managed memory.
const DL_CUDA: i64 = 2;
const DL_CUDA_MANAGED: i64 = 13;

/// DLPack's `DLTensor` (dlpack.h, ABI stable since v0.3).
#[repr(C)]
struct DlTensor {
    data: *mut std::ffi::c_void,
    device_type: i32,
    device_id: i32,
    ndim: i32,
    dtype_code: u8,
    dtype_bits: u8,
    dtype_lanes: u16,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// The device array behind `obj`'s DLPack export, when `__dlpack_device__` says it is in CUDA
/// memory; `None` for host arrays (numpy exports DLPack too) and objects without DLPack.
fn dlpack_array(obj: &Bound<'_, PyAny>) -> Result<Option<DeviceArray>, Error> {
    let Ok(dev) = obj.call_method0("__dlpack_device__") else {
        return Ok(None);
    };
    let (device_type, _id): (i64, i64) = dev
        .extract()
        .map_err(|_| Error::value("__dlpack_device__ did not return (device type, id)"))?;
    if device_type != DL_CUDA && device_type != DL_CUDA_MANAGED {
        return Ok(None);
    }
    let cap = obj
        .call_method0("__dlpack__")
        .map_err(|e| Error::value(format!("__dlpack__ failed: {e}")))?;
    let ptr = crate::input::capsule_ptr(&cap, c"dltensor")?.cast::<DlTensor>();
    // SAFETY: a capsule named "dltensor" holds a `DLManagedTensor`, whose first field is the
    // `DLTensor` (DLPack's ABI); it stays valid while the capsule is alive and unconsumed, and we
    // keep the capsule (in `_owner`) for as long as the array is used. We only read it.
    let t = unsafe { &*ptr };
    let bad = |what: String| Error::value(format!("DLPack tensor: {what}"));
    if t.ndim != 1 {
        return Err(Error::value(format!(
            "device keys must be a one-dimensional array, got {} dimensions (flatten it first)",
            t.ndim
        )));
    }
    if t.shape.is_null() {
        return Err(bad("no shape".into()));
    }
    // SAFETY: `shape` is non-null and points to `ndim` = 1 sizes (DLPack).
    let len = unsafe { *t.shape };
    let len = usize::try_from(len).map_err(|_| bad(format!("negative length {len}")))?;
    // SAFETY: `strides` is null (compact) or points to `ndim` = 1 strides, in elements.
    if !t.strides.is_null() && len > 1 && unsafe { *t.strides } != 1 {
        return Err(Error::value(
            "device keys must be contiguous: make a contiguous copy first",
        ));
    }
    if t.dtype_lanes != 1 || t.dtype_bits % 8 != 0 || t.dtype_bits == 0 {
        return Err(bad(format!(
            "element type code {} of {} bits × {} lanes",
            t.dtype_code, t.dtype_bits, t.dtype_lanes
        )));
    }
    let kind = match t.dtype_code {
        0 => 'i',
        1 => 'u',
        2 => 'f',
        6 => 'b',
        c => return Err(bad(format!("element type code {c}"))),
    };
    let itemsize = usize::from(t.dtype_bits / 8);
    let ptr = (t.data as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| bad("address overflows".into()))?;
    if len > 0 && ptr == 0 {
        return Err(bad("a null data address for a non-empty array".into()));
    }
    let order = if itemsize == 1 { '|' } else { '<' };
    Ok(Some(DeviceArray {
        ptr,
        len,
        itemsize,
        typestr: format!("{order}{kind}{itemsize}"),
        readonly: false,
        _owner: Some(cap.unbind()),
    }))
}

/// The error for a device array where the GPU backend cannot take it.
pub(crate) fn not_on_this_backend(why: &str) -> Error {
    Error::value(format!(
        "a device array (__cuda_array_interface__) was given, but {why}; copy it to the host \
         (e.g. cupy.asnumpy) for the CPU backend"
    ))
}

/// The device array that device keys' answers go to: `out` when given (a device array of one
/// of `typestrs` with at least `len` elements, else an error asking for `what`), or a new CuPy
/// array of `len` elements of `cupy_dtype`. Returns the Python object and its interface.
pub(crate) fn output_array<'py>(
    py: Python<'py>,
    out: Option<&Bound<'py, PyAny>>,
    len: usize,
    typestrs: &[&str],
    cupy_dtype: &str,
    what: &str,
) -> Result<(Bound<'py, PyAny>, DeviceArray), Error> {
    if let Some(o) = out {
        let target = device_array(o)?.ok_or_else(|| {
            Error::type_("out= must be a device array (__cuda_array_interface__)")
        })?;
        if !typestrs.contains(&target.typestr.as_str()) || target.len < len {
            return Err(Error::value(format!("out= must be {what}")));
        }
        return Ok((o.clone(), target));
    }
    let cupy = py.import("cupy").map_err(|_| {
        Error::value(format!(
            "device keys need an output array: pass out= ({what}), or install CuPy"
        ))
    })?;
    let arr = cupy
        .call_method1("empty", (len, cupy_dtype))
        .map_err(|e| Error::value(format!("cupy.empty: {e}")))?;
    let target =
        device_array(&arr)?.ok_or_else(|| Error::value("cupy.empty gave no device array"))?;
    Ok((arr, target))
}
