//! Device memory: sizes checked before they are asked for, and [`DeviceBuffer`].

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    PushKernelArg, ValidAsZeroBits,
};

use crate::kernel::{Kernel, THREADS};
use crate::module::{grid, layout_free_kernels};
use crate::{context, GpuError, GpuStream, PinnedBuffer};

/// Bytes of `len` elements of `T`, or [`GpuError::TooManyElements`] if that is more than
/// `isize::MAX` (the most any Rust slice or allocation may span).
pub(crate) fn byte_size<T>(what: &'static str, len: usize) -> Result<usize, GpuError> {
    let elem = std::mem::size_of::<T>();
    len.checked_mul(elem)
        .filter(|&bytes| bytes <= isize::MAX as usize)
        .ok_or(GpuError::TooManyElements {
            what,
            len: len as u64,
            elem_bytes: elem as u64,
        })
}

/// Refuses an allocation of `bytes` that the device cannot hold now, with the free size.
pub(crate) fn check_free(
    ctx: &CudaContext,
    what: &'static str,
    bytes: u64,
) -> Result<(), GpuError> {
    let (free, _) = ctx
        .mem_get_info()
        .map_err(|e| GpuError::cuda("cuMemGetInfo", 0, e))?;
    if bytes > free as u64 {
        return Err(GpuError::OutOfMemory {
            what,
            requested_bytes: bytes,
            free_bytes: free as u64,
        });
    }
    Ok(())
}

/// `n` zeroed elements on `stream` (at least one, so that every buffer has an address).
pub(crate) fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    what: &'static str,
    n: usize,
) -> Result<CudaSlice<T>, GpuError> {
    let bytes = byte_size::<T>(what, n.max(1))? as u64;
    check_free(stream.context(), what, bytes)?;
    stream
        .alloc_zeros::<T>(n.max(1))
        .map_err(|e| GpuError::cuda(what, bytes, e))
}

/// A buffer in device memory.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    /// At least `len` elements (at least one: empty buffers still get an address).
    slice: CudaSlice<T>,
    len: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits + Default + Clone> DeviceBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeros(len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        byte_size::<T>("device buffer", len)?;
        let stream = context()?.default_stream();
        let slice = alloc_zeros::<T>(&stream, "device buffer", len)?;
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        Ok(DeviceBuffer { slice, len })
    }

    /// A copy of `data` on the device.
    pub fn from_host(data: &[T]) -> Result<DeviceBuffer<T>, GpuError> {
        let mut b = DeviceBuffer::zeros(data.len())?;
        if !data.is_empty() {
            let stream = b.slice.stream().clone();
            let bytes = std::mem::size_of_val(data) as u64;
            stream
                .memcpy_htod(data, &mut b.slice.slice_mut(..data.len()))
                .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
            stream
                .synchronize()
                .map_err(|e| GpuError::cuda("cuStreamSynchronize", bytes, e))?;
        }
        Ok(b)
    }

    /// The contents, copied to the host.
    pub fn to_host(&self) -> Result<Vec<T>, GpuError> {
        let mut v = vec![T::default(); self.len];
        if self.len > 0 {
            let stream = self.slice.stream().clone();
            stream
                .memcpy_dtoh(&self.view(), &mut v[..])
                .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.bytes(), e))?;
            stream
                .synchronize()
                .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        }
        Ok(v)
    }
}

impl<T> DeviceBuffer<T> {
    /// Copies `src[..self.len()]` (page-locked host memory) into this buffer on `stream` and
    /// waits (a [`Timer`](crate::Timer) started on `stream` before the call measures the copy
    /// alone).
    pub fn copy_from_pinned(
        &mut self,
        src: &PinnedBuffer<T>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let n = self.len.min(src.len());
        if n == 0 {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(&src[..n]) as u64;
        let stream = stream.raw();
        {
            let (dst, _record_write) = self.slice.device_ptr_mut(stream);
            // SAFETY: `dst` is the start of an allocation of at least `self.len` ≥ `n` elements of
            // `T`, and `src[..n]` is `n` elements of `T`, so the copy stays inside both. The
            // source is page-locked and borrowed for this whole call, which waits for the stream
            // below before the borrow ends, so the memory outlives the asynchronous copy.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dst, &src[..n], stream.cu_stream())
            }
            .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", bytes, e))?;
        }
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", bytes, e))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        // Cannot overflow: `zeros` checked `len × size_of::<T>()` before allocating.
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// The device address of the first element, to hand to another library (CuPy's
    /// `UnownedMemory`, PyTorch, Numba) or back to [`crate::BorrowedBuffer::new`].
    pub fn device_address(&self) -> u64 {
        let (ptr, _sync) = self.slice.device_ptr(self.slice.stream());
        ptr
    }

    /// A buffer over `slice`'s first `len` elements (`slice` holds at least `max(len, 1)`).
    pub(crate) fn from_slice(slice: CudaSlice<T>, len: usize) -> DeviceBuffer<T> {
        DeviceBuffer { slice, len }
    }

    /// The device memory, handed back without freeing it (for [`crate::BorrowedBuffer`]).
    pub(crate) fn into_slice(self) -> CudaSlice<T> {
        self.slice
    }

    /// The `len` elements as a kernel argument.
    pub(crate) fn view(&self) -> CudaView<'_, T> {
        self.slice.slice(..self.len)
    }

    /// The `len` elements as a kernel argument that the kernel writes.
    pub(crate) fn view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.slice.slice_mut(..self.len)
    }
}

impl DeviceBuffer<u64> {
    /// `len` pseudo-random u64 keys generated on the device (SplitMix64 of `seed`, index).
    pub fn random_u64(len: usize, seed: u64) -> Result<DeviceBuffer<u64>, GpuError> {
        let mut b = DeviceBuffer::<u64>::zeros(len)?;
        let k = layout_free_kernels(&context()?)?;
        let stream = b.slice.stream().clone();
        let n = len as u64;
        if n > 0 {
            let cfg = grid(n, u64::from(THREADS))?;
            let mut out = b.view_mut();
            let mut l = stream.launch_builder(k.get(Kernel::FillRandom)?);
            l.arg(&mut out).arg(&n).arg(&seed);
            // SAFETY: `bl_fill_random(u64* keys, u64 n, u64 seed)` takes these three arguments
            // in this order; its threads write `keys[i]` for `i < n` only, and `out` holds
            // exactly `n` u64s.
            unsafe { l.launch(cfg) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_fill_random)", n * 8, e))?;
        }
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_size_refuses_overflow() {
        assert_eq!(byte_size::<u64>("x", 3).unwrap(), 24);
        assert_eq!(
            byte_size::<u8>("x", isize::MAX as usize).unwrap(),
            isize::MAX as usize
        );
        assert!(byte_size::<u8>("x", isize::MAX as usize + 1).is_err());
        assert_eq!(byte_size::<()>("x", usize::MAX).unwrap(), 0);
        match byte_size::<u64>("test buffer", usize::MAX / 4) {
            Err(GpuError::TooManyElements {
                what,
                len,
                elem_bytes,
            }) => {
                assert_eq!(what, "test buffer");
                assert_eq!(len, (usize::MAX / 4) as u64);
                assert_eq!(elem_bytes, 8);
            }
            other => panic!("expected TooManyElements, got {other:?}"),
        }
    }

    #[test]
    fn oversized_device_buffer_is_refused_before_touching_cuda() {
        // The size check comes first, so this holds with or without a GPU.
        let e = DeviceBuffer::<u64>::zeros(usize::MAX / 2).unwrap_err();
        assert!(
            matches!(e, GpuError::TooManyElements { elem_bytes: 8, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("overflow"), "{e}");
    }
}
