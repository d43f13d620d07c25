//! The kinds that answer *which*, not only *whether*: a spatial filter answers a key's class
//! (1 to `n`, 0 when absent), a retrieval table its value (or absent). This file builds both
//! from keys and labels and answers a batch of keys with their labels, on the SIMD crate's bulk
//! paths on every core; `query`, `classify` and `capture` take their verdicts from
//! [`Labeller`].

use bloomlanes_core::retrieval::{RetrievalError, RetrievalSpec, RetrievalTable};
use bloomlanes_core::{
    AnyFilter, CountingFilter, KeyType, Keys, Params, SpatialError, SpatialFilter,
};
use bloomlanes_simd::{Classes, Probe, Schedule};

use crate::error::{Error, Result};

/// The cell width that holds `classes` classes: 4 bits up to 15, 8 up to 255, 16 up to 65535
/// (`None` past that).
pub fn cell_bits_for(classes: usize) -> Option<u32> {
    [4u32, 8, 16]
        .into_iter()
        .find(|&b| (classes as u64) < (1u64 << b))
}

/// A spatial filter of `shape`'s layout, blocks, seed and key type, cells of `cell_bits`
/// bits, one class per name (`names[0]` is class 1, the lowest priority), holding key `i` in
/// class `classes[i]`, inserted by the SIMD crate on every core.
///
/// # Errors
/// The core's [`SpatialError`]: a cell width other than 4, 8 or 16, more classes than the cells
/// hold, a bad or repeated name, a class outside `1..=n`.
pub fn build_spatial(
    shape: Params,
    cell_bits: u32,
    names: &[String],
    keys: Keys<'_>,
    classes: &[u16],
) -> std::result::Result<SpatialFilter, SpatialError> {
    let mut f = SpatialFilter::new(shape, cell_bits, names)?;
    Probe::active().insert_spatial_filter(
        &mut f,
        keys,
        Classes::U16(classes),
        Schedule::AllCores,
    )?;
    Ok(f)
}

/// A retrieval table mapping key `i` to `values[i]`, built by the SIMD crate's passes on every
/// core; the keys are hashed with `base`'s seed and its key type is recorded.
///
/// # Errors
/// The core's [`RetrievalError`] (a value wider than the spec, a key repeated with two values,
/// widths out of range).
pub fn build_retrieval(
    base: Params,
    key_type: KeyType,
    spec: RetrievalSpec,
    keys: Keys<'_>,
    values: &[u32],
) -> std::result::Result<RetrievalTable, RetrievalError> {
    let hashes: Vec<u64> = (0..keys.len()).map(|i| keys.hash(i, base.seed)).collect();
    Probe::active().build_retrieval(base.with_key_type(key_type), spec, &hashes, values)
}

/// Labels of a batch of keys: `values[i]` is key `i`'s class or value, and bit `i % 64` of
/// `found[i / 64]` says whether it has one (a spatial class above 0, a retrieval value its
/// check bits accept).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    /// Each key's class (spatial; 0: absent), value (retrieval; 0 when absent) or count.
    pub values: Vec<u32>,
    /// One bit per key: it has a label.
    pub found: Vec<u64>,
}

impl Labels {
    /// Key `i`'s label, `None` when absent.
    pub fn get(&self, i: usize) -> Option<u32> {
        ((self.found[i / 64] >> (i % 64)) & 1 == 1).then(|| self.values[i])
    }

    /// The number of keys answered.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no key was answered.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// What labels a filter's keys: a spatial filter or a retrieval table.
#[derive(Clone, Copy, Debug)]
pub enum Labeller<'a> {
    /// Classes of a spatial filter.
    Spatial(&'a SpatialFilter),
    /// Values of a retrieval table.
    Retrieval(&'a RetrievalTable),
    /// Counts of a counting or stable filter (the smallest of a key's counters: an upper bound
    /// on how often it was inserted).
    Counts(&'a CountingFilter),
}

impl<'a> Labeller<'a> {
    /// The labeller of `filter`, `None` for a kind that answers only membership (the counts of
    /// a counting filter are asked for by name, [`Labeller::Counts`]).
    pub fn of(filter: &'a AnyFilter) -> Option<Labeller<'a>> {
        match filter {
            AnyFilter::Spatial(f) => Some(Labeller::Spatial(f)),
            AnyFilter::Retrieval(t) => Some(Labeller::Retrieval(t)),
            _ => None,
        }
    }

    /// [`Labeller::of`], or a usage error naming what `what` needs.
    pub fn require(filter: &'a AnyFilter, what: &str) -> Result<Labeller<'a>> {
        Labeller::of(filter).ok_or_else(|| {
            Error::usage(format!(
                "{what} needs a spatial filter or a retrieval table, not a {} filter",
                filter.params().kind.name()
            ))
        })
    }

    /// The parameters (seed, key type).
    pub fn params(&self) -> &Params {
        match self {
            Labeller::Spatial(f) => f.params(),
            Labeller::Retrieval(t) => t.params(),
            Labeller::Counts(c) => c.params(),
        }
    }

    /// How label `label` is shown: the class's name, or the value in decimal.
    pub fn show(&self, label: u32) -> String {
        match self {
            Labeller::Spatial(f) => f.class_name(label).unwrap_or("?").to_string(),
            Labeller::Retrieval(_) | Labeller::Counts(_) => label.to_string(),
        }
    }

    /// Labels `keys` into `out` (resized), on every core when `parallel`.
    pub fn label(&self, keys: Keys<'_>, parallel: bool, out: &mut Labels) {
        // Sized only: every path below writes every value and found word.
        let n = keys.len();
        out.values.resize(n, 0);
        out.found.resize(n.div_ceil(64), 0);
        let probe = Probe::active();
        match (self, parallel) {
            (Labeller::Spatial(f), true) => probe.par_min_cells(*f, keys, &mut out.values),
            (Labeller::Spatial(f), false) => probe.min_cells(*f, keys, &mut out.values),
            (Labeller::Counts(c), true) => probe.par_min_cells(*c, keys, &mut out.values),
            (Labeller::Counts(c), false) => probe.min_cells(*c, keys, &mut out.values),
            (Labeller::Retrieval(t), true) => {
                probe.par_get_retrieval(t, keys, &mut out.values, &mut out.found)
            }
            (Labeller::Retrieval(t), false) => {
                probe.get_retrieval(t, keys, &mut out.values, &mut out.found)
            }
        }
        if !matches!(self, Labeller::Retrieval(_)) {
            probe.nonzero_bits(&out.values, &mut out.found);
        }
    }
}
