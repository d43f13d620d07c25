//! The CUDA backend of `bloomlanes-gpu` (feature `gpu`).

use std::sync::OnceLock;

use bloomlanes_core::{Filter, FilterRef, Keys};
use bloomlanes_gpu::{GpuError, GpuFilter};

use super::{check_out, Backend, Querier};
use crate::error::{Error, Result};

/// The CUDA backend of `bloomlanes-gpu` (device 0).
#[derive(Clone, Debug)]
pub struct Gpu {
    device: String,
}

fn gpu_err(source: GpuError) -> Error {
    Error::Gpu { source }
}

struct GpuQuerier {
    filter: GpuFilter,
}

impl Querier for GpuQuerier {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u64]) -> Result<()> {
        check_out(&keys, out)?;
        self.filter.contains_bitmap(keys, out).map_err(gpu_err)
    }
}

impl Gpu {
    /// The GPU, if one is usable here (else why not). The device is probed once per process.
    pub fn open() -> std::result::Result<Gpu, GpuError> {
        static PROBE: OnceLock<std::result::Result<String, GpuError>> = OnceLock::new();
        PROBE
            .get_or_init(|| bloomlanes_gpu::probe().map(|info| info.name))
            .clone()
            .map(|device| Gpu { device })
    }
}

impl Backend for Gpu {
    fn name(&self) -> String {
        format!("gpu ({})", self.device)
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        let mut g = GpuFilter::upload(filter).map_err(gpu_err)?;
        g.insert(keys).map_err(gpu_err)?;
        // Back into the filter's own words, whose pages are already mapped: a fresh filter's
        // zeroed allocation would be faulted in page by page by the copy (the words are the
        // same either way: the device copy started from them and only gained bits).
        g.download_words(filter.words_mut()).map_err(gpu_err)?;
        filter.set_key_count(g.key_count());
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        let filter = GpuFilter::upload_view(view).map_err(gpu_err)?;
        Ok(Box::new(GpuQuerier { filter }))
    }

    fn batch_size(&self) -> usize {
        usize::MAX
    }
}
