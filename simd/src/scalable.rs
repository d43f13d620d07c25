//! Bulk operations of the scalable filter (`bloomlanes_core::ScalableFilter`): the core manages
//! the chain of stages (when one is full, how the next is sized, the lookup before each insert);
//! each stage is a static filter, so its bulk lookups are the static kernels of [`Probe`].
//!
//! ```
//! use bloomlanes_core::{Keys, Layout, Params, ScalableFilter};
//! use bloomlanes_simd::Probe;
//!
//! let probe = Probe::active();
//! let mut f = ScalableFilter::new(Params::new(Layout::L8x32, 1), 100, 0.01, 2, 0.8).unwrap();
//! let keys: Vec<u64> = (0..10_000).collect();
//! probe.insert_scalable(&mut f, Keys::U64(&keys)).unwrap();
//! assert!(f.stages().len() > 1);
//! let mut found = vec![0u8; keys.len()];
//! probe.contains_scalable(&f, Keys::U64(&keys), &mut found);
//! assert!(found.iter().all(|&b| b == 1));
//! ```

use bloomlanes_core::{Filter, Keys, ScalableFilter, SizingError};

use crate::kind_entry::{hash_into, CHUNK};
use crate::{chunks, Probe};

/// Scratch space of one chunk's lookups in a chain of stages.
struct Lookups {
    hashes: Vec<u64>,
    pending: Vec<u64>,
    at: Vec<u32>,
    hits: Vec<u8>,
}

impl Lookups {
    fn new(keys: usize) -> Lookups {
        let n = CHUNK.min(keys);
        Lookups {
            hashes: vec![0; n],
            pending: Vec::with_capacity(n),
            at: Vec::with_capacity(n),
            hits: vec![0; n],
        }
    }

    /// Hashes `chunk` into `self.hashes` and sets `out[i]` to 1 if some stage may hold key `i`,
    /// else 0. Each stage (newest, largest first) is asked only about the keys no stage has
    /// answered yet.
    fn answer(&mut self, probe: &Probe, stages: &[Filter], chunk: Keys<'_>, out: &mut [u8]) {
        let (pending, at) = (&mut self.pending, &mut self.at);
        let hashes = &mut self.hashes[..chunk.len()];
        let seed = stages[0].seed();
        hash_into(probe, chunk, seed, hashes);
        out.fill(0);
        pending.clear();
        pending.extend_from_slice(hashes);
        at.clear();
        at.extend(0..chunk.len() as u32);
        for stage in stages.iter().rev() {
            if pending.is_empty() {
                break;
            }
            let hits = &mut self.hits[..pending.len()];
            probe.contains(stage.as_view(), Keys::Hashes(pending), hits);
            // Keep the keys this stage did not find, in order. Branch-free: whether a stage
            // finds a key is unpredictable, and a branch on it mispredicted about once per
            // present key. `out[at[j]]` is still 0 (no stage has found key `at[j]` yet) and
            // `hits[j]` is 0 or 1.
            let mut kept = 0;
            for j in 0..pending.len() {
                let hit = hits[j];
                out[at[j] as usize] |= hit;
                pending[kept] = pending[j];
                at[kept] = at[j];
                kept += usize::from(hit == 0);
            }
            pending.truncate(kept);
            at.truncate(kept);
        }
    }
}

impl Probe {
    /// Looks up every key in every stage of a scalable filter: `out[i]` is 1 if some stage may
    /// hold key `i`, else 0 (the core's [`ScalableFilter::contains_hash`]). Keys are hashed
    /// once; each stage (newest, largest first) is asked only about the keys no stage has
    /// answered yet.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn contains_scalable(&self, filter: &ScalableFilter, keys: Keys<'_>, out: &mut [u8]) {
        chunks::check_per_key(out.len(), &keys);
        let mut lookups = Lookups::new(keys.len());
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let out = &mut out[start..start + chunk.len()];
            lookups.answer(self, filter.stages(), chunk, out);
        }
    }

    /// [`Probe::contains_scalable`] into a bitmap: bit `i % 64` of `out[i / 64]` is set if key
    /// `i` may be present; bits past the last key are cleared.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn contains_scalable_bitmap(&self, f: &ScalableFilter, keys: Keys<'_>, out: &mut [u64]) {
        chunks::bits_from_bytes(keys, out, |k, o| self.contains_scalable(f, k, o));
    }

    /// Inserts every key into a scalable filter, in order, exactly as the core's
    /// [`ScalableFilter::insert_hash`] key by key: each chunk of keys is hashed and looked up in
    /// every stage in bulk, and only the keys no stage holds go on, in order, to the core's
    /// [`ScalableFilter::insert_hash_unless_held_from`], which asks the stage that was last
    /// before the chunk (and any stage added since) again, since the chunk's own keys may have
    /// filled it, before it inserts (adding the next stage when the last is full). Repeated
    /// keys, the common case of logs and captures, cost a bulk lookup each.
    ///
    /// # Errors
    /// When the next stage would exceed the largest filter ([`SizingError`]); the keys before
    /// that point are inserted, as with the core's key-by-key inserts.
    pub fn insert_scalable(
        &self,
        filter: &mut ScalableFilter,
        keys: Keys<'_>,
    ) -> Result<(), SizingError> {
        let mut lookups = Lookups::new(keys.len());
        let mut held = vec![0u8; lookups.hashes.len()];
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let held = &mut held[..chunk.len()];
            lookups.answer(self, filter.stages(), chunk, held);
            // The stages before this one are full: no key of the chunk goes into them.
            let last = filter.stages().len() - 1;
            for (&hash, &h) in lookups.hashes.iter().zip(held.iter()) {
                if h == 0 {
                    filter.insert_hash_unless_held_from(hash, last)?;
                }
            }
        }
        Ok(())
    }
}
