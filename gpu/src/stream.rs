//! CUDA streams and device-time timers.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use crate::{context, GpuError};

/// A CUDA stream for the asynchronous calls.
#[derive(Clone, Debug)]
pub struct GpuStream {
    stream: Arc<CudaStream>,
}

impl GpuStream {
    /// A new stream on device 0.
    pub fn new() -> Result<GpuStream, GpuError> {
        let ctx = context()?;
        let stream = ctx
            .new_stream()
            .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))?;
        Ok(GpuStream { stream })
    }

    /// Waits until every call queued on this stream has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))
    }

    /// Starts a timer: record [`Timer::stop`] later on the same stream.
    pub fn timer(&self) -> Result<Timer, GpuError> {
        Ok(Timer {
            start: record(&self.stream)?,
            stream: self.stream.clone(),
        })
    }

    /// The `cudarc` stream, for launches and copies.
    pub(crate) fn raw(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

/// An event recorded now on `stream`.
fn record(stream: &CudaStream) -> Result<CudaEvent, GpuError> {
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    stream
        .record_event(flags)
        .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))
}

/// A CUDA-event timer on a stream (device time, not host time).
#[derive(Debug)]
pub struct Timer {
    start: CudaEvent,
    stream: Arc<CudaStream>,
}

impl Timer {
    /// Records the end event, waits for it, and returns the elapsed device time in milliseconds.
    pub fn stop(self) -> Result<f32, GpuError> {
        let end = record(&self.stream)?;
        end.synchronize()
            .map_err(|e| GpuError::cuda("cuEventSynchronize", 0, e))?;
        self.start
            .elapsed_ms(&end)
            .map_err(|e| GpuError::cuda("cuEventElapsedTime", 0, e))
    }
}
