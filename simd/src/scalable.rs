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

use bloomlanes_core::{block_index, block_mask, Filter, Keys, Params, ScalableFilter, SizingError};

use crate::kind_entry::{hash_into, kind_fns, CHUNK};
use crate::prefetch::Prefetch;
use crate::shape::{with_shape, Shape};
use crate::vector::{self, Isa};
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

    /// Hashes `chunk` into `self.hashes` and makes every key pending; with `ANSWER`, numbers
    /// them in `at` and clears `out`, their answers.
    fn start<const ANSWER: bool>(
        &mut self,
        probe: &Probe,
        seed: u64,
        chunk: Keys<'_>,
        out: &mut [u8],
    ) {
        let hashes = &mut self.hashes[..chunk.len()];
        hash_into(probe, chunk, seed, hashes);
        self.pending.clear();
        self.pending.extend_from_slice(hashes);
        if ANSWER {
            out.fill(0);
            self.at.clear();
            self.at.extend(0..chunk.len() as u32);
        }
    }

    /// Asks `stages` (newest, largest first) about the pending keys and keeps those none of
    /// them may hold pending, in order. With `ANSWER`, sets `out[i]` to 1 for each key `i`
    /// found and keeps `at` beside `pending`; without, `at` and `out` are left alone (an insert
    /// needs only the keys left).
    fn drop_found<const ANSWER: bool>(&mut self, probe: &Probe, stages: &[Filter], out: &mut [u8]) {
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
                pending[kept] = pending[j];
                if ANSWER {
                    out[at[j] as usize] |= hit;
                    at[kept] = at[j];
                }
                kept += usize::from(hit == 0);
            }
            pending.truncate(kept);
            if ANSWER {
                at.truncate(kept);
            }
        }
    }

    /// Test-and-sets the pending keys, in order, into `stage`, which takes `room` more keys,
    /// until it has taken them; the keys it takes (those with a clear bit, as the core's
    /// insert) are counted, and the ones handled leave `pending`.
    fn fill(&mut self, probe: &Probe, stage: &mut Filter, room: u64) {
        let p = *stage.params();
        let mut done = (0, 0);
        match kind_fns(probe.path) {
            // SAFETY: a table from `kind_fns` belongs to a path this CPU runs.
            Some(kf) => unsafe {
                (kf.scalable_set)(p, stage.words_mut(), &self.pending, room, &mut done)
            },
            None => with_shape!(p.layout, S => {
                done = test_and_set::<S>(stage.words_mut(), p.blocks, &self.pending, room, |b, h| {
                    let mut clear = 0;
                    for (w, &m) in b.iter_mut().zip(&block_mask(S::LAYOUT, h)) {
                        clear |= m & !*w;
                        *w |= m;
                    }
                    clear != 0
                })
            }),
        }
        stage.add_key_count(done.1);
        self.pending.drain(..done.0);
    }
}

/// The core's insert into one stage, key after key: `set` sets each key's bits in its block of
/// `words` (`blocks` blocks of `S`) and says whether one was clear; such keys are counted,
/// until `room` were. Returns how many keys were handled and how many of them counted. The
/// block of the key [`LAG`] ahead is prefetched when the stage is larger than L2.
///
/// # Panics
/// If `words` holds fewer than `blocks` blocks.
#[inline(always)]
fn test_and_set<S: Shape>(
    words: &mut [u32],
    blocks: u32,
    hashes: &[u64],
    room: u64,
    mut set: impl FnMut(&mut [u32], u64) -> bool,
) -> (usize, u64) {
    let per = S::LAYOUT.block_u32s();
    assert!(
        words.len() >= blocks as usize * per,
        "a stage of {blocks} blocks"
    );
    let pf = Prefetch::for_bytes(words.len() as u64 * 4);
    let mut added = 0;
    for (i, &hash) in hashes.iter().enumerate() {
        if added == room {
            return (i, added);
        }
        if pf.is_on() {
            if let Some(&ahead) = hashes.get(i + LAG) {
                let b = block_index(ahead, blocks) as usize;
                // A hint: never faults, and the address arithmetic wraps.
                pf.bytes(words.as_ptr().wrapping_add(b * per), per * 4);
            }
        }
        let b = block_index(hash, blocks) as usize;
        added += u64::from(set(&mut words[b * per..(b + 1) * per], hash));
    }
    (hashes.len(), added)
}

/// [`test_and_set`] with `I`'s vectors: sets `done` to how many of `hashes` were handled and
/// how many of them counted, in a stage of `p.blocks` blocks held in `words`.
///
/// # Panics
/// If `words` holds fewer than `p.blocks` blocks.
///
/// # Safety
/// The CPU supports `I`.
#[inline(always)]
pub(crate) unsafe fn set_new<I: Isa>(
    p: Params,
    words: &mut [u32],
    hashes: &[u64],
    room: u64,
    done: &mut (usize, u64),
) {
    with_shape!(p.layout, S => {
        *done = test_and_set::<S>(words, p.blocks, hashes, room, |b, h| {
            // The static kernels' block lookup, then their insert: the block is in L1 for the
            // second, and the mask is a few instructions.
            // SAFETY: `b` is one whole block of S, exclusively borrowed; the CPU supports I
            // (caller).
            unsafe {
                let held = vector::contains::<I, S>(b.as_ptr(), h);
                vector::insert::<I, S>(b.as_mut_ptr(), h);
                !held
            }
        })
    })
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
            lookups.start::<true>(self, seed, chunk, out);
            lookups.drop_found::<true>(self, filter.stages(), out);
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
    /// never change, so the chunk is looked up in them in bulk (newest first, each asked only
    /// about the keys the ones before did not find). The keys left are test-and-set into the
    /// last stage in order, with the path's vectors: one pass that answers the lookup and
    /// inserts, and sees the chunk's own earlier keys. When the stage is full, the keys still
    /// left are looked up in it in bulk and the core adds the next stage
    /// ([`ScalableFilter::open_stage`]) for them. A bulk lookup of the last stage first would
    /// pay for itself only when most keys are in it; measured, it slowed both fresh and
    /// repeated keys.
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
        let seed = filter.params().seed;
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            lookups.start::<false>(self, seed, chunk, &mut []);
            let stages = filter.stages();
            let last = stages.len() - 1;
            // A full last stage is asked too: no key of the chunk goes into it.
            let full = stages[last].key_count().unwrap_or(0) >= filter.stage_capacity(last);
            let closed = last + usize::from(full);
            lookups.drop_found::<false>(self, &stages[..closed], &mut []);
            while !lookups.pending.is_empty() {
                let (stage, room) = filter.open_stage()?;
                lookups.fill(self, stage, room);
                // Keys are left only when the stage is full: they are looked up in it (as it is
                // now), then the next stage is added for them.
                let stages = filter.stages();
                lookups.drop_found::<false>(self, &stages[stages.len() - 1..], &mut []);
            }
        }
        Ok(())
    }
}
