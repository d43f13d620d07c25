//! [`BorrowedBuffer`]: device memory that another library owns (CuPy, PyTorch, Numba, anything
//! exposing `__cuda_array_interface__` or DLPack), used by one call without a copy.
//!
//! The pointer such a library hands over is a plain integer, and the library may be mistaken or
//! lying about it. So the extent is checked with the driver before any kernel sees it: the
//! `len` elements must lie inside one allocation (`cuMemGetAddressRange`) on the device this
//! crate uses (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`), at an address aligned for `T`. What the
//! driver cannot check (that the owner does not free or rewrite the memory meanwhile) is the
//! caller's promise, stated on [`BorrowedBuffer::new`].

use std::mem::{align_of, size_of};

use cudarc::driver::sys::{self, CUpointer_attribute};
use cudarc::driver::DeviceRepr;

use crate::buffer::byte_size;
use crate::{context, DeviceBuffer, GpuError};

/// Device memory owned elsewhere, usable wherever a [`DeviceBuffer`] is taken (through
/// [`buffer`](Self::buffer) and [`buffer_mut`](Self::buffer_mut)); dropping it frees nothing.
#[derive(Debug)]
pub struct BorrowedBuffer<T> {
    /// Always `Some` until `drop` takes it back out to leak it.
    buf: Option<DeviceBuffer<T>>,
}

impl<T: DeviceRepr> BorrowedBuffer<T> {
    /// Borrows the `len` elements of `T` at device address `ptr` (at least one element).
    ///
    /// Refused with [`GpuError::NotDeviceMemory`] when `ptr` is not aligned for `T`, when the
    /// driver knows no allocation at `ptr`, when the `len` elements run past the end of that
    /// allocation, or when it belongs to another device than this crate's (device 0).
    ///
    /// # Safety
    /// For as long as the value lives, the allocation at `ptr` must stay allocated, and no other
    /// work may write the `len` elements (nor read them, if the buffer is written through
    /// [`buffer_mut`](Self::buffer_mut)). The owner's queued work on them must be complete or
    /// ordered before the calls that use this buffer (e.g. by synchronizing the device first).
    pub unsafe fn new(ptr: u64, len: usize) -> Result<BorrowedBuffer<T>, GpuError> {
        if len == 0 {
            return Err(GpuError::NotDeviceMemory(
                "an empty device array has no memory to borrow".into(),
            ));
        }
        let bytes = byte_size::<T>("borrowed device array", len)? as u64;
        if !ptr.is_multiple_of(align_of::<T>() as u64) {
            return Err(GpuError::NotDeviceMemory(format!(
                "address {ptr:#x} is not aligned to {} bytes",
                align_of::<T>()
            )));
        }
        let ctx = context()?;
        ctx.bind_to_thread()
            .map_err(|e| GpuError::cuda("cuCtxSetCurrent", 0, e))?;
        let (mut base, mut size) = (0u64, 0usize);
        // SAFETY: FFI call with two valid out-pointers to locals; the driver only reads `ptr` as
        // a number and reports the allocation containing it, or an error if there is none.
        let found = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) };
        if found != sys::cudaError_enum::CUDA_SUCCESS {
            return Err(GpuError::NotDeviceMemory(format!(
                "address {ptr:#x} is not in any device allocation of this process ({found:?})"
            )));
        }
        let end = ptr.checked_add(bytes);
        if end.is_none_or(|end| end > base + size as u64) {
            return Err(GpuError::NotDeviceMemory(format!(
                "{len} elements of {} bytes at {ptr:#x} run past the end of their allocation \
                 ({size} bytes at {base:#x})",
                size_of::<T>()
            )));
        }
        let mut ordinal: i32 = -1;
        // SAFETY: FFI call; the DEVICE_ORDINAL attribute is an `int`, written to a local `i32`.
        let asked = unsafe {
            sys::cuPointerGetAttribute(
                (&mut ordinal as *mut i32).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr,
            )
        };
        if asked == sys::cudaError_enum::CUDA_SUCCESS && ordinal != ctx.ordinal() as i32 {
            return Err(GpuError::NotDeviceMemory(format!(
                "the array is on GPU {ordinal}; bloomlanes runs on GPU {}",
                ctx.ordinal()
            )));
        }
        let stream = ctx.default_stream();
        // SAFETY: the driver just confirmed that `[ptr, ptr + len × size_of::<T>())` lies in one
        // live allocation of this device, and `ptr` is aligned for `T`; the caller promises it
        // stays allocated and unshared while this value lives. `drop` leaks the slice instead of
        // freeing it, so the owner's memory is never freed here.
        let slice = unsafe { stream.upgrade_device_ptr::<T>(ptr, len) };
        Ok(BorrowedBuffer {
            buf: Some(DeviceBuffer::from_slice(slice, len)),
        })
    }
}

impl<T> BorrowedBuffer<T> {
    /// The borrowed elements, to read.
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        self.buf.as_ref().expect("present until drop")
    }

    /// The borrowed elements, to write.
    pub fn buffer_mut(&mut self) -> &mut DeviceBuffer<T> {
        self.buf.as_mut().expect("present until drop")
    }
}

impl<T> Drop for BorrowedBuffer<T> {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            // Waits for the work recorded on it, then forgets the pointer: the owner frees it.
            let _ = b.into_slice().leak();
        }
    }
}
