//! Page-locked host memory, the fast path for streaming keys in and results out.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::buffer::byte_size;
use crate::{context, GpuError};

/// Page-locked host memory: the fast path for streaming keys in and results out.
pub struct PinnedBuffer<T> {
    /// Start of a `cuMemHostAlloc` allocation of at least `len` elements, aligned to a page.
    ptr: *mut T,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `PinnedBuffer<T>` owns its allocation exclusively, like a `Vec<T>`: no other value
// holds `ptr`, so moving the owner to another thread moves the only access to the `T`s (hence
// `T: Send`). Freeing on another thread is allowed: `Drop` binds the owning context first.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: through `&PinnedBuffer<T>` only `&[T]` is reachable (`Deref`); mutation needs
// `&mut self`. Sharing it between threads is therefore sharing `&[T]`, sound for `T: Sync`.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    /// `len` zeroed elements of page-locked host memory.
    pub fn zeros(len: usize) -> Result<PinnedBuffer<T>, GpuError> {
        // At least one byte, so that every buffer (even of zero-sized `T`) has an allocation.
        let bytes = byte_size::<T>("pinned buffer", len)?.max(1);
        let ctx = context()?;
        ctx.bind_to_thread()
            .map_err(|e| GpuError::cuda("cuCtxSetCurrent", 0, e))?;
        // SAFETY: `cuMemHostAlloc` with no flags has no preconditions besides a current context
        // (bound above); `bytes` ≥ 1. The result is checked for errors and null below.
        let raw = unsafe { cudarc::driver::result::malloc_host(bytes, 0) }
            .map_err(|e| GpuError::cuda("cuMemHostAlloc", bytes as u64, e))?;
        if raw.is_null() {
            return Err(GpuError::Cuda {
                op: "cuMemHostAlloc",
                bytes: bytes as u64,
                message: "returned a null pointer".into(),
            });
        }
        let ptr = raw as *mut T;
        // SAFETY: `ptr` is the start of a fresh, exclusively owned allocation of `bytes`
        // writable bytes; all-zero bytes are a valid `T` because `T: Pod`.
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
        Ok(PinnedBuffer { ptr, len, ctx })
    }

    /// A pinned copy of `data`.
    pub fn from_slice(data: &[T]) -> Result<PinnedBuffer<T>, GpuError> {
        let mut b = PinnedBuffer::zeros(data.len())?;
        b.copy_from_slice(data);
        Ok(b)
    }
}

impl<T> Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is non-null and page-aligned (`cuMemHostAlloc` returns page-aligned
        // memory, so it is aligned for any `T: Pod` the constructor accepts); the allocation
        // holds `len × size_of::<T>()` bytes (checked in `zeros`), all initialised (zeroed, then
        // written only through `&mut [T]`), and lives until `self` drops. `&self` guarantees no
        // `&mut [T]` exists for the returned lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: the same allocation, alignment, size and initialisation argument as `deref`;
        // `&mut self` guarantees the returned slice is the only access for its lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `ptr` came from `cuMemHostAlloc` in `zeros` and is freed only here, once.
        // No queued copy still uses it: every function of this crate that queues a copy from or
        // to a pinned buffer waits for the copy's stream before it returns the borrow, and the
        // host pipeline leaks (never frees) staging buffers whose stream failed to finish.
        let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut _) };
    }
}

impl<T> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_pinned_buffer_is_refused_before_touching_cuda() {
        // `len × 8` overflows: the size check comes before any CUDA call, so this holds with or
        // without a GPU.
        let e = PinnedBuffer::<u64>::zeros(usize::MAX / 4).unwrap_err();
        match e {
            GpuError::TooManyElements {
                what, elem_bytes, ..
            } => {
                assert_eq!(what, "pinned buffer");
                assert_eq!(elem_bytes, 8);
            }
            other => panic!("expected TooManyElements, got {other:?}"),
        }
        let e = PinnedBuffer::<[u64; 4]>::zeros(usize::MAX / 16).unwrap_err();
        assert!(
            matches!(e, GpuError::TooManyElements { elem_bytes: 32, .. }),
            "{e:?}"
        );
    }
}
