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
use bloomlanes_core::{FilterKind, Keys, Params, WindowFilter, WindowKind, WindowMut, WindowUnit};

use crate::kind_entry::{hash_into, kind_fns, CHUNK};
use crate::{chunks, Probe};

/// The window kind's unit and span.
fn unit_span(p: &Params) -> (WindowUnit, u64) {
    let w = WindowKind::of(p.kind).expect("a WindowMut is of a window kind");
    (w.unit, w.span)
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
        chunks::check_per_key(out.len(), &keys);
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
        chunks::bits_from_bytes(keys, out, |k, o| self.contains_window(filter, k, o));
    }

    /// [`Probe::contains_window`] on every core (rayon's current pool), in chunks of 16 Ki keys.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn par_contains_window(&self, filter: &WindowFilter, keys: Keys<'_>, out: &mut [u8]) {
        chunks::check_per_key(out.len(), &keys);
        chunks::par_chunks(keys, out, 1, |k, o| self.contains_window(filter, k, o));
    }

    /// [`Probe::contains_window_bitmap`] on every core (rayon's current pool), in chunks of
    /// 16 Ki keys.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn par_contains_window_bitmap(&self, f: &WindowFilter, keys: Keys<'_>, out: &mut [u64]) {
        chunks::check_bitmap(out, &keys);
        chunks::par_chunks(keys, out, 64, |k, o| self.contains_window_bitmap(f, k, o));
    }

    /// Inserts every key into a window filter, in order, exactly as the core's
    /// [`WindowMut::insert_hash`] key by key: into the current generation, rotating before a
    /// key that finds the current generation full (`span` keys). For a time window this never
    /// rotates (as in the core); give it timestamps with [`Probe::insert_window_at`].
    pub fn insert_window(&self, filter: WindowMut<'_>, keys: Keys<'_>) {
        self.insert_window_on(filter, keys, None);
    }

    /// Inserts every key, seen at `times[i]` nanoseconds, into a window filter, in order,
    /// exactly as the core's [`WindowMut::insert_hash_at`] key by key: a time window rotates
    /// before the first key whose time lies a span or more past the current generation's start
    /// (the first key of a new window starts it); a window counted in keys ignores the times.
    ///
    /// # Panics
    /// If `times.len() != keys.len()`.
    pub fn insert_window_at(&self, filter: WindowMut<'_>, keys: Keys<'_>, times: &[u64]) {
        assert_eq!(times.len(), keys.len(), "one timestamp per key");
        self.insert_window_on(filter, keys, Some(times));
    }

    /// [`Probe::insert_window`], or with `times` [`Probe::insert_window_at`]: the batch is cut
    /// where the core's insert rotates (or starts a time window), the runs between the cuts
    /// are set by the kernel, and the keys at the cuts go through the core's own insert.
    fn insert_window_on(&self, mut filter: WindowMut<'_>, keys: Keys<'_>, times: Option<&[u64]>) {
        let p = *filter.params();
        let (unit, span) = unit_span(&p);
        let times = times.filter(|_| unit != WindowUnit::Keys);
        let Some(kf) = kind_fns(self.path) else {
            for i in 0..keys.len() {
                let h = keys.hash(i, p.seed);
                match times {
                    Some(t) => filter.insert_hash_at(h, t[i]),
                    None => filter.insert_hash(h),
                }
            }
            return;
        };
        let gens = generations(&p) as usize;
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            let times = times.map(|t| &t[start..start + chunk.len()]);
            let (n, mut i) = (hashes.len(), 0);
            while i < n {
                let state = filter.state();
                let run = match times {
                    None if unit == WindowUnit::Keys && state.keys_in_current >= span => {
                        filter.rotate();
                        continue;
                    }
                    None if unit == WindowUnit::Keys => {
                        (span - state.keys_in_current).min((n - i) as u64) as usize
                    }
                    None => n - i,
                    // The core starts the window, and rotates, in its own insert: give it the
                    // key that does either, and the kernel the run of keys before it.
                    Some(t) if state.started => t[i..]
                        .iter()
                        .position(|&t| t.saturating_sub(state.current_start) >= span)
                        .unwrap_or(n - i),
                    Some(_) => 0,
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
                if let Some(t) = times.filter(|_| i < n) {
                    filter.insert_hash_at(hashes[i], t[i]);
                    i += 1;
                }
            }
        }
    }

    /// [`Probe::insert_window`] into an owned window filter, whose key count grows by the
    /// number of keys (as the core's [`WindowFilter::insert`] counts them).
    pub fn insert_window_filter(&self, filter: &mut WindowFilter, keys: Keys<'_>) {
        self.insert_window(filter.as_view_mut(), keys);
        filter.set_key_count(crate::cells::grown(filter.key_count(), keys.len(), 0));
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
        filter.set_key_count(crate::cells::grown(filter.key_count(), keys.len(), 0));
    }
}
