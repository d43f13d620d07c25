//! The GPU backend of `Filter.insert` and `Filter.contains` (feature `gpu`): keys in device
//! memory (CuPy, PyTorch, Numba) used in place, host keys copied over, and the filter's device
//! copy kept in step with the host filter.
//!
//! The host filter stays the one the rest of the class reads (files, pickling, `|`, the CPU
//! backend). Its device copy is tagged with the filter's version (bumped by every write lock):
//! a lookup uploads it again only when the host filter changed since, and a GPU insert copies
//! the device filter back to the host before it returns, so both always hold the same bits.

use std::sync::Mutex;

use bloomlanes_core::{KeyType, Keys};
use bloomlanes_gpu::{synchronize_device, BorrowedBuffer, DeviceKeys, GpuError, GpuFilter};

use crate::device::DeviceArray;
use crate::errors::Error;
use crate::storage::Storage;

impl From<GpuError> for Error {
    fn from(e: GpuError) -> Error {
        Error::value(format!("GPU backend: {e}"))
    }
}

/// The device copy of a filter (or table) and the version of the host value it holds.
struct DeviceCopy<D> {
    value: D,
    version: u64,
}

/// A host value's device copy, made on first use and made again when the host value's version
/// moved on: `GpuFilter` for `Filter`, the GPU crate's spatial filter and retrieval table for
/// the other kinds.
pub(crate) struct GpuSlot<D = GpuFilter>(Mutex<Option<DeviceCopy<D>>>);

impl<D> Default for GpuSlot<D> {
    fn default() -> GpuSlot<D> {
        GpuSlot(Mutex::new(None))
    }
}

impl<D> GpuSlot<D> {
    /// Runs `f` on the device copy of the host value at `version`, made first by `upload` if
    /// the copy held is of another version. Returns `f`'s result.
    pub(crate) fn with_copy<R>(
        &self,
        version: u64,
        upload: impl FnOnce() -> Result<D, Error>,
        f: impl FnOnce(&mut D) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = matches!(slot.as_ref(), Some(c) if c.version == version);
        if !fresh {
            // The old copy is freed before the new one is allocated.
            *slot = None;
            *slot = Some(DeviceCopy {
                value: upload()?,
                version,
            });
        }
        let copy = slot
            .as_mut()
            .ok_or_else(|| Error::value("GPU copy missing"))?;
        f(&mut copy.value)
    }

    /// Runs `f` on the device copy (which must exist).
    pub(crate) fn held<R>(&self, f: impl FnOnce(&D) -> Result<R, Error>) -> Result<R, Error> {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&slot
            .as_ref()
            .ok_or_else(|| Error::value("GPU copy missing"))?
            .value)
    }

    /// Records that the device copy now holds the host value's `version`.
    pub(crate) fn mark(&self, version: u64) {
        if let Some(c) = self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            c.version = version;
        }
    }

    /// Drops the device copy (frees its memory).
    pub(crate) fn release(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Ends a GPU write whose steps (the write on the device copy, the copy back into the host
    /// value) gave `done`: the copy is then tagged `new_version`, or on failure dropped (a
    /// failed write may have changed part of it, a failed copy part of the host value) and
    /// the error returned.
    pub(crate) fn finish_write(
        &self,
        done: Result<(), Error>,
        new_version: u64,
    ) -> Result<(), Error> {
        if let Err(e) = done {
            self.release();
            return Err(e);
        }
        self.mark(new_version);
        Ok(())
    }
}

impl GpuSlot<GpuFilter> {
    /// Runs `f` on a device copy of `storage` at `version` ([`GpuSlot::with_copy`]).
    fn with<R>(
        &self,
        storage: &Storage,
        version: u64,
        f: impl FnOnce(&mut GpuFilter) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let upload = || {
            let mut filter = GpuFilter::upload_view(storage.view())?;
            storage.check()?;
            filter.set_chunk_keys(1 << 22);
            Ok(filter)
        };
        self.with_copy(version, upload, f)
    }
}

/// Device keys borrowed for one call: 8-byte keys as words, 4-byte keys as records.
pub(crate) enum Borrowed {
    Words(BorrowedBuffer<u64>),
    Records(BorrowedBuffer<u8>),
}

impl Borrowed {
    /// Borrows `keys` (at least one), after waiting for the device so that whatever wrote them
    /// is done.
    ///
    /// # Safety
    /// The caller holds a reference to the Python object that owns the memory for the life of
    /// the value, and nothing else writes it meanwhile (the GIL is released, so another Python
    /// thread could; the documentation asks callers not to).
    pub(crate) unsafe fn new(keys: &DeviceArray) -> Result<Borrowed, Error> {
        synchronize_device()?;
        Ok(match keys.itemsize {
            // SAFETY: the caller's promise; the extent is checked by the driver.
            8 => Borrowed::Words(unsafe { BorrowedBuffer::new(keys.ptr, keys.len) }?),
            4 => {
                let bytes = keys
                    .len
                    .checked_mul(4)
                    .ok_or_else(|| Error::value("too many device keys"))?;
                // SAFETY: as above.
                Borrowed::Records(unsafe { BorrowedBuffer::new(keys.ptr, bytes) }?)
            }
            n => return Err(Error::type_(format!("device keys of {n} bytes each"))),
        })
    }

    pub(crate) fn keys(&self) -> DeviceKeys<'_> {
        match self {
            Borrowed::Words(b) => DeviceKeys::U64(b.buffer()),
            Borrowed::Records(b) => DeviceKeys::Records {
                data: b.buffer(),
                width: 4,
            },
        }
    }
}

/// Refuses key types whose lookups need more than hashing their bytes (floats: ±0 and NaN).
pub(crate) fn gpu_key_type(key_type: KeyType) -> Result<(), Error> {
    if matches!(key_type, KeyType::F32 | KeyType::F64) {
        return Err(Error::type_(format!(
            "{key_type} keys run on the CPU backend only (their lookups also probe -0.0/+0.0 \
             and every NaN); use backend='cpu'"
        )));
    }
    Ok(())
}

/// Looks up device keys into the device array `out` (one byte per key, `out.len ≥ keys.len`),
/// or, with `bitmap`, into `out` as u64 words (`out.len ≥ keys.len / 64` rounded up).
///
/// # Safety
/// `keys` and `out` describe live device arrays whose Python owners the caller keeps alive for
/// the call, and nothing else uses them meanwhile.
pub(crate) unsafe fn contains_device(
    slot: &GpuSlot,
    storage: &Storage,
    version: u64,
    keys: &DeviceArray,
    out: &DeviceArray,
    bitmap: bool,
) -> Result<(), Error> {
    gpu_key_type(keys.key_type()?)?;
    if out.readonly {
        return Err(Error::value("the output device array is read-only"));
    }
    // SAFETY: the caller's promise.
    let borrowed = unsafe { Borrowed::new(keys) }?;
    slot.with(storage, version, |g| {
        if bitmap {
            let words = keys.len.div_ceil(64);
            // SAFETY: the caller's promise; the driver checks the extent.
            let mut o = unsafe { BorrowedBuffer::<u64>::new(out.ptr, words) }?;
            g.contains_bitmap_device_async(borrowed.keys(), o.buffer_mut(), g.stream())?;
            g.stream().synchronize()?;
        } else {
            // SAFETY: as above.
            let mut o = unsafe { BorrowedBuffer::<u8>::new(out.ptr, keys.len) }?;
            g.contains_device(borrowed.keys(), o.buffer_mut())?;
        }
        Ok(())
    })
}

/// Inserts device keys, then copies the device filter back into `storage`; the device copy is
/// then tagged `new_version`.
///
/// # Safety
/// As [`contains_device`], for `keys`.
pub(crate) unsafe fn insert_device(
    slot: &GpuSlot,
    storage: &mut Storage,
    version: u64,
    new_version: u64,
    keys: &DeviceArray,
) -> Result<(), Error> {
    gpu_key_type(keys.key_type()?)?;
    // SAFETY: the caller's promise.
    let borrowed = unsafe { Borrowed::new(keys) }?;
    insert_with(slot, storage, version, new_version, keys.len, |g| {
        g.insert_device(borrowed.keys())?;
        Ok(())
    })
}

/// Inserts host keys (already in their backend form) on the GPU; as [`insert_device`].
pub(crate) fn insert_host(
    slot: &GpuSlot,
    storage: &mut Storage,
    version: u64,
    new_version: u64,
    key_type: KeyType,
    keys: &[Keys<'_>],
) -> Result<(), Error> {
    gpu_key_type(key_type)?;
    let n = keys.iter().map(|k| k.len()).sum();
    insert_with(slot, storage, version, new_version, n, |g| {
        for k in keys {
            g.insert(*k)?;
        }
        Ok(())
    })
}

fn insert_with(
    slot: &GpuSlot,
    storage: &mut Storage,
    version: u64,
    new_version: u64,
    n: usize,
    f: impl FnOnce(&mut GpuFilter) -> Result<(), Error>,
) -> Result<(), Error> {
    let done = slot
        .with(storage, version, f)
        .and_then(|()| slot.held(|g| Ok(g.download_words(storage.owned_mut()?.words_mut())?)));
    slot.finish_write(done, new_version)?;
    storage.owned_mut()?.add_key_count(n as u64);
    Ok(())
}

/// Looks up host keys (already in their backend form) on the GPU into `out`.
pub(crate) fn contains_host(
    slot: &GpuSlot,
    storage: &Storage,
    version: u64,
    key_type: KeyType,
    keys: &[Keys<'_>],
    out: &mut [u8],
) -> Result<(), Error> {
    gpu_key_type(key_type)?;
    slot.with(storage, version, |g| {
        let mut start = 0;
        for k in keys {
            let n = k.len();
            g.contains(*k, &mut out[start..start + n])?;
            start += n;
        }
        Ok(())
    })
}

/// Makes NVRTC loadable once per process: `BLOOMLANES_NVRTC` or the library path first, else
/// the `nvidia-cuda-nvrtc` wheel's folder (`nvidia/cu13/lib` or `nvidia/cuda_nvrtc/lib`) found
/// through `import nvidia`. Errors surface later, from the first kernel compilation.
pub(crate) fn ensure_nvrtc(py: pyo3::Python<'_>) {
    use pyo3::prelude::*;
    if bloomlanes_gpu::require_nvrtc().is_ok() {
        return;
    }
    let Ok(paths) = py
        .import("nvidia")
        .and_then(|m| m.getattr("__path__"))
        .and_then(|p| p.extract::<Vec<String>>())
    else {
        return;
    };
    for root in paths {
        for sub in ["cu13/lib", "cuda_nvrtc/lib"] {
            let dir = std::path::Path::new(&root).join(sub);
            if dir.is_dir() && bloomlanes_gpu::preload_nvrtc(&dir).is_ok() {
                return;
            }
        }
    }
}

/// The GPU's name, or why there is none.
pub(crate) fn device_name() -> Result<String, GpuError> {
    bloomlanes_gpu::probe().map(|d| d.name)
}
