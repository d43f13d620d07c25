//! Bulk operations of the sliding-window filter (`bloomlanes_core::window`).
//!
//! Inserts go into the current generation and rotate at exactly the keys where the core's
//! key-by-key [`WindowMut::insert_hash`] (windows counted in keys) or
//! [`WindowMut::insert_hash_at`] (time windows, one timestamp per key) rotates: the batch is
//! cut at those keys, each run between them is set in one kernel call, and the key at a cut goes
//! through the core's own insert (which rotates first). Lookups test the key's mask against the
//! `g + 1` copies of its block, which lie next to each other.
//!
//! ```
//! use bloomlanes_core::{Keys, Layout, WindowFilter};
//! use bloomlanes_simd::Probe;
//!
//! let probe = Probe::active();
//! let mut w = WindowFilter::for_keys(1000, 4, 0.01, Layout::L8x32).unwrap();
//! let keys: Vec<u64> = (0..5000).collect();
//! probe.insert_window_filter(&mut w, Keys::U64(&keys));
//! let mut found = vec![0u8; 1000];
//! probe.contains_window(&w, Keys::U64(&keys[4000..]), &mut found);
//! assert!(found.iter().all(|&b| b == 1));
//! ```

use bloomlanes_core::window::{generations, window_contains_hash, window_words};
use bloomlanes_core::{FilterKind, Keys, Params, WindowFilter, WindowMut, WindowUnit};

use rayon::prelude::*;

use crate::kind_entry::{hash_into, kind_fns, CHUNK};
use crate::{Probe, PAR_CHUNK};

/// The window kind's unit and span.
fn unit_span(p: &Params) -> (WindowUnit, u64) {
    match p.kind {
        FilterKind::Window { unit, span, .. } => (unit, span),
        _ => unreachable!("a WindowMut is of a window kind"),
    }
}

impl Probe {
    /// Looks up every key in a window filter's interleaved words: `out[i]` is 1 if key `i`'s
    /// bits are all set in one generation, else 0 (the core's `window_contains_hash`).
    ///
    /// # Panics
    /// If `params` is not of a window filter, `words` is not `window_words(params)` long, or
    /// `out.len() != keys.len()`.
    pub fn contains_window_words(
        &self,
        params: &Params,
        words: &[u32],
        keys: Keys<'_>,
        out: &mut [u8],
    ) {
        assert!(
            matches!(params.kind, FilterKind::Window { .. }),
            "not a window filter"
        );
        assert_eq!(words.len() as u64, window_words(params), "window words");
        assert_eq!(out.len(), keys.len(), "one output byte per key");
        let gens = generations(params) as usize;
        let Some(kf) = kind_fns(self.path) else {
            for (i, o) in out.iter_mut().enumerate() {
                *o = u8::from(window_contains_hash(
                    params,
                    words,
                    keys.hash(i, params.seed),
                ));
            }
            return;
        };
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, params.seed, hashes);
            let out = &mut out[start..start + chunk.len()];
            // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel checks
            // the shapes (the word count was checked above).
            unsafe { (kf.window_contains)(*params, gens, words, hashes, out) };
        }
    }

    /// [`Probe::contains_window_words`] of a window filter.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn contains_window(&self, filter: &WindowFilter, keys: Keys<'_>, out: &mut [u8]) {
        self.contains_window_words(filter.params(), filter.words(), keys, out);
    }

    /// [`Probe::contains_window`] into a bitmap: bit `i % 64` of `out[i / 64]` is set if key
    /// `i` may be in the window; bits past the last key are cleared.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn contains_window_bitmap(&self, filter: &WindowFilter, keys: Keys<'_>, out: &mut [u64]) {
        assert_eq!(
            out.len(),
            keys.len().div_ceil(64),
            "one output word per 64 keys"
        );
        let mut bytes = vec![0u8; CHUNK];
        for (c, words) in out.chunks_mut(CHUNK / 64).enumerate() {
            let start = c * CHUNK;
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let bytes = &mut bytes[..chunk.len()];
            self.contains_window(filter, chunk, bytes);
            words.fill(0);
            for (i, &b) in bytes.iter().enumerate() {
                words[i / 64] |= u64::from(b) << (i % 64);
            }
        }
    }

    /// [`Probe::contains_window`] on every core (rayon's current pool), in chunks of 16 Ki keys.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn par_contains_window(&self, filter: &WindowFilter, keys: Keys<'_>, out: &mut [u8]) {
        assert_eq!(out.len(), keys.len(), "one output byte per key");
        out.par_chunks_mut(PAR_CHUNK)
            .enumerate()
            .for_each(|(c, out)| {
                let start = c * PAR_CHUNK;
                self.contains_window(filter, keys.slice(start..start + out.len()), out);
            });
    }

    /// [`Probe::contains_window_bitmap`] on every core (rayon's current pool), in chunks of
    /// 16 Ki keys.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn par_contains_window_bitmap(
        &self,
        filter: &WindowFilter,
        keys: Keys<'_>,
        out: &mut [u64],
    ) {
        assert_eq!(
            out.len(),
            keys.len().div_ceil(64),
            "one output word per 64 keys"
        );
        out.par_chunks_mut(PAR_CHUNK / 64)
            .enumerate()
            .for_each(|(c, out)| {
                let start = c * PAR_CHUNK;
                let end = (start + PAR_CHUNK).min(keys.len());
                self.contains_window_bitmap(filter, keys.slice(start..end), out);
            });
    }

    /// Inserts every key into a window filter, in order, exactly as the core's
    /// [`WindowMut::insert_hash`] key by key: into the current generation, rotating before a
    /// key that finds the current generation full (`span` keys). For a time window this never
    /// rotates (as in the core); give it timestamps with [`Probe::insert_window_at`].
    pub fn insert_window(&self, mut filter: WindowMut<'_>, keys: Keys<'_>) {
        let p = *filter.params();
        let (unit, span) = unit_span(&p);
        let Some(kf) = kind_fns(self.path) else {
            for i in 0..keys.len() {
                filter.insert_hash(keys.hash(i, p.seed));
            }
            return;
        };
        let gens = generations(&p) as usize;
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            let mut i = 0;
            while i < hashes.len() {
                let state = filter.state();
                let run = if unit == WindowUnit::Keys {
                    if state.keys_in_current >= span {
                        filter.rotate();
                        continue;
                    }
                    (span - state.keys_in_current).min((hashes.len() - i) as u64) as usize
                } else {
                    hashes.len() - i
                };
                let (words, state) = filter.parts_mut();
                // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel
                // checks the shapes (a WindowMut holds the words of `p` and a current
                // generation `<= g`).
                unsafe {
                    (kf.window_set)(p, gens, state.current as usize, words, &hashes[i..i + run])
                };
                state.keys_in_current += run as u64;
                i += run;
            }
        }
    }

    /// Inserts every key, seen at `times[i]` nanoseconds, into a window filter, in order,
    /// exactly as the core's [`WindowMut::insert_hash_at`] key by key: a time window rotates
    /// before the first key whose time lies a span or more past the current generation's start
    /// (the first key of a new window starts it); a window counted in keys ignores the times.
    ///
    /// # Panics
    /// If `times.len() != keys.len()`.
    pub fn insert_window_at(&self, mut filter: WindowMut<'_>, keys: Keys<'_>, times: &[u64]) {
        assert_eq!(times.len(), keys.len(), "one timestamp per key");
        let p = *filter.params();
        let (unit, span) = unit_span(&p);
        if unit == WindowUnit::Keys {
            return self.insert_window(filter, keys);
        }
        let Some(kf) = kind_fns(self.path) else {
            for (i, &t) in times.iter().enumerate() {
                filter.insert_hash_at(keys.hash(i, p.seed), t);
            }
            return;
        };
        let gens = generations(&p) as usize;
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            let times = &times[start..start + chunk.len()];
            let mut i = 0;
            while i < hashes.len() {
                let state = filter.state();
                // The core starts the window, and rotates, in its own insert: give it the key
                // that does either, and the kernel the run of keys before it.
                let run = if state.started {
                    times[i..]
                        .iter()
                        .position(|&t| t.saturating_sub(state.current_start) >= span)
                        .unwrap_or(hashes.len() - i)
                } else {
                    0
                };
                if run > 0 {
                    let (words, state) = filter.parts_mut();
                    // SAFETY: as in `insert_window`.
                    unsafe {
                        (kf.window_set)(p, gens, state.current as usize, words, &hashes[i..i + run])
                    };
                    state.keys_in_current += run as u64;
                    i += run;
                }
                if i < hashes.len() {
                    filter.insert_hash_at(hashes[i], times[i]);
                    i += 1;
                }
            }
        }
    }

    /// [`Probe::insert_window`] into an owned window filter, whose key count grows by the
    /// number of keys (as the core's [`WindowFilter::insert`] counts them).
    pub fn insert_window_filter(&self, filter: &mut WindowFilter, keys: Keys<'_>) {
        self.insert_window(filter.as_view_mut(), keys);
        let n = keys.len() as u64;
        filter.set_key_count(filter.key_count().map(|k| k.saturating_add(n)));
    }

    /// [`Probe::insert_window_at`] into an owned window filter, whose key count grows by the
    /// number of keys.
    ///
    /// # Panics
    /// If `times.len() != keys.len()`.
    pub fn insert_window_filter_at(
        &self,
        filter: &mut WindowFilter,
        keys: Keys<'_>,
        times: &[u64],
    ) {
        self.insert_window_at(filter.as_view_mut(), keys, times);
        let n = keys.len() as u64;
        filter.set_key_count(filter.key_count().map(|k| k.saturating_add(n)));
    }
}
