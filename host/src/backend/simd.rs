//! The SIMD paths of `bloomlanes-simd`, on one core or on every core.

use bloomlanes_core::{Filter, FilterRef, Keys};
use bloomlanes_simd::{Probe, SimdPath};

use super::{check_out, Backend, Querier};
use crate::error::Result;

/// A SIMD path of `bloomlanes-simd`, on one core or on every core. The all-core insert splits the
/// filter into disjoint block ranges (no atomics) and falls back to one core for small filters
/// and batches, where splitting does not pay.
#[derive(Clone, Copy, Debug)]
pub struct Simd {
    probe: Probe,
    parallel: bool,
}

impl Simd {
    /// The best path of this CPU (or `BLOOMLANES_SIMD`), on every core.
    pub fn active() -> Simd {
        Simd {
            probe: Probe::active(),
            parallel: true,
        }
    }

    /// A given path, if this CPU has it; `parallel` spreads inserts and probes over every core.
    pub fn new(path: SimdPath, parallel: bool) -> Option<Simd> {
        Probe::new(path).map(|probe| Simd { probe, parallel })
    }

    /// Every vector path this CPU supports, on one core each (the scalar path excluded).
    pub fn single_core_paths() -> Vec<Simd> {
        bloomlanes_simd::available_paths()
            .into_iter()
            .filter(|&p| p != SimdPath::Scalar)
            .filter_map(|p| Simd::new(p, false))
            .collect()
    }
}

struct SimdQuerier<'a> {
    simd: Simd,
    view: FilterRef<'a, u32>,
}

impl Querier for SimdQuerier<'_> {
    fn contains(&mut self, keys: Keys<'_>, out: &mut [u64]) -> Result<()> {
        check_out(&keys, out)?;
        if self.simd.parallel {
            self.simd.probe.par_contains_bitmap(self.view, keys, out);
        } else {
            self.simd.probe.contains_bitmap(self.view, keys, out);
        }
        Ok(())
    }
}

impl Backend for Simd {
    fn name(&self) -> String {
        let path = self.probe.path().name();
        if self.parallel {
            format!("simd-{path} (all cores)")
        } else {
            format!("simd-{path}")
        }
    }

    fn insert(&self, filter: &mut Filter, keys: Keys<'_>) -> Result<()> {
        if self.parallel {
            self.probe.par_insert(filter.as_view_mut(), keys);
        } else {
            self.probe.insert(filter.as_view_mut(), keys);
        }
        filter.add_key_count(keys.len() as u64);
        Ok(())
    }

    fn querier<'a>(&'a self, view: FilterRef<'a, u32>) -> Result<Box<dyn Querier + 'a>> {
        Ok(Box::new(SimdQuerier { simd: *self, view }))
    }

    fn simd_probe(&self) -> Option<(Probe, bool)> {
        Some((self.probe, self.parallel))
    }
}
