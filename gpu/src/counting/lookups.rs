//! The counting filter's lookups: the static filter's lookups on the image.

use bloomlanes_core::Keys;

use super::GpuCountingFilter;
use crate::launch::{launch_keys, Pass};
use crate::lookup::LookupTarget;
use crate::pipeline::{HostOp, Pipeline};
use crate::{
    DeviceBuffer, DeviceKeys, GpuError, GpuStream, LookupAuto, LookupKernel, LookupOutput,
    LookupPath,
};

impl GpuCountingFilter {
    /// Looks up device-resident keys into `out` (1 = may be present: all counters positive),
    /// queued on `stream`.
    pub fn contains_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let pass = Pass::Contains {
            words: &self.image,
            out: out.view_mut(),
        };
        launch_keys(&self.k, &self.params, stream.raw(), args, pass)
    }

    /// Looks up device-resident keys into `out` and waits.
    pub fn contains_device(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.contains_device_async(keys, out, &self.stream)?;
        self.stream.synchronize()
    }

    /// Looks up device-resident keys into a packed bitmap (bit `i % 64` of word `i / 64`), queued
    /// on `stream`. Bits past the last key in its word are zero.
    pub fn contains_bitmap_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let needed = keys.len().div_ceil(64);
        if out.len() < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len(),
            });
        }
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let pass = Pass::Bitmap {
            words: &self.image,
            out: out.view_mut(),
        };
        launch_keys(&self.k, &self.params, stream.raw(), args, pass)
    }

    /// Looks up keys from host memory: `out[i]` = 1 if key `i` may be present, else 0.
    pub fn contains(&self, keys: Keys<'_>, out: &mut [u8]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        let words = &self.image;
        self.pipeline()
            .run_host(keys, HostOp::Contains { words, out })
    }

    /// Looks up keys from host memory into a packed bitmap: bit `i % 64` of `out[i / 64]`.
    pub fn contains_bitmap(&self, keys: Keys<'_>, out: &mut [u64]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let needed = keys.len().div_ceil(64);
        if out.len() < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len(),
            });
        }
        let words = &self.image;
        self.pipeline()
            .run_host(keys, HostOp::Bitmap { words, out })
    }

    /// The host pipeline over the image, for lookups.
    fn pipeline(&self) -> Pipeline<'_> {
        Pipeline {
            ctx: &self.ctx,
            kernels: &self.k,
            params: &self.params,
            after: self.stream.raw(),
            chunk_keys: self.chunk_keys,
        }
    }

    /// Chooses how [`GpuCountingFilter::lookup_device_async`] probes the image (answers are
    /// identical); the default is [`LookupKernel::Auto`].
    pub fn set_lookup_kernel(&mut self, kernel: LookupKernel) {
        self.lookup.kernel = kernel;
    }

    /// Sets the rule by which [`LookupKernel::Auto`] partitions lookups (over the image's bytes).
    pub fn set_lookup_auto(&mut self, rule: LookupAuto) {
        self.lookup.auto = rule;
    }

    /// Looks up device-resident keys into `out` (bytes, a bitmap or the maybe-present
    /// positions), queued on `stream`, directly or partitioned over the image like
    /// [`GpuFilter::lookup_device_async`](crate::GpuFilter::lookup_device_async); returns the
    /// path taken.
    pub fn lookup_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        out: LookupOutput<'_>,
        stream: &GpuStream,
    ) -> Result<LookupPath, GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let mut target = LookupTarget {
            kernels: &self.k,
            params: &self.params,
            words: &self.image,
            partitioner: &mut self.partitioner,
            state: &mut self.lookup,
        };
        target.lookup(args, out, stream.raw())
    }

    /// [`GpuCountingFilter::lookup_device_async`] on the filter's stream, waiting.
    pub fn lookup_device(
        &mut self,
        keys: DeviceKeys<'_>,
        out: LookupOutput<'_>,
    ) -> Result<LookupPath, GpuError> {
        let s = self.stream.clone();
        let path = self.lookup_device_async(keys, out, &s)?;
        s.synchronize()?;
        Ok(path)
    }
}
