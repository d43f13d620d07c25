//! Owning sliding-window filters (behind `alloc`): membership over the last N keys or T
//! nanoseconds.

use alloc::vec;
use alloc::vec::Vec;

use crate::format::{self, FormatError};
use crate::key::Key;
use crate::kind::{FilterKind, WindowUnit};
use crate::kind_meta;
use crate::layout::Layout;
use crate::math::{self, SizingError};
use crate::params::Params;
use crate::reference::FilterRef;
use crate::stats::Stats;
use crate::storage::Words;
use crate::window::{self, window_words, WindowKind, WindowMut, WindowShapeError, WindowState};
use crate::write_file::{FileParts, WriteFile};

/// Generations up to which [`WindowFilter::fpr_from_bits`] is exact (2^g − 1 sets of
/// generations per block); past them it is an upper bound.
pub const EXACT_GENERATIONS: usize = 10;

impl WriteFile for WindowFilter {
    fn file_parts(&self) -> FileParts<'_> {
        let meta = kind_meta::encode_meta(self.params.kind, Some(&self.state));
        let words = alloc::vec![self.words()];
        FileParts::new(self.params, self.keys, meta.to_vec(), words)
    }
}

/// A sliding-window filter: `g + 1` rotating generations of split-block images (see
/// [`window`]).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFilter {
    params: Params,
    keys: Option<u64>,
    state: WindowState,
    words: Words,
}

impl WindowFilter {
    /// An empty window filter with these parameters, or `None` if `params.kind` is not a window
    /// with at least one generation and a positive span.
    pub fn new(params: Params) -> Option<WindowFilter> {
        WindowFilter::with(params, |n| Some(Words::zeroed(n)))
    }

    /// [`WindowFilter::new`], or `None` also when its words cannot be allocated (instead of
    /// aborting the process).
    pub fn try_new(params: Params) -> Option<WindowFilter> {
        WindowFilter::with(params, Words::try_zeroed)
    }

    /// An empty window filter with its words from `zeroed`.
    fn with(params: Params, zeroed: impl Fn(u64) -> Option<Words>) -> Option<WindowFilter> {
        WindowKind::of(params.kind).filter(WindowKind::is_usable)?;
        let params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        Some(WindowFilter {
            params,
            keys: Some(0),
            state: WindowState::default(),
            words: zeroed(window_words(&params))?,
        })
    }

    /// A window filter from its parts, e.g. copied back from a bulk backend: the parameters, the
    /// interleaved storage words, the rotation state and the key count. Refused unless the
    /// parameters are of a window, the words are `(g + 1) × z × L × W / 32` and the current
    /// generation is at most `g`.
    pub fn from_parts(
        params: Params,
        words: &[u32],
        state: WindowState,
        keys: Option<u64>,
    ) -> Result<WindowFilter, WindowShapeError> {
        let mut w = WindowFilter::new(params).ok_or(WindowShapeError::NotWindow)?;
        if words.len() != w.words.as_slice().len() {
            return Err(WindowShapeError::Length);
        }
        if u64::from(state.current) >= window::generations(&w.params) {
            return Err(WindowShapeError::State);
        }
        w.words.as_mut_slice().copy_from_slice(words);
        w.state = state;
        w.keys = keys;
        Ok(w)
    }

    /// A window over the last `window` keys in `generations` generations, sized so that its
    /// worst-case false-positive rate is at most `rate` (see
    /// [`math::window_false_positive_rate`]).
    pub fn for_keys(
        window: u64,
        generations: u16,
        rate: f64,
        layout: Layout,
    ) -> Result<WindowFilter, SizingError> {
        let g = generations.max(1);
        let span = window.max(1).div_ceil(u64::from(g));
        let blocks = math::blocks_for_window_rate(layout, span, g, rate)?;
        Ok(
            WindowFilter::new(Params::new(layout, blocks).with_kind(FilterKind::Window {
                generations: g,
                unit: WindowUnit::Keys,
                span,
            }))
            .expect("a window kind"),
        )
    }

    /// A window over the last `window` keys that meets `rate` in the fewest bits: the
    /// generations and layout of [`math::smallest_window`] over every layout.
    pub fn smallest_for_keys(window: u64, rate: f64) -> Result<WindowFilter, SizingError> {
        let shape = math::smallest_window(window, rate, &Layout::ALL)?;
        let span = window.max(1).div_ceil(u64::from(shape.generations));
        Ok(
            WindowFilter::new(Params::new(shape.layout, shape.blocks).with_kind(
                FilterKind::Window {
                    generations: shape.generations,
                    unit: WindowUnit::Keys,
                    span,
                },
            ))
            .expect("a window kind"),
        )
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The rotation state.
    pub fn state(&self) -> WindowState {
        self.state
    }

    /// Keys inserted since the filter was made, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }

    /// Records the key count (e.g. after a bulk insert by another backend), or forgets it.
    pub fn set_key_count(&mut self, keys: Option<u64>) {
        self.keys = keys;
    }

    /// The storage words: `g + 1` generations interleaved by block.
    pub fn words(&self) -> &[u32] {
        self.words.as_slice()
    }

    /// A mutable view, for the bulk backends (the key count is not updated).
    pub fn as_view_mut(&mut self) -> WindowMut<'_> {
        WindowMut::new(self.params, self.words.as_mut_slice(), &mut self.state)
            .expect("a WindowFilter has the shape of its parameters")
    }

    /// Inserts a key by its hash (a window counted in keys; a time window takes
    /// [`WindowFilter::insert_hash_at`]).
    pub fn insert_hash(&mut self, hash: u64) {
        self.as_view_mut().insert_hash(hash);
        self.keys = self.keys.map(|k| k.saturating_add(1));
    }

    /// Inserts a key.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash_key(key));
    }

    /// Inserts a key by its hash, seen at `nanos` (time windows rotate by it).
    pub fn insert_hash_at(&mut self, hash: u64, nanos: u64) {
        self.as_view_mut().insert_hash_at(hash, nanos);
        self.keys = self.keys.map(|k| k.saturating_add(1));
    }

    /// Inserts a key seen at `nanos`.
    pub fn insert_at<K: Key + ?Sized>(&mut self, key: &K, nanos: u64) {
        self.insert_hash_at(self.params.hash_key(key), nanos);
    }

    /// Whether the key with `hash` may be in the window.
    pub fn contains_hash(&self, hash: u64) -> bool {
        window::window_contains_hash(&self.params, self.words.as_slice(), hash)
    }

    /// Whether a key may be in the window.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash_key(key))
    }

    /// The blocks of storage, each the `g + 1` generations' copies of one block.
    fn block_groups(&self) -> core::slice::ChunksExact<'_, u32> {
        let per = window::generations(&self.params) as usize * self.params.layout.block_u32s();
        self.words().chunks_exact(per)
    }

    /// Set bits of each generation, in storage order (slot 0 first).
    pub fn generation_ones(&self) -> Vec<u64> {
        let per = self.params.layout.block_u32s();
        let mut ones = vec![0u64; window::generations(&self.params) as usize];
        for group in self.block_groups() {
            for (g, words) in group.chunks_exact(per).enumerate() {
                ones[g] += words.iter().map(|x| u64::from(x.count_ones())).sum::<u64>();
            }
        }
        ones
    }

    /// Distinct keys estimated in each generation from its set bits, in storage order (`None`
    /// where every bit is set).
    pub fn generation_keys(&self) -> Vec<Option<f64>> {
        let p = &self.params;
        self.generation_ones()
            .into_iter()
            .map(|n| math::estimate_keys(p.layout, p.blocks, n))
            .collect()
    }

    /// The false-positive rate of the window's bits for a random absent key: a key is found
    /// when one generation has all its bits, and it probes the same block and bits in each.
    /// Per block, by inclusion–exclusion over the sets `S` of generations,
    /// `Σ_S (−1)^{|S|+1} Π_lanes (bits set in every generation of S / W)`, averaged over the
    /// blocks: exact. Past `EXACT_GENERATIONS` (10) generations (2^g sets) each block gives the
    /// upper bound `1 − Π_g (1 − p_g)` ([`Stats::any_of`]) instead.
    pub fn fpr_from_bits(&self) -> f64 {
        let layout = self.params.layout;
        let one_block = Params::new(layout, 1);
        let per = layout.block_u32s();
        let gens = window::generations(&self.params) as usize;
        let rate = |words: &[u32]| {
            FilterRef::new(one_block, words)
                .expect("one block of the layout")
                .fpr_from_bits()
        };
        let mut and = vec![0u32; per];
        let total: f64 = self
            .block_groups()
            .map(|group| {
                if gens > EXACT_GENERATIONS {
                    return Stats::any_of(group.chunks_exact(per).map(rate));
                }
                (1u32..1 << gens)
                    .map(|set| {
                        and.fill(u32::MAX);
                        for (g, words) in group.chunks_exact(per).enumerate() {
                            if set >> g & 1 == 1 {
                                and.iter_mut().zip(words).for_each(|(a, w)| *a &= w);
                            }
                        }
                        let sign = if set.count_ones() % 2 == 1 { 1.0 } else { -1.0 };
                        sign * rate(&and)
                    })
                    .sum::<f64>()
            })
            .sum();
        (total / f64::from(self.params.blocks)).clamp(0.0, 1.0)
    }

    /// Statistics over all generations: the distinct keys held (the generations' estimates
    /// summed) and the rate of the window's bits ([`WindowFilter::fpr_from_bits`]).
    pub fn stats(&self) -> Stats {
        let p = self.params;
        let ones = self.generation_ones();
        let mut s = Stats::new(p, self.keys, ones.iter().sum());
        let gens = window::generations(&p);
        s.bytes *= gens;
        s.fill_ratio /= gens as f64;
        let (estimate, error) = Stats::sum_distinct(ones.iter().map(|&n| {
            let e = math::estimate_keys(p.layout, p.blocks, n);
            (e, e.map(|e| math::estimate_keys_standard_error(p.layout, p.blocks, e)))
        }));
        s.set_distinct(estimate, error);
        s.with_fpr_from_bits(self.fpr_from_bits())
    }

    /// The whole file: header, kind metadata (with the rotation state), the generations.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole window filter file; any fault is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<WindowFilter, FormatError> {
        let (header, payload) =
            format::parse_kind(file, "window", |k| matches!(k, FilterKind::Window { .. }))?;
        let p = header.params;
        let at = header.meta_len as usize;
        let len = window_words(&p) as usize * 4;
        Ok(WindowFilter {
            params: p,
            keys: header.keys,
            state: kind_meta::decode_window_state(&payload[..at]),
            words: Words::from_le_bytes(&payload[at..at + len]),
        })
    }
}
