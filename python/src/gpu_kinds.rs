//! The GPU backend of `SpatialFilter` and `Retrieval` (feature `gpu`): the GPU crate's spatial
//! filter and retrieval table, kept as device copies in [`GpuSlot`]s beside the host values,
//! with device keys borrowed as `Filter`'s are ([`Borrowed`]). Without the feature,
//! `gpu_kinds_off.rs` stands in with the same names, each refusing by name.
//!
//! As for `Filter` (`gpu.rs`), the host value stays the one everything else reads: a lookup
//! uploads it again only when its version moved on, and a GPU insert copies the device filter
//! back before it returns.

use bloomlanes_core::retrieval::RetrievalTable;
use bloomlanes_core::{CellReduce, Keys, SpatialFilter};
use bloomlanes_gpu::{BorrowedBuffer, DeviceBuffer, GpuRetrieval, GpuSpatialFilter};
use pyo3::Python;

use crate::device::DeviceArray;
use crate::errors::Error;
use crate::gpu::{ensure_nvrtc, gpu_key_type, Borrowed, GpuSlot};
use crate::kinds::Held;

/// A spatial filter's device copy.
pub(crate) type SpatialSlot = GpuSlot<GpuSpatialFilter>;
/// A retrieval table's device copy.
pub(crate) type RetrievalSlot = GpuSlot<GpuRetrieval>;

/// The classes of a GPU insert.
pub(crate) enum GpuClasses<'a> {
    /// One class for every key.
    One(u32),
    /// One per key, in host memory (checked against the filter's classes by the GPU crate).
    Host(&'a [u32]),
    /// One per key, a uint32 device array (checked on the device).
    Device(&'a DeviceArray),
}

/// Device keys, checked for the GPU, borrowed after the device is idle.
///
/// # Safety
/// As [`Borrowed::new`].
unsafe fn borrow(keys: &DeviceArray) -> Result<Borrowed, Error> {
    gpu_key_type(keys.key_type()?)?;
    // SAFETY: the caller's promise.
    unsafe { Borrowed::new(keys) }
}

/// Refuses a read-only output device array.
fn writable(out: &DeviceArray) -> Result<(), Error> {
    if out.readonly {
        return Err(Error::value("the output device array is read-only"));
    }
    Ok(())
}

/// Runs `f` on the device copy of `held`'s current value (the GIL released).
fn on_spatial<R: Send>(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    f: impl FnOnce(&mut GpuSpatialFilter) -> Result<R, Error> + Send,
) -> Result<R, Error> {
    ensure_nvrtc(py);
    py.detach(|| {
        let host = held.read();
        let upload = || Ok(GpuSpatialFilter::upload(&host)?);
        slot.with_copy(held.version(), upload, f)
    })
}

/// The class of each device key into the uint16 device array `out` (at least one per key).
///
/// # Safety
/// `keys` and `out` describe live device arrays whose Python owners the caller keeps alive for
/// the call, and nothing else uses them meanwhile.
pub(crate) unsafe fn spatial_classify_device(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    keys: &DeviceArray,
    out: &DeviceArray,
) -> Result<(), Error> {
    // SAFETY: the caller's promise.
    let borrowed = unsafe { borrow(keys) }?;
    writable(out)?;
    // SAFETY: as above; the driver checks the extent.
    let mut o = unsafe { BorrowedBuffer::<u16>::new(out.ptr, keys.len) }?;
    on_spatial(py, slot, held, |g| {
        Ok(g.reduce_device(borrowed.keys(), CellReduce::Min, o.buffer_mut())?)
    })
}

/// The class of each host key (in the GPU's key forms) into `out`.
pub(crate) fn spatial_classify_host(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    keys: &[Keys<'_>],
    out: &mut [u16],
) -> Result<(), Error> {
    on_spatial(py, slot, held, |g| {
        let mut start = 0;
        for k in keys {
            g.classes_of(*k, &mut out[start..start + k.len()])?;
            start += k.len();
        }
        Ok(())
    })
}

/// Runs a GPU insert on the device copy, under `held`'s write lock (the caller checked or
/// learnt the key type), then copies the device filter back into `held`: the device copy is
/// then tagged with the new version, or dropped on failure (the host value unchanged).
fn spatial_insert(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    insert: impl FnOnce(&mut GpuSpatialFilter) -> Result<(), Error> + Send,
) -> Result<(), Error> {
    ensure_nvrtc(py);
    py.detach(|| {
        let mut host = held.write_unversioned();
        let version = held.version();
        let new_version = held.bump_version();
        let upload = || Ok(GpuSpatialFilter::upload(&host)?);
        let done = slot.with_copy(version, upload, insert).and_then(|()| {
            slot.held(|g| {
                *host = g.download()?;
                Ok(())
            })
        });
        slot.finish_write(done, new_version)
    })
}

/// Inserts device keys in `classes`.
///
/// # Safety
/// As [`spatial_classify_device`], for `keys` and a device array of classes.
pub(crate) unsafe fn spatial_insert_device(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    keys: &DeviceArray,
    classes: GpuClasses<'_>,
) -> Result<(), Error> {
    // SAFETY: the caller's promise.
    let borrowed = unsafe { borrow(keys) }?;
    let n = keys.len;
    let device_classes = match classes {
        GpuClasses::One(_) => None,
        GpuClasses::Host(list) => Some(Classes::Owned(DeviceBuffer::from_host(list)?)),
        GpuClasses::Device(d) => {
            // SAFETY: the caller's promise; only read, and the driver checks the extent.
            Some(Classes::Borrowed(unsafe { BorrowedBuffer::new(d.ptr, n) }?))
        }
    };
    let one = match classes {
        GpuClasses::One(c) => c,
        _ => 0,
    };
    spatial_insert(py, slot, held, |g| {
        match &device_classes {
            None => g.insert_device(borrowed.keys(), one)?,
            Some(c) => g.insert_device_classes(borrowed.keys(), c.buffer())?,
        }
        Ok(())
    })
}

/// Classes a device insert reads: copied over, or borrowed from the caller.
enum Classes {
    Owned(DeviceBuffer<u32>),
    Borrowed(BorrowedBuffer<u32>),
}

impl Classes {
    fn buffer(&self) -> &DeviceBuffer<u32> {
        match self {
            Classes::Owned(b) => b,
            Classes::Borrowed(b) => b.buffer(),
        }
    }
}

/// Inserts host keys (in the GPU's key forms) in `classes` (one, or one per key in host
/// memory).
pub(crate) fn spatial_insert_host(
    py: Python<'_>,
    slot: &SpatialSlot,
    held: &Held<SpatialFilter>,
    keys: &[Keys<'_>],
    classes: GpuClasses<'_>,
) -> Result<(), Error> {
    spatial_insert(py, slot, held, |g| {
        let mut start = 0;
        for k in keys {
            match classes {
                GpuClasses::Host(list) => g.insert_classes(*k, &list[start..start + k.len()])?,
                GpuClasses::One(c) => g.insert(*k, c)?,
                GpuClasses::Device(_) => {
                    return Err(Error::value("device classes need device keys"))
                }
            }
            start += k.len();
        }
        Ok(())
    })
}

/// Runs `f` on the device copy of `table` (uploaded once: a table never changes).
fn on_retrieval<R: Send>(
    py: Python<'_>,
    slot: &RetrievalSlot,
    table: &RetrievalTable,
    f: impl FnOnce(&mut GpuRetrieval) -> Result<R, Error> + Send,
) -> Result<R, Error> {
    ensure_nvrtc(py);
    py.detach(|| slot.with_copy(0, || Ok(GpuRetrieval::upload(table)?), f))
}

/// Looks up device keys: values into the uint32 device array `values`, the found bits into the
/// uint64 device array `found` (bit `i % 64` of word `i / 64`).
///
/// # Safety
/// As [`spatial_classify_device`], for `keys`, `values` and `found`.
pub(crate) unsafe fn retrieval_get_device(
    py: Python<'_>,
    slot: &RetrievalSlot,
    table: &RetrievalTable,
    keys: &DeviceArray,
    values: &DeviceArray,
    found: &DeviceArray,
) -> Result<(), Error> {
    // SAFETY: the caller's promise.
    let borrowed = unsafe { borrow(keys) }?;
    writable(values)?;
    writable(found)?;
    // SAFETY: as above; the driver checks the extent.
    let mut v = unsafe { BorrowedBuffer::<u32>::new(values.ptr, keys.len) }?;
    // SAFETY: as above.
    let mut f = unsafe { BorrowedBuffer::<u64>::new(found.ptr, keys.len.div_ceil(64)) }?;
    on_retrieval(py, slot, table, |g| {
        Ok(g.get_device(borrowed.keys(), v.buffer_mut(), f.buffer_mut())?)
    })
}

/// Looks up host keys (in the GPU's key forms): values into `values`, found bits into `found`
/// (one word per 64 keys of the whole input).
pub(crate) fn retrieval_get_host(
    py: Python<'_>,
    slot: &RetrievalSlot,
    table: &RetrievalTable,
    keys: &[Keys<'_>],
    values: &mut [u32],
    found: &mut [u8],
) -> Result<(), Error> {
    on_retrieval(py, slot, table, |g| {
        let mut start = 0;
        for k in keys {
            let n = k.len();
            let mut bits = vec![0u64; n.div_ceil(64)];
            g.get(*k, &mut values[start..start + n], &mut bits)?;
            for (i, b) in found[start..start + n].iter_mut().enumerate() {
                *b = (bits[i / 64] >> (i % 64) & 1) as u8;
            }
            start += n;
        }
        Ok(())
    })
}
