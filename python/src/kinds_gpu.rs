//! `SpatialFilter.insert`/`classify` and `Retrieval.get` on device arrays and with
//! `backend="gpu"`, as `Filter` offers them (`filter_gpu.rs`): the same backend choice
//! ([`Backend`]), device arrays read by [`device_array`], answers in the same kind of output
//! array ([`output_array`]), the same host keys for the GPU ([`gpu_host_keys`]), and the calls
//! into [`crate::gpu_kinds`] (which keeps the device copies, as `gpu.rs` does for `Filter`).

use bloomlanes_core::KeyType;
use pyo3::prelude::*;
use pyo3::types::PySlice;

use crate::device::{device_array, not_on_this_backend, output_array, Backend, DeviceArray};
use crate::errors::Error;
use crate::filter_gpu::gpu_host_keys;
use crate::gpu_kinds::{self, GpuClasses};
use crate::input::Part;
use crate::kinds::{check_kind_keys, HeldClass};
use crate::retrieval::PyRetrieval;
use crate::spatial::{ClassArg, PySpatialFilter};

/// The key type of device keys, refused on `backend="cpu"`.
fn device_keys(keys: &DeviceArray, backend: Backend) -> Result<KeyType, Error> {
    if backend == Backend::Cpu {
        return Err(not_on_this_backend("backend='cpu' was asked for"));
    }
    keys.key_type()
}

impl PySpatialFilter {
    /// Checks (or learns) the key type of a GPU insert; the version moves on only if learning
    /// replaced the filter, so that a current device copy stays in use.
    fn learn_for_gpu(&self, key_type: KeyType) -> Result<(), Error> {
        let mut f = self.held.write_unversioned();
        let before = *f.params();
        self.check_or_learn(&mut f, key_type)?;
        if *f.params() != before {
            self.held.bump_version();
        }
        Ok(())
    }

    /// Inserts the keys of a device array in `classes`: one class name or number, one per key
    /// (a list or numpy array, copied over), or a uint32 device array of one per key.
    pub(crate) fn insert_device_array(
        &self,
        py: Python<'_>,
        keys: &DeviceArray,
        classes: &Bound<'_, PyAny>,
        backend: Backend,
    ) -> PyResult<()> {
        let key_type = device_keys(keys, backend)?;
        let on_device = device_array(classes)?;
        let listed;
        let classes = match &on_device {
            Some(d) if d.typestr != "<u4" || d.len != keys.len => {
                return Err(Error::type_(format!(
                    "device classes must be a uint32 device array of one class per key ({} \
                     keys; got {} elements of {})",
                    keys.len, d.len, d.typestr
                ))
                .into())
            }
            Some(d) => GpuClasses::Device(d),
            None => {
                listed = Self::classes_of(&self.read(), classes, keys.len)?;
                match &listed {
                    ClassArg::One(c) => GpuClasses::One(*c),
                    ClassArg::Each(list) => GpuClasses::Host(list),
                }
            }
        };
        self.learn_for_gpu(key_type)?;
        if keys.len == 0 {
            return Ok(());
        }
        // SAFETY: `keys` (and device classes) came from the `__cuda_array_interface__` of
        // objects the caller of `insert` holds for the whole call; the driver checks extents.
        Ok(unsafe { gpu_kinds::spatial_insert_device(py, &self.gpu, &self.held, keys, classes) }?)
    }

    /// Inserts host keys on the GPU (`backend="gpu"`).
    pub(crate) fn insert_host_on_gpu(
        &self,
        py: Python<'_>,
        parts: &[Part<'_>],
        key_type: KeyType,
        classes: &ClassArg,
    ) -> Result<(), Error> {
        let keys = gpu_host_keys(parts, key_type)?;
        self.learn_for_gpu(key_type)?;
        let classes = match classes {
            ClassArg::One(c) => GpuClasses::One(*c),
            ClassArg::Each(list) => GpuClasses::Host(list),
        };
        gpu_kinds::spatial_insert_host(py, &self.gpu, &self.held, &keys, classes)
    }

    /// The classes of a device array's keys, in a uint16 device array (`out`, or a new CuPy
    /// array).
    pub(crate) fn classify_device_array<'py>(
        &self,
        py: Python<'py>,
        keys: &DeviceArray,
        backend: Backend,
        out: Option<&Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, PyAny>, Error> {
        let key_type = device_keys(keys, backend)?;
        check_kind_keys(self.read().params(), key_type, "SpatialFilter")?;
        let n = keys.len;
        let what = format!("a uint16 device array of at least {n} elements");
        let (result, target) = output_array(py, out, n, &["<u2"], "uint16", &what)?;
        if n > 0 {
            // SAFETY: `keys` and `target` describe arrays that the caller's objects (`keys`,
            // and `out` or the array just made) own and keep alive for the call; the driver
            // checks both extents.
            unsafe {
                gpu_kinds::spatial_classify_device(py, &self.gpu, &self.held, keys, &target)
            }?;
        }
        Ok(result)
    }

    /// The classes of host keys, looked up on the GPU (`backend="gpu"`), into `out`.
    pub(crate) fn classify_host_on_gpu(
        &self,
        py: Python<'_>,
        parts: &[Part<'_>],
        key_type: KeyType,
        out: &mut [u16],
    ) -> Result<(), Error> {
        check_kind_keys(self.read().params(), key_type, "SpatialFilter")?;
        let keys = gpu_host_keys(parts, key_type)?;
        gpu_kinds::spatial_classify_host(py, &self.gpu, &self.held, &keys, out)
    }
}

impl PyRetrieval {
    /// Looks up a device array's keys: `(values, found)`, new CuPy arrays of uint32 and bool.
    pub(crate) fn get_device_array<'py>(
        &self,
        py: Python<'py>,
        keys: &DeviceArray,
        backend: Backend,
    ) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>), Error> {
        let key_type = device_keys(keys, backend)?;
        check_kind_keys(self.table.params(), key_type, "Retrieval")?;
        let n = keys.len;
        let (values, v) = output_array(py, None, n, &["<u4"], "uint32", "uint32 values")?;
        let (words, w) = output_array(py, None, n.div_ceil(64), &["<u8"], "uint64", "bits")?;
        if n > 0 {
            // SAFETY: `keys` is the caller's live device array, `v` and `w` the arrays just
            // made, all kept alive for the call; the driver checks every extent.
            unsafe { gpu_kinds::retrieval_get_device(py, &self.gpu, &self.table, keys, &v, &w) }?;
        }
        // The kernel writes one found bit per key (bit i % 64 of word i / 64): as bools, on
        // the device.
        let found = py
            .import("cupy")
            .and_then(|cp| {
                let bytes = words.call_method1("view", ("uint8",))?;
                let kw = pyo3::types::PyDict::new(py);
                kw.set_item("bitorder", "little")?;
                let bits = cp.call_method("unpackbits", (bytes,), Some(&kw))?;
                bits.get_item(PySlice::new(py, 0, n as isize, 1))?
                    .call_method1("view", ("bool",))
            })
            .map_err(|e| Error::value(format!("cupy.unpackbits: {e}")))?;
        Ok((values, found))
    }

    /// Looks up host keys on the GPU (`backend="gpu"`): values and found flags (one byte each).
    pub(crate) fn get_host_on_gpu(
        &self,
        py: Python<'_>,
        parts: &[Part<'_>],
        key_type: KeyType,
        values: &mut [u32],
        found: &mut [u8],
    ) -> Result<(), Error> {
        check_kind_keys(self.table.params(), key_type, "Retrieval")?;
        let keys = gpu_host_keys(parts, key_type)?;
        gpu_kinds::retrieval_get_host(py, &self.gpu, &self.table, &keys, values, found)
    }
}
