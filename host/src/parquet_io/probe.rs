//! Which files and row groups of a Parquet dataset may hold given keys: the dataset of
//! `bloomlanes-parquet` probed on this library's backends (SIMD, or the GPU for many keys),
//! with the float ±0 / NaN rule applied.

use bloomlanes_core::KeyType;
pub use bloomlanes_parquet::probe::*;

use crate::backend::{self, BackendChoice};
use crate::bulk;
use crate::error::{Error, Result};
use crate::input::KeySet;
use crate::ops::{apply_float_probes, check_key_type};

/// Probing a [`Dataset`] with a batch of keys on a backend.
pub trait ProbeDataset {
    /// Probes `keys` against every row group's filter (one filter in memory at a time) with the
    /// engine `choice` selects. Keys of another byte form than the column's are refused.
    fn probe(&mut self, keys: &KeySet, choice: BackendChoice) -> Result<ProbeResult>;
}

impl ProbeDataset for Dataset {
    fn probe(&mut self, keys: &KeySet, choice: BackendChoice) -> Result<ProbeResult> {
        let key_type: KeyType = self.key_type();
        let key_match = check_key_type(self.first_file(), key_type, keys.key_type())?;
        let engine = backend::select(choice, keys.len())?;
        let groups = self.probe_with::<Error>(keys.len(), &mut |filter| {
            let mut a = bulk::contains(&*engine, filter.as_view(), keys.keys(), &mut |_| {})?;
            apply_float_probes(filter.as_view(), keys.key_type(), keys.keys(), &mut a);
            Ok(a)
        })?;
        Ok(ProbeResult {
            groups,
            backend: engine.name(),
            key_match,
        })
    }
}
