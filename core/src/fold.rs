//! Folding: a filter of `f × z` blocks turned into the filter of the same keys at `z` blocks, so
//! that filters whose block counts differ by a factor (a power of two, most often) still merge.
//!
//! **Why it is exact.** A key with hash `h` selects block `block_index(h, z) = ⌊x z / 2^32⌋` with
//! `x = h >> 32` ([`crate::layout::block_index`]), and in each lane a bit that depends on `lo32(h)`
//! and the layout alone ([`crate::layout::lane_bit`]), never on `z`. For any integer `f ≥ 1`,
//! `⌊⌊x f z / 2^32⌋ / f⌋ = ⌊x f z / (2^32 f)⌋ = ⌊x z / 2^32⌋` (nested floor division), so the key's
//! block among `f z` blocks is one of `f i … f i + f − 1` exactly when its block among `z` blocks
//! is `i`; with `f = 2`: blocks `2i` and `2i + 1` fold into block `i`. Within the block the key
//! touches the same cells at both sizes. Block `i` of the folded filter is therefore the
//! combination, cell by cell at the same place in the block, of blocks `f i … f i + f − 1`, with
//! the kind's combine ([`CellMerge`]): OR for static bits, saturating add for counting counters
//! (`min(min(a, M) + min(b, M), M) = min(a + b, M)`, so saturation is kept exactly), max for
//! spatial classes (every cell is the max of the classes that reached it). The projection image
//! folds by OR, since a sum or max of cells is positive iff one of them is. A fold of a filter of
//! `f z` blocks is byte for byte a fresh build of the same keys at `z` blocks
//! (`core/tests/fold.rs` checks it for every layout and cell kind).
//!
//! Stable filters (whose decay depends on cell positions across the whole filter), window,
//! scalable and retrieval filters do not fold ([`MergeError::Unfoldable`]).

use alloc::vec::Vec;

use crate::cell::CellBits;
use crate::filter::Filter;
use crate::kind::FilterKind;
use crate::params::{MergeError, Params};
use crate::reference::FilterRef;

/// How two cells at the same place combine when filters merge or fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellMerge {
    /// The larger cell: static bits (where it is OR) and spatial classes.
    Max,
    /// The sum, stuck at the cell's maximum: counting counters.
    SaturatingAdd,
}

impl CellMerge {
    /// The combine of `kind`'s cells, or `None` for a kind whose filters do not merge cell by
    /// cell (stable, window, scalable, retrieval).
    pub const fn of(kind: FilterKind) -> Option<CellMerge> {
        match kind {
            FilterKind::Static | FilterKind::Spatial { .. } => Some(CellMerge::Max),
            FilterKind::Counting { .. } => Some(CellMerge::SaturatingAdd),
            _ => None,
        }
    }

    /// Two cells of at most `max` combined.
    #[inline(always)]
    pub const fn apply(self, a: u32, b: u32, max: u32) -> u32 {
        match self {
            CellMerge::Max => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            CellMerge::SaturatingAdd => {
                let s = a + b;
                if s > max {
                    max
                } else {
                    s
                }
            }
        }
    }

    /// Two words of packed cells of width `bits` combined cell by cell (for one-bit cells both
    /// combines are OR).
    #[inline]
    pub fn word(self, a: u32, b: u32, bits: CellBits) -> u32 {
        if bits == CellBits::One {
            return a | b;
        }
        let (c, max) = (bits.bits(), bits.max());
        (0..bits.per_word()).fold(0, |out, i| {
            let s = i * c;
            out | self.apply((a >> s) & max, (b >> s) & max, max) << s
        })
    }

    /// Combines `src` into `dst`, word by word (both arrays of cells of width `bits`, of the
    /// same length).
    pub fn merge_into(self, dst: &mut [u32], src: &[u32], bits: CellBits) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = self.word(*d, *s, bits);
        }
    }
}

/// A filter that merges cell by cell and folds (static, counting, spatial): what
/// [`union_folding`] needs of it.
pub(crate) trait Foldable: Clone {
    /// The parameters.
    fn fold_params(&self) -> &Params;
    /// This filter folded into `blocks` blocks.
    fn fold_to(&self, blocks: u32) -> Result<Self, MergeError>;
    /// Merges `other`, of the same parameters, into this filter.
    fn merge_in(&mut self, other: &Self) -> Result<(), MergeError>;
}

/// [`Foldable`] for each filter type by its own `params`, `folded` and `union_with`.
macro_rules! foldable {
    ($($t:ty),*) => {$(
        impl Foldable for $t {
            fn fold_params(&self) -> &Params {
                <$t>::params(self)
            }
            fn fold_to(&self, blocks: u32) -> Result<$t, MergeError> {
                <$t>::folded(self, blocks)
            }
            fn merge_in(&mut self, other: &$t) -> Result<(), MergeError> {
                <$t>::union_with(self, other)
            }
        }
    )*};
}
foldable!(
    Filter,
    crate::counting_filter::CountingFilter,
    crate::spatial_filter::SpatialFilter
);

/// The union of `a` and `b`, whose block counts divide one another: each folded to the smaller
/// block count (only when it differs), then merged cell by cell; the key type recorded is the
/// one either records ([`Params::merged_key_type`]).
pub(crate) fn union_folding<T: Foldable>(a: &T, b: &T) -> Result<T, MergeError> {
    let blocks = check_mergeable(a.fold_params(), b.fold_params())?;
    let mut out = if a.fold_params().blocks == blocks {
        a.clone()
    } else {
        a.fold_to(blocks)?
    };
    if b.fold_params().blocks == blocks {
        out.merge_in(b)?;
    } else {
        out.merge_in(&b.fold_to(blocks)?)?;
    }
    Ok(out)
}

/// The factor `f` with `from = f × to`, if `to` (at least 1) divides `from`.
pub const fn fold_factor(from: u32, to: u32) -> Option<u32> {
    if to == 0 || from < to || !from.is_multiple_of(to) {
        None
    } else {
        Some(from / to)
    }
}

/// The block count two filters merge at: the smaller, when it divides the larger (a filter of
/// `f z` blocks folds into `z`), else `MergeError::Blocks`.
pub fn merged_blocks(a: u32, b: u32) -> Result<u32, MergeError> {
    let (small, large) = (a.min(b), a.max(b));
    match fold_factor(large, small) {
        Some(_) => Ok(small),
        None => Err(MergeError::Blocks(a, b)),
    }
}

/// Checks that two filters differ at most in block counts that fold into each other, and
/// returns the block count they merge at (the smaller): every other parameter must pass
/// [`Params::check_compatible`], and the kind must fold ([`CellMerge::of`]) when they differ.
pub fn check_mergeable(a: &Params, b: &Params) -> Result<u32, MergeError> {
    a.check_compatible(&Params {
        blocks: a.blocks,
        ..*b
    })?;
    if a.blocks != b.blocks && CellMerge::of(a.kind).is_none() {
        return Err(MergeError::Unfoldable(a.kind));
    }
    merged_blocks(a.blocks, b.blocks)
}

/// The words of one array of a filter (the image, or the cells of width `bits`) of
/// `words.len() / block_words` blocks, folded into `to` blocks with `merge`. `block_words` is
/// the array's words per block (`L W c / 32`).
pub fn fold_words(
    words: &[u32],
    block_words: usize,
    to: u32,
    bits: CellBits,
    merge: CellMerge,
) -> Result<Vec<u32>, MergeError> {
    let from = (words.len() / block_words.max(1)) as u32;
    let factor = fold_factor(from, to).ok_or(MergeError::Blocks(from, to))? as usize;
    let group = factor * block_words;
    let mut out = Vec::with_capacity(to as usize * block_words);
    for blocks in words.chunks_exact(group) {
        let at = out.len();
        out.extend_from_slice(&blocks[..block_words]);
        for next in blocks[block_words..].chunks_exact(block_words) {
            merge.merge_into(&mut out[at..], next, bits);
        }
    }
    Ok(out)
}

/// The static filter of `view` folded into `blocks` blocks (see the module's proof); the key
/// count is left unknown (`None`): [`Filter::folded`] keeps it.
pub fn fold_view(view: FilterRef<'_, u32>, blocks: u32) -> Result<Filter, MergeError> {
    let params = *view.params();
    let merge = CellMerge::of(params.kind).ok_or(MergeError::Unfoldable(params.kind))?;
    let words = fold_words(
        view.words(),
        params.layout.block_u32s(),
        blocks,
        CellBits::One,
        merge,
    )?;
    let mut out = Filter::new(Params { blocks, ..params });
    out.words_mut().copy_from_slice(&words);
    out.set_key_count(None);
    Ok(out)
}

/// The key count of a merge: the sum of both recorded counts, or `None` (not recorded) when
/// either side has none (a Parquet import, an intersection): a sum of one side alone would
/// understate the keys and with them every expected rate.
pub const fn merged_key_count(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        _ => None,
    }
}
