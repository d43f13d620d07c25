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

use bloomlanes_core::{block_index, block_mask, Filter, Keys, ScalableFilter, SizingError};

use crate::cell_kernel::{prefetch_bytes, PREFETCH_MIN_BYTES};
use crate::kind_entry::{hash_into, CHUNK};
use crate::shape::{with_shape, Shape};
use crate::{chunks, Probe};

/// How many keys ahead of its test-and-set a key's block is prefetched in a stage larger than
/// L2.
const LAG: usize = 16;

/// Scratch space of one chunk's lookups in a chain of stages: the chunk's hashes, the keys no
/// stage asked so far has found (`pending`, in order) and their positions in the chunk (`at`).
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

    /// Hashes `chunk` into `self.hashes` and makes every key pending; clears `out`.
    fn start(&mut self, probe: &Probe, seed: u64, chunk: Keys<'_>, out: &mut [u8]) {
        let hashes = &mut self.hashes[..chunk.len()];
        hash_into(probe, chunk, seed, hashes);
        out.fill(0);
        self.pending.clear();
        self.pending.extend_from_slice(hashes);
        self.at.clear();
        self.at.extend(0..chunk.len() as u32);
    }

    /// Asks `stages` (newest, largest first) about the pending keys: sets `out[i]` to 1 for
    /// each key `i` one of them may hold, and keeps the others pending, in order.
    fn drop_found(&mut self, probe: &Probe, stages: &[Filter], out: &mut [u8]) {
        let (pending, at) = (&mut self.pending, &mut self.at);
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

    /// Test-and-sets the pending keys, in order, into `stage`, which takes `room` more keys,
    /// until it has taken them; the keys it takes (those with a clear bit, as the core's
    /// insert) are counted, and the ones handled leave `pending`.
    fn fill(&mut self, stage: &mut Filter, room: u64) {
        let (blocks, layout) = (stage.blocks(), stage.layout());
        let (used, added) = with_shape!(layout, S => {
            test_and_set::<S>(stage.words_mut(), blocks, &self.pending, room)
        });
        stage.add_key_count(added);
        self.pending.drain(..used);
        self.at.drain(..used);
    }
}

/// The core's insert into one stage, key after key: sets each key's bits in `words` (`blocks`
/// blocks of `S`) and counts the key if one of them was clear, until `room` keys were counted.
/// Returns how many keys were handled and how many of them counted. The block of the key
/// [`LAG`] ahead is prefetched when the stage is larger than L2.
fn test_and_set<S: Shape>(words: &mut [u32], blocks: u32, hashes: &[u64], room: u64) -> (usize, u64) {
    let per = S::LAYOUT.block_u32s();
    let far = words.len() * 4 >= PREFETCH_MIN_BYTES;
    let mut added = 0;
    for (i, &hash) in hashes.iter().enumerate() {
        if added == room {
            return (i, added);
        }
        if far {
            if let Some(&ahead) = hashes.get(i + LAG) {
                let b = block_index(ahead, blocks) as usize;
                // A hint: never faults, and the address arithmetic wraps.
                prefetch_bytes(words.as_ptr().wrapping_add(b * per), per * 4);
            }
        }
        let b = block_index(hash, blocks) as usize;
        let mask = block_mask(S::LAYOUT, hash);
        let mut clear = 0;
        for (w, &m) in words[b * per..(b + 1) * per].iter_mut().zip(&mask) {
            clear |= m & !*w;
            *w |= m;
        }
        added += u64::from(clear != 0);
    }
    (hashes.len(), added)
}

impl Probe {
    /// Looks up every key in every stage of a scalable filter: `out[i]` is 1 if some stage may
    /// hold key `i`, else 0 (the core's [`ScalableFilter::contains_hash`]). Keys are hashed
    /// once and each stage (newest, largest first) is asked only about the keys no stage has
    /// answered yet.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn contains_scalable(&self, filter: &ScalableFilter, keys: Keys<'_>, out: &mut [u8]) {
        chunks::check_per_key(out.len(), &keys);
        let mut lookups = Lookups::new(keys.len());
        let seed = filter.params().seed;
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let out = &mut out[start..start + chunk.len()];
            lookups.start(self, seed, chunk, out);
            lookups.drop_found(self, filter.stages(), out);
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
    /// [`ScalableFilter::insert_hash`] key by key (a key some stage may hold is neither inserted
    /// nor counted). Each chunk of keys is hashed once. The stages before the last are full and
    /// never change, so the chunk is looked up in them in bulk; so is the last stage when the
    /// chunk starts, as a first sieve (its bits are only ever set, so a key it holds then is
    /// held at its turn too). The keys left are test-and-set into the last stage in order,
    /// which answers the lookup and inserts in one pass and sees the chunk's own earlier keys;
    /// when the stage is full, the rest are looked up in it in bulk and the core adds the next
    /// stage ([`ScalableFilter::open_stage`]) for them.
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
        let seed = filter.params().seed;
        let sieve = std::env::var_os("SCAL_SIEVE").is_some();
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let held = &mut held[..chunk.len()];
            lookups.start(self, seed, chunk, held);
            let stages = filter.stages();
            let last = stages.len() - 1;
            let full = stages[last].key_count().unwrap_or(0) >= filter.stage_capacity(last);
            if sieve || full {
                lookups.drop_found(self, &stages[last..], held);
            }
            lookups.drop_found(self, &stages[..last], held);
            while !lookups.pending.is_empty() {
                let (stage, room) = filter.open_stage()?;
                lookups.fill(stage, room);
                // Keys are left only when the stage is full: they are looked up in it (as it is
                // now), then the next stage is added for them.
                let stages = filter.stages();
                lookups.drop_found(self, &stages[stages.len() - 1..], held);
            }
        }
        Ok(())
    }
}
