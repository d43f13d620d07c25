//! `Filter.insert` / `Filter.contains` on device arrays and with `backend="gpu"`: the choice of
//! backend, the output array, and the calls into [`crate::gpu`] (feature `gpu`; without it, a
//! device array or `backend="gpu"` is refused by name).

use bloomlanes_core::KeyType;
use pyo3::prelude::*;

use crate::device::{not_on_this_backend, output_array, Backend, DeviceArray};
use crate::errors::Error;
use crate::filter::{check_keys, PyFilter};
use crate::input::Part;

impl PyFilter {
    /// The storage to insert `key_type` keys into on the GPU, with its key type checked (or
    /// learnt), and the version the device copy must hold to be current: unchanged unless
    /// learning the key type replaced the storage.
    #[cfg(feature = "gpu")]
    fn write_for_gpu(
        &self,
        key_type: KeyType,
    ) -> Result<
        (
            std::sync::RwLockWriteGuard<'_, crate::storage::Storage>,
            u64,
        ),
        Error,
    > {
        let mut g = self.write_unversioned();
        let before = g.params();
        self.check_or_learn(&mut g, key_type)?;
        let version = if g.params() == before {
            self.version()
        } else {
            self.bump_version()
        };
        Ok((g, version))
    }

    /// Inserts the keys of a device array (`backend` auto or gpu).
    pub(crate) fn insert_device_array(
        &self,
        py: Python<'_>,
        keys: &DeviceArray,
        backend: Backend,
    ) -> Result<(), Error> {
        if backend == Backend::Cpu {
            return Err(not_on_this_backend("backend='cpu' was asked for"));
        }
        let key_type = keys.key_type()?;
        #[cfg(feature = "gpu")]
        {
            crate::gpu::ensure_nvrtc(py);
            py.detach(|| {
                let (mut g, version) = self.write_for_gpu(key_type)?;
                if keys.len == 0 {
                    return Ok(());
                }
                let new_version = self.bump_version();
                // SAFETY: `keys` came from the `__cuda_array_interface__` of an object the caller
                // of `insert` holds for the whole call; the driver checks its extent.
                unsafe { crate::gpu::insert_device(&self.gpu, &mut g, version, new_version, keys) }
            })
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (py, key_type);
            Err(not_on_this_backend("this build has no GPU backend"))
        }
    }

    /// Inserts host keys on the GPU (`backend="gpu"`).
    pub(crate) fn insert_host_on_gpu(
        &self,
        py: Python<'_>,
        parts: &[Part<'_>],
        key_type: KeyType,
    ) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        {
            crate::gpu::ensure_nvrtc(py);
            let keys = gpu_host_keys(parts, key_type)?;
            py.detach(|| {
                let (mut g, version) = self.write_for_gpu(key_type)?;
                let new_version = self.bump_version();
                crate::gpu::insert_host(&self.gpu, &mut g, version, new_version, key_type, &keys)
            })
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (py, parts, key_type);
            Err(Error::value("backend='gpu': this build has no GPU backend"))
        }
    }

    /// Looks up the keys of a device array; returns the device array of answers (`out` when
    /// given, else a new CuPy array): one bool per key, or with `bitmap` packed bits as uint8.
    pub(crate) fn contains_device_array<'py>(
        &self,
        py: Python<'py>,
        keys: &DeviceArray,
        bitmap: bool,
        backend: Backend,
        out: Option<&Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, PyAny>, Error> {
        if backend == Backend::Cpu {
            return Err(not_on_this_backend("backend='cpu' was asked for"));
        }
        let key_type = keys.key_type()?;
        check_keys(&self.read().params(), key_type)?;
        let n = keys.len;
        let words = n.div_ceil(64);
        let (arr, target) = if bitmap {
            let what = format!(
                "a uint64 device array of at least {words} words for {n} keys with bitmap=True"
            );
            output_array(py, out, words, &["<u8"], "uint64", &what)?
        } else {
            let what = format!("a bool or uint8 device array of at least {n} elements");
            output_array(py, out, n, &["|b1", "|u1"], "bool", &what)?
        };
        // A new bitmap is handed back as its bytes (uint8), as the host path answers.
        let result = if bitmap && out.is_none() {
            arr.call_method1("view", ("uint8",))
                .and_then(|b| {
                    b.get_item(pyo3::types::PySlice::new(py, 0, n.div_ceil(8) as isize, 1))
                })
                .map_err(|e| Error::value(format!("cupy view: {e}")))?
        } else {
            arr
        };
        if n == 0 {
            return Ok(result);
        }
        #[cfg(feature = "gpu")]
        {
            crate::gpu::ensure_nvrtc(py);
            py.detach(|| {
                let g = self.read();
                let version = self.version();
                // SAFETY: `keys` and `target` describe arrays the caller's objects (`keys`, and
                // `out` or the array just made) own and keep alive for the call; the driver
                // checks both extents.
                unsafe {
                    crate::gpu::contains_device(&self.gpu, &g, version, keys, &target, bitmap)
                }
            })?;
            Ok(result)
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = target;
            Err(not_on_this_backend("this build has no GPU backend"))
        }
    }

    /// Looks up host keys on the GPU (`backend="gpu"`) into `out` (one byte per key).
    pub(crate) fn contains_host_on_gpu(
        &self,
        py: Python<'_>,
        parts: &[Part<'_>],
        key_type: KeyType,
        out: &mut [u8],
    ) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        {
            crate::gpu::ensure_nvrtc(py);
            let keys = gpu_host_keys(parts, key_type)?;
            py.detach(|| {
                let g = self.read();
                check_keys(&g.params(), key_type)?;
                let version = self.version();
                crate::gpu::contains_host(&self.gpu, &g, version, key_type, &keys, out)
            })
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (py, parts, key_type, out);
            Err(Error::value("backend='gpu': this build has no GPU backend"))
        }
    }
}

/// The backend form of every part, or an error naming what the GPU cannot take from the host
/// (every class's `backend="gpu"` with host keys).
pub(crate) fn gpu_host_keys<'a>(
    parts: &[Part<'a>],
    key_type: KeyType,
) -> Result<Vec<bloomlanes_core::Keys<'a>>, Error> {
    parts
        .iter()
        .map(|p| {
            crate::ops::prepare(p)?.ok_or_else(|| {
                Error::type_(format!(
                    "backend='gpu' takes host keys of 64-bit integers, fixed-width bytes or \
                     strings with 64-bit offsets and no nulls; these ({key_type}) run on the CPU \
                     backend (backend='cpu'), or pass them as a device array"
                ))
            })
        })
        .collect()
}
