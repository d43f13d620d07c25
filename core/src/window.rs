//! The sliding-window filter's reference path over borrowed words (no allocator).
//!
//! `g + 1` generations of the static image, interleaved by block: block `b` of generation `i` is
//! the `(b × (g + 1) + i)`-th block of storage, so that a lookup reads the `g + 1` copies of its
//! block from consecutive memory. A key goes into the current generation; once the current
//! generation holds `span` keys (or covers `span` nanoseconds) the oldest generation is cleared
//! and becomes the current one. A key is found if all its bits are set in one generation, so
//! the last `g × span` keys (or nanoseconds) are always found, and keys up to one generation
//! older may be.
//!
//! Why generations rather than age-partitioned filters (Shtul, Baquero and Almeida, 2020): at the
//! same false-positive rate and the same slack (one generation), rotating generations need fewer
//! bits per key of the window (about 18.4 bits at 1 % for split-block generations with g = 4,
//! against about 27.6 for the best age-partitioned filter with slack 1/8; see BENCHMARKS.md), and
//! each generation is a plain split-block image, so every static kernel applies to it.

use crate::kind::{FilterKind, WindowUnit};
use crate::layout::{block_index, block_mask, Layout};
use crate::params::Params;

/// Where a window stands: which generation is current and how full it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WindowState {
    /// Index of the current generation, `0 ..= g`.
    pub current: u16,
    /// Keys inserted into the current generation.
    pub keys_in_current: u64,
    /// Start of the current generation (nanoseconds; time windows only).
    pub current_start: u64,
    /// Whether a timestamp was seen (time windows start at the first key's timestamp).
    pub started: bool,
}

/// The fields of a [`FilterKind::Window`]: `generations` (`g`) of `span` keys or nanoseconds
/// each. One place that takes them out of a kind and checks them, for every backend's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowKind {
    /// Generations `g` that make up the window.
    pub generations: u16,
    /// What a generation's span counts.
    pub unit: WindowUnit,
    /// Keys (or nanoseconds) per generation.
    pub span: u64,
}

impl WindowKind {
    /// The window fields of `kind`, or `None` for another kind.
    pub const fn of(kind: FilterKind) -> Option<WindowKind> {
        match kind {
            FilterKind::Window {
                generations,
                unit,
                span,
            } => Some(WindowKind {
                generations,
                unit,
                span,
            }),
            _ => None,
        }
    }

    /// Whether a window can be made of them: at least one generation and a span of at least 1.
    pub const fn is_usable(&self) -> bool {
        self.generations > 0 && self.span > 0
    }
}

/// The generations of a window filter with `params`: `g + 1`.
pub const fn generations(params: &Params) -> u64 {
    match params.kind {
        FilterKind::Window { generations, .. } => generations as u64 + 1,
        _ => 1,
    }
}

/// The 32-bit words of a window filter's storage: `(g + 1) × z × L × W / 32`.
pub const fn window_words(params: &Params) -> u64 {
    generations(params) * params.u32_len()
}

/// A mutable window filter over borrowed words.
#[derive(Debug)]
pub struct WindowMut<'a> {
    params: Params,
    gens: u64,
    unit: WindowUnit,
    span: u64,
    words: &'a mut [u32],
    state: &'a mut WindowState,
}

/// Why borrowed words cannot be viewed as a window filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WindowShapeError {
    /// The parameters are not of a window filter (or have 0 generations or a span of 0).
    NotWindow,
    /// The words are not `(g + 1) × z × L × W / 32`.
    Length,
    /// The state names a generation past `g`.
    State,
}

messages!(WindowShapeError {
    NotWindow => "the parameters are not of a window filter",
    Length => "the words are not the length the parameters need",
    State => "the current generation is out of range",
});

/// Whether all bits of `hash`'s mask are set in the `per`-word block at `words[off..]`.
#[inline(always)]
fn block_has(words: &[u32], off: usize, mask: &[u32; 32], per: usize) -> bool {
    words[off..off + per]
        .iter()
        .zip(&mask[..per])
        .all(|(w, m)| w & m == *m)
}

/// Whether the key with `hash` is in one of the generations of the window words.
#[inline]
pub fn window_contains_hash(params: &Params, words: &[u32], hash: u64) -> bool {
    let (layout, per, gens) = (
        params.layout,
        params.layout.block_u32s(),
        generations(params),
    );
    let mask = block_mask(layout, hash);
    let base = block_index(hash, params.blocks) as usize * gens as usize * per;
    (0..gens as usize).any(|g| block_has(words, base + g * per, &mask, per))
}

impl<'a> WindowMut<'a> {
    /// Views the words and state of a window filter with `params`.
    pub fn new(
        params: Params,
        words: &'a mut [u32],
        state: &'a mut WindowState,
    ) -> Result<Self, WindowShapeError> {
        let window = WindowKind::of(params.kind)
            .filter(WindowKind::is_usable)
            .ok_or(WindowShapeError::NotWindow)?;
        if words.len() as u64 != window_words(&params) {
            return Err(WindowShapeError::Length);
        }
        if state.current > window.generations {
            return Err(WindowShapeError::State);
        }
        Ok(WindowMut {
            params,
            gens: u64::from(window.generations) + 1,
            unit: window.unit,
            span: window.span,
            words,
            state,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The state (current generation and its fill).
    pub fn state(&self) -> WindowState {
        *self.state
    }

    /// The interleaved storage words and the rotation state, for a bulk backend that sets bits
    /// in the current generation itself (it must count the keys it sets in
    /// `keys_in_current`, and rotate with [`WindowMut::rotate`] exactly where
    /// [`WindowMut::insert_hash`] would).
    pub fn parts_mut(&mut self) -> (&mut [u32], &mut WindowState) {
        (self.words, self.state)
    }

    /// Whether the key with `hash` is in one of the generations.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        window_contains_hash(&self.params, self.words, hash)
    }

    /// Clears the oldest generation and makes it the current one.
    pub fn rotate(&mut self) {
        let per = self.params.layout.block_u32s();
        let next = (u64::from(self.state.current) + 1) % self.gens;
        let stride = self.gens as usize * per;
        let first = next as usize * per;
        for block in self.words[first..].chunks_mut(stride) {
            block[..per].fill(0);
        }
        self.state.current = next as u16;
        self.state.keys_in_current = 0;
    }

    fn set(&mut self, hash: u64) {
        let layout: Layout = self.params.layout;
        let per = layout.block_u32s();
        let mask = block_mask(layout, hash);
        let off = (block_index(hash, self.params.blocks) as usize * self.gens as usize
            + self.state.current as usize)
            * per;
        for (w, m) in self.words[off..off + per].iter_mut().zip(&mask[..per]) {
            *w |= m;
        }
        self.state.keys_in_current = self.state.keys_in_current.saturating_add(1);
    }

    /// Inserts a key of a window counted in keys: rotates first if the current generation is
    /// full. (For a time window, use [`WindowMut::insert_hash_at`].)
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        if self.unit == WindowUnit::Keys && self.state.keys_in_current >= self.span {
            self.rotate();
        }
        self.set(hash);
    }

    /// Inserts a key seen at `time` (nanoseconds) into a time window: first rotates once per
    /// generation span that `time` lies past the current generation's start (at most `g + 1`
    /// times: after that every generation is empty). A time earlier than the current
    /// generation's start goes into the current generation. For a window counted in keys the
    /// time is ignored.
    pub fn insert_hash_at(&mut self, hash: u64, time: u64) {
        if self.unit == WindowUnit::Keys {
            return self.insert_hash(hash);
        }
        if !self.state.started {
            self.state.started = true;
            self.state.current_start = time;
        }
        let behind = time.saturating_sub(self.state.current_start) / self.span;
        if behind > 0 {
            for _ in 0..behind.min(self.gens) {
                self.rotate();
            }
            self.state.current_start = self
                .state
                .current_start
                .saturating_add(behind.saturating_mul(self.span));
        }
        self.set(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_needs_a_generation_and_a_span() {
        let kind = |generations, span| FilterKind::Window {
            generations,
            unit: WindowUnit::Keys,
            span,
        };
        let w = WindowKind::of(kind(3, 10)).unwrap();
        assert_eq!((w.generations, w.unit, w.span), (3, WindowUnit::Keys, 10));
        assert!(w.is_usable());
        assert_eq!(WindowKind::of(FilterKind::Static), None);
        let mut state = WindowState::default();
        for (g, span) in [(0, 10), (3, 0)] {
            assert!(!WindowKind::of(kind(g, span)).unwrap().is_usable());
            let params = Params::new(Layout::L8x32, 1).with_kind(kind(g, span));
            let mut words = [0u32; 64];
            let got = WindowMut::new(params, &mut words, &mut state).unwrap_err();
            assert_eq!(
                got,
                WindowShapeError::NotWindow,
                "{g} generations, span {span}"
            );
        }
    }
}
